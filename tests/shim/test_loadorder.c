/* test_loadorder.c - NCCL loaded after the program first tried to call it.
 *
 * usage: test_loadorder LIBNCCLSPY LIBNCCL
 * A worker (this program, run with the shim preloaded, linked to no NCCL)
 * calls ncclGetVersion and ncclGetUniqueId through the shim before any
 * libnccl is loaded: both return ncclInvalidUsage and the shim warns once.
 * Then it dlopen's LIBNCCL (RTLD_LOCAL, as Python loads torch, then again
 * with RTLD_GLOBAL in a second worker) and makes calls through the same
 * shim symbols: they reach NCCL and are recorded, once each.  Output is TAP. */
#include <dirent.h>
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nsp_names.h"
#include "nsp_nccl.h"
#include "nsp_reader.h"
#include "tests/nsp_tap.h"

#define SYM(var, name)                         \
  do {                                         \
    void *s_ = dlsym(RTLD_DEFAULT, name);      \
    memcpy(&(var), &s_, sizeof(var));          \
  } while (0)

static int worker(const char *lib, int global) {
  ncclResult_t (*get_version)(int *);
  ncclResult_t (*get_uid)(ncclUniqueId *);
  ncclResult_t (*init)(ncclComm_t *, int, ncclUniqueId, int);
  ncclResult_t (*allreduce)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                            cudaStream_t);
  ncclResult_t (*destroy)(ncclComm_t);
  /* The shim's symbols: LD_PRELOAD put them in the global scope. */
  SYM(get_version, "ncclGetVersion");
  SYM(get_uid, "ncclGetUniqueId");
  SYM(init, "ncclCommInitRank");
  SYM(allreduce, "ncclAllReduce");
  SYM(destroy, "ncclCommDestroy");
  if (!get_version || !get_uid || !init || !allreduce || !destroy) return 10;
  int v = 0;
  ncclUniqueId id;
  if (get_version(&v) != ncclInvalidUsage || get_uid(&id) != ncclInvalidUsage) return 11;
  if (!dlopen(lib, RTLD_NOW | (global ? RTLD_GLOBAL : RTLD_LOCAL))) {
    fprintf(stderr, "dlopen %s: %s\n", lib, dlerror());
    return 12;
  }
  ncclComm_t c = NULL;
  float x = 1, y = 0;
  if (get_version(&v) != ncclSuccess || v <= 0) return 13;
  if (get_uid(&id) != ncclSuccess || init(&c, 1, id, 0) != ncclSuccess) return 14;
  for (int i = 0; i < 5; i++)
    if (allreduce(&x, &y, 1, ncclFloat32, ncclSum, c, NULL) != ncclSuccess || y != 1) return 15;
  if (destroy(c) != ncclSuccess) return 16;
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 4 && !strcmp(argv[1], "worker")) return worker(argv[2], atoi(argv[3]));
  if (argc != 3) {
    fprintf(stderr, "usage: %s LIBNCCLSPY LIBNCCL\n", argv[0]);
    return 2;
  }
  char self[4096], shim[4096], lib[4096];
  if (!realpath("/proc/self/exe", self) || !realpath(argv[1], shim) || !realpath(argv[2], lib)) return 2;
  for (int global = 0; global < 2; global++) {
    char dir[] = "/tmp/nsp-loadorder-XXXXXX", errf[128];
    if (!mkdtemp(dir)) return 2;
    snprintf(errf, sizeof errf, "%s/stderr", dir);
    char trace_dir[64];
    snprintf(trace_dir, sizeof trace_dir, "%s/t", dir);
    pid_t pid = fork();
    if (pid == 0) {
      if (!freopen(errf, "w", stderr)) _exit(126);
      setenv("LD_PRELOAD", shim, 1);
      setenv("NCCLSPY_DIR", trace_dir, 1);
      execl(self, self, "worker", lib, global ? "1" : "0", (char *)NULL);
      _exit(127);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    FILE *f = fopen(errf, "r");
    char line[512];
    int warnings = 0, other = 0;
    while (f && fgets(line, sizeof line, f)) {
      if (!strncmp(line, "ncclspy:", 8) && strstr(line, "no real NCCL function found")) warnings++;
      else other++;
    }
    if (f) fclose(f);
    ok(WIFEXITED(st) && WEXITSTATUS(st) == 0,
       "%s: calls before NCCL is loaded return ncclInvalidUsage; after dlopen they reach NCCL (status 0x%x)",
       global ? "RTLD_GLOBAL" : "RTLD_LOCAL", st);
    ok(warnings == 1 && other == 0, "%s: one ncclspy: warning for the two entry points called too early (%d, %d "
       "other lines)",
       global ? "RTLD_GLOBAL" : "RTLD_LOCAL", warnings, other);
    DIR *d = opendir(trace_dir);
    struct dirent *e;
    long files = 0, calls = 0, comms = 0, ends = 0, uids = 0;
    while (d && (e = readdir(d))) {
      if (!strstr(e->d_name, ".ncclspy") || strstr(e->d_name, ".ring")) continue;
      char path[4200], err[256];
      snprintf(path, sizeof path, "%s/%s", trace_dir, e->d_name);
      struct nsp_reader *r = nsp_reader_open(path, err, sizeof err);
      struct nsp_rec rec;
      files++;
      while (r && nsp_reader_next(r, &rec) == 1) {
        calls += rec.kind == NSP_REC_CALL && rec.api == NSP_API_AllReduce;
        uids += rec.kind == NSP_REC_CALL && rec.api == NSP_API_GetUniqueId;
        comms += rec.kind == NSP_REC_COMM;
        ends += rec.kind == NSP_REC_COMM_END;
      }
      nsp_reader_destroy(r);
    }
    if (d) closedir(d);
    ok(files == 1 && calls == 5 && uids == 1 && comms == 1 && ends == 1,
       "%s: the calls after the load are recorded once each (%ld file, %ld all-reduces, %ld uid, %ld comm, %ld "
       "destroy)", global ? "RTLD_GLOBAL" : "RTLD_LOCAL", files, calls, uids, comms, ends);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (!getenv("NSP_KEEP") && system(cmd) != 0) fprintf(stderr, "# could not remove %s\n", dir);
  }
  printf("1..%d\n", tests);
  return failures ? 1 : 0;
}
