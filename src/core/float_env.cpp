#include "core/float_env.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__) || defined(__SSE__)
#include <xmmintrin.h>
#define KILN_HAS_MXCSR 1
#endif

namespace kiln {

namespace {

std::atomic<bool>& flag() {
  static std::atomic<bool> on = [] {
    const char* env = std::getenv("KILN_DENORMALS");
    return !(env && std::strcmp(env, "keep") == 0);
  }();
  return on;
}

#ifdef KILN_HAS_MXCSR
constexpr unsigned kFlushToZero = 0x8000, kDenormalsAreZero = 0x0040;  // MXCSR bits 15, 6
#endif

}  // namespace

void set_flush_denormals(bool on) { flag() = on; }
bool flush_denormals() { return flag(); }

namespace detail {

// Sets the state either way: Halide's worker threads inherit the state of the thread
// that started them, so a worker started inside a flushing call would otherwise keep
// flushing after set_flush_denormals(false).
ScopedFlushDenormals::ScopedFlushDenormals() {
#ifdef KILN_HAS_MXCSR
  saved_ = _mm_getcsr();
  const unsigned bits = kFlushToZero | kDenormalsAreZero;
  _mm_setcsr(flush_denormals() ? (saved_ | bits) : (saved_ & ~bits));
  active_ = true;
#endif
}

ScopedFlushDenormals::~ScopedFlushDenormals() {
#ifdef KILN_HAS_MXCSR
  if (active_) _mm_setcsr(saved_);
#endif
}

}  // namespace detail
}  // namespace kiln
