/* nsp_an_rules.c - from the loaded model to findings.
 *
 * Rule 1 (alignment), 2 (send/recv pairing), 3 (wavefront) and 4 (errors)
 * of docs/REPORT.md, the helpers every rule file uses to build findings,
 * then pass 2 (re-reading the few send/recv calls a finding names, for
 * their times), ordering (causes kept together), messages and the
 * summary.  Rule 5 (hangs) is in nsp_an_hang.c, 6 (environment) in
 * nsp_an_env.c, the error hints in nsp_an_hints.c.
 * Every rule is linear in members, seq pages and send/recv runs, plus a
 * sort per communicator: no rank x rank or seq x rank loops. */
#include <stdlib.h>
#include <string.h>

#include "nsp_an_model.h"
#include "nsp_names.h"
#include "nsp_reader.h"

/* ---- preparation -------------------------------------------------------- */

static int cmp_member_rank(const void *pa, const void *pb, void *ctx) {
  const struct nsp_job *job = ctx;
  const struct nsp_member *a = &job->members[*(const size_t *)pa];
  const struct nsp_member *b = &job->members[*(const size_t *)pb];
  if (a->rank != b->rank) return a->rank < b->rank ? -1 : 1;
  if (a->trace != b->trace) return a->trace < b->trace ? -1 : 1;
  return a->local < b->local ? -1 : a->local > b->local;
}

/* Members that disagree on nranks (an env-nranks finding names them):
 * the communicator's nranks is the value most of them report, the smaller
 * on a tie, whatever order the traces came in (the loader kept the first
 * one it read). */
static int majority_nranks(struct nsp_job *job, struct nsp_an_comm *c) {
  int32_t *v = malloc((c->nmembers ? c->nmembers : 1) * sizeof *v);
  if (!v) return NSP_AN_ENOMEM;
  size_t n = 0;
  for (size_t k = 0; k < c->nmembers; k++)
    if (job->members[c->members[k]].nranks > 0) v[n++] = job->members[c->members[k]].nranks;
  qsort(v, n, sizeof *v, nsp_an_cmp_int);
  size_t best = 0;
  for (size_t i = 0, j; i < n; i = j) {
    for (j = i + 1; j < n && v[j] == v[i];) j++;
    if (j - i > best) {
      best = j - i;
      c->info.nranks = v[i];
    }
  }
  free(v);
  return 0;
}

/* Drops communicators no member points at (an id a later COMM record
 * replaced), builds each one's member list sorted by rank and its list of
 * traced ranks. */
static int prepare_comms(struct nsp_job *job) {
  size_t *remap = calloc(job->ncomms ? job->ncomms : 1, sizeof *remap);
  if (!remap) return NSP_AN_ENOMEM;
  for (size_t i = 0; i < job->nmembers; i++) remap[job->members[i].comm]++;
  size_t n = 0;
  for (size_t i = 0; i < job->ncomms; i++) {
    struct nsp_an_comm *c = job->comms[i];
    if (!remap[i]) {
      free(c->name);
      nsp_paged_free(&c->refs);
      free(c);
      continue;
    }
    remap[i] = n;
    job->comms[n++] = c;
  }
  job->ncomms = n;
  nsp_u64map_free(&job->comm_by_id);
  int ret = 0;
  for (size_t i = 0; i < n && !ret; i++) ret = nsp_u64map_put(&job->comm_by_id, job->comms[i]->info.id, i);
  for (size_t i = 0; i < job->nmembers && !ret; i++) {
    struct nsp_member *m = &job->members[i];
    m->comm = remap[m->comm];
    struct nsp_an_comm *c = job->comms[m->comm];
    ret = nsp_grow(&c->members, &c->members_cap, c->nmembers + 1, sizeof *c->members);
    if (!ret) c->members[c->nmembers++] = i;
  }
  free(remap);
  NSP_TRY(ret);

  for (size_t i = 0; i < n; i++) {
    struct nsp_an_comm *c = job->comms[i];
    qsort_r(c->members, c->nmembers, sizeof *c->members, cmp_member_rank, job);
    if (c->nranks_conflict) NSP_TRY(majority_nranks(job, c));
    c->ranks = malloc(c->nmembers * sizeof *c->ranks);
    if (!c->ranks) return NSP_AN_ENOMEM;
    size_t nr = 0, unknown = 0;
    for (size_t k = 0; k < c->nmembers; k++) {
      const struct nsp_member *m = &job->members[c->members[k]];
      if (m->rank < 0) {
        unknown++;
        continue;
      }
      /* A rank traced twice: an env-duplicate-rank finding says so. */
      if (nr && c->ranks[nr - 1] == m->rank) continue;
      c->ranks[nr++] = m->rank;
    }
    c->info.ranks = c->ranks;
    c->info.ntraced = nr;
    if (unknown)
      NSP_TRY(nsp_job_notef(job, "communicator %016llx: %zu member%s never learnt %s rank (non-blocking init "
                                 "that did not complete?); %s left out of the findings",
                            (unsigned long long)c->info.id, unknown, unknown == 1 ? "" : "s",
                            unknown == 1 ? "its" : "their", unknown == 1 ? "it is" : "they are"));
    /* Untraced ranks: an env-missing-ranks finding names them. */
  }
  return 0;
}

static void assign_job_ranks(struct nsp_job *job) {
  job->start_ns = 0;
  for (size_t i = 0; i < job->ntraces; i++) {
    struct nsp_trace *t = job->traces[i];
    if (!job->start_ns || t->info.realtime_ns < job->start_ns) job->start_ns = t->info.realtime_ns;
    t->info.rank = t->env_rank >= 0 ? t->env_rank : t->file_rank;
  }
  /* Fallback: the rank in the largest communicator the process joined. */
  int32_t *best = NULL;
  if (job->ntraces) best = calloc(job->ntraces, sizeof *best);
  if (!best) return;
  for (size_t i = 0; i < job->nmembers; i++) {
    const struct nsp_member *m = &job->members[i];
    struct nsp_trace *t = job->traces[m->trace];
    if (t->env_rank >= 0 || t->file_rank >= 0 || m->rank < 0) continue;
    if (m->nranks > best[m->trace]) {
      best[m->trace] = m->nranks;
      t->info.rank = m->rank;
    }
  }
  free(best);
}

/* ---- building findings ------------------------------------------------ */

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
  f->order = nsp_finding_kind_info(kind)->order_class;
  f->pub.hint = nsp_finding_kind_hint(kind);
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

/* Fills side s with n processes; rank_of/trace_of come from the caller. */
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

void nsp_an_call_from_sig(struct nsp_call *c, const struct nsp_sig *s, uint64_t comm_id, uint64_t seq) {
  nsp_call_clear(c);
  c->api = s->api;
  c->comm_id = comm_id;
  c->seq = seq;
  c->count = s->count;
  c->dtype = s->dtype;
  c->redop = s->redop;
  c->peer = s->root;
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

int nsp_an_cmp_int(const void *pa, const void *pb) {
  int a = *(const int *)pa, b = *(const int *)pb;
  return a < b ? -1 : a > b;
}

/* Odd ones out: every side but one that holds a strict majority of the
 * ranks.  Without such a side nobody is singled out (two ranks against
 * two, or one against one, says nothing about who is wrong). */
static int mark_odd(struct nsp_finding_priv *f) {
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

/* ---- rule 1: collective alignment --------------------------------------- */

struct part {
  size_t member;
  struct nsp_sig sig;
  int rank;
};

static int cmp_sig(const struct nsp_sig *a, const struct nsp_sig *b) {
  if (a->api != b->api) return a->api < b->api ? -1 : 1;
  if (a->dtype != b->dtype) return a->dtype < b->dtype ? -1 : 1;
  if (a->count != b->count) return a->count < b->count ? -1 : 1;
  if (a->redop != b->redop) return a->redop < b->redop ? -1 : 1;
  if (a->root != b->root) return a->root < b->root ? -1 : 1;
  return 0;
}

static int cmp_part(const void *pa, const void *pb) {
  const struct part *a = pa, *b = pb;
  int c = cmp_sig(&a->sig, &b->sig);
  if (c) return c;
  return a->rank < b->rank ? -1 : a->rank > b->rank;
}

/* The first field, in the order the rules name them, on which the sides
 * do not all agree. */
static int mismatch_kind(const struct nsp_finding_priv *f) {
  const struct nsp_call *a = &f->sides[0].call;
  int kind = NSP_FIND_ROOT_MISMATCH;
  for (size_t i = 1; i < f->pub.nsides; i++) {
    const struct nsp_call *b = &f->sides[i].call;
    int k = a->api != b->api       ? NSP_FIND_KIND_MISMATCH
            : a->dtype != b->dtype ? NSP_FIND_DTYPE_MISMATCH
            : a->count != b->count ? NSP_FIND_COUNT_MISMATCH
            : a->redop != b->redop ? NSP_FIND_REDOP_MISMATCH
                                   : NSP_FIND_ROOT_MISMATCH;
    if (k < kind) kind = k;
  }
  return kind;
}

static int cmp_side_first_rank(const void *pa, const void *pb) {
  const struct nsp_side *a = pa, *b = pb;
  return a->ranks[0] < b->ranks[0] ? -1 : a->ranks[0] > b->ranks[0];
}

static int rule_alignment_comm(struct nsp_job *job, struct nsp_an_comm *c) {
  uint64_t s_min = 0;
  for (size_t k = 0; k < c->nmembers; k++) {
    const struct nsp_member *m = &job->members[c->members[k]];
    if (m->first_diff && (!s_min || m->first_diff < s_min)) s_min = m->first_diff;
  }
  if (!s_min) return 0;
  struct nsp_ref *ref = nsp_an_comm_ref(c, s_min, 0);
  if (!ref) return 0;

  struct part *parts = malloc(c->nmembers * sizeof *parts);
  if (!parts) return NSP_AN_ENOMEM;
  size_t np = 0;
  for (size_t k = 0; k < c->nmembers; k++) {
    const struct nsp_member *m = &job->members[c->members[k]];
    if (m->rank < 0 || m->last_seq < s_min) continue;
    /* A rank that first differed at s_min made diff_sig there; any other
     * rank that got this far agreed with the reference. */
    parts[np].member = c->members[k];
    parts[np].sig = m->first_diff == s_min ? m->diff_sig : ref->sig;
    parts[np].rank = m->rank;
    np++;
  }
  qsort(parts, np, sizeof *parts, cmp_part);
  size_t nsides = 0;
  for (size_t i = 0; i < np; i++)
    if (!i || cmp_sig(&parts[i - 1].sig, &parts[i].sig)) nsides++;
  if (nsides < 2) { /* the odd rank never learnt its rank */
    free(parts);
    return 0;
  }
  struct nsp_finding_priv *f = nsp_an_new_finding(job, NSP_FIND_KIND_MISMATCH, c);
  int ret = f ? nsp_an_alloc_sides(f, nsides) : NSP_AN_ENOMEM;
  size_t *mi = malloc(np * sizeof *mi);
  if (!mi) ret = NSP_AN_ENOMEM;
  for (size_t i = 0, s = 0; i < np && !ret; s++) {
    size_t j = i;
    while (j < np && !cmp_sig(&parts[i].sig, &parts[j].sig)) {
      mi[j - i] = parts[j].member;
      j++;
    }
    struct nsp_side *side = &f->sides[s];
    ret = nsp_an_side_from_members(job, side, mi, j - i);
    nsp_an_call_from_sig(&side->call, &parts[i].sig, c->info.id, s_min);
    /* Where each rank made its call at s_min: pass 2 looks it up. */
    for (size_t p = 0; p < j - i && !ret; p++) {
      const struct nsp_member *m = &job->members[mi[p]];
      ret = nsp_an_want_site(job, m->trace, m->local, s_min, &((struct nsp_proc *)side->procs)[p].site);
    }
    i = j;
  }
  free(mi);
  free(parts);
  NSP_TRY(ret);
  qsort(f->sides, nsides, sizeof *f->sides, cmp_side_first_rank);
  for (size_t s = 0; s < nsides; s++) NSP_TRY(nsp_an_side_text_call(&f->sides[s]));
  f->pub.kind = mismatch_kind(f);
  f->pub.hint = nsp_finding_kind_hint(f->pub.kind);
  f->pub.seq = s_min;
  f->pub.time_ns = ref->t_min;
  NSP_TRY(mark_odd(f));
  f->pub.api = f->sides[0].call.api;
  if (f->pub.nodd) /* name the odd side's op: that is the call to look at */
    for (size_t s = 0; s < nsides; s++)
      if (f->sides[s].ranks[0] == f->odd[0]) f->pub.api = f->sides[s].call.api;
  /* Later differing seqs are usually consequences (a skipped collective
   * shifts every later one); count them instead of reporting them. */
  uint64_t later = 0;
  for (size_t k = 0; k < c->refs.npages; k++) {
    const struct nsp_ref *pg = c->refs.pages[k];
    for (unsigned e = 0; e < NSP_SEQ_PAGE; e++)
      if (pg[e].set && pg[e].differs && c->refs.page_nos[k] * NSP_SEQ_PAGE + e > s_min) later++;
  }
  f->pub.later = later;
  c->mismatch_seq = s_min;
  c->mismatch_kind = f->pub.kind;
  c->mismatch_id = f->id;
  return 0;
}

/* ---- rule 2: send/recv pairing ------------------------------------------ */

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

static const struct nsp_runs *member_runs(const struct nsp_member *m, int peer, int dir) {
  const size_t *pi = nsp_u64map_get(&m->p2p_index, (uint64_t)(int64_t)peer);
  return pi ? &m->p2p[*pi].dir[dir] : NULL;
}

/* Same size on the wire: bytes when both dtypes are known, else the exact
 * (count, dtype) pair. */
static int run_same(const struct nsp_run *a, const struct nsp_run *b) {
  size_t sa = nsp_dtype_size(a->dtype), sb = nsp_dtype_size(b->dtype);
  int oa = sa && a->count > UINT64_MAX / sa, ob = sb && b->count > UINT64_MAX / sb;
  if (sa && sb && !oa && !ob) return a->count * sa == b->count * sb;
  return a->count == b->count && a->dtype == b->dtype;
}

static uint64_t runs_total(const struct nsp_runs *r) {
  uint64_t n = 0;
  for (size_t i = 0; r && i < r->n; i++) n += r->v[i].n;
  return n;
}

/* Posted seqs above `above`, and the first of them. */
static uint64_t runs_above(const struct nsp_runs *r, uint64_t above, uint64_t *first) {
  uint64_t n = 0;
  *first = 0;
  for (size_t i = 0; r && i < r->n; i++) {
    const struct nsp_run *v = &r->v[i];
    uint64_t end = v->seq0 + v->n; /* exclusive */
    if (end <= above + 1) continue;
    uint64_t lo = v->seq0 > above ? v->seq0 : above + 1;
    if (!*first || lo < *first) *first = lo;
    n += end - lo;
  }
  return n;
}

static const struct nsp_run *run_at(const struct nsp_runs *r, uint64_t seq) {
  for (size_t i = 0; r && i < r->n; i++)
    if (seq >= r->v[i].seq0 && seq - r->v[i].seq0 < r->v[i].n) return &r->v[i];
  return NULL;
}

/* Sends/recvs left unjudged on one communicator because one member's
 * trace stops covering them (rule 2): counted per such member, so that a
 * job of thousands of pairs (an all-to-all by send/recv) gets one note per
 * member, with its first pair as the example. */
struct p2p_uncovered {
  uint64_t pairs, ops; /* 0: nothing left unjudged for this member */
  const struct nsp_member *from;
  int dir;
  uint64_t n, k;
  const struct nsp_runs *r;
};

/* The note for n sends (dir 0) or recvs (dir 1) of `from` posted to/from
 * `to` above `to`'s highest matching seq (the first: #k), left unjudged
 * because `to`'s trace stops covering that direction (its runs: r); `more`
 * pairs (`more_ops` operations) with `to` were left unjudged besides. */
static int note_p2p_uncovered(struct nsp_job *job, const struct nsp_an_comm *c, const struct nsp_member *from,
                              const struct nsp_member *to, int dir, uint64_t n, uint64_t k, const struct nsp_runs *r,
                              uint64_t more, uint64_t more_ops) {
  const struct nsp_trace *t = job->traces[to->trace];
  const char *op = dir ? "recv" : "send", *their = dir ? "send" : "recv";
  struct nsp_sbuf b = {0};
  nsp_an_put_rank(&b, job, from->rank, from->trace);
  if (n == 1) nsp_sbuf_printf(&b, "'s %s #%llu %s ", op, (unsigned long long)k, dir ? "from" : "to");
  else nsp_sbuf_printf(&b, "'s %llu %ss %s ", (unsigned long long)n, op, dir ? "from" : "to");
  nsp_an_put_rank(&b, job, to->rank, to->trace);
  if (n == 1) nsp_sbuf_printf(&b, " on communicator %016llx is not judged: ", (unsigned long long)c->info.id);
  else
    nsp_sbuf_printf(&b, " from #%llu on, on communicator %016llx, are not judged: ", (unsigned long long)k,
                    (unsigned long long)c->info.id);
  nsp_sbuf_printf(&b, "the trace of ");
  nsp_an_put_rank(&b, job, to->rank, to->trace);
  if (r && r->n)
    nsp_sbuf_printf(&b, " dropped records after its %s #%llu %s rank %d", their, (unsigned long long)r->max_seq,
                    dir ? "to" : "from", from->rank);
  else
    nsp_sbuf_printf(&b, " holds no %s %s rank %d and dropped records", their, dir ? "to" : "from", from->rank);
  nsp_sbuf_printf(&b, " (%llu dropped: ", (unsigned long long)t->info.dropped);
  nsp_an_put_drop_reasons(&b, t);
  nsp_sbuf_printf(&b, "), so it may have posted the matching %s%s", their, n == 1 ? "" : "s");
  if (more)
    nsp_sbuf_printf(&b, "; the same holds for %llu more pair%s with it (%llu sends/recvs)", (unsigned long long)more,
                    more == 1 ? "" : "s", (unsigned long long)more_ops);
  char *s = nsp_sbuf_take(&b);
  int ret = s ? nsp_job_notef(job, "%s", s) : NSP_AN_ENOMEM;
  free(s);
  return ret;
}

/* Counts n unjudged operations of `from` with `to` (see p2p_uncovered;
 * acc has a slot per member of the job). */
static void count_uncovered(struct nsp_job *job, struct p2p_uncovered *acc, const struct nsp_member *from,
                            const struct nsp_member *to, int dir, uint64_t n, uint64_t k, const struct nsp_runs *r) {
  struct p2p_uncovered *u = &acc[to - job->members];
  if (!u->pairs++) *u = (struct p2p_uncovered){1, 0, from, dir, n, k, r};
  u->ops += n;
}

/* acc: where unjudged operations are counted (see p2p_uncovered). */
static int p2p_pair(struct nsp_job *job, struct nsp_an_comm *c, const struct nsp_member *snd,
                    const struct nsp_member *rcv, const struct nsp_runs *sends, const struct nsp_runs *recvs,
                    struct p2p_uncovered *acc) {
  uint64_t first_bad = 0, nbad = 0;
  size_t i = 0, j = 0;
  while (sends && recvs && i < sends->n && j < recvs->n) {
    const struct nsp_run *a = &sends->v[i], *b = &recvs->v[j];
    uint64_t lo = a->seq0 > b->seq0 ? a->seq0 : b->seq0;
    uint64_t ae = a->seq0 + a->n, be = b->seq0 + b->n;
    uint64_t hi = ae < be ? ae : be;
    if (lo < hi && !run_same(a, b)) {
      if (!first_bad || lo < first_bad) first_bad = lo;
      nbad += hi - lo;
    }
    if (ae <= be) i++;
    else j++;
  }
  uint64_t smax = sends ? sends->max_seq : 0, rmax = recvs ? recvs->max_seq : 0;
  uint64_t first_us = 0, first_ur = 0;
  uint64_t un_s = runs_above(sends, rmax, &first_us); /* sends nobody receives */
  uint64_t un_r = runs_above(recvs, smax, &first_ur); /* recvs nobody sends */
  /* Past the point where the other side's trace stops covering the pair
   * (records dropped after its last matching op) nothing is judged. */
  if (un_s && nsp_an_p2p_uncovered(job, rcv, recvs)) {
    count_uncovered(job, acc, snd, rcv, 0, un_s, first_us, recvs);
    un_s = 0;
  }
  if (un_r && nsp_an_p2p_uncovered(job, snd, sends)) {
    count_uncovered(job, acc, rcv, snd, 1, un_r, first_ur, sends);
    un_r = 0;
  }
  if (!first_bad && !un_s && !un_r) return 0;

  int kind = first_bad ? NSP_FIND_P2P_SIZE_MISMATCH : NSP_FIND_P2P_UNMATCHED;
  struct nsp_finding_priv *f = nsp_an_new_finding(job, kind, c);
  if (!f) return NSP_AN_ENOMEM;
  uint64_t k = first_bad ? first_bad : un_s ? first_us : first_ur;
  f->pub.seq = k;
  f->pub.src = snd->rank;
  f->pub.dst = rcv->rank;
  f->pub.api = first_bad || un_s ? NSP_API_Send : NSP_API_Recv;
  f->pub.later = first_bad ? nbad - 1 + un_s + un_r : un_s + un_r - 1;
  f->p2p_member[0] = (size_t)(snd - job->members);
  f->p2p_member[1] = (size_t)(rcv - job->members);
  NSP_TRY(nsp_an_alloc_sides(f, 2));
  const struct nsp_member *who[2] = {snd, rcv};
  const struct nsp_runs *runs[2] = {sends, recvs};
  for (int s = 0; s < 2; s++) {
    struct nsp_side *side = &f->sides[s];
    size_t mi = (size_t)(who[s] - job->members);
    NSP_TRY(nsp_an_side_from_members(job, side, &mi, 1));
    side->posted = runs_total(runs[s]);
    const struct nsp_run *r = run_at(runs[s], k);
    if (r) {
      side->call.api = s ? NSP_API_Recv : NSP_API_Send;
      side->call.comm_id = c->info.id;
      side->call.seq = k;
      side->call.count = r->count;
      side->call.dtype = r->dtype;
      side->call.peer = s ? snd->rank : rcv->rank;
    }
  }
  return 0;
}

static int rule_p2p_comm(struct nsp_job *job, struct nsp_an_comm *c) {
  int any = 0;
  for (size_t k = 0; k < c->nmembers && !any; k++) any = job->members[c->members[k]].np2p > 0;
  if (!any) return 0;
  struct p2p_uncovered *acc = calloc(job->nmembers, sizeof *acc);
  if (!acc) return NSP_AN_ENOMEM;
  int ret = 0;
  for (size_t k = 0; k < c->nmembers && !ret; k++) {
    const struct nsp_member *a = &job->members[c->members[k]];
    if (a->rank < 0) continue;
    /* Duplicated ranks: pair only the first member of a rank. */
    if (k && job->members[c->members[k - 1]].rank == a->rank) continue;
    for (size_t p = 0; p < a->np2p && !ret; p++) {
      const struct nsp_p2p *s = &a->p2p[p];
      const struct nsp_member *b = nsp_an_find_member(job, c, s->peer);
      if (!b) continue; /* peer not traced: nothing to pair with */
      if (s->dir[0].n) ret = p2p_pair(job, c, a, b, &s->dir[0], member_runs(b, a->rank, 1), acc);
      /* Recvs from a peer that never sent to us at all: the loop above
       * never visits them from the sender's side. */
      const struct nsp_runs *bs = member_runs(b, a->rank, 0);
      if (!ret && s->dir[1].n && (!bs || !bs->n)) ret = p2p_pair(job, c, b, a, NULL, &s->dir[1], acc);
    }
  }
  for (size_t k = 0; k < c->nmembers && !ret; k++) {
    const struct nsp_member *to = &job->members[c->members[k]];
    const struct p2p_uncovered *u = &acc[c->members[k]];
    if (u->pairs)
      ret = note_p2p_uncovered(job, c, u->from, to, u->dir, u->n, u->k, u->r, u->pairs - 1, u->ops - u->n);
  }
  free(acc);
  return ret;
}

/* ---- rule 4: errors ----------------------------------------------------- */

static int cmp_err_trace(const void *pa, const void *pb, void *ctx) {
  const struct nsp_job *job = ctx;
  const struct nsp_trace *a = job->traces[*(const size_t *)pa];
  const struct nsp_trace *b = job->traces[*(const size_t *)pb];
  if (a->first_err.call.time_ns != b->first_err.call.time_ns)
    return a->first_err.call.time_ns < b->first_err.call.time_ns ? -1 : 1;
  return *(const size_t *)pa < *(const size_t *)pb ? -1 : 1;
}

/* nsp_an_sides_by_key callbacks of the error finding: by result code,
 * each process with its first error and its call site; a side's call is
 * its first process's error. */
static int err_key(const struct nsp_trace *t) { return t->first_err.call.result; }

static int err_proc(struct nsp_job *job, struct nsp_proc *p, const struct nsp_trace *t) {
  (void)job;
  p->call = t->first_err.call;
  p->call.last_error = NULL;
  p->site = nsp_an_site(t, t->first_err.site);
  if (t->first_err.call.last_error && !(p->call.last_error = strdup(t->first_err.call.last_error)))
    return NSP_AN_ENOMEM;
  return 0;
}

static int err_side(struct nsp_job *job, struct nsp_side *side) {
  (void)job;
  side->call = side->procs[0].call;
  side->call.last_error = NULL;
  if (side->procs[0].call.last_error && !(side->call.last_error = strdup(side->procs[0].call.last_error)))
    return NSP_AN_ENOMEM;
  char rb[32];
  return nsp_an_set_side_text(side, nsp_result_name(side->call.result, rb, sizeof rb));
}

static int rule_errors(struct nsp_job *job) {
  size_t *ti = malloc((job->ntraces ? job->ntraces : 1) * sizeof *ti);
  if (!ti) return NSP_AN_ENOMEM;
  size_t n = 0;
  uint64_t events = 0;
  for (size_t i = 0; i < job->ntraces; i++) {
    if (job->traces[i]->first_err.valid) ti[n++] = i;
    events += job->traces[i]->info.errors;
  }
  if (!n) {
    free(ti);
    return 0;
  }
  qsort_r(ti, n, sizeof *ti, cmp_err_trace, job);
  const struct nsp_trace *origin = job->traces[ti[0]];
  const struct nsp_call *oc = &origin->first_err.call;
  size_t *oci = nsp_u64map_get(&job->comm_by_id, oc->comm_id);
  struct nsp_finding_priv *f = nsp_an_new_finding(job, NSP_FIND_ERROR, oc->comm_id && oci ? job->comms[*oci] : NULL);
  if (!f) {
    free(ti);
    return NSP_AN_ENOMEM;
  }
  f->pub.comm_id = oc->comm_id;
  f->pub.seq = nsp_api_kind(oc->api) == NSP_K_COLL || nsp_api_kind(oc->api) == NSP_K_P2P ? oc->seq : 0;
  f->pub.api = oc->api;
  f->pub.time_ns = oc->time_ns;
  f->pub.later = events - 1;

  /* Sides: the origin, then the others grouped by result code, in the
   * order each code first appeared. */
  int ret = nsp_an_sides_by_key(job, f, ti, n, err_key, err_proc, err_side);
  free(ti);
  NSP_TRY(ret);
  f->odd = malloc(sizeof *f->odd);
  if (!f->odd) return NSP_AN_ENOMEM;
  f->odd[0] = origin->info.rank;
  f->pub.odd_ranks = f->odd;
  f->pub.nodd = 1;
  job->error_id = f->id;
  return nsp_an_error_hint(job, f);
}

/* ---- coverage: dropped records, cut traces ------------------------------- */

/* "rank 3" or the trace's path when it has no rank. */
static void put_trace_name(struct nsp_sbuf *b, const struct nsp_trace *t) {
  if (t->info.rank >= 0) nsp_sbuf_printf(b, "rank %d", t->info.rank);
  else nsp_sbuf_printf(b, "%s", t->path);
}

/* True when t's file was cut or damaged with nothing read after it (not
 * made whole from its crash ring); *at: the byte where reading stopped. */
static int trace_cut(const struct nsp_trace *t, unsigned long long *at) {
  if (!t->problem || t->info.recovered || strstr(t->problem, "read on from byte")) return 0;
  const char *p = strstr(t->problem, "at byte ");
  *at = p ? strtoull(p + 8, NULL, 10) : 0;
  return 1;
}

/* The highest last seq of c's members with a rank. */
static uint64_t comm_reached(const struct nsp_job *job, const struct nsp_an_comm *c) {
  uint64_t hi = 0;
  for (size_t k = 0; k < c->nmembers; k++) {
    const struct nsp_member *m = &job->members[c->members[k]];
    if (m->rank >= 0 && m->last_seq > hi) hi = m->last_seq;
  }
  return hi;
}

/* "rank 0's trace stops covering at seq 393212 (communicator ...) because
 * records were dropped (size cap ...)" for a member behind the others
 * whose trace dropped records after its last collective. */
static void put_uncovered(struct nsp_sbuf *b, const struct nsp_job *job, const struct nsp_an_comm *c,
                          const struct nsp_member *m) {
  const struct nsp_trace *t = job->traces[m->trace];
  nsp_an_put_rank(b, job, m->rank, m->trace);
  if (m->last_seq)
    nsp_sbuf_printf(b, "'s trace stops covering communicator %016llx at seq %llu", (unsigned long long)c->info.id,
                    (unsigned long long)m->last_seq);
  else
    nsp_sbuf_printf(b, "'s trace records no collective on communicator %016llx", (unsigned long long)c->info.id);
  nsp_sbuf_printf(b, " because records were dropped after it (%llu dropped: ", (unsigned long long)t->info.dropped);
  nsp_an_put_drop_reasons(b, t);
  nsp_sbuf_printf(b, "), so nothing after it can be judged for that rank");
}

/* ---- rule 3: the wavefront ---------------------------------------------- */

static int cmp_part_seq(const void *pa, const void *pb, void *ctx) {
  const struct nsp_job *job = ctx;
  const struct nsp_member *a = &job->members[*(const size_t *)pa];
  const struct nsp_member *b = &job->members[*(const size_t *)pb];
  if (a->last_seq != b->last_seq) return a->last_seq < b->last_seq ? -1 : 1;
  return cmp_member_rank(pa, pb, ctx);
}

static int rule_wavefront_comm(struct nsp_job *job, struct nsp_an_comm *c) {
  size_t *mi = malloc((c->nmembers ? c->nmembers : 1) * sizeof *mi);
  if (!mi) return NSP_AN_ENOMEM;
  size_t n = 0;
  uint64_t reached = comm_reached(job, c);
  for (size_t k = 0; k < c->nmembers; k++) {
    const struct nsp_member *m = &job->members[c->members[k]];
    if (m->rank < 0) continue;
    /* A rank behind whose trace dropped records after its last
     * collective may have gone on: it is not judged (a note says so). */
    if (m->last_seq < reached && nsp_an_member_uncovered(job, m)) {
      struct nsp_sbuf b = {0};
      put_uncovered(&b, job, c, m);
      char *s = nsp_sbuf_take(&b);
      int ret = s ? nsp_job_notef(job, "%s", s) : NSP_AN_ENOMEM;
      free(s);
      if (ret) {
        free(mi);
        return ret;
      }
      continue;
    }
    mi[n++] = c->members[k];
  }
  qsort_r(mi, n, sizeof *mi, cmp_part_seq, job);
  int skip = n < 2 || job->members[mi[0]].last_seq == job->members[mi[n - 1]].last_seq;
  uint64_t low = n ? job->members[mi[0]].last_seq : 0;
  /* A mismatch every rank reached explains why they went separate ways
   * afterwards: the wavefront would only repeat it. */
  if (!skip && c->mismatch_seq && low >= c->mismatch_seq) skip = 1;
  /* With completion tracking the hang finding says all this and more
   * (who never arrived, who waits, for how long). */
  if (c->hang_seq) skip = 1;
  /* Ranks that stopped on a failed call or an async error are explained
   * by the "error" finding. */
  if (!skip) {
    int all_err = 1;
    for (size_t i = 0; i < n && job->members[mi[i]].last_seq == low; i++)
      if (!job->members[mi[i]].has_error && !job->traces[job->members[mi[i]].trace]->unattributed_error) all_err = 0;
    if (all_err) skip = 1;
  }
  if (skip) {
    free(mi);
    return 0;
  }
  size_t nsides = 0;
  for (size_t i = 0; i < n; i++)
    if (!i || job->members[mi[i]].last_seq != job->members[mi[i - 1]].last_seq) nsides++;
  struct nsp_finding_priv *f = nsp_an_new_finding(job, NSP_FIND_STOPPED_EARLY, c);
  int ret = f ? nsp_an_alloc_sides(f, nsides) : NSP_AN_ENOMEM;
  for (size_t i = 0, s = 0; i < n && !ret; s++) {
    size_t j = i;
    while (j < n && job->members[mi[j]].last_seq == job->members[mi[i]].last_seq) j++;
    qsort_r(mi + i, j - i, sizeof *mi, cmp_member_rank, job);
    struct nsp_side *side = &f->sides[s];
    ret = nsp_an_side_from_members(job, side, mi + i, j - i);
    const struct nsp_member *m0 = &job->members[mi[i]];
    if (m0->last_seq) nsp_an_call_from_sig(&side->call, &m0->last_sig, c->info.id, m0->last_seq);
    else side->call.comm_id = c->info.id;
    for (size_t p = 0; p < j - i && !ret; p++) {
      const struct nsp_trace *t = job->traces[job->members[mi[i + p]].trace];
      struct nsp_proc *pr = (struct nsp_proc *)&side->procs[p];
      if (t->last_call.valid) {
        pr->call = t->last_call.call;
        pr->site = nsp_an_site(t, t->last_call.site);
      }
      pr->call.last_error = NULL;
    }
    if (s == 0) {
      /* The ranks behind are the ones to look at; their time is when
       * they were last seen on this communicator. */
      for (size_t p = i; p < j; p++) {
        int64_t t = job->members[mi[p]].last_t;
        if (t && (!f->pub.time_ns || t < f->pub.time_ns)) f->pub.time_ns = t;
      }
      f->odd = malloc((j - i) * sizeof *f->odd);
      if (!f->odd) ret = NSP_AN_ENOMEM;
      else memcpy(f->odd, side->ranks, (j - i) * sizeof *f->odd);
      f->pub.odd_ranks = f->odd;
      f->pub.nodd = j - i;
    }
    if (!ret) {
      char buf[300], cb[256];
      nsp_format_call(cb, sizeof cb, &side->call);
      if (m0->last_seq) snprintf(buf, sizeof buf, "last seq %llu: %s", (unsigned long long)m0->last_seq, cb);
      else snprintf(buf, sizeof buf, "made no collective");
      ret = nsp_an_set_side_text(side, buf);
    }
    i = j;
  }
  if (!ret) {
    f->pub.seq = low;
    f->pub.api = f->sides[0].call.api;
  }
  free(mi);
  return ret;
}

/* ---- pass 2: details of the send/recv calls findings name --------------- */

struct p2p_req {
  size_t trace;
  uint32_t local;
  int api, peer;
  uint64_t seq;
  struct nsp_call *out;
  const struct nsp_callsite **site_out;
};

static int cmp_req(const void *pa, const void *pb) {
  const struct p2p_req *a = pa, *b = pb;
  if (a->trace != b->trace) return a->trace < b->trace ? -1 : 1;
  if (a->local != b->local) return a->local < b->local ? -1 : 1;
  if (a->api != b->api) return a->api < b->api ? -1 : 1;
  if (a->peer != b->peer) return a->peer < b->peer ? -1 : 1;
  return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static size_t p2p_req_trace(const void *req) { return ((const struct p2p_req *)req)->trace; }

/* nsp_an_reread_fn: a send or recv some request asks about. */
static int p2p_found(const struct nsp_trace *t, const struct nsp_rec *rec, void *reqv, size_t n, void *arg) {
  (void)arg;
  struct p2p_req *req = reqv;
  if (nsp_api_kind(rec->api) != NSP_K_P2P) return 0;
  struct p2p_req key = {req[0].trace, rec->comm, rec->api, rec->peer, rec->seq, NULL, NULL};
  struct p2p_req *hit = bsearch(&key, req, n, sizeof *req, cmp_req);
  if (!hit || hit->out->time_ns) return 0;
  hit->out->time_ns = (int64_t)(rec->t_enter + (uint64_t)t->off_ns);
  hit->out->result = rec->result;
  if (hit->site_out) *hit->site_out = nsp_an_site(t, rec->site);
  if (rec->last_error && !(hit->out->last_error = strdup(rec->last_error))) return NSP_AN_ENOMEM;
  return 1;
}

static int fetch_p2p(struct nsp_job *job) {
  struct p2p_req *req = NULL;
  size_t n = 0, cap = 0;
  for (size_t i = 0; i < job->nfindings; i++) {
    struct nsp_finding_priv *f = &job->findings[i];
    if (f->p2p_member[0] == SIZE_MAX) continue;
    for (int s = 0; s < 2; s++) {
      struct nsp_side *side = &f->sides[s];
      if (side->call.api < 0) continue;
      const struct nsp_member *m = &job->members[f->p2p_member[s]];
      NSP_TRY(nsp_grow(&req, &cap, n + 1, sizeof *req));
      req[n++] = (struct p2p_req){m->trace,          m->local,   side->call.api, side->call.peer, side->call.seq,
                                  &side->call, side->nranks ? &((struct nsp_proc *)side->procs)[0].site : NULL};
    }
  }
  if (!n) return 0;
  qsort(req, n, sizeof *req, cmp_req);
  int ret = nsp_an_reread_calls(job, req, n, sizeof *req, p2p_req_trace, "send/recv details", p2p_found, NULL);
  free(req);
  NSP_TRY(ret);
  for (size_t i = 0; i < job->nfindings; i++) {
    struct nsp_finding_priv *f = &job->findings[i];
    if (f->p2p_member[0] == SIZE_MAX) continue;
    for (int s = 0; s < 2; s++) {
      int64_t t = f->sides[s].call.time_ns;
      if (t && (!f->pub.time_ns || t < f->pub.time_ns)) f->pub.time_ns = t;
    }
  }
  return 0;
}

/* ---- messages, order, summary ------------------------------------------ */

/* "s", or "" when n == 1. */
static const char *plural(uint64_t n) { return n == 1 ? "" : "s"; }

static const char *ranks_word(size_t n) { return n == 1 ? "rank" : "ranks"; }

static void put_ranks(struct nsp_sbuf *b, const struct nsp_side *s) {
  char rb[160];
  nsp_format_ranks(rb, sizeof rb, s->ranks, s->nranks);
  nsp_sbuf_printf(b, "%s %s", ranks_word(s->nranks), rb);
}

/* The process of f with communicator rank `rank` (first found), or NULL. */
static const struct nsp_proc *proc_of_rank(const struct nsp_finding *f, int rank) {
  for (size_t s = 0; s < f->nsides; s++)
    for (size_t p = 0; p < f->sides[s].nranks; p++)
      if (f->sides[s].procs[p].rank == rank) return &f->sides[s].procs[p];
  return NULL;
}

/* Up to 4 ranks of f one by one, each "rank R (job rank J)" where the
 * job rank differs; more as ranges with no job ranks ("ranks 0-7"). */
static void put_ranks_job(struct nsp_sbuf *b, const struct nsp_job *job, const struct nsp_finding *f, const int *ranks,
                          size_t n) {
  if (n > 4) {
    char rb[160];
    nsp_format_ranks(rb, sizeof rb, ranks, n);
    nsp_sbuf_printf(b, "ranks %s", rb);
    return;
  }
  for (size_t i = 0; i < n; i++) {
    const struct nsp_proc *p = proc_of_rank(f, ranks[i]);
    nsp_sbuf_printf(b, "%s", i == 0 ? "" : i + 1 == n ? " and " : ", ");
    if (p) nsp_an_put_rank(b, job, ranks[i], p->trace);
    else nsp_sbuf_printf(b, "rank %d", ranks[i]);
  }
}

static void put_odd(struct nsp_sbuf *b, const struct nsp_job *job, const struct nsp_finding *f, const char *what) {
  if (!f->nodd) return;
  nsp_sbuf_printf(b, "; ");
  put_ranks_job(b, job, f, f->odd_ranks, f->nodd);
  nsp_sbuf_printf(b, " %s", f->nodd == 1 ? what : "are the odd ones");
}

static const char *mismatch_phrase(int kind) {
  switch (kind) {
    case NSP_FIND_KIND_MISMATCH: return "ranks made different collectives";
    case NSP_FIND_DTYPE_MISMATCH: return "ranks disagree on dtype";
    case NSP_FIND_COUNT_MISMATCH: return "ranks disagree on count";
    case NSP_FIND_REDOP_MISMATCH: return "ranks disagree on the reduction op";
    default: return "ranks disagree on the root";
  }
}

static void message_mismatch(struct nsp_sbuf *b, const struct nsp_job *job, const struct nsp_finding *f) {
  nsp_sbuf_printf(b, "%s at seq %llu: ", mismatch_phrase(f->kind), (unsigned long long)f->seq);
  for (size_t s = 0; s < f->nsides; s++) {
    if (s) nsp_sbuf_printf(b, " vs ");
    put_ranks(b, &f->sides[s]);
    nsp_sbuf_printf(b, " %s", f->sides[s].text);
  }
  put_odd(b, job, f, "is the odd one");
  if (f->later)
    nsp_sbuf_printf(b, " (and %llu later seq%s also differ%s)", (unsigned long long)f->later, plural(f->later),
                    f->later == 1 ? "s" : "");
}

static void put_p2p_call(struct nsp_sbuf *b, const struct nsp_call *c) {
  char tb[32];
  size_t esz = nsp_dtype_size(c->dtype);
  nsp_sbuf_printf(b, "%llu x %s", (unsigned long long)c->count, nsp_dtype_name(c->dtype, tb, sizeof tb));
  if (esz) nsp_sbuf_printf(b, " = %llu bytes", (unsigned long long)(c->count * esz));
}


static void message_p2p(struct nsp_sbuf *b, const struct nsp_job *job, const struct nsp_finding *f) {
  const struct nsp_side *s = &f->sides[0], *r = &f->sides[1];
  unsigned long long k = (unsigned long long)f->seq;
  if (f->kind == NSP_FIND_P2P_SIZE_MISMATCH) {
    nsp_sbuf_printf(b, "send #%llu from ", k);
    nsp_an_put_rank(b, job, f->src, s->procs[0].trace);
    nsp_sbuf_printf(b, " to ");
    nsp_an_put_rank(b, job, f->dst, r->procs[0].trace);
    nsp_sbuf_printf(b, " (");
    put_p2p_call(b, &s->call);
    nsp_sbuf_printf(b, ") does not match recv #%llu at rank %d (", k, f->dst);
    put_p2p_call(b, &r->call);
    nsp_sbuf_printf(b, ")");
    if (f->later)
      nsp_sbuf_printf(b, " (and %llu later %s of this pair also %s)", (unsigned long long)f->later,
                      f->later == 1 ? "send/recv" : "sends/recvs",
                      f->later == 1 ? "differs or is unmatched" : "differ or are unmatched");
    return;
  }
  const struct nsp_side *has = s->call.api >= 0 ? s : r;
  nsp_sbuf_printf(b, "unmatched %s #%llu from ", has == s ? "send" : "recv", k);
  nsp_an_put_rank(b, job, f->src, s->procs[0].trace);
  nsp_sbuf_printf(b, " to ");
  nsp_an_put_rank(b, job, f->dst, r->procs[0].trace);
  nsp_sbuf_printf(b, " (");
  put_p2p_call(b, &has->call);
  nsp_sbuf_printf(b, "): rank %d posted %llu send%s to rank %d, rank %d posted %llu recv%s from rank %d", f->src,
                  (unsigned long long)s->posted, plural(s->posted), f->dst, f->dst, (unsigned long long)r->posted,
                  plural(r->posted), f->src);
}

static void message_stopped(struct nsp_sbuf *b, const struct nsp_finding_priv *fp, struct nsp_job *job) {
  const struct nsp_finding *f = &fp->pub;
  for (size_t s = 0; s < f->nsides; s++) {
    const struct nsp_side *side = &f->sides[s];
    if (s) nsp_sbuf_printf(b, s + 1 == f->nsides ? " while " : "; ");
    put_ranks(b, side);
    if (s == 0 && !side->call.seq) nsp_sbuf_printf(b, " made no collective");
    else if (s == 0) nsp_sbuf_printf(b, " stopped at seq %llu", (unsigned long long)side->call.seq);
    else if (s + 1 == f->nsides) nsp_sbuf_printf(b, " reached seq %llu", (unsigned long long)side->call.seq);
    else nsp_sbuf_printf(b, " stopped at seq %llu", (unsigned long long)side->call.seq);
  }
  /* What the ranks behind did last, on any communicator. */
  const struct nsp_side *low = &f->sides[0];
  size_t shown = low->nranks < 4 ? low->nranks : 4;
  for (size_t p = 0; p < shown; p++) {
    const struct nsp_call *c = &low->procs[p].call;
    if (c->api < 0) continue;
    char cb[256];
    nsp_format_call(cb, sizeof cb, c);
    nsp_sbuf_printf(b, "; ");
    nsp_an_put_rank(b, job, low->procs[p].rank, low->procs[p].trace);
    nsp_sbuf_printf(b, "'s last call: %s", cb);
    if (nsp_api_kind(c->api) == NSP_K_COLL || nsp_api_kind(c->api) == NSP_K_P2P)
      nsp_sbuf_printf(b, " seq %llu", (unsigned long long)c->seq);
    if (c->comm_id == f->comm_id) nsp_sbuf_printf(b, " on this communicator");
    else nsp_sbuf_printf(b, " on communicator %016llx", (unsigned long long)c->comm_id);
  }
  if (low->nranks > shown) nsp_sbuf_printf(b, "; ...");
  /* What the traces cannot tell: a cut file, ranks left out for drops. */
  for (size_t s = 0; s + 1 < f->nsides; s++)
    for (size_t p = 0; p < f->sides[s].nranks; p++) {
      unsigned long long at;
      if (trace_cut(job->traces[f->sides[s].procs[p].trace], &at)) {
        nsp_sbuf_printf(b, "; ");
        nsp_an_put_rank(b, job, f->sides[s].procs[p].rank, f->sides[s].procs[p].trace);
        nsp_sbuf_printf(b, "'s trace is cut at byte %llu, so it may have gone further", at);
      }
    }
  /* Linked to a mismatch elsewhere (nsp_an_link_hangs): the ranks behind
   * are blocked in it. */
  const struct nsp_finding_priv *cause = fp->cause_id != SIZE_MAX ? nsp_an_finding_by_id(job, fp->cause_id) : NULL;
  if (cause && cause->pub.kind <= NSP_FIND_ROOT_MISMATCH && cause->pub.comm_id != f->comm_id)
    nsp_sbuf_printf(b, "; this follows the %s at seq %llu on communicator %016llx, the last call of the %s behind, "
                       "where %s probably blocked",
                    nsp_finding_kind_name(cause->pub.kind), (unsigned long long)cause->pub.seq,
                    (unsigned long long)cause->pub.comm_id, low->nranks == 1 ? "rank" : "ranks",
                    low->nranks == 1 ? "it" : "they");
  if (fp->comm_index == SIZE_MAX) return;
  const struct nsp_an_comm *c = job->comms[fp->comm_index];
  uint64_t reached = comm_reached(job, c);
  for (size_t k = 0; k < c->nmembers; k++) {
    const struct nsp_member *m = &job->members[c->members[k]];
    if (m->rank < 0 || m->last_seq >= reached || !nsp_an_member_uncovered(job, m)) continue;
    nsp_sbuf_printf(b, "; not judged: ");
    put_uncovered(b, job, c, m);
  }
}

static void put_error_call(struct nsp_sbuf *b, const struct nsp_call *c, int with_text) {
  char rb[32];
  if (c->source == NSP_SRC_CALL && (nsp_api_kind(c->api) == NSP_K_COLL || nsp_api_kind(c->api) == NSP_K_P2P))
    nsp_sbuf_printf(b, " at seq %llu %s", (unsigned long long)c->seq, nsp_op_name(c->api));
  else if (c->source == NSP_SRC_ASYNC)
    nsp_sbuf_printf(b, " in an async error");
  else if (c->api >= 0)
    nsp_sbuf_printf(b, " in %s", nsp_op_name(c->api));
  nsp_sbuf_printf(b, ": %s", nsp_result_name(c->result, rb, sizeof rb));
  if (with_text && c->last_error) {
    nsp_sbuf_printf(b, " (");
    nsp_sbuf_quoted(b, c->last_error);
    nsp_sbuf_printf(b, ")");
  }
}

/* A process of an error finding, as nsp_format_proc_rank names it. */
static void put_err_proc(struct nsp_sbuf *b, const struct nsp_job *job, const struct nsp_finding *f,
                         const struct nsp_proc *p) {
  char rb[64];
  nsp_format_proc_rank(rb, sizeof rb, job, f, p);
  nsp_sbuf_printf(b, "%s", rb);
}

static void message_error(struct nsp_sbuf *b, const struct nsp_finding *f, struct nsp_job *job, size_t cause_id) {
  const struct nsp_proc *o = &f->sides[0].procs[0];
  nsp_sbuf_printf(b, "first error: ");
  put_err_proc(b, job, f, o);
  put_error_call(b, &o->call, 1);
  if (f->nsides > 1) {
    nsp_sbuf_printf(b, "; later:");
    for (size_t s = 1; s < f->nsides; s++) {
      char rb[32];
      nsp_sbuf_printf(b, "%s ", s > 1 ? "," : "");
      if (nsp_side_job_ranks(f, &f->sides[s])) nsp_sbuf_printf(b, "job ");
      put_ranks(b, &f->sides[s]);
      nsp_sbuf_printf(b, " %s", nsp_result_name(f->sides[s].call.result, rb, sizeof rb));
    }
    /* Hosts' clocks are only as aligned as their NTP: flag a close call. */
    const struct nsp_proc *next = NULL;
    for (size_t s = 1; s < f->nsides; s++)
      for (size_t p = 0; p < f->sides[s].nranks; p++) {
        const struct nsp_proc *q = &f->sides[s].procs[p];
        if (!next || q->call.time_ns < next->call.time_ns) next = q;
      }
    /* Times come from the traces: subtract without signed overflow. */
    int64_t gap = next ? (int64_t)((uint64_t)next->call.time_ns - (uint64_t)o->call.time_ns) : 0;
    if (next && strcmp(next->host, o->host) && gap < 5000000)
      nsp_sbuf_printf(b, " (the next error, on host %s, came %.3f ms later: clock skew between hosts could reorder them)",
                      next->host, (double)gap / 1e6);
  }
  /* A rank that times out in a mismatched collective reports an error
   * there: say which finding it most likely follows from (the link,
   * nsp_an_link_hangs, is made to its communicator's mismatch only). */
  const struct nsp_finding_priv *h = cause_id != SIZE_MAX ? nsp_an_finding_by_id(job, cause_id) : NULL;
  if (h && h->pub.kind <= NSP_FIND_ROOT_MISMATCH && h->pub.comm_id == f->comm_id)
    nsp_sbuf_printf(b, "; this follows the %s at seq %llu on the same communicator and is probably its consequence",
                    nsp_finding_kind_name(h->pub.kind), (unsigned long long)h->pub.seq);
  /* A rank that gave up waiting in a hang (a timeout, the watchdog). */
  if (h && (h->pub.kind == NSP_FIND_HANG || h->pub.kind == NSP_FIND_NEVER_COMPLETED)) {
    nsp_sbuf_printf(b, "; ");
    put_err_proc(b, job, f, o);
    nsp_sbuf_printf(b, " was waiting in the %s at seq %llu on communicator %016llx, which began earlier: the error "
                       "is probably its consequence",
                    nsp_finding_kind_name(h->pub.kind), (unsigned long long)h->pub.seq,
                    (unsigned long long)h->pub.comm_id);
  }
}

/* Processes of findings that name job ranks: their rank in the finding's
 * communicator (-1 when not a member, or no communicator). */
static int proc_comm_ranks(struct nsp_job *job) {
  int *rank_of = NULL; /* trace -> rank in the finding's communicator, -1 */
  for (size_t i = 0; i < job->nfindings; i++) {
    struct nsp_finding_priv *f = &job->findings[i];
    if (!nsp_finding_job_ranks(&f->pub)) continue;
    if (!rank_of && !(rank_of = malloc((job->ntraces ? job->ntraces : 1) * sizeof *rank_of))) return NSP_AN_ENOMEM;
    for (size_t t = 0; t < job->ntraces; t++) rank_of[t] = -1;
    const struct nsp_an_comm *c = f->comm_index != SIZE_MAX ? job->comms[f->comm_index] : NULL;
    for (size_t k = c ? c->nmembers : 0; k-- > 0;) /* the first member of a trace wins */
      rank_of[job->members[c->members[k]].trace] = job->members[c->members[k]].rank;
    for (size_t s = 0; s < f->pub.nsides; s++)
      for (size_t p = 0; p < f->sides[s].nranks; p++) {
        struct nsp_proc *pr = (struct nsp_proc *)&f->sides[s].procs[p];
        pr->comm_rank = rank_of[pr->trace];
      }
  }
  free(rank_of);
  return 0;
}

static int build_messages(struct nsp_job *job) {
  for (size_t i = 0; i < job->nfindings; i++) {
    struct nsp_finding_priv *fp = &job->findings[i];
    const struct nsp_finding *f = &fp->pub;
    if (fp->message) continue; /* hang and env findings come with theirs */
    struct nsp_sbuf b = {0};
    switch (f->kind) {
      case NSP_FIND_P2P_SIZE_MISMATCH:
      case NSP_FIND_P2P_UNMATCHED:
        message_p2p(&b, job, f);
        for (int s = 0; s < 2; s++) {
          struct nsp_side *side = &fp->sides[s];
          if (side->call.api >= 0) {
            NSP_TRY(nsp_an_side_text_call(side));
          } else {
            char t[96];
            snprintf(t, sizeof t, "posted %llu %s%s", (unsigned long long)side->posted, s ? "recv" : "send",
                     plural(side->posted));
            NSP_TRY(nsp_an_set_side_text(side, t));
          }
        }
        break;
      case NSP_FIND_STOPPED_EARLY: message_stopped(&b, fp, job); break;
      case NSP_FIND_ERROR: message_error(&b, f, job, fp->cause_id); break;
      default: message_mismatch(&b, job, f); break;
    }
    fp->message = nsp_sbuf_take(&b);
    if (!fp->message) return NSP_AN_ENOMEM;
    fp->pub.message = fp->message;
  }
  return 0;
}

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

static int build_summary(struct nsp_job *job) {
  struct nsp_sbuf b = {0};
  uint64_t ncoll = 0, np2p = 0;
  for (size_t i = 0; i < job->ncomms; i++) {
    ncoll += job->comms[i]->info.ncoll;
    np2p += job->comms[i]->info.np2p;
  }
  /* Incomplete coverage: traces that dropped records or were cut. */
  int partial = 0;
  for (size_t i = 0; i < job->ntraces; i++) {
    unsigned long long at;
    if (job->traces[i]->info.dropped || trace_cut(job->traces[i], &at)) partial = 1;
  }
  if (!job->nfindings) {
    nsp_sbuf_printf(&b, "No problems found in %s%zu trace%s (%zu communicator%s, %llu collective calls, %llu send/recv calls)",
                    partial ? "what was recorded in " : "", job->ntraces, job->ntraces == 1 ? "" : "s", job->ncomms,
                    job->ncomms == 1 ? "" : "s", (unsigned long long)ncoll, (unsigned long long)np2p);
    if (partial) {
      nsp_sbuf_printf(&b, "; coverage is incomplete: ");
      size_t shown = 0, more = 0;
      for (size_t i = 0; i < job->ntraces; i++) {
        const struct nsp_trace *t = job->traces[i];
        unsigned long long at;
        int cut = trace_cut(t, &at);
        if (!t->info.dropped && !cut) continue;
        if (shown == 4) {
          more++;
          continue;
        }
        if (shown++) nsp_sbuf_printf(&b, ", ");
        if (t->info.dropped) {
          uint64_t all = t->info.dropped + t->info.records;
          uint64_t pct = (t->info.dropped * 100 + all / 2) / all;
          if (pct) nsp_sbuf_printf(&b, "%llu%% of ", (unsigned long long)pct);
          else nsp_sbuf_printf(&b, "under 1%% of ");
          put_trace_name(&b, t);
          nsp_sbuf_printf(&b, "'s records were dropped (");
          nsp_an_put_drop_reasons(&b, t);
          nsp_sbuf_printf(&b, ")%s", cut ? " and " : "");
        } else {
          put_trace_name(&b, t);
          nsp_sbuf_printf(&b, "'s ");
        }
        if (cut) nsp_sbuf_printf(&b, "trace is cut at byte %llu", at);
      }
      if (more) nsp_sbuf_printf(&b, " (and %zu more trace%s)", more, more == 1 ? "" : "s");
    }
    nsp_sbuf_printf(&b, ".");
  } else {
    const struct nsp_finding *f = &job->findings[0].pub;
    size_t counts[NSP_FIND_KIND_COUNT] = {0};
    for (size_t i = 0; i < job->nfindings; i++) counts[job->findings[i].pub.kind]++;
    nsp_sbuf_printf(&b, "%zu finding%s (", job->nfindings, job->nfindings == 1 ? "" : "s");
    int first = 1;
    for (int k = 0; k < NSP_FIND_KIND_COUNT; k++) {
      if (!counts[k]) continue;
      nsp_sbuf_printf(&b, "%s%zu %s", first ? "" : ", ", counts[k], nsp_finding_kind_name(k));
      first = 0;
    }
    nsp_sbuf_printf(&b, ") in %zu trace%s. The first problem (%s)", job->ntraces, job->ntraces == 1 ? "" : "s",
                    nsp_finding_kind_name(f->kind));
    if (f->comm_id) nsp_sbuf_printf(&b, " is on communicator %016llx", (unsigned long long)f->comm_id);
    else if (nsp_finding_names_comm(f)) nsp_sbuf_printf(&b, " is on no communicator");
    if (f->comm) {
      nsp_sbuf_printf(&b, " (%d rank%s", f->comm->nranks, f->comm->nranks == 1 ? "" : "s");
      if (f->comm->parent_id)
        nsp_sbuf_printf(&b, ", split from %016llx with color %d", (unsigned long long)f->comm->parent_id,
                        f->comm->color);
      if (f->comm->name[0]) {
        nsp_sbuf_printf(&b, ", ");
        nsp_sbuf_quoted(&b, f->comm->name);
      }
      nsp_sbuf_printf(&b, ")");
    }
    nsp_sbuf_printf(&b, ": %s. Hint: %s.", f->message, f->hint);
    if (job->nfindings > 1) nsp_sbuf_printf(&b, " The other findings follow from it or are listed by likely cause.");
  }
  /* Ranks the wavefront could not judge (their notes say more). */
  for (size_t ci = 0; ci < job->ncomms; ci++) {
    const struct nsp_an_comm *c = job->comms[ci];
    uint64_t reached = comm_reached(job, c);
    for (size_t k = 0; k < c->nmembers; k++) {
      const struct nsp_member *m = &job->members[c->members[k]];
      if (m->rank < 0 || m->last_seq >= reached || !nsp_an_member_uncovered(job, m)) continue;
      const struct nsp_trace *t = job->traces[m->trace];
      nsp_sbuf_printf(&b, " ");
      nsp_an_put_rank(&b, job, m->rank, m->trace);
      nsp_sbuf_printf(&b, "'s trace stops covering communicator %016llx at seq %llu because records were dropped (",
                      (unsigned long long)c->info.id, (unsigned long long)m->last_seq);
      nsp_an_put_drop_reasons(&b, t);
      nsp_sbuf_printf(&b, "): nothing after it is judged for that rank.");
    }
  }
  if (job->nnotes) nsp_sbuf_printf(&b, " See the %zu note%s below.", job->nnotes, job->nnotes == 1 ? "" : "s");
  job->summary = nsp_sbuf_take(&b);
  return job->summary ? 0 : NSP_AN_ENOMEM;
}

/* Order keys: a finding that follows from another sorts right after the
 * root of its chain, in the root's class; then cause ids become indices. */
static int order_findings(struct nsp_job *job) {
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

/* More than one known NCCL version among the traces. */
static void find_version_skew(struct nsp_job *job) {
  int32_t v = 0;
  for (size_t i = 0; i < job->ntraces; i++) {
    int32_t x = job->traces[i]->info.nccl_version;
    if (x <= 0) continue;
    if (v && x != v) job->version_skew = 1;
    v = x;
  }
}

int nsp_an_run_rules(struct nsp_job *job) {
  NSP_TRY(prepare_comms(job));
  assign_job_ranks(job);
  find_version_skew(job);
  for (size_t i = 0; i < job->ncomms; i++) NSP_TRY(rule_alignment_comm(job, job->comms[i]));
  for (size_t i = 0; i < job->ncomms; i++) NSP_TRY(rule_p2p_comm(job, job->comms[i]));
  NSP_TRY(rule_errors(job));
  NSP_TRY(nsp_an_rule_hangs(job));
  for (size_t i = 0; i < job->ncomms; i++) NSP_TRY(rule_wavefront_comm(job, job->comms[i]));
  NSP_TRY(nsp_an_rule_env(job));
  NSP_TRY(nsp_an_rule_signals(job));
  NSP_TRY(nsp_an_link_hangs(job));
  nsp_an_link_signals(job);
  NSP_TRY(fetch_p2p(job));
  NSP_TRY(nsp_an_fetch_sites(job));
  NSP_TRY(proc_comm_ranks(job));
  NSP_TRY(build_messages(job));
  NSP_TRY(order_findings(job));
  return build_summary(job);
}
