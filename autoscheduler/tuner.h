// Tuning: the cost model proposes, the machine decides. The search's best candidates
// (ranked_candidates) are each applied, compiled and timed by the caller's `measure`,
// within a wall-clock budget, with a progress bar; the fastest becomes a tuning database
// entry. The loop knows nothing of how a pipeline is built or timed, so `kiln tune`
// (kernel-library generators) and tests share it.
#pragma once

#include <Halide.h>

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "machine_model.h"
#include "search.h"
#include "tuning_db.h"

namespace kiln::autoschedule {

struct TuneOptions {
  int candidates = 8;      // how many of the cost model's best to time
  double budget_s = 60;    // wall clock for the whole run; the first candidate always runs
  std::ostream* progress = nullptr;  // a progress bar (stderr in `kiln tune`), or none
};

// What `measure` reports for one candidate: its time and the schedule source applied.
struct Trial {
  double ms = 0;
  std::string source;
};

struct Measurement {
  Candidate candidate;
  bool ok = false;
  Trial trial;
  std::string error;  // why it could not be timed (a Halide error, ...)
};

struct TuneResult {
  std::vector<Measurement> measured;  // in the order tried: best predicted first
  int not_tried = 0;                  // candidates left when the budget ran out
  double elapsed_s = 0;
  TuningEntry entry;                  // the winner, keyed for the database
};

// Applies `knobs` to a fresh pipeline, compiles it and times it, within `seconds_left`
// where it can; throws when the candidate cannot run.
using MeasureFn = std::function<Trial(const Knobs& knobs, double seconds_left)>;

// Tunes the pipeline `throwaway` stands for (it is scheduled while ranking; pass a fresh
// copy, unscheduled, so that its fingerprint is the database key). A kiln::Error when no
// candidate could be timed.
TuneResult tune(const Halide::Pipeline& throwaway, const std::string& name, const Halide::Target& target,
                const MachineModel& machine, const TuneOptions& options, const MeasureFn& measure);

}  // namespace kiln::autoschedule
