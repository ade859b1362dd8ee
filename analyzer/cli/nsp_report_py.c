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
#include <string.h>

#include "ncclspy/trace.h"

#include "nsp_escape.h"
#include "nsp_report.h"

/* Lines of outer frames (and folded library runs) after the first frame
 * of the program's own. */
#define NSP_TEXT_PYOUTER 4

/* How put_pyframe writes a frame's file. */
enum { PY_FULL, PY_SHORT, PY_BASE };

/* "FILE:LINE in FUNCTION": the whole path, a library frame's short path,
 * or (PY_BASE) the short path of a library frame and the base name of
 * another. */
static void put_pyframe(FILE *out, const struct nsp_pyframe *fr, int shorten) {
  const char *file = fr->file;
  if (shorten == PY_BASE && !fr->library) {
    const char *slash = strrchr(file, '/');
    if (slash && slash[1]) file = slash + 1;
  } else if (shorten) {
    file = fr->short_file;
  }
  nsp_put_esc(out, file[0] ? file : "?");
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

/* Frames a and b are the same line (file, line, function). */
static int frame_same(const struct nsp_pyframe *a, const struct nsp_pyframe *b) {
  return a->line == b->line && !strcmp(a->file, b->file) && !strcmp(a->function, b->function);
}

/* Steps from ps's shown frame (index at) to the first frame where ps
 * departs from o (shown at o_at), going outward (dir 1) or inward (dir
 * -1): the first step where ps has a frame and o has none or another;
 * SIZE_MAX when ps has none that differs, or o's stack was cut there (its
 * frames further out are not known). */
static size_t depart(const struct nsp_pysite *ps, size_t at, const struct nsp_pysite *o, size_t o_at, int dir) {
  for (size_t k = 1;; k++) {
    if (dir > 0 ? at + k >= ps->nframes : k > at) return SIZE_MAX;
    size_t i = dir > 0 ? at + k : at - k;
    int o_has = dir > 0 ? o_at + k < o->nframes : k <= o_at;
    if (!o_has && dir > 0 && (o->ntotal > o->nframes || (o->flags & NSP_PYSITE_TRUNCATED))) return SIZE_MAX;
    if (!o_has || !frame_same(&ps->frames[i], &o->frames[dir > 0 ? o_at + k : o_at - k])) return k;
  }
}

int nsp_report_put_pyline_among(FILE *out, const struct nsp_pysite *ps, const struct nsp_pysite *const *others,
                                size_t nothers, int last) {
  const struct nsp_pyframe *fr = line_frame(ps);
  if (!fr) return 0;
  if (last) fprintf(out, "last call from ");
  /* The sides whose shown line is this one but whose stacks differ:
   * where ps departs from the nearest of them, outward first (its own
   * callers), else inward (the library frames it called). */
  size_t out_k = SIZE_MAX, in_k = SIZE_MAX, at = (size_t)(fr - ps->frames);
  for (size_t j = 0; j < nothers && !fr->library; j++) {
    const struct nsp_pyframe *ofr = line_frame(others[j]);
    if (!ofr || ofr->library || !frame_same(fr, ofr) || nsp_pysite_same(ps, others[j])) continue;
    size_t o_at = (size_t)(ofr - others[j]->frames), k = depart(ps, at, others[j], o_at, 1);
    if (k < out_k) out_k = k;
    k = depart(ps, at, others[j], o_at, -1);
    if (k < in_k) in_k = k;
  }
  if (out_k != SIZE_MAX) {
    put_pyframe(out, &ps->frames[at + out_k], ps->frames[at + out_k].library);
    fprintf(out, " (via ");
    put_pyframe(out, fr, PY_BASE);
    fputc(')', out);
  } else {
    put_pyframe(out, fr, fr->library);
    if (in_k != SIZE_MAX) {
      fprintf(out, " (calling ");
      put_pyframe(out, &ps->frames[at - in_k], PY_BASE);
      fputc(')', out);
    }
  }
  if (fr->library) fprintf(out, " (library code: no frame of the program's own was kept)");
  if (ps->flags & NSP_PYSITE_BORROWED)
    fprintf(out, " (where the main thread was: the call came from a thread without Python)");
  return 1;
}

int nsp_report_put_pyline(FILE *out, const struct nsp_pysite *ps) { return nsp_report_put_pyline_among(out, ps, NULL, 0, 0); }

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

void nsp_report_put_pysite_of(FILE *out, const struct nsp_pysite *ps, int indent, const char *ranks, int last) {
  if (!ps || !ps->nframes) return;
  put_indent(out, indent);
  if (ps->flags & NSP_PYSITE_BORROWED) {
    /* The call came from a native thread (autograd's, say) while the
     * main thread ran this. */
    fprintf(out, "Python stack of the main thread");
    if (ranks) fprintf(out, " of %s", ranks);
    else fprintf(out, " (thread %" PRIu32 ")", ps->tid);
    fprintf(out, " %s (the call came from a thread without Python: an autograd or other native thread, "
                 "which the main thread may have been waiting for, as in backward()):\n",
            last ? "at the last call" : "when the call was made");
  } else if (ranks) {
    fprintf(out, "Python call site of %s%s:\n", last ? "the last call of " : "", ranks);
  } else {
    fprintf(out, "Python call site%s:\n", last ? " of its last call" : "");
  }
  put_pyframes(out, ps, indent + 4);
}

void nsp_report_put_pysite(FILE *out, const struct nsp_pysite *ps, int indent, const char *ranks) {
  nsp_report_put_pysite_of(out, ps, indent, ranks, 0);
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
