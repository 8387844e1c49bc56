// The seed's example through every stage: capture (graph listing and dot file), then
// reference, eager and compiled runs, checked against each other and timed.
//
//   compute_expression [--n N] [--target host|host-cuda] [--dot FILE] [--reps R] [--grad]
//
// --grad runs the seed's second stage instead: the gradient of out.sum() w.r.t. x, PyTorch
// style (x.requires_grad(), loss.backward(), x.grad()), eager and through the compiled
// function, against the analytic derivative cos(x) exp(sin x) - tan(x).
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>

#include "common/args.h"
#include "models/seed.h"
#include "runtime/timing.h"
#include "kiln.h"

using namespace kiln;

namespace {

struct Args {
  int64_t n = 1 << 20;
  std::string target = "host";
  std::string dot = "compute_expression.dot";
  int reps = 30;
  bool grad = false;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) user_error(s, " needs a value");
      return argv[++i];
    };
    if (s == "--n") a.n = apps::integer_arg(s, value(), 1, (1ll << 31) - 1);
    else if (s == "--target") a.target = value();
    else if (s == "--dot") a.dot = value();
    else if (s == "--reps") a.reps = int(apps::integer_arg(s, value(), 1, 1000000));
    else if (s == "--grad") a.grad = true;
    else if (s == "--help" || s == "-h") {
      std::cout << "usage: compute_expression [--n N] [--target host|host-cuda] [--dot FILE] [--reps R] [--grad]\n";
      std::exit(0);
    } else {
      user_error("unknown argument '", s, "'; try --help");
    }
  }
  if (a.target != "host" && a.target != "host-cuda") {
    user_error("--target must be host or host-cuda, not '", a.target, "'");
  }
  return a;
}

// The independent reference: the same formula in double, element by element.
Tensor reference(const Tensor& x) {
  std::vector<double> v = x.to_doubles();
#pragma omp parallel for
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::exp(std::sin(v[i])) + std::log(std::abs(std::cos(v[i])));
  return from_vector(v, x.shape(), DType::F32);
}

// The analytic derivative in double: d/dx [exp(sin x) + log|cos x|] = cos x exp(sin x) - tan x.
Tensor reference_derivative(const Tensor& x) {
  std::vector<double> v = x.to_doubles();
#pragma omp parallel for
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::cos(v[i]) * std::exp(std::sin(v[i])) - std::tan(v[i]);
  return from_vector(v, x.shape(), DType::F32);
}

// Stage 2: forward and backward, eager and compiled, PyTorch style.
int run_grad(const Args& a, const Tensor& x_host) {
  const bool gpu = a.target == "host-cuda";
  Tensor x = (gpu ? x_host.to(Device::cuda()) : x_host).requires_grad();
  CompileOptions opts;
  opts.target = a.target;
  opts.input_names = {"x"};
  auto compiled = compile(models::compute_expression, opts);
  auto eager_step = [&] {
    x.zero_grad();
    sum(models::compute_expression(x)).backward();
    return x.grad();
  };
  auto compiled_step = [&] {
    x.zero_grad();
    sum(compiled(x)).backward();
    return x.grad();
  };
  Tensor want = reference_derivative(x_host);
  Tensor eager = eager_step().to_host(), comp = compiled_step().to_host();
  // The derivative has tan(x): relative error matters where it is large.
  double err = std::max(max_abs_diff(eager, want), max_abs_diff(comp, want));
  bool ok = allclose(eager, want, 1e-4, 1e-4) && allclose(comp, want, 1e-4, 1e-4) && allclose(comp, eager, 1e-5, 1e-5);
  std::printf("grad of sum(compute_expression(x)) vs analytic: eager max_abs_err=%.3g, compiled max_abs_err=%.3g\n",
              max_abs_diff(eager, want), max_abs_diff(comp, want));
  double eager_ms = timing::median_ms(eager_step, a.reps);
  double compiled_ms = timing::median_ms(compiled_step, a.reps);
  if (!ok) {
    std::printf("compute_expression --grad: FAILED max_abs_err=%.3g\n", err);
    return 1;
  }
  std::printf("compute_expression --grad: OK max_abs_err=%.3g max_rel_err=%.3g eager_ms=%.3f compiled_ms=%.3f speedup=%.2fx\n",
              err, std::max(max_rel_diff(eager, want), max_rel_diff(comp, want)), eager_ms, compiled_ms,
              eager_ms / compiled_ms);
  return 0;
}

int run(const Args& a) {
  const bool gpu = a.target == "host-cuda";
  if (gpu && !cuda_available()) {
    std::cerr << "compute_expression: --target host-cuda needs a CUDA GPU and none is usable "
                 "here; CUDA code can still be built ahead of time (see README, kiln AOT)\n";
    return 2;
  }
  Tensor x = rand(Shape{a.n}, /*seed=*/42, -3.0, 3.0);
  if (a.grad) return run_grad(a, x);

  // Stage 1, capture: the seed's debug_backend prints the graph and writes the dot file.
  CompileOptions debug;
  debug.backend = debug_backend(a.dot);
  debug.input_names = {"x"};
  auto debug_compiled = compile(models::compute_expression, debug);
  debug_compiled(x);
  std::cout << "wrote " << a.dot << "\n";

  CompileOptions opts;
  opts.target = a.target;
  opts.input_names = {"x"};
  opts.dynamic = true;
  auto compiled = compile(models::compute_expression, opts);

  Tensor xd = gpu ? x.to(Device::cuda()) : x;
  Tensor ref = reference(x);
  Tensor eager = models::compute_expression(xd).to_host();
  Tensor out = compiled(xd).to_host();

  double err_ce = max_abs_diff(out, eager);
  double err_cr = max_abs_diff(out, ref);
  double err_er = max_abs_diff(eager, ref);
  bool ok_ce = allclose(out, eager, 1e-5, 1e-6);
  bool ok_ref = allclose(out, ref, 1e-4, 1e-4) && allclose(eager, ref, 1e-4, 1e-4);
  std::printf("compiled vs eager:     max_abs_err=%.3g (allclose atol=1e-6: %s)\n", err_ce, ok_ce ? "yes" : "NO");
  std::printf("compiled vs reference: max_abs_err=%.3g\n", err_cr);
  std::printf("eager vs reference:    max_abs_err=%.3g (allclose rtol=atol=1e-4: %s)\n", err_er, ok_ref ? "yes" : "NO");

  double eager_ms = timing::median_ms([&] { return models::compute_expression(xd); }, a.reps);
  double compiled_ms = timing::median_ms([&] { return compiled(xd); }, a.reps);
  std::printf("n=%lld target=%s: eager %.3f ms, compiled %.3f ms (median of %d)\n",
              (long long)a.n, a.target.c_str(), eager_ms, compiled_ms, a.reps);
  if (!ok_ce || !ok_ref) {
    std::printf("compute_expression: FAILED max_abs_err=%.3g\n", std::max(err_ce, err_cr));
    return 1;
  }
  std::printf("compute_expression: OK max_abs_err=%.3g eager_ms=%.3f compiled_ms=%.3f speedup=%.2fx\n",
              std::max(err_ce, err_cr), eager_ms, compiled_ms, eager_ms / compiled_ms);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const kiln::Error& e) {
    std::cerr << "compute_expression: error: " << e.what() << "\n";
    return 2;
  }
}
