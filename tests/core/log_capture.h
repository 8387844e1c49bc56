// Test helper: what kiln logs (core/log.h) to stderr while a body runs.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "core/log.h"

namespace kiln::testing {

// If the body throws, the capture ends and the exception goes on (a second capture while
// one is open aborts the test program).
template <class F>
std::string logged(const std::string& streams, F body) {
  set_log_streams(streams);
  ::testing::internal::CaptureStderr();
  try {
    body();
  } catch (...) {
    ::testing::internal::GetCapturedStderr();
    set_log_streams("");
    throw;
  }
  std::string out = ::testing::internal::GetCapturedStderr();
  set_log_streams("");
  return out;
}

}  // namespace kiln::testing
