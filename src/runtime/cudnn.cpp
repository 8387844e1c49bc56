#include "runtime/cudnn.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "core/cuda_context.h"
#include "runtime/cudnn_abi.h"

namespace kiln::vendor {

namespace {

using namespace cudnn_abi;

struct Api {
  size_t (*get_version)();
  const char* (*error_string)(Status);
  Status (*create)(void**);
  Status (*set_stream)(void*, void*);
  Status (*tensor_create)(void**);
  Status (*tensor_set)(void*, int, int, const int*, const int*);
  Status (*tensor_destroy)(void*);
  Status (*filter_create)(void**);
  Status (*filter_set)(void*, int, int, int, const int*);
  Status (*filter_destroy)(void*);
  Status (*conv_create)(void**);
  Status (*conv_set)(void*, int, const int*, const int*, const int*, int, int);
  Status (*conv_set_groups)(void*, int);
  Status (*conv_set_math)(void*, int);
  Status (*conv_destroy)(void*);
  Status (*fwd_algorithms)(void*, void*, void*, void*, void*, int, int*, FwdAlgoPerf*);
  Status (*find_fwd_algorithm)(void*, void*, const void*, void*, const void*, void*, void*, void*, int, int*,
                               FwdAlgoPerf*, void*, size_t);
  Status (*forward)(void*, const void*, void*, const void*, void*, const void*, void*, int, void*, size_t, const void*,
                    void*, void*);
  Status (*transform)(void*, const void*, void*, const void*, const void*, void*, void*);
};

// The most device memory an algorithm may ask for as workspace.
constexpr size_t kMaxWorkspaceBytes = size_t(128) << 20;

struct Library {
  Api api{};
  void* handle = nullptr;  // cudnnHandle_t
  std::string missing;     // why it is not usable, or ""
};

const Library& library() {
  static const Library l = [] {
    Library l;
    if (!(l.missing = missing_gpu()).empty()) return l;
    void* lib = open_library("KILN_CUDNN", {"libcudnn.so.9", "libcudnn.so"});
    if (!lib) {
      l.missing = "cuDNN 9 (libcudnn.so.9) was not found: install cuDNN 9 (the CUDA toolkit's, or pip's "
                  "nvidia-cudnn-cu12/cu13) and put its lib folder on LD_LIBRARY_PATH (or set KILN_CUDNN to the "
                  "library's path)";
      return l;
    }
    Api& a = l.api;
    const bool all =
        load_symbol(lib, "cudnnGetVersion", &a.get_version) && load_symbol(lib, "cudnnGetErrorString", &a.error_string) &&
        load_symbol(lib, "cudnnCreate", &a.create) && load_symbol(lib, "cudnnSetStream", &a.set_stream) &&
        load_symbol(lib, "cudnnCreateTensorDescriptor", &a.tensor_create) &&
        load_symbol(lib, "cudnnSetTensorNdDescriptor", &a.tensor_set) &&
        load_symbol(lib, "cudnnDestroyTensorDescriptor", &a.tensor_destroy) &&
        load_symbol(lib, "cudnnCreateFilterDescriptor", &a.filter_create) &&
        load_symbol(lib, "cudnnSetFilterNdDescriptor", &a.filter_set) &&
        load_symbol(lib, "cudnnDestroyFilterDescriptor", &a.filter_destroy) &&
        load_symbol(lib, "cudnnCreateConvolutionDescriptor", &a.conv_create) &&
        load_symbol(lib, "cudnnSetConvolutionNdDescriptor", &a.conv_set) &&
        load_symbol(lib, "cudnnSetConvolutionGroupCount", &a.conv_set_groups) &&
        load_symbol(lib, "cudnnSetConvolutionMathType", &a.conv_set_math) &&
        load_symbol(lib, "cudnnDestroyConvolutionDescriptor", &a.conv_destroy) &&
        load_symbol(lib, "cudnnGetConvolutionForwardAlgorithm_v7", &a.fwd_algorithms) &&
        load_symbol(lib, "cudnnFindConvolutionForwardAlgorithmEx", &a.find_fwd_algorithm) &&
        load_symbol(lib, "cudnnConvolutionForward", &a.forward) && load_symbol(lib, "cudnnTransformTensor", &a.transform);
    if (!all) {
      l.missing = "the cuDNN library found lacks cudnnConvolutionForward & co. (kiln needs cuDNN 9)";
      return l;
    }
    if (const size_t v = a.get_version(); v < 90000 || v >= 100000) {
      l.missing = "the cuDNN library found is version " + std::to_string(v) + "; kiln needs cuDNN 9";
      return l;
    }
    cuda::ScopedContext ctx;
    if (!ctx.ok()) {
      l.missing = "kiln's CUDA context cannot be made current";
      return l;
    }
    if (Status s = a.create(&l.handle); s != 0) {
      l.missing = std::string("cudnnCreate failed: ") + a.error_string(s);
      return l;
    }
    if (Status s = a.set_stream(l.handle, cuda::stream()); s != 0) {
      l.missing = std::string("cudnnSetStream failed: ") + a.error_string(s);
      return l;
    }
    return l;
  }();
  return l;
}

int fail(const std::string& what) { return vendor::fail("cuDNN conv2d", what); }

std::string status_text(Status s) { return library().api.error_string(s); }

// One convolution as cuDNN sees it (NCHW dims and strides, outermost first).
struct Geometry {
  int type = 0, compute = 0, math = 0;
  std::array<int, 4> x_dims{}, x_strides{}, w_dims{}, y_dims{}, y_strides{};
  std::array<int, 2> pad{}, stride{}, dilation{};
  int groups = 1;
  auto key() const {
    return std::make_tuple(type, compute, math, x_dims, x_strides, w_dims, y_dims, y_strides, pad, stride, dilation,
                           groups);
  }
};

// Descriptors and the algorithm for one Geometry. The descriptors are made once; the
// algorithm is timed on the first call (timed_workspace says how much workspace the
// candidates may use), as PyTorch's cudnn.benchmark: cuDNN's heuristic ranking alone
// picked algorithms 2-4x slower than the best in true FP32 on an H100 (1x1 convolutions).
struct Plan {
  void* x = nullptr;
  void* w = nullptr;
  void* y = nullptr;
  void* conv = nullptr;
  bool timed = false;
  size_t timed_workspace = 0;
  int algo = 0;
  size_t workspace = 0;
  std::string error;  // why no plan could be made
};

// Whether perf result `f` may run the Geometry: it works, within the workspace limit, and
// keeps f32 on FMA lanes unless TF32 is allowed.
bool usable(const FwdAlgoPerf& f, const Geometry& g) {
  return f.status == 0 && f.memory <= kMaxWorkspaceBytes && (g.math != kFmaMath || f.math_type == kFmaMath);
}

std::string no_algorithm(const Geometry& g) {
  return "cuDNN has no algorithm for this convolution" +
         std::string(g.math == kFmaMath ? " in true FP32 (allowing TF32 may find one)" : "");
}

Plan make_plan(const Geometry& g) {
  const Api& a = library().api;
  Plan p;
  auto check = [&](Status s, const char* what) {
    if (s != 0 && p.error.empty()) p.error = std::string(what) + " failed: " + status_text(s);
    return s == 0;
  };
  if (check(a.tensor_create(&p.x), "cudnnCreateTensorDescriptor")) {
    check(a.tensor_set(p.x, g.type, 4, g.x_dims.data(), g.x_strides.data()), "describing the input");
  }
  if (check(a.tensor_create(&p.y), "cudnnCreateTensorDescriptor")) {
    check(a.tensor_set(p.y, g.type, 4, g.y_dims.data(), g.y_strides.data()), "describing the output");
  }
  if (check(a.filter_create(&p.w), "cudnnCreateFilterDescriptor")) {
    check(a.filter_set(p.w, g.type, kTensorNchw, 4, g.w_dims.data()), "describing the weight");
  }
  if (check(a.conv_create(&p.conv), "cudnnCreateConvolutionDescriptor")) {
    check(a.conv_set(p.conv, 2, g.pad.data(), g.stride.data(), g.dilation.data(), kCrossCorrelation, g.compute),
          "describing the convolution");
    check(a.conv_set_groups(p.conv, g.groups), "setting the group count");
    check(a.conv_set_math(p.conv, g.math), "setting the math type");
  }
  if (!p.error.empty()) return p;
  // The heuristic's candidates bound the workspace the timing may give them.
  FwdAlgoPerf perf[kFwdAlgoCount] = {};
  int found = 0;
  if (!check(a.fwd_algorithms(library().handle, p.x, p.w, p.conv, p.y, kFwdAlgoCount, &found, perf),
             "cudnnGetConvolutionForwardAlgorithm_v7")) {
    return p;
  }
  bool any = false;
  for (int i = 0; i < found; ++i) {
    if (!usable(perf[i], g)) continue;
    any = true;
    p.timed_workspace = std::max(p.timed_workspace, perf[i].memory);
  }
  if (!any) p.error = no_algorithm(g);
  return p;
}

// Times the candidates on the call's own buffers (cudnnFindConvolutionForwardAlgorithmEx
// writes y) and keeps the fastest usable one.
std::string time_plan(Plan& p, const Geometry& g, const void* x, const void* w, void* y, void* workspace) {
  const Api& a = library().api;
  FwdAlgoPerf perf[kFwdAlgoCount] = {};
  int found = 0;
  if (Status s = a.find_fwd_algorithm(library().handle, p.x, x, p.w, w, p.conv, p.y, y, kFwdAlgoCount, &found, perf,
                                      workspace, p.timed_workspace);
      s != 0) {
    return std::string("cudnnFindConvolutionForwardAlgorithmEx failed: ") + status_text(s);
  }
  for (int i = 0; i < found; ++i) {  // fastest first
    if (!usable(perf[i], g) || perf[i].memory > p.timed_workspace) continue;
    p.algo = perf[i].algo;
    p.workspace = perf[i].memory;
    p.timed = true;
    if (Status s = a.conv_set_math(p.conv, perf[i].math_type); s != 0) {
      return std::string("setting the algorithm's math type failed: ") + status_text(s);
    }
    return "";
  }
  return no_algorithm(g);
}

// The plans, and the device memory the calls share: the algorithms' workspace and, where
// only part of the output is asked for, the whole output of the batches asked for. Calls
// run one at a time on kiln's stream, so one grow-only block serves them all.
struct State {
  std::mutex mu;
  std::map<decltype(Geometry().key()), Plan> plans;
  uint64_t scratch = 0;
  size_t scratch_bytes = 0;
};

State& state() {
  static State* s = new State;  // never destroyed: the device memory outlives static destructors
  return *s;
}

// At least `bytes` of scratch device memory (state().mu held).
std::string reserve_scratch(size_t bytes) {
  State& s = state();
  if (bytes <= s.scratch_bytes) return "";
  const cuda::Driver* d = cuda::driver();
  if (s.scratch) {
    // cuMemFree waits for the work that still uses the block.
    d->cuMemFree(s.scratch);
    s.scratch = 0, s.scratch_bytes = 0;
  }
  const size_t rounded = (bytes + (size_t(1) << 20) - 1) & ~((size_t(1) << 20) - 1);
  if (int r = d->cuMemAlloc(&s.scratch, rounded); r != 0) {
    return "allocating " + std::to_string(rounded) + " bytes of cuDNN scratch memory failed: " + cuda::error_text(r);
  }
  s.scratch_bytes = rounded;
  return "";
}

// Whether every stride fits cuDNN's int descriptors.
bool strides_fit(const halide_buffer_t* b) {
  for (int d = 0; d < b->dimensions; ++d) {
    if (b->dim[d].stride < 0 || b->dim[d].stride > INT32_MAX) return false;
  }
  return true;
}

}  // namespace

bool cudnn_available(std::string* why) {
  const Library& l = library();
  if (why) *why = l.missing;
  return l.missing.empty();
}

}  // namespace kiln::vendor

using namespace kiln::vendor;

extern "C" int kiln_cudnn_conv2d(halide_buffer_t* x, halide_buffer_t* w, int n, int c, int h, int wd, int o, int kh,
                                 int kw, int sh, int sw, int ph, int pw, int dh, int dw, int groups, int flags,
                                 halide_buffer_t* out) {
  const int oh = (h + 2 * ph - dh * (kh - 1) - 1) / sh + 1;
  const int ow = (wd + 2 * pw - dw * (kw - 1) - 1) / sw + 1;
  const int cg = c / std::max(groups, 1);
  // The region asked for, clipped to the output (a consumer's rounded-up loop may ask for
  // more; those points are never read): lo[d], hi[d] in Halide's dim order.
  const int64_t full[4] = {ow, oh, o, n};
  int64_t lo[4], hi[4];
  for (int d = 0; d < 4; ++d) {
    lo[d] = std::max<int64_t>(0, out->dim[d].min);
    hi[d] = std::min<int64_t>(full[d], int64_t(out->dim[d].min) + out->dim[d].extent);
  }
  if (is_query(x) || is_query(w)) {
    // All of x's rows, columns and channels for the batches asked for; all of w.
    auto set = [](halide_buffer_t* b, int d, int64_t from, int64_t to) {
      b->dim[d].min = int32_t(from);
      b->dim[d].extent = int32_t(std::max<int64_t>(0, to - from));
    };
    if (is_query(x)) {
      set(x, 0, 0, wd), set(x, 1, 0, h), set(x, 2, 0, c);
      const int64_t first = std::min<int64_t>(lo[3], std::max(0, n - 1));
      set(x, 3, first, std::min<int64_t>(std::max(hi[3], first + 1), n));
    }
    if (is_query(w)) set(w, 0, 0, kw), set(w, 1, 0, kh), set(w, 2, 0, cg), set(w, 3, 0, o);
    return 0;
  }
  if (is_query(out)) return 0;

  std::string why;
  if (!cudnn_available(&why)) return fail(why);
  if (std::string e = to_device({x, w}, out); !e.empty()) return fail(e);
  for (int d = 0; d < 4; ++d) {
    if (hi[d] <= lo[d]) return 0;  // nothing of the output asked for
  }
  int type = 0, compute = kDataFloat, math = kDefaultMath;
  const halide_type_t t = out->type;
  if (t.code == halide_type_float && t.bits == 32) {
    type = kDataFloat, math = (flags & kConvAllowTf32) ? kDefaultMath : kFmaMath;
  } else if (t.code == halide_type_float && t.bits == 64) {
    type = kDataDouble, compute = kDataDouble;
  } else if (t.code == halide_type_float && t.bits == 16) {
    type = kDataHalf, math = kTensorOpMath;
  } else if (t.code == halide_type_bfloat && t.bits == 16) {
    type = kDataBfloat16, math = kTensorOpMath;
  } else {
    return fail("the element type is not f32, f64, f16 or bf16");
  }
  if (x->type.bits != t.bits || w->type.bits != t.bits || x->type.code != t.code || w->type.code != t.code) {
    return fail("the operands' types differ from the output's");
  }
  if (w->dim[0].stride != 1 || w->dim[1].stride != kw || w->dim[2].stride != kw * kh || w->dim[3].stride != kw * kh * cg) {
    return fail("the weight is not stored densely");
  }
  if (!strides_fit(x) || !strides_fit(out) || int64_t(o) * oh * ow > INT32_MAX) {
    return fail("a tensor is too large for cuDNN's 32-bit strides");
  }
  if (c < 1 || n < 0 || (kh - 1) * dh + 1 > h + 2 * ph || (kw - 1) * dw + 1 > wd + 2 * pw) {
    return fail("the convolution's sizes do not match its input");
  }

  kiln::cuda::ScopedContext ctx;
  if (!ctx.ok()) return fail("kiln's CUDA context cannot be made current");
  const Api& api = library().api;
  const int bytes = t.bytes();
  const int64_t batches = hi[3] - lo[3];
  // The whole output of those batches goes straight into `out` where it asks for all of
  // it; otherwise into scratch memory, and the region asked for is copied out.
  const bool whole = lo[0] == 0 && hi[0] == ow && lo[1] == 0 && hi[1] == oh && lo[2] == 0 && hi[2] == o;
  Geometry g;
  g.type = type, g.compute = compute, g.math = math, g.groups = groups;
  g.x_dims = {int(batches), c, h, wd};
  g.x_strides = {int(x->dim[3].stride), int(x->dim[2].stride), int(x->dim[1].stride), int(x->dim[0].stride)};
  g.w_dims = {o, cg, kh, kw};
  g.y_dims = {int(batches), o, oh, ow};
  g.y_strides = whole ? std::array<int, 4>{int(out->dim[3].stride), int(out->dim[2].stride),
                                           int(out->dim[1].stride), int(out->dim[0].stride)}
                      : std::array<int, 4>{o * oh * ow, oh * ow, ow, 1};
  g.pad = {ph, pw}, g.stride = {sh, sw}, g.dilation = {dh, dw};

  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.plans.find(g.key());
  if (it == s.plans.end()) it = s.plans.emplace(g.key(), make_plan(g)).first;
  Plan& p = it->second;
  if (!p.error.empty()) return fail(p.error);
  const size_t partial_bytes = whole ? 0 : size_t(batches) * size_t(o) * size_t(oh) * size_t(ow) * size_t(bytes);
  const size_t workspace_at = (partial_bytes + 255) & ~size_t(255);
  if (std::string e = reserve_scratch(workspace_at + std::max(p.workspace, p.timed ? 0 : p.timed_workspace)); !e.empty()) {
    return fail(e);
  }

  const float one_f = 1, zero_f = 0;
  const double one_d = 1, zero_d = 0;
  const void* one = type == kDataDouble ? static_cast<const void*>(&one_d) : &one_f;
  const void* zero = type == kDataDouble ? static_cast<const void*>(&zero_d) : &zero_f;
  const uint64_t px = x->device + uint64_t(offset_of(x, {0, 0, 0, lo[3]}) * bytes);
  const uint64_t pw_ = w->device + uint64_t(offset_of(w, {0, 0, 0, 0}) * bytes);
  const uint64_t py = whole ? out->device + uint64_t(offset_of(out, {0, 0, 0, lo[3]}) * bytes) : s.scratch;
  if (!p.timed) {
    if (std::string e = time_plan(p, g, reinterpret_cast<const void*>(px), reinterpret_cast<const void*>(pw_),
                                  reinterpret_cast<void*>(py), reinterpret_cast<void*>(s.scratch + workspace_at));
        !e.empty()) {
      p.error = e;
      return fail(e);
    }
  }
  if (Status st = api.forward(library().handle, one, p.x, reinterpret_cast<const void*>(px), p.w,
                              reinterpret_cast<const void*>(pw_), p.conv, p.algo,
                              reinterpret_cast<void*>(s.scratch + workspace_at), p.workspace, zero, p.y,
                              reinterpret_cast<void*>(py));
      st != 0) {
    return fail(std::string("cudnnConvolutionForward failed: ") + status_text(st));
  }
  if (!whole) {
    // The region asked for, from the dense result to `out`, as one strided copy.
    const int dims[4] = {int(batches), int(hi[2] - lo[2]), int(hi[1] - lo[1]), int(hi[0] - lo[0])};
    const int from_strides[4] = {o * oh * ow, oh * ow, ow, 1};
    const int to_strides[4] = {int(out->dim[3].stride), int(out->dim[2].stride), int(out->dim[1].stride),
                               int(out->dim[0].stride)};
    const uint64_t from = s.scratch + uint64_t((lo[2] * oh * ow + lo[1] * ow + lo[0]) * bytes);
    const uint64_t to = out->device + uint64_t(offset_of(out, {lo[0], lo[1], lo[2], lo[3]}) * bytes);
    void* from_desc = nullptr;
    void* to_desc = nullptr;
    Status st = api.tensor_create(&from_desc);
    if (st == 0) st = api.tensor_create(&to_desc);
    if (st == 0) st = api.tensor_set(from_desc, type, 4, dims, from_strides);
    if (st == 0) st = api.tensor_set(to_desc, type, 4, dims, to_strides);
    if (st == 0) {
      st = api.transform(library().handle, one, from_desc, reinterpret_cast<const void*>(from), zero, to_desc,
                         reinterpret_cast<void*>(to));
    }
    if (from_desc) api.tensor_destroy(from_desc);
    if (to_desc) api.tensor_destroy(to_desc);
    if (st != 0) return fail(std::string("copying the region asked for (cudnnTransformTensor) failed: ") + status_text(st));
  }
  out->flags |= halide_buffer_flag_device_dirty;
  return 0;
}
