/* test_an_scale.c - the analyzer on a big job (suite 'slow'): many ranks,
 * many calls, collectives on the world and on split halves, a send/recv
 * ring, and one dtype mismatch near the end.  Asserts the finding, and
 * that time and memory stay within bounds that only a quadratic loop or a
 * per-call copy would break.
 *
 * NSP_SCALE_RANKS (default 512) and NSP_SCALE_STEPS (default 2000, five
 * calls per step and rank) size the job. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "nsp_analyze.h"
#include "nsp_names.h"
#include "nsp_tracegen.h"

static int env_int(const char *name, int dflt) {
  const char *v = getenv(name);
  return v && atoi(v) > 0 ? atoi(v) : dflt;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long maxrss_mib(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss / 1024;
}

static void test_scale(void **state) {
  (void)state;
  int nranks = env_int("NSP_SCALE_RANKS", 512), steps = env_int("NSP_SCALE_STEPS", 2000);
  struct nsp_job *job = nsp_job_create();
  assert_non_null(job);
  double t0 = now_s();
  size_t bytes = 0;
  long rss_before = maxrss_mib();
  for (int r = 0; r < nranks; r++) {
    char host[32];
    snprintf(host, sizeof host, "node-%04d", r / 8);
    struct nsp_tracegen *g = nsp_tracegen_create(host, 10000u + (uint32_t)r, r);
    assert_non_null(g);
    nsp_tracegen_set_frame_records(g, 4096);
    uint32_t w = nsp_tracegen_comm(g, 0x1000, r, nranks);
    uint32_t half = nsp_tracegen_split(g, w, 0x2000 + (uint64_t)(r % 2), r % 2, r, r / 2, nranks / 2);
    assert_true(w && half);
    for (int s = 0; s < steps; s++) {
      int last = s == steps - 1;
      nsp_tracegen_coll(g, NSP_API_AllReduce, w, 1u << 20, last && r == nranks / 3 ? ncclFloat16 : ncclBfloat16,
                        ncclSum, -1);
      nsp_tracegen_coll(g, NSP_API_AllGather, half, 4096, ncclFloat32, -1, -1);
      nsp_tracegen_group(g, 1);
      nsp_tracegen_p2p(g, NSP_API_Send, w, 256, ncclFloat16, (r + 1) % nranks);
      nsp_tracegen_p2p(g, NSP_API_Recv, w, 256, ncclFloat16, (r + nranks - 1) % nranks);
      nsp_tracegen_group(g, 0);
    }
    const uint8_t *data;
    size_t len;
    assert_int_equal(nsp_tracegen_bytes(g, &data, &len), 0);
    char name[32];
    snprintf(name, sizeof name, "r%d.ncclspy", r);
    assert_int_equal(nsp_job_add_mem(job, name, data, len), 1);
    bytes += len;
    nsp_tracegen_destroy(g);
  }
  double t1 = now_s();
  assert_int_equal(nsp_job_analyze(job), 0);
  double t2 = now_s();
  long rss = maxrss_mib();
  uint64_t calls = (uint64_t)nranks * (uint64_t)steps * 6;
  print_message("%d ranks x %d steps: %llu calls, %zu MiB of traces; generate+load %.2f s, analyze %.2f s, "
                "max RSS %ld MiB (%ld before)\n",
                nranks, steps, (unsigned long long)calls, bytes >> 20, t1 - t0, t2 - t1, rss, rss_before);

  assert_int_equal(nsp_job_nfindings(job), 1);
  const struct nsp_finding *f = nsp_job_finding(job, 0);
  assert_int_equal(f->kind, NSP_FIND_DTYPE_MISMATCH);
  assert_true(f->comm_id == 0x1000);
  assert_int_equal(f->seq, steps);
  assert_int_equal(f->nsides, 2);
  assert_int_equal(f->sides[0].nranks, (size_t)nranks - 1);
  assert_int_equal(f->sides[1].nranks, 1);
  assert_int_equal(f->sides[1].ranks[0], nranks / 3);
  assert_int_equal(f->nodd, 1);
  assert_int_equal(nsp_job_ncomms(job), 3);
  assert_int_equal(nsp_job_comm_by_id(job, 0x1000)->np2p, (uint64_t)nranks * (uint64_t)steps * 2);
  /* Memory: the compressed traces (kept for the second pass) plus state
   * per rank and per seq, nowhere near a copy of every call. */
#ifndef __SANITIZE_ADDRESS__ /* ASan's quarantine and shadow memory say nothing about ours */
  assert_true(rss - rss_before < 64 + 3 * (long)(bytes >> 20) + nranks / 4);
#endif
  nsp_job_destroy(job);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_scale)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
