// Applies scheduling directives to a pipeline's Funcs and writes each one down as C++ at
// the same time, so the schedule source in the results is exactly what was applied. The
// source is the body of Halide's schedule files (apply_schedule_<name>(pipeline, target),
// Funcs found by pipeline.get_func(i)), so it can be copied under schedules/ and
// included back.
#pragma once

#include <Halide.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "analysis.h"

namespace kiln::autoschedule {

class ScheduleWriter;

// One stage (a Func's pure definition, an update, or a specialization of either) with
// its C++ name.
class StageWriter {
 public:
  StageWriter& split(const std::string& old, const std::string& outer, const std::string& inner, int factor,
                     Halide::TailStrategy tail);
  StageWriter& fuse(const std::string& inner, const std::string& outer, const std::string& fused);
  StageWriter& reorder(const std::vector<std::string>& innermost_first);
  StageWriter& vectorize(const std::string& var, int width, Halide::TailStrategy tail);
  StageWriter& vectorize(const std::string& var);  // a loop whose extent is already the width
  StageWriter& unroll(const std::string& var);
  StageWriter& parallel(const std::string& var);
  // An associative update whose reduction variable may then be vectorized: the lanes
  // combine in a tree (Halide's VectorReduce), not one after another.
  StageWriter& atomic();
  // GPU loops: block and thread dims, innermost first (one to three of each).
  StageWriter& gpu_blocks(const std::vector<std::string>& vars);
  StageWriter& gpu_threads(const std::vector<std::string>& vars);
  StageWriter& gpu_single_thread();

 private:
  friend class ScheduleWriter;
  StageWriter(ScheduleWriter* w, std::string func, Halide::Stage s, std::string cpp)
      : w_(w), func_(std::move(func)), stage_(std::move(s)), cpp_(std::move(cpp)) {}
  bool is_rvar(const std::string& name) const;
  Halide::VarOrRVar var(const std::string& name) const;
  std::string ref(const std::string& name) const;  // the C++ name of this stage's var or rvar
  std::string var_list(const std::vector<std::string>& vars);
  void emit(const std::string& call);
  ScheduleWriter* w_;
  std::string func_;
  Halide::Stage stage_;
  std::string cpp_;
};

class ScheduleWriter {
 public:
  // `order`: the pipeline's Funcs in pipeline.get_func order.
  explicit ScheduleWriter(const std::vector<std::string>& order, const std::map<std::string, Halide::Func>& funcs);

  StageWriter stage(const std::string& func, int update = -1);  // -1: the pure definition
  // A specialization of an output's pure definition for extents at least `min_extents`
  // (innermost first; 0 for dims without a condition).
  StageWriter specialize_min_extents(const std::string& func, const std::vector<int>& min_extents);
  // An input buffer as a Func of the pipeline reads it: `reader` calls the buffer `name`,
  // which has `dims` dimensions.
  struct InputRead {
    std::string reader, name;
    int dims = 0;
  };
  // A specialization of an output's pure definition for extents at least `min_extents`
  // where every vector of `multiple` elements along dim 0 starts at a multiple of
  // `multiple` elements: the output's and each input's row strides and dim-0 mins, and the
  // output's dim-0 extent, are multiples of it. Halide learns those facts inside the branch
  // and loads and stores whole aligned vectors (one 128-bit load where it otherwise issued
  // four 32-bit ones, because a row could start anywhere).
  StageWriter specialize_aligned(const std::string& func, const std::vector<int>& min_extents, int multiple,
                                 const std::vector<InputRead>& inputs);
  void compute_root(const std::string& func);
  void compute_at(const std::string& func, const std::string& at, const std::string& var);
  // Where `func`'s buffer lives: GPUShared, Register, Stack, Heap (MemoryType).
  void store_in(const std::string& func, Halide::MemoryType type);
  // `func` is computed over `extent` points of `var` (a constant: registers need one).
  void bound_extent(const std::string& func, const std::string& var, int extent);
  // rfactor of `func`'s update over `rvar` into a new Func (returned by name) with the
  // new pure var `var`. Throws Halide::CompileError when Halide cannot prove the update
  // associative; nothing is written then.
  std::string rfactor(const std::string& func, const std::string& rvar, const std::string& var);
  // A wrapper of `func` (Func::in()) that every consumer reads instead, returned by name:
  // a stored copy whose loops can be tiled, with `func` computed per tile.
  std::string wrap(const std::string& func);
  // Marks a name as one of `func`'s reduction variables (split products of one are, too).
  // Names are per Func: "mo" may be a reduction variable of one Func and a loop of another.
  void declare_rvar(const std::string& func, const std::string& name) { rvars_[func].insert(name); }

  // The schedule source (function body).
  std::string source() const;

 private:
  friend class StageWriter;
  std::string func_ref(const std::string& func);  // declares `Func x = pipeline.get_func(i);`
  std::string var_ref(const std::string& name, bool rvar);  // declares `Var x("name");` / `RVar`
  std::string ident(const std::string& name, const std::string& suffix = "");
  StageWriter specialize(const std::string& func, const Halide::Expr& cond, const std::string& text);

  std::map<std::string, size_t> index_;
  std::map<std::string, Halide::Func> funcs_;
  std::map<std::string, std::set<std::string>> rvars_;  // by Func
  std::map<std::string, std::string> func_ids_, var_ids_;
  std::set<std::string> used_ids_;
  std::vector<std::string> var_decls_, func_decls_, lines_;
  int specializations_ = 0;
  bool declared_input_field_ = false;
};

// A writer over the analysed pipeline's Funcs, their reduction variables declared.
ScheduleWriter writer_for(const PipelineInfo& info);

}  // namespace kiln::autoschedule
