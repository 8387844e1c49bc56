#include "ops/math/trig.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace kiln::math {

using Halide::Expr;

namespace {

// 2/pi in hexadecimal, 384 bits: 0.a2f9836e... (enough for the largest f32 exponent, 104
// bits dropped as multiples of 4, and 104 kept).
constexpr const char* kTwoOverPi =
    "a2f9836e4e441529fc2757d1f534ddc0db6295993c439041fe5163abdebbc561b7246e3a424dd2e006492eea09d1921cfe1deb1c";

constexpr int kPieces = 3;
constexpr int kPieceBits = 29;
constexpr int kExponents = 254;  // E = -149 (subnormals) ... 104 (the largest f32)

// table(E + 149, k): piece k of (2^E * 2/pi) mod 4, each an exact double of 26 bits.
const Halide::Buffer<double>& two_over_pi_table() {
  static const Halide::Buffer<double> table = [] {
    std::vector<int> bits;  // bits[j]: the bit of weight 2^-(j+1)
    for (const char* c = kTwoOverPi; *c; ++c) {
      const int v = *c <= '9' ? *c - '0' : *c - 'a' + 10;
      for (int b = 3; b >= 0; --b) bits.push_back((v >> b) & 1);
    }
    Halide::Buffer<double> t(kExponents, kPieces, "kiln_two_over_pi");
    for (int i = 0; i < kExponents; ++i) {
      const int e = i - 149;
      // Bits of weight 4 and more (j < e - 2) are whole multiples of 4: dropped.
      const int first = std::max(0, e - 2);
      for (int k = 0; k < kPieces; ++k) {
        double v = 0;
        for (int j = first + kPieceBits * k; j < first + kPieceBits * (k + 1); ++j) {
          if (bits.at(size_t(j))) v += std::ldexp(1.0, e - j - 1);
        }
        t(i, k) = v;
      }
    }
    return t;
  }();
  return table;
}

Expr f64(double v) { return Halide::Internal::make_const(Halide::Float(64), v); }

struct Reduced {
  Expr r;         // |x| - n * pi/2, in [-pi/4, pi/4] (f64)
  Expr quadrant;  // n mod 4 (i32)
};

// |x| reduced modulo pi/2, x an f32 Expr.
Reduced reduce(const Expr& x) {
  using Halide::cast;
  const Expr bits = Halide::reinterpret(Halide::UInt(32, x.type().lanes()), x);
  const Expr e = cast<int32_t>((bits >> 23) & 0xff);
  const Expr m = cast<int32_t>(bits & 0x7fffff);
  const Expr big_m = cast<double>(Halide::select(e == 0, m, m | 0x800000));  // |x| = M * 2^(max(e, 1) - 150)
  const Expr row = Halide::clamp(Halide::max(e, 1) - 1, 0, kExponents - 1);
  const Halide::Buffer<double>& t = two_over_pi_table();
  // Each product exact; the first (below 2^26) and the running sum lose their integer
  // parts exactly (Sterbenz), the later ones are below 1, 2^-24 and 2^-50.
  const Expr p0 = big_m * t(row, 0);
  const Expr r0 = p0 - f64(4) * Halide::round(p0 * f64(0.25));
  const Expr q0 = Halide::round(r0);
  const Expr f1 = (r0 - q0) + big_m * t(row, 1);
  const Expr q1 = Halide::round(f1);
  const Expr f = Halide::strict_float((f1 - q1) + big_m * t(row, 2));
  return {Halide::strict_float(f * f64(1.5707963267948966)), cast<int32_t>(Halide::strict_float(q0 + q1)) & 3};
}

// sin and cos of r in [-pi/4, pi/4] (Taylor to r^11 and r^12: below 3e-9 relative there).
Expr sin_poly(const Expr& r) {
  const Expr z = r * r;
  return r + r * z * (f64(-1.0 / 6) + z * (f64(1.0 / 120) + z * (f64(-1.0 / 5040) + z * (f64(1.0 / 362880) + z * f64(-1.0 / 39916800)))));
}
Expr cos_poly(const Expr& r) {
  const Expr z = r * r;
  return f64(1) + z * (f64(-0.5) + z * (f64(1.0 / 24) + z * (f64(-1.0 / 720) + z * (f64(1.0 / 40320) +
                                  z * (f64(-1.0 / 3628800) + z * f64(1.0 / 479001600))))));
}

thread_local int gpu_lowerings = 0;

bool vectorized(const Expr& x) { return x.type().is_float() && x.type().bits() == 32 && gpu_lowerings == 0; }

Expr finite_or_nan(const Expr& x, const Expr& v) {
  const Expr bits = Halide::reinterpret(Halide::UInt(32, x.type().lanes()), x);
  return Halide::select(((bits >> 23) & 0xff) == 0xff, Halide::reinterpret(x.type(), Halide::Internal::make_const(bits.type(), uint64_t(0x7fc00000))), v);
}

}  // namespace

Expr sin(const Expr& x) {
  if (!vectorized(x)) return Halide::sin(x);
  const Reduced a = reduce(x);
  const Expr s = sin_poly(a.r), c = cos_poly(a.r);
  const Expr v = Halide::select(a.quadrant == 0, s, a.quadrant == 1, c, a.quadrant == 2, -s, -c);
  // sin(-x) = -sin(x), -0 included: the sign bit of x moved onto |x|'s result.
  const Halide::Type u = Halide::UInt(32, x.type().lanes());
  const Expr magnitude = Halide::reinterpret(u, Halide::cast<float>(v));
  const Expr sign = Halide::reinterpret(u, x) & Halide::Internal::make_const(u, uint64_t(0x80000000u));
  return finite_or_nan(x, Halide::reinterpret(x.type(), magnitude ^ sign));
}

Expr tan(const Expr& x) {
  if (!vectorized(x)) return Halide::tan(x);
  const Reduced a = reduce(x);
  const Expr s = sin_poly(a.r), c = cos_poly(a.r);
  // tan(r + n pi/2) is tan(r) for even n and -1 / tan(r) for odd n; odd in x like sin.
  const Expr v = Halide::cast<float>(Halide::select((a.quadrant & 1) == 0, s / c, -c / s));
  const Halide::Type u = Halide::UInt(32, x.type().lanes());
  const Expr sign = Halide::reinterpret(u, x) & Halide::Internal::make_const(u, uint64_t(0x80000000u));
  return finite_or_nan(x, Halide::reinterpret(x.type(), Halide::reinterpret(u, v) ^ sign));
}

Expr tanh(const Expr& x) {
  if (!vectorized(x)) return Halide::tanh(x);
  using Halide::cast;
  // In f64: e = exp(2|x|) as 2^k * exp(r), |r| <= ln2 / 2 (Taylor to r^11: 3e-15 there),
  // then (e - 1) / (e + 1), which loses at most 2^-50 / |2x| relative to cancellation:
  // below |x| = 2^-12 the series x - x^3 / 3 is exact to f32 instead. Past |x| = 10 the
  // f32 result is 1.
  const Expr ax = cast<double>(Halide::min(Halide::abs(x), Halide::Internal::make_const(x.type(), 10.0)));
  const Expr y = ax * f64(2);
  const Expr k = Halide::round(y * f64(1.4426950408889634));
  const Expr r = Halide::strict_float((y - k * f64(0.6931471803691238)) - k * f64(1.9082149292705877e-10));
  Expr p = f64(1.0 / 39916800);
  for (double c : {1.0 / 3628800, 1.0 / 362880, 1.0 / 40320, 1.0 / 5040, 1.0 / 720, 1.0 / 120, 1.0 / 24, 1.0 / 6, 0.5, 1.0, 1.0}) {
    p = p * r + f64(c);
  }
  const Expr two_k = Halide::reinterpret(Halide::Float(64, x.type().lanes()), (cast<int64_t>(k) + 1023) << 52);
  const Expr e = p * two_k;
  const Expr small = ax - ax * ax * ax * f64(1.0 / 3);
  const Expr v = cast<float>(Halide::select(ax < f64(1.0 / 4096), small, Halide::strict_float((e - f64(1)) / (e + f64(1)))));
  const Halide::Type u = Halide::UInt(32, x.type().lanes());
  const Expr sign = Halide::reinterpret(u, x) & Halide::Internal::make_const(u, uint64_t(0x80000000u));
  // NaN stays NaN (told by its bits: fast-math flags may fold a float test); +-inf gives +-1.
  const Expr nan = (Halide::reinterpret(u, x) & Halide::Internal::make_const(u, uint64_t(0x7fffffffu))) >
                   Halide::Internal::make_const(u, uint64_t(0x7f800000u));
  return Halide::select(nan, x, Halide::reinterpret(x.type(), Halide::reinterpret(u, v) ^ sign));
}

Expr cos(const Expr& x) {
  if (!vectorized(x)) return Halide::cos(x);
  const Reduced a = reduce(x);
  const Expr s = sin_poly(a.r), c = cos_poly(a.r);
  const Expr v = Halide::select(a.quadrant == 0, c, a.quadrant == 1, -s, a.quadrant == 2, -c, s);
  return finite_or_nan(x, Halide::cast<float>(v));
}

bool lowering_for_gpu() { return gpu_lowerings > 0; }

ScopedGpuMath::ScopedGpuMath(bool gpu) : gpu_(gpu) {
  if (gpu_) ++gpu_lowerings;
}

ScopedGpuMath::~ScopedGpuMath() {
  if (gpu_) --gpu_lowerings;
}

}  // namespace kiln::math
