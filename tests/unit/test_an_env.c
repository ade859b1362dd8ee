/* test_an_env.c - the environment section (versions, NCCL_* settings,
 * GPUs, ranks, world sizes that differ or do not add up) and the hint
 * table for errors: every row matched by a test, and the settings a hint
 * shows per rank. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nsp_an_cases.h"
#include "nsp_index.h"
#include "nsp_analyze.h"
#include "nsp_names.h"
#include "nsp_tracegen.h"
#include "nsp_an_test.h"

/* The only finding of a kind (fails when there is not exactly one). */
static const struct nsp_finding *only(const struct nsp_job *job, int kind) {
  const struct nsp_finding *f = NULL;
  size_t n = 0;
  for (size_t i = 0; i < nsp_job_nfindings(job); i++)
    if (nsp_job_finding(job, i)->kind == kind) {
      f = nsp_job_finding(job, i);
      n++;
    }
  if (n != 1) fail_msg("%zu findings of kind %s", n, nsp_finding_kind_name(kind));
  return f;
}

/* Rank r on host node-{a,b} (two per host), not yet written. */
static struct nsp_tracegen *gen(int r) {
  char host[16];
  snprintf(host, sizeof host, "node-%c", 'a' + r / 2);
  struct nsp_tracegen *g = nsp_tracegen_create(host, 1000u + (uint32_t)r, r);
  assert_non_null(g);
  return g;
}

static void world(struct nsp_tracegen *g, int r, int n) {
  uint32_t w = nsp_tracegen_comm(g, 0xaaaa, r, n);
  assert_true(w > 0);
  nsp_tracegen_coll(g, NSP_API_AllReduce, w, 8, ncclFloat32, ncclSum, -1);
}

/* ---- versions and settings ---------------------------------------------- */

static void test_versions(void **state) {
  (void)state;
  struct nsp_tracegen *g[4];
  for (int r = 0; r < 4; r++) {
    g[r] = gen(r);
    nsp_tracegen_set_nccl_version(g[r], r < 2 ? 22809 : 22703);
    assert_int_equal(nsp_tracegen_set_nccl_path(g[r], r < 2 ? "/usr/lib/libnccl.so.2" : "/opt/nccl/lib/libnccl.so.2"),
                     0);
    nsp_tracegen_set_versions(g[r], r == 3 ? 12020 : 12040, 12040); /* one odd driver, same runtime */
    world(g[r], r, 4);
  }
  struct nsp_job *job = analyse_gens(g, 4);
  assert_int_equal(nsp_job_nfindings(job), 3);
  const struct nsp_finding *v = only(job, NSP_FIND_ENV_NCCL_VERSION);
  assert_string_equal(nsp_finding_kind_name(v->kind), "env-nccl-version");
  assert_true(nsp_finding_kind_is_env(v->kind));
  assert_true(v->comm_id == 0);
  assert_int_equal(v->nsides, 2);
  assert_side(&v->sides[0], "0-1");
  assert_string_equal(v->sides[0].value, "2.28.9");
  assert_string_equal(v->sides[0].procs[1].host, "node-a");
  assert_side(&v->sides[1], "2-3");
  assert_string_equal(v->sides[1].value, "2.27.3");
  assert_int_equal(v->nodd, 0); /* two against two */
  assert_string_equal(v->message, "NCCL version differs across ranks: ranks 0-1 (node-a): 2.28.9; ranks 2-3 "
                                  "(node-b): 2.27.3");
  const struct nsp_finding *p = only(job, NSP_FIND_ENV_NCCL_PATH);
  assert_string_equal(p->sides[1].value, "/opt/nccl/lib/libnccl.so.2");
  const struct nsp_finding *d = only(job, NSP_FIND_ENV_DRIVER);
  assert_side(&d->sides[0], "0-2");
  assert_string_equal(d->sides[0].value, "12.4");
  assert_side(&d->sides[1], "3");
  assert_string_equal(d->sides[1].value, "12.2");
  assert_ranks(d->odd_ranks, d->nodd, "3");
  assert_int_equal(count_kind(job, NSP_FIND_ENV_RUNTIME), 0);
  /* Environment findings come after the others, in their own section. */
  assert_contains(nsp_job_summary(job), "3 findings (env-nccl-version: 1, env-nccl-path: 1, env-driver-version: 1)");
  nsp_job_destroy(job);
}

/* NCCL_* variables: set on some ranks and not others counts; per-rank
 * ones (NCCL_COMM_ID, NCCL_HOSTID, *RANK*, NCCL_DEBUG_FILE) are left out. */
static void test_settings(void **state) {
  (void)state;
  struct nsp_tracegen *g[4];
  for (int r = 0; r < 4; r++) {
    g[r] = gen(r);
    char v[32];
    if (r < 3) assert_int_equal(nsp_tracegen_env(g[r], "NCCL_SOCKET_IFNAME", "eth0"), 0);
    assert_int_equal(nsp_tracegen_env(g[r], "NCCL_IB_DISABLE", "1"), 0);
    snprintf(v, sizeof v, "10.0.0.%d:29500", r);
    assert_int_equal(nsp_tracegen_env(g[r], "NCCL_COMM_ID", v), 0);
    snprintf(v, sizeof v, "host%d", r);
    assert_int_equal(nsp_tracegen_env(g[r], "NCCL_HOSTID", v), 0);
    snprintf(v, sizeof v, "%d", r);
    assert_int_equal(nsp_tracegen_env(g[r], "NCCL_LOCAL_RANK", v), 0);
    snprintf(v, sizeof v, "/logs/nccl.%d.log", r);
    assert_int_equal(nsp_tracegen_env(g[r], "NCCL_DEBUG_FILE", v), 0);
    assert_int_equal(nsp_tracegen_env(g[r], "NCCL_ALGO", r == 2 ? "Tree" : "Ring"), 0);
    world(g[r], r, 4);
  }
  struct nsp_job *job = analyse_gens(g, 4);
  /* NCCL_ALGO must match: a finding.  NCCL_SOCKET_IFNAME (per host) is
   * unset on rank 3 while rank 2 of its host node-b has eth0: a finding
   * on node-b's ranks.  The rank-specific ones are nothing, the
   * diagnostics one (NCCL_DEBUG_FILE) a note. */
  assert_int_equal(nsp_job_nfindings(job), 2);
  const struct nsp_finding *a = nsp_job_finding(job, 0), *s = nsp_job_finding(job, 1);
  assert_int_equal(a->kind, NSP_FIND_ENV_SETTING);
  assert_string_equal(a->setting, "NCCL_ALGO");
  assert_side(&a->sides[0], "0-1,3");
  assert_string_equal(a->sides[0].text, "NCCL_ALGO=Ring");
  assert_side(&a->sides[1], "2");
  assert_ranks(a->odd_ranks, a->nodd, "2");
  assert_contains(a->hint, "set it the same way everywhere");
  assert_int_equal(s->kind, NSP_FIND_ENV_SETTING);
  assert_string_equal(s->setting, "NCCL_SOCKET_IFNAME");
  assert_side(&s->sides[0], "2");
  assert_string_equal(s->sides[0].value, "eth0");
  assert_side(&s->sides[1], "3");
  assert_null(s->sides[1].value);
  assert_string_equal(s->sides[1].text, "NCCL_SOCKET_IFNAME unset");
  assert_string_equal(s->message, "NCCL_SOCKET_IFNAME differs across ranks: rank 2 (node-b): eth0; rank 3 (node-b): "
                                  "unset; within one host (node-b): it may differ between hosts, not between the "
                                  "processes of one");
  int diag = 0;
  for (size_t i = 0; i < nsp_job_nnotes(job); i++) {
    const char *n = nsp_job_note(job, i);
    diag += !strncmp(n, "NCCL_DEBUG_FILE differs across ranks (diagnostics only, not a problem): rank 0 (node-a): "
                        "/logs/nccl.0.log; ", 103);
    if (strstr(n, "NCCL_COMM_ID") || strstr(n, "NCCL_HOSTID") || strstr(n, "NCCL_LOCAL_RANK")) fail_msg("%s", n);
  }
  assert_int_equal(diag, 1);
  nsp_job_destroy(job);
}

static void test_world_size(void **state) {
  (void)state;
  struct nsp_tracegen *g[4];
  /* WORLD_SIZE=8 on a job of 4 traced ranks in a 4-rank world; SLURM_NTASKS
   * differs between the ranks. */
  for (int r = 0; r < 4; r++) {
    g[r] = gen(r);
    assert_int_equal(nsp_tracegen_env(g[r], "WORLD_SIZE", "8"), 0);
    assert_int_equal(nsp_tracegen_env(g[r], "SLURM_NTASKS", r < 2 ? "4" : "2"), 0);
    assert_int_equal(nsp_tracegen_env(g[r], "PMI_SIZE", "4"), 0); /* agrees: no finding */
    world(g[r], r, 4);
  }
  struct nsp_job *job = analyse_gens(g, 4);
  assert_int_equal(count_kind(job, NSP_FIND_ENV_WORLD_SIZE), 2);
  for (size_t i = 0; i < nsp_job_nfindings(job); i++) {
    const struct nsp_finding *f = nsp_job_finding(job, i);
    assert_int_equal(f->kind, NSP_FIND_ENV_WORLD_SIZE);
    if (!strcmp(f->setting, "WORLD_SIZE")) {
      assert_int_equal(f->nsides, 1);
      assert_side(&f->sides[0], "0-3");
      assert_string_equal(f->message, "WORLD_SIZE=8 on ranks 0-3 (node-a, node-b) but 4 processes traced, largest "
                                      "communicator 4 ranks");
    } else {
      assert_string_equal(f->setting, "SLURM_NTASKS");
      assert_int_equal(f->nsides, 2);
      assert_string_equal(f->sides[0].value, "4");
      assert_side(&f->sides[1], "2-3");
    }
  }
  nsp_job_destroy(job);
}

/* A job stopped while ranks 0-1 waited in ncclCommInitRank and before
 * ranks 2-3 made their first NCCL call (their traces hold the process
 * alone): WORLD_SIZE=4 agrees with the four processes that carry it, so
 * no finding.  With rank 3 not traced at all there is one. */
static void test_world_size_ranks_without_calls(void **state) {
  (void)state;
  for (int traced = 4; traced >= 3; traced--) {
    struct nsp_tracegen *g[4];
    for (int r = 0; r < traced; r++) {
      g[r] = gen(r);
      assert_int_equal(nsp_tracegen_env(g[r], "WORLD_SIZE", "4"), 0);
      if (r >= 2) continue;
      assert_int_equal(nsp_tracegen_ringstate(g[r], nsp_tracegen_now(g[r]) + 5000000000ull, 0, 0, 1, 0), 0);
      assert_int_equal(nsp_tracegen_inflight_init(g[r], NSP_API_CommInitRank, 0xbeef, r, 4, 0), 0);
    }
    struct nsp_job *job = analyse_gens(g, traced);
    if (traced == 4) {
      assert_int_equal(count_kind(job, NSP_FIND_ENV_WORLD_SIZE), 0);
    } else {
      const struct nsp_finding *f = only(job, NSP_FIND_ENV_WORLD_SIZE);
      assert_string_equal(f->message, "WORLD_SIZE=4 on ranks 0-1 (node-a) but 3 processes traced, no communicator "
                                      "was made");
    }
    nsp_job_destroy(job);
  }
}

/* ---- communicators that do not add up ------------------------------------- */

static void test_duplicate_gpu(void **state) {
  (void)state;
  struct nsp_tracegen *g[3];
  for (int r = 0; r < 3; r++) {
    g[r] = nsp_tracegen_create("node-a", 1000u + (uint32_t)r, r);
    assert_non_null(g[r]);
    /* ranks 0 and 1 report one uuid; rank 2 has no uuid but rank 1's bus id */
    assert_int_equal(nsp_tracegen_set_gpu(g[r], r < 2 ? "GPU-1111" : "", r ? "0000:1b:00.0" : "0000:1c:00.0", "H200"),
                     0);
    world(g[r], r, 3);
  }
  struct nsp_job *job = analyse_gens(g, 3);
  const struct nsp_finding *f = only(job, NSP_FIND_ENV_DUP_GPU);
  assert_string_equal(nsp_finding_kind_name(f->kind), "env-duplicate-gpu");
  assert_true(f->comm_id == 0xaaaa);
  assert_int_equal(f->nsides, 1);
  assert_side(&f->sides[0], "0-2");
  assert_string_equal(f->sides[0].value, "GPU-1111");
  assert_contains(f->message, "ranks 0-2 (node-a) share one GPU: GPU-1111");
  nsp_job_destroy(job);
}

/* A PCI bus id names one GPU of a host only where a UUID is unknown: two
 * known UUIDs that differ are two GPUs (MIG instances share a bus id, and
 * nodes may share a host name).  A rank without a UUID on that bus joins
 * the first rank with one. */
static void test_duplicate_gpu_bus_needs_unknown_uuid(void **state) {
  (void)state;
  static const char *const uuids[4] = {"GPU-1111", "GPU-2222", "", "GPU-3333"};
  for (int n = 2; n <= 4; n += 2) {
    struct nsp_tracegen *g[4];
    for (int r = 0; r < n; r++) {
      g[r] = nsp_tracegen_create("node-a", 1000u + (uint32_t)r, r);
      assert_non_null(g[r]);
      assert_int_equal(nsp_tracegen_set_gpu(g[r], uuids[r], r < 3 ? "0000:1b:00.0" : "0000:1c:00.0", "H200"), 0);
      world(g[r], r, n);
    }
    struct nsp_job *job = analyse_gens(g, n);
    if (n == 2) {
      assert_int_equal(count_kind(job, NSP_FIND_ENV_DUP_GPU), 0);
    } else {
      const struct nsp_finding *f = only(job, NSP_FIND_ENV_DUP_GPU);
      assert_int_equal(f->nsides, 1);
      assert_side(&f->sides[0], "0,2");
      assert_string_equal(f->sides[0].value, "GPU-1111");
      assert_string_equal(f->message, "ranks 0,2 (node-a) share one GPU: GPU-1111 0000:1b:00.0, H200 on node-a");
    }
    nsp_job_destroy(job);
  }
}

/* The UUID a side shows is the one its ranks share, even when the first
 * of them could not read it. */
static void test_duplicate_gpu_first_without_uuid(void **state) {
  (void)state;
  struct nsp_tracegen *g[2];
  for (int r = 0; r < 2; r++) {
    g[r] = nsp_tracegen_create("node-a", 1000u + (uint32_t)r, r);
    assert_non_null(g[r]);
    assert_int_equal(nsp_tracegen_set_gpu(g[r], r ? "GPU-1111" : "", "0000:1b:00.0", r ? "H200" : ""), 0);
    world(g[r], r, 2);
  }
  struct nsp_job *job = analyse_gens(g, 2);
  const struct nsp_finding *f = only(job, NSP_FIND_ENV_DUP_GPU);
  assert_side(&f->sides[0], "0-1");
  assert_string_equal(f->sides[0].value, "GPU-1111");
  assert_string_equal(f->sides[0].text, "GPU-1111 0000:1b:00.0, H200 on node-a");
  nsp_job_destroy(job);
}

/* Members disagree on nranks: the communicator's is the one most report
 * (the smaller on a tie), whichever trace comes first.  With 4 agreed,
 * ranks 0-3 are all there and WORLD_SIZE=4 agrees. */
static void test_nranks_majority(void **state) {
  (void)state;
  static const int says[2][4] = {{4, 4, 4, 8}, {4, 8, 4, 8}};
  for (int c = 0; c < 2; c++)
    for (int first = 0; first < 4; first++) {
      struct nsp_tracegen *g[4];
      for (int i = 0; i < 4; i++) {
        int r = (first + i) % 4; /* rank `first`'s trace is added first */
        g[i] = gen(r);
        assert_int_equal(nsp_tracegen_env(g[i], "WORLD_SIZE", "4"), 0);
        world(g[i], r, says[c][r]);
      }
      struct nsp_job *job = analyse_gens(g, 4);
      const struct nsp_finding *f = only(job, NSP_FIND_ENV_NRANKS);
      assert_non_null(f->comm);
      assert_int_equal(f->comm->nranks, 4);
      assert_int_equal(count_kind(job, NSP_FIND_ENV_MISSING_RANKS), 0);
      assert_int_equal(count_kind(job, NSP_FIND_ENV_WORLD_SIZE), 0);
      assert_int_equal(f->nsides, 2);
      assert_string_equal(f->sides[0].value, "4");
      assert_string_equal(f->sides[1].value, "8");
      assert_side(&f->sides[0], c ? "0,2" : "0-2");
      assert_side(&f->sides[1], c ? "1,3" : "3");
      nsp_job_destroy(job);
    }
}

static void test_duplicate_rank_and_nranks(void **state) {
  (void)state;
  struct nsp_tracegen *g[3];
  g[0] = gen(0);
  world(g[0], 0, 2);
  g[1] = gen(1);
  world(g[1], 1, 2);
  g[2] = nsp_tracegen_create("node-c", 2000, 1); /* a second rank 1, thinking nranks is 3 */
  world(g[2], 1, 3);
  struct nsp_job *job = analyse_gens(g, 3);
  const struct nsp_finding *d = only(job, NSP_FIND_ENV_DUP_RANK);
  assert_int_equal(d->nsides, 1);
  assert_int_equal(d->sides[0].nranks, 2);
  assert_int_equal(d->sides[0].procs[0].pid, 1001);
  assert_int_equal(d->sides[0].procs[1].pid, 2000);
  assert_contains(d->message, "rank 1 is claimed by 2 processes: node-a pid 1001 (t1.ncclspy), node-c pid 2000 "
                              "(t2.ncclspy)");
  const struct nsp_finding *n = only(job, NSP_FIND_ENV_NRANKS);
  assert_int_equal(n->nsides, 2);
  assert_string_equal(n->sides[0].value, "2");
  assert_side(&n->sides[0], "0-1");
  assert_string_equal(n->sides[1].value, "3");
  assert_int_equal(n->sides[1].procs[0].pid, 2000);
  /* No note says it any more: the findings do. */
  assert_int_equal(nsp_job_nnotes(job), 0);
  nsp_job_destroy(job);
}

static void test_missing_ranks(void **state) {
  (void)state;
  struct nsp_tracegen *g[3];
  static const int ranks[3] = {0, 3, 4};
  for (int i = 0; i < 3; i++) {
    g[i] = gen(ranks[i]);
    world(g[i], ranks[i], 10);
  }
  struct nsp_job *job = analyse_gens(g, 3);
  const struct nsp_finding *f = only(job, NSP_FIND_ENV_MISSING_RANKS);
  assert_ranks(f->odd_ranks, f->nodd, "1-2,5-9");
  assert_side(&f->sides[0], "0,3-4");
  assert_string_equal(f->sides[0].text, "traced (3 of 10)");
  assert_string_equal(f->message, "communicator has 10 ranks but 3 have a trace; no trace for ranks 1-2,5-9");
  nsp_job_destroy(job);
}

/* Hostile nranks: INT_MAX ranks, the last one (INT_MAX - 1) traced.  The
 * walk over the gaps steps past the end (INT_MAX + 1 was a signed
 * overflow, which the sanitized build's UBSan fails on); the message
 * names the one gap. */
static void test_missing_ranks_int_max(void **state) {
  (void)state;
  struct nsp_tracegen *g[2];
  static const int ranks[2] = {0, INT_MAX - 1};
  for (int i = 0; i < 2; i++) {
    g[i] = gen(i);
    world(g[i], ranks[i], INT_MAX);
  }
  struct nsp_job *job = analyse_gens(g, 2);
  const struct nsp_finding *f = only(job, NSP_FIND_ENV_MISSING_RANKS);
  assert_side(&f->sides[0], "0,2147483646");
  assert_string_equal(f->message, "communicator has 2147483647 ranks but 2 have a trace; no trace for ranks "
                                  "1-2147483645");
  assert_int_equal(f->nodd, 0); /* too many to list */
  nsp_job_destroy(job);
}

/* The same, with a file that could not be read among the traces: the
 * missing ranks may be in it, and the message says so. */
/* Finds the first data frame's offset (a walk's first visit). */
static int first_data(void *ctx, const struct nsp_frame_index *ix, size_t data_off) {
  (void)ix;
  *(size_t *)ctx = data_off;
  return 1;
}

/* A trace whose first frame (its PROCESS record, the environment) was
 * lost, read on from its second: its settings are not known, so it is
 * left out of the comparison, not counted as unset (no NCCL_ALGO finding
 * against the others' Ring). */
static void test_settings_lost_environment(void **state) {
  (void)state;
  struct nsp_job *job = nsp_job_create();
  assert_non_null(job);
  for (int r = 0; r < 4; r++) {
    struct nsp_tracegen *g = gen(r);
    assert_int_equal(nsp_tracegen_env(g, "NCCL_ALGO", "Ring"), 0);
    uint32_t other = nsp_tracegen_comm(g, 0xbbbb, r, 4); /* the PROCESS record goes before it */
    assert_true(other > 0);
    assert_int_equal(nsp_tracegen_frame(g), 0);
    world(g, r, 4);
    const uint8_t *data;
    size_t len;
    assert_int_equal(nsp_tracegen_bytes(g, &data, &len), 0);
    uint8_t *copy = malloc(len);
    assert_non_null(copy);
    memcpy(copy, data, len);
    if (r == 3) { /* the first data frame's zstd magic broken */
      struct nsp_frame_index scratch;
      memset(&scratch, 0, sizeof scratch);
      size_t off = 0;
      nsp_index_walk_mem(copy, len, NSP_HEADER_SIZE, 0, 1, &scratch, first_data, &off);
      nsp_frame_index_free(&scratch);
      assert_true(off > 0 && off + 4 < len);
      memset(copy + off, 0, 4);
    }
    char name[32];
    snprintf(name, sizeof name, "t%d.ncclspy", r);
    assert_int_equal(nsp_job_add_mem(job, name, copy, len), 1);
    free(copy);
    nsp_tracegen_destroy(g);
  }
  assert_int_equal(nsp_job_analyze(job), 0);
  assert_true(nsp_job_trace(job, 3)->nenv == 0); /* its environment was lost */
  assert_true(nsp_job_trace(job, 3)->problem != NULL);
  for (size_t i = 0; i < nsp_job_nfindings(job); i++)
    if (nsp_job_finding(job, i)->kind == NSP_FIND_ENV_SETTING) fail_msg("%s", nsp_job_finding(job, i)->message);
  for (size_t i = 0; i < nsp_job_nnotes(job); i++)
    if (strstr(nsp_job_note(job, i), "NCCL_ALGO")) fail_msg("%s", nsp_job_note(job, i));
  int world_members = 0;
  for (size_t i = 0; i < nsp_job_ncomms(job); i++)
    if (nsp_job_comm(job, i)->id == 0xaaaa) world_members = (int)nsp_job_comm(job, i)->ntraced;
  assert_int_equal(world_members, 4); /* rank 3 still a rank of the world */
  nsp_job_destroy(job);
}

static void test_missing_ranks_unreadable(void **state) {
  (void)state;
  struct nsp_job *job = nsp_job_create();
  assert_non_null(job);
  for (int i = 0; i < 3; i++) {
    static const int ranks[3] = {0, 3, 4};
    struct nsp_tracegen *g = gen(ranks[i]);
    world(g, ranks[i], 10);
    const uint8_t *data;
    size_t len;
    char name[32];
    snprintf(name, sizeof name, "t%d.ncclspy", i);
    assert_int_equal(nsp_tracegen_bytes(g, &data, &len), 0);
    assert_int_equal(nsp_job_add_mem(job, name, data, len), 1);
    nsp_tracegen_destroy(g);
  }
  static const uint8_t junk[10] = "NCCLSPY\0\0";
  assert_int_equal(nsp_job_add_mem(job, "t9.ncclspy", junk, sizeof junk), NSP_AN_EREAD);
  assert_int_equal(nsp_job_analyze(job), 0);
  const struct nsp_finding *f = only(job, NSP_FIND_ENV_MISSING_RANKS);
  assert_string_equal(f->message, "communicator has 10 ranks but 3 have a trace; no trace for ranks 1-2,5-9; 1 trace "
                                  "file could not be read or has no readable record (see the notes): the missing "
                                  "ranks may be in it");
  nsp_job_destroy(job);
}

/* ---- the hint table ----------------------------------------------------------- */

static void test_hint_table(void **state) {
  (void)state;
  static const struct {
    int result;
    const char *text;
    int skew;
    const char *want;
  } cases[] = {
      {ncclInvalidUsage, "Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1b000", 0, "duplicate-gpu"},
      {ncclUnhandledCudaError, "Cuda failure 'CUDA driver version is insufficient for CUDA runtime version'", 0,
       "cuda-driver-too-old"},
      {ncclUnhandledCudaError, "Cuda failure 2 'out of memory'", 0, "out-of-memory"},
      {ncclSystemError, "cudaErrorMemoryAllocation", 0, "out-of-memory"},
      {ncclUnhandledCudaError, "Cuda failure 700 'an illegal memory access was encountered'", 0, "cuda-failure"},
      {NSP_NCCL_TIMEOUT, "Watchdog caught collective operation timeout", 0, "timeout"},
      {ncclSystemError, "socket timed out", 0, "timeout"},
      {ncclSystemError, "NET/IB : Got completion from peer with error 12", 0, "net-ib"},
      {ncclRemoteError, "ibv_poll_cq failed", 0, "net-ib"},
      {ncclSystemError, "Connection Reset by peer", 0, "net-connection-lost"},
      {ncclRemoteError, "remote process exited or there was a network error", 0, "net-connection-lost"},
      {ncclSystemError, "Connection closed by remote peer", 0, "net-connection-lost"},
      {ncclInternalError, "NCCL communicator was aborted on rank 2", 0, "comm-aborted"},
      {ncclSystemError, "bootstrap : no socket interface found", 0, "bootstrap"},
      {ncclSystemError, "Call to connect returned Connection refused", 0, "bootstrap"},
      {ncclInvalidUsage, "invalid usage (run with NCCL_DEBUG=WARN for details)", 1, "version-skew"},
      {ncclInvalidUsage, NULL, 1, "version-skew"},
      {ncclUnhandledCudaError, NULL, 0, "result-cuda-error"},
      {ncclSystemError, NULL, 0, "result-system-error"},
      {ncclInternalError, "", 0, "result-internal-error"},
      {ncclInvalidArgument, "invalid argument", 0, "result-invalid-argument"},
      {ncclInvalidUsage, "invalid usage", 0, "result-invalid-usage"},
      {ncclRemoteError, NULL, 0, "result-remote-error"},
      {NSP_NCCL_TIMEOUT, NULL, 0, "result-timeout"},
      {42, "something new", 0, "result-unknown"},
  };
  size_t nrows = nsp_hint_count();
  int *hit = calloc(nrows, sizeof *hit);
  assert_non_null(hit);
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    size_t row = nsp_hint_match(cases[i].result, cases[i].text, cases[i].skew);
    if (row == SIZE_MAX) fail_msg("no row for \"%s\"", cases[i].text ? cases[i].text : "(null)");
    if (strcmp(nsp_hint_get(row)->id, cases[i].want))
      fail_msg("\"%s\" (result %d): row %s, want %s", cases[i].text ? cases[i].text : "(null)", cases[i].result,
               nsp_hint_get(row)->id, cases[i].want);
    hit[row] = 1;
  }
  /* Every row is somebody's answer, and says something. */
  for (size_t r = 0; r < nrows; r++) {
    const struct nsp_hint *h = nsp_hint_get(r);
    if (!hit[r]) fail_msg("hint row %s is not covered", h->id);
    assert_true(strlen(h->cause) > 10 && strlen(h->check) > 10);
  }
  free(hit);
  assert_null(nsp_hint_get(nrows));
  assert_true(nsp_hint_match(0, "connection reset", 0) == SIZE_MAX);
  assert_true(nsp_hint_match(ncclInProgress, NULL, 0) == SIZE_MAX);
}

/* An error's hint shows the settings its row names, each rank's value. */
static void test_error_hint_settings(void **state) {
  (void)state;
  struct nsp_tracegen *g[4];
  uint32_t w[4];
  for (int r = 0; r < 4; r++) {
    g[r] = gen(r);
    if (r < 2) assert_int_equal(nsp_tracegen_env(g[r], "NCCL_SOCKET_IFNAME", "eth0"), 0);
    if (r == 1) assert_int_equal(nsp_tracegen_env(g[r], "NCCL_PROTO", "Simple"), 0);
    w[r] = nsp_tracegen_comm(g[r], 0xaaaa, r, 4);
  }
  nsp_tracegen_fail_next(g[3], ncclSystemError, "connection reset by peer");
  nsp_tracegen_coll(g[3], NSP_API_AllReduce, w[3], 8, ncclFloat32, ncclSum, -1);
  for (int r = 0; r < 3; r++) nsp_tracegen_coll(g[r], NSP_API_AllReduce, w[r], 8, ncclFloat32, ncclSum, -1);
  struct nsp_job *job = analyse_gens(g, 4);
  const struct nsp_finding *e = only(job, NSP_FIND_ERROR);
  assert_string_equal(e->hint_id, "net-connection-lost");
  assert_contains(e->hint, "the connection to a peer was lost");
  assert_contains(e->hint, "; NCCL_SOCKET_IFNAME: eth0 on ranks 0-1, unset on ranks 2-3; NCCL_IB_DISABLE: unset on "
                           "ranks 0-3; the earliest error is the likely origin");
  /* NCCL_PROTO (must match) is the finding; NCCL_SOCKET_IFNAME differs
   * only between the hosts, each agreeing within: a note. */
  assert_int_equal(count_kind(job, NSP_FIND_ENV_SETTING), 1);
  assert_string_equal(only(job, NSP_FIND_ENV_SETTING)->setting, "NCCL_PROTO");
  int noted = 0;
  for (size_t i = 0; i < nsp_job_nnotes(job); i++)
    noted += !strcmp(nsp_job_note(job, i), "NCCL_SOCKET_IFNAME differs across ranks (per host, and each host agrees: "
                                           "allowed): ranks 0-1 (node-a): eth0; ranks 2-3 (node-b): unset");
  assert_int_equal(noted, 1);
  nsp_job_destroy(job);
}

/* Invalid usage with different NCCL versions: the version skew row. */
static void test_error_hint_version_skew(void **state) {
  (void)state;
  struct nsp_tracegen *g[2];
  uint32_t w[2];
  for (int r = 0; r < 2; r++) {
    g[r] = gen(2 * r);
    nsp_tracegen_set_nccl_version(g[r], r ? 22304 : 22809);
    w[r] = nsp_tracegen_comm(g[r], 0xaaaa, r, 2);
  }
  nsp_tracegen_fail_next(g[1], ncclInvalidUsage, "invalid usage");
  nsp_tracegen_coll(g[1], NSP_API_AllReduce, w[1], 8, ncclFloat32, ncclSum, -1);
  struct nsp_job *job = analyse_gens(g, 2);
  const struct nsp_finding *e = only(job, NSP_FIND_ERROR);
  assert_string_equal(e->hint_id, "version-skew");
  assert_contains(e->hint, "different NCCL versions");
  only(job, NSP_FIND_ENV_NCCL_VERSION);
  nsp_job_destroy(job);
}

/* Healthy jobs and the failure cases have no environment findings. */
static void test_cases_clean(void **state) {
  (void)state;
  static const char *const names[] = {"c01", "c07", "c09", "c10", "c11", "c13"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    struct nsp_job *job = nsp_job_create();
    assert_true(nsp_case_add(names[i], job) > 0);
    assert_int_equal(nsp_job_analyze(job), 0);
    for (size_t k = 0; k < nsp_job_nfindings(job); k++)
      if (nsp_finding_kind_is_env(nsp_job_finding(job, k)->kind))
        fail_msg("%s: %s", names[i], nsp_job_finding(job, k)->message);
    nsp_job_destroy(job);
  }
}

/* ---- traces of more than one run ---------------------------------------- */

/* A torchrun restart in the same NCCLSPY_DIR: two attempts, told apart by
 * TORCHELASTIC_RESTART_COUNT.  The newest is analysed (its 2 traces
 * only), and the first note names the other; --run all compares every
 * trace as before, --run ID or its number picks one, a bad one is
 * refused. */
static void runs_gens(struct nsp_tracegen **g) {
  for (int i = 0; i < 4; i++) {
    g[i] = gen(i);
    assert_int_equal(nsp_tracegen_env(g[i], "TORCHELASTIC_RUN_ID", "job7"), 0);
    assert_int_equal(nsp_tracegen_env(g[i], "TORCHELASTIC_RESTART_COUNT", i < 2 ? "0" : "1"), 0);
    assert_int_equal(nsp_tracegen_env(g[i], "MASTER_PORT", "29500"), 0);
    assert_int_equal(nsp_tracegen_env(g[i], "WORLD_SIZE", "2"), 0);
    uint32_t w = nsp_tracegen_comm(g[i], i < 2 ? 0xa0 : 0xa1, i % 2, 2);
    nsp_tracegen_coll(g[i], NSP_API_AllReduce, w, 8, ncclFloat32, ncclSum, -1);
  }
  nsp_tracegen_dropped(g[3], 5, NSP_DROP_RING_FULL); /* a later note stays after it */
}

static struct nsp_job *runs_job(const char *sel, int want) {
  struct nsp_tracegen *g[4];
  runs_gens(g);
  struct nsp_job *job = job_of_gens(g, 4);
  if (sel) assert_int_equal(nsp_job_select_run(job, sel), 0);
  assert_int_equal(nsp_job_analyze(job), want);
  return job;
}

static void test_runs_by_env(void **state) {
  (void)state;
  struct nsp_job *job = runs_job(NULL, 0);
  assert_int_equal(nsp_job_nfindings(job), 0); /* no env-world-size: 2 processes, WORLD_SIZE=2 */
  assert_int_equal(nsp_job_ntraces(job), 2);
  assert_string_equal(nsp_job_trace(job, 0)->path, "t2.ncclspy");
  assert_string_equal(nsp_job_trace(job, 0)->run_id, "torchrun:job7:restart=1");
  assert_int_equal(nsp_job_nruns(job), 2);
  assert_string_equal(nsp_job_run(job, 0)->id, "torchrun:job7:restart=1");
  assert_true(nsp_job_run(job, 0)->analyzed);
  assert_string_equal(nsp_job_run(job, 1)->id, "torchrun:job7:restart=0");
  assert_false(nsp_job_run(job, 1)->analyzed);
  assert_int_equal(nsp_job_run(job, 1)->nprocs, 2);
  assert_int_equal(nsp_job_nnotes(job), 2);
  assert_contains(nsp_job_note(job, 0), "1 older run in these traces ignored: torchrun:job7:restart=0 (2 processes, "
                                        "started 20");
  assert_contains(nsp_job_note(job, 0), "; analysed: the newest, torchrun:job7:restart=1 (2 processes, started ");
  assert_contains(nsp_job_note(job, 0), "; --run all or --run ID");
  assert_contains(nsp_job_note(job, 1), "t3.ncclspy: the shim dropped 5 records");
  nsp_job_destroy(job);

  /* --run all: every trace as one job, as before; no env-world-size for
   * 4 processes, since each group of shared communicators has 2. */
  job = runs_job("all", 0);
  assert_int_equal(nsp_job_ntraces(job), 4);
  assert_int_equal(count_kind(job, NSP_FIND_ENV_WORLD_SIZE), 0);
  assert_contains(nsp_job_note(job, 0), "the traces come from 2 different runs or attempts, and are compared as if "
                                        "they were one job (--run all): torchrun:job7:restart=1 (2 processes, ");
  assert_contains(nsp_job_note(job, 0), "): t2.ncclspy, t3.ncclspy; torchrun:job7:restart=0 (2 processes, ");
  assert_contains(nsp_job_note(job, 0), "): t0.ncclspy, t1.ncclspy; ");
  assert_true(nsp_job_run(job, 0)->analyzed && nsp_job_run(job, 1)->analyzed);
  nsp_job_destroy(job);

  /* The older one, by identity, by a prefix of a part, by number. */
  static const char *const older[] = {"torchrun:job7:restart=0", "torchrun:job7:restart=0", "2"};
  for (size_t i = 0; i < 3; i++) {
    job = runs_job(older[i], 0);
    assert_int_equal(nsp_job_ntraces(job), 2);
    assert_string_equal(nsp_job_trace(job, 0)->path, "t0.ncclspy");
    assert_contains(nsp_job_note(job, 0), "1 other run in these traces ignored: torchrun:job7:restart=1 (2 processes");
    assert_contains(nsp_job_note(job, 0), "; analysed as asked: run 2 of 2 (newest first), torchrun:job7:restart=0");
    nsp_job_destroy(job);
  }
  job = runs_job("torchrun:job7", NSP_AN_EINVAL);
  assert_contains(nsp_job_error(job), "--run torchrun:job7 names 2 runs: 1. torchrun:job7:restart=1 2. "
                                      "torchrun:job7:restart=0");
  nsp_job_destroy(job);
  job = runs_job("3", NSP_AN_EINVAL);
  assert_contains(nsp_job_error(job), "--run 3: no such run; the traces hold 2 (newest first): 1. ");
  nsp_job_destroy(job);

  /* Same attempt everywhere: one run, no note. */
  struct nsp_tracegen *g[2];
  for (int i = 0; i < 2; i++) {
    g[i] = gen(i);
    assert_int_equal(nsp_tracegen_env(g[i], "TORCHELASTIC_RESTART_COUNT", "3"), 0);
    world(g[i], i, 2);
  }
  job = analyse_gens(g, 2);
  assert_int_equal(nsp_job_nnotes(job), 0);
  assert_int_equal(nsp_job_nruns(job), 1);
  assert_string_equal(nsp_job_run(job, 0)->id, "torchrun:?:restart=3");
  nsp_job_destroy(job);
}

/* A --run that names 2 of 3 runs lists those 2, with their numbers in
 * the newest-first list, and not the third. */
static void test_runs_ambiguous(void **state) {
  (void)state;
  struct nsp_tracegen *g[6];
  for (int i = 0; i < 6; i++) {
    g[i] = nsp_tracegen_create("h", 110u + (uint32_t)i, -1);
    assert_non_null(g[i]);
    nsp_tracegen_set_clock(g[i], 1700000000000000000ull + (uint64_t)(i / 2) * 3600000000000ull, 1000000000ull);
    uint32_t w = nsp_tracegen_comm(g[i], i < 4 ? 0x1111 : 0x2222, i % 2, 2);
    nsp_tracegen_coll(g[i], NSP_API_AllReduce, w, 8, ncclFloat32, ncclSum, -1);
  }
  struct nsp_job *job = job_of_gens(g, 6);
  assert_int_equal(nsp_job_select_run(job, "comm:0000000000001"), 0);
  assert_int_equal(nsp_job_analyze(job), NSP_AN_EINVAL);
  const char *e = nsp_job_error(job);
  assert_contains(e, "--run comm:0000000000001 names 2 runs: 2. comm:0000000000001111@2023-11-14T23:13:20.000Z 3. "
                     "comm:0000000000001111@2023-11-14T22:13:20.000Z");
  if (strstr(e, "2222")) fail_msg("lists a run it does not name: %s", e);
  nsp_job_destroy(job);
}

/* No launcher variables, one communicator id (NCCL_COMM_ID), an hour
 * between the traces: two runs, told apart by their start time; half a
 * second of clock skew is not. */
static void test_runs_by_time(void **state) {
  (void)state;
  struct nsp_tracegen *g[3];
  for (int i = 0; i < 3; i++) {
    g[i] = nsp_tracegen_create("h", 50u + (uint32_t)i, -1);
    assert_non_null(g[i]);
  }
  nsp_tracegen_set_clock(g[1], 1700000000500000000ull, 1000000000ull); /* +0.5 s */
  nsp_tracegen_set_clock(g[2], 1700003600000000000ull, 1000000000ull); /* +1 h */
  for (int i = 0; i < 3; i++) world(g[i], i == 2 ? 0 : i, 2);
  struct nsp_job *job = analyse_gens(g, 3);
  assert_int_equal(nsp_job_nruns(job), 2);
  assert_int_equal(nsp_job_ntraces(job), 1);
  assert_string_equal(nsp_job_trace(job, 0)->path, "t2.ncclspy");
  assert_string_equal(nsp_job_run(job, 0)->id, "comm:000000000000aaaa@2023-11-14T23:13:20.000Z");
  assert_string_equal(nsp_job_run(job, 1)->id, "comm:000000000000aaaa@2023-11-14T22:13:20.000Z");
  assert_contains(nsp_job_note(job, 0), "1 older run in these traces ignored: comm:000000000000aaaa@2023-11-14T22:13:"
                                        "20.000Z (2 processes, started 2023-11-14T22:13:20.000Z)");
  nsp_job_destroy(job);
  for (int i = 0; i < 2; i++) g[i] = nsp_tracegen_create("h", 50u + (uint32_t)i, -1);
  nsp_tracegen_set_clock(g[1], 1700000000500000000ull, 1000000000ull);
  for (int i = 0; i < 2; i++) world(g[i], i, 2);
  job = analyse_gens(g, 2);
  assert_int_equal(nsp_job_nnotes(job), 0);
  assert_int_equal(nsp_job_nruns(job), 1);
  assert_string_equal(nsp_job_run(job, 0)->id, "comm:000000000000aaaa");
  nsp_job_destroy(job);
}

/* Two jobs started together (a reused directory): each pair shares its
 * own world, complete, none shares one with the other pair, and they ran
 * at the same time.  With no launcher variables they are two runs (two
 * jobs in one directory); with variables naming one launch (one
 * SLURM_JOB_ID) one run as far as can be told, with a note naming the
 * groups.  Back to back they are two runs, told apart by their worlds.
 * One job with a split communicator is one run; so is one whose ranks'
 * launcher variables differ (SLURM_STEP_ID on some nodes only). */
static void test_runs_by_comms(void **state) {
  (void)state;
  struct nsp_tracegen *g[4];
  for (int launch = 0; launch < 2; launch++) {
    for (int i = 0; i < 4; i++) {
      g[i] = nsp_tracegen_create("h", 70u + (uint32_t)i, -1);
      assert_non_null(g[i]);
      if (launch) assert_int_equal(nsp_tracegen_env(g[i], "SLURM_JOB_ID", "5"), 0);
      assert_int_equal(nsp_tracegen_env(g[i], "WORLD_SIZE", "2"), 0);
      uint32_t w = nsp_tracegen_comm(g[i], i < 2 ? 0x1111 : 0x2222, i % 2, 2);
      assert_true(w > 0);
      nsp_tracegen_coll(g[i], NSP_API_AllReduce, w, 8, ncclFloat32, ncclSum, -1);
    }
    struct nsp_job *job = analyse_gens(g, 4);
    assert_int_equal(nsp_job_nfindings(job), 0);
    assert_int_equal(nsp_job_nruns(job), launch ? 1 : 2);
    assert_int_equal(nsp_job_ntraces(job), launch ? 4 : 2);
    if (launch) {
      assert_int_equal(nsp_job_nnotes(job), 1);
      assert_contains(nsp_job_note(job, 0), "the traces may come from 2 different runs or attempts (no communicator "
                                            "has ranks in more than one of them, though they ran at the same time");
      assert_contains(nsp_job_note(job, 0), "group 1: t0.ncclspy, t1.ncclspy; group 2: t2.ncclspy, t3.ncclspy");
    } else {
      assert_contains(nsp_job_note(job, 0), "1 older run in these traces ignored: comm:");
    }
    nsp_job_destroy(job);
  }
  /* Launcher variables that differ between ranks of one world: one run. */
  for (int i = 0; i < 4; i++) {
    g[i] = nsp_tracegen_create("h", 90u + (uint32_t)i, -1);
    assert_int_equal(nsp_tracegen_env(g[i], "SLURM_JOB_ID", "100"), 0);
    if (i >= 2) assert_int_equal(nsp_tracegen_env(g[i], "SLURM_STEP_ID", "0"), 0);
    uint32_t w = nsp_tracegen_comm(g[i], 0x6666, i, 4);
    nsp_tracegen_coll(g[i], NSP_API_AllReduce, w, 8, ncclFloat32, ncclSum, -1);
  }
  struct nsp_job *job = analyse_gens(g, 4);
  assert_int_equal(nsp_job_nruns(job), 1);
  assert_int_equal(nsp_job_ntraces(job), 4);
  assert_int_equal(nsp_job_nfindings(job), 0);
  assert_string_equal(nsp_job_run(job, 0)->id, "slurm:100");
  nsp_job_destroy(job);
  /* Back to back (the second pair 10 s later): two runs, the newest analysed. */
  for (int i = 0; i < 4; i++) {
    g[i] = nsp_tracegen_create("h", 70u + (uint32_t)i, -1);
    if (i >= 2) nsp_tracegen_set_clock(g[i], 1700000010000000000ull, 1000000000ull);
    uint32_t w = nsp_tracegen_comm(g[i], i < 2 ? 0x1111 : 0x2222, i % 2, 2);
    nsp_tracegen_coll(g[i], NSP_API_AllReduce, w, 8, ncclFloat32, ncclSum, -1);
  }
  job = analyse_gens(g, 4);
  assert_int_equal(nsp_job_nruns(job), 2);
  assert_string_equal(nsp_job_run(job, 0)->id, "comm:0000000000002222");
  assert_string_equal(nsp_job_run(job, 1)->id, "comm:0000000000001111");
  assert_int_equal(nsp_job_ntraces(job), 2);
  assert_int_equal(nsp_job_nfindings(job), 0);
  nsp_job_destroy(job);
  /* One run: ranks 0-1 and 2-3 in sub-communicators of one world. */
  for (int i = 0; i < 4; i++) {
    g[i] = nsp_tracegen_create("h", 80u + (uint32_t)i, -1);
    assert_non_null(g[i]);
    uint32_t w = nsp_tracegen_comm(g[i], 0x3333, i, 4);
    uint32_t sub = nsp_tracegen_comm(g[i], i < 2 ? 0x4444 : 0x5555, i % 2, 2);
    assert_true(w > 0 && sub > 0);
    nsp_tracegen_coll(g[i], NSP_API_AllReduce, w, 8, ncclFloat32, ncclSum, -1);
    nsp_tracegen_coll(g[i], NSP_API_AllReduce, sub, 8, ncclFloat32, ncclSum, -1);
  }
  job = analyse_gens(g, 4);
  for (size_t i = 0; i < nsp_job_nnotes(job); i++)
    assert_null(strstr(nsp_job_note(job, i), "different runs"));
  assert_int_equal(nsp_job_nruns(job), 1);
  nsp_job_destroy(job);
}

/* A launcher that only made the unique id (a CALL of ncclGetUniqueId on
 * no communicator) is no rank: WORLD_SIZE=2 with 3 traced processes is no
 * env-world-size finding, and a note names it. */
static void test_nonrank_process(void **state) {
  (void)state;
  struct nsp_tracegen *g[3];
  for (int i = 0; i < 3; i++) {
    g[i] = gen(i);
    assert_int_equal(nsp_tracegen_env(g[i], "WORLD_SIZE", "2"), 0);
    assert_int_equal(nsp_tracegen_env(g[i], "NCCL_SOCKET_IFNAME", i == 2 ? "lo" : "eth0"), 0);
    if (i < 2) world(g[i], i, 2);
  }
  struct nsp_rec rec;
  memset(&rec, 0, sizeof rec);
  rec.kind = NSP_REC_CALL;
  rec.api = NSP_API_GetUniqueId;
  rec.t_enter = 2000000000ull;
  rec.t_exit = 2000001000ull;
  assert_int_equal(nsp_tracegen_record(g[2], &rec), 0);
  struct nsp_job *job = analyse_gens(g, 3);
  for (size_t k = 0; k < nsp_job_nfindings(job); k++) fail_msg("%s", nsp_job_finding(job, k)->message);
  assert_int_equal(nsp_job_ntraces(job), 3);
  assert_true(nsp_job_trace(job, 0)->joined);
  assert_false(nsp_job_trace(job, 2)->joined);
  assert_contains(nsp_job_note(job, 0), "1 traced process joined no communicator, so it is not counted as a rank "
                                        "(world sizes, missing ranks, settings): pid 1002 on host node-b (only "
                                        "ncclGetUniqueId; RANK=2 in its environment; t2.ncclspy)");
  nsp_job_destroy(job);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_versions),
      cmocka_unit_test(test_settings),
      cmocka_unit_test(test_world_size),
      cmocka_unit_test(test_world_size_ranks_without_calls),
      cmocka_unit_test(test_duplicate_gpu),
      cmocka_unit_test(test_duplicate_gpu_bus_needs_unknown_uuid),
      cmocka_unit_test(test_duplicate_gpu_first_without_uuid),
      cmocka_unit_test(test_nranks_majority),
      cmocka_unit_test(test_duplicate_rank_and_nranks),
      cmocka_unit_test(test_missing_ranks),
      cmocka_unit_test(test_missing_ranks_int_max),
      cmocka_unit_test(test_missing_ranks_unreadable),
      cmocka_unit_test(test_settings_lost_environment),
      cmocka_unit_test(test_hint_table),
      cmocka_unit_test(test_error_hint_settings),
      cmocka_unit_test(test_error_hint_version_skew),
      cmocka_unit_test(test_cases_clean),
      cmocka_unit_test(test_runs_by_env),
      cmocka_unit_test(test_runs_by_comms),
      cmocka_unit_test(test_runs_by_time), cmocka_unit_test(test_runs_ambiguous),
      cmocka_unit_test(test_nonrank_process),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
