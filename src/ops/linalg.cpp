// Contractions: matmul over the last two dims, with NumPy broadcasting of batch dims.
#include "core/error.h"
#include "ops/op.h"

namespace kiln {

namespace {

using Halide::Expr;
using Halide::Func;

Shape batch_shape(const Shape& s) {
  return Shape(std::vector<Dim>(s.dims().begin(), s.dims().end() - 2));
}

TensorMeta infer_matmul(const std::vector<TensorMeta>& in, const Attrs&) {
  const TensorMeta &a = in[0], &b = in[1];
  if (a.shape.rank() < 2 || b.shape.rank() < 2) {
    user_error("matmul: both operands need at least 2 dims, got ", a.str(), " and ", b.str(),
               "; unsqueeze a vector to [1, K] or [K, 1] first");
  }
  const Dim& ka = a.shape[a.shape.rank() - 1];
  const Dim& kb = b.shape[b.shape.rank() - 2];
  if (!(ka == kb)) {
    user_error("matmul: contraction dims differ: ", a.str(), " has K=", ka.str(), " (last dim) but ",
               b.str(), " has K=", kb.str(), " (second to last dim)");
  }
  Shape batch = broadcast_shapes(batch_shape(a.shape), batch_shape(b.shape), "matmul");
  std::vector<Dim> out = batch.dims();
  out.push_back(a.shape[a.shape.rank() - 2]);
  out.push_back(b.shape[b.shape.rank() - 1]);
  return {promote(a.dtype, b.dtype), Shape(out)};
}

Func matmul_algorithm(const std::vector<Func>& in, const OpCall& c) {
  const TensorMeta &a = c.inputs[0], &b = c.inputs[1];
  const int r = c.output.shape.rank();
  auto v = algo::vars(r);  // v[0] = n (columns), v[1] = m (rows), v[2..] = batch
  Halide::RDom k(0, c.extent(a.shape[a.shape.rank() - 1]), "k");
  // Batch indices of each operand, broadcast against the output's batch dims.
  auto batch_index = [&](const TensorMeta& t) {
    TensorMeta tb{t.dtype, batch_shape(t.shape)};
    TensorMeta ob{c.output.dtype, batch_shape(c.output.shape)};
    std::vector<Expr> outer(v.begin() + 2, v.end());
    return algo::broadcast_index(tb, ob, outer);
  };
  // Row and column reads are clamped so that a schedule may compute whole register tiles
  // past the edges (the extra results are never stored).
  // (likely: loops are split into a clamp-free steady state and the edges.)
  Expr m_in = Halide::clamp(Halide::likely(v[1]), 0, c.extent(a.shape[a.shape.rank() - 2]) - 1);
  std::vector<Expr> ia = {k, m_in};
  for (const Expr& e : batch_index(a)) ia.push_back(e);
  // f16/bf16 accumulate in f32; integers in i64 (then narrow).
  DType acc_t = is_float(c.output.dtype) ? compute_dtype(c.output.dtype) : DType::I64;
  Halide::Type at = algo::halide_type(acc_t);
  // The right operand in column panels: b_panel(j, k, p, batch...) is b's column
  // p * kPanel + j, so a panel (kPanel columns x all of k) is contiguous. A CPU schedule
  // computes it once at root (packing b, and whatever transpose or pointwise chain b is,
  // in one pass) and the register tiles then stream each panel linearly; anywhere else
  // it is inlined and the index math folds back to b(n, k). kPanel is one cache line of
  // the accumulator type, which is also two AVX2 vectors (schedule_matmul_accumulator).
  const int panel = 64 / at.bytes();
  Halide::Var bj("bj"), bk("bk"), bp("bp");
  std::vector<Halide::Var> bargs = {bj, bk, bp};
  std::vector<Expr> bidx = {Halide::clamp(Halide::likely(bp * panel + bj), 0, c.extent(b.shape[b.shape.rank() - 1]) - 1), bk};
  const int b_batch = b.shape.rank() - 2;
  for (int j = 0; j < b_batch; ++j) {
    Halide::Var bv("bb" + std::to_string(j));
    bargs.push_back(bv);
    bidx.push_back(bv);
  }
  std::vector<Expr> at_b = {v[0] % panel, k, v[0] / panel};
  for (const Expr& e : batch_index(b)) at_b.push_back(e);
  Func b_panel("matmul_b_panel");
  b_panel(bargs) = in[1](bidx);
  Func acc("matmul_acc");
  acc(v) = Halide::cast(at, 0);
  acc(v) += Halide::cast(at, in[0](ia)) * Halide::cast(at, b_panel(at_b));
  std::vector<int64_t> extents;  // n, m, batch...: the output's dims, innermost first
  for (int d = r - 1; d >= 0; --d) {
    const Dim& dim = c.output.shape[d];
    extents.push_back(dim.is_static() ? dim.size : 0);
  }
  c.stages->push_back({acc, /*pure_innermost=*/true, /*serial=*/false, extents});
  Func out("matmul");
  out(v) = algo::to_storage(acc(v), c.output.dtype);
  return out;
}

Tensor matmul_reference(const std::vector<Tensor>& in, const Attrs&, const TensorMeta& out) {
  Tensor a = in[0].to_host(), b = in[1].to_host();
  std::vector<int64_t> as = a.sizes(), bs = b.sizes(), os = out.shape.sizes();
  const int64_t M = os[os.size() - 2], N = os.back(), K = as.back();
  std::vector<int64_t> ob(os.begin(), os.end() - 2), ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
  int64_t batches = 1;
  for (int64_t s : ob) batches *= s;
  std::vector<double> av = a.to_doubles(), bv = b.to_doubles(), o(size_t(batches * M * N));
#pragma omp parallel for collapse(2) if (batches * M * N * K > 100000)
  for (int64_t bi = 0; bi < batches; ++bi) {
    for (int64_t m = 0; m < M; ++m) {
      std::vector<int64_t> idx = ref::unravel(bi, ob);
      int64_t a_off = ref::broadcast_offset(ab, ob, idx) * M * K;
      int64_t b_off = ref::broadcast_offset(bb, ob, idx) * K * N;
      for (int64_t n = 0; n < N; ++n) {
        double s = 0;
        for (int64_t kk = 0; kk < K; ++kk) s += av[size_t(a_off + m * K + kk)] * bv[size_t(b_off + kk * N + n)];
        o[size_t((bi * M + m) * N + n)] = s;
      }
    }
  }
  return from_vector(o, out.shape, out.dtype);
}

}  // namespace

std::vector<OpDef> linalg_ops() {
  return {make_op_def("matmul", OpKind::Contraction, 2, infer_matmul, matmul_algorithm, matmul_reference)};
}

}  // namespace kiln
