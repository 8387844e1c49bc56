#include "ops/op.h"

namespace kiln {

std::vector<OpDef> index_ops() { return {}; }

}  // namespace kiln
