/* nsp_report_html.c - `ncclspy analyze --html`: the report as one
 * self-contained HTML page (docs/REPORT.md, "The HTML report").
 *
 * Self-contained: inline CSS and SVG, no script, no font, image or link
 * to fetch, so the file opens the same offline, attached to a ticket or
 * from a shared filesystem.  The words are the text report's: the
 * headline, summary, finding titles, sides, call sites, hints, ends of
 * processes and notes come from the analyzer and from the text report's
 * own writers (nsp_report.h), captured and HTML-escaped here, never
 * re-derived.  Every string that reaches the page goes through
 * nsp_put_html (nsp_escape.h): traces are hostile input.
 *
 * The swimlane: one lane per rank of the first finding's communicator (at
 * most NSP_HTML_LANES, the finding's ranks kept), one column per
 * collective seq around the finding's (seq - NSP_HTML_BEFORE to seq +
 * NSP_HTML_AFTER), each call a box in its seq's column: columns by seq,
 * not by time, since the analysis aligns calls by seq, the clocks of
 * hosts are skewed, and a call's CPU time spans microseconds to hours; a
 * box's tooltip gives its times.  The calls come from nsp_job_calls
 * (nsp_analyze.h), the traces read again through the analyzer. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncclspy/trace.h"
#include "nsp_config.h"
#include "nsp_escape.h"
#include "nsp_names.h"
#include "nsp_nccl_settings.h"
#include "nsp_report.h"

/* Lanes drawn at most (ranks of the communicator), seqs shown before and
 * after the finding's, rows of a table before it folds (<details>). */
#define NSP_HTML_LANES 16
#define NSP_HTML_BEFORE 5
#define NSP_HTML_AFTER 3
#define NSP_HTML_ROWS 64
/* Distinct values an environment row lists before "... and N more". */
#define NSP_HTML_VALUES 8

struct page {
  FILE *out;
  const struct nsp_job *job;
  int oom;
};

/* A string from the traces (or built from them), escaped. */
static void h(struct page *pg, const char *s) {
  if (nsp_put_html(pg->out, s, SIZE_MAX) < 0) pg->oom = 1;
}

/* What a writer of the text report wrote into a memory stream. */
struct capture {
  char *buf;
  size_t len;
  FILE *f;
};

static FILE *cap_open(struct page *pg, struct capture *c) {
  c->buf = NULL;
  c->len = 0;
  c->f = open_memstream(&c->buf, &c->len);
  if (!c->f) pg->oom = 1;
  return c->f;
}

/* Closes c, writes what it holds escaped, without up to `strip` leading
 * spaces on each line and without a final newline, and frees it. */
static void cap_put(struct page *pg, struct capture *c, int strip) {
  if (!c->f) return;
  if (fclose(c->f) != 0 || !c->buf) {
    pg->oom = 1;
    free(c->buf);
    return;
  }
  while (c->len && c->buf[c->len - 1] == '\n') c->buf[--c->len] = 0;
  for (char *line = c->buf; line && *line;) {
    char *nl = strchr(line, '\n');
    if (nl) *nl = 0;
    int k = 0;
    while (k < strip && line[k] == ' ') k++;
    h(pg, line + k);
    if (nl) fputc('\n', pg->out);
    line = nl ? nl + 1 : NULL;
  }
  free(c->buf);
}

static const char nsp_html_css[] =
    "body{font:15px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,'DejaVu Sans',sans-serif;margin:0;"
    "background:#f4f5f7;color:#1d2330}\n"
    "main{max-width:1400px;margin:0 auto;padding:0 24px 48px}\n"
    "header.top{padding:22px 24px 18px;border-bottom:4px solid #c62828;background:#fff}\n"
    "header.top.warn{border-color:#e0a100}header.top.ok{border-color:#2e7d32}\n"
    "header.top .meta{color:#5b6475;font-size:13px;letter-spacing:.02em;max-width:1400px;margin:0 auto}\n"
    "header.top h1{font-size:24px;line-height:1.3;margin:6px auto 8px;max-width:1400px;color:#b71c1c}\n"
    "header.top.warn h1{color:#8a5a00}header.top.ok h1{color:#1b5e20}\n"
    "header.top pre{max-width:1400px;margin:0 auto}\n"
    "h2{font-size:18px;margin:28px 0 10px;padding-bottom:4px;border-bottom:1px solid #d5d9e0}\n"
    "section{margin-top:8px}\n"
    "pre{font:12.5px/1.4 ui-monospace,'DejaVu Sans Mono',Menlo,Consolas,monospace;white-space:pre-wrap;"
    "word-break:break-word;margin:6px 0}\n"
    "code,.mono{font-family:ui-monospace,'DejaVu Sans Mono',Menlo,Consolas,monospace;font-size:13px}\n"
    ".card{background:#fff;border:1px solid #d5d9e0;border-radius:6px;padding:12px 16px;margin:12px 0}\n"
    ".card>p:first-child{margin-top:0}.card>p:last-child{margin-bottom:0}\n"
    ".finding{border-left:6px solid #c62828}.finding.later{border-left-color:#9aa3b2}\n"
    ".finding.env{border-left-color:#e0a100}\n"
    ".finding h3{font-size:15px;margin:0 0 6px;font-weight:600}\n"
    ".kind{display:inline-block;background:#c62828;color:#fff;border-radius:4px;padding:0 7px;"
    "font-family:ui-monospace,'DejaVu Sans Mono',monospace;font-size:13px}\n"
    ".later .kind{background:#6b7385}.env .kind{background:#b07d00}\n"
    ".hint{background:#eef4ff;border-radius:4px;padding:6px 10px;margin:8px 0 0}\n"
    ".summary.caveat{border-left:6px solid #e0a100}\n"
    "table{border-collapse:collapse;background:#fff;font-size:13.5px;width:100%}\n"
    "th,td{border:1px solid #d5d9e0;padding:4px 8px;text-align:left;vertical-align:top}\n"
    "th{background:#eceff3;font-weight:600}\n"
    "tr.bad td{background:#fdecea}tr.differs td{background:#fff6db}tr.bad td:first-child{"
    "box-shadow:inset 4px 0 #c62828}tr.differs td:first-child{box-shadow:inset 4px 0 #e0a100}\n"
    ".val{display:inline-block;margin:0 10px 2px 0}.val .r{color:#5b6475}\n"
    ".unset{color:#8a93a3;font-style:italic}\n"
    ".lane{background:#fff;border:1px solid #d5d9e0;border-radius:6px;padding:10px;overflow-x:auto}\n"
    ".lane svg{display:block;max-width:100%;height:auto}\n"
    ".caption{color:#4a5263;font-size:13px;margin:6px 2px}\n"
    ".legend{display:flex;flex-wrap:wrap;gap:18px;font-size:13px;color:#333;margin:8px 2px 0}\n"
    ".legend span{display:inline-flex;align-items:center;gap:6px}\n"
    "details>summary{cursor:pointer;color:#34495e;font-size:13.5px}\n"
    "footer{color:#7a8394;font-size:12px;margin-top:36px}\n";

/* --- findings ---------------------------------------------------------- */

static void put_finding(struct page *pg, size_t i) {
  const struct nsp_job *job = pg->job;
  const struct nsp_finding *f = nsp_job_finding(job, i);
  FILE *o = pg->out;
  const char *cls = nsp_finding_kind_is_env(f->kind) ? " env" : f->cause != SIZE_MAX ? " later" : "";
  fprintf(o, "<article class=\"card finding%s\" id=\"finding-%zu\">\n<h3>", cls, i + 1);
  /* The text report's title, "[1] KIND" set apart. */
  char lead[96];
  int ll = snprintf(lead, sizeof lead, "[%zu] %s", i + 1, nsp_finding_kind_name(f->kind));
  struct capture c;
  if (cap_open(pg, &c)) {
    nsp_report_put_finding_title(c.f, job, i);
    if (fclose(c.f) == 0 && c.buf) {
      size_t k = ll > 0 && (size_t)ll <= c.len && !strncmp(c.buf, lead, (size_t)ll) ? (size_t)ll : 0;
      if (k) {
        fprintf(o, "%.*s <span class=\"kind\">", (int)strcspn(lead, " "), lead);
        h(pg, nsp_finding_kind_name(f->kind));
        fprintf(o, "</span>");
      }
      h(pg, c.buf + k);
    } else {
      pg->oom = 1;
    }
    free(c.buf);
  }
  fprintf(o, "</h3>\n<p class=\"message\">");
  h(pg, f->message);
  fprintf(o, "</p>\n<table class=\"sides\"><tr><th>side</th><th>ranks</th><th>what they did</th></tr>\n");
  for (size_t s = 0; s < f->nsides; s++) {
    char rb[320];
    nsp_format_side_ranks(rb, sizeof rb, job, f, &f->sides[s]);
    int odd = 0;
    for (size_t p = 0; p < f->sides[s].nranks && !odd; p++)
      for (size_t k = 0; k < f->nodd && !odd; k++) odd = f->odd_ranks[k] == f->sides[s].ranks[p];
    fprintf(o, "<tr%s><td>side %zu</td><td class=\"mono\">", odd ? " class=\"bad\"" : "", s + 1);
    h(pg, rb);
    fprintf(o, "</td><td class=\"mono\">");
    h(pg, f->sides[s].text);
    fprintf(o, "</td></tr>\n");
  }
  fprintf(o, "</table>\n<details open><summary>processes and call sites</summary><pre>");
  if (cap_open(pg, &c)) {
    for (size_t s = 0; s < f->nsides; s++) nsp_report_put_side(c.f, job, f, s);
    cap_put(pg, &c, 4);
  }
  fprintf(o, "</pre></details>\n<p class=\"hint\"><b>hint:</b> ");
  size_t same = nsp_report_same_hint(job, i);
  if (same != SIZE_MAX) fprintf(o, "the same as <a href=\"#finding-%zu\">[%zu]</a>'s", same + 1, same + 1);
  else h(pg, f->hint);
  fprintf(o, "</p>\n</article>\n");
}

/* --- how each process ended ------------------------------------------- */

/* "rank 3", "job rank 3", "no rank": how the text report's Traces section
 * labels a process. */
static void trace_label(const struct nsp_job *job, const struct nsp_trace_info *t, char *buf, size_t len) {
  if (!t->joined) snprintf(buf, len, "no rank");
  else if (t->rank < 0) snprintf(buf, len, "rank ?");
  else snprintf(buf, len, "%s %d", nsp_job_ranks_differ(job) ? "job rank" : "rank", t->rank);
}

static void put_processes(struct page *pg) {
  const struct nsp_job *job = pg->job;
  FILE *o = pg->out;
  size_t nt = nsp_job_ntraces(job);
  fprintf(o, "<section id=\"processes\"><h2>How each process ended (%zu trace%s)</h2>\n", nt, nt == 1 ? "" : "s");
  if (nt > NSP_HTML_ROWS) fprintf(o, "<details><summary>%zu processes</summary>\n", nt);
  fprintf(o, "<table><tr><th>process</th><th>host</th><th>pid</th><th>NCCL</th><th>records</th>"
             "<th>how it ended</th><th>trace file</th></tr>\n");
  for (size_t i = 0; i < nt; i++) {
    const struct nsp_trace_info *t = nsp_job_trace(job, i);
    char lb[48], vb[32], eb[256];
    trace_label(job, t, lb, sizeof lb);
    int st = t->end.state;
    int bad = st == NSP_END_KILLED || st == NSP_END_CRASHED || t->ninflight || t->problem || t->dropped ||
              (st == NSP_END_EXITED && t->end.exit_status > 0);
    fprintf(o, "<tr%s><td>", bad ? " class=\"bad\"" : st == NSP_END_RUNNING ? " class=\"differs\"" : "");
    h(pg, lb);
    fprintf(o, "</td><td>");
    h(pg, t->host);
    fprintf(o, "</td><td>%" PRIu32 "</td><td>%s</td><td>%" PRIu64 "</td><td>", t->pid,
            nsp_nccl_version_str(t->nccl_version, vb, sizeof vb), t->records);
    if (nsp_format_end(eb, sizeof eb, job, &t->end)) h(pg, eb);
    else fprintf(o, "<span class=\"unset\">not recorded (trace format 1.%u)</span>", t->end.format_minor);
    if (t->end.unslotted)
      fprintf(o, "; the calls in flight of %" PRIu32 " threads are not known", t->end.unslotted);
    for (size_t k = 0; k < t->ninflight; k++) {
      struct capture c;
      fprintf(o, "<br>");
      if (cap_open(pg, &c)) {
        nsp_report_put_inflight(c.f, job, t, k);
        cap_put(pg, &c, 0);
      }
    }
    if (t->problem) {
      fprintf(o, "<br>damaged: ");
      h(pg, t->problem);
    }
    if (t->dropped) fprintf(o, "<br>dropped: %" PRIu64 " records", t->dropped);
    fprintf(o, "</td><td class=\"mono\">");
    h(pg, t->path);
    fprintf(o, "</td></tr>\n");
  }
  fprintf(o, "</table>\n%s</section>\n", nt > NSP_HTML_ROWS ? "</details>\n" : "");
}

/* --- the environment per rank ----------------------------------------- */

/* One row of the environment table: a variable (or a PROCESS record
 * field) and each trace's value. */
struct env_row {
  const char *name;  /* "NCCL_ALGO", "NCCL version" */
  const char **vals; /* per trace; NULL unset */
  int finding;       /* an environment finding names it */
};

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* The finding kind that names a PROCESS field row; -1 none. */
static int field_kind(const char *name) {
  if (!strcmp(name, "NCCL version")) return NSP_FIND_ENV_NCCL_VERSION;
  if (!strcmp(name, "libnccl")) return NSP_FIND_ENV_NCCL_PATH;
  if (!strcmp(name, "CUDA driver")) return NSP_FIND_ENV_DRIVER;
  if (!strcmp(name, "CUDA runtime")) return NSP_FIND_ENV_RUNTIME;
  return -1;
}

/* Variables whose values differ per process by design (not highlighted):
 * ranks and node ids, the NCCL settings the table calls rank-specific. */
static int per_process(const char *name) {
  return strstr(name, "RANK") || !strcmp(name, "SLURM_LOCALID") || !strcmp(name, "SLURM_NODEID") ||
         (!strncmp(name, "NCCL_", 5) && nsp_nccl_setting_class(name, NULL) == NSP_SETTING_RANK);
}

/* The row's values, each once with the job ranks that hold it. */
static void put_env_values(struct page *pg, const struct env_row *r, size_t nt, int *ranks) {
  const struct nsp_job *job = pg->job;
  FILE *o = pg->out;
  size_t shown = 0, more = 0;
  for (size_t i = 0; i < nt; i++) {
    const char *v = r->vals[i];
    int first = 1;
    for (size_t k = 0; k < i && first; k++)
      first = !(v ? r->vals[k] && !strcmp(r->vals[k], v) : !r->vals[k]);
    if (!first) continue;
    if (shown == NSP_HTML_VALUES) {
      more++;
      continue;
    }
    size_t n = 0, norank = 0;
    for (size_t k = i; k < nt; k++) {
      if (v ? !(r->vals[k] && !strcmp(r->vals[k], v)) : r->vals[k] != NULL) continue;
      int jr = nsp_job_trace(job, k)->rank;
      if (jr >= 0) ranks[n++] = jr;
      else norank++;
    }
    for (size_t a = 1; a < n; a++) /* insertion sort: ranks come nearly sorted */
      for (size_t b = a; b > 0 && ranks[b - 1] > ranks[b]; b--) {
        int t = ranks[b];
        ranks[b] = ranks[b - 1];
        ranks[b - 1] = t;
      }
    char rb[256];
    nsp_format_ranks(rb, sizeof rb, ranks, n);
    fprintf(o, "<span class=\"val\">");
    if (v) {
      fprintf(o, "<code>");
      h(pg, v);
      fprintf(o, "</code>");
    } else {
      fprintf(o, "<span class=\"unset\">unset</span>");
    }
    fprintf(o, " <span class=\"r\">(");
    if (n) {
      fprintf(o, "rank%s ", n == 1 && !strchr(rb, '-') && !strchr(rb, ',') ? "" : "s");
      h(pg, rb);
    }
    if (norank) fprintf(o, "%s%zu without a rank", n ? ", " : "", norank);
    fprintf(o, ")</span></span>");
    shown++;
  }
  if (more) fprintf(o, "<span class=\"val\">... and %zu more value%s</span>", more, more == 1 ? "" : "s");
}

static void put_environment(struct page *pg) {
  const struct nsp_job *job = pg->job;
  FILE *o = pg->out;
  size_t nt = nsp_job_ntraces(job);
  /* Every variable name any snapshot holds, once, sorted. */
  size_t nn = 0, cap = 0;
  for (size_t i = 0; i < nt; i++) cap += nsp_job_trace(job, i)->nenv;
  const char **names = malloc((cap + 1) * sizeof *names);
  struct env_row *rows = NULL;
  const char **vals = NULL;
  char *text = NULL;
  int *ranks = NULL;
  if (!names) {
    pg->oom = 1;
    goto out;
  }
  for (size_t i = 0; i < nt; i++) {
    const struct nsp_trace_info *t = nsp_job_trace(job, i);
    for (size_t k = 0; k < t->nenv; k++) names[nn++] = t->env[2 * k];
  }
  qsort(names, nn, sizeof *names, cmp_str);
  size_t u = 0;
  for (size_t k = 0; k < nn; k++)
    if (!u || strcmp(names[u - 1], names[k])) names[u++] = names[k];
  nn = u;
  /* 4 PROCESS fields, then the variables; values per trace; field texts. */
  rows = malloc((nn + 4) * sizeof *rows);
  vals = calloc((nn + 4) * (nt ? nt : 1), sizeof *vals);
  text = malloc(nt * 4 * 32 + 1);
  ranks = malloc((nt + 1) * sizeof *ranks);
  if (!rows || !vals || !text || !ranks) {
    pg->oom = 1;
    goto out;
  }
  static const char *const fields[4] = {"NCCL version", "libnccl", "CUDA driver", "CUDA runtime"};
  size_t nr = 0;
  for (size_t k = 0; k < 4 + nn; k++) {
    struct env_row *r = &rows[nr];
    r->name = k < 4 ? fields[k] : names[k - 4];
    r->vals = vals + nr * nt;
    r->finding = 0;
    int any = 0;
    for (size_t i = 0; i < nt; i++) {
      const struct nsp_trace_info *t = nsp_job_trace(job, i);
      char *tb = text + (i * 4 + (k < 4 ? k : 0)) * 32;
      const char *v = NULL;
      if (k == 0 && t->nccl_version) v = nsp_nccl_version_str(t->nccl_version, tb, 32);
      else if (k == 1 && t->nccl_path[0]) v = t->nccl_path;
      else if ((k == 2 || k == 3) && (k == 2 ? t->driver_version : t->runtime_version)) {
        int32_t ver = k == 2 ? t->driver_version : t->runtime_version;
        snprintf(tb, 32, "%d.%d", ver / 1000, ver % 1000 / 10);
        v = tb;
      } else if (k >= 4) {
        for (size_t e = 0; e < t->nenv && !v; e++)
          if (!strcmp(t->env[2 * e], r->name)) v = t->env[2 * e + 1];
      }
      r->vals[i] = v;
      any |= v != NULL;
    }
    if (!any) continue;
    for (size_t fi = 0; fi < nsp_job_nfindings(job); fi++) {
      const struct nsp_finding *f = nsp_job_finding(job, fi);
      if (!nsp_finding_kind_is_env(f->kind)) continue;
      if (f->kind == field_kind(r->name) || (f->setting && !strcmp(f->setting, r->name))) r->finding = 1;
    }
    nr++;
  }
  fprintf(o, "<section id=\"environment\"><h2>Environment per rank</h2>\n"
             "<p class=\"caption\">What each process's trace recorded (its NCCL, CUDA and the variables the shim "
             "keeps: NCCL_*, CUDA_*, TORCH_NCCL_*, launcher and rank variables), each value once with the job "
             "ranks that hold it. Red: a value an environment finding names; yellow: values that differ between "
             "processes (rank and node numbers, which differ by design, are not marked).</p>\n");
  if (nr > NSP_HTML_ROWS) fprintf(o, "<details><summary>%zu variables</summary>\n", nr);
  fprintf(o, "<table><tr><th>variable</th><th>values (job ranks)</th></tr>\n");
  for (size_t k = 0; k < nr; k++) {
    const struct env_row *r = &rows[k];
    int differs = 0;
    for (size_t i = 1; i < nt && !differs; i++)
      differs = r->vals[i] ? !r->vals[0] || strcmp(r->vals[0], r->vals[i]) : r->vals[0] != NULL;
    const char *cls = r->finding ? " class=\"bad\"" : differs && !per_process(r->name) ? " class=\"differs\"" : "";
    fprintf(o, "<tr%s><td class=\"mono\">", cls);
    h(pg, r->name);
    fprintf(o, "</td><td>");
    put_env_values(pg, r, nt, ranks);
    fprintf(o, "</td></tr>\n");
  }
  fprintf(o, "</table>\n%s</section>\n", nr > NSP_HTML_ROWS ? "</details>\n" : "");
out:
  free(names);
  free(rows);
  free(vals);
  free(text);
  free(ranks);
}

/* --- the swimlane ------------------------------------------------------ */

/* One call on a lane. */
struct lane_call {
  struct nsp_call call; /* api, seq, count, dtype, redop, peer; time_ns its entry */
  int rank;             /* its rank in the communicator */
  int64_t exit_ns;      /* when it returned (wall clock); 0 never, or unknown */
  int returned;         /* 1 returned, 0 never returned (in flight), -1 unknown */
};

/* What the finding says of a (rank, seq) slot. */
enum { MARK_NONE, MARK_CALL, MARK_MISSING, MARK_WAITING };

struct lanes {
  const struct nsp_finding *f;
  uint64_t lo, hi;      /* seqs shown */
  int ranks[NSP_HTML_LANES];
  size_t nranks;
  size_t hidden;        /* ranks of the communicator not drawn */
  size_t skipped;       /* traces that could not be read again */
  struct lane_call *calls;
  size_t ncalls, cap;
};

static int lane_of(const struct lanes *L, int rank) {
  for (size_t i = 0; i < L->nranks; i++)
    if (L->ranks[i] == rank) return (int)i;
  return -1;
}

static void lanes_add_rank(struct lanes *L, int rank) {
  if (rank < 0 || L->nranks >= NSP_HTML_LANES || lane_of(L, rank) >= 0) return;
  L->ranks[L->nranks++] = rank;
}

static int cmp_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

/* The lanes: the finding's odd ranks, one rank of each side, then the
 * communicator's ranks from 0, NSP_HTML_LANES at most, ascending. */
static void lanes_pick(struct lanes *L) {
  const struct nsp_finding *f = L->f;
  const struct nsp_comm_info *c = f->comm;
  /* Odd ranks of a finding that names job ranks ("error") are not the
   * communicator's: its origin side comes first instead. */
  for (size_t i = 0; i < f->nodd && !nsp_finding_job_ranks(f); i++) lanes_add_rank(L, f->odd_ranks[i]);
  for (size_t s = 0; s < f->nsides; s++)
    if (f->sides[s].nranks) lanes_add_rank(L, nsp_finding_job_ranks(f) ? f->sides[s].procs[0].comm_rank : f->sides[s].ranks[0]);
  for (size_t s = 0; s < f->nsides; s++)
    for (size_t p = 0; p < f->sides[s].nranks; p++)
      lanes_add_rank(L, nsp_finding_job_ranks(f) ? f->sides[s].procs[p].comm_rank : f->sides[s].ranks[p]);
  int n = c->nranks > 0 ? c->nranks : 0;
  for (int r = 0; r < n; r++) lanes_add_rank(L, r);
  for (size_t i = 0; i < c->ntraced; i++) lanes_add_rank(L, c->ranks[i]);
  qsort(L->ranks, L->nranks, sizeof *L->ranks, cmp_int);
  size_t total = n > 0 ? (size_t)n : c->ntraced;
  L->hidden = total > L->nranks ? total - L->nranks : 0;
}

static struct lane_call *lanes_find(const struct lanes *L, int rank, uint64_t seq) {
  for (size_t i = 0; i < L->ncalls; i++)
    if (L->calls[i].rank == rank && L->calls[i].call.seq == seq) return &L->calls[i];
  return NULL;
}

static int lanes_push(struct lanes *L, const struct lane_call *lc) {
  if (lanes_find(L, lc->rank, lc->call.seq)) return 0;
  if (L->ncalls == L->cap) {
    size_t cap = L->cap ? 2 * L->cap : 64;
    struct lane_call *n = realloc(L->calls, cap * sizeof *n);
    if (!n) return -1;
    L->calls = n;
    L->cap = cap;
  }
  L->calls[L->ncalls++] = *lc;
  return 0;
}

/* The calls of the lanes' ranks in the window: collectives of the
 * finding's communicator, read again from the traces (nsp_job_calls). */
static int lanes_fill(struct lanes *L, const struct nsp_job *job) {
  const struct nsp_finding *f = L->f;
  const struct nsp_comm_info *c = f->comm;
  struct nsp_seq_window win = {f->comm_id, L->lo, L->hi};
  /* Only the lanes' processes' traces, where their job ranks are known. */
  int jr[NSP_HTML_LANES];
  size_t njr = 0;
  for (size_t i = 0; i < L->nranks; i++)
    for (size_t k = 0; k < c->ntraced; k++)
      if (c->ranks[k] == L->ranks[i]) {
        if (!c->job_ranks || c->job_ranks[k] < 0) njr = SIZE_MAX;
        else if (njr != SIZE_MAX) jr[njr++] = c->job_ranks[k];
      }
  struct nsp_calls_filter flt = {.comms = &f->comm_id, .ncomms = 1, .windows = &win, .nwindows = 1};
  if (njr != SIZE_MAX && njr) {
    flt.ranks = jr;
    flt.nranks = njr;
  }
  struct nsp_calls *it;
  int r = nsp_job_calls_open(job, &flt, &it);
  if (r < 0) return r == NSP_AN_ENOMEM ? -1 : 0;
  const struct nsp_call_event *ev;
  while ((r = nsp_calls_next(it, &ev)) == 1) {
    if (nsp_api_kind(ev->call.api) != NSP_K_COLL || ev->comm_rank < 0 || lane_of(L, ev->comm_rank) < 0) continue;
    struct lane_call lc = {.call = ev->call, .rank = ev->comm_rank, .exit_ns = ev->exit_ns,
                           .returned = ev->exit_ns ? 1 : 0};
    struct lane_call *had = lanes_find(L, lc.rank, lc.call.seq);
    /* A call NCCL refused takes no seq: the accepted one at it is kept. */
    if (had && had->call.result && !lc.call.result) *had = lc;
    else if (!had && lanes_push(L, &lc) < 0) r = NSP_AN_ENOMEM;
    if (r < 0) break;
  }
  L->skipped = nsp_calls_skipped(it, NULL);
  nsp_calls_close(it);
  return r < 0 ? -1 : 0;
}

/* What the finding says of rank's call at seq. */
static int lanes_mark(const struct lanes *L, int rank, uint64_t seq) {
  const struct nsp_finding *f = L->f;
  int shape = nsp_finding_kind_info(f->kind)->sides;
  for (size_t s = 0; s < f->nsides; s++) {
    const struct nsp_side *sd = &f->sides[s];
    for (size_t p = 0; p < sd->nranks; p++) {
      const struct nsp_proc *pr = &sd->procs[p];
      int r = nsp_finding_job_ranks(f) ? pr->comm_rank : pr->rank;
      if (r != rank) continue;
      if (shape == NSP_SIDES_BY_ROLE) {
        if (seq != f->seq) return MARK_NONE;
        if (sd->role == NSP_ROLE_NOT_ARRIVED) return MARK_MISSING;
        if (sd->role == NSP_ROLE_WAITING) return MARK_WAITING;
        if (sd->role == NSP_ROLE_FAILED) return MARK_CALL;
        return MARK_NONE;
      }
      if (shape == NSP_SIDES_BY_LAST_SEQ) {
        int odd = 0;
        for (size_t k = 0; k < f->nodd; k++) odd |= f->odd_ranks[k] == rank;
        return odd && seq == sd->call.seq + 1 ? MARK_MISSING : MARK_NONE;
      }
      if (shape == NSP_SIDES_ORIGIN_BY_RESULT) return s == 0 && seq == f->seq ? MARK_CALL : MARK_NONE;
      if (seq != f->seq) return MARK_NONE;
      if (!f->nodd) return MARK_CALL;
      for (size_t k = 0; k < f->nodd; k++)
        if (f->odd_ranks[k] == rank) return MARK_CALL;
      return MARK_NONE;
    }
  }
  return MARK_NONE;
}

/* SVG geometry, px. */
#define LW 150 /* the lane labels */
#define CW 150 /* a seq's column */
#define LH 50  /* a lane */
#define TOP 30 /* the seq labels */
#define BH 38  /* a box */
#define TAIL 150 /* after the last column: where calls that never ended run to */

static void svg_text(struct page *pg, int x, int y, const char *attrs, const char *s) {
  fprintf(pg->out, "<text x=\"%d\" y=\"%d\" %s>", x, y, attrs);
  h(pg, s);
  fprintf(pg->out, "</text>");
}

static void put_rel_time(char *buf, size_t len, const struct nsp_job *job, int64_t t) {
  if (!t) {
    snprintf(buf, len, "time unknown");
    return;
  }
  double d = (double)(int64_t)((uint64_t)t - (uint64_t)nsp_job_start_ns(job)) / 1e9;
  snprintf(buf, len, "%s%.6f s", d < 0 ? "-" : "+", d < 0 ? -d : d);
}

static void put_box(struct page *pg, const struct lanes *L, int lane, uint64_t seq, const struct lane_call *lc) {
  FILE *o = pg->out;
  const struct nsp_job *job = pg->job;
  int mark = lanes_mark(L, L->ranks[lane], seq);
  int x = LW + (int)(seq - L->lo) * CW + 6, y = TOP + lane * LH + (LH - BH) / 2, w = CW - 12;
  char tb[512], cb[256], when[64];
  if (!lc) {
    /* Nothing at this seq: dashed and empty at its slot. */
    int any = 0;
    for (size_t i = 0; i < L->ncalls && !any; i++) any = L->calls[i].call.seq == seq;
    if (!any && mark != MARK_MISSING) return;
    const char *what = mark != MARK_MISSING                                      ? "no call recorded"
                       : nsp_finding_kind_info(L->f->kind)->sides == NSP_SIDES_BY_ROLE ? "did not arrive"
                                                                                        : "did not call it";
    fprintf(o, "<g class=\"missing%s\"><title>rank %d, seq %" PRIu64 ": %s</title>", mark ? " hl" : "", L->ranks[lane],
            seq, what);
    fprintf(o, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" rx=\"4\" fill=\"none\" stroke=\"%s\" "
               "stroke-width=\"%s\" stroke-dasharray=\"6 4\"/>",
            x, y, w, BH, mark ? "#c62828" : "#9aa3b2", mark ? "2.5" : "1.5");
    svg_text(pg, x + w / 2, y + BH / 2 + 4, mark ? "text-anchor=\"middle\" class=\"mt hl\"" : "text-anchor=\"middle\" class=\"mt\"",
             what);
    fprintf(o, "</g>\n");
    return;
  }
  const struct nsp_call *c = &lc->call;
  /* A call that never returned, or (the finding's waiting rank) never
   * completed: to the right edge. */
  int open = lc->returned == 0 || mark == MARK_WAITING;
  if (open) w = LW + (int)(L->hi - L->lo + 1) * CW + TAIL - 6 - x;
  nsp_format_call(cb, sizeof cb, c);
  put_rel_time(when, sizeof when, job, c->time_ns);
  int n = snprintf(tb, sizeof tb, "rank %d, seq %" PRIu64 ": %s, entered at %s", lc->rank, seq, cb, when);
  if (lc->returned > 0 && lc->exit_ns && n > 0 && (size_t)n < sizeof tb)
    n += snprintf(tb + n, sizeof tb - (size_t)n, ", returned after %.6f s", (double)(lc->exit_ns - c->time_ns) / 1e9);
  else if (lc->returned == 0 && n > 0 && (size_t)n < sizeof tb)
    n += snprintf(tb + n, sizeof tb - (size_t)n, ", never returned");
  if (c->done >= 0 && n > 0 && (size_t)n < sizeof tb)
    snprintf(tb + n, sizeof tb - (size_t)n, c->done ? ", completed" : ", never completed");
  fprintf(o, "<g class=\"call%s\"><title>", mark ? " hl" : "");
  h(pg, tb);
  fprintf(o, "</title><rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" rx=\"4\" fill=\"%s\" stroke=\"%s\" "
             "stroke-width=\"%s\"/>",
          x, y, w, BH, mark ? "#fde3e1" : "#e4ecf7", mark ? "#c62828" : "#7f93b0", mark ? "3" : "1");
  /* "all-reduce" / "1048576 x bfloat16" (the report's words). */
  char l2[96], db[32];
  if (nsp_api_kind(c->api) == NSP_K_COLL)
    snprintf(l2, sizeof l2, "%" PRIu64 " x %s", c->count, nsp_dtype_name(c->dtype, db, sizeof db));
  else
    snprintf(l2, sizeof l2, "nccl%s", nsp_api_name(c->api));
  svg_text(pg, x + 8, y + 16, "class=\"op\"", nsp_op_name(c->api));
  svg_text(pg, x + 8, y + 31, "class=\"ar\"", l2);
  if (open) {
    const char *s = lc->returned == 0 ? "never returned" : c->done == 0 ? "never completed" : "did not complete";
    svg_text(pg, x + w - 8, y + 24, "text-anchor=\"end\" class=\"mt hl\"", s);
  }
  fprintf(o, "</g>\n");
}

static void put_swimlane(struct page *pg) {
  const struct nsp_job *job = pg->job;
  FILE *o = pg->out;
  fprintf(o, "<section id=\"swimlane\"><h2>Calls around the first finding</h2>\n");
  const struct nsp_finding *f = nsp_job_nfindings(job) ? nsp_job_finding(job, 0) : NULL;
  if (!f || !f->comm || !f->seq || nsp_finding_kind_info(f->kind)->sides == NSP_SIDES_SEND_RECV) {
    fprintf(o, "<p class=\"caption\">%s</p></section>\n",
            !f ? "No finding: nothing to draw."
               : "The first finding names no collective seq of a communicator (its kind is about send/recv, "
                 "a process or the environment): no swimlane; its sides above say what each rank did.");
    return;
  }
  struct lanes L = {.f = f};
  L.lo = f->seq > NSP_HTML_BEFORE ? f->seq - NSP_HTML_BEFORE : 1;
  L.hi = f->seq + NSP_HTML_AFTER;
  lanes_pick(&L);
  if (lanes_fill(&L, job) < 0) pg->oom = 1;
  /* Up to the last seq drawn, at least the finding's. */
  uint64_t last = f->seq;
  for (size_t i = 0; i < L.ncalls; i++)
    if (L.calls[i].call.seq > last) last = L.calls[i].call.seq;
  if (last < L.hi) L.hi = last;
  int ncols = (int)(L.hi - L.lo + 1);
  int width = LW + ncols * CW + TAIL, height = TOP + (int)L.nranks * LH + 8;
  fprintf(o, "<div class=\"lane\"><svg role=\"img\" width=\"%d\" height=\"%d\" "
             "viewBox=\"0 0 %d %d\" font-family=\"ui-monospace,'DejaVu Sans Mono',monospace\">\n",
          width, height, width, height);
  fprintf(o, "<style>.op{font-size:13px;font-weight:700;fill:#1d2330}.ar{font-size:11.5px;fill:#34405a}"
             ".mt{font-size:12px;fill:#6b7385}.mt.hl{fill:#c62828;font-weight:700}"
             ".ln{font-size:13px;fill:#1d2330}.lx{font-size:11px;fill:#6b7385}.sq{font-size:12px;fill:#4a5263}"
             ".sq.hl{fill:#c62828;font-weight:700}</style>\n");
  /* The finding's column (stopped-early: the first seq its ranks did not
   * call), and the seq labels. */
  uint64_t band = f->seq;
  if (nsp_finding_kind_info(f->kind)->sides == NSP_SIDES_BY_LAST_SEQ && f->seq < L.hi) band = f->seq + 1;
  int fx = LW + (int)(band - L.lo) * CW;
  fprintf(o, "<rect x=\"%d\" y=\"4\" width=\"%d\" height=\"%d\" fill=\"#fff1f0\" stroke=\"#f3b5b0\"/>\n", fx, CW,
          height - 6);
  for (int k = 0; k < ncols; k++) {
    char sb[48];
    uint64_t seq = L.lo + (uint64_t)k;
    snprintf(sb, sizeof sb, "seq %" PRIu64, seq);
    svg_text(pg, LW + k * CW + CW / 2, 20, seq == band ? "text-anchor=\"middle\" class=\"sq hl\"" : "text-anchor=\"middle\" class=\"sq\"", sb);
  }
  /* The lanes: label, line, boxes. */
  for (size_t i = 0; i < L.nranks; i++) {
    int y = TOP + (int)i * LH;
    char lb[64];
    snprintf(lb, sizeof lb, "rank %d", L.ranks[i]);
    int traced = 0, job_rank = -1;
    for (size_t k = 0; k < f->comm->ntraced; k++)
      if (f->comm->ranks[k] == L.ranks[i]) {
        traced = 1;
        if (f->comm->job_ranks) job_rank = f->comm->job_ranks[k];
      }
    /* The process's job rank under its communicator rank, where they differ
     * (a split communicator), as the headline names it. */
    char jb[48] = "";
    if (traced && job_rank >= 0 && job_rank != L.ranks[i]) snprintf(jb, sizeof jb, "job rank %d", job_rank);
    if (i % 2) fprintf(o, "<rect x=\"0\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#f7f8fa\"/>\n", y, width, LH);
    svg_text(pg, 10, y + LH / 2 + (traced && !*jb ? 0 : -3), "class=\"ln\"", lb);
    if (!traced || *jb) svg_text(pg, 10, y + LH / 2 + 12, "class=\"lx\"", traced ? jb : "no trace");
    fprintf(o, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#c9cfd9\"/>\n", LW, y + LH / 2, width - 4,
            y + LH / 2);
    if (!traced) continue;
    for (uint64_t seq = L.lo; seq <= L.hi; seq++) put_box(pg, &L, (int)i, seq, lanes_find(&L, L.ranks[i], seq));
  }
  fprintf(o, "</svg></div>\n");
  fprintf(o, "<div class=\"legend\">"
             "<span><svg width=\"34\" height=\"18\"><rect x=\"1\" y=\"1\" width=\"32\" height=\"16\" rx=\"3\" "
             "fill=\"#e4ecf7\" stroke=\"#7f93b0\"/></svg>a call</span>"
             "<span><svg width=\"34\" height=\"18\"><rect x=\"1.5\" y=\"1.5\" width=\"31\" height=\"15\" rx=\"3\" "
             "fill=\"#fde3e1\" stroke=\"#c62828\" stroke-width=\"3\"/></svg>the finding's call</span>"
             "<span><svg width=\"34\" height=\"18\"><rect x=\"1.5\" y=\"1.5\" width=\"31\" height=\"15\" rx=\"3\" "
             "fill=\"none\" stroke=\"#c62828\" stroke-width=\"2\" stroke-dasharray=\"5 3\"/></svg>a call the "
             "finding says a rank did not make</span>"
             "<span><svg width=\"34\" height=\"18\"><rect x=\"1\" y=\"1\" width=\"32\" height=\"16\" rx=\"3\" "
             "fill=\"none\" stroke=\"#9aa3b2\" stroke-dasharray=\"5 3\"/></svg>no call recorded at that seq</span>"
             "<span><svg width=\"60\" height=\"18\"><rect x=\"1.5\" y=\"1.5\" width=\"57\" height=\"15\" rx=\"3\" "
             "fill=\"#fde3e1\" stroke=\"#c62828\" stroke-width=\"3\"/></svg>to the end: never returned or never "
             "completed</span></div>\n");
  fprintf(o, "<p class=\"caption\">Collectives on ");
  struct capture c;
  if (cap_open(pg, &c)) {
    nsp_report_put_comm(c.f, f->comm, f->comm_id);
    cap_put(pg, &c, 0);
  }
  fprintf(o, ", seq %" PRIu64 " to %" PRIu64 ", one column per seq: the calls of every rank at one seq line up, "
             "as the analysis compares them (columns are not a time axis: each box's tooltip gives its entry time "
             "relative to the job's start, and how long it took).",
          L.lo, L.hi);
  if (L.hidden)
    fprintf(o, " %zu more rank%s not shown (the finding's ranks are).", L.hidden, L.hidden == 1 ? "" : "s");
  if (L.skipped)
    fprintf(o, " %zu trace%s could not be read again: %s calls are not drawn (see the notes).", L.skipped,
            L.skipped == 1 ? "" : "s", L.skipped == 1 ? "its" : "their");
  fprintf(o, "</p>\n</section>\n");
  free(L.calls);
}

/* --- the page ----------------------------------------------------------- */

int nsp_report_html(const struct nsp_job *job, FILE *out) {
  struct page pg = {out, job, 0};
  size_t nt = nsp_job_ntraces(job), nc = nsp_job_ncomms(job), nf = nsp_job_nfindings(job), nn = nsp_job_nnotes(job);
  const struct nsp_job_caveats *cv = nsp_job_caveats(job);
  int unseen = cv->running || cv->unclean || cv->unknown_end || cv->inflight || cv->libnccl || cv->incomplete;
  const char *tone = nf ? "" : unseen ? " warn" : " ok";
  fprintf(out, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
               "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
               "<meta name=\"generator\" content=\"ncclspy %s\">\n<title>ncclspy: ",
          NSP_VERSION);
  h(&pg, nsp_job_headline(job));
  fprintf(out, "</title>\n<style>\n%s</style>\n</head>\n<body>\n", nsp_html_css);
  fprintf(out, "<header class=\"top%s\"><div class=\"meta\">ncclspy report: %zu trace%s, %zu communicator%s, %zu "
               "finding%s</div>\n<h1>",
          tone, nt, nt == 1 ? "" : "s", nc, nc == 1 ? "" : "s", nf, nf == 1 ? "" : "s");
  h(&pg, nsp_job_headline(job));
  fprintf(out, "</h1>\n");
  struct capture c;
  if (nf && cap_open(&pg, &c)) {
    fprintf(out, "<pre class=\"sites\">");
    nsp_report_put_headline_sites(c.f, job);
    cap_put(&pg, &c, 2);
    fprintf(out, "</pre>\n");
  }
  fprintf(out, "</header>\n<main>\n");
  put_swimlane(&pg);

  fprintf(out, "<section id=\"summary\"><h2>Summary</h2>\n<div class=\"card summary%s\">", unseen ? " caveat" : "");
  size_t nr = nsp_job_nruns(job), na = 0, ai = 0;
  for (size_t i = 0; i < nr; i++)
    if (nsp_job_run(job, i)->analyzed) na++, ai = na == 1 ? i : ai;
  if (nr > 1 && na == 1) {
    fprintf(out, "<p>Run: <code>");
    h(&pg, nsp_job_run(job, ai)->id);
    fprintf(out, "</code> (%s of %zu runs in these traces; the others are ignored: see the notes)</p>\n",
            ai == 0 ? "the newest" : "as asked, not the newest", nr);
  } else if (nr > 1) {
    fprintf(out, "<p>Run: all %zu runs in these traces, compared as one job (--run all)</p>\n", nr);
  }
  fprintf(out, "<p>");
  h(&pg, nsp_job_summary(job));
  fprintf(out, "</p></div>\n</section>\n");

  size_t nmain = 0;
  while (nmain < nf && !nsp_finding_kind_is_env(nsp_job_finding(job, nmain)->kind)) nmain++;
  if (nmain) fprintf(out, "<section id=\"findings\"><h2>Findings (likely cause first)</h2>\n");
  for (size_t i = 0; i < nmain; i++) put_finding(&pg, i);
  if (nmain) fprintf(out, "</section>\n");
  if (nf > nmain) fprintf(out, "<section id=\"environment-findings\"><h2>Environment (differences between the ranks)</h2>\n");
  for (size_t i = nmain; i < nf; i++) put_finding(&pg, i);
  if (nf > nmain) fprintf(out, "</section>\n");

  put_processes(&pg);
  put_environment(&pg);

  fprintf(out, "<section id=\"communicators\"><h2>Communicators (%zu)</h2>\n<table><tr><th>communicator</th>"
               "<th>ranks</th><th>traced</th><th>collective calls</th><th>last seq</th><th>send/recv calls</th>"
               "<th>made by</th></tr>\n", nc);
  for (size_t i = 0; i < nc; i++) {
    const struct nsp_comm_info *ci = nsp_job_comm(job, i);
    char rb[256];
    nsp_format_ranks_job(rb, sizeof rb, ci->ranks, ci->job_ranks, ci->ntraced);
    fprintf(out, "<tr><td class=\"mono\">%016" PRIx64, ci->id);
    if (ci->name[0]) {
      fprintf(out, " &quot;");
      h(&pg, ci->name);
      fprintf(out, "&quot;");
    }
    fprintf(out, "</td><td>");
    if (ci->nranks > 0) fprintf(out, "%d", ci->nranks);
    else fprintf(out, "?");
    fprintf(out, "</td><td>");
    h(&pg, ci->ntraced ? rb : "none");
    fprintf(out, "</td><td>%" PRIu64 "</td><td>%" PRIu64 "</td><td>%" PRIu64 "</td><td>", ci->ncoll, ci->max_seq,
            ci->np2p);
    if (ci->parent_id) fprintf(out, "split from %016" PRIx64 " color %d", ci->parent_id, ci->color);
    else if (ci->api >= 0) fprintf(out, "nccl%s", nsp_api_name(ci->api));
    fprintf(out, "</td></tr>\n");
  }
  fprintf(out, "</table>\n</section>\n");

  fprintf(out, "<section id=\"notes\"><h2>Notes (%zu)</h2>\n", nn);
  if (nn) {
    fprintf(out, "<ul>\n");
    for (size_t i = 0; i < nn; i++) {
      fprintf(out, "<li>");
      h(&pg, nsp_job_note(job, i));
      fprintf(out, "</li>\n");
    }
    fprintf(out, "</ul>\n");
  } else {
    fprintf(out, "<p class=\"caption\">None.</p>\n");
  }
  fprintf(out, "</section>\n<footer>ncclspy %s &middot; one self-contained file: no script, nothing fetched"
               "</footer>\n</main>\n</body>\n</html>\n",
          NSP_VERSION);
  fflush(out);
  return pg.oom || ferror(out) ? -1 : 0;
}
