#include "runtime/compile.h"

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>

#include "autodiff/autograd.h"
#include "autoscheduler/autoscheduler.h"
#include "autodiff/grad.h"
#include "autodiff/partition.h"
#include "core/error.h"
#include "core/log.h"
#include "graph/interpreter.h"
#include "graph/passes/autocast.h"
#include "graph/passes/passes.h"
#include "graph/tracer.h"
#include "lower/kernel.h"
#include "lower/compile_cache.h"
#include "lower/scheduler.h"
#include "lower/target.h"

namespace kiln {

namespace {

bool is_dynamic(const CompileOptions& o, int input, int dim) {
  if (o.dynamic) return true;
  for (auto [i, d] : o.dynamic_dims)
    if (i == input && d == dim) return true;
  return false;
}

// Placeholder metas for tracing: dynamic dims of size >= 2 become symbols s0, s1, ...,
// one per distinct size (equal sizes share a symbol, as in PyTorch's duck sizing).
std::vector<TensorMeta> trace_metas(const std::vector<Tensor>& inputs, const CompileOptions& o) {
  std::map<int64_t, std::string> symbol_of_size;
  std::vector<TensorMeta> metas;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::vector<Dim> dims;
    for (int d = 0; d < inputs[i].rank(); ++d) {
      int64_t n = inputs[i].shape()[d].size;
      if (n <= 1 || !is_dynamic(o, int(i), d)) {
        dims.emplace_back(n);
        continue;
      }
      auto [it, fresh] = symbol_of_size.emplace(n, "s" + std::to_string(symbol_of_size.size()));
      dims.push_back(Dim::symbolic(it->second));
    }
    metas.push_back({inputs[i].dtype(), Shape(std::move(dims))});
  }
  return metas;
}

void check_concrete_inputs(const std::vector<Tensor>& inputs, const CompileOptions& o) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) user_error(o.name, ": input ", i, " is an undefined tensor");
    if (inputs[i].is_symbolic()) {
      user_error(o.name, ": input ", i, " is a traced tensor; a compiled function cannot be "
                 "called from inside another function being traced (call the original "
                 "function there instead)");
    }
  }
  for (auto [i, d] : o.dynamic_dims) {
    if (i < 0 || i >= int(inputs.size()) || d < 0 || d >= inputs[size_t(i)].rank()) {
      user_error(o.name, ": dynamic_dims names (input ", i, ", dim ", d,
                 ") but the call has ", inputs.size(), " inputs",
                 (i >= 0 && i < int(inputs.size()))
                     ? detail::concat(" and input ", i, " has rank ", inputs[size_t(i)].rank())
                     : std::string());
    }
  }
}

// Why `inputs` do not fit `metas`, or nothing when they do.
std::optional<std::string> guard_failure(const std::vector<TensorMeta>& metas,
                                         const std::vector<Tensor>& inputs) {
  if (metas.size() != inputs.size()) {
    return detail::concat("number of inputs changed from ", metas.size(), " to ", inputs.size());
  }
  SymbolSizes bound;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorMeta& want = metas[i];
    const TensorMeta& got = inputs[i].meta();
    if (want.dtype != got.dtype) {
      return detail::concat("input ", i, " dtype changed from ", dtype_name(want.dtype), " to ",
                            dtype_name(got.dtype));
    }
    if (want.shape.rank() != got.shape.rank()) {
      return detail::concat("input ", i, " rank changed from ", want.shape.rank(), " to ",
                            got.shape.rank(), " (", want.str(), " -> ", got.str(), ")");
    }
    for (int d = 0; d < want.shape.rank(); ++d) {
      const Dim& w = want.shape[d];
      int64_t n = got.shape[d].size;
      if (w.is_static() && w.size != n) {
        return detail::concat("input ", i, " dim ", d, " changed from ", w.size, " to ", n,
                              " (mark it dynamic to serve every size with one compilation)");
      }
      if (!w.is_static()) {
        auto [it, fresh] = bound.emplace(w.sym, n);
        if (!fresh && it->second != n) {
          return detail::concat("input ", i, " dim ", d, " is ", n, " but it shared symbol ",
                                w.sym, " (now ", it->second, ") with another dim when traced");
        }
      }
    }
  }
  return std::nullopt;
}

// The scheduler a compilation uses: the option, else KILN_SCHEDULER, else "default" (Kiln).
std::string resolve_scheduler(const CompileOptions& o, const Halide::Target& target) {
  const bool gpu = target_has_gpu(target);
  if (!o.scheduler.empty()) {
    check_scheduler_name(o.scheduler, o.name + ": CompileOptions::scheduler");
    return resolve_default_scheduler(o.scheduler, gpu);
  }
  return scheduler_from_env(gpu);
}

}  // namespace

Graph trace(const TracedFn& fn, const std::vector<Tensor>& example_inputs,
            const CompileOptions& options) {
  check_concrete_inputs(example_inputs, options);
  std::vector<TensorMeta> metas = trace_metas(example_inputs, options);
  Graph g;
  {
    Tracer tracer(g);
    std::vector<Tensor> args;
    for (size_t i = 0; i < metas.size(); ++i) {
      std::string name = i < options.input_names.size() ? options.input_names[i]
                                                         : "x" + std::to_string(i);
      args.push_back(tracer.placeholder(name, metas[i]));
    }
    std::vector<Tensor> outs = fn(args);
    if (outs.empty()) user_error(options.name, ": the traced function returned no tensors");
    std::vector<int> ids;
    for (size_t k = 0; k < outs.size(); ++k) {
      if (!outs[k].defined()) user_error(options.name, ": output ", k, " is an undefined tensor");
      ids.push_back(tracer.value_of(outs[k]));
    }
    g.set_outputs(ids);
  }
  return run_graph_passes(autocast(g, options.autocast));
}

Backend halide_backend(const std::string& target, const std::string& name) {
  check_scheduler_name(name, "halide_backend");
  const std::string scheduler = resolve_default_scheduler(name, target_has_gpu(parse_target(target)));
  return [target, scheduler](Graph& graph, const std::vector<Tensor>& example_inputs) -> CompiledGraphFn {
    const Halide::Target t = parse_target(target);
    std::string why;
    const std::string key = compile_cache::key_of(graph, example_inputs, t, scheduler, &why);
    std::shared_ptr<Kernel> kernel;
    if (!key.empty()) {
      kernel = Kernel::cached(graph, t, scheduler, example_inputs, key);
    } else {
      log("cache", "not cached: " + why);
      kernel = std::make_shared<Kernel>(graph, t, make_schedule_fn(scheduler, graph, example_inputs),
                                        /*vendor_kernels=*/true);
    }
    return [kernel](const std::vector<Tensor>& in) { return kernel->run(in); };
  };
}

Backend scheduled_backend(const std::string& target, PipelineSchedule schedule, const std::string& contractions) {
  const Halide::Target t = parse_target(target);  // a bad target fails here, not on the first call
  if (!schedule) user_error("scheduled_backend: no schedule function given");
  // A malformed text fails here too.
  std::shared_ptr<const autoschedule::Knobs> sizes_given;
  if (!contractions.empty()) {
    try {
      sizes_given = std::make_shared<const autoschedule::Knobs>(autoschedule::contraction_knobs_from_text(contractions));
    } catch (const autoschedule::json::ParseError& e) {
      user_error("scheduled_backend: the contractions' sizes are not valid: ", e.message,
                 "; expected the JSON that `kiln autoschedule <model>` writes: {\"conv_tiles\": {\"<key>\": {\"vectors\": "
                 "V, \"channels\": C}}, \"matmul_tasks\": {\"<key>\": {\"band\": B, \"column_tiles\": T}}}");
    }
  }
  return [t, schedule, sizes_given](Graph& graph, const std::vector<Tensor>& example_inputs) -> CompiledGraphFn {
    const SizeEstimates sizes = estimates_from(graph, example_inputs);
    auto apply = [&](LoweredGraph& lowered, const Halide::Target& target) {
      // The file's sizes, where it gives them, instead of the tuning database's.
      KilnScheduleOptions options;
      if (sizes_given) options = {sizes_given.get(), "none"};
      std::vector<std::string> per_batch;
      prepare_kiln_schedule(lowered, target, sizes, options, &per_batch);
      try {
        schedule(lowered.pipeline(), target);
        fuse_batches(lowered, per_batch);  // the "per_batch" matmuls' operands, into their tasks
      } catch (const Halide::Error& e) {
        user_error("scheduled_backend: the schedule does not fit this graph's pipeline (", e.what(),
                   "); write it again with `kiln autoschedule` for this model and these sizes");
      }
    };
    std::shared_ptr<Kernel> kernel;
    try {
      kernel = std::make_shared<Kernel>(graph, t, apply);
    } catch (const Halide::Error& e) {
      user_error("scheduled_backend: Halide rejects the schedule for this graph's pipeline (", e.what(),
                 "); write it again with `kiln autoschedule` for this model and these sizes");
    }
    return [kernel](const std::vector<Tensor>& in) { return kernel->run(in); };
  };
}

Backend debug_backend(const std::string& dot_path) {
  return [dot_path](Graph& graph, const std::vector<Tensor>&) -> CompiledGraphFn {
    std::cout << "Captured graph:\n" << graph.str() << std::flush;
    if (!dot_path.empty()) {
      std::ofstream f(dot_path);
      if (!f) user_error("debug_backend: cannot write '", dot_path, "'");
      f << graph.to_dot();
    }
    Graph g = graph;
    return [g](const std::vector<Tensor>& in) { return interpret(g, in, InterpretMode::Eager); };
  };
}

namespace detail {

struct CompiledImpl::Entry {
  std::vector<TensorMeta> guards;
  Graph graph;
  CompiledGraphFn fn;
};

CompiledImpl::CompiledImpl(TracedFn fn, CompileOptions options)
    : fn_(std::move(fn)), options_(std::move(options)) {
  // Reject a bad target or scheduler at once, not on the first call.
  options_.scheduler = resolve_scheduler(options_, parse_target(options_.target));
}

Backend CompiledImpl::backend() const {
  return options_.backend ? options_.backend : halide_backend(options_.target, options_.scheduler);
}

const Graph& CompiledImpl::last_graph() const {
  if (entries_.empty()) user_error(options_.name, ": not compiled yet; call it once first");
  return entries_.back()->graph;
}

struct CompiledImpl::AutogradEntry {
  std::vector<TensorMeta> guards;
  std::vector<int> argnums;
  int num_outputs = 0;
  std::vector<TensorMeta> output_metas;
  CompiledGraphFn forward, backward;
};

std::vector<Tensor> CompiledImpl::call_with_autograd(const std::vector<Tensor>& inputs) {
  std::vector<Tensor> plain;
  std::vector<TensorMeta> metas;
  std::vector<int> argnums;
  for (size_t i = 0; i < inputs.size(); ++i) {
    plain.push_back(inputs[i].detach());
    metas.push_back(plain.back().meta());
    if (inputs[i].needs_grad()) argnums.push_back(int(i));
  }
  NoGradGuard no_grad;
  std::shared_ptr<AutogradEntry> entry;
  for (const auto& e : autograd_entries_)
    if (e->guards == metas && e->argnums == argnums) entry = e;
  if (!entry) {
    entry = std::make_shared<AutogradEntry>();
    entry->guards = metas;
    entry->argnums = argnums;
    Graph joint = joint_graph(fn_, plain, argnums);
    entry->num_outputs = int(joint.outputs().size() - argnums.size());
    Partition p = min_cut_partition(joint, int(plain.size()), entry->num_outputs);
    log("aot", options_.name + ": joint graph\n" + joint.str() + "\n" + options_.name + ": partition, " + p.str());
    Backend backend = this->backend();
    entry->forward = backend(p.forward, plain);
    std::vector<Tensor> backward_examples;
    for (const Node& n : p.backward.nodes())
      if (n.is_placeholder()) backward_examples.push_back(full(n.meta.shape, 0.0, n.meta.dtype));
    entry->backward = backend(p.backward, backward_examples);
    for (int i = 0; i < entry->num_outputs; ++i) entry->output_metas.push_back(joint.node(joint.outputs()[size_t(i)]).meta);
    autograd_entries_.push_back(entry);
  }
  std::vector<Tensor> results = entry->forward(plain);
  const size_t m = size_t(entry->num_outputs);
  std::vector<Tensor> outputs(results.begin(), results.begin() + long(m));
  std::vector<Tensor> saved(results.begin() + long(m), results.end());
  // One node for all outputs: backward() runs the compiled backward once, with every
  // output's gradient (zeros where none flows), so a NaN or inf in one output's path cannot
  // reach another's through a 0 * inf.
  auto node = std::make_shared<GradNode>();
  node->name = "compiled " + options_.name;
  node->inputs = inputs;
  node->num_outputs = int(m);
  node->vjp = [entry, saved, n = plain.size()](const std::vector<Tensor>& output_grads) {
    std::vector<Tensor> args = saved;
    for (size_t j = 0; j < entry->output_metas.size(); ++j) {
      const TensorMeta& om = entry->output_metas[j];
      args.push_back(output_grads[j].defined() ? output_grads[j] : full(om.shape, 0.0, om.dtype));
    }
    std::vector<Tensor> grads = entry->backward(args);
    std::vector<Tensor> out(n);
    for (size_t j = 0; j < entry->argnums.size(); ++j) out[size_t(entry->argnums[j])] = grads[j];
    return out;
  };
  for (size_t k = 0; k < m; ++k)
    if (is_float(outputs[k].dtype())) attach_grad_node(outputs[k], node, int(k));
  return outputs;
}

std::vector<Tensor> CompiledImpl::call(const std::vector<Tensor>& inputs) {
  if (any_needs_grad(inputs)) return call_with_autograd(inputs);
  check_concrete_inputs(inputs, options_);
  for (const auto& e : entries_) {
    if (!guard_failure(e->guards, inputs)) return e->fn(inputs);
  }
  if (!entries_.empty()) {
    log("recompiles", options_.name + ": recompiling (compilation " +
                          std::to_string(entries_.size() + 1) + ") because " +
                          *guard_failure(entries_.back()->guards, inputs));
  }
  auto e = std::make_shared<Entry>();
  e->graph = trace(fn_, inputs, options_);
  e->guards = e->graph.input_metas();
  log("graph", options_.name + ": captured graph\n" + e->graph.str());
  Backend backend = this->backend();
  e->fn = backend(e->graph, inputs);
  if (!e->fn) user_error(options_.name, ": the backend returned an empty callable");
  entries_.push_back(e);
  return e->fn(inputs);
}

}  // namespace detail

}  // namespace kiln
