/* nsp_report_json.c - the machine report (json-c).  Schema: docs/REPORT.md;
 * tests and integration scripts parse it, so members are only added. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ncclspy/trace.h"
#include "nsp_config.h"
#include "nsp_escape.h"
#include "nsp_names.h"
#include "nsp_report.h"

/* json-c's add functions take ownership even on failure; a NULL value
 * (out of memory) is turned into a missing member, and the whole report
 * is checked for that at the end through `oom`. */
struct jctx {
  int oom;
};

static void put(struct jctx *j, json_object *o, const char *key, json_object *v) {
  if (!v || json_object_object_add(o, key, v) != 0) j->oom = 1;
}
static void push(struct jctx *j, json_object *a, json_object *v) {
  if (!v || json_object_array_add(a, v) != 0) j->oom = 1;
}
/* Every string member, trace-derived or not, is made valid UTF-8 by the
 * shared nsp_json_string (nsp_escape.h). */
static json_object *jstr(const char *s) { return nsp_json_string(s); }
static json_object *jint(int64_t v) { return json_object_new_int64(v); }
static json_object *jid(uint64_t id) {
  char b[17];
  snprintf(b, sizeof b, "%016" PRIx64, id);
  return jstr(b);
}
/* A JSON null: json-c represents it as a NULL object, which add accepts. */
static void put_null(json_object *o, const char *key) { json_object_object_add(o, key, NULL); }

static json_object *jranks(struct jctx *j, const int *ranks, size_t n) {
  json_object *a = json_object_new_array();
  if (!a) return NULL;
  for (size_t i = 0; i < n; i++) push(j, a, jint(ranks[i]));
  return a;
}

static void put_call(struct jctx *j, json_object *o, const struct nsp_call *c, int is_error) {
  char b[96];
  if (c->api >= 0) {
    put(j, o, "op", jstr(nsp_op_name(c->api)));
    put(j, o, "api", jstr(nsp_api_name(c->api)));
  } else {
    put_null(o, "op");
  }
  if (is_error) put(j, o, "source", jstr(nsp_call_source_name(c->source)));
  if (c->comm_id) put(j, o, "comm", jid(c->comm_id));
  int kind = c->api >= 0 ? nsp_api_kind(c->api) : -1;
  if (kind == NSP_K_COLL || kind == NSP_K_P2P) {
    if (c->seq) put(j, o, "seq", jint((int64_t)c->seq));
    if (!is_error || c->source == NSP_SRC_CALL) {
      put(j, o, "count", jint((int64_t)c->count));
      put(j, o, "dtype", jstr(nsp_dtype_name(c->dtype, b, sizeof b)));
      size_t esz = nsp_dtype_size(c->dtype);
      if (esz && c->count <= UINT64_MAX / esz) put(j, o, "bytes", jint((int64_t)(c->count * esz)));
      if (nsp_api_has_redop(c->api)) put(j, o, "redop", jstr(nsp_format_redop(b, sizeof b, c)));
      if (nsp_api_has_root(c->api)) put(j, o, "root", jint(c->peer));
      if (kind == NSP_K_P2P) put(j, o, "peer", jint(c->peer));
    }
  }
  if (is_error || c->result) {
    put(j, o, "result", jstr(nsp_result_name(c->result, b, sizeof b)));
    put(j, o, "result_code", jint(c->result));
  }
  if (c->last_error) put(j, o, "last_error", jstr(c->last_error));
  if (c->time_ns) put(j, o, "time_ns", jint(c->time_ns));
  if (c->done >= 0) put(j, o, "completed", json_object_new_boolean(c->done > 0));
  if (c->in_flight) put(j, o, "in_flight", json_object_new_boolean(1));
}

static int64_t rel(const struct nsp_job *job, int64_t t) { return (int64_t)((uint64_t)t - (uint64_t)nsp_job_start_ns(job)); }

/* How a process ended: {"state", "source", "time_ns", "t_rel_ns", "age_ns",
 * "signal", "signo", "inflight", "exit_status", "unslotted", "why", "text"}, the members
 * that apply (docs/REPORT.md). */
static json_object *end_json(struct jctx *j, const struct nsp_job *job, const struct nsp_end_info *e) {
  json_object *o = json_object_new_object();
  if (!o) return NULL;
  put(j, o, "state", jstr(nsp_end_state_name(e->state)));
  put(j, o, "source", jstr(nsp_end_source_name(e->source)));
  if (e->time_ns) {
    put(j, o, "time_ns", jint(e->time_ns));
    put(j, o, "t_rel_ns", jint(rel(job, e->time_ns)));
  }
  if (e->state == NSP_END_RUNNING) put(j, o, "age_ns", jint(e->age_ns));
  if (e->state == NSP_END_CRASHED) {
    put(j, o, "signal", jstr(e->signal));
    put(j, o, "signo", jint(e->signo));
  }
  put(j, o, "inflight", jint((int64_t)e->inflight));
  put(j, o, "exit_status", jint((int64_t)e->exit_status));
  if (e->unslotted) put(j, o, "unslotted", jint(e->unslotted));
  if (e->why[0]) put(j, o, "why", jstr(e->why));
  char eb[256];
  nsp_format_end(eb, sizeof eb, job, e);
  put(j, o, "text", jstr(eb));
  return o;
}

/* {"id", "flags", "frames": [{"module", "offset", "symbol"[, "function"][, "file",
 * "line"]}], "skipped", "total"} */
static json_object *site_json(struct jctx *j, const struct nsp_callsite *cs) {
  json_object *o = json_object_new_object();
  if (!o) return NULL;
  put(j, o, "id", jint(cs->id));
  put(j, o, "full", json_object_new_boolean((cs->flags & NSP_SITE_FULL) != 0));
  json_object *fr = json_object_new_array();
  for (size_t i = 0; fr && i < cs->nframes; i++) {
    json_object *x = json_object_new_object();
    if (x) {
      put(j, x, "module", jstr(cs->frames[i].module));
      put(j, x, "offset", jint((int64_t)cs->frames[i].offset));
      put(j, x, "symbol", jstr(cs->frames[i].symbol));
      /* From the module's debug information, when it was found. */
      if (cs->frames[i].function) put(j, x, "function", jstr(cs->frames[i].function));
      if (cs->frames[i].file && cs->frames[i].line > 0) {
        put(j, x, "file", jstr(cs->frames[i].file));
        put(j, x, "line", jint(cs->frames[i].line));
      }
    }
    push(j, fr, x);
  }
  put(j, o, "frames", fr);
  put(j, o, "skipped", jint((int64_t)cs->nskipped));
  put(j, o, "total", jint((int64_t)cs->ntotal));
  return o;
}

/* A Python call site (format 1.6): {"id", "tid", "borrowed", "truncated",
 * "frames": [{"file", "line", "function", "library"}] (innermost first,
 * all kept), "first" (index of the first frame of the program's own; null
 * when every frame is library code), "total"}. */
static json_object *pysite_json(struct jctx *j, const struct nsp_pysite *ps) {
  json_object *o = json_object_new_object();
  if (!o) return NULL;
  put(j, o, "id", jint(ps->id));
  put(j, o, "tid", jint(ps->tid));
  put(j, o, "borrowed", json_object_new_boolean((ps->flags & NSP_PYSITE_BORROWED) != 0));
  put(j, o, "truncated", json_object_new_boolean((ps->flags & NSP_PYSITE_TRUNCATED) != 0));
  json_object *fr = json_object_new_array();
  for (size_t i = 0; fr && i < ps->nframes; i++) {
    json_object *x = json_object_new_object();
    if (x) {
      put(j, x, "file", jstr(ps->frames[i].file));
      put(j, x, "line", jint((int64_t)ps->frames[i].line));
      put(j, x, "function", jstr(ps->frames[i].function));
      put(j, x, "library", json_object_new_boolean(ps->frames[i].library));
    }
    push(j, fr, x);
  }
  put(j, o, "frames", fr);
  if (ps->first < ps->nframes) put(j, o, "first", jint((int64_t)ps->first));
  else put_null(o, "first");
  put(j, o, "total", jint((int64_t)ps->ntotal));
  return o;
}

/* A fatal signal: {"signo", "signal", "code", "code_name", "code_text",
 * "addr", "tid", "sender_pid", "flags", "time_ns", "t_rel_ns", "died"}
 * and, with_stack, "stack" (a site object) when there is one. */
static json_object *signal_json(struct jctx *j, const struct nsp_job *job, const struct nsp_signal *sg, int with_stack) {
  json_object *o = json_object_new_object();
  if (!o) return NULL;
  put(j, o, "signo", jint(sg->signo));
  put(j, o, "signal", jstr(sg->name));
  put(j, o, "code", jint(sg->code));
  put(j, o, "code_name", jstr(sg->code_name));
  put(j, o, "code_text", jstr(sg->code_text));
  put(j, o, "addr", jint((int64_t)sg->addr));
  put(j, o, "tid", jint((int64_t)sg->tid));
  put(j, o, "sender_pid", jint(sg->sender_pid));
  put(j, o, "flags", jint(sg->flags));
  put(j, o, "time_ns", jint(sg->time_ns));
  put(j, o, "t_rel_ns", jint(rel(job, sg->time_ns)));
  put(j, o, "died", json_object_new_boolean(!sg->went_on));
  if (with_stack && sg->stack) put(j, o, "stack", site_json(j, sg->stack));
  return o;
}


/* (communicator rank, job rank) of each process of a finding, sorted by
 * the former for bsearch: the job ranks of odd_ranks without a scan of
 * every process per odd rank (a finding can hold thousands of each). */
struct rank_pair {
  int rank, job_rank;
};

static int cmp_rank_pair(const void *a, const void *b) {
  const struct rank_pair *x = a, *y = b;
  return (x->rank > y->rank) - (x->rank < y->rank);
}

/* NULL when out of memory or f has no process. */
static struct rank_pair *rank_pairs(const struct nsp_job *job, const struct nsp_finding *f) {
  size_t n = 0;
  for (size_t s = 0; s < f->nsides; s++) n += f->sides[s].nranks;
  struct rank_pair *v = n ? malloc(n * sizeof *v) : NULL;
  if (!v) return NULL;
  n = 0;
  for (size_t s = 0; s < f->nsides; s++)
    for (size_t p = 0; p < f->sides[s].nranks; p++)
      v[n++] = (struct rank_pair){f->sides[s].procs[p].rank, nsp_job_trace(job, f->sides[s].procs[p].trace)->rank};
  qsort(v, n, sizeof *v, cmp_rank_pair);
  return v;
}

static json_object *finding_json(struct jctx *j, const struct nsp_job *job, const struct nsp_finding *f) {
  json_object *o = json_object_new_object();
  if (!o) return NULL;
  /* What the sides hold follows from how they are made (the kinds table). */
  int shape = nsp_finding_kind_info(f->kind)->sides;
  int p2p = shape == NSP_SIDES_SEND_RECV;
  int is_error = shape == NSP_SIDES_ORIGIN_BY_RESULT;
  int hang = shape == NSP_SIDES_BY_ROLE;
  int env = shape == NSP_SIDES_BY_VALUE;
  put(j, o, "kind", jstr(nsp_finding_kind_name(f->kind)));
  if (f->comm_id) put(j, o, "comm", jid(f->comm_id));
  else put_null(o, "comm");
  put(j, o, "seq", jint((int64_t)f->seq));
  if (f->api >= 0) put(j, o, "op", jstr(nsp_op_name(f->api)));
  else put_null(o, "op");
  if (p2p) {
    put(j, o, "src", jint(f->src));
    put(j, o, "dst", jint(f->dst));
  }
  if (f->time_ns) {
    put(j, o, "time_ns", jint(f->time_ns));
    put(j, o, "t_rel_ns", jint(rel(job, f->time_ns)));
  }
  json_object *sides = json_object_new_array();
  for (size_t s = 0; sides && s < f->nsides; s++) {
    const struct nsp_side *sd = &f->sides[s];
    json_object *so = json_object_new_object();
    if (!so) {
      j->oom = 1;
      break;
    }
    put(j, so, "ranks", jranks(j, sd->ranks, sd->nranks));
    /* the job ranks of the same processes, in the same order (-1 unknown) */
    json_object *sj = json_object_new_array();
    for (size_t p = 0; sj && p < sd->nranks; p++) push(j, sj, jint(nsp_job_trace(job, sd->procs[p].trace)->rank));
    if (!sj) j->oom = 1;
    put(j, so, "job_ranks", sj);
    if (hang) put(j, so, "role", jstr(nsp_side_role_name(sd->role)));
    if (env) {
      if (sd->value) put(j, so, "value", jstr(sd->value));
      else put_null(so, "value");
    }
    json_object *vals = env ? NULL : json_object_new_object();
    if (vals) {
      put_call(j, vals, &sd->call, is_error);
      if (p2p) put(j, vals, "posted", jint((int64_t)sd->posted));
      if (shape == NSP_SIDES_BY_LAST_SEQ) put(j, vals, "last_seq", jint((int64_t)sd->call.seq));
    }
    if (!env) put(j, so, "values", vals);
    put(j, so, "text", jstr(sd->text));
    json_object *procs = json_object_new_array();
    for (size_t p = 0; procs && p < sd->nranks; p++) {
      const struct nsp_proc *pr = &sd->procs[p];
      json_object *po = json_object_new_object();
      if (!po) {
        j->oom = 1;
        break;
      }
      put(j, po, "rank", jint(pr->rank));
      put(j, po, "job_rank", jint(nsp_job_trace(job, pr->trace)->rank));
      /* error: its rank in the finding's communicator, null outside it */
      if (nsp_finding_job_ranks(f) && f->comm_id) {
        if (pr->comm_rank >= 0) put(j, po, "comm_rank", jint(pr->comm_rank));
        else put_null(po, "comm_rank");
      }
      put(j, po, "host", jstr(pr->host));
      put(j, po, "pid", jint(pr->pid));
      put(j, po, "trace", jint((int64_t)pr->trace));
      if (pr->call.api >= 0 || is_error) {
        json_object *co = json_object_new_object();
        if (co) put_call(j, co, &pr->call, is_error);
        /* hang: the call at the seq, except for ranks that never arrived
         * (their last call) and ranks whose arrival is unknown (their last
         * collective on the communicator that the trace covers) */
        int last = !hang || sd->role == NSP_ROLE_NOT_ARRIVED || sd->role == NSP_ROLE_ARRIVAL_UNKNOWN;
        put(j, po, is_error ? "error" : last ? "last_call" : "call", co);
      }
      if (hang && pr->blocked.api >= 0) {
        json_object *bo = json_object_new_object();
        if (bo) put_call(j, bo, &pr->blocked, 0);
        put(j, po, "stuck_in", bo);
      }
      if (hang && sd->role == NSP_ROLE_WAITING) {
        put(j, po, "wait_ns", jint(pr->wait_ns));
        if (pr->done_flags & NSP_DONE_ABANDONED) put(j, po, "abandoned", json_object_new_boolean(1));
        if (pr->done_flags & NSP_DONE_ERROR) put(j, po, "gpu_error", json_object_new_boolean(1));
      }
      if (pr->pysite) put(j, po, "pysite", pysite_json(j, pr->pysite));
      if (pr->site) put(j, po, "site", site_json(j, pr->site));
      if (pr->signal) put(j, po, "signal", signal_json(j, job, pr->signal, 0));
      if (pr->end) put(j, po, "end", end_json(j, job, pr->end));
      if (pr->comm_end_api >= 0) {
        json_object *ce = json_object_new_object();
        if (ce) {
          put(j, ce, "api", jstr(nsp_api_name(pr->comm_end_api)));
          put(j, ce, "time_ns", jint(pr->comm_end_ns));
          put(j, ce, "t_rel_ns", jint(rel(job, pr->comm_end_ns)));
        }
        put(j, po, "comm_end", ce);
      }
      push(j, procs, po);
    }
    put(j, so, "procs", procs);
    push(j, sides, so);
  }
  put(j, o, "sides", sides);
  put(j, o, "odd_ranks", jranks(j, f->odd_ranks, f->nodd));
  /* The same processes' job ranks (-1 unknown; a rank without a trace,
   * env-missing-ranks, has none) */
  json_object *oj = json_object_new_array();
  struct rank_pair *by_rank = nsp_finding_job_ranks(f) ? NULL : rank_pairs(job, f);
  size_t nprocs = 0;
  for (size_t s = 0; s < f->nsides; s++) nprocs += f->sides[s].nranks;
  if (!nsp_finding_job_ranks(f) && nprocs && !by_rank) j->oom = 1;
  for (size_t i = 0; oj && i < f->nodd; i++) {
    int jr = nsp_finding_job_ranks(f) ? f->odd_ranks[i] : -1;
    if (by_rank) {
      struct rank_pair key = {f->odd_ranks[i], -1};
      const struct rank_pair *hit = bsearch(&key, by_rank, nprocs, sizeof *by_rank, cmp_rank_pair);
      if (hit) jr = hit->job_rank;
    }
    push(j, oj, jint(jr));
  }
  free(by_rank);
  if (!oj) j->oom = 1;
  put(j, o, "odd_job_ranks", oj);
  put(j, o, "later", jint((int64_t)f->later));
  put(j, o, "hint", jstr(f->hint));
  if (f->hint_id) put(j, o, "hint_id", jstr(f->hint_id));
  put(j, o, "message", jstr(f->message));
  if (f->cause != SIZE_MAX) put(j, o, "caused_by", jint((int64_t)f->cause));
  else put_null(o, "caused_by");
  if (f->setting) put(j, o, "setting", jstr(f->setting));
  return o;
}

struct json_object *nsp_report_json_object(const struct nsp_job *job) {
  struct jctx j = {0};
  json_object *root = json_object_new_object();
  if (!root) return NULL;
  put(&j, root, "schema", jint(NSP_REPORT_SCHEMA));
  put(&j, root, "version", jstr(NSP_VERSION));
  put(&j, root, "headline", jstr(nsp_job_headline(job)));
  put(&j, root, "summary", jstr(nsp_job_summary(job)));
  put(&j, root, "start_time_ns", jint(nsp_job_start_ns(job)));
  const struct nsp_job_caveats *cv = nsp_job_caveats(job);
  json_object *co = json_object_new_object();
  if (co) {
    put(&j, co, "running", jint((int64_t)cv->running));
    put(&j, co, "unclean", jint((int64_t)cv->unclean));
    put(&j, co, "unknown_end", jint((int64_t)cv->unknown_end));
    put(&j, co, "in_flight", jint((int64_t)cv->inflight));
    put(&j, co, "untraced_libnccl", jint((int64_t)cv->libnccl));
    put(&j, co, "heard_ns", jint(cv->heard_ns));
    put(&j, co, "incomplete", jint((int64_t)cv->incomplete));
  }
  put(&j, root, "caveats", co);

  /* The runs the traces come from, newest first, and the one analysed. */
  json_object *runs = json_object_new_array();
  const char *analysed = NULL;
  size_t nanalysed = 0;
  for (size_t i = 0; runs && i < nsp_job_nruns(job); i++) {
    const struct nsp_run_info *r = nsp_job_run(job, i);
    json_object *o = json_object_new_object();
    if (o) {
      put(&j, o, "id", jstr(r->id));
      put(&j, o, "processes", jint((int64_t)r->nprocs));
      put(&j, o, "ranks", jint((int64_t)r->nranks));
      put(&j, o, "start_time_ns", jint(r->start_ns));
      put(&j, o, "end_time_ns", jint(r->end_ns));
      put(&j, o, "analyzed", json_object_new_boolean(r->analyzed));
    }
    if (r->analyzed) {
      analysed = r->id;
      nanalysed++;
    }
    push(&j, runs, o);
  }
  if (nanalysed == 1) put(&j, root, "run", jstr(analysed));
  else if (nanalysed > 1) put(&j, root, "run", jstr("all"));
  else put_null(root, "run");
  put(&j, root, "runs", runs);

  json_object *traces = json_object_new_array();
  for (size_t i = 0; traces && i < nsp_job_ntraces(job); i++) {
    const struct nsp_trace_info *t = nsp_job_trace(job, i);
    json_object *o = json_object_new_object();
    if (!o) {
      j.oom = 1;
      break;
    }
    char vb[32];
    put(&j, o, "file", jstr(t->path));
    put(&j, o, "host", jstr(t->host));
    put(&j, o, "pid", jint(t->pid));
    put(&j, o, "ppid", jint(t->ppid));
    put(&j, o, "rank", jint(t->rank));
    put(&j, o, "nccl_version", jint(t->nccl_version));
    put(&j, o, "nccl_version_str", jstr(nsp_nccl_version_str(t->nccl_version, vb, sizeof vb)));
    put(&j, o, "shim_version", jstr(t->shim_version));
    put(&j, o, "records", jint((int64_t)t->records));
    put(&j, o, "frames", jint((int64_t)t->frames));
    put(&j, o, "calls", jint((int64_t)t->calls));
    put(&j, o, "dropped", jint((int64_t)t->dropped));
    put(&j, o, "errors", jint((int64_t)t->errors));
    put(&j, o, "untracked_calls", jint((int64_t)t->untracked_calls));
    put(&j, o, "work_calls", jint((int64_t)t->work_calls));
    put(&j, o, "nccl_path", jstr(t->nccl_path));
    put(&j, o, "driver_version", jint(t->driver_version));
    put(&j, o, "runtime_version", jint(t->runtime_version));
    put(&j, o, "launcher", jstr(t->launcher));
    put(&j, o, "joined", json_object_new_boolean(t->joined));
    if (t->run_id) put(&j, o, "run", jstr(t->run_id));
    json_object *tr = json_object_new_array();
    if (tr && (t->tracking & NSP_TRACK_COMPLETION)) push(&j, tr, jstr("completion"));
    if (tr && (t->tracking & NSP_TRACK_TIMING)) push(&j, tr, jstr("timing"));
    if (tr && (t->tracking & NSP_TRACK_CALLSITES)) push(&j, tr, jstr("call-sites"));
    if (tr && (t->tracking & NSP_TRACK_SIGNALS)) push(&j, tr, jstr("signals"));
    put(&j, o, "tracking", tr);
    if (t->end_ns) put(&j, o, "end_time_ns", jint(t->end_ns));
    put(&j, o, "completions", jint((int64_t)t->completions));
    put(&j, o, "call_sites", jint((int64_t)t->nsites));
    put(&j, o, "python_sites", jint((int64_t)t->npysites));
    put(&j, o, "signals", jint((int64_t)t->signals));
    if (t->signal) put(&j, o, "signal", signal_json(&j, job, t->signal, 1));
    json_object *pr = json_object_new_array();
    if (pr && t->problem) push(&j, pr, jstr(t->problem));
    put(&j, o, "problems", pr);
    put(&j, o, "end", end_json(&j, job, &t->end));
    json_object *inf = json_object_new_array();
    for (size_t k = 0; inf && k < t->ninflight; k++) {
      const struct nsp_inflight *x = &t->inflight[k];
      json_object *io = json_object_new_object();
      if (io) {
        put_call(&j, io, &x->call, 0);
        if (x->new_comm_id) put(&j, io, "new_comm", jid(x->new_comm_id));
        if (x->parent_id) {
          put(&j, io, "parent", jid(x->parent_id));
          put(&j, io, "split_index", jint(x->split_index));
          put(&j, io, "color", jint(x->color));
          put(&j, io, "key", jint(x->key));
        }
        if (x->nranks >= 0) {
          put(&j, io, "rank", jint(x->rank));
          put(&j, io, "nranks", jint(x->nranks));
        }
        put(&j, io, "tid", jint(x->tid));
        put(&j, io, "wait_ns", jint(x->wait_ns));
        if (x->pysite) put(&j, io, "pysite", pysite_json(&j, x->pysite));
      }
      push(&j, inf, io);
    }
    put(&j, o, "in_flight", inf);
    json_object *ln = json_object_new_array();
    for (size_t k = 0; ln && k < t->nlibnccl; k++) {
      json_object *lo = json_object_new_object();
      if (lo) {
        put(&j, lo, "path", jstr(t->libnccl[k].path));
        put(&j, lo, "nccl_version", jint(t->libnccl[k].version));
        put(&j, lo, "nccl_version_str", jstr(nsp_nccl_version_str(t->libnccl[k].version, vb, sizeof vb)));
        put(&j, lo, "time_ns", jint(t->libnccl[k].time_ns));
      }
      push(&j, ln, lo);
    }
    put(&j, o, "untraced_libnccl", ln);
    push(&j, traces, o);
  }
  put(&j, root, "traces", traces);

  json_object *comms = json_object_new_array();
  for (size_t i = 0; comms && i < nsp_job_ncomms(job); i++) {
    const struct nsp_comm_info *c = nsp_job_comm(job, i);
    json_object *o = json_object_new_object();
    if (!o) {
      j.oom = 1;
      break;
    }
    put(&j, o, "id", jid(c->id));
    put(&j, o, "nranks", jint(c->nranks));
    if (c->parent_id) {
      put(&j, o, "parent", jid(c->parent_id));
      put(&j, o, "color", jint(c->color));
      put(&j, o, "key", jint(c->key));
      put(&j, o, "keys_differ", json_object_new_boolean(c->keys_differ));
    } else {
      put_null(o, "parent");
      put_null(o, "color");
      put_null(o, "key");
    }
    put(&j, o, "comm_name", jstr(c->name));
    if (c->api >= 0) put(&j, o, "created_by", jstr(nsp_api_name(c->api)));
    put(&j, o, "ranks_traced", jranks(&j, c->ranks, c->ntraced));
    /* The process of each traced rank by its job rank (-1 unknown). */
    if (c->job_ranks) put(&j, o, "job_ranks_traced", jranks(&j, c->job_ranks, c->ntraced));
    else put_null(o, "job_ranks_traced");
    put(&j, o, "max_seq", jint((int64_t)c->max_seq));
    put(&j, o, "collective_calls", jint((int64_t)c->ncoll));
    put(&j, o, "p2p_calls", jint((int64_t)c->np2p));
    push(&j, comms, o);
  }
  put(&j, root, "communicators", comms);

  json_object *finds = json_object_new_array();
  for (size_t i = 0; finds && i < nsp_job_nfindings(job); i++)
    push(&j, finds, finding_json(&j, job, nsp_job_finding(job, i)));
  put(&j, root, "findings", finds);

  json_object *notes = json_object_new_array();
  for (size_t i = 0; notes && i < nsp_job_nnotes(job); i++) push(&j, notes, jstr(nsp_job_note(job, i)));
  put(&j, root, "notes", notes);
  if (j.oom) {
    json_object_put(root);
    return NULL;
  }
  return root;
}

int nsp_report_json_emit(struct json_object *root, FILE *out) {
  if (!root) return -1;
  const char *s = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                                           JSON_C_TO_STRING_NOSLASHESCAPE);
  int ret = s && fprintf(out, "%s\n", s) >= 0 ? 0 : -1;
  json_object_put(root);
  fflush(out);
  return ret || ferror(out) ? -1 : 0;
}

int nsp_report_json(const struct nsp_job *job, FILE *out) {
  return nsp_report_json_emit(nsp_report_json_object(job), out);
}
