// The numbers the `kiln` commands' options take, parsed whole: `--reps 3x`, `--reps abc`
// and `--reps 0` are kiln::Errors that name the command, the option, what it takes and
// what was given (std::stoi would throw past main's handler, or read "3x" as 3).
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace kiln::cli {

// A whole number of at least `at_least`.
int count_option(const std::string& command, const std::string& option, const std::string& text, int at_least);

// A number of seconds: positive, or zero too where `zero_allowed`.
double seconds_option(const std::string& command, const std::string& option, const std::string& text,
                      bool zero_allowed);

// The schedulers of compiled rows (`--scheduler`): one of lower/scheduler.h's names, or
// "both" for the rules and Kiln (in that order, the baseline first).
std::vector<std::string> scheduler_option(const std::string& command, const std::string& text);

// The same three as options of a subcommand (CLI11), checked while the command line is
// parsed; `help` says what the option does, and its default.
CLI::Option* add_count_option(CLI::App* command, const std::string& name, int* value, int at_least,
                              const std::string& help);
CLI::Option* add_seconds_option(CLI::App* command, const std::string& name, double* value, bool zero_allowed,
                                const std::string& help);
CLI::Option* add_scheduler_option(CLI::App* command, std::vector<std::string>* value);

// What `kiln autoschedule` and `kiln tune` work on: the positional generator (with its
// parameters) or model, and --model for a model that shares a generator's name; read back
// with generator_or_model (generator_args.h).
void add_generator_or_model_options(CLI::App* command, std::vector<std::string>* positional, std::string* model);

// `--filter REGEX` over `names` (the `what` of `command`: "model", "workload"...): a
// predicate on a name. An invalid regex, or one that matches none of `names`, is a
// kiln::Error that lists them.
std::function<bool(const std::string&)> name_filter(const std::string& command, const std::string& filter,
                                                    const std::vector<std::string>& names, const std::string& what);

// The impl a compiled row reports: "kiln-compiled" with the default scheduler (what a user
// gets: Kiln), "kiln-compiled-<scheduler>" when one is named.
std::string compiled_impl(const std::string& scheduler);

}  // namespace kiln::cli
