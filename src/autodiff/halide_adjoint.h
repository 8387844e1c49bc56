// Gradients for user-defined ops that have a Halide algorithm but no VJP rule: Halide's
// own reverse mode (propagate_adjoints) differentiates the algorithm. The gradient w.r.t.
// input i is the op "halide_adjoint" (attrs: adjoint_of, adjoint_input, and the op's own),
// so it runs eagerly, traces into graphs and compiles like any other op.
#pragma once

#include "ops/op.h"

namespace kiln {

// The VJP to use for `def`: its own rule, Halide's adjoints for a user-defined op, or an
// empty function when there is none.
VjpFn effective_vjp(const OpDef& def);

}  // namespace kiln
