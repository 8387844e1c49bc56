// read_npy (tools/cli/npy.cpp), the .npy files `kiln run --input` reads. Any bytes give a
// tensor or a kiln::Error; a tensor read writes back (write_npy) to a file that reads to
// the same dtype, shape and bytes.
#include <cstdio>
#include <cstring>

#include "cli/npy.h"
#include "core/error.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = fuzz_temp_path("npy") + ".npy", again = fuzz_temp_path("npy2") + ".npy";
  fuzz_write_file(path, data, size);
  try {
    const kiln::Tensor t = kiln::cli::read_npy(path);
    kiln::cli::write_npy(again, t);
    const kiln::Tensor u = kiln::cli::read_npy(again);
    KILN_FUZZ_CHECK(u.dtype() == t.dtype(), "dtype changed through write_npy");
    KILN_FUZZ_CHECK(u.shape() == t.shape(), "shape changed through write_npy");
    const size_t bytes = size_t(t.numel()) * size_t(kiln::dtype_bytes(t.dtype()));
    KILN_FUZZ_CHECK(bytes == 0 || std::memcmp(t.data(), u.data(), bytes) == 0, "data changed through write_npy");
  } catch (const kiln::Error&) {
  }
  std::remove(path.c_str());
  std::remove(again.c_str());
  return 0;
}
