#include "lower/target.h"

#include <sstream>

#include "core/error.h"

#include "core/log.h"

namespace kiln {

namespace {
// Halide's compile-time warnings go to KILN_LOG=halide instead of raw stderr; errors
// still throw Halide::CompileError, which with_halide_errors turns into kiln::Error.
class HalideReporter : public Halide::CompileTimeErrorReporter {
 public:
  void warning(const char* msg) override { log("halide", msg); }
  [[noreturn]] void error(const char* msg) override { throw Halide::CompileError(msg); }
};
}  // namespace

void install_halide_error_reporter() {
  static HalideReporter reporter;
  static bool installed = [] {
    Halide::set_custom_compile_time_error_reporter(&reporter);
    return true;
  }();
  (void)installed;
}

namespace {
[[noreturn]] void bad_target(const std::string& spec, const std::string& why) {
  user_error("unknown target '", spec, "' (Halide could not read it: ", why, "); use 'host', 'host-cuda', or a "
             "Halide target string such as 'x86-64-linux-avx2' or 'host-cuda-cuda_capability_86'");
}

// The first dash-separated word of `spec` that Halide knows as no architecture, bit width,
// OS or feature ("" if it knows them all).
std::string first_unknown_word(const std::string& spec) {
  auto valid = [](const std::string& s) {
    try {
      return Halide::Target::validate_target_string(s);
    } catch (const std::exception&) {  // Halide 21 throws on "vector_bits_xx" (std::stoi)
      return false;
    }
  };
  std::string word;
  std::istringstream words(spec);
  while (std::getline(words, word, '-')) {
    const bool known = valid("host-" + word) || valid(word + "-64-linux") || valid("x86-" + word + "-linux") ||
                       valid("x86-64-" + word);
    if (!known) return word.empty() ? "(an empty word)" : word;
  }
  return "";
}

[[noreturn]] void unknown_word(const std::string& spec, const std::string& word) {
  user_error("unknown target '", spec, "': '", word, "' is not a Halide architecture, OS or target feature; use "
             "'host', 'host-cuda', or a Halide target string such as 'x86-64-linux-avx2' or "
             "'host-cuda-cuda_capability_86'");
}

Halide::Target parse_target_unchecked(const std::string& spec) {
  if (spec.empty() || spec == "host") return Halide::get_host_target();
  std::string s = spec;
  if (const std::string word = first_unknown_word(s); !word.empty()) unknown_word(spec, word);
  if (s == "host-cuda" || s.rfind("host-cuda-", 0) == 0) {
    std::string rest = s.substr(9);  // optional "-feature-feature"
    // Halide's "host-cuda" adds the compute capability of the GPU it finds (Halide 21 names
    // capabilities up to 86), unless the spec names one itself.
    Halide::Target t = rest.find("cuda_capability") == std::string::npos
                           ? Halide::Target("host-cuda")
                           : Halide::get_host_target().with_feature(Halide::Target::CUDA);
    if (!rest.empty()) {
      std::string full = t.to_string() + rest;
      if (!Halide::Target::validate_target_string(full)) {
        user_error("unknown target '", spec, "': Halide cannot combine '", rest.substr(1), "' with ", t.to_string());
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
}  // namespace

Halide::Target parse_target(const std::string& spec) {
  install_halide_error_reporter();
  try {
    return parse_target_unchecked(spec);
  } catch (const Error&) {
    throw;
  } catch (const Halide::Error& e) {
    // Halide 21 accepts some strings in validate_target_string that its Target
    // constructor then rejects ("arm-64-linux-avx": a feature of another architecture),
    // and throws on others (std::stoi's std::invalid_argument for "vector_bits_xx"): a
    // bad --target is a user error, never an escaped exception.
    bad_target(spec, e.what());
  } catch (const std::exception& e) {
    bad_target(spec, e.what());
  }
}

bool target_has_gpu(const Halide::Target& t) { return t.has_gpu_feature(); }

void rethrow_halide_error(const std::string& what, const Halide::Error& e) {
  throw Error(what + ": Halide reported: " + e.what());
}

}  // namespace kiln
