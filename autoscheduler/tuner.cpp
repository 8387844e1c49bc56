#include "tuner.h"

#include <chrono>
#include <cstdio>

#include "core/error.h"
#include "core/log.h"
#include "fingerprint.h"

namespace kiln::autoschedule {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// "\r[#####.....] 3/8  4.1 s  best 1.234 ms" on one line, redrawn in place.
void draw_progress(std::ostream* out, size_t done, size_t total, double elapsed, double best_ms) {
  if (!out) return;
  constexpr int kWidth = 20;
  const int filled = total ? int(kWidth * done / total) : kWidth;
  char line[160];
  std::snprintf(line, sizeof line, "\r[%s%s] %zu/%zu  %.1f s", std::string(size_t(filled), '#').c_str(),
                std::string(size_t(kWidth - filled), '.').c_str(), done, total, elapsed);
  *out << line;
  if (best_ms > 0) {
    std::snprintf(line, sizeof line, "  best %.4g ms", best_ms);
    *out << line;
  }
  out->flush();
}

}  // namespace

TuneResult tune(const Halide::Pipeline& throwaway, const std::string& name, const Halide::Target& target,
                const MachineModel& machine, const TuneOptions& options, const MeasureFn& measure) {
  const auto start = Clock::now();
  TuneResult r;
  r.entry.fingerprint = pipeline_fingerprint(throwaway);  // before ranking schedules it
  r.entry.target = tuning_target_key(target);
  r.entry.machine = machine.str();
  r.entry.generator = name;
  const std::vector<Candidate> candidates = ranked_candidates(throwaway, target, machine, options.candidates);

  const Measurement* best = nullptr;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const double left = options.budget_s - seconds_since(start);
    if (i > 0 && left <= 0) {
      r.not_tried = int(candidates.size() - i);
      break;
    }
    draw_progress(options.progress, i, candidates.size(), seconds_since(start), best ? best->trial.ms : 0);
    Measurement m{candidates[i], false, {}, {}};
    try {
      m.trial = measure(candidates[i].knobs, left);
      m.ok = true;
    } catch (const Halide::Error& e) {
      m.error = e.what();
    } catch (const std::exception& e) {
      m.error = e.what();
    }
    log("schedule", "tune " + name + ": candidate " + std::to_string(i) + " (" + candidates[i].knobs.str() + "): " +
                        (m.ok ? std::to_string(m.trial.ms) + " ms measured, " : "failed: " + m.error + "; ") +
                        std::to_string(candidates[i].predicted_s * 1e3) + " ms predicted");
    r.measured.push_back(m);
  }
  for (const Measurement& m : r.measured) {
    if (m.ok && (!best || m.trial.ms < best->trial.ms)) best = &m;
  }
  r.elapsed_s = seconds_since(start);
  draw_progress(options.progress, r.measured.size(), candidates.size(), r.elapsed_s, best ? best->trial.ms : 0);
  if (options.progress) *options.progress << "\n";
  if (!best) {
    user_error("tune ", name, ": none of the ", r.measured.size(), " candidates could be timed; the first failed with: ",
               r.measured.empty() ? std::string("(none tried)") : r.measured[0].error);
  }
  r.entry.knobs = best->candidate.knobs;
  r.entry.schedule = best->trial.source;
  r.entry.measured_ms = best->trial.ms;
  r.entry.predicted_ms = best->candidate.predicted_s * 1e3;
  r.entry.date = utc_now();
  return r;
}

}  // namespace kiln::autoschedule
