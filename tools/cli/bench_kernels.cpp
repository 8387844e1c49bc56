// kiln bench-kernels: every generator of the kernel library under each schedule (the
// hand-written one, kiln's default rules, kiln's autoscheduler from its cost model and,
// where the tuning database has an entry, as tuned, and each of Halide's autoschedulers
// that supports the target), JIT-compiled in-process from the same KernelSpecs the generators
// use, timed on the generators' estimate sizes.
//
// Each (generator, schedule) runs in a forked child: an autoscheduler that crashes or
// hangs becomes a table row ("failed: ...", "timed out after S s") and the run goes on.
// The parent never starts Halide's runtime (no thread pool, no CUDA context), so forking
// is safe. The children of one generator are all started (scheduled and compiled, as
// many at a time as there are cores, then warm) before any is timed, then timed in
// interleaved rounds, each round in another order: a machine whose speed drifts (other
// tenants, clocks) moves every row alike, and each row's time is the median of its
// rounds' medians. With --processes N each schedule runs in N children, launched every
// schedule once, then again: one process's placement (its buffers' physical pages, its
// code's addresses, its threads' cores) can move a memory-bound kernel by 10% on a shared
// VM, for the whole life of the process, which no number of rounds in that process
// averages out. Within a process, a CPU kernel's rounds run on --buffer-sets sets of
// buffers in turn (default 3), so its median is not one set's pages either.
#include <CLI/CLI.hpp>
#include <dlfcn.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "autoscheduler/autoscheduler.h"
#include "cli/bench_report.h"
#include "cli/commands.h"
#include "cli/line_pipe.h"
#include "cli/options.h"
#include "kernel_spec.h"
#include "kernel_timing.h"
#include "kiln.h"
#include "lower/target.h"
#include "core/stats.h"

namespace kiln::cli {

namespace {

struct Args {
  std::string filter;
  std::string target = "host";
  int reps = 30;
  int rounds = 3;           // interleaved rounds of every schedule of a generator
  int processes = 1;        // children per schedule, each timed in every round
  int buffer_sets = 3;      // sets of inputs and output per child, one per round in turn (CPU)
  double timeout = 120;     // per (generator, schedule): scheduling and compiling, then each round
  double max_seconds = 10;  // timing stops after this once 5 runs are in
  std::string db;           // tuning database for the Kiln-tuned rows
  std::string schedules;    // comma-separated subset of the target's schedules, or all
};

// Halide's autoscheduler plugins sit next to libHalide.so in the wheel.
std::string halide_lib_dir() {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void*>(&Halide::load_plugin), &info) || !info.dli_fname) return ".";
  std::string path = info.dli_fname;
  return path.substr(0, path.find_last_of('/'));
}

// "Kiln" is its cost model; "Kiln-tuned" the tuning database's entry (kiln tune), a row
// only where the database has one for the generator.
constexpr const char* kKilnTuned = "Kiln-tuned";

std::vector<std::string> schedules_for(bool gpu) {
  // Adams2019 plans for CPUs only, Anderson2021 for GPUs only.
  if (gpu) return {"manual", "default", "Kiln", kKilnTuned, "Mullapudi2016", "Li2018", "Anderson2021"};
  return {"manual", "default", "Kiln", kKilnTuned, "Mullapudi2016", "Adams2019", "Li2018"};
}

// The schedules --schedules names (all of the target's without it), in the table's order.
std::vector<std::string> schedules_to_time(const Args& a) {
  const std::vector<std::string> all = schedules_for(a.target == "host-cuda");
  if (a.schedules.empty()) return all;
  std::set<std::string> asked;
  std::stringstream list(a.schedules);
  for (std::string s; std::getline(list, s, ',');) {
    if (std::find(all.begin(), all.end(), s) == all.end()) {
      std::string names;
      for (const std::string& n : all) names += (names.empty() ? "" : ", ") + n;
      user_error("bench-kernels: --schedules names '", s, "', which is not a schedule for ", a.target,
                 "; the schedules are: ", names);
    }
    asked.insert(s);
  }
  std::vector<std::string> out;
  for (const std::string& s : all) {
    if (asked.count(s)) out.push_back(s);
  }
  return out;
}

// The parameters every autoscheduler gets: Halide's the cores to plan for, Kiln which
// tuning database to read (none for the cost-model row).
std::map<std::string, std::string> autoscheduler_params(const std::string& schedule, bool gpu, const Args& a) {
  const int parallelism = gpu ? 128 : int(std::max(1u, std::thread::hardware_concurrency()));
  std::map<std::string, std::string> p;
  // Kiln reads the machine itself, as kiln tune and kiln autoschedule do: the cores (or
  // the GPU) detected, then KILN_MACHINE. A parallelism parameter would override
  // KILN_MACHINE's cores, and the tuned entry, keyed by the machine, would not be found.
  if (schedule != "Kiln" && schedule != kKilnTuned) p["parallelism"] = std::to_string(parallelism);
  if (schedule == "Kiln") p["db"] = "none";
  if (schedule == kKilnTuned) p["db"] = a.db;
  return p;
}

// Whether the tuning database has an entry for this pipeline on this machine (read in the
// child: building the pipeline in the parent could start Halide's runtime before forking).
bool has_tuned_entry(const kernels::DirectKernel& k, const Halide::Target& target,
                     const std::map<std::string, std::string>& params) {
  const autoschedule::TuningDb db = autoschedule::TuningDb::load(autoschedule::db_path_for(params));
  return db.find(autoschedule::pipeline_fingerprint(k.lowered.pipeline()), autoschedule::tuning_target_key(target),
                 autoschedule::machine_for(target, params).str()) != nullptr;
}

// In the child: schedule and compile one variant, ready to be timed; none for a
// Kiln-tuned row without a database entry.
std::unique_ptr<kernels::KernelTimer> prepare_variant(const kernels::KernelSpec& spec, const std::string& schedule,
                                                      const Args& a) {
  const bool gpu = a.target == "host-cuda";
  // As kiln tune and the plugin read it: the tuned entries are keyed by this target.
  const Halide::Target target = kiln::parse_target(a.target);
  kernels::DirectKernel k = kernels::build_direct(spec);
  if (schedule == "manual" || schedule == "default") {
    kernels::apply_named_schedule(schedule, spec.generator, k.lowered, target);
  } else if (schedule == "Kiln" || schedule == kKilnTuned) {
    // The plugin's own entry point, linked into kiln (no plugin path to find on another
    // machine).
    const std::map<std::string, std::string> params = autoscheduler_params(schedule, gpu, a);
    if (schedule == kKilnTuned && !has_tuned_entry(k, target, params)) return nullptr;
    autoschedule::autoschedule(k.lowered.pipeline(), target, params);
  } else {
    std::string lib = halide_lib_dir() + "/libautoschedule_";
    for (char c : schedule) lib += char(std::tolower(c));
    Halide::load_plugin(lib + ".so");
    k.lowered.pipeline().apply_autoscheduler(target, {schedule, autoscheduler_params(schedule, gpu, a)});
  }
  return std::make_unique<kernels::KernelTimer>(std::move(k), target);
}

// The child's side: one line per message, "ready", "none" or "failed: ...", then "ok <ms>
// <runs>" for each 't' the parent sends, until the parent closes its end.
[[noreturn]] void child_main(const kernels::KernelSpec& spec, const std::string& schedule, const Args& a, int in,
                             int out) {
  auto send = [out](std::string msg) {
    std::replace(msg.begin(), msg.end(), '\n', ' ');
    msg += '\n';
    (void)!write(out, msg.data(), msg.size());
  };
  try {
    const std::unique_ptr<kernels::KernelTimer> timer = prepare_variant(spec, schedule, a);
    if (!timer) {
      send("none");
      _exit(0);
    }
    // Where a CPU kernel's buffers lie moves it by up to 13% on the 16-core Xeon (one loop
    // nest on six sets of buffers in one process, kernel_timing.h): each round runs on the
    // next of several sets, so a process's median is not one placement's.
    std::vector<std::shared_ptr<const kernels::KernelData>> sets = {timer->data()};
    const int buffer_sets = a.target == "host" ? a.buffer_sets : 1;
    while (int(sets.size()) < buffer_sets) sets.push_back(std::make_shared<const kernels::KernelData>(spec));
    send("ready");
    char c = 0;
    for (size_t round = 0; read(in, &c, 1) == 1 && c == 't'; ++round) {
      if (sets.size() > 1) timer->bind(sets[round % sets.size()]);
      const kernels::KernelTiming t = timer->time(a.reps, a.max_seconds);
      send("ok " + std::to_string(t.median_ms) + " " + std::to_string(t.runs));
    }
  } catch (const std::exception& e) {
    send(std::string("failed: ") + e.what());
  } catch (const Halide::Error& e) {
    send(std::string("failed: ") + e.what());
  }
  _exit(0);
}

// One schedule of one generator, in one child process.
struct Variant {
  std::string schedule;
  pid_t pid = -1;
  int to_child = -1, from_child = -1;
  std::string pending;          // bytes read past the last line
  bool live = false;            // ready to be timed
  bool absent = false;          // no row: Kiln-tuned without a database entry
  std::vector<double> samples;  // each round's median
  int runs = 0;
  std::string note;  // why there is no time
  std::chrono::steady_clock::time_point launched;

  // The child's next line, or why there is none ("timed out after S s", "failed: ...").
  // `limit_s` is the limit the message names (the timeout, of which `timeout_s` is left).
  bool next_line(double timeout_s, std::string* line, double limit_s = 0) {
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                              std::chrono::duration<double>(timeout_s));
    switch (read_line(from_child, pending, deadline, line)) {
      case LineRead::line:
        return true;
      case LineRead::timed_out:
        fail("timed out after " + std::to_string(int(std::max(timeout_s, limit_s))) + " s");
        return false;
      case LineRead::closed: {  // the child is gone
        int status = 0;
        waitpid(pid, &status, 0);
        pid = -1;
        fail(WIFSIGNALED(status) ? "failed: killed by signal " + std::to_string(WTERMSIG(status)) : "failed: no result");
        return false;
      }
    }
    return false;
  }

  void fail(const std::string& why) {
    if (note.empty()) note = why;
    live = false;
    stop();
  }

  void stop() {
    if (to_child >= 0) close(to_child), to_child = -1;
    if (from_child >= 0) close(from_child), from_child = -1;
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
      pid = -1;
    }
  }

  // Forks the child, which schedules and compiles its variant.
  void launch(const kernels::KernelSpec& spec, const Args& a) {
    int down[2], up[2];
    if (pipe(down) != 0 || pipe(up) != 0) user_error("bench-kernels: pipe() failed");
    std::fflush(nullptr);
    pid = fork();
    if (pid == 0) {
      close(down[1]);
      close(up[0]);
      child_main(spec, schedule, a, down[0], up[1]);
    }
    close(down[0]);
    close(up[1]);
    to_child = down[1];
    from_child = up[0];
    launched = std::chrono::steady_clock::now();
  }

  // Waits until the child is compiled, within the timeout from its launch.
  void await_ready(const Args& a) {
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - launched).count();
    std::string line;
    if (!next_line(std::max(0.0, a.timeout - elapsed), &line, a.timeout)) return;
    if (line == "ready") {
      live = true;
    } else if (line == "none") {
      absent = true;
      stop();
    } else {
      fail(line.substr(0, 160));
    }
  }

  // One round: the child times its kernel once more.
  void time(const Args& a) {
    if (!live) return;
    if (write(to_child, "t", 1) != 1) return fail("failed: the child is gone");
    std::string line;
    if (!next_line(a.timeout, &line)) return;
    double ms = 0;
    int runs = 0;
    if (std::sscanf(line.c_str(), "ok %lf %d", &ms, &runs) == 2) {
      samples.push_back(ms);
      this->runs += runs;
    } else {
      fail(line.substr(0, 160));
    }
  }

};

// One schedule's row: the rounds of all its processes.
struct Row {
  std::string schedule;
  std::vector<double> samples;     // every round's median, of every process
  std::vector<double> process_ms;  // each process's median
  int runs = 0;
  std::string note;  // why there is no time (the first process that failed)

  void add(const Variant& v) {
    if (!v.note.empty() || v.samples.empty()) {
      if (note.empty()) note = v.note.empty() ? "failed: not timed" : v.note;
      return;
    }
    samples.insert(samples.end(), v.samples.begin(), v.samples.end());
    process_ms.push_back(median(v.samples));
    runs += v.runs;
  }
  bool timed() const { return note.empty() && !samples.empty(); }
  double median_ms() const { return median(samples); }
};

int bench_kernels(Args a) {
  a.db = autoschedule::tuning_db_path(a.db);
  if (a.target != "host" && a.target != "host-cuda") {
    user_error("bench-kernels: --target must be host or host-cuda, not '", a.target, "'");
  }
  schedules_to_time(a);  // a bad --schedules is an error before anything runs
  const bool gpu = a.target == "host-cuda";
  const std::string label = gpu ? "cuda" : "cpu";
  std::vector<std::string> names;
  for (const kernels::GeneratorInfo& g : kernels::generators()) names.push_back(g.name);
  const auto selected = name_filter("bench-kernels", a.filter, names, "generator");
  for (const kernels::GeneratorInfo& g : kernels::generators()) {
    if (!selected(g.name)) continue;
    kernels::KernelSpec spec = kernels::make_spec(g.name);
    // The children of the generator are launched as many at a time as there are cores
    // (each schedules and compiles on one); each has the timeout from its launch to be ready.
    // A schedule's processes are spread over the launches (every schedule once, then again),
    // so that what the machine was doing while they allocated is not one schedule's alone.
    std::vector<Variant> children;
    const std::vector<std::string> schedules = schedules_to_time(a);
    for (int p = 0; p < a.processes; ++p) {
      for (const std::string& s : schedules) children.emplace_back().schedule = s;
    }
    const size_t at_once = std::max(1u, std::thread::hardware_concurrency());
    size_t launched = 0;
    for (size_t i = 0; i < children.size(); ++i) {
      for (; launched < children.size() && launched < i + at_once; ++launched) children[launched].launch(spec, a);
      children[i].await_ready(a);
    }
    std::erase_if(children, [](const Variant& v) { return v.absent; });
    // Each round moves the order on by one child.
    for (int round = 0; round < a.rounds; ++round) {
      for (size_t i = 0; i < children.size(); ++i) children[(i + size_t(round)) % children.size()].time(a);
    }
    std::vector<Row> rows;
    for (const std::string& s : schedules) {
      for (Variant& v : children) {
        if (v.schedule != s) continue;
        if (rows.empty() || rows.back().schedule != s) rows.push_back({s});
        v.stop();
        rows.back().add(v);
      }
    }
    double best = 0;
    for (const Row& r : rows) {
      if (r.timed() && (best == 0 || r.median_ms() < best)) best = r.median_ms();
    }
    std::string sizes;
    for (const kernels::KernelInput& in : spec.inputs) {
      sizes += (sizes.empty() ? "" : ", ") + in.name + Shape(in.estimate).str();
    }
    std::fprintf(stderr, "%s (%s, %s)\n", g.name.c_str(), label.c_str(), sizes.c_str());
    for (const Row& r : rows) {
      if (!r.timed()) {
        std::fprintf(stderr, "  %-14s %s\n", r.schedule.c_str(), r.note.empty() ? "failed: not timed" : r.note.c_str());
        continue;
      }
      const double ms = r.median_ms();
      std::string spread;
      if (r.process_ms.size() > 1) {
        const auto [lo, hi] = std::minmax_element(r.process_ms.begin(), r.process_ms.end());
        char buf[96];
        std::snprintf(buf, sizeof buf, "  (%zu processes: %.3f-%.3f)", r.process_ms.size(), *lo, *hi);
        spread = buf;
      }
      std::fprintf(stderr, "  %-14s %10.3f ms  %6.2fx%s%s\n", r.schedule.c_str(), ms, ms / best,
                   ms == best ? "  best" : "", spread.c_str());
      print_bench_json({g.name, r.schedule, label, ms, r.runs});
    }
  }
  return 0;
}

}  // namespace

void add_bench_kernels(CLI::App& kiln, int* status) {
  auto a = std::make_shared<Args>();
  CLI::App* c = kiln.add_subcommand(
      "bench-kernels",
      "time the kernel-library generators under each schedule, side by side");
  c->footer("Schedules: manual, default, Halide's autoschedulers, Kiln's. A table on stderr, one JSON object per line "
            "on stdout.\n");
  c->add_option("--filter", a->filter, "only the generators whose name matches")->type_name("REGEX");
  c->add_option("--target", a->target, "host (default) or host-cuda")->type_name("host|host-cuda");
  c->add_option("--schedules", a->schedules, "comma-separated schedules to time (default: all of the target's)")
      ->type_name("LIST");
  add_count_option(c, "--reps", &a->reps, 1, "timed runs per round (default 30)");
  add_count_option(c, "--rounds", &a->rounds, 1, "interleaved rounds of every schedule (default 3)");
  add_count_option(c, "--processes", &a->processes, 1, "child processes per schedule, each timed every round (default 1)");
  add_count_option(c, "--buffer-sets", &a->buffer_sets, 1, "input and output sets per child, one per round in turn (default 3)");
  add_seconds_option(c, "--timeout", &a->timeout, false,
                     "per generator and schedule: scheduling and compiling, then each round (default 120)");
  add_seconds_option(c, "--max-seconds", &a->max_seconds, true, "timing stops after this once 5 runs are in (default 10)");
  c->add_option("--db", a->db, "the tuning database for the Kiln-tuned rows")->type_name("PATH");
  c->callback([a, status] { *status = bench_kernels(*a); });
}

}  // namespace kiln::cli
