/* test_an_threads.c - the report does not depend on how many threads read
 * the traces (nsp_job_set_threads; issue #16 item 2): every synthetic
 * case, and generated jobs with mismatches at random places, a hang, a
 * cut trace, a copy of a trace and a file that is no trace, give the same
 * text, JSON and perf reports with 1, 2, 4 and 7 threads.
 *
 * NSP_TEST_SEED picks the generated jobs' seed (default: three fixed
 * ones); the seed is printed, so a failure can be replayed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nsp_an_cases.h"
#include "nsp_names.h"
#include "nsp_report.h"
#include "tests/nsp_report_capture.h"
#include "nsp_tracegen.h"


/* The text, JSON and perf JSON reports of dir read with `threads`
 * threads, one string (caller frees). */
static char *reports(const char *dir, int threads) {
  struct nsp_job *job = nsp_case_job(threads);
  assert_non_null(job);
  assert_true(nsp_job_add_path(job, dir) > 0);
  assert_int_equal(nsp_job_analyze(job), 0);
  assert_int_equal(nsp_job_perf(job), 0);
  char *buf = nsp_report_capture_all(job, 1);
  nsp_job_destroy(job);
  return buf;
}

/* Reads dir with 1, 2, 4 and 7 threads: the same reports every time.
 * Returns the 1-thread one (caller frees). */
static char *same_reports(const char *dir) {
  char *one = reports(dir, 1);
  static const int threads[] = {2, 4, 7};
  for (size_t i = 0; i < sizeof threads / sizeof *threads; i++) {
    char *other = reports(dir, threads[i]);
    if (strcmp(one, other)) print_message("%s: %d threads differ from 1\n", dir, threads[i]);
    assert_string_equal(one, other);
    free(other);
  }
  return one;
}

static void test_every_case(void **state) {
  (void)state;
  size_t n = 0;
  for (const char *name; (name = nsp_case_name(n)); n++) {
    char dir[256];
    assert_int_equal(nsp_case_mkdtemp(dir, sizeof dir), 0);
    assert_true(nsp_case_write(name, dir) > 0);
    free(same_reports(dir));
    nsp_case_rmdir(dir);
  }
  assert_true(n >= 16);
}

static uint64_t rng_next(uint64_t *s) { return nsp_case_rng(s); }

static void write_file(const char *dir, const char *name, const void *data, size_t len) {
  assert_int_equal(nsp_case_write_file(dir, name, data, len), 0);
}

/* 40 ranks (a world communicator, 8-rank splits, a send/recv ring), 300
 * steps; at random places: a dtype mismatch on the world, a count
 * mismatch on a split, a rank that stops early.  One more trace cut in
 * its middle, a copy of one, and a file that is no trace. */
static void generated_job(const char *dir, uint64_t seed) {
  enum { RANKS = 40, STEPS = 300 };
  uint64_t s = seed;
  int bad_rank = (int)(rng_next(&s) % RANKS), bad_step = (int)(rng_next(&s) % STEPS);
  int cnt_rank = (int)(rng_next(&s) % RANKS), cnt_step = (int)(rng_next(&s) % STEPS);
  int stop_rank = (int)(rng_next(&s) % RANKS), stop_step = STEPS / 2 + (int)(rng_next(&s) % (STEPS / 2));
  int cut_rank = (int)(rng_next(&s) % RANKS), copy_rank = (int)(rng_next(&s) % RANKS);
  print_message("seed %llu: dtype rank %d step %d, count rank %d step %d, stop rank %d step %d, cut %d, copy %d\n",
                (unsigned long long)seed, bad_rank, bad_step, cnt_rank, cnt_step, stop_rank, stop_step, cut_rank,
                copy_rank);
  for (int r = 0; r < RANKS; r++) {
    char host[32];
    snprintf(host, sizeof host, "node-%02d", r / 8);
    struct nsp_tracegen *g = nsp_tracegen_create(host, 5000u + (uint32_t)r, r);
    assert_non_null(g);
    nsp_tracegen_set_frame_records(g, 64 + (unsigned)(rng_next(&s) % 512)); /* files of many frames */
    nsp_tracegen_set_auto_complete(g, 1, 20000);
    uint32_t w = nsp_tracegen_comm(g, 0x1000, r, RANKS);
    uint32_t tp = nsp_tracegen_split(g, w, 0x2000 + (uint64_t)(r / 8), r / 8, r % 8, r % 8, 8);
    assert_true(w && tp);
    for (int st = 0; st < STEPS && !(r == stop_rank && st == stop_step); st++) {
      nsp_tracegen_coll(g, NSP_API_AllReduce, w, 1u << 20,
                        r == bad_rank && st == bad_step ? ncclFloat16 : ncclBfloat16, ncclSum, -1);
      nsp_tracegen_coll(g, NSP_API_AllGather, tp, r == cnt_rank && st == cnt_step ? 4095 : 4096, ncclFloat32, -1,
                        -1);
      nsp_tracegen_group(g, 1);
      nsp_tracegen_p2p(g, NSP_API_Send, w, 256, ncclFloat16, (r + 1) % RANKS);
      nsp_tracegen_p2p(g, NSP_API_Recv, w, 256, ncclFloat16, (r + RANKS - 1) % RANKS);
      nsp_tracegen_group(g, 0);
    }
    const uint8_t *data;
    size_t len;
    assert_int_equal(nsp_tracegen_bytes(g, &data, &len), 0);
    char name[96];
    snprintf(name, sizeof name, "%s.%d.rank%d.ncclspy", host, 5000 + r, r);
    write_file(dir, name, data, r == cut_rank ? len / 2 : len);
    if (r == copy_rank) {
      snprintf(name, sizeof name, "copy-of-rank%d.ncclspy", r);
      write_file(dir, name, data, len);
    }
    nsp_tracegen_destroy(g);
  }
  write_file(dir, "zz-not-a-trace.ncclspy", "hello, world\n", 13);
}

static void test_generated_jobs(void **state) {
  (void)state;
  const char *env = getenv("NSP_TEST_SEED");
  uint64_t seeds[] = {1, 20261202, 0xdecafbad};
  size_t nseeds = sizeof seeds / sizeof *seeds;
  if (env && *env) {
    seeds[0] = strtoull(env, NULL, 0);
    nseeds = 1;
  }
  for (size_t i = 0; i < nseeds; i++) {
    char dir[256];
    assert_int_equal(nsp_case_mkdtemp(dir, sizeof dir), 0);
    generated_job(dir, seeds[i]);
    char *rep = same_reports(dir);
    /* The job's faults are found at all (the same with every thread count). */
    assert_non_null(strstr(rep, "mismatch"));
    assert_non_null(strstr(rep, "zz-not-a-trace.ncclspy: not read"));
    assert_non_null(strstr(rep, "a copy of"));
    free(rep);
    nsp_case_rmdir(dir);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_case),
      cmocka_unit_test(test_generated_jobs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
