// apply_overrides (autoscheduler/machine_model.cpp): KILN_MACHINE=key=value,... (also
// what `kiln machine --calibrate` tells a user to set). Anything is applied or is a
// kiln::Error naming what was wrong.
#include "core/error.h"
#include "fuzz_common.h"
#include "machine_model.h"

namespace as = kiln::autoschedule;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  as::MachineModel m;
  try {
    as::apply_overrides(m, fuzz_text(data, size));
  } catch (const kiln::Error&) {
    return 0;
  }
  (void)m.str();
  (void)m.peak_flops();
  return 0;
}
