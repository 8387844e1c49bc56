#include "runtime/compile.h"

#include <fstream>
#include <iostream>
#include <map>
#include <optional>

#include "autodiff/autograd.h"
#include "autodiff/grad.h"
#include "core/error.h"
#include "core/log.h"
#include "graph/interpreter.h"
#include "graph/passes/passes.h"
#include "graph/tracer.h"
#include "lower/kernel.h"
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
  return run_graph_passes(g);
}

Backend halide_backend(const std::string& target) {
  return [target](Graph& graph, const std::vector<Tensor>&) -> CompiledGraphFn {
    auto kernel = std::make_shared<Kernel>(graph, parse_target(target));
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
  parse_target(options_.target);  // reject a bad target at once, not on the first call
}

const Graph& CompiledImpl::last_graph() const {
  if (entries_.empty()) user_error(options_.name, ": not compiled yet; call it once first");
  return entries_.back()->graph;
}

std::shared_ptr<CompiledImpl> CompiledImpl::backward_for(int output_index, const std::vector<int>& argnums) {
  auto& slot = backwards_[{output_index, argnums}];
  if (!slot) {
    CompileOptions o = options_;
    o.name = options_.name + "_backward" + (output_index ? std::to_string(output_index) : "");
    o.input_names.clear();
    slot = std::make_shared<CompiledImpl>(vjp_fn(fn_, output_index, argnums), o);
  }
  return slot;
}

std::vector<Tensor> CompiledImpl::call_with_autograd(const std::vector<Tensor>& inputs) {
  std::vector<Tensor> plain;
  std::vector<int> argnums;
  for (size_t i = 0; i < inputs.size(); ++i) {
    plain.push_back(inputs[i].detach());
    if (inputs[i].needs_grad()) argnums.push_back(int(i));
  }
  std::vector<Tensor> outputs;
  {
    NoGradGuard no_grad;
    outputs = call(plain);
  }
  auto self = shared_from_this();
  for (size_t k = 0; k < outputs.size(); ++k) {
    if (!is_float(outputs[k].dtype())) continue;
    auto node = std::make_shared<GradNode>();
    node->name = "compiled " + options_.name;
    node->inputs = inputs;
    node->vjp = [self, k, argnums, plain](const Tensor& g) {
      std::vector<Tensor> args = plain;
      args.push_back(g);
      std::shared_ptr<CompiledImpl> backward = self->backward_for(int(k), argnums);
      const int compiled_before = backward->num_compilations();
      std::vector<Tensor> grads = backward->call(args);
      if (backward->num_compilations() != compiled_before) {
        log("aot", self->options_.name + ": backward of output " + std::to_string(k) +
                       " (forward recomputed inside it)\n" + backward->last_graph().str());
      }
      std::vector<Tensor> out(plain.size());
      for (size_t j = 0; j < argnums.size(); ++j) out[size_t(argnums[j])] = grads[j];
      return out;
    };
    attach_grad_node(outputs[k], std::move(node));
  }
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
  Backend backend = options_.backend ? options_.backend : halide_backend(options_.target);
  e->fn = backend(e->graph, inputs);
  if (!e->fn) user_error(options_.name, ": the backend returned an empty callable");
  entries_.push_back(e);
  return e->fn(inputs);
}

}  // namespace detail

}  // namespace kiln
