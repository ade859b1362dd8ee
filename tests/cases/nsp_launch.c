/* nsp_launch.c - starts NRANKS copies of a program as the ranks of one job
 * on this host, the way torchrun or mpirun would, for tests.
 *
 *   nsp_launch -n NRANKS [-t TIMEOUT_S] [-e VAR=VALUE]... [-r RANK:VAR=VALUE]...
 *              -- PROG ARGS...
 *
 * Each rank gets the inherited environment plus RANK, LOCAL_RANK,
 * WORLD_SIZE and LOCAL_WORLD_SIZE, then every -e, then the -r of its rank
 * (later settings win).  NSP_UID_FILE, the file through which the ranks of
 * tests/cases/nsp_cases exchange their ncclUniqueId, is removed before the
 * ranks start, since a stale id would make them meet nobody; if it is not
 * set at all, nsp_launch sets a fresh one under $TMPDIR and removes it at
 * the end.
 *
 * Waits for every rank.  After TIMEOUT_S seconds (default: none) the ranks
 * still running get SIGKILL.  SIGINT/SIGTERM are passed on to the ranks
 * (a second one kills them).  When any rank fails, one line on stderr gives
 * every rank's exit status or signal.
 *
 * Exit status: 0 all ranks exited 0; 1 some rank failed; 124 the timeout
 * passed; 2 usage or spawn error. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdint.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define NSP_LAUNCH_MAX_RANKS 1024

struct nsp_launch_envs {
  char **v;
  size_t n, cap;
};

static void nsp_launch_usage(FILE *f)
{
  fprintf(f, "usage: nsp_launch -n NRANKS [-t TIMEOUT_S] [-e VAR=VALUE]... "
             "[-r RANK:VAR=VALUE]... -- PROG ARGS...\n");
}

static void *nsp_launch_xrealloc(void *p, size_t n)
{
  p = realloc(p, n);
  if (!p) {
    perror("nsp_launch");
    exit(2);
  }
  return p;
}

static char *nsp_launch_xstrdup(const char *s)
{
  char *d = strdup(s);
  if (!d) {
    perror("nsp_launch");
    exit(2);
  }
  return d;
}

/* Sets "NAME=VALUE" in `e`, replacing an earlier NAME. */
static void nsp_launch_env_set(struct nsp_launch_envs *e, const char *kv)
{
  const char *eq = strchr(kv, '=');
  size_t klen = eq ? (size_t)(eq - kv) + 1 : strlen(kv), i;
  for (i = 0; i < e->n; i++) {
    if (!strncmp(e->v[i], kv, klen)) {
      e->v[i] = (char *)(uintptr_t)kv;
      return;
    }
  }
  if (e->n + 2 > e->cap) {
    e->cap = e->cap ? 2 * e->cap : 64;
    e->v = nsp_launch_xrealloc(e->v, e->cap * sizeof *e->v);
  }
  e->v[e->n++] = (char *)(uintptr_t)kv;
  e->v[e->n] = NULL;
}

static char *nsp_launch_fmt(const char *name, long v)
{
  char buf[256];
  snprintf(buf, sizeof buf, "%s=%ld", name, v);
  return nsp_launch_xstrdup(buf);
}

static int nsp_launch_valid_kv(const char *kv)
{
  const char *eq = strchr(kv, '=');
  return eq && eq != kv;
}

/* Looks NAME up in "NAME=VALUE" strings (the -e list, or environ). */
static const char *nsp_launch_lookup(char **kvs, size_t n, const char *name)
{
  size_t len = strlen(name), i;
  const char *found = NULL;
  for (i = 0; i < n && kvs[i]; i++)
    if (!strncmp(kvs[i], name, len) && kvs[i][len] == '=')
      found = kvs[i] + len + 1;
  return found;
}

static double nsp_launch_now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void nsp_launch_describe(char *buf, size_t len, int rank, int st, int started)
{
  if (!started)
    snprintf(buf, len, "rank %d not started", rank);
  else if (WIFEXITED(st))
    snprintf(buf, len, "rank %d exit %d", rank, WEXITSTATUS(st));
  else if (WIFSIGNALED(st))
    snprintf(buf, len, "rank %d killed by signal %d (%s)", rank, WTERMSIG(st),
             strsignal(WTERMSIG(st)));
  else
    snprintf(buf, len, "rank %d status 0x%x", rank, st);
}

int main(int argc, char **argv)
{
  struct nsp_launch_envs base = {0};
  char **eopts = NULL, **ropts = NULL, *uid_file = NULL, *uid_kv = NULL;
  size_t ne = 0, nr = 0, i;
  long nranks = 0;
  double timeout = 0, deadline;
  pid_t *pids;
  int *status, *done, alive = 0, c, r, timed_out = 0, spawn_failed = 0, any_bad = 0, signals = 0;
  int own_uid_file = 0;
  sigset_t set, empty;
  posix_spawnattr_t attr;

  while ((c = getopt(argc, argv, "+n:t:e:r:h")) != -1) {
    char *end;
    switch (c) {
    case 'n':
      nranks = strtol(optarg, &end, 10);
      if (*end || nranks < 1 || nranks > NSP_LAUNCH_MAX_RANKS) {
        fprintf(stderr, "nsp_launch: -n wants 1..%d, not \"%s\"\n", NSP_LAUNCH_MAX_RANKS, optarg);
        return 2;
      }
      break;
    case 't':
      timeout = strtod(optarg, &end);
      if (*end || timeout < 0) {
        fprintf(stderr, "nsp_launch: -t wants seconds, not \"%s\"\n", optarg);
        return 2;
      }
      break;
    case 'e':
      if (!nsp_launch_valid_kv(optarg)) {
        fprintf(stderr, "nsp_launch: -e wants VAR=VALUE, not \"%s\"\n", optarg);
        return 2;
      }
      eopts = nsp_launch_xrealloc(eopts, (ne + 1) * sizeof *eopts);
      eopts[ne++] = optarg;
      break;
    case 'r': {
      long rk = strtol(optarg, &end, 10);
      if (end == optarg || *end != ':' || rk < 0 || !nsp_launch_valid_kv(end + 1)) {
        fprintf(stderr, "nsp_launch: -r wants RANK:VAR=VALUE, not \"%s\"\n", optarg);
        return 2;
      }
      ropts = nsp_launch_xrealloc(ropts, (nr + 1) * sizeof *ropts);
      ropts[nr++] = optarg;
      break;
    }
    case 'h':
      nsp_launch_usage(stdout);
      return 0;
    default:
      nsp_launch_usage(stderr);
      return 2;
    }
  }
  if (nranks < 1 || optind >= argc) {
    nsp_launch_usage(stderr);
    return 2;
  }

  for (i = 0; environ[i]; i++)
    nsp_launch_env_set(&base, environ[i]);
  {
    const char *given = nsp_launch_lookup(eopts, ne, "NSP_UID_FILE");
    if (!given)
      given = getenv("NSP_UID_FILE");
    if (given) {
      uid_file = nsp_launch_xstrdup(given);
    } else {
      const char *tmp = getenv("TMPDIR");
      char buf[4096];
      snprintf(buf, sizeof buf, "NSP_UID_FILE=%s/nsp_launch.%ld.%ld.uid",
               tmp && *tmp ? tmp : "/tmp", (long)getpid(), (long)time(NULL));
      uid_kv = nsp_launch_xstrdup(buf);
      nsp_launch_env_set(&base, uid_kv);
      uid_file = nsp_launch_xstrdup(strchr(buf, '=') + 1);
      own_uid_file = 1;
    }
    if (unlink(uid_file) != 0 && errno != ENOENT)
      fprintf(stderr, "nsp_launch: cannot remove stale %s: %s\n", uid_file, strerror(errno));
  }

  pids = calloc((size_t)nranks, sizeof *pids);
  status = calloc((size_t)nranks, sizeof *status);
  done = calloc((size_t)nranks, sizeof *done);
  if (!pids || !status || !done) {
    perror("nsp_launch");
    return 2;
  }

  /* SIGCHLD and the stop signals are taken with sigtimedwait; the ranks
   * must not inherit that mask. */
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigprocmask(SIG_BLOCK, &set, NULL);
  sigemptyset(&empty);
  posix_spawnattr_init(&attr);
  posix_spawnattr_setsigmask(&attr, &empty);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);

  for (r = 0; r < nranks; r++) {
    struct nsp_launch_envs e = {0};
    char *std[4];
    std[0] = nsp_launch_fmt("RANK", r);
    std[1] = nsp_launch_fmt("LOCAL_RANK", r);
    std[2] = nsp_launch_fmt("WORLD_SIZE", nranks);
    std[3] = nsp_launch_fmt("LOCAL_WORLD_SIZE", nranks);
    for (i = 0; i < base.n; i++)
      nsp_launch_env_set(&e, base.v[i]);
    for (i = 0; i < 4; i++)
      nsp_launch_env_set(&e, std[i]);
    for (i = 0; i < ne; i++)
      nsp_launch_env_set(&e, eopts[i]);
    for (i = 0; i < nr; i++) {
      char *end;
      if (strtol(ropts[i], &end, 10) == r)
        nsp_launch_env_set(&e, end + 1);
    }
    c = posix_spawnp(&pids[r], argv[optind], NULL, &attr, argv + optind, e.v);
    free(e.v);
    for (i = 0; i < 4; i++)
      free(std[i]);
    if (c != 0) {
      fprintf(stderr, "nsp_launch: cannot start %s for rank %d: %s\n", argv[optind], r, strerror(c));
      spawn_failed = 1;
      break;
    }
    alive++;
  }
  posix_spawnattr_destroy(&attr);

  deadline = nsp_launch_now() + timeout;
  if (spawn_failed)
    for (r = 0; r < nranks; r++)
      if (pids[r] > 0)
        kill(pids[r], SIGKILL);
  while (alive > 0) {
    struct timespec ts;
    siginfo_t info;
    pid_t pid;
    int st;
    double left;

    while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
      for (r = 0; r < nranks; r++) {
        if (pids[r] == pid && !done[r]) {
          done[r] = 1;
          status[r] = st;
          alive--;
        }
      }
    }
    if (alive == 0)
      break;
    left = timeout > 0 ? deadline - nsp_launch_now() : 1.0;
    if (timeout > 0 && left <= 0 && !timed_out) {
      timed_out = 1;
      fprintf(stderr, "nsp_launch: timeout after %g s, killing the ranks still running\n", timeout);
      for (r = 0; r < nranks; r++)
        if (pids[r] > 0 && !done[r])
          kill(pids[r], SIGKILL);
      continue;
    }
    if (left <= 0 || left > 1.0)
      left = 1.0;
    ts.tv_sec = (time_t)left;
    ts.tv_nsec = (long)((left - (double)ts.tv_sec) * 1e9);
    c = sigtimedwait(&set, &info, &ts);
    if (c == SIGINT || c == SIGTERM) {
      int sig = signals++ ? SIGKILL : c;
      for (r = 0; r < nranks; r++)
        if (pids[r] > 0 && !done[r])
          kill(pids[r], sig);
    }
  }

  for (r = 0; r < nranks; r++)
    if (!done[r] || status[r] != 0)
      any_bad = 1;
  if (any_bad) {
    /* One line with every rank, so a log shows who failed beside whom. */
    fprintf(stderr, "nsp_launch:");
    for (r = 0; r < nranks; r++) {
      char buf[128];
      nsp_launch_describe(buf, sizeof buf, r, status[r], done[r]);
      fprintf(stderr, "%s %s", r ? "," : "", buf);
    }
    fprintf(stderr, "\n");
  }
  if (own_uid_file)
    unlink(uid_file);
  free(uid_file);
  free(uid_kv);
  free(base.v);
  free(eopts);
  free(ropts);
  free(pids);
  free(status);
  free(done);
  if (spawn_failed)
    return 2;
  if (timed_out)
    return 124;
  return any_bad ? 1 : 0;
}
