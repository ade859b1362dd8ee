/* nsp_an_perf.c - `ncclspy perf`: GPU time per (communicator, op, exact
 * size, count, dtype, reduction op, root: nccl-tests' line)
 * from COMPLETION records, bandwidths as nccl-tests computes them, and the
 * spread of arrival times per collective with the ranks that come last.
 *
 * Only calls that completed are timed: a call that returned an error, a
 * completion that says the work failed, was abandoned or is not known
 * (NSP_DONE_ERROR, _ABANDONED, _UNTRACKED, _CAPTURED), a call that ended
 * at or after its communicator was aborted, revoked or reported an
 * asynchronous error (its GPU time is how long it hung) and the calls of a
 * group whose ncclGroupEnd failed are counted (failed, untracked) and
 * left out of the percentiles and bandwidths.
 *
 * A pass of its own over every trace (after nsp_job_analyze has unified
 * the communicators), so `analyze` pays nothing for it.  Memory: one
 * distribution per line (up to 1024 values, then a fixed histogram), 16
 * bytes per (communicator, seq) for arrivals (struct arrival), the calls
 * in flight per process; the analysis's refs are freed first. */
#include <stdlib.h>
#include <string.h>

#include "nsp_an_job.h"
#include "nsp_names.h"
#include "nsp_reader.h"

/* Values kept exactly per distribution; beyond, a log histogram with
 * 128 buckets per power of two (relative error under 0.8%). */
#define NSP_PERF_RAW 1024
#define NSP_PERF_HIST (128 + 56 * 128 + 128)
#define NSP_PERF_WORST 5
#define NSP_PERF_STRAGGLERS 8

/* ---- nccl-tests' conventions ----------------------------------------------
 * Size S and bus-bandwidth factors follow nccl-tests (doc/PERFORMANCE.md,
 * the GetBw functions of its src/ files); each collective's factors are
 * columns of the entry-point table (common/nsp_nccl_apis.h), read through
 * nsp_api_size_factor and nsp_api_busbw_factor. */

uint64_t nsp_perf_size(int api, uint64_t count, int dtype, int nranks) {
  size_t esz = nsp_dtype_size(dtype);
  if (!esz || count > UINT64_MAX / esz) return 0;
  uint64_t s = count * esz, f = nsp_api_size_factor(api, nranks);
  return f > 1 && s > UINT64_MAX / f ? UINT64_MAX : s * f;
}

double nsp_perf_busbw_factor(int api, int nranks) { return nsp_api_busbw_factor(api, nranks); }

/* ---- distributions --------------------------------------------------------- */

struct dist {
  uint64_t n;
  int64_t *raw;
  size_t nraw, rawcap;
  uint32_t *hist;
  int64_t max;
};

static size_t hist_index(int64_t v) {
  if (v < 128) return (size_t)(v < 0 ? 0 : v);
  int e = 63 - __builtin_clzll((unsigned long long)v);
  size_t sub = (size_t)((uint64_t)v >> (e - 7)) & 127;
  return 128 + (size_t)(e - 7) * 128 + sub;
}

static int64_t hist_value(size_t idx) {
  if (idx < 128) return (int64_t)idx;
  int e = (int)((idx - 128) / 128) + 7;
  uint64_t sub = (idx - 128) % 128;
  uint64_t lo = (1ull << e) | (sub << (e - 7)), width = 1ull << (e - 7);
  return (int64_t)(lo + width / 2);
}

static int dist_add(struct dist *d, int64_t v) {
  if (v < 0) v = 0;
  d->n++;
  if (v > d->max) d->max = v;
  if (d->nraw < NSP_PERF_RAW && !d->hist) {
    NSP_TRY(nsp_grow(&d->raw, &d->rawcap, d->nraw + 1, sizeof *d->raw));
    d->raw[d->nraw++] = v;
    return 0;
  }
  if (!d->hist) {
    d->hist = calloc(NSP_PERF_HIST, sizeof *d->hist);
    if (!d->hist) return NSP_AN_ENOMEM;
    for (size_t i = 0; i < d->nraw; i++) d->hist[hist_index(d->raw[i])]++;
  }
  d->hist[hist_index(v)]++;
  return 0;
}

static int cmp_i64(const void *pa, const void *pb) {
  int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
  return a < b ? -1 : a > b;
}

/* Nearest-rank percentile: the value at rank ceil(p/100 x n). */
static int64_t dist_pct(struct dist *d, unsigned p) {
  if (!d->n) return 0;
  uint64_t rank = d->n > UINT64_MAX / 100 ? d->n / 100 * p : (d->n * p + 99) / 100;
  if (rank < 1) rank = 1;
  if (!d->hist) {
    qsort(d->raw, d->nraw, sizeof *d->raw, cmp_i64);
    return d->raw[rank - 1];
  }
  uint64_t cum = 0;
  for (size_t i = 0; i < NSP_PERF_HIST; i++) {
    cum += d->hist[i];
    if (cum >= rank) return hist_value(i) > d->max ? d->max : hist_value(i);
  }
  return d->max;
}

static void dist_free(struct dist *d) {
  free(d->raw);
  free(d->hist);
}

/* ---- the model ---------------------------------------------------------------- */

struct rowacc {
  struct nsp_perf_row row;
  double sum_s, sum_ns;
  struct dist d;
};

/* The arrivals at one seq of a communicator: 16 bytes.  Earliest and
 * latest entry as offsets from the page's base (unless the page is wide),
 * the rank that came last, and in nat: how many calls came (saturating at
 * ARR_N_MAX: a communicator of that many traced ranks or more counts a
 * seq as reached by all once that many came), whether the latest entry
 * was a tie (ARR_TIE) and the op (ARR_API_SHIFT up). */
struct arrival {
  int32_t dmin, dmax;
  int32_t last;
  uint32_t nat;
};
#define ARR_N_MAX 0x7fffffu
#define ARR_TIE 0x800000u
#define ARR_API_SHIFT 24
/* Arrivals per page of a communicator's paged array of them by seq. */
#define NSP_ARR_PAGE 256
/* Seqs page_no * NSP_ARR_PAGE onwards; times are offsets from base (the
 * first time of the page) until one is 2^31 ns or more away: then every
 * time of the page is kept whole in wide ([0] earliest, [1] latest). */
struct arr_page {
  int64_t base;
  int64_t (*wide)[2];
  int based;
  struct arrival a[NSP_ARR_PAGE];
};

static int64_t arr_time(const struct arr_page *pg, unsigned e, int latest) {
  if (pg->wide) return pg->wide[e][latest];
  return pg->base + (latest ? pg->a[e].dmax : pg->a[e].dmin);
}

/* Sets arrival e's earliest (latest 0) or latest entry to t (wall ns). */
static int arr_set_time(struct arr_page *pg, unsigned e, int latest, int64_t t) {
  if (pg->wide) {
    pg->wide[e][latest] = t;
    return 0;
  }
  if (!pg->based) {
    pg->base = t;
    pg->based = 1;
  }
  if (nsp_an_time_off(t, pg->base, latest ? &pg->a[e].dmax : &pg->a[e].dmin)) return 0;
  pg->wide = malloc(NSP_ARR_PAGE * sizeof *pg->wide);
  if (!pg->wide) return NSP_AN_ENOMEM;
  for (unsigned i = 0; i < NSP_ARR_PAGE; i++) {
    pg->wide[i][0] = pg->base + pg->a[i].dmin;
    pg->wide[i][1] = pg->base + pg->a[i].dmax;
  }
  pg->wide[e][latest] = t;
  return 0;
}

struct perf_comm {
  struct nsp_perf_comm pub;
  struct rowacc *acc;
  size_t nacc, acc_cap;
  struct nsp_u64map acc_by_key;
  struct nsp_perf_row *rows;
  struct nsp_paged arrivals; /* page number (seq / NSP_ARR_PAGE) -> struct arr_page */
  struct nsp_perf_spread worst[NSP_PERF_WORST];
  struct nsp_perf_straggler *strag;
};

struct nsp_perf {
  struct perf_comm *c; /* parallel to job->comms */
  size_t n;
};

void nsp_an_perf_free(struct nsp_perf *p) {
  if (!p) return;
  for (size_t i = 0; i < p->n; i++) {
    struct perf_comm *c = &p->c[i];
    for (size_t k = 0; k < c->nacc; k++) dist_free(&c->acc[k].d);
    free(c->acc);
    nsp_u64map_free(&c->acc_by_key);
    free(c->rows);
    for (size_t k = 0; k < c->arrivals.npages; k++) free(((struct arr_page *)c->arrivals.pages[k])->wide);
    nsp_paged_free(&c->arrivals);
    free(c->strag);
  }
  free(p->c);
  free(p);
}

static int log2_bucket(uint64_t s) { return s ? 63 - __builtin_clzll((unsigned long long)s) : -1; }

/* What makes a line of the table (nccl-tests' columns). */
struct line_key {
  int api, dtype, redop, root;
  uint64_t bytes, count;
};

/* The line of a call: dynamic reduction ops (PreMulSum handles, numbered
 * per process) are one "premulsum" line; the root only where there is
 * one. */
static struct line_key call_key(int api, uint64_t count, int dtype, int redop, int peer, int nranks) {
  struct line_key k = {api, dtype, nsp_api_has_redop(api) ? redop : -1, nsp_api_has_root(api) ? peer : -1,
                       nsp_perf_size(api, count, dtype, nranks), count};
  if (k.redop >= (int)ncclNumOps) k.redop = ncclNumOps;
  return k;
}

static uint64_t key_hash(const struct line_key *k, uint64_t salt) {
  uint64_t h = 1469598103934665603ull ^ salt;
  const uint64_t v[6] = {(uint64_t)(uint32_t)k->api, (uint64_t)(uint32_t)k->dtype, (uint64_t)(uint32_t)k->redop,
                         (uint64_t)(uint32_t)k->root, k->bytes, k->count};
  for (int i = 0; i < 6; i++) h = (h ^ v[i]) * 1099511628211ull;
  return h;
}

static struct rowacc *row_for(struct perf_comm *c, const struct line_key *k) {
  /* A hash of the line as the map's key; a collision probes on. */
  for (uint64_t salt = 0;; salt++) {
    uint64_t key = key_hash(k, salt);
    size_t *i = nsp_u64map_get(&c->acc_by_key, key);
    if (i) {
      const struct nsp_perf_row *r = &c->acc[*i].row;
      if (r->api == k->api && r->dtype == k->dtype && r->redop == k->redop && r->root == k->root &&
          r->bytes == k->bytes && r->count == k->count)
        return &c->acc[*i];
      continue;
    }
    if (nsp_grow(&c->acc, &c->acc_cap, c->nacc + 1, sizeof *c->acc) < 0 ||
        nsp_u64map_put(&c->acc_by_key, key, c->nacc) < 0)
      return NULL;
    struct rowacc *r = &c->acc[c->nacc++];
    memset(r, 0, sizeof *r);
    r->row.api = k->api;
    r->row.log2 = log2_bucket(k->bytes);
    r->row.bytes = k->bytes;
    r->row.count = k->count;
    r->row.dtype = k->dtype;
    r->row.redop = k->redop;
    r->row.root = k->root;
    return r;
  }
}

/* ---- the pass --------------------------------------------------------------- */

struct local {
  size_t comm; /* SIZE_MAX none */
  int32_t rank;
};

/* Calls a COMPLETION completes (one each), then merged into one sample per
 * (comm, op). */
struct part {
  size_t comm;
  struct line_key k;
};
struct pass {
  struct nsp_job *job;
  struct nsp_perf *perf;
  struct local *loc;
  size_t nloc;
  struct part *calls, *parts;
  size_t ncalls, calls_cap, nparts, parts_cap;
  /* Per comm index of the trace: the monotonic time from which work in
   * flight on it was cut short (its first ncclCommAbort or ncclCommRevoke,
   * or asynchronous error); 0 none. */
  uint64_t *cut;
  size_t ncut;
  int cut_short; /* the completion being read ended a call after its cut */
  int oom;
  /* Per trace: a member of it ended by ncclCommAbort or ncclCommRevoke
   * (found in one pass over the members, not one per trace). */
  unsigned char *aborted;
};

static const struct local *local_of(const struct pass *ps, uint32_t local) {
  return local < ps->nloc && ps->loc[local].comm != SIZE_MAX ? &ps->loc[local] : NULL;
}

static int is_error(int32_t result) { return result != 0 && result != ncclInProgress; }

/* COMM_END of an abort or revoke, or an asynchronous error: what is in
 * flight on that communicator from then on did not complete normally. */
static int note_cut(struct pass *ps, const struct nsp_rec *rec) {
  int cut = rec->kind == NSP_REC_COMM_END ? rec->api == NSP_API_CommAbort || rec->api == NSP_API_CommRevoke
                                          : rec->kind == NSP_REC_ASYNC_ERROR && is_error(rec->result);
  if (!cut || !rec->comm) return 0;
  if (rec->comm >= ps->ncut) {
    size_t cap = ps->ncut, old = ps->ncut;
    NSP_TRY(nsp_grow(&ps->cut, &cap, (size_t)rec->comm + 1, sizeof *ps->cut));
    memset(ps->cut + old, 0, (cap - old) * sizeof *ps->cut);
    ps->ncut = cap;
  }
  /* A COMM_END's entry, an ASYNC_ERROR's time. */
  uint64_t when = rec->kind == NSP_REC_ASYNC_ERROR ? nsp_rec_async_error_t(rec) : nsp_rec_comm_end_t_enter(rec);
  uint64_t t = when ? when : 1;
  if (!ps->cut[rec->comm] || t < ps->cut[rec->comm]) ps->cut[rec->comm] = t;
  return 0;
}

static void on_done(void *ctx, const struct nsp_pend *e, const struct nsp_rec *done) {
  struct pass *ps = ctx;
  /* Ended (GPU end, else when the shim saw it) after its communicator's
   * cut: the time is how long it hung, for the whole completion. */
  if ((done->flags & NSP_DONE_OK) && e->local < ps->ncut && ps->cut[e->local] &&
      ((done->flags & NSP_DONE_TIMED) ? nsp_rec_completion_gpu_end(done) : nsp_rec_completion_t_seen(done)) >=
          ps->cut[e->local])
    ps->cut_short = 1;
  const struct local *l = local_of(ps, e->local);
  if (!l) return;
  int api = nsp_api_coll_class(e->api);
  struct line_key k = call_key(api, e->count, e->dtype, e->redop, e->peer, ps->job->comms[l->comm]->info.nranks);
  if (nsp_grow(&ps->calls, &ps->calls_cap, ps->ncalls + 1, sizeof *ps->calls) < 0) {
    ps->oom = 1;
    return;
  }
  ps->calls[ps->ncalls++] = (struct part){l->comm, k};
}

static int on_call(struct pass *ps, struct nsp_pend_tab *tab, int tracked, const struct nsp_trace *t,
                   const struct nsp_rec *rec) {
  const struct local *l = local_of(ps, rec->comm);
  int kind = nsp_api_kind(rec->api);
  if (!l || (kind != NSP_K_COLL && kind != NSP_K_P2P)) return 0;
  struct perf_comm *c = &ps->perf->c[l->comm];
  int api = nsp_api_coll_class(rec->api);
  struct line_key k = call_key(api, rec->count, rec->dtype, rec->redop, rec->peer,
                               ps->job->comms[l->comm]->info.nranks);
  struct rowacc *r = row_for(c, &k);
  if (!r) return NSP_AN_ENOMEM;
  r->row.calls++;
  if (is_error(rec->result)) { /* nothing was enqueued */
    r->row.failed++;
    return 0;
  }
  if (kind == NSP_K_COLL && rec->seq && l->rank >= 0) {
    struct arr_page *pg = nsp_paged_page(&c->arrivals, rec->seq / NSP_ARR_PAGE, 1);
    if (!pg) return NSP_AN_ENOMEM;
    unsigned e = (unsigned)(rec->seq % NSP_ARR_PAGE);
    struct arrival *a = &pg->a[e];
    int64_t tw = (int64_t)(rec->t_enter + (uint64_t)t->off_ns);
    if (!(a->nat & ARR_N_MAX)) {
      NSP_TRY(arr_set_time(pg, e, 0, tw));
      NSP_TRY(arr_set_time(pg, e, 1, tw));
      a->last = l->rank;
      a->nat = (uint32_t)(uint8_t)api << ARR_API_SHIFT;
    } else {
      if (tw < arr_time(pg, e, 0)) NSP_TRY(arr_set_time(pg, e, 0, tw));
      int64_t tmax = arr_time(pg, e, 1);
      if (tw > tmax) {
        NSP_TRY(arr_set_time(pg, e, 1, tw));
        a->last = l->rank;
        a->nat &= ~ARR_TIE;
      } else if (tw == tmax) {
        a->nat |= ARR_TIE;
      }
    }
    if ((a->nat & ARR_N_MAX) < ARR_N_MAX) a->nat++;
  }
  if (!tracked || (rec->flags & NSP_CALL_UNTRACKED)) return 0;
  struct nsp_pend e;
  nsp_pend_from_call(&e, rec);
  int ret = nsp_pend_call(tab, &e);
  return ret < 0 ? ret : 0;
}

enum { DONE_TIMED, DONE_UNTIMED, DONE_FAILED, DONE_UNTRACKED };

/* What a completion says of its calls' GPU time. */
static int done_class(uint32_t flags, int cut_short) {
  if (flags & (NSP_DONE_ERROR | NSP_DONE_ABANDONED)) return DONE_FAILED;
  if (flags & (NSP_DONE_UNTRACKED | NSP_DONE_CAPTURED)) return DONE_UNTRACKED;
  if (cut_short) return DONE_FAILED;
  uint32_t want = NSP_DONE_OK | NSP_DONE_TIMED;
  return (flags & want) == want ? DONE_TIMED : DONE_UNTIMED;
}

static int on_completion(struct pass *ps, struct nsp_pend_tab *tab, const struct nsp_rec *rec) {
  ps->ncalls = 0;
  ps->cut_short = 0;
  NSP_TRY(nsp_pend_done(tab, rec, on_done, ps));
  if (ps->oom) return NSP_AN_ENOMEM;
  int cls = done_class(rec->flags, ps->cut_short);
  if (cls == DONE_FAILED || cls == DONE_UNTRACKED) {
    for (size_t i = 0; i < ps->ncalls; i++) {
      const struct part *p = &ps->calls[i];
      struct rowacc *r = row_for(&ps->perf->c[p->comm], &p->k);
      if (!r) return NSP_AN_ENOMEM;
      if (cls == DONE_FAILED) r->row.failed++;
      else r->row.untracked++;
    }
    return 0;
  }
  uint64_t gpu_start = nsp_rec_completion_gpu_start(rec), gpu_end = nsp_rec_completion_gpu_end(rec);
  if (cls != DONE_TIMED || gpu_end < gpu_start) return 0;
  /* One sample per (comm, op): a group's sends share one time. */
  ps->nparts = 0;
  for (size_t i = 0; i < ps->ncalls; i++) {
    const struct part *p = &ps->calls[i];
    size_t k = 0;
    while (k < ps->nparts && (ps->parts[k].comm != p->comm || ps->parts[k].k.api != p->k.api)) k++;
    if (k < ps->nparts) { /* a group's calls: one sample, their sizes summed */
      struct line_key *m = &ps->parts[k].k;
      m->bytes = m->bytes > UINT64_MAX - p->k.bytes ? UINT64_MAX : m->bytes + p->k.bytes;
      m->count = m->count > UINT64_MAX - p->k.count ? UINT64_MAX : m->count + p->k.count;
      if (m->dtype != p->k.dtype) m->dtype = -1;
      if (m->redop != p->k.redop) m->redop = -1;
      if (m->root != p->k.root) m->root = -1;
      continue;
    }
    NSP_TRY(nsp_grow(&ps->parts, &ps->parts_cap, ps->nparts + 1, sizeof *ps->parts));
    ps->parts[ps->nparts++] = *p;
  }
  int64_t dur = (int64_t)(gpu_end - gpu_start);
  for (size_t i = 0; i < ps->nparts; i++) {
    const struct part *p = &ps->parts[i];
    struct rowacc *r = row_for(&ps->perf->c[p->comm], &p->k);
    if (!r) return NSP_AN_ENOMEM;
    r->row.timed++;
    r->sum_s += (double)p->k.bytes;
    r->sum_ns += (double)dur;
    NSP_TRY(dist_add(&r->d, dur));
  }
  return 0;
}

/* A failed outermost ncclGroupEnd: its calls never ran (the shim writes
 * no completion for them).  Counted as failed, as if an error completion
 * had named the group. */
static int on_group_failed(struct pass *ps, struct nsp_pend_tab *tab, const struct nsp_rec *rec) {
  struct nsp_rec done;
  nsp_pend_group_failed(&done, rec->group_id);
  return on_completion(ps, tab, &done);
}

/* A completion can come before the abort that cut its calls short (the
 * shim's poller sees them end while ncclCommAbort runs, before the abort's
 * record is written): when this process saw an error or its last word on
 * a communicator was an abort or revoke, read its cuts first.  (Else,
 * e.g. a revoke then a destroy with no error, only completions read after
 * the revoke's record are cut.) */
static int needs_cuts(const struct pass *ps, size_t ti) {
  const struct nsp_trace *t = ps->job->traces[ti];
  return (t->info.errors > 0 || ps->aborted[ti]) && (t->info.tracking & NSP_TRACK_COMPLETION);
}

static int read_cuts(struct pass *ps, size_t ti, struct nsp_an_feed *feed, size_t k) {
  const struct nsp_trace *t = ps->job->traces[ti];
  char err[256];
  struct nsp_an_src src;
  if (!nsp_an_src_reopen(&src, feed, k, t, 0, err, sizeof err)) return 0; /* the main pass says so */
  const struct nsp_rec *rec;
  int ret = 0, got = 0;
  while (!ret && (got = nsp_an_src_next(&src, &rec)) == 1)
    if (rec->kind == NSP_REC_COMM_END || rec->kind == NSP_REC_ASYNC_ERROR) ret = note_cut(ps, rec);
  if (!ret && got < 0) ret = got;
  nsp_an_src_close(&src);
  return ret;
}

/* Trace ti again, from item k of the feed (NULL: alone); its cuts first
 * from item k - 1 when needs_cuts. */
static int read_trace(struct pass *ps, size_t ti, struct nsp_an_feed *feed, size_t k) {
  const struct nsp_trace *t = ps->job->traces[ti];
  ps->ncut = 0;
  if (needs_cuts(ps, ti)) NSP_TRY(read_cuts(ps, ti, feed, k - 1));
  char err[256];
  struct nsp_an_src src;
  if (!nsp_an_src_reopen(&src, feed, k, t, 0, err, sizeof err)) return nsp_job_notef(ps->job, "%s: could not be read again for perf: %s", t->info.path, err);
  struct nsp_pend_tab tab;
  nsp_pend_init(&tab);
  int tracked = 0, ret = 0;
  ps->nloc = 0;
  const struct nsp_rec *rec;
  int got;
  while (!ret && (got = nsp_an_src_next(&src, &rec)) == 1) {
    nsp_an_progress_record_at(ps->job, nsp_an_src_offset(&src));
    switch (rec->kind) {
      case NSP_REC_PROCESS:
        tracked = (rec->ext->tracking & NSP_TRACK_COMPLETION) != 0;
        break;
      case NSP_REC_COMM: {
        if (rec->comm >= ps->nloc) {
          size_t cap = ps->nloc, old = ps->nloc;
          if (nsp_grow(&ps->loc, &cap, (size_t)rec->comm + 1, sizeof *ps->loc) < 0) {
            ret = NSP_AN_ENOMEM;
            break;
          }
          for (size_t i = old; i < cap; i++) ps->loc[i] = (struct local){SIZE_MAX, -1};
          ps->nloc = cap;
        }
        const size_t *ci = rec->ext->comm_id ? nsp_u64map_get(&ps->job->comm_by_id, rec->ext->comm_id) : NULL;
        if (ci && !(rec->flags & NSP_COMM_NOCOLOR)) {
          ps->loc[rec->comm].comm = *ci;
          if (rec->ext->rank >= 0) ps->loc[rec->comm].rank = rec->ext->rank;
        }
        break;
      }
      case NSP_REC_CALL:
        if (rec->api == NSP_API_GroupEnd && is_error(rec->result) && rec->group_id && rec->group_depth == 1) {
          if (tracked) ret = on_group_failed(ps, &tab, rec);
          break;
        }
        ret = on_call(ps, &tab, tracked, t, rec);
        break;
      case NSP_REC_COMM_END:
      case NSP_REC_ASYNC_ERROR:
        ret = note_cut(ps, rec);
        break;
      case NSP_REC_COMPLETION:
        if (tracked) ret = on_completion(ps, &tab, rec);
        break;
      default:
        break;
    }
  }
  if (!ret && got < 0) ret = got;
  nsp_pend_free(&tab);
  nsp_an_src_close(&src);
  return ret;
}

static int cmp_row(const void *pa, const void *pb) {
  const struct nsp_perf_row *a = pa, *b = pb;
  if (a->api != b->api) return a->api < b->api ? -1 : 1;
  if (a->bytes != b->bytes) return a->bytes < b->bytes ? -1 : 1;
  if (a->count != b->count) return a->count < b->count ? -1 : 1;
  if (a->dtype != b->dtype) return a->dtype < b->dtype ? -1 : 1;
  if (a->redop != b->redop) return a->redop < b->redop ? -1 : 1;
  return a->root < b->root ? -1 : a->root > b->root;
}

static int cmp_strag(const void *pa, const void *pb) {
  const struct nsp_perf_straggler *a = pa, *b = pb;
  if (a->last != b->last) return a->last > b->last ? -1 : 1;
  return a->rank < b->rank ? -1 : a->rank > b->rank;
}

static int finish_comm(struct nsp_job *job, size_t ci, struct perf_comm *c) {
  const struct nsp_an_comm *comm = job->comms[ci];
  c->pub.comm_id = comm->info.id;
  c->pub.comm = &comm->info;
  c->rows = malloc((c->nacc ? c->nacc : 1) * sizeof *c->rows);
  if (!c->rows) return NSP_AN_ENOMEM;
  double factor_n = comm->info.nranks;
  for (size_t i = 0; i < c->nacc; i++) {
    struct rowacc *a = &c->acc[i];
    a->row.p50_ns = dist_pct(&a->d, 50);
    a->row.p99_ns = dist_pct(&a->d, 99);
    if (a->sum_ns > 0) {
      a->row.algbw_gbs = a->sum_s / a->sum_ns; /* bytes per ns = GB/s */
      a->row.busbw_gbs = a->row.algbw_gbs * nsp_perf_busbw_factor(a->row.api, (int)factor_n);
    }
    c->rows[i] = a->row;
  }
  qsort(c->rows, c->nacc, sizeof *c->rows, cmp_row);
  c->pub.rows = c->rows;
  c->pub.nrows = c->nacc;

  /* Arrivals: collectives every traced rank reached. */
  size_t nt = comm->info.ntraced;
  if (nt < 2) return 0;
  struct dist spread = {0};
  struct nsp_u64map last_by_rank = {0};
  uint64_t *counts = NULL;
  size_t ncounts = 0, counts_cap = 0;
  int ret = 0;
  for (size_t p = 0; p < c->arrivals.npages && !ret; p++) {
    uint64_t no = c->arrivals.page_nos[p];
    const struct arr_page *pg = c->arrivals.pages[p];
    for (unsigned e = 0; e < NSP_ARR_PAGE && !ret; e++) {
      const struct arrival *a = &pg->a[e];
      uint32_t n = a->nat & ARR_N_MAX;
      if (n < nt && n < ARR_N_MAX) continue;
      /* Times come from the traces: no signed overflow. */
      uint64_t usp = (uint64_t)arr_time(pg, e, 1) - (uint64_t)arr_time(pg, e, 0);
      int64_t sp = usp > INT64_MAX ? INT64_MAX : (int64_t)usp;
      c->pub.collectives++;
      ret = dist_add(&spread, sp);
      int last = !(a->nat & ARR_TIE) ? a->last : -1;
      const struct nsp_member *lm = last >= 0 ? nsp_an_find_member(job, comm, last) : NULL;
      struct nsp_perf_spread w = {no * NSP_ARR_PAGE + e, (int)(a->nat >> ARR_API_SHIFT), sp, last,
                                  lm ? job->traces[lm->trace]->info.rank : -1};
      /* Keep the largest spreads, largest first; ties by lower seq. */
      for (size_t k = 0; k < NSP_PERF_WORST; k++) {
        struct nsp_perf_spread *x = &c->worst[k];
        if (k >= c->pub.nworst || w.spread_ns > x->spread_ns || (w.spread_ns == x->spread_ns && w.seq < x->seq)) {
          memmove(&c->worst[k + 1], &c->worst[k], (NSP_PERF_WORST - k - 1) * sizeof *x);
          *x = w;
          if (c->pub.nworst < NSP_PERF_WORST) c->pub.nworst++;
          break;
        }
      }
      if (last < 0) continue;
      c->pub.with_last++;
      size_t *slot = nsp_u64map_get(&last_by_rank, (uint64_t)last);
      if (slot) {
        counts[*slot]++;
      } else if (nsp_grow(&counts, &counts_cap, ncounts + 1, sizeof *counts) < 0 ||
                 nsp_u64map_put(&last_by_rank, (uint64_t)last, ncounts) < 0) {
        ret = NSP_AN_ENOMEM;
      } else {
        counts[ncounts++] = 1;
      }
    }
  }
  c->pub.worst = c->worst;
  c->pub.spread_p50_ns = dist_pct(&spread, 50);
  c->pub.spread_p99_ns = dist_pct(&spread, 99);
  c->pub.spread_max_ns = spread.max;
  dist_free(&spread);
  if (!ret && ncounts) {
    c->strag = calloc(ncounts, sizeof *c->strag);
    if (!c->strag) ret = NSP_AN_ENOMEM;
    for (size_t i = 0, k = 0; !ret && i < last_by_rank.cap; i++) {
      if (!last_by_rank.used[i]) continue;
      struct nsp_perf_straggler *s = &c->strag[k++];
      s->rank = (int)last_by_rank.keys[i];
      s->last = counts[last_by_rank.vals[i]];
      s->share = (double)s->last / (double)c->pub.with_last;
      const struct nsp_member *m = nsp_an_find_member(job, comm, s->rank);
      s->trace = m ? m->trace : SIZE_MAX;
      s->host = m ? job->traces[m->trace]->info.host : "";
      s->pid = m ? job->traces[m->trace]->info.pid : 0;
      s->job_rank = m ? job->traces[m->trace]->info.rank : -1;
    }
    if (!ret) {
      qsort(c->strag, ncounts, sizeof *c->strag, cmp_strag);
      c->pub.stragglers = c->strag;
      c->pub.nstragglers = ncounts < NSP_PERF_STRAGGLERS ? ncounts : NSP_PERF_STRAGGLERS;
    }
  }
  free(counts);
  nsp_u64map_free(&last_by_rank);
  return ret;
}

int nsp_job_perf(struct nsp_job *job) {
  if (!job) return NSP_AN_EINVAL;
  if (!job->analyzed || job->perf) return NSP_AN_ESTATE;
  struct nsp_perf *perf = calloc(1, sizeof *perf);
  if (!perf) return NSP_AN_ENOMEM;
  perf->c = calloc(job->ncomms ? job->ncomms : 1, sizeof *perf->c);
  if (!perf->c) {
    free(perf);
    return NSP_AN_ENOMEM;
  }
  perf->n = job->ncomms;
  for (size_t i = 0; i < perf->n; i++) nsp_paged_init(&perf->c[i].arrivals, sizeof(struct arr_page), 1);
  /* The rules have run: their refs are not needed again (memory). */
  for (size_t i = 0; i < job->ncomms; i++) nsp_an_comm_drop_refs(job->comms[i]);
  job->perf = perf;
  struct pass ps;
  memset(&ps, 0, sizeof ps);
  ps.job = job;
  ps.perf = perf;
  ps.aborted = calloc(job->ntraces ? job->ntraces : 1, 1);
  if (!ps.aborted) return NSP_AN_ENOMEM; /* job->perf is freed with the job */
  for (size_t i = 0; i < job->nmembers; i++) {
    const struct nsp_member *m = &job->members[i];
    if (m->trace < job->ntraces && m->ended && (m->end_api == NSP_API_CommAbort || m->end_api == NSP_API_CommRevoke))
      ps.aborted[m->trace] = 1;
  }
  int ret = 0;
  uint64_t bytes = 0;
  for (size_t i = 0; i < job->ntraces; i++) bytes += job->traces[i]->size;
  nsp_an_progress_phase(job, NSP_PROGRESS_REREAD, job->ntraces, bytes);
  /* Every trace (after its cuts, when it needs them), decoded on the
   * job's threads, folded in order. */
  size_t nitems = 0;
  struct nsp_an_feed_item *items = calloc(2 * job->ntraces + 1, sizeof *items);
  if (!items) ret = NSP_AN_ENOMEM;
  for (size_t i = 0; items && i < job->ntraces; i++) {
    const struct nsp_trace *t = job->traces[i];
    struct nsp_an_feed_item it = {t->path, t->mem, t->mem_len, 0, NULL};
    if (needs_cuts(&ps, i)) items[nitems++] = it;
    items[nitems++] = it;
  }
  struct nsp_an_feed *feed = nsp_an_feed_start(items, nitems, nsp_an_read_threads(job));
  for (size_t i = 0, k = 0; i < job->ntraces && !ret; i++) {
    k += needs_cuts(&ps, i);
    ret = read_trace(&ps, i, feed, k++);
    nsp_an_progress_file(job, job->traces[i]->size);
  }
  nsp_an_feed_stop(feed);
  free(items);
  free(ps.loc);
  free(ps.calls);
  free(ps.parts);
  free(ps.cut);
  free(ps.aborted);
  for (size_t i = 0; i < perf->n && !ret; i++) ret = finish_comm(job, i, &perf->c[i]);
  return ret;
}

size_t nsp_job_nperf(const struct nsp_job *job) { return job->perf ? job->perf->n : 0; }
const struct nsp_perf_comm *nsp_job_perf_comm(const struct nsp_job *job, size_t i) {
  return job->perf && i < job->perf->n ? &job->perf->c[i].pub : NULL;
}
