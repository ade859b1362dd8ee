/* nsp_rule_hangs.c - rule 5 of docs/REPORT.md: hangs, from completion
 * tracking (format 1.1).
 *
 * Per communicator: the first seq that did not complete on every rank.
 * The ranks that never issued it are the ones to look at ("hang"); when
 * every rank issued it, the ones on which it never completed are named
 * ("never-completed").  A rank whose trace lost records (DROPPED) after
 * its last recorded collective there may have issued the seq: it is not
 * named as absent but as "arrival-unknown".  Across communicators, a rank
 * that never arrived because it is stuck in another communicator's hang
 * links the two ("caused by"), so the report names the root hang first. */
#include <stdlib.h>
#include <string.h>

#include "nsp_names.h"
#include "nsp_rule.h"

static const int role_order[] = {NSP_ROLE_NOT_ARRIVED, NSP_ROLE_WAITING,   NSP_ROLE_ARRIVAL_UNKNOWN,
                                 NSP_ROLE_FAILED,      NSP_ROLE_UNTRACKED, NSP_ROLE_COMPLETED};
#define NROLES (sizeof role_order / sizeof *role_order)
/* Indices into role_order. */
enum { R_NOT_ARRIVED = 0, R_WAITING = 1, R_UNKNOWN = 2 };

/* Hints for hangs with ranks whose arrival is unknown (the kind's own hint
 * says "the ranks that did not arrive are the ones to look at"). */
static const char hint_unknown[] =
    "no rank is known to have stayed away: the ranks whose trace lost records after their last recorded "
    "collective here (ring full, write errors or NCCLSPY_MAX_MB) may or may not have issued this one - look at "
    "them first (py-spy dump --native, their logs), then at the waiting ranks; to trace them whole next time, "
    "raise NCCLSPY_RING or NCCLSPY_MAX_MB";
static const char hint_unknown_too[] =
    "; the ranks whose trace lost records after their last recorded collective here may or may not have "
    "arrived (raise NCCLSPY_RING or NCCLSPY_MAX_MB to trace them whole)";

static int tracked(const struct nsp_trace *t) { return (t->info.tracking & NSP_TRACK_COMPLETION) != 0; }

static int role_of(const struct nsp_job *job, const struct nsp_member *m, uint64_t h) {
  /* Its last recorded collective is below h: absent, unless records were
   * lost after that one (then it may have gone on to h and beyond). */
  if (m->last_seq < h) return nsp_an_member_uncovered(job, m) ? NSP_ROLE_ARRIVAL_UNKNOWN : NSP_ROLE_NOT_ARRIVED;
  if (m->first_err_seq == h) return NSP_ROLE_FAILED;
  /* In flight at h (1.5): it arrived and its call never returned, with
   * or without completion tracking, whatever it lost. */
  if (m->inflight_seq == h) return NSP_ROLE_WAITING;
  if (!tracked(job->traces[m->trace])) return NSP_ROLE_UNTRACKED;
  /* Records lost after its last collective here may have held the
   * COMPLETION of h (or of an earlier call, which h ran after): whether h
   * completed is not known. */
  if (m->first_pending && m->first_pending <= h && nsp_an_member_uncovered(job, m)) return NSP_ROLE_UNTRACKED;
  if (m->first_pending == h) return NSP_ROLE_WAITING;
  /* Some of its calls here asked for no completion (NCCLSPY_TRACK=0): it
   * may not have completed this one either. */
  if (m->nuntracked) return NSP_ROLE_UNTRACKED;
  return NSP_ROLE_COMPLETED;
}

/* The call a waiting member made at h: in flight there, or the one that
 * never completed. */
static const struct nsp_sig *waiting_sig(const struct nsp_member *m, uint64_t h) {
  return m->inflight_seq == h ? &m->inflight_sig : &m->pend_sig;
}

/* lost_after: arrival-unknown sides, the last seq their traces cover
 * (UINT64_MAX when it differs between their ranks). */
static int side_text(struct nsp_side *s, int role, uint64_t h, uint64_t lost_after) {
  char cb[256], buf[400];
  nsp_format_call(cb, sizeof cb, &s->call);
  const char *tr = s->nranks == 1 ? "its trace" : "their traces";
  switch (role) {
    case NSP_ROLE_NOT_ARRIVED: snprintf(buf, sizeof buf, "did not arrive at seq %llu", (unsigned long long)h); break;
    case NSP_ROLE_ARRIVAL_UNKNOWN:
      if (lost_after == UINT64_MAX)
        snprintf(buf, sizeof buf, "arrival at seq %llu unknown: their traces lost records after their last collective",
                 (unsigned long long)h);
      else if (lost_after)
        snprintf(buf, sizeof buf, "arrival at seq %llu unknown: %s lost records after seq %llu", (unsigned long long)h,
                 tr, (unsigned long long)lost_after);
      else
        snprintf(buf, sizeof buf, "arrival at seq %llu unknown: %s lost records and %s no collective here",
                 (unsigned long long)h, tr, s->nranks == 1 ? "holds" : "hold");
      break;
    case NSP_ROLE_WAITING:
      snprintf(buf, sizeof buf, s->call.in_flight ? "in flight in %s (never returned)" : "waiting in %s", cb);
      break;
    case NSP_ROLE_FAILED: snprintf(buf, sizeof buf, "failed in %s", cb); break;
    case NSP_ROLE_UNTRACKED: snprintf(buf, sizeof buf, "issued %s (completion not tracked)", cb); break;
    default: snprintf(buf, sizeof buf, "completed %s", cb); break;
  }
  return nsp_an_set_side_text(s, buf);
}

static int check_comm(struct nsp_job *job, struct nsp_an_comm *c) {
  uint64_t h = 0;
  for (size_t k = 0; k < c->nmembers; k++) {
    const struct nsp_member *m = &job->members[c->members[k]];
    /* Calls in flight (1.5) never completed, tracked or not. */
    if (m->rank < 0 || (!tracked(job->traces[m->trace]) && !m->pend_inflight) || !m->first_pending) continue;
    /* A call whose COMPLETION may be among records the trace lost after
     * it is no evidence of a hang (role_of: untracked). */
    if (nsp_an_member_uncovered(job, m) && !m->pend_inflight) continue;
    if (!h || m->first_pending < h) h = m->first_pending;
  }
  if (!h) return 0;
  struct nsp_ref_view refv;
  if (!nsp_an_comm_ref(c, h, &refv)) return 0;
  const struct nsp_ref_view *ref = &refv;

  size_t *by_role[NROLES];
  size_t n_role[NROLES];
  memset(n_role, 0, sizeof n_role);
  size_t *mi = malloc((c->nmembers ? c->nmembers : 1) * NROLES * sizeof *mi);
  if (!mi) return NSP_AN_ENOMEM;
  for (size_t r = 0; r < NROLES; r++) by_role[r] = mi + r * (c->nmembers ? c->nmembers : 1);
  for (size_t k = 0; k < c->nmembers; k++) {
    const struct nsp_member *m = &job->members[c->members[k]];
    if (m->rank < 0) continue;
    int role = role_of(job, m, h);
    for (size_t r = 0; r < NROLES; r++)
      if (role_order[r] == role) by_role[r][n_role[r]++] = c->members[k];
  }
  size_t nsides = 0;
  for (size_t r = 0; r < NROLES; r++) nsides += n_role[r] > 0;
  /* "hang" also when the only ranks not seen at h are ones whose traces
   * lost records: "never-completed" would claim every rank issued h. */
  int kind = n_role[R_NOT_ARRIVED] || n_role[R_UNKNOWN] ? NSP_FIND_HANG : NSP_FIND_NEVER_COMPLETED;
  struct nsp_finding_priv *f = nsp_an_new_finding(job, kind, c);
  int ret = f ? nsp_an_alloc_sides(f, nsides) : NSP_AN_ENOMEM;
  if (!ret && n_role[R_UNKNOWN] && !n_role[R_NOT_ARRIVED]) {
    f->pub.hint = hint_unknown;
  } else if (!ret && n_role[R_UNKNOWN]) {
    struct nsp_sbuf hb = {0};
    nsp_sbuf_printf(&hb, "%s%s", f->pub.hint, hint_unknown_too);
    f->hint_owned = nsp_sbuf_take(&hb);
    if (f->hint_owned) f->pub.hint = f->hint_owned;
    else ret = NSP_AN_ENOMEM;
  }
  int64_t t0 = 0;
  for (size_t r = 0, s = 0; r < NROLES && !ret; r++) {
    if (!n_role[r]) continue;
    struct nsp_side *side = &f->sides[s++];
    int role = role_order[r];
    side->role = role;
    ret = nsp_an_side_from_members(job, side, by_role[r], n_role[r]);
    if (ret) break;
    /* The side's call: its first rank's own call at h (a rank that
     * differed from the first one to get there made diff_sig). */
    const struct nsp_member *m0 = &job->members[by_role[r][0]];
    const struct nsp_sig *sig0 = role == NSP_ROLE_WAITING ? waiting_sig(m0, h)
                                 : m0->first_diff == h     ? &m0->diff_sig
                                                           : &ref->sig;
    nsp_an_call_from_sig(&side->call, sig0, c->info.id, h);
    /* In flight: every rank of the side is. */
    side->call.in_flight = role == NSP_ROLE_WAITING;
    for (size_t p = 0; p < n_role[r] && side->call.in_flight; p++)
      side->call.in_flight = job->members[by_role[r][p]].inflight_seq == h;
    if (role == NSP_ROLE_NOT_ARRIVED || role == NSP_ROLE_ARRIVAL_UNKNOWN) {
      nsp_call_clear(&side->call);
      side->call.comm_id = c->info.id;
      side->call.seq = h;
    }
    uint64_t lost_after = m0->last_seq;
    for (size_t p = 0; p < n_role[r] && !ret; p++) {
      const struct nsp_member *m = &job->members[by_role[r][p]];
      const struct nsp_trace *t = job->traces[m->trace];
      struct nsp_proc *pr = (struct nsp_proc *)&side->procs[p];
      switch (role) {
        case NSP_ROLE_ARRIVAL_UNKNOWN:
          /* Its last collective here that the trace covers; whether it
           * completed is not said (its COMPLETION may be among the lost
           * records).  Not what it is stuck in: for the same reason its
           * trace cannot tell. */
          if (m->last_seq != lost_after) lost_after = UINT64_MAX;
          if (m->last_seq) {
            nsp_an_call_from_sig(&pr->call, &m->last_sig, c->info.id, m->last_seq);
            pr->call.time_ns = m->last_t;
            ret = nsp_an_want_site(job, m->trace, m->local, m->last_seq, pr);
          }
          break;
        case NSP_ROLE_NOT_ARRIVED:
          nsp_an_proc_last_call(pr, t);
          break;
        case NSP_ROLE_WAITING: {
          /* In flight at h (it never returned), or enqueued there and
           * never completed. */
          int infl = m->inflight_seq == h;
          uint64_t mono = infl ? m->inflight_mono : m->pend_mono;
          nsp_an_call_from_sig(&pr->call, waiting_sig(m, h), c->info.id, h);
          pr->call.time_ns = infl ? m->inflight_t : m->pend_t;
          pr->call.done = 0;
          pr->call.in_flight = infl;
          pr->site = infl ? NULL : nsp_an_site(t, m->pend_site); /* a call in flight has no record */
          pr->pysite = nsp_an_pysite(t, infl ? m->inflight_pysite : m->pend_pysite); /* its INFLIGHT has it */
          pr->wait_ns = t->t_last <= mono                  ? 0
                        : t->t_last - mono > (uint64_t)INT64_MAX ? INT64_MAX /* a hostile time */
                                                                 : (int64_t)(t->t_last - mono);
          pr->done_flags = infl                                ? 0
                           : m->pend_state == NSP_PEND_ABANDONED ? NSP_DONE_ABANDONED
                           : m->pend_state == NSP_PEND_FAILED  ? NSP_DONE_ERROR
                                                               : 0;
          if (pr->call.time_ns && (!t0 || pr->call.time_ns < t0)) t0 = pr->call.time_ns;
          break;
        }
        default:
          nsp_an_call_from_sig(&pr->call, m->first_diff == h ? &m->diff_sig : &ref->sig, c->info.id, h);
          pr->call.done = role == NSP_ROLE_COMPLETED ? 1 : role == NSP_ROLE_FAILED ? 0 : -1;
          ret = nsp_an_want_site(job, m->trace, m->local, h, pr);
          break;
      }
    }
    if (!ret) ret = side_text(side, role, h, lost_after);
  }
  if (!ret) {
    f->pub.seq = h;
    f->pub.api = ref->sig.api;
    f->pub.time_ns = t0 ? t0 : ref->t_min;
    /* The ranks to look at: those that never arrived; when none is known
     * to be absent, those whose arrival is unknown; when all arrived,
     * those on which it never completed. */
    const struct nsp_side *odd = nsp_an_side_with_role(f, NSP_ROLE_NOT_ARRIVED);
    if (!odd) odd = nsp_an_side_with_role(f, NSP_ROLE_ARRIVAL_UNKNOWN);
    if (!odd) odd = &f->sides[0];
    ret = nsp_an_set_odd(f, odd->ranks, odd->nranks);
    c->hang_seq = h;
    c->hang_id = f->id;
    c->hang_t = f->pub.time_ns;
  }
  free(mi);
  return ret;
}

/* ---- links and messages --------------------------------------------------- */

static int is_hang(const struct nsp_finding_priv *f) { return nsp_an_kind_is_hang(f->pub.kind); }

/* The hang a not-arrived process is stuck in: its earliest call that never
 * completed, when that is on another communicator with a hang. */
static const struct nsp_an_comm *blocked_in(const struct nsp_job *job, const struct nsp_finding_priv *f,
                                            const struct nsp_proc *p) {
  if (p->blocked.api < 0 || p->blocked.comm_id == f->pub.comm_id) return NULL;
  const struct nsp_an_comm *c = nsp_an_comm_of(job, p->blocked.comm_id);
  return c && c->hang_seq ? c : NULL;
}

/* The communicator whose mismatched collective was a not-arrived process's
 * last call (it took part in the mismatch, then never came here), or NULL.
 * Only when that call is not on f's own communicator: there the mismatch
 * already links the hang. */
static const struct nsp_an_comm *left_after_mismatch(const struct nsp_job *job, const struct nsp_finding_priv *f,
                                                     const struct nsp_proc *p) {
  if (p->call.api < 0 || !p->call.comm_id || p->call.comm_id == f->pub.comm_id) return NULL;
  if (nsp_api_kind(p->call.api) != NSP_K_COLL) return NULL;
  const struct nsp_an_comm *c = nsp_an_comm_of(job, p->call.comm_id);
  return c && c->mismatch_seq && c->mismatch_seq == p->call.seq ? c : NULL;
}

static void link_one(struct nsp_job *job, struct nsp_finding_priv *f) {
  const struct nsp_an_comm *c = f->comm_index != SIZE_MAX ? job->comms[f->comm_index] : NULL;
  if (c && c->mismatch_seq && c->mismatch_seq <= f->pub.seq) {
    f->cause_id = c->mismatch_id;
    return;
  }
  if (nsp_an_side_with_role(f, NSP_ROLE_FAILED) && job->error_id != SIZE_MAX) {
    f->cause_id = job->error_id;
    return;
  }
  const struct nsp_side *na = nsp_an_side_with_role(f, NSP_ROLE_NOT_ARRIVED);
  if (!na) return;
  const struct nsp_an_comm *best = NULL, *mism = NULL;
  size_t init_wait = SIZE_MAX;
  int errored = 0;
  for (size_t p = 0; p < na->nranks; p++) {
    const struct nsp_an_comm *b = blocked_in(job, f, &na->procs[p]), *m;
    const struct nsp_trace *t = job->traces[na->procs[p].trace];
    if (b) {
      if (!best || b->hang_t < best->hang_t) best = b;
    } else if (t->init_wait_id != SIZE_MAX) {
      /* It waits in a communicator's creation for ranks that never came. */
      if (init_wait == SIZE_MAX) init_wait = t->init_wait_id;
    } else if (t->first_err.valid) {
      errored = 1;
    } else if ((m = left_after_mismatch(job, f, &na->procs[p]))) {
      if (!mism) mism = m;
    } else {
      return; /* free to arrive and did not: this hang is a root */
    }
  }
  if (best) f->cause_id = best->hang_id;
  else if (init_wait != SIZE_MAX) f->cause_id = init_wait;
  else if (mism) f->cause_id = mism->mismatch_id;
  else if (errored && job->error_id != SIZE_MAX) f->cause_id = job->error_id;
}

static void put_call_where(struct nsp_sbuf *b, const struct nsp_call *c, uint64_t comm_id) {
  char cb[256];
  nsp_format_call(cb, sizeof cb, c);
  nsp_sbuf_printf(b, "%s", cb);
  int k = nsp_api_kind(c->api);
  if (k == NSP_K_COLL || k == NSP_K_P2P) nsp_sbuf_printf(b, " seq %llu", (unsigned long long)c->seq);
  if (!c->comm_id) return;
  if (c->comm_id == comm_id) nsp_sbuf_printf(b, " on this communicator");
  else nsp_sbuf_printf(b, " on communicator %016llx", (unsigned long long)c->comm_id);
}

static const char *done_word(const struct nsp_call *c) {
  return c->in_flight ? "in flight: never returned"
         : c->done > 0 ? "completed"
         : c->done == 0 ? "never completed"
                        : "completion unknown";
}

static int message(struct nsp_job *job, struct nsp_finding_priv *fp) {
  const struct nsp_finding *f = &fp->pub;
  struct nsp_sbuf b = {0};
  char cb[256];
  const struct nsp_side *na = nsp_an_side_with_role(fp, NSP_ROLE_NOT_ARRIVED);
  const struct nsp_side *un = nsp_an_side_with_role(fp, NSP_ROLE_ARRIVAL_UNKNOWN);
  const struct nsp_side *wt = nsp_an_side_with_role(fp, NSP_ROLE_WAITING);
  /* The call at the seq: a waiting rank's, else the first rank's that
   * issued it (ranks absent or unknown made none there). */
  const struct nsp_side *ref = wt;
  for (size_t s = 0; !ref && s < f->nsides; s++)
    if (&f->sides[s] != na && &f->sides[s] != un) ref = &f->sides[s];
  if (ref) nsp_format_call(cb, sizeof cb, &ref->call);
  else snprintf(cb, sizeof cb, "%s", nsp_op_name(f->api));
  /* A hang with no rank known to be absent leads with the ranks whose
   * arrival is unknown and does not say "did not arrive". */
  const struct nsp_side *lead = na ? na : un;
  if (f->kind == NSP_FIND_HANG && lead) {
    nsp_sbuf_printf(&b, "seq %llu (%s) did not complete: %s", (unsigned long long)f->seq, cb, na ? "" : "whether ");
    nsp_an_put_side_ranks(&b, job, f, lead);
    if (lead->nranks <= 4) {
      nsp_sbuf_printf(&b, " (");
      for (size_t p = 0; p < lead->nranks; p++)
        nsp_sbuf_printf(&b, "%s%s pid %u", p ? ", " : "", lead->procs[p].host, lead->procs[p].pid);
      nsp_sbuf_printf(&b, ")");
    }
    if (na) {
      nsp_sbuf_printf(&b, " did not arrive");
      if (fp->cause_id == SIZE_MAX && !fp->cycle)
        nsp_sbuf_printf(&b, na->nranks == 1 ? " (the rank to look at)" : " (the ranks to look at)");
    } else {
      nsp_sbuf_printf(&b, " arrived is not known");
    }
  } else {
    if (wt) nsp_an_put_side_ranks(&b, job, f, wt);
    else nsp_an_put_comm_ranks(&b, job, f->comm_id, f->odd_ranks, f->nodd);
    nsp_sbuf_printf(&b, "'s seq %llu (%s) never completed although every traced rank issued it%s",
                    (unsigned long long)f->seq, cb,
                    wt && wt->call.in_flight ? " (in flight: the call never returned)" : "");
  }
  for (size_t s = 0; s < f->nsides; s++) {
    const struct nsp_side *sd = &f->sides[s];
    if (sd == lead || (f->kind == NSP_FIND_NEVER_COMPLETED && sd == wt)) continue;
    nsp_sbuf_printf(&b, "; ");
    if (sd->role == NSP_ROLE_ARRIVAL_UNKNOWN) nsp_sbuf_printf(&b, "whether ");
    nsp_an_put_side_ranks(&b, job, f, sd);
    switch (sd->role) {
      case NSP_ROLE_ARRIVAL_UNKNOWN: nsp_sbuf_printf(&b, " arrived is not known"); break;
      case NSP_ROLE_WAITING:
        nsp_sbuf_printf(&b, " %s inside it%s", sd->nranks == 1 ? "waits" : "wait",
                        sd->call.in_flight ? " (in flight: the call never returned)" : "");
        break;
      case NSP_ROLE_FAILED: nsp_sbuf_printf(&b, " failed it"); break;
      case NSP_ROLE_UNTRACKED: nsp_sbuf_printf(&b, " issued it (completion not tracked)"); break;
      default: nsp_sbuf_printf(&b, " completed it"); break;
    }
  }
  /* What the ranks that never arrived did last. */
  size_t shown = na ? (na->nranks < 4 ? na->nranks : 4) : 0;
  for (size_t p = 0; p < shown; p++) {
    const struct nsp_proc *pr = &na->procs[p];
    const struct nsp_an_comm *in = blocked_in(job, fp, pr);
    nsp_sbuf_printf(&b, "; ");
    nsp_an_put_rank(&b, job, pr->rank, pr->trace);
    if (in) {
      nsp_sbuf_printf(&b, " is stuck in ");
      put_call_where(&b, &pr->blocked, f->comm_id);
      nsp_sbuf_printf(&b, ", which never completed");
      continue;
    }
    if (pr->call.api < 0) {
      nsp_sbuf_printf(&b, " made no call");
      continue;
    }
    nsp_sbuf_printf(&b, "'s last call: ");
    put_call_where(&b, &pr->call, f->comm_id);
    nsp_sbuf_printf(&b, " (%s)", done_word(&pr->call));
    if (pr->blocked.api >= 0 && (pr->blocked.comm_id != pr->call.comm_id || pr->blocked.seq != pr->call.seq)) {
      nsp_sbuf_printf(&b, ", stuck behind ");
      put_call_where(&b, &pr->blocked, f->comm_id);
    }
    const struct nsp_an_comm *c = fp->comm_index != SIZE_MAX ? job->comms[fp->comm_index] : NULL;
    nsp_an_put_comm_end(&b, job, nsp_an_member_of_trace(job, c, pr->trace));
    nsp_an_put_blocked(&b, job, pr->rank, pr->trace);
  }
  if (na && na->nranks > shown) nsp_sbuf_printf(&b, "; ...");
  /* Processes still running, killed or crashed: the ranks to look at
   * first, then the waiting ones. */
  if (na) nsp_an_put_side_ends(&b, job, f, na);
  if (wt) nsp_an_put_side_ends(&b, job, f, wt);
  /* Where the traces of the ranks whose arrival is unknown stop covering
   * this communicator, and why. */
  shown = un ? (un->nranks < 4 ? un->nranks : 4) : 0;
  for (size_t p = 0; p < shown; p++) {
    const struct nsp_proc *pr = &un->procs[p];
    const struct nsp_trace *t = job->traces[pr->trace];
    nsp_sbuf_printf(&b, "; ");
    nsp_an_put_rank(&b, job, pr->rank, pr->trace);
    if (pr->call.api >= 0)
      nsp_sbuf_printf(&b, "'s trace lost records after its seq %llu on this communicator (",
                      (unsigned long long)pr->call.seq);
    else
      nsp_sbuf_printf(&b, "'s trace holds no collective on this communicator and lost records (");
    nsp_sbuf_printf(&b, "%llu dropped: ", (unsigned long long)t->info.dropped);
    nsp_an_put_drop_reasons(&b, t);
    nsp_sbuf_printf(&b, "), so it may have issued seq %llu", (unsigned long long)f->seq);
  }
  if (un && un->nranks > shown) nsp_sbuf_printf(&b, "; ...");
  /* Waiting calls the shim gave up on: the communicator was aborted
   * (the watchdog, or the program on an error) or the GPU failed. */
  size_t nab = 0, ner = 0;
  for (size_t p = 0; wt && p < wt->nranks; p++) {
    nab += (wt->procs[p].done_flags & NSP_DONE_ABANDONED) != 0;
    ner += (wt->procs[p].done_flags & NSP_DONE_ERROR) != 0;
  }
  if (nab && nab == wt->nranks)
    nsp_sbuf_printf(&b, "; the waiting %s abandoned when the communicator was aborted",
                    nab == 1 ? "call was" : "calls were");
  else if (nab)
    nsp_sbuf_printf(&b, "; %zu of the waiting calls %s abandoned when the communicator was aborted", nab,
                    nab == 1 ? "was" : "were");
  if (ner) nsp_sbuf_printf(&b, "; %zu of the waiting calls failed on the GPU (the event query returned an error)", ner);
  /* How long the waiting ranks waited, as far as their traces go. */
  if (wt) {
    int64_t lo = INT64_MAX, hi = 0;
    for (size_t p = 0; p < wt->nranks; p++) {
      if (wt->procs[p].wait_ns < lo) lo = wt->procs[p].wait_ns;
      if (wt->procs[p].wait_ns > hi) hi = wt->procs[p].wait_ns;
    }
    if (hi < 1000000) {
      /* Nothing was recorded after the enqueue: the trace cannot say. */
      if (un) {
        /* "its trace" would read as the trace that lost records */
        nsp_sbuf_printf(&b, "; ");
        nsp_an_put_side_ranks(&b, job, f, wt);
        nsp_sbuf_printf(&b, "'s %s right after the enqueue, so how long %s waited is unknown",
                        wt->nranks == 1 ? "trace ends" : "traces end", wt->nranks == 1 ? "it" : "they");
      } else {
        nsp_sbuf_printf(&b, "; %s end%s right after the enqueue, so how long %s waited is unknown",
                        wt->nranks == 1 ? "its trace" : "their traces", wt->nranks == 1 ? "s" : "",
                        wt->nranks == 1 ? "it" : "they");
      }
    } else if (hi - lo < 1000000) {
      nsp_sbuf_printf(&b, "; ");
      nsp_an_put_side_ranks(&b, job, f, wt);
      nsp_sbuf_printf(&b, " waited %.3f s (enqueue to the end of %s trace)", (double)hi / 1e9,
                      wt->nranks == 1 ? "its" : "each");
    } else {
      size_t ws = wt->nranks < 4 ? wt->nranks : 4;
      for (size_t p = 0; p < ws; p++) {
        const struct nsp_proc *pr = &wt->procs[p];
        nsp_sbuf_printf(&b, "%s ", p ? "," : ";");
        nsp_an_put_rank(&b, job, pr->rank, pr->trace);
        nsp_sbuf_printf(&b, " waited %.3f s", (double)pr->wait_ns / 1e9);
      }
      nsp_sbuf_printf(&b, "%s (enqueue to the end of each trace)", wt->nranks > ws ? ", ..." : "");
    }
  }
  const struct nsp_finding_priv *cause = fp->cause_id != SIZE_MAX ? nsp_an_finding_by_id(job, fp->cause_id) : NULL;
  if (cause && is_hang(cause)) {
    fp->pub.hint = "the ranks that did not arrive here are stuck in an earlier hang on another communicator "
                   "(the finding this one is caused by): look at that hang's ranks first";
    nsp_sbuf_printf(&b, "; this follows the %s at seq %llu on communicator %016llx, where the ranks that did not "
                        "arrive here are stuck",
                    nsp_finding_kind_name(cause->pub.kind), (unsigned long long)cause->pub.seq,
                    (unsigned long long)cause->pub.comm_id);
  } else if (cause && cause->pub.kind == NSP_FIND_COMM_INIT_WAIT) {
    nsp_sbuf_printf(&b, "; this follows the comm-init-wait on communicator %016llx: the ranks that did not arrive "
                        "here wait in nccl%s there",
                    (unsigned long long)cause->pub.comm_id, nsp_api_name(cause->pub.api));
  } else if (cause && cause->pub.kind == NSP_FIND_ERROR) {
    /* The error finding names job ranks: its origin as a rank of this
     * communicator when it is one. */
    nsp_sbuf_printf(&b, "; this follows the error of ");
    const struct nsp_proc *o = cause->pub.nsides && cause->sides[0].nranks ? &cause->sides[0].procs[0] : NULL;
    const struct nsp_an_comm *c = fp->comm_index != SIZE_MAX ? job->comms[fp->comm_index] : NULL;
    const struct nsp_member *om = o ? nsp_an_member_of_trace(job, c, o->trace) : NULL;
    if (om) nsp_an_put_rank(&b, job, om->rank, om->trace);
    else if (o) nsp_an_put_job_ranks(&b, job, &o->rank, 1);
    else nsp_sbuf_printf(&b, "a process without a rank");
  } else if (cause && cause->pub.comm_id == fp->pub.comm_id) {
    nsp_sbuf_printf(&b, "; this follows the %s at seq %llu on the same communicator",
                    nsp_finding_kind_name(cause->pub.kind), (unsigned long long)cause->pub.seq);
  } else if (cause) {
    /* A mismatch elsewhere: the ranks that did not arrive took part in it
     * last (left_after_mismatch). */
    nsp_sbuf_printf(&b, "; this follows the %s at seq %llu on communicator %016llx, the last call of the "
                        "ranks that did not arrive here",
                    nsp_finding_kind_name(cause->pub.kind), (unsigned long long)cause->pub.seq,
                    (unsigned long long)cause->pub.comm_id);
  }
  if (fp->cycle)
    nsp_sbuf_printf(&b, "; circular wait with another communicator's hang: ranks call collectives on these "
                        "communicators in different orders (a deadlock)");
  return nsp_an_take_message(fp, &b);
}

/* Causes: a hang follows from the mismatch of its communicator at or
 * before its seq, from the error when ranks failed in it, and across
 * communicators from the hang (or the mismatch, or the error) its absent
 * ranks are stuck in; hangs that wait for each other are both roots,
 * flagged as a circular wait. */
static int link(struct nsp_job *job) {
  size_t n = job->nfindings;
  for (size_t i = 0; i < n; i++)
    if (is_hang(&job->findings[i])) link_one(job, &job->findings[i]);
  /* Circular waits (A's absent ranks stuck in B, B's in A): both are
   * roots, flagged. */
  for (size_t i = 0; i < n; i++) {
    struct nsp_finding_priv *f = &job->findings[i];
    if (!is_hang(f) || f->cause_id == SIZE_MAX) continue;
    struct nsp_finding_priv *r = f;
    size_t steps = 0;
    while (r && is_hang(r) && r->cause_id != SIZE_MAX && steps <= n) {
      r = nsp_an_finding_by_id(job, r->cause_id);
      steps++;
      if (r == f) break;
    }
    if (r != f) continue;
    r = f;
    do {
      struct nsp_finding_priv *next = nsp_an_finding_by_id(job, r->cause_id);
      r->cause_id = SIZE_MAX;
      r->cycle = 1;
      r = next;
    } while (r && r != f && r->cause_id != SIZE_MAX);
  }
  return 0;
}

const struct nsp_rule nsp_rule_hangs = {
    .name = "hangs",
    .checks = "with completion tracking or calls in flight: the first seq of each communicator not complete on "
              "every rank, who never arrived, who waits, linked across communicators",
    .kinds = NSP_RULE_KINDS(NSP_FIND_HANG, NSP_FIND_NEVER_COMPLETED),
    .check_comm = check_comm, .link = link, .link_stage = NSP_LINK_FIRST,
    .message = message, .message_when = NSP_MESSAGE_AFTER_LINK,
};
