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

#include "nsp_analyze.h"
#include "nsp_names.h"

static const char *launch_exe, *shim_so, *standin_so, *xla_exe, *python_exe, *pynccl_py;

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
    char *argv[32] = {(char *)launch_exe, "-n", "2", "-t", limit, "-e", env_preload, "-e", env_dir,
                      "-e", env_uid, "-e", env_lib, "-e", env_odd, "--"};
    int k = 16;
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
  };
  char filter[32];
  snprintf(filter, sizeof filter, "test_%s", argv[7]);
  cmocka_set_test_filter(filter);
  return cmocka_run_group_tests_name(argv[7], tests, NULL, NULL);
}
