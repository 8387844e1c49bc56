// kiln::onnx::load (src/onnx), a model file as a user hands it to `kiln run`: protobuf's
// parser, then kiln's import (operators, attributes, initializers, shape inference and
// the constant folding of shape arithmetic). Any bytes give a model or a kiln::Error; what
// loads prints (its graph) and names its inputs and outputs consistently.
#include <cstdio>

#include "core/error.h"
#include "fuzz_common.h"
#include "onnx/onnx.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = fuzz_temp_path("onnx") + ".onnx";
  fuzz_write_file(path, data, size);
  try {
    const kiln::onnx::Model m = kiln::onnx::load(path);
    KILN_FUZZ_CHECK(m.input_names.size() == m.graph.input_metas().size(), "input names and graph inputs differ");
    KILN_FUZZ_CHECK(m.output_names.size() == m.graph.output_metas().size(), "output names and graph outputs differ");
    (void)m.graph.str();
  } catch (const kiln::Error&) {
  }
  std::remove(path.c_str());
  return 0;
}
