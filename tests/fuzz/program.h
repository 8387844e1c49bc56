// The fuzzer's program model: a straight-line program of kiln ops over input tensors.
//
// Values are numbered in order of definition: value i < inputs.size() is input i, value
// inputs.size() + k is the result of op k. Every op has exactly one result (split keeps
// one of its pieces), so a program is a list of ops with operand value ids.
//
// The model knows nothing of kiln's runtime (only its DType helpers): the fuzzer's parent
// process generates and shrinks programs without starting any kiln machinery, so that it
// can fork workers safely (see worker.h). infer() is the *PyTorch* semantics of each op
// (shapes and dtypes, including type promotion); a kiln result that disagrees with it is
// a finding, and a program infer() rejects is one PyTorch would reject too.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace kiln::fuzz {

struct Meta {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  int64_t numel() const;
  bool operator==(const Meta& o) const { return dtype == o.dtype && shape == o.shape; }
  std::string str() const;  // "f32[2, 3]"
};

struct InputSpec {
  Meta meta;
  std::vector<double> values;  // row-major, already rounded to meta.dtype
  // > 0: an index tensor whose entries must stay in [0, index_limit) (the shrinker and
  // the value generator keep them there); 0: data.
  int64_t index_limit = 0;
};

// One op application. What ints/reals/text hold depends on the op (see program.cpp's
// infer_op, which is the one place that reads them, and cpp_printer.cpp):
//   binary ops with one tensor operand: reals={c}, ints={scalar_on_left}
//   sum/mean/max/min/prod: ints={keepdim, axes...}   var/std_dev: ints={correction, keepdim, axes...}
//   argmax: ints={axis, keepdim}   softmax/log_softmax/concat/stack/gather/index_select: ints={axis}
//   layer_norm/rms_norm: ints={trailing dims normalized}, reals={eps}
//   reshape/expand: ints=shape   permute: ints=dims   transpose: ints={d0, d1}
//   squeeze/unsqueeze: ints={axis}   slice: ints={axis, start, stop, step}
//   split: ints={split_size, axis, piece}   pad: ints=pads, reals={value}
//   conv2d: ints={stride, padding, dilation, groups}
//   max_pool2d: ints={kernel, stride, padding, dilation, ceil_mode}
//   avg_pool2d: ints={kernel, stride, padding, ceil_mode, count_include_pad}
//   adaptive_avg_pool2d: ints={oh, ow}   one_hot: ints={num_classes}   tril/triu: ints={k}
//   clamp: ints={has_min, has_max}, reals={min, max}   leaky_relu: reals={slope}
//   gelu: text=approximate   cast: text=dtype name   cross_entropy: text=reduction
//   dropout: reals={p}, ints={seed, training}
struct OpSpec {
  std::string op;
  std::vector<int> args;
  std::vector<int64_t> ints;
  std::vector<double> reals;
  std::string text;
};

// PyTorch's results for a program (golden data, tests/fuzz/golden/): its outputs and the
// gradient of the loss (run.h) w.r.t. each float data input, or the error it raised.
struct TorchResult {
  bool present = false;
  std::vector<InputSpec> outputs, grads;  // index_limit unused
  std::string error;                      // non-empty: PyTorch rejected the program
};

struct Program {
  std::vector<InputSpec> inputs;
  std::vector<OpSpec> ops;
  std::vector<int> outputs;  // value ids
  // The loss's weights, one per float output; empty: drawn from a fixed seed (run.cpp).
  std::vector<InputSpec> weights;
  TorchResult torch;

  int num_values() const { return int(inputs.size() + ops.size()); }
};

// A program PyTorch would reject (or that the fuzzer cannot express).
struct Invalid : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// PyTorch's result of one op given its operands' metas; throws Invalid.
Meta infer_op(const OpSpec& op, const std::vector<Meta>& args);
// The meta of every value; throws Invalid when any op or output is invalid.
std::vector<Meta> infer(const Program& p);
bool is_valid(const Program& p);

// PyTorch's type promotion (result_type) over tensor operands (0-d tensors take part only
// when of a higher category than the dimensioned ones) and an optional Python-number
// operand (`scalar_is_float`: a fraction; integral C++ doubles act as Python ints).
DType result_type(const std::vector<Meta>& tensors, bool has_scalar = false, bool scalar_is_float = false);

// Rounds v to what a tensor of dtype t stores.
double round_to(double v, DType t);

// The text form (also the worker protocol and the golden files' format):
//   input f32 [2,3] index=0 : 1 -0x1p-1 nan inf ...
//   op add 0 1 | ints 1 | reals 0x1p+0 | text tanh
//   output 3 4
//   weight f32 [2,3] : 0x1.8p-1 ...           (golden files: the loss's weights)
//   torch output f32 [2,3] : ...              (PyTorch's results)
//   torch grad f32 [2] : ...
//   torch error : message
std::string to_text(const Program& p);
Program from_text(const std::string& text);  // throws Invalid on malformed text

// Removes ops no output depends on and inputs no op or output uses (and any golden data,
// which no longer applies).
Program prune(const Program& p);

}  // namespace kiln::fuzz
