// max_pool2d or avg_pool2d (op=max|avg), NCHW; the geometry is static.
#include "op_generator.h"

namespace {

using kiln::kernels::default_param;

class Pool2dGenerator : public kiln::kernels::OpGenerator<Pool2dGenerator> {
 public:
  static constexpr const char* kName = "kiln_pool2d";
  GeneratorParam<std::string> op{"op", default_param(kName, "op")};
  GeneratorParam<std::string> n{"n", default_param(kName, "n")};
  GeneratorParam<std::string> c{"c", default_param(kName, "c")};
  GeneratorParam<std::string> h{"h", default_param(kName, "h")};
  GeneratorParam<std::string> w{"w", default_param(kName, "w")};
  GeneratorParam<std::string> k{"k", default_param(kName, "k")};
  GeneratorParam<std::string> stride{"stride", default_param(kName, "stride")};
  GeneratorParam<std::string> padding{"padding", default_param(kName, "padding")};
  kiln::kernels::Params params() const { return {{"op", op.value()}, {"n", n.value()}, {"c", c.value()}, {"h", h.value()}, {"w", w.value()}, {"k", k.value()}, {"stride", stride.value()}, {"padding", padding.value()}}; }
};

}  // namespace

HALIDE_REGISTER_GENERATOR(Pool2dGenerator, kiln_pool2d)
