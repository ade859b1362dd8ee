/* test_cases.c - the failure catalogue (rows c01-c10 of the project's
 * cases/README.md), end to end: a multi-process job on the CPU stand-in
 * for NCCL under libncclspy.so, then the analyzer on its traces.  Each test
 * asserts the finding a user would act on: its kind, communicator,
 * sequence number and the ranks on each side.
 *
 * usage: test_cases NSP_LAUNCH NSP_CASES LIBNCCLSPY CASE
 * (meson runs one process per case, so cases run in parallel). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>
#include <sys/wait.h>
#include <dirent.h>
#include <unistd.h>

#include "nsp_analyze.h"
#include "nsp_names.h"
#include "nsp_reader.h"

static const char *launch_exe, *cases_exe, *shim_so;

struct run {
  char dir[64];
  struct nsp_job *job;
  int launch_status; /* nsp_launch's exit status */
};

/* Runs `nranks` ranks of case `name` under the shim and analyses them.
 * The launcher ends the job after limit_s seconds (exit 124); when
 * term_ms > 0 the launcher gets SIGTERM after that many ms, as a scheduler
 * ending a hung job would do. */
static void run_job(struct run *r, const char *name, int nranks, int limit_s, int term_ms,
                    const char *rank_env);

static void run_case(struct run *r, const char *name, int nranks) { run_job(r, name, nranks, 120, 0, NULL); }

/* rank_env: "R:VAR=VALUE" set for one rank only (nsp_launch -r), or NULL;
 * several, separated by ';'. */
static void run_job(struct run *r, const char *name, int nranks, int limit_s, int term_ms,
                    const char *rank_env) {
  snprintf(r->dir, sizeof r->dir, "/tmp/nsp-case-%s-XXXXXX", name);
  assert_non_null(mkdtemp(r->dir));
  char n[16], limit[16], env_preload[4200], env_dir[128], env_uid[128];
  snprintf(n, sizeof n, "%d", nranks);
  snprintf(limit, sizeof limit, "%d", limit_s);
  snprintf(env_preload, sizeof env_preload, "LD_PRELOAD=%s", shim_so);
  snprintf(env_dir, sizeof env_dir, "NCCLSPY_DIR=%s", r->dir);
  snprintf(env_uid, sizeof env_uid, "NSP_UID_FILE=%s/uid", r->dir);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    /* The stand-in gives up on data that never comes after 3 s. */
    setenv("NSP_STANDIN_TIMEOUT_MS", "3000", 0); /* unless the test set one */
    /* The ranks' own output goes beside the traces, out of the TAP stream. */
    char log[128];
    snprintf(log, sizeof log, "%s/ranks.log", r->dir);
    if (!freopen(log, "w", stdout)) _exit(126);
    char *argv[64] = {(char *)launch_exe, "-n", n, "-t", limit, "-e", env_preload, "-e", env_dir,
                      "-e", env_uid};
    int k = 11;
    char envs[1024] = "";
    if (rank_env) snprintf(envs, sizeof envs, "%s", rank_env);
    for (char *save = NULL, *e = strtok_r(envs, ";", &save); e && k < 58; e = strtok_r(NULL, ";", &save)) {
      argv[k++] = "-r";
      argv[k++] = e;
    }
    argv[k++] = "--";
    argv[k++] = (char *)cases_exe;
    argv[k++] = (char *)name;
    argv[k] = NULL;
    execv(launch_exe, argv);
    _exit(127);
  }
  if (term_ms > 0) {
    struct timespec ts = {term_ms / 1000, (long)(term_ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    kill(pid, SIGTERM);
  }
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  r->launch_status = WEXITSTATUS(status);
  assert_int_not_equal(r->launch_status, 127);

  r->job = nsp_job_create();
  assert_non_null(r->job);
  assert_int_equal(nsp_job_add_path(r->job, r->dir), nranks);
  assert_int_equal(nsp_job_analyze(r->job), 0);
  for (size_t i = 0; i < nsp_job_nfindings(r->job); i++)
    print_message("# finding %zu: %s\n", i, nsp_job_finding(r->job, i)->message);
  /* Every case but the healthy one must find something. */
  if (strcmp(name, "c10") != 0) assert_true(nsp_job_nfindings(r->job) > 0);
  for (size_t i = 0; i < nsp_job_nnotes(r->job); i++) print_message("# note: %s\n", nsp_job_note(r->job, i));
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

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: %s NSP_LAUNCH NSP_CASES LIBNCCLSPY CASE\n", argv[0]);
    return 2;
  }
  launch_exe = argv[1];
  cases_exe = argv[2];
  shim_so = argv[3];
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_c01), cmocka_unit_test(test_c02), cmocka_unit_test(test_c03),
      cmocka_unit_test(test_c04), cmocka_unit_test(test_c05), cmocka_unit_test(test_c06),
      cmocka_unit_test(test_c07), cmocka_unit_test(test_c08), cmocka_unit_test(test_c09),
      cmocka_unit_test(test_c10),    cmocka_unit_test(test_c11),
      cmocka_unit_test(test_killed_hang),
      cmocka_unit_test(test_c12),      cmocka_unit_test(test_env),
  };
  char filter[32];
  snprintf(filter, sizeof filter, "test_%s", argv[4]);
  cmocka_set_test_filter(filter);
  return cmocka_run_group_tests_name(argv[4], tests, NULL, NULL);
}
