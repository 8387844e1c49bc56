// Command-line numbers for the apps: a malformed or out-of-range value is a kiln::Error
// naming the flag and the range, never an uncaught std::invalid_argument.
#pragma once

#include <exception>
#include <string>

#include "core/error.h"

namespace kiln::apps {

inline long long integer_arg(const std::string& flag, const std::string& text, long long low, long long high) {
  size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || v < low || v > high) {
    user_error(flag, " takes a whole number from ", low, " to ", high, ", not '", text, "'");
  }
  return v;
}

inline double real_arg(const std::string& flag, const std::string& text, double low, double high) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !(v >= low && v <= high)) {
    user_error(flag, " takes a number from ", low, " to ", high, ", not '", text, "'");
  }
  return v;
}

}  // namespace kiln::apps
