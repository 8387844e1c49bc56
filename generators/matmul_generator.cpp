// Matrix multiplication of any sizes.
#include "op_generator.h"

namespace {

class MatmulGenerator : public kiln::kernels::OpGenerator<MatmulGenerator> {
 public:
  static constexpr const char* kName = "kiln_matmul";
  kiln::kernels::Params params() const { return {}; }
};

}  // namespace

HALIDE_REGISTER_GENERATOR(MatmulGenerator, kiln_matmul)
