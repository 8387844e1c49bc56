#include "lower/target.h"

#include "core/error.h"

namespace kiln {

Halide::Target parse_target(const std::string& spec) {
  if (spec.empty() || spec == "host") return Halide::get_host_target();
  std::string s = spec;
  if (s.rfind("host-cuda", 0) == 0) {
    Halide::Target t = Halide::get_host_target().with_feature(Halide::Target::CUDA);
    std::string rest = s.substr(9);  // optional "-feature-feature"
    if (!rest.empty()) {
      std::string full = t.to_string() + rest;
      if (!Halide::Target::validate_target_string(full)) {
        user_error("unknown target '", spec, "': '", rest.substr(1),
                   "' is not a Halide target feature");
      }
      t = Halide::Target(full);
    }
    if (t.get_cuda_capability_lower_bound() < 80) t = t.with_feature(Halide::Target::CUDACapability80);
    return t;
  }
  if (!Halide::Target::validate_target_string(s)) {
    user_error("unknown target '", spec, "'; use 'host', 'host-cuda', or a Halide target "
               "string such as 'x86-64-linux-avx2' or 'host-cuda-cuda_capability_86'");
  }
  return Halide::Target(s);
}

bool target_has_gpu(const Halide::Target& t) { return t.has_gpu_feature(); }

void rethrow_halide_error(const std::string& what, const Halide::Error& e) {
  throw Error(what + ": Halide reported: " + e.what());
}

}  // namespace kiln
