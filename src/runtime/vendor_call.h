// What every vendor stage (cuBLASLt, cuDNN) does with the halide_buffer_ts Halide hands
// it: tell a bounds query from a run, bring its operands to the GPU, address an element,
// and report a failure that kiln then raises as a kiln::Error.
#pragma once

#include <HalideRuntime.h>

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::vendor {

// The last failure of a vendor call on this thread (its text), for the error kiln raises.
std::string last_error();
void clear_last_error();
// Records "<library>: <what>" as the last error and returns -1 (the stage's failure code).
int fail(const char* library, const std::string& what);

// Loading a vendor library at run time: the first of $env_var (a path) and `names` that
// dlopen opens, or null; then its entry points (false where one is missing).
void* open_library(const char* env_var, const std::vector<const char*>& names);
void* library_symbol(void* lib, const char* name);
template <class F>
bool load_symbol(void* lib, const char* name, F* fn) {
  *fn = reinterpret_cast<F>(library_symbol(lib, name));
  return *fn != nullptr;
}
// Why a vendor library cannot run here when no CUDA driver or GPU is: "" where one is.
std::string missing_gpu();

// Halide's bounds query: neither host nor device memory.
bool is_query(const halide_buffer_t* b);
// A buffer with a dim of extent <= 0.
bool is_empty(const halide_buffer_t* b);
// The element at `coords` counted from the buffer's origin, in elements.
int64_t offset_of(const halide_buffer_t* b, const std::vector<int64_t>& coords);
// The largest power of two up to 16 that divides `address` (bytes).
int alignment(uint64_t address);

// Readies a stage's buffers for a vendor call on the GPU: Halide hands a CUDA extern stage
// a pipeline input as the caller left it (host tensors given to a host-cuda pipeline come
// without device memory), so each input whose host copy is the newer is copied to the
// GPU, and the output gets device memory. Empty buffers are left alone (Halide's CUDA
// runtime aborts on device memory of zero bytes). "" or what failed.
std::string to_device(const std::vector<halide_buffer_t*>& inputs, halide_buffer_t* out);

}  // namespace kiln::vendor
