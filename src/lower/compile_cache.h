// The compile cache: compiled CPU pipelines kept on disk, so a second process that
// compiles the same graph loads it instead (a ResNet-50 compiles once per machine, not
// once per process).
//
// An entry is a shared object built from Halide's ahead-of-time output (the pipeline with
// its constants of rank >= 1 lifted to arguments, so weights are not copied into it) and
// a small text file beside it naming the entry's format, key, Halide version, size and
// checksum. Entries live in KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln/compiled, else
// ~/.cache/kiln/compiled; KILN_CACHE=0 turns the cache off. KILN_LOG=cache says hit,
// miss and why.
//
// The key covers the graph (ops, attributes, shapes, dtypes, the values of 0-d
// constants), the sizes the schedule was planned for, the target, the scheduler, the
// tuning database the Kiln scheduler reads, every KILN_* setting but logging, Halide's
// version and the binary kiln's code is in (its content, so any other build of kiln keys
// differently: entries are shared by processes of one program binary, and by identical
// copies of it).
//
// A corrupt, truncated or foreign entry (its checksum, size, format or key do not match)
// is reported and rebuilt, never loaded. Entries are written to a temporary name and
// renamed into place, and each entry is read, checked and published under a lock of its
// own (an flock on <key>.lock), so threads and processes filling one cache concurrently
// never see half of one, nor one writer's object with another's description.
// Linking the shared object needs a C compiler driver (KILN_CC, else cc); without one the
// cache is off and says so. CUDA targets are not cached (JIT as before).
#pragma once

#include <Halide.h>

#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace kiln {

struct LoweredGraph;

namespace compile_cache {

// The folder entries go to, or "" when the cache is off (KILN_CACHE=0).
std::string directory();

// The key of compiling `graph` for `target` with `scheduler` planned at `example_inputs`'
// sizes; "" where such a pipeline is not cached (`why` says so).
std::string key_of(const Graph& graph, const std::vector<Tensor>& example_inputs, const Halide::Target& target,
                   const std::string& scheduler, std::string* why);

// A compiled pipeline loaded from the cache. Its arguments: the graph's inputs, then the
// lifted constants (constants()), then the outputs.
class Entry {
 public:
  // Runs the pipeline on halide_buffer_t* arguments in that order; returns Halide's error
  // code, with its message in *message.
  int call(const std::vector<const void*>& buffers, std::string* message) const;

  // The loader's: an entry over a loaded object `handle` and its argv entry point.
  static std::shared_ptr<Entry> make(void* handle, int (*argv)(void**));

 private:
  Entry() = default;
  void* handle_ = nullptr;
  int (*argv_)(void**) = nullptr;
};

// The entry of `key`, or null (a miss, or an entry that failed its checks: then `why`
// says what was wrong and the entry is removed).
std::shared_ptr<Entry> load(const std::string& key, std::string* why);

// Compiles `lowered` (of the lifted graph) ahead of time, stores it under `key` and loads
// it. Throws kiln::Error where compiling, linking or storing fails.
std::shared_ptr<Entry> build(const std::string& key, const LoweredGraph& lowered, const Halide::Target& target);

}  // namespace compile_cache
}  // namespace kiln
