// kiln::parse_target (src/lower/target.cpp): --target of `kiln aot` and the other
// commands, and the target of halide_backend / scheduled_backend. Anything is a target
// or a kiln::Error; a Halide exception escaping is a finding.
#include <Halide.h>

#include "core/error.h"
#include "fuzz_common.h"
#include "lower/target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return 0;
  try {
    const Halide::Target t = kiln::parse_target(fuzz_text(data, size));
    (void)t.to_string();
  } catch (const kiln::Error&) {
  }
  return 0;
}
