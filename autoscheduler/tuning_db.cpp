#include "tuning_db.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "core/error.h"
#include "json.h"

namespace kiln::autoschedule {

namespace {

json::Value knobs_to_json(const Knobs& k) {
  json::Object tiles, bands, fusion, lanes, conv_tiles, matmul_tasks, gpu_tiles, gpu_blocks, gpu_rows;
  for (const auto& [f, t] : k.tiles) {
    tiles[f] = json::Object{{"rows", t.rows},   {"vectors", t.vectors}, {"lanes", t.lanes},
                            {"block", t.block}, {"band", t.band},       {"parallel", t.parallel}};
  }
  for (const auto& [f, b] : k.bands) bands[f] = b;
  for (const auto& [f, p] : k.fusion) fusion[f] = std::string(fusion_name(p));
  for (const auto& [f, l] : k.lanes) lanes[f] = l;
  for (const auto& [f, t] : k.conv_tiles) conv_tiles[f] = json::Object{{"vectors", t.vectors}, {"channels", t.channels}};
  for (const auto& [f, t] : k.matmul_tasks) {
    matmul_tasks[f] = json::Object{
        {"band", t.band}, {"column_tiles", t.column_tiles}, {"per_batch", t.per_batch}, {"pack_b", t.pack_b}};
  }
  for (const auto& [f, t] : k.gpu_tiles) {
    gpu_tiles[f] = json::Object{{"rows", t.rows}, {"cols", t.cols}, {"tx", t.tx}, {"ty", t.ty}, {"unroll", t.unroll}};
  }
  for (const auto& [f, t] : k.gpu_blocks) gpu_blocks[f] = json::Object{{"tx", t.tx}, {"ty", t.ty}, {"e", t.e}};
  for (const auto& [f, t] : k.gpu_rows) gpu_rows[f] = json::Object{{"threads", t.threads}, {"rows", t.rows}};
  return json::Object{{"tiles", tiles},         {"bands", bands},           {"fusion", fusion},     {"lanes", lanes},
                      {"conv_tiles", conv_tiles}, {"matmul_tasks", matmul_tasks}, {"gpu_tiles", gpu_tiles},
                      {"gpu_blocks", gpu_blocks}, {"gpu_rows", gpu_rows}};
}

// A whole number that fits an int: the range is checked before the conversion, which is
// undefined for a double out of range (5e62 in a corrupt file).
int integer(const json::Value& v) {
  const double d = v.as_number();
  if (!(d >= double(INT_MIN) && d <= double(INT_MAX)) || d != std::floor(d)) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", d);
    throw json::ParseError{std::string("expected an integer from ") + std::to_string(INT_MIN) + " to " +
                           std::to_string(INT_MAX) + ", not " + buf};
  }
  return int(d);
}

// The object under `key`, or an empty one (entries written before GPU, fusion, lanes,
// conv tile or matmul task knobs lack them).
const json::Object& object_or_empty(const json::Value& v, const std::string& key) {
  static const json::Object empty;
  return v.has(key) ? v.at(key).as_object() : empty;
}

// Entries written before per-batch fusion lack "per_batch" (false), and before b could be
// read in place, "pack_b" (true).
MatmulTasks matmul_tasks_from_json(const json::Value& t) {
  return {integer(t.at("band")), integer(t.at("column_tiles")), t.has("per_batch") && t.at("per_batch").as_bool(),
          !t.has("pack_b") || t.at("pack_b").as_bool()};
}

Knobs knobs_from_json(const json::Value& v) {
  Knobs k;
  for (const auto& [f, t] : v.at("tiles").as_object()) {
    k.tiles[f] = {integer(t.at("rows")), integer(t.at("vectors")), integer(t.at("lanes")), t.at("block").as_number(),
                  integer(t.at("band")), t.at("parallel").as_bool()};
  }
  for (const auto& [f, b] : v.at("bands").as_object()) k.bands[f] = integer(b);
  for (const auto& [f, p] : object_or_empty(v, "fusion")) {
    const std::string& name = p.as_string();
    bool known = false;
    for (Fusion x : {Fusion::Inline, Fusion::Root, Fusion::PerRow}) {
      if (name == fusion_name(x)) k.fusion[f] = x, known = true;
    }
    if (!known) throw json::ParseError{"fusion of " + f + " is '" + name + "', not inline, root or row"};
  }
  for (const auto& [f, l] : object_or_empty(v, "lanes")) k.lanes[f] = integer(l);
  for (const auto& [f, t] : object_or_empty(v, "conv_tiles")) {
    k.conv_tiles[f] = {integer(t.at("vectors")), integer(t.at("channels"))};
  }
  for (const auto& [f, t] : object_or_empty(v, "matmul_tasks")) k.matmul_tasks[f] = matmul_tasks_from_json(t);
  for (const auto& [f, t] : object_or_empty(v, "gpu_tiles")) {
    k.gpu_tiles[f] = {integer(t.at("rows")), integer(t.at("cols")), integer(t.at("tx")), integer(t.at("ty")),
                      integer(t.at("unroll"))};
  }
  for (const auto& [f, t] : object_or_empty(v, "gpu_blocks")) {
    k.gpu_blocks[f] = {integer(t.at("tx")), integer(t.at("ty")), integer(t.at("e"))};
  }
  for (const auto& [f, t] : object_or_empty(v, "gpu_rows")) {
    k.gpu_rows[f] = {integer(t.at("threads")), integer(t.at("rows"))};
  }
  return k;
}

json::Value contraction_knobs_json(const Knobs& k) {
  const json::Value all = knobs_to_json(k);
  return json::Object{{"conv_tiles", all.at("conv_tiles")}, {"matmul_tasks", all.at("matmul_tasks")}};
}

json::Value entry_to_json(const TuningEntry& e) {
  return json::Object{{"fingerprint", e.fingerprint},   {"target", e.target},         {"machine", e.machine},
                      {"generator", e.generator},       {"knobs", knobs_to_json(e.knobs)}, {"schedule", e.schedule},
                      {"measured_ms", e.measured_ms},   {"predicted_ms", e.predicted_ms}, {"date", e.date}};
}

TuningEntry entry_from_json(const json::Value& v) {
  TuningEntry e;
  e.fingerprint = v.at("fingerprint").as_string();
  e.target = v.at("target").as_string();
  e.machine = v.at("machine").as_string();
  e.generator = v.at("generator").as_string();
  e.knobs = knobs_from_json(v.at("knobs"));
  e.schedule = v.at("schedule").as_string();
  e.measured_ms = v.at("measured_ms").as_number();
  e.predicted_ms = v.at("predicted_ms").as_number();
  e.date = v.at("date").as_string();
  return e;
}

// The entries of a database file's text; a json::ParseError says why it is not one.
std::vector<TuningEntry> parse_db(const std::string& text) {
  const json::Value doc = json::parse(text);
  if (!doc.is_object() || !doc.has("format") || !doc.at("format").is_string() ||
      doc.at("format").as_string() != kTuningDbFormat) {
    throw json::ParseError{std::string("not a kiln tuning database (no \"format\": \"") + kTuningDbFormat + "\")"};
  }
  if (!doc.has("version") || !doc.at("version").is_number() || doc.at("version").as_number() != kTuningDbVersion) {
    throw json::ParseError{"version " + (doc.has("version") ? json::dump(doc.at("version")).substr(0, 20) : "(none)") +
                           ", this kiln reads version " + std::to_string(kTuningDbVersion)};
  }
  std::vector<TuningEntry> entries;
  size_t i = 0;
  for (const json::Value& e : doc.at("entries").as_array()) {
    try {
      entries.push_back(entry_from_json(e));
    } catch (const json::ParseError& err) {
      throw json::ParseError{"entry " + std::to_string(i) + ": " + err.message};
    }
    ++i;
  }
  return entries;
}

std::string folder_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// Writes `text` to `path` through a temporary file in the same folder (rename is atomic
// only within one file system) that is flushed to disk before it replaces `path`.
void write_atomically(const std::string& path, const std::string& text) {
  // The per-user default's folder is made on first use; any other must exist.
  if (path == user_tuning_db_path()) {
    std::error_code ignored;
    std::filesystem::create_directories(folder_of(path), ignored);
  }
  const std::string tmp = folder_of(path) + "/.kiln_tuning." + std::to_string(getpid()) + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) {
    user_error("cannot write the tuning database ", path, ": cannot create ", tmp, " (", std::strerror(errno),
               "); pass --db PATH (or set KILN_TUNING_DB) to a file in a writable folder");
  }
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n <= 0) break;
    done += size_t(n);
  }
  const bool ok = done == text.size() && ::fsync(fd) == 0;
  const int err = errno;
  ::close(fd);
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = ok ? errno : err;
    std::remove(tmp.c_str());
    user_error("cannot write the tuning database ", path, " (", std::strerror(e), "); it is left as it was");
  }
}

}  // namespace

TuningDb TuningDb::load(const std::string& path) {
  TuningDb db;
  db.path_ = path;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (::access(path.c_str(), F_OK) == 0) db.warning_ = "cannot be read";
  } else {
    std::ostringstream text;
    text << in.rdbuf();
    try {
      db.entries_ = parse_db(text.str());
    } catch (const json::ParseError& e) {
      db.warning_ = e.message;
    }
  }
  if (!db.warning_.empty()) {
    std::cerr << "Warning: kiln tuning database " << path << ": " << db.warning_ << "; ignoring it\n";
  }
  return db;
}

const TuningEntry* TuningDb::find(const std::string& fingerprint, const std::string& target,
                                  const std::string& machine) const {
  for (const TuningEntry& e : entries_) {
    if (e.fingerprint == fingerprint && e.target == target && e.machine == machine) return &e;
  }
  return nullptr;
}

void TuningDb::put(const TuningEntry& e) {
  for (TuningEntry& old : entries_) {
    if (old.fingerprint == e.fingerprint && old.target == e.target && old.machine == e.machine) {
      old = e;
      return;
    }
  }
  entries_.push_back(e);
}

void TuningDb::save() const {
  if (!warning_.empty()) {
    user_error("refusing to overwrite ", path_, ", which is not a kiln tuning database this kiln reads (", warning_,
               "); move it away or pass --db PATH (or set KILN_TUNING_DB) to another file");
  }
  json::Array entries;
  for (const TuningEntry& e : entries_) entries.push_back(entry_to_json(e));
  const json::Value doc =
      json::Object{{"format", kTuningDbFormat}, {"version", kTuningDbVersion}, {"entries", std::move(entries)}};
  write_atomically(path_, json::dump(doc));
}

std::string tuning_db_path(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* env = std::getenv("KILN_TUNING_DB"); env && *env) return env;
  if (::access("./kiln_tuning.json", F_OK) == 0) return "./kiln_tuning.json";  // a project's own
  return user_tuning_db_path();
}

std::string user_tuning_db_path() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg == '/') return std::string(xdg) + "/kiln/tuning.json";
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.cache/kiln/tuning.json";
  return "./kiln_tuning.json";
}

std::string describe(const TuningDb& db) {
  if (!db.warning().empty()) return "tuning database " + db.path() + " ignored (" + db.warning() + ")";
  if (db.entries().empty()) return "no tuning database at " + db.path() + " (the cost model decides)";
  return "tuning database " + db.path() + " (" + std::to_string(db.entries().size()) + " entries)";
}

std::string tuning_target_key(const Halide::Target& target) {
  using F = Halide::Target::Feature;
  Halide::Target t = target;
  for (F f : {F::NoRuntime, F::UserContext, F::JIT, F::Debug, F::NoAsserts, F::NoBoundsQuery, F::Profile,
              F::TraceLoads, F::TraceStores, F::TraceRealizations, F::TracePipeline}) {
    t = t.without_feature(f);
  }
  return t.to_string();
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string contraction_knobs_to_text(const Knobs& k) { return json::dump(contraction_knobs_json(k)); }

Knobs contraction_knobs_from_text(const std::string& text) {
  const json::Value v = json::parse(text);
  if (!v.is_object()) throw json::ParseError{"expected an object with \"conv_tiles\" and \"matmul_tasks\""};
  for (const auto& [key, value] : v.as_object()) {
    if (key != "conv_tiles" && key != "matmul_tasks") {
      throw json::ParseError{"'" + key + "' is not a contraction's size; the keys are \"conv_tiles\" and \"matmul_tasks\""};
    }
  }
  Knobs k;
  for (const auto& [f, t] : object_or_empty(v, "conv_tiles")) {
    k.conv_tiles[f] = {integer(t.at("vectors")), integer(t.at("channels"))};
  }
  for (const auto& [f, t] : object_or_empty(v, "matmul_tasks")) k.matmul_tasks[f] = matmul_tasks_from_json(t);
  return k;
}

}  // namespace kiln::autoschedule
