/* nsp_an_cases.c - the failure cases as synthetic traces (see header). */
#include "nsp_an_cases.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nsp_names.h"

/* Two ranks per host, pids from 1000 up: like a 2-GPU-per-node job.
 * tracked: the shim tracked completion (GPU runs: CUDA 12.4, timing, and
 * call sites when `sites`); every call completes unless a case says not. */
static int make_ranks_ex(struct nsp_tracegen **g, int n, uint32_t *world, int tracked, int sites) {
  for (int r = 0; r < n; r++) {
    char host[32];
    snprintf(host, sizeof host, "node-%c", 'a' + r / 2);
    g[r] = nsp_tracegen_create(host, 1000u + (uint32_t)r, r);
    if (!g[r]) return -1;
    char ws[16];
    snprintf(ws, sizeof ws, "%d", n);
    if (nsp_tracegen_env(g[r], "WORLD_SIZE", ws) < 0) return -1;
    if (tracked) {
      nsp_tracegen_set_versions(g[r], 12040, 12040);
      nsp_tracegen_set_tracking(g[r], NSP_TRACK_COMPLETION | NSP_TRACK_TIMING | (sites ? NSP_TRACK_CALLSITES : 0));
      nsp_tracegen_set_auto_complete(g[r], 1, 50000);
      char uuid[64], pci[32];
      snprintf(uuid, sizeof uuid, "GPU-%08x-0000-0000-0000-%012x", 0xa0 + r / 2, r % 2);
      snprintf(pci, sizeof pci, "0000:%02x:00.0", 0x1b + r % 2);
      if (nsp_tracegen_set_gpu(g[r], uuid, pci, "NVIDIA H200") < 0) return -1;
    }
    nsp_tracegen_set_comm_name(g[r], "default_pg:0");
    world[r] = nsp_tracegen_comm(g[r], NSP_CASE_WORLD, r, n);
    if (!world[r]) return -1;
  }
  return 0;
}

static int make_ranks(struct nsp_tracegen **g, int n, uint32_t *world) { return make_ranks_ex(g, n, world, 0, 0); }

/* The native stack of a PyTorch all-reduce: NCCL, ncclspy and c10d frames
 * first (the report leaves them out), then the Python binding. */
static uint32_t torch_site(struct nsp_tracegen *g, const char *py_frame) {
  static const char *const mods[] = {
      "/usr/lib/x86_64-linux-gnu/libnccl.so.2",
      "/opt/ncclspy/lib/libncclspy.so",
      "/venv/lib/python3.11/site-packages/torch/lib/libtorch_cuda.so",
      "/venv/lib/python3.11/site-packages/torch/lib/libtorch_cuda.so",
      "/venv/lib/python3.11/site-packages/torch/lib/libtorch_python.so",
      "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0",
      "/usr/bin/python3.11",
  };
  static const uint64_t offs[] = {0x5a1f0, 0x3c40, 0x11d2e80, 0x11c9a10, 0x8f1200, 0x1f3e22, 0x1140};
  const char *syms[] = {"ncclAllReduce",
                        "ncclAllReduce",
                        "_ZN4c10d16ProcessGroupNCCL9allreduceERSt6vectorIN2at6TensorESaIS3_EERKNS_16AllreduceOptionsE",
                        "c10d::ProcessGroupNCCL::collective",
                        "torch::distributed::c10d::(anonymous namespace)::allreduce_",
                        py_frame,
                        "main"};
  return nsp_tracegen_callsite(g, 0, 7, mods, offs, syms);
}

#define AR(g, c, n, dt) nsp_tracegen_coll(g, NSP_API_AllReduce, c, n, dt, ncclSum, -1)

static int c01(struct nsp_tracegen **g, uint32_t *w) {
  /* AMP: rank 0's seq 2 runs under autocast. */
  if (make_ranks(g, 2, w) < 0) return -1;
  for (int r = 0; r < 2; r++) AR(g[r], w[r], 1024, ncclFloat32);
  AR(g[0], w[0], 1024, ncclFloat16);
  AR(g[1], w[1], 1024, ncclFloat32);
  AR(g[0], w[0], 1024, ncclFloat32); /* rank 0 went on with wrong values; rank 1 hung */
  return 2;
}

static int c02(struct nsp_tracegen **g, uint32_t *w) {
  if (make_ranks(g, 4, w) < 0) return -1;
  for (int r = 0; r < 4; r++) AR(g[r], w[r], 1u << 20, r % 2 ? ncclFloat32 : ncclBfloat16);
  return 4;
}

static int c03(struct nsp_tracegen **g, uint32_t *w) {
  if (make_ranks(g, 4, w) < 0) return -1;
  for (int r = 0; r < 4; r++)
    for (int i = 0; i < 10; i++) AR(g[r], w[r], 4096, ncclFloat32);
  nsp_tracegen_coll(g[0], NSP_API_AllGather, w[0], 1, ncclFloat32, -1, -1); /* "if main process" */
  for (int r = 1; r < 4; r++) {
    AR(g[r], w[r], 4096, ncclFloat32);
    AR(g[r], w[r], 4096, ncclFloat32);
  }
  return 4;
}

static int c04(struct nsp_tracegen **g, uint32_t *w) {
  if (make_ranks(g, 4, w) < 0) return -1;
  for (int r = 0; r < 4; r++)
    for (int i = 0; i < 32; i++) AR(g[r], w[r], 256, ncclFloat32);
  for (int r = 0; r < 4; r++) {
    if (r == 2) nsp_tracegen_coll(g[r], NSP_API_Broadcast, w[r], 256, ncclFloat32, -1, 0);
    else AR(g[r], w[r], 256, ncclFloat32);
  }
  return 4;
}

static int c05(struct nsp_tracegen **g, uint32_t *w) {
  if (make_ranks(g, 2, w) < 0) return -1;
  AR(g[0], w[0], 409600, ncclFloat32);
  AR(g[1], w[1], 409598, ncclFloat32);
  return 2;
}

static int c06(struct nsp_tracegen **g, uint32_t *w) {
  if (make_ranks(g, 3, w) < 0) return -1;
  static const int roots[3] = {0, 0, 1};
  for (int r = 0; r < 3; r++) nsp_tracegen_coll(g[r], NSP_API_Broadcast, w[r], 100, ncclInt64, -1, roots[r]);
  return 3;
}

static int c07(struct nsp_tracegen **g, uint32_t *w) {
  /* Ranks 2-3 sit on a host whose monotonic clock started elsewhere: only
   * the header's clock pair puts their events in the right order. */
  for (int r = 0; r < 4; r++) {
    char host[32];
    snprintf(host, sizeof host, "node-%c", 'a' + r / 2);
    g[r] = nsp_tracegen_create(host, 1000u + (uint32_t)r, r);
    if (!g[r]) return -1;
    if (r >= 2) nsp_tracegen_set_clock(g[r], 1700000000000000000ull, 900000000000ull);
    w[r] = nsp_tracegen_comm(g[r], NSP_CASE_WORLD, r, 4);
    if (!w[r]) return -1;
  }
  for (int r = 0; r < 4; r++)
    for (int i = 0; i < 49; i++) AR(g[r], w[r], 1024, ncclFloat32);
  nsp_tracegen_fail_next(g[3], ncclSystemError, "connection reset by peer");
  AR(g[3], w[3], 1024, ncclFloat32); /* seq 50 fails on rank 3 */
  for (int r = 0; r < 3; r++) {
    /* seq 50 is enqueued fine; the failure reaches them 2 s later */
    nsp_tracegen_set_step(g[r], 2000000000ull, 100);
    AR(g[r], w[r], 1024, ncclFloat32);
    nsp_tracegen_fail_next(g[r], ncclRemoteError, "remote process exited or there was a network error");
    AR(g[r], w[r], 1024, ncclFloat32); /* seq 51 */
  }
  return 4;
}

static int c08(struct nsp_tracegen **g, uint32_t *w) {
  if (make_ranks(g, 2, w) < 0) return -1;
  for (int i = 0; i < 3; i++) nsp_tracegen_p2p(g[0], NSP_API_Send, w[0], 1024, ncclFloat32, 1);
  for (int i = 0; i < 2; i++) nsp_tracegen_p2p(g[1], NSP_API_Recv, w[1], 1024, ncclFloat32, 0);
  return 2;
}

static int c09(struct nsp_tracegen **g, uint32_t *w) {
  if (make_ranks(g, 4, w) < 0) return -1;
  for (int r = 0; r < 4; r++) {
    AR(g[r], w[r], 8, ncclFloat32);
    int color = r / 2;
    nsp_tracegen_set_comm_name(g[r], color ? "tp:2" : "tp:1");
    uint32_t c = nsp_tracegen_split(g[r], w[r], color ? NSP_CASE_CHILD1 : NSP_CASE_CHILD0, color, r, r % 2, 2);
    if (!c) return -1;
    for (int i = 0; i < 3; i++) AR(g[r], c, 2048, ncclFloat32);
    AR(g[r], c, 2048, r == 3 ? ncclFloat16 : ncclFloat32); /* child seq 4 */
    AR(g[r], w[r], 8, ncclFloat32);
  }
  return 4;
}

static int c10(struct nsp_tracegen **g, uint32_t *w) {
  if (make_ranks(g, 4, w) < 0) return -1;
  uint32_t child[4];
  for (int r = 0; r < 4; r++) {
    nsp_tracegen_set_frame_records(g[r], 512);
    child[r] = nsp_tracegen_split(g[r], w[r], r / 2 ? NSP_CASE_CHILD1 : NSP_CASE_CHILD0, r / 2, r, r % 2, 2);
    if (!child[r]) return -1;
  }
  for (int step = 0; step < 1000; step++) {
    for (int r = 0; r < 4; r++) {
      AR(g[r], w[r], 1u << 16, ncclBfloat16);
      nsp_tracegen_coll(g[r], NSP_API_AllGather, w[r], 1024, ncclFloat32, -1, -1);
      nsp_tracegen_coll(g[r], NSP_API_ReduceScatter, w[r], 1024, ncclFloat32, ncclAvg, -1);
      /* Bcast and Broadcast are the same collective to the other ranks. */
      nsp_tracegen_coll(g[r], r == 1 ? NSP_API_Bcast : NSP_API_Broadcast, w[r], 16, ncclInt64, -1, 0);
      AR(g[r], child[r], 4096, ncclFloat32);
      nsp_tracegen_group(g[r], 1);
      nsp_tracegen_p2p(g[r], NSP_API_Send, w[r], 512 + (uint64_t)(step % 3), ncclFloat16, (r + 1) % 4);
      nsp_tracegen_p2p(g[r], NSP_API_Recv, w[r], 512 + (uint64_t)(step % 3), ncclFloat16, (r + 3) % 4);
      nsp_tracegen_group(g[r], 0);
    }
  }
  for (int r = 0; r < 4; r++) {
    nsp_tracegen_comm_end(g[r], child[r], NSP_API_CommDestroy);
    nsp_tracegen_comm_end(g[r], w[r], NSP_API_CommDestroy);
  }
  return 4;
}

/* c11 without completion tracking (a CPU run): only the wavefront shows. */
static int c11_notrack(struct nsp_tracegen **g, uint32_t *w) {
  if (make_ranks(g, 2, w) < 0) return -1;
  for (int i = 0; i < 5; i++) AR(g[0], w[0], 1000, ncclFloat32);
  for (int i = 0; i < 4; i++) AR(g[1], w[1], 1000, ncclFloat32); /* then sleeps 30 s */
  nsp_tracegen_set_exit(g[1], 0); /* and is killed */
  return 2;
}

/* c11 on GPU: rank 1 sleeps 30 s before seq 5 while rank 0 waits inside
 * it; the watchdog (30 s timeout) aborts rank 0's communicator, then the
 * job is killed. */
static int c11(struct nsp_tracegen **g, uint32_t *w) {
  if (make_ranks_ex(g, 2, w, 1, 1) < 0) return -1;
  for (int r = 0; r < 2; r++) {
    uint32_t site = torch_site(g[r], "_PyEval_EvalFrameDefault");
    if (!site) return -1;
    nsp_tracegen_set_site(g[r], site);
    for (int i = 0; i < 4; i++) AR(g[r], w[r], 1000, ncclFloat32);
  }
  nsp_tracegen_set_auto_complete(g[0], 0, 0);
  AR(g[0], w[0], 1000, ncclFloat32); /* seq 5: never completes */
  uint64_t t5 = nsp_tracegen_now(g[0]) - 1000;
  nsp_tracegen_set_time(g[0], t5 + 30000000000ull);
  if (nsp_tracegen_completion(g[0], w[0], NSP_API_AllReduce, 5, -1, 0, NSP_DONE_ABANDONED, 0, 0,
                              t5 + 30000000100ull) < 0 ||
      nsp_tracegen_comm_end(g[0], w[0], NSP_API_CommAbort) < 0)
    return -1;
  return 2;
}

/* c01 on GPU (2 x H200): rank 0's float16 seq 2 completes with wrong
 * values and it goes on to seq 3; rank 1's float32 seq 2 never completes. */
static int c01_gpu(struct nsp_tracegen **g, uint32_t *w) {
  if (make_ranks_ex(g, 2, w, 1, 1) < 0) return -1;
  for (int r = 0; r < 2; r++) {
    uint32_t site = torch_site(g[r], r ? "_PyEval_EvalFrameDefault" : "autocast_step");
    if (!site) return -1;
    nsp_tracegen_set_site(g[r], site);
    AR(g[r], w[r], 1024, ncclFloat32);
  }
  AR(g[0], w[0], 1024, ncclFloat16);
  nsp_tracegen_set_auto_complete(g[0], 0, 0);
  AR(g[0], w[0], 1024, ncclFloat32); /* seq 3: rank 1 never joins it */
  nsp_tracegen_set_auto_complete(g[1], 0, 0);
  AR(g[1], w[1], 1024, ncclFloat32); /* seq 2: hangs */
  return 2;
}

/* c12, a killed hang: 4 ranks, 1 s per step; rank 1 never arrives at
 * seq 3 (stuck outside NCCL); ranks 0, 2, 3 wait inside it and queue seq 4
 * behind it; the job is SIGTERMed: no rank ran its exit handlers, each
 * left its crash ring (RINGSTATE, the heartbeat at its last record). */
static int c12(struct nsp_tracegen **g, uint32_t *w) {
  if (make_ranks_ex(g, 4, w, 1, 0) < 0) return -1;
  for (int r = 0; r < 4; r++) {
    nsp_tracegen_set_step(g[r], 1000000000ull, 100);
    AR(g[r], w[r], 1u << 20, ncclBfloat16);
    AR(g[r], w[r], 1u << 20, ncclBfloat16);
    if (r != 1) {
      nsp_tracegen_set_auto_complete(g[r], 0, 0);
      AR(g[r], w[r], 1u << 20, ncclBfloat16); /* seq 3 */
      AR(g[r], w[r], 1u << 20, ncclBfloat16); /* seq 4, queued behind it */
    }
    if (nsp_tracegen_ringstate(g[r], 0, 0, 0, 0, 0) < 0) return -1;
  }
  return 4;
}

/* c13, a hang that causes another: 4 ranks, tensor-parallel pairs {0,1}
 * {2,3} and data-parallel pairs {0,2} {1,3}; each step all-reduces on TP
 * then on DP.  Rank 0 never reaches TP seq 3 (stuck in its data loader);
 * rank 1 waits in TP seq 3 and so never reaches DP seq 3, where rank 3
 * waits; rank 2 waits in DP seq 3 for rank 0. */
static int c13(struct nsp_tracegen **g, uint32_t *w) {
  if (make_ranks_ex(g, 4, w, 1, 0) < 0) return -1;
  uint32_t tp[4], dp[4];
  for (int r = 0; r < 4; r++) {
    nsp_tracegen_set_comm_name(g[r], r / 2 ? "tp:2" : "tp:1");
    tp[r] = nsp_tracegen_split(g[r], w[r], r / 2 ? NSP_CASE_CHILD1 : NSP_CASE_CHILD0, r / 2, r, r % 2, 2);
    nsp_tracegen_set_comm_name(g[r], r % 2 ? "dp:2" : "dp:1");
    dp[r] = nsp_tracegen_split(g[r], w[r], r % 2 ? NSP_CASE_DP1 : NSP_CASE_DP0, r % 2, r, r / 2, 2);
    if (!tp[r] || !dp[r]) return -1;
    nsp_tracegen_set_step(g[r], 1000000ull, 100); /* 1 ms per call */
    for (int step = 0; step < 2; step++) {
      AR(g[r], tp[r], 4096, ncclBfloat16);
      AR(g[r], dp[r], 1u << 16, ncclFloat32);
    }
  }
  /* step 3 */
  for (int r = 1; r < 4; r++) {
    if (r == 1) nsp_tracegen_set_auto_complete(g[r], 0, 0); /* its TP partner never comes */
    AR(g[r], tp[r], 4096, ncclBfloat16);
    if (r == 1) continue; /* blocked: never reaches DP seq 3 */
    nsp_tracegen_set_auto_complete(g[r], 0, 0);
    AR(g[r], dp[r], 1u << 16, ncclFloat32); /* rank 2 waits for rank 0, rank 3 for rank 1 */
  }
  return 4;
}

/* c14 (a CPU run without completion tracking, like the stand-in's
 * c2d-dp-mismatch): tensor parallel {0,1} and {2,3} (CHILD0, CHILD1),
 * data parallel {0,2} and {1,3} (DP0, DP1), so job rank 3 is rank 1 of
 * both its communicators.  Two steps of one TP and one DP all-reduce; at
 * step 3 job rank 3 all-reduces float16 on DP1 while job rank 1 uses
 * float32, and both block there (their last call); ranks 0 and 2 go on to
 * TP seq 4, where their partners never come.  3 s later the timeouts, as
 * async errors: on DP1 (job rank 3 first, then 1), then on the TP
 * communicators (0, 2). */
static int c14(struct nsp_tracegen **g, uint32_t *w) {
  if (make_ranks(g, 4, w) < 0) return -1;
  uint32_t tp[4], dp[4];
  for (int r = 0; r < 4; r++) {
    tp[r] = nsp_tracegen_split(g[r], w[r], r / 2 ? NSP_CASE_CHILD1 : NSP_CASE_CHILD0, r / 2, r, r % 2, 2);
    dp[r] = nsp_tracegen_split(g[r], w[r], r % 2 ? NSP_CASE_DP1 : NSP_CASE_DP0, r % 2, r, r / 2, 2);
    if (!tp[r] || !dp[r]) return -1;
    for (int step = 1; step <= 3; step++) {
      AR(g[r], tp[r], 4096, ncclFloat32);
      AR(g[r], dp[r], 1024, step == 3 && r == 3 ? ncclFloat16 : ncclFloat32);
    }
    if (r % 2 == 0) AR(g[r], tp[r], 4096, ncclFloat32); /* TP seq 4: the partner never comes */
  }
  static const int order[4] = {3, 1, 0, 2};
  for (int k = 0; k < 4; k++) {
    int r = order[k];
    nsp_tracegen_set_time(g[r], 4000000000ull + (uint64_t)k * 1000000);
    if (nsp_tracegen_async_error(g[r], r % 2 ? dp[r] : tp[r], ncclSystemError, "stand-in: timed out after 3000 ms") <
        0)
      return -1;
  }
  return 4;
}

static const struct {
  const char *name;
  int (*fn)(struct nsp_tracegen **, uint32_t *);
} cases[] = {{"c01", c01}, {"c02", c02}, {"c03", c03}, {"c04", c04}, {"c05", c05}, {"c06", c06},
             {"c07", c07}, {"c08", c08}, {"c09", c09}, {"c10", c10}, {"c11", c11},
             {"c11-notrack", c11_notrack}, {"c01-gpu", c01_gpu}, {"c12", c12}, {"c13", c13},
             {"c14", c14}};

const char *nsp_case_name(size_t i) { return i < sizeof cases / sizeof *cases ? cases[i].name : NULL; }

int nsp_case_build(const char *name, struct nsp_tracegen **g) {
  for (int i = 0; i < NSP_CASE_MAX_RANKS; i++) g[i] = NULL;
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    if (strcmp(cases[i].name, name)) continue;
    uint32_t w[NSP_CASE_MAX_RANKS];
    int n = cases[i].fn(g, w);
    if (n < 0)
      for (int r = 0; r < NSP_CASE_MAX_RANKS; r++) {
        nsp_tracegen_destroy(g[r]);
        g[r] = NULL;
      }
    return n;
  }
  return -1;
}

int nsp_case_write(const char *name, const char *dir) {
  struct nsp_tracegen *g[NSP_CASE_MAX_RANKS];
  int n = nsp_case_build(name, g);
  int ret = n;
  for (int r = 0; r < n; r++)
    if (nsp_tracegen_write(g[r], dir, SIZE_MAX, NULL, 0) < 0) ret = -1;
  for (int r = 0; r < (n > 0 ? n : 0); r++) nsp_tracegen_destroy(g[r]);
  return ret;
}

int nsp_case_add(const char *name, struct nsp_job *job) {
  struct nsp_tracegen *g[NSP_CASE_MAX_RANKS];
  int n = nsp_case_build(name, g);
  int ret = n;
  for (int r = 0; r < n; r++) {
    const uint8_t *data;
    size_t len;
    char tname[64];
    snprintf(tname, sizeof tname, "%s.rank%d.ncclspy", name, r);
    if (nsp_tracegen_bytes(g[r], &data, &len) < 0 || nsp_job_add_mem(job, tname, data, len) != 1) ret = -1;
  }
  for (int r = 0; r < (n > 0 ? n : 0); r++) nsp_tracegen_destroy(g[r]);
  return ret;
}

int nsp_case_write_file(const char *dir, const char *name, const void *data, size_t len) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  int ok = fwrite(data, 1, len, f) == len;
  return fclose(f) == 0 && ok ? 0 : -1;
}

struct nsp_job *nsp_case_job(int threads) {
  struct nsp_job *job = nsp_job_create();
  if (job && (nsp_job_set_now(job, NSP_CASE_NOW_NS) || nsp_job_set_local_host(job, "") ||
              nsp_job_set_threads(job, threads))) {
    nsp_job_destroy(job);
    job = NULL;
  }
  return job;
}

uint64_t nsp_case_rng(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

int nsp_case_mkdtemp(char *dir, size_t dirlen) {
  const char *tmp = getenv("TMPDIR");
  snprintf(dir, dirlen, "%s/ncclspy-test-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  return mkdtemp(dir) ? 0 : -1;
}

void nsp_case_rmdir(const char *dir) {
  DIR *d = opendir(dir);
  if (d) {
    struct dirent *e;
    while ((e = readdir(d))) {
      if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
      char p[1024];
      snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
      unlink(p);
    }
    closedir(d);
  }
  rmdir(dir);
}
