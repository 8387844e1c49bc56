#include "run.h"

#include <cmath>
#include <limits>

#include <sstream>

#include "compare.h"
#include "execute.h"
#include "reference.h"

namespace kiln::fuzz {

const std::vector<std::string>& all_paths() {
  static const std::vector<std::string> p = {"eager",         "compiled",       "grad-eager",
                                             "grad-compiled", "backward-eager", "backward-compiled"};
  return p;
}

namespace {

std::string meta_str(const Tensor& t) { return std::string(dtype_name(t.dtype())) + t.shape().str(); }

Meta meta_of(const Tensor& t) { return Meta{t.dtype(), t.sizes()}; }

class Judge {
 public:
  Judge(const RunOptions& o, const Progress& progress) : opts_(o), progress_(progress) {}

  bool wants(const std::string& path) const { return opts_.paths.empty() || opts_.paths.count(path); }

  void fail(const std::string& cls, const std::string& path, const std::string& kind, const std::string& detail) {
    out.failures.push_back({cls, path, kind, detail});
  }

  // Runs one path, turning exceptions into failures; false if it threw.
  bool guarded(const std::string& path, const std::function<void()>& body) {
    progress_(path);
    try {
      body();
      return true;
    } catch (const Error& e) {
      fail("exception", path, "", std::string("kiln::Error: ") + e.what());
    } catch (const std::exception& e) {
      fail("exception", path, "", std::string("std::exception: ") + e.what());
    }
    return false;
  }

  // Each of `got` against the reference's values; `what` names them ("output", "gradient").
  // `nonfinite_free`: positions where either side is NaN or infinite are not judged.
  void check(const std::string& path, const std::vector<Tensor>& got, const ReferenceResult& ref,
             const std::string& what, bool nonfinite_free = false) {
    if (got.size() != ref.outputs.size()) {
      fail("wrong", path, "meta", what + " count " + std::to_string(got.size()) + ", want " +
                                      std::to_string(ref.outputs.size()));
      return;
    }
    for (size_t k = 0; k < got.size(); ++k) {
      const Tensor& g = got[k];
      const Tensor& w = ref.outputs[k];
      if (!g.defined()) {
        fail("wrong", path, "meta", what + " " + std::to_string(k) + " is undefined");
        return;
      }
      if (!(g.meta() == w.meta())) {
        fail("wrong", path, "meta", what + " " + std::to_string(k) + " is " + meta_str(g) + ", reference " + meta_str(w));
        return;
      }
      if (ref.overflow_risk) continue;  // values computed in the dtype may overflow anywhere
      if (auto m = compare_values(g, w, ref.slack[k], nonfinite_free)) {
        fail("wrong", path, "value", what + " " + std::to_string(k) + " " + m->str(g) + "\n  " + path + ": " +
                                         g.str(12) + "\n  reference: " + w.str(12));
        return;
      }
    }
  }

  // kiln's result metas against PyTorch's.
  void check_metas(const std::string& path, const std::vector<Tensor>& got, const std::vector<Meta>& want,
                   const std::string& what) {
    for (size_t k = 0; k < got.size() && k < want.size(); ++k) {
      if (!got[k].defined()) continue;
      if (!(meta_of(got[k]) == want[k])) {
        fail("wrong", path, "meta", what + " " + std::to_string(k) + " is " + meta_str(got[k]) + ", PyTorch gives " +
                                        want[k].str());
        return;
      }
    }
  }

  Outcome out;

 private:
  const RunOptions& opts_;
  const Progress& progress_;
};

}  // namespace

Tensor loss_weight(const Tensor& output, size_t k) {
  return rand(output.shape(), 1000 + k, 0.5, 1.5, output.dtype());
}

namespace {

// The gradient of a leaf that got none is zero (kiln's grad() returns zeros there).
Tensor or_zeros(const Tensor& g, const Tensor& like) { return g.defined() ? g : zeros(like.shape(), like.dtype()); }

}  // namespace

// Whether an f32/f64/bf16 input holds a subnormal value. kiln's CPU kernels treat those as zero
// by default (core/float_env.h, as XLA does); the f64 reference does not, so such a
// program runs with IEEE subnormals kept, and the default flush mode is fuzzed by the rest.
bool has_subnormal_input(const Program& p) {
  for (const InputSpec& in : p.inputs) {
    // bf16 computes in f32 and shares its exponent range: its subnormals are f32's.
    if (in.meta.dtype != DType::F32 && in.meta.dtype != DType::F64 && in.meta.dtype != DType::BF16) continue;
    const double smallest = in.meta.dtype == DType::F64 ? std::numeric_limits<double>::min()
                                                        : double(std::numeric_limits<float>::min());
    for (double v : in.values)
      if (v != 0.0 && std::abs(v) < smallest) return true;
  }
  return false;
}

Outcome run_program(const Program& p, const RunOptions& options, const Progress& progress) {
  const bool flushing = !has_subnormal_input(p);
  set_flush_denormals(flushing);
  Judge j(options, progress);
  const std::vector<Meta> metas = infer(p);
  std::vector<Meta> expected;
  for (int o : p.outputs) expected.push_back(metas[size_t(o)]);
  const std::vector<Tensor> inputs = make_inputs(p);
  const TracedFn fn = [p](const std::vector<Tensor>& in) { return apply(p, in); };
  CompileOptions copts;
  copts.scheduler = options.scheduler;

  // The oracle. kiln refusing to trace a valid program ends the run: nothing to compare with.
  ReferenceResult ref;
  progress("reference");
  try {
    Graph g = trace(fn, inputs, copts);
    ref = reference_with_slack(g, inputs, flushing);
  } catch (const Error& e) {
    j.fail("refused", "reference", "", e.what());
    return j.out;
  }
  j.check_metas("reference", ref.outputs, expected, "output");
  // PyTorch's results (a golden file), judged against the same reference as kiln's paths:
  // the reference and the fuzzer's model of PyTorch (program.cpp) are checked by PyTorch.
  const bool golden = p.torch.present;  // judged as the path "pytorch"
  if (golden && !p.torch.error.empty()) {
    j.fail("wrong", "pytorch", "meta", "PyTorch rejects this program, which program.cpp accepts: " + p.torch.error);
    return j.out;
  }
  if (golden && j.wants("pytorch")) {
    std::vector<Tensor> torch_outputs;
    for (const InputSpec& t : p.torch.outputs) torch_outputs.push_back(make_input(t));
    j.check_metas("pytorch", torch_outputs, expected, "output");
    j.check("pytorch", torch_outputs, ref, "output");
  }

  if (j.wants("eager")) {
    std::vector<Tensor> got;
    if (j.guarded("eager", [&] { got = apply(p, inputs); })) j.check("eager", got, ref, "output");
  }
  if (j.wants("compiled")) {
    std::vector<Tensor> first, second;
    auto f = compile(fn, copts);
    if (j.guarded("compiled", [&] { first = f(inputs); })) {
      j.check("compiled", first, ref, "output");
      if (j.guarded("compiled", [&] { second = f(inputs); })) {
        for (size_t k = 0; k < first.size() && k < second.size(); ++k) {
          if (auto m = compare_exact(second[k], first[k])) {
            j.fail("wrong", "compiled", "repeat", "second call differs from the first, output " + std::to_string(k) +
                                                      " " + m->str(first[k]));
            break;
          }
        }
      }
    }
  }

  // ---- Gradients ----
  std::vector<int> argnums;
  for (int i = 0; i < int(p.inputs.size()); ++i)
    if (is_float(p.inputs[size_t(i)].meta.dtype) && p.inputs[size_t(i)].index_limit == 0) argnums.push_back(i);
  std::vector<size_t> float_outputs;
  for (size_t k = 0; k < ref.outputs.size(); ++k)
    if (is_float(ref.outputs[k].dtype())) float_outputs.push_back(k);
  bool any_grad = false;
  for (size_t i = 2; i < all_paths().size(); ++i) any_grad |= j.wants(all_paths()[i]);
  any_grad |= golden && j.wants("pytorch");
  if (argnums.empty() || float_outputs.empty() || !any_grad) return j.out;

  std::vector<Tensor> weights;
  if (!p.weights.empty() && p.weights.size() != float_outputs.size()) {
    j.fail("wrong", "pytorch", "meta", "the program gives " + std::to_string(p.weights.size()) +
                                           " loss weights for " + std::to_string(float_outputs.size()) + " float outputs");
    return j.out;
  }
  for (size_t i = 0; i < float_outputs.size(); ++i) {
    const size_t k = float_outputs[i];
    weights.push_back(p.weights.empty() ? loss_weight(ref.outputs[k], k) : make_input(p.weights[i]));
  }
  // loss = sum_k sum(outputs[k] * w_k), from the outputs of any path.
  auto loss_of = [float_outputs, weights](const std::vector<Tensor>& outs) {
    Tensor loss;
    for (size_t i = 0; i < float_outputs.size(); ++i) {
      Tensor t = sum(outs[float_outputs[i]] * weights[i]);
      loss = loss.defined() ? loss + t : t;
    }
    return loss;
  };
  const TracedFn loss_fn = [p, loss_of](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{loss_of(apply(p, in))};
  };
  std::vector<Meta> grad_metas;
  for (int i : argnums) grad_metas.push_back(p.inputs[size_t(i)].meta);

  ReferenceResult gref;
  progress("grad-reference");
  try {
    Graph g = trace(grad(loss_fn, argnums), inputs, copts);
    gref = reference_with_slack(g, inputs, flushing);
  } catch (const Error& e) {
    j.fail("refused", "grad-reference", "", e.what());
    return j.out;
  }
  j.check_metas("grad-reference", gref.outputs, grad_metas, "gradient");
  if (golden && j.wants("pytorch")) {
    std::vector<Tensor> torch_grads;
    for (const InputSpec& t : p.torch.grads) torch_grads.push_back(make_input(t));
    j.check_metas("pytorch", torch_grads, grad_metas, "gradient");
    // PyTorch's backward formulas meet inf and NaN in their own order (a product with a
    // mask where kiln selects): its non-finite gradients are not judged.
    j.check("pytorch", torch_grads, gref, "gradient", true);
  }

  // PyTorch's requires_grad of each value: float results of ops on values that require it
  // (comparisons, argmax, integer casts... cut the chain). Where no output of the loss
  // requires grad, PyTorch's backward() raises too, so the backward paths do not run.
  std::vector<bool> rg(size_t(p.num_values()), false);
  for (int i : argnums) rg[size_t(i)] = true;
  for (size_t k = 0; k < p.ops.size(); ++k) {
    const size_t v = p.inputs.size() + k;
    for (int a : p.ops[k].args) rg[v] = rg[v] || rg[size_t(a)];
    rg[v] = rg[v] && is_float(metas[v].dtype);
  }
  bool loss_requires_grad = false;
  for (size_t k : float_outputs) loss_requires_grad = loss_requires_grad || rg[size_t(p.outputs[k])];

  auto leaves = [&] {
    std::vector<Tensor> l = make_inputs(p);
    for (int i : argnums) l[size_t(i)] = l[size_t(i)].requires_grad();
    return l;
  };
  auto leaf_grads = [&](const std::vector<Tensor>& l) {
    std::vector<Tensor> g;
    for (int i : argnums) g.push_back(or_zeros(l[size_t(i)].grad(), l[size_t(i)]));
    return g;
  };
  auto check_grads = [&](const std::string& path, const std::vector<Tensor>& g) {
    j.check_metas(path, g, grad_metas, "gradient");
    j.check(path, g, gref, "gradient");
  };

  if (j.wants("grad-eager")) {
    std::vector<Tensor> g;
    if (j.guarded("grad-eager", [&] { g = grad(loss_fn, argnums)(inputs); })) check_grads("grad-eager", g);
  }
  if (j.wants("grad-compiled")) {
    std::vector<Tensor> g;
    if (j.guarded("grad-compiled", [&] { g = compile(grad(loss_fn, argnums), copts)(inputs); }))
      check_grads("grad-compiled", g);
  }
  if (j.wants("backward-eager") && loss_requires_grad) {
    std::vector<Tensor> l = leaves(), g;
    if (j.guarded("backward-eager", [&] {
          loss_fn(l)[0].backward();
          g = leaf_grads(l);
        }))
      check_grads("backward-eager", g);
  }
  if (j.wants("backward-compiled") && loss_requires_grad) {
    std::vector<Tensor> l = leaves(), g;
    if (j.guarded("backward-compiled", [&] {
          auto f = compile(fn, copts);
          loss_of(f(l)).backward();
          g = leaf_grads(l);
        }))
      check_grads("backward-compiled", g);
  }
  return j.out;
}

static std::string escape(const std::string& s) {
  std::string r;
  for (char c : s) {
    if (c == '\n') r += "\\n";
    else if (c == '\t') r += "\\t";
    else if (c == '\\') r += "\\\\";
    else r += c;
  }
  return r;
}

static std::string unescape(const std::string& s) {
  std::string r;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      char c = s[++i];
      r += c == 'n' ? '\n' : c == 't' ? '\t' : c;
    } else {
      r += s[i];
    }
  }
  return r;
}

std::string to_text(const Outcome& o) {
  std::string s;
  for (const Failure& f : o.failures)
    s += f.cls + "\t" + f.path + "\t" + f.kind + "\t" + escape(f.detail) + "\n";
  return s;
}

Outcome outcome_from_text(const std::string& text) {
  Outcome o;
  std::istringstream is(text);
  std::string line;
  while (std::getline(is, line)) {
    if (line.empty()) continue;
    std::vector<std::string> f;
    size_t start = 0;
    for (int i = 0; i < 3; ++i) {
      size_t tab = line.find('\t', start);
      if (tab == std::string::npos) break;
      f.push_back(line.substr(start, tab - start));
      start = tab + 1;
    }
    f.push_back(line.substr(start));
    if (f.size() == 4) o.failures.push_back({f[0], f[1], f[2], unescape(f[3])});
  }
  return o;
}

}  // namespace kiln::fuzz
