/* test_an_align.c - the alignment rule (docs/REPORT.md, rule 1) on
 * synthetic traces where handle numbers or seq numbers mislead: PreMulSum
 * reduction ops compared by their definitions, not by the handles each
 * process got, and a rank that skipped or added collectives (its later
 * calls match the others' shifted by one or more seqs) told apart from
 * calls that really differ. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nsp_analyze.h"
#include "nsp_names.h"
#include "nsp_tracegen.h"
#include "nsp_an_test.h"

static struct nsp_tracegen *rank_gen(int r, uint32_t *w, int nranks) {
  char host[16];
  snprintf(host, sizeof host, "h%d", r);
  struct nsp_tracegen *g = nsp_tracegen_create(host, 100u + (uint32_t)r, r);
  assert_non_null(g);
  *w = nsp_tracegen_comm(g, 0xaaaa, r, nranks);
  assert_true(*w > 0);
  return g;
}

static void print_findings(const struct nsp_job *job) {
  for (size_t i = 0; i < nsp_job_nfindings(job); i++)
    print_message("# finding %zu: %.900s\n", i, nsp_job_finding(job, i)->message);
  for (size_t i = 0; i < nsp_job_nnotes(job); i++) print_message("# note: %.900s\n", nsp_job_note(job, i));
}

/* A REDOP record: ncclRedOpCreatePreMulSum made `handle` on comm index
 * `comm` (scalar: a host scalar's bits), or ncclRedOpDestroy (dtype < 0). */
static void redop_rec(struct nsp_tracegen *g, uint32_t comm, int handle, int dtype, int residence, uint64_t scalar) {
  struct nsp_rec r;
  memset(&r, 0, sizeof r);
  r.kind = NSP_REC_REDOP;
  r.api = dtype < 0 ? NSP_API_RedOpDestroy : NSP_API_RedOpCreatePreMulSum;
  r.comm = comm;
  r.redop = handle;
  r.dtype = dtype;
  r.aux = residence;
  r.count = scalar;
  r.t_enter = nsp_tracegen_now(g);
  r.t_exit = r.t_enter + 10;
  assert_int_equal(nsp_tracegen_record(g, &r), 0);
}

#define F32_QUARTER 0x3e800000u /* 0.25f */
#define F32_HALF 0x3f000000u    /* 0.5f */

/* Rank 1 made (and destroyed) one op more before, so its handles are one
 * higher; every rank all-reduces with premulsum(float32 host 0.25): no
 * finding.  Handles are per communicator and reused after a destroy. */
static void test_premulsum_handles_differ(void **state) {
  (void)state;
  struct nsp_tracegen *g[3];
  uint32_t w[3];
  for (int r = 0; r < 3; r++) g[r] = rank_gen(r, &w[r], 3);
  redop_rec(g[1], w[1], 5, ncclFloat32, ncclScalarDevice, 0); /* the extra op, kept */
  for (int step = 0; step < 3; step++) {
    for (int r = 0; r < 3; r++) {
      int h = r == 1 ? 6 : 5;
      redop_rec(g[r], w[r], h, ncclFloat32, ncclScalarHostImmediate, F32_QUARTER);
      nsp_tracegen_coll(g[r], NSP_API_AllReduce, w[r], 64, ncclFloat32, h, -1);
      redop_rec(g[r], w[r], h, -1, -1, 0);
      nsp_tracegen_coll(g[r], NSP_API_AllReduce, w[r], 64, ncclFloat32, ncclSum, -1);
    }
  }
  struct nsp_job *job = analyse_gens(g, 3);
  print_findings(job);
  assert_int_equal(nsp_job_nfindings(job), 0);
  nsp_job_destroy(job);
}

/* Each rank pre-multiplies by its own scalar (NCCL applies it locally,
 * before the sum: weighted averages do this, and so does case c10): no
 * finding, whatever the handles. */
static void test_premulsum_scalar_per_rank(void **state) {
  (void)state;
  struct nsp_tracegen *g[2];
  uint32_t w[2];
  for (int r = 0; r < 2; r++) g[r] = rank_gen(r, &w[r], 2);
  for (int r = 0; r < 2; r++) {
    redop_rec(g[r], w[r], 5, ncclFloat32, ncclScalarHostImmediate, r ? F32_HALF : F32_QUARTER);
    nsp_tracegen_coll(g[r], NSP_API_AllReduce, w[r], 64, ncclFloat32, 5, -1);
  }
  struct nsp_job *job = analyse_gens(g, 2);
  print_findings(job);
  assert_int_equal(nsp_job_nfindings(job), 0);
  nsp_job_destroy(job);
}

/* Definitions that differ are a redop-mismatch named by definition: a
 * built-in sum against a PreMulSum, and PreMulSum ops of different dtypes,
 * whatever the handles. */
static void test_premulsum_definitions_differ(void **state) {
  (void)state;
  struct nsp_tracegen *g[3];
  uint32_t w[3];
  for (int r = 0; r < 3; r++) g[r] = rank_gen(r, &w[r], 3);
  for (int r = 0; r < 3; r++) {
    redop_rec(g[r], w[r], 5 + r, ncclFloat32, ncclScalarHostImmediate, F32_QUARTER);
    nsp_tracegen_coll(g[r], NSP_API_AllReduce, w[r], 64, ncclFloat32, r == 2 ? ncclSum : 5 + r, -1);
  }
  struct nsp_job *job = analyse_gens(g, 3);
  print_findings(job);
  assert_int_equal(nsp_job_nfindings(job), 1);
  const struct nsp_finding *f = nsp_job_finding(job, 0);
  assert_int_equal(f->kind, NSP_FIND_REDOP_MISMATCH);
  assert_int_equal(f->seq, 1);
  assert_side(&f->sides[0], "0-1");
  assert_string_equal(f->sides[0].text, "all-reduce 64 x float32 premulsum(float32 host 0.25) (256 bytes)");
  assert_int_equal(f->sides[0].call.redop, NSP_REDOP_PREMULSUM);
  assert_int_equal(f->sides[0].call.premul_dtype, ncclFloat32);
  assert_int_equal(f->sides[0].call.premul_residence, ncclScalarHostImmediate);
  assert_side(&f->sides[1], "2");
  assert_ranks(f->odd_ranks, f->nodd, "2");
  assert_contains(f->message, "ranks 0-1 all-reduce 64 x float32 premulsum(float32 host 0.25) (256 bytes) vs "
                              "rank 2 all-reduce 64 x float32 sum (256 bytes)");
  /* The headline names the op by its definition too, never by a handle
   * or the internal code of PreMulSum. */
  assert_contains(nsp_job_headline(job), "rank 2 passed sum where ranks 0-1 passed premulsum(float32 host 0.25)");
  nsp_job_destroy(job);

  /* The op's dtype: rank 1's was made for float16. */
  for (int r = 0; r < 2; r++) g[r] = rank_gen(r, &w[r], 2);
  redop_rec(g[0], w[0], 5, ncclFloat32, ncclScalarDevice, 0);
  redop_rec(g[1], w[1], 5, ncclFloat16, ncclScalarDevice, 0);
  for (int r = 0; r < 2; r++) nsp_tracegen_coll(g[r], NSP_API_AllReduce, w[r], 64, ncclFloat32, 5, -1);
  job = analyse_gens(g, 2);
  print_findings(job);
  assert_int_equal(nsp_job_nfindings(job), 1);
  f = nsp_job_finding(job, 0);
  assert_int_equal(f->kind, NSP_FIND_REDOP_MISMATCH);
  assert_contains(f->message, "premulsum(float32 device) (256 bytes) vs rank 1 all-reduce 64 x float32 "
                              "premulsum(float16 device)");
  nsp_job_destroy(job);
}

/* A step of a training loop: a gradient all-reduce, then a metric
 * all-gather and a broadcast, so that calls one seq apart differ. */
static void loop_step(struct nsp_tracegen *g, uint32_t w) {
  nsp_tracegen_coll(g, NSP_API_AllReduce, w, 4096, ncclFloat32, ncclSum, -1);
  nsp_tracegen_coll(g, NSP_API_AllGather, w, 16, ncclFloat32, -1, -1);
  nsp_tracegen_coll(g, NSP_API_Broadcast, w, 8, ncclInt64, -1, 0);
}

/* Rank 2 of 4 issues an extra all-reduce in step 3 (seq 7); its later
 * calls match the others' one seq earlier.  One seq-shift finding, no
 * count- or kind-mismatch. */
static void test_shift_extra(void **state) {
  (void)state;
  struct nsp_tracegen *g[4];
  uint32_t w[4];
  for (int r = 0; r < 4; r++) g[r] = rank_gen(r, &w[r], 4);
  for (int step = 0; step < 6; step++)
    for (int r = 0; r < 4; r++) {
      if (step == 2 && r == 2) nsp_tracegen_coll(g[r], NSP_API_AllReduce, w[r], 1, ncclFloat32, ncclMax, -1);
      loop_step(g[r], w[r]);
    }
  struct nsp_job *job = analyse_gens(g, 4);
  print_findings(job);
  assert_true(nsp_job_nfindings(job) >= 1);
  const struct nsp_finding *f = nsp_job_finding(job, 0);
  assert_int_equal(f->kind, NSP_FIND_SEQ_SHIFT);
  assert_string_equal(nsp_finding_kind_name(f->kind), "seq-shift");
  assert_int_equal(f->seq, 7);
  assert_ranks(f->odd_ranks, f->nodd, "2");
  assert_int_equal(f->nsides, 2);
  assert_side(&f->sides[0], "0-1,3");
  assert_int_equal(f->sides[0].call.api, NSP_API_AllReduce);
  assert_int_equal(f->sides[0].call.count, 4096);
  assert_side(&f->sides[1], "2");
  assert_int_equal(f->sides[1].call.count, 1);
  assert_contains(f->message, "rank 2 issued an extra all-reduce at seq 7 (its calls from seq 8 on match the "
                              "others' from seq 7 on)");
  assert_int_equal(count_kind(job, NSP_FIND_COUNT_MISMATCH) + count_kind(job, NSP_FIND_KIND_MISMATCH) +
                       count_kind(job, NSP_FIND_REDOP_MISMATCH),
                   0);
  nsp_job_destroy(job);
}

/* Rank 1 of 4 skips step 2's all-gather (seq 5): its calls from seq 5 on
 * match the others' from seq 6 on. */
static void test_shift_skipped(void **state) {
  (void)state;
  struct nsp_tracegen *g[4];
  uint32_t w[4];
  for (int r = 0; r < 4; r++) g[r] = rank_gen(r, &w[r], 4);
  for (int step = 0; step < 6; step++)
    for (int r = 0; r < 4; r++) {
      nsp_tracegen_coll(g[r], NSP_API_AllReduce, w[r], 4096, ncclFloat32, ncclSum, -1);
      if (!(step == 1 && r == 1)) nsp_tracegen_coll(g[r], NSP_API_AllGather, w[r], 16, ncclFloat32, -1, -1);
      nsp_tracegen_coll(g[r], NSP_API_Broadcast, w[r], 8, ncclInt64, -1, 0);
    }
  struct nsp_job *job = analyse_gens(g, 4);
  print_findings(job);
  const struct nsp_finding *f = nsp_job_finding(job, 0);
  assert_int_equal(f->kind, NSP_FIND_SEQ_SHIFT);
  assert_int_equal(f->seq, 5);
  assert_ranks(f->odd_ranks, f->nodd, "1");
  assert_side(&f->sides[0], "0,2-3");
  assert_int_equal(f->sides[0].call.api, NSP_API_AllGather);
  assert_contains(f->message, "rank 1 skipped an all-gather at seq 5 (its calls from seq 5 on match the "
                              "others' from seq 6 on)");
  assert_int_equal(count_kind(job, NSP_FIND_KIND_MISMATCH), 0);
  nsp_job_destroy(job);
}

/* Two seqs skipped at once; and one against one (no majority): either
 * reading is given. */
static void test_shift_two_and_tie(void **state) {
  (void)state;
  struct nsp_tracegen *g[3];
  uint32_t w[3];
  for (int r = 0; r < 3; r++) g[r] = rank_gen(r, &w[r], 3);
  for (int step = 0; step < 6; step++)
    for (int r = 0; r < 3; r++)
      if (!(step == 1 && r == 0)) {
        nsp_tracegen_coll(g[r], NSP_API_AllReduce, w[r], 4096, ncclFloat32, ncclSum, -1);
        nsp_tracegen_coll(g[r], NSP_API_AllGather, w[r], 16, ncclFloat32, -1, -1);
        nsp_tracegen_coll(g[r], NSP_API_Broadcast, w[r], 8, ncclInt64, -1, 0);
      } else {
        nsp_tracegen_coll(g[r], NSP_API_Broadcast, w[r], 8, ncclInt64, -1, 0);
      }
  struct nsp_job *job = analyse_gens(g, 3);
  print_findings(job);
  const struct nsp_finding *f = nsp_job_finding(job, 0);
  assert_int_equal(f->kind, NSP_FIND_SEQ_SHIFT);
  assert_int_equal(f->seq, 4);
  assert_ranks(f->odd_ranks, f->nodd, "0");
  assert_contains(f->message, "rank 0 skipped 2 collectives at seq 4-5 (all-reduce, all-gather; its calls from "
                              "seq 4 on match the others' from seq 6 on)");
  nsp_job_destroy(job);

  for (int r = 0; r < 2; r++) g[r] = rank_gen(r, &w[r], 2);
  for (int step = 0; step < 6; step++)
    for (int r = 0; r < 2; r++) {
      nsp_tracegen_coll(g[r], NSP_API_AllReduce, w[r], 4096, ncclFloat32, ncclSum, -1);
      if (!(step == 2 && r == 1)) nsp_tracegen_coll(g[r], NSP_API_AllGather, w[r], 16, ncclFloat32, -1, -1);
      nsp_tracegen_coll(g[r], NSP_API_Broadcast, w[r], 8, ncclInt64, -1, 0);
    }
  job = analyse_gens(g, 2);
  print_findings(job);
  f = nsp_job_finding(job, 0);
  assert_int_equal(f->kind, NSP_FIND_SEQ_SHIFT);
  assert_int_equal(f->seq, 8);
  /* One rank against one: the calls before seq 8 repeat every 3 seqs and
   * rank 0's go on doing so, so rank 1 is the one that skipped. */
  assert_ranks(f->odd_ranks, f->nodd, "1");
  assert_contains(f->message, "rank 1 skipped an all-gather at seq 8 (its calls from seq 8 on match rank 0's "
                              "from seq 9 on)");
  nsp_job_destroy(job);

  /* No pattern before the shift (seq 2): either reading. */
  for (int r = 0; r < 2; r++) {
    g[r] = rank_gen(r, &w[r], 2);
    nsp_tracegen_coll(g[r], NSP_API_AllReduce, w[r], 4096, ncclFloat32, ncclSum, -1);
    if (r == 0) nsp_tracegen_coll(g[r], NSP_API_AllGather, w[r], 16, ncclFloat32, -1, -1);
    nsp_tracegen_coll(g[r], NSP_API_Broadcast, w[r], 8, ncclInt64, -1, 0);
    nsp_tracegen_coll(g[r], NSP_API_AllReduce, w[r], 7, ncclFloat64, ncclSum, -1);
    nsp_tracegen_coll(g[r], NSP_API_AllGather, w[r], 3, ncclInt8, -1, -1);
  }
  job = analyse_gens(g, 2);
  print_findings(job);
  f = nsp_job_finding(job, 0);
  assert_int_equal(f->kind, NSP_FIND_SEQ_SHIFT);
  assert_int_equal(f->seq, 2);
  assert_int_equal(f->nodd, 0);
  assert_contains(f->message, "rank 1 skipped an all-gather at seq 2, or rank 0 issued an extra one (rank 1's "
                              "calls from seq 2 on match rank 0's from seq 3 on)");
  nsp_job_destroy(job);
}

/* What is no shift: a count that differs in a loop of like calls (shifted
 * or not, the later calls match: nothing tells them apart), and a rank
 * whose trace ends right after the mismatch (nothing to compare). */
static void test_no_shift(void **state) {
  (void)state;
  struct nsp_tracegen *g[3];
  uint32_t w[3];
  for (int r = 0; r < 3; r++) g[r] = rank_gen(r, &w[r], 3);
  for (int i = 0; i < 10; i++)
    for (int r = 0; r < 3; r++)
      nsp_tracegen_coll(g[r], NSP_API_AllReduce, w[r], i == 4 && r == 1 ? 1000 : 1024, ncclFloat32, ncclSum, -1);
  struct nsp_job *job = analyse_gens(g, 3);
  print_findings(job);
  const struct nsp_finding *f = nsp_job_finding(job, 0);
  assert_int_equal(f->kind, NSP_FIND_COUNT_MISMATCH);
  assert_int_equal(f->seq, 5);
  assert_int_equal(count_kind(job, NSP_FIND_SEQ_SHIFT), 0);
  nsp_job_destroy(job);

  /* c03's shape: rank 0 all-gathers at seq 11, then stops; the others
   * all-reduce at 11 and stop. */
  for (int r = 0; r < 3; r++) g[r] = rank_gen(r, &w[r], 3);
  for (int r = 0; r < 3; r++) {
    for (int i = 0; i < 10; i++) nsp_tracegen_coll(g[r], NSP_API_AllReduce, w[r], 1024, ncclFloat32, ncclSum, -1);
    if (r == 0) nsp_tracegen_coll(g[r], NSP_API_AllGather, w[r], 1, ncclFloat32, -1, -1);
    else nsp_tracegen_coll(g[r], NSP_API_AllReduce, w[r], 1024, ncclFloat32, ncclSum, -1);
  }
  job = analyse_gens(g, 3);
  print_findings(job);
  f = nsp_job_finding(job, 0);
  assert_int_equal(f->kind, NSP_FIND_KIND_MISMATCH);
  assert_int_equal(f->seq, 11);
  nsp_job_destroy(job);

  /* A rank whose later calls match neither shifted nor unshifted. */
  for (int r = 0; r < 3; r++) g[r] = rank_gen(r, &w[r], 3);
  for (int step = 0; step < 5; step++)
    for (int r = 0; r < 3; r++) {
      if (r == 2 && step >= 2) {
        nsp_tracegen_coll(g[r], NSP_API_AllReduce, w[r], 7, ncclFloat64, ncclSum, -1);
        continue;
      }
      loop_step(g[r], w[r]);
    }
  job = analyse_gens(g, 3);
  print_findings(job);
  f = nsp_job_finding(job, 0);
  assert_int_equal(f->kind, NSP_FIND_DTYPE_MISMATCH);
  assert_int_equal(count_kind(job, NSP_FIND_SEQ_SHIFT), 0);
  nsp_job_destroy(job);
}

/* In a sub-communicator numbered otherwise than the job, every part of
 * the seq-shift message names job ranks: rank 2 there is job rank 1. */
static void test_shift_job_ranks(void **state) {
  (void)state;
  struct nsp_tracegen *g[4];
  uint32_t w[4], sub[4];
  for (int r = 0; r < 4; r++) {
    g[r] = rank_gen(r, &w[r], 4);
    nsp_tracegen_coll(g[r], NSP_API_AllReduce, w[r], 1, ncclFloat32, ncclSum, -1);
    sub[r] = nsp_tracegen_comm(g[r], 0xbbbb, 3 - r, 4);
  }
  for (int step = 0; step < 6; step++)
    for (int r = 0; r < 4; r++) {
      nsp_tracegen_coll(g[r], NSP_API_AllReduce, sub[r], 4096, ncclFloat32, ncclSum, -1);
      if (!(step == 2 && r == 1)) nsp_tracegen_coll(g[r], NSP_API_AllGather, sub[r], 16, ncclFloat32, -1, -1);
      nsp_tracegen_coll(g[r], NSP_API_Broadcast, sub[r], 8, ncclInt64, -1, 0);
    }
  struct nsp_job *job = analyse_gens(g, 4);
  print_findings(job);
  const struct nsp_finding *f = nsp_job_finding(job, 0);
  assert_int_equal(f->kind, NSP_FIND_SEQ_SHIFT);
  assert_int_equal(f->seq, 8);
  assert_contains(f->message, "rank 2 (job rank 1) skipped an all-gather at seq 8");
  assert_contains(f->message, ": ranks 0-1,3 (job ranks 3,2,0) all-gather 16 x float32 (64 bytes) vs rank 2 "
                              "(job rank 1) broadcast 8 x int64");
  nsp_job_destroy(job);
}

/* The trial's loop: all-reduce float32, all-gather, all-reduce float16. */
static void p3_call(struct nsp_tracegen *g, uint32_t w, int i) {
  if (i % 3 == 0) nsp_tracegen_coll(g, NSP_API_AllReduce, w, 1024, ncclFloat32, ncclSum, -1);
  if (i % 3 == 1) nsp_tracegen_coll(g, NSP_API_AllGather, w, 1024, ncclFloat32, -1, -1);
  if (i % 3 == 2) nsp_tracegen_coll(g, NSP_API_AllReduce, w, 2048, ncclFloat16, ncclSum, -1);
}

/* Two skipped in a loop of 3 look like one extra.  Rank 2 skips seqs 7-8
 * and makes 13 calls; the others stop in their 14th (waiting for it):
 * fewer calls in all, so it skipped, never "issued an extra".  With as
 * many calls on every rank nothing tells: both readings. */
static void test_shift_skip2_period3(void **state) {
  (void)state;
  for (int nr = 2; nr <= 4; nr += 2) {
    struct nsp_tracegen *g[4];
    uint32_t w[4];
    int odd = nr - 1 < 2 ? nr - 1 : 2;
    for (int r = 0; r < nr; r++) {
      g[r] = rank_gen(r, &w[r], nr);
      for (int i = 0; i < 15; i++) {
        if (r == odd && (i == 6 || i == 7)) continue;
        if (r != odd && i >= 14) continue;
        p3_call(g[r], w[r], i);
      }
    }
    struct nsp_job *job = analyse_gens(g, (size_t)nr);
    print_findings(job);
    const struct nsp_finding *f = nsp_job_finding(job, 0);
    assert_int_equal(f->kind, NSP_FIND_SEQ_SHIFT);
    assert_int_equal(f->seq, 7);
    assert_int_equal(f->nodd, 1);
    assert_int_equal(f->odd_ranks[0], odd);
    char want[160];
    snprintf(want, sizeof want, "rank %d skipped 2 collectives at seq 7-8 (all-reduce, all-gather; its calls from seq 7 on",
             odd);
    assert_contains(f->message, want);
    assert_null(strstr(f->message, "extra"));
    nsp_job_destroy(job);
  }
  /* As many calls on every rank (the others made 2 more at the end). */
  struct nsp_tracegen *g[4];
  uint32_t w[4];
  for (int r = 0; r < 4; r++) {
    g[r] = rank_gen(r, &w[r], 4);
    for (int i = 0; i < 15; i++)
      if (!(r == 2 && (i == 6 || i == 7)) && !(r != 2 && i >= 13)) p3_call(g[r], w[r], i);
  }
  struct nsp_job *job = analyse_gens(g, 4);
  print_findings(job);
  const struct nsp_finding *f = nsp_job_finding(job, 0);
  assert_int_equal(f->kind, NSP_FIND_SEQ_SHIFT);
  assert_contains(f->message, "rank 2 skipped 2 collectives at seq 7-8 (all-reduce, all-gather; its calls from seq 7 "
                              "on match the others' from seq 9 on), or issued an extra all-reduce at seq 7 (its calls "
                              "from seq 8 on match the others' from seq 7 on)");
  nsp_job_destroy(job);
}

/* Most ranks skipped: ranks 1 and 2 of 3 skip the all-gather at seq 5.
 * The majority breaks the loop's pattern, rank 0 keeps it: ranks 1-2
 * skipped, rank 0 is no odd one. */
static void test_shift_majority_skipped(void **state) {
  (void)state;
  struct nsp_tracegen *g[3];
  uint32_t w[3];
  for (int r = 0; r < 3; r++) {
    g[r] = rank_gen(r, &w[r], 3);
    for (int i = 0; i < 15; i++)
      if (!(r > 0 && i == 4)) p3_call(g[r], w[r], i);
  }
  struct nsp_job *job = analyse_gens(g, 3);
  print_findings(job);
  const struct nsp_finding *f = nsp_job_finding(job, 0);
  assert_int_equal(f->kind, NSP_FIND_SEQ_SHIFT);
  assert_int_equal(f->seq, 5);
  assert_ranks(f->odd_ranks, f->nodd, "1-2");
  assert_int_equal(f->api, NSP_API_AllGather);
  assert_contains(f->message, "ranks 1-2 skipped an all-gather at seq 5 (their calls from seq 5 on match rank 0's "
                              "from seq 6 on)");
  nsp_job_destroy(job);
}

/* Two independent skips: rank 1 skips the all-gather at seq 5, rank 2
 * the one at seq 8.  Both are said; rank 2 is not said to match. */
static void test_shift_second_skip(void **state) {
  (void)state;
  struct nsp_tracegen *g[4];
  uint32_t w[4];
  for (int r = 0; r < 4; r++) {
    g[r] = rank_gen(r, &w[r], 4);
    for (int i = 0; i < 15; i++)
      if (!(r == 1 && i == 4) && !(r == 2 && i == 7)) p3_call(g[r], w[r], i);
  }
  struct nsp_job *job = analyse_gens(g, 4);
  print_findings(job);
  const struct nsp_finding *f = nsp_job_finding(job, 0);
  assert_int_equal(f->kind, NSP_FIND_SEQ_SHIFT);
  assert_int_equal(f->seq, 5);
  assert_contains(f->message, "rank 1 skipped an all-gather at seq 5 (its calls from seq 5 on match the others' "
                              "from seq 6 on); and rank 2 skipped an all-gather at seq 8 (its calls from seq 8 on "
                              "match the others' from seq 9 on)");
  nsp_job_destroy(job);
}

/* Rank 2 issued one all-gather more at the end of the loop while the
 * others destroyed the communicator and exited cleanly: the extra call is
 * the one to look at (extra-at-end, odd rank 2), not ranks 0-1,3
 * "stopped early". */
static void test_extra_at_end(void **state) {
  (void)state;
  struct nsp_tracegen *g[4];
  uint32_t w[4];
  for (int r = 0; r < 4; r++) g[r] = rank_gen(r, &w[r], 4);
  for (int step = 0; step < 5; step++)
    for (int r = 0; r < 4; r++) {
      nsp_tracegen_coll(g[r], NSP_API_AllReduce, w[r], 1024, ncclFloat32, ncclSum, -1);
      nsp_tracegen_coll(g[r], NSP_API_AllGather, w[r], 1024, ncclFloat32, -1, -1);
      nsp_tracegen_coll(g[r], NSP_API_AllReduce, w[r], 2048, ncclFloat16, ncclSum, -1);
    }
  nsp_tracegen_coll(g[2], NSP_API_AllGather, w[2], 1024, ncclFloat32, -1, -1);
  nsp_tracegen_set_exit(g[2], 0); /* killed while it waited */
  for (int r = 0; r < 4; r++)
    if (r != 2) assert_int_equal(nsp_tracegen_comm_end(g[r], w[r], NSP_API_CommDestroy), 0);
  struct nsp_job *job = analyse_gens(g, 4);
  print_findings(job);
  const struct nsp_finding *f = nsp_job_finding(job, 0);
  assert_int_equal(f->kind, NSP_FIND_EXTRA_AT_END);
  assert_int_equal(f->seq, 16);
  assert_int_equal(f->api, NSP_API_AllGather);
  assert_ranks(f->odd_ranks, f->nodd, "2");
  assert_contains(f->message, "rank 2 issued 1 collective more than the others (from seq 16: all-gather 1024 x "
                              "float32 (4096 bytes)), after ranks 0-1,3 finished with the communicator at seq 15");
  for (size_t i = 0; i < nsp_job_nfindings(job); i++)
    assert_int_not_equal(nsp_job_finding(job, i)->kind, NSP_FIND_STOPPED_EARLY);
  assert_non_null(strstr(nsp_job_headline(job), "rank 2 issued 1 collective more than the others"));
  nsp_job_destroy(job);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_premulsum_handles_differ),
      cmocka_unit_test(test_premulsum_scalar_per_rank),
      cmocka_unit_test(test_premulsum_definitions_differ),
      cmocka_unit_test(test_shift_extra),
      cmocka_unit_test(test_shift_skipped),
      cmocka_unit_test(test_shift_two_and_tie),
      cmocka_unit_test(test_no_shift),
      cmocka_unit_test(test_shift_job_ranks),
      cmocka_unit_test(test_shift_skip2_period3),
      cmocka_unit_test(test_shift_majority_skipped),
      cmocka_unit_test(test_shift_second_skip),
      cmocka_unit_test(test_extra_at_end),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
