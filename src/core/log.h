// KILN_LOG=graph,code,recompiles,... turns on one stream of diagnostics per stage, in the
// spirit of TORCH_LOGS. KILN_LOG=all turns on every stream. Output goes to stderr.
#pragma once

#include <string>

namespace kiln {

// Streams: graph (captured graphs), code (lowered Halide statements), recompiles
// (guard failures and why), eager (eager kernel compilations), schedule (schedules chosen),
// aot (ahead-of-time exports), halide (Halide's own compile-time warnings).
bool log_enabled(const std::string& stream);
void log(const std::string& stream, const std::string& message);
// Overrides KILN_LOG for this process (tests and tools); "" turns logging off.
void set_log_streams(const std::string& streams);

}  // namespace kiln
