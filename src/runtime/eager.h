// Eager mode: an op on concrete tensors runs at once as its own Halide kernel. Kernels
// are compiled once per op signature and cached. The signature holds the op, its
// attributes, the input dtypes and which dims are 1 and which are equal to each other,
// not the sizes themselves: one kernel serves every size. On the CPU the autoscheduler
// (KILN_SCHEDULER, else Kiln) plans each kernel for the sizes of its first call, and a
// signature called kEagerHotCalls times in a row with the same sizes (a loop's steady
// state, not a test's few calls) gets a kernel compiled for those sizes exactly, where its
// inputs hold kEagerExactMinElements elements or more: a compile costs ~0.1 s, and below
// that size the generic kernel's extra index arithmetic costs microseconds a call.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ops/op.h"

namespace kiln {

constexpr int kEagerHotCalls = 8;
constexpr int64_t kEagerExactMinElements = int64_t(1) << 14;

Tensor eager_apply(const OpDef& op, const std::vector<Tensor>& inputs, const Attrs& attrs);

// An API function written with several ops (layer_norm's normalization, scale and shift),
// run eagerly as one kernel as PyTorch runs its fused ones: `fn` traced once per signature
// (`name`, `attrs` and the inputs' types, as eager_apply keys ops), compiled and cached.
// `fn` runs op by op instead where a gradient could need its steps: an input is traced or
// needs grad, or a Tape records. `fn` must depend only on its arguments and `attrs`.
Tensor eager_composite(const std::string& name, const Attrs& attrs, const std::vector<Tensor>& inputs,
                       const std::function<Tensor(const std::vector<Tensor>&)>& fn);

// Number of eager kernels compiled so far in this process (for tests and tools).
int eager_kernels_compiled();

}  // namespace kiln
