#include "graph/passes/passes.h"

namespace kiln {

Graph eliminate_dead_code(const Graph& g) {
  std::vector<bool> live(g.nodes().size(), false);
  for (int o : g.outputs()) live[size_t(o)] = true;
  for (int id = int(g.nodes().size()) - 1; id >= 0; --id) {
    const Node& n = g.node(id);
    if (n.is_placeholder()) live[size_t(id)] = true;
    if (!live[size_t(id)]) continue;
    for (int i : n.inputs) live[size_t(i)] = true;
  }
  std::vector<int> remap(g.nodes().size());
  for (size_t i = 0; i < remap.size(); ++i) remap[i] = int(i);
  return rebuild_graph(g, live, remap);
}

}  // namespace kiln
