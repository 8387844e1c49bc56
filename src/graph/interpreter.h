// Runs a graph node by node: each op either as its own eager Halide kernel, or through
// its plain C++ reference (the oracle that tests compare compiled code against).
#pragma once

#include "graph/graph.h"

namespace kiln {

enum class InterpretMode { Eager, Reference };

std::vector<Tensor> interpret(const Graph& graph, const std::vector<Tensor>& inputs,
                              InterpretMode mode = InterpretMode::Eager);

// Checks count, dtype and shape of `inputs` against the graph's placeholders (binding
// symbolic dims consistently); throws kiln::Error naming `who` and the first mismatch.
SymbolSizes bind_inputs(const std::string& who, const std::vector<TensorMeta>& expected,
                        const std::vector<Tensor>& inputs);

}  // namespace kiln
