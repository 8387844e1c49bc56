// cuBLASLt as a stage of kiln's Halide pipelines: matmul (batched, broadcast, transposed
// operands read in place) computed by the vendor GEMM on the GPU, inside the one pipeline
// kiln builds for a graph. Halide still owns the buffers (the stage's inputs are copied to
// the GPU and its output allocated there by Halide) and everything around the call.
//
// cuBLASLt is loaded at run time (dlopen of libcublasLt.so.13, .12 or KILN_CUBLASLT, a
// path): kiln builds and runs without it, and then uses its own kernels.
#pragma once

#include <HalideRuntime.h>

#include <string>

#include "runtime/vendor_call.h"

namespace kiln::vendor {

// Whether cuBLASLt and a CUDA GPU are usable here (checked once); `why` says what is
// missing and how to get it.
bool cublaslt_available(std::string* why = nullptr);

// The Halide extern stage's flags (its `flags` argument).
enum MatmulFlags : int {
  kTransA = 1,     // a is given as its transpose's storage: [..., K, M] read as [..., M, K]
  kTransB = 2,     // b likewise: [..., N, K] read as [..., K, N]
  kAllowTf32 = 4,  // f32 products may round their inputs to TF32 (tensor cores)
};

// The name the stage is defined with, and its address for Halide's JIT.
constexpr const char* kMatmulExtern = "kiln_cublaslt_matmul";

}  // namespace kiln::vendor

// out[..., M, N] = a[..., M, K] @ b[..., K, N], in Halide's dim order (innermost first):
// out (N, M, batch...), a (K, M, batch...) or (M, K, ...) with kTransA, b (N, K, ...) or
// (K, N, ...) with kTransB. Batch dims align from the innermost batch dim; bit j of
// a_bcast / b_bcast says the operand's batch dim j is 1 (or absent) against the output's.
// f32, f64, f16 and bf16 (f32 accumulation for the 16-bit types). Answers Halide's
// bounds queries; returns nonzero on failure (vendor::last_error says why).
extern "C" int kiln_cublaslt_matmul(halide_buffer_t* a, halide_buffer_t* b, int m, int n, int k, int flags,
                                    int a_bcast, int b_bcast, halide_buffer_t* out);
