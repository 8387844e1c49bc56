#include "graph/passes/lift_constants.h"

namespace kiln {

LiftedGraph lift_constants(const Graph& g) {
  LiftedGraph out;
  std::vector<int> new_id(g.nodes().size(), -1);
  for (int id : g.inputs()) {
    const Node& n = g.node(id);
    new_id[size_t(id)] = out.graph.add_placeholder(n.name, n.meta);
  }
  // Placeholders before ops, so the lifted constants follow the inputs in the signature.
  for (const Node& n : g.nodes()) {
    if (!n.is_constant() || n.meta.shape.rank() == 0) continue;
    std::string name = "weight_" + std::to_string(out.constants.size());
    new_id[size_t(n.id)] = out.graph.add_placeholder(name, n.meta);
    out.constants.push_back(n.constant);
  }
  for (const Node& n : g.nodes()) {
    if (n.is_placeholder() || new_id[size_t(n.id)] >= 0) continue;
    if (n.is_constant()) {
      new_id[size_t(n.id)] = out.graph.add_constant(n.constant);
      continue;
    }
    std::vector<int> ins;
    for (int i : n.inputs) ins.push_back(new_id[size_t(i)]);
    new_id[size_t(n.id)] = out.graph.add_op(n.op, ins, n.attrs);
  }
  std::vector<int> outs;
  for (int o : g.outputs()) outs.push_back(new_id[size_t(o)]);
  out.graph.set_outputs(outs);
  return out;
}

}  // namespace kiln
