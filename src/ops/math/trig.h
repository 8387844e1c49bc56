// sin, cos and tan of f32 as vector code (Halide's call libm once per lane on x86): an exact
// reduction modulo pi/2 over the whole f32 range, then polynomials in f64.
//
// The reduction is Payne and Hanek's, written for vectors: |x| = M * 2^E (M an integer of
// 24 bits), and (2^E * 2/pi) mod 4 comes from a table indexed by E, in four pieces of 26
// bits each, so that every product M * piece is exact in f64; summed with their integer
// parts taken off as they go, they give the quadrant and the reduced argument to about
// 2^-78, which keeps its relative error tiny even for the f32 closest to a multiple of
// pi/2. The result is within 1 ULP of the true value for every finite f32 (the test of
// src/ops sweeps them against the f64 reference); NaN and +-inf give NaN, sin and tan keep
// the sign of zero. sin(x) and cos(x) of one x share the reduction (Halide's CSE).
//
// Other types keep Halide's functions (f16 and bf16 compute in f32, so they use these).
// So does code lowered for a GPU (ScopedGpuMath): CUDA's own sinf, cosf, tanf and tanhf
// (libdevice) are within 2 ULP and run at the f32 rate, where the f64 polynomials and table
// reads of these forms doubled the seed expression's time on an H100 (0.49 ms against 0.24).
#pragma once

#include <Halide.h>

namespace kiln::math {

Halide::Expr sin(const Halide::Expr& x);
Halide::Expr cos(const Halide::Expr& x);
Halide::Expr tan(const Halide::Expr& x);
// tanh of f32 through an f64 exp of kiln's own (vector code; Halide's calls libm per lane).
Halide::Expr tanh(const Halide::Expr& x);

// While one lives on this thread, sin, cos, tan and tanh build Halide's (libdevice's on
// CUDA) instead, and lowering_for_gpu() is true (for other ops with a GPU form of their
// own, gelu's): lower_to_halide holds one while it lowers a graph for a GPU target.
bool lowering_for_gpu();
class ScopedGpuMath {
 public:
  explicit ScopedGpuMath(bool gpu);
  ~ScopedGpuMath();
  ScopedGpuMath(const ScopedGpuMath&) = delete;
  ScopedGpuMath& operator=(const ScopedGpuMath&) = delete;

 private:
  bool gpu_;
};

}  // namespace kiln::math
