#include "tuner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "core/log.h"
#include "fingerprint.h"
#include "core/stats.h"

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

// The indices of the first pass's `n` fastest, and of the cost model's choice (index 0)
// where it was timed: the finalists, in the order tried.
std::vector<size_t> finalists(const std::vector<Measurement>& measured, int n) {
  std::vector<size_t> ok;
  for (size_t i = 0; i < measured.size(); ++i) {
    if (measured[i].ok) ok.push_back(i);
  }
  std::stable_sort(ok.begin(), ok.end(),
                   [&](size_t a, size_t b) { return measured[a].trial.ms < measured[b].trial.ms; });
  if (ok.size() > size_t(std::max(n, 1))) ok.resize(size_t(std::max(n, 1)));
  if (!measured.empty() && measured[0].ok && std::find(ok.begin(), ok.end(), 0) == ok.end()) ok.push_back(0);
  std::sort(ok.begin(), ok.end());
  return ok;
}

}  // namespace

TuneResult tune(const Halide::Pipeline& throwaway, const std::string& name, const Halide::Target& target,
                const MachineModel& machine, const TuneOptions& options, const MeasureFn& measure) {
  const auto start = Clock::now();
  TuneResult r;
  // Before ranking schedules it.
  r.entry.fingerprint = options.fingerprint.empty() ? pipeline_fingerprint(throwaway) : options.fingerprint;
  r.entry.target = tuning_target_key(target);
  r.entry.machine = machine.str();
  r.entry.generator = name;
  const std::vector<Candidate> candidates = ranked_candidates(throwaway, target, machine, options.candidates, options.fixed,
                                                              &options.alternatives);
  // The first pass leaves a third of the budget to the finalists' rounds.
  const double first_pass_s = options.finalists > 0 && options.rounds > 0 ? options.budget_s * 2 / 3 : options.budget_s;

  auto best_ms = [&r]() {
    double best = 0;
    for (const Measurement& m : r.measured) {
      if (m.ok && (best == 0 || m.trial.ms < best)) best = m.trial.ms;
    }
    return best;
  };
  for (size_t i = 0; i < candidates.size(); ++i) {
    const double left = first_pass_s - seconds_since(start);
    if (i > 0 && left <= 0) {
      r.not_tried = int(candidates.size() - i);
      break;
    }
    draw_progress(options.progress, i, candidates.size(), seconds_since(start), best_ms());
    Measurement m{candidates[i], false, {}, {}, {}, 0};
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
    r.measured.push_back(std::move(m));
    // Only the finalists so far keep their compiled kernels.
    const std::vector<size_t> keep = finalists(r.measured, options.finalists);
    for (size_t j = 0; j < r.measured.size(); ++j) {
      if (std::find(keep.begin(), keep.end(), j) == keep.end()) r.measured[j].trial.again = nullptr;
    }
  }
  draw_progress(options.progress, r.measured.size(), candidates.size(), seconds_since(start), best_ms());

  // The finalists again, in rounds, each round in another order: a machine that slows
  // down for a while slows every finalist alike.
  std::vector<size_t> final = finalists(r.measured, options.finalists);
  final.erase(std::remove_if(final.begin(), final.end(), [&](size_t i) { return !r.measured[i].trial.again; }),
              final.end());
  // The control: the cost model's choice compiled again. On a 16-core Xeon, six compiled
  // copies of one loop nest ran 2-5% apart in one process, however many rounds it ran, and
  // a runner-up 3.4% faster in the rounds ran 6-8% slower in 8 processes of bench-kernels.
  Measurement control{r.measured.empty() ? Candidate{} : r.measured[0].candidate, false, {}, {}, {}, 0};
  const bool choice_in_rounds = std::find(final.begin(), final.end(), size_t(0)) != final.end();
  if (options.control && final.size() > 1 && choice_in_rounds && options.rounds > 0) {
    try {
      control.trial = measure(control.candidate.knobs, options.budget_s - seconds_since(start));
      control.ok = bool(control.trial.again);
    } catch (const std::exception& e) {
      log("schedule", "tune " + name + ": the control copy failed: " + e.what());
    }
  }
  for (int round = 0; final.size() > 1 && round < options.rounds; ++round) {
    if (round > 0 && seconds_since(start) >= options.budget_s) break;
    const size_t n = final.size() + (control.ok ? 1 : 0);
    for (size_t j = 0; j < n; ++j) {
      const size_t k = (j + size_t(round)) % n;
      Measurement& m = k < final.size() ? r.measured[final[k]] : control;
      if (!m.ok) continue;
      try {
        m.rounds.push_back(m.trial.again());
      } catch (const std::exception& e) {
        m.ok = false;
        m.error = std::string("timed again: ") + e.what();
      }
    }
    r.rounds = round + 1;
  }
  control.trial.again = nullptr;
  int winner = -1;
  for (size_t i = 0; i < r.measured.size(); ++i) {
    Measurement& m = r.measured[i];
    m.trial.again = nullptr;  // the compiled kernels go
    if (!m.ok) continue;
    m.confirmed_ms = m.rounds.empty() ? m.trial.ms : median(m.rounds);
    // Where the finalists ran rounds, only they compete, on their rounds' medians.
    if (r.rounds > 0 && m.rounds.empty()) continue;
    if (winner < 0 || m.confirmed_ms < r.measured[size_t(winner)].confirmed_ms) winner = int(i);
  }
  const Measurement& chosen = r.measured[0];
  if (control.ok && !control.rounds.empty() && chosen.ok && !chosen.rounds.empty()) {
    r.control_ms = median(control.rounds);
    r.noise = std::abs(r.control_ms - chosen.confirmed_ms) / chosen.confirmed_ms;
    log("schedule", "tune " + name + ": the cost model's choice compiled twice ran " +
                        std::to_string(chosen.confirmed_ms) + " and " + std::to_string(r.control_ms) + " ms");
  }
  const double margin = r.margin = options.margin + r.noise;
  if (winner > 0 && chosen.ok && (r.rounds == 0 || !chosen.rounds.empty()) &&
      r.measured[size_t(winner)].confirmed_ms > chosen.confirmed_ms * (1 - margin)) {
    log("schedule", "tune " + name + ": candidate " + std::to_string(winner) + " is within " +
                        std::to_string(margin * 100) + "% of the cost model's choice, which stays");
    winner = 0;
  }
  r.elapsed_s = seconds_since(start);
  if (options.progress) *options.progress << "\n";
  if (winner < 0) {
    user_error("tune ", name, ": none of the ", r.measured.size(), " candidates could be timed; the first failed with: ",
               r.measured.empty() ? std::string("(none tried)") : r.measured[0].error);
  }
  const Measurement& best = r.measured[size_t(winner)];
  r.winner = winner;
  r.entry.knobs = best.candidate.knobs;
  r.entry.schedule = best.trial.source;
  r.entry.measured_ms = best.confirmed_ms;
  r.entry.predicted_ms = best.candidate.predicted_s * 1e3;
  r.entry.date = utc_now();
  return r;
}

}  // namespace kiln::autoschedule
