// Graph-level passes, one per file, each a function from Graph to Graph.
// run_graph_passes() lists them in the order they run.
#pragma once

#include "graph/graph.h"

namespace kiln {

// Removes nodes that no output depends on (placeholders always stay).
Graph eliminate_dead_code(const Graph& g);
// Merges nodes that apply the same op with the same attributes to the same inputs.
Graph eliminate_common_subexpressions(const Graph& g);

// Every pass, in order.
Graph run_graph_passes(const Graph& g);

// Rebuilds `g` keeping node `id` only where keep[id]; `remap` sends each old id to the
// node that replaces it (itself by default). Shared by the passes.
Graph rebuild_graph(const Graph& g, const std::vector<bool>& keep, std::vector<int> remap);

}  // namespace kiln
