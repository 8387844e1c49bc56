// Times AOT-compiled variants of a 1024^3 f32 matmul on a CUDA GPU (50 launches, then one
// synchronization), checks 200 points of each against a product in doubles, and for the
// variants with dynamic sizes runs 1001 x 1003 x 997 and 2048 x 2048 x 1024 too. One
// variant per process: ./harness INDEX. See README.md.
#include "HalideBuffer.h"
#include "HalideRuntimeCuda.h"
#include <chrono>
#include <cstdio>
#include <cmath>
#include <vector>
#include <cstdlib>

// variants.h: the headers of the variants and KILN_VARIANTS, a list of X(name, dynamic).
#include "variants.h"
using Buf = Halide::Runtime::Buffer<float>;
typedef int (*Fn)(halide_buffer_t*, halide_buffer_t*, halide_buffer_t*);
int run(const char* name, Fn f, int M, int N, int K) {
  Buf A(K, M), B(N, K), out(N, M);
  for (int y = 0; y < M; ++y) for (int x = 0; x < K; ++x) A(x, y) = float((x * 7 + y * 3) % 13) / 13.f - 0.5f;
  for (int y = 0; y < K; ++y) for (int x = 0; x < N; ++x) B(x, y) = float((x * 5 + y * 11) % 17) / 17.f - 0.5f;
  A.set_host_dirty(); B.set_host_dirty();
  const halide_device_interface_t* cu = halide_cuda_device_interface();
  A.copy_to_device(cu); B.copy_to_device(cu);
  int err = f(A, B, out);
  if (err) { printf("%s %dx%dx%d: error %d\n", name, M, N, K, err); return 1; }
  out.device_sync();
  for (int i = 0; i < 5; ++i) f(A, B, out);
  out.device_sync();
  const int reps = 50;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < reps; ++i) f(A, B, out);
  out.device_sync();
  auto t1 = std::chrono::steady_clock::now();
  double ms = std::chrono::duration<double, std::milli>(t1 - t0).count() / reps;
  out.copy_to_host();
  double worst = 0;
  for (int t = 0; t < 200; ++t) {
    int m = (t * 37) % M, n = (t * 101 + 7) % N; if (t == 0) { m = M - 1; n = N - 1; }
    double d = 0; for (int k = 0; k < K; ++k) d += double(A(k, m)) * B(n, k);
    worst = std::fmax(worst, std::fabs(d - out(n, m)));
  }
  printf("%-16s %5dx%5dx%5d %8.4f ms %6.2f TFLOP/s  worst err %.2e\n", name, M, N, K, ms, 2.0 * M * N * K / ms / 1e9, worst);
  return 0;
}
int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IONBF, 0);
  struct V { const char* name; Fn f; bool dyn; };
  std::vector<V> vs = {
#define X(name, dynamic) {#name, name, dynamic},
      KILN_VARIANTS
#undef X
  };
  int only = argc > 1 ? atoi(argv[1]) : -1;
  for (int round = 0; round < 2; ++round)
    for (size_t i = 0; i < vs.size(); ++i) {
      if (only >= 0 && int(i) != only) continue;
      run(vs[i].name, vs[i].f, 1024, 1024, 1024);
      if (vs[i].dyn && round == 0) { run(vs[i].name, vs[i].f, 1001, 1003, 997); run(vs[i].name, vs[i].f, 2048, 2048, 1024); }
    }
}
