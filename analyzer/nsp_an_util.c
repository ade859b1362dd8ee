/* nsp_an_util.c - small containers and the formatting the reports share. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nsp_an_internal.h"
#include "nsp_reader.h"
#include "nsp_names.h"

void nsp_call_clear(struct nsp_call *c) {
  memset(c, 0, sizeof *c);
  c->api = -1;
  c->dtype = -1;
  c->redop = -1;
  c->peer = -1;
  c->done = -1;
}

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

size_t nsp_format_call(char *buf, size_t buflen, const struct nsp_call *c) {
  size_t len = 0;
  char tb[32], rb[32];
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
  if (nsp_api_has_redop(c->api)) fmt_cat(buf, buflen, &len, " %s", nsp_redop_name(c->redop, rb, sizeof rb));
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

static const char *const nsp_kind_names[NSP_FIND_KIND_COUNT] = {
    "kind-mismatch",      "dtype-mismatch",     "count-mismatch",    "redop-mismatch",
    "root-mismatch",      "p2p-size-mismatch",  "p2p-unmatched",     "stopped-early",
    "error",              "hang",               "never-completed",   "env-nccl-version",
    "env-nccl-path",      "env-driver-version", "env-cuda-runtime",  "env-nccl-setting",
    "env-duplicate-gpu",  "env-duplicate-rank", "env-nranks",        "env-missing-ranks",
    "env-world-size",     "signal",
};

int nsp_finding_job_ranks(const struct nsp_finding *f) {
  return f->kind == NSP_FIND_ERROR || f->kind == NSP_FIND_SIGNAL || (nsp_finding_kind_is_env(f->kind) && !f->comm_id);
}

int nsp_finding_kind_is_env(int kind) { return kind >= NSP_FIND_ENV_NCCL_VERSION && kind <= NSP_FIND_ENV_WORLD_SIZE; }

const char *nsp_side_role_name(int role) {
  switch (role) {
    case NSP_ROLE_NONE: return "";
    case NSP_ROLE_NOT_ARRIVED: return "not-arrived";
    case NSP_ROLE_WAITING: return "waiting";
    case NSP_ROLE_COMPLETED: return "completed";
    case NSP_ROLE_FAILED: return "failed";
    case NSP_ROLE_UNTRACKED: return "untracked";
    case NSP_ROLE_ARRIVAL_UNKNOWN: return "arrival-unknown";
    default: return "unknown";
  }
}

const char *nsp_finding_kind_name(int kind) {
  return kind >= 0 && kind < NSP_FIND_KIND_COUNT ? nsp_kind_names[kind] : "unknown";
}

int nsp_finding_kind_from_name(const char *name) {
  for (int i = 0; name && i < NSP_FIND_KIND_COUNT; i++)
    if (!strcmp(name, nsp_kind_names[i])) return i;
  return -1;
}

const char *nsp_finding_kind_hint(int kind) {
  switch (kind) {
    case NSP_FIND_KIND_MISMATCH:
      return "ranks made different collectives at the same position; a collective was skipped or "
             "added on some ranks - look for collectives under rank-dependent conditions (if rank == "
             "0, is_main_process, metric/logging gathers) and early exits or extra loop iterations";
    case NSP_FIND_DTYPE_MISMATCH:
      return "ranks disagree on dtype; under AMP/autocast one rank may reduce a float16 tensor while "
             "another reduces float32 - check autocast regions and gradient dtypes";
    case NSP_FIND_COUNT_MISMATCH:
      return "ranks passed different element counts; the tensors differ in shape across ranks - "
             "check uneven last batches, padding, per-rank model/config differences and unused "
             "parameters in gradient buckets";
    case NSP_FIND_REDOP_MISMATCH:
      return "ranks disagree on the reduction op (e.g. sum vs avg; PyTorch sends bool tensors as "
             "uint8 with MAX) - check the op argument on each rank";
    case NSP_FIND_ROOT_MISMATCH:
      return "ranks disagree on the root; every rank must name the same source/destination rank - "
             "mixing global and group ranks in a subgroup is the usual cause";
    case NSP_FIND_P2P_SIZE_MISMATCH:
      return "a send and its matching recv differ in size; check the tensor shapes both sides "
             "expect (pipeline stages: micro-batch size, sequence length, hidden size)";
    case NSP_FIND_P2P_UNMATCHED:
      return "the two peers posted different numbers of sends and recvs to each other; check loop "
             "bounds and schedules on both ranks (pipeline warm-up/cool-down steps)";
    case NSP_FIND_STOPPED_EARLY:
      return "these ranks stopped making collectives on this communicator while the others went "
             "on and wait for them; look at what the stopped ranks did last (stack dumps, py-spy, "
             "their logs): a hang, a crash, or a rank-dependent code path";
    case NSP_FIND_ERROR:
      return "the earliest error is the likely origin; errors on other ranks after it "
             "(ncclRemoteError, timeouts, aborts) are usually its consequences";
    case NSP_FIND_HANG:
      return "the ranks that did not arrive are the ones to look at: they are busy elsewhere (a "
             "rank-dependent code path, data loading, a host-side hang) or dead - get their stacks "
             "(py-spy dump --native) and logs; the waiting ranks only show where the others were expected";
    case NSP_FIND_NEVER_COMPLETED:
      return "every rank issued this collective but it did not complete on some: the ranks disagree "
             "on its arguments (see a mismatch), a peer died, or the GPU or network is stuck - check "
             "NCCL_DEBUG=INFO output, dmesg for Xid errors and the other ranks' errors";
    case NSP_FIND_ENV_NCCL_VERSION:
      return "ranks load different NCCL versions; mixed versions can fail with invalid usage or "
             "hang - make every node use one NCCL (check LD_LIBRARY_PATH, pip wheels, containers)";
    case NSP_FIND_ENV_NCCL_PATH:
      return "ranks load libnccl from different paths; check LD_LIBRARY_PATH and which wheel or "
             "container each node uses";
    case NSP_FIND_ENV_DRIVER:
      return "nodes run different CUDA driver versions; keep the fleet on one driver";
    case NSP_FIND_ENV_RUNTIME:
      return "ranks load different CUDA runtimes; check the environment (conda, containers) on each node";
    case NSP_FIND_ENV_SETTING:
      return "an NCCL setting differs across ranks (or is unset on some); NCCL expects one "
             "configuration per job - set it the same way everywhere (launcher, job script, container env)";
    case NSP_FIND_ENV_DUP_GPU:
      return "two ranks of one communicator use the same GPU (NCCL fails with \"Duplicate GPU "
             "detected\"); check CUDA_VISIBLE_DEVICES and the LOCAL_RANK -> device mapping";
    case NSP_FIND_ENV_DUP_RANK:
      return "two processes claim the same rank; two jobs share a rendezvous (MASTER_ADDR/PORT, "
             "NCCL_COMM_ID) or the launcher gave out a rank twice";
    case NSP_FIND_ENV_NRANKS:
      return "members of one communicator disagree on its size; the ranks were launched with "
             "different world sizes or joined the wrong communicator";
    case NSP_FIND_ENV_MISSING_RANKS:
      return "some ranks left no trace: copy their traces too (every node's NCCLSPY_DIR), or "
             "they never started, were not preloaded, or died before writing";
    case NSP_FIND_ENV_WORLD_SIZE:
      return "the launcher's world size disagrees with what was traced; check the launch "
             "command (nnodes, nproc_per_node, ntasks) and that every node's traces are here";
    case NSP_FIND_SIGNAL:
      return "a rank died of a fatal signal and its stack shows where (SIGSEGV/SIGBUS: a bad pointer "
             "or a cut mapping; SIGABRT: abort(), a failed assert, an uncaught C++ exception or a "
             "watchdog giving up); the other ranks' hangs and errors after it are usually its consequences";
    default:
      return "";
  }
}

const char *nsp_call_source_name(int source) {
  switch (source) {
    case NSP_SRC_CALL: return "call";
    case NSP_SRC_COMM_INIT: return "comm-init";
    case NSP_SRC_COMM_END: return "comm-end";
    case NSP_SRC_ASYNC: return "async-error";
    case NSP_SRC_REDOP: return "redop";
    default: return "unknown";
  }
}

const char *nsp_an_strerror(int err) {
  switch (err) {
    case NSP_AN_OK: return "success";
    case NSP_AN_ENOMEM: return "out of memory";
    case NSP_AN_EREAD: return "cannot read trace";
    case NSP_AN_EINVAL: return "invalid argument";
    case NSP_AN_ESTATE: return "job already analysed";
    default: return "unknown error";
  }
}

/* ---- coverage --------------------------------------------------------- */

/* Used by the coverage notes and the wavefront (nsp_an_rules.c) and by
 * the hang rule (nsp_an_hang.c): one rule for all three. */
int nsp_an_member_uncovered(const struct nsp_job *job, const struct nsp_member *m) {
  const struct nsp_trace *t = job->traces[m->trace];
  return t->info.dropped && t->drop_rec > m->last_rec;
}

int nsp_an_p2p_uncovered(const struct nsp_job *job, const struct nsp_member *m, const struct nsp_runs *r) {
  const struct nsp_trace *t = job->traces[m->trace];
  return t->info.dropped && t->drop_rec > (r && r->n ? r->last_rec : 0);
}

size_t nsp_format_proc_rank(char *buf, size_t buflen, const struct nsp_job *job, const struct nsp_finding *f,
                            const struct nsp_proc *p) {
  int in_comm = nsp_finding_job_ranks(f) && f->comm_id; /* job ranks, each with its comm_rank */
  if (in_comm && p->comm_rank < 0) return (size_t)snprintf(buf, buflen, "job rank %d", p->rank);
  int r = in_comm ? p->comm_rank : p->rank, jr = job->traces[p->trace]->info.rank;
  if (jr >= 0 && jr != r) return (size_t)snprintf(buf, buflen, "rank %d (job rank %d)", r, jr);
  return (size_t)snprintf(buf, buflen, "rank %d", r);
}

int nsp_side_job_ranks(const struct nsp_finding *f, const struct nsp_side *s) {
  if (f->kind != NSP_FIND_ERROR || !f->comm_id) return 0;
  for (size_t p = 0; p < s->nranks; p++)
    if (s->procs[p].comm_rank != s->procs[p].rank) return 1;
  return 0;
}

void nsp_an_put_rank(struct nsp_sbuf *b, const struct nsp_job *job, int rank, size_t trace) {
  int jr = job->traces[trace]->info.rank;
  nsp_sbuf_printf(b, "rank %d", rank);
  if (jr >= 0 && jr != rank) nsp_sbuf_printf(b, " (job rank %d)", jr);
}

void nsp_an_put_drop_reasons(struct nsp_sbuf *b, const struct nsp_trace *t) {
  static const char *const why[4] = {"unknown reason", "ring full", "write errors", "size cap (NCCLSPY_MAX_MB)"};
  int first = 1;
  for (int r = 1; r <= 4; r++) {
    int k = r & 3; /* 1, 2, 3, then 0 (unknown) last */
    if (!t->drop_by[k]) continue;
    nsp_sbuf_printf(b, "%s%s", first ? "" : ", ", why[k]);
    first = 0;
  }
  if (first) nsp_sbuf_printf(b, "%s", why[0]);
}

/* ---- re-reading traces for details ------------------------------------ */

int nsp_an_reread_calls(struct nsp_job *job, void *req, size_t n, size_t size, size_t (*trace_of)(const void *),
                        const char *what, nsp_an_reread_fn on_call, void *arg) {
  char *base = req;
  int ret = 0;
  for (size_t i = 0; i < n && !ret;) {
    size_t trace = trace_of(base + i * size), j = i;
    while (j < n && trace_of(base + j * size) == trace) j++;
    const struct nsp_trace *t = job->traces[trace];
    char err[256];
    struct nsp_reader *r = nsp_an_reopen(t, err, sizeof err);
    if (!r) {
      ret = nsp_job_notef(job, "%s: could not be read again for %s: %s", t->info.path, what, err);
      i = j;
      continue;
    }
    struct nsp_rec rec;
    size_t found = 0;
    while (!ret && found < j - i && nsp_reader_next(r, &rec) == 1) {
      if (rec.kind != NSP_REC_CALL) continue;
      int got = on_call(t, &rec, base + i * size, j - i, arg);
      if (got < 0) ret = got;
      else found += (size_t)got;
    }
    nsp_reader_destroy(r);
    i = j;
  }
  return ret;
}

/* ---- sides grouped by a key ------------------------------------------- */

static int cmp_rank_trace(const void *pa, const void *pb, void *ctx) {
  const struct nsp_job *job = ctx;
  const struct nsp_trace *a = job->traces[*(const size_t *)pa], *b = job->traces[*(const size_t *)pb];
  if (a->info.rank != b->info.rank) return a->info.rank < b->info.rank ? -1 : 1;
  return *(const size_t *)pa < *(const size_t *)pb ? -1 : 1;
}

int nsp_an_sides_by_key(struct nsp_job *job, struct nsp_finding_priv *f, const size_t *ti, size_t n,
                        int (*key)(const struct nsp_trace *t),
                        int (*proc)(struct nsp_job *job, struct nsp_proc *p, const struct nsp_trace *t),
                        int (*side_done)(struct nsp_job *job, struct nsp_side *side)) {
  int *keys = malloc(n * sizeof *keys);
  size_t *group = malloc(n * sizeof *group), nkeys = 0;
  int ret = keys && group ? 0 : NSP_AN_ENOMEM;
  for (size_t i = 1; !ret && i < n; i++) {
    int k = key(job->traces[ti[i]]);
    size_t c = 0;
    while (c < nkeys && keys[c] != k) c++;
    if (c == nkeys) keys[nkeys++] = k;
  }
  if (!ret) ret = nsp_an_alloc_sides(f, 1 + nkeys);
  for (size_t s = 0; !ret && s <= nkeys; s++) {
    size_t gn = 0;
    if (s == 0) {
      group[gn++] = ti[0];
    } else {
      for (size_t i = 1; i < n; i++)
        if (key(job->traces[ti[i]]) == keys[s - 1]) group[gn++] = ti[i];
      qsort_r(group, gn, sizeof *group, cmp_rank_trace, job);
    }
    struct nsp_side *side = &f->sides[s];
    int *ranks;
    struct nsp_proc *procs;
    ret = nsp_an_side_procs(side, gn, &ranks, &procs);
    for (size_t i = 0; i < gn && !ret; i++) {
      const struct nsp_trace *t = job->traces[group[i]];
      nsp_an_set_proc(job, &procs[i], &ranks[i], t->info.rank, group[i]);
      ret = proc(job, &procs[i], t);
    }
    if (!ret) ret = side_done(job, side);
  }
  free(keys);
  free(group);
  return ret;
}
