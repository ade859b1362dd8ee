/* nsp_an_model.c - the questions every layer asks of the model (members
 * by rank or trace, how far a communicator got, whether a trace covers a
 * rank's calls), notes, and freeing the model's objects. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nsp_an_model.h"

int nsp_job_notef(struct nsp_job *job, const char *fmt, ...) {
  NSP_TRY(nsp_grow(&job->notes, &job->notes_cap, job->nnotes + 1, sizeof *job->notes));
  va_list ap;
  va_start(ap, fmt);
  char *s = nsp_vasprintf(fmt, ap);
  va_end(ap);
  if (!s) return NSP_AN_ENOMEM;
  job->notes[job->nnotes++] = s;
  return 0;
}

int nsp_job_note_take(struct nsp_job *job, struct nsp_sbuf *b) {
  char *s = nsp_sbuf_take(b);
  int ret = s ? nsp_job_notef(job, "%s", s) : NSP_AN_ENOMEM;
  free(s);
  return ret;
}

const char *nsp_an_env_value(const struct nsp_trace_info *t, const char *name) {
  for (size_t i = 0; i < t->nenv; i++)
    if (!strcmp(t->env[2 * i], name)) return t->env[2 * i + 1];
  return NULL;
}

uint64_t nsp_an_env_ms(const struct nsp_trace_info *t, const char *name, uint64_t def, uint64_t lo, uint64_t hi) {
  const char *v = nsp_an_env_value(t, name);
  if (!v || !*v) return def;
  char *end;
  unsigned long long ms = strtoull(v, &end, 10);
  return !*end && v[0] != '-' && ms >= lo && ms <= hi ? ms : def;
}

const struct nsp_call nsp_call_none = {.api = -1,
                                       .dtype = -1,
                                       .redop = -1,
                                       .premul_dtype = -1,
                                       .premul_residence = -1,
                                       .peer = -1,
                                       .done = -1};

void nsp_call_clear(struct nsp_call *c) { *c = nsp_call_none; }

int nsp_an_cmp_int(const void *pa, const void *pb) {
  int a = *(const int *)pa, b = *(const int *)pb;
  return a < b ? -1 : a > b;
}

const struct nsp_an_comm *nsp_an_comm_of(const struct nsp_job *job, uint64_t id) {
  const size_t *ci = id ? nsp_u64map_get(&job->comm_by_id, id) : NULL;
  return ci ? job->comms[*ci] : NULL;
}

const struct nsp_member *nsp_an_find_member(const struct nsp_job *job, const struct nsp_an_comm *c, int rank) {
  size_t lo = 0, hi = c->nmembers;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (job->members[c->members[mid]].rank < rank) lo = mid + 1;
    else hi = mid;
  }
  if (lo < c->nmembers && job->members[c->members[lo]].rank == rank) return &job->members[c->members[lo]];
  return NULL;
}

int nsp_an_member_sig(struct nsp_an_comm *c, const struct nsp_member *m, uint64_t seq, struct nsp_sig *out) {
  if (!seq || seq > m->last_seq) return 0;
  if (!m->first_diff || seq < m->first_diff) {
    struct nsp_ref_view ref;
    if (!nsp_an_comm_ref(c, seq, &ref)) return 0;
    *out = ref.sig;
    return 1;
  }
  uint64_t off = seq - m->first_diff;
  if (!m->win || off >= NSP_SIG_WINDOW || !(m->win_set >> off & 1)) return 0;
  *out = m->win[off];
  return 1;
}

uint64_t nsp_an_member_key(const struct nsp_an_comm *c, size_t ti) {
  return nsp_u64map_hash((uint64_t)(uintptr_t)c) + (uint64_t)ti;
}

const struct nsp_member *nsp_an_member_of_trace(const struct nsp_job *job, const struct nsp_an_comm *c, size_t ti) {
  if (!c || !c->nmembers) return NULL;
  /* Every (communicator, trace) pair of a member has its key in the map;
   * a key two pairs share holds the first one's member, and the other
   * falls back to the scan. */
  const size_t *mi = nsp_u64map_get(&job->member_by_trace, nsp_an_member_key(c, ti));
  if (!mi) return NULL;
  const struct nsp_member *m = &job->members[*mi];
  if (m->trace == ti && job->comms[m->comm] == c) return m;
  for (size_t k = 0; k < c->nmembers; k++)
    if (job->members[c->members[k]].trace == ti) return &job->members[c->members[k]];
  return NULL;
}

uint64_t nsp_an_comm_reached(const struct nsp_job *job, const struct nsp_an_comm *c) {
  uint64_t hi = 0;
  for (size_t k = 0; k < c->nmembers; k++) {
    const struct nsp_member *m = &job->members[c->members[k]];
    if (m->rank >= 0 && m->last_seq > hi) hi = m->last_seq;
  }
  return hi;
}

int nsp_an_trace_cut(const struct nsp_trace *t, unsigned long long *at) {
  if (!t->problem || t->info.recovered || strstr(t->problem, "read on from byte")) return 0;
  const char *p = strstr(t->problem, "at byte ");
  *at = p ? strtoull(p + 8, NULL, 10) : 0;
  return 1;
}

int nsp_an_member_uncovered(const struct nsp_job *job, const struct nsp_member *m) {
  const struct nsp_trace *t = job->traces[m->trace];
  return t->info.dropped && t->drop_rec > m->last_rec;
}

const struct nsp_member *nsp_an_member_went_on(const struct nsp_job *job, const struct nsp_an_comm *c,
                                               const struct nsp_member *m) {
  const struct nsp_member *best = NULL;
  for (size_t k = 0; c && k < c->nmembers; k++) {
    const struct nsp_member *o = &job->members[c->members[k]];
    if (o == m || o->rank < 0 || o->rank == m->rank || o->done_seq <= m->last_seq) continue;
    /* After an error or an abort on the communicator a completion may be
     * the abort's (the GPU work killed, its event done): no evidence. */
    if (o->has_error || job->traces[o->trace]->unattributed_error ||
        (o->ended && (o->end_api == NSP_API_CommAbort || o->end_api == NSP_API_CommRevoke)))
      continue;
    if (!best || o->done_seq > best->done_seq) best = o;
  }
  return best;
}

int nsp_an_p2p_uncovered(const struct nsp_job *job, const struct nsp_member *m, const struct nsp_runs *r) {
  const struct nsp_trace *t = job->traces[m->trace];
  return t->info.dropped && t->drop_rec > (r && r->n ? r->last_rec : 0);
}

/* ---- freeing ---------------------------------------------------------- */

void nsp_an_member_free(struct nsp_member *m) {
  for (size_t i = 0; i < m->np2p; i++) {
    free(m->p2p[i].dir[0].v);
    free(m->p2p[i].dir[1].v);
  }
  free(m->p2p);
  nsp_u64map_free(&m->p2p_index);
  free(m->gpu_uuid);
  free(m->gpu_pci);
  free(m->gpu_name);
  free(m->win);
}

void nsp_an_trace_free(struct nsp_trace *t) {
  if (!t) return;
  free(t->path);
  free(t->host);
  free(t->shim_version);
  free(t->problem);
  for (size_t i = 0; t->env && i < 2 * t->info.nenv; i++) free(t->env[i]);
  free(t->env);
  free(t->mem);
  free(t->first_err.last_error);
  free(t->last_call.last_error);
  free(t->blocked.last_error);
  free(t->local_member);
  free(t->spans);
  free(t->nccl_path);
  free(t->launcher);
  nsp_an_sites_free(t);
  nsp_an_pysites_free(t);
  nsp_an_modules_free(t);
  nsp_an_signal_free(t);
  nsp_an_end_free(t);
  nsp_pend_free(&t->pend);
  nsp_u64map_free(&t->done_by_stream);
  nsp_u64map_free(&t->redop_index);
  free(t->redop_defs);
  nsp_u64map_free(&t->group_comm);
  free(t->groups);
  free(t);
}

void nsp_an_comm_free(struct nsp_an_comm *c) {
  if (!c) return;
  free(c->name);
  free(c->ranks);
  free(c->members);
  nsp_an_comm_drop_refs(c);
  free(c);
}

void nsp_an_utc_text(char *buf, size_t len, int64_t ns) {
  time_t s = (time_t)(ns / 1000000000LL);
  struct tm tm;
  if (ns <= 0 || !gmtime_r(&s, &tm)) {
    snprintf(buf, len, "unknown");
    return;
  }
  char d[40];
  strftime(d, sizeof d, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(buf, len, "%s.%03dZ", d, (int)(ns / 1000000 % 1000));
}

static size_t uf_find(size_t *parent, size_t i) {
  while (parent[i] != i) i = parent[i] = parent[parent[i]];
  return i;
}

size_t nsp_an_comm_groups(const struct nsp_job *job, size_t *group) {
  size_t n = job->ntraces;
  size_t *parent = malloc((n ? n : 1) * sizeof *parent);
  size_t *first = malloc((job->ncomms ? job->ncomms : 1) * sizeof *first); /* a trace of each comm */
  if (!parent || !first) {
    free(parent);
    free(first);
    return SIZE_MAX;
  }
  for (size_t i = 0; i < n; i++) {
    parent[i] = i;
    group[i] = SIZE_MAX;
  }
  for (size_t c = 0; c < job->ncomms; c++) first[c] = SIZE_MAX;
  /* Each member joins its trace to the first trace of its communicator. */
  for (size_t m = 0; m < job->nmembers; m++) {
    size_t c = job->members[m].comm, t = job->members[m].trace;
    if (c >= job->ncomms || t >= n) continue;
    if (first[c] == SIZE_MAX) first[c] = t;
    else parent[uf_find(parent, t)] = uf_find(parent, first[c]);
    group[t] = 0; /* in some communicator */
  }
  /* Numbered in trace order: a root gets its number when first met
   * (num, over the traces, reuses first when there are as many comms). */
  size_t ngroups = 0, *num = malloc((n ? n : 1) * sizeof *num);
  if (!num) {
    free(parent);
    free(first);
    return SIZE_MAX;
  }
  for (size_t i = 0; i < n; i++) num[i] = SIZE_MAX;
  for (size_t i = 0; i < n; i++) {
    if (group[i] == SIZE_MAX) continue;
    size_t r = uf_find(parent, i);
    if (num[r] == SIZE_MAX) num[r] = ngroups++;
    group[i] = num[r];
  }
  free(num);
  free(parent);
  free(first);
  return ngroups;
}
