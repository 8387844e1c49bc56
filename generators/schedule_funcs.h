// What a hand-written schedule under schedules/ uses to find the Funcs it schedules, by
// name rather than by the index Halide's autoschedulers print (`pipeline.get_func(9)`),
// which shifts whenever the algorithm gains a stage. A name the pipeline lacks (the
// schedule and its generator have drifted apart) is a kiln::Error naming the generator,
// the schedule file and the Func, with the Funcs that do exist.
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
  bool has(const std::string& name) const { return funcs_.count(name) > 0; }
  std::vector<std::string> names() const;

 private:
  [[noreturn]] void missing(const std::string& what) const;
  std::map<std::string, Halide::Internal::Function> funcs_;
  std::string generator_, file_;
};

}  // namespace kiln::kernels
