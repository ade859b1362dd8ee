/* test_an_hang.c - completion tracking (format 1.1): the hang report
 * (first seq not complete on every rank, who never arrived, who waits and
 * for how long, which hang follows from which) and call sites in findings,
 * on synthetic traces of the GPU cases and variations. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nsp_an_cases.h"
#include "nsp_analyze.h"
#include "nsp_names.h"
#include "nsp_tracegen.h"
#include "nsp_an_test.h"

/* ---- helpers ------------------------------------------------------------ */

/* A rank with completion tracking (and timing) on communicator 0xaaaa. */
static struct nsp_tracegen *tracked_gen(int r, uint32_t *w, int nranks) {
  char host[16];
  snprintf(host, sizeof host, "h%d", r);
  struct nsp_tracegen *g = nsp_tracegen_create(host, 100u + (uint32_t)r, r);
  assert_non_null(g);
  nsp_tracegen_set_tracking(g, NSP_TRACK_COMPLETION | NSP_TRACK_TIMING);
  nsp_tracegen_set_auto_complete(g, 1, 1000);
  *w = nsp_tracegen_comm(g, 0xaaaa, r, nranks);
  assert_true(*w > 0);
  return g;
}

#define AR(g, c) nsp_tracegen_coll(g, NSP_API_AllReduce, c, 8, ncclFloat32, ncclSum, -1)

/* ---- the cases ---------------------------------------------------------- */

/* c11 on GPU: seq 5, rank 1 never arrived (the one to look at), rank 0
 * waits inside it for the 30 s until the watchdog; no wavefront besides. */
static void test_c11_hang(void **state) {
  (void)state;
  struct nsp_job *job = analyse_case("c11", 2);
  assert_int_equal(nsp_job_nfindings(job), 1);
  const struct nsp_finding *f = nsp_job_finding(job, 0);
  assert_int_equal(f->kind, NSP_FIND_HANG);
  assert_string_equal(nsp_finding_kind_name(f->kind), "hang");
  assert_true(f->comm_id == NSP_CASE_WORLD);
  assert_int_equal(f->seq, 5);
  assert_int_equal(f->api, NSP_API_AllReduce);
  assert_true(f->cause == SIZE_MAX);
  assert_ranks(f->odd_ranks, f->nodd, "1");
  assert_int_equal(f->nsides, 2);
  const struct nsp_side *na = &f->sides[0], *wt = &f->sides[1];
  assert_int_equal(na->role, NSP_ROLE_NOT_ARRIVED);
  assert_string_equal(nsp_side_role_name(na->role), "not-arrived");
  assert_side(na, "1");
  assert_string_equal(na->text, "did not arrive at seq 5");
  /* What rank 1 did last: seq 4, which completed. */
  const struct nsp_proc *p1 = &na->procs[0];
  assert_int_equal(p1->pid, 1001);
  assert_int_equal(p1->call.api, NSP_API_AllReduce);
  assert_int_equal(p1->call.seq, 4);
  assert_int_equal(p1->call.done, 1);
  assert_int_equal(p1->blocked.api, -1);
  assert_int_equal(wt->role, NSP_ROLE_WAITING);
  assert_side(wt, "0");
  const struct nsp_proc *p0 = &wt->procs[0];
  assert_int_equal(p0->call.seq, 5);
  assert_int_equal(p0->call.done, 0);
  assert_int_equal(p0->call.count, 1000);
  /* enqueue to the end of its trace: the watchdog's abort 30 s later */
  assert_true(p0->wait_ns == 30000000100ll);
  assert_true(f->time_ns == p0->call.time_ns);
  assert_true(nsp_job_trace(job, 0)->end_ns - p0->call.time_ns == 30000000100ll);
  assert_contains(f->message, "seq 5 (all-reduce 1000 x float32 sum (4000 bytes)) did not complete: rank 1 "
                              "(node-a pid 1001) did not arrive (the rank to look at); rank 0 waits inside it");
  assert_contains(f->message, "rank 1's last call: all-reduce 1000 x float32 sum (4000 bytes) seq 4 on this "
                              "communicator (completed)");
  assert_contains(f->message, "the waiting call was abandoned when the communicator was aborted; rank 0 waited "
                              "30.000 s (enqueue to the end of its trace)");
  assert_int_equal(p0->done_flags, NSP_DONE_ABANDONED);
  assert_contains(nsp_job_summary(job), "The first problem (hang)");
  /* Call sites: NCCL, ncclspy and c10d frames left out. */
  assert_non_null(p0->site);
  assert_int_equal(p0->site->ntotal, 7);
  assert_int_equal(p0->site->nskipped, 5);
  assert_int_equal(p0->site->nframes, 2);
  assert_string_equal(p0->site->frames[0].symbol, "_PyEval_EvalFrameDefault");
  assert_true(p0->site->frames[0].offset == 0x1f3e22);
  assert_string_equal(p0->site->frames[1].module, "/usr/bin/python3.11");
  assert_non_null(p1->site);
  assert_int_equal(count_kind(job, NSP_FIND_STOPPED_EARLY), 0);
  const struct nsp_trace_info *t = nsp_job_trace(job, 0);
  assert_int_equal(t->tracking, NSP_TRACK_COMPLETION | NSP_TRACK_TIMING | NSP_TRACK_CALLSITES);
  assert_int_equal(t->driver_version, 12040);
  assert_int_equal(t->completions, 5);
  assert_int_equal(t->nsites, 1);
  nsp_job_destroy(job);
}

/* c01 on GPU: the dtype mismatch first, then "rank 1's seq 2 never
 * completed", linked to it. */
static void test_c01_gpu(void **state) {
  (void)state;
  struct nsp_job *job = analyse_case("c01-gpu", 2);
  assert_int_equal(nsp_job_nfindings(job), 2);
  const struct nsp_finding *m = nsp_job_finding(job, 0), *f = nsp_job_finding(job, 1);
  assert_int_equal(m->kind, NSP_FIND_DTYPE_MISMATCH);
  assert_int_equal(m->seq, 2);
  assert_int_equal(f->kind, NSP_FIND_NEVER_COMPLETED);
  assert_string_equal(nsp_finding_kind_name(f->kind), "never-completed");
  assert_int_equal(f->seq, 2);
  assert_int_equal(f->cause, 0);
  assert_ranks(f->odd_ranks, f->nodd, "1");
  assert_int_equal(f->nsides, 2);
  assert_int_equal(f->sides[0].role, NSP_ROLE_WAITING);
  assert_side(&f->sides[0], "1");
  assert_int_equal(f->sides[0].call.dtype, ncclFloat32);
  assert_string_equal(f->sides[0].text, "waiting in all-reduce 1024 x float32 sum (4096 bytes)");
  assert_int_equal(f->sides[1].role, NSP_ROLE_COMPLETED);
  assert_side(&f->sides[1], "0");
  assert_int_equal(f->sides[1].procs[0].call.dtype, ncclFloat16);
  assert_int_equal(f->sides[1].procs[0].call.done, 1);
  assert_contains(f->message, "rank 1's seq 2 (all-reduce 1024 x float32 sum (4096 bytes)) never completed although "
                              "every traced rank issued it; rank 0 completed it");
  assert_contains(f->message, "this follows the dtype-mismatch at seq 2 on the same communicator");
  /* Each side of the mismatch with its own call site (pass 2). */
  const struct nsp_callsite *s0 = m->sides[0].procs[0].site, *s1 = m->sides[1].procs[0].site;
  assert_non_null(s0);
  assert_non_null(s1);
  assert_string_equal(s0->frames[0].symbol, "autocast_step");
  assert_string_equal(s1->frames[0].symbol, "_PyEval_EvalFrameDefault");
  nsp_job_destroy(job);
}

/* A killed hang (c12): rank 1 never arrives at seq 3; ranks 0, 2, 3 wait
 * 1 s each (seq 4 queued behind, then SIGTERM). */
static void test_c12_killed_hang(void **state) {
  (void)state;
  struct nsp_job *job = analyse_case("c12", 4);
  assert_int_equal(nsp_job_nfindings(job), 1);
  const struct nsp_finding *f = nsp_job_finding(job, 0);
  assert_int_equal(f->kind, NSP_FIND_HANG);
  assert_int_equal(f->seq, 3);
  assert_ranks(f->odd_ranks, f->nodd, "1");
  assert_side(&f->sides[0], "1");
  assert_int_equal(f->sides[0].procs[0].call.seq, 2);
  assert_int_equal(f->sides[0].procs[0].call.done, 1);
  assert_side(&f->sides[1], "0,2-3");
  for (size_t p = 0; p < 3; p++) {
    assert_true(f->sides[1].procs[p].wait_ns == 1000000100ll);
    assert_null(f->sides[1].procs[p].site); /* no call sites in these traces */
  }
  assert_contains(f->message, "ranks 0,2-3 wait inside it");
  assert_contains(f->message, "ranks 0,2-3 waited 1.000 s (enqueue to the end of each trace)");
  /* SIGTERMed: every rank left its crash ring, none exited. */
  assert_contains(f->message, "rank 1 ended without a clean exit");
  for (size_t t = 0; t < 4; t++) assert_int_equal(nsp_job_trace(job, t)->end.state, NSP_END_KILLED);
  assert_int_equal(f->sides[0].procs[0].end->state, NSP_END_KILLED);
  nsp_job_destroy(job);
}

/* c13: rank 0 stuck outside NCCL holds up TP {0,1}; rank 1, waiting
 * there, never reaches DP {1,3}: that hang is caused by the TP one, which
 * is named first; DP {0,2} is another root (rank 0 again). */
static void test_c13_chain(void **state) {
  (void)state;
  struct nsp_job *job = analyse_case("c13", 4);
  assert_int_equal(nsp_job_nfindings(job), 3);
  const struct nsp_finding *tp = nsp_job_finding(job, 0), *dp1 = nsp_job_finding(job, 1),
                           *dp0 = nsp_job_finding(job, 2);
  assert_int_equal(tp->kind, NSP_FIND_HANG);
  assert_true(tp->comm_id == NSP_CASE_CHILD0);
  assert_int_equal(tp->seq, 3);
  assert_true(tp->cause == SIZE_MAX);
  assert_side(&tp->sides[0], "0"); /* TP rank 0 = job rank 0 */
  assert_side(&tp->sides[1], "1");
  assert_int_equal(dp1->kind, NSP_FIND_HANG);
  assert_true(dp1->comm_id == NSP_CASE_DP1);
  assert_int_equal(dp1->cause, 0);
  /* DP {1,3}: its rank 0 (job rank 1) did not arrive, stuck in TP seq 3. */
  const struct nsp_proc *p = &dp1->sides[0].procs[0];
  assert_int_equal(p->rank, 0);
  assert_int_equal(nsp_job_trace(job, p->trace)->rank, 1);
  assert_true(p->blocked.comm_id == NSP_CASE_CHILD0);
  assert_int_equal(p->blocked.seq, 3);
  assert_int_equal(p->blocked.done, 0);
  assert_contains(dp1->message, "rank 0 (job rank 1) is stuck in all-reduce 4096 x bfloat16 sum (8192 bytes) seq 3 "
                                "on communicator 57a1d0c0ffee0a00, which never completed");
  assert_contains(dp1->message, "this follows the hang at seq 3 on communicator 57a1d0c0ffee0a00");
  assert_false(strstr(dp1->message, "the rank to look at"));
  assert_contains(dp1->hint, "earlier hang");
  assert_int_equal(dp0->kind, NSP_FIND_HANG);
  assert_true(dp0->comm_id == NSP_CASE_DP0);
  assert_true(dp0->cause == SIZE_MAX);
  assert_contains(dp0->message, "(the rank to look at)");
  assert_true(tp->time_ns < dp0->time_ns);
  nsp_job_destroy(job);
}

/* ---- variations --------------------------------------------------------- */

/* Without completion tracking nothing changes: the wavefront as before. */
static void test_untracked_unchanged(void **state) {
  (void)state;
  struct nsp_job *job = analyse_case("c11-notrack", 2);
  assert_int_equal(nsp_job_nfindings(job), 1);
  assert_int_equal(nsp_job_finding(job, 0)->kind, NSP_FIND_STOPPED_EARLY);
  assert_null(nsp_job_finding(job, 0)->sides[0].procs[0].site);
  assert_int_equal(nsp_job_finding(job, 0)->sides[0].procs[0].call.done, -1);
  nsp_job_destroy(job);
}

/* A deadlock: rank 0 waits on A for rank 1, which waits on B for rank 0.
 * Neither hang causes the other: both are flagged as a circular wait. */
static void test_circular_wait(void **state) {
  (void)state;
  struct nsp_tracegen *g[2];
  uint32_t a[2], b[2];
  for (int r = 0; r < 2; r++) {
    g[r] = tracked_gen(r, &a[r], 2);
    b[r] = nsp_tracegen_comm(g[r], 0xbbbb, r, 2);
    AR(g[r], a[r]);
    AR(g[r], b[r]);
    nsp_tracegen_set_auto_complete(g[r], 0, 0);
  }
  AR(g[0], a[0]); /* A seq 2: rank 1 never comes */
  AR(g[1], b[1]); /* B seq 2: rank 0 never comes */
  struct nsp_job *job = analyse_gens(g, 2);
  assert_int_equal(nsp_job_nfindings(job), 2);
  for (size_t i = 0; i < 2; i++) {
    const struct nsp_finding *f = nsp_job_finding(job, i);
    assert_int_equal(f->kind, NSP_FIND_HANG);
    assert_int_equal(f->seq, 2);
    assert_true(f->cause == SIZE_MAX);
    assert_contains(f->message, "circular wait");
  }
  assert_true(nsp_job_finding(job, 0)->comm_id == 0xaaaa); /* began first */
  nsp_job_destroy(job);
}

/* Group completions apply to every call of the group; a completion read
 * before its call still completes it; a group without one hangs. */
static void test_groups_and_early_completion(void **state) {
  (void)state;
  struct nsp_tracegen *g[2];
  uint32_t w[2];
  for (int r = 0; r < 2; r++) {
    g[r] = tracked_gen(r, &w[r], 2);
    nsp_tracegen_group(g[r], 1); /* completes as a group */
    nsp_tracegen_p2p(g[r], NSP_API_Send, w[r], 4, ncclInt32, 1 - r);
    nsp_tracegen_p2p(g[r], NSP_API_Recv, w[r], 4, ncclInt32, 1 - r);
    AR(g[r], w[r]); /* seq 1, in the group */
    nsp_tracegen_group(g[r], 0);
    nsp_tracegen_set_auto_complete(g[r], 0, 0);
  }
  /* rank 0: seq 2's completion comes first, then its call */
  assert_int_equal(nsp_tracegen_completion(g[0], w[0], NSP_API_AllReduce, 2, -1, 0, NSP_DONE_OK, 0, 0, 5), 0);
  AR(g[0], w[0]);
  AR(g[1], w[1]);
  assert_int_equal(nsp_tracegen_complete_last(g[1], NSP_DONE_OK, 0), 0);
  struct nsp_job *job = analyse_gens(g, 2);
  for (size_t i = 0; i < nsp_job_nfindings(job); i++) print_message("unexpected: %.900s\n", nsp_job_finding(job, i)->message);
  assert_int_equal(nsp_job_nfindings(job), 0);
  nsp_job_destroy(job);

  /* The same group, its completion missing on rank 1: seq 1 never
   * completed there, although both issued it. */
  for (int r = 0; r < 2; r++) {
    g[r] = tracked_gen(r, &w[r], 2);
    if (r == 1) nsp_tracegen_set_auto_complete(g[r], 0, 0);
    nsp_tracegen_group(g[r], 1);
    nsp_tracegen_p2p(g[r], NSP_API_Send, w[r], 4, ncclInt32, 1 - r);
    nsp_tracegen_p2p(g[r], NSP_API_Recv, w[r], 4, ncclInt32, 1 - r);
    AR(g[r], w[r]);
    nsp_tracegen_group(g[r], 0);
  }
  job = analyse_gens(g, 2);
  assert_int_equal(nsp_job_nfindings(job), 1);
  const struct nsp_finding *f = nsp_job_finding(job, 0);
  assert_int_equal(f->kind, NSP_FIND_NEVER_COMPLETED);
  assert_int_equal(f->seq, 1);
  assert_side(&f->sides[0], "1");
  assert_side(&f->sides[1], "0");
  nsp_job_destroy(job);
}

/* A stream runs in order: a call without a COMPLETION record (the shim
 * could not track it) before one that completed on the same stream has
 * completed too. */
static void test_stream_order(void **state) {
  (void)state;
  struct nsp_tracegen *g[2];
  uint32_t w[2];
  for (int r = 0; r < 2; r++) g[r] = tracked_gen(r, &w[r], 2);
  nsp_tracegen_set_auto_complete(g[0], 0, 0);
  AR(g[0], w[0]); /* seq 1: no record */
  nsp_tracegen_set_auto_complete(g[0], 1, 1000);
  AR(g[0], w[0]); /* seq 2: completed */
  for (int i = 0; i < 2; i++) AR(g[1], w[1]);
  struct nsp_job *job = analyse_gens(g, 2);
  assert_int_equal(nsp_job_nfindings(job), 0);
  nsp_job_destroy(job);
}

/* A rank whose call at the seq failed: the hang follows the error, which
 * comes first. */
static void test_hang_after_error(void **state) {
  (void)state;
  struct nsp_tracegen *g[2];
  uint32_t w[2];
  for (int r = 0; r < 2; r++) {
    g[r] = tracked_gen(r, &w[r], 2);
    AR(g[r], w[r]);
  }
  nsp_tracegen_set_auto_complete(g[0], 0, 0);
  AR(g[0], w[0]); /* seq 2 waits */
  nsp_tracegen_fail_next(g[1], ncclSystemError, "connection reset by peer");
  AR(g[1], w[1]); /* seq 2 fails on rank 1, a little later */
  struct nsp_job *job = analyse_gens(g, 2);
  assert_int_equal(nsp_job_nfindings(job), 2);
  const struct nsp_finding *e = nsp_job_finding(job, 0), *f = nsp_job_finding(job, 1);
  assert_int_equal(e->kind, NSP_FIND_ERROR);
  assert_int_equal(f->kind, NSP_FIND_NEVER_COMPLETED);
  assert_int_equal(f->cause, 0);
  assert_int_equal(f->sides[0].role, NSP_ROLE_WAITING);
  assert_side(&f->sides[0], "0");
  assert_int_equal(f->sides[1].role, NSP_ROLE_FAILED);
  assert_side(&f->sides[1], "1");
  assert_contains(f->message, "rank 1 failed it");
  assert_contains(f->message, "this follows the error of rank 1");
  nsp_job_destroy(job);
}

/* The watchdog: rank 0 waits in seq 2 for rank 1, which never comes; 10 s
 * later rank 0's communicator reports a timeout.  The hang is the root;
 * the error follows from it. */
static void test_error_after_hang(void **state) {
  (void)state;
  struct nsp_tracegen *g[2];
  uint32_t w[2];
  for (int r = 0; r < 2; r++) {
    g[r] = tracked_gen(r, &w[r], 2);
    AR(g[r], w[r]);
  }
  nsp_tracegen_set_auto_complete(g[0], 0, 0);
  AR(g[0], w[0]);
  nsp_tracegen_set_time(g[0], nsp_tracegen_now(g[0]) + 10000000000ull);
  nsp_tracegen_async_error(g[0], w[0], NSP_NCCL_TIMEOUT, "Watchdog caught collective operation timeout");
  struct nsp_job *job = analyse_gens(g, 2);
  assert_int_equal(nsp_job_nfindings(job), 2);
  const struct nsp_finding *h = nsp_job_finding(job, 0), *e = nsp_job_finding(job, 1);
  assert_int_equal(h->kind, NSP_FIND_HANG);
  assert_true(h->cause == SIZE_MAX);
  assert_ranks(h->odd_ranks, h->nodd, "1");
  assert_int_equal(e->kind, NSP_FIND_ERROR);
  assert_int_equal(e->cause, 0);
  assert_contains(e->message, "rank 0 was waiting in the hang at seq 2 on communicator 000000000000aaaa");
  assert_string_equal(e->hint_id, "timeout");
  /* 10 s from enqueue to the async error, the end of its trace */
  assert_true(h->sides[1].procs[0].wait_ns >= 10000000000ll);
  nsp_job_destroy(job);
}

/* Ranks whose traces do not track completion are named as such; a rank
 * stuck behind its own earlier call on another communicator that has no
 * hang (a send that never completed) is described, not linked. */
static void test_untracked_rank_and_p2p_block(void **state) {
  (void)state;
  struct nsp_tracegen *g[3];
  uint32_t w[3], x[3];
  for (int r = 0; r < 3; r++) {
    char host[16];
    snprintf(host, sizeof host, "h%d", r);
    g[r] = nsp_tracegen_create(host, 100u + (uint32_t)r, r);
    if (r < 2) {
      nsp_tracegen_set_tracking(g[r], NSP_TRACK_COMPLETION);
      nsp_tracegen_set_auto_complete(g[r], 1, 0);
    }
    w[r] = nsp_tracegen_comm(g[r], 0xaaaa, r, 3);
    x[r] = nsp_tracegen_comm(g[r], 0xcccc, r, 3);
    AR(g[r], w[r]);
  }
  /* rank 1: a send on 0xcccc that never completes, then nothing */
  nsp_tracegen_set_auto_complete(g[1], 0, 0);
  nsp_tracegen_p2p(g[1], NSP_API_Send, x[1], 4, ncclInt32, 2);
  nsp_tracegen_p2p(g[2], NSP_API_Recv, x[2], 4, ncclInt32, 1);
  /* rank 0 waits in seq 2 on 0xaaaa; rank 2 (untracked) issued it */
  nsp_tracegen_set_auto_complete(g[0], 0, 0);
  AR(g[0], w[0]);
  AR(g[2], w[2]);
  struct nsp_job *job = analyse_gens(g, 3);
  assert_int_equal(count_kind(job, NSP_FIND_HANG), 1);
  const struct nsp_finding *f = NULL;
  for (size_t i = 0; i < nsp_job_nfindings(job); i++)
    if (nsp_job_finding(job, i)->kind == NSP_FIND_HANG) f = nsp_job_finding(job, i);
  assert_int_equal(f->seq, 2);
  assert_int_equal(f->nsides, 3);
  assert_int_equal(f->sides[0].role, NSP_ROLE_NOT_ARRIVED);
  assert_side(&f->sides[0], "1");
  assert_int_equal(f->sides[1].role, NSP_ROLE_WAITING);
  assert_side(&f->sides[1], "0");
  assert_int_equal(f->sides[2].role, NSP_ROLE_UNTRACKED);
  assert_side(&f->sides[2], "2");
  assert_int_equal(f->sides[2].procs[0].call.done, -1);
  const struct nsp_proc *p = &f->sides[0].procs[0];
  assert_int_equal(p->call.api, NSP_API_Send);
  assert_int_equal(p->call.done, 0);
  assert_int_equal(p->blocked.api, NSP_API_Send);
  assert_true(f->cause == SIZE_MAX);
  assert_contains(f->message, "rank 1's last call: send 4 x int32 to 2 (16 bytes) seq 1 on communicator "
                              "000000000000cccc (never completed)");
  assert_contains(f->message, "rank 2 issued it (completion not tracked)");
  nsp_job_destroy(job);
}

/* ---- lost records ------------------------------------------------------- */

/* The c11 shape on two tracked ranks: both complete seqs 1-4, rank 0 then
 * waits in seq 5.  With drop_after, rank 1's trace ends in a DROPPED
 * record (3 records lost, ring full) after its seq 4: it may well have
 * issued seq 5.  With drop_before, the DROPPED record comes before its
 * seq 4 (the trace covers seq 4 and what followed). */
static struct nsp_job *c11_like(int drop_after, int drop_before) {
  struct nsp_tracegen *g[2];
  uint32_t w[2];
  for (int r = 0; r < 2; r++) {
    g[r] = tracked_gen(r, &w[r], 2);
    for (int i = 0; i < 3; i++) assert_true(AR(g[r], w[r]) > 0);
  }
  if (drop_before) assert_int_equal(nsp_tracegen_dropped(g[1], 2, NSP_DROP_RING_FULL), 0);
  for (int r = 0; r < 2; r++) assert_int_equal(AR(g[r], w[r]), 4);
  if (drop_after) assert_int_equal(nsp_tracegen_dropped(g[1], 3, NSP_DROP_RING_FULL), 0);
  nsp_tracegen_set_auto_complete(g[0], 0, 0);
  assert_int_equal(AR(g[0], w[0]), 5); /* never completes */
  return analyse_gens(g, 2);
}

/* Two tracked ranks through seq 5, rank 0's seq 5 completed, rank 1's
 * left without a COMPLETION (for the tests of lost completions). */
static void five_ars_rank1_open(struct nsp_tracegen *g[2], uint32_t w[2]) {
  for (int r = 0; r < 2; r++) {
    g[r] = tracked_gen(r, &w[r], 2);
    for (int i = 0; i < 4; i++) assert_true(AR(g[r], w[r]) > 0);
  }
  assert_int_equal(AR(g[0], w[0]), 5);
  nsp_tracegen_set_auto_complete(g[1], 0, 0);
  assert_int_equal(AR(g[1], w[1]), 5);
}

/* Both ranks make seqs 1-5; rank 1's COMPLETION records after its seq 5
 * are lost (its trace ends in a DROPPED record of `lost` records, ring
 * full): whether seq 5 completed there is not known, so it is no
 * "never-completed" (the analyzer would judge a record it lost). */
static void test_hang_completion_dropped_not_judged(void **state) {
  (void)state;
  struct nsp_tracegen *g[2];
  uint32_t w[2];
  five_ars_rank1_open(g, w);
  assert_int_equal(nsp_tracegen_dropped(g[1], 4, NSP_DROP_RING_FULL), 0);
  struct nsp_job *job = analyse_gens(g, 2);
  for (size_t i = 0; i < nsp_job_nfindings(job); i++) print_message("unexpected: %.900s\n", nsp_job_finding(job, i)->message);
  assert_int_equal(nsp_job_nfindings(job), 0);
  nsp_job_destroy(job);
}

/* Rank 1's COMPLETION of seq 5 was lost (a DROPPED record after it),
 * then both ranks hang in seq 6: the hang is at seq 6, not at the seq
 * whose completion the trace lost. */
static void test_hang_completion_lost_before_next_call(void **state) {
  (void)state;
  struct nsp_tracegen *g[2];
  uint32_t w[2];
  five_ars_rank1_open(g, w);
  nsp_tracegen_set_auto_complete(g[0], 0, 0);
  assert_int_equal(AR(g[0], w[0]), 6);
  assert_int_equal(nsp_tracegen_dropped(g[1], 1, NSP_DROP_RING_FULL), 0); /* seq 5's COMPLETION */
  assert_int_equal(AR(g[1], w[1]), 6);
  struct nsp_job *job = analyse_gens(g, 2);
  const struct nsp_finding *f = NULL;
  for (size_t i = 0; i < nsp_job_nfindings(job); i++) {
    const struct nsp_finding *x = nsp_job_finding(job, i);
    print_message("finding: %.900s\n", x->message);
    if (x->kind == NSP_FIND_HANG || x->kind == NSP_FIND_NEVER_COMPLETED) f = x;
  }
  assert_non_null(f);
  assert_int_equal(f->seq, 6);
  nsp_job_destroy(job);
}

/* The hang finding on communicator 0xaaaa, or a test failure. */
static const struct nsp_finding *hang_of(const struct nsp_job *job) {
  const struct nsp_finding *f = NULL;
  for (size_t i = 0; i < nsp_job_nfindings(job); i++) {
    const struct nsp_finding *x = nsp_job_finding(job, i);
    if (x->kind == NSP_FIND_HANG || x->kind == NSP_FIND_NEVER_COMPLETED) {
      assert_null(f);
      f = x;
    }
  }
  assert_non_null(f);
  assert_true(f->comm_id == 0xaaaa);
  return f;
}

/* (a) Rank 1's trace lost records after its seq 4 while rank 0 waits in
 * seq 5: whether rank 1 arrived is not known, so it is not named as "did
 * not arrive" but as arrival-unknown, after the waiting side. */
static void test_hang_drop_after_last_coll_unknown(void **state) {
  (void)state;
  struct nsp_job *job = c11_like(1, 0);
  assert_int_equal(nsp_job_trace(job, 1)->dropped, 3);
  const struct nsp_finding *f = hang_of(job);
  assert_int_equal(f->kind, NSP_FIND_HANG);
  assert_int_equal(f->seq, 5);
  assert_true(f->cause == SIZE_MAX);
  for (size_t s = 0; s < f->nsides; s++) assert_int_not_equal(f->sides[s].role, NSP_ROLE_NOT_ARRIVED);
  assert_int_equal(f->nsides, 2);
  const struct nsp_side *wt = &f->sides[0], *un = &f->sides[1];
  assert_int_equal(wt->role, NSP_ROLE_WAITING);
  assert_side(wt, "0");
  assert_int_equal(un->role, NSP_ROLE_ARRIVAL_UNKNOWN);
  assert_string_equal(nsp_side_role_name(un->role), "arrival-unknown");
  assert_side(un, "1");
  assert_string_equal(un->text, "arrival at seq 5 unknown: its trace lost records after seq 4");
  /* Its last collective the trace covers: seq 4 here. */
  assert_int_equal(un->procs[0].call.api, NSP_API_AllReduce);
  assert_int_equal(un->procs[0].call.seq, 4);
  assert_true(un->procs[0].call.comm_id == 0xaaaa);
  /* The ranks to check: the one whose arrival is unknown. */
  assert_ranks(f->odd_ranks, f->nodd, "1");
  assert_null(strstr(f->message, "did not arrive"));
  assert_null(strstr(f->message, "the rank to look at"));
  assert_contains(f->message, "seq 5 (all-reduce 8 x float32 sum (32 bytes)) did not complete: whether rank 1 (h1 "
                              "pid 101) arrived is not known; rank 0 waits inside it; rank 1's trace lost records "
                              "after its seq 4 on this communicator (3 dropped: ring full), so it may have issued "
                              "seq 5");
  assert_null(strstr(f->hint, "did not arrive"));
  assert_contains(f->hint, "lost records");
  assert_contains(f->hint, "NCCLSPY_RING");
  /* The summary says the same of the coverage. */
  assert_contains(nsp_job_summary(job), "rank 1's trace stops covering communicator 000000000000aaaa at seq 4");
  nsp_job_destroy(job);
}

/* (b) The same job without the drop: rank 1 did not arrive (c11). */
static void test_hang_no_drop_not_arrived(void **state) {
  (void)state;
  struct nsp_job *job = c11_like(0, 0);
  assert_int_equal(nsp_job_trace(job, 1)->dropped, 0);
  const struct nsp_finding *f = hang_of(job);
  assert_int_equal(f->kind, NSP_FIND_HANG);
  assert_int_equal(f->seq, 5);
  assert_int_equal(f->nsides, 2);
  assert_int_equal(f->sides[0].role, NSP_ROLE_NOT_ARRIVED);
  assert_side(&f->sides[0], "1");
  assert_string_equal(f->sides[0].text, "did not arrive at seq 5");
  assert_int_equal(f->sides[1].role, NSP_ROLE_WAITING);
  assert_side(&f->sides[1], "0");
  assert_ranks(f->odd_ranks, f->nodd, "1");
  assert_contains(f->message, "rank 1 (h1 pid 101) did not arrive (the rank to look at); rank 0 waits inside it");
  assert_null(strstr(f->message, "arrived is not known"));
  assert_contains(f->hint, "the ranks that did not arrive are the ones to look at");
  nsp_job_destroy(job);
}

/* Records lost before rank 1's seq 4 leave its trace covering seq 4 and
 * what came after it: it did not arrive at seq 5. */
static void test_hang_drop_before_last_coll(void **state) {
  (void)state;
  struct nsp_job *job = c11_like(0, 1);
  assert_int_equal(nsp_job_trace(job, 1)->dropped, 2);
  const struct nsp_finding *f = hang_of(job);
  assert_int_equal(f->kind, NSP_FIND_HANG);
  assert_int_equal(f->sides[0].role, NSP_ROLE_NOT_ARRIVED);
  assert_side(&f->sides[0], "1");
  assert_contains(f->message, "did not arrive (the rank to look at)");
  nsp_job_destroy(job);
}

/* Three ranks: rank 2 did not arrive at seq 2 (its trace is whole), rank
 * 1's trace lost records (size cap) after seq 1, rank 0 waits.  The hang
 * names rank 2 as the one to look at and rank 1 as arrival-unknown. */
static void test_hang_drop_mixed(void **state) {
  (void)state;
  struct nsp_tracegen *g[3];
  uint32_t w[3];
  for (int r = 0; r < 3; r++) {
    g[r] = tracked_gen(r, &w[r], 3);
    AR(g[r], w[r]);
  }
  assert_int_equal(nsp_tracegen_dropped(g[1], 7, NSP_DROP_SIZE_CAP), 0);
  nsp_tracegen_set_auto_complete(g[0], 0, 0);
  AR(g[0], w[0]);
  struct nsp_job *job = analyse_gens(g, 3);
  const struct nsp_finding *f = hang_of(job);
  assert_int_equal(f->kind, NSP_FIND_HANG);
  assert_int_equal(f->seq, 2);
  assert_int_equal(f->nsides, 3);
  assert_int_equal(f->sides[0].role, NSP_ROLE_NOT_ARRIVED);
  assert_side(&f->sides[0], "2");
  assert_int_equal(f->sides[1].role, NSP_ROLE_WAITING);
  assert_side(&f->sides[1], "0");
  assert_int_equal(f->sides[2].role, NSP_ROLE_ARRIVAL_UNKNOWN);
  assert_side(&f->sides[2], "1");
  assert_ranks(f->odd_ranks, f->nodd, "2");
  assert_contains(f->message, "rank 2 (h2 pid 102) did not arrive (the rank to look at); rank 0 waits inside it; "
                              "whether rank 1 arrived is not known");
  assert_contains(f->message, "rank 1's trace lost records after its seq 1 on this communicator (7 dropped: size "
                              "cap (NCCLSPY_MAX_MB)), so it may have issued seq 2");
  assert_contains(f->message, "rank 2's last call: all-reduce 8 x float32 sum (32 bytes) seq 1");
  nsp_job_destroy(job);
}

/* Call sites: the origin of an error and each send/recv side of a p2p
 * finding get theirs; a stack of NCCL frames only is kept whole. */
static void test_call_sites(void **state) {
  (void)state;
  static const char *const mods[] = {"/lib/libnccl.so.2", "/lib/libncclspy.so"};
  static const uint64_t offs[] = {0x10, 0x20};
  static const char *const syms[] = {"ncclSend", "ncclSend"};
  struct nsp_tracegen *g[2];
  uint32_t w[2];
  for (int r = 0; r < 2; r++) {
    g[r] = nsp_tracegen_create("h", 100u + (uint32_t)r, r);
    nsp_tracegen_set_tracking(g[r], NSP_TRACK_CALLSITES);
    w[r] = nsp_tracegen_comm(g[r], 0xaaaa, r, 2);
    nsp_tracegen_set_site(g[r], nsp_tracegen_callsite(g[r], NSP_SITE_FULL, 2, mods, offs, syms));
  }
  for (int i = 0; i < 2; i++) nsp_tracegen_p2p(g[0], NSP_API_Send, w[0], 8, ncclInt32, 1);
  nsp_tracegen_p2p(g[1], NSP_API_Recv, w[1], 8, ncclInt32, 0);
  AR(g[0], w[0]);
  nsp_tracegen_fail_next(g[1], ncclInternalError, "internal");
  AR(g[1], w[1]);
  struct nsp_job *job = analyse_gens(g, 2);
  assert_int_equal(nsp_job_nfindings(job), 2);
  for (size_t i = 0; i < 2; i++) {
    const struct nsp_finding *f = nsp_job_finding(job, i);
    const struct nsp_callsite *cs = f->sides[0].procs[0].site;
    assert_non_null(cs);
    assert_int_equal(cs->flags, NSP_SITE_FULL);
    assert_int_equal(cs->nframes, 2); /* all NCCL's: nothing left out */
    assert_int_equal(cs->nskipped, 0);
    assert_string_equal(cs->frames[1].module, "/lib/libncclspy.so");
  }
  assert_int_equal(nsp_job_finding(job, 0)->kind, NSP_FIND_P2P_UNMATCHED);
  assert_int_equal(nsp_job_finding(job, 1)->kind, NSP_FIND_ERROR);
  nsp_job_destroy(job);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_c11_hang),
      cmocka_unit_test(test_c01_gpu),
      cmocka_unit_test(test_c12_killed_hang),
      cmocka_unit_test(test_c13_chain),
      cmocka_unit_test(test_untracked_unchanged),
      cmocka_unit_test(test_circular_wait),
      cmocka_unit_test(test_groups_and_early_completion),
      cmocka_unit_test(test_stream_order),
      cmocka_unit_test(test_hang_after_error),
      cmocka_unit_test(test_error_after_hang),
      cmocka_unit_test(test_untracked_rank_and_p2p_block),
      cmocka_unit_test(test_call_sites),
      cmocka_unit_test(test_hang_drop_after_last_coll_unknown),
      cmocka_unit_test(test_hang_no_drop_not_arrived),
      cmocka_unit_test(test_hang_drop_before_last_coll),
      cmocka_unit_test(test_hang_drop_mixed),
      cmocka_unit_test(test_hang_completion_dropped_not_judged),
      cmocka_unit_test(test_hang_completion_lost_before_next_call),

  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
