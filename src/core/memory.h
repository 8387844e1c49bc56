// Bytes of memory held by kiln: tensor storage (wherever the tensor lives, counted once at
// its logical size) plus the host scratch buffers that compiled kernels allocate on the
// heap. Benchmarks read the peak to compare what eager and compiled code need; Halide's
// stack allocations and GPU-side scratch buffers are not counted.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kiln {

struct MemoryStats {
  int64_t live_bytes = 0;  // held right now
  int64_t peak_bytes = 0;  // the most held at once since the last reset_peak_memory()
};

MemoryStats memory_stats();
// Starts a new peak measurement from what is held now.
void reset_peak_memory();

namespace detail {
// malloc/free that keep the counts: 128-byte aligned (what Halide's kernels expect), with
// the size stored in front of the block.
void* tracked_malloc(size_t bytes);
void tracked_free(void* ptr);
}  // namespace detail

}  // namespace kiln
