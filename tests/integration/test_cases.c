/* test_cases.c - the failure catalogue (rows c01-c10 of the project's
 * cases/README.md), end to end: a multi-process job on the CPU stand-in
 * for NCCL under libncclspy.so, then the analyzer on its traces.  Each test
 * asserts the finding a user would act on: its kind, communicator,
 * sequence number and the ranks on each side.
 *
 * usage: test_cases NSP_LAUNCH NSP_CASES LIBNCCLSPY CASE STANDIN_NCCL STANDIN_HOST
 * (meson runs one process per case, so cases run in parallel). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <signal.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>
#include <sys/wait.h>
#include <dirent.h>
#include <unistd.h>

#include <json-c/json.h>

#include "nsp_config.h"
#include "nsp_analyze.h"
#include "nsp_names.h"
#include "nsp_reader.h"
#include "nsp_report.h"
#include "tests/nsp_report_capture.h"

static const char *launch_exe, *cases_exe, *shim_so;
static const char *standin_nccl_so, *standin_host_so; /* the env tests' extra stand-ins */

struct run {
  char dir[64];
  struct nsp_job *job;
  int launch_status; /* nsp_launch's exit status */
};

/* What a job runs with (run_job_ex). */
struct job_opts {
  int nranks;
  int ntraces;          /* traces expected; 0: nranks */
  int limit_s;          /* the launcher ends the job after this (exit 124) */
  int term_ms;          /* > 0: SIGTERM to the launcher after this many ms */
  const char *all_env;  /* "VAR=VALUE" for every rank (nsp_launch -e), ';'-separated */
  const char *rank_env; /* "R:VAR=VALUE" for one rank (nsp_launch -r), ';'-separated */
  int fake_hosts;       /* preload the host stand-in after the shim (NSP_STANDIN_HOST) */
  int live_ms;          /* > 0: analyse the job this many ms after it starts, while it
                           runs; then wait for it to end (live_end_ms > 0: SIGTERM to
                           the launcher after that many ms more, as a scheduler would) */
  int live_end_ms;
  int none;             /* the job must give no finding (healthy) */
  int some_traces;      /* killed early: at least one trace, not necessarily every rank's */
  const char *into;     /* run into this directory (another run's), not a new one */
};

static void run_job_ex(struct run *r, const char *name, const struct job_opts *o);

/* Runs `nranks` ranks of case `name` under the shim and analyses them.
 * The launcher ends the job after limit_s seconds (exit 124); when
 * term_ms > 0 the launcher gets SIGTERM after that many ms, as a scheduler
 * ending a hung job would do.  rank_env: "R:VAR=VALUE" set for one rank
 * only (nsp_launch -r), or NULL; several, separated by ';'. */
static void run_job(struct run *r, const char *name, int nranks, int limit_s, int term_ms,
                    const char *rank_env) {
  struct job_opts o = {.nranks = nranks, .limit_s = limit_s, .term_ms = term_ms, .rank_env = rank_env};
  run_job_ex(r, name, &o);
}

static void run_case(struct run *r, const char *name, int nranks) { run_job(r, name, nranks, 120, 0, NULL); }

/* Appends "OPT item" to argv for each ';'-separated item of list (copied
 * into buf). */
static int add_opts(char **argv, int k, int max, const char *opt, const char *list, char *buf, size_t len) {
  if (!list) return k;
  snprintf(buf, len, "%s", list);
  for (char *save = NULL, *e = strtok_r(buf, ";", &save); e && k + 2 < max; e = strtok_r(NULL, ";", &save)) {
    argv[k++] = (char *)opt;
    argv[k++] = e;
  }
  return k;
}

/* In a child: nsp_launch runs `nranks` ranks of case `name` into dir
 * with the job's options (run_job_ex); never returns. */
static void exec_launch(const char *dir, const char *name, const struct job_opts *o) {
  char n[16], limit[16], env_preload[8400], env_dir[128], env_uid[128];
  snprintf(n, sizeof n, "%d", o->nranks);
  snprintf(limit, sizeof limit, "%d", o->limit_s);
  if (o->fake_hosts)
    snprintf(env_preload, sizeof env_preload, "LD_PRELOAD=%s %s", shim_so, standin_host_so);
  else
    snprintf(env_preload, sizeof env_preload, "LD_PRELOAD=%s", shim_so);
  snprintf(env_dir, sizeof env_dir, "NCCLSPY_DIR=%s", dir);
  snprintf(env_uid, sizeof env_uid, "NSP_UID_FILE=%s/uid", dir);
  /* The stand-in gives up on data that never comes after 3 s. */
  setenv("NSP_STANDIN_TIMEOUT_MS", "3000", 0); /* unless the test set one */
  /* The ranks' own output goes beside the traces, out of the TAP stream. */
  char log[128];
  snprintf(log, sizeof log, "%s/ranks.log", dir);
  if (!freopen(log, "a", stdout)) _exit(126);
  char *argv[200] = {(char *)launch_exe, "-n", n, "-t", limit, "-e", env_preload, "-e", env_dir,
                     "-e", env_uid};
  int k = 11;
  if (!strcmp(name, "c10") || !strcmp(name, "late-skip")) { /* many frames: the index has something to step over */
    argv[k++] = "-e";
    argv[k++] = "NCCLSPY_FLUSH_MS=20";
  }
  static char all[4096], ranks[8192];
  k = add_opts(argv, k, 194, "-e", o->all_env, all, sizeof all);
  k = add_opts(argv, k, 194, "-r", o->rank_env, ranks, sizeof ranks);
  argv[k++] = "--";
  argv[k++] = (char *)cases_exe;
  argv[k++] = (char *)name;
  argv[k] = NULL;
  execv(launch_exe, argv);
  _exit(127);
}

/* The text and JSON reports of dir, "now" fixed, read through the
 * traces' indexes or in full (caller frees); *skipped: frames stepped over. */
static char *reports_of(const char *dir, int64_t now, int full, uint64_t *skipped) {
  struct nsp_job *job = nsp_job_create();
  assert_non_null(job);
  assert_int_equal(nsp_job_set_now(job, now), 0);
  assert_int_equal(nsp_job_set_full_read(job, full), 0);
  nsp_job_add_path(job, dir);
  assert_int_equal(nsp_job_analyze(job), 0);
  *skipped = nsp_job_frames_stepped_over(job);
  char *buf = nsp_report_capture_all(job, 0);
  nsp_job_destroy(job);
  return buf;
}

/* What the real shim wrote reads the same through its indexes as in full
 * (issue #16); returns the frames the index let the analyzer step over. */
static uint64_t same_as_full_read(const char *dir) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  int64_t now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
  uint64_t skipped, none;
  char *ix = reports_of(dir, now, 0, &skipped), *full = reports_of(dir, now, 1, &none);
  assert_int_equal(none, 0);
  if (strcmp(ix, full)) nsp_report_first_diff("the index's report and a full read's", ix, full);
  assert_string_equal(ix, full);
  free(ix);
  free(full);
  return skipped;
}

static void run_job_ex(struct run *r, const char *name, const struct job_opts *o) {
  if (o->into) {
    snprintf(r->dir, sizeof r->dir, "%s", o->into);
  } else {
    snprintf(r->dir, sizeof r->dir, "/tmp/nsp-case-%s-XXXXXX", name);
    assert_non_null(mkdtemp(r->dir));
  }
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) exec_launch(r->dir, name, o);
  if (o->term_ms > 0) {
    struct timespec ts = {o->term_ms / 1000, (long)(o->term_ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    kill(pid, SIGTERM);
  }
  if (o->live_ms > 0) {
    /* Analysed while it runs, as a user would on a job that seems stuck. */
    struct timespec ts = {o->live_ms / 1000, (long)(o->live_ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    r->job = nsp_job_create();
    assert_non_null(r->job);
    assert_int_equal(nsp_job_add_path(r->job, r->dir), o->ntraces ? o->ntraces : o->nranks);
    assert_int_equal(nsp_job_analyze(r->job), 0);
    for (size_t i = 0; i < nsp_job_nfindings(r->job); i++)
      print_message("# live finding %zu: %.900s\n", i, nsp_job_finding(r->job, i)->message);
    print_message("# live summary: %.900s\n", nsp_job_summary(r->job));
    if (o->live_end_ms > 0) {
      struct timespec te = {o->live_end_ms / 1000, (long)(o->live_end_ms % 1000) * 1000000L};
      nanosleep(&te, NULL);
      kill(pid, SIGTERM);
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    r->launch_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
    return;
  }
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  r->launch_status = WEXITSTATUS(status);
  assert_int_not_equal(r->launch_status, 127);

  r->job = nsp_job_create();
  assert_non_null(r->job);
  if (o->some_traces) nsp_job_add_path(r->job, r->dir); /* any number, even none (a note says so) */
  else assert_int_equal(nsp_job_add_path(r->job, r->dir), o->ntraces ? o->ntraces : o->nranks);
  assert_int_equal(nsp_job_analyze(r->job), 0);
  for (size_t i = 0; i < nsp_job_nfindings(r->job); i++)
    print_message("# finding %zu: %.900s\n", i, nsp_job_finding(r->job, i)->message);
  /* Every case but the healthy ones must find something. */
  if (strcmp(name, "c10") != 0 && !o->none) assert_true(nsp_job_nfindings(r->job) > 0);
  for (size_t i = 0; i < nsp_job_nnotes(r->job); i++) print_message("# note: %.900s\n", nsp_job_note(r->job, i));
  /* (Not where another job may still be writing: the two reads would
   * see different files.) */
  if (!o->into) {
    uint64_t skipped = same_as_full_read(r->dir);
    print_message("# %llu frames stepped over through the index\n", (unsigned long long)skipped);
  }
}

static void run_done(struct run *r) {
  nsp_job_destroy(r->job);
  if (!getenv("NSP_KEEP")) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", r->dir);
    assert_int_equal(system(cmd), 0);
  }
}

/* The communicator with no parent and nranks n (the world). */
static const struct nsp_comm_info *world(struct run *r, int n) {
  for (size_t i = 0; i < nsp_job_ncomms(r->job); i++) {
    const struct nsp_comm_info *c = nsp_job_comm(r->job, i);
    if (!c->parent_id && c->nranks == n) return c;
  }
  fail_msg("no world communicator of %d ranks", n);
  return NULL;
}

/* The first finding of a kind; fails when there is none. */
static const struct nsp_finding *first_of(struct run *r, int kind) {
  for (size_t i = 0; i < nsp_job_nfindings(r->job); i++)
    if (nsp_job_finding(r->job, i)->kind == kind) return nsp_job_finding(r->job, i);
  fail_msg("no %s finding", nsp_finding_kind_name(kind));
  return NULL;
}

/* Asserts a side holds exactly these ranks ("0,2"), as the report prints. */
static void assert_side(const struct nsp_side *s, const char *ranks) {
  char buf[256];
  nsp_format_ranks(buf, sizeof buf, s->ranks, s->nranks);
  assert_string_equal(buf, ranks);
}

/* Asserts the report's first line (issue #13 item 8): pattern with the
 * communicator id in 16 hex digits for its "@". */
static void assert_headline(struct run *r, const char *pattern, uint64_t comm_id) {
  char want[512];
  const char *at = strchr(pattern, '@');
  assert_non_null(at);
  snprintf(want, sizeof want, "%.*s%016llx%s", (int)(at - pattern), pattern, (unsigned long long)comm_id, at + 1);
  print_message("# headline: %s\n", nsp_job_headline(r->job));
  assert_string_equal(nsp_job_headline(r->job), want);
}

static void test_c01(void **state) {
  struct run r;
  run_case(&r, "c01", 2);
  const struct nsp_finding *f = nsp_job_finding(r.job, 0);
  assert_int_equal(f->kind, NSP_FIND_DTYPE_MISMATCH);
  assert_int_equal(f->comm_id, world(&r, 2)->id);
  assert_int_equal(f->seq, 2);
  assert_int_equal(f->nsides, 2);
  assert_side(&f->sides[0], "0");
  assert_int_equal(f->sides[0].call.dtype, ncclFloat16);
  assert_side(&f->sides[1], "1");
  assert_int_equal(f->sides[1].call.dtype, ncclFloat32);
  assert_int_equal(f->sides[0].call.count, 1024);
  assert_headline(&r, "seq 2 all-reduce on communicator @: rank 0 passed float16 where rank 1 passed float32 "
                      "(dtype mismatch)", f->comm_id);
  /* The NCCL path is recorded canonical (the ranks reach the stand-in
   * through an rpath with "..": it must not show). */
  for (size_t i = 0; i < nsp_job_ntraces(r.job); i++) {
    const char *p = nsp_job_trace(r.job, i)->nccl_path;
    char canon[PATH_MAX];
    assert_non_null(p);
    assert_non_null(realpath(p, canon));
    assert_string_equal(p, canon);
  }
  run_done(&r);
}

static void test_c02(void **state) {
  struct run r;
  run_case(&r, "c02", 4);
  const struct nsp_finding *f = nsp_job_finding(r.job, 0);
  assert_int_equal(f->kind, NSP_FIND_DTYPE_MISMATCH);
  assert_int_equal(f->comm_id, world(&r, 4)->id);
  assert_int_equal(f->seq, 1);
  assert_int_equal(f->nsides, 2);
  assert_side(&f->sides[0], "0,2");
  assert_int_equal(f->sides[0].call.dtype, ncclBfloat16);
  assert_side(&f->sides[1], "1,3");
  assert_int_equal(f->sides[1].call.dtype, ncclFloat32);
  assert_int_equal(f->sides[1].call.count, 1u << 20);
  run_done(&r);
}

static void test_c03(void **state) {
  struct run r;
  run_case(&r, "c03", 4);
  const struct nsp_finding *f = nsp_job_finding(r.job, 0);
  assert_int_equal(f->kind, NSP_FIND_KIND_MISMATCH);
  assert_int_equal(f->comm_id, world(&r, 4)->id);
  assert_int_equal(f->seq, 11);
  assert_int_equal(f->nsides, 2);
  /* Each side is named with the call it made, not blamed by majority. */
  assert_side(&f->sides[0], "0");
  assert_int_equal(f->sides[0].call.api, NSP_API_AllGather);
  assert_side(&f->sides[1], "1-3");
  assert_int_equal(f->sides[1].call.api, NSP_API_AllReduce);
  assert_headline(&r, "seq 11 on communicator @: rank 0 called all-gather where ranks 1-3 called all-reduce "
                      "(kind mismatch)", f->comm_id);
  run_done(&r);
}

static void test_c04(void **state) {
  struct run r;
  run_case(&r, "c04", 4);
  const struct nsp_finding *f = nsp_job_finding(r.job, 0);
  assert_int_equal(f->kind, NSP_FIND_KIND_MISMATCH);
  assert_int_equal(f->seq, 33);
  assert_int_equal(f->comm_id, world(&r, 4)->id);
  assert_int_equal(f->nodd, 1);
  assert_int_equal(f->odd_ranks[0], 2);
  assert_side(&f->sides[0], "0-1,3");
  assert_int_equal(f->sides[0].call.api, NSP_API_AllReduce);
  assert_side(&f->sides[1], "2");
  assert_int_equal(nsp_api_coll_class(f->sides[1].call.api), NSP_API_Broadcast);
  assert_int_equal(f->sides[1].call.peer, 0);
  run_done(&r);
}

static void test_c05(void **state) {
  struct run r;
  run_case(&r, "c05", 2);
  const struct nsp_finding *f = nsp_job_finding(r.job, 0);
  assert_int_equal(f->kind, NSP_FIND_COUNT_MISMATCH);
  assert_int_equal(f->comm_id, world(&r, 2)->id);
  assert_int_equal(f->nsides, 2);
  assert_int_equal(f->sides[0].call.count, 409600);
  assert_int_equal(f->sides[1].call.count, 409598);
  assert_side(&f->sides[0], "0");
  assert_side(&f->sides[1], "1");
  assert_headline(&r, "seq 1 all-reduce on communicator @: rank 0 passed count 409600 where rank 1 passed "
                      "count 409598 (count mismatch)", f->comm_id);
  run_done(&r);
}

static void test_c06(void **state) {
  struct run r;
  run_case(&r, "c06", 3);
  const struct nsp_finding *f = nsp_job_finding(r.job, 0);
  assert_int_equal(f->kind, NSP_FIND_ROOT_MISMATCH);
  assert_int_equal(f->comm_id, world(&r, 3)->id);
  assert_side(&f->sides[0], "0-1");
  assert_int_equal(f->sides[0].call.peer, 0);
  assert_side(&f->sides[1], "2");
  assert_int_equal(f->sides[1].call.peer, 1);
  assert_int_equal(f->nodd, 1);
  assert_int_equal(f->odd_ranks[0], 2);
  run_done(&r);
}

static void test_c07(void **state) {
  struct run r;
  run_case(&r, "c07", 4);
  const struct nsp_finding *f = nsp_job_finding(r.job, 0);
  assert_int_equal(f->kind, NSP_FIND_ERROR);
  assert_int_equal(f->seq, 50);
  assert_int_equal(f->nodd, 1);
  assert_int_equal(f->odd_ranks[0], 3);
  /* The origin first, with NCCL's own words; the others later. */
  assert_side(&f->sides[0], "3");
  assert_int_equal(f->sides[0].call.result, ncclSystemError);
  assert_non_null(f->sides[0].procs[0].call.last_error);
  assert_non_null(strstr(f->sides[0].procs[0].call.last_error, "connection reset by peer"));
  assert_true(f->nsides >= 2);
  assert_side(&f->sides[1], "0-2");
  assert_int_equal(f->sides[1].call.result, ncclRemoteError);
  for (size_t i = 0; i < f->sides[1].nranks; i++)
    assert_true(f->sides[1].procs[i].call.time_ns >= f->sides[0].procs[0].call.time_ns);
  /* NCCL's words as the stand-in injects them (NSP_CASES_C07_FAIL). */
  char want[512];
  snprintf(want, sizeof want, "first error on communicator @: rank 3 all-reduce seq 50 returned ncclSystemError (\"%s\") (error)",
           f->sides[0].procs[0].call.last_error);
  assert_headline(&r, want, f->comm_id);
  run_done(&r);
}

static void test_c08(void **state) {
  struct run r;
  run_case(&r, "c08", 2);
  const struct nsp_finding *f = first_of(&r, NSP_FIND_P2P_UNMATCHED);
  assert_ptr_equal(f, nsp_job_finding(r.job, 0));
  assert_int_equal(f->comm_id, world(&r, 2)->id);
  assert_int_equal(f->src, 0);
  assert_int_equal(f->dst, 1);
  assert_int_equal(f->seq, 3); /* send #3 */
  run_done(&r);
}

static void test_c09(void **state) {
  struct run r;
  run_case(&r, "c09", 4);
  const struct nsp_comm_info *w = world(&r, 4);
  const struct nsp_finding *f = nsp_job_finding(r.job, 0);
  assert_int_equal(f->kind, NSP_FIND_DTYPE_MISMATCH);
  assert_non_null(f->comm);
  assert_int_equal(f->comm->parent_id, w->id);
  assert_int_equal(f->comm->color, 1);
  assert_int_equal(f->comm->nranks, 2);
  /* Child ranks 0 and 1 are world ranks 2 and 3: rank 3 used float16. */
  assert_side(&f->sides[0], "0");
  assert_int_equal(f->sides[0].call.dtype, ncclFloat32);
  assert_side(&f->sides[1], "1");
  assert_int_equal(f->sides[1].call.dtype, ncclFloat16);
  assert_int_equal(f->sides[1].procs[0].rank, 1);
  /* The world and the {0,1} child are clean of mismatches. */
  for (size_t i = 0; i < nsp_job_nfindings(r.job); i++) {
    const struct nsp_finding *g = nsp_job_finding(r.job, i);
    if (g->kind <= NSP_FIND_P2P_UNMATCHED) assert_int_equal(g->comm_id, f->comm_id);
  }
  run_done(&r);
}

static void test_c10(void **state) {
  struct run r;
  run_case(&r, "c10", 4);
  assert_int_equal(r.launch_status, 0);
  assert_int_equal(nsp_job_nfindings(r.job), 0);
  /* World plus the two halves of the split, all traced on every rank. */
  assert_true(nsp_job_ncomms(r.job) >= 3);
  assert_true(world(&r, 4)->ncoll >= 4 * 1000);
  /* The headline says what the summary says: nothing found, in what. */
  unsigned long long ncoll = 0, np2p = 0;
  for (size_t i = 0; i < nsp_job_ncomms(r.job); i++) {
    ncoll += nsp_job_comm(r.job, i)->ncoll;
    np2p += nsp_job_comm(r.job, i)->np2p;
  }
  char want[256];
  snprintf(want, sizeof want, "No problems found in 4 traces (%zu communicators, %llu collective calls, %llu send/recv calls).",
           nsp_job_ncomms(r.job), ncoll, np2p);
  assert_string_equal(nsp_job_headline(r.job), want);
  run_done(&r);
}

/* COMPLETION records in the traces of dir: how many, and how many of
 * them carry `flag`. */
static void count_completions(const char *dir, unsigned flag, long *all, long *with) {
  *all = *with = 0;
  DIR *d = opendir(dir);
  assert_non_null(d);
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t len = strlen(e->d_name);
    if (len < 8 || strcmp(e->d_name + len - 8, ".ncclspy")) continue;
    char path[4200], err[256];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    struct nsp_reader *rd = nsp_reader_open(path, err, sizeof err);
    assert_non_null(rd);
    struct nsp_rec rec;
    while (nsp_reader_next(rd, &rec) == 1)
      if (rec.kind == NSP_REC_COMPLETION) {
        (*all)++;
        *with += (rec.flags & flag) != 0;
      }
    nsp_reader_destroy(rd);
  }
  closedir(d);
}

/* c11 on streams (the CUDA stand-in): rank 1 sleeps before seq 5 while
 * rank 0 waits inside it, and the job's time limit kills both. */
static void test_c11(void **state) {
  struct run r;
  setenv("NSP_C11_SLEEP_S", "60", 1);
  setenv("NSP_STANDIN_TIMEOUT_MS", "60000", 1); /* the job's limit comes first */
  run_job(&r, "c11", 2, 6, 0, NULL);
  unsetenv("NSP_STANDIN_TIMEOUT_MS");
  /* Seq 1-4 finished on both ranks, and the traces say so. */
  long all, ok;
  count_completions(r.dir, NSP_DONE_OK, &all, &ok);
  print_message("# %ld completions, %ld ok\n", all, ok);
  assert_true(ok >= 8);
  assert_int_equal(r.launch_status, 124);
  const struct nsp_finding *f = nsp_job_finding(r.job, 0);
  assert_int_equal(f->kind, NSP_FIND_HANG);
  assert_int_equal(f->comm_id, world(&r, 2)->id);
  assert_int_equal(f->seq, 5);
  /* The rank to look at: rank 1, which never arrived; rank 0 waits. */
  assert_int_equal(f->nodd, 1);
  assert_int_equal(f->odd_ranks[0], 1);
  assert_side(&f->sides[0], "1");
  assert_side(&f->sides[1], "0");
  run_done(&r);
}

/* c10 on streams with completion tracked on ranks 0 and 2-3 but not on
 * rank 1 (NCCLSPY_TRACK=0: records only) and untimed on rank 2: a healthy
 * job, so no finding.  Rank 1's calls get no COMPLETION record; its CALL
 * records say so (NSP_CALL_UNTRACKED) and must not read as never
 * completed. */
static void test_c10_untracked(void **state) {
  struct job_opts o = {.nranks = 4,
                       .limit_s = 60,
                       .all_env = "NSP_CASES_STREAM=1",
                       .rank_env = "1:NCCLSPY_TRACK=0;2:NCCLSPY_TIMING=0"};
  struct run r;
  run_job_ex(&r, "c10", &o);
  assert_int_equal(r.launch_status, 0);
  long all, ok;
  count_completions(r.dir, NSP_DONE_OK, &all, &ok);
  print_message("# %ld completions, %ld ok\n", all, ok);
  assert_true(ok >= 3 * 1000); /* ranks 0, 2, 3: at least one per step */
  for (size_t i = 0; i < nsp_job_nfindings(r.job); i++)
    print_message("# unexpected finding: %.900s\n", nsp_job_finding(r.job, i)->message);
  assert_int_equal(nsp_job_nfindings(r.job), 0);
  /* The trace summary says which process did not track its calls. */
  for (size_t i = 0; i < nsp_job_ntraces(r.job); i++) {
    const struct nsp_trace_info *t = nsp_job_trace(r.job, i);
    print_message("# rank %d: %" PRIu64 " of %" PRIu64 " collective and send/recv calls (%" PRIu64 " calls) untracked\n",
                  t->rank, t->untracked_calls, t->work_calls, t->calls);
    if (t->rank == 1) {
      assert_true(t->untracked_calls >= 1000);
      /* all of them: the ratio the report prints is over these, not over
       * group and init calls, which are never tracked */
      assert_int_equal(t->untracked_calls, t->work_calls);
      assert_true(t->work_calls < t->calls);
    } else {
      assert_int_equal(t->untracked_calls, 0);
    }
  }
  run_done(&r);
}

/* A hang ended by SIGTERM: rank 1 never reaches seq 3. */
static void test_killed_hang(void **state) {
  struct run r;
  run_job(&r, "killed-hang", 2, 60, 2500, NULL);
  const struct nsp_finding *f = nsp_job_finding(r.job, 0);
  assert_int_equal(f->kind, NSP_FIND_HANG);
  assert_int_equal(f->seq, 3);
  assert_int_equal(f->nodd, 1);
  assert_int_equal(f->odd_ranks[0], 1);
  run_done(&r);
}

/* ---- issue #12: nothing unseen ------------------------------------------
 * Each case twice: as the stand-in's timeouts end it (3 s for collectives
 * and splits, 10 s for inits), and killed by SIGKILL (the launcher's time
 * limit) before any timeout fires, when every waiting rank is still inside
 * an NCCL call that never returns. */

/* NSP_STANDIN_TIMEOUT_MS long, the launcher's limit short: killed inside. */
static void run_killed(struct run *r, const char *name, int nranks, int ntraces, int limit_s) {
  struct job_opts o = {.nranks = nranks, .ntraces = ntraces, .limit_s = limit_s,
                       .all_env = "NSP_STANDIN_TIMEOUT_MS=60000"};
  run_job_ex(r, name, &o);
  assert_int_equal(r->launch_status, 124);
}

/* The trace of job rank k. */
static const struct nsp_trace_info *trace_of_rank(struct run *r, int k) {
  for (size_t i = 0; i < nsp_job_ntraces(r->job); i++)
    if (nsp_job_trace(r->job, i)->rank == k) return nsp_job_trace(r->job, i);
  fail_msg("no trace of rank %d", k);
  return NULL;
}

/* Asserts how job rank k ended (NSP_END_*). */
static void assert_end(struct run *r, int k, int state) {
  const struct nsp_trace_info *t = trace_of_rank(r, k);
  if (t->end.state != state)
    fail_msg("rank %d ended %s, not %s", k, nsp_end_state_name(t->end.state), nsp_end_state_name(state));
}

/* c03 killed: rank 0 returned from its all-gather at seq 11 (it got the
 * bytes it needed, wrong values: it aborts and exits 1, as a watchdog
 * would), ranks 1-3 wait inside their all-reduce at seq 11 until killed.
 * The kind mismatch at seq 11 comes first, with each side's call, not
 * "ranks 1-3 stopped at seq 10". */
static void test_c03_killed(void **state) {
  struct run r;
  run_killed(&r, "c03", 4, 4, 4);
  const struct nsp_finding *f = nsp_job_finding(r.job, 0);
  assert_int_equal(f->kind, NSP_FIND_KIND_MISMATCH);
  assert_int_equal(f->comm_id, world(&r, 4)->id);
  assert_int_equal(f->seq, 11);
  assert_int_equal(f->nsides, 2);
  assert_side(&f->sides[0], "0");
  assert_int_equal(f->sides[0].call.api, NSP_API_AllGather);
  assert_side(&f->sides[1], "1-3");
  assert_int_equal(f->sides[1].call.api, NSP_API_AllReduce);
  /* Ranks 1-3 are inside that all-reduce: their calls never returned (the
   * hang that follows from the mismatch says so). */
  const struct nsp_finding *h = first_of(&r, NSP_FIND_NEVER_COMPLETED);
  assert_int_equal(h->seq, 11);
  assert_int_equal(h->cause, 0); /* the mismatch */
  int in_flight = 0;
  for (size_t k = 0; k < h->nsides; k++) {
    char ranks[64];
    nsp_format_ranks(ranks, sizeof ranks, h->sides[k].ranks, h->sides[k].nranks);
    in_flight |= !strcmp(ranks, "1-3") && h->sides[k].call.in_flight;
  }
  assert_true(in_flight);
  assert_end(&r, 0, NSP_END_EXITED);
  for (int k = 1; k < 4; k++) assert_end(&r, k, NSP_END_KILLED);
  run_done(&r);
}

/* The comm-init-wait finding of no-split: ranks 0-2 wait in the world's
 * first split, rank 3 is the one to look at. */
static void assert_no_split(struct run *r, int killed) {
  const struct nsp_finding *f = first_of(r, NSP_FIND_COMM_INIT_WAIT);
  assert_int_equal(f->comm_id, world(r, 4)->id);
  assert_int_equal(f->nsides, 2);
  /* First the one to look at, then the ranks that wait for it. */
  assert_side(&f->sides[0], "3");
  assert_side(&f->sides[1], "0-2");
  if (killed) {
    /* Rank 3's last call: all-reduce seq 3 on the world, in flight. */
    assert_int_equal(f->sides[0].procs[0].call.api, NSP_API_AllReduce);
    assert_int_equal(f->sides[0].procs[0].call.seq, 3);
    assert_int_equal(f->sides[0].procs[0].call.in_flight, 1);
    assert_int_equal(nsp_job_finding(r->job, 0)->kind, NSP_FIND_COMM_INIT_WAIT);
  }
}

static void test_no_split(void **state) {
  struct run r;
  run_case(&r, "no-split", 4);
  assert_no_split(&r, 0);
  run_done(&r);
}

static void test_no_split_killed(void **state) {
  struct run r;
  run_killed(&r, "no-split", 4, 4, 4);
  assert_no_split(&r, 1);
  for (int k = 0; k < 4; k++) assert_end(&r, k, NSP_END_KILLED);
  run_done(&r);
}

/* no-init: rank 2 made no NCCL call, so it has no trace; ranks 0, 1 and 3
 * wait inside ncclCommInitRank for it. */
static void assert_no_init(struct run *r) {
  const struct nsp_finding *f = nsp_job_finding(r->job, 0);
  assert_int_equal(f->kind, NSP_FIND_COMM_INIT_WAIT);
  assert_true(f->nsides >= 1);
  assert_side(&f->sides[0], "0-1,3");
  assert_non_null(strstr(f->message, "rank 2"));
  /* The headline names the rank that never called it, too. */
  print_message("# headline: %s\n", nsp_job_headline(r->job));
  assert_non_null(strstr(nsp_job_headline(r->job), ": rank 2 never called it (no trace); ranks 0-1,3 wait inside it"));
}

static void test_no_init(void **state) {
  struct run r;
  struct job_opts o = {.nranks = 4, .ntraces = 3, .limit_s = 16};
  run_job_ex(&r, "no-init", &o);
  assert_no_init(&r);
  run_done(&r);
}

static void test_no_init_killed(void **state) {
  struct run r;
  run_killed(&r, "no-init", 4, 3, 4);
  assert_no_init(&r);
  assert_end(&r, 0, NSP_END_KILLED);
  run_done(&r);
}

/* abort-exit0: rank 1 aborted the world after seq 2 and exited 0; rank 0
 * waits at seq 3.  The finding names rank 1's abort and clean exit. */
static void assert_abort_exit0(struct run *r, int killed) {
  /* Rank 1 is the one that stopped at seq 2, rank 0 waits at seq 3. */
  const struct nsp_finding *f = nsp_job_finding(r->job, 0);
  print_message("# first: %s seq %llu\n", nsp_finding_kind_name(f->kind), (unsigned long long)f->seq);
  assert_int_equal(f->comm_id, world(r, 2)->id);
  assert_true(f->seq == 2 || f->seq == 3);
  assert_int_equal(f->nodd, 1);
  assert_int_equal(f->odd_ranks[0], 1);
  const struct nsp_proc *p1 = NULL;
  for (size_t s = 0; s < f->nsides; s++)
    for (size_t k = 0; k < f->sides[s].nranks; k++)
      if (nsp_job_trace(r->job, f->sides[s].procs[k].trace)->rank == 1) p1 = &f->sides[s].procs[k];
  assert_non_null(p1);
  assert_int_equal(p1->comm_end_api, NSP_API_CommAbort);
  assert_non_null(p1->end);
  assert_int_equal(p1->end->state, NSP_END_EXITED);
  assert_end(r, 1, NSP_END_EXITED);
  assert_end(r, 0, killed ? NSP_END_KILLED : NSP_END_EXITED);
}

static void test_abort_exit0(void **state) {
  struct run r;
  run_case(&r, "abort-exit0", 2);
  assert_abort_exit0(&r, 0);
  run_done(&r);
}

static void test_abort_exit0_killed(void **state) {
  struct run r;
  run_killed(&r, "abort-exit0", 2, 2, 4);
  assert_abort_exit0(&r, 1);
  run_done(&r);
}

/* A healthy job analysed while it runs: no finding, and a summary that
 * says the ranks are still running instead of "No problems found"; once
 * it ended, no finding and every rank exited cleanly. */
static void test_live_healthy(void **state) {
  struct run r;
  struct job_opts o = {.nranks = 2, .limit_s = 60, .live_ms = 2500, .none = 1, .all_env = "NSP_LIVE_S=6"};
  run_job_ex(&r, "live", &o);
  assert_int_equal(r.launch_status, 0);
  assert_int_equal(nsp_job_nfindings(r.job), 0);
  for (int k = 0; k < 2; k++) assert_end(&r, k, NSP_END_RUNNING);
  assert_null(strstr(nsp_job_summary(r.job), "No problems found"));
  assert_non_null(strstr(nsp_job_summary(r.job), "still running"));
  /* After the end. */
  nsp_job_destroy(r.job);
  r.job = nsp_job_create();
  assert_int_equal(nsp_job_add_path(r.job, r.dir), 2);
  assert_int_equal(nsp_job_analyze(r.job), 0);
  assert_int_equal(nsp_job_nfindings(r.job), 0);
  for (int k = 0; k < 2; k++) assert_end(&r, k, NSP_END_EXITED);
  run_done(&r);
}

/* A healthy job stopped while it runs (a scheduler's time limit: SIGTERM
 * to every rank at once, whose default action kills them), at three
 * moments: no finding, since ranks a call apart or in flight in their
 * last second were not stopped; every rank killed; the summary says so. */
static void test_killed_healthy(void **state) {
  /* c10 (every collective, send/recv rings, splits) runs for about half a
   * second here; live, 5 s of all-reduces 10 ms apart. */
  static const struct {
    const char *name;
    int at_ms;
  } at[] = {{"c10", 200}, {"c10", 350}, {"live", 1500}, {"live", 2600}};
  int killed = 0;
  for (size_t i = 0; i < sizeof at / sizeof *at; i++) {
    struct run r;
    /* Under a sanitizer some ranks may not have made their first call by
     * then: the traces there are. */
    struct job_opts o = {.nranks = 4, .limit_s = 60, .term_ms = at[i].at_ms, .none = 1, .some_traces = 1,
                         .all_env = "NSP_LIVE_S=5"};
    run_job_ex(&r, at[i].name, &o);
    print_message("# %s stopped at %d ms: %.900s\n", at[i].name, at[i].at_ms, nsp_job_summary(r.job));
    assert_int_equal(nsp_job_nfindings(r.job), 0);
    if (!nsp_job_ntraces(r.job)) { /* stopped before any rank made a call (a sanitizer's slow start) */
      assert_null(strstr(nsp_job_summary(r.job), "No problems found"));
      run_done(&r);
      continue;
    }
    /* Killed, unless the job was over first (a fast machine). */
    if (nsp_job_trace(r.job, 0)->end.state != NSP_END_EXITED) {
      killed++;
      /* Killed; or, for a process stopped before its first call left its
       * crash ring (a sanitizer's slow start), unknown. */
      for (size_t k = 0; k < nsp_job_ntraces(r.job); k++) {
        const struct nsp_trace_info *t = nsp_job_trace(r.job, k);
        if (t->rank < 0 && t->end.state == NSP_END_UNKNOWN) continue;
        assert_int_equal(t->end.state, NSP_END_KILLED);
      }
      assert_null(strstr(nsp_job_summary(r.job), "No problems found"));
      assert_non_null(strstr(nsp_job_summary(r.job), "ended without a clean exit"));
    }
    run_done(&r);
  }
  assert_true(killed >= 2); /* the live job is always stopped while it runs */
}

/* Rank 1 leaves the job with exit(3) at its 500th call (an uncaught
 * exception does exit(1)), rank 2 with _exit(4): neither is a clean exit.
 * Rank 1's EXIT record carries its status; rank 2 leaves its ring. */
static void test_exit_status(void **state) {
  struct run r;
  run_job(&r, "c10", 4, 60, 0, "1:NSP_CASES_DIE=exit@500;2:NSP_CASES_DIE=_exit@500");
  const struct nsp_trace_info *t1 = trace_of_rank(&r, 1), *t2 = trace_of_rank(&r, 2);
  assert_int_equal(t1->end.state, NSP_END_EXITED);
  assert_int_equal(t1->end.exit_status, 3);
  assert_int_equal(t2->end.state, NSP_END_KILLED);
  const char *sum = nsp_job_summary(r.job);
  assert_non_null(strstr(sum, "exited with non-zero statuses (errors, not clean exits)"));
  assert_null(strstr(sum, "exited cleanly"));
  char buf[256];
  nsp_format_end(buf, sizeof buf, r.job, &t1->end);
  assert_non_null(strstr(buf, "exited with status 3 at "));
  run_done(&r);
}

/* A hung job analysed while it hangs: the hang, its ranks still running. */
static void test_live_hang(void **state) {
  struct run r;
  struct job_opts o = {.nranks = 2, .limit_s = 60, .live_ms = 12500, .live_end_ms = 1,
                       .all_env = "NSP_STANDIN_TIMEOUT_MS=60000"};
  run_job_ex(&r, "hang", &o);
  assert_true(nsp_job_nfindings(r.job) > 0);
  const struct nsp_finding *f = nsp_job_finding(r.job, 0);
  assert_int_equal(f->comm_id, world(&r, 2)->id);
  assert_int_equal(f->seq, 3);
  for (int k = 0; k < 2; k++) assert_end(&r, k, NSP_END_RUNNING);
  assert_non_null(strstr(nsp_job_summary(r.job), "still running"));
  assert_headline(&r, "seq 3 all-reduce on communicator @ did not complete: rank 1 did not arrive; rank 0 waits "
                      "inside it (hang)", f->comm_id);
  run_done(&r);
}

/* A rank killed mid-run (case c12) in a job without completion tracking:
 * the report must start from the rank that stopped, not from its peers'
 * timeouts or the send/recv left unmatched in its ring (reported by a new
 * user: both used to come first). */
static void test_c12(void **state) {
  struct run r;
  run_job(&r, "c10", 4, 60, 0, "3:NSP_CASES_DIE=kill@2000");
  const struct nsp_finding *f = nsp_job_finding(r.job, 0);
  assert_int_equal(f->kind, NSP_FIND_STOPPED_EARLY);
  assert_int_equal(f->cause, SIZE_MAX);
  /* The ranks behind include world rank 3, the killed one (by trace:
   * split communicators number it differently). */
  assert_true(f->nsides >= 1);
  int killed_behind = 0;
  for (size_t p = 0; p < f->sides[0].nranks; p++)
    killed_behind |= nsp_job_trace(r.job, f->sides[0].procs[p].trace)->rank == 3;
  assert_true(killed_behind);
  /* Every error and unmatched send/recv is linked to a cause. */
  for (size_t i = 1; i < nsp_job_nfindings(r.job); i++) {
    const struct nsp_finding *g = nsp_job_finding(r.job, i);
    if (g->kind == NSP_FIND_ERROR || g->kind == NSP_FIND_P2P_UNMATCHED) assert_int_not_equal(g->cause, SIZE_MAX);
  }
  run_done(&r);
}

/* The environment doctor on a real job of the stand-ins (c10 on streams,
 * so the CUDA stand-in gives each rank a GPU identity): one rank with
 * another NCCL version, one with NCCL_IB_DISABLE set, two on one GPU, one
 * with a WORLD_SIZE that disagrees. */
static const struct nsp_finding *find_kind(struct run *r, int kind) {
  for (size_t i = 0; i < nsp_job_nfindings(r->job); i++)
    if (nsp_job_finding(r->job, i)->kind == kind) return nsp_job_finding(r->job, i);
  fail_msg("no %s finding", nsp_finding_kind_name(kind));
  return NULL;
}

static void test_env(void **state) {
  struct run r;
  setenv("NSP_CASES_STREAM", "1", 1);
  run_job(&r, "c10", 4, 60, 0,
          "0:NSP_STANDIN_VERSION=22805;1:NCCL_IB_DISABLE=1;2:NSP_STANDIN_GPU_UUID=same-gpu;"
          "3:NSP_STANDIN_GPU_UUID=same-gpu;3:WORLD_SIZE=8");
  unsetenv("NSP_CASES_STREAM");
  const struct nsp_finding *v = find_kind(&r, NSP_FIND_ENV_NCCL_VERSION);
  int odd0 = 0;
  for (size_t i = 0; i < v->nsides; i++)
    if (v->sides[i].nranks == 1 && v->sides[i].ranks[0] == 0) odd0 = 1;
  assert_true(odd0); /* rank 0 alone on 2.28.5 */
  const struct nsp_finding *ib = find_kind(&r, NSP_FIND_ENV_SETTING);
  assert_non_null(strstr(ib->message, "NCCL_IB_DISABLE"));
  const struct nsp_finding *g = find_kind(&r, NSP_FIND_ENV_DUP_GPU);
  assert_int_equal(g->sides[0].nranks, 2);
  assert_int_equal(g->sides[0].ranks[0], 2);
  assert_int_equal(g->sides[0].ranks[1], 3);
  const struct nsp_finding *w = find_kind(&r, NSP_FIND_ENV_WORLD_SIZE);
  assert_non_null(strstr(w->message, "8"));
  run_done(&r);
}

/* ---- the environment doctor, one finding at a time ---------------------
 * Each test runs a real job of the stand-ins under the shim with the
 * environment varied per rank (nsp_launch -r) and asserts the env-*
 * finding's communicator, sides (ranks, value, host of each process) and
 * odd ranks, and that nothing else is reported.  TWO_NODES jobs preload
 * the host stand-in: ranks 0-1 run on "node-a" and 2-3 on "node-b", with
 * local ranks 0-1 on each, as a 2 x 2 job would. */

#define TWO_NODES                                                                                \
  "0:NSP_STANDIN_HOST=node-a;1:NSP_STANDIN_HOST=node-a;2:NSP_STANDIN_HOST=node-b;"             \
  "3:NSP_STANDIN_HOST=node-b;2:LOCAL_RANK=0;3:LOCAL_RANK=1"

static char this_host[256];

static size_t count_kind(struct run *r, int kind) {
  size_t n = 0;
  for (size_t i = 0; i < nsp_job_nfindings(r->job); i++) n += nsp_job_finding(r->job, i)->kind == kind;
  return n;
}

/* The one finding of `kind` (and `setting`, unless NULL); fails unless
 * there is exactly one. */
static const struct nsp_finding *the_finding(struct run *r, int kind, const char *setting) {
  const struct nsp_finding *found = NULL;
  for (size_t i = 0; i < nsp_job_nfindings(r->job); i++) {
    const struct nsp_finding *f = nsp_job_finding(r->job, i);
    if (f->kind != kind || (setting && (!f->setting || strcmp(f->setting, setting)))) continue;
    if (found) fail_msg("two %s findings%s%s", nsp_finding_kind_name(kind), setting ? " for " : "", setting ? setting : "");
    found = f;
  }
  if (!found) fail_msg("no %s finding%s%s", nsp_finding_kind_name(kind), setting ? " for " : "", setting ? setting : "");
  return found;
}

/* Every finding is of one of the kinds listed (ending with -1). */
static void assert_kinds_only(struct run *r, ...) {
  for (size_t i = 0; i < nsp_job_nfindings(r->job); i++) {
    const struct nsp_finding *f = nsp_job_finding(r->job, i);
    va_list ap;
    va_start(ap, r);
    int k, ok = 0;
    while ((k = va_arg(ap, int)) >= 0) ok |= f->kind == k;
    va_end(ap);
    if (!ok) fail_msg("unexpected %s finding: %s", nsp_finding_kind_name(f->kind), f->message);
  }
}

/* A side of an env-* finding: its ranks ("0,2-3"), its value (NULL:
 * unset) and the host of each of its processes, in order ("node-a,node-b";
 * NULL: this host for every process). */
static void assert_env_side(const struct nsp_side *s, const char *ranks, const char *value, const char *hosts) {
  assert_side(s, ranks);
  if (value) {
    assert_non_null(s->value);
    assert_string_equal(s->value, value);
  } else {
    assert_null(s->value);
  }
  char buf[512] = "";
  size_t len = 0;
  for (size_t p = 0; p < s->nranks; p++) {
    assert_int_equal(s->procs[p].rank, s->ranks[p]);
    len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s", p ? "," : "", s->procs[p].host);
    if (!hosts) assert_string_equal(s->procs[p].host, this_host);
  }
  if (hosts) assert_string_equal(buf, hosts);
}

/* The note of job that contains `part`; fails when none does. */
static const char *assert_note(struct nsp_job *job, const char *part) {
  for (size_t i = 0; i < nsp_job_nnotes(job); i++)
    if (strstr(nsp_job_note(job, i), part)) return nsp_job_note(job, i);
  fail_msg("no note contains \"%s\" (first: %s)", part, nsp_job_nnotes(job) ? nsp_job_note(job, 0) : "none");
  return NULL;
}

static void assert_odd(const struct nsp_finding *f, const char *ranks) {
  char buf[256];
  nsp_format_ranks(buf, sizeof buf, f->odd_ranks, f->nodd);
  assert_string_equal(buf, ranks);
}

/* NCCL version, NCCL library, driver and runtime versions differ: rank 3
 * has NCCL 2.28.5 (the others 2.28.9), rank 1 loads a copy of libnccl from
 * another directory, node-b has driver 12.4 (node-a 13.0), rank 0 runtime
 * 12.2 (the others 12.8).  The GPUs of the two nodes have the same PCI bus
 * ids: not one GPU. */
static void test_env_versions(void **state) {
  char alt[64] = "/tmp/nsp-case-alt-XXXXXX", cmd[512], alt_so[128], renv[2048];
  assert_non_null(mkdtemp(alt));
  snprintf(cmd, sizeof cmd, "cp '%s' '%s/libnccl.so.2'", standin_nccl_so, alt);
  assert_int_equal(system(cmd), 0);
  snprintf(alt_so, sizeof alt_so, "%s/libnccl.so.2", alt);
  snprintf(renv, sizeof renv,
           TWO_NODES ";1:LD_LIBRARY_PATH=%s;3:NSP_STANDIN_VERSION=22805;2:NSP_STANDIN_DRIVER_VERSION=12040;"
                     "3:NSP_STANDIN_DRIVER_VERSION=12040;0:NSP_STANDIN_RUNTIME_VERSION=12020",
           alt);
  struct job_opts o = {.nranks = 4, .limit_s = 60, .all_env = "NSP_CASES_STREAM=1;LOCAL_WORLD_SIZE=2",
                       .rank_env = renv, .fake_hosts = 1};
  struct run r;
  run_job_ex(&r, "c10", &o);
  assert_int_equal(r.launch_status, 0); /* nothing stops the stand-ins */
  assert_kinds_only(&r, NSP_FIND_ENV_NCCL_VERSION, NSP_FIND_ENV_NCCL_PATH, NSP_FIND_ENV_DRIVER,
                    NSP_FIND_ENV_RUNTIME, -1);

  const struct nsp_finding *f = the_finding(&r, NSP_FIND_ENV_NCCL_VERSION, NULL);
  assert_int_equal(f->comm_id, 0);
  assert_int_equal(f->nsides, 2);
  assert_env_side(&f->sides[0], "0-2", "2.28.9", "node-a,node-a,node-b");
  assert_env_side(&f->sides[1], "3", "2.28.5", "node-b");
  assert_odd(f, "3");
  /* The job's split numbers ranks otherwise: these are job ranks. */
  assert_string_equal(f->message, "NCCL version differs across ranks: job ranks 0-2 (node-a, node-b): 2.28.9; "
                                  "job rank 3 (node-b): 2.28.5");

  f = the_finding(&r, NSP_FIND_ENV_NCCL_PATH, NULL);
  assert_int_equal(f->nsides, 2);
  /* The build's library, as the loader named it (through the runpath). */
  char real_a[4096], real_b[4096];
  assert_non_null(f->sides[0].value);
  assert_non_null(realpath(f->sides[0].value, real_a));
  assert_non_null(realpath(standin_nccl_so, real_b));
  assert_string_equal(real_a, real_b);
  assert_env_side(&f->sides[0], "0,2-3", f->sides[0].value, "node-a,node-b,node-b");
  assert_env_side(&f->sides[1], "1", alt_so, "node-a");
  assert_odd(f, "1");

  f = the_finding(&r, NSP_FIND_ENV_DRIVER, NULL);
  assert_int_equal(f->nsides, 2);
  assert_env_side(&f->sides[0], "0-1", "13.0", "node-a,node-a");
  assert_env_side(&f->sides[1], "2-3", "12.4", "node-b,node-b");
  assert_int_equal(f->nodd, 0); /* two against two: nobody is odd */

  f = the_finding(&r, NSP_FIND_ENV_RUNTIME, NULL);
  assert_int_equal(f->nsides, 2);
  assert_env_side(&f->sides[0], "0", "12.2", "node-a");
  assert_env_side(&f->sides[1], "1-3", "12.8", "node-a,node-b,node-b");
  assert_odd(f, "0");
  run_done(&r);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", alt);
  assert_int_equal(system(cmd), 0);
}

/* NCCL_* settings, by their class (common/nsp_nccl_settings.h): rank 1
 * alone sets NCCL_IB_DISABLE (must match: a finding); NCCL_SOCKET_IFNAME
 * (per host) differs between the nodes, which is allowed (a note), and
 * within node-a, rank 0 eth0 and rank 1 eth1, which is not (a finding on
 * node-a's ranks only).  Variables that are per rank by design differ on
 * every rank and are neither: NCCL_COMM_ID, NCCL_HOSTID, NCCL_LOCAL_RANK;
 * nor are variables outside NCCL_* (NCCLSPY_LEVEL, CUDA_VISIBLE_DEVICES).
 * NCCL_DEBUG_FILE (diagnostics) differs on every rank: a note. */
static void test_env_settings(void **state) {
  struct job_opts o = {
      .nranks = 4,
      .limit_s = 60,
      .all_env = "NCCL_DEBUG=WARN",
      .rank_env = TWO_NODES ";0:NCCL_SOCKET_IFNAME=eth0;1:NCCL_SOCKET_IFNAME=eth1;2:NCCL_SOCKET_IFNAME=ib0;"
                            "3:NCCL_SOCKET_IFNAME=ib0;1:NCCL_IB_DISABLE=1;"
                            "0:NCCL_COMM_ID=10.0.0.1:29500;1:NCCL_COMM_ID=10.0.0.1:29501;"
                            "2:NCCL_COMM_ID=10.0.0.2:29500;3:NCCL_COMM_ID=10.0.0.2:29501;"
                            "0:NCCL_HOSTID=node-a;1:NCCL_HOSTID=node-a;2:NCCL_HOSTID=node-b;3:NCCL_HOSTID=node-b;"
                            "0:NCCL_DEBUG_FILE=/tmp/nccl.0.log;1:NCCL_DEBUG_FILE=/tmp/nccl.1.log;"
                            "2:NCCL_DEBUG_FILE=/tmp/nccl.2.log;3:NCCL_DEBUG_FILE=/tmp/nccl.3.log;"
                            "0:NCCL_LOCAL_RANK=0;1:NCCL_LOCAL_RANK=1;2:NCCL_LOCAL_RANK=0;3:NCCL_LOCAL_RANK=1;"
                            "2:NCCLSPY_LEVEL=1;0:CUDA_VISIBLE_DEVICES=0;1:CUDA_VISIBLE_DEVICES=1;"
                            "2:CUDA_VISIBLE_DEVICES=0;3:CUDA_VISIBLE_DEVICES=1",
      .fake_hosts = 1};
  struct run r;
  run_job_ex(&r, "c10", &o);
  assert_int_equal(r.launch_status, 0);
  assert_kinds_only(&r, NSP_FIND_ENV_SETTING, -1);
  assert_int_equal(nsp_job_nfindings(r.job), 2);

  const struct nsp_finding *f = the_finding(&r, NSP_FIND_ENV_SETTING, "NCCL_IB_DISABLE");
  assert_int_equal(f->comm_id, 0);
  assert_int_equal(f->nsides, 2);
  assert_env_side(&f->sides[0], "0,2-3", NULL, "node-a,node-b,node-b");
  assert_env_side(&f->sides[1], "1", "1", "node-a");
  assert_odd(f, "1");
  assert_string_equal(f->message, "NCCL_IB_DISABLE differs across ranks: job ranks 0,2-3 (node-a, node-b): unset; "
                                  "job rank 1 (node-a): 1");

  /* Within node-a only: node-b's ib0 is no side of it. */
  f = the_finding(&r, NSP_FIND_ENV_SETTING, "NCCL_SOCKET_IFNAME");
  assert_int_equal(f->nsides, 2);
  assert_env_side(&f->sides[0], "0", "eth0", "node-a");
  assert_env_side(&f->sides[1], "1", "eth1", "node-a");
  assert_int_equal(f->nodd, 0);
  assert_string_equal(f->message, "NCCL_SOCKET_IFNAME differs across ranks: job rank 0 (node-a): eth0; job rank 1 (node-a): "
                                  "eth1; within one host (node-a): it may differ between hosts, not between the "
                                  "processes of one");
  /* The per-rank variables were recorded (so leaving them out was the
   * analyzer's doing). */
  int seen = 0;
  for (size_t t = 0; t < nsp_job_ntraces(r.job); t++) {
    const struct nsp_trace_info *ti = nsp_job_trace(r.job, t);
    for (size_t e = 0; e < ti->nenv; e++) seen += !strcmp(ti->env[2 * e], "NCCL_COMM_ID");
  }
  assert_int_equal(seen, 4);
  assert_note(r.job, "NCCL_DEBUG_FILE differs across ranks (diagnostics only, not a problem): ");
  for (size_t i = 0; i < nsp_job_nnotes(r.job); i++) {
    const char *n = nsp_job_note(r.job, i);
    if (strstr(n, "NCCL_COMM_ID") || strstr(n, "NCCL_HOSTID") || strstr(n, "NCCL_LOCAL_RANK") ||
        strstr(n, "CUDA_VISIBLE_DEVICES"))
      fail_msg("a note on a rank-specific variable: %s", n);
  }
  run_done(&r);
}

/* Issue #13 item 3: NCCL_DEBUG=INFO on one rank of a healthy job cannot
 * break it: no finding (exit 0), a note naming the difference; a name
 * ncclspy does not know is a note as well.  The same
 * job with NCCL_PROTO on one rank (must match) still gives a finding. */
static void test_env_debug(void **state) {
  struct job_opts o = {.nranks = 4, .limit_s = 60,
                       .rank_env = "1:NCCL_DEBUG=INFO;2:NCCL_DEBUG_SUBSYS=INIT,NET;0:NCCL_NSP_NOT_A_SETTING=1",
                       .none = 1};
  struct run r;
  run_job_ex(&r, "c10", &o);
  assert_int_equal(r.launch_status, 0);
  assert_int_equal(nsp_job_nfindings(r.job), 0);
  const struct nsp_job_caveats *cv = nsp_job_caveats(r.job);
  assert_false(cv->unclean || cv->libnccl); /* `ncclspy analyze` exits 0 */
  const char *n = assert_note(r.job, "NCCL_DEBUG differs across ranks (diagnostics only, not a problem): ");
  char want[1024];
  snprintf(want, sizeof want, "NCCL_DEBUG differs across ranks (diagnostics only, not a problem): job ranks 0,2-3 (%s): "
           "unset; job rank 1 (%s): INFO", this_host, this_host); /* c10 has splits numbered otherwise */
  assert_string_equal(n, want);
  assert_note(r.job, "NCCL_DEBUG_SUBSYS differs across ranks (diagnostics only, not a problem): ");
  /* A name the table lacks: a note too, never a finding. */
  assert_note(r.job, "NCCL_NSP_NOT_A_SETTING differs across ranks (a setting ncclspy does not know: ");
  run_done(&r);

  o.rank_env = "1:NCCL_DEBUG=INFO;3:NCCL_PROTO=Simple";
  o.none = 0;
  run_job_ex(&r, "c10", &o);
  assert_kinds_only(&r, NSP_FIND_ENV_SETTING, -1);
  assert_int_equal(nsp_job_nfindings(r.job), 1);
  const struct nsp_finding *f = the_finding(&r, NSP_FIND_ENV_SETTING, "NCCL_PROTO");
  assert_int_equal(f->nsides, 2);
  assert_side(&f->sides[1], "3");
  assert_non_null(f->sides[1].value);
  assert_string_equal(f->sides[1].value, "Simple");
  assert_odd(f, "3");
  assert_note(r.job, "NCCL_DEBUG differs across ranks (diagnostics only, not a problem): ");
  run_done(&r);
}

/* Two ranks on one GPU, 6 ranks on this host: rank 1 has LOCAL_RANK 0 and
 * so uses rank 0's GPU (same UUID, same PCI bus id); rank 3 uses rank 2's
 * device but cannot read its UUID (the stand-in driver refuses it): same
 * host and PCI bus id.  Rank 5 reports rank 4's PCI bus id with a UUID of
 * its own: another GPU (a MIG slice, or a node with the same host name),
 * not a finding. */
static void test_env_dup_gpu(void **state) {
  struct job_opts o = {.nranks = 6,
                       .limit_s = 60,
                       .all_env = "NSP_CASES_STREAM=1",
                       .rank_env = "1:LOCAL_RANK=0;2:NSP_STANDIN_GPU_UUID=GPU-22222222-2222-2222-2222-222222222222;"
                                   "3:LOCAL_RANK=2;3:NSP_STANDIN_GPU_UUID=none;"
                                   "5:NSP_STANDIN_GPU_BUS=0000:04:00.0"};
  struct run r;
  run_job_ex(&r, "c10", &o);
  assert_int_equal(r.launch_status, 0);
  assert_kinds_only(&r, NSP_FIND_ENV_DUP_GPU, -1);
  const struct nsp_finding *f = the_finding(&r, NSP_FIND_ENV_DUP_GPU, NULL);
  /* The world: the halves (even and odd ranks) hold no pair. */
  assert_int_equal(f->comm_id, world(&r, 6)->id);
  assert_int_equal(f->nsides, 2);
  assert_non_null(f->sides[0].value);
  assert_int_equal(strlen(f->sides[0].value), 40); /* GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx */
  assert_memory_equal(f->sides[0].value, "GPU-", 4);
  assert_env_side(&f->sides[0], "0-1", f->sides[0].value, NULL);
  assert_non_null(strstr(f->sides[0].text, " 0000:00:00.0"));
  assert_env_side(&f->sides[1], "2-3", "GPU-22222222-2222-2222-2222-222222222222", NULL);
  assert_non_null(strstr(f->sides[1].text, " 0000:02:00.0"));
  char want[4096];
  snprintf(want, sizeof want, "ranks 0-1 (%s) share one GPU: %s; ranks 2-3 (%s) share one GPU: %s", this_host,
           f->sides[0].text, this_host, f->sides[1].text);
  assert_string_equal(f->message, want);
  snprintf(want, sizeof want, ": ranks 0-1 share one GPU, %s; ranks 2-3 share one GPU, %s (env duplicate gpu)",
           f->sides[0].text, f->sides[1].text);
  assert_non_null(strstr(nsp_job_headline(r.job), want));
  run_done(&r);
}

/* Two processes claim rank 1 (rank 3 of the launch has RANK=1): the
 * second to join fails, the others wait for rank 3 until init gives up. */
static void test_env_dup_rank(void **state) {
  struct job_opts o = {.nranks = 4, .limit_s = 60, .rank_env = "3:RANK=1"};
  struct run r;
  run_job_ex(&r, "c10", &o);
  assert_int_not_equal(r.launch_status, 0);
  assert_kinds_only(&r, NSP_FIND_ENV_DUP_RANK, NSP_FIND_ENV_MISSING_RANKS, NSP_FIND_ERROR, -1);
  const struct nsp_finding *f = the_finding(&r, NSP_FIND_ENV_DUP_RANK, NULL);
  assert_int_equal(f->comm_id, world(&r, 4)->id);
  assert_int_equal(f->nsides, 1);
  assert_int_equal(f->sides[0].nranks, 2);
  assert_env_side(&f->sides[0], "1", NULL, NULL); /* both claim rank 1 */
  assert_string_equal(f->sides[0].text, "rank 1 in 2 processes");
  const struct nsp_proc *a = &f->sides[0].procs[0], *b = &f->sides[0].procs[1];
  assert_int_not_equal(a->pid, b->pid);
  assert_int_not_equal(a->trace, b->trace);
  assert_int_equal(nsp_job_trace(r.job, a->trace)->pid, a->pid);
  assert_int_equal(nsp_job_trace(r.job, b->trace)->pid, b->pid);
  char want[4096];
  snprintf(want, sizeof want, "rank 1 is claimed by 2 processes: %s pid %u (%s), %s pid %u (%s)", this_host,
           a->pid, nsp_job_trace(r.job, a->trace)->path, this_host, b->pid, nsp_job_trace(r.job, b->trace)->path);
  assert_string_equal(f->message, want);
  /* Nobody traced rank 3. */
  f = the_finding(&r, NSP_FIND_ENV_MISSING_RANKS, NULL);
  assert_int_equal(f->comm_id, world(&r, 4)->id);
  assert_env_side(&f->sides[0], "0-2", NULL, NULL);
  assert_odd(f, "3");
  run_done(&r);
}

/* Analyses the traces of r again, rank `first`'s trace added first. */
static struct nsp_job *reanalyze_from(struct run *r, int first) {
  struct nsp_job *job = nsp_job_create();
  assert_non_null(job);
  size_t n = nsp_job_ntraces(r->job);
  for (int pass = 0; pass < 2; pass++)
    for (size_t i = n; i-- > 0;) {
      const struct nsp_trace_info *t = nsp_job_trace(r->job, i);
      if ((t->rank == first) == (pass == 0)) assert_int_equal(nsp_job_add_path(job, t->path), 1);
    }
  assert_int_equal(nsp_job_analyze(job), 0);
  return job;
}

/* Rank 3 passes nranks 8 to ncclCommInitRank (WORLD_SIZE is 4 for all):
 * its init fails, the others wait for it until theirs does.  The
 * communicator has 4 ranks by the word of three of four, in whatever
 * order the traces come: no rank is missing, and WORLD_SIZE=4 agrees. */
static void test_env_nranks(void **state) {
  struct job_opts o = {.nranks = 4, .limit_s = 60, .rank_env = "3:NSP_CASES_NRANKS=8"};
  struct run r;
  run_job_ex(&r, "c10", &o);
  assert_int_not_equal(r.launch_status, 0);
  struct nsp_job *jobs[3] = {r.job, reanalyze_from(&r, 3), reanalyze_from(&r, 0)};
  for (int j = 0; j < 3; j++) {
    r.job = jobs[j];
    assert_kinds_only(&r, NSP_FIND_ENV_NRANKS, NSP_FIND_ERROR, -1);
    const struct nsp_finding *f = the_finding(&r, NSP_FIND_ENV_NRANKS, NULL);
    assert_non_null(f->comm);
    assert_int_equal(f->comm->nranks, 4);
    assert_int_equal(f->comm->ntraced, 4);
    assert_int_equal(f->nsides, 2);
    assert_env_side(&f->sides[0], "0-2", "4", NULL);
    assert_env_side(&f->sides[1], "3", "8", NULL);
    assert_odd(f, "3");
  }
  r.job = jobs[0];
  nsp_job_destroy(jobs[1]);
  nsp_job_destroy(jobs[2]);
  run_done(&r);
}

/* Rank 3 runs without the shim (its LD_PRELOAD lost, as with an mpirun
 * that did not export it): a healthy job with three traces.  Rank 3 is
 * missing from the world, and from the odd half as its rank 0. */
static void test_env_missing(void **state) {
  struct job_opts o = {.nranks = 4, .ntraces = 3, .limit_s = 60, .rank_env = "3:LD_PRELOAD="};
  struct run r;
  run_job_ex(&r, "c10", &o);
  assert_int_equal(r.launch_status, 0);
  assert_kinds_only(&r, NSP_FIND_ENV_MISSING_RANKS, -1);
  assert_int_equal(count_kind(&r, NSP_FIND_ENV_MISSING_RANKS), 2);
  const struct nsp_comm_info *w = world(&r, 4);
  for (size_t i = 0; i < nsp_job_nfindings(r.job); i++) {
    const struct nsp_finding *f = nsp_job_finding(r.job, i);
    assert_int_equal(f->nsides, 1);
    if (f->comm_id == w->id) {
      assert_env_side(&f->sides[0], "0-2", NULL, NULL);
      assert_string_equal(f->sides[0].text, "traced (3 of 4)");
      assert_odd(f, "3");
      assert_string_equal(f->message, "communicator has 4 ranks but 3 have a trace; no trace for rank 3");
    } else {
      /* The odd half {1,3}, keyed in reverse: world rank 3 is its rank 0. */
      assert_non_null(f->comm);
      assert_int_equal(f->comm->parent_id, w->id);
      assert_int_equal(f->comm->nranks, 2);
      assert_env_side(&f->sides[0], "1", NULL, NULL);
      assert_int_equal(nsp_job_trace(r.job, f->sides[0].procs[0].trace)->rank, 1);
      assert_odd(f, "0");
      assert_string_equal(f->message, "communicator has 2 ranks but 1 has a trace; no trace for rank 0");
    }
  }
  /* The headline (of either finding: they are of one class) names the
   * rank without a trace, not the traced ones. */
  print_message("# headline: %s\n", nsp_job_headline(r.job));
  assert_non_null(strstr(nsp_job_headline(r.job), nsp_job_finding(r.job, 0)->comm_id == w->id
                                                      ? ": rank 3 has no trace (3 of 4 traced) (env missing ranks)"
                                                      : ": rank 0 has no trace (1 of 2 traced) (env missing ranks)"));
  run_done(&r);
}

/* Ranks 2, 4 and 5 of 6 never start (they never get the unique id, so
 * never call NCCL); the others wait in init until it gives up. */
static void test_env_never_started(void **state) {
  struct job_opts o = {.nranks = 6,
                       .ntraces = 3,
                       .limit_s = 60,
                       .rank_env = "2:NSP_UID_FILE=/nonexistent/nsp.uid;2:NSP_UID_WAIT_MS=0;"
                                   "4:NSP_UID_FILE=/nonexistent/nsp.uid;4:NSP_UID_WAIT_MS=0;"
                                   "5:NSP_UID_FILE=/nonexistent/nsp.uid;5:NSP_UID_WAIT_MS=0"};
  struct run r;
  run_job_ex(&r, "c10", &o);
  assert_int_not_equal(r.launch_status, 0);
  assert_kinds_only(&r, NSP_FIND_COMM_INIT_WAIT, NSP_FIND_ENV_MISSING_RANKS, NSP_FIND_ERROR, -1);
  /* First: ranks 0, 1 and 3 waited in ncclCommInitRank for the three that
   * never called it (they have no trace). */
  const struct nsp_finding *w = nsp_job_finding(r.job, 0);
  assert_int_equal(w->kind, NSP_FIND_COMM_INIT_WAIT);
  assert_side(&w->sides[0], "0-1,3");
  assert_non_null(strstr(w->message, "for ranks 2,4-5, which never called it"));
  const struct nsp_finding *f = the_finding(&r, NSP_FIND_ENV_MISSING_RANKS, NULL);
  assert_int_equal(f->comm_id, world(&r, 6)->id);
  assert_env_side(&f->sides[0], "0-1,3", NULL, NULL);
  assert_string_equal(f->sides[0].text, "traced (3 of 6)");
  assert_odd(f, "2,4-5");
  assert_string_equal(f->message, "communicator has 6 ranks but 3 have a trace; no trace for ranks 2,4-5");
  run_done(&r);
}

/* World-size variables: SLURM_NTASKS=8 on every rank of a 4-rank job, all
 * traced; OMPI_COMM_WORLD_SIZE 2 on rank 3, 4 elsewhere.  WORLD_SIZE and
 * PMI_SIZE (4 everywhere) agree with the job. */
static void test_env_world_size(void **state) {
  struct job_opts o = {.nranks = 4,
                       .limit_s = 60,
                       .all_env = "SLURM_NTASKS=8;OMPI_COMM_WORLD_SIZE=4;PMI_SIZE=4",
                       .rank_env = TWO_NODES ";3:OMPI_COMM_WORLD_SIZE=2",
                       .fake_hosts = 1};
  struct run r;
  run_job_ex(&r, "c10", &o);
  assert_int_equal(r.launch_status, 0);
  assert_kinds_only(&r, NSP_FIND_ENV_WORLD_SIZE, -1);
  assert_int_equal(nsp_job_nfindings(r.job), 2);
  const struct nsp_finding *f = the_finding(&r, NSP_FIND_ENV_WORLD_SIZE, "SLURM_NTASKS");
  assert_int_equal(f->nsides, 1);
  assert_env_side(&f->sides[0], "0-3", "8", "node-a,node-a,node-b,node-b");
  assert_string_equal(f->message, "SLURM_NTASKS=8 on job ranks 0-3 (node-a, node-b) but 4 processes traced, "
                                  "largest communicator 4 ranks");
  f = the_finding(&r, NSP_FIND_ENV_WORLD_SIZE, "OMPI_COMM_WORLD_SIZE");
  assert_int_equal(f->nsides, 2);
  assert_env_side(&f->sides[0], "0-2", "4", "node-a,node-a,node-b");
  assert_env_side(&f->sides[1], "3", "2", "node-b");
  assert_odd(f, "3");
  run_done(&r);
}

/* Issue 13: rank 1 made one PreMulSum op more first, so its handles are
 * numbered otherwise; every rank reduced with premulsum(float32 host
 * 0.25).  A healthy job: no finding. */
static void test_premul_handles(void **state) {
  struct run r;
  struct job_opts o = {.nranks = 4, .limit_s = 120, .none = 1};
  run_job_ex(&r, "premul-handles", &o);
  assert_int_equal(r.launch_status, 0);
  assert_int_equal(nsp_job_nfindings(r.job), 0);
  run_done(&r);
}

/* The findings after f (index 0) on its communicator that follow from it. */
static void assert_follow(struct run *r) {
  for (size_t i = 1; i < nsp_job_nfindings(r->job); i++) {
    const struct nsp_finding *g = nsp_job_finding(r->job, i);
    if (g->kind == NSP_FIND_ERROR || g->kind == NSP_FIND_HANG || g->kind == NSP_FIND_NEVER_COMPLETED ||
        g->kind == NSP_FIND_STOPPED_EARLY)
      assert_int_equal(g->cause, 0);
  }
}

/* Issue 13: rank 1 issued an extra all-gather at seq 12 in the middle of
 * its loop: a seq-shift naming the rank, the seq, the collective and
 * "extra", no shape (count) or kind mismatch; the error of its last
 * collective, which waited for the others, follows from it. */
static void test_extra_coll(void **state) {
  struct run r;
  run_case(&r, "extra-coll", 4);
  const struct nsp_finding *f = nsp_job_finding(r.job, 0);
  assert_int_equal(f->kind, NSP_FIND_SEQ_SHIFT);
  assert_int_equal(f->comm_id, world(&r, 4)->id);
  assert_int_equal(f->seq, 12);
  assert_int_equal(f->api, NSP_API_AllGather);
  assert_int_equal(f->nodd, 1);
  assert_int_equal(f->odd_ranks[0], 1);
  assert_non_null(strstr(f->message, "rank 1 issued an extra all-gather at seq 12 (its calls from seq 13 on match "
                                     "the others' from seq 12 on)"));
  for (size_t i = 0; i < nsp_job_nfindings(r.job); i++) {
    int k = nsp_job_finding(r.job, i)->kind;
    assert_true(k != NSP_FIND_COUNT_MISMATCH && k != NSP_FIND_KIND_MISMATCH && k != NSP_FIND_DTYPE_MISMATCH);
  }
  assert_follow(&r);
  run_done(&r);
}

/* Issue 13: rank 1 skipped the all-gather at seq 11. */
/* A mismatch near the end of long traces, written in frames of 20 ms:
 * found as in a full read, with most frames stepped over (issue #16). */
static void test_late_skip(void **state) {
  (void)state;
  struct run r;
  run_case(&r, "late-skip", 4);
  const struct nsp_finding *f = nsp_job_finding(r.job, 0);
  assert_int_equal(f->kind, NSP_FIND_SEQ_SHIFT);
  assert_int_equal(f->seq, 8702);
  assert_int_equal(f->api, NSP_API_AllGather);
  assert_int_equal(f->nodd, 1);
  assert_int_equal(f->odd_ranks[0], 1);
  assert_true(nsp_job_frames_stepped_over(r.job) > 4 * 10);
  run_done(&r);
}

static void test_skipped_coll(void **state) {
  struct run r;
  run_case(&r, "skipped-coll", 4);
  const struct nsp_finding *f = nsp_job_finding(r.job, 0);
  assert_int_equal(f->kind, NSP_FIND_SEQ_SHIFT);
  assert_int_equal(f->comm_id, world(&r, 4)->id);
  assert_int_equal(f->seq, 11);
  assert_int_equal(f->api, NSP_API_AllGather);
  assert_int_equal(f->nodd, 1);
  assert_int_equal(f->odd_ranks[0], 1);
  assert_side(&f->sides[0], "0,2-3");
  assert_int_equal(f->sides[0].call.api, NSP_API_AllGather);
  assert_non_null(strstr(f->message, "rank 1 skipped an all-gather at seq 11 (its calls from seq 11 on match the "
                                     "others' from seq 12 on)"));
  for (size_t i = 0; i < nsp_job_nfindings(r.job); i++) {
    int k = nsp_job_finding(r.job, i)->kind;
    assert_true(k != NSP_FIND_COUNT_MISMATCH && k != NSP_FIND_KIND_MISMATCH && k != NSP_FIND_DTYPE_MISMATCH);
  }
  assert_follow(&r);
  run_done(&r);
}

/* ---- issue #13: processes that are no ranks, runs in one directory ---- */

/* A launcher process made the unique id (ncclGetVersion, ncclGetUniqueId)
 * and joined no communicator; WORLD_SIZE=4 is the real ranks: no
 * env-world-size ("but 5 processes traced"), no env-missing-ranks, and a
 * note names the launcher. */
static void test_launcher(void **state) {
  struct job_opts o = {.nranks = 5,
                       .limit_s = 60,
                       .all_env = "WORLD_SIZE=4",
                       .rank_env = "4:NSP_CASES_LAUNCHER=1;4:RANK=",
                       .none = 1};
  struct run r;
  run_job_ex(&r, "launcher", &o);
  assert_int_equal(r.launch_status, 0);
  for (size_t i = 0; i < nsp_job_nfindings(r.job); i++) fail_msg("finding: %s", nsp_job_finding(r.job, i)->message);
  assert_int_equal(nsp_job_ntraces(r.job), 5);
  size_t nonrank = 0;
  for (size_t i = 0; i < nsp_job_ntraces(r.job); i++) nonrank += !nsp_job_trace(r.job, i)->joined;
  assert_int_equal(nonrank, 1);
  assert_int_equal(world(&r, 4)->ntraced, 4);
  const char *note = nsp_job_note(r.job, 0);
  assert_non_null(note);
  if (!strstr(note, "1 traced process joined no communicator, so it is not counted as a rank") ||
      !strstr(note, "ncclGetUniqueId"))
    fail_msg("note: %s", note);
  run_done(&r);
}

/* Runs case `name` (nranks ranks, each with the ';'-separated all_env)
 * into `into` (NULL: a new directory) and analyses the directory, which
 * then holds `ntraces` traces. */
static void run_into(struct run *r, const char *name, int nranks, int ntraces, const char *into, const char *all_env) {
  struct job_opts o = {.nranks = nranks, .ntraces = ntraces, .limit_s = 60, .all_env = all_env, .into = into,
                       .none = 1};
  run_job_ex(r, name, &o);
}

/* The run analysed (nsp_run_info.analyzed), the only one. */
static const struct nsp_run_info *analysed_run(struct nsp_job *job) {
  const struct nsp_run_info *a = NULL;
  for (size_t i = 0; i < nsp_job_nruns(job); i++)
    if (nsp_job_run(job, i)->analyzed) {
      assert_null(a);
      a = nsp_job_run(job, i);
    }
  assert_non_null(a);
  return a;
}

/* The directory analysed again, with --run `sel`. */
static struct nsp_job *analyse_run(const char *dir, const char *sel) {
  struct nsp_job *job = nsp_job_create();
  assert_non_null(job);
  assert_true(nsp_job_add_path(job, dir) > 0);
  assert_int_equal(nsp_job_select_run(job, sel), 0);
  assert_int_equal(nsp_job_analyze(job), 0);
  return job;
}

static void assert_contains(const char *hay, const char *needle) {
  if (!hay || !strstr(hay, needle)) fail_msg("\"%s\"\n  does not contain \"%s\"", hay ? hay : "(null)", needle);
}

/* A healthy job run twice into one directory: no finding; the newest run
 * is analysed and the first note names the older one; --run all compares
 * all 8 traces as one job (a note; no env-world-size, as each run has 4
 * ranks: the check counts per group of shared communicators), --run ID or number
 * the older one.  With launcher variables (run ids runA, runB) and
 * without any (the world communicator's id and time tell them apart). */
static void runs_twice(const char *env1, const char *env2, const char *older_sel) {
  struct run a, b;
  run_into(&a, "c10", 4, 4, NULL, env1);
  assert_int_equal(nsp_job_nfindings(a.job), 0);
  nsp_job_destroy(a.job);
  run_into(&b, "c10", 4, 8, a.dir, env2);
  assert_int_equal(b.launch_status, 0);
  assert_int_equal(nsp_job_nfindings(b.job), 0);
  assert_int_equal(nsp_job_nruns(b.job), 2);
  assert_int_equal(nsp_job_ntraces(b.job), 4);
  assert_true(nsp_job_run(b.job, 0)->analyzed);
  assert_true(nsp_job_run(b.job, 0)->start_ns > nsp_job_run(b.job, 1)->start_ns);
  if (env2) assert_string_equal(nsp_job_run(b.job, 0)->id, "torchrun:runB");
  else assert_true(!strncmp(nsp_job_run(b.job, 0)->id, "comm:", 5));
  char want[160];
  snprintf(want, sizeof want, "1 older run in these traces ignored: %s (4 processes, started ",
           nsp_job_run(b.job, 1)->id);
  assert_contains(nsp_job_note(b.job, 0), want);
  for (size_t i = 0; i < nsp_job_ntraces(b.job); i++)
    assert_string_equal(nsp_job_trace(b.job, i)->run_id, nsp_job_run(b.job, 0)->id);
  nsp_job_destroy(b.job);

  struct nsp_job *job = analyse_run(a.dir, "all");
  assert_int_equal(nsp_job_ntraces(job), 8);
  /* Each run's processes match WORLD_SIZE=4: no env-world-size for 8. */
  for (size_t i = 0; i < nsp_job_nfindings(job); i++)
    assert_int_not_equal(nsp_job_finding(job, i)->kind, NSP_FIND_ENV_WORLD_SIZE);
  assert_note(job, "the traces come from 2 different runs or attempts");
  nsp_job_destroy(job);

  job = analyse_run(a.dir, older_sel);
  assert_int_equal(nsp_job_ntraces(job), 4);
  assert_int_equal(nsp_job_nfindings(job), 0);
  assert_true(nsp_job_run(job, 1)->analyzed);
  assert_contains(nsp_job_note(job, 0), "analysed as asked: run 2 of 2 (newest first)");
  nsp_job_destroy(job);
  b.job = NULL;
  run_done(&b);
}

static void test_runs_twice(void **state) {
  runs_twice("TORCHELASTIC_RUN_ID=runA", "TORCHELASTIC_RUN_ID=runB", "torchrun:runA");
  runs_twice(NULL, NULL, "2");
}

/* A failing run (c01, dtype mismatch at seq 2) after a healthy one (c10)
 * in one directory: the failing run's finding, no env-world-size; the
 * reverse order: the healthy newest run, no finding, the older named. */
static void test_runs_fail_after_healthy(void **state) {
  struct run a, b;
  run_into(&a, "c10", 2, 2, NULL, "TORCHELASTIC_RUN_ID=ok");
  nsp_job_destroy(a.job);
  struct job_opts o = {.nranks = 2, .ntraces = 4, .limit_s = 60, .all_env = "TORCHELASTIC_RUN_ID=bad", .into = a.dir};
  run_job_ex(&b, "c01", &o);
  const struct nsp_finding *f = nsp_job_finding(b.job, 0);
  assert_int_equal(f->kind, NSP_FIND_DTYPE_MISMATCH);
  assert_int_equal(f->seq, 2);
  assert_int_equal(count_kind(&b, NSP_FIND_ENV_WORLD_SIZE), 0);
  assert_int_equal(count_kind(&b, NSP_FIND_ENV_DUP_RANK), 0);
  assert_string_equal(analysed_run(b.job)->id, "torchrun:bad");
  assert_contains(nsp_job_note(b.job, 0), "1 older run in these traces ignored: torchrun:ok (2 processes");
  run_done(&b);

  /* Failing, then healthy, no launcher variables. */
  o = (struct job_opts){.nranks = 2, .limit_s = 60};
  run_job_ex(&a, "c01", &o);
  nsp_job_destroy(a.job);
  run_into(&b, "c10", 2, 4, a.dir, NULL);
  assert_int_equal(nsp_job_nfindings(b.job), 0);
  assert_int_equal(nsp_job_ntraces(b.job), 2);
  assert_int_equal(nsp_job_nruns(b.job), 2);
  assert_true(nsp_job_run(b.job, 0)->analyzed);
  assert_contains(nsp_job_note(b.job, 0), "1 older run in these traces ignored: comm:");
  run_done(&b);
}

/* Asserts that text (outside its quoted strings, which are NCCL's own
 * words) names the processes of a split communicator whose ranks 0 and 1
 * are job ranks 1 and 3 unambiguously: every "rank 0" or "rank 1" that is
 * no job rank carries its job rank, and "ranks 0-1" too. */
static void assert_no_bare_rank(const char *text) {
  static const char *const full[][2] = {{"rank 0", "rank 0 (job rank 1)"},
                                         {"rank 1", "rank 1 (job rank 3)"},
                                         {"ranks 0-1", "ranks 0-1 (job ranks 1,3)"}};
  int quoted = 0;
  for (const char *p = text; *p; p++) {
    if (*p == '"' && (p == text || p[-1] != '\\')) quoted = !quoted;
    if (quoted || (p > text && (p[-1] == 'b' || p[-1] == '_'))) continue; /* "job rank 1", "job_rank" */
    for (size_t k = 0; k < sizeof full / sizeof *full; k++) {
      size_t n = strlen(full[k][0]);
      if (strncmp(p, full[k][0], n) || (p[n] >= '0' && p[n] <= '9') || p[n] == '-' || p[n] == ',') continue;
      if (p >= text + 4 && !strncmp(p - 4, "job ", 4)) continue;
      if (strncmp(p, full[k][1], strlen(full[k][1])))
        fail_msg("bare \"%s\" in: %.200s", full[k][0], p > text + 60 ? p - 60 : text);
    }
  }
}

/* text as TAP comments, "# NAME: line" each. */
static void print_lines(const char *name, const char *text) {
  for (const char *p = text; *p;) {
    const char *nl = strchr(p, '\n');
    int n = nl ? (int)(nl - p) : (int)strlen(p);
    print_message("# %s: %.*s\n", name, n, p);
    p += n + (nl != NULL);
  }
}

/* The text report and perf of split-job-ranks: Traces say "job rank",
 * Communicators map the split's ranks to job ranks and say that each rank
 * passed its own key; perf names its last-arriving ranks with their job
 * ranks, and its JSON gives them. */
static void assert_split_reports(struct run *r) {
  char *text = nsp_report_capture(nsp_report_text, r->job), *perf;
  print_lines("text", strstr(text, "\nTraces (") ? strstr(text, "\nTraces (") + 1 : text);
  assert_non_null(strstr(text, "\n  job rank 1 "));
  assert_non_null(strstr(text, "\n  job rank 3 "));
  const char *traces = strstr(text, "\nTraces (");
  assert_non_null(traces);
  assert_null(strstr(traces, "\n  rank "));
  assert_non_null(strstr(text, "traced 0-1 (job ranks 1,3),"));
  assert_non_null(strstr(text, "traced 0-1 (job ranks 0,2),"));
  assert_non_null(strstr(text, "color 1, keys differ per rank"));
  assert_null(strstr(text, " key 0"));
  free(text);
  assert_int_equal(nsp_job_perf(r->job), 0);
  perf = nsp_report_capture(nsp_report_perf_text, r->job);
  print_lines("perf", perf);
  /* On the odd split {1,3}: whoever arrived last is named with its job rank. */
  const char *c1 = strstr(perf, "color 1)");
  assert_non_null(c1);
  const char *last = strstr(c1, "last to arrive");
  if (last) {
    assert_true(strstr(last, "rank 0 (job rank 1) (") || strstr(last, "rank 1 (job rank 3) ("));
    const char *arr = strstr(c1, ", last: ");
    assert_non_null(arr);
    assert_true(!strncmp(arr, ", last: rank 0 (job rank 1))", 28) || !strncmp(arr, ", last: rank 1 (job rank 3))", 28));
  }
  free(perf);
  json_object *root = nsp_report_perf_json_object(r->job);
  assert_non_null(root);
  json_object *comms = NULL;
  assert_true(json_object_object_get_ex(root, "communicators", &comms));
  int checked = 0;
  for (size_t i = 0; i < json_object_array_length(comms); i++) {
    json_object *c = json_object_array_get_idx(comms, i), *st = NULL, *arr = NULL, *worst = NULL;
    assert_true(json_object_object_get_ex(c, "stragglers", &st));
    for (size_t k = 0; k < json_object_array_length(st); k++) {
      json_object *g = json_object_array_get_idx(st, k), *rk = NULL, *jr = NULL, *tr = NULL;
      assert_true(json_object_object_get_ex(g, "rank", &rk));
      assert_true(json_object_object_get_ex(g, "job_rank", &jr));
      assert_true(json_object_object_get_ex(g, "trace", &tr));
      assert_int_equal(json_object_get_int(jr), nsp_job_trace(r->job, (size_t)json_object_get_int64(tr))->rank);
      checked++;
    }
    assert_true(json_object_object_get_ex(c, "arrival", &arr));
    assert_true(json_object_object_get_ex(arr, "worst", &worst));
    for (size_t k = 0; k < json_object_array_length(worst); k++) {
      json_object *jr = NULL;
      assert_true(json_object_object_get_ex(json_object_array_get_idx(worst, k), "last_job_rank", &jr));
    }
  }
  assert_true(checked > 0);
  json_object_put(root);
}

/* Issue #13 item 6: a mismatch in a split communicator {1,3} names each
 * process with its job rank, in the summary and in every finding. */
static void test_split_job_ranks(void **state) {
  struct run r;
  /* Job rank 3 also says another world size, and logs more: the
   * env-world-size finding and the NCCL_DEBUG note name job ranks too. */
  struct job_opts o = {.nranks = 4, .limit_s = 120, .all_env = "OMPI_COMM_WORLD_SIZE=4",
                       .rank_env = "3:OMPI_COMM_WORLD_SIZE=8;3:NCCL_DEBUG=INFO"};
  run_job_ex(&r, "split-job-ranks", &o);
  const struct nsp_comm_info *w = world(&r, 4);
  const struct nsp_finding *f = nsp_job_finding(r.job, 0);
  assert_int_equal(f->kind, NSP_FIND_DTYPE_MISMATCH);
  assert_int_equal(f->comm->parent_id, w->id);
  assert_int_equal(f->seq, 2);
  assert_side(&f->sides[0], "0");
  assert_int_equal(nsp_job_trace(r.job, f->sides[0].procs[0].trace)->rank, 1);
  assert_side(&f->sides[1], "1");
  assert_int_equal(nsp_job_trace(r.job, f->sides[1].procs[0].trace)->rank, 3);
  const char *sum = nsp_job_summary(r.job);
  print_message("# summary: %s\n", sum);
  assert_non_null(strstr(sum, "rank 0 (job rank 1) all-reduce 256 x float32"));
  assert_non_null(strstr(sum, "rank 1 (job rank 3) all-reduce 256 x float16"));
  assert_non_null(strstr(f->message, "rank 0 (job rank 1)"));
  assert_non_null(strstr(f->message, "rank 1 (job rank 3)"));
  assert_no_bare_rank(sum);
  for (size_t i = 0; i < nsp_job_nfindings(r.job); i++) assert_no_bare_rank(nsp_job_finding(r.job, i)->message);
  const struct nsp_finding *ws = find_kind(&r, NSP_FIND_ENV_WORLD_SIZE);
  assert_non_null(strstr(ws->message, "job ranks 0-2 ("));
  assert_non_null(strstr(ws->message, "job rank 3 ("));
  const char *dbg = assert_note(r.job, "NCCL_DEBUG differs across ranks");
  assert_non_null(strstr(dbg, "job ranks 0-2 ("));
  assert_non_null(strstr(dbg, "job rank 3 ("));
  assert_split_reports(&r);
  run_done(&r);
}

/* Issue #13 item 7: an error returned by ncclGroupEnd (a call on no
 * communicator) is the error of the communicator its group's calls were
 * on, with the process's rank there, and follows from the finding on that
 * communicator that explains it (here the recv that has no send). */
static void test_group_error(void **state) {
  struct run r;
  run_case(&r, "group-error", 2);
  const struct nsp_comm_info *w = world(&r, 2);
  const struct nsp_finding *p2p = first_of(&r, NSP_FIND_P2P_UNMATCHED);
  const struct nsp_finding *e = first_of(&r, NSP_FIND_ERROR);
  assert_ptr_equal(p2p, nsp_job_finding(r.job, 0));
  assert_int_equal(p2p->comm_id, w->id);
  assert_int_equal(e->comm_id, w->id);
  assert_int_equal(e->api, NSP_API_GroupEnd);
  assert_side(&e->sides[0], "1");
  assert_int_equal(e->sides[0].procs[0].comm_rank, 1);
  assert_int_equal(e->sides[0].call.result, ncclSystemError);
  assert_null(strstr(e->message, "no communicator"));
  assert_non_null(strstr(e->message, "rank 1"));
  assert_non_null(strstr(e->message, "group-end"));
  assert_ptr_equal(nsp_job_finding(r.job, e->cause), p2p);
  assert_null(strstr(nsp_job_summary(r.job), "no communicator"));
  run_done(&r);
}

/* ---- runs told apart by communicators first (wt-fr) ---- */

/* Launcher variables that differ between ranks of one communicator
 * (mpirun under sbatch starts remote nodes through srun, so
 * SLURM_STEP_ID is set on some nodes only; one rank with a mis-set
 * variable): one run, no env-missing-ranks, every trace analysed. */
static void test_runs_split_vars(void **state) {
  static const char *const renv[] = {"2:SLURM_STEP_ID=0;3:SLURM_STEP_ID=0", "1:TORCHELASTIC_RUN_ID=stray"};
  for (size_t k = 0; k < 2; k++) {
    struct job_opts o = {.nranks = 4, .limit_s = 60, .all_env = "SLURM_JOB_ID=100;OMPI_MCA_ess_base_jobid=123",
                         .rank_env = renv[k], .none = 1};
    struct run r;
    run_job_ex(&r, "c10", &o);
    assert_int_equal(r.launch_status, 0);
    for (size_t i = 0; i < nsp_job_nfindings(r.job); i++) fail_msg("finding: %s", nsp_job_finding(r.job, i)->message);
    assert_int_equal(nsp_job_nruns(r.job), 1);
    assert_int_equal(nsp_job_ntraces(r.job), 4);
    assert_int_equal(world(&r, 4)->ntraced, 4);
    /* The run is named by the variables most of its ranks have. */
    assert_string_equal(nsp_job_run(r.job, 0)->id, k ? "slurm:100/openmpi:123" : "slurm:100/openmpi:123");
    run_done(&r);
  }
}

/* Two healthy 2-rank jobs with no launcher variables that overlap in
 * time in one directory (no communicator in common, each world complete):
 * two runs, the newest analysed with no finding; --run all compares them
 * as one job, still with no env-world-size (every group matches
 * WORLD_SIZE=2). */
static void test_runs_overlap(void **state) {
  struct run b;
  char dir[64] = "/tmp/nsp-case-runs_overlap-XXXXXX";
  assert_non_null(mkdtemp(dir));
  char envA[160], envB[160];
  snprintf(envA, sizeof envA, "NSP_LIVE_S=3;NSP_UID_FILE=%s/uidA", dir);
  snprintf(envB, sizeof envB, "NSP_UID_FILE=%s/uidB", dir);
  struct job_opts oa = {.nranks = 2, .limit_s = 60, .all_env = envA};
  pid_t pa = fork();
  assert_true(pa >= 0);
  if (pa == 0) exec_launch(dir, "live", &oa);
  struct timespec ts = {1, 0};
  nanosleep(&ts, NULL);
  struct job_opts ob = {.nranks = 2, .ntraces = 4, .limit_s = 60, .all_env = envB, .into = dir, .none = 1};
  run_job_ex(&b, "c10", &ob);
  assert_int_equal(b.launch_status, 0);
  int st = 0;
  assert_int_equal(waitpid(pa, &st, 0), pa);
  assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  nsp_job_destroy(b.job);

  b.job = analyse_run(b.dir, NULL);
  for (size_t i = 0; i < nsp_job_nfindings(b.job); i++) fail_msg("finding: %s", nsp_job_finding(b.job, i)->message);
  assert_int_equal(nsp_job_nruns(b.job), 2);
  assert_int_equal(nsp_job_ntraces(b.job), 2);
  assert_contains(nsp_job_note(b.job, 0), "1 older run in these traces ignored: comm:");
  nsp_job_destroy(b.job);

  b.job = analyse_run(b.dir, "all");
  assert_int_equal(nsp_job_ntraces(b.job), 4);
  assert_int_equal(count_kind(&b, NSP_FIND_ENV_WORLD_SIZE), 0);
  run_done(&b);
}

/* A process that joined no communicator, with RANK=0 in its environment
 * (it made the unique id), killed by SIGKILL beside a healthy 2-rank job
 * whose rank 0 exited cleanly: no finding, and nothing calls it "rank 0":
 * the summary names it by pid and host as one that joined no
 * communicator. */
static void test_launcher_killed(void **state) {
  struct job_opts o = {.nranks = 3,
                       .limit_s = 60,
                       .all_env = "WORLD_SIZE=2",
                       .rank_env = "2:NSP_CASES_LAUNCHER=2;2:RANK=0",
                       .none = 1};
  struct run r;
  run_job_ex(&r, "launcher", &o);
  for (size_t i = 0; i < nsp_job_nfindings(r.job); i++) fail_msg("finding: %s", nsp_job_finding(r.job, i)->message);
  const struct nsp_trace_info *l = NULL;
  for (size_t i = 0; i < nsp_job_ntraces(r.job); i++)
    if (!nsp_job_trace(r.job, i)->joined) l = nsp_job_trace(r.job, i);
  assert_non_null(l);
  const char *sum = nsp_job_summary(r.job);
  print_message("# headline: %s\n# summary: %s\n", nsp_job_headline(r.job), sum);
  assert_null(strstr(sum, "rank 0 ended"));
  assert_null(strstr(nsp_job_headline(r.job), "rank 0"));
  char want[200];
  snprintf(want, sizeof want, "pid %u on host %s, which joined no communicator (RANK=0 in its environment), ended",
           l->pid, l->host);
  assert_contains(sum, want);
  for (size_t i = 0; i < nsp_job_nnotes(r.job); i++) {
    const char *n = nsp_job_note(r.job, i);
    if (strstr(n, "rank 0 ") && !strstr(n, "RANK=0")) fail_msg("note names it rank 0: %s", n);
  }
  run_done(&r);
}

/* The job rank of process p of finding f. */
static int job_rank_of(struct run *r, const struct nsp_proc *p) { return nsp_job_trace(r->job, p->trace)->rank; }

/* Issue #13 fix-up: a group's calls on the world (first) and on a split
 * (then): the error ncclGroupEnd returns belongs to the split, where the
 * unmatched recv explains it, and is linked to that finding. */
static void test_group_multi(void **state) {
  struct run r;
  run_case(&r, "group-multi", 4);
  const struct nsp_comm_info *w = world(&r, 4);
  const struct nsp_finding *p2p = first_of(&r, NSP_FIND_P2P_UNMATCHED);
  const struct nsp_finding *e = first_of(&r, NSP_FIND_ERROR);
  assert_ptr_equal(p2p, nsp_job_finding(r.job, 0));
  assert_int_equal(p2p->comm->parent_id, w->id);
  assert_int_equal(e->api, NSP_API_GroupEnd);
  assert_int_equal(job_rank_of(&r, &e->sides[0].procs[0]), 3);
  assert_int_equal(e->comm_id, p2p->comm_id);
  assert_ptr_equal(nsp_job_finding(r.job, e->cause), p2p);
  assert_contains(e->message, "follows the p2p-unmatched");
  run_done(&r);
}

/* Issue #13 fix-up: a recv the stand-in accepted, then failed waiting
 * (32 floats where 16 were sent), was posted: a size mismatch of 64 vs
 * 128 bytes on the split, not an unmatched send. */
static void test_p2p_size(void **state) {
  struct run r;
  run_case(&r, "p2p-size", 4);
  const struct nsp_finding *f = nsp_job_finding(r.job, 0);
  print_message("# %s\n", f->message);
  assert_int_equal(f->kind, NSP_FIND_P2P_SIZE_MISMATCH);
  assert_int_equal(f->seq, 2);
  assert_int_equal(count_kind(&r, NSP_FIND_P2P_UNMATCHED), 0);
  assert_contains(f->message, "64");
  assert_contains(f->message, "128");
  run_done(&r);
}

/* Asserts that text names the processes of half {3,1} (ranks 0 and 1 =
 * job ranks 3 and 1) unambiguously: every "rank 3" is a "job rank 3",
 * and every "rank 0" carries its job rank. */
static void assert_no_bare_rank_half31(const char *text) {
  for (const char *p = strstr(text, "rank "); p; p = strstr(p + 1, "rank ")) {
    if (p >= text + 4 && !strncmp(p - 4, "job ", 4)) continue;
    if (!strncmp(p, "rank 3", 6) || (!strncmp(p, "rank 0", 6) && strncmp(p, "rank 0 (job rank 3)", 19)))
      fail_msg("bare rank in: %.120s", p > text + 60 ? p - 60 : text);
  }
}

/* Issue #13 fix-up: a comm-init-wait on a split of a split, the rank that
 * never called it killed: how each process ended names it by job rank. */
static void test_no_split2(void **state) {
  struct run r;
  run_killed(&r, "no-split2", 4, 4, 5);
  const struct nsp_finding *f = first_of(&r, NSP_FIND_COMM_INIT_WAIT);
  print_message("# %.700s\n", f->message);
  print_message("# summary: %.700s\n", nsp_job_summary(r.job));
  assert_contains(f->message, "ended without a clean exit");
  assert_no_bare_rank_half31(f->message);
  assert_no_bare_rank_half31(nsp_job_summary(r.job));
  run_done(&r);
}

/* Issue #13 fix-up: an error on a split whose hint lists a setting's
 * values per rank: those are job ranks, and say so. */
static void test_err_split(void **state) {
  struct run r;
  struct job_opts o = {.nranks = 4, .limit_s = 60,
                       .all_env = "NSP_STANDIN_FAIL=rank=3,comm=1,seq=2,result=2,msg=NET/IB : x"};
  run_job_ex(&r, "err-split", &o);
  const struct nsp_finding *e = first_of(&r, NSP_FIND_ERROR);
  print_message("# %.700s\n", e->hint);
  assert_contains(e->hint, "NCCL_IB_HCA");
  assert_contains(e->hint, "on job ranks 0-3");
  run_done(&r);
}

/* ---- issue #14: native frames with function and file:line (libdw) ---- */

/* The first line of nsp_cases.c (NSP_CASES_SOURCE) holding `needle`, from 1;
 * fails when none does. */
static int cases_line_of(const char *needle) {
  FILE *f = fopen(NSP_CASES_SOURCE, "r");
  assert_non_null(f);
  char line[4096];
  int n = 0, found = 0;
  while (!found && fgets(line, sizeof line, f)) {
    n++;
    found = strstr(line, needle) != NULL;
  }
  fclose(f);
  if (!found) fail_msg("no line of %s holds %s", NSP_CASES_SOURCE, needle);
  return n;
}

static char *json_plain(const struct nsp_job *job) {
  struct json_object *o = nsp_report_json_object(job);
  assert_non_null(o);
  char *s = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
  json_object_put(o);
  assert_non_null(s);
  return s;
}

/* c01 run from a copy of the case program: each side's call site names
 * the all-reduce's line in nsp_cases.c (text and JSON).  Then the copy is
 * replaced by another program: its build-id no longer matches the trace's
 * MODULE record, so frames are offsets and a note says why.  Built
 * without libdw, frames are module+offset as before, with no note. */
static void test_native_lines(void **state) {
  int want = cases_line_of("NC(ncclAllReduce(buf, buf, count, t, op, cc->comm, nsp_cases_stream)), K_AR");
  char bin[64] = "/tmp/nsp-case-bin-XXXXXX", exe[128], cmd[512], libdir[PATH_MAX], env[PATH_MAX + 32];
  assert_non_null(mkdtemp(bin));
  snprintf(exe, sizeof exe, "%s/nsp_cases", bin);
  snprintf(cmd, sizeof cmd, "cp '%s' '%s'", cases_exe, exe);
  assert_int_equal(system(cmd), 0);
  /* The copy's rpath ($ORIGIN/../standin) finds no stand-in from here. */
  snprintf(libdir, sizeof libdir, "%s", standin_nccl_so);
  *strrchr(libdir, '/') = 0;
  snprintf(env, sizeof env, "LD_LIBRARY_PATH=%s", libdir);
  const char *saved = cases_exe;
  cases_exe = exe;
  struct run r;
  struct job_opts o = {.nranks = 2, .limit_s = 120, .all_env = env};
  run_job_ex(&r, "c01", &o);
  cases_exe = saved;
  const struct nsp_finding *f = first_of(&r, NSP_FIND_DTYPE_MISMATCH);
  char at[64], in_json[128];
  snprintf(at, sizeof at, "nsp_cases_allreduce (nsp_cases.c:%d)", want);
  snprintf(in_json, sizeof in_json, "\"line\":%d", want);
  char *text = nsp_report_capture(nsp_report_text, r.job);
  char *json = json_plain(r.job);
  print_lines("text", text);
  for (size_t k = 0; k < f->nsides; k++) {
    const struct nsp_callsite *cs = f->sides[k].procs[0].site;
    assert_non_null(cs);
    assert_true(cs->nframes > 0);
    const struct nsp_frame *fr = &cs->frames[0];
    print_message("# side %zu frame 0: %s+0x%llx %s (%s:%d)\n", k, fr->module, (unsigned long long)fr->offset,
                  fr->function ? fr->function : "-", fr->file ? fr->file : "-", fr->line);
    assert_string_equal(fr->module, exe); /* /proc/self/exe's target, not argv[0] */
#if NSP_HAVE_LIBDW
    assert_non_null(fr->function);
    assert_string_equal(fr->function, "nsp_cases_allreduce");
    assert_non_null(fr->file);
    char src[PATH_MAX];
    assert_non_null(realpath(NSP_CASES_SOURCE, src));
    assert_string_equal(fr->file, src); /* absolute, against the compilation directory */
    assert_int_equal(fr->line, want);
#else
    assert_true(!fr->file || !fr->file[0]);
#endif
  }
#if NSP_HAVE_LIBDW
  assert_contains(text, at);
  assert_contains(json, in_json);
  assert_contains(json, "\"function\":\"nsp_cases_allreduce\"");
  assert_contains(json, "nsp_cases.c\"");
#else
  assert_null(strstr(text, "nsp_cases.c:"));
  assert_null(strstr(json, "\"line\":"));
#endif
  free(text);
  free(json);

  /* The program changed since the job ran. */
  snprintf(cmd, sizeof cmd, "cp '%s' '%s'", launch_exe, exe);
  assert_int_equal(system(cmd), 0);
  struct nsp_job *job = nsp_job_create();
  assert_non_null(job);
  assert_int_equal(nsp_job_add_path(job, r.dir), 2);
  assert_int_equal(nsp_job_analyze(job), 0);
  text = nsp_report_capture(nsp_report_text, job);
  print_lines("changed", text);
  assert_null(strstr(text, "nsp_cases.c:"));
  assert_contains(text, "nsp_cases+0x");
  char note[256];
  snprintf(note, sizeof note, "%s changed since the job ran (build-id differs): its frames are shown as offsets", exe);
  int noted = 0;
  for (size_t i = 0; i < nsp_job_nnotes(job); i++) noted += strstr(nsp_job_note(job, i), note) != NULL;
#if NSP_HAVE_LIBDW
  assert_int_equal(noted, 1);
#else
  assert_int_equal(noted, 0);
#endif
  free(text);
  nsp_job_destroy(job);
  run_done(&r);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", bin);
  assert_int_equal(system(cmd), 0);
}

int main(int argc, char **argv) {
  if (argc != 7) {
    fprintf(stderr, "usage: %s NSP_LAUNCH NSP_CASES LIBNCCLSPY CASE STANDIN_NCCL STANDIN_HOST\n", argv[0]);
    return 2;
  }
  launch_exe = argv[1];
  cases_exe = argv[2];
  shim_so = argv[3];
  standin_nccl_so = argv[5];
  standin_host_so = argv[6];
  gethostname(this_host, sizeof this_host - 1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_c01), cmocka_unit_test(test_c02), cmocka_unit_test(test_c03),
      cmocka_unit_test(test_c04), cmocka_unit_test(test_c05), cmocka_unit_test(test_c06),
      cmocka_unit_test(test_c07), cmocka_unit_test(test_c08), cmocka_unit_test(test_c09),
      cmocka_unit_test(test_c10),    cmocka_unit_test(test_c10_untracked), cmocka_unit_test(test_c11),
      cmocka_unit_test(test_killed_hang),
      cmocka_unit_test(test_c12),      cmocka_unit_test(test_env),
      cmocka_unit_test(test_env_versions), cmocka_unit_test(test_env_settings),
      cmocka_unit_test(test_env_dup_gpu), cmocka_unit_test(test_env_dup_rank),
      cmocka_unit_test(test_env_nranks), cmocka_unit_test(test_env_missing),
      cmocka_unit_test(test_env_never_started), cmocka_unit_test(test_env_world_size),
      cmocka_unit_test(test_c03_killed), cmocka_unit_test(test_no_split), cmocka_unit_test(test_no_split_killed),
      cmocka_unit_test(test_no_init), cmocka_unit_test(test_no_init_killed), cmocka_unit_test(test_abort_exit0),
      cmocka_unit_test(test_abort_exit0_killed), cmocka_unit_test(test_live_healthy),
      cmocka_unit_test(test_live_hang), cmocka_unit_test(test_killed_healthy), cmocka_unit_test(test_exit_status),
      cmocka_unit_test(test_premul_handles), cmocka_unit_test(test_extra_coll), cmocka_unit_test(test_skipped_coll),
      cmocka_unit_test(test_late_skip),
      cmocka_unit_test(test_launcher), cmocka_unit_test(test_runs_twice), cmocka_unit_test(test_runs_fail_after_healthy),
      cmocka_unit_test(test_env_debug),
      cmocka_unit_test(test_split_job_ranks), cmocka_unit_test(test_group_error),
      cmocka_unit_test(test_runs_split_vars), cmocka_unit_test(test_runs_overlap),
      cmocka_unit_test(test_launcher_killed),
      cmocka_unit_test(test_group_multi), cmocka_unit_test(test_p2p_size), cmocka_unit_test(test_no_split2),
      cmocka_unit_test(test_err_split),
      cmocka_unit_test(test_native_lines),
  };
  char filter[32];
  snprintf(filter, sizeof filter, "test_%s", argv[4]);
  cmocka_set_test_filter(filter);
  return cmocka_run_group_tests_name(argv[4], tests, NULL, NULL);
}
