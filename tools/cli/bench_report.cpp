#include "cli/bench_report.h"

#include <cmath>
#include <iostream>

#include <nlohmann/json.hpp>

namespace kiln::cli {

namespace {

double rounded(double v, int decimals) {
  const double scale = std::pow(10.0, decimals);
  return std::round(v * scale) / scale;
}

}  // namespace

std::string bench_json(const BenchRecord& r) {
  nlohmann::ordered_json j;
  j["name"] = r.name;
  j["impl"] = r.impl;
  j["target"] = r.target;
  j["ms"] = rounded(r.ms, 4);
  if (r.bytes > 0) j["GBps"] = rounded(r.bytes / r.ms / 1e6, 1);
  if (r.flops > 0) j["TFLOPs"] = rounded(r.flops / r.ms / 1e9, 3);
  if (r.peak_mb >= 0) j["peak_MB"] = rounded(r.peak_mb, 1);
  if (r.compile_s >= 0) j["compile_s"] = rounded(r.compile_s, 2);
  j["runs"] = r.runs;
  // One line, laid out as Python's json.dumps writes bench/torch_suite.py's lines.
  std::string line = "{";
  for (auto it = j.begin(); it != j.end(); ++it) {
    line += (it == j.begin() ? "" : ", ") + nlohmann::json(it.key()).dump() + ": " +
            it.value().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  return line + "}";
}

void print_bench_json(const BenchRecord& r) { std::cout << bench_json(r) << std::endl; }

}  // namespace kiln::cli
