// kiln bench-kernels: every generator of the kernel library under each schedule (the
// hand-written one, kiln's default rules, kiln's autoscheduler from its cost model and,
// where the tuning database has an entry, as tuned, and each of Halide's autoschedulers
// that supports the target), JIT-compiled in-process from the same KernelSpecs the generators
// use, timed on the generators' estimate sizes.
//
// Each (generator, schedule) runs in a forked child: an autoscheduler that crashes or
// hangs becomes a table row ("failed: ...", "timed out after S s") and the run goes on.
// The parent never starts Halide's runtime (no thread pool, no CUDA context), so forking
// is safe.
#include <dlfcn.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <regex>
#include <thread>

#include "autoschedule.h"
#include "cli/bench_report.h"
#include "cli/commands.h"
#include "fingerprint.h"
#include "kernel_spec.h"
#include "kernel_timing.h"
#include "kiln.h"
#include "lower/target.h"
#include "tuning_db.h"

namespace kiln::cli {

namespace {

struct Args {
  std::string filter;
  std::string target = "host";
  int reps = 30;
  double timeout = 120;     // per (generator, schedule): scheduling, compiling and timing
  double max_seconds = 10;  // timing stops after this once 5 runs are in
  std::string db;           // tuning database for the Kiln-tuned rows
};

Args parse(const std::vector<std::string>& args) {
  Args a;
  for (size_t i = 0; i < args.size(); ++i) {
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) user_error("bench-kernels: ", args[i], " needs a value");
      return args[++i];
    };
    if (args[i] == "--filter") a.filter = value();
    else if (args[i] == "--target") a.target = value();
    else if (args[i] == "--reps") a.reps = std::stoi(value());
    else if (args[i] == "--timeout") a.timeout = std::stod(value());
    else if (args[i] == "--max-seconds") a.max_seconds = std::stod(value());
    else if (args[i] == "--db") a.db = value();
    else user_error("bench-kernels: unknown option '", args[i],
                    "'; options: --filter REGEX, --target host|host-cuda, --reps N, --timeout S, --max-seconds S, "
                    "--db PATH");
  }
  a.db = autoschedule::tuning_db_path(a.db);
  if (a.target != "host" && a.target != "host-cuda") {
    user_error("bench-kernels: --target must be host or host-cuda, not '", a.target, "'");
  }
  if (a.reps < 1) user_error("bench-kernels: --reps must be at least 1");
  if (a.timeout <= 0) user_error("bench-kernels: --timeout must be positive");
  return a;
}

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

// The parameters every autoscheduler gets: the cores to plan for, and for Kiln which
// tuning database to read (none for the cost-model row).
std::map<std::string, std::string> autoscheduler_params(const std::string& schedule, bool gpu, const Args& a) {
  const int parallelism = gpu ? 128 : int(std::max(1u, std::thread::hardware_concurrency()));
  std::map<std::string, std::string> p;
  // Kiln reads the GPU off the device (its parallelism is the CPU's core count).
  if (!(gpu && (schedule == "Kiln" || schedule == kKilnTuned))) p["parallelism"] = std::to_string(parallelism);
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

// In the child: schedule, compile and time one variant; returns "ok <ms> <runs>".
std::string run_variant(const kernels::KernelSpec& spec, const std::string& schedule, const Args& a) {
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
    if (schedule == kKilnTuned && !has_tuned_entry(k, target, params)) return "none";
    autoschedule::autoschedule(k.lowered.pipeline(), target, params);
  } else {
    std::string lib = halide_lib_dir() + "/libautoschedule_";
    for (char c : schedule) lib += char(std::tolower(c));
    Halide::load_plugin(lib + ".so");
    k.lowered.pipeline().apply_autoscheduler(target, {schedule, autoscheduler_params(schedule, gpu, a)});
  }
  const kernels::KernelTiming t = kernels::time_kernel(k, target, a.reps, a.max_seconds);
  return "ok " + std::to_string(t.median_ms) + " " + std::to_string(t.runs);
}

struct Outcome {
  bool ok = false;
  bool absent = false;  // no row: Kiln-tuned without a database entry
  double ms = 0;
  int runs = 0;
  std::string note;  // why not ok
};

Outcome run_in_child(const kernels::KernelSpec& spec, const std::string& schedule, const Args& a) {
  int fds[2];
  if (pipe(fds) != 0) user_error("bench-kernels: pipe() failed");
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    std::string msg;
    try {
      msg = run_variant(spec, schedule, a);
    } catch (const std::exception& e) {
      msg = std::string("failed: ") + e.what();
    } catch (const Halide::Error& e) {
      msg = std::string("failed: ") + e.what();
    }
    (void)!write(fds[1], msg.data(), msg.size());
    _exit(0);
  }
  close(fds[1]);
  std::string msg;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(a.timeout);
  bool timed_out = false;
  for (;;) {
    int left = int(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count());
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd pfd{fds[0], POLLIN, 0};
    if (poll(&pfd, 1, left) <= 0) continue;
    char buf[4096];
    ssize_t n = read(fds[0], buf, sizeof buf);
    if (n <= 0) break;  // EOF: the child is done
    msg.append(buf, size_t(n));
  }
  close(fds[0]);
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  Outcome o;
  if (timed_out) {
    o.note = "timed out after " + std::to_string(int(a.timeout)) + " s";
  } else if (msg == "none") {
    o.absent = true;
  } else if (msg.rfind("ok ", 0) == 0) {
    o.ok = std::sscanf(msg.c_str(), "ok %lf %d", &o.ms, &o.runs) == 2;
  } else if (!msg.empty()) {
    std::replace(msg.begin(), msg.end(), '\n', ' ');
    o.note = msg.substr(0, 160);
  } else {
    o.note = WIFSIGNALED(status) ? "failed: killed by signal " + std::to_string(WTERMSIG(status)) : "failed: no result";
  }
  return o;
}

}  // namespace

int bench_kernels(const std::vector<std::string>& argv) {
  Args a = parse(argv);
  const bool gpu = a.target == "host-cuda";
  const std::string label = gpu ? "cuda" : "cpu";
  std::regex filter(a.filter.empty() ? ".*" : a.filter);
  int matched = 0;
  for (const kernels::GeneratorInfo& g : kernels::generators()) {
    if (!std::regex_search(g.name, filter)) continue;
    ++matched;
    kernels::KernelSpec spec = kernels::make_spec(g.name);
    std::vector<std::pair<std::string, Outcome>> rows;
    for (const std::string& s : schedules_for(gpu)) {
      Outcome o = run_in_child(spec, s, a);
      if (!o.absent) rows.push_back({s, o});
    }
    double best = 0;
    for (const auto& [s, o] : rows) {
      if (o.ok && (best == 0 || o.ms < best)) best = o.ms;
    }
    std::string sizes;
    for (const kernels::KernelInput& in : spec.inputs) {
      sizes += (sizes.empty() ? "" : ", ") + in.name + Shape(in.estimate).str();
    }
    std::fprintf(stderr, "%s (%s, %s)\n", g.name.c_str(), label.c_str(), sizes.c_str());
    for (const auto& [s, o] : rows) {
      if (o.ok) {
        std::fprintf(stderr, "  %-14s %10.3f ms  %6.2fx%s\n", s.c_str(), o.ms, o.ms / best, o.ms == best ? "  best" : "");
        print_bench_json({g.name, s, label, o.ms, o.runs});
      } else {
        std::fprintf(stderr, "  %-14s %s\n", s.c_str(), o.note.c_str());
      }
    }
  }
  if (matched == 0) {
    std::string names;
    for (const kernels::GeneratorInfo& g : kernels::generators()) names += " " + g.name;
    user_error("bench-kernels: --filter '", a.filter, "' matches no generator; the generators are:", names);
  }
  return 0;
}

}  // namespace kiln::cli
