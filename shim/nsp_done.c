/* nsp_done.c - when NCCL's work actually ran on the GPU.
 *
 * A collective returns once its work is enqueued on a stream; it runs
 * later, or never (a hang).  For every recorded call the shim records a
 * CUDA event after it on its stream (and, when timed, one before it), and
 * a background poller queries the events and writes a COMPLETION record
 * with the GPU start and end mapped onto the host clock.  For calls
 * between ncclGroupStart and ncclGroupEnd the events belong to the group:
 * they are recorded at ncclGroupEnd on every stream the group used.
 *
 * Never changes what the program sees: events are only recorded (no
 * waits are added to a stream), an event is never recorded into a stream
 * being captured into a CUDA graph (that would add a node to the user's
 * graph: such calls are marked captured and never queried), the poller's
 * queries never invalidate the program's graph captures (it runs in the
 * THREAD_LOCAL capture interaction mode), and driver errors turn tracking
 * off for that call, never into an NCCL error.
 *
 * Settings:
 *   NCCLSPY_TIMING=0       no GPU timing: one untimed event per call, for
 *                          completion only (cheapest).  Read when each
 *                          communicator is made, so it can differ between
 *                          communicators of one process.
 *   NCCLSPY_TIMING_GAP_US=N  time a call only when N us have passed since the
 *                          thread's last timed call (default 500; 0: time
 *                          every call); the others get one untimed event.
 *                          On 2xH200 a timed cuEventRecord costs 2.8 us of
 *                          host time and an untimed one 0.14 us
 *                          (bench/nsp_gpu_micro.c), so timing every 4 KiB
 *                          all-reduce would cost more than the call: at one
 *                          timed call (two events) per 500 us, timing stays
 *                          near 1% of host time, collectives longer than
 *                          500 us are all timed, and bursts of small ones
 *                          are sampled.
 * Costs measured on 2xH200 are in bench/README.md. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nsp_cuda.h"
#include "nsp_names.h"
#include "nsp_setting.h"
#include "nsp_shim.h"

#define NSP_MAX_CTX 32
#define NSP_MAX_PENDING 65536 /* calls awaiting completion; more are not tracked */
#define NSP_GROUP_STREAMS 8   /* streams of one group whose events we keep */
#define NSP_ANCHOR_NS 2000000000ull /* re-anchor GPU time every 2 s */

/* Events of one context, and its clock anchor. */
struct nsp_ctx_pool {
  CUcontext ctx;
  pthread_mutex_t lock;
  CUevent *timed, *plain; /* free lists (stacks) */
  size_t ntimed, nplain, cap_timed, cap_plain;
  /* Poller thread only: */
  CUstream anchor_stream;
  CUevent anchor;
  uint64_t anchor_host_ns, anchor_made_ns;
  int anchor_ok;
};

struct nsp_pending {
  uint32_t comm;
  uint8_t api;
  uint8_t nstreams;
  uint8_t timed;
  int32_t peer;
  uint64_t seq, group_id, t_enq;
  struct nsp_ctx_pool *pool;
  CUstream stream[NSP_GROUP_STREAMS];
  CUevent start[NSP_GROUP_STREAMS], end[NSP_GROUP_STREAMS];
};

static int nsp_track = -1; /* -1 not yet decided, 0 off, else NSP_TRACK_* bits */
static pthread_mutex_t nsp_track_lock = PTHREAD_MUTEX_INITIALIZER;
static const struct nsp_cuda *cu;
static uint64_t nsp_timing_gap_ns = 500000;
static uint64_t nsp_poll_ns = 2000000; /* NCCLSPY_POLL_MS */

static struct nsp_ctx_pool nsp_pools[NSP_MAX_CTX];
static _Atomic int nsp_npools;
static pthread_mutex_t nsp_pools_lock = PTHREAD_MUTEX_INITIALIZER;

/* Wrappers append here; the poller takes the whole list at once. */
static pthread_mutex_t nsp_in_lock = PTHREAD_MUTEX_INITIALIZER;
static struct nsp_pending *nsp_in;
static size_t nsp_nin, nsp_cap_in;
/* The poller's list length after its last pass: with nsp_nin, the bound
 * on calls awaiting completion (read under nsp_in_lock; no read-modify-
 * write per call, whose cache line the poller would share). */
static _Atomic size_t nsp_nwork_seen;
/* The poller's list, in enqueue order; nsp_work_lock also serialises
 * abandonment (abort/revoke) with polling. */
static pthread_mutex_t nsp_work_lock = PTHREAD_MUTEX_INITIALIZER;
static struct nsp_pending *nsp_work;
static size_t nsp_nwork, nsp_cap_work;

static pthread_t nsp_poller;
static int nsp_poller_running;
static _Atomic int nsp_poller_stop;
static _Atomic int nsp_warned_full, nsp_warned_ctx;

/* Per thread: the streams of the open group, and a timing counter. */
static NSP_TLS CUstream nsp_group_stream[NSP_GROUP_STREAMS];
static NSP_TLS unsigned nsp_group_nstreams;
static NSP_TLS uint64_t nsp_last_timed_ns;
/* The last stream this thread used, and its pool: saves a driver call. */
static NSP_TLS CUstream nsp_last_stream;
static NSP_TLS struct nsp_ctx_pool *nsp_last_pool;

/* Whether this call gets timed events (see NCCLSPY_TIMING_GAP_US). */
static int want_timing(void) {
  if (!(nsp_track & NSP_TRACK_TIMING)) return 0;
  uint64_t now = nsp_now_ns();
  if (now - nsp_last_timed_ns < nsp_timing_gap_ns) return 0;
  nsp_last_timed_ns = now;
  return 1;
}

static void nsp_done_forked(void);

static void init_tracking(void) {
  pthread_mutex_lock(&nsp_track_lock);
  if (nsp_track < 0) {
    cu = nsp_cuda_get();
    int timing = (int)nsp_setting(NSP_SET_TIMING);
    nsp_timing_gap_ns = (uint64_t)nsp_setting(NSP_SET_TIMING_GAP_US) * 1000u;
    nsp_poll_ns = (uint64_t)nsp_setting(NSP_SET_POLL_MS) * 1000000u;
    if (!cu) nsp_track = 0;
    else nsp_track = NSP_TRACK_COMPLETION | (timing ? NSP_TRACK_TIMING : 0);
    pthread_atfork(NULL, NULL, nsp_done_forked);
  }
  pthread_mutex_unlock(&nsp_track_lock);
}

uint32_t nsp_done_tracking(void) {
  if (NSP_UNLIKELY(nsp_track < 0)) init_tracking();
  return (uint32_t)nsp_track;
}

/* The pool of ctx, made on first use.  Lock-free lookup: pools are only
 * appended. */
static struct nsp_ctx_pool *pool_of(CUcontext ctx) {
  int n = atomic_load_explicit(&nsp_npools, memory_order_acquire);
  for (int i = 0; i < n; i++)
    if (nsp_pools[i].ctx == ctx) return &nsp_pools[i];
  pthread_mutex_lock(&nsp_pools_lock);
  n = atomic_load_explicit(&nsp_npools, memory_order_relaxed);
  struct nsp_ctx_pool *p = NULL;
  for (int i = 0; i < n; i++)
    if (nsp_pools[i].ctx == ctx) p = &nsp_pools[i];
  if (!p && n < NSP_MAX_CTX) {
    p = &nsp_pools[n];
    memset(p, 0, sizeof *p);
    p->ctx = ctx;
    pthread_mutex_init(&p->lock, NULL);
    atomic_store_explicit(&nsp_npools, n + 1, memory_order_release);
  }
  pthread_mutex_unlock(&nsp_pools_lock);
  return p;
}

/* Untimed events taken from a pool in batches, so the wrapper rarely
 * takes the pool's lock (which the poller takes to give events back). */
#define NSP_STASH 32
static NSP_TLS struct nsp_ctx_pool *nsp_stash_pool;
static NSP_TLS CUevent nsp_stash[NSP_STASH];
static NSP_TLS unsigned nsp_nstash;

static CUevent stash_get(struct nsp_ctx_pool *p) {
  if (nsp_stash_pool != p) {
    if (nsp_stash_pool && nsp_nstash) {
      pthread_mutex_lock(&nsp_stash_pool->lock);
      while (nsp_nstash && nsp_stash_pool->nplain < nsp_stash_pool->cap_plain)
        nsp_stash_pool->plain[nsp_stash_pool->nplain++] = nsp_stash[--nsp_nstash];
      pthread_mutex_unlock(&nsp_stash_pool->lock);
    }
    nsp_nstash = 0; /* any left over had no room: let them go */
    nsp_stash_pool = p;
  }
  if (!nsp_nstash) {
    pthread_mutex_lock(&p->lock);
    while (p->nplain && nsp_nstash < NSP_STASH) nsp_stash[nsp_nstash++] = p->plain[--p->nplain];
    pthread_mutex_unlock(&p->lock);
  }
  return nsp_nstash ? nsp_stash[--nsp_nstash] : NULL;
}

/* An event of the pool's context, timed or not; NULL on failure.  New
 * events are made in the calling thread's current context, which must be
 * the pool's. */
static CUevent event_get(struct nsp_ctx_pool *p, int timed) {
  CUevent e = timed ? NULL : stash_get(p);
  if (e) return e;
  pthread_mutex_lock(&p->lock);
  if (timed && p->ntimed) e = p->timed[--p->ntimed];
  else if (!timed && p->nplain) e = p->plain[--p->nplain];
  pthread_mutex_unlock(&p->lock);
  if (e) return e;
  CUcontext cur = NULL;
  if (cu->CtxGetCurrent(&cur) != NSP_CUDA_SUCCESS || cur != p->ctx) {
    nsp_warn_once(&nsp_warned_ctx, "a stream's CUDA context is not the calling thread's; calls "
                                   "on it are recorded without completion tracking");
    return NULL;
  }
  if (cu->EventCreate(&e, timed ? 0 : NSP_CU_EVENT_DISABLE_TIMING) != NSP_CUDA_SUCCESS) return NULL;
  return e;
}

static void event_put(struct nsp_ctx_pool *p, CUevent e, int timed) {
  if (!e) return;
  pthread_mutex_lock(&p->lock);
  CUevent **list = timed ? &p->timed : &p->plain;
  size_t *n = timed ? &p->ntimed : &p->nplain, *cap = timed ? &p->cap_timed : &p->cap_plain;
  if (*n == *cap) {
    size_t nc = *cap ? *cap * 2 : 64;
    CUevent *l = realloc(*list, nc * sizeof *l);
    if (l) {
      *list = l;
      *cap = nc;
    }
  }
  if (*n < *cap) (*list)[(*n)++] = e;
  else e = NULL; /* no memory: let it go rather than grow */
  pthread_mutex_unlock(&p->lock);
}

static void emit(const struct nsp_pending *w, uint32_t flags, uint64_t start, uint64_t end) {
  struct nsp_rec *r = nsp_ring_reserve();
  if (!r) return;
  r->kind = NSP_REC_COMPLETION;
  nsp_rec_completion_set_comm(r, w->comm);
  nsp_rec_completion_set_api(r, (uint8_t)w->api);
  nsp_rec_completion_set_seq(r, w->seq);
  nsp_rec_completion_set_peer(r, w->peer);
  nsp_rec_completion_set_group_id(r, w->group_id);
  nsp_rec_completion_set_flags(r, (uint16_t)flags);
  nsp_rec_completion_set_gpu_start(r, start);
  nsp_rec_completion_set_gpu_end(r, end);
  nsp_rec_completion_set_t_seen(r, nsp_now_ns());
  nsp_ring_commit(r);
}

/* ---- wrapper side ---- */

/* The stream's context and pool, or NULL when the call cannot be tracked.
 * *captured is set when the stream is being captured into a graph. */
static struct nsp_ctx_pool *stream_pool(CUstream s, int *captured) {
  int status = 0;
  *captured = 0;
  if (cu->StreamIsCapturing(s, &status) != NSP_CUDA_SUCCESS) return NULL;
  if (status != NSP_CU_STREAM_CAPTURE_STATUS_NONE) {
    *captured = 1;
    return NULL;
  }
  if (s == nsp_last_stream && nsp_last_pool) return nsp_last_pool;
  CUcontext ctx = NULL;
  if (cu->StreamGetCtx(s, &ctx) != NSP_CUDA_SUCCESS || !ctx) return NULL;
  nsp_last_stream = s;
  nsp_last_pool = pool_of(ctx);
  return nsp_last_pool;
}

static void poller_start(void);

static void push_pending(const struct nsp_pending *w) {
  pthread_mutex_lock(&nsp_in_lock);
  int ok = nsp_nin + atomic_load_explicit(&nsp_nwork_seen, memory_order_relaxed) < NSP_MAX_PENDING;
  if (ok && nsp_nin == nsp_cap_in) {
    size_t nc = nsp_cap_in ? nsp_cap_in * 2 : 256;
    struct nsp_pending *l = realloc(nsp_in, nc * sizeof *l);
    if (l) {
      nsp_in = l;
      nsp_cap_in = nc;
    }
  }
  ok = ok && nsp_nin < nsp_cap_in;
  if (ok) nsp_in[nsp_nin++] = *w;
  pthread_mutex_unlock(&nsp_in_lock);
  if (NSP_UNLIKELY(!ok)) {
    nsp_warn_once(&nsp_warned_full, "more than %d NCCL calls await completion; newer ones are "
                                    "recorded without completion tracking", NSP_MAX_PENDING);
    for (unsigned i = 0; i < w->nstreams; i++) {
      event_put(w->pool, w->start[i], 1);
      event_put(w->pool, w->end[i], w->timed);
    }
    /* Say so, or the call would read as never completed. */
    emit(w, NSP_DONE_UNTRACKED, 0, 0);
  }
  if (NSP_UNLIKELY(!nsp_poller_running)) poller_start();
}

void nsp_done_before(struct nsp_track *t, cudaStream_t stream, int in_group, int untimed) {
  memset(t, 0, sizeof *t);
  if (NSP_UNLIKELY(nsp_track < 0)) init_tracking();
  if (!nsp_track) return;
  if (in_group) {
    /* The group's events go in at ncclGroupEnd, on each stream it used. */
    unsigned n = nsp_group_nstreams;
    for (unsigned i = 0; i < n; i++)
      if (nsp_group_stream[i] == stream) return;
    if (n < NSP_GROUP_STREAMS) nsp_group_stream[nsp_group_nstreams++] = stream;
    return;
  }
  int captured;
  t->tried = 1;
  t->pool = stream_pool(stream, &captured);
  t->captured = (uint8_t)captured;
  if (!t->pool) return;
  t->timed = !untimed && want_timing();
  if (t->timed) {
    t->start = event_get(t->pool, 1);
    if (!t->start || cu->EventRecord(t->start, stream) != NSP_CUDA_SUCCESS) {
      nsp_last_stream = NULL; /* a handle reused in another context, say */
      event_put(t->pool, t->start, 1);
      t->start = NULL;
      t->timed = 0;
    }
  }
}

void nsp_done_bench(struct nsp_track *t, int mode) {
  t->off = 1;
  if (mode == NSP_MODE_CAPTURE_ONLY || !t->pool) {
    t->pool = NULL;
    t->tried = 0;
    t->captured = 0;
  } else {
    t->bench = (uint8_t)mode;
  }
}

void nsp_done_after(struct nsp_track *t, cudaStream_t stream, uint32_t comm, int api, uint64_t seq,
                    int peer, int result, uint64_t t_exit) {
  struct nsp_pending w = {.comm = comm, .api = (uint8_t)api, .peer = peer, .seq = seq};
  if (t->captured) {
    emit(&w, NSP_DONE_CAPTURED, 0, 0);
    return;
  }
  if (!t->pool) {
    /* Tracking is on but this call could not be followed (a driver call
     * failed): say so, or the call would read as never completed. */
    if (t->tried && (result == ncclSuccess || result == ncclInProgress)) emit(&w, NSP_DONE_UNTRACKED, 0, 0);
    return;
  }
  w.pool = t->pool;
  w.timed = t->timed;
  CUevent end = NULL;
  if (result == ncclSuccess || result == ncclInProgress) {
    end = event_get(t->pool, t->timed);
    if (end && cu->EventRecord(end, stream) != NSP_CUDA_SUCCESS) {
      nsp_last_stream = NULL;
      event_put(t->pool, end, t->timed);
      end = NULL;
    }
  }
  if (!end) {
    event_put(t->pool, t->start, 1);
    if (result == ncclSuccess || result == ncclInProgress) emit(&w, NSP_DONE_UNTRACKED, 0, 0);
    return;
  }
  if (NSP_UNLIKELY(t->bench == NSP_MODE_EVENT_ONLY)) {
    event_put(t->pool, end, 0); /* reused before it completes: fine, never queried */
    return;
  }
  w.nstreams = 1;
  w.stream[0] = stream;
  w.start[0] = t->start;
  w.end[0] = end;
  w.t_enq = t_exit; /* a clock read saved: the call returned just now */
  push_pending(&w);
}

void nsp_done_group_before(struct nsp_track_group *g) {
  memset(g, 0, sizeof *g);
  if (!nsp_track || nsp_track < 0) {
    nsp_group_nstreams = 0;
    return;
  }
  unsigned n = nsp_group_nstreams;
  nsp_group_nstreams = 0;
  g->timed = want_timing();
  for (unsigned i = 0; i < n; i++) {
    int captured;
    struct nsp_ctx_pool *p = stream_pool(nsp_group_stream[i], &captured);
    if (captured) g->captured = 1;
    if (!p || (g->pool && p != g->pool)) continue; /* one context per group record */
    g->pool = p;
    unsigned k = g->nstreams++;
    g->stream[k] = nsp_group_stream[i];
    if (g->timed) {
      g->start[k] = event_get(p, 1);
      if (g->start[k] && cu->EventRecord(g->start[k], g->stream[k]) != NSP_CUDA_SUCCESS) {
        event_put(p, g->start[k], 1);
        g->start[k] = NULL;
      }
      if (!g->start[k]) g->timed = 0;
    }
  }
}

void nsp_done_group_after(struct nsp_track_group *g, uint64_t group_id, int result) {
  struct nsp_pending w = {.peer = -1, .group_id = group_id, .pool = g->pool, .timed = g->timed};
  if (g->captured) {
    emit(&w, NSP_DONE_CAPTURED, 0, 0);
    return;
  }
  if (!g->pool) return;
  int ok = result == ncclSuccess || result == ncclInProgress;
  for (unsigned i = 0; i < g->nstreams; i++) {
    CUevent end = ok ? event_get(g->pool, g->timed) : NULL;
    if (end && cu->EventRecord(end, g->stream[i]) != NSP_CUDA_SUCCESS) {
      event_put(g->pool, end, g->timed);
      end = NULL;
    }
    if (!end) {
      ok = 0;
      continue;
    }
    w.stream[w.nstreams] = g->stream[i];
    w.start[w.nstreams] = g->start[i];
    w.end[w.nstreams] = end;
    w.nstreams++;
  }
  if (!ok || !w.nstreams) {
    for (unsigned i = 0; i < g->nstreams; i++) event_put(g->pool, g->start[i], 1);
    for (unsigned i = 0; i < w.nstreams; i++) event_put(g->pool, w.end[i], w.timed);
    return;
  }
  if (w.timed)
    for (unsigned i = 0; i < w.nstreams; i++)
      if (!w.start[i]) w.timed = 0;
  w.t_enq = nsp_now_ns();
  push_pending(&w);
}

/* ---- poller ---- */

/* Moves what wrappers queued onto the poller's list.  The wrappers' list
 * is swapped for an empty one, so they wait on the lock for no copy. */
static struct nsp_pending *nsp_spare;
static size_t nsp_cap_spare;

static void take_incoming(void) {
  pthread_mutex_lock(&nsp_in_lock);
  struct nsp_pending *in = nsp_in;
  size_t n = nsp_nin, cap = nsp_cap_in;
  nsp_in = nsp_spare;
  nsp_cap_in = nsp_cap_spare;
  nsp_nin = 0;
  pthread_mutex_unlock(&nsp_in_lock);
  if (n && nsp_nwork + n > nsp_cap_work) {
    size_t nc = nsp_cap_work ? nsp_cap_work : 256;
    while (nc < nsp_nwork + n) nc *= 2;
    struct nsp_pending *l = realloc(nsp_work, nc * sizeof *l);
    if (l) {
      nsp_work = l;
      nsp_cap_work = nc;
    }
  }
  size_t take = nsp_cap_work - nsp_nwork < n ? nsp_cap_work - nsp_nwork : n;
  if (take) memcpy(nsp_work + nsp_nwork, in, take * sizeof *in);
  nsp_nwork += take;
  for (size_t i = take; i < n; i++) emit(&in[i], NSP_DONE_UNTRACKED, 0, 0); /* no memory: dropped */
  nsp_spare = in;
  nsp_cap_spare = cap;
}

static CUcontext nsp_poller_ctx;

static int use_ctx(CUcontext ctx) {
  if (ctx == nsp_poller_ctx) return 0;
  if (cu->CtxSetCurrent(ctx) != NSP_CUDA_SUCCESS) return -1;
  nsp_poller_ctx = ctx;
  return 0;
}

/* Keeps a fresh pair (GPU event, host time) per context: an event on a
 * private non-blocking stream (never the user's), waited for here. */
static void anchor(struct nsp_ctx_pool *p) {
  uint64_t now = nsp_now_ns();
  if (p->anchor_ok && now - p->anchor_made_ns < NSP_ANCHOR_NS) return;
  if (use_ctx(p->ctx) < 0) return;
  if (!p->anchor_stream && cu->StreamCreate(&p->anchor_stream, NSP_CU_STREAM_NON_BLOCKING) != NSP_CUDA_SUCCESS) {
    p->anchor_stream = NULL;
    return;
  }
  if (!p->anchor && cu->EventCreate(&p->anchor, 0) != NSP_CUDA_SUCCESS) {
    p->anchor = NULL;
    return;
  }
  uint64_t t0 = nsp_now_ns();
  if (cu->EventRecord(p->anchor, p->anchor_stream) != NSP_CUDA_SUCCESS ||
      cu->EventSynchronize(p->anchor) != NSP_CUDA_SUCCESS)
    return;
  uint64_t t1 = nsp_now_ns();
  p->anchor_host_ns = t0 + (t1 - t0) / 2;
  p->anchor_made_ns = t1;
  p->anchor_ok = 1;
}

/* Host-clock ns of a completed timed event; 0 when it cannot be mapped. */
static uint64_t host_time(struct nsp_ctx_pool *p, CUevent e) {
  float ms = 0;
  if (!p->anchor_ok || cu->EventElapsedTime(&ms, p->anchor, e) != NSP_CUDA_SUCCESS) return 0;
  return (uint64_t)((int64_t)p->anchor_host_ns + (int64_t)((double)ms * 1e6));
}

/* Events a pass gives back, returned under one lock per pool at its end. */
static struct nsp_ctx_pool *nsp_ret_pool;
static CUevent *nsp_ret;
static size_t nsp_nret, nsp_cap_ret;

static void flush_returns(void) {
  if (!nsp_nret) return;
  struct nsp_ctx_pool *p = nsp_ret_pool;
  pthread_mutex_lock(&p->lock);
  if (p->nplain + nsp_nret > p->cap_plain) {
    size_t nc = p->cap_plain ? p->cap_plain : 64;
    while (nc < p->nplain + nsp_nret) nc *= 2;
    CUevent *l = realloc(p->plain, nc * sizeof *l);
    if (l) {
      p->plain = l;
      p->cap_plain = nc;
    }
  }
  for (size_t i = 0; i < nsp_nret && p->nplain < p->cap_plain; i++) p->plain[p->nplain++] = nsp_ret[i];
  pthread_mutex_unlock(&p->lock);
  nsp_nret = 0;
}

static void release(struct nsp_pending *w) {
  for (unsigned i = 0; i < w->nstreams; i++) {
    event_put(w->pool, w->start[i], 1);
    if (w->timed) {
      event_put(w->pool, w->end[i], 1);
      continue;
    }
    if (nsp_ret_pool != w->pool) {
      flush_returns();
      nsp_ret_pool = w->pool;
    }
    if (nsp_nret == nsp_cap_ret) {
      size_t nc = nsp_cap_ret ? nsp_cap_ret * 2 : 256;
      CUevent *l = realloc(nsp_ret, nc * sizeof *l);
      if (!l) {
        event_put(w->pool, w->end[i], 0);
        continue;
      }
      nsp_ret = l;
      nsp_cap_ret = nc;
    }
    nsp_ret[nsp_nret++] = w->end[i];
  }
}

/* Events of one stream complete in the order they were recorded, so the
 * calls of a stream that have finished are a prefix of its queue: a binary
 * search finds where it ends with a few queries, however many calls the
 * stream holds (the driver's lock is shared with the program's launches:
 * every query the poller saves is time the program keeps).  A call of a
 * group spans several streams and is done when it is done in each. */
#define NSP_POLL_STREAMS 64

struct stream_queue {
  CUstream stream;
  CUcontext ctx;
  size_t n, done; /* calls queued on it; how many of them are finished */
  size_t *item;   /* indices into nsp_work */
  unsigned *slot; /* which of the item's streams this is */
};

static CUresult query_at(struct stream_queue *q, size_t k) {
  struct nsp_pending *w = &nsp_work[q->item[k]];
  return cu->EventQuery(w->end[q->slot[k]]);
}

/* Sets q->done: the length of the finished prefix.  A query error counts
 * as finished (flagged later), so a broken event cannot hold a queue. */
static void find_done(struct stream_queue *q) {
  q->done = 0;
  if (!q->n || use_ctx(q->ctx) < 0) return;
  if (query_at(q, q->n - 1) != NSP_CUDA_ERROR_NOT_READY) {
    q->done = q->n;
    return;
  }
  /* Mostly only the newest call or two are still running (the program is
   * ahead of the GPU by a launch or so): step back from the end in
   * doubling strides to a finished call, then search between.  Two queries
   * in the common case, 2 log n at worst. */
  size_t lo = 0, hi = q->n - 1; /* the answer is in [lo, hi]; hi is not done */
  for (size_t step = 1; hi > 0; step *= 2) {
    size_t k = hi > step ? hi - step : 0;
    if (query_at(q, k) != NSP_CUDA_ERROR_NOT_READY) {
      lo = k + 1;
      break;
    }
    hi = k;
  }
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (query_at(q, mid) != NSP_CUDA_ERROR_NOT_READY) lo = mid + 1;
    else hi = mid;
  }
  q->done = lo;
}

static size_t *nsp_idx;
static unsigned *nsp_slot;
static size_t nsp_idx_cap;

static _Atomic uint64_t nsp_passes; /* poll passes completed */

static void poll_once(void) {
  pthread_mutex_lock(&nsp_work_lock);
  take_incoming();
  size_t need = nsp_nwork * NSP_GROUP_STREAMS;
  if (need > nsp_idx_cap) {
    size_t *i = realloc(nsp_idx, need * sizeof *i);
    if (i) nsp_idx = i;
    unsigned *sl = realloc(nsp_slot, need * sizeof *sl);
    if (sl) nsp_slot = sl;
    if (i && sl) nsp_idx_cap = need;
  }
  if (need > nsp_idx_cap) {
    pthread_mutex_unlock(&nsp_work_lock);
    return;
  }
  struct stream_queue q[NSP_POLL_STREAMS];
  unsigned nq = 0;
  /* Count per stream, then lay the queues out in one index array. */
  for (size_t i = 0; i < nsp_nwork; i++)
    for (unsigned s = 0; s < nsp_work[i].nstreams; s++) {
      unsigned k = 0;
      while (k < nq && q[k].stream != nsp_work[i].stream[s]) k++;
      if (k == nq) {
        if (nq == NSP_POLL_STREAMS) continue; /* looked at in a later pass */
        q[nq++] = (struct stream_queue){.stream = nsp_work[i].stream[s], .ctx = nsp_work[i].pool->ctx};
      }
      q[k].n++;
    }
  size_t off = 0;
  for (unsigned k = 0; k < nq; k++) {
    q[k].item = nsp_idx + off;
    q[k].slot = nsp_slot + off;
    off += q[k].n;
    q[k].n = 0;
  }
  for (size_t i = 0; i < nsp_nwork; i++)
    for (unsigned s = 0; s < nsp_work[i].nstreams; s++)
      for (unsigned k = 0; k < nq; k++)
        if (q[k].stream == nsp_work[i].stream[s]) {
          q[k].item[q[k].n] = i;
          q[k].slot[q[k].n++] = s;
          break;
        }
  for (unsigned k = 0; k < nq; k++) find_done(&q[k]);

  /* A call is finished when it lies in the finished prefix of each of its
   * streams; count per call in a scratch array. */
  unsigned char *left = calloc(nsp_nwork ? nsp_nwork : 1, 1);
  if (!left) {
    pthread_mutex_unlock(&nsp_work_lock);
    return;
  }
  for (size_t i = 0; i < nsp_nwork; i++) left[i] = nsp_work[i].nstreams;
  for (unsigned k = 0; k < nq; k++)
    for (size_t j = 0; j < q[k].done; j++) left[q[k].item[j]]--;
  size_t keep = 0;
  for (size_t i = 0; i < nsp_nwork; i++) {
    struct nsp_pending *w = &nsp_work[i];
    if (left[i]) {
      nsp_work[keep++] = *w;
      continue;
    }
    uint32_t flags = NSP_DONE_OK;
    uint64_t start = 0, end = 0;
    if (w->timed && flags == NSP_DONE_OK) {
      anchor(w->pool);
      for (unsigned s = 0; s < w->nstreams; s++) {
        uint64_t a = host_time(w->pool, w->start[s]), b = host_time(w->pool, w->end[s]);
        if (!a || !b) {
          start = end = 0;
          break;
        }
        if (!start || a < start) start = a;
        if (b > end) end = b;
      }
      if (start && end) flags |= NSP_DONE_TIMED;
    }
    emit(w, flags, start, end);
    release(w);
  }
  free(left);
  flush_returns();
  nsp_nwork = keep;
  atomic_store_explicit(&nsp_nwork_seen, keep, memory_order_relaxed);
  pthread_mutex_unlock(&nsp_work_lock);
  atomic_fetch_add(&nsp_passes, 1);
}

/* About once a second while calls are pending: a HEARTBEAT record, so a
 * rank blocked in a hang shows how long it waited. */
static void heartbeat(void) {
  pthread_mutex_lock(&nsp_work_lock);
  size_t n = nsp_nwork;
  uint64_t oldest = n ? nsp_work[0].t_enq : 0;
  pthread_mutex_unlock(&nsp_work_lock);
  if (!n) return;
  struct nsp_rec *r = nsp_ring_reserve();
  if (!r) return;
  r->kind = NSP_REC_HEARTBEAT;
  nsp_rec_heartbeat_set_t(r, nsp_now_ns());
  nsp_rec_heartbeat_set_pending(r, n);
  nsp_rec_heartbeat_set_oldest(r, oldest);
  nsp_ring_commit(r);
}

/* Makes the calling thread's driver calls safe while the program captures
 * a CUDA graph on another thread: in the default GLOBAL interaction mode,
 * a cuEventQuery or cuEventSynchronize from any thread invalidates every
 * capture begun in GLOBAL mode (torch.cuda.graph's default), and the
 * program's cuStreamEndCapture fails.  THREAD_LOCAL binds the thread only
 * by captures of its own, which the shim never makes (what PyTorch's NCCL
 * watchdog does: pytorch/pytorch#148594).  Returns the previous mode, for
 * restore_capture_mode; -1 when nothing was changed. */
static int thread_local_capture_mode(void) {
  int mode = NSP_CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
  if (!cu || !cu->ThreadExchangeStreamCaptureMode ||
      cu->ThreadExchangeStreamCaptureMode(&mode) != NSP_CUDA_SUCCESS)
    return -1;
  return mode;
}

static void restore_capture_mode(int mode) {
  if (mode >= 0) cu->ThreadExchangeStreamCaptureMode(&mode);
}

static void *poller_main(void *arg) {
  (void)arg;
  unsigned tick = 0, beat = 0;
  int mode_set = 0;
  while (!atomic_load_explicit(&nsp_poller_stop, memory_order_acquire)) {
    int track = nsp_track; /* read once: the mode is set before any query */
    /* The poller queries and synchronizes events whatever the program's
     * threads are doing; it never captures.  (It may start, to follow a
     * non-blocking init, before the driver is resolved.)  A failed switch
     * is tried again on the next pass. */
    if (!mode_set && track > 0)
      mode_set = !cu->ThreadExchangeStreamCaptureMode || thread_local_capture_mode() >= 0;
    if (track > 0) poll_once();
    if (track > 0 && ++beat * nsp_poll_ns >= 1000000000u) { /* about every second */
      beat = 0;
      heartbeat();
    }
    if (++tick * nsp_poll_ns >= 10000000u) { /* about every 10 ms */
      tick = 0;
      nsp_wrappers_follow_pending();
    }
    /* 2 ms: a query costs 1.3 us of driver time on 2xH200 and shares the
     * driver's lock with the program's launches; completion times come
     * from the events, not from when we look. */
    struct timespec ts = {(time_t)(nsp_poll_ns / 1000000000u), (long)(nsp_poll_ns % 1000000000u)};
    nanosleep(&ts, NULL);
  }
  return NULL;
}

void nsp_done_poller_start(void) { poller_start(); }

static void poller_start(void) {
  pthread_mutex_lock(&nsp_track_lock);
  if (!nsp_poller_running) {
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old); /* signals belong to the program */
    if (pthread_create(&nsp_poller, NULL, poller_main, NULL) == 0) nsp_poller_running = 1;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
  }
  pthread_mutex_unlock(&nsp_track_lock);
}

void nsp_done_abandon(uint32_t comm) {
  if (nsp_track <= 0 || !comm) return;
  /* What already finished is not abandoned: let the poller look first
   * (it owns the CUDA context switching; an abort can wait a few ms). */
  uint64_t seen = atomic_load(&nsp_passes);
  for (int i = 0; i < 20 && nsp_poller_running && atomic_load(&nsp_passes) < seen + 2; i++) {
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  pthread_mutex_lock(&nsp_work_lock);
  take_incoming();
  size_t keep = 0;
  for (size_t i = 0; i < nsp_nwork; i++) {
    struct nsp_pending *w = &nsp_work[i];
    if (w->comm == comm && !w->group_id) {
      emit(w, NSP_DONE_ABANDONED, 0, 0);
      /* Its events may still be recorded on the stream: leak them rather
       * than reuse an event the GPU may yet write. */
    } else {
      nsp_work[keep++] = *w;
    }
  }
  nsp_nwork = keep;
  atomic_store_explicit(&nsp_nwork_seen, keep, memory_order_relaxed);
  pthread_mutex_unlock(&nsp_work_lock);
}

void nsp_done_stop(void) {
  if (!nsp_poller_running) return;
  atomic_store(&nsp_poller_stop, 1);
  pthread_join(nsp_poller, NULL);
  nsp_poller_running = 0;
  if (nsp_track > 0) { /* what finished just before exit */
    /* On the program's thread: its capture mode and current context are
     * put back after (poll_once switches contexts through use_ctx, whose
     * cache belonged to the poller thread). */
    int mode = thread_local_capture_mode();
    CUcontext saved = NULL;
    int have_saved = cu->CtxGetCurrent(&saved) == NSP_CUDA_SUCCESS;
    nsp_poller_ctx = NULL;
    poll_once();
    if (have_saved && nsp_poller_ctx != saved) cu->CtxSetCurrent(saved);
    nsp_poller_ctx = NULL;
    restore_capture_mode(mode);
  }
}

void nsp_done_group_discard(void) { nsp_group_nstreams = 0; }

static void nsp_done_forked(void) {
  /* CUDA cannot be used in a forked child; nor can the parent's events.
   * The poller did not come along: the locks it or a calling thread held
   * at the fork are made new, and the parent's pools are left alone. */
  pthread_mutex_init(&nsp_track_lock, NULL);
  pthread_mutex_init(&nsp_pools_lock, NULL);
  pthread_mutex_init(&nsp_in_lock, NULL);
  pthread_mutex_init(&nsp_work_lock, NULL);
  nsp_track = 0;
  nsp_poller_running = 0;
  nsp_nin = nsp_nwork = 0;
  atomic_store(&nsp_nwork_seen, 0);
  nsp_group_nstreams = 0;
}
