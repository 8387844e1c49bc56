#include "generate.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>

namespace kiln::fuzz {

uint64_t Rng::next() {
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

int64_t Rng::range(int64_t lo, int64_t hi) { return lo + int64_t(next() % uint64_t(hi - lo + 1)); }

double Rng::unit() { return double(next() >> 11) * 0x1p-53; }

const std::vector<std::string>& all_ops() {
  static const std::vector<std::string> ops = {
      "sin", "cos", "tan", "asin", "acos", "atan", "asinh", "acosh", "atanh", "exp", "log", "abs", "neg", "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "erf",
      "floor", "ceil", "round", "silu", "softplus", "gelu", "leaky_relu", "clamp", "logical_not", "cast",
      "add", "sub", "mul", "div", "pow", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge",
      "logical_and", "logical_or", "where", "sum", "mean", "max", "min", "prod", "argmax", "var",
      "std_dev", "softmax", "log_softmax", "layer_norm", "rms_norm", "reshape", "permute", "transpose",
      "expand", "unsqueeze", "squeeze", "slice", "concat", "stack", "split", "pad", "matmul", "linear",
      "conv2d", "conv_transpose2d", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d", "gather", "index_select", "embedding",
      "one_hot", "tril", "triu", "cross_entropy", "mse_loss", "dropout"};
  return ops;
}

namespace {

struct Fail {};  // this attempt at an op did not fit the pool; try another

class Generator {
 public:
  Generator(uint64_t seed, const GenOptions& o) : rng_(seed), opts_(o) {
    if (opts_.ops.empty()) opts_.ops = all_ops();
    static const std::vector<std::pair<DType, int>> dtypes = {{DType::F32, 45}, {DType::F64, 15}, {DType::F16, 10},
                                                              {DType::BF16, 10}, {DType::I64, 10}, {DType::I32, 10}};
    int r = int(rng_.range(0, 99));
    for (auto [t, w] : dtypes) {
      if (r < w) {
        main_ = t;
        break;
      }
      r -= w;
    }
    double e = rng_.unit();
    edge_rate_ = e < 0.5 ? 0.0 : e < 0.8 ? 0.05 : 0.25;
  }

  Program run() {
    int n = int(rng_.range(1, opts_.max_ops));
    int tries = 0;
    while (num_ops_ < n && tries++ < 200) {
      std::vector<Node> saved = nodes_;
      std::vector<Meta> saved_metas = metas_;
      const std::string& op = rng_.pick(opts_.ops);
      try {
        OpSpec spec = build(op);
        Meta m = infer_op(spec, operand_metas(spec));
        if (m.numel() > 4096) throw Fail{};
        nodes_.push_back(Node{false, {}, spec});
        metas_.push_back(m);
        ++num_ops_;
        if (!is_valid(to_program({int(nodes_.size()) - 1}))) {
          --num_ops_;
          throw Fail{};
        }
      } catch (const Fail&) {
        nodes_ = saved;
        metas_ = saved_metas;
      } catch (const Invalid&) {
        nodes_ = saved;
        metas_ = saved_metas;
      }
    }
    // The last result, and sometimes a couple of earlier ones, are outputs.
    std::vector<int> outs = {int(nodes_.size()) - 1};
    std::vector<int> op_nodes;
    for (int i = 0; i < int(nodes_.size()); ++i)
      if (!nodes_[size_t(i)].is_input) op_nodes.push_back(i);
    int extra = int(rng_.range(0, 2));
    for (int i = 0; i < extra && !op_nodes.empty(); ++i) {
      int v = rng_.pick(op_nodes);
      if (std::find(outs.begin(), outs.end(), v) == outs.end()) outs.push_back(v);
    }
    return prune(to_program(outs));
  }

 private:
  // Values are numbered in creation order while generating (inputs and ops interleaved,
  // so an id never changes); a Program numbers its inputs first.
  struct Node {
    bool is_input;
    InputSpec input;
    OpSpec op;
  };

  Program to_program(const std::vector<int>& outputs) const {
    Program p;
    std::vector<int> id(nodes_.size());
    for (size_t i = 0; i < nodes_.size(); ++i)
      if (nodes_[i].is_input) {
        id[i] = int(p.inputs.size());
        p.inputs.push_back(nodes_[i].input);
      }
    int next = int(p.inputs.size());
    for (size_t i = 0; i < nodes_.size(); ++i)
      if (!nodes_[i].is_input) {
        id[i] = next++;
        OpSpec op = nodes_[i].op;
        for (int& v : op.args) v = id[size_t(v)];
        p.ops.push_back(op);
      }
    for (int o : outputs) p.outputs.push_back(id[size_t(o)]);
    return p;
  }

  std::vector<Meta> operand_metas(const OpSpec& s) {
    std::vector<Meta> a;
    for (int v : s.args) a.push_back(metas_[size_t(v)]);
    return a;
  }

  // ---- Inputs ----

  std::vector<int64_t> random_shape(int min_rank = 0, int max_rank = 4) {
    for (;;) {
      int r = min_rank + int(rng_.range(0, max_rank - min_rank));
      if (rng_.chance(0.3)) r = std::min(max_rank, std::max(min_rank, 2));
      std::vector<int64_t> s;
      for (int i = 0; i < r; ++i) s.push_back(random_dim());
      int64_t n = 1;
      for (int64_t d : s) n *= d;
      if (n <= 256) return s;
    }
  }

  int64_t random_dim() {
    double u = rng_.unit();
    if (u < 0.04) return 0;
    if (u < 0.24) return 1;
    if (u < 0.84) return rng_.range(2, 5);
    return rng_.range(6, 9);
  }

  double edge_value(DType t) {
    double huge = t == DType::F64 ? 1e300 : t == DType::F16 ? 60000 : 3e38;
    double tiny = t == DType::F64 ? 2.3e-308 : t == DType::F16 ? 6.2e-5 : 1.2e-38;
    double denormal = t == DType::F64 ? 5e-310 : t == DType::F16 ? 3e-7 : 1e-40;
    static const int kinds = 14;
    switch (rng_.range(0, kinds - 1)) {
      case 0: return 0.0;
      case 1: return -0.0;
      case 2: return std::numeric_limits<double>::infinity();
      case 3: return -std::numeric_limits<double>::infinity();
      case 4: return std::numeric_limits<double>::quiet_NaN();
      case 5: return huge;
      case 6: return -huge;
      case 7: return tiny;
      case 8: return -denormal;
      case 9: return denormal;
      case 10: return 89.0;  // exp overflows f32 here
      case 11: return -1e4;
      case 12: return 1e4;
      default: return 0.5;
    }
  }

  double random_value(DType t) {
    if (t == DType::Bool) return double(rng_.range(0, 1));
    if (!is_float(t)) return double(rng_.range(-4, 4));
    if (edge_rate_ > 0 && rng_.chance(edge_rate_)) return round_to(edge_value(t), t);
    double u = rng_.unit(), v;
    if (u < 0.4) v = rng_.unit() * 6 - 3;
    else if (u < 0.7) v = double(rng_.range(-12, 12)) / 4;  // exact in every float type
    else if (u < 0.9) v = (rng_.unit() * 2 - 1) * std::pow(10.0, double(rng_.range(-3, 3)));
    else v = double(rng_.range(-5, 5));
    return round_to(v, t);
  }

  int new_input(const Meta& m, int64_t index_limit = 0) {
    InputSpec in;
    in.meta = m;
    in.index_limit = index_limit;
    for (int64_t i = 0; i < m.numel(); ++i)
      in.values.push_back(index_limit > 0 ? double(rng_.range(0, index_limit - 1)) : random_value(m.dtype));
    nodes_.push_back(Node{true, in, {}});
    metas_.push_back(m);
    return int(nodes_.size()) - 1;
  }

  // The dtype of a fresh operand: mostly the program's, sometimes another (promotion).
  DType operand_dtype(bool float_only = false) {
    DType t = main_;
    if (rng_.chance(0.12)) {
      static const std::vector<DType> all = {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I32, DType::I64};
      t = rng_.pick(all);
    }
    if (float_only && !is_float(t)) t = DType::F32;
    return t;
  }

  // ---- Operands from the pool ----

  // A value satisfying `ok`, preferring the most recent; -1 if none.
  int pick_value(const std::function<bool(const Meta&)>& ok) {
    std::vector<int> c;
    for (int v = 0; v < int(metas_.size()); ++v)
      if (ok(metas_[size_t(v)])) c.push_back(v);
    if (c.empty()) return -1;
    if (rng_.chance(0.5)) return c.back();
    return rng_.pick(c);
  }

  // An operand satisfying `ok`, else a new input of meta `fresh()`.
  int operand(const std::function<bool(const Meta&)>& ok, const std::function<Meta()>& fresh) {
    int v = rng_.chance(0.85) ? pick_value(ok) : -1;
    if (v < 0) {
      Meta m = fresh();
      if (!ok(m)) throw Fail{};
      v = new_input(m);
    }
    return v;
  }

  int any_float(int min_rank = 0, int max_rank = 4) {
    return operand(
        [&](const Meta& m) { return is_float(m.dtype) && int(m.shape.size()) >= min_rank && int(m.shape.size()) <= max_rank; },
        [&] { return Meta{operand_dtype(true), random_shape(min_rank, max_rank)}; });
  }

  int any_value(bool allow_bool, int min_rank = 0) {
    return operand(
        [&](const Meta& m) { return (allow_bool || m.dtype != DType::Bool) && int(m.shape.size()) >= min_rank; },
        [&] { return Meta{operand_dtype(), random_shape(min_rank)}; });
  }

  // A shape that broadcasts with s: a suffix of it with some dims set to 1, or s with new
  // leading dims, or a 0-d shape.
  std::vector<int64_t> broadcast_partner(const std::vector<int64_t>& s) {
    double u = rng_.unit();
    if (u < 0.1) return {};
    std::vector<int64_t> out(s.begin() + long(rng_.range(0, int64_t(s.size()) / 2)), s.end());
    for (int64_t& d : out)
      if (rng_.chance(0.25)) d = 1;
    if (u > 0.85 && out.size() < 4) out.insert(out.begin(), rng_.range(1, 3));
    return out;
  }

  double random_scalar(DType t) {
    if (!is_float(t) && rng_.chance(0.8)) return double(rng_.range(-3, 3));
    if (edge_rate_ > 0 && rng_.chance(edge_rate_)) return edge_value(DType::F64);
    static const std::vector<double> nice = {0.0, 1.0, -1.0, 2.0, 0.5, -0.25, 3.0, 1e-3, 100.0};
    return rng_.chance(0.6) ? rng_.pick(nice) : double(float(rng_.unit() * 4 - 2));
  }

  std::vector<int64_t> random_axes(int rank) {
    std::vector<int64_t> axes;
    if (rank == 0 || rng_.chance(0.25)) return axes;
    for (int i = 0; i < rank; ++i)
      if (rng_.chance(0.5)) axes.push_back(rng_.chance(0.3) ? i - rank : i);
    if (axes.empty()) axes.push_back(rng_.range(0, rank - 1));
    return axes;
  }

  // A shape of n elements.
  std::vector<int64_t> reshape_target(int64_t n) {
    std::vector<int64_t> s;
    if (n == 0) {
      s = {0};
      if (rng_.chance(0.5)) s.push_back(rng_.range(1, 3));
      return s;
    }
    std::vector<int64_t> primes;
    for (int64_t p = 2, m = n; m > 1;) {
      if (m % p == 0) {
        primes.push_back(p);
        m /= p;
      } else {
        ++p;
      }
    }
    int r = int(rng_.range(primes.empty() ? 0 : 1, 4));
    if (r == 0) return {};
    s.assign(size_t(r), 1);
    for (int64_t p : primes) s[size_t(rng_.range(0, r - 1))] *= p;
    if (rng_.chance(0.3)) s[size_t(rng_.range(0, r - 1))] = -1;
    return s;
  }

  // ---- Ops ----

  OpSpec build(const std::string& op) {
    static const std::vector<std::string> unary_float = {"sin",  "cos",     "tan", "exp",  "log",      "sqrt", "rsqrt",
                                                         "asin", "acos", "atan", "asinh", "acosh", "atanh",
                                                         "tanh", "sigmoid", "erf", "silu", "softplus", "gelu", "leaky_relu"};
    static const std::vector<std::string> binary = {"add", "sub", "mul", "div", "pow", "maximum", "minimum", "eq",
                                                    "ne",  "lt",  "le",  "gt",  "ge",  "logical_and", "logical_or"};
    OpSpec s;
    s.op = op;
    auto has = [](const std::vector<std::string>& v, const std::string& x) {
      return std::find(v.begin(), v.end(), x) != v.end();
    };
    if (has(unary_float, op)) {
      s.args = {any_float()};
      if (op == "gelu") s.text = rng_.chance(0.5) ? "none" : "tanh";
      if (op == "leaky_relu") s.reals = {rng_.chance(0.5) ? 0.01 : 0.2};
      return s;
    }
    if (op == "abs" || op == "neg" || op == "relu" || op == "floor" || op == "ceil" || op == "round") {
      s.args = {any_value(false)};
      return s;
    }
    if (op == "clamp") {
      s.args = {any_value(false)};
      bool fl = is_float(metas_[size_t(s.args[0])].dtype);
      double lo = fl ? random_scalar(DType::F32) : double(rng_.range(-3, 1));
      double hi = fl ? random_scalar(DType::F32) : double(rng_.range(-1, 3));
      int mode = int(rng_.range(0, 2));
      s.ints = {mode != 1, mode != 0};
      s.reals = {lo, hi};
      return s;
    }
    if (op == "logical_not") {
      s.args = {any_value(true)};
      return s;
    }
    if (op == "cast") {
      s.args = {any_value(true)};
      static const std::vector<std::string> names = {"f32", "f64", "f16", "bf16", "i32", "i64", "bool"};
      s.text = rng_.pick(names);
      return s;
    }
    if (has(binary, op)) {
      bool logical = op == "logical_and" || op == "logical_or";
      bool fl = op == "pow";
      int a = fl ? any_float() : any_value(logical || op == "eq" || op == "ne");
      const Meta am = metas_[size_t(a)];
      if (rng_.chance(0.3)) {
        s.args = {a};
        s.reals = {random_scalar(am.dtype)};
        if (op == "pow" && rng_.chance(0.6)) s.reals = {rng_.pick(std::vector<double>{0.5, 2.0, 3.0, -1.0, 0.0, 1.5})};
        s.ints = {rng_.chance(0.3)};
        return s;
      }
      auto compatible = [&](const Meta& m) {
        if (fl && !is_float(m.dtype)) return false;
        if (!logical && op != "eq" && op != "ne" && m.dtype == DType::Bool) return false;
        try {
          infer_op(OpSpec{op, {0, 1}, {}, {}, ""}, {am, m});
          return true;
        } catch (const Invalid&) {
          return false;
        }
      };
      int b = operand(compatible, [&] {
        DType t = operand_dtype(fl);
        if (rng_.chance(0.7)) t = am.dtype;
        return Meta{t, broadcast_partner(am.shape)};
      });
      s.args = rng_.chance(0.5) ? std::vector<int>{a, b} : std::vector<int>{b, a};
      return s;
    }
    if (op == "where") {
      int c = operand([](const Meta& m) { return m.dtype == DType::Bool; },
                      [&] { return Meta{DType::Bool, random_shape()}; });
      const Meta cm = metas_[size_t(c)];
      auto partner = [&](const Meta& m) {
        try {
          infer_op(OpSpec{"add", {0, 1}, {}, {}, ""}, {cm, m});
          return m.dtype != DType::Bool;
        } catch (const Invalid&) {
          return false;
        }
      };
      int a = operand(partner, [&] { return Meta{operand_dtype(), broadcast_partner(cm.shape)}; });
      int b = operand(partner, [&] { return Meta{metas_[size_t(a)].dtype, broadcast_partner(cm.shape)}; });
      s.args = {c, a, b};
      return s;
    }
    if (op == "sum" || op == "mean" || op == "max" || op == "min" || op == "prod" || op == "var" || op == "std_dev") {
      bool fl = op == "mean" || op == "var" || op == "std_dev";
      int x = fl ? any_float() : any_value(op == "sum");
      const Meta m = metas_[size_t(x)];
      if (op == "prod" && !is_float(m.dtype)) throw Fail{};  // overflows
      s.args = {x};
      std::vector<int64_t> axes = random_axes(int(m.shape.size()));
      bool keepdim = rng_.chance(0.4) && !((op == "max" || op == "min") && axes.empty());
      if (fl && op != "mean") s.ints.push_back(rng_.range(0, 4) == 0 ? 0 : 1);
      s.ints.push_back(keepdim);
      s.ints.insert(s.ints.end(), axes.begin(), axes.end());
      return s;
    }
    if (op == "argmax") {
      int x = any_value(false, 1);
      int r = int(metas_[size_t(x)].shape.size());
      s.args = {x};
      s.ints = {rng_.range(-r, r - 1), rng_.chance(0.4)};
      return s;
    }
    if (op == "softmax" || op == "log_softmax") {
      int x = any_float(1);
      int r = int(metas_[size_t(x)].shape.size());
      s.args = {x};
      s.ints = {rng_.range(-r, r - 1)};
      return s;
    }
    if (op == "layer_norm" || op == "rms_norm") {
      int x = any_float(1);
      const Meta m = metas_[size_t(x)];
      int64_t k = rng_.range(1, std::min<int64_t>(2, int64_t(m.shape.size())));
      s.args = {x};
      s.ints = {k};
      s.reals = {op == "layer_norm" ? 1e-5 : 1e-6};
      Meta wm{m.dtype, std::vector<int64_t>(m.shape.end() - k, m.shape.end())};
      int extra = int(rng_.range(0, op == "layer_norm" ? 2 : 1));
      for (int i = 0; i < extra; ++i) s.args.push_back(new_input(wm));
      return s;
    }
    if (op == "reshape") {
      int x = any_value(true);
      s.args = {x};
      s.ints = reshape_target(metas_[size_t(x)].numel());
      return s;
    }
    if (op == "permute" || op == "transpose") {
      int x = any_value(true, op == "transpose" ? 1 : 0);
      int r = int(metas_[size_t(x)].shape.size());
      s.args = {x};
      if (op == "transpose") {
        s.ints = {rng_.range(-r, r - 1), rng_.range(-r, r - 1)};
      } else {
        for (int i = 0; i < r; ++i) s.ints.push_back(i);
        for (int i = r - 1; i > 0; --i) std::swap(s.ints[size_t(i)], s.ints[size_t(rng_.range(0, i))]);
      }
      return s;
    }
    if (op == "expand") {
      int x = any_value(true);
      const Meta m = metas_[size_t(x)];
      s.args = {x};
      if (m.shape.size() < 4 && rng_.chance(0.4)) s.ints.push_back(rng_.range(1, 3));
      for (int64_t d : m.shape) s.ints.push_back(d == 1 ? rng_.range(1, 4) : rng_.chance(0.3) ? -1 : d);
      return s;
    }
    if (op == "unsqueeze") {
      int x = any_value(true);
      int r = int(metas_[size_t(x)].shape.size());
      if (r >= 4) throw Fail{};
      s.args = {x};
      s.ints = {rng_.range(-r - 1, r)};
      return s;
    }
    if (op == "squeeze") {
      int x = operand(
          [](const Meta& m) { return std::count(m.shape.begin(), m.shape.end(), 1) > 0; },
          [&] { return Meta{operand_dtype(), {rng_.range(1, 4), 1}}; });
      const Meta m = metas_[size_t(x)];
      std::vector<int64_t> ones;
      for (int i = 0; i < int(m.shape.size()); ++i)
        if (m.shape[size_t(i)] == 1) ones.push_back(rng_.chance(0.3) ? i - int(m.shape.size()) : i);
      s.args = {x};
      s.ints = {rng_.pick(ones)};
      return s;
    }
    if (op == "slice") {
      int x = any_value(true, 1);
      const Meta m = metas_[size_t(x)];
      int r = int(m.shape.size());
      int ax = int(rng_.range(0, r - 1));
      int64_t len = m.shape[size_t(ax)];
      s.args = {x};
      s.ints = {rng_.chance(0.3) ? ax - r : ax, rng_.range(-len - 2, len + 1), rng_.range(-len - 1, len + 2),
                rng_.range(1, 3)};
      return s;
    }
    if (op == "concat" || op == "stack") {
      int x = any_value(true, op == "concat" ? 1 : 0);
      const Meta m = metas_[size_t(x)];
      int r = int(m.shape.size());
      int ax = op == "concat" ? int(rng_.range(0, r - 1)) : int(rng_.range(0, r));
      s.args = {x};
      int more = int(rng_.range(1, 2));
      for (int i = 0; i < more; ++i) {
        if (rng_.chance(0.3)) {
          s.args.push_back(x);
          continue;
        }
        Meta o = m;
        if (op == "concat") o.shape[size_t(ax)] = rng_.range(0, 3);
        int v = pick_value([&](const Meta& c) { return c == o; });
        s.args.push_back(v >= 0 && rng_.chance(0.5) ? v : new_input(o));
      }
      s.ints = {op == "concat" && rng_.chance(0.3) ? ax - r : ax};
      return s;
    }
    if (op == "split") {
      int x = any_value(true, 1);
      const Meta m = metas_[size_t(x)];
      int ax = int(rng_.range(0, int64_t(m.shape.size()) - 1));
      int64_t len = m.shape[size_t(ax)];
      if (len == 0) throw Fail{};
      int64_t size = rng_.range(1, len);
      s.args = {x};
      s.ints = {size, ax, rng_.range(0, (len + size - 1) / size - 1)};
      return s;
    }
    if (op == "pad") {
      int x = any_value(false, 1);
      const Meta m = metas_[size_t(x)];
      int pairs = int(rng_.range(1, std::min<int64_t>(2, int64_t(m.shape.size()))));
      s.args = {x};
      for (int i = 0; i < 2 * pairs; ++i) s.ints.push_back(rng_.range(-1, 2));
      s.reals = {is_float(m.dtype) ? random_scalar(m.dtype) : double(rng_.range(-2, 2))};
      return s;
    }
    if (op == "matmul") {
      int a = operand([](const Meta& m) { return !m.shape.empty() && (is_float(m.dtype) || m.dtype == DType::I64); },
                      [&] { return Meta{is_float(main_) ? main_ : DType::F32, random_shape(1, 3)}; });
      const Meta am = metas_[size_t(a)];
      int64_t k = am.shape.back();
      std::vector<int64_t> bs;
      if (am.shape.size() == 1 || rng_.chance(0.2)) {
        bs = rng_.chance(0.4) ? std::vector<int64_t>{k} : std::vector<int64_t>{k, rng_.range(1, 5)};
      } else {
        std::vector<int64_t> batch(am.shape.begin(), am.shape.end() - 2);
        bs = broadcast_partner(batch);
        if (bs.size() > 2) bs.resize(2);
        bs.push_back(k);
        bs.push_back(rng_.range(1, 5));
      }
      int b = operand([&](const Meta& m) { return m.dtype == am.dtype && m.shape == bs; },
                      [&] { return Meta{am.dtype, bs}; });
      s.args = {a, b};
      if (am.shape.size() == 1 && bs.size() >= 1 && rng_.chance(0.3)) std::swap(s.args[0], s.args[1]);
      return s;
    }
    if (op == "linear") {
      int x = any_float(1);
      const Meta m = metas_[size_t(x)];
      int64_t n = rng_.range(1, 5);
      s.args = {x, new_input(Meta{m.dtype, {n, m.shape.back()}})};
      if (rng_.chance(0.5)) s.args.push_back(new_input(Meta{m.dtype, {n}}));
      return s;
    }
    auto image = [&](int64_t min_hw) {
      return operand(
          [&](const Meta& m) {
            return is_float(m.dtype) && m.shape.size() == 4 && m.shape[1] > 0 && m.shape[2] >= min_hw && m.shape[3] >= min_hw;
          },
          [&] {
            return Meta{is_float(main_) ? main_ : DType::F32,
                        {rng_.range(0, 3) == 0 ? 2 : 1, rng_.range(1, 4), rng_.range(min_hw, 7), rng_.range(min_hw, 7)}};
          });
    };
    // Groups for `c` channels: mostly one, else any divisor.
    auto conv_groups = [&](int64_t c) {
      std::vector<int64_t> groups;
      for (int64_t g = 1; g <= c; ++g)
        if (c % g == 0) groups.push_back(g);
      return rng_.chance(0.7) ? int64_t(1) : rng_.pick(groups);
    };
    if (op == "conv2d") {
      int x = image(1);
      const Meta m = metas_[size_t(x)];
      int64_t c = m.shape[1];
      int64_t g = conv_groups(c);
      int64_t o = g * rng_.range(1, 2);
      int64_t kh = rng_.range(1, 3), kw = rng_.range(1, 3);
      s.args = {x, new_input(Meta{m.dtype, {o, c / g, kh, kw}})};
      if (rng_.chance(0.5)) s.args.push_back(new_input(Meta{m.dtype, {o}}));
      s.ints = {rng_.range(1, 2), rng_.range(0, 1), rng_.chance(0.8) ? 1 : 2, g};
      return s;
    }
    if (op == "conv_transpose2d") {
      int x = image(1);
      const Meta m = metas_[size_t(x)];
      int64_t c = m.shape[1];
      int64_t g = conv_groups(c);
      int64_t og = rng_.range(1, 2), kh = rng_.range(1, 3), kw = rng_.range(1, 3);
      int64_t st = rng_.range(1, 2), p = rng_.range(0, 1), d = rng_.chance(0.8) ? 1 : 2;
      int64_t q = rng_.chance(0.7) ? 0 : rng_.range(0, std::max(st, d) - 1);
      auto out = [&](int64_t in, int64_t k) { return (in - 1) * st - 2 * p + d * (k - 1) + q + 1; };
      if (out(m.shape[2], kh) < 1 || out(m.shape[3], kw) < 1) throw Fail{};
      s.args = {x, new_input(Meta{m.dtype, {c, og, kh, kw}})};
      if (rng_.chance(0.5)) s.args.push_back(new_input(Meta{m.dtype, {og * g}}));
      s.ints = {st, p, q, d, g};
      return s;
    }
    if (op == "max_pool2d" || op == "avg_pool2d") {
      int x = image(1);
      int64_t k = rng_.range(1, 3);
      s.args = {x};
      s.ints = {k, rng_.chance(0.3) ? 0 : rng_.range(1, 2), rng_.range(0, k / 2)};
      if (op == "max_pool2d") s.ints.push_back(rng_.chance(0.8) ? 1 : 2);
      s.ints.push_back(rng_.chance(0.3));
      if (op == "avg_pool2d") s.ints.push_back(rng_.chance(0.7));
      return s;
    }
    if (op == "adaptive_avg_pool2d") {
      int x = image(1);
      s.args = {x};
      s.ints = {rng_.range(1, 4), rng_.range(1, 4)};
      return s;
    }
    if (op == "gather") {
      int x = any_value(true, 1);
      const Meta m = metas_[size_t(x)];
      int r = int(m.shape.size());
      int ax = int(rng_.range(0, r - 1));
      if (m.shape[size_t(ax)] == 0) throw Fail{};
      std::vector<int64_t> is;
      for (int i = 0; i < r; ++i) is.push_back(i == ax ? rng_.range(1, 4) : rng_.range(0, m.shape[size_t(i)]));
      int idx = new_input(Meta{DType::I64, is}, m.shape[size_t(ax)]);
      s.args = {x, idx};
      s.ints = {rng_.chance(0.3) ? ax - r : ax};
      return s;
    }
    if (op == "index_select") {
      int x = any_value(true, 1);
      const Meta m = metas_[size_t(x)];
      int ax = int(rng_.range(0, int64_t(m.shape.size()) - 1));
      if (m.shape[size_t(ax)] == 0) throw Fail{};
      int idx = new_input(Meta{DType::I64, {rng_.range(0, 5)}}, m.shape[size_t(ax)]);
      s.args = {x, idx};
      s.ints = {ax};
      return s;
    }
    if (op == "embedding") {
      int w = operand([](const Meta& m) { return is_float(m.dtype) && m.shape.size() == 2 && m.shape[0] > 0; },
                      [&] { return Meta{operand_dtype(true), {rng_.range(1, 6), rng_.range(1, 4)}}; });
      int idx = new_input(Meta{DType::I64, random_shape(0, 2)}, metas_[size_t(w)].shape[0]);
      s.args = {w, idx};
      return s;
    }
    if (op == "one_hot") {
      int64_t c = rng_.range(1, 5);
      s.args = {new_input(Meta{DType::I64, random_shape(0, 2)}, c)};
      s.ints = {c};
      return s;
    }
    if (op == "tril" || op == "triu") {
      s.args = {any_value(true, 2)};
      s.ints = {rng_.range(-2, 2)};
      return s;
    }
    if (op == "cross_entropy") {
      int x = any_float(1, 2);
      const Meta m = metas_[size_t(x)];
      if (m.shape.back() == 0) throw Fail{};
      std::vector<int64_t> ts(m.shape.begin(), m.shape.end() - 1);
      int t;
      if (rng_.chance(0.7)) {
        t = new_input(Meta{DType::I64, ts}, m.shape.back());
      } else {
        t = new_input(m);
        for (double& v : nodes_[size_t(t)].input.values) v = round_to(rng_.unit(), m.dtype);
      }
      s.args = {x, t};
      s.text = rng_.pick(std::vector<std::string>{"mean", "sum", "none"});
      return s;
    }
    if (op == "mse_loss") {
      int a = any_float();
      const Meta m = metas_[size_t(a)];
      int b = operand([&](const Meta& c) { return c == m; }, [&] { return m; });
      s.args = {a, b};
      return s;
    }
    if (op == "dropout") {
      s.args = {any_float()};
      s.reals = {rng_.pick(std::vector<double>{0.0, 0.25, 0.5})};
      s.ints = {rng_.range(0, 1000), rng_.chance(0.8)};
      return s;
    }
    throw Fail{};
  }

  Rng rng_;
  GenOptions opts_;
  DType main_ = DType::F32;
  double edge_rate_ = 0;
  std::vector<Node> nodes_;
  std::vector<Meta> metas_;  // of every node
  int num_ops_ = 0;
};

}  // namespace

Program generate(uint64_t seed, const GenOptions& options) { return Generator(seed, options).run(); }

}  // namespace kiln::fuzz
