// kiln's tuning database: the schedules `kiln tune` measured fastest, kept in one JSON
// file and looked up by (pipeline fingerprint, target, machine), so that the Kiln
// autoscheduler applies a measured winner instead of its cost model's guess.
//
//   {"format": "kiln-tuning-db", "version": 1, "entries": [
//     {"fingerprint": "3f2a...", "target": "x86-64-linux-avx2-...", "machine": "cores=2 ...",
//      "generator": "kiln_matmul", "knobs": {"tiles": {...}, "bands": {...}},
//      "schedule": "<schedule source>", "measured_ms": 1.2, "predicted_ms": 1.5,
//      "date": "2026-12-03T07:50:00Z"}, ...]}
//
// A file that does not parse, or is of another format or version, is never trusted:
// loading reports it with a warning naming the file and ignores it, and saving refuses to
// overwrite it. Saving is atomic (a temporary file in the same folder, then rename), so an
// interrupted or failed save leaves the previous file as it was.
#pragma once

#include <Halide.h>

#include <optional>
#include <string>
#include <vector>

#include "search.h"

namespace kiln::autoschedule {

constexpr const char* kTuningDbFormat = "kiln-tuning-db";
constexpr int kTuningDbVersion = 1;

struct TuningEntry {
  std::string fingerprint;  // pipeline_fingerprint
  std::string target;       // tuning_target_key
  std::string machine;      // MachineModel::str
  std::string generator;    // informational: what was tuned
  Knobs knobs;              // applied again through schedule_pipeline
  std::string schedule;     // the winner's schedule source, for reading and hand tuning
  double measured_ms = 0;
  double predicted_ms = 0;
  std::string date;  // ISO 8601, UTC
};

class TuningDb {
 public:
  // Reads `path`. A missing file is an empty database; an unreadable, corrupt or foreign
  // one is an empty database too, with a warning (printed to stderr and kept in warning()).
  static TuningDb load(const std::string& path);

  const std::string& path() const { return path_; }
  const std::string& warning() const { return warning_; }
  const std::vector<TuningEntry>& entries() const { return entries_; }

  const TuningEntry* find(const std::string& fingerprint, const std::string& target,
                          const std::string& machine) const;
  // Adds `e`, replacing the entry with the same key.
  void put(const TuningEntry& e);
  // Writes the database atomically. A kiln::Error (naming the file and why) when the
  // folder cannot be written, or when the file on disk was not a kiln tuning database.
  void save() const;

 private:
  std::string path_;
  std::string warning_;  // why the file on disk was ignored; saving over it is refused
  std::vector<TuningEntry> entries_;
};

// A compiled model's contraction sizes (its knobs' conv_tiles and matmul_tasks, as the
// database writes them), as JSON text for a schedule file, and back. The text must be an
// object of those two keys (either may be absent); anything else is a json::ParseError
// saying what.
std::string contraction_knobs_to_text(const Knobs& k);
Knobs contraction_knobs_from_text(const std::string& text);

// The database path: `flag` if given, else $KILN_TUNING_DB, else ./kiln_tuning.json where
// the current folder has one, else the per-user one.
std::string tuning_db_path(const std::string& flag = "");
// The per-user database: $XDG_CACHE_HOME/kiln/tuning.json, else ~/.cache/kiln/tuning.json.
std::string user_tuning_db_path();
// For people: which file was read and how many entries it gave, or why none was.
std::string describe(const TuningDb& db);
// The target as a key: the target string without features that change only the runtime
// or calling convention (no_runtime, user_context, jit, ...), so that a schedule tuned
// through the JIT serves the same target built ahead of time.
std::string tuning_target_key(const Halide::Target& target);
// Now, as ISO 8601 UTC: "2026-12-03T07:50:00Z".
std::string utc_now();

}  // namespace kiln::autoschedule
