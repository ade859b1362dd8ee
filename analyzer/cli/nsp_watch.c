/* nsp_watch.c - `ncclspy watch DIR`: the traces of a running job read and
 * analysed again every few seconds (a new job each time: the analysis of
 * a moving job is a snapshot, docs/REPORT.md "How each process ended").
 *
 * A process counts as ended when its trace says so: an EXIT record or its
 * crash ring's exit time (exited), a ring whose heartbeat stopped or, on
 * this host, a pid that is gone (killed, crashed).  A trace whose end
 * nothing says (no exit record and no crash ring, a process of another
 * host; a trace older than format 1.5) counts as ended once neither it
 * nor its ring has changed for NSP_WATCH_SILENT_S.  The watch ends when
 * every process seen has ended on two reads in a row (a rank starting
 * late has an interval to show up). */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "nsp_progress.h"
#include "nsp_report.h"
#include "nsp_watch.h"

/* A trace whose end nothing says has ended when its files stayed unchanged this long. */
#define NSP_WATCH_SILENT_S 60
/* Not on a terminal: the status line again after this many unchanged reads. */
#define NSP_WATCH_REPEAT 15
/* The quiet ranks the status line names. */
#define NSP_WATCH_QUIET_MAX 3
/* The communicators it names. */
#define NSP_WATCH_COMMS_MAX 4
/* First findings remembered as printed (the last ones). */
#define NSP_WATCH_SHOWN_MAX 8

const char nsp_usage_watch[] =
    "usage: ncclspy watch [--interval S] [--hang-after S] [--threads N] DIR\n"
    "\n"
    "Analyses the traces in DIR (NCCLSPY_DIR of a running job) every S seconds\n"
    "while the job runs.  On a terminal one status line is kept up to date:\n"
    "the ranks seen, per communicator the last seq its ranks reached\n"
    "(lowest..highest), and the ranks longest quiet (time since each entered\n"
    "its last NCCL call); elsewhere the line is printed when it changes.  As\n"
    "soon as a finding appears (a mismatch; a hang: ranks waiting in a\n"
    "collective others did not reach, longer than --hang-after) the report is\n"
    "printed as `ncclspy analyze` prints it, and again when the first finding\n"
    "changes.  Ends when every process has ended (an exit record, or its crash\n"
    "ring or pid says it was killed or crashed; with neither, its trace\n"
    "unchanged for 60 s), or at Ctrl-C, with the final report.\n"
    "\n"
    "options:\n"
    "  --interval S     seconds between reads (default 2; 0.1 or more)\n"
    "  --hang-after S   the shortest wait that counts as a hang, and the longest\n"
    "                   silence of a running process (default 10, the analyzer's;\n"
    "                   at least 3 x the job's NCCLSPY_FLUSH_MS is used); a\n"
    "                   shorter one may name a slow rank\n"
    "  --threads N      threads that read traces (default 1: the job's own node\n"
    "                   keeps its cores); the report is the same for every N\n"
    "  -h, --help       this text\n"
    "\n"
    "exit status: as analyze's for the final report (0 no findings, 1 findings,\n"
    "3 a process ended without a clean exit); 2 usage error, or DIR never held\n"
    "a trace.\n";

static volatile sig_atomic_t nsp_watch_stop;

static void on_stop(int sig) {
  (void)sig;
  nsp_watch_stop = 1;
}

static int64_t wall_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

/* Sleeps s seconds, or less when asked to stop. */
static void nap(double s) {
  long long until = nsp_progress_clock_ns() + (long long)(s * 1e9);
  while (!nsp_watch_stop) {
    long long left = until - nsp_progress_clock_ns();
    if (left <= 0) break;
    if (left > 100000000ll) left = 100000000ll;
    struct timespec ts = {0, (long)left};
    nanosleep(&ts, NULL);
  }
}

/* Seconds given to an option: a number > 0; -1 when not one. */
static double seconds_of(const char *s) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  return errno || end == s || *end || !(v > 0) || v > 86400 ? -1 : v;
}

/* Latest change of a trace or its ring (wall clock ns); 0 unknown. */
static int64_t changed_ns(const char *path) {
  struct stat st;
  int64_t t = 0;
  char ring[4200];
  if (stat(path, &st) == 0) t = (int64_t)st.st_mtim.tv_sec * 1000000000ll + st.st_mtim.tv_nsec;
  snprintf(ring, sizeof ring, "%s.ring", path);
  if (stat(ring, &st) == 0) {
    int64_t r = (int64_t)st.st_mtim.tv_sec * 1000000000ll + st.st_mtim.tv_nsec;
    if (r > t) t = r;
  }
  return t;
}

/* Whether the process of trace t has ended, as the file header says. */
static int trace_ended(const struct nsp_trace_info *t, int64_t now) {
  switch (t->end.state) {
    case NSP_END_EXITED:
    case NSP_END_KILLED:
    case NSP_END_CRASHED: return 1;
    case NSP_END_RUNNING: return 0;
    default: {
      int64_t c = changed_ns(t->path);
      return c && now - c > NSP_WATCH_SILENT_S * 1000000000ll;
    }
  }
}

/* What names the first finding (kind, communicator, seq, the ranks to
 * look at), not its message, whose waits grow as the job hangs. */
static void finding_key(const struct nsp_job *job, char *key, size_t len) {
  key[0] = 0;
  if (!nsp_job_nfindings(job)) return;
  const struct nsp_finding *f = nsp_job_finding(job, 0);
  size_t l = (size_t)snprintf(key, len, "%s %016llx %llu %d:", nsp_finding_kind_name(f->kind),
                              (unsigned long long)f->comm_id, (unsigned long long)f->seq, f->api);
  if (l < len) nsp_format_ranks(key + l, len - l, f->odd_ranks, f->nodd);
}

/* How the status line names the process of trace t: "rank 3", else its pid. */
static void proc_name(char *buf, size_t len, const struct nsp_trace_info *t) {
  if (t->rank >= 0) snprintf(buf, len, "rank %d", t->rank);
  else snprintf(buf, len, "pid %u", t->pid);
}

struct status {
  char line[1024];  /* the whole line */
  char key[512];    /* what a change of is worth a line off a terminal */
};

/* The status line of an analysed job: "+12s 4 ranks (1 exited); comm
 * 57a1d0c0ffee0001 seq 118..120; rank 1 quiet 12s, rank 0 quiet 3s". */
static void make_status(const struct nsp_job *job, int64_t now, double quiet_s, long long since_s, int nended,
                        struct status *st) {
  size_t n = nsp_job_ntraces(job), l, k;
  size_t exited = 0, killed = 0, crashed = 0;
  for (size_t i = 0; i < n; i++) {
    int s = nsp_job_trace(job, i)->end.state;
    exited += s == NSP_END_EXITED;
    killed += s == NSP_END_KILLED;
    crashed += s == NSP_END_CRASHED;
  }
  char *b = st->line;
  size_t cap = sizeof st->line;
  l = (size_t)snprintf(b, cap, "+%llds %zu rank%s", since_s, n, n == 1 ? "" : "s");
  k = (size_t)snprintf(st->key, sizeof st->key, "%zu %zu %zu %zu %d", n, exited, killed, crashed, nended);
  if (exited + killed + crashed && l < cap) {
    const char *sep = " (";
    if (exited) l += (size_t)snprintf(b + l, cap - l, "%s%zu exited", sep, exited), sep = ", ";
    if (killed && l < cap)
      l += (size_t)snprintf(b + l, cap - l, "%s%zu ended without a clean exit", sep, killed), sep = ", ";
    if (crashed && l < cap) l += (size_t)snprintf(b + l, cap - l, "%s%zu crashed", sep, crashed);
    if (l < cap) l += (size_t)snprintf(b + l, cap - l, ")");
  }
  size_t nc = nsp_job_ncomms(job);
  for (size_t i = 0; i < nc && i < NSP_WATCH_COMMS_MAX && l < cap; i++) {
    const struct nsp_comm_info *c = nsp_job_comm(job, i);
    unsigned long long lo = (unsigned long long)nsp_job_comm_min_seq(job, i), hi = (unsigned long long)c->max_seq;
    l += (size_t)snprintf(b + l, cap - l, "%s comm %016llx seq ", i ? "," : ";", (unsigned long long)c->id);
    if (l < cap)
      l += (size_t)(lo == hi ? snprintf(b + l, cap - l, "%llu", hi) : snprintf(b + l, cap - l, "%llu..%llu", lo, hi));
  }
  if (nc > NSP_WATCH_COMMS_MAX && l < cap)
    l += (size_t)snprintf(b + l, cap - l, ", %zu more", nc - NSP_WATCH_COMMS_MAX);
  if (k < sizeof st->key) k += (size_t)snprintf(st->key + k, sizeof st->key - k, " %zu:", nc);
  /* The processes still running longest since their last call, when at
   * least quiet_s: the oldest first. */
  size_t shown = 0;
  int used[NSP_WATCH_QUIET_MAX];
  for (; shown < NSP_WATCH_QUIET_MAX; shown++) {
    int best = -1;
    int64_t best_age = 0;
    for (size_t i = 0; i < n; i++) {
      const struct nsp_trace_info *t = nsp_job_trace(job, i);
      int64_t last = nsp_job_trace_last_call_ns(job, i), age = now - last;
      int taken = 0;
      for (size_t u = 0; u < shown; u++) taken |= used[u] == (int)i;
      if (taken || !last || (t->end.state != NSP_END_RUNNING && t->end.state != NSP_END_UNKNOWN)) continue;
      if (age >= (int64_t)(quiet_s * 1e9) && age > best_age) best = (int)i, best_age = age;
    }
    if (best < 0) break;
    used[shown] = best;
    char who[48];
    proc_name(who, sizeof who, nsp_job_trace(job, (size_t)best));
    if (l < cap) l += (size_t)snprintf(b + l, cap - l, "%s%s quiet %llds", shown ? ", " : "; ", who,
                                       (long long)(best_age / 1000000000ll));
    if (k < sizeof st->key) k += (size_t)snprintf(st->key + k, sizeof st->key - k, " %s", who);
  }
  if (!shown && n > exited + killed + crashed && l < cap) snprintf(b + l, cap - l, "; no rank quiet");
}

/* Analyses dir now into a new job (NULL when out of memory); *ntraces: the
 * traces read (0: none yet). */
static struct nsp_job *read_dir(const char *dir, int64_t live_min_ns, int threads, size_t *ntraces) {
  struct nsp_job *job = nsp_job_create();
  *ntraces = 0;
  if (!job) return NULL;
  if (nsp_job_set_live_min(job, live_min_ns) < 0 || nsp_job_set_threads(job, threads) < 0) {
    nsp_job_destroy(job);
    return NULL;
  }
  int r = nsp_job_add_path(job, dir);
  if (r == NSP_AN_ENOMEM || nsp_job_analyze(job) == NSP_AN_ENOMEM) {
    nsp_job_destroy(job);
    return NULL;
  }
  *ntraces = r > 0 ? nsp_job_ntraces(job) : 0;
  return job;
}

static void put_clock(char *buf, size_t len) {
  time_t t = time(NULL);
  struct tm tm;
  localtime_r(&t, &tm);
  strftime(buf, len, "%H:%M:%S", &tm);
}

int nsp_cmd_watch(int argc, char **argv, int (*status_of)(const struct nsp_job *job)) {
  static const struct option opts[] = {
      {"interval", required_argument, NULL, 'i'},
      {"hang-after", required_argument, NULL, 'a'},
      {"threads", required_argument, NULL, 'T'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  double interval = 2, hang_after = 10;
  int c, threads = 1;
  optind = 0;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
    switch (c) {
      case 'i':
      case 'a': {
        double v = seconds_of(optarg);
        if (v < 0 || (c == 'i' && v < 0.1)) {
          fprintf(stderr, "ncclspy watch: %s takes seconds (a number%s), not '%s'\nTry 'ncclspy help watch'.\n",
                  c == 'i' ? "--interval" : "--hang-after", c == 'i' ? ", 0.1 or more" : " above 0", optarg);
          return 2;
        }
        *(c == 'i' ? &interval : &hang_after) = v;
        break;
      }
      case 'T': {
        char *end;
        long v = strtol(optarg, &end, 10);
        if (*optarg < '0' || *optarg > '9' || *end || v < 1 || v > NSP_JOB_THREADS_MAX) {
          fprintf(stderr, "ncclspy watch: --threads takes a number from 1 to 64, not %s\nTry 'ncclspy help watch'.\n",
                  optarg);
          return 2;
        }
        threads = (int)v;
        break;
      }
      case 'h': fputs(nsp_usage_watch, stdout); return 0;
      case ':':
        fprintf(stderr, "ncclspy watch: option '%s' needs %s\nTry 'ncclspy help watch'.\n", argv[optind - 1],
                strstr(argv[optind - 1], "--t") == argv[optind - 1] ? "a number of threads from 1 to 64" : "seconds");
        return 2;
      default:
        fprintf(stderr, "ncclspy watch: unknown option '%s'\nTry 'ncclspy help watch'.\n", argv[optind - 1]);
        return 2;
    }
  }
  if (argc - optind != 1) {
    fprintf(stderr, "ncclspy watch: %s\nTry 'ncclspy help watch'.\n",
            optind >= argc ? "watch needs the job's trace directory" : "watch takes one directory");
    return 2;
  }
  const char *dir = argv[optind];
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_stop;
  sa.sa_flags = SA_RESETHAND; /* a second Ctrl-C ends it at once */
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);

  int tty = isatty(STDOUT_FILENO) == 1, drawn = 0, ended_before = 0, status = 2;
  size_t seen_before = 0, unchanged = 0;
  char last_status_key[512] = "";
  /* The last NSP_WATCH_SHOWN_MAX first findings whose report was printed
   * (a ring; nshown counts every one): one coming back (a verdict that
   * goes back and forth as a job dies) is not printed again. */
  char shown[NSP_WATCH_SHOWN_MAX][512];
  size_t nshown = 0;
  int running_seen = 0; /* some process was running at a read */
  long long start = nsp_progress_clock_ns();
  int64_t live_min = (int64_t)(hang_after * 1e9);
  for (;;) {
    int stop = nsp_watch_stop;
    size_t ntraces;
    struct nsp_job *job = read_dir(dir, live_min, threads, &ntraces);
    if (!job) {
      if (drawn) nsp_status_clear(stdout);
      fprintf(stderr, "ncclspy watch: out of memory\n");
      return 2;
    }
    int64_t now = wall_ns();
    long long since = (nsp_progress_clock_ns() - start) / 1000000000ll;
    size_t nended = 0;
    for (size_t i = 0; i < ntraces; i++) nended += trace_ended(nsp_job_trace(job, i), now);
    int ended = ntraces && nended == ntraces;
    running_seen |= ntraces && nended < ntraces;
    int final = stop || (ended && ended_before && ntraces == seen_before);
    ended_before = ended;
    seen_before = ntraces;
    char key[512], when[16];
    finding_key(job, key, sizeof key);
    put_clock(when, sizeof when);
    if (final) {
      if (drawn) nsp_status_clear(stdout);
      if (!ntraces) {
        fprintf(stderr, "ncclspy watch: no trace in %s\n", dir);
        nsp_job_destroy(job);
        return 2;
      }
      printf("ncclspy watch: %s: final report (%s)\n\n", when,
             !ended         ? "stopped while processes are still running"
             : running_seen ? "every process has ended"
                            : "every process in the directory had ended before watch began: a finished job; a job "
                              "started into it later is not watched, give each job its own directory");
      status = nsp_report_text(job, stdout) < 0 ? 2 : status_of(job);
      fflush(stdout);
      nsp_job_destroy(job);
      return status;
    }
    int again = 0;
    for (size_t i = 0; i < nshown && i < NSP_WATCH_SHOWN_MAX; i++) again |= !strcmp(shown[i], key);
    /* Only while some process runs: a finished job's report is the final one. */
    if (*key && !again && running_seen) {
      if (drawn) nsp_status_clear(stdout);
      drawn = 0;
      printf("ncclspy watch: %s: %s while the job runs:\n\n", when,
             nshown ? "the first finding changed" : "a finding");
      nsp_report_text(job, stdout);
      printf("\n");
      fflush(stdout);
      snprintf(shown[nshown++ % NSP_WATCH_SHOWN_MAX], sizeof shown[0], "%s", key);
    }
    struct status st;
    if (!ntraces) {
      snprintf(st.line, sizeof st.line, "+%llds no trace in %s yet", since, dir);
      snprintf(st.key, sizeof st.key, "none");
    } else {
      make_status(job, now, interval > 1 ? interval : 1, since, (int)nended, &st);
    }
    if (tty) {
      nsp_status_put(stdout, st.line);
      drawn = 1;
    } else if (strcmp(st.key, last_status_key) || ++unchanged >= NSP_WATCH_REPEAT) {
      printf("ncclspy watch: %s\n", st.line);
      fflush(stdout);
      snprintf(last_status_key, sizeof last_status_key, "%s", st.key);
      unchanged = 0;
    }
    nsp_job_destroy(job);
    nap(interval);
  }
}
