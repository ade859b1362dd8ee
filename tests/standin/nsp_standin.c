/* nsp_standin.c - a CPU stand-in for NCCL 2.28 (libnccl.so.2), used by
 * ncclspy's tests in place of the real library.
 *
 * What a test can rely on
 * -----------------------
 * - The ABI is that of common/nsp_nccl.h: every nccl* entry point of
 *   NSP_NCCL_APIS and a pnccl* alias of each, as NCCL >= 2.16 exports.
 * - NCCL's own self-calls are kept, through the public (interposable)
 *   names, so that a preloaded shim sees them as nested calls:
 *   ncclBcast calls ncclBroadcast, ncclCommInitAll calls ncclGetUniqueId.
 * - Buffers are host memory.  Calls between ncclGroupStart and the
 *   outermost ncclGroupEnd are queued and run together at that GroupEnd (so
 *   a ring of sends and receives inside one group completes).
 * - With a NULL stream, or when the CUDA stand-in (tests/standin/
 *   nsp_standin_cuda.c) is not loaded, a call (or group) runs on the
 *   calling thread and returns once its data has moved.
 * - With a non-NULL stream and the CUDA stand-in loaded (its hook
 *   nsp_standin_stream_enqueue is found in global scope, or in the
 *   libcuda.so.1 already loaded, even RTLD_LOCAL), a call only enqueues,
 *   as NCCL does: it checks its arguments, returns ncclSuccess, and the
 *   data moves later on the stream's worker thread, in stream order
 *   (cuStreamSynchronize, or an event recorded after it, waits for it).
 *   A group is enqueued at its ncclGroupEnd, on the stream of its first
 *   call that has one; every other stream it used gets a task that waits
 *   for it.  The buffers are read and written when the work runs.
 *   A call on a stream that is capturing a CUDA graph returns ncclSuccess
 *   and does nothing (the graph is never replayed; it does not count as a
 *   collective).  A stream the CUDA stand-in refuses: ncclUnhandledCudaError.
 * - Whatever the streams, the work of one communicator runs in the order
 *   it was issued: a call with a NULL stream first waits for the work of
 *   that communicator still queued on streams.
 * - Work on a stream that fails (a peer that never comes, after
 *   NSP_STANDIN_TIMEOUT_MS: ncclSystemError; a failed peer:
 *   ncclRemoteError; an injected failure) is reported, as NCCL reports
 *   asynchronous errors, by ncclCommGetAsyncError; from then on every call
 *   on that communicator returns that error at once ("...: communicator
 *   has an asynchronous error: <the failure's last-error text>").
 * - ncclCommFinalize and ncclCommDestroy wait for the communicator's work
 *   to end (each piece ends, at the latest, after NSP_STANDIN_TIMEOUT_MS).
 *   ncclCommAbort returns at once: that work, queued or waiting for peers,
 *   gives up promptly (ncclSystemError, nothing moved, nothing reported);
 *   the communicator's memory goes when the last of it has ended.
 *   ncclCommAbort may be called from another thread while a call waits.
 * - Ranks are processes.  The ranks of one communicator meet in a POSIX
 *   shared-memory file named after the ncclUniqueId; the name is unlinked
 *   as soon as the last rank has joined, so nothing stays in /dev/shm once
 *   init has succeeded, even if a rank is killed later.
 * - Like NCCL, nothing checks that ranks agree.  The k-th collective of a
 *   communicator on one rank meets the k-th on every other rank, whatever
 *   kind, count, dtype, op or root each passed.  Each rank deposits the
 *   bytes it sends and takes from each peer the bytes it needs.  A rank
 *   that needs more bytes than a peer deposited (or a peer that never
 *   comes) waits for data that never comes, until NSP_STANDIN_TIMEOUT_MS
 *   passes; the call then returns ncclSystemError with the last error
 *   "stand-in: timed out after N ms waiting for rank R at collective #S"
 *   (R: the peer's rank in that communicator; S: its collective number
 *   from 1) and the communicator stays unusable (later calls fail at
 *   once).  A rank
 *   that gets enough bytes completes, with whatever values they make.
 * - Send/recv: the k-th send from A to B meets the k-th recv of B from A.
 *   A send is buffered (up to 1 MiB in flight per pair) and completes
 *   without its receive, as small NCCL sends do; a receive that needs more
 *   bytes than the matching send carried, or whose send never comes, times
 *   out as above ("at recv #K").
 * - ncclCommSplit is collective over the parent (its exchange never meets
 *   another rank's collective: NCCL exchanges over its bootstrap network,
 *   so both wait); ncclCommShrink computes
 *   the child from its arguments (the excluded ranks do not call it).
 * - ncclCommInitAll creates its communicators in one process without
 *   meeting anyone; with ndev > 1 their collectives fail with
 *   ncclInvalidUsage.
 * - The last error (ncclGetLastError) is per process, as in NCCL.
 * - Threads may use different communicators at once; one communicator is
 *   used by one thread at a time, as NCCL requires.
 *
 * Environment
 * -----------
 * NSP_STANDIN_TIMEOUT_MS  how long a call waits for its peers (default
 *                         20000).  Init waits at least 10000 ms.
 * NSP_STANDIN_FAIL        injected failures: rules separated by ';', each
 *                         a list of key=value separated by ',':
 *                           rank=R    world rank (env RANK, else the rank
 *                                     in the first communicator); absent:
 *                                     every rank
 *                           comm=K    K-th communicator this process
 *                                     initialised, from 0 (default 0;
 *                                     split children count too; threads
 *                                     that init at once race for K)
 *                           seq=S     S-th collective on it, from 1
 *                           result=N  ncclResult_t returned (default 2)
 *                           msg=TEXT  last-error text; runs to the end of
 *                                     the rule, so it may hold commas
 *                         e.g. "rank=3,seq=50,result=2,msg=NET/IB : x".
 *                         The failing rank marks the communicator broken;
 *                         every other rank's calls on it, including one
 *                         already waiting, then return ncclRemoteError
 *                         ("remote process exited or there was a network
 *                         error"), and ncclCommGetAsyncError reports it,
 *                         once NSP_STANDIN_REMOTE_DELAY_MS has passed.
 *                         Read once, at the first communicator init.
 * NSP_STANDIN_REMOTE_DELAY_MS  how long after a rank's failure its peers
 *                         see it (default 200), as with a network timeout;
 *                         it also keeps the failing rank's error first in
 *                         time in every trace.
 * NSP_STANDIN_DEVICE      what ncclCommCuDevice reports (default: env
 *                         LOCAL_RANK, else 0).
 * NSP_STANDIN_VERSION     what ncclGetVersion reports (default 22809).
 * NSP_STANDIN_MAX_BYTES   largest deposit of one rank in one collective
 *                         (default 256 MiB; K/M/G suffixes); shared memory
 *                         is sparse, so only bytes actually moved use RAM.
 * NSP_STANDIN_DEBUG       when set, every error is also printed on stderr.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "nsp_nccl.h"
#include "nsp_standin_cuda.h" /* the hook's contract only: nothing is linked */
#include "nsp_standin_reduce.h"

#pragma GCC visibility push(default)
NSP_NCCL_DECLARE(nccl)
NSP_NCCL_DECLARE(pnccl)
#pragma GCC visibility pop

#define NSP_STANDIN_API __attribute__((visibility("default")))

/* Shared memory holds atomics used by several processes; that is only
 * sound when they are lock-free (address-free). */
_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "64-bit atomics must be lock-free");
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "int atomics must be lock-free");

#define NSP_STANDIN_VERSION_CODE 22809
#define NSP_STANDIN_MAX_RANKS 64
#define NSP_STANDIN_P2P_DEPTH 64          /* messages in flight per pair */
#define NSP_STANDIN_RING_BYTES (1u << 20) /* bytes in flight per pair */
#define NSP_STANDIN_DEFAULT_SLOT (256ull << 20)
#define NSP_STANDIN_DEFAULT_TIMEOUT_MS 20000
#define NSP_STANDIN_MIN_INIT_TIMEOUT_MS 10000
#define NSP_STANDIN_MAX_RULES 16
#define NSP_STANDIN_MAX_REDOPS 1024
#define NSP_STANDIN_SPINS 64
#define NSP_STANDIN_SHM_MAGIC 0x4e5350535444324full /* "NSPSTD2O" */
#define NSP_STANDIN_COMM_MAGIC 0x73746e64u
#define NSP_STANDIN_REMOTE_MSG "remote process exited or there was a network error"

static const char nsp_standin_id_magic[8] = {'N', 'S', 'P', 'S', 'T', 'D', 'N', 1};

/* ---- shared memory layout ------------------------------------------------
 * One file per communicator: header, one slot per rank, one channel per
 * ordered pair of ranks, then one data region per rank (its collective
 * deposit, then one p2p ring per destination).  Every field in a rank's
 * slot, and every field of a channel but `consumed`/`read`, has a single
 * writer, so no locks are needed. */

struct nsp_standin_hdr {
  _Atomic uint64_t magic; /* set last by the creator */
  int32_t nranks;
  int32_t pad0;
  uint64_t slot_bytes;
  uint64_t ring_bytes;
  uint64_t total_bytes;
  _Alignas(64) _Atomic uint32_t doorbell; /* futex word: bumped on any change */
  _Atomic uint32_t waiters;
  _Atomic int32_t joined;
  _Atomic int32_t broken; /* what peers of a failed rank report, 0 if none */
  _Atomic int32_t broken_rank;
  _Atomic int64_t broken_ns; /* CLOCK_MONOTONIC (host-wide) when it broke */
};

struct nsp_standin_slot {
  _Alignas(64) _Atomic uint64_t posted_seq; /* op whose deposit is in place */
  _Atomic uint64_t posted_bytes;
  _Atomic uint64_t done_seq; /* last op this rank finished reading for */
  _Atomic int32_t joined;
  int32_t pid;
  /* The posted op is ncclCommSplit's exchange, not a collective: NCCL
   * exchanges over its bootstrap network, so a split never meets a
   * collective of another rank (both wait). */
  _Atomic int32_t posted_exchange;
};

struct nsp_standin_chan {
  _Alignas(64) _Atomic uint64_t posted; /* messages announced by the sender */
  _Atomic uint64_t written;             /* stream bytes written by the sender */
  _Alignas(64) _Atomic uint64_t consumed; /* messages finished by the receiver */
  _Atomic uint64_t read;                  /* stream bytes read by the receiver */
  _Atomic uint64_t msg_bytes[NSP_STANDIN_P2P_DEPTH];
};

struct nsp_standin_layout {
  size_t slots_off, chans_off, data_off, region_bytes, slot_bytes, ring_bytes, total;
};

struct nsp_standin_token {
  uint64_t w[2];
};

struct nsp_standin_rule {
  int rank; /* -1: any */
  int comm_index;
  uint64_t seq;
  ncclResult_t result;
  char msg[256];
};

struct ncclComm {
  uint32_t magic;
  int rank, nranks, device;
  int index; /* order of initialisation in this process */
  struct nsp_standin_token token;
  struct nsp_standin_hdr *hdr; /* NULL: ncclCommInitAll comm with ndev > 1 */
  struct nsp_standin_layout lay;
  unsigned char *map;
  uint64_t op_seq;   /* uses of the deposit slot (collectives and splits) */
  uint64_t coll_seq; /* collectives, as users count them */
  uint64_t split_count, shrink_count;
  uint64_t *send_msgs, *send_stream, *recv_msgs; /* per peer */
  _Atomic int local_error; /* this rank's injected failure (an ncclResult_t) */
  _Atomic int wedged;      /* a call timed out: its peers' state is unknown */
  int finalized, revoked;
  const struct nsp_standin_rule *fail;
  /* Work on streams.  Batches (a call, or a group) on a communicator run
   * in the order they were issued: each takes a ticket when issued and
   * runs when done_tickets reaches it. */
  _Atomic uint64_t tickets;      /* batches issued (by the one host thread) */
  _Atomic uint64_t done_tickets; /* batches finished */
  _Atomic int refs;              /* the handle, and each batch issued */
  _Atomic int aborted;           /* ncclCommAbort: waiting work gives up */
  _Atomic int async_error;       /* first failure of work run on a stream */
  char async_msg[512];           /* its last-error text (under nsp_standin_err_lock) */
};

struct ncclWindow_vidmem {
  void *buff;
  size_t size;
};

enum nsp_standin_kind {
  NSP_STANDIN_ALLREDUCE,
  NSP_STANDIN_REDUCE,
  NSP_STANDIN_BROADCAST,
  NSP_STANDIN_ALLGATHER,
  NSP_STANDIN_REDUCESCATTER,
  NSP_STANDIN_ALLTOALL,
  NSP_STANDIN_GATHER,
  NSP_STANDIN_SCATTER,
  NSP_STANDIN_EXCHANGE, /* ncclCommSplit's colour/key exchange */
  NSP_STANDIN_SEND,
  NSP_STANDIN_RECV,
};

enum nsp_standin_state { NSP_STANDIN_PENDING, NSP_STANDIN_STARTED, NSP_STANDIN_DONE };

/* What one collective deposits and reads, worked out once per op. */
struct nsp_standin_shape {
  size_t dep_bytes;
  int reads;     /* this rank reads peers' deposits */
  int from_root; /* ... only the root's */
  int stride;    /* each source's bytes go to their own block of recvbuff */
  int reduce;
  size_t need_off, need_len;
};

struct nsp_standin_op {
  enum nsp_standin_kind kind;
  ncclComm_t comm;
  const void *sendbuff;
  void *recvbuff;
  size_t count;
  ncclDataType_t dtype;
  ncclRedOp_t op; /* a built-in op; PreMulSum ops become ncclSum + scalar */
  int premul;
  unsigned char scalar[8];
  int root, peer;
  cudaStream_t stream;
  /* run state */
  enum nsp_standin_state state;
  ncclResult_t result;
  struct nsp_standin_shape shape;
  uint64_t seq;     /* deposit-slot op, or p2p message number from 0 */
  uint64_t coll_no; /* collective number from 1 */
  uint64_t stream_start, msg_bytes;
  size_t done_bytes;
  int next_peer, reduced_any, wait_rank;
};

/* ---- process-wide state ---------------------------------------------------- */

static struct {
  int timeout_ms;
  int64_t remote_delay_ns;
  size_t slot_bytes;
  int debug;
  int env_rank; /* -1 if RANK is unset */
  struct nsp_standin_rule rules[NSP_STANDIN_MAX_RULES];
  int nrules;
} nsp_standin_env;
static pthread_once_t nsp_standin_env_once = PTHREAD_ONCE_INIT;
static atomic_int nsp_standin_comm_counter;
static atomic_int nsp_standin_world_rank = -1;

static pthread_mutex_t nsp_standin_err_lock = PTHREAD_MUTEX_INITIALIZER;
static char nsp_standin_err[1024];
static _Thread_local char nsp_standin_err_copy[1024];

static struct {
  int used;
  ncclDataType_t dtype;
  ncclScalarResidence_t residence;
  unsigned char value[8];
  const void *ptr;
} nsp_standin_redops[NSP_STANDIN_MAX_REDOPS];
static pthread_mutex_t nsp_standin_redop_lock = PTHREAD_MUTEX_INITIALIZER;

/* Calls between ncclGroupStart and ncclGroupEnd, per thread as in NCCL. */
static _Thread_local struct {
  int depth;
  struct nsp_standin_op *ops;
  size_t n, cap;
} nsp_standin_group;

__attribute__((format(printf, 1, 2))) static void nsp_standin_set_error(const char *fmt, ...)
{
  va_list ap;
  pthread_mutex_lock(&nsp_standin_err_lock);
  va_start(ap, fmt);
  vsnprintf(nsp_standin_err, sizeof nsp_standin_err, fmt, ap);
  va_end(ap);
  if (nsp_standin_env.debug)
    fprintf(stderr, "nccl-standin[%d]: %s\n", (int)getpid(), nsp_standin_err);
  pthread_mutex_unlock(&nsp_standin_err_lock);
}

static int64_t nsp_standin_now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void nsp_standin_sleep_ns(int64_t ns)
{
  struct timespec ts = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
    ;
}

static inline void nsp_standin_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield" ::: "memory");
#endif
}

/* ---- environment --------------------------------------------------------- */

static long long nsp_standin_env_ll(const char *name, long long dflt)
{
  const char *s = getenv(name);
  char *end;
  long long v;
  if (!s || !*s)
    return dflt;
  errno = 0;
  v = strtoll(s, &end, 0);
  if (errno || end == s) {
    fprintf(stderr, "nccl-standin: ignoring %s=%s (not a number)\n", name, s);
    return dflt;
  }
  switch (*end) {
  case 'k': case 'K': v <<= 10; break;
  case 'm': case 'M': v <<= 20; break;
  case 'g': case 'G': v <<= 30; break;
  default: break;
  }
  return v;
}

/* Parses one rule of NSP_STANDIN_FAIL, [s, e).  Returns 0 if it is usable. */
static int nsp_standin_parse_rule(const char *s, const char *e, struct nsp_standin_rule *r)
{
  int have_seq = 0;
  memset(r, 0, sizeof *r);
  r->rank = -1;
  r->result = ncclSystemError;
  snprintf(r->msg, sizeof r->msg, "stand-in: injected failure");
  while (s < e) {
    const char *eq, *comma;
    size_t klen;
    while (s < e && (*s == ' ' || *s == ','))
      s++;
    if (s >= e)
      break;
    eq = memchr(s, '=', (size_t)(e - s));
    if (!eq)
      return -1;
    klen = (size_t)(eq - s);
    if (klen == 3 && !memcmp(s, "msg", 3)) {
      size_t len = (size_t)(e - eq - 1);
      if (len >= sizeof r->msg)
        len = sizeof r->msg - 1;
      memcpy(r->msg, eq + 1, len);
      r->msg[len] = 0;
      break;
    }
    comma = memchr(eq, ',', (size_t)(e - eq));
    if (!comma)
      comma = e;
    {
      char val[64];
      size_t vlen = (size_t)(comma - eq - 1);
      long long v;
      char *end;
      if (vlen >= sizeof val)
        return -1;
      memcpy(val, eq + 1, vlen);
      val[vlen] = 0;
      v = strtoll(val, &end, 0);
      if (end == val || *end)
        return -1;
      if (klen == 4 && !memcmp(s, "rank", 4))
        r->rank = (int)v;
      else if (klen == 4 && !memcmp(s, "comm", 4))
        r->comm_index = (int)v;
      else if (klen == 3 && !memcmp(s, "seq", 3)) {
        r->seq = (uint64_t)v;
        have_seq = v > 0;
      } else if (klen == 6 && !memcmp(s, "result", 6))
        r->result = (ncclResult_t)v;
      else
        return -1;
    }
    s = comma;
  }
  return have_seq ? 0 : -1;
}

static void nsp_standin_env_init(void)
{
  const char *fail = getenv("NSP_STANDIN_FAIL");
  long long t = nsp_standin_env_ll("NSP_STANDIN_TIMEOUT_MS", NSP_STANDIN_DEFAULT_TIMEOUT_MS);
  long long slot = nsp_standin_env_ll("NSP_STANDIN_MAX_BYTES", (long long)NSP_STANDIN_DEFAULT_SLOT);
  const char *dbg = getenv("NSP_STANDIN_DEBUG");

  long long delay = nsp_standin_env_ll("NSP_STANDIN_REMOTE_DELAY_MS", 200);

  nsp_standin_env.timeout_ms = (t <= 0 || t > INT_MAX) ? NSP_STANDIN_DEFAULT_TIMEOUT_MS : (int)t;
  nsp_standin_env.remote_delay_ns = (delay < 0 ? 0 : delay) * 1000000;
  nsp_standin_env.slot_bytes = slot < 4096 ? 4096 : (size_t)slot;
  nsp_standin_env.debug = dbg && *dbg && strcmp(dbg, "0") != 0;
  nsp_standin_env.env_rank = (int)nsp_standin_env_ll("RANK", -1);
  while (fail && *fail && nsp_standin_env.nrules < NSP_STANDIN_MAX_RULES) {
    const char *e = strchr(fail, ';');
    if (!e)
      e = fail + strlen(fail);
    if (e > fail) {
      if (nsp_standin_parse_rule(fail, e, &nsp_standin_env.rules[nsp_standin_env.nrules]) == 0)
        nsp_standin_env.nrules++;
      else
        fprintf(stderr, "nccl-standin: ignoring NSP_STANDIN_FAIL rule \"%.*s\" "
                "(keys: rank, comm, seq, result, msg last; seq is required)\n",
                (int)(e - fail), fail);
    }
    fail = *e ? e + 1 : e;
  }
}

static void nsp_standin_env_load(void)
{
  pthread_once(&nsp_standin_env_once, nsp_standin_env_init);
}

/* ---- small helpers -------------------------------------------------------- */

static uint64_t nsp_standin_mix64(uint64_t x)
{
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

static size_t nsp_standin_round_up(size_t v, size_t a)
{
  return (v + a - 1) / a * a;
}

static void nsp_standin_layout(int nranks, size_t slot_bytes, size_t ring_bytes,
                               struct nsp_standin_layout *l)
{
  size_t n = (size_t)nranks;
  l->slot_bytes = nsp_standin_round_up(slot_bytes, 4096);
  l->ring_bytes = ring_bytes;
  l->slots_off = nsp_standin_round_up(sizeof(struct nsp_standin_hdr), 64);
  l->chans_off = l->slots_off + n * sizeof(struct nsp_standin_slot);
  l->data_off = nsp_standin_round_up(l->chans_off + n * n * sizeof(struct nsp_standin_chan), 4096);
  l->region_bytes = l->slot_bytes + n * ring_bytes;
  l->total = l->data_off + n * l->region_bytes;
}

static struct nsp_standin_slot *nsp_standin_slot(ncclComm_t c, int r)
{
  return (struct nsp_standin_slot *)(c->map + c->lay.slots_off) + r;
}

static struct nsp_standin_chan *nsp_standin_chan(ncclComm_t c, int src, int dst)
{
  return (struct nsp_standin_chan *)(c->map + c->lay.chans_off) + (size_t)src * (size_t)c->nranks + (size_t)dst;
}

static unsigned char *nsp_standin_deposit(ncclComm_t c, int r)
{
  return c->map + c->lay.data_off + (size_t)r * c->lay.region_bytes;
}

static unsigned char *nsp_standin_ring(ncclComm_t c, int src, int dst)
{
  return nsp_standin_deposit(c, src) + c->lay.slot_bytes + (size_t)dst * c->lay.ring_bytes;
}

static void nsp_standin_shm_name(const struct nsp_standin_token *t, char *buf, size_t len)
{
  snprintf(buf, len, "/nsp-standin-%016" PRIx64 "%016" PRIx64, t->w[0], t->w[1]);
}

/* Wakes every waiter of the communicator; the atomic waiter count keeps
 * the uncontended path free of system calls. */
static void nsp_standin_notify(struct nsp_standin_hdr *h)
{
  atomic_fetch_add(&h->doorbell, 1);
  if (atomic_load(&h->waiters) != 0)
    syscall(SYS_futex, (uint32_t *)&h->doorbell, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* Sleeps until the doorbell moves past `seen` or `ns` passes.  The caller
 * read `seen` before checking its condition, so no wake-up is lost. */
static void nsp_standin_wait(struct nsp_standin_hdr *h, uint32_t seen, int64_t ns)
{
  struct timespec ts = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
  atomic_fetch_add(&h->waiters, 1);
  syscall(SYS_futex, (uint32_t *)&h->doorbell, FUTEX_WAIT, seen, &ts, NULL, 0);
  atomic_fetch_sub(&h->waiters, 1);
}

/* Whether peers of a failed rank see the failure yet.  Like NCCL's, the
 * news takes time to travel (there, a network timeout): the delay also
 * keeps the failing rank's error first in time in every trace. */
static int nsp_standin_remote_visible(ncclComm_t c)
{
  return atomic_load_explicit(&c->hdr->broken, memory_order_acquire) && !c->local_error &&
         nsp_standin_now_ns() >= atomic_load_explicit(&c->hdr->broken_ns, memory_order_relaxed) +
                                     nsp_standin_env.remote_delay_ns;
}

static int nsp_standin_comm_ok(ncclComm_t c)
{
  return c && c->magic == NSP_STANDIN_COMM_MAGIC;
}

#define NSP_STANDIN_CHECK_COMM(c, fn)                                              \
  do {                                                                             \
    if (!nsp_standin_comm_ok(c)) {                                                 \
      nsp_standin_set_error("%s: invalid communicator %p", fn, (void *)(c));       \
      return ncclInvalidArgument;                                                  \
    }                                                                              \
  } while (0)

#define NSP_STANDIN_CHECK_PTR(p, fn)                                               \
  do {                                                                             \
    if (!(p)) {                                                                    \
      nsp_standin_set_error("%s: argument %s is NULL", fn, #p);                    \
      return ncclInvalidArgument;                                                  \
    }                                                                              \
  } while (0)

/* ---- communicator creation ------------------------------------------------ */

static int nsp_standin_token_from_id(const ncclUniqueId *id, struct nsp_standin_token *t)
{
  if (memcmp(id->internal, nsp_standin_id_magic, sizeof nsp_standin_id_magic) != 0)
    return -1;
  memcpy(t->w, id->internal + 8, sizeof t->w);
  return 0;
}

static ncclComm_t nsp_standin_comm_alloc(const struct nsp_standin_token *tok, int nranks,
                                         int rank, int device)
{
  ncclComm_t c = calloc(1, sizeof *c);
  if (!c)
    return NULL;
  c->send_msgs = calloc(3 * (size_t)nranks, sizeof(uint64_t));
  if (!c->send_msgs) {
    free(c);
    return NULL;
  }
  c->send_stream = c->send_msgs + nranks;
  c->recv_msgs = c->send_stream + nranks;
  c->magic = NSP_STANDIN_COMM_MAGIC;
  atomic_init(&c->refs, 1);
  c->token = *tok;
  c->nranks = nranks;
  c->rank = rank;
  c->device = device;
  return c;
}

static void nsp_standin_comm_unref(ncclComm_t c)
{
  if (atomic_fetch_sub(&c->refs, 1) != 1)
    return;
  if (c->map)
    munmap(c->map, c->lay.total);
  free(c->send_msgs);
  free(c);
}

/* Drops the handle.  Batches still queued on a stream hold their own
 * references: the memory goes when the last of them has run. */
static void nsp_standin_comm_free(ncclComm_t c)
{
  size_t i, j;
  if (!c)
    return;
  /* A destroyed comm must not be reached from this thread's open group. */
  for (i = j = 0; i < nsp_standin_group.n; i++)
    if (nsp_standin_group.ops[i].comm != c)
      nsp_standin_group.ops[j++] = nsp_standin_group.ops[i];
  nsp_standin_group.n = j;
  c->magic = 0;
  nsp_standin_comm_unref(c);
}

static int nsp_standin_default_device(void)
{
  long long d = nsp_standin_env_ll("NSP_STANDIN_DEVICE", -1);
  if (d < 0)
    d = nsp_standin_env_ll("LOCAL_RANK", 0);
  return d < 0 ? 0 : (int)d;
}

/* Registers a communicator that finished init: its index for
 * NSP_STANDIN_FAIL's comm=, and the rule that targets it. */
static void nsp_standin_comm_register(ncclComm_t c)
{
  int i, world, expected = -1;
  c->index = atomic_fetch_add(&nsp_standin_comm_counter, 1);
  if (c->index == 0)
    atomic_compare_exchange_strong(&nsp_standin_world_rank, &expected, c->rank);
  world = nsp_standin_env.env_rank >= 0 ? nsp_standin_env.env_rank : atomic_load(&nsp_standin_world_rank);
  for (i = 0; i < nsp_standin_env.nrules; i++) {
    const struct nsp_standin_rule *r = &nsp_standin_env.rules[i];
    if (r->comm_index == c->index && (r->rank < 0 || r->rank == world)) {
      c->fail = r;
      break;
    }
  }
}

/* Opens (or creates) the communicator's shared memory and maps it. */
static ncclResult_t nsp_standin_shm_attach(ncclComm_t c, const char *name, int64_t deadline)
{
  struct nsp_standin_layout lay;
  struct stat st;
  void *map;
  int fd;

  fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd >= 0) {
    struct nsp_standin_hdr *h;
    nsp_standin_layout(c->nranks, nsp_standin_env.slot_bytes, NSP_STANDIN_RING_BYTES, &lay);
    if (ftruncate(fd, (off_t)lay.total) != 0) {
      nsp_standin_set_error("stand-in: ftruncate(%s, %zu): %s", name, lay.total, strerror(errno));
      close(fd);
      shm_unlink(name);
      return ncclSystemError;
    }
    map = mmap(NULL, lay.total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) {
      nsp_standin_set_error("stand-in: mmap %s (%zu bytes): %s", name, lay.total, strerror(errno));
      shm_unlink(name);
      return ncclSystemError;
    }
    h = map;
    h->nranks = c->nranks;
    h->slot_bytes = lay.slot_bytes;
    h->ring_bytes = lay.ring_bytes;
    h->total_bytes = lay.total;
    atomic_store_explicit(&h->magic, NSP_STANDIN_SHM_MAGIC, memory_order_release);
  } else if (errno == EEXIST) {
    struct nsp_standin_hdr *h = NULL;
    for (;;) {
      fd = shm_open(name, O_RDWR, 0);
      if (fd >= 0 && fstat(fd, &st) == 0 && (size_t)st.st_size >= 4096) {
        h = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
        if (h == MAP_FAILED)
          h = NULL;
        if (h && atomic_load_explicit(&h->magic, memory_order_acquire) == NSP_STANDIN_SHM_MAGIC)
          break;
        if (h)
          munmap(h, 4096);
        h = NULL;
      }
      if (fd >= 0)
        close(fd);
      fd = -1;
      if (nsp_standin_now_ns() > deadline) {
        nsp_standin_set_error("stand-in: timed out opening communicator memory %s", name);
        return ncclSystemError;
      }
      nsp_standin_sleep_ns(200000);
    }
    if (h->nranks != c->nranks) {
      nsp_standin_set_error("stand-in: rank %d says nranks %d, the communicator was created "
                            "with nranks %d", c->rank, c->nranks, h->nranks);
      munmap(h, 4096);
      close(fd);
      return ncclInvalidArgument;
    }
    nsp_standin_layout(c->nranks, h->slot_bytes, h->ring_bytes, &lay);
    munmap(h, 4096);
    map = mmap(NULL, lay.total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) {
      nsp_standin_set_error("stand-in: mmap %s (%zu bytes): %s", name, lay.total, strerror(errno));
      return ncclSystemError;
    }
  } else {
    nsp_standin_set_error("stand-in: shm_open(%s): %s", name, strerror(errno));
    return ncclSystemError;
  }
  c->map = map;
  c->lay = lay;
  c->hdr = map;
  return ncclSuccess;
}

/* Creates this rank's handle on the communicator named by `tok` and waits
 * until all its ranks have joined, as NCCL's blocking init does. */
static ncclResult_t nsp_standin_comm_create(const struct nsp_standin_token *tok, int nranks,
                                            int rank, int device, ncclComm_t *out)
{
  char name[64];
  int64_t timeout_ns, deadline;
  int32_t zero = 0;
  ncclComm_t c;
  ncclResult_t res;
  int joined;

  nsp_standin_env_load();
  *out = NULL;
  if (nranks < 1 || nranks > NSP_STANDIN_MAX_RANKS || rank < 0 || rank >= nranks) {
    nsp_standin_set_error("stand-in: invalid nranks %d / rank %d (the stand-in supports up to %d "
                          "ranks)", nranks, rank, NSP_STANDIN_MAX_RANKS);
    return ncclInvalidArgument;
  }
  c = nsp_standin_comm_alloc(tok, nranks, rank, device);
  if (!c) {
    nsp_standin_set_error("stand-in: out of memory");
    return ncclSystemError;
  }
  nsp_standin_shm_name(tok, name, sizeof name);
  timeout_ns = (int64_t)(nsp_standin_env.timeout_ms > NSP_STANDIN_MIN_INIT_TIMEOUT_MS
                             ? nsp_standin_env.timeout_ms
                             : NSP_STANDIN_MIN_INIT_TIMEOUT_MS) * 1000000;
  deadline = nsp_standin_now_ns() + timeout_ns;
  res = nsp_standin_shm_attach(c, name, deadline);
  if (res != ncclSuccess) {
    nsp_standin_comm_free(c);
    return res;
  }
  if (!atomic_compare_exchange_strong(&nsp_standin_slot(c, rank)->joined, &zero, 1)) {
    nsp_standin_set_error("stand-in: rank %d joined communicator %s twice", rank, name);
    nsp_standin_comm_free(c);
    return ncclInvalidUsage;
  }
  nsp_standin_slot(c, rank)->pid = (int32_t)getpid();
  joined = atomic_fetch_add(&c->hdr->joined, 1) + 1;
  /* Everyone has the file mapped now: the name is no longer needed, and
   * removing it here means a rank killed later leaks nothing. */
  if (joined == nranks)
    shm_unlink(name);
  nsp_standin_notify(c->hdr);
  for (;;) {
    uint32_t seen = atomic_load(&c->hdr->doorbell);
    int64_t now;
    joined = atomic_load(&c->hdr->joined);
    if (joined >= nranks)
      break;
    now = nsp_standin_now_ns();
    if (now > deadline) {
      nsp_standin_set_error("stand-in: timed out after %d ms waiting for ranks to join "
                            "(%d of %d joined)", (int)(timeout_ns / 1000000), joined, nranks);
      shm_unlink(name);
      nsp_standin_comm_free(c);
      return ncclSystemError;
    }
    nsp_standin_wait(c->hdr, seen, deadline - now < 100000000 ? deadline - now : 100000000);
  }
  nsp_standin_comm_register(c);
  *out = c;
  return ncclSuccess;
}

static ncclResult_t nsp_standin_init_rank(ncclComm_t *comm, int nranks, const ncclUniqueId *id,
                                          int rank, const char *fn)
{
  struct nsp_standin_token tok;
  NSP_STANDIN_CHECK_PTR(comm, fn);
  *comm = NULL;
  if (nsp_standin_token_from_id(id, &tok) != 0) {
    nsp_standin_set_error("%s: the unique id was not made by this stand-in's ncclGetUniqueId", fn);
    return ncclInvalidArgument;
  }
  nsp_standin_env_load();
  return nsp_standin_comm_create(&tok, nranks, rank, nsp_standin_default_device(), comm);
}

/* ---- running operations --------------------------------------------------- */

static int nsp_standin_is_coll(enum nsp_standin_kind k)
{
  return k <= NSP_STANDIN_SCATTER;
}

static void nsp_standin_make_shape(struct nsp_standin_op *o)
{
  struct nsp_standin_shape *s = &o->shape;
  size_t b = o->count * nsp_standin_dtype_size(o->dtype);
  size_t n = (size_t)o->comm->nranks, r = (size_t)o->comm->rank;
  int root = o->comm->rank == o->root;

  memset(s, 0, sizeof *s);
  s->need_len = b;
  switch (o->kind) {
  case NSP_STANDIN_ALLREDUCE:
    s->dep_bytes = b;
    s->reads = s->reduce = 1;
    break;
  case NSP_STANDIN_REDUCE:
    s->dep_bytes = b;
    s->reads = root;
    s->reduce = 1;
    break;
  case NSP_STANDIN_BROADCAST:
    s->dep_bytes = root ? b : 0;
    s->reads = !root;
    s->from_root = 1;
    break;
  case NSP_STANDIN_ALLGATHER:
  case NSP_STANDIN_EXCHANGE:
    s->dep_bytes = b;
    s->reads = s->stride = 1;
    break;
  case NSP_STANDIN_REDUCESCATTER:
    s->dep_bytes = n * b;
    s->reads = s->reduce = 1;
    s->need_off = r * b;
    break;
  case NSP_STANDIN_ALLTOALL:
    s->dep_bytes = n * b;
    s->reads = s->stride = 1;
    s->need_off = r * b;
    break;
  case NSP_STANDIN_GATHER:
    s->dep_bytes = b;
    s->reads = root;
    s->stride = 1;
    break;
  case NSP_STANDIN_SCATTER:
    s->dep_bytes = root ? n * b : 0;
    s->reads = s->from_root = 1;
    s->need_off = r * b;
    break;
  case NSP_STANDIN_SEND:
  case NSP_STANDIN_RECV:
    break;
  }
}

static void nsp_standin_fail_op(struct nsp_standin_op *o, ncclResult_t r)
{
  o->state = NSP_STANDIN_DONE;
  o->result = r;
}

/* Marks the communicator broken for every rank: the failure an injected
 * error stands for (a dead link) is seen by the peers too. */
static void nsp_standin_break(ncclComm_t c, ncclResult_t r, const char *msg)
{
  c->local_error = r;
  nsp_standin_set_error("%s", msg);
  atomic_store(&c->hdr->broken_rank, c->rank);
  atomic_store(&c->hdr->broken_ns, nsp_standin_now_ns());
  atomic_store(&c->hdr->broken, (int32_t)ncclRemoteError);
  nsp_standin_notify(c->hdr);
}

/* Numbers the op and decides whether it can run at all. */
static void nsp_standin_op_begin(struct nsp_standin_op *o)
{
  ncclComm_t c = o->comm;
  size_t bytes = o->count * nsp_standin_dtype_size(o->dtype);

  o->state = NSP_STANDIN_PENDING;
  o->result = ncclSuccess;
  o->wait_rank = -1;
  if (nsp_standin_is_coll(o->kind))
    o->coll_no = ++c->coll_seq;
  if (o->kind <= NSP_STANDIN_EXCHANGE) {
    o->seq = ++c->op_seq;
    nsp_standin_make_shape(o);
  } else if (o->kind == NSP_STANDIN_SEND) {
    o->seq = c->send_msgs[o->peer]++;
    o->stream_start = c->send_stream[o->peer];
    c->send_stream[o->peer] += bytes;
  } else {
    o->seq = c->recv_msgs[o->peer]++;
  }
  if (atomic_load(&c->aborted)) {
    nsp_standin_fail_op(o, ncclSystemError);
  } else if (c->local_error) {
    nsp_standin_fail_op(o, c->local_error);
  } else if (nsp_standin_remote_visible(c)) {
    nsp_standin_set_error(NSP_STANDIN_REMOTE_MSG);
    nsp_standin_fail_op(o, ncclRemoteError);
  } else if (c->wedged) {
    nsp_standin_set_error("stand-in: communicator unusable: an earlier call on it timed out");
    nsp_standin_fail_op(o, ncclSystemError);
  } else if (c->fail && nsp_standin_is_coll(o->kind) && o->coll_no == c->fail->seq) {
    nsp_standin_break(c, c->fail->result, c->fail->msg);
    nsp_standin_fail_op(o, c->fail->result);
  }
}

/* One attempt to move a collective forward.  Returns 1 if it did. */
static int nsp_standin_step_coll(struct nsp_standin_op *o)
{
  ncclComm_t c = o->comm;
  const struct nsp_standin_shape *s = &o->shape;
  int n = c->nranks, p, progressed = 0;

  if (o->state == NSP_STANDIN_PENDING) {
    struct nsp_standin_slot *mine = nsp_standin_slot(c, c->rank);
    unsigned char *dep = nsp_standin_deposit(c, c->rank);
    /* The deposit area is reused: every rank must be done with the
     * previous op before it is overwritten. */
    for (p = 0; p < n; p++) {
      if (atomic_load_explicit(&nsp_standin_slot(c, p)->done_seq, memory_order_acquire) + 1 < o->seq) {
        o->wait_rank = p;
        return 0;
      }
    }
    if (s->dep_bytes) {
      if (o->premul)
        nsp_standin_scale(dep, o->sendbuff, s->dep_bytes / nsp_standin_dtype_size(o->dtype),
                          o->dtype, o->scalar);
      else
        memcpy(dep, o->sendbuff, s->dep_bytes);
    }
    atomic_store_explicit(&mine->posted_bytes, s->dep_bytes, memory_order_relaxed);
    atomic_store_explicit(&mine->posted_exchange, o->kind == NSP_STANDIN_EXCHANGE, memory_order_relaxed);
    atomic_store_explicit(&mine->posted_seq, o->seq, memory_order_release);
    if (o->kind == NSP_STANDIN_BROADCAST && !s->reads && s->need_len && o->sendbuff != o->recvbuff)
      memmove(o->recvbuff, o->sendbuff, s->need_len);
    o->state = NSP_STANDIN_STARTED;
    o->next_peer = s->from_root ? o->root : 0;
    o->reduced_any = 0;
    progressed = 1;
    nsp_standin_notify(c->hdr);
    if (!s->reads)
      o->next_peer = n;
  }
  while (o->next_peer < n) {
    struct nsp_standin_slot *ps;
    const unsigned char *src;
    unsigned char *dst;
    p = o->next_peer;
    ps = nsp_standin_slot(c, p);
    if (atomic_load_explicit(&ps->posted_seq, memory_order_acquire) != o->seq ||
        atomic_load_explicit(&ps->posted_bytes, memory_order_relaxed) < s->need_off + s->need_len ||
        atomic_load_explicit(&ps->posted_exchange, memory_order_relaxed) != (o->kind == NSP_STANDIN_EXCHANGE)) {
      o->wait_rank = p;
      return progressed;
    }
    src = nsp_standin_deposit(c, p) + s->need_off;
    dst = (unsigned char *)o->recvbuff + (s->stride ? (size_t)p * s->need_len : 0);
    if (s->reduce && o->reduced_any)
      nsp_standin_reduce(dst, src, o->count, o->dtype, o->op);
    else if (s->need_len)
      memcpy(dst, src, s->need_len);
    o->reduced_any = 1;
    o->next_peer = s->from_root ? n : p + 1;
    progressed = 1;
  }
  if (s->reduce && s->reads && o->op == ncclAvg)
    nsp_standin_divide(o->recvbuff, o->count, o->dtype, n);
  atomic_store_explicit(&nsp_standin_slot(c, c->rank)->done_seq, o->seq, memory_order_release);
  o->state = NSP_STANDIN_DONE;
  nsp_standin_notify(c->hdr);
  return 1;
}

static void nsp_standin_ring_copy(unsigned char *ring, size_t ring_bytes, uint64_t pos,
                                  void *buf, size_t len, int to_ring)
{
  size_t off = (size_t)(pos % ring_bytes), first = ring_bytes - off;
  if (first > len)
    first = len;
  if (to_ring) {
    memcpy(ring + off, buf, first);
    memcpy(ring, (unsigned char *)buf + first, len - first);
  } else {
    memcpy(buf, ring + off, first);
    memcpy((unsigned char *)buf + first, ring, len - first);
  }
}

static int nsp_standin_step_send(struct nsp_standin_op *o)
{
  ncclComm_t c = o->comm;
  struct nsp_standin_chan *ch = nsp_standin_chan(c, c->rank, o->peer);
  unsigned char *ring = nsp_standin_ring(c, c->rank, o->peer);
  size_t rb = c->lay.ring_bytes, bytes = o->count * nsp_standin_dtype_size(o->dtype);
  int progressed = 0;

  o->wait_rank = o->peer;
  if (o->state == NSP_STANDIN_PENDING) {
    if (atomic_load_explicit(&ch->posted, memory_order_relaxed) != o->seq ||
        o->seq - atomic_load_explicit(&ch->consumed, memory_order_acquire) >= NSP_STANDIN_P2P_DEPTH)
      return 0;
    atomic_store_explicit(&ch->msg_bytes[o->seq % NSP_STANDIN_P2P_DEPTH], bytes, memory_order_relaxed);
    atomic_store_explicit(&ch->posted, o->seq + 1, memory_order_release);
    o->state = NSP_STANDIN_STARTED;
    o->done_bytes = 0;
    progressed = 1;
  }
  while (o->done_bytes < bytes) {
    uint64_t w = atomic_load_explicit(&ch->written, memory_order_relaxed);
    uint64_t space;
    size_t m;
    if (w != o->stream_start + o->done_bytes)
      break; /* an earlier message to this peer is still streaming */
    space = rb - (w - atomic_load_explicit(&ch->read, memory_order_acquire));
    if (!space)
      break;
    m = bytes - o->done_bytes < space ? bytes - o->done_bytes : (size_t)space;
    nsp_standin_ring_copy(ring, rb, w, (unsigned char *)(uintptr_t)o->sendbuff + o->done_bytes, m, 1);
    atomic_store_explicit(&ch->written, w + m, memory_order_release);
    o->done_bytes += m;
    progressed = 1;
  }
  if (o->done_bytes == bytes)
    o->state = NSP_STANDIN_DONE;
  if (progressed)
    nsp_standin_notify(c->hdr);
  return progressed;
}

static int nsp_standin_step_recv(struct nsp_standin_op *o)
{
  ncclComm_t c = o->comm;
  struct nsp_standin_chan *ch = nsp_standin_chan(c, o->peer, c->rank);
  unsigned char *ring = nsp_standin_ring(c, o->peer, c->rank);
  size_t rb = c->lay.ring_bytes, need = o->count * nsp_standin_dtype_size(o->dtype);
  int progressed = 0;

  o->wait_rank = o->peer;
  if (o->state == NSP_STANDIN_PENDING) {
    uint64_t mb;
    if (atomic_load_explicit(&ch->posted, memory_order_acquire) <= o->seq ||
        atomic_load_explicit(&ch->consumed, memory_order_relaxed) != o->seq)
      return 0;
    mb = atomic_load_explicit(&ch->msg_bytes[o->seq % NSP_STANDIN_P2P_DEPTH], memory_order_relaxed);
    if (mb < need)
      return 0; /* the bytes this receive needs will never come */
    o->msg_bytes = mb;
    o->done_bytes = 0;
    o->state = NSP_STANDIN_STARTED;
    progressed = 1;
  }
  while (o->done_bytes < o->msg_bytes) {
    uint64_t rd = atomic_load_explicit(&ch->read, memory_order_relaxed);
    uint64_t avail = atomic_load_explicit(&ch->written, memory_order_acquire) - rd;
    size_t m, keep;
    if (!avail)
      break;
    m = o->msg_bytes - o->done_bytes < avail ? (size_t)(o->msg_bytes - o->done_bytes) : (size_t)avail;
    /* Bytes past what the receive asked for are dropped. */
    keep = o->done_bytes >= need ? 0 : (need - o->done_bytes < m ? need - o->done_bytes : m);
    if (keep)
      nsp_standin_ring_copy(ring, rb, rd, (unsigned char *)o->recvbuff + o->done_bytes, keep, 0);
    atomic_store_explicit(&ch->read, rd + m, memory_order_release);
    o->done_bytes += m;
    progressed = 1;
  }
  if (o->done_bytes == o->msg_bytes) {
    atomic_store_explicit(&ch->consumed, o->seq + 1, memory_order_release);
    o->state = NSP_STANDIN_DONE;
    progressed = 1;
  }
  if (progressed)
    nsp_standin_notify(c->hdr);
  return progressed;
}

static int nsp_standin_step(struct nsp_standin_op *o)
{
  ncclComm_t c = o->comm;
  int progressed;
  /* ncclCommAbort from another thread: give up at once, move nothing. */
  if (atomic_load_explicit(&c->aborted, memory_order_relaxed)) {
    nsp_standin_fail_op(o, ncclSystemError);
    return 1;
  }
  switch (o->kind) {
  case NSP_STANDIN_SEND:
    progressed = nsp_standin_step_send(o);
    break;
  case NSP_STANDIN_RECV:
    progressed = nsp_standin_step_recv(o);
    break;
  default:
    progressed = nsp_standin_step_coll(o);
    break;
  }
  /* Only an op that is stuck fails: one whose data all arrived before the
   * peer broke completes, as its kernel would have on a GPU. */
  if (!progressed && o->state != NSP_STANDIN_DONE &&
      atomic_load_explicit(&c->hdr->broken, memory_order_relaxed) && nsp_standin_remote_visible(c)) {
    nsp_standin_set_error(NSP_STANDIN_REMOTE_MSG);
    nsp_standin_fail_op(o, ncclRemoteError);
    return 1;
  }
  return progressed;
}

static void nsp_standin_timeout_error(const struct nsp_standin_op *o, int ms)
{
  switch (o->kind) {
  case NSP_STANDIN_SEND:
    nsp_standin_set_error("stand-in: timed out after %d ms waiting for rank %d at send #%" PRIu64,
                          ms, o->wait_rank, o->seq + 1);
    break;
  case NSP_STANDIN_RECV:
    nsp_standin_set_error("stand-in: timed out after %d ms waiting for rank %d at recv #%" PRIu64,
                          ms, o->wait_rank, o->seq + 1);
    break;
  case NSP_STANDIN_EXCHANGE:
    nsp_standin_set_error("stand-in: timed out after %d ms waiting for rank %d in ncclCommSplit",
                          ms, o->wait_rank);
    break;
  default:
    nsp_standin_set_error("stand-in: timed out after %d ms waiting for rank %d at collective #%" PRIu64,
                          ms, o->wait_rank, o->coll_no);
    break;
  }
}

/* Runs ops (a group, or a single call) to completion, timeout, or error.
 * Ops on one communicator start in order; ops on different communicators
 * and sends/receives move independently, so any set of calls that real
 * NCCL could complete inside one group completes here. */
static ncclResult_t nsp_standin_run(struct nsp_standin_op *ops, size_t n)
{
  int64_t deadline, timeout_ns = (int64_t)nsp_standin_env.timeout_ms * 1000000;
  unsigned spins = 0;
  size_t i;

  for (i = 0; i < n; i++)
    nsp_standin_op_begin(&ops[i]);
  deadline = nsp_standin_now_ns() + timeout_ns;
  for (;;) {
    struct nsp_standin_op *first = NULL;
    int progressed = 0, multi = 0;
    uint32_t seen;
    int64_t now, wait_ns;

    for (i = 0; i < n && !first; i++)
      if (ops[i].state != NSP_STANDIN_DONE)
        first = &ops[i];
    if (!first)
      break;
    seen = atomic_load(&first->comm->hdr->doorbell);
    for (i = 0; i < n; i++) {
      struct nsp_standin_op *o = &ops[i];
      if (o->state == NSP_STANDIN_DONE)
        continue;
      progressed |= nsp_standin_step(o);
      if (o->state == NSP_STANDIN_DONE && o->result != ncclSuccess) {
        /* A broken communicator fails the rest of its ops in the group. */
        size_t j;
        for (j = 0; j < n; j++)
          if (ops[j].comm == o->comm && ops[j].state != NSP_STANDIN_DONE)
            nsp_standin_fail_op(&ops[j], o->result);
      }
      if (o->state != NSP_STANDIN_DONE && o->comm != first->comm)
        multi = 1;
    }
    if (progressed) {
      spins = 0;
      continue;
    }
    if (spins < NSP_STANDIN_SPINS) {
      spins++;
      nsp_standin_relax();
      continue;
    }
    now = nsp_standin_now_ns();
    if (now >= deadline) {
      int reported = 0;
      for (i = 0; i < n; i++) {
        struct nsp_standin_op *o = &ops[i];
        if (o->state == NSP_STANDIN_DONE)
          continue;
        if (!reported++)
          nsp_standin_timeout_error(o, nsp_standin_env.timeout_ms);
        o->comm->wedged = 1;
        nsp_standin_fail_op(o, ncclSystemError);
      }
      break;
    }
    /* Another communicator's progress does not ring this doorbell: poll
     * those at 1 ms. */
    wait_ns = multi || atomic_load(&first->comm->hdr->broken) ? 1000000 : 100000000;
    if (wait_ns > deadline - now)
      wait_ns = deadline - now;
    nsp_standin_wait(first->comm->hdr, seen, wait_ns);
  }
  for (i = 0; i < n; i++)
    if (ops[i].result != ncclSuccess)
      return ops[i].result;
  return ncclSuccess;
}

/* ---- order, streams ----------------------------------------------------------
 * A batch (one call, or the calls of a group) takes, when it is issued, a
 * ticket and a reference on each communicator it uses, and runs when each
 * of them has finished its earlier batches: whether it runs on the calling
 * thread (NULL stream) or later on a stream's worker, batches of one
 * communicator run in the order they were issued, as NCCL's kernels do. */

struct nsp_standin_turn {
  ncclComm_t comm;
  uint64_t ticket;
};

static pthread_mutex_t nsp_standin_turn_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t nsp_standin_turn_cond = PTHREAD_COND_INITIALIZER;
static atomic_int nsp_standin_turn_waiters;

/* Takes a ticket on every communicator of ops; returns how many. */
static size_t nsp_standin_take_turns(const struct nsp_standin_op *ops, size_t n,
                                     struct nsp_standin_turn *turns)
{
  size_t nt = 0, i, j;
  for (i = 0; i < n; i++) {
    ncclComm_t c = ops[i].comm;
    for (j = 0; j < nt && turns[j].comm != c; j++)
      ;
    if (j < nt)
      continue;
    turns[nt].comm = c;
    turns[nt].ticket = atomic_fetch_add(&c->tickets, 1);
    atomic_fetch_add(&c->refs, 1);
    nt++;
  }
  return nt;
}

/* Gives back tickets taken a moment ago by this thread, unused. */
static void nsp_standin_untake_turns(const struct nsp_standin_turn *turns, size_t nt)
{
  size_t i;
  for (i = 0; i < nt; i++) {
    atomic_fetch_sub(&turns[i].comm->tickets, 1);
    nsp_standin_comm_unref(turns[i].comm);
  }
}

static void nsp_standin_turn_wake(void)
{
  pthread_mutex_lock(&nsp_standin_turn_lock);
  pthread_cond_broadcast(&nsp_standin_turn_cond);
  pthread_mutex_unlock(&nsp_standin_turn_lock);
}

/* Waits until `done` says the batch may run (or the comm is aborted). */
#define NSP_STANDIN_TURN_WAIT(c, done)                                               \
  do {                                                                               \
    if (!(done) && !atomic_load(&(c)->aborted)) {                                    \
      pthread_mutex_lock(&nsp_standin_turn_lock);                                    \
      atomic_fetch_add(&nsp_standin_turn_waiters, 1);                                \
      while (!(done) && !atomic_load(&(c)->aborted))                                 \
        pthread_cond_wait(&nsp_standin_turn_cond, &nsp_standin_turn_lock);           \
      atomic_fetch_sub(&nsp_standin_turn_waiters, 1);                                \
      pthread_mutex_unlock(&nsp_standin_turn_lock);                                  \
    }                                                                                \
  } while (0)

static void nsp_standin_wait_turns(const struct nsp_standin_turn *turns, size_t nt)
{
  size_t i;
  for (i = 0; i < nt; i++)
    NSP_STANDIN_TURN_WAIT(turns[i].comm, atomic_load(&turns[i].comm->done_tickets) == turns[i].ticket);
}

/* Waits until no batch of c is queued or running. */
static void nsp_standin_wait_idle(ncclComm_t c)
{
  NSP_STANDIN_TURN_WAIT(c, atomic_load(&c->done_tickets) == atomic_load(&c->tickets));
}

static void nsp_standin_release_turns(const struct nsp_standin_turn *turns, size_t nt)
{
  size_t i;
  for (i = 0; i < nt; i++)
    atomic_fetch_add(&turns[i].comm->done_tickets, 1);
  /* A waiter counts itself before it checks: either it sees the new
   * count, or we see it and wake it. */
  if (atomic_load(&nsp_standin_turn_waiters))
    nsp_standin_turn_wake();
  for (i = 0; i < nt; i++)
    nsp_standin_comm_unref(turns[i].comm);
}

/* Runs a batch now, on this thread, in its turn. */
static ncclResult_t nsp_standin_run_sync(struct nsp_standin_op *ops, size_t n)
{
  struct nsp_standin_turn one, *turns = &one;
  ncclResult_t r;
  size_t nt;
  if (n > 1) {
    turns = malloc(n * sizeof *turns);
    if (!turns) {
      nsp_standin_set_error("stand-in: out of memory running a group");
      return ncclSystemError;
    }
  }
  nt = nsp_standin_take_turns(ops, n, turns);
  nsp_standin_wait_turns(turns, nt);
  r = nsp_standin_run(ops, n);
  nsp_standin_release_turns(turns, nt);
  if (turns != &one)
    free(turns);
  return r;
}

/* The CUDA stand-in's nsp_standin_stream_enqueue, if it is loaded (in
 * global scope, or in local scope as libcuda.so.1); else NULL.  Looked up
 * again at most every 100 ms while absent. */
static nsp_standin_stream_enqueue_fn nsp_standin_hook(void)
{
  static _Atomic(nsp_standin_stream_enqueue_fn) found;
  static _Atomic int64_t next_try;
  nsp_standin_stream_enqueue_fn f = atomic_load_explicit(&found, memory_order_acquire);
  int64_t now;
  void *p;
  if (f)
    return f;
  now = nsp_standin_now_ns();
  if (now < atomic_load(&next_try))
    return NULL;
  p = dlsym(RTLD_DEFAULT, "nsp_standin_stream_enqueue");
  if (!p) {
    void *lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (lib) {
      p = dlsym(lib, "nsp_standin_stream_enqueue");
      dlclose(lib); /* it stays loaded: it was before, and is -z nodelete */
    }
  }
  if (!p) {
    atomic_store(&next_try, now + 100000000);
    return NULL;
  }
  memcpy(&f, &p, sizeof f);
  atomic_store_explicit(&found, f, memory_order_release);
  return f;
}

/* Records the first failure of work run on a stream: what
 * ncclCommGetAsyncError reports and later calls return. */
static void nsp_standin_note_async(ncclComm_t c, ncclResult_t r)
{
  pthread_mutex_lock(&nsp_standin_err_lock);
  if (!atomic_load(&c->async_error)) {
    memcpy(c->async_msg, nsp_standin_err, sizeof c->async_msg - 1);
    c->async_msg[sizeof c->async_msg - 1] = 0;
    atomic_store(&c->async_error, (int)r);
  }
  pthread_mutex_unlock(&nsp_standin_err_lock);
}

/* A batch handed to a stream's worker.  When a group uses several
 * streams it runs on the first; each other stream gets a task that waits
 * for it, so that later work there is ordered after the group, as NCCL
 * orders the streams of a group. */
struct nsp_standin_job {
  size_t n, nturns;
  struct nsp_standin_op *ops;
  struct nsp_standin_turn *turns;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  int done;
  atomic_int refs; /* the job's task, each waiting task, the issuer */
};

static void nsp_standin_job_unref(struct nsp_standin_job *job)
{
  if (atomic_fetch_sub(&job->refs, 1) != 1)
    return;
  pthread_mutex_destroy(&job->lock);
  pthread_cond_destroy(&job->cond);
  free(job->ops);
  free(job->turns);
  free(job);
}

/* Runs on the stream's worker (NSP_STANDIN_TASK_RUN), or is dropped
 * unstarted at exit (NSP_STANDIN_TASK_CANCEL). */
static void nsp_standin_job_task(void *arg, int why)
{
  struct nsp_standin_job *job = arg;
  size_t i;
  if (why == NSP_STANDIN_TASK_RUN) {
    nsp_standin_wait_turns(job->turns, job->nturns);
    if (nsp_standin_run(job->ops, job->n) != ncclSuccess) {
      for (i = 0; i < job->n; i++) {
        struct nsp_standin_op *o = &job->ops[i];
        if (o->result != ncclSuccess && !atomic_load(&o->comm->aborted))
          nsp_standin_note_async(o->comm, o->result);
      }
    }
  }
  nsp_standin_release_turns(job->turns, job->nturns);
  pthread_mutex_lock(&job->lock);
  job->done = 1;
  pthread_cond_broadcast(&job->cond);
  pthread_mutex_unlock(&job->lock);
  nsp_standin_job_unref(job);
}

static void nsp_standin_job_wait_task(void *arg, int why)
{
  struct nsp_standin_job *job = arg;
  if (why == NSP_STANDIN_TASK_RUN) {
    pthread_mutex_lock(&job->lock);
    while (!job->done)
      pthread_cond_wait(&job->cond, &job->lock);
    pthread_mutex_unlock(&job->lock);
  }
  nsp_standin_job_unref(job);
}

/* Queues a batch on its stream(s) and returns at once, as NCCL does. */
static ncclResult_t nsp_standin_run_async(const struct nsp_standin_op *ops, size_t n,
                                          nsp_standin_stream_enqueue_fn hook)
{
  struct nsp_standin_job *job = calloc(1, sizeof *job);
  cudaStream_t stream = NULL;
  size_t i, j;
  int rc;

  if (job) {
    job->ops = malloc(n * sizeof *job->ops);
    job->turns = malloc(n * sizeof *job->turns);
  }
  if (!job || !job->ops || !job->turns) {
    if (job) {
      free(job->ops);
      free(job->turns);
    }
    free(job);
    nsp_standin_set_error("stand-in: out of memory queueing work on a stream");
    return ncclSystemError;
  }
  memcpy(job->ops, ops, n * sizeof *ops);
  job->n = n;
  pthread_mutex_init(&job->lock, NULL);
  pthread_cond_init(&job->cond, NULL);
  atomic_init(&job->refs, 2); /* the task, and us until the end */
  for (i = 0; i < n && !stream; i++)
    stream = ops[i].stream;
  job->nturns = nsp_standin_take_turns(job->ops, n, job->turns);
  rc = hook(stream, nsp_standin_job_task, job);
  if (rc != NSP_STANDIN_ENQ_QUEUED) {
    nsp_standin_untake_turns(job->turns, job->nturns);
    job->nturns = 0;
    atomic_store(&job->refs, 1);
    nsp_standin_job_unref(job);
    if (rc == NSP_STANDIN_ENQ_CAPTURED)
      return ncclSuccess; /* part of a CUDA graph, which the stand-in never replays */
    nsp_standin_set_error("stand-in: the CUDA stand-in refused stream %p (not a stream, or "
                          "no cuInit)", (void *)stream);
    return ncclUnhandledCudaError;
  }
  for (i = 0; i < n; i++) {
    cudaStream_t s = ops[i].stream;
    if (!s || s == stream)
      continue;
    for (j = 0; j < i && ops[j].stream != s; j++)
      ;
    if (j < i)
      continue; /* that stream has its waiter already */
    atomic_fetch_add(&job->refs, 1);
    if (hook(s, nsp_standin_job_wait_task, job) != NSP_STANDIN_ENQ_QUEUED)
      nsp_standin_job_unref(job);
  }
  nsp_standin_job_unref(job);
  return ncclSuccess;
}

/* Runs a batch: on a stream's worker when one of its calls was given a
 * stream and the CUDA stand-in is loaded, else here and now. */
static ncclResult_t nsp_standin_issue(struct nsp_standin_op *ops, size_t n)
{
  nsp_standin_stream_enqueue_fn hook;
  size_t i;
  for (i = 0; i < n; i++) {
    if (ops[i].stream) {
      hook = nsp_standin_hook();
      if (hook)
        return nsp_standin_run_async(ops, n, hook);
      break;
    }
  }
  return nsp_standin_run_sync(ops, n);
}

/* The whole collective when the communicator has one rank: a copy (scaled
 * by `scalar` for PreMulSum), with no system call, since benchmarks
 * measure the shim's cost on top of it.  Returns 0 when the op must take
 * the general path (an error to report, an injected failure due). */
static int nsp_standin_local(ncclComm_t c, const void *sendbuff, void *recvbuff, size_t bytes,
                             const void *scalar, ncclDataType_t dtype)
{
  /* Work still queued on a stream goes first: then take the general path.
   * (Only this thread issues batches, so none can appear meanwhile.) */
  if (atomic_load_explicit(&c->done_tickets, memory_order_acquire) !=
      atomic_load_explicit(&c->tickets, memory_order_relaxed))
    return 0;
  if (c->local_error || c->wedged || (c->fail && c->fail->seq == c->coll_seq + 1) ||
      atomic_load_explicit(&c->hdr->broken, memory_order_relaxed))
    return 0;
  c->coll_seq++;
  c->op_seq++;
  atomic_store_explicit(&nsp_standin_slot(c, 0)->posted_seq, c->op_seq, memory_order_relaxed);
  atomic_store_explicit(&nsp_standin_slot(c, 0)->done_seq, c->op_seq, memory_order_relaxed);
  if (scalar)
    nsp_standin_scale(recvbuff, sendbuff, bytes / nsp_standin_dtype_size(dtype), dtype, scalar);
  else if (bytes && sendbuff != recvbuff)
    memmove(recvbuff, sendbuff, bytes);
  return 1;
}

static ncclResult_t nsp_standin_submit(struct nsp_standin_op *o)
{
  if (nsp_standin_group.depth > 0) {
    if (nsp_standin_group.n == nsp_standin_group.cap) {
      size_t cap = nsp_standin_group.cap ? 2 * nsp_standin_group.cap : 16;
      struct nsp_standin_op *ops = realloc(nsp_standin_group.ops, cap * sizeof *ops);
      if (!ops) {
        nsp_standin_set_error("stand-in: out of memory queueing a grouped call");
        return ncclSystemError;
      }
      nsp_standin_group.ops = ops;
      nsp_standin_group.cap = cap;
    }
    nsp_standin_group.ops[nsp_standin_group.n++] = *o;
    return ncclSuccess;
  }
  if (o->comm->nranks == 1 && nsp_standin_is_coll(o->kind) && !o->stream &&
      nsp_standin_local(o->comm, o->sendbuff, o->recvbuff,
                        o->count * nsp_standin_dtype_size(o->dtype), o->premul ? o->scalar : NULL,
                        o->dtype))
    return ncclSuccess;
  return nsp_standin_issue(o, 1);
}

static ncclResult_t nsp_standin_check_usable(ncclComm_t c, const char *fn)
{
  NSP_STANDIN_CHECK_COMM(c, fn);
  if (!c->hdr) {
    nsp_standin_set_error("%s: communicators from ncclCommInitAll with ndev > 1 cannot "
                          "communicate in the stand-in", fn);
    return ncclInvalidUsage;
  }
  if (c->revoked || c->finalized) {
    nsp_standin_set_error("%s: communicator was %s", fn, c->revoked ? "revoked" : "finalized");
    return ncclInvalidUsage;
  }
  if (atomic_load(&c->async_error)) {
    /* As NCCL: a communicator with an asynchronous error takes no more work. */
    char msg[sizeof c->async_msg];
    pthread_mutex_lock(&nsp_standin_err_lock);
    memcpy(msg, c->async_msg, sizeof msg);
    pthread_mutex_unlock(&nsp_standin_err_lock);
    nsp_standin_set_error("%s: communicator has an asynchronous error: %s", fn, msg);
    return (ncclResult_t)atomic_load(&c->async_error);
  }
  return ncclSuccess;
}

/* Resolves `op` into a built-in op plus, for PreMulSum, the scalar. */
static ncclResult_t nsp_standin_resolve_op(struct nsp_standin_op *o, const char *fn)
{
  int idx = (int)o->op - (int)ncclNumOps;
  if ((int)o->op >= 0 && o->op < ncclNumOps)
    return ncclSuccess;
  if (idx < 0 || idx >= NSP_STANDIN_MAX_REDOPS) {
    nsp_standin_set_error("%s: invalid reduction op %d", fn, (int)o->op);
    return ncclInvalidArgument;
  }
  pthread_mutex_lock(&nsp_standin_redop_lock);
  if (!nsp_standin_redops[idx].used || nsp_standin_redops[idx].dtype != o->dtype) {
    pthread_mutex_unlock(&nsp_standin_redop_lock);
    nsp_standin_set_error("%s: reduction op %d was not created for this datatype", fn, (int)o->op);
    return ncclInvalidArgument;
  }
  if (nsp_standin_redops[idx].residence == ncclScalarDevice)
    memcpy(o->scalar, nsp_standin_redops[idx].ptr, nsp_standin_dtype_size(o->dtype));
  else
    memcpy(o->scalar, nsp_standin_redops[idx].value, sizeof o->scalar);
  pthread_mutex_unlock(&nsp_standin_redop_lock);
  o->premul = 1;
  o->op = ncclSum;
  return ncclSuccess;
}

static ncclResult_t nsp_standin_coll(enum nsp_standin_kind kind, const void *sendbuff,
                                     void *recvbuff, size_t count, ncclDataType_t dtype,
                                     ncclRedOp_t op, int root, ncclComm_t comm,
                                     cudaStream_t stream, const char *fn)
{
  struct nsp_standin_op o;
  size_t es = nsp_standin_dtype_size(dtype), per_rank;
  ncclResult_t r = nsp_standin_check_usable(comm, fn);

  if (r != ncclSuccess)
    return r;
  if (es == 0) {
    nsp_standin_set_error("%s: invalid datatype %d", fn, (int)dtype);
    return ncclInvalidArgument;
  }
  /* One rank, built-in op, no group: skip building an op (benchmarks
   * time this path). */
  if (comm->nranks == 1 && root == 0 && (unsigned)op < (unsigned)ncclNumOps && !stream &&
      nsp_standin_group.depth == 0 && count <= comm->lay.slot_bytes / es &&
      (!count || (sendbuff && recvbuff)) &&
      nsp_standin_local(comm, sendbuff, recvbuff, count * es, NULL, dtype))
    return ncclSuccess;
  memset(&o, 0, sizeof o);
  o.kind = kind;
  o.comm = comm;
  o.sendbuff = sendbuff;
  o.recvbuff = recvbuff;
  o.count = count;
  o.dtype = dtype;
  o.op = op;
  o.root = root;
  o.stream = stream;
  if (root < 0 || root >= comm->nranks) {
    nsp_standin_set_error("%s: invalid root %d (nranks %d)", fn, root, comm->nranks);
    return ncclInvalidArgument;
  }
  r = nsp_standin_resolve_op(&o, fn);
  if (r != ncclSuccess)
    return r;
  per_rank = kind == NSP_STANDIN_REDUCESCATTER || kind == NSP_STANDIN_ALLTOALL ||
                     kind == NSP_STANDIN_SCATTER ? (size_t)comm->nranks : 1;
  if (count > comm->lay.slot_bytes / es / per_rank) {
    nsp_standin_set_error("%s: %zu elements of %zu bytes exceed the stand-in's %zu-byte deposit "
                          "(NSP_STANDIN_MAX_BYTES)", fn, count * per_rank, es, comm->lay.slot_bytes);
    return ncclInvalidArgument;
  }
  if (count && (!recvbuff || !sendbuff)) {
    nsp_standin_set_error("%s: NULL buffer", fn);
    return ncclInvalidArgument;
  }
  return nsp_standin_submit(&o);
}

static ncclResult_t nsp_standin_p2p(enum nsp_standin_kind kind, const void *sendbuff,
                                    void *recvbuff, size_t count, ncclDataType_t dtype, int peer,
                                    ncclComm_t comm, cudaStream_t stream, const char *fn)
{
  struct nsp_standin_op o;
  ncclResult_t r = nsp_standin_check_usable(comm, fn);
  if (r != ncclSuccess)
    return r;
  if (nsp_standin_dtype_size(dtype) == 0) {
    nsp_standin_set_error("%s: invalid datatype %d", fn, (int)dtype);
    return ncclInvalidArgument;
  }
  if (peer < 0 || peer >= comm->nranks) {
    nsp_standin_set_error("%s: invalid peer %d (nranks %d)", fn, peer, comm->nranks);
    return ncclInvalidArgument;
  }
  if (count && !(kind == NSP_STANDIN_SEND ? sendbuff : recvbuff)) {
    nsp_standin_set_error("%s: NULL buffer", fn);
    return ncclInvalidArgument;
  }
  memset(&o, 0, sizeof o);
  o.kind = kind;
  o.comm = comm;
  o.sendbuff = sendbuff;
  o.recvbuff = recvbuff;
  o.count = count;
  o.dtype = dtype;
  o.peer = peer;
  o.stream = stream;
  return nsp_standin_submit(&o);
}

/* ---- the NCCL API --------------------------------------------------------- */

NSP_STANDIN_API ncclResult_t ncclGetVersion(int *version)
{
  NSP_STANDIN_CHECK_PTR(version, "ncclGetVersion");
  *version = (int)nsp_standin_env_ll("NSP_STANDIN_VERSION", NSP_STANDIN_VERSION_CODE);
  return ncclSuccess;
}

NSP_STANDIN_API ncclResult_t ncclGetUniqueId(ncclUniqueId *uniqueId)
{
  static atomic_uint_fast64_t counter;
  unsigned char *p;
  size_t got = 0;

  NSP_STANDIN_CHECK_PTR(uniqueId, "ncclGetUniqueId");
  p = (unsigned char *)uniqueId->internal;
  while (got < sizeof uniqueId->internal) {
    ssize_t r = getrandom(p + got, sizeof uniqueId->internal - got, 0);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      break;
    got += (size_t)r;
  }
  if (got < sizeof uniqueId->internal) {
    /* No getrandom: time, pid and a counter are unique enough for tests. */
    uint64_t s = (uint64_t)nsp_standin_now_ns() ^ ((uint64_t)getpid() << 32) ^
                 (uint64_t)atomic_fetch_add(&counter, 1);
    size_t i;
    for (i = 0; i < sizeof uniqueId->internal; i += 8) {
      uint64_t v = nsp_standin_mix64(s + i);
      memcpy(p + i, &v, 8);
    }
  }
  memcpy(p, nsp_standin_id_magic, sizeof nsp_standin_id_magic);
  return ncclSuccess;
}

NSP_STANDIN_API ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId,
                                              int rank)
{
  return nsp_standin_init_rank(comm, nranks, &commId, rank, "ncclCommInitRank");
}

NSP_STANDIN_API ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks,
                                                    ncclUniqueId commId, int rank,
                                                    ncclConfig_t *config)
{
  /* Every call is synchronous, so a non-blocking config changes nothing:
   * returning ncclSuccess is what NCCL does when init completes at once. */
  (void)config;
  return nsp_standin_init_rank(comm, nranks, &commId, rank, "ncclCommInitRankConfig");
}

NSP_STANDIN_API ncclResult_t ncclCommInitRankScalable(ncclComm_t *newcomm, int nranks, int myrank,
                                                      int nId, ncclUniqueId *commIds,
                                                      ncclConfig_t *config)
{
  (void)config;
  NSP_STANDIN_CHECK_PTR(commIds, "ncclCommInitRankScalable");
  if (nId < 1) {
    nsp_standin_set_error("ncclCommInitRankScalable: nId %d < 1", nId);
    return ncclInvalidArgument;
  }
  return nsp_standin_init_rank(newcomm, nranks, &commIds[0], myrank, "ncclCommInitRankScalable");
}

NSP_STANDIN_API ncclResult_t ncclCommInitAll(ncclComm_t *comm, int ndev, const int *devlist)
{
  struct nsp_standin_token tok;
  ncclUniqueId id;
  ncclResult_t r;
  int i;

  NSP_STANDIN_CHECK_PTR(comm, "ncclCommInitAll");
  if (ndev < 1 || ndev > NSP_STANDIN_MAX_RANKS) {
    nsp_standin_set_error("ncclCommInitAll: invalid ndev %d", ndev);
    return ncclInvalidArgument;
  }
  /* Through the public symbol, as NCCL does, so a shim sees a nested call. */
  r = ncclGetUniqueId(&id);
  if (r != ncclSuccess)
    return r;
  nsp_standin_env_load();
  if (ndev == 1)
    return nsp_standin_init_rank(comm, 1, &id, 0, "ncclCommInitAll");
  if (nsp_standin_token_from_id(&id, &tok) != 0) {
    nsp_standin_set_error("ncclCommInitAll: ncclGetUniqueId returned a foreign id");
    return ncclInternalError;
  }
  for (i = 0; i < ndev; i++) {
    comm[i] = nsp_standin_comm_alloc(&tok, ndev, i, devlist ? devlist[i] : i);
    if (!comm[i]) {
      while (i-- > 0) {
        nsp_standin_comm_free(comm[i]);
        comm[i] = NULL;
      }
      nsp_standin_set_error("ncclCommInitAll: out of memory");
      return ncclSystemError;
    }
    nsp_standin_comm_register(comm[i]);
  }
  return ncclSuccess;
}

struct nsp_standin_split_entry {
  int32_t color, key;
};

NSP_STANDIN_API ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
                                           ncclConfig_t *config)
{
  struct nsp_standin_split_entry mine = {color, key}, *all;
  struct nsp_standin_token tok;
  struct nsp_standin_op o;
  uint64_t split_no;
  int n, p, child_n = 0, child_rank = 0;
  ncclResult_t r;

  (void)config;
  NSP_STANDIN_CHECK_PTR(newcomm, "ncclCommSplit");
  *newcomm = NULL;
  r = nsp_standin_check_usable(comm, "ncclCommSplit");
  if (r != ncclSuccess)
    return r;
  if (color < 0 && color != NCCL_SPLIT_NOCOLOR) {
    nsp_standin_set_error("ncclCommSplit: invalid color %d", color);
    return ncclInvalidArgument;
  }
  n = comm->nranks;
  all = calloc((size_t)n, sizeof *all);
  if (!all) {
    nsp_standin_set_error("ncclCommSplit: out of memory");
    return ncclSystemError;
  }
  memset(&o, 0, sizeof o);
  o.kind = NSP_STANDIN_EXCHANGE;
  o.comm = comm;
  o.sendbuff = &mine;
  o.recvbuff = all;
  o.count = sizeof mine;
  o.dtype = ncclUint8;
  /* Not queued in an open group: the child is needed on return. */
  r = nsp_standin_run_sync(&o, 1);
  split_no = comm->split_count++;
  if (r != ncclSuccess || color == NCCL_SPLIT_NOCOLOR) {
    free(all);
    return r;
  }
  /* Child ranks are ordered by (key, parent rank), as in NCCL. */
  for (p = 0; p < n; p++) {
    if (all[p].color != color)
      continue;
    child_n++;
    if (all[p].key < key || (all[p].key == key && p < comm->rank))
      child_rank++;
  }
  free(all);
  tok.w[0] = nsp_standin_mix64(comm->token.w[0] ^ nsp_standin_mix64(split_no));
  tok.w[1] = nsp_standin_mix64(comm->token.w[1] ^ nsp_standin_mix64((uint64_t)(uint32_t)color + tok.w[0]));
  return nsp_standin_comm_create(&tok, child_n, child_rank, comm->device, newcomm);
}

NSP_STANDIN_API ncclResult_t ncclCommShrink(ncclComm_t comm, int *excludeRanksList,
                                            int excludeRanksCount, ncclComm_t *newcomm,
                                            ncclConfig_t *config, int shrinkFlags)
{
  struct nsp_standin_token tok;
  unsigned char *excluded;
  uint64_t h = 0x5348524bull; /* "SHRK" */
  int i, child_n = 0, child_rank = -1;
  ncclResult_t r;

  (void)config;
  (void)shrinkFlags;
  NSP_STANDIN_CHECK_PTR(newcomm, "ncclCommShrink");
  *newcomm = NULL;
  r = nsp_standin_check_usable(comm, "ncclCommShrink");
  if (r != ncclSuccess)
    return r;
  if (excludeRanksCount < 0 || (excludeRanksCount > 0 && !excludeRanksList)) {
    nsp_standin_set_error("ncclCommShrink: invalid exclude list");
    return ncclInvalidArgument;
  }
  excluded = calloc((size_t)comm->nranks, 1);
  if (!excluded) {
    nsp_standin_set_error("ncclCommShrink: out of memory");
    return ncclSystemError;
  }
  for (i = 0; i < excludeRanksCount; i++) {
    if (excludeRanksList[i] < 0 || excludeRanksList[i] >= comm->nranks) {
      free(excluded);
      nsp_standin_set_error("ncclCommShrink: invalid rank %d in exclude list", excludeRanksList[i]);
      return ncclInvalidArgument;
    }
    excluded[excludeRanksList[i]] = 1;
  }
  if (excluded[comm->rank]) {
    free(excluded);
    nsp_standin_set_error("ncclCommShrink: rank %d is in its own exclude list", comm->rank);
    return ncclInvalidArgument;
  }
  /* No exchange: the excluded ranks do not take part, so every survivor
   * derives the same child from the same arguments. */
  for (i = 0; i < comm->nranks; i++) {
    if (excluded[i]) {
      h = nsp_standin_mix64(h ^ (uint64_t)i);
      continue;
    }
    if (i == comm->rank)
      child_rank = child_n;
    child_n++;
  }
  free(excluded);
  tok.w[0] = nsp_standin_mix64(comm->token.w[0] ^ nsp_standin_mix64(~comm->shrink_count));
  tok.w[1] = nsp_standin_mix64(comm->token.w[1] ^ h);
  comm->shrink_count++;
  return nsp_standin_comm_create(&tok, child_n, child_rank, comm->device, newcomm);
}

/* Like NCCL's, flushes the work issued on the communicator: waits until
 * it has run (each batch ends, at the latest, after the stand-in's
 * timeout). */
NSP_STANDIN_API ncclResult_t ncclCommFinalize(ncclComm_t comm)
{
  NSP_STANDIN_CHECK_COMM(comm, "ncclCommFinalize");
  nsp_standin_wait_idle(comm);
  comm->finalized = 1;
  return ncclSuccess;
}

/* Finalizes (waits for the work issued), then frees. */
NSP_STANDIN_API ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
  if (!comm)
    return ncclSuccess;
  NSP_STANDIN_CHECK_COMM(comm, "ncclCommDestroy");
  nsp_standin_wait_idle(comm);
  nsp_standin_comm_free(comm);
  return ncclSuccess;
}

/* Returns at once.  Work of the communicator still queued or waiting on a
 * stream gives up promptly without moving data (as killed kernels); its
 * memory goes when the last such batch has ended. */
NSP_STANDIN_API ncclResult_t ncclCommAbort(ncclComm_t comm)
{
  if (!comm)
    return ncclSuccess;
  NSP_STANDIN_CHECK_COMM(comm, "ncclCommAbort");
  atomic_store(&comm->aborted, 1);
  nsp_standin_turn_wake();
  if (comm->hdr)
    nsp_standin_notify(comm->hdr);
  nsp_standin_comm_free(comm);
  return ncclSuccess;
}

NSP_STANDIN_API ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags)
{
  (void)revokeFlags;
  NSP_STANDIN_CHECK_COMM(comm, "ncclCommRevoke");
  comm->revoked = 1;
  return ncclSuccess;
}

NSP_STANDIN_API const char *ncclGetErrorString(ncclResult_t result)
{
  /* NCCL 2.28's strings, word for word: tests compare against them. */
  switch ((int)result) {
  case ncclSuccess:
    return "no error";
  case ncclUnhandledCudaError:
    return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
  case ncclSystemError:
    return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
  case ncclInternalError:
    return "internal error - please report this issue to the NCCL developers";
  case ncclInvalidArgument:
    return "invalid argument (run with NCCL_DEBUG=WARN for details)";
  case ncclInvalidUsage:
    return "invalid usage (run with NCCL_DEBUG=WARN for details)";
  case ncclRemoteError:
    return NSP_STANDIN_REMOTE_MSG;
  case ncclInProgress:
    return "NCCL operation in progress";
  default:
    return "unknown result code";
  }
}

NSP_STANDIN_API const char *ncclGetLastError(ncclComm_t comm)
{
  (void)comm;
  /* A private copy: another thread may set a new error while the caller
   * still reads this one. */
  pthread_mutex_lock(&nsp_standin_err_lock);
  memcpy(nsp_standin_err_copy, nsp_standin_err, sizeof nsp_standin_err_copy);
  pthread_mutex_unlock(&nsp_standin_err_lock);
  return nsp_standin_err_copy;
}

NSP_STANDIN_API void ncclResetDebugInit(void)
{
}

NSP_STANDIN_API ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError)
{
  NSP_STANDIN_CHECK_COMM(comm, "ncclCommGetAsyncError");
  NSP_STANDIN_CHECK_PTR(asyncError, "ncclCommGetAsyncError");
  if (comm->local_error)
    *asyncError = comm->local_error;
  else if (atomic_load(&comm->async_error))
    *asyncError = (ncclResult_t)atomic_load(&comm->async_error);
  else if (comm->hdr && nsp_standin_remote_visible(comm))
    *asyncError = ncclRemoteError;
  else
    *asyncError = ncclSuccess;
  return ncclSuccess;
}

NSP_STANDIN_API ncclResult_t ncclCommCount(const ncclComm_t comm, int *count)
{
  NSP_STANDIN_CHECK_COMM(comm, "ncclCommCount");
  NSP_STANDIN_CHECK_PTR(count, "ncclCommCount");
  *count = comm->nranks;
  return ncclSuccess;
}

NSP_STANDIN_API ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *device)
{
  NSP_STANDIN_CHECK_COMM(comm, "ncclCommCuDevice");
  NSP_STANDIN_CHECK_PTR(device, "ncclCommCuDevice");
  *device = comm->device;
  return ncclSuccess;
}

NSP_STANDIN_API ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank)
{
  NSP_STANDIN_CHECK_COMM(comm, "ncclCommUserRank");
  NSP_STANDIN_CHECK_PTR(rank, "ncclCommUserRank");
  *rank = comm->rank;
  return ncclSuccess;
}

NSP_STANDIN_API ncclResult_t ncclCommRegister(const ncclComm_t comm, void *buff, size_t size,
                                              void **handle)
{
  struct ncclWindow_vidmem *reg;
  NSP_STANDIN_CHECK_COMM(comm, "ncclCommRegister");
  NSP_STANDIN_CHECK_PTR(handle, "ncclCommRegister");
  reg = malloc(sizeof *reg);
  if (!reg) {
    nsp_standin_set_error("ncclCommRegister: out of memory");
    return ncclSystemError;
  }
  reg->buff = buff;
  reg->size = size;
  *handle = reg;
  return ncclSuccess;
}

NSP_STANDIN_API ncclResult_t ncclCommDeregister(const ncclComm_t comm, void *handle)
{
  NSP_STANDIN_CHECK_COMM(comm, "ncclCommDeregister");
  free(handle);
  return ncclSuccess;
}

NSP_STANDIN_API ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void *buff, size_t size,
                                                    ncclWindow_t *win, int winFlags)
{
  struct ncclWindow_vidmem *w;
  (void)winFlags;
  NSP_STANDIN_CHECK_COMM(comm, "ncclCommWindowRegister");
  NSP_STANDIN_CHECK_PTR(win, "ncclCommWindowRegister");
  w = malloc(sizeof *w);
  if (!w) {
    nsp_standin_set_error("ncclCommWindowRegister: out of memory");
    return ncclSystemError;
  }
  w->buff = buff;
  w->size = size;
  *win = w;
  return ncclSuccess;
}

NSP_STANDIN_API ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win)
{
  NSP_STANDIN_CHECK_COMM(comm, "ncclCommWindowDeregister");
  free(win);
  return ncclSuccess;
}

NSP_STANDIN_API ncclResult_t ncclMemAlloc(void **ptr, size_t size)
{
  NSP_STANDIN_CHECK_PTR(ptr, "ncclMemAlloc");
  *ptr = malloc(size ? size : 1);
  if (!*ptr) {
    nsp_standin_set_error("ncclMemAlloc: out of memory (%zu bytes)", size);
    return ncclSystemError;
  }
  return ncclSuccess;
}

NSP_STANDIN_API ncclResult_t ncclMemFree(void *ptr)
{
  free(ptr);
  return ncclSuccess;
}

NSP_STANDIN_API ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t *op, void *scalar,
                                                      ncclDataType_t datatype,
                                                      ncclScalarResidence_t residence,
                                                      ncclComm_t comm)
{
  size_t es = nsp_standin_dtype_size(datatype);
  int i;
  NSP_STANDIN_CHECK_COMM(comm, "ncclRedOpCreatePreMulSum");
  NSP_STANDIN_CHECK_PTR(op, "ncclRedOpCreatePreMulSum");
  NSP_STANDIN_CHECK_PTR(scalar, "ncclRedOpCreatePreMulSum");
  if (es == 0 || (residence != ncclScalarDevice && residence != ncclScalarHostImmediate)) {
    nsp_standin_set_error("ncclRedOpCreatePreMulSum: invalid datatype %d or residence %d",
                          (int)datatype, (int)residence);
    return ncclInvalidArgument;
  }
  pthread_mutex_lock(&nsp_standin_redop_lock);
  for (i = 0; i < NSP_STANDIN_MAX_REDOPS && nsp_standin_redops[i].used; i++)
    ;
  if (i == NSP_STANDIN_MAX_REDOPS) {
    pthread_mutex_unlock(&nsp_standin_redop_lock);
    nsp_standin_set_error("ncclRedOpCreatePreMulSum: more than %d live ops", NSP_STANDIN_MAX_REDOPS);
    return ncclInvalidUsage;
  }
  nsp_standin_redops[i].used = 1;
  nsp_standin_redops[i].dtype = datatype;
  nsp_standin_redops[i].residence = residence;
  nsp_standin_redops[i].ptr = scalar;
  memset(nsp_standin_redops[i].value, 0, sizeof nsp_standin_redops[i].value);
  /* A host scalar is read now: the caller may reuse its memory. */
  if (residence == ncclScalarHostImmediate)
    memcpy(nsp_standin_redops[i].value, scalar, es);
  pthread_mutex_unlock(&nsp_standin_redop_lock);
  *op = (ncclRedOp_t)((int)ncclNumOps + i);
  return ncclSuccess;
}

NSP_STANDIN_API ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm)
{
  int idx = (int)op - (int)ncclNumOps;
  NSP_STANDIN_CHECK_COMM(comm, "ncclRedOpDestroy");
  pthread_mutex_lock(&nsp_standin_redop_lock);
  if (idx < 0 || idx >= NSP_STANDIN_MAX_REDOPS || !nsp_standin_redops[idx].used) {
    pthread_mutex_unlock(&nsp_standin_redop_lock);
    nsp_standin_set_error("ncclRedOpDestroy: op %d was not created by ncclRedOpCreatePreMulSum",
                          (int)op);
    return ncclInvalidArgument;
  }
  nsp_standin_redops[idx].used = 0;
  pthread_mutex_unlock(&nsp_standin_redop_lock);
  return ncclSuccess;
}

NSP_STANDIN_API ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count,
                                        ncclDataType_t datatype, ncclRedOp_t op, int root,
                                        ncclComm_t comm, cudaStream_t stream)
{
  /* Only the root writes recvbuff; NCCL allows NULL elsewhere. */
  if (nsp_standin_comm_ok(comm) && comm->rank != root && !recvbuff)
    recvbuff = (void *)(uintptr_t)sendbuff;
  return nsp_standin_coll(NSP_STANDIN_REDUCE, sendbuff, recvbuff, count, datatype, op, root, comm,
                          stream, "ncclReduce");
}

NSP_STANDIN_API ncclResult_t ncclBcast(void *buff, size_t count, ncclDataType_t datatype, int root,
                                       ncclComm_t comm, cudaStream_t stream)
{
  /* A plain call to the exported name goes through the PLT (built with
   * -fPIC, no -Bsymbolic), so a preloaded shim sees it, as with NCCL. */
  return ncclBroadcast(buff, buff, count, datatype, root, comm, stream);
}

NSP_STANDIN_API ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
                                           ncclDataType_t datatype, int root, ncclComm_t comm,
                                           cudaStream_t stream)
{
  /* Only the root reads sendbuff. */
  if (nsp_standin_comm_ok(comm) && comm->rank != root && !sendbuff)
    sendbuff = recvbuff;
  return nsp_standin_coll(NSP_STANDIN_BROADCAST, sendbuff, recvbuff, count, datatype, ncclSum,
                          root, comm, stream, "ncclBroadcast");
}

NSP_STANDIN_API ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
                                           ncclDataType_t datatype, ncclRedOp_t op,
                                           ncclComm_t comm, cudaStream_t stream)
{
  return nsp_standin_coll(NSP_STANDIN_ALLREDUCE, sendbuff, recvbuff, count, datatype, op, 0, comm,
                          stream, "ncclAllReduce");
}

NSP_STANDIN_API ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff,
                                               size_t recvcount, ncclDataType_t datatype,
                                               ncclRedOp_t op, ncclComm_t comm,
                                               cudaStream_t stream)
{
  return nsp_standin_coll(NSP_STANDIN_REDUCESCATTER, sendbuff, recvbuff, recvcount, datatype, op,
                          0, comm, stream, "ncclReduceScatter");
}

NSP_STANDIN_API ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
                                           ncclDataType_t datatype, ncclComm_t comm,
                                           cudaStream_t stream)
{
  return nsp_standin_coll(NSP_STANDIN_ALLGATHER, sendbuff, recvbuff, sendcount, datatype, ncclSum,
                          0, comm, stream, "ncclAllGather");
}

NSP_STANDIN_API ncclResult_t ncclAlltoAll(const void *sendbuff, void *recvbuff, size_t count,
                                          ncclDataType_t datatype, ncclComm_t comm,
                                          cudaStream_t stream)
{
  return nsp_standin_coll(NSP_STANDIN_ALLTOALL, sendbuff, recvbuff, count, datatype, ncclSum, 0,
                          comm, stream, "ncclAlltoAll");
}

NSP_STANDIN_API ncclResult_t ncclGather(const void *sendbuff, void *recvbuff, size_t count,
                                        ncclDataType_t datatype, int root, ncclComm_t comm,
                                        cudaStream_t stream)
{
  if (nsp_standin_comm_ok(comm) && comm->rank != root && !recvbuff)
    recvbuff = (void *)(uintptr_t)sendbuff;
  return nsp_standin_coll(NSP_STANDIN_GATHER, sendbuff, recvbuff, count, datatype, ncclSum, root,
                          comm, stream, "ncclGather");
}

NSP_STANDIN_API ncclResult_t ncclScatter(const void *sendbuff, void *recvbuff, size_t count,
                                         ncclDataType_t datatype, int root, ncclComm_t comm,
                                         cudaStream_t stream)
{
  if (nsp_standin_comm_ok(comm) && comm->rank != root && !sendbuff)
    sendbuff = recvbuff;
  return nsp_standin_coll(NSP_STANDIN_SCATTER, sendbuff, recvbuff, count, datatype, ncclSum, root,
                          comm, stream, "ncclScatter");
}

NSP_STANDIN_API ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype,
                                      int peer, ncclComm_t comm, cudaStream_t stream)
{
  return nsp_standin_p2p(NSP_STANDIN_SEND, sendbuff, NULL, count, datatype, peer, comm, stream,
                         "ncclSend");
}

NSP_STANDIN_API ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype,
                                      int peer, ncclComm_t comm, cudaStream_t stream)
{
  return nsp_standin_p2p(NSP_STANDIN_RECV, NULL, recvbuff, count, datatype, peer, comm, stream,
                         "ncclRecv");
}

NSP_STANDIN_API ncclResult_t ncclGroupStart(void)
{
  nsp_standin_group.depth++;
  return ncclSuccess;
}

static ncclResult_t nsp_standin_group_close(int run, ncclSimInfo_t *sim, const char *fn)
{
  struct nsp_standin_op *ops;
  size_t n, i;
  ncclResult_t r = ncclSuccess;

  if (nsp_standin_group.depth <= 0) {
    nsp_standin_set_error("%s: no ncclGroupStart before it", fn);
    return ncclInvalidUsage;
  }
  if (--nsp_standin_group.depth > 0)
    return ncclSuccess;
  ops = nsp_standin_group.ops;
  n = nsp_standin_group.n;
  nsp_standin_group.n = 0;
  if (run && n)
    r = nsp_standin_issue(ops, n);
  if (sim && sim->size >= sizeof *sim) {
    /* A rough model is enough: callers only compare estimates. */
    float us = 0;
    for (i = 0; i < n; i++)
      us += 5.0f + (float)(ops[i].count * nsp_standin_dtype_size(ops[i].dtype)) / 10000.0f;
    sim->estimatedTime = us;
  }
  /* Groups are usually small; drop a large queue rather than keep it. */
  if (nsp_standin_group.cap > 1024) {
    free(nsp_standin_group.ops);
    nsp_standin_group.ops = NULL;
    nsp_standin_group.cap = 0;
  }
  return r;
}

NSP_STANDIN_API ncclResult_t ncclGroupEnd(void)
{
  return nsp_standin_group_close(1, NULL, "ncclGroupEnd");
}

NSP_STANDIN_API ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t *simInfo)
{
  return nsp_standin_group_close(0, simInfo, "ncclGroupSimulateEnd");
}

/* pnccl* twins, as NCCL exports them (PMPI-style profiling names).  They
 * are aliases of the nccl* definitions, so pncclBcast also calls the
 * public ncclBroadcast, as NCCL's does. */
#define NSP_STANDIN_ALIAS_(name, kind, ret, params, args, since, op)                   \
  NSP_STANDIN_API NSP_RET_##ret pnccl##name params __attribute__((alias("nccl" #name)));
NSP_NCCL_APIS(NSP_STANDIN_ALIAS_)
#undef NSP_STANDIN_ALIAS_
