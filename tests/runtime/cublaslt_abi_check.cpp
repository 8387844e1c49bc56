// Compiled only where the CUDA toolkit's headers are (tests/CMakeLists.txt): kiln's own
// declarations of cuBLASLt's ABI (runtime/cublaslt_abi.h) against the real ones.
#include <cublasLt.h>

#include "runtime/cublaslt_abi.h"

namespace abi = kiln::vendor::cublaslt_abi;

static_assert(sizeof(abi::HeuristicResult) == sizeof(cublasLtMatmulHeuristicResult_t));
static_assert(offsetof(abi::HeuristicResult, workspace_size) == offsetof(cublasLtMatmulHeuristicResult_t, workspaceSize));
static_assert(offsetof(abi::HeuristicResult, state) == offsetof(cublasLtMatmulHeuristicResult_t, state));
static_assert(sizeof(abi::Algo) == sizeof(cublasLtMatmulAlgo_t));
static_assert(abi::kCudaR32F == int(CUDA_R_32F) && abi::kCudaR64F == int(CUDA_R_64F) && abi::kCudaR16F == int(CUDA_R_16F) &&
              abi::kCudaR16BF == int(CUDA_R_16BF));
static_assert(abi::kCompute32F == int(CUBLAS_COMPUTE_32F) && abi::kCompute32FFastTf32 == int(CUBLAS_COMPUTE_32F_FAST_TF32) &&
              abi::kCompute64F == int(CUBLAS_COMPUTE_64F));
static_assert(abi::kOpN == int(CUBLAS_OP_N) && abi::kOpT == int(CUBLAS_OP_T));
static_assert(abi::kDescTransA == int(CUBLASLT_MATMUL_DESC_TRANSA) && abi::kDescTransB == int(CUBLASLT_MATMUL_DESC_TRANSB));
static_assert(abi::kLayoutBatchCount == int(CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT) &&
              abi::kLayoutStridedBatchOffset == int(CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET));
static_assert(abi::kPrefMaxWorkspaceBytes == int(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES));
static_assert(abi::kPrefMinAlignmentA == int(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES) &&
              abi::kPrefMinAlignmentB == int(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES) &&
              abi::kPrefMinAlignmentC == int(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES) &&
              abi::kPrefMinAlignmentD == int(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES));
