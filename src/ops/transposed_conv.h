// Transposed convolution written with kiln's ops: conv2d's input gradient (ops/vjp.cpp)
// and conv_transpose2d (ops/api.h) are the same computation.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace kiln::detail {

// (s - 1) zeros between neighbours along axis: k entries become (k - 1) * s + 1.
Tensor dilate_axis(Tensor x, int axis, int64_t s);
// x reversed along axis.
Tensor flip_axis(const Tensor& x, int axis);

// A transposed convolution: x [N, C, H, W] spread over weight [C, O/groups, KH, KW] with
// `stride` and `dilation` (height, width) gives the full output, (H - 1) * s +
// d * (KH - 1) + 1 rows; of these the first `begin` rows are dropped and `end` rows are
// added at the end (negative: dropped), likewise columns. conv_transpose2d's padding p and
// output_padding q are begin = p, end = q - p.
Tensor transposed_conv2d(const Tensor& x, const Tensor& w, const std::vector<int64_t>& stride,
                         const std::vector<int64_t>& dilation, const std::vector<int64_t>& begin,
                         const std::vector<int64_t>& end, int64_t groups = 1);

}  // namespace kiln::detail
