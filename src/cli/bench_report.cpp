#include "cli/bench_report.h"

#include <iostream>
#include <sstream>

namespace kiln::cli {

std::string bench_json(const BenchRecord& r) {
  std::ostringstream os;
  os.setf(std::ios::fixed);
  os.precision(4);
  os << "{\"name\": \"" << r.name << "\", \"impl\": \"" << r.impl << "\", \"target\": \"" << r.target
     << "\", \"ms\": " << r.ms;
  if (r.bytes > 0) {
    os.precision(1);
    os << ", \"GBps\": " << r.bytes / r.ms / 1e6;
  }
  if (r.flops > 0) {
    os.precision(3);
    os << ", \"TFLOPs\": " << r.flops / r.ms / 1e9;
  }
  if (r.peak_mb >= 0) {
    os.precision(1);
    os << ", \"peak_MB\": " << r.peak_mb;
  }
  os << ", \"runs\": " << r.runs << "}";
  return os.str();
}

void print_bench_json(const BenchRecord& r) { std::cout << bench_json(r) << std::endl; }

}  // namespace kiln::cli
