/* nsp_report_text.c - the human report: what an infra engineer reads
 * after a crash or hang.  Layout: docs/REPORT.md. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

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

/* Greedy word wrap at `width` columns with `indent` spaces. */
static void put_wrapped(FILE *out, const char *text, int indent, int width) {
  const char *p = text;
  while (*p) {
    while (*p == ' ') p++;
    if (!*p) break;
    int col = indent;
    fprintf(out, "%*s", indent, "");
    int first = 1;
    while (*p) {
      const char *w = p;
      while (*w && *w != ' ') w++;
      int wl = (int)(w - p);
      if (!first && col + 1 + wl > width) break;
      fprintf(out, "%s%.*s", first ? "" : " ", wl, p);
      col += wl + (first ? 0 : 1);
      first = 0;
      p = w;
      while (*p == ' ') p++;
    }
    fputc('\n', out);
  }
}

static void put_rel(FILE *out, const struct nsp_job *job, int64_t t) {
  if (!t) return;
  fprintf(out, ", at +%.6f s", (double)(t - nsp_job_start_ns(job)) / 1e9);
}

static void put_comm(FILE *out, const struct nsp_comm_info *c, uint64_t id) {
  if (!id) {
    fprintf(out, "no communicator");
    return;
  }
  fprintf(out, "communicator %016" PRIx64, id);
  if (!c) return;
  if (c->nranks > 0) fprintf(out, " (%d ranks", c->nranks);
  else fprintf(out, " (? ranks");
  if (c->parent_id) fprintf(out, ", split from %016" PRIx64 " color %d", c->parent_id, c->color);
  if (c->name[0]) fprintf(out, ", name \"%s\"", c->name);
  fputc(')', out);
}

static void put_ranks(FILE *out, const int *ranks, size_t n) {
  char buf[256];
  nsp_format_ranks(buf, sizeof buf, ranks, n);
  fprintf(out, "%s %s", n == 1 ? "rank" : "ranks", buf);
}

static void put_proc_call(FILE *out, const struct nsp_job *job, const struct nsp_finding *f, const struct nsp_proc *p) {
  const struct nsp_call *c = &p->call;
  char cb[256], rb[32];
  if (f->kind == NSP_FIND_ERROR) {
    fprintf(out, ": %s", nsp_result_name(c->result, rb, sizeof rb));
    if (c->last_error) fprintf(out, " (\"%s\")", c->last_error);
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
  else fprintf(out, " on communicator %016" PRIx64, c->comm_id);
  put_rel(out, job, c->time_ns);
}

static void put_side(FILE *out, const struct nsp_job *job, const struct nsp_finding *f, size_t si) {
  const struct nsp_side *s = &f->sides[si];
  fprintf(out, "    side %zu: ", si + 1);
  put_ranks(out, s->ranks, s->nranks);
  fprintf(out, ": %s", s->text);
  if (f->kind == NSP_FIND_P2P_SIZE_MISMATCH || f->kind == NSP_FIND_P2P_UNMATCHED) {
    if (s->call.api >= 0) fprintf(out, " #%" PRIu64, s->call.seq);
    put_rel(out, job, s->call.time_ns);
  }
  fputc('\n', out);
  /* Per-process detail matters for the wavefront and errors; elsewhere
   * host/pid pairs on one line do. */
  int detail = f->kind == NSP_FIND_STOPPED_EARLY || f->kind == NSP_FIND_ERROR;
  size_t shown = s->nranks < NSP_TEXT_PROCS ? s->nranks : NSP_TEXT_PROCS;
  for (size_t p = 0; p < shown; p++) {
    const struct nsp_proc *pr = &s->procs[p];
    if (detail) {
      fprintf(out, "        rank %d on %s pid %" PRIu32, pr->rank, pr->host, pr->pid);
      put_proc_call(out, job, f, pr);
      fputc('\n', out);
    } else {
      fprintf(out, "%s rank %d on %s pid %" PRIu32, p ? "," : "       ", pr->rank, pr->host, pr->pid);
    }
  }
  if (s->nranks > shown) {
    fprintf(out, detail ? "        ... and %zu more\n" : ", ... and %zu more", s->nranks - shown);
  }
  if (!detail) fputc('\n', out);
}

static void put_finding(FILE *out, const struct nsp_job *job, size_t i) {
  const struct nsp_finding *f = nsp_job_finding(job, i);
  fprintf(out, "[%zu] %s on ", i + 1, nsp_finding_kind_name(f->kind));
  put_comm(out, f->comm, f->comm_id);
  if (f->kind == NSP_FIND_P2P_SIZE_MISMATCH || f->kind == NSP_FIND_P2P_UNMATCHED)
    fprintf(out, ", rank %d -> rank %d, #%" PRIu64, f->src, f->dst, f->seq);
  else if (f->seq)
    fprintf(out, ", seq %" PRIu64, f->seq);
  if (f->api >= 0 && f->kind != NSP_FIND_P2P_SIZE_MISMATCH && f->kind != NSP_FIND_P2P_UNMATCHED)
    fprintf(out, " (%s)", nsp_op_name(f->api));
  put_rel(out, job, f->time_ns);
  fputc('\n', out);
  put_wrapped(out, f->message, 4, 100);
  for (size_t s = 0; s < f->nsides; s++) put_side(out, job, f, s);
  char buf[512];
  snprintf(buf, sizeof buf, "hint: %s", f->hint);
  put_wrapped(out, buf, 4, 100);
}

int nsp_report_text(const struct nsp_job *job, FILE *out) {
  size_t nt = nsp_job_ntraces(job), nc = nsp_job_ncomms(job), nf = nsp_job_nfindings(job), nn = nsp_job_nnotes(job);
  fprintf(out, "ncclspy report: %zu trace%s, %zu communicator%s, %zu finding%s\n\n", nt, nt == 1 ? "" : "s", nc,
          nc == 1 ? "" : "s", nf, nf == 1 ? "" : "s");
  fprintf(out, "Summary\n");
  put_wrapped(out, nsp_job_summary(job), 2, 100);

  if (nf) fprintf(out, "\nFindings (likely cause first)\n");
  for (size_t i = 0; i < nf; i++) {
    if (i) fputc('\n', out);
    put_finding(out, job, i);
  }

  fprintf(out, "\nTraces (%zu)\n", nt);
  for (size_t i = 0; i < nt; i++) {
    const struct nsp_trace_info *t = nsp_job_trace(job, i);
    char vb[32];
    fprintf(out, "  rank %-4d %s pid %" PRIu32 ", NCCL %s, %" PRIu64 " record%s, %" PRIu64 " call%s: %s\n", t->rank,
            t->host, t->pid, nsp_nccl_version_str(t->nccl_version, vb, sizeof vb), t->records,
            t->records == 1 ? "" : "s", t->calls, t->calls == 1 ? "" : "s", t->path);
    if (t->problem) fprintf(out, "            damaged: %s\n", t->problem);
    if (t->dropped) fprintf(out, "            dropped: %" PRIu64 " records\n", t->dropped);
  }

  fprintf(out, "\nCommunicators (%zu)\n", nc);
  for (size_t i = 0; i < nc; i++) {
    const struct nsp_comm_info *c = nsp_job_comm(job, i);
    char rb[256];
    nsp_format_ranks(rb, sizeof rb, c->ranks, c->ntraced);
    fprintf(out, "  %016" PRIx64 ": ", c->id);
    if (c->nranks > 0) fprintf(out, "%d ranks", c->nranks);
    else fprintf(out, "? ranks");
    fprintf(out, ", traced %s, %" PRIu64 " collective calls (last seq %" PRIu64 "), %" PRIu64 " send/recv calls",
            c->ntraced ? rb : "none", c->ncoll, c->max_seq, c->np2p);
    if (c->parent_id) fprintf(out, ", split from %016" PRIx64 " color %d key %d", c->parent_id, c->color, c->key);
    if (c->name[0]) fprintf(out, ", name \"%s\"", c->name);
    fputc('\n', out);
  }

  if (nn) {
    fprintf(out, "\nNotes (%zu)\n", nn);
    for (size_t i = 0; i < nn; i++) fprintf(out, "  - %s\n", nsp_job_note(job, i));
  }
  fflush(out);
  return ferror(out) ? -1 : 0;
}
