// Compilation targets. kiln accepts "host", "host-cuda", or any Halide target string
// (e.g. "x86-64-linux-avx2-cuda-cuda_capability_86").
#pragma once

#include <Halide.h>

#include <string>

namespace kiln {

// "host-cuda" means the host CPU plus CUDA for compute capability 8.0 or newer
// (A100, H100, H200) unless the string names a capability itself.
Halide::Target parse_target(const std::string& spec);
bool target_has_gpu(const Halide::Target& t);
// Routes Halide's compile-time warnings to KILN_LOG=halide (called by parse_target).
void install_halide_error_reporter();

// Runs `body`, turning Halide's exceptions (compile errors, runtime errors) into
// kiln::Error with Halide's message, prefixed by `what`.
template <class F>
auto with_halide_errors(const std::string& what, F&& body) -> decltype(body());
[[noreturn]] void rethrow_halide_error(const std::string& what, const Halide::Error& e);

template <class F>
auto with_halide_errors(const std::string& what, F&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const Halide::Error& e) {
    rethrow_halide_error(what, e);
  }
}

}  // namespace kiln
