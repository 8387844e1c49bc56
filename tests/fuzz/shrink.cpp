#include "shrink.h"

#include <algorithm>
#include <cmath>

namespace kiln::fuzz {

namespace {

// The sub-tensor of `in` keeping the first `shape[d]` entries of each dim d.
std::vector<double> crop(const InputSpec& in, const std::vector<int64_t>& shape) {
  std::vector<double> out;
  const auto& old = in.meta.shape;
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t flat = 0;
    for (size_t d = 0; d < shape.size(); ++d) flat = flat * old[d] + idx[d];
    out.push_back(in.values[size_t(flat)]);
    for (int d = int(shape.size()) - 1; d >= 0; --d) {
      if (++idx[size_t(d)] < shape[size_t(d)]) break;
      idx[size_t(d)] = 0;
    }
  }
  return out;
}

// Replaces every use of value `from` (operands and outputs) with `to`.
Program substitute(Program p, int from, int to) {
  for (OpSpec& op : p.ops)
    for (int& v : op.args)
      if (v == from) v = to;
  for (int& o : p.outputs)
    if (o == from) o = to;
  return p;
}

bool simple_value(double v) { return !std::isfinite(v) || v == std::trunc(v); }

class Shrinker {
 public:
  Shrinker(const Failure& f, const std::function<Outcome(const Program&)>& run, int max_runs)
      : target_(f), run_(run), max_runs_(max_runs) {}

  ShrinkResult go(Program p) {
    best_ = prune(p);
    found_ = target_;
    bool progress = true;
    while (progress && runs_ < max_runs_) {
      progress = false;
      for (const Program& c : candidates(best_)) {
        if (runs_ >= max_runs_) break;
        if (try_candidate(c)) {
          progress = true;
          break;
        }
      }
    }
    return {best_, found_, runs_};
  }

 private:
  bool try_candidate(const Program& raw) {
    Program c = prune(raw);
    if (!is_valid(c) || to_text(c) == to_text(best_)) return false;
    ++runs_;
    for (const Failure& f : run_(c).failures) {
      if (f.signature() == target_.signature()) {
        best_ = c;
        found_ = f;
        return true;
      }
    }
    return false;
  }

  std::vector<Program> candidates(const Program& p) {
    std::vector<Program> out;
    const int ni = int(p.inputs.size());
    // Fewer outputs.
    if (p.outputs.size() > 1)
      for (int o : p.outputs) {
        Program q = p;
        q.outputs = {o};
        out.push_back(q);
      }
    // Bypass an op: its users read one of its operands instead (latest ops first).
    for (int k = int(p.ops.size()) - 1; k >= 0; --k)
      for (int a : p.ops[size_t(k)].args) out.push_back(substitute(p, ni + k, a));
    // Output an earlier value instead.
    for (int k = 0; k < int(p.ops.size()) - 1; ++k) {
      Program q = p;
      q.outputs = {ni + k};
      out.push_back(q);
    }
    // Smaller dims: every input dim of size d becomes 1, then d / 2, then d - 1 (all inputs
    // at once, so broadcasting partners stay compatible), or one input's dim alone.
    std::vector<int64_t> sizes;
    for (const InputSpec& in : p.inputs)
      for (int64_t d : in.meta.shape)
        if (d > 1 && std::find(sizes.begin(), sizes.end(), d) == sizes.end()) sizes.push_back(d);
    std::sort(sizes.rbegin(), sizes.rend());
    for (int64_t d : sizes)
      for (int64_t to : {int64_t(1), d / 2, d - 1}) {
        if (to < 1 || to >= d) continue;
        Program q = p;
        for (InputSpec& in : q.inputs) {
          std::vector<int64_t> s = in.meta.shape;
          for (int64_t& x : s)
            if (x == d) x = to;
          in.values = crop(in, s);
          in.meta.shape = s;
        }
        out.push_back(q);
        for (int i = 0; i < ni; ++i) {
          for (size_t dim = 0; dim < p.inputs[size_t(i)].meta.shape.size(); ++dim) {
            if (p.inputs[size_t(i)].meta.shape[dim] != d) continue;
            Program r = p;
            InputSpec& in = r.inputs[size_t(i)];
            std::vector<int64_t> s = in.meta.shape;
            s[dim] = to;
            in.values = crop(in, s);
            in.meta.shape = s;
            out.push_back(r);
          }
        }
      }
    // Simpler values: non-integers become 1 (half of them at a time, then one at a time),
    // then each value becomes 0 or 1.
    for (int i = 0; i < ni; ++i) {
      const InputSpec& in = p.inputs[size_t(i)];
      if (in.index_limit > 0) {
        Program q = p;
        q.inputs[size_t(i)].values.assign(in.values.size(), 0.0);
        out.push_back(q);
        continue;
      }
      std::vector<size_t> messy;
      for (size_t k = 0; k < in.values.size(); ++k)
        if (!simple_value(in.values[k])) messy.push_back(k);
      for (size_t chunk = messy.size(); chunk >= 1; chunk /= 2) {
        for (size_t start = 0; start < messy.size(); start += chunk) {
          Program q = p;
          for (size_t k = start; k < std::min(messy.size(), start + chunk); ++k) {
            double& v = q.inputs[size_t(i)].values[messy[k]];
            v = round_to(std::round(v) == 0 ? 1.0 : std::round(v), in.meta.dtype);
          }
          out.push_back(q);
        }
        if (chunk == 1) break;
      }
      if (in.values.size() <= 16)
        for (size_t k = 0; k < in.values.size(); ++k)
          for (double to : {0.0, 1.0}) {
            if (in.values[k] == to && !std::signbit(in.values[k])) continue;
            Program q = p;
            q.inputs[size_t(i)].values[k] = to;
            out.push_back(q);
          }
    }
    // Plainer dtypes: a 16-bit or f64 input as f32.
    for (int i = 0; i < ni; ++i) {
      DType t = p.inputs[size_t(i)].meta.dtype;
      if (t == DType::F16 || t == DType::BF16 || t == DType::F64) {
        Program q = p;
        q.inputs[size_t(i)].meta.dtype = DType::F32;
        for (double& v : q.inputs[size_t(i)].values) v = round_to(v, DType::F32);
        out.push_back(q);
      }
    }
    // Plainer attributes: keepdim off, scalar operands on the right.
    for (size_t k = 0; k < p.ops.size(); ++k) {
      const OpSpec& op = p.ops[k];
      if ((op.op == "sum" || op.op == "mean" || op.op == "max" || op.op == "min" || op.op == "prod") && op.ints[0]) {
        Program q = p;
        q.ops[k].ints[0] = 0;
        out.push_back(q);
      }
      if (op.args.size() == 1 && op.ints.size() == 1 && op.reals.size() == 1 && op.ints[0] == 1) {
        Program q = p;
        q.ops[k].ints[0] = 0;
        out.push_back(q);
      }
    }
    return out;
  }

  Failure target_;
  const std::function<Outcome(const Program&)>& run_;
  int max_runs_;
  int runs_ = 0;
  Program best_;
  Failure found_;
};

}  // namespace

ShrinkResult shrink(const Program& p, const Failure& failure, const std::function<Outcome(const Program&)>& run,
                    int max_runs) {
  return Shrinker(failure, run, max_runs).go(p);
}

}  // namespace kiln::fuzz
