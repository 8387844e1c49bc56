/* The weights loader `kiln aot` writes (<name>_weights_load in <name>_weights.h,
 * src/lower/aot_files.cpp): the C a user compiles into their program to read
 * <name>.weights. Any file is loaded (every buffer inside the file's bytes, of the size the
 * model expects) or refused with -1; never a read out of bounds. The loader is generated
 * for a made-up model (gen_weights_header.cpp). C99, as users compile it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The loader reports a refused file on stderr; here that goes to /dev/null (not by
 * closing stderr, where the sanitizers report). */
static FILE *kiln_fuzz_quiet(void) {
  static FILE *null_file;
  if (!null_file) null_file = fopen("/dev/null", "w");
  return null_file;
}
#undef stderr
#define stderr kiln_fuzz_quiet()
#include "fuzzmodel_weights.h"
#undef stderr
#define stderr stderr

/* The loader's free function releases device copies through Halide's runtime; loaded
 * buffers never have one here. */
int halide_device_free(void *user_context, struct halide_buffer_t *buf) {
  (void)user_context;
  (void)buf;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static char path[256];
  fuzzmodel_weights w;
  FILE *f;
  int k;
  if (!path[0]) {
    const char *dir = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/kiln_fuzz_weights.%ld", dir && *dir ? dir : "/tmp", (long)getpid());
  }
  f = fopen(path, "wb");
  if (!f || (size && fwrite(data, 1, size, f) != size)) abort();
  fclose(f);
  if (fuzzmodel_weights_load(&w, path) == 0) {
    for (k = 0; k < FUZZMODEL_NUM_WEIGHTS; ++k) {
      const struct halide_buffer_t *b = &w.buffers[k];
      uint64_t bytes = (uint64_t)(b->type.bits / 8) * (uint64_t)b->type.lanes, n = 1;
      int j;
      for (j = 0; j < b->dimensions; ++j) n *= (uint64_t)b->dim[j].extent;
      bytes *= n;
      /* Touch every byte: ASan reports a buffer past the file's. */
      if (bytes) {
        volatile uint8_t sum = 0;
        uint64_t i;
        for (i = 0; i < bytes; ++i) sum ^= b->host[i];
        (void)sum;
      }
      if ((uintptr_t)b->host % 64 != (uintptr_t)w.storage % 64) abort(); /* 64-aligned within the file */
    }
    fuzzmodel_weights_free(&w);
  }
  unlink(path);
  return 0;
}
