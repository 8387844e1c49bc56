// The user-facing op functions and Tensor operators. Each call goes through apply_op():
// recorded into the graph while kiln::compile traces, run at once (eager) otherwise.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "ops/op.h"

namespace kiln {

// Applies a registered op: traced if any input is symbolic, eager otherwise.
Tensor apply_op(const std::string& op, const std::vector<Tensor>& inputs,
                const Attrs& attrs = {});

// Unary
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
Tensor tan(const Tensor& x);
Tensor asin(const Tensor& x);   // NaN outside [-1, 1]
Tensor acos(const Tensor& x);   // NaN outside [-1, 1]
Tensor atan(const Tensor& x);
Tensor asinh(const Tensor& x);
Tensor acosh(const Tensor& x);  // NaN below 1
Tensor atanh(const Tensor& x);  // NaN outside [-1, 1], +-inf at +-1
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor neg(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor cast(const Tensor& x, DType dtype);
Tensor erf(const Tensor& x);
Tensor floor(const Tensor& x);
Tensor ceil(const Tensor& x);
Tensor round(const Tensor& x);  // half to even
Tensor silu(const Tensor& x);
Tensor softplus(const Tensor& x);  // beta 1, linear above 20
// approximate: "none" (erf) or "tanh"
Tensor gelu(const Tensor& x, const std::string& approximate = "none");
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01);
Tensor clamp(const Tensor& x, std::optional<double> min, std::optional<double> max);
Tensor logical_not(const Tensor& x);
// Elementwise select with broadcasting; cond is a bool tensor.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);

// Binary, with NumPy broadcasting. A C++ number operand takes the tensor's dtype (a
// "weak" scalar, as in PyTorch) unless that would lose it (a fraction with an integer
// tensor gives f32).
#define KILN_DECLARE_BINARY(name)                  \
  Tensor name(const Tensor& a, const Tensor& b);   \
  Tensor name(const Tensor& a, double b);          \
  Tensor name(double a, const Tensor& b);
KILN_DECLARE_BINARY(add)
KILN_DECLARE_BINARY(sub)
KILN_DECLARE_BINARY(mul)
KILN_DECLARE_BINARY(div)
KILN_DECLARE_BINARY(pow)
KILN_DECLARE_BINARY(maximum)
KILN_DECLARE_BINARY(minimum)
// Comparisons and logical ops give bool tensors; comparisons with NaN are false (ne: true).
KILN_DECLARE_BINARY(eq)
KILN_DECLARE_BINARY(ne)
KILN_DECLARE_BINARY(lt)
KILN_DECLARE_BINARY(le)
KILN_DECLARE_BINARY(gt)
KILN_DECLARE_BINARY(ge)
KILN_DECLARE_BINARY(logical_and)
KILN_DECLARE_BINARY(logical_or)
#undef KILN_DECLARE_BINARY

// Reductions over `axes` (empty: all axes); keepdim keeps reduced axes with size 1.
Tensor sum(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdim = false);
Tensor mean(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdim = false);
Tensor max(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdim = false);
Tensor min(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdim = false);
Tensor prod(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdim = false);
// Index (i64) of the first maximum along axis; NaN counts as the maximum, as in PyTorch.
Tensor argmax(const Tensor& x, int64_t axis, bool keepdim = false);

// Decompositions (written with the ops above, so eager, compiled and autodiff share them):
// variance with Bessel's correction (1: sample variance, 0: population), standard deviation
// (std_dev: PyTorch's std, renamed so it never meets namespace std), MSE loss.
Tensor var(const Tensor& x, const std::vector<int64_t>& axes = {}, int64_t correction = 1,
           bool keepdim = false);
Tensor std_dev(const Tensor& x, const std::vector<int64_t>& axes = {}, int64_t correction = 1,
           bool keepdim = false);
Tensor mse_loss(const Tensor& prediction, const Tensor& target);  // mean((p - t)^2)
// Lower / upper triangle of the last two dims (k: diagonal offset), zero elsewhere.
Tensor tril(const Tensor& x, int64_t k = 0);
Tensor triu(const Tensor& x, int64_t k = 0);

// Numerically stable softmax / log_softmax along one axis.
Tensor softmax(const Tensor& x, int64_t axis = -1);
Tensor log_softmax(const Tensor& x, int64_t axis = -1);
// Normalizes over the trailing dims given by normalized_shape (which must match them);
// weight and bias are optional (undefined Tensor: none).
Tensor layer_norm(const Tensor& x, const std::vector<int64_t>& normalized_shape,
                  const Tensor& weight = {}, const Tensor& bias = {}, double eps = 1e-5);
Tensor rms_norm(const Tensor& x, const std::vector<int64_t>& normalized_shape,
                const Tensor& weight = {}, double eps = 1e-6);

// Shape and data movement.
Tensor reshape(const Tensor& x, const std::vector<int64_t>& shape);  // one -1 allowed
Tensor permute(const Tensor& x, const std::vector<int64_t>& dims);
Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1);
Tensor expand(const Tensor& x, const std::vector<int64_t>& shape);  // -1 keeps a dim
Tensor unsqueeze(const Tensor& x, int64_t axis);
Tensor squeeze(const Tensor& x, int64_t axis);  // the axis must have size 1
// x[start:stop:step] along axis, Python semantics (negative and out-of-range bounds clamp).
Tensor slice(const Tensor& x, int64_t axis, int64_t start, int64_t stop, int64_t step = 1);
Tensor concat(const std::vector<Tensor>& xs, int64_t axis = 0);

// Contractions.
Tensor matmul(const Tensor& a, const Tensor& b);  // [..., M, K] x [..., K, N], batch broadcast
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = {});  // x Wᵀ + b

// ---- Convolution, pooling and batch norm (ops/conv.cpp) ----
// NCHW tensors, PyTorch's argument order and defaults. A size pair (stride, padding, ...)
// takes one value for both spatial dims or {height, width}.
// x [N, C, H, W], weight [O, C/groups, KH, KW], optional bias [O] -> [N, O, OH, OW].
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias = {},
              const std::vector<int64_t>& stride = {1}, const std::vector<int64_t>& padding = {0},
              const std::vector<int64_t>& dilation = {1}, int64_t groups = 1);
// x [N, C, H, W], weight [C, O/groups, KH, KW], optional bias [O] -> [N, O, OH, OW], OH =
// (H - 1) * stride - 2 * padding + dilation * (KH - 1) + output_padding + 1 (likewise OW):
// conv2d's gradient with respect to its input, PyTorch's conv_transpose2d (same argument
// order). output_padding adds rows and columns at the end; it must be smaller than the
// stride or the dilation. Written with conv2d over the input spread to stride 1 (so a
// stride s costs s * s times a direct kernel's arithmetic); static sizes only.
Tensor conv_transpose2d(const Tensor& x, const Tensor& weight, const Tensor& bias = {},
                        const std::vector<int64_t>& stride = {1}, const std::vector<int64_t>& padding = {0},
                        const std::vector<int64_t>& output_padding = {0}, int64_t groups = 1,
                        const std::vector<int64_t>& dilation = {1});
// An empty stride means stride = kernel_size. Max pooling propagates NaN; padding never wins.
Tensor max_pool2d(const Tensor& x, const std::vector<int64_t>& kernel_size,
                  const std::vector<int64_t>& stride = {}, const std::vector<int64_t>& padding = {0},
                  const std::vector<int64_t>& dilation = {1}, bool ceil_mode = false);
Tensor avg_pool2d(const Tensor& x, const std::vector<int64_t>& kernel_size,
                  const std::vector<int64_t>& stride = {}, const std::vector<int64_t>& padding = {0},
                  bool ceil_mode = false, bool count_include_pad = true);
// Output cell i averages input rows [floor(i*H/oh), ceil((i+1)*H/oh)), likewise columns.
Tensor adaptive_avg_pool2d(const Tensor& x, const std::vector<int64_t>& output_size);
// Mean over H and W: [N, C, H, W] -> [N, C, 1, 1] (adaptive_avg_pool2d to 1x1).
Tensor global_avg_pool2d(const Tensor& x);
// Batch norm over x [N, C, ...] (per channel C; weight, bias and the stats are [C]; an
// undefined weight or bias means none). Inference normalizes with the running stats:
Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight = {}, const Tensor& bias = {}, double eps = 1e-5);
// Training normalizes with the batch statistics (biased variance) and returns the running
// stats updated with momentum (the unbiased variance goes into running_var), as PyTorch
// does; with undefined running stats the returned ones are undefined too.
struct BatchNormResult {
  Tensor out, running_mean, running_var;
};
BatchNormResult batch_norm_train(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                                 const Tensor& weight = {}, const Tensor& bias = {}, double momentum = 0.1,
                                 double eps = 1e-5);

// ---- Indexing, padding, stacking and losses (ops/index.cpp) ----
// Values start, start + step, ... below stop (above it for a negative step). Traced as an
// op when called inside kiln::compile; a host fill otherwise.
Tensor arange(int64_t n, DType dtype = DType::F32);
Tensor arange(double start, double stop, double step = 1.0, DType dtype = DType::F32);
// Indices (i64 or i32) are checked where they are read: one out of range raises a
// kiln::Error naming the op, the index and the size, eager or compiled.
// out[i][j] = x[index[i][j]][j] (axis 0), PyTorch's torch.gather; index has x's rank.
Tensor gather(const Tensor& x, int64_t axis, const Tensor& index);
// x with `axis` replaced by the entries picked by the 1-D `index`.
Tensor index_select(const Tensor& x, int64_t axis, const Tensor& index);
// x with source added at the entries of `axis` that the 1-D `index` names (source's entry
// k along axis goes to x's index[k]; repeated indices accumulate), PyTorch's index_add.
Tensor index_add(const Tensor& x, int64_t axis, const Tensor& index, const Tensor& source);
// x with each source[i] added at i with its `axis` coordinate replaced by index[i] (index
// has source's shape; repeated targets accumulate), PyTorch's scatter_add.
Tensor scatter_add(const Tensor& x, int64_t axis, const Tensor& index, const Tensor& source);
// Rows of weight [num_embeddings, dim] for indices of any shape: indices.shape + [dim].
Tensor embedding(const Tensor& weight, const Tensor& indices);
// i64 tensor of indices.shape + [num_classes], 1 at each index.
Tensor one_hot(const Tensor& indices, int64_t num_classes);
// Constant padding, PyTorch's F.pad order: {before, after} for the last dim, then the dim
// before it, ...; negative pads crop.
Tensor pad(const Tensor& x, const std::vector<int64_t>& pads, double value = 0.0);
// Joins tensors of one shape along a new axis.
Tensor stack(const std::vector<Tensor>& xs, int64_t axis = 0);
// Pieces of split_size along axis (the last may be smaller), or pieces of the given sizes.
std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t axis = 0);
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t axis = 0);
// Cross entropy from logits [N, C] (or [C]) and integer class targets [N] (or []), or
// class probabilities of the logits' shape; reduction "mean" (over N), "sum" or "none".
Tensor cross_entropy(const Tensor& logits, const Tensor& target, const std::string& reduction = "mean");

// ---- Random fills and dropout (ops/random.cpp) ----
// Seeded fills shaped like x, reproducible across eager, compiled, CPU and GPU (each
// element hashes (seed, index); rand_like(x, s) of an [n] tensor == rand({n}, s)).
Tensor rand_like(const Tensor& x, uint64_t seed, double low = 0.0, double high = 1.0);
Tensor randn_like(const Tensor& x, uint64_t seed, double mean = 0.0, double std = 1.0);
// Zeroes each element with probability p and scales the rest by 1 / (1 - p); the identity
// when training is false. The mask is rand_like(x, seed) < p.
Tensor dropout(const Tensor& x, double p, uint64_t seed, bool training = true);

// A scalar as a 0-d tensor of `dtype`, traced as a constant when tracing.
Tensor scalar(double value, DType dtype = DType::F32);

Tensor operator-(const Tensor& x);
#define KILN_DECLARE_OPERATOR(sym)                         \
  Tensor operator sym(const Tensor& a, const Tensor& b);   \
  Tensor operator sym(const Tensor& a, double b);          \
  Tensor operator sym(double a, const Tensor& b);
KILN_DECLARE_OPERATOR(+)
KILN_DECLARE_OPERATOR(-)
KILN_DECLARE_OPERATOR(*)
KILN_DECLARE_OPERATOR(/)
// Comparisons give bool tensors (== and != stay unoverloaded: use eq and ne).
KILN_DECLARE_OPERATOR(<)
KILN_DECLARE_OPERATOR(<=)
KILN_DECLARE_OPERATOR(>)
KILN_DECLARE_OPERATOR(>=)
#undef KILN_DECLARE_OPERATOR

}  // namespace kiln
