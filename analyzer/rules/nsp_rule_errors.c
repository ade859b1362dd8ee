/* nsp_rule_errors.c - rule 4 of docs/REPORT.md: errors.  Each process's
 * first error in time (the loader keeps it); the earliest across the job
 * is the likely origin, side 1 of one "error" finding, the other
 * processes grouped by result code after it.  Its hint comes from the hint
 * table (findings/nsp_an_hints.c).  Ranks are job ranks: an error may be
 * on any communicator, or none. */
#include <stdlib.h>
#include <string.h>

#include "nsp_names.h"
#include "nsp_rule.h"

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
  p->pysite = nsp_an_pysite(t, t->first_err.pysite);
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

static int check(struct nsp_job *job) {
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
  NSP_TRY(nsp_an_set_odd(f, &origin->info.rank, 1));
  job->error_id = f->id;
  return nsp_an_error_hint(job, f);
}

/* ---- the link ------------------------------------------------------------- */

/* True when error e's origin o follows the mismatch of its communicator c:
 * a collective it called at or after the mismatched seq failed, or (an
 * async error, a failed finalize or abort: the timeout of a rank blocked
 * in the mismatch) the process reached that seq on c and the error came
 * no earlier than the mismatch. */
static int error_after_mismatch(struct nsp_job *job, const struct nsp_an_comm *c, const struct nsp_proc *o) {
  if (!c || !c->mismatch_seq) return 0;
  if (o->call.source == NSP_SRC_CALL)
    return nsp_api_kind(o->call.api) == NSP_K_COLL && o->call.seq >= c->mismatch_seq;
  if (o->call.source != NSP_SRC_ASYNC && o->call.source != NSP_SRC_COMM_END) return 0;
  const struct nsp_member *m = nsp_an_member_of_trace(job, c, o->trace);
  const struct nsp_finding_priv *mf = nsp_an_finding_by_id(job, c->mismatch_id);
  if (!m || m->last_seq < c->mismatch_seq) return 0;
  return !(mf && mf->pub.time_ns && o->call.time_ns && o->call.time_ns < mf->pub.time_ns);
}

static int is_group_end(int api) { return api == NSP_API_GroupEnd || api == NSP_API_GroupSimulateEnd; }

/* An error ncclGroupEnd returned for a group on communicator comm_id
 * (origin o) follows from the finding there that explains it: the first,
 * likely cause first (a mismatch or send/recv finding, then a hang, then a
 * wavefront), that began no later than the error and is likelier than
 * *order (updated).  SIZE_MAX: none. */
static size_t group_end_cause(const struct nsp_job *job, const struct nsp_finding_priv *e, uint64_t comm_id,
                              const struct nsp_proc *o, int *order) {
  size_t best = SIZE_MAX;
  for (size_t i = 0; i < job->nfindings; i++) {
    const struct nsp_finding_priv *h = &job->findings[i];
    if (h == e || h->pub.comm_id != comm_id || h->pub.kind == NSP_FIND_ERROR) continue;
    if (h->order >= NSP_CLASS_ENV || h->order >= *order) continue;
    if (h->pub.time_ns && o->call.time_ns && h->pub.time_ns > o->call.time_ns) continue;
    best = h->id;
    *order = h->order;
  }
  return best;
}

/* An error of ncclGroupEnd: of every communicator its group's calls were
 * on, the one whose finding explains it best (group_end_cause; the first
 * in call order on a tie) becomes the error's communicator.  SIZE_MAX: no
 * finding on any of them (the error stays on the group's first). */
static size_t group_end_link(struct nsp_job *job, struct nsp_finding_priv *e, const struct nsp_proc *o) {
  const struct nsp_event *fe = &job->traces[o->trace]->first_err;
  size_t best = SIZE_MAX;
  uint64_t best_comm = 0;
  int order = NSP_CLASS_ENV;
  for (size_t k = 0; k < fe->ngroup_comms; k++) {
    size_t id = group_end_cause(job, e, fe->group_comms[k], o, &order);
    if (id != SIZE_MAX) {
      best = id;
      best_comm = fe->group_comms[k];
    }
  }
  if (best == SIZE_MAX || best_comm == e->pub.comm_id) return best;
  const struct nsp_an_comm *c = nsp_an_comm_of(job, best_comm);
  const size_t *ci = nsp_u64map_get(&job->comm_by_id, best_comm);
  if (!c || !ci) return SIZE_MAX;
  e->pub.comm_id = best_comm;
  e->pub.comm = &c->info;
  e->comm_index = *ci;
  for (size_t s = 0; s < e->pub.nsides; s++)
    for (size_t p = 0; p < e->sides[s].nranks; p++) {
      struct nsp_proc *q = (struct nsp_proc *)&e->pub.sides[s].procs[p];
      if (q->call.comm_id != fe->call.comm_id || q->trace != o->trace) continue;
      q->call.comm_id = best_comm;
      const struct nsp_member *m = nsp_an_member_of_trace(job, c, q->trace);
      if (m) q->comm_rank = m->rank;
    }
  e->sides[0].call.comm_id = best_comm;
  return best;
}

/* An error on a rank that was waiting in a root hang that began before it
 * (a timeout, the watchdog) follows from that hang; an error after a
 * mismatch on its communicator, from the mismatch.  Runs once the hangs
 * are linked (NSP_LINK_ROOTS): only a root hang explains it. */
static int link(struct nsp_job *job) {
  size_t n = job->nfindings;
  struct nsp_finding_priv *e = job->error_id != SIZE_MAX ? nsp_an_finding_by_id(job, job->error_id) : NULL;
  if (e && e->pub.nsides && e->sides[0].nranks) {
    const struct nsp_proc *o = &e->sides[0].procs[0];
    const struct nsp_an_comm *c = nsp_an_comm_of(job, e->pub.comm_id);
    size_t ge = e->pub.comm_id && is_group_end(o->call.api) ? group_end_link(job, e, o) : SIZE_MAX;
    if (ge != SIZE_MAX) {
      e->cause_id = ge;
    } else if (error_after_mismatch(job, c, o)) {
      e->cause_id = c->mismatch_id;
    } else if (o->call.source == NSP_SRC_COMM_INIT && job->traces[o->trace]->init_wait_id != SIZE_MAX) {
      /* A creation that failed waiting for ranks that never made it. */
      e->cause_id = job->traces[o->trace]->init_wait_id;
    } else {
      for (size_t i = 0; i < n && e->cause_id == SIZE_MAX; i++) {
        const struct nsp_finding_priv *h = &job->findings[i];
        if (!nsp_an_kind_is_hang(h->pub.kind) || h->cause_id != SIZE_MAX || !h->pub.time_ns || h->pub.time_ns > o->call.time_ns) continue;
        const struct nsp_side *wt = nsp_an_side_with_role(h, NSP_ROLE_WAITING);
        for (size_t p = 0; wt && p < wt->nranks; p++)
          if (wt->procs[p].trace == o->trace) e->cause_id = h->id;
      }
      /* Without completion tracking a rank that died or stalled shows as
       * stopped-early, and its peers' timeouts come later: they follow
       * from it (the error's origin is a rank that got further). */
      /* The stopped ranks include the waiting victims too (a rank stuck in
       * a recv from a dead peer stops as well): a stopped rank whose trace
       * has no error at all is the likelier root (killed, crashed, stuck
       * in the host code), and an error elsewhere follows from it.  The
       * origin may be a group end, which names no communicator. */
      for (size_t i = 0; i < n && e->cause_id == SIZE_MAX; i++) {
        const struct nsp_finding_priv *w = &job->findings[i];
        if (w->pub.kind != NSP_FIND_STOPPED_EARLY || !w->pub.nsides) continue;
        if (e->pub.comm_id && w->pub.comm_id != e->pub.comm_id) continue;
        if (w->pub.time_ns && o->call.time_ns && w->pub.time_ns > o->call.time_ns) continue;
        const struct nsp_side *behind = &w->sides[0];
        int origin_behind = 0, silent = 0;
        for (size_t p = 0; p < behind->nranks; p++) {
          if (behind->procs[p].trace == o->trace) origin_behind = 1;
          else if (job->traces[behind->procs[p].trace]->info.errors == 0) silent = 1;
        }
        if (!origin_behind || silent) e->cause_id = w->id;
      }
    }
  }
  return 0;
}

/* ---- the message ------------------------------------------------------------ */

/* group_more: for an error of ncclGroupEnd on a communicator, whether its
 * group had calls on other communicators too (-1: not such an error). */
static void put_error_call(struct nsp_sbuf *b, const struct nsp_call *c, int with_text, int group_more) {
  char rb[32];
  if (c->source == NSP_SRC_CALL && (nsp_api_kind(c->api) == NSP_K_COLL || nsp_api_kind(c->api) == NSP_K_P2P))
    nsp_sbuf_printf(b, " at seq %llu %s", (unsigned long long)c->seq, nsp_op_name(c->api));
  else if (c->source == NSP_SRC_ASYNC)
    nsp_sbuf_printf(b, " in an async error");
  else if (group_more >= 0)
    nsp_sbuf_printf(b, " in %s of a group of calls on this communicator%s", nsp_op_name(c->api),
                    group_more ? " and others" : "");
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

static int message(struct nsp_job *job, struct nsp_finding_priv *fp) {
  const struct nsp_finding *f = &fp->pub;
  size_t cause_id = fp->cause_id;
  struct nsp_sbuf sb = {0}, *b = &sb;
  const struct nsp_proc *o = &f->sides[0].procs[0];
  nsp_sbuf_printf(b, "first error: ");
  put_err_proc(b, job, f, o);
  int group = f->comm_id && is_group_end(o->call.api) ? job->traces[o->trace]->first_err.group_more : -1;
  put_error_call(b, &o->call, 1, group);
  if (f->nsides > 1) {
    nsp_sbuf_printf(b, "; later:");
    for (size_t s = 1; s < f->nsides; s++) {
      char rb[32];
      nsp_sbuf_printf(b, "%s ", s > 1 ? "," : "");
      nsp_an_put_side_ranks(b, job, f, &f->sides[s]);
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
   * there: say which finding it most likely follows from (the link above
   * is made to its communicator's mismatch only). */
  const struct nsp_finding_priv *h = cause_id != SIZE_MAX ? nsp_an_finding_by_id(job, cause_id) : NULL;
  if (h && nsp_an_kind_is_mismatch(h->pub.kind) && h->pub.comm_id == f->comm_id)
    nsp_sbuf_printf(b, "; this follows the %s at seq %llu on the same communicator and is probably its consequence",
                    nsp_finding_kind_name(h->pub.kind), (unsigned long long)h->pub.seq);
  else if (h && group >= 0 && h->pub.comm_id == f->comm_id && !nsp_an_kind_is_hang(h->pub.kind))
    nsp_sbuf_printf(b, "; this follows the %s %s%llu on the same communicator and is probably its consequence",
                    nsp_finding_kind_name(h->pub.kind),
                    nsp_an_kind(h->pub.kind)->sides == NSP_SIDES_SEND_RECV ? "at #" : "at seq ",
                    (unsigned long long)h->pub.seq);
  /* A rank that gave up waiting in a hang (a timeout, the watchdog). */
  if (h && nsp_an_kind_is_hang(h->pub.kind)) {
    nsp_sbuf_printf(b, "; ");
    put_err_proc(b, job, f, o);
    nsp_sbuf_printf(b, " was waiting in the %s at seq %llu on communicator %016llx, which began earlier: the error "
                       "is probably its consequence",
                    nsp_finding_kind_name(h->pub.kind), (unsigned long long)h->pub.seq,
                    (unsigned long long)h->pub.comm_id);
  }
  return nsp_an_take_message(fp, b);
}

const struct nsp_rule nsp_rule_errors = {
    .name = "errors",
    .checks = "non-success results: each process's first, and the earliest across the job (with a hint)",
    .kinds = NSP_RULE_KINDS(NSP_FIND_ERROR),
    .check = check, .link = link, .link_stage = NSP_LINK_ROOTS, .message = message,
};
