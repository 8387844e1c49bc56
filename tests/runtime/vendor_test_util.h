// What the tests of kiln's vendor stages (cuBLASLt, cuDNN) share: bounds-query buffers,
// and a case compiled for the GPU with the vendor stage and with kiln's own kernels,
// checked against the f64 reference.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "core/log_capture.h"
#include "core/scoped_env.h"
#include "kiln.h"

namespace kiln::testing {

inline bool mentions(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A bounds-query buffer of `rank` dims (Halide's: no host, no device), each [0, 1).
struct QueryBuffer {
  std::vector<halide_dimension_t> dims;
  halide_buffer_t b{};
  explicit QueryBuffer(int rank, halide_type_t t = halide_type_t(halide_type_float, 32)) : dims(size_t(rank)) {
    for (auto& d : dims) d = {0, 1, 1, 0};
    b.dimensions = rank;
    b.dim = dims.data();
    b.type = t;
  }
  QueryBuffer& region(int d, int min, int extent) {
    dims[size_t(d)].min = min;
    dims[size_t(d)].extent = extent;
    return *this;
  }
};

struct VendorCase {
  std::string name;
  std::function<std::vector<Tensor>(const std::vector<Tensor>&)> fn;
  std::vector<Tensor> inputs;
  double rtol, atol;
};

inline Tensor as_f64(const Tensor& t) { return cast(t.to_host(), DType::F64); }

// The case compiled for the GPU with KILN_VENDOR=on (the log must say `library` was used)
// and off, each against the f64 reference on the same inputs.
inline void check_vendor_case_on_gpu(const VendorCase& c, const std::string& library) {
  SCOPED_TRACE(c.name);
  const Graph g = trace(c.fn, c.inputs);
  std::vector<Tensor> want = interpret(g, c.inputs, InterpretMode::Reference);
  CompileOptions o;
  o.target = "host-cuda";
  std::vector<Tensor> gpu_inputs;
  for (const Tensor& t : c.inputs) gpu_inputs.push_back(t.to(Device::cuda()));
  for (const char* mode : {"on", "off"}) {
    SCOPED_TRACE(mode);
    ScopedEnv env("KILN_VENDOR", std::string(mode));
    const std::string log = logged("schedule", [&] {
      std::vector<Tensor> got = compile(c.fn, o)(gpu_inputs);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_TRUE(got[i].device().is_cuda());
        EXPECT_TRUE(allclose(as_f64(got[i]), as_f64(want[i]), c.rtol, c.atol))
            << "output " << i << ": max abs diff " << max_abs_diff(as_f64(got[i]), as_f64(want[i]));
      }
    });
    EXPECT_EQ(mentions(log, library + " (KILN_VENDOR=on)"), std::string(mode) == "on") << log;
  }
}

}  // namespace kiln::testing
