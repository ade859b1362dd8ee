/* test_an_index.c - reading what is needed gives the report of a full
 * read (issue #16 item 3): every synthetic case, and generated jobs long
 * enough that most frames are stepped over, with faults at random
 * places, give the same text, JSON and perf reports read through the
 * traces' indexes (the default) and with nsp_job_set_full_read; and the
 * index does step over frames when every rank agrees.
 *
 * The generated jobs: a world communicator and 4-rank splits; completions
 * written late (a random lag), some before their calls, one never; at
 * random places a dtype mismatch on the world, a count mismatch on a
 * split, a rank that stops early, a refused collective, a new call site,
 * a rank without an index, a trace cut in the middle, a copy of a trace,
 * send/recv in groups, a send of another count.  NSP_TEST_SEED picks one seed (default: several
 * fixed ones); the seed and the faults are printed, so a failure can be
 * replayed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nsp_an_cases.h"
#include "nsp_index.h"
#include "nsp_names.h"
#include "nsp_report.h"
#include "tests/nsp_report_capture.h"
#include "nsp_tracegen.h"


/* The text, JSON and perf JSON reports of dir, one string (caller
 * frees); *skipped: the frames the load stepped over. */
static char *reports(const char *dir, int full, uint64_t *skipped) {
  struct nsp_job *job = nsp_case_job(1);
  assert_non_null(job);
  assert_int_equal(nsp_job_set_full_read(job, full), 0);
  assert_true(nsp_job_add_path(job, dir) > 0);
  assert_int_equal(nsp_job_analyze(job), 0);
  assert_int_equal(nsp_job_perf(job), 0);
  if (skipped) *skipped = nsp_job_frames_stepped_over(job);
  char *buf = nsp_report_capture_all(job, 1);
  nsp_job_destroy(job);
  return buf;
}

/* The reports read both ways, which must agree; returns the full read's
 * (caller frees) and *skipped of the other. */
static char *same_reports(const char *dir, uint64_t *skipped) {
  uint64_t none = 1;
  char *full = reports(dir, 1, &none);
  assert_int_equal(none, 0); /* a full read steps over nothing */
  char *ix = reports(dir, 0, skipped);
  if (strcmp(full, ix)) nsp_report_first_diff("a full read's report and the index's", full, ix);
  assert_string_equal(full, ix);
  free(ix);
  return full;
}

static void test_every_case(void **state) {
  (void)state;
  size_t n = 0;
  for (const char *name; (name = nsp_case_name(n)); n++) {
    char dir[256];
    assert_int_equal(nsp_case_mkdtemp(dir, sizeof dir), 0);
    assert_true(nsp_case_write(name, dir) > 0);
    free(same_reports(dir, NULL));
    nsp_case_rmdir(dir);
  }
  assert_true(n >= 16);
}

static uint64_t rng_next(uint64_t *s) { return nsp_case_rng(s); }

static void write_file(const char *dir, const char *name, const void *data, size_t len) {
  assert_int_equal(nsp_case_write_file(dir, name, data, len), 0);
}

enum { RANKS = 12, STEPS = 16000, LAG_MAX = 40 };

/* A collective whose completion is written later. */
struct owed {
  uint32_t comm;
  int api;
  uint64_t seq;
};

struct fault {
  int rank, step;
};

struct job_faults {
  struct fault dtype, count, stop, refuse, site, lost, early, p2pbad;
  int no_index, cut, copy, p2p, lag;
};

static struct fault pick(uint64_t *s, int on, int from) {
  struct fault f = {-1, -1};
  if (!on) return f;
  f.rank = (int)(rng_next(s) % RANKS);
  f.step = from + (int)(rng_next(s) % (uint64_t)(STEPS - from));
  return f;
}

static int at(struct fault f, int r, int st) { return f.rank == r && f.step == st; }

/* Completions owed, written when the lag says (flush: all). */
static void pay(struct nsp_tracegen *g, struct owed *o, size_t *n, size_t keep) {
  while (*n > keep) {
    uint64_t t = nsp_tracegen_now(g);
    assert_int_equal(nsp_tracegen_completion(g, o[0].comm, o[0].api, o[0].seq, -1, 0, NSP_DONE_OK, t, t + 100, t + 200),
                     0);
    memmove(o, o + 1, (*n - 1) * sizeof *o);
    (*n)--;
  }
}

static void generated_job(const char *dir, uint64_t seed, const struct job_faults *jf) {
  uint64_t s = seed ^ 0x5eed;
  for (int r = 0; r < RANKS; r++) {
    char host[32];
    snprintf(host, sizeof host, "node-%02d", r / 4);
    struct nsp_tracegen *g = nsp_tracegen_create(host, 7000u + (uint32_t)r, r);
    assert_non_null(g);
    nsp_tracegen_set_frame_records(g, 64 + (unsigned)(rng_next(&s) % 2048));
    if (r == jf->no_index) nsp_tracegen_set_index(g, 0);
    nsp_tracegen_set_auto_complete(g, 0, 0);
    uint32_t w = nsp_tracegen_comm(g, 0x1000, r, RANKS);
    uint32_t tp = nsp_tracegen_split(g, w, 0x2000 + (uint64_t)(r / 4), r / 4, r % 4, r % 4, 4);
    assert_true(w && tp);
    struct owed owed[2 * LAG_MAX + 8];
    size_t nowed = 0;
    uint64_t wseq = 0, tseq = 0;
    for (int st = 0; st < STEPS && !at(jf->stop, r, st); st++) {
      if (at(jf->site, r, st)) {
        static const char *const mods[] = {"/opt/train/train.py.so"};
        static const uint64_t offs[] = {0x1234};
        static const char *const syms[] = {"train_step"};
        nsp_tracegen_set_site(g, nsp_tracegen_callsite(g, 0, 1, mods, offs, syms));
      }
      if (at(jf->refuse, r, st)) { /* refused: takes no seq, never completes */
        nsp_tracegen_fail_next(g, ncclInvalidUsage, "invalid usage");
        nsp_tracegen_coll(g, NSP_API_AllReduce, w, 1u << 20, ncclFloat32, ncclSum, -1);
      }
      if (at(jf->early, r, st)) { /* its completion before it */
        uint64_t t = nsp_tracegen_now(g);
        assert_int_equal(
            nsp_tracegen_completion(g, w, NSP_API_AllReduce, wseq + 1, -1, 0, NSP_DONE_OK, t, t + 100, t + 200), 0);
      }
      nsp_tracegen_coll(g, NSP_API_AllReduce, w, 1u << 20, at(jf->dtype, r, st) ? ncclFloat16 : ncclBfloat16,
                        ncclSum, -1);
      wseq++;
      if (!at(jf->lost, r, st) && !at(jf->early, r, st)) owed[nowed++] = (struct owed){w, NSP_API_AllReduce, wseq};
      nsp_tracegen_coll(g, NSP_API_AllGather, tp, at(jf->count, r, st) ? 4095 : 4096, ncclFloat32, -1, -1);
      tseq++;
      owed[nowed++] = (struct owed){tp, NSP_API_AllGather, tseq};
      if (jf->p2p && st % 7 == 0) {
        nsp_tracegen_set_auto_complete(g, 1, 1000);
        nsp_tracegen_group(g, 1);
        nsp_tracegen_p2p(g, NSP_API_Send, w, at(jf->p2pbad, r, st) ? 255 : 256, ncclFloat16,
                         (r + 1) % RANKS);
        nsp_tracegen_p2p(g, NSP_API_Recv, w, 256, ncclFloat16, (r + RANKS - 1) % RANKS);
        nsp_tracegen_group(g, 0);
        nsp_tracegen_set_auto_complete(g, 0, 0);
      }
      pay(g, owed, &nowed, (size_t)(jf->lag ? rng_next(&s) % (uint64_t)jf->lag : 0));
    }
    pay(g, owed, &nowed, 0);
    const uint8_t *data;
    size_t len;
    assert_int_equal(nsp_tracegen_bytes(g, &data, &len), 0);
    char name[96];
    snprintf(name, sizeof name, "%s.%d.rank%d.ncclspy", host, 7000 + r, r);
    write_file(dir, name, data, r == jf->cut ? len / 2 : len);
    if (r == jf->copy) {
      snprintf(name, sizeof name, "copy-of-rank%d.ncclspy", r);
      write_file(dir, name, data, len);
    }
    nsp_tracegen_destroy(g);
  }
}

/* One seed's job: which faults, from the seed. */
static void one_seed(uint64_t seed, int healthy) {
  uint64_t s = seed;
  struct job_faults jf;
  int any = !healthy;
  jf.dtype = pick(&s, any && rng_next(&s) % 2, 0);
  jf.count = pick(&s, any && rng_next(&s) % 3 == 0, 0);
  jf.stop = pick(&s, any && rng_next(&s) % 3 == 0, STEPS / 4);
  jf.refuse = pick(&s, any && rng_next(&s) % 3 == 0, 0);
  jf.site = pick(&s, rng_next(&s) % 2, 0);
  jf.lost = pick(&s, any && rng_next(&s) % 3 == 0, 0);
  jf.early = pick(&s, rng_next(&s) % 2, 0);
  jf.no_index = any && rng_next(&s) % 8 == 0 ? (int)(rng_next(&s) % RANKS) : -1;
  jf.cut = any && rng_next(&s) % 5 == 0 ? (int)(rng_next(&s) % RANKS) : -1;
  jf.copy = any && rng_next(&s) % 5 == 0 ? (int)(rng_next(&s) % RANKS) : -1;
  jf.p2p = rng_next(&s) % 4 == 0;
  jf.p2pbad = pick(&s, any && jf.p2p && rng_next(&s) % 2, 0);
  jf.p2pbad.step -= jf.p2pbad.step % 7; /* a step with send/recv */
  jf.lag = (int)(rng_next(&s) % LAG_MAX);
  print_message("seed %llu:%s dtype %d@%d count %d@%d stop %d@%d refuse %d@%d site %d@%d lost %d@%d early %d@%d "
                "no-index %d cut %d copy %d p2p %d (bad %d@%d) lag %d\n",
                (unsigned long long)seed, healthy ? " healthy" : "", jf.dtype.rank, jf.dtype.step, jf.count.rank,
                jf.count.step, jf.stop.rank, jf.stop.step, jf.refuse.rank, jf.refuse.step, jf.site.rank, jf.site.step,
                jf.lost.rank, jf.lost.step, jf.early.rank, jf.early.step, jf.no_index, jf.cut, jf.copy, jf.p2p,
                jf.p2pbad.rank, jf.p2pbad.step, jf.lag);
  char dir[256];
  assert_int_equal(nsp_case_mkdtemp(dir, sizeof dir), 0);
  generated_job(dir, seed, &jf);
  uint64_t skipped = 0;
  char *rep = same_reports(dir, &skipped);
  print_message("  %llu frames stepped over\n", (unsigned long long)skipped);
  if (jf.dtype.rank >= 0 && jf.dtype.rank != jf.stop.rank && jf.dtype.rank != jf.cut)
    assert_non_null(strstr(rep, "mismatch"));
  /* With every rank indexed, nothing cut and no send/recv groups, most
   * frames are stepped over: the index is used, not just harmless. */
  if (jf.no_index < 0 && jf.cut < 0) assert_true(skipped > 0);
  if (healthy) assert_true(skipped >= (uint64_t)RANKS * 4);
  free(rep);
  nsp_case_rmdir(dir);
}

static void test_generated_jobs(void **state) {
  (void)state;
  const char *env = getenv("NSP_TEST_SEED");
  if (env && *env) {
    one_seed(strtoull(env, NULL, 0), 0);
    return;
  }
  one_seed(1, 1);
  one_seed(7, 1);
  for (uint64_t seed = 1; seed <= 16; seed++) one_seed(seed * 0x9e3779b9ull, 0);
}

/* A collective written as given (seq, flags), on comm index comm. */
static void raw_coll(struct nsp_tracegen *g, uint32_t comm, uint64_t seq, uint32_t flags) {
  struct nsp_rec r;
  memset(&r, 0, sizeof r);
  r.kind = NSP_REC_CALL;
  r.api = NSP_API_AllReduce;
  r.comm = comm;
  r.stream = 0x7f0000001000ull;
  r.peer = -1;
  r.redop = ncclSum;
  r.dtype = ncclFloat32;
  r.count = 1024;
  r.seq = seq;
  r.flags = flags;
  uint64_t t = nsp_tracegen_now(g);
  r.t_enter = t;
  r.t_exit = t + 100;
  assert_int_equal(nsp_tracegen_record(g, &r), 0);
  nsp_tracegen_set_time(g, t + 1000);
}

/* 4 ranks of `calls` all-reduces on the world, frames of 500 records;
 * rank 1 as `rank1` says: 0 healthy; 1 its seq 1000 never completes, its
 * later calls untracked, and a call on comm index 5, which no COMM record
 * names, right after it completes 600 calls later (the analyzer queues
 * no call it has no member for; neither may the index's table). */
static void small_job(const char *dir, int calls, int rank1) {
  for (int r = 0; r < 4; r++) {
    struct nsp_tracegen *g = nsp_tracegen_create("node", 5000u + (uint32_t)r, r);
    assert_non_null(g);
    nsp_tracegen_set_tracking(g, NSP_TRACK_COMPLETION);
    nsp_tracegen_set_frame_records(g, 500);
    nsp_tracegen_set_auto_complete(g, 1, 1000);
    uint32_t w = nsp_tracegen_comm(g, 0x1000, r, 4);
    int owed = -1;
    for (int st = 1; st <= calls; st++) {
      if (r != 1 || !rank1 || st < 1000) {
        nsp_tracegen_coll(g, NSP_API_AllReduce, w, 1024, ncclFloat32, ncclSum, -1);
        continue;
      }
      if (st == 1000) {
        nsp_tracegen_set_auto_complete(g, 0, 0);
        raw_coll(g, w, (uint64_t)st, 0); /* never completes */
        raw_coll(g, 5, 1, 0);            /* on no communicator's comm index */
        owed = 600;
        continue;
      }
      raw_coll(g, w, (uint64_t)st, NSP_CALL_UNTRACKED);
      if (owed > 0 && --owed == 0) {
        uint64_t t = nsp_tracegen_now(g);
        assert_int_equal(nsp_tracegen_completion(g, 5, NSP_API_AllReduce, 1, -1, 0, NSP_DONE_OK, t, t + 100, t + 200),
                         0);
      }
    }
    assert_int_equal(nsp_tracegen_write(g, dir, SIZE_MAX, NULL, 0), 0);
    nsp_tracegen_destroy(g);
  }
}

static char *read_all(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  *len = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc(*len ? *len : 1);
  assert_non_null(b);
  assert_int_equal(fread(b, 1, *len, f), *len);
  fclose(f);
  return b;
}

/* Two loads (two directories added one after the other): the second
 * holds one more process claiming rank 2, float16 at seq 3000.  The
 * first load's plan could not know it; the job reads everything again
 * as one load, and finds what a full read finds. */
static char *two_dirs_reports(const char *a, const char *b, int full) {
  struct nsp_job *job = nsp_case_job(0);
  assert_non_null(job);
  assert_int_equal(nsp_job_set_full_read(job, full), 0);
  assert_true(nsp_job_add_path(job, a) > 0);
  assert_true(nsp_job_add_path(job, b) > 0);
  assert_int_equal(nsp_job_analyze(job), 0);
  char *buf = nsp_report_capture_all(job, 0);
  nsp_job_destroy(job);
  return buf;
}

static void test_two_loads(void **state) {
  (void)state;
  char a[256], b[256];
  assert_int_equal(nsp_case_mkdtemp(a, sizeof a), 0);
  assert_int_equal(nsp_case_mkdtemp(b, sizeof b), 0);
  small_job(a, 8000, 0);
  struct nsp_tracegen *g = nsp_tracegen_create("other", 9102, 2);
  assert_non_null(g);
  nsp_tracegen_set_tracking(g, NSP_TRACK_COMPLETION);
  nsp_tracegen_set_frame_records(g, 500);
  nsp_tracegen_set_auto_complete(g, 1, 1000);
  uint32_t w = nsp_tracegen_comm(g, 0x1000, 2, 4);
  for (int st = 1; st <= 8000; st++)
    nsp_tracegen_coll(g, NSP_API_AllReduce, w, 1024, st == 3000 ? ncclFloat16 : ncclFloat32, ncclSum, -1);
  assert_int_equal(nsp_tracegen_write(g, b, SIZE_MAX, NULL, 0), 0);
  nsp_tracegen_destroy(g);
  char *full = two_dirs_reports(a, b, 1), *ix = two_dirs_reports(a, b, 0);
  if (strcmp(full, ix)) nsp_report_first_diff("two loads: a full read's report and the index's", full, ix);
  assert_string_equal(full, ix);
  assert_non_null(strstr(full, "passed float16"));
  free(full);
  free(ix);
  nsp_case_rmdir(a);
  nsp_case_rmdir(b);
}

/* What a new user's trial found (session 11): each read both ways. */
static void test_trial_cases(void **state) {
  (void)state;
  char dir[256], path[512];
  /* A completion of a call the analyzer never queued does not complete
   * another call of its stream: the call that never completed is found. */
  assert_int_equal(nsp_case_mkdtemp(dir, sizeof dir), 0);
  small_job(dir, 12000, 1);
  char *rep = same_reports(dir, NULL);
  assert_non_null(strstr(rep, "seq 1000 all-reduce on communicator 0000000000001000 did not complete"));
  free(rep);
  nsp_case_rmdir(dir);

  /* A data frame damaged where the index would step over it: the damage
   * is reported as a full read reports it (the index's hash of the
   * frame's bytes no longer matches: indexes stop there). */
  assert_int_equal(nsp_case_mkdtemp(dir, sizeof dir), 0);
  small_job(dir, 30000, 0);
  snprintf(path, sizeof path, "%s/node.5001.rank1.ncclspy", dir);
  size_t len;
  char *b = read_all(path, &len);
  size_t at = len / 3; /* inside some data frame in the middle */
  memset(b + at, 0xAA, 40);
  write_file(dir, "node.5001.rank1.ncclspy", b, len);
  free(b);
  uint64_t skipped = 0;
  rep = same_reports(dir, &skipped);
  assert_non_null(strstr(rep, "rank 1's trace is damaged at byte"));
  assert_true(skipped > 0); /* the other ranks' frames still are */
  free(rep);
  nsp_case_rmdir(dir);

  /* A copy of rank 1's trace that the loader refuses (no ncclspy header),
   * listed first: it claims no rank, and rank 1's real trace is read. */
  assert_int_equal(nsp_case_mkdtemp(dir, sizeof dir), 0);
  small_job(dir, 12000, 0);
  snprintf(path, sizeof path, "%s/node.5001.rank1.ncclspy", dir);
  b = read_all(path, &len);
  b[0] = 0;
  write_file(dir, "aaa-copy.ncclspy", b, len);
  free(b);
  rep = same_reports(dir, NULL);
  assert_non_null(strstr(rep, "aaa-copy.ncclspy: not read"));
  free(rep);
  nsp_case_rmdir(dir);
}

/* Counts the frames a walk visits, and where the last data frame starts. */
struct walk_count {
  size_t n, last_off;
};
static int count_frame(void *ctx, const struct nsp_frame_index *ix, size_t data_off) {
  (void)ix;
  struct walk_count *c = ctx;
  c->n++;
  c->last_off = data_off;
  return 0;
}

/* nsp_index_walk reads a file through a window of 1 MiB: over a trace of
 * several MiB (random counts, so it does not compress away) it visits the
 * frames a walk of the same bytes in memory does, to the end; a byte
 * changed in a data frame past the first window stops both at the same
 * frame. */
static void test_walk_window(void **state) {
  (void)state;
  struct nsp_tracegen *g = nsp_tracegen_create("node", 7000, 0);
  assert_non_null(g);
  nsp_tracegen_set_tracking(g, NSP_TRACK_COMPLETION | NSP_TRACK_TIMING);
  nsp_tracegen_set_frame_records(g, 4096);
  nsp_tracegen_set_auto_complete(g, 1, 1000);
  uint32_t w = nsp_tracegen_comm(g, 0x2000, 0, 1);
  uint64_t rng = 12345;
  for (int st = 0; st < 400000; st++) {
    nsp_tracegen_set_time(g, nsp_tracegen_now(g) + (nsp_case_rng(&rng) & 0xffff));
    nsp_tracegen_coll(g, NSP_API_AllReduce, w, 1 + (nsp_case_rng(&rng) & 0xfffff), ncclFloat32, ncclSum, -1);
  }
  const uint8_t *data;
  size_t len;
  assert_int_equal(nsp_tracegen_bytes(g, &data, &len), 0);
  assert_true(len > (3u << 20)); /* several windows */
  uint8_t *copy = malloc(len);
  assert_non_null(copy);
  memcpy(copy, data, len);
  nsp_tracegen_destroy(g);
  char dir[256], path[512];
  assert_int_equal(nsp_case_mkdtemp(dir, sizeof dir), 0);
  snprintf(path, sizeof path, "%s/big.ncclspy", dir);
  for (int damaged = 0; damaged <= 1; damaged++) {
    struct nsp_frame_index scratch;
    memset(&scratch, 0, sizeof scratch);
    struct walk_count mem = {0, 0}, file = {0, 0};
    size_t mem_end = nsp_index_walk_mem(copy, len, NSP_HEADER_SIZE, 1, SIZE_MAX, &scratch, count_frame, &mem);
    write_file(dir, "big.ncclspy", copy, len);
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    size_t file_end = nsp_index_walk(fd, len, NSP_HEADER_SIZE, 1, SIZE_MAX, &scratch, count_frame, &file);
    close(fd);
    nsp_frame_index_free(&scratch);
    assert_int_equal(file.n, mem.n);
    assert_int_equal(file_end, mem_end);
    if (!damaged) {
      assert_int_equal(mem_end, len);
      assert_true(mem.n > 100);
      /* A byte in the middle of the data frame that starts past 1.5 MiB. */
      struct walk_count upto = {0, 0};
      memset(&scratch, 0, sizeof scratch);
      size_t past = 0;
      for (size_t k = 1; k <= mem.n && !past; k++) {
        upto.n = 0;
        nsp_index_walk_mem(copy, len, NSP_HEADER_SIZE, 0, k, &scratch, count_frame, &upto);
        if (upto.last_off > (3u << 19)) past = upto.last_off;
      }
      nsp_frame_index_free(&scratch);
      assert_true(past > 0);
      copy[past + 100] ^= 0x5a;
    } else {
      assert_true(mem_end < len);
      assert_true(mem.n > 10 && mem.n < 1000);
    }
  }
  free(copy);
  nsp_case_rmdir(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_case),
      cmocka_unit_test(test_generated_jobs),
      cmocka_unit_test(test_trial_cases),
      cmocka_unit_test(test_two_loads),
      cmocka_unit_test(test_walk_window),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
