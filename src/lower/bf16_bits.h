// bf16 conversions as bit operations, for code generators that have none: Halide 21's
// CUDA back end fails an LLVM assertion ("Invalid cast!") on any cast between bf16 and
// another type, while loads, stores and reinterprets of bf16 work. kiln computes 16-bit
// types in f32, so every bf16 value passes through such a cast.
#pragma once

#include <Halide.h>

#include <vector>

namespace kiln {

// bf16 -> f32 (exact: the bf16 bits are the f32's upper half).
Halide::Expr bf16_bits_to_f32(const Halide::Expr& x);
// f32 -> bf16, rounded to nearest even; NaN stays NaN (quiet, sign kept), overflow is inf.
Halide::Expr f32_to_bf16_bits(const Halide::Expr& x);

// Rewrites every cast to or from bf16 in the definitions of `outputs` and of every Func
// they call into the operations above (an f64 or integer source is rounded once, through
// f32 rounded to odd). Needed before compiling for a CUDA target; harmless elsewhere.
void lower_bf16_casts(const std::vector<Halide::Func>& outputs);

// f16 -> f32 exactly, in integer operations.
Halide::Expr f16_bits_to_f32(const Halide::Expr& x);
// f32 -> f16, rounded to nearest even (subnormals too); NaN stays NaN (quiet, sign kept),
// overflow is inf. Halide 21's NVPTX back end lowers a vector cast f32 -> f16 as a
// bitcast, so CUDA targets narrow to f16 with this.
Halide::Expr f32_to_f16_bits(const Halide::Expr& x);

// Before scheduling, on every target: widening casts of f16 and bf16 as the bit operations
// above, and on CUDA casts to bf16 and to f16 too. Halide bounds a cast f16 value
// by +-65504 and reasons from that as if NaN and inf could not occur: compiled
// 0 * float32(x_f16) folded to 0 for a NaN x (kiln_fuzz seed 3103, program 306), and
// float32(x_f16) == -inf to false. The bit operations hide nothing but those bounds.
void lower_half_casts_for(const Halide::Target& target, const std::vector<Halide::Func>& outputs);

}  // namespace kiln
