/* test_host.c - the host process is safe with the shim inside it.
 *
 * usage: test_host TEST LIBNCCLSPY [OTHER_PRELOAD_SO]
 *   fork     8 threads make NCCL calls (successful and failing ones) while
 *            the main thread forks 40 times; half the children make NCCL
 *            calls of their own, half none.  No child hangs (each has 60 s);
 *            a child that called NCCL has its own trace holding exactly its
 *            calls, one that did not has none; the parent's trace holds
 *            exactly the parent's calls.
 *   passthrough  a communicator made with NCCLSPY_BENCH_MODE_FILE beside an
 *            ordinary one: its calls follow the file's mode byte (pass
 *            through unrecorded, records only, as set); an empty file is
 *            refused without a fault, a FIFO without blocking.
 *   exec     a process makes calls, then execs a program (same pid) that
 *            makes calls: both traces are complete (the first one's tail
 *            comes from its crash ring: exec runs no destructors).
 *   threads  16 threads, each on its own communicator, 3000 all-reduces
 *            each: every call recorded once, every communicator's sequence
 *            numbers 1..3000 without a gap.
 *   preload  the shim next to another preloaded library that wraps
 *            ncclAllReduce itself (OTHER_PRELOAD_SO), in both orders in
 *            LD_PRELOAD: each call reaches NCCL once and is recorded once.
 *   retvals  a program printing the return value and errno of calls (good
 *            and bad arguments) prints the same with and without the shim.
 * The work runs in child processes with LD_PRELOAD set; this process reads
 * their traces.  Output is TAP. */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nsp_names.h"
#include "nsp_nccl.h"
#include "nsp_reader.h"
#include "tests/nsp_tap.h"
#include "tests/nsp_trace_dir.h"

NSP_NCCL_DECLARE(nccl)

/* ThreadSanitizer cannot run threads in a child forked from a threaded
 * process ("starting new threads after multi-threaded fork is not
 * supported"): under it, forked children make no NCCL calls (which would
 * start the shim's writer thread). */
#ifdef __SANITIZE_THREAD__
#define NSP_FORK_CHILD_CALLS 0
#else
#define NSP_FORK_CHILD_CALLS 1
#endif

/* LeakSanitizer cannot scan the stacks of the threads a forked child
 * lacks ("Running thread ... was not suspended. False leaks are
 * possible"), so in the fork worker's children it reports what those
 * threads held and fails the child's exit().  The sanitizer runtime calls
 * this hook (when built with ASan/LSan); no leak check in those children. */
static pid_t nsp_fork_parent;
int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void) { return nsp_fork_parent && getpid() != nsp_fork_parent; }

/* ---- reading traces ---- */

struct counts {
  long records, calls, comms, ends, dropped, files, allreduce;
  long seq_gaps; /* collectives whose seq is not previous + 1 on their comm */
};

/* nsp_trace_dir_each callback of count(). */
static void count_one(const char *path, struct nsp_reader *r, void *arg) {
  (void)path;
  struct counts *c = arg;
  if (!r) return;
  c->files++;
  uint64_t last_seq[4096] = {0};
  struct nsp_rec rec;
  while (nsp_reader_next(r, &rec) == 1) {
    int kind = rec.kind;
    c->calls += kind == NSP_REC_CALL;
    c->comms += kind == NSP_REC_COMM;
    c->ends += kind == NSP_REC_COMM_END;
    c->records += kind == NSP_REC_CALL || kind == NSP_REC_COMM || kind == NSP_REC_COMM_END ||
                  kind == NSP_REC_REDOP;
    if (kind == NSP_REC_DROPPED) c->dropped += (long)rec.count;
    if (kind == NSP_REC_CALL && rec.api == NSP_API_AllReduce) {
      c->allreduce++;
      if (rec.comm < 4096 && rec.result == ncclSuccess) {
        if (rec.seq != last_seq[rec.comm] + 1) c->seq_gaps++;
        last_seq[rec.comm] = rec.seq;
      }
    }
  }
}

/* Record counts of the traces in dir written by pid (every pid when 0). */
static void count(const char *dir, pid_t pid, struct counts *c) {
  memset(c, 0, sizeof *c);
  nsp_trace_dir_each(dir, pid, count_one, c);
}

static const char *shim_so, *self_exe;
static char dir[64];

/* Runs this program as `worker ARGS` with the shim preloaded; returns its
 * wait status.  Its stdout goes to out (may be NULL). */
static int run_worker(const char *preload, char *const args[], char *out, size_t outlen, int timeout_s) {
  int fds[2];
  if (pipe(fds) < 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    if (preload) setenv("LD_PRELOAD", preload, 1);
    else unsetenv("LD_PRELOAD");
    setenv("NCCLSPY_DIR", dir, 1);
    char *argv[16] = {(char *)self_exe, (char *)"worker"};
    int i = 2;
    for (; args[i - 2] && i < 15; i++) argv[i] = args[i - 2];
    argv[i] = NULL;
    alarm((unsigned)timeout_s); /* a hang ends as SIGALRM */
    execv(self_exe, argv);
    _exit(127);
  }
  close(fds[1]);
  size_t got = 0;
  char sink[4096];
  for (;;) {
    char *buf = out && got + 1 < outlen ? out + got : sink;
    size_t room = out && got + 1 < outlen ? outlen - 1 - got : sizeof sink;
    ssize_t n = read(fds[0], buf, room);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (buf != sink) got += (size_t)n;
  }
  if (out) out[got] = 0;
  close(fds[0]);
  int st = 0;
  waitpid(pid, &st, 0);
  return st;
}

static void clean_dir(void) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'/*", dir);
  if (system(cmd) != 0) fprintf(stderr, "# could not clean %s\n", dir);
}

/* ---- workers (run with the shim preloaded) ---- */

static ncclComm_t one_rank(void) {
  ncclUniqueId id;
  ncclComm_t c = NULL;
  if (ncclGetUniqueId(&id) != ncclSuccess || ncclCommInitRank(&c, 1, id, 0) != ncclSuccess) return NULL;
  return c;
}

static atomic_int stop_threads;

struct hammer {
  pthread_t t;
  long calls; /* recorded calls made */
  int errors;
};

static void *hammer_main(void *arg) {
  struct hammer *h = arg;
  ncclComm_t c = one_rank();
  float x[8] = {1}, y[8];
  h->calls = 2;
  if (!c) return NULL;
  for (long i = 0; !atomic_load(&stop_threads); i++) {
    if (i % 100 == 99) {
      struct timespec pause = {0, 1000000}; /* a pace the writer can keep up with */
      nanosleep(&pause, NULL);
    }
    /* Now and then a failing call: its error text takes the blob path. */
    if (i % 64 == 63) h->errors += ncclAllReduce(x, y, 8, (ncclDataType_t)99, ncclSum, c, NULL) != ncclSuccess;
    else ncclAllReduce(x, y, 8, ncclFloat32, ncclSum, c, NULL);
    h->calls++;
  }
  ncclCommDestroy(c);
  h->calls++;
  return NULL;
}

static int worker_fork(void) {
  struct hammer h[8];
  memset(h, 0, sizeof h);
  nsp_fork_parent = getpid();
  for (int i = 0; i < 8; i++) pthread_create(&h[i].t, NULL, hammer_main, &h[i]);
  struct timespec pause = {0, 5000000};
  nanosleep(&pause, NULL);
  int bad = 0;
  for (int k = 0; k < 40; k++) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
      alarm(60); /* a deadlock ends as SIGALRM; generous for loaded CI boxes */
      if (k % 2 && NSP_FORK_CHILD_CALLS) {
        /* Its own communicator and calls: 1 + 1 + 5 + 1 records. */
        ncclComm_t c = one_rank();
        float x = 1, y;
        for (int i = 0; i < 5 && c; i++) ncclAllReduce(&x, &y, 1, ncclFloat32, ncclSum, c, NULL);
        if (c) ncclCommDestroy(c);
        exit(c ? 0 : 3);
      }
      exit(0); /* no NCCL at all */
    }
    int st = 0;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) bad++;
    printf("child %d %d %d\n", (int)pid, k % 2 && NSP_FORK_CHILD_CALLS, st);
  }
  atomic_store(&stop_threads, 1);
  long calls = 0;
  for (int i = 0; i < 8; i++) {
    pthread_join(h[i].t, NULL);
    calls += h[i].calls;
  }
  printf("parent %d %ld %d\n", (int)getpid(), calls, bad);
  return 0;
}

static int worker_exec(int phase) {
  ncclComm_t c = one_rank();
  float x = 1, y;
  int n = phase == 1 ? 100 : 50;
  for (int i = 0; i < n && c; i++) ncclAllReduce(&x, &y, 1, ncclFloat32, ncclSum, c, NULL);
  if (phase == 1) {
    /* No destroy: the communicator dies with the image. */
    fflush(stdout);
    execl(self_exe, self_exe, "worker", "exec2", (char *)NULL);
    return 3;
  }
  ncclCommDestroy(c);
  return c ? 0 : 3;
}

struct threaded {
  pthread_t t;
  int ok;
};

static void *threaded_main(void *arg) {
  struct threaded *t = arg;
  ncclComm_t c = one_rank();
  float x[4] = {1, 2, 3, 4}, y[4];
  int good = c != NULL;
  for (int i = 0; i < 3000 && c; i++)
    good &= ncclAllReduce(x, y, 1 + (size_t)(i % 4), ncclFloat32, ncclSum, c, NULL) == ncclSuccess;
  if (c) good &= ncclCommDestroy(c) == ncclSuccess;
  t->ok = good;
  return NULL;
}

static int worker_threads(void) {
  struct threaded t[16];
  for (int i = 0; i < 16; i++) pthread_create(&t[i].t, NULL, threaded_main, &t[i]);
  int good = 1;
  for (int i = 0; i < 16; i++) {
    pthread_join(t[i].t, NULL);
    good &= t[i].ok;
  }
  return good ? 0 : 3;
}

static int worker_preload(void) {
  ncclComm_t c = one_rank();
  float x = 1, y;
  for (int i = 0; i < 10 && c; i++) ncclAllReduce(&x, &y, 1, ncclFloat32, ncclSum, c, NULL);
  if (c) ncclCommDestroy(c);
  long (*other)(void);
  void *sym = dlsym(RTLD_DEFAULT, "nsp_other_allreduce_count");
  memcpy(&other, &sym, sizeof other);
  printf("%ld\n", other ? other() : -1L);
  return c ? 0 : 3;
}

/* NCCLSPY_BENCH_MODE_FILE: one communicator made under it (mode file
 * argv path), one ordinary.  10 all-reduces on each with the file saying
 * '0' (pass through), then 5 with '1' (records only) and 5 with 'x' (not a
 * mode: as the settings say) on the bench one; every one computed.  With
 * an empty file (path "empty:FILE") the shim must not map it: all 20
 * bench calls are recorded. */
static int worker_bench_mode(const char *path) {
  int empty = !strncmp(path, "empty:", 6), fifo = !strncmp(path, "fifo:", 5);
  if (empty) path += 6;
  if (fifo) path += 5;
  /* A FIFO: the shim must refuse it without blocking in open(); the
   * worker holds no end of it open. */
  int fd = fifo ? (unlink(path), mkfifo(path, 0600) == 0 ? open("/dev/null", O_RDWR | O_CLOEXEC) : -1)
                : open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  empty |= fifo; /* never written: calls recorded as the settings say */
  if (fd < 0 || (!empty && pwrite(fd, "0", 1, 0) != 1)) return 4;
  setenv("NCCLSPY_BENCH_MODE_FILE", path, 1);
  ncclComm_t bench = one_rank();
  unsetenv("NCCLSPY_BENCH_MODE_FILE");
  ncclComm_t rec = one_rank();
  int good = bench && rec;
  for (int i = 0; i < 20 && good; i++) {
    if (!empty && i == 10) good &= pwrite(fd, "1", 1, 0) == 1;
    if (!empty && i == 15) good &= pwrite(fd, "x", 1, 0) == 1;
    float x = (float)i, y = -1, z = -1;
    good &= ncclAllReduce(&x, &y, 1, ncclFloat32, ncclSum, bench, NULL) == ncclSuccess && y == x;
    if (i < 10) good &= ncclAllReduce(&x, &z, 1, ncclFloat32, ncclSum, rec, NULL) == ncclSuccess && z == x;
  }
  close(fd);
  return good ? 0 : 3;
}

/* Return values and errno of calls, good and bad. */
static int worker_retvals(void) {
  ncclComm_t c = one_rank();
  float x[4] = {1, 2, 3, 4}, y[4];
  int v = 0;
  struct {
    const char *what;
    ncclResult_t r;
    int err;
  } res[12];
  int n = 0;
#define TRY(label, call)                                                                            \
  do {                                                                                             \
    errno = 1234 + n;                                                                              \
    res[n].r = (call);                                                                             \
    res[n].err = errno;                                                                            \
    res[n++].what = label;                                                                         \
  } while (0)
  TRY("version", ncclGetVersion(&v));
  TRY("allreduce", ncclAllReduce(x, y, 4, ncclFloat32, ncclSum, c, NULL));
  TRY("allreduce bad dtype", ncclAllReduce(x, y, 4, (ncclDataType_t)77, ncclSum, c, NULL));
  TRY("allreduce again", ncclAllReduce(x, y, 4, ncclFloat32, ncclSum, c, NULL));
  TRY("allreduce null comm", ncclAllReduce(x, y, 4, ncclFloat32, ncclSum, NULL, NULL));
  TRY("bcast bad root", ncclBcast(x, 4, ncclFloat32, 5, c, NULL));
  TRY("send bad peer", ncclSend(x, 4, ncclFloat32, 7, c, NULL));
  TRY("group start", ncclGroupStart());
  TRY("group end", ncclGroupEnd());
  TRY("group end unmatched", ncclGroupEnd());
  TRY("init bad rank", ncclCommInitRank(NULL, 1, (ncclUniqueId){{0}}, 3));
  TRY("destroy", ncclCommDestroy(c));
#undef TRY
  for (int i = 0; i < n; i++) printf("%s: %d errno %d\n", res[i].what, (int)res[i].r, res[i].err);
  printf("version %d, y %g %g %g %g\n", v, y[0], y[1], y[2], y[3]);
  return 7;
}

static int worker(int argc, char **argv) {
  if (argc < 3) return 2;
  if (!strcmp(argv[2], "fork")) return worker_fork();
  if (!strcmp(argv[2], "exec1")) return worker_exec(1);
  if (!strcmp(argv[2], "exec2")) return worker_exec(2);
  if (!strcmp(argv[2], "threads")) return worker_threads();
  if (!strcmp(argv[2], "preload")) return worker_preload();
  if (!strcmp(argv[2], "retvals")) return worker_retvals();
  if (!strcmp(argv[2], "passthrough") && argc > 3) return worker_bench_mode(argv[3]);
  return 2;
}

/* ---- the tests ---- */

static void test_fork(void) {
  static char out[1 << 16];
  int st = run_worker(shim_so, (char *[]){(char *)"fork", NULL}, out, sizeof out, 120);
  ok(WIFEXITED(st) && WEXITSTATUS(st) == 0, "fork: the forking process finished (status 0x%x)", st);
  int children = 0, good_children = 0;
  char *save = NULL;
  for (char *line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    int pid, calls_nccl, cst;
    long calls;
    int bad;
    struct counts c;
    if (sscanf(line, "child %d %d %d", &pid, &calls_nccl, &cst) == 3) {
      children++;
      count(dir, pid, &c);
      int good = WIFEXITED(cst) && WEXITSTATUS(cst) == 0 &&
                 (calls_nccl ? c.files == 1 && c.records == 8 && c.dropped == 0 : c.files == 0);
      good_children += good;
      if (!good)
        ok(0, "fork: child %d (%s NCCL) status 0x%x, %ld trace file(s), %ld records", pid,
           calls_nccl ? "with" : "without", cst, c.files, c.records);
    } else if (sscanf(line, "parent %d %ld %d", &pid, &calls, &bad) == 3) {
      count(dir, pid, &c);
      /* Every call recorded, or (writer starved on two busy cores) counted. */
      ok(c.files == 1 && c.records <= calls && c.records + c.dropped >= calls &&
             c.records + c.dropped <= calls + 64 && c.records > 0,
         "fork: the parent's trace holds its %ld calls from 8 threads (%ld records, %ld dropped)", calls,
         c.records, c.dropped);
      ok(bad == 0, "fork: no child hung or failed (%d did)", bad);
    }
  }
  ok(children == 40 && good_children == 40,
     "fork: 40 children forked while threads were in NCCL calls; each has its own trace with "
     "exactly its calls, or none (%d of %d)", good_children, children);
}

/* Records (calls, inits, ends) per trace file, for test_exec. */
struct exec_counts {
  long files, n[2];
};

static void exec_one(const char *path, struct nsp_reader *r, void *arg) {
  (void)path;
  struct exec_counts *ec = arg;
  struct nsp_rec rec;
  long calls = 0;
  while (r && nsp_reader_next(r, &rec) == 1)
    calls += rec.kind == NSP_REC_CALL || rec.kind == NSP_REC_COMM || rec.kind == NSP_REC_COMM_END;
  if (ec->files < 2) ec->n[ec->files] = calls;
  ec->files++;
}

static void test_exec(void) {
  static char out[256];
  int st = run_worker(shim_so, (char *[]){(char *)"exec1", NULL}, out, sizeof out, 60);
  ok(WIFEXITED(st) && WEXITSTATUS(st) == 0, "exec: the exec'd program finished (status 0x%x)", st);
  /* Both images have the same pid: two files. */
  struct exec_counts ec = {0, {0, 0}};
  nsp_trace_dir_each(dir, 0, exec_one, &ec);
  long files = ec.files, *n = ec.n;
  /* Before exec: uid + init + 100 all-reduces; after: uid + init + 50 + destroy. */
  int good = files == 2 && ((n[0] == 102 && n[1] == 53) || (n[0] == 53 && n[1] == 102));
  ok(good, "exec: the image before exec has its 102 records (from its ring) and the one after its 53 "
           "(%ld files: %ld, %ld)", files, n[0], n[1]);
}

static void test_threads(void) {
  /* A ring that holds every record even if the writer never ran: this
   * test is about data races, and a loaded 2-core box can starve the
   * writer (drops are tested elsewhere). */
  setenv("NCCLSPY_RING", "131072", 1);
  int st = run_worker(shim_so, (char *[]){(char *)"threads", NULL}, NULL, 0, 120);
  unsetenv("NCCLSPY_RING");
  ok(WIFEXITED(st) && WEXITSTATUS(st) == 0, "threads: 16 threads' calls all succeeded (status 0x%x)", st);
  struct counts c;
  count(dir, 0, &c);
  ok(c.files == 1 && c.allreduce == 16 * 3000 && c.comms == 16 && c.ends == 16 && c.dropped == 0,
     "threads: every call recorded once (%ld all-reduces of 48000, %ld comms, %ld destroys, %ld dropped)",
     c.allreduce, c.comms, c.ends, c.dropped);
  ok(c.seq_gaps == 0, "threads: each communicator's sequence numbers run 1..3000 (%ld gaps)", c.seq_gaps);
}

static void test_preload(const char *other) {
  for (int order = 0; order < 2; order++) {
    char preload[8400], out[64] = "";
    if (order) snprintf(preload, sizeof preload, "%s %s", shim_so, other);
    else snprintf(preload, sizeof preload, "%s:%s", other, shim_so);
    int st = run_worker(preload, (char *[]){(char *)"preload", NULL}, out, sizeof out, 60);
    struct counts c;
    count(dir, 0, &c);
    long seen = strtol(out, NULL, 10);
    ok(WIFEXITED(st) && WEXITSTATUS(st) == 0 && c.files == 1 && c.allreduce == 10 && c.records == 13 &&
           seen == 10,
       "preload: LD_PRELOAD=\"%s first\": 10 all-reduces reach NCCL through the other library "
       "once each (%ld) and are recorded once each (%ld; %ld records of 13)",
       order ? "libncclspy.so" : "the other library", seen, c.allreduce, c.records);
    clean_dir();
  }
}

static void test_retvals(void) {
  char with[4096], without[4096];
  int st1 = run_worker(shim_so, (char *[]){(char *)"retvals", NULL}, with, sizeof with, 60);
  int st0 = run_worker(NULL, (char *[]){(char *)"retvals", NULL}, without, sizeof without, 60);
  ok(st0 == st1 && !strcmp(with, without) && strstr(with, "errno") != NULL,
     "retvals: return values, errno, results and exit status are the same with and without the shim "
     "(status 0x%x / 0x%x)", st1, st0);
  if (strcmp(with, without)) printf("# with:\n%s# without:\n%s", with, without);
  /* The all-reduce NCCL refused (bad dtype) took no seq (format 1.4): the
   * two that ran are seq 1 and 2, as NCCL counts them. */
  struct counts c;
  count(dir, 0, &c);
  ok(c.allreduce == 4 && c.seq_gaps == 0,
     "retvals: a refused all-reduce takes no seq: the successful ones are numbered without a gap "
     "(%ld all-reduces recorded of 4, two refused, %ld gaps)", c.allreduce, c.seq_gaps);
}

/* NCCLSPY_BENCH_MODE_FILE (the benchmarks' same-process modes): calls
 * on a communicator made under it follow the file's first byte, read at
 * each call; an empty file is refused, not mapped (a read past its end
 * would fault). */
static void test_passthrough(void) {
  char mode_file[128];
  snprintf(mode_file, sizeof mode_file, "%s.mode", dir);
  int st = run_worker(shim_so, (char *[]){(char *)"passthrough", mode_file, NULL}, NULL, 0, 60);
  struct counts c;
  count(dir, 0, &c);
  ok(WIFEXITED(st) && WEXITSTATUS(st) == 0 && c.comms == 2 && c.allreduce == 20,
     "passthrough: mode '0' passes the bench communicator's 10 all-reduces through unrecorded; "
     "'1' and an unknown byte record its next 10; the other's 10 recorded (status 0x%x, %ld comms, "
     "%ld all-reduces of 20)", st, c.comms, c.allreduce);
  /* Mode files the shim must refuse: nothing passed through, all 30
   * all-reduces recorded. */
  static const struct {
    const char *kind, *what;
    int timeout_s;
  } refused[] = {{"empty", "an empty mode file is not mapped (no fault)", 60},
                 {"fifo", "a FIFO as mode file is refused without blocking the communicator's creation", 20}};
  for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
    clean_dir();
    char arg[160];
    snprintf(arg, sizeof arg, "%s:%s", refused[i].kind, mode_file);
    st = run_worker(shim_so, (char *[]){(char *)"passthrough", arg, NULL}, NULL, 0, refused[i].timeout_s);
    count(dir, 0, &c);
    ok(WIFEXITED(st) && WEXITSTATUS(st) == 0 && c.comms == 2 && c.allreduce == 30,
       "passthrough: %s; all 30 all-reduces recorded (status 0x%x, %ld comms, %ld all-reduces of 30)",
       refused[i].what, st, c.comms, c.allreduce);
  }
  unlink(mode_file);
}

int main(int argc, char **argv) {
  static char self[4096], shim[4096];
  if (!realpath("/proc/self/exe", self)) return 2;
  self_exe = self;
  if (argc >= 2 && !strcmp(argv[1], "worker")) return worker(argc, argv);
  if (argc < 3) {
    fprintf(stderr, "usage: %s fork|exec|threads|preload|retvals|passthrough LIBNCCLSPY [OTHER_SO]\n", argv[0]);
    return 2;
  }
  if (!realpath(argv[2], shim)) return 2;
  shim_so = shim;
  snprintf(dir, sizeof dir, "/tmp/nsp-host-XXXXXX");
  if (!mkdtemp(dir)) return 2;
  if (!strcmp(argv[1], "fork")) test_fork();
  else if (!strcmp(argv[1], "exec")) test_exec();
  else if (!strcmp(argv[1], "threads")) test_threads();
  else if (!strcmp(argv[1], "preload") && argc > 3) test_preload(argv[3]);
  else if (!strcmp(argv[1], "retvals")) test_retvals();
  else if (!strcmp(argv[1], "passthrough")) test_passthrough();
  else return 2;
  printf("1..%d\n", tests);
  if (!getenv("NSP_KEEP")) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "# could not remove %s\n", dir);
  }
  return failures ? 1 : 0;
}
