// A kernel generator written outside kiln, against the installed kiln::kernels: a spec
// (gelu(a) * b over 2-D tensors of any shape), its hand-written schedules for CPU and
// CUDA, and the Halide generator that builds it.
#include "kernels/op_generator.h"
#include "ops/api.h"

#include "gelu_mul_cpu.schedule.h"
#include "gelu_mul_cuda.schedule.h"

namespace {

using kiln::kernels::GeneratorInfo;
using kiln::kernels::KernelSpec;
using kiln::kernels::Params;

const bool registered = kiln::kernels::register_generator(GeneratorInfo{
    "outside_gelu_mul",
    "gelu(a) * b, 2-D, any shape",
    {{"dtype", "f32", {"f32", "f16"}}},
    [](const Params& p) {
      const kiln::DType t = kiln::dtype_from_name(p.at("dtype"));
      KernelSpec s;
      s.generator = "outside_gelu_mul";
      // Trace sizes keep the dynamic dims apart; estimates are what schedulers plan for.
      s.inputs = {{"a", t, {3, 5}, {512, 1024}}, {"b", t, {3, 5}, {512, 1024}}};
      s.fn = [](const std::vector<kiln::Tensor>& in) { return std::vector<kiln::Tensor>{kiln::gelu(in[0]) * in[1]}; };
      s.dynamic = true;
      return s;
    },
    apply_schedule_outside_gelu_mul_cpu,
    apply_schedule_outside_gelu_mul_cuda});

class GeluMul : public kiln::kernels::OpGenerator<GeluMul> {
 public:
  static constexpr const char* kName = "outside_gelu_mul";
  GeneratorParam<std::string> dtype{"dtype", "f32"};
  Params params() const { return {{"dtype", dtype.value()}}; }
};

}  // namespace

HALIDE_REGISTER_GENERATOR(GeluMul, outside_gelu_mul)
