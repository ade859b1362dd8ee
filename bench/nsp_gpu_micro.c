/* nsp_gpu_micro.c - what the pieces of completion tracking cost on a GPU
 * host: ns per call of clock_gettime and of the CUDA driver calls the shim
 * makes per collective, medians of interleaved rounds in one process;
 * then the same calls right after a kernel launch on a busy host (the
 * launch of an empty kernel, with a few us of cache-evicting host work
 * between launches, as a training loop has), against the launch alone.
 * Figures, not a test.  Needs libcuda.so.1 (dlopen'ed); built by hand on a
 * GPU host:  cc -O2 bench/nsp_gpu_micro.c -ldl -o /tmp/micro && /tmp/micro */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nsp_bench_stats.h"

typedef int CUresult;
typedef struct CUctx_st *CUcontext;
typedef struct CUevent_st *CUevent;
typedef struct CUstream_st *CUstream;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;

/* An empty kernel: what the launch costs the host, not the GPU. */
static const char ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
                          ".visible .entry nsp_empty()\n{\n ret;\n}\n";


#define LOAD(var, name)                        \
  do {                                         \
    void *p_ = dlsym(lib, name);               \
    if (!p_) {                                 \
      fprintf(stderr, "no %s\n", name);        \
      return 1;                                \
    }                                          \
    memcpy(&var, &p_, sizeof p_);              \
  } while (0)

int main(void) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW);
  if (!lib) {
    fprintf(stderr, "no libcuda.so.1\n");
    return 1;
  }
  CUresult (*init)(unsigned), (*devget)(int *, int), (*retain)(CUcontext *, int),
      (*setcur)(CUcontext), (*screate)(CUstream *, unsigned), (*capt)(CUstream, int *),
      (*getctx)(CUstream, CUcontext *), (*ecreate)(CUevent *, unsigned), (*erec)(CUevent, CUstream),
      (*equery)(CUevent), (*ssync)(CUstream), (*modload)(CUmodule *, const void *),
      (*getfn)(CUfunction *, CUmodule, const char *),
      (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                void **, void **);
  LOAD(init, "cuInit");
  LOAD(devget, "cuDeviceGet");
  LOAD(retain, "cuDevicePrimaryCtxRetain");
  LOAD(setcur, "cuCtxSetCurrent");
  LOAD(screate, "cuStreamCreate");
  LOAD(capt, "cuStreamIsCapturing");
  LOAD(getctx, "cuStreamGetCtx");
  LOAD(ecreate, "cuEventCreate");
  LOAD(erec, "cuEventRecord");
  LOAD(equery, "cuEventQuery");
  LOAD(ssync, "cuStreamSynchronize");
  LOAD(modload, "cuModuleLoadData");
  LOAD(getfn, "cuModuleGetFunction");
  LOAD(launch, "cuLaunchKernel");
  int dev;
  CUcontext ctx;
  CUstream s;
  CUevent plain, timed;
  if (init(0) || devget(&dev, 0) || retain(&ctx, dev) || setcur(ctx) || screate(&s, 1) ||
      ecreate(&plain, 2) || ecreate(&timed, 0)) {
    fprintf(stderr, "CUDA set-up failed\n");
    return 1;
  }
  enum { N = 20000, R = 9, K = 6 };
  const char *names[K] = {"clock_gettime(CLOCK_MONOTONIC)", "cuStreamIsCapturing", "cuStreamGetCtx",
                          "cuEventRecord (DISABLE_TIMING)", "cuEventRecord (timed)", "cuEventQuery"};
  double t[K][R];
  for (int r = 0; r < R; r++) {
    for (int k = 0; k < K; k++) {
      int st;
      CUcontext c;
      uint64_t t0 = nsp_bench_now_ns();
      for (int i = 0; i < N; i++) {
        switch (k) {
          case 0: (void)nsp_bench_now_ns(); break;
          case 1: capt(s, &st); break;
          case 2: getctx(s, &c); break;
          case 3: erec(plain, s); break;
          case 4: erec(timed, s); break;
          case 5: equery(plain); break;
        }
      }
      t[k][r] = (double)(nsp_bench_now_ns() - t0) / N;
      ssync(s);
    }
  }
  FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
  char cs[64] = "?";
  if (f && fgets(cs, sizeof cs, f)) cs[strcspn(cs, "\n")] = 0;
  if (f) fclose(f);
  printf("ns per call, median of %d rounds of %d (clocksource %s):\n", R, N, cs);
  for (int k = 0; k < K; k++) {
    qsort(t[k], R, sizeof t[k][0], nsp_bench_cmp_double);
    printf("  %-32s %8.1f\n", names[k], t[k][R / 2]);
  }

  /* After a launch, on a host that does other work between launches. */
  CUmodule mod;
  CUfunction fn;
  if (modload(&mod, ptx) || getfn(&fn, mod, "nsp_empty")) {
    fprintf(stderr, "no kernel (PTX JIT failed)\n");
    return 1;
  }
  enum { NP = 64, N2 = 4000, R2 = 41, K2 = 6 };
  CUevent pool[NP];
  for (int i = 0; i < NP; i++)
    if (ecreate(&pool[i], 2)) return 1;
  const char *names2[K2] = {"launch alone", "+ cuEventRecord (untimed, one event)",
                            "+ cuEventRecord (untimed, 64 in turn)", "+ cuStreamIsCapturing + record",
                            "+ cuEventRecord (timed)", "cuEventRecord before the launch"};
  static volatile unsigned char junk[8 << 20]; /* evicts the host's caches between launches */
  double t2[K2][R2];
  unsigned sink = 0;
  for (int r = 0; r < R2; r++) {
    for (int kk = 0; kk < K2; kk++) {
      int k = (kk + r) % K2; /* the order rotates from round to round */
      uint64_t sum = 0;
      for (int i = 0; i < N2; i++) {
        for (size_t j = (size_t)(i & 63); j < sizeof junk; j += 4096) sink += junk[j];
        int st;
        uint64_t t0 = nsp_bench_now_ns();
        if (k == 5) erec(plain, s);
        launch(fn, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL);
        switch (k) {
          case 1: erec(plain, s); break;
          case 2: erec(pool[i % NP], s); break;
          case 3: capt(s, &st); erec(plain, s); break;
          case 4: erec(timed, s); break;
        }
        sum += nsp_bench_now_ns() - t0;
      }
      ssync(s);
      t2[k][r] = (double)sum / N2;
    }
  }
  printf("ns per launch and what follows it (%u), median of %d rounds of %d:\n", sink & 1, R2 - 1, N2);
  double base = 0;
  for (int k = 0; k < K2; k++) {
    qsort(t2[k] + 1, R2 - 1, sizeof t2[k][0], nsp_bench_cmp_double); /* round 0 warms up */
    double m = t2[k][1 + (R2 - 1) / 2];
    if (k == 0) base = m;
    printf("  %-40s %8.1f  (%+.1f)\n", names2[k], m, m - base);
  }
  return 0;
}
