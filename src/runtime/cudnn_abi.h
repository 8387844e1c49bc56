// cuDNN's C ABI as kiln calls it (the legacy convolution API of cuDNN 9), declared here so
// that kiln builds without cuDNN's headers: the values are cudnn_graph.h's and
// cudnn_cnn.h's, and tests/runtime/cudnn_abi_check.cpp compares them with those headers
// wherever they are installed (a mismatch fails the build).
#pragma once

#include <cstddef>

namespace kiln::vendor::cudnn_abi {

using Status = int;  // cudnnStatus_t
struct FwdAlgoPerf {  // cudnnConvolutionFwdAlgoPerf_t
  int algo;
  Status status;
  float time;
  size_t memory;
  int determinism;
  int math_type;
  int reserved[3];
};
enum : int {
  kDataFloat = 0, kDataDouble = 1, kDataHalf = 2, kDataBfloat16 = 9,  // cudnnDataType_t
  kTensorNchw = 0,                                                    // cudnnTensorFormat_t
  kCrossCorrelation = 1,                                              // cudnnConvolutionMode_t
  kDefaultMath = 0, kTensorOpMath = 1, kFmaMath = 3,                  // cudnnMathType_t
  kFwdAlgoCount = 8,                                                  // CUDNN_CONVOLUTION_FWD_ALGO_COUNT
};

}  // namespace kiln::vendor::cudnn_abi
