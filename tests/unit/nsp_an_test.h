/* nsp_an_test.h - helpers shared by the analyzer's unit tests (cmocka).
 *
 * Include after <cmocka.h>.  Each helper fails the running test (through
 * cmocka's assertions) instead of returning an error. */
#ifndef NSP_AN_TEST_H
#define NSP_AN_TEST_H

#include <stdio.h>
#include <string.h>

#include "nsp_an_cases.h"
#include "nsp_analyze.h"
#include "nsp_names.h"
#include "nsp_tracegen.h"

/* A new job holding case `name` of nsp_an_cases.c (nranks traces), analysed. */
static inline struct nsp_job *analyse_case(const char *name, int nranks) {
  struct nsp_job *job = nsp_job_create();
  assert_non_null(job);
  assert_int_equal(nsp_case_add(name, job), nranks);
  assert_int_equal(nsp_job_analyze(job), 0);
  return job;
}

/* Rank r of nranks on communicator comm_id (host "h<r>", pid 100 + r),
 * its comm index into *w; tracked: completion tracking and timing, every
 * returned call completing (1 us on the GPU). */
static inline struct nsp_tracegen *rank_on(int r, int nranks, uint64_t comm_id, int tracked, uint32_t *w) {
  char host[16];
  snprintf(host, sizeof host, "h%d", r);
  struct nsp_tracegen *g = nsp_tracegen_create(host, 100u + (uint32_t)r, r);
  assert_non_null(g);
  if (tracked) {
    nsp_tracegen_set_tracking(g, NSP_TRACK_COMPLETION | NSP_TRACK_TIMING);
    nsp_tracegen_set_auto_complete(g, 1, 1000);
  }
  *w = nsp_tracegen_comm(g, comm_id, r, nranks);
  assert_true(*w > 0);
  return g;
}

/* Adds the traces of n generators to job as "t<R>.ncclspy" (destroying
 * the generators); returns their bytes in all. */
static inline size_t add_gens(struct nsp_job *job, struct nsp_tracegen **g, int n) {
  size_t bytes = 0;
  for (int r = 0; r < n; r++) {
    const uint8_t *data;
    size_t len;
    char name[32];
    snprintf(name, sizeof name, "t%d.ncclspy", r);
    assert_int_equal(nsp_tracegen_bytes(g[r], &data, &len), 0);
    assert_int_equal(nsp_job_add_mem(job, name, data, len), 1);
    bytes += len;
    nsp_tracegen_destroy(g[r]);
  }
  return bytes;
}

/* A new job holding the traces of n generators (named t0.ncclspy ...),
 * not analysed yet; the generators are destroyed.  now_ns: the analysis's
 * "now" (0: the clock); local_host: the host /proc answers for (NULL:
 * this one's name, "": none). */
static inline struct nsp_job *job_of_gens_at(struct nsp_tracegen **g, int n, int64_t now_ns, const char *local_host) {
  struct nsp_job *job = nsp_job_create();
  assert_non_null(job);
  if (now_ns) assert_int_equal(nsp_job_set_now(job, now_ns), 0);
  if (local_host) assert_int_equal(nsp_job_set_local_host(job, local_host), 0);
  add_gens(job, g, n);
  return job;
}

static inline struct nsp_job *job_of_gens(struct nsp_tracegen **g, int n) { return job_of_gens_at(g, n, 0, NULL); }

/* The same, analysed. */
static inline struct nsp_job *analyse_gens(struct nsp_tracegen **g, int n) {
  struct nsp_job *job = job_of_gens(g, n);
  assert_int_equal(nsp_job_analyze(job), 0);
  return job;
}

/* Asserts a rank list reads `want` as the report prints it ("0,2-3"). */
static inline void assert_ranks(const int *ranks, size_t n, const char *want) {
  char buf[256];
  nsp_format_ranks(buf, sizeof buf, ranks, n);
  assert_string_equal(buf, want);
}
#define assert_side(s, want) assert_ranks((s)->ranks, (s)->nranks, want)

/* Asserts hay (may be NULL) contains needle, printing both when not. */
static inline void assert_contains(const char *hay, const char *needle) {
  if (!hay || !strstr(hay, needle)) fail_msg("\"%s\"\n  does not contain \"%s\"", hay ? hay : "(null)", needle);
}

/* How many findings of a kind the job has. */
static inline size_t count_kind(const struct nsp_job *job, int kind) {
  size_t n = 0;
  for (size_t i = 0; i < nsp_job_nfindings(job); i++) n += nsp_job_finding(job, i)->kind == kind;
  return n;
}

#endif /* NSP_AN_TEST_H */
