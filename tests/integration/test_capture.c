/* test_capture.c - the shim and CUDA graph capture (the stand-ins for NCCL
 * and the driver).
 *
 * usage: test_capture LIBNCCLSPY LIBCUDA
 * A worker (this program, run with the shim preloaded and the driver
 * stand-in LIBCUDA loaded) makes a 1-rank communicator and:
 *   1. calls ncclAllReduce on a stream being captured in GLOBAL mode: the
 *      capture must still succeed (the shim records no event into it),
 *      and the call's COMPLETION says captured;
 *   2. leaves an all-reduce pending on one stream (behind a task that
 *      blocks that stream for 50 ms) while it captures another stream in
 *      GLOBAL mode, as torch.cuda.graph does: the shim's poller queries
 *      the pending call's event all the while, and a query from a thread
 *      in the default GLOBAL mode would invalidate the capture
 *      (pytorch/pytorch#104487), so the capture must still succeed; the
 *      pending call's COMPLETION says it completed, seen by the poller
 *      during the capture (so the poller did query then).
 * The worker's exit status names the step that failed.  Output is TAP. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nsp_nccl.h"
#include "nsp_reader.h"
#include "nsp_standin_cuda.h"
#include "tests/nsp_tap.h"
#include "tests/nsp_trace_dir.h"

NSP_NCCL_DECLARE(nccl)

static struct {
  CUresult (*init)(unsigned);
  CUresult (*device_get)(CUdevice *, int);
  CUresult (*retain)(CUcontext *, CUdevice);
  CUresult (*set_current)(CUcontext);
  CUresult (*stream_create)(CUstream *, unsigned);
  CUresult (*stream_sync)(CUstream);
  CUresult (*begin)(CUstream, CUstreamCaptureMode);
  CUresult (*end)(CUstream, CUgraph *);
  nsp_standin_stream_enqueue_fn enqueue;
} cu;

#define LOAD(lib, var, name)                   \
  do {                                         \
    void *p_ = dlsym(lib, name);               \
    if (!p_) return 0;                         \
    memcpy(&(var), &p_, sizeof(var));          \
  } while (0)

static int load_cuda(const char *path) {
  void *lib = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
  if (!lib) return 0;
  LOAD(lib, cu.init, "cuInit");
  LOAD(lib, cu.device_get, "cuDeviceGet");
  LOAD(lib, cu.retain, "cuDevicePrimaryCtxRetain");
  LOAD(lib, cu.set_current, "cuCtxSetCurrent");
  LOAD(lib, cu.stream_create, "cuStreamCreate");
  LOAD(lib, cu.stream_sync, "cuStreamSynchronize");
  LOAD(lib, cu.begin, "cuStreamBeginCapture_v2");
  LOAD(lib, cu.end, "cuStreamEndCapture");
  LOAD(lib, cu.enqueue, "nsp_standin_stream_enqueue");
  return 1;
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Holds its stream for 50 ms: what is queued after it stays pending, and
 * completes while the other stream is still being captured. */
static void block_task(void *arg, int why) {
  (void)arg;
  if (why == NSP_STANDIN_TASK_RUN) sleep_ms(50);
}

/* times: where the worker writes when the second capture began and ended
 * (CLOCK_MONOTONIC ns, the shim's clock). */
static int worker(const char *libcuda, const char *times) {
  if (!load_cuda(libcuda)) return 10;
  CUdevice dev;
  CUcontext ctx;
  CUstream s_nccl, s_graph;
  if (cu.init(0) || cu.device_get(&dev, 0) || cu.retain(&ctx, dev) || cu.set_current(ctx) ||
      cu.stream_create(&s_nccl, CU_STREAM_NON_BLOCKING) || cu.stream_create(&s_graph, CU_STREAM_NON_BLOCKING))
    return 11;
  ncclUniqueId id;
  ncclComm_t comm;
  if (ncclGetUniqueId(&id) != ncclSuccess || ncclCommInitRank(&comm, 1, id, 0) != ncclSuccess) return 12;
  static float x[256], y[256];
  /* seq 1: an ordinary call, finished */
  if (ncclAllReduce(x, y, 256, ncclFloat32, ncclSum, comm, s_nccl) != ncclSuccess || cu.stream_sync(s_nccl))
    return 13;
  /* seq 2: into a graph */
  CUgraph graph = NULL;
  if (cu.begin(s_nccl, CU_STREAM_CAPTURE_MODE_GLOBAL)) return 14;
  if (ncclAllReduce(x, y, 256, ncclFloat32, ncclSum, comm, s_nccl) != ncclSuccess) return 15;
  if (cu.end(s_nccl, &graph) != CUDA_SUCCESS || !graph) return 16;
  /* seq 3: pending while another stream is captured */
  if (cu.enqueue(s_nccl, block_task, NULL) != NSP_STANDIN_ENQ_QUEUED) return 17;
  if (ncclAllReduce(x, y, 256, ncclFloat32, ncclSum, comm, s_nccl) != ncclSuccess) return 18;
  uint64_t began = now_ns();
  if (cu.begin(s_graph, CU_STREAM_CAPTURE_MODE_GLOBAL)) return 19;
  sleep_ms(150); /* the poller (NCCLSPY_POLL_MS=1) looks about 150 times; seq 3 completes at 50 ms */
  /* seq 4: captured on the other stream */
  if (ncclAllReduce(x, y, 256, ncclFloat32, ncclSum, comm, s_graph) != ncclSuccess) return 20;
  graph = NULL;
  if (cu.end(s_graph, &graph) != CUDA_SUCCESS || !graph) return 21;
  uint64_t ended = now_ns();
  FILE *f = fopen(times, "w");
  if (!f || fprintf(f, "%llu %llu\n", (unsigned long long)began, (unsigned long long)ended) < 0 || fclose(f))
    return 24;
  if (cu.stream_sync(s_nccl)) return 22;
  if (ncclCommDestroy(comm) != ncclSuccess) return 23;
  return 0;
}

/* The COMPLETION records of seqs 1-4. */
struct completions {
  uint32_t flags[5];
  uint64_t t_seen[5]; /* when the poller saw it (the record's count field) */
  int seen[5];
};

static void read_completions(const char *path, struct nsp_reader *r, void *arg) {
  struct completions *c = arg;
  struct nsp_rec rec;
  (void)path;
  while (r && nsp_reader_next(r, &rec) == 1)
    if (rec.kind == NSP_REC_COMPLETION && rec.seq >= 1 && rec.seq <= 4) {
      c->seen[rec.seq]++;
      c->flags[rec.seq] = rec.flags;
      c->t_seen[rec.seq] = rec.count;
    }
}

int main(int argc, char **argv) {
  if (argc == 4 && !strcmp(argv[1], "worker")) return worker(argv[2], argv[3]);
  if (argc != 3) {
    fprintf(stderr, "usage: %s LIBNCCLSPY LIBCUDA\n", argv[0]);
    return 2;
  }
  char self[4096], shim[4096], libcuda[4096];
  if (!realpath("/proc/self/exe", self) || !realpath(argv[1], shim) || !realpath(argv[2], libcuda)) return 2;
  char dir[] = "/tmp/nsp-capture-XXXXXX", trace_dir[64], times[64];
  if (!mkdtemp(dir)) return 2;
  snprintf(trace_dir, sizeof trace_dir, "%s/t", dir);
  snprintf(times, sizeof times, "%s/times", dir);
  pid_t pid = fork();
  if (pid == 0) {
    setenv("LD_PRELOAD", shim, 1);
    setenv("NCCLSPY_DIR", trace_dir, 1);
    setenv("NCCLSPY_POLL_MS", "1", 1);
    execl(self, self, "worker", libcuda, times, (char *)NULL);
    _exit(127);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  int code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  ok(code == 0 || (code > 16 && code < 100),
     "a call on a stream captured in GLOBAL mode leaves the capture valid (worker status %d; 16: "
     "cuStreamEndCapture failed)", code);
  ok(code == 0, "captures of another stream while a call is pending (the poller querying it) succeed, and the "
     "program runs to the end (worker status %d; 21: cuStreamEndCapture failed)", code);
  struct completions c = {0};
  int files = nsp_trace_dir_each(trace_dir, 0, read_completions, &c);
  const uint32_t *flags = c.flags;
  const uint64_t *t_seen = c.t_seen;
  const int *seen = c.seen;
  ok(files == 1 && seen[2] == 1 && flags[2] == NSP_DONE_CAPTURED && seen[4] == 1 && flags[4] == NSP_DONE_CAPTURED,
     "the captured calls (seq 2 and 4) have one COMPLETION each, flagged captured (%d file; flags 0x%x, 0x%x)",
     files, flags[2], flags[4]);
  const uint32_t done = NSP_DONE_OK, done_timed = NSP_DONE_OK | NSP_DONE_TIMED;
  ok(seen[1] == 1 && seen[3] == 1 && (flags[1] == done || flags[1] == done_timed) &&
         (flags[3] == done || flags[3] == done_timed),
     "the calls run outside a capture (seq 1 and 3) completed (flags 0x%x, 0x%x)", flags[1], flags[3]);
  /* The poller did query during the capture: it saw seq 3 complete there. */
  unsigned long long began = 0, ended = 0;
  FILE *tf = fopen(times, "r");
  int got = tf && fscanf(tf, "%llu %llu", &began, &ended) == 2;
  if (tf) fclose(tf);
  ok(got && t_seen[3] > began && t_seen[3] < ended,
     "the poller saw seq 3 complete while the other stream was being captured (%.1f ms into a %.1f ms capture)",
     ((double)t_seen[3] - (double)began) / 1e6, ((double)ended - (double)began) / 1e6);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (!getenv("NSP_KEEP") && system(cmd) != 0) fprintf(stderr, "# could not remove %s\n", dir);
  printf("1..%d\n", tests);
  return failures ? 1 : 0;
}
