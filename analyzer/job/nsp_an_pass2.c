/* nsp_an_pass2.c - pass 2: details the analysis did not keep, read again
 * from the trace files for the few calls the findings name: the times,
 * results and call sites of the send/recvs of p2p findings, and the call
 * sites of the collectives the rules asked for (nsp_an_want_site).  Each
 * trace is read once per kind of detail, only as far as its last request,
 * and a call site's from the first frame that can hold it (the frame
 * spans loading kept, nsp_an_frame_of); the traces on the job's threads. */
#include <stdlib.h>
#include <string.h>

#include "nsp_an_job.h"
#include "nsp_names.h"
#include "nsp_reader.h"

/* Called by reread_calls for each CALL record of trace t, with that
 * trace's requests (req, n of them, contiguous).  Returns how many
 * requests the record satisfied (0 or more), or a negative NSP_AN_* error
 * (which ends the reading). */
typedef int (*reread_fn)(const struct nsp_trace *t, const struct nsp_rec *rec, void *req, size_t n, void *arg);

/* Details the analysis did not keep are read again from the trace files,
 * once per trace: req holds n requests of `size` bytes, sorted so that
 * each trace's requests are contiguous (trace_of gives a request's trace
 * index).  Each trace is reopened and its CALL records passed to on_call
 * until all its requests are satisfied.  A trace that cannot be reopened
 * gets a note ("could not be read again for WHAT").  Returns 0, or a
 * negative NSP_AN_* error. */
static int reread_calls(struct nsp_job *job, void *req, size_t n, size_t size, size_t (*trace_of)(const void *),
                        size_t (*frame_of)(const struct nsp_trace *, const void *), const char *what,
                        reread_fn on_call, void *arg) {
  char *base = req;
  int ret = 0;
  /* The traces asked about, in order, decoded on the job's threads. */
  size_t ntr = 0;
  for (size_t i = 0; i < n; i++)
    if (!i || trace_of(base + i * size) != trace_of(base + (i - 1) * size)) ntr++;
  struct nsp_an_feed_item *items = calloc(ntr ? ntr : 1, sizeof *items);
  if (!items) return NSP_AN_ENOMEM;
  for (size_t i = 0, k = 0; i < n; k++) {
    size_t trace = trace_of(base + i * size), j = i;
    const struct nsp_trace *t = job->traces[trace];
    items[k].path = t->path;
    items[k].mem = t->mem;
    items[k].mem_len = t->mem_len;
    /* From the first frame that may hold one of its requests. */
    items[k].start = SIZE_MAX;
    for (; j < n && trace_of(base + j * size) == trace; j++) {
      size_t at = frame_of ? frame_of(t, base + j * size) : 0;
      if (at < items[k].start) items[k].start = at;
    }
    if (items[k].start == SIZE_MAX) items[k].start = 0;
    i = j;
  }
  struct nsp_an_feed *feed = nsp_an_feed_start(items, ntr, nsp_an_read_threads(job));
  for (size_t i = 0, k = 0; i < n && !ret; k++) {
    size_t trace = trace_of(base + i * size), j = i;
    while (j < n && trace_of(base + j * size) == trace) j++;
    const struct nsp_trace *t = job->traces[trace];
    char err[256];
    struct nsp_an_src src;
    if (!nsp_an_src_reopen(&src, feed, k, t, items[k].start, err, sizeof err)) {
      ret = nsp_job_notef(job, "%s: could not be read again for %s: %s", t->info.path, what, err);
      i = j;
      continue;
    }
    const struct nsp_rec *rec;
    size_t found = 0;
    int got = 0;
    while (!ret && found < j - i && (got = nsp_an_src_next(&src, &rec)) == 1) {
      if (rec->kind != NSP_REC_CALL) continue;
      got = on_call(t, rec, base + i * size, j - i, arg);
      if (got < 0) ret = got;
      else found += (size_t)got;
    }
    if (!ret && got < 0) ret = got;
    nsp_an_src_close(&src);
    i = j;
  }
  nsp_an_feed_stop(feed);
  free(items);
  return ret;
}

/* ---- send/recv details -------------------------------------------------- */

struct p2p_req {
  size_t trace;
  uint32_t local;
  int api, peer;
  uint64_t seq;
  struct nsp_call *out;
  struct nsp_proc *site_out; /* gets the native and Python call sites */
};

static int cmp_req(const void *pa, const void *pb) {
  const struct p2p_req *a = pa, *b = pb;
  if (a->trace != b->trace) return a->trace < b->trace ? -1 : 1;
  if (a->local != b->local) return a->local < b->local ? -1 : 1;
  if (a->api != b->api) return a->api < b->api ? -1 : 1;
  if (a->peer != b->peer) return a->peer < b->peer ? -1 : 1;
  return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static size_t p2p_req_trace(const void *req) { return ((const struct p2p_req *)req)->trace; }

/* reread_fn: a send or recv some request asks about. */
static int p2p_found(const struct nsp_trace *t, const struct nsp_rec *rec, void *reqv, size_t n, void *arg) {
  (void)arg;
  struct p2p_req *req = reqv;
  if (nsp_api_kind(rec->api) != NSP_K_P2P) return 0;
  struct p2p_req key = {req[0].trace, rec->comm, rec->api, rec->peer, rec->seq, NULL, NULL};
  struct p2p_req *hit = bsearch(&key, req, n, sizeof *req, cmp_req);
  if (!hit || hit->out->time_ns) return 0;
  hit->out->time_ns = (int64_t)(rec->t_enter + (uint64_t)t->off_ns);
  hit->out->result = rec->result;
  if (hit->site_out) {
    hit->site_out->site = nsp_an_site(t, rec->site);
    hit->site_out->pysite = nsp_an_pysite(t, rec->pysite);
  }
  if (rec->last_error && !(hit->out->last_error = strdup(rec->last_error))) return NSP_AN_ENOMEM;
  return 1;
}

int nsp_an_fetch_p2p(struct nsp_job *job) {
  struct p2p_req *req = NULL;
  size_t n = 0, cap = 0;
  for (size_t i = 0; i < job->nfindings; i++) {
    struct nsp_finding_priv *f = &job->findings[i];
    if (f->p2p_member[0] == SIZE_MAX) continue;
    for (int s = 0; s < 2; s++) {
      struct nsp_side *side = &f->sides[s];
      if (side->call.api < 0) continue;
      const struct nsp_member *m = &job->members[f->p2p_member[s]];
      NSP_TRY(nsp_grow(&req, &cap, n + 1, sizeof *req));
      req[n++] = (struct p2p_req){m->trace,          m->local,   side->call.api, side->call.peer, side->call.seq,
                                  &side->call, side->nranks ? &((struct nsp_proc *)side->procs)[0] : NULL};
    }
  }
  if (!n) return 0;
  qsort(req, n, sizeof *req, cmp_req);
  int ret = reread_calls(job, req, n, sizeof *req, p2p_req_trace, NULL, "send/recv details", p2p_found, NULL);
  free(req);
  NSP_TRY(ret);
  for (size_t i = 0; i < job->nfindings; i++) {
    struct nsp_finding_priv *f = &job->findings[i];
    if (f->p2p_member[0] == SIZE_MAX) continue;
    for (int s = 0; s < 2; s++) {
      int64_t t = f->sides[s].call.time_ns;
      if (t && (!f->pub.time_ns || t < f->pub.time_ns)) f->pub.time_ns = t;
    }
  }
  return 0;
}

/* ---- call sites ---------------------------------------------------------- */

static int cmp_site_req(const void *pa, const void *pb) {
  const struct nsp_site_req *a = pa, *b = pb;
  if (a->trace != b->trace) return a->trace < b->trace ? -1 : 1;
  if (a->local != b->local) return a->local < b->local ? -1 : 1;
  return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static size_t site_req_trace(const void *req) { return ((const struct nsp_site_req *)req)->trace; }

static size_t site_req_frame(const struct nsp_trace *t, const void *reqv) {
  const struct nsp_site_req *req = reqv;
  return nsp_an_frame_of(t, req->local, req->seq);
}

/* reread_fn: the call site of a collective some requests ask
 * about (requests for the same call sit next to each other). */
static int site_found(const struct nsp_trace *t, const struct nsp_rec *rec, void *reqv, size_t n, void *arg) {
  (void)arg;
  struct nsp_site_req *req = reqv;
  if (nsp_api_kind(rec->api) != NSP_K_COLL) return 0;
  struct nsp_site_req key = {req[0].trace, rec->comm, rec->seq, NULL, 0};
  struct nsp_site_req *hit = bsearch(&key, req, n, sizeof *req, cmp_site_req);
  if (!hit) return 0;
  while (hit > req && !cmp_site_req(hit - 1, &key)) hit--;
  int found = 0;
  for (; hit < req + n && !cmp_site_req(hit, &key); hit++) {
    if (hit->done) continue;
    hit->done = 1;
    hit->out->site = nsp_an_site(t, rec->site);
    hit->out->pysite = nsp_an_pysite(t, rec->pysite);
    found++;
  }
  return found;
}

int nsp_an_fetch_sites(struct nsp_job *job) {
  size_t n = job->nsite_req;
  if (!n) return 0;
  qsort(job->site_req, n, sizeof *job->site_req, cmp_site_req);
  return reread_calls(job, job->site_req, n, sizeof *job->site_req, site_req_trace, site_req_frame, "call sites",
                      site_found, NULL);
}
