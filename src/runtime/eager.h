// Eager mode: an op on concrete tensors runs at once as its own Halide kernel. Kernels
// are compiled once per op signature and cached. The signature holds the op, its
// attributes, the input dtypes and which dims are 1 and which are equal to each other,
// not the sizes themselves: one kernel serves every size. On the CPU the autoscheduler
// (KILN_SCHEDULER, else Kiln) plans each kernel for the sizes of its first call.
#pragma once

#include "ops/op.h"

namespace kiln {

Tensor eager_apply(const OpDef& op, const std::vector<Tensor>& inputs, const Attrs& attrs);

// Number of eager kernels compiled so far in this process (for tests and tools).
int eager_kernels_compiled();

}  // namespace kiln
