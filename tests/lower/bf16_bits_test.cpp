// bf16 conversions as bit operations (lower/bf16_bits.h), checked on the CPU against
// references written here with no Halide, and the CUDA code generation they exist for.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>

#include "kiln.h"
#include "lower/bf16_bits.h"
#include "lower/kernel.h"
#include "lower/target.h"

using namespace kiln;

namespace {

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
// The value of a bf16 pattern as a double; the pattern past the largest finite one
// (0x7f80) counts as 2^128, the value that rounding to nearest overflows to.
double bf16_value(uint16_t b) {
  const int e = (b >> 7) & 0xff, m = b & 0x7f;
  const double mag = e == 0 ? std::ldexp(m, -133) : std::ldexp(128 + m, e - 134);
  return (b & 0x8000) ? -mag : mag;
}
// The nearest 16-bit pattern to a finite or infinite d, ties to the even pattern, for a
// format whose non-negative patterns increase with `value` up to `inf` (its infinity).
uint16_t nearest_pattern(double d, uint16_t inf, double (*value)(uint16_t)) {
  const uint16_t sign = std::signbit(d) ? 0x8000 : 0;
  const double a = std::fabs(d);
  if (std::isinf(a)) return sign | inf;
  // Largest non-negative pattern p <= inf with value(p) <= a.
  uint16_t lo = 0, hi = inf;
  while (lo < hi) {
    const uint16_t mid = uint16_t((lo + hi + 1) / 2);
    if (value(mid) <= a) lo = mid; else hi = uint16_t(mid - 1);
  }
  if (lo == inf) return sign | inf;
  const double below = value(lo), above = value(uint16_t(lo + 1));
  uint16_t p = lo;
  if (a - below > above - a || (a - below == above - a && (lo & 1))) p = uint16_t(lo + 1);
  return sign | p;
}
uint16_t nearest_bf16(double d) { return nearest_pattern(d, 0x7f80, bf16_value); }

template <typename In>
Halide::Buffer<uint16_t> to_bf16_on_cpu(const std::vector<In>& values, Halide::Type source) {
  Halide::Buffer<In> in(int(values.size()));
  std::copy(values.begin(), values.end(), in.data());
  Halide::Var x;
  Halide::Func f("to_bf16");
  f(x) = Halide::reinterpret(Halide::UInt(16), Halide::cast(Halide::BFloat(16), Halide::reinterpret(source, in(x))));
  lower_bf16_casts({f});
  return f.realize({int(values.size())});
}

// The value of an f16 pattern as a double; 0x7c00 (inf) counts as 2^16, the value that
// rounding to nearest overflows to.
double f16_value(uint16_t b) {
  const int e = (b >> 10) & 0x1f, m = b & 0x3ff;
  const double mag = e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25);
  return (b & 0x8000) ? -mag : mag;
}
uint16_t nearest_f16(double d) { return nearest_pattern(d, 0x7c00, f16_value); }

// Casts to f16 as CUDA targets lower them (lower_bf16_casts), run on the CPU, `lanes`
// wide (the vector form is what the NVPTX back end got wrong).
template <typename In>
Halide::Buffer<uint16_t> to_f16_on_cpu(const std::vector<In>& values, Halide::Type source, int lanes) {
  Halide::Buffer<In> in(int(values.size()));
  std::copy(values.begin(), values.end(), in.data());
  Halide::Var x;
  Halide::Func f("to_f16");
  f(x) = Halide::reinterpret(Halide::UInt(16), Halide::cast(Halide::Float(16), Halide::reinterpret(source, in(x))));
  lower_bf16_casts({f});
  if (lanes > 1) f.vectorize(x, lanes, Halide::TailStrategy::GuardWithIf);
  return f.realize({int(values.size())});
}

TEST(Bf16Bits, EveryBf16WidensToItsF32Exactly) {
  Halide::Buffer<uint16_t> in(65536);
  for (int i = 0; i < 65536; ++i) in(i) = uint16_t(i);
  Halide::Var x;
  Halide::Func f("widen");
  f(x) = Halide::reinterpret(Halide::UInt(32), Halide::cast(Halide::Float(32), Halide::reinterpret(Halide::BFloat(16), in(x))));
  lower_bf16_casts({f});
  Halide::Buffer<uint32_t> out = f.realize({65536});
  for (int i = 0; i < 65536; ++i) ASSERT_EQ(out(i), uint32_t(i) << 16) << std::hex << i;
}

TEST(Bf16Bits, F32RoundsToTheNearestEvenBf16) {
  // Every upper half with lower halves at and around the tie, and random ones.
  std::vector<uint32_t> v;
  std::mt19937 rng(7);
  for (uint32_t hi = 0; hi < 65536; ++hi) {
    for (uint32_t lo : {0x0000u, 0x0001u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu, uint32_t(rng() & 0xffff)}) v.push_back(hi << 16 | lo);
  }
  Halide::Buffer<uint16_t> out = to_bf16_on_cpu(v, Halide::Float(32));
  for (size_t i = 0; i < v.size(); ++i) {
    const float f = float_of(v[i]);
    const uint16_t want = std::isnan(f) ? uint16_t((v[i] >> 16) | 0x40) : nearest_bf16(double(f));
    ASSERT_EQ(out(int(i)), want) << std::hex << "f32 0x" << v[i] << " (" << f << ")";
  }
}

TEST(Bf16Bits, F64AndIntegersRoundOnceNotTwice) {
  // Just above and below the midpoints between neighbouring bf16s: rounding to f32 first
  // would land on the midpoint and then round it to even, the wrong way half the time.
  std::vector<double> d = {0.0, -0.0, INFINITY, -INFINITY, 1e-45, 1e-39, 3.4e38, 3.3961e38, 3.3963e38, 1e300, -1e300,
                           1e-300};
  std::mt19937 rng(11);
  for (int i = 0; i < 20000; ++i) {
    const uint16_t p = uint16_t(rng() % 0x7f7f);
    const double mid = (bf16_value(p) + bf16_value(uint16_t(p + 1))) / 2;
    for (double eps : {-1e-12, 1e-12, 0.0}) d.push_back((rng() & 1 ? -1 : 1) * mid * (1 + eps));
  }
  Halide::Buffer<uint16_t> out = to_bf16_on_cpu(d, Halide::Float(64));
  for (size_t i = 0; i < d.size(); ++i) ASSERT_EQ(out(int(i)), nearest_bf16(d[i])) << "f64 " << d[i];
  std::vector<int32_t> n = {0, 1, -1, 255, 257, 16777217, -16777217, 2147483647, -2147483647 - 1};
  for (int i = 0; i < 20000; ++i) n.push_back(int32_t(rng()));
  Halide::Buffer<uint16_t> out_n = to_bf16_on_cpu(n, Halide::Int(32));
  for (size_t i = 0; i < n.size(); ++i) ASSERT_EQ(out_n(int(i)), nearest_bf16(double(n[i]))) << "i32 " << n[i];
}

TEST(Bf16Bits, F32RoundsToTheNearestEvenF16) {
  // Every upper half with lower halves at and around f16's rounding point (bit 13 of a
  // normal; further up for subnormals), and random ones; scalar and 8 lanes wide.
  std::vector<uint32_t> v;
  std::mt19937 rng(9);
  for (uint32_t hi = 0; hi < 65536; ++hi) {
    for (uint32_t lo : {0x0000u, 0x0fffu, 0x1000u, 0x1001u, 0x2000u, 0x3000u, 0xffffu, uint32_t(rng() & 0xffff)}) {
      v.push_back(hi << 16 | lo);
    }
  }
  for (int lanes : {1, 8}) {
    Halide::Buffer<uint16_t> out = to_f16_on_cpu(v, Halide::Float(32), lanes);
    for (size_t i = 0; i < v.size(); ++i) {
      const float f = float_of(v[i]);
      if (std::isnan(f)) {
        ASSERT_EQ(out(int(i)) & 0x7e00, 0x7e00) << std::hex << "f32 0x" << v[i] << " must give a quiet NaN";
        ASSERT_EQ(out(int(i)) & 0x8000, (v[i] >> 16) & 0x8000) << std::hex << "f32 0x" << v[i] << ": the sign";
        continue;
      }
      ASSERT_EQ(out(int(i)), nearest_f16(double(f))) << std::hex << "f32 0x" << v[i] << " (" << f << "), lanes " << lanes;
    }
  }
  // f64 and i32 sources round once (through f32 rounded to odd).
  std::vector<double> d = {0.0, -0.0, INFINITY, -INFINITY, 65504.0, 65519.99, 65520.0, 1e-8, 2.98e-8, 5.96e-8, 1e300};
  for (int i = 0; i < 20000; ++i) {
    const uint16_t p = uint16_t(rng() % 0x7bff);
    const double mid = (f16_value(p) + f16_value(uint16_t(p + 1))) / 2;
    for (double eps : {-1e-12, 1e-12, 0.0}) d.push_back((rng() & 1 ? -1 : 1) * mid * (1 + eps));
  }
  Halide::Buffer<uint16_t> out = to_f16_on_cpu(d, Halide::Float(64), 4);
  for (size_t i = 0; i < d.size(); ++i) ASSERT_EQ(out(int(i)), nearest_f16(d[i])) << "f64 " << d[i];
}

TEST(Bf16Bits, EveryF16WidensToItsF32Exactly) {
  Halide::Buffer<uint16_t> in(65536);
  for (int i = 0; i < 65536; ++i) in(i) = uint16_t(i);
  Halide::Var x;
  Halide::Func f("widen_f16");
  f(x) = Halide::reinterpret(Halide::UInt(32), f16_bits_to_f32(Halide::reinterpret(Halide::Float(16), in(x))));
  Halide::Buffer<uint32_t> out = f.realize({65536});
  for (int i = 0; i < 65536; ++i) {
    const int e = (i >> 10) & 0x1f, m = i & 0x3ff;
    const double mag = e == 31 ? (m ? NAN : INFINITY) : e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25);
    const float want = float((i & 0x8000) ? -mag : mag);
    if (std::isnan(want)) {
      ASSERT_EQ(out(i), (uint32_t(i & 0x8000) << 16) | 0x7f800000u | (uint32_t(m) << 13)) << std::hex << i;  // payload kept
    } else {
      ASSERT_EQ(out(i), bits_of(want)) << std::hex << i;
    }
  }
}

// Halide 21's CUDA back end aborts the process (an LLVM assertion) on a cast to or from
// bf16: kiln must never hand it one. Code generation only, so it runs without a GPU.
TEST(Bf16Bits, Bf16ModelsAndEveryCastGenerateCudaCode) {
  const Halide::Target cuda = parse_target("host-cuda");
  auto mlp = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{layer_norm(softmax(matmul(gelu(matmul(in[0], in[1])), in[2]), -1), {8})};
  };
  std::vector<Tensor> in = {cast(randn({16, 8}, 1), DType::BF16), cast(randn({8, 32}, 2), DType::BF16),
                            cast(randn({32, 8}, 3), DType::BF16)};
  std::vector<std::pair<std::string, Graph>> graphs = {{"mlp", trace(mlp, in)}};
  for (DType t : {DType::F64, DType::F32, DType::F16, DType::I32, DType::I64, DType::Bool}) {
    auto both_ways = [t](const std::vector<Tensor>& v) {
      return std::vector<Tensor>{cast(v[0], t), cast(cast(v[0], t), DType::BF16), cast(v[1], DType::BF16)};
    };
    graphs.push_back({dtype_name(t), trace(both_ways, {in[0], cast(randn({16, 8}, 4), t)})});
  }
  for (auto& [name, g] : graphs) {
    SCOPED_TRACE(name);
    EXPECT_NO_THROW({
      LoweredGraph lowered = lower_and_schedule(g, cuda);
      lowered.pipeline().compile_to_module(lowered.arguments(), "bf16_" + name, cuda);
    });
  }
}

}  // namespace
