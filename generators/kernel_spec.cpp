#include "kernel_spec.h"

#include <algorithm>

#include "core/error.h"
#include "lower/default_schedule.h"
#include "manual_schedules.h"
#include "op_generator.h"
#include "ops/api.h"

namespace kiln::kernels {

namespace {

std::string known_generators() {
  std::string s;
  for (const GeneratorInfo& g : generators()) s += (s.empty() ? "" : ", ") + g.name;
  return s;
}

// A non-negative integer below 2^31 (a tensor size's bound), so that the generators'
// std::stoll reads it: "99999999999999999999" threw std::out_of_range past main.
bool is_integer(const std::string& s) {
  if (s.empty() || s.size() > 10) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return std::stoll(s) < (int64_t(1) << 31);
}

std::vector<Tensor> zeros_like_sizes(const KernelSpec& spec, bool estimate) {
  std::vector<Tensor> out;
  for (const KernelInput& in : spec.inputs) {
    const std::vector<int64_t>& sizes = estimate || in.trace.empty() ? in.estimate : in.trace;
    out.push_back(zeros(Shape(sizes), in.dtype));
  }
  return out;
}

CompileOptions options_for(const KernelSpec& spec, bool symbolic) {
  CompileOptions options;
  options.name = spec.generator;
  for (const KernelInput& in : spec.inputs) options.input_names.push_back(in.name);
  if (symbolic) {
    options.dynamic = spec.dynamic;
    options.dynamic_dims = spec.dynamic_dims;
  }
  return options;
}

}  // namespace

const GeneratorInfo& find_generator(const std::string& name) {
  for (const GeneratorInfo& g : generators()) {
    if (g.name == name || g.name == "kiln_" + name) return g;
  }
  user_error("unknown kernel generator '", name, "'; the kernel library has: ", known_generators());
}

KernelSpec make_spec(const std::string& name, const Params& params) {
  const GeneratorInfo& g = find_generator(name);
  Params full;
  for (const GeneratorInfo::Param& p : g.params) full[p.name] = p.default_value;
  for (const auto& [key, value] : params) {
    auto it = std::find_if(g.params.begin(), g.params.end(), [&](const auto& p) { return p.name == key; });
    if (it == g.params.end()) {
      std::string names;
      for (const auto& p : g.params) names += (names.empty() ? "" : ", ") + p.name;
      user_error(g.name, ": unknown parameter '", key, "'; its parameters are: ", names.empty() ? "(none)" : names);
    }
    const std::vector<std::string>& choices = it->choices;
    bool ok = choices.empty() ? is_integer(value) : std::find(choices.begin(), choices.end(), value) != choices.end();
    if (!ok) {
      std::string values;
      for (const std::string& v : choices) values += (values.empty() ? "" : ", ") + v;
      user_error(g.name, ": parameter ", key, "='", value, "' is not allowed; ",
                 choices.empty() ? std::string("it takes a non-negative integer below 2^31") : "it takes one of: " + values);
    }
    full[key] = value;
  }
  KernelSpec spec = g.make(full);
  spec.generator = g.name;
  return spec;
}

std::string default_param(const std::string& generator, const std::string& param) {
  for (const GeneratorInfo::Param& p : find_generator(generator).params) {
    if (p.name == param) return p.default_value;
  }
  KILN_INTERNAL_ERROR(generator, " has no parameter ", param);
}

Graph trace_spec(const KernelSpec& spec) {
  return trace(spec.fn, zeros_like_sizes(spec, false), options_for(spec, true));
}

TensorMeta output_at_estimates(const KernelSpec& spec) {
  Graph g = trace(spec.fn, zeros_like_sizes(spec, true), options_for(spec, false));
  KILN_CHECK(g.outputs().size() == 1, spec.generator, " must have one output");
  return g.node(g.outputs()[0]).meta;
}

LoweredGraph lower_spec(const KernelSpec& spec, const std::vector<Halide::Func>& inputs,
                        const std::vector<std::vector<Halide::Expr>>& extents, Halide::Func out,
                        const Halide::Target& target) {
  Graph graph = trace_spec(spec);
  KILN_CHECK(graph.outputs().size() == 1, spec.generator, " must have one output");
  // Each symbol's size is the extent of the first input dim that carries it.
  ExternalInputs external{inputs, {}};
  for (size_t k = 0; k < graph.inputs().size(); ++k) {
    const Shape& shape = graph.node(graph.inputs()[k]).meta.shape;
    for (int d = 0; d < shape.rank(); ++d) {
      if (!shape[d].is_static()) external.symbol_extents.emplace(shape[d].sym, extents[k][size_t(d)]);
    }
  }
  LowerOptions options;
  options.target = target;
  LoweredGraph lowered = lower_to_halide(graph, &external, options);
  std::vector<Halide::Var> v = lowered.outputs[0].args();
  out(v) = lowered.outputs[0](v);
  lowered.outputs = {out};
  return lowered;
}

void apply_named_schedule(const std::string& schedule, const std::string& generator, LoweredGraph& lowered,
                          const Halide::Target& target) {
  if (schedule == "manual") {
    apply_manual_schedule(generator, lowered.pipeline(), target);
  } else if (schedule == "default") {
    apply_default_schedule(lowered, target);
  } else {
    user_error(generator, ": unknown schedule '", schedule,
               "'; use manual (schedules/), default (kiln's rules), or set the generator's autoscheduler");
  }
}

DirectKernel build_direct(const KernelSpec& spec) {
  DirectKernel k{spec, {}, {}, Halide::Func("out")};
  std::vector<Halide::Func> funcs;
  std::vector<std::vector<Halide::Expr>> extents;
  for (const KernelInput& in : spec.inputs) {
    const int r = int(in.estimate.size());
    Halide::ImageParam p(algo::halide_type(in.dtype), r, in.name);
    std::vector<Halide::Expr> e(static_cast<size_t>(r));
    for (int j = 0; j < r; ++j) {
      p.dim(j).set_min(0);
      e[size_t(r - 1 - j)] = p.dim(j).extent();
    }
    p.set_estimates(estimate_region(in.estimate));
    k.params.push_back(p);
    funcs.push_back(p);
    extents.push_back(e);
  }
  k.lowered = lower_spec(spec, funcs, extents, k.out);
  k.out.set_estimates(estimate_region(output_at_estimates(spec).shape.sizes()));
  return k;
}

}  // namespace kiln::kernels
