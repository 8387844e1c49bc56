// Sets an environment variable for one scope, then restores what was there (a suite may
// itself run under KILN_SCHEDULER=... or KILN_MACHINE=...).
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

namespace kiln::testing {

struct ScopedEnv {
  std::string name;
  std::optional<std::string> saved;
  ScopedEnv(std::string n, const std::optional<std::string>& value) : name(std::move(n)) {
    if (const char* old = std::getenv(name.c_str())) saved = old;
    set(value);
  }
  ~ScopedEnv() { set(saved); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
  void set(const std::optional<std::string>& value) const {
    if (value) setenv(name.c_str(), value->c_str(), 1);
    else unsetenv(name.c_str());
  }
};

}  // namespace kiln::testing
