#include "schedule_funcs.h"

#include "core/error.h"

namespace kiln::kernels {

ScheduleFuncs::ScheduleFuncs(const Halide::Pipeline& pipeline, std::string generator, std::string file)
    : generator_(std::move(generator)), file_(std::move(file)) {
  for (const Halide::Func& out : pipeline.outputs()) {
    funcs_.emplace(out.name(), out.function());
    for (const auto& [name, f] : Halide::Internal::find_transitive_calls(out.function())) funcs_.emplace(name, f);
  }
}

std::vector<std::string> ScheduleFuncs::names() const {
  std::vector<std::string> n;
  for (const auto& [name, f] : funcs_) n.push_back(name);
  return n;
}

void ScheduleFuncs::missing(const std::string& what) const {
  std::string have;
  for (const std::string& n : names()) have += (have.empty() ? "" : ", ") + n;
  user_error("schedule file ", file_, " for generator ", generator_, " schedules Func ", what,
             ", which the generator's pipeline does not have (the algorithm changed?); its Funcs are: ", have);
}

Halide::Func ScheduleFuncs::get(const std::string& name) const {
  auto it = funcs_.find(name);
  if (it == funcs_.end()) missing("'" + name + "'");
  return Halide::Func(it->second);
}

Halide::Func ScheduleFuncs::get_any(const std::vector<std::string>& names) const {
  std::string list;
  for (const std::string& n : names) {
    if (has(n)) return get(n);
    list += (list.empty() ? "'" : ", '") + n + "'";
  }
  missing("one of " + list);
}

}  // namespace kiln::kernels
