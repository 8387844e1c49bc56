// Shared by kiln's parser fuzz targets (tests/fuzz_parsers, docs/testing.md). Each
// target defines LLVMFuzzerTestOneInput: built with clang's -fsanitize=fuzzer it is a
// libFuzzer target (make fuzz-parsers); linked with replay_main.cpp it replays the
// committed corpus with the normal compiler (CTest fuzz_corpus.*).
//
// The rule every target checks: any input gives a value or the parser's own error
// (kiln::Error, or json::ParseError inside the JSON reader); anything else (a crash, a
// sanitizer report, another exception, a hang) is a finding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#define KILN_FUZZ_CHECK(cond, what)                                              \
  do {                                                                           \
    if (!(cond)) {                                                               \
      std::fprintf(stderr, "kiln fuzz: check failed: %s: %s\n", #cond, (what)); \
      std::abort();                                                              \
    }                                                                            \
  } while (0)

inline std::string fuzz_text(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// A file of this process's own for targets whose parser reads a path.
std::string fuzz_temp_path(const char* tag);
void fuzz_write_file(const std::string& path, const uint8_t* data, size_t size);
