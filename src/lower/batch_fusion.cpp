#include "lower/batch_fusion.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <vector>

#include "autoscheduler/autoscheduler.h"
#include "core/log.h"

namespace kiln {

bool batch_tasks_fill_cores(double batch, const autoschedule::MachineModel& machine) {
  const double cores = std::max(1, machine.cores);
  if (batch < cores) return false;
  return std::ceil(batch / cores) * cores / batch <= 1.125;
}

namespace {

using Halide::Func;
using Halide::Internal::Function;

bool has_prefix(const std::string& name, const char* prefix) { return name.rfind(prefix, 0) == 0; }

// Where a Func is computed: "inlined", "root", or the name of the Func whose loops do.
// (A LoopLevel is locked only when the pipeline lowers: read its names.)
std::string computed_in(const Function& f) {
  const Halide::LoopLevel& level = f.schedule().compute_level();
  if (level.var_name().empty()) return "inlined";
  return level.func_name().empty() ? "root" : level.func_name();
}

// The group of Funcs moved into the host's tasks, found from the matmul accumulator the
// host computes: members by name, each with the Func to schedule (a matmul's tiles are
// computed by its wrapper, acc.in(), or an epilogue host) and how the source names it.
class Group {
 public:
  Group(const autoschedule::PipelineInfo& info, const Halide::Pipeline& pipeline, const std::vector<int64_t>& batch)
      : info_(info), batch_(batch) {
    // Every Func's callers as scheduled: wrappers (acc.in()) and packed panels included,
    // which the analysis folds into the Funcs they wrap.
    for (const Func& out : pipeline.outputs()) {
      for (const auto& [name, f] : Halide::Internal::find_transitive_calls(out.function())) {
        functions_.emplace(name, f);
        for (const auto& [callee, g] : Halide::Internal::find_direct_calls(f)) {
          if (callee != name) callers_[callee].insert(name);
        }
      }
    }
  }

  // The Func whose tasks take the group in: never one of its members.
  void set_host(const std::string& host) { seen_.insert(host); }

  // A matmul accumulator whose tiles are computed by `tiles` (the host, or a member).
  void visit_matmul(const Function& acc) {
    within_.insert(acc.name());
    seen_.insert(acc.name());  // its update reads itself
    for (const auto& [name, f] : Halide::Internal::find_direct_calls(acc)) {
      if (has_prefix(name, "matmul_b_panel")) {
        if (computed_in(f) == "root" && aligned(name, 3)) add(Func(f), key(name));
      } else {
        visit_operand(f);
      }
    }
  }

  // A Func a member reads: through views inlined into it (a transpose, a mask) and Funcs
  // computed in a member's loops (a softmax's row max and sum), to batched values stored
  // at root, and to matmul accumulators whose tiles a stored wrapper or host computes.
  void visit_operand(const Function& f) {
    if (!info_.funcs.count(f.name()) || seen_.count(f.name())) return;  // an input, or done
    seen_.insert(f.name());
    const std::string where = computed_in(f);
    if (has_prefix(f.name(), "matmul_acc") && f.has_update_definition() && where != "inlined" && where != "root") {
      const std::optional<Function> tiles = tiles_of(f, where);
      if (!tiles || computed_in(*tiles) != "root" || !aligned(f.name(), 2)) return stop(f.name());
      add(Func(*tiles), tiles_key(f.name(), where));
      visit_matmul(f);
      return;
    }
    if (where == "inlined" || members_.count(where) || within_.count(where)) {
      within_.insert(f.name());
      for (const auto& [name, callee] : Halide::Internal::find_direct_calls(f)) visit_operand(callee);
      return;
    }
    if (where == "root" && aligned(f.name(), 2)) {
      add(Func(f), key(f.name()));
      for (const auto& [name, callee] : Halide::Internal::find_direct_calls(f)) visit_operand(callee);
      return;
    }
    stop(f.name());
  }

  // Whether every caller of each member is in the group: a member, the host, or a Func
  // computed in one or inlined into one. Else `why`.
  bool closed(const std::string& host, const std::string& host_acc, std::string* why) const {
    // Inside: the host and the members. A Func inlined into a member is inside only if
    // all its callers are (reached_only_from follows them): a product read by sin() in
    // this group and by cos() in a backward matmul elsewhere must stay at root.
    std::set<std::string> inside;
    inside.insert(host);
    inside.insert(host_acc);
    for (const auto& [name, m] : members_) inside.insert(name);
    for (const auto& [name, m] : members_) {
      // What a member reads must be there in every task: stored at root, or in the group.
      // (A value an earlier fusion moved into another matmul's tasks is not.)
      std::string unavailable;
      if (!reads_only_available(m.func.function(), inside, &unavailable)) {
        *why = name + " reads " + unavailable + ", computed in another loop nest's tasks";
        return false;
      }
      // A global wrapper (acc.in()) is applied as Halide lowers: its callers are still
      // recorded as its accumulator's.
      const std::string& reads = m.acc.empty() ? name : m.acc;
      auto callers = callers_.find(reads);
      if (callers == callers_.end()) continue;
      for (const std::string& caller : callers->second) {
        if (caller == name) continue;
        if (!reached_only_from(caller, inside)) {
          *why = caller + " reads " + reads + " outside the batch's tasks";
          return false;
        }
      }
    }
    return true;
  }

  bool empty() const { return members_.empty(); }

  // compute_at(host, task) for each member, its parallel loops serial.
  void apply(const Func& host, const std::string& task) const {
    for (const auto& [name, m] : members_) {
      Func f = m.func;
      f.compute_at(host, Halide::Var(task));
      auto serial = [](Halide::Stage stage, const Halide::Internal::StageSchedule& s) {
        for (const Halide::Internal::Dim& d : s.dims()) {
          // Dims are named func.s0.var...: a Var is the last part.
          if (d.for_type == Halide::Internal::ForType::Parallel) stage.serial(Halide::Var(d.var.substr(d.var.rfind('.') + 1)));
        }
      };
      serial(f, f.function().definition().schedule());
      for (size_t u = 0; u < f.function().updates().size(); ++u) serial(f.update(int(u)), f.function().update(int(u)).schedule());
    }
  }

  // The members by key (a matmul's tiles as its key's wrapper, acc.in()).
  std::string names() const {
    std::string out;
    for (const auto& [name, m] : members_) out += (out.empty() ? "" : ", ") + m.source;
    return out;
  }

  std::string key(const std::string& name) const {
    auto k = info_.keys.find(name);
    return k != info_.keys.end() ? k->second : name;
  }

  std::string tiles_key(const std::string& acc, const std::string& tiles) const {
    return tiles.find("_global_wrapper") != std::string::npos ? key(acc) + ".in()" : key(tiles);
  }

 private:
  struct Member {
    Func func;
    std::string source;  // its key
    std::string acc;     // a matmul's tiles: its accumulator
  };

  // The Func named `tiles` that computes `acc`'s tiles: acc's wrapper, or a stored host.
  std::optional<Function> tiles_of(const Function& acc, const std::string& tiles) const {
    if (tiles.find("_global_wrapper") != std::string::npos) return Func(acc).in().function();
    auto it = info_.funcs.find(tiles);
    if (it == info_.funcs.end()) return std::nullopt;
    return it->second.function;
  }

  // A wrapper (acc.in()) is not in the analysis: its callers are its accumulator's.
  void add(const Func& f, const std::string& source) {
    Member m{f, source, ""};
    if (f.name().find("_global_wrapper") != std::string::npos) {
      for (const auto& [name, callee] : Halide::Internal::find_direct_calls(f.function())) {
        if (has_prefix(name, "matmul_acc")) m.acc = name;
      }
    }
    members_.emplace(f.name(), m);
  }

  void stop(const std::string& name) { log("schedule", "batch fusion: stops at " + name); }

  // The Func's dims after the first `skip` (a matmul's rows and columns; b's panel dims)
  // are the host's batch dims, with their extents: one batch element of the host reads
  // one of it.
  bool aligned(const std::string& name, size_t skip) const {
    auto it = info_.funcs.find(name);
    if (it == info_.funcs.end()) return false;
    const std::vector<int64_t>& e = it->second.extents;
    return e.size() == skip + batch_.size() && std::equal(batch_.begin(), batch_.end(), e.begin() + long(skip));
  }

  bool reads_only_available(const Function& f, const std::set<std::string>& inside, std::string* culprit) const {
    for (const auto& [name, callee] : Halide::Internal::find_direct_calls(f)) {
      if (name == f.name() || inside.count(name)) continue;
      const std::string where = computed_in(callee);
      if (where == "root" || inside.count(where)) continue;
      // Computed per tile of a Func stored at root (an accumulator in its wrapper): there.
      auto at = functions_.find(where);
      if (at != functions_.end() && computed_in(at->second) == "root") continue;
      if (where != "inlined") {
        *culprit = name;
        return false;
      }
      if (!reads_only_available(callee, inside, culprit)) return false;
    }
    return true;
  }

  bool reached_only_from(const std::string& caller, const std::set<std::string>& inside) const {
    if (inside.count(caller)) return true;
    auto it = functions_.find(caller);
    if (it == functions_.end()) return false;
    const std::string where = computed_in(it->second);
    if (inside.count(where)) return true;
    // Computed in another Func's loops (a reduction's rfactor intermediate): inside where
    // that Func is.
    if (where == "root") return false;
    if (where != "inlined") return reached_only_from(where, inside);
    auto callers = callers_.find(caller);
    if (callers == callers_.end() || callers->second.empty()) return false;
    for (const std::string& c : callers->second) {
      if (!reached_only_from(c, inside)) return false;
    }
    return true;
  }

  const autoschedule::PipelineInfo& info_;
  std::vector<int64_t> batch_;
  std::map<std::string, Member> members_;
  std::map<std::string, Function> functions_;
  std::map<std::string, std::set<std::string>> callers_;
  std::set<std::string> within_, seen_;
};

}  // namespace

std::string apply_batch_fusion(const Halide::Pipeline& pipeline, const std::string& acc, std::string* why) {
  const autoschedule::PipelineInfo info = autoschedule::analyze(pipeline);
  auto a = info.funcs.find(acc);
  if (a == info.funcs.end()) {
    *why = acc + " is not in the pipeline";
    return "";
  }
  const Function& acc_f = a->second.function;
  const std::string host_name = computed_in(acc_f);
  if (host_name == "inlined" || host_name == "root") {
    *why = acc + " is not computed per tile of a host";
    return "";
  }
  std::optional<Func> host;
  if (host_name.find("_global_wrapper") != std::string::npos) {
    host = Func(acc_f).in();
  } else if (info.funcs.count(host_name)) {
    host = Func(info.at(host_name).function);
  } else {
    *why = "the Func that computes " + acc + "'s tiles, " + host_name + ", is not in the pipeline";
    return "";
  }
  std::string task;
  for (const Halide::Internal::Dim& d : host->function().definition().schedule().dims()) {
    if (d.for_type == Halide::Internal::ForType::Parallel) task = d.var.substr(d.var.rfind('.') + 1);
  }
  if (task.empty()) {
    *why = host_name + " has no parallel loop";
    return "";
  }
  const std::vector<int64_t>& e = a->second.extents;  // n, m, batch...
  Group group(info, pipeline, std::vector<int64_t>(e.begin() + std::min<long>(2, long(e.size())), e.end()));
  group.set_host(host->name());
  group.visit_matmul(acc_f);
  if (group.empty()) {
    *why = acc + " reads no batched value that it could compute per batch element";
    return "";
  }
  if (!group.closed(host_name, acc, why)) return "";
  group.apply(*host, task);
  log("schedule", "Kiln: " + acc + ": per batch element, in the tasks of " + host_name + ": " + group.names());
  return group.names();
}

}  // namespace kiln
