/* test_an_calls.c - the calls one by one (nsp_job_calls_open,
 * nsp_calls_next): every collective and send/recv of the cases read again
 * with its completion, on the job clock (each trace's clock pair), the
 * calls that never completed and those in flight marked so, and the
 * filter (job ranks, communicators, seq windows, time window). */
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

#define MAXEV 64

/* The generator's clocks: wall = monotonic + this. */
#define WALL_OFF (1700000000000000000ll - 1000000000ll)

/* Every call the filter lets through (at most MAXEV), in the order
 * yielded. */
static size_t walk(const struct nsp_job *job, const struct nsp_calls_filter *f, struct nsp_call_event *out) {
  struct nsp_calls *it = NULL;
  assert_int_equal(nsp_job_calls_open(job, f, &it), 0);
  const struct nsp_call_event *ev;
  size_t n = 0;
  int r;
  while ((r = nsp_calls_next(it, &ev)) == 1) {
    assert_true(n < MAXEV);
    out[n++] = *ev;
    out[n - 1].call.last_error = NULL; /* not valid past the next call */
  }
  assert_int_equal(r, 0);
  assert_int_equal(nsp_calls_skipped(it, NULL), 0);
  nsp_calls_close(it);
  return n;
}

/* c02: four ranks, one all-reduce each, no completion tracking. */
static void test_c02(void **state) {
  (void)state;
  struct nsp_job *job = analyse_case("c02", 4);
  struct nsp_call_event ev[MAXEV];
  assert_int_equal(walk(job, NULL, ev), 4);
  for (int r = 0; r < 4; r++) {
    assert_int_equal(ev[r].trace, (size_t)r);
    assert_int_equal(ev[r].job_rank, r);
    assert_int_equal(ev[r].comm_rank, r);
    assert_non_null(ev[r].comm);
    assert_true(ev[r].comm->id == NSP_CASE_WORLD);
    assert_true(ev[r].call.comm_id == NSP_CASE_WORLD);
    assert_int_equal(ev[r].call.api, NSP_API_AllReduce);
    assert_int_equal(ev[r].call.seq, 1);
    assert_int_equal(ev[r].call.count, 1u << 20);
    assert_int_equal(ev[r].call.dtype, r % 2 ? ncclFloat32 : ncclBfloat16);
    assert_int_equal(ev[r].call.redop, ncclSum);
    assert_int_equal(ev[r].call.done, -1); /* not tracked */
    assert_int_equal(ev[r].call.in_flight, 0);
    /* The COMM record at 1e9 + 1000, the call one step on, 100 ns long. */
    assert_true(ev[r].enter_ns == WALL_OFF + 1000000000ll + 2000);
    assert_true(ev[r].exit_ns == ev[r].enter_ns + 100);
    assert_true(ev[r].call.time_ns == ev[r].enter_ns);
    assert_true(ev[r].gpu_start_ns == 0 && ev[r].gpu_end_ns == 0);
  }
  char buf[128];
  nsp_format_call(buf, sizeof buf, &ev[1].call);
  assert_string_equal(buf, "all-reduce 1048576 x float32 sum (4194304 bytes)");
  nsp_job_destroy(job);
}

/* c11 (GPU, tracked): rank 0 issues seqs 1-5, 5 never completes (its
 * completion says abandoned); rank 1 issues 1-4.  Each completed call
 * has its GPU time (50 us, from its exit). */
static void test_c11(void **state) {
  (void)state;
  struct nsp_job *job = analyse_case("c11", 2);
  struct nsp_call_event ev[MAXEV];
  size_t n = walk(job, NULL, ev);
  assert_int_equal(n, 9);
  size_t per[2] = {0, 0};
  for (size_t i = 0; i < n; i++) {
    const struct nsp_call_event *e = &ev[i];
    int r = e->job_rank;
    assert_true(r == 0 || r == 1);
    per[r]++;
    assert_int_equal(e->call.seq, per[r]); /* in seq order, trace by trace */
    if (i) assert_true(ev[i - 1].trace < e->trace || ev[i - 1].enter_ns < e->enter_ns);
    assert_true(e->exit_ns > e->enter_ns);
    assert_non_null(e->site); /* torch's all-reduce */
    if (r == 0 && e->call.seq == 5) {
      assert_int_equal(e->call.done, 0);
      assert_true(e->done_flags & NSP_DONE_ABANDONED);
      assert_true(e->gpu_start_ns == 0);
      continue;
    }
    assert_int_equal(e->call.done, 1);
    assert_true(e->done_flags & NSP_DONE_OK);
    assert_true(e->gpu_start_ns == e->exit_ns);
    assert_true(e->gpu_end_ns == e->gpu_start_ns + 50000);
  }
  assert_int_equal(per[0], 5);
  assert_int_equal(per[1], 4);

  /* Rank 1 alone: its trace only. */
  int one = 1;
  struct nsp_calls_filter f = {.ranks = &one, .nranks = 1};
  assert_int_equal(walk(job, &f, ev), 4);
  for (int i = 0; i < 4; i++) assert_int_equal(ev[i].job_rank, 1);

  /* Seqs 4..5 of the world communicator: 2 on rank 0, 1 on rank 1. */
  struct nsp_seq_window w = {NSP_CASE_WORLD, 4, 5};
  f = (struct nsp_calls_filter){.windows = &w, .nwindows = 1};
  assert_int_equal(walk(job, &f, ev), 3);
  assert_int_equal(ev[0].call.seq, 4);
  assert_int_equal(ev[1].call.seq, 5);
  assert_int_equal(ev[2].call.seq, 4);
  assert_int_equal(ev[2].job_rank, 1);

  /* Another communicator: nothing; this one: all. */
  uint64_t other = NSP_CASE_CHILD0, world = NSP_CASE_WORLD;
  f = (struct nsp_calls_filter){.comms = &other, .ncomms = 1};
  assert_int_equal(walk(job, &f, ev), 0);
  f = (struct nsp_calls_filter){.comms = &world, .ncomms = 1};
  assert_int_equal(walk(job, &f, ev), 9);

  /* A time window after every call returned and completed: only the call
   * that never completed reaches into it. */
  struct nsp_call_event all[MAXEV];
  walk(job, NULL, all);
  int64_t late = 0;
  for (size_t i = 0; i < n; i++)
    if (all[i].call.done == 1 && all[i].gpu_end_ns > late) late = all[i].gpu_end_ns;
  f = (struct nsp_calls_filter){.from_ns = late + 1};
  assert_int_equal(walk(job, &f, ev), 1);
  assert_int_equal(ev[0].call.seq, 5);
  assert_int_equal(ev[0].call.done, 0);
  /* And one ending before rank 0's seq 2: seq 1 on both ranks. */
  f = (struct nsp_calls_filter){.to_ns = all[1].enter_ns};
  assert_int_equal(walk(job, &f, ev), 2);
  assert_int_equal(ev[0].call.seq, 1);
  assert_int_equal(ev[1].call.seq, 1);
  nsp_job_destroy(job);
}

/* c07: ranks 2-3 have another monotonic clock; on the job clock their
 * seq 1 sits with the others'.  Rank 3's seq 50 failed: not enqueued. */
static void test_c07_clock(void **state) {
  (void)state;
  struct nsp_job *job = analyse_case("c07", 4);
  struct nsp_seq_window w[] = {{NSP_CASE_WORLD, 1, 1}, {NSP_CASE_WORLD, 50, 50}};
  struct nsp_calls_filter f = {.windows = w, .nwindows = 2};
  struct nsp_call_event ev[MAXEV];
  size_t n = walk(job, &f, ev);
  int64_t first = 0;
  size_t failed = 0;
  for (size_t i = 0; i < n; i++) {
    if (ev[i].call.seq == 1) {
      if (!first) first = ev[i].enter_ns;
      assert_true(ev[i].enter_ns == first);
    }
    if (ev[i].call.result) {
      failed++;
      assert_int_equal(ev[i].job_rank, 3);
      assert_int_equal(ev[i].call.seq, 50);
      assert_int_equal(ev[i].call.result, ncclSystemError);
      assert_int_equal(ev[i].call.done, 0);
    }
  }
  assert_int_equal(failed, 1);
  nsp_job_destroy(job);
}

/* A tracked group of a send and a recv completes as one: both calls get
 * the group's GPU time and id; a call in flight at the end (its ring's
 * INFLIGHT) is marked so, with no exit, on its communicator's stream. */
static void test_group_and_inflight(void **state) {
  (void)state;
  struct nsp_tracegen *g[2];
  uint32_t w[2];
  for (int r = 0; r < 2; r++) {
    g[r] = rank_on(r, 2, NSP_CASE_WORLD, 1, &w[r]);
    nsp_tracegen_coll(g[r], NSP_API_AllReduce, w[r], 16, ncclFloat32, ncclSum, -1);
    nsp_tracegen_group(g[r], 1);
    nsp_tracegen_p2p(g[r], NSP_API_Send, w[r], 8, ncclFloat32, 1 - r);
    nsp_tracegen_p2p(g[r], NSP_API_Recv, w[r], 8, ncclFloat32, 1 - r);
    nsp_tracegen_group(g[r], 0);
  }
  /* Rank 1 is killed inside seq 2 (it never returned). */
  assert_int_equal(nsp_tracegen_ringstate(g[1], 0, 0, 0, 1, 0), 0);
  uint64_t seq = 0;
  assert_int_equal(nsp_tracegen_inflight_coll(g[1], NSP_API_AllReduce, w[1], 16, ncclFloat32, ncclSum, -1, 0, &seq),
                   0);
  assert_int_equal(seq, 2);
  struct nsp_job *job = analyse_gens(g, 2);
  struct nsp_call_event ev[MAXEV];
  size_t n = walk(job, NULL, ev);
  assert_int_equal(n, 7);
  size_t sends = 0, inflight = 0;
  for (size_t i = 0; i < n; i++) {
    const struct nsp_call_event *e = &ev[i];
    if (e->call.api == NSP_API_Send || e->call.api == NSP_API_Recv) {
      sends++;
      assert_true(e->group_id != 0);
      assert_int_equal(e->call.done, 1);
      assert_true(e->gpu_end_ns == e->gpu_start_ns + 1000);
      assert_int_equal(e->call.peer, 1 - e->job_rank);
      assert_int_equal(e->call.seq, 1);
    }
    if (e->call.in_flight) {
      inflight++;
      assert_int_equal(e->job_rank, 1);
      assert_int_equal(e->comm_rank, 1);
      assert_int_equal(e->call.seq, 2);
      assert_true(e->exit_ns == 0);
      assert_int_equal(e->call.done, 0);
      assert_true(e->stream == ev[i - 1].stream);
      assert_true(i == n - 1); /* after every other call of its trace */
    }
  }
  assert_int_equal(sends, 4);
  assert_int_equal(inflight, 1);
  /* The group calls too, when asked: two group-start and two group-end
   * calls more. */
  struct nsp_calls_filter f = {.flags = NSP_CALLS_ALL_APIS};
  assert_int_equal(walk(job, &f, ev), 11);
  nsp_job_destroy(job);
}

static void test_state(void **state) {
  (void)state;
  struct nsp_job *job = nsp_job_create();
  assert_int_equal(nsp_case_add("c02", job), 4);
  struct nsp_calls *it = NULL;
  assert_int_equal(nsp_job_calls_open(job, NULL, &it), NSP_AN_ESTATE);
  assert_null(it);
  assert_int_equal(nsp_job_calls_open(NULL, NULL, &it), NSP_AN_EINVAL);
  nsp_calls_close(NULL);
  nsp_job_destroy(job);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_c02),
      cmocka_unit_test(test_c11),
      cmocka_unit_test(test_c07_clock),
      cmocka_unit_test(test_group_and_inflight),
      cmocka_unit_test(test_state),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
