/* nsp_cases.c - the multi-rank programs of the failure cases in
 * shared/cases/README.md (c01-c10, CPU part), one process per rank.
 *
 *   nsp_launch -n N -- nsp_cases CASE        (CASE: c01 or amp-dtype, ...)
 *   nsp_cases --list                         (the cases, one line each)
 *
 * Reads RANK and WORLD_SIZE.  Ranks exchange the ncclUniqueId through the
 * file named by NSP_UID_FILE: rank 0 writes it (temp file + rename, so a
 * reader never sees half an id), the others poll for it for up to
 * NSP_UID_WAIT_MS (default 30000).  The file must not exist beforehand
 * (nsp_launch removes it).
 *
 * Every collective's result is checked against the values all ranks would
 * get had they all made the same call.  A rank that gets wrong values or an
 * error behaves like a job whose watchdog fired: it aborts its
 * communicators and exits 1.  Every rank ends by printing
 *   rank R returned N calls
 * on stdout, N counting the NCCL calls this program made that returned
 * (the calls NCCL makes inside itself are not counted), so tests can
 * compare it with the trace.
 *
 * Stream mode (env NSP_CASES_STREAM=1, and always for the GPU-only cases
 * c11 and killed-hang): the program uses the CUDA stand-in as a GPU program
 * would: cuInit, the device LOCAL_RANK (cuDevicePrimaryCtxRetain +
 * cuCtxSetCurrent, as torch's cudaSetDevice), one stream made with
 * cuStreamCreate and passed to every NCCL call, and cuStreamSynchronize
 * before it reads results (where torch's .item() would), followed by
 * ncclCommGetAsyncError (its watchdog): an asynchronous error ends the
 * rank as an NCCL error does.  Each rank says "rank R: stream mode
 * (device D)" on stderr at start.  The driver is loaded then, with
 * dlopen(NSP_CASES_LIBCUDA, default: the CUDA stand-in of this build;
 * RTLD_LOCAL, as the CUDA runtime loads it), never in the default mode: a
 * CPU job must not look like a GPU job whose CUDA was never initialized.
 * The CUDA runtime is loaded with it (NSP_CASES_LIBCUDART, default: the
 * runtime stand-in of this build, whose version the shim records; empty:
 * none), as torch has libcudart loaded before its first NCCL call.
 *
 * NSP_CASES_NRANKS=N: the nranks this process passes to ncclCommInitRank
 * for the world (default WORLD_SIZE, which the case still uses for
 * everything else): a rank that disagrees on the size of the job.
 *
 * The GPU-only cases, 2 ranks each, print on stderr where each rank is:
 *   c11 straggler   all-reduces #1-4; then rank 1 sleeps NSP_C11_SLEEP_S
 *                   seconds (default 30) before #5 while rank 0 enqueues #5
 *                   and waits in cuStreamSynchronize; meant to be ended by
 *                   the launcher's timeout (nsp_launch -t shorter than the
 *                   sleep; NSP_STANDIN_TIMEOUT_MS longer).  If rank 1 wakes
 *                   first, #5 completes and the job exits 0.
 *   killed-hang     all-reduces #1-2; rank 1 never arrives at #3 (sleeps
 *                   until killed), rank 0 waits in #3: meant to be killed
 *                   (e.g. SIGTERM to nsp_launch) before the stand-in's
 *                   timeout, after which rank 0 would fail.
 *
 * The 2-D cases, 8 ranks each, always in stream mode: TP=2 x DP=4 with
 * communicators split from the world (tp: color rank/2, dp: color rank%2)
 * and from dp (shard: color dp-rank/2, two levels deep); see nsp_c2d_run.
 *   c2d-healthy      200 steps, every value checked; exits 0
 *   c2d-dp-mismatch  at step 3, rank 5 all-reduces its gradients (dp
 *                    {1,3,5,7} #3) in float16, the others in float32
 *   c2d-stall        rank 3 sleeps NSP_C2D_SLEEP_S seconds (default 60)
 *                    before step 5's forward all-reduce (tp{2,3} #9); meant
 *                    to be ended by the launcher's timeout
 *
 * Exit status: 0 healthy, 1 wrong values or an NCCL error, 2 usage. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "nsp_nccl.h"
#include "nsp_standin_cuda.h"
#include "nsp_standin_fp.h"

NSP_NCCL_DECLARE(nccl)

/* The stream every NCCL call gets: NULL unless in stream mode. */
static cudaStream_t nsp_cases_stream;

#ifndef NSP_CASES_LIBCUDA_DEFAULT
#define NSP_CASES_LIBCUDA_DEFAULT "libcuda.so.1"
#endif
#ifndef NSP_CASES_LIBCUDART_DEFAULT
#define NSP_CASES_LIBCUDART_DEFAULT "libcudart.so.12"
#endif

/* The driver functions stream mode uses, from the dlopen'ed libcuda. */
static struct {
  CUresult (*Init)(unsigned int);
  CUresult (*DeviceGetCount)(int *);
  CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*CtxSetCurrent)(CUcontext);
  CUresult (*StreamCreate)(CUstream *, unsigned int);
  CUresult (*StreamSynchronize)(CUstream);
  CUresult (*StreamDestroy)(CUstream);
  CUresult (*GetErrorName)(CUresult, const char **);
} nsp_cu;

/* ---- counting NCCL calls ------------------------------------------------ */

static unsigned long nsp_cases_calls;

/* ---- the call log and planned deaths (tests/integration/test_durability.c)
 *
 * NSP_CASES_LOG_FD=FD  before and after every NCCL call that libncclspy
 *     records (queries such as ncclCommCount and ncclGetLastError are not
 *     recorded), one unbuffered write(2) of struct nsp_cases_log_entry to FD
 *     (a pipe: each write is atomic): phase 0 "calling call #n", phase 1
 *     "call #n returned", n counting the recorded calls of this process.
 *     A rank killed at any moment has thus logged how many calls returned.
 * NSP_CASES_DIE=HOW@N  once recorded call #N has returned (and been
 *     logged), end the process by HOW: exit (exit(3)), _exit (_exit(4)),
 *     return (return 5 from main), abort, segv (a real invalid access), bus
 *     (a real SIGBUS: a load from a mapped page past the end of its file),
 *     kill, term, int (raise that signal). */
struct nsp_cases_log_entry {
  uint32_t rank, phase;
  uint64_t n;
};

static unsigned long nsp_cases_recorded; /* recorded calls that returned */
static int nsp_cases_log_fd = -2;        /* -2: not looked at yet; -1 none */
static int nsp_cases_log_rank;
static unsigned long nsp_cases_die_at;
static char nsp_cases_die_how[16];
static jmp_buf nsp_cases_return_jmp;

/* Calls libncclspy passes through without a record. */
static int nsp_cases_is_query(const char *call)
{
  static const char *const q[] = {"ncclCommUserRank(", "ncclCommCount(", "ncclCommCuDevice(",
                                  "ncclGetVersion(", "ncclCommGetAsyncError(",
                                  "ncclGetErrorString(", "ncclGetLastError("};
  size_t i;
  for (i = 0; i < sizeof q / sizeof q[0]; i++)
    if (!strncmp(call, q[i], strlen(q[i])))
      return 1;
  return 0;
}

static void nsp_cases_log(uint32_t phase, uint64_t n)
{
  struct nsp_cases_log_entry e;
  if (nsp_cases_log_fd == -2) {
    const char *fd = getenv("NSP_CASES_LOG_FD"), *die = getenv("NSP_CASES_DIE"), *at;
    const char *rank = getenv("RANK");
    nsp_cases_log_fd = fd && *fd ? atoi(fd) : -1;
    nsp_cases_log_rank = rank ? atoi(rank) : 0;
    if (die && (at = strchr(die, '@')) && (size_t)(at - die) < sizeof nsp_cases_die_how) {
      memcpy(nsp_cases_die_how, die, (size_t)(at - die));
      nsp_cases_die_at = strtoul(at + 1, NULL, 10);
    }
  }
  if (nsp_cases_log_fd < 0)
    return;
  e.rank = (uint32_t)nsp_cases_log_rank;
  e.phase = phase;
  e.n = n;
  while (write(nsp_cases_log_fd, &e, sizeof e) < 0 && errno == EINTR)
    ;
}

static void nsp_cases_die_now(void)
{
  const char *how = nsp_cases_die_how;
  if (!strcmp(how, "exit"))
    exit(3);
  if (!strcmp(how, "_exit"))
    _exit(4);
  if (!strcmp(how, "return"))
    longjmp(nsp_cases_return_jmp, 1);
  if (!strcmp(how, "abort"))
    abort();
  if (!strcmp(how, "segv")) {
    /* A store to address 0x10, out of UBSan's sight (a store through a
     * null pointer is its report and exit, not a SIGSEGV), as
     * nsp_sigjob_segv does. */
    static volatile uintptr_t bad = 0x10;
    *(volatile int *)bad = 1;
  }
  if (!strcmp(how, "bus")) {
    FILE *f = tmpfile();
    volatile char *m = f ? mmap(NULL, 4096, PROT_READ, MAP_SHARED, fileno(f), 0) : MAP_FAILED;
    if (m != MAP_FAILED)
      (void)m[0]; /* the file is empty: SIGBUS */
  }
  if (!strcmp(how, "kill"))
    raise(SIGKILL);
  if (!strcmp(how, "term"))
    raise(SIGTERM);
  if (!strcmp(how, "int"))
    raise(SIGINT);
  fprintf(stderr, "nsp_cases: NSP_CASES_DIE=%s@%lu did not end the process\n", how, nsp_cases_die_at);
  _exit(99);
}

static void nsp_cases_before(const char *call)
{
  if (!nsp_cases_is_query(call))
    nsp_cases_log(0, nsp_cases_recorded + 1);
}

static void nsp_cases_after(const char *call)
{
  nsp_cases_calls++;
  if (nsp_cases_is_query(call))
    return;
  nsp_cases_log(1, ++nsp_cases_recorded);
  if (nsp_cases_die_at && nsp_cases_recorded == nsp_cases_die_at)
    nsp_cases_die_now();
}

/* Counts a call once it has returned: the argument is evaluated first. */
static ncclResult_t nsp_cases_counted(const char *call, ncclResult_t r)
{
  nsp_cases_after(call);
  return r;
}

static const char *nsp_cases_counted_str(const char *call, const char *s)
{
  nsp_cases_after(call);
  return s;
}

#define NC(call) (nsp_cases_before(#call), nsp_cases_counted(#call, call))
#define NCS(call) (nsp_cases_before(#call), nsp_cases_counted_str(#call, call))

/* ---- job state ------------------------------------------------------------ */

#define NSP_CASES_MAX_COMMS 4
#define NSP_CASES_MAX_BUFS 4

struct nsp_cases_comm {
  ncclComm_t comm;
  int rank, nranks;
  int seq;     /* collectives issued on it */
  int p2p_seq; /* send/recv rounds on it */
  const char *label;
};

struct nsp_cases_job {
  int rank, nranks;
  int id_from_launcher; /* the launcher case: rank 0 reads the id too */
  struct nsp_cases_comm comms[NSP_CASES_MAX_COMMS];
  int ncomms;
  void *bufs[NSP_CASES_MAX_BUFS]; /* freed on the way out, even by a failure */
};

__attribute__((noreturn)) static void nsp_cases_exit(struct nsp_cases_job *job, int status)
{
  int i;
  for (i = 0; i < NSP_CASES_MAX_BUFS; i++)
    free(job->bufs[i]);
  printf("rank %d returned %lu calls\n", job->rank, nsp_cases_calls);
  fflush(stdout);
  fflush(stderr);
  exit(status);
}

/* What a job does when its watchdog fires: abort everything, exit 1. */
__attribute__((format(printf, 2, 3), noreturn)) static void
nsp_cases_die(struct nsp_cases_job *job, const char *fmt, ...)
{
  char msg[2048];
  va_list ap;
  int i;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  /* One write, so the lines of ranks sharing stderr do not interleave. */
  fprintf(stderr, "rank %d: %s\n", job->rank, msg);
  for (i = job->ncomms - 1; i >= 0; i--)
    if (job->comms[i].comm)
      NC(ncclCommAbort(job->comms[i].comm));
  job->ncomms = 0;
  nsp_cases_exit(job, 1);
}

static struct nsp_cases_comm *nsp_cases_add_comm(struct nsp_cases_job *job, ncclComm_t comm,
                                                 const char *label)
{
  struct nsp_cases_comm *cc = &job->comms[job->ncomms++];
  memset(cc, 0, sizeof *cc);
  cc->comm = comm;
  cc->label = label;
  if (NC(ncclCommUserRank(comm, &cc->rank)) != ncclSuccess ||
      NC(ncclCommCount(comm, &cc->nranks)) != ncclSuccess)
    nsp_cases_die(job, "cannot query communicator %s", label);
  return cc;
}

static const char *nsp_cases_dtype_name(ncclDataType_t t)
{
  static const char *const names[] = {"int8", "uint8", "int32", "uint32", "int64", "uint64",
                                      "float16", "float32", "float64", "bfloat16",
                                      "float8e4m3", "float8e5m2"};
  return (int)t >= 0 && (int)t <= NSP_NCCL_DTYPE_MAX ? names[t] : "?";
}

static size_t nsp_cases_dtype_size(ncclDataType_t t)
{
  static const size_t sizes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  return sizes[t];
}

/* ---- values ----------------------------------------------------------------
 * Every input element is a small integer that depends on the kind of call,
 * its sequence number and the rank, so a rank that reads another call's
 * bytes (another kind, seq or dtype) sees different values.  Sums over 16
 * ranks stay below 128 and products are powers of two at most 16: exact in
 * every dtype used here. */

enum nsp_cases_kind { K_AR, K_AG, K_RS, K_BC, K_RD, K_A2A, K_GA, K_SC, K_P2P, K_PM };

static const char *const nsp_cases_kind_names[] = {
  "all-reduce", "all-gather", "reduce-scatter", "broadcast", "reduce", "all-to-all",
  "gather", "scatter", "send/recv", "premulsum all-reduce"};

static double nsp_cases_val(enum nsp_cases_kind kind, int seq, int rank, size_t i, ncclRedOp_t op)
{
  if (op == ncclProd)
    return (int)((i + (size_t)seq) % 4) == rank % 4 ? 2 : 1;
  return (double)(1 + ((size_t)kind * 3 + (size_t)seq + (size_t)rank * 2 + i) % 7);
}

static double nsp_cases_reduced(enum nsp_cases_kind kind, int seq, int nranks, size_t i,
                                ncclRedOp_t op, ncclDataType_t t)
{
  double acc = nsp_cases_val(kind, seq, 0, i, op);
  int p;
  for (p = 1; p < nranks; p++) {
    double v = nsp_cases_val(kind, seq, p, i, op);
    switch (op) {
    case ncclProd: acc *= v; break;
    case ncclMax: acc = v > acc ? v : acc; break;
    case ncclMin: acc = v < acc ? v : acc; break;
    default: acc += v; break;
    }
  }
  if (op == ncclAvg)
    acc = t <= ncclUint64 ? floor(acc / nranks) : acc / nranks;
  return acc;
}

static double nsp_cases_tol(ncclDataType_t t, double want)
{
  double rel = t == ncclFloat16 ? 1.0 / 512 : t == ncclBfloat16 ? 1.0 / 64
             : t == ncclFloat32 ? 1e-6 : t == ncclFloat64 ? 1e-12 : 0;
  return rel * (fabs(want) > 1 ? fabs(want) : 1);
}

static void *nsp_cases_alloc(struct nsp_cases_job *job, size_t count, ncclDataType_t t)
{
  void *p = calloc(count ? count : 1, nsp_cases_dtype_size(t));
  int i;
  if (!p)
    nsp_cases_die(job, "out of memory (%zu elements)", count);
  for (i = 0; i < NSP_CASES_MAX_BUFS && job->bufs[i]; i++)
    ;
  if (i == NSP_CASES_MAX_BUFS) {
    free(p);
    nsp_cases_die(job, "more than %d buffers at once", NSP_CASES_MAX_BUFS);
  }
  job->bufs[i] = p;
  return p;
}

static void nsp_cases_free(struct nsp_cases_job *job, void *p)
{
  int i;
  for (i = 0; i < NSP_CASES_MAX_BUFS; i++)
    if (job->bufs[i] == p)
      job->bufs[i] = NULL;
  free(p);
}

static void nsp_cases_fill(void *buf, ncclDataType_t t, size_t count, enum nsp_cases_kind kind,
                           int seq, int rank, ncclRedOp_t op)
{
  size_t i;
  for (i = 0; i < count; i++)
    nsp_standin_store_elem(buf, t, i, nsp_cases_val(kind, seq, rank, i, op));
}

/* Dies unless `r` is ncclSuccess; names the call the way a log would. */
static void nsp_cases_check(struct nsp_cases_job *job, struct nsp_cases_comm *cc, ncclResult_t r,
                            enum nsp_cases_kind kind, ncclDataType_t t, size_t count)
{
  if (r != ncclSuccess) {
    const char *es = NCS(ncclGetErrorString(r));
    const char *le = NCS(ncclGetLastError(cc->comm));
    nsp_cases_die(job, "%s #%d (%s x%zu) on %s returned %d (%s): %s", nsp_cases_kind_names[kind],
                  cc->seq, nsp_cases_dtype_name(t), count, cc->label, (int)r, es, le);
  }
}

/* Stream mode: waits for the stream (where a program reads a result) and
 * asks for an asynchronous error (as a watchdog does).  Returns the
 * asynchronous error, ncclSuccess if none; without a stream, at once. */
static ncclResult_t nsp_cases_sync_result(struct nsp_cases_job *job, struct nsp_cases_comm *cc)
{
  ncclResult_t async = ncclSuccess;
  CUresult cr;
  if (!nsp_cases_stream)
    return ncclSuccess;
  cr = nsp_cu.StreamSynchronize(nsp_cases_stream);
  if (cr != CUDA_SUCCESS)
    nsp_cases_die(job, "cuStreamSynchronize returned %d", (int)cr);
  if (NC(ncclCommGetAsyncError(cc->comm, &async)) != ncclSuccess)
    nsp_cases_die(job, "ncclCommGetAsyncError on %s failed", cc->label);
  return async;
}

/* nsp_cases_sync_result; an asynchronous error ends the rank, naming the
 * call the way a watchdog's log would. */
static void nsp_cases_sync(struct nsp_cases_job *job, struct nsp_cases_comm *cc,
                           enum nsp_cases_kind kind, ncclDataType_t t, size_t count)
{
  ncclResult_t async = nsp_cases_sync_result(job, cc);
  if (async != ncclSuccess) {
    const char *es = NCS(ncclGetErrorString(async));
    const char *le = NCS(ncclGetLastError(cc->comm));
    nsp_cases_die(job, "watchdog: %s #%d (%s x%zu) on %s: asynchronous error %d (%s): %s",
                  nsp_cases_kind_names[kind], kind == K_P2P ? cc->p2p_seq : cc->seq,
                  nsp_cases_dtype_name(t), count, cc->label, (int)async, es, le);
  }
}

static void nsp_cases_verify(struct nsp_cases_job *job, struct nsp_cases_comm *cc,
                             enum nsp_cases_kind kind, ncclDataType_t t, const void *buf,
                             size_t i, double want)
{
  double got = nsp_standin_load_elem(buf, t, i);
  if (!(fabs(got - want) <= nsp_cases_tol(t, want)))
    nsp_cases_die(job, "wrong values after %s #%d (%s) on %s: element %zu is %g, expected %g",
                  nsp_cases_kind_names[kind], kind == K_P2P ? cc->p2p_seq : cc->seq,
                  nsp_cases_dtype_name(t), cc->label, i, got, want);
}

/* ---- checked collectives ---------------------------------------------------- */

static void nsp_cases_allreduce(struct nsp_cases_job *job, struct nsp_cases_comm *cc,
                                ncclDataType_t t, size_t count, ncclRedOp_t op)
{
  void *buf = nsp_cases_alloc(job, count, t);
  size_t i;
  int seq = ++cc->seq;
  nsp_cases_fill(buf, t, count, K_AR, seq, cc->rank, op);
  nsp_cases_check(job, cc, NC(ncclAllReduce(buf, buf, count, t, op, cc->comm, nsp_cases_stream)), K_AR, t, count);
  nsp_cases_sync(job, cc, K_AR, t, count);
  for (i = 0; i < count; i++)
    nsp_cases_verify(job, cc, K_AR, t, buf, i, nsp_cases_reduced(K_AR, seq, cc->nranks, i, op, t));
  nsp_cases_free(job, buf);
}

/* An all-reduce that says on stderr when it is enqueued and when it has
 * completed, so that a test can tell where a killed rank was. */
static void nsp_cases_allreduce_told(struct nsp_cases_job *job, struct nsp_cases_comm *cc,
                                     ncclDataType_t t, size_t count)
{
  void *buf = nsp_cases_alloc(job, count, t);
  size_t i;
  int seq = ++cc->seq;
  nsp_cases_fill(buf, t, count, K_AR, seq, cc->rank, ncclSum);
  nsp_cases_check(job, cc, NC(ncclAllReduce(buf, buf, count, t, ncclSum, cc->comm, nsp_cases_stream)),
                  K_AR, t, count);
  fprintf(stderr, "rank %d: all-reduce #%d on %s enqueued, waiting for it (cuStreamSynchronize)\n",
          job->rank, seq, cc->label);
  nsp_cases_sync(job, cc, K_AR, t, count);
  for (i = 0; i < count; i++)
    nsp_cases_verify(job, cc, K_AR, t, buf, i,
                     nsp_cases_reduced(K_AR, seq, cc->nranks, i, ncclSum, t));
  fprintf(stderr, "rank %d: all-reduce #%d on %s completed\n", job->rank, seq, cc->label);
  nsp_cases_free(job, buf);
}

static void nsp_cases_allgather(struct nsp_cases_job *job, struct nsp_cases_comm *cc,
                                ncclDataType_t t, size_t count)
{
  void *send = nsp_cases_alloc(job, count, t);
  void *recv = nsp_cases_alloc(job, count * (size_t)cc->nranks, t);
  size_t i;
  int seq = ++cc->seq, p;
  nsp_cases_fill(send, t, count, K_AG, seq, cc->rank, ncclSum);
  nsp_cases_check(job, cc, NC(ncclAllGather(send, recv, count, t, cc->comm, nsp_cases_stream)), K_AG, t, count);
  nsp_cases_sync(job, cc, K_AG, t, count);
  for (p = 0; p < cc->nranks; p++)
    for (i = 0; i < count; i++)
      nsp_cases_verify(job, cc, K_AG, t, recv, (size_t)p * count + i,
                       nsp_cases_val(K_AG, seq, p, i, ncclSum));
  nsp_cases_free(job, send);
  nsp_cases_free(job, recv);
}

static void nsp_cases_reducescatter(struct nsp_cases_job *job, struct nsp_cases_comm *cc,
                                    ncclDataType_t t, size_t count, ncclRedOp_t op)
{
  size_t n = (size_t)cc->nranks, i, base = (size_t)cc->rank * count;
  void *send = nsp_cases_alloc(job, count * n, t), *recv = nsp_cases_alloc(job, count, t);
  int seq = ++cc->seq;
  nsp_cases_fill(send, t, count * n, K_RS, seq, cc->rank, op);
  nsp_cases_check(job, cc, NC(ncclReduceScatter(send, recv, count, t, op, cc->comm, nsp_cases_stream)), K_RS,
                  t, count);
  nsp_cases_sync(job, cc, K_RS, t, count);
  for (i = 0; i < count; i++)
    nsp_cases_verify(job, cc, K_RS, t, recv, i,
                     nsp_cases_reduced(K_RS, seq, cc->nranks, base + i, op, t));
  nsp_cases_free(job, send);
  nsp_cases_free(job, recv);
}

/* `bcast`: use the in-place ncclBcast (which NCCL implements by calling
 * ncclBroadcast) instead of ncclBroadcast. */
static void nsp_cases_broadcast(struct nsp_cases_job *job, struct nsp_cases_comm *cc,
                                ncclDataType_t t, size_t count, int root, int bcast)
{
  void *send = nsp_cases_alloc(job, count, t), *recv = nsp_cases_alloc(job, count, t);
  size_t i;
  int seq = ++cc->seq;
  ncclResult_t r;
  if (cc->rank == root)
    nsp_cases_fill(bcast ? recv : send, t, count, K_BC, seq, root, ncclSum);
  if (bcast)
    r = NC(ncclBcast(recv, count, t, root, cc->comm, nsp_cases_stream));
  else
    r = NC(ncclBroadcast(send, recv, count, t, root, cc->comm, nsp_cases_stream));
  nsp_cases_check(job, cc, r, K_BC, t, count);
  nsp_cases_sync(job, cc, K_BC, t, count);
  for (i = 0; i < count; i++)
    nsp_cases_verify(job, cc, K_BC, t, recv, i, nsp_cases_val(K_BC, seq, root, i, ncclSum));
  nsp_cases_free(job, send);
  nsp_cases_free(job, recv);
}

static void nsp_cases_reduce(struct nsp_cases_job *job, struct nsp_cases_comm *cc,
                             ncclDataType_t t, size_t count, ncclRedOp_t op, int root)
{
  void *send = nsp_cases_alloc(job, count, t), *recv = nsp_cases_alloc(job, count, t);
  size_t i;
  int seq = ++cc->seq;
  nsp_cases_fill(send, t, count, K_RD, seq, cc->rank, op);
  nsp_cases_check(job, cc, NC(ncclReduce(send, recv, count, t, op, root, cc->comm, nsp_cases_stream)), K_RD,
                  t, count);
  nsp_cases_sync(job, cc, K_RD, t, count);
  for (i = 0; i < count && cc->rank == root; i++)
    nsp_cases_verify(job, cc, K_RD, t, recv, i, nsp_cases_reduced(K_RD, seq, cc->nranks, i, op, t));
  nsp_cases_free(job, send);
  nsp_cases_free(job, recv);
}

static void nsp_cases_alltoall(struct nsp_cases_job *job, struct nsp_cases_comm *cc,
                               ncclDataType_t t, size_t count)
{
  size_t n = (size_t)cc->nranks, i;
  void *send = nsp_cases_alloc(job, count * n, t), *recv = nsp_cases_alloc(job, count * n, t);
  int seq = ++cc->seq, p;
  nsp_cases_fill(send, t, count * n, K_A2A, seq, cc->rank, ncclSum);
  nsp_cases_check(job, cc, NC(ncclAlltoAll(send, recv, count, t, cc->comm, nsp_cases_stream)), K_A2A, t, count);
  nsp_cases_sync(job, cc, K_A2A, t, count);
  for (p = 0; p < cc->nranks; p++)
    for (i = 0; i < count; i++)
      nsp_cases_verify(job, cc, K_A2A, t, recv, (size_t)p * count + i,
                       nsp_cases_val(K_A2A, seq, p, (size_t)cc->rank * count + i, ncclSum));
  nsp_cases_free(job, send);
  nsp_cases_free(job, recv);
}

static void nsp_cases_gather(struct nsp_cases_job *job, struct nsp_cases_comm *cc,
                             ncclDataType_t t, size_t count, int root)
{
  size_t n = (size_t)cc->nranks, i;
  void *send = nsp_cases_alloc(job, count, t), *recv = nsp_cases_alloc(job, count * n, t);
  int seq = ++cc->seq, p;
  nsp_cases_fill(send, t, count, K_GA, seq, cc->rank, ncclSum);
  nsp_cases_check(job, cc, NC(ncclGather(send, recv, count, t, root, cc->comm, nsp_cases_stream)), K_GA, t,
                  count);
  nsp_cases_sync(job, cc, K_GA, t, count);
  for (p = 0; p < cc->nranks && cc->rank == root; p++)
    for (i = 0; i < count; i++)
      nsp_cases_verify(job, cc, K_GA, t, recv, (size_t)p * count + i,
                       nsp_cases_val(K_GA, seq, p, i, ncclSum));
  nsp_cases_free(job, send);
  nsp_cases_free(job, recv);
}

static void nsp_cases_scatter(struct nsp_cases_job *job, struct nsp_cases_comm *cc,
                              ncclDataType_t t, size_t count, int root)
{
  size_t n = (size_t)cc->nranks, i;
  void *send = nsp_cases_alloc(job, count * n, t), *recv = nsp_cases_alloc(job, count, t);
  int seq = ++cc->seq;
  if (cc->rank == root)
    nsp_cases_fill(send, t, count * n, K_SC, seq, root, ncclSum);
  nsp_cases_check(job, cc, NC(ncclScatter(send, recv, count, t, root, cc->comm, nsp_cases_stream)), K_SC, t,
                  count);
  nsp_cases_sync(job, cc, K_SC, t, count);
  for (i = 0; i < count; i++)
    nsp_cases_verify(job, cc, K_SC, t, recv, i,
                     nsp_cases_val(K_SC, seq, root, (size_t)cc->rank * count + i, ncclSum));
  nsp_cases_free(job, send);
  nsp_cases_free(job, recv);
}

/* All-reduce with a PreMulSum op (host scalar): each rank scales its
 * input by k, or by its rank+1 when per_rank. */
static void nsp_cases_premulsum_by(struct nsp_cases_job *job, struct nsp_cases_comm *cc, ncclDataType_t t,
                                   size_t count, double k, int per_rank)
{
  void *buf = nsp_cases_alloc(job, count, t);
  unsigned char scalar[8];
  ncclRedOp_t op;
  size_t i;
  int seq, p;
  nsp_standin_store_elem(scalar, t, 0, per_rank ? cc->rank + 1 : k);
  nsp_cases_check(job, cc, NC(ncclRedOpCreatePreMulSum(&op, scalar, t, ncclScalarHostImmediate,
                                                       cc->comm)), K_PM, t, count);
  seq = ++cc->seq;
  nsp_cases_fill(buf, t, count, K_PM, seq, cc->rank, ncclSum);
  nsp_cases_check(job, cc, NC(ncclAllReduce(buf, buf, count, t, op, cc->comm, nsp_cases_stream)), K_PM, t, count);
  nsp_cases_sync(job, cc, K_PM, t, count);
  for (i = 0; i < count; i++) {
    double want = 0;
    for (p = 0; p < cc->nranks; p++)
      want += (per_rank ? p + 1 : k) * nsp_cases_val(K_PM, seq, p, i, ncclSum);
    nsp_cases_verify(job, cc, K_PM, t, buf, i, want);
  }
  nsp_cases_check(job, cc, NC(ncclRedOpDestroy(op, cc->comm)), K_PM, t, count);
  nsp_cases_free(job, buf);
}

/* All-reduce with a PreMulSum op: each rank scales its input by rank+1. */
static void nsp_cases_premulsum(struct nsp_cases_job *job, struct nsp_cases_comm *cc,
                                ncclDataType_t t, size_t count)
{
  nsp_cases_premulsum_by(job, cc, t, count, 0, 1);
}

/* Each rank sends to rank+1 and receives from rank-1 in one group, as
 * pipeline-parallel code does. */
static void nsp_cases_ring(struct nsp_cases_job *job, struct nsp_cases_comm *cc,
                           ncclDataType_t t, size_t count)
{
  void *send = nsp_cases_alloc(job, count, t), *recv = nsp_cases_alloc(job, count, t);
  int n = cc->nranks, next = (cc->rank + 1) % n, prev = (cc->rank + n - 1) % n;
  int seq = ++cc->p2p_seq;
  size_t i;
  nsp_cases_fill(send, t, count, K_P2P, seq, cc->rank, ncclSum);
  nsp_cases_check(job, cc, NC(ncclGroupStart()), K_P2P, t, count);
  nsp_cases_check(job, cc, NC(ncclSend(send, count, t, next, cc->comm, nsp_cases_stream)), K_P2P, t, count);
  nsp_cases_check(job, cc, NC(ncclRecv(recv, count, t, prev, cc->comm, nsp_cases_stream)), K_P2P, t, count);
  nsp_cases_check(job, cc, NC(ncclGroupEnd()), K_P2P, t, count);
  nsp_cases_sync(job, cc, K_P2P, t, count);
  for (i = 0; i < count; i++)
    nsp_cases_verify(job, cc, K_P2P, t, recv, i, nsp_cases_val(K_P2P, seq, prev, i, ncclSum));
  nsp_cases_free(job, send);
  nsp_cases_free(job, recv);
}

static struct nsp_cases_comm *nsp_cases_split(struct nsp_cases_job *job, struct nsp_cases_comm *cc,
                                              int color, int key, const char *label)
{
  ncclComm_t child = NULL;
  ncclResult_t r = NC(ncclCommSplit(cc->comm, color, key, &child, NULL));
  if (r != ncclSuccess)
    nsp_cases_die(job, "ncclCommSplit of %s returned %d: %s", cc->label, (int)r,
                  NCS(ncclGetLastError(cc->comm)));
  return nsp_cases_add_comm(job, child, label);
}

/* ---- the cases ------------------------------------------------------------- */

static void nsp_cases_c01(struct nsp_cases_job *job)
{
  struct nsp_cases_comm *w = &job->comms[0];
  nsp_cases_allreduce(job, w, ncclFloat32, 1024, ncclSum);
  /* autocast turned rank 0's gradient bucket into float16 */
  nsp_cases_allreduce(job, w, job->rank == 0 ? ncclFloat16 : ncclFloat32, 1024, ncclSum);
}

static void nsp_cases_c02(struct nsp_cases_job *job)
{
  nsp_cases_allreduce(job, &job->comms[0], job->rank % 2 ? ncclFloat32 : ncclBfloat16, 1u << 20,
                      ncclSum);
}

static void nsp_cases_c03(struct nsp_cases_job *job)
{
  struct nsp_cases_comm *w = &job->comms[0];
  int step;
  for (step = 0; step < 10; step++)
    nsp_cases_allreduce(job, w, ncclFloat32, 1024, ncclSum);
  /* a metric gathered under "if main process": one float per rank */
  if (job->rank == 0)
    nsp_cases_allgather(job, w, ncclFloat32, 1);
  nsp_cases_allreduce(job, w, ncclFloat32, 1024, ncclSum);
}

static void nsp_cases_c04(struct nsp_cases_job *job)
{
  struct nsp_cases_comm *w = &job->comms[0];
  int seq;
  for (seq = 1; seq <= 34; seq++) {
    if (seq == 33 && job->rank == 2)
      nsp_cases_broadcast(job, w, ncclFloat32, 1024, 0, 0);
    else
      nsp_cases_allreduce(job, w, ncclFloat32, 1024, ncclSum);
  }
}

static void nsp_cases_c05(struct nsp_cases_job *job)
{
  struct nsp_cases_comm *w = &job->comms[0];
  nsp_cases_allreduce(job, w, ncclFloat32, job->rank == 0 ? 409600 : 409598, ncclSum);
  /* the next training step */
  nsp_cases_allreduce(job, w, ncclFloat32, 1024, ncclSum);
}

static void nsp_cases_c06(struct nsp_cases_job *job)
{
  struct nsp_cases_comm *w = &job->comms[0];
  nsp_cases_broadcast(job, w, ncclFloat32, 1024, job->rank == 2 ? 1 : 0, 0);
  nsp_cases_broadcast(job, w, ncclFloat32, 1024, 0, 0);
}

#define NSP_CASES_C07_FAIL "rank=3,seq=50,result=2,msg=NET/IB : connection reset by peer"

static void nsp_cases_c07_setup(struct nsp_cases_job *job)
{
  (void)job;
  /* Before init: the stand-in reads NSP_STANDIN_FAIL once, at the first
   * communicator init.  A value set by the caller wins. */
  setenv("NSP_STANDIN_FAIL", NSP_CASES_C07_FAIL, 0);
}

static void nsp_cases_c07(struct nsp_cases_job *job)
{
  struct nsp_cases_comm *w = &job->comms[0];
  const size_t count = 1024;
  float *buf = nsp_cases_alloc(job, count, ncclFloat32);
  ncclResult_t r, async = ncclSuccess, first = ncclSuccess;
  int first_seq = 0;
  /* Like PyTorch, keep enqueueing after a remote error until the watchdog
   * notices; a local error stops the rank at once. */
  while (w->seq < 52) {
    size_t i;
    int seq = ++w->seq;
    nsp_cases_fill(buf, ncclFloat32, count, K_AR, seq, w->rank, ncclSum);
    r = NC(ncclAllReduce(buf, buf, count, ncclFloat32, ncclSum, w->comm, nsp_cases_stream));
    /* Stream mode: the error of an enqueued call shows asynchronously. */
    if (r == ncclSuccess && !first_seq)
      r = nsp_cases_sync_result(job, w);
    if (r != ncclSuccess) {
      const char *le = NCS(ncclGetLastError(w->comm));
      fprintf(stderr, "rank %d: all-reduce #%d failed with %d (%s): %s\n", job->rank, seq, (int)r,
              NCS(ncclGetErrorString(r)), le);
      if (!first_seq) {
        first_seq = seq;
        first = r;
      }
      if (r != ncclRemoteError)
        break;
      continue;
    }
    if (first_seq)
      continue;
    for (i = 0; i < count; i++)
      nsp_cases_verify(job, w, K_AR, ncclFloat32, buf, i,
                       nsp_cases_reduced(K_AR, seq, w->nranks, i, ncclSum, ncclFloat32));
  }
  nsp_cases_free(job, buf);
  if (first_seq) {
    NC(ncclCommGetAsyncError(w->comm, &async));
    nsp_cases_die(job, "watchdog: first error %d at all-reduce #%d, async error %d", (int)first,
                  first_seq, (int)async);
  }
}

/* Rank 0 sends `sends` times to rank 1, which receives `recvs` times,
 * each send and each receive in its own group, as PyTorch's isend/irecv
 * (and send/recv) issue them; rank 1 checks what it got. */
static void nsp_cases_p2p_groups(struct nsp_cases_job *job, int sends, int recvs)
{
  struct nsp_cases_comm *w = &job->comms[0];
  const size_t count = 1024;
  float *buf = nsp_cases_alloc(job, count, ncclFloat32);
  int k;
  for (k = 0; k < (job->rank == 0 ? sends : recvs); k++) {
    size_t i;
    int seq = ++w->p2p_seq;
    if (job->rank == 0)
      nsp_cases_fill(buf, ncclFloat32, count, K_P2P, seq, 0, ncclSum);
    nsp_cases_check(job, w, NC(ncclGroupStart()), K_P2P, ncclFloat32, count);
    if (job->rank == 0)
      nsp_cases_check(job, w, NC(ncclSend(buf, count, ncclFloat32, 1, w->comm, nsp_cases_stream)),
                      K_P2P, ncclFloat32, count);
    else
      nsp_cases_check(job, w, NC(ncclRecv(buf, count, ncclFloat32, 0, w->comm, nsp_cases_stream)),
                      K_P2P, ncclFloat32, count);
    nsp_cases_check(job, w, NC(ncclGroupEnd()), K_P2P, ncclFloat32, count);
    nsp_cases_sync(job, w, K_P2P, ncclFloat32, count);
    for (i = 0; i < count && job->rank == 1; i++)
      nsp_cases_verify(job, w, K_P2P, ncclFloat32, buf, i, nsp_cases_val(K_P2P, seq, 0, i, ncclSum));
  }
  nsp_cases_free(job, buf);
}

static void nsp_cases_c08(struct nsp_cases_job *job)
{
  nsp_cases_p2p_groups(job, 3, 2);
}

static void nsp_cases_c09(struct nsp_cases_job *job)
{
  struct nsp_cases_comm *w = &job->comms[0], *child;
  nsp_cases_allreduce(job, w, ncclFloat32, 1024, ncclSum);
  nsp_cases_allreduce(job, w, ncclFloat32, 1024, ncclSum);
  child = nsp_cases_split(job, w, job->rank / 2, job->rank, job->rank < 2 ? "child{0,1}" : "child{2,3}");
  nsp_cases_allreduce(job, child, ncclFloat32, 1024, ncclSum);
  nsp_cases_allreduce(job, child, ncclFloat32, 1024, ncclSum);
  nsp_cases_allreduce(job, child, job->rank == 3 ? ncclFloat16 : ncclFloat32, 1024, ncclSum);
}

static void nsp_cases_c10(struct nsp_cases_job *job)
{
  static const ncclDataType_t types[] = {ncclFloat32, ncclBfloat16, ncclFloat16, ncclFloat64,
                                         ncclInt32, ncclUint8, ncclInt64, ncclUint32, ncclInt8,
                                         ncclUint64};
  static const ncclRedOp_t ops[] = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg};
  struct nsp_cases_comm *w = &job->comms[0], *half;
  int n = job->nranks, step;

  /* odd and even ranks, in reverse order of world rank */
  half = nsp_cases_split(job, w, job->rank % 2, n - job->rank, "half");
  for (step = 0; step < 1000; step++) {
    ncclDataType_t t = types[step % 10];
    ncclRedOp_t op = ops[(step / 10) % 5], op2 = ops[(step / 10 + 1) % 5];
    nsp_cases_allreduce(job, w, t, 64 + (size_t)(step % 7), op);
    nsp_cases_allgather(job, w, t, 17);
    nsp_cases_reducescatter(job, w, t, 9, op2);
    nsp_cases_broadcast(job, w, t, 33, step % n, step % 2);
    nsp_cases_allreduce(job, half, t, 31, op2);
    nsp_cases_allgather(job, half, t, 5);
    nsp_cases_reducescatter(job, half, t, 4, op);
    nsp_cases_broadcast(job, half, t, 8, step % half->nranks, 0);
    nsp_cases_ring(job, w, t, 50);
    if (step % 50 == 0) {
      nsp_cases_reduce(job, w, t, 21, op, (step / 50) % n);
      nsp_cases_alltoall(job, w, t, 6);
      nsp_cases_gather(job, w, t, 7, (step / 50 + 1) % n);
      nsp_cases_scatter(job, w, t, 5, (step / 50 + 2) % n);
      nsp_cases_premulsum(job, w, ncclFloat32, 40);
      nsp_cases_ring(job, half, t, 3);
    }
  }
}

/* split-job-ranks: the odd ranks {1,3} split off (key: world rank, so
 * child ranks 0 and 1 are job ranks 1 and 3); at the child's seq 2 job
 * rank 3 reduces float16, job rank 1 float32.  The report must name them
 * "rank 0 (job rank 1)" and "rank 1 (job rank 3)". */
static void nsp_cases_split_job_ranks(struct nsp_cases_job *job)
{
  struct nsp_cases_comm *w = &job->comms[0], *child;
  nsp_cases_allreduce(job, w, ncclFloat32, 256, ncclSum);
  child = nsp_cases_split(job, w, job->rank % 2, job->rank, job->rank % 2 ? "odd{1,3}" : "even{0,2}");
  nsp_cases_allreduce(job, child, ncclFloat32, 256, ncclSum);
  nsp_cases_allreduce(job, child, job->rank == 3 ? ncclFloat16 : ncclFloat32, 256, ncclSum);
}

/* group-error: each send/recv in a group of its own; rank 1 posts a third
 * recv that rank 0 never sends.  Without a stream the group runs at its
 * ncclGroupEnd, which times out and returns ncclSystemError: an error of
 * ncclGroupEnd (a call on no communicator) for a group on the world. */
static void nsp_cases_group_error(struct nsp_cases_job *job)
{
  nsp_cases_p2p_groups(job, 2, 3);
}

/* group-multi: each group holds an all-reduce on the world first, then a
 * send/recv step on half (color rank%2, key n-rank: half's ranks are not
 * job ranks); in the second group job rank 3 posts one recv more, which
 * no send matches.  Its ncclGroupEnd times out: the error belongs to
 * half, where the unmatched recv explains it, not to the world. */
static void nsp_cases_group_multi(struct nsp_cases_job *job)
{
  struct nsp_cases_comm *w = &job->comms[0], *half;
  const size_t count = 16;
  float *buf = nsp_cases_alloc(job, count, ncclFloat32), *out = nsp_cases_alloc(job, count, ncclFloat32);
  int it;
  half = nsp_cases_split(job, w, job->rank % 2, job->nranks - job->rank, "half");
  for (it = 0; it < 2; it++) {
    int next = (half->rank + 1) % half->nranks, prev = (half->rank + half->nranks - 1) % half->nranks;
    ++w->seq;
    ++half->p2p_seq;
    nsp_cases_check(job, w, NC(ncclGroupStart()), K_AR, ncclFloat32, count);
    nsp_cases_check(job, w, NC(ncclAllReduce(buf, buf, count, ncclFloat32, ncclSum, w->comm, nsp_cases_stream)),
                    K_AR, ncclFloat32, count);
    nsp_cases_check(job, half, NC(ncclSend(buf, count, ncclFloat32, next, half->comm, nsp_cases_stream)),
                    K_P2P, ncclFloat32, count);
    nsp_cases_check(job, half, NC(ncclRecv(out, count, ncclFloat32, prev, half->comm, nsp_cases_stream)),
                    K_P2P, ncclFloat32, count);
    if (it == 1 && job->rank == 3)
      nsp_cases_check(job, half, NC(ncclRecv(out, count, ncclFloat32, prev, half->comm, nsp_cases_stream)),
                      K_P2P, ncclFloat32, count);
    nsp_cases_check(job, half, NC(ncclGroupEnd()), K_P2P, ncclFloat32, count);
    nsp_cases_sync(job, half, K_P2P, ncclFloat32, count);
  }
  nsp_cases_free(job, buf);
  nsp_cases_free(job, out);
}

/* p2p-size: on half (as group-multi's), half rank 0 sends 16 floats
 * twice to half rank 1; half rank 1 receives 16, then job rank 0 (half
 * rank 1 of {0,2}) receives 32 where 16 were sent.  The stand-in accepts
 * that recv, waits and fails it: it was posted, so the finding is a size
 * mismatch (64 vs 128 bytes), not an unmatched send. */
static void nsp_cases_p2p_size(struct nsp_cases_job *job)
{
  struct nsp_cases_comm *w = &job->comms[0], *half;
  float *buf = nsp_cases_alloc(job, 32, ncclFloat32);
  ncclResult_t r1, r2;
  half = nsp_cases_split(job, w, job->rank % 2, job->nranks - job->rank, "half");
  if (half->rank == 0) {
    r1 = NC(ncclSend(buf, 16, ncclFloat32, 1, half->comm, nsp_cases_stream));
    r2 = NC(ncclSend(buf, 16, ncclFloat32, 1, half->comm, nsp_cases_stream));
  } else {
    r1 = NC(ncclRecv(buf, 16, ncclFloat32, 0, half->comm, nsp_cases_stream));
    r2 = NC(ncclRecv(buf, job->rank == 0 ? 32 : 16, ncclFloat32, 0, half->comm, nsp_cases_stream));
  }
  nsp_cases_check(job, half, r1, K_P2P, ncclFloat32, 16);
  nsp_cases_check(job, half, r2, K_P2P, ncclFloat32, 16);
  nsp_cases_sync(job, half, K_P2P, ncclFloat32, 16);
  nsp_cases_free(job, buf);
}

/* no-split2: the world splits in half (color rank%2, key n-rank: half
 * {3,1} has ranks 0 and 1 = job ranks 3 and 1); job rank 3 all-reduces
 * once more on half while the others split half again: job rank 1
 * waits in that ncclCommSplit for job rank 3. */
static void nsp_cases_no_split2(struct nsp_cases_job *job)
{
  struct nsp_cases_comm *w = &job->comms[0], *half;
  half = nsp_cases_split(job, w, job->rank % 2, job->nranks - job->rank, "half");
  nsp_cases_allreduce(job, half, ncclFloat32, 16, ncclSum);
  if (job->rank == 3) {
    fprintf(stderr, "rank 3: all-reduces #2 on half instead of splitting it\n");
    nsp_cases_allreduce(job, half, ncclFloat32, 16, ncclSum);
    return;
  }
  nsp_cases_split(job, half, 0, half->rank, "quarter");
}

/* err-split: half as no-split2's ({3,1}: ranks 0, 1 = job ranks 3, 1;
 * {2,0}); two all-reduces on half; the test makes job rank 3 fail the
 * second (NSP_STANDIN_FAIL) with an NET/IB message. */
static void nsp_cases_err_split(struct nsp_cases_job *job)
{
  struct nsp_cases_comm *w = &job->comms[0], *half;
  half = nsp_cases_split(job, w, job->rank % 2, job->nranks - job->rank, "half");
  nsp_cases_allreduce(job, half, ncclFloat32, 16, ncclSum);
  nsp_cases_allreduce(job, half, ncclFloat32, 16, ncclSum);
}

static int nsp_cases_env_int(const char *name, int dflt);
static void nsp_cases_sleep_ms(int ms);

/* c11: rank 1 straggles before #5 while rank 0 waits inside it. */
static void nsp_cases_c11(struct nsp_cases_job *job)
{
  struct nsp_cases_comm *w = &job->comms[0];
  int sleep_s = nsp_cases_env_int("NSP_C11_SLEEP_S", 30), seq;
  for (seq = 1; seq <= 4; seq++)
    nsp_cases_allreduce(job, w, ncclFloat32, 1024, ncclSum);
  if (job->rank == 1) {
    struct timespec ts = {sleep_s > 0 ? sleep_s : 0, 0};
    fprintf(stderr, "rank 1: straggling: sleeps %d s before all-reduce #5\n", sleep_s);
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
      ;
  }
  nsp_cases_allreduce_told(job, w, ncclFloat32, 1024);
  nsp_cases_allreduce(job, w, ncclFloat32, 1024, ncclSum);
}

/* killed-hang: rank 1 never arrives at #3; rank 0 waits in it. */
static void nsp_cases_killed_hang(struct nsp_cases_job *job)
{
  struct nsp_cases_comm *w = &job->comms[0];
  nsp_cases_allreduce(job, w, ncclFloat32, 1024, ncclSum);
  nsp_cases_allreduce(job, w, ncclFloat32, 1024, ncclSum);
  if (job->rank == 1) {
    fprintf(stderr, "rank 1: stops before all-reduce #3 and sleeps until killed\n");
    for (;;)
      pause();
  }
  nsp_cases_allreduce_told(job, w, ncclFloat32, 1024);
}

/* hang: killed-hang in blocking mode: rank 1 never arrives at #3, rank 0
 * waits inside ncclAllReduce #3 (the call does not return). */
static void nsp_cases_hang(struct nsp_cases_job *job)
{
  nsp_cases_killed_hang(job);
}

/* no-split: the world's ranks split it in two, but rank 3 takes another
 * code path: it never calls ncclCommSplit and all-reduces #3 on the world
 * instead.  Ranks 0-2 wait inside ncclCommSplit. */
static void nsp_cases_no_split(struct nsp_cases_job *job)
{
  struct nsp_cases_comm *w = &job->comms[0], *half;
  nsp_cases_allreduce(job, w, ncclFloat32, 1024, ncclSum);
  nsp_cases_allreduce(job, w, ncclFloat32, 1024, ncclSum);
  if (job->rank == 3) {
    fprintf(stderr, "rank 3: skips ncclCommSplit, all-reduces #3 on the world\n");
    nsp_cases_allreduce(job, w, ncclFloat32, 1024, ncclSum);
    return;
  }
  half = nsp_cases_split(job, w, job->rank % 2, job->rank, "half");
  nsp_cases_allreduce(job, half, ncclFloat32, 1024, ncclSum);
}

/* no-init (setup): rank 2 never calls ncclCommInitRank (it makes no NCCL
 * call at all: say it died in its data loader); ranks 0, 1 and 3 wait
 * inside ncclCommInitRank. */
static void nsp_cases_no_init_setup(struct nsp_cases_job *job)
{
  if (job->rank != 2)
    return;
  fprintf(stderr, "rank 2: never calls ncclCommInitRank; sleeps until killed\n");
  for (;;)
    pause();
}

static void nsp_cases_no_init(struct nsp_cases_job *job)
{
  nsp_cases_allreduce(job, &job->comms[0], ncclFloat32, 1024, ncclSum);
}

/* abort-exit0: after all-reduce #2, rank 1 aborts the world and exits 0
 * (a code path that tears its process group down early); rank 0 waits in
 * all-reduce #3. */
static void nsp_cases_abort_exit0(struct nsp_cases_job *job)
{
  struct nsp_cases_comm *w = &job->comms[0];
  nsp_cases_allreduce(job, w, ncclFloat32, 1024, ncclSum);
  nsp_cases_allreduce(job, w, ncclFloat32, 1024, ncclSum);
  if (job->rank == 1) {
    fprintf(stderr, "rank 1: aborts the world after all-reduce #2 and exits 0\n");
    NC(ncclCommAbort(w->comm));
    job->ncomms = 0;
    nsp_cases_exit(job, 0);
  }
  nsp_cases_allreduce_told(job, w, ncclFloat32, 1024);
}

/* launcher: a healthy job (20 all-reduces on the world) whose unique id a
 * launcher process made: rank 0 reads it from NSP_UID_FILE like the
 * others.  The launcher is one more process under nsp_launch with
 * NSP_CASES_LAUNCHER=1 (see main): it calls ncclGetVersion and
 * ncclGetUniqueId, writes the id and exits, joining no communicator. */
static void nsp_cases_launcher(struct nsp_cases_job *job)
{
  int i;
  for (i = 0; i < 20; i++)
    nsp_cases_allreduce(job, &job->comms[0], ncclFloat32, 256, ncclSum);
}

/* live: a healthy job that runs for NSP_LIVE_S seconds (default 8): an
 * all-reduce, then 10 ms of "compute", over and over; to be analysed
 * while it runs. */
static void nsp_cases_live(struct nsp_cases_job *job)
{
  struct nsp_cases_comm *w = &job->comms[0];
  int live_s = nsp_cases_env_int("NSP_LIVE_S", 8);
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  do {
    nsp_cases_allreduce(job, w, ncclFloat32, 256, ncclSum);
    nsp_cases_sleep_ms(10);
    clock_gettime(CLOCK_MONOTONIC, &t);
  } while (t.tv_sec - t0.tv_sec < live_s);
  /* The ranks leave together: the last all-reduce is every rank's. */
  nsp_cases_allreduce(job, w, ncclFloat32, 256, ncclSum);
}

/* ---- 2-D parallel job (c2d-*): TP=2 x DP=4 on 8 ranks --------------------
 * Communicators, all made with ncclCommSplit:
 *   tp      from the world, color rank/2 (key rank):   {0,1} {2,3} {4,5} {6,7}
 *   dp      from the world, color rank%2 (key rank):   {0,2,4,6} {1,3,5,7}
 *   shard   from dp, color dp-rank/2 (key dp-rank):    {0,2} {4,6} {1,3} {5,7}
 *           (two levels deep, as HSDP's shard groups)
 * Step s (from 1) of the "model": tp all-reduces the activations (forward,
 * 256 x float32) and their gradients (backward, 256 x float32), dp
 * all-reduces the gradients (1024 x float32), shard all-reduces a few
 * statistics (4 x float32).  So on tp the step's collectives are #2s-1 and
 * #2s, on dp and shard #s.  Every value is checked (nsp_cases_allreduce). */

#define NSP_C2D_TP 2
#define NSP_C2D_STEPS 200
#define NSP_C2D_MISMATCH_STEP 3 /* c2d-dp-mismatch: rank 5's dp #3 is float16 */
#define NSP_C2D_MISMATCH_RANK 5
#define NSP_C2D_STALL_STEP 5    /* c2d-stall: rank 3 stops before tp #9 */
#define NSP_C2D_STALL_RANK 3

enum nsp_c2d_mode { NSP_C2D_HEALTHY, NSP_C2D_DP_MISMATCH, NSP_C2D_STALL };

static void nsp_c2d_run(struct nsp_cases_job *job, enum nsp_c2d_mode mode)
{
  static const char *const tp_labels[] = {"tp{0,1}", "tp{2,3}", "tp{4,5}", "tp{6,7}"};
  static const char *const dp_labels[] = {"dp{0,2,4,6}", "dp{1,3,5,7}"};
  static const char *const shard_labels[] = {"shard{0,2}", "shard{4,6}", "shard{1,3}",
                                             "shard{5,7}"};
  struct nsp_cases_comm *w = &job->comms[0], *tp, *dp, *shard;
  int rank = job->rank, step, sleep_s = nsp_cases_env_int("NSP_C2D_SLEEP_S", 60);

  tp = nsp_cases_split(job, w, rank / NSP_C2D_TP, rank, tp_labels[rank / NSP_C2D_TP]);
  dp = nsp_cases_split(job, w, rank % NSP_C2D_TP, rank, dp_labels[rank % NSP_C2D_TP]);
  shard = nsp_cases_split(job, dp, dp->rank / 2, dp->rank,
                          shard_labels[(rank % NSP_C2D_TP) * 2 + dp->rank / 2]);
  if (tp->nranks != NSP_C2D_TP || dp->nranks != job->nranks / NSP_C2D_TP || shard->nranks != 2)
    nsp_cases_die(job, "unexpected split sizes: tp %d, dp %d, shard %d", tp->nranks,
                  dp->nranks, shard->nranks);
  for (step = 1; step <= NSP_C2D_STEPS; step++) {
    if (mode == NSP_C2D_STALL && step == NSP_C2D_STALL_STEP) {
      if (rank == NSP_C2D_STALL_RANK) {
        struct timespec ts = {sleep_s > 0 ? sleep_s : 0, 0};
        fprintf(stderr, "rank %d: stalls: sleeps %d s before all-reduce #%d on %s\n", rank,
                sleep_s, tp->seq + 1, tp->label);
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
          ;
      }
      nsp_cases_allreduce_told(job, tp, ncclFloat32, 256);
    } else {
      nsp_cases_allreduce(job, tp, ncclFloat32, 256, ncclSum); /* forward */
    }
    nsp_cases_allreduce(job, tp, ncclFloat32, 256, ncclSum); /* backward */
    /* the gradient bucket; autocast left rank 5's in float16 */
    nsp_cases_allreduce(job, dp,
                        mode == NSP_C2D_DP_MISMATCH && step == NSP_C2D_MISMATCH_STEP &&
                                rank == NSP_C2D_MISMATCH_RANK
                            ? ncclFloat16
                            : ncclFloat32,
                        1024, ncclSum);
    nsp_cases_allreduce(job, shard, ncclFloat32, 4, ncclSum);
  }
}

static void nsp_cases_c2d_healthy(struct nsp_cases_job *job)
{
  nsp_c2d_run(job, NSP_C2D_HEALTHY);
}

static void nsp_cases_c2d_dp_mismatch(struct nsp_cases_job *job)
{
  nsp_c2d_run(job, NSP_C2D_DP_MISMATCH);
}

static void nsp_cases_c2d_stall(struct nsp_cases_job *job)
{
  nsp_c2d_run(job, NSP_C2D_STALL);
}

/* ---- table and main --------------------------------------------------------- */

/* premul-handles: rank 1 makes a PreMulSum op first (and keeps it), so
 * its later ops have other handles; every rank then all-reduces with a
 * premulsum(float32 host 0.25) op, made and destroyed each step. */
static void nsp_cases_premul_handles(struct nsp_cases_job *job)
{
  struct nsp_cases_comm *w = &job->comms[0];
  ncclRedOp_t extra;
  float one = 1.0f;
  int step;
  if (job->rank == 1)
    nsp_cases_check(job, w, NC(ncclRedOpCreatePreMulSum(&extra, &one, ncclFloat32, ncclScalarHostImmediate,
                                                         w->comm)), K_PM, ncclFloat32, 1);
  for (step = 0; step < 4; step++) {
    nsp_cases_premulsum_by(job, w, ncclFloat32, 40, 0.25, 0);
    nsp_cases_allreduce(job, w, ncclFloat32, 64, ncclSum);
  }
  if (job->rank == 1)
    nsp_cases_check(job, w, NC(ncclRedOpDestroy(extra, w->comm)), K_PM, ncclFloat32, 1);
}

/* One collective of the shifted cases, its result checked but not its
 * values (once a rank is a collective off, the stand-in pairs calls that
 * differ and every value is wrong): 256 bytes each, so that any two of
 * them pair up without waiting. */
static void nsp_cases_coll_unchecked(struct nsp_cases_job *job, struct nsp_cases_comm *cc, int kind)
{
  void *buf = nsp_cases_alloc(job, 64 * (size_t)cc->nranks, ncclFloat64);
  ++cc->seq;
  if (kind == K_AR)
    nsp_cases_check(job, cc, NC(ncclAllReduce(buf, buf, 64, ncclFloat32, ncclSum, cc->comm, nsp_cases_stream)),
                    K_AR, ncclFloat32, 64);
  else if (kind == K_AG)
    nsp_cases_check(job, cc, NC(ncclAllGather(buf, buf, 128, ncclFloat16, cc->comm, nsp_cases_stream)), K_AG,
                    ncclFloat16, 128);
  else if (kind == K_RD) /* the metric: an all-gather of 64 float32 */
    nsp_cases_check(job, cc, NC(ncclAllGather(buf, buf, 64, ncclFloat32, cc->comm, nsp_cases_stream)), K_AG,
                    ncclFloat32, 64);
  else /* the step's last: an all-reduce (max) of 32 float64 */
    nsp_cases_check(job, cc, NC(ncclAllReduce(buf, buf, 32, ncclFloat64, ncclMax, cc->comm, nsp_cases_stream)),
                    K_AR, ncclFloat64, 32);
  nsp_cases_sync(job, cc, K_AR, ncclFloat32, 64);
  nsp_cases_free(job, buf);
}

/* extra-coll: 8 steps of all-reduce, all-gather, all-reduce (max); in
 * step 3 rank 1 also gathers a metric (an extra all-gather, seq 12).
 * Its last collective then waits for the others, which are done. */
static void nsp_cases_extra_coll(struct nsp_cases_job *job)
{
  struct nsp_cases_comm *w = &job->comms[0];
  int step;
  for (step = 0; step < 8; step++) {
    nsp_cases_coll_unchecked(job, w, K_AR);
    nsp_cases_coll_unchecked(job, w, K_AG);
    if (step == 3 && job->rank == 1)
      nsp_cases_coll_unchecked(job, w, K_RD);
    nsp_cases_coll_unchecked(job, w, K_RS);
  }
}

/* skipped-coll: the same loop; in step 3 rank 1 skips the all-gather
 * (seq 11).  The others' last collective waits for it. */
static void nsp_cases_skipped_coll(struct nsp_cases_job *job)
{
  struct nsp_cases_comm *w = &job->comms[0];
  int step;
  for (step = 0; step < 8; step++) {
    nsp_cases_coll_unchecked(job, w, K_AR);
    if (!(step == 3 && job->rank == 1))
      nsp_cases_coll_unchecked(job, w, K_AG);
    nsp_cases_coll_unchecked(job, w, K_RS);
  }
}

/* 3,000 steps of an all-reduce, an all-gather and a reduce-scatter on
 * the world; at step 2,900 rank 1 skips the all-gather (seq 8,702): a
 * long trace whose first 8,700 seqs every rank agrees on, for the trace
 * index (issue #16). */
static void nsp_cases_late_skip(struct nsp_cases_job *job)
{
  struct nsp_cases_comm *w = &job->comms[0];
  int step;
  for (step = 0; step < 3000; step++) {
    nsp_cases_coll_unchecked(job, w, K_AR);
    if (!(step == 2900 && job->rank == 1))
      nsp_cases_coll_unchecked(job, w, K_AG);
    nsp_cases_coll_unchecked(job, w, K_RS);
  }
}

struct nsp_cases_case {
  const char *id, *name;
  int nranks; /* 0: any even number >= 2 */
  int gpu;    /* always in stream mode */
  void (*setup)(struct nsp_cases_job *job);
  void (*run)(struct nsp_cases_job *job);
  const char *what;
};

static const struct nsp_cases_case nsp_cases_table[] = {
  {"c01", "amp-dtype", 2, 0, NULL, nsp_cases_c01, "seq 2: rank 0 float16, rank 1 float32"},
  {"c02", "even-odd", 4, 0, NULL, nsp_cases_c02, "1M elements: even ranks bfloat16, odd float32"},
  {"c03", "main-only", 4, 0, NULL, nsp_cases_c03, "seq 11: rank 0 all-gather, ranks 1-3 all-reduce"},
  {"c04", "different-op", 4, 0, NULL, nsp_cases_c04, "seq 33: rank 2 broadcast, others all-reduce"},
  {"c05", "count", 2, 0, NULL, nsp_cases_c05, "all-reduce 409600 vs 409598 float32"},
  {"c06", "root", 3, 0, NULL, nsp_cases_c06, "broadcast with roots 0, 0, 1"},
  {"c07", "first-error", 4, 0, nsp_cases_c07_setup, nsp_cases_c07,
   "rank 3 fails at seq 50 (NSP_STANDIN_FAIL), the others see ncclRemoteError"},
  {"c08", "p2p-count", 2, 0, NULL, nsp_cases_c08, "rank 0 sends 3 times, rank 1 receives twice"},
  {"c09", "split", 4, 0, NULL, nsp_cases_c09, "child {2,3} seq 3: rank 3 float16, rank 2 float32"},
  {"c10", "healthy", 0, 0, NULL, nsp_cases_c10, "1000 steps of every collective, checked"},
  {"c11", "straggler", 2, 1, NULL, nsp_cases_c11,
   "GPU: rank 1 sleeps NSP_C11_SLEEP_S (30) s before #5, rank 0 waits in it"},
  {"killed-hang", "killed-hang", 2, 1, NULL, nsp_cases_killed_hang,
   "GPU: rank 1 never arrives at #3, rank 0 waits in it until killed"},
  {"hang", "hang", 2, 0, NULL, nsp_cases_hang, "rank 1 never arrives at #3, rank 0 waits inside it (blocking)"},
  {"no-split", "no-split", 4, 0, NULL, nsp_cases_no_split,
   "ranks 0-2 split the world, rank 3 never calls ncclCommSplit (all-reduces #3 on the world)"},
  {"no-init", "no-init", 4, 0, nsp_cases_no_init_setup, nsp_cases_no_init,
   "rank 2 never calls ncclCommInitRank (no NCCL call at all), the others wait inside it"},
  {"abort-exit0", "abort-exit0", 2, 0, NULL, nsp_cases_abort_exit0,
   "rank 1 aborts the world after #2 and exits 0, rank 0 waits in #3"},
  {"live", "live", 0, 0, NULL, nsp_cases_live, "healthy, NSP_LIVE_S (8) s of all-reduces 10 ms apart"},
  {"launcher", "launcher", 0, 0, NULL, nsp_cases_launcher,
   "healthy, the unique id made by one more process with NSP_CASES_LAUNCHER=1 (no rank)"},
  {"c2d-healthy", "c2d-healthy", 8, 1, NULL, nsp_cases_c2d_healthy,
   "stream mode: TP=2 x DP=4 (+ DP shards), 200 steps, checked"},
  {"c2d-dp-mismatch", "c2d-dp-mismatch", 8, 1, NULL, nsp_cases_c2d_dp_mismatch,
   "stream mode: TP=2 x DP=4, dp{1,3,5,7} #3: rank 5 float16, 1,3,7 float32"},
  {"c2d-stall", "c2d-stall", 8, 1, NULL, nsp_cases_c2d_stall,
   "stream mode: TP=2 x DP=4, rank 3 sleeps NSP_C2D_SLEEP_S (60) s before tp{2,3} #9"},
  {"premul-handles", "premul-handles", 0, 0, NULL, nsp_cases_premul_handles,
   "rank 1 makes one PreMulSum op more first; all reduce with premulsum(float32 host 0.25)"},
  {"extra-coll", "extra-coll", 4, 0, NULL, nsp_cases_extra_coll,
   "rank 1 issues an extra all-gather at seq 12 in the middle of a loop"},
  {"skipped-coll", "skipped-coll", 4, 0, NULL, nsp_cases_skipped_coll,
   "rank 1 skips the all-gather at seq 11 in the middle of a loop"},
  {"late-skip", "late-skip", 4, 0, NULL, nsp_cases_late_skip,
   "3000 steps; rank 1 skips the all-gather at seq 8702 (the trace index steps over the rest)"},
  {"split-job-ranks", "split-job-ranks", 4, 0, NULL, nsp_cases_split_job_ranks,
   "odd{1,3} (child ranks 0,1) seq 2: job rank 3 float16, job rank 1 float32"},
  {"group-error", "group-error", 2, 0, NULL, nsp_cases_group_error,
   "rank 1's third recv has no send: its ncclGroupEnd times out (ncclSystemError)"},
  {"group-multi", "group-multi", 4, 0, NULL, nsp_cases_group_multi,
   "groups of a world all-reduce then send/recv on half; job rank 3 posts one recv more in the 2nd"},
  {"p2p-size", "p2p-size", 4, 0, NULL, nsp_cases_p2p_size,
   "half {2,0}: job rank 0's second recv takes 32 floats where 16 were sent (it fails waiting)"},
  {"no-split2", "no-split2", 4, 0, NULL, nsp_cases_no_split2,
   "half {3,1}: job rank 3 all-reduces #2 on half, job rank 1 waits in the split of half"},
  {"err-split", "err-split", 4, 0, NULL, nsp_cases_err_split,
   "half {3,1}: two all-reduces; with NSP_STANDIN_FAIL, job rank 3 fails the second"},
};

static int nsp_cases_env_int(const char *name, int dflt)
{
  const char *s = getenv(name);
  char *end;
  long v;
  if (!s || !*s)
    return dflt;
  v = strtol(s, &end, 10);
  return *end ? dflt : (int)v;
}

static void nsp_cases_sleep_ms(int ms)
{
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
  nanosleep(&ts, NULL);
}

/* Rank 0 publishes the id; the others wait for it. */
static void nsp_cases_exchange_id(struct nsp_cases_job *job, ncclUniqueId *id)
{
  const char *path = getenv("NSP_UID_FILE");
  int wait_ms = nsp_cases_env_int("NSP_UID_WAIT_MS", 30000), waited = 0;

  if (!path || !*path) {
    fprintf(stderr, "rank %d: NSP_UID_FILE is not set (nsp_launch sets it)\n", job->rank);
    nsp_cases_exit(job, 2);
  }
  if (job->rank == 0 && !job->id_from_launcher) {
    char tmp[4096];
    ncclResult_t r = NC(ncclGetUniqueId(id));
    FILE *f;
    if (r != ncclSuccess)
      nsp_cases_die(job, "ncclGetUniqueId returned %d", (int)r);
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    f = fopen(tmp, "wb");
    if (!f || fwrite(id, sizeof *id, 1, f) != 1 || fclose(f) != 0 || rename(tmp, path) != 0)
      nsp_cases_die(job, "cannot write %s: %s", path, strerror(errno));
    return;
  }
  for (;;) {
    int fd = open(path, O_RDONLY);
    if (fd >= 0) {
      ssize_t got = read(fd, id, sizeof *id);
      close(fd);
      if (got == (ssize_t)sizeof *id)
        return;
    }
    if (waited >= wait_ms) {
      fprintf(stderr, "rank %d: no unique id in %s after %d ms\n", job->rank, path, wait_ms);
      nsp_cases_exit(job, 1);
    }
    nsp_cases_sleep_ms(5);
    waited += 5;
  }
}

/* Loads the driver (and the runtime); 0 when every function stream mode
 * uses was found. */
static int nsp_cases_load_cuda(struct nsp_cases_job *job)
{
  const char *path = getenv("NSP_CASES_LIBCUDA"), *rt = getenv("NSP_CASES_LIBCUDART");
  void *lib = dlopen(path && *path ? path : NSP_CASES_LIBCUDA_DEFAULT, RTLD_NOW | RTLD_LOCAL);
  void *f;
  if (!lib) {
    fprintf(stderr, "rank %d: stream mode: %s\n", job->rank, dlerror());
    return -1;
  }
  if (!rt)
    rt = NSP_CASES_LIBCUDART_DEFAULT;
  if (*rt && !dlopen(rt, RTLD_NOW | RTLD_LOCAL)) {
    fprintf(stderr, "rank %d: stream mode: %s\n", job->rank, dlerror());
    return -1;
  }
#define NSP_CASES_CU(member, name)                                                 \
  do {                                                                             \
    if (!(f = dlsym(lib, name))) {                                                 \
      fprintf(stderr, "rank %d: stream mode: no %s in the CUDA driver\n", job->rank, name); \
      return -1;                                                                   \
    }                                                                              \
    memcpy(&nsp_cu.member, &f, sizeof f);                                          \
  } while (0)
  NSP_CASES_CU(Init, "cuInit");
  NSP_CASES_CU(DeviceGetCount, "cuDeviceGetCount");
  NSP_CASES_CU(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  NSP_CASES_CU(CtxSetCurrent, "cuCtxSetCurrent");
  NSP_CASES_CU(StreamCreate, "cuStreamCreate");
  NSP_CASES_CU(StreamSynchronize, "cuStreamSynchronize");
  NSP_CASES_CU(StreamDestroy, "cuStreamDestroy_v2");
  NSP_CASES_CU(GetErrorName, "cuGetErrorName");
#undef NSP_CASES_CU
  return 0;
}

/* Stream mode: the device LOCAL_RANK and one stream, as torch sets up. */
static void nsp_cases_stream_setup(struct nsp_cases_job *job)
{
  int ndev = 0, local = nsp_cases_env_int("LOCAL_RANK", job->rank);
  CUcontext ctx = NULL;
  CUstream s = NULL;
  CUresult r;
  if (nsp_cases_load_cuda(job) != 0)
    nsp_cases_exit(job, 1);
  r = nsp_cu.Init(0);
  if (r == CUDA_SUCCESS)
    r = nsp_cu.DeviceGetCount(&ndev);
  if (r == CUDA_SUCCESS && ndev < 1)
    r = CUDA_ERROR_NO_DEVICE;
  if (r == CUDA_SUCCESS)
    r = nsp_cu.DevicePrimaryCtxRetain(&ctx, local % ndev);
  if (r == CUDA_SUCCESS)
    r = nsp_cu.CtxSetCurrent(ctx);
  if (r == CUDA_SUCCESS)
    r = nsp_cu.StreamCreate(&s, CU_STREAM_NON_BLOCKING);
  if (r != CUDA_SUCCESS) {
    const char *es = NULL;
    nsp_cu.GetErrorName(r, &es);
    fprintf(stderr, "rank %d: stream mode: CUDA stand-in error %d (%s)\n", job->rank, (int)r,
            es ? es : "?");
    nsp_cases_exit(job, 1);
  }
  nsp_cases_stream = s;
  fprintf(stderr, "rank %d: stream mode (device %d)\n", job->rank, local % ndev);
}

/* NSP_CASES_LAUNCHER=1: a launcher, no rank: asks the NCCL version, makes
 * the unique id, writes it to NSP_UID_FILE (temp file + rename) and
 * exits, never joining a communicator.  Exit status 0, 1 on failure.
 * NSP_CASES_LAUNCHER=2: the same, then killed by SIGKILL. */
static int nsp_cases_launcher_main(void)
{
  const char *path = getenv("NSP_UID_FILE");
  char tmp[4096];
  ncclUniqueId id;
  int version = 0;
  FILE *f;
  if (!path || !*path || ncclGetVersion(&version) != ncclSuccess || ncclGetUniqueId(&id) != ncclSuccess) {
    fprintf(stderr, "launcher: no NSP_UID_FILE, or ncclGetVersion/ncclGetUniqueId failed\n");
    return 1;
  }
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
  f = fopen(tmp, "wb");
  if (!f || fwrite(&id, sizeof id, 1, f) != 1 || fclose(f) != 0 || rename(tmp, path) != 0) {
    fprintf(stderr, "launcher: cannot write %s: %s\n", path, strerror(errno));
    return 1;
  }
  fprintf(stderr, "launcher: NCCL %d, unique id written to %s\n", version, path);
  if (nsp_cases_env_int("NSP_CASES_LAUNCHER", 0) == 2)
    raise(SIGKILL); /* a helper killed: it leaves a crash ring, no clean exit */
  return 0;
}

/* The usage, then one line per case: its id, its name where the case has
 * one of its own (a case is run by either), its ranks, what it does. */
static void nsp_cases_usage(FILE *f)
{
  size_t i, n = sizeof nsp_cases_table / sizeof nsp_cases_table[0];
  int wid = 4, wname = 4, l;
  fprintf(f, "usage: nsp_cases CASE   (one process per rank; env RANK, WORLD_SIZE, NSP_UID_FILE)\n"
             "       nsp_cases --list (these cases, on stdout)\n");
  fprintf(f, "  env NSP_CASES_STREAM=1: stream mode (CUDA stand-in), always for GPU cases\n");
  for (i = 0; i < n; i++) {
    const struct nsp_cases_case *k = &nsp_cases_table[i];
    if ((l = (int)strlen(k->id)) > wid)
      wid = l;
    if (strcmp(k->name, k->id) && (l = (int)strlen(k->name)) > wname)
      wname = l;
  }
  fprintf(f, "CASE is a case's id or name:\n");
  fprintf(f, "  %-*s  %-*s  %-7s  %s\n", wid, "id", wname, "name", "ranks", "what");
  for (i = 0; i < n; i++) {
    const struct nsp_cases_case *k = &nsp_cases_table[i];
    char ranks[16];
    if (k->nranks)
      snprintf(ranks, sizeof ranks, "%d", k->nranks);
    else
      snprintf(ranks, sizeof ranks, "2,4,...");
    fprintf(f, "  %-*s  %-*s  %-7s  %s\n", wid, k->id, wname, strcmp(k->name, k->id) ? k->name : "", ranks,
            k->what);
  }
}

int main(int argc, char **argv)
{
  /* volatile: set after the setjmp below, read after a longjmp to it */
  const struct nsp_cases_case *volatile kase = NULL;
  struct nsp_cases_job job;
  ncclUniqueId id;
  ncclComm_t world = NULL;
  ncclResult_t r;
  size_t i;

  memset(&job, 0, sizeof job);
  if (setjmp(nsp_cases_return_jmp))
    return 5; /* NSP_CASES_DIE=return@N */
  if (argc == 2 && (!strcmp(argv[1], "--list") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
    nsp_cases_usage(stdout);
    return fflush(stdout) == 0 && !ferror(stdout) ? 0 : 1;
  }
  if (argc != 2) {
    nsp_cases_usage(stderr);
    return 2;
  }
  for (i = 0; i < sizeof nsp_cases_table / sizeof nsp_cases_table[0]; i++)
    if (!strcmp(argv[1], nsp_cases_table[i].id) || !strcmp(argv[1], nsp_cases_table[i].name))
      kase = &nsp_cases_table[i];
  if (!kase) {
    fprintf(stderr, "nsp_cases: unknown case \"%s\"\n", argv[1]);
    nsp_cases_usage(stderr);
    return 2;
  }
  if (nsp_cases_env_int("NSP_CASES_LAUNCHER", 0))
    return nsp_cases_launcher_main();
  job.id_from_launcher = !strcmp(kase->id, "launcher");
  job.rank = nsp_cases_env_int("RANK", -1);
  job.nranks = nsp_cases_env_int("WORLD_SIZE", -1);
  if (job.rank < 0 || job.nranks < 1 || job.rank >= job.nranks) {
    fprintf(stderr, "nsp_cases: RANK and WORLD_SIZE must be set (run under nsp_launch)\n");
    return 2;
  }
  if (kase->nranks ? job.nranks != kase->nranks : job.nranks < 2 || job.nranks % 2) {
    fprintf(stderr, "nsp_cases: %s needs %s ranks, not %d\n", kase->id,
            kase->nranks ? "exactly its" : "an even number of at least 2", job.nranks);
    return 2;
  }
  if (kase->setup)
    kase->setup(&job);
  if (kase->gpu || nsp_cases_env_int("NSP_CASES_STREAM", 0))
    nsp_cases_stream_setup(&job);
  nsp_cases_exchange_id(&job, &id);
  r = NC(ncclCommInitRank(&world, nsp_cases_env_int("NSP_CASES_NRANKS", job.nranks), id, job.rank));
  if (r != ncclSuccess)
    nsp_cases_die(&job, "ncclCommInitRank returned %d: %s", (int)r, NCS(ncclGetLastError(NULL)));
  nsp_cases_add_comm(&job, world, "world");
  kase->run(&job);
  for (i = (size_t)job.ncomms; i-- > 0;)
    NC(ncclCommDestroy(job.comms[i].comm));
  if (nsp_cases_stream && nsp_cu.StreamDestroy(nsp_cases_stream) != CUDA_SUCCESS)
    nsp_cases_die(&job, "cuStreamDestroy failed");
  nsp_cases_exit(&job, 0);
}
