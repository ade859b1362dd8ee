/* nsp_rule_alignment.c - rule 1 of docs/REPORT.md: collectives aligned by
 * their per-communicator seq.  Every rank that reached a seq is compared
 * with the reference signature the first one set (the loader keeps each
 * rank's first difference), so the rule is linear in members and seq
 * pages.  Per communicator, the first seq where ranks differ is a finding;
 * its kind is the first field on which the sides disagree (collective,
 * dtype, count, reduction op, root), and later differing seqs are only
 * counted. */
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

static int check_comm(struct nsp_job *job, struct nsp_an_comm *c) {
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
  NSP_TRY(nsp_an_mark_odd(f));
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

static int message(struct nsp_job *job, struct nsp_finding_priv *fp) {
  const struct nsp_finding *f = &fp->pub;
  struct nsp_sbuf sb = {0}, *b = &sb;
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
    .checks = "collectives at each seq of a communicator: kind, dtype, count, reduction op, root",
    .kinds = NSP_RULE_KINDS(NSP_FIND_KIND_MISMATCH, NSP_FIND_DTYPE_MISMATCH, NSP_FIND_COUNT_MISMATCH,
                            NSP_FIND_REDOP_MISMATCH, NSP_FIND_ROOT_MISMATCH),
    .check_comm = check_comm, .message = message,
};
