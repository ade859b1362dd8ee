/* test_standin_async.c - the NCCL stand-in with the CUDA stand-in loaded:
 * calls given a stream only enqueue, and run later on the stream's worker,
 * in order; groups are enqueued at ncclGroupEnd; an op whose peer never
 * comes fails asynchronously (ncclCommGetAsyncError, then every later
 * call); ncclCommAbort and ncclCommDestroy with work still waiting
 * neither crash nor hang; captured calls are not run.
 *
 * Each test forks its ranks from the process that made the unique id. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nsp_nccl.h"
#include "nsp_standin_cuda.h"

NSP_NCCL_DECLARE(nccl)

static int rank_failures, rank_no;

#define RCHECK(cond)                                                                   \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      fprintf(stderr, "# rank %d: %s:%d: check failed: %s\n", rank_no, __FILE__,       \
              __LINE__, #cond);                                                        \
      rank_failures++;                                                                 \
    }                                                                                  \
  } while (0)

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_ms(int ms)
{
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
  while (nanosleep(&ts, &ts) != 0)
    ;
}

typedef void (*rank_body)(ncclComm_t comm, CUstream s, int rank, int nranks);

/* Forks `nranks` ranks, each with a CUDA stream, running `body`; asserts
 * every rank exits 0 within `limit_s`. */
static void run_ranks(int nranks, rank_body body, const char *timeout_ms, double limit_s)
{
  ncclUniqueId id;
  pid_t pids[8];
  int i;
  double t0 = now_s();
  assert_int_equal(ncclGetUniqueId(&id), ncclSuccess);
  fflush(stdout);
  fflush(stderr);
  for (i = 0; i < nranks; i++) {
    pids[i] = fork();
    assert_true(pids[i] >= 0);
    if (pids[i] == 0) {
      ncclComm_t comm = NULL;
      CUstream s = NULL;
      rank_no = i;
      setenv("NSP_STANDIN_TIMEOUT_MS", timeout_ms, 1);
      if (cuInit(0) != CUDA_SUCCESS || cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS ||
          ncclCommInitRank(&comm, nranks, id, i) != ncclSuccess) {
        fprintf(stderr, "# rank %d: setup failed: %s\n", i, ncclGetLastError(NULL));
        _exit(2);
      }
      body(comm, s, i, nranks);
      fflush(stderr);
      exit(rank_failures ? 1 : 0); /* exit, not _exit: the CUDA stand-in's destructor runs */
    }
  }
  for (i = 0; i < nranks; i++) {
    int st = 0;
    assert_int_equal(waitpid(pids[i], &st, 0), pids[i]);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
      fail_msg("rank %d ended with status 0x%x", i, st);
  }
  if (now_s() - t0 > limit_s)
    fail_msg("took %.1f s, more than %.1f s", now_s() - t0, limit_s);
}

static float expect_sum(int nranks, int seq, size_t i)
{
  float v = 0;
  int p;
  for (p = 0; p < nranks; p++)
    v += (float)(p * 10 + seq + (int)(i % 5));
  return v;
}

static void fill(float *b, size_t n, int rank, int seq)
{
  size_t i;
  for (i = 0; i < n; i++)
    b[i] = (float)(rank * 10 + seq + (int)(i % 5));
}

static int all_equal_sum(const float *b, size_t n, int nranks, int seq)
{
  size_t i;
  for (i = 0; i < n; i++)
    if (b[i] != expect_sum(nranks, seq, i))
      return 0;
  return 1;
}

/* ---- calls return at once and run later, in order ------------------------------- */

static void body_async_order(ncclComm_t comm, CUstream s, int rank, int n)
{
  static float a[4096], b[4096], c[256];
  CUevent ev;
  double t0;
  RCHECK(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING) == CUDA_SUCCESS);
  fill(a, 4096, rank, 1);
  fill(b, 4096, rank, 2);
  fill(c, 256, rank, 3);
  if (rank == 1)
    sleep_ms(400); /* rank 0's calls must not wait for this */
  t0 = now_s();
  RCHECK(ncclAllReduce(a, a, 4096, ncclFloat32, ncclSum, comm, s) == ncclSuccess);
  RCHECK(ncclAllReduce(b, b, 4096, ncclFloat32, ncclSum, comm, s) == ncclSuccess);
  RCHECK(cuEventRecord(ev, s) == CUDA_SUCCESS);
  if (rank == 0) {
    RCHECK(now_s() - t0 < 0.2);
    RCHECK(cuStreamQuery(s) == CUDA_ERROR_NOT_READY);
    RCHECK(cuEventQuery(ev) == CUDA_ERROR_NOT_READY);
  }
  /* a NULL-stream (synchronous) call waits for the stream's work first */
  RCHECK(ncclAllReduce(c, c, 256, ncclFloat32, ncclSum, comm, NULL) == ncclSuccess);
  RCHECK(all_equal_sum(c, 256, n, 3));
  RCHECK(cuEventQuery(ev) == CUDA_SUCCESS || cuEventSynchronize(ev) == CUDA_SUCCESS);
  RCHECK(cuStreamSynchronize(s) == CUDA_SUCCESS);
  RCHECK(all_equal_sum(a, 4096, n, 1));
  RCHECK(all_equal_sum(b, 4096, n, 2));
  RCHECK(cuEventDestroy(ev) == CUDA_SUCCESS);
  RCHECK(ncclCommDestroy(comm) == ncclSuccess);
  RCHECK(cuStreamDestroy(s) == CUDA_SUCCESS);
}

static void test_async_order(void **state)
{
  (void)state;
  run_ranks(2, body_async_order, "20000", 15);
}

/* ---- a group is enqueued at ncclGroupEnd ------------------------------------------ */

static void body_group(ncclComm_t comm, CUstream s, int rank, int n)
{
  static float send[1024], recv[1024], red[64];
  int next = (rank + 1) % n, prev = (rank + n - 1) % n, k;
  double t0;
  for (k = 0; k < 3; k++) {
    size_t i;
    for (i = 0; i < 1024; i++) {
      send[i] = (float)(rank * 1000 + k * 100 + (int)i % 50);
      recv[i] = -1;
    }
    fill(red, 64, rank, k);
    if (rank == 1 && k == 1)
      sleep_ms(300);
    t0 = now_s();
    RCHECK(ncclGroupStart() == ncclSuccess);
    RCHECK(ncclSend(send, 1024, ncclFloat32, next, comm, s) == ncclSuccess);
    RCHECK(ncclRecv(recv, 1024, ncclFloat32, prev, comm, s) == ncclSuccess);
    RCHECK(ncclAllReduce(red, red, 64, ncclFloat32, ncclSum, comm, s) == ncclSuccess);
    RCHECK(recv[0] == -1); /* nothing ran inside the group */
    RCHECK(ncclGroupEnd() == ncclSuccess);
    if (k == 1 && rank != 1)
      RCHECK(now_s() - t0 < 0.2);
    RCHECK(cuStreamSynchronize(s) == CUDA_SUCCESS);
    for (i = 0; i < 1024; i++)
      RCHECK(recv[i] == (float)(prev * 1000 + k * 100 + (int)i % 50));
    RCHECK(all_equal_sum(red, 64, n, k));
  }
  RCHECK(ncclCommDestroy(comm) == ncclSuccess);
}

static void test_group(void **state)
{
  (void)state;
  run_ranks(3, body_group, "20000", 15);
}

/* ---- a peer that never comes: asynchronous error ------------------------------------ */

static void body_async_error(ncclComm_t comm, CUstream s, int rank, int n)
{
  static float a[128];
  ncclResult_t async = ncclInternalError;
  double t0;
  (void)n;
  fill(a, 128, rank, 1);
  RCHECK(ncclAllReduce(a, a, 128, ncclFloat32, ncclSum, comm, s) == ncclSuccess);
  RCHECK(cuStreamSynchronize(s) == CUDA_SUCCESS);
  if (rank == 1) {
    sleep_ms(1500); /* never joins #2; stays alive past rank 0's timeout */
    RCHECK(ncclCommAbort(comm) == ncclSuccess);
    return;
  }
  t0 = now_s();
  RCHECK(ncclAllReduce(a, a, 128, ncclFloat32, ncclSum, comm, s) == ncclSuccess);
  RCHECK(now_s() - t0 < 0.2);
  RCHECK(ncclCommGetAsyncError(comm, &async) == ncclSuccess && async == ncclSuccess);
  RCHECK(cuStreamSynchronize(s) == CUDA_SUCCESS); /* returns when the stand-in gives up */
  RCHECK(now_s() - t0 >= 0.25 && now_s() - t0 < 5);
  RCHECK(ncclCommGetAsyncError(comm, &async) == ncclSuccess);
  RCHECK(async == ncclSystemError);
  RCHECK(strstr(ncclGetLastError(comm), "timed out") != NULL);
  /* later calls on the communicator fail at once */
  t0 = now_s();
  RCHECK(ncclAllReduce(a, a, 128, ncclFloat32, ncclSum, comm, s) == ncclSystemError);
  RCHECK(ncclAllReduce(a, a, 128, ncclFloat32, ncclSum, comm, NULL) == ncclSystemError);
  RCHECK(ncclGroupStart() == ncclSuccess);
  RCHECK(ncclSend(a, 1, ncclFloat32, 1, comm, s) == ncclSystemError);
  RCHECK(ncclGroupEnd() == ncclSuccess);
  RCHECK(now_s() - t0 < 0.2);
  RCHECK(strstr(ncclGetLastError(comm), "asynchronous error") != NULL);
  RCHECK(ncclCommDestroy(comm) == ncclSuccess);
}

static void test_async_error(void **state)
{
  (void)state;
  run_ranks(2, body_async_error, "300", 15);
}

/* ---- abort and destroy with work waiting ----------------------------------------------- */

static void body_abort(ncclComm_t comm, CUstream s, int rank, int n)
{
  static float a[128];
  double t0;
  (void)n;
  if (rank == 1) {
    sleep_ms(1500); /* never calls */
    RCHECK(ncclCommAbort(comm) == ncclSuccess);
    return;
  }
  fill(a, 128, rank, 1);
  RCHECK(ncclAllReduce(a, a, 128, ncclFloat32, ncclSum, comm, s) == ncclSuccess);
  RCHECK(ncclAllReduce(a, a, 128, ncclFloat32, ncclSum, comm, s) == ncclSuccess);
  sleep_ms(100);
  RCHECK(cuStreamQuery(s) == CUDA_ERROR_NOT_READY);
  t0 = now_s();
  RCHECK(ncclCommAbort(comm) == ncclSuccess);
  RCHECK(now_s() - t0 < 0.5);
  RCHECK(cuStreamSynchronize(s) == CUDA_SUCCESS); /* the work gave up, far before 20 s */
  RCHECK(now_s() - t0 < 2);
  RCHECK(a[0] == (float)(0 + 1)); /* and moved nothing */
  RCHECK(cuStreamDestroy(s) == CUDA_SUCCESS);
}

static void test_abort(void **state)
{
  (void)state;
  run_ranks(2, body_abort, "20000", 10);
}

static void body_destroy(ncclComm_t comm, CUstream s, int rank, int n)
{
  static float a[128];
  double t0;
  (void)n;
  if (rank == 1) {
    sleep_ms(1500);
    RCHECK(ncclCommDestroy(comm) == ncclSuccess);
    return;
  }
  fill(a, 128, rank, 1);
  RCHECK(ncclAllReduce(a, a, 128, ncclFloat32, ncclSum, comm, s) == ncclSuccess);
  t0 = now_s();
  /* finalizes: waits for the work, which gives up after the timeout */
  RCHECK(ncclCommDestroy(comm) == ncclSuccess);
  RCHECK(now_s() - t0 >= 0.25 && now_s() - t0 < 5);
  RCHECK(cuStreamSynchronize(s) == CUDA_SUCCESS);
}

static void test_destroy(void **state)
{
  (void)state;
  run_ranks(2, body_destroy, "300", 10);
}

/* A rank that exits with work stuck on its stream exits promptly. */
static void body_exit(ncclComm_t comm, CUstream s, int rank, int n)
{
  static float a[128];
  (void)n;
  if (rank == 1) {
    sleep_ms(1000);
    return; /* exits without ever calling */
  }
  RCHECK(ncclAllReduce(a, a, 128, ncclFloat32, ncclSum, comm, s) == ncclSuccess);
  RCHECK(ncclAllReduce(a, a, 128, ncclFloat32, ncclSum, comm, s) == ncclSuccess);
  sleep_ms(50);
}

static void test_exit_with_work(void **state)
{
  (void)state;
  run_ranks(2, body_exit, "60000", 8);
}

/* ---- capture: the call joins the graph, which never runs ---------------------------------- */

static void body_capture(ncclComm_t comm, CUstream s, int rank, int n)
{
  static float a[64], b[64];
  CUgraph g = NULL;
  CUstreamCaptureStatus st;
  fill(a, 64, rank, 1);
  fill(b, 64, rank, 2);
  RCHECK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL) == CUDA_SUCCESS);
  RCHECK(ncclAllReduce(a, a, 64, ncclFloat32, ncclSum, comm, s) == ncclSuccess);
  RCHECK(cuStreamIsCapturing(s, &st) == CUDA_SUCCESS && st == CU_STREAM_CAPTURE_STATUS_ACTIVE);
  RCHECK(cuStreamEndCapture(s, &g) == CUDA_SUCCESS && g != NULL);
  /* the next real call meets the peers' first one */
  RCHECK(ncclAllReduce(b, b, 64, ncclFloat32, ncclSum, comm, s) == ncclSuccess);
  RCHECK(cuStreamSynchronize(s) == CUDA_SUCCESS);
  RCHECK(all_equal_sum(b, 64, n, 2));
  RCHECK(a[0] == (float)(rank * 10 + 1));
  RCHECK(ncclCommDestroy(comm) == ncclSuccess);
}

static void test_capture(void **state)
{
  (void)state;
  run_ranks(2, body_capture, "5000", 10);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_async_order),
    cmocka_unit_test(test_group),
    cmocka_unit_test(test_async_error),
    cmocka_unit_test(test_abort),
    cmocka_unit_test(test_destroy),
    cmocka_unit_test(test_exit_with_work),
    cmocka_unit_test(test_capture),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
