// Mixed precision on a traced graph, PyTorch's autocast rules (CompileOptions::autocast):
//
//  - contractions (matmul, conv2d) run in the low type: their f32 inputs are cast to it,
//    and their results are in it (f32 accumulation inside: kiln's f16/bf16 products
//    accumulate in f32, and cuBLASLt's do too);
//  - reductions, softmax and the norms, and the ops that lose accuracy in 16 bits (exp,
//    log, pow, rsqrt, softplus, tan, sum, prod, mean, softmax, log_softmax, layer_norm,
//    rms_norm) run in f32: their f16/bf16 inputs are cast up;
//  - everything else runs in its inputs' type (NumPy promotion: bf16 + f32 is f32).
//
// The graph's inputs and outputs keep their types: an output whose type changed is cast
// back, so the gradients of f32 parameters are f32 (f32 master weights) and an optimizer
// step written in the graph updates them in f32. An op that refuses the mixed types it
// would get keeps its original ones.
#pragma once

#include <string>

#include "graph/graph.h"

namespace kiln {

// `low` is "bf16" or "f16"; anything else is a kiln::Error. "" returns the graph as is.
Graph autocast(const Graph& g, const std::string& low);

}  // namespace kiln
