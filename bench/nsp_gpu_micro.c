/* nsp_gpu_micro.c - what the pieces of completion tracking cost on a GPU
 * host: ns per call of clock_gettime and of the CUDA driver calls the shim
 * makes per collective, medians of interleaved rounds in one process.
 * Figures, not a test.  Needs libcuda.so.1 (dlopen'ed); built by hand on a
 * GPU host:  cc -O2 bench/nsp_gpu_micro.c -ldl -o /tmp/micro && /tmp/micro */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int CUresult;
typedef struct CUctx_st *CUcontext;
typedef struct CUevent_st *CUevent;
typedef struct CUstream_st *CUstream;

static uint64_t now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

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
      (*equery)(CUevent), (*ssync)(CUstream);
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
      uint64_t t0 = now();
      for (int i = 0; i < N; i++) {
        switch (k) {
          case 0: (void)now(); break;
          case 1: capt(s, &st); break;
          case 2: getctx(s, &c); break;
          case 3: erec(plain, s); break;
          case 4: erec(timed, s); break;
          case 5: equery(plain); break;
        }
      }
      t[k][r] = (double)(now() - t0) / N;
      ssync(s);
    }
  }
  FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
  char cs[64] = "?";
  if (f && fgets(cs, sizeof cs, f)) cs[strcspn(cs, "\n")] = 0;
  if (f) fclose(f);
  printf("ns per call, median of %d rounds of %d (clocksource %s):\n", R, N, cs);
  for (int k = 0; k < K; k++) {
    qsort(t[k], R, sizeof t[k][0], cmp);
    printf("  %-32s %8.1f\n", names[k], t[k][R / 2]);
  }
  return 0;
}
