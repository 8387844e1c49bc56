#include "lower/vendor_stages.h"

#include <atomic>
#include <cstdlib>
#include <sstream>

#include "autoscheduler/autoscheduler.h"
#include "core/error.h"
#include "core/log.h"
#include "ops/op.h"
#include "runtime/cublaslt.h"
#include "runtime/cudnn.h"

namespace kiln {

namespace {
std::atomic<bool> codegen_without_gpu{false};
}  // namespace

void set_vendor_codegen_without_gpu(bool on) { codegen_without_gpu = on; }

namespace {

std::atomic<int> g_allow_tf32{-1};  // -1: not set, KILN_ALLOW_TF32 decides

std::string vendor_mode() {
  const char* e = std::getenv("KILN_VENDOR");
  const std::string mode = e ? e : "auto";
  if (mode != "auto" && mode != "on" && mode != "off") {
    user_error("KILN_VENDOR must be auto, on or off, not '", mode, "'");
  }
  return mode;
}

// Batch dims of `operand` against the output's (NumPy order, aligned from the right): bit
// j set where the operand's Halide dim 2 + j is 1 and the output's is not. Nothing where a
// dim neither equals the output's nor is 1.
std::optional<int> broadcast_bits(const Shape& operand, const Shape& out) {
  const int ro = operand.rank(), rr = out.rank();
  int bits = 0;
  for (int d = 2; d < ro; ++d) {  // Halide dim d
    const Dim& od = operand[ro - 1 - d];
    const Dim& rd = out[rr - 1 - d];
    if (od == rd) continue;
    if (od.is_static() && od.size == 1) {
      bits |= 1 << (d - 2);
      continue;
    }
    return std::nullopt;
  }
  return bits;
}

// A permute that swaps the last two dims and keeps the others.
bool is_last_two_transpose(const Node& n) {
  if (n.op != "permute") return false;
  const std::vector<int64_t>& dims = n.attrs.get_ints("dims");
  const int64_t r = int64_t(dims.size());
  if (r < 2) return false;
  for (int64_t i = 0; i < r - 2; ++i) {
    if (dims[size_t(i)] != i && dims[size_t(i)] != i - r) return false;
  }
  auto is = [&](int64_t got, int64_t want) { return got == want || got == want - r; };
  return is(dims[size_t(r - 2)], r - 1) && is(dims[size_t(r - 1)], r - 2);
}

double size_or(const Dim& d, double fallback) { return d.is_static() ? double(d.size) : fallback; }

// A vendor stage's argument for the value of node `s`: a placeholder's ImageParam, a
// constant's buffer, or the Func computing it, which must then be stored (`stored`).
Halide::ExternFuncArgument operand_argument(const Node& s, const VendorOperandSources& sources,
                                            std::vector<Halide::Func>* stored) {
  if (auto p = sources.params->find(s.id); p != sources.params->end()) return p->second;
  if (auto c = sources.constants->find(s.id); c != sources.constants->end()) return c->second;
  const Halide::Func& f = sources.funcs->at(s.id);
  if (!f.function().has_extern_definition()) stored->push_back(f);  // another stage's result is stored already
  return f;
}

// The bytes of the operands among `nodes` that kiln must store for a vendor stage (values
// computed by other Funcs, of static size).
double stored_operand_bytes(const std::vector<const Node*>& nodes, double element_bytes) {
  double bytes = 0;
  for (const Node* s : nodes) {
    if (!s->is_placeholder() && !s->is_constant() && s->meta.shape.is_static()) {
      bytes += double(s->meta.shape.numel()) * element_bytes;
    }
  }
  return bytes;
}

bool vendor_type(DType t) { return t == DType::F32 || t == DType::F64 || t == DType::F16 || t == DType::BF16; }

autoschedule::GpuMathUnit math_unit(DType t, bool tf32) {
  return t == DType::F64                 ? autoschedule::GpuMathUnit::Fp64
         : (t == DType::F32 && !tf32) ? autoschedule::GpuMathUnit::Fp32
                                      : autoschedule::GpuMathUnit::TensorCores;
}

}  // namespace

void set_matmul_allow_tf32(bool allow) { g_allow_tf32 = allow ? 1 : 0; }

bool matmul_allow_tf32() {
  const int v = g_allow_tf32.load();
  if (v >= 0) return v == 1;
  const char* e = std::getenv("KILN_ALLOW_TF32");
  return e && std::string(e) == "1";
}

std::optional<Halide::Func> vendor_matmul(const Graph& graph, const Node& n, const VendorOperandSources& sources,
                                          const Halide::Target& target, std::vector<Halide::Func>* stored) {
  if (!target.has_feature(Halide::Target::CUDA)) return std::nullopt;
  const std::string mode = vendor_mode();
  if (mode == "off") return std::nullopt;
  auto skip = [&](const std::string& why) -> std::optional<Halide::Func> {
    if (mode == "on") log("schedule", n.name + ": kiln's kernel, not cuBLASLt: " + why);
    return std::nullopt;
  };
  const TensorMeta& out = n.meta;
  const DType t = out.dtype;
  if (!vendor_type(t)) {
    return skip(std::string("cuBLASLt takes f32, f64, f16 and bf16, not ") + dtype_name(t));
  }
  const Node& a = graph.node(n.inputs[0]);
  const Node& b = graph.node(n.inputs[1]);
  if (a.meta.dtype != t || b.meta.dtype != t) return skip("the operands' types differ");
  const std::optional<int> a_bits = broadcast_bits(a.meta.shape, out.shape);
  const std::optional<int> b_bits = broadcast_bits(b.meta.shape, out.shape);
  if (!a_bits || !b_bits) return skip("an operand's batch dims are neither the output's nor 1");

  std::string missing;
  if (!codegen_without_gpu && !vendor::cublaslt_available(&missing)) {
    if (mode == "on") user_error("KILN_VENDOR=on: ", missing);
    log("schedule", n.name + ": kiln's kernel (" + missing + ")");
    return std::nullopt;
  }

  // Each operand read in place: the stored value behind a transpose of its last two dims.
  const Node* src[2] = {&a, &b};
  bool trans[2] = {false, false};
  for (int j = 0; j < 2; ++j) {
    if (is_last_two_transpose(*src[j])) {
      src[j] = &graph.node(src[j]->inputs[0]);
      trans[j] = true;
    }
  }
  const int r = out.shape.rank();
  autoschedule::ContractionShape shape;
  shape.m = size_or(out.shape[r - 2], 1024);
  shape.n = size_or(out.shape[r - 1], 1024);
  shape.k = size_or(a.meta.shape[a.meta.shape.rank() - 1], 1024);
  for (int d = 0; d < r - 2; ++d) shape.batch *= size_or(out.shape[d], 1);
  shape.bytes = dtype_bytes(t);
  const double stored_bytes = stored_operand_bytes({src[0], src[1]}, shape.bytes);
  const bool tf32 = t == DType::F32 && matmul_allow_tf32();
  const autoschedule::GpuMatmulChoice choice = autoschedule::choose_gpu_matmul(
      shape, math_unit(t, tf32), stored_bytes, autoschedule::machine_model(target), "cuBLASLt");
  std::ostringstream what;
  what << n.name << " (" << shape.m << " x " << shape.n << ", k " << shape.k << ", batch " << shape.batch << ", "
       << dtype_name(t) << (tf32 ? ", TF32 allowed" : "") << ")";
  if (!choice.vendor && mode == "auto") {
    log("schedule", "Kiln: " + what.str() + ": " + choice.why);
    return std::nullopt;
  }
  log("schedule", "Kiln: " + what.str() + ": " + (mode == "on" ? "cuBLASLt (KILN_VENDOR=on); " : "") + choice.why +
                      (trans[0] || trans[1] ? "; transposed operands read in place" : ""));

  std::vector<Halide::ExternFuncArgument> args;
  for (const Node* s : src) args.push_back(operand_argument(*s, sources, stored));
  const Shape& as = a.meta.shape;
  args.emplace_back(sources.extent(out.shape[r - 2]));
  args.emplace_back(sources.extent(out.shape[r - 1]));
  args.emplace_back(sources.extent(as[as.rank() - 1]));
  const int flags = (trans[0] ? vendor::kTransA : 0) | (trans[1] ? vendor::kTransB : 0) | (tf32 ? vendor::kAllowTf32 : 0);
  args.emplace_back(Halide::Expr(flags));
  args.emplace_back(Halide::Expr(*a_bits));
  args.emplace_back(Halide::Expr(*b_bits));
  Halide::Func f("matmul_cublaslt");
  f.define_extern(vendor::kMatmulExtern, args, algo::halide_type(t), algo::vars(r), Halide::NameMangling::C,
                  Halide::DeviceAPI::CUDA);
  f.compute_root();
  return f;
}

std::optional<Halide::Func> vendor_conv2d(const Graph& graph, const Node& n, const VendorOperandSources& sources,
                                          const Halide::Target& target, std::vector<Halide::Func>* stored) {
  if (!target.has_feature(Halide::Target::CUDA)) return std::nullopt;
  const std::string mode = vendor_mode();
  if (mode == "off") return std::nullopt;
  auto skip = [&](const std::string& why) -> std::optional<Halide::Func> {
    if (mode == "on") log("schedule", n.name + ": kiln's kernel, not cuDNN: " + why);
    return std::nullopt;
  };
  const DType t = n.meta.dtype;
  if (!vendor_type(t)) return skip(std::string("cuDNN takes f32, f64, f16 and bf16, not ") + dtype_name(t));
  const Node& x = graph.node(n.inputs[0]);
  const Node& w = graph.node(n.inputs[1]);
  if (x.meta.dtype != t || w.meta.dtype != t) return skip("the operands' types differ");
  std::string missing;
  if (!codegen_without_gpu && !vendor::cudnn_available(&missing)) {
    if (mode == "on") user_error("KILN_VENDOR=on: ", missing);
    log("schedule", n.name + ": kiln's kernel (" + missing + ")");
    return std::nullopt;
  }
  // The geometry (conv2d's shape inference has checked it): x [N, C, H, W], w [O, C/g, KH, KW].
  const Shape &xs = x.meta.shape, &ws = w.meta.shape, &ys = n.meta.shape;
  const std::vector<int64_t> st = n.attrs.get_ints("stride"), pad = n.attrs.get_ints("padding"),
                             dil = n.attrs.get_ints("dilation");
  const int64_t groups = n.attrs.get_int("groups");
  // Priced as the implicit GEMM it is, per group: (N OH OW) x (O/g), k = C/g KH KW.
  autoschedule::ContractionShape shape;
  shape.m = size_or(ys[0], 1) * double(ys[2].size * ys[3].size);
  shape.n = double(ws[0].size / groups);
  shape.k = double(ws[1].size * ws[2].size * ws[3].size);
  shape.batch = double(groups);
  shape.bytes = dtype_bytes(t);
  const double stored_bytes = stored_operand_bytes({&x, &w}, shape.bytes);
  const bool tf32 = t == DType::F32 && matmul_allow_tf32();
  const autoschedule::GpuMatmulChoice choice = autoschedule::choose_gpu_matmul(
      shape, math_unit(t, tf32), stored_bytes, autoschedule::machine_model(target), "cuDNN");
  std::ostringstream what;
  what << n.name << " (" << ys.str() << " from " << xs.str() << ", kernel " << ws[2].size << " x " << ws[3].size
       << ", groups " << groups << ", " << dtype_name(t) << (tf32 ? ", TF32 allowed" : "") << ")";
  // A depthwise convolution (one input and one output channel per group) is no GEMM: its
  // implicit-GEMM price means little, and on an H100 cuDNN's FP32 kernels took 1.1-1.6x
  // kiln's own time on each of the sweep's four (MobileNet's, batch 1 and 8).
  const bool depthwise = ws[1].size == 1 && ws[0].size == groups;
  if ((!choice.vendor || depthwise) && mode == "auto") {
    log("schedule", "Kiln: " + what.str() + ": " +
                        (depthwise ? "kiln's kernel: a depthwise convolution (cuDNN measured slower)" : choice.why));
    return std::nullopt;
  }
  log("schedule", "Kiln: " + what.str() + ": " + (mode == "on" ? "cuDNN (KILN_VENDOR=on); " : "") + choice.why);

  std::vector<Halide::ExternFuncArgument> args = {operand_argument(x, sources, stored),
                                                  operand_argument(w, sources, stored)};
  args.emplace_back(sources.extent(xs[0]));
  for (int64_t v : {xs[1].size, xs[2].size, xs[3].size, ws[0].size, ws[2].size, ws[3].size, st[0], st[1], pad[0],
                    pad[1], dil[0], dil[1], groups}) {
    args.emplace_back(Halide::Expr(int(v)));
  }
  args.emplace_back(Halide::Expr(tf32 ? int(vendor::kConvAllowTf32) : 0));
  Halide::Func f("conv2d_cudnn");
  f.define_extern(vendor::kConv2dExtern, args, algo::halide_type(t), algo::vars(4), Halide::NameMangling::C,
                  Halide::DeviceAPI::CUDA);
  f.compute_root();
  return f;
}

}  // namespace kiln
