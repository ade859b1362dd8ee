/* test_2d.c - a 2-D parallel job (TP=2 x DP=4, 8 ranks, nsp_cases
 * c2d-*) end to end: the ranks in stream mode on the CPU stand-ins for NCCL
 * and CUDA under libncclspy.so, then the analyzer on their traces.
 *
 * Communicators (nsp_cases.c, nsp_c2d_run), all split from the world:
 *   tp     color rank/2:    {0,1} {2,3} {4,5} {6,7}   (2 collectives a step)
 *   dp     color rank%2:    {0,2,4,6} {1,3,5,7}       (1 a step)
 *   shard  split from dp, color dp-rank/2: {0,2} {4,6} {1,3} {5,7} (1 a step)
 * Findings name communicator ranks; the tests also check the job ranks
 * behind them (the traces' RANK).
 *
 * usage: test_2d NSP_LAUNCH NSP_CASES LIBNCCLSPY TEST
 *   TEST: healthy              c2d-healthy: 200 steps, no findings
 *         dp-mismatch          c2d-dp-mismatch killed by the launcher while
 *                              it hangs: dtype-mismatch, then the hangs it
 *                              causes
 *         dp-mismatch-watchdog c2d-dp-mismatch with the stand-in's timeout
 *                              (a watchdog) ending the ranks
 *         stall                c2d-stall: rank 3 sleeps before a tp
 *                              all-reduce, the launcher's timeout ends it */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ncclspy/trace.h"
#include "nsp_analyze.h"
#include "nsp_names.h"

static const char *launch_exe, *cases_exe, *shim_so;

#define NRANKS 8

struct run {
  char dir[64];
  struct nsp_job *job;
  int launch_status; /* nsp_launch's exit status */
  double secs;       /* how long the job ran */
  char *log;         /* the launcher's and the ranks' stdout and stderr */
  const struct nsp_comm_info *world, *tp[4], *dp[2], *shard[4];
};

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = calloc(1, (size_t)(len > 0 ? len : 0) + 1);
  if (buf && len > 0 && fread(buf, 1, (size_t)len, f) != (size_t)len) {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  return buf;
}

/* The split child of `parent` with this color and size; fails when none. */
static const struct nsp_comm_info *child(struct run *r, uint64_t parent, int color, int nranks) {
  for (size_t i = 0; i < nsp_job_ncomms(r->job); i++) {
    const struct nsp_comm_info *c = nsp_job_comm(r->job, i);
    if (c->parent_id == parent && c->color == color && c->nranks == nranks) return c;
  }
  fail_msg("no communicator split from %016llx with color %d and %d ranks", (unsigned long long)parent,
           color, nranks);
  return NULL;
}

/* Runs case `name` on 8 ranks under the shim (launcher timeout `timeout_s`,
 * the stand-in's `standin_ms`), analyses the traces and finds the
 * communicators of the 2-D layout. */
static void run_case(struct run *r, const char *name, int timeout_s, int standin_ms) {
  memset(r, 0, sizeof *r);
  snprintf(r->dir, sizeof r->dir, "/tmp/nsp-2d-%s-XXXXXX", name);
  assert_non_null(mkdtemp(r->dir));
  char n[16], t[16], env_preload[4200], env_dir[128], env_uid[128], env_to[64], log[128];
  snprintf(n, sizeof n, "%d", NRANKS);
  snprintf(t, sizeof t, "%d", timeout_s);
  snprintf(env_preload, sizeof env_preload, "LD_PRELOAD=%s", shim_so);
  snprintf(env_dir, sizeof env_dir, "NCCLSPY_DIR=%s", r->dir);
  snprintf(env_uid, sizeof env_uid, "NSP_UID_FILE=%s/uid", r->dir);
  snprintf(env_to, sizeof env_to, "NSP_STANDIN_TIMEOUT_MS=%d", standin_ms);
  snprintf(log, sizeof log, "%s/ranks.log", r->dir);
  r->secs = now_s();
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    /* The ranks' own output goes beside the traces, out of the TAP stream. */
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0) _exit(126);
    execl(launch_exe, launch_exe, "-n", n, "-t", t, "-e", env_preload, "-e", env_dir, "-e", env_uid, "-e",
          env_to, "-e", "NSP_C2D_SLEEP_S=60", "--", cases_exe, name, (char *)NULL);
    _exit(127);
  }
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  r->secs = now_s() - r->secs;
  assert_true(WIFEXITED(status));
  r->launch_status = WEXITSTATUS(status);
  assert_int_not_equal(r->launch_status, 127);
  r->log = slurp(log);
  assert_non_null(r->log);
  print_message("# %s: nsp_launch exit %d after %.1f s\n", name, r->launch_status, r->secs);

  r->job = nsp_job_create();
  assert_non_null(r->job);
  assert_int_equal(nsp_job_add_path(r->job, r->dir), NRANKS);
  assert_int_equal(nsp_job_analyze(r->job), 0);
  for (size_t i = 0; i < nsp_job_nfindings(r->job); i++) {
    const struct nsp_finding *f = nsp_job_finding(r->job, i);
    if (f->cause != SIZE_MAX)
      print_message("# finding %zu (caused by %zu): %.900s\n", i, f->cause, f->message);
    else
      print_message("# finding %zu: %.900s\n", i, f->message);
  }
  for (size_t i = 0; i < nsp_job_ntraces(r->job); i++)
    assert_null(nsp_job_trace(r->job, i)->problem);

  /* world + 4 tp + 2 dp + 4 shard, every one traced on all its ranks */
  assert_int_equal(nsp_job_ncomms(r->job), 11);
  for (size_t i = 0; i < nsp_job_ncomms(r->job); i++) {
    const struct nsp_comm_info *c = nsp_job_comm(r->job, i);
    if (!c->parent_id && c->nranks == NRANKS) r->world = c;
    assert_int_equal(c->ntraced, (size_t)c->nranks);
  }
  assert_non_null(r->world);
  for (int k = 0; k < 4; k++) r->tp[k] = child(r, r->world->id, k, 2);
  for (int k = 0; k < 2; k++) r->dp[k] = child(r, r->world->id, k, 4);
  for (int k = 0; k < 4; k++) r->shard[k] = child(r, r->dp[k / 2]->id, k % 2, 2);
}

static void run_done(struct run *r) {
  nsp_job_destroy(r->job);
  free(r->log);
  if (!getenv("NSP_KEEP")) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", r->dir);
    assert_int_equal(system(cmd), 0);
  }
}

#define assert_log_has(r, text) \
  do { \
    if (!strstr((r)->log, (text))) fail_msg("the ranks' output lacks \"%s\":\n%s", (text), (r)->log); \
  } while (0)
#define assert_log_lacks(r, text) assert_null(strstr((r)->log, (text)))

/* The job rank (the trace's RANK) of a process on a side. */
static int job_rank(struct run *r, const struct nsp_proc *p) { return nsp_job_trace(r->job, p->trace)->rank; }

/* Asserts a side's communicator ranks ("0-1,3", as the report prints) and
 * the job ranks behind them, in the same order ("1,3,7"). */
static void assert_side(struct run *r, const struct nsp_side *s, const char *ranks, const char *job_ranks) {
  char buf[256], jb[256];
  size_t len = 0;
  nsp_format_ranks(buf, sizeof buf, s->ranks, s->nranks);
  assert_string_equal(buf, ranks);
  jb[0] = '\0';
  for (size_t i = 0; i < s->nranks; i++)
    len += (size_t)snprintf(jb + len, sizeof jb - len, "%s%d", i ? "," : "", job_rank(r, &s->procs[i]));
  assert_string_equal(jb, job_ranks);
}

/* Index of the finding of `kind` on communicator `c`; fails when none. */
static size_t find_on(struct run *r, int kind, const struct nsp_comm_info *c) {
  for (size_t i = 0; i < nsp_job_nfindings(r->job); i++) {
    const struct nsp_finding *f = nsp_job_finding(r->job, i);
    if (f->kind == kind && f->comm_id == c->id) return i;
  }
  fail_msg("no %s finding on communicator %016llx", nsp_finding_kind_name(kind), (unsigned long long)c->id);
  return SIZE_MAX;
}

static int has_finding_on(struct run *r, const struct nsp_comm_info *c) {
  for (size_t i = 0; i < nsp_job_nfindings(r->job); i++)
    if (nsp_job_finding(r->job, i)->comm_id == c->id) return 1;
  return 0;
}

/* A "hang" on a 2-rank tp communicator at `seq`: communicator rank 1 (job
 * rank `absent`) did not arrive, rank 0 (job rank `waiting`) waits in a
 * 256 x float32 all-reduce. */
static const struct nsp_finding *assert_tp_hang(struct run *r, size_t i, int seq, int absent, int waiting) {
  const struct nsp_finding *f = nsp_job_finding(r->job, i);
  char a[16], w[16];
  snprintf(a, sizeof a, "%d", absent);
  snprintf(w, sizeof w, "%d", waiting);
  assert_int_equal(f->kind, NSP_FIND_HANG);
  assert_int_equal(f->seq, seq);
  assert_int_equal(f->nsides, 2);
  assert_int_equal(f->sides[0].role, NSP_ROLE_NOT_ARRIVED);
  assert_side(r, &f->sides[0], "1", a);
  assert_int_equal(f->nodd, 1);
  assert_int_equal(f->odd_ranks[0], 1);
  assert_int_equal(f->sides[1].role, NSP_ROLE_WAITING);
  assert_side(r, &f->sides[1], "0", w);
  assert_int_equal(f->sides[1].call.api, NSP_API_AllReduce);
  assert_int_equal(f->sides[1].call.count, 256);
  assert_int_equal(f->sides[1].call.dtype, ncclFloat32);
  assert_int_equal(f->sides[1].procs[0].call.done, 0);
  return f;
}

/* The dtype-mismatch every dp-mismatch run starts with: on dp{1,3,5,7}
 * (split from the world, color 1), seq 3, child rank 2 = job rank 5 used
 * float16, child ranks 0,1,3 = job ranks 1,3,7 float32. */
static const struct nsp_finding *assert_dp_mismatch(struct run *r) {
  const struct nsp_finding *f = nsp_job_finding(r->job, 0);
  const struct nsp_comm_info *dp = r->dp[1];
  assert_int_equal(f->kind, NSP_FIND_DTYPE_MISMATCH);
  assert_int_equal(f->comm_id, dp->id);
  assert_non_null(f->comm);
  assert_ptr_equal(f->comm, dp);
  assert_int_equal(f->comm->parent_id, r->world->id);
  assert_int_equal(f->comm->color, 1);
  assert_int_equal(f->comm->nranks, 4);
  assert_int_equal(f->seq, 3);
  assert_int_equal(f->api, NSP_API_AllReduce);
  assert_int_equal(f->nsides, 2);
  assert_side(r, &f->sides[0], "0-1,3", "1,3,7");
  assert_int_equal(f->sides[0].call.dtype, ncclFloat32);
  assert_int_equal(f->sides[0].call.count, 1024);
  assert_side(r, &f->sides[1], "2", "5");
  assert_int_equal(f->sides[1].call.dtype, ncclFloat16);
  assert_int_equal(f->sides[1].call.count, 1024);
  assert_int_equal(f->nodd, 1);
  assert_int_equal(f->odd_ranks[0], 2);
  assert_int_equal(f->cause, SIZE_MAX);
  assert_log_has(r, "rank 5: wrong values after all-reduce #3 (float16) on dp{1,3,5,7}");
  return f;
}

static void test_healthy(void **state) {
  (void)state;
  struct run r;
  run_case(&r, "c2d-healthy", 120, 3000);
  assert_int_equal(r.launch_status, 0);
  assert_int_equal(nsp_job_nfindings(r.job), 0);
  /* 200 steps: 2 all-reduces a step on tp, 1 on dp and shard, all ranks */
  for (int k = 0; k < 4; k++) {
    assert_int_equal(r.tp[k]->max_seq, 400);
    assert_int_equal(r.tp[k]->ncoll, 2 * 400);
    assert_int_equal(r.shard[k]->max_seq, 200);
    assert_int_equal(r.shard[k]->ncoll, 2 * 200);
  }
  for (int k = 0; k < 2; k++) {
    assert_int_equal(r.dp[k]->max_seq, 200);
    assert_int_equal(r.dp[k]->ncoll, 4 * 200);
  }
  assert_int_equal(r.world->ncoll, 0);
  for (size_t i = 0; i < nsp_job_ntraces(r.job); i++) {
    const struct nsp_trace_info *t = nsp_job_trace(r.job, i);
    assert_true(t->tracking & NSP_TRACK_COMPLETION);
    assert_int_equal(t->calls, 800 + (t->rank == 0 ? 1 : 0)); /* rank 0: ncclGetUniqueId */
  }
  for (int k = 0; k < NRANKS; k++) {
    char line[64];
    snprintf(line, sizeof line, "rank %d returned ", k);
    assert_log_has(&r, line);
  }
  assert_log_lacks(&r, "wrong values");
  run_done(&r);
}

/* The job hangs (the stand-in would wait 60 s) until the launcher kills
 * it: rank 5 found wrong values and left; ranks 1,3,7 wait in dp #3, their
 * tp partners 0,2,6 in tp #7 (step 4), and rank 4 in tp #7 for rank 5. */
static void test_dp_mismatch(void **state) {
  (void)state;
  struct run r;
  run_case(&r, "c2d-dp-mismatch", 6, 60000);
  assert_int_equal(r.launch_status, 124);
  assert_dp_mismatch(&r);
  assert_log_has(&r, "nsp_launch: timeout after 6 s");

  /* The dp all-reduce itself never completed on 1,3,7: caused by [0].
   * Rank 5's completed (the shim saw it before rank 5 aborted; on a loaded
   * machine it may not have, and then counts it as abandoned). */
  size_t nc = find_on(&r, NSP_FIND_NEVER_COMPLETED, r.dp[1]);
  const struct nsp_finding *f = nsp_job_finding(r.job, nc);
  assert_int_equal(f->cause, 0);
  assert_int_equal(f->seq, 3);
  assert_int_equal(f->sides[0].role, NSP_ROLE_WAITING);
  assert_int_equal(f->sides[0].call.dtype, ncclFloat32);
  if (f->nsides == 2) {
    assert_side(&r, &f->sides[0], "0-1,3", "1,3,7");
    assert_int_equal(f->sides[1].role, NSP_ROLE_COMPLETED);
    assert_side(&r, &f->sides[1], "2", "5");
    assert_int_equal(f->sides[1].call.dtype, ncclFloat16);
    assert_int_equal(f->nodd, 3);
  } else {
    print_message("# rank 5's dp #3 counted as abandoned\n");
    assert_int_equal(f->nsides, 1);
    assert_side(&r, &f->sides[0], "0-3", "1,3,5,7");
    assert_true(f->sides[0].procs[2].done_flags & NSP_DONE_ABANDONED);
  }

  /* tp groups {0,1}, {2,3}, {6,7}: the odd rank is stuck in dp #3, so its
   * partner's tp #7 hangs, caused by the never-completed. */
  static const int stuck[] = {1, 3, -1, 7};
  for (int k = 0; k < 4; k++) {
    if (stuck[k] < 0) continue;
    size_t i = find_on(&r, NSP_FIND_HANG, r.tp[k]);
    f = assert_tp_hang(&r, i, 7, stuck[k], stuck[k] - 1);
    assert_int_equal(f->cause, nc);
    assert_int_equal(f->sides[0].procs[0].blocked.comm_id, r.dp[1]->id);
    assert_int_equal(f->sides[0].procs[0].blocked.seq, 3);
    assert_true(i > nc); /* listed after its cause */
  }
  /* tp{4,5}: rank 5 left after the mismatch; rank 4 waits in tp #7. */
  f = assert_tp_hang(&r, find_on(&r, NSP_FIND_HANG, r.tp[2]), 7, 5, 4);
  assert_int_equal(f->sides[0].procs[0].call.comm_id, r.dp[1]->id);
  assert_int_equal(f->sides[0].procs[0].call.seq, 3);
  assert_int_equal(f->sides[0].procs[0].call.dtype, ncclFloat16);
  /* Rank 5 never came because it left after the mismatch: its last call
   * was the odd side of [0], so the hang follows from [0].  (When rank 5's
   * dp #3 counted as abandoned, rank 5 is "stuck" in the never-completed.) */
  assert_true(f->cause == 0 || f->cause == nc);
  if (f->cause == 0) assert_non_null(strstr(f->message, "the last call of the ranks that did not arrive here"));

  /* Nothing else: the even dp group, the shards and the world are clean. */
  assert_int_equal(nsp_job_nfindings(r.job), 6);
  assert_false(has_finding_on(&r, r.dp[0]));
  for (int k = 0; k < 4; k++) assert_false(has_finding_on(&r, r.shard[k]));
  assert_false(has_finding_on(&r, r.world));
  run_done(&r);
}

/* As a job whose watchdog fires: the stand-in gives up after 2 s, the
 * ranks abort their communicators and exit 1.  Ranks 1,3,7 time out in dp
 * #3 (waiting for rank 5's bytes), their tp partners 0,2,6 and rank 4 in
 * tp #7; which times out first is a matter of scheduling.  The calls that
 * timed out completed on their streams (with an asynchronous error), so
 * each tp group shows as stopped-early, unless the shim had not yet seen
 * the completion when the rank aborted (a loaded machine): then it was
 * abandoned, and the tp group shows as a hang that follows the error. */
static void test_dp_mismatch_watchdog(void **state) {
  (void)state;
  struct run r;
  run_case(&r, "c2d-dp-mismatch", 120, 2000);
  assert_int_equal(r.launch_status, 1);
  assert_dp_mismatch(&r);
  assert_log_has(&r, "rank 1: watchdog: all-reduce #3 (float32 x1024) on dp{1,3,5,7}: asynchronous error 2");
  assert_log_has(&r, "rank 4: watchdog: all-reduce #7 (float32 x256) on tp{4,5}: asynchronous error 2");

  /* One error finding: the first timeout, then the others (all ranks but
   * rank 5, which found wrong values and aborted without an NCCL error).
   * Error findings name job ranks. */
  size_t ei = SIZE_MAX;
  for (size_t i = 0; i < nsp_job_nfindings(r.job); i++)
    if (nsp_job_finding(r.job, i)->kind == NSP_FIND_ERROR) {
      assert_int_equal(ei, SIZE_MAX);
      ei = i;
    }
  assert_int_not_equal(ei, SIZE_MAX);
  const struct nsp_finding *e = nsp_job_finding(r.job, ei);
  assert_int_equal(e->nodd, 1);
  assert_int_equal(e->sides[0].call.result, ncclSystemError);
  assert_int_equal(e->sides[0].procs[0].call.source, NSP_SRC_ASYNC);
  const char *le = e->sides[0].procs[0].call.last_error;
  assert_non_null(le);
  if (e->comm_id == r.dp[1]->id) {
    assert_true(e->odd_ranks[0] % 2 == 1 && e->odd_ranks[0] != 5);
    assert_non_null(strstr(le, "waiting for rank 2 at collective #3"));
  } else {
    assert_int_equal(e->comm_id, r.tp[e->odd_ranks[0] / 2]->id);
    assert_int_equal(e->odd_ranks[0] % 2, 0);
    assert_non_null(strstr(le, "waiting for rank 1 at collective #7"));
  }
  assert_int_equal(e->nsides, 2);
  assert_int_equal(e->sides[0].nranks + e->sides[1].nranks, 7);
  /* (When the first timeout is on a tp group, the analyzer says it follows
   * from that group's stopped-early; on dp{1,3,5,7} it links it to
   * nothing.  Not asserted.) */

  /* Each tp group: the rank of dp{1,3,5,7} stopped at tp #6 (what it did
   * last: dp #3, float16 on rank 5), its partner went on to #7. */
  for (int k = 0; k < 4; k++) {
    size_t n = 0, at = SIZE_MAX;
    for (size_t i = 0; i < nsp_job_nfindings(r.job); i++)
      if (i != ei && nsp_job_finding(r.job, i)->comm_id == r.tp[k]->id) {
        n++;
        at = i;
      }
    assert_int_equal(n, 1);
    const struct nsp_finding *f = nsp_job_finding(r.job, at);
    const struct nsp_proc *stopped;
    if (f->kind == NSP_FIND_HANG) {
      print_message("# tp group %d: a hang (its waiting call was abandoned at the abort)\n", k);
      assert_tp_hang(&r, at, 7, 2 * k + 1, 2 * k);
      assert_int_equal(f->cause, ei);
      stopped = &f->sides[0].procs[0];
    } else {
      char a[16], w[16];
      snprintf(a, sizeof a, "%d", 2 * k + 1);
      snprintf(w, sizeof w, "%d", 2 * k);
      assert_int_equal(f->kind, NSP_FIND_STOPPED_EARLY);
      assert_int_equal(f->seq, 6);
      assert_int_equal(f->nsides, 2);
      assert_side(&r, &f->sides[0], "1", a);
      assert_int_equal(f->sides[0].call.seq, 6);
      assert_side(&r, &f->sides[1], "0", w);
      assert_int_equal(f->sides[1].call.seq, 7);
      stopped = &f->sides[0].procs[0];
    }
    assert_int_equal(stopped->call.comm_id, r.dp[1]->id);
    assert_int_equal(stopped->call.seq, 3);
    assert_int_equal(stopped->call.dtype, k == 2 ? ncclFloat16 : ncclFloat32);
  }
  assert_int_equal(nsp_job_nfindings(r.job), 6);
  run_done(&r);
}

/* Rank 3 sleeps before step 5's forward all-reduce (tp{2,3} #9); rank 2
 * waits in it, and dp{0,2,4,6} #5 waits for rank 2, dp{1,3,5,7} #5 for
 * rank 3.  Only rank 3 is to blame. */
static void test_stall(void **state) {
  (void)state;
  struct run r;
  run_case(&r, "c2d-stall", 6, 60000);
  assert_int_equal(r.launch_status, 124);
  assert_log_has(&r, "rank 3: stalls: sleeps 60 s before all-reduce #9 on tp{2,3}");
  assert_log_has(&r, "rank 2: all-reduce #9 on tp{2,3} enqueued, waiting for it");
  assert_log_lacks(&r, "tp{2,3} completed");
  assert_log_has(&r, "nsp_launch: timeout after 6 s");

  /* tp{2,3} #9: rank 3 did not arrive, a root; rank 2 waits. */
  size_t tp = find_on(&r, NSP_FIND_HANG, r.tp[1]);
  const struct nsp_finding *f = assert_tp_hang(&r, tp, 9, 3, 2);
  assert_int_equal(f->cause, SIZE_MAX);
  assert_int_equal(f->sides[0].procs[0].blocked.api, -1); /* stuck in no NCCL call */

  /* dp{0,2,4,6} #5: child rank 1 (job rank 2) did not arrive because it
   * waits in tp{2,3} #9: caused by that hang; 0,4,6 wait. */
  size_t de = find_on(&r, NSP_FIND_HANG, r.dp[0]);
  f = nsp_job_finding(r.job, de);
  assert_int_equal(f->seq, 5);
  assert_int_equal(f->cause, tp);
  assert_int_equal(f->nsides, 2);
  assert_int_equal(f->sides[0].role, NSP_ROLE_NOT_ARRIVED);
  assert_side(&r, &f->sides[0], "1", "2");
  assert_int_equal(f->sides[0].procs[0].blocked.comm_id, r.tp[1]->id);
  assert_int_equal(f->sides[0].procs[0].blocked.seq, 9);
  assert_int_equal(f->sides[1].role, NSP_ROLE_WAITING);
  assert_side(&r, &f->sides[1], "0,2-3", "0,4,6");
  assert_int_equal(f->sides[1].call.count, 1024);
  assert_true(de > tp);

  /* dp{1,3,5,7} #5: child rank 1 (job rank 3) did not arrive; 1,5,7 wait.
   * Rank 3 is stuck in no NCCL call, so this hang is a root too (the same
   * rank to look at); a link to the tp hang would do as well. */
  size_t dodd = find_on(&r, NSP_FIND_HANG, r.dp[1]);
  f = nsp_job_finding(r.job, dodd);
  assert_int_equal(f->seq, 5);
  assert_true(f->cause == SIZE_MAX || f->cause == tp);
  assert_int_equal(f->nsides, 2);
  assert_int_equal(f->sides[0].role, NSP_ROLE_NOT_ARRIVED);
  assert_side(&r, &f->sides[0], "1", "3");
  assert_int_equal(f->sides[1].role, NSP_ROLE_WAITING);
  assert_side(&r, &f->sides[1], "0,2-3", "1,5,7");

  /* Only those three; every root names job rank 3 alone, the first
   * finding among them. */
  assert_int_equal(nsp_job_nfindings(r.job), 3);
  for (size_t i = 0; i < nsp_job_nfindings(r.job); i++) {
    f = nsp_job_finding(r.job, i);
    assert_int_equal(f->kind, NSP_FIND_HANG);
    if (f->cause != SIZE_MAX) continue;
    assert_int_equal(f->nodd, 1);
    assert_int_equal(f->sides[0].nranks, 1);
    assert_int_equal(job_rank(&r, &f->sides[0].procs[0]), 3);
  }
  assert_int_equal(nsp_job_finding(r.job, 0)->cause, SIZE_MAX);
  run_done(&r);
}

int main(int argc, char **argv) {
  static const struct {
    const char *name;
    struct CMUnitTest test;
  } all[] = {
      {"healthy", cmocka_unit_test(test_healthy)},
      {"dp-mismatch", cmocka_unit_test(test_dp_mismatch)},
      {"dp-mismatch-watchdog", cmocka_unit_test(test_dp_mismatch_watchdog)},
      {"stall", cmocka_unit_test(test_stall)},
  };
  if (argc != 5) {
    fprintf(stderr, "usage: %s NSP_LAUNCH NSP_CASES LIBNCCLSPY TEST\n", argv[0]);
    return 2;
  }
  launch_exe = argv[1];
  cases_exe = argv[2];
  shim_so = argv[3];
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
    if (!strcmp(argv[4], all[i].name)) {
      const struct CMUnitTest one[] = {all[i].test};
      return cmocka_run_group_tests_name(all[i].name, one, NULL, NULL);
    }
  }
  fprintf(stderr, "test_2d: unknown test %s\n", argv[4]);
  return 2;
}
