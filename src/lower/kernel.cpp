#include "lower/kernel.h"

#include "lower/bf16_bits.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <mutex>
#include <sstream>

#include "core/cuda_context.h"
#include "core/error.h"
#include "core/float_env.h"
#include "core/log.h"
#include "core/memory.h"
#include "graph/interpreter.h"
#include "graph/passes/lift_constants.h"
#include "lower/compile_cache.h"
#include "lower/scheduler.h"
#include "lower/bf16_bits.h"
#include "lower/default_schedule.h"
#include "ops/op.h"
#include "lower/target.h"
#include "runtime/cublaslt.h"
#include "runtime/cudnn.h"

namespace kiln {

namespace {

// Collects messages from Halide's runtime (bounds errors, out-of-memory, CUDA failures)
// so they reach the caller as kiln::Error instead of aborting.
struct ErrorCollectingContext : Halide::JITUserContext {
  std::string message;
  ErrorCollectingContext() {
    handlers.custom_error = [](Halide::JITUserContext* ctx, const char* msg) {
      static_cast<ErrorCollectingContext*>(ctx)->message += msg;
    };
    // Heap scratch buffers count towards kiln's memory statistics.
    handlers.custom_malloc = [](Halide::JITUserContext*, size_t bytes) { return detail::tracked_malloc(bytes); };
    handlers.custom_free = [](Halide::JITUserContext*, void* ptr) { detail::tracked_free(ptr); };
    // Parallel tasks run on Halide's worker threads, each with its own float state: every
    // task flushes subnormals as the calling thread does (core/float_env.h).
    handlers.custom_do_task = [](Halide::JITUserContext* ctx, int (*f)(Halide::JITUserContext*, int, uint8_t*),
                                 int idx, uint8_t* closure) {
      detail::ScopedFlushDenormals flush;
      return f(ctx, idx, closure);
    };
  }
};

// The text of a run-time failure: an op's own check (algo::require) speaks for itself;
// anything else is Halide's message with its error code.
std::string runtime_error_text(int err, const std::string& message) {
  size_t at = message.find(algo::kRequireMarker);
  if (at != std::string::npos) {
    std::string text = message.substr(at + std::string(algo::kRequireMarker).size());
    while (!text.empty() && (text.front() == ' ')) text.erase(0, 1);
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
    return text;
  }
  return detail::concat("running the compiled kernel failed (Halide error ", err, "): ",
                        message.empty() ? "no message" : message);
}

}  // namespace

LoweredGraph lower_and_schedule(const Graph& graph, const Halide::Target& target,
                                const ScheduleFn& schedule, bool vendor_kernels) {
  return with_halide_errors("lowering the graph to Halide", [&] {
    LowerOptions options;
    options.vendor_kernels = vendor_kernels && target.has_feature(Halide::Target::CUDA);
    options.target = target;
    LoweredGraph lowered = lower_to_halide(graph, nullptr, options);
    lower_half_casts_for(target, lowered.outputs);
    (schedule ? schedule : ScheduleFn(apply_default_schedule))(lowered, target);
    return lowered;
  });
}

std::string lowered_stmt_text(const LoweredGraph& lowered, const Halide::Target& target) {
  char path[] = "/tmp/kiln_stmt_XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) return "(could not create a temporary file for the statement)";
  close(fd);
  with_halide_errors("printing the lowered statement", [&] {
    lowered.pipeline().compile_to_lowered_stmt(path, lowered.arguments(), Halide::Text, target);
  });
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::remove(path);
  return ss.str();
}

Kernel::Kernel(const Graph& graph, const Halide::Target& target, const ScheduleFn& schedule, bool vendor_kernels)
    : graph_(graph), target_(target) {
  // Halide's CUDA runtime in kiln's context, before anything of Halide's touches CUDA.
  if (target_.has_feature(Halide::Target::CUDA)) cuda::use_kiln_context_in_halide();
  lowered_ = lower_and_schedule(graph_, target_, schedule, vendor_kernels);
  compile_just_in_time();
}

std::shared_ptr<Kernel> Kernel::cached(const Graph& graph, const Halide::Target& target, const std::string& scheduler,
                                       const std::vector<Tensor>& example_inputs, const std::string& cache_key) {
  std::shared_ptr<Kernel> k(new Kernel(graph, target, Uncompiled{}));
  LiftedGraph lifted = lift_constants(graph);
  k->lowered_graph_ = lifted.graph;
  k->lifted_constants_ = lifted.constants;
  std::vector<Tensor> examples = example_inputs;
  examples.insert(examples.end(), lifted.constants.begin(), lifted.constants.end());
  k->schedule_ = make_schedule_fn(scheduler, lifted.graph, examples);
  std::string why;
  if (log_enabled("schedule") || log_enabled("code")) {
    // The user asked to see the schedule or the code: compiled again (and stored).
    why = "KILN_LOG asks for the schedule or the code, so it is compiled again";
  } else {
    k->entry_ = compile_cache::load(cache_key, &why);
  }
  if (k->entry_) {
    log("cache", "hit " + cache_key + " (" + std::to_string(graph.num_ops()) + " ops)");
    return k;
  }
  log("cache", "miss " + cache_key + ": " + why);
  k->lowered_ = lower_and_schedule(lifted.graph, target, k->schedule_);
  try {
    if (log_enabled("code")) log("code", lowered_stmt_text(k->lowered_, target));
    k->entry_ = compile_cache::build(cache_key, k->lowered_, target);
    log("cache", "stored " + cache_key);
  } catch (const Error& e) {
    log("cache", std::string("not stored (") + e.what() + "); compiled just in time");
    k->callable_ = k->jit_callable();
  }
  return k;
}

void Kernel::compile_just_in_time() {
  if (log_enabled("code")) log("code", lowered_stmt_text(lowered_, target_));
  callable_ = jit_callable();
}

Halide::Callable Kernel::jit_callable() {
  Halide::Callable callable = with_halide_errors("compiling the graph with Halide's JIT", [&] {
    Halide::Pipeline p = lowered_.pipeline();
    p.set_jit_externs({{vendor::kMatmulExtern, Halide::JITExtern(kiln_cublaslt_matmul)},
                       {vendor::kConv2dExtern, Halide::JITExtern(kiln_cudnn_conv2d)}});
    return p.compile_to_callable(lowered_.arguments(), target_);
  });
  if (target_.has_gpu_feature()) {
    // Keep freed device buffers for reuse: cudaMalloc/cudaFree per call would dominate
    // small kernels. (The shared JIT runtime exists once a GPU pipeline is compiled.)
    static std::once_flag once;
    std::call_once(once, [] { Halide::Internal::JITSharedRuntime::reuse_device_allocations(true); });
  }
  return callable;
}

std::string Kernel::lowered_stmt() const {
  if (lowered_.outputs.empty() && entry_) {
    // Loaded from the compile cache: lowered again for the listing.
    return lowered_stmt_text(lower_and_schedule(lowered_graph_, target_, schedule_), target_);
  }
  return lowered_stmt_text(lowered_, target_);
}

std::vector<Tensor> Kernel::run(const std::vector<Tensor>& inputs) const {
  SymbolSizes symbols = bind_inputs("compiled kernel", graph_.input_metas(), inputs);
  const bool gpu = target_.has_gpu_feature();
  for (const Tensor& t : inputs) {
    if (t.is_symbolic()) user_error("compiled kernel: a traced tensor was passed as an input");
    // A CPU pipeline reads host memory: bring GPU-resident inputs back first.
    if (!gpu && t.buffer().device_dirty()) t.buffer().copy_to_host();
  }
  std::vector<Tensor> outputs;
  bool all_empty = true;
  for (const TensorMeta& m : graph_.output_metas()) {
    Tensor o(m.dtype, concretize(m.shape, symbols));
    if (gpu) o.impl()->device = Device::cuda();
    all_empty = all_empty && o.numel() == 0;
    outputs.push_back(o);
  }
  // Nothing to compute. (Halide's bounds checks can still fail on an empty pipeline: an
  // index clamped to [0, n - 1] of an empty input asks for element 0.)
  if (all_empty && !outputs.empty()) return outputs;

  if (gpu) {
    for (const Tensor& t : inputs) {
      if (t.numel() == 0) give_empty_buffer_a_device_handle(t.impl()->buffer);
    }
    for (const Tensor& t : outputs) {
      if (t.numel() == 0) give_empty_buffer_a_device_handle(t.impl()->buffer);
    }
  }

  std::vector<const void*> buffers;
  for (const Tensor& t : inputs) buffers.push_back(t.buffer().raw_buffer());
  for (const Tensor& t : lifted_constants_) buffers.push_back(t.buffer().raw_buffer());
  for (const Tensor& t : outputs) buffers.push_back(t.buffer().raw_buffer());
  if (entry_) {
    std::string message;
    const int err = entry_->call(buffers, &message);
    if (err != 0) user_error(runtime_error_text(err, message));
    return outputs;
  }
  ErrorCollectingContext ctx;
  Halide::JITUserContext* ctx_ptr = &ctx;
  std::vector<const void*> argv;
  argv.push_back(&ctx_ptr);
  argv.insert(argv.end(), buffers.begin(), buffers.end());
  vendor::clear_last_error();
  int err = with_halide_errors("running the compiled kernel", [&] {
    detail::ScopedFlushDenormals flush;
    return callable_.call_argv_fast(argv.size(), argv.data());
  });
  if (err != 0) {
    const std::string vendor = vendor::last_error();
    user_error(runtime_error_text(err, ctx.message), vendor.empty() ? "" : " (" + vendor + ")");
  }
  return outputs;
}

}  // namespace kiln
