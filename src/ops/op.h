// The operator library's contract. Each op is defined once, here in src/ops, as:
//   - infer:     output dtype and shape from the inputs' (shapes may be symbolic),
//                raising kiln::Error for bad input;
//   - algorithm: the pure Halide definition (Funcs in, Func out; no schedule);
//   - reference: a plain C++ implementation computing in double, the oracle of tests;
//   - kind:      what the scheduler needs to know (pointwise, reduction, ...).
// Eager mode, graph lowering and generators all call these same definitions.
#pragma once

#include <Halide.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "core/tensor.h"

namespace kiln {

using AttrValue = std::variant<int64_t, double, bool, std::string, std::vector<int64_t>>;

// Op parameters (axes, keepdim, a scalar value, ...), ordered by name so that printing
// and cache keys are deterministic.
class Attrs {
 public:
  Attrs() = default;
  Attrs(std::initializer_list<std::pair<const std::string, AttrValue>> init) : values_(init) {}
  Attrs& set(const std::string& name, AttrValue v) {
    values_[name] = std::move(v);
    return *this;
  }
  Attrs& erase(const std::string& name) {
    values_.erase(name);
    return *this;
  }
  bool has(const std::string& name) const { return values_.count(name) > 0; }
  int64_t get_int(const std::string& name) const;
  double get_double(const std::string& name) const;
  bool get_bool(const std::string& name) const;
  const std::string& get_string(const std::string& name) const;
  const std::vector<int64_t>& get_ints(const std::string& name) const;
  bool empty() const { return values_.empty(); }
  std::string str() const;  // "axes=[1], keepdim=true"
  bool operator==(const Attrs& o) const { return values_ == o.values_; }

 private:
  const AttrValue& get(const std::string& name) const;
  std::map<std::string, AttrValue> values_;
};

enum class OpKind {
  Source,       // no tensor inputs: scalars, constants
  Pointwise,    // out[i] depends on in[i] of each input (with broadcasting)
  Reduction,    // reduces over some axes
  Injective,    // data movement: reshape, permute, slice, ...
  Contraction,  // matmul, conv
  Extern,       // a call into a library
};
const char* op_kind_name(OpKind k);

// An internal stage (e.g. a reduction's accumulator) that needs a loop nest of its own.
struct StageInfo {
  Halide::Func func;
  // The update reads its inputs contiguously along the output's innermost dim (matmul's
  // columns), so that dim goes innermost and vectorized, outside the reduction loops.
  bool pure_innermost = false;
  // Computed at root and left serial (scatter updates, such as Halide's adjoints, must
  // not be parallelized).
  bool serial = false;
  // Its pure dims' extents, innermost first, where the op knows them (conv2d's
  // accumulator: ow, o, oh, n; matmul's: n, m, batch...; 0 for a dynamic dim): a schedule
  // sizes register tiles and tasks by them.
  std::vector<int64_t> extents = {};
};

// What an algorithm sees besides its input Funcs.
struct OpCall {
  const std::vector<TensorMeta>& inputs;
  const TensorMeta& output;
  const Attrs& attrs;
  // The size of a dimension as an Expr: a constant for static dims, the bound input
  // buffer's extent for symbolic ones.
  std::function<Halide::Expr(const Dim&)> extent;
  // Internal stages (e.g. a reduction's accumulator) that need their own loop nest;
  // the scheduler computes them at root or tiles them.
  std::vector<StageInfo>* stages = nullptr;
};

// What a VJP rule sees: the op's inputs and output (eager tensors or traced values) and
// the gradient flowing into the output.
struct VjpArgs {
  const std::vector<Tensor>& inputs;
  const Tensor& output;
  const Tensor& grad;
  const Attrs& attrs;
  // Which inputs the caller wants a gradient for; empty: all. A rule may skip the work of
  // the others (returning an undefined Tensor there), as matmul and conv2d do.
  std::vector<bool> wanted = {};
  bool needs(size_t k) const { return wanted.empty() || (k < wanted.size() && wanted[k]); }
};

using InferFn = std::function<TensorMeta(const std::vector<TensorMeta>&, const Attrs&)>;
// Reverse mode: the gradient of each input, written with ops; an undefined Tensor where
// no gradient flows (an integer input, or a shape-only one).
using VjpFn = std::function<std::vector<Tensor>(const VjpArgs&)>;
using AlgorithmFn = std::function<Halide::Func(const std::vector<Halide::Func>&, const OpCall&)>;
using ReferenceFn =
    std::function<Tensor(const std::vector<Tensor>&, const Attrs&, const TensorMeta&)>;

struct OpDef {
  std::string name;
  OpKind kind = OpKind::Pointwise;
  int arity = 1;  // number of tensor inputs; -1: any number
  InferFn infer;
  AlgorithmFn algorithm;
  ReferenceFn reference;
  // Eager kernels are shape-generic (symbolic sizes) unless the op's index maps need
  // static sizes (reshape, slice, ...); those compile per shape.
  bool eager_generic = true;
  // Reverse-mode rule (ops/vjp.cpp). Empty where the op has none: then either its
  // gradient is zero wherever it is defined (zero_gradient: comparisons, floor, argmax,
  // random fills, ...), or differentiating through it is an error.
  VjpFn vjp;
  bool zero_gradient = false;
  // Without a vjp, differentiate the Halide algorithm with Halide's propagate_adjoints
  // (autodiff/halide_adjoint.cpp). register_op sets it for user-defined ops; built-in ops
  // whose adjoints are checked against finite differences set it too.
  bool halide_adjoint_fallback = false;
};

// An OpDef from its parts (the remaining fields keep their defaults).
OpDef make_op_def(std::string name, OpKind kind, int arity, InferFn infer, AlgorithmFn algorithm,
                  ReferenceFn reference);

// The registry of every op kiln knows.
const OpDef& get_op(const std::string& name);  // throws listing the known ops
bool has_op(const std::string& name);
std::vector<std::string> op_names();
// Adds a user-defined op (same contract as the built-in ones).
void register_op(OpDef def);

// Output dtype and shape of `op` applied to `inputs`: checks the arity, then calls infer.
TensorMeta infer_op(const OpDef& op, const std::vector<TensorMeta>& inputs, const Attrs& attrs);

// Helpers shared by op definitions.
namespace algo {
// Var d<j> for Halide dimension j (innermost first).
std::vector<Halide::Var> vars(int rank);
std::vector<Halide::Expr> exprs(const std::vector<Halide::Var>& vs);
// Indices into `in` for computing element `out_vars` of an output of shape `out`, with
// NumPy broadcasting (size-1 dims read index 0).
std::vector<Halide::Expr> broadcast_index(const TensorMeta& in, const TensorMeta& out,
                                          const std::vector<Halide::Expr>& out_vars);
Halide::Type halide_type(DType t);
// A constant of type t (Halide::Expr has no double constructor).
Halide::Expr constant(Halide::Type t, double v);
// Loads widen f16/bf16 to f32; stores narrow back.
Halide::Expr to_compute(const Halide::Expr& e, DType storage);
Halide::Expr to_storage(const Halide::Expr& e, DType storage);
// NaN test on the bit pattern: immune to the fast-math flags Halide compiles floats with.
// The value a classification (is_nan, nonzero, is_inf...) reads: x, or the f16/bf16 value
// that x widens. LLVM folds bit tests of a float widened from 16 bits under the fast-math
// flags Halide sets (an inf or NaN came out zero in scalar loops), so they read the 16 bits.
Halide::Expr classified(const Halide::Expr& x);
Halide::Expr is_nan(const Halide::Expr& x);
Halide::Expr is_pos_inf(const Halide::Expr& x);
// x's truth, as C++ and PyTorch: anything but +-0, NaN included (on the bits: Halide's
// x != 0 on floats is an ordered comparison, false for NaN).
Halide::Expr nonzero(const Halide::Expr& x);
// A float read from a buffer, hidden from Halide's bounds inference: lower_to_halide reads
// every input and constant through it (it says why). The code is the load's. Non-float
// reads are returned as they are.
Halide::Expr opaque_read(const Halide::Expr& read);
// The read inside opaque_read(read), or `e` itself: for the analyses that look for a Func
// that only reads another Func or a buffer.
Halide::Expr through_opaque_read(const Halide::Expr& e);
// `y`, except NaN where `x` is NaN (Halide's polynomial exp/log do not propagate NaN).
Halide::Expr propagate_nan(const Halide::Expr& x, const Halide::Expr& y);
// `value` where `condition` holds; otherwise the kernel stops and the caller gets a
// kiln::Error whose text is `message` (strings and Exprs, printed with spaces between).
Halide::Expr require(const Halide::Expr& condition, const Halide::Expr& value,
                     const std::vector<Halide::Expr>& message);
// A name for an op's Func: `name`, unless Halide's intrinsics have a call of that name
// ("abs", "round"...), which Halide's inliner matches by name: a Func named "abs" met an
// intrinsic abs() inside an inlined expression and the compile failed (GridSample's
// reflection, compiled). Those get an "_op" suffix.
std::string func_name(const std::string& name);
// A reduction's update, acc + x (acc * x with `product`). Halide compiles non-strict float
// arithmetic with LLVM's no-NaN/no-inf flags; where x folds to a NaN constant (the x * NaN
// of sum(x * NaN), seen through the pure Funcs inlined into it), LLVM took the flags at
// their word and the sum came out 0. Such an update is strict: it gives up
// rfactor's vector partial sums (schedules fall back to a serial loop), only there.
Halide::Expr accumulate(const Halide::Expr& acc, const Halide::Expr& x, bool product = false);
// Marks the start of a require() message inside Halide's error text.
inline constexpr const char* kRequireMarker = "[kiln]";
}  // namespace algo

namespace ref {
// Row-major strides of a concrete shape.
std::vector<int64_t> strides(const std::vector<int64_t>& sizes);
// Linear index into an input of `in_sizes` for the output element at `out_index`
// (multi-index of an output of `out_sizes`), with broadcasting.
int64_t broadcast_offset(const std::vector<int64_t>& in_sizes,
                         const std::vector<int64_t>& out_sizes,
                         const std::vector<int64_t>& out_index);
std::vector<int64_t> unravel(int64_t linear, const std::vector<int64_t>& sizes);
// One element of a dense bool, i32 or i64 buffer, exactly (a double rounds i64 past 2^53).
int64_t load_as_int64(const void* base, DType t, int64_t index);
}  // namespace ref

// The built-in op families, one per file; the registry collects them once.
std::vector<OpDef> pointwise_ops();  // ops/pointwise.cpp: scalar, cast, unary, binary
std::vector<OpDef> reduce_ops();     // ops/reduce.cpp: sum, mean, max, min, prod, softmax, norms
std::vector<OpDef> shape_ops();      // ops/shape.cpp: reshape, permute, expand, slice, concat
std::vector<OpDef> linalg_ops();     // ops/linalg.cpp: matmul
std::vector<OpDef> conv_ops();       // ops/conv.cpp: conv2d, pooling
std::vector<OpDef> index_ops();      // ops/index.cpp: gather, index_select, one_hot, arange
std::vector<OpDef> random_ops();     // ops/random.cpp: seeded uniform and normal fills
std::vector<OpDef> adjoint_ops();    // autodiff/halide_adjoint.cpp: Halide-derived gradients
// The VJP rules of the built-in ops (ops/vjp.cpp), attached to them by the registry.
void attach_vjp_rules(std::vector<OpDef>& ops);

}  // namespace kiln
