#include "core/memory.h"

#include <atomic>
#include <cstdlib>

namespace kiln {

namespace {

constexpr size_t kAlignment = 128;  // also the header that stores the block's size
std::atomic<int64_t> g_live{0};
std::atomic<int64_t> g_peak{0};

void raise_peak(int64_t live) {
  int64_t peak = g_peak.load(std::memory_order_relaxed);
  while (live > peak && !g_peak.compare_exchange_weak(peak, live, std::memory_order_relaxed)) {
  }
}

}  // namespace

MemoryStats memory_stats() { return {g_live.load(), g_peak.load()}; }

void reset_peak_memory() { g_peak.store(g_live.load()); }

namespace detail {

void* tracked_malloc(size_t bytes) {
  const size_t total = (bytes + 2 * kAlignment - 1) / kAlignment * kAlignment;
  auto* block = static_cast<char*>(std::aligned_alloc(kAlignment, total));
  if (block == nullptr) return nullptr;
  *reinterpret_cast<size_t*>(block) = bytes;
  raise_peak(g_live.fetch_add(int64_t(bytes), std::memory_order_relaxed) + int64_t(bytes));
  return block + kAlignment;
}

void tracked_free(void* ptr) {
  if (ptr == nullptr) return;
  char* block = static_cast<char*>(ptr) - kAlignment;
  g_live.fetch_sub(int64_t(*reinterpret_cast<size_t*>(block)), std::memory_order_relaxed);
  std::free(block);
}

}  // namespace detail

}  // namespace kiln
