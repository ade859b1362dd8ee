/* test_dlsym_cases.c - jobs that reach NCCL by hand, end to end: 2 ranks
 * on the CPU stand-in for NCCL under libncclspy.so, then the analyzer on
 * their traces.  Two callers, neither linked to NCCL:
 *   xla     tests/cases/nsp_xla_stub: dlopen(RTLD_LOCAL) and a dlsym per
 *           entry point, as XLA's nccl_stub.cc (JAX, TensorFlow); each
 *           all-reduce inside ncclGroupStart/End, as XLA's thunks;
 *   ctypes  tests/cases/nsp_pynccl.py: Python's ctypes.CDLL and attribute
 *           access, as vLLM's and SGLang's PyNccl.
 * Cases, each for both callers:
 *   <caller>         healthy, 20 all-reduces: every call traced;
 *   <caller>_count   rank 1 passes 1000 elements instead of 1024 at the 3rd
 *                    all-reduce: rank 0 waits for bytes that never come
 *                    until the stand-in gives up (3 s);
 *   <caller>_killed  the same mismatch, both ranks killed (SIGKILL by the
 *                    launcher's time limit) long before the stand-in's
 *                    timeout, while rank 0 waits inside the call (ctypes:
 *                    the call never returned and is read from the crash
 *                    ring's in-flight table; xla: it returned inside its
 *                    group, and rank 0 waits in ncclGroupEnd).
 * The mismatch cases assert the finding a user would act on: its kind,
 * communicator, seq and the ranks and counts on each side.
 * Python call sites (ctypes only; shim/nsp_pysite.c):
 *   ctypes_pysite      at the 2nd all-reduce both ranks' calls run on a
 *                      native thread their Python main thread waits for
 *                      (tests/cases/nsp_pythread.c): a borrowed site naming
 *                      the main thread's waiting line; at the 4th rank 1
 *                      calls from another line of the script with another
 *                      count: each CALL's site names its own line;
 *   ctypes_pysite_off  the same with NCCLSPY_PYSITES=0: no site at all.
 * Expected lines are those of the script's "nsp-pysite: <what>" comments.
 *
 * usage: test_dlsym_cases NSP_LAUNCH LIBNCCLSPY STANDIN_NCCL XLA_STUB PYTHON PYNCCL_PY CASE */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dirent.h>

#include "nsp_analyze.h"
#include "nsp_names.h"
#include "nsp_reader.h"
#include "nsp_record.h"
#include "nsp_report.h"
#include "tests/nsp_report_capture.h"

static const char *launch_exe, *shim_so, *standin_so, *xla_exe, *python_exe, *pynccl_py;
/* More "-e NAME=VALUE" for the ranks (NULL-terminated), set by a test. */
static const char *extra_env[4];

struct run {
  char dir[64];
  struct nsp_job *job;
  int launch_status;
};

/* The job being looked at: freed by the teardown when an assertion ends
 * the test first. */
static struct run *nsp_current;

/* Runs 2 ranks of `caller` ("xla" or "ctypes") under the shim; odd:
 * "R:S:C" (rank R passes count C at step S) or NULL; the launcher kills
 * the ranks after limit_s; the stand-in gives up on a peer after
 * timeout_ms. */
static void run_job(struct run *r, const char *caller, const char *odd, int limit_s, int timeout_ms) {
  int xla = !strcmp(caller, "xla");
  snprintf(r->dir, sizeof r->dir, "/tmp/nsp-dlsym-%s-XXXXXX", caller);
  assert_non_null(mkdtemp(r->dir));
  char limit[16], env_preload[4200], env_dir[128], env_uid[128], env_lib[4200], env_odd[128];
  snprintf(limit, sizeof limit, "%d", limit_s);
  snprintf(env_preload, sizeof env_preload, "LD_PRELOAD=%s", shim_so);
  snprintf(env_dir, sizeof env_dir, "NCCLSPY_DIR=%s", r->dir);
  snprintf(env_uid, sizeof env_uid, "NSP_UID_FILE=%s/uid", r->dir);
  snprintf(env_lib, sizeof env_lib, "%s=%s", xla ? "NSP_XLA_LIBNCCL" : "NSP_PYNCCL_LIBNCCL", standin_so);
  snprintf(env_odd, sizeof env_odd, "%s=%s", xla ? "NSP_XLA_ODD" : "NSP_PYNCCL_ODD", odd ? odd : "");
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    char t[32];
    snprintf(t, sizeof t, "%d", timeout_ms);
    setenv("NSP_STANDIN_TIMEOUT_MS", t, 1);
    char log[128];
    snprintf(log, sizeof log, "%s/ranks.log", r->dir);
    if (!freopen(log, "w", stdout)) _exit(126);
    char *argv[40] = {(char *)launch_exe, "-n", "2", "-t", limit, "-e", env_preload, "-e", env_dir,
                      "-e", env_uid, "-e", env_lib, "-e", env_odd};
    int k = 15;
    for (int e = 0; extra_env[e]; e++) {
      argv[k++] = "-e";
      argv[k++] = (char *)extra_env[e];
    }
    argv[k++] = "--";
    if (xla) {
      argv[k++] = (char *)xla_exe;
    } else {
      argv[k++] = (char *)python_exe;
      argv[k++] = (char *)pynccl_py;
    }
    argv[k] = NULL;
    execv(launch_exe, argv);
    _exit(127);
  }
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  r->launch_status = WEXITSTATUS(status);
  print_message("# launcher exit status %d\n", r->launch_status);
  r->job = nsp_job_create();
  assert_non_null(r->job);
  nsp_current = r;
  assert_int_equal(nsp_job_add_path(r->job, r->dir), 2);
  assert_int_equal(nsp_job_analyze(r->job), 0);
  for (size_t i = 0; i < nsp_job_nfindings(r->job); i++)
    print_message("# finding %zu: %.900s\n", i, nsp_job_finding(r->job, i)->message);
}

static void run_done(struct run *r);

static int teardown(void **state) {
  if (nsp_current) run_done(nsp_current);
  return 0;
}

static void run_done(struct run *r) {
  nsp_current = NULL;
  nsp_job_destroy(r->job);
  r->job = NULL;
  if (!getenv("NSP_KEEP")) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", r->dir);
    assert_int_equal(system(cmd), 0);
  }
}

static const struct nsp_comm_info *world(struct run *r) {
  assert_int_equal(nsp_job_ncomms(r->job), 1);
  const struct nsp_comm_info *c = nsp_job_comm(r->job, 0);
  assert_int_equal(c->nranks, 2);
  assert_int_equal(c->ntraced, 2);
  return c;
}

static void assert_side(const struct nsp_side *s, const char *ranks) {
  char buf[256];
  nsp_format_ranks(buf, sizeof buf, s->ranks, s->nranks);
  assert_string_equal(buf, ranks);
}

/* 20 all-reduces on each rank, all recorded, through the stand-in. */
static void healthy(const char *caller) {
  static struct run r; /* outlives the test: the teardown may free it */
  run_job(&r, caller, NULL, 60, 3000);
  assert_int_equal(r.launch_status, 0);
  assert_int_equal(nsp_job_nfindings(r.job), 0);
  const struct nsp_comm_info *c = world(&r);
  assert_int_equal(c->ncoll, 2 * 20);
  assert_int_equal(c->max_seq, 20);
  char want[PATH_MAX], got[PATH_MAX];
  assert_non_null(realpath(standin_so, want));
  for (size_t i = 0; i < nsp_job_ntraces(r.job); i++) {
    const struct nsp_trace_info *t = nsp_job_trace(r.job, i);
    assert_int_equal(t->work_calls, 20);
    /* The library the program dlopen'ed is the one the shim interposes. */
    assert_non_null(t->nccl_path);
    assert_non_null(realpath(t->nccl_path, got));
    assert_string_equal(got, want);
  }
  run_done(&r);
}

/* The count-mismatch at seq 3: rank 0 1024 elements, rank 1 1000. */
static void assert_count_mismatch(struct run *r) {
  assert_true(nsp_job_nfindings(r->job) > 0);
  const struct nsp_finding *f = nsp_job_finding(r->job, 0);
  assert_string_equal(nsp_finding_kind_name(f->kind), "count-mismatch");
  assert_int_equal(f->comm_id, world(r)->id);
  assert_int_equal(f->seq, 3);
  assert_int_equal(f->nsides, 2);
  assert_side(&f->sides[0], "0");
  assert_int_equal(f->sides[0].call.api, NSP_API_AllReduce);
  assert_int_equal(f->sides[0].call.count, 1024);
  assert_side(&f->sides[1], "1");
  assert_int_equal(f->sides[1].call.api, NSP_API_AllReduce);
  assert_int_equal(f->sides[1].call.count, 1000);
}

static void count_mismatch(const char *caller) {
  static struct run r; /* outlives the test: the teardown may free it */
  run_job(&r, caller, "1:3:1000", 60, 3000);
  assert_int_equal(r.launch_status, 1); /* the ranks' own watchdogs ended them */
  assert_count_mismatch(&r);
  run_done(&r);
}

/* Killed at 5 s, the stand-in waiting up to 60 s: rank 0 is inside its
 * 3rd all-reduce (ctypes) or the ncclGroupEnd after it (xla). */
static void killed(const char *caller) {
  static struct run r; /* outlives the test: the teardown may free it */
  run_job(&r, caller, "1:3:1000", 5, 60000);
  assert_int_equal(r.launch_status, 124);
  assert_count_mismatch(&r);
  run_done(&r);
}

/* ---- Python call sites ---- */

/* The line of the script's comment "nsp-pysite: <what>". */
static int marker_line(const char *what) {
  FILE *f = fopen(pynccl_py, "r");
  assert_non_null(f);
  char line[1024], want[64];
  snprintf(want, sizeof want, "nsp-pysite: %s", what);
  int n = 0, at = 0;
  while (fgets(line, sizeof line, f)) {
    n++;
    if (strstr(line, want)) at = n;
  }
  fclose(f);
  assert_true(at > 0);
  return at;
}

/* What one rank's trace says about its all-reduces' Python sites. */
struct pysite_seen {
  int rank;
  uint32_t pid;
  unsigned npysites, nborrowed;
  struct {
    uint64_t seq, count;
    uint32_t pysite;
  } calls[32];
  unsigned ncalls;
  struct {
    uint32_t id, flags, tid, nframes;
    char file[512], func[256];
    uint64_t line;
  } sites[16];
};

static void read_pysites(struct run *r, struct pysite_seen seen[2]) {
  memset(seen, 0, 2 * sizeof *seen);
  DIR *d = opendir(r->dir);
  assert_non_null(d);
  struct dirent *e;
  int ntraces = 0;
  while ((e = readdir(d))) {
    size_t l = strlen(e->d_name);
    if (l < 8 || strcmp(e->d_name + l - 8, ".ncclspy")) continue;
    char path[512], err[256];
    snprintf(path, sizeof path, "%s/%s", r->dir, e->d_name);
    struct nsp_reader *rd = nsp_reader_open(path, err, sizeof err);
    assert_non_null(rd);
    struct pysite_seen s;
    memset(&s, 0, sizeof s);
    s.rank = -1;
    struct nsp_rec rec;
    while (nsp_reader_next(rd, &rec) > 0) {
      if (rec.kind == NSP_REC_PROCESS) s.pid = rec.ext->pid;
      else if (rec.kind == NSP_REC_COMM) s.rank = rec.ext->rank;
      else if (rec.kind == NSP_REC_CALL && nsp_rec_call_api(&rec) == NSP_API_AllReduce && s.ncalls < 32) {
        s.calls[s.ncalls].seq = nsp_rec_call_seq(&rec);
        s.calls[s.ncalls].count = nsp_rec_call_count(&rec);
        s.calls[s.ncalls++].pysite = nsp_rec_call_pysite(&rec);
      } else if (rec.kind == NSP_REC_PYSITE) {
        s.npysites++;
        if (nsp_rec_pysite_flags(&rec) & NSP_PYSITE_BORROWED) s.nborrowed++;
        if (s.npysites > 16) continue; /* counted only (the busy case) */
        __typeof__(&s.sites[0]) t = &s.sites[s.npysites - 1];
        t->id = nsp_rec_pysite_site(&rec);
        t->flags = nsp_rec_pysite_flags(&rec);
        t->tid = nsp_rec_pysite_tid(&rec);
        t->nframes = rec.ext->nframes;
        assert_true(t->nframes > 0);
        snprintf(t->file, sizeof t->file, "%s", rec.ext->frame_module[0]);
        snprintf(t->func, sizeof t->func, "%s", rec.ext->frame_symbol[0]);
        t->line = rec.ext->frame_offset[0];
        print_message("# rank pid %u: pysite %u flags %u tid %u: %s:%llu %s (%u frames)\n", s.pid, t->id,
                      t->flags, t->tid, t->file, (unsigned long long)t->line, t->func, t->nframes);
      }
    }
    nsp_reader_destroy(rd);
    assert_true(s.rank == 0 || s.rank == 1);
    seen[s.rank] = s;
    ntraces++;
  }
  closedir(d);
  assert_int_equal(ntraces, 2);
}

/* The site of rank s's all-reduce at seq; fails when it has none. */
static const __typeof__(((struct pysite_seen *)0)->sites[0]) *site_at(const struct pysite_seen *s, uint64_t seq,
                                                                       uint64_t *count) {
  for (unsigned i = 0; i < s->ncalls; i++) {
    if (s->calls[i].seq != seq) continue;
    *count = s->calls[i].count;
    for (unsigned k = 0; k < s->npysites; k++)
      if (s->sites[k].id == s->calls[i].pysite) return &s->sites[k];
    fail_msg("rank %d: the all-reduce at seq %llu names Python site %u, which its trace lacks", s->rank,
             (unsigned long long)seq, s->calls[i].pysite);
  }
  fail_msg("rank %d: no all-reduce at seq %llu", s->rank, (unsigned long long)seq);
  return NULL;
}

static void assert_frame(const __typeof__(((struct pysite_seen *)0)->sites[0]) *t, int line, const char *func,
                         const char *func310) {
  char want[PATH_MAX], got[PATH_MAX];
  assert_non_null(realpath(pynccl_py, want));
  assert_non_null(realpath(t->file, got));
  assert_string_equal(got, want);
  assert_int_equal(t->line, line);
  if (strcmp(t->func, func)) assert_string_equal(t->func, func310); /* 3.10 names co_name */
}

static void pysite_job(struct run *r, int off) {
  static char thread_env[PATH_MAX + 64];
  const char *lib = getenv("NSP_PYTHREAD_LIB");
  assert_non_null(lib);
  snprintf(thread_env, sizeof thread_env, "NSP_PYNCCL_THREAD=2:%s", lib);
  extra_env[0] = "NSP_PYNCCL_ODD_LINE=1";
  extra_env[1] = thread_env;
  extra_env[2] = off ? "NCCLSPY_PYSITES=0" : NULL;
  extra_env[3] = NULL;
  run_job(r, "ctypes", "1:4:1000", 60, 3000);
  memset(extra_env, 0, sizeof extra_env);
  assert_int_equal(r->launch_status, 1);
}

static void test_ctypes_pysite(void **state) {
  static struct run r;
  pysite_job(&r, 0);
  struct pysite_seen seen[2];
  read_pysites(&r, seen);
  uint64_t count;
  for (int k = 0; k < 2; k++) {
    /* seq 1 and 3: the usual line, innermost (NCCLLibrary.call). */
    const __typeof__(seen[0].sites[0]) *t = site_at(&seen[k], 1, &count);
    assert_int_equal(t->flags, 0);
    assert_frame(t, marker_line("call"), "NCCLLibrary.call", "call");
    assert_true(t->nframes >= 2);
    assert_ptr_equal(site_at(&seen[k], 3, &count), t);
    /* seq 2: on a native thread; the main thread's waiting line. */
    t = site_at(&seen[k], 2, &count);
    /* NSP_PYSITE_BORROWED, and whole: the main thread's stack reaches its
     * <module> (not marked cut) */
    assert_int_equal(t->flags, NSP_PYSITE_BORROWED);
    assert_int_equal(t->tid, seen[k].pid);
    assert_frame(t, marker_line("thread"), "main", "main");
    /* seq 4: rank 1 from odd_all_reduce with 1000 elements. */
    t = site_at(&seen[k], 4, &count);
    if (k == 0) {
      assert_int_equal(count, 1024);
      assert_frame(t, marker_line("call"), "NCCLLibrary.call", "call");
    } else {
      assert_int_equal(count, 1000);
      assert_frame(t, marker_line("odd"), "odd_all_reduce", "odd_all_reduce");
    }
  }
  /* The report's headline names each side's own line: rank 0's usual
   * call, rank 1's odd_all_reduce. */
  char *text = nsp_report_capture(nsp_report_text, r.job);
  assert_true(!strncmp(text, "seq 4 all-reduce on communicator", 32));
  for (int k = 0; k < 2; k++) {
    char head[32], want[64];
    snprintf(head, sizeof head, "\n  rank %d: ", k);
    snprintf(want, sizeof want, "nsp_pynccl.py:%d in %s", marker_line(k ? "odd" : "call"),
             k ? "odd_all_reduce" : "");
    const char *line = strstr(text, head);
    assert_non_null(line);
    const char *end = strchr(line + 1, '\n');
    assert_non_null(end);
    print_message("# headline:%.*s\n", (int)(end - line - 1), line + 1);
    const char *at = strstr(line, want);
    assert_true(at && at < end);
  }
  free(text);
  run_done(&r);
}

/* Every all-reduce on a new Python thread, from one line: one site for
 * all of them (the site is the stack, not the thread). */
static void test_ctypes_pysite_threads(void **state) {
  static struct run r;
  extra_env[0] = "NSP_PYNCCL_PYTHREADS=1";
  extra_env[1] = "NSP_PYNCCL_STEPS=12";
  run_job(&r, "ctypes", NULL, 60, 3000);
  memset(extra_env, 0, sizeof extra_env);
  assert_int_equal(r.launch_status, 0);
  assert_int_equal(nsp_job_nfindings(r.job), 0);
  struct pysite_seen seen[2];
  read_pysites(&r, seen);
  uint64_t count;
  for (int k = 0; k < 2; k++) {
    assert_int_equal(seen[k].ncalls, 12);
    assert_int_equal(seen[k].npysites, 1);
    const __typeof__(seen[0].sites[0]) *t = site_at(&seen[k], 1, &count);
    for (uint64_t seq = 2; seq <= 12; seq++) assert_ptr_equal(site_at(&seen[k], seq, &count), t);
    assert_frame(t, marker_line("call"), "NCCLLibrary.call", "call");
  }
  run_done(&r);
}

/* A native thread makes 1500 all-reduces while the main thread runs on
 * through 2000 lines: each call borrows whatever the main thread runs,
 * and the borrowed sites are capped (256) so they cannot fill the table
 * that the program's own calls need. */
static void test_ctypes_pysite_busy(void **state) {
  static struct run r;
  static char busy_env[PATH_MAX + 64];
  const char *lib = getenv("NSP_PYTHREAD_LIB");
  assert_non_null(lib);
  snprintf(busy_env, sizeof busy_env, "NSP_PYNCCL_BUSY=1500:%s", lib);
  extra_env[0] = busy_env;
  extra_env[1] = "NSP_PYNCCL_STEPS=2";
  run_job(&r, "ctypes", NULL, 60, 10000);
  memset(extra_env, 0, sizeof extra_env);
  assert_int_equal(r.launch_status, 0);
  struct pysite_seen seen[2];
  read_pysites(&r, seen);
  for (int k = 0; k < 2; k++) {
    print_message("# rank %d: %u Python sites, %u borrowed\n", seen[k].rank, seen[k].npysites, seen[k].nborrowed);
    assert_true(seen[k].nborrowed <= 256);
    assert_true(seen[k].nborrowed >= 1);
  }
  run_done(&r);
}

static void test_ctypes_pysite_off(void **state) {
  static struct run r;
  pysite_job(&r, 1);
  struct pysite_seen seen[2];
  read_pysites(&r, seen);
  for (int k = 0; k < 2; k++) {
    assert_int_equal(seen[k].npysites, 0);
    assert_true(seen[k].ncalls >= 4);
    for (unsigned i = 0; i < seen[k].ncalls; i++) assert_int_equal(seen[k].calls[i].pysite, 0);
  }
  run_done(&r);
}

static void test_xla(void **state) { healthy("xla"); }
static void test_xla_count(void **state) { count_mismatch("xla"); }
static void test_xla_killed(void **state) { killed("xla"); }
static void test_ctypes(void **state) { healthy("ctypes"); }
static void test_ctypes_count(void **state) { count_mismatch("ctypes"); }
static void test_ctypes_killed(void **state) { killed("ctypes"); }

int main(int argc, char **argv) {
  if (argc != 8) {
    fprintf(stderr, "usage: %s NSP_LAUNCH LIBNCCLSPY STANDIN_NCCL XLA_STUB PYTHON PYNCCL_PY CASE\n", argv[0]);
    return 2;
  }
  launch_exe = argv[1];
  shim_so = argv[2];
  standin_so = argv[3];
  xla_exe = argv[4];
  python_exe = argv[5];
  pynccl_py = argv[6];
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_xla, teardown),
      cmocka_unit_test_teardown(test_xla_count, teardown),
      cmocka_unit_test_teardown(test_xla_killed, teardown),
      cmocka_unit_test_teardown(test_ctypes, teardown),
      cmocka_unit_test_teardown(test_ctypes_count, teardown),
      cmocka_unit_test_teardown(test_ctypes_killed, teardown),
      cmocka_unit_test_teardown(test_ctypes_pysite, teardown),
      cmocka_unit_test_teardown(test_ctypes_pysite_off, teardown),
      cmocka_unit_test_teardown(test_ctypes_pysite_threads, teardown),
      cmocka_unit_test_teardown(test_ctypes_pysite_busy, teardown),
  };
  char filter[32];
  snprintf(filter, sizeof filter, "test_%s", argv[7]);
  cmocka_set_test_filter(filter);
  return cmocka_run_group_tests_name(argv[7], tests, NULL, NULL);
}
