// Runs a Program through kiln's public API. The same function serves every path: called
// on concrete tensors it runs eagerly; kiln::compile and kiln::trace call it on symbolic
// tensors; kiln::grad wraps it.
#pragma once

#include <vector>

#include "kiln.h"
#include "program.h"

namespace kiln::fuzz {

Tensor make_input(const InputSpec& in);
std::vector<Tensor> make_inputs(const Program& p);

// One op through the public API (kiln::add, kiln::sum, ...).
Tensor apply_op(const OpSpec& op, const std::vector<Tensor>& args);
// Every op in order; returns the program's outputs.
std::vector<Tensor> apply(const Program& p, const std::vector<Tensor>& inputs);

}  // namespace kiln::fuzz
