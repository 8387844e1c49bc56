// One benchmark result as the JSON line `kiln bench` and `kiln bench-kernels` print, the
// format of bench/torch_suite.py:
//   {"name": ..., "impl": ..., "target": "cpu"|"cuda", "ms": ..., ["GBps"|"TFLOPs": ...,]
//    ["peak_MB": ...,] ["compile_s": ...,] "runs": ...}
#pragma once

#include <string>

namespace kiln::cli {

struct BenchRecord {
  std::string name;
  std::string impl;
  std::string target;
  double ms = 0;
  int runs = 0;
  double bytes = 0;  // > 0: report GBps
  double flops = 0;  // > 0: report TFLOPs
  double peak_mb = -1;  // >= 0: report peak_MB (memory the call allocated at its peak)
  double compile_s = -1;  // >= 0: report compile_s (load, trace and compile, to the first result)
};

std::string bench_json(const BenchRecord& r);
// Prints bench_json(r) to stdout, one line, flushed (so a pipe sees it at once).
void print_bench_json(const BenchRecord& r);

}  // namespace kiln::cli
