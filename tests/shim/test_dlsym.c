/* test_dlsym.c - the shim's dlsym and dlvsym (shim/nsp_dlsym.c).
 *
 * usage: test_dlsym TEST LIBNCCLSPY STANDIN_NCCL OTHER_PRELOAD DL_LOCAL VNCCL NCCLSPY
 *   handles    a program that dlopen's the stand-in RTLD_LOCAL (as ctypes
 *              and XLA do) and takes every entry point with dlsym gets the
 *              shim's own exported wrapper for each (pnccl* stays NCCL's),
 *              also from 8 threads racing on the first lookups; its calls
 *              through them are recorded.  Without the shim: NCCL's own.
 *   unchanged  other names, other libraries, dlvsym, dlerror() and errno,
 *              RTLD_DEFAULT and RTLD_NEXT from the main program and from a
 *              library loaded RTLD_LOCAL (which find its dependency, in its
 *              local scope only): the same output with and without the shim.
 *   preload    another preload that looks up with dlsym(RTLD_NEXT) and
 *              dlsym(RTLD_DEFAULT) (OTHER_PRELOAD), in both LD_PRELOAD
 *              orders: its lookups give what they give without the shim
 *              (or the shim's wrapper, where the shim comes after it), its
 *              getppid() wrapper still reaches libc, and calls through
 *              dlsym'd pointers pass through it when it comes after us.
 *   second     the program uses the stand-in in the global scope, and a
 *              copy of it (another file) through dlsym before its first
 *              NCCL call: the copy's entry points are its own, its calls
 *              are not recorded, one "ncclspy:" warning names it, and the
 *              trace has one LIBNCCL record for it (ncclspy dump).
 *   rescan     the same copy loaded after the first call and never looked
 *              up: found by the writer thread's look at loaded objects.
 *   adopt      NCCL loaded RTLD_LOCAL under a name the shim does not look
 *              for (and NCCLSPY_NCCL_LIBRARY naming nothing loaded): its
 *              entry points taken with dlsym make it the library the shim
 *              interposes; calls recorded; errno and dlerror() untouched.
 *   dlvsym     an NCCL whose entry points are versioned: dlvsym gives the
 *              wrapper, which reaches that library.
 *   cost       not a test: nanoseconds per dlsym of a name that is not
 *              NCCL's, with and without the shim.
 * The work runs in child processes; this process reads their output and
 * traces.  Output is TAP. */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nsp_names.h"
#include "nsp_nccl.h"
#include "nsp_reader.h"
#include "tests/nsp_tap.h"
#include "tests/nsp_trace_dir.h"

#define NSP_NAME_(name, kind, ret, params, args, since, op) "nccl" #name,
static const char *const api_names[] = {NSP_NCCL_APIS(NSP_NAME_)};
#undef NSP_NAME_
#define NAPI ((int)(sizeof api_names / sizeof *api_names))

/* ---- the workers (children, the shim preloaded or not) ---- */

/* The file name of the object that holds p: "NULL", or "?" when none. */
static const char *obj_name(const void *p) {
  Dl_info info;
  if (!p) return "NULL";
  if (!dladdr(p, &info) || !info.dli_fname) return "?";
  const char *b = strrchr(info.dli_fname, '/');
  return b ? b + 1 : info.dli_fname;
}

static const char *obj_path(const void *p) {
  Dl_info info;
  return p && dladdr(p, &info) && info.dli_fname ? info.dli_fname : "";
}

static void *must_open(const char *path, int flags) {
  void *h = dlopen(path, flags);
  if (!h) {
    fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
    exit(20);
  }
  return h;
}

#define FN(var, handle, name)                 \
  do {                                        \
    void *s_ = dlsym((handle), (name));       \
    memcpy(&(var), &s_, sizeof(var));         \
  } while (0)

/* Entry points of one NCCL, as a ctypes or XLA caller takes them. */
struct nccl_fns {
  ncclResult_t (*uid)(ncclUniqueId *);
  ncclResult_t (*init)(ncclComm_t *, int, ncclUniqueId, int);
  ncclResult_t (*allreduce)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t);
  ncclResult_t (*destroy)(ncclComm_t);
};

static void get_fns(void *h, struct nccl_fns *f) {
  FN(f->uid, h, "ncclGetUniqueId");
  FN(f->init, h, "ncclCommInitRank");
  FN(f->allreduce, h, "ncclAllReduce");
  FN(f->destroy, h, "ncclCommDestroy");
}

/* A communicator of one rank and n all-reduces through f: 1 when all
 * succeeded with the right values. */
static int one_rank_job(const struct nccl_fns *f, int n) {
  ncclUniqueId id;
  ncclComm_t c = NULL;
  if (!f->uid || !f->init || !f->allreduce || !f->destroy) return 0;
  if (f->uid(&id) != ncclSuccess || f->init(&c, 1, id, 0) != ncclSuccess) return 0;
  int good = 1;
  for (int i = 0; i < n; i++) {
    float x = (float)i, y = -1;
    good &= f->allreduce(&x, &y, 1, ncclFloat32, ncclSum, c, NULL) == ncclSuccess && y == x;
  }
  return f->destroy(c) == ncclSuccess && good;
}

struct race {
  pthread_t t;
  void *h;
  void *const *want;
  long bad;
};

static void *race_main(void *arg) {
  struct race *r = arg;
  for (int k = 0; k < 200; k++)
    for (int i = 0; i < NAPI; i++) {
      r->bad += dlsym(r->h, api_names[i]) != r->want[i];
      r->bad += dlsym(RTLD_NEXT, "malloc") != r->want[NAPI];
    }
  return NULL;
}

static int worker_handles(const char *standin, const char *shim) {
  void *h = must_open(standin, RTLD_NOW | RTLD_LOCAL);
  void *s = dlopen(shim, RTLD_NOW | RTLD_NOLOAD); /* NULL when not preloaded */
  /* What each lookup must give: the shim's definition when it is
   * preloaded, else NCCL's own (taken from the library's symbol table by
   * another route: dlvsym does not apply to unversioned names, so with
   * dladdr below).  8 threads make the process's first NCCL lookups at
   * once. */
  void *want[NAPI + 1];
  for (int i = 0; i < NAPI; i++) want[i] = s ? dlsym(s, api_names[i]) : NULL;
  want[NAPI] = dlsym(RTLD_NEXT, "malloc");
  struct race r[8];
  long bad = 0;
  if (s) {
    for (int t = 0; t < 8; t++) {
      r[t] = (struct race){.h = h, .want = want, .bad = 0};
      pthread_create(&r[t].t, NULL, race_main, &r[t]);
    }
    for (int t = 0; t < 8; t++) {
      pthread_join(r[t].t, NULL);
      bad += r[t].bad;
    }
  }
  int same = 0, in_nccl = 0;
  for (int i = 0; i < NAPI; i++) {
    void *a = dlsym(h, api_names[i]);
    same += s && a == want[i];
    in_nccl += !strcmp(obj_path(a), standin);
  }
  printf("entries: %d the shim's, %d NCCL's, of %d\n", same, in_nccl, NAPI);
  printf("threads: %ld wrong\n", bad);
  printf("pncclAllReduce: %s\n", obj_name(dlsym(h, "pncclAllReduce")));
  struct nccl_fns f;
  get_fns(h, &f);
  printf("calls: %d\n", one_rank_job(&f, 5));
  return 0;
}

static int worker_unchanged(const char *dl_local, const char *standin) {
  void *libm = must_open("libm.so.6", RTLD_NOW | RTLD_LOCAL);
  void *libc = must_open("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  void *cos_ = dlsym(libm, "cos");
  printf("libm cos: %s\n", obj_name(cos_));
  int (*pf)(const char *, ...);
  FN(pf, RTLD_DEFAULT, "printf");
  printf("default printf is printf: %d\n", pf == printf);
  printf("next getpid: %s\n", obj_name(dlsym(RTLD_NEXT, "getpid")));
  printf("default nsp_dl_dep_value: %s\n", obj_name(dlsym(RTLD_DEFAULT, "nsp_dl_dep_value")));
  void *self = must_open(NULL, RTLD_NOW);
  printf("program handle printf: %s\n", obj_name(dlsym(self, "printf")));
  /* A failed lookup: NULL, its message once, then no error. */
  dlerror();
  void *none = dlsym(libm, "nsp_no_such_name");
  const char *e = dlerror();
  int mentions = e && strstr(e, "nsp_no_such_name");
  printf("missing: %s, dlerror mentions it: %d, then %s\n", obj_name(none), mentions, dlerror() ? "an error" : "none");
  /* A success after a failure leaves no error. */
  dlsym(libm, "nsp_no_such_name");
  dlsym(libm, "sin");
  printf("success after failure: dlerror %s\n", dlerror() ? "set" : "none");
  errno = 77;
  dlsym(libm, "tan");
  int e1 = errno;
  errno = 77;
  dlsym(libm, "nsp_no_such_name");
  printf("errno after a hit %d, after a miss %d\n", e1, errno);
  dlerror();
  /* dlvsym: two versions of memcpy, from libc's handle and from the
   * global scope; RTLD_NEXT from the program. */
  void *m_old = dlvsym(libc, "memcpy", "GLIBC_2.2.5"), *m_new = dlvsym(libc, "memcpy", "GLIBC_2.14");
  printf("dlvsym memcpy: %s %s, differ %d, default 2.14 same %d, next 2.14 same %d\n", obj_name(m_old),
         obj_name(m_new), m_old != m_new, dlvsym(RTLD_DEFAULT, "memcpy", "GLIBC_2.14") == m_new,
         dlvsym(RTLD_NEXT, "memcpy", "GLIBC_2.14") == m_new);
  printf("dlvsym missing version: %s\n", obj_name(dlvsym(libc, "memcpy", "GLIBC_9.9")));
  dlerror();
  /* From a library loaded RTLD_LOCAL: its dependency is in its scope. */
  void *local = must_open(dl_local, RTLD_NOW | RTLD_LOCAL);
  void *(*lookup)(int, const char *);
  void *(*vlookup)(int, const char *, const char *);
  FN(lookup, local, "nsp_dl_local_lookup");
  FN(vlookup, local, "nsp_dl_local_vlookup");
  if (!lookup || !vlookup) return 21;
  printf("local default nsp_dl_dep_value: %s\n", obj_name(lookup(0, "nsp_dl_dep_value")));
  printf("local next nsp_dl_dep_value: %s\n", obj_name(lookup(1, "nsp_dl_dep_value")));
  printf("local default nsp_dl_local_lookup: %s\n", obj_name(lookup(0, "nsp_dl_local_lookup")));
  printf("local next nsp_dl_local_lookup: %s\n", obj_name(lookup(1, "nsp_dl_local_lookup")));
  printf("local next sched_yield: %s\n", obj_name(lookup(1, "sched_yield")));
  printf("local vdefault memcpy 2.14 same: %d\n", vlookup(0, "memcpy", "GLIBC_2.14") == m_new);
  /* NCCL's names are not versioned: dlvsym finds none. */
  void *nccl = must_open(standin, RTLD_NOW | RTLD_LOCAL);
  printf("dlvsym ncclAllReduce: %s\n", obj_name(dlvsym(nccl, "ncclAllReduce", "NCCL_2.28")));
  dlerror();
  return 0;
}

static int worker_preload(const char *standin) {
  void *h = must_open(standin, RTLD_NOW | RTLD_GLOBAL);
  void *(*lookup)(int, const char *);
  long (*getppid_count)(void), (*ar_count)(void);
  FN(lookup, RTLD_DEFAULT, "nsp_other_lookup");
  FN(getppid_count, RTLD_DEFAULT, "nsp_other_getppid_count");
  FN(ar_count, RTLD_DEFAULT, "nsp_other_allreduce_count");
  if (!lookup || !getppid_count || !ar_count) return 21;
  printf("other next ncclAllReduce: %s\n", obj_name(lookup(1, "ncclAllReduce")));
  printf("other default ncclAllReduce: %s\n", obj_name(lookup(0, "ncclAllReduce")));
  printf("other next getppid: %s\n", obj_name(lookup(1, "getppid")));
  printf("other default nsp_other_lookup: %s\n", obj_name(lookup(0, "nsp_other_lookup")));
  int same_parent = getppid() == (pid_t)syscall(SYS_getppid);
  printf("getppid: right %d, through the other library %ld time\n", same_parent, getppid_count());
  struct nccl_fns f;
  get_fns(h, &f);
  printf("dlsym ncclAllReduce: %s\n", obj_name(dlsym(h, "ncclAllReduce")));
  int good = one_rank_job(&f, 10);
  printf("calls: %d, through the other library %ld\n", good, ar_count());
  return 0;
}

static int worker_second(const char *standin, const char *copy, int rescan) {
  must_open(standin, RTLD_NOW | RTLD_GLOBAL);
  void *b = NULL;
  if (!rescan) {
    /* Before the first NCCL call: the record waits for the writer. */
    b = must_open(copy, RTLD_NOW | RTLD_LOCAL);
    int in_b = 1;
    errno = 77;
    dlerror();
    for (int k = 0; k < 3; k++)
      for (int i = 0; i < NAPI; i++) in_b &= !strcmp(obj_path(dlsym(b, api_names[i])), copy);
    printf("copy's entries are its own: %d; errno %d, dlerror %s\n", in_b, errno, dlerror() ? "set" : "none");
  }
  struct nccl_fns f;
  get_fns(RTLD_DEFAULT, &f); /* the shim's: the program's direct calls */
  printf("calls: %d\n", one_rank_job(&f, 3));
  if (!rescan) {
    get_fns(b, &f);
    printf("copy's calls: %d\n", one_rank_job(&f, 2));
  } else {
    must_open(copy, RTLD_NOW | RTLD_LOCAL);
    struct timespec ts = {1, 600000000}; /* the writer looks every second */
    nanosleep(&ts, NULL);
  }
  return 0;
}

static int worker_adopt(const char *copy) {
  void *h = must_open(copy, RTLD_NOW | RTLD_LOCAL);
  errno = 77;
  dlerror();
  void *p = dlsym(h, "ncclAllReduce");
  printf("ncclAllReduce: %s; errno %d, dlerror %s\n", obj_name(p), errno, dlerror() ? "set" : "none");
  struct nccl_fns f;
  get_fns(h, &f);
  printf("calls: %d\n", one_rank_job(&f, 5));
  return 0;
}

static int worker_dlvsym(const char *vnccl) {
  void *h = must_open(vnccl, RTLD_NOW | RTLD_LOCAL);
  void *p = dlvsym(h, "ncclAllReduce", "NSP_VNCCL_1"), *q = dlvsym(h, "ncclAllReduce", "NSP_VNCCL_9");
  long (*calls)(void);
  FN(calls, h, "nsp_vnccl_calls");
  ncclResult_t (*ar)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t);
  memcpy(&ar, &p, sizeof ar);
  float x = 1, y = 0;
  int r = ar ? (int)ar(&x, &y, 1, ncclFloat32, ncclSum, NULL, NULL) : -1;
  long n = calls ? calls() : -1L;
  printf("dlvsym ncclAllReduce: %s; another version: %s; result %d, reached the library %ld time\n", obj_name(p),
         obj_name(q), r, n);
  return 0;
}

static double ns_per(void *h, const char *name, long n) {
  struct timespec a, b;
  void *volatile sink;
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (long i = 0; i < n; i++) sink = dlsym(h, name);
  clock_gettime(CLOCK_MONOTONIC, &b);
  (void)sink;
  return ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / (double)n;
}

static int worker_cost(void) {
  void *libm = must_open("libm.so.6", RTLD_NOW | RTLD_LOCAL);
  long n = 2000000;
  for (int round = 0; round < 3; round++)
    printf("ns per dlsym: handle %.1f, RTLD_DEFAULT %.1f, RTLD_NEXT %.1f\n", ns_per(libm, "cos", n),
           ns_per(RTLD_DEFAULT, "cos", n), ns_per(RTLD_NEXT, "cos", n));
  return 0;
}

static int worker(int argc, char **argv) {
  const char *w = argv[2];
  if (!strcmp(w, "handles") && argc == 5) return worker_handles(argv[3], argv[4]);
  if (!strcmp(w, "unchanged") && argc == 5) return worker_unchanged(argv[3], argv[4]);
  if (!strcmp(w, "preload") && argc == 4) return worker_preload(argv[3]);
  if (!strcmp(w, "second") && argc == 5) return worker_second(argv[3], argv[4], 0);
  if (!strcmp(w, "rescan") && argc == 5) return worker_second(argv[3], argv[4], 1);
  if (!strcmp(w, "adopt") && argc == 4) return worker_adopt(argv[3]);
  if (!strcmp(w, "dlvsym") && argc == 4) return worker_dlvsym(argv[3]);
  if (!strcmp(w, "cost")) return worker_cost();
  return 2;
}

/* ---- the test ---- */

static const char *self_exe, *shim_so, *standin_so, *other_so, *dl_local_so, *vnccl_so, *ncclspy;
static char dir[64];

struct out {
  int status;
  char out[8192], err[8192];
};

/* Runs `worker ARGS` with LD_PRELOAD=preload (NULL: none) and the extra
 * environment (NAME=VALUE, NULL-terminated); its stdout and stderr into o. */
static void run_worker(const char *preload, const char *const *env, const char *const *args, struct out *o) {
  char errf[128];
  snprintf(errf, sizeof errf, "%s.stderr", dir);
  int fds[2];
  if (pipe(fds) < 0) exit(2);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    if (!freopen(errf, "w", stderr)) _exit(126);
    if (preload) setenv("LD_PRELOAD", preload, 1);
    else unsetenv("LD_PRELOAD");
    setenv("NCCLSPY_DIR", dir, 1);
    for (; env && *env; env++) putenv((char *)*env);
    char *argv[16] = {(char *)self_exe, (char *)"worker"};
    int i = 2;
    for (; args[i - 2] && i < 15; i++) argv[i] = (char *)args[i - 2];
    argv[i] = NULL;
    alarm(60);
    execv(self_exe, argv);
    _exit(127);
  }
  close(fds[1]);
  size_t got = 0;
  ssize_t n;
  while ((n = read(fds[0], o->out + got, sizeof o->out - 1 - got)) > 0) got += (size_t)n;
  o->out[got] = 0;
  close(fds[0]);
  waitpid(pid, &o->status, 0);
  FILE *f = fopen(errf, "r");
  size_t m = f ? fread(o->err, 1, sizeof o->err - 1, f) : 0;
  o->err[m] = 0;
  if (f) fclose(f);
  unlink(errf);
  if (!WIFEXITED(o->status) || WEXITSTATUS(o->status) != 0)
    printf("# worker %s: status 0x%x\n# stdout:\n%s# stderr:\n%s", args[0], o->status, o->out, o->err);
}

static int has_line(const char *text, const char *line) {
  size_t n = strlen(line);
  for (const char *p = text; (p = strstr(p, line)); p += n)
    if ((p == text || p[-1] == '\n') && (p[n] == '\n' || !p[n])) return 1;
  return 0;
}

static int exited_0(const struct out *o) { return WIFEXITED(o->status) && WEXITSTATUS(o->status) == 0; }

/* "ncclspy:" lines of a worker's stderr. */
static int warnings(const struct out *o) {
  int n = 0;
  for (const char *p = o->err; (p = strstr(p, "ncclspy:")); p += 8) n += p == o->err || p[-1] == '\n';
  return n;
}

struct counts {
  long files, allreduce, comms, libnccl;
  char nccl_path[PATH_MAX];
};

static void count_one(const char *path, struct nsp_reader *r, void *arg) {
  (void)path;
  struct counts *c = arg;
  if (!r) return;
  c->files++;
  struct nsp_rec rec;
  while (nsp_reader_next(r, &rec) == 1) {
    c->allreduce += rec.kind == NSP_REC_CALL && rec.api == NSP_API_AllReduce;
    c->comms += rec.kind == NSP_REC_COMM;
    c->libnccl += rec.kind == NSP_REC_LIBNCCL;
    if (rec.kind == NSP_REC_PROCESS && rec.ext && rec.ext->nccl_path)
      snprintf(c->nccl_path, sizeof c->nccl_path, "%s", rec.ext->nccl_path);
  }
}

static void count(struct counts *c) {
  memset(c, 0, sizeof *c);
  nsp_trace_dir_each(dir, 0, count_one, c);
}

static void clean_dir(void) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'/*", dir);
  if (system(cmd) != 0) printf("# could not clean %s\n", dir);
}

/* A copy of the stand-in under `name` in dir/lib; its path into out. */
static void copy_standin(const char *name, char *out, size_t len) {
  char cmd[8400];
  snprintf(out, len, "%s.lib/%s", dir, name);
  snprintf(cmd, sizeof cmd, "mkdir -p '%s.lib' && cp '%s' '%s'", dir, standin_so, out);
  if (system(cmd) != 0) printf("# could not copy the stand-in to %s\n", out);
}

static void test_handles(void) {
  struct out o;
  run_worker(shim_so, NULL, (const char *[]){"handles", standin_so, shim_so, NULL}, &o);
  char want[128];
  snprintf(want, sizeof want, "entries: %d the shim's, 0 NCCL's, of %d", NAPI, NAPI);
  ok(exited_0(&o) && has_line(o.out, want),
     "handles: each of the %d entry points taken with dlsym on an RTLD_LOCAL libnccl's handle is the shim's "
     "exported wrapper", NAPI);
  ok(has_line(o.out, "threads: 0 wrong"), "handles: 8 threads racing on the first lookups all get the wrappers, "
     "and RTLD_NEXT's answer, every time");
  ok(has_line(o.out, "pncclAllReduce: libnccl.so.2"), "handles: pncclAllReduce stays NCCL's (an opt-out)");
  struct counts c;
  count(&c);
  ok(has_line(o.out, "calls: 1") && c.files == 1 && c.allreduce == 5 && c.comms == 1,
     "handles: calls through the pointers are recorded (%ld file, %ld all-reduces of 5, %ld comm)", c.files,
     c.allreduce, c.comms);
  clean_dir();
  run_worker(NULL, NULL, (const char *[]){"handles", standin_so, shim_so, NULL}, &o);
  snprintf(want, sizeof want, "entries: 0 the shim's, %d NCCL's, of %d", NAPI, NAPI);
  ok(exited_0(&o) && has_line(o.out, want) && has_line(o.out, "calls: 1"),
     "handles: without the shim, the same program gets NCCL's own entry points");
  if (!exited_0(&o)) printf("# %s", o.out);
  clean_dir();
}

static void test_unchanged(void) {
  struct out with, without;
  run_worker(shim_so, NULL, (const char *[]){"unchanged", dl_local_so, standin_so, NULL}, &with);
  run_worker(NULL, NULL, (const char *[]){"unchanged", dl_local_so, standin_so, NULL}, &without);
  ok(exited_0(&with) && exited_0(&without) && !strcmp(with.out, without.out),
     "unchanged: every lookup of another name or library (dlsym, dlvsym, RTLD_DEFAULT, RTLD_NEXT, dlerror, "
     "errno) gives the same with and without the shim");
  if (strcmp(with.out, without.out)) printf("# with:\n%s# without:\n%s", with.out, without.out);
  static const char *const expect[] = {
      "libm cos: libm.so.6",
      "default printf is printf: 1",
      "next getpid: libc.so.6",
      "default nsp_dl_dep_value: NULL",
      "missing: NULL, dlerror mentions it: 1, then none",
      "success after failure: dlerror none",
      "errno after a hit 77, after a miss 77",
      "dlvsym memcpy: libc.so.6 libc.so.6, differ 1, default 2.14 same 1, next 2.14 same 1",
      "dlvsym missing version: NULL",
      "local default nsp_dl_dep_value: libnsp_dl_dep.so",
      "local next nsp_dl_dep_value: libnsp_dl_dep.so",
      "local default nsp_dl_local_lookup: libnsp_dl_local.so",
      "local next nsp_dl_local_lookup: NULL",
      "local next sched_yield: libc.so.6",
      "local vdefault memcpy 2.14 same: 1",
      "dlvsym ncclAllReduce: NULL",
  };
  int all = 1;
  for (size_t i = 0; i < sizeof expect / sizeof *expect; i++)
    if (!has_line(with.out, expect[i])) {
      printf("# missing with the shim: %s\n", expect[i]);
      all = 0;
    }
  ok(all, "unchanged: with the shim, RTLD_DEFAULT and RTLD_NEXT from a library loaded RTLD_LOCAL find its "
     "dependency (its own scope), and the other answers are the expected ones");
  ok(warnings(&with) == 0, "unchanged: the shim says nothing (%d ncclspy: lines)", warnings(&with));
  clean_dir();
}

static void test_preload(void) {
  static const struct {
    const char *order, *next_ar, *default_ar, *dlsym_ar;
    long through_other;
  } runs[] = {
      /* Without the shim: what the other library's lookups gave before. */
      {"none", "libnccl.so.2", "libnsp_other_preload.so", "libnccl.so.2", 0},
      /* The shim after it: the shim is next. */
      {"other first", "libncclspy.so", "libnsp_other_preload.so", "libncclspy.so", 0},
      /* The shim first: as without the shim; the wrappers call on through it. */
      {"shim first", "libnccl.so.2", "libncclspy.so", "libncclspy.so", 10},
  };
  for (size_t i = 0; i < 3; i++) {
    char preload[8400], want[4][256];
    if (i == 0) snprintf(preload, sizeof preload, "%s", other_so);
    else if (i == 1) snprintf(preload, sizeof preload, "%s:%s", other_so, shim_so);
    else snprintf(preload, sizeof preload, "%s %s", shim_so, other_so);
    struct out o;
    run_worker(preload, NULL, (const char *[]){"preload", standin_so, NULL}, &o);
    snprintf(want[0], sizeof want[0], "other next ncclAllReduce: %s", runs[i].next_ar);
    snprintf(want[1], sizeof want[1], "other default ncclAllReduce: %s", runs[i].default_ar);
    snprintf(want[2], sizeof want[2], "dlsym ncclAllReduce: %s", runs[i].dlsym_ar);
    snprintf(want[3], sizeof want[3], "calls: 1, through the other library %ld", runs[i].through_other);
    ok(exited_0(&o) && has_line(o.out, want[0]) && has_line(o.out, want[1]) &&
           has_line(o.out, "other default nsp_other_lookup: libnsp_other_preload.so"),
       "preload (%s): the other library's dlsym(RTLD_NEXT, \"ncclAllReduce\") gives %s, its "
       "dlsym(RTLD_DEFAULT) the first definition, %s", runs[i].order, runs[i].next_ar, runs[i].default_ar);
    ok(has_line(o.out, "other next getppid: libc.so.6") &&
           has_line(o.out, "getppid: right 1, through the other library 1 time"),
       "preload (%s): its getppid() wrapper finds libc's with dlsym(RTLD_NEXT) and forwards", runs[i].order);
    struct counts c;
    count(&c);
    ok(has_line(o.out, want[2]) && has_line(o.out, want[3]) && c.allreduce == (i ? 10 : 0),
       "preload (%s): ncclAllReduce taken with dlsym is %s; 10 calls through it reach NCCL, %ld through the "
       "other library, %ld recorded", runs[i].order, runs[i].dlsym_ar, runs[i].through_other, c.allreduce);
    if (!exited_0(&o) || !has_line(o.out, want[0])) printf("# %s", o.out);
    clean_dir();
  }
}

/* The LIBNCCL records `ncclspy dump` shows in dir's trace: how many, and
 * how many name `path` and NCCL 2.28.9. */
static void dumped(const char *path, int *n, int *named) {
  *n = *named = 0;
  char cmd[8400], line[8192];
  snprintf(cmd, sizeof cmd, "for f in '%s'/*.ncclspy; do '%s' dump \"$f\"; done", dir, ncclspy);
  FILE *p = popen(cmd, "r");
  while (p && fgets(line, sizeof line, p)) {
    if (!strstr(line, " LIBNCCL ")) continue;
    (*n)++;
    char want[4300];
    snprintf(want, sizeof want, " path=\"%s\" ", path);
    *named += strstr(line, want) && strstr(line, "version=2.28.9");
    printf("# %s", line);
  }
  if (p) pclose(p);
}

static void test_second(int rescan) {
  const char *what = rescan ? "rescan" : "second";
  char copy[4200];
  copy_standin("libnccl.so.2", copy, sizeof copy);
  struct out o;
  run_worker(shim_so, NULL, (const char *[]){what, standin_so, copy, NULL}, &o);
  if (!rescan)
    ok(exited_0(&o) && has_line(o.out, "copy's entries are its own: 1; errno 77, dlerror none") &&
           has_line(o.out, "copy's calls: 1"),
       "second: every entry point dlsym takes from a second libnccl is its own (not interposed) and works; "
       "errno and dlerror() untouched");
  struct counts c;
  count(&c);
  ok(exited_0(&o) && has_line(o.out, "calls: 1") && c.files == 1 && c.allreduce == 3 && c.comms == 1,
     "%s: only the calls to the interposed libnccl are recorded (%ld all-reduces of 3, %ld comm)", what,
     c.allreduce, c.comms);
  char want[4400];
  snprintf(want, sizeof want, "ncclspy: a second libnccl is loaded: %s (NCCL 2.28.9)", copy);
  ok(warnings(&o) == 1 && strstr(o.err, want) != NULL,
     "%s: one warning names the second libnccl (%d ncclspy: lines)", what, warnings(&o));
  if (warnings(&o) != 1 || !strstr(o.err, want)) printf("# stderr:\n%s", o.err);
  int n, named;
  dumped(copy, &n, &named);
  ok(c.libnccl == 1 && n == 1 && named == 1,
     "%s: the trace has one LIBNCCL record, with its path and version (ncclspy dump: %d, %d naming it)", what, n,
     named);
  clean_dir();
}

static void test_adopt(void) {
  char copy[4200], canon[PATH_MAX];
  copy_standin("libcollectives-x.so", copy, sizeof copy);
  struct out o;
  run_worker(shim_so, (const char *[]){"NCCLSPY_NCCL_LIBRARY=libnsp-nothing.so.1", NULL},
             (const char *[]){"adopt", copy, NULL}, &o);
  struct counts c;
  count(&c);
  ok(exited_0(&o) && has_line(o.out, "ncclAllReduce: libncclspy.so; errno 77, dlerror none") &&
         has_line(o.out, "calls: 1"),
     "adopt: an NCCL the shim does not find by name becomes the interposed one at the first dlsym of an "
     "entry point; errno and dlerror() untouched");
  ok(c.files == 1 && c.allreduce == 5 && c.comms == 1 && realpath(copy, canon) && !strcmp(c.nccl_path, canon),
     "adopt: its calls are recorded (%ld all-reduces of 5) and the PROCESS record names it (%s)", c.allreduce,
     c.nccl_path);
  ok(warnings(&o) == 0, "adopt: no warning (%d ncclspy: lines)", warnings(&o));
  if (warnings(&o)) printf("# stderr:\n%s", o.err);
  clean_dir();
}

static void test_dlvsym(void) {
  struct out o;
  run_worker(shim_so, NULL, (const char *[]){"dlvsym", vnccl_so, NULL}, &o);
  struct counts c;
  count(&c);
  ok(exited_0(&o) &&
         has_line(o.out, "dlvsym ncclAllReduce: libncclspy.so; another version: NULL; result 0, reached the "
                         "library 1 time") &&
         c.allreduce == 1,
     "dlvsym: a versioned NCCL entry point taken with dlvsym is the wrapper, which reaches that library "
     "(%ld all-reduce recorded)", c.allreduce);
  if (!exited_0(&o)) printf("# %s", o.out);
  clean_dir();
}

static void test_cost(void) {
  struct out o;
  run_worker(NULL, NULL, (const char *[]){"cost", NULL}, &o);
  printf("# without the shim:\n%s", o.out);
  run_worker(shim_so, NULL, (const char *[]){"cost", NULL}, &o);
  printf("# with the shim:\n%s", o.out);
}

int main(int argc, char **argv) {
  static char self[PATH_MAX], paths[6][PATH_MAX];
  if (!realpath("/proc/self/exe", self)) return 2;
  self_exe = self;
  if (argc >= 3 && !strcmp(argv[1], "worker")) return worker(argc, argv);
  if (argc != 8) {
    fprintf(stderr, "usage: %s TEST LIBNCCLSPY STANDIN_NCCL OTHER_PRELOAD DL_LOCAL VNCCL NCCLSPY\n", argv[0]);
    return 2;
  }
  for (int i = 0; i < 6; i++)
    if (!realpath(argv[2 + i], paths[i])) return 2;
  shim_so = paths[0];
  standin_so = paths[1];
  other_so = paths[2];
  dl_local_so = paths[3];
  vnccl_so = paths[4];
  ncclspy = paths[5];
  snprintf(dir, sizeof dir, "/tmp/nsp-dlsym-XXXXXX");
  if (!mkdtemp(dir)) return 2;
  const char *t = argv[1];
  if (!strcmp(t, "handles")) test_handles();
  else if (!strcmp(t, "unchanged")) test_unchanged();
  else if (!strcmp(t, "preload")) test_preload();
  else if (!strcmp(t, "second")) test_second(0);
  else if (!strcmp(t, "rescan")) test_second(1);
  else if (!strcmp(t, "adopt")) test_adopt();
  else if (!strcmp(t, "dlvsym")) test_dlvsym();
  else if (!strcmp(t, "cost")) test_cost();
  else return 2;
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s.lib'", dir, dir);
  if (!getenv("NSP_KEEP") && system(cmd) != 0) printf("# could not remove %s\n", dir);
  printf("1..%d\n", tests);
  return failures ? 1 : 0;
}
