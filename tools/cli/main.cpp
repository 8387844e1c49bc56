// kiln <command> [options]: CLI11 parses the command line; every error, whether CLI11's (an
// unknown option, a missing value) or kiln's (a bad value, a failed command), is one line
// "kiln <command>: error: ..." on stderr and exit status 2; --help prints the command's
// usage on stdout and exits 0.
#include <CLI/CLI.hpp>

#include <iostream>
#include <string>

#include "cli/commands.h"
#include "core/error.h"

namespace {

// The subcommand the command line names, for error messages: "kiln tune: error: ...".
std::string command_of(CLI::App& app, int argc, char** argv) {
  for (CLI::App* sub : app.get_subcommands()) return sub->get_name();
  if (argc >= 2) {
    for (CLI::App* sub : app.get_subcommands({})) {
      if (sub->get_name() == argv[1]) return sub->get_name();
    }
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kiln: benchmarks, models, AOT export, the autoscheduler and the tuner", "kiln"};
  app.require_subcommand(1);
  int status = 0;
  kiln::cli::add_bench(app, &status);
  kiln::cli::add_bench_kernels(app, &status);
  kiln::cli::add_models(app, &status);
  kiln::cli::add_aot(app, &status);
  kiln::cli::add_autoschedule(app, &status);
  kiln::cli::add_tune(app, &status);
  kiln::cli::add_machine(app, &status);
  kiln::cli::add_onnx(app, &status);
  app.footer("kiln <command> --help: that command's options\n");  // set after the commands, which would inherit it
  if (argc >= 2 && std::string(argv[1]) == "help") {
    std::cout << app.help();
    return 0;
  }
  if (argc >= 2 && argv[1][0] != '-' && command_of(app, argc, argv).empty()) {
    std::string names;
    for (CLI::App* sub : app.get_subcommands({})) names += (names.empty() ? "" : ", ") + sub->get_name();
    std::cerr << "kiln: error: unknown command '" << argv[1] << "'; the commands are " << names
              << " (kiln help says what each does)\n";
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);  // the help of the command named, on stdout; 0
  } catch (const CLI::ParseError& e) {
    const std::string cmd = command_of(app, argc, argv);
    if (cmd.empty()) {
      std::cerr << "kiln: error: " << e.what() << "\n\n" << app.help();
    } else {
      std::cerr << "kiln " << cmd << ": error: " << e.what() << "\n(kiln " << cmd << " --help lists its options)\n";
    }
    return 2;
  } catch (const kiln::Error& e) {
    // The commands' messages name themselves ("tune: ..."), as they do when thrown elsewhere.
    const std::string cmd = command_of(app, argc, argv);
    std::string what = e.what();
    if (what.rfind(cmd + ": ", 0) == 0) what = what.substr(cmd.size() + 2);
    std::cerr << "kiln " << cmd << ": error: " << what << "\n";
    return 2;
  }
  return status;
}
