// Random, PyTorch-valid programs over every op family, dtype and broadcasting pattern, with
// edge values (zeros of both signs, infinities, NaN, huge, tiny and denormal numbers)
// mixed into the inputs at a per-program rate. Deterministic given the seed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "program.h"

namespace kiln::fuzz {

// Every op the generator knows, in one list (the --ops flag picks from it).
const std::vector<std::string>& all_ops();

struct GenOptions {
  std::vector<std::string> ops;  // the ops to draw from; empty: all_ops()
  int max_ops = 10;
};

Program generate(uint64_t seed, const GenOptions& options = {});

// A small deterministic PRNG (splitmix64), the same on every platform and standard library.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed * 0x9E3779B97F4A7C15ull + 0x1234567ull) {}
  uint64_t next();
  int64_t range(int64_t lo, int64_t hi);  // inclusive
  double unit();                          // [0, 1)
  bool chance(double p) { return unit() < p; }
  template <class T>
  const T& pick(const std::vector<T>& v) {
    return v[size_t(range(0, int64_t(v.size()) - 1))];
  }

 private:
  uint64_t state_;
};

}  // namespace kiln::fuzz
