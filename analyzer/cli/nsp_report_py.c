/* nsp_report_py.c - Python call sites in the text report (docs/REPORT.md,
 * "Call sites"): the first frame of the program's own first, one line
 * "FILE:LINE in FUNCTION", the library frames called from it folded into
 * one line, then the outer frames, library runs folded too; a site is
 * printed once for the ranks of a side that share it (by content).  Kept
 * apart from the native frames' printing (nsp_report_text.c), which
 * follows a Python site unchanged.  Every string from a trace goes through
 * nsp_escape.h. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "ncclspy/trace.h"

#include "nsp_escape.h"
#include "nsp_report.h"

/* Lines of outer frames (and folded library runs) after the first frame
 * of the program's own. */
#define NSP_TEXT_PYOUTER 4

/* "FILE:LINE in FUNCTION"; a library frame with its short path. */
static void put_pyframe(FILE *out, const struct nsp_pyframe *fr, int shorten) {
  nsp_put_esc(out, fr->file[0] ? shorten ? fr->short_file : fr->file : "?");
  if (fr->line) fprintf(out, ":%" PRIu64, fr->line);
  if (fr->function[0]) {
    fprintf(out, " in ");
    nsp_put_esc(out, fr->function);
  }
}

/* The frame to name in one line: the first of the program's own, else
 * (every frame library code) the outermost kept. */
static const struct nsp_pyframe *line_frame(const struct nsp_pysite *ps) {
  if (!ps || !ps->nframes) return NULL;
  return &ps->frames[ps->first < ps->nframes ? ps->first : ps->nframes - 1];
}

int nsp_report_put_pyline(FILE *out, const struct nsp_pysite *ps) {
  const struct nsp_pyframe *fr = line_frame(ps);
  if (!fr) return 0;
  put_pyframe(out, fr, fr->library);
  if (fr->library) fprintf(out, " (library code: no frame of the program's own was kept)");
  if (ps->flags & NSP_PYSITE_BORROWED) fprintf(out, " (the main thread's Python stack)");
  return 1;
}

static void put_indent(FILE *out, int indent) { fprintf(out, "%*s", indent, ""); }

/* "... N library frame(s)" for frames [i, j). */
static void put_fold(FILE *out, int indent, size_t n, const char *tail) {
  put_indent(out, indent);
  fprintf(out, "... %zu library frame%s%s", n, n == 1 ? "" : "s", tail);
}

/* The frames of ps, each line at indent. */
static void put_pyframes(FILE *out, const struct nsp_pysite *ps, int indent) {
  size_t n = ps->nframes, first = ps->first;
  if (first >= n) {
    /* Library code only: the innermost and outermost kept. */
    put_indent(out, indent);
    fprintf(out, "library code only (%zu frame%s kept): ", n, n == 1 ? "" : "s");
    put_pyframe(out, &ps->frames[0], 1);
    if (n > 1) {
      fprintf(out, " ... ");
      put_pyframe(out, &ps->frames[n - 1], 1);
    }
    fputc('\n', out);
  } else {
    put_indent(out, indent);
    put_pyframe(out, &ps->frames[first], 0);
    fputc('\n', out);
    if (first) {
      put_fold(out, indent, first, " called from it, innermost ");
      put_pyframe(out, &ps->frames[0], 1);
      fputc('\n', out);
    }
    size_t i = first + 1, lines = 0;
    while (i < n && lines < NSP_TEXT_PYOUTER) {
      if (ps->frames[i].library) {
        size_t j = i;
        while (j < n && ps->frames[j].library) j++;
        put_fold(out, indent, j - i, "\n");
        i = j;
      } else {
        put_indent(out, indent);
        put_pyframe(out, &ps->frames[i++], 0);
        fputc('\n', out);
      }
      lines++;
    }
    if (i < n) {
      put_indent(out, indent);
      fprintf(out, "... %zu more frame%s\n", n - i, n - i == 1 ? "" : "s");
    }
  }
  if (ps->ntotal > n || (ps->flags & NSP_PYSITE_TRUNCATED)) {
    put_indent(out, indent);
    fprintf(out, "... deeper frames not recorded (the shim keeps the innermost ones)\n");
  }
}

void nsp_report_put_pysite(FILE *out, const struct nsp_pysite *ps, int indent, const char *ranks) {
  if (!ps || !ps->nframes) return;
  put_indent(out, indent);
  if (ps->flags & NSP_PYSITE_BORROWED) {
    /* The call came from a native thread (autograd's, say) while the
     * main thread ran this. */
    fprintf(out, "Python stack of the main thread");
    if (ranks) fprintf(out, " of %s", ranks);
    else fprintf(out, " (thread %" PRIu32 ")", ps->tid);
    fprintf(out, " when the call was made (the call came from a thread without Python: an autograd or "
                 "other native thread, which the main thread may have been waiting for, as in backward()):\n");
  } else if (ranks) {
    fprintf(out, "Python call site of %s:\n", ranks);
  } else {
    fprintf(out, "Python call site:\n");
  }
  put_pyframes(out, ps, indent + 4);
}

const struct nsp_pysite *nsp_report_side_pysite(const struct nsp_side *s) {
  const struct nsp_pysite *ps = s->nranks ? s->procs[0].pysite : NULL;
  if (!ps || !ps->nframes) return NULL;
  for (size_t p = 1; p < s->nranks; p++)
    if (!nsp_pysite_same(s->procs[p].pysite, ps)) return NULL;
  return ps;
}

/* The ranks of side s whose Python site is process p's (from p on), as
 * the report writes ranks ("ranks 0-2"), into rb. */
static void ranks_sharing(char *rb, size_t len, const struct nsp_job *job, const struct nsp_finding *f,
                          const struct nsp_side *s, size_t p) {
  int *rk = malloc(2 * s->nranks * sizeof *rk), *jr = rk ? rk + s->nranks : NULL;
  size_t nr = 0;
  for (size_t q = p; rk && q < s->nranks; q++)
    if (nsp_pysite_same(s->procs[q].pysite, s->procs[p].pysite)) {
      jr[nr] = nsp_job_trace(job, s->procs[q].trace)->rank;
      rk[nr++] = s->ranks[q];
    }
  if (rk) nsp_format_ranks_job(rb, len, rk, nsp_finding_job_ranks(f) ? NULL : jr, nr);
  else snprintf(rb, len, "rank %d", s->ranks[p]);
  free(rk);
}

void nsp_report_put_side_pysites(FILE *out, const struct nsp_job *job, const struct nsp_finding *f,
                                 const struct nsp_side *s, int indent, size_t max) {
  size_t shown = 0;
  for (size_t p = 0; p < s->nranks && shown < max; p++) {
    const struct nsp_pysite *ps = s->procs[p].pysite;
    int first = ps && ps->nframes;
    for (size_t q = 0; q < p && first; q++)
      if (nsp_pysite_same(s->procs[q].pysite, ps)) first = 0;
    if (!first) continue;
    char rb[320];
    ranks_sharing(rb, sizeof rb, job, f, s, p);
    nsp_report_put_pysite(out, ps, indent, rb);
    shown++;
  }
}
