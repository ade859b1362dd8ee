/* nsp_an_format.c - how findings and the reports write calls, ranks,
 * processes, hosts and why records were dropped. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nsp_an_finding.h"
#include "nsp_names.h"

/* Appends to buf as snprintf would, tracking the full length in *len. */
static void fmt_cat(char *buf, size_t buflen, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void fmt_cat(char *buf, size_t buflen, size_t *len, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  size_t room = *len < buflen ? buflen - *len : 0;
  int n = vsnprintf(room ? buf + *len : NULL, room, fmt, ap);
  va_end(ap);
  if (n > 0) *len += (size_t)n;
}

size_t nsp_format_ranks(char *buf, size_t buflen, const int *ranks, size_t n) {
  size_t len = 0;
  if (buflen) buf[0] = 0;
  size_t i = 0;
  int first = 1;
  while (i < n) {
    size_t j = i;
    /* Extend over duplicates and consecutive ranks. */
    while (j + 1 < n && (ranks[j + 1] == ranks[j] || (int64_t)ranks[j + 1] == (int64_t)ranks[j] + 1)) j++;
    if (ranks[j] != ranks[i])
      fmt_cat(buf, buflen, &len, "%s%d-%d", first ? "" : ",", ranks[i], ranks[j]);
    else
      fmt_cat(buf, buflen, &len, "%s%d", first ? "" : ",", ranks[i]);
    first = 0;
    i = j + 1;
  }
  /* A list cut short must not read as a complete one. */
  if (buflen && len >= buflen) {
    if (buflen >= 4) memcpy(buf + buflen - 4, "...", 4);
    else buf[buflen - 1] = 0;
  }
  return len;
}

/* The value of a scalar of dtype from its bytes (zero-extended to 64
 * bits, as the REDOP record keeps them), printed in buf: integers as
 * such, floating types (float16, bfloat16, float32, float64; the 8-bit
 * floats as hex) with %g.  NULL for an unknown dtype. */
static const char *scalar_text(char *buf, size_t buflen, int dtype, uint64_t bits) {
  double v;
  switch (dtype) {
    case ncclInt8: snprintf(buf, buflen, "%d", (int)(int8_t)bits); return buf;
    case ncclUint8: snprintf(buf, buflen, "%u", (unsigned)(uint8_t)bits); return buf;
    case ncclInt32: snprintf(buf, buflen, "%ld", (long)(int32_t)bits); return buf;
    case ncclUint32: snprintf(buf, buflen, "%lu", (unsigned long)(uint32_t)bits); return buf;
    case ncclInt64: snprintf(buf, buflen, "%lld", (long long)(int64_t)bits); return buf;
    case ncclUint64: snprintf(buf, buflen, "%llu", (unsigned long long)bits); return buf;
    case ncclFloat16: { /* IEEE half: 1 sign, 5 exponent, 10 mantissa bits */
      uint32_t e = (uint32_t)(bits >> 10) & 31, m = (uint32_t)bits & 1023, u;
      float f;
      if (e == 31) {
        snprintf(buf, buflen, "%s", m ? "nan" : bits & 0x8000 ? "-inf" : "inf");
        return buf;
      }
      v = (double)m / 16777216.0; /* subnormal: m x 2^-24 */
      if (e) {                    /* normal: as float32 bits */
        u = (e + 112) << 23 | m << 13;
        memcpy(&f, &u, sizeof f);
        v = f;
      }
      if (bits & 0x8000) v = -v;
      break;
    }
    case ncclBfloat16:
    case ncclFloat32: {
      uint32_t u = dtype == ncclBfloat16 ? (uint32_t)bits << 16 : (uint32_t)bits;
      float f;
      memcpy(&f, &u, sizeof f);
      v = f;
      break;
    }
    case ncclFloat64: memcpy(&v, &bits, sizeof v); break;
    case ncclFloat8e4m3:
    case ncclFloat8e5m2: snprintf(buf, buflen, "0x%02x", (unsigned)(uint8_t)bits); return buf;
    default: return NULL;
  }
  snprintf(buf, buflen, "%g", v);
  return buf;
}

const char *nsp_format_redop(char *buf, size_t buflen, const struct nsp_call *c) {
  if (c->redop != NSP_REDOP_PREMULSUM) return nsp_redop_name(c->redop, buf, buflen);
  if (c->premul_dtype < 0) { /* definition not known (perf's lines of every PreMulSum op) */
    snprintf(buf, buflen, "premulsum");
    return buf;
  }
  char tb[32], vb[48];
  const char *v = c->premul_scalar_known ? scalar_text(vb, sizeof vb, c->premul_dtype, c->premul_scalar) : NULL;
  const char *res = c->premul_residence == ncclScalarHostImmediate ? "host"
                    : c->premul_residence == ncclScalarDevice      ? "device"
                                                                   : "residence?";
  snprintf(buf, buflen, "premulsum(%s %s%s%s)", nsp_dtype_name(c->premul_dtype, tb, sizeof tb), res, v ? " " : "",
           v ? v : "");
  return buf;
}

size_t nsp_format_call(char *buf, size_t buflen, const struct nsp_call *c) {
  size_t len = 0;
  char tb[32], rb[96];
  if (buflen) buf[0] = 0;
  if (c->api < 0) {
    fmt_cat(buf, buflen, &len, "no call");
    return len;
  }
  int kind = nsp_api_kind(c->api);
  if (kind != NSP_K_COLL && kind != NSP_K_P2P) {
    fmt_cat(buf, buflen, &len, "%s", nsp_op_name(c->api));
    return len;
  }
  fmt_cat(buf, buflen, &len, "%s %llu x %s", nsp_op_name(c->api), (unsigned long long)c->count,
          nsp_dtype_name(c->dtype, tb, sizeof tb));
  if (nsp_api_has_redop(c->api)) fmt_cat(buf, buflen, &len, " %s", nsp_format_redop(rb, sizeof rb, c));
  if (nsp_api_has_root(c->api)) fmt_cat(buf, buflen, &len, " root %d", c->peer);
  if (c->api == NSP_API_Send) fmt_cat(buf, buflen, &len, " to %d", c->peer);
  if (c->api == NSP_API_Recv) fmt_cat(buf, buflen, &len, " from %d", c->peer);
  size_t esz = nsp_dtype_size(c->dtype);
  if (esz && c->count <= UINT64_MAX / esz)
    fmt_cat(buf, buflen, &len, " (%llu bytes)", (unsigned long long)(c->count * esz));
  else
    fmt_cat(buf, buflen, &len, " (? bytes)");
  return len;
}

/* ---- processes and ranks in messages --------------------------------- */

/* Every message and report names processes through nsp_format_ranks_job:
 * a communicator's ranks, each with its job rank where that differs. */
size_t nsp_format_ranks_job(char *buf, size_t buflen, const int *ranks, const int *job_ranks, size_t n) {
  size_t len = 0;
  char rb[160];
  if (buflen) buf[0] = 0;
  if (!n) return 0;
  nsp_format_ranks(rb, sizeof rb, ranks, n);
  fmt_cat(buf, buflen, &len, "%s %s", n == 1 ? "rank" : "ranks", rb);
  int differ = 0;
  for (size_t i = 0; job_ranks && i < n; i++) differ |= job_ranks[i] >= 0 && job_ranks[i] != ranks[i];
  if (!differ) return len;
  /* The job ranks in the order of the ranks, runs of consecutive ones as
   * ranges, "?" for an unknown one; a long list is cut. */
  fmt_cat(buf, buflen, &len, " (job rank%s ", n == 1 ? "" : "s");
  size_t shown = 0;
  for (size_t i = 0; i < n; shown++) {
    if (shown == 16) {
      fmt_cat(buf, buflen, &len, ",...");
      break;
    }
    size_t j = i;
    while (job_ranks[i] >= 0 && j + 1 < n && (int64_t)job_ranks[j + 1] == (int64_t)job_ranks[j] + 1) j++;
    const char *sep = i ? "," : "";
    if (job_ranks[i] < 0) fmt_cat(buf, buflen, &len, "%s?", sep);
    else if (j > i) fmt_cat(buf, buflen, &len, "%s%d-%d", sep, job_ranks[i], job_ranks[j]);
    else fmt_cat(buf, buflen, &len, "%s%d", sep, job_ranks[i]);
    i = j + 1;
  }
  fmt_cat(buf, buflen, &len, ")");
  return len;
}

int nsp_job_ranks_differ(const struct nsp_job *job) {
  for (size_t i = 0; i < job->nmembers; i++) {
    const struct nsp_member *m = &job->members[i];
    int jr = job->traces[m->trace]->info.rank;
    if (m->rank >= 0 && jr >= 0 && jr != m->rank) return 1;
  }
  return 0;
}

size_t nsp_format_proc_rank(char *buf, size_t buflen, const struct nsp_job *job, const struct nsp_finding *f,
                            const struct nsp_proc *p) {
  int in_comm = nsp_finding_job_ranks(f) && f->comm_id; /* job ranks, each with its comm_rank */
  int r = in_comm ? p->comm_rank : p->rank, jr = job->traces[p->trace]->info.rank;
  /* A process without a rank (it died while it started): its pid. */
  if (r < 0 && (!in_comm || p->rank < 0)) return (size_t)snprintf(buf, buflen, "the process without a rank");
  if (in_comm && p->comm_rank < 0) return (size_t)snprintf(buf, buflen, "job rank %d", p->rank);
  /* Job ranks of a finding without a communicator, in a job where they
   * are not every communicator's ranks: say which they are. */
  if (nsp_finding_job_ranks(f) && !in_comm && nsp_job_ranks_differ(job))
    return (size_t)snprintf(buf, buflen, "job rank %d", p->rank);
  return nsp_format_ranks_job(buf, buflen, &r, &jr, 1);
}

int nsp_side_job_ranks(const struct nsp_finding *f, const struct nsp_side *s) {
  const struct nsp_finding_kind_info *k = nsp_finding_kind_info(f->kind);
  if (!k || k->rank_space != NSP_RANKS_JOB_IN_COMM || !f->comm_id) return 0;
  for (size_t p = 0; p < s->nranks; p++)
    if (s->procs[p].comm_rank != s->procs[p].rank) return 1;
  return 0;
}

/* A side's ranks with its processes' job ranks (nsp_format_ranks_job). */
static size_t format_side_procs(char *buf, size_t buflen, const struct nsp_job *job, const struct nsp_side *s) {
  int stack[16] = {0}, *jr = s->nranks <= 16 ? stack : malloc(s->nranks * sizeof *jr);
  for (size_t p = 0; jr && p < s->nranks; p++) jr[p] = job->traces[s->procs[p].trace]->info.rank;
  size_t len = nsp_format_ranks_job(buf, buflen, s->ranks, jr, s->nranks);
  if (jr != stack) free(jr);
  return len;
}

size_t nsp_format_side_ranks(char *buf, size_t buflen, const struct nsp_job *job, const struct nsp_finding *f,
                             const struct nsp_side *s) {
  if (nsp_finding_job_ranks(f)) {
    /* Job ranks already: "job ranks" where they could be read as ranks
     * of a communicator they are not. */
    char rb[160];
    nsp_format_ranks(rb, sizeof rb, s->ranks, s->nranks);
    int job_word = nsp_side_job_ranks(f, s) || nsp_job_ranks_differ(job);
    return (size_t)snprintf(buf, buflen, "%s%s %s", job_word ? "job " : "", s->nranks == 1 ? "rank" : "ranks", rb);
  }
  return format_side_procs(buf, buflen, job, s);
}

void nsp_an_put_rank(struct nsp_sbuf *b, const struct nsp_job *job, int rank, size_t trace) {
  char rb[64];
  int jr = job->traces[trace]->info.rank;
  nsp_format_ranks_job(rb, sizeof rb, &rank, &jr, 1);
  nsp_sbuf_printf(b, "%s", rb);
}

void nsp_an_put_side_ranks(struct nsp_sbuf *b, const struct nsp_job *job, const struct nsp_finding *f,
                           const struct nsp_side *s) {
  char rb[320];
  nsp_format_side_ranks(rb, sizeof rb, job, f, s);
  nsp_sbuf_printf(b, "%s", rb);
}

void nsp_an_put_comm_ranks(struct nsp_sbuf *b, const struct nsp_job *job, uint64_t comm_id, const int *ranks,
                           size_t n) {
  const struct nsp_an_comm *c = comm_id ? nsp_an_comm_of(job, comm_id) : NULL;
  int stack[16] = {0}, *jr = n <= 16 ? stack : malloc(n * sizeof *jr);
  for (size_t i = 0; jr && i < n; i++) {
    jr[i] = -1;
    for (size_t k = 0; c && k < c->nmembers; k++) {
      const struct nsp_member *m = &job->members[c->members[k]];
      if (m->rank == ranks[i]) {
        jr[i] = job->traces[m->trace]->info.rank;
        break;
      }
    }
  }
  char rb[320];
  nsp_format_ranks_job(rb, sizeof rb, ranks, c ? jr : NULL, n);
  if (jr != stack) free(jr);
  nsp_sbuf_printf(b, "%s", rb);
}

void nsp_an_put_job_ranks(struct nsp_sbuf *b, const struct nsp_job *job, const int *ranks, size_t n) {
  if (nsp_job_ranks_differ(job)) nsp_sbuf_printf(b, "job ");
  nsp_an_put_ranks(b, ranks, n);
}

void nsp_an_put_nonrank(struct nsp_sbuf *b, const struct nsp_trace *t) {
  nsp_sbuf_printf(b, "pid %u on host %s, which joined no communicator", t->info.pid, t->info.host);
  if (t->env_rank >= 0 && t->env_rank_var)
    nsp_sbuf_printf(b, " (%s=%d in its environment)", t->env_rank_var, t->env_rank);
}

void nsp_an_put_process(struct nsp_sbuf *b, const struct nsp_job *job, const struct nsp_trace *t) {
  if (!t->info.joined) nsp_an_put_nonrank(b, t);
  else if (t->info.rank >= 0) nsp_an_put_job_ranks(b, job, &t->info.rank, 1);
  else nsp_sbuf_printf(b, "%s", t->path);
}

void nsp_an_put_drop_reasons(struct nsp_sbuf *b, const struct nsp_trace *t) {
  /* Indexed by NSP_DROP_* (0 unknown), in the report's words. */
  static const char *const why[] = {"unknown reason", "ring full", "write errors", "size cap (NCCLSPY_MAX_MB)"};
  _Static_assert(sizeof why / sizeof *why == NSP_DROP_END, "a drop reason without its words in the report");
  int first = 1;
  for (int r = 1; r <= 4; r++) {
    int k = r & 3; /* 1, 2, 3, then 0 (unknown) last */
    if (!t->drop_by[k]) continue;
    nsp_sbuf_printf(b, "%s%s", first ? "" : ", ", why[k]);
    first = 0;
  }
  if (first) nsp_sbuf_printf(b, "%s", why[0]);
}

void nsp_an_put_went_on(struct nsp_sbuf *b, const struct nsp_job *job, const struct nsp_an_comm *c,
                        const struct nsp_member *m, const struct nsp_member *o) {
  nsp_an_put_rank(b, job, m->rank, m->trace);
  if (m->last_seq) nsp_sbuf_printf(b, "'s trace ends at seq %llu", (unsigned long long)m->last_seq);
  else nsp_sbuf_printf(b, "'s trace has no collective");
  nsp_sbuf_printf(b, " on communicator %016llx, but ", (unsigned long long)c->info.id);
  nsp_an_put_rank(b, job, o->rank, o->trace);
  if (o->done_seq == m->last_seq + 1) nsp_sbuf_printf(b, "'s seq %llu completed", (unsigned long long)o->done_seq);
  else
    nsp_sbuf_printf(b, "'s collectives up to seq %llu completed", (unsigned long long)o->done_seq);
  nsp_sbuf_printf(b, " (a collective completes only when every rank issued it), so ");
  nsp_an_put_rank(b, job, m->rank, m->trace);
  nsp_sbuf_printf(b, " went on: its later records were lost");
}

void nsp_an_put_hosts(struct nsp_sbuf *b, const struct nsp_side *s) {
  const char *seen[3];
  size_t n = 0, more = 0;
  for (size_t p = 0; p < s->nranks; p++) {
    const char *h = s->procs[p].host;
    int dup = 0;
    for (size_t k = 0; k < n && !dup; k++) dup = !strcmp(seen[k], h);
    /* Hosts beyond the third are only counted (roughly: once each). */
    if (dup) continue;
    if (n < 3) seen[n++] = h;
    else if (p == 0 || strcmp(s->procs[p - 1].host, h)) more++;
  }
  for (size_t k = 0; k < n; k++) nsp_sbuf_printf(b, "%s%s", k ? ", " : "", seen[k]);
  if (more) nsp_sbuf_printf(b, " and %zu more host%s", more, more == 1 ? "" : "s");
}

void nsp_an_put_ranks(struct nsp_sbuf *b, const int *ranks, size_t n) {
  char rb[160];
  nsp_format_ranks(rb, sizeof rb, ranks, n);
  nsp_sbuf_printf(b, "%s %s", n == 1 ? "rank" : "ranks", rb);
}

/* ---- how a process ended ----------------------------------------------- */

/* "+1.234567 s" (or "-..." for a clock behind the job's start) of a wall time. */
static void fmt_rel(char *buf, size_t buflen, size_t *len, const struct nsp_job *job, int64_t t) {
  double d = (double)(int64_t)((uint64_t)t - (uint64_t)nsp_job_start_ns(job)) / 1e9;
  if (d < 0 && d > -5e-7) d = 0;
  fmt_cat(buf, buflen, len, "%s%.6f s", d < 0 ? "-" : "+", d < 0 ? -d : d);
}

size_t nsp_format_end(char *buf, size_t buflen, const struct nsp_job *job, const struct nsp_end_info *e) {
  size_t len = 0;
  if (buflen) buf[0] = 0;
  switch (e->state) {
    case NSP_END_EXITED:
      if (e->exit_status > 0) fmt_cat(buf, buflen, &len, "exited with status %d at ", e->exit_status);
      else fmt_cat(buf, buflen, &len, "exited %sat ", e->source == NSP_ENDSRC_EXIT && !e->exit_status ? "cleanly " : "");
      fmt_rel(buf, buflen, &len, job, e->time_ns);
      if (e->source != NSP_ENDSRC_EXIT) fmt_cat(buf, buflen, &len, " (its exit handlers ran; the trace could not be finished)");
      if (e->inflight)
        fmt_cat(buf, buflen, &len, ", with %llu call%s of other threads in flight", (unsigned long long)e->inflight,
                e->inflight == 1 ? "" : "s");
      break;
    case NSP_END_RUNNING:
      if (e->source == NSP_ENDSRC_PROC) fmt_cat(buf, buflen, &len, "still running (its pid is alive on this host)");
      else fmt_cat(buf, buflen, &len, "still running (last heard %.1f s ago)", (double)e->age_ns / 1e9);
      break;
    case NSP_END_KILLED:
      fmt_cat(buf, buflen, &len, "ended without a clean exit (a signal such as SIGKILL, SIGTERM or SIGINT, the OOM killer, or _exit; ");
      if (e->time_ns) {
        fmt_cat(buf, buflen, &len, "last heard at ");
        fmt_rel(buf, buflen, &len, job, e->time_ns);
      } else {
        fmt_cat(buf, buflen, &len, "killed while it started: no time recorded");
      }
      fmt_cat(buf, buflen, &len, ")");
      break;
    case NSP_END_CRASHED:
      fmt_cat(buf, buflen, &len, "crashed with %s at ", e->signal);
      fmt_rel(buf, buflen, &len, job, e->time_ns);
      break;
    default:
      if (e->format_minor >= 5) fmt_cat(buf, buflen, &len, "end unknown (%s)", e->why);
      break;
  }
  return len;
}

/* An end worth a message: not a clean exit, and known. */
static int end_notable(const struct nsp_end_info *e) {
  return e->state == NSP_END_RUNNING || e->state == NSP_END_KILLED || e->state == NSP_END_CRASHED;
}

void nsp_an_put_cut_caveats(struct nsp_sbuf *b, const struct nsp_job *job, const struct nsp_finding *f) {
  for (size_t s = 0; s + 1 < f->nsides; s++)
    for (size_t p = 0; p < f->sides[s].nranks; p++) {
      unsigned long long at;
      if (nsp_an_trace_cut(job->traces[f->sides[s].procs[p].trace], &at)) {
        nsp_sbuf_printf(b, "; ");
        nsp_an_put_rank(b, job, f->sides[s].procs[p].rank, f->sides[s].procs[p].trace);
        nsp_sbuf_printf(b, "'s trace is cut at byte %llu, so it may have gone further", at);
      }
    }
}

void nsp_an_put_side_ends(struct nsp_sbuf *b, const struct nsp_job *job, const struct nsp_finding *f,
                          const struct nsp_side *s) {
  size_t notable = 0, same = 0;
  int64_t oldest = 0;
  for (size_t p = 0; p < s->nranks; p++) {
    const struct nsp_end_info *e = &job->traces[s->procs[p].trace]->info.end;
    notable += end_notable(e);
    same += e->state == job->traces[s->procs[0].trace]->info.end.state && e->state != NSP_END_CRASHED;
    if (e->age_ns > oldest) oldest = e->age_ns;
  }
  if (!notable) return;
  const struct nsp_end_info *e0 = &job->traces[s->procs[0].trace]->info.end;
  if (s->nranks > 1 && same == s->nranks) {
    char rb[320];
    nsp_format_side_ranks(rb, sizeof rb, job, f, s);
    nsp_sbuf_printf(b, "; %s", rb);
    if (e0->state == NSP_END_RUNNING) nsp_sbuf_printf(b, " are still running (last heard at most %.1f s ago)", (double)oldest / 1e9);
    else nsp_sbuf_printf(b, " ended without a clean exit (a signal such as SIGKILL, SIGTERM or SIGINT, the OOM killer, or _exit)");
    return;
  }
  size_t shown = 0;
  for (size_t p = 0; p < s->nranks; p++) {
    const struct nsp_end_info *e = &job->traces[s->procs[p].trace]->info.end;
    if (!end_notable(e)) continue;
    if (shown++ == 4) {
      nsp_sbuf_printf(b, "; ...");
      break;
    }
    char eb[200];
    nsp_format_end(eb, sizeof eb, job, e);
    char rb[64];
    nsp_format_proc_rank(rb, sizeof rb, job, f, &s->procs[p]);
    nsp_sbuf_printf(b, "; %s %s%s", rb, e->state == NSP_END_RUNNING ? "is " : "", eb);
  }
}

const char *nsp_comm_end_word(int api) {
  switch (api) {
    case NSP_API_CommFinalize: return "finalized";
    case NSP_API_CommDestroy: return "destroyed";
    case NSP_API_CommAbort: return "aborted";
    case NSP_API_CommRevoke: return "revoked";
    default: return "ended";
  }
}

void nsp_an_put_time(struct nsp_sbuf *b, const struct nsp_job *job, int64_t t) {
  char buf[64];
  size_t len = 0;
  fmt_rel(buf, sizeof buf, &len, job, t);
  nsp_sbuf_printf(b, "%s", buf);
}

void nsp_an_put_comm_end(struct nsp_sbuf *b, const struct nsp_job *job, const struct nsp_member *m) {
  if (!m || !m->ended) return;
  nsp_sbuf_printf(b, "; ");
  nsp_an_put_rank(b, job, m->rank, m->trace);
  nsp_sbuf_printf(b, " %s this communicator at ", nsp_comm_end_word(m->end_api));
  nsp_an_put_time(b, job, m->end_t);
}

void nsp_an_put_blocked(struct nsp_sbuf *b, const struct nsp_job *job, int rank, size_t trace) {
  const struct nsp_trace *t = job->traces[trace];
  int st = t->info.end.state;
  size_t shown = 0;
  for (size_t i = 0; i < t->ninflight && shown < 2; i++) {
    const struct nsp_call *c = &t->inflight[i].call;
    int k = nsp_api_kind(c->api);
    if (k == NSP_K_COLL || k == NSP_K_P2P) continue;
    shown++;
    nsp_sbuf_printf(b, "; ");
    if (rank >= 0) nsp_an_put_rank(b, job, rank, trace);
    else nsp_sbuf_printf(b, "job rank %d", t->info.rank);
    if (st == NSP_END_RUNNING) {
      nsp_sbuf_printf(b, " is blocked in nccl%s since ", nsp_api_name(c->api));
      nsp_an_put_time(b, job, c->time_ns);
    } else {
      nsp_sbuf_printf(b, " %s nccl%s", st == NSP_END_KILLED || st == NSP_END_CRASHED ? "was inside" : "had",
                      nsp_api_name(c->api));
      nsp_sbuf_printf(b, " %s(entered at ", st == NSP_END_KILLED || st == NSP_END_CRASHED ? "" : "in flight ");
      nsp_an_put_time(b, job, c->time_ns);
      nsp_sbuf_printf(b, ")%s", st == NSP_END_KILLED || st == NSP_END_CRASHED ? " when it ended" : "");
    }
  }
}
