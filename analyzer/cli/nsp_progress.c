/* nsp_progress.c - the progress line and watch's status line on a
 * terminal (nsp_progress.h). */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "nsp_progress.h"

/* Shown only once the command has run this long, redrawn at most this often. */
#define NSP_PROGRESS_AFTER_NS 1000000000ll
#define NSP_PROGRESS_EVERY_NS 100000000ll

struct nsp_progress {
  char what[32];
  int tty;            /* standard error is a terminal */
  int drawn;          /* a line is on the screen */
  long long start_ns, drawn_ns;
  size_t files_done;  /* at the last call: for the test hook's delay */
  int phase;          /* the phase of the last call, and since when */
  long long phase_ns;
  /* The phase's first call: its time, records and bytes.  Rates are
   * measured from it, not from the command's start (listing 100k files
   * takes seconds in which nothing is read). */
  long long first_ns;
  uint64_t first_records, first_bytes;
  struct sigaction old_int, old_term;
  int handlers;       /* SIGINT/SIGTERM clear a drawn line before the process dies */
  int delay_ms;       /* NSP_TEST_PROGRESS_DELAY_MS */
};

long long nsp_progress_clock_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

/* A line is on the terminal: what a fatal SIGINT or SIGTERM clears. */
static volatile sig_atomic_t line_drawn;

static void on_fatal(int sig) {
  if (line_drawn) {
    ssize_t n = write(STDERR_FILENO, "\r\033[K", 4);
    (void)n;
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

/* Installs on_fatal for SIGINT and SIGTERM where their action is the
 * default (a program's own handler, or an ignored signal, is kept). */
static void catch_fatal(struct nsp_progress *p) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_fatal;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGINT, NULL, &p->old_int) || sigaction(SIGTERM, NULL, &p->old_term)) return;
  if (p->old_int.sa_handler == SIG_DFL) sigaction(SIGINT, &sa, NULL);
  if (p->old_term.sa_handler == SIG_DFL) sigaction(SIGTERM, &sa, NULL);
  p->handlers = 1;
}

struct nsp_progress *nsp_progress_start(const char *what) {
  struct nsp_progress *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  snprintf(p->what, sizeof p->what, "%s", what);
  p->tty = isatty(STDERR_FILENO) == 1;
  p->start_ns = p->phase_ns = nsp_progress_clock_ns();
  p->phase = -1;
  if (p->tty) catch_fatal(p);
  const char *d = getenv("NSP_TEST_PROGRESS_DELAY_MS");
  p->delay_ms = d && *d ? atoi(d) : 0;
  return p;
}

/* 1234 -> "1234", 1234567 -> "1.2M", 45000 -> "45k". */
static const char *human(char *buf, size_t len, double v) {
  if (v >= 1e9) snprintf(buf, len, "%.1fG", v / 1e9);
  else if (v >= 1e6) snprintf(buf, len, "%.1fM", v / 1e6);
  else if (v >= 1e4) snprintf(buf, len, "%.0fk", v / 1e3);
  else snprintf(buf, len, "%.0f", v);
  return buf;
}

void nsp_progress_update(void *progress, const struct nsp_job_progress *jp) {
  struct nsp_progress *p = progress;
  if (!p || !jp) return;
  if (p->delay_ms > 0 && jp->files_done != p->files_done) {
    struct timespec ts = {p->delay_ms / 1000, (long)(p->delay_ms % 1000) * 1000000l};
    nanosleep(&ts, NULL);
  }
  p->files_done = jp->files_done;
  if (!p->tty) return;
  long long now = nsp_progress_clock_ns();
  if (jp->phase != p->phase) { /* reading again: its own rates */
    p->phase = jp->phase;
    p->phase_ns = p->first_ns = now;
    p->first_records = jp->records;
    p->first_bytes = jp->bytes_done;
  }
  if (now - p->start_ns <= NSP_PROGRESS_AFTER_NS || (p->drawn && now - p->drawn_ns < NSP_PROGRESS_EVERY_NS)) return;
  char rec[32], rate[32], left[48] = "", line[256];
  /* Rates since the phase's first call, once half a second has passed. */
  double since = (double)(now - p->first_ns) / 1e9;
  double recs = since >= 0.5 ? (double)(jp->records - p->first_records) / since : 0;
  /* Time left at that rate of compressed bytes (files decode at about the
   * same rate); first in the line, so an 80-column terminal shows it. */
  if (since >= 0.5 && jp->bytes_done > p->first_bytes && jp->bytes_total > jp->bytes_done) {
    double sl = (double)(jp->bytes_total - jp->bytes_done) * since / (double)(jp->bytes_done - p->first_bytes);
    long long s = (long long)(sl + 0.5);
    if (s >= 3600) snprintf(left, sizeof left, ", about %lldh%02lldm left", s / 3600, s % 3600 / 60);
    else if (s >= 60) snprintf(left, sizeof left, ", about %lldm%02llds left", s / 60, s % 60);
    else snprintf(left, sizeof left, ", about %llds left", s);
  }
  snprintf(line, sizeof line, "ncclspy %s: reading traces%s: %zu of %zu files%s, %s records%s%s%s", p->what,
           jp->phase == NSP_PROGRESS_REREAD ? " again" : "", jp->files_done, jp->files_total, left,
           human(rec, sizeof rec, (double)jp->records), recs > 0 ? ", " : "",
           recs > 0 ? human(rate, sizeof rate, recs) : "", recs > 0 ? " records/s" : "");
  nsp_status_put(stderr, line);
  p->drawn = 1;
  line_drawn = 1;
  p->drawn_ns = now;
}

void nsp_progress_end(struct nsp_progress *p) {
  if (!p) return;
  if (p->drawn) nsp_status_clear(stderr);
  line_drawn = 0;
  if (p->handlers) {
    sigaction(SIGINT, &p->old_int, NULL);
    sigaction(SIGTERM, &p->old_term, NULL);
  }
  free(p);
}

static int width_of(FILE *tty) {
  struct winsize ws;
  if (ioctl(fileno(tty), TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20) return ws.ws_col;
  return 80;
}

void nsp_status_put(FILE *tty, const char *text) {
  /* One column short of the width: a full line would wrap on some terminals. */
  int w = width_of(tty) - 1;
  fprintf(tty, "\r%.*s\033[K", w, text);
  fflush(tty);
}

void nsp_status_clear(FILE *tty) {
  fputs("\r\033[K", tty);
  fflush(tty);
}
