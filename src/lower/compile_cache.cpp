#include "lower/compile_cache.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include "autoscheduler/autoscheduler.h"
#include "core/error.h"
#include "core/float_env.h"
#include "core/memory.h"
#include "lower/lower_to_halide.h"
#include "lower/target.h"

extern char** environ;

namespace kiln::compile_cache {

namespace fs = std::filesystem;

namespace {

constexpr const char* kFormat = "kiln compiled pipeline 1";
constexpr const char* kFunction = "kiln_pipeline";

// FNV-1a, 64 bits, eight bytes at a time where it can (a checksum and a key, not security).
struct Hash {
  uint64_t a = 0xcbf29ce484222325ull, b = 0x84222325cbf29ce4ull;
  void add(const void* data, size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      uint64_t w;
      std::memcpy(&w, p + i, 8);
      a = (a ^ w) * 0x100000001b3ull;
      b = (b ^ (w >> 7 | w << 57)) * 0x100000001b3ull;
    }
    for (; i < n; ++i) {
      a = (a ^ p[i]) * 0x100000001b3ull;
      b = (b ^ (p[i] + 0x9e)) * 0x100000001b3ull;
    }
  }
  void add(const std::string& s) {
    const uint64_t n = s.size();
    add(&n, sizeof(n));
    add(s.data(), s.size());
  }
  std::string hex() const {
    char buf[40];
    std::snprintf(buf, sizeof(buf), "%016llx%016llx", static_cast<unsigned long long>(a),
                  static_cast<unsigned long long>(b));
    return buf;
  }
};

bool read_file(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return bool(in) || in.eof();
}

std::string checksum(const std::string& bytes) {
  Hash h;
  h.add(bytes.data(), bytes.size());
  return h.hex();
}

// The file kiln's code is in (the program, or a shared libkiln), by content: computed
// once per process.
const std::string& binary_identity() {
  static const std::string id = [] {
    Dl_info info{};
    std::string path = "/proc/self/exe";
    if (dladdr(reinterpret_cast<void*>(&binary_identity), &info) && info.dli_fname && *info.dli_fname) {
      std::error_code ec;
      if (fs::exists(info.dli_fname, ec)) path = info.dli_fname;
    }
    std::string bytes;
    if (!read_file(path, &bytes)) return std::string("unreadable:") + path;
    return checksum(bytes);
  }();
  return id;
}

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}

// KILN_* settings that can change what is compiled (all but logging and the cache's own).
std::string kiln_settings() {
  std::vector<std::string> vars;
  for (char** e = environ; e && *e; ++e) {
    const std::string kv = *e;
    if (kv.rfind("KILN_", 0) != 0) continue;
    const std::string name = kv.substr(0, kv.find('='));
    if (name == "KILN_LOG" || name == "KILN_CACHE" || name == "KILN_CACHE_DIR" || name == "KILN_CC" ||
        name.rfind("KILN_TEST", 0) == 0) {
      continue;
    }
    vars.push_back(kv);
  }
  std::sort(vars.begin(), vars.end());
  std::string out;
  for (const std::string& v : vars) out += v + "\n";
  return out;
}

std::string halide_version() {
  return std::to_string(HALIDE_VERSION_MAJOR) + "." + std::to_string(HALIDE_VERSION_MINOR) + "." +
         std::to_string(HALIDE_VERSION_PATCH);
}

// The runtime hooks of a loaded entry: errors into the caller's message, kiln's memory
// statistics, and the flush-to-zero state on every worker thread (as Kernel's JIT has).
struct CallContext {
  std::string message;
};
void on_error(void* ucon, const char* msg) {
  if (ucon) static_cast<CallContext*>(ucon)->message += msg;
}
void* on_malloc(void*, size_t bytes) { return detail::tracked_malloc(bytes); }
void on_free(void*, void* ptr) { detail::tracked_free(ptr); }
int on_task(void* ucon, int (*f)(void*, int, uint8_t*), int idx, uint8_t* closure) {
  detail::ScopedFlushDenormals flush;
  return f(ucon, idx, closure);
}

template <class Fn>
bool hook(void* handle, const char* name, Fn fn) {
  using Setter = Fn (*)(Fn);
  void* s = dlsym(handle, name);
  if (!s) return false;
  reinterpret_cast<Setter>(s)(fn);
  return true;
}

void remove_entry(const std::string& base) {
  std::error_code ec;
  fs::remove(base + ".so", ec);
  fs::remove(base + ".meta", ec);
}

std::string c_compiler() { return env_or("KILN_CC", "cc"); }

// An exclusive lock on the entry `key` (flock on `key`.lock in the cache, so it holds
// between processes and between threads of one process) for as long as this lives. Whoever
// reads, checks, removes or publishes an entry holds it: each of those is a few file
// operations, never a compile, and without it a reader could pair one writer's object
// with another's description (Halide names code per process, so two compiles of one
// graph differ in bytes) and remove a good entry as corrupt. The lock file stays.
class EntryLock {
 public:
  explicit EntryLock(const std::string& key) {
    const std::string path = directory() + "/" + key + ".lock";
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) return;  // a read-only cache: its entries are read, never written
    while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
    }
  }
  ~EntryLock() {
    if (fd_ >= 0) ::close(fd_);  // closing releases the lock
  }
  EntryLock(const EntryLock&) = delete;
  EntryLock& operator=(const EntryLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace

std::string directory() {
  const std::string on = env_or("KILN_CACHE", "1");
  if (on == "0" || on == "off" || on == "false") return "";
  if (const char* d = std::getenv("KILN_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x == '/') return std::string(x) + "/kiln/compiled";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/kiln/compiled";
  return "";
}

std::string key_of(const Graph& graph, const std::vector<Tensor>& example_inputs, const Halide::Target& target,
                   const std::string& scheduler, std::string* why) {
  if (directory().empty()) {
    *why = "the cache is off (KILN_CACHE=0, or no KILN_CACHE_DIR, XDG_CACHE_HOME or HOME)";
    return "";
  }
  if (target_has_gpu(target)) {
    *why = "CUDA pipelines are not cached; compiled just in time";
    return "";
  }
  Hash h;
  h.add(std::string(kFormat));
  h.add(graph.str());
  for (const Node& n : graph.nodes()) {
    // Constants of rank >= 1 are arguments of the cached pipeline; 0-d ones are in its code.
    if (!n.is_constant() || n.meta.shape.rank() != 0) continue;
    const Tensor v = n.constant.to_host();
    h.add(v.data(), size_t(dtype_bytes(v.dtype())));
  }
  for (const Tensor& t : example_inputs) h.add(t.shape().str());
  h.add(target.to_string());
  h.add(scheduler);
  if (scheduler == "Kiln") {
    std::string db;
    const std::string path = autoschedule::tuning_db_path();
    h.add(path);
    if (read_file(path, &db)) h.add(db);
    h.add(autoschedule::machine_model(target).str());
  }
  h.add(kiln_settings());
  h.add(halide_version());
  h.add(binary_identity());
  return h.hex();
}

std::shared_ptr<Entry> Entry::make(void* handle, int (*argv)(void**)) {
  std::shared_ptr<Entry> e(new Entry);
  e->handle_ = handle;
  e->argv_ = argv;
  return e;
}

int Entry::call(const std::vector<const void*>& buffers, std::string* message) const {
  CallContext ctx;
  void* ucon = &ctx;
  std::vector<void*> argv;
  argv.push_back(&ucon);
  for (const void* b : buffers) argv.push_back(const_cast<void*>(b));
  int err;
  {
    detail::ScopedFlushDenormals flush;
    err = argv_(argv.data());
  }
  *message = ctx.message;
  return err;
}

namespace {

// Loads `bytes` (a verified shared object) from a private copy beside the cache's entries
// (so $ORIGIN finds the runtime), unlinked once loaded: what runs is what was checked, and
// nothing that later rewrites or truncates the entry in place can reach the loaded code.
void* load_private(const std::string& bytes, std::string* why) {
  static std::atomic<int> counter{0};
  const std::string path =
      directory() + "/tmp-load-" + std::to_string(getpid()) + "-" + std::to_string(counter++) + ".so";
  {
    std::ofstream out(path, std::ios::binary);
    out.write(bytes.data(), std::streamsize(bytes.size()));
    if (!out) {
      *why = "cannot write a private copy at " + path;
      std::error_code ec;
      fs::remove(path, ec);
      return nullptr;
    }
  }
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  const char* e = handle ? nullptr : dlerror();
  std::error_code ec;
  fs::remove(path, ec);
  if (!handle) *why = std::string("it does not load: ") + (e ? e : "unknown dlopen error");
  return handle;
}

// Checks the entry `key`: its description's format, key and Halide version, the shared
// object's size and checksum; its bytes into *so and the runtime it names into *runtime.
// A failing entry is removed and `why` says what was wrong; a missing one is "no entry".
bool verify(const std::string& key, std::string* why, std::string* so, std::string* runtime) {
  const std::string base = directory() + "/" + key;
  std::string meta;
  if (!read_file(base + ".meta", &meta)) {
    *why = "no entry";
    return false;
  }
  std::istringstream in(meta);
  std::string format, line;
  std::getline(in, format);
  std::string k, halide, sum;
  uint64_t bytes = 0;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string name;
    f >> name;
    if (name == "key") f >> k;
    else if (name == "halide") f >> halide;
    else if (name == "bytes") f >> bytes;
    else if (name == "checksum") f >> sum;
    else if (name == "runtime") f >> *runtime;
  }
  auto reject = [&](const std::string& what) {
    *why = "the entry " + base + ".so " + what + "; removed, compiling again";
    remove_entry(base);
    return false;
  };
  if (format != kFormat) return reject("is of another format ('" + format + "', expected '" + kFormat + "')");
  if (k != key) return reject("belongs to another key (" + k + ")");
  if (halide != halide_version()) return reject("was built by Halide " + halide + ", not " + halide_version());
  if (!read_file(base + ".so", so)) return reject("is missing or unreadable");
  if (so->size() != bytes) {
    return reject("is truncated or overwritten (" + std::to_string(so->size()) + " bytes, the entry says " +
                  std::to_string(bytes) + ")");
  }
  if (checksum(*so) != sum) return reject("is corrupt (its checksum does not match)");
  return true;
}

bool verify(const std::string& key, std::string* why) {
  std::string so, runtime;
  return verify(key, why, &so, &runtime);
}

// The runtime `key`, loaded once per process (its SONAME then satisfies every pipeline
// that names it); false with `why` where it fails its checks.
bool load_runtime(const std::string& key, std::string* why) {
  static std::mutex mu;
  static std::map<std::string, void*> loaded;
  std::lock_guard<std::mutex> lock(mu);
  if (loaded.count(key)) return true;
  EntryLock entry_lock(key);
  std::string so, none;
  if (!verify(key, why, &so, &none)) return false;
  void* handle = load_private(so, why);
  if (!handle) {
    remove_entry(directory() + "/" + key);
    return false;
  }
  using ErrorFn = void (*)(void*, const char*);
  using MallocFn = void* (*)(void*, size_t);
  using FreeFn = void (*)(void*, void*);
  using TaskFn = int (*)(void*, int (*)(void*, int, uint8_t*), int, uint8_t*);
  const bool hooked = hook<ErrorFn>(handle, "halide_set_error_handler", on_error) &&
                      hook<MallocFn>(handle, "halide_set_custom_malloc", on_malloc) &&
                      hook<FreeFn>(handle, "halide_set_custom_free", on_free) &&
                      hook<TaskFn>(handle, "halide_set_custom_do_task", on_task);
  if (!hooked) {
    *why = "the runtime " + key + " lacks Halide's runtime hooks; removed";
    remove_entry(directory() + "/" + key);
    return false;  // never dlclose: its worker threads may have started
  }
  loaded[key] = handle;
  return true;
}

// load(), for a caller that holds the entry's lock.
std::shared_ptr<Entry> load_locked(const std::string& key, std::string* why) {
  std::string so, runtime;
  if (!verify(key, why, &so, &runtime)) return nullptr;
  const std::string base = directory() + "/" + key;
  std::string runtime_why;
  if (runtime.empty() || !load_runtime(runtime, &runtime_why)) {
    *why = "the entry " + base + ".so needs the runtime " + (runtime.empty() ? "(none named)" : runtime) +
           ", which failed: " + runtime_why + "; compiling again";
    remove_entry(base);
    return nullptr;
  }
  void* handle = load_private(so, why);
  int (*argv)(void**) = nullptr;
  if (handle) {
    argv = reinterpret_cast<int (*)(void**)>(dlsym(handle, (std::string(kFunction) + "_argv").c_str()));
    if (!argv) *why = "it lacks " + std::string(kFunction) + "_argv";
  }
  if (!handle || !argv) {
    *why = "the entry " + base + ".so " + *why + "; removed, compiling again";
    remove_entry(base);
    return nullptr;
  }
  return Entry::make(handle, argv);
}

}  // namespace

std::shared_ptr<Entry> load(const std::string& key, std::string* why) {
  EntryLock entry_lock(key);
  return load_locked(key, why);
}

namespace {

std::string write_meta(const std::string& path, const std::string& key, const std::string& bytes,
                       const std::string& runtime) {
  std::ofstream m(path);
  m << kFormat << "\nkey " << key << "\nhalide " << halide_version() << "\nbytes " << bytes.size() << "\nchecksum "
    << checksum(bytes) << "\n";
  if (!runtime.empty()) m << "runtime " << runtime << "\n";
  if (!m) user_error("compile cache: cannot write ", path);
  return path;
}

// A scratch folder in the cache, removed with this object.
struct Scratch {
  std::string dir;
  explicit Scratch(const std::string& cache) {
    static std::atomic<int> counter{0};
    dir = cache + "/tmp-" + std::to_string(getpid()) + "-" + std::to_string(counter++);
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) user_error("compile cache: cannot create ", dir, ": ", ec.message(), "; set KILN_CACHE_DIR or KILN_CACHE=0");
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

// Links `inputs` into the shared object `so` (`extra`: more linker arguments).
void link_shared(const std::string& so, const std::string& inputs, const std::string& extra, const std::string& scratch) {
  const std::string log_file = scratch + "/link.txt";
  const std::string cmd = c_compiler() + " -shared -o '" + so + "' " + inputs + " -Wl,-Bsymbolic " + extra +
                          " -lpthread -ldl -lm > '" + log_file + "' 2>&1";
  if (std::system(cmd.c_str()) != 0) {
    std::string out;
    read_file(log_file, &out);
    user_error("compile cache: linking a shared object failed (", cmd, "): ", out.empty() ? "no output" : out,
               "; install a C compiler (cc), set KILN_CC, or KILN_CACHE=0");
  }
}

// Moves a built shared object and its description into the cache under `base`: the
// object first, its description last, each by rename (atomic), so a reader sees a whole
// entry or none (a stale pair fails its checksum and is rebuilt).
void publish(const std::string& so, const std::string& key, const std::string& base, const std::string& scratch,
             const std::string& runtime = "") {
  std::string bytes;
  if (!read_file(so, &bytes)) user_error("compile cache: cannot read back ", so);
  const std::string meta = write_meta(scratch + "/entry.meta", key, bytes, runtime);
  std::error_code ec;
  fs::rename(so, base + ".so", ec);
  if (!ec) fs::rename(meta, base + ".meta", ec);
  if (ec) user_error("compile cache: cannot move an entry into place as ", base, ".so: ", ec.message());
}

// The Halide runtime every cached pipeline of `target` links against (one shared object
// per target and Halide version: pipelines are compiled without a runtime of their own).
// Returns its key; builds it where it is missing or fails its checks.
std::string runtime_for(const Halide::Target& target) {
  Hash h;
  h.add(std::string(kFormat));
  h.add(std::string("runtime"));
  h.add(target.with_feature(Halide::Target::UserContext).to_string());
  h.add(halide_version());
  const std::string key = "runtime-" + h.hex(), dir = directory();
  EntryLock entry_lock(key);  // held while compiling: one thread or process builds it
  std::string why;
  if (verify(key, &why)) return key;
  Scratch scratch(dir);
  const std::string obj = scratch.dir + "/runtime.o", so = scratch.dir + "/runtime.so";
  with_halide_errors("compiling Halide's runtime for the compile cache",
                     [&] { Halide::compile_standalone_runtime(obj, target.with_feature(Halide::Target::UserContext)); });
  link_shared(so, "'" + obj + "'", "-Wl,-soname," + key + ".so", scratch.dir);
  publish(so, key, dir + "/" + key, scratch.dir);
  return key;
}

}  // namespace

std::shared_ptr<Entry> build(const std::string& key, const LoweredGraph& lowered, const Halide::Target& target) {
  const std::string dir = directory();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) user_error("compile cache: cannot create ", dir, ": ", ec.message(), "; set KILN_CACHE_DIR or KILN_CACHE=0");
  const std::string runtime = runtime_for(target);
  Scratch scratch(dir);
  // One object file, not Halide's static library: writing an archive changes the
  // process's working directory (chdir), which races with every other thread.
  const std::string obj = scratch.dir + "/p.o", so = scratch.dir + "/p.so";
  with_halide_errors("compiling ahead of time for the compile cache", [&] {
    lowered.pipeline().compile_to(
        {{Halide::OutputFileType::object, obj}}, lowered.arguments(), kFunction,
        target.with_feature(Halide::Target::UserContext).with_feature(Halide::Target::NoRuntime));
  });
  // The runtime is found beside the pipeline ($ORIGIN), loaded once for all of them.
  link_shared(so, "'" + obj + "'",
              "-L'" + dir + "' -l:" + runtime + ".so -Wl,-rpath,'$ORIGIN'", scratch.dir);
  const std::string base = dir + "/" + key;
  EntryLock entry_lock(key);
  publish(so, key, base, scratch.dir, runtime);
  std::string why;
  auto entry = load_locked(key, &why);
  if (!entry) user_error("compile cache: the pipeline just built does not load: ", why);
  return entry;
}

}  // namespace kiln::compile_cache
