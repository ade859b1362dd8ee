/* nsp_an_finding.c - building findings: a new finding of a kind (its
 * class and hint from the kinds table), its sides and their processes,
 * odd ranks, and the side shapes several rules share (origin then by key,
 * by value); freeing one. */
#include <stdlib.h>
#include <string.h>

#include "nsp_an_finding.h"
#include "nsp_names.h"

struct nsp_finding_priv *nsp_an_new_finding(struct nsp_job *job, int kind, const struct nsp_an_comm *c) {
  if (nsp_grow(&job->findings, &job->findings_cap, job->nfindings + 1, sizeof *job->findings) < 0) return NULL;
  struct nsp_finding_priv *f = &job->findings[job->nfindings++];
  memset(f, 0, sizeof *f);
  f->pub.kind = kind;
  f->pub.api = -1;
  f->pub.src = f->pub.dst = -1;
  f->p2p_member[0] = f->p2p_member[1] = SIZE_MAX;
  f->id = job->nfindings - 1;
  f->cause_id = SIZE_MAX;
  f->pub.cause = SIZE_MAX;
  f->comm_index = SIZE_MAX;
  if (c) {
    f->pub.comm_id = c->info.id;
    f->pub.comm = &c->info;
    const size_t *ci = nsp_u64map_get(&job->comm_by_id, c->info.id);
    if (ci) f->comm_index = *ci;
  }
  f->order = nsp_an_kind(kind)->order_class;
  f->pub.hint = nsp_an_kind(kind)->hint;
  return f;
}

struct nsp_finding_priv *nsp_an_finding_by_id(struct nsp_job *job, size_t id) {
  if (id < job->nfindings && job->findings[id].id == id) return &job->findings[id];
  for (size_t i = 0; i < job->nfindings; i++)
    if (job->findings[i].id == id) return &job->findings[i];
  return NULL;
}

int nsp_an_set_odd(struct nsp_finding_priv *f, const int *ranks, size_t n) {
  free(f->odd);
  f->odd = malloc((n ? n : 1) * sizeof *f->odd);
  if (!f->odd) return NSP_AN_ENOMEM;
  if (n) memcpy(f->odd, ranks, n * sizeof *f->odd);
  qsort(f->odd, n, sizeof *f->odd, nsp_an_cmp_int);
  f->pub.odd_ranks = f->odd;
  f->pub.nodd = n;
  return 0;
}

int nsp_an_alloc_sides(struct nsp_finding_priv *f, size_t n) {
  f->sides = calloc(n, sizeof *f->sides);
  if (!f->sides) return NSP_AN_ENOMEM;
  f->pub.sides = f->sides;
  f->pub.nsides = n;
  for (size_t i = 0; i < n; i++) nsp_call_clear(&f->sides[i].call);
  return 0;
}

int nsp_an_side_procs(struct nsp_side *s, size_t n, int **ranks, struct nsp_proc **procs) {
  *ranks = calloc(n ? n : 1, sizeof **ranks);
  *procs = calloc(n ? n : 1, sizeof **procs);
  s->ranks = *ranks;
  s->procs = *procs;
  if (!*ranks || !*procs) return NSP_AN_ENOMEM; /* nranks stays 0: destroy walks no procs */
  s->nranks = n;
  for (size_t i = 0; i < n; i++) {
    nsp_call_clear(&(*procs)[i].call);
    nsp_call_clear(&(*procs)[i].blocked);
  }
  return 0;
}

void nsp_an_set_proc(struct nsp_job *job, struct nsp_proc *p, int *rank_slot, int rank, size_t trace) {
  const struct nsp_trace *t = job->traces[trace];
  p->rank = rank;
  p->comm_rank = rank; /* job-rank findings: set by proc_comm_ranks */
  *rank_slot = rank;
  p->trace = trace;
  p->host = t->info.host;
  p->pid = t->info.pid;
  p->end = &t->info.end;
  p->comm_end_api = -1; /* the walk sets it (job/nsp_an_walk.c) */
}

int nsp_an_side_from_members(struct nsp_job *job, struct nsp_side *s, const size_t *mi, size_t n) {
  int *ranks;
  struct nsp_proc *procs;
  NSP_TRY(nsp_an_side_procs(s, n, &ranks, &procs));
  for (size_t i = 0; i < n; i++) {
    const struct nsp_member *m = &job->members[mi[i]];
    nsp_an_set_proc(job, &procs[i], &ranks[i], m->rank, m->trace);
  }
  return 0;
}

int nsp_an_side_from_traces(struct nsp_job *job, struct nsp_side *s, const size_t *ti, size_t n) {
  int *ranks;
  struct nsp_proc *procs;
  NSP_TRY(nsp_an_side_procs(s, n, &ranks, &procs));
  for (size_t i = 0; i < n; i++) nsp_an_set_proc(job, &procs[i], &ranks[i], job->traces[ti[i]]->info.rank, ti[i]);
  return 0;
}

void nsp_an_proc_last_call(struct nsp_proc *p, const struct nsp_trace *t) {
  if (t->last_call.valid) {
    p->call = t->last_call.call;
    p->call.last_error = NULL;
    p->site = nsp_an_site(t, t->last_call.site);
    p->pysite = nsp_an_pysite(t, t->last_call.pysite);
  }
  if (t->blocked.valid) {
    p->blocked = t->blocked.call;
    p->blocked.last_error = NULL;
  }
}

void nsp_an_call_from_sig(struct nsp_call *c, const struct nsp_sig *s, uint64_t comm_id, uint64_t seq) {
  nsp_call_clear(c);
  c->api = s->api;
  c->comm_id = comm_id;
  c->seq = seq;
  c->count = s->count;
  c->dtype = s->dtype;
  c->redop = s->redop;
  c->peer = s->root;
  if (s->redop == NSP_REDOP_PREMULSUM) {
    c->premul_dtype = s->premul_dtype;
    c->premul_residence = s->premul_residence;
    c->premul_scalar = s->premul_scalar;
    c->premul_scalar_known = s->premul_scalar_known;
  }
}

int nsp_an_set_side_text(struct nsp_side *s, const char *text) {
  char *t = strdup(text);
  if (!t) return NSP_AN_ENOMEM;
  free((void *)s->text);
  s->text = t;
  return 0;
}

int nsp_an_side_text_call(struct nsp_side *s) {
  char buf[256];
  nsp_format_call(buf, sizeof buf, &s->call);
  return nsp_an_set_side_text(s, buf);
}

int nsp_an_mark_odd(struct nsp_finding_priv *f) {
  size_t total = 0, big = SIZE_MAX;
  for (size_t i = 0; i < f->pub.nsides; i++) total += f->sides[i].nranks;
  for (size_t i = 0; i < f->pub.nsides; i++)
    if (f->sides[i].nranks * 2 > total) big = i;
  if (big == SIZE_MAX) return 0;
  f->odd = malloc((total - f->sides[big].nranks + 1) * sizeof *f->odd);
  if (!f->odd) return NSP_AN_ENOMEM;
  size_t n = 0;
  for (size_t i = 0; i < f->pub.nsides; i++)
    for (size_t k = 0; i != big && k < f->sides[i].nranks; k++) f->odd[n++] = f->sides[i].ranks[k];
  /* Sides are ordered by their lowest rank; the odd ranks should read in
   * order too. */
  qsort(f->odd, n, sizeof *f->odd, nsp_an_cmp_int);
  f->pub.odd_ranks = f->odd;
  f->pub.nodd = n;
  return 0;
}

int nsp_an_take_message(struct nsp_finding_priv *f, struct nsp_sbuf *b) {
  f->message = nsp_sbuf_take(b);
  if (!f->message) return NSP_AN_ENOMEM;
  f->pub.message = f->message;
  return 0;
}

int nsp_an_take_lead(struct nsp_finding_priv *f, struct nsp_sbuf *b) {
  free(f->lead);
  f->lead = nsp_sbuf_take(b);
  f->pub.lead = f->lead;
  return f->lead ? 0 : NSP_AN_ENOMEM;
}

int nsp_an_side_from_items(struct nsp_job *job, struct nsp_side *s, const struct nsp_an_item *it, size_t n) {
  int *ranks;
  struct nsp_proc *procs;
  NSP_TRY(nsp_an_side_procs(s, n, &ranks, &procs));
  for (size_t p = 0; p < n; p++) nsp_an_set_proc(job, &procs[p], &ranks[p], it[p].rank, it[p].trace);
  return 0;
}

const struct nsp_side *nsp_an_side_with_role(const struct nsp_finding_priv *f, int role) {
  for (size_t s = 0; s < f->pub.nsides; s++)
    if (f->sides[s].role == role) return &f->sides[s];
  return NULL;
}

void nsp_an_finding_free(struct nsp_finding_priv *f) {
  for (size_t s = 0; s < f->pub.nsides; s++) {
    free((void *)f->sides[s].ranks);
    for (size_t p = 0; p < f->sides[s].nranks; p++) free((void *)f->sides[s].procs[p].call.last_error);
    free((void *)f->sides[s].procs);
    free((void *)f->sides[s].call.last_error);
    free((void *)f->sides[s].text);
    free((void *)f->sides[s].value);
  }
  free(f->sides);
  free(f->odd);
  free(f->message);
  free(f->hint_owned);
  free(f->setting_owned);
  free(f->lead);
}

/* ---- sides grouped by a key ------------------------------------------- */

int nsp_an_cmp_trace_rank(const void *pa, const void *pb, void *ctx) {
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
      qsort_r(group, gn, sizeof *group, nsp_an_cmp_trace_rank, job);
    }
    struct nsp_side *side = &f->sides[s];
    ret = nsp_an_side_from_traces(job, side, group, gn);
    for (size_t i = 0; i < gn && !ret; i++) ret = proc(job, (struct nsp_proc *)&side->procs[i], job->traces[group[i]]);
    if (!ret) ret = side_done(job, side);
  }
  free(keys);
  free(group);
  return ret;
}

/* ---- sides by value ------------------------------------------------------ */

int nsp_an_cmp_item(const void *pa, const void *pb) {
  const struct nsp_an_item *a = pa, *b = pb;
  if (a->value != b->value) {
    if (!a->value) return 1;
    if (!b->value) return -1;
    int c = strcmp(a->value, b->value);
    if (c) return c;
  }
  if (a->rank != b->rank) return a->rank < b->rank ? -1 : 1;
  return a->trace < b->trace ? -1 : a->trace > b->trace;
}

static int same_value(const struct nsp_an_item *a, const struct nsp_an_item *b) {
  if (!a->value || !b->value) return a->value == b->value;
  return !strcmp(a->value, b->value);
}

static int cmp_side_rank(const void *pa, const void *pb) {
  const struct nsp_side *a = pa, *b = pb;
  if (a->ranks[0] != b->ranks[0]) return a->ranks[0] < b->ranks[0] ? -1 : 1;
  if (!a->value || !b->value) return a->value ? -1 : b->value ? 1 : 0;
  return strcmp(a->value, b->value);
}

int nsp_an_finding_by_value(struct nsp_job *job, int kind, const struct nsp_an_comm *c, struct nsp_an_item *it,
                            size_t n, const char *label, const char *name, const char *extra) {
  if (n < 2) return 0;
  qsort(it, n, sizeof *it, nsp_an_cmp_item);
  size_t nsides = 1;
  for (size_t i = 1; i < n; i++) nsides += !same_value(&it[i - 1], &it[i]);
  if (nsides < 2) return 0;
  struct nsp_finding_priv *f = nsp_an_new_finding(job, kind, c);
  if (!f) return NSP_AN_ENOMEM;
  NSP_TRY(nsp_an_alloc_sides(f, nsides));
  if (name && !(f->setting_owned = strdup(name))) return NSP_AN_ENOMEM;
  f->pub.setting = f->setting_owned;
  for (size_t i = 0, s = 0; i < n; s++) {
    size_t j = i;
    while (j < n && same_value(&it[i], &it[j])) j++;
    struct nsp_side *side = &f->sides[s];
    NSP_TRY(nsp_an_side_from_items(job, side, it + i, j - i));
    if (it[i].value && !(side->value = strdup(it[i].value))) return NSP_AN_ENOMEM;
    char buf[512];
    if (name) snprintf(buf, sizeof buf, it[i].value ? "%s=%s" : "%s unset", name, it[i].value ? it[i].value : "");
    else snprintf(buf, sizeof buf, "%s %s", label, it[i].value ? it[i].value : "unknown");
    NSP_TRY(nsp_an_set_side_text(side, buf));
    i = j;
  }
  qsort(f->sides, nsides, sizeof *f->sides, cmp_side_rank);
  /* Odd ones out when one value holds a strict majority. */
  NSP_TRY(nsp_an_mark_odd(f));
  struct nsp_sbuf b = {0};
  nsp_sbuf_printf(&b, "%s differs across ranks: ", name ? name : label);
  for (size_t s = 0; s < nsides; s++) {
    const struct nsp_side *sd = &f->sides[s];
    nsp_sbuf_printf(&b, "%s", s ? "; " : "");
    nsp_an_put_side_ranks(&b, job, &f->pub, sd);
    nsp_sbuf_printf(&b, " (");
    nsp_an_put_hosts(&b, sd);
    if (sd->value) nsp_sbuf_printf(&b, "): %s", sd->value);
    else nsp_sbuf_printf(&b, "): %s", name ? "unset" : "unknown");
  }
  if (extra) nsp_sbuf_printf(&b, "; %s", extra);
  return nsp_an_take_message(f, &b);
}
