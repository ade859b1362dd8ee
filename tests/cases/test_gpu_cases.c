/* test_gpu_cases.c - the case programs in stream mode, on the CUDA
 * stand-in (no shim, no analyzer): how each job ends, and where its ranks
 * were, from the launcher's exit status and the ranks' own lines.
 *
 * usage: test_gpu_cases NSP_LAUNCH NSP_CASES TEST
 *   TEST: c10-stream   c10 on 4 ranks in stream mode exits 0 (every value
 *                      checked by the ranks)
 *         c11          the straggler: the launcher's timeout ends the job
 *                      (exit 124) with rank 0 still waiting in #5
 *         killed-hang  SIGTERM to the launcher while rank 0 waits in #3
 *         c01-stream   rank 0 gets wrong values, rank 1's #2 never
 *                      completes and fails asynchronously */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *launch_exe, *cases_exe;

struct job {
  char dir[64], log[128];
  pid_t pid;
  int status; /* nsp_launch's exit status */
  double secs;
  char *out;  /* stdout and stderr of the launcher and the ranks */
};

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Starts nsp_launch with `args` (NULL-terminated, after the launcher's
 * name), its output and the ranks' in a log. */
static void job_start(struct job *j, const char *name, const char *const *args)
{
  const char *argv[32];
  int n = 0, fd;
  snprintf(j->dir, sizeof j->dir, "/tmp/nsp-gpu-%s-XXXXXX", name);
  assert_non_null(mkdtemp(j->dir));
  snprintf(j->log, sizeof j->log, "%s/out.log", j->dir);
  argv[n++] = launch_exe;
  while (*args && n < 31)
    argv[n++] = *args++;
  argv[n] = NULL;
  j->secs = now_s();
  j->pid = fork();
  assert_true(j->pid >= 0);
  if (j->pid == 0) {
    char uid[128];
    snprintf(uid, sizeof uid, "%s/uid", j->dir);
    setenv("NSP_UID_FILE", uid, 1);
    fd = open(j->log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
      _exit(126);
    execv(launch_exe, (char *const *)(uintptr_t)argv);
    _exit(127);
  }
}

static char *slurp(const char *path)
{
  FILE *f = fopen(path, "rb");
  char *buf;
  long len;
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  len = ftell(f);
  fseek(f, 0, SEEK_SET);
  buf = calloc(1, (size_t)len + 1);
  if (buf && len > 0 && fread(buf, 1, (size_t)len, f) != (size_t)len) {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  return buf;
}

static void job_wait(struct job *j)
{
  int st = 0;
  assert_int_equal(waitpid(j->pid, &st, 0), j->pid);
  j->secs = now_s() - j->secs;
  assert_true(WIFEXITED(st));
  j->status = WEXITSTATUS(st);
  assert_int_not_equal(j->status, 127);
  j->out = slurp(j->log);
  assert_non_null(j->out);
  print_message("# nsp_launch exit %d after %.1f s; output:\n", j->status, j->secs);
  {
    char *line = j->out, *nl;
    for (; *line; line = nl + 1) {
      nl = strchr(line, '\n');
      if (!nl)
        nl = line + strlen(line);
      print_message("#   %.*s\n", (int)(nl - line), line);
      if (!*nl)
        break;
    }
  }
}

/* Polls the log until it holds `text` or `secs` pass. */
static int job_wait_for_text(struct job *j, const char *text, double secs)
{
  double end = now_s() + secs;
  while (now_s() < end) {
    char *s = slurp(j->log);
    int found = s && strstr(s, text);
    free(s);
    if (found)
      return 1;
    usleep(20000);
  }
  return 0;
}

static void job_done(struct job *j)
{
  free(j->out);
  if (!getenv("NSP_KEEP")) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", j->dir);
    assert_int_equal(system(cmd), 0);
  }
}

#define assert_has(j, text) assert_non_null(strstr((j)->out, (text)))
#define assert_lacks(j, text) assert_null(strstr((j)->out, (text)))

static void test_c10_stream(void **state)
{
  const char *args[] = {"-n", "4", "-t", "240", "-e", "NSP_CASES_STREAM=1", "--", cases_exe,
                        "c10", NULL};
  struct job j;
  char line[64];
  int r;
  (void)state;
  job_start(&j, "c10", args);
  job_wait(&j);
  assert_int_equal(j.status, 0);
  for (r = 0; r < 4; r++) {
    snprintf(line, sizeof line, "rank %d: stream mode (device %d)", r, r);
    assert_has(&j, line);
    snprintf(line, sizeof line, "rank %d returned ", r);
    assert_has(&j, line);
  }
  assert_lacks(&j, "wrong values");
  assert_lacks(&j, "error");
  job_done(&j);
}

/* The straggler sleeps longer than the launcher waits, and the stand-in
 * would wait longer still: only the launcher's timeout ends the job. */
static void test_c11(void **state)
{
  const char *args[] = {"-n", "2", "-t", "8", "-e", "NSP_C11_SLEEP_S=60",
                        "-e", "NSP_STANDIN_TIMEOUT_MS=120000", "--", cases_exe, "c11", NULL};
  struct job j;
  (void)state;
  job_start(&j, "c11", args);
  job_wait(&j);
  assert_int_equal(j.status, 124);
  assert_true(j.secs >= 7.5);
  assert_has(&j, "rank 0: stream mode");
  assert_has(&j, "rank 1: straggling: sleeps 60 s before all-reduce #5");
  assert_has(&j, "rank 0: all-reduce #5 on world enqueued, waiting for it");
  assert_lacks(&j, "rank 0: all-reduce #5 on world completed");
  assert_lacks(&j, "rank 1: all-reduce #5");
  assert_has(&j, "nsp_launch: timeout after 8 s");
  assert_has(&j, "rank 0 killed by signal 9");
  assert_has(&j, "rank 1 killed by signal 9");
  job_done(&j);
}

static void test_killed_hang(void **state)
{
  const char *args[] = {"-n", "2", "-t", "100", "-e", "NSP_STANDIN_TIMEOUT_MS=120000", "--",
                        cases_exe, "killed-hang", NULL};
  struct job j;
  int waiting, stopped;
  (void)state;
  job_start(&j, "killed", args);
  waiting = job_wait_for_text(&j, "rank 0: all-reduce #3 on world enqueued, waiting", 60);
  stopped = job_wait_for_text(&j, "rank 1: stops before all-reduce #3", 60);
  usleep(300000); /* rank 0 is in cuStreamSynchronize by now */
  assert_int_equal(kill(j.pid, SIGTERM), 0);
  job_wait(&j);
  assert_true(waiting && stopped);
  assert_int_equal(j.status, 1);
  assert_true(j.secs < 90);
  assert_lacks(&j, "all-reduce #3 on world completed");
  assert_has(&j, "rank 0 killed by signal 15");
  assert_has(&j, "rank 1 killed by signal 15");
  job_done(&j);
}

static void test_c01_stream(void **state)
{
  const char *args[] = {"-n", "2", "-t", "60", "-e", "NSP_CASES_STREAM=1",
                        "-e", "NSP_STANDIN_TIMEOUT_MS=2000", "--", cases_exe, "c01", NULL};
  struct job j;
  (void)state;
  job_start(&j, "c01", args);
  job_wait(&j);
  assert_int_equal(j.status, 1);
  assert_has(&j, "rank 0: wrong values after all-reduce #2 (float16) on world");
  assert_has(&j, "rank 1: watchdog: all-reduce #2 (float32 x1024) on world: asynchronous error 2");
  assert_has(&j, "timed out after 2000 ms waiting for rank 0 at collective #2");
  assert_has(&j, "rank 0 exit 1, rank 1 exit 1");
  job_done(&j);
}

int main(int argc, char **argv)
{
  static const struct {
    const char *name;
    struct CMUnitTest test;
  } all[] = {
    {"c10-stream", cmocka_unit_test(test_c10_stream)},
    {"c11", cmocka_unit_test(test_c11)},
    {"killed-hang", cmocka_unit_test(test_killed_hang)},
    {"c01-stream", cmocka_unit_test(test_c01_stream)},
  };
  size_t i;
  if (argc != 4) {
    fprintf(stderr, "usage: test_gpu_cases NSP_LAUNCH NSP_CASES TEST\n");
    return 2;
  }
  launch_exe = argv[1];
  cases_exe = argv[2];
  for (i = 0; i < sizeof all / sizeof all[0]; i++) {
    if (!strcmp(argv[3], all[i].name)) {
      const struct CMUnitTest one[] = {all[i].test};
      return cmocka_run_group_tests_name(all[i].name, one, NULL, NULL);
    }
  }
  fprintf(stderr, "test_gpu_cases: unknown test %s\n", argv[3]);
  return 2;
}
