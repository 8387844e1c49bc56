// Trains an MLP classifier on two interleaved spirals (generated in code, seeded) with a
// compiled train step: forward, backward and the AdamW update in one compiled graph.
// Prints the loss every few steps, the held-out accuracy, and the time per step eager vs
// compiled (the same step function, run op by op).
//
//   train_mlp [--steps N] [--hidden H] [--points P] [--lr LR]
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>

#include "common/args.h"
#include "kiln.h"

using namespace kiln;

namespace {

struct Args {
  int steps = 600;
  int64_t hidden = 64;
  int64_t points = 1024;  // per split, both classes together
  double lr = 1e-2;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) user_error(s, " needs a value");
      return argv[++i];
    };
    if (s == "--steps") a.steps = int(apps::integer_arg(s, value(), 1, 10000000));
    else if (s == "--hidden") a.hidden = apps::integer_arg(s, value(), 1, 1 << 20);
    else if (s == "--points") a.points = apps::integer_arg(s, value(), 2, 1 << 26);
    else if (s == "--lr") a.lr = apps::real_arg(s, value(), 0.0, 1e6);
    else if (s == "--help" || s == "-h") {
      std::cout << "usage: train_mlp [--steps N] [--hidden H] [--points P] [--lr LR]\n";
      std::exit(0);
    } else {
      user_error("unknown argument '", s, "'; try --help");
    }
  }
  if (a.steps < 1 || a.hidden < 1 || a.points < 2) user_error("--steps, --hidden and --points must be positive");
  return a;
}

// Two spirals: class c's points at radius r in (0, 1] and angle 3.5 pi r + c pi, plus noise.
struct Dataset {
  Tensor x;       // [P, 2] f32
  Tensor labels;  // [P] i64
};

Dataset spirals(int64_t points, uint64_t seed) {
  std::vector<double> r = rand({points}, seed, 0.05, 1.0, DType::F64).to_doubles();
  std::vector<double> noise = randn({points, 2}, seed + 1, DType::F64).to_doubles();
  std::vector<double> xy(static_cast<size_t>(2 * points));
  std::vector<int64_t> labels(static_cast<size_t>(points));
  for (int64_t i = 0; i < points; ++i) {
    const int64_t c = i % 2;
    const double angle = 3.5 * M_PI * r[size_t(i)] + double(c) * M_PI;
    xy[size_t(2 * i)] = r[size_t(i)] * std::cos(angle) + 0.02 * noise[size_t(2 * i)];
    xy[size_t(2 * i + 1)] = r[size_t(i)] * std::sin(angle) + 0.02 * noise[size_t(2 * i + 1)];
    labels[size_t(i)] = c;
  }
  return {from_vector(xy, {points, 2}, DType::F32), from_vector(labels, {points})};
}

// PyTorch's default init: uniform in +-1/sqrt(fan_in).
Tensor init(const Shape& shape, int64_t fan_in, uint64_t seed) {
  double bound = 1.0 / std::sqrt(double(fan_in));
  return rand(shape, seed, -bound, bound);
}

Tensor logits(const std::vector<Tensor>& p, const Tensor& x) {
  Tensor h = tanh(linear(x, p[0], p[1]));
  h = tanh(linear(h, p[2], p[3]));
  return linear(h, p[4], p[5]);
}

Tensor loss_fn(const std::vector<Tensor>& in) {  // 6 params, then x and labels
  std::vector<Tensor> p(in.begin(), in.begin() + 6);
  return cross_entropy(logits(p, in[6]), in[7]);
}

double accuracy(const std::vector<Tensor>& p, const Dataset& d) {
  Tensor predicted = argmax(logits(p, d.x), 1);
  return mean(cast(eq(predicted, d.labels), DType::F32)).item();
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

int run(const Args& a) {
  Dataset train = spirals(a.points, 1), test = spirals(a.points / 2, 1001);
  const int64_t h = a.hidden;
  std::vector<Tensor> params = {init({h, 2}, 2, 10), init({h}, 2, 11), init({h, h}, h, 12),
                                init({h}, h, 13),    init({2, h}, h, 14), init({2}, h, 15)};
  optim::AdamWOptions opt;
  opt.lr = a.lr;
  opt.weight_decay = 1e-4;

  // Eager: the same step, op by op, for a few steps from the same start (timing only).
  optim::AdamW eager(loss_fn, params, opt, /*compiled=*/false);
  const int eager_steps = std::min(a.steps, 20);
  eager.step({train.x, train.labels});  // warm the eager kernel cache
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 1; i < eager_steps; ++i) eager.step({train.x, train.labels});
  double eager_step_ms = ms_since(t0) / std::max(1, eager_steps - 1);

  optim::AdamW trainer(loss_fn, params, opt, /*compiled=*/true);
  t0 = std::chrono::steady_clock::now();
  Tensor first = trainer.step({train.x, train.labels});  // traces and compiles
  std::printf("step 1: loss %.4f (compiled the train step in %.0f ms)\n", first.item(), ms_since(t0));
  t0 = std::chrono::steady_clock::now();
  for (int i = 2; i <= a.steps; ++i) {
    Tensor loss = trainer.step({train.x, train.labels});
    if (i % 100 == 0 || i == a.steps) std::printf("step %d: loss %.4f\n", i, loss.item());
  }
  double compiled_step_ms = ms_since(t0) / std::max(1, a.steps - 1);
  double acc = accuracy(trainer.params(), test);
  std::printf("held-out accuracy %.4f on %lld points; train accuracy %.4f\n", acc, (long long)(a.points / 2),
              accuracy(trainer.params(), train));
  const char* verdict = acc >= 0.95 ? "OK" : "FAILED";
  std::printf("train_mlp: %s accuracy=%.4f eager_step_ms=%.3f compiled_step_ms=%.3f speedup=%.2fx\n", verdict, acc,
              eager_step_ms, compiled_step_ms, eager_step_ms / compiled_step_ms);
  return acc >= 0.95 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const kiln::Error& e) {
    std::cerr << "train_mlp: error: " << e.what() << "\n";
    return 2;
  }
}
