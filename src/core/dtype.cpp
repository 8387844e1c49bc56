#include "core/dtype.h"

#include <cmath>
#include <cstring>

#include "core/error.h"

namespace kiln {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::Bool: return "bool";
    case DType::I32: return "i32";
    case DType::I64: return "i64";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
    case DType::F32: return "f32";
    case DType::F64: return "f64";
  }
  KILN_INTERNAL_ERROR("bad dtype ", int(t));
}

DType dtype_from_name(const std::string& name) {
  for (DType t : {DType::Bool, DType::I32, DType::I64, DType::F16, DType::BF16, DType::F32,
                  DType::F64}) {
    if (name == dtype_name(t)) return t;
  }
  user_error("unknown dtype '", name, "'; expected one of bool, i32, i64, f16, bf16, f32, f64");
}

int dtype_bytes(DType t) {
  switch (t) {
    case DType::Bool: return 1;
    case DType::F16:
    case DType::BF16: return 2;
    case DType::I32:
    case DType::F32: return 4;
    case DType::I64:
    case DType::F64: return 8;
  }
  KILN_INTERNAL_ERROR("bad dtype ", int(t));
}

bool is_float(DType t) {
  return t == DType::F16 || t == DType::BF16 || t == DType::F32 || t == DType::F64;
}
bool is_integral(DType t) { return !is_float(t); }

halide_type_t to_halide_type(DType t) {
  switch (t) {
    case DType::Bool: return halide_type_t(halide_type_uint, 1);
    case DType::I32: return halide_type_t(halide_type_int, 32);
    case DType::I64: return halide_type_t(halide_type_int, 64);
    case DType::F16: return halide_type_t(halide_type_float, 16);
    case DType::BF16: return halide_type_t(halide_type_bfloat, 16);
    case DType::F32: return halide_type_t(halide_type_float, 32);
    case DType::F64: return halide_type_t(halide_type_float, 64);
  }
  KILN_INTERNAL_ERROR("bad dtype ", int(t));
}

DType from_halide_type(halide_type_t t) {
  for (DType d : {DType::Bool, DType::I32, DType::I64, DType::F16, DType::BF16, DType::F32,
                  DType::F64}) {
    if (to_halide_type(d) == t) return d;
  }
  // Halide stores bool buffers as uint8.
  if (t == halide_type_t(halide_type_uint, 8)) return DType::Bool;
  user_error("kiln has no dtype for Halide type code ", int(t.code), " bits ", int(t.bits));
}

DType compute_dtype(DType t) { return (t == DType::F16 || t == DType::BF16) ? DType::F32 : t; }

DType promote(DType a, DType b) {
  if (a == b) return a;
  // Two different 16-bit floats have no common 16-bit type.
  if ((a == DType::F16 && b == DType::BF16) || (a == DType::BF16 && b == DType::F16)) {
    return DType::F32;
  }
  auto rank = [](DType t) {
    switch (t) {
      case DType::Bool: return 0;
      case DType::I32: return 1;
      case DType::I64: return 2;
      case DType::F16:
      case DType::BF16: return 3;
      case DType::F32: return 4;
      case DType::F64: return 5;
    }
    return 0;
  };
  return rank(a) >= rank(b) ? a : b;
}

DType result_type(DType a, bool a_0d, DType b, bool b_0d) {
  if (a_0d == b_0d) return promote(a, b);
  auto category = [](DType t) { return t == DType::Bool ? 0 : is_float(t) ? 2 : 1; };
  const DType dimensioned = a_0d ? b : a, zero_dim = a_0d ? a : b;
  return category(zero_dim) > category(dimensioned) ? promote(dimensioned, zero_dim) : dimensioned;
}

uint16_t float_to_f16_bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t mag = x & 0x7fffffffu;
  if (mag >= 0x7f800000u) {  // Inf or NaN
    return uint16_t(sign | 0x7c00u | (mag > 0x7f800000u ? 0x200u : 0u));
  }
  if (mag >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // rounds to Inf
  if (mag < 0x38800000u) {                                   // subnormal or zero in f16
    float a;
    std::memcpy(&a, &mag, 4);
    // a * 2^24 in [0, 1024): round to nearest even via the FPU.
    return uint16_t(sign | uint32_t(std::nearbyint(a * 16777216.0f)));
  }
  uint32_t rounded = mag + 0xfffu + ((mag >> 13) & 1u);  // round to nearest even
  return uint16_t(sign | ((rounded - 0x38000000u) >> 13));
}

float f16_bits_to_float(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  float out;
  if (exp == 0) {
    out = std::ldexp(float(man), -24);
    return sign ? -out : out;
  }
  uint32_t x = exp == 31 ? (sign | 0x7f800000u | (man << 13))
                         : (sign | ((exp + 112u) << 23) | (man << 13));
  std::memcpy(&out, &x, 4);
  return out;
}

uint16_t float_to_bf16_bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40u);  // quiet NaN
  x += 0x7fffu + ((x >> 16) & 1u);
  return uint16_t(x >> 16);
}

float bf16_bits_to_float(uint16_t h) {
  uint32_t x = uint32_t(h) << 16;
  float out;
  std::memcpy(&out, &x, 4);
  return out;
}

double load_as_double(const void* base, DType t, int64_t i) {
  switch (t) {
    case DType::Bool: return static_cast<const uint8_t*>(base)[i] ? 1.0 : 0.0;
    case DType::I32: return static_cast<const int32_t*>(base)[i];
    case DType::I64: return double(static_cast<const int64_t*>(base)[i]);
    case DType::F16: return f16_bits_to_float(static_cast<const uint16_t*>(base)[i]);
    case DType::BF16: return bf16_bits_to_float(static_cast<const uint16_t*>(base)[i]);
    case DType::F32: return static_cast<const float*>(base)[i];
    case DType::F64: return static_cast<const double*>(base)[i];
  }
  KILN_INTERNAL_ERROR("bad dtype ", int(t));
}

void store_from_double(void* base, DType t, int64_t i, double v) {
  switch (t) {
    case DType::Bool: static_cast<uint8_t*>(base)[i] = v != 0.0; return;
    case DType::I32: static_cast<int32_t*>(base)[i] = int32_t(v); return;
    case DType::I64: static_cast<int64_t*>(base)[i] = int64_t(v); return;
    case DType::F16: static_cast<uint16_t*>(base)[i] = float_to_f16_bits(float(v)); return;
    case DType::BF16: static_cast<uint16_t*>(base)[i] = float_to_bf16_bits(float(v)); return;
    case DType::F32: static_cast<float*>(base)[i] = float(v); return;
    case DType::F64: static_cast<double*>(base)[i] = v; return;
  }
  KILN_INTERNAL_ERROR("bad dtype ", int(t));
}

}  // namespace kiln
