// Errors. A user error (bad input: wrong shapes, dtypes, arguments) and an internal
// error (a kiln bug) are both kiln::Error, so callers catch one type; the message
// says which it is and, for user errors, what would have been right.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace kiln {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

namespace detail {
template <class... Parts>
std::string concat(const Parts&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  return os.str();
}
[[noreturn]] void throw_user_error(const std::string& message);
[[noreturn]] void throw_internal_error(const std::string& message, const char* file, int line);
}  // namespace detail

// user_error("sum: axis ", a, " is out of range for rank ", r);
template <class... Parts>
[[noreturn]] void user_error(const Parts&... parts) {
  detail::throw_user_error(detail::concat(parts...));
}

}  // namespace kiln

#define KILN_INTERNAL_ERROR(...) \
  ::kiln::detail::throw_internal_error(::kiln::detail::concat(__VA_ARGS__), __FILE__, __LINE__)
#define KILN_CHECK(cond, ...)                                              \
  do {                                                                     \
    if (!(cond)) KILN_INTERNAL_ERROR("check failed: " #cond ": ", ##__VA_ARGS__); \
  } while (0)
