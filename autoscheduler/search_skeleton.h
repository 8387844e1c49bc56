// What the CPU search (search_state.h) and the GPU search (gpu_search.cpp) share: the
// pipeline and its analysis, the forced choices, the result being built, and the order of
// a run. A search derives from SearchSkeleton<Itself> and provides
//   place_func(f)      where f is computed (called consumers first; schedules nothing),
//   check_knobs()      the knobs name decisions of this pipeline (a kiln::Error if not),
//   schedule_all(w)    every decision's loops written to w,
//   is_fixed(name)     whether the Func was scheduled before the search,
// so that a stale knob fails before the first directive and leaves the pipeline untouched.
// Internal to the autoscheduler.
#pragma once

#include <Halide.h>

#include <string>

#include "analysis.h"
#include "core/log.h"
#include "schedule_writer.h"
#include "search.h"

namespace kiln::autoschedule {

// Runner-ups kept per decision: enough to fill any sensible --candidates.
constexpr size_t kAlternativesPerDecision = 8;

template <class Derived>
struct SearchSkeleton {
  const Halide::Pipeline& pipeline;
  const Halide::Target& target;
  const MachineModel& m;
  const Knobs* knobs;       // forced choices, or null
  const FixedFuncs* fixed;  // scheduled already, or null
  PipelineInfo info;
  SearchResult result;

  SearchSkeleton(const Halide::Pipeline& p, const Halide::Target& t, const MachineModel& mm, const Knobs* k,
                 const FixedFuncs* fx)
      : pipeline(p), target(t), m(mm), knobs(k), fixed(fx), info(analyze(p)) {}

  // A decision, kept in the result and logged to `stream` (KILN_LOG).
  void decide(const std::string& stream, const std::string& line) {
    result.decisions.push_back(line);
    log(stream, line);
  }

  // A Func stored whole for a reader outside the search's loops: a pipeline output (the
  // GPU search adds the operands a vendor stage reads).
  bool treated_as_output(const FuncInfo& f) const { return f.is_output; }

  // An output whose own loops the search writes: pure, not an extern stage, not fixed.
  bool is_pure_output(const FuncInfo& f) const {
    return self().treated_as_output(f) && !f.function.has_update_definition() && !f.function.has_extern_definition() &&
           !f.vars.empty() && !self().is_fixed(f.name);
  }

  // Calls `fn` on each Func, consumers before their producers.
  template <class Fn>
  void consumers_first(Fn fn) const {
    for (auto it = info.order.rbegin(); it != info.order.rend(); ++it) fn(info.at(*it));
  }

  SearchResult run() {
    result.warnings = info.warnings;
    consumers_first([&](const FuncInfo& f) { self().place_func(f); });
    self().check_knobs();
    ScheduleWriter w = writer_for(info);
    self().schedule_all(w);
    result.source = w.source();
    return result;
  }

 private:
  Derived& self() { return static_cast<Derived&>(*this); }
  const Derived& self() const { return static_cast<const Derived&>(*this); }
};

}  // namespace kiln::autoschedule
