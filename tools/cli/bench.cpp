// kiln bench: the workloads of bench/torch_suite.py with the same names and
// sizes, eager and compiled, one JSON object per line so both suites line up.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <regex>
#include <sstream>

#include "cli/bench_report.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "models/seed.h"
#include "runtime/timing.h"
#include "sweep_spec.h"
#include "kiln.h"
#include "onnx/conformance.h"
#include "onnx/onnx.h"
#include "lower/scheduler.h"

namespace kiln::cli {

namespace {

struct BenchArgs {
  std::string filter;
  std::string target = "host";
  int reps = 30;
  double max_seconds = 20;  // per implementation; heavy workloads stop early (>= 5 reps)
  // Schedulers of the compiled rows (CompileOptions::scheduler).
  std::vector<std::string> schedulers = {"default"};
  // --onnx: the ONNX models in this folder instead of the suite.
  std::string onnx_dir;
  // --compiled-only: leave out the eager rows (a profiler then sees the compiled kernels alone).
  bool compiled_only = false;
  // --sweep: the shape sweep (bench/sweep.txt) instead of the suite.
  bool sweep = false;
};

struct Workload {
  std::string name;
  std::vector<Tensor> inputs;
  std::function<Tensor(const std::vector<Tensor>&)> fn;
  double bytes = 0, flops = 0;
  // Several outputs (a train step's loss and updated parameters); used instead of fn.
  TensorFn multi = nullptr;
  // Too slow on a CPU for the default run (minutes per step): runs only when --filter is given.
  bool cpu_opt_in = false;
  // CompileOptions::autocast of the compiled rows ("" off); such a workload has no eager row.
  std::string autocast;
};

// Median ms over up to `reps` runs after `warmups` (eager: until its kernels are those of
// a loop's steady state, kEagerHotCalls), stopping early (after at least 5 runs) once
// `max_seconds` have passed; returns {ms, runs}.
std::pair<double, int> measure(const std::function<Tensor()>& fn, int reps, double max_seconds, int warmups = 1) {
  for (int i = 0; i < warmups; ++i) timing::sync(fn());
  std::vector<double> ms;
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < reps; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    timing::sync(fn());
    auto t1 = std::chrono::steady_clock::now();
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    if (i >= 4 && std::chrono::duration<double>(t1 - start).count() > max_seconds) break;
  }
  std::sort(ms.begin(), ms.end());
  return {ms[ms.size() / 2], int(ms.size())};
}

// Bytes allocated above what was held before one call (tensors, including the outputs,
// and compiled kernels' heap scratch), at the call's highest point.
double peak_megabytes(const std::function<Tensor()>& fn) {
  reset_peak_memory();
  const int64_t before = memory_stats().live_bytes;
  timing::sync(fn());
  return double(memory_stats().peak_bytes - before) / 1e6;
}

void report(const Workload& w, const std::string& impl, const std::string& target, double ms, int runs,
            double peak_mb) {
  print_bench_json({w.name, impl, target, ms, runs, w.bytes, w.flops, peak_mb});
}

// The suite, with torch_suite.py's names and sizes (smaller on a CPU: scale 8).
std::vector<Workload> workloads(bool gpu) {
  const int64_t scale = gpu ? 1 : 8;
  std::vector<Workload> w;
  const int64_t N = (int64_t(1) << 26) / scale;
  w.push_back({"seed_fwd_n" + std::to_string(N), {rand({N}, 0, -3, 3)},
               [](const std::vector<Tensor>& in) { return models::compute_expression(in[0]); }, 8.0 * double(N)});
  const int64_t R = 8192 / scale, C = 4096;
  std::string rc = std::to_string(R) + "x" + std::to_string(C);
  w.push_back({"seed_fwd_bwd_n" + std::to_string(N), {rand({N}, 0, -3, 3)}, nullptr, 8.0 * double(N), 0,
               grad_fn([](const std::vector<Tensor>& in) { return std::vector<Tensor>{sum(models::compute_expression(in[0]))}; },
                       {0})});
  w.push_back({"softmax_" + rc, {randn({R, C}, 1)},
               [](const std::vector<Tensor>& in) { return softmax(in[0], -1); }, 2.0 * double(R * C) * 4});
  w.push_back({"layernorm_" + rc, {randn({R, C}, 2), randn({C}, 3), randn({C}, 4)},
               [C](const std::vector<Tensor>& in) { return layer_norm(in[0], {C}, in[1], in[2]); },
               2.0 * double(R * C) * 4});
  const int64_t M = 8192 / scale, K = 1024, H = 4096;
  w.push_back({"mlp_f32_" + std::to_string(M) + "x" + std::to_string(K) + "x" + std::to_string(H),
               {randn({M, K}, 5), rand({K, H}, 6, -1.0 / 32, 1.0 / 32), randn({H}, 7),
                rand({H, K}, 8, -1.0 / 64, 1.0 / 64), randn({K}, 9)},
               [](const std::vector<Tensor>& in) {
                 return matmul(gelu(matmul(in[0], in[1]) + in[2]), in[3]) + in[4];
               },
               0, 4.0 * double(M) * double(K) * double(H)});
  // torch_suite's train step: MSE loss of the MLP, gradients of the four parameters, SGD
  // with lr 1e-3; outputs the loss and the updated parameters (so the update is measured).
  w.push_back({"mlp_train_step_f32_" + std::to_string(M) + "x" + std::to_string(K) + "x" + std::to_string(H),
               {randn({M, K}, 5), randn({M, K}, 16), rand({K, H}, 6, -1.0 / 32, 1.0 / 32), randn({H}, 7),
                rand({H, K}, 8, -1.0 / 64, 1.0 / 64), randn({K}, 9)},
               nullptr, 0, 12.0 * double(M) * double(K) * double(H),
               [](const std::vector<Tensor>& in) {
                 auto loss = [](const std::vector<Tensor>& v) {
                   Tensor out = matmul(gelu(matmul(v[0], v[2]) + v[3]), v[4]) + v[5];
                   return std::vector<Tensor>{mse_loss(out, v[1])};
                 };
                 std::vector<Tensor> vg = value_and_grad_fn(loss, {2, 3, 4, 5})(in);
                 std::vector<Tensor> out = {vg[0]};
                 for (int i = 0; i < 4; ++i) out.push_back(optim::sgd_update(in[size_t(2 + i)], vg[size_t(1 + i)], Tensor(), {1e-3}).first);
                 return out;
               },
               /*cpu_opt_in=*/true});
  const int64_t B = std::max<int64_t>(1, 8 / std::min<int64_t>(scale, 8)), NH = 16, S = 1024 / scale, D = 64;
  std::vector<double> tri(size_t(S * S));
  for (int64_t i = 0; i < S; ++i)
    for (int64_t j = 0; j < S; ++j) tri[size_t(i * S + j)] = j > i;
  Tensor mask = from_vector(tri, {S, S}, DType::Bool);
  w.push_back({"attn_causal_f32_b" + std::to_string(B) + "h" + std::to_string(NH) + "s" + std::to_string(S) + "d" + std::to_string(D),
               {randn({B, NH, S, D}, 10), randn({B, NH, S, D}, 11), randn({B, NH, S, D}, 12)},
               [mask, D](const std::vector<Tensor>& in) {
                 Tensor s = matmul(in[0], transpose(in[1], -1, -2)) * (1.0 / std::sqrt(double(D)));
                 return matmul(softmax(where(mask, scalar(-INFINITY), s), -1), in[2]);
               },
               0, 4.0 * double(B * NH) * double(S) * double(S) * double(D)});
  // bf16 variants (GPU only, torch_suite.py --bf16): the same products in bf16 storage,
  // f32 accumulation and f32 arithmetic between them.
  if (gpu) {
    for (const std::string stem : {"mlp_f32_", "attn_causal_f32_"}) {
      const auto it = std::find_if(w.begin(), w.end(), [&](const Workload& x) { return x.name.rfind(stem, 0) == 0; });
      if (it == w.end()) continue;
      Workload b = *it;
      b.name.replace(b.name.find("f32"), 3, "bf16");
      for (Tensor& t : b.inputs) t = cast(t, DType::BF16);
      b.bytes /= 2;
      w.push_back(b);
    }
    // The train step under bf16 autocast: f32 parameters, bf16 products.
    const auto step = std::find_if(w.begin(), w.end(), [](const Workload& x) { return x.name.rfind("mlp_train_step_f32_", 0) == 0; });
    if (step != w.end()) {
      Workload b = *step;
      b.name.replace(b.name.find("f32"), 3, "bf16_autocast");
      b.autocast = "bf16";
      w.push_back(b);
    }
  }
  const int64_t NB = 32 / scale;
  w.push_back({"conv3x3_bias_relu_n" + std::to_string(NB) + "c64hw56",
               {randn({NB, 64, 56, 56}, 13), rand({64, 64, 3, 3}, 14, -1.0 / 24, 1.0 / 24), randn({64}, 15)},
               [](const std::vector<Tensor>& in) { return relu(conv2d(in[0], in[1], in[2], {1}, {1})); },
               0, 2.0 * double(NB) * 64 * 64 * 9 * 56 * 56});
  return w;
}

int bench_onnx(const BenchArgs& a);

// The shape sweep (bench/sweep.txt, compiled in): GEMMs and convolutions of real models'
// layers at several batch sizes, named as torch_suite.py --sweep names them.
std::vector<Workload> sweep_workloads() {
  std::vector<Workload> w;
  std::istringstream in(kSweepSpec);
  std::string line;
  uint64_t seed = 100;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string kind, name;
    if (!(f >> kind) || kind[0] == '#') continue;
    f >> name;
    if (kind == "gemm") {
      int64_t k = 0, n = 0;
      f >> k >> n;
      for (int64_t m : {1, 7, 32, 100, 1000}) {
        w.push_back({"gemm_" + name + "_m" + std::to_string(m) + "_k" + std::to_string(k) + "_n" + std::to_string(n),
                     {randn({m, k}, seed++), randn({k, n}, seed++) * (1.0 / std::sqrt(double(k)))},
                     [](const std::vector<Tensor>& x) { return matmul(x[0], x[1]); }, 0, 2.0 * double(m * k * n)});
      }
    } else if (kind == "conv") {
      int64_t cin = 0, cout = 0, kernel = 0, stride = 0, pad = 0, groups = 0, hw = 0;
      f >> cin >> cout >> kernel >> stride >> pad >> groups >> hw;
      const int64_t out = (hw + 2 * pad - kernel) / stride + 1;
      for (int64_t nb : {1, 8}) {
        w.push_back({"conv_" + name + "_n" + std::to_string(nb),
                     {randn({nb, cin, hw, hw}, seed++), randn({cout, cin / groups, kernel, kernel}, seed++) * 0.05},
                     [stride, pad, groups](const std::vector<Tensor>& x) {
                       return conv2d(x[0], x[1], Tensor(), {stride}, {pad}, {1}, groups);
                     },
                     0, 2.0 * double(nb * cout * out * out * (cin / groups) * kernel * kernel)});
      }
    } else {
      KILN_CHECK(false, "bench/sweep.txt: unknown kind '", kind, "' in: ", line);
    }
  }
  return w;
}

int bench(const BenchArgs& a) {
  if (a.target != "host" && a.target != "host-cuda") {
    user_error("bench: --target must be host or host-cuda, not '", a.target, "'");
  }
  if (!a.onnx_dir.empty()) return bench_onnx(a);
  const bool gpu = a.target == "host-cuda";
  if (gpu && !cuda_available()) user_error("bench: --target host-cuda needs a usable CUDA GPU; none was found");
  std::vector<Workload> all = a.sweep ? sweep_workloads() : workloads(gpu);
  std::vector<std::string> names;
  for (const Workload& w : all) names.push_back(w.name);
  const auto selected = name_filter("bench", a.filter, names, "workload");
  const std::string label = gpu ? "cuda" : "cpu";
  for (Workload& w : all) {
    if (!selected(w.name)) continue;
    if (!gpu && w.cpu_opt_in && a.filter.empty()) {
      std::cerr << "bench: skipping " << w.name << " on the CPU (its eager step takes minutes here); "
                << "run it with --filter train_step\n";
      continue;
    }
    if (gpu) {
      for (Tensor& t : w.inputs) t = t.to(Device::cuda());
    }
    TensorFn fn = w.multi ? w.multi : TensorFn([f = w.fn](const std::vector<Tensor>& in) { return std::vector<Tensor>{f(in)}; });
    // All outputs come from one stream: synchronizing on the first waits for the rest.
    std::function<Tensor()> eager = [&] { return fn(w.inputs)[0]; };
    if (w.autocast.empty() && !a.compiled_only) {
      auto [eager_ms, eager_runs] = measure(eager, a.reps, a.max_seconds, kEagerHotCalls);
      report(w, "kiln-eager", label, eager_ms, eager_runs, peak_megabytes(eager));
    }
    for (const std::string& scheduler : a.schedulers) {
      CompileOptions opts;
      opts.target = a.target;
      opts.scheduler = scheduler;
      opts.autocast = w.autocast;
      auto compiled = compile(fn, opts);
      std::function<Tensor()> comp = [&] { return compiled(w.inputs)[0]; };
      auto [comp_ms, comp_runs] = measure(comp, a.reps, a.max_seconds);
      report(w, compiled_impl(scheduler), label, comp_ms, comp_runs, peak_megabytes(comp));
    }
  }
  return 0;
}

// Each model of a folder compiled, timed as the suite is; onnxruntime's side is
// bench/onnxruntime_suite.py with the same names and inputs.
int bench_onnx(const BenchArgs& a) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(a.onnx_dir)) user_error("bench: --onnx needs a folder of .onnx files, not '", a.onnx_dir, "'");
  std::vector<std::string> paths, names;
  for (const auto& e : fs::directory_iterator(a.onnx_dir)) {
    if (e.path().extension() == ".onnx") paths.push_back(e.path().string());
  }
  std::sort(paths.begin(), paths.end());
  for (const std::string& p : paths) names.push_back(fs::path(p).stem().string());
  if (names.empty()) user_error("bench: no .onnx files in '", a.onnx_dir, "'");
  const auto selected = name_filter("bench", a.filter, names, "model");
  const bool gpu = a.target == "host-cuda";
  for (size_t i = 0; i < paths.size(); ++i) {
    if (!selected(names[i])) continue;
    for (const std::string& scheduler : a.schedulers) {
      const auto t0 = std::chrono::steady_clock::now();
      const onnx::Model m = onnx::load(paths[i]);
      std::vector<Tensor> inputs = onnx::dummy_inputs(m);
      if (gpu) {
        for (Tensor& t : inputs) t = t.to(Device::cuda());
      }
      CompileOptions opts = m.compile_options();
      opts.target = a.target;
      opts.scheduler = scheduler;
      auto compiled = compile(m.fn, opts);
      timing::sync(compiled(inputs)[0]);
      const double compile_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::function<Tensor()> run = [&] { return compiled(inputs)[0]; };
      auto [ms, runs] = measure(run, a.reps, a.max_seconds);
      BenchRecord r{names[i], compiled_impl(scheduler), gpu ? "cuda" : "cpu", ms, runs};
      r.compile_s = compile_s;
      print_bench_json(r);
    }
  }
  return 0;
}

}  // namespace

void add_bench(CLI::App& kiln, int* status) {
  auto a = std::make_shared<BenchArgs>();
  CLI::App* c = kiln.add_subcommand("bench", "run the benchmark workloads eager and compiled; one JSON object per line");
  c->add_option("--filter", a->filter, "only the workloads whose name matches")->type_name("REGEX");
  c->add_option("--target", a->target, "host (default) or host-cuda")->type_name("host|host-cuda");
  add_count_option(c, "--reps", &a->reps, 1, "timed runs per implementation (default 30)");
  add_seconds_option(c, "--max-seconds", &a->max_seconds, true,
                     "time per implementation, after 5 runs (default 20; 0: no limit)");
  add_scheduler_option(c, &a->schedulers);
  c->add_flag("--compiled-only", a->compiled_only, "time the compiled rows only (no kiln-eager rows)");
  c->add_flag("--sweep", a->sweep,
              "the shape sweep instead of the suite: GEMMs and convolutions of real models' layers at batch sizes "
              "1 to 1000 (bench/sweep.txt; torch_suite.py --sweep times PyTorch on the same)");
  c->add_option("--onnx", a->onnx_dir,
                "time the ONNX models in DIR instead (compiled, on ONNX's dummy inputs; compile_s is load to first "
                "result, from the compile cache where it has the model: KILN_CACHE=0 for cold compiles); "
                "bench/onnxruntime_suite.py times onnxruntime on the same")
      ->type_name("DIR");
  c->callback([a, status] { *status = bench(*a); });
}

}  // namespace kiln::cli
