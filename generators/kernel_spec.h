// The kernel library's generators as data: each one is a kiln model function over named
// inputs, with the sizes an autoscheduler should plan for. The same spec builds a Halide
// pipeline inside a Halide::Generator (AOT, generators/op_generator.h) and directly, for
// the JIT (`kiln bench-kernels`), so both see the same Funcs under the same names and a
// hand-written schedule applies to either.
#pragma once

#include <Halide.h>

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "lower/kiln_schedule.h"  // estimate_region
#include "lower/lower_to_halide.h"
#include "runtime/compile.h"

namespace kiln::kernels {

// Generator parameters by name, as strings (GeneratorParam values).
using Params = std::map<std::string, std::string>;

struct KernelInput {
  std::string name;
  DType dtype = DType::F32;
  // kiln order (outermost first). Traced with `trace` sizes when some dims are dynamic
  // (distinct sizes > 1, so that no two independent dims share a symbol), and planned
  // for (estimates) at `estimate` sizes.
  std::vector<int64_t> trace;
  std::vector<int64_t> estimate;
};

struct KernelSpec {
  std::string generator;  // registered name, "kiln_matmul"
  std::vector<KernelInput> inputs;
  TracedFn fn;  // one output
  // Symbolic dims: every one, or just these (input, dim) pairs; the others are static.
  bool dynamic = false;
  std::vector<std::pair<int, int>> dynamic_dims;
};

// A hand-written schedule: the function a schedule file defines
// (`apply_schedule_<generator>_cpu(Pipeline, Target)`).
using ScheduleFn = void (*)(Halide::Pipeline, Halide::Target);

struct GeneratorInfo {
  std::string name;     // "kiln_matmul"
  std::string summary;  // one line for listings
  struct Param {
    std::string name;
    std::string default_value;
    std::vector<std::string> choices;  // empty: any non-negative integer
  };
  std::vector<Param> params;
  std::function<KernelSpec(const Params&)> make;
  // Its hand-written schedules (schedule=manual), for CPU and CUDA targets; null where it
  // has none. kiln's own generators list theirs in manual_schedules.cpp.
  ScheduleFn cpu_schedule = nullptr;
  ScheduleFn cuda_schedule = nullptr;
};

// Every generator: kiln's kernel library in listing order, then the registered ones.
const std::vector<GeneratorInfo>& generators();
// Adds a generator defined outside kiln (an outside project's generator executable, see
// kiln_add_generator in cmake/KilnKernelLibrary.cmake). Call it during static
// initialization, before the generator runs:
//   static const bool registered = kiln::kernels::register_generator({"my_gelu_mul", ...});
// A name already taken is a user error. Returns true.
bool register_generator(GeneratorInfo info);
// The generator called `name` ("kiln_matmul" or "matmul"); a user error lists the known ones.
const GeneratorInfo& find_generator(const std::string& name);
// Its spec for `params` (missing ones take their defaults); bad names or values are user
// errors listing what is allowed.
KernelSpec make_spec(const std::string& name, const Params& params = {});

// The traced graph of a spec (dynamic dims symbolic) and the shape of its output at the
// estimate sizes.
Graph trace_spec(const KernelSpec& spec);
TensorMeta output_at_estimates(const KernelSpec& spec);

// Lowers the spec over `inputs` (one Func per spec input, e.g. a generator's Input
// buffers, zero-based) whose dims have `extents` (kiln order). The result's one output
// is `out`, which is defined here: a generator's Output, or a fresh Func("out"). The
// target decides the ops' math (a GPU's own sin, say); the default is the host.
LoweredGraph lower_spec(const KernelSpec& spec, const std::vector<Halide::Func>& inputs,
                        const std::vector<std::vector<Halide::Expr>>& extents, Halide::Func out,
                        const Halide::Target& target = Halide::get_host_target());

// Applies a schedule by name: "manual" (the spec's file under schedules/ for the target),
// or "default" (kiln's rules). Estimates must already be set.
void apply_named_schedule(const std::string& schedule, const std::string& generator, LoweredGraph& lowered,
                          const Halide::Target& target);

// A spec lowered over ImageParams, with estimates on inputs and output: the JIT twin of
// what the generator builds.
struct DirectKernel {
  KernelSpec spec;
  std::vector<Halide::ImageParam> params;
  LoweredGraph lowered;
  Halide::Func out;
};
DirectKernel build_direct(const KernelSpec& spec);

}  // namespace kiln::kernels
