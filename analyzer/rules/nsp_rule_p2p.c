/* nsp_rule_p2p.c - rule 2 of docs/REPORT.md: send/recv pairing.  For each
 * ordered pair of ranks of a communicator, the k-th send of one to the
 * other against the other's k-th recv from it, in bytes, over the
 * run-length lists the loader keeps; the first problem per pair is a
 * finding.  Operations past the point where the other side's trace stops
 * covering the pair (records dropped) are not judged: a note per member
 * says so. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nsp_names.h"
#include "nsp_rule.h"

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
    nsp_sbuf_printf(&b, " dropped records after its %s #%llu %s ", their, (unsigned long long)r->max_seq,
                    dir ? "to" : "from");
  else
    nsp_sbuf_printf(&b, " holds no %s %s ", their, dir ? "to" : "from");
  nsp_an_put_rank(&b, job, from->rank, from->trace);
  if (!(r && r->n)) nsp_sbuf_printf(&b, " and dropped records");
  nsp_sbuf_printf(&b, " (%llu dropped: ", (unsigned long long)t->info.dropped);
  nsp_an_put_drop_reasons(&b, t);
  nsp_sbuf_printf(&b, "), so it may have posted the matching %s%s", their, n == 1 ? "" : "s");
  if (more)
    nsp_sbuf_printf(&b, "; the same holds for %llu more pair%s with it (%llu sends/recvs)", (unsigned long long)more,
                    more == 1 ? "" : "s", (unsigned long long)more_ops);
  return nsp_job_note_take(job, &b);
}

/* The counts of one communicator's members with unjudged operations:
 * only those members have a slot (a slot per member of the job, made for
 * each communicator, is quadratic in ranks). */
struct p2p_acc {
  struct nsp_u64map slot; /* member index -> index in u */
  struct p2p_uncovered *u;
  size_t n, cap;
  int oom;
};

/* Counts n unjudged operations of `from` with `to` (see p2p_uncovered). */
static void count_uncovered(struct nsp_job *job, struct p2p_acc *acc, const struct nsp_member *from,
                            const struct nsp_member *to, int dir, uint64_t n, uint64_t k, const struct nsp_runs *r) {
  uint64_t mi = (uint64_t)(to - job->members);
  const size_t *i = nsp_u64map_get(&acc->slot, mi);
  if (!i) {
    if (nsp_grow(&acc->u, &acc->cap, acc->n + 1, sizeof *acc->u) < 0 || nsp_u64map_put(&acc->slot, mi, acc->n) < 0) {
      acc->oom = 1;
      return;
    }
    memset(&acc->u[acc->n], 0, sizeof *acc->u);
    i = nsp_u64map_get(&acc->slot, mi);
    acc->n++;
  }
  struct p2p_uncovered *u = &acc->u[*i];
  if (!u->pairs++) *u = (struct p2p_uncovered){1, 0, from, dir, n, k, r};
  u->ops += n;
}

/* acc: where unjudged operations are counted (see p2p_uncovered). */
static int p2p_pair(struct nsp_job *job, struct nsp_an_comm *c, const struct nsp_member *snd,
                    const struct nsp_member *rcv, const struct nsp_runs *sends, const struct nsp_runs *recvs,
                    struct p2p_acc *acc) {
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
  /* The whole job killed while it ran: sends and receives of its last
   * second had not all met yet. */
  if ((un_s || un_r) && nsp_an_killed_active(job, c)) un_s = un_r = 0;
  if (acc->oom) return NSP_AN_ENOMEM;
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

static int check_comm(struct nsp_job *job, struct nsp_an_comm *c) {
  int any = 0;
  for (size_t k = 0; k < c->nmembers && !any; k++) any = job->members[c->members[k]].np2p > 0;
  if (!any) return 0;
  struct p2p_acc accs = {0}, *acc = &accs;
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
  for (size_t k = 0; k < c->nmembers && !ret && acc->n; k++) {
    const struct nsp_member *to = &job->members[c->members[k]];
    const size_t *i = nsp_u64map_get(&acc->slot, c->members[k]);
    const struct p2p_uncovered *u = i ? &acc->u[*i] : NULL;
    if (u && u->pairs)
      ret = note_p2p_uncovered(job, c, u->from, to, u->dir, u->n, u->k, u->r, u->pairs - 1, u->ops - u->n);
  }
  nsp_u64map_free(&acc->slot);
  free(acc->u);
  return ret;
}

/* A send or recv left unmatched because its peer's trace ends early (the
 * peer died, stalled or was killed) is that stop's consequence, not a
 * schedule bug: link it to the stopped-early (or hang) finding that names
 * the peer. */
static int link(struct nsp_job *job) {
  size_t n = job->nfindings;
  for (size_t i = 0; i < n; i++) {
    struct nsp_finding_priv *u = &job->findings[i];
    if (u->pub.kind != NSP_FIND_P2P_UNMATCHED || u->cause_id != SIZE_MAX || u->pub.nsides != 2) continue;
    const struct nsp_side *shortside = u->sides[0].posted < u->sides[1].posted ? &u->sides[0] : &u->sides[1];
    if (!shortside->nranks) continue;
    int short_rank = shortside->ranks[0];
    uint64_t a = u->sides[0].posted, b = u->sides[1].posted;
    /* One op apart: the last exchange in flight when a rank of the ring
     * stopped, whichever rank that was. */
    int last_in_flight = (a > b ? a - b : b - a) == 1;
    for (int pass = 0; pass < 2 && u->cause_id == SIZE_MAX; pass++)
      for (size_t k = 0; k < n && u->cause_id == SIZE_MAX; k++) {
        const struct nsp_finding_priv *w = &job->findings[k];
        if (w->pub.kind != NSP_FIND_STOPPED_EARLY && !nsp_an_kind_is_hang(w->pub.kind)) continue;
        if (w->pub.comm_id != u->pub.comm_id) continue;
        if (pass == 1 && last_in_flight) u->cause_id = w->id;
        for (size_t r = 0; r < w->pub.nodd; r++)
          if (w->pub.odd_ranks[r] == short_rank) u->cause_id = w->id;
      }
  }
  return 0;
}

/* ---- the message ------------------------------------------------------------ */

static void put_p2p_call(struct nsp_sbuf *b, const struct nsp_call *c) {
  char tb[32];
  size_t esz = nsp_dtype_size(c->dtype);
  nsp_sbuf_printf(b, "%llu x %s", (unsigned long long)c->count, nsp_dtype_name(c->dtype, tb, sizeof tb));
  if (esz) nsp_sbuf_printf(b, " = %llu bytes", (unsigned long long)(c->count * esz));
}

static int message(struct nsp_job *job, struct nsp_finding_priv *fp) {
  const struct nsp_finding *f = &fp->pub;
  struct nsp_sbuf sb = {0}, *b = &sb;
  const struct nsp_side *s = &f->sides[0], *r = &f->sides[1];
  unsigned long long k = (unsigned long long)f->seq;
  if (f->kind == NSP_FIND_P2P_SIZE_MISMATCH) {
    nsp_sbuf_printf(b, "send #%llu from ", k);
    nsp_an_put_rank(b, job, f->src, s->procs[0].trace);
    nsp_sbuf_printf(b, " to ");
    nsp_an_put_rank(b, job, f->dst, r->procs[0].trace);
    nsp_sbuf_printf(b, " (");
    put_p2p_call(b, &s->call);
    nsp_sbuf_printf(b, ") does not match recv #%llu at ", k);
    nsp_an_put_rank(b, job, f->dst, r->procs[0].trace);
    nsp_sbuf_printf(b, " (");
    put_p2p_call(b, &r->call);
    nsp_sbuf_printf(b, ")");
    if (f->later)
      nsp_sbuf_printf(b, " (and %llu later %s of this pair also %s)", (unsigned long long)f->later,
                      f->later == 1 ? "send/recv" : "sends/recvs",
                      f->later == 1 ? "differs or is unmatched" : "differ or are unmatched");
  } else {
    const struct nsp_side *has = s->call.api >= 0 ? s : r;
    nsp_sbuf_printf(b, "unmatched %s #%llu from ", has == s ? "send" : "recv", k);
    nsp_an_put_rank(b, job, f->src, s->procs[0].trace);
    nsp_sbuf_printf(b, " to ");
    nsp_an_put_rank(b, job, f->dst, r->procs[0].trace);
    nsp_sbuf_printf(b, " (");
    put_p2p_call(b, &has->call);
    nsp_sbuf_printf(b, "): ");
    nsp_an_put_rank(b, job, f->src, s->procs[0].trace);
    nsp_sbuf_printf(b, " posted %llu send%s to ", (unsigned long long)s->posted, nsp_an_plural(s->posted));
    nsp_an_put_rank(b, job, f->dst, r->procs[0].trace);
    nsp_sbuf_printf(b, ", ");
    nsp_an_put_rank(b, job, f->dst, r->procs[0].trace);
    nsp_sbuf_printf(b, " posted %llu recv%s from ", (unsigned long long)r->posted, nsp_an_plural(r->posted));
    nsp_an_put_rank(b, job, f->src, s->procs[0].trace);
  }
  /* The side texts: the k-th send and recv as pass 2 read them again. */
  for (int i = 0; i < 2; i++) {
    struct nsp_side *side = &fp->sides[i];
    int ret = 0;
    if (side->call.api >= 0) {
      ret = nsp_an_side_text_call(side);
    } else {
      char t[96];
      snprintf(t, sizeof t, "posted %llu %s%s", (unsigned long long)side->posted, i ? "recv" : "send",
               nsp_an_plural(side->posted));
      ret = nsp_an_set_side_text(side, t);
    }
    if (ret) {
      free(nsp_sbuf_take(b));
      return ret;
    }
  }
  return nsp_an_take_message(fp, b);
}

const struct nsp_rule nsp_rule_p2p = {
    .name = "p2p",
    .checks = "the k-th send of each rank to a peer against the peer's k-th recv from it: bytes, unmatched",
    .kinds = NSP_RULE_KINDS(NSP_FIND_P2P_SIZE_MISMATCH, NSP_FIND_P2P_UNMATCHED),
    .check_comm = check_comm, .link = link, .link_stage = NSP_LINK_FIRST, .message = message,
};
