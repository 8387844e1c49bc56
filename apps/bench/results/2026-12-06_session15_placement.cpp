// Session 15's placement experiment (raw artifact, not built by CMake): does a memory-bound
// kernel's time depend on where its buffers lie, or on where its code lies?
//   pl u|b b   one compiled kernel (unary relu or binary add, 2048x4096 f32, Adams2019's and
//              kiln's loop nest: tasks of 8 rows, 16 lanes), six sets of buffers
//   pl u|b c   six compiled copies of the kernel, one set of buffers
//   pl b m     six sets: three with a, b, out at the same offset in their 2 MB pages, three
//              with b and out staggered by 704 KB + 128 B and twice that
// Each prints the six medians (15 interleaved rounds of the median of 30 runs) and, for
// buffer sets, the fraction of each buffer's 2 MB chunks backed by a huge page (root only).
// Build: g++ -O2 -std=c++17 pl.cpp -I$HALIDE/include -L$HALIDE/lib64 -lHalide
#include "Halide.h"
#include <cstdio>
#include <chrono>
#include <algorithm>
#include <sys/mman.h>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>
// Fraction of a buffer's 2 MB chunks that the kernel backs with a transparent huge page
// (pagemap PFN, then kpageflags bit 22; needs root), or -1 where that cannot be read.
static double thp_fraction(const void* p, size_t bytes){
  int pm=open("/proc/self/pagemap",O_RDONLY), kf=open("/proc/kpageflags",O_RDONLY);
  if(pm<0||kf<0){ if(pm>=0) close(pm); if(kf>=0) close(kf); return -1; }
  size_t chunks=0, thp=0;
  for(size_t off=0; off<bytes; off+=2<<20){
    uint64_t e=0, f=0; uintptr_t va=(uintptr_t)p+off;
    if(pread(pm,&e,8,(va/4096)*8)!=8) break;
    uint64_t pfn=e&((1ull<<55)-1); if(!(e>>63)||!pfn){ chunks++; continue; }
    if(pread(kf,&f,8,pfn*8)!=8) break;
    chunks++; thp+=(f>>22)&1;
  }
  close(pm); close(kf); return chunks? double(thp)/chunks : -1;
}
using namespace Halide;
static float* big(size_t n, size_t off=0){ void*p=mmap(nullptr,n*4+(4<<20),PROT_READ|PROT_WRITE,MAP_PRIVATE|MAP_ANONYMOUS,-1,0);
  char*c=(char*)(((uintptr_t)p+(2<<20)-1)&~uintptr_t((2<<20)-1)); madvise(c,n*4+(2<<20),MADV_HUGEPAGE); c+=off; float*f=(float*)c; for(size_t i=0;i<n;i++) f[i]=(i%7)-3.f; return f;}
int main(int argc,char**argv){
  int W=4096,H=2048; bool bin=argv[1][0]=='b'; bool code=argv[2][0]=='c'; bool mixed=argv[2][0]=='m'; int K=6;
  Target t=get_host_target();
  std::vector<Pipeline> ps; std::vector<ImageParam> xs,ys;
  std::vector<Buffer<float>> A,B,O;
  for(int k=0;k<K;k++){
    if(k==0||!code){ size_t st=(mixed&&k>=K/2)? (704<<10)+128 : 0; A.emplace_back(big((size_t)W*H),W,H); B.emplace_back(big((size_t)W*H,st),W,H); O.emplace_back(big((size_t)W*H,2*st),W,H);}
    if(k==0||code){
      ImageParam x(Float(32),2,"x"), y(Float(32),2,"y"); Var d0("d0"),d1("d1"),d1i("d1i");
      Func out("out"); if(bin) out(d0,d1)=x(d0,d1)+y(d0,d1); else out(d0,d1)=max(x(d0,d1),0.f);
      out.split(d1,d1,d1i,8,TailStrategy::ShiftInwards).vectorize(d0,16).parallel(d1);
      Pipeline p(out); p.compile_jit(t); ps.push_back(p); xs.push_back(x); ys.push_back(y);}
  }
  auto run=[&](int k){ int pi=code?k:0, bi=code?0:k; xs[pi].set(A[bi]); ys[pi].set(B[bi]); ps[pi].realize(O[bi]); };
  for(int k=0;k<K;k++) for(int i=0;i<50;i++) run(k);
  std::vector<std::vector<double>> ts(K);
  for(int r=0;r<15;r++) for(int j=0;j<K;j++){ int k=(j+r)%K; std::vector<double> v;
    for(int i=0;i<30;i++){ auto t0=std::chrono::steady_clock::now(); run(k); v.push_back(std::chrono::duration<double,std::milli>(std::chrono::steady_clock::now()-t0).count());}
    std::sort(v.begin(),v.end()); ts[k].push_back(v[15]);}
  printf("%s %s:", bin?"binary":"unary", code?"code":mixed?"3 aligned, 3 staggered":"bufs");
  for(int k=0;k<K;k++){ std::sort(ts[k].begin(),ts[k].end()); printf(" %.3f",ts[k][7]);}
  if(!code){ printf("  thp:"); for(int k=0;k<K;k++) printf(" %.2f/%.2f/%.2f", thp_fraction(A[k].data(),A[k].size_in_bytes()), thp_fraction(B[k].data(),B[k].size_in_bytes()), thp_fraction(O[k].data(),O[k].size_in_bytes())); }
  printf("\n");
}
