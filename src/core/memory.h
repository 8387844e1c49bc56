// Bytes of memory held by kiln: tensor storage (wherever the tensor lives, counted once at
// its logical size) plus the host scratch buffers that compiled kernels allocate on the
// heap. Benchmarks read the peak to compare what eager and compiled code need; Halide's
// stack allocations and GPU-side scratch buffers are not counted.
//
// Large host blocks (1 MiB and up) come from a caching allocator, as PyTorch's CUDA
// tensors do: a freed block is kept for the next request of its size instead of being
// unmapped, because a fresh mapping costs a page fault per page on first touch (a 16 MB
// tensor: 4096 faults, several milliseconds) and unmapping shoots down the TLBs of every
// thread. Blocks are 2 MiB aligned and marked for transparent huge pages, which also
// spares the TLB misses of a matmul's strided reads. Cached blocks are not live: they are
// reported apart (`cached_bytes`), bounded by KILN_HOST_CACHE_MB (default 1024, 0 turns
// the cache off) and released by `empty_host_cache()`.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kiln {

struct MemoryStats {
  int64_t live_bytes = 0;    // held right now
  int64_t peak_bytes = 0;    // the most held at once since the last reset_peak_memory()
  int64_t cached_bytes = 0;  // freed large blocks kept for reuse (not live)
};

MemoryStats memory_stats();
// Starts a new peak measurement from what is held now.
void reset_peak_memory();
// Returns every cached block to the operating system.
void empty_host_cache();
// The cache's bound in bytes (from KILN_HOST_CACHE_MB unless set here); 0 turns it off
// and empties it.
void set_host_cache_limit(int64_t bytes);
int64_t host_cache_limit();

namespace detail {
// The cache's bound for a KILN_HOST_CACHE_MB value (null or empty: the default, 1 GiB); a
// value that is not a whole number of megabytes from 0 below 2^43 is reported on stderr and
// gives the default.
int64_t host_cache_limit_from(const char* megabytes);
// malloc/free that keep the counts: 128-byte aligned (what Halide's kernels expect), with
// the size stored in front of the block.
void* tracked_malloc(size_t bytes);
void tracked_free(void* ptr);
}  // namespace detail

}  // namespace kiln
