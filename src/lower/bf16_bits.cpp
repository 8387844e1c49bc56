#include "lower/bf16_bits.h"

namespace kiln {

using Halide::Expr;
using Halide::Type;

namespace {

Type u16(int lanes) { return Halide::UInt(16, lanes); }
Type u32(int lanes) { return Halide::UInt(32, lanes); }
Type u64(int lanes) { return Halide::UInt(64, lanes); }
Expr k32(uint64_t v) { return Halide::Internal::make_const(Halide::UInt(32), v); }
Expr k64(uint64_t v) { return Halide::Internal::make_const(Halide::UInt(64), v); }

// f64 -> f32 rounded to odd: the f32 toward zero, its last bit set where inexact. Rounding
// that once more to bf16 (8 fewer bits) gives the f64's own nearest bf16, not a double
// rounding's.
Expr f64_to_f32_round_to_odd(const Expr& d) {
  const int l = d.type().lanes();
  const Expr f = Halide::cast(Halide::Float(32, l), d);
  const Expr back = Halide::cast(Halide::Float(64, l), f);
  const Expr mask = k64(0x7fffffffffffffffull);
  const Expr d_mag = Halide::reinterpret(u64(l), d) & mask, f_mag = Halide::reinterpret(u64(l), back) & mask;
  Expr bits = Halide::reinterpret(u32(l), f);
  // Bits, not float compares: LLVM's fast-math flags may assume no NaN or inf.
  const Expr inexact = d_mag != f_mag;
  bits = Halide::select(inexact && f_mag > d_mag, bits - k32(1), bits);
  bits = Halide::select(inexact, bits | k32(1), bits);
  return Halide::reinterpret(Halide::Float(32, l), bits);
}

Expr to_f32_for_bf16(const Expr& v) {
  const Type t = v.type();
  const int l = t.lanes();
  if (t.is_float() && t.bits() == 32) return v;
  if (t.is_float() && t.bits() == 64) return f64_to_f32_round_to_odd(v);
  if (t.is_float()) return Halide::cast(Halide::Float(32, l), v);  // f16: exact
  if (t.is_bool()) return Halide::select(v, Halide::cast(Halide::Float(32, l), 1.0f), Halide::cast(Halide::Float(32, l), 0.0f));
  if (t.bits() <= 16) return Halide::cast(Halide::Float(32, l), v);  // exact
  return f64_to_f32_round_to_odd(Halide::cast(Halide::Float(64, l), v));
}

bool is_f16(const Type& t) { return t.is_float() && !t.is_bfloat() && t.bits() == 16; }

// `bf16`: every cast to or from bf16 (CUDA); `widen_f16`: casts from f16 too.
class HalfCasts : public Halide::Internal::IRMutator {
 public:
  HalfCasts(bool bf16, bool widen_f16) : bf16_(bf16), widen_f16_(widen_f16) {}

 private:
  using IRMutator::visit;
  bool bf16_, widen_f16_;

  Expr visit(const Halide::Internal::Cast* op) override {
    const Expr value = mutate(op->value);
    const Type to = op->type, from = value.type();
    if (from == to) return value;
    if (from.is_bfloat() && to.is_bfloat()) return value;
    if (from.is_bfloat()) {
      const Expr f = bf16_bits_to_f32(value);
      if (is_f16(to) && bf16_) return f32_to_f16_bits(f);
      return to == f.type() ? f : Halide::cast(to, f);
    }
    if (widen_f16_ && is_f16(from) && !to.is_bfloat()) {
      const Expr f = f16_bits_to_f32(value);
      return to == f.type() ? f : Halide::cast(to, f);
    }
    if (to.is_bfloat() && bf16_) {
      return f32_to_bf16_bits(is_f16(from) ? f16_bits_to_f32(value) : to_f32_for_bf16(value));
    }
    if (is_f16(to) && bf16_) {
      // CUDA: Halide 21's NVPTX back end lowers a vector fptrunc to f16 as a bitcast (an
      // H100 wrote the f32 bits of two lanes over four f16 outputs): bit operations here.
      return f32_to_f16_bits(from.is_bfloat() ? bf16_bits_to_f32(value) : to_f32_for_bf16(value));
    }
    return value.same_as(op->value) ? Expr(op) : Halide::Internal::Cast::make(to, value);
  }
};

void mutate_all(const std::vector<Halide::Func>& outputs, Halide::Internal::IRMutator* m) {
  std::vector<Halide::Internal::Function> roots;
  for (const Halide::Func& f : outputs) roots.push_back(f.function());
  for (auto& [name, fn] : Halide::Internal::build_environment(roots)) {
    (void)name;
    Halide::Internal::Function copy = fn;
    copy.mutate(m);
  }
}

}  // namespace

Expr bf16_bits_to_f32(const Expr& x) {
  const int l = x.type().lanes();
  return Halide::reinterpret(Halide::Float(32, l), Halide::cast(u32(l), Halide::reinterpret(u16(l), x)) << k32(16));
}

Expr f16_bits_to_f32(const Expr& x) {
  const int l = x.type().lanes();
  const Expr h = Halide::cast(u32(l), Halide::reinterpret(u16(l), x));
  const Expr sign = (h & k32(0x8000)) << k32(16), em = h & k32(0x7fff);
  // Normal: the exponent rebiased (127 - 15) and the mantissa moved up; inf and NaN keep
  // an all-ones exponent; zeros and subnormals are exactly em * 2^-24.
  const Expr normal = (em << k32(13)) + k32(uint32_t(127 - 15) << 23);
  const Expr special = k32(0x7f800000) | ((em & k32(0x3ff)) << k32(13));
  const Expr tiny = Halide::reinterpret(u32(l), Halide::cast(Halide::Float(32, l), em) * Halide::Expr(1.0f / 16777216.0f));
  const Expr bits = Halide::select(em >= k32(0x7c00), special, em >= k32(0x400), normal, tiny);
  return Halide::reinterpret(Halide::Float(32, l), sign | bits);
}

Expr f32_to_bf16_bits(const Expr& x) {
  const int l = x.type().lanes();
  const Expr u = Halide::reinterpret(u32(l), x);
  const Expr is_nan = (u & k32(0x7fffffff)) > k32(0x7f800000);
  const Expr rounded = (u + k32(0x7fff) + ((u >> k32(16)) & k32(1))) >> k32(16);
  const Expr bits = Halide::select(is_nan, (u >> k32(16)) | k32(0x40), rounded);
  return Halide::reinterpret(Halide::BFloat(16, l), Halide::cast(u16(l), bits));
}

Expr f32_to_f16_bits(const Expr& x) {
  const int l = x.type().lanes();
  const Expr u = Halide::reinterpret(u32(l), x);
  const Expr sign = (u >> k32(16)) & k32(0x8000), a = u & k32(0x7fffffff);
  // NaN: quiet, the upper payload bits kept. From 65520 (the midpoint past 65504, which
  // rounds to even: up) on: inf.
  const Expr nan = k32(0x7e00) | ((a >> k32(13)) & k32(0x3ff));
  // Normal: the exponent rebiased (127 - 15), rounded at bit 13 to nearest even; a carry
  // into the exponent is the right next value.
  const Expr normal = (a - k32(uint32_t(127 - 15) << 23) + k32(0xfff) + ((a >> k32(13)) & k32(1))) >> k32(13);
  // Below 2^-14: units of 2^-24, the 24-bit significand shifted right by 126 - e
  // (at least 14), rounded to nearest even; 0x400 is the smallest normal, as it should be.
  const Expr e = a >> k32(23);
  const Expr s = Halide::clamp(k32(126) - Halide::min(e, k32(125)), k32(1), k32(31));  // in range on every lane
  const Expr m = (a & k32(0x7fffff)) | k32(0x800000);
  const Expr q = m >> s, r = m & ((k32(1) << s) - k32(1)), half = k32(1) << (s - k32(1));
  const Expr sub = q + Halide::select(r > half || (r == half && (q & k32(1)) == k32(1)), k32(1), k32(0));
  const Expr bits = Halide::select(a > k32(0x7f800000), nan, a >= k32(0x477ff000), k32(0x7c00),
                                   a >= k32(0x38800000), normal, sub);
  return Halide::reinterpret(Halide::Float(16, l), Halide::cast(u16(l), sign | bits));
}

void lower_bf16_casts(const std::vector<Halide::Func>& outputs) {
  HalfCasts m(true, false);
  mutate_all(outputs, &m);
}

void lower_half_casts_for(const Halide::Target& target, const std::vector<Halide::Func>& outputs) {
  HalfCasts m(target.has_feature(Halide::Target::CUDA), true);
  mutate_all(outputs, &m);
}

}  // namespace kiln
