// Checks an op three ways: eager (its own Halide kernel), compiled (traced and lowered
// through kiln::compile) and its plain C++ reference, which computes in double.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <optional>

#include "kiln.h"

namespace kiln::testing {

struct Tolerance {
  double rtol, atol;
};

// Reductions accumulate rounding error: the bar for f32 is rtol 1e-4 / atol 1e-5 against
// the f64 reference.
inline constexpr Tolerance kF32ReductionTolerance{1e-4, 1e-5};

inline Tolerance tolerance_for(DType t) {
  switch (t) {
    case DType::F64: return {1e-12, 1e-12};
    case DType::F32: return {2e-6, 1e-6};
    case DType::F16: return {2e-3, 1e-3};
    case DType::BF16: return {1.6e-2, 1e-2};
    default: return {0.0, 0.0};
  }
}

using OpFn = std::function<Tensor(const std::vector<Tensor>&)>;

// Runs `fn` eager and compiled, and `op`'s reference, and expects all three to agree.
inline void expect_matches_reference(const std::string& op, const OpFn& fn,
                                     const std::vector<Tensor>& inputs, const Attrs& attrs,
                                     const std::string& what,
                                     std::optional<Tolerance> f32_tolerance = std::nullopt,
                                     std::optional<Tolerance> f64_tolerance = std::nullopt) {
  SCOPED_TRACE(op + " " + what);
  const OpDef& def = get_op(op);
  std::vector<TensorMeta> metas;
  for (const Tensor& t : inputs) metas.push_back(t.meta());
  TensorMeta out_meta = infer_op(def, metas, attrs);
  Tensor ref = def.reference(inputs, attrs, out_meta);
  Tensor eager = fn(inputs);
  auto compiled_fn = compile([&fn](const std::vector<Tensor>& in) { return std::vector<Tensor>{fn(in)}; });
  Tensor compiled = compiled_fn(inputs)[0];
  ASSERT_EQ(eager.meta(), out_meta);
  ASSERT_EQ(compiled.meta(), out_meta);
  Tolerance tol = tolerance_for(out_meta.dtype);
  if (f32_tolerance && out_meta.dtype == DType::F32) tol = *f32_tolerance;
  if (f64_tolerance && out_meta.dtype == DType::F64) tol = *f64_tolerance;
  EXPECT_TRUE(allclose(eager, ref, tol.rtol, tol.atol, true))
      << "eager " << eager.str(12) << "\nref   " << ref.str(12)
      << "\nmax abs diff " << max_abs_diff(eager, ref);
  EXPECT_TRUE(allclose(compiled, ref, tol.rtol, tol.atol, true))
      << "compiled " << compiled.str(12) << "\nref      " << ref.str(12)
      << "\nmax abs diff " << max_abs_diff(compiled, ref);
  EXPECT_TRUE(allclose(compiled, eager, tol.rtol, tol.atol, true))
      << "compiled " << compiled.str(12) << "\neager    " << eager.str(12);
}

// Runs `fn` compiled for CUDA on inputs copied to the GPU and expects the op's reference.
// Call only where cuda_available().
inline void expect_matches_reference_on_gpu(const std::string& op, const OpFn& fn,
                                            const std::vector<Tensor>& inputs, const Attrs& attrs,
                                            const std::string& what,
                                            std::optional<Tolerance> f32_tolerance = std::nullopt) {
  SCOPED_TRACE(op + " on the GPU " + what);
  const OpDef& def = get_op(op);
  std::vector<TensorMeta> metas;
  std::vector<Tensor> on_gpu;
  for (const Tensor& t : inputs) {
    metas.push_back(t.meta());
    on_gpu.push_back(t.to(Device::cuda()));
  }
  TensorMeta out_meta = infer_op(def, metas, attrs);
  Tensor ref = def.reference(inputs, attrs, out_meta);
  CompileOptions options;
  options.target = "host-cuda";
  auto compiled_fn = compile([&fn](const std::vector<Tensor>& in) { return std::vector<Tensor>{fn(in)}; }, options);
  Tensor compiled = compiled_fn(on_gpu)[0].to_host();
  ASSERT_EQ(compiled.meta(), out_meta);
  Tolerance tol = tolerance_for(out_meta.dtype);
  if (f32_tolerance && out_meta.dtype == DType::F32) tol = *f32_tolerance;
  EXPECT_TRUE(allclose(compiled, ref, tol.rtol, tol.atol, true))
      << "compiled " << compiled.str(12) << "\nref      " << ref.str(12)
      << "\nmax abs diff " << max_abs_diff(compiled, ref);
}

// Random values in [low, high) of the given dtype, with `edges` written over the first
// elements (so edge cases sit among ordinary values).
inline Tensor random_with_edges(const Shape& shape, DType dtype, uint64_t seed, double low,
                                double high, const std::vector<double>& edges = {}) {
  std::vector<double> v = rand(shape, seed, low, high, DType::F64).to_doubles();
  for (size_t i = 0; i < edges.size() && i < v.size(); ++i) v[i] = edges[i];
  if (!is_float(dtype)) {
    for (double& x : v) x = std::floor(x);
  }
  return from_vector(v, shape, dtype);
}

// The (dtype, shape) pairs an op's case is checked on, out of `dtypes` x `n_shapes` shapes:
// f32 on every shape, each other dtype on shape `full` (the one that holds every edge
// value) and on one more, which rotates with `key` (the case's name), so that the cases
// together reach the other pairs. The whole product was most of this suite's time, in JIT
// compiles of the same code at other sizes.
inline std::vector<std::pair<DType, size_t>> dtype_shape_pairs(const std::vector<DType>& dtypes, size_t n_shapes,
                                                               size_t full, const std::string& key) {
  size_t rotation = 0;
  for (char ch : key) rotation = rotation * 31 + static_cast<unsigned char>(ch);
  std::vector<std::pair<DType, size_t>> pairs;
  for (size_t d = 0; d < dtypes.size(); ++d) {
    if (dtypes[d] == DType::F32) {
      for (size_t s = 0; s < n_shapes; ++s) pairs.emplace_back(dtypes[d], s);
      continue;
    }
    pairs.emplace_back(dtypes[d], full);
    size_t other = (rotation + d) % (n_shapes - 1);
    pairs.emplace_back(dtypes[d], other >= full ? other + 1 : other);
  }
  return pairs;
}

inline const std::vector<Shape>& test_shapes() {
  static const std::vector<Shape> shapes = {Shape{}, Shape{1}, Shape{7}, Shape{3, 5},
                                            Shape{2, 3, 17}, Shape{1, 4, 1, 3}};
  return shapes;
}

}  // namespace kiln::testing
