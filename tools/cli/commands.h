// The `kiln` command: one subcommand per use.
#pragma once

#include <string>
#include <vector>

namespace kiln::cli {

int bench(const std::vector<std::string>& args);
int bench_kernels(const std::vector<std::string>& args);
int aot(const std::vector<std::string>& args);
int models(const std::vector<std::string>& args);
int autoschedule(const std::vector<std::string>& args);
int tune(const std::vector<std::string>& args);
int machine(const std::vector<std::string>& args);

}  // namespace kiln::cli
