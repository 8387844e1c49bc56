#include "ops/op.h"

#include <cmath>
#include <mutex>
#include <set>
#include <sstream>

#include "core/error.h"

namespace kiln {

const AttrValue& Attrs::get(const std::string& name) const {
  auto it = values_.find(name);
  KILN_CHECK(it != values_.end(), "missing attribute '", name, "' in {", str(), "}");
  return it->second;
}

template <class T>
static const T& get_as(const AttrValue& v, const std::string& name) {
  const T* p = std::get_if<T>(&v);
  KILN_CHECK(p != nullptr, "attribute '", name, "' has another type");
  return *p;
}

int64_t Attrs::get_int(const std::string& n) const { return get_as<int64_t>(get(n), n); }
double Attrs::get_double(const std::string& n) const { return get_as<double>(get(n), n); }
bool Attrs::get_bool(const std::string& n) const { return get_as<bool>(get(n), n); }
const std::string& Attrs::get_string(const std::string& n) const {
  return get_as<std::string>(get(n), n);
}
const std::vector<int64_t>& Attrs::get_ints(const std::string& n) const {
  return get_as<std::vector<int64_t>>(get(n), n);
}

std::string Attrs::str() const {
  std::ostringstream os;
  os.precision(17);
  bool first = true;
  for (const auto& [name, v] : values_) {
    os << (first ? "" : ", ") << name << "=";
    first = false;
    std::visit(
        [&os](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
            os << "[";
            for (size_t i = 0; i < x.size(); ++i) os << (i ? ", " : "") << x[i];
            os << "]";
          } else if constexpr (std::is_same_v<T, bool>) {
            os << (x ? "true" : "false");
          } else {
            os << x;
          }
        },
        v);
  }
  return os.str();
}

const char* op_kind_name(OpKind k) {
  switch (k) {
    case OpKind::Source: return "source";
    case OpKind::Pointwise: return "pointwise";
    case OpKind::Reduction: return "reduction";
    case OpKind::Injective: return "injective";
    case OpKind::Contraction: return "contraction";
    case OpKind::Extern: return "extern";
  }
  return "?";
}

namespace {
class Registry {
 public:
  static Registry& get() {
    static Registry r;
    return r;
  }
  void add(OpDef def) {
    KILN_CHECK(def.infer && def.algorithm && def.reference, "op ", def.name,
               " needs infer, algorithm and reference");
    std::lock_guard<std::mutex> lock(mu_);
    if (ops_.count(def.name)) {
      user_error("register_op: an op named '", def.name, "' already exists; pick another name");
    }
    std::string name = def.name;
    ops_.emplace(std::move(name), std::move(def));
  }
  const OpDef* find(const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = ops_.find(name);
    return it == ops_.end() ? nullptr : &it->second;  // std::map nodes are stable
  }
  std::vector<std::string> names() {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::string> out;
    for (const auto& [n, d] : ops_) out.push_back(n);
    return out;
  }

 private:
  Registry() {
    std::vector<OpDef> all;
    for (auto* family : {&pointwise_ops, &reduce_ops, &shape_ops, &linalg_ops, &conv_ops, &index_ops, &random_ops, &adjoint_ops})
      for (OpDef& d : family()) all.push_back(std::move(d));
    attach_vjp_rules(all);
    for (OpDef& d : all) add(std::move(d));
  }
  std::mutex mu_;
  std::map<std::string, OpDef> ops_;
};
}  // namespace

OpDef make_op_def(std::string name, OpKind kind, int arity, InferFn infer, AlgorithmFn algorithm,
                  ReferenceFn reference) {
  OpDef d;
  d.name = std::move(name);
  d.kind = kind;
  d.arity = arity;
  d.infer = std::move(infer);
  d.algorithm = std::move(algorithm);
  d.reference = std::move(reference);
  return d;
}

void register_op(OpDef def) {
  def.halide_adjoint_fallback = true;
  Registry::get().add(std::move(def));
}
bool has_op(const std::string& name) { return Registry::get().find(name) != nullptr; }
std::vector<std::string> op_names() { return Registry::get().names(); }

const OpDef& get_op(const std::string& name) {
  if (const OpDef* d = Registry::get().find(name)) return *d;
  std::string known;
  for (const std::string& n : op_names()) known += (known.empty() ? "" : ", ") + n;
  user_error("unknown op '", name, "'; known ops: ", known);
}

TensorMeta infer_op(const OpDef& op, const std::vector<TensorMeta>& inputs, const Attrs& attrs) {
  if (op.arity >= 0 && int(inputs.size()) != op.arity) {
    user_error(op.name, ": expected ", op.arity, " tensor input", op.arity == 1 ? "" : "s",
               ", got ", inputs.size());
  }
  return op.infer(inputs, attrs);
}

namespace algo {

std::vector<Halide::Var> vars(int rank) {
  std::vector<Halide::Var> out;
  // Not "v<j>": Halide names its own anonymous Vars that way.
  for (int j = 0; j < rank; ++j) out.emplace_back("d" + std::to_string(j));
  return out;
}

std::vector<Halide::Expr> exprs(const std::vector<Halide::Var>& vs) {
  return std::vector<Halide::Expr>(vs.begin(), vs.end());
}

std::vector<Halide::Expr> broadcast_index(const TensorMeta& in, const TensorMeta& out,
                                          const std::vector<Halide::Expr>& out_vars) {
  // Halide dims count from the innermost, so NumPy's right-aligned broadcasting is
  // left-aligned here: input Halide dim j pairs with output Halide dim j.
  const int ri = in.shape.rank(), ro = out.shape.rank();
  std::vector<Halide::Expr> idx;
  for (int j = 0; j < ri; ++j) {
    const Dim& di = in.shape[ri - 1 - j];
    const Dim& dout = out.shape[ro - 1 - j];
    bool broadcast = di.is_static() && di.size == 1 && !(dout.is_static() && dout.size == 1);
    idx.push_back(broadcast ? Halide::Expr(0) : out_vars[size_t(j)]);
  }
  return idx;
}

Halide::Type halide_type(DType t) { return Halide::Type(to_halide_type(t)); }

Halide::Expr constant(Halide::Type t, double v) {
  // A bool is true for any non-zero value (make_const would keep the lowest bit: -2 is false).
  if (t.is_bool()) return Halide::Internal::make_const(t, int64_t(v != 0.0));
  return Halide::Internal::make_const(t, v);
}

Halide::Expr to_compute(const Halide::Expr& e, DType storage) {
  DType c = compute_dtype(storage);
  return c == storage ? e : Halide::cast(halide_type(c), e);
}

Halide::Expr to_storage(const Halide::Expr& e, DType storage) {
  return e.type() == halide_type(storage) ? e : Halide::cast(halide_type(storage), e);
}

Halide::Expr classified(const Halide::Expr& x) {
  const auto* c = x.as<Halide::Internal::Cast>();
  if (c && c->value.type().is_float() && c->value.type().bits() < x.type().bits()) return classified(c->value);
  return x;
}

namespace {
struct FloatBits {
  Halide::Expr bits;      // the value's bits as an unsigned integer
  Halide::Expr inf;       // +inf's bits in its type
  Halide::Expr abs_mask;  // every bit but the sign
};
FloatBits float_bits(const Halide::Expr& wide) {
  const Halide::Expr x = classified(wide);
  const int bits = x.type().bits();
  Halide::Type ut = Halide::UInt(bits, x.type().lanes());
  uint64_t inf = bits == 64 ? 0x7ff0000000000000ull : bits == 32 ? 0x7f800000ull : 0x7c00ull;
  if (x.type().is_bfloat()) inf = 0x7f80ull;
  return {Halide::reinterpret(ut, x), Halide::Internal::make_const(ut, inf),
          Halide::Internal::make_const(ut, (uint64_t(1) << (bits - 1)) - 1)};
}
}  // namespace

Halide::Expr is_nan(const Halide::Expr& x) {
  if (!x.type().is_float()) return Halide::cast(Halide::Bool(x.type().lanes()), false);
  const FloatBits f = float_bits(x);
  return (f.bits & f.abs_mask) > f.inf;
}

Halide::Expr nonzero(const Halide::Expr& x) {
  if (!x.type().is_float()) return x != Halide::Internal::make_zero(x.type());
  const FloatBits f = float_bits(x);
  return (f.bits & f.abs_mask) != Halide::Internal::make_zero(f.bits.type());
}

Halide::Expr is_pos_inf(const Halide::Expr& x) {
  if (!x.type().is_float()) return Halide::cast(Halide::Bool(x.type().lanes()), false);
  const FloatBits f = float_bits(x);
  return f.bits == f.inf;
}

Halide::Expr require(const Halide::Expr& condition, const Halide::Expr& value,
                     const std::vector<Halide::Expr>& message) {
  std::vector<Halide::Expr> args = {value, Halide::Expr(kRequireMarker)};
  args.insert(args.end(), message.begin(), message.end());
  return Halide::require(condition, args);
}

// Halide bounds a reinterpret by its type alone (unbounded for floats), and the cast between
// the two keeps its simplifier from folding them (it folds a reinterpret of a reinterpret)
// before the image checks' bounds; LLVM folds the bitcasts.
Halide::Expr opaque_read(const Halide::Expr& read) {
  const Halide::Type t = read.type();
  if (!t.is_float()) return read;
  return Halide::reinterpret(t, Halide::cast(t.with_code(Halide::Type::UInt), Halide::reinterpret(t.with_code(Halide::Type::Int), read)));
}

Halide::Expr through_opaque_read(const Halide::Expr& e) {
  using namespace Halide::Internal;
  const Reinterpret* outer = e.as<Reinterpret>();
  const Cast* cast = outer ? outer->value.as<Cast>() : nullptr;
  const Reinterpret* inner = cast ? cast->value.as<Reinterpret>() : nullptr;
  return inner && inner->value.type() == e.type() ? inner->value : e;
}

Halide::Expr propagate_nan(const Halide::Expr& x, const Halide::Expr& y) {
  return x.type().is_float() ? Halide::select(algo::is_nan(x), Halide::cast(y.type(), x), y) : y;
}

namespace {
// Whether e, or a pure Func it calls (up to `levels` deep), holds a NaN constant: LLVM folds
// any arithmetic with a NaN operand to NaN. (An inf folds only with constants around it, and
// a masked softmax's where(mask, x, -inf) must keep its vector sums.)
bool reaches_nan_constant(const Halide::Expr& e, int levels) {
  using namespace Halide::Internal;
  struct Finder : IRGraphVisitor {
    int levels;
    bool found = false;
    std::set<std::string> seen;
    using IRGraphVisitor::visit;
    void visit(const FloatImm* f) override { found = found || std::isnan(f->value); }
    void visit(const Call* c) override {
      IRGraphVisitor::visit(c);
      if (found || levels == 0 || c->call_type != Call::Halide || !c->func.defined()) return;
      Function f(c->func);
      if (!f.is_pure() || !seen.insert(f.name()).second) return;
      --levels;
      for (const Halide::Expr& v : f.values()) v.accept(this);
      ++levels;
    }
  } finder;
  finder.levels = levels;
  e.accept(&finder);
  return finder.found;
}
}  // namespace

std::string func_name(const std::string& name) {
  static const std::set<std::string> intrinsics = [] {
    using Halide::Internal::Call;
    std::set<std::string> names;
    for (int op = 0; op < int(Call::IntrinsicOpCount); ++op) names.insert(Call::get_intrinsic_name(Call::IntrinsicOp(op)));
    return names;
  }();
  return intrinsics.count(name) ? name + "_op" : name;
}

Halide::Expr accumulate(const Halide::Expr& acc, const Halide::Expr& x, bool product) {
  Halide::Expr y = product ? acc * x : acc + x;
  constexpr int kLevels = 8;
  return x.type().is_float() && reaches_nan_constant(x, kLevels) ? Halide::strict_float(y) : y;
}

}  // namespace algo

namespace ref {

std::vector<int64_t> strides(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> s(sizes.size(), 1);
  for (int i = int(sizes.size()) - 2; i >= 0; --i) s[size_t(i)] = s[size_t(i + 1)] * sizes[size_t(i + 1)];
  return s;
}

std::vector<int64_t> unravel(int64_t linear, const std::vector<int64_t>& sizes) {
  std::vector<int64_t> idx(sizes.size());
  for (int i = int(sizes.size()) - 1; i >= 0; --i) {
    idx[size_t(i)] = sizes[size_t(i)] ? linear % sizes[size_t(i)] : 0;
    linear = sizes[size_t(i)] ? linear / sizes[size_t(i)] : 0;
  }
  return idx;
}

int64_t load_as_int64(const void* base, DType t, int64_t index) {
  switch (t) {
    case DType::I32: return static_cast<const int32_t*>(base)[index];
    case DType::I64: return static_cast<const int64_t*>(base)[index];
    case DType::Bool: return static_cast<const uint8_t*>(base)[index] != 0;
    default: KILN_INTERNAL_ERROR("an integer load from ", dtype_name(t));
  }
}

int64_t broadcast_offset(const std::vector<int64_t>& in_sizes,
                         const std::vector<int64_t>& out_sizes,
                         const std::vector<int64_t>& out_index) {
  const size_t ri = in_sizes.size(), ro = out_sizes.size();
  int64_t off = 0, stride = 1;
  for (size_t k = 0; k < ri; ++k) {  // from the innermost dim
    size_t i = ri - 1 - k, o = ro - 1 - k;
    int64_t coord = in_sizes[i] == 1 ? 0 : out_index[o];
    off += coord * stride;
    stride *= in_sizes[i];
  }
  return off;
}

}  // namespace ref

}  // namespace kiln
