// Issue 34, "No crash, no wrong answer": a fixed campaign of random programs must pass on
// every execution path. Deterministic (fixed seed and count); every failure is reported
// with its C++ reproducer, none is skipped.
#include <gtest/gtest.h>

#include <sstream>

#include "fuzzer.h"

using namespace kiln::fuzz;

namespace {

TEST(Fuzz, RandomProgramsAgreeAcrossPaths) {
  FuzzOptions o;
  o.seed = 34;
  o.count = 40;
  o.jobs = 2;
  o.max_shrinks = 0;  // minimizing is slow: run kiln_fuzz (below) for minimized reproducers
  o.shrink_runs = 40;
  std::ostringstream log;
  FuzzReport r = fuzz(o, log);
  std::ostringstream repro;
  for (const Finding& f : r.findings)
    repro << "\n==== program " << f.index << " (" << f.failure.signature() << ")\n" << f.cpp;
  EXPECT_EQ(r.passed, r.total) << r.summary() << "\n(kiln_fuzz --seed 34 --count " << o.count
                               << " reproduces this run)\n"
                               << repro.str();
}

TEST(Fuzz, ProgramTextRoundTrips) {
  for (int i = 0; i < 200; ++i) {
    Program p = generate(program_seed(7, i));
    ASSERT_TRUE(is_valid(p)) << to_text(p);
    EXPECT_EQ(to_text(from_text(to_text(p))), to_text(p));
  }
}

TEST(Fuzz, GenerationIsDeterministic) {
  for (int i = 0; i < 20; ++i) EXPECT_EQ(to_text(generate(program_seed(3, i))), to_text(generate(program_seed(3, i))));
}

}  // namespace
