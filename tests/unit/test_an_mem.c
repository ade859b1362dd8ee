/* test_an_mem.c - memory per seq of a communicator (issue #16 item 5).
 *
 * The analyzer keeps state per (communicator, seq): `analyze` the refs
 * (struct nsp_ref: an index into the communicator's distinct signatures
 * and its earliest entry time), `perf` its arrivals.  Two jobs of the
 * same shape, one with three times the calls of the other, are analysed
 * in this process; the heap each one leaves in use, divided by the seqs
 * the bigger one adds, is the cost per (communicator, seq), which must
 * stay under a few words: 1,024 ranks x 100,000 collectives (world plus
 * 128 split communicators of 8: 6.45 M of them) in 256 MiB.  The results
 * are asserted too. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>

#include "nsp_an_model.h"
#include "nsp_names.h"
#include "nsp_tracegen.h"

#define NRANKS 16

_Static_assert(sizeof(struct nsp_ref) <= 8, "a ref is a signature index and a time offset");

static size_t heap_used(void) {
  struct mallinfo2 mi = mallinfo2();
  return mi.uordblks + mi.hblkhd;
}

/* Rank r's trace: the world's all-reduce and its 8-rank half's
 * all-gather, alternating, with completions; entry times spread across
 * ranks by the step. */
static size_t add_rank(struct nsp_job *job, int r, int calls) {
  char host[32], name[32];
  snprintf(host, sizeof host, "node-%d", r / 8);
  struct nsp_tracegen *g = nsp_tracegen_create(host, 100u + (uint32_t)r, r);
  assert_non_null(g);
  nsp_tracegen_set_frame_records(g, 4096);
  nsp_tracegen_set_tracking(g, NSP_TRACK_COMPLETION | NSP_TRACK_TIMING);
  nsp_tracegen_set_step(g, 1000 + (uint64_t)r * 3, 100);
  uint32_t w = nsp_tracegen_comm(g, 0x1000, r, NRANKS);
  uint32_t half = nsp_tracegen_split(g, w, 0x2000 + (uint64_t)(r / 8), r / 8, r, r % 8, 8);
  assert_true(w && half);
  nsp_tracegen_set_auto_complete(g, 1, 5000);
  for (int i = 0; i < calls; i++) {
    if (i % 2 == 0) nsp_tracegen_coll(g, NSP_API_AllReduce, w, 1u << 20, ncclBfloat16, ncclSum, -1);
    else nsp_tracegen_coll(g, NSP_API_AllGather, half, 4096 + (uint64_t)(i % 6) * 1024, ncclFloat32, -1, -1);
  }
  const uint8_t *data;
  size_t len;
  assert_int_equal(nsp_tracegen_bytes(g, &data, &len), 0);
  snprintf(name, sizeof name, "r%d.ncclspy", r);
  assert_int_equal(nsp_job_add_mem(job, name, data, len), 1);
  nsp_tracegen_destroy(g);
  return len;
}

/* Heap the loading and analysis (*an) and then perf (*pf) leave in use
 * beyond the traces' copies, for a job of `calls` calls per rank.  (Traces
 * added from memory are read as they are added.) */
static void measure(int calls, size_t *an, size_t *pf) {
  struct nsp_job *job = nsp_job_create();
  assert_non_null(job);
  size_t h0 = heap_used();
  for (int r = 0; r < NRANKS; r++) h0 += add_rank(job, r, calls);
  assert_int_equal(nsp_job_analyze(job), 0);
  *an = heap_used() - h0;
  assert_int_equal(nsp_job_nfindings(job), 0);
  assert_int_equal(nsp_job_perf(job), 0);
  *pf = heap_used() - h0;
  for (size_t i = 0; i < nsp_job_nperf(job); i++) {
    const struct nsp_perf_comm *pc = nsp_job_perf_comm(job, i);
    assert_int_equal(pc->collectives, (uint64_t)calls / 2); /* every seq reached by all */
  }
  assert_int_equal(nsp_job_nperf(job), 3);
  nsp_job_destroy(job);
}

static void test_per_seq(void **state) {
  (void)state;
  size_t an1, pf1, an3, pf3;
  measure(20000, &an1, &pf1);
  measure(60000, &an3, &pf3);
  /* (communicator, seq) pairs the bigger job adds: 3 communicators of
   * 20,000 more seqs each. */
  double seqs = 3.0 * (60000 - 20000) / 2;
  double per_an = ((double)an3 - (double)an1) / seqs, per_pf = ((double)pf3 - (double)pf1) / seqs;
  print_message("heap per (communicator, seq): analyze %.1f B, after perf %.1f B\n", per_an, per_pf);
  assert_true(per_an <= 12);
  assert_true(per_pf <= 20);
}

/* Entry times further apart in a page of refs than 2^31 ns (ranks whose
 * clocks or pace differ by seconds): the page keeps whole times, and the
 * mismatch's time is still the earliest entry at its seq, to the ns. */
static void test_wide_times(void **state) {
  (void)state;
  struct nsp_job *job = nsp_job_create();
  assert_non_null(job);
  int64_t t_expect = 0;
  for (int r = 0; r < 2; r++) {
    char name[32];
    struct nsp_tracegen *g = nsp_tracegen_create("h", 10u + (uint32_t)r, r);
    assert_non_null(g);
    nsp_tracegen_set_step(g, r ? 2000000000ull : 3000000007ull, 100);
    uint32_t w = nsp_tracegen_comm(g, 0x1000, r, 2);
    assert_true(w);
    for (int i = 1; i <= 600; i++) {
      /* wall = 1.7e18 + monotonic - 1e9 (nsp_tracegen_create's clock pair) */
      if (i == 500 && r == 1) t_expect = (int64_t)(1700000000000000000ull + nsp_tracegen_now(g) - 1000000000ull);
      nsp_tracegen_coll(g, NSP_API_AllReduce, w, 1024, i == 500 && r ? ncclFloat16 : ncclFloat32, ncclSum, -1);
    }
    const uint8_t *data;
    size_t len;
    assert_int_equal(nsp_tracegen_bytes(g, &data, &len), 0);
    snprintf(name, sizeof name, "r%d.ncclspy", r);
    assert_int_equal(nsp_job_add_mem(job, name, data, len), 1);
    nsp_tracegen_destroy(g);
  }
  assert_int_equal(nsp_job_analyze(job), 0);
  assert_int_equal(nsp_job_nfindings(job), 1);
  const struct nsp_finding *f = nsp_job_finding(job, 0);
  assert_int_equal(f->kind, NSP_FIND_DTYPE_MISMATCH);
  assert_int_equal(f->seq, 500);
  assert_true(f->time_ns == t_expect);
  nsp_job_destroy(job);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_per_seq), cmocka_unit_test(test_wide_times)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
