// Delta-debugging a failing program down to a small reproducer: greedily tries smaller
// variants (fewer outputs, ops bypassed, smaller dims, simpler values and dtypes) and keeps
// any that is still valid and still fails with the same signature (class, path, kind).
#pragma once

#include <functional>

#include "program.h"
#include "run.h"

namespace kiln::fuzz {

struct ShrinkResult {
  Program program;
  Failure failure;
  int runs = 0;
};

// `run` executes a candidate (in a worker; only the failing path is needed).
ShrinkResult shrink(const Program& p, const Failure& failure, const std::function<Outcome(const Program&)>& run,
                    int max_runs);

}  // namespace kiln::fuzz
