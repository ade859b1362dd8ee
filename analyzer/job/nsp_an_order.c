/* nsp_an_order.c - the order of the findings, likely cause first: by
 * class (the kinds table), a chain of causes kept together root first,
 * then by time, communicator, seq and kind; creation order settles the
 * rest (docs/REPORT.md, "Order of findings").  Cause ids become indices. */
#include <stdlib.h>

#include "nsp_an_job.h"

static int cmp_finding(const void *pa, const void *pb) {
  const struct nsp_finding_priv *a = pa, *b = pb;
  if (a->order != b->order) return a->order < b->order ? -1 : 1;
  /* A chain of causes stays together, root first. */
  if (a->sort_time != b->sort_time) return a->sort_time < b->sort_time ? -1 : 1;
  if (a->depth != b->depth) return a->depth < b->depth ? -1 : 1;
  /* Unknown times (0) sort after known ones. */
  int64_t ta = a->pub.time_ns ? a->pub.time_ns : INT64_MAX, tb = b->pub.time_ns ? b->pub.time_ns : INT64_MAX;
  if (ta != tb) return ta < tb ? -1 : 1;
  if (a->pub.comm_id != b->pub.comm_id) return a->pub.comm_id < b->pub.comm_id ? -1 : 1;
  if (a->pub.seq != b->pub.seq) return a->pub.seq < b->pub.seq ? -1 : 1;
  if (a->pub.kind != b->pub.kind) return a->pub.kind < b->pub.kind ? -1 : 1;
  if (a->pub.src != b->pub.src) return a->pub.src < b->pub.src ? -1 : 1;
  if (a->pub.dst != b->pub.dst) return a->pub.dst < b->pub.dst ? -1 : 1;
  /* qsort is not stable: creation order settles the rest. */
  return a->id < b->id ? -1 : a->id > b->id;
}

int nsp_an_order_findings(struct nsp_job *job) {
  size_t n = job->nfindings;
  for (size_t i = 0; i < n; i++) {
    struct nsp_finding_priv *f = &job->findings[i];
    f->sort_time = f->pub.time_ns ? f->pub.time_ns : INT64_MAX;
    f->depth = 0;
  }
  for (size_t i = 0; i < n; i++) {
    struct nsp_finding_priv *f = &job->findings[i];
    const struct nsp_finding_priv *r = f;
    int depth = 0;
    while (r->cause_id != SIZE_MAX && depth <= (int)n) {
      const struct nsp_finding_priv *next = nsp_an_finding_by_id(job, r->cause_id);
      if (!next) break;
      r = next;
      depth++;
    }
    if (depth > (int)n) continue; /* a loop of causes (never made): leave it */
    if (r != f) {
      f->order = r->order;
      f->sort_time = r->pub.time_ns ? r->pub.time_ns : INT64_MAX;
      f->depth = depth;
    }
  }
  if (n) qsort(job->findings, n, sizeof *job->findings, cmp_finding);
  size_t *pos = malloc((n ? n : 1) * sizeof *pos);
  if (!pos) return NSP_AN_ENOMEM;
  for (size_t i = 0; i < n; i++) pos[i] = SIZE_MAX;
  for (size_t i = 0; i < n; i++)
    if (job->findings[i].id < n) pos[job->findings[i].id] = i;
  for (size_t i = 0; i < n; i++) {
    struct nsp_finding_priv *f = &job->findings[i];
    f->pub.cause = f->cause_id < n ? pos[f->cause_id] : SIZE_MAX;
  }
  free(pos);
  return 0;
}
