/* test_durability.c - records survive any death of the process.
 *
 * usage: test_durability NSP_CASES LIBNCCLSPY MODE [ITERATIONS] [SEED]
 *
 * Each iteration runs case c10 (the healthy one: ~12000 recorded calls per
 * rank) as a 2-rank job on the CPU stand-in, under the shim, with each rank
 * logging its recorded calls to a pipe before and after each call
 * (NSP_CASES_LOG_FD, see tests/cases/nsp_cases.c).  Then the ranks die,
 * and for each rank the records of calls in its trace (CALL, COMM,
 * COMM_END and REDOP records: one per recorded call), read back with
 * nsp_reader (frames plus the crash ring), must equal its logged count of
 * calls that returned.  The one call a rank may have been inside when it
 * died counts either way: it may have committed its record just before it
 * would have returned.  The analyzer must load every trace and count the
 * same CALL records.
 *
 * MODE
 *   sigkill  SIGKILL to both ranks at a random moment (default 50 times)
 *   signals  SIGABRT, SIGSEGV, SIGBUS, SIGTERM, SIGINT in turn, sent to both
 *            ranks at a random moment (default 4 rounds of the five)
 *   deaths   each rank ends itself after a random number of calls (
 *            NSP_CASES_DIE): exit, _exit, return from main, abort(), a real
 *            SIGSEGV, a real SIGBUS, raise(SIGKILL/SIGTERM/SIGINT) (default
 *            2 rounds of the nine); the exit status or signal must be
 *            the one the death gives without the shim
 * Every iteration also varies NCCLSPY_FLUSH_MS and NCCLSPY_RING, so that
 * deaths fall before, between and during frame writes.  Output is TAP. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nsp_analyze.h"
#include "nsp_reader.h"
#include "tests/nsp_child_env.h"
#include "tests/nsp_tap.h"
#include "tests/nsp_trace_dir.h"

#define NRANKS 2

static const char *cases_exe, *shim_so;
static uint64_t rng;

static uint64_t rand64(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct log_entry {
  uint32_t rank, phase;
  uint64_t n;
};

struct rank_state {
  pid_t pid;
  int status;
  uint64_t last_n;
  int last_phase; /* -1: nothing logged */
};

struct run {
  char dir[64], trace_dir[96];
  struct rank_state r[NRANKS];
  double seconds;
};

/* Starts the ranks; returns the read end of the log pipe. */
static int start(struct run *run, const char *die[NRANKS], unsigned flush_ms, unsigned ring) {
  int fds[2];
  if (pipe(fds) < 0) return -1;
  fcntl(fds[0], F_SETFD, FD_CLOEXEC);
  for (int k = 0; k < NRANKS; k++) {
    run->r[k].last_phase = -1;
    run->r[k].last_n = 0;
    /* The child's environment, built here: the child only execs. */
    struct nsp_child_env e;
    char v[4200];
    nsp_child_env_init(&e);
    snprintf(v, sizeof v, "%d", k);
    nsp_child_env_set(&e, "RANK", v);
    nsp_child_env_set(&e, "LOCAL_RANK", v);
    nsp_child_env_set(&e, "WORLD_SIZE", "2");
    nsp_child_env_set(&e, "LOCAL_WORLD_SIZE", "2");
    snprintf(v, sizeof v, "%s/uid", run->dir);
    nsp_child_env_set(&e, "NSP_UID_FILE", v);
    nsp_child_env_set(&e, "NCCLSPY_DIR", run->trace_dir);
    nsp_child_env_set(&e, "LD_PRELOAD", shim_so);
    snprintf(v, sizeof v, "%d", fds[1]);
    nsp_child_env_set(&e, "NSP_CASES_LOG_FD", v);
    /* A rank whose peer died gives up soon (and exits 1, records intact). */
    nsp_child_env_set(&e, "NSP_STANDIN_TIMEOUT_MS", "500");
    snprintf(v, sizeof v, "%u", flush_ms);
    nsp_child_env_set(&e, "NCCLSPY_FLUSH_MS", v);
    snprintf(v, sizeof v, "%u", ring);
    nsp_child_env_set(&e, "NCCLSPY_RING", v);
    if (die && die[k]) nsp_child_env_set(&e, "NSP_CASES_DIE", die[k]);
    /* Under a sanitizer, fatal signals must stay fatal, as without it. */
    nsp_child_env_set(&e, "TSAN_OPTIONS", "handle_segv=0:handle_sigbus=0:handle_abort=0:halt_on_error=1");
    /* verify_asan_link_order=0: the shim is preloaded ahead of ASan's runtime. */
    nsp_child_env_set(&e, "ASAN_OPTIONS",
                      "handle_segv=0:handle_sigbus=0:handle_abort=0:detect_leaks=0:verify_asan_link_order=0");
    char *const argv[] = {(char *)cases_exe, (char *)"c10", NULL};
    pid_t pid = fork();
    if (pid == 0) {
      struct rlimit no_core = {0, 0};
      setrlimit(RLIMIT_CORE, &no_core); /* fatal signals: no core files */
      int devnull = open("/dev/null", O_WRONLY);
      if (devnull >= 0) dup2(devnull, 1);
      execve(cases_exe, argv, e.v);
      _exit(127);
    }
    nsp_child_env_free(&e);
    run->r[k].pid = pid;
  }
  close(fds[1]);
  return fds[0];
}

/* Reads log entries for up to `seconds` (until EOF when seconds < 0). */
static int pump(struct run *run, int fd, double seconds) {
  double end = now_s() + seconds;
  for (;;) {
    int wait_ms = -1;
    if (seconds >= 0) {
      double left = end - now_s();
      if (left <= 0) return 0;
      wait_ms = (int)(left * 1000) + 1;
    }
    struct pollfd p = {fd, POLLIN, 0};
    int n = poll(&p, 1, wait_ms);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) continue;
    struct log_entry e[256];
    ssize_t got = read(fd, e, sizeof e);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return 1; /* EOF: every rank is gone */
    for (size_t i = 0; i < (size_t)got / sizeof *e; i++) {
      if (e[i].rank >= NRANKS) continue;
      run->r[e[i].rank].last_n = e[i].n;
      run->r[e[i].rank].last_phase = (int)e[i].phase;
    }
  }
}

static void finish(struct run *run, int fd) {
  pump(run, fd, -1);
  close(fd);
  for (int k = 0; k < NRANKS; k++) waitpid(run->r[k].pid, &run->r[k].status, 0);
}

struct counts {
  long calls, comms, ends, redops, dropped, recovered, files;
  long inflight, exits; /* INFLIGHT records (calls that had not returned); EXIT records */
  int readable;
};

/* nsp_trace_dir_each callback of count_trace(). */
static void count_one(const char *path, struct nsp_reader *r, void *arg) {
  (void)path;
  struct counts *c = arg;
  c->files++;
  c->readable = 1;
  struct nsp_rec rec;
  while (nsp_reader_next(r, &rec) == 1) {
    c->calls += rec.kind == NSP_REC_CALL;
    c->comms += rec.kind == NSP_REC_COMM;
    c->ends += rec.kind == NSP_REC_COMM_END;
    c->redops += rec.kind == NSP_REC_REDOP;
    c->inflight += rec.kind == NSP_REC_INFLIGHT;
    c->exits += rec.kind == NSP_REC_EXIT;
    if (rec.kind == NSP_REC_DROPPED) c->dropped += (long)rec.count;
  }
  c->recovered += (long)nsp_reader_recovered(r);
}

/* Counts the records of one rank's trace (the file whose header has its pid). */
static void count_trace(const char *dir, pid_t pid, struct counts *c) {
  memset(c, 0, sizeof *c);
  nsp_trace_dir_each(dir, pid, count_one, c);
}

static void describe(char *buf, size_t len, int st) {
  if (WIFEXITED(st)) snprintf(buf, len, "exit %d", WEXITSTATUS(st));
  else if (WIFSIGNALED(st)) snprintf(buf, len, "signal %d", WTERMSIG(st));
  else snprintf(buf, len, "status 0x%x", st);
}

/* Checks every rank of a finished run.  expect_sig/expect_exit: what a
 * rank that died as planned must show (-1: not checked). */
static void check(struct run *run, const char *what, int expect_sig, int expect_exit,
                  const uint64_t die_at[NRANKS]) {
  long analyzer_calls = 0, reader_calls = 0, recovered = 0;
  for (int k = 0; k < NRANKS; k++) {
    struct rank_state *s = &run->r[k];
    struct counts c;
    count_trace(run->trace_dir, s->pid, &c);
    long records = c.calls + c.comms + c.ends + c.redops;
    reader_calls += c.calls;
    recovered += c.recovered;
    uint64_t returned = s->last_phase == 1 ? s->last_n : s->last_n ? s->last_n - 1 : 0;
    int inflight = s->last_phase == 0;
    /* Exactly the calls that returned.  When the writer was starved (two
     * cores, tests in parallel) and the ring overflowed, what is missing
     * must be counted as dropped: nothing invented, nothing lost silently. */
    int good = c.dropped == 0 ? (uint64_t)records == returned || (inflight && (uint64_t)records == returned + 1)
                              : (uint64_t)records <= returned + (uint64_t)inflight &&
                                    (uint64_t)(records + c.dropped) >= returned;
    /* The call a rank was inside when it died is in flight in its crash
     * ring, unless it died before the shim's wrapper was entered or after
     * it had left: never a call in flight that had returned, never both
     * its record and the call in flight. */
    good = good && c.inflight <= (long)inflight && (!c.inflight || (uint64_t)records <= returned);
    good = good && c.files <= 1;
    char st[64];
    describe(st, sizeof st, s->status);
    /* How the rank ended: as planned, or it finished (or gave up on a dead
     * peer) before the plan could happen. */
    int ended_ok = 1;
    if (die_at && die_at[k] && returned >= die_at[k]) {
      if (expect_sig > 0) ended_ok = WIFSIGNALED(s->status) && WTERMSIG(s->status) == expect_sig;
      else if (expect_exit >= 0) ended_ok = WIFEXITED(s->status) && WEXITSTATUS(s->status) == expect_exit;
    } else if (!die_at && expect_sig > 0 && WIFSIGNALED(s->status)) {
      ended_ok = WTERMSIG(s->status) == expect_sig;
    } else if (!WIFSIGNALED(s->status)) {
      ended_ok = WIFEXITED(s->status) && (WEXITSTATUS(s->status) == 0 || WEXITSTATUS(s->status) == 1);
    }
    ok(good && ended_ok,
       "%s: rank %d (%s) logged %llu returned%s; its trace has %ld (%ld calls, %ld comm, %ld end, "
       "%ld redop; %ld recovered from the ring, %ld dropped, %ld file) and %ld in flight",
       what, k, st, (unsigned long long)returned, inflight ? " + 1 in flight" : "", records, c.calls,
       c.comms, c.ends, c.redops, c.recovered, c.dropped, c.files, c.inflight);
  }
  /* The analyzer reads the same traces, ring included. */
  struct nsp_job *job = nsp_job_create();
  int added = job ? nsp_job_add_path(job, run->trace_dir) : -1;
  for (size_t i = 0; job && added > 0 && i < nsp_job_ntraces(job); i++)
    analyzer_calls += (long)nsp_job_trace(job, i)->calls;
  int noted = 0;
  for (size_t i = 0; job && i < nsp_job_nnotes(job); i++)
    noted += strstr(nsp_job_note(job, i), " recovered from ") != NULL;
  ok((added < 0 ? reader_calls == 0 : analyzer_calls == reader_calls) && (recovered > 0) == (noted > 0),
     "%s: the analyzer counts the same %ld calls (%ld) and notes the %ld recovered records (%d notes)",
     what, reader_calls, analyzer_calls, recovered, noted);
  nsp_job_destroy(job);
}

static int make_run(struct run *run) {
  snprintf(run->dir, sizeof run->dir, "/tmp/nsp-dur-XXXXXX");
  if (!mkdtemp(run->dir)) return -1;
  snprintf(run->trace_dir, sizeof run->trace_dir, "%s/trace", run->dir);
  return 0;
}

static void remove_run(struct run *run) {
  if (getenv("NSP_KEEP")) return;
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", run->dir);
  if (system(cmd) != 0) fprintf(stderr, "# could not remove %s\n", run->dir);
}

static void pick_settings(unsigned *flush_ms, unsigned *ring) {
  static const unsigned flushes[] = {1, 3, 20, 1000};
  static const unsigned rings[] = {16384, 65536};
  *flush_ms = flushes[rand64() % 4];
  *ring = rings[rand64() % 2];
}

/* One run to the end: the clean-exit path, and how long a run takes. */
static double calibrate(void) {
  struct run run;
  if (make_run(&run) < 0) return -1;
  double t0 = now_s();
  int fd = start(&run, NULL, 1000, 65536);
  if (fd < 0) return -1;
  finish(&run, fd);
  double took = now_s() - t0;
  /* The job ran (a rank that could not start, under a sanitizer say,
   * would leave every later check comparing zeros). */
  int ran = 1;
  for (int k = 0; k < NRANKS; k++)
    ran = ran && WIFEXITED(run.r[k].status) && WEXITSTATUS(run.r[k].status) == 0 && run.r[k].last_n > 1000;
  ok(ran, "clean exit: both ranks exit 0 having logged over 1000 calls (%llu, %llu)",
     (unsigned long long)run.r[0].last_n, (unsigned long long)run.r[1].last_n);
  check(&run, "clean exit", -1, 0, NULL);
  /* Each trace ends with its process's EXIT record. */
  for (int k = 0; k < NRANKS; k++) {
    struct counts c;
    count_trace(run.trace_dir, run.r[k].pid, &c);
    ok(c.exits == 1 && c.inflight == 0, "clean exit: rank %d's trace says it exited (%ld EXIT, %ld in flight)", k,
       c.exits, c.inflight);
  }
  /* A clean exit removes the ring files. */
  DIR *d = opendir(run.trace_dir);
  struct dirent *e;
  int rings = 0;
  while (d && (e = readdir(d))) rings += strstr(e->d_name, ".ring") != NULL;
  if (d) closedir(d);
  ok(rings == 0, "clean exit: no ring file left behind (%d)", rings);
  remove_run(&run);
  return took;
}

static void killed(int sig, double max_delay, const char *name) {
  struct run run;
  unsigned flush_ms, ring;
  pick_settings(&flush_ms, &ring);
  if (make_run(&run) < 0) return;
  double delay = max_delay * (double)(rand64() % 10000) / 10000.0;
  int fd = start(&run, NULL, flush_ms, ring);
  if (fd < 0) return;
  pump(&run, fd, delay);
  for (int k = 0; k < NRANKS; k++) kill(run.r[k].pid, sig);
  finish(&run, fd);
  char what[128];
  snprintf(what, sizeof what, "%s after %.0f ms (flush %u ms, ring %u)", name, delay * 1000, flush_ms,
           ring);
  check(&run, what, sig, -1, NULL);
  remove_run(&run);
}

static void planned(const char *how, int sig, int status, uint64_t max_calls) {
  struct run run;
  unsigned flush_ms, ring;
  pick_settings(&flush_ms, &ring);
  if (make_run(&run) < 0) return;
  char spec[NRANKS][64];
  const char *die[NRANKS];
  uint64_t at[NRANKS];
  for (int k = 0; k < NRANKS; k++) {
    at[k] = 1 + rand64() % max_calls;
    snprintf(spec[k], sizeof spec[k], "%s@%llu", how, (unsigned long long)at[k]);
    die[k] = spec[k];
  }
  int fd = start(&run, die, flush_ms, ring);
  if (fd < 0) return;
  finish(&run, fd);
  char what[160];
  snprintf(what, sizeof what, "%s at calls %llu/%llu (flush %u ms, ring %u)", how,
           (unsigned long long)at[0], (unsigned long long)at[1], flush_ms, ring);
  check(&run, what, sig, status, at);
  remove_run(&run);
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s NSP_CASES LIBNCCLSPY sigkill|signals|deaths [ITERATIONS] [SEED]\n", argv[0]);
    return 2;
  }
  cases_exe = argv[1];
  shim_so = argv[2];
  const char *mode = argv[3];
  int iters = argc > 4 ? atoi(argv[4]) : 0;
  rng = argc > 5 ? strtoull(argv[5], NULL, 0) : (uint64_t)time(NULL) * 2654435761u + (uint64_t)getpid();
  if (!rng) rng = 1;
  printf("# seed %llu (pass it as the 5th argument to repeat this run)\n", (unsigned long long)rng);
  double took = calibrate();
  if (took <= 0) {
    printf("Bail out! cannot run %s\n", cases_exe);
    return 1;
  }
  printf("# a whole run takes %.0f ms\n", took * 1000);
  /* Deaths anywhere from before the first call to near the end. */
  double max_delay = took * 0.9;
  if (!strcmp(mode, "sigkill")) {
    for (int i = 0; i < (iters ? iters : 50); i++) killed(SIGKILL, max_delay, "SIGKILL");
  } else if (!strcmp(mode, "signals")) {
    static const struct {
      int sig;
      const char *name;
    } sigs[] = {{SIGABRT, "SIGABRT"}, {SIGSEGV, "SIGSEGV"}, {SIGBUS, "SIGBUS"}, {SIGTERM, "SIGTERM"},
                {SIGINT, "SIGINT"}};
    for (int i = 0; i < (iters ? iters : 4); i++)
      for (size_t s = 0; s < sizeof sigs / sizeof *sigs; s++) killed(sigs[s].sig, max_delay, sigs[s].name);
  } else if (!strcmp(mode, "deaths")) {
    static const struct {
      const char *how;
      int sig, status;
    } ways[] = {{"exit", -1, 3},       {"_exit", -1, 4},      {"return", -1, 5},
                {"abort", SIGABRT, -1}, {"segv", SIGSEGV, -1}, {"bus", SIGBUS, -1},
                {"kill", SIGKILL, -1},  {"term", SIGTERM, -1}, {"int", SIGINT, -1}};
    for (int i = 0; i < (iters ? iters : 2); i++)
      for (size_t w = 0; w < sizeof ways / sizeof *ways; w++)
        planned(ways[w].how, ways[w].sig, ways[w].status, 12000);
  } else {
    fprintf(stderr, "unknown mode %s\n", mode);
    return 2;
  }
  printf("1..%d\n", tests);
  return failures ? 1 : 0;
}
