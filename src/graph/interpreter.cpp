#include "graph/interpreter.h"

#include "core/error.h"
#include "runtime/eager.h"

namespace kiln {

SymbolSizes bind_inputs(const std::string& who, const std::vector<TensorMeta>& expected,
                        const std::vector<Tensor>& inputs) {
  if (inputs.size() != expected.size()) {
    user_error(who, ": expected ", expected.size(), " input tensor",
               expected.size() == 1 ? "" : "s", ", got ", inputs.size());
  }
  SymbolSizes bound;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorMeta& want = expected[i];
    if (!inputs[i].defined()) user_error(who, ": input ", i, " is an undefined tensor");
    const TensorMeta& got = inputs[i].meta();
    if (got.dtype != want.dtype || got.shape.rank() != want.shape.rank()) {
      user_error(who, ": input ", i, " should be ", want.str(), " but is ", got.str());
    }
    for (int d = 0; d < want.shape.rank(); ++d) {
      const Dim& w = want.shape[d];
      int64_t n = got.shape[d].size;
      if (w.is_static() && w.size != n) {
        user_error(who, ": input ", i, " should be ", want.str(), " but is ", got.str(),
                   " (dimension ", d, ")");
      }
      if (!w.is_static()) {
        auto [it, fresh] = bound.emplace(w.sym, n);
        if (!fresh && it->second != n) {
          user_error(who, ": input ", i, " dimension ", d, " is ", n, " but symbol ", w.sym,
                     " was already bound to ", it->second,
                     " by an earlier input; dimensions sharing a symbol must be equal");
        }
      }
    }
  }
  return bound;
}

std::vector<Tensor> interpret(const Graph& graph, const std::vector<Tensor>& inputs,
                              InterpretMode mode) {
  bind_inputs("interpret", graph.input_metas(), inputs);
  std::vector<Tensor> values(graph.nodes().size());
  size_t next_input = 0;
  for (const Node& n : graph.nodes()) {
    if (n.is_placeholder()) {
      values[size_t(n.id)] = inputs[next_input++];
      continue;
    }
    if (n.is_constant()) {
      values[size_t(n.id)] = n.constant;
      continue;
    }
    std::vector<Tensor> args;
    for (int i : n.inputs) args.push_back(values[size_t(i)]);
    const OpDef& op = get_op(n.op);
    if (mode == InterpretMode::Eager) {
      values[size_t(n.id)] = eager_apply(op, args, n.attrs);
    } else {
      std::vector<TensorMeta> metas;
      for (const Tensor& a : args) metas.push_back(a.meta());
      values[size_t(n.id)] = op.reference(args, n.attrs, infer_op(op, metas, n.attrs));
    }
  }
  std::vector<Tensor> out;
  for (int o : graph.outputs()) out.push_back(values[size_t(o)]);
  return out;
}

}  // namespace kiln
