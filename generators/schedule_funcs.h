// What a hand-written schedule under schedules/ uses to find the Funcs it schedules, by
// name rather than by the index Halide's autoschedulers print (`pipeline.get_func(9)`),
// which shifts whenever the algorithm gains a stage. A name the pipeline lacks (the
// schedule and its generator have drifted apart) is a kiln::Error naming the generator,
// the schedule file and the Func, with the Funcs that do exist.
//
// Halide names a Func made again in the same process "out$1", "out$2", ...: a schedule's
// "out" finds the pipeline's Func called "out", or else its one Func "out$N" (a second
// build of a generator in a process, as a test or a tuning run makes).
#pragma once

#include <Halide.h>

#include <map>
#include <string>
#include <vector>

namespace kiln::kernels {

class ScheduleFuncs {
 public:
  ScheduleFuncs(const Halide::Pipeline& pipeline, std::string generator, std::string file);
  Halide::Func get(const std::string& name) const;
  // The first of `names` that exists (a generator whose op is a parameter: sum_acc, max_acc).
  Halide::Func get_any(const std::vector<std::string>& names) const;
  bool has(const std::string& name) const { return find(name) != nullptr; }
  std::vector<std::string> names() const;

 private:
  [[noreturn]] void missing(const std::string& what) const;
  // The Func `name` stands for; null where there is none; a user error where several
  // Funcs are `name` with another "$N".
  const Halide::Internal::Function* find(const std::string& name) const;
  std::map<std::string, Halide::Internal::Function> funcs_;
  std::string generator_, file_;
};

}  // namespace kiln::kernels
