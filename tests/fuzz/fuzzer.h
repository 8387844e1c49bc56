// The fuzzing campaign: N programs from a seed, run in parallel workers, failures shrunk
// and printed as C++ reproducers. Deterministic given the seed: program i is generated
// from (seed, i) alone, and each program's outcome does not depend on which worker ran it.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "generate.h"
#include "run.h"
#include "shrink.h"

namespace kiln::fuzz {

struct FuzzOptions {
  uint64_t seed = 1;
  int count = 100;
  GenOptions gen;
  RunOptions run;
  int jobs = 2;              // worker processes
  double timeout_s = 120;    // per program
  int max_shrinks = 20;      // failing programs to minimize (the rest are counted only)
  int shrink_runs = 150;     // candidate runs per minimization
  bool verbose = false;
};

struct Finding {
  int index = 0;  // which program of the campaign
  Program original, minimized;
  Failure failure;  // of the minimized program
  std::string cpp;  // the reproducer
  bool shrunk = false;
};

struct FuzzReport {
  int total = 0, crashed = 0, threw = 0, wrong = 0, refused = 0, passed = 0;
  std::vector<Finding> findings;  // distinct minimized failures
  std::string summary() const;  // "N programs: C crashed, W wrong, R refused, E threw, P passed"
};

uint64_t program_seed(uint64_t seed, int index);
FuzzReport fuzz(const FuzzOptions& options, std::ostream& log);
// The same over given programs (options.seed and count unused; a finding's index is the
// program's position).
FuzzReport fuzz(const std::vector<Program>& programs, const FuzzOptions& options, std::ostream& log);

}  // namespace kiln::fuzz
