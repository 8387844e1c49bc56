#include "machine_model.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include "core/error.h"

namespace kiln::autoschedule {

namespace {

// "32K", "512K", "32768K", "8M" from /sys/.../cache/indexN/size; -1 when absent.
int64_t read_cache_size(const std::string& path) {
  std::ifstream f(path);
  std::string s;
  if (!(f >> s) || s.empty()) return -1;
  int64_t mult = 1;
  if (s.back() == 'K') mult = 1 << 10;
  if (s.back() == 'M') mult = 1 << 20;
  if (mult != 1) s.pop_back();
  try {
    return std::stoll(s) * mult;
  } catch (...) {
    return -1;
  }
}

std::string read_word(const std::string& path) {
  std::ifstream f(path);
  std::string s;
  f >> s;
  return s;
}

// Fills l1/l2/l3 from sysfs: each indexN directory has level, type and size. Levels
// that are not there keep their defaults (containers without sysfs, unusual CPUs).
void detect_caches(MachineModel& m) {
  const std::string base = "/sys/devices/system/cpu/cpu0/cache/index";
  for (int i = 0; i < 8; ++i) {
    const std::string dir = base + std::to_string(i) + "/";
    const std::string level = read_word(dir + "level"), type = read_word(dir + "type");
    const int64_t size = read_cache_size(dir + "size");
    if (level.empty() || size <= 0 || type == "Instruction") continue;
    if (level == "1") m.l1 = size;
    if (level == "2") m.l2 = size;
    if (level == "3") m.l3 = size;
  }
}

// Each key with a setter; numbers are parsed as double. An integer field takes a whole
// number up to `whole_max` (so that the conversion is exact; 0 for a real-valued field).
constexpr double kWholeInt = 2147483647.0, kWholeInt64 = 9007199254740992.0;  // INT_MAX, 2^53
struct Setter {
  std::function<void(MachineModel&, double)> set;
  double whole_max;
};
const std::map<std::string, Setter>& setters() {
  static const std::map<std::string, Setter> s = {
      {"cores", {[](MachineModel& m, double v) { m.cores = int(v); }, kWholeInt}},
      {"vector_bits", {[](MachineModel& m, double v) { m.vector_bits = int(v); }, kWholeInt}},
      {"fma_units", {[](MachineModel& m, double v) { m.fma_units = int(v); }, kWholeInt}},
      {"fma_latency", {[](MachineModel& m, double v) { m.fma_latency = int(v); }, kWholeInt}},
      {"load_ports", {[](MachineModel& m, double v) { m.load_ports = int(v); }, kWholeInt}},
      {"registers", {[](MachineModel& m, double v) { m.registers = int(v); }, kWholeInt}},
      {"ghz", {[](MachineModel& m, double v) { m.ghz = v; }, 0}},
      {"l1", {[](MachineModel& m, double v) { m.l1 = int64_t(v); }, kWholeInt64}},
      {"l2", {[](MachineModel& m, double v) { m.l2 = int64_t(v); }, kWholeInt64}},
      {"l3", {[](MachineModel& m, double v) { m.l3 = int64_t(v); }, kWholeInt64}},
      {"l1_gbps", {[](MachineModel& m, double v) { m.l1_gbps = v; }, 0}},
      {"l2_gbps", {[](MachineModel& m, double v) { m.l2_gbps = v; }, 0}},
      {"l3_gbps", {[](MachineModel& m, double v) { m.l3_gbps = v; }, 0}},
      {"dram_gbps", {[](MachineModel& m, double v) { m.dram_gbps = v; }, 0}},
      {"task_us", {[](MachineModel& m, double v) { m.task_us = v; }, 0}},
      {"lock_us", {[](MachineModel& m, double v) { m.lock_us = v; }, 0}},
      {"sm_count", {[](MachineModel& m, double v) { m.sm_count = int(v); }, kWholeInt}},
      {"smem_per_block", {[](MachineModel& m, double v) { m.smem_per_block = int64_t(v); }, kWholeInt64}},
      {"regs_per_sm", {[](MachineModel& m, double v) { m.regs_per_sm = int(v); }, kWholeInt}},
      {"gpu_dram_gbps", {[](MachineModel& m, double v) { m.gpu_dram_gbps = v; }, 0}},
      {"gpu_ghz", {[](MachineModel& m, double v) { m.gpu_ghz = v; }, 0}},
      {"gpu_fp32_lanes", {[](MachineModel& m, double v) { m.gpu_fp32_lanes = int(v); }, kWholeInt}},
      {"gpu_threads_per_sm", {[](MachineModel& m, double v) { m.gpu_threads_per_sm = int(v); }, kWholeInt}},
      {"gpu_smem_per_sm", {[](MachineModel& m, double v) { m.gpu_smem_per_sm = int64_t(v); }, kWholeInt64}},
      {"gpu_l2_gbps", {[](MachineModel& m, double v) { m.gpu_l2_gbps = v; }, 0}},
      {"gpu_dram_latency", {[](MachineModel& m, double v) { m.gpu_dram_latency = v; }, 0}},
      {"gpu_l2_latency", {[](MachineModel& m, double v) { m.gpu_l2_latency = v; }, 0}},
      {"launch_us", {[](MachineModel& m, double v) { m.launch_us = v; }, 0}},
  };
  return s;
}

std::string known_keys() {
  std::string k;
  for (const auto& [name, set] : setters()) k += (k.empty() ? "" : ", ") + name;
  return k;
}

}  // namespace

int MachineModel::lanes(const Halide::Type& t) const { return std::max(1, vector_bits / std::max(8, t.bits())); }

double MachineModel::peak_flops() const { return double(cores) * fma_units * (vector_bits / 32) * 2.0 * ghz * 1e9; }

double MachineModel::gpu_peak_flops() const { return double(sm_count) * gpu_fp32_lanes * 2.0 * gpu_ghz * 1e9; }

std::string MachineModel::str() const {
  std::ostringstream o;
  o << "cores=" << cores << " vector_bits=" << vector_bits << " fma_units=" << fma_units
    << " fma_latency=" << fma_latency << " load_ports=" << load_ports << " registers=" << registers << " ghz=" << ghz << " l1=" << l1
    << " l2=" << l2 << " l3=" << l3 << " l1_gbps=" << l1_gbps << " l2_gbps=" << l2_gbps
    << " l3_gbps=" << l3_gbps << " dram_gbps=" << dram_gbps << " task_us=" << task_us << " lock_us=" << lock_us
    << " sm_count=" << sm_count << " smem_per_block=" << smem_per_block << " regs_per_sm=" << regs_per_sm
    << " gpu_dram_gbps=" << gpu_dram_gbps << " gpu_ghz=" << gpu_ghz << " gpu_fp32_lanes=" << gpu_fp32_lanes
    << " gpu_threads_per_sm=" << gpu_threads_per_sm << " gpu_smem_per_sm=" << gpu_smem_per_sm
    << " gpu_l2_gbps=" << gpu_l2_gbps << " gpu_dram_latency=" << gpu_dram_latency
    << " gpu_l2_latency=" << gpu_l2_latency << " launch_us=" << launch_us << " (peak " << peak_flops() / 1e9
    << " GFLOP/s f32)";
  return o.str();
}

void apply_overrides(MachineModel& m, const std::string& spec) {
  std::stringstream ss(spec);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    const std::string key = eq == std::string::npos ? item : item.substr(0, eq);
    auto it = setters().find(key);
    if (eq == std::string::npos || it == setters().end()) {
      user_error("KILN_MACHINE: '", item, "' is not key=value with a known key; the keys are: ", known_keys(),
                 " (e.g. KILN_MACHINE=cores=16,l2=1048576)");
    }
    char* end = nullptr;
    const std::string value = item.substr(eq + 1);
    const double v = std::strtod(value.c_str(), &end);
    // The whole value (a NUL inside it is not its end), finite and positive.
    if (value.empty() || end != value.c_str() + value.size() || !std::isfinite(v) || !(v > 0)) {
      user_error("KILN_MACHINE: the value of '", key, "' must be a positive number, not '", value, "'");
    }
    const double whole_max = it->second.whole_max;
    if (whole_max > 0 && (v != std::floor(v) || v > whole_max)) {
      user_error("KILN_MACHINE: the value of '", key, "' must be a whole number from 1 to ", int64_t(whole_max),
                 ", not '", value, "'");
    }
    it->second.set(m, v);
  }
}

// sm_80 (A100 SXM): 108 SMs of 64 f32 lanes at 1.41 GHz, 48 KiB of shared memory per
// block without opting in (164 KiB per SM), 64K registers and 2048 threads per SM,
// 1.5 TB/s of DRAM. sm_90 (H100 SXM; an H200 has the same SMs and 4.8 TB/s, which
// KILN_MACHINE=gpu_dram_gbps=4800 says): 132 SMs of 128 f32 lanes at 1.98 GHz, 228 KiB
// of shared memory per SM, 3.35 TB/s. Latencies are in SM cycles, from published
// microbenchmarks (L2 hit ~260-300; DRAM ~500 ns under load, 800 cycles on an A100 and
// 1000 on an H100). Where a CUDA driver and GPU are present, machine_model() reads the
// SM count, clocks, memory bus and per-SM limits off the device instead.
void set_gpu_defaults(MachineModel& m, int cuda_capability) {
  m.smem_per_block = 48 << 10;
  m.regs_per_sm = 65536;
  m.gpu_threads_per_sm = 2048;
  m.gpu_dram_latency = cuda_capability >= 90 ? 1000 : 800;
  m.gpu_l2_latency = 300;
  m.launch_us = 5;
  if (cuda_capability >= 90) {
    m.sm_count = 132;
    m.gpu_dram_gbps = 3350;
    m.gpu_ghz = 1.98;
    m.gpu_fp32_lanes = 128;
    m.gpu_smem_per_sm = 228 << 10;
    m.gpu_l2_gbps = 10000;
  } else {
    m.sm_count = 108;
    m.gpu_dram_gbps = 1555;
    m.gpu_ghz = 1.41;
    m.gpu_fp32_lanes = 64;
    m.gpu_smem_per_sm = 164 << 10;
    m.gpu_l2_gbps = 5000;
  }
}

// The first CUDA device's attributes, read through the driver (libcuda.so.1, opened at
// run time, so kiln needs no CUDA to build or to run on a machine without a GPU). False,
// and `m` untouched, where there is no driver or no device. Attribute numbers are the
// driver API's CUdevice_attribute values.
static bool detect_gpu(MachineModel& m) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return false;
  using InitFn = int (*)(unsigned);
  using GetFn = int (*)(int*, int);
  using AttrFn = int (*)(int*, int, int);
  auto init = reinterpret_cast<InitFn>(dlsym(lib, "cuInit"));
  auto get = reinterpret_cast<GetFn>(dlsym(lib, "cuDeviceGet"));
  auto attr = reinterpret_cast<AttrFn>(dlsym(lib, "cuDeviceGetAttribute"));
  int dev = 0;
  if (!init || !get || !attr || init(0) != 0 || get(&dev, 0) != 0) return false;
  auto read = [&](int a) {
    int v = 0;
    return attr(&v, a, dev) == 0 ? v : 0;
  };
  const int major = read(75), minor = read(76);
  if (major <= 0) return false;
  set_gpu_defaults(m, major * 10 + minor);
  if (int v = read(16); v > 0) m.sm_count = v;
  if (int v = read(13); v > 0) m.gpu_ghz = v / 1e6;
  if (int v = read(8); v > 0) m.smem_per_block = v;
  if (int v = read(39); v > 0) m.gpu_threads_per_sm = v;
  if (int v = read(81); v > 0) m.gpu_smem_per_sm = v;
  if (int v = read(82); v > 0) m.regs_per_sm = v;
  const int mem_khz = read(36), bus_bits = read(37);
  if (mem_khz > 0 && bus_bits > 0) m.gpu_dram_gbps = 2.0 * mem_khz * 1e3 * (bus_bits / 8.0) / 1e9;
  return true;
}

// CPU defaults where nothing is detected: one core, a 2.5 GHz core with two vector FMA
// units of 4 cycles' latency and two load ports (every x86 core since Skylake/Zen 3;
// Zen 4 runs a 512-bit FMA on both of its 256-bit units, so one per cycle), 32 KiB L1, 512 KiB L2,
// 16 MiB L3; bandwidths per core of ~40/20/10 bytes per cycle for L1/L2/L3. DRAM
// bandwidth grows with the cores a machine (or a VM's share of a server) has: about
// 7 GB/s per core (kiln_binary streamed 114 GB/s on a 16-core Xeon VM, 14 GB/s on a
// 2-core EPYC VM), at least 20 GB/s, at most 400 GB/s (a 12-channel DDR5 socket).
MachineModel machine_model(const Halide::Target& target) {
  MachineModel m;
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  m.cores = n > 0 ? int(n) : 1;
  m.dram_gbps = std::clamp(7.0 * m.cores, 20.0, 400.0);
  if (target.has_feature(Halide::Target::AVX512)) {
    m.vector_bits = 512;
    m.registers = 32;
    if (target.has_feature(Halide::Target::AVX512_Zen4)) m.fma_units = 1;
  } else if (target.has_feature(Halide::Target::AVX2) || target.has_feature(Halide::Target::AVX)) {
    m.vector_bits = 256;
  } else if (target.arch == Halide::Target::ARM) {
    m.vector_bits = 128;
    m.registers = 32;
  }
  detect_caches(m);
  set_gpu_defaults(m, target.has_feature(Halide::Target::CUDA) ? target.get_cuda_capability_lower_bound() : 80);
  if (target.has_feature(Halide::Target::CUDA)) {
    // The GPU this process can see, once per process.
    static const std::pair<bool, MachineModel> gpu = [] {
      MachineModel g;
      const bool found = detect_gpu(g);
      return std::pair{found, g};
    }();
    if (gpu.first) {
      const MachineModel& g = gpu.second;
      m.sm_count = g.sm_count;
      m.smem_per_block = g.smem_per_block;
      m.regs_per_sm = g.regs_per_sm;
      m.gpu_dram_gbps = g.gpu_dram_gbps;
      m.gpu_ghz = g.gpu_ghz;
      m.gpu_fp32_lanes = g.gpu_fp32_lanes;
      m.gpu_threads_per_sm = g.gpu_threads_per_sm;
      m.gpu_smem_per_sm = g.gpu_smem_per_sm;
      m.gpu_l2_gbps = g.gpu_l2_gbps;
      m.gpu_dram_latency = g.gpu_dram_latency;
      m.gpu_l2_latency = g.gpu_l2_latency;
      m.launch_us = g.launch_us;
    }
  }
  if (const char* env = std::getenv("KILN_MACHINE")) apply_overrides(m, env);
  return m;
}

}  // namespace kiln::autoschedule
