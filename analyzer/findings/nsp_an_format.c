/* nsp_an_util.c - small containers and the formatting the reports share. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nsp_an_model.h"
#include "nsp_reader.h"
#include "nsp_names.h"

void nsp_call_clear(struct nsp_call *c) {
  memset(c, 0, sizeof *c);
  c->api = -1;
  c->dtype = -1;
  c->redop = -1;
  c->peer = -1;
  c->done = -1;
}

/* Appends to buf as snprintf would, tracking the full length in *len. */
static void fmt_cat(char *buf, size_t buflen, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void fmt_cat(char *buf, size_t buflen, size_t *len, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  size_t room = *len < buflen ? buflen - *len : 0;
  int n = vsnprintf(room ? buf + *len : NULL, room, fmt, ap);
  va_end(ap);
  if (n > 0) *len += (size_t)n;
}

size_t nsp_format_ranks(char *buf, size_t buflen, const int *ranks, size_t n) {
  size_t len = 0;
  if (buflen) buf[0] = 0;
  size_t i = 0;
  int first = 1;
  while (i < n) {
    size_t j = i;
    /* Extend over duplicates and consecutive ranks. */
    while (j + 1 < n && (ranks[j + 1] == ranks[j] || (int64_t)ranks[j + 1] == (int64_t)ranks[j] + 1)) j++;
    if (ranks[j] != ranks[i])
      fmt_cat(buf, buflen, &len, "%s%d-%d", first ? "" : ",", ranks[i], ranks[j]);
    else
      fmt_cat(buf, buflen, &len, "%s%d", first ? "" : ",", ranks[i]);
    first = 0;
    i = j + 1;
  }
  /* A list cut short must not read as a complete one. */
  if (buflen && len >= buflen) {
    if (buflen >= 4) memcpy(buf + buflen - 4, "...", 4);
    else buf[buflen - 1] = 0;
  }
  return len;
}

size_t nsp_format_call(char *buf, size_t buflen, const struct nsp_call *c) {
  size_t len = 0;
  char tb[32], rb[32];
  if (buflen) buf[0] = 0;
  if (c->api < 0) {
    fmt_cat(buf, buflen, &len, "no call");
    return len;
  }
  int kind = nsp_api_kind(c->api);
  if (kind != NSP_K_COLL && kind != NSP_K_P2P) {
    fmt_cat(buf, buflen, &len, "%s", nsp_op_name(c->api));
    return len;
  }
  fmt_cat(buf, buflen, &len, "%s %llu x %s", nsp_op_name(c->api), (unsigned long long)c->count,
          nsp_dtype_name(c->dtype, tb, sizeof tb));
  if (nsp_api_has_redop(c->api)) fmt_cat(buf, buflen, &len, " %s", nsp_redop_name(c->redop, rb, sizeof rb));
  if (nsp_api_has_root(c->api)) fmt_cat(buf, buflen, &len, " root %d", c->peer);
  if (c->api == NSP_API_Send) fmt_cat(buf, buflen, &len, " to %d", c->peer);
  if (c->api == NSP_API_Recv) fmt_cat(buf, buflen, &len, " from %d", c->peer);
  size_t esz = nsp_dtype_size(c->dtype);
  if (esz && c->count <= UINT64_MAX / esz)
    fmt_cat(buf, buflen, &len, " (%llu bytes)", (unsigned long long)(c->count * esz));
  else
    fmt_cat(buf, buflen, &len, " (? bytes)");
  return len;
}

/* The kinds table (nsp_finding_kinds.h), one entry per line. */
static const struct nsp_finding_kind_info nsp_kinds[NSP_FIND_KIND_COUNT] = {
#define NSP_X_KIND_INFO(id, name, cls, ranks, sides, odd, later, hint) {id, name, cls, ranks, sides, odd, later, hint},
    NSP_FINDING_KINDS(NSP_X_KIND_INFO)
#undef NSP_X_KIND_INFO
};
/* The values of enum nsp_finding_kind are API: a kind added anywhere but
 * at the end of the table would move the others. */
_Static_assert(NSP_FIND_SIGNAL == 21 && NSP_FIND_KIND_COUNT == 22, "finding kinds are added at the end of the table");

const struct nsp_finding_kind_info *nsp_finding_kind_info(int kind) {
  return kind >= 0 && kind < NSP_FIND_KIND_COUNT ? &nsp_kinds[kind] : NULL;
}

const char *nsp_finding_class_name(int order_class) {
  static const char *const names[] = {"mismatch", "failure", "stopped", "environment"};
  return order_class >= 0 && order_class < 4 ? names[order_class] : "unknown";
}

const char *nsp_rank_space_name(int rank_space) {
  static const char *const names[] = {"communicator", "job, with comm_rank", "job", "communicator, else job"};
  return rank_space >= 0 && rank_space < 4 ? names[rank_space] : "unknown";
}

const char *nsp_side_shape_name(int sides) {
  static const char *const names[] = {"by call",          "sender, receiver",  "by last seq",
                                      "origin, by result", "by role",           "by value",
                                      "origin, by signal"};
  return sides >= 0 && sides < 7 ? names[sides] : "unknown";
}

int nsp_finding_job_ranks(const struct nsp_finding *f) {
  const struct nsp_finding_kind_info *k = nsp_finding_kind_info(f->kind);
  if (!k) return 0;
  return k->rank_space == NSP_RANKS_JOB || k->rank_space == NSP_RANKS_JOB_IN_COMM ||
         (k->rank_space == NSP_RANKS_COMM_OR_JOB && !f->comm_id);
}

int nsp_finding_names_comm(const struct nsp_finding *f) {
  const struct nsp_finding_kind_info *k = nsp_finding_kind_info(f->kind);
  return f->comm_id || (k && (k->rank_space == NSP_RANKS_COMM || k->rank_space == NSP_RANKS_JOB_IN_COMM));
}

int nsp_finding_kind_is_env(int kind) {
  const struct nsp_finding_kind_info *k = nsp_finding_kind_info(kind);
  return k && k->order_class == NSP_CLASS_ENV;
}

const char *nsp_side_role_name(int role) {
  switch (role) {
    case NSP_ROLE_NONE: return "";
    case NSP_ROLE_NOT_ARRIVED: return "not-arrived";
    case NSP_ROLE_WAITING: return "waiting";
    case NSP_ROLE_COMPLETED: return "completed";
    case NSP_ROLE_FAILED: return "failed";
    case NSP_ROLE_UNTRACKED: return "untracked";
    case NSP_ROLE_ARRIVAL_UNKNOWN: return "arrival-unknown";
    default: return "unknown";
  }
}

const char *nsp_finding_kind_name(int kind) {
  const struct nsp_finding_kind_info *k = nsp_finding_kind_info(kind);
  return k ? k->name : "unknown";
}

int nsp_finding_kind_from_name(const char *name) {
  for (int i = 0; name && i < NSP_FIND_KIND_COUNT; i++)
    if (!strcmp(name, nsp_kinds[i].name)) return i;
  return -1;
}

const char *nsp_finding_kind_hint(int kind) {
  const struct nsp_finding_kind_info *k = nsp_finding_kind_info(kind);
  return k ? k->hint : "";
}

const char *nsp_call_source_name(int source) {
  switch (source) {
    case NSP_SRC_CALL: return "call";
    case NSP_SRC_COMM_INIT: return "comm-init";
    case NSP_SRC_COMM_END: return "comm-end";
    case NSP_SRC_ASYNC: return "async-error";
    case NSP_SRC_REDOP: return "redop";
    default: return "unknown";
  }
}

const char *nsp_an_strerror(int err) {
  switch (err) {
    case NSP_AN_OK: return "success";
    case NSP_AN_ENOMEM: return "out of memory";
    case NSP_AN_EREAD: return "cannot read trace";
    case NSP_AN_EINVAL: return "invalid argument";
    case NSP_AN_ESTATE: return "job already analysed";
    default: return "unknown error";
  }
}

/* ---- coverage --------------------------------------------------------- */

/* Used by the coverage notes and the wavefront (nsp_an_rules.c) and by
 * the hang rule (nsp_an_hang.c): one rule for all three. */
int nsp_an_member_uncovered(const struct nsp_job *job, const struct nsp_member *m) {
  const struct nsp_trace *t = job->traces[m->trace];
  return t->info.dropped && t->drop_rec > m->last_rec;
}

int nsp_an_p2p_uncovered(const struct nsp_job *job, const struct nsp_member *m, const struct nsp_runs *r) {
  const struct nsp_trace *t = job->traces[m->trace];
  return t->info.dropped && t->drop_rec > (r && r->n ? r->last_rec : 0);
}

size_t nsp_format_proc_rank(char *buf, size_t buflen, const struct nsp_job *job, const struct nsp_finding *f,
                            const struct nsp_proc *p) {
  int in_comm = nsp_finding_job_ranks(f) && f->comm_id; /* job ranks, each with its comm_rank */
  if (in_comm && p->comm_rank < 0) return (size_t)snprintf(buf, buflen, "job rank %d", p->rank);
  int r = in_comm ? p->comm_rank : p->rank, jr = job->traces[p->trace]->info.rank;
  if (jr >= 0 && jr != r) return (size_t)snprintf(buf, buflen, "rank %d (job rank %d)", r, jr);
  return (size_t)snprintf(buf, buflen, "rank %d", r);
}

int nsp_side_job_ranks(const struct nsp_finding *f, const struct nsp_side *s) {
  const struct nsp_finding_kind_info *k = nsp_finding_kind_info(f->kind);
  if (!k || k->rank_space != NSP_RANKS_JOB_IN_COMM || !f->comm_id) return 0;
  for (size_t p = 0; p < s->nranks; p++)
    if (s->procs[p].comm_rank != s->procs[p].rank) return 1;
  return 0;
}

void nsp_an_put_rank(struct nsp_sbuf *b, const struct nsp_job *job, int rank, size_t trace) {
  int jr = job->traces[trace]->info.rank;
  nsp_sbuf_printf(b, "rank %d", rank);
  if (jr >= 0 && jr != rank) nsp_sbuf_printf(b, " (job rank %d)", jr);
}

void nsp_an_put_drop_reasons(struct nsp_sbuf *b, const struct nsp_trace *t) {
  static const char *const why[4] = {"unknown reason", "ring full", "write errors", "size cap (NCCLSPY_MAX_MB)"};
  int first = 1;
  for (int r = 1; r <= 4; r++) {
    int k = r & 3; /* 1, 2, 3, then 0 (unknown) last */
    if (!t->drop_by[k]) continue;
    nsp_sbuf_printf(b, "%s%s", first ? "" : ", ", why[k]);
    first = 0;
  }
  if (first) nsp_sbuf_printf(b, "%s", why[0]);
}

/* ---- re-reading traces for details ------------------------------------ */

int nsp_an_reread_calls(struct nsp_job *job, void *req, size_t n, size_t size, size_t (*trace_of)(const void *),
                        const char *what, nsp_an_reread_fn on_call, void *arg) {
  char *base = req;
  int ret = 0;
  for (size_t i = 0; i < n && !ret;) {
    size_t trace = trace_of(base + i * size), j = i;
    while (j < n && trace_of(base + j * size) == trace) j++;
    const struct nsp_trace *t = job->traces[trace];
    char err[256];
    struct nsp_reader *r = nsp_an_reopen(t, err, sizeof err);
    if (!r) {
      ret = nsp_job_notef(job, "%s: could not be read again for %s: %s", t->info.path, what, err);
      i = j;
      continue;
    }
    struct nsp_rec rec;
    size_t found = 0;
    while (!ret && found < j - i && nsp_reader_next(r, &rec) == 1) {
      if (rec.kind != NSP_REC_CALL) continue;
      int got = on_call(t, &rec, base + i * size, j - i, arg);
      if (got < 0) ret = got;
      else found += (size_t)got;
    }
    nsp_reader_destroy(r);
    i = j;
  }
  return ret;
}

/* ---- sides grouped by a key ------------------------------------------- */

static int cmp_rank_trace(const void *pa, const void *pb, void *ctx) {
  const struct nsp_job *job = ctx;
  const struct nsp_trace *a = job->traces[*(const size_t *)pa], *b = job->traces[*(const size_t *)pb];
  if (a->info.rank != b->info.rank) return a->info.rank < b->info.rank ? -1 : 1;
  return *(const size_t *)pa < *(const size_t *)pb ? -1 : 1;
}

int nsp_an_sides_by_key(struct nsp_job *job, struct nsp_finding_priv *f, const size_t *ti, size_t n,
                        int (*key)(const struct nsp_trace *t),
                        int (*proc)(struct nsp_job *job, struct nsp_proc *p, const struct nsp_trace *t),
                        int (*side_done)(struct nsp_job *job, struct nsp_side *side)) {
  int *keys = malloc(n * sizeof *keys);
  size_t *group = malloc(n * sizeof *group), nkeys = 0;
  int ret = keys && group ? 0 : NSP_AN_ENOMEM;
  for (size_t i = 1; !ret && i < n; i++) {
    int k = key(job->traces[ti[i]]);
    size_t c = 0;
    while (c < nkeys && keys[c] != k) c++;
    if (c == nkeys) keys[nkeys++] = k;
  }
  if (!ret) ret = nsp_an_alloc_sides(f, 1 + nkeys);
  for (size_t s = 0; !ret && s <= nkeys; s++) {
    size_t gn = 0;
    if (s == 0) {
      group[gn++] = ti[0];
    } else {
      for (size_t i = 1; i < n; i++)
        if (key(job->traces[ti[i]]) == keys[s - 1]) group[gn++] = ti[i];
      qsort_r(group, gn, sizeof *group, cmp_rank_trace, job);
    }
    struct nsp_side *side = &f->sides[s];
    int *ranks;
    struct nsp_proc *procs;
    ret = nsp_an_side_procs(side, gn, &ranks, &procs);
    for (size_t i = 0; i < gn && !ret; i++) {
      const struct nsp_trace *t = job->traces[group[i]];
      nsp_an_set_proc(job, &procs[i], &ranks[i], t->info.rank, group[i]);
      ret = proc(job, &procs[i], t);
    }
    if (!ret) ret = side_done(job, side);
  }
  free(keys);
  free(group);
  return ret;
}
