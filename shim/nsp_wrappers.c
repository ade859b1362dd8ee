/* nsp_wrappers.c - one wrapper per NCCL entry point (NSP_NCCL_APIS).
 *
 * Each wrapper: find the real function (a wrapper whose real function
 * is absent returns ncclInvalidUsage, warned once); pass straight
 * through when NCCL called itself (nsp_wrappers_depth); otherwise time
 * the real call, then build a record in the ring.  The caller gets the
 * real call's return value and errno untouched; nothing here waits on
 * disk or locks on the collective path. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nsp_hash.h"
#include "nsp_names.h"
#include "nsp_shim.h"

#define NSP_EXPORT __attribute__((visibility("default")))

NSP_TLS int nsp_wrappers_depth;
static NSP_TLS uint32_t nsp_group_depth;
static NSP_TLS uint64_t nsp_group_id;
static _Atomic uint64_t nsp_group_counter;
static _Atomic uint64_t nsp_initall_counter;

/* Function pointer types: nsp_fn_AllReduce, ... */
#define NSP_FN_TYPE_(name, kind, ret, params, args, since, op) typedef NSP_RET_##ret(*nsp_fn_##name) params;
NSP_NCCL_APIS(NSP_FN_TYPE_)
#undef NSP_FN_TYPE_

/* Our exported prototypes (the exported set is exactly NSP_NCCL_APIS). */
NSP_NCCL_DECLARE(nccl)

#define REAL(name) ((nsp_fn_##name)nsp_resolve(NSP_API_##name))

/* Text of NCCL's last error, copied for a record (NULL on success). */
static char *last_error_text(ncclComm_t comm, int result) {
  if (result == ncclSuccess || result == ncclInProgress) return NULL;
  nsp_fn_GetLastError f = REAL(GetLastError);
  if (!f) return NULL;
  nsp_wrappers_depth++;
  const char *s = f(comm);
  nsp_wrappers_depth--;
  return s && *s ? nsp_ring_strdup(s) : NULL;
}

/* Fills rank, nranks and device of a communicator from NCCL itself; they
 * may not be known yet while a non-blocking init runs. */
static int query_comm(ncclComm_t comm, int *rank, int *nranks, int *device) {
  nsp_fn_CommUserRank fr = REAL(CommUserRank);
  nsp_fn_CommCount fc = REAL(CommCount);
  nsp_fn_CommCuDevice fd = REAL(CommCuDevice);
  if (!fr || !fc) return -1;
  nsp_wrappers_depth++;
  int ok = fr(comm, rank) == ncclSuccess && fc(comm, nranks) == ncclSuccess;
  if (ok && fd && fd(comm, device) != ncclSuccess) *device = -1;
  nsp_wrappers_depth--;
  return ok ? 0 : -1;
}

/* commName from a config, when the config's version and size hold it
 * (ncclConfig_t is versioned by `size`; commName since NCCL 2.17). */
static const char *config_comm_name(const ncclConfig_t *config) {
  if (!config || config->magic != 0xcafebeef) return NULL;
  if (config->size < offsetof(ncclConfig_t, commName) + sizeof(config->commName)) return NULL;
  if (config->version < 21700) return NULL;
  return config->commName;
}

/* Writes a COMM record.  c may be NULL (failed init, no-color split). */
static void record_comm(int api, struct nsp_comm *c, uint64_t id, int rank, int nranks, int device,
                        uint64_t parent_id, int color, int key, uint32_t split_index,
                        const char *comm_name, ncclComm_t handle, int result, uint64_t t0,
                        uint64_t t1, uint16_t flags) {
  size_t nlen = comm_name ? strnlen(comm_name, 256) : 0;
  char gpu[3][64] = {"", "", ""};
  /* The GPU too when the init failed: "two ranks on one GPU" is a reason
   * inits fail, and then only the calling thread's device says which. */
  nsp_cuda_identity(c && device >= 0 ? device : -1, gpu[0], gpu[1], gpu[2]);
  struct nsp_rec_ext *x = calloc(1, sizeof *x + nlen + 1 + sizeof gpu);
  struct nsp_rec *r = x ? nsp_ring_reserve() : NULL;
  if (!r) {
    free(x);
    return;
  }
  char *name = (char *)(x + 1);
  if (nlen) memcpy(name, comm_name, nlen);
  name[nlen] = 0;
  char *ids = name + nlen + 1;
  memcpy(ids, gpu, sizeof gpu);
  x->gpu_uuid = ids;
  x->gpu_pci_bus_id = ids + 64;
  x->gpu_name = ids + 128;
  x->comm_id = id;
  x->rank = rank;
  x->nranks = nranks;
  x->device = device;
  x->parent_id = parent_id;
  x->color = color;
  x->key = key;
  x->split_index = split_index;
  x->comm_name = name;
  x->handle = (uint64_t)(uintptr_t)handle;
  r->kind = NSP_REC_COMM;
  r->api = (uint8_t)api;
  r->comm = c ? c->idx : 0;
  r->result = result;
  r->t_enter = t0;
  r->t_exit = t1;
  r->flags = flags;
  r->last_error = last_error_text(NULL, result);
  r->ext = x;
  nsp_ring_commit(r);
}

/* A communicator was made: register it and record it. */
static void comm_made(int api, ncclComm_t handle, uint64_t id, int rank, int nranks,
                      uint64_t parent_id, int color, int key, uint32_t split_index,
                      const ncclConfig_t *config, int result, uint64_t t0, uint64_t t1) {
  struct nsp_comm *c = NULL;
  int device = -1;
  uint16_t flags = 0;
  if (handle && (result == ncclSuccess || result == ncclInProgress)) {
    if (result == ncclInProgress || query_comm(handle, &rank, &nranks, &device) < 0)
      flags |= NSP_COMM_PENDING;
    c = nsp_comm_add(handle, id, rank, nranks);
    if (c) {
      c->device = device;
      atomic_store(&c->pending, flags & NSP_COMM_PENDING ? 1 : 0);
      if (flags & NSP_COMM_PENDING) {
        atomic_fetch_add(&nsp_comm_npending, 1);
        nsp_done_poller_start(); /* follows it until it settles */
      }
    }
  } else if (api == NSP_API_CommSplit && color == NCCL_SPLIT_NOCOLOR) {
    flags |= NSP_COMM_NOCOLOR;
  }
  record_comm(api, c, id, rank, nranks, device, parent_id, color, key, split_index,
              config_comm_name(config), handle, result, t0, t1, flags);
}

/* A non-blocking init finished since we last looked: record what NCCL
 * now knows. */
static void comm_settle(struct nsp_comm *c) {
  int rank, nranks, device = -1;
  if (query_comm(c->handle, &rank, &nranks, &device) < 0) return;
  if (!atomic_exchange(&c->pending, 0)) return;
  atomic_fetch_sub(&nsp_comm_npending, 1);
  c->rank = rank;
  c->nranks = nranks;
  c->device = device;
  uint64_t t = nsp_now_ns();
  record_comm(NSP_API_CommInitRankConfig, c, c->id, rank, nranks, device, 0, -1, -1, 0, NULL,
              c->handle, ncclSuccess, t, t, 0);
}

/* Records one CALL.  peer: root or peer rank, -1 none. */
static void record_call_c(int api, struct nsp_comm *c, ncclComm_t comm, const void *sendbuff,
                          const void *recvbuff, size_t count, int dtype, int redop, int peer,
                          cudaStream_t stream, int result, uint64_t t0, uint64_t t1,
                          struct nsp_track *trk, void *caller, uint32_t pysite) {
  if (c && NSP_UNLIKELY(atomic_load_explicit(&c->pending, memory_order_relaxed))) comm_settle(c);
  uint64_t seq = 0;
  int kind = nsp_api_kind(api);
  /* A call NCCL refused (an error other than ncclInProgress) was not
   * enqueued: it takes no sequence number, or every later call of this
   * rank would pair with the next one of its peers.  It is recorded with
   * the number it would have had (format 1.4). */
  int enqueued = result == ncclSuccess || result == ncclInProgress;
  if (c && kind == NSP_K_COLL)
    seq = enqueued ? atomic_fetch_add_explicit(&c->coll_seq, 1, memory_order_relaxed) + 1
                   : atomic_load_explicit(&c->coll_seq, memory_order_relaxed) + 1;
  else if (c && kind == NSP_K_P2P) seq = nsp_comm_p2p_seq(c, peer, api == NSP_API_Recv, enqueued);
  /* Its call site's record, when new, goes in the ring before the call. */
  uint32_t site = kind == NSP_K_COLL || kind == NSP_K_P2P ? nsp_site_current(result != ncclSuccess, caller) : 0;
  /* The call's record goes in the ring before its completion can. */
  struct nsp_rec *r = nsp_ring_reserve();
  if (!r) {
    if (trk) nsp_done_after(trk, stream, c ? c->idx : 0, api, seq, peer, result, t1);
    return;
  }
  r->kind = NSP_REC_CALL;
  r->api = (uint8_t)api;
  r->comm = c ? c->idx : 0;
  r->result = result;
  r->peer = peer;
  r->dtype = dtype;
  r->redop = redop;
  r->group_depth = nsp_group_depth;
  r->group_id = nsp_group_id;
  r->seq = seq;
  r->count = count;
  r->stream = (uint64_t)(uintptr_t)stream;
  r->sendbuff = (uint64_t)(uintptr_t)sendbuff;
  r->recvbuff = (uint64_t)(uintptr_t)recvbuff;
  r->t_enter = t0;
  r->t_exit = t1;
  r->site = site;
  nsp_rec_call_set_pysite(r, pysite);
  r->flags = (sendbuff && sendbuff == recvbuff ? NSP_CALL_IN_PLACE : 0) |
             (trk && trk->off ? NSP_CALL_UNTRACKED : 0);
  if (NSP_UNLIKELY(result != ncclSuccess)) r->last_error = last_error_text(comm, result);
  nsp_ring_commit(r);
  if (trk) nsp_done_after(trk, stream, c ? c->idx : 0, api, seq, peer, result, t1);
}

static void record_call(int api, ncclComm_t comm, const void *sendbuff, const void *recvbuff,
                        size_t count, int dtype, int redop, int peer, cudaStream_t stream,
                        int result, uint64_t t0, uint64_t t1, struct nsp_track *trk) {
  record_call_c(api, nsp_comm_find(comm), comm, sendbuff, recvbuff, count, dtype, redop, peer,
                stream, result, t0, t1, trk, NULL, 0);
}

/* The one path of every recording wrapper: find the real function (a
 * wrapper whose real function is absent returns ncclInvalidUsage); pass
 * straight through when NCCL called itself (nsp_wrappers_depth); run
 * ENTER, what must precede the real call; show the call in flight, when
 * SHOW (nsp_flight_begin: FLIGHT fills `fl`, whose t_enter and api are
 * set, with what the call is); time the real call; then run RECORD with
 * `res`, `t0` and `t1` in scope.  The caller gets the real call's result
 * and errno.  What every recorded call must do at its entry, before the
 * real call, belongs here, after ENTER: no wrapper bypasses this. */
#define NSP_CALL_SHOW(name, args, ENTER, SHOW, FLIGHT, RECORD)          \
  nsp_fn_##name real = REAL(name);                                      \
  if (NSP_UNLIKELY(!real)) return ncclInvalidUsage;                     \
  if (nsp_wrappers_depth) return real args;                             \
  ENTER;                                                                \
  uint64_t t0 = nsp_now_ns();                                           \
  struct nsp_ring_inflight *fl_entry = (SHOW) ? nsp_flight_begin() : NULL; \
  if (fl_entry) {                                                       \
    struct nsp_inflight_call *fl = &fl_entry->call;                     \
    fl->t_enter = t0;                                                   \
    fl->api = NSP_API_##name;                                           \
    FLIGHT;                                                             \
    nsp_flight_publish(fl_entry);                                       \
  }                                                                     \
  nsp_wrappers_depth++;                                                 \
  ncclResult_t res = real args;                                         \
  nsp_wrappers_depth--;                                                 \
  int saved_errno = errno;                                              \
  uint64_t t1 = nsp_now_ns();                                           \
  nsp_flight_leave(fl_entry);                                           \
  RECORD;                                                               \
  errno = saved_errno;                                                  \
  return res
#define NSP_CALL_WITH(name, args, ENTER, FLIGHT, RECORD) NSP_CALL_SHOW(name, args, ENTER, 1, FLIGHT, RECORD)

/* Most wrappers: the first recorded call starts the writer; the call in
 * flight shows its entry point and, given, its communicator. */
#define NSP_CALL_C(name, args, cm, RECORD) \
  NSP_CALL_WITH(name, args, nsp_writer_ensure_started(), flight_comm(fl, (cm)), RECORD)
#define NSP_CALL(name, args, RECORD) NSP_CALL_C(name, args, NULL, RECORD)

/* The in-flight entry's communicator and group (NULL: none). */
static inline void flight_comm(struct nsp_inflight_call *fl, const struct nsp_comm *c) {
  fl->comm = c ? c->idx : 0;
  fl->group_id = nsp_group_id;
  fl->group_depth = nsp_group_depth;
}

/* A collective's or send/recv's entry: what its CALL record will say,
 * the seq it will take included (NCCL may refuse it: then it takes none). */
static inline void flight_work(struct nsp_inflight_call *fl, int kind, struct nsp_comm *c, const void *sendbuff,
                               const void *recvbuff, size_t count, int dtype, int redop, int peer) {
  (void)sendbuff;
  (void)recvbuff;
  flight_comm(fl, c);
  fl->count = count;
  fl->dtype = dtype;
  fl->redop = redop;
  fl->peer = peer;
  if (!c) fl->seq = 0;
  else if (kind == NSP_K_COLL) fl->seq = atomic_load_explicit(&c->coll_seq, memory_order_relaxed) + 1;
  else fl->seq = nsp_comm_p2p_seq(c, peer, fl->api == NSP_API_Recv, 0);
}

/* ENTER of work enqueued on a stream: events go around the real call so
 * the poller can tell when it ran; RECORD has `c` (the communicator) and
 * `trk` in scope too. */
#define NSP_TRACK_ENTER(args, stream)                                   \
  nsp_writer_ensure_started();                                          \
  struct nsp_track trk_;                                                \
  struct nsp_track *trk = &trk_;                                        \
  struct nsp_comm *c = nsp_comm_find(comm);                             \
  int mode = nsp_comm_mode(c);                                          \
  if (NSP_UNLIKELY(mode == NSP_MODE_PASS)) return real args;            \
  /* Python call site: at the entry, its record before the in-flight    \
   * entry names it.  Benchmarks: a bench-mode file's second byte 'p'   \
   * leaves it out (bench/nsp_bench_py.c). */                           \
  uint32_t pysite = NSP_UNLIKELY(c && c->bench_mode && c->bench_mode[1] == 'p') ? 0 : nsp_pysite_current(); \
  if (mode == NSP_MODE_RECORD) {                                        \
    memset(trk, 0, sizeof *trk);                                        \
    trk->off = 1;                                                       \
  } else {                                                              \
    nsp_done_before(trk, stream, nsp_group_depth > 0,                   \
                    mode != NSP_MODE_TIMED);                            \
    if (NSP_UNLIKELY(mode > NSP_MODE_TIMED)) nsp_done_bench(trk, mode);  \
  }

/* ---- collectives and send/recv: made from the entry-point table ---- */

/* The arguments a CALL record takes its fields from, by the row's op
 * column (NSP_COLL in common/nsp_nccl_apis.h): buffers, count, dtype,
 * redop, root or peer. */
#define NSP_CALL_FIELDS_(as, words, send, recv, count, has_redop, redop, has_root, peer, size, \
                         busbw)                                                                \
  send, recv, count, datatype, redop, peer
/* The caller is the wrapper's return address: the call site's cache key. */
#define NSP_WORK_WRAPPER_(name, kind, params, args, op)                                        \
  NSP_EXPORT ncclResult_t nccl##name params {                                                  \
    NSP_CALL_WITH(name, args, NSP_TRACK_ENTER(args, stream),                                   \
                  (flight_work(fl, kind, c, NSP_APPLY(NSP_CALL_FIELDS_, op)), fl->pysite = pysite), \
                  record_call_c(NSP_API_##name, c, comm, NSP_APPLY(NSP_CALL_FIELDS_, op), stream, \
                                res, t0, t1, trk, __builtin_return_address(0), pysite));       \
  }
/* One wrapper per row of kind NSP_K_COLL or NSP_K_P2P; the other kinds'
 * wrappers are written out below. */
#define NSP_WRAPPER_(name, kind, ret, params, args, since, op) NSP_WRAPPER_##kind(name, kind, params, args, op)
#define NSP_WRAPPER_NSP_K_COLL NSP_WORK_WRAPPER_
#define NSP_WRAPPER_NSP_K_P2P NSP_WORK_WRAPPER_
#define NSP_WRAPPER_NSP_K_GROUP(...)
#define NSP_WRAPPER_NSP_K_INIT(...)
#define NSP_WRAPPER_NSP_K_END(...)
#define NSP_WRAPPER_NSP_K_REDOP(...)
#define NSP_WRAPPER_NSP_K_QUERY(...)
#define NSP_WRAPPER_NSP_K_OTHER(...)
NSP_NCCL_APIS(NSP_WRAPPER_)

/* ---- groups ---- */

NSP_EXPORT ncclResult_t ncclGroupStart(void) {
  NSP_CALL(GroupStart, (), {
    if (res == ncclSuccess && nsp_group_depth++ == 0)
      nsp_group_id = atomic_fetch_add_explicit(&nsp_group_counter, 1, memory_order_relaxed) + 1;
    record_call(NSP_API_GroupStart, NULL, NULL, NULL, 0, -1, -1, -1, NULL, res, t0, t1, NULL);
  });
}

/* GroupEnd and GroupSimulateEnd both close the innermost group. */
static void group_end(int api, ncclResult_t res, uint64_t t0, uint64_t t1) {
  record_call(api, NULL, NULL, NULL, 0, -1, -1, -1, NULL, res, t0, t1, NULL);
  if (nsp_group_depth > 0 && --nsp_group_depth == 0) nsp_group_id = 0;
}

/* The outermost ncclGroupEnd launches the group's work: its events go on
 * every stream the group's calls used. */
#define NSP_GROUP_END_ENTER                                             \
  nsp_writer_ensure_started();                                          \
  struct nsp_track_group g;                                             \
  int outermost = nsp_group_depth == 1;                                 \
  uint64_t group_id = nsp_group_id;                                     \
  if (outermost) nsp_done_group_before(&g)

NSP_EXPORT ncclResult_t ncclGroupEnd(void) {
  NSP_CALL_WITH(GroupEnd, (), NSP_GROUP_END_ENTER, flight_comm(fl, NULL), {
    group_end(NSP_API_GroupEnd, res, t0, t1);
    if (outermost) nsp_done_group_after(&g, group_id, res);
  });
}

/* Simulation launches nothing: the group's streams are forgotten. */
NSP_EXPORT ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t *simInfo) {
  NSP_CALL(GroupSimulateEnd, (simInfo), {
    if (nsp_group_depth == 1) nsp_done_group_discard();
    group_end(NSP_API_GroupSimulateEnd, res, t0, t1);
  });
}

/* ---- communicators ---- */

static uint64_t uid_hash(const ncclUniqueId *id) {
  return nsp_fnv1a(NSP_FNV_INIT, id->internal, sizeof id->internal);
}

/* Child id: hash of (parent id, the parent's split counter, color), the
 * same on every rank because splits are collective over the parent. */
static uint64_t child_hash(uint64_t parent, uint32_t index, int color, const char *tag) {
  uint64_t h = nsp_fnv1a(NSP_FNV_INIT, &parent, sizeof parent);
  h = nsp_fnv1a(h, &index, sizeof index);
  h = nsp_fnv1a(h, &color, sizeof color);
  return nsp_fnv1a(h, tag, strlen(tag));
}

static uint64_t scalable_hash(int nId, const ncclUniqueId *commIds) {
  uint64_t h = NSP_FNV_INIT;
  for (int i = 0; commIds && i < nId && i < 4096; i++)
    h = nsp_fnv1a(h, commIds[i].internal, sizeof commIds[i].internal);
  return h;
}

/* A communicator creation's entry: the id its COMM record will have and
 * what this rank asked for. */
static inline void flight_init(struct nsp_inflight_call *fl, uint64_t id, int rank, int nranks) {
  flight_comm(fl, NULL);
  fl->comm_id = id;
  fl->rank = rank;
  fl->nranks = nranks;
}

/* A split's or shrink's entry: the parent and which of its splits. */
static inline void flight_split(struct nsp_inflight_call *fl, const struct nsp_comm *parent, uint32_t index,
                                uint64_t child_id, int color, int key) {
  flight_comm(fl, parent);
  fl->parent_id = parent ? parent->id : 0;
  fl->split_index = index;
  fl->comm_id = child_id;
  fl->color = color;
  fl->key = key;
}

NSP_EXPORT ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId,
                                         int rank) {
  NSP_CALL_WITH(CommInitRank, (comm, nranks, commId, rank), nsp_writer_ensure_started(),
                flight_init(fl, uid_hash(&commId), rank, nranks),
           comm_made(NSP_API_CommInitRank, comm ? *comm : NULL, uid_hash(&commId), rank, nranks, 0,
                     -1, -1, 0, NULL, res, t0, t1));
}

NSP_EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId,
                                               int rank, ncclConfig_t *config) {
  NSP_CALL_WITH(CommInitRankConfig, (comm, nranks, commId, rank, config), nsp_writer_ensure_started(),
                flight_init(fl, uid_hash(&commId), rank, nranks),
           comm_made(NSP_API_CommInitRankConfig, comm ? *comm : NULL, uid_hash(&commId), rank,
                     nranks, 0, -1, -1, 0, config, res, t0, t1));
}

NSP_EXPORT ncclResult_t ncclCommInitRankScalable(ncclComm_t *newcomm, int nranks, int myrank,
                                                 int nId, ncclUniqueId *commIds,
                                                 ncclConfig_t *config) {
  NSP_CALL_WITH(CommInitRankScalable, (newcomm, nranks, myrank, nId, commIds, config),
                nsp_writer_ensure_started(), flight_init(fl, scalable_hash(nId, commIds), myrank, nranks), {
    uint64_t h = scalable_hash(nId, commIds);
    comm_made(NSP_API_CommInitRankScalable, newcomm ? *newcomm : NULL, h, myrank, nranks, 0, -1,
              -1, 0, config, res, t0, t1);
  });
}

NSP_EXPORT ncclResult_t ncclCommInitAll(ncclComm_t *comm, int ndev, const int *devlist) {
  NSP_CALL_WITH(CommInitAll, (comm, ndev, devlist), nsp_writer_ensure_started(),
                flight_init(fl, 0, -1, ndev), {
    /* One process owns every rank: the id only has to be unique. */
    uint64_t n = atomic_fetch_add(&nsp_initall_counter, 1);
    pid_t pid = getpid();
    uint64_t h = nsp_fnv1a(NSP_FNV_INIT, "initall", 7);
    h = nsp_fnv1a(nsp_fnv1a(h, &pid, sizeof pid), &n, sizeof n);
    h = nsp_fnv1a(h, &t0, sizeof t0);
    for (int i = 0; comm && i < ndev; i++)
      comm_made(NSP_API_CommInitAll, res == ncclSuccess ? comm[i] : NULL, h, i, ndev, 0, -1, -1, 0,
                NULL, res, t0, t1);
  });
}

NSP_EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
                                      ncclConfig_t *config) {
  struct nsp_comm *parent = nsp_wrappers_depth ? NULL : nsp_comm_find(comm);
  uint32_t index = parent ? atomic_fetch_add(&parent->split_count, 1) : 0;
  uint64_t pid = parent ? parent->id : 0;
  NSP_CALL_WITH(CommSplit, (comm, color, key, newcomm, config), nsp_writer_ensure_started(),
                flight_split(fl, parent, index, child_hash(pid, index, color, "split"), color, key), {
    comm_made(NSP_API_CommSplit, newcomm ? *newcomm : NULL, child_hash(pid, index, color, "split"),
              -1, -1, pid, color, key, index, config, res, t0, t1);
  });
}

NSP_EXPORT ncclResult_t ncclCommShrink(ncclComm_t comm, int *excludeRanksList,
                                       int excludeRanksCount, ncclComm_t *newcomm,
                                       ncclConfig_t *config, int shrinkFlags) {
  struct nsp_comm *parent = nsp_wrappers_depth ? NULL : nsp_comm_find(comm);
  uint32_t index = parent ? atomic_fetch_add(&parent->split_count, 1) : 0;
  uint64_t pid = parent ? parent->id : 0;
  uint64_t h = child_hash(pid, index, -1, "shrink");
  if (excludeRanksList && excludeRanksCount > 0)
    h = nsp_fnv1a(h, excludeRanksList, (size_t)excludeRanksCount * sizeof(int));
  NSP_CALL_WITH(CommShrink, (comm, excludeRanksList, excludeRanksCount, newcomm, config, shrinkFlags),
                nsp_writer_ensure_started(), flight_split(fl, parent, index, h, -1, -1), {
    comm_made(NSP_API_CommShrink, newcomm ? *newcomm : NULL, h, -1, -1, pid, -1, -1, index, config,
              res, t0, t1);
  });
}

/* Finalize, destroy, abort, revoke: one COMM_END record.  The handle is
 * dead after destroy/abort, so the error text is asked without it. */
static void comm_end(int api, ncclComm_t comm, ncclResult_t res, uint64_t t0, uint64_t t1,
                     struct nsp_comm *c) {
  struct nsp_rec *r = nsp_ring_reserve();
  if (!r) return;
  r->kind = NSP_REC_COMM_END;
  r->api = (uint8_t)api;
  r->comm = c ? c->idx : 0;
  r->result = res;
  r->t_enter = t0;
  r->t_exit = t1;
  r->last_error = last_error_text(api == NSP_API_CommFinalize ? comm : NULL, res);
  nsp_ring_commit(r);
}

#define NSP_END_WRAPPER(name, params, args)                                       \
  NSP_EXPORT ncclResult_t nccl##name params {                                     \
    struct nsp_comm *c = nsp_wrappers_depth ? NULL : nsp_comm_find(comm);         \
    /* Abort and revoke cut short what is in flight: say what that was. */        \
    if (c && (NSP_API_##name == NSP_API_CommAbort || NSP_API_##name == NSP_API_CommRevoke)) \
      nsp_done_abandon(c->idx);                                                   \
    NSP_CALL_C(name, args, c, comm_end(NSP_API_##name, comm, res, t0, t1, c));    \
  }
NSP_END_WRAPPER(CommFinalize, (ncclComm_t comm), (comm))
NSP_END_WRAPPER(CommDestroy, (ncclComm_t comm), (comm))
NSP_END_WRAPPER(CommAbort, (ncclComm_t comm), (comm))
NSP_END_WRAPPER(CommRevoke, (ncclComm_t comm, int revokeFlags), (comm, revokeFlags))

/* Records a change of a communicator's async error state, once; t: when
 * it was seen (ns). */
static void async_changed(struct nsp_comm *c, ncclComm_t comm, int now, uint64_t t) {
  if (atomic_exchange_explicit(&c->async_result, now, memory_order_relaxed) == now) return;
  nsp_writer_ensure_started();
  struct nsp_rec *r = nsp_ring_reserve();
  if (!r) return;
  r->kind = NSP_REC_ASYNC_ERROR;
  nsp_rec_async_error_set_comm(r, c->idx);
  nsp_rec_async_error_set_result(r, now);
  nsp_rec_async_error_set_t(r, t);
  nsp_rec_async_error_set_last_error(r, last_error_text(comm, now));
  nsp_ring_commit(r);
}

static void follow_one(struct nsp_comm *c, void *arg) {
  (void)arg;
  if (!atomic_load_explicit(&c->pending, memory_order_relaxed)) return;
  nsp_fn_CommGetAsyncError f = REAL(CommGetAsyncError);
  ncclResult_t state = ncclInProgress;
  if (!f || f(c->handle, &state) != ncclSuccess) return;
  if (state == ncclSuccess) {
    comm_settle(c);
  } else if (state != ncclInProgress) {
    /* The init failed: say so, and stop following it. */
    async_changed(c, c->handle, state, nsp_now_ns());
    if (atomic_exchange(&c->pending, 0)) atomic_fetch_sub(&nsp_comm_npending, 1);
  }
}

void nsp_wrappers_follow_pending(void) {
  if (!atomic_load_explicit(&nsp_comm_npending, memory_order_relaxed)) return;
  nsp_wrappers_depth++;
  nsp_comm_foreach(follow_one, NULL);
  nsp_wrappers_depth--;
}

/* What an ncclCommGetAsyncError answer tells: a non-blocking init that
 * settled, or a new async error state.  t0, t1: the call's entry and
 * return (ns); the answer is as of its return. */
static void async_seen(ncclComm_t comm, const ncclResult_t *asyncError, ncclResult_t res, uint64_t t0,
                       uint64_t t1) {
  struct nsp_comm *c = res == ncclSuccess && asyncError ? nsp_comm_find(comm) : NULL;
  if (!c) return;
  int now = *asyncError;
  if (atomic_load_explicit(&c->pending, memory_order_relaxed) && now == ncclSuccess) comm_settle(c);
  if (atomic_load_explicit(&c->async_result, memory_order_relaxed) != now) async_changed(c, comm, now, t1);
}

/* PyTorch's watchdog polls this about every 100 ms per communicator: the
 * call plus a compare; a record only when the answer changes, and the
 * writer starts only then (ENTER is empty). */
NSP_EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError) {
  NSP_CALL_SHOW(CommGetAsyncError, (comm, asyncError), (void)0, 0, (void)fl,
                async_seen(comm, asyncError, res, t0, t1));
}

/* ---- reduction ops ---- */

static void record_redop(int api, ncclComm_t comm, int redop, int dtype, int residence,
                         const void *scalar, ncclResult_t res, uint64_t t0, uint64_t t1) {
  struct nsp_comm *c = nsp_comm_find(comm);
  struct nsp_rec *r = nsp_ring_reserve();
  if (!r) return;
  r->kind = NSP_REC_REDOP;
  nsp_rec_redop_set_api(r, (uint8_t)api);
  nsp_rec_redop_set_comm(r, c ? c->idx : 0);
  nsp_rec_redop_set_redop(r, redop);
  nsp_rec_redop_set_dtype(r, dtype);
  nsp_rec_redop_set_residence(r, residence);
  /* A host-immediate scalar is an argument (the pre-multiplier, such as
   * 1/nranks), not tensor data: its value tells ranks apart.  Its bytes,
   * zero-extended. */
  size_t n = nsp_dtype_size(dtype);
  uint64_t bits = 0;
  if (scalar && residence == ncclScalarHostImmediate && n && n <= 8) memcpy(&bits, scalar, n);
  nsp_rec_redop_set_scalar(r, bits);
  nsp_rec_redop_set_result(r, res);
  nsp_rec_redop_set_t_enter(r, t0);
  nsp_rec_redop_set_t_exit(r, t1);
  nsp_ring_commit(r);
}

NSP_EXPORT ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t *op, void *scalar,
                                                 ncclDataType_t datatype,
                                                 ncclScalarResidence_t residence,
                                                 ncclComm_t comm) {
  NSP_CALL_C(RedOpCreatePreMulSum, (op, scalar, datatype, residence, comm), nsp_comm_find(comm),
           record_redop(NSP_API_RedOpCreatePreMulSum, comm,
                        res == ncclSuccess && op ? (int)*op : -1, datatype, residence, scalar, res,
                        t0, t1));
}

NSP_EXPORT ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  NSP_CALL_C(RedOpDestroy, (op, comm), nsp_comm_find(comm),
           record_redop(NSP_API_RedOpDestroy, comm, op, -1, -1, NULL, res, t0, t1));
}

/* ---- other calls that act: recorded as plain CALLs ---- */

#define NSP_OTHER_WRAPPER(name, params, args, comm, ptr, size)                                \
  NSP_EXPORT ncclResult_t nccl##name params {                                                 \
    NSP_CALL(name, args,                                                                      \
             record_call(NSP_API_##name, comm, ptr, NULL, size, -1, -1, -1, NULL, res, t0, t1, NULL)); \
  }
NSP_OTHER_WRAPPER(GetUniqueId, (ncclUniqueId *uniqueId), (uniqueId), NULL, NULL, 0)
NSP_OTHER_WRAPPER(CommRegister, (const ncclComm_t comm, void *buff, size_t size, void **handle),
                  (comm, buff, size, handle), comm, buff, size)
NSP_OTHER_WRAPPER(CommDeregister, (const ncclComm_t comm, void *handle), (comm, handle), comm,
                  handle, 0)
NSP_OTHER_WRAPPER(CommWindowRegister,
                  (ncclComm_t comm, void *buff, size_t size, ncclWindow_t *win, int winFlags),
                  (comm, buff, size, win, winFlags), comm, buff, size)
NSP_OTHER_WRAPPER(CommWindowDeregister, (ncclComm_t comm, ncclWindow_t win), (comm, win), comm,
                  (const void *)win, 0)
NSP_OTHER_WRAPPER(MemAlloc, (void **ptr, size_t size), (ptr, size), NULL,
                  res == ncclSuccess && ptr ? *ptr : NULL, size)
NSP_OTHER_WRAPPER(MemFree, (void *ptr), (ptr), NULL, ptr, 0)

/* ---- pure queries: passed through, not recorded ---- */

#define NSP_QUERY_WRAPPER(name, params, args)                        \
  NSP_EXPORT ncclResult_t nccl##name params {                        \
    nsp_fn_##name real = REAL(name);                                 \
    return NSP_LIKELY(real != NULL) ? real args : ncclInvalidUsage;  \
  }
NSP_QUERY_WRAPPER(GetVersion, (int *version), (version))
NSP_QUERY_WRAPPER(CommCount, (const ncclComm_t comm, int *count), (comm, count))
NSP_QUERY_WRAPPER(CommCuDevice, (const ncclComm_t comm, int *device), (comm, device))
NSP_QUERY_WRAPPER(CommUserRank, (const ncclComm_t comm, int *rank), (comm, rank))

NSP_EXPORT const char *ncclGetErrorString(ncclResult_t result) {
  nsp_fn_GetErrorString real = REAL(GetErrorString);
  return real ? real(result) : "ncclspy: no real NCCL found";
}

NSP_EXPORT const char *ncclGetLastError(ncclComm_t comm) {
  nsp_fn_GetLastError real = REAL(GetLastError);
  return real ? real(comm) : "ncclspy: no real NCCL found";
}

NSP_EXPORT void ncclResetDebugInit(void) {
  nsp_fn_ResetDebugInit real = REAL(ResetDebugInit);
  if (real) real();
}
