// ONNX's backend test cases (a folder with model.onnx and test_data_set_*/ of input_k.pb
// and output_k.pb) run by kiln and compared with their expected outputs at ONNX's
// tolerances (rtol 1e-3, atol 1e-7; NaN equals NaN). Used by the conformance CTest and by
// `kiln onnx-support`.
#pragma once

#include <string>
#include <vector>

#include "onnx/onnx.h"

namespace kiln::onnx {

enum class CaseMode {
  Reference,  // the traced graph through kiln's f64 reference interpreter: the import's semantics
  Compiled,   // kiln::compile on the host: the code kiln generates
};

struct CaseResult {
  enum Status { Pass, Unsupported, Fail } status = Pass;
  std::string detail;  // why, for Unsupported and Fail
};

CaseResult run_case(const std::string& dir, CaseMode mode = CaseMode::Reference);

// One of ONNX's `light` models (light_<name>.onnx beside light_<name>_output_0.pb, in the
// onnx Python package): run compiled on ONNX's dummy input (arange(n) / n in the input's
// shape, named dims 1) and compared at `rtol` (ONNX's: 1e-3, densenet121 2e-3), atol 1e-7.
CaseResult run_light_model(const std::string& model, double rtol);

// ONNX's dummy input for a model, as its backend tests feed the light models: arange(n) / n
// in each input's shape (named dims 1) and type.
std::vector<Tensor> dummy_inputs(const Model& m);

// The test case folders under `root` (those holding a model.onnx), sorted by name.
std::vector<std::string> case_dirs(const std::string& root);

// Where Debian's libonnx-testdata puts ONNX's test data.
constexpr const char* kDebianTestData = "/usr/share/libonnx-testdata/data";

}  // namespace kiln::onnx
