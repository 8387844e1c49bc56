#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "core/error.h"

namespace {
// Each command's usage, in the order `kiln help` lists them.
struct Command {
  const char* name;
  const char* usage;
};
const Command kCommands[] = {
    {"bench",
     "  bench [--filter REGEX] [--target host|host-cuda] [--reps N] [--max-seconds S]\n"
     "        [--scheduler default|Kiln|rules|both]\n"
     "      run the benchmark workloads eager and compiled; one JSON object per line\n"},
    {"bench-kernels",
     "  bench-kernels [--filter REGEX] [--target host|host-cuda] [--schedules LIST] [--reps N]\n"
     "                [--rounds N] [--processes N] [--buffer-sets N] [--timeout S] [--max-seconds S]\n"
     "                [--db PATH]\n"
     "      time each kernel-library generator under each schedule (manual, default, Halide's\n"
     "      autoschedulers, Kiln's); a table on stderr, one JSON object per line on stdout\n"},
    {"models",
     "  models [--filter REGEX] [--reps N] [--scheduler default|Kiln|rules|both] [--json]\n"
     "      run each registered model (seed, mlp, gpt_block, resnet18) eager, compiled and\n"
     "      through the f64 reference interpreter; print the errors and times (--json: one\n"
     "      JSON object per line on stdout, the table on stderr)\n"},
    {"aot",
     "  aot <model> -o DIR [--target host|host-cuda] [--name NAME] [--embed-weights]\n"
     "      [--scheduler default|Kiln|rules]\n"
     "      export a registered model (seed, mlp, gpt_block, resnet18) as a static library\n"
     "      with a C entry point, its header, its weights with a C loader, and a README\n"},
    {"autoschedule",
     "  autoschedule <generator>[:param=value...]|<model>|--model NAME [--target host|<Halide target>]\n"
     "               [-o FILE [--force]] [--function NAME] [--db PATH|none]\n"
     "      schedule a kernel-library generator with the Kiln autoscheduler (its tuned entry\n"
     "      when the tuning database has one) and write the schedule file; for a model\n"
     "      (seed, mlp, gpt_block, resnet18), the schedule kiln::compile gives its forward\n"
     "      pass, to be applied with kiln::scheduled_backend\n"},
    {"tune",
     "  tune <generator>[:param=value...]|<model>|--model NAME [--target host|host-cuda|<Halide target>]\n"
     "       [--budget-s S] [--candidates N] [--reps N] [--db PATH]\n"
     "      time the Kiln autoscheduler's best candidates on this machine (its GPU for a\n"
     "      CUDA target): a generator at its estimate sizes, a model's forward pass on its\n"
     "      example inputs; the fastest goes into the tuning database (--db >\n"
     "      $KILN_TUNING_DB > ./kiln_tuning.json > ~/.cache/kiln/tuning.json), which\n"
     "      kiln::compile and kiln aot read too\n"},
    {"machine",
     "  machine [--target host|<Halide target>] [--calibrate]\n"
     "      print the machine model the Kiln autoscheduler plans for (detected, then\n"
     "      KILN_MACHINE); --calibrate times Halide's thread pool on stages of empty tasks\n"
     "      and prints the lock_us that fits them, to set with KILN_MACHINE\n"},
};

std::string usage() {
  std::string u = "usage: kiln <command> [options]   (kiln <command> --help: that command alone)\ncommands:\n";
  for (const Command& c : kCommands) u += c.usage;
  return u;
}

bool asks_for_help(const std::vector<std::string>& args) {
  for (const std::string& a : args) {
    if (a == "--help" || a == "-h") return true;
  }
  return false;
}
}

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << usage();
    return 2;
  }
  std::string cmd = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
  for (const Command& c : kCommands) {
    if (cmd == c.name && asks_for_help(args)) {
      std::cout << "usage: kiln\n" << c.usage;
      return 0;
    }
  }
  try {
    if (cmd == "bench") return kiln::cli::bench(args);
    if (cmd == "bench-kernels") return kiln::cli::bench_kernels(args);
    if (cmd == "aot") return kiln::cli::aot(args);
    if (cmd == "machine") return kiln::cli::machine(args);
    if (cmd == "models") return kiln::cli::models(args);
    if (cmd == "autoschedule") return kiln::cli::autoschedule(args);
    if (cmd == "tune") return kiln::cli::tune(args);
    if (cmd == "help" || cmd == "--help" || cmd == "-h") {
      std::cout << usage();
      return 0;
    }
    std::cerr << "kiln: unknown command '" << cmd << "'\n" << usage();
    return 2;
  } catch (const kiln::Error& e) {
    std::cerr << "kiln " << cmd << ": error: " << e.what() << "\n";
    return 2;
  }
}
