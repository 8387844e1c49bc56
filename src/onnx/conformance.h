// ONNX's backend test cases (a folder with model.onnx and test_data_set_*/ of input_k.pb
// and output_k.pb) run by kiln and compared with their expected outputs at ONNX's
// tolerances (rtol 1e-3, atol 1e-7; NaN equals NaN). Used by the conformance CTest and by
// `kiln onnx-support`.
#pragma once

#include <string>
#include <vector>

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

// The test case folders under `root` (those holding a model.onnx), sorted by name.
std::vector<std::string> case_dirs(const std::string& root);

// Where Debian's libonnx-testdata puts ONNX's test data.
constexpr const char* kDebianTestData = "/usr/share/libonnx-testdata/data";

}  // namespace kiln::onnx
