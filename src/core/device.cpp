#include "core/device.h"

#include <Halide.h>

#include "core/cuda_context.h"
#include "core/error.h"

namespace kiln {

bool cuda_available() {
  static const bool available = [] {
    try {
      // Before Halide touches CUDA: its runtime then uses kiln's context (core/cuda_context.h).
      cuda::use_kiln_context_in_halide();
      Halide::Target t = Halide::get_host_target().with_feature(Halide::Target::CUDA);
      return Halide::host_supports_target_device(t);
    } catch (const std::exception&) {
      return false;
    }
  }();
  return available;
}

const halide_device_interface_t* cuda_device_interface() {
  if (!cuda_available()) {
    user_error("CUDA was requested but no usable CUDA GPU/driver was found on this machine; "
               "use Device::cpu(), or build ahead of time for host-cuda (kiln::compile_aot) "
               "and run on a machine with a GPU");
  }
  Halide::Target t = Halide::get_host_target().with_feature(Halide::Target::CUDA);
  return Halide::get_device_interface_for_device_api(Halide::DeviceAPI::CUDA, t);
}

void give_empty_buffer_a_device_handle(Halide::Runtime::Buffer<void>& buffer) {
  if (buffer.raw_buffer()->device) return;
  for (int d = 0; d < buffer.dimensions(); ++d) {
    if (buffer.dim(d).extent() <= 0) {
      static const uint64_t handle = [] {
        const cuda::Driver* drv = cuda::driver();
        uint64_t p = 0;
        cuda::ScopedContext ctx;
        if (!drv || !ctx.ok()) user_error("an empty tensor on the GPU: no CUDA driver or context");
        if (int e = drv->cuMemAlloc(&p, 256); e != 0) {
          user_error("an empty tensor on the GPU: a 256-byte device allocation failed: ", cuda::error_text(e));
        }
        return p;
      }();
      const halide_device_interface_t* iface = cuda_device_interface();
      if (int e = buffer.device_wrap_native(iface, handle); e != 0) {
        user_error("an empty tensor on the GPU: Halide refused a device handle (error ", e, ")");
      }
      return;
    }
  }
}

}  // namespace kiln
