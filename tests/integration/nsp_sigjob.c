/* nsp_sigjob.c - a rank that dies of a fatal signal in the middle of its
 * NCCL calls, for tests/integration/test_signals.c.
 *
 *   nsp_sigjob MODE      (env RANK, WORLD_SIZE, NSP_SIGJOB_ID: the
 *                         ncclUniqueId as 256 hex digits)
 *
 * Every rank makes NSP_SIGJOB_CALLS (default 40) all-reduces of 1024
 * float32 on the CPU stand-in.  Rank NSP_SIGJOB_RANK (default 1), once its
 * NSP_SIGJOB_AT-th (default 20) all-reduce has returned, does what MODE
 * says; the others go on and fail when their peer is gone (the stand-in
 * times out: NSP_STANDIN_TIMEOUT_MS), then abort their communicator and
 * exit 1.
 *
 * MODE
 *   segv            a store to address 0x10 (a field of a NULL struct
 *                   pointer, out of UBSan's sight), in nsp_sigjob_segv()
 *   abort           abort(), called from nsp_sigjob_abort()
 *   handler         like segv, with a SIGSEGV handler installed before the
 *                   first NCCL call: it prints "nsp_sigjob: handler saw
 *                   signal 11" and calls _exit(42)
 *   handler-return  like segv, with a SA_RESETHAND handler that prints the
 *                   same line and returns (the store faults again, and the
 *                   default action ends the process)
 *   dlclose         dlopen NSP_SIGJOB_LIB before the first NCCL call, then
 *                   dlclose it and call its function: a SIGSEGV at an
 *                   address that was a module's when the shim listed them
 *   dispositions    (one rank is enough) after the first all-reduce, prints
 *                   "SIGSEGV=handler" or "SIGSEGV=default" for SIGSEGV,
 *                   SIGBUS, SIGABRT, SIGILL and SIGFPE, and exits 0
 *
 * Linked with -rdynamic, so that the shim (which names frames from each
 * module's dynamic symbols, as dladdr does) can name nsp_sigjob_segv. */
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nsp_nccl.h"

NSP_NCCL_DECLARE(nccl)

volatile uintptr_t nsp_sigjob_bad = 0x10; /* where nsp_sigjob_segv stores */

__attribute__((noinline)) void nsp_sigjob_segv(void);
__attribute__((noinline)) void nsp_sigjob_segv(void) {
  *(volatile int *)nsp_sigjob_bad = 1;
  __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void nsp_sigjob_abort(void);
__attribute__((noinline)) void nsp_sigjob_abort(void) {
  abort();
}

static void say(const char *s) {
  ssize_t w = write(STDOUT_FILENO, s, strlen(s));
  (void)w;
}

static void on_segv_exit(int sig, siginfo_t *si, void *uc) {
  (void)si;
  (void)uc;
  say(sig == SIGSEGV ? "nsp_sigjob: handler saw signal 11\n" : "nsp_sigjob: handler saw another signal\n");
  _exit(42);
}

static void on_segv_return(int sig) {
  say(sig == SIGSEGV ? "nsp_sigjob: handler saw signal 11\n" : "nsp_sigjob: handler saw another signal\n");
}

static int env_int(const char *name, int dflt) {
  const char *v = getenv(name);
  return v && *v ? atoi(v) : dflt;
}

static int parse_id(ncclUniqueId *id) {
  const char *h = getenv("NSP_SIGJOB_ID");
  if (!h || strlen(h) != 2 * sizeof id->internal) return -1;
  for (size_t i = 0; i < sizeof id->internal; i++) {
    unsigned v;
    if (sscanf(h + 2 * i, "%2x", &v) != 1) return -1;
    id->internal[i] = (char)v;
  }
  return 0;
}

static void dispositions(void) {
  static const struct {
    int sig;
    const char *name;
  } s[] = {{SIGSEGV, "SIGSEGV"}, {SIGBUS, "SIGBUS"}, {SIGABRT, "SIGABRT"}, {SIGILL, "SIGILL"}, {SIGFPE, "SIGFPE"}};
  for (size_t i = 0; i < sizeof s / sizeof *s; i++) {
    struct sigaction sa;
    sigaction(s[i].sig, NULL, &sa);
    printf("%s=%s\n", s[i].name, sa.sa_handler == SIG_DFL ? "default" : "handler");
  }
  fflush(stdout);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: nsp_sigjob segv|abort|handler|handler-return|dlclose|dispositions\n");
    return 2;
  }
  const char *mode = argv[1];
  int rank = env_int("RANK", -1), nranks = env_int("WORLD_SIZE", -1);
  int calls = env_int("NSP_SIGJOB_CALLS", 40), at = env_int("NSP_SIGJOB_AT", 20);
  int dier = env_int("NSP_SIGJOB_RANK", 1);
  ncclUniqueId id;
  if (rank < 0 || nranks < 1 || rank >= nranks || parse_id(&id) < 0) {
    fprintf(stderr, "nsp_sigjob: set RANK, WORLD_SIZE and NSP_SIGJOB_ID\n");
    return 2;
  }
  void (*lib_fn)(void) = NULL;
  void *lib = NULL;
  if (!strcmp(mode, "handler")) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv_exit;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &sa, NULL);
  } else if (!strcmp(mode, "handler-return")) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_segv_return;
    sa.sa_flags = SA_RESETHAND;
    sigaction(SIGSEGV, &sa, NULL);
  } else if (!strcmp(mode, "dlclose") && rank == dier) {
    const char *path = getenv("NSP_SIGJOB_LIB");
    lib = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
    void *sym = lib ? dlsym(lib, "nsp_sigjob_lib_fn") : NULL;
    if (sym) memcpy(&lib_fn, &sym, sizeof lib_fn); /* ISO C has no object-to-function cast */
    if (!lib_fn) {
      fprintf(stderr, "nsp_sigjob: cannot load NSP_SIGJOB_LIB: %s\n", dlerror());
      return 2;
    }
  }
  ncclComm_t comm;
  ncclResult_t r = ncclCommInitRank(&comm, nranks, id, rank);
  if (r != ncclSuccess) {
    fprintf(stderr, "nsp_sigjob: rank %d: ncclCommInitRank returned %d\n", rank, (int)r);
    return 1;
  }
  static float buf[1024];
  for (int i = 1; i <= calls; i++) {
    r = ncclAllReduce(buf, buf, 1024, ncclFloat32, ncclSum, comm, NULL);
    if (r != ncclSuccess) {
      fprintf(stderr, "nsp_sigjob: rank %d: all-reduce #%d returned %d\n", rank, i, (int)r);
      ncclCommAbort(comm);
      return 1;
    }
    if (i == 1 && !strcmp(mode, "dispositions")) {
      dispositions();
      ncclCommDestroy(comm);
      return 0;
    }
    if (i != at || rank != dier) continue;
    if (!strcmp(mode, "abort")) {
      nsp_sigjob_abort();
    } else if (!strcmp(mode, "dlclose")) {
      dlclose(lib);
      lib_fn();
    } else {
      nsp_sigjob_segv();
    }
    fprintf(stderr, "nsp_sigjob: rank %d: %s did not end the process\n", rank, mode);
    return 3;
  }
  ncclCommDestroy(comm);
  return 0;
}
