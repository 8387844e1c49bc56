#include "schedule_funcs.h"

#include <cctype>

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

namespace {

// "out$2" -> "out": the name without the suffix Halide adds to a name already taken.
std::string without_unique_suffix(const std::string& name) {
  const size_t dollar = name.rfind('$');
  if (dollar == std::string::npos || dollar + 1 == name.size()) return name;
  for (size_t i = dollar + 1; i < name.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(name[i]))) return name;
  }
  return name.substr(0, dollar);
}

}  // namespace

const Halide::Internal::Function* ScheduleFuncs::find(const std::string& name) const {
  auto exact = funcs_.find(name);
  if (exact != funcs_.end()) return &exact->second;
  std::vector<std::string> same;  // "out$1", "out$2": the Funcs that are `name` again
  for (const auto& [n, f] : funcs_) {
    if (without_unique_suffix(n) == name) same.push_back(n);
  }
  if (same.empty()) return nullptr;
  if (same.size() > 1) {
    std::string all;
    for (const std::string& n : same) all += (all.empty() ? "" : ", ") + n;
    user_error("schedule file ", file_, " for generator ", generator_, " schedules Func '", name,
               "', and the generator's pipeline has several Funcs of that name: ", all,
               "; build the generator in a process of its own");
  }
  return &funcs_.at(same.front());
}

Halide::Func ScheduleFuncs::get(const std::string& name) const {
  const Halide::Internal::Function* f = find(name);
  if (!f) missing("'" + name + "'");
  return Halide::Func(*f);
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
