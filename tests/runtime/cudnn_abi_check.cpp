// Compiled only where cuDNN's headers are (tests/CMakeLists.txt): kiln's own declarations
// of cuDNN's ABI (runtime/cudnn_abi.h) against the real ones.
#include <cudnn.h>

#include <cstddef>

#include "runtime/cudnn_abi.h"

namespace abi = kiln::vendor::cudnn_abi;

static_assert(CUDNN_MAJOR == 9, "kiln's declarations are cuDNN 9's");
static_assert(sizeof(abi::FwdAlgoPerf) == sizeof(cudnnConvolutionFwdAlgoPerf_t));
static_assert(offsetof(abi::FwdAlgoPerf, status) == offsetof(cudnnConvolutionFwdAlgoPerf_t, status));
static_assert(offsetof(abi::FwdAlgoPerf, memory) == offsetof(cudnnConvolutionFwdAlgoPerf_t, memory));
static_assert(offsetof(abi::FwdAlgoPerf, math_type) == offsetof(cudnnConvolutionFwdAlgoPerf_t, mathType));
static_assert(sizeof(cudnnStatus_t) == sizeof(abi::Status) && sizeof(cudnnDataType_t) == sizeof(int));
static_assert(abi::kDataFloat == int(CUDNN_DATA_FLOAT) && abi::kDataDouble == int(CUDNN_DATA_DOUBLE) &&
              abi::kDataHalf == int(CUDNN_DATA_HALF) && abi::kDataBfloat16 == int(CUDNN_DATA_BFLOAT16));
static_assert(abi::kTensorNchw == int(CUDNN_TENSOR_NCHW));
static_assert(abi::kCrossCorrelation == int(CUDNN_CROSS_CORRELATION));
static_assert(abi::kDefaultMath == int(CUDNN_DEFAULT_MATH) && abi::kTensorOpMath == int(CUDNN_TENSOR_OP_MATH) &&
              abi::kFmaMath == int(CUDNN_FMA_MATH));
static_assert(abi::kFwdAlgoCount == int(CUDNN_CONVOLUTION_FWD_ALGO_COUNT));
