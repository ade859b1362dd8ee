/* nsp_report_text.c - the human report: what an infra engineer reads
 * after a crash or hang.  Layout: docs/REPORT.md.
 *
 * Every string that comes from the traces, or that the analyzer built
 * from them (summary, finding messages, sides, hints, notes), is written
 * through nsp_escape.h's functions, never through a "%s": a control
 * character in a trace must not reach the terminal or forge a line. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncclspy/trace.h"

#include "nsp_escape.h"
#include "nsp_names.h"
#include "nsp_report.h"

/* Processes listed per side before "... and N more": enough to spot a
 * host pattern, short enough for a 1000-rank job. */
#define NSP_TEXT_PROCS 8

const char *nsp_nccl_version_str(int code, char *buf, size_t buflen) {
  if (code <= 0) return "unknown";
  if (code >= 10000)
    snprintf(buf, buflen, "%d.%d.%d", code / 10000, code % 10000 / 100, code % 100);
  else
    snprintf(buf, buflen, "%d.%d.%d", code / 1000, code % 1000 / 100, code % 100);
  return buf;
}

/* Greedy word wrap at `width` columns with `indent` spaces; words are
 * written escaped (and measured as written). */
static void put_wrapped(FILE *out, const char *text, int indent, int width) {
  const char *p = text ? text : "";
  while (*p) {
    while (*p == ' ') p++;
    if (!*p) break;
    int col = indent;
    fprintf(out, "%*s", indent, "");
    int first = 1;
    while (*p) {
      const char *w = p;
      while (*w && *w != ' ') w++;
      int wl = (int)nsp_escaped_len(p, (size_t)(w - p), 0);
      if (!first && col + 1 + wl > width) break;
      if (!first) fputc(' ', out);
      nsp_put_escaped(out, p, (size_t)(w - p), 0);
      col += wl + (first ? 0 : 1);
      first = 0;
      p = w;
      while (*p == ' ') p++;
    }
    fputc('\n', out);
  }
}

/* "<lead>+1.234567 s": a wall time relative to the job's start; nothing
 * for an unknown time (0). */
static void put_time(FILE *out, const struct nsp_job *job, const char *lead, int64_t t) {
  if (!t) return;
  /* Times come from the traces: subtract without signed overflow.  A time
   * before the earliest header (skewed clocks) reads "-0.5", not "+-0.5". */
  double d = (double)(int64_t)((uint64_t)t - (uint64_t)nsp_job_start_ns(job)) / 1e9;
  if (d < 0 && d > -5e-7) d = 0; /* prints as 0.000000: no sign to show */
  fprintf(out, "%s%s%.6f s", lead, d < 0 ? "-" : "+", d < 0 ? -d : d);
}

static void put_rel(FILE *out, const struct nsp_job *job, int64_t t) { put_time(out, job, ", at ", t); }

void nsp_report_put_comm(FILE *out, const struct nsp_comm_info *c, uint64_t id) {
  if (!id) {
    fprintf(out, "no communicator");
    return;
  }
  fprintf(out, "communicator %016" PRIx64, id);
  if (!c) return;
  if (c->nranks > 0) fprintf(out, " (%d rank%s", c->nranks, c->nranks == 1 ? "" : "s");
  else fprintf(out, " (? ranks");
  if (c->parent_id) fprintf(out, ", split from %016" PRIx64 " color %d", c->parent_id, c->color);
  if (c->name[0]) {
    fprintf(out, ", name ");
    nsp_put_quoted(out, c->name);
  }
  fputc(')', out);
}

/* How f's sides are made (the kinds table): what to show of them. */
static int sides_of(const struct nsp_finding *f) { return nsp_finding_kind_info(f->kind)->sides; }

/* A module path's last component. */
static const char *base_name(const char *path) {
  const char *b = strrchr(path, '/');
  return b ? b + 1 : path;
}

/* Up to NSP_TEXT_FRAMES frames of a call site, one per line (a fatal
 * signal's stack: NSP_TEXT_STACK). */
#define NSP_TEXT_FRAMES 4
#define NSP_TEXT_STACK 8
/* "at FUNCTION (FILE:LINE)" when the module's debug information gave them
 * (FILE: the source file's base name; JSON has its path), else "at SYMBOL
 * (MODULE+0xOFFSET)" or "at MODULE+0xOFFSET", one line. */
static void put_frame(FILE *out, const struct nsp_frame *fr) {
  fprintf(out, "at ");
  char shortened[160];
  const char *name = fr->function && fr->function[0] ? nsp_short_function(fr->function, shortened, sizeof shortened)
                                                     : fr->symbol;
  if (fr->file && fr->file[0] && fr->line > 0) {
    nsp_put_esc(out, name[0] ? name : "?");
    fprintf(out, " (");
    nsp_put_esc(out, base_name(fr->file));
    fprintf(out, ":%d)\n", fr->line);
  } else if (name[0]) {
    nsp_put_esc(out, name);
    fprintf(out, " (");
    nsp_put_esc(out, base_name(fr->module));
    fprintf(out, "+0x%" PRIx64 ")\n", fr->offset);
  } else {
    nsp_put_esc(out, fr->module[0] ? base_name(fr->module) : "?");
    fprintf(out, "+0x%" PRIx64 "\n", fr->offset);
  }
}

static void put_frames(FILE *out, const struct nsp_callsite *cs, int indent, size_t max) {
  if (!cs) return;
  size_t n = cs->nframes < max ? cs->nframes : max;
  for (size_t i = 0; i < n; i++) {
    fprintf(out, "%*s", indent, "");
    put_frame(out, &cs->frames[i]);
  }
  if (cs->nframes > n)
    fprintf(out, "%*s... %zu more frame%s\n", indent, "", cs->nframes - n, cs->nframes - n == 1 ? "" : "s");
}

static void put_site(FILE *out, const struct nsp_callsite *cs, int indent) { put_frames(out, cs, indent, NSP_TEXT_FRAMES); }

/* ": SIGSEGV (SEGV_MAPERR, address 0x0) in thread T, at +t s; last call ..." */
static void put_proc_signal(FILE *out, const struct nsp_job *job, const struct nsp_proc *p) {
  const struct nsp_signal *sg = p->signal;
  fprintf(out, ": ");
  nsp_put_esc(out, sg->name);
  if (sg->code_name[0]) {
    fprintf(out, " (");
    nsp_put_esc(out, sg->code_name);
    if (sg->code > 0 && sg->code != 0x80 && sg->signo != 6) fprintf(out, ", address 0x%" PRIx64, sg->addr);
    else if (sg->code <= 0 && sg->sender_pid) fprintf(out, ", from pid %d", sg->sender_pid);
    fputc(')', out);
  }
  fprintf(out, " in thread %" PRIu64, sg->tid);
  put_rel(out, job, sg->time_ns);
  if (sg->flags & NSP_SIG_CHAINED) fprintf(out, ", then the program's handler");
  const struct nsp_call *c = &p->call;
  if (c->api < 0) return;
  char cb[256];
  nsp_format_call(cb, sizeof cb, c);
  fprintf(out, "; last call %s", cb);
  if (nsp_api_kind(c->api) == NSP_K_COLL || nsp_api_kind(c->api) == NSP_K_P2P) fprintf(out, " seq %" PRIu64, c->seq);
  if (c->comm_id) fprintf(out, " on communicator %016" PRIx64, c->comm_id);
  if (c->done >= 0) fprintf(out, ", %s", c->done ? "completed" : "never completed");
  put_rel(out, job, c->time_ns);
}

static int same_site(const struct nsp_callsite *a, const struct nsp_callsite *b) {
  if (a == b) return 1;
  if (!a || !b || a->nframes != b->nframes) return 0;
  for (size_t i = 0; i < a->nframes; i++)
    if (a->frames[i].offset != b->frames[i].offset || strcmp(a->frames[i].module, b->frames[i].module) ||
        strcmp(a->frames[i].symbol, b->frames[i].symbol))
      return 0;
  return 1;
}

static void put_call_where(FILE *out, const struct nsp_call *c, uint64_t comm_id) {
  char cb[256];
  nsp_format_call(cb, sizeof cb, c);
  fprintf(out, "%s", cb);
  if (nsp_api_kind(c->api) == NSP_K_COLL || nsp_api_kind(c->api) == NSP_K_P2P) fprintf(out, " seq %" PRIu64, c->seq);
  if (!c->comm_id) return;
  if (c->comm_id == comm_id) fprintf(out, " on this communicator");
  else fprintf(out, " on communicator %016" PRIx64, c->comm_id);
}

/* ", completed", ", never completed", ", in flight (never returned)";
 * nothing when unknown. */
static void put_done(FILE *out, const struct nsp_call *c) {
  if (c->in_flight) fprintf(out, ", in flight (never returned)");
  else if (c->done >= 0) fprintf(out, ", %s", c->done ? "completed" : "never completed");
}

/* Which of a process's calls in flight a line names already. */
static int names_call(const struct nsp_proc *p, const struct nsp_call *c) {
  return (p->call.api == c->api && p->call.time_ns == c->time_ns) ||
         (p->blocked.api == c->api && p->blocked.time_ns == c->time_ns);
}

/* What else a finding's process line says of the process: its other
 * calls in flight, its end of the finding's communicator, how it ended.
 * Detail lines say all of it ("; in flight: ncclGroupEnd since +T s";
 * "; aborted this communicator at +T s"; "; still running ..."); compact
 * lines, only the end of the communicator and an end that is not a clean
 * exit, in parentheses. */
static void put_proc_state(FILE *out, const struct nsp_job *job, const struct nsp_proc *p, int detail) {
  const struct nsp_trace_info *t = nsp_job_trace(job, p->trace);
  int n = 0;
  if (detail) {
    size_t shown = 0;
    for (size_t i = 0; i < t->ninflight && shown < 2; i++) {
      const struct nsp_call *c = &t->inflight[i].call;
      if (names_call(p, c)) continue;
      fprintf(out, "; in flight: ");
      int k = nsp_api_kind(c->api);
      if (k == NSP_K_COLL || k == NSP_K_P2P) put_call_where(out, c, 0);
      else fprintf(out, "nccl%s", nsp_api_name(c->api));
      put_time(out, job, " since ", c->time_ns);
      shown++;
    }
  }
  if (p->comm_end_api >= 0) {
    fprintf(out, detail ? "; " : n++ ? ", " : " (");
    fprintf(out, "%s this communicator", nsp_comm_end_word(p->comm_end_api));
    put_time(out, job, " at ", p->comm_end_ns);
  }
  const struct nsp_end_info *e = p->end ? p->end : &t->end;
  int notable = e->state == NSP_END_RUNNING || e->state == NSP_END_KILLED || e->state == NSP_END_CRASHED;
  char eb[256];
  if ((detail || notable) && nsp_format_end(eb, sizeof eb, job, e)) {
    fprintf(out, detail ? "; " : n++ ? ", " : " (");
    nsp_put_esc(out, eb);
  }
  if (n) fputc(')', out);
}

static void put_proc_hang(FILE *out, const struct nsp_job *job, const struct nsp_finding *f, const struct nsp_side *s,
                          const struct nsp_proc *p) {
  const struct nsp_call *c = &p->call;
  if (s->role == NSP_ROLE_NOT_ARRIVED) {
    if (c->api < 0) {
      fprintf(out, ": made no call");
    } else {
      fprintf(out, ": last call ");
      put_call_where(out, c, f->comm_id);
      put_done(out, c);
      put_rel(out, job, c->time_ns);
    }
    if (p->blocked.api >= 0 && (p->blocked.comm_id != c->comm_id || p->blocked.seq != c->seq || c->api != p->blocked.api)) {
      fprintf(out, "; stuck in ");
      put_call_where(out, &p->blocked, f->comm_id);
      put_rel(out, job, p->blocked.time_ns);
    }
  } else if (s->role == NSP_ROLE_ARRIVAL_UNKNOWN) {
    /* Its last collective here that the trace covers; the records lost
     * after it may hold this seq. */
    uint64_t dropped = nsp_job_trace(job, p->trace)->dropped;
    if (c->api < 0) {
      fprintf(out, ": no collective recorded on this communicator; its trace lost %" PRIu64 " records", dropped);
    } else {
      fprintf(out, ": last recorded call ");
      put_call_where(out, c, f->comm_id);
      put_rel(out, job, c->time_ns);
      fprintf(out, "; its trace lost %" PRIu64 " records after it", dropped);
    }
  } else if (s->role == NSP_ROLE_WAITING && c->in_flight) {
    fprintf(out, ": in flight %.3f s (never returned; entry to its last sign of life)", (double)p->wait_ns / 1e9);
    put_rel(out, job, c->time_ns);
  } else if (s->role == NSP_ROLE_WAITING) {
    fprintf(out, ": waited %.3f s (enqueue to the end of its trace)", (double)p->wait_ns / 1e9);
    put_rel(out, job, c->time_ns);
    if (p->done_flags & NSP_DONE_ABANDONED) fprintf(out, "; abandoned: its communicator was aborted");
    if (p->done_flags & NSP_DONE_ERROR) fprintf(out, "; the GPU reported an error");
  }
}

static void put_proc_call(FILE *out, const struct nsp_job *job, const struct nsp_finding *f, const struct nsp_proc *p) {
  const struct nsp_call *c = &p->call;
  char cb[256], rb[32];
  if (sides_of(f) == NSP_SIDES_ORIGIN_BY_RESULT) {
    fprintf(out, ": %s", nsp_result_name(c->result, rb, sizeof rb));
    if (c->last_error) {
      fprintf(out, " (");
      nsp_put_quoted(out, c->last_error);
      fputc(')', out);
    }
    fprintf(out, " from %s", nsp_call_source_name(c->source));
    if (c->api >= 0) fprintf(out, " %s", nsp_op_name(c->api));
    if (c->source == NSP_SRC_CALL && c->seq) fprintf(out, " seq %" PRIu64, c->seq);
    if (c->comm_id != f->comm_id) fprintf(out, " on communicator %016" PRIx64, c->comm_id);
    put_rel(out, job, c->time_ns);
    return;
  }
  if (c->api < 0) return;
  nsp_format_call(cb, sizeof cb, c);
  fprintf(out, ": last call %s", cb);
  if (nsp_api_kind(c->api) == NSP_K_COLL || nsp_api_kind(c->api) == NSP_K_P2P) fprintf(out, " seq %" PRIu64, c->seq);
  if (c->comm_id == f->comm_id) fprintf(out, " on this communicator");
  else if (c->comm_id) fprintf(out, " on communicator %016" PRIx64, c->comm_id);
  if (c->in_flight) fprintf(out, " (in flight: never returned)");
  put_rel(out, job, c->time_ns);
}

/* A process as the findings name it (nsp_format_proc_rank). */
static void put_proc_rank(FILE *out, const struct nsp_job *job, const struct nsp_finding *f, const struct nsp_proc *p) {
  char rb[64];
  nsp_format_proc_rank(rb, sizeof rb, job, f, p);
  fputs(rb, out);
}

/* Whether the call sites of side s are its processes' last calls rather
 * than the call the finding names: every side of "stopped-early", the
 * ranks of a hang that did not arrive (or whose arrival is unknown). */
static int side_last_call(const struct nsp_finding *f, const struct nsp_side *s) {
  int shape = sides_of(f);
  return shape == NSP_SIDES_BY_LAST_SEQ ||
         (shape == NSP_SIDES_BY_ROLE && (s->role == NSP_ROLE_NOT_ARRIVED || s->role == NSP_ROLE_ARRIVAL_UNKNOWN));
}

void nsp_report_put_side(FILE *out, const struct nsp_job *job, const struct nsp_finding *f, size_t si) {
  const struct nsp_side *s = &f->sides[si];
  fprintf(out, "    side %zu: ", si + 1);
  char sb[320];
  nsp_format_side_ranks(sb, sizeof sb, job, f, s);
  fprintf(out, "%s: ", sb);
  nsp_put_esc(out, s->text);
  int shape = sides_of(f);
  if (shape == NSP_SIDES_SEND_RECV) {
    if (s->call.api >= 0) fprintf(out, " #%" PRIu64, s->call.seq);
    put_rel(out, job, s->call.time_ns);
  }
  fputc('\n', out);
  /* Per-process detail matters for the wavefront, errors, hangs and
   * signals; elsewhere host/pid pairs on one line do. */
  int hang = shape == NSP_SIDES_BY_ROLE;
  int sig = shape == NSP_SIDES_ORIGIN_BY_SIGNAL;
  int err = shape == NSP_SIDES_ORIGIN_BY_RESULT;
  int detail = shape == NSP_SIDES_BY_LAST_SEQ || err || hang || sig;
  size_t shown = s->nranks < NSP_TEXT_PROCS ? s->nranks : NSP_TEXT_PROCS;
  /* A Python call site every process of a detailed side shares: once, first. */
  const struct nsp_pysite *side_py = detail && !sig && !err && s->nranks > 1 ? nsp_report_side_pysite(s) : NULL;
  if (side_py) {
    char rb[320];
    nsp_format_side_ranks(rb, sizeof rb, job, f, s);
    nsp_report_put_pysite_of(out, side_py, 8, rb, side_last_call(f, s));
  }
  for (size_t p = 0; p < shown; p++) {
    const struct nsp_proc *pr = &s->procs[p];
    if (detail) {
      /* Ranks of a split communicator are not job ranks: say both. */
      fprintf(out, "        ");
      put_proc_rank(out, job, f, pr);
      fprintf(out, " on ");
      nsp_put_esc(out, pr->host);
      fprintf(out, " pid %" PRIu32, pr->pid);
      if (hang) put_proc_hang(out, job, f, s, pr);
      else if (sig && pr->signal) put_proc_signal(out, job, pr);
      else put_proc_call(out, job, f, pr);
      put_proc_state(out, job, pr, 1);
      fputc('\n', out);
      /* Where the process made that call; the error's origin and the
       * ranks of a hang matter most, so each gets its own.  A signal: the
       * stack of the first process of each side, longer for the first. */
      if (sig) {
        if (p == 0) put_frames(out, pr->site, 12, si == 0 ? NSP_TEXT_STACK : NSP_TEXT_FRAMES);
      } else if (!err || (si == 0 && p == 0)) {
        if (!side_py) nsp_report_put_pysite_of(out, pr->pysite, 12, NULL, side_last_call(f, s));
        put_site(out, pr->site, 12);
      }
    } else {
      fprintf(out, "%s ", p ? "," : "       ");
      put_proc_rank(out, job, f, pr);
      fprintf(out, " on ");
      nsp_put_esc(out, pr->host);
      fprintf(out, " pid %" PRIu32, pr->pid);
      put_proc_state(out, job, pr, 0);
    }
  }
  if (s->nranks > shown) {
    fprintf(out, detail ? "        ... and %zu more\n" : ", ... and %zu more", s->nranks - shown);
  }
  if (detail) return;
  fputc('\n', out);
  /* The side's Python call sites first, each once, with the ranks that share it. */
  nsp_report_put_side_pysites(out, job, f, s, 8, 3);
  /* The side's call sites, each once, with the ranks that share it. */
  int shown_sites = 0;
  for (size_t p = 0; p < s->nranks && shown_sites < 3; p++) {
    const struct nsp_callsite *cs = s->procs[p].site;
    int first = cs != NULL;
    for (size_t q = 0; q < p && first; q++)
      if (same_site(s->procs[q].site, cs)) first = 0;
    if (!first) continue;
    int *rk = malloc(2 * s->nranks * sizeof *rk), *jr = rk ? rk + s->nranks : NULL;
    size_t nr = 0;
    for (size_t q = p; rk && q < s->nranks; q++)
      if (same_site(s->procs[q].site, cs)) {
        jr[nr] = nsp_job_trace(job, s->procs[q].trace)->rank;
        rk[nr++] = s->ranks[q];
      }
    char rb[320];
    nsp_format_ranks_job(rb, sizeof rb, rk, nsp_finding_job_ranks(f) ? NULL : jr, nr);
    free(rk);
    fprintf(out, "        call site of %s:\n", rb);
    put_site(out, cs, 12);
    shown_sites++;
  }
}

void nsp_report_put_finding_title(FILE *out, const struct nsp_job *job, size_t i) {
  const struct nsp_finding *f = nsp_job_finding(job, i);
  fprintf(out, "[%zu] %s", i + 1, nsp_finding_kind_name(f->kind));
  if (f->setting) {
    fputc(' ', out);
    nsp_put_esc(out, f->setting);
  }
  if (nsp_finding_names_comm(f)) {
    fprintf(out, " on ");
    nsp_report_put_comm(out, f->comm, f->comm_id);
  }
  int p2p = sides_of(f) == NSP_SIDES_SEND_RECV;
  if (p2p) {
    char from[64], to[64];
    int jr[2] = {-1, -1};
    for (size_t k = 0; k < 2 && k < f->nsides; k++)
      if (f->sides[k].nranks) jr[k] = nsp_job_trace(job, f->sides[k].procs[0].trace)->rank;
    nsp_format_ranks_job(from, sizeof from, &f->src, &jr[0], 1);
    nsp_format_ranks_job(to, sizeof to, &f->dst, &jr[1], 1);
    fprintf(out, ", %s -> %s, #%" PRIu64, from, to, f->seq);
  }
  else if (f->seq)
    fprintf(out, ", seq %" PRIu64, f->seq);
  if (f->api >= 0 && !p2p) fprintf(out, " (%s)", nsp_op_name(f->api));
  put_rel(out, job, f->time_ns);
  if (f->cause != SIZE_MAX) fprintf(out, ", caused by [%zu]", f->cause + 1);
}

size_t nsp_report_same_hint(const struct nsp_job *job, size_t i) {
  const struct nsp_finding *f = nsp_job_finding(job, i);
  for (size_t j = 0; j < i; j++)
    if (!strcmp(nsp_job_finding(job, j)->hint, f->hint)) return j;
  return SIZE_MAX;
}

static void put_finding(FILE *out, const struct nsp_job *job, size_t i) {
  const struct nsp_finding *f = nsp_job_finding(job, i);
  nsp_report_put_finding_title(out, job, i);
  fputc('\n', out);
  put_wrapped(out, f->message, 4, 100);
  for (size_t s = 0; s < f->nsides; s++) nsp_report_put_side(out, job, f, s);
  /* Each hint once: a finding with an earlier one's hint points to it. */
  size_t j = nsp_report_same_hint(job, i);
  if (j != SIZE_MAX) {
    fprintf(out, "    hint: the same as [%zu]'s\n", j + 1);
    return;
  }
  size_t hl = strlen(f->hint) + 8;
  char *buf = malloc(hl);
  if (buf) {
    snprintf(buf, hl, "hint: %s", f->hint);
    put_wrapped(out, buf, 4, 100);
    free(buf);
  }
}

/* "NCCL 2.19.3" of a version code, or "NCCL version unknown". */
static void put_nccl_version(FILE *out, int32_t code) {
  char vb[32];
  if (code > 0) fprintf(out, "NCCL %s", nsp_nccl_version_str(code, vb, sizeof vb));
  else fprintf(out, "NCCL version unknown");
}

/* " (job ranks 1,3)" after a communicator's traced ranks where their
 * processes' job ranks differ from them (nsp_format_ranks_job's words). */
static void put_comm_job_ranks(FILE *out, const struct nsp_comm_info *c) {
  char rb[320];
  nsp_format_ranks_job(rb, sizeof rb, c->ranks, c->job_ranks, c->ntraced);
  const char *jr = strstr(rb, " (job rank");
  if (jr) fprintf(out, "%s", jr);
}

/* A Traces or Environment line's process: its job rank, "job rank 1"
 * where some communicator numbers its ranks otherwise (the findings say
 * "rank 0 (job rank 1)" of it there), or "no rank" for a process that
 * joined no communicator (not its environment's rank). */
static void put_trace_label(FILE *out, const struct nsp_job *job, const struct nsp_trace_info *t) {
  if (!t->joined) fprintf(out, "  no rank   ");
  else if (nsp_job_ranks_differ(job)) fprintf(out, "  job rank %-4d ", t->rank);
  else fprintf(out, "  rank %-4d ", t->rank);
}

/* The Environment section's libnccls the shim did not interpose (LIBNCCL
 * records): per rank, path and version.  Not findings (the summary says
 * them); after the env-* findings, or as the section of its own. */
static void put_untraced_libnccl(FILE *out, const struct nsp_job *job, int after_findings) {
  int any = 0;
  for (size_t i = 0; i < nsp_job_ntraces(job); i++) {
    const struct nsp_trace_info *t = nsp_job_trace(job, i);
    for (size_t l = 0; l < t->nlibnccl; l++) {
      if (!any++)
        fprintf(out, after_findings ? "\nlibnccl that ncclspy does not trace (calls through it are not in the traces)\n"
                                    : "\nEnvironment\nlibnccl that ncclspy does not trace (calls through it are not in the "
                                      "traces)\n");
      put_trace_label(out, job, t);
      nsp_put_esc(out, t->host);
      fprintf(out, " pid %" PRIu32 ": ", t->pid);
      nsp_put_esc(out, t->libnccl[l].path);
      fprintf(out, " (");
      put_nccl_version(out, t->libnccl[l].version);
      fprintf(out, "), seen");
      put_time(out, job, " at ", t->libnccl[l].time_ns);
      fprintf(out, "; the traced one: ");
      nsp_put_esc(out, t->nccl_path[0] ? t->nccl_path : "unknown");
      fputc('\n', out);
    }
  }
}

/* The Traces section's lines on how the process ended (not said of a
 * clean exit, nor of a trace older than format 1.5) and its calls in
 * flight. */
static void put_trace_end(FILE *out, const struct nsp_job *job, const struct nsp_trace_info *t) {
  char eb[256];
  if (t->end.state != NSP_END_EXITED && nsp_format_end(eb, sizeof eb, job, &t->end)) {
    fprintf(out, "            ");
    nsp_put_esc(out, eb);
    if (t->end.unslotted) fprintf(out, "; the calls in flight of %" PRIu32 " threads are not known", t->end.unslotted);
    fputc('\n', out);
  }
  for (size_t i = 0; i < t->ninflight; i++) {
    fprintf(out, "            ");
    nsp_report_put_inflight(out, job, t, i);
    fputc('\n', out);
    if (t->inflight[i].pysite && t->inflight[i].pysite->nframes) {
      fprintf(out, "              from ");
      nsp_report_put_pyline(out, t->inflight[i].pysite);
      fputc('\n', out);
    }
  }
}

void nsp_report_put_inflight(FILE *out, const struct nsp_job *job, const struct nsp_trace_info *t, size_t i) {
  const struct nsp_call *c = &t->inflight[i].call;
  fprintf(out, "in flight: ");
  int k = nsp_api_kind(c->api);
  if (k == NSP_K_COLL || k == NSP_K_P2P) put_call_where(out, c, 0);
  else fprintf(out, "nccl%s", nsp_api_name(c->api));
  put_time(out, job, " since ", c->time_ns);
  fprintf(out, " (never returned; %.3f s to its last sign of life)", (double)t->inflight[i].wait_ns / 1e9);
}

/* The headline, then where each side of the first finding made its call
 * (the first frame of the first process of the side with a call site;
 * the origin's only for an error or a signal). */
static void put_headline(FILE *out, const struct nsp_job *job) {
  nsp_put_esc(out, nsp_job_headline(job));
  fputc('\n', out);
  nsp_report_put_headline_sites(out, job);
}

void nsp_report_put_headline_sites(FILE *out, const struct nsp_job *job) {
  if (!nsp_job_nfindings(job)) return;
  const struct nsp_finding *f = nsp_job_finding(job, 0);
  int shape = sides_of(f);
  size_t nsides = shape == NSP_SIDES_ORIGIN_BY_RESULT || shape == NSP_SIDES_ORIGIN_BY_SIGNAL ? 1 : f->nsides;
  /* In the headline's order (the odd side first), the first four. */
  size_t stack[8], *order = f->nsides <= 8 ? stack : malloc(f->nsides * sizeof *order);
  if (!order) return;
  nsp_finding_side_order(f, order);
  /* Each side's Python site (its first process with one), so that sides
   * showing the same line can each name where their stacks part. */
  const struct nsp_pysite *shown[4] = {NULL};
  size_t nshown = nsides < 4 ? nsides : 4;
  for (size_t i = 0; i < nshown; i++) {
    const struct nsp_side *sd = &f->sides[order[i]];
    for (size_t p = 0; p < sd->nranks && !shown[i]; p++)
      if (sd->procs[p].pysite && sd->procs[p].pysite->nframes) shown[i] = sd->procs[p].pysite;
  }
  for (size_t i = 0; i < nshown; i++) {
    const struct nsp_side *sd = &f->sides[order[i]];
    int last = side_last_call(f, sd);
    /* A Python call site first: its frame of the program's own. */
    size_t py = 0;
    while (py < sd->nranks && sd->procs[py].pysite != shown[i]) py++;
    if (shown[i]) {
      const struct nsp_pysite *others[3];
      size_t no = 0;
      for (size_t j = 0; j < nshown; j++)
        if (j != i) others[no++] = shown[j];
      char rb[320];
      if (sd->nranks == 1 || shape == NSP_SIDES_ORIGIN_BY_RESULT) nsp_format_proc_rank(rb, sizeof rb, job, f, &sd->procs[py]);
      else nsp_format_side_ranks(rb, sizeof rb, job, f, sd);
      fprintf(out, "  %s: ", rb);
      nsp_report_put_pyline_among(out, shown[i], others, no, last);
      fputc('\n', out);
      continue;
    }
    for (size_t p = 0; p < sd->nranks; p++) {
      const struct nsp_callsite *cs = sd->procs[p].site;
      if (!cs || !cs->nframes) continue;
      char rb[320];
      if (sd->nranks == 1 || shape == NSP_SIDES_ORIGIN_BY_RESULT) nsp_format_proc_rank(rb, sizeof rb, job, f, &sd->procs[p]);
      else nsp_format_side_ranks(rb, sizeof rb, job, f, sd);
      fprintf(out, "  %s: %s", rb, last ? "last call " : "");
      put_frame(out, &cs->frames[0]);
      break;
    }
  }
  if (order != stack) free(order);
}

int nsp_report_text(const struct nsp_job *job, FILE *out) {
  size_t nt = nsp_job_ntraces(job), nc = nsp_job_ncomms(job), nf = nsp_job_nfindings(job);
  put_headline(out, job);
  fputc('\n', out);
  fprintf(out, "ncclspy report: %zu trace%s, %zu communicator%s, %zu finding%s\n\n", nt, nt == 1 ? "" : "s", nc,
          nc == 1 ? "" : "s", nf, nf == 1 ? "" : "s");
  /* Which run, when the traces hold more than one. */
  size_t nr = nsp_job_nruns(job), na = 0, ai = 0;
  for (size_t i = 0; i < nr; i++)
    if (nsp_job_run(job, i)->analyzed) na++, ai = na == 1 ? i : ai;
  if (nr > 1 && na == 1) {
    fprintf(out, "Run: ");
    nsp_put_esc(out, nsp_job_run(job, ai)->id);
    fprintf(out, " (%s of %zu runs in these traces; the others are ignored: see the notes)\n\n",
            ai == 0 ? "the newest" : "as asked, not the newest", nr);
  } else if (nr > 1) {
    fprintf(out, "Run: all %zu runs in these traces, compared as one job (--run all)\n\n", nr);
  }
  fprintf(out, "Summary\n");
  put_wrapped(out, nsp_job_summary(job), 2, 100);

  /* Environment findings sort last: their own section. */
  size_t nmain = 0;
  while (nmain < nf && !nsp_finding_kind_is_env(nsp_job_finding(job, nmain)->kind)) nmain++;
  if (nmain) fprintf(out, "\nFindings (likely cause first)\n");
  for (size_t i = 0; i < nmain; i++) {
    if (i) fputc('\n', out);
    put_finding(out, job, i);
  }
  if (nf > nmain) fprintf(out, "\nEnvironment (differences between the ranks)\n");
  for (size_t i = nmain; i < nf; i++) {
    if (i > nmain) fputc('\n', out);
    put_finding(out, job, i);
  }
  put_untraced_libnccl(out, job, nf > nmain);

  fprintf(out, "\nTraces (%zu)\n", nt);
  for (size_t i = 0; i < nt; i++) {
    const struct nsp_trace_info *t = nsp_job_trace(job, i);
    char vb[32];
    put_trace_label(out, job, t);
    nsp_put_esc(out, t->host);
    fprintf(out, " pid %" PRIu32 ", NCCL %s, %" PRIu64 " record%s, %" PRIu64 " call%s: ", t->pid,
            nsp_nccl_version_str(t->nccl_version, vb, sizeof vb), t->records, t->records == 1 ? "" : "s", t->calls,
            t->calls == 1 ? "" : "s");
    nsp_put_esc(out, t->path);
    fputc('\n', out);
    if (t->driver_version || t->runtime_version || t->tracking) {
      fprintf(out, "           ");
      if (t->driver_version)
        fprintf(out, " CUDA driver %d.%d,", t->driver_version / 1000, t->driver_version % 1000 / 10);
      if (t->runtime_version)
        fprintf(out, " runtime %d.%d,", t->runtime_version / 1000, t->runtime_version % 1000 / 10);
      fprintf(out, " tracking:%s%s%s%s%s", t->tracking & NSP_TRACK_COMPLETION ? " completion" : "",
              t->tracking & NSP_TRACK_TIMING ? " timing" : "", t->tracking & NSP_TRACK_CALLSITES ? " call-sites" : "",
              t->tracking & NSP_TRACK_SIGNALS ? " signals" : "", t->tracking ? "" : " none");
      if (t->untracked_calls)
        fprintf(out, " (but %" PRIu64 " of %" PRIu64 " collective and send/recv calls not tracked: NCCLSPY_TRACK=0)",
                t->untracked_calls, t->work_calls);
      fputc('\n', out);
    }
    if (t->problem) {
      fprintf(out, "            damaged: ");
      nsp_put_esc(out, t->problem);
      fputc('\n', out);
    }
    if (t->dropped) fprintf(out, "            dropped: %" PRIu64 " records\n", t->dropped);
    if (t->signal) {
      fprintf(out, "            %s ", t->signal->went_on ? "handled" : "died of");
      nsp_put_esc(out, t->signal->name);
      put_rel(out, job, t->signal->time_ns);
      fputc('\n', out);
    }
    put_trace_end(out, job, t);
  }

  fprintf(out, "\nCommunicators (%zu)\n", nc);
  for (size_t i = 0; i < nc; i++) {
    const struct nsp_comm_info *c = nsp_job_comm(job, i);
    char rb[256];
    nsp_format_ranks(rb, sizeof rb, c->ranks, c->ntraced);
    fprintf(out, "  %016" PRIx64 ": ", c->id);
    if (c->nranks > 0) fprintf(out, "%d rank%s", c->nranks, c->nranks == 1 ? "" : "s");
    else fprintf(out, "? ranks");
    fprintf(out, ", traced %s", c->ntraced ? rb : "none");
    put_comm_job_ranks(out, c);
    fprintf(out, ", %" PRIu64 " collective calls (last seq %" PRIu64 "), %" PRIu64 " send/recv calls", c->ncoll,
            c->max_seq, c->np2p);
    if (c->parent_id) {
      fprintf(out, ", split from %016" PRIx64 " color %d", c->parent_id, c->color);
      if (c->keys_differ) fprintf(out, ", keys differ per rank");
      else fprintf(out, " key %d", c->key);
    }
    if (c->name[0]) {
      fprintf(out, ", name ");
      nsp_put_quoted(out, c->name);
    }
    fputc('\n', out);
  }

  nsp_report_put_notes(out, job);
  fflush(out);
  return ferror(out) ? -1 : 0;
}

void nsp_report_put_notes(FILE *out, const struct nsp_job *job) {
  size_t nn = nsp_job_nnotes(job);
  if (!nn) return;
  fprintf(out, "\nNotes (%zu)\n", nn);
  for (size_t i = 0; i < nn; i++) {
    fprintf(out, "  - ");
    nsp_put_esc(out, nsp_job_note(job, i));
    fputc('\n', out);
  }
}
