// The kernel library's generators as test cases: seeded inputs at a test size and the
// eager kiln result the AOT kernels must match. Dynamic generators run at odd sizes
// (partial tiles, vector tails); static ones (conv2d, pool2d) at their built geometry.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "HalideRuntime.h"
#include "models/seed.h"
#include "kiln.h"

namespace kiln::testing {

using KernelFn = std::function<int(const std::vector<halide_buffer_t*>&, halide_buffer_t*)>;

struct KernelCase {
  std::string name;
  std::vector<Tensor> inputs;
  Tensor expected;  // eager
  // Manual vs default: absolute slack where the two sum in different orders (the manual
  // row sum keeps 32 partial sums, the default 8), on top of 1e-5 relative.
  double reorder_atol = 1e-6;
};

inline std::vector<KernelCase> kernel_cases() {
  std::vector<KernelCase> c;
  Tensor x1 = rand({100003}, 1, -3, 3);
  c.push_back({"seed", {x1}, models::compute_expression(x1)});
  Tensor x = randn({37, 203}, 2), y = randn({37, 203}, 3);
  c.push_back({"unary", {x}, relu(x)});
  c.push_back({"binary", {x, y}, x + y});
  c.push_back({"reduce", {x}, sum(x, {-1}), 5e-5});  // sums of 203 terms of size ~1
  c.push_back({"softmax", {x}, softmax(x, -1)});
  Tensor rows = randn({7, 4096}, 4), w = randn({4096}, 5), b = randn({4096}, 6);
  c.push_back({"layer_norm", {rows, w, b}, layer_norm(rows, {4096}, w, b)});
  Tensor a = randn({67, 45}, 7), m = randn({45, 59}, 8);
  c.push_back({"matmul", {a, m}, matmul(a, m)});
  Tensor ba = randn({3, 29, 17}, 9), bb = randn({3, 17, 41}, 10);
  c.push_back({"batch_matmul", {ba, bb}, matmul(ba, bb)});
  Tensor img = randn({4, 64, 56, 56}, 11), kw = rand({64, 64, 3, 3}, 12, -0.05, 0.05);
  c.push_back({"conv2d", {img, kw}, conv2d(img, kw, {}, {1}, {1})});
  Tensor planes = randn({4, 64, 112, 112}, 13);
  c.push_back({"pool2d", {planes}, max_pool2d(planes, {3}, {2}, {1})});
  return c;
}

// Runs `fn` on the case's inputs into a fresh output shaped like the expected one.
inline Tensor run_kernel(const KernelFn& fn, const KernelCase& k) {
  std::vector<halide_buffer_t*> in;
  for (const Tensor& t : k.inputs) in.push_back(t.buffer().raw_buffer());
  Tensor out = zeros(k.expected.shape(), k.expected.dtype());
  int rc = fn(in, out.buffer().raw_buffer());
  if (rc != 0) user_error(k.name, ": the AOT kernel returned ", rc);
  return out;
}

}  // namespace kiln::testing
