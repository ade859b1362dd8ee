/* test_signals.c - a rank that dies of a fatal signal, under the shim.
 *
 * usage: test_signals NSP_SIGJOB LIBNCCLSPY NSP_SIGJOB_LIB
 *
 * Runs nsp_sigjob (tests/integration/nsp_sigjob.c) as 2-rank jobs on the
 * CPU stand-in, rank 1 dying at its 20th all-reduce, each job once without
 * the shim (the reference) and once with it, and checks:
 *   - the death is the same: the same signal (or exit status) for every
 *     rank, with and without the shim;
 *   - the dying rank's trace has a SIGNAL record with the signal, its
 *     code, and a stack whose first frame names the function of the job
 *     that faulted (after the analyzer leaves out the C library's frames
 *     of abort()), read back from the crash ring;
 *   - the analyzer's first finding is "signal", naming rank 1, and the
 *     other rank's error follows from it;
 *   - a SIGSEGV handler the program installed before the shim's start is
 *     still called (it exits 42; an SA_RESETHAND one returns and the
 *     default action ends the process), and the record says so;
 *   - a fault inside the handler (the stack reaches a module unloaded
 *     since the shim listed them) still ends in the original signal;
 *   - NCCLSPY_SIGNALS=0 installs nothing and writes no SIGNAL record.
 * Output is TAP.  NSP_KEEP=1 keeps the trace directories, NSP_VERBOSE=1
 * prints the reports, NSP_ONLY=segv|abort|handler|dlclose|off runs one
 * group. */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nsp_analyze.h"
#include "nsp_nccl.h"
#include "nsp_reader.h"
#include "nsp_report.h"
#include "tests/nsp_child_env.h"
#include "tests/nsp_tap.h"
#include "tests/nsp_trace_dir.h"

NSP_NCCL_DECLARE(nccl)

#define NRANKS 2

/* Built with libunwind (meson sets it): a whole stack; without, only the
 * interrupted instruction. */
#ifndef NSP_TEST_UNWIND
#define NSP_TEST_UNWIND 1
#endif

static const char *job_exe, *shim_so, *lib_so;

struct run {
  char dir[64], trace_dir[96];
  int nranks;
  pid_t pid[NRANKS];
  int status[NRANKS];
  char out[NRANKS][512]; /* each rank's stdout */
};

static void describe(char *buf, size_t len, int st) {
  if (WIFEXITED(st)) snprintf(buf, len, "exit %d", WEXITSTATUS(st));
  else if (WIFSIGNALED(st)) snprintf(buf, len, "signal %d", WTERMSIG(st));
  else snprintf(buf, len, "status 0x%x", st);
}

/* Runs `mode` on nranks ranks; env: extra "NAME=value" or NULL. */
static int run_job(struct run *run, const char *mode, int nranks, int shim, const char *extra) {
  memset(run, 0, sizeof *run);
  run->nranks = nranks;
  snprintf(run->dir, sizeof run->dir, "/tmp/nsp-sig-XXXXXX");
  if (!mkdtemp(run->dir)) return -1;
  snprintf(run->trace_dir, sizeof run->trace_dir, "%s/trace", run->dir);
  ncclUniqueId id;
  if (ncclGetUniqueId(&id) != ncclSuccess) return -1;
  char hex[2 * sizeof id.internal + 1];
  for (size_t i = 0; i < sizeof id.internal; i++) snprintf(hex + 2 * i, 3, "%02x", (unsigned char)id.internal[i]);
  for (int k = 0; k < nranks; k++) {
    /* The child's environment, built here: the child only execs. */
    struct nsp_child_env e;
    char v[256];
    nsp_child_env_init(&e);
    snprintf(v, sizeof v, "%d", k);
    nsp_child_env_set(&e, "RANK", v);
    snprintf(v, sizeof v, "%d", nranks);
    nsp_child_env_set(&e, "WORLD_SIZE", v);
    nsp_child_env_set(&e, "NSP_SIGJOB_ID", hex);
    nsp_child_env_set(&e, "NSP_SIGJOB_LIB", lib_so);
    nsp_child_env_set(&e, "NCCLSPY_DIR", run->trace_dir);
    /* The rank whose peer died gives up soon. */
    nsp_child_env_set(&e, "NSP_STANDIN_TIMEOUT_MS", "1000");
    if (shim) nsp_child_env_set(&e, "LD_PRELOAD", shim_so);
    else nsp_child_env_unset(&e, "LD_PRELOAD");
    if (extra) nsp_child_env_put(&e, extra);
    /* Under a sanitizer, fatal signals must stay fatal, as without it
     * (added to what the test setup gives). */
    static const char *const san[][2] = {
        {"ASAN_OPTIONS", "handle_segv=0:handle_sigbus=0:handle_abort=0:handle_sigfpe=0:handle_sigill=0:detect_leaks=0:"
                         "verify_asan_link_order=0"},
        {"TSAN_OPTIONS", "handle_segv=0:handle_sigbus=0:handle_abort=0:handle_sigfpe=0:handle_sigill=0"},
    };
    for (int i = 0; i < 2; i++) {
      const char *old = nsp_child_env_get(&e, san[i][0]);
      char opt[1024];
      snprintf(opt, sizeof opt, "%s%s%s", old ? old : "", old && *old ? ":" : "", san[i][1]);
      nsp_child_env_set(&e, san[i][0], opt);
    }
    char out[300];
    snprintf(out, sizeof out, "%s/rank%d.out", run->dir, k);
    char *const argv[] = {(char *)job_exe, (char *)mode, NULL};
    pid_t pid = fork();
    if (pid == 0) {
      struct rlimit no_core = {0, 0};
      setrlimit(RLIMIT_CORE, &no_core); /* fatal signals: no core files */
      int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
      if (fd >= 0) dup2(fd, 1);
      execve(job_exe, argv, e.v);
      _exit(127);
    }
    nsp_child_env_free(&e);
    run->pid[k] = pid;
  }
  for (int k = 0; k < nranks; k++) {
    waitpid(run->pid[k], &run->status[k], 0);
    char path[128];
    snprintf(path, sizeof path, "%s/rank%d.out", run->dir, k);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(run->out[k], 1, sizeof run->out[k] - 1, f) : 0;
    run->out[k][n] = 0;
    if (f) fclose(f);
  }
  return 0;
}

static void remove_run(struct run *run) {
  if (getenv("NSP_KEEP")) {
    printf("# kept %s\n", run->dir);
    return;
  }
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", run->dir);
  if (system(cmd) != 0) fprintf(stderr, "# could not remove %s\n", run->dir);
}

/* What a trace says about its SIGNAL records. */
struct sigrec {
  int found, n;   /* SIGNAL records */
  long calls;     /* CALL records */
  uint32_t tracking; /* the PROCESS record's NSP_TRACK_* */
  int signo, code, sender_pid;
  unsigned flags;
  uint64_t addr;
  uint32_t nframes;
  char mod0[256], sym0[128];
};

static const char *base_name(const char *p) {
  const char *b = strrchr(p, '/');
  return b ? b + 1 : p;
}

/* nsp_trace_dir_each callback of read_trace(). */
static void read_one(const char *path, struct nsp_reader *r, void *arg) {
  (void)path;
  struct sigrec *s = arg;
  struct nsp_rec rec;
  while (nsp_reader_next(r, &rec) == 1) {
    s->calls += rec.kind == NSP_REC_CALL;
    if (rec.kind == NSP_REC_PROCESS && rec.ext) s->tracking = rec.ext->tracking;
    if (rec.kind != NSP_REC_SIGNAL) continue;
    if (!s->found++) {
      s->signo = (int)rec.aux;
      s->code = rec.result;
      s->sender_pid = rec.peer;
      s->flags = rec.flags;
      s->addr = rec.sendbuff;
      s->nframes = rec.ext ? rec.ext->nframes : 0;
      if (s->nframes) {
        snprintf(s->mod0, sizeof s->mod0, "%s", base_name(rec.ext->frame_module[0]));
        snprintf(s->sym0, sizeof s->sym0, "%s", rec.ext->frame_symbol[0]);
      }
    }
    s->n++;
  }
}

static void read_trace(const char *dir, pid_t pid, struct sigrec *s) {
  memset(s, 0, sizeof *s);
  nsp_trace_dir_each(dir, pid, read_one, s);
}

/* The analysis: the signal finding, whether every other finding's chain
 * of causes leads to it, and whether the text report names it. */
struct analysis {
  int nfindings, first_is_signal, all_follow, text_ok;
  int odd_rank, signo;
  char sym[128], err_cause[32];
  char where[256]; /* what the message says after the signal: " in FUNCTION (FILE:LINE)" */
  int where_lines; /* the first frame of the stack has file:line (libdw) */
};

static void analyse(struct run *run, const char *want_text, struct analysis *a) {
  memset(a, 0, sizeof *a);
  a->odd_rank = a->signo = -1;
  struct nsp_job *job = nsp_job_create();
  if (!job || nsp_job_add_path(job, run->trace_dir) <= 0 || nsp_job_analyze(job) < 0) {
    nsp_job_destroy(job);
    return;
  }
  size_t n = nsp_job_nfindings(job);
  a->nfindings = (int)n;
  const struct nsp_finding *f0 = n ? nsp_job_finding(job, 0) : NULL;
  a->first_is_signal = f0 && f0->kind == NSP_FIND_SIGNAL;
  if (a->first_is_signal && f0->nodd == 1 && f0->nsides) {
    const struct nsp_proc *p = &f0->sides[0].procs[0];
    a->odd_rank = f0->odd_ranks[0];
    a->signo = p->signal ? p->signal->signo : -1;
    if (p->site && p->site->nframes) snprintf(a->sym, sizeof a->sym, "%s", p->site->frames[0].symbol);
    if (p->signal && p->signal->stack && p->signal->stack->nframes) {
      const struct nsp_frame *fr = &p->signal->stack->frames[0];
      a->where_lines = fr->function && fr->file && fr->line > 0;
      const char *in = strstr(f0->message, " in ");
      snprintf(a->where, sizeof a->where, "%.*s", in ? (int)strcspn(in, ")") + 1 : 0, in ? in : "");
    }
  }
  a->all_follow = a->first_is_signal;
  snprintf(a->err_cause, sizeof a->err_cause, "none");
  for (size_t i = 1; i < n; i++) {
    size_t c = i, steps = 0;
    while (nsp_job_finding(job, c)->cause != SIZE_MAX && steps++ < n) c = nsp_job_finding(job, c)->cause;
    if (c != 0) a->all_follow = 0;
    const struct nsp_finding *f = nsp_job_finding(job, i);
    if (f->kind == NSP_FIND_ERROR)
      snprintf(a->err_cause, sizeof a->err_cause, "%s",
               f->cause == SIZE_MAX ? "none" : nsp_finding_kind_name(nsp_job_finding(job, f->cause)->kind));
  }
  char *text = NULL;
  size_t tlen = 0;
  FILE *mf = open_memstream(&text, &tlen);
  if (mf) {
    nsp_report_text(job, mf);
    fclose(mf);
  }
  a->text_ok = text && strstr(text, want_text) != NULL;
  if (getenv("NSP_VERBOSE") && text) printf("%s", text);
  free(text);
  nsp_job_destroy(job);
}

/* One job with and without the shim: the same end for every rank. */
static int same_death(const char *mode, struct run *ref, struct run *shim, int want_sig, int want_exit) {
  if (run_job(ref, mode, NRANKS, 0, NULL) < 0 || run_job(shim, mode, NRANKS, 1, NULL) < 0) {
    ok(0, "%s: could not run %s", mode, job_exe);
    return -1;
  }
  char a[32], b[32], c[32], d[32];
  describe(a, sizeof a, ref->status[0]);
  describe(b, sizeof b, shim->status[0]);
  describe(c, sizeof c, ref->status[1]);
  describe(d, sizeof d, shim->status[1]);
  int dier_ok = want_sig ? WIFSIGNALED(shim->status[1]) && WTERMSIG(shim->status[1]) == want_sig
                         : WIFEXITED(shim->status[1]) && WEXITSTATUS(shim->status[1]) == want_exit;
  ok(ref->status[1] == shim->status[1] && dier_ok,
     "%s: rank 1 ends the same with the shim (%s) as without (%s)", mode, d, c);
  ok(ref->status[0] == shim->status[0] && WIFEXITED(shim->status[0]) && WEXITSTATUS(shim->status[0]) == 1,
     "%s: rank 0, whose peer died, ends the same with the shim (%s) as without (%s)", mode, b, a);
  return 0;
}

static void test_segv(void) {
  struct run ref, run;
  if (same_death("segv", &ref, &run, SIGSEGV, 0) < 0) return;
  struct sigrec s;
  read_trace(run.trace_dir, run.pid[1], &s);
  ok(s.found == 1 && s.signo == SIGSEGV && s.code == SEGV_MAPERR && s.addr == 0x10 && !(s.flags & NSP_SIG_CHAINED),
     "segv: rank 1's trace has one SIGNAL record: signal %d, code %d, address 0x%llx, flags 0x%x (%d records)",
     s.signo, s.code, (unsigned long long)s.addr, s.flags, s.found);
  ok(s.nframes >= (NSP_TEST_UNWIND ? 2u : 1u) && !strcmp(s.sym0, "nsp_sigjob_segv") && !strcmp(s.mod0, "nsp_sigjob") &&
         ((s.flags & NSP_SIG_NO_STACK) == 0) == NSP_TEST_UNWIND,
     "segv: its stack (%u frames) starts in the faulting function: %s in %s", s.nframes, s.sym0, s.mod0);
  ok(s.calls >= 20 && (s.tracking & NSP_TRACK_SIGNALS),
     "segv: rank 1's %ld calls are in its trace too, whose PROCESS record says signals are recorded (0x%x)", s.calls,
     s.tracking);
  struct sigrec s0;
  read_trace(run.trace_dir, run.pid[0], &s0);
  ok(s0.found == 0, "segv: rank 0 (which exited) has no SIGNAL record (%d)", s0.found);
  struct analysis a;
  analyse(&run, "died of SIGSEGV", &a);
  ok(a.first_is_signal && a.odd_rank == 1 && a.signo == SIGSEGV && !strcmp(a.sym, "nsp_sigjob_segv"),
     "segv: the analyzer's first finding is the signal: rank %d, signal %d, first frame %s", a.odd_rank, a.signo,
     a.sym);
  ok(!a.where_lines || !strncmp(a.where, " in nsp_sigjob_segv (nsp_sigjob.c:", 34),
     "segv: the message names where it died as the stack does (function and file:line with debug information):%s",
     a.where);
  ok(a.all_follow && strcmp(a.err_cause, "none") && a.text_ok,
     "segv: the %d other findings follow from it (the error's cause: %s); the text report says \"died of SIGSEGV\"",
     a.nfindings - 1, a.err_cause);
  remove_run(&ref);
  remove_run(&run);
}

static void test_abort(void) {
  struct run ref, run;
  if (same_death("abort", &ref, &run, SIGABRT, 0) < 0) return;
  struct sigrec s;
  read_trace(run.trace_dir, run.pid[1], &s);
  ok(s.found == 1 && s.signo == SIGABRT && s.code == SI_TKILL && s.sender_pid == run.pid[1],
     "abort: rank 1's SIGNAL record: signal %d, code %d, sent by pid %d (its own %d)", s.signo, s.code,
     s.sender_pid, (int)run.pid[1]);
  ok(s.nframes >= (NSP_TEST_UNWIND ? 3u : 1u) && !strncmp(s.mod0, "libc", 4),
     "abort: its raw stack (%u frames) starts in %s (%s)", s.nframes, s.mod0, s.sym0);
  struct analysis a;
  analyse(&run, "died of SIGABRT", &a);
  /* Without libunwind there is only the libc frame abort() raised it in. */
  ok(a.first_is_signal && a.odd_rank == 1 && a.signo == SIGABRT && a.text_ok &&
         (NSP_TEST_UNWIND ? !strcmp(a.sym, "nsp_sigjob_abort") : 1),
     "abort: the analyzer names rank %d, signal %d, and the caller of abort() first: %s", a.odd_rank, a.signo,
     a.sym);
  remove_run(&ref);
  remove_run(&run);
}

static void test_handler(const char *mode, int want_sig, int want_exit) {
  struct run ref, run;
  if (same_death(mode, &ref, &run, want_sig, want_exit) < 0) return;
  const char *mark = "nsp_sigjob: handler saw signal 11";
  ok(strstr(ref.out[1], mark) && strstr(run.out[1], mark),
     "%s: the program's handler, installed before the shim's, ran with and without the shim", mode);
  struct sigrec s;
  read_trace(run.trace_dir, run.pid[1], &s);
  ok(s.found == 1 && s.signo == SIGSEGV && (s.flags & NSP_SIG_CHAINED) && !strcmp(s.sym0, "nsp_sigjob_segv"),
     "%s: the SIGNAL record was written before it (signal %d, flags 0x%x: chained, first frame %s)", mode,
     s.signo, s.flags, s.sym0);
  remove_run(&ref);
  remove_run(&run);
}

static void test_dlclose(void) {
  struct run ref, run;
  if (same_death("dlclose", &ref, &run, SIGSEGV, 0) < 0) return;
  struct sigrec s;
  read_trace(run.trace_dir, run.pid[1], &s);
  ok(s.found == 1 && s.signo == SIGSEGV && s.nframes >= 1,
     "dlclose: a fault inside the handler (reading an unloaded module) still gives a SIGNAL record "
     "(flags 0x%x%s, %u frames) and the original signal",
     s.flags, s.flags & NSP_SIG_FAULTED ? ": faulted" : "", s.nframes);
  remove_run(&ref);
  remove_run(&run);
}

static int all_are(const char *out, const char *what) {
  static const char *const names[] = {"SIGSEGV", "SIGBUS", "SIGABRT", "SIGILL", "SIGFPE"};
  for (size_t i = 0; i < 5; i++) {
    char line[64];
    snprintf(line, sizeof line, "%s=%s\n", names[i], what);
    if (!strstr(out, line)) return 0;
  }
  return 1;
}

static void test_off(void) {
  struct run run;
  if (run_job(&run, "dispositions", 1, 0, NULL) == 0) {
    ok(all_are(run.out[0], "default"), "dispositions: without the shim every fatal signal has its default action");
    remove_run(&run);
  }
  if (run_job(&run, "dispositions", 1, 1, NULL) == 0) {
    ok(all_are(run.out[0], "handler") && WIFEXITED(run.status[0]) && WEXITSTATUS(run.status[0]) == 0,
       "dispositions: the shim installs its handler at the first NCCL call");
    remove_run(&run);
  }
  if (run_job(&run, "dispositions", 1, 1, "NCCLSPY_SIGNALS=0") == 0) {
    ok(all_are(run.out[0], "default") && WIFEXITED(run.status[0]) && WEXITSTATUS(run.status[0]) == 0,
       "dispositions: NCCLSPY_SIGNALS=0 installs nothing");
    remove_run(&run);
  }
  if (run_job(&run, "segv", NRANKS, 1, "NCCLSPY_SIGNALS=0") == 0) {
    struct sigrec s;
    read_trace(run.trace_dir, run.pid[1], &s);
    char st[32];
    describe(st, sizeof st, run.status[1]);
    ok(WIFSIGNALED(run.status[1]) && WTERMSIG(run.status[1]) == SIGSEGV && s.found == 0 && s.calls >= 20 &&
           !(s.tracking & NSP_TRACK_SIGNALS),
       "segv with NCCLSPY_SIGNALS=0: rank 1 (%s) has its %ld calls, no SIGNAL record (%d), no signals tracking bit "
       "(0x%x)",
       st, s.calls, s.found, s.tracking);
    remove_run(&run);
  }
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s NSP_SIGJOB LIBNCCLSPY NSP_SIGJOB_LIB\n", argv[0]);
    return 2;
  }
  job_exe = argv[1];
  shim_so = argv[2];
  lib_so = argv[3];
  const char *only = getenv("NSP_ONLY");
#define NSP_RUN(name, call) \
  if (!only || !strcmp(only, name)) call
  NSP_RUN("segv", test_segv());
  NSP_RUN("abort", test_abort());
  NSP_RUN("handler", test_handler("handler", 0, 42));
  NSP_RUN("handler", test_handler("handler-return", SIGSEGV, 0));
  NSP_RUN("dlclose", test_dlclose());
  NSP_RUN("off", test_off());
  printf("1..%d\n", tests);
  return failures ? 1 : 0;
}
