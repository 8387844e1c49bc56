// Whether a CUDA driver with at least one device is present, asked of the driver itself:
// the AOT library tests link no kiln code that could answer.
#pragma once

#include <dlfcn.h>

namespace kiln::testing {

inline bool gpu_present() {
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!cuda) return false;
  using InitFn = int (*)(unsigned);
  using CountFn = int (*)(int*);
  auto init = reinterpret_cast<InitFn>(dlsym(cuda, "cuInit"));
  auto count = reinterpret_cast<CountFn>(dlsym(cuda, "cuDeviceGetCount"));
  int n = 0;
  return init && count && init(0) == 0 && count(&n) == 0 && n > 0;
}

}  // namespace kiln::testing
