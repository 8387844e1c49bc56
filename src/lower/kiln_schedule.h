// kiln's autoscheduler (autoscheduler/) as the scheduler of a lowered graph: the cost-model
// search of the `Kiln` Halide plugin, called directly (no plugin is loaded).
#pragma once

#include <Halide.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "autoscheduler/fixed_funcs.h"
#include "lower/lower_to_halide.h"

namespace kiln {

namespace autoschedule {
struct Knobs;        // autoscheduler/search.h (not installed with kiln's headers)
struct Alternative;  // idem
}  // namespace autoschedule

// Concrete sizes the search plans for, kiln order (dim 0 outermost): one entry per
// pipeline input and per output. Dynamic dims take the sizes they had when traced.
struct SizeEstimates {
  std::vector<std::vector<int64_t>> inputs, outputs;
};

// "{0, n0}, {0, n1}, ..." in Halide's dim order (innermost first) for kiln sizes.
Halide::Region estimate_region(const std::vector<int64_t>& kiln_sizes);

// What apply_kiln_schedule applied.
struct KilnSchedule {
  std::string source;              // the search's schedule source: every Func but the fixed ones,
                                   // found by kiln::pipeline_func
  std::vector<std::string> fixed;  // Funcs that kept the rules' schedules (the contractions), by key
  double predicted_s = 0;          // the cost model's time for the Funcs the search scheduled
  bool tuned = false;              // the tuning database's entry was applied
  // The sizes given the contractions within the rules' loops (a CPU's conv2d tiles and
  // matmul tasks, by key), as JSON text: what a schedule file holds besides `source`, and
  // what kiln::scheduled_backend takes back.
  std::string contractions;
};

struct KilnScheduleOptions {
  // A candidate's choices (what `kiln tune <model>` times), replacing the cost model's; a
  // knob that does not fit the pipeline is a kiln::Error.
  const autoschedule::Knobs* knobs = nullptr;
  // The tuning database: "" for autoschedule::tuning_db_path()'s default; "none": not read.
  std::string db;
};

// Sets the estimates on the pipeline's inputs and outputs and gives the contractions the
// default rules' loops (apply_default_cpu_contraction_schedule on a CPU: matmul with the
// rules' register tiles and the tasks its knob names, conv2d with the tile its knob
// names, each knob from `options.knobs` or else the tuning database's entry, or else the
// cost model's choice, autoschedule::choose_matmul_tasks and choose_conv_tile;
// apply_default_gpu_matmul_schedule for a CUDA target's matmuls): the pipeline as Kiln's
// search receives it, and what the search must plan around (autoschedule::FixedFuncs: by
// Func name, left inline, with loops of its own, or stored for a contraction with its
// loops left to the search, whose schedule source then holds them). A conv tile or matmul
// task knob that does not fit the pipeline is a kiln::Error; a database entry's, a
// warning (the entry is not used).
// `per_batch`, when given, gets the matmul accumulators given a task per batch element
// (autoschedule::MatmulTasks::per_batch), for fuse_batches once the rest is scheduled.
autoschedule::FixedFuncs prepare_kiln_schedule(LoweredGraph& lowered, const Halide::Target& target,
                                               const SizeEstimates& sizes, const KilnScheduleOptions& options = {},
                                               std::vector<std::string>* per_batch = nullptr);

// For each of those matmuls, once every Func is scheduled (by the search, or a schedule
// file's function): the batched values it reads move into its tasks (apply_batch_fusion,
// src/lower/batch_fusion.h). Returns what moved, one comment line per matmul, for a
// schedule file.
std::string fuse_batches(LoweredGraph& lowered, const std::vector<std::string>& per_batch);

// For `kiln tune <model>`: prepare_kiln_schedule with the cost model's conv2d tiles and
// matmul tasks (no database), and what the tuner needs besides: the pipeline's key in the
// tuning database (its fingerprint with the estimates set, before anything is scheduled,
// so that no contraction's tile or tasks change it) and the runner-ups of those choices.
autoschedule::FixedFuncs prepare_kiln_schedule_for_tuning(LoweredGraph& lowered, const Halide::Target& target,
                                                          const SizeEstimates& sizes, std::string* fingerprint,
                                                          std::vector<autoschedule::Alternative>* rules_alternatives);

// The Func of `pipeline` that `key` names: its name without Halide's "$<n>" suffix,
// numbered "#2", "#3" where several Funcs share it, in an order that depends only on the
// pipeline's structure (the knobs' keys). Schedule files of models (`kiln autoschedule
// <model>`) find their Funcs this way, since the suffixes, and so pipeline.get_func's
// order, differ from process to process. A key the pipeline lacks is a kiln::Error.
Halide::Func pipeline_func(const Halide::Pipeline& pipeline, const std::string& key);

// prepare_kiln_schedule, then kiln's search plans the rest (KILN_LOG=schedule,fusion
// prints each decision): with knobs, theirs; else the tuning database's entry for this
// pipeline (its fingerprint with the estimates set, before anything is scheduled), target
// and machine where there is one (KILN_TUNING_DB=none: never); else the cost model's choice.
KilnSchedule apply_kiln_schedule(LoweredGraph& lowered, const Halide::Target& target, const SizeEstimates& sizes,
                                 const KilnScheduleOptions& options = {});

}  // namespace kiln
