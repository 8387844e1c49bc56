// Lowering: a whole graph becomes one Halide pipeline with one Func per node. Fusion is
// then a scheduling decision (inline, compute_at, compute_root), not a graph rewrite.
#pragma once

#include <Halide.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace kiln {

struct LoweredGraph {
  std::vector<Halide::ImageParam> inputs;  // one per placeholder, in order
  std::vector<Halide::Func> outputs;       // one per graph output, in order
  std::map<int, Halide::Func> funcs;       // the Func of each node
  // Stages that need a loop nest of their own (reduction accumulators, ...).
  std::vector<StageInfo> stages;
  // The graph's ops, by node id, for the scheduler.
  std::map<int, OpKind> kinds;
  // Computed values that feed a contraction: inlining them would redo their index math
  // (a permute's div/mod, say) inside the contraction's innermost loop.
  std::vector<Halide::Func> contraction_operands;
  // Their extents by Func name, innermost first (Halide's order), 0 for a dynamic dim.
  std::map<std::string, std::vector<int64_t>> operand_extents;
  // Those of them that a CPU schedule may leave inline: every use is either matmul's
  // right operand (the CPU schedule packs it into panels once, reading through it) or a
  // view (permute, expand, slice) of an input or a constant that keeps the innermost axis
  // innermost, which costs a strided load.
  std::set<std::string> cpu_inline_operands;
  // A matmul accumulator's epilogue host, by the accumulator's name: the stored value its
  // result reaches through single-use pointwise ops of the same shape (an output, or a
  // stored contraction operand), so a CPU schedule can compute the matmul per register
  // tile of that value.
  struct EpilogueHost {
    Halide::Func func;
    int64_t columns = 0;  // the innermost extent when static, else 0
  };
  std::map<std::string, EpilogueHost> epilogue_hosts;
  // Computed values that a vendor stage (cuBLASLt, cuDNN: lower/vendor_stages.h) reads: every
  // schedule stores them at root (an extern stage reads memory, never an inlined Func).
  std::vector<Halide::Func> vendor_operands;

  Halide::Pipeline pipeline() const { return Halide::Pipeline(outputs); }
  std::vector<Halide::Argument> arguments() const;
};

// When `inputs` is given (a generator's Input<Buffer>s as Funcs, with the extents of
// their symbolic dims), they replace the ImageParams.
struct ExternalInputs {
  std::vector<Halide::Func> funcs;
  std::map<std::string, Halide::Expr> symbol_extents;
};

// How the graph may be lowered beyond kiln's own Halide definitions.
struct LowerOptions {
  // On a CUDA target, matmuls and convolutions may become cuBLASLt and cuDNN stages where
  // the Kiln autoscheduler prices them faster (lower/vendor_stages.h). JIT only: an AOT
  // library would need libkiln at link time for the stage.
  bool vendor_kernels = false;
  Halide::Target target;
};

LoweredGraph lower_to_halide(const Graph& graph, const ExternalInputs* external = nullptr,
                             const LowerOptions& options = {});

}  // namespace kiln
