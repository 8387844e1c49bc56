// A failing program as a self-contained C++ program using kiln's public API: the
// reproducer a bug report carries. It builds the inputs, defines the program as a lambda,
// runs it down the failing path and prints the result (the expected value goes in a comment).
#pragma once

#include <string>

#include "program.h"
#include "run.h"

namespace kiln::fuzz {

std::string to_cpp(const Program& p, const Failure& failure);

}  // namespace kiln::fuzz
