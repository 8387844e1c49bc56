// Batched matrix multiplication of any sizes.
#include "op_generator.h"

namespace {

class BatchMatmulGenerator : public kiln::kernels::OpGenerator<BatchMatmulGenerator> {
 public:
  static constexpr const char* kName = "kiln_batch_matmul";
  kiln::kernels::Params params() const { return {}; }
};

}  // namespace

HALIDE_REGISTER_GENERATOR(BatchMatmulGenerator, kiln_batch_matmul)
