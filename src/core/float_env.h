// Subnormal floats on the CPU. kiln's JIT kernels (compiled functions and eager ops) run
// with subnormals flushed to zero (x86's FTZ and DAZ bits), as XLA and TensorFlow run on
// CPUs: the tiny gradients and Adam moments of a network that has trained a while are
// otherwise subnormal, and each operation on one takes a microcode assist (~100x slower);
// build/bin/train_mlp measured 6.5 ms per compiled step with IEEE subnormals and 2.4 ms
// flushed. Values below FLT_MIN (1.2e-38; DBL_MIN for f64) become zero. KILN_DENORMALS=keep
// in the environment, or set_flush_denormals(false), keeps IEEE behaviour. GPU kernels
// are not affected (CUDA's own flush-to-zero setting applies there).
#pragma once

namespace kiln {

void set_flush_denormals(bool on);
bool flush_denormals();

namespace detail {

// Sets the calling thread's flush-to-zero state to flush_denormals() for its lifetime,
// then restores the previous one. A no-op where the CPU has no such control.
class ScopedFlushDenormals {
 public:
  ScopedFlushDenormals();
  ~ScopedFlushDenormals();
  ScopedFlushDenormals(const ScopedFlushDenormals&) = delete;
  ScopedFlushDenormals& operator=(const ScopedFlushDenormals&) = delete;

 private:
  unsigned saved_ = 0;
  bool active_ = false;
};

}  // namespace detail
}  // namespace kiln
