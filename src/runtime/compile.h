// kiln::compile: the C++ counterpart of torch.compile.
//
//   auto f = kiln::compile([](const Tensor& x) { return exp(sin(x)) + log(abs(cos(x))); });
//   Tensor y = f(x);   // first call: trace, compile; later calls: guards, then run
//
// On the first call (and whenever a guard fails) the function is traced with symbolic
// tensors into a kiln::Graph, the graph passes run, and a backend turns the graph into a
// callable. Guards check each input's dtype, rank and static sizes; a failed guard
// compiles again (KILN_LOG=recompiles says why). Dims marked dynamic become symbols so
// one compilation serves every size.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/fn_traits.h"
#include "graph/graph.h"

namespace Halide {
class Pipeline;
struct Target;
}  // namespace Halide

namespace kiln {

using CompiledGraphFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;
// A backend receives the captured graph and the example inputs of the call that
// triggered compilation, and returns what runs it (the seed's debug_backend).
using Backend = std::function<CompiledGraphFn(Graph& graph, const std::vector<Tensor>& example_inputs)>;

struct CompileOptions {
  // "host", "host-cuda", or a Halide target string (kiln's own backend only).
  std::string target = "host";
  // Empty: kiln's compiler (one Halide pipeline, scheduled as `scheduler` says, JIT).
  Backend backend;
  // Who schedules that pipeline (kiln's own backend only): "Kiln" (kiln's autoscheduler,
  // planning for the sizes of the call that compiles, on a CPU or CUDA target), "rules"
  // (kiln's hand-written rules) or "default" (Kiln).
  // Empty: the environment's KILN_SCHEDULER=default|Kiln|rules, else "default".
  std::string scheduler;
  // Every dimension of every input is dynamic...
  bool dynamic = false;
  // ...or just these (input index, dimension) pairs. Sizes 0 and 1 are specialized.
  std::vector<std::pair<int, int>> dynamic_dims;
  // Placeholder names in the graph listing; default x0, x1, ...
  std::vector<std::string> input_names;
  // A name for logs.
  std::string name = "fn";
  // Mixed precision, PyTorch's autocast rules (graph/passes/autocast.h): "bf16" or "f16"
  // runs contractions in that type (f32 accumulation) and reductions, softmax and norms
  // in f32; inputs and outputs keep their types (f32 master weights). "" (default): off.
  std::string autocast;
};

// kiln's own backend for a target, with a scheduler named as in CompileOptions::scheduler
// ("default", "Kiln" or "rules").
Backend halide_backend(const std::string& target = "host", const std::string& scheduler = "default");
// A schedule written for one pipeline: a function of a schedule file (`kiln autoschedule
// <model> --function NAME -o FILE`, then edited by hand).
using PipelineSchedule = std::function<void(Halide::Pipeline pipeline, Halide::Target target)>;
// kiln's own backend with a hand-written schedule: the graph is lowered as for the Kiln
// scheduler (estimates from the call's inputs, the contractions given the rules' loops and
// register tiles), then `schedule` schedules the rest in place of the search. The sizes
// within the rules' loops (conv2d's register tiles, matmul's tasks) are `contractions`'s,
// the JSON text a schedule file holds beside its function, for the Funcs it names, and
// else the cost model's; without `contractions`, the tuning database's entry's or the
// cost model's. A schedule that does not fit the pipeline (a Func it lacks, a directive
// Halide rejects, a size the pipeline cannot take) is a kiln::Error saying so.
//
//   #include "resnet18.schedule.h"
//   kiln::CompileOptions o;
//   o.backend = kiln::scheduled_backend("host", apply_schedule_resnet18_cpu,
//                                       apply_schedule_resnet18_cpu_contractions);
Backend scheduled_backend(const std::string& target, PipelineSchedule schedule, const std::string& contractions = "");
// The seed's debug_backend: prints the graph, writes it as Graphviz to `dot_path` (if not
// empty), and runs it with the eager interpreter.
Backend debug_backend(const std::string& dot_path = "");

using TracedFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

// Traces `fn` on inputs shaped like `example_inputs` (with the options' dynamic dims) and
// returns the graph after the graph passes.
Graph trace(const TracedFn& fn, const std::vector<Tensor>& example_inputs,
            const CompileOptions& options = {});

namespace detail {

class CompiledImpl : public std::enable_shared_from_this<CompiledImpl> {
 public:
  CompiledImpl(TracedFn fn, CompileOptions options);
  std::vector<Tensor> call(const std::vector<Tensor>& inputs);
  int num_compilations() const { return int(entries_.size() + autograd_entries_.size()); }
  const Graph& last_graph() const;

 private:
  struct Entry;
  // Inputs that need grad: the joint forward+backward graph is partitioned (min cut on
  // bytes) into a forward that also returns the saved values and a backward; each
  // floating-point output gets a GradNode that runs the compiled backward.
  struct AutogradEntry;
  std::vector<Tensor> call_with_autograd(const std::vector<Tensor>& inputs);
  Backend backend() const;
  std::vector<std::shared_ptr<AutogradEntry>> autograd_entries_;
  TracedFn fn_;
  CompileOptions options_;
  std::vector<std::shared_ptr<Entry>> entries_;
};

}  // namespace detail

// The callable kiln::compile returns. Called with tensors; returns what the function
// returns (a Tensor or a std::vector<Tensor>).
template <class Result, size_t Arity>
class Compiled {
 public:
  explicit Compiled(std::shared_ptr<detail::CompiledImpl> impl) : impl_(std::move(impl)) {}

  // A function of std::vector<Tensor> takes a vector (a braced list works: f({x, w})).
  Result operator()(const std::vector<Tensor>& inputs) const
    requires(Arity == size_t(-1))
  {
    return result(impl_->call(inputs));
  }
  template <class... Ts>
  Result operator()(const Ts&... inputs) const
    requires(Arity != size_t(-1))
  {
    static_assert(sizeof...(Ts) == Arity, "wrong number of tensors for this compiled function");
    return result(impl_->call(std::vector<Tensor>{inputs...}));
  }
  // Number of times the function was traced and compiled (one per guard set).
  int num_compilations() const { return impl_->num_compilations(); }
  // The graph of the most recent compilation.
  const Graph& graph() const { return impl_->last_graph(); }

 private:
  static Result result(std::vector<Tensor> out) {
    if constexpr (std::is_same_v<Result, Tensor>) return out.at(0);
    else return out;
  }
  std::shared_ptr<detail::CompiledImpl> impl_;
};

template <class F>
auto compile(F fn, CompileOptions options = {}) {
  using traits = detail::fn_traits<F>;
  using R = std::decay_t<typename traits::result>;
  if constexpr (traits::arity == 1 && std::is_same_v<typename traits::first, std::vector<Tensor>>) {
    auto impl = std::make_shared<detail::CompiledImpl>(
        [fn](const std::vector<Tensor>& in) { return detail::as_outputs(fn(in)); }, std::move(options));
    return Compiled<R, size_t(-1)>(impl);
  } else {
    static_assert(std::is_same_v<R, Tensor> || std::is_same_v<R, std::vector<Tensor>>,
                  "a compiled function returns a kiln::Tensor or a std::vector<kiln::Tensor>");
    auto impl = std::make_shared<detail::CompiledImpl>(
        detail::wrap(fn, std::make_index_sequence<traits::arity>{}), std::move(options));
    return Compiled<R, traits::arity>(impl);
  }
}

}  // namespace kiln
