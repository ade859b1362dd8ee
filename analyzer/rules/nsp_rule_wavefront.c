/* nsp_rule_wavefront.c - rule 3 of docs/REPORT.md: ranks that stopped
 * making collectives on a communicator while others went on (the
 * wavefront), sides by the last seq each reached.  It defers to what
 * explains the stop better: a mismatch every rank reached, a hang (with
 * completion tracking), or errors on every rank behind.  A rank behind
 * whose trace dropped records after its last collective is not judged, nor
 * one behind collectives that others completed (it went on; its records
 * were lost): a note says so. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nsp_names.h"
#include "nsp_rule.h"

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

static int cmp_part_seq(const void *pa, const void *pb, void *ctx) {
  const struct nsp_job *job = ctx;
  const struct nsp_member *a = &job->members[*(const size_t *)pa];
  const struct nsp_member *b = &job->members[*(const size_t *)pb];
  if (a->last_seq != b->last_seq) return a->last_seq < b->last_seq ? -1 : 1;
  return nsp_an_cmp_member_rank(pa, pb, ctx);
}

static int running(const struct nsp_job *job, const struct nsp_member *m) {
  return job->traces[m->trace]->info.end.state == NSP_END_RUNNING;
}

/* Whether member m finished with its communicator: destroyed or
 * finalized it with success, nothing in flight.  (A process that exited
 * without it may have left a loop early: that stays stopped-early.) */
static int finished(const struct nsp_member *m) {
  return !m->last_inflight && m->ended && m->end_result == 0 && m->end_api != NSP_API_CommAbort &&
         m->end_api != NSP_API_CommRevoke;
}

/* The ranks behind, mi[0..nlow) (last seq low), all finished with the
 * communicator while the others, mi[nlow..n), went on: the others issued
 * collectives the finished ranks never will (extra-at-end, odd: the
 * ranks ahead), not ranks that stopped early. */
static int extra_at_end(struct nsp_job *job, struct nsp_an_comm *c, const size_t *mi, size_t n, size_t nlow) {
  uint64_t low = job->members[mi[0]].last_seq;
  struct nsp_finding_priv *f = nsp_an_new_finding(job, NSP_FIND_EXTRA_AT_END, c);
  int ret = f ? nsp_an_alloc_sides(f, 2) : NSP_AN_ENOMEM;
  NSP_TRY(ret);
  struct nsp_ref_view firstv;
  const struct nsp_ref_view *first = nsp_an_comm_ref(c, low + 1, &firstv) ? &firstv : NULL;
  for (int s = 0; s < 2 && !ret; s++) {
    const size_t *from = s ? mi + nlow : mi;
    size_t cnt = s ? n - nlow : nlow;
    struct nsp_side *side = &f->sides[s];
    ret = nsp_an_side_from_members(job, side, from, cnt);
    const struct nsp_member *m0 = &job->members[from[0]];
    if (s && first && first->set) nsp_an_call_from_sig(&side->call, &first->sig, c->info.id, low + 1);
    else if (m0->last_seq) nsp_an_call_from_sig(&side->call, &m0->last_sig, c->info.id, m0->last_seq);
    else side->call.comm_id = c->info.id;
    side->call.in_flight = s && job->members[from[0]].last_inflight;
    char buf[300], cb[256];
    nsp_format_call(cb, sizeof cb, &side->call);
    if (s) snprintf(buf, sizeof buf, "from seq %llu: %s", (unsigned long long)(low + 1), cb);
    else if (m0->last_seq) snprintf(buf, sizeof buf, "finished after seq %llu: %s", (unsigned long long)low, cb);
    else snprintf(buf, sizeof buf, "finished with no collective");
    if (!ret) ret = nsp_an_set_side_text(side, buf);
    for (size_t p = 0; p < cnt && !ret && s; p++) {
      const struct nsp_member *m = &job->members[from[p]];
      ret = nsp_an_want_site(job, m->trace, m->local, low + 1, &((struct nsp_proc *)side->procs)[p]);
    }
    if (!s) f->pub.time_ns = m0->end_t;
  }
  NSP_TRY(ret);
  /* The ranks ahead are the ones to look at when they are fewer. */
  if (f->sides[1].nranks < f->sides[0].nranks) NSP_TRY(nsp_an_set_odd(f, f->sides[1].ranks, f->sides[1].nranks));
  f->pub.seq = low + 1;
  f->pub.api = f->sides[1].call.api;
  return 0;
}

static int check_comm(struct nsp_job *job, struct nsp_an_comm *c) {
  size_t *mi = malloc((c->nmembers ? c->nmembers : 1) * sizeof *mi);
  if (!mi) return NSP_AN_ENOMEM;
  size_t n = 0;
  uint64_t reached = nsp_an_comm_reached(job, c);
  /* A process still running is a snapshot of a moving rank: behind the
   * others, it is not judged (the hang rule judges how long its calls
   * have waited).  It counts only where it is no further behind than the
   * lowest rank that ended. */
  uint64_t low_ended = UINT64_MAX;
  for (size_t k = 0; k < c->nmembers; k++) {
    const struct nsp_member *m = &job->members[c->members[k]];
    if (m->rank >= 0 && !running(job, m) && m->last_seq < low_ended) low_ended = m->last_seq;
  }
  for (size_t k = 0; k < c->nmembers; k++) {
    const struct nsp_member *m = &job->members[c->members[k]];
    if (m->rank < 0 || (running(job, m) && m->last_seq < low_ended)) continue;
    /* A rank behind whose trace dropped records after its last
     * collective may have gone on: it is not judged (a note says so). */
    if (m->last_seq < reached && nsp_an_member_uncovered(job, m)) {
      struct nsp_sbuf b = {0};
      put_uncovered(&b, job, c, m);
      int ret = nsp_job_note_take(job, &b);
      if (ret) {
        free(mi);
        return ret;
      }
      continue;
    }
    /* A rank behind whose trace ends before collectives that others
     * completed, which needed it, went on: its records were lost, and it
     * did not stop (a note says so; the summary counts it as coverage). */
    const struct nsp_member *on = m->last_seq < reached ? nsp_an_member_went_on(job, c, m) : NULL;
    if (on) {
      job->members[c->members[k]].went_on_by = (size_t)(on - job->members) + 1;
      struct nsp_sbuf b = {0};
      nsp_an_put_went_on(&b, job, c, m, on);
      int ret = nsp_job_note_take(job, &b);
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
  /* The whole job killed while it ran: a rank a collective behind in its
   * last second was not stopped. */
  if (!skip && nsp_an_killed_active(job, c)) skip = 1;
  /* Ranks that stopped on a failed call or an async error are explained
   * by the "error" finding; ranks waiting in a communicator's creation for
   * ranks that never came, by the comm-init-wait finding. */
  if (!skip) {
    int all_err = 1, all_init = 1;
    for (size_t i = 0; i < n && job->members[mi[i]].last_seq == low; i++) {
      const struct nsp_trace *t = job->traces[job->members[mi[i]].trace];
      if (!job->members[mi[i]].has_error && !t->unattributed_error) all_err = 0;
      if (t->init_wait_id == SIZE_MAX) all_init = 0;
    }
    if (all_err || all_init) skip = 1;
  }
  if (skip) {
    free(mi);
    return 0;
  }
  size_t nlow = 0, all_finished = 1;
  for (; nlow < n && job->members[mi[nlow]].last_seq == low; nlow++) all_finished &= finished(&job->members[mi[nlow]]);
  if (all_finished) {
    int r = extra_at_end(job, c, mi, n, nlow);
    free(mi);
    return r;
  }
  size_t nsides = 0;
  for (size_t i = 0; i < n; i++)
    if (!i || job->members[mi[i]].last_seq != job->members[mi[i - 1]].last_seq) nsides++;
  struct nsp_finding_priv *f = nsp_an_new_finding(job, NSP_FIND_STOPPED_EARLY, c);
  int ret = f ? nsp_an_alloc_sides(f, nsides) : NSP_AN_ENOMEM;
  for (size_t i = 0, s = 0; i < n && !ret; s++) {
    size_t j = i;
    while (j < n && job->members[mi[j]].last_seq == job->members[mi[i]].last_seq) j++;
    qsort_r(mi + i, j - i, sizeof *mi, nsp_an_cmp_member_rank, job);
    struct nsp_side *side = &f->sides[s];
    ret = nsp_an_side_from_members(job, side, mi + i, j - i);
    const struct nsp_member *m0 = &job->members[mi[i]];
    if (m0->last_seq) nsp_an_call_from_sig(&side->call, &m0->last_sig, c->info.id, m0->last_seq);
    else side->call.comm_id = c->info.id;
    /* In flight there: every rank of the side is. */
    side->call.in_flight = m0->last_seq != 0;
    for (size_t p = i; p < j; p++) side->call.in_flight &= job->members[mi[p]].last_inflight;
    for (size_t p = 0; p < j - i && !ret; p++) {
      const struct nsp_trace *t = job->traces[job->members[mi[i + p]].trace];
      struct nsp_proc *pr = (struct nsp_proc *)&side->procs[p];
      if (t->last_call.valid) {
        pr->call = t->last_call.call;
        pr->site = nsp_an_site(t, t->last_call.site);
        pr->pysite = nsp_an_pysite(t, t->last_call.pysite);
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

/* ---- the link ------------------------------------------------------------- */

/* The communicator of a mismatch that a process of finding f is stuck
 * in: its last call (on any communicator) is a collective on another
 * communicator at or after that communicator's mismatched seq, made no
 * earlier than the mismatch.  NULL when there is no such evidence. */
static const struct nsp_an_comm *stuck_after_mismatch(struct nsp_job *job, const struct nsp_finding_priv *f,
                                                      const struct nsp_proc *p) {
  if (p->call.api < 0 || !p->call.comm_id || p->call.comm_id == f->pub.comm_id) return NULL;
  if (nsp_api_kind(p->call.api) != NSP_K_COLL) return NULL;
  const struct nsp_an_comm *c = nsp_an_comm_of(job, p->call.comm_id);
  if (!c || !c->mismatch_seq || p->call.seq < c->mismatch_seq) return NULL;
  const struct nsp_finding_priv *m = nsp_an_finding_by_id(job, c->mismatch_id);
  if (m && m->pub.time_ns && p->call.time_ns && p->call.time_ns < m->pub.time_ns) return NULL;
  return c;
}

/* A wavefront whose ranks behind all made, as their last call, a
 * collective at or after a mismatch on another communicator is that
 * mismatch's consequence: they are blocked in it (the tensor-parallel
 * partners of data-parallel ranks stuck in a mismatched all-reduce). */
static int link(struct nsp_job *job) {
  size_t n = job->nfindings;
  for (size_t i = 0; i < n; i++) {
    struct nsp_finding_priv *w = &job->findings[i];
    if (w->pub.kind != NSP_FIND_STOPPED_EARLY || w->cause_id != SIZE_MAX || !w->pub.nsides) continue;
    const struct nsp_side *behind = &w->sides[0];
    const struct nsp_an_comm *first = NULL;
    size_t p = 0;
    for (; p < behind->nranks; p++) {
      const struct nsp_an_comm *mc = stuck_after_mismatch(job, w, &behind->procs[p]);
      if (!mc) break; /* free to go on and did not: no evidence */
      const struct nsp_finding_priv *a = first ? nsp_an_finding_by_id(job, first->mismatch_id) : NULL;
      const struct nsp_finding_priv *b = nsp_an_finding_by_id(job, mc->mismatch_id);
      if (!first || (a && b && b->pub.time_ns && b->pub.time_ns < a->pub.time_ns)) first = mc;
    }
    if (p == behind->nranks && first) w->cause_id = first->mismatch_id;
  }
  return 0;
}

/* ---- the message ------------------------------------------------------------ */

/* "rank 2 issued 1 collective more than the others (from seq 16:
 * all-gather ...), after ranks 0-1,3 finished with the communicator (rank
 * 0 destroyed this communicator at ...)". */
static int extra_message(struct nsp_job *job, struct nsp_finding_priv *fp) {
  const struct nsp_finding *f = &fp->pub;
  struct nsp_sbuf sb = {0}, *b = &sb;
  const struct nsp_side *fin = &f->sides[0], *ahead = &f->sides[1];
  uint64_t top = 0;
  const struct nsp_an_comm *c = job->comms[fp->comm_index];
  for (size_t p = 0; p < ahead->nranks; p++) {
    const struct nsp_member *m = nsp_an_member_of_trace(job, c, ahead->procs[p].trace);
    if (m && m->last_seq > top) top = m->last_seq;
  }
  unsigned long long more = top >= f->seq ? (unsigned long long)(top - f->seq + 1) : 1;
  char cb[256];
  nsp_format_call(cb, sizeof cb, &ahead->call);
  nsp_an_put_side_ranks(b, job, f, ahead);
  nsp_sbuf_printf(b, " issued %llu collective%s more than the others (from seq %llu: %s%s), after ", more,
                  more == 1 ? "" : "s", (unsigned long long)f->seq, cb,
                  ahead->call.in_flight ? ", in flight: never returned" : "");
  nsp_an_put_side_ranks(b, job, f, fin);
  nsp_sbuf_printf(b, " finished with the communicator");
  if (fin->call.seq) nsp_sbuf_printf(b, " at seq %llu", (unsigned long long)fin->call.seq);
  for (size_t p = 0; p < fin->nranks && p < 4; p++)
    nsp_an_put_comm_end(b, job, nsp_an_member_of_trace(job, c, fin->procs[p].trace));
  nsp_an_put_side_ends(b, job, f, fin);
  nsp_an_put_side_ends(b, job, f, ahead);
  return nsp_an_take_message(fp, b);
}

static int message(struct nsp_job *job, struct nsp_finding_priv *fp) {
  if (fp->pub.kind == NSP_FIND_EXTRA_AT_END) return extra_message(job, fp);
  const struct nsp_finding *f = &fp->pub;
  struct nsp_sbuf sb = {0}, *b = &sb;
  for (size_t s = 0; s < f->nsides; s++) {
    const struct nsp_side *side = &f->sides[s];
    if (s) nsp_sbuf_printf(b, s + 1 == f->nsides ? " while " : "; ");
    nsp_an_put_side_ranks(b, job, f, side);
    /* A last collective in flight did not stop: it never returned. */
    const char *stop = side->call.in_flight ? "are in flight at" : "stopped at";
    if (side->call.in_flight && side->nranks == 1) stop = "is in flight at";
    if (s == 0 && !side->call.seq) nsp_sbuf_printf(b, " made no collective");
    else if (s == 0) nsp_sbuf_printf(b, " %s seq %llu", stop, (unsigned long long)side->call.seq);
    else if (s + 1 == f->nsides) nsp_sbuf_printf(b, " reached seq %llu", (unsigned long long)side->call.seq);
    else nsp_sbuf_printf(b, " %s seq %llu", stop, (unsigned long long)side->call.seq);
    if (side->call.in_flight && s < f->nsides - 1) nsp_sbuf_printf(b, " (never returned)");
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
    if (c->in_flight) nsp_sbuf_printf(b, " (in flight: never returned)");
    const struct nsp_an_comm *cm = fp->comm_index != SIZE_MAX ? job->comms[fp->comm_index] : NULL;
    nsp_an_put_comm_end(b, job, nsp_an_member_of_trace(job, cm, low->procs[p].trace));
    nsp_an_put_blocked(b, job, low->procs[p].rank, low->procs[p].trace);
  }
  if (low->nranks > shown) nsp_sbuf_printf(b, "; ...");
  nsp_an_put_side_ends(b, job, f, low);
  /* What the traces cannot tell: a cut file, ranks left out for drops. */
  nsp_an_put_cut_caveats(b, job, f);
  /* Linked to a mismatch elsewhere (the link above): the ranks behind
   * are blocked in it. */
  const struct nsp_finding_priv *cause = fp->cause_id != SIZE_MAX ? nsp_an_finding_by_id(job, fp->cause_id) : NULL;
  if (cause && nsp_an_kind_is_mismatch(cause->pub.kind) && cause->pub.comm_id != f->comm_id)
    nsp_sbuf_printf(b, "; this follows the %s at seq %llu on communicator %016llx, the last call of the %s behind, "
                       "where %s probably blocked",
                    nsp_finding_kind_name(cause->pub.kind), (unsigned long long)cause->pub.seq,
                    (unsigned long long)cause->pub.comm_id, low->nranks == 1 ? "rank" : "ranks",
                    low->nranks == 1 ? "it" : "they");
  if (fp->comm_index == SIZE_MAX) return nsp_an_take_message(fp, b);
  const struct nsp_an_comm *c = job->comms[fp->comm_index];
  uint64_t reached = nsp_an_comm_reached(job, c);
  for (size_t k = 0; k < c->nmembers; k++) {
    const struct nsp_member *m = &job->members[c->members[k]];
    if (m->rank < 0 || m->last_seq >= reached || !nsp_an_member_uncovered(job, m)) continue;
    nsp_sbuf_printf(b, "; not judged: ");
    put_uncovered(b, job, c, m);
  }
  return nsp_an_take_message(fp, b);
}

const struct nsp_rule nsp_rule_wavefront = {
    .name = "wavefront",
    .checks = "ranks that stopped making collectives on a communicator before the others",
    .kinds = NSP_RULE_KINDS(NSP_FIND_STOPPED_EARLY, NSP_FIND_EXTRA_AT_END),
    .check_comm = check_comm, .link = link, .link_stage = NSP_LINK_FIRST, .message = message,
};
