/* nsp_rule_never_returned.c - calls a process never returned from, that
 * no other finding explains (format 1.5): a process killed inside
 * ncclGroupEnd, ncclCommDestroy or any other call (its crash ring's
 * INFLIGHT records), or still running and blocked in one for longer than
 * nsp_an_live_ns as of its last sign of life ("call-never-returned").
 *
 * It runs last and names only processes no other finding names (the
 * environment findings aside): a hang, a comm-init-wait or a signal says
 * more about the processes it covers.  A healthy live job, whose calls in
 * flight are young, gets none.  Sides: one per call (entry point and
 * communicator) the processes are inside, job ranks. */
#include <stdlib.h>
#include <string.h>

#include "nsp_names.h"
#include "nsp_rule.h"

/* The call a process is stuck in: its earliest call in flight, when its
 * process was killed or crashed, or runs and the call is older than
 * nsp_an_live_ns; NULL otherwise. */
static const struct nsp_inflight *stuck_in(const struct nsp_trace *t) {
  int st = t->info.end.state;
  if (st != NSP_END_KILLED && st != NSP_END_CRASHED && st != NSP_END_RUNNING) return NULL;
  const struct nsp_inflight *first = NULL;
  for (size_t i = 0; i < t->ninflight; i++) {
    const struct nsp_inflight *f = &t->inflight[i];
    if (nsp_an_end_young(t, (uint64_t)f->call.time_ns - (uint64_t)t->off_ns)) continue;
    if (!first || f->call.time_ns < first->call.time_ns) first = f;
  }
  return first;
}

/* Traces some finding (but the environment ones) names: marks[ti] = 1. */
static void mark_named(const struct nsp_job *job, uint8_t *named) {
  for (size_t i = 0; i < job->nfindings; i++) {
    const struct nsp_finding_priv *f = &job->findings[i];
    if (nsp_finding_kind_is_env(f->pub.kind)) continue;
    for (size_t s = 0; s < f->pub.nsides; s++)
      for (size_t p = 0; p < f->sides[s].nranks; p++) named[f->sides[s].procs[p].trace] = 1;
  }
}

static int same_call(const struct nsp_inflight *a, const struct nsp_inflight *b) {
  return a->call.api == b->call.api && a->call.comm_id == b->call.comm_id;
}

static int check(struct nsp_job *job) {
  if (!job->ntraces) return 0;
  uint8_t *named = calloc(job->ntraces, 1);
  size_t *ti = malloc(job->ntraces * sizeof *ti);
  const struct nsp_inflight **in = malloc(job->ntraces * sizeof *in);
  int ret = named && ti && in ? 0 : NSP_AN_ENOMEM;
  size_t n = 0;
  if (!ret) mark_named(job, named);
  for (size_t i = 0; !ret && i < job->ntraces; i++) {
    const struct nsp_inflight *x = named[i] ? NULL : stuck_in(job->traces[i]);
    if (!x) continue;
    ti[n] = i;
    in[n++] = x;
  }
  /* One side per call, in order of first appearance; processes by rank. */
  size_t nsides = 0;
  for (size_t i = 0; i < n; i++) {
    size_t k = 0;
    while (k < i && !same_call(in[k], in[i])) k++;
    nsides += k == i;
  }
  struct nsp_finding_priv *f = !ret && n ? nsp_an_new_finding(job, NSP_FIND_CALL_NEVER_RETURNED, NULL) : NULL;
  if (!ret && n) ret = f ? nsp_an_alloc_sides(f, nsides) : NSP_AN_ENOMEM;
  size_t s = 0;
  for (size_t i = 0; !ret && i < n; i++) {
    size_t k = 0;
    while (k < i && !same_call(in[k], in[i])) k++;
    if (k < i) continue; /* its side is made */
    size_t cnt = 0;
    for (size_t j = i; j < n; j++) cnt += same_call(in[j], in[i]);
    struct nsp_side *side = &f->sides[s++];
    size_t *group = malloc(cnt * sizeof *group);
    ret = group ? 0 : NSP_AN_ENOMEM;
    for (size_t j = i, p = 0; !ret && j < n; j++)
      if (same_call(in[j], in[i])) group[p++] = ti[j];
    if (!ret) {
      qsort_r(group, cnt, sizeof *group, nsp_an_cmp_trace_rank, job);
      ret = nsp_an_side_from_traces(job, side, group, cnt);
    }
    for (size_t p = 0; !ret && p < cnt; p++) {
      struct nsp_proc *pr = (struct nsp_proc *)&side->procs[p];
      const struct nsp_inflight *x = stuck_in(job->traces[group[p]]);
      pr->call = x->call;
      pr->pysite = x->pysite;
      pr->wait_ns = x->wait_ns;
      if (!f->pub.time_ns || pr->call.time_ns < f->pub.time_ns) f->pub.time_ns = pr->call.time_ns;
    }
    free(group);
    if (ret) break;
    side->call = in[i]->call;
    char cb[256], buf[320];
    nsp_format_call(cb, sizeof cb, &side->call);
    int k2 = nsp_api_kind(side->call.api);
    if (k2 == NSP_K_COLL || k2 == NSP_K_P2P) snprintf(buf, sizeof buf, "inside %s (never returned)", cb);
    else snprintf(buf, sizeof buf, "inside nccl%s (never returned)", nsp_api_name(side->call.api));
    ret = nsp_an_set_side_text(side, buf);
  }
  if (!ret && f) {
    f->pub.api = f->sides[0].call.api;
    int *odd = malloc(n * sizeof *odd);
    if (!odd) ret = NSP_AN_ENOMEM;
    for (size_t i = 0; !ret && i < n; i++) odd[i] = job->traces[ti[i]]->info.rank;
    if (!ret) ret = nsp_an_set_odd(f, odd, n);
    free(odd);
  }
  free(named);
  free(ti);
  free(in);
  return ret;
}

static int message(struct nsp_job *job, struct nsp_finding_priv *fp) {
  const struct nsp_finding *f = &fp->pub;
  struct nsp_sbuf sb = {0}, *b = &sb;
  for (size_t s = 0; s < f->nsides; s++) {
    const struct nsp_side *sd = &f->sides[s];
    char cb[256];
    int k = nsp_api_kind(sd->call.api);
    if (k == NSP_K_COLL || k == NSP_K_P2P) nsp_format_call(cb, sizeof cb, &sd->call);
    else snprintf(cb, sizeof cb, "nccl%s", nsp_api_name(sd->call.api));
    nsp_sbuf_printf(b, "%s", s ? "; " : "");
    size_t shown = sd->nranks < 4 ? sd->nranks : 4;
    for (size_t p = 0; p < shown; p++) {
      const struct nsp_proc *pr = &sd->procs[p];
      nsp_sbuf_printf(b, "%s", p ? ", " : "");
      nsp_an_put_job_ranks(b, job, &pr->rank, 1);
      nsp_sbuf_printf(b, " (%s pid %u)", pr->host, (unsigned)pr->pid);
    }
    if (sd->nranks > shown) nsp_sbuf_printf(b, " and %zu more", sd->nranks - shown);
    nsp_sbuf_printf(b, " never returned from %s", cb);
    if (k == NSP_K_COLL || k == NSP_K_P2P) nsp_sbuf_printf(b, " seq %llu", (unsigned long long)sd->call.seq);
    if (sd->call.comm_id) nsp_sbuf_printf(b, " on communicator %016llx", (unsigned long long)sd->call.comm_id);
    int64_t lo = INT64_MAX, hi = 0;
    for (size_t p = 0; p < sd->nranks; p++) {
      if (sd->procs[p].wait_ns < lo) lo = sd->procs[p].wait_ns;
      if (sd->procs[p].wait_ns > hi) hi = sd->procs[p].wait_ns;
    }
    if (hi - lo < 1000000) nsp_sbuf_printf(b, ", inside it %.3f s to %s last sign of life", (double)hi / 1e9,
                                           sd->nranks == 1 ? "its" : "their");
    else nsp_sbuf_printf(b, ", inside it %.3f to %.3f s to their last sign of life", (double)lo / 1e9, (double)hi / 1e9);
    nsp_an_put_side_ends(b, job, f, sd);
  }
  nsp_sbuf_printf(b, "; no other finding explains %s", f->nodd == 1 ? "it" : "them");
  return nsp_an_take_message(fp, b);
}

const struct nsp_rule nsp_rule_never_returned = {
    .name = "never-returned",
    .checks = "processes killed inside an NCCL call, or blocked in one, that no other finding names",
    .kinds = NSP_RULE_KINDS(NSP_FIND_CALL_NEVER_RETURNED),
    .check = check, .message = message,
};
