// contraction_knobs_from_text (autoscheduler/tuning_db.cpp): the contraction sizes a
// schedule file of `kiln autoschedule <model>` carries, read by scheduled_backend
// (src/runtime/compile.cpp). Malformed text is a json::ParseError (which
// scheduled_backend turns into a kiln::Error); what is read prints back the same.
#include "fuzz_common.h"
#include "json.h"
#include "tuning_db.h"

namespace as = kiln::autoschedule;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  as::Knobs k;
  try {
    k = as::contraction_knobs_from_text(fuzz_text(data, size));
  } catch (const as::json::ParseError&) {
    return 0;
  }
  const std::string printed = as::contraction_knobs_to_text(k);
  as::Knobs again;
  try {
    again = as::contraction_knobs_from_text(printed);
  } catch (const as::json::ParseError& e) {
    KILN_FUZZ_CHECK(false, ("contraction_knobs_to_text wrote text that does not read back: " + e.message).c_str());
  }
  KILN_FUZZ_CHECK(as::contraction_knobs_to_text(again) == printed, "contraction sizes changed on a round trip");
  return 0;
}
