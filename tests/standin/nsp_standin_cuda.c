/* nsp_standin_cuda.c - a CPU stand-in for the CUDA driver (libcuda.so.1),
 * used by ncclspy's tests in place of the real one.  Built from
 * nsp_standin_cuda.h alone (no CUDA headers).
 *
 * What a test can rely on
 * -----------------------
 * - Exports exactly the entry points declared in nsp_standin_cuda.h, with
 *   the real driver's symbol names and ABIs (cuStreamDestroy and
 *   cuStreamDestroy_v2, ...; the unsuffixed cuStreamBeginCapture and
 *   cuGetProcAddress are the legacy ones), plus the hook
 *   nsp_standin_stream_enqueue for the NCCL stand-in.
 * - cuGetProcAddress(_v2) hands out, for a base name and a CUDA version,
 *   the function the real driver would: "cuEventDestroy" -> the _v2 one
 *   from 4.0, "cuStreamBeginCapture" -> _v2 from 10.1, "cuDeviceGetUuid"
 *   -> _v2 from 11.4, "cuEventElapsedTime" -> _v2 from 12.8,
 *   "cuGetProcAddress" -> _v2 from 12.0, and for "cuStreamGetCtx" from
 *   12.5 and "cuCtxGetDevice" from 13.0 the three- and two-argument
 *   versions (reachable only this way: they are not exported).  Older
 *   versions than a name's first get CUDA_ERROR_NOT_FOUND with
 *   CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT.  The per-thread-stream
 *   flag changes nothing (the stand-in has one kind of NULL stream).
 * - Everything but cuDriverGetVersion, cuGetErrorString/Name and
 *   cuGetProcAddress returns CUDA_ERROR_NOT_INITIALIZED before cuInit.
 * - Devices: NSP_STANDIN_GPUS of them.  One primary context per device.
 *   Every thread's current context starts as the primary context of the
 *   process's device (LOCAL_RANK modulo the device count, else 0), as
 *   after torch's cudaSetDevice; cuCtxSetCurrent changes it per thread.
 * - Streams: each stream has a worker thread that runs its work in order:
 *   event markers and tasks queued by nsp_standin_stream_enqueue.  The
 *   NULL stream (also CU_STREAM_LEGACY, CU_STREAM_PER_THREAD) is one more
 *   such stream per context, made on first use; it does NOT synchronize
 *   implicitly with the other streams (as if every stream were created
 *   CU_STREAM_NON_BLOCKING).
 * - cuEventRecord queues a marker: the event completes when everything
 *   queued before it on that stream has run (at once if the stream is
 *   idle), taking a CLOCK_MONOTONIC timestamp unless the event was made
 *   with CU_EVENT_DISABLE_TIMING.  Re-recording resets it; an event never
 *   recorded is complete.  cuEventElapsedTime: CUDA_ERROR_NOT_READY while
 *   either is pending, CUDA_ERROR_INVALID_HANDLE when either has timing
 *   disabled or was never recorded.  cuEventDestroy of a pending event
 *   returns at once; its memory goes when the marker has run.
 * - Capture: between cuStreamBeginCapture(_v2) and cuStreamEndCapture a
 *   stream runs nothing new: work queued then is dropped (it belongs to
 *   the graph, which the stand-in never replays); cuStreamEndCapture
 *   hands back a dummy graph.  Work queued before the capture still runs.
 *   Events recorded during capture: cuEventQuery/Synchronize/ElapsedTime
 *   return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED while the capture lasts
 *   (and, as the real driver does for an unsafe call in global mode, the
 *   capture is invalidated: cuStreamEndCapture then returns
 *   CUDA_ERROR_STREAM_CAPTURE_INVALIDATED), CUDA_ERROR_CAPTURED_EVENT
 *   after it.  cuStreamSynchronize/cuStreamQuery on a capturing stream
 *   return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidate it too.
 *   Those four calls are also what the driver calls potentially unsafe
 *   during any capture: made from a thread whose interaction mode
 *   (cuThreadExchangeStreamCaptureMode, GLOBAL by default) is not
 *   RELAXED, during the thread's own capture, or, in GLOBAL mode, during
 *   another thread's capture begun in GLOBAL mode, they return
 *   CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidate that capture (a
 *   watchdog thread querying events while the program captures a graph:
 *   pytorch/pytorch#104487, #148594).
 *   The NULL stream cannot be captured.
 * - cuStreamDestroy returns at once, like the real driver: work already
 *   queued still runs.  An idle stream's worker is joined there; a busy
 *   one's when it has drained, by a later cuStreamCreate/cuStreamDestroy
 *   or at unload.
 * - At unload (process exit; the library is linked -z nodelete, so
 *   dlclose never unmaps it) work not yet started is cancelled, and
 *   workers are joined if they finish within NSP_STANDIN_EXIT_WAIT_MS;
 *   one stuck in a task is left to die with the process, never waited
 *   for longer.
 * - In a child forked after cuInit, every call fails with
 *   CUDA_ERROR_NOT_INITIALIZED (the workers did not follow it), as CUDA
 *   does in such a child.
 * - Thread-safe.  Handles are checked by a magic number; a destroyed
 *   handle is as invalid as in CUDA (do not use it).
 *
 * Environment (read at cuInit, except the driver version)
 * -----------
 * NSP_STANDIN_GPUS            device count (default 8, at most 64; 0:
 *                             cuInit returns CUDA_ERROR_NO_DEVICE)
 * NSP_STANDIN_GPU_UUID        UUID of the process's device, as
 *                             "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" or
 *                             32 hex digits; any other text is hashed into
 *                             16 bytes.  Default (every device): a hash of
 *                             the host name and the device index.  "none":
 *                             cuDeviceGetUuid(_v2) of that device fails
 *                             (CUDA_ERROR_NOT_SUPPORTED), a GPU whose
 *                             identity is only its PCI bus id.
 * NSP_STANDIN_GPU_NAME        name of every device (default "Stand-in H200")
 * NSP_STANDIN_GPU_BUS         PCI bus id of the process's device (default,
 *                             every device: "0000:%02x:00.0" of its index)
 * NSP_STANDIN_DRIVER_VERSION  what cuDriverGetVersion reports (default
 *                             13000); read at each call
 * NSP_STANDIN_EXIT_WAIT_MS    how long unload waits for busy workers
 *                             (default 200)
 * LOCAL_RANK                  picks the process's device (see above)
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nsp_standin_cuda.h"

#define NSP_CU_API __attribute__((visibility("default")))

#define NSP_CU_MAX_DEVICES 64
#define NSP_CU_DEFAULT_DEVICES 8
#define NSP_CU_DRIVER_VERSION 13000
#define NSP_CU_CTX_MAGIC 0x43545831u    /* "CTX1" */
#define NSP_CU_STREAM_MAGIC 0x53544d31u /* "STM1" */
#define NSP_CU_EVENT_MAGIC 0x45564e31u  /* "EVN1" */

struct CUctx_st {
  uint32_t magic;
  int device;
  struct CUstream_st *null_stream; /* made on first use, under nsp_cu.lock */
};

/* One item of a stream's queue: a task (fn) or an event marker (ev). */
struct nsp_cu_task {
  struct nsp_cu_task *next;
  nsp_standin_task_fn fn;
  void *arg;
  struct CUevent_st *ev;
  uint64_t gen; /* the record of ev this marker completes */
};

struct CUstream_st {
  uint32_t magic;
  unsigned flags;
  int is_null;
  struct CUctx_st *ctx;
  pthread_t thread;
  pthread_mutex_t lock; /* the fields below */
  pthread_cond_t cond;  /* queue changed, a task finished, the worker exited */
  struct nsp_cu_task *head, *tail;
  uint64_t submitted, completed; /* tasks and markers */
  int running;                   /* the worker is running an item */
  int stop;                      /* exit once the queue is empty */
  int exited;
  CUstreamCaptureStatus capture;
  uint64_t capture_id;
  CUstreamCaptureMode capture_mode; /* of the capture under way */
  pthread_t capture_thread;         /* the thread that began it */
  /* under nsp_cu.lock */
  struct CUstream_st *all_next; /* every stream whose worker is not joined */
  int destroyed;                /* the handle is gone; join when drained */
};

struct CUevent_st {
  uint32_t magic;
  unsigned flags;
  /* under nsp_cu.lock */
  int refs;         /* the handle, and each queued marker */
  uint64_t gen;     /* records so far */
  int recorded;     /* recorded at least once outside a capture */
  int pending;      /* the last record has not completed */
  int captured;     /* the last record went into a capture ... */
  uint64_t capture_id; /* ... this one */
  int64_t ts_ns;
};

struct CUgraph_st {
  int dummy;
};

static struct {
  pthread_mutex_t lock; /* streams list, NULL streams, events, captures */
  pthread_cond_t ev_cond; /* an event completed */
  pthread_once_t once;
  CUresult init_result;
  int initialized; /* cuInit succeeded (atomic reads) */
  int forked;      /* this is a child forked after cuInit */
  int shutting_down;
  int ndev, my_dev;
  int my_uuid_unknown; /* NSP_STANDIN_GPU_UUID=none */
  struct CUctx_st ctx[NSP_CU_MAX_DEVICES];
  CUuuid uuid[NSP_CU_MAX_DEVICES];
  char bus[NSP_CU_MAX_DEVICES][32];
  char name[256];
  struct CUstream_st *streams;
  uint64_t capture_ids;
} nsp_cu = {
  .lock = PTHREAD_MUTEX_INITIALIZER,
  .ev_cond = PTHREAD_COND_INITIALIZER,
  .once = PTHREAD_ONCE_INIT,
};

static struct CUgraph_st nsp_cu_dummy_graph;

/* The calling thread's current context, once set by cuCtxSetCurrent. */
static _Thread_local struct {
  int set;
  struct CUctx_st *ctx;
} nsp_cu_tls;

/* The calling thread's stream capture interaction mode
 * (cuThreadExchangeStreamCaptureMode); CU_STREAM_CAPTURE_MODE_GLOBAL,
 * which is 0, by default. */
static _Thread_local CUstreamCaptureMode nsp_cu_thread_mode;

/* ---- helpers --------------------------------------------------------------- */

static int64_t nsp_cu_now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static long long nsp_cu_env_ll(const char *name, long long dflt)
{
  const char *s = getenv(name);
  char *end;
  long long v;
  if (!s || !*s)
    return dflt;
  errno = 0;
  v = strtoll(s, &end, 0);
  return errno || end == s || *end ? dflt : v;
}

static uint64_t nsp_cu_mix64(uint64_t x)
{
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

static uint64_t nsp_cu_hash_str(const char *s, uint64_t seed)
{
  uint64_t h = nsp_cu_mix64(seed);
  for (; *s; s++)
    h = nsp_cu_mix64(h ^ (unsigned char)*s);
  return h;
}

static void nsp_cu_uuid_from_hash(CUuuid *u, uint64_t h)
{
  uint64_t a = nsp_cu_mix64(h), b = nsp_cu_mix64(h ^ 0x5555aaaa5555aaaaull);
  memcpy(u->bytes, &a, 8);
  memcpy(u->bytes + 8, &b, 8);
}

static int nsp_cu_hexval(int c)
{
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

/* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" or 32 hex digits; other text
 * is hashed, so every value gives a stable UUID. */
static void nsp_cu_parse_uuid(const char *s, CUuuid *u)
{
  const char *p = s;
  int n = 0;
  if (!strncmp(p, "GPU-", 4))
    p += 4;
  for (; *p && n < 32; p++) {
    int v;
    if (*p == '-')
      continue;
    v = nsp_cu_hexval(*p);
    if (v < 0)
      break;
    if (n % 2 == 0)
      u->bytes[n / 2] = (char)(v << 4);
    else
      u->bytes[n / 2] = (char)(u->bytes[n / 2] | v);
    n++;
  }
  if (n != 32 || *p)
    nsp_cu_uuid_from_hash(u, nsp_cu_hash_str(s, 0x55554944));
}

static void nsp_cu_atfork_prepare(void)
{
  pthread_mutex_lock(&nsp_cu.lock);
}

static void nsp_cu_atfork_parent(void)
{
  pthread_mutex_unlock(&nsp_cu.lock);
}

static void nsp_cu_atfork_child(void)
{
  pthread_mutex_init(&nsp_cu.lock, NULL);
  pthread_cond_init(&nsp_cu.ev_cond, NULL);
  /* The workers did not come along: nothing here can run any more, and
   * nothing must be joined at exit. */
  if (__atomic_load_n(&nsp_cu.initialized, __ATOMIC_ACQUIRE))
    nsp_cu.forked = 1;
  nsp_cu.streams = NULL;
}

static void nsp_cu_init_once(void)
{
  long long n = nsp_cu_env_ll("NSP_STANDIN_GPUS", NSP_CU_DEFAULT_DEVICES);
  long long lr = nsp_cu_env_ll("LOCAL_RANK", 0);
  const char *uuid = getenv("NSP_STANDIN_GPU_UUID");
  const char *bus = getenv("NSP_STANDIN_GPU_BUS");
  const char *name = getenv("NSP_STANDIN_GPU_NAME");
  char host[256] = "";
  int d;

  pthread_atfork(nsp_cu_atfork_prepare, nsp_cu_atfork_parent, nsp_cu_atfork_child);
  if (n < 0)
    n = NSP_CU_DEFAULT_DEVICES;
  if (n > NSP_CU_MAX_DEVICES)
    n = NSP_CU_MAX_DEVICES;
  if (n == 0) {
    nsp_cu.init_result = CUDA_ERROR_NO_DEVICE;
    return;
  }
  nsp_cu.ndev = (int)n;
  nsp_cu.my_dev = lr < 0 ? 0 : (int)(lr % n);
  gethostname(host, sizeof host - 1);
  snprintf(nsp_cu.name, sizeof nsp_cu.name, "%s", name && *name ? name : "Stand-in H200");
  for (d = 0; d < nsp_cu.ndev; d++) {
    nsp_cu.ctx[d].magic = NSP_CU_CTX_MAGIC;
    nsp_cu.ctx[d].device = d;
    nsp_cu_uuid_from_hash(&nsp_cu.uuid[d], nsp_cu_hash_str(host, (uint64_t)d + 1));
    snprintf(nsp_cu.bus[d], sizeof nsp_cu.bus[d], "0000:%02x:00.0", (unsigned)d);
  }
  if (uuid && !strcmp(uuid, "none"))
    nsp_cu.my_uuid_unknown = 1;
  else if (uuid && *uuid)
    nsp_cu_parse_uuid(uuid, &nsp_cu.uuid[nsp_cu.my_dev]);
  if (bus && *bus)
    snprintf(nsp_cu.bus[nsp_cu.my_dev], sizeof nsp_cu.bus[0], "%s", bus);
  nsp_cu.init_result = CUDA_SUCCESS;
  __atomic_store_n(&nsp_cu.initialized, 1, __ATOMIC_RELEASE);
}

static CUresult nsp_cu_check_init(void)
{
  if (!__atomic_load_n(&nsp_cu.initialized, __ATOMIC_ACQUIRE) || nsp_cu.forked)
    return CUDA_ERROR_NOT_INITIALIZED;
  return CUDA_SUCCESS;
}

#define NSP_CU_CHECK_INIT()                                                          \
  do {                                                                               \
    CUresult r_ = nsp_cu_check_init();                                               \
    if (r_ != CUDA_SUCCESS)                                                          \
      return r_;                                                                     \
  } while (0)

static struct CUctx_st *nsp_cu_current(void)
{
  if (nsp_cu_tls.set)
    return nsp_cu_tls.ctx;
  return &nsp_cu.ctx[nsp_cu.my_dev];
}

static int nsp_cu_ctx_ok(const struct CUctx_st *c)
{
  return c && c >= nsp_cu.ctx && c < nsp_cu.ctx + nsp_cu.ndev && c->magic == NSP_CU_CTX_MAGIC;
}

static int nsp_cu_is_null_handle(CUstream h)
{
  return h == NULL || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD;
}

/* ---- streams ----------------------------------------------------------------- */

static void nsp_cu_event_unref_locked(struct CUevent_st *e)
{
  if (--e->refs == 0)
    free(e);
}

/* Completes a marker: the event is done if this was its last record. */
static void nsp_cu_marker_run(struct nsp_cu_task *t)
{
  struct CUevent_st *e = t->ev;
  int64_t now = nsp_cu_now_ns();
  pthread_mutex_lock(&nsp_cu.lock);
  if (e->gen == t->gen && e->pending) {
    e->pending = 0;
    e->ts_ns = now;
    pthread_cond_broadcast(&nsp_cu.ev_cond);
  }
  nsp_cu_event_unref_locked(e);
  pthread_mutex_unlock(&nsp_cu.lock);
}

static void nsp_cu_task_cancel(struct nsp_cu_task *t)
{
  if (t->fn) {
    t->fn(t->arg, NSP_STANDIN_TASK_CANCEL);
  } else {
    pthread_mutex_lock(&nsp_cu.lock);
    nsp_cu_event_unref_locked(t->ev);
    pthread_mutex_unlock(&nsp_cu.lock);
  }
  free(t);
}

static void *nsp_cu_worker(void *arg)
{
  struct CUstream_st *s = arg;
  nsp_cu_tls.set = 1;
  nsp_cu_tls.ctx = s->ctx;
  pthread_mutex_lock(&s->lock);
  for (;;) {
    struct nsp_cu_task *t;
    while (!s->head && !s->stop)
      pthread_cond_wait(&s->cond, &s->lock);
    t = s->head;
    if (!t)
      break; /* stopped and drained */
    s->head = t->next;
    if (!s->head)
      s->tail = NULL;
    s->running = 1;
    pthread_mutex_unlock(&s->lock);
    if (t->fn)
      t->fn(t->arg, NSP_STANDIN_TASK_RUN);
    else
      nsp_cu_marker_run(t);
    free(t);
    pthread_mutex_lock(&s->lock);
    s->running = 0;
    s->completed++;
    pthread_cond_broadcast(&s->cond);
  }
  s->exited = 1;
  pthread_cond_broadcast(&s->cond);
  pthread_mutex_unlock(&s->lock);
  return NULL;
}

/* Makes a stream and starts its worker; the caller holds nsp_cu.lock. */
static CUresult nsp_cu_stream_new_locked(struct CUctx_st *ctx, unsigned flags, int is_null,
                                         struct CUstream_st **out)
{
  struct CUstream_st *s = calloc(1, sizeof *s);
  sigset_t all, old;
  int rc;
  if (!s)
    return CUDA_ERROR_OUT_OF_MEMORY;
  s->ctx = ctx;
  s->flags = flags;
  s->is_null = is_null;
  pthread_mutex_init(&s->lock, NULL);
  pthread_cond_init(&s->cond, NULL);
  /* Signals are for the program's threads, not the GPU's. */
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  rc = pthread_create(&s->thread, NULL, nsp_cu_worker, s);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc != 0) {
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->cond);
    free(s);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  s->magic = NSP_CU_STREAM_MAGIC;
  s->all_next = nsp_cu.streams;
  nsp_cu.streams = s;
  *out = s;
  return CUDA_SUCCESS;
}

static void nsp_cu_stream_free(struct CUstream_st *s)
{
  pthread_mutex_destroy(&s->lock);
  pthread_cond_destroy(&s->cond);
  free(s);
}

/* Joins the workers of destroyed streams that have drained. */
static void nsp_cu_reap(void)
{
  struct CUstream_st **pp, *done = NULL, *s;
  pthread_mutex_lock(&nsp_cu.lock);
  if (nsp_cu.shutting_down) {
    pthread_mutex_unlock(&nsp_cu.lock);
    return; /* the destructor joins */
  }
  for (pp = &nsp_cu.streams; (s = *pp) != NULL;) {
    int exited = 0;
    if (s->destroyed) {
      pthread_mutex_lock(&s->lock);
      exited = s->exited;
      pthread_mutex_unlock(&s->lock);
    }
    if (exited) {
      *pp = s->all_next;
      s->all_next = done;
      done = s;
    } else {
      pp = &s->all_next;
    }
  }
  pthread_mutex_unlock(&nsp_cu.lock);
  while ((s = done) != NULL) {
    done = s->all_next;
    pthread_join(s->thread, NULL);
    nsp_cu_stream_free(s);
  }
}

/* The stream a handle names: NULL and the special handles name the NULL
 * stream of the calling thread's current context. */
static CUresult nsp_cu_stream_get(CUstream h, struct CUstream_st **out)
{
  struct CUctx_st *ctx;
  CUresult r = CUDA_SUCCESS;
  if (!nsp_cu_is_null_handle(h)) {
    if (h->magic != NSP_CU_STREAM_MAGIC)
      return CUDA_ERROR_INVALID_HANDLE;
    *out = h;
    return CUDA_SUCCESS;
  }
  ctx = nsp_cu_current();
  if (!ctx)
    return CUDA_ERROR_INVALID_CONTEXT;
  pthread_mutex_lock(&nsp_cu.lock);
  if (nsp_cu.shutting_down)
    r = CUDA_ERROR_DEINITIALIZED;
  else if (!ctx->null_stream)
    r = nsp_cu_stream_new_locked(ctx, 0, 1, &ctx->null_stream);
  *out = ctx->null_stream;
  pthread_mutex_unlock(&nsp_cu.lock);
  return r;
}

/* Appends an item; the caller holds s->lock and has checked capture. */
static void nsp_cu_push_locked(struct CUstream_st *s, struct nsp_cu_task *t)
{
  t->next = NULL;
  if (s->tail)
    s->tail->next = t;
  else
    s->head = t;
  s->tail = t;
  s->submitted++;
  pthread_cond_broadcast(&s->cond);
}

/* Invalidates the capture `id` (an unsafe call was made during it). */
static void nsp_cu_invalidate_capture_locked(uint64_t id)
{
  struct CUstream_st *s;
  for (s = nsp_cu.streams; s; s = s->all_next) {
    pthread_mutex_lock(&s->lock);
    if (s->capture == CU_STREAM_CAPTURE_STATUS_ACTIVE && s->capture_id == id)
      s->capture = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
    pthread_mutex_unlock(&s->lock);
  }
}

static int nsp_cu_capture_active_locked(uint64_t id)
{
  struct CUstream_st *s;
  int active = 0;
  for (s = nsp_cu.streams; s && !active; s = s->all_next) {
    pthread_mutex_lock(&s->lock);
    active = s->capture != CU_STREAM_CAPTURE_STATUS_NONE && s->capture_id == id;
    pthread_mutex_unlock(&s->lock);
  }
  return active;
}

/* ---- the hook for the NCCL stand-in ------------------------------------------ */

NSP_CU_API int nsp_standin_stream_enqueue(void *stream, nsp_standin_task_fn fn, void *arg)
{
  struct CUstream_st *s;
  struct nsp_cu_task *t;
  int ret;
  if (!fn || nsp_cu_check_init() != CUDA_SUCCESS ||
      nsp_cu_stream_get((CUstream)stream, &s) != CUDA_SUCCESS)
    return NSP_STANDIN_ENQ_ERROR;
  t = calloc(1, sizeof *t);
  if (!t)
    return NSP_STANDIN_ENQ_ERROR;
  t->fn = fn;
  t->arg = arg;
  pthread_mutex_lock(&s->lock);
  if (s->capture != CU_STREAM_CAPTURE_STATUS_NONE) {
    ret = NSP_STANDIN_ENQ_CAPTURED;
  } else if (s->stop) {
    ret = NSP_STANDIN_ENQ_ERROR;
  } else {
    nsp_cu_push_locked(s, t);
    t = NULL;
    ret = NSP_STANDIN_ENQ_QUEUED;
  }
  pthread_mutex_unlock(&s->lock);
  free(t);
  return ret;
}

/* ---- initialization, version, devices ------------------------------------------- */

NSP_CU_API CUresult cuInit(unsigned int Flags)
{
  if (Flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (nsp_cu.forked)
    return CUDA_ERROR_NOT_INITIALIZED;
  pthread_once(&nsp_cu.once, nsp_cu_init_once);
  return nsp_cu.init_result;
}

NSP_CU_API CUresult cuDriverGetVersion(int *driverVersion)
{
  long long v;
  if (!driverVersion)
    return CUDA_ERROR_INVALID_VALUE;
  v = nsp_cu_env_ll("NSP_STANDIN_DRIVER_VERSION", NSP_CU_DRIVER_VERSION);
  *driverVersion = v < 0 || v > INT_MAX ? NSP_CU_DRIVER_VERSION : (int)v;
  return CUDA_SUCCESS;
}

NSP_CU_API CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
  NSP_CU_CHECK_INIT();
  if (!device)
    return CUDA_ERROR_INVALID_VALUE;
  if (ordinal < 0 || ordinal >= nsp_cu.ndev)
    return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

NSP_CU_API CUresult cuDeviceGetCount(int *count)
{
  NSP_CU_CHECK_INIT();
  if (!count)
    return CUDA_ERROR_INVALID_VALUE;
  *count = nsp_cu.ndev;
  return CUDA_SUCCESS;
}

#define NSP_CU_CHECK_DEV(dev)                                                        \
  do {                                                                               \
    NSP_CU_CHECK_INIT();                                                             \
    if ((dev) < 0 || (dev) >= nsp_cu.ndev)                                           \
      return CUDA_ERROR_INVALID_DEVICE;                                              \
  } while (0)

NSP_CU_API CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
  NSP_CU_CHECK_DEV(dev);
  if (!name || len <= 0)
    return CUDA_ERROR_INVALID_VALUE;
  snprintf(name, (size_t)len, "%s", nsp_cu.name);
  return CUDA_SUCCESS;
}

NSP_CU_API CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
  NSP_CU_CHECK_DEV(dev);
  if (!uuid)
    return CUDA_ERROR_INVALID_VALUE;
  if (nsp_cu.my_uuid_unknown && dev == nsp_cu.my_dev)
    return 801; /* CUDA_ERROR_NOT_SUPPORTED */
  *uuid = nsp_cu.uuid[dev];
  return CUDA_SUCCESS;
}

/* The real v1 differs only for MIG instances, which the stand-in has not. */
NSP_CU_API CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
  return cuDeviceGetUuid_v2(uuid, dev);
}

NSP_CU_API CUresult cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev)
{
  NSP_CU_CHECK_DEV(dev);
  if (!pciBusId || len <= 0)
    return CUDA_ERROR_INVALID_VALUE;
  snprintf(pciBusId, (size_t)len, "%s", nsp_cu.bus[dev]);
  return CUDA_SUCCESS;
}

/* ---- contexts ---------------------------------------------------------------- */

NSP_CU_API CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
  NSP_CU_CHECK_DEV(dev);
  if (!pctx)
    return CUDA_ERROR_INVALID_VALUE;
  *pctx = &nsp_cu.ctx[dev];
  return CUDA_SUCCESS;
}

NSP_CU_API CUresult cuCtxGetCurrent(CUcontext *pctx)
{
  NSP_CU_CHECK_INIT();
  if (!pctx)
    return CUDA_ERROR_INVALID_VALUE;
  *pctx = nsp_cu_current();
  return CUDA_SUCCESS;
}

NSP_CU_API CUresult cuCtxSetCurrent(CUcontext ctx)
{
  NSP_CU_CHECK_INIT();
  if (ctx && !nsp_cu_ctx_ok(ctx))
    return CUDA_ERROR_INVALID_CONTEXT;
  nsp_cu_tls.set = 1;
  nsp_cu_tls.ctx = ctx;
  return CUDA_SUCCESS;
}

NSP_CU_API CUresult cuCtxGetDevice(CUdevice *device)
{
  struct CUctx_st *c;
  NSP_CU_CHECK_INIT();
  if (!device)
    return CUDA_ERROR_INVALID_VALUE;
  c = nsp_cu_current();
  if (!c)
    return CUDA_ERROR_INVALID_CONTEXT;
  *device = c->device;
  return CUDA_SUCCESS;
}

/* cuCtxGetDevice_v2 (CUDA 13.0): through cuGetProcAddress only. */
static CUresult nsp_cu_ctx_get_device_v2(CUdevice *device, CUcontext ctx)
{
  NSP_CU_CHECK_INIT();
  if (!device)
    return CUDA_ERROR_INVALID_VALUE;
  if (!ctx)
    return cuCtxGetDevice(device);
  if (!nsp_cu_ctx_ok(ctx))
    return CUDA_ERROR_INVALID_CONTEXT;
  *device = ctx->device;
  return CUDA_SUCCESS;
}

/* ---- streams ------------------------------------------------------------------- */

NSP_CU_API CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
  struct CUctx_st *ctx;
  CUresult r;
  NSP_CU_CHECK_INIT();
  if (!phStream || (Flags & ~(unsigned)CU_STREAM_NON_BLOCKING))
    return CUDA_ERROR_INVALID_VALUE;
  ctx = nsp_cu_current();
  if (!ctx)
    return CUDA_ERROR_INVALID_CONTEXT;
  nsp_cu_reap();
  pthread_mutex_lock(&nsp_cu.lock);
  r = nsp_cu.shutting_down ? CUDA_ERROR_DEINITIALIZED
                           : nsp_cu_stream_new_locked(ctx, Flags, 0, phStream);
  pthread_mutex_unlock(&nsp_cu.lock);
  return r;
}

NSP_CU_API CUresult cuStreamDestroy_v2(CUstream hStream)
{
  struct CUstream_st **pp;
  int idle;
  NSP_CU_CHECK_INIT();
  if (nsp_cu_is_null_handle(hStream) || hStream->magic != NSP_CU_STREAM_MAGIC ||
      hStream->is_null)
    return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&nsp_cu.lock);
  hStream->magic = 0;
  hStream->destroyed = 1;
  pthread_mutex_lock(&hStream->lock);
  hStream->stop = 1;
  hStream->capture = CU_STREAM_CAPTURE_STATUS_NONE;
  pthread_cond_broadcast(&hStream->cond);
  idle = !hStream->head && !hStream->running;
  pthread_mutex_unlock(&hStream->lock);
  /* An idle worker exits at once: it is ours to join, so no reaper may
   * see it.  A busy one finishes the queued work first, as a GPU would,
   * and is reaped later.  (Not at exit: the destructor joins.) */
  if (idle && !nsp_cu.shutting_down) {
    for (pp = &nsp_cu.streams; *pp && *pp != hStream; pp = &(*pp)->all_next)
      ;
    if (*pp)
      *pp = hStream->all_next;
  } else {
    idle = 0;
  }
  pthread_mutex_unlock(&nsp_cu.lock);
  if (idle) {
    pthread_join(hStream->thread, NULL);
    nsp_cu_stream_free(hStream);
  }
  nsp_cu_reap();
  return CUDA_SUCCESS;
}

NSP_CU_API CUresult cuStreamDestroy(CUstream hStream)
{
  return cuStreamDestroy_v2(hStream);
}

/* A potentially unsafe call (a query or synchronize of a stream or event)
 * made while captures are under way, as the real driver judges it
 * (cuThreadExchangeStreamCaptureMode): unless the calling thread's mode is
 * RELAXED, it is prohibited during its own captures not begun RELAXED,
 * and, in GLOBAL mode, during other threads' captures begun GLOBAL.  A
 * prohibited call invalidates those captures and returns 1 (the caller
 * then returns CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED).  Takes nsp_cu.lock
 * and the streams' locks: call it holding neither. */
static int nsp_cu_unsafe_call_refused(void)
{
  struct CUstream_st *s;
  pthread_t self = pthread_self();
  int refused = 0;
  if (nsp_cu_thread_mode == CU_STREAM_CAPTURE_MODE_RELAXED)
    return 0;
  pthread_mutex_lock(&nsp_cu.lock);
  for (s = nsp_cu.streams; s; s = s->all_next) {
    pthread_mutex_lock(&s->lock);
    if (s->capture == CU_STREAM_CAPTURE_STATUS_ACTIVE && s->capture_mode != CU_STREAM_CAPTURE_MODE_RELAXED) {
      int own = pthread_equal(s->capture_thread, self);
      if (own || (nsp_cu_thread_mode == CU_STREAM_CAPTURE_MODE_GLOBAL &&
                  s->capture_mode == CU_STREAM_CAPTURE_MODE_GLOBAL)) {
        s->capture = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
        refused = 1;
      }
    }
    pthread_mutex_unlock(&s->lock);
  }
  pthread_mutex_unlock(&nsp_cu.lock);
  return refused;
}

NSP_CU_API CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode)
{
  CUstreamCaptureMode old;
  NSP_CU_CHECK_INIT();
  if (!mode || (unsigned)*mode > CU_STREAM_CAPTURE_MODE_RELAXED)
    return CUDA_ERROR_INVALID_VALUE;
  old = nsp_cu_thread_mode;
  nsp_cu_thread_mode = *mode;
  *mode = old;
  return CUDA_SUCCESS;
}

/* A synchronizing call on a capturing stream: refused, and the capture is
 * invalidated.  Returns 1 if it was capturing.  Caller holds s->lock. */
static int nsp_cu_refuse_if_capturing_locked(struct CUstream_st *s)
{
  if (s->capture == CU_STREAM_CAPTURE_STATUS_NONE)
    return 0;
  s->capture = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
  return 1;
}

NSP_CU_API CUresult cuStreamSynchronize(CUstream hStream)
{
  struct CUstream_st *s;
  CUresult r;
  uint64_t target;
  NSP_CU_CHECK_INIT();
  r = nsp_cu_stream_get(hStream, &s);
  if (r != CUDA_SUCCESS)
    return r;
  if (nsp_cu_unsafe_call_refused())
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  pthread_mutex_lock(&s->lock);
  if (nsp_cu_refuse_if_capturing_locked(s)) {
    pthread_mutex_unlock(&s->lock);
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  target = s->submitted;
  while (s->completed < target && !s->exited)
    pthread_cond_wait(&s->cond, &s->lock);
  pthread_mutex_unlock(&s->lock);
  return CUDA_SUCCESS;
}

NSP_CU_API CUresult cuStreamQuery(CUstream hStream)
{
  struct CUstream_st *s;
  CUresult r;
  NSP_CU_CHECK_INIT();
  r = nsp_cu_stream_get(hStream, &s);
  if (r != CUDA_SUCCESS)
    return r;
  if (nsp_cu_unsafe_call_refused())
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  pthread_mutex_lock(&s->lock);
  if (nsp_cu_refuse_if_capturing_locked(s))
    r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  else
    r = s->completed == s->submitted ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
  pthread_mutex_unlock(&s->lock);
  return r;
}

NSP_CU_API CUresult cuStreamGetCtx(CUstream hStream, CUcontext *pctx)
{
  NSP_CU_CHECK_INIT();
  if (!pctx)
    return CUDA_ERROR_INVALID_VALUE;
  if (nsp_cu_is_null_handle(hStream)) {
    *pctx = nsp_cu_current();
    return *pctx ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
  }
  if (hStream->magic != NSP_CU_STREAM_MAGIC)
    return CUDA_ERROR_INVALID_HANDLE;
  *pctx = hStream->ctx;
  return CUDA_SUCCESS;
}

/* cuStreamGetCtx_v2 (CUDA 12.5): through cuGetProcAddress only.  The
 * stand-in has no green contexts. */
static CUresult nsp_cu_stream_get_ctx_v2(CUstream hStream, CUcontext *pctx, void **pGreenCtx)
{
  CUresult r = cuStreamGetCtx(hStream, pctx);
  if (r == CUDA_SUCCESS && pGreenCtx)
    *pGreenCtx = NULL;
  return r;
}

NSP_CU_API CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus)
{
  NSP_CU_CHECK_INIT();
  if (!captureStatus)
    return CUDA_ERROR_INVALID_VALUE;
  if (nsp_cu_is_null_handle(hStream)) {
    *captureStatus = CU_STREAM_CAPTURE_STATUS_NONE;
    return CUDA_SUCCESS;
  }
  if (hStream->magic != NSP_CU_STREAM_MAGIC)
    return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&hStream->lock);
  *captureStatus = hStream->capture;
  pthread_mutex_unlock(&hStream->lock);
  return CUDA_SUCCESS;
}

NSP_CU_API CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode)
{
  CUresult r = CUDA_SUCCESS;
  NSP_CU_CHECK_INIT();
  if ((unsigned)mode > CU_STREAM_CAPTURE_MODE_RELAXED)
    return CUDA_ERROR_INVALID_VALUE;
  if (nsp_cu_is_null_handle(hStream))
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  if (hStream->magic != NSP_CU_STREAM_MAGIC)
    return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&nsp_cu.lock);
  pthread_mutex_lock(&hStream->lock);
  if (hStream->capture != CU_STREAM_CAPTURE_STATUS_NONE) {
    r = CUDA_ERROR_ILLEGAL_STATE;
  } else {
    hStream->capture = CU_STREAM_CAPTURE_STATUS_ACTIVE;
    hStream->capture_id = ++nsp_cu.capture_ids;
    hStream->capture_mode = mode;
    hStream->capture_thread = pthread_self();
  }
  pthread_mutex_unlock(&hStream->lock);
  pthread_mutex_unlock(&nsp_cu.lock);
  return r;
}

/* The legacy ABI: no mode argument, global mode. */
NSP_CU_API CUresult cuStreamBeginCapture(CUstream hStream)
{
  return cuStreamBeginCapture_v2(hStream, CU_STREAM_CAPTURE_MODE_GLOBAL);
}

NSP_CU_API CUresult cuStreamEndCapture(CUstream hStream, CUgraph *phGraph)
{
  CUresult r = CUDA_SUCCESS;
  NSP_CU_CHECK_INIT();
  if (!phGraph)
    return CUDA_ERROR_INVALID_VALUE;
  if (nsp_cu_is_null_handle(hStream))
    return CUDA_ERROR_ILLEGAL_STATE;
  if (hStream->magic != NSP_CU_STREAM_MAGIC)
    return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&hStream->lock);
  switch (hStream->capture) {
  case CU_STREAM_CAPTURE_STATUS_NONE:
    r = CUDA_ERROR_ILLEGAL_STATE;
    break;
  case CU_STREAM_CAPTURE_STATUS_INVALIDATED:
    *phGraph = NULL;
    r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    break;
  default:
    *phGraph = &nsp_cu_dummy_graph;
    break;
  }
  hStream->capture = CU_STREAM_CAPTURE_STATUS_NONE;
  pthread_mutex_unlock(&hStream->lock);
  return r;
}

/* ---- events -------------------------------------------------------------------- */

NSP_CU_API CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
  struct CUevent_st *e;
  NSP_CU_CHECK_INIT();
  if (!phEvent || (Flags & ~0xFu) ||
      ((Flags & CU_EVENT_INTERPROCESS) && !(Flags & CU_EVENT_DISABLE_TIMING)))
    return CUDA_ERROR_INVALID_VALUE;
  if (!nsp_cu_current())
    return CUDA_ERROR_INVALID_CONTEXT;
  e = calloc(1, sizeof *e);
  if (!e)
    return CUDA_ERROR_OUT_OF_MEMORY;
  e->magic = NSP_CU_EVENT_MAGIC;
  e->flags = Flags;
  e->refs = 1;
  *phEvent = e;
  return CUDA_SUCCESS;
}

NSP_CU_API CUresult cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags)
{
  struct CUstream_st *s;
  struct nsp_cu_task *t;
  CUresult r;
  NSP_CU_CHECK_INIT();
  if (flags & ~(unsigned)CU_EVENT_RECORD_EXTERNAL)
    return CUDA_ERROR_INVALID_VALUE;
  if (!hEvent || hEvent->magic != NSP_CU_EVENT_MAGIC)
    return CUDA_ERROR_INVALID_HANDLE;
  r = nsp_cu_stream_get(hStream, &s);
  if (r != CUDA_SUCCESS)
    return r;
  t = calloc(1, sizeof *t);
  if (!t)
    return CUDA_ERROR_OUT_OF_MEMORY;
  pthread_mutex_lock(&nsp_cu.lock);
  if (hEvent->magic != NSP_CU_EVENT_MAGIC) {
    pthread_mutex_unlock(&nsp_cu.lock);
    free(t);
    return CUDA_ERROR_INVALID_HANDLE;
  }
  pthread_mutex_lock(&s->lock);
  hEvent->gen++;
  if (s->capture != CU_STREAM_CAPTURE_STATUS_NONE) {
    /* A node of the graph being captured: it runs only if the graph is. */
    hEvent->captured = 1;
    hEvent->capture_id = s->capture_id;
    hEvent->pending = 0;
  } else if (!s->head && !s->running) {
    /* Nothing before it on the stream: complete now. */
    hEvent->captured = 0;
    hEvent->recorded = 1;
    hEvent->pending = 0;
    hEvent->ts_ns = nsp_cu_now_ns();
    pthread_cond_broadcast(&nsp_cu.ev_cond);
  } else {
    hEvent->captured = 0;
    hEvent->recorded = 1;
    hEvent->pending = 1;
    hEvent->refs++;
    t->ev = hEvent;
    t->gen = hEvent->gen;
    nsp_cu_push_locked(s, t);
    t = NULL;
  }
  pthread_mutex_unlock(&s->lock);
  pthread_mutex_unlock(&nsp_cu.lock);
  free(t);
  return CUDA_SUCCESS;
}

NSP_CU_API CUresult cuEventRecord(CUevent hEvent, CUstream hStream)
{
  return cuEventRecordWithFlags(hEvent, hStream, CU_EVENT_RECORD_DEFAULT);
}

/* What a query of a captured event returns; the caller holds nsp_cu.lock. */
static CUresult nsp_cu_captured_result_locked(struct CUevent_st *e)
{
  if (nsp_cu_capture_active_locked(e->capture_id)) {
    nsp_cu_invalidate_capture_locked(e->capture_id);
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  return CUDA_ERROR_CAPTURED_EVENT;
}

NSP_CU_API CUresult cuEventQuery(CUevent hEvent)
{
  CUresult r;
  NSP_CU_CHECK_INIT();
  if (!hEvent)
    return CUDA_ERROR_INVALID_HANDLE;
  if (nsp_cu_unsafe_call_refused())
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  pthread_mutex_lock(&nsp_cu.lock);
  if (hEvent->magic != NSP_CU_EVENT_MAGIC)
    r = CUDA_ERROR_INVALID_HANDLE;
  else if (hEvent->captured)
    r = nsp_cu_captured_result_locked(hEvent);
  else
    r = hEvent->pending ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
  pthread_mutex_unlock(&nsp_cu.lock);
  return r;
}

NSP_CU_API CUresult cuEventSynchronize(CUevent hEvent)
{
  CUresult r = CUDA_SUCCESS;
  uint64_t gen;
  NSP_CU_CHECK_INIT();
  if (!hEvent)
    return CUDA_ERROR_INVALID_HANDLE;
  if (nsp_cu_unsafe_call_refused())
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  pthread_mutex_lock(&nsp_cu.lock);
  if (hEvent->magic != NSP_CU_EVENT_MAGIC) {
    r = CUDA_ERROR_INVALID_HANDLE;
  } else if (hEvent->captured) {
    r = nsp_cu_captured_result_locked(hEvent);
  } else {
    /* Until this record completes (a new record ends the wait too). */
    hEvent->refs++;
    gen = hEvent->gen;
    while (hEvent->pending && hEvent->gen == gen)
      pthread_cond_wait(&nsp_cu.ev_cond, &nsp_cu.lock);
    nsp_cu_event_unref_locked(hEvent);
  }
  pthread_mutex_unlock(&nsp_cu.lock);
  return r;
}

NSP_CU_API CUresult cuEventElapsedTime_v2(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
  CUresult r = CUDA_SUCCESS;
  NSP_CU_CHECK_INIT();
  if (!pMilliseconds)
    return CUDA_ERROR_INVALID_VALUE;
  if (!hStart || !hEnd)
    return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&nsp_cu.lock);
  if (hStart->magic != NSP_CU_EVENT_MAGIC || hEnd->magic != NSP_CU_EVENT_MAGIC ||
      ((hStart->flags | hEnd->flags) & CU_EVENT_DISABLE_TIMING))
    r = CUDA_ERROR_INVALID_HANDLE;
  else if (hStart->captured)
    r = nsp_cu_captured_result_locked(hStart);
  else if (hEnd->captured)
    r = nsp_cu_captured_result_locked(hEnd);
  else if (!hStart->recorded || !hEnd->recorded)
    r = CUDA_ERROR_INVALID_HANDLE;
  else if (hStart->pending || hEnd->pending)
    r = CUDA_ERROR_NOT_READY;
  else
    *pMilliseconds = (float)((double)(hEnd->ts_ns - hStart->ts_ns) / 1e6);
  pthread_mutex_unlock(&nsp_cu.lock);
  return r;
}

NSP_CU_API CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
  return cuEventElapsedTime_v2(pMilliseconds, hStart, hEnd);
}

NSP_CU_API CUresult cuEventDestroy_v2(CUevent hEvent)
{
  CUresult r = CUDA_SUCCESS;
  NSP_CU_CHECK_INIT();
  if (!hEvent)
    return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&nsp_cu.lock);
  if (hEvent->magic != NSP_CU_EVENT_MAGIC) {
    r = CUDA_ERROR_INVALID_HANDLE;
  } else {
    hEvent->magic = 0;
    nsp_cu_event_unref_locked(hEvent);
  }
  pthread_mutex_unlock(&nsp_cu.lock);
  return r;
}

NSP_CU_API CUresult cuEventDestroy(CUevent hEvent)
{
  return cuEventDestroy_v2(hEvent);
}

/* ---- errors ---------------------------------------------------------------------- */

static const struct {
  CUresult code;
  const char *name, *text;
} nsp_cu_errors[] = {
  {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
  {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
  {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
  {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
  {CUDA_ERROR_DEINITIALIZED, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
  {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
  {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
  {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
  {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
  {CUDA_ERROR_ILLEGAL_STATE, "CUDA_ERROR_ILLEGAL_STATE",
   "the operation cannot be performed in the present state"},
  {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
  {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
  {CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
   "operation not permitted when stream is capturing"},
  {CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
   "operation failed due to a previous error during capture"},
  {CUDA_ERROR_CAPTURED_EVENT, "CUDA_ERROR_CAPTURED_EVENT",
   "operation not permitted on an event last recorded in a capturing stream"},
  {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

static CUresult nsp_cu_error_lookup(CUresult error, const char **pStr, int want_name)
{
  size_t i;
  if (!pStr)
    return CUDA_ERROR_INVALID_VALUE;
  for (i = 0; i < sizeof nsp_cu_errors / sizeof nsp_cu_errors[0]; i++) {
    if (nsp_cu_errors[i].code == error) {
      *pStr = want_name ? nsp_cu_errors[i].name : nsp_cu_errors[i].text;
      return CUDA_SUCCESS;
    }
  }
  *pStr = NULL;
  return CUDA_ERROR_INVALID_VALUE;
}

NSP_CU_API CUresult cuGetErrorString(CUresult error, const char **pStr)
{
  return nsp_cu_error_lookup(error, pStr, 0);
}

NSP_CU_API CUresult cuGetErrorName(CUresult error, const char **pStr)
{
  return nsp_cu_error_lookup(error, pStr, 1);
}

/* ---- cuGetProcAddress ---------------------------------------------------------------- */

typedef void (*nsp_cu_any_fn)(void);

/* Base name, the CUDA version that added it, its first ABI, and the
 * version from which the name means a newer ABI (0: none). */
struct nsp_cu_proc {
  const char *name;
  int since;
  nsp_cu_any_fn fn;
  int v2_since;
  nsp_cu_any_fn v2;
};

#define NSP_CU_FN(f) ((nsp_cu_any_fn)(f))

static const struct nsp_cu_proc nsp_cu_procs[] = {
  {"cuInit", 2000, NSP_CU_FN(cuInit), 0, NULL},
  {"cuDriverGetVersion", 2020, NSP_CU_FN(cuDriverGetVersion), 0, NULL},
  {"cuDeviceGet", 2000, NSP_CU_FN(cuDeviceGet), 0, NULL},
  {"cuDeviceGetCount", 2000, NSP_CU_FN(cuDeviceGetCount), 0, NULL},
  {"cuDeviceGetName", 2000, NSP_CU_FN(cuDeviceGetName), 0, NULL},
  {"cuDeviceGetUuid", 9020, NSP_CU_FN(cuDeviceGetUuid), 11040, NSP_CU_FN(cuDeviceGetUuid_v2)},
  {"cuDeviceGetPCIBusId", 4010, NSP_CU_FN(cuDeviceGetPCIBusId), 0, NULL},
  {"cuDevicePrimaryCtxRetain", 7000, NSP_CU_FN(cuDevicePrimaryCtxRetain), 0, NULL},
  {"cuCtxGetCurrent", 4000, NSP_CU_FN(cuCtxGetCurrent), 0, NULL},
  {"cuCtxSetCurrent", 4000, NSP_CU_FN(cuCtxSetCurrent), 0, NULL},
  {"cuCtxGetDevice", 2000, NSP_CU_FN(cuCtxGetDevice), 13000, NSP_CU_FN(nsp_cu_ctx_get_device_v2)},
  {"cuStreamCreate", 2000, NSP_CU_FN(cuStreamCreate), 0, NULL},
  {"cuStreamDestroy", 2000, NSP_CU_FN(cuStreamDestroy), 4000, NSP_CU_FN(cuStreamDestroy_v2)},
  {"cuStreamSynchronize", 2000, NSP_CU_FN(cuStreamSynchronize), 0, NULL},
  {"cuStreamQuery", 2000, NSP_CU_FN(cuStreamQuery), 0, NULL},
  {"cuStreamGetCtx", 9020, NSP_CU_FN(cuStreamGetCtx), 12050, NSP_CU_FN(nsp_cu_stream_get_ctx_v2)},
  {"cuStreamIsCapturing", 10000, NSP_CU_FN(cuStreamIsCapturing), 0, NULL},
  {"cuStreamBeginCapture", 10000, NSP_CU_FN(cuStreamBeginCapture), 10010,
   NSP_CU_FN(cuStreamBeginCapture_v2)},
  {"cuStreamEndCapture", 10000, NSP_CU_FN(cuStreamEndCapture), 0, NULL},
  {"cuThreadExchangeStreamCaptureMode", 10010, NSP_CU_FN(cuThreadExchangeStreamCaptureMode), 0, NULL},
  {"cuEventCreate", 2000, NSP_CU_FN(cuEventCreate), 0, NULL},
  {"cuEventRecord", 2000, NSP_CU_FN(cuEventRecord), 0, NULL},
  {"cuEventRecordWithFlags", 11010, NSP_CU_FN(cuEventRecordWithFlags), 0, NULL},
  {"cuEventQuery", 2000, NSP_CU_FN(cuEventQuery), 0, NULL},
  {"cuEventSynchronize", 2000, NSP_CU_FN(cuEventSynchronize), 0, NULL},
  {"cuEventElapsedTime", 2000, NSP_CU_FN(cuEventElapsedTime), 12080,
   NSP_CU_FN(cuEventElapsedTime_v2)},
  {"cuEventDestroy", 2000, NSP_CU_FN(cuEventDestroy), 4000, NSP_CU_FN(cuEventDestroy_v2)},
  {"cuGetErrorString", 6000, NSP_CU_FN(cuGetErrorString), 0, NULL},
  {"cuGetErrorName", 6000, NSP_CU_FN(cuGetErrorName), 0, NULL},
  {"cuGetProcAddress", 11030, NSP_CU_FN(cuGetProcAddress), 12000, NSP_CU_FN(cuGetProcAddress_v2)},
};

NSP_CU_API CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                        cuuint64_t flags,
                                        CUdriverProcAddressQueryResult *symbolStatus)
{
  size_t i;
  if (!symbol || !pfn ||
      (flags & ~(cuuint64_t)(CU_GET_PROC_ADDRESS_LEGACY_STREAM |
                             CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)))
    return CUDA_ERROR_INVALID_VALUE;
  *pfn = NULL;
  for (i = 0; i < sizeof nsp_cu_procs / sizeof nsp_cu_procs[0]; i++) {
    const struct nsp_cu_proc *p = &nsp_cu_procs[i];
    nsp_cu_any_fn f;
    if (strcmp(p->name, symbol) != 0)
      continue;
    if (cudaVersion < p->since) {
      if (symbolStatus)
        *symbolStatus = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
      return CUDA_ERROR_NOT_FOUND;
    }
    f = p->v2 && cudaVersion >= p->v2_since ? p->v2 : p->fn;
    /* A function pointer in a void *, as the API wants. */
    memcpy(pfn, &f, sizeof f);
    if (symbolStatus)
      *symbolStatus = CU_GET_PROC_ADDRESS_SUCCESS;
    return CUDA_SUCCESS;
  }
  if (symbolStatus)
    *symbolStatus = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return CUDA_ERROR_NOT_FOUND;
}

/* The legacy ABI (CUDA 11.3): no status argument. */
NSP_CU_API CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                     cuuint64_t flags)
{
  return cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, NULL);
}

/* ---- unload ------------------------------------------------------------------------ */

/* At exit: work not started is cancelled; workers that finish within
 * NSP_STANDIN_EXIT_WAIT_MS are joined, the others die with the process.
 * Stream structures stay (as does the list, so they remain reachable): a
 * later destructor may still use a handle, and finds an idle stream. */
__attribute__((destructor)) static void nsp_cu_fini(void)
{
  struct CUstream_st *list, *s;
  long long wait_ms = nsp_cu_env_ll("NSP_STANDIN_EXIT_WAIT_MS", 200);
  int64_t deadline;

  pthread_mutex_lock(&nsp_cu.lock);
  nsp_cu.shutting_down = 1;
  list = nsp_cu.forked ? NULL : nsp_cu.streams;
  pthread_mutex_unlock(&nsp_cu.lock);
  /* No stream is added or removed from here on (shutting_down). */
  for (s = list; s; s = s->all_next) {
    struct nsp_cu_task *t, *tn;
    pthread_mutex_lock(&s->lock);
    t = s->head;
    s->head = s->tail = NULL;
    s->stop = 1;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
    for (; t; t = tn) {
      tn = t->next;
      nsp_cu_task_cancel(t);
      pthread_mutex_lock(&s->lock);
      s->completed++;
      pthread_cond_broadcast(&s->cond);
      pthread_mutex_unlock(&s->lock);
    }
  }
  deadline = nsp_cu_now_ns() + (wait_ms < 0 ? 0 : wait_ms) * 1000000;
  for (s = list; s; s = s->all_next) {
    int exited;
    pthread_mutex_lock(&s->lock);
    while (!s->exited) {
      int64_t left = deadline - nsp_cu_now_ns();
      struct timespec ts;
      if (left <= 0)
        break;
      clock_gettime(CLOCK_REALTIME, &ts);
      ts.tv_sec += (time_t)(left / 1000000000);
      ts.tv_nsec += (long)(left % 1000000000);
      if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
      }
      pthread_cond_timedwait(&s->cond, &s->lock, &ts);
    }
    exited = s->exited;
    pthread_mutex_unlock(&s->lock);
    /* A worker stuck in a task is left to die with the process. */
    if (exited)
      pthread_join(s->thread, NULL);
  }
}
