/* nsp_bench.c - what the shim costs: CPU time per call and bytes on disk.
 *
 *   nsp_bench LIBNCCLSPY [--rounds R] [--calls N] [--steps S]
 *
 * Runs on the CPU stand-in for NCCL (tests/standin), one rank, so that the
 * collective itself costs little and the shim's share shows.  Prints
 * figures; it is not a test and has no pass/fail threshold.
 *
 * 1. Overhead, with call sites on and off (NCCLSPY_CALLSITES).  One
 *    process, with the shim preloaded, calls the same
 *    4-byte all-reduce two ways in interleaved rounds: through the shim's
 *    ncclAllReduce, and straight into the stand-in's (its pncclAllReduce,
 *    found with dlopen(RTLD_NOLOAD)).  Medians over rounds give ns per call without
 *    and with the shim, their difference and ratio.  Rounds are spaced so
 *    the writer thread drains the ring: the figure is the wrapper's cost,
 *    not the cost of dropping records.
 * 2. Trace size.  A training-like loop (per step: gradient buckets
 *    all-reduced as DDP does, with compute time between them; a loss
 *    all-reduce every 10 steps) under the shim; bytes of the trace file
 *    divided by collectives recorded.
 * Each part runs in a child process (the shim reads its settings once);
 * the parent reads the children's traces to count what was recorded. */
#include <dirent.h>
#include <dlfcn.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nsp_bench_stats.h"
#include "nsp_nccl.h"
#include "nsp_names.h"
#include "nsp_reader.h"

NSP_NCCL_DECLARE(nccl)


static ncclComm_t one_rank_comm(void) {
  ncclUniqueId id;
  ncclComm_t comm = NULL;
  if (ncclGetUniqueId(&id) != ncclSuccess || ncclCommInitRank(&comm, 1, id, 0) != ncclSuccess) {
    fprintf(stderr, "nsp_bench: cannot make a 1-rank communicator\n");
    exit(1);
  }
  return comm;
}

typedef ncclResult_t (*allreduce_fn)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t,
                                     ncclComm_t, cudaStream_t);

/* Part 1, in the preloaded child: prints "direct_ns shim_ns". */
static int child_overhead(int rounds, int calls) {
  ncclComm_t comm = one_rank_comm();
  /* The shim's dlsym hands out its own wrapper for ncclAllReduce (so that
   * programs taking entry points by hand are seen); NCCL's pnccl alias of
   * the same function is the documented way around it. */
  void *h = dlopen("libnccl.so.2", RTLD_NOLOAD | RTLD_LAZY);
  void *sym = h ? dlsym(h, "pncclAllReduce") : NULL;
  allreduce_fn direct, shim = ncclAllReduce;
  memcpy(&direct, &sym, sizeof direct);
  if (!direct || direct == shim) {
    fprintf(stderr, "nsp_bench: the stand-in's ncclAllReduce is not reachable apart from the shim\n");
    return 1;
  }
  float x = 1, y;
  double *d = calloc((size_t)rounds, sizeof *d), *s = calloc((size_t)rounds, sizeof *s);
  for (int r = 0; r < rounds; r++) {
    for (int order = 0; order < 2; order++) {
      int use_shim = (order + r) % 2;
      allreduce_fn f = use_shim ? shim : direct;
      uint64_t t0 = nsp_bench_now_ns();
      for (int i = 0; i < calls; i++) f(&x, &y, 1, ncclFloat32, ncclSum, comm, NULL);
      double per = (double)(nsp_bench_now_ns() - t0) / calls;
      (use_shim ? s : d)[r] = per;
      struct timespec pause = {0, 30000000}; /* 30 ms: the writer drains */
      nanosleep(&pause, NULL);
    }
  }
  printf("%.2f %.2f\n", nsp_bench_median(d, rounds), nsp_bench_median(s, rounds));
  ncclCommDestroy(comm);
  free(d);
  free(s);
  return 0;
}

/* Busy "compute" for about ns nanoseconds. */
static void compute(uint64_t ns) {
  uint64_t end = nsp_bench_now_ns() + ns;
  while (nsp_bench_now_ns() < end) {
  }
}

/* Part 2, in the preloaded child: prints the number of collectives. */
static int child_loop(int steps) {
  ncclComm_t comm = one_rank_comm();
  /* DDP-like buckets, largest first (elements of float32). */
  static const size_t bucket[] = {262144, 262144, 131072, 65536, 16384, 4096, 1024, 8};
  enum { NB = sizeof bucket / sizeof *bucket };
  float *buf[NB];
  for (int b = 0; b < NB; b++) buf[b] = calloc(bucket[b], sizeof(float));
  float loss = 1;
  uint64_t rng = 0x9e3779b97f4a7c15ull, n = 0;
  for (int step = 0; step < steps; step++) {
    compute(300000); /* forward */
    for (int b = 0; b < NB; b++) {
      rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
      compute(20000 + rng % 80000); /* backward until the bucket is ready */
      ncclAllReduce(buf[b], buf[b], bucket[b], ncclFloat32, ncclSum, comm, NULL);
      n++;
    }
    if (step % 10 == 0) {
      ncclAllReduce(&loss, &loss, 1, ncclFloat32, ncclAvg, comm, NULL);
      n++;
    }
  }
  ncclCommDestroy(comm);
  for (int b = 0; b < NB; b++) free(buf[b]);
  printf("%llu\n", (unsigned long long)n);
  return 0;
}

/* Runs this program as a child with the shim preloaded and traces in dir;
 * returns its first line of output in out. */
static int run_child(const char *self, const char *shim, const char *dir, char *const extra[],
                     char *out, size_t outlen) {
  int fds[2];
  if (pipe(fds) < 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    setenv("LD_PRELOAD", shim, 1);
    setenv("NCCLSPY_DIR", dir, 1);
    char *argv[16] = {(char *)self};
    int i = 1;
    for (; extra[i - 1] && i < 15; i++) argv[i] = extra[i - 1];
    argv[i] = NULL;
    execv(self, argv);
    _exit(127);
  }
  close(fds[1]);
  ssize_t n = read(fds[0], out, outlen - 1);
  out[n > 0 ? n : 0] = 0;
  close(fds[0]);
  int status;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

struct trace_count {
  uint64_t bytes, calls, collectives, dropped, files;
};

static void count_trace(const char *dir, struct trace_count *c) {
  memset(c, 0, sizeof *c);
  DIR *d = opendir(dir);
  struct dirent *e;
  while (d && (e = readdir(d))) {
    if (!strstr(e->d_name, ".ncclspy")) continue;
    char path[4096], err[256];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    struct stat st;
    if (stat(path, &st) == 0) c->bytes += (uint64_t)st.st_size;
    c->files++;
    struct nsp_reader *r = nsp_reader_open(path, err, sizeof err);
    struct nsp_rec rec;
    while (r && nsp_reader_next(r, &rec) == 1) {
      if (rec.kind == NSP_REC_DROPPED) c->dropped += rec.count;
      if (rec.kind != NSP_REC_CALL) continue;
      c->calls++;
      c->collectives += nsp_api_kind(rec.api) == NSP_K_COLL;
    }
    nsp_reader_destroy(r);
  }
  if (d) closedir(d);
}

static void remove_dir(const char *dir) {
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "nsp_bench: could not remove %s\n", dir);
}

int main(int argc, char **argv) {
  int rounds = 21, calls = 10000, steps = 2000;
  const char *mode = NULL;
  static const struct option opts[] = {{"rounds", required_argument, 0, 'r'},
                                       {"calls", required_argument, 0, 'n'},
                                       {"steps", required_argument, 0, 's'},
                                       {"child", required_argument, 0, 'c'},
                                       {0, 0, 0, 0}};
  int o;
  while ((o = getopt_long(argc, argv, "r:n:s:", opts, NULL)) != -1) {
    if (o == 'r') rounds = atoi(optarg);
    else if (o == 'n') calls = atoi(optarg);
    else if (o == 's') steps = atoi(optarg);
    else if (o == 'c') mode = optarg;
    else return 2;
  }
  if (rounds < 1 || calls < 1 || steps < 1) return 2;
  if (mode && !strcmp(mode, "overhead")) return child_overhead(rounds, calls);
  if (mode && !strcmp(mode, "loop")) return child_loop(steps);
  if (optind != argc - 1) {
    fprintf(stderr, "usage: %s LIBNCCLSPY [--rounds R] [--calls N] [--steps S]\n", argv[0]);
    return 2;
  }
  char shim[4096], self[4096];
  if (!realpath(argv[optind], shim) || !realpath("/proc/self/exe", self)) {
    perror("nsp_bench: realpath");
    return 2;
  }

  char dir[] = "/tmp/nsp-bench-XXXXXX", sub[4200], out[256], a1[32], a2[32];
  if (!mkdtemp(dir)) return 2;
  printf("ncclspy benchmark (CPU stand-in for NCCL, 1 rank)\n\n");

  /* The overhead twice: call sites on (the default; one stack in 64 per
   * caller) and off (NCCLSPY_CALLSITES=0). */
  static const char *const sites[2] = {"1", "0"};
  for (int k = 0; k < 2; k++) {
    snprintf(sub, sizeof sub, "%s/overhead%d", dir, k);
    snprintf(a1, sizeof a1, "--rounds=%d", rounds);
    snprintf(a2, sizeof a2, "--calls=%d", calls);
    char *ov[] = {"--child=overhead", a1, a2, NULL};
    double direct = 0, shimmed = 0;
    setenv("NCCLSPY_CALLSITES", sites[k], 1);
    int bad = run_child(self, shim, sub, ov, out, sizeof out) < 0 || sscanf(out, "%lf %lf", &direct, &shimmed) != 2;
    unsetenv("NCCLSPY_CALLSITES");
    if (bad) {
      fprintf(stderr, "nsp_bench: the overhead run failed\n");
      remove_dir(dir);
      return 1;
    }
    struct trace_count c;
    count_trace(sub, &c);
    uint64_t made = (uint64_t)rounds * (uint64_t)calls;
    printf("CPU cost per 4-byte all-reduce, call sites %s (NCCLSPY_CALLSITES=%s): median of %d interleaved\n"
           "rounds of %d calls, one process\n",
           k ? "off" : "on", sites[k], rounds, calls);
    printf("  without the shim  %8.1f ns/call\n", direct);
    printf("  with the shim     %8.1f ns/call\n", shimmed);
    printf("  added             %8.1f ns/call   (ratio with/without %.2f)\n", shimmed - direct,
           direct > 0 ? shimmed / direct : 0.0);
    printf("  recorded          %llu of %llu all-reduces through the shim, %llu dropped\n\n",
           (unsigned long long)(c.collectives), (unsigned long long)made, (unsigned long long)c.dropped);
  }

  snprintf(sub, sizeof sub, "%s/loop", dir);
  snprintf(a1, sizeof a1, "--steps=%d", steps);
  char *lp[] = {"--child=loop", a1, NULL};
  unsigned long long n = 0;
  if (run_child(self, shim, sub, lp, out, sizeof out) < 0 || sscanf(out, "%llu", &n) != 1) {
    fprintf(stderr, "nsp_bench: the training-like loop failed\n");
    remove_dir(dir);
    return 1;
  }
  struct trace_count c;
  count_trace(sub, &c);
  printf("Trace size, training-like loop: %d steps x (8 gradient buckets, 20-100 us apart) + a loss\n"
         "all-reduce every 10 steps\n", steps);
  printf("  collectives       %llu made, %llu recorded (%llu calls in all)\n", n,
         (unsigned long long)c.collectives, (unsigned long long)c.calls);
  printf("  on disk           %llu bytes in %llu file(s), header and process snapshot included\n",
         (unsigned long long)c.bytes, (unsigned long long)c.files);
  printf("  per collective    %.2f bytes\n", c.collectives ? (double)c.bytes / (double)c.collectives : 0.0);
  remove_dir(dir);
  return 0;
}
