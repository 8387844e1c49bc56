#include "ops/math/ieee.h"

#include <cmath>
#include <limits>

#include "ops/op.h"

namespace kiln::math {

using Halide::Expr;

namespace {

Expr constant(Halide::Type t, double v) { return algo::constant(t, v); }

// The largest x with a finite exp(x), and the smallest with a non-zero one (denormals
// included), per type.
double overflow_threshold(Halide::Type t) { return t.bits() == 64 ? 709.782712893384 : 88.72283935546875; }
double underflow_threshold(Halide::Type t) { return t.bits() == 64 ? -745.1332191019412 : -103.97208404541016; }

Expr bits_of(const Expr& x) { return Halide::reinterpret(Halide::UInt(x.type().bits(), x.type().lanes()), x); }
// v with its sign bit flipped where `flip` holds: a negation that survives the fast-math
// flags, which let a plain -0.0 become +0.0.
Expr flip_sign(const Expr& flip, const Expr& v) {
  const Halide::Type u = Halide::UInt(v.type().bits(), v.type().lanes());
  const Expr sign = Halide::Internal::make_const(u, uint64_t(1) << (v.type().bits() - 1));
  return Halide::reinterpret(v.type(), Halide::reinterpret(u, v) ^ Halide::select(flip, sign, Halide::Internal::make_const(u, 0)));
}

Expr abs_bits(const Expr& x) {
  const uint64_t mask = (uint64_t(1) << (x.type().bits() - 1)) - 1;
  return bits_of(x) & Halide::Internal::make_const(bits_of(x).type(), mask);
}
Expr inf_bits(const Halide::Type& t) {
  const uint64_t inf = t.bits() == 64 ? 0x7ff0000000000000ull : t.bits() == 32 ? 0x7f800000ull : t.is_bfloat() ? 0x7f80ull : 0x7c00ull;
  return Halide::Internal::make_const(Halide::UInt(t.bits(), t.lanes()), inf);
}

}  // namespace

Expr infinity(Halide::Type t) { return constant(t, std::numeric_limits<double>::infinity()); }
Expr quiet_nan(Halide::Type t) { return constant(t, std::numeric_limits<double>::quiet_NaN()); }
Expr is_inf(const Expr& x) {
  const Expr n = algo::classified(x);
  return abs_bits(n) == inf_bits(n.type());
}
Expr is_finite(const Expr& x) {
  const Expr n = algo::classified(x);
  return abs_bits(n) < inf_bits(n.type());
}
Expr sign_bit(const Expr& x) {
  const Expr n = algo::classified(x);
  return Halide::reinterpret(Halide::Int(n.type().bits(), n.type().lanes()), n) < 0;
}

Expr exp(const Expr& x) {
  const Halide::Type t = x.type();
  // Below the smallest normal result Halide's exp would build 2^k in an exponent field that
  // cannot hold it (exp(-95.0f) came out 0, not 5.5e-42): exp(x + 64 ln2) * 2^-64 instead,
  // which rounds into the subnormals as IEEE does (and to zero where kiln flushes them).
  // One exp per element: a select of two exps computes both (it doubled the seed's time on
  // the GPU and its exp's on the CPU); the scale by 1 leaves a normal result exact.
  const double normal_limit = t.bits() == 64 ? -708.3964185322641 : -87.33654475055310898657;
  const Expr tiny = Halide::strict_float(x < constant(t, normal_limit));
  const Expr arg = Halide::select(tiny, Halide::strict_float(x + constant(t, 64 * 0.6931471805599453)), x);
  const Expr scaled = Halide::strict_float(Halide::exp(arg) * Halide::select(tiny, constant(t, std::ldexp(1.0, -64)), constant(t, 1)));
  Expr y = Halide::select(Halide::strict_float(x > constant(t, overflow_threshold(t))), infinity(t),
                          Halide::strict_float(x < constant(t, underflow_threshold(t))), constant(t, 0), scaled);
  return algo::propagate_nan(x, y);
}

namespace {

// Halide's log reads the exponent field, which a subnormal lacks (log of 1e-40f came out
// near -88, not -92): a positive subnormal is scaled into the normal range first.
Expr log_of_normalized(const Expr& x) {
  const Halide::Type t = x.type();
  const int k = t.bits() == 64 ? 54 : 24;  // more than the mantissa's bits
  const double smallest_normal = t.bits() == 64 ? 2.2250738585072014e-308 : 1.1754943508222875e-38;
  const Expr subnormal = Halide::strict_float(x > constant(t, 0)) && Halide::strict_float(x < constant(t, smallest_normal));
  // One log per element, as exp above.
  const Expr l = Halide::log(Halide::select(subnormal, Halide::strict_float(x * constant(t, std::ldexp(1.0, k))), x));
  return Halide::select(subnormal, Halide::strict_float(l - constant(t, k * 0.6931471805599453)), l);
}

}  // namespace

Expr log(const Expr& x) {
  // Halide's log gives NaN below 0 and -inf at 0 already; +inf and NaN pass through.
  return Halide::select(algo::is_nan(x) || algo::is_pos_inf(x), x, log_of_normalized(x));
}

Expr log1p(const Expr& x) {
  const Expr one = constant(x.type(), 1.0);
  // Strict: under the fast-math rules (1 + x) - 1 is x, and the correction vanishes.
  const Expr u = Halide::strict_float(one + x);
  const Expr corrected = Halide::strict_float(Halide::log(u) * x / (u - one));
  return Halide::select(Halide::strict_float(u == one) || algo::is_pos_inf(x), x, corrected);
}

Expr divide(const Expr& a, const Expr& b) {
  const Halide::Type t = b.type();
  const Expr b_zero = b == constant(t, 0);  // folds where b is a constant
  const Expr signed_inf = Halide::select(sign_bit(b), -infinity(t), infinity(t));
  return Halide::select(b_zero, a * signed_inf, a / Halide::select(b_zero, constant(t, 1), b));
}

Expr erf_f64(const Expr& x) {
  const Halide::Type t = Halide::Float(64, x.type().lanes());
  const Expr ax = Halide::min(Halide::abs(Halide::cast(t, x)), constant(t, 6.0));
  const double two_over_sqrt_pi = 1.1283791670955126;
  // Series: erf(x) = 2/sqrt(pi) * sum_n (-1)^n x^(2n+1) / (n! (2n+1)); 40 terms reach
  // 1e-16 at |x| = 2 (the terms peak near 1.2 there, so little cancels).
  Expr term = ax, series = constant(t, 0);
  for (int n = 0; n < 40; ++n) {
    series = series + term / constant(t, 2 * n + 1);
    term = term * (-ax * ax) / constant(t, n + 1);
  }
  series = series * constant(t, two_over_sqrt_pi);
  const Expr tail = constant(t, 1.0) - erfc_tail_f64(Halide::max(ax, constant(t, 2.0)));
  const Expr magnitude = Halide::strict_float(Halide::select(ax < constant(t, 2.0), series, tail));
  return Halide::cast(x.type(), flip_sign(sign_bit(x), magnitude));
}

Expr erfc_tail_f64(const Expr& z) {
  const Halide::Type t = z.type();
  // erfc(z) = exp(-z^2) / sqrt(pi) / (z + (1/2) / (z + 1 / (z + (3/2) / (z + ...)))).
  Expr cf = z;
  for (int k = 60; k >= 1; --k) cf = z + constant(t, k / 2.0) / cf;
  return Halide::exp(-z * z) * constant(t, 0.5641895835477563) / cf;
}

Expr sigmoid(const Expr& x) {
  const Halide::Type t = x.type();
  // From e = exp(-|x|) <= 1: 1 / (1 + e) for x >= 0, e / (1 + e) below, so that a large
  // negative x gives its tiny (subnormal) value, not 1 / (1 + inf) = 0.
  const Expr e = kiln::math::exp(-Halide::abs(x));
  const Expr one = constant(t, 1);
  return Halide::select(sign_bit(x), e, one) / (one + e);
}

Expr pow(const Expr& x, const Expr& y) {
  const Halide::Type t = x.type();
  const Expr one = constant(t, 1), zero = constant(t, 0), inf = infinity(t), nan = quiet_nan(t);
  const Expr ax = Halide::abs(x), ay = Halide::abs(y);
  // Every float at or above 2^mantissa is an even integer.
  const double all_even = t.bits() == 64 ? 9007199254740992.0 : 16777216.0;
  const Expr y_is_int = Halide::strict_float(Halide::floor(y) == y);
  const Expr y_is_odd =
      y_is_int && Halide::strict_float(ay < constant(t, all_even)) &&
      Halide::strict_float(Halide::floor(y * constant(t, 0.5)) * constant(t, 2) != y);
  const Expr x_negative = sign_bit(x);

  // |x|^y for finite non-zero |x| and finite y, guarding Halide's polynomial against
  // overflow and underflow (it wraps to 0 or a finite value there).
  // (Halide's pow, like its log, is wrong for a subnormal base: exp(y log x) there.)
  const double smallest_normal = t.bits() == 64 ? 2.2250738585072014e-308 : 1.1754943508222875e-38;
  const Expr z = Halide::strict_float(y * log_of_normalized(ax));
  Expr magnitude = Halide::select(Halide::strict_float(z > constant(t, overflow_threshold(t))), inf,
                                  Halide::strict_float(z < constant(t, underflow_threshold(t))), zero,
                                  Halide::strict_float(ax < constant(t, smallest_normal)), kiln::math::exp(z),
                                  Halide::pow(ax, y));
  Expr r = Halide::select(x_negative && !y_is_int, nan, flip_sign(x_negative && y_is_odd, magnitude));
  // A zero or infinite base: 0 or inf by the sign of y (swapped for inf), signed for odd y.
  const Expr base_zero = abs_bits(x) == Halide::Internal::make_const(abs_bits(x).type(), 0);
  const Expr big = base_zero == sign_bit(y);  // 0^-y and inf^+y are infinite
  const Expr edge = Halide::select(big, inf, zero);
  r = Halide::select(base_zero || kiln::math::is_inf(x), flip_sign(x_negative && y_is_odd, edge), r);
  // An infinite exponent: 1 at |x| = 1; else 0 or inf as |x| < 1 and the sign of y say.
  const Expr below_one = Halide::strict_float(ax < one);
  const Expr ax_is_one = Halide::strict_float(ax == one);
  r = Halide::select(kiln::math::is_inf(y), Halide::select(ax_is_one, one, below_one != sign_bit(y), zero, inf), r);
  r = Halide::select(algo::is_nan(x) || algo::is_nan(y), nan, r);
  const Expr y_zero = abs_bits(y) == Halide::Internal::make_const(abs_bits(y).type(), 0);
  const Expr x_one = Halide::strict_float(x == one) && !algo::is_nan(x);
  return Halide::select(y_zero || x_one, one, r);
}

}  // namespace kiln::math
