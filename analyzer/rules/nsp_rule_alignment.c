/* nsp_rule_alignment.c - rule 1 of docs/REPORT.md: collectives aligned by
 * their per-communicator seq.  Every rank that reached a seq is compared
 * with the reference signature the first one set (the loader keeps each
 * rank's first difference), so the rule is linear in members and seq
 * pages.  Per communicator, the first seq where ranks differ is a finding;
 * its kind is the first field on which the sides disagree (collective,
 * dtype, count, reduction op, root), and later differing seqs are only
 * counted; unless every odd rank's calls after it match the others'
 * shifted by a few seqs: then it is a seq-shift (the rank skipped or
 * added collectives there).  PreMulSum ops compare by definition (the
 * loader's nsp_sig). */
#include <stdlib.h>
#include <string.h>

#include "nsp_names.h"
#include "nsp_rule.h"

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
  if (a->premul_dtype != b->premul_dtype) return a->premul_dtype < b->premul_dtype ? -1 : 1;
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
            : a->redop != b->redop || a->premul_dtype != b->premul_dtype ? NSP_FIND_REDOP_MISMATCH
                                   : NSP_FIND_ROOT_MISMATCH;
    if (k < kind) kind = k;
  }
  return kind;
}

static int cmp_side_first_rank(const void *pa, const void *pb) {
  const struct nsp_side *a = pa, *b = pb;
  return a->ranks[0] < b->ranks[0] ? -1 : a->ranks[0] > b->ranks[0];
}

/* ---- shifted calls ---------------------------------------------------------- */

/* Calls at seqs s .. s + NSP_SIG_WINDOW - 1 (v[i], known[i]). */
struct calls {
  struct nsp_sig v[NSP_SIG_WINDOW];
  uint8_t known[NSP_SIG_WINDOW];
  uint64_t last; /* the highest last seq of the members */
};

/* The calls members mi[0..n) agree on from seq s: unknown where none of
 * them is known to have made one, or they differ. */
static void calls_of(struct nsp_job *job, struct nsp_an_comm *c, const size_t *mi, size_t n, uint64_t s,
                     struct calls *out) {
  memset(out, 0, sizeof *out);
  for (size_t k = 0; k < n; k++)
    if (job->members[mi[k]].last_seq > out->last) out->last = job->members[mi[k]].last_seq;
  for (unsigned i = 0; i < NSP_SIG_WINDOW; i++) {
    int ok = 1, any = 0;
    for (size_t k = 0; k < n && ok; k++) {
      struct nsp_sig sg;
      if (!nsp_an_member_sig(c, &job->members[mi[k]], s + i, &sg)) continue;
      if (any && !nsp_an_sig_eq(&sg, &out->v[i])) ok = 0;
      out->v[i] = sg;
      any = 1;
    }
    out->known[i] = (uint8_t)(ok && any);
  }
}

/* Whether r's calls match m's with r's index shifted by d (r[i + d] vs
 * m[i], d may be negative): the first NSP_SHIFT_MATCH pairs both know (at
 * least two: one pair is too often chance) all match. */
static int match_shifted(const struct calls *r, const struct calls *m, int d) {
  int pairs = 0;
  for (int i = 0; i < NSP_SIG_WINDOW && pairs < NSP_SHIFT_MATCH; i++) {
    int j = i + d;
    if (j < 0 || j >= NSP_SIG_WINDOW || !r->known[j] || !m->known[i]) continue;
    if (!nsp_an_sig_eq(&r->v[j], &m->v[i])) return 0;
    pairs++;
  }
  return pairs >= 2;
}

/* How r (one rank's calls from the mismatched seq) is shifted against m
 * (the others'): k > 0, it lacks k calls the others made there (skipped);
 * k < 0, it made -k calls more (extra); 0, no shift explains it.  A shift
 * must match later calls and the calls unshifted must not: a call that
 * merely differs in a loop of like calls stays a mismatch, and so does a
 * rank with no later call known (nothing to compare).  Where several
 * shifts match (a loop of 3 calls: 2 skipped look like 1 extra), the one
 * that explains how many calls each issued in all (their last seqs, the
 * call in flight included) wins; else the smallest whose sign agrees
 * with which made fewer (the others stop in their next call once it
 * stopped, so the counts differ by less than the shift); else, when a
 * skip and an extra both match, the smallest skip with *alt the smallest
 * extra (both readings), else the smallest.  *alt is 0 otherwise. */
static int shift_of(const struct calls *r, const struct calls *m, int *alt) {
  int unshifted_differs = 0, skip1 = 0, extra1 = 0;
  *alt = 0;
  for (int i = 1; i < NSP_SIG_WINDOW; i++)
    if (r->known[i] && m->known[i] && !nsp_an_sig_eq(&r->v[i], &m->v[i])) unshifted_differs = 1;
  if (!unshifted_differs) return 0;
  int64_t behind = (int64_t)(m->last - r->last); /* calls it made fewer in all */
  for (int k = 1; k <= NSP_SHIFT_MAX; k++) {
    int skip = match_shifted(r, m, -k), extra = match_shifted(r, m, k); /* r[i] is m[i + k]; r[i + k] is m[i] */
    if (skip && behind == k) return k;
    if (extra && behind == -k) return -k;
    if (skip && !skip1) skip1 = k;
    if (extra && !extra1) extra1 = -k;
  }
  if (behind > 0 && skip1) return skip1;
  if (behind < 0 && extra1) return extra1;
  if (skip1 && extra1) *alt = extra1;
  return skip1 ? skip1 : extra1;
}

/* The members of side s of f (on communicator c), into mi; their count. */
static size_t side_members(const struct nsp_job *job, const struct nsp_an_comm *c, const struct nsp_side *s,
                           size_t *mi) {
  size_t n = 0;
  for (size_t p = 0; p < s->nranks; p++) {
    const struct nsp_member *m = nsp_an_member_of_trace(job, c, s->procs[p].trace);
    if (m) mi[n++] = (size_t)(m - job->members);
  }
  return n;
}

static int side_has_rank(const struct nsp_side *sd, int rank) {
  for (size_t i = 0; i < sd->nranks; i++)
    if (sd->ranks[i] == rank) return 1;
  return 0;
}

/* Which of f's two sides kept the pattern the communicator's calls had
 * before seq s, where the two sides are as many ranks each (no majority
 * says who is odd): the calls before s, which every rank made alike,
 * repeat with a smallest period p (the last round, or as much of it as
 * seqs 1 .. s - 1 hold beyond a first round, repeats the one before: a
 * training loop's all-reduce of gradients, then of the loss), and one side's calls from s
 * continue it while the other's do not.  That side is 0 or 1; -1 when
 * both or neither side keeps it; -2 when there is no such period. */
static int kept_pattern(struct nsp_job *job, struct nsp_an_comm *c, const struct nsp_finding *f, uint64_t s,
                        size_t *tmp) {
  for (uint64_t p = 1; p <= NSP_SHIFT_MAX && p + 1 < s; p++) {
    int periodic = 1;
    for (uint64_t t = s - p > p ? s - p : p + 1; t < s && periodic; t++) {
      struct nsp_ref_view a, b;
      periodic = nsp_an_comm_ref(c, t, &a) && nsp_an_comm_ref(c, t - p, &b) && nsp_an_sig_eq(&a.sig, &b.sig);
    }
    if (!periodic) continue;
    int keeps[2];
    for (int sd = 0; sd < 2; sd++) {
      struct calls x;
      calls_of(job, c, tmp, side_members(job, c, &f->sides[sd], tmp), s, &x);
      keeps[sd] = x.known[0];
      for (uint64_t i = 0; i < p && keeps[sd]; i++) {
        struct nsp_ref_view r; /* an unset one's sig is all zero */
        nsp_an_comm_ref(c, s - p + i, &r);
        if (x.known[i]) keeps[sd] = nsp_an_sig_eq(&x.v[i], &r.sig);
      }
    }
    return keeps[0] == keeps[1] ? -1 : keeps[0] ? 0 : 1;
  }
  return -2;
}

/* The shift of mismatch f at seq s.  With odd ranks set: shift[i] of odd
 * rank i (alt[i]: the other reading, or 0; see shift_of) against the
 * other side of two (a majority, or the side the loop's pattern chose),
 * else against the side of a strict majority, each nonzero, and *ref
 * that side; returns 1.  With two sides and no odd ranks: shift[0] of
 * side 1 against side 0, *ref 0; returns 1.  Else (or a rank no shift
 * explains) 0.  tmp: room for the members of any side. */
static int find_shift(struct nsp_job *job, struct nsp_an_comm *c, const struct nsp_finding_priv *f, uint64_t s,
                      int *shift, int *alt, size_t *ref, size_t *tmp) {
  const struct nsp_finding *pf = &f->pub;
  struct calls m, r;
  if (!pf->nodd) {
    if (pf->nsides != 2) return 0;
    *ref = 0;
    calls_of(job, c, tmp, side_members(job, c, &pf->sides[0], tmp), s, &m);
    size_t n = side_members(job, c, &pf->sides[1], tmp);
    for (size_t i = 0; i < n; i++) {
      calls_of(job, c, &tmp[i], 1, s, &r);
      int a, k = shift_of(&r, &m, &a);
      if (!k || (i && (k != shift[0] || a != alt[0]))) return 0;
      shift[0] = k;
      alt[0] = a;
    }
    return n > 0;
  }
  size_t maj = SIZE_MAX, total = 0;
  for (size_t i = 0; i < pf->nsides; i++) total += pf->sides[i].nranks;
  for (size_t i = 0; i < pf->nsides; i++)
    if (2 * pf->sides[i].nranks > total) maj = i; /* as nsp_an_mark_odd */
  if (pf->nsides == 2) /* the odd ranks are one side (a minority, or the loop's pattern chose them) */
    maj = side_has_rank(&pf->sides[0], pf->odd_ranks[0]) ? 1 : 0;
  if (maj == SIZE_MAX) return 0;
  *ref = maj;
  calls_of(job, c, tmp, side_members(job, c, &pf->sides[maj], tmp), s, &m);
  for (size_t i = 0; i < pf->nodd; i++) {
    const struct nsp_member *om = nsp_an_find_member(job, c, pf->odd_ranks[i]);
    if (!om) return 0;
    size_t oi = (size_t)(om - job->members);
    calls_of(job, c, &oi, 1, s, &r);
    if (!(shift[i] = shift_of(&r, &m, &alt[i]))) return 0;
  }
  return 1;
}

/* Seqs after `after` where some rank differed from the ref. */
struct later_count {
  uint64_t after, n;
};
static void count_later(void *ctx, uint64_t seq, const struct nsp_ref *r) {
  struct later_count *lc = ctx;
  if ((r->sig & NSP_REF_DIFFERS) && seq > lc->after) lc->n++;
}

static int check_comm(struct nsp_job *job, struct nsp_an_comm *c) {
  uint64_t s_min = 0;
  for (size_t k = 0; k < c->nmembers; k++) {
    const struct nsp_member *m = &job->members[c->members[k]];
    if (m->first_diff && (!s_min || m->first_diff < s_min)) s_min = m->first_diff;
  }
  if (!s_min) return 0;
  struct nsp_ref_view refv; /* set: s_min is where a rank differed from it */
  if (!nsp_an_comm_ref(c, s_min, &refv)) return 0;
  const struct nsp_ref_view *ref = &refv;

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
    /* A host scalar is shown when the side's ranks all used it. */
    for (size_t p = i; p < j; p++)
      if (!nsp_an_sig_premul_same(&parts[i].sig, &parts[p].sig) ||
          (ref->premul_varies && job->members[parts[p].member].first_diff != s_min)) {
        side->call.premul_scalar_known = 0;
        side->call.premul_residence = -1;
      }
    /* Where each rank made its call at s_min: pass 2 looks it up. */
    for (size_t p = 0; p < j - i && !ret; p++) {
      const struct nsp_member *m = &job->members[mi[p]];
      ret = nsp_an_want_site(job, m->trace, m->local, s_min, &((struct nsp_proc *)side->procs)[p]);
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
  NSP_TRY(nsp_an_mark_odd(f));
  f->pub.api = f->sides[0].call.api;
  if (f->pub.nodd) /* name the odd side's op: that is the call to look at */
    for (size_t s = 0; s < nsides; s++)
      if (f->sides[s].ranks[0] == f->odd[0]) f->pub.api = f->sides[s].call.api;
  /* A rank that skipped or added collectives: its later calls say so. */
  size_t ref_side = 0, *tmp = malloc(c->nmembers * sizeof *tmp);
  int *shift = malloc((np + 1) * sizeof *shift), *alt = malloc((np + 1) * sizeof *alt);
  if (!tmp || !shift || !alt) ret = NSP_AN_ENOMEM;
  int shifted = !ret && find_shift(job, c, f, s_min, shift, alt, &ref_side, tmp);
  if (shifted && nsides == 2) {
    /* The side that broke the loop's pattern is the odd one, a majority
     * too (most ranks skipped the same call); where a pattern exists but
     * does not tell, or without a majority nor pattern, the message gives
     * both readings (no odd ranks).  Without a pattern a majority stays. */
    int kept = kept_pattern(job, c, &f->pub, s_min, tmp), was = (int)f->pub.nodd;
    if (kept >= 0 && (!was || side_has_rank(&f->sides[kept], f->pub.odd_ranks[0])))
      ret = nsp_an_set_odd(f, f->sides[1 - kept].ranks, f->sides[1 - kept].nranks);
    else if (kept == -1 && was)
      f->pub.nodd = 0;
    if (!ret && !find_shift(job, c, f, s_min, shift, alt, &ref_side, tmp)) {
      f->pub.nodd = 0;
      find_shift(job, c, f, s_min, shift, alt, &ref_side, tmp);
    }
  }
  if (shifted && !ret) {
    f->pub.kind = NSP_FIND_SEQ_SHIFT;
    f->pub.hint = nsp_finding_kind_hint(f->pub.kind);
    /* The collective skipped (the others' at this seq) or added. */
    if (shift[0] > 0) f->pub.api = f->sides[ref_side].call.api;
  }
  free(tmp);
  free(shift);
  free(alt);
  NSP_TRY(ret);
  /* Later differing seqs are usually consequences (a skipped collective
   * shifts every later one); count them instead of reporting them. */
  struct later_count lc = {s_min, 0};
  nsp_an_comm_refs_each(c, count_later, &lc);
  f->pub.later = lc.n;
  c->mismatch_seq = s_min;
  c->mismatch_kind = f->pub.kind;
  c->mismatch_id = f->id;
  return 0;
}

/* ---- the message ------------------------------------------------------------ */

static void put_odd(struct nsp_sbuf *b, const struct nsp_job *job, const struct nsp_finding *f, const char *what) {
  if (!f->nodd) return;
  nsp_sbuf_printf(b, "; ");
  nsp_an_put_comm_ranks(b, job, f->comm_id, f->odd_ranks, f->nodd);
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

/* "an all-gather", "a broadcast". */
static void put_an_op(struct nsp_sbuf *b, int api) {
  const char *n = nsp_op_name(api);
  nsp_sbuf_printf(b, "%s %s", strchr("aeiou", n[0]) ? "an" : "a", n);
}

/* What a rank shifted by k did at seq s: "skipped an all-gather at seq
 * 9", "issued 2 extra collectives at seq 9-10 (all-reduce, broadcast)".
 * m: the others' calls from s (skipped), r: its own (extra). */
/* Returns 1 when it left a parenthesis open (several calls: "... (a, b"). */
static int put_shift_what(struct nsp_sbuf *b, int k, uint64_t s, const struct calls *m, const struct calls *r) {
  const struct calls *w = k > 0 ? m : r;
  unsigned n = (unsigned)(k > 0 ? k : -k);
  nsp_sbuf_printf(b, "%s ", k > 0 ? "skipped" : "issued");
  if (n == 1) {
    if (k < 0) nsp_sbuf_printf(b, "an extra ");
    if (w->known[0]) {
      if (k > 0) put_an_op(b, w->v[0].api);
      else nsp_sbuf_printf(b, "%s", nsp_op_name(w->v[0].api));
    } else {
      nsp_sbuf_printf(b, "%scollective", k > 0 ? "a " : "");
    }
    nsp_sbuf_printf(b, " at seq %llu", (unsigned long long)s);
    return 0;
  }
  nsp_sbuf_printf(b, "%u %scollectives at seq %llu-%llu (", n, k < 0 ? "extra " : "", (unsigned long long)s,
                  (unsigned long long)(s + n - 1));
  for (unsigned i = 0; i < n; i++)
    nsp_sbuf_printf(b, "%s%s", i ? ", " : "", w->known[i] ? nsp_op_name(w->v[i].api) : "?");
  return 1;
}

/* Where the calls line up again: "its calls from seq 10 on match the
 * others' from seq 9 on". */
static void put_shift_match(struct nsp_sbuf *b, int k, uint64_t s) {
  uint64_t n = (uint64_t)(k > 0 ? k : -k);
  nsp_sbuf_printf(b, "from seq %llu on match ", (unsigned long long)(k > 0 ? s : s + n));
}

/* One reading of ranks shifted by k against side ref: "skipped an
 * all-gather at seq 9 (its calls from seq 9 on match the others' from
 * seq 10 on)"; their: several ranks. */
static void put_reading(struct nsp_sbuf *b, const struct nsp_job *job, const struct nsp_finding *f, uint64_t seq,
                        int k, const struct calls *m, const struct calls *r, const struct nsp_side *ref, int their) {
  unsigned long long s = (unsigned long long)seq, n = (unsigned long long)(k > 0 ? k : -k);
  int open = put_shift_what(b, k, seq, m, r);
  nsp_sbuf_printf(b, "%s%s calls ", open ? "; " : " (", their ? "their" : "its");
  put_shift_match(b, k, seq);
  if (ref && ref->nranks == 1) {
    nsp_an_put_side_ranks(b, job, f, ref);
    nsp_sbuf_printf(b, "'s");
  } else {
    nsp_sbuf_printf(b, "the others'");
  }
  nsp_sbuf_printf(b, " from seq %llu on)", k > 0 ? s + n : s);
}

/* A second, independent difference among the n members mi of the side
 * the shifted ranks were compared with (they agreed at the finding's
 * seq): the first later seq of the window where they differ, each rank
 * off the most common call there as a shift ("; and rank 2 skipped an
 * all-gather at seq 8 (...)") or as a difference. */
static void put_second(struct nsp_sbuf *b, struct nsp_job *job, struct nsp_an_comm *c, const struct nsp_finding *f,
                       size_t n, const size_t *mi) {
  struct nsp_sig sg[64], best = {0};
  uint8_t has[64];
  if (n < 3 || n > 64) return; /* a majority of two needs three */
  for (uint64_t t = f->seq + 1; t < f->seq + NSP_SIG_WINDOW; t++) {
    size_t nbest = 0;
    for (size_t k = 0; k < n; k++) has[k] = (uint8_t)nsp_an_member_sig(c, &job->members[mi[k]], t, &sg[k]);
    for (size_t k = 0; k < n; k++) {
      size_t same = 0;
      for (size_t q = 0; q < n && has[k]; q++) same += has[q] && nsp_an_sig_eq(&sg[k], &sg[q]);
      if (same > nbest) nbest = same, best = sg[k];
    }
    if (!nbest) return;
    size_t maj[64], nmaj = 0, nodd = 0;
    for (size_t k = 0; k < n; k++)
      if (has[k] && nsp_an_sig_eq(&sg[k], &best)) maj[nmaj++] = mi[k];
      else if (has[k]) nodd++;
    if (!nodd) continue;
    if (2 * nmaj <= n) return; /* no majority among them: not said */
    struct calls m, r;
    calls_of(job, c, maj, nmaj, t, &m);
    for (size_t k = 0; k < n; k++) {
      if (!has[k] || nsp_an_sig_eq(&sg[k], &best)) continue;
      const struct nsp_member *x = &job->members[mi[k]];
      int a, d;
      calls_of(job, c, &mi[k], 1, t, &r);
      d = shift_of(&r, &m, &a);
      nsp_sbuf_printf(b, "; and ");
      nsp_an_put_comm_ranks(b, job, f->comm_id, &x->rank, 1);
      if (!d) {
        nsp_sbuf_printf(b, "'s call differs from the others' at seq %llu", (unsigned long long)t);
        continue;
      }
      nsp_sbuf_printf(b, " ");
      put_reading(b, job, f, t, d, &m, &r, NULL, 0);
      if (a) {
        nsp_sbuf_printf(b, ", or ");
        put_reading(b, job, f, t, a, &m, &r, NULL, 0);
      }
    }
    return;
  }
}

/* The seq-shift message: the shifted ranks (those shifted alike
 * together), what they skipped or added and where the calls line up
 * again, both readings where the counts do not tell a skip from an extra
 * call; then the calls at the seq. */
static int put_shift(struct nsp_sbuf *b, struct nsp_job *job, const struct nsp_finding_priv *fp) {
  const struct nsp_finding *f = &fp->pub;
  struct nsp_an_comm *c = job->comms[fp->comm_index];
  size_t ref = 0, *tmp = malloc(c->nmembers * sizeof *tmp);
  int *shift = malloc((f->nodd + 1) * sizeof *shift), *alt = malloc((f->nodd + 1) * sizeof *alt);
  int *group = malloc((f->nodd + 1) * sizeof *group);
  int ok = tmp && shift && alt && group && find_shift(job, c, fp, f->seq, shift, alt, &ref, tmp);
  struct calls m, r;
  if (ok) calls_of(job, c, tmp, side_members(job, c, &f->sides[ref], tmp), f->seq, &m);
  unsigned long long s = (unsigned long long)f->seq;
  for (size_t i = 0; ok && f->nodd && i < f->nodd; i++) {
    size_t n = 0, j;
    for (j = 0; j < i && (shift[j] != shift[i] || alt[j] != alt[i]); j++) continue;
    if (j < i) continue; /* said with rank j's */
    for (j = i; j < f->nodd; j++)
      if (shift[j] == shift[i] && alt[j] == alt[i]) group[n++] = f->odd_ranks[j];
    const struct nsp_member *om = nsp_an_find_member(job, c, f->odd_ranks[i]);
    size_t oi = (size_t)(om - job->members);
    calls_of(job, c, &oi, 1, f->seq, &r);
    nsp_sbuf_printf(b, "%s", i ? "; " : "");
    nsp_an_put_comm_ranks(b, job, f->comm_id, group, n);
    nsp_sbuf_printf(b, " ");
    put_reading(b, job, f, f->seq, shift[i], &m, &r, &f->sides[ref], n > 1);
    if (alt[i]) {
      nsp_sbuf_printf(b, ", or ");
      put_reading(b, job, f, f->seq, alt[i], &m, &r, &f->sides[ref], n > 1);
    }
  }
  if (ok && f->nodd) put_second(b, job, c, f, side_members(job, c, &f->sides[ref], tmp), tmp);
  if (ok && !f->nodd) {
    /* One side against the other: either reading.  The side behind is
     * named as the one that skipped. */
    const struct nsp_side *behind = &f->sides[shift[0] > 0 ? 1 : 0], *ahead = &f->sides[shift[0] > 0 ? 0 : 1];
    int k = shift[0] > 0 ? shift[0] : -shift[0];
    calls_of(job, c, tmp, side_members(job, c, ahead, tmp), f->seq, &m);
    nsp_an_put_side_ranks(b, job, f, behind);
    nsp_sbuf_printf(b, " ");
    if (put_shift_what(b, k, f->seq, &m, &m)) nsp_sbuf_printf(b, ")");
    nsp_sbuf_printf(b, ", or ");
    nsp_an_put_side_ranks(b, job, f, ahead);
    nsp_sbuf_printf(b, " issued %s (", k == 1 ? "an extra one" : "as many extra ones");
    nsp_an_put_side_ranks(b, job, f, behind);
    nsp_sbuf_printf(b, "'s calls ");
    put_shift_match(b, k, f->seq);
    nsp_an_put_side_ranks(b, job, f, ahead);
    nsp_sbuf_printf(b, "'s from seq %llu on)", s + (unsigned long long)k);
    if (alt[0]) nsp_sbuf_printf(b, " (or shifted by %d seqs the other way)", alt[0] > 0 ? alt[0] : -alt[0]);
  }
  if (!ok) nsp_sbuf_printf(b, "ranks are shifted at seq %llu", s);
  free(tmp);
  free(shift);
  free(alt);
  free(group);
  return 0;
}

static int message(struct nsp_job *job, struct nsp_finding_priv *fp) {
  const struct nsp_finding *f = &fp->pub;
  struct nsp_sbuf sb = {0}, *b = &sb;
  if (f->kind == NSP_FIND_SEQ_SHIFT) {
    NSP_TRY(put_shift(b, job, fp));
    nsp_sbuf_printf(b, ": ");
    for (size_t s = 0; s < f->nsides; s++) {
      if (s) nsp_sbuf_printf(b, " vs ");
      nsp_an_put_side_ranks(b, job, f, &f->sides[s]);
      nsp_sbuf_printf(b, " %s", f->sides[s].text);
    }
    if (f->later)
      nsp_sbuf_printf(b, " (and %llu later seq%s also differ%s)", (unsigned long long)f->later,
                      nsp_an_plural(f->later), f->later == 1 ? "s" : "");
    return nsp_an_take_message(fp, b);
  }
  nsp_sbuf_printf(b, "%s at seq %llu: ", mismatch_phrase(f->kind), (unsigned long long)f->seq);
  for (size_t s = 0; s < f->nsides; s++) {
    if (s) nsp_sbuf_printf(b, " vs ");
    nsp_an_put_side_ranks(b, job, f, &f->sides[s]);
    nsp_sbuf_printf(b, " %s", f->sides[s].text);
  }
  put_odd(b, job, f, "is the odd one");
  if (f->later)
    nsp_sbuf_printf(b, " (and %llu later seq%s also differ%s)", (unsigned long long)f->later, nsp_an_plural(f->later),
                    f->later == 1 ? "s" : "");
  return nsp_an_take_message(fp, b);
}

const struct nsp_rule nsp_rule_alignment = {
    .name = "alignment",
    .checks = "collectives at each seq of a communicator: kind, dtype, count, reduction op, root; ranks whose "
              "later calls match the others' shifted",
    .kinds = NSP_RULE_KINDS(NSP_FIND_KIND_MISMATCH, NSP_FIND_DTYPE_MISMATCH, NSP_FIND_COUNT_MISMATCH,
                            NSP_FIND_REDOP_MISMATCH, NSP_FIND_ROOT_MISMATCH, NSP_FIND_SEQ_SHIFT),
    .check_comm = check_comm, .message = message,
};
