// Where a tensor's data lives. CPU tensors hold host memory; CUDA tensors hold a device
// allocation managed by Halide's runtime (plus a host mirror that is only filled on
// to_host()), so consecutive CUDA kernels never copy through the host.
#pragma once

#include <string>

#include <HalideBuffer.h>

struct halide_device_interface_t;

namespace kiln {

enum class DeviceKind { CPU, CUDA };

struct Device {
  DeviceKind kind = DeviceKind::CPU;
  static Device cpu() { return {DeviceKind::CPU}; }
  static Device cuda() { return {DeviceKind::CUDA}; }
  bool is_cuda() const { return kind == DeviceKind::CUDA; }
  bool operator==(const Device& o) const { return kind == o.kind; }
  std::string str() const { return is_cuda() ? "cuda" : "cpu"; }
};

// True when a CUDA driver and GPU are usable from this process (checked once).
bool cuda_available();
// Halide's JIT device interface for CUDA; throws kiln::Error when no GPU is usable.
const halide_device_interface_t* cuda_device_interface();
// Gives an empty buffer (no elements, no device memory) a CUDA device handle, so Halide
// treats it as resident. Halide's CUDA runtime aborts the process on an allocation of zero
// bytes (its device_malloc asserts size != 0): an empty tensor moved to the GPU, or an
// empty input or output of a host-cuda pipeline, would otherwise end the program. The
// handle is one small allocation shared by every empty buffer, wrapped (never freed).
// Does nothing to a buffer with elements or with a device handle already.
void give_empty_buffer_a_device_handle(Halide::Runtime::Buffer<void>& buffer);

}  // namespace kiln
