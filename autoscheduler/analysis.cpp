#include "analysis.h"

#include <algorithm>
#include <sstream>

#include "search.h"  // stable_name

namespace kiln::autoschedule {

using namespace Halide;
using namespace Halide::Internal;

namespace {

// A libm call per lane (sinf, cosf, tanhf, ...), in cycles: sin and cos of 8M floats on a
// 16-core Xeon took 6 ms, about 28 cycles per element for the pair with their exp and log.
constexpr double kScalarCallCycles = 12;

// Whether Halide lowers a call to a per-lane libm call on a CPU (sincosf, tanhf in the
// assembly of a 16-lane vectorized loop) rather than to vector code (exp, log, pow).
bool is_scalar_libm_call(const std::string& name) {
  static const char* const kScalar[] = {"sin", "cos", "tan", "asin", "acos", "atan", "atan2",
                                        "sinh", "cosh", "tanh", "asinh", "acosh", "atanh"};
  const std::string base = name.substr(0, name.rfind('_'));  // sin_f32 -> sin
  for (const char* s : kScalar) {
    if (base == s) return true;
  }
  return false;
}

// Arithmetic per evaluation of an expression: one per operation, ten per transcendental
// call that is vector code (exp, log: polynomial approximations), a libm call's cycles per
// lane for the others, none for loads and index math on ints.
class FlopCounter : public IRVisitor {
 public:
  double flops = 0;
  double scalar_cycles = 0;

 private:
  using IRVisitor::visit;
  void count(const Type& t) {
    if (t.is_float()) flops += 1;
  }
  void visit(const Add* op) override { count(op->type), IRVisitor::visit(op); }
  void visit(const Sub* op) override { count(op->type), IRVisitor::visit(op); }
  void visit(const Mul* op) override { count(op->type), IRVisitor::visit(op); }
  void visit(const Div* op) override { flops += op->type.is_float() ? 4 : 0, IRVisitor::visit(op); }
  void visit(const Min* op) override { count(op->type), IRVisitor::visit(op); }
  void visit(const Max* op) override { count(op->type), IRVisitor::visit(op); }
  void visit(const Select* op) override { flops += 1, IRVisitor::visit(op); }
  void visit(const Call* op) override {
    if (op->call_type == Call::PureExtern) {
      if (is_scalar_libm_call(op->name)) {
        scalar_cycles += kScalarCallCycles;
      } else {
        flops += 10;
      }
    }
    IRVisitor::visit(op);
  }
};

FlopCounter count_arithmetic(const std::vector<Expr>& exprs) {
  FlopCounter c;
  for (const Expr& e : exprs) e.accept(&c);
  return c;
}

// A definition that is one load (of a Func or buffer), possibly cast or reinterpreted (kiln
// reads its float inputs through reinterprets that hide them from Halide's bounds, and
// LLVM folds them): inlining it costs nothing but the load itself.
bool is_trivial(const Function& f) {
  if (f.has_update_definition() || f.has_extern_definition() || f.values().size() != 1) return false;
  Expr e = f.values()[0];
  while (e.as<Cast>() || e.as<Reinterpret>()) e = e.as<Cast>() ? e.as<Cast>()->value : e.as<Reinterpret>()->value;
  const Call* call = e.as<Call>();
  return call && (call->call_type == Call::Halide || call->call_type == Call::Image);
}

// Calls to Funcs in one definition's expressions, counted per callee as distinct argument
// lists: Halide's common-subexpression elimination computes a value called twice at the
// same point once. `identity` keeps the callees called only at `vars` (the caller's own
// point, in order).
class CallCounter : public IRVisitor {
 public:
  explicit CallCounter(std::vector<std::string> vars = {}) : vars_(std::move(vars)) {}
  std::map<std::string, int> calls;
  std::set<std::string> identity;
  // Callees every call reads at a permutation of the caller's own point: for each of the
  // callee's dims, the caller's dim whose var indexes it.
  std::map<std::string, std::vector<int>> permutation;

 private:
  using IRVisitor::visit;
  void visit(const Call* op) override {
    if (op->call_type == Call::Halide) {
      std::ostringstream key;
      bool at_own_point = op->args.size() == vars_.size();
      std::vector<int> perm;
      for (size_t i = 0; i < op->args.size(); ++i) {
        key << op->args[i] << ",";
        const Variable* v = op->args[i].as<Variable>();
        at_own_point = at_own_point && v && v->name == vars_[i];
        const auto at = v ? std::find(vars_.begin(), vars_.end(), v->name) : vars_.end();
        if (at != vars_.end() && std::find(perm.begin(), perm.end(), int(at - vars_.begin())) == perm.end()) {
          perm.push_back(int(at - vars_.begin()));
        }
      }
      if (seen_[op->name].insert(key.str()).second) calls[op->name]++;
      if (!at_own_point) not_identity_.insert(op->name);
      if (at_own_point && !not_identity_.count(op->name)) {
        identity.insert(op->name);
      } else {
        identity.erase(op->name);
      }
      const bool permuted = perm.size() == vars_.size() && op->args.size() == vars_.size();
      if (!permuted || (permutation.count(op->name) && permutation.at(op->name) != perm)) not_permuted_.insert(op->name);
      if (not_permuted_.count(op->name)) {
        permutation.erase(op->name);
      } else {
        permutation[op->name] = perm;
      }
    }
    IRVisitor::visit(op);
  }
  std::vector<std::string> vars_;
  std::map<std::string, std::set<std::string>> seen_;
  std::set<std::string> not_identity_, not_permuted_;
};

class Mentions : public IRVisitor {
 public:
  explicit Mentions(std::string var) : var_(std::move(var)) {}
  bool found = false;

 private:
  using IRVisitor::visit;
  void visit(const Variable* v) override { found |= v->name == var_; }
  std::string var_;
};

bool mentions(const Expr& e, const std::string& var) {
  Mentions m(var);
  e.accept(&m);
  return m.found;
}

// Does some load that depends on a reduction var use `var` in its innermost argument
// (Halide dim 0), so that consecutive values of `var` read consecutive addresses?
// (Loads that no reduction var reaches, softmax's max in its sum, do not count.)
class InnermostReader : public IRVisitor {
 public:
  InnermostReader(std::string var, const std::vector<std::string>& rvars) : var_(std::move(var)), rvars_(rvars) {}
  bool found = false;

 private:
  using IRVisitor::visit;
  void visit(const Call* c) override {
    if ((c->call_type == Call::Halide || c->call_type == Call::Image) && !c->args.empty() &&
        mentions(c->args[0], var_)) {
      for (const Expr& a : c->args) {
        for (const std::string& r : rvars_) found |= mentions(a, r);
      }
    }
    IRVisitor::visit(c);
  }
  std::string var_;
  const std::vector<std::string>& rvars_;
};

bool read_innermost_by(const Expr& e, const std::string& var, const std::vector<std::string>& rvars) {
  InnermostReader r(var, rvars);
  e.accept(&r);
  return r.found;
}

// The update's loads of other Funcs and images, each classed by whether its indices use
// the first and second pure vars. A load repeated in the expression (pooling's NaN checks
// read the window's value three times) is one load.
class OperandLoadCounter : public IRVisitor {
 public:
  OperandLoadCounter(std::string self, std::string v0, std::string v1)
      : self_(std::move(self)), v0_(std::move(v0)), v1_(std::move(v1)) {}
  FuncInfo::OperandLoads loads;

 private:
  using IRVisitor::visit;
  void visit(const Call* c) override {
    const bool seen = std::any_of(seen_.begin(), seen_.end(), [&](const Expr& e) { return equal(e, Expr(c)); });
    if ((c->call_type == Call::Halide || c->call_type == Call::Image) && c->name != self_ && !seen) {
      seen_.push_back(c);
      bool col = false, row = false;
      for (const Expr& a : c->args) {
        col |= mentions(a, v0_);
        row |= mentions(a, v1_);
      }
      (col && row ? loads.both : col ? loads.columns : row ? loads.rows : loads.neither)++;
    }
    IRVisitor::visit(c);
  }
  std::string self_, v0_, v1_;
  std::vector<Expr> seen_;
};

ReductionKind classify(const Function& f, const std::vector<std::string>& rvars) {
  if (!f.has_update_definition()) return ReductionKind::None;
  if (f.updates().size() != 1 || rvars.empty() || f.values().size() != 1) return ReductionKind::Other;
  const Definition& u = f.updates()[0];
  // The update must store to its own pure vars (not a scatter).
  for (size_t i = 0; i < u.args().size(); ++i) {
    const Variable* v = u.args()[i].as<Variable>();
    if (!v || v->name != f.args()[i]) return ReductionKind::Other;
  }
  const std::vector<std::string>& vars = f.args();
  if (vars.empty()) return ReductionKind::Total;
  // Without lets, so that an index bound to a let (the pooling window's column) is seen.
  const Expr value = substitute_in_all_lets(u.values()[0]);
  if (read_innermost_by(value, vars[0], rvars)) {
    return vars.size() >= 2 ? ReductionKind::Contraction : ReductionKind::Column;
  }
  return read_innermost_by(value, rvars[0], rvars) ? ReductionKind::Row : ReductionKind::Other;
}

std::optional<int64_t> const_of(const Expr& e) {
  if (!e.defined()) return std::nullopt;
  Expr s = simplify(substitute_var_estimates(e));
  if (auto v = as_const_int(s)) return *v;
  return std::nullopt;
}

}  // namespace

double FuncInfo::points() const {
  double p = 1;
  for (int64_t e : extents) p *= double(e);
  return p;
}

double FuncInfo::reduction_trips() const {
  double p = 1;
  for (int64_t e : rvar_extents) p *= double(e);
  return p;
}

// The Funcs a Function's definitions call, in the order the calls appear.
class CallsInOrder : public IRVisitor {
 public:
  std::vector<std::string> names;

 private:
  using IRVisitor::visit;
  void visit(const Call* op) override {
    IRVisitor::visit(op);
    if (op->call_type == Call::Halide && op->func.defined()) names.push_back(op->name);
  }
};

// PipelineInfo::keys: see analysis.h.
std::map<std::string, std::string> knob_keys(const std::vector<Function>& outputs,
                                             const std::map<std::string, Function>& env) {
  std::map<std::string, std::string> keys;
  std::map<std::string, int> seen;  // stable name -> Funcs of that name so far
  std::vector<std::string> stack;
  for (auto it = outputs.rbegin(); it != outputs.rend(); ++it) stack.push_back(it->name());
  while (!stack.empty()) {
    const std::string name = stack.back();
    stack.pop_back();
    if (keys.count(name) || !env.count(name)) continue;
    const std::string base = stable_name(name);
    const int n = ++seen[base];
    keys[name] = n == 1 ? base : base + "#" + std::to_string(n);
    CallsInOrder calls;
    const Function& f = env.at(name);
    f.accept(&calls);
    for (auto c = calls.names.rbegin(); c != calls.names.rend(); ++c) stack.push_back(*c);
  }
  // Funcs no definition calls yet (wrappers from Func::in(), which replace calls only when
  // the pipeline is lowered), in name order: keys for them too, numbered after the rest.
  for (const auto& [name, f] : env) {
    if (keys.count(name)) continue;
    const std::string base = stable_name(name);
    const int n = ++seen[base];
    keys[name] = n == 1 ? base : base + "#" + std::to_string(n);
  }
  return keys;
}

namespace {

// The pipeline's outputs and every Function they call, by name.
void outputs_and_env(const Pipeline& pipeline, std::vector<Function>& outputs, std::map<std::string, Function>& env) {
  for (const Func& out : pipeline.outputs()) {
    outputs.push_back(out.function());
    env.emplace(out.name(), out.function());
    for (const auto& [name, f] : find_transitive_calls(out.function())) env.emplace(name, f);
  }
}

}  // namespace

std::map<std::string, std::string> func_keys(const Pipeline& pipeline) {
  std::vector<Function> outputs;
  std::map<std::string, Function> env;
  outputs_and_env(pipeline, outputs, env);
  return knob_keys(outputs, env);
}

std::vector<std::string> keys_by_index(const Pipeline& pipeline) {
  std::vector<Function> outputs;
  std::map<std::string, Function> env;
  outputs_and_env(pipeline, outputs, env);
  const std::map<std::string, std::string> keys = knob_keys(outputs, env);
  std::vector<std::string> out;
  for (const std::string& name : topological_order(outputs, env)) out.push_back(keys.at(name));
  return out;
}

PipelineInfo analyze(const Pipeline& pipeline) {
  PipelineInfo info;
  std::vector<Function> outputs;
  std::map<std::string, Function> env;
  outputs_and_env(pipeline, outputs, env);
  info.order = topological_order(outputs, env);
  info.keys = knob_keys(outputs, env);

  for (const std::string& name : info.order) {
    const Function& f = env.at(name);
    FuncInfo fi;
    fi.function = f;
    fi.name = name;
    fi.vars = f.args();
    fi.bytes = std::max(1, f.output_types()[0].bytes());
    fi.trivial = is_trivial(f);
    if (!f.has_extern_definition()) {
      const FlopCounter c = count_arithmetic(f.values());
      fi.flops_per_point = c.flops;
      fi.scalar_cycles_per_point = c.scalar_cycles;
    }
    for (const Function& o : outputs) fi.is_output |= o.name() == name;
    if (f.has_update_definition()) {
      const Definition& u = f.updates()[0];
      const FlopCounter c = count_arithmetic(u.values());
      fi.update_flops = c.flops;
      fi.update_scalar_cycles = c.scalar_cycles;
      if (u.schedule().rvars().size()) {
        for (const ReductionVariable& rv : u.schedule().rvars()) {
          fi.rvars.push_back(rv.var);
          std::optional<int64_t> e = const_of(rv.extent);
          if (!e) info.warnings.push_back(name + ": reduction " + rv.var + " has no size at the estimates; assuming " +
                                          std::to_string(kDefaultExtent));
          fi.rvar_extents.push_back(e ? *e : kDefaultExtent);
        }
      }
    }
    fi.reduction = classify(f, fi.rvars);
    if (fi.reduction == ReductionKind::Contraction) {
      OperandLoadCounter counter(name, fi.vars[0], fi.vars[1]);
      substitute_in_all_lets(f.updates()[0].values()[0]).accept(&counter);
      fi.operand_loads = counter.loads;
    }
    info.funcs.emplace(name, std::move(fi));
  }

  // Regions, consumers before producers: outputs from their estimates, every other Func
  // from the boxes its (already sized) callers require.
  std::map<std::string, Box> required;
  for (auto it = info.order.rbegin(); it != info.order.rend(); ++it) {
    FuncInfo& fi = info.funcs.at(*it);
    const Function& f = fi.function;
    fi.extents.assign(fi.vars.size(), kDefaultExtent);
    std::vector<int64_t> mins(fi.vars.size(), 0);
    if (fi.is_output) {
      std::map<std::string, Bound> est;
      for (const Bound& b : f.schedule().estimates()) est[b.var] = b;
      for (size_t d = 0; d < fi.vars.size(); ++d) {
        auto b = est.find(fi.vars[d]);
        std::optional<int64_t> mn = b == est.end() ? std::nullopt : const_of(b->second.min);
        std::optional<int64_t> ex = b == est.end() ? std::nullopt : const_of(b->second.extent);
        if (!mn || !ex) {
          info.warnings.push_back("output " + fi.name + " has no estimate for dim " + std::to_string(d) + " (" +
                                  fi.vars[d] + "); assuming extent " + std::to_string(kDefaultExtent) +
                                  " (set one with Func::set_estimate or Output::set_estimates)");
        } else {
          mins[d] = *mn, fi.extents[d] = std::max<int64_t>(1, *ex);
        }
      }
    } else if (auto r = required.find(fi.name); r != required.end()) {
      for (size_t d = 0; d < fi.vars.size() && d < r->second.size(); ++d) {
        std::optional<int64_t> lo = const_of(r->second[d].min), hi = const_of(r->second[d].max);
        // Data-dependent reads (gather) have no bounds: the default stands.
        if (lo && hi) mins[d] = *lo, fi.extents[d] = std::max<int64_t>(1, *hi - *lo + 1);
      }
    } else {
      // Read only by extern stages (a cuBLASLt operand), whose reads are not modelled:
      // the bounds its schedule gives it, where it has them.
      for (const Bound& b : f.schedule().bounds()) {
        const auto at = std::find(fi.vars.begin(), fi.vars.end(), b.var);
        std::optional<int64_t> mn = const_of(b.min), ex = const_of(b.extent);
        if (at == fi.vars.end() || !mn || !ex) continue;
        const size_t d = size_t(at - fi.vars.begin());
        mins[d] = *mn, fi.extents[d] = std::max<int64_t>(1, *ex);
      }
    }
    if (f.has_extern_definition()) continue;
    // What this Func's definitions read, with its vars over its region and each
    // reduction var over its domain.
    Scope<Interval> scope;
    for (size_t d = 0; d < fi.vars.size(); ++d) {
      scope.push(fi.vars[d], Interval(Expr(int(mins[d])), Expr(int(mins[d] + fi.extents[d] - 1))));
    }
    std::vector<Expr> exprs = f.values();
    CallCounter pure(fi.vars);
    for (const Expr& e : f.values()) e.accept(&pure);
    std::map<std::string, int> calls = pure.calls;
    for (const Definition& u : f.updates()) {
      for (const ReductionVariable& rv : u.schedule().rvars()) {
        if (scope.contains(rv.var)) continue;
        Expr mn = simplify(substitute_var_estimates(rv.min)), ex = simplify(substitute_var_estimates(rv.extent));
        scope.push(rv.var, Interval(mn, simplify(mn + ex - 1)));
      }
      for (const Expr& e : u.values()) exprs.push_back(e);
      for (const Expr& e : u.args()) exprs.push_back(e);
      CallCounter cc;
      for (const Expr& e : u.values()) e.accept(&cc);
      for (const Expr& e : u.args()) e.accept(&cc);
      for (const auto& [callee, n] : cc.calls) calls[callee] += n;
      for (const auto& [callee, n] : cc.calls) fi.calls_in_update[callee] += n;
    }
    for (const auto& [callee, n] : calls) {
      if (callee == fi.name || !info.funcs.count(callee)) continue;
      FuncInfo& c = info.funcs.at(callee);
      c.callers[fi.name] += n;
      if (pure.identity.count(callee) && !fi.calls_in_update.count(callee)) c.identity_callers.insert(fi.name);
      if (pure.permutation.count(callee) && !fi.calls_in_update.count(callee)) {
        c.permuted_callers[fi.name] = pure.permutation.at(callee);
      }
    }
    for (const Expr& e : exprs) {
      for (auto& [callee, box] : boxes_required(e, scope)) {
        if (callee == fi.name || !info.funcs.count(callee)) continue;
        auto [slot, fresh] = required.emplace(callee, box);
        if (!fresh) merge_boxes(slot->second, box);
      }
    }
  }
  return info;
}

int reduces_rows_of(const FuncInfo& f, const FuncInfo& h) {
  const bool dropped =
      h.vars.size() == f.vars.size() + 1 && std::equal(f.extents.begin(), f.extents.end(), h.extents.begin() + 1);
  const bool kept = h.vars.size() == f.vars.size() && !f.extents.empty() && f.extents[0] == 1 &&
                    std::equal(f.extents.begin() + 1, f.extents.end(), h.extents.begin() + 1);
  return dropped ? 1 : kept ? 2 : 0;
}

std::set<std::string> InlineView::effective_consumers(const FuncInfo& f) const {
  std::set<std::string> out;
  for (const auto& [caller, n] : f.callers) {
    if (inlined(caller)) {
      for (const std::string& c : effective_consumers(info.at(caller))) out.insert(c);
    } else {
      out.insert(caller);
    }
  }
  return out;
}

std::vector<int> InlineView::dims_in_reader(const FuncInfo& f, const FuncInfo& h) const {
  std::vector<int> dims(f.vars.size());
  for (size_t d = 0; d < dims.size(); ++d) dims[d] = int(d);
  const FuncInfo* cur = &f;
  while (cur->name != h.name) {
    if (cur->callers.size() != 1) return {};
    const std::string& caller = cur->callers.begin()->first;
    const auto perm = cur->permuted_callers.find(caller);
    if (perm == cur->permuted_callers.end() || (caller != h.name && !inlined(caller))) return {};
    for (int& d : dims) d = perm->second[size_t(d)];
    cur = &info.at(caller);
  }
  return dims;
}

namespace {

// Evaluations of an inlined Func's values in what finally computes them: the consumers
// reached through callers that each read it at their own point (after inlining, those
// calls are one expression, which Halide computes once per point of the consumer), and a
// count of the other evaluations (other points, reduction iterations).
struct Evaluations {
  std::set<std::string> at_own_point;
  double others = 0;
};

Evaluations evaluations_of(const InlineView& v, const FuncInfo& f, std::map<std::string, Evaluations>& memo) {
  if (auto it = memo.find(f.name); it != memo.end()) return it->second;
  Evaluations e;
  for (const auto& [caller, n] : f.callers) {
    const FuncInfo& c = v.info.at(caller);
    const bool own_point = f.identity_callers.count(caller) > 0;
    if (v.inlined(caller)) {
      const Evaluations ce = evaluations_of(v, c, memo);
      if (own_point) {
        e.at_own_point.insert(ce.at_own_point.begin(), ce.at_own_point.end());
        e.others += ce.others;
      } else {
        double total = ce.others;
        for (const std::string& s : ce.at_own_point) total += v.info.at(s).points();
        e.others += n * total;
      }
      continue;
    }
    if (own_point) {
      e.at_own_point.insert(caller);
      continue;
    }
    auto u = c.calls_in_update.find(f.name);
    const double in_update = u == c.calls_in_update.end() ? 0 : double(u->second);
    e.others += (n - in_update) * c.points() + in_update * c.points() * c.reduction_trips();
  }
  return memo[f.name] = e;
}

}  // namespace

double InlineView::inline_evaluations(const FuncInfo& f) const {
  std::map<std::string, Evaluations> memo;
  const Evaluations e = evaluations_of(*this, f, memo);
  double evals = e.others;
  for (const std::string& c : e.at_own_point) evals += info.at(c).points();
  return std::max(evals, 1.0);
}

}  // namespace kiln::autoschedule
