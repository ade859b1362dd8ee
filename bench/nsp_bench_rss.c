/* nsp_bench_rss.c - the shim's memory when the writer cannot keep up.
 *
 *   nsp_bench_rss LIBNCCLSPY [--calls N]      (default 10 million)
 *
 * One process (a child with the shim preloaded) makes N 4-byte all-reduces
 * on the CPU stand-in as fast as it can: about 10x faster than the writer
 * thread encodes and compresses, so the ring stays full and records are
 * dropped (and counted).  Prints the process's resident memory (VmRSS of
 * /proc/self/status) before its first NCCL call, after 1 million calls and
 * after all of them, and its peak (VmHWM); then the same process without
 * the shim, so the stand-in's own share shows.  A figure, not a test: the
 * target is <= 16 MiB added by the shim, whatever N. */
#include <dirent.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nsp_nccl.h"
#include "nsp_reader.h"

NSP_NCCL_DECLARE(nccl)

static long status_kib(const char *field) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long v = -1;
  size_t n = strlen(field);
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, field, n) && line[n] == ':') v = strtol(line + n + 1, NULL, 10);
  if (f) fclose(f);
  return v;
}

/* In the child: prints "before after1M after peak". */
static int child(long calls) {
  long before = status_kib("VmRSS"), mid = -1;
  ncclUniqueId id;
  ncclComm_t comm = NULL;
  if (ncclGetUniqueId(&id) != ncclSuccess || ncclCommInitRank(&comm, 1, id, 0) != ncclSuccess) return 1;
  float x = 1, y;
  for (long i = 0; i < calls; i++) {
    ncclAllReduce(&x, &y, 1, ncclFloat32, ncclSum, comm, NULL);
    if (i == 1000000) mid = status_kib("VmRSS");
  }
  long after = status_kib("VmRSS"), peak = status_kib("VmHWM");
  ncclCommDestroy(comm);
  printf("%ld %ld %ld %ld\n", before, mid, after, peak);
  return 0;
}

static int run(const char *self, const char *shim, const char *dir, long calls, long v[4]) {
  int fds[2];
  if (pipe(fds) < 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    if (shim) setenv("LD_PRELOAD", shim, 1);
    else unsetenv("LD_PRELOAD");
    setenv("NCCLSPY_DIR", dir, 1);
    char arg[64];
    snprintf(arg, sizeof arg, "--child=%ld", calls);
    execl(self, self, arg, (char *)NULL);
    _exit(127);
  }
  close(fds[1]);
  char out[256];
  ssize_t n = read(fds[0], out, sizeof out - 1);
  out[n > 0 ? n : 0] = 0;
  close(fds[0]);
  int st;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) && WEXITSTATUS(st) == 0 &&
                 sscanf(out, "%ld %ld %ld %ld", &v[0], &v[1], &v[2], &v[3]) == 4
             ? 0
             : -1;
}

static void count(const char *dir, unsigned long long *records, unsigned long long *dropped) {
  *records = *dropped = 0;
  DIR *d = opendir(dir);
  struct dirent *e;
  while (d && (e = readdir(d))) {
    if (!strstr(e->d_name, ".ncclspy")) continue;
    char path[4200], err[256];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    struct nsp_reader *r = nsp_reader_open(path, err, sizeof err);
    struct nsp_rec rec;
    while (r && nsp_reader_next(r, &rec) == 1) {
      if (rec.kind == NSP_REC_DROPPED) *dropped += rec.count;
      else (*records)++;
    }
    nsp_reader_destroy(r);
  }
  if (d) closedir(d);
}

int main(int argc, char **argv) {
  long calls = 10000000;
  static const struct option opts[] = {{"calls", required_argument, 0, 'n'},
                                       {"child", required_argument, 0, 'c'},
                                       {0, 0, 0, 0}};
  int o;
  while ((o = getopt_long(argc, argv, "n:", opts, NULL)) != -1) {
    if (o == 'n') calls = atol(optarg);
    else if (o == 'c') return child(atol(optarg));
    else return 2;
  }
  if (optind != argc - 1 || calls < 1000001) {
    fprintf(stderr, "usage: %s LIBNCCLSPY [--calls N > 1000000]\n", argv[0]);
    return 2;
  }
  char shim[4096], self[4096];
  if (!realpath(argv[optind], shim) || !realpath("/proc/self/exe", self)) return 2;
  char dir[] = "/tmp/nsp-bench-rss-XXXXXX";
  if (!mkdtemp(dir)) return 2;
  long with[4], without[4];
  if (run(self, shim, dir, calls, with) < 0 || run(self, NULL, dir, calls, without) < 0) {
    fprintf(stderr, "nsp_bench_rss: a run failed\n");
    return 1;
  }
  unsigned long long records, dropped;
  count(dir, &records, &dropped);
  printf("ncclspy memory benchmark: %ld 4-byte all-reduces as fast as possible, one process\n\n", calls);
  printf("                      with the shim   without     added by the shim\n");
  printf("  RSS before          %8ld KiB   %8ld KiB\n", with[0], without[0]);
  printf("  RSS after 1M calls  %8ld KiB   %8ld KiB   %8ld KiB\n", with[1], without[1],
         (with[1] - with[0]) - (without[1] - without[0]));
  char label[32];
  snprintf(label, sizeof label, "RSS after %ldM calls", calls / 1000000);
  printf("  %-20s%8ld KiB   %8ld KiB   %8ld KiB\n", label, with[2], without[2],
         (with[2] - with[0]) - (without[2] - without[0]));
  printf("  peak RSS (VmHWM)    %8ld KiB   %8ld KiB   %8ld KiB\n", with[3], without[3],
         (with[3] - with[0]) - (without[3] - without[0]));
  printf("  trace               %llu records written, %llu dropped (ring full: the writer could not keep up)\n",
         records, dropped);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "nsp_bench_rss: could not remove %s\n", dir);
  return 0;
}
