// Runs programs in forked worker processes, so that a segfault, an abort or a hang in kiln
// is a finding ("crash") rather than the end of the fuzzer.
//
// The fuzzer's own process never runs kiln (no Halide JIT, no thread pool), so forking it
// is safe at any time. A worker serves many programs (keeping kiln's eager kernel cache
// warm); when it dies, the program it was running is reported as a crash in the last path
// it announced, and a fresh worker is forked for the next program.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

#include "program.h"
#include "run.h"

namespace kiln::fuzz {

class Worker {
 public:
  Worker(RunOptions options, double timeout_s) : options_(std::move(options)), timeout_s_(timeout_s) {}
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Sends a program (forking a worker if none is alive).
  void submit(const Program& p, const RunOptions* override_options = nullptr);
  // The descriptor to poll while a program runs.
  int fd() const { return from_child_; }
  bool busy() const { return busy_; }
  // Reads what is available; returns the outcome once the program is done (or crashed).
  std::optional<Outcome> on_readable();
  // Kills a worker that ran past the timeout; returns the hang outcome.
  std::optional<Outcome> check_timeout();
  // submit() then wait.
  Outcome run(const Program& p, const RunOptions* override_options = nullptr);

 private:
  void spawn();
  void reap();
  Outcome crashed(const std::string& kind, const std::string& detail);

  RunOptions options_;
  double timeout_s_;
  pid_t pid_ = -1;
  int to_child_ = -1, from_child_ = -1;
  bool busy_ = false;
  double started_ = 0;
  std::string buffer_, last_path_ = "reference";
};

}  // namespace kiln::fuzz
