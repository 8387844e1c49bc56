#include "worker.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <sstream>

namespace kiln::fuzz {

namespace {

double now_s() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

void write_all(int fd, const std::string& s) {
  const char* p = s.data();
  size_t left = s.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;  // the other side is gone; the reader notices
    }
    p += n;
    left -= size_t(n);
  }
}

std::string join_paths(const std::set<std::string>& paths) {
  std::string s;
  for (const std::string& p : paths) s += (s.empty() ? "" : ",") + p;
  return s;
}

// The worker's main loop: requests are "paths a,b\n<program text>END\n"; replies are
// "P <path>" lines as paths start, then "F <failure>" lines and "E".
[[noreturn]] void serve(int in_fd, int out_fd, RunOptions options) {
  FILE* in = fdopen(in_fd, "r");
  std::string line;
  char buf[1 << 16];
  for (;;) {
    std::string paths_line, text;
    bool got_paths = false;
    for (;;) {
      if (!std::fgets(buf, sizeof buf, in)) _exit(0);
      line = buf;
      if (!got_paths) {
        paths_line = line;
        got_paths = true;
        continue;
      }
      if (line == "END\n") break;
      text += line;
    }
    RunOptions o = options;
    o.paths.clear();
    std::string list = paths_line.substr(std::min<size_t>(6, paths_line.size()));
    if (!list.empty() && list.back() == '\n') list.pop_back();
    std::istringstream ls(list);
    std::string p;
    while (std::getline(ls, p, ','))
      if (!p.empty()) o.paths.insert(p);
    Outcome outcome;
    try {
      outcome = run_program(from_text(text), o, [&](const std::string& path) { write_all(out_fd, "P " + path + "\n"); });
    } catch (const std::exception& e) {
      outcome.failures.push_back({"exception", "harness", "", e.what()});
    }
    std::string reply;
    std::istringstream fs(to_text(outcome));
    while (std::getline(fs, line)) reply += "F " + line + "\n";
    write_all(out_fd, reply + "E\n");
  }
}

}  // namespace

Worker::~Worker() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    reap();
  }
}

void Worker::spawn() {
  int down[2], up[2];
  if (::pipe(down) != 0 || ::pipe(up) != 0) throw std::runtime_error("pipe failed");
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    ::close(down[1]);
    ::close(up[0]);
    // kiln's warnings and Halide's messages would interleave with the fuzzer's report.
    if (!std::getenv("KILN_FUZZ_WORKER_STDERR")) {
      int null = ::open("/dev/null", O_WRONLY);
      ::dup2(null, 2);
      ::dup2(null, 1);
    }
    serve(down[0], up[1], options_);
  }
  ::close(down[0]);
  ::close(up[1]);
  pid_ = pid;
  to_child_ = down[1];
  from_child_ = up[0];
  ::signal(SIGPIPE, SIG_IGN);
}

void Worker::reap() {
  if (to_child_ >= 0) ::close(to_child_);
  if (from_child_ >= 0) ::close(from_child_);
  to_child_ = from_child_ = -1;
  pid_ = -1;
}

void Worker::submit(const Program& p, const RunOptions* override_options) {
  if (pid_ <= 0) spawn();
  const RunOptions& o = override_options ? *override_options : options_;
  buffer_.clear();
  last_path_ = "reference";
  busy_ = true;
  started_ = now_s();
  write_all(to_child_, "paths " + join_paths(o.paths) + "\n" + to_text(p) + "END\n");
}

Outcome Worker::crashed(const std::string& kind, const std::string& detail) {
  Outcome o;
  o.failures.push_back({"crash", last_path_, kind, detail});
  busy_ = false;
  return o;
}

std::optional<Outcome> Worker::on_readable() {
  char buf[4096];
  ssize_t n = ::read(from_child_, buf, sizeof buf);
  if (n < 0 && errno == EINTR) return std::nullopt;
  if (n <= 0) {
    // The worker died mid-program.
    int status = 0;
    ::waitpid(pid_, &status, 0);
    reap();
    std::string why = WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
                                                strsignal(WTERMSIG(status)) + ")"
                                          : "exited with status " + std::to_string(WEXITSTATUS(status));
    return crashed("signal", why + " in path " + last_path_);
  }
  buffer_.append(buf, size_t(n));
  std::string failures;
  size_t start = 0;
  for (;;) {
    size_t nl = buffer_.find('\n', start);
    if (nl == std::string::npos) break;
    std::string line = buffer_.substr(start, nl - start);
    start = nl + 1;
    if (line.rfind("P ", 0) == 0) {
      last_path_ = line.substr(2);
    } else if (line == "E") {
      // Everything before E since the last P lines is the outcome.
      std::string all = buffer_.substr(0, start);
      std::istringstream is(all);
      std::string l, text;
      while (std::getline(is, l))
        if (l.rfind("F ", 0) == 0) text += l.substr(2) + "\n";
      buffer_.clear();
      busy_ = false;
      return outcome_from_text(text);
    }
  }
  return std::nullopt;
}

std::optional<Outcome> Worker::check_timeout() {
  if (!busy_ || now_s() - started_ < timeout_s_) return std::nullopt;
  ::kill(pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  reap();
  return crashed("hang", "no result after " + std::to_string(int(timeout_s_)) + " s in path " + last_path_);
}

Outcome Worker::run(const Program& p, const RunOptions* override_options) {
  submit(p, override_options);
  for (;;) {
    pollfd pfd{from_child_, POLLIN, 0};
    int r = ::poll(&pfd, 1, 1000);
    if (r > 0) {
      if (auto o = on_readable()) return *o;
    } else if (auto o = check_timeout()) {
      return *o;
    }
  }
}

}  // namespace kiln::fuzz
