// json::parse (autoscheduler/json.cpp), the reader under the tuning database and the
// contraction sizes of schedule files. A text either parses or throws json::ParseError;
// what parses prints back (json::dump) to text that parses to the same print.
#include "fuzz_common.h"
#include "json.h"

namespace json = kiln::autoschedule::json;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  json::Value v;
  try {
    v = json::parse(fuzz_text(data, size));
  } catch (const json::ParseError&) {
    return 0;
  }
  const std::string printed = json::dump(v);
  std::string again;
  try {
    again = json::dump(json::parse(printed));
  } catch (const json::ParseError& e) {
    KILN_FUZZ_CHECK(false, ("json::dump wrote text json::parse rejects: " + e.message).c_str());
  }
  KILN_FUZZ_CHECK(again == printed, "json::dump(json::parse(json::dump(v))) != json::dump(v)");
  return 0;
}
