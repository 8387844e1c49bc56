#include "core/memory.h"

#include <sys/mman.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <mutex>
#include <unordered_map>
#include <string>

#include "core/error.h"

namespace kiln {

namespace {

constexpr size_t kAlignment = 128;  // also the header that stores the block's size
constexpr size_t kLargeBlock = size_t(1) << 20;  // from here on, blocks are cached
constexpr size_t kHugePage = size_t(2) << 20;    // large blocks start on one
constexpr size_t kPage = size_t(4) << 10;         // and are whole pages

std::atomic<int64_t> g_live{0};
std::atomic<int64_t> g_peak{0};

void raise_peak(int64_t live) {
  int64_t peak = g_peak.load(std::memory_order_relaxed);
  while (live > peak && !g_peak.compare_exchange_weak(peak, live, std::memory_order_relaxed)) {
  }
}

}  // namespace

int64_t detail::host_cache_limit_from(const char* v) {
  if (v == nullptr || *v == '\0') return int64_t(1024) << 20;
  char* end = nullptr;
  errno = 0;
  const long long mb = std::strtoll(v, &end, 10);
  // From 2^43 MB on, the byte count overflows int64.
  if (*end != '\0' || mb < 0 || errno == ERANGE || mb > (std::numeric_limits<int64_t>::max() >> 20)) {
    // Read inside an allocation, where an exception could cross Halide's C runtime: say
    // so and keep the default.
    std::fprintf(stderr, "kiln: KILN_HOST_CACHE_MB must be a whole number of megabytes from 0 (the host cache "
                         "off) below 2^43, not '%s'; using 1024\n", v);
    return int64_t(1024) << 20;
  }
  return int64_t(mb) << 20;
}

namespace {

int64_t limit_from_environment() { return detail::host_cache_limit_from(std::getenv("KILN_HOST_CACHE_MB")); }

// Small blocks carry their size in a header in front of the data; large ones start on a
// huge page (the kernel backs each whole 2 MiB of them with one) and their sizes are kept
// by the cache, so that the data starts at the block's start.
size_t small_size(size_t bytes) { return (bytes + 2 * kAlignment - 1) / kAlignment * kAlignment; }
size_t large_size(size_t bytes) { return (bytes + kPage - 1) / kPage * kPage; }

// `total` bytes starting on a huge page. Not std::aligned_alloc: C11 requires its size to
// be a multiple of the alignment, and `total` is whole 4 KiB pages (AddressSanitizer
// rejects the call: make test-sanitize).
void* huge_page_alloc(size_t total) {
  void* block = nullptr;
  return posix_memalign(&block, kHugePage, total) == 0 ? block : nullptr;
}

// Free large blocks by their (rounded) size. Requests of a size seen before, which is
// every call of a compiled function or an eager step after the first, find one here.
class HostCache {
 public:
  HostCache() : limit_(limit_from_environment()) {}

  static HostCache& get() {
    static HostCache* cache = new HostCache;  // never destroyed: tensors outlive statics
    return *cache;
  }

  // A block of `total` bytes for a request of `bytes`: a cached one if there is one.
  void* allocate(size_t bytes, size_t total) {
    void* block = take(total);
    if (block == nullptr) {
      block = huge_page_alloc(total);
      if (block == nullptr) {
        // Out of memory, perhaps for want of what the cache holds in other sizes.
        release(0);
        block = huge_page_alloc(total);
      }
      if (block == nullptr) return nullptr;
      // Advice only: without transparent huge pages the block works with 4 KiB pages.
      madvise(block, total, MADV_HUGEPAGE);
    }
    std::lock_guard<std::mutex> lock(mu_);
    live_.emplace(block, bytes);
    return block;
  }

  // The bytes asked for when `ptr` was allocated here, or 0 if it is not a large block.
  size_t live_size(void* ptr) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = live_.find(ptr);
    return it == live_.end() ? 0 : it->second;
  }

  void deallocate(void* block, size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      live_.erase(block);
    }
    if (!keep(block, large_size(bytes))) std::free(block);
  }

  void* take(size_t total) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = free_.find(total);
    if (it == free_.end()) return nullptr;
    void* block = it->second.block;
    free_.erase(it);
    cached_ -= int64_t(total);
    return block;
  }

  // Keeps `block`, making room by giving back the blocks freed longest ago (sizes no
  // longer asked for); false when it alone exceeds the limit: the caller frees it.
  bool keep(void* block, size_t total) {
    std::lock_guard<std::mutex> lock(mu_);
    if (int64_t(total) > limit()) return false;
    while (cached_ + int64_t(total) > limit() && !free_.empty()) {
      auto oldest = free_.begin();
      for (auto it = free_.begin(); it != free_.end(); ++it)
        if (it->second.stamp < oldest->second.stamp) oldest = it;
      give_back(oldest);
    }
    free_.emplace(total, Cached{block, ++clock_});
    cached_ += int64_t(total);
    return true;
  }

  void release(int64_t keep_at_most) {
    std::lock_guard<std::mutex> lock(mu_);
    while (cached_ > keep_at_most && !free_.empty()) give_back(std::prev(free_.end()));
  }

  int64_t cached() {
    std::lock_guard<std::mutex> lock(mu_);
    return cached_;
  }

  int64_t limit() { return limit_.load(); }
  void set_limit(int64_t bytes) {
    limit_ = bytes;
    release(bytes);
  }

 private:
  struct Cached {
    void* block;
    uint64_t stamp;  // when it was freed: the oldest goes first
  };
  using Blocks = std::multimap<size_t, Cached>;

  void give_back(Blocks::iterator it) {
    cached_ -= int64_t(it->first);
    std::free(it->second.block);
    free_.erase(it);
  }

  std::mutex mu_;
  Blocks free_;
  std::unordered_map<void*, size_t> live_;  // large blocks in use -> bytes asked for
  uint64_t clock_ = 0;
  int64_t cached_ = 0;
  std::atomic<int64_t> limit_;
};

}  // namespace

MemoryStats memory_stats() { return {g_live.load(), g_peak.load(), HostCache::get().cached()}; }

void reset_peak_memory() { g_peak.store(g_live.load()); }

void empty_host_cache() { HostCache::get().release(0); }

void set_host_cache_limit(int64_t bytes) {
  if (bytes < 0) user_error("set_host_cache_limit: the limit is a byte count, at least 0, not ", bytes);
  HostCache::get().set_limit(bytes);
}

int64_t host_cache_limit() { return HostCache::get().limit(); }

namespace detail {

void* tracked_malloc(size_t bytes) {
  char* data;
  if (bytes >= kLargeBlock) {
    data = static_cast<char*>(HostCache::get().allocate(bytes, large_size(bytes)));
  } else {
    auto* block = static_cast<char*>(std::aligned_alloc(kAlignment, small_size(bytes)));
    if (block != nullptr) *reinterpret_cast<size_t*>(block) = bytes;
    data = block == nullptr ? nullptr : block + kAlignment;
  }
  if (data == nullptr) return nullptr;
  raise_peak(g_live.fetch_add(int64_t(bytes), std::memory_order_relaxed) + int64_t(bytes));
  return data;
}

void tracked_free(void* ptr) {
  if (ptr == nullptr) return;
  // Large blocks start on a huge page; a small block's data rarely does, so it is freed
  // without the cache's lock (a compiled kernel's tasks free their scratch in parallel).
  const bool maybe_large = reinterpret_cast<uintptr_t>(ptr) % kHugePage == 0;
  if (const size_t bytes = maybe_large ? HostCache::get().live_size(ptr) : 0) {
    g_live.fetch_sub(int64_t(bytes), std::memory_order_relaxed);
    HostCache::get().deallocate(ptr, bytes);
    return;
  }
  char* block = static_cast<char*>(ptr) - kAlignment;
  g_live.fetch_sub(int64_t(*reinterpret_cast<size_t*>(block)), std::memory_order_relaxed);
  std::free(block);
}

}  // namespace detail

}  // namespace kiln
