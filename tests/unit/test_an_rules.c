/* test_an_rules.c - the analyzer's rules on synthetic traces of the
 * failure cases (shared/cases/README.md) and their variations: for each,
 * the finding a user acts on, by value (kind, communicator, seq, the ranks
 * on each side and what each side did), and the absence of noise. */
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

/* ---- the cases ---------------------------------------------------------- */

static void test_c01_amp_dtype(void **state) {
  (void)state;
  struct nsp_job *job = analyse_case("c01", 2);
  /* One finding: rank 0 went on to seq 3 and rank 1 hung at 2, but that
   * wavefront is the mismatch's consequence. */
  assert_int_equal(nsp_job_nfindings(job), 1);
  const struct nsp_finding *f = nsp_job_finding(job, 0);
  assert_int_equal(f->kind, NSP_FIND_DTYPE_MISMATCH);
  assert_true(f->comm_id == NSP_CASE_WORLD);
  assert_non_null(f->comm);
  assert_int_equal(f->comm->nranks, 2);
  assert_int_equal(f->seq, 2);
  assert_int_equal(f->api, NSP_API_AllReduce);
  assert_int_equal(f->nsides, 2);
  assert_side(&f->sides[0], "0");
  assert_int_equal(f->sides[0].call.dtype, ncclFloat16);
  assert_int_equal(f->sides[0].call.count, 1024);
  assert_string_equal(f->sides[0].text, "all-reduce 1024 x float16 sum (2048 bytes)");
  assert_side(&f->sides[1], "1");
  assert_int_equal(f->sides[1].call.dtype, ncclFloat32);
  assert_string_equal(f->sides[1].text, "all-reduce 1024 x float32 sum (4096 bytes)");
  /* One against one: nobody is singled out. */
  assert_int_equal(f->nodd, 0);
  assert_string_equal(f->sides[0].procs[0].host, "node-a");
  assert_int_equal(f->sides[0].procs[0].pid, 1000);
  assert_int_equal(f->sides[1].procs[0].pid, 1001);
  assert_contains(f->hint, "autocast");
  assert_string_equal(f->message,
                      "ranks disagree on dtype at seq 2: rank 0 all-reduce 1024 x float16 sum (2048 bytes) vs "
                      "rank 1 all-reduce 1024 x float32 sum (4096 bytes)");
  assert_true(f->time_ns > 0);
  assert_contains(nsp_job_summary(job), "dtype-mismatch");
  nsp_job_destroy(job);
}

static void test_c02_even_odd(void **state) {
  (void)state;
  struct nsp_job *job = analyse_case("c02", 4);
  assert_int_equal(nsp_job_nfindings(job), 1);
  const struct nsp_finding *f = nsp_job_finding(job, 0);
  assert_int_equal(f->kind, NSP_FIND_DTYPE_MISMATCH);
  assert_true(f->comm_id == NSP_CASE_WORLD);
  assert_int_equal(f->seq, 1);
  assert_int_equal(f->nsides, 2);
  assert_side(&f->sides[0], "0,2");
  assert_int_equal(f->sides[0].call.dtype, ncclBfloat16);
  assert_side(&f->sides[1], "1,3");
  assert_int_equal(f->sides[1].call.dtype, ncclFloat32);
  assert_int_equal(f->sides[1].call.count, 1u << 20);
  assert_int_equal(f->nodd, 0);
  assert_int_equal(f->sides[0].nranks, 2);
  assert_string_equal(f->sides[0].procs[1].host, "node-b"); /* rank 2 */
  nsp_job_destroy(job);
}

static void test_c03_main_only(void **state) {
  (void)state;
  struct nsp_job *job = analyse_case("c03", 4);
  assert_int_equal(nsp_job_nfindings(job), 1); /* no wavefront noise */
  const struct nsp_finding *f = nsp_job_finding(job, 0);
  assert_int_equal(f->kind, NSP_FIND_KIND_MISMATCH);
  assert_true(f->comm_id == NSP_CASE_WORLD);
  assert_int_equal(f->seq, 11);
  assert_int_equal(f->nsides, 2);
  /* Each side with the call it made, not "rank 0 is the culprit". */
  assert_side(&f->sides[0], "0");
  assert_int_equal(f->sides[0].call.api, NSP_API_AllGather);
  assert_side(&f->sides[1], "1-3");
  assert_int_equal(f->sides[1].call.api, NSP_API_AllReduce);
  assert_int_equal(f->nodd, 1);
  assert_int_equal(f->odd_ranks[0], 0);
  assert_int_equal(f->api, NSP_API_AllGather);
  assert_contains(f->message, "rank 0 all-gather 1 x float32 (4 bytes) vs ranks 1-3 all-reduce 4096 x float32 sum");
  assert_contains(f->message, "rank 0 is the odd one");
  nsp_job_destroy(job);
}

static void test_c04_different_op(void **state) {
  (void)state;
  struct nsp_job *job = analyse_case("c04", 4);
  assert_int_equal(nsp_job_nfindings(job), 1);
  const struct nsp_finding *f = nsp_job_finding(job, 0);
  assert_int_equal(f->kind, NSP_FIND_KIND_MISMATCH);
  assert_int_equal(f->seq, 33);
  assert_side(&f->sides[0], "0-1,3");
  assert_int_equal(f->sides[0].call.api, NSP_API_AllReduce);
  assert_side(&f->sides[1], "2");
  assert_int_equal(f->sides[1].call.api, NSP_API_Broadcast);
  assert_int_equal(f->sides[1].call.peer, 0);
  assert_ranks(f->odd_ranks, f->nodd, "2");
  assert_int_equal(f->api, NSP_API_Broadcast);
  assert_contains(f->message, "rank 2 is the odd one");
  nsp_job_destroy(job);
}

static void test_c05_count(void **state) {
  (void)state;
  struct nsp_job *job = analyse_case("c05", 2);
  assert_int_equal(nsp_job_nfindings(job), 1);
  const struct nsp_finding *f = nsp_job_finding(job, 0);
  assert_int_equal(f->kind, NSP_FIND_COUNT_MISMATCH);
  assert_int_equal(f->seq, 1);
  assert_side(&f->sides[0], "0");
  assert_int_equal(f->sides[0].call.count, 409600);
  assert_side(&f->sides[1], "1");
  assert_int_equal(f->sides[1].call.count, 409598);
  assert_contains(f->message, "409600 x float32 sum (1638400 bytes)");
  assert_contains(f->message, "409598 x float32 sum (1638392 bytes)");
  nsp_job_destroy(job);
}

static void test_c06_root(void **state) {
  (void)state;
  struct nsp_job *job = analyse_case("c06", 3);
  assert_int_equal(nsp_job_nfindings(job), 1);
  const struct nsp_finding *f = nsp_job_finding(job, 0);
  assert_int_equal(f->kind, NSP_FIND_ROOT_MISMATCH);
  assert_side(&f->sides[0], "0-1");
  assert_int_equal(f->sides[0].call.peer, 0);
  assert_side(&f->sides[1], "2");
  assert_int_equal(f->sides[1].call.peer, 1);
  assert_ranks(f->odd_ranks, f->nodd, "2");
  assert_contains(f->message, "rank 2 broadcast 100 x int64 root 1 (800 bytes)");
  nsp_job_destroy(job);
}

static void test_c07_first_error(void **state) {
  (void)state;
  struct nsp_job *job = analyse_case("c07", 4);
  /* The error alone: rank 3 stopped at a failed seq 50, which the error
   * explains, so no wavefront. */
  assert_int_equal(nsp_job_nfindings(job), 1);
  const struct nsp_finding *f = nsp_job_finding(job, 0);
  assert_int_equal(f->kind, NSP_FIND_ERROR);
  assert_true(f->comm_id == NSP_CASE_WORLD);
  assert_int_equal(f->seq, 50);
  assert_int_equal(f->api, NSP_API_AllReduce);
  assert_ranks(f->odd_ranks, f->nodd, "3");
  assert_int_equal(f->nsides, 2);
  assert_side(&f->sides[0], "3");
  assert_int_equal(f->sides[0].call.result, ncclSystemError);
  assert_string_equal(f->sides[0].procs[0].call.last_error, "connection reset by peer");
  assert_int_equal(f->sides[0].procs[0].call.source, NSP_SRC_CALL);
  assert_side(&f->sides[1], "0-2");
  assert_int_equal(f->sides[1].call.result, ncclRemoteError);
  for (size_t i = 0; i < 3; i++) {
    assert_int_equal(f->sides[1].procs[i].call.seq, 51);
    assert_true(f->sides[1].procs[i].call.time_ns > f->sides[0].procs[0].call.time_ns);
  }
  assert_string_equal(f->message,
                      "first error: rank 3 at seq 50 all-reduce: ncclSystemError (\"connection reset by peer\"); "
                      "later: ranks 0-2 ncclRemoteError");
  /* 1 on rank 3 + 3 on the others */
  assert_int_equal(f->later, 3);
  assert_contains(f->hint, "network");
  nsp_job_destroy(job);
}

static void test_c08_p2p_count(void **state) {
  (void)state;
  struct nsp_job *job = analyse_case("c08", 2);
  assert_int_equal(nsp_job_nfindings(job), 1);
  const struct nsp_finding *f = nsp_job_finding(job, 0);
  assert_int_equal(f->kind, NSP_FIND_P2P_UNMATCHED);
  assert_true(f->comm_id == NSP_CASE_WORLD);
  assert_int_equal(f->seq, 3);
  assert_int_equal(f->src, 0);
  assert_int_equal(f->dst, 1);
  assert_int_equal(f->api, NSP_API_Send);
  assert_side(&f->sides[0], "0");
  assert_int_equal(f->sides[0].posted, 3);
  assert_int_equal(f->sides[0].call.api, NSP_API_Send);
  assert_int_equal(f->sides[0].call.count, 1024);
  assert_true(f->sides[0].call.time_ns > 0); /* fetched by the second pass */
  assert_side(&f->sides[1], "1");
  assert_int_equal(f->sides[1].posted, 2);
  assert_int_equal(f->sides[1].call.api, -1);
  assert_int_equal(f->later, 0);
  assert_true(f->time_ns == f->sides[0].call.time_ns);
  assert_contains(f->message, "unmatched send #3 from rank 0 to rank 1 (1024 x float32 = 4096 bytes)");
  assert_contains(f->message, "rank 0 posted 3 sends to rank 1, rank 1 posted 2 recvs from rank 0");
  nsp_job_destroy(job);
}

static void test_c09_split(void **state) {
  (void)state;
  struct nsp_job *job = analyse_case("c09", 4);
  assert_int_equal(nsp_job_nfindings(job), 1);
  const struct nsp_finding *f = nsp_job_finding(job, 0);
  assert_int_equal(f->kind, NSP_FIND_DTYPE_MISMATCH);
  assert_true(f->comm_id == NSP_CASE_CHILD1);
  assert_non_null(f->comm);
  assert_true(f->comm->parent_id == NSP_CASE_WORLD);
  assert_int_equal(f->comm->color, 1);
  assert_int_equal(f->comm->nranks, 2);
  assert_string_equal(f->comm->name, "tp:2");
  assert_int_equal(f->seq, 4);
  /* Child ranks 0 and 1 are world ranks 2 and 3. */
  assert_side(&f->sides[0], "0");
  assert_int_equal(f->sides[0].call.dtype, ncclFloat32);
  assert_int_equal(f->sides[0].procs[0].pid, 1002);
  assert_side(&f->sides[1], "1");
  assert_int_equal(f->sides[1].call.dtype, ncclFloat16);
  assert_int_equal(f->sides[1].procs[0].pid, 1003);
  /* All three communicators are known, with their traced ranks. */
  assert_int_equal(nsp_job_ncomms(job), 3);
  const struct nsp_comm_info *c0 = nsp_job_comm_by_id(job, NSP_CASE_CHILD0);
  assert_non_null(c0);
  assert_ranks(c0->ranks, c0->ntraced, "0-1");
  assert_int_equal(c0->max_seq, 4);
  assert_int_equal(nsp_job_comm_by_id(job, NSP_CASE_WORLD)->max_seq, 2);
  nsp_job_destroy(job);
}

/* The first finding of a kind on communicator id, or a test failure. */
static const struct nsp_finding *finding_on(const struct nsp_job *job, int kind, uint64_t id) {
  for (size_t i = 0; i < nsp_job_nfindings(job); i++) {
    const struct nsp_finding *f = nsp_job_finding(job, i);
    if (f->kind == kind && f->comm_id == id) return f;
  }
  fail_msg("no %s finding on %016llx", nsp_finding_kind_name(kind), (unsigned long long)id);
  return NULL;
}

/* c14 (TP x DP): ranks of a split communicator are not job ranks.  Every
 * message names communicator ranks, with "(job rank N)" where it
 * differs; the error finding's ranks stay job ranks (its sides span
 * communicators), its processes have their rank in its communicator too
 * (comm_rank), and its message names them in that space or says "job
 * rank" for processes outside it. */
static void test_c14_rank_spaces(void **state) {
  (void)state;
  struct nsp_job *job = analyse_case("c14", 4);
  const struct nsp_finding *m = finding_on(job, NSP_FIND_DTYPE_MISMATCH, NSP_CASE_DP1);
  assert_side(&m->sides[1], "1");
  assert_int_equal(m->sides[1].procs[0].pid, 1003);
  assert_int_equal(m->sides[1].procs[0].comm_rank, 1);
  const struct nsp_finding *w = finding_on(job, NSP_FIND_STOPPED_EARLY, NSP_CASE_CHILD1);
  assert_contains(w->message, "rank 1 (job rank 3)'s last call: all-reduce 1024 x float16 sum (2048 bytes) seq 3 on "
                              "communicator 57a1d0c0ffee0b01");
  const struct nsp_finding *e = finding_on(job, NSP_FIND_ERROR, NSP_CASE_DP1);
  assert_ranks(e->odd_ranks, e->nodd, "3"); /* a job rank, as before */
  assert_int_equal(e->sides[0].procs[0].rank, 3);
  assert_int_equal(e->sides[0].procs[0].comm_rank, 1);
  assert_side(&e->sides[1], "0-2");
  assert_int_equal(e->sides[1].procs[0].comm_rank, -1); /* job rank 0: not in DP1 */
  assert_int_equal(e->sides[1].procs[1].comm_rank, 0);  /* job rank 1: DP1's rank 0 */
  assert_contains(e->message, "first error: rank 1 (job rank 3) in an async error: ncclSystemError");
  assert_contains(e->message, "later: job ranks 0-2 ncclSystemError");
  nsp_job_destroy(job);
}

/* c14: the tensor-parallel wavefronts exist only because the DP ranks
 * are blocked in the mismatched DP all-reduce (each rank behind made it
 * last), and the async error after it on DP1 is its timeout: all three
 * are caused by the mismatch, which stays the only root. */
static void test_c14_consequences_linked(void **state) {
  (void)state;
  struct nsp_job *job = analyse_case("c14", 4);
  assert_int_equal(nsp_job_nfindings(job), 4);
  const struct nsp_finding *m = nsp_job_finding(job, 0);
  assert_int_equal(m->kind, NSP_FIND_DTYPE_MISMATCH);
  assert_true(m->cause == SIZE_MAX);
  for (size_t i = 1; i < 4; i++) {
    const struct nsp_finding *f = nsp_job_finding(job, i);
    assert_int_equal(f->cause, 0);
    if (f->kind == NSP_FIND_STOPPED_EARLY)
      assert_contains(f->message, "this follows the dtype-mismatch at seq 3 on communicator 57a1d0c0ffee0b01, the "
                                  "last call of the rank behind, where it probably blocked");
    else
      assert_contains(f->message, "this follows the dtype-mismatch at seq 3 on the same communicator");
  }
  assert_int_equal(count_kind(job, NSP_FIND_STOPPED_EARLY), 2);
  assert_int_equal(count_kind(job, NSP_FIND_ERROR), 1);
  nsp_job_destroy(job);
}

static void test_c10_healthy(void **state) {
  (void)state;
  struct nsp_job *job = analyse_case("c10", 4);
  for (size_t i = 0; i < nsp_job_nfindings(job); i++) print_message("unexpected: %.900s\n", nsp_job_finding(job, i)->message);
  assert_int_equal(nsp_job_nfindings(job), 0);
  assert_int_equal(nsp_job_nnotes(job), 0);
  assert_int_equal(nsp_job_ncomms(job), 3);
  const struct nsp_comm_info *w = nsp_job_comm_by_id(job, NSP_CASE_WORLD);
  assert_int_equal(w->max_seq, 4000);
  assert_int_equal(w->ncoll, 4 * 4000);
  assert_int_equal(w->np2p, 4 * 2000);
  assert_contains(nsp_job_summary(job), "No problems found in 4 traces");
  for (size_t i = 0; i < 4; i++) assert_int_equal(nsp_job_trace(job, i)->rank, (int)i);
  nsp_job_destroy(job);
}

/* c11 on the CPU stand-in, without completion tracking: only the
 * wavefront can say who is behind (test_an_hang.c has the GPU run). */
static void test_c11_straggler(void **state) {
  (void)state;
  struct nsp_job *job = analyse_case("c11-notrack", 2);
  assert_int_equal(nsp_job_nfindings(job), 1);
  const struct nsp_finding *f = nsp_job_finding(job, 0);
  assert_int_equal(f->kind, NSP_FIND_STOPPED_EARLY);
  assert_true(f->comm_id == NSP_CASE_WORLD);
  assert_int_equal(f->seq, 4);
  /* The rank behind is the one to look at. */
  assert_ranks(f->odd_ranks, f->nodd, "1");
  assert_side(&f->sides[0], "1");
  assert_int_equal(f->sides[0].call.seq, 4);
  assert_side(&f->sides[1], "0");
  assert_int_equal(f->sides[1].call.seq, 5);
  assert_int_equal(f->sides[0].procs[0].call.api, NSP_API_AllReduce);
  assert_int_equal(f->sides[0].procs[0].call.seq, 4);
  assert_contains(f->message, "rank 1 stopped at seq 4 while rank 0 reached seq 5");
  assert_contains(f->message, "rank 1's last call: all-reduce 1000 x float32 sum (4000 bytes) seq 4 on this communicator");
  nsp_job_destroy(job);
}

/* ---- variations --------------------------------------------------------- */

static struct nsp_tracegen *rank_gen(int r, uint32_t *w, int nranks) {
  char host[16];
  snprintf(host, sizeof host, "h%d", r);
  struct nsp_tracegen *g = nsp_tracegen_create(host, 100u + (uint32_t)r, r);
  assert_non_null(g);
  *w = nsp_tracegen_comm(g, 0xaaaa, r, nranks);
  assert_true(*w > 0);
  return g;
}

/* An init NCCL refused because the rank was out of range (rank 5 of a
 * 1-rank communicator, beside a good rank 0 of it) traces no rank 5: the
 * communicator lists rank 0 only, and the failure is an error finding. */
static void test_refused_init_rank_not_traced(void **state) {
  (void)state;
  struct nsp_tracegen *g = nsp_tracegen_create("h0", 100, 0);
  assert_non_null(g);
  assert_true(nsp_tracegen_comm(g, 0xbbbb, 0, 1) > 0);
  nsp_tracegen_fail_next(g, ncclInvalidArgument, "rank 5 out of range");
  nsp_tracegen_comm(g, 0xbbbb, 5, 1);
  struct nsp_job *job = analyse_gens(&g, 1);
  assert_int_equal(nsp_job_ncomms(job), 1);
  const struct nsp_comm_info *c = nsp_job_comm(job, 0);
  assert_int_equal(c->ntraced, 1);
  assert_int_equal(c->ranks[0], 0);
  int errors = 0;
  for (size_t i = 0; i < nsp_job_nfindings(job); i++) {
    print_message("# %.900s\n", nsp_job_finding(job, i)->message);
    errors += nsp_job_finding(job, i)->kind == NSP_FIND_ERROR;
  }
  assert_int_equal(errors, 1);
  nsp_job_destroy(job);
}

/* k-th send vs k-th recv by bytes: equal bytes in other dtypes are fine,
 * a short recv is not; the first bad one per pair is reported. */
static void test_p2p_size(void **state) {
  (void)state;
  struct nsp_tracegen *g[2];
  uint32_t w[2];
  for (int r = 0; r < 2; r++) g[r] = rank_gen(r, &w[r], 2);
  for (int i = 0; i < 5; i++) nsp_tracegen_p2p(g[0], NSP_API_Send, w[0], 1024, ncclFloat32, 1);
  nsp_tracegen_p2p(g[1], NSP_API_Recv, w[1], 2048, ncclFloat16, 0); /* same bytes */
  nsp_tracegen_p2p(g[1], NSP_API_Recv, w[1], 1024, ncclFloat32, 0);
  nsp_tracegen_p2p(g[1], NSP_API_Recv, w[1], 512, ncclFloat32, 0); /* #3 short */
  nsp_tracegen_p2p(g[1], NSP_API_Recv, w[1], 1000, ncclFloat32, 0); /* #4 short too */
  nsp_tracegen_p2p(g[1], NSP_API_Recv, w[1], 1024, ncclFloat32, 0);
  struct nsp_job *job = analyse_gens(g, 2);
  assert_int_equal(nsp_job_nfindings(job), 1);
  const struct nsp_finding *f = nsp_job_finding(job, 0);
  assert_int_equal(f->kind, NSP_FIND_P2P_SIZE_MISMATCH);
  assert_int_equal(f->seq, 3);
  assert_int_equal(f->src, 0);
  assert_int_equal(f->dst, 1);
  assert_int_equal(f->later, 1);
  assert_int_equal(f->sides[0].call.count, 1024);
  assert_int_equal(f->sides[1].call.count, 512);
  assert_true(f->sides[0].call.time_ns && f->sides[1].call.time_ns);
  assert_contains(f->message, "send #3 from rank 0 to rank 1 (1024 x float32 = 4096 bytes) does not match recv #3 at "
                              "rank 1 (512 x float32 = 2048 bytes)");
  nsp_job_destroy(job);
}

/* Recvs from a peer that never sent anything to us. */
static void test_p2p_unmatched_recv(void **state) {
  (void)state;
  struct nsp_tracegen *g[3];
  uint32_t w[3];
  for (int r = 0; r < 3; r++) g[r] = rank_gen(r, &w[r], 3);
  nsp_tracegen_p2p(g[0], NSP_API_Send, w[0], 4, ncclInt32, 2); /* 0 -> 2 fine */
  nsp_tracegen_p2p(g[2], NSP_API_Recv, w[2], 4, ncclInt32, 0);
  nsp_tracegen_p2p(g[1], NSP_API_Recv, w[1], 8, ncclInt32, 0); /* 0 never sends to 1 */
  nsp_tracegen_p2p(g[1], NSP_API_Recv, w[1], 8, ncclInt32, 0);
  struct nsp_job *job = analyse_gens(g, 3);
  assert_int_equal(nsp_job_nfindings(job), 1);
  const struct nsp_finding *f = nsp_job_finding(job, 0);
  assert_int_equal(f->kind, NSP_FIND_P2P_UNMATCHED);
  assert_int_equal(f->api, NSP_API_Recv);
  assert_int_equal(f->seq, 1);
  assert_int_equal(f->src, 0);
  assert_int_equal(f->dst, 1);
  assert_int_equal(f->later, 1);
  assert_int_equal(f->sides[0].posted, 0);
  assert_int_equal(f->sides[1].posted, 2);
  assert_contains(f->message, "unmatched recv #1 from rank 0 to rank 1 (8 x int32 = 32 bytes)");
  nsp_job_destroy(job);
}

/* Findings come likely cause first: mismatches (even when later in
 * time), then errors, then wavefronts. */
static void test_order(void **state) {
  (void)state;
  struct nsp_tracegen *g[2];
  uint32_t w[2], x[2];
  for (int r = 0; r < 2; r++) {
    g[r] = rank_gen(r, &w[r], 2);
    x[r] = nsp_tracegen_comm(g[r], 0xbbbb, r, 2);
  }
  nsp_tracegen_async_error(g[1], w[1], ncclInternalError, "internal"); /* earliest event */
  for (int r = 0; r < 2; r++) nsp_tracegen_coll(g[r], NSP_API_AllReduce, w[r], 8, ncclFloat32, ncclSum, -1);
  nsp_tracegen_coll(g[0], NSP_API_AllReduce, w[0], 8, ncclFloat32, ncclMax, -1); /* seq 2 redop */
  nsp_tracegen_coll(g[1], NSP_API_AllReduce, w[1], 8, ncclFloat32, ncclSum, -1);
  for (int i = 0; i < 3; i++) nsp_tracegen_coll(g[0], NSP_API_AllGather, x[0], 8, ncclFloat32, -1, -1);
  nsp_tracegen_coll(g[1], NSP_API_AllGather, x[1], 8, ncclFloat32, -1, -1);
  struct nsp_job *job = analyse_gens(g, 2);
  assert_int_equal(nsp_job_nfindings(job), 3);
  const struct nsp_finding *f0 = nsp_job_finding(job, 0), *f1 = nsp_job_finding(job, 1),
                           *f2 = nsp_job_finding(job, 2);
  assert_int_equal(f0->kind, NSP_FIND_REDOP_MISMATCH);
  assert_int_equal(f0->seq, 2);
  assert_contains(f0->message, "rank 0 all-reduce 8 x float32 max (32 bytes) vs rank 1 all-reduce 8 x float32 sum");
  assert_int_equal(f1->kind, NSP_FIND_ERROR);
  assert_int_equal(f1->sides[0].procs[0].call.source, NSP_SRC_ASYNC);
  assert_string_equal(f1->message, "first error: rank 1 in an async error: ncclInternalError (\"internal\")");
  assert_true(f1->time_ns < f0->time_ns);
  assert_int_equal(f2->kind, NSP_FIND_STOPPED_EARLY);
  assert_true(f2->comm_id == 0xbbbb);
  assert_ranks(f2->odd_ranks, f2->nodd, "1");
  /* Rank 1's last call was on the other communicator. */
  assert_true(f2->sides[0].procs[0].call.comm_id == 0xbbbb);
  assert_contains(nsp_job_summary(job), "3 findings (redop-mismatch: 1, stopped-early: 1, error: 1)");
  assert_contains(nsp_job_summary(job), "The first problem (redop-mismatch) is on communicator 000000000000aaaa");
  nsp_job_destroy(job);
}

/* Later differing seqs are counted, not reported; a rank that never
 * reached the mismatch keeps its wavefront finding. */
static void test_later_and_wavefront(void **state) {
  (void)state;
  struct nsp_tracegen *g[3];
  uint32_t w[3];
  for (int r = 0; r < 3; r++) g[r] = rank_gen(r, &w[r], 3);
  for (int r = 0; r < 2; r++)
    for (int i = 0; i < 6; i++)
      nsp_tracegen_coll(g[r], NSP_API_AllReduce, w[r], i >= 2 && r == 1 ? 16 : 8, ncclInt32, ncclSum, -1);
  nsp_tracegen_coll(g[2], NSP_API_AllReduce, w[2], 8, ncclInt32, ncclSum, -1); /* stops at seq 1 */
  struct nsp_job *job = analyse_gens(g, 3);
  assert_int_equal(nsp_job_nfindings(job), 2);
  const struct nsp_finding *f = nsp_job_finding(job, 0);
  assert_int_equal(f->kind, NSP_FIND_COUNT_MISMATCH);
  assert_int_equal(f->seq, 3);
  assert_int_equal(f->later, 3); /* seqs 4-6 */
  assert_contains(f->message, "(and 3 later seqs also differ)");
  /* Rank 2 never got to seq 3: it is not on a side of the mismatch. */
  assert_int_equal(f->nsides, 2);
  assert_side(&f->sides[0], "0");
  assert_side(&f->sides[1], "1");
  const struct nsp_finding *s = nsp_job_finding(job, 1);
  assert_int_equal(s->kind, NSP_FIND_STOPPED_EARLY);
  assert_int_equal(s->seq, 1);
  assert_side(&s->sides[0], "2");
  assert_side(&s->sides[1], "0-1");
  nsp_job_destroy(job);
}

/* A non-blocking init: the first COMM record does not know the rank; a
 * later record for the same comm index does, and wins. */
static void test_nonblocking_init(void **state) {
  (void)state;
  struct nsp_tracegen *g[2];
  for (int r = 0; r < 2; r++) {
    g[r] = nsp_tracegen_create("h", 10u + (uint32_t)r, -1); /* no RANK anywhere */
    struct nsp_rec_ext x;
    memset(&x, 0, sizeof x);
    x.comm_id = 0xcccc;
    x.rank = -1;
    x.nranks = -1;
    x.device = -1;
    struct nsp_rec c;
    memset(&c, 0, sizeof c);
    c.kind = NSP_REC_COMM;
    c.api = NSP_API_CommInitRankConfig;
    c.comm = 1;
    c.result = ncclInProgress; /* not an error */
    c.flags = NSP_COMM_PENDING;
    c.t_enter = 2000000000ull;
    c.t_exit = 2000000001ull;
    c.ext = &x;
    assert_int_equal(nsp_tracegen_record(g[r], &c), 0);
    struct nsp_rec call;
    memset(&call, 0, sizeof call);
    call.kind = NSP_REC_CALL;
    call.api = NSP_API_AllReduce;
    call.comm = 1;
    call.seq = 1;
    call.count = 10;
    call.dtype = r ? ncclFloat64 : ncclInt64;
    call.redop = ncclSum;
    call.peer = -1;
    call.t_enter = 2000001000ull;
    call.t_exit = 2000001100ull;
    assert_int_equal(nsp_tracegen_record(g[r], &call), 0);
    x.rank = r;
    x.nranks = 2;
    c.flags = 0;
    c.result = 0;
    c.t_enter = c.t_exit = 2000002000ull;
    assert_int_equal(nsp_tracegen_record(g[r], &c), 0);
  }
  struct nsp_job *job = analyse_gens(g, 2);
  assert_int_equal(nsp_job_nfindings(job), 1);
  const struct nsp_finding *f = nsp_job_finding(job, 0);
  assert_int_equal(f->kind, NSP_FIND_DTYPE_MISMATCH);
  assert_side(&f->sides[0], "0");
  assert_int_equal(f->sides[0].call.dtype, ncclInt64);
  assert_side(&f->sides[1], "1");
  assert_int_equal(f->comm->nranks, 2);
  /* Without an environment rank the job rank comes from the communicator. */
  assert_int_equal(nsp_job_trace(job, 1)->rank, 1);
  assert_int_equal(nsp_job_trace(job, 0)->errors, 0);
  nsp_job_destroy(job);
}

/* Result codes NCCL may add later print as "unknown result N"; the
 * earliest error wins across hosts whose monotonic clocks differ. */
static void test_unknown_result_and_clock(void **state) {
  (void)state;
  struct nsp_tracegen *g[2];
  uint32_t w[2];
  for (int r = 0; r < 2; r++) g[r] = rank_gen(r, &w[r], 2);
  /* Rank 1's monotonic clock reads much higher, but its wall clock is
   * 1 s behind rank 0's: its error (at +10 us) comes first in real time. */
  nsp_tracegen_set_clock(g[1], 1700000000000000000ull - 1000000000ull, 500000000000ull);
  nsp_tracegen_fail_next(g[0], 42, NULL);
  nsp_tracegen_coll(g[0], NSP_API_AllReduce, w[0], 1, ncclUint8, ncclMax, -1);
  nsp_tracegen_fail_next(g[1], NSP_NCCL_TIMEOUT, "timeout");
  nsp_tracegen_coll(g[1], NSP_API_AllReduce, w[1], 1, ncclUint8, ncclMax, -1);
  struct nsp_job *job = analyse_gens(g, 2);
  assert_int_equal(nsp_job_nfindings(job), 1);
  const struct nsp_finding *f = nsp_job_finding(job, 0);
  assert_int_equal(f->kind, NSP_FIND_ERROR);
  assert_side(&f->sides[0], "1");
  assert_side(&f->sides[1], "0");
  assert_string_equal(f->message, "first error: rank 1 at seq 1 all-reduce: ncclTimeout (\"timeout\"); later: rank 0 "
                                  "unknown result 42");
  nsp_job_destroy(job);
}

/* A collective NCCL refused (a bad dtype, at argument checking) that the
 * rank follows with good calls was never part of the sequence: it takes
 * no seq (format 1.4), so no mismatch and no rank ahead or behind; only
 * the error is reported.  (A new user's program: rank 0 made one bad
 * all-reduce, then both made 3 good ones; every result was right.) */
static void test_refused_call_not_in_sequence(void **state) {
  (void)state;
  for (int order = 0; order < 2; order++) { /* either trace read first */
    struct nsp_tracegen *g[2];
    uint32_t w[2];
    for (int r = 0; r < 2; r++) g[r] = rank_gen(r, &w[r], 2);
    nsp_tracegen_fail_next(g[0], ncclInvalidArgument, "invalid data type 99");
    assert_int_equal(nsp_tracegen_coll(g[0], NSP_API_AllReduce, w[0], 1024, 99, ncclSum, -1), 1);
    for (int i = 0; i < 3; i++)
      for (int r = 0; r < 2; r++)
        assert_int_equal(nsp_tracegen_coll(g[r], NSP_API_AllReduce, w[r], 1024, ncclFloat32, ncclSum, -1), i + 1);
    struct nsp_tracegen *in[2] = {g[order], g[1 - order]};
    struct nsp_job *job = analyse_gens(in, 2);
    for (size_t i = 0; i < nsp_job_nfindings(job); i++)
      print_message("# order %d: %.900s\n", order, nsp_job_finding(job, i)->message);
    assert_int_equal(nsp_job_nfindings(job), 1);
    const struct nsp_finding *f = nsp_job_finding(job, 0);
    assert_int_equal(f->kind, NSP_FIND_ERROR);
    assert_int_equal(f->sides[0].call.result, ncclInvalidArgument);
    nsp_job_destroy(job);
  }
}

/* An error inside the mismatched collective (a timeout waiting for the
 * others) comes after the mismatch and says it is probably its result. */
static void test_error_after_mismatch(void **state) {
  (void)state;
  struct nsp_tracegen *g[2];
  uint32_t w[2];
  for (int r = 0; r < 2; r++) g[r] = rank_gen(r, &w[r], 2);
  nsp_tracegen_coll(g[0], NSP_API_AllReduce, w[0], 8, ncclFloat16, ncclSum, -1);
  nsp_tracegen_fail_next(g[1], ncclSystemError, "timed out waiting for rank 0");
  nsp_tracegen_coll(g[1], NSP_API_AllReduce, w[1], 8, ncclFloat32, ncclSum, -1);
  struct nsp_job *job = analyse_gens(g, 2);
  assert_int_equal(nsp_job_nfindings(job), 2);
  assert_int_equal(nsp_job_finding(job, 0)->kind, NSP_FIND_DTYPE_MISMATCH);
  const struct nsp_finding *f = nsp_job_finding(job, 1);
  assert_int_equal(f->kind, NSP_FIND_ERROR);
  assert_string_equal(f->message, "first error: rank 1 at seq 1 all-reduce: ncclSystemError (\"timed out waiting for "
                                  "rank 0\"); this follows the dtype-mismatch at seq 1 on the same communicator and "
                                  "is probably its consequence");
  nsp_job_destroy(job);
}

/* Grouped send/recv report errors from ncclGroupEnd, a call on no
 * communicator: the error is the communicator's of the group's calls
 * (issue #13 item 7), and the rank that stopped there is not also
 * reported as a wavefront. */
static void test_group_end_error(void **state) {
  (void)state;
  struct nsp_tracegen *g[2];
  uint32_t w[2];
  for (int r = 0; r < 2; r++) {
    g[r] = rank_gen(r, &w[r], 2);
    nsp_tracegen_coll(g[r], NSP_API_AllReduce, w[r], 8, ncclFloat32, ncclSum, -1);
    nsp_tracegen_group(g[r], 1);
    nsp_tracegen_p2p(g[r], r ? NSP_API_Send : NSP_API_Recv, w[r], 8, ncclFloat32, 1 - r);
    if (r == 1) nsp_tracegen_fail_next(g[r], ncclSystemError, "NET/IB: connection closed");
    nsp_tracegen_group(g[r], 0);
  }
  nsp_tracegen_coll(g[0], NSP_API_AllReduce, w[0], 8, ncclFloat32, ncclSum, -1);
  struct nsp_job *job = analyse_gens(g, 2);
  assert_int_equal(nsp_job_nfindings(job), 1);
  const struct nsp_finding *f = nsp_job_finding(job, 0);
  assert_int_equal(f->kind, NSP_FIND_ERROR);
  assert_non_null(f->comm);
  assert_true(f->comm_id == f->comm->id && f->comm_id != 0);
  assert_int_equal(f->sides[0].procs[0].comm_rank, 1);
  assert_int_equal(f->api, NSP_API_GroupEnd);
  assert_int_equal(f->seq, 0);
  assert_string_equal(f->message, "first error: rank 1 in group-end of a group of calls on this communicator: "
                                  "ncclSystemError (\"NET/IB: connection closed\")");
  assert_contains(nsp_job_summary(job), "The first problem (error) is on communicator");
  assert_null(strstr(nsp_job_summary(job), "no communicator"));
  nsp_job_destroy(job);
}

/* A trace cut mid-frame (SIGKILL) analyses up to its last whole frame and
 * the note names the file and the byte offset. */
static void test_truncated_file(void **state) {
  (void)state;
  char dir[256];
  assert_int_equal(nsp_case_mkdtemp(dir, sizeof dir), 0);
  struct nsp_tracegen *g[2];
  uint32_t w[2];
  for (int r = 0; r < 2; r++) {
    g[r] = rank_gen(r, &w[r], 2);
    nsp_tracegen_set_frame_records(g[r], 4); /* PROCESS, COMM, seq 1, 2 | 3-6 | 7-10 */
    nsp_tracegen_set_exit(g[r], r == 0); /* rank 1 is killed: no EXIT */
    for (int i = 0; i < 10; i++) nsp_tracegen_coll(g[r], NSP_API_AllReduce, w[r], 64, ncclFloat32, ncclSum, -1);
  }
  const uint8_t *data;
  size_t len, nf;
  assert_int_equal(nsp_tracegen_bytes(g[1], &data, &len), 0);
  const size_t *offs = nsp_tracegen_frame_offsets(g[1], &nf);
  assert_int_equal(nf, 3);
  size_t cut_frame = offs[2]; /* offs dies with g[1] */
  char p0[512], p1[512];
  assert_int_equal(nsp_tracegen_write(g[0], dir, SIZE_MAX, p0, sizeof p0), 0);
  assert_int_equal(nsp_tracegen_write(g[1], dir, offs[2] + 7, p1, sizeof p1), 0); /* cut in frame 3 */
  for (int r = 0; r < 2; r++) nsp_tracegen_destroy(g[r]);

  struct nsp_job *job = nsp_job_create();
  assert_int_equal(nsp_job_add_path(job, dir), 2);
  assert_int_equal(nsp_job_analyze(job), 0);
  const struct nsp_trace_info *t = nsp_job_trace(job, 1);
  assert_string_equal(t->path, p1);
  assert_int_equal(t->records, 8); /* PROCESS, COMM, seq 1-6 */
  assert_int_equal(t->frames, 2);
  char want[64];
  snprintf(want, sizeof want, "incomplete frame at byte %zu", cut_frame);
  assert_contains(t->problem, want);
  assert_int_equal(nsp_job_nnotes(job), 1);
  assert_contains(nsp_job_note(job, 0), p1);
  assert_contains(nsp_job_note(job, 0), want);
  /* Its ranks' last readable seq is 6: that shows as the wavefront. */
  assert_int_equal(nsp_job_nfindings(job), 1);
  const struct nsp_finding *f = nsp_job_finding(job, 0);
  assert_int_equal(f->kind, NSP_FIND_STOPPED_EARLY);
  assert_int_equal(f->seq, 6);
  assert_side(&f->sides[0], "1");
  assert_contains(nsp_job_summary(job), "See the 1 note below");
  nsp_job_destroy(job);
  nsp_case_rmdir(dir);
}

/* Damage anywhere in one rank's trace: whatever values the damaged bytes
 * decode to (huge seqs, comm indices, peers, counts, completions, call
 * sites), the analysis and the perf figures complete with consistent
 * findings and free everything. */
static void test_damaged_traces_analyse(void **state) {
  (void)state;
  const char *cases[] = {"c07", "c08", "c09", "c11", "c13"};
  for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++) {
    struct nsp_tracegen *g[NSP_CASE_MAX_RANKS];
    int n = nsp_case_build(cases[ci], g);
    assert_true(n >= 2);
    const uint8_t *data[NSP_CASE_MAX_RANKS];
    size_t len[NSP_CASE_MAX_RANKS];
    for (int r = 0; r < n; r++) assert_int_equal(nsp_tracegen_bytes(g[r], &data[r], &len[r]), 0);
    uint8_t *bad = malloc(len[1]);
    assert_non_null(bad);
    for (size_t at = NSP_HEADER_SIZE; at < len[1]; at++) {
      for (int flip = 1; flip < 256; flip <<= 3) {
        memcpy(bad, data[1], len[1]);
        bad[at] ^= (uint8_t)flip;
        struct nsp_job *job = nsp_job_create();
        assert_non_null(job);
        for (int r = 0; r < n; r++) {
          int ret = nsp_job_add_mem(job, "t.ncclspy", r == 1 ? bad : data[r], len[r]);
          assert_true(ret == 1 || ret == NSP_AN_EREAD);
        }
        assert_int_equal(nsp_job_analyze(job), 0);
        assert_int_equal(nsp_job_perf(job), 0);
        for (size_t i = 0; i < nsp_job_nfindings(job); i++) {
          const struct nsp_finding *f = nsp_job_finding(job, i);
          assert_true(f->nsides >= 1 && f->message && f->hint);
          assert_true(f->cause == SIZE_MAX || f->cause < nsp_job_nfindings(job));
          for (size_t s = 0; s < f->nsides; s++) assert_true(f->sides[s].nranks >= 1 && f->sides[s].text);
        }
        nsp_job_destroy(job);
      }
    }
    free(bad);
    for (int r = 0; r < n; r++) nsp_tracegen_destroy(g[r]);
  }
}

/* Unreadable inputs: noted, skipped, never fatal to the others. */
static void test_bad_inputs(void **state) {
  (void)state;
  char dir[256];
  assert_int_equal(nsp_case_mkdtemp(dir, sizeof dir), 0);
  assert_int_equal(nsp_case_write("c05", dir), 2);
  char junk[512];
  snprintf(junk, sizeof junk, "%s/junk.ncclspy", dir);
  FILE *f = fopen(junk, "w");
  assert_non_null(f);
  fputs("this is not a trace, but long enough to have a header's worth of bytes in it, "
        "so that the magic is what gives it away ................................",
        f);
  fclose(f);
  struct nsp_job *job = nsp_job_create();
  assert_int_equal(nsp_job_add_path(job, dir), 2);
  assert_int_equal(nsp_job_add_path(job, "/nonexistent-dir-of-traces"), NSP_AN_EREAD);
  assert_contains(nsp_job_error(job), "/nonexistent-dir-of-traces");
  assert_int_equal(nsp_job_add_mem(job, "x", "y", 0), NSP_AN_EINVAL);
  assert_int_equal(nsp_job_analyze(job), 0);
  assert_int_equal(nsp_job_analyze(job), NSP_AN_ESTATE);
  assert_int_equal(nsp_job_add_path(job, dir), NSP_AN_ESTATE);
  assert_int_equal(nsp_job_ntraces(job), 2);
  assert_int_equal(nsp_job_nnotes(job), 2);
  assert_contains(nsp_job_note(job, 0), "junk.ncclspy: not read: not an ncclspy trace (bad magic)");
  assert_contains(nsp_job_note(job, 1), "/nonexistent-dir-of-traces: not read");
  assert_int_equal(count_kind(job, NSP_FIND_COUNT_MISMATCH), 1);
  nsp_job_destroy(job);
  nsp_job_destroy(NULL);
  nsp_case_rmdir(dir);
}

/* Records the shim dropped: a note, not a finding; ranks never traced:
 * an env-missing-ranks finding naming them. */
/* ---- coverage: dropped records and cut traces ----------------------------- */

/* A note of the job containing needle, or NULL. */
static const char *find_note(const struct nsp_job *job, const char *needle) {
  for (size_t i = 0; i < nsp_job_nnotes(job); i++)
    if (strstr(nsp_job_note(job, i), needle)) return nsp_job_note(job, i);
  return NULL;
}

/* Two ranks of one communicator; rank r makes calls[r] all-reduces, and
 * after after_drop[r] of them (0: never) a DROPPED record of drop[r]
 * records with `reason`. */
static struct nsp_tracegen *drop_gen(int r, int calls, int after_drop, uint64_t drop, uint32_t reason) {
  struct nsp_tracegen *g = nsp_tracegen_create("h", 100u + (uint32_t)r, r);
  assert_non_null(g);
  uint32_t w = nsp_tracegen_comm(g, 0xd0d0, r, 2);
  assert_int_not_equal(w, 0);
  for (int i = 1; i <= calls; i++) {
    assert_int_equal(nsp_tracegen_coll(g, NSP_API_AllReduce, w, 64, ncclFloat32, ncclSum, -1), (uint64_t)i);
    if (i == after_drop) assert_int_equal(nsp_tracegen_dropped(g, drop, reason), 0);
  }
  return g;
}

/* NCCLSPY_MAX_MB reached on rank 0: its trace ends with a DROPPED record
 * after seq 40 while rank 1 goes on to 100.  Not "stopped-early": a note
 * and the summary say where rank 0's trace stops covering, and why. */
static void test_drop_size_cap_not_stopped(void **state) {
  (void)state;
  struct nsp_tracegen *g[2] = {drop_gen(0, 40, 40, 60, NSP_DROP_SIZE_CAP), drop_gen(1, 100, 0, 0, 0)};
  struct nsp_job *job = analyse_gens(g, 2);
  for (size_t i = 0; i < nsp_job_nfindings(job); i++) print_message("unexpected: %.900s\n", nsp_job_finding(job, i)->message);
  assert_int_equal(count_kind(job, NSP_FIND_STOPPED_EARLY), 0);
  assert_int_equal(nsp_job_nfindings(job), 0);
  const char *n = find_note(job, "rank 0's trace stops covering communicator 000000000000d0d0 at seq 40");
  assert_non_null(n);
  assert_contains(n, "because records were dropped after it (60 dropped: size cap (NCCLSPY_MAX_MB))");
  assert_contains(n, "nothing after it can be judged for that rank");
  const char *sum = nsp_job_summary(job);
  assert_contains(sum, "No problems found in what was recorded in 2 traces");
  assert_contains(sum, "of rank 0's records were dropped (size cap (NCCLSPY_MAX_MB))");
  assert_contains(sum, "rank 0's trace stops covering communicator 000000000000d0d0 at seq 40 because records were "
                       "dropped (size cap (NCCLSPY_MAX_MB))");
  nsp_job_destroy(job);
}

/* Ring-full drops in the middle of rank 0's trace, which goes on after
 * them: its last seq is known, so a rank that really stopped is still
 * named; a share of records dropped is named too. */
static void test_drop_middle_still_judged(void **state) {
  (void)state;
  struct nsp_tracegen *g[2] = {drop_gen(0, 50, 10, 900, NSP_DROP_RING_FULL), drop_gen(1, 100, 0, 0, 0)};
  struct nsp_job *job = analyse_gens(g, 2);
  assert_int_equal(count_kind(job, NSP_FIND_STOPPED_EARLY), 1);
  const struct nsp_finding *f = nsp_job_finding(job, 0);
  assert_contains(f->message, "rank 0 stopped at seq 50 while rank 1 reached seq 100");
  assert_null(strstr(f->message, "not judged"));
  assert_null(find_note(job, "stops covering"));
  nsp_job_destroy(job);
}

/* Both ranks complete, most of their records dropped (ring full): "No
 * problems found" says it only covers what was recorded, and how much
 * of each rank was dropped. */
static void test_drop_share_in_summary(void **state) {
  (void)state;
  struct nsp_tracegen *g[2] = {drop_gen(0, 100, 50, 1900, NSP_DROP_RING_FULL),
                               drop_gen(1, 100, 50, 1900, NSP_DROP_RING_FULL)};
  struct nsp_job *job = analyse_gens(g, 2);
  assert_int_equal(nsp_job_nfindings(job), 0);
  /* 1900 of 1900 + 104 read (PROCESS, COMM, 100 CALLs, DROPPED, ...). */
  const char *sum = nsp_job_summary(job);
  assert_contains(sum, "No problems found in what was recorded in 2 traces");
  assert_contains(sum, "coverage is incomplete: 95% of rank 0's records were dropped (ring full), 95% of rank 1's "
                       "records were dropped (ring full).");
  nsp_job_destroy(job);
}

/* Two ranks of communicator 0xdd; rank 0 sends rank 1 `n` messages and
 * rank 1 receives them (dir: 1 the other way round).  The rank `dropper`
 * writes a DROPPED record of 5 records (`reason`) after its `at`-th op and,
 * with `stop`, nothing after it (NCCLSPY_MAX_MB: the rest is not written). */
static struct nsp_job *p2p_drop_job(int n, int dir, int dropper, int at, int stop, uint32_t reason) {
  struct nsp_tracegen *g[2];
  for (int r = 0; r < 2; r++) {
    g[r] = nsp_tracegen_create("h", 900u + (uint32_t)r, r);
    assert_non_null(g[r]);
    uint32_t c = nsp_tracegen_comm(g[r], 0xdd, r, 2);
    int sends = (r == 0) != (dir == 1);
    for (int k = 1; k <= n; k++) {
      assert_int_equal(nsp_tracegen_p2p(g[r], sends ? NSP_API_Send : NSP_API_Recv, c, 10, ncclFloat32, 1 - r),
                       (uint64_t)k);
      if (r == dropper && k == at) {
        assert_int_equal(nsp_tracegen_dropped(g[r], 5, reason), 0);
        if (stop) break;
      }
    }
  }
  return analyse_gens(g, 2);
}

/* The receiver's trace hits NCCLSPY_MAX_MB after recv #5 of 10: the sends
 * from #6 on are not judged (a note says why), not "unmatched"; the same
 * with the sender's trace cut short and the recvs past it. */
static void test_drop_p2p_not_judged(void **state) {
  (void)state;
  for (int dir = 0; dir < 2; dir++) {
    /* dir 0: rank 0 sends, rank 1's trace stops; dir 1: rank 1 sends, and
     * its trace stops, so rank 0's recvs are the ones left over. */
    struct nsp_job *job = p2p_drop_job(10, dir, 1, 5, 1, NSP_DROP_SIZE_CAP);
    for (size_t i = 0; i < nsp_job_nfindings(job); i++) print_message("unexpected: %.900s\n", nsp_job_finding(job, i)->message);
    assert_int_equal(nsp_job_nfindings(job), 0);
    const char *n = find_note(job, dir ? "rank 0's 5 recvs from rank 1 from #6 on, on communicator 00000000000000dd, "
                                         "are not judged: the trace of rank 1 dropped records after its send #5 to "
                                         "rank 0 (5 dropped: size cap (NCCLSPY_MAX_MB)), so it may have posted the "
                                         "matching sends"
                                       : "rank 0's 5 sends to rank 1 from #6 on, on communicator 00000000000000dd, "
                                         "are not judged: the trace of rank 1 dropped records after its recv #5 from "
                                         "rank 0 (5 dropped: size cap (NCCLSPY_MAX_MB)), so it may have posted the "
                                         "matching recvs");
    assert_non_null(n);
    assert_contains(nsp_job_summary(job), "No problems found in what was recorded in 2 traces");
    nsp_job_destroy(job);
  }
  /* One op past the cut: singular. */
  struct nsp_job *job = p2p_drop_job(6, 0, 1, 5, 1, NSP_DROP_WRITE_ERROR);
  assert_int_equal(nsp_job_nfindings(job), 0);
  assert_non_null(find_note(job, "rank 0's send #6 to rank 1 on communicator 00000000000000dd is not judged: the "
                                 "trace of rank 1 dropped records after its recv #5 from rank 0 (5 dropped: write "
                                 "errors), so it may have posted the matching recv"));
  nsp_job_destroy(job);
}

/* An all-to-all by send/recv (8 ranks, every pair both ways) whose traces
 * all hit the size cap, the odd ranks one round later than the even ones:
 * nothing is judged past the cuts, and the unjudged pairs get one note per
 * rank whose trace stops covering them, not one per pair. */
static void test_drop_p2p_all_to_all_one_note_per_rank(void **state) {
  (void)state;
  enum { N = 8 };
  struct nsp_tracegen *g[N];
  for (int r = 0; r < N; r++) {
    g[r] = nsp_tracegen_create("h", 900u + (uint32_t)r, r);
    uint32_t c = nsp_tracegen_comm(g[r], 0xdd, r, N);
    for (int round = 0; round < (r & 1 ? 4 : 3); round++) {
      for (int p = 0; p < N; p++)
        if (p != r) nsp_tracegen_p2p(g[r], NSP_API_Send, c, 10, ncclFloat32, p);
      for (int p = 0; p < N; p++)
        if (p != r) nsp_tracegen_p2p(g[r], NSP_API_Recv, c, 10, ncclFloat32, p);
    }
    assert_int_equal(nsp_tracegen_dropped(g[r], 5, NSP_DROP_SIZE_CAP), 0);
  }
  struct nsp_job *job = analyse_gens(g, N);
  assert_int_equal(nsp_job_nfindings(job), 0);
  size_t p2p_notes = 0;
  for (size_t i = 0; i < nsp_job_nnotes(job); i++) p2p_notes += strstr(nsp_job_note(job, i), " not judged: ") != NULL;
  assert_int_equal(p2p_notes, N / 2); /* the even ranks, which stopped a round early */
  /* each even rank's note names its first pair (an odd rank's send or
   * recv #4) and counts the other 7: 4 odd peers, both directions */
  assert_non_null(find_note(job, "the same holds for 7 more pairs with it (7 sends/recvs)"));
  nsp_job_destroy(job);
}

/* Drops before the receiver's last recv (ring full after recv #2, then
 * recvs 3-5 recorded, then the rank stops) leave its last recv known:
 * sends 6-10 are still unmatched. */
static void test_drop_p2p_before_last_still_judged(void **state) {
  (void)state;
  struct nsp_tracegen *g[2];
  for (int r = 0; r < 2; r++) {
    g[r] = nsp_tracegen_create("h", 900u + (uint32_t)r, r);
    uint32_t c = nsp_tracegen_comm(g[r], 0xdd, r, 2);
    for (int k = 1; k <= (r ? 5 : 10); k++) {
      nsp_tracegen_p2p(g[r], r ? NSP_API_Recv : NSP_API_Send, c, 10, ncclFloat32, 1 - r);
      if (r == 1 && k == 2) assert_int_equal(nsp_tracegen_dropped(g[r], 3, NSP_DROP_RING_FULL), 0);
    }
  }
  struct nsp_job *job = analyse_gens(g, 2);
  assert_int_equal(nsp_job_nfindings(job), 1);
  const struct nsp_finding *f = nsp_job_finding(job, 0);
  assert_int_equal(f->kind, NSP_FIND_P2P_UNMATCHED);
  assert_int_equal(f->seq, 6);
  assert_int_equal(f->src, 0);
  assert_int_equal(f->dst, 1);
  assert_null(find_note(job, "not judged"));
  nsp_job_destroy(job);
}

/* Strings from the traces inside the analyzer's quotes (a communicator
 * name in the summary, NCCL's last-error text in the error message) get
 * '"' and '\' escaped, as the finding header escapes them; counts of one
 * read in the singular ("posted 1 recv", "1 later seq also differs"). */
static void test_quoting_and_plurals(void **state) {
  (void)state;
  struct nsp_tracegen *g[2];
  uint32_t w[2];
  for (int r = 0; r < 2; r++) {
    g[r] = nsp_tracegen_create("h", 100u + (uint32_t)r, r);
    nsp_tracegen_set_comm_name(g[r], "tp\"0\\x");
    w[r] = nsp_tracegen_comm(g[r], 0xaaaa, r, 2);
    nsp_tracegen_coll(g[r], NSP_API_AllReduce, w[r], 8, r ? ncclFloat16 : ncclFloat32, ncclSum, -1);
    nsp_tracegen_coll(g[r], NSP_API_AllReduce, w[r], 8, r ? ncclFloat16 : ncclFloat32, ncclSum, -1);
    nsp_tracegen_p2p(g[r], r ? NSP_API_Recv : NSP_API_Send, w[r], 4, ncclInt32, 1 - r);
    if (!r) nsp_tracegen_p2p(g[r], NSP_API_Send, w[r], 4, ncclInt32, 1);
  }
  nsp_tracegen_fail_next(g[1], ncclSystemError, "peer said \"bye\\\"");
  nsp_tracegen_coll(g[1], NSP_API_AllReduce, w[1], 8, ncclFloat32, ncclSum, -1);
  struct nsp_job *job = analyse_gens(g, 2);
  assert_contains(nsp_job_summary(job), "(2 ranks, \"tp\\\"0\\\\x\"): ranks disagree on dtype at seq 1");
  const struct nsp_finding *m = nsp_job_finding(job, 0);
  assert_int_equal(m->kind, NSP_FIND_DTYPE_MISMATCH);
  assert_contains(m->message, " (and 1 later seq also differs)");
  int seen_p2p = 0, seen_err = 0;
  for (size_t i = 0; i < nsp_job_nfindings(job); i++) {
    const struct nsp_finding *f = nsp_job_finding(job, i);
    if (f->kind == NSP_FIND_P2P_UNMATCHED) {
      seen_p2p = 1;
      assert_contains(f->message, "rank 0 posted 2 sends to rank 1, rank 1 posted 1 recv from rank 0");
      assert_string_equal(f->sides[1].text, "posted 1 recv");
    } else if (f->kind == NSP_FIND_ERROR) {
      seen_err = 1;
      assert_contains(f->message, ": ncclSystemError (\"peer said \\\"bye\\\\\\\"\")");
    }
  }
  assert_true(seen_p2p && seen_err);
  nsp_job_destroy(job);
}

/* Rank 1's file is cut inside its last frame (seqs 61 on lost): the
 * stopped-early finding is still made (the process may have died), but
 * its own text says the trace is cut. */
static void test_cut_trace_in_finding(void **state) {
  (void)state;
  struct nsp_tracegen *g0 = drop_gen(0, 100, 0, 0, 0);
  struct nsp_tracegen *g1 = nsp_tracegen_create("h", 101, 1);
  assert_non_null(g1);
  uint32_t w = nsp_tracegen_comm(g1, 0xd0d0, 1, 2);
  for (int i = 1; i <= 100; i++) {
    nsp_tracegen_coll(g1, NSP_API_AllReduce, w, 64, ncclFloat32, ncclSum, -1);
    if (i == 60) assert_int_equal(nsp_tracegen_frame(g1), 0);
  }
  struct nsp_job *job = nsp_job_create();
  const uint8_t *data;
  size_t len;
  assert_int_equal(nsp_tracegen_bytes(g0, &data, &len), 0);
  assert_int_equal(nsp_job_add_mem(job, "t0.ncclspy", data, len), 1);
  assert_int_equal(nsp_tracegen_bytes(g1, &data, &len), 0);
  assert_int_equal(nsp_job_add_mem(job, "t1.ncclspy", data, len - 20), 1);
  size_t nf;
  const size_t *offs = nsp_tracegen_frame_offsets(g1, &nf);
  assert_true(nf >= 2);
  char want[96];
  snprintf(want, sizeof want, "rank 1's trace is cut at byte %zu, so it may have gone further", offs[nf - 1]);
  nsp_tracegen_destroy(g0);
  nsp_tracegen_destroy(g1);
  assert_int_equal(nsp_job_analyze(job), 0);
  assert_int_equal(count_kind(job, NSP_FIND_STOPPED_EARLY), 1);
  const struct nsp_finding *f = nsp_job_finding(job, 0);
  assert_contains(f->message, "rank 1 stopped at seq 60 while rank 0 reached seq 100");
  assert_contains(f->message, want);
  /* The headline keeps the caveat. */
  assert_contains(nsp_job_headline(job), want);
  nsp_job_destroy(job);
}

/* ---- coverage: damaged traces are said, in the summary and the status --- */

/* Two ranks of communicator 0xc0, `calls` all-reduces each, 10 records to
 * a frame; with completion tracking (every call completes 1 ms later)
 * when `track`.  Rank 1 has no EXIT when `no_exit1`. */
static void cov_gens(struct nsp_tracegen **g, int calls, int track, int no_exit1) {
  for (int r = 0; r < 2; r++) {
    g[r] = nsp_tracegen_create("h", 300u + (uint32_t)r, r);
    assert_non_null(g[r]);
    nsp_tracegen_set_frame_records(g[r], 10);
    if (track) {
      nsp_tracegen_set_tracking(g[r], NSP_TRACK_COMPLETION);
      nsp_tracegen_set_auto_complete(g[r], 1, 1000000);
    }
    if (r == 1 && no_exit1) nsp_tracegen_set_exit(g[r], 0);
    uint32_t w = nsp_tracegen_comm(g[r], 0xc0, r, 2);
    assert_int_not_equal(w, 0);
    for (int i = 0; i < calls; i++) nsp_tracegen_coll(g[r], NSP_API_AllReduce, w, 64, ncclFloat32, ncclSum, -1);
  }
}

/* Adds g[0] whole and g[1] as `bad` (len1 bytes), analyses, frees g. */
static struct nsp_job *cov_job(struct nsp_tracegen **g, const uint8_t *bad, size_t len1) {
  struct nsp_job *job = nsp_job_create();
  const uint8_t *data;
  size_t len;
  assert_int_equal(nsp_tracegen_bytes(g[0], &data, &len), 0);
  assert_int_equal(nsp_job_add_mem(job, "h.300.rank0.ncclspy", data, len), 1);
  assert_int_equal(nsp_job_add_mem(job, "h.301.rank1.ncclspy", bad, len1), 1);
  assert_int_equal(nsp_job_analyze(job), 0);
  return job;
}

/* A byte flipped inside rank 1's second frame: the frame's records are
 * lost.  Not "No problems found in 2 traces": the summary and the
 * headline say where the trace is damaged and how much was skipped. */
static void test_cov_damaged_frame(void **state) {
  (void)state;
  struct nsp_tracegen *g[2];
  cov_gens(g, 40, 0, 0);
  const uint8_t *data;
  size_t len, nf;
  assert_int_equal(nsp_tracegen_bytes(g[1], &data, &len), 0);
  const size_t *offs = nsp_tracegen_frame_offsets(g[1], &nf);
  assert_true(nf >= 3);
  uint8_t *bad = malloc(len);
  assert_non_null(bad);
  memcpy(bad, data, len);
  memset(bad + offs[1], 0, 4); /* its zstd magic */
  char want[200];
  snprintf(want, sizeof want, "; coverage is incomplete: rank 1's trace is damaged at byte %zu (%zu bytes skipped).",
           offs[1], offs[2] - offs[1]);
  struct nsp_job *job = cov_job(g, bad, len);
  for (int r = 0; r < 2; r++) nsp_tracegen_destroy(g[r]);
  free(bad);
  for (size_t i = 0; i < nsp_job_nfindings(job); i++) print_message("unexpected: %.900s\n", nsp_job_finding(job, i)->message);
  assert_int_equal(nsp_job_nfindings(job), 0);
  assert_contains(nsp_job_summary(job), "No problems found in what was recorded in 2 traces");
  assert_contains(nsp_job_summary(job), want);
  assert_contains(nsp_job_headline(job), want);
  nsp_job_destroy(job);
}

/* Rank 1's trace cut at a frame boundary after seq 20 (no exit record),
 * while rank 0's all-reduces up to seq 40 completed: an all-reduce
 * completes only when every rank issued it, so rank 1 went on.  Not
 * stopped-early: a note, and the summary's coverage. */
static void test_cov_went_on(void **state) {
  (void)state;
  struct nsp_tracegen *g[2];
  cov_gens(g, 40, 1, 1);
  const uint8_t *data;
  size_t len, nf;
  assert_int_equal(nsp_tracegen_bytes(g[1], &data, &len), 0);
  const size_t *offs = nsp_tracegen_frame_offsets(g[1], &nf);
  assert_true(nf >= 4);
  /* Frames of 10 records: PROCESS, COMM and 4 calls with their
   * completions, then 5 calls a frame: the first 4 frames hold seq 1-19. */
  size_t cut = offs[4];
  struct nsp_job *job = cov_job(g, data, cut);
  for (int r = 0; r < 2; r++) nsp_tracegen_destroy(g[r]);
  for (size_t i = 0; i < nsp_job_nfindings(job); i++) print_message("unexpected: %.900s\n", nsp_job_finding(job, i)->message);
  assert_int_equal(count_kind(job, NSP_FIND_STOPPED_EARLY), 0);
  assert_int_equal(nsp_job_nfindings(job), 0);
  const char *n = find_note(job, "rank 1's trace ends at seq ");
  assert_non_null(n);
  assert_contains(n, "on communicator 00000000000000c0, but rank 0's collectives up to seq 40 completed (a "
                     "collective completes only when every rank issued it), so rank 1 went on");
  assert_contains(nsp_job_summary(job), "coverage is incomplete: rank 1's trace ends at seq ");
  nsp_job_destroy(job);
}

/* A trace cut (no exit record) 2 ms after its last all-reduce, whose
 * completion is not in it: whether it completed is unknown, no
 * never-completed finding ("waited 0.002 s"). */
static void test_cov_cut_young(void **state) {
  (void)state;
  struct nsp_tracegen *g = nsp_tracegen_create("h", 400, 0);
  assert_non_null(g);
  nsp_tracegen_set_exit(g, 0);
  nsp_tracegen_set_tracking(g, NSP_TRACK_COMPLETION);
  nsp_tracegen_set_auto_complete(g, 1, 1000000);
  uint32_t w = nsp_tracegen_comm(g, 0xc1, 0, 1);
  for (int i = 0; i < 4; i++) nsp_tracegen_coll(g, NSP_API_AllReduce, w, 64, ncclFloat32, ncclSum, -1);
  nsp_tracegen_set_auto_complete(g, 0, 0);
  nsp_tracegen_coll(g, NSP_API_AllReduce, w, 64, ncclFloat32, ncclSum, -1);
  nsp_tracegen_set_time(g, nsp_tracegen_now(g) + 2000000); /* its last sign of life, 2 ms later */
  nsp_tracegen_async_error(g, w, 0, "");
  struct nsp_job *job = analyse_gens(&g, 1);
  for (size_t i = 0; i < nsp_job_nfindings(job); i++) print_message("unexpected: %.900s\n", nsp_job_finding(job, i)->message);
  assert_int_equal(count_kind(job, NSP_FIND_NEVER_COMPLETED), 0);
  assert_int_equal(count_kind(job, NSP_FIND_HANG), 0);
  nsp_job_destroy(job);
}

/* Rank 1's first frame (PROCESS, COMM) damaged: its later calls name a
 * communicator whose COMM record was lost.  Rank 1 is traced, so not
 * env-missing-ranks: a note, and the summary says the trace lost its
 * communicators' records. */
static void test_cov_lost_comm_records(void **state) {
  (void)state;
  struct nsp_tracegen *g[2];
  cov_gens(g, 40, 0, 0);
  const uint8_t *data;
  size_t len, nf;
  assert_int_equal(nsp_tracegen_bytes(g[1], &data, &len), 0);
  const size_t *offs = nsp_tracegen_frame_offsets(g[1], &nf);
  size_t first = offs[0]; /* the first data frame (its index before it) */
  uint8_t *bad = malloc(len);
  assert_non_null(bad);
  memcpy(bad, data, len);
  memset(bad + first, 0, 4); /* its zstd magic */
  struct nsp_job *job = cov_job(g, bad, len);
  for (int r = 0; r < 2; r++) nsp_tracegen_destroy(g[r]);
  free(bad);
  for (size_t i = 0; i < nsp_job_nfindings(job); i++) print_message("unexpected: %.900s\n", nsp_job_finding(job, i)->message);
  assert_int_equal(count_kind(job, NSP_FIND_ENV_MISSING_RANKS), 0);
  assert_non_null(find_note(job, "communicator 00000000000000c0 has 2 ranks but 1 has a trace; 1 damaged or "
                                 "unreadable trace file may hold the other (see the notes), so it is not reported "
                                 "as missing"));
  assert_contains(nsp_job_summary(job), "rank 1's trace lost the records of its communicators (");
  char want[96];
  snprintf(want, sizeof want, "coverage is incomplete: rank 1's trace is damaged at byte %zu", first);
  assert_contains(nsp_job_summary(job), want);
  nsp_job_destroy(job);
}

static void test_notes(void **state) {
  (void)state;
  struct nsp_tracegen *g[2];
  uint32_t w[2];
  for (int r = 0; r < 2; r++) {
    g[r] = rank_gen(r, &w[r], 4); /* 4 ranks, 2 traced */
    nsp_tracegen_coll(g[r], NSP_API_AllReduce, w[r], 1, ncclInt8, ncclSum, -1);
  }
  nsp_tracegen_dropped(g[1], 77, NSP_DROP_RING_FULL);
  struct nsp_job *job = analyse_gens(g, 2);
  assert_int_equal(nsp_job_trace(job, 1)->dropped, 77);
  assert_int_equal(nsp_job_nnotes(job), 1);
  assert_contains(nsp_job_note(job, 0), "t1.ncclspy: the shim dropped 77 records");
  assert_int_equal(nsp_job_nfindings(job), 1);
  const struct nsp_finding *f = nsp_job_finding(job, 0);
  assert_int_equal(f->kind, NSP_FIND_ENV_MISSING_RANKS);
  assert_true(f->comm_id == 0xaaaa);
  assert_ranks(f->odd_ranks, f->nodd, "2-3");
  assert_int_equal(f->nsides, 1);
  assert_side(&f->sides[0], "0-1");
  assert_string_equal(f->message, "communicator has 4 ranks but 2 have a trace; no trace for ranks 2-3");
  nsp_job_destroy(job);
}

/* ---- formatting --------------------------------------------------------- */

static void test_format_ranks(void **state) {
  (void)state;
  char buf[64];
  static const int a[] = {0, 1, 2, 3, 5};
  assert_int_equal(nsp_format_ranks(buf, sizeof buf, a, 5), 5);
  assert_string_equal(buf, "0-3,5");
  static const int b[] = {0, 2};
  nsp_format_ranks(buf, sizeof buf, b, 2);
  assert_string_equal(buf, "0,2");
  static const int c[] = {7};
  nsp_format_ranks(buf, sizeof buf, c, 1);
  assert_string_equal(buf, "7");
  nsp_format_ranks(buf, sizeof buf, NULL, 0);
  assert_string_equal(buf, "");
  static const int d[] = {1, 1, 2, 4, 4, 6, 7, 8};
  nsp_format_ranks(buf, sizeof buf, d, 8);
  assert_string_equal(buf, "1-2,4,6-8");
  static const int e[] = {0, 1};
  nsp_format_ranks(buf, sizeof buf, e, 2);
  assert_string_equal(buf, "0-1");
  /* Too long for the buffer: cut with "...", full length returned. */
  int many[1000];
  for (int i = 0; i < 1000; i++) many[i] = 2 * i;
  char small[16];
  size_t full = nsp_format_ranks(small, sizeof small, many, 1000);
  assert_true(full > sizeof small);
  assert_string_equal(small, "0,2,4,6,8,10...");
  assert_int_equal(strlen(small), sizeof small - 1);
}

/* The one function every message names processes with (issue #13 item 6). */
static void test_format_ranks_job(void **state) {
  (void)state;
  char buf[128];
  static const int r01[] = {0, 1}, j13[] = {1, 3}, j01[] = {0, 1}, j2u[] = {2, -1}, r1[] = {1}, j3[] = {3};
  assert_int_equal(nsp_format_ranks_job(buf, sizeof buf, r1, j3, 1), strlen("rank 1 (job rank 3)"));
  assert_string_equal(buf, "rank 1 (job rank 3)");
  nsp_format_ranks_job(buf, sizeof buf, r01, j13, 2);
  assert_string_equal(buf, "ranks 0-1 (job ranks 1,3)");
  /* Equal, unknown or not given: no job ranks. */
  nsp_format_ranks_job(buf, sizeof buf, r01, j01, 2);
  assert_string_equal(buf, "ranks 0-1");
  nsp_format_ranks_job(buf, sizeof buf, r1, NULL, 1);
  assert_string_equal(buf, "rank 1");
  static const int ju[] = {-1};
  nsp_format_ranks_job(buf, sizeof buf, r1, ju, 1);
  assert_string_equal(buf, "rank 1");
  /* One known and different: the unknown one reads "?". */
  nsp_format_ranks_job(buf, sizeof buf, r01, j2u, 2);
  assert_string_equal(buf, "ranks 0-1 (job ranks 2,?)");
  /* Consecutive job ranks as a range, in the order of the ranks. */
  static const int r4[] = {0, 1, 2, 3}, j4[] = {4, 5, 6, 0};
  nsp_format_ranks_job(buf, sizeof buf, r4, j4, 4);
  assert_string_equal(buf, "ranks 0-3 (job ranks 4-6,0)");
  /* A long list is cut after 16 ranges. */
  int many[40], jm[40];
  for (int i = 0; i < 40; i++) many[i] = i, jm[i] = 2 * i + 1;
  nsp_format_ranks_job(buf, sizeof buf, many, jm, 40);
  assert_string_equal(buf, "ranks 0-39 (job ranks 1,3,5,7,9,11,13,15,17,19,21,23,25,27,29,31,...)");
  nsp_format_ranks_job(buf, sizeof buf, NULL, NULL, 0);
  assert_string_equal(buf, "");
}

static void test_format_call_and_names(void **state) {
  (void)state;
  char buf[128];
  struct nsp_call c;
  memset(&c, 0, sizeof c);
  c.api = NSP_API_Reduce;
  c.count = 3;
  c.dtype = ncclFloat64;
  c.redop = 7;
  c.peer = 2;
  nsp_format_call(buf, sizeof buf, &c);
  assert_string_equal(buf, "reduce 3 x float64 premulsum#7 root 2 (24 bytes)");
  c.api = NSP_API_Send;
  c.dtype = 99;
  nsp_format_call(buf, sizeof buf, &c);
  assert_string_equal(buf, "send 3 x dtype#99 to 2 (? bytes)");
  c.api = NSP_API_Bcast;
  c.dtype = ncclFloat8e4m3;
  nsp_format_call(buf, sizeof buf, &c);
  assert_string_equal(buf, "broadcast 3 x float8e4m3 root 2 (3 bytes)");
  c.api = -1;
  nsp_format_call(buf, sizeof buf, &c);
  assert_string_equal(buf, "no call");
  for (int k = 0; k < NSP_FIND_KIND_COUNT; k++) {
    assert_int_equal(nsp_finding_kind_from_name(nsp_finding_kind_name(k)), k);
    assert_true(strlen(nsp_finding_kind_hint(k)) > 20);
  }
  assert_string_equal(nsp_finding_kind_name(NSP_FIND_P2P_UNMATCHED), "p2p-unmatched");
  assert_string_equal(nsp_finding_kind_name(-1), "unknown");
  assert_int_equal(nsp_finding_kind_from_name("nope"), -1);
  assert_string_equal(nsp_an_strerror(NSP_AN_ENOMEM), "out of memory");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_c01_amp_dtype),
      cmocka_unit_test(test_c02_even_odd),
      cmocka_unit_test(test_c03_main_only),
      cmocka_unit_test(test_c04_different_op),
      cmocka_unit_test(test_c05_count),
      cmocka_unit_test(test_c06_root),
      cmocka_unit_test(test_c07_first_error),
      cmocka_unit_test(test_c08_p2p_count),
      cmocka_unit_test(test_c09_split),
      cmocka_unit_test(test_c14_rank_spaces),
      cmocka_unit_test(test_c14_consequences_linked),
      cmocka_unit_test(test_c10_healthy),
      cmocka_unit_test(test_c11_straggler),
      cmocka_unit_test(test_p2p_size),
      cmocka_unit_test(test_p2p_unmatched_recv),
      cmocka_unit_test(test_order),
      cmocka_unit_test(test_later_and_wavefront),
      cmocka_unit_test(test_nonblocking_init),
      cmocka_unit_test(test_unknown_result_and_clock),
      cmocka_unit_test(test_error_after_mismatch),
      cmocka_unit_test(test_refused_call_not_in_sequence),
      cmocka_unit_test(test_refused_init_rank_not_traced),
      cmocka_unit_test(test_group_end_error),
      cmocka_unit_test(test_truncated_file),
      cmocka_unit_test(test_damaged_traces_analyse),
      cmocka_unit_test(test_bad_inputs),
      cmocka_unit_test(test_notes),
      cmocka_unit_test(test_drop_size_cap_not_stopped),
      cmocka_unit_test(test_drop_middle_still_judged),
      cmocka_unit_test(test_drop_share_in_summary),
      cmocka_unit_test(test_drop_p2p_not_judged),
      cmocka_unit_test(test_drop_p2p_before_last_still_judged),
      cmocka_unit_test(test_drop_p2p_all_to_all_one_note_per_rank),
      cmocka_unit_test(test_quoting_and_plurals),
      cmocka_unit_test(test_cut_trace_in_finding),
      cmocka_unit_test(test_cov_damaged_frame),
      cmocka_unit_test(test_cov_went_on),
      cmocka_unit_test(test_cov_cut_young),
      cmocka_unit_test(test_cov_lost_comm_records),
      cmocka_unit_test(test_format_ranks), cmocka_unit_test(test_format_ranks_job),
      cmocka_unit_test(test_format_call_and_names),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
