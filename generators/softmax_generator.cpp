// Softmax over the last axis of a 2-D tensor of any shape.
#include "op_generator.h"

namespace {

class SoftmaxGenerator : public kiln::kernels::OpGenerator<SoftmaxGenerator> {
 public:
  static constexpr const char* kName = "kiln_softmax";
  kiln::kernels::Params params() const { return {}; }
};

}  // namespace

HALIDE_REGISTER_GENERATOR(SoftmaxGenerator, kiln_softmax)
