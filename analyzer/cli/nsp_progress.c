/* nsp_progress.c - the progress line and watch's status line on a
 * terminal (nsp_progress.h). */
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
  int phase;          /* the phase of the last call, and since when (for the rate of bytes) */
  long long phase_ns;
  int delay_ms;       /* NSP_TEST_PROGRESS_DELAY_MS */
};

long long nsp_progress_clock_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

struct nsp_progress *nsp_progress_start(const char *what) {
  struct nsp_progress *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  snprintf(p->what, sizeof p->what, "%s", what);
  p->tty = isatty(STDERR_FILENO) == 1;
  p->start_ns = p->phase_ns = nsp_progress_clock_ns();
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
  if (jp->phase != p->phase) { /* reading again: its own rate */
    p->phase = jp->phase;
    p->phase_ns = now;
  }
  if (now - p->start_ns <= NSP_PROGRESS_AFTER_NS || (p->drawn && now - p->drawn_ns < NSP_PROGRESS_EVERY_NS)) return;
  char rec[32], rate[32], line[256];
  double secs = (double)(now - p->start_ns) / 1e9;
  snprintf(line, sizeof line, "ncclspy %s: reading traces%s: %zu of %zu files, %s records, %s records/s", p->what,
           jp->phase == NSP_PROGRESS_REREAD ? " again" : "", jp->files_done, jp->files_total,
           human(rec, sizeof rec, (double)jp->records), human(rate, sizeof rate, (double)jp->records / secs));
  /* Time left at the phase's rate of bytes so far (compressed bytes
   * decode at about the same rate from file to file). */
  double in_phase = (double)(now - p->phase_ns) / 1e9;
  if (jp->bytes_done && jp->bytes_total > jp->bytes_done && in_phase >= 1) {
    double left = (double)(jp->bytes_total - jp->bytes_done) * in_phase / (double)jp->bytes_done;
    size_t n = strlen(line);
    long long sl = (long long)(left + 0.5);
    if (sl >= 3600) snprintf(line + n, sizeof line - n, ", about %lldh%02lldm left", sl / 3600, sl % 3600 / 60);
    else if (sl >= 60) snprintf(line + n, sizeof line - n, ", about %lldm%02llds left", sl / 60, sl % 60);
    else snprintf(line + n, sizeof line - n, ", about %llds left", sl);
  }
  nsp_status_put(stderr, line);
  p->drawn = 1;
  p->drawn_ns = now;
}

void nsp_progress_end(struct nsp_progress *p) {
  if (!p) return;
  if (p->drawn) nsp_status_clear(stderr);
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
