#include "autodiff/partition.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "autodiff/grad.h"
#include "core/error.h"
#include "graph/tracer.h"
#include "ops/api.h"
#include "runtime/compile.h"

namespace kiln {

Graph joint_graph(const TensorFn& fn, const std::vector<Tensor>& example_inputs, const std::vector<int>& argnums) {
  // Output shapes first (a trace of fn alone), for the gradient placeholders.
  Graph forward_only = trace(fn, example_inputs);
  std::vector<Tensor> examples = example_inputs;
  for (const TensorMeta& m : forward_only.output_metas()) examples.push_back(full(m.shape, 0.0, m.dtype));
  const size_t n = example_inputs.size(), m = forward_only.outputs().size();
  TensorFn joint = [fn, argnums, n, m](const std::vector<Tensor>& in) {
    std::vector<Tensor> primals(in.begin(), in.begin() + long(n)), out_grads(in.begin() + long(n), in.end());
    auto [outputs, grads] = differentiate(fn, argnums, primals, [&](const std::vector<Tensor>& outs) {
      if (outs.size() != m) user_error("autograd: the function's number of outputs changed between traces");
      return std::pair{outs, out_grads};
    });
    outputs.insert(outputs.end(), grads.begin(), grads.end());
    return outputs;
  };
  return trace(joint, examples);
}

namespace {

constexpr int64_t kInf = std::numeric_limits<int64_t>::max() / 4;

// Edmonds-Karp max flow; afterwards `reachable_from_source` gives the min cut's side.
class FlowNetwork {
 public:
  explicit FlowNetwork(int n) : adj_(size_t(n)) {}
  void add_edge(int u, int v, int64_t cap) {
    adj_[size_t(u)].push_back(int(edges_.size()));
    edges_.push_back({v, cap});
    adj_[size_t(v)].push_back(int(edges_.size()));
    edges_.push_back({u, 0});
  }
  void max_flow(int s, int t) {
    while (true) {
      std::vector<int> via(adj_.size(), -1);
      std::deque<int> q = {s};
      via[size_t(s)] = -2;
      while (!q.empty() && via[size_t(t)] == -1) {
        int u = q.front();
        q.pop_front();
        for (int e : adj_[size_t(u)]) {
          int v = edges_[size_t(e)].to;
          if (via[size_t(v)] == -1 && edges_[size_t(e)].cap > 0) {
            via[size_t(v)] = e;
            q.push_back(v);
          }
        }
      }
      if (via[size_t(t)] == -1) return;
      int64_t push = kInf;
      for (int v = t; v != s; v = edges_[size_t(via[size_t(v)] ^ 1)].to) push = std::min(push, edges_[size_t(via[size_t(v)])].cap);
      for (int v = t; v != s; v = edges_[size_t(via[size_t(v)] ^ 1)].to) {
        edges_[size_t(via[size_t(v)])].cap -= push;
        edges_[size_t(via[size_t(v)] ^ 1)].cap += push;
      }
    }
  }
  std::vector<bool> reachable_from(int s) const {
    std::vector<bool> seen(adj_.size(), false);
    std::deque<int> q = {s};
    seen[size_t(s)] = true;
    while (!q.empty()) {
      int u = q.front();
      q.pop_front();
      for (int e : adj_[size_t(u)]) {
        int v = edges_[size_t(e)].to;
        if (!seen[size_t(v)] && edges_[size_t(e)].cap > 0) {
          seen[size_t(v)] = true;
          q.push_back(v);
        }
      }
    }
    return seen;
  }

 private:
  struct Edge {
    int to;
    int64_t cap;
  };
  std::vector<std::vector<int>> adj_;
  std::vector<Edge> edges_;
};

int64_t bytes_of(const TensorMeta& m) {
  if (!m.shape.is_static()) return int64_t(1) << 24;  // unknown: assume large
  return std::max<int64_t>(1, m.shape.numel()) * dtype_bytes(m.dtype);
}

// Values the backward may compute again instead of loading: cheap per element.
bool recomputable(const Node& n) {
  if (n.is_placeholder()) return false;
  if (n.is_constant()) return true;
  OpKind k = get_op(n.op).kind;
  return k == OpKind::Pointwise || k == OpKind::Injective || k == OpKind::Source;
}

// Copies the nodes of `joint` in `keep` (topological order) into `g`, reading the
// values in `given` (joint id -> id in g) instead of computing them.
void copy_nodes(const Graph& joint, const std::vector<bool>& keep, std::map<int, int>& given, Graph& g) {
  for (const Node& n : joint.nodes()) {
    if (!keep[size_t(n.id)] || given.count(n.id)) continue;
    if (n.is_constant()) {
      given[n.id] = g.add_constant(n.constant);
      continue;
    }
    KILN_CHECK(!n.is_placeholder(), "partition: placeholder ", n.name, " is neither given nor saved");
    std::vector<int> ins;
    for (int i : n.inputs) ins.push_back(given.at(i));
    given[n.id] = g.add_op(n.op, ins, n.attrs);
  }
}

// Marks everything `roots` need, stopping at `given`.
std::vector<bool> needed_by(const Graph& joint, const std::vector<int>& roots, const std::set<int>& given) {
  std::vector<bool> need(joint.nodes().size(), false);
  std::vector<int> stack = roots;
  while (!stack.empty()) {
    int id = stack.back();
    stack.pop_back();
    if (need[size_t(id)]) continue;
    need[size_t(id)] = true;
    if (given.count(id)) continue;
    for (int i : joint.node(id).inputs) stack.push_back(i);
  }
  return need;
}

}  // namespace

Partition min_cut_partition(const Graph& joint, int num_inputs, int num_outputs) {
  const auto& nodes = joint.nodes();
  const int n = int(nodes.size());
  const std::vector<int>& placeholders = joint.inputs();
  std::vector<int> fwd_outputs(joint.outputs().begin(), joint.outputs().begin() + num_outputs);
  std::vector<int> grad_outputs(joint.outputs().begin() + num_outputs, joint.outputs().end());

  // Backward values: those that depend on an output gradient.
  std::vector<bool> backward(size_t(n), false);
  for (size_t i = size_t(num_inputs); i < placeholders.size(); ++i) backward[size_t(placeholders[i])] = true;
  for (const Node& nd : nodes)
    for (int i : nd.inputs) backward[size_t(nd.id)] = backward[size_t(nd.id)] || backward[size_t(i)];

  // Network: node v is v_in = 2v, v_out = 2v + 1; the source is the forward, the sink the
  // backward. Cutting v_in -> v_out means saving v.
  const int source = 2 * n, sink = 2 * n + 1;
  FlowNetwork net(2 * n + 2);
  for (const Node& nd : nodes) {
    if (backward[size_t(nd.id)]) continue;
    const int v_in = 2 * nd.id, v_out = 2 * nd.id + 1;
    net.add_edge(v_in, v_out, nd.is_constant() ? kInf : bytes_of(nd.meta));
    // Inputs and values the backward must not recompute are produced by the forward.
    if (nd.is_placeholder() || !recomputable(nd)) net.add_edge(source, v_in, kInf);
    for (int i : nd.inputs) net.add_edge(2 * i + 1, v_in, kInf);
    bool feeds_backward = false;
    for (int u : joint.users(nd.id)) feeds_backward = feeds_backward || backward[size_t(u)];
    for (int g : grad_outputs) feeds_backward = feeds_backward || g == nd.id;
    if (feeds_backward) net.add_edge(v_out, sink, kInf);
  }
  net.max_flow(source, sink);
  std::vector<bool> side = net.reachable_from(source);

  Partition p;
  p.num_outputs = num_outputs;
  std::vector<int> saved;
  for (const Node& nd : nodes) {
    if (backward[size_t(nd.id)]) continue;
    if (side[size_t(2 * nd.id)] && !side[size_t(2 * nd.id + 1)]) saved.push_back(nd.id);
  }
  // Forward graph: fn's inputs -> fn's outputs and the saved values.
  {
    std::map<int, int> given;
    for (int i = 0; i < num_inputs; ++i) {
      const Node& ph = joint.node(placeholders[size_t(i)]);
      given[ph.id] = p.forward.add_placeholder(ph.name, ph.meta);
    }
    std::vector<int> roots = fwd_outputs;
    roots.insert(roots.end(), saved.begin(), saved.end());
    std::set<int> stop(placeholders.begin(), placeholders.begin() + num_inputs);
    copy_nodes(joint, needed_by(joint, roots, stop), given, p.forward);
    std::vector<int> outs;
    for (int r : roots) outs.push_back(given.at(r));
    p.forward.set_outputs(outs);
  }
  // Backward graph: saved values and output gradients -> input gradients.
  {
    std::map<int, int> given;
    std::set<int> stop;
    for (int s : saved) {
      const Node& nd = joint.node(s);
      given[s] = p.backward.add_placeholder("saved_" + nd.name, nd.meta);
      stop.insert(s);
      p.saved.push_back(nd.name);
      p.saved_bytes += bytes_of(nd.meta);
    }
    for (size_t i = size_t(num_inputs); i < placeholders.size(); ++i) {
      const Node& ph = joint.node(placeholders[i]);
      given[ph.id] = p.backward.add_placeholder(ph.name, ph.meta);
      stop.insert(ph.id);
    }
    std::vector<bool> need = needed_by(joint, grad_outputs, stop);
    for (const Node& nd : nodes)
      if (need[size_t(nd.id)] && !backward[size_t(nd.id)] && !stop.count(nd.id) && !nd.is_constant())
        p.recomputed.push_back(nd.name);
    copy_nodes(joint, need, given, p.backward);
    std::vector<int> outs;
    for (int g : grad_outputs) outs.push_back(given.at(g));
    p.backward.set_outputs(outs);
  }
  return p;
}

std::string Partition::str() const {
  std::ostringstream s;
  s << "saved for backward (" << saved_bytes << " bytes):";
  for (const std::string& n : saved) s << " %" << n;
  s << "\nrecomputed in backward:";
  for (const std::string& n : recomputed) s << " %" << n;
  s << "\nforward " << forward.str() << "\nbackward " << backward.str();
  return s.str();
}

}  // namespace kiln
