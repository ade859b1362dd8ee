/* nsp_xla_stub.c - a rank of a job that reaches NCCL the way XLA does
 * (xla/tsl/cuda/nccl_stub.cc, used by JAX and TensorFlow): it links no
 * libnccl, dlopen's one with RTLD_NOW | RTLD_LOCAL, and takes each entry
 * point with dlsym on that handle the first time it is called, then calls
 * through the pointer.  Like XLA's collective thunks, every all-reduce is
 * issued between ncclGroupStart and ncclGroupEnd.
 *
 *   nsp_launch -n 2 -- nsp_xla_stub
 *
 * Environment: RANK, WORLD_SIZE and NSP_UID_FILE as for nsp_cases (rank 0
 * writes the ncclUniqueId there; nsp_launch sets it), and
 *   NSP_XLA_LIBNCCL  the library to dlopen (default "libnccl.so.2")
 *   NSP_XLA_STEPS    all-reduces (default 20), 1024 float32 sums each
 *   NSP_XLA_ODD      "R:S:C": rank R passes count C at step S (from 1)
 *   NSP_XLA_GROUPS   0: no group around each all-reduce (default 1)
 * Every result is checked.  A call that fails, or wrong values, ends the
 * rank as a watchdog would (ncclCommAbort, exit 1).  At the end:
 * "rank R returned N calls" on stdout, N counting the NCCL calls that
 * returned.  Exit status: 0 healthy, 1 an NCCL error or wrong values,
 * 2 usage or a missing library or entry point. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nsp_nccl.h"

static void *nsp_xla_dso;
static int nsp_xla_rank = -1;
static unsigned long nsp_xla_calls;

/* XLA's LoadSymbol: dlsym on the library's handle. */
static void *load_symbol(const char *name) {
  void *f = dlsym(nsp_xla_dso, name);
  if (!f) {
    fprintf(stderr, "rank %d: %s: %s\n", nsp_xla_rank, name, dlerror());
    exit(2);
  }
  return f;
}

/* One stub per entry point used, each resolved at its first call. */
#define NSP_XLA_STUB(name, params, args)                                   \
  static ncclResult_t name params {                                        \
    static ncclResult_t(*f) params;                                        \
    if (!f) {                                                              \
      void *p = load_symbol(#name);                                        \
      memcpy(&f, &p, sizeof f);                                            \
    }                                                                      \
    ncclResult_t res_ = f args;                                            \
    nsp_xla_calls++;                                                       \
    return res_;                                                           \
  }
NSP_XLA_STUB(ncclGetVersion, (int *v), (v))
NSP_XLA_STUB(ncclGetUniqueId, (ncclUniqueId * id), (id))
NSP_XLA_STUB(ncclCommInitRank, (ncclComm_t * c, int n, ncclUniqueId id, int r), (c, n, id, r))
NSP_XLA_STUB(ncclGroupStart, (void), ())
NSP_XLA_STUB(ncclGroupEnd, (void), ())
NSP_XLA_STUB(ncclAllReduce,
             (const void *s, void *d, size_t n, ncclDataType_t t, ncclRedOp_t o, ncclComm_t c, cudaStream_t st),
             (s, d, n, t, o, c, st))
NSP_XLA_STUB(ncclCommDestroy, (ncclComm_t c), (c))
NSP_XLA_STUB(ncclCommAbort, (ncclComm_t c), (c))

static int env_int(const char *name, int dflt) {
  const char *s = getenv(name);
  return s && *s ? atoi(s) : dflt;
}

static void exchange_id(ncclUniqueId *id) {
  const char *path = getenv("NSP_UID_FILE");
  if (!path || !*path) {
    fprintf(stderr, "rank %d: NSP_UID_FILE is not set\n", nsp_xla_rank);
    exit(2);
  }
  if (nsp_xla_rank == 0) {
    char tmp[4096];
    if (ncclGetUniqueId(id) != ncclSuccess) {
      fprintf(stderr, "rank 0: ncclGetUniqueId failed\n");
      exit(1);
    }
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f || fwrite(id, sizeof *id, 1, f) != 1 || fclose(f) != 0 || rename(tmp, path) != 0) {
      fprintf(stderr, "rank 0: cannot write %s: %s\n", path, strerror(errno));
      exit(1);
    }
    return;
  }
  for (int waited = 0; waited < 30000; waited += 5) {
    int fd = open(path, O_RDONLY);
    if (fd >= 0) {
      ssize_t got = read(fd, id, sizeof *id);
      close(fd);
      if (got == (ssize_t)sizeof *id) return;
    }
    struct timespec ts = {0, 5000000};
    nanosleep(&ts, NULL);
  }
  fprintf(stderr, "rank %d: no unique id in %s\n", nsp_xla_rank, path);
  exit(1);
}

static void fail(ncclComm_t comm, const char *what, int step, int res) {
  fprintf(stderr, "rank %d: %s at all-reduce #%d (result %d); aborting\n", nsp_xla_rank, what, step, res);
  ncclCommAbort(comm);
  printf("rank %d returned %lu calls\n", nsp_xla_rank, nsp_xla_calls);
  exit(1);
}

int main(void) {
  nsp_xla_rank = env_int("RANK", -1);
  int nranks = env_int("WORLD_SIZE", -1), steps = env_int("NSP_XLA_STEPS", 20);
  int groups = env_int("NSP_XLA_GROUPS", 1);
  int odd_rank = -1, odd_step = 0, odd_count = 0;
  const char *odd = getenv("NSP_XLA_ODD");
  if (nsp_xla_rank < 0 || nranks < 1 ||
      (odd && *odd && sscanf(odd, "%d:%d:%d", &odd_rank, &odd_step, &odd_count) != 3)) {
    fprintf(stderr, "usage: RANK=r WORLD_SIZE=n NSP_UID_FILE=f [NSP_XLA_ODD=R:S:C] nsp_xla_stub\n");
    return 2;
  }
  const char *lib = getenv("NSP_XLA_LIBNCCL");
  nsp_xla_dso = dlopen(lib && *lib ? lib : "libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (!nsp_xla_dso) {
    fprintf(stderr, "rank %d: %s\n", nsp_xla_rank, dlerror());
    return 2;
  }
  int version = 0;
  if (ncclGetVersion(&version) != ncclSuccess || version <= 0) return 2;
  ncclUniqueId id;
  exchange_id(&id);
  ncclComm_t comm = NULL;
  ncclResult_t res = ncclCommInitRank(&comm, nranks, id, nsp_xla_rank);
  if (res != ncclSuccess) {
    fprintf(stderr, "rank %d: ncclCommInitRank returned %d\n", nsp_xla_rank, (int)res);
    return 1;
  }
  enum { N = 1024 };
  static float x[N], y[N];
  for (int step = 1; step <= steps; step++) {
    size_t count = nsp_xla_rank == odd_rank && step == odd_step ? (size_t)odd_count : N;
    for (int i = 0; i < N; i++) x[i] = (float)(nsp_xla_rank + 1 + (i + step) % 7), y[i] = -1;
    if (groups && (res = ncclGroupStart()) != ncclSuccess) fail(comm, "ncclGroupStart failed", step, res);
    res = ncclAllReduce(x, y, count, ncclFloat32, ncclSum, comm, NULL);
    if (res != ncclSuccess) fail(comm, "ncclAllReduce failed", step, res);
    if (groups && (res = ncclGroupEnd()) != ncclSuccess) fail(comm, "ncclGroupEnd failed", step, res);
    for (size_t i = 0; i < count && i < N; i++) {
      float want = (float)(nranks * (nranks + 1) / 2 + nranks * ((int)(i + (size_t)step) % 7));
      if (y[i] != want) fail(comm, "wrong values", step, 0);
    }
  }
  if ((res = ncclCommDestroy(comm)) != ncclSuccess) {
    fprintf(stderr, "rank %d: ncclCommDestroy returned %d\n", nsp_xla_rank, (int)res);
    return 1;
  }
  printf("rank %d returned %lu calls\n", nsp_xla_rank, nsp_xla_calls);
  return 0;
}
