// The seed expression as a Halide generator for the AOT kernel library. The algorithm is
// not written again here: the generator traces kiln's own model function and lowers it
// with the same op definitions that eager mode and kiln::compile use.
#include <Halide.h>

#include "common/seed.h"
#include "kiln.h"
#include "lower/default_schedule.h"
#include "lower/lower_to_halide.h"

namespace {

class SeedGenerator : public Halide::Generator<SeedGenerator> {
 public:
  Input<Buffer<float, 1>> x{"x"};
  Output<Buffer<float, 1>> out{"out"};

  void generate() {
    kiln::CompileOptions options;
    options.dynamic = true;  // one kernel for every length
    options.input_names = {"x"};
    kiln::Graph graph = kiln::trace(
        [](const std::vector<kiln::Tensor>& in) {
          return std::vector<kiln::Tensor>{kiln::apps::compute_expression(in[0])};
        },
        {kiln::zeros({2})}, options);
    x.dim(0).set_min(0);  // kiln tensors are dense and zero-based, like its ImageParams
    kiln::ExternalInputs inputs{{x}, {{"s0", x.dim(0).extent()}}};
    lowered_ = kiln::lower_to_halide(graph, &inputs);
    Halide::Var i("d0");
    out(i) = lowered_.outputs[0](i);
  }

  void schedule() {
    x.set_estimates({{0, 1 << 20}});
    out.set_estimates({{0, 1 << 20}});
    if (using_autoscheduler()) return;
    lowered_.outputs = {out};
    kiln::apply_default_schedule(lowered_, get_target());
  }

 private:
  kiln::LoweredGraph lowered_;
};

}  // namespace

HALIDE_REGISTER_GENERATOR(SeedGenerator, kiln_seed)
