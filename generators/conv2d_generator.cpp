// conv2d, NCHW, square kernels, no bias; the geometry (sizes, stride, padding) is static.
#include "op_generator.h"

namespace {

using kiln::kernels::default_param;

class Conv2dGenerator : public kiln::kernels::OpGenerator<Conv2dGenerator> {
 public:
  static constexpr const char* kName = "kiln_conv2d";
  GeneratorParam<std::string> n{"n", default_param(kName, "n")};
  GeneratorParam<std::string> c{"c", default_param(kName, "c")};
  GeneratorParam<std::string> h{"h", default_param(kName, "h")};
  GeneratorParam<std::string> w{"w", default_param(kName, "w")};
  GeneratorParam<std::string> o{"o", default_param(kName, "o")};
  GeneratorParam<std::string> k{"k", default_param(kName, "k")};
  GeneratorParam<std::string> stride{"stride", default_param(kName, "stride")};
  GeneratorParam<std::string> padding{"padding", default_param(kName, "padding")};
  kiln::kernels::Params params() const { return {{"n", n.value()}, {"c", c.value()}, {"h", h.value()}, {"w", w.value()}, {"o", o.value()}, {"k", k.value()}, {"stride", stride.value()}, {"padding", padding.value()}}; }
};

}  // namespace

HALIDE_REGISTER_GENERATOR(Conv2dGenerator, kiln_conv2d)
