/* test_standin.c - the stand-in NCCL moves and reduces real data, and
 * fails the way tests built on it expect (timeouts, injected errors).
 *
 * Each subtest forks its ranks from one process that made the unique id,
 * so ranks need no file to meet.  Output is TAP. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nsp_nccl.h"
#include "nsp_standin_fp.h"

NSP_NCCL_DECLARE(nccl)

static int nsp_test_failures;
static int nsp_test_rank;

#define CHECK(cond)                                                                \
  do {                                                                             \
    if (!(cond)) {                                                                 \
      fprintf(stderr, "# rank %d: %s:%d: check failed: %s\n", nsp_test_rank,       \
              __FILE__, __LINE__, #cond);                                          \
      nsp_test_failures++;                                                         \
    }                                                                              \
  } while (0)

#define CHECK_OK(call)                                                             \
  do {                                                                             \
    ncclResult_t r_ = (call);                                                      \
    if (r_ != ncclSuccess) {                                                       \
      fprintf(stderr, "# rank %d: %s:%d: %s returned %d: %s\n", nsp_test_rank,     \
              __FILE__, __LINE__, #call, (int)r_, ncclGetLastError(NULL));         \
      nsp_test_failures++;                                                         \
    }                                                                              \
  } while (0)

static const ncclDataType_t nsp_test_dtypes[] = {
  ncclInt8, ncclUint8, ncclInt32, ncclUint32, ncclInt64, ncclUint64,
  ncclFloat16, ncclFloat32, ncclFloat64, ncclBfloat16, ncclFloat8e4m3, ncclFloat8e5m2,
};

static size_t nsp_test_size(ncclDataType_t t)
{
  switch (t) {
  case ncclInt8: case ncclUint8: case ncclFloat8e4m3: case ncclFloat8e5m2: return 1;
  case ncclFloat16: case ncclBfloat16: return 2;
  case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
  default: return 8;
  }
}

/* How far a result may be from the exact value: narrow floats round at
 * every step of the reduction. */
static double nsp_test_tol(ncclDataType_t t, double expect)
{
  double rel;
  switch (t) {
  case ncclFloat16: rel = 1.0 / 256; break;
  case ncclBfloat16: rel = 1.0 / 32; break;
  case ncclFloat8e4m3: rel = 1.0 / 4; break;
  case ncclFloat8e5m2: rel = 1.0 / 2; break;
  case ncclFloat32: rel = 1e-6; break;
  case ncclFloat64: rel = 1e-12; break;
  default: return 0;
  }
  return rel * (fabs(expect) > 1 ? fabs(expect) : 1);
}

static int nsp_test_is_int(ncclDataType_t t)
{
  return t <= ncclUint64;
}

/* ---- running ranks --------------------------------------------------------- */

__attribute__((noreturn)) static void nsp_test_exit(void)
{
  fflush(stderr);
  _exit(nsp_test_failures ? 1 : 0);
}

typedef void (*nsp_test_body)(ncclComm_t comm, int rank, int nranks);

static int nsp_test_no;
static ncclUniqueId nsp_test_id;

/* Forks `nranks` processes that each init a rank and run `body`; `env`
 * ("NAME=VALUE" or NULL) is put in the ranks' environment first. */
static void nsp_test_run(const char *name, int nranks, nsp_test_body body, const char *env,
                         int init)
{
  ncclUniqueId id;
  pid_t pids[16];
  int i, ok = 1;

  if (ncclGetUniqueId(&id) != ncclSuccess) {
    printf("not ok %d - %s (ncclGetUniqueId)\n", ++nsp_test_no, name);
    return;
  }
  nsp_test_id = id;
  fflush(stdout);
  for (i = 0; i < nranks; i++) {
    pids[i] = fork();
    if (pids[i] == 0) {
      ncclComm_t comm = NULL;
      nsp_test_rank = i;
      if (env)
        putenv((char *)(uintptr_t)env);
      if (init) {
        ncclResult_t r = ncclCommInitRank(&comm, nranks, id, i);
        if (r != ncclSuccess) {
          fprintf(stderr, "# rank %d: init: %s\n", i, ncclGetLastError(NULL));
          _exit(1);
        }
      }
      body(comm, i, nranks);
      if (comm)
        CHECK_OK(ncclCommDestroy(comm));
      nsp_test_exit();
    }
  }
  for (i = 0; i < nranks; i++) {
    int st;
    if (waitpid(pids[i], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      fprintf(stderr, "# %s: rank %d status 0x%x\n", name, i, st);
      ok = 0;
    }
  }
  printf("%s %d - %s\n", ok ? "ok" : "not ok", ++nsp_test_no, name);
  fflush(stdout);
}

/* ---- subtests --------------------------------------------------------------- */

/* Small values keep every sum, product and average exact, or within
 * nsp_test_tol, in every dtype, int8 and float8 included. */
static double nsp_test_val(int rank, size_t i, ncclRedOp_t op)
{
  if (op == ncclProd)
    return (size_t)rank == i % 4 ? 2 : 1;
  return (double)(1 + (rank + (int)i) % 3);
}

static double nsp_test_expect(int nranks, size_t i, ncclRedOp_t op, ncclDataType_t t)
{
  double acc = nsp_test_val(0, i, op);
  int r;
  for (r = 1; r < nranks; r++) {
    double v = nsp_test_val(r, i, op);
    switch (op) {
    case ncclProd: acc *= v; break;
    case ncclMax: acc = v > acc ? v : acc; break;
    case ncclMin: acc = v < acc ? v : acc; break;
    default: acc += v; break;
    }
  }
  if (op == ncclAvg)
    acc = nsp_test_is_int(t) ? floor(acc / nranks) : acc / nranks;
  return acc;
}

static void nsp_test_allreduce_body(ncclComm_t comm, int rank, int nranks)
{
  static const ncclRedOp_t ops[] = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg};
  const size_t count = 1000;
  size_t d, o, i;
  for (d = 0; d < sizeof nsp_test_dtypes / sizeof nsp_test_dtypes[0]; d++) {
    ncclDataType_t t = nsp_test_dtypes[d];
    for (o = 0; o < 5; o++) {
      int inplace = (d + o) % 2;
      unsigned char *send = calloc(count, 8), *recv = calloc(count, 8);
      int bad = 0;
      for (i = 0; i < count; i++)
        nsp_standin_store_elem(send, t, i, nsp_test_val(rank, i, ops[o]));
      if (inplace)
        memcpy(recv, send, count * nsp_test_size(t));
      CHECK_OK(ncclAllReduce(inplace ? recv : send, recv, count, t, ops[o], comm, NULL));
      for (i = 0; i < count && !bad; i++) {
        double want = nsp_test_expect(nranks, i, ops[o], t);
        double got = nsp_standin_load_elem(recv, t, i);
        if (fabs(got - want) > nsp_test_tol(t, want)) {
          fprintf(stderr, "# rank %d: dtype %d op %d [%zu]: got %g want %g\n", rank, (int)t,
                  (int)ops[o], i, got, want);
          bad = 1;
          nsp_test_failures++;
        }
      }
      free(send);
      free(recv);
    }
  }
}

static void nsp_test_premul_body(ncclComm_t comm, int rank, int nranks)
{
  static const ncclDataType_t types[] = {ncclFloat32, ncclFloat64, ncclFloat16, ncclBfloat16};
  size_t t, i;
  for (t = 0; t < 4; t++) {
    unsigned char scalar[8], send[64 * 8], recv[64 * 8];
    ncclRedOp_t op;
    double want = 0;
    int r;
    /* Each rank scales its own input by its own scalar. */
    nsp_standin_store_elem(scalar, types[t], 0, rank == 0 ? 0.5 : 2.0);
    for (i = 0; i < 64; i++)
      nsp_standin_store_elem(send, types[t], i, (double)(rank + 1));
    CHECK_OK(ncclRedOpCreatePreMulSum(&op, scalar, types[t],
                                      t % 2 ? ncclScalarDevice : ncclScalarHostImmediate, comm));
    CHECK((int)op >= (int)ncclNumOps);
    CHECK_OK(ncclAllReduce(send, recv, 64, types[t], op, comm, NULL));
    for (r = 0; r < nranks; r++)
      want += (r == 0 ? 0.5 : 2.0) * (r + 1);
    for (i = 0; i < 64; i++)
      CHECK(fabs(nsp_standin_load_elem(recv, types[t], i) - want) <= nsp_test_tol(types[t], want));
    /* Wrong dtype for the op is an argument error, caught before any data moves. */
    CHECK(ncclAllReduce(send, recv, 64, ncclInt32, op, comm, NULL) == ncclInvalidArgument);
    CHECK_OK(ncclRedOpDestroy(op, comm));
  }
}

static void nsp_test_colls_body(ncclComm_t comm, int rank, int n)
{
  enum { C = 5 };
  int32_t send[16 * C], recv[16 * C], got, i, p;
  int root = n - 1;

  for (i = 0; i < n * C; i++)
    send[i] = rank * 1000 + i;
  /* reduce: only the root gets the sum */
  memset(recv, 0, sizeof recv);
  CHECK_OK(ncclReduce(send, recv, C, ncclInt32, ncclSum, root, comm, NULL));
  for (i = 0; i < C && rank == root; i++)
    CHECK(recv[i] == 1000 * n * (n - 1) / 2 + n * i);
  /* broadcast and bcast */
  memset(recv, 0, sizeof recv);
  CHECK_OK(ncclBroadcast(send, recv, C, ncclInt32, 1, comm, NULL));
  for (i = 0; i < C; i++)
    CHECK(recv[i] == 1000 + i);
  for (i = 0; i < C; i++)
    recv[i] = rank == 0 ? 7 * i : -1;
  CHECK_OK(ncclBcast(recv, C, ncclInt32, 0, comm, NULL));
  for (i = 0; i < C; i++)
    CHECK(recv[i] == 7 * i);
  /* all-gather: block p is rank p's send */
  CHECK_OK(ncclAllGather(send, recv, C, ncclInt32, comm, NULL));
  for (p = 0; p < n; p++)
    for (i = 0; i < C; i++)
      CHECK(recv[p * C + i] == p * 1000 + i);
  /* reduce-scatter: this rank's block of the sum */
  CHECK_OK(ncclReduceScatter(send, recv, C, ncclInt32, ncclSum, comm, NULL));
  for (i = 0; i < C; i++)
    CHECK(recv[i] == 1000 * n * (n - 1) / 2 + n * (rank * C + i));
  /* all-to-all: block p comes from rank p's block `rank` */
  CHECK_OK(ncclAlltoAll(send, recv, C, ncclInt32, comm, NULL));
  for (p = 0; p < n; p++)
    for (i = 0; i < C; i++)
      CHECK(recv[p * C + i] == p * 1000 + rank * C + i);
  /* gather to the root */
  memset(recv, 0, sizeof recv);
  CHECK_OK(ncclGather(send, recv, C, ncclInt32, root, comm, NULL));
  for (p = 0; p < n && rank == root; p++)
    for (i = 0; i < C; i++)
      CHECK(recv[p * C + i] == p * 1000 + i);
  /* scatter from rank 0 */
  CHECK_OK(ncclScatter(send, recv, C, ncclInt32, 0, comm, NULL));
  for (i = 0; i < C; i++) {
    got = recv[i];
    CHECK(got == rank * C + i);
  }
  /* in-place all-gather, as PyTorch's all_gather_into_tensor does */
  for (i = 0; i < C; i++)
    recv[rank * C + i] = rank * 10 + i;
  CHECK_OK(ncclAllGather(recv + rank * C, recv, C, ncclInt32, comm, NULL));
  for (p = 0; p < n; p++)
    for (i = 0; i < C; i++)
      CHECK(recv[p * C + i] == p * 10 + i);
}

static void nsp_test_sendrecv_body(ncclComm_t comm, int rank, int n)
{
  /* Larger than the 1 MiB in flight per pair, so the data streams. */
  const size_t count = 3u << 20;
  float *send = malloc(count * 4), *recv = malloc(count * 4);
  int next = (rank + 1) % n, prev = (rank + n - 1) % n, round;
  size_t i;
  for (round = 0; round < 3; round++) {
    for (i = 0; i < count; i++)
      send[i] = (float)(rank * 7 + round + (int)(i % 1000));
    memset(recv, 0, count * 4);
    /* Everyone sends first, then receives: only works because the group
     * runs the sends and receives together. */
    CHECK_OK(ncclGroupStart());
    CHECK_OK(ncclSend(send, count, ncclFloat32, next, comm, NULL));
    CHECK_OK(ncclRecv(recv, count, ncclFloat32, prev, comm, NULL));
    CHECK_OK(ncclGroupEnd());
    for (i = 0; i < count; i++)
      if (recv[i] != (float)(prev * 7 + round + (int)(i % 1000))) {
        CHECK(!"ring data");
        break;
      }
  }
  /* nested groups: only the outermost end runs anything */
  CHECK_OK(ncclGroupStart());
  CHECK_OK(ncclGroupStart());
  CHECK_OK(ncclRecv(recv, 10, ncclFloat32, prev, comm, NULL));
  CHECK_OK(ncclGroupEnd());
  CHECK_OK(ncclSend(send, 10, ncclFloat32, next, comm, NULL));
  CHECK_OK(ncclGroupEnd());
  CHECK(recv[3] == (float)(prev * 7 + 2 + 3));
  free(send);
  free(recv);
}

static void nsp_test_split_body(ncclComm_t comm, int rank, int n)
{
  ncclComm_t child = NULL, none = (ncclComm_t)1;
  int crank = -1, cn = -1;
  float v = (float)rank, sum = 0;
  /* key -rank reverses the order inside each colour */
  CHECK_OK(ncclCommSplit(comm, rank % 2, -rank, &child, NULL));
  CHECK(child != NULL);
  CHECK_OK(ncclCommUserRank(child, &crank));
  CHECK_OK(ncclCommCount(child, &cn));
  CHECK(cn == n / 2);
  CHECK(crank == (n / 2 - 1) - rank / 2);
  CHECK_OK(ncclAllReduce(&v, &sum, 1, ncclFloat32, ncclSum, child, NULL));
  CHECK(sum == (rank % 2 ? 1.0f + 3.0f : 0.0f + 2.0f));
  /* the parent still works, and NOCOLOR gives no child */
  CHECK_OK(ncclAllReduce(&v, &sum, 1, ncclFloat32, ncclSum, comm, NULL));
  CHECK(sum == 6.0f);
  CHECK_OK(ncclCommSplit(comm, rank == 0 ? NCCL_SPLIT_NOCOLOR : 0, 0, &none, NULL));
  CHECK((rank == 0) == (none == NULL));
  if (none) {
    CHECK_OK(ncclAllReduce(&v, &sum, 1, ncclFloat32, ncclSum, none, NULL));
    CHECK(sum == 6.0f);
    CHECK_OK(ncclCommDestroy(none));
  }
  /* shrink away rank 1: the survivors renumber in order */
  if (rank != 1) {
    ncclComm_t small = NULL;
    int ex = 1;
    CHECK_OK(ncclCommShrink(comm, &ex, 1, &small, NULL, 0));
    CHECK_OK(ncclCommUserRank(small, &crank));
    CHECK(crank == (rank == 0 ? 0 : rank - 1));
    CHECK_OK(ncclAllReduce(&v, &sum, 1, ncclFloat32, ncclSum, small, NULL));
    CHECK(sum == 5.0f);
    CHECK_OK(ncclCommDestroy(small));
  }
  CHECK_OK(ncclCommDestroy(child));
}

static void nsp_test_large_body(ncclComm_t comm, int rank, int n)
{
  const size_t count = 1u << 20;
  float *buf = malloc(count * 4);
  size_t i;
  for (i = 0; i < count; i++)
    buf[i] = (float)(rank + (int)(i % 5));
  CHECK_OK(ncclAllReduce(buf, buf, count, ncclFloat32, ncclSum, comm, NULL));
  for (i = 0; i < count; i++)
    if (buf[i] != (float)(n * (n - 1) / 2 + n * (int)(i % 5))) {
      CHECK(!"large all-reduce");
      break;
    }
  free(buf);
}

static void nsp_test_timeout_body(ncclComm_t comm, int rank, int n)
{
  float f32[64] = {0};
  uint16_t f16[64] = {0};
  ncclResult_t r, async = ncclInternalError;
  (void)n;
  CHECK_OK(ncclAllReduce(f32, f32, 64, ncclFloat32, ncclSum, comm, NULL));
  /* rank 0 all-reduces float16, rank 1 float32: rank 0 takes the first
   * half of rank 1's bytes and completes; rank 1 waits for bytes that
   * never come. */
  if (rank == 0) {
    r = ncclAllReduce(f16, f16, 64, ncclFloat16, ncclSum, comm, NULL);
    CHECK(r == ncclSuccess);
  } else {
    r = ncclAllReduce(f32, f32, 64, ncclFloat32, ncclSum, comm, NULL);
    CHECK(r == ncclSystemError);
    CHECK(strstr(ncclGetLastError(comm),
                 "stand-in: timed out after 300 ms waiting for rank 0 at collective #2") != NULL);
    CHECK_OK(ncclCommGetAsyncError(comm, &async));
    CHECK(async == ncclSuccess);
    /* the communicator is unusable from then on, at once */
    CHECK(ncclAllReduce(f32, f32, 64, ncclFloat32, ncclSum, comm, NULL) == ncclSystemError);
  }
  /* a receive whose send never comes */
  if (rank == 0) {
    r = ncclRecv(f32, 4, ncclFloat32, 1, comm, NULL);
    CHECK(r == ncclSystemError);
    CHECK(strstr(ncclGetLastError(comm), "waiting for rank 1 at recv #1") != NULL);
  }
  CHECK_OK(ncclCommAbort(comm));
  nsp_test_exit(); /* the comm is gone: skip the harness's destroy */
}

static void nsp_test_inject_body(ncclComm_t comm, int rank, int n)
{
  float v = 1, sum;
  ncclResult_t async;
  int seq;
  (void)n;
  for (seq = 1; seq <= 4; seq++) {
    ncclResult_t r = ncclAllReduce(&v, &sum, 1, ncclFloat32, ncclSum, comm, NULL);
    if (seq < 3) {
      CHECK(r == ncclSuccess);
      CHECK(sum == 3.0f);
      /* After #2, rank 2 may already have broken the communicator. */
      CHECK_OK(ncclCommGetAsyncError(comm, &async));
      CHECK(seq == 2 || async == ncclSuccess);
    } else if (rank == 2) {
      CHECK(r == ncclSystemError);
      CHECK(strcmp(ncclGetLastError(comm), "NET/IB : reset, by peer") == 0);
      CHECK_OK(ncclCommGetAsyncError(comm, &async));
      CHECK(async == ncclSystemError);
    } else {
      CHECK(r == ncclRemoteError);
      CHECK(strcmp(ncclGetLastError(comm), "remote process exited or there was a network error") == 0);
      CHECK_OK(ncclCommGetAsyncError(comm, &async));
      CHECK(async == ncclRemoteError);
    }
  }
  CHECK_OK(ncclCommAbort(comm));
  nsp_test_exit(); /* the comm is gone: skip the harness's destroy */
}

static void nsp_test_p2p_count_body(ncclComm_t comm, int rank, int n)
{
  float buf[256] = {0};
  int k;
  (void)n;
  /* c08: three sends, two receives; both sides finish */
  for (k = 0; k < (rank == 0 ? 3 : 2); k++) {
    buf[0] = (float)k;
    CHECK_OK(ncclGroupStart());
    if (rank == 0)
      CHECK_OK(ncclSend(buf, 256, ncclFloat32, 1, comm, NULL));
    else
      CHECK_OK(ncclRecv(buf, 256, ncclFloat32, 0, comm, NULL));
    CHECK_OK(ncclGroupEnd());
    if (rank == 1)
      CHECK(buf[0] == (float)k);
  }
  /* a receive that asks for fewer bytes than were sent gets the first
   * ones (here: the third, unmatched send above) */
  if (rank == 1) {
    CHECK_OK(ncclRecv(buf, 4, ncclFloat32, 0, comm, NULL));
    CHECK(buf[0] == 2.0f);
  }
}

static void nsp_test_misc_body(ncclComm_t unused, int rank, int n)
{
  ncclComm_t comm = NULL, all[3] = {NULL, NULL, NULL};
  ncclUniqueId id;
  ncclSimInfo_t sim = {sizeof(ncclSimInfo_t), 0x74685283u, 22809, 0};
  int v = 0, dev = -1, i;
  float x[4] = {1, 2, 3, 4}, y[4];
  void *p = NULL, *h = NULL;
  ncclWindow_t win = NULL;
  const int devs[3] = {5, 6, 7};
  (void)unused;
  (void)rank;
  (void)n;

  CHECK_OK(ncclGetVersion(&v));
  CHECK(v == 22809);
  setenv("NSP_STANDIN_VERSION", "22700", 1);
  CHECK_OK(ncclGetVersion(&v));
  CHECK(v == 22700);
  CHECK(strcmp(ncclGetErrorString(ncclRemoteError),
               "remote process exited or there was a network error") == 0);
  CHECK(strcmp(ncclGetErrorString((ncclResult_t)99), "unknown result code") == 0);
  setenv("LOCAL_RANK", "3", 1);
  CHECK_OK(ncclGetUniqueId(&id));
  CHECK_OK(ncclCommInitRank(&comm, 1, id, 0));
  CHECK_OK(ncclCommCuDevice(comm, &dev));
  CHECK(dev == 3);
  /* one rank: plain copies */
  CHECK_OK(ncclAllReduce(x, y, 4, ncclFloat32, ncclSum, comm, NULL));
  CHECK(y[3] == 4.0f);
  CHECK_OK(ncclAllGather(x, y, 4, ncclFloat32, comm, NULL));
  CHECK(y[2] == 3.0f);
  CHECK(ncclAllReduce(x, y, 4, (ncclDataType_t)42, ncclSum, comm, NULL) == ncclInvalidArgument);
  CHECK(strstr(ncclGetLastError(NULL), "invalid datatype") != NULL);
  CHECK(ncclBroadcast(x, y, 4, ncclFloat32, 1, comm, NULL) == ncclInvalidArgument);
  /* simulated groups run nothing */
  y[0] = -1;
  CHECK_OK(ncclGroupStart());
  CHECK_OK(ncclAllReduce(x, y, 4, ncclFloat32, ncclSum, comm, NULL));
  CHECK_OK(ncclGroupSimulateEnd(&sim));
  CHECK(y[0] == -1.0f);
  CHECK(sim.estimatedTime > 0);
  CHECK(ncclGroupEnd() == ncclInvalidUsage);
  CHECK_OK(ncclGroupStart());
  CHECK_OK(ncclAllReduce(x, y, 4, ncclFloat32, ncclSum, comm, NULL));
  CHECK_OK(ncclGroupEnd());
  CHECK(y[0] == 1.0f);
  CHECK_OK(ncclMemAlloc(&p, 100));
  CHECK_OK(ncclCommRegister(comm, p, 100, &h));
  CHECK(h != NULL);
  CHECK_OK(ncclCommDeregister(comm, h));
  CHECK_OK(ncclCommWindowRegister(comm, p, 100, &win, 0));
  CHECK_OK(ncclCommWindowDeregister(comm, win));
  CHECK_OK(ncclMemFree(p));
  ncclResetDebugInit();
  CHECK_OK(ncclCommFinalize(comm));
  CHECK_OK(ncclCommDestroy(comm));
  CHECK_OK(ncclCommDestroy(NULL));
  /* InitAll: ndev communicators in one process */
  CHECK_OK(ncclCommInitAll(all, 3, devs));
  for (i = 0; i < 3; i++) {
    int r = -1, c = -1;
    CHECK_OK(ncclCommUserRank(all[i], &r));
    CHECK_OK(ncclCommCount(all[i], &c));
    CHECK_OK(ncclCommCuDevice(all[i], &dev));
    CHECK(r == i && c == 3 && dev == devs[i]);
    CHECK_OK(ncclCommDestroy(all[i]));
  }
}

/* The shared memory of a communicator is gone once all ranks joined, so
 * a rank killed later leaks nothing.  The name is the stand-in's: bytes
 * 8..23 of the id, as two 64-bit words in hex. */
static void nsp_test_shm_body(ncclComm_t comm, int rank, int n)
{
  uint64_t w[2];
  char path[128];
  float v = 1, s = 0;
  (void)n;
  (void)rank;
  CHECK_OK(ncclAllReduce(&v, &s, 1, ncclFloat32, ncclSum, comm, NULL));
  memcpy(w, nsp_test_id.internal + 8, sizeof w);
  snprintf(path, sizeof path, "/dev/shm/nsp-standin-%016" PRIx64 "%016" PRIx64, w[0], w[1]);
  CHECK(access(path, F_OK) != 0 && errno == ENOENT);
}

int main(void)
{
  char timeout_env[] = "NSP_STANDIN_TIMEOUT_MS=300";
  char fail_env[] = "NSP_STANDIN_FAIL=rank=2,seq=3,result=2,msg=NET/IB : reset, by peer";
  char base_env[] = "NSP_STANDIN_TIMEOUT_MS=20000";

  signal(SIGPIPE, SIG_IGN);
  printf("1..12\n");
  nsp_test_run("all-reduce: 12 dtypes x sum/prod/max/min/avg, 3 ranks", 3,
               nsp_test_allreduce_body, base_env, 1);
  nsp_test_run("premulsum: host and device scalars, 2 ranks", 2, nsp_test_premul_body, base_env, 1);
  nsp_test_run("reduce, broadcast, bcast, all-gather, reduce-scatter, all-to-all, gather, "
               "scatter, 4 ranks", 4, nsp_test_colls_body, base_env, 1);
  nsp_test_run("grouped send/recv ring of 12 MiB, 2 ranks", 2, nsp_test_sendrecv_body, base_env, 1);
  nsp_test_run("grouped send/recv ring, 4 ranks", 4, nsp_test_sendrecv_body, base_env, 1);
  nsp_test_run("split, NOCOLOR and shrink, 4 ranks", 4, nsp_test_split_body, base_env, 1);
  nsp_test_run("1M float32 in-place all-reduce, 4 ranks", 4, nsp_test_large_body, base_env, 1);
  nsp_test_run("dtype mismatch: one rank completes, the other times out", 2,
               nsp_test_timeout_body, timeout_env, 1);
  nsp_test_run("NSP_STANDIN_FAIL: the failing rank's error, ncclRemoteError on the others", 3,
               nsp_test_inject_body, fail_env, 1);
  nsp_test_run("3 sends vs 2 receives complete; misc API on 1 rank", 2, nsp_test_p2p_count_body,
               base_env, 1);
  nsp_test_run("misc", 1, nsp_test_misc_body, base_env, 0);
  nsp_test_run("no /dev/shm entry left once all ranks joined", 3, nsp_test_shm_body, base_env, 1);
  return 0;
}
