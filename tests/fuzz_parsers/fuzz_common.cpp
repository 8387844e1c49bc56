#include "fuzz_common.h"

#include <unistd.h>

std::string fuzz_temp_path(const char* tag) {
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir && *dir ? dir : "/tmp") + "/kiln_fuzz_" + tag + "." + std::to_string(getpid());
}

void fuzz_write_file(const std::string& path, const uint8_t* data, size_t size) {
  FILE* f = std::fopen(path.c_str(), "wb");
  KILN_FUZZ_CHECK(f != nullptr, path.c_str());
  KILN_FUZZ_CHECK(size == 0 || std::fwrite(data, 1, size, f) == size, path.c_str());
  std::fclose(f);
}
