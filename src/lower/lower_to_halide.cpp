#include "lower/lower_to_halide.h"

#include "core/error.h"

namespace kiln {

std::vector<Halide::Argument> LoweredGraph::arguments() const {
  return std::vector<Halide::Argument>(inputs.begin(), inputs.end());
}

namespace {

// A Func reading a concrete tensor (a constant captured while tracing).
Halide::Func constant_func(const Node& n) {
  Halide::Runtime::Buffer<> shared = n.constant.to_host().buffer();  // shares the allocation
  Halide::Buffer<> data(std::move(shared), n.name);
  Halide::Func f(n.name);
  auto v = algo::vars(n.meta.shape.rank());
  f(v) = data(algo::exprs(v));
  return f;
}

void constrain_output(Halide::Func& out, const TensorMeta& meta,
                      const std::map<std::string, Halide::Expr>& symbol_extents) {
  const int r = meta.shape.rank();
  for (int j = 0; j < r; ++j) {
    const Dim& d = meta.shape[r - 1 - j];
    Halide::OutputImageParam ob = out.output_buffer();
    ob.dim(j).set_min(0);
    if (d.is_static()) {
      ob.dim(j).set_extent(int(d.size));
    } else if (auto it = symbol_extents.find(d.sym); it != symbol_extents.end()) {
      ob.dim(j).set_extent(it->second);
    }
  }
}

}  // namespace

LoweredGraph lower_to_halide(const Graph& graph, const ExternalInputs* external) {
  LoweredGraph out;
  std::map<std::string, Halide::Expr> symbol_extents;
  if (external) symbol_extents = external->symbol_extents;

  // Inputs first, so every symbol has an extent before any op asks for one.
  size_t k = 0;
  for (int id : graph.inputs()) {
    const Node& n = graph.node(id);
    const int r = n.meta.shape.rank();
    Halide::Func f(n.name + "_in");
    auto v = algo::vars(r);
    if (external) {
      KILN_CHECK(k < external->funcs.size(), "too few external inputs");
      f(v) = external->funcs[k](v);
    } else {
      Halide::ImageParam p(algo::halide_type(n.meta.dtype), r, n.name);
      for (int j = 0; j < r; ++j) {
        const Dim& d = n.meta.shape[r - 1 - j];
        p.dim(j).set_min(0);
        if (d.is_static()) {
          p.dim(j).set_extent(int(d.size));
        } else if (auto it = symbol_extents.find(d.sym); it != symbol_extents.end()) {
          p.dim(j).set_extent(it->second);  // same symbol, same size
        } else {
          symbol_extents[d.sym] = p.dim(j).extent();
        }
      }
      f(v) = p(v);
      out.inputs.push_back(p);
    }
    out.funcs[id] = f;
    ++k;
  }

  auto extent = [&](const Dim& d) -> Halide::Expr {
    if (d.is_static()) return Halide::Expr(int(d.size));
    auto it = symbol_extents.find(d.sym);
    KILN_CHECK(it != symbol_extents.end(), "symbol ", d.sym, " is bound by no input");
    return it->second;
  };

  for (const Node& n : graph.nodes()) {
    if (n.is_placeholder()) continue;
    if (n.is_constant()) {
      out.funcs[n.id] = constant_func(n);
      continue;
    }
    const OpDef& op = get_op(n.op);
    std::vector<Halide::Func> in;
    std::vector<TensorMeta> metas;
    for (int i : n.inputs) {
      in.push_back(out.funcs.at(i));
      metas.push_back(graph.node(i).meta);
    }
    OpCall call{metas, n.meta, n.attrs, extent, &out.stages};
    Halide::Func f = op.algorithm(in, call);
    out.funcs[n.id] = f;
    out.kinds[n.id] = op.kind;
    if (op.kind == OpKind::Contraction) {
      for (int i : n.inputs) {
        const Node& src = graph.node(i);
        if (src.is_placeholder() || src.is_constant()) continue;
        out.contraction_operands.push_back(out.funcs.at(i));
      }
    }
  }

  // Outputs are fresh Funcs, so an output may repeat a node or be an input.
  for (size_t o = 0; o < graph.outputs().size(); ++o) {
    const Node& n = graph.node(graph.outputs()[o]);
    Halide::Func f("output_" + std::to_string(o));
    auto v = algo::vars(n.meta.shape.rank());
    f(v) = out.funcs.at(n.id)(v);
    if (!external) constrain_output(f, n.meta, symbol_extents);
    out.outputs.push_back(f);
  }
  return out;
}

}  // namespace kiln
