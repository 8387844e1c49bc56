// Element types. f16 and bf16 are storage types: ops compute them in f32.
#pragma once

#include <cstdint>
#include <string>

#include "HalideRuntime.h"

namespace kiln {

enum class DType : uint8_t { Bool, I32, I64, F16, BF16, F32, F64 };

const char* dtype_name(DType t);            // "f32", "bf16", ...
DType dtype_from_name(const std::string& name);  // throws on unknown names
int dtype_bytes(DType t);
bool is_float(DType t);
bool is_integral(DType t);                  // integers and bool
halide_type_t to_halide_type(DType t);
DType from_halide_type(halide_type_t t);
// The type arithmetic runs in: f16/bf16 widen to f32, everything else is itself.
DType compute_dtype(DType t);
// NumPy/PyTorch-style promotion for two tensor operands.
DType promote(DType a, DType b);
// PyTorch's result type of two operands, where 0-d tensors (`a_0d`, `b_0d`) count like
// scalars: a dimensioned tensor's dtype wins unless the 0-d one is of a higher category
// (bool < integer < floating point). f16[n] + f32[] is f16; i32[n] + f64[] is f64.
DType result_type(DType a, bool a_0d, DType b, bool b_0d);

// Host-side conversions for the 16-bit float storage types (round to nearest even).
uint16_t float_to_f16_bits(float f);
float f16_bits_to_float(uint16_t h);
uint16_t float_to_bf16_bits(float f);
float bf16_bits_to_float(uint16_t h);

// Read or write one element of a dense buffer of type t, as a double.
double load_as_double(const void* base, DType t, int64_t index);
void store_from_double(void* base, DType t, int64_t index, double value);

}  // namespace kiln
