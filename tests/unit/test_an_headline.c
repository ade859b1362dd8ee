/* test_an_headline.c - the report's first line names the ranks to look at
 * and what they did (docs/REPORT.md, "The headline"): for each kind the
 * synthetic cases make, the odd ranks (or, without odd ranks, each side)
 * appear in it; and the shapes whose odd ranks form no side (a rank with
 * no trace) say what those did. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "nsp_an_test.h"
#include "nsp_report.h"
#include "tests/nsp_report_capture.h"

#define WORLD 0xaaaaull
#define AR(g, c) nsp_tracegen_coll(g, NSP_API_AllReduce, c, 8, ncclFloat32, ncclSum, -1)

/* The ranks as the headline writes them: "rank 2", "ranks 0-1,3". */
static void assert_names(const char *headline, const int *ranks, size_t n) {
  char rb[256], want[300];
  nsp_format_ranks(rb, sizeof rb, ranks, n);
  snprintf(want, sizeof want, "%s %s", n == 1 ? "rank" : "ranks", rb);
  if (!strstr(headline, want)) fail_msg("headline \"%s\" does not name \"%s\"", headline, want);
}

/* Every case's first finding: its headline names its odd ranks, or each
 * side when it has none. */
static void test_cases_name_odd_ranks(void **state) {
  (void)state;
  static const struct {
    const char *name;
    int nranks;
  } cases[] = {{"c01", 2}, {"c02", 4}, {"c03", 4}, {"c04", 4}, {"c05", 4}, {"c06", 4}, {"c07", 4},
               {"c08", 2}, {"c09", 4}, {"c11", 4}, {"c12", 4}, {"c13", 4}, {"c14", 4}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    struct nsp_job *job = nsp_job_create();
    assert_non_null(job);
    int n = nsp_case_add(cases[i].name, job);
    assert_true(n > 0);
    assert_int_equal(nsp_job_analyze(job), 0);
    assert_true(nsp_job_nfindings(job) > 0);
    const struct nsp_finding *f = nsp_job_finding(job, 0);
    const char *h = nsp_job_headline(job);
    print_message("%s: %s\n", cases[i].name, h);
    /* Kinds are tallied, not counted as nouns ("3 hang"). */
    if (!strcmp(cases[i].name, "c13")) assert_contains(nsp_job_summary(job), "3 findings (hang: 3) in 4 traces");
    if (f->nodd) assert_names(h, f->odd_ranks, f->nodd);
    else
      for (size_t s = 0; s < f->nsides && s < 3; s++)
        if (f->kind != NSP_FIND_ERROR) assert_names(h, f->sides[s].ranks, f->sides[s].nranks);
    nsp_job_destroy(job);
  }
}

/* Rank 2 never calls ncclCommInitRank and made no NCCL call (no trace):
 * the headline names it beside the waiting ranks. */
static void test_init_wait_untraced(void **state) {
  (void)state;
  struct nsp_tracegen *g[3];
  const int rk[3] = {0, 1, 3};
  for (int i = 0; i < 3; i++) {
    g[i] = nsp_tracegen_create("vm", 100u + (uint32_t)rk[i], rk[i]);
    assert_non_null(g[i]);
    assert_int_equal(nsp_tracegen_env(g[i], "WORLD_SIZE", "4"), 0);
    nsp_tracegen_set_exit(g[i], 0);
    /* killed 5 s after it began waiting */
    assert_int_equal(nsp_tracegen_ringstate(g[i], nsp_tracegen_now(g[i]) + 5000000000ull, 0, 0, 1, 0), 0);
    assert_int_equal(nsp_tracegen_inflight_init(g[i], NSP_API_CommInitRank, 0xbeef, rk[i], 4, 0), 0);
  }
  struct nsp_job *job = job_of_gens_at(g, 3, 0, "");
  assert_int_equal(nsp_job_analyze(job), 0);
  const struct nsp_finding *f = nsp_job_finding(job, 0);
  assert_int_equal(f->kind, NSP_FIND_COMM_INIT_WAIT);
  assert_contains(nsp_job_headline(job), "did not complete: rank 2 never called it (no trace); ");
  assert_contains(nsp_job_headline(job), "ranks 0-1,3 wait inside it");
  /* WORLD_SIZE=4 with 3 traces, and no communicator was ever made. */
  const struct nsp_finding *ws = NULL;
  for (size_t i = 0; i < nsp_job_nfindings(job); i++)
    if (nsp_job_finding(job, i)->kind == NSP_FIND_ENV_WORLD_SIZE) ws = nsp_job_finding(job, i);
  assert_non_null(ws);
  assert_contains(ws->message, "but 3 processes traced, no communicator was made");
  /* Counts read as numbers of things: one collective call. */
  nsp_job_destroy(job);
}

/* A communicator of 2 ranks, only rank 0 traced: the headline names rank
 * 1, not the fine rank 0. */
static void test_missing_rank(void **state) {
  (void)state;
  struct nsp_tracegen *g[1];
  uint32_t w;
  g[0] = rank_on(0, 2, WORLD, 0, &w);
  for (int i = 0; i < 3; i++) AR(g[0], w);
  nsp_tracegen_comm_end(g[0], w, NSP_API_CommDestroy);
  struct nsp_job *job = analyse_gens(g, 1);
  const struct nsp_finding *f = nsp_job_finding(job, 0);
  assert_int_equal(f->kind, NSP_FIND_ENV_MISSING_RANKS);
  assert_contains(nsp_job_headline(job), "communicator 000000000000aaaa: rank 1 has no trace (1 of 2 traced)");
  assert_null(strstr(nsp_job_headline(job), "rank 0"));
  nsp_job_destroy(job);
}

/* Ranks 0 and 1 on one GPU: the headline says they share it. */
static void test_dup_gpu(void **state) {
  (void)state;
  struct nsp_tracegen *g[2];
  uint32_t w[2];
  for (int r = 0; r < 2; r++) {
    g[r] = nsp_tracegen_create("vm", 100u + (uint32_t)r, r);
    assert_non_null(g[r]);
    assert_int_equal(nsp_tracegen_set_gpu(g[r], "GPU-1111", "0000:1b:00.0", "H200"), 0);
    w[r] = nsp_tracegen_comm(g[r], WORLD, r, 2);
    assert_true(w[r] > 0);
  }
  struct nsp_job *job = analyse_gens(g, 2);
  assert_int_equal(nsp_job_finding(job, 0)->kind, NSP_FIND_ENV_DUP_GPU);
  assert_contains(nsp_job_headline(job), "communicator 000000000000aaaa: ranks 0-1 share one GPU, GPU-1111");
  nsp_job_destroy(job);
}

/* One env-* kind at a time on 4 ranks (rank 3 the odd one, or ranks 0
 * and 1 claiming one rank): the headline names the odd rank and says what
 * it has, with a verb. */
static void test_env_kinds(void **state) {
  (void)state;
  static const struct {
    int kind;
    const char *want;
  } cases[] = {
      {NSP_FIND_ENV_NCCL_VERSION, "rank 3 has NCCL version 2.27.3 where ranks 0-2 have NCCL version 2.28.9"},
      {NSP_FIND_ENV_NCCL_PATH, "rank 3 has NCCL library /opt/nccl/lib/libnccl.so.2 where ranks 0-2 have NCCL library /usr/lib/libnccl.so.2"},
      {NSP_FIND_ENV_DRIVER, "rank 3 has CUDA driver 12.2 where ranks 0-2 have CUDA driver 12.4"},
      {NSP_FIND_ENV_SETTING, "rank 3 has NCCL_ALGO=Tree where ranks 0-2 have NCCL_ALGO=Ring"},
      {NSP_FIND_ENV_WORLD_SIZE, "rank 3 has WORLD_SIZE=8"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    struct nsp_tracegen *g[4];
    uint32_t w[4];
    for (int r = 0; r < 4; r++) {
      g[r] = nsp_tracegen_create("vm", 100u + (uint32_t)r, r);
      assert_non_null(g[r]);
      int odd = r == 3;
      int k = cases[i].kind;
      nsp_tracegen_set_nccl_version(g[r], k == NSP_FIND_ENV_NCCL_VERSION && odd ? 22703 : 22809);
      assert_int_equal(nsp_tracegen_set_nccl_path(g[r], k == NSP_FIND_ENV_NCCL_PATH && odd ? "/opt/nccl/lib/libnccl.so.2"
                                                                                        : "/usr/lib/libnccl.so.2"),
                       0);
      nsp_tracegen_set_versions(g[r], k == NSP_FIND_ENV_DRIVER && odd ? 12020 : 12040, 12040);
      if (k == NSP_FIND_ENV_SETTING) assert_int_equal(nsp_tracegen_env(g[r], "NCCL_ALGO", odd ? "Tree" : "Ring"), 0);
      assert_int_equal(nsp_tracegen_env(g[r], "WORLD_SIZE", k == NSP_FIND_ENV_WORLD_SIZE && odd ? "8" : "4"), 0);
      w[r] = nsp_tracegen_comm(g[r], WORLD, r, 4);
      assert_true(w[r] > 0);
      AR(g[r], w[r]);
    }
    struct nsp_job *job = analyse_gens(g, 4);
    assert_true(nsp_job_nfindings(job) > 0);
    print_message("%s\n", nsp_job_headline(job));
    assert_int_equal(nsp_job_finding(job, 0)->kind, cases[i].kind);
    assert_contains(nsp_job_headline(job), cases[i].want);
    nsp_job_destroy(job);
  }
}

/* Processes 1 and 3 both claim rank 1 of a 3-rank world. */
static void test_dup_rank(void **state) {
  (void)state;
  struct nsp_tracegen *g[4];
  uint32_t w[4];
  for (int r = 0; r < 4; r++) {
    g[r] = nsp_tracegen_create("vm", 100u + (uint32_t)r, r);
    assert_non_null(g[r]);
    w[r] = nsp_tracegen_comm(g[r], WORLD, r == 3 ? 1 : r, 3);
    assert_true(w[r] > 0);
  }
  struct nsp_job *job = analyse_gens(g, 4);
  assert_true(nsp_job_nfindings(job) > 0);
  assert_int_equal(nsp_job_finding(job, 0)->kind, NSP_FIND_ENV_DUP_RANK);
  assert_contains(nsp_job_headline(job), "communicator 000000000000aaaa: rank 1 is claimed by 2 processes (env");
  nsp_job_destroy(job);
}

/* Counts read as numbers of things: "1 collective call", not "calls". */
static void test_count_words(void **state) {
  (void)state;
  struct nsp_tracegen *g[1];
  uint32_t w;
  g[0] = rank_on(0, 1, WORLD, 0, &w);
  AR(g[0], w);
  nsp_tracegen_p2p(g[0], NSP_API_Send, w, 4, ncclInt32, 0);
  nsp_tracegen_p2p(g[0], NSP_API_Recv, w, 4, ncclInt32, 0);
  struct nsp_job *job = analyse_gens(g, 1);
  assert_contains(nsp_job_summary(job), "(1 communicator, 1 collective call, 2 send/recv calls)");
  nsp_job_destroy(job);
}

/* A recv that timed out: the error's hint names the call as a send/recv,
 * not "a collective". */
static void test_timeout_hint_p2p(void **state) {
  (void)state;
  struct nsp_tracegen *g[2];
  uint32_t w[2];
  for (int r = 0; r < 2; r++) g[r] = rank_on(r, 2, WORLD, 0, &w[r]);
  nsp_tracegen_p2p(g[0], NSP_API_Send, w[0], 4, ncclInt32, 1);
  nsp_tracegen_fail_next(g[1], ncclSystemError, "timed out waiting for rank 0");
  nsp_tracegen_p2p(g[1], NSP_API_Recv, w[1], 4, ncclInt32, 0);
  struct nsp_job *job = analyse_gens(g, 2);
  const struct nsp_finding *e = NULL;
  for (size_t i = 0; i < nsp_job_nfindings(job); i++)
    if (nsp_job_finding(job, i)->kind == NSP_FIND_ERROR) e = nsp_job_finding(job, i);
  assert_non_null(e);
  assert_contains(e->hint, "a send/recv waited too long");
  nsp_job_destroy(job);
}

/* The text report of a job, as a string (freed by the caller). */
static char *text_of(const struct nsp_job *job) { return nsp_report_capture(nsp_report_text, job); }

/* Rank 2 passes float16 where ranks 0-1 pass float32: the call-site lines
 * under the headline list the sides in its order, the odd rank first. */
static void test_sites_in_headline_order(void **state) {
  (void)state;
  struct nsp_tracegen *g[3];
  uint32_t w[3];
  for (int r = 0; r < 3; r++) {
    g[r] = rank_on(r, 3, WORLD, 0, &w[r]);
    const char *mods[] = {"/app/train"};
    const uint64_t offs[] = {0x1000};
    const char *syms[] = {r == 2 ? "odd_step" : "even_step"};
    uint32_t site = nsp_tracegen_callsite(g[r], 0, 1, mods, offs, syms);
    assert_true(site > 0);
    nsp_tracegen_set_site(g[r], site);
    nsp_tracegen_coll(g[r], NSP_API_AllReduce, w[r], 8, r == 2 ? ncclFloat16 : ncclFloat32, ncclSum, -1);
  }
  struct nsp_job *job = analyse_gens(g, 3);
  const char *h = nsp_job_headline(job);
  assert_contains(h, "rank 2 passed float16 where ranks 0-1 passed float32");
  char *text = text_of(job);
  const char *odd = strstr(text, "\n  rank 2: "), *even = strstr(text, "\n  ranks 0-1: ");
  if (!odd || !even || odd > even) fail_msg("call sites not in the headline's order:\n%.400s", text);
  free(text);
  nsp_job_destroy(job);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cases_name_odd_ranks),
      cmocka_unit_test(test_init_wait_untraced),
      cmocka_unit_test(test_missing_rank),
      cmocka_unit_test(test_dup_gpu),
      cmocka_unit_test(test_env_kinds),
      cmocka_unit_test(test_dup_rank),
      cmocka_unit_test(test_count_words),
      cmocka_unit_test(test_timeout_hint_p2p),
      cmocka_unit_test(test_sites_in_headline_order),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
