#include "core/log.h"

#include <cstdlib>
#include <iostream>
#include <mutex>
#include <set>
#include <sstream>

namespace kiln {

namespace {
struct LogState {
  std::mutex mu;
  std::set<std::string> streams;
  bool all = false;
  LogState() {
    const char* env = std::getenv("KILN_LOG");
    parse(env ? env : "");
  }
  void parse(const std::string& spec) {
    streams.clear();
    all = false;
    std::stringstream ss(spec);
    std::string item;
    while (std::getline(ss, item, ',')) {
      if (item == "all") all = true;
      if (!item.empty()) streams.insert(item);
    }
  }
};
LogState& state() {
  static LogState s;
  return s;
}
}  // namespace

bool log_enabled(const std::string& stream) {
  LogState& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.all || s.streams.count(stream) > 0;
}

void log(const std::string& stream, const std::string& message) {
  if (!log_enabled(stream)) return;
  std::lock_guard<std::mutex> lock(state().mu);
  std::cerr << "[kiln:" << stream << "] " << message;
  if (message.empty() || message.back() != '\n') std::cerr << '\n';
  std::cerr.flush();
}

void set_log_streams(const std::string& streams) {
  LogState& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.parse(streams);
}

}  // namespace kiln
