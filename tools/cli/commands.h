// The `kiln` command: one subcommand per use, parsed by CLI11. Each add_* declares its
// subcommand on the `kiln` app (options, help) with a callback that runs it once the command
// line is parsed and leaves its exit status in *status.
#pragma once

namespace CLI {
class App;
}

namespace kiln::cli {

void add_bench(CLI::App& kiln, int* status);
void add_bench_kernels(CLI::App& kiln, int* status);
void add_models(CLI::App& kiln, int* status);
void add_aot(CLI::App& kiln, int* status);
void add_autoschedule(CLI::App& kiln, int* status);
void add_tune(CLI::App& kiln, int* status);
void add_machine(CLI::App& kiln, int* status);
void add_onnx(CLI::App& kiln, int* status);  // run, graph, onnx-support

}  // namespace kiln::cli
