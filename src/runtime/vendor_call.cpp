#include "runtime/vendor_call.h"

#include <dlfcn.h>

#include <cstdlib>
#include <exception>

#include "core/cuda_context.h"
#include "core/device.h"

namespace kiln::vendor {

namespace {
thread_local std::string t_last_error;
}  // namespace

std::string last_error() { return t_last_error; }
void clear_last_error() { t_last_error.clear(); }

int fail(const char* library, const std::string& what) {
  t_last_error = std::string(library) + ": " + what;
  return -1;
}

void* open_library(const char* env_var, const std::vector<const char*>& names) {
  std::vector<std::string> tries;
  if (const char* path = std::getenv(env_var)) tries.push_back(path);
  for (const char* n : names) tries.push_back(n);
  for (const std::string& n : tries) {
    if (void* lib = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL)) return lib;
  }
  return nullptr;
}

void* library_symbol(void* lib, const char* name) { return dlsym(lib, name); }

std::string missing_gpu() {
  return cuda::driver() ? "" : "no CUDA driver (libcuda.so.1) or GPU is usable on this machine";
}

bool is_query(const halide_buffer_t* b) { return b->host == nullptr && b->device == 0; }

bool is_empty(const halide_buffer_t* b) {
  for (int d = 0; d < b->dimensions; ++d) {
    if (b->dim[d].extent <= 0) return true;
  }
  return false;
}

int64_t offset_of(const halide_buffer_t* b, const std::vector<int64_t>& coords) {
  int64_t o = 0;
  for (int d = 0; d < b->dimensions; ++d) o += (coords[size_t(d)] - b->dim[d].min) * b->dim[d].stride;
  return o;
}

int alignment(uint64_t address) {
  int a = 16;
  while (a > 1 && address % uint64_t(a)) a /= 2;
  return a;
}

std::string to_device(const std::vector<halide_buffer_t*>& inputs, halide_buffer_t* out) {
  const halide_device_interface_t* cuda = nullptr;
  try {
    cuda = kiln::cuda_device_interface();
  } catch (const std::exception& e) {
    return e.what();
  }
  for (halide_buffer_t* x : inputs) {
    if (is_empty(x)) continue;
    if (!x->device || x->host_dirty()) {
      if (int e = cuda->copy_to_device(nullptr, x, cuda); e != 0) {
        return "copying an operand to the GPU failed (Halide error " + std::to_string(e) + ")";
      }
    }
  }
  if (!is_empty(out) && !out->device) {
    if (int e = cuda->device_malloc(nullptr, out, cuda); e != 0) {
      return "allocating the output on the GPU failed (Halide error " + std::to_string(e) + ")";
    }
  }
  return "";
}

}  // namespace kiln::vendor
