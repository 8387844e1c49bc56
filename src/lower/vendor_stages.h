// Where a graph's matmul runs as a cuBLASLt stage (runtime/cublaslt.h) and its conv2d as a
// cuDNN stage (runtime/cudnn.h) on a CUDA target, and that stage as a Halide Func. The
// choice is the Kiln autoscheduler's (autoschedule::choose_gpu_matmul prices the vendor
// kernel against kiln's best register tiling; a convolution as the implicit GEMM it is);
// KILN_VENDOR overrides it: "off" never, "on" wherever the op can go (a kiln::Error where
// the library is missing), "auto" (the default) as priced.
//
// A product can go where its type is f32, f64, f16 or bf16 for both operands, and each
// operand's batch dims equal the output's or are 1 (broadcast). An operand that is a
// transpose of the last two dims of another value is read in that value's storage
// (cuBLASLt's transpose), not copied. A convolution can go where its input, weight and
// output share one of those types.
#pragma once

#include <Halide.h>

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace kiln {

// What a cuBLASLt stage reads: placeholders as the pipeline's ImageParams, constants as
// their buffers, anything else as a Func the schedule must store (listed in `stored`).
struct VendorOperandSources {
  const std::map<int, Halide::ImageParam>* params;
  const std::map<int, Halide::Buffer<>>* constants;
  const std::map<int, Halide::Func>* funcs;
  std::function<Halide::Expr(const Dim&)> extent;
};

// For code generation without a GPU (tests, AOT checks): lowering then takes cuBLASLt as
// present, so the stages and their schedules are built and compiled; running them still
// needs the library and a GPU. Off by default.
void set_vendor_codegen_without_gpu(bool on);

// The cuBLASLt stage for matmul node `n`, or nothing where kiln's own kernel computes it
// (logged under KILN_LOG=schedule with the reason). `stored` receives the Funcs the stage
// reads, which must be computed at root.
std::optional<Halide::Func> vendor_matmul(const Graph& graph, const Node& n, const VendorOperandSources& sources,
                                          const Halide::Target& target, std::vector<Halide::Func>* stored);

// The cuDNN stage for conv2d node `n`, or nothing where kiln's own kernel computes it;
// as vendor_matmul.
std::optional<Halide::Func> vendor_conv2d(const Graph& graph, const Node& n, const VendorOperandSources& sources,
                                          const Halide::Target& target, std::vector<Halide::Func>* stored);

// Whether matmuls and convolutions with f32 operands may use TF32 tensor cores (their
// inputs rounded to 10 bits of mantissa), as torch.backends.cuda.matmul.allow_tf32 and
// torch.backends.cudnn.allow_tf32: off unless set, or unless KILN_ALLOW_TF32=1. Applies
// to graphs compiled after the call.
void set_matmul_allow_tf32(bool allow);
bool matmul_allow_tf32();

}  // namespace kiln
