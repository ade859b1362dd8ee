/* nsp_export.c - `ncclspy export --perfetto` (nsp_export.h): the calls of
 * nsp_job_calls_open as Chrome trace events, streamed to the file.
 *
 * Layout (docs/REPORT.md, "The Perfetto timeline"): one process per rank
 * (pid 1.. in job-rank order, named "rank R (host, pid)"), per
 * communicator and stream one thread track of CPU slices (entry to
 * return) and one of GPU slices (the completion's GPU start to end);
 * flows from the CPU slice of the rank that entered a collective first to
 * each other rank's; an instant on each rank a finding names.  Times in
 * microseconds from the job's start (nsp_job_start_ns), to the ns.
 *
 * Two passes over the calls: the first numbers the tracks and finds each
 * collective's first arrival (a few words per collective in the window),
 * the second writes the events.  Strings from traces go through
 * nsp_json_string (valid UTF-8, escaped by json-c); each event is one
 * small json-c object, written and freed. */
#include "nsp_export.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "ncclspy/trace.h"

#include "nsp_escape.h"
#include "nsp_grow.h"
#include "nsp_names.h"
#include "nsp_report.h"
#include "nsp_u64map.h"

/* Thread ids: 1 holds the process's finding markers; the k-th track of a
 * process (k from 0) has its CPU slices at 10 + 2k, its GPU slices next. */
#define TID_FINDINGS 1
#define TID_BASE 10

struct track {
  size_t trace;
  uint64_t comm_id, stream;
  uint32_t tid;         /* the CPU track's; GPU tid + 1 */
  const struct nsp_comm_info *comm;
  int gpu_used;         /* a GPU slice was written on it (its GPU track is named) */
};

/* A collective's first arrival: its rank's CPU slice. */
struct first {
  uint64_t comm_id, seq;
  int64_t enter_ns, end_ns;
  size_t trace;
  uint32_t tid;
};

/* The call a finding names on a process (its collective at the finding's
 * seq): where its instant goes. */
struct want {
  size_t trace;
  uint64_t comm_id, seq;
  int64_t enter_ns;     /* 0: not seen */
};

struct ex {
  const struct nsp_job *job;
  const struct nsp_export_opts *o;
  FILE *out;
  int64_t start;
  uint32_t *pid;        /* by trace; 0: not exported */
  uint32_t *ntracks;    /* by trace: tracks numbered so far */
  struct track *tracks;
  size_t ntr, trcap;
  struct nsp_u64map track_by_key;
  struct first *firsts;
  size_t nfirst, fcap;
  struct nsp_u64map first_by_key;
  struct want *wants;
  size_t nwant, wcap;
  uint64_t nevents, flow_id;
  uint64_t nslices; /* CPU and GPU slices written */
  int err;              /* a write failed or memory ran out */
};

static uint64_t mix(uint64_t h, uint64_t v) { return (h ^ v) * 1099511628211ull; }

static uint64_t track_key(size_t trace, uint64_t comm_id, uint64_t stream, uint64_t salt) {
  return mix(mix(mix(1469598103934665603ull ^ salt, trace), comm_id), stream);
}

static uint64_t first_key(uint64_t comm_id, uint64_t seq, uint64_t salt) {
  return mix(mix(14695981039346656037ull ^ salt, comm_id), seq);
}

/* The track of (trace, comm, stream), numbered at its first call; NULL
 * when out of memory. */
static struct track *track_of(struct ex *x, const struct nsp_call_event *e) {
  for (uint64_t salt = 0;; salt++) {
    uint64_t key = track_key(e->trace, e->call.comm_id, e->stream, salt);
    size_t *i = nsp_u64map_get(&x->track_by_key, key);
    if (i) {
      struct track *t = &x->tracks[*i];
      if (t->trace == e->trace && t->comm_id == e->call.comm_id && t->stream == e->stream) return t;
      continue;
    }
    if (nsp_grow(&x->tracks, &x->trcap, x->ntr + 1, sizeof *x->tracks) < 0 ||
        nsp_u64map_put(&x->track_by_key, key, x->ntr) < 0)
      return NULL;
    struct track *t = &x->tracks[x->ntr++];
    *t = (struct track){e->trace, e->call.comm_id, e->stream, TID_BASE + 2 * x->ntracks[e->trace]++, e->comm, 0};
    return t;
  }
}

static struct first *first_of(struct ex *x, uint64_t comm_id, uint64_t seq, int create) {
  for (uint64_t salt = 0;; salt++) {
    uint64_t key = first_key(comm_id, seq, salt);
    size_t *i = nsp_u64map_get(&x->first_by_key, key);
    if (i) {
      if (x->firsts[*i].comm_id == comm_id && x->firsts[*i].seq == seq) return &x->firsts[*i];
      continue;
    }
    if (!create) return NULL;
    if (nsp_grow(&x->firsts, &x->fcap, x->nfirst + 1, sizeof *x->firsts) < 0 ||
        nsp_u64map_put(&x->first_by_key, key, x->nfirst) < 0) {
      x->err = 1;
      return NULL;
    }
    struct first *f = &x->firsts[x->nfirst++];
    memset(f, 0, sizeof *f);
    f->comm_id = comm_id;
    f->seq = seq;
    f->enter_ns = INT64_MAX;
    return f;
  }
}

/* ---- events ---------------------------------------------------------------- */

/* Microseconds as a JSON number written to the ns ("12.345"). */
static json_object *us_value(int64_t ns) {
  char buf[40];
  int64_t a = ns < 0 ? -ns : ns;
  snprintf(buf, sizeof buf, "%s%" PRId64 ".%03" PRId64, ns < 0 ? "-" : "", a / 1000, a % 1000);
  return json_object_new_double_s((double)ns / 1000.0, buf);
}

static void add_str(json_object *o, const char *key, const char *v) { json_object_object_add(o, key, nsp_json_string(v)); }
static void add_int(json_object *o, const char *key, int64_t v) { json_object_object_add(o, key, json_object_new_int64(v)); }

static json_object *ev_new(struct ex *x, const char *ph, const char *name, const char *cat, uint32_t pid, uint32_t tid,
                           int64_t t_ns) {
  json_object *o = json_object_new_object();
  if (!o) return NULL;
  add_str(o, "ph", ph);
  if (name) add_str(o, "name", name);
  if (cat) add_str(o, "cat", cat);
  add_int(o, "pid", pid);
  add_int(o, "tid", tid);
  json_object_object_add(o, "ts", us_value(t_ns - x->start));
  return o;
}

/* Writes o (then frees it) as the next element of traceEvents. */
static void emit(struct ex *x, json_object *o) {
  if (!o) {
    x->err = 1;
    return;
  }
  const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
  if (!s || fprintf(x->out, "%s%s", x->nevents ? ",\n" : "\n", s) < 0) x->err = 1;
  x->nevents++;
  json_object_put(o);
}

static json_object *meta(struct ex *x, const char *what, uint32_t pid, uint32_t tid, const char *key, json_object *v) {
  json_object *o = json_object_new_object();
  if (!o) {
    json_object_put(v);
    return NULL;
  }
  add_str(o, "ph", "M");
  add_str(o, "name", what);
  add_int(o, "pid", pid);
  add_int(o, "tid", tid);
  json_object *args = json_object_new_object();
  json_object_object_add(args, key, v);
  json_object_object_add(o, "args", args);
  (void)x;
  return o;
}

/* ---- the processes and tracks ------------------------------------------------- */

static int cmp_trace_rank(const void *pa, const void *pb, void *ctx) {
  const struct nsp_job *job = ctx;
  size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
  int ra = nsp_job_trace(job, a)->rank, rb = nsp_job_trace(job, b)->rank;
  if ((ra < 0) != (rb < 0)) return ra < 0 ? 1 : -1;
  if (ra != rb) return ra < rb ? -1 : 1;
  return a < b ? -1 : a > b;
}

static int rank_wanted(const struct nsp_calls_filter *f, int rank) {
  for (size_t i = 0; i < f->nranks; i++)
    if (f->ranks[i] == rank) return 1;
  return !f->nranks;
}

static int comm_wanted(const struct nsp_calls_filter *f, uint64_t id) {
  for (size_t i = 0; i < f->ncomms; i++)
    if (f->comms[i] == id) return 1;
  return !f->ncomms;
}

/* pids in job-rank order (ranks unknown last), for the processes the
 * filter keeps. */
static int number_processes(struct ex *x) {
  size_t n = nsp_job_ntraces(x->job);
  size_t *order = malloc((n ? n : 1) * sizeof *order);
  if (!order) return -1;
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (rank_wanted(&x->o->filter, nsp_job_trace(x->job, i)->rank)) order[k++] = i;
  qsort_r(order, k, sizeof *order, cmp_trace_rank, (void *)x->job);
  for (size_t i = 0; i < k; i++) x->pid[order[i]] = (uint32_t)(i + 1);
  free(order);
  return 0;
}

static void emit_process_meta(struct ex *x) {
  for (size_t i = 0; i < nsp_job_ntraces(x->job); i++) {
    if (!x->pid[i]) continue;
    const struct nsp_trace_info *t = nsp_job_trace(x->job, i);
    char name[512], rank[16] = "?";
    if (t->rank >= 0) snprintf(rank, sizeof rank, "%d", t->rank);
    snprintf(name, sizeof name, "rank %s (%s, %" PRIu32 ")", rank, t->host, t->pid);
    emit(x, meta(x, "process_name", x->pid[i], 0, "name", nsp_json_string(name)));
    emit(x, meta(x, "process_sort_index", x->pid[i], 0, "sort_index",
                 json_object_new_int64(t->rank >= 0 ? t->rank : 1000000 + (int64_t)i)));
    char end[512];
    if (nsp_format_end(end, sizeof end, x->job, &t->end))
      emit(x, meta(x, "process_labels", x->pid[i], 0, "labels", nsp_json_string(end)));
  }
}

static void emit_track_meta(struct ex *x) {
  for (size_t i = 0; i < x->ntr; i++) {
    const struct track *t = &x->tracks[i];
    uint32_t pid = x->pid[t->trace];
    char name[512], comm[300];
    if (!t->comm_id) snprintf(comm, sizeof comm, "no communicator");
    else if (t->comm && t->comm->name[0]) snprintf(comm, sizeof comm, "comm %016" PRIx64 " (%s)", t->comm_id, t->comm->name);
    else snprintf(comm, sizeof comm, "comm %016" PRIx64, t->comm_id);
    for (int gpu = 0; gpu < 1 + t->gpu_used; gpu++) {
      snprintf(name, sizeof name, "%s stream 0x%" PRIx64 " %s", comm, t->stream, gpu ? "GPU" : "CPU");
      emit(x, meta(x, "thread_name", pid, t->tid + (uint32_t)gpu, "name", nsp_json_string(name)));
      emit(x, meta(x, "thread_sort_index", pid, t->tid + (uint32_t)gpu, "sort_index",
                   json_object_new_int64(t->tid + gpu)));
    }
  }
}

/* ---- calls ---------------------------------------------------------------- */

/* Collectives are joined, the calls NCCL refused too (a rank's attempt
 * at the seq: the alignment rule compares it there). */
static int flow_eligible(const struct nsp_call_event *e) {
  return nsp_api_kind(e->call.api) == NSP_K_COLL && e->call.comm_id && e->call.seq;
}

/* The end of trace i's time (wall ns): where calls that never returned or
 * never completed are drawn to. */
static int64_t trace_end(const struct ex *x, size_t i, int64_t at_least) {
  const struct nsp_trace_info *t = nsp_job_trace(x->job, i);
  int64_t end = t->end_ns > t->end.time_ns ? t->end_ns : t->end.time_ns;
  return end > at_least ? end : at_least;
}

static int64_t cpu_end(const struct ex *x, const struct nsp_call_event *e) {
  return e->exit_ns ? (e->exit_ns > e->enter_ns ? e->exit_ns : e->enter_ns) : trace_end(x, e->trace, e->enter_ns);
}

static struct want *want_of(struct ex *x, size_t trace, uint64_t comm_id, uint64_t seq) {
  for (size_t i = 0; i < x->nwant; i++)
    if (x->wants[i].trace == trace && x->wants[i].comm_id == comm_id && x->wants[i].seq == seq) return &x->wants[i];
  return NULL;
}

/* The calls the findings name: each process's collective at the seq of a
 * finding about a communicator (a few per finding). */
static int want_findings(struct ex *x) {
  for (size_t k = 0; k < nsp_job_nfindings(x->job); k++) {
    const struct nsp_finding *f = nsp_job_finding(x->job, k);
    if (!f->comm_id || !f->seq || nsp_finding_job_ranks(f) ||
        nsp_finding_kind_info(f->kind)->sides == NSP_SIDES_SEND_RECV)
      continue;
    for (size_t s = 0; s < f->nsides; s++)
      for (size_t p = 0; p < f->sides[s].nranks; p++) {
        size_t trace = f->sides[s].procs[p].trace;
        if (want_of(x, trace, f->comm_id, f->seq)) continue;
        if (nsp_grow(&x->wants, &x->wcap, x->nwant + 1, sizeof *x->wants) < 0) return NSP_AN_ENOMEM;
        x->wants[x->nwant++] = (struct want){trace, f->comm_id, f->seq, 0};
      }
  }
  return 0;
}

/* Pass 1: tracks and first arrivals. */
static int pass1(struct ex *x) {
  struct nsp_calls *it;
  int r = nsp_job_calls_open(x->job, &x->o->filter, &it);
  if (r < 0) return r;
  const struct nsp_call_event *e;
  while ((r = nsp_calls_next(it, &e)) == 1 && !x->err) {
    const struct track *t = track_of(x, e);
    if (!t) {
      r = NSP_AN_ENOMEM;
      break;
    }
    if (!flow_eligible(e)) continue;
    struct want *w = x->nwant ? want_of(x, e->trace, e->call.comm_id, e->call.seq) : NULL;
    if (w && (!w->enter_ns || e->enter_ns < w->enter_ns)) w->enter_ns = e->enter_ns;
    struct first *f = first_of(x, e->call.comm_id, e->call.seq, 1);
    if (f && (e->enter_ns < f->enter_ns || (e->enter_ns == f->enter_ns && x->pid[e->trace] < x->pid[f->trace]))) {
      f->enter_ns = e->enter_ns;
      f->end_ns = cpu_end(x, e);
      f->trace = e->trace;
      f->tid = t->tid;
    }
  }
  nsp_calls_close(it);
  if (x->err) return NSP_AN_ENOMEM;
  return r < 0 ? r : 0;
}

static const char *done_word(const struct nsp_call_event *e) {
  if (e->call.in_flight) return "no (never returned: in flight at the end of its trace)";
  if (e->call.result && e->call.result != ncclInProgress) return "no (NCCL returned an error: nothing was enqueued)";
  if (e->call.done == 1) return "yes";
  if (e->call.done == -1) return "unknown (completion not tracked)";
  if (e->done_flags & NSP_DONE_ABANDONED) return "no (abandoned: its communicator was aborted)";
  if (e->done_flags & NSP_DONE_ERROR) return "no (the GPU work failed, or its group's ncclGroupEnd did)";
  return "no (never completed by the end of its trace)";
}

static json_object *call_args(const struct ex *x, const struct nsp_call_event *e) {
  json_object *a = json_object_new_object();
  if (!a) return NULL;
  char buf[512];
  nsp_format_call(buf, sizeof buf, &e->call);
  add_str(a, "call", buf);
  snprintf(buf, sizeof buf, "%016" PRIx64, e->call.comm_id);
  add_str(a, "comm", e->call.comm_id ? buf : "none");
  if (e->comm && e->comm->name[0]) add_str(a, "comm_name", e->comm->name);
  add_int(a, "rank", e->comm_rank);
  add_int(a, "job_rank", e->job_rank);
  add_int(a, "seq", (int64_t)e->call.seq);
  add_int(a, "count", (int64_t)e->call.count);
  add_str(a, "dtype", nsp_dtype_name(e->call.dtype, buf, sizeof buf));
  if (nsp_api_has_redop(e->call.api)) add_str(a, "redop", nsp_format_redop(buf, sizeof buf, &e->call));
  if (nsp_api_has_root(e->call.api)) add_int(a, "root", e->call.peer);
  else if (nsp_api_kind(e->call.api) == NSP_K_P2P) add_int(a, "peer", e->call.peer);
  size_t esz = nsp_dtype_size(e->call.dtype);
  if (esz && e->call.count <= INT64_MAX / esz) add_int(a, "bytes", (int64_t)(e->call.count * esz));
  snprintf(buf, sizeof buf, "0x%" PRIx64, e->stream);
  add_str(a, "stream", buf);
  if (e->group_id) add_int(a, "group", (int64_t)e->group_id);
  add_str(a, "result", nsp_result_name(e->call.result, buf, sizeof buf));
  if (e->call.last_error && e->call.last_error[0]) add_str(a, "last_error", e->call.last_error);
  add_str(a, "completed", done_word(e));
  if (e->gpu_end_ns) json_object_object_add(a, "gpu_us", us_value(e->gpu_end_ns - e->gpu_start_ns));
  if (!e->exit_ns) add_str(a, "returned", "never: drawn to the end of its trace");
  if (e->pysite && e->pysite->nframes) {
    const struct nsp_pyframe *fr = &e->pysite->frames[e->pysite->first < e->pysite->nframes ? e->pysite->first : 0];
    snprintf(buf, sizeof buf, "%s:%" PRIu64 " in %s", fr->file, fr->line, fr->function);
    add_str(a, "python", buf);
  }
  if (e->site && e->site->nframes) {
    const struct nsp_frame *fr = &e->site->frames[0];
    if (fr->function) snprintf(buf, sizeof buf, "%s (%s:%d)", fr->function, fr->file ? fr->file : "?", fr->line);
    else snprintf(buf, sizeof buf, "%s+0x%" PRIx64 "%s%s", fr->module, fr->offset, fr->symbol[0] ? " " : "", fr->symbol);
    add_str(a, "site", buf);
  }
  return a;
}

static void slice_name(char *buf, size_t len, const struct nsp_call_event *e) {
  const char *op = nsp_op_name(e->call.api);
  if (nsp_api_kind(e->call.api) == NSP_K_P2P)
    snprintf(buf, len, "%s seq %" PRIu64 " %s %d", op, e->call.seq, e->call.api == NSP_API_Send ? "to" : "from",
             e->call.peer);
  else snprintf(buf, len, "%s seq %" PRIu64, op, e->call.seq);
}

static void emit_slice(struct ex *x, const char *name, const char *cat, uint32_t pid, uint32_t tid, int64_t from,
                       int64_t to, json_object *args) {
  x->nslices++;
  json_object *o = ev_new(x, "X", name, cat, pid, tid, from);
  if (!o) {
    json_object_put(args);
    x->err = 1;
    return;
  }
  json_object_object_add(o, "dur", us_value(to > from ? to - from : 0));
  json_object_object_add(o, "args", args);
  emit(x, o);
}

/* A point 1 ns (or less, to stay inside) after a slice's start. */
static int64_t inside(int64_t from, int64_t to, int64_t by) { return from + (to - from < by ? to - from : by); }

static void emit_call(struct ex *x, const struct nsp_call_event *e) {
  struct track *t = track_of(x, e);
  if (!t) {
    x->err = 1;
    return;
  }
  uint32_t pid = x->pid[e->trace];
  char name[256], full[300];
  slice_name(name, sizeof name, e);
  int failed = e->call.result && e->call.result != ncclInProgress;
  snprintf(full, sizeof full, "%s%s", name, !e->exit_ns ? " (never returned)" : failed ? " (error)" : "");
  int64_t end = cpu_end(x, e);
  emit_slice(x, full, "nccl,cpu", pid, t->tid, e->enter_ns, end, call_args(x, e));
  if (e->gpu_end_ns) {
    emit_slice(x, name, "nccl,gpu", pid, t->tid + 1, e->gpu_start_ns, e->gpu_end_ns, call_args(x, e));
    t->gpu_used = 1;
  } else if (e->call.done == 0 && e->exit_ns && !failed) {
    snprintf(full, sizeof full, "%s (never completed)", name);
    emit_slice(x, full, "nccl,gpu", pid, t->tid + 1, e->exit_ns, trace_end(x, e->trace, e->exit_ns),
               call_args(x, e));
    t->gpu_used = 1;
  }
  if (!flow_eligible(e)) return;
  const struct first *f = first_of(x, e->call.comm_id, e->call.seq, 0);
  if (!f || (f->trace == e->trace && f->tid == t->tid)) return;
  /* From the first arrival to this one: "s" 1 ns into the first's slice,
   * "f" 2 ns into this one (never before the "s", even on a tie). */
  char fname[64];
  snprintf(fname, sizeof fname, "seq %" PRIu64, e->call.seq);
  uint64_t id = ++x->flow_id;
  json_object *s = ev_new(x, "s", fname, "collective", x->pid[f->trace], f->tid, inside(f->enter_ns, f->end_ns, 1));
  if (s) json_object_object_add(s, "id", json_object_new_int64((int64_t)id));
  emit(x, s);
  json_object *fe = ev_new(x, "f", fname, "collective", pid, t->tid, inside(e->enter_ns, end, 2));
  if (fe) {
    json_object_object_add(fe, "id", json_object_new_int64((int64_t)id));
    add_str(fe, "bp", "e");
  }
  emit(x, fe);
}

static int pass2(struct ex *x) {
  struct nsp_calls *it;
  int r = nsp_job_calls_open(x->job, &x->o->filter, &it);
  if (r < 0) return r;
  const struct nsp_call_event *e;
  while (!x->err && (r = nsp_calls_next(it, &e)) == 1) emit_call(x, e);
  nsp_calls_close(it);
  return r < 0 ? r : 0;
}

/* ---- findings ---------------------------------------------------------------- */

static void emit_findings(struct ex *x) {
  const struct nsp_calls_filter *flt = &x->o->filter;
  for (size_t k = 0; k < nsp_job_nfindings(x->job); k++) {
    const struct nsp_finding *f = nsp_job_finding(x->job, k);
    if (f->comm_id && !comm_wanted(flt, f->comm_id)) continue;
    const char *kind = nsp_finding_kind_name(f->kind);
    char name[1024];
    snprintf(name, sizeof name, "%s: %s", kind, k ? f->message : nsp_job_headline(x->job));
    for (size_t s = 0; s < f->nsides; s++) {
      const struct nsp_side *side = &f->sides[s];
      for (size_t p = 0; p < side->nranks; p++) {
        const struct nsp_proc *pr = &side->procs[p];
        if (pr->trace >= nsp_job_ntraces(x->job) || !x->pid[pr->trace]) continue;
        const struct want *w = f->comm_id ? want_of(x, pr->trace, f->comm_id, f->seq) : NULL;
        int64_t ts = w && w->enter_ns ? w->enter_ns : pr->call.time_ns ? pr->call.time_ns : f->time_ns;
        if (!ts) ts = nsp_job_trace(x->job, pr->trace)->realtime_ns;
        if ((flt->from_ns && ts < flt->from_ns) || (flt->to_ns && ts >= flt->to_ns)) continue;
        json_object *o = ev_new(x, "i", name, "finding", x->pid[pr->trace], TID_FINDINGS, ts);
        if (!o) {
          x->err = 1;
          return;
        }
        add_str(o, "s", "p");
        json_object *a = json_object_new_object();
        add_int(a, "finding", (int64_t)k + 1);
        add_str(a, "kind", kind);
        add_str(a, "message", f->message);
        if (!k) add_str(a, "headline", nsp_job_headline(x->job));
        add_str(a, "hint", f->hint);
        if (f->comm_id) {
          char id[20];
          snprintf(id, sizeof id, "%016" PRIx64, f->comm_id);
          add_str(a, "comm", id);
          add_int(a, "seq", (int64_t)f->seq);
        }
        add_int(a, "rank", pr->rank);
        if (side->text) add_str(a, "side", side->text);
        if (side->role) add_str(a, "role", nsp_side_role_name(side->role));
        json_object_object_add(o, "args", a);
        emit(x, o);
      }
    }
  }
}

/* ---- the file ------------------------------------------------------------------ */

uint64_t nsp_export_estimate(const struct nsp_job *job) {
  uint64_t n = 0;
  for (size_t i = 0; i < nsp_job_ntraces(job); i++) n += 3 * nsp_job_trace(job, i)->work_calls;
  return n;
}

void nsp_export_default_window(const struct nsp_job *job, uint64_t estimate, uint64_t max_events, int64_t *from_ns,
                               int64_t *to_ns, const char **what) {
  int64_t start = nsp_job_start_ns(job), end = start;
  for (size_t i = 0; i < nsp_job_ntraces(job); i++)
    if (nsp_job_trace(job, i)->end_ns > end) end = nsp_job_trace(job, i)->end_ns;
  /* As long as the job's mean rate of events fills with about
   * NSP_EXPORT_MAX_EVENTS, and no longer than 2 x NSP_EXPORT_AROUND_NS. */
  int64_t span = end - start > 0 ? end - start : 1;
  double len = 2.0 * NSP_EXPORT_AROUND_NS;
  if (estimate > max_events) {
    double fit = (double)span * (double)max_events / (double)estimate;
    if (fit < len) len = fit;
  }
  if (len < 1e3) len = 1e3; /* 1 us at least */
  int64_t at = 0;
  *what = "around the last call (no finding with a time)";
  for (size_t k = 0; k < nsp_job_nfindings(job) && !at; k++) {
    int64_t t = nsp_job_finding(job, k)->time_ns;
    if (!t || nsp_finding_kind_is_env(nsp_job_finding(job, k)->kind)) continue;
    at = t;
    *what = "around the first finding";
  }
  /* Without a finding: up to the last call any process entered (a job's
   * last seconds may hold none: a checkpoint, ranks exiting). */
  int64_t last = 0;
  for (size_t i = 0; i < nsp_job_ntraces(job); i++)
    if (nsp_job_trace_last_call_ns(job, i) > last) last = nsp_job_trace_last_call_ns(job, i);
  if (!last || last > end) last = end;
  *from_ns = at ? at - (int64_t)(len / 2) : last + 1 - (int64_t)len / 2;
  *to_ns = at ? at + (int64_t)(len / 2) : last + 1 + (int64_t)len / 2;
  if (*from_ns < start) *from_ns = start;
  if (*to_ns > end + 1) *to_ns = end + 1;
}

int nsp_export_parse_time(const char *s, int64_t *ns) {
  if (!s || !*s) return -1;
  if (*s == '+') s++;
  char *end;
  double v = strtod(s, &end);
  if (end == s || v < 0 || v != v) return -1;
  double unit;
  if (!*end || !strcmp(end, "s")) unit = 1e9;
  else if (!strcmp(end, "ms")) unit = 1e6;
  else if (!strcmp(end, "us")) unit = 1e3;
  else if (!strcmp(end, "ns")) unit = 1;
  else return -1;
  double r = v * unit;
  if (r > 9.2e18) return -1;
  *ns = (int64_t)(r + 0.5);
  return 0;
}

int nsp_export_perfetto(const struct nsp_job *job, const struct nsp_export_opts *o, FILE *out, uint64_t *nevents,
                        uint64_t *nslices) {
  struct ex x;
  memset(&x, 0, sizeof x);
  x.job = job;
  x.o = o;
  x.out = out;
  x.start = nsp_job_start_ns(job);
  size_t n = nsp_job_ntraces(job);
  x.pid = calloc(n ? n : 1, sizeof *x.pid);
  x.ntracks = calloc(n ? n : 1, sizeof *x.ntracks);
  int ret = 0;
  if (!x.pid || !x.ntracks || number_processes(&x) < 0) {
    ret = NSP_AN_ENOMEM;
    goto out;
  }
  ret = want_findings(&x);
  if (ret == 0) ret = pass1(&x);
  if (ret < 0) goto out;
  const struct nsp_calls_filter *f = &o->filter;
  fprintf(out, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"ncclspy export --perfetto\","
               "\"time_origin_ns\":%" PRId64 ",\"from_ns\":%" PRId64 ",\"to_ns\":%" PRId64 ",\"headline\":",
          x.start, f->from_ns, f->to_ns);
  json_object *h = nsp_json_string(nsp_job_headline(job));
  fputs(h ? json_object_to_json_string_ext(h, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE) : "\"\"", out);
  json_object_put(h);
  fputs("},\"traceEvents\":[", out);
  emit_process_meta(&x);
  if (!x.err) ret = pass2(&x);
  if (!x.err && ret == 0) emit_findings(&x);
  /* The tracks' names last: only GPU tracks that got a slice are named. */
  emit_track_meta(&x);
  fputs("\n]}\n", out);
  if (ret == 0 && (x.err || ferror(out))) ret = -1;
out:
  if (nevents) *nevents = x.nevents;
  if (nslices) *nslices = x.nslices;
  free(x.pid);
  free(x.ntracks);
  free(x.tracks);
  free(x.firsts);
  free(x.wants);
  nsp_u64map_free(&x.track_by_key);
  nsp_u64map_free(&x.first_by_key);
  return ret;
}
