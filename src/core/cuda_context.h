// kiln's CUDA context and stream, shared by Halide's runtime and the vendor libraries.
//
// Halide's JIT runtime would create a CUDA context of its own, which no other library can
// name; a vendor kernel (cuBLASLt) must run in the context that owns the buffers it reads.
// So kiln takes the device's primary context (the one the CUDA runtime API and PyTorch use)
// and hands it to Halide through JITHandlers' CUDA hooks, before Halide touches CUDA: every
// kernel, allocation and vendor call then shares one context and one stream.
//
// The driver (libcuda) is loaded at run time: on a machine without one, nothing here
// fails; context() is null and cuda_available() (core/device.h) is false.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace kiln::cuda {

// The driver entry points kiln calls itself (the CUresult of each is an int; 0 is success).
struct Driver {
  int (*cuInit)(unsigned) = nullptr;
  int (*cuDeviceGet)(int*, int) = nullptr;
  int (*cuDevicePrimaryCtxRetain)(void**, int) = nullptr;
  int (*cuCtxPushCurrent)(void*) = nullptr;
  int (*cuCtxPopCurrent)(void**) = nullptr;
  int (*cuMemAlloc)(uint64_t*, size_t) = nullptr;
  int (*cuMemFree)(uint64_t) = nullptr;
  int (*cuMemsetD8Async)(uint64_t, unsigned char, size_t, void*) = nullptr;
  int (*cuGetErrorName)(int, const char**) = nullptr;
  int (*cuGetErrorString)(int, const char**) = nullptr;
};

// The loaded driver, or null (no libcuda.so.1 here, or it failed to initialize).
const Driver* driver();
// The primary context of device 0, retained for the process; null without a GPU.
void* context();
// The stream kiln's kernels and vendor calls run on: the context's default stream.
void* stream();
// Points Halide's JIT runtime at context() and stream() (once; before any CUDA work of
// Halide's). Does nothing without a GPU.
void use_kiln_context_in_halide();
// "CUDA_ERROR_...: description" for a CUresult.
std::string error_text(int result);

// Makes context() current on this thread for its lifetime.
class ScopedContext {
 public:
  ScopedContext();
  ~ScopedContext();
  ScopedContext(const ScopedContext&) = delete;
  ScopedContext& operator=(const ScopedContext&) = delete;
  bool ok() const { return ok_; }

 private:
  bool ok_ = false;
};

}  // namespace kiln::cuda
