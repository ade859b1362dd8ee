/* nsp_rule_comm_init.c - communicators that were never made (format 1.5):
 * ranks in flight in ncclCommInitRank*, ncclCommSplit or ncclCommShrink
 * wait there for ranks that never made that call ("comm-init-wait").
 *
 * Creation calls in flight (INFLIGHT records of the crash rings) are
 * grouped by what they make: an init by the new communicator's id (the
 * hash of its unique id, the same on every rank), a split or shrink by its
 * parent and the parent's splits and shrinks before it (splits are
 * collective: the same on every rank of the parent).  The missing ones
 * are, for an init, ranks 0..nranks-1 that are neither in flight nor done
 * (a COMM record of that id); the processes to look at, the traces that
 * neither wait in nor completed that creation.  For a split, the parent's
 * members that neither wait in nor completed it, with their last call on
 * the parent.  A running process's call younger than nsp_an_live_ns is no
 * evidence yet (a job starting up).  A creation that failed (its COMM
 * record has an error: NCCL, or its time limit, gave up waiting) counts
 * as a wait too, so a job that ended by its timeouts reads as one killed
 * while it waited. */
#include <stdlib.h>
#include <string.h>

#include "nsp_names.h"
#include "nsp_rule.h"

/* One creation call in flight. */
struct wait {
  size_t trace;
  const struct nsp_inflight *f;
  int split;    /* a split or shrink (else an init) */
  int young;    /* a running process's, too young to tell */
  int failed;   /* it returned an error (nsp_trace.failed_inits), not in flight */
  int refused;  /* that error says the arguments were wrong (ncclInvalidArgument,
                   ncclInvalidUsage: another nranks, a rank twice): this rank
                   did call it, and the error and env findings say why */
};

/* The creation call of trace t with this api and entry (in flight or
 * failed), or NULL. */
static const struct nsp_inflight *creation_of(const struct nsp_trace *t, int api, int64_t time_ns) {
  for (size_t i = 0; i < t->ninflight; i++)
    if (t->inflight[i].call.api == api && t->inflight[i].call.time_ns == time_ns) return &t->inflight[i];
  for (size_t i = 0; i < t->nfailed_inits; i++)
    if (t->failed_inits[i].call.api == api && t->failed_inits[i].call.time_ns == time_ns) return &t->failed_inits[i];
  return NULL;
}

static int is_split(int api) { return api == NSP_API_CommSplit || api == NSP_API_CommShrink; }

/* Same creation: an init of one id, or the same split of one parent. */
static int same(const struct wait *a, const struct wait *b) {
  if (a->split != b->split) return 0;
  if (!a->split) return a->f->new_comm_id == b->f->new_comm_id;
  return a->f->parent_id == b->f->parent_id && a->f->split_index == b->f->split_index;
}

static int cmp_wait(const void *pa, const void *pb) {
  const struct wait *a = pa, *b = pb;
  if (a->split != b->split) return a->split < b->split ? -1 : 1;
  uint64_t ka = a->split ? a->f->parent_id : a->f->new_comm_id, kb = b->split ? b->f->parent_id : b->f->new_comm_id;
  if (ka != kb) return ka < kb ? -1 : 1;
  if (a->split && a->f->split_index != b->f->split_index) return a->f->split_index < b->f->split_index ? -1 : 1;
  return a->trace < b->trace ? -1 : a->trace > b->trace;
}

/* Whether trace t made split `index` of parent (or a later one: splits
 * come in order), or is in flight in a later one. */
static int split_done(const struct nsp_trace *t, uint64_t parent, uint32_t index) {
  for (size_t i = 0; i < t->nsplits; i++)
    if (t->splits[i].parent_id == parent && t->splits[i].split_index >= index) return 1;
  for (size_t i = 0; i < t->ninflight; i++)
    if (is_split(t->inflight[i].call.api) && t->inflight[i].parent_id == parent && t->inflight[i].split_index > index)
      return 1;
  return 0;
}

/* Whether trace ti is among w[0..n) (one creation's waiters). */
static int waits(const struct wait *w, size_t n, size_t ti) {
  for (size_t i = 0; i < n; i++)
    if (w[i].trace == ti) return 1;
  return 0;
}

/* The processes to look at: traces that neither wait in nor completed the
 * creation of w[0..n).  Into look (trace indices); returns how many.  For
 * an init, `missing` (its communicator ranks nobody made) narrows them to
 * the traces whose job rank is one of those, when every rank that came
 * has job rank = communicator rank (the world communicator). */
static size_t to_look_at(struct nsp_job *job, const struct wait *w, size_t n, const int *missing, size_t nmissing,
                         size_t *look) {
  size_t nl = 0;
  if (w[0].split) {
    /* A shrink leaves out the ranks it excludes (the dead ones, usually),
     * which the record does not list: a process that had ended before
     * the first rank entered the shrink is taken for one of them. */
    int64_t entered = w[0].f->call.time_ns;
    for (size_t i = 1; i < n; i++)
      if (w[i].f->call.time_ns < entered) entered = w[i].f->call.time_ns;
    int shrink = w[0].f->call.api == NSP_API_CommShrink;
    const struct nsp_an_comm *p = nsp_an_comm_of(job, w[0].f->parent_id);
    for (size_t k = 0; p && k < p->nmembers; k++) {
      const struct nsp_member *m = &job->members[p->members[k]];
      if (m->rank < 0 || waits(w, n, m->trace) || (nl && look[nl - 1] == m->trace)) continue;
      const struct nsp_end_info *e = &job->traces[m->trace]->info.end;
      if (shrink && e->state != NSP_END_RUNNING && e->state != NSP_END_UNKNOWN && e->time_ns < entered) continue;
      if (!split_done(job->traces[m->trace], w[0].f->parent_id, w[0].f->split_index)) look[nl++] = m->trace;
    }
    return nl;
  }
  const struct nsp_an_comm *c = nsp_an_comm_of(job, w[0].f->new_comm_id);
  int same_numbers = 1;
  for (size_t i = 0; i < n; i++) same_numbers &= job->traces[w[i].trace]->info.rank == w[i].f->rank;
  for (size_t k = 0; c && k < c->nmembers; k++) {
    const struct nsp_member *m = &job->members[c->members[k]];
    same_numbers &= job->traces[m->trace]->info.rank == m->rank;
  }
  for (size_t ti = 0; ti < job->ntraces; ti++)
    if (!waits(w, n, ti) && !nsp_an_member_of_trace(job, c, ti)) look[nl++] = ti;
  if (!same_numbers) return nl;
  size_t kept = 0;
  for (size_t i = 0; i < nl; i++)
    for (size_t j = 0; j < nmissing; j++)
      if (job->traces[look[i]]->info.rank == missing[j]) {
        look[kept++] = look[i];
        break;
      }
  return kept ? kept : nl;
}

/* An init's ranks that nobody made: 0..nranks-1 not in flight and not a
 * member of the new communicator.  Into missing (room for nranks, at most
 * 65536 listed); returns how many. */
static size_t missing_ranks(struct nsp_job *job, const struct wait *w, size_t n, int **missing) {
  int32_t nranks = 0;
  for (size_t i = 0; i < n; i++)
    if (w[i].f->nranks > nranks) nranks = w[i].f->nranks;
  if (nranks <= 0 || nranks > 65536) return 0;
  uint8_t *seen = calloc((size_t)nranks, 1);
  *missing = malloc((size_t)nranks * sizeof **missing);
  if (!seen || !*missing) {
    free(seen);
    return 0;
  }
  for (size_t i = 0; i < n; i++)
    if (w[i].f->rank >= 0 && w[i].f->rank < nranks) seen[w[i].f->rank] = 1;
  const struct nsp_an_comm *c = nsp_an_comm_of(job, w[0].f->new_comm_id);
  for (size_t k = 0; c && k < c->nmembers; k++) {
    int r = job->members[c->members[k]].rank;
    if (r >= 0 && r < nranks) seen[r] = 1;
  }
  size_t nm = 0;
  for (int32_t r = 0; r < nranks; r++)
    if (!seen[r]) (*missing)[nm++] = r;
  free(seen);
  return nm;
}

/* The last call of a process to look at: on the parent for a split (its
 * last collective there), else its last call anywhere. */
static int look_proc(struct nsp_job *job, struct nsp_proc *pr, const struct wait *w) {
  const struct nsp_an_comm *p = w->split ? nsp_an_comm_of(job, w->f->parent_id) : NULL;
  const struct nsp_member *m = p ? nsp_an_member_of_trace(job, p, pr->trace) : NULL;
  nsp_an_proc_last_call(pr, job->traces[pr->trace]);
  if (!m || !m->last_seq) return 0;
  nsp_an_call_from_sig(&pr->call, &m->last_sig, p->info.id, m->last_seq);
  pr->call.time_ns = m->last_t;
  pr->call.in_flight = m->last_inflight;
  pr->site = NULL;
  pr->pysite = NULL;
  return nsp_an_want_site(job, m->trace, m->local, m->last_seq, pr);
}

/* One creation's finding: its waiters w[0..n) (sorted by trace). */
static int make(struct nsp_job *job, const struct wait *w, size_t n) {
  int *missing = NULL;
  size_t nmissing = w[0].split ? 0 : missing_ranks(job, w, n, &missing);
  size_t *look = malloc((job->ntraces ? job->ntraces : 1) * sizeof *look);
  size_t *wt = malloc(n * sizeof *wt);
  if (!look || !wt) {
    free(missing), free(look), free(wt);
    return NSP_AN_ENOMEM;
  }
  size_t nl = to_look_at(job, w, n, missing, nmissing, look);
  free(missing);
  /* Nobody is missing: an init whose every rank came (or a split every
   * member made) that still never returned is another matter. */
  if (w[0].split ? !nl : !nmissing) {
    free(look), free(wt);
    return 0;
  }
  const struct nsp_an_comm *c =
      nsp_an_comm_of(job, w[0].split ? w[0].f->parent_id : w[0].f->new_comm_id);
  struct nsp_finding_priv *f = nsp_an_new_finding(job, NSP_FIND_COMM_INIT_WAIT, c);
  int ret = f ? nsp_an_alloc_sides(f, nl ? 2 : 1) : NSP_AN_ENOMEM;
  for (size_t i = 0; i < n; i++) wt[i] = w[i].trace;
  qsort_r(look, nl, sizeof *look, nsp_an_cmp_trace_rank, job);
  qsort_r(wt, n, sizeof *wt, nsp_an_cmp_trace_rank, job);
  for (size_t s = 0; !ret && s < f->pub.nsides; s++) {
    int waiting = s == f->pub.nsides - 1;
    const size_t *ti = waiting ? wt : look;
    size_t cnt = waiting ? n : nl;
    struct nsp_side *side = &f->sides[s];
    side->role = waiting ? NSP_ROLE_WAITING : NSP_ROLE_NOT_ARRIVED;
    ret = nsp_an_side_from_traces(job, side, ti, cnt);
    struct nsp_proc *procs = (struct nsp_proc *)side->procs;
    for (size_t p = 0; p < cnt && !ret; p++) {
      procs[p].comm_rank = -1;
      if (!waiting) {
        ret = look_proc(job, &procs[p], &w[0]);
        continue;
      }
      const struct wait *x = NULL;
      for (size_t i = 0; i < n && !x; i++)
        if (w[i].trace == ti[p]) x = &w[i];
      procs[p].call = x->f->call;
      procs[p].wait_ns = x->f->wait_ns;
      if (!x->split) procs[p].comm_rank = x->f->rank; /* the rank it asked for */
      if (!f->pub.time_ns || x->f->call.time_ns < f->pub.time_ns) f->pub.time_ns = x->f->call.time_ns;
    }
    if (ret) break;
    /* The waiting side's call: one in flight when there is one. */
    size_t shown = 0;
    for (size_t i = 1; i < n; i++)
      if (w[shown].failed && !w[i].failed) shown = i;
    side->call = waiting ? w[shown].f->call : side->call;
    side->call.comm_id = w[0].split ? w[0].f->parent_id : w[0].f->new_comm_id;
    char buf[200];
    snprintf(buf, sizeof buf,
             !waiting               ? "never called nccl%s for it"
             : !w[shown].failed     ? "in flight in nccl%s (never returned)"
                                    : "waited in nccl%s until it failed",
             nsp_api_name(w[0].f->call.api));
    ret = nsp_an_set_side_text(side, buf);
  }
  free(wt);
  free(look);
  NSP_TRY(ret);
  if (!c) f->pub.comm_id = w[0].f->new_comm_id; /* nobody made it: known by its id alone */
  f->comm_ranks_set = !w[0].split;             /* an init's ranks are the ones asked for */
  f->pub.api = w[0].f->call.api;
  const struct nsp_side *na = nsp_an_side_with_role(f, NSP_ROLE_NOT_ARRIVED);
  NSP_TRY(nsp_an_set_odd(f, na ? na->ranks : NULL, na ? na->nranks : 0));
  for (size_t i = 0; i < n; i++) job->traces[w[i].trace]->init_wait_id = f->id;
  return 0;
}

static int check(struct nsp_job *job) {
  size_t nw = 0;
  for (size_t ti = 0; ti < job->ntraces; ti++) {
    for (size_t i = 0; i < job->traces[ti]->ninflight; i++)
      nw += nsp_api_kind(job->traces[ti]->inflight[i].call.api) == NSP_K_INIT;
    nw += job->traces[ti]->nfailed_inits;
  }
  if (!nw) return 0;
  struct wait *w = malloc(nw * sizeof *w);
  if (!w) return NSP_AN_ENOMEM;
  nw = 0;
  for (size_t ti = 0; ti < job->ntraces; ti++) {
    const struct nsp_trace *t = job->traces[ti];
    for (size_t i = 0; i < t->ninflight + t->nfailed_inits; i++) {
      int failed = i >= t->ninflight;
      const struct nsp_inflight *f = failed ? &t->failed_inits[i - t->ninflight] : &t->inflight[i];
      if (nsp_api_kind(f->call.api) != NSP_K_INIT) continue;
      int split = is_split(f->call.api);
      if (split ? !f->parent_id : !f->new_comm_id) continue; /* cannot be matched with other ranks */
      uint64_t mono = (uint64_t)f->call.time_ns - (uint64_t)t->off_ns;
      int refused = failed && (f->call.result == ncclInvalidArgument || f->call.result == ncclInvalidUsage);
      w[nw++] = (struct wait){ti, f, split, !failed && nsp_an_end_young(t, mono), failed, refused};
    }
  }
  qsort(w, nw, sizeof *w, cmp_wait);
  int ret = 0;
  for (size_t i = 0, j; i < nw && !ret; i = j) {
    int evidence = 0, refused = 0;
    for (j = i; j < nw && same(&w[i], &w[j]); j++) {
      evidence |= !w[j].young;
      refused |= w[j].refused;
    }
    /* A rank whose call NCCL refused did make it: no rank waits for it. */
    if (evidence && !refused) ret = make(job, w + i, j - i);
  }
  free(w);
  return ret;
}

/* ---- the message ------------------------------------------------------------ */

/* Communicator ranks of side s's processes (those that have one), into
 * rk; returns how many. */
static size_t comm_ranks(const struct nsp_side *s, int *rk) {
  size_t n = 0;
  for (size_t p = 0; p < s->nranks; p++)
    if (s->procs[p].comm_rank >= 0) rk[n++] = s->procs[p].comm_rank;
  qsort(rk, n, sizeof *rk, nsp_an_cmp_int);
  return n;
}

/* "rank(s) R (job rank(s) J)": the ranks in the new communicator of the
 * processes of side s that know theirs, each with its job rank where
 * that differs (nsp_format_ranks_job); returns how many. */
static size_t put_comm_ranks(struct nsp_sbuf *b, const struct nsp_job *job, const struct nsp_side *s) {
  size_t n = 0;
  int *pair = malloc((s->nranks ? s->nranks : 1) * 4 * sizeof *pair); /* (rank, job rank) pairs, then both lists */
  if (!pair) return 0;
  for (size_t p = 0; p < s->nranks; p++)
    if (s->procs[p].comm_rank >= 0) {
      pair[2 * n] = s->procs[p].comm_rank;
      pair[2 * n + 1] = job->traces[s->procs[p].trace]->info.rank;
      n++;
    }
  qsort(pair, n, 2 * sizeof *pair, nsp_an_cmp_int); /* by rank: each pair's first int */
  int *rk = pair + 2 * n, *jr = rk + n;
  for (size_t i = 0; i < n; i++) {
    rk[i] = pair[2 * i];
    jr[i] = pair[2 * i + 1];
  }
  char buf[320];
  nsp_format_ranks_job(buf, sizeof buf, rk, jr, n);
  nsp_sbuf_printf(b, "%s", buf);
  free(pair);
  return n;
}

static int message(struct nsp_job *job, struct nsp_finding_priv *fp) {
  const struct nsp_finding *f = &fp->pub;
  const struct nsp_side *wt = nsp_an_side_with_role(fp, NSP_ROLE_WAITING);
  const struct nsp_side *na = nsp_an_side_with_role(fp, NSP_ROLE_NOT_ARRIVED);
  const struct nsp_trace *t0 = job->traces[wt->procs[0].trace];
  const struct nsp_inflight *x = creation_of(t0, f->api, wt->procs[0].call.time_ns);
  /* Every waiter's call failed (none in flight): they waited until then. */
  int all_failed = 1;
  for (size_t p = 0; p < wt->nranks; p++) all_failed &= !wt->procs[p].call.in_flight;
  int split = is_split(f->api);
  size_t nmax = wt->nranks + (na ? na->nranks : 0);
  int *rk = malloc((nmax ? nmax : 1) * sizeof *rk);
  if (!rk) return NSP_AN_ENOMEM;
  struct nsp_sbuf sb = {0}, *b = &sb;
  if (split)
    nsp_sbuf_printf(b, "nccl%s #%u of communicator %016llx never completed: ", nsp_api_name(f->api),
                    x ? x->split_index + 1 : 0, (unsigned long long)(x ? x->parent_id : f->comm_id));
  else
    nsp_sbuf_printf(b, "communicator %016llx (%d ranks) was never made: ", (unsigned long long)f->comm_id,
                    x ? x->nranks : -1);
  size_t n = comm_ranks(wt, rk);
  if (n) put_comm_ranks(b, job, wt);
  else nsp_sbuf_printf(b, "job %s %d", wt->nranks == 1 ? "rank" : "ranks", wt->ranks[0]);
  if (all_failed) nsp_sbuf_printf(b, " waited in %s%s until it failed", split ? "it" : "nccl", split ? "" : nsp_api_name(f->api));
  else if (split) nsp_sbuf_printf(b, " %s in it", wt->nranks == 1 ? "waits" : "wait");
  else nsp_sbuf_printf(b, " %s in nccl%s", wt->nranks == 1 ? "waits" : "wait", nsp_api_name(f->api));
  if (!split) {
    /* The ranks nobody asked for (missing_ranks again: the check kept none). */
    struct wait one = {wt->procs[0].trace, x, 0, 0, 0, 0};
    int *miss = NULL;
    size_t nm = x ? missing_ranks(job, &one, 1, &miss) : 0;
    /* missing_ranks saw one waiter: the others are not missing. */
    size_t kept = 0;
    for (size_t i = 0; i < nm; i++) {
      int came = 0;
      for (size_t k = 0; k < n && !came; k++) came = rk[k] == miss[i];
      if (!came) miss[kept++] = miss[i];
    }
    nsp_sbuf_printf(b, " for ");
    /* Ranks of x that no process claimed: no job rank to give. */
    nsp_an_put_ranks(b, miss, kept);
    nsp_sbuf_printf(b, ", which never called it");
    /* No side holds them (no trace): the headline names them. */
    int ret = 0;
    if (!na && kept) {
      struct nsp_sbuf ab = {0};
      nsp_an_put_ranks(&ab, miss, kept);
      nsp_sbuf_printf(&ab, " never called it (no trace)");
      ret = nsp_an_take_lead(fp, &ab);
    }
    free(miss);
    if (ret) {
      free(rk);
      free(nsp_sbuf_take(b));
      return ret;
    }
  } else {
    nsp_sbuf_printf(b, " for ");
    n = na ? comm_ranks(na, rk) : 0;
    if (na) put_comm_ranks(b, job, na);
    nsp_sbuf_printf(b, ", which never called it");
    if (f->api == NSP_API_CommShrink)
      nsp_sbuf_printf(b, " (unless excluded: ranks a shrink excludes do not call it, and the traces do not say "
                         "which they were)");
  }
  if (!na) {
    nsp_sbuf_printf(b, "; the ranks that never called it have no trace: they made no NCCL call (they died, hung "
                       "or took another path before it, or ran without the shim), or their traces were not "
                       "copied here");
  } else {
    nsp_sbuf_printf(b, "; the %s to look at: ", na->nranks == 1 ? "process" : "processes");
    size_t shown = na->nranks < 4 ? na->nranks : 4;
    for (size_t p = 0; p < shown; p++) {
      const struct nsp_proc *pr = &na->procs[p];
      char pb[64], cb[256];
      nsp_format_proc_rank(pb, sizeof pb, job, f, pr);
      nsp_sbuf_printf(b, "%s%s (%s pid %u)", p ? "; " : "", pb, pr->host, (unsigned)pr->pid);
      if (pr->call.api < 0) {
        nsp_sbuf_printf(b, ", which made no call");
        continue;
      }
      nsp_format_call(cb, sizeof cb, &pr->call);
      nsp_sbuf_printf(b, ", its last call%s: %s", split && pr->call.comm_id == f->comm_id ? " there" : "", cb);
      int k = nsp_api_kind(pr->call.api);
      if (k == NSP_K_COLL || k == NSP_K_P2P) nsp_sbuf_printf(b, " seq %llu", (unsigned long long)pr->call.seq);
      if (pr->call.comm_id && pr->call.comm_id != f->comm_id)
        nsp_sbuf_printf(b, " on communicator %016llx", (unsigned long long)pr->call.comm_id);
      if (pr->call.in_flight) nsp_sbuf_printf(b, " (in flight: never returned)");
      nsp_an_put_blocked(b, job, pr->comm_rank, pr->trace);
    }
    if (na->nranks > shown) nsp_sbuf_printf(b, "; ...");
    nsp_an_put_side_ends(b, job, f, na);
  }
  nsp_an_put_side_ends(b, job, f, wt);
  free(rk);
  return nsp_an_take_message(fp, b);
}

const struct nsp_rule nsp_rule_comm_init = {
    .name = "comm-init",
    .checks = "ranks in flight in ncclCommInitRank, ncclCommSplit or ncclCommShrink, waiting for ranks that never "
              "made that call",
    .kinds = NSP_RULE_KINDS(NSP_FIND_COMM_INIT_WAIT),
    .check = check, .message = message,
};
