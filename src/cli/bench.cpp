// kiln bench: the workloads of ../shared/bench/torch_suite.py with the same names and
// sizes, eager and compiled, one JSON object per line so both suites line up.
#include <cstdio>
#include <functional>
#include <iostream>
#include <regex>
#include <sstream>

#include "cli/commands.h"
#include "common/seed.h"
#include "common/timing.h"
#include "kiln.h"

namespace kiln::cli {

namespace {

struct BenchArgs {
  std::string filter;
  std::string target = "host";
  int reps = 30;
};

BenchArgs parse(const std::vector<std::string>& args) {
  BenchArgs b;
  for (size_t i = 0; i < args.size(); ++i) {
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) user_error(args[i], " needs a value");
      return args[++i];
    };
    if (args[i] == "--filter") b.filter = value();
    else if (args[i] == "--target") b.target = value();
    else if (args[i] == "--reps") b.reps = std::stoi(value());
    else user_error("bench: unknown option '", args[i], "'; options: --filter REGEX, --target host|host-cuda, --reps N");
  }
  if (b.target != "host" && b.target != "host-cuda") {
    user_error("bench: --target must be host or host-cuda, not '", b.target, "'");
  }
  if (b.reps < 1) user_error("bench: --reps must be at least 1");
  return b;
}

std::string target_label(const std::string& target) {
  return target == "host-cuda" ? "cuda" : "cpu";
}

void report(const std::string& name, const std::string& impl, const std::string& target,
            double ms, double bytes) {
  std::ostringstream os;
  os.setf(std::ios::fixed);
  os.precision(4);
  os << "{\"name\": \"" << name << "\", \"impl\": \"" << impl << "\", \"target\": \"" << target
     << "\", \"ms\": " << ms;
  os.precision(1);
  os << ", \"GBps\": " << bytes / ms / 1e6 << "}";
  std::cout << os.str() << std::endl;
}

}  // namespace

int bench(const std::vector<std::string>& argv) {
  BenchArgs a = parse(argv);
  const bool gpu = a.target == "host-cuda";
  if (gpu && !cuda_available()) user_error("bench: --target host-cuda needs a usable CUDA GPU; none was found");
  std::regex filter(a.filter.empty() ? ".*" : a.filter);
  const std::string label = target_label(a.target);

  // seed_fwd_n<N>: N = 2^26 on CUDA, 2^23 on a CPU (torch_suite.py's sizes).
  const int64_t n = gpu ? (int64_t(1) << 26) : (int64_t(1) << 23);
  const std::string name = "seed_fwd_n" + std::to_string(n);
  if (std::regex_search(name, filter)) {
    Tensor x = rand(Shape{n}, 0, -3.0, 3.0);
    if (gpu) x = x.to(Device::cuda());
    CompileOptions opts;
    opts.target = a.target;
    auto compiled = compile(apps::compute_expression, opts);
    report(name, "kiln-eager", label, apps::median_ms([&] { return apps::compute_expression(x); }, a.reps), 8.0 * double(n));
    report(name, "kiln-compiled", label, apps::median_ms([&] { return compiled(x); }, a.reps), 8.0 * double(n));
  }
  return 0;
}

}  // namespace kiln::cli
