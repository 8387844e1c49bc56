#include <iostream>

#include "cli/commands.h"
#include "core/error.h"

namespace {
const char* kUsage =
    "usage: kiln <command> [options]\n"
    "commands:\n"
    "  bench [--filter REGEX] [--target host|host-cuda] [--reps N] [--max-seconds S]\n"
    "        [--scheduler default|Kiln|rules|both]\n"
    "      run the benchmark workloads eager and compiled; one JSON object per line\n"
    "  bench-kernels [--filter REGEX] [--target host|host-cuda] [--schedules LIST] [--reps N]\n"
    "                [--rounds N] [--processes N] [--timeout S] [--max-seconds S] [--db PATH]\n"
    "      time each kernel-library generator under each schedule (manual, default, Halide's\n"
    "      autoschedulers, Kiln's); a table on stderr, one JSON object per line on stdout\n"
    "  models [--filter REGEX] [--reps N]\n"
    "      run each registered model (seed, mlp, gpt_block) eager, compiled and through the\n"
    "      f64 reference interpreter; print the errors and times\n"
    "  aot <model> -o DIR [--target host|host-cuda] [--name NAME] [--embed-weights]\n"
    "      export a registered model (seed, mlp, gpt_block, resnet18) as a static library\n"
    "      with a C entry point, its header, its weights with a C loader, and a README\n"
    "  autoschedule <generator>[:param=value...] [--target host|<Halide target>] [-o FILE]\n"
    "               [--function NAME] [--db PATH|none]\n"
    "      schedule a kernel-library generator with the Kiln autoscheduler (its tuned entry\n"
    "      when the tuning database has one) and write the schedule file\n"
    "  tune <generator>[:param=value...] [--target host|host-cuda|<Halide target>]\n"
    "       [--budget-s S] [--candidates N] [--reps N] [--db PATH]\n"
    "      time the Kiln autoscheduler's best candidates on this machine (its GPU for a\n"
    "      CUDA target); the fastest goes\n"
    "      into the tuning database (--db > $KILN_TUNING_DB > ./kiln_tuning.json)\n";
}

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << kUsage;
    return 2;
  }
  std::string cmd = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
  try {
    if (cmd == "bench") return kiln::cli::bench(args);
    if (cmd == "bench-kernels") return kiln::cli::bench_kernels(args);
    if (cmd == "aot") return kiln::cli::aot(args);
    if (cmd == "models") return kiln::cli::models(args);
    if (cmd == "autoschedule") return kiln::cli::autoschedule(args);
    if (cmd == "tune") return kiln::cli::tune(args);
    if (cmd == "help" || cmd == "--help" || cmd == "-h") {
      std::cout << kUsage;
      return 0;
    }
    std::cerr << "kiln: unknown command '" << cmd << "'\n" << kUsage;
    return 2;
  } catch (const kiln::Error& e) {
    std::cerr << "kiln " << cmd << ": error: " << e.what() << "\n";
    return 2;
  }
}
