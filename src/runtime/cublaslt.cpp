#include "runtime/cublaslt.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "core/cuda_context.h"
#include "runtime/cublaslt_abi.h"

namespace kiln::vendor {

namespace {

using namespace cublaslt_abi;

struct Api {
  Status (*create)(void**);
  Status (*desc_create)(void**, int, int);
  Status (*desc_destroy)(void*);
  Status (*desc_set)(void*, int, const void*, size_t);
  Status (*layout_create)(void**, int, uint64_t, uint64_t, int64_t);
  Status (*layout_destroy)(void*);
  Status (*layout_set)(void*, int, const void*, size_t);
  Status (*pref_create)(void**);
  Status (*pref_destroy)(void*);
  Status (*pref_set)(void*, int, const void*, size_t);
  Status (*heuristic)(void*, void*, void*, void*, void*, void*, void*, int, HeuristicResult*, int*);
  Status (*matmul)(void*, void*, const void*, const void*, void*, const void*, void*, const void*, const void*, void*,
                   void*, void*, const Algo*, void*, size_t, void*);
  const char* (*status_string)(Status);
};

constexpr size_t kWorkspaceBytes = size_t(32) << 20;

struct Library {
  Api api{};
  void* handle = nullptr;     // cublasLtHandle_t
  uint64_t workspace = 0;     // device memory in kiln's context
  std::string missing;        // why it is not usable, or ""
};

const Library& library() {
  static const Library l = [] {
    Library l;
    if (!(l.missing = missing_gpu()).empty()) return l;
    const cuda::Driver* d = cuda::driver();
    void* lib = open_library("KILN_CUBLASLT", {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"});
    if (!lib) {
      l.missing = "cuBLASLt (libcublasLt.so.13 or .12) was not found: install the CUDA toolkit's cuBLAS, or "
                  "pip's nvidia-cublas, and put its lib folder on LD_LIBRARY_PATH (or set KILN_CUBLASLT to the "
                  "library's path)";
      return l;
    }
    Api& a = l.api;
    const bool all =
        load_symbol(lib, "cublasLtCreate", &a.create) && load_symbol(lib, "cublasLtMatmulDescCreate", &a.desc_create) &&
        load_symbol(lib, "cublasLtMatmulDescDestroy", &a.desc_destroy) &&
        load_symbol(lib, "cublasLtMatmulDescSetAttribute", &a.desc_set) &&
        load_symbol(lib, "cublasLtMatrixLayoutCreate", &a.layout_create) &&
        load_symbol(lib, "cublasLtMatrixLayoutDestroy", &a.layout_destroy) &&
        load_symbol(lib, "cublasLtMatrixLayoutSetAttribute", &a.layout_set) &&
        load_symbol(lib, "cublasLtMatmulPreferenceCreate", &a.pref_create) &&
        load_symbol(lib, "cublasLtMatmulPreferenceDestroy", &a.pref_destroy) &&
        load_symbol(lib, "cublasLtMatmulPreferenceSetAttribute", &a.pref_set) &&
        load_symbol(lib, "cublasLtMatmulAlgoGetHeuristic", &a.heuristic) && load_symbol(lib, "cublasLtMatmul", &a.matmul) &&
        load_symbol(lib, "cublasLtGetStatusString", &a.status_string);
    if (!all) {
      l.missing = "the cuBLASLt library found lacks cublasLtMatmul & co. (too old: kiln needs CUDA 12 or newer)";
      return l;
    }
    cuda::ScopedContext ctx;
    if (!ctx.ok()) {
      l.missing = "kiln's CUDA context cannot be made current";
      return l;
    }
    if (Status s = a.create(&l.handle); s != 0) {
      l.missing = std::string("cublasLtCreate failed: ") + a.status_string(s);
      return l;
    }
    if (int r = d->cuMemAlloc(&l.workspace, kWorkspaceBytes); r != 0) {
      l.missing = "allocating cuBLASLt's workspace failed: " + cuda::error_text(r);
      return l;
    }
    return l;
  }();
  return l;
}

int fail(const std::string& what) { return vendor::fail("cuBLASLt matmul", what); }

// One GEMM's shape, as cuBLASLt sees it (column-major): D (rows x cols) = op(A) op(B).
struct Geometry {
  int type = 0, compute = 0;
  int op_a = kOpN, op_b = kOpN;
  uint64_t a_rows = 0, a_cols = 0, b_rows = 0, b_cols = 0, d_rows = 0, d_cols = 0;
  int64_t lda = 0, ldb = 0, ldd = 0;
  int32_t batch = 1;
  int64_t stride_a = 0, stride_b = 0, stride_d = 0;
  int align_a = 16, align_b = 16, align_d = 16;  // bytes the pointers are aligned to (up to 16)
  auto key() const {
    return std::make_tuple(type, compute, op_a, op_b, a_rows, a_cols, b_rows, b_cols, d_rows, d_cols, lda, ldb, ldd,
                           batch, stride_a, stride_b, stride_d, align_a, align_b, align_d);
  }
};

// Descriptors and the heuristic's algorithm for one Geometry, made once.
struct Plan {
  void* desc = nullptr;
  void* la = nullptr;
  void* lb = nullptr;
  void* ld = nullptr;
  Algo algo{};
  std::string error;  // why no plan could be made
};

std::string status_text(Status s) { return library().api.status_string(s); }

Plan make_plan(const Geometry& g) {
  const Api& a = library().api;
  Plan p;
  auto check = [&](Status s, const char* what) {
    if (s != 0 && p.error.empty()) p.error = std::string(what) + " failed: " + status_text(s);
    return s == 0;
  };
  const int scale = g.type == kCudaR64F ? kCudaR64F : kCudaR32F;
  if (!check(a.desc_create(&p.desc, g.compute, scale), "cublasLtMatmulDescCreate")) return p;
  check(a.desc_set(p.desc, kDescTransA, &g.op_a, sizeof g.op_a), "setting transa");
  check(a.desc_set(p.desc, kDescTransB, &g.op_b, sizeof g.op_b), "setting transb");
  auto layout = [&](void** l, uint64_t rows, uint64_t cols, int64_t ld, int64_t stride) {
    if (!check(a.layout_create(l, g.type, rows, cols, ld), "cublasLtMatrixLayoutCreate")) return;
    if (g.batch > 1) {
      check(a.layout_set(*l, kLayoutBatchCount, &g.batch, sizeof g.batch), "setting the batch count");
      check(a.layout_set(*l, kLayoutStridedBatchOffset, &stride, sizeof stride), "setting the batch stride");
    }
  };
  layout(&p.la, g.a_rows, g.a_cols, g.lda, g.stride_a);
  layout(&p.lb, g.b_rows, g.b_cols, g.ldb, g.stride_b);
  layout(&p.ld, g.d_rows, g.d_cols, g.ldd, g.stride_d);
  if (!p.error.empty()) return p;
  void* pref = nullptr;
  if (!check(a.pref_create(&pref), "cublasLtMatmulPreferenceCreate")) return p;
  const uint64_t ws = kWorkspaceBytes;
  const uint32_t al_a = uint32_t(g.align_a), al_b = uint32_t(g.align_b), al_d = uint32_t(g.align_d);
  check(a.pref_set(pref, kPrefMaxWorkspaceBytes, &ws, sizeof ws), "setting the workspace");
  check(a.pref_set(pref, kPrefMinAlignmentA, &al_a, sizeof al_a), "setting A's alignment");
  check(a.pref_set(pref, kPrefMinAlignmentB, &al_b, sizeof al_b), "setting B's alignment");
  check(a.pref_set(pref, kPrefMinAlignmentC, &al_d, sizeof al_d), "setting C's alignment");
  check(a.pref_set(pref, kPrefMinAlignmentD, &al_d, sizeof al_d), "setting D's alignment");
  HeuristicResult r{};
  int found = 0;
  if (check(a.heuristic(library().handle, p.desc, p.la, p.lb, p.ld, p.ld, pref, 1, &r, &found),
            "cublasLtMatmulAlgoGetHeuristic") &&
      found == 0) {
    p.error = "cuBLASLt has no algorithm for this product";
  }
  a.pref_destroy(pref);
  p.algo = r.algo;
  return p;
}

const Plan& plan_for(const Geometry& g) {
  static std::mutex mu;
  static std::map<decltype(g.key()), Plan> plans;
  std::lock_guard<std::mutex> lock(mu);
  auto it = plans.find(g.key());
  if (it == plans.end()) it = plans.emplace(g.key(), make_plan(g)).first;
  return it->second;
}

}  // namespace

bool cublaslt_available(std::string* why) {
  const Library& l = library();
  if (why) *why = l.missing;
  return l.missing.empty();
}

}  // namespace kiln::vendor

using namespace kiln::vendor;

extern "C" int kiln_cublaslt_matmul(halide_buffer_t* a, halide_buffer_t* b, int m, int n, int k, int flags, int a_bcast,
                                    int b_bcast, halide_buffer_t* out) {
  const bool ta = flags & kTransA, tb = flags & kTransB;
  const int r = out->dimensions;
  // The output's region, clipped to the product: Halide may ask for more (a consumer's
  // rounded-up loop); those points are never read.
  const int64_t n0 = std::max<int64_t>(0, out->dim[0].min), n1 = std::min<int64_t>(n, out->dim[0].min + out->dim[0].extent);
  const int64_t m0 = std::max<int64_t>(0, out->dim[1].min), m1 = std::min<int64_t>(m, out->dim[1].min + out->dim[1].extent);
  if (is_query(a) || is_query(b)) {
    // An operand's region: `lo`..`hi` of the output's rows (a) or columns (b) in the dim
    // that holds them (1, or 0 when stored transposed), all of k in the other, and the
    // output's batch range in each batch dim (one element where it is broadcast).
    auto query = [&](halide_buffer_t* x, bool trans, int bcast, int64_t lo, int64_t hi, int64_t size) {
      auto set = [x](int d, int64_t from, int64_t to) {
        x->dim[d].min = int32_t(from);
        x->dim[d].extent = int32_t(std::max<int64_t>(0, to - from));
      };
      const int64_t first = std::min<int64_t>(lo, std::max<int64_t>(0, size - 1));
      set(trans ? 0 : 1, first, std::min<int64_t>(std::max(hi, first + 1), size));
      set(trans ? 1 : 0, 0, k);
      for (int d = 2; d < x->dimensions; ++d) {
        const bool one = bcast & (1 << (d - 2));
        set(d, one ? 0 : out->dim[d].min, one ? 1 : out->dim[d].min + out->dim[d].extent);
      }
    };
    if (is_query(a)) query(a, ta, a_bcast, m0, m1, m);
    if (is_query(b)) query(b, !tb, b_bcast, n0, n1, n);
    return 0;
  }
  if (is_query(out)) return 0;

  std::string why;
  if (!cublaslt_available(&why)) return fail(why);
  if (std::string e = to_device({a, b}, out); !e.empty()) return fail(e);
  if (is_empty(out)) return 0;
  const int bytes = out->type.bytes();
  int type = 0, compute = 0;
  if (out->type.code == halide_type_float && out->type.bits == 32) {
    type = kCudaR32F, compute = (flags & kAllowTf32) ? kCompute32FFastTf32 : kCompute32F;
  } else if (out->type.code == halide_type_float && out->type.bits == 64) {
    type = kCudaR64F, compute = kCompute64F;
  } else if (out->type.code == halide_type_float && out->type.bits == 16) {
    type = kCudaR16F, compute = kCompute32F;
  } else if (out->type.code == halide_type_bfloat && out->type.bits == 16) {
    type = kCudaR16BF, compute = kCompute32F;
  } else {
    return fail("the element type is not f32, f64, f16 or bf16");
  }
  if (a->type.bits != out->type.bits || b->type.bits != out->type.bits) return fail("operand types differ");
  for (const halide_buffer_t* x : {a, b, out}) {
    if (x->dim[0].stride != 1) return fail("an operand's innermost dim is not contiguous");
  }
  if (m1 <= m0 || n1 <= n0) return 0;  // nothing of the product asked for

  kiln::cuda::ScopedContext ctx;
  if (!ctx.ok()) return fail("kiln's CUDA context cannot be made current");
  const kiln::cuda::Driver* drv = kiln::cuda::driver();
  const Library& lib = library();

  // The batch: the output's dims from 2, each with the three operands' strides (0 where
  // broadcast). One strided-batched call where they collapse to one dim, else one call each.
  struct BatchDim {
    int64_t lo, extent, s_out, s_a, s_b;
  };
  std::vector<BatchDim> bd;
  for (int d = 2; d < r; ++d) {
    BatchDim x{out->dim[d].min, out->dim[d].extent, out->dim[d].stride, 0, 0};
    if (d < a->dimensions && !(a_bcast & (1 << (d - 2)))) x.s_a = a->dim[d].stride;
    if (d < b->dimensions && !(b_bcast & (1 << (d - 2)))) x.s_b = b->dim[d].stride;
    bd.push_back(x);
  }
  bool collapses = true;
  int64_t count = 1;
  for (size_t i = 0; i < bd.size(); ++i) {
    if (i > 0) {
      const BatchDim& p = bd[i - 1];
      collapses = collapses && bd[i].s_out == p.s_out * p.extent && bd[i].s_a == p.s_a * p.extent &&
                  bd[i].s_b == p.s_b * p.extent;
    }
    count *= bd[i].extent;
  }
  if (count == 0) return 0;

  // The element of each operand at the region's first row, column and batch element.
  auto origin = [&](const halide_buffer_t* x, int64_t d0, int64_t d1, const std::vector<int64_t>& batch, int bcast) {
    std::vector<int64_t> c(size_t(x->dimensions), 0);
    c[0] = d0, c[1] = d1;
    for (int d = 2; d < x->dimensions; ++d) c[size_t(d)] = (bcast & (1 << (d - 2))) ? x->dim[d].min : batch[size_t(d - 2)];
    return offset_of(x, c);
  };

  if (k == 0) {
    // An empty sum: zeros (cuBLASLt takes no k of 0). The output buffer is dense.
    int64_t span = 1;
    for (int d = 0; d < r; ++d) span += int64_t(out->dim[d].extent - 1) * out->dim[d].stride;
    if (int e = drv->cuMemsetD8Async(out->device, 0, size_t(span) * size_t(bytes), kiln::cuda::stream()); e != 0) {
      return fail("clearing the output failed: " + kiln::cuda::error_text(e));
    }
    out->flags |= halide_buffer_flag_device_dirty;
    return 0;
  }

  Geometry g;
  g.type = type, g.compute = compute;
  // Column-major: D^T (N x M) = op(B^T) (N x K) * op(A^T) (K x M), each operand read where it is.
  g.op_a = tb ? kOpT : kOpN;
  g.a_rows = uint64_t(tb ? k : n1 - n0), g.a_cols = uint64_t(tb ? n1 - n0 : k), g.lda = b->dim[1].stride;
  g.op_b = ta ? kOpT : kOpN;
  g.b_rows = uint64_t(ta ? m1 - m0 : k), g.b_cols = uint64_t(ta ? k : m1 - m0), g.ldb = a->dim[1].stride;
  g.d_rows = uint64_t(n1 - n0), g.d_cols = uint64_t(m1 - m0), g.ldd = out->dim[1].stride;
  const size_t calls = collapses ? 1 : size_t(count);
  if (collapses && !bd.empty()) {
    g.batch = int32_t(count);
    g.stride_a = bd[0].s_b, g.stride_b = bd[0].s_a, g.stride_d = bd[0].s_out;
  }
  const float one_f = 1, zero_f = 0;
  const double one_d = 1, zero_d = 0;
  const void* alpha = type == kCudaR64F ? static_cast<const void*>(&one_d) : &one_f;
  const void* beta = type == kCudaR64F ? static_cast<const void*>(&zero_d) : &zero_f;
  for (size_t call = 0; call < calls; ++call) {
    std::vector<int64_t> batch;  // this call's first batch element, per batch dim
    size_t rest = call;
    for (const BatchDim& x : bd) {
      batch.push_back(x.lo + int64_t(collapses ? 0 : rest % size_t(x.extent)));
      if (!collapses) rest /= size_t(x.extent);
    }
    const uint64_t pa = a->device + uint64_t(origin(a, ta ? m0 : 0, ta ? 0 : m0, batch, a_bcast) * bytes);
    const uint64_t pb = b->device + uint64_t(origin(b, tb ? 0 : n0, tb ? n0 : 0, batch, b_bcast) * bytes);
    std::vector<int64_t> oc(size_t(r), 0);
    oc[0] = n0, oc[1] = m0;
    for (int d = 2; d < r; ++d) oc[size_t(d)] = batch[size_t(d - 2)];
    const uint64_t pd = out->device + uint64_t(offset_of(out, oc) * bytes);
    g.align_a = alignment(pb), g.align_b = alignment(pa), g.align_d = alignment(pd);
    const Plan& p = plan_for(g);
    if (!p.error.empty()) return fail(p.error);
    const Status s = lib.api.matmul(lib.handle, p.desc, alpha, reinterpret_cast<const void*>(pb), p.la,
                                    reinterpret_cast<const void*>(pa), p.lb, beta, reinterpret_cast<const void*>(pd),
                                    p.ld, reinterpret_cast<void*>(pd), p.ld, &p.algo,
                                    reinterpret_cast<void*>(lib.workspace), kWorkspaceBytes, kiln::cuda::stream());
    if (s != 0) return fail(std::string("cublasLtMatmul failed: ") + status_text(s));
  }
  out->flags |= halide_buffer_flag_device_dirty;
  return 0;
}
