// Pipelines the autoscheduler tests schedule, built the way kiln's compiler and its
// generators build them: trace kiln ops, lower to one Halide pipeline, set estimates on
// the inputs and the output. Sizes are odd on purpose, so tiles and vectors have edges.
#pragma once

#include <Halide.h>

#include <functional>
#include <string>
#include <vector>

#include "kiln.h"
#include "lower/lower_to_halide.h"

namespace kiln::as_test {

struct Case {
  std::string name;
  TracedFn fn;
  std::vector<Tensor> inputs;  // example inputs, also the data the tests run on
};

inline std::vector<Case> cases() {
  return {
      {"matmul", [](const std::vector<Tensor>& in) { return std::vector<Tensor>{matmul(in[0], in[1])}; },
       {rand({53, 70}, 1, -1, 1), rand({70, 90}, 2, -1, 1)}},
      {"softmax", [](const std::vector<Tensor>& in) { return std::vector<Tensor>{softmax(in[0], -1)}; },
       {rand({33, 100}, 3, -4, 4)}},
      {"conv2d",
       [](const std::vector<Tensor>& in) { return std::vector<Tensor>{conv2d(in[0], in[1], in[2], {1}, {1})}; },
       {rand({2, 8, 13, 13}, 4, -1, 1), rand({12, 8, 3, 3}, 5, -1, 1), rand({12}, 6, -1, 1)}},
      {"pointwise",
       [](const std::vector<Tensor>& in) { return std::vector<Tensor>{relu(in[0] * in[1] + sin(in[0])) - exp(in[1])}; },
       {rand({37, 61}, 7, -2, 2), rand({61}, 8, -2, 2)}},
      // Wide enough for a tile of several vectors even at AVX-512's 16 lanes, with ragged
      // edges: conv2d's result is tiled in a stored copy (its output is in another dim
      // order), the pooling window per tile of its output.
      {"conv2d_wide",
       [](const std::vector<Tensor>& in) { return std::vector<Tensor>{conv2d(in[0], in[1], in[2], {1}, {1})}; },
       {rand({2, 8, 11, 37}, 9, -1, 1), rand({12, 8, 3, 3}, 10, -1, 1), rand({12}, 11, -1, 1)}},
      {"max_pool2d", [](const std::vector<Tensor>& in) { return std::vector<Tensor>{max_pool2d(in[0], {3}, {2}, {1})}; },
       {rand({2, 5, 27, 71}, 12, -3, 3)}},
      // A row reduction no output row can host (its output is the reduction itself).
      {"row_sum", [](const std::vector<Tensor>& in) { return std::vector<Tensor>{sum(in[0], {-1})}; },
       {rand({29, 300}, 13, -1, 1)}},
      // Everything reduced (a loss): partial results in two levels on a GPU.
      {"total_sum", [](const std::vector<Tensor>& in) { return std::vector<Tensor>{sum(in[0]) * 2.0}; },
       {rand({300, 701}, 14, -1, 1)}},
      // A loss over a product: a reduction of everything beside a contraction tiled in a
      // stored copy, each with loops of its own names.
      {"matmul_sum", [](const std::vector<Tensor>& in) { return std::vector<Tensor>{sum(matmul(in[0], in[1]))}; },
       {rand({300, 40}, 15, -1, 1), rand({40, 310}, 16, -1, 1)}},
      // A square product read transposed: its output has the product's extents but reads
      // it at another point, so it cannot host the product's tiles or threads.
      {"matmul_transposed",
       [](const std::vector<Tensor>& in) { return std::vector<Tensor>{transpose(matmul(in[0], in[1]), 0, 1)}; },
       {rand({72, 40}, 17, -1, 1), rand({40, 72}, 18, -1, 1)}},
  };
}

// The case lowered over fresh ImageParams, with estimates at its example sizes.
inline LoweredGraph lower_case(const Case& c, bool estimates = true) {
  Graph g = trace(c.fn, c.inputs);
  LoweredGraph l = lower_to_halide(g);
  if (!estimates) return l;
  for (size_t i = 0; i < l.inputs.size(); ++i) {
    const Shape& s = c.inputs[i].shape();
    for (int d = 0; d < s.rank(); ++d) l.inputs[i].dim(s.rank() - 1 - d).set_estimate(0, int(s[d].size));
  }
  const TensorMeta& om = g.node(g.outputs()[0]).meta;
  Halide::Region r;
  for (int d = om.shape.rank() - 1; d >= 0; --d) r.push_back({0, int(om.shape[d].size)});
  l.outputs[0].set_estimates(r);
  return l;
}

// Runs a scheduled pipeline on the case's inputs (for `target`: the JIT host by default).
inline Halide::Buffer<float> run_case(const Case& c, LoweredGraph& l,
                                      const Halide::Target& target = Halide::get_jit_target_from_environment()) {
  Graph g = trace(c.fn, c.inputs);
  for (size_t i = 0; i < l.inputs.size(); ++i) l.inputs[i].set(Halide::Buffer<>(*c.inputs[i].buffer().raw_buffer()));
  const Shape& os = g.node(g.outputs()[0]).meta.shape;
  std::vector<int> sizes;
  for (int d = os.rank() - 1; d >= 0; --d) sizes.push_back(int(os[d].size));
  Halide::Buffer<float> out(sizes);
  l.pipeline().realize(out, target);
  out.copy_to_host();
  return out;
}

}  // namespace kiln::as_test
