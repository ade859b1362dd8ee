/* test_an_end.c - nothing unseen (format 1.5): how each process ended
 * (EXIT records, the crash ring's state, /proc), calls in flight (INFLIGHT
 * records) taking part in the comparison and the hang rule, ranks waiting
 * in a communicator's creation for ranks that never made the call
 * ("comm-init-wait"), calls killed processes never returned from
 * ("call-never-returned"), a libnccl the shim does not interpose, a GPU
 * shared by processes with their own NCCL_HOSTID, and a summary that
 * never says "No problems found" about what the traces did not see. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nsp_analyze.h"
#include "nsp_names.h"
#include "nsp_report.h"
#include "nsp_tracegen.h"
#include "nsp_an_test.h"
#include "tests/nsp_report_capture.h"

/* The generator's default clock pair: realtime 1.7e18 at monotonic 1e9. */
#define RT0 1700000000000000000ll
#define MONO0 1000000000ull
#define SEC 1000000000ull

#define WORLD 0xaaaaull

/* Rank r of n on WORLD (host h<r>, pid 100+r); tracked: completion
 * tracking with every returned call completing. */
static struct nsp_tracegen *gen(int r, int n, uint32_t *w, int tracked) { return rank_on(r, n, WORLD, tracked, w); }

#define AR(g, c) nsp_tracegen_coll(g, NSP_API_AllReduce, c, 8, ncclFloat32, ncclSum, -1)

/* The wall clock of monotonic time m on a generator's default clock. */
static int64_t wall_of(uint64_t m) { return RT0 + (int64_t)(m - MONO0); }

/* A job of n generators, analysed with "now" at now_ns (0: the clock) and
 * /proc never read. */
static struct nsp_job *analyse_at(struct nsp_tracegen **g, int n, int64_t now_ns) {
  struct nsp_job *job = job_of_gens_at(g, n, now_ns, "");
  assert_int_equal(nsp_job_analyze(job), 0);
  return job;
}

/* n ranks of gen() into g and w, each making `calls` all-reduces. */
static void ranks(struct nsp_tracegen **g, uint32_t *w, int n, int tracked, int calls) {
  for (int r = 0; r < n; r++) {
    g[r] = gen(r, n, &w[r], tracked);
    for (int i = 0; i < calls; i++) assert_int_equal(AR(g[r], w[r]), (uint64_t)i + 1);
  }
}

/* The only finding of a kind, or a test failure. */
static const struct nsp_finding *the(const struct nsp_job *job, int kind) {
  const struct nsp_finding *f = NULL;
  for (size_t i = 0; i < nsp_job_nfindings(job); i++)
    if (nsp_job_finding(job, i)->kind == kind) {
      assert_null(f);
      f = nsp_job_finding(job, i);
    }
  if (!f) fail_msg("no %s finding; summary: %s", nsp_finding_kind_name(kind), nsp_job_summary(job));
  return f;
}

static void print_findings(const struct nsp_job *job) {
  for (size_t i = 0; i < nsp_job_nfindings(job); i++)
    print_message("# [%zu] %s: %.900s\n", i + 1, nsp_finding_kind_name(nsp_job_finding(job, i)->kind),
                  nsp_job_finding(job, i)->message);
}

/* The text report of a job, as a string (freed by the caller). */
static char *text_of(const struct nsp_job *job) { return nsp_report_capture(nsp_report_text, job); }

/* A process killed: its ring left behind with a heartbeat long before
 * any "now" the tests use. */
static void killed(struct nsp_tracegen *g, uint64_t ninflight) {
  /* heartbeat: 5 s after the calls in flight that follow (killed while
   * they waited: a call less than 1 s old when its process was killed is
   * no evidence of a hang) */
  assert_int_equal(nsp_tracegen_ringstate(g, nsp_tracegen_now(g) + 5000000000ull, 0, 0, ninflight, 0), 0);
}

/* A SIGNAL record now: SIGSEGV, SEGV_MAPERR, no stack. */
static void sigsegv(struct nsp_tracegen *g) {
  struct nsp_rec s;
  memset(&s, 0, sizeof s);
  s.kind = NSP_REC_SIGNAL;
  s.peer = s.dtype = s.redop = -1;
  nsp_rec_signal_set_signo(&s, 11);
  nsp_rec_signal_set_code(&s, 1);
  nsp_rec_signal_set_t(&s, nsp_tracegen_now(g));
  assert_int_equal(nsp_tracegen_record(g, &s), 0);
}

/* ---- what `ncclspy watch` asks of a running job ---------------------------- */

struct progress_seen {
  size_t calls, files_done, files_total;
  uint64_t records, bytes_done, bytes_total;
};
static void on_progress(void *arg, const struct nsp_job_progress *p) {
  struct progress_seen *s = arg;
  assert_true(p->files_done <= p->files_total);
  assert_true(p->bytes_done <= p->bytes_total);
  s->calls++;
  s->files_done = p->files_done;
  s->files_total = p->files_total;
  s->records = p->records;
  s->bytes_done = p->bytes_done;
  s->bytes_total = p->bytes_total;
}

/* Two running ranks (rings with fresh heartbeats): rank 0 has waited
 * 3 s in flight in all-reduce #3, rank 1 made #1-2 only.  Within the
 * default 10 s live window that is no hang; with the window's floor at
 * 2 s (`watch --hang-after 2`) it is one, rank 1 the rank to look at.
 * The status line's figures: seqs 2..3, rank 0 quiet since its entry;
 * the progress callback saw both files and every record. */
static void test_watch_live_min(void **state) {
  (void)state;
  for (int floor = 0; floor < 2; floor++) {
    struct nsp_tracegen *g[2];
    uint32_t w[2];
    uint64_t entry = 0, hb = 0;
    for (int r = 0; r < 2; r++) {
      g[r] = gen(r, 2, &w[r], 0);
      AR(g[r], w[r]);
      AR(g[r], w[r]);
      entry = nsp_tracegen_now(g[r]);
      hb = entry + 3 * SEC;
      assert_int_equal(nsp_tracegen_ringstate(g[r], hb, 0, 0, r == 0, 0), 0);
      if (r == 0)
        assert_int_equal(
            nsp_tracegen_inflight_coll(g[r], NSP_API_AllReduce, w[r], 8, ncclFloat32, ncclSum, -1, entry, NULL), 0);
    }
    struct nsp_job *job = nsp_job_create();
    assert_int_equal(nsp_job_set_live_min(job, 0), NSP_AN_EINVAL);
    assert_int_equal(nsp_job_set_now(job, wall_of(hb) + (int64_t)SEC / 2), 0);
    assert_int_equal(nsp_job_set_local_host(job, ""), 0);
    if (floor) assert_int_equal(nsp_job_set_live_min(job, 2 * (int64_t)SEC), 0);
    struct progress_seen seen = {0};
    nsp_job_set_progress(job, on_progress, &seen);
    uint64_t bytes = add_gens(job, g, 2);
    assert_int_equal(nsp_job_set_live_min(job, SEC), NSP_AN_ESTATE); /* traces read already */
    assert_int_equal(nsp_job_analyze(job), 0);
    print_findings(job);
    assert_int_equal(seen.calls, 2);
    assert_int_equal(seen.files_done, 2);
    assert_int_equal(seen.files_total, 2);
    assert_int_equal(seen.records, nsp_job_trace(job, 0)->records + nsp_job_trace(job, 1)->records);
    assert_int_equal(seen.bytes_done, bytes);
    assert_int_equal(seen.bytes_total, bytes);
    for (int r = 0; r < 2; r++) assert_int_equal(nsp_job_trace(job, r)->end.state, NSP_END_RUNNING);
    assert_int_equal(nsp_job_ncomms(job), 1);
    assert_int_equal(nsp_job_comm_min_seq(job, 0), 2);
    assert_int_equal(nsp_job_comm(job, 0)->max_seq, 3);
    assert_int_equal(nsp_job_comm_min_seq(job, 1), 0);
    assert_int_equal(nsp_job_trace_last_call_ns(job, 0), wall_of(entry));
    assert_int_equal(nsp_job_trace_last_call_ns(job, 2), 0);
    if (!floor) {
      assert_int_equal(nsp_job_nfindings(job), 0);
    } else {
      const struct nsp_finding *h = the(job, NSP_FIND_HANG);
      assert_int_equal(h->seq, 3);
      assert_ranks(h->odd_ranks, h->nodd, "1");
    }
    nsp_job_destroy(job);
  }
}

/* ---- calls in flight in the comparison ------------------------------------ */

/* Four ranks of a blocking communicator: seqs 1-10 returned everywhere;
 * at seq 11 rank 0 is in flight in an all-gather while ranks 1-3 are in
 * flight in an all-reduce.  A kind mismatch at seq 11 (without the calls
 * in flight, ranks 1-3 would read as "stopped at seq 10"); the calls never
 * completed follow from it; no wavefront.  Killed processes (stale rings)
 * or running ones (young calls): the same mismatch. */
static void inflight_mismatch(int live) {
  struct nsp_tracegen *g[4];
  uint32_t w[4];
  uint64_t hb = 0;
  for (int r = 0; r < 4; r++) {
    g[r] = gen(r, 4, &w[r], 0);
    for (int i = 0; i < 10; i++) assert_int_equal(AR(g[r], w[r]), (uint64_t)i + 1);
    hb = nsp_tracegen_now(g[r]) + 5 * SEC;
    assert_int_equal(nsp_tracegen_ringstate(g[r], hb, 0, 0, 1, 0), 0);
    uint64_t seq = 0;
    if (r == 0)
      assert_int_equal(nsp_tracegen_inflight_coll(g[r], NSP_API_AllGather, w[r], 8, ncclFloat32, -1, -1, 0, &seq), 0);
    else
      assert_int_equal(nsp_tracegen_inflight_coll(g[r], NSP_API_AllReduce, w[r], 8, ncclFloat32, ncclSum, -1, 0, &seq), 0);
    assert_int_equal(seq, 11);
  }
  struct nsp_job *job = analyse_at(g, 4, live ? wall_of(hb) + 2 * (int64_t)SEC : 0);
  print_findings(job);
  const struct nsp_finding *f = nsp_job_finding(job, 0);
  assert_int_equal(f->kind, NSP_FIND_KIND_MISMATCH);
  assert_true(f->comm_id == WORLD);
  assert_int_equal(f->seq, 11);
  assert_int_equal(f->nsides, 2);
  assert_side(&f->sides[0], "0");
  assert_int_equal(f->sides[0].call.api, NSP_API_AllGather);
  assert_side(&f->sides[1], "1-3");
  assert_int_equal(f->sides[1].call.api, NSP_API_AllReduce);
  assert_ranks(f->odd_ranks, f->nodd, "0");
  assert_int_equal(f->api, NSP_API_AllGather);
  assert_contains(f->message, "ranks made different collectives at seq 11: rank 0 all-gather 8 x float32");
  assert_int_equal(count_kind(job, NSP_FIND_STOPPED_EARLY), 0);
  for (int r = 0; r < 4; r++) {
    const struct nsp_trace_info *t = nsp_job_trace(job, (size_t)r);
    assert_int_equal(t->end.state, live ? NSP_END_RUNNING : NSP_END_KILLED);
    assert_int_equal(t->ninflight, 1);
    assert_int_equal(t->inflight[0].call.seq, 11);
    assert_true(t->inflight[0].call.in_flight);
  }
  if (live) {
    /* Young calls of running processes: no hang yet. */
    assert_int_equal(nsp_job_nfindings(job), 1);
    assert_contains(nsp_job_summary(job), "ranks 0-3 are still running (last heard at most 2.0 s ago)");
  } else {
    /* Calls in flight never completed, even without completion tracking. */
    const struct nsp_finding *h = the(job, NSP_FIND_NEVER_COMPLETED);
    assert_int_equal(h->seq, 11);
    assert_int_equal(h->cause, 0);
    assert_int_equal(h->sides[0].role, NSP_ROLE_WAITING);
    assert_true(h->sides[0].call.in_flight);
    assert_contains(h->sides[0].text, "in flight in");
    assert_contains(nsp_job_summary(job), "Also: ranks 0-3 ended without a clean exit");
  }
  nsp_job_destroy(job);
}

static void test_inflight_kind_mismatch_killed(void **state) {
  (void)state;
  inflight_mismatch(0);
}

static void test_inflight_kind_mismatch_live(void **state) {
  (void)state;
  inflight_mismatch(1);
}

/* An INFLIGHT record of a call whose record is in the trace (same api,
 * same entry) is that call, which returned while the ring was read. */
static void test_inflight_duplicate_ignored(void **state) {
  (void)state;
  struct nsp_tracegen *g[2];
  uint32_t w[2];
  ranks(g, w, 2, 0, 1);
  uint64_t t = nsp_tracegen_now(g[1]);
  AR(g[1], w[1]); /* seq 2, returned */
  killed(g[1], 1);
  struct nsp_rec r;
  struct nsp_rec_ext x;
  memset(&r, 0, sizeof r);
  memset(&x, 0, sizeof x);
  r.kind = NSP_REC_INFLIGHT;
  r.ext = &x;
  x.rank = x.nranks = x.color = x.key = -1;
  nsp_rec_inflight_set_api(&r, NSP_API_AllReduce);
  nsp_rec_inflight_set_comm(&r, w[1]);
  nsp_rec_inflight_set_t_enter(&r, t);
  nsp_rec_inflight_set_seq(&r, 2);
  nsp_rec_inflight_set_count(&r, 8);
  nsp_rec_inflight_set_dtype(&r, ncclFloat32);
  nsp_rec_inflight_set_redop(&r, ncclSum);
  nsp_rec_inflight_set_peer(&r, -1);
  assert_int_equal(nsp_tracegen_record(g[1], &r), 0);
  AR(g[0], w[0]);
  struct nsp_job *job = analyse_at(g, 2, 0);
  assert_int_equal(nsp_job_trace(job, 1)->ninflight, 0);
  assert_int_equal(nsp_job_nfindings(job), 0);
  nsp_job_destroy(job);
}

/* ---- communicators never made --------------------------------------------- */

/* Rank 3 never calls ncclCommSplit: ranks 0-2 wait in it (the killed
 * job's rings say), rank 3 went on with an all-reduce on the parent
 * (where it waits in flight).  comm-init-wait on the parent: waiting job
 * ranks 0-2, the one to look at rank 3 with its last call there; the hang
 * at seq 4 of the parent follows from it. */
static void test_never_split(void **state) {
  (void)state;
  struct nsp_tracegen *g[4];
  uint32_t w[4];
  ranks(g, w, 4, 0, 3);
  /* A split made before (index 0): every rank is done with it. */
  for (int r = 0; r < 4; r++) assert_true(nsp_tracegen_split(g[r], w[r], 0xc0d0 + (uint64_t)(r % 2), r % 2, r, r / 2, 2) > 0);
  for (int r = 0; r < 3; r++) {
    killed(g[r], 1);
    assert_int_equal(nsp_tracegen_inflight_split(g[r], NSP_API_CommSplit, w[r], 0xc0de, r % 2, r, 0), 0);
  }
  killed(g[3], 1);
  assert_int_equal(nsp_tracegen_inflight_coll(g[3], NSP_API_AllReduce, w[3], 8, ncclFloat32, ncclSum, -1, 0, NULL), 0);
  struct nsp_job *job = analyse_at(g, 4, 0);
  print_findings(job);
  const struct nsp_finding *f = the(job, NSP_FIND_COMM_INIT_WAIT);
  assert_string_equal(nsp_finding_kind_name(f->kind), "comm-init-wait");
  assert_true(f->comm_id == WORLD); /* the parent */
  assert_int_equal(f->api, NSP_API_CommSplit);
  assert_int_equal(f->nsides, 2);
  const struct nsp_side *na = &f->sides[0], *wt = &f->sides[1];
  assert_int_equal(na->role, NSP_ROLE_NOT_ARRIVED);
  assert_side(na, "3");
  assert_int_equal(na->procs[0].comm_rank, 3);
  assert_int_equal(na->procs[0].call.api, NSP_API_AllReduce);
  assert_int_equal(na->procs[0].call.seq, 4);
  assert_true(na->procs[0].call.in_flight);
  assert_int_equal(wt->role, NSP_ROLE_WAITING);
  assert_side(wt, "0-2");
  assert_int_equal(wt->procs[1].comm_rank, 1);
  assert_int_equal(wt->procs[0].call.api, NSP_API_CommSplit);
  assert_true(wt->procs[0].call.in_flight);
  assert_ranks(f->odd_ranks, f->nodd, "3");
  assert_contains(f->message, "ncclCommSplit #2 of communicator 000000000000aaaa never completed: ranks 0-2 wait in "
                              "it for rank 3, which never called it; the process to look at: rank 3 (h3 pid 103), its "
                              "last call there: all-reduce 8 x float32 sum (32 bytes) seq 4 (in flight: never "
                              "returned)");
  assert_contains(f->message, "ended without a clean exit");
  /* Nothing blames ranks 0-2 for stopping: the hang at seq 4 follows. */
  assert_int_equal(count_kind(job, NSP_FIND_STOPPED_EARLY), 0);
  const struct nsp_finding *h = the(job, NSP_FIND_HANG);
  assert_int_equal(h->seq, 4);
  assert_side(&h->sides[0], "0-2");
  assert_true(h->cause == 0 && nsp_job_finding(job, 0) == f);
  assert_contains(h->message, "this follows the comm-init-wait on communicator 000000000000aaaa: the ranks that did "
                              "not arrive here wait in ncclCommSplit there");
  assert_null(strstr(h->message, "the ranks to look at"));
  assert_contains(nsp_job_summary(job), "The first problem (comm-init-wait)");
  nsp_job_destroy(job);
}

/* ncclCommShrink excluding rank 3, which died first (its ring's last
 * heartbeat before the shrink began): ranks 0-1 wait in it, rank 2 went on
 * with an all-reduce instead.  Rank 2 is the one to look at; rank 3, gone
 * before, is taken for an excluded rank. */
static void test_shrink_excluded(void **state) {
  (void)state;
  struct nsp_tracegen *g[4];
  uint32_t w[4];
  ranks(g, w, 4, 0, 2);
  /* Rank 3 was killed at about +3 us, before the shrink began. */
  assert_int_equal(nsp_tracegen_ringstate(g[3], nsp_tracegen_now(g[3]) + 3000, 0, 0, 0, 0), 0);
  for (int r = 0; r < 3; r++) {
    nsp_tracegen_set_time(g[r], MONO0 + 1000000);
    killed(g[r], 1);
    if (r < 2) assert_int_equal(nsp_tracegen_inflight_split(g[r], NSP_API_CommShrink, w[r], 0x5aa, -1, -1, 0), 0);
    else assert_int_equal(nsp_tracegen_inflight_coll(g[r], NSP_API_AllReduce, w[r], 8, ncclFloat32, ncclSum, -1, 0, NULL), 0);
  }
  struct nsp_job *job = analyse_at(g, 4, 0);
  print_findings(job);
  const struct nsp_finding *f = the(job, NSP_FIND_COMM_INIT_WAIT);
  assert_int_equal(f->api, NSP_API_CommShrink);
  assert_side(&f->sides[0], "2");
  assert_side(&f->sides[1], "0-1");
  assert_contains(f->message, "ncclCommShrink #1 of communicator 000000000000aaaa never completed: ranks 0-1 wait in it "
                              "for rank 2, which never called it (unless excluded");
  nsp_job_destroy(job);
}

/* Rank 2 never calls ncclCommInitRank for communicator 0xbeef; ranks 0, 1
 * and 3 wait in it.  The communicator has no COMM record anywhere: the
 * finding names it by its id; its ranks are the ones asked for. */
static void test_never_init(void **state) {
  (void)state;
  struct nsp_tracegen *g[4];
  uint32_t w[4];
  for (int r = 0; r < 4; r++) {
    g[r] = gen(r, 4, &w[r], 0);
    for (int i = 0; i < 5; i++) AR(g[r], w[r]);
    killed(g[r], r != 2);
    if (r != 2) assert_int_equal(nsp_tracegen_inflight_init(g[r], NSP_API_CommInitRank, 0xbeef, r, 4, 0), 0);
  }
  struct nsp_job *job = analyse_at(g, 4, 0);
  print_findings(job);
  assert_int_equal(nsp_job_nfindings(job), 1);
  const struct nsp_finding *f = the(job, NSP_FIND_COMM_INIT_WAIT);
  assert_true(f->comm_id == 0xbeef);
  assert_null(f->comm);
  assert_int_equal(f->api, NSP_API_CommInitRank);
  assert_side(&f->sides[0], "2");
  assert_int_equal(f->sides[0].procs[0].comm_rank, -1);
  assert_int_equal(f->sides[0].procs[0].call.seq, 5);
  assert_side(&f->sides[1], "0-1,3");
  assert_int_equal(f->sides[1].procs[2].comm_rank, 3);
  assert_true(f->sides[1].procs[2].call.in_flight);
  assert_ranks(f->odd_ranks, f->nodd, "2");
  assert_contains(f->message, "communicator 000000000000beef (4 ranks) was never made: ranks 0-1,3 wait in "
                              "ncclCommInitRank for rank 2, which never called it; the process to look at: job rank "
                              "2 (h2 pid 102), its last call: all-reduce 8 x float32 sum (32 bytes) seq 5 on "
                              "communicator 000000000000aaaa");
  assert_contains(nsp_job_summary(job), "1 finding (comm-init-wait: 1)");
  char *txt = text_of(job);
  assert_contains(txt, "[1] comm-init-wait on communicator 000000000000beef (CommInitRank), at +");
  assert_contains(txt, "side 1: job rank 2: never called ncclCommInitRank for it");
  assert_contains(txt, "job rank 2 on h2 pid 102: last call all-reduce 8 x float32 sum (32 bytes) seq 5 on "
                       "communicator 000000000000aaaa");
  assert_contains(txt, "side 2: ranks 0-1,3: in flight in ncclCommInitRank (never returned)");
  free(txt);
  nsp_job_destroy(job);
}

/* A job starting up: ranks 0-2 in ncclCommInitRank for 1 ms, rank 3 not
 * yet there, all running.  No finding: a healthy live job. */
static void test_init_young_no_finding(void **state) {
  (void)state;
  struct nsp_tracegen *g[4];
  uint32_t w[4];
  uint64_t hb = 0;
  for (int r = 0; r < 4; r++) {
    g[r] = gen(r, 4, &w[r], 0);
    hb = nsp_tracegen_now(g[r]) + 5 * SEC;
    assert_int_equal(nsp_tracegen_ringstate(g[r], hb, 0, 0, r != 3, 0), 0);
    if (r != 3) assert_int_equal(nsp_tracegen_inflight_init(g[r], NSP_API_CommInitRank, 0xbeef, r, 4, 0), 0);
  }
  struct nsp_job *job = analyse_at(g, 4, wall_of(hb) + (int64_t)SEC);
  print_findings(job);
  assert_int_equal(nsp_job_nfindings(job), 0);
  assert_contains(nsp_job_summary(job), "No problem found in what the traces show");
  assert_contains(nsp_job_summary(job), "ranks 0-3 are still running");
  assert_contains(nsp_job_summary(job), "ranks 0-2 have calls in flight (never returned)");
  nsp_job_destroy(job);
}

/* ---- how processes ended ------------------------------------------------- */

/* Rank 1 aborts the communicator, then exits cleanly, while rank 0 waits
 * in seq 3: the hang names rank 1, its abort and its clean exit. */
static void test_abort_then_exit(void **state) {
  (void)state;
  struct nsp_tracegen *g[2];
  uint32_t w[2];
  ranks(g, w, 2, 1, 2);
  nsp_tracegen_set_auto_complete(g[0], 0, 0);
  AR(g[0], w[0]);
  uint64_t abort_t = nsp_tracegen_now(g[1]);
  assert_int_equal(nsp_tracegen_comm_end(g[1], w[1], NSP_API_CommAbort), 0);
  struct nsp_job *job = analyse_at(g, 2, 0);
  print_findings(job);
  const struct nsp_finding *h = the(job, NSP_FIND_HANG);
  assert_int_equal(h->seq, 3);
  const struct nsp_proc *p = &h->sides[0].procs[0];
  assert_int_equal(p->rank, 1);
  assert_int_equal(p->comm_end_api, NSP_API_CommAbort);
  assert_true(p->comm_end_ns == wall_of(abort_t));
  assert_non_null(p->end);
  assert_int_equal(p->end->state, NSP_END_EXITED);
  assert_int_equal(p->end->source, NSP_ENDSRC_EXIT);
  assert_int_equal(nsp_job_trace(job, 0)->end.state, NSP_END_EXITED);
  assert_int_equal(h->sides[1].procs[0].comm_end_api, -1);
  char *txt = text_of(job);
  assert_contains(txt, "seq 2 on this communicator, completed, at +0.000003 s; aborted this communicator at "
                       "+0.000004 s; exited cleanly at +0.000005 s");
  assert_contains(h->message, "rank 1's last call: all-reduce 8 x float32 sum (32 bytes) seq 2 on this communicator "
                              "(completed); rank 1 aborted this communicator at +0.000004 s");
  free(txt);
  /* Both exited cleanly: nothing unseen besides. */
  assert_null(strstr(nsp_job_summary(job), "Also:"));
  assert_int_equal(nsp_job_caveats(job)->unclean, 0);
  nsp_job_destroy(job);
}

/* A healthy job analysed while it runs: ranks at different seqs (their
 * traces are snapshots), each in flight in its next all-reduce for 1 ms,
 * heartbeats 2 s old.  No finding (no wavefront); the summary says they
 * still run. */
static void test_live_healthy(void **state) {
  (void)state;
  struct nsp_tracegen *g[4];
  uint32_t w[4];
  uint64_t hb = 0;
  for (int r = 0; r < 4; r++) {
    g[r] = gen(r, 4, &w[r], 1);
    for (int i = 0; i < (r == 2 ? 17 : 19); i++) AR(g[r], w[r]);
    uint64_t entry = nsp_tracegen_now(g[r]);
    hb = entry + 5 * SEC;
    assert_int_equal(nsp_tracegen_ringstate(g[r], hb, 0, 0, 1, 0), 0);
    assert_int_equal(nsp_tracegen_inflight_coll(g[r], NSP_API_AllReduce, w[r], 8, ncclFloat32, ncclSum, -1, entry, NULL), 0);
  }
  int64_t now = wall_of(hb) + 2 * (int64_t)SEC;
  struct nsp_job *job = analyse_at(g, 4, now);
  print_findings(job);
  assert_int_equal(nsp_job_nfindings(job), 0);
  for (int r = 0; r < 4; r++) {
    const struct nsp_end_info *e = &nsp_job_trace(job, (size_t)r)->end;
    assert_int_equal(e->state, NSP_END_RUNNING);
    assert_int_equal(e->source, NSP_ENDSRC_RING);
    assert_string_equal(nsp_end_state_name(e->state), "running");
    assert_true(e->age_ns >= 2 * (int64_t)SEC);
  }
  const char *sum = nsp_job_summary(job);
  assert_contains(sum, "No problem found in what the traces show (4 traces, 1 communicator");
  assert_contains(sum, "but: ranks 0-3 are still running (last heard at most 2.0 s ago); ranks 0-3 have calls in "
                       "flight (never returned).");
  assert_null(strstr(sum, "No problems found"));
  assert_int_equal(nsp_job_caveats(job)->running, 4);
  assert_int_equal(nsp_job_caveats(job)->unclean, 0);
  nsp_job_destroy(job);
}

/* A job hanging while it runs: rank 1 stays at seq 4 (busy elsewhere),
 * ranks 0, 2 and 3 have been in flight in seq 5 for 30 s (no completion
 * tracking: a blocking communicator).  The hang names rank 1 as the one
 * to look at, and every rank as still running. */
static void test_live_hang(void **state) {
  (void)state;
  struct nsp_tracegen *g[4];
  uint32_t w[4];
  uint64_t hb[4];
  for (int r = 0; r < 4; r++) {
    g[r] = gen(r, 4, &w[r], 0);
    for (int i = 0; i < 4; i++) AR(g[r], w[r]);
    uint64_t entry = nsp_tracegen_now(g[r]);
    hb[r] = entry + 30 * SEC;
    assert_int_equal(nsp_tracegen_ringstate(g[r], hb[r], 0, 0, r != 1, 0), 0);
    if (r != 1)
      assert_int_equal(nsp_tracegen_inflight_coll(g[r], NSP_API_AllReduce, w[r], 8, ncclFloat32, ncclSum, -1, entry, NULL), 0);
  }
  struct nsp_job *job = analyse_at(g, 4, wall_of(hb[3]) + (int64_t)SEC);
  print_findings(job);
  assert_int_equal(nsp_job_nfindings(job), 1);
  const struct nsp_finding *h = the(job, NSP_FIND_HANG);
  assert_int_equal(h->seq, 5);
  assert_ranks(h->odd_ranks, h->nodd, "1");
  assert_int_equal(h->sides[0].role, NSP_ROLE_NOT_ARRIVED);
  assert_side(&h->sides[0], "1");
  assert_int_equal(h->sides[1].role, NSP_ROLE_WAITING);
  assert_side(&h->sides[1], "0,2-3");
  assert_true(h->sides[1].call.in_flight);
  assert_string_equal(h->sides[1].text, "in flight in all-reduce 8 x float32 sum (32 bytes) (never returned)");
  for (size_t p = 0; p < 3; p++) {
    assert_true(h->sides[1].procs[p].wait_ns >= 30 * (int64_t)SEC);
    assert_int_equal(h->sides[1].procs[p].end->state, NSP_END_RUNNING);
  }
  assert_contains(h->message, "rank 1 (h1 pid 101) did not arrive (the rank to look at); ranks 0,2-3 wait inside it "
                              "(in flight: the call never returned)");
  assert_contains(h->message, "rank 1 is still running (last heard 1.0 s ago)");
  assert_contains(h->message, "ranks 0,2-3 are still running (last heard at most 1.0 s ago)");
  char *txt = text_of(job);
  assert_contains(txt, "rank 0 on h0 pid 100: in flight 30.000 s (never returned; entry to its last sign of life)");
  assert_contains(txt, "still running (last heard 1.0 s ago)");
  free(txt);
  nsp_job_destroy(job);
}

/* Rank 1 killed (its ring left, the heartbeat long stale), rank 0 exited
 * cleanly; their calls agree.  No finding, but the summary says rank 1
 * ended without a clean exit; with a SIGNAL record, that it crashed. */
static void test_killed_process(void **state) {
  (void)state;
  for (int crash = 0; crash < 2; crash++) {
    struct nsp_tracegen *g[2];
    uint32_t w[2];
    for (int r = 0; r < 2; r++) {
      g[r] = gen(r, 2, &w[r], 0);
      for (int i = 0; i < 5; i++) AR(g[r], w[r]);
    }
    uint64_t hb = nsp_tracegen_now(g[1]) + SEC / 10;
    if (crash) sigsegv(g[1]);
    assert_int_equal(nsp_tracegen_ringstate(g[1], hb, 0, 0, 0, 0), 0);
    struct nsp_job *job = analyse_at(g, 2, wall_of(hb) + 3600 * (int64_t)SEC);
    print_findings(job);
    const struct nsp_end_info *e = &nsp_job_trace(job, 1)->end;
    assert_int_equal(e->state, crash ? NSP_END_CRASHED : NSP_END_KILLED);
    assert_int_equal(e->source, NSP_ENDSRC_RING);
    assert_true(e->time_ns == wall_of(hb));
    assert_int_equal(nsp_job_trace(job, 0)->end.state, NSP_END_EXITED);
    assert_int_equal(nsp_job_caveats(job)->unclean, 1);
    if (crash) {
      assert_int_equal(e->signo, 11);
      assert_string_equal(e->signal, "SIGSEGV");
      assert_int_equal(the(job, NSP_FIND_SIGNAL)->sides[0].procs[0].end->state, NSP_END_CRASHED);
      assert_contains(nsp_job_summary(job), "Also: rank 1 crashed (a fatal signal).");
    } else {
      assert_int_equal(nsp_job_nfindings(job), 0);
      assert_contains(nsp_job_summary(job), "No problem found in what the traces show (2 traces, 1 communicator, 10 "
                                            "collective calls, 0 send/recv calls), but: rank 1 ended without a clean "
                                            "exit (a signal such as SIGKILL, SIGTERM or SIGINT, the OOM killer, or _exit).");
      char eb[200];
      nsp_format_end(eb, sizeof eb, job, e);
      assert_string_equal(eb, "ended without a clean exit (a signal such as SIGKILL, SIGTERM or SIGINT, the OOM killer, or _exit; last heard at +0.100007 s)");
      char *txt = text_of(job);
      assert_contains(txt, "  rank 1    h1 pid 101, NCCL 2.28.9, 8 records, 5 calls: t1.ncclspy\n            ended "
                           "without a clean exit (a signal such as SIGKILL, SIGTERM or SIGINT, the OOM killer, or _exit; last heard at +0.100007 s)\n");
      free(txt);
    }
    nsp_job_destroy(job);
  }
}

/* A process still running 5 s after a fatal signal (its own handler
 * dealt with it) did not die of it: a note, no signal finding. */
static void test_running_after_signal(void **state) {
  (void)state;
  struct nsp_tracegen *g[1];
  uint32_t w[1];
  ranks(g, w, 1, 0, 1);
  sigsegv(g[0]);
  uint64_t hb = nsp_tracegen_now(g[0]) + 5 * SEC;
  assert_int_equal(nsp_tracegen_ringstate(g[0], hb, 0, 0, 0, 0), 0);
  struct nsp_job *job = analyse_at(g, 1, wall_of(hb) + (int64_t)SEC);
  assert_int_equal(nsp_job_trace(job, 0)->end.state, NSP_END_RUNNING);
  assert_true(nsp_job_trace(job, 0)->signal->went_on);
  assert_int_equal(nsp_job_nfindings(job), 0);
  nsp_job_destroy(job);
}

/* A process killed inside ncclGroupEnd that no other finding names: a
 * call-never-returned finding. */
static void test_killed_in_group_end(void **state) {
  (void)state;
  struct nsp_tracegen *g[2];
  uint32_t w[2];
  ranks(g, w, 2, 0, 1);
  killed(g[1], 1);
  uint64_t entry = nsp_tracegen_now(g[1]);
  assert_int_equal(nsp_tracegen_inflight_call(g[1], NSP_API_GroupEnd, 0, 0), 0);
  struct nsp_job *job = analyse_at(g, 2, 0);
  print_findings(job);
  assert_int_equal(nsp_job_nfindings(job), 1);
  const struct nsp_finding *f = the(job, NSP_FIND_CALL_NEVER_RETURNED);
  assert_string_equal(nsp_finding_kind_name(f->kind), "call-never-returned");
  assert_true(f->comm_id == 0);
  assert_int_equal(f->api, NSP_API_GroupEnd);
  assert_true(f->time_ns == wall_of(entry));
  assert_int_equal(f->nsides, 1);
  assert_side(&f->sides[0], "1");
  assert_string_equal(f->sides[0].text, "inside ncclGroupEnd (never returned)");
  assert_ranks(f->odd_ranks, f->nodd, "1");
  assert_contains(f->message, "rank 1 (h1 pid 101) never returned from ncclGroupEnd");
  assert_contains(f->message, "rank 1 ended without a clean exit");
  char *txt = text_of(job);
  assert_contains(txt, "        rank 1 on h1 pid 101 (ended without a clean exit");
  assert_contains(txt, "in flight: ncclGroupEnd since +");
  free(txt);
  nsp_job_destroy(job);
}

/* Rank 1 was killed inside ncclGroupEnd while rank 0 waits in seq 3:
 * the hang names where rank 1 was; no call-never-returned besides (the
 * hang names rank 1).  Running, it is "blocked in" it. */
static void test_hang_names_group_end(void **state) {
  (void)state;
  for (int live = 0; live < 2; live++) {
    struct nsp_tracegen *g[2];
    uint32_t w[2];
    ranks(g, w, 2, 1, 2);
    nsp_tracegen_set_auto_complete(g[0], 0, 0);
    AR(g[0], w[0]);
    uint64_t entry = nsp_tracegen_now(g[1]), hb = entry + 20 * SEC;
    for (int r = 0; r < 2; r++) assert_int_equal(nsp_tracegen_ringstate(g[r], hb, 0, 0, r, 0), 0);
    assert_int_equal(nsp_tracegen_inflight_call(g[1], NSP_API_GroupEnd, 0, entry), 0);
    struct nsp_job *job = analyse_at(g, 2, live ? wall_of(hb) + (int64_t)SEC : 0);
    print_findings(job);
    assert_int_equal(nsp_job_nfindings(job), 1);
    const struct nsp_finding *h = the(job, NSP_FIND_HANG);
    assert_side(&h->sides[0], "1");
    if (live)
      assert_contains(h->message, "rank 1 is blocked in ncclGroupEnd since +0.000004 s");
    else
      assert_contains(h->message, "rank 1 was inside ncclGroupEnd (entered at +0.000004 s) when it ended");
    char *txt = text_of(job);
    assert_contains(txt, "; in flight: ncclGroupEnd since +0.000004 s; ");
    free(txt);
    nsp_job_destroy(job);
  }
}

/* Trace format 1.5 with no EXIT and no crash ring, its process not
 * running here: its end is unknown, and the summary says so without a
 * finding; a pid alive on this host that started before its trace and
 * maps a *.ncclspy.ring file (as a traced process maps its crash ring):
 * still running; the same pid with a trace older than the process: not
 * it. */
static void test_no_exit_no_ring(void **state) {
  (void)state;
  char ring[256];
  assert_int_equal(nsp_case_mkdtemp(ring, sizeof ring - 32), 0);
  char dir[256];
  snprintf(dir, sizeof dir, "%s", ring);
  strcat(ring, "/t.ncclspy.ring");
  FILE *rf = fopen(ring, "w");
  assert_non_null(rf);
  assert_int_equal(fputs("ring", rf) >= 0, 1);
  fclose(rf);
  int fd = open(ring, O_RDONLY);
  assert_true(fd >= 0);
  void *map = mmap(NULL, 4, PROT_READ, MAP_SHARED, fd, 0);
  assert_true(map != MAP_FAILED);
  close(fd);
  char host[NSP_HOST_MAX + 1] = "";
  assert_int_equal(gethostname(host, NSP_HOST_MAX), 0);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  int64_t now = (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
  for (int how = 0; how < 3; how++) {
    struct nsp_tracegen *g = nsp_tracegen_create(how ? host : "elsewhere", how ? (uint32_t)getpid() : 4242, 0);
    assert_non_null(g);
    /* how 1: the trace opened now (after this process started); how 2:
     * a day before this process started (another process had the pid) */
    if (how) nsp_tracegen_set_clock(g, (uint64_t)(how == 1 ? now : now - 86400 * (int64_t)SEC - 3600 * (int64_t)SEC), MONO0);
    nsp_tracegen_set_exit(g, 0);
    uint32_t w = nsp_tracegen_comm(g, WORLD, 0, 1);
    AR(g, w);
    struct nsp_job *job = nsp_job_create();
    const uint8_t *data;
    size_t len;
    assert_int_equal(nsp_tracegen_bytes(g, &data, &len), 0);
    assert_int_equal(nsp_job_add_mem(job, "t.ncclspy", data, len), 1);
    nsp_tracegen_destroy(g);
    assert_int_equal(nsp_job_analyze(job), 0);
    const struct nsp_end_info *e = &nsp_job_trace(job, 0)->end;
    if (how == 1) {
      assert_int_equal(e->state, NSP_END_RUNNING);
      assert_int_equal(e->source, NSP_ENDSRC_PROC);
      assert_contains(nsp_job_summary(job), "rank 0 is still running");
    } else {
      assert_int_equal(e->state, NSP_END_UNKNOWN);
      assert_string_equal(e->why, "no exit record and no crash ring");
      assert_int_equal(nsp_job_caveats(job)->unknown_end, 1);
      assert_contains(nsp_job_summary(job), "No problem found in what the traces show (1 trace, ");
      assert_contains(nsp_job_summary(job), "rank 0 left no exit record and no crash ring: how it ended is unknown");
    }
    assert_int_equal(nsp_job_nfindings(job), 0);
    nsp_job_destroy(job);
  }
  munmap(map, 4);
  nsp_case_rmdir(dir);
}

/* A process that exited while another thread was inside a call; one
 * whose ring says its exit handlers ran (the trace could not be
 * finished): both exited. */
static void test_exit_variants(void **state) {
  (void)state;
  struct nsp_tracegen *g[2];
  uint32_t w[2];
  ranks(g, w, 2, 0, 1);
  assert_int_equal(nsp_tracegen_exit(g[0], 0, 2), 0);
  uint64_t ex = nsp_tracegen_now(g[1]);
  assert_int_equal(nsp_tracegen_ringstate(g[1], ex, 0, ex, 0, 0), 0);
  struct nsp_job *job = analyse_at(g, 2, 0);
  const struct nsp_end_info *e0 = &nsp_job_trace(job, 0)->end, *e1 = &nsp_job_trace(job, 1)->end;
  assert_int_equal(e0->state, NSP_END_EXITED);
  assert_int_equal(e0->inflight, 2);
  assert_int_equal(e1->state, NSP_END_EXITED);
  assert_int_equal(e1->source, NSP_ENDSRC_RING);
  char eb[200];
  nsp_format_end(eb, sizeof eb, job, e0);
  assert_string_equal(eb, "exited cleanly at +0.000002 s, with 2 calls of other threads in flight");
  nsp_format_end(eb, sizeof eb, job, e1);
  assert_contains(eb, "(its exit handlers ran; the trace could not be finished)");
  assert_contains(nsp_job_summary(job), "but: rank 0 exited while other threads were inside NCCL calls.");
  assert_int_equal(nsp_job_caveats(job)->unclean, 0);
  nsp_job_destroy(job);
}

/* ---- what the shim does not see ------------------------------------------- */

/* Rank 1 loaded a second libnccl: no finding, but the summary and the
 * environment section say so. */
static void test_untraced_libnccl(void **state) {
  (void)state;
  struct nsp_tracegen *g[2];
  uint32_t w[2];
  ranks(g, w, 2, 0, 1);
  assert_int_equal(nsp_tracegen_libnccl(g[1], "/x/libnccl.so.2", 21903), 0);
  struct nsp_job *job = analyse_at(g, 2, 0);
  assert_int_equal(nsp_job_nfindings(job), 0);
  const struct nsp_trace_info *t = nsp_job_trace(job, 1);
  assert_int_equal(t->nlibnccl, 1);
  assert_string_equal(t->libnccl[0].path, "/x/libnccl.so.2");
  assert_int_equal(t->libnccl[0].version, 21903);
  assert_int_equal(nsp_job_caveats(job)->libnccl, 1);
  assert_contains(nsp_job_summary(job), "No problem found in what the traces show (2 traces, 1 communicator, 2 "
                                        "collective calls, 0 send/recv calls), but: rank 1 loaded /x/libnccl.so.2 "
                                        "(NCCL 2.19.3), which ncclspy does not trace.");
  char *txt = text_of(job);
  assert_contains(txt, "\nEnvironment\nlibnccl that ncclspy does not trace (calls through it are not in the traces)\n"
                       "  rank 1    h1 pid 101: /x/libnccl.so.2 (NCCL 2.19.3), seen at +");
  free(txt);
  nsp_job_destroy(job);
}

/* Two processes on one GPU, each with its own NCCL_HOSTID (NCCL sees two
 * hosts and allows it): a note, no env-duplicate-gpu finding.  Without
 * the variable, the finding. */
static void test_shared_gpu_hostid(void **state) {
  (void)state;
  for (int hostid = 0; hostid < 2; hostid++) {
    struct nsp_tracegen *g[2];
    uint32_t w[2];
    for (int r = 0; r < 2; r++) {
      g[r] = nsp_tracegen_create("box", 100u + (uint32_t)r, r);
      if (hostid) assert_int_equal(nsp_tracegen_env(g[r], "NCCL_HOSTID", r ? "box-b" : "box-a"), 0);
      assert_int_equal(nsp_tracegen_set_gpu(g[r], "GPU-0000", "0000:1b:00.0", "NVIDIA H200"), 0);
      w[r] = nsp_tracegen_comm(g[r], WORLD, r, 2);
      AR(g[r], w[r]);
    }
    struct nsp_job *job = analyse_at(g, 2, 0);
    print_findings(job);
    if (hostid) {
      assert_int_equal(count_kind(job, NSP_FIND_ENV_DUP_GPU), 0);
      int noted = 0;
      for (size_t i = 0; i < nsp_job_nnotes(job); i++)
        if (strstr(nsp_job_note(job, i), "ranks 0-1 (box) share one GPU, GPU-0000") &&
            strstr(nsp_job_note(job, i), "NCCL_HOSTID=box-a on rank 0, NCCL_HOSTID=box-b on rank 1"))
          noted = 1;
      if (!noted)
        for (size_t i = 0; i < nsp_job_nnotes(job); i++) print_message("# note: %.900s\n", nsp_job_note(job, i));
      assert_true(noted);
    } else {
      assert_int_equal(count_kind(job, NSP_FIND_ENV_DUP_GPU), 1);
    }
    nsp_job_destroy(job);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_inflight_kind_mismatch_killed),
      cmocka_unit_test(test_inflight_kind_mismatch_live),
      cmocka_unit_test(test_inflight_duplicate_ignored),
      cmocka_unit_test(test_never_split),
      cmocka_unit_test(test_shrink_excluded),
      cmocka_unit_test(test_never_init),
      cmocka_unit_test(test_init_young_no_finding),
      cmocka_unit_test(test_abort_then_exit),
      cmocka_unit_test(test_live_healthy),
      cmocka_unit_test(test_live_hang),
      cmocka_unit_test(test_killed_process),
      cmocka_unit_test(test_running_after_signal),
      cmocka_unit_test(test_killed_in_group_end),
      cmocka_unit_test(test_hang_names_group_end),
      cmocka_unit_test(test_no_exit_no_ring),
      cmocka_unit_test(test_exit_variants),
      cmocka_unit_test(test_untraced_libnccl),
      cmocka_unit_test(test_shared_gpu_hostid),
      cmocka_unit_test(test_watch_live_min),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
