#include "fingerprint.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <sstream>
#include <vector>

#include "search.h"

namespace kiln::autoschedule {

using namespace Halide;
using namespace Halide::Internal;

namespace {

// The parameters (input buffers and scalars) a pipeline reads, by name.
class ParameterCollector : public IRVisitor {
 public:
  std::map<std::string, Parameter> buffers, scalars;

 private:
  using IRVisitor::visit;
  void visit(const Call* op) override {
    if (op->param.defined()) buffers.emplace(op->param.name(), op->param);
    IRVisitor::visit(op);
  }
  void visit(const Variable* op) override {
    if (op->param.defined()) (op->param.is_buffer() ? buffers : scalars).emplace(op->param.name(), op->param);
  }
};

// Let names renamed in order of appearance: lowering names them from a process-wide
// counter ("t0" in one process is "t7" in another).
class CanonicalLets : public IRMutator {
  using IRMutator::visit;
  Expr visit(const Let* op) override {
    Expr value = mutate(op->value);
    const std::string name = "let" + std::to_string(next_++);
    auto saved = renamed_.find(op->name) == renamed_.end() ? std::string() : renamed_[op->name];
    renamed_[op->name] = name;
    Expr body = mutate(op->body);
    if (saved.empty()) renamed_.erase(op->name);
    else renamed_[op->name] = saved;
    return Let::make(name, value, body);
  }
  Expr visit(const Variable* op) override {
    auto it = renamed_.find(op->name);
    return it == renamed_.end() ? Expr(op) : Variable::make(op->type, it->second);
  }
  std::map<std::string, std::string> renamed_;
  int next_ = 0;
};

// An Expr or "-" for an undefined one (estimates that were never set).
std::string text(const Expr& e) {
  if (!e.defined()) return "-";
  std::ostringstream o;
  o << CanonicalLets().mutate(e);
  return o.str();
}

void describe_definition(std::ostringstream& o, const Definition& d, ParameterCollector& params) {
  o << "  (";
  for (const Expr& a : d.args()) o << text(a) << ",";
  o << ") =";
  for (const Expr& v : d.values()) {
    o << " " << text(v);
    v.accept(&params);
  }
  if (d.predicate().defined()) o << " where " << text(d.predicate());
  o << "\n";
  for (const ReductionVariable& rv : d.schedule().rvars()) {
    o << "    rvar " << rv.var << " " << text(rv.min) << " " << text(rv.extent) << "\n";
    rv.min.accept(&params);
    rv.extent.accept(&params);
  }
}

void describe_function(std::ostringstream& o, const Function& f, ParameterCollector& params) {
  o << "func " << f.name() << " :";
  for (const Type& t : f.output_types()) o << " " << t;
  o << " [";
  for (const std::string& a : f.args()) o << a << ",";
  o << "]\n";
  if (f.has_extern_definition()) o << "  extern " << f.extern_function_name() << "\n";
  if (f.has_pure_definition()) describe_definition(o, f.definition(), params);
  for (const Definition& u : f.updates()) describe_definition(o, u, params);
  for (const Bound& b : f.schedule().estimates()) {
    o << "  estimate " << b.var << " " << text(b.min) << " " << text(b.extent) << "\n";
  }
}

}  // namespace

std::string pipeline_description(const Pipeline& pipeline) {
  std::map<std::string, Function> env;
  for (const Func& out : pipeline.outputs()) {
    env.emplace(out.name(), out.function());
    for (const auto& [name, f] : find_transitive_calls(out.function())) env.emplace(name, f);
  }
  // Each Func described on its own, then sorted by its stable text: the order of
  // Halide's unique names differs between processes.
  ParameterCollector params;
  std::vector<std::string> funcs;
  for (const auto& [name, f] : env) {
    std::ostringstream one;
    describe_function(one, f, params);
    funcs.push_back(stable_name(one.str()));
  }
  std::sort(funcs.begin(), funcs.end());
  std::ostringstream o;
  o << "outputs";
  for (const Func& out : pipeline.outputs()) o << " " << stable_name(out.name());
  o << "\n";
  for (const std::string& f : funcs) o << f;
  for (const auto& [name, p] : params.buffers) {
    o << "buffer " << name << " : " << p.type() << " x" << p.dimensions();
    for (int d = 0; d < p.dimensions(); ++d) {
      o << " [" << text(p.min_constraint_estimate(d)) << ", " << text(p.extent_constraint_estimate(d)) << "]";
    }
    o << "\n";
  }
  for (const auto& [name, p] : params.scalars) {
    o << "scalar " << name << " : " << p.type() << " ~ " << text(p.estimate()) << "\n";
  }
  return stable_name(o.str());
}

std::string pipeline_fingerprint(const Pipeline& pipeline) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a offset basis
  for (unsigned char c : pipeline_description(pipeline)) {
    h ^= c;
    h *= 1099511628211ull;  // FNV prime
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace kiln::autoschedule
