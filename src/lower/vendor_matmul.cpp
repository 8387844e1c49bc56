#include "lower/vendor_matmul.h"

#include <atomic>
#include <cstdlib>
#include <sstream>

#include "autoscheduler/autoscheduler.h"
#include "core/error.h"
#include "core/log.h"
#include "ops/op.h"
#include "runtime/cublaslt.h"

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
  if (t != DType::F32 && t != DType::F64 && t != DType::F16 && t != DType::BF16) {
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
  double stored_bytes = 0;
  for (const Node* s : src) {
    if (!s->is_placeholder() && !s->is_constant() && s->meta.shape.is_static()) {
      stored_bytes += double(s->meta.shape.numel()) * shape.bytes;
    }
  }
  const bool tf32 = t == DType::F32 && matmul_allow_tf32();
  const autoschedule::GpuMathUnit unit = t == DType::F64 ? autoschedule::GpuMathUnit::Fp64
                                         : (t == DType::F32 && !tf32) ? autoschedule::GpuMathUnit::Fp32
                                                                      : autoschedule::GpuMathUnit::TensorCores;
  const autoschedule::GpuMatmulChoice choice =
      autoschedule::choose_gpu_matmul(shape, unit, stored_bytes, autoschedule::machine_model(target));
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
  for (const Node* s : src) {
    if (auto p = sources.params->find(s->id); p != sources.params->end()) {
      args.emplace_back(p->second);
    } else if (auto c = sources.constants->find(s->id); c != sources.constants->end()) {
      args.emplace_back(c->second);
    } else {
      const Halide::Func& f = sources.funcs->at(s->id);
      if (!f.function().has_extern_definition()) stored->push_back(f);  // another stage's result is stored already
      args.emplace_back(f);
    }
  }
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

}  // namespace kiln
