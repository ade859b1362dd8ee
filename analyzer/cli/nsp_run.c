/* nsp_run.c - `ncclspy run` and `ncclspy shim-path`: start a job under the
 * shim with one command, and say where the shim is.
 *
 * The shim is found next to the command itself (/proc/self/exe): in an
 * installed tree at BINDIR/../LIBDIR/libncclspy.so (NSP_LIBDIR_FROM_BIN,
 * from meson's bindir and libdir), in a build tree at
 * analyzer/../shim/libncclspy.so, or beside it.  `run` prepends it to
 * LD_PRELOAD (a preload already there is kept, after it), sets
 * NCCLSPY_DIR unless it is set (default ncclspy-<job id> under a launcher
 * that names its job -- every rank of `srun ncclspy run -- ...` must write
 * into one directory -- else ncclspy-<date>-<time>), and runs the command
 * in a child.  The child has the terminal; SIGINT and SIGQUIT from the
 * terminal reach it as they reach us (same process group), and we pass
 * them on only when a process sent them to us; SIGTERM, SIGHUP, SIGUSR1
 * and SIGUSR2 sent to us are passed on to it.  When it ends the analysis of the directory goes to
 * stderr (not under a launcher's rank other than 0: one report per job),
 * then ncclspy ends as the command did: its exit status, or the same
 * signal. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nsp_config.h"
#include "nsp_launchers.h"
#include "nsp_run.h"

#ifndef NSP_LIBDIR_FROM_BIN
#define NSP_LIBDIR_FROM_BIN "../lib"
#endif

int nsp_shim_path(char *out, size_t cap) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return -1;
  exe[n] = 0;
  char *slash = strrchr(exe, '/');
  if (!slash) return -1;
  *slash = 0;
  const char *rel[] = {"/" NSP_LIBDIR_FROM_BIN "/libncclspy.so", "/../shim/libncclspy.so", "/libncclspy.so"};
  for (size_t i = 0; i < sizeof rel / sizeof *rel; i++) {
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s%s", exe, rel[i]);
    char real[PATH_MAX];
    if (access(path, R_OK) == 0 && realpath(path, real) && strlen(real) < cap) {
      strcpy(out, real);
      return 0;
    }
  }
  return -1;
}

/* getenv, as nsp_launcher_env wants it. */
static const char *get_env(const char *name, void *arg) {
  (void)arg;
  return getenv(name);
}

/* The launcher's name for this job, or NULL: every rank gets the same. */
static const char *job_id(void) { return nsp_launcher_env(NSP_LV_JOB, get_env, NULL, NULL); }

/* This process's rank under a launcher that starts one `ncclspy run` per
 * rank (srun, mpirun, torchrun); -1 when none says. */
static long launcher_rank(void) {
  const char *v = nsp_launcher_env(NSP_LV_RANK, get_env, NULL, NULL);
  return v ? strtol(v, NULL, 10) : -1;
}

static volatile sig_atomic_t nsp_child;

static void pass_on(int sig) {
  if (nsp_child > 0) kill((pid_t)nsp_child, sig);
}

/* SIGINT and SIGQUIT: from the terminal (si_code SI_KERNEL) the whole
 * foreground process group, the command included, has it already; sent
 * to ncclspy by a process (kill, timeout -s INT, a supervisor: si_code
 * 0 or less) it is passed on, as sudo does. */
static void pass_on_sent(int sig, siginfo_t *info, void *uc) {
  (void)uc;
  if (info && info->si_code <= 0) pass_on(sig);
}

/* mkdir -p: dir and its missing parents; *made (may be NULL) the number
 * of them this call made, the deepest last.  0, or -1 with errno. */
static int make_dirs(const char *dir, int *made) {
  char path[PATH_MAX];
  int n = 0;
  if (made) *made = 0;
  if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path) return errno = ENAMETOOLONG, -1;
  for (char *p = path + 1;; p++) {
    if (*p && *p != '/') continue;
    char c = *p;
    *p = '\0';
    if (mkdir(path, 0777) == 0) n++;
    else if (errno != EEXIST) return -1;
    if (made) *made = n;
    if (!c) return 0;
    *p = c;
  }
}

/* Removes the last `made` components of dir that make_dirs made (empty
 * ones only), deepest first. */
static void unmake_dirs(const char *dir, int made) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s", dir);
  for (int i = 0; i < made; i++) {
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/') path[--n] = '\0';
    if (rmdir(path) < 0) return;
    char *slash = strrchr(path, '/');
    if (!slash || slash == path) return;
    *slash = '\0';
  }
}

/* Whether dir already holds a trace (*.ncclspy). */
static int holds_traces(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  struct dirent *e;
  int found = 0;
  while (!found && (e = readdir(d)) != NULL) {
    size_t n = strlen(e->d_name);
    found = n > 8 && !strcmp(e->d_name + n - 8, ".ncclspy");
  }
  closedir(d);
  return found;
}

static const char nsp_usage_run_text[] =
    "usage: ncclspy run [--no-analyze] [-d DIR] -- COMMAND [ARGS...]\n"
    "\n"
    "Runs COMMAND with libncclspy.so preloaded (found next to this command;\n"
    "`ncclspy shim-path` prints it), writing traces into DIR (NCCLSPY_DIR if\n"
    "set, else ncclspy-<job id> under Slurm, torchrun or Open MPI, else\n"
    "ncclspy-<date>-<time>), then prints `ncclspy analyze DIR` on stderr.\n"
    "A preload already in LD_PRELOAD is kept.  The command keeps the\n"
    "terminal; signals sent to ncclspy are passed on to it.  Use it around\n"
    "the launcher (`ncclspy run -- torchrun ...`) or inside it (`srun\n"
    "ncclspy run -- python ...`: only rank 0 analyses).\n"
    "\n"
    "options:\n"
    "  -d, --dir DIR     write the traces there\n"
    "  --no-analyze      do not analyse afterwards\n"
    "\n"
    "exit status: COMMAND's (a command killed by a signal: ncclspy ends by\n"
    "the same signal); 2 usage error; 127 COMMAND not found, 126 not run.\n";
const char *const nsp_usage_run = nsp_usage_run_text;

int nsp_cmd_run(int argc, char **argv, int (*analyze)(const char *dir)) {
  static const struct option opts[] = {
      {"dir", required_argument, NULL, 'd'},
      {"no-analyze", no_argument, NULL, 'n'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  const char *dir = NULL;
  int no_analyze = 0, c;
  opterr = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, "+:d:h", opts, NULL)) != -1) {
    switch (c) {
      case 'd':
        if (!*optarg) {
          fprintf(stderr, "ncclspy run: -d needs a directory; see `ncclspy help run`\n");
          return 2;
        }
        dir = optarg;
        break;
      case 'n': no_analyze = 1; break;
      case 'h': fputs(nsp_usage_run, stdout); return 0;
      default:
        fprintf(stderr, "ncclspy run: %s; see `ncclspy help run`\n",
                c == ':' ? "an option needs a value" : "unknown option");
        return 2;
    }
  }
  if (optind >= argc) {
    fprintf(stderr, "ncclspy run: no command given (ncclspy run -- COMMAND ...); see `ncclspy help run`\n");
    return 2;
  }
  char shim[PATH_MAX];
  if (nsp_shim_path(shim, sizeof shim) < 0) {
    fprintf(stderr, "ncclspy run: libncclspy.so is not next to this command (looked in %s, ../shim, and "
                    "beside it); set LD_PRELOAD yourself\n", NSP_LIBDIR_FROM_BIN);
    return 2;
  }
  /* The directory: -d, else NCCLSPY_DIR, else a new name. */
  char made[256];
  if (!dir) dir = getenv("NCCLSPY_DIR");
  if (!dir || !*dir) {
    const char *id = job_id();
    if (id) {
      snprintf(made, sizeof made, "ncclspy-%.200s", id);
    } else {
      time_t now = time(NULL);
      struct tm tm;
      localtime_r(&now, &tm);
      strftime(made, sizeof made, "ncclspy-%Y%m%d-%H%M%S", &tm);
    }
    dir = made;
  }
  struct stat st;
  int existed = stat(dir, &st) == 0, nmade = 0;
  int bad = make_dirs(dir, &nmade) < 0 || stat(dir, &st) < 0 || (!S_ISDIR(st.st_mode) && (errno = ENOTDIR)) ||
            access(dir, W_OK | X_OK) < 0;
  if (bad) {
    fprintf(stderr, "ncclspy run: cannot write traces into %s: %s\n", dir, strerror(errno));
    return 2;
  }
  if (existed && holds_traces(dir) && launcher_rank() <= 0)
    fprintf(stderr, "ncclspy run: %s already holds traces of an earlier run: the analysis reports the newest "
                    "run (one directory per job keeps them apart)\n", dir);
  const char *old = getenv("LD_PRELOAD");
  size_t len = strlen(shim) + (old ? strlen(old) : 0) + 2;
  char *preload = malloc(len);
  if (!preload) return 2;
  if (old && *old && !strstr(old, shim)) snprintf(preload, len, "%s:%s", shim, old);
  else snprintf(preload, len, "%s", old && *old ? old : shim);
  setenv("LD_PRELOAD", preload, 1);
  setenv("NCCLSPY_DIR", dir, 1);
  free(preload);

  /* Terminal signals reach the child directly; the others are passed on. */
  struct sigaction sent = {.sa_sigaction = pass_on_sent, .sa_flags = SA_SIGINFO}, fwd = {.sa_handler = pass_on},
                   oint, oquit;
  sigemptyset(&sent.sa_mask);
  sigemptyset(&fwd.sa_mask);
  /* Tells the parent that exec failed (closed on a successful exec). */
  int execfd[2];
  if (pipe2(execfd, O_CLOEXEC) < 0) execfd[0] = execfd[1] = -1;
  int passed[] = {SIGTERM, SIGHUP, SIGUSR1, SIGUSR2};
  struct sigaction saved[4];
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    fprintf(stderr, "ncclspy run: fork: %s\n", strerror(errno));
    return 126;
  }
  if (pid == 0) {
    if (execfd[0] >= 0) close(execfd[0]);
    execvp(argv[optind], argv + optind);
    int e = errno;
    fprintf(stderr, "ncclspy run: %s: %s\n", argv[optind], strerror(e));
    if (execfd[1] >= 0 && write(execfd[1], "x", 1) < 0) {
    }
    _exit(e == ENOENT ? 127 : 126);
  }
  if (execfd[1] >= 0) close(execfd[1]);
  nsp_child = pid;
  sigaction(SIGINT, &sent, &oint);
  sigaction(SIGQUIT, &sent, &oquit);
  for (int i = 0; i < 4; i++) sigaction(passed[i], &fwd, &saved[i]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  nsp_child = 0;
  sigaction(SIGINT, &oint, NULL);
  sigaction(SIGQUIT, &oquit, NULL);
  for (int i = 0; i < 4; i++) sigaction(passed[i], &saved[i], NULL);

  char x;
  int exec_failed = execfd[0] >= 0 && read(execfd[0], &x, 1) == 1;
  if (execfd[0] >= 0) close(execfd[0]);
  if (exec_failed && !existed) unmake_dirs(dir, nmade); /* made for a command that never ran */
  long rank = launcher_rank();
  if (!no_analyze && !exec_failed && rank <= 0 && analyze) {
    fprintf(stderr, "\n== ncclspy analyze %s ==\n", dir);
    analyze(dir);
  }
  if (WIFSIGNALED(status)) {
    /* End as the command did: the same signal, its default action. */
    int sig = WTERMSIG(status);
    /* The command dumped its core if it was to; not ncclspy's as well. */
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    signal(sig, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    fflush(NULL);
    raise(sig);
    return 128 + sig; /* a signal whose default is to go on */
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 126;
}
