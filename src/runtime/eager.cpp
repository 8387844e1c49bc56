#include "runtime/eager.h"

#include <map>
#include <memory>
#include <mutex>

#include "core/error.h"
#include "core/log.h"
#include "lower/kernel.h"
#include "lower/target.h"

namespace kiln {

namespace {

struct EagerCache {
  std::mutex mu;
  std::map<std::string, std::shared_ptr<Kernel>> kernels;
  int compiled = 0;
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

Tensor eager_apply(const OpDef& op, const std::vector<Tensor>& inputs, const Attrs& attrs) {
  // Checks the inputs (and raises the op's own error) before any compilation.
  std::vector<TensorMeta> concrete;
  bool on_gpu = false;
  for (const Tensor& t : inputs) {
    concrete.push_back(t.meta());
    on_gpu = on_gpu || t.device().is_cuda();
  }
  infer_op(op, concrete, attrs);

  std::vector<TensorMeta> metas = op.eager_generic ? generic_metas(inputs) : concrete;
  std::string key = op.name + "(" + attrs.str() + ")" + (on_gpu ? "@cuda" : "@host");
  for (const TensorMeta& m : metas) key += " " + m.str();

  std::shared_ptr<Kernel> kernel;
  {
    std::lock_guard<std::mutex> lock(cache().mu);
    auto it = cache().kernels.find(key);
    if (it != cache().kernels.end()) kernel = it->second;
  }
  if (!kernel) {
    Graph g;
    std::vector<int> ids;
    for (size_t i = 0; i < metas.size(); ++i) ids.push_back(g.add_placeholder("x" + std::to_string(i), metas[i]));
    g.set_outputs({g.add_op(op.name, ids, attrs)});
    log("eager", "compiling eager kernel " + key);
    kernel = std::make_shared<Kernel>(g, parse_target(on_gpu ? "host-cuda" : "host"), ScheduleFn{}, /*vendor_kernels=*/true);
    std::lock_guard<std::mutex> lock(cache().mu);
    cache().kernels.emplace(key, kernel);
    ++cache().compiled;
  }
  return kernel->run(inputs)[0];
}

}  // namespace kiln
