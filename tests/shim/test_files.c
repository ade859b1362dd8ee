/* test_files.c - disk trouble and the safety of the shim's files.
 *
 * usage: test_files TEST LIBNCCLSPY
 * Disk trouble: the job runs exactly as without the shim (same stdout, exit
 * status 0), the shim says one "ncclspy:" line, and the trace (when there
 * is one) accounts for every call: records + DROPPED counts = calls made.
 *   missing    NCCLSPY_DIR does not exist: made, mode 0700, no warning
 *   unwritable NCCLSPY_DIR cannot be written (as root: run as nobody)
 *   full       NCCLSPY_DIR is a 128 KiB tmpfs (own mount namespace; skipped
 *              where one cannot be made)
 *   fsize      RLIMIT_FSIZE of 64 KiB: the shim's writes past it must not
 *              raise SIGXFSZ at the program
 *   cap        NCCLSPY_MAX_MB=1
 * Security:
 *   modes      files 0600 and directory 0700; NCCLSPY_MODE=0640 gives 0640
 *              and 0750
 *   symlink    symlinks planted at the names the shim would create (trace,
 *              temporary names, ring) are never followed; a symlinked
 *              NCCLSPY_DIR component owned by another user is refused (as
 *              root only), one owned by the user is followed
 *   env        the environment snapshot holds the allowlisted variables and
 *              nothing named like a secret
 *   tensor     buffers filled with a marker pattern: the marker is nowhere in
 *              the decompressed trace nor in the ring file of a killed run
 * Output is TAP. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include "nsp_names.h"
#include "nsp_nccl.h"
#include "nsp_reader.h"
#include "tests/nsp_tap.h"
#include "tests/nsp_trace_dir.h"

NSP_NCCL_DECLARE(nccl)

static const char *self_exe, *shim_so;
static char base[64];

static void skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void skip(const char *fmt, ...) {
  va_list ap;
  tests++;
  printf("ok %d - # SKIP ", tests);
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  printf("\n");
}

/* ---- workers ---- */

#define MARKER "NSP-TENSOR-MARKER-7f3a"

/* NSP_TEST_FSIZE=BYTES: RLIMIT_FSIZE (soft) of BYTES for everything but
 * the communicator's init (the stand-in sizes a shared-memory file then,
 * which such a limit would kill with SIGXFSZ, with or without the shim). */
static void fsize_limit(int on) {
  const char *v = getenv("NSP_TEST_FSIZE");
  struct rlimit rl;
  if (!v || getrlimit(RLIMIT_FSIZE, &rl) < 0) return;
  rl.rlim_cur = on ? (rlim_t)atol(v) : rl.rlim_max;
  setrlimit(RLIMIT_FSIZE, &rl);
}

static int worker_calls(long n) {
  ncclUniqueId id;
  ncclComm_t c = NULL;
  long made = 0;
  float x[64], y[64];
  for (int i = 0; i < 64; i++) x[i] = (float)i;
  fsize_limit(1); /* the shim's first call makes its files under the limit */
  if (ncclGetUniqueId(&id) != ncclSuccess) return 3;
  fsize_limit(0);
  if (ncclCommInitRank(&c, 1, id, 0) != ncclSuccess) return 3;
  fsize_limit(1);
  made = 2;
  uint64_t r = 88172645463325252ull;
  for (long i = 0; i < n; i++) {
    if (i % 1000 == 999) {
      /* A pace the writer keeps up with, so that nothing is dropped for a
       * full ring: only the disk trouble under test. */
      struct timespec pause = {0, 1000000};
      nanosleep(&pause, NULL);
    }
    /* Varying counts and buffers: records that do not compress to nothing. */
    r ^= r << 13, r ^= r >> 7, r ^= r << 17;
    ncclAllReduce(x + r % 8, y + (r >> 8) % 8, 1 + (r >> 16) % 56, ncclFloat32, ncclSum, c, NULL);
    made++;
  }
  ncclCommDestroy(c);
  made++;
  sigset_t pend;
  sigpending(&pend);
  printf("calls %ld xfsz-pending %d\n", made, sigismember(&pend, SIGXFSZ));
  return 0;
}

static int worker_tensor(int die) {
  enum { N = 4096 };
  static char a[N], b[N];
  for (size_t i = 0; i < N; i++) a[i] = b[i] = MARKER[i % (sizeof MARKER - 1)];
  ncclUniqueId id;
  ncclComm_t c = NULL;
  if (ncclGetUniqueId(&id) != ncclSuccess || ncclCommInitRank(&c, 1, id, 0) != ncclSuccess) return 3;
  for (int i = 0; i < 50; i++) {
    ncclAllReduce(a, b, N, ncclInt8, ncclMax, c, NULL);
    ncclBroadcast(a, b, N, ncclUint8, 0, c, NULL);
    ncclAllGather(a, b, N, ncclInt8, c, NULL);
    ncclGroupStart();
    ncclSend(a, N, ncclInt8, 0, c, NULL);
    ncclRecv(b, N, ncclInt8, 0, c, NULL);
    ncclGroupEnd();
    /* A failing call: its error text goes to the ring file's blobs. */
    ncclAllReduce(a, b, N, (ncclDataType_t)99, ncclSum, c, NULL);
  }
  if (die) raise(SIGKILL);
  ncclCommDestroy(c);
  return 0;
}

static int worker(int argc, char **argv) {
  if (argc >= 4 && !strcmp(argv[2], "calls")) return worker_calls(atol(argv[3]));
  if (argc >= 3 && !strcmp(argv[2], "tensor")) return worker_tensor(0);
  if (argc >= 3 && !strcmp(argv[2], "tensor-killed")) return worker_tensor(1);
  return 2;
}

/* ---- running workers ---- */

enum { AS_NOBODY = 1 };

struct result {
  int status;
  char out[256];
  char err[4096];
  int warnings; /* "ncclspy:" lines on stderr */
};

/* Makes `dir` a small tmpfs in a mount namespace of our own. */
static int own_tmpfs(const char *dir, const char *size) {
  if (unshare(CLONE_NEWNS) < 0) {
    uid_t uid = getuid();
    gid_t gid = getgid();
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0) return -1;
    char buf[64];
    int fd = open("/proc/self/setgroups", O_WRONLY);
    if (fd >= 0) {
      if (write(fd, "deny", 4) < 0) { /* older kernels */ }
      close(fd);
    }
    snprintf(buf, sizeof buf, "%d %d 1", (int)uid, (int)uid);
    fd = open("/proc/self/uid_map", O_WRONLY);
    if (fd < 0 || write(fd, buf, strlen(buf)) < 0) return -1;
    close(fd);
    snprintf(buf, sizeof buf, "%d %d 1", (int)gid, (int)gid);
    fd = open("/proc/self/gid_map", O_WRONLY);
    if (fd < 0 || write(fd, buf, strlen(buf)) < 0) return -1;
    close(fd);
  }
  if (mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) return -1;
  char opts[64];
  snprintf(opts, sizeof opts, "size=%s,mode=0777", size);
  return mount("tmpfs", dir, "tmpfs", 0, opts);
}

/* Runs `worker ARGS` (shim preloaded when preload) with env NAME=VALUE
 * pairs; flags AS_NOBODY. */
static int run(struct result *res, int preload, const char *dir, char *const args[], char *const env[],
               int flags) {
  int out[2], err[2];
  memset(res, 0, sizeof *res);
  if (pipe(out) < 0 || pipe(err) < 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], 1);
    dup2(err[1], 2);
    close(out[0]);
    close(err[0]);
    if (preload) setenv("LD_PRELOAD", shim_so, 1);
    else unsetenv("LD_PRELOAD");
    setenv("NCCLSPY_DIR", dir, 1);
    for (int i = 0; env && env[i]; i += 2) setenv(env[i], env[i + 1], 1);
    if ((flags & AS_NOBODY) && geteuid() == 0) {
      if (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0)
        _exit(78);
    }
    char *argv[8] = {(char *)self_exe, (char *)"worker"};
    int i = 2;
    for (; args[i - 2] && i < 7; i++) argv[i] = args[i - 2];
    argv[i] = NULL;
    alarm(120);
    execv(self_exe, argv);
    _exit(127);
  }
  close(out[1]);
  close(err[1]);
  size_t no = 0, ne = 0;
  for (;;) {
    ssize_t n = read(out[0], res->out + no, sizeof res->out - 1 - no);
    if (n <= 0) break;
    no += (size_t)n;
    if (no + 1 >= sizeof res->out) break;
  }
  for (;;) {
    char sink[512];
    int full = ne + 1 >= sizeof res->err;
    ssize_t n = read(err[0], full ? sink : res->err + ne, full ? sizeof sink : sizeof res->err - 1 - ne);
    if (n <= 0) break;
    if (!full) ne += (size_t)n;
  }
  res->out[no] = 0;
  res->err[ne] = 0;
  close(out[0]);
  close(err[0]);
  waitpid(pid, &res->status, 0);
  /* Warnings about the disk: a full ring (the writer starved of CPU, as
   * under a sanitizer) is another matter, counted in the trace. */
  for (const char *p = res->err; (p = strstr(p, "ncclspy:")); p++)
    if ((p == res->err || p[-1] == '\n') && strncmp(p, "ncclspy: the trace writer fell behind", 37))
      res->warnings++;
  return pid;
}

struct counts {
  long files, records, process, dropped, dropped_reason[4];
  long long size;
};

/* nsp_trace_dir_each callback of count(): every trace file's size, and
 * the records of those that open. */
static void count_one(const char *path, struct nsp_reader *r, void *arg) {
  struct counts *c = arg;
  struct stat st;
  if (stat(path, &st) == 0) c->size += st.st_size;
  if (!r) return;
  c->files++;
  struct nsp_rec rec;
  while (nsp_reader_next(r, &rec) == 1) {
    c->records += rec.kind == NSP_REC_CALL || rec.kind == NSP_REC_COMM || rec.kind == NSP_REC_COMM_END;
    c->process += rec.kind == NSP_REC_PROCESS;
    if (rec.kind == NSP_REC_DROPPED) {
      c->dropped += (long)rec.count;
      if (rec.aux < 4) c->dropped_reason[rec.aux] += (long)rec.count;
    }
  }
}

static void count(const char *dir, struct counts *c) {
  memset(c, 0, sizeof *c);
  nsp_trace_dir_each(dir, 0, count_one, c);
}

static void rm_rf(const char *path) {
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
  if (system(cmd) != 0) fprintf(stderr, "# could not remove %s\n", path);
}

/* ---- disk trouble ---- */

/* The run with the shim against one without: same stdout and status. */
static void disk_case(const char *name, const char *dir, char *const env[], int flags, rlim_t fsize,
                      long calls, int expect_reason, int expect_warnings) {
  char n[32];
  snprintf(n, sizeof n, "%ld", calls);
  struct result with, without;
  char other[128];
  snprintf(other, sizeof other, "%s/plain", base);
  mkdir(other, 0700);
  run(&without, 0, other, (char *[]){(char *)"calls", n, NULL}, env, flags);
  run(&with, 1, dir, (char *[]){(char *)"calls", n, NULL}, env, flags);
  long made = 0;
  int pending = -1;
  sscanf(with.out, "calls %ld xfsz-pending %d", &made, &pending);
  ok(with.status == 0 && without.status == 0 && !strcmp(with.out, without.out) && made == calls + 3,
     "%s: the job runs exactly as without the shim (status 0x%x / 0x%x, output \"%.*s\")", name,
     with.status, without.status, (int)strcspn(with.out, "\n"), with.out);
  ok(with.warnings == expect_warnings, "%s: %s ncclspy: warning (%d)%s%.*s", name,
     expect_warnings ? "exactly one" : "no", with.warnings, with.warnings ? ": " : "",
     (int)strcspn(with.err, "\n"), with.err);
  if (expect_reason < 0) return;
  struct counts c;
  count(dir, &c);
  if (expect_reason == 0) {
    ok(c.files == 0, "%s: no trace file (%ld)", name, c.files);
    return;
  }
  /* Records lost count as dropped, the process snapshot included (and
   * any call-site record, a few at most: hence the small slack). */
  long total = c.records + c.process + c.dropped;
  int accounted = c.files == 1 && c.records <= made && total >= made + 1 && total <= made + 1 + 64 &&
                  c.dropped_reason[expect_reason] > 0;
  ok(accounted,
     "%s: the trace accounts for all %ld calls and the process record: %ld records + %ld process + %ld "
     "dropped (%ld for reason %d)", name, made, c.records, c.process, c.dropped,
     c.dropped_reason[expect_reason], expect_reason);
  /* Where the drops went missing: a last data frame that filled the disk
   * (or RLIMIT_FSIZE) to within a few bytes leaves no room for the drop
   * summary that counts the records lost after it. */
  struct statvfs sv;
  if (!accounted && statvfs(dir, &sv) == 0)
    printf("# %s: the trace is %lld bytes, %llu bytes are left on its filesystem\n", name, c.size,
           (unsigned long long)sv.f_bavail * sv.f_frsize);
  if (fsize) ok(pending == 0, "%s: no SIGXFSZ raised at the program (pending %d)", name, pending);
}

static void test_missing(void) {
  char dir[128];
  snprintf(dir, sizeof dir, "%s/not/yet/there", base);
  disk_case("missing", dir, NULL, 0, 0, 1000, -1, 0);
  struct counts c;
  count(dir, &c);
  struct stat st;
  int mode = stat(dir, &st) == 0 ? (int)(st.st_mode & 07777) : -1;
  ok(c.files == 1 && c.records == 1003 && mode == 0700,
     "missing: the directory is made with mode 0700 (0%o) and holds the whole trace (%ld records)", mode,
     c.records);
}

static void test_unwritable(void) {
  char dir[128];
  snprintf(dir, sizeof dir, "%s/ro", base);
  mkdir(dir, 0555);
  chmod(dir, 0555);
  chmod(base, 0755);
  /* One "ncclspy:" line from the run... and disk_case wants exactly one. */
  disk_case("unwritable", dir, NULL, AS_NOBODY, 0, 1000, 0, 1);
}

static void test_full(void) {
  char dir[128];
  snprintf(dir, sizeof dir, "%s/full", base);
  mkdir(dir, 0700);
  /* This process (and so its workers) in a mount namespace of its own. */
  if (own_tmpfs(dir, "128k") < 0) {
    skip("full: no tmpfs can be mounted here (%s); the fsize test covers a full disk", strerror(errno));
    return;
  }
  disk_case("full", dir, NULL, 0, 0, 300000, NSP_DROP_WRITE_ERROR, 1);
  umount2(dir, MNT_DETACH);
}

static void test_fsize(void) {
  char dir[128];
  snprintf(dir, sizeof dir, "%s/fsize", base);
  char *env[] = {(char *)"NSP_TEST_FSIZE", (char *)"65536", NULL};
  disk_case("fsize", dir, env, 0, 1, 300000, NSP_DROP_WRITE_ERROR, 1);
}

static void test_cap(void) {
  char dir[128];
  snprintf(dir, sizeof dir, "%s/cap", base);
  disk_case("cap", dir, (char *[]){(char *)"NCCLSPY_MAX_MB", (char *)"1", NULL}, 0, 0, 600000,
            NSP_DROP_SIZE_CAP, 1);
  struct counts c;
  count(dir, &c);
  ok(c.size <= (1 << 20), "cap: the trace stays within 1 MiB (%lld bytes)", c.size);
}

/* ---- security ---- */

static int mode_of(const char *path) {
  struct stat st;
  return lstat(path, &st) == 0 ? (int)(st.st_mode & 07777) : -1;
}

/* The one trace file in dir (name in out). */
static int find_trace(const char *dir, char *out, size_t len) {
  DIR *d = opendir(dir);
  struct dirent *e;
  int n = 0;
  while (d && (e = readdir(d))) {
    size_t l = strlen(e->d_name);
    if (l < 8 || strcmp(e->d_name + l - 8, ".ncclspy")) continue;
    char path[4200];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (lstat(path, &st) < 0 || !S_ISREG(st.st_mode)) continue; /* planted links */
    snprintf(out, len, "%s", path);
    n++;
  }
  if (d) closedir(d);
  return n;
}

static void test_modes(void) {
  for (int custom = 0; custom < 2; custom++) {
    char dir[128], trace[4200] = "";
    snprintf(dir, sizeof dir, "%s/modes%d/sub", base, custom);
    struct result r;
    char *env[] = {(char *)"NCCLSPY_MODE", (char *)"0640", NULL};
    mode_t old = umask(custom ? 077 : 022); /* the mode asked for wins over the umask */
    run(&r, 1, dir, (char *[]){(char *)"calls", (char *)"10", NULL}, custom ? env : NULL, 0);
    umask(old);
    find_trace(dir, trace, sizeof trace);
    int fm = mode_of(trace), dm = mode_of(dir);
    char parent[128];
    snprintf(parent, sizeof parent, "%s/modes%d", base, custom);
    int pm = mode_of(parent);
    if (custom)
      ok(r.status == 0 && fm == 0640 && dm == 0750 && pm == 0750,
         "modes: NCCLSPY_MODE=0640 gives files 0640 (0%o) and directories 0750 (0%o, 0%o)", fm, dm, pm);
    else
      ok(r.status == 0 && fm == 0600 && dm == 0700 && pm == 0700,
         "modes: trace file 0600 (0%o), directories made 0700 (0%o, 0%o)", fm, dm, pm);
  }
}

/* Forks the worker but lets it exec only after `plant` ran with its pid. */
static void run_planted(struct result *res, const char *dir, void (*plant)(const char *dir, pid_t pid)) {
  /* The child's pid is known only once forked: it waits for a byte. */
  int go[2];
  if (pipe(go) < 0) return;
  int out[2], err[2];
  if (pipe(out) < 0 || pipe(err) < 0) return;
  memset(res, 0, sizeof *res);
  pid_t pid = fork();
  if (pid == 0) {
    close(go[1]);
    char b;
    if (read(go[0], &b, 1) != 1) _exit(76);
    dup2(out[1], 1);
    dup2(err[1], 2);
    setenv("LD_PRELOAD", shim_so, 1);
    setenv("NCCLSPY_DIR", dir, 1);
    execl(self_exe, self_exe, "worker", "calls", "10", (char *)NULL);
    _exit(127);
  }
  close(go[0]);
  close(out[1]);
  close(err[1]);
  plant(dir, pid);
  if (write(go[1], "x", 1) != 1) { /* the child reads EOF and exits */ }
  close(go[1]);
  ssize_t n = read(out[0], res->out, sizeof res->out - 1);
  res->out[n > 0 ? n : 0] = 0;
  n = read(err[0], res->err, sizeof res->err - 1);
  res->err[n > 0 ? n : 0] = 0;
  close(out[0]);
  close(err[0]);
  waitpid(pid, &res->status, 0);
}

static char victim[128];

static void plant_files(const char *dir, pid_t pid) {
  char host[256] = "", link[512];
  gethostname(host, sizeof host - 1);
  const char *names[] = {".ncclspy", ".ncclspy.tmp", ".1.ncclspy.tmp", ".2.ncclspy.ring.tmp",
                         ".rank0.ncclspy"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    snprintf(link, sizeof link, "%s/%s.%d%s", dir, host, (int)pid, names[i]);
    if (symlink(victim, link) < 0) fprintf(stderr, "# symlink %s: %s\n", link, strerror(errno));
  }
}

static void plant_nothing(const char *dir, pid_t pid) {
  (void)dir;
  (void)pid;
}

static void test_symlink(void) {
  char dir[128];
  snprintf(dir, sizeof dir, "%s/sym", base);
  mkdir(dir, 0700);
  snprintf(victim, sizeof victim, "%s/victim", base);
  FILE *f = fopen(victim, "w");
  if (f) {
    fputs("precious\n", f);
    fclose(f);
  }
  chmod(victim, 0644);
  struct result r;
  run_planted(&r, dir, plant_files);
  struct stat st;
  int intact = stat(victim, &st) == 0 && st.st_size == 9 && (st.st_mode & 0777) == 0644;
  /* Names taken by links: the trace becomes host.pid.2.ncclspy, its ring
   * cannot be made under the planted .ring.tmp (one warning, records stay
   * in memory), and the rank rename finds rank0 taken and keeps the name. */
  char trace[4200] = "";
  int n = find_trace(dir, trace, sizeof trace);
  struct counts c;
  count(dir, &c);
  int regular = trace[0] && lstat(trace, &st) == 0 && S_ISREG(st.st_mode);
  ok(r.status == 0 && intact && regular && c.records == 13,
     "symlink: links planted at the trace's names are never followed: the target is intact (%d), "
     "the trace is a new regular file (%s) with all 13 records (%ld; %d names end in .ncclspy)",
     intact, trace[0] ? strrchr(trace, '/') + 1 : "none", c.records, n);

  /* A symlinked directory component: refused when another user owns the
   * link (as in a world-writable /tmp), followed when the user owns it. */
  char real[128], link[128], trace_dir[160];
  snprintf(real, sizeof real, "%s/realdir", base);
  snprintf(link, sizeof link, "%s/linkdir", base);
  mkdir(real, 0700);
  if (symlink(real, link) < 0) return;
  snprintf(trace_dir, sizeof trace_dir, "%s/traces", link);
  run_planted(&r, trace_dir, plant_nothing);
  char inreal[192];
  snprintf(inreal, sizeof inreal, "%s/traces", real);
  n = find_trace(inreal, trace, sizeof trace);
  ok(r.status == 0 && n == 1, "symlink: a symlinked NCCLSPY_DIR component owned by the user is followed "
                              "(%d trace)", n);
  rm_rf(inreal);
  if (geteuid() != 0) {
    skip("symlink: a link owned by another user needs root to plant");
    return;
  }
  if (lchown(link, 65534, 65534) < 0) return;
  run_planted(&r, trace_dir, plant_nothing);
  n = find_trace(inreal, trace, sizeof trace);
  ok(r.status == 0 && n == 0 && strstr(r.err, "symbolic link owned by uid 65534") != NULL,
     "symlink: a symlinked NCCLSPY_DIR component owned by another user is refused, with one warning "
     "(%d trace; %.*s)", n, (int)strcspn(r.err, "\n"), r.err);
}

static void test_env(void) {
  char dir[128];
  snprintf(dir, sizeof dir, "%s/env", base);
  char *env[] = {(char *)"NCCL_DEBUG", (char *)"INFO", (char *)"NCCL_IB_HCA", (char *)"mlx5",
                 (char *)"CUDA_VISIBLE_DEVICES", (char *)"0,1", (char *)"TORCH_NCCL_BLOCKING_WAIT", (char *)"1",
                 (char *)"TORCH_DISTRIBUTED_DEBUG", (char *)"DETAIL", (char *)"RANK", (char *)"0",
                 (char *)"WORLD_SIZE", (char *)"1", (char *)"LOCAL_RANK", (char *)"0",
                 (char *)"SLURM_PROCID", (char *)"0", (char *)"OMPI_COMM_WORLD_RANK", (char *)"0",
                 (char *)"PMI_RANK", (char *)"0",
                 /* not allowed, or allowed by prefix but named like secrets */
                 (char *)"HOME_DIR_X", (char *)"leak-1", (char *)"AWS_SECRET_ACCESS_KEY", (char *)"leak-2",
                 (char *)"NCCL_API_KEY", (char *)"leak-3", (char *)"NCCL_PASSWORD", (char *)"leak-4",
                 (char *)"CUDA_TOKEN", (char *)"leak-5", (char *)"TORCH_NCCL_CREDENTIAL_FILE", (char *)"leak-6",
                 (char *)"NCCL_SECRET", (char *)"leak-7", (char *)"HF_TOKEN", (char *)"leak-8",
                 (char *)"GITHUB_TOKEN", (char *)"leak-9", NULL};
  struct result r;
  run(&r, 1, dir, (char *[]){(char *)"calls", (char *)"10", NULL}, env, 0);
  char trace[4200] = "", err[256];
  find_trace(dir, trace, sizeof trace);
  struct nsp_reader *rd = nsp_reader_open(trace, err, sizeof err);
  struct nsp_rec rec;
  int allowed = 0, leaked = 0, preload = 0;
  static const char *const want[] = {"NCCL_DEBUG", "NCCL_IB_HCA", "CUDA_VISIBLE_DEVICES",
                                     "TORCH_NCCL_BLOCKING_WAIT", "TORCH_DISTRIBUTED_DEBUG", "RANK",
                                     "WORLD_SIZE", "LOCAL_RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK",
                                     "PMI_RANK"};
  while (rd && nsp_reader_next(rd, &rec) == 1) {
    if (rec.kind != NSP_REC_PROCESS || !rec.ext) continue;
    for (uint32_t i = 0; i < rec.ext->nenv; i++) {
      const char *name = rec.ext->env[2 * i], *value = rec.ext->env[2 * i + 1];
      if (!strncmp(value, "leak-", 5)) leaked++;
      if (!strcmp(name, "LD_PRELOAD")) preload = 1;
      for (size_t k = 0; k < sizeof want / sizeof *want; k++) allowed += !strcmp(name, want[k]);
    }
  }
  nsp_reader_destroy(rd);
  ok(allowed == 11 && preload && leaked == 0,
     "env: the snapshot holds the 11 allowlisted variables set (%d) and LD_PRELOAD (%d), and none of "
     "the 9 others nor any name with TOKEN, SECRET, KEY, PASS or CREDENTIAL (%d leaked)", allowed, preload,
     leaked);
}

/* Whether `needle` occurs in the decompressed frames of a trace or raw in
 * any other file of dir. */
static int marker_in(const char *dir, long *frames_bytes, long *raw_bytes) {
  int found = 0;
  DIR *d = opendir(dir);
  struct dirent *e;
  while (d && (e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    FILE *f = fopen(path, "rb");
    if (!f) continue;
    static unsigned char buf[64 << 20];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    *raw_bytes += (long)n;
    if (memmem(buf, n, MARKER, 8)) found = 1;
    size_t len = strlen(e->d_name);
    if (len < 8 || strcmp(e->d_name + len - 8, ".ncclspy") || n < 128) continue;
    /* Frames one by one after the 128-byte header. */
    size_t off = 128;
    static unsigned char out[64 << 20];
    while (off < n) {
      size_t fs = ZSTD_findFrameCompressedSize(buf + off, n - off);
      if (ZSTD_isError(fs)) break;
      size_t got = ZSTD_decompress(out, sizeof out, buf + off, fs);
      if (!ZSTD_isError(got)) {
        *frames_bytes += (long)got;
        if (memmem(out, got, MARKER, 8)) found = 1;
      }
      off += fs;
    }
  }
  if (d) closedir(d);
  return found;
}

static void test_tensor(void) {
  for (int killed = 0; killed < 2; killed++) {
    char dir[128];
    snprintf(dir, sizeof dir, "%s/tensor%d", base, killed);
    struct result r;
    run(&r, 1, dir, (char *[]){(char *)(killed ? "tensor-killed" : "tensor"), NULL}, NULL, 0);
    long fb = 0, rb = 0;
    int found = marker_in(dir, &fb, &rb);
    int ring_left = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) ring_left += strstr(e->d_name, ".ring") != NULL;
    if (d) closedir(d);
    ok(!found && (killed ? ring_left && rb > (1 << 20) : fb > 0),
       "tensor: no buffer contents in the trace of a %s run (%ld bytes decompressed, %ld bytes of "
       "files%s)", killed ? "killed" : "clean", fb, rb, killed ? ", ring file included" : "");
  }
}

/* nsp_trace_dir_each callback of tracking_of(). */
static void tracking_one(const char *path, struct nsp_reader *r, void *arg) {
  (void)path;
  long *bits = arg;
  struct nsp_rec rec;
  while (r && nsp_reader_next(r, &rec) == 1)
    if (rec.kind == NSP_REC_PROCESS && rec.ext) *bits = rec.ext->tracking;
}

/* The PROCESS record's tracking bits of the trace in dir; -1 none. */
static long tracking_of(const char *dir) {
  long bits = -1;
  nsp_trace_dir_each(dir, 0, tracking_one, &bits);
  return bits;
}

/* Settings: on/off words are understood as 1/0, a value that cannot be
 * used gives one warning naming its variable, and an NCCLSPY_DIR too long
 * to use turns tracing off (never a cut, other directory). */
static void test_settings(void) {
  char dir[128];
  struct result r, plain;
  snprintf(dir, sizeof dir, "%s/words", base);
  char *words[] = {"NCCLSPY_CALLSITES", "false", "NCCLSPY_SIGNALS", "off", "NCCLSPY_TIMING", "no", NULL};
  run(&plain, 0, dir, (char *[]){(char *)"calls", (char *)"50", NULL}, NULL, 0);
  run(&r, 1, dir, (char *[]){(char *)"calls", (char *)"50", NULL}, words, 0);
  long bits = tracking_of(dir);
  ok(r.status == 0 && !strcmp(r.out, plain.out) && r.warnings == 0 && bits >= 0 &&
         !(bits & (NSP_TRACK_CALLSITES | NSP_TRACK_SIGNALS | NSP_TRACK_TIMING)),
     "settings: NCCLSPY_CALLSITES=false, NCCLSPY_SIGNALS=off, NCCLSPY_TIMING=no turn those off, with no "
     "warning (tracking bits 0x%lx, %d warnings)", bits, r.warnings);

  /* Call-site settings are read only where call sites are built (not
   * without libunwind, nor in ThreadSanitizer builds): ask a default run. */
  snprintf(dir, sizeof dir, "%s/default", base);
  run(&r, 1, dir, (char *[]){(char *)"calls", (char *)"50", NULL}, NULL, 0);
  int sites = tracking_of(dir) > 0 && (tracking_of(dir) & NSP_TRACK_CALLSITES);
  snprintf(dir, sizeof dir, "%s/bad", base);
  char *bad[] = {"NCCLSPY_CALLSITES", "maybe", "NCCLSPY_CALLSITE_DEPTH", "100", "NCCLSPY_POLL_MS", "x", NULL};
  run(&r, 1, dir, (char *[]){(char *)"calls", (char *)"50", NULL}, bad, 0);
  ok(r.status == 0 && !strcmp(r.out, plain.out) && r.warnings == (sites ? 3 : 1) &&
         (!sites || strstr(r.err, "ncclspy: NCCLSPY_CALLSITES=maybe is not")) &&
         (!sites || strstr(r.err, "ncclspy: NCCLSPY_CALLSITE_DEPTH=100 is not a number in [1,")) &&
         strstr(r.err, "ncclspy: NCCLSPY_POLL_MS=x is not a number in [1, 1000]; using 2"),
     "settings: unusable values (call sites %s), one warning each, naming its variable (%d warnings), the job "
     "unchanged", sites ? "built" : "not built", r.warnings);

  /* An NCCLSPY_DIR of 4200 bytes whose first 4095 name a real directory. */
  static char longdir[4300];
  snprintf(longdir, sizeof longdir, "%s/long", base);
  mkdir(longdir, 0700);
  size_t n = strlen(longdir);
  while (n < 4200) longdir[n++] = '/';
  longdir[n] = 0;
  memcpy(longdir + 4190, "x", 2);
  char *env[] = {"NCCLSPY_DIR", longdir, NULL};
  run(&r, 1, base, (char *[]){(char *)"calls", (char *)"50", NULL}, env, 0);
  char shortdir[160];
  snprintf(shortdir, sizeof shortdir, "%s/long", base);
  struct counts c;
  count(shortdir, &c);
  ok(r.status == 0 && !strcmp(r.out, plain.out) && r.warnings == 1 && strstr(r.err, "longer than") &&
         c.files == 0,
     "settings: an NCCLSPY_DIR too long to use: one warning, no trace anywhere (%d warnings, %ld traces in "
     "the directory its first 4095 bytes name)", r.warnings, c.files);
}

int main(int argc, char **argv) {
  static char self[4096], shim[4096];
  if (!realpath("/proc/self/exe", self)) return 2;
  self_exe = self;
  if (argc >= 2 && !strcmp(argv[1], "worker")) return worker(argc, argv);
  if (argc < 3 || !realpath(argv[2], shim)) {
    fprintf(stderr, "usage: %s TEST LIBNCCLSPY\n", argv[0]);
    return 2;
  }
  shim_so = shim;
  snprintf(base, sizeof base, "/tmp/nsp-files-XXXXXX");
  if (!mkdtemp(base)) return 2;
  const char *t = argv[1];
  if (!strcmp(t, "missing")) test_missing();
  else if (!strcmp(t, "unwritable")) test_unwritable();
  else if (!strcmp(t, "full")) test_full();
  else if (!strcmp(t, "fsize")) test_fsize();
  else if (!strcmp(t, "cap")) test_cap();
  else if (!strcmp(t, "modes")) test_modes();
  else if (!strcmp(t, "symlink")) test_symlink();
  else if (!strcmp(t, "env")) test_env();
  else if (!strcmp(t, "tensor")) test_tensor();
  else if (!strcmp(t, "settings")) test_settings();
  else return 2;
  printf("1..%d\n", tests);
  if (!getenv("NSP_KEEP")) rm_rf(base);
  return failures ? 1 : 0;
}
