#include "runtime/eager.h"

#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>

#include "core/error.h"
#include "core/log.h"
#include "autodiff/autograd.h"
#include "autodiff/tape.h"
#include "graph/tracer.h"
#include "lower/kernel.h"
#include "lower/scheduler.h"
#include "lower/target.h"

namespace kiln {

namespace {

// The compiled kernel of each (op, attributes, device, input types and shapes), the
// least recently used dropped beyond kMaxKernels: a long-running process that meets many
// distinct ops and shapes (a fuzzer; a server loading models) would otherwise hold every
// JIT module it ever compiled (the ONNX fuzz target reached 4 GiB so).
constexpr size_t kMaxKernels = 512;
struct EagerCache {
  std::mutex mu;
  std::list<std::pair<std::string, std::shared_ptr<Kernel>>> order;  // most recent first
  std::map<std::string, decltype(order)::iterator> kernels;
  int compiled = 0;
  // Per shape-generic key: the sizes of its latest calls and how many in a row had them.
  std::map<std::string, std::pair<std::string, int>> repeats;
};

EagerCache& cache() {
  static EagerCache c;
  return c;
}

// Placeholder shapes for a shape-generic kernel: dims of size 0 or 1 stay static (they
// change broadcasting), the others become symbols, one per distinct size, so dims that
// are equal now stay equal ("duck sizing").
std::vector<TensorMeta> generic_metas(const std::vector<Tensor>& inputs) {
  std::map<int64_t, std::string> symbol_of_size;
  std::vector<TensorMeta> metas;
  for (const Tensor& t : inputs) {
    std::vector<Dim> dims;
    for (const Dim& d : t.shape().dims()) {
      if (d.size <= 1) {
        dims.emplace_back(d.size);
        continue;
      }
      auto [it, fresh] = symbol_of_size.emplace(d.size, "e" + std::to_string(symbol_of_size.size()));
      dims.push_back(Dim::symbolic(it->second));
    }
    metas.push_back({t.dtype(), Shape(std::move(dims))});
  }
  return metas;
}

}  // namespace

int eager_kernels_compiled() {
  std::lock_guard<std::mutex> lock(cache().mu);
  return cache().compiled;
}

namespace {

// The kernel cached under `key`, else the one `build` traces into a graph, compiled for
// the CPU (scheduled by `scheduler`, planned for `inputs`' sizes) or the GPU (the rules).
std::shared_ptr<Kernel> cached_kernel(const std::string& key, bool on_gpu, const std::string& scheduler,
                                      const std::vector<Tensor>& inputs, const std::vector<TensorMeta>& metas,
                                      const std::function<Graph(const std::vector<TensorMeta>&)>& build) {
  {
    std::lock_guard<std::mutex> lock(cache().mu);
    EagerCache& c = cache();
    auto it = c.kernels.find(key);
    if (it != c.kernels.end()) {
      c.order.splice(c.order.begin(), c.order, it->second);
      return it->second->second;
    }
  }
  const Graph g = build(metas);
  log("eager", "compiling eager kernel " + key);
  auto kernel = std::make_shared<Kernel>(g, parse_target(on_gpu ? "host-cuda" : "host"),
                                         on_gpu ? ScheduleFn{} : make_schedule_fn(scheduler, g, inputs),
                                         /*vendor_kernels=*/true);
  std::lock_guard<std::mutex> lock(cache().mu);
  EagerCache& c = cache();
  if (!c.kernels.count(key)) {
    c.order.emplace_front(key, kernel);
    c.kernels.emplace(key, c.order.begin());
    if (c.order.size() > kMaxKernels) {
      c.kernels.erase(c.order.back().first);
      c.order.pop_back();
    }
  }
  ++c.compiled;
  return kernel;
}

bool any_on_gpu(const std::vector<Tensor>& inputs) {
  for (const Tensor& t : inputs)
    if (t.device().is_cuda()) return true;
  return false;
}

// On the CPU the autoscheduler (KILN_SCHEDULER, else Kiln) plans each kernel for the
// sizes of its first call; the kernel stays correct for every size its key admits. The
// rules took 1.6-3.4x as long on the suite's softmax, layer norm, attention and conv
// (2-core VM). On a GPU the rules' kernels serve.
std::string eager_scheduler(bool on_gpu) { return on_gpu ? "rules" : scheduler_from_env(false); }

std::string key_prefix(const std::string& name, const Attrs& attrs, bool on_gpu, const std::string& scheduler) {
  return name + "(" + attrs.str() + ")" + (on_gpu ? "@cuda" : "@host:" + scheduler);
}

std::string sizes_of(const std::vector<Tensor>& inputs) {
  std::string s;
  for (const Tensor& t : inputs) {
    s += "[";
    for (int64_t n : t.shape().sizes()) s += std::to_string(n) + ",";
    s += "]";
  }
  return s;
}

// The kernel for a call: the shape-generic one (`metas`) under `key`, except where the
// same sizes keep coming (a training or inference loop) on the CPU: then one compiled for
// those sizes exactly, as compile() would (static loop bounds: no vector tails, no index
// arithmetic; a 16 x 128 x 128 softmax took 5x the time generic).
std::shared_ptr<Kernel> eager_kernel(const std::string& key, bool on_gpu, const std::string& scheduler,
                                     const std::vector<Tensor>& inputs, const std::vector<TensorMeta>& metas,
                                     const std::function<Graph(const std::vector<TensorMeta>&)>& build) {
  bool generic = false;
  for (const TensorMeta& m : metas) generic = generic || !m.shape.is_static();
  int64_t elements = 0;
  for (const Tensor& t : inputs) elements += t.numel();
  if (!generic || on_gpu || elements < kEagerExactMinElements) {
    return cached_kernel(key, on_gpu, scheduler, inputs, metas, build);
  }
  const std::string sizes = sizes_of(inputs);
  const std::string exact_key = key + " @" + sizes;
  bool hot = false;
  {
    std::lock_guard<std::mutex> lock(cache().mu);
    EagerCache& c = cache();
    if (c.kernels.count(exact_key)) {
      hot = true;
    } else {
      if (c.repeats.size() > 4 * kMaxKernels) c.repeats.clear();
      auto& [last, count] = c.repeats[key];
      count = last == sizes ? count + 1 : 1;
      last = sizes;
      hot = count >= kEagerHotCalls;
    }
  }
  if (!hot) return cached_kernel(key, on_gpu, scheduler, inputs, metas, build);
  std::vector<TensorMeta> concrete;
  for (const Tensor& t : inputs) concrete.push_back(t.meta());
  return cached_kernel(exact_key, on_gpu, scheduler, inputs, concrete, build);
}

}  // namespace

Tensor eager_apply(const OpDef& op, const std::vector<Tensor>& inputs, const Attrs& attrs) {
  // Checks the inputs (and raises the op's own error) before any compilation.
  std::vector<TensorMeta> concrete;
  for (const Tensor& t : inputs) concrete.push_back(t.meta());
  infer_op(op, concrete, attrs);

  const bool on_gpu = any_on_gpu(inputs);
  const std::string scheduler = eager_scheduler(on_gpu);
  std::vector<TensorMeta> metas = op.eager_generic ? generic_metas(inputs) : concrete;
  std::string key = key_prefix(op.name, attrs, on_gpu, scheduler);
  for (const TensorMeta& m : metas) key += " " + m.str();
  auto kernel = eager_kernel(key, on_gpu, scheduler, inputs, metas, [&](const std::vector<TensorMeta>& ms) {
    Graph g;
    std::vector<int> ids;
    for (size_t i = 0; i < ms.size(); ++i) ids.push_back(g.add_placeholder("x" + std::to_string(i), ms[i]));
    g.set_outputs({g.add_op(op.name, ids, attrs)});
    return g;
  });
  return kernel->run(inputs)[0];
}

Tensor eager_composite(const std::string& name, const Attrs& attrs, const std::vector<Tensor>& inputs,
                       const std::function<Tensor(const std::vector<Tensor>&)>& fn) {
  bool concrete = !Tracer::current() && !Tape::any_active() && !any_needs_grad(inputs);
  for (const Tensor& t : inputs) concrete = concrete && t.defined() && !t.is_symbolic();
  if (!concrete) return fn(inputs);
  const bool on_gpu = any_on_gpu(inputs);
  const std::string scheduler = eager_scheduler(on_gpu);
  const std::vector<TensorMeta> metas = generic_metas(inputs);
  std::string key = key_prefix("composite:" + name, attrs, on_gpu, scheduler);
  for (const TensorMeta& m : metas) key += " " + m.str();
  std::shared_ptr<Kernel> kernel;
  try {
    kernel = eager_kernel(key, on_gpu, scheduler, inputs, metas, [&](const std::vector<TensorMeta>& ms) {
      Graph g;
      Tracer tracer(g);
      std::vector<Tensor> args;
      for (size_t i = 0; i < ms.size(); ++i) args.push_back(tracer.placeholder("x" + std::to_string(i), ms[i]));
      g.set_outputs({tracer.value_of(fn(args))});
      return g;
    });
  } catch (const Error&) {
    // fn refused the inputs (traced with sizes as symbols): op by op, its errors name
    // the sizes themselves.
    return fn(inputs);
  }
  return kernel->run(inputs)[0];
}

}  // namespace kiln
