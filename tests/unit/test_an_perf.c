/* test_an_perf.c - `ncclspy perf`'s figures: nccl-tests' size and bus
 * bandwidth conventions, GPU-time percentiles and bandwidths per size
 * bucket from COMPLETION records (single calls and groups), failed,
 * abandoned and untracked calls counted but never timed, arrival spreads
 * aligned across hosts by each trace's clock pair, stragglers, and the
 * same figures for any number of threads. */
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

static struct nsp_job *perf_gens(struct nsp_tracegen **g, int n) {
  struct nsp_job *job = job_of_gens(g, n);
  assert_int_equal(nsp_job_perf(job), NSP_AN_ESTATE); /* analyse first */
  assert_int_equal(nsp_job_analyze(job), 0);
  assert_int_equal(nsp_job_perf(job), 0);
  assert_int_equal(nsp_job_perf(job), NSP_AN_ESTATE); /* once */
  return job;
}

static const struct nsp_perf_row *row(const struct nsp_perf_comm *pc, int api, int log2) {
  for (size_t i = 0; i < pc->nrows; i++)
    if (pc->rows[i].api == api && pc->rows[i].log2 == log2) return &pc->rows[i];
  fail_msg("no row %s 2^%d", nsp_op_name(api), log2);
  return NULL;
}

static void assert_near(double got, double want) {
  double d = got - want, tol = 1e-9 * ((want < 0 ? -want : want) + 1);
  if (d > tol || d < -tol) fail_msg("%.12g != %.12g", got, want);
}

/* S and the busbw factor, per op, as nccl-tests has them (8 ranks). */
static void test_formulas(void **state) {
  (void)state;
  static const struct {
    int api;
    uint64_t size;
    double factor;
  } ops[] = {
      {NSP_API_AllReduce, 4096, 1.75},     {NSP_API_AllGather, 32768, 0.875}, {NSP_API_ReduceScatter, 32768, 0.875},
      {NSP_API_AlltoAll, 32768, 0.875},    {NSP_API_Gather, 32768, 0.875},    {NSP_API_Scatter, 32768, 0.875},
      {NSP_API_Broadcast, 4096, 1.0},      {NSP_API_Reduce, 4096, 1.0},       {NSP_API_Send, 4096, 1.0},
      {NSP_API_Recv, 4096, 1.0},
  };
  for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
    assert_true(nsp_perf_size(ops[i].api, 1024, ncclFloat32, 8) == ops[i].size);
    assert_near(nsp_perf_busbw_factor(ops[i].api, 8), ops[i].factor);
  }
  assert_near(nsp_perf_busbw_factor(NSP_API_AllReduce, 2), 1.0);
  assert_true(nsp_perf_size(NSP_API_AllReduce, 10, 99, 8) == 0); /* unknown dtype */
  assert_true(nsp_perf_size(NSP_API_AllReduce, UINT64_MAX, ncclFloat64, 8) == 0);
}

/* GPU times: 100, 200, 300 us per rank for 1 MiB all-reduces (a fourth
 * untimed), a send/recv group timed as one sample per op. */
static void test_durations(void **state) {
  (void)state;
  struct nsp_tracegen *g[2];
  for (int r = 0; r < 2; r++) {
    g[r] = nsp_tracegen_create("h", 100u + (uint32_t)r, r);
    nsp_tracegen_set_tracking(g[r], NSP_TRACK_COMPLETION | NSP_TRACK_TIMING);
    uint32_t w = nsp_tracegen_comm(g[r], 0xaaaa, r, 2);
    for (int i = 1; i <= 4; i++) {
      nsp_tracegen_coll(g[r], NSP_API_AllReduce, w, 262144, ncclFloat32, ncclSum, -1);
      if (i < 4) assert_int_equal(nsp_tracegen_complete_last(g[r], NSP_DONE_OK | NSP_DONE_TIMED, 100000u * i), 0);
      else assert_int_equal(nsp_tracegen_complete_last(g[r], NSP_DONE_OK, 0), 0);
    }
    /* group 1: a send and a recv of 4 KiB, 10 us; group 2: two sends of 2 KiB and a recv, 20 us */
    nsp_tracegen_group(g[r], 1);
    nsp_tracegen_p2p(g[r], NSP_API_Send, w, 1024, ncclFloat32, 1 - r);
    nsp_tracegen_p2p(g[r], NSP_API_Recv, w, 1024, ncclFloat32, 1 - r);
    nsp_tracegen_group(g[r], 0);
    assert_int_equal(nsp_tracegen_complete_last(g[r], NSP_DONE_OK | NSP_DONE_TIMED, 10000), 0);
    nsp_tracegen_group(g[r], 1);
    nsp_tracegen_p2p(g[r], NSP_API_Send, w, 512, ncclFloat32, 1 - r);
    nsp_tracegen_p2p(g[r], NSP_API_Send, w, 512, ncclFloat32, 1 - r);
    nsp_tracegen_p2p(g[r], NSP_API_Recv, w, 1024, ncclFloat32, 1 - r);
    nsp_tracegen_group(g[r], 0);
    assert_int_equal(nsp_tracegen_complete_last(g[r], NSP_DONE_OK | NSP_DONE_TIMED, 20000), 0);
  }
  struct nsp_job *job = perf_gens(g, 2);
  assert_int_equal(nsp_job_nperf(job), 1);
  const struct nsp_perf_comm *pc = nsp_job_perf_comm(job, 0);
  assert_true(pc->comm_id == 0xaaaa);
  const struct nsp_perf_row *ar = row(pc, NSP_API_AllReduce, 20);
  assert_int_equal(ar->calls, 8);
  assert_int_equal(ar->timed, 6);
  assert_int_equal(ar->p50_ns, 200000); /* nearest rank: 3rd of 6 */
  assert_int_equal(ar->p99_ns, 300000);
  assert_near(ar->algbw_gbs, 6.0 * 1048576 / (2 * 600000.0));
  assert_near(ar->busbw_gbs, ar->algbw_gbs * 1.0); /* 2(n-1)/n = 1 for 2 ranks */
  /* Sends: per call, two buckets; timed samples sum a group's sends. */
  const struct nsp_perf_row *s12 = row(pc, NSP_API_Send, 12), *s11 = row(pc, NSP_API_Send, 11);
  assert_int_equal(s12->calls, 2);
  assert_int_equal(s12->timed, 4);
  assert_int_equal(s12->p50_ns, 10000);
  assert_int_equal(s12->p99_ns, 20000);
  assert_near(s12->algbw_gbs, 4 * 4096 / 60000.0);
  assert_int_equal(s11->calls, 4);
  assert_int_equal(s11->timed, 0);
  assert_int_equal(s11->p50_ns, 0);
  const struct nsp_perf_row *rv = row(pc, NSP_API_Recv, 12);
  assert_int_equal(rv->calls, 4);
  assert_int_equal(rv->timed, 4);
  /* rows by op, then exact size */
  for (size_t i = 1; i < pc->nrows; i++)
    assert_true(pc->rows[i - 1].api < pc->rows[i].api ||
                (pc->rows[i - 1].api == pc->rows[i].api && pc->rows[i - 1].bytes < pc->rows[i].bytes));
  /* Each line says its exact size and count per rank, as nccl-tests does. */
  assert_true(ar->bytes == 1048576 && ar->count == 262144 && ar->dtype == ncclFloat32 && ar->redop == ncclSum &&
              ar->root == -1);
  assert_true(s11->bytes == 2048 && s11->count == 512 && s11->redop == -1);
  nsp_job_destroy(job);
}

#define TEN_S 10000000000ull

/* Only calls that completed are timed.  Per rank, 1 MiB all-reduces:
 * ten complete in 10..100 us; the rest fail, are abandoned or untracked,
 * several with a 10 s "GPU time" that must move neither p99 nor the
 * bandwidth.  Also a failed ncclGroupEnd and an asynchronous error. */
static void test_failed_not_timed(void **state) {
  (void)state;
  struct nsp_tracegen *g[2];
  for (int r = 0; r < 2; r++) {
    g[r] = nsp_tracegen_create("h", 100u + (uint32_t)r, r);
    nsp_tracegen_set_tracking(g[r], NSP_TRACK_COMPLETION | NSP_TRACK_TIMING);
    uint32_t w = nsp_tracegen_comm(g[r], 0xbbbb, r, 2), x = nsp_tracegen_comm(g[r], 0xcccc, r, 2);
    for (uint64_t i = 1; i <= 10; i++) {
      nsp_tracegen_coll(g[r], NSP_API_AllReduce, w, 262144, ncclFloat32, ncclSum, -1);
      assert_int_equal(nsp_tracegen_complete_last(g[r], NSP_DONE_OK | NSP_DONE_TIMED, 10000 * i), 0);
    }
    /* completions that say the work failed or is not known */
    static const uint32_t bad[] = {
        NSP_DONE_OK | NSP_DONE_TIMED | NSP_DONE_ERROR,     NSP_DONE_OK | NSP_DONE_TIMED | NSP_DONE_ABANDONED,
        NSP_DONE_ABANDONED,                                NSP_DONE_ERROR,
        NSP_DONE_OK | NSP_DONE_TIMED | NSP_DONE_UNTRACKED, NSP_DONE_UNTRACKED,
        NSP_DONE_OK | NSP_DONE_TIMED | NSP_DONE_CAPTURED,  NSP_DONE_CAPTURED,
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
      nsp_tracegen_coll(g[r], NSP_API_AllReduce, w, 262144, ncclFloat32, ncclSum, -1);
      assert_int_equal(nsp_tracegen_complete_last(g[r], bad[i], TEN_S), 0);
    }
    /* a call that returned an error */
    nsp_tracegen_fail_next(g[r], ncclUnhandledCudaError, "cudaErrorLaunchFailure");
    nsp_tracegen_coll(g[r], NSP_API_AllReduce, w, 262144, ncclFloat32, ncclSum, -1);
    /* group 1: a send and a recv of 4 KiB whose ncclGroupEnd failed; a
     * (hand-made) completion of the group later must not time them */
    nsp_tracegen_group(g[r], 1);
    nsp_tracegen_p2p(g[r], NSP_API_Send, w, 1024, ncclFloat32, 1 - r);
    nsp_tracegen_p2p(g[r], NSP_API_Recv, w, 1024, ncclFloat32, 1 - r);
    nsp_tracegen_fail_next(g[r], ncclRemoteError, "peer gone");
    nsp_tracegen_group(g[r], 0);
    uint64_t now = nsp_tracegen_now(g[r]);
    assert_int_equal(nsp_tracegen_completion(g[r], 0, 0, 0, -1, 1, NSP_DONE_OK | NSP_DONE_TIMED, now, now + TEN_S,
                                             now + TEN_S + 1000),
                     0);
    /* comm x: one 32-byte all-reduce done (500 ns) before its async error,
     * one in flight then that "completes" 10 s later */
    nsp_tracegen_coll(g[r], NSP_API_AllReduce, x, 8, ncclFloat32, ncclSum, -1);
    assert_int_equal(nsp_tracegen_complete_last(g[r], NSP_DONE_OK | NSP_DONE_TIMED, 500), 0);
    nsp_tracegen_coll(g[r], NSP_API_AllReduce, x, 8, ncclFloat32, ncclSum, -1);
    assert_int_equal(nsp_tracegen_async_error(g[r], x, ncclRemoteError, "connection reset"), 0);
    assert_int_equal(nsp_tracegen_complete_last(g[r], NSP_DONE_OK | NSP_DONE_TIMED, TEN_S), 0);
  }
  struct nsp_job *job = perf_gens(g, 2);
  assert_int_equal(nsp_job_nperf(job), 2);
  const struct nsp_perf_comm *pc = nsp_job_perf_comm(job, 0);
  assert_true(pc->comm_id == 0xbbbb);
  const struct nsp_perf_row *ar = row(pc, NSP_API_AllReduce, 20);
  assert_int_equal(ar->timed, 20);      /* the ten good calls of each rank */
  assert_int_equal(ar->p50_ns, 50000);  /* nearest rank: 10th of 20 */
  assert_int_equal(ar->p99_ns, 100000); /* not 10 s */
  assert_near(ar->algbw_gbs, 20.0 * 1048576 / (2 * 550000.0));
  assert_int_equal(ar->calls, 2 * 19);  /* 10 good, 8 bad completions, 1 error */
  assert_int_equal(ar->failed, 2 * 5);  /* error or abandoned completions, the error */
  assert_int_equal(ar->untracked, 2 * 4);
  const struct nsp_perf_row *sd = row(pc, NSP_API_Send, 12), *rv = row(pc, NSP_API_Recv, 12);
  assert_int_equal(sd->calls, 2);
  assert_int_equal(sd->failed, 2);
  assert_int_equal(sd->timed, 0);
  assert_int_equal(sd->p99_ns, 0);
  assert_int_equal(rv->failed, 2);
  assert_int_equal(rv->timed, 0);
  pc = nsp_job_perf_comm(job, 1);
  assert_true(pc->comm_id == 0xcccc);
  ar = row(pc, NSP_API_AllReduce, 5);
  assert_int_equal(ar->calls, 4);
  assert_int_equal(ar->timed, 2);
  assert_int_equal(ar->failed, 2);
  assert_int_equal(ar->p99_ns, 500);
  nsp_job_destroy(job);
}

/* Abort: the shim abandons the single calls in flight, but a group's
 * events complete once ncclCommAbort has ended its kernels, so its
 * COMPLETION reads OK and timed with the length of the hang; rank 0's
 * comes before the abort's record (written when ncclCommAbort returns),
 * rank 1's after.  A group done before the abort keeps its time. */
static void test_abort_not_timed(void **state) {
  (void)state;
  struct nsp_tracegen *g[2];
  for (int r = 0; r < 2; r++) {
    g[r] = nsp_tracegen_create("h", 100u + (uint32_t)r, r);
    nsp_tracegen_set_tracking(g[r], NSP_TRACK_COMPLETION | NSP_TRACK_TIMING);
    nsp_tracegen_set_step(g[r], 1000000, 100); /* 1 ms between records */
    uint32_t w = nsp_tracegen_comm(g[r], 0xdddd, r, 2);
    nsp_tracegen_group(g[r], 1);
    nsp_tracegen_coll(g[r], NSP_API_AllReduce, w, 262144, ncclFloat32, ncclSum, -1);
    nsp_tracegen_group(g[r], 0);
    assert_int_equal(nsp_tracegen_complete_last(g[r], NSP_DONE_OK | NSP_DONE_TIMED, 40000), 0);
    nsp_tracegen_coll(g[r], NSP_API_AllReduce, w, 262144, ncclFloat32, ncclSum, -1); /* hangs */
    nsp_tracegen_group(g[r], 1);
    nsp_tracegen_coll(g[r], NSP_API_AllReduce, w, 262144, ncclFloat32, ncclSum, -1);
    nsp_tracegen_group(g[r], 0);
    /* the abort: the single call abandoned first, the group ends during it */
    assert_int_equal(nsp_tracegen_completion(g[r], w, NSP_API_AllReduce, 2, -1, 0, NSP_DONE_ABANDONED, 0, 0,
                                             nsp_tracegen_now(g[r])),
                     0);
    if (r == 0) assert_int_equal(nsp_tracegen_complete_last(g[r], NSP_DONE_OK | NSP_DONE_TIMED, TEN_S), 0);
    assert_int_equal(nsp_tracegen_comm_end(g[r], w, NSP_API_CommAbort), 0);
    if (r == 1) assert_int_equal(nsp_tracegen_complete_last(g[r], NSP_DONE_OK | NSP_DONE_TIMED, TEN_S), 0);
  }
  struct nsp_job *job = perf_gens(g, 2);
  const struct nsp_perf_comm *pc = nsp_job_perf_comm(job, 0);
  const struct nsp_perf_row *ar = row(pc, NSP_API_AllReduce, 20);
  assert_int_equal(ar->calls, 6);
  assert_int_equal(ar->timed, 2);
  assert_int_equal(ar->p99_ns, 40000);
  assert_int_equal(ar->failed, 4); /* the abandoned call and the group cut short, per rank */
  assert_int_equal(ar->untracked, 0);
  nsp_job_destroy(job);
}

/* Arrivals on one wall-clock axis: rank 1's monotonic clock started 899 s
 * later, its header pair says so.  Seqs 1-3: rank 1 last by 8 us; 4-10:
 * rank 2 last by 5 us; 11: ranks 1 and 2 tie. */
static void test_arrivals(void **state) {
  (void)state;
  struct nsp_tracegen *g[3];
  uint32_t w[3];
  uint64_t mono[3] = {1000000000ull, 900000000000ull, 1000000000ull};
  for (int r = 0; r < 3; r++) {
    char host[16];
    snprintf(host, sizeof host, "node-%d", r);
    g[r] = nsp_tracegen_create(host, 100u + (uint32_t)r, r);
    nsp_tracegen_set_clock(g[r], 1700000000000000000ull, mono[r]);
    w[r] = nsp_tracegen_comm(g[r], 0xaaaa, r, 3);
  }
  for (uint64_t seq = 1; seq <= 11; seq++) {
    uint64_t off[3] = {0, seq <= 3 ? 8000u : seq <= 10 ? 2000u : 3000u, seq == 11 ? 3000u : 5000u};
    for (int r = 0; r < 3; r++) {
      nsp_tracegen_set_time(g[r], mono[r] + 1000000ull * seq + off[r]);
      nsp_tracegen_coll(g[r], NSP_API_AllReduce, w[r], 8, ncclFloat32, ncclSum, -1);
    }
  }
  struct nsp_job *job = perf_gens(g, 3);
  const struct nsp_perf_comm *pc = nsp_job_perf_comm(job, 0);
  assert_int_equal(pc->collectives, 11);
  assert_int_equal(pc->with_last, 10);
  assert_int_equal(pc->spread_p50_ns, 5000);
  assert_int_equal(pc->spread_p99_ns, 8000);
  assert_int_equal(pc->spread_max_ns, 8000);
  assert_int_equal(pc->nworst, 5);
  assert_int_equal(pc->worst[0].seq, 1);
  assert_int_equal(pc->worst[0].spread_ns, 8000);
  assert_int_equal(pc->worst[0].last_rank, 1);
  assert_int_equal(pc->worst[0].api, NSP_API_AllReduce);
  assert_int_equal(pc->worst[3].seq, 4);
  assert_int_equal(pc->worst[3].last_rank, 2);
  assert_int_equal(pc->nstragglers, 2);
  assert_int_equal(pc->stragglers[0].rank, 2);
  assert_int_equal(pc->stragglers[0].last, 7);
  assert_near(pc->stragglers[0].share, 0.7);
  assert_string_equal(pc->stragglers[0].host, "node-2");
  assert_int_equal(pc->stragglers[0].pid, 102);
  assert_int_equal(pc->stragglers[1].rank, 1);
  assert_int_equal(pc->stragglers[1].last, 3);
  /* No completion tracking: calls counted, nothing timed. */
  const struct nsp_perf_row *ar = row(pc, NSP_API_AllReduce, 5);
  assert_int_equal(ar->calls, 33);
  assert_int_equal(ar->timed, 0);
  nsp_job_destroy(job);
}

/* A case with completion tracking: every comm has its figures. */
static void test_case_figures(void **state) {
  (void)state;
  struct nsp_job *job = nsp_job_create();
  assert_int_equal(nsp_case_add("c13", job), 4);
  assert_int_equal(nsp_job_analyze(job), 0);
  assert_int_equal(nsp_job_perf(job), 0);
  assert_int_equal(nsp_job_nperf(job), nsp_job_ncomms(job));
  size_t timed = 0;
  for (size_t i = 0; i < nsp_job_nperf(job); i++) {
    const struct nsp_perf_comm *pc = nsp_job_perf_comm(job, i);
    assert_true(pc->comm == nsp_job_comm(job, i));
    for (size_t r = 0; r < pc->nrows; r++) {
      timed += pc->rows[r].timed;
      if (pc->rows[r].timed) assert_int_equal(pc->rows[r].p50_ns, 50000);
    }
  }
  assert_int_equal(timed, 18); /* 2 steps x 2 comms x 4 ranks + rank 2's and 3's TP seq 3 */
  nsp_job_destroy(job);
}

/* Every thread folds whole traces (nsp_job_perf): with 1, 2 and 3
 * threads the same lines, sums and arrivals; at the seq where rank 1
 * calls a broadcast and the others an all-reduce, the spread says the
 * ops were mixed, whatever trace came first. */
static void test_threads_same_figures(void **state) {
  (void)state;
  for (int threads = 1; threads <= 3; threads++) {
    struct nsp_tracegen *g[3];
    uint32_t w[3];
    for (int r = 0; r < 3; r++) g[r] = rank_on(r, 3, 0xbbbb, 1, &w[r]);
    for (uint64_t seq = 1; seq <= 40; seq++)
      for (int r = 0; r < 3; r++) {
        /* rank 2 last by 1 us + seq ns; seq 7: rank 1 last by 1 ms */
        uint64_t t = 1000000000ull * seq + (r == 2 ? 1000u + seq : 0) + (seq == 7 && r == 1 ? 1000000u : 0);
        nsp_tracegen_set_time(g[r], t);
        if (seq == 7 && r == 1) nsp_tracegen_coll(g[r], NSP_API_Broadcast, w[r], 64, ncclFloat32, -1, 0);
        else nsp_tracegen_coll(g[r], NSP_API_AllReduce, w[r], 64, ncclFloat32, ncclSum, -1);
      }
    struct nsp_job *job = nsp_job_create();
    assert_non_null(job);
    assert_int_equal(nsp_job_set_threads(job, threads), 0);
    add_gens(job, g, 3);
    assert_int_equal(nsp_job_analyze(job), 0);
    assert_int_equal(nsp_job_perf(job), 0);
    const struct nsp_perf_comm *pc = nsp_job_perf_comm(job, 0);
    assert_int_equal(pc->collectives, 40);
    assert_int_equal(pc->with_last, 40);
    assert_int_equal(pc->worst[0].seq, 7);
    assert_int_equal(pc->worst[0].spread_ns, 1000000);
    assert_int_equal(pc->worst[0].last_rank, 1);
    assert_int_equal(pc->worst[0].api, NSP_PERF_OP_MIXED);
    assert_int_equal(pc->worst[1].api, NSP_API_AllReduce);
    assert_int_equal(pc->nstragglers, 2);
    assert_int_equal(pc->stragglers[0].rank, 2);
    assert_int_equal(pc->stragglers[0].last, 39);
    const struct nsp_perf_row *ar = row(pc, NSP_API_AllReduce, 8);
    assert_int_equal(ar->calls, 119);
    assert_int_equal(ar->timed, 119);
    assert_int_equal(ar->p50_ns, 1000);
    assert_near(ar->algbw_gbs, 0.256); /* 256 bytes in 1,000 ns */
    const struct nsp_perf_row *bc = row(pc, NSP_API_Broadcast, 8);
    assert_int_equal(bc->calls, 1);
    assert_int_equal(bc->timed, 1);
    nsp_job_destroy(job);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_formulas),
      cmocka_unit_test(test_durations),
      cmocka_unit_test(test_failed_not_timed),
      cmocka_unit_test(test_abort_not_timed),
      cmocka_unit_test(test_arrivals),
      cmocka_unit_test(test_case_figures),
      cmocka_unit_test(test_threads_same_figures),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
