#include "cli/options.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <regex>

#include "core/error.h"
#include "lower/scheduler.h"

namespace kiln::cli {

namespace {

// The whole text as a number, or nothing.
bool parse_number(const std::string& text, double* v) {
  try {
    size_t used = 0;
    *v = std::stod(text, &used);
    return used == text.size() && std::isfinite(*v);
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

int count_option(const std::string& command, const std::string& option, const std::string& text, int at_least) {
  double v = 0;
  if (!parse_number(text, &v) || v != std::floor(v) || v < at_least || v > 1e9) {
    user_error(command, ": ", option, " takes a whole number of at least ", at_least, ", not '", text, "'");
  }
  return int(v);
}

double seconds_option(const std::string& command, const std::string& option, const std::string& text,
                      bool zero_allowed) {
  double v = 0;
  if (!parse_number(text, &v) || v < 0 || (v == 0 && !zero_allowed)) {
    user_error(command, ": ", option, " takes a ", zero_allowed ? "number of seconds, 0 or more" : "positive number",
               ", not '", text, "'");
  }
  return v;
}

std::vector<std::string> scheduler_option(const std::string& command, const std::string& text) {
  const std::vector<std::string>& names = scheduler_names();
  if (text == "both") return {"rules", "Kiln"};
  if (std::find(names.begin(), names.end(), text) != names.end()) return {text};
  std::string valid;
  for (const std::string& n : names) valid += n + ", ";
  user_error(command, ": --scheduler must be ", valid, "or both (the rules and Kiln), not '", text, "'");
}

CLI::Option* add_count_option(CLI::App* command, const std::string& name, int* value, int at_least,
                              const std::string& help) {
  const std::string cmd = command->get_name();
  return command
      ->add_option_function<std::string>(
          name, [=](const std::string& text) { *value = count_option(cmd, name, text, at_least); }, help)
      ->type_name("N");
}

CLI::Option* add_seconds_option(CLI::App* command, const std::string& name, double* value, bool zero_allowed,
                                const std::string& help) {
  const std::string cmd = command->get_name();
  return command
      ->add_option_function<std::string>(
          name, [=](const std::string& text) { *value = seconds_option(cmd, name, text, zero_allowed); }, help)
      ->type_name("S");
}

CLI::Option* add_scheduler_option(CLI::App* command, std::vector<std::string>* value) {
  const std::string cmd = command->get_name();
  return command
      ->add_option_function<std::string>(
          "--scheduler", [=](const std::string& text) { *value = scheduler_option(cmd, text); },
          "the compiled rows' scheduler; both: the rules and Kiln side by side (default: default, which is Kiln)")
      ->type_name("default|Kiln|rules|both");
}

void add_generator_or_model_options(CLI::App* command, std::vector<std::string>* positional, std::string* model) {
  command->add_option("generator", *positional, "a generator with its parameters (unary:op=gelu:dtype=f16) or a model")
      ->type_name("<generator>[:param=value...]|<model>");
  command->add_option("--model", *model, "a model that shares a generator's name (seed)")->type_name("NAME");
}

std::function<bool(const std::string&)> name_filter(const std::string& command, const std::string& filter,
                                                    const std::vector<std::string>& names, const std::string& what) {
  std::string listed;
  for (const std::string& n : names) listed += (listed.empty() ? " " : ", ") + n;
  std::regex re;
  try {
    re = std::regex(filter.empty() ? ".*" : filter);
  } catch (const std::regex_error& e) {
    user_error(command, ": --filter '", filter, "' is not a valid regular expression (", e.what(), ")");
  }
  if (std::none_of(names.begin(), names.end(), [&](const std::string& n) { return std::regex_search(n, re); })) {
    user_error(command, ": --filter '", filter, "' matches no ", what, "; the ", what, "s are:", listed);
  }
  return [re](const std::string& name) { return std::regex_search(name, re); };
}

std::string compiled_impl(const std::string& scheduler) {
  return scheduler == "default" ? "kiln-compiled" : "kiln-compiled-" + scheduler;
}

}  // namespace kiln::cli
