/* test_resolve.c - the shim finds the real NCCL, records each outermost
 * call once, and never recurses into itself.
 *
 * usage: test_resolve global|local FAKE_TORCH_SO
 *   global  this program links libnccl.so.2 (the stand-in) directly;
 *   local   it dlopen's FAKE_TORCH_SO with RTLD_LOCAL, which brings
 *           libnccl.so.2 in local scope, as Python does with torch.
 * Run with LD_PRELOAD=libncclspy.so.  The work runs in a child process
 * (the trace is complete once it exits); the parent reads the trace. */
#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nsp_names.h"
#include "nsp_nccl.h"
#include "nsp_reader.h"
#ifndef NSP_RESOLVE_LOCAL
#include "shim_work.h" /* this program links libnccl.so.2 itself */
#endif

static int failures, checks;

static void check(int ok, const char *what, long got, long want) {
  checks++;
  printf("%s %d - %s (got %ld, want %ld)\n", ok ? "ok" : "not ok", checks, what, got, want);
  if (!ok) failures++;
}

int main(int argc, char **argv) {
  if (argc != 3) return 2;
  char dir[] = "/tmp/nsp-resolve-XXXXXX";
  if (!mkdtemp(dir)) return 2;
  setenv("NCCLSPY_DIR", dir, 1);
  int calls = -1;
  pid_t pid = fork();
  if (pid == 0) {
    int (*work)(int *) = NULL;
#ifndef NSP_RESOLVE_LOCAL
    work = nsp_shim_work;
#endif
    if (!strcmp(argv[1], "local")) {
      void *h = dlopen(argv[2], RTLD_LOCAL | RTLD_NOW);
      if (!h) {
        fprintf(stderr, "dlopen %s: %s\n", argv[2], dlerror());
        _exit(3);
      }
      void *sym = dlsym(h, "nsp_shim_work");
      memcpy(&work, &sym, sizeof work);
      /* The point of this case: NCCL is not in the global scope. */
      if (dlsym(RTLD_DEFAULT, "pncclAllReduce")) _exit(4);
    }
    if (!work) _exit(6);
    int n = 0;
    int bad = work(&n);
    exit(bad ? 5 : n); /* exit(), not _exit(): the trace is flushed at exit */
  }
  int status;
  waitpid(pid, &status, 0);
  calls = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  printf("1..8\n");
  check(calls == 8, "the child made its calls and they all succeeded", calls, 8);

  DIR *d = opendir(dir);
  struct dirent *e;
  char path[4096] = "";
  int files = 0;
  while (d && (e = readdir(d))) {
    if (!strstr(e->d_name, ".ncclspy")) continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    files++;
  }
  if (d) closedir(d);
  check(files == 1, "one trace file for the one process that called NCCL", files, 1);
  check(strstr(path, ".rank0.ncclspy") != NULL, "the file name carries the rank", !!strstr(path, ".rank0."), 1);

  char err[256];
  struct nsp_reader *r = path[0] ? nsp_reader_open(path, err, sizeof err) : NULL;
  int n_call = 0, n_allreduce = 0, n_bcast = 0, n_broadcast = 0, n_uid = 0, n_comm = 0, n_end = 0;
  struct nsp_rec rec;
  while (r && nsp_reader_next(r, &rec) == 1) {
    if (rec.kind == NSP_REC_COMM) n_comm++;
    if (rec.kind == NSP_REC_COMM_END) n_end++;
    if (rec.kind != NSP_REC_CALL) continue;
    n_call++;
    n_allreduce += rec.api == NSP_API_AllReduce;
    n_bcast += rec.api == NSP_API_Bcast;
    n_broadcast += rec.api == NSP_API_Broadcast;
    n_uid += rec.api == NSP_API_GetUniqueId;
  }
  check(n_allreduce == 1, "all-reduce recorded once", n_allreduce, 1);
  check(n_bcast == 1 && n_broadcast == 0, "Bcast recorded once, its inner Broadcast not at all",
        n_bcast * 10 + n_broadcast, 10);
  check(n_uid == 1, "GetUniqueId recorded once (not again inside InitAll)", n_uid, 1);
  check(n_comm == 3, "three communicators (InitRank + InitAll of 2)", n_comm, 3);
  check(n_end == 3, "three destroys", n_end, 3);
  nsp_reader_destroy(r);
  if (!getenv("NSP_KEEP")) {
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  }
  return failures ? 1 : 0;
}
