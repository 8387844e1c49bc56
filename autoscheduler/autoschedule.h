// The Kiln autoscheduler's entry point, shared by the Halide plugin (plugin.cpp) and the
// `kiln autoschedule` command: looks the pipeline up in the tuning database and applies
// the measured winner when there is one, else schedules it with the cost model.
//
// Parameters (Halide's AutoschedulerParams::extra):
//   machine=<KILN_MACHINE-style overrides>   parallelism=<cores> (as Halide's take it)
//   db=<path> (else tuning_db_path()'s default), or db=none: cost model only
#pragma once

#include <Halide.h>

#include <map>
#include <optional>
#include <string>

#include "machine_model.h"
#include "search.h"
#include "tuning_db.h"

namespace kiln::autoschedule {

struct ScheduleOutcome {
  std::string source;      // schedule source (the body of apply_schedule_<name>), with a comment line
  double predicted_s = 0;  // the cost model's time for the applied schedule
  double search_ms = 0;    // wall time spent scheduling
  bool tuned = false;      // applied from the tuning database
  double measured_ms = 0;  // the tuned entry's measured time
  std::string db_path;     // the database consulted ("" with db=none)
  MachineModel machine;
};

// The machine the parameters describe: detected for `target`, then machine= and
// parallelism= applied. An unknown parameter is a kiln::Error listing the known ones.
MachineModel machine_for(const Halide::Target& target, const std::map<std::string, std::string>& params);
// The database path the parameters select, or "" for db=none.
std::string db_path_for(const std::map<std::string, std::string>& params);

// Schedules `pipeline` for a CPU or CUDA target (another GPU API is a kiln::Error).
ScheduleOutcome autoschedule(const Halide::Pipeline& pipeline, const Halide::Target& target,
                             const std::map<std::string, std::string>& params);

// The tuning database's entry at `path` for `pipeline` (its fingerprint, the target, the
// machine), applied to it; nothing where there is none, or where the entry no longer fits
// (then a warning, and the pipeline is untouched). `fixed`: Funcs scheduled already, which
// the search plans around.
std::optional<ScheduleOutcome> apply_tuned_entry(const Halide::Pipeline& pipeline, const Halide::Target& target,
                                                 const MachineModel& machine, const std::string& path,
                                                 const FixedFuncs* fixed = nullptr);
// The two halves of apply_tuned_entry, for a caller whose key is not the fingerprint of the
// pipeline it schedules (a compiled model's is taken before its contractions are): the
// entry for `fingerprint` (logged under KILN_LOG=schedule either way), and an entry applied.
std::optional<TuningEntry> find_tuned_entry(const std::string& fingerprint, const Halide::Target& target,
                                            const MachineModel& machine, const std::string& path);
std::optional<ScheduleOutcome> apply_found_entry(const TuningEntry& entry, const Halide::Pipeline& pipeline,
                                                 const Halide::Target& target, const MachineModel& machine,
                                                 const std::string& path, const FixedFuncs* fixed = nullptr);

// A complete schedule header around `body` (ScheduleOutcome::source): include guard,
// `inline void <function>(::Halide::Pipeline pipeline, ::Halide::Target target)`, and the
// using-declarations the body needs: the schedules/ format, ready to be included back.
std::string schedule_header(const std::string& function, const std::string& body, const Halide::Target& target,
                            const std::string& comment);

}  // namespace kiln::autoschedule
