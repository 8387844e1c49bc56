// kiln's own elementary functions as Halide expressions, with IEEE-754 special values.
//
// Halide's exp, log and pow are fast polynomials that treat floats as reals: exp(+inf) and
// exp(100.0f) come out 0, pow(NaN, 0.5) 0, pow(1, inf) 0, pow(inf, 0.5) finite. These
// wrappers keep Halide's polynomials for ordinary inputs and give the C99 / PyTorch value
// at NaN, infinities, signed zeros and past the overflow and underflow thresholds. The
// tests of src/ops sweep each against the f64 reference (tests/ops/math_test.cpp).
#pragma once

#include <Halide.h>

namespace kiln::math {

// exp: +inf past the overflow threshold (and at +inf), 0 below the underflow one (and at
// -inf), NaN for NaN.
Halide::Expr exp(const Halide::Expr& x);
// log: NaN for NaN and negatives, -inf at +-0, +inf at +inf.
Halide::Expr log(const Halide::Expr& x);
// log(1 + x) without cancellation for small x (Goldberg's correction of log(1 + x)).
Halide::Expr log1p(const Halide::Expr& x);
// pow with C99's special cases: pow(x, +-0) = 1 and pow(1, y) = 1 even for NaN; a
// negative base with an integer exponent keeps the sign of an odd power; a negative finite
// base with a non-integer finite exponent is NaN; zeros, infinities and infinite
// exponents as Annex F lists them.
Halide::Expr pow(const Halide::Expr& x, const Halide::Expr& y);
// a / b for floats, IEEE at b = +-0 (a * +-inf) even where b is a constant: Halide
// refuses to compile a division by a constant zero.
Halide::Expr divide(const Halide::Expr& a, const Halide::Expr& b);
// erf in f64 to about 1e-15 relative: its Taylor series below |x| = 2, 1 - erfc from
// Laplace's continued fraction up to 6, +-1 beyond (Halide's erf is f32-only).
Halide::Expr erf_f64(const Halide::Expr& x);
// erfc(z) for f64 z >= 2, without erf's cancellation: exp(-z^2) / sqrt(pi) over Laplace's
// continued fraction (60 levels: 1e-16 relative at z = 2).
Halide::Expr erfc_tail_f64(const Halide::Expr& z);
// 1 / (1 + exp(-x)): 0 at -inf, 1 at +inf.
Halide::Expr sigmoid(const Halide::Expr& x);

// Classification on the bits, immune to the fast-math flags ordinary float ops carry.
Halide::Expr is_inf(const Halide::Expr& x);
Halide::Expr is_finite(const Halide::Expr& x);
Halide::Expr sign_bit(const Halide::Expr& x);
Halide::Expr infinity(Halide::Type t);
Halide::Expr quiet_nan(Halide::Type t);

}  // namespace kiln::math
