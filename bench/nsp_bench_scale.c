/* nsp_bench_scale.c - the analyzer on a big job, as the command (issue #16
 * items 1 and 4): wall time, CPU time, peak RSS and records per second of
 * `ncclspy analyze` (and `ncclspy perf`) per number of threads, against
 * the same command with one thread in the same run, and whether the
 * report names the finding the job was built with.  Figures, not a test.
 *
 * The job is generated with the project's own codec (tests/unit's
 * nsp_tracegen, the same nsp_encode and zstd frames the shim writes): N
 * ranks, 8 per host (node-NNNNN, pids 4000-4007), each with the
 * environment a launcher gives (RANK, WORLD_SIZE, LOCAL_RANK, ...), its
 * GPU, a world communicator and an 8-rank tensor-parallel communicator
 * split from it; C collectives per rank: three in four on the world (most
 * all-reduces of five bfloat16 shapes, now and then a broadcast from rank
 * 0), the rest all-gathers and reduce-scatters on the split; completion
 * tracking on, a COMPLETION record after every call, one in 8 timed; times
 * jittered so the frames compress as a real trace does.  One file per
 * rank.  Generation is deterministic (--seed) and spread over worker
 * processes; a stamp file in each job's directory names the job, and a
 * directory whose stamp matches is reused as it is.
 *
 * --mismatch none,end,random builds one job per mode in DIR/<mode>: in
 * `end` rank N/3 passes float16 where the others pass bfloat16 at the
 * last world all-reduce before 99% of its calls; in `random` a seeded rank
 * does so at a seeded call.  Only that rank's file differs from the
 * healthy job's, so the others are hard links to DIR/none's when it is
 * there.
 *
 * Each measurement forks the command: `ncclspy analyze --threads T DIR`
 * (stdout and stderr to DIR/../report.*), timed with CLOCK_MONOTONIC, CPU
 * time and peak RSS from wait4().  Exit status and report are checked:
 * healthy exits 0 and says no finding; a mismatch exits 1 and its first
 * line names the seq, communicator, rank and dtypes built in; perf exits 0
 * and names the world communicator.  The program exits 1 when any row
 * FAILs.
 *
 *   build/bench/nsp_bench_scale --preset quick
 *   build/bench/nsp_bench_scale --ranks 1024 --calls 10000 --mismatch none,end --threads 1,2 --perf
 *   build/bench/nsp_bench_scale --help
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nsp_names.h"
#include "nsp_tracegen.h"

#define STAMP_NAME "bench-scale.stamp"
#define STAMP_VERSION 3 /* one more whenever the generated job changes */
#define WORLD_ID 0x57a1d0c0ffee0001ull
#define TP_ID_BASE 0x7e50000000000000ull
#define TP_SIZE 8
#define MAX_THREADS 16

enum { MODE_NONE, MODE_END, MODE_RANDOM, NMODES };
static const char *const mode_names[NMODES] = {"none", "end", "random"};

struct job {
  int ranks;
  long calls;
  uint64_t seed;
};

/* What a mode builds in, and so what the report must say. */
struct expect {
  int mode;
  int rank;        /* the rank that passes float16; -1 none */
  long call;       /* its call index (0-based) */
  uint64_t seq;    /* that call's seq on the world communicator */
};

/* ---- the job's calls ------------------------------------------------------ */

static uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/* Call i of every rank (the same on all): api, communicator (0 world, 1
 * the split), count, dtype, reduction op, root. */
struct call {
  int api, on_tp, dtype, redop, root;
  uint64_t count;
};

static struct call call_of(const struct job *j, long i) {
  static const uint64_t shapes[] = {1u << 20, 1u << 22, 25165824, 4096, 1};
  uint64_t h = mix64(j->seed ^ (uint64_t)i * 0x100000001b3ull);
  struct call c = {NSP_API_AllReduce, 0, ncclBfloat16, ncclSum, -1, shapes[h % 5]};
  if (i % 4 == 3) { /* one in four on the tensor-parallel split */
    c.on_tp = 1;
    if ((h >> 8) & 1) {
      c.api = NSP_API_AllGather;
      c.redop = -1;
      c.count = 1u << 21;
    } else {
      c.api = NSP_API_ReduceScatter;
      c.count = 1u << 19;
    }
  } else if ((h >> 16) % 32 == 0) {
    c.api = NSP_API_Broadcast;
    c.dtype = ncclFloat32;
    c.redop = -1;
    c.root = 0;
    c.count = 1024;
  }
  return c;
}

static int is_world_allreduce(const struct job *j, long i) {
  struct call c = call_of(j, i);
  return !c.on_tp && c.api == NSP_API_AllReduce;
}

static struct expect expect_of(const struct job *j, int mode) {
  struct expect e = {mode, -1, -1, 0};
  if (mode == MODE_NONE) return e;
  long k;
  if (mode == MODE_END) {
    e.rank = j->ranks / 3;
    k = j->calls - 1 - j->calls / 100;
  } else {
    uint64_t h = mix64(j->seed ^ 0xa5a5a5a5ull);
    e.rank = (int)(h % (uint64_t)j->ranks);
    k = (long)(mix64(h) % (uint64_t)j->calls);
  }
  long down = k, up = k;
  while (down >= 0 && !is_world_allreduce(j, down)) down--;
  while (up < j->calls && !is_world_allreduce(j, up)) up++;
  k = down >= 0 ? down : up < j->calls ? up : -1;
  if (k < 0) { /* no world all-reduce at all: nothing to mismatch */
    e.rank = -1;
    return e;
  }
  e.call = k;
  for (long i = 0; i <= k; i++) e.seq += !call_of(j, i).on_tp;
  return e;
}

/* ---- generation ------------------------------------------------------------ */

/* Rank r's file in dir; false when the path does not fit. */
static int trace_name(char *buf, size_t n, const char *dir, int rank) {
  return (size_t)snprintf(buf, n, "%s/node-%05d.%d.rank%d.ncclspy", dir, rank / 8, 4000 + rank % 8, rank) < n;
}

/* Writes rank r's trace into dir; its bytes and records to *bytes, *records. */
static int gen_rank(const struct job *j, const struct expect *e, int r, const char *dir, uint64_t *bytes,
                    uint64_t *records) {
  char host[32], b[32];
  snprintf(host, sizeof host, "node-%05d", r / 8);
  struct nsp_tracegen *g = nsp_tracegen_create(host, 4000u + (uint32_t)(r % 8), r);
  if (!g) return -1;
  uint64_t rs = mix64(j->seed ^ ((uint64_t)r << 32));
  /* Clocks: each process's monotonic clock starts elsewhere; the wall
   * clocks agree to 100 us. */
  uint64_t mono0 = 5000000000000ull + (rs % 1000000000000ull);
  nsp_tracegen_set_clock(g, 1760000000000000000ull + (rs >> 40) % 100000ull, mono0);
  nsp_tracegen_set_frame_records(g, 4096);
  nsp_tracegen_set_versions(g, 12080, 12080);
  nsp_tracegen_set_launcher(g, "torchrun");
  nsp_tracegen_set_tracking(g, NSP_TRACK_COMPLETION | NSP_TRACK_TIMING);
  int ok = 1;
  snprintf(b, sizeof b, "%d", j->ranks);
  ok &= nsp_tracegen_env(g, "WORLD_SIZE", b) == 0;
  snprintf(b, sizeof b, "%d", r % 8);
  ok &= nsp_tracegen_env(g, "LOCAL_RANK", b) == 0;
  ok &= nsp_tracegen_env(g, "LOCAL_WORLD_SIZE", "8") == 0;
  snprintf(b, sizeof b, "%d", r / 8);
  ok &= nsp_tracegen_env(g, "GROUP_RANK", b) == 0;
  ok &= nsp_tracegen_env(g, "MASTER_ADDR", "node-00000") == 0;
  ok &= nsp_tracegen_env(g, "MASTER_PORT", "29500") == 0;
  ok &= nsp_tracegen_env(g, "NCCL_DEBUG", "WARN") == 0;
  char uuid[64], pci[32];
  snprintf(uuid, sizeof uuid, "GPU-%08x-%04x-%04x-%04x-%012llx", (unsigned)(r / 8), r % 8, 0x5a5a, 0x1234,
           (unsigned long long)(rs & 0xffffffffffffull));
  snprintf(pci, sizeof pci, "00000000:%02X:00.0", 0x18 + 0x10 * (r % 8));
  ok &= nsp_tracegen_set_gpu(g, uuid, pci, "NVIDIA H100 80GB HBM3") == 0;
  nsp_tracegen_set_comm_name(g, "default_pg:0");
  uint32_t w = nsp_tracegen_comm(g, WORLD_ID, r, j->ranks);
  int color = r / TP_SIZE, tp_n = j->ranks - color * TP_SIZE < TP_SIZE ? j->ranks - color * TP_SIZE : TP_SIZE;
  nsp_tracegen_set_comm_name(g, "tp");
  uint32_t tp = nsp_tracegen_split(g, w, TP_ID_BASE + (uint64_t)color, color, r, r % TP_SIZE, tp_n);
  ok &= w && tp;
  nsp_tracegen_set_auto_complete(g, 0, 0);
  uint64_t n = 4; /* PROCESS, 2 COMM, EXIT */
  /* Call i starts for every rank at the job's time of call i (150-300 us
   * apart, the same on all ranks, as collectives keep them in step) plus
   * this rank's 0-50 us lateness; 5-40 us in the call, 20-220 us on the
   * GPU; one call in 8 timed. */
  uint64_t t = nsp_tracegen_now(g) + 1000000, x = rs;
  for (long i = 0; ok && i < j->calls; i++) {
    struct call c = call_of(j, i);
    if (r == e->rank && i == e->call) c.dtype = ncclFloat16;
    x = mix64(x);
    t += 150000 + mix64(j->seed + (uint64_t)i) % 150000;
    nsp_tracegen_set_time(g, t + x % 50000);
    nsp_tracegen_set_step(g, 1000, 5000 + (x >> 20) % 35000);
    if (!nsp_tracegen_coll(g, c.api, c.on_tp ? tp : w, c.count, c.dtype, c.redop, c.root)) ok = 0;
    uint64_t gpu = 20000 + (x >> 40) % 200000;
    if (nsp_tracegen_complete_last(g, NSP_DONE_OK | ((x >> 60) % 8 == 0 ? NSP_DONE_TIMED : 0), gpu) < 0) ok = 0;
    n += 2;
  }
  const uint8_t *data;
  size_t len;
  if (ok && nsp_tracegen_bytes(g, &data, &len) == 0) {
    *bytes = len;
    *records = n;
  } else {
    ok = 0;
  }
  char path[PATH_MAX];
  if (!trace_name(path, sizeof path, dir, r)) ok = 0;
  if (ok) {
    FILE *f = fopen(path, "wb");
    ok = f && fwrite(data, 1, len, f) == len;
    if (f && fclose(f) != 0) ok = 0;
  }
  nsp_tracegen_destroy(g);
  return ok ? 0 : -1;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void stamp_text(char *buf, size_t n, const struct job *j, int mode) {
  snprintf(buf, n, "nsp_bench_scale %d ranks=%d calls=%ld seed=%" PRIu64 " mismatch=%s", STAMP_VERSION, j->ranks,
           j->calls, j->seed, mode_names[mode]);
}

/* Reads dir's stamp: 1 and its totals when it names this job, else 0. */
static int stamp_matches(const char *dir, const struct job *j, int mode, uint64_t *records, uint64_t *bytes) {
  char path[PATH_MAX], want[256], line[512];
  snprintf(path, sizeof path, "%s/%s", dir, STAMP_NAME);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  int got = fgets(line, sizeof line, f) != NULL;
  fclose(f);
  if (!got) return 0;
  stamp_text(want, sizeof want, j, mode);
  size_t wl = strlen(want);
  if (strncmp(line, want, wl) != 0 || line[wl] != ' ') return 0;
  unsigned long long rec, by;
  if (sscanf(line + wl, " records=%llu bytes=%llu", &rec, &by) != 2) return 0;
  /* A reused job must still be whole: one trace per rank. */
  DIR *d = opendir(dir);
  if (!d) return 0;
  long ntraces = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t l = strlen(e->d_name);
    ntraces += l > 8 && !strcmp(e->d_name + l - 8, ".ncclspy");
  }
  closedir(d);
  if (ntraces != j->ranks) {
    fprintf(stderr, "nsp_bench_scale: %s holds %ld traces, not %d: generating it again\n", dir, ntraces, j->ranks);
    return 0;
  }
  *records = rec;
  *bytes = by;
  return 1;
}

static int mkdir_p(const char *path) {
  char tmp[PATH_MAX];
  snprintf(tmp, sizeof tmp, "%s", path);
  for (char *p = tmp + 1; *p; p++) {
    if (*p != '/') continue;
    *p = 0;
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
    *p = '/';
  }
  return mkdir(tmp, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

static int ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* Whether files a and b hold the same bytes. */
static int same_file_bytes(const char *a, const char *b) {
  FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
  int same = fa && fb;
  while (same) {
    int ca = getc(fa), cb = getc(fb);
    if (ca != cb) same = 0;
    if (ca == EOF || cb == EOF) break;
  }
  if (fa) fclose(fa);
  if (fb) fclose(fb);
  return same;
}

/* Removes the traces (*.ncclspy) and the stamp in dir, nothing else. */
static void clear_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *de;
  char path[PATH_MAX];
  while ((de = readdir(d))) {
    if (!ends_with(de->d_name, ".ncclspy") && strcmp(de->d_name, STAMP_NAME) != 0) continue;
    snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
    unlink(path);
  }
  closedir(d);
}

struct progress {
  _Atomic uint64_t ranks, bytes, records;
  _Atomic int failed;
};

/* Makes (or finds) the job of `mode` in dir; its totals to *records and
 * *bytes.  `healthy` is the healthy job's directory when that is
 * complete (its files are linked for every rank but the odd one), else
 * NULL.  workers processes share the ranks. */
static int make_job(const struct job *j, int mode, const char *dir, const char *healthy, int workers,
                    uint64_t *records, uint64_t *bytes) {
  if (stamp_matches(dir, j, mode, records, bytes)) {
    fprintf(stderr, "nsp_bench_scale: reusing %s (%d ranks x %ld calls, mismatch %s)\n", dir, j->ranks, j->calls,
            mode_names[mode]);
    return 0;
  }
  if (mkdir_p(dir) < 0) {
    fprintf(stderr, "nsp_bench_scale: cannot make %s: %s\n", dir, strerror(errno));
    return -1;
  }
  clear_dir(dir);
  struct expect e = expect_of(j, mode);
  if (mode != MODE_NONE && e.rank < 0) {
    fprintf(stderr, "nsp_bench_scale: no world all-reduce to mismatch in %ld calls\n", j->calls);
    return -1;
  }
  struct progress *pr = mmap(NULL, sizeof *pr, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (pr == MAP_FAILED) return -1;
  memset(pr, 0, sizeof *pr);
  uint64_t hrec = 0, hbytes = 0;
  if (healthy && !stamp_matches(healthy, j, MODE_NONE, &hrec, &hbytes)) healthy = NULL;
  fprintf(stderr, "nsp_bench_scale: generating %s: %d ranks x %ld calls, mismatch %s%s, %d workers\n", dir, j->ranks,
          j->calls, mode_names[mode], healthy ? " (linking the healthy job's files)" : "", workers);
  double t0 = now_s();
  if (healthy) {
    /* Every file but the odd rank's is the healthy job's: linked, its
     * totals are the healthy ones less that rank's file plus the new one. */
    char from[PATH_MAX], to[PATH_MAX];
    for (int r = 0; r < j->ranks; r++) {
      if (r == e.rank) continue;
      if (!trace_name(from, sizeof from, healthy, r) || !trace_name(to, sizeof to, dir, r) || link(from, to) != 0) {
        fprintf(stderr, "nsp_bench_scale: cannot link %s: %s; generating instead\n", from, strerror(errno));
        healthy = NULL;
        clear_dir(dir);
        break;
      }
    }
  }
  if (healthy) {
    uint64_t b = 0, rec = 0, hb = 0;
    struct stat st;
    char path[PATH_MAX];
    if (!trace_name(path, sizeof path, healthy, e.rank) || stat(path, &st) != 0 || gen_rank(j, &e, e.rank, dir, &b, &rec) < 0) {
      fprintf(stderr, "nsp_bench_scale: cannot generate rank %d in %s\n", e.rank, dir);
      munmap(pr, sizeof *pr);
      return -1;
    }
    hb = (uint64_t)st.st_size;
    pr->records = hrec;
    pr->bytes = hbytes - hb + b;
  } else {
    pid_t pids[256];
    int nw = workers < 1 ? 1 : workers > 256 ? 256 : workers;
    if (nw > j->ranks) nw = j->ranks;
    for (int w = 0; w < nw; w++) {
      pids[w] = fork();
      if (pids[w] < 0) {
        pr->failed = 1;
        nw = w;
        break;
      }
      if (pids[w] == 0) {
        for (int r = w; r < j->ranks && !pr->failed; r += nw) {
          uint64_t b = 0, rec = 0;
          if (gen_rank(j, &e, r, dir, &b, &rec) < 0) {
            fprintf(stderr, "nsp_bench_scale: cannot write rank %d's trace in %s: %s\n", r, dir, strerror(errno));
            pr->failed = 1;
            _exit(1);
          }
          pr->bytes += b;
          pr->records += rec;
          pr->ranks++;
        }
        _exit(0);
      }
    }
    int live = nw, tty = isatty(2);
    double last = now_s();
    while (live > 0) {
      int st;
      pid_t p = waitpid(-1, &st, WNOHANG);
      if (p > 0) {
        live--;
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) pr->failed = 1;
        continue;
      }
      usleep(100000);
      double t = now_s();
      if (t - last >= (tty ? 1.0 : 10.0)) {
        last = t;
        uint64_t done = pr->ranks;
        double rate = (double)done / (t - t0);
        fprintf(stderr, "%s  %" PRIu64 "/%d ranks, %.0f MB, %.0f s, about %.0f s left%s", tty ? "\r" : "", done,
                j->ranks, (double)pr->bytes / 1e6, t - t0, rate > 0 ? (double)(j->ranks - (int)done) / rate : 0.0,
                tty ? "  " : "\n");
      }
    }
    if (tty) fputc('\n', stderr);
  }
  int failed = pr->failed;
  *records = pr->records;
  *bytes = pr->bytes;
  munmap(pr, sizeof *pr);
  if (failed) return -1;
  char path[PATH_MAX], text[256];
  snprintf(path, sizeof path, "%s/%s", dir, STAMP_NAME);
  stamp_text(text, sizeof text, j, mode);
  FILE *f = fopen(path, "w");
  if (!f) return -1;
  fprintf(f, "%s records=%" PRIu64 " bytes=%" PRIu64 "\n", text, *records, *bytes);
  if (e.rank >= 0)
    fprintf(f, "odd rank %d passes float16 at call %ld: seq %" PRIu64 " of communicator %016llx\n", e.rank, e.call,
            e.seq, (unsigned long long)WORLD_ID);
  if (fclose(f) != 0) return -1;
  fprintf(stderr, "nsp_bench_scale: %s: %" PRIu64 " records, %.1f MB (%.1f B per collective) in %.1f s\n", dir,
          *records, (double)*bytes / 1e6, (double)*bytes / ((double)j->ranks * (double)j->calls), now_s() - t0);
  return 0;
}

/* ---- measurement ------------------------------------------------------------ */

struct row {
  const char *cmd;
  int mode, threads;
  double wall, cpu;
  long rss_kib;
  int status; /* exit status, or -1 killed */
  int pass;
  char why[160];
};

/* Runs `ncclspy cmd --threads T dir`, stdout to out and stderr to err. */
static int run_cmd(const char *ncclspy, const char *cmd, int threads, const char *dir, const char *out,
                   const char *err, struct row *row) {
  char t[16];
  snprintf(t, sizeof t, "%d", threads);
  double t0 = now_s();
  pid_t p = fork();
  if (p < 0) return -1;
  if (p == 0) {
    int fo = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644), fe = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fo < 0 || fe < 0 || dup2(fo, 1) < 0 || dup2(fe, 2) < 0) _exit(126);
    close(fo);
    close(fe);
    execl(ncclspy, ncclspy, cmd, "--threads", t, dir, (char *)NULL);
    _exit(127);
  }
  int st;
  struct rusage ru;
  if (wait4(p, &st, 0, &ru) != p) return -1;
  row->wall = now_s() - t0;
  row->cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
             (double)ru.ru_stime.tv_usec / 1e6;
  row->rss_kib = ru.ru_maxrss;
  row->status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return 0;
}

static char *slurp_head(const char *path, size_t max) {
  FILE *f = fopen(path, "r");
  if (!f) return NULL;
  char *b = malloc(max + 1);
  if (!b) {
    fclose(f);
    return NULL;
  }
  size_t n = fread(b, 1, max, f);
  b[n] = 0;
  fclose(f);
  return b;
}

/* Why a row fails, as printf (cut to n bytes). */
__attribute__((format(printf, 3, 4))) static void say(char *why, size_t n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, n, fmt, ap);
  va_end(ap);
}

/* Whether the report says what the job was built with; why on failure. */
static int check(const struct row *row, const struct expect *e, int ranks, const char *report, char *why, size_t n) {
  int perf = strcmp(row->cmd, "perf") == 0;
  int want_status = perf || e->rank < 0 ? 0 : 1;
  if (row->status != want_status) {
    say(why, n, "exit status %d, expected %d", row->status, want_status);
    return 0;
  }
  char *text = slurp_head(report, 1 << 16);
  if (!text) {
    say(why, n, "no report");
    return 0;
  }
  char want[128];
  int ok = 1;
  char *nl = strchr(text, '\n');
  if (nl) *nl = 0; /* the headline */
  if (perf) {
    if (nl) *nl = '\n';
    snprintf(want, sizeof want, "%016llx", (unsigned long long)WORLD_ID);
    char head[64];
    snprintf(head, sizeof head, "ncclspy perf: %d traces,", ranks);
    if (!strstr(text, want) || strncmp(text, head, strlen(head)) != 0) {
      say(why, n, "perf does not say \"%s\" or name communicator %s", head, want);
      ok = 0;
    }
  } else if (e->rank < 0) {
    snprintf(want, sizeof want, "No problems found in %d traces", ranks);
    if (strncmp(text, want, strlen(want)) != 0) {
      say(why, n, "expected \"%s\", got: %.100s", want, text);
      ok = 0;
    }
  } else {
    snprintf(want, sizeof want, "seq %" PRIu64 " all-reduce on communicator %016llx", e->seq,
             (unsigned long long)WORLD_ID);
    char who[64], traces[64];
    snprintf(who, sizeof who, "rank %d passed float16", e->rank);
    snprintf(traces, sizeof traces, "ncclspy report: %d traces,", ranks);
    if (strncmp(text, want, strlen(want)) != 0 || !strstr(text, who) || !strstr(text, "bfloat16") ||
        !strstr(text, "(dtype mismatch)") || !strstr(nl ? nl + 1 : "", traces)) {
      say(why, n, "expected \"%s ... %s ... bfloat16\", got: %.100s", want, who, text);
      ok = 0;
    }
  }
  free(text);
  return ok;
}

/* ---- options ---------------------------------------------------------------- */

static void usage(FILE *o) {
  fputs("usage: nsp_bench_scale [--preset quick|bench|mid|ranks32k|files|issue] [--ranks N] [--calls C]\n"
        "         [--files K] [--mismatch none,end,random] [--threads 1,2,4] [--perf]\n"
        "         [--dir DIR] [--ncclspy PATH] [--workers W] [--seed S] [--generate-only] [--clean]\n"
        "\n"
        "Generates a job (N ranks, a world and 8-rank split communicators, C collectives per rank\n"
        "with completions) with the project's codec, then times `ncclspy analyze --threads T` (and\n"
        "`ncclspy perf` with --perf) on it, one child per row: wall, CPU (user+sys), peak RSS,\n"
        "records/s, and the wall time against 1 thread.  PASS when the exit status and the report\n"
        "are those the job was built for.  Exit status 1 when a row FAILs.\n"
        "\n"
        "presets: quick 256 x 2,000; bench 64 x 1,000 (meson test --benchmark); mid 1,024 x 10,000;\n"
        "ranks32k 32,768 x 100; files 100,000 x 1 (100k files); issue 10,000 x 100,000 (~21 GB!).\n"
        "--files K    K ranks of one call each (K tiny files)\n"
        "--dir DIR    where jobs go, one directory per mismatch mode (default\n"
        "             /tmp/nsp-bench-scale/<ranks>x<calls>-s<seed>); a directory whose stamp names\n"
        "             the same job is reused\n"
        "--ncclspy    the command (default: ../analyzer/ncclspy next to this program)\n"
        "--workers W  processes generating (default: the CPUs)\n"
        "--clean      remove the generated traces at the end\n",
        o);
}

static int parse_list(const char *s, int *v, int max, int lo, int hi) {
  int n = 0;
  while (*s && n < max) {
    char *end;
    long x = strtol(s, &end, 10);
    if (end == s || x < lo || x > hi) return -1;
    v[n++] = (int)x;
    s = end;
    if (*s == ',') s++;
    else if (*s) return -1;
  }
  return n;
}

static int parse_modes(const char *s, int *modes) {
  int n = 0;
  char buf[64];
  snprintf(buf, sizeof buf, "%s", s);
  for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
    int m = -1;
    for (int k = 0; k < NMODES; k++)
      if (strcmp(tok, mode_names[k]) == 0) m = k;
    if (m < 0 || n == NMODES) return -1;
    modes[n++] = m;
  }
  return n;
}

static void default_ncclspy(char *buf, size_t n) {
  char self[PATH_MAX];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) {
    snprintf(buf, n, "ncclspy");
    return;
  }
  self[len] = 0;
  char *slash = strrchr(self, '/');
  if (slash) *slash = 0;
  if ((size_t)snprintf(buf, n, "%s/../analyzer/ncclspy", self) >= n) snprintf(buf, n, "ncclspy");
}

int main(int argc, char **argv) {
  struct job j = {256, 2000, 1};
  int modes[NMODES] = {MODE_NONE, MODE_END}, nmodes = 2;
  int threads[MAX_THREADS] = {1, 2}, nthreads = 2;
  int perf = 0, gen_only = 0, clean = 0;
  long workers = sysconf(_SC_NPROCESSORS_ONLN);
  char dir[PATH_MAX] = "", ncclspy[PATH_MAX] = "";
  static const struct option opts[] = {
      {"preset", required_argument, NULL, 'p'},  {"ranks", required_argument, NULL, 'r'},
      {"calls", required_argument, NULL, 'c'},   {"files", required_argument, NULL, 'f'},
      {"mismatch", required_argument, NULL, 'm'}, {"threads", required_argument, NULL, 't'},
      {"perf", no_argument, NULL, 'P'},          {"dir", required_argument, NULL, 'd'},
      {"ncclspy", required_argument, NULL, 'n'}, {"workers", required_argument, NULL, 'w'},
      {"seed", required_argument, NULL, 's'},    {"generate-only", no_argument, NULL, 'g'},
      {"clean", no_argument, NULL, 'C'},         {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (c) {
      case 'p':
        if (!strcmp(optarg, "quick")) j.ranks = 256, j.calls = 2000;
        else if (!strcmp(optarg, "bench")) j.ranks = 64, j.calls = 1000, perf = 1;
        else if (!strcmp(optarg, "mid")) j.ranks = 1024, j.calls = 10000;
        else if (!strcmp(optarg, "ranks32k")) j.ranks = 32768, j.calls = 100;
        else if (!strcmp(optarg, "files")) j.ranks = 100000, j.calls = 1, nmodes = 1;
        else if (!strcmp(optarg, "issue")) j.ranks = 10000, j.calls = 100000, perf = 1;
        else {
          fprintf(stderr, "nsp_bench_scale: unknown preset %s\n", optarg);
          return 2;
        }
        break;
      case 'r': j.ranks = atoi(optarg); break;
      case 'c': j.calls = atol(optarg); break;
      case 'f':
        j.ranks = atoi(optarg);
        j.calls = 1;
        modes[0] = MODE_NONE;
        nmodes = 1;
        break;
      case 'm':
        if ((nmodes = parse_modes(optarg, modes)) <= 0) {
          fprintf(stderr, "nsp_bench_scale: --mismatch takes none, end, random (a list)\n");
          return 2;
        }
        break;
      case 't':
        if ((nthreads = parse_list(optarg, threads, MAX_THREADS, 1, 64)) <= 0) {
          fprintf(stderr, "nsp_bench_scale: --threads takes a list of 1..64\n");
          return 2;
        }
        break;
      case 'P': perf = 1; break;
      case 'd': snprintf(dir, sizeof dir, "%s", optarg); break;
      case 'n': snprintf(ncclspy, sizeof ncclspy, "%s", optarg); break;
      case 'w': workers = atol(optarg); break;
      case 's': j.seed = strtoull(optarg, NULL, 0); break;
      case 'g': gen_only = 1; break;
      case 'C': clean = 1; break;
      case 'h': usage(stdout); return 0;
      default: usage(stderr); return 2;
    }
  }
  if (optind != argc || j.ranks < 1 || j.calls < 1) {
    usage(stderr);
    return 2;
  }
  for (int k = 0; k < nmodes; k++)
    if (modes[k] != MODE_NONE && j.ranks < 2) {
      fprintf(stderr, "nsp_bench_scale: one rank has nobody to mismatch with: --mismatch none, or --ranks 2 or more\n");
      return 2;
    }
  if (!*dir) snprintf(dir, sizeof dir, "/tmp/nsp-bench-scale/%dx%ld-s%" PRIu64, j.ranks, j.calls, j.seed);
  if (!*ncclspy) default_ncclspy(ncclspy, sizeof ncclspy);
  if (!gen_only && access(ncclspy, X_OK) != 0) {
    fprintf(stderr, "nsp_bench_scale: no ncclspy at %s (--ncclspy PATH)\n", ncclspy);
    return 2;
  }

  /* The healthy job first: the others link its files. */
  char jobdir[NMODES][PATH_MAX + 16], healthy[PATH_MAX + 16];
  snprintf(healthy, sizeof healthy, "%s/none", dir);
  uint64_t records[NMODES] = {0}, bytes[NMODES] = {0};
  for (int pass = 0; pass < 2; pass++)
    for (int k = 0; k < nmodes; k++) {
      if ((modes[k] == MODE_NONE) != (pass == 0)) continue;
      snprintf(jobdir[k], sizeof jobdir[k], "%s/%s", dir, mode_names[modes[k]]);
      if (make_job(&j, modes[k], jobdir[k], modes[k] != MODE_NONE ? healthy : NULL, (int)workers,
                   &records[k], &bytes[k]) < 0) {
        fprintf(stderr, "nsp_bench_scale: generating %s failed\n", jobdir[k]);
        return 2;
      }
    }
  if (gen_only) return 0;

  printf("ncclspy scale: %d ranks x %ld calls per rank (%s), ncclspy %s\n", j.ranks, j.calls, dir, ncclspy);
  printf("%-8s %-7s %7s %9s %9s %9s %12s %7s  %s\n", "command", "job", "threads", "wall s", "CPU s", "RSS MiB",
         "rec/s wall", "vs 1", "check");
  int failures = 0;
  const char *cmds[2] = {"analyze", "perf"};
  for (int k = 0; k < nmodes; k++) {
    struct expect e = expect_of(&j, modes[k]);
    for (int ci = 0; ci < 1 + perf; ci++) {
      double base = 0;
      for (int ti = 0; ti < nthreads; ti++) {
        struct row row = {cmds[ci], modes[k], threads[ti], 0, 0, 0, 0, 0, ""};
        char out[PATH_MAX + 64], err[PATH_MAX + 64];
        snprintf(out, sizeof out, "%s/report.%s.%s.t%d.txt", dir, mode_names[modes[k]], cmds[ci], threads[ti]);
        snprintf(err, sizeof err, "%s/report.%s.%s.t%d.err", dir, mode_names[modes[k]], cmds[ci], threads[ti]);
        if (run_cmd(ncclspy, cmds[ci], threads[ti], jobdir[k], out, err, &row) < 0) {
          fprintf(stderr, "nsp_bench_scale: cannot run %s\n", ncclspy);
          return 2;
        }
        row.pass = check(&row, &e, j.ranks, out, row.why, sizeof row.why);
        /* The report must not depend on the threads: each row against the first. */
        char first[PATH_MAX + 64];
        snprintf(first, sizeof first, "%s/report.%s.%s.t%d.txt", dir, mode_names[modes[k]], cmds[ci], threads[0]);
        if (row.pass && ti > 0 && !same_file_bytes(first, out)) {
          row.pass = 0;
          snprintf(row.why, sizeof row.why, "the report differs from the %d-thread one", threads[0]);
        }
        failures += !row.pass;
        if (threads[ti] == 1) base = row.wall;
        char ratio[16] = "-";
        if (base > 0) snprintf(ratio, sizeof ratio, "%.2f", row.wall / base);
        printf("%-8s %-7s %7d %9.2f %9.2f %9.1f %12.3g %7s  %s%s%s\n", row.cmd, mode_names[modes[k]], row.threads,
               row.wall, row.cpu, (double)row.rss_kib / 1024.0, (double)records[k] / row.wall, ratio,
               row.pass ? "PASS" : "FAIL: ", row.pass ? "" : row.why, "");
        fflush(stdout);
      }
    }
  }
  printf("records: %" PRIu64 " per job (%.1f MB of traces, %.1f B per collective); reports in %s/report.*\n",
         records[0], (double)bytes[0] / 1e6, (double)bytes[0] / ((double)j.ranks * (double)j.calls), dir);
  if (clean) {
    for (int k = 0; k < nmodes; k++) {
      clear_dir(jobdir[k]);
      rmdir(jobdir[k]);
    }
  }
  return failures ? 1 : 0;
}
