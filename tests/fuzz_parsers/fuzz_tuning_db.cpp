// TuningDb::load (autoscheduler/tuning_db.cpp): the tuning database file, read by the
// Kiln autoscheduler, `kiln tune` and the plugin inside generators. Any file is loaded
// as entries or ignored with a warning; a database that loads saves and loads again to
// the same entries.
#include <iostream>
#include <sstream>

#include "fuzz_common.h"
#include "core/error.h"
#include "tuning_db.h"

namespace as = kiln::autoschedule;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = fuzz_temp_path("tuning_db.json"), saved = fuzz_temp_path("tuning_db_saved.json");
  static std::ostringstream sink;
  std::streambuf* old = std::cerr.rdbuf(sink.rdbuf());  // load's warnings, every run
  fuzz_write_file(path, data, size);
  const as::TuningDb db = as::TuningDb::load(path);
  sink.str("");
  if (db.warning().empty()) {
    std::remove(saved.c_str());
    as::TuningDb out = as::TuningDb::load(saved);  // a missing file: empty
    for (const as::TuningEntry& e : db.entries()) out.put(e);
    try {
      out.save();
    } catch (const kiln::Error& e) {
      KILN_FUZZ_CHECK(false, e.what());
    }
    const as::TuningDb back = as::TuningDb::load(saved);
    KILN_FUZZ_CHECK(back.warning().empty(), back.warning().c_str());
    KILN_FUZZ_CHECK(back.entries().size() == out.entries().size(), "a saved database lost entries");
    std::remove(saved.c_str());
  }
  sink.str("");
  std::cerr.rdbuf(old);
  return 0;
}
