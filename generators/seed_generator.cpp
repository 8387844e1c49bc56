// The seed expression, exp(sin x) + log|cos x|, traced from the apps' own model function.
#include "op_generator.h"

namespace {

class SeedGenerator : public kiln::kernels::OpGenerator<SeedGenerator> {
 public:
  static constexpr const char* kName = "kiln_seed";
  kiln::kernels::Params params() const { return {}; }
};

}  // namespace

HALIDE_REGISTER_GENERATOR(SeedGenerator, kiln_seed)
