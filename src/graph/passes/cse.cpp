#include <map>
#include <tuple>

#include "graph/passes/passes.h"

namespace kiln {

Graph eliminate_common_subexpressions(const Graph& g) {
  std::vector<bool> keep(g.nodes().size(), true);
  std::vector<int> remap(g.nodes().size());
  std::map<std::tuple<std::string, std::vector<int>, std::string>, int> seen;
  for (const Node& n : g.nodes()) {
    remap[size_t(n.id)] = n.id;
    if (n.is_placeholder() || n.is_constant()) continue;
    std::vector<int> ins;
    for (int i : n.inputs) ins.push_back(remap[size_t(i)]);
    auto key = std::make_tuple(n.op, ins, n.attrs.str());
    auto [it, fresh] = seen.emplace(key, n.id);
    if (!fresh) {
      remap[size_t(n.id)] = it->second;
      keep[size_t(n.id)] = false;
    }
  }
  return rebuild_graph(g, keep, remap);
}

}  // namespace kiln
