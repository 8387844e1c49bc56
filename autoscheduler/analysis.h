// What the search needs to know about a pipeline, computed once: every Func's region
// (from the outputs' estimates, pushed through Halide's bounds inference at the estimated
// sizes), its cost per point, who calls it, and what kind of stage it is.
#pragma once

#include <Halide.h>

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace kiln::autoschedule {

// How a reduction's update reads its operands, which decides how it is tiled.
enum class ReductionKind {
  None,         // no update definition (pure)
  Contraction,  // pure innermost dim read contiguously, reduced dims shared: matmul, conv
  Row,          // reduces along the operand's contiguous dim: softmax's max and sum
  Column,       // one pure dim, read contiguously, reduced over outer dims
  Total,        // every dim reduced: a scalar
  Other,        // anything else (scatters, several updates): computed at root, serial
};

struct FuncInfo {
  Halide::Internal::Function function;
  std::string name;
  bool is_output = false;
  std::vector<std::string> vars;       // pure args, innermost first
  std::vector<int64_t> extents;        // region at the estimates, innermost first
  int bytes = 4;                       // bytes per element
  double flops_per_point = 0;          // of the pure definition
  double update_flops = 0;             // of the update, per reduction iteration
  // Cycles per point (per reduction iteration) of calls a CPU runs one lane at a time:
  // Halide has no vector sin, cos, tan, tanh or their inverses on x86 and calls libm for
  // each lane (exp, log, pow and sqrt are vector code).
  double scalar_cycles_per_point = 0, update_scalar_cycles = 0;
  std::vector<std::string> rvars;      // the update's reduction vars, innermost first
  std::vector<int64_t> rvar_extents;
  ReductionKind reduction = ReductionKind::None;
  bool trivial = false;                // a pure load (wrapper, cast, reshape): free to inline
  std::map<std::string, int> callers;  // Func name -> distinct calls in its definitions
  std::set<std::string> identity_callers;  // callers that read this Func only at their own point
  // Callers that read this Func only at a permutation of their own point (identity
  // callers too): for each of this Func's dims, the caller's dim that indexes it.
  std::map<std::string, std::vector<int>> permuted_callers;
  std::map<std::string, int64_t> calls_in_update;  // Func name -> calls from this one's update
  // A contraction's loads per reduction step, by what their indices depend on: the
  // column var only (matmul's b: one vector per tile column), the row var only (its a: one
  // broadcast per tile row), both (a pooling window: one load per row and vector), neither.
  struct OperandLoads {
    int columns = 0, rows = 0, both = 0, neither = 0;
  } operand_loads;

  double points() const;
  double reduction_trips() const;  // product of rvar extents (1 without an update)
  double bytes_total() const { return points() * bytes; }
};

struct PipelineInfo {
  std::vector<std::string> order;  // topological: producers first (pipeline.get_func order)
  std::map<std::string, FuncInfo> funcs;
  std::vector<std::string> warnings;  // missing estimates and the defaults used instead
  // Each Func's name in knobs: its stable_name, unique within the pipeline. Funcs of one
  // name (a model's every relu: "relu", "relu$7", ... within a process) are numbered
  // "relu", "relu#2", "relu#3" in the order a walk from the outputs reaches them, calls
  // in the order their definitions make them: the same in every process that builds the
  // same pipeline, whatever other Funcs it made first.
  std::map<std::string, std::string> keys;
  const FuncInfo& at(const std::string& name) const { return funcs.at(name); }
  const std::string& key(const std::string& name) const { return keys.at(name); }
};

// Extent assumed for a dimension without an estimate.
constexpr int64_t kDefaultExtent = 256;

PipelineInfo analyze(const Halide::Pipeline& pipeline);
// PipelineInfo::keys alone (Func name -> key), without the analysis.
std::map<std::string, std::string> func_keys(const Halide::Pipeline& pipeline);
// The keys in pipeline.get_func order (PipelineInfo::order).
std::vector<std::string> keys_by_index(const Halide::Pipeline& pipeline);

// Whether `f` is `h`'s rows reduced: h's extents without the innermost (1: f's dim 0 is
// the row), or with the innermost kept as 1 (2: f's dim 1 is), else 0.
int reduces_rows_of(const FuncInfo& f, const FuncInfo& h);

// Placement questions both searches (CPU and GPU) ask while deciding, consumers first.
// `inlined` says whether a Func already placed was inlined; `evaluations` holds, for each
// inlined Func, how often each of its points is evaluated.
struct InlineView {
  const PipelineInfo& info;
  std::function<bool(const std::string&)> inlined;
  const std::map<std::string, double>& evaluations;
  // The Funcs that compute `f`'s values: its callers, seen through inlined callers.
  std::set<std::string> effective_consumers(const FuncInfo& f) const;
  // How many times each point of `f` would be evaluated if it were inlined.
  double inline_evaluations(const FuncInfo& f) const;
  // For each dim of `f`, the dim of `h` that reads it, where `h` reads `f` at a
  // permutation of its own point through inlined Funcs (each the single reader of the
  // last); empty otherwise. The identity permutation is `h` reading `f` at its own point.
  std::vector<int> dims_in_reader(const FuncInfo& f, const FuncInfo& h) const;
};

}  // namespace kiln::autoschedule
