#include "schedule_writer.h"

#include <cctype>

#include "core/error.h"
#include "search.h"

namespace kiln::autoschedule {

namespace {

const char* tail_name(Halide::TailStrategy t) {
  switch (t) {
    case Halide::TailStrategy::RoundUp: return "TailStrategy::RoundUp";
    case Halide::TailStrategy::GuardWithIf: return "TailStrategy::GuardWithIf";
    case Halide::TailStrategy::ShiftInwards: return "TailStrategy::ShiftInwards";
    default: return "TailStrategy::Auto";
  }
}

}  // namespace

// ---- StageWriter -------------------------------------------------------------------

bool StageWriter::is_rvar(const std::string& name) const {
  auto it = w_->rvars_.find(func_);
  return it != w_->rvars_.end() && it->second.count(name);
}

Halide::VarOrRVar StageWriter::var(const std::string& name) const {
  if (is_rvar(name)) return Halide::RVar(name);
  return Halide::Var(name);
}

std::string StageWriter::ref(const std::string& name) const { return w_->var_ref(name, is_rvar(name)); }

void StageWriter::emit(const std::string& call) { w_->lines_.push_back(cpp_ + "." + call + ";"); }

StageWriter& StageWriter::split(const std::string& old, const std::string& outer, const std::string& inner,
                                int factor, Halide::TailStrategy tail) {
  if (is_rvar(old)) w_->rvars_[func_].insert({outer, inner});
  stage_.split(var(old), var(outer), var(inner), factor, tail);
  emit("split(" + ref(old) + ", " + ref(outer) + ", " + ref(inner) + ", " +
       std::to_string(factor) + ", " + tail_name(tail) + ")");
  return *this;
}

StageWriter& StageWriter::fuse(const std::string& inner, const std::string& outer, const std::string& fused) {
  if (is_rvar(inner) || is_rvar(outer)) w_->rvars_[func_].insert(fused);
  stage_.fuse(var(inner), var(outer), var(fused));
  emit("fuse(" + ref(inner) + ", " + ref(outer) + ", " + ref(fused) + ")");
  return *this;
}

StageWriter& StageWriter::reorder(const std::vector<std::string>& innermost_first) {
  std::vector<Halide::VarOrRVar> vars;
  std::string args;
  for (const std::string& v : innermost_first) {
    vars.push_back(var(v));
    args += (args.empty() ? "" : ", ") + ref(v);
  }
  stage_.reorder(vars);
  emit("reorder({" + args + "})");
  return *this;
}

StageWriter& StageWriter::vectorize(const std::string& v, int width, Halide::TailStrategy tail) {
  stage_.vectorize(var(v), width, tail);
  emit("vectorize(" + ref(v) + ", " + std::to_string(width) + ", " + tail_name(tail) + ")");
  return *this;
}

StageWriter& StageWriter::vectorize(const std::string& v) {
  stage_.vectorize(var(v));
  emit("vectorize(" + ref(v) + ")");
  return *this;
}

StageWriter& StageWriter::unroll(const std::string& v) {
  stage_.unroll(var(v));
  emit("unroll(" + ref(v) + ")");
  return *this;
}

StageWriter& StageWriter::atomic() {
  stage_.atomic();
  emit("atomic()");
  return *this;
}

StageWriter& StageWriter::parallel(const std::string& v) {
  stage_.parallel(var(v));
  emit("parallel(" + ref(v) + ")");
  return *this;
}

std::string StageWriter::var_list(const std::vector<std::string>& vars) {
  KILN_CHECK(!vars.empty() && vars.size() <= 3, "a GPU loop nest has one to three block or thread dims, not ",
             vars.size());
  std::string args;
  for (const std::string& v : vars) args += (args.empty() ? "" : ", ") + ref(v);
  return args;
}

StageWriter& StageWriter::gpu_blocks(const std::vector<std::string>& v) {
  const std::string args = var_list(v);
  if (v.size() == 1) stage_.gpu_blocks(var(v[0]));
  if (v.size() == 2) stage_.gpu_blocks(var(v[0]), var(v[1]));
  if (v.size() == 3) stage_.gpu_blocks(var(v[0]), var(v[1]), var(v[2]));
  emit("gpu_blocks(" + args + ")");
  return *this;
}

StageWriter& StageWriter::gpu_threads(const std::vector<std::string>& v) {
  const std::string args = var_list(v);
  if (v.size() == 1) stage_.gpu_threads(var(v[0]));
  if (v.size() == 2) stage_.gpu_threads(var(v[0]), var(v[1]));
  if (v.size() == 3) stage_.gpu_threads(var(v[0]), var(v[1]), var(v[2]));
  emit("gpu_threads(" + args + ")");
  return *this;
}

StageWriter& StageWriter::gpu_single_thread() {
  stage_.gpu_single_thread();
  emit("gpu_single_thread()");
  return *this;
}

// ---- ScheduleWriter ----------------------------------------------------------------

ScheduleWriter::ScheduleWriter(const std::vector<std::string>& order, const std::map<std::string, Halide::Func>& funcs)
    : funcs_(funcs) {
  for (size_t i = 0; i < order.size(); ++i) index_[order[i]] = i;
}

std::string ScheduleWriter::ident(const std::string& name, const std::string& suffix) {
  // Stable names: the same pipeline gives the same source in every process.
  std::string id;
  for (char c : stable_name(name)) id += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (id.empty() || std::isdigit(static_cast<unsigned char>(id[0]))) id = "_" + id;
  id += suffix;
  std::string unique = id;
  for (int k = 2; used_ids_.count(unique); ++k) unique = id + "_" + std::to_string(k);
  used_ids_.insert(unique);
  return unique;
}

std::string ScheduleWriter::func_ref(const std::string& func) {
  auto it = func_ids_.find(func);
  if (it != func_ids_.end()) return it->second;
  auto idx = index_.find(func);
  KILN_CHECK(idx != index_.end(), "Func ", func, " is not in the pipeline");
  const std::string id = ident(func);
  func_decls_.push_back("Func " + id + " = pipeline.get_func(" + std::to_string(idx->second) + ");");
  return func_ids_[func] = id;
}

std::string ScheduleWriter::var_ref(const std::string& name, bool rvar) {
  const std::string key = (rvar ? "R " : "V ") + name;
  auto it = var_ids_.find(key);
  if (it != var_ids_.end()) return it->second;
  const std::string id = ident(name);
  var_decls_.push_back(std::string(rvar ? "RVar " : "Var ") + id + "(\"" + name + "\");");
  return var_ids_[key] = id;
}

StageWriter ScheduleWriter::stage(const std::string& func, int update) {
  Halide::Func f = funcs_.at(func);
  const std::string ref = func_ref(func);
  if (update < 0) return StageWriter(this, func, f, ref);
  return StageWriter(this, func, f.update(update), ref + ".update(" + std::to_string(update) + ")");
}

StageWriter ScheduleWriter::specialize_min_extents(const std::string& func, const std::vector<int>& min_extents) {
  Halide::Func f = funcs_.at(func);
  const std::string ref = func_ref(func);
  Halide::Expr cond = Halide::Internal::const_true();
  std::string text;
  for (size_t d = 0; d < min_extents.size(); ++d) {
    if (min_extents[d] <= 1) continue;
    cond = cond && f.output_buffer().dim(int(d)).extent() >= min_extents[d];
    text += std::string(text.empty() ? "" : " && ") + ref + ".output_buffer().dim(" + std::to_string(d) +
            ").extent() >= " + std::to_string(min_extents[d]);
  }
  if (text.empty()) text = "true";
  return specialize(func, cond, text);
}

namespace {

// The buffer parameter `name` as `reader`'s definitions call it (undefined if they do not).
Halide::Parameter input_parameter(const Halide::Func& reader, const std::string& name) {
  struct Find : Halide::Internal::IRGraphVisitor {
    const std::string& name;
    Halide::Parameter found;
    explicit Find(const std::string& n) : name(n) {}
    using Halide::Internal::IRGraphVisitor::visit;
    void visit(const Halide::Internal::Call* c) override {
      if (c->param.defined() && c->param.is_buffer() && c->param.name() == name) found = c->param;
      Halide::Internal::IRGraphVisitor::visit(c);
    }
  } find(name);
  reader.function().accept(&find);
  return find.found;
}

// The same lookup in a schedule's source, declared once before its first use: an input
// buffer's field ("min" or "stride") in dimension `d`, as the Func `reader` sees it.
constexpr const char* kInputFieldSource =
    "auto input_field = [](Func reader, const std::string& name, const char* field, int d) {\n"
    "        struct Find : ::Halide::Internal::IRGraphVisitor {\n"
    "            const std::string& name;\n"
    "            ::Halide::Parameter found;\n"
    "            explicit Find(const std::string& n) : name(n) {}\n"
    "            using ::Halide::Internal::IRGraphVisitor::visit;\n"
    "            void visit(const ::Halide::Internal::Call* c) override {\n"
    "                if (c->param.defined() && c->param.is_buffer() && c->param.name() == name) found = c->param;\n"
    "                ::Halide::Internal::IRGraphVisitor::visit(c);\n"
    "            }\n"
    "        } find(name);\n"
    "        reader.function().accept(&find);\n"
    "        return ::Halide::Internal::Variable::make(::Halide::Int(32), name + \".\" + field + \".\" + std::to_string(d), find.found);\n"
    "    };";

}  // namespace

StageWriter ScheduleWriter::specialize_aligned(const std::string& func, const std::vector<int>& min_extents,
                                               int multiple, const std::vector<InputRead>& inputs) {
  Halide::Func f = funcs_.at(func);
  const std::string ref = func_ref(func);
  const std::string m = " % " + std::to_string(multiple) + " == 0";
  Halide::Expr cond = Halide::Internal::const_true();
  std::string text;
  auto add = [&](const Halide::Expr& e, const std::string& t) {
    cond = cond && e;
    text += std::string(text.empty() ? "" : " && ") + t;
  };
  const Halide::OutputImageParam out = f.output_buffer();
  const std::string out_ref = ref + ".output_buffer()";
  for (size_t d = 0; d < min_extents.size(); ++d) {
    if (min_extents[d] > 1) {
      add(out.dim(int(d)).extent() >= min_extents[d],
          out_ref + ".dim(" + std::to_string(d) + ").extent() >= " + std::to_string(min_extents[d]));
    }
  }
  add(out.dim(0).extent() % multiple == 0, out_ref + ".dim(0).extent()" + m);
  add(out.dim(0).min() % multiple == 0, out_ref + ".dim(0).min()" + m);
  for (int d = 1; d < out.dimensions(); ++d) {
    add(out.dim(d).stride() % multiple == 0, out_ref + ".dim(" + std::to_string(d) + ").stride()" + m);
  }
  for (const InputRead& in : inputs) {
    const Halide::Parameter p = input_parameter(funcs_.at(in.reader), in.name);
    KILN_CHECK(p.defined(), func, ": ", in.reader, " does not read an input buffer named ", in.name);
    if (!declared_input_field_) {
      lines_.push_back(kInputFieldSource);
      declared_input_field_ = true;
    }
    const std::string reader = func_ref(in.reader);
    auto field = [&](const char* name, int d) {
      add(Halide::Internal::Variable::make(Halide::Int(32), in.name + "." + name + "." + std::to_string(d), p) %
                  multiple ==
              0,
          "input_field(" + reader + ", \"" + in.name + "\", \"" + name + "\", " + std::to_string(d) + ")" + m);
    };
    field("min", 0);
    for (int d = 1; d < in.dims; ++d) field("stride", d);
  }
  return specialize(func, cond, text);
}

StageWriter ScheduleWriter::specialize(const std::string& func, const Halide::Expr& cond, const std::string& text) {
  Halide::Func f = funcs_.at(func);
  const std::string ref = func_ref(func);
  const std::string id = ident(func, "_s" + std::to_string(specializations_++));
  lines_.push_back("::Halide::Stage " + id + " = " + ref + ".specialize(" + text + ");");
  return StageWriter(this, func, f.specialize(Halide::Internal::simplify(cond)), id);
}

void ScheduleWriter::compute_root(const std::string& func) {
  funcs_.at(func).compute_root();
  lines_.push_back(func_ref(func) + ".compute_root();");
}

void ScheduleWriter::compute_at(const std::string& func, const std::string& at, const std::string& var) {
  funcs_.at(func).compute_at(funcs_.at(at), Halide::Var(var));
  lines_.push_back(func_ref(func) + ".compute_at(" + func_ref(at) + ", " + var_ref(var, false) + ");");
}

void ScheduleWriter::store_in(const std::string& func, Halide::MemoryType type) {
  const char* name = nullptr;
  switch (type) {
    case Halide::MemoryType::GPUShared: name = "GPUShared"; break;
    case Halide::MemoryType::Register: name = "Register"; break;
    case Halide::MemoryType::Stack: name = "Stack"; break;
    case Halide::MemoryType::Heap: name = "Heap"; break;
    default: KILN_CHECK(false, "store_in: kiln writes GPUShared, Register, Stack or Heap, not memory type ", int(type));
  }
  funcs_.at(func).store_in(type);
  lines_.push_back(func_ref(func) + ".store_in(MemoryType::" + name + ");");
}

void ScheduleWriter::bound_extent(const std::string& func, const std::string& var, int extent) {
  funcs_.at(func).bound_extent(Halide::Var(var), extent);
  lines_.push_back(func_ref(func) + ".bound_extent(" + var_ref(var, false) + ", " + std::to_string(extent) + ");");
}

std::string ScheduleWriter::rfactor(const std::string& func, const std::string& rvar, const std::string& var) {
  Halide::Func partial = funcs_.at(func).update(0).rfactor(Halide::RVar(rvar), Halide::Var(var));
  // Named after `func`, not after Halide's name for it, which carries a number that
  // depends on how many Funcs the process made before (softmax_max$38 -> softmax_max_38_intm).
  const std::string id = ident(func, "_intm");
  lines_.push_back("Func " + id + " = " + func_ref(func) + ".update(0).rfactor(" + var_ref(rvar, true) + ", " +
                   var_ref(var, false) + ");");
  rvars_[partial.name()] = rvars_[func];  // its update keeps the reduction variables not preserved
  funcs_[partial.name()] = partial;
  func_ids_[partial.name()] = id;
  return partial.name();
}

std::string ScheduleWriter::wrap(const std::string& func) {
  Halide::Func wrapper = funcs_.at(func).in();
  const std::string id = ident(func, "_in");
  lines_.push_back("Func " + id + " = " + func_ref(func) + ".in();");
  funcs_[wrapper.name()] = wrapper;
  func_ids_[wrapper.name()] = id;
  return wrapper.name();
}

std::string ScheduleWriter::source() const {
  std::string s;
  for (const std::string& d : var_decls_) s += "    " + d + "\n";
  s += "\n";
  for (const std::string& d : func_decls_) s += "    " + d + "\n";
  s += "\n";
  for (const std::string& l : lines_) s += "    " + l + "\n";
  return s;
}

ScheduleWriter writer_for(const PipelineInfo& info) {
  std::map<std::string, Halide::Func> funcs;
  for (const auto& [name, f] : info.funcs) funcs.emplace(name, Halide::Func(f.function));
  ScheduleWriter w(info.order, funcs);
  for (const auto& [name, f] : info.funcs) {
    for (const std::string& rv : f.rvars) w.declare_rvar(name, rv);
  }
  return w;
}

}  // namespace kiln::autoschedule
