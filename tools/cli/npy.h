// NumPy's .npy files (format 1.0/2.0, C order, little-endian), for `kiln run`'s inputs and
// outputs: f16, f32, f64, i32, i64 and bool; bf16, which NumPy lacks, is written as f32.
#pragma once

#include <string>

#include "core/tensor.h"

namespace kiln::cli {

Tensor read_npy(const std::string& path);
void write_npy(const std::string& path, const Tensor& t);

}  // namespace kiln::cli
