/* nsp_an_hints.c - the hint table for errors: one row per known failure
 * (a last-error pattern or a bare result code), each with a likely cause,
 * what to check, and the settings whose values the hint shows per rank.
 * Rows are matched in order; the tests cover every row. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "nsp_an_finding.h"
#include "nsp_names.h"

#define P(...) ((const char *const[]){__VA_ARGS__, NULL})

static const struct nsp_hint nsp_hints[] = {
    /* Patterns of ncclGetLastError text (case-insensitive), most specific first. */
    {"duplicate-gpu", -1, P("Duplicate GPU detected"), 0,
     "two ranks of one communicator were given the same GPU",
     "CUDA_VISIBLE_DEVICES and the LOCAL_RANK -> device mapping on that node (see env-duplicate-gpu)",
     "CUDA_VISIBLE_DEVICES LOCAL_RANK"},
    {"cuda-driver-too-old", -1, P("driver version is insufficient"), 0,
     "the CUDA runtime that NCCL uses is newer than the node's driver",
     "the driver (nvidia-smi) against the CUDA version of the wheel or container on that node", NULL},
    {"out-of-memory", -1, P("out of memory", "cudaErrorMemoryAllocation"), 0,
     "a GPU or host allocation failed (NCCL allocates buffers at init and per channel)",
     "memory in use on that GPU before the failure, other processes on it, NCCL_BUFFSIZE", "NCCL_BUFFSIZE"},
    {"cuda-failure", -1, P("Cuda failure", "CUDA error", "unhandled cuda error"), 0,
     "a CUDA call inside NCCL failed",
     "dmesg for Xid errors on that node, an earlier CUDA error (an illegal access in another kernel "
     "surfaces here), nvidia-smi",
     "CUDA_VISIBLE_DEVICES"},
    {"timeout", -1, P("Watchdog", "timeout", "timed out"), 0,
     "a collective waited too long: some rank did not arrive, or the network stalled",
     "which rank never arrived - the hang or stopped-early findings name it and what it did last, when "
     "the report has them; else the ranks' own logs - before raising any timeout", NULL},
    {"net-ib", -1, P("NET/IB", "ibv_", "IBV_WC", "mlx5"), 0,
     "an InfiniBand/RoCE transfer failed: a link flapped, a peer died, or the HCA/GID setup is wrong",
     "ibstat and link counters on both hosts, the peer's first error, NCCL_IB_HCA and NCCL_IB_GID_INDEX",
     "NCCL_IB_HCA NCCL_IB_GID_INDEX NCCL_IB_DISABLE NCCL_SOCKET_IFNAME"},
    {"net-connection-lost", -1, P("connection reset", "closed by peer", "remote process exited", "connection closed",
                                  "broken pipe"), 0,
     "the connection to a peer was lost: the peer process died or the network dropped",
     "the other ranks' first errors and exit status (OOM killer, segfault, a Python exception), then the "
     "network path between the hosts",
     "NCCL_SOCKET_IFNAME NCCL_IB_DISABLE"},
    {"comm-aborted", -1, P("abort"), 0,
     "the communicator was aborted, by the watchdog or after an error on another rank",
     "the first error elsewhere: this one is usually its consequence", NULL},
    {"bootstrap", -1, P("bootstrap", "connect", "socket"), 0,
     "ranks could not reach each other while setting up: a wrong network interface, a firewall, or an "
     "unreachable rendezvous address",
     "that NCCL_SOCKET_IFNAME names an interface that routes between the hosts (not lo or docker0) and "
     "matches on every rank, MASTER_ADDR/MASTER_PORT, firewalls",
     "NCCL_SOCKET_IFNAME NCCL_IB_DISABLE NCCL_COMM_ID"},
    /* Version skew explains invalid usage better than the code alone. */
    {"version-skew", ncclInvalidUsage, NULL, 1,
     "ranks run different NCCL versions (see env-nccl-version), whose protocols do not match",
     "that every node loads the same libnccl (LD_LIBRARY_PATH, wheels, containers)", NULL},
    /* Bare result codes. */
    {"result-cuda-error", ncclUnhandledCudaError, NULL, 0, "a CUDA call failed under NCCL",
     "dmesg for Xid errors, out-of-memory, or an earlier CUDA error on that GPU", "CUDA_VISIBLE_DEVICES"},
    {"result-system-error", ncclSystemError, NULL, 0,
     "a system call or the network failed: a peer process died, a link dropped, or a socket timed out",
     "the peers' first errors, then NCCL_DEBUG=INFO output of that rank", "NCCL_SOCKET_IFNAME NCCL_IB_DISABLE"},
    {"result-internal-error", ncclInternalError, NULL, 0, "NCCL hit an internal error",
     "NCCL_DEBUG=INFO output on that rank and the NCCL version (a known bug?)", NULL},
    {"result-invalid-argument", ncclInvalidArgument, NULL, 0,
     "NCCL rejected an argument (a bad pointer, count or dtype, or a destroyed communicator)",
     "the arguments of that call and the communicator's lifetime", NULL},
    {"result-invalid-usage", ncclInvalidUsage, NULL, 0,
     "NCCL reports invalid usage: calls in the wrong order, a communicator used after finalize, or ranks that "
     "disagree on a call",
     "the order of communicator init/destroy and group calls on that rank; mismatches in this report", NULL},
    {"result-remote-error", ncclRemoteError, NULL, 0, "a remote peer reported the failure",
     "the other ranks' first errors: the origin is elsewhere", NULL},
    {"result-timeout", NSP_NCCL_TIMEOUT, NULL, 0, "NCCL timed out waiting for peers: some rank did not arrive",
     "the hang findings: which ranks never arrived", NULL},
    {"result-unknown", -1, NULL, 0, "a result code this ncclspy does not know (a newer NCCL?)",
     "NCCL's release notes for the code and NCCL_DEBUG=INFO output", NULL},
};

#undef P

size_t nsp_hint_count(void) { return sizeof nsp_hints / sizeof *nsp_hints; }
const struct nsp_hint *nsp_hint_get(size_t i) { return i < nsp_hint_count() ? &nsp_hints[i] : NULL; }

size_t nsp_hint_match(int result, const char *last_error, int version_skew) {
  if (result == 0 || result == ncclInProgress) return SIZE_MAX;
  for (size_t i = 0; i < nsp_hint_count(); i++) {
    const struct nsp_hint *h = &nsp_hints[i];
    if (h->result >= 0 && h->result != result) continue;
    if (h->needs_version_skew && !version_skew) continue;
    if (h->patterns) {
      int hit = 0;
      for (size_t k = 0; h->patterns[k] && !hit; k++) hit = last_error && strcasestr(last_error, h->patterns[k]);
      if (!hit) continue;
    }
    return i;
  }
  return SIZE_MAX;
}

static int cmp_str_rank(const void *pa, const void *pb, void *ctx) {
  const struct nsp_job *job = ctx;
  const size_t *a = pa, *b = pb;
  /* value index (SIZE_MAX: unset) is a[1]; order by value, then rank */
  (void)job;
  if (a[1] != b[1]) return a[1] < b[1] ? -1 : 1;
  return a[2] < b[2] ? -1 : a[2] > b[2];
}

/* "NAME=v1 on ranks 0-1, unset on ranks 2-3": each rank's value of one
 * variable, grouped. */
static int put_setting(struct nsp_sbuf *b, struct nsp_job *job, const char *name) {
  size_t n = job->ntraces;
  if (!n) return 0;
  /* rows: trace, value id, rank */
  size_t *rows = malloc(n * 3 * sizeof *rows);
  const char **vals = malloc(n * sizeof *vals);
  int *ranks = malloc(n * sizeof *ranks);
  if (!rows || !vals || !ranks) {
    free(rows);
    free(vals);
    free(ranks);
    return NSP_AN_ENOMEM;
  }
  size_t nv = 0, nr = 0;
  for (size_t i = 0; i < n; i++) {
    if (!nsp_an_is_rank(job, i)) continue; /* a launcher: no rank */
    const char *v = nsp_an_env_value(&job->traces[i]->info, name);
    size_t id = SIZE_MAX;
    if (v) {
      for (size_t k = 0; k < nv && id == SIZE_MAX; k++)
        if (!strcmp(vals[k], v)) id = k;
      if (id == SIZE_MAX) {
        vals[nv] = v;
        id = nv++;
      }
    }
    rows[3 * nr] = i;
    rows[3 * nr + 1] = id;
    rows[3 * nr + 2] = (size_t)(int64_t)job->traces[i]->info.rank;
    nr++;
  }
  n = nr;
  qsort_r(rows, n, 3 * sizeof *rows, cmp_str_rank, job);
  nsp_sbuf_printf(b, "; %s", name);
  for (size_t i = 0; i < n;) {
    size_t j = i, k = 0;
    while (j < n && rows[3 * j + 1] == rows[3 * i + 1]) ranks[k++] = job->traces[rows[3 * j++]]->info.rank;
    qsort(ranks, k, sizeof *ranks, nsp_an_cmp_int);
    size_t id = rows[3 * i + 1];
    /* Job ranks: "job ranks" where a communicator numbers them otherwise. */
    if (id == SIZE_MAX) nsp_sbuf_printf(b, "%s unset on ", i ? "," : ":");
    else nsp_sbuf_printf(b, "%s %s on ", i ? "," : ":", vals[id]);
    nsp_an_put_job_ranks(b, job, ranks, k);
    i = j;
  }
  free(rows);
  free(vals);
  free(ranks);
  return 0;
}

/* A cause that begins "a collective" is about the failing call: when that
 * was a send/recv or another call (a group's end, an init), its words. */
#define NSP_CAUSE_COLL "a collective"
static void put_cause(struct nsp_sbuf *b, const char *cause, const struct nsp_call *c) {
  size_t n = strlen(NSP_CAUSE_COLL);
  int k = c->api >= 0 ? nsp_api_kind(c->api) : -1;
  if (strncmp(cause, NSP_CAUSE_COLL, n) || k == NSP_K_COLL) {
    nsp_sbuf_printf(b, "%s", cause);
    return;
  }
  nsp_sbuf_printf(b, "%s%s", k == NSP_K_P2P ? "a send/recv" : "a call", cause + n);
}

int nsp_an_error_hint(struct nsp_job *job, struct nsp_finding_priv *f) {
  if (!f->pub.nsides || !f->sides[0].nranks) return 0;
  const struct nsp_call *c = &f->sides[0].procs[0].call;
  size_t row = nsp_hint_match(c->result, c->last_error, job->version_skew);
  if (row == SIZE_MAX) return 0;
  const struct nsp_hint *h = &nsp_hints[row];
  struct nsp_sbuf b = {0};
  put_cause(&b, h->cause, c);
  nsp_sbuf_printf(&b, " - check %s", h->check);
  if (h->settings) {
    char names[256];
    snprintf(names, sizeof names, "%s", h->settings);
    char *save = NULL;
    for (char *w = strtok_r(names, " ", &save); w; w = strtok_r(NULL, " ", &save))
      if (put_setting(&b, job, w) < 0) b.oom = 1;
  }
  nsp_sbuf_printf(&b, "; %s", nsp_finding_kind_hint(NSP_FIND_ERROR));
  free(f->hint_owned);
  f->hint_owned = nsp_sbuf_take(&b);
  if (!f->hint_owned) return NSP_AN_ENOMEM;
  f->pub.hint = f->hint_owned;
  f->pub.hint_id = h->id;
  return 0;
}
