/* nsp_an_calls.c - the calls one by one (nsp_job_calls_open,
 * nsp_calls_next): every collective and send/recv of an analysed job,
 * read again from the trace files, each with its completion.
 *
 * One trace at a time, streamed: CALL records that await no completion
 * are yielded as they are read; the others wait in the table of calls
 * awaiting completion (common/nsp_pend.c, the one the loader and perf
 * use) until their COMPLETION (one call, or every call of a group) comes;
 * what is left at the trace's end never completed (yielded by entry
 * time), then the trace's calls in flight (nsp_trace_info.inflight: the
 * INFLIGHT records the loader kept, those that had not returned).  Every
 * tracked call enters the table, filtered out or not, so that a
 * completion always finds its call.  Times: nsp_an_wall (each trace's
 * clock pair). */
#include <stdlib.h>
#include <string.h>

#include "nsp_an_job.h"
#include "nsp_names.h"
#include "nsp_reader.h"

/* What a trace's comm index is. */
struct calls_local {
  size_t comm;          /* job->comms index; SIZE_MAX none */
  int32_t rank;         /* its rank there; -1 */
  uint64_t last_stream; /* the stream of its last call there (in-flight calls have none) */
};

/* A call ready to be yielded, with the last-error text it owns. */
struct calls_ready {
  struct nsp_call_event ev;
  char *last_error;
};

struct nsp_calls {
  struct nsp_job *progress_job; /* the job, for its progress callback and its symbol cache (bookkeeping) */
  struct nsp_u64map symbolized; /* (trace << 32 | site id) of the native sites already given file:line */
  const struct nsp_job *job;
  struct nsp_calls_filter f;  /* arrays owned, sorted */
  uint64_t *comms;
  int *ranks;
  struct nsp_seq_window *windows;
  size_t ti;            /* the trace being read (or next to open) */
  const struct nsp_trace *t;
  struct nsp_reader *r;
  int phase;            /* PH_* */
  int tracked;          /* the trace tracks completion */
  struct calls_local *loc;
  size_t nloc;
  struct nsp_pend_tab pend;
  struct calls_ready *q; /* ready calls: q[qhead..qn) */
  size_t qhead, qn, qcap;
  size_t *left;          /* end of trace: waiting entries by entry time */
  size_t nleft, leftcap, lefti;
  size_t inflighti;
  struct calls_ready cur; /* the call last yielded */
  size_t skipped;
  char why[1024];
  int oom;
};

enum { PH_OPEN, PH_READ, PH_LEFT, PH_INFLIGHT, PH_DONE };

static int cmp_u64(const void *pa, const void *pb) {
  uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
  return a < b ? -1 : a > b;
}

static int cmp_window(const void *pa, const void *pb) { return cmp_u64(pa, pb); } /* by comm_id first */

static int is_error(int32_t result) { return result != 0 && result != ncclInProgress; }

static int want_api(const struct nsp_calls *it, int api) {
  int kind = nsp_api_kind(api);
  return kind == NSP_K_COLL || kind == NSP_K_P2P || (it->f.flags & NSP_CALLS_ALL_APIS);
}

static int has_rank(const struct nsp_calls *it, int rank) {
  return !it->f.nranks || bsearch(&rank, it->ranks, it->f.nranks, sizeof *it->ranks, nsp_an_cmp_int);
}

static int has_comm(const struct nsp_calls *it, uint64_t id) {
  return !it->f.ncomms || (id && bsearch(&id, it->comms, it->f.ncomms, sizeof *it->comms, cmp_u64));
}

/* Whether a trace may hold a call that passes: its rank, a member of a
 * communicator asked for, started before the window's end. */
static int trace_wanted(const struct nsp_calls *it, size_t ti) {
  const struct nsp_trace *t = it->job->traces[ti];
  if (!has_rank(it, t->info.rank)) return 0;
  if (it->f.to_ns && t->info.realtime_ns >= it->f.to_ns) return 0;
  if (!it->f.ncomms || (it->f.flags & NSP_CALLS_ALL_APIS)) return 1;
  for (size_t i = 0; i < it->job->nmembers; i++) {
    const struct nsp_member *m = &it->job->members[i];
    if (m->trace == ti && has_comm(it, it->job->comms[m->comm]->info.id)) return 1;
  }
  return 0;
}

/* The filter's verdict on a call whose fields are all known. */
static int passes(const struct nsp_calls *it, const struct nsp_call_event *ev) {
  if (!has_comm(it, ev->call.comm_id)) return 0;
  if (it->f.nwindows && ev->call.comm_id) {
    const struct nsp_seq_window *w =
        bsearch(&ev->call.comm_id, it->windows, it->f.nwindows, sizeof *it->windows, cmp_window);
    if (w) {
      while (w > it->windows && w[-1].comm_id == ev->call.comm_id) w--;
      int in = 0;
      for (; w < it->windows + it->f.nwindows && w->comm_id == ev->call.comm_id && !in; w++)
        in = ev->call.seq >= w->lo && ev->call.seq <= w->hi;
      if (!in) return 0;
    }
  }
  if (it->f.to_ns && ev->enter_ns >= it->f.to_ns) return 0;
  if (it->f.from_ns) {
    int64_t end = ev->exit_ns > ev->gpu_end_ns ? ev->exit_ns : ev->gpu_end_ns;
    if (!ev->exit_ns || (ev->call.done == 0 && !is_error(ev->call.result))) {
      /* It lasts as long as its trace. */
      const struct nsp_trace_info *ti = &it->job->traces[ev->trace]->info;
      if (ti->end_ns > end) end = ti->end_ns;
      if (ti->end.time_ns > end) end = ti->end.time_ns;
    }
    if (end < it->f.from_ns) return 0;
  }
  return 1;
}

static const struct calls_local *local_of(const struct nsp_calls *it, uint32_t local) {
  return local < it->nloc && it->loc[local].comm != SIZE_MAX ? &it->loc[local] : NULL;
}

/* The event of a call with these fields (times monotonic, of trace it->t). */
static void event_of(const struct nsp_calls *it, struct nsp_call_event *ev, uint32_t local, int api, uint64_t seq,
                     uint64_t count, int dtype, int redop, int peer, uint64_t t_enter) {
  memset(ev, 0, sizeof *ev);
  nsp_call_clear(&ev->call);
  const struct nsp_trace *t = it->t;
  const struct calls_local *l = local_of(it, local);
  ev->trace = it->ti;
  ev->job_rank = t->info.rank;
  ev->comm_rank = l ? l->rank : -1;
  ev->comm = l ? &it->job->comms[l->comm]->info : NULL;
  ev->call.api = api;
  ev->call.comm_id = ev->comm ? ev->comm->id : 0;
  ev->call.seq = seq;
  ev->call.count = count;
  ev->call.dtype = dtype;
  ev->call.redop = redop;
  ev->call.peer = peer;
  ev->call.result = 0;
  ev->enter_ns = nsp_an_wall(t, t_enter);
  ev->call.time_ns = ev->enter_ns;
}

static void set_sites(const struct nsp_calls *it, struct nsp_call_event *ev, uint32_t site, uint32_t pysite) {
  ev->site_id = site;
  ev->pysite_id = pysite;
  ev->site = nsp_an_site(it->t, site);
  ev->pysite = nsp_an_pysite(it->t, pysite);
}

/* Queues ev (and a copy of last_error) when it passes the filter. */
static int push(struct nsp_calls *it, const struct nsp_call_event *ev, const char *last_error) {
  if (!passes(it, ev)) return 0;
  /* A site's frames as function and file:line (libdw), once per site, as
   * the report gives them. */
  uint64_t key = (uint64_t)ev->trace << 32 | ev->site_id;
  if (ev->site && !nsp_u64map_get(&it->symbolized, key)) {
    NSP_TRY(nsp_u64map_put(&it->symbolized, key, 1));
    NSP_TRY(nsp_an_symbolize_stack(it->progress_job, it->job->traces[ev->trace], ev->site));
  }
  NSP_TRY(nsp_grow(&it->q, &it->qcap, it->qn + 1, sizeof *it->q));
  struct calls_ready *c = &it->q[it->qn];
  c->ev = *ev;
  c->last_error = NULL;
  if (last_error && last_error[0] && !(c->last_error = strdup(last_error))) return NSP_AN_ENOMEM;
  c->ev.call.last_error = c->last_error;
  it->qn++;
  return 0;
}

/* The event of a call waiting in the table. */
static void event_of_pend(const struct nsp_calls *it, struct nsp_call_event *ev, const struct nsp_pend *e) {
  event_of(it, ev, e->local, e->api, e->seq, e->count, e->dtype, e->redop, e->peer, e->t_enter);
  ev->call.result = e->result;
  ev->stream = e->stream;
  ev->group_id = e->group_id;
  ev->exit_ns = nsp_an_wall(it->t, e->t_exit);
  set_sites(it, ev, e->site, e->pysite);
}

/* nsp_pend_cb: a completion for a waiting call. */
static void on_done(void *ctx, const struct nsp_pend *e, const struct nsp_rec *done) {
  struct nsp_calls *it = ctx;
  struct nsp_call_event ev;
  event_of_pend(it, &ev, e);
  uint32_t fl = done->flags;
  ev.done_flags = fl;
  ev.call.done = (fl & (NSP_DONE_OK | NSP_DONE_CAPTURED)) || !(fl & (NSP_DONE_ERROR | NSP_DONE_ABANDONED));
  uint64_t gs = nsp_rec_completion_gpu_start(done), ge = nsp_rec_completion_gpu_end(done);
  if ((fl & NSP_DONE_TIMED) && gs && ge >= gs) {
    ev.gpu_start_ns = nsp_an_wall(it->t, gs);
    ev.gpu_end_ns = nsp_an_wall(it->t, ge);
  }
  if (push(it, &ev, NULL) < 0) it->oom = 1;
}

static int on_comm(struct nsp_calls *it, const struct nsp_rec *rec) {
  if (rec->comm >= it->nloc) {
    size_t cap = it->nloc, old = it->nloc;
    NSP_TRY(nsp_grow(&it->loc, &cap, (size_t)rec->comm + 1, sizeof *it->loc));
    for (size_t i = old; i < cap; i++) it->loc[i] = (struct calls_local){SIZE_MAX, -1, 0};
    it->nloc = cap;
  }
  const size_t *ci = rec->ext->comm_id ? nsp_u64map_get(&it->job->comm_by_id, rec->ext->comm_id) : NULL;
  if (ci && !(rec->flags & NSP_COMM_NOCOLOR)) it->loc[rec->comm] = (struct calls_local){*ci, rec->ext->rank, 0};
  return 0;
}

static int on_call(struct nsp_calls *it, const struct nsp_rec *rec) {
  if (rec->comm < it->nloc) it->loc[rec->comm].last_stream = rec->stream;
  int kind = nsp_api_kind(rec->api);
  int work = kind == NSP_K_COLL || kind == NSP_K_P2P;
  if (rec->api == NSP_API_GroupEnd && is_error(rec->result) && rec->group_id && rec->group_depth == 1 &&
      it->tracked) {
    /* A failed outermost ncclGroupEnd: its calls never ran (as perf). */
    struct nsp_rec done;
    nsp_pend_group_failed(&done, rec->group_id);
    NSP_TRY(nsp_pend_done(&it->pend, &done, on_done, it));
  }
  int waits = 0, early = 0;
  if (work && it->tracked && !is_error(rec->result) && !(rec->flags & NSP_CALL_UNTRACKED)) {
    struct nsp_pend e;
    nsp_pend_from_call(&e, rec);
    int was_over = it->pend.overflow;
    int got = nsp_pend_call(&it->pend, &e);
    NSP_TRY(got);
    waits = got == 1;
    early = !got && !(it->pend.overflow && !was_over); /* its completion came first */
  }
  if (waits || !want_api(it, rec->api)) return 0;
  struct nsp_call_event ev;
  event_of(it, &ev, rec->comm, rec->api, rec->seq, rec->count, rec->dtype, rec->redop, rec->peer, rec->t_enter);
  ev.call.result = rec->result;
  ev.stream = rec->stream;
  ev.group_id = rec->group_id;
  ev.exit_ns = nsp_an_wall(it->t, rec->t_exit);
  ev.call.done = is_error(rec->result) ? 0 : early ? 1 : -1;
  if (!work) ev.call.done = -1;
  set_sites(it, &ev, rec->site, rec->pysite);
  return push(it, &ev, rec->last_error);
}

static int cmp_left(const void *pa, const void *pb, void *ctx) {
  const struct nsp_pend *v = ctx;
  const struct nsp_pend *a = &v[*(const size_t *)pa], *b = &v[*(const size_t *)pb];
  if (a->t_enter != b->t_enter) return a->t_enter < b->t_enter ? -1 : 1;
  return *(const size_t *)pa < *(const size_t *)pb ? -1 : 1;
}

/* The trace read to its end: the calls still waiting, by entry time. */
static int collect_left(struct nsp_calls *it) {
  it->nleft = it->lefti = 0;
  for (size_t i = 0; i < it->pend.n; i++) {
    if (it->pend.v[i].state != NSP_PEND_WAIT) continue;
    NSP_TRY(nsp_grow(&it->left, &it->leftcap, it->nleft + 1, sizeof *it->left));
    it->left[it->nleft++] = i;
  }
  if (it->nleft) qsort_r(it->left, it->nleft, sizeof *it->left, cmp_left, it->pend.v);
  return 0;
}

static int inflight_event(struct nsp_calls *it, const struct nsp_inflight *f) {
  if (!want_api(it, f->call.api)) return 0;
  struct nsp_call_event ev;
  memset(&ev, 0, sizeof ev);
  ev.call = f->call;
  ev.call.last_error = NULL;
  ev.trace = it->ti;
  ev.job_rank = it->t->info.rank;
  ev.comm_rank = -1;
  ev.comm = f->call.comm_id ? nsp_job_comm_by_id(it->job, f->call.comm_id) : NULL;
  for (size_t i = 0; ev.comm && i < it->nloc; i++) {
    const struct calls_local *l = &it->loc[i];
    if (l->comm == SIZE_MAX || &it->job->comms[l->comm]->info != ev.comm) continue;
    ev.comm_rank = l->rank;
    ev.stream = l->last_stream;
  }
  ev.enter_ns = f->call.time_ns;
  ev.tid = f->tid;
  ev.pysite = f->pysite;
  ev.pysite_id = f->pysite ? f->pysite->id : 0;
  ev.call.done = 0;
  ev.call.in_flight = 1;
  return push(it, &ev, NULL);
}

static void close_trace(struct nsp_calls *it) {
  nsp_reader_destroy(it->r);
  it->r = NULL;
  nsp_pend_free(&it->pend);
  it->nloc = 0;
}

/* Moves the walk on until a call is queued or the walk ends. */
static int advance(struct nsp_calls *it) {
  while (it->qhead == it->qn && it->phase != PH_DONE) {
    it->qhead = it->qn = 0;
    switch (it->phase) {
      case PH_OPEN: {
        if (it->ti >= it->job->ntraces) {
          it->phase = PH_DONE;
          break;
        }
        if (!trace_wanted(it, it->ti)) {
          it->ti++;
          break;
        }
        it->t = it->job->traces[it->ti];
        char err[256];
        it->r = nsp_an_reopen(it->t, err, sizeof err);
        if (!it->r) {
          it->skipped++;
          snprintf(it->why, sizeof it->why, "%s: %s", it->t->info.path, err);
          it->ti++;
          break;
        }
        it->tracked = (it->t->info.tracking & NSP_TRACK_COMPLETION) != 0;
        nsp_pend_init(&it->pend);
        it->phase = PH_READ;
        break;
      }
      case PH_READ: {
        struct nsp_rec rec;
        if (nsp_reader_next(it->r, &rec) != 1) {
          nsp_an_progress_file(it->progress_job, it->t->size);
          NSP_TRY(collect_left(it));
          it->phase = PH_LEFT;
          break;
        }
        nsp_an_progress_record(it->progress_job, it->r);
        switch (rec.kind) {
          case NSP_REC_PROCESS:
            it->tracked |= (rec.ext->tracking & NSP_TRACK_COMPLETION) != 0;
            break;
          case NSP_REC_COMM:
            NSP_TRY(on_comm(it, &rec));
            break;
          case NSP_REC_CALL:
            NSP_TRY(on_call(it, &rec));
            break;
          case NSP_REC_COMPLETION:
            if (it->tracked) NSP_TRY(nsp_pend_done(&it->pend, &rec, on_done, it));
            break;
          default:
            break;
        }
        if (it->oom) return NSP_AN_ENOMEM;
        break;
      }
      case PH_LEFT:
        if (it->lefti >= it->nleft) {
          it->inflighti = 0;
          it->phase = PH_INFLIGHT;
          break;
        }
        for (; it->lefti < it->nleft && it->qhead == it->qn; it->lefti++) {
          const struct nsp_pend *e = &it->pend.v[it->left[it->lefti]];
          if (!want_api(it, e->api)) continue;
          struct nsp_call_event ev;
          event_of_pend(it, &ev, e);
          ev.call.done = 0;
          NSP_TRY(push(it, &ev, NULL));
        }
        break;
      case PH_INFLIGHT:
        if (it->inflighti >= it->t->info.ninflight) {
          close_trace(it);
          it->ti++;
          it->phase = PH_OPEN;
          break;
        }
        NSP_TRY(inflight_event(it, &it->t->info.inflight[it->inflighti++]));
        break;
      default:
        it->phase = PH_DONE;
        break;
    }
  }
  return 0;
}

int nsp_job_calls_open(const struct nsp_job *job, const struct nsp_calls_filter *filter, struct nsp_calls **out) {
  if (!job || !out) return NSP_AN_EINVAL;
  *out = NULL;
  if (!job->analyzed) return NSP_AN_ESTATE;
  struct nsp_calls *it = calloc(1, sizeof *it);
  if (!it) return NSP_AN_ENOMEM;
  it->job = job;
  nsp_pend_init(&it->pend);
  if (filter) it->f = *filter;
  it->f.comms = NULL;
  it->f.ranks = NULL;
  it->f.windows = NULL;
  if (filter && filter->ncomms) {
    if (!(it->comms = malloc(filter->ncomms * sizeof *it->comms))) goto oom;
    memcpy(it->comms, filter->comms, filter->ncomms * sizeof *it->comms);
    qsort(it->comms, filter->ncomms, sizeof *it->comms, cmp_u64);
  }
  if (filter && filter->nranks) {
    if (!(it->ranks = malloc(filter->nranks * sizeof *it->ranks))) goto oom;
    memcpy(it->ranks, filter->ranks, filter->nranks * sizeof *it->ranks);
    qsort(it->ranks, filter->nranks, sizeof *it->ranks, nsp_an_cmp_int);
  }
  if (filter && filter->nwindows) {
    if (!(it->windows = malloc(filter->nwindows * sizeof *it->windows))) goto oom;
    memcpy(it->windows, filter->windows, filter->nwindows * sizeof *it->windows);
    qsort(it->windows, filter->nwindows, sizeof *it->windows, cmp_window);
  }
  /* Reading again, as perf's second pass: the progress line says so. */
  it->progress_job = (struct nsp_job *)job;
  uint64_t bytes = 0;
  size_t files = 0;
  for (size_t i = 0; i < job->ntraces; i++)
    if (trace_wanted(it, i)) files++, bytes += job->traces[i]->size;
  nsp_an_progress_phase(it->progress_job, NSP_PROGRESS_REREAD, files, bytes);
  it->phase = PH_OPEN;
  *out = it;
  return 0;
oom:
  nsp_calls_close(it);
  return NSP_AN_ENOMEM;
}

int nsp_calls_next(struct nsp_calls *it, const struct nsp_call_event **out) {
  if (!it || !out) return NSP_AN_EINVAL;
  free(it->cur.last_error);
  it->cur.last_error = NULL;
  NSP_TRY(advance(it));
  if (it->qhead == it->qn) return 0;
  it->cur = it->q[it->qhead++];
  *out = &it->cur.ev;
  return 1;
}

size_t nsp_calls_skipped(const struct nsp_calls *it, const char **why) {
  if (why) *why = it && it->skipped ? it->why : "";
  return it ? it->skipped : 0;
}

void nsp_calls_close(struct nsp_calls *it) {
  if (!it) return;
  close_trace(it);
  for (size_t i = it->qhead; i < it->qn; i++) free(it->q[i].last_error);
  free(it->cur.last_error);
  free(it->q);
  free(it->left);
  free(it->loc);
  free(it->comms);
  free(it->ranks);
  free(it->windows);
  nsp_u64map_free(&it->symbolized);
  free(it);
}
