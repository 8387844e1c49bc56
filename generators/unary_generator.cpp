// Elementwise unary ops (op=relu|exp|...|gelu, dtype=f32|f16|bf16) over a 2-D tensor of any shape.
#include "op_generator.h"

namespace {

using kiln::kernels::default_param;

class UnaryGenerator : public kiln::kernels::OpGenerator<UnaryGenerator> {
 public:
  static constexpr const char* kName = "kiln_unary";
  GeneratorParam<std::string> op{"op", default_param(kName, "op")};
  GeneratorParam<std::string> dtype{"dtype", default_param(kName, "dtype")};
  kiln::kernels::Params params() const { return {{"op", op.value()}, {"dtype", dtype.value()}}; }
};

}  // namespace

HALIDE_REGISTER_GENERATOR(UnaryGenerator, kiln_unary)
