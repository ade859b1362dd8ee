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
 * the communicators), so `analyze` pays nothing for it; every thread of
 * the job reads and folds whole traces (see "the pass" below), and the
 * figures are the same for any number of threads.  Memory: one
 * distribution per line (up to 1024 values, then a fixed histogram), 16
 * bytes per (communicator, seq) for arrivals (struct arrival); per thread,
 * the lines, calls in flight and comm indexes of the trace it reads (with
 * 256 B to 4 KiB of arrivals waiting per comm index, struct arr_buf); the
 * analysis's refs are freed first. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

/* Integers of 128 bits for the sums: exact, so the order calls are added
 * in changes nothing. */
__extension__ typedef unsigned __int128 nsp_u128;

struct rowacc {
  size_t comm;                /* its communicator (index into job->comms) */
  struct nsp_perf_row row;
  nsp_u128 sum_bytes, sum_ns; /* over the timed samples: S (bytes), GPU time (ns) */
  struct dist d;
};

/* Lines found by (communicator, line key): a communicator's (perf_comm),
 * or a thread's of the trace it reads (struct worker). */
struct lines {
  struct rowacc *acc;
  size_t n, cap;
  struct nsp_u64map by_key;
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
#define ARR_API_MIXED 0xffu /* the op field when ranks called different ops */
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

static void lines_free(struct lines *L);

struct perf_comm {
  struct nsp_perf_comm pub;
  struct lines lines;
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
    lines_free(&c->lines);
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

/* The line key of a line. */
static struct line_key key_of(const struct nsp_perf_row *r) {
  return (struct line_key){r->api, r->dtype, r->redop, r->root, r->bytes, r->count};
}

/* Line k of communicator comm in L, made when new; its index into *index.
 * NULL when out of memory. */
static struct rowacc *line_for(struct lines *L, size_t comm, const struct line_key *k, size_t *index) {
  /* A hash of the line as the map's key; a collision probes on. */
  for (uint64_t salt = (uint64_t)comm << 32;; salt++) {
    uint64_t key = key_hash(k, salt);
    size_t *i = nsp_u64map_get(&L->by_key, key);
    if (i) {
      const struct rowacc *a = &L->acc[*i];
      const struct nsp_perf_row *r = &a->row;
      if (a->comm == comm && r->api == k->api && r->dtype == k->dtype && r->redop == k->redop &&
          r->root == k->root && r->bytes == k->bytes && r->count == k->count) {
        *index = *i;
        return &L->acc[*i];
      }
      continue;
    }
    if (nsp_grow(&L->acc, &L->cap, L->n + 1, sizeof *L->acc) < 0 || nsp_u64map_put(&L->by_key, key, L->n) < 0)
      return NULL;
    struct rowacc *r = &L->acc[L->n];
    memset(r, 0, sizeof *r);
    r->comm = comm;
    r->row.api = k->api;
    r->row.log2 = log2_bucket(k->bytes);
    r->row.bytes = k->bytes;
    r->row.count = k->count;
    r->row.dtype = k->dtype;
    r->row.redop = k->redop;
    r->row.root = k->root;
    *index = L->n++;
    return r;
  }
}

static void lines_free(struct lines *L) {
  for (size_t i = 0; i < L->n; i++) dist_free(&L->acc[i].d);
  free(L->acc);
  nsp_u64map_free(&L->by_key);
  memset(L, 0, sizeof *L);
}

/* ---- the pass: every thread reads and folds whole traces ------------------
 *
 * A trace's fold needs nothing of the others' but the figures they all
 * add to: completion matching, communicator indexes and cuts are the
 * trace's own.  So each thread takes the next trace, reads it with its own
 * reader and folds it into its own lines (struct lines), merged into the
 * communicator's lines under one lock when the trace ends, and its own
 * arrivals, one page of one communicator at a time (struct arr_buf),
 * applied under that communicator's lock when the page changes.  Every
 * merge is a sum, a minimum or a maximum (the sums are integers, and a seq
 * where ranks called different ops is marked mixed, whoever came first),
 * so the figures are the same whatever the number of threads and the
 * order traces are taken in. */

/* An arrival not yet applied: one rank's entry (wall ns) at seq
 * page_no * NSP_ARR_PAGE + e. */
struct arr_in {
  int64_t t;
  int32_t rank;
  uint16_t e;
  uint8_t api;
};
struct arr_buf {
  uint64_t page_no;
  size_t n, cap; /* cap: 16 at first, doubled up to NSP_ARR_PAGE */
  struct arr_in v[];
};

/* A comm index of the trace being read: its communicator (SIZE_MAX none),
 * its rank there, its arrivals waiting (buf, freed when the trace ends). */
struct local {
  size_t comm;
  int32_t rank;
  struct arr_buf *buf;
};

/* Calls a COMPLETION completes (one each), then merged into one sample per
 * (comm, op); row: the call's line in the worker's (SIZE_MAX: a group's
 * merged line). */
struct part {
  size_t comm;
  struct line_key k;
  size_t row;
};

/* A call's arguments and its line in the trace's lines (row + 1; 0:
 * empty): a call like one seen before skips working its line out. */
struct row_hit {
  uint64_t count;
  int32_t api, dtype, redop, peer;
  uint32_t local, row1;
};
#define NSP_ROW_HITS 64

struct shared {
  struct nsp_job *job;
  struct nsp_perf *perf;
  /* Per trace: a member of it ended by ncclCommAbort or ncclCommRevoke
   * (found in one pass over the members, not one per trace). */
  unsigned char *aborted;
  char **notes;              /* per trace: why it could not be read again */
  pthread_mutex_t rows_mu;   /* every communicator's lines */
  pthread_mutex_t *comm_mu;  /* per communicator: its arrivals */
  _Alignas(128) atomic_size_t next; /* the next trace to take; what threads write, on lines of its own */
  atomic_int ret;            /* the first error (NSP_AN_ENOMEM) */
  atomic_size_t files_done;
  _Atomic uint64_t bytes_done, records;
};

/* Each on cache lines of its own (threads writing next to each other's
 * fields made a 10,000-rank perf 1.4 times slower). */
struct worker {
  _Alignas(128) struct shared *sh;
  int main;                  /* the calling thread: it tells the progress callback */
  pthread_t thread;
  struct local *loc;
  size_t nloc, loc_cap;
  /* Per comm index of the trace: the monotonic time from which work in
   * flight on it was cut short (its first ncclCommAbort or ncclCommRevoke,
   * or asynchronous error); 0 none. */
  uint64_t *cut;
  size_t ncut;
  int cut_short; /* the completion being read ended a call after its cut */
  int oom;
  struct part *calls, *parts;
  size_t ncalls, calls_cap, nparts, parts_cap;
  struct lines lines;         /* the trace's, summed over it */
  struct row_hit hits[NSP_ROW_HITS]; /* emptied when the lines are or a comm index changes */
  uint64_t records;          /* read, not yet added to sh->records */
  size_t offset_told;        /* of the trace being read, bytes added to sh->bytes_done */
};

static const struct local *local_of(const struct worker *w, uint32_t local) {
  return local < w->nloc && w->loc[local].comm != SIZE_MAX ? &w->loc[local] : NULL;
}

static int is_error(int32_t result) { return result != 0 && result != ncclInProgress; }

/* Adds s's values to d (a distribution holds its values raw while it has
 * NSP_PERF_RAW or fewer, whatever order they came in). */
static int dist_merge(struct dist *d, const struct dist *s) {
  if (!s->n) return 0;
  if (s->max > d->max) d->max = s->max;
  if (!d->hist && !s->hist && d->nraw + s->nraw <= NSP_PERF_RAW) {
    NSP_TRY(nsp_grow(&d->raw, &d->rawcap, d->nraw + s->nraw, sizeof *d->raw));
    memcpy(d->raw + d->nraw, s->raw, s->nraw * sizeof *d->raw);
    d->nraw += s->nraw;
    d->n += s->n;
    return 0;
  }
  if (!d->hist) {
    d->hist = calloc(NSP_PERF_HIST, sizeof *d->hist);
    if (!d->hist) return NSP_AN_ENOMEM;
    for (size_t i = 0; i < d->nraw; i++) d->hist[hist_index(d->raw[i])]++;
  }
  if (s->hist)
    for (size_t i = 0; i < NSP_PERF_HIST; i++) d->hist[i] += s->hist[i];
  else
    for (size_t i = 0; i < s->nraw; i++) d->hist[hist_index(s->raw[i])]++;
  d->n += s->n;
  return 0;
}

/* The trace's lines into the communicators' (under rows_mu); the worker's
 * lines are empty after. */
static int merge_rows(struct worker *w) {
  struct shared *sh = w->sh;
  int ret = 0;
  pthread_mutex_lock(&sh->rows_mu);
  for (size_t i = 0; i < w->lines.n && !ret; i++) {
    const struct rowacc *l = &w->lines.acc[i];
    const struct nsp_perf_row *lr = &l->row;
    struct line_key k = key_of(lr);
    size_t index;
    struct rowacc *r = line_for(&sh->perf->c[l->comm].lines, l->comm, &k, &index);
    if (!r) {
      ret = NSP_AN_ENOMEM;
      break;
    }
    r->row.calls += lr->calls;
    r->row.timed += lr->timed;
    r->row.failed += lr->failed;
    r->row.untracked += lr->untracked;
    r->sum_bytes += l->sum_bytes;
    r->sum_ns += l->sum_ns;
    ret = dist_merge(&r->d, &l->d);
  }
  pthread_mutex_unlock(&sh->rows_mu);
  lines_free(&w->lines);
  memset(w->hits, 0, sizeof w->hits);
  return ret;
}

/* Arrival x into arrival e of page pg. */
static int arr_apply(struct arr_page *pg, const struct arr_in *x) {
  unsigned e = x->e;
  struct arrival *a = &pg->a[e];
  if (!(a->nat & ARR_N_MAX)) {
    NSP_TRY(arr_set_time(pg, e, 0, x->t));
    NSP_TRY(arr_set_time(pg, e, 1, x->t));
    a->last = x->rank;
    a->nat = (uint32_t)x->api << ARR_API_SHIFT;
  } else {
    if ((uint32_t)x->api != a->nat >> ARR_API_SHIFT) /* ranks called different ops here */
      a->nat |= (uint32_t)ARR_API_MIXED << ARR_API_SHIFT;
    if (x->t < arr_time(pg, e, 0)) NSP_TRY(arr_set_time(pg, e, 0, x->t));
    int64_t tmax = arr_time(pg, e, 1);
    if (x->t > tmax) {
      NSP_TRY(arr_set_time(pg, e, 1, x->t));
      a->last = x->rank;
      a->nat &= ~ARR_TIE;
    } else if (x->t == tmax) {
      a->nat |= ARR_TIE;
    }
  }
  if ((a->nat & ARR_N_MAX) < ARR_N_MAX) a->nat++;
  return 0;
}

/* A comm index's waiting arrivals into its communicator's (under its lock). */
static int arr_flush(struct worker *w, const struct local *l) {
  struct arr_buf *b = l->buf;
  if (!b || !b->n) return 0;
  struct shared *sh = w->sh;
  int ret = 0;
  pthread_mutex_lock(&sh->comm_mu[l->comm]);
  struct arr_page *pg = nsp_paged_page(&sh->perf->c[l->comm].arrivals, b->page_no, 1);
  if (!pg) ret = NSP_AN_ENOMEM;
  for (size_t i = 0; i < b->n && !ret; i++) ret = arr_apply(pg, &b->v[i]);
  pthread_mutex_unlock(&sh->comm_mu[l->comm]);
  b->n = 0;
  return ret;
}

/* Comm indexes 0..n-1 exist (new ones with no communicator). */
static int loc_reserve(struct worker *w, size_t n) {
  if (n <= w->nloc) return 0;
  NSP_TRY(nsp_grow(&w->loc, &w->loc_cap, n, sizeof *w->loc));
  for (size_t i = w->nloc; i < n; i++) w->loc[i] = (struct local){SIZE_MAX, -1, NULL};
  w->nloc = n;
  return 0;
}

/* The trace's comm indexes gone, with their buffers: memory follows the
 * comm indexes of the traces being read, not of every trace read. */
static void loc_clear(struct worker *w) {
  for (size_t i = 0; i < w->nloc; i++) free(w->loc[i].buf);
  w->nloc = 0;
}

/* COMM_END of an abort or revoke, or an asynchronous error: what is in
 * flight on that communicator from then on did not complete normally. */
static int note_cut(struct worker *w, const struct nsp_rec *rec) {
  int cut = rec->kind == NSP_REC_COMM_END ? rec->api == NSP_API_CommAbort || rec->api == NSP_API_CommRevoke
                                          : rec->kind == NSP_REC_ASYNC_ERROR && is_error(rec->result);
  if (!cut || !rec->comm) return 0;
  if (rec->comm >= w->ncut) {
    size_t cap = w->ncut, old = w->ncut;
    NSP_TRY(nsp_grow(&w->cut, &cap, (size_t)rec->comm + 1, sizeof *w->cut));
    memset(w->cut + old, 0, (cap - old) * sizeof *w->cut);
    w->ncut = cap;
  }
  /* A COMM_END's entry, an ASYNC_ERROR's time. */
  uint64_t when = rec->kind == NSP_REC_ASYNC_ERROR ? nsp_rec_async_error_t(rec) : nsp_rec_comm_end_t_enter(rec);
  uint64_t t = when ? when : 1;
  if (!w->cut[rec->comm] || t < w->cut[rec->comm]) w->cut[rec->comm] = t;
  return 0;
}

static void on_done(void *ctx, const struct nsp_pend *e, const struct nsp_rec *done) {
  struct worker *w = ctx;
  /* Ended (GPU end, else when the shim saw it) after its communicator's
   * cut: the time is how long it hung, for the whole completion. */
  if ((done->flags & NSP_DONE_OK) && e->local < w->ncut && w->cut[e->local] &&
      ((done->flags & NSP_DONE_TIMED) ? nsp_rec_completion_gpu_end(done) : nsp_rec_completion_t_seen(done)) >=
          w->cut[e->local])
    w->cut_short = 1;
  if (!e->tag) return; /* every call on_call tracked has its line */
  if (nsp_grow(&w->calls, &w->calls_cap, w->ncalls + 1, sizeof *w->calls) < 0) {
    w->oom = 1;
    return;
  }
  /* The call's line, found when it was read (tag: its index + 1). */
  const struct rowacc *a = &w->lines.acc[e->tag - 1];
  w->calls[w->ncalls++] = (struct part){a->comm, key_of(&a->row), e->tag - 1};
}

static int on_call(struct worker *w, struct nsp_pend_tab *tab, int tracked, const struct nsp_trace *t,
                   const struct nsp_rec *rec) {
  const struct local *l = local_of(w, rec->comm);
  int kind = nsp_api_kind(rec->api);
  if (!l || (kind != NSP_K_COLL && kind != NSP_K_P2P)) return 0;
  int api = nsp_api_coll_class(rec->api);
  uint64_t h = (rec->count * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)(uint32_t)rec->api << 40) ^
               ((uint64_t)(uint32_t)rec->dtype << 32) ^ ((uint64_t)rec->comm << 48) ^ (uint64_t)(uint32_t)rec->peer ^
               ((uint64_t)(uint32_t)rec->redop << 20);
  struct row_hit *hit = &w->hits[(h * 0x9e3779b97f4a7c15ull) >> 58];
  size_t row;
  if (hit->row1 && hit->count == rec->count && hit->api == rec->api && hit->dtype == rec->dtype &&
      hit->redop == rec->redop && hit->peer == rec->peer && hit->local == rec->comm) {
    row = hit->row1 - 1;
  } else {
    struct line_key k = call_key(api, rec->count, rec->dtype, rec->redop, rec->peer,
                                 w->sh->job->comms[l->comm]->info.nranks);
    if (!line_for(&w->lines, l->comm, &k, &row)) return NSP_AN_ENOMEM;
    *hit = (struct row_hit){rec->count, rec->api, rec->dtype, rec->redop, rec->peer, rec->comm, (uint32_t)(row + 1)};
  }
  struct rowacc *r = &w->lines.acc[row];
  r->row.calls++;
  if (is_error(rec->result)) { /* nothing was enqueued */
    r->row.failed++;
    return 0;
  }
  if (kind == NSP_K_COLL && rec->seq && l->rank >= 0) {
    struct arr_buf *b = l->buf;
    uint64_t page_no = rec->seq / NSP_ARR_PAGE;
    if (b && b->n && (b->page_no != page_no || b->n == NSP_ARR_PAGE)) NSP_TRY(arr_flush(w, l));
    if (!b || b->n == b->cap) { /* a comm index's first arrival, or more on one page */
      size_t cap = b ? b->cap * 2 : 16;
      struct arr_buf *nb = realloc(b, sizeof *nb + cap * sizeof nb->v[0]);
      if (!nb) return NSP_AN_ENOMEM;
      if (!b) nb->n = 0;
      nb->cap = cap;
      w->loc[rec->comm].buf = b = nb;
    }
    b->page_no = page_no;
    b->v[b->n++] = (struct arr_in){(int64_t)(rec->t_enter + (uint64_t)t->off_ns), l->rank,
                                   (uint16_t)(rec->seq % NSP_ARR_PAGE), (uint8_t)api};
  }
  if (!tracked || (rec->flags & NSP_CALL_UNTRACKED)) return 0;
  struct nsp_pend e;
  nsp_pend_from_call(&e, rec);
  e.tag = (uint32_t)(row + 1);
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

static int on_completion(struct worker *w, struct nsp_pend_tab *tab, const struct nsp_rec *rec) {
  w->ncalls = 0;
  w->cut_short = 0;
  NSP_TRY(nsp_pend_done(tab, rec, on_done, w));
  if (w->oom) return NSP_AN_ENOMEM;
  int cls = done_class(rec->flags, w->cut_short);
  if (cls == DONE_FAILED || cls == DONE_UNTRACKED) {
    for (size_t i = 0; i < w->ncalls; i++) {
      struct rowacc *r = &w->lines.acc[w->calls[i].row];
      if (cls == DONE_FAILED) r->row.failed++;
      else r->row.untracked++;
    }
    return 0;
  }
  uint64_t gpu_start = nsp_rec_completion_gpu_start(rec), gpu_end = nsp_rec_completion_gpu_end(rec);
  if (cls != DONE_TIMED || gpu_end < gpu_start) return 0;
  /* One sample per (comm, op): a group's sends share one time. */
  w->nparts = 0;
  for (size_t i = 0; i < w->ncalls; i++) {
    const struct part *p = &w->calls[i];
    size_t k = 0;
    while (k < w->nparts && (w->parts[k].comm != p->comm || w->parts[k].k.api != p->k.api)) k++;
    if (k < w->nparts) { /* a group's calls: one sample, their sizes summed */
      struct line_key *m = &w->parts[k].k;
      m->bytes = m->bytes > UINT64_MAX - p->k.bytes ? UINT64_MAX : m->bytes + p->k.bytes;
      m->count = m->count > UINT64_MAX - p->k.count ? UINT64_MAX : m->count + p->k.count;
      if (m->dtype != p->k.dtype) m->dtype = -1;
      if (m->redop != p->k.redop) m->redop = -1;
      if (m->root != p->k.root) m->root = -1;
      w->parts[k].row = SIZE_MAX;
      continue;
    }
    NSP_TRY(nsp_grow(&w->parts, &w->parts_cap, w->nparts + 1, sizeof *w->parts));
    w->parts[w->nparts++] = *p;
  }
  int64_t dur = (int64_t)(gpu_end - gpu_start);
  for (size_t i = 0; i < w->nparts; i++) {
    const struct part *p = &w->parts[i];
    size_t row = p->row;
    if (row == SIZE_MAX && !line_for(&w->lines, p->comm, &p->k, &row)) return NSP_AN_ENOMEM;
    struct rowacc *r = &w->lines.acc[row];
    r->row.timed++;
    r->sum_bytes += p->k.bytes;
    r->sum_ns += (uint64_t)(dur < 0 ? 0 : dur);
    NSP_TRY(dist_add(&r->d, dur));
  }
  return 0;
}

/* A failed outermost ncclGroupEnd: its calls never ran (the shim writes
 * no completion for them).  Counted as failed, as if an error completion
 * had named the group. */
static int on_group_failed(struct worker *w, struct nsp_pend_tab *tab, const struct nsp_rec *rec) {
  struct nsp_rec done;
  nsp_pend_group_failed(&done, rec->group_id);
  return on_completion(w, tab, &done);
}

/* A completion can come before the abort that cut its calls short (the
 * shim's poller sees them end while ncclCommAbort runs, before the abort's
 * record is written): when this process saw an error or its last word on
 * a communicator was an abort or revoke, read its cuts first.  (Else,
 * e.g. a revoke then a destroy with no error, only completions read after
 * the revoke's record are cut.) */
static int needs_cuts(const struct shared *sh, size_t ti) {
  const struct nsp_trace *t = sh->job->traces[ti];
  return (t->info.errors > 0 || sh->aborted[ti]) && (t->info.tracking & NSP_TRACK_COMPLETION);
}

static int read_cuts(struct worker *w, const struct nsp_trace *t) {
  char err[256];
  struct nsp_an_src src;
  if (!nsp_an_src_reopen(&src, NULL, 0, t, 0, err, sizeof err)) return 0; /* the main pass says so */
  const struct nsp_rec *rec;
  int ret = 0, got = 0;
  while (!ret && (got = nsp_an_src_next(&src, &rec)) == 1)
    if (rec->kind == NSP_REC_COMM_END || rec->kind == NSP_REC_ASYNC_ERROR) ret = note_cut(w, rec);
  if (!ret && got < 0) ret = got;
  nsp_an_src_close(&src);
  return ret;
}

static void tell(struct worker *w) {
  struct shared *sh = w->sh;
  nsp_an_progress_at(sh->job, atomic_load(&sh->files_done), atomic_load(&sh->bytes_done),
                     atomic_load(&sh->records));
}

/* A record read from src: counted every 16384 (its reader's offset asked
 * then only). */
static void progress_record(struct worker *w, const struct nsp_an_src *src) {
  if (++w->records < 16384) return;
  atomic_fetch_add(&w->sh->records, w->records);
  w->records = 0;
  size_t offset = nsp_an_src_offset(src);
  if (offset > w->offset_told) atomic_fetch_add(&w->sh->bytes_done, offset - w->offset_told);
  w->offset_told = offset;
  if (w->main) tell(w);
}

/* Trace t read through (or not readable): its records, the rest of its
 * bytes and the file counted. */
static void trace_done(struct worker *w, const struct nsp_trace *t) {
  struct shared *sh = w->sh;
  atomic_fetch_add(&sh->records, w->records);
  w->records = 0;
  if (t->size > w->offset_told) atomic_fetch_add(&sh->bytes_done, t->size - w->offset_told);
  w->offset_told = t->size;
  atomic_fetch_add(&sh->files_done, 1);
  if (w->main) tell(w);
}

/* Trace ti again, its cuts first when needs_cuts; its lines and arrivals
 * merged at its end. */
static int read_trace(struct worker *w, size_t ti) {
  struct shared *sh = w->sh;
  const struct nsp_trace *t = sh->job->traces[ti];
  w->ncut = 0;
  w->offset_told = 0;
  if (needs_cuts(sh, ti)) NSP_TRY(read_cuts(w, t));
  char err[256];
  struct nsp_an_src src;
  if (!nsp_an_src_reopen(&src, NULL, 0, t, 0, err, sizeof err)) {
    sh->notes[ti] = nsp_asprintf("%s: could not be read again for perf, its figures are left out: %s",
                                 t->info.path, err);
    trace_done(w, t);
    return sh->notes[ti] ? 0 : NSP_AN_ENOMEM;
  }
  struct nsp_pend_tab tab;
  nsp_pend_init(&tab);
  int tracked = 0, ret = 0;
  const struct nsp_rec *rec;
  int got;
  while (!ret && (got = nsp_an_src_next(&src, &rec)) == 1) {
    progress_record(w, &src);
    switch (rec->kind) {
      case NSP_REC_PROCESS:
        tracked = (rec->ext->tracking & NSP_TRACK_COMPLETION) != 0;
        break;
      case NSP_REC_COMM: {
        if ((ret = loc_reserve(w, (size_t)rec->comm + 1)) < 0) break;
        struct local *l = &w->loc[rec->comm];
        if (l->comm != SIZE_MAX && (ret = arr_flush(w, l)) < 0) break; /* the index named another before */
        memset(w->hits, 0, sizeof w->hits);
        const size_t *ci = rec->ext->comm_id ? nsp_u64map_get(&sh->job->comm_by_id, rec->ext->comm_id) : NULL;
        if (ci && !(rec->flags & NSP_COMM_NOCOLOR)) {
          l->comm = *ci;
          if (rec->ext->rank >= 0) l->rank = rec->ext->rank;
        }
        break;
      }
      case NSP_REC_CALL:
        if (rec->api == NSP_API_GroupEnd && is_error(rec->result) && rec->group_id && rec->group_depth == 1) {
          if (tracked) ret = on_group_failed(w, &tab, rec);
          break;
        }
        ret = on_call(w, &tab, tracked, t, rec);
        break;
      case NSP_REC_COMM_END:
      case NSP_REC_ASYNC_ERROR:
        ret = note_cut(w, rec);
        break;
      case NSP_REC_COMPLETION:
        if (tracked) ret = on_completion(w, &tab, rec);
        break;
      default:
        break;
    }
  }
  if (!ret && got < 0) ret = got;
  nsp_pend_free(&tab);
  nsp_an_src_close(&src);
  for (size_t i = 0; i < w->nloc && !ret; i++)
    if (w->loc[i].comm != SIZE_MAX) ret = arr_flush(w, &w->loc[i]);
  loc_clear(w);
  int mret = merge_rows(w);
  if (!ret) ret = mret;
  trace_done(w, t);
  return ret;
}

/* A thread's loop: the next trace not taken, until none is left or one
 * failed. */
static void *work(void *arg) {
  struct worker *w = arg;
  struct shared *sh = w->sh;
  for (;;) {
    if (atomic_load(&sh->ret)) break;
    size_t ti = atomic_fetch_add(&sh->next, 1);
    if (ti >= sh->job->ntraces) break;
    int ret = read_trace(w, ti);
    if (ret < 0) {
      int zero = 0;
      atomic_compare_exchange_strong(&sh->ret, &zero, ret);
    }
  }
  return NULL;
}

static void worker_free(struct worker *w) {
  loc_clear(w);
  free(w->loc);
  free(w->cut);
  free(w->calls);
  free(w->parts);
  lines_free(&w->lines);
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
  c->rows = malloc((c->lines.n ? c->lines.n : 1) * sizeof *c->rows);
  if (!c->rows) return NSP_AN_ENOMEM;
  double factor_n = comm->info.nranks;
  for (size_t i = 0; i < c->lines.n; i++) {
    struct rowacc *a = &c->lines.acc[i];
    a->row.p50_ns = dist_pct(&a->d, 50);
    a->row.p99_ns = dist_pct(&a->d, 99);
    if (a->sum_ns > 0) {
      a->row.algbw_gbs = (double)a->sum_bytes / (double)a->sum_ns; /* bytes per ns = GB/s */
      a->row.busbw_gbs = a->row.algbw_gbs * nsp_perf_busbw_factor(a->row.api, (int)factor_n);
    }
    c->rows[i] = a->row;
  }
  qsort(c->rows, c->lines.n, sizeof *c->rows, cmp_row);
  c->pub.rows = c->rows;
  c->pub.nrows = c->lines.n;

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
      int api = a->nat >> ARR_API_SHIFT == ARR_API_MIXED ? NSP_PERF_OP_MIXED : (int)(a->nat >> ARR_API_SHIFT);
      struct nsp_perf_spread w = {no * NSP_ARR_PAGE + e, api, sp, last,
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
  struct shared sh;
  memset(&sh, 0, sizeof sh);
  sh.job = job;
  sh.perf = perf;
  sh.aborted = calloc(job->ntraces ? job->ntraces : 1, 1);
  sh.notes = calloc(job->ntraces ? job->ntraces : 1, sizeof *sh.notes);
  sh.comm_mu = malloc((perf->n ? perf->n : 1) * sizeof *sh.comm_mu);
  int nthreads = nsp_an_fold_threads(job);
  struct worker *w = aligned_alloc(_Alignof(struct worker), (size_t)nthreads * sizeof *w);
  if (w) memset(w, 0, (size_t)nthreads * sizeof *w);
  if (!sh.aborted || !sh.notes || !sh.comm_mu || !w) { /* job->perf is freed with the job */
    free(sh.aborted);
    free(sh.notes);
    free(sh.comm_mu);
    free(w);
    return NSP_AN_ENOMEM;
  }
  for (size_t i = 0; i < job->nmembers; i++) {
    const struct nsp_member *m = &job->members[i];
    if (m->trace < job->ntraces && m->ended && (m->end_api == NSP_API_CommAbort || m->end_api == NSP_API_CommRevoke))
      sh.aborted[m->trace] = 1;
  }
  pthread_mutex_init(&sh.rows_mu, NULL);
  for (size_t i = 0; i < perf->n; i++) pthread_mutex_init(&sh.comm_mu[i], NULL);
  uint64_t bytes = 0;
  for (size_t i = 0; i < job->ntraces; i++) bytes += job->traces[i]->size;
  nsp_an_progress_phase(job, NSP_PROGRESS_REREAD, job->ntraces, bytes);
  /* Every trace read and folded on every thread; this one tells the
   * progress callback. */
  int started = 1;
  w[0].sh = &sh;
  w[0].main = 1;
  for (int k = 1; k < nthreads && (size_t)k < job->ntraces; k++) {
    w[k].sh = &sh;
    if (pthread_create(&w[k].thread, NULL, work, &w[k]) != 0) break; /* fewer threads: the same figures */
    started++;
  }
  work(&w[0]);
  for (int k = 1; k < started; k++) {
    /* Progress while the others finish their last traces. */
    struct timespec until;
    while (clock_gettime(CLOCK_REALTIME, &until), until.tv_nsec += 200000000,
           until.tv_sec += until.tv_nsec / 1000000000, until.tv_nsec %= 1000000000,
           pthread_timedjoin_np(w[k].thread, NULL, &until) != 0)
      tell(&w[0]);
  }
  tell(&w[0]);
  int ret = atomic_load(&sh.ret);
  for (int k = 0; k < nthreads; k++) worker_free(&w[k]);
  free(w);
  for (size_t i = 0; i < job->ntraces; i++) {
    if (sh.notes[i] && !ret) ret = nsp_job_notef(job, "%s", sh.notes[i]);
    free(sh.notes[i]);
  }
  pthread_mutex_destroy(&sh.rows_mu);
  for (size_t i = 0; i < perf->n; i++) pthread_mutex_destroy(&sh.comm_mu[i]);
  free(sh.comm_mu);
  free(sh.notes);
  free(sh.aborted);
  for (size_t i = 0; i < perf->n && !ret; i++) ret = finish_comm(job, i, &perf->c[i]);
  return ret;
}

size_t nsp_job_nperf(const struct nsp_job *job) { return job->perf ? job->perf->n : 0; }
const struct nsp_perf_comm *nsp_job_perf_comm(const struct nsp_job *job, size_t i) {
  return job->perf && i < job->perf->n ? &job->perf->c[i].pub : NULL;
}
