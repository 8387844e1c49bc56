#include "graph/passes/passes.h"

#include "core/log.h"

namespace kiln {

Graph run_graph_passes(const Graph& g) {
  Graph out = eliminate_common_subexpressions(g);
  out = eliminate_dead_code(out);
  return out;
}

Graph rebuild_graph(const Graph& g, const std::vector<bool>& keep, std::vector<int> remap) {
  Graph out;
  std::vector<int> new_id(g.nodes().size(), -1);
  for (const Node& n : g.nodes()) {
    if (!keep[size_t(n.id)]) continue;
    if (n.is_placeholder()) {
      new_id[size_t(n.id)] = out.add_placeholder(n.name, n.meta);
    } else if (n.is_constant()) {
      new_id[size_t(n.id)] = out.add_constant(n.constant);
    } else {
      std::vector<int> ins;
      for (int i : n.inputs) ins.push_back(new_id[size_t(remap[size_t(i)])]);
      new_id[size_t(n.id)] = out.add_op(n.op, ins, n.attrs);
    }
  }
  std::vector<int> outs;
  for (int o : g.outputs()) outs.push_back(new_id[size_t(remap[size_t(o)])]);
  out.set_outputs(outs);
  return out;
}

}  // namespace kiln
