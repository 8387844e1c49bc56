/* Builds (and runs without calling the model) a C program against the seed exported by
 * `kiln aot --target host-cuda`: the CUDA library and its header compile and link as C99
 * with -lpthread -ldl alone, on a machine without a GPU or CUDA libraries. */
#include <stdio.h>

#include "seed_cuda.h"

int main(void) {
  int (*entry)(struct halide_buffer_t *, struct halide_buffer_t *) = seed_cuda;
  if (entry == NULL) return 1;
  printf("kiln_aot_cuda_link_check: OK\n");
  return 0;
}
