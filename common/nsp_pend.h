/* nsp_pend.h - calls enqueued and not yet completed, per process: the
 * analyzer's completion matching (analyzer/model/nsp_an_load.c) and the
 * index the trace writers keep (nsp_index.c) are the same table, so the
 * index's anchors say exactly what the analyzer's table would hold. */
#ifndef NSP_PEND_H
#define NSP_PEND_H

#include <stddef.h>
#include <stdint.h>

#include "nsp_record.h"
#include "nsp_u64map.h"

enum { NSP_PEND_FREE, NSP_PEND_WAIT, NSP_PEND_EARLY, NSP_PEND_ABANDONED, NSP_PEND_FAILED };

/* One call enqueued and not (yet) completed, keyed by (local comm, api,
 * seq, peer) as its COMPLETION names it. */
struct nsp_pend {
  uint64_t seq, group_id, count, t_enter; /* t_enter: monotonic ns */
  uint64_t t_exit;      /* when the call returned, monotonic ns (the calls walk) */
  uint64_t stream;
  uint32_t local, site;
  uint32_t pysite;      /* its Python call site (format 1.6); 0 none */
  int32_t api, peer, dtype, redop;
  int32_t result;       /* what the call returned (ncclSuccess, ncclInProgress) */
  uint8_t state;        /* NSP_PEND_* */
  uint32_t frame;       /* the table's frame when the entry was made (nsp_index.c's anchors; 0 for the analyzer) */
  uint32_t tag;         /* the caller's own, kept as it is (perf: the call's line); nsp_pend_from_call sets 0 */
  size_t gprev, gnext;  /* calls of the same group; SIZE_MAX ends */
};
/* A slot of the key index: entry index + 1 (0 empty) and the low 32 bits
 * of the key's hash, so a probe compares keys only when those agree and
 * a deletion finds each entry's home slot without reading the entry. */
struct nsp_pend_slot {
  uint32_t idx1, hash;
};
struct nsp_pend_tab {
  struct nsp_pend *v;
  size_t n, cap, free_head;
  struct nsp_pend_slot *slot; /* open addressing over v, linear probing */
  size_t nslot, used;
  struct nsp_u64map group;      /* group id -> first waiting call */
  struct nsp_u64map done_group; /* group completions seen before their calls */
  size_t live;
  int overflow;         /* stopped growing: later calls count as completed */
  uint32_t frame;       /* stamped on entries made from now on (nsp_index.c: the data frame being written) */
  uint32_t early_min;   /* least frame of the early completions calls have cancelled since the
                         * caller set it to UINT32_MAX (nsp_index.c) */
};
/* The entry of a CALL record (rec->kind NSP_REC_CALL): its key, arguments,
 * group, stream, call site, result, entry and exit times; state
 * NSP_PEND_FREE. */
void nsp_pend_from_call(struct nsp_pend *e, const struct nsp_rec *rec);
/* A failed outermost ncclGroupEnd's calls never ran and the shim writes
 * no completion for them: *done becomes the error COMPLETION that ends
 * every call of group `group_id`, for nsp_pend_done. */
void nsp_pend_group_failed(struct nsp_rec *done, uint64_t group_id);
void nsp_pend_init(struct nsp_pend_tab *t);
void nsp_pend_free(struct nsp_pend_tab *t);
/* A call was enqueued.  Returns 1 when it now waits, 0 when it is already
 * complete (its completion came first) or not tracked, -1 (out of memory). */
int nsp_pend_call(struct nsp_pend_tab *t, const struct nsp_pend *e);
/* cb sees each call a COMPLETION record completes, before it leaves the table. */
typedef void (*nsp_pend_cb)(void *ctx, const struct nsp_pend *e, const struct nsp_rec *done);
/* A COMPLETION record (kind NSP_REC_COMPLETION): completes the call it
 * names, or every waiting call of its group; NSP_DONE_ERROR/ABANDONED
 * without NSP_DONE_OK leave the calls as never completed, with that state.
 * Returns 0 or -1 (out of memory). */
int nsp_pend_done(struct nsp_pend_tab *t, const struct nsp_rec *rec, nsp_pend_cb cb, void *ctx);
/* True when the call with this key is in the table and not complete. */
int nsp_pend_waiting(const struct nsp_pend_tab *t, uint32_t local, int32_t api, uint64_t seq, int32_t peer);

#endif /* NSP_PEND_H */
