// apply_op: where every op call goes. A traced (symbolic) input records the op in its
// graph; concrete inputs run it eagerly. Either way the tape sees it (kiln::grad), and an
// eager result computed from inputs that need grad gets its GradNode (backward()).
#include "autodiff/autograd.h"
#include "autodiff/halide_adjoint.h"
#include "autodiff/tape.h"
#include "core/error.h"
#include "graph/tracer.h"
#include "ops/api.h"
#include "runtime/eager.h"

namespace kiln {

Tensor apply_op(const std::string& op, const std::vector<Tensor>& inputs, const Attrs& attrs) {
  const OpDef& def = get_op(op);
  Tracer* tracer = nullptr;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) user_error(op, ": input ", i, " is an undefined tensor");
    if (inputs[i].is_symbolic()) tracer = inputs[i].impl()->tracer;
  }
  Tensor out = tracer ? tracer->record(op, inputs, attrs) : eager_apply(def, inputs, attrs);
  Tape::record(op, inputs, attrs, out);
  if (!tracer && !def.zero_gradient && is_float(out.dtype()) && any_needs_grad(inputs)) {
    auto node = std::make_shared<GradNode>();
    node->name = op;
    node->inputs = inputs;
    // The rule sees the output without its autograd state (no cycle through the node).
    node->vjp = [&def, inputs, attrs, y = out.detach()](const std::vector<Tensor>& grads) {
      VjpFn vjp = effective_vjp(def);
      if (!vjp) {
        user_error("backward: op '", def.name, "' has no VJP rule, so kiln cannot differentiate through it");
      }
      std::vector<bool> wanted;
      for (const Tensor& in : inputs) wanted.push_back(in.needs_grad());
      return vjp(VjpArgs{inputs, y, grads[0], attrs, std::move(wanted)});
    };
    attach_grad_node(out, std::move(node));
  }
  return out;
}

}  // namespace kiln
