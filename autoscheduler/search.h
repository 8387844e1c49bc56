// kiln's CPU search: for every Func of a pipeline, where it is computed (inlined into its
// consumers, computed per tile or row of an output, or at root) and how its loops run
// (register tiles, cache blocks, vector width, parallel tasks), each choice scored with
// the cost model over a small candidate set. Decisions are logged under KILN_LOG=schedule
// (loops and tiles) and KILN_LOG=fusion (where each Func is computed).
#pragma once

#include <Halide.h>

#include <string>
#include <vector>

#include "cost_model.h"
#include "machine_model.h"

namespace kiln::autoschedule {

struct SearchResult {
  std::string source;                 // schedule source: the body of apply_schedule_<name>
  std::vector<std::string> decisions;  // one line per decision, as logged
  std::vector<std::string> warnings;   // missing estimates, defaults used
  double predicted_s = 0;              // the cost model's time for the whole pipeline
};

// Schedules `pipeline` (its Funcs are modified) for a CPU target.
SearchResult schedule_pipeline(const Halide::Pipeline& pipeline, const Halide::Target& target,
                               const MachineModel& machine);

// A matmul-like stage, out[m][n] += a[m][k] b[k][n] over `batch` independent problems,
// and one way to run it: register tiles of `rows` x `vectors` vectors of `lanes`,
// column blocks of `block` columns, `band` tiles of rows per parallel task. The plan
// is what the search scores; tests rank schedules with it.
struct ContractionShape {
  double m = 1, n = 1, k = 1, batch = 1;
  int bytes = 4;
};
struct ContractionTiling {
  int rows = 1, vectors = 1, lanes = 1;
  double block = 0;  // 0: no column blocking
  int band = 1;
  bool parallel = true;
};
StagePlan contraction_plan(const ContractionShape& s, const ContractionTiling& t);

}  // namespace kiln::autoschedule
