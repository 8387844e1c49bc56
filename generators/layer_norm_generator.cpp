// Layer norm with weight and bias over rows of cols elements (any number of rows).
#include "op_generator.h"

namespace {

using kiln::kernels::default_param;

class LayerNormGenerator : public kiln::kernels::OpGenerator<LayerNormGenerator> {
 public:
  static constexpr const char* kName = "kiln_layer_norm";
  GeneratorParam<std::string> cols{"cols", default_param(kName, "cols")};
  kiln::kernels::Params params() const { return {{"cols", cols.value()}}; }
};

}  // namespace

HALIDE_REGISTER_GENERATOR(LayerNormGenerator, kiln_layer_norm)
