#include "lower/lower_to_halide.h"

#include "core/error.h"
#include "lower/vendor_stages.h"
#include "ops/math/trig.h"

namespace kiln {

std::vector<Halide::Argument> LoweredGraph::arguments() const {
  return std::vector<Halide::Argument>(inputs.begin(), inputs.end());
}

namespace {

// A Func reading a concrete tensor (a constant captured while tracing); `buffer` receives
// the Halide buffer it reads (undefined for an empty tensor).
Halide::Func constant_func(const Node& n, Halide::Buffer<>* buffer) {
  if (n.meta.shape.numel() == 0) {
    // Never read (every consumer is empty too); Halide cannot wrap an empty buffer.
    Halide::Func f(n.name);
    f(algo::vars(n.meta.shape.rank())) = algo::constant(algo::halide_type(n.meta.dtype), 0);
    return f;
  }
  Halide::Runtime::Buffer<> shared = n.constant.to_host().buffer();  // shares the allocation
  Halide::Buffer<> data(std::move(shared), n.name);
  *buffer = data;
  Halide::Func f(n.name);
  auto v = algo::vars(n.meta.shape.rank());
  f(v) = algo::opaque_read(data(algo::exprs(v)));  // as an input is read (lower_to_halide)
  return f;
}

// kiln's tensors are dense and row-major: each dim's stride is the product of the inner
// extents. Said to Halide, static shapes give constant strides, from which it proves the
// alignment of vector loads and stores (a GPU thread's 128-bit accesses, for one).
// `extents`: each dim's extent, innermost first (a constant where the dim is static).
void constrain_dense(Halide::OutputImageParam p, const std::vector<Halide::Expr>& extents) {
  Halide::Expr stride = 1;
  for (size_t j = 1; j < extents.size(); ++j) {
    stride = Halide::Internal::simplify(stride * extents[j - 1]);
    p.dim(int(j)).set_stride(stride);
  }
}

void constrain_output(Halide::Func& out, const TensorMeta& meta,
                      const std::map<std::string, Halide::Expr>& symbol_extents) {
  const int r = meta.shape.rank();
  Halide::OutputImageParam ob = out.output_buffer();
  std::vector<Halide::Expr> extents;
  for (int j = 0; j < r; ++j) {
    const Dim& d = meta.shape[r - 1 - j];
    ob.dim(j).set_min(0);
    extents.push_back(ob.dim(j).extent());
    if (d.is_static()) {
      ob.dim(j).set_extent(int(d.size));
      extents.back() = int(d.size);
    } else if (auto it = symbol_extents.find(d.sym); it != symbol_extents.end()) {
      ob.dim(j).set_extent(it->second);
      extents.back() = it->second;
    }
  }
  constrain_dense(ob, extents);
}

// A permute, expand or slice (possibly several) of an input or a constant that keeps its
// innermost axis innermost: reading it inside a contraction walks rows as stored, with
// no arithmetic. A view that moves the innermost axis (a transpose) is stored instead,
// and so is a view of a computed value: reading either in place strides by whole rows
// per step of k, which measured 2x slower than storing the transpose (70 vs 31 ms for
// x^T @ dz, 1024x1024 by 1024x4096, in the MLP train step).
bool is_row_view_of_stored_data(const Graph& graph, const Node& n) {
  if (n.is_placeholder() || n.is_constant()) return true;
  if (n.op == "permute") {
    const std::vector<int64_t> dims = n.attrs.get_ints("dims");
    const int64_t rank = int64_t(dims.size());
    if (dims.empty() || (dims.back() + rank) % rank != rank - 1) return false;
  } else if (n.op != "expand" && n.op != "slice") {
    return false;
  }
  return is_row_view_of_stored_data(graph, graph.node(n.inputs[0]));
}

// Where each matmul's tiles may be computed: follow its result through pointwise ops of
// the same shape, each the only use of the one before, to the first value that is stored
// anyway (a graph output, or a stored contraction operand) or that several ops read (it
// is then stored in place of the product: the same bytes, and its readers do not each
// recompute the chain). Computing the matmul per register tile of that value fuses the
// chain as an epilogue, instead of storing the product and reading it back.
void find_epilogue_hosts(const Graph& graph, const std::map<int, Halide::Func>& matmul_accs,
                         const std::set<std::string>& stored, LoweredGraph& out) {
  std::map<int, int> uses;
  std::map<int, int> user;       // the last user seen, meaningful when uses == 1
  std::map<int, int> output_of;  // node -> the graph output it is
  for (const Node& n : graph.nodes()) {
    for (int i : n.inputs) ++uses[i], user[i] = n.id;
  }
  for (size_t o = 0; o < graph.outputs().size(); ++o) {
    const int id = graph.outputs()[o];
    ++uses[id];
    user[id] = -1;
    output_of[id] = int(o);
  }
  for (const auto& [id, acc] : matmul_accs) {
    const Shape& shape = graph.node(id).meta.shape;
    const Dim& cols = shape[shape.rank() - 1];
    const int64_t columns = cols.is_static() ? cols.size : 0;
    int cur = id;
    while (true) {
      if (uses[cur] == 1 && output_of.count(cur)) {
        out.epilogue_hosts[acc.name()] = {out.outputs[size_t(output_of[cur])], columns};
        break;
      }
      const Halide::Func& f = out.funcs.at(cur);
      if ((uses[cur] == 1 && stored.count(f.name())) || (cur != id && uses[cur] > 1 && !output_of.count(cur))) {
        out.epilogue_hosts[acc.name()] = {f, columns};
        break;
      }
      if (uses[cur] != 1) break;
      const Node& next = graph.node(user[cur]);
      auto kind = out.kinds.find(next.id);
      if (kind == out.kinds.end() || kind->second != OpKind::Pointwise || !(next.meta.shape == shape)) break;
      cur = next.id;
    }
  }
}

}  // namespace

LoweredGraph lower_to_halide(const Graph& graph, const ExternalInputs* external, const LowerOptions& options) {
  const math::ScopedGpuMath gpu_math(options.target.has_gpu_feature());
  LoweredGraph out;
  std::map<int, Halide::ImageParam> params;   // by placeholder node id
  std::map<int, Halide::Buffer<>> constants;  // by constant node id
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
      f(v) = algo::opaque_read(external->funcs[k](v));
    } else {
      Halide::ImageParam p(algo::halide_type(n.meta.dtype), r, n.name);
      std::vector<Halide::Expr> extents;
      for (int j = 0; j < r; ++j) {
        const Dim& d = n.meta.shape[r - 1 - j];
        p.dim(j).set_min(0);
        extents.push_back(p.dim(j).extent());
        if (d.is_static()) {
          p.dim(j).set_extent(int(d.size));
          extents.back() = int(d.size);
        } else if (auto it = symbol_extents.find(d.sym); it != symbol_extents.end()) {
          p.dim(j).set_extent(it->second);  // same symbol, same size
          extents.back() = it->second;
        } else {
          symbol_extents[d.sym] = p.dim(j).extent();
        }
      }
      constrain_dense(p, extents);
      // An empty input is never read for a value, but an index clamped to [0, n - 1] of it
      // still asks Halide's bounds check for element 0.
      // Float values are read opaquely (so are constants'): Halide's bounds inference
      // follows a value read at a constant index (a 0-d input, a broadcast scalar, any read
      // of a one-element kernel) as a symbol, and its interval arithmetic over such symbols
      // grows exponentially through selects and polynomials. The backward of
      // gelu(log(mse_loss(x, y))), whose saved mean is 0-d, never finished compiling, and
      // gelu(log(x)) of a 0-d x took 7 s (0.8 s now). An index computed from float data is
      // clamped anyway (Halide cannot bound it wherever the read varies): nothing is lost.
      f(v) = n.meta.shape.is_static() && n.meta.shape.numel() == 0 ? algo::constant(p.type(), 0) : algo::opaque_read(p(v));
      out.inputs.push_back(p);
      params.emplace(id, p);
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

  std::set<std::string> must_materialize;  // contraction operands some use needs in memory
  std::map<int, Halide::Func> matmul_accs;   // by node id
  for (const Node& n : graph.nodes()) {
    if (n.is_placeholder()) continue;
    if (n.is_constant()) {
      Halide::Buffer<> data;
      out.funcs[n.id] = constant_func(n, &data);
      if (data.defined()) constants.emplace(n.id, data);
      continue;
    }
    const OpDef& op = get_op(n.op);
    std::vector<Halide::Func> in;
    std::vector<TensorMeta> metas;
    for (int i : n.inputs) {
      in.push_back(out.funcs.at(i));
      metas.push_back(graph.node(i).meta);
    }
    if ((n.op == "matmul" || n.op == "conv2d") && options.vendor_kernels) {
      const VendorOperandSources sources{&params, &constants, &out.funcs, extent};
      std::vector<Halide::Func> stored;
      std::optional<Halide::Func> v = n.op == "matmul" ? vendor_matmul(graph, n, sources, options.target, &stored)
                                                       : vendor_conv2d(graph, n, sources, options.target, &stored);
      if (v) {
        out.funcs[n.id] = *v;
        out.kinds[n.id] = op.kind;
        for (const Halide::Func& s : stored) {
          out.vendor_operands.push_back(s);
          // Its extents, for a schedule to bound: the stage's bounds query leaves them
          // dynamic, and every index of the stored loops became a division at run time.
          for (int i : n.inputs) {
            const Node& src = graph.node(i);
            if (out.funcs.count(src.id) && out.funcs.at(src.id).name() == s.name()) {
              std::vector<int64_t>& extents = out.operand_extents[s.name()];
              extents.clear();
              for (int d = src.meta.shape.rank() - 1; d >= 0; --d) {
                extents.push_back(src.meta.shape[d].is_static() ? src.meta.shape[d].size : 0);
              }
            }
          }
        }
        continue;
      }
    }
    OpCall call{metas, n.meta, n.attrs, extent, &out.stages};
    Halide::Func f = op.algorithm(in, call);
    if (n.op == "matmul") matmul_accs[n.id] = out.stages.back().func;
    out.funcs[n.id] = f;
    out.kinds[n.id] = op.kind;
    if (op.kind == OpKind::Contraction) {
      for (size_t j = 0; j < n.inputs.size(); ++j) {
        const Node& src = graph.node(n.inputs[j]);
        if (src.is_placeholder() || src.is_constant()) continue;
        const Halide::Func& f = out.funcs.at(src.id);
        out.contraction_operands.push_back(f);
        std::vector<int64_t>& extents = out.operand_extents[f.name()];
        extents.clear();
        for (int d = src.meta.shape.rank() - 1; d >= 0; --d) {
          extents.push_back(src.meta.shape[d].is_static() ? src.meta.shape[d].size : 0);
        }
        const bool inline_ok = (n.op == "matmul" && j == 1) || is_row_view_of_stored_data(graph, src);
        if (!inline_ok) must_materialize.insert(f.name());
      }
    }
  }
  for (const Halide::Func& f : out.contraction_operands) {
    if (!must_materialize.count(f.name())) out.cpu_inline_operands.insert(f.name());
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
  find_epilogue_hosts(graph, matmul_accs, must_materialize, out);
  return out;
}

}  // namespace kiln
