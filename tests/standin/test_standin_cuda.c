/* test_standin_cuda.c - the CUDA driver stand-in (libcuda.so.1): stream
 * order, events and their timing, capture, cuGetProcAddress, the fake GPU
 * identity, and exit with a stuck worker.
 *
 * usage: test_standin_cuda            (the tests)
 *        test_standin_cuda exit-stuck (helper: exits with a worker stuck) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nsp_standin_cuda.h"

extern char **environ;

#define TEST_UUID "GPU-00112233-4455-6677-8899-aabbccddeeff"

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

/* ---- tasks ------------------------------------------------------------------ */

/* Blocks its stream until opened. */
struct gate {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  int open, entered;
};

static void gate_init(struct gate *g)
{
  pthread_mutex_init(&g->lock, NULL);
  pthread_cond_init(&g->cond, NULL);
  g->open = g->entered = 0;
}

static void gate_task(void *arg, int why)
{
  struct gate *g = arg;
  if (why != NSP_STANDIN_TASK_RUN)
    return;
  pthread_mutex_lock(&g->lock);
  g->entered = 1;
  pthread_cond_broadcast(&g->cond);
  while (!g->open)
    pthread_cond_wait(&g->cond, &g->lock);
  pthread_mutex_unlock(&g->lock);
}

static void gate_open(struct gate *g)
{
  pthread_mutex_lock(&g->lock);
  g->open = 1;
  pthread_cond_broadcast(&g->cond);
  pthread_mutex_unlock(&g->lock);
}

static void gate_wait_entered(struct gate *g)
{
  pthread_mutex_lock(&g->lock);
  while (!g->entered)
    pthread_cond_wait(&g->cond, &g->lock);
  pthread_mutex_unlock(&g->lock);
}

/* Appends its number to a log; sleeps a little first so that a worker
 * running tasks out of order would show it. */
struct order_log {
  atomic_int n;
  int seq[256];
};

struct order_item {
  struct order_log *log;
  int no;
};

static void order_task(void *arg, int why)
{
  struct order_item *it = arg;
  if (why == NSP_STANDIN_TASK_RUN) {
    if (it->no % 7 == 0)
      sleep_ms(1);
    it->log->seq[atomic_fetch_add(&it->log->n, 1)] = it->no;
  }
}

static void sleep_task(void *arg, int why)
{
  if (why == NSP_STANDIN_TASK_RUN)
    sleep_ms((int)(intptr_t)arg);
}

static atomic_int flag_runs;

static void flag_task(void *arg, int why)
{
  (void)arg;
  if (why == NSP_STANDIN_TASK_RUN)
    atomic_fetch_add(&flag_runs, 1);
}

/* ---- tests ------------------------------------------------------------------- */

static void test_identity(void **state)
{
  CUuuid u, u0;
  CUdevice dev;
  CUcontext ctx;
  char buf[128];
  int n, v;
  static const unsigned char want[16] = {0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77,
                                         0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff};
  (void)state;
  assert_int_equal(cuDriverGetVersion(&v), CUDA_SUCCESS);
  assert_int_equal(v, 12080); /* NSP_STANDIN_DRIVER_VERSION, set in main */
  assert_int_equal(cuDeviceGetCount(&n), CUDA_SUCCESS);
  assert_int_equal(n, 4);
  assert_int_equal(cuDeviceGet(&dev, 4), CUDA_ERROR_INVALID_DEVICE);
  /* LOCAL_RANK=6 with 4 devices: device 2 */
  assert_int_equal(cuCtxGetDevice(&dev), CUDA_SUCCESS);
  assert_int_equal(dev, 2);
  assert_int_equal(cuCtxGetCurrent(&ctx), CUDA_SUCCESS);
  assert_non_null(ctx);
  assert_int_equal(cuDeviceGetUuid(&u, 2), CUDA_SUCCESS);
  assert_memory_equal(u.bytes, want, 16);
  assert_int_equal(cuDeviceGetUuid_v2(&u, 2), CUDA_SUCCESS);
  assert_memory_equal(u.bytes, want, 16);
  assert_int_equal(cuDeviceGetUuid_v2(&u0, 0), CUDA_SUCCESS);
  assert_memory_not_equal(u0.bytes, want, 16);
  assert_int_equal(cuDeviceGetUuid_v2(&u, 1), CUDA_SUCCESS);
  assert_memory_not_equal(u0.bytes, u.bytes, 16);
  assert_int_equal(cuDeviceGetPCIBusId(buf, sizeof buf, 2), CUDA_SUCCESS);
  assert_string_equal(buf, "0000:c1:00.0");
  assert_int_equal(cuDeviceGetPCIBusId(buf, sizeof buf, 1), CUDA_SUCCESS);
  assert_string_equal(buf, "0000:01:00.0");
  assert_int_equal(cuDeviceGetName(buf, sizeof buf, 3), CUDA_SUCCESS);
  assert_string_equal(buf, "Test GPU 80GB");
  assert_int_equal(cuDeviceGetName(buf, 5, 3), CUDA_SUCCESS);
  assert_string_equal(buf, "Test");
}

static void *ctx_thread(void *arg)
{
  CUdevice dev = -1;
  CUcontext ctx = NULL, c0 = NULL;
  int *ok = arg;
  /* A new thread starts on the process's device. */
  *ok = cuCtxGetDevice(&dev) == CUDA_SUCCESS && dev == 2;
  *ok = *ok && cuDevicePrimaryCtxRetain(&c0, 0) == CUDA_SUCCESS &&
        cuCtxSetCurrent(c0) == CUDA_SUCCESS && cuCtxGetDevice(&dev) == CUDA_SUCCESS && dev == 0;
  *ok = *ok && cuCtxGetCurrent(&ctx) == CUDA_SUCCESS && ctx == c0;
  *ok = *ok && cuCtxSetCurrent(NULL) == CUDA_SUCCESS && cuCtxGetCurrent(&ctx) == CUDA_SUCCESS &&
        ctx == NULL && cuCtxGetDevice(&dev) == CUDA_ERROR_INVALID_CONTEXT;
  return NULL;
}

static void test_contexts(void **state)
{
  pthread_t t;
  CUcontext c2, cur, sctx;
  CUstream s;
  CUdevice dev;
  int ok = 0;
  (void)state;
  assert_int_equal(pthread_create(&t, NULL, ctx_thread, &ok), 0);
  pthread_join(t, NULL);
  assert_true(ok);
  /* this thread is untouched */
  assert_int_equal(cuCtxGetDevice(&dev), CUDA_SUCCESS);
  assert_int_equal(dev, 2);
  assert_int_equal(cuDevicePrimaryCtxRetain(&c2, 2), CUDA_SUCCESS);
  assert_int_equal(cuCtxGetCurrent(&cur), CUDA_SUCCESS);
  assert_ptr_equal(cur, c2);
  assert_int_equal(cuCtxSetCurrent((CUcontext)&dev), CUDA_ERROR_INVALID_CONTEXT);
  assert_int_equal(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  assert_int_equal(cuStreamGetCtx(s, &sctx), CUDA_SUCCESS);
  assert_ptr_equal(sctx, c2);
  assert_int_equal(cuStreamGetCtx(NULL, &sctx), CUDA_SUCCESS);
  assert_ptr_equal(sctx, c2);
  assert_int_equal(cuStreamDestroy(s), CUDA_SUCCESS);
  assert_int_equal(cuStreamCreate(&s, 0x10), CUDA_ERROR_INVALID_VALUE);
}

static void test_stream_order(void **state)
{
  static struct order_log log;
  static struct order_item items[200];
  CUstream s;
  struct gate g;
  int i;
  (void)state;
  atomic_store(&log.n, 0);
  gate_init(&g);
  assert_int_equal(cuStreamCreate(&s, 0), CUDA_SUCCESS);
  assert_int_equal(cuStreamQuery(s), CUDA_SUCCESS);
  assert_int_equal(nsp_standin_stream_enqueue(s, gate_task, &g), NSP_STANDIN_ENQ_QUEUED);
  for (i = 0; i < 200; i++) {
    items[i].log = &log;
    items[i].no = i;
    assert_int_equal(nsp_standin_stream_enqueue(s, order_task, &items[i]), NSP_STANDIN_ENQ_QUEUED);
  }
  gate_wait_entered(&g);
  assert_int_equal(cuStreamQuery(s), CUDA_ERROR_NOT_READY);
  assert_int_equal(atomic_load(&log.n), 0);
  gate_open(&g);
  assert_int_equal(cuStreamSynchronize(s), CUDA_SUCCESS);
  assert_int_equal(cuStreamQuery(s), CUDA_SUCCESS);
  assert_int_equal(atomic_load(&log.n), 200);
  for (i = 0; i < 200; i++)
    assert_int_equal(log.seq[i], i);
  assert_int_equal(cuStreamDestroy_v2(s), CUDA_SUCCESS);
  assert_int_equal(nsp_standin_stream_enqueue(NULL, NULL, NULL), NSP_STANDIN_ENQ_ERROR);
}

static void test_null_stream(void **state)
{
  CUevent e;
  struct gate g;
  (void)state;
  gate_init(&g);
  atomic_store(&flag_runs, 0);
  assert_int_equal(nsp_standin_stream_enqueue(NULL, gate_task, &g), NSP_STANDIN_ENQ_QUEUED);
  assert_int_equal(nsp_standin_stream_enqueue(CU_STREAM_LEGACY, flag_task, NULL),
                   NSP_STANDIN_ENQ_QUEUED);
  assert_int_equal(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  assert_int_equal(cuEventRecord(e, NULL), CUDA_SUCCESS);
  gate_wait_entered(&g);
  assert_int_equal(cuEventQuery(e), CUDA_ERROR_NOT_READY);
  assert_int_equal(cuStreamQuery(NULL), CUDA_ERROR_NOT_READY);
  gate_open(&g);
  assert_int_equal(cuStreamSynchronize(NULL), CUDA_SUCCESS);
  assert_int_equal(atomic_load(&flag_runs), 1);
  assert_int_equal(cuEventQuery(e), CUDA_SUCCESS);
  assert_int_equal(cuEventDestroy(e), CUDA_SUCCESS);
  assert_int_equal(cuStreamDestroy(NULL), CUDA_ERROR_INVALID_HANDLE);
}

static void test_events(void **state)
{
  CUstream s;
  CUevent a, b, never;
  struct gate g;
  float ms = -1;
  (void)state;
  gate_init(&g);
  assert_int_equal(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  assert_int_equal(cuEventCreate(&a, CU_EVENT_DEFAULT), CUDA_SUCCESS);
  assert_int_equal(cuEventCreate(&b, CU_EVENT_DEFAULT), CUDA_SUCCESS);
  assert_int_equal(cuEventCreate(&never, CU_EVENT_DEFAULT), CUDA_SUCCESS);
  /* never recorded: complete, but no time */
  assert_int_equal(cuEventQuery(never), CUDA_SUCCESS);
  assert_int_equal(cuEventSynchronize(never), CUDA_SUCCESS);
  /* on an idle stream an event completes at once */
  assert_int_equal(cuEventRecord(a, s), CUDA_SUCCESS);
  assert_int_equal(cuEventQuery(a), CUDA_SUCCESS);
  assert_int_equal(cuEventElapsedTime(&ms, never, a), CUDA_ERROR_INVALID_HANDLE);
  /* behind blocked work: pending until the work is done */
  assert_int_equal(nsp_standin_stream_enqueue(s, gate_task, &g), NSP_STANDIN_ENQ_QUEUED);
  assert_int_equal(nsp_standin_stream_enqueue(s, sleep_task, (void *)(intptr_t)50),
                   NSP_STANDIN_ENQ_QUEUED);
  assert_int_equal(cuEventRecordWithFlags(b, s, CU_EVENT_RECORD_DEFAULT), CUDA_SUCCESS);
  assert_int_equal(cuEventQuery(b), CUDA_ERROR_NOT_READY);
  assert_int_equal(cuEventElapsedTime(&ms, a, b), CUDA_ERROR_NOT_READY);
  assert_int_equal(cuEventElapsedTime_v2(&ms, b, a), CUDA_ERROR_NOT_READY);
  gate_wait_entered(&g);
  sleep_ms(20);
  assert_int_equal(cuEventQuery(b), CUDA_ERROR_NOT_READY);
  gate_open(&g);
  assert_int_equal(cuEventSynchronize(b), CUDA_SUCCESS);
  assert_int_equal(cuEventQuery(b), CUDA_SUCCESS);
  /* a completed at once, b after the gate (20 ms) and a 50 ms sleep */
  assert_int_equal(cuEventElapsedTime(&ms, a, b), CUDA_SUCCESS);
  assert_true(ms >= 65.0f && ms < 5000.0f);
  assert_int_equal(cuEventElapsedTime_v2(&ms, b, a), CUDA_SUCCESS);
  assert_true(ms <= -65.0f);
  /* re-recording resets: a is pending again, behind a new gate */
  gate_init(&g);
  assert_int_equal(nsp_standin_stream_enqueue(s, gate_task, &g), NSP_STANDIN_ENQ_QUEUED);
  assert_int_equal(cuEventRecord(a, s), CUDA_SUCCESS);
  assert_int_equal(cuEventQuery(a), CUDA_ERROR_NOT_READY);
  assert_int_equal(cuEventElapsedTime(&ms, a, b), CUDA_ERROR_NOT_READY);
  gate_open(&g);
  assert_int_equal(cuEventSynchronize(a), CUDA_SUCCESS);
  assert_int_equal(cuEventElapsedTime(&ms, b, a), CUDA_SUCCESS);
  assert_true(ms >= 0.0f);
  assert_int_equal(cuEventDestroy_v2(a), CUDA_SUCCESS);
  assert_int_equal(cuEventDestroy_v2(b), CUDA_SUCCESS);
  assert_int_equal(cuEventDestroy_v2(never), CUDA_SUCCESS);
  assert_int_equal(cuStreamDestroy(s), CUDA_SUCCESS);
  assert_int_equal(cuEventCreate(&a, 0x100), CUDA_ERROR_INVALID_VALUE);
  assert_int_equal(cuEventCreate(&a, CU_EVENT_INTERPROCESS), CUDA_ERROR_INVALID_VALUE);
}

static void test_disable_timing(void **state)
{
  CUstream s;
  CUevent timed, plain;
  float ms = -1;
  (void)state;
  assert_int_equal(cuStreamCreate(&s, 0), CUDA_SUCCESS);
  assert_int_equal(cuEventCreate(&timed, 0), CUDA_SUCCESS);
  assert_int_equal(cuEventCreate(&plain, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  assert_int_equal(cuEventRecord(timed, s), CUDA_SUCCESS);
  assert_int_equal(nsp_standin_stream_enqueue(s, sleep_task, (void *)(intptr_t)5),
                   NSP_STANDIN_ENQ_QUEUED);
  assert_int_equal(cuEventRecord(plain, s), CUDA_SUCCESS);
  assert_int_equal(cuEventSynchronize(plain), CUDA_SUCCESS);
  assert_int_equal(cuEventQuery(plain), CUDA_SUCCESS);
  assert_int_equal(cuEventElapsedTime(&ms, timed, plain), CUDA_ERROR_INVALID_HANDLE);
  assert_int_equal(cuEventElapsedTime(&ms, plain, timed), CUDA_ERROR_INVALID_HANDLE);
  assert_true(ms == -1.0f);
  assert_int_equal(cuEventElapsedTime(&ms, timed, timed), CUDA_SUCCESS);
  assert_true(ms == 0.0f);
  assert_int_equal(cuEventDestroy(timed), CUDA_SUCCESS);
  assert_int_equal(cuEventDestroy(plain), CUDA_SUCCESS);
  assert_int_equal(cuStreamDestroy(s), CUDA_SUCCESS);
}

static void test_capture(void **state)
{
  CUstream s;
  CUevent e, e2;
  CUgraph graph = NULL;
  CUstreamCaptureStatus st;
  (void)state;
  atomic_store(&flag_runs, 0);
  assert_int_equal(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  assert_int_equal(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  assert_int_equal(cuEventCreate(&e2, 0), CUDA_SUCCESS);
  assert_int_equal(cuStreamIsCapturing(s, &st), CUDA_SUCCESS);
  assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_NONE);

  /* capture 1: a query of a captured event is refused and invalidates it */
  assert_int_equal(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  assert_int_equal(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL),
                   CUDA_ERROR_ILLEGAL_STATE);
  assert_int_equal(cuStreamIsCapturing(s, &st), CUDA_SUCCESS);
  assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
  assert_int_equal(nsp_standin_stream_enqueue(s, flag_task, NULL), NSP_STANDIN_ENQ_CAPTURED);
  assert_int_equal(cuEventRecord(e, s), CUDA_SUCCESS);
  assert_int_equal(cuEventQuery(e), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  assert_int_equal(cuStreamIsCapturing(s, &st), CUDA_SUCCESS);
  assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  assert_int_equal(cuStreamEndCapture(s, &graph), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  assert_null(graph);
  /* after the capture: "last recorded in a capturing stream" */
  assert_int_equal(cuEventQuery(e), CUDA_ERROR_CAPTURED_EVENT);

  /* capture 2, legacy entry point: a clean capture gives a graph */
  assert_int_equal(cuStreamBeginCapture(s), CUDA_SUCCESS);
  assert_int_equal(cuEventRecord(e2, s), CUDA_SUCCESS);
  assert_int_equal(nsp_standin_stream_enqueue(s, flag_task, NULL), NSP_STANDIN_ENQ_CAPTURED);
  assert_int_equal(cuStreamEndCapture(s, &graph), CUDA_SUCCESS);
  assert_non_null(graph);
  assert_int_equal(cuEventQuery(e2), CUDA_ERROR_CAPTURED_EVENT);
  assert_int_equal(cuEventSynchronize(e2), CUDA_ERROR_CAPTURED_EVENT);
  assert_int_equal(cuStreamEndCapture(s, &graph), CUDA_ERROR_ILLEGAL_STATE);

  /* capture 3: synchronizing a capturing stream is refused too */
  assert_int_equal(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
  assert_int_equal(cuStreamSynchronize(s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  assert_int_equal(cuStreamEndCapture(s, &graph), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);

  /* the NULL stream cannot be captured */
  assert_int_equal(cuStreamBeginCapture_v2(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL),
                   CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  assert_int_equal(cuStreamIsCapturing(NULL, &st), CUDA_SUCCESS);
  assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_NONE);

  /* captured work never ran; recording again outside capture works */
  assert_int_equal(cuStreamSynchronize(s), CUDA_SUCCESS);
  assert_int_equal(atomic_load(&flag_runs), 0);
  assert_int_equal(cuEventRecord(e, s), CUDA_SUCCESS);
  assert_int_equal(cuEventSynchronize(e), CUDA_SUCCESS);
  assert_int_equal(cuEventQuery(e), CUDA_SUCCESS);
  assert_int_equal(cuEventDestroy(e), CUDA_SUCCESS);
  assert_int_equal(cuEventDestroy(e2), CUDA_SUCCESS);
  assert_int_equal(cuStreamDestroy(s), CUDA_SUCCESS);
}

/* What a query of `e` from another thread returns, that thread's capture
 * interaction mode set to `mode` first (-1: left at its default). */
struct query_arg {
  CUevent e;
  int mode;
  CUresult result;
  CUstreamCaptureMode was;
};

static void *query_thread(void *p)
{
  struct query_arg *a = p;
  a->was = (CUstreamCaptureMode)-1;
  if (a->mode >= 0) {
    CUstreamCaptureMode m = (CUstreamCaptureMode)a->mode;
    if (cuThreadExchangeStreamCaptureMode(&m) != CUDA_SUCCESS)
      return NULL;
    a->was = m;
  }
  a->result = cuEventQuery(a->e);
  return NULL;
}

static CUresult query_from_thread(CUevent e, int mode)
{
  struct query_arg a = {e, mode, (CUresult)-1, (CUstreamCaptureMode)-1};
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, query_thread, &a), 0);
  assert_int_equal(pthread_join(t, NULL), 0);
  if (mode >= 0)
    assert_int_equal(a.was, CU_STREAM_CAPTURE_MODE_GLOBAL); /* a new thread's default */
  return a.result;
}

/* Queries are potentially unsafe during a capture: refused (and the
 * capture invalidated) from a thread in GLOBAL mode while another thread
 * captures in GLOBAL mode, and from the capturing thread itself unless it
 * is RELAXED; allowed from a thread in THREAD_LOCAL or RELAXED mode during
 * another's capture.  Events here were recorded outside any capture. */
static void test_capture_modes(void **state)
{
  CUstream s;
  CUevent e;
  CUgraph graph = NULL;
  CUstreamCaptureMode m;
  (void)state;
  assert_int_equal(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  assert_int_equal(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  assert_int_equal(cuEventRecord(e, s), CUDA_SUCCESS);
  assert_int_equal(cuEventSynchronize(e), CUDA_SUCCESS);

  /* another thread in GLOBAL mode, a GLOBAL capture here: refused */
  assert_int_equal(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  assert_int_equal(query_from_thread(e, -1), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  assert_int_equal(cuStreamEndCapture(s, &graph), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  /* the same thread in THREAD_LOCAL (or RELAXED) mode: allowed */
  assert_int_equal(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  assert_int_equal(query_from_thread(e, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), CUDA_SUCCESS);
  assert_int_equal(query_from_thread(e, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
  assert_int_equal(cuStreamEndCapture(s, &graph), CUDA_SUCCESS);
  /* a THREAD_LOCAL capture: other threads are not bound by it */
  assert_int_equal(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), CUDA_SUCCESS);
  assert_int_equal(query_from_thread(e, -1), CUDA_SUCCESS);
  assert_int_equal(cuStreamEndCapture(s, &graph), CUDA_SUCCESS);
  /* the capturing thread itself: refused unless RELAXED */
  m = CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
  assert_int_equal(cuThreadExchangeStreamCaptureMode(&m), CUDA_SUCCESS);
  assert_int_equal(m, CU_STREAM_CAPTURE_MODE_GLOBAL);
  assert_int_equal(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), CUDA_SUCCESS);
  assert_int_equal(cuEventQuery(e), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  assert_int_equal(cuStreamEndCapture(s, &graph), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  m = CU_STREAM_CAPTURE_MODE_RELAXED;
  assert_int_equal(cuThreadExchangeStreamCaptureMode(&m), CUDA_SUCCESS);
  assert_int_equal(m, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
  assert_int_equal(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  assert_int_equal(cuEventQuery(e), CUDA_SUCCESS);
  assert_int_equal(cuStreamEndCapture(s, &graph), CUDA_SUCCESS);
  m = CU_STREAM_CAPTURE_MODE_GLOBAL;
  assert_int_equal(cuThreadExchangeStreamCaptureMode(&m), CUDA_SUCCESS);
  m = (CUstreamCaptureMode)7;
  assert_int_equal(cuThreadExchangeStreamCaptureMode(&m), CUDA_ERROR_INVALID_VALUE);
  assert_int_equal(cuEventDestroy(e), CUDA_SUCCESS);
  assert_int_equal(cuStreamDestroy(s), CUDA_SUCCESS);
}

typedef CUresult (*record_fn)(CUevent, CUstream);
typedef CUresult (*destroy_fn)(CUevent);
typedef CUresult (*elapsed_fn)(float *, CUevent, CUevent);
typedef CUresult (*begin_v1_fn)(CUstream);
typedef CUresult (*begin_v2_fn)(CUstream, CUstreamCaptureMode);
typedef CUresult (*getproc_v2_fn)(const char *, void **, int, cuuint64_t,
                                  CUdriverProcAddressQueryResult *);
typedef CUresult (*getctx_v2_fn)(CUstream, CUcontext *, void **);
typedef CUresult (*getdev_v2_fn)(CUdevice *, CUcontext);

/* The function cuGetProcAddress_v2 gives for (name, version), as `T`. */
#define PROC(T, var, name, ver, want_status)                                               \
  do {                                                                                     \
    void *p_ = NULL;                                                                       \
    CUdriverProcAddressQueryResult st_ = (CUdriverProcAddressQueryResult)-1;               \
    assert_int_equal(cuGetProcAddress_v2(name, &p_, ver, CU_GET_PROC_ADDRESS_DEFAULT, &st_), \
                     CUDA_SUCCESS);                                                        \
    assert_int_equal(st_, (want_status));                                                  \
    assert_non_null(p_);                                                                   \
    memcpy(&(var), &p_, sizeof(var));                                                      \
  } while (0)

static void test_get_proc_address(void **state)
{
  record_fn rec;
  destroy_fn des;
  elapsed_fn el;
  begin_v1_fn b1;
  begin_v2_fn b2;
  getproc_v2_fn gp;
  getctx_v2_fn gc;
  getdev_v2_fn gd;
  void *p = (void *)&p;
  CUdriverProcAddressQueryResult st;
  CUcontext ctx = NULL, cur = NULL;
  void *green = (void *)&ctx;
  CUdevice dev = -1;
  (void)state;
  PROC(record_fn, rec, "cuEventRecord", 12000, CU_GET_PROC_ADDRESS_SUCCESS);
  assert_true(rec == cuEventRecord);
  PROC(destroy_fn, des, "cuEventDestroy", 12000, CU_GET_PROC_ADDRESS_SUCCESS);
  assert_true(des == cuEventDestroy_v2);
  PROC(destroy_fn, des, "cuEventDestroy", 3020, CU_GET_PROC_ADDRESS_SUCCESS);
  assert_true(des == cuEventDestroy);
  PROC(destroy_fn, des, "cuStreamDestroy", 13000, CU_GET_PROC_ADDRESS_SUCCESS);
  assert_true(des == (destroy_fn)(void (*)(void))cuStreamDestroy_v2);
  PROC(elapsed_fn, el, "cuEventElapsedTime", 12000, CU_GET_PROC_ADDRESS_SUCCESS);
  assert_true(el == cuEventElapsedTime);
  PROC(elapsed_fn, el, "cuEventElapsedTime", 12080, CU_GET_PROC_ADDRESS_SUCCESS);
  assert_true(el == cuEventElapsedTime_v2);
  PROC(begin_v1_fn, b1, "cuStreamBeginCapture", 10000, CU_GET_PROC_ADDRESS_SUCCESS);
  assert_true(b1 == cuStreamBeginCapture);
  PROC(begin_v2_fn, b2, "cuStreamBeginCapture", 12000, CU_GET_PROC_ADDRESS_SUCCESS);
  assert_true(b2 == cuStreamBeginCapture_v2);
  PROC(getproc_v2_fn, gp, "cuGetProcAddress", 12000, CU_GET_PROC_ADDRESS_SUCCESS);
  assert_true(gp == cuGetProcAddress_v2);
  /* what cuGetProcAddress_v2 found works */
  PROC(record_fn, rec, "cuEventQuery", 12000, CU_GET_PROC_ADDRESS_SUCCESS);
  /* CUDA 12.5+: cuStreamGetCtx is the three-argument _v2; 13.0+:
   * cuCtxGetDevice takes a context */
  PROC(getctx_v2_fn, gc, "cuStreamGetCtx", 13000, CU_GET_PROC_ADDRESS_SUCCESS);
  assert_int_equal(gc(NULL, &ctx, &green), CUDA_SUCCESS);
  assert_null(green);
  assert_int_equal(cuCtxGetCurrent(&cur), CUDA_SUCCESS);
  assert_ptr_equal(ctx, cur);
  PROC(getdev_v2_fn, gd, "cuCtxGetDevice", 13000, CU_GET_PROC_ADDRESS_SUCCESS);
  assert_int_equal(gd(&dev, cur), CUDA_SUCCESS);
  assert_int_equal(dev, 2);
  /* too old a version, an unknown name */
  assert_int_equal(cuGetProcAddress_v2("cuEventRecordWithFlags", &p, 11000, 0, &st),
                   CUDA_ERROR_NOT_FOUND);
  assert_int_equal(st, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  assert_null(p);
  p = (void *)&p;
  assert_int_equal(cuGetProcAddress_v2("cuNoSuchThing", &p, 13000, 0, &st), CUDA_ERROR_NOT_FOUND);
  assert_int_equal(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  assert_null(p);
  assert_int_equal(cuGetProcAddress_v2("cuInit", &p, 13000, 0x80, &st), CUDA_ERROR_INVALID_VALUE);
  /* the legacy four-argument entry point */
  assert_int_equal(cuGetProcAddress("cuEventRecord", &p, 12000,
                                    CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM), CUDA_SUCCESS);
  memcpy(&rec, &p, sizeof rec);
  assert_true(rec == cuEventRecord);
}

static void test_errors(void **state)
{
  const char *s = NULL;
  (void)state;
  assert_int_equal(cuGetErrorName(CUDA_ERROR_NOT_READY, &s), CUDA_SUCCESS);
  assert_string_equal(s, "CUDA_ERROR_NOT_READY");
  assert_int_equal(cuGetErrorName(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, &s), CUDA_SUCCESS);
  assert_string_equal(s, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED");
  assert_int_equal(cuGetErrorString(CUDA_ERROR_INVALID_HANDLE, &s), CUDA_SUCCESS);
  assert_string_equal(s, "invalid resource handle");
  assert_int_equal(cuGetErrorString(12345, &s), CUDA_ERROR_INVALID_VALUE);
  assert_null(s);
  assert_int_equal(cuInit(1), CUDA_ERROR_INVALID_VALUE);
}

/* cuStreamDestroy of a busy stream returns at once; the work still runs. */
static void test_destroy_busy(void **state)
{
  CUstream s, s2;
  struct gate g;
  double t0;
  (void)state;
  gate_init(&g);
  atomic_store(&flag_runs, 0);
  assert_int_equal(cuStreamCreate(&s, 0), CUDA_SUCCESS);
  assert_int_equal(nsp_standin_stream_enqueue(s, gate_task, &g), NSP_STANDIN_ENQ_QUEUED);
  assert_int_equal(nsp_standin_stream_enqueue(s, flag_task, NULL), NSP_STANDIN_ENQ_QUEUED);
  gate_wait_entered(&g);
  t0 = now_s();
  assert_int_equal(cuStreamDestroy(s), CUDA_SUCCESS);
  assert_true(now_s() - t0 < 1.0);
  assert_int_equal(atomic_load(&flag_runs), 0);
  gate_open(&g);
  for (t0 = now_s(); atomic_load(&flag_runs) == 0 && now_s() - t0 < 10;)
    sleep_ms(1);
  assert_int_equal(atomic_load(&flag_runs), 1);
  /* the next create reaps the drained worker */
  sleep_ms(10);
  assert_int_equal(cuStreamCreate(&s2, 0), CUDA_SUCCESS);
  assert_int_equal(cuStreamDestroy(s2), CUDA_SUCCESS);
}

/* Event destroyed while its marker is queued: freed when the marker ran. */
static void test_destroy_pending_event(void **state)
{
  CUstream s;
  CUevent e;
  struct gate g;
  (void)state;
  gate_init(&g);
  assert_int_equal(cuStreamCreate(&s, 0), CUDA_SUCCESS);
  assert_int_equal(cuEventCreate(&e, 0), CUDA_SUCCESS);
  assert_int_equal(nsp_standin_stream_enqueue(s, gate_task, &g), NSP_STANDIN_ENQ_QUEUED);
  assert_int_equal(cuEventRecord(e, s), CUDA_SUCCESS);
  assert_int_equal(cuEventDestroy(e), CUDA_SUCCESS);
  gate_open(&g);
  assert_int_equal(cuStreamSynchronize(s), CUDA_SUCCESS);
  assert_int_equal(cuStreamDestroy(s), CUDA_SUCCESS);
}

/* Several threads, each with its own stream and events, at once. */
struct stress_arg {
  int ok;
  struct order_log log;
  struct order_item items[256];
};

static void *stress_thread(void *p)
{
  struct stress_arg *a = p;
  CUstream s;
  CUevent ev[4];
  int i, ok = cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS;
  for (i = 0; i < 4; i++)
    ok = ok && cuEventCreate(&ev[i], i % 2 ? CU_EVENT_DISABLE_TIMING : 0) == CUDA_SUCCESS;
  for (i = 0; ok && i < 256; i++) {
    CUresult q;
    a->items[i].log = &a->log;
    a->items[i].no = i;
    ok = nsp_standin_stream_enqueue(s, order_task, &a->items[i]) == NSP_STANDIN_ENQ_QUEUED;
    ok = ok && cuEventRecord(ev[i % 4], s) == CUDA_SUCCESS;
    q = cuEventQuery(ev[(i + 1) % 4]);
    ok = ok && (q == CUDA_SUCCESS || q == CUDA_ERROR_NOT_READY);
  }
  ok = ok && cuStreamSynchronize(s) == CUDA_SUCCESS;
  for (i = 0; ok && i < 4; i++)
    ok = cuEventQuery(ev[i]) == CUDA_SUCCESS && cuEventDestroy(ev[i]) == CUDA_SUCCESS;
  ok = ok && atomic_load(&a->log.n) == 256;
  for (i = 0; ok && i < 256; i++)
    ok = a->log.seq[i] == i;
  a->ok = ok && cuStreamDestroy(s) == CUDA_SUCCESS;
  return NULL;
}

static void test_threads(void **state)
{
  static struct stress_arg args[6];
  pthread_t t[6];
  int i;
  (void)state;
  for (i = 0; i < 6; i++) {
    memset(&args[i], 0, sizeof args[i]);
    assert_int_equal(pthread_create(&t[i], NULL, stress_thread, &args[i]), 0);
  }
  for (i = 0; i < 6; i++) {
    pthread_join(t[i], NULL);
    assert_true(args[i].ok);
  }
}

/* A process whose stream worker is stuck in a task still exits promptly;
 * a child forked after cuInit cannot use the driver. */
static void test_exit_and_fork(void **state)
{
  char *argv[] = {(char *)"test_standin_cuda", (char *)"exit-stuck", NULL};
  pid_t pid;
  int st;
  double t0 = now_s();
  (void)state;
  assert_int_equal(posix_spawn(&pid, "/proc/self/exe", NULL, NULL, argv, environ), 0);
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFEXITED(st));
  assert_int_equal(WEXITSTATUS(st), 0);
  assert_true(now_s() - t0 < 5.0);

  pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    CUstream s;
    _exit(cuStreamCreate(&s, 0) == CUDA_ERROR_NOT_INITIALIZED &&
                  cuInit(0) == CUDA_ERROR_NOT_INITIALIZED
              ? 0
              : 1);
  }
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFEXITED(st));
  assert_int_equal(WEXITSTATUS(st), 0);
}

static int exit_stuck(void)
{
  CUstream s;
  CUevent e;
  if (cuInit(0) != CUDA_SUCCESS || cuStreamCreate(&s, 0) != CUDA_SUCCESS ||
      cuEventCreate(&e, 0) != CUDA_SUCCESS)
    return 3;
  /* an hour of "GPU work", then more queued behind it */
  if (nsp_standin_stream_enqueue(s, sleep_task, (void *)(intptr_t)3600000) !=
          NSP_STANDIN_ENQ_QUEUED ||
      nsp_standin_stream_enqueue(s, flag_task, NULL) != NSP_STANDIN_ENQ_QUEUED ||
      cuEventRecord(e, s) != CUDA_SUCCESS || cuEventDestroy(e) != CUDA_SUCCESS)
    return 4;
  return 0; /* the event's marker is cancelled at exit, and frees it */
}

int main(int argc, char **argv)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_identity),
    cmocka_unit_test(test_contexts),
    cmocka_unit_test(test_stream_order),
    cmocka_unit_test(test_null_stream),
    cmocka_unit_test(test_events),
    cmocka_unit_test(test_disable_timing),
    cmocka_unit_test(test_capture),
    cmocka_unit_test(test_capture_modes),
    cmocka_unit_test(test_get_proc_address),
    cmocka_unit_test(test_errors),
    cmocka_unit_test(test_destroy_busy),
    cmocka_unit_test(test_destroy_pending_event),
    cmocka_unit_test(test_threads),
    cmocka_unit_test(test_exit_and_fork),
  };
  int n;
  if (argc == 2 && !strcmp(argv[1], "exit-stuck"))
    return exit_stuck();
  setenv("NSP_STANDIN_GPUS", "4", 1);
  setenv("LOCAL_RANK", "6", 1);
  setenv("NSP_STANDIN_GPU_UUID", TEST_UUID, 1);
  setenv("NSP_STANDIN_GPU_NAME", "Test GPU 80GB", 1);
  setenv("NSP_STANDIN_GPU_BUS", "0000:c1:00.0", 1);
  setenv("NSP_STANDIN_DRIVER_VERSION", "12080", 1);
  /* before cuInit */
  if (cuDeviceGetCount(&n) != CUDA_ERROR_NOT_INITIALIZED) {
    fprintf(stderr, "cuDeviceGetCount before cuInit did not fail\n");
    return 1;
  }
  if (cuInit(0) != CUDA_SUCCESS) {
    fprintf(stderr, "cuInit failed\n");
    return 1;
  }
  return cmocka_run_group_tests(tests, NULL, NULL);
}
