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

}  // namespace kiln
