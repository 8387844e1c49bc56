// Elementwise binary ops (op=add|sub|mul|div|pow|maximum|minimum, dtype=f32|f16|bf16).
#include "op_generator.h"

namespace {

using kiln::kernels::default_param;

class BinaryGenerator : public kiln::kernels::OpGenerator<BinaryGenerator> {
 public:
  static constexpr const char* kName = "kiln_binary";
  GeneratorParam<std::string> op{"op", default_param(kName, "op")};
  GeneratorParam<std::string> dtype{"dtype", default_param(kName, "dtype")};
  kiln::kernels::Params params() const { return {{"op", op.value()}, {"dtype", dtype.value()}}; }
};

}  // namespace

HALIDE_REGISTER_GENERATOR(BinaryGenerator, kiln_binary)
