// cuDNN as a stage of kiln's Halide pipelines: conv2d (groups, stride, padding, dilation)
// computed by cuDNN's convolution on the GPU, inside the one pipeline kiln builds for a
// graph. Halide still owns the buffers and everything around the call (bias, activation
// and the gradients' other ops are kiln's own kernels).
//
// cuDNN is loaded at run time (dlopen of libcudnn.so.9, or KILN_CUDNN, a path): kiln
// builds and runs without it, and then uses its own kernels.
#pragma once

#include <HalideRuntime.h>

#include <string>

#include "runtime/vendor_call.h"

namespace kiln::vendor {

// Whether cuDNN 9 and a CUDA GPU are usable here (checked once); `why` says what is
// missing and how to get it.
bool cudnn_available(std::string* why = nullptr);

// The conv stage's flags.
enum ConvFlags : int {
  kConvAllowTf32 = 1,  // f32 convolutions may round their inputs to TF32 (tensor cores)
};

// The name the stage is defined with, and its address for Halide's JIT.
constexpr const char* kConv2dExtern = "kiln_cudnn_conv2d";

}  // namespace kiln::vendor

// out[n, o, oh, ow] = sum over (ci, kh, kw) of w[o, ci, kh, kw] *
//   x[n, g(o) * C/groups + ci, oh * sh - ph + kh * dh, ow * sw - pw + kw * dw] (zero outside x),
// in Halide's dim order (innermost first): x (W, H, C, N), w (KW, KH, C/groups, O), out
// (OW, OH, O, N). w is dense; x and out may have any strides. f32 (true FP32 unless
// kConvAllowTf32), f64, f16 and bf16 (f32 accumulation). Any region of the output may be
// asked for (a consumer's slice): the batches asked for are computed whole and the region
// copied out. Answers Halide's bounds queries; returns nonzero on failure
// (vendor::last_error says why).
extern "C" int kiln_cudnn_conv2d(halide_buffer_t* x, halide_buffer_t* w, int n, int c, int h, int wd, int o, int kh,
                                 int kw, int sh, int sw, int ph, int pw, int dh, int dw, int groups, int flags,
                                 halide_buffer_t* out);
