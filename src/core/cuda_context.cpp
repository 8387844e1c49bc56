#include "core/cuda_context.h"

#include <Halide.h>
#include <dlfcn.h>

#include <mutex>

#include "core/log.h"

namespace kiln::cuda {

namespace {

template <class F>
bool load(void* lib, const char* name, F* fn) {
  *fn = reinterpret_cast<F>(dlsym(lib, name));
  return *fn != nullptr;
}

struct State {
  Driver driver;
  bool loaded = false;
  void* context = nullptr;
};

const State& state() {
  static const State s = [] {
    State s;
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!lib) lib = dlopen("libcuda.so", RTLD_NOW | RTLD_GLOBAL);
    if (!lib) return s;
    Driver& d = s.driver;
    const bool all = load(lib, "cuInit", &d.cuInit) && load(lib, "cuDeviceGet", &d.cuDeviceGet) &&
                     load(lib, "cuDevicePrimaryCtxRetain", &d.cuDevicePrimaryCtxRetain) &&
                     load(lib, "cuCtxPushCurrent_v2", &d.cuCtxPushCurrent) &&
                     load(lib, "cuCtxPopCurrent_v2", &d.cuCtxPopCurrent) && load(lib, "cuMemAlloc_v2", &d.cuMemAlloc) &&
                     load(lib, "cuMemFree_v2", &d.cuMemFree) &&
                     load(lib, "cuMemsetD8Async", &d.cuMemsetD8Async) &&
                     load(lib, "cuGetErrorName", &d.cuGetErrorName) &&
                     load(lib, "cuGetErrorString", &d.cuGetErrorString);
    if (!all || d.cuInit(0) != 0) return s;
    int device = 0;
    if (d.cuDeviceGet(&device, 0) != 0) return s;
    if (d.cuDevicePrimaryCtxRetain(&s.context, device) != 0) {
      s.context = nullptr;
      return s;
    }
    s.loaded = true;
    return s;
  }();
  return s;
}

int acquire_context(Halide::JITUserContext*, void** ctx, bool) {
  *ctx = state().context;
  return *ctx ? 0 : -1;
}

int release_context(Halide::JITUserContext*) { return 0; }

int get_stream(Halide::JITUserContext*, void*, void** s) {
  *s = stream();
  return 0;
}

}  // namespace

const Driver* driver() { return state().loaded ? &state().driver : nullptr; }

void* context() { return state().context; }

void* stream() { return nullptr; }

void use_kiln_context_in_halide() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (!context()) return;
    // set_default_handlers replaces them all: keep what is there, change the CUDA hooks.
    Halide::JITHandlers h = Halide::Internal::JITSharedRuntime::set_default_handlers({});
    h.custom_cuda_acquire_context = acquire_context;
    h.custom_cuda_release_context = release_context;
    h.custom_cuda_get_stream = get_stream;
    Halide::Internal::JITSharedRuntime::set_default_handlers(h);
    log("cuda", "Halide's CUDA runtime uses the primary context of device 0 and its default stream");
  });
}

std::string error_text(int result) {
  const Driver* d = driver();
  const char* name = nullptr;
  const char* text = nullptr;
  if (d) {
    d->cuGetErrorName(result, &name);
    d->cuGetErrorString(result, &text);
  }
  return std::string(name ? name : "CUDA error " + std::to_string(result)) + (text ? std::string(": ") + text : "");
}

ScopedContext::ScopedContext() {
  const Driver* d = driver();
  ok_ = d && d->cuCtxPushCurrent(context()) == 0;
}

ScopedContext::~ScopedContext() {
  if (!ok_) return;
  void* popped = nullptr;
  driver()->cuCtxPopCurrent(&popped);
}

}  // namespace kiln::cuda
