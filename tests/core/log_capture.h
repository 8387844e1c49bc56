// Test helper: what kiln logs (core/log.h) to stderr while a body runs.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "core/log.h"

namespace kiln::testing {

template <class F>
std::string logged(const std::string& streams, F body) {
  set_log_streams(streams);
  ::testing::internal::CaptureStderr();
  body();
  std::string out = ::testing::internal::GetCapturedStderr();
  set_log_streams("");
  return out;
}

}  // namespace kiln::testing
