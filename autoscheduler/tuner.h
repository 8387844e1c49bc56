// Tuning: the cost model proposes, the machine decides. The search's best candidates
// (ranked_candidates) are each applied, compiled and timed by the caller's `measure`,
// within a wall-clock budget, with a progress bar. The fastest few of that first pass (and
// the cost model's own choice) are then timed again in interleaved rounds, so that a
// candidate that was lucky once, or a machine that slowed down between two candidates,
// does not decide; the winner of those rounds becomes a tuning database entry, and a
// runner-up replaces the cost model's choice only where it is faster by a margin, widened by
// how far apart a second copy of the cost model's choice ran in the same rounds. The loop
// knows nothing of how a pipeline is built or timed, so `kiln tune` (kernel-library
// generators and compiled models) and tests share it.
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
  int finalists = 3;       // the first pass's fastest, timed again (with the cost model's choice)
  int rounds = 5;          // interleaved rounds of the finalists, while the budget lasts (one at least)
  double margin = 0.03;    // how much faster than the cost model's choice a runner-up must be
  // The cost model's choice compiled a second time and timed in the rounds beside the
  // finalists: how far apart two copies of one schedule run in this process (their code's
  // addresses) is added to the margin.
  bool control = true;
  std::ostream* progress = nullptr;  // a progress bar (stderr in `kiln tune`), or none
  const FixedFuncs* fixed = nullptr; // Funcs the throwaway has scheduled already (a compiled model's contractions)
  // A compiled model's: its database key, taken before its contractions were scheduled
  // (kiln::prepare_kiln_schedule_for_tuning), and the runner-ups of its conv2d tiles and
  // matmul tasks.
  std::string fingerprint;              // empty: the throwaway's own
  std::vector<Alternative> alternatives;
};

// What `measure` reports for one candidate: its time, the schedule source applied and,
// where the caller can keep the compiled candidate, a way to time it again (the
// finalists' rounds; returns milliseconds). Without `again` a candidate is judged by its
// first time alone.
struct Trial {
  double ms = 0;
  std::string source;
  std::function<double()> again;
};

struct Measurement {
  Candidate candidate;
  bool ok = false;
  Trial trial;
  std::string error;           // why it could not be timed (a Halide error, ...)
  std::vector<double> rounds;  // a finalist's times in the interleaved rounds
  double confirmed_ms = 0;     // their median (the first time where there are none)
};

struct TuneResult {
  std::vector<Measurement> measured;  // in the order tried: best predicted first
  int not_tried = 0;                  // candidates left when the budget ran out
  int rounds = 0;                     // interleaved rounds the finalists ran
  double control_ms = 0;              // the control copy's median in the rounds (0: none)
  double noise = 0;                   // its distance from the cost model's choice, a fraction of it
  double margin = 0;                  // what a runner-up had to beat: TuneOptions::margin + noise
  int winner = -1;                    // index into measured
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
