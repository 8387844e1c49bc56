// The one description of the machine kiln's autoscheduler plans for. Everything the cost
// model knows about the hardware lives here, so a wrong prediction is traced to one
// number, and a different machine is one KILN_MACHINE string away:
//
//   KILN_MACHINE="cores=16,l2=1048576,peak_gflops=900,dram_gbps=80" kiln ...
//
// Keys (sizes in bytes, rates per second as noted): cores, vector_bits, fma_units,
// fma_latency, load_ports, registers, ghz, l1, l2, l3, l1_gbps, l2_gbps, l3_gbps, dram_gbps,
// task_us, lock_us; GPU: sm_count, smem_per_block, regs_per_sm, gpu_dram_gbps, gpu_ghz, gpu_fp32_lanes,
// gpu_threads_per_sm, gpu_smem_per_sm, gpu_l2_gbps, gpu_dram_latency, gpu_l2_latency, launch_us.
// CPU values come from the Halide target (SIMD width), sysconf (cores) and
// /sys/devices/system/cpu/cpu0/cache (cache sizes) at run time; what cannot be read takes
// the defaults documented in machine_model.cpp.
#pragma once

#include <Halide.h>

#include <cstdint>
#include <string>

namespace kiln::autoschedule {

struct MachineModel {
  // CPU.
  int cores = 1;
  int vector_bits = 128;   // SIMD register width (SSE 128, AVX2 256, AVX-512 512)
  int fma_units = 2;       // vector FMAs (of vector_bits) issued per cycle per core
  int fma_latency = 4;     // cycles before an FMA's result can feed the next FMA
  int load_ports = 2;      // vector loads per cycle per core
  int registers = 16;      // architectural vector registers
  double ghz = 2.5;        // sustained clock
  int64_t l1 = 32 << 10;   // per core, data
  int64_t l2 = 512 << 10;  // per core
  int64_t l3 = 16 << 20;   // shared
  double l1_gbps = 100, l2_gbps = 50, l3_gbps = 25;  // per core
  double dram_gbps = 20;                             // whole socket (machine_model: 7 per core)
  // Cost of one parallel task to the core that claims and calls it; a larger price made
  // tasks longer than the measured best (docs/autoscheduler.md, "Measurements").
  double task_us = 0.5;
  // The thread pool hands tasks out under one lock: how long it is held per task with two
  // cores claiming (more cores hold it longer: pool_lock_s in cost_model.h). It bounds a
  // stage of short tasks; unpriced, small stages got far more tasks than pay
  // (docs/autoscheduler.md, "Measurements").
  double lock_us = 0.22;

  // GPU (CUDA targets; defaults by compute capability, see set_gpu_defaults).
  int sm_count = 108;
  int64_t smem_per_block = 48 << 10;  // without opting in to more
  int regs_per_sm = 65536;
  double gpu_dram_gbps = 1555;
  double gpu_ghz = 1.41;           // SM clock under load
  int gpu_fp32_lanes = 64;         // f32 FMA lanes per SM
  int gpu_threads_per_sm = 2048;   // resident threads per SM
  int64_t gpu_smem_per_sm = 164 << 10;
  double gpu_l2_gbps = 5000;       // L2 to SMs, whole GPU
  double gpu_dram_latency = 800;   // cycles of a load that misses L2
  double gpu_l2_latency = 300;     // cycles of a load that hits L2
  double launch_us = 5;            // host-side cost of one kernel launch (Halide's runtime included)

  // Lanes of one vector of `t` (at least 1).
  int lanes(const Halide::Type& t) const;
  // Peak FLOP/s of the whole CPU: cores x FMA units x lanes of f32 x 2 flops x clock.
  double peak_flops() const;
  // Peak f32 FLOP/s of the GPU: SMs x FMA lanes x 2 flops x clock.
  double gpu_peak_flops() const;
  // "cores=2 vector_bits=256 ..." in KILN_MACHINE's key=value form.
  std::string str() const;
};

// The machine for `target`: detected, then KILN_MACHINE applied on top. A malformed
// KILN_MACHINE is a kiln::Error naming the bad entry and the keys that exist.
MachineModel machine_model(const Halide::Target& target);
// Applies "key=value,key=value" overrides to `m` (the parser behind KILN_MACHINE).
void apply_overrides(MachineModel& m, const std::string& spec);
// GPU defaults for a CUDA compute capability (80: A100, 90: H100/H200; others take sm_80's).
void set_gpu_defaults(MachineModel& m, int cuda_capability);

}  // namespace kiln::autoschedule
