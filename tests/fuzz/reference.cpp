#include "reference.h"

#include <cmath>
#include <limits>
#include <set>
#include <string>

namespace kiln::fuzz {

namespace {

double ulp_of(DType t) {
  switch (t) {
    case DType::F64: return 0x1p-52;
    case DType::F32: return 0x1p-23;
    case DType::F16: return 0x1p-10;
    case DType::BF16: return 0x1p-7;
    default: return 0;
  }
}

uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

// t with each element scaled by 1 +- 2 ulps (signs from a hash of round, node, index).
// `absolute`: also moved by 2 ulps of the tensor's largest finite magnitude (all up in odd
// rounds, down in even ones, so a step function's threshold is seen from both sides), the error of
// ops that combine elements (a log_softmax of [25, 0] is 0 in f32 at 25, -1.4e-11 exactly).
Tensor nudge(const Tensor& t, uint64_t round, int node, bool absolute = false) {
  if (!is_float(t.dtype())) return t;
  std::vector<double> v = t.to_doubles();
  const double u = 2 * ulp_of(t.dtype());
  double scale = 0;
  if (absolute)
    for (double x : v)
      if (std::isfinite(x)) scale = std::max(scale, std::fabs(x));
  for (size_t i = 0; i < v.size(); ++i) {
    bool up = mix(round * 0x9E3779B97F4A7C15ull ^ (uint64_t(node) << 32) ^ i) & 1;
    // A value within that error of 0 may come out as 0 (log_softmax's largest element, 0
    // in f32 where it is -2e-11 exactly, and so false to logical_and): in odd rounds it is 0.
    if (absolute && round % 2 && std::fabs(v[i]) <= u * scale) v[i] = 0;
    else v[i] = v[i] * (up ? 1 + u : 1 - u) + (round % 2 ? u : -u) * scale;  // up in odd rounds, down in even ones
  }
  return from_vector(v, t.shape(), t.dtype());
}

// t with its subnormal values (in its dtype) made zeros of their sign, as flushing does.
Tensor flush(const Tensor& t) {
  if (!is_float(t.dtype())) return t;
  const double smallest = t.dtype() == DType::F64 ? std::numeric_limits<double>::min()
                          : t.dtype() == DType::F16 ? 6.103515625e-05
                                                    : double(std::numeric_limits<float>::min());
  std::vector<double> v = t.to_doubles();
  bool any = false;
  for (double& x : v) {
    if (x != 0 && std::fabs(x) < smallest) {
      x = std::copysign(0.0, x);
      any = true;
    }
  }
  return any ? from_vector(v, t.shape(), t.dtype()) : t;
}

// In f64 too: the reference sums in another order, and a partial sum may overflow in one
// order and not in another.
bool has_large(const Tensor& t) {
  if (!is_float(t.dtype())) return false;
  const double limit = t.dtype() == DType::F16   ? 256.0
                       : t.dtype() == DType::F64 ? 1.3e154
                                                 : 1.8e19;  // sqrt of the largest finite value
  for (double v : t.to_doubles())
    if (std::isfinite(v) && std::fabs(v) > limit) return true;
  return false;
}

// Ops that accumulate (sums of products): the only ones whose own rounding error depends on
// more than their result, through cancellation or overflow inside.
bool accumulates(const std::string& op) {
  static const std::set<std::string> ops = {"matmul", "conv2d", "conv_transpose2d", "linear", "sum", "mean", "prod", "layer_norm",
                                            "rms_norm", "avg_pool2d", "adaptive_avg_pool2d", "cross_entropy",
                                            "mse_loss"};
  return ops.count(op) > 0;
}

// Other ops whose rounding error is relative to the largest element they combine.
bool combines(const std::string& op) {
  static const std::set<std::string> ops = {"softmax", "log_softmax"};
  return ops.count(op) > 0;
}

// sin, cos and tan of a computed value whose own rounding error (4 ulps of it) spans a
// radian or more: the result is anywhere in the function's range, and random nudges may
// all happen to land where the unnudged run did (kiln_fuzz seed 70000: sin of a
// layer_norm output of 1.3e38, compared with 0). Those elements take the ends of the
// range instead, the upper in odd rounds and the lower in even ones, so every consumer
// sees both. A program input is exact data: sin of it is well defined and judged.
Tensor spread_periodic(const std::string& op, const Tensor& x, const Tensor& result, uint64_t round) {
  if ((op != "sin" && op != "cos" && op != "tan") || !is_float(x.dtype())) return result;
  const std::vector<double> in = x.to_doubles();
  std::vector<double> v = result.to_doubles();
  const double error = 4 * ulp_of(x.dtype());
  const double end = op == "tan" ? 1e6 : 1;
  bool any = false;
  for (size_t i = 0; i < v.size() && i < in.size(); ++i) {
    if (std::isfinite(in[i]) && std::fabs(in[i]) * error >= 1) {
      v[i] = round % 2 ? end : -end;
      any = true;
    }
  }
  return any ? from_vector(v, result.shape(), result.dtype()) : result;
}

// interpret(graph, inputs, Reference) with every op result nudged, and the operands of
// accumulating ops too (the program's inputs are exact data: elsewhere they are not).
// Round kFlushRound nudges nothing and flushes every op result instead.
constexpr uint64_t kFlushRound = 5;
std::vector<Tensor> nudged_run(const Graph& graph, const std::vector<Tensor>& inputs, uint64_t round,
                               bool* overflow_risk) {
  std::vector<Tensor> values(graph.nodes().size());
  size_t next_input = 0;
  for (const Node& n : graph.nodes()) {
    if (n.is_placeholder()) {
      values[size_t(n.id)] = inputs[next_input++];
    } else if (n.is_constant()) {
      values[size_t(n.id)] = n.constant;
    } else {
      const bool acc = accumulates(n.op);
      std::vector<Tensor> args;
      std::vector<TensorMeta> metas;
      for (int i : n.inputs) {
        const Tensor& v = values[size_t(i)];
        // Only accumulating ops can overflow inside where the double reference does not.
        if (acc && has_large(v)) *overflow_risk = true;
        args.push_back(acc && round != kFlushRound ? nudge(v, round, -1 - i) : v);
        metas.push_back(v.meta());
      }
      const OpDef& op = get_op(n.op);
      if (round == kFlushRound) {
        values[size_t(n.id)] = flush(op.reference(args, n.attrs, infer_op(op, metas, n.attrs)));
        continue;
      }
      Tensor result = op.reference(args, n.attrs, infer_op(op, metas, n.attrs));
      const Node& first = graph.node(n.inputs.empty() ? n.id : n.inputs[0]);
      if (!first.is_placeholder() && !first.is_constant()) result = spread_periodic(n.op, args[0], result, round);
      values[size_t(n.id)] = nudge(result, round, n.id, round > 2 && (acc || combines(n.op)));
    }
  }
  std::vector<Tensor> out;
  for (int o : graph.outputs()) out.push_back(values[size_t(o)]);
  return out;
}

}  // namespace

ReferenceResult reference_with_slack(const Graph& graph, const std::vector<Tensor>& inputs, bool flush_subnormals) {
  ReferenceResult r;
  r.outputs = interpret(graph, inputs, InterpretMode::Reference);
  constexpr double kInf = std::numeric_limits<double>::infinity();
  for (const Tensor& o : r.outputs) r.slack.emplace_back(size_t(o.numel()), 0.0);
  // Rounds 1-2 nudge by ulps of each value, 3-4 also by ulps of each combining op's largest.
  for (uint64_t round = 1; round <= (flush_subnormals ? kFlushRound : 4); ++round) {
    std::vector<Tensor> nudged;
    try {
      nudged = nudged_run(graph, inputs, round, &r.overflow_risk);
    } catch (const std::exception&) {
      for (auto& s : r.slack) s.assign(s.size(), kInf);
      return r;
    }
    for (size_t k = 0; k < r.outputs.size(); ++k) {
      std::vector<double> want = r.outputs[k].to_doubles(), got = nudged[k].to_doubles();
      for (size_t i = 0; i < want.size(); ++i) {
        double a = got[i], b = want[i], d;
        if (std::isnan(a) || std::isnan(b)) d = std::isnan(a) && std::isnan(b) ? 0 : kInf;
        else if (std::isinf(a) || std::isinf(b)) d = a == b ? 0 : kInf;
        else if (!is_float(r.outputs[k].dtype())) d = a == b ? 0 : kInf;  // a comparison flipped: unstable
        else d = 4 * std::fabs(a - b);
        r.slack[k][i] = std::max(r.slack[k][i], d);
      }
    }
  }
  return r;
}

}  // namespace kiln::fuzz
