#include "graph/tracer.h"

#include "core/error.h"

namespace kiln {

namespace {
thread_local Tracer* current_tracer = nullptr;
}

Tracer::Tracer(Graph& graph) : graph_(graph), previous_(current_tracer) { current_tracer = this; }
Tracer::~Tracer() { current_tracer = previous_; }
Tracer* Tracer::current() { return current_tracer; }

Tensor Tracer::symbolic(int node) {
  auto impl = std::make_shared<TensorImpl>();
  impl->meta = graph_.node(node).meta;
  impl->tracer = this;
  impl->value = node;
  return Tensor(std::move(impl));
}

Tensor Tracer::placeholder(const std::string& name, const TensorMeta& meta) {
  return symbolic(graph_.add_placeholder(name, meta));
}

int Tracer::value_of(const Tensor& t) {
  if (t.is_symbolic()) {
    if (t.impl()->tracer != this) {
      user_error("a tensor traced by another kiln::compile call was used here; tensors from "
                 "one traced function cannot flow into another (return it and pass it in)");
    }
    return t.impl()->value;
  }
  auto it = constants_.find(t.impl());
  if (it != constants_.end()) return it->second;
  int id = graph_.add_constant(t);
  constants_[t.impl()] = id;
  captured_.push_back(t);
  return id;
}

Tensor Tracer::record(const std::string& op, const std::vector<Tensor>& inputs,
                      const Attrs& attrs) {
  std::vector<int> ids;
  for (const Tensor& t : inputs) ids.push_back(value_of(t));
  return symbolic(graph_.add_op(op, ids, attrs));
}

}  // namespace kiln
