// Reading a child process's reply lines from a pipe, with a deadline (bench-kernels).
#pragma once

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <string>

namespace kiln::cli {

enum class LineRead { line, closed, timed_out };

// Reads `fd` into `pending` until it holds a whole line, which moves to `*line` (without
// its '\n'). What the pipe holds counts even once `deadline` has passed: a child that
// answered while the parent was waiting on another one is not late.
inline LineRead read_line(int fd, std::string& pending, std::chrono::steady_clock::time_point deadline,
                          std::string* line) {
  for (;;) {
    if (const size_t nl = pending.find('\n'); nl != std::string::npos) {
      *line = pending.substr(0, nl);
      pending.erase(0, nl + 1);
      return LineRead::line;
    }
    const long long left_ms = std::max<long long>(
        0, std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count());
    pollfd pfd{fd, POLLIN, 0};
    const int ready = poll(&pfd, 1, int(std::min<long long>(left_ms, INT_MAX)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      if (left_ms == 0) return LineRead::timed_out;
      continue;
    }
    char buf[4096];
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return LineRead::closed;
    pending.append(buf, size_t(n));
  }
}

}  // namespace kiln::cli
