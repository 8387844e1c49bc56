// cuBLASLt's C ABI as kiln calls it, declared here so that kiln builds without the CUDA
// toolkit: the values are cublasLt.h's, cublas_api.h's and library_types.h's, and
// tests/runtime/cublaslt_abi_check.cpp compares them with those headers wherever the
// toolkit is installed (a mismatch fails the build).
#pragma once

#include <cstddef>
#include <cstdint>

namespace kiln::vendor::cublaslt_abi {

using Status = int;  // cublasStatus_t
struct Algo {        // cublasLtMatmulAlgo_t
  uint64_t data[8];
};
struct HeuristicResult {  // cublasLtMatmulHeuristicResult_t
  Algo algo;
  size_t workspace_size;
  Status state;
  float waves;
  int reserved[4];
};
enum : int {
  kCudaR32F = 0, kCudaR64F = 1, kCudaR16F = 2, kCudaR16BF = 14,  // cudaDataType
  kCompute32F = 68, kCompute32FFastTf32 = 77, kCompute64F = 70,    // cublasComputeType_t
  kOpN = 0, kOpT = 1,                                              // cublasOperation_t
  kDescTransA = 3, kDescTransB = 4,                                // cublasLtMatmulDescAttributes_t
  kLayoutBatchCount = 5, kLayoutStridedBatchOffset = 6,            // cublasLtMatrixLayoutAttribute_t
  kPrefMaxWorkspaceBytes = 1,                                      // cublasLtMatmulPreferenceAttributes_t
  kPrefMinAlignmentA = 5, kPrefMinAlignmentB = 6, kPrefMinAlignmentC = 7, kPrefMinAlignmentD = 8,
};

}  // namespace kiln::vendor::cublaslt_abi
