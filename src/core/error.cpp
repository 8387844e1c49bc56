#include "core/error.h"

namespace kiln::detail {

void throw_user_error(const std::string& message) { throw Error(message); }

void throw_internal_error(const std::string& message, const char* file, int line) {
  throw Error(concat("internal error in kiln (", file, ":", line, "): ", message,
                     "\nThis is a bug in kiln, not in your program; please report it."));
}

}  // namespace kiln::detail
