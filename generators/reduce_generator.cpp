// Reductions over the last axis (op=sum|mean|max) of a 2-D tensor of any shape.
#include "op_generator.h"

namespace {

using kiln::kernels::default_param;

class ReduceGenerator : public kiln::kernels::OpGenerator<ReduceGenerator> {
 public:
  static constexpr const char* kName = "kiln_reduce";
  GeneratorParam<std::string> op{"op", default_param(kName, "op")};
  kiln::kernels::Params params() const { return {{"op", op.value()}}; }
};

}  // namespace

HALIDE_REGISTER_GENERATOR(ReduceGenerator, kiln_reduce)
