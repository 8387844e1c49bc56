#include "autoschedule.h"

#include <cctype>
#include <chrono>
#include <iostream>
#include <optional>
#include <sstream>

#include "core/error.h"
#include "core/log.h"
#include "fingerprint.h"
#include "tuning_db.h"

namespace kiln::autoschedule {

namespace {

std::string ms_text(double ms) {
  std::ostringstream o;
  o.precision(4);
  o << ms << " ms";
  return o.str();
}

}  // namespace

std::optional<TuningEntry> find_tuned_entry(const std::string& fingerprint, const Halide::Target& target,
                                            const MachineModel& machine, const std::string& path) {
  const TuningDb db = TuningDb::load(path);
  if (db.entries().empty()) {  // no file (every compile of a model that was never tuned)
    log("schedule", "tuning database " + path + ": no entries; using the cost model");
    return std::nullopt;
  }
  const TuningEntry* e = db.find(fingerprint, tuning_target_key(target), machine.str());
  if (!e) {
    log("schedule", "tuning database " + path + ": no entry for pipeline " + fingerprint + "; using the cost model");
    return std::nullopt;
  }
  return *e;
}

std::optional<ScheduleOutcome> apply_tuned_entry(const Halide::Pipeline& pipeline, const Halide::Target& target,
                                                 const MachineModel& machine, const std::string& path,
                                                 const FixedFuncs* fixed) {
  const std::optional<TuningEntry> entry = find_tuned_entry(pipeline_fingerprint(pipeline), target, machine, path);
  return entry ? apply_found_entry(*entry, pipeline, target, machine, path, fixed) : std::nullopt;
}

std::optional<ScheduleOutcome> apply_found_entry(const TuningEntry& entry, const Halide::Pipeline& pipeline,
                                                 const Halide::Target& target, const MachineModel& machine,
                                                 const std::string& path, const FixedFuncs* fixed) {
  const TuningEntry* e = &entry;
  const std::string& fingerprint = entry.fingerprint;
  SearchResult r;
  try {
    r = schedule_pipeline(pipeline, target, machine, &e->knobs, fixed);
  } catch (const Error& err) {
    std::cerr << "Warning: kiln tuning database " << path << ": the entry for " << e->generator << " (" << fingerprint
              << ") does not fit the pipeline: " << err.what() << "; using the cost model\n";
    return std::nullopt;
  }
  log("schedule", "tuning database " + path + ": using the tuned entry for " + e->generator + " (" + fingerprint +
                      ", measured " + ms_text(e->measured_ms) + " on " + e->date + "): " + e->knobs.str());
  ScheduleOutcome o;
  o.tuned = true;
  o.measured_ms = e->measured_ms;
  o.predicted_s = r.predicted_s;
  o.source = "    // Kiln autoscheduler: tuned entry " + fingerprint + " from " + path + ", measured " +
             ms_text(e->measured_ms) + " on " + e->date + "\n" + r.source;
  return o;
}

MachineModel machine_for(const Halide::Target& target, const std::map<std::string, std::string>& params) {
  MachineModel machine = machine_model(target);
  for (const auto& [key, value] : params) {
    if (key == "machine") {
      apply_overrides(machine, value);
    } else if (key == "parallelism") {  // Halide's autoschedulers' name for the core count
      apply_overrides(machine, "cores=" + value);
    } else if (key != "db") {
      user_error("the Kiln autoscheduler has no parameter '", key, "'; its parameters are machine=<key=value,...> ",
                 "(the KILN_MACHINE format), parallelism=<cores> and db=<tuning database path>|none");
    }
  }
  return machine;
}

std::string db_path_for(const std::map<std::string, std::string>& params) {
  auto it = params.find("db");
  if (it != params.end() && it->second == "none") return "";
  return tuning_db_path(it == params.end() ? "" : it->second);
}

ScheduleOutcome autoschedule(const Halide::Pipeline& pipeline, const Halide::Target& target,
                             const std::map<std::string, std::string>& params) {
  const auto start = std::chrono::steady_clock::now();
  if (target.has_gpu_feature() && !target.has_feature(Halide::Target::CUDA)) {
    user_error("the Kiln autoscheduler plans CPU and CUDA targets; target ", target.to_string(),
               " has another GPU API (use Anderson2021, Li2018 or Mullapudi2016 for it)");
  }
  const MachineModel machine = machine_for(target, params);
  const std::string path = db_path_for(params);
  log("schedule", "machine: " + machine.str());
  std::optional<ScheduleOutcome> tuned;
  if (!path.empty()) tuned = apply_tuned_entry(pipeline, target, machine, path);
  ScheduleOutcome o;
  if (tuned) {
    o = *tuned;
  } else {
    SearchResult r;
    try {
      r = schedule_pipeline(pipeline, target, machine);
    } catch (const Halide::CompileError& e) {
      KILN_INTERNAL_ERROR("the Kiln autoscheduler made a schedule that Halide rejects: ", e.what());
    }
    for (const std::string& w : r.warnings) std::cerr << "Warning: Kiln autoscheduler: " << w << "\n";
    o.predicted_s = r.predicted_s;
    o.source = "    // Kiln autoscheduler; predicted " + ms_text(r.predicted_s * 1e3) + " on " + machine.str() + "\n" +
               r.source;
  }
  o.db_path = path;
  o.machine = machine;
  o.search_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  log("schedule", "Kiln: predicted " + ms_text(o.predicted_s * 1e3) + ", searched in " + ms_text(o.search_ms));
  return o;
}

std::string schedule_header(const std::string& function, const std::string& body, const Halide::Target& target,
                            const std::string& comment) {
  std::string guard;
  for (char c : function) guard += char(std::toupper(static_cast<unsigned char>(c)));
  guard += "_SCHEDULE_H";
  std::ostringstream o;
  o << "// " << comment << "\n// for target=" << target.to_string() << "\n#ifndef " << guard << "\n#define " << guard
    << "\n\n#include \"Halide.h\"\n\n"
    << "inline void " << function << "(::Halide::Pipeline pipeline, ::Halide::Target target) {\n"
    << "    using ::Halide::Func;\n    using ::Halide::MemoryType;\n    using ::Halide::RVar;\n"
    << "    using ::Halide::TailStrategy;\n    using ::Halide::Var;\n"
    << body << "}\n\n#endif  // " << guard << "\n";
  return o.str();
}

}  // namespace kiln::autoschedule
