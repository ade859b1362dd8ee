/* nsp_tracegen.h - builds synthetic ncclspy trace files for tests.
 *
 * A generator plays one traced process: it writes the 128-byte header,
 * a PROCESS record, COMM records, CALL records, (format 1.1) COMPLETION
 * and CALLSITE records, (1.5) EXIT, LIBNCCL, and the RINGSTATE and
 * INFLIGHT records a reader makes from a crash ring, through the common
 * codec (nsp_encode) and zstd frames, exactly as the shim's writer does,
 * so tests of the reader and the analyzer need no NCCL and no shim.
 * Sequence numbers are kept like the shim keeps them (per communicator for
 * collectives, per communicator/peer/direction for send/recv), times
 * advance by a fixed step per record.
 *
 *     struct nsp_tracegen *g = nsp_tracegen_create("host-a", 1000, 0);
 *     uint32_t w = nsp_tracegen_comm(g, 0xc0ffee, 0, 2);   // rank 0 of 2
 *     nsp_tracegen_coll(g, NSP_API_AllReduce, w, 1024, ncclFloat32, ncclSum, -1);
 *     nsp_tracegen_write(g, dir, SIZE_MAX, NULL, 0);  // dir/host-a.1000.rank0.ncclspy
 *     nsp_tracegen_destroy(g);
 *
 * Functions returning int return 0 (or the documented value) on success
 * and -1 when out of memory or when zstd or a write fails.
 */
#ifndef NSP_TRACEGEN_H
#define NSP_TRACEGEN_H

#include <stddef.h>
#include <stdint.h>

#include "nsp_nccl.h"
#include "nsp_record.h"

struct nsp_tracegen;

/* A process on `host` with `pid`.  rank >= 0 sets the environment RANK
 * and the file name's ".rank<R>"; -1 for neither.  The header's clock
 * pair defaults to realtime 1.7e18 ns and monotonic 1e9 ns, and the first
 * record is at monotonic 1e9 + 1000 ns.  NULL when out of memory. */
struct nsp_tracegen *nsp_tracegen_create(const char *host, uint32_t pid, int rank);
void nsp_tracegen_destroy(struct nsp_tracegen *g);

/* Sets the header's (realtime, monotonic) pair, ns: call before the first
 * frame is written.  Moving realtime moves this process's wall clock. */
void nsp_tracegen_set_clock(struct nsp_tracegen *g, uint64_t realtime_ns, uint64_t monotonic_ns);
/* Sets the monotonic time (ns) of the next record; later ones go on from
 * it by the step. */
void nsp_tracegen_set_time(struct nsp_tracegen *g, uint64_t monotonic_ns);
/* ns between consecutive records (default 1000) and the duration of each
 * call (t_exit - t_enter, default 100). */
void nsp_tracegen_set_step(struct nsp_tracegen *g, uint64_t step_ns, uint64_t duration_ns);
/* Closes a frame every n records (default 0: one frame per
 * nsp_tracegen_frame call or at the end). */
void nsp_tracegen_set_frame_records(struct nsp_tracegen *g, unsigned n);
/* Whether an index frame (common/nsp_index.h) goes before each data frame,
 * as the shim writes them (on: the default); off makes a trace as the shim
 * wrote them before the index. */
void nsp_tracegen_set_index(struct nsp_tracegen *g, int on);
/* The NCCL version code in the header and the PROCESS record (default 22809). */
void nsp_tracegen_set_nccl_version(struct nsp_tracegen *g, int32_t version);

/* Adds an environment variable to the PROCESS record, which is written
 * before the first other record (so call this first). */
int nsp_tracegen_env(struct nsp_tracegen *g, const char *name, const char *value);

/* A communicator made by ncclCommInitRank: returns its comm index (from 1),
 * 0 when out of memory. */
uint32_t nsp_tracegen_comm(struct nsp_tracegen *g, uint64_t comm_id, int rank, int nranks);
/* A child of ncclCommSplit(parent index, color, key): its comm index. */
uint32_t nsp_tracegen_split(struct nsp_tracegen *g, uint32_t parent, uint64_t comm_id, int color, int key,
                            int rank, int nranks);
/* Sets the commName of the next COMM record (NULL: unset). */
void nsp_tracegen_set_comm_name(struct nsp_tracegen *g, const char *name);

/* The result and last-error text of the next call or COMM_END (then back
 * to success). */
void nsp_tracegen_fail_next(struct nsp_tracegen *g, int result, const char *last_error);

/* A collective on comm index `comm` (root: -1 for unrooted ops; redop -1
 * for ops without one).  Returns its seq, 0 on failure. */
uint64_t nsp_tracegen_coll(struct nsp_tracegen *g, int api, uint32_t comm, uint64_t count, int dtype, int redop,
                           int root);
/* ncclSend/ncclRecv (api) to/from peer.  Returns its seq, 0 on failure. */
uint64_t nsp_tracegen_p2p(struct nsp_tracegen *g, int api, uint32_t comm, uint64_t count, int dtype, int peer);
/* ncclGroupStart (start != 0) or ncclGroupEnd: group ids and depth are
 * kept like the shim keeps them. */
int nsp_tracegen_group(struct nsp_tracegen *g, int start);
/* Finalize/destroy/abort (api) of comm. */
int nsp_tracegen_comm_end(struct nsp_tracegen *g, uint32_t comm, int api);
/* An async error seen on comm. */
int nsp_tracegen_async_error(struct nsp_tracegen *g, uint32_t comm, int result, const char *last_error);
/* A DROPPED record. */
int nsp_tracegen_dropped(struct nsp_tracegen *g, uint64_t count, uint32_t reason);
/* ---- format 1.1 ------------------------------------------------------- */

/* PROCESS fields (call before the first record): cuDriverGetVersion and
 * cudaRuntimeGetVersion codes (default 0, unknown), the libnccl path
 * (default "/usr/lib/libnccl.so.2"), the launcher ("" default) and the
 * NSP_TRACK_* bits (default 0: no completion tracking). */
void nsp_tracegen_set_versions(struct nsp_tracegen *g, int32_t driver, int32_t runtime);
int nsp_tracegen_set_nccl_path(struct nsp_tracegen *g, const char *path);
int nsp_tracegen_set_launcher(struct nsp_tracegen *g, const char *launcher);
void nsp_tracegen_set_tracking(struct nsp_tracegen *g, uint32_t tracking);
/* GPU identity of the following COMM records (NULL: ""). */
int nsp_tracegen_set_gpu(struct nsp_tracegen *g, const char *uuid, const char *pci_bus_id, const char *name);

/* Auto-completion (off by default): every successful collective or
 * send/recv outside a group is followed by its COMPLETION record, and
 * every outermost ncclGroupEnd by its group's, with flags NSP_DONE_OK
 * (| NSP_DONE_TIMED when the tracking has NSP_TRACK_TIMING), gpu_start =
 * the call's exit, gpu_end = gpu_start + gpu_ns, t_seen = gpu_end + 1000.
 * Turn it off before a call that must never complete. */
void nsp_tracegen_set_auto_complete(struct nsp_tracegen *g, int on, uint64_t gpu_ns);
/* A COMPLETION record for the last collective or send/recv call, or for
 * the group the last ncclGroupEnd closed, with these NSP_DONE_* flags and
 * GPU times as above. */
int nsp_tracegen_complete_last(struct nsp_tracegen *g, uint32_t flags, uint64_t gpu_ns);
/* A COMPLETION record as given: one call (group_id 0) or a group. */
int nsp_tracegen_completion(struct nsp_tracegen *g, uint32_t comm, int api, uint64_t seq, int peer, uint64_t group_id,
                            uint32_t flags, uint64_t gpu_start, uint64_t gpu_end, uint64_t t_seen);
/* Writes a CALLSITE record of n frames (innermost first) and returns its
 * id (from 1; 0 on failure).  The calls after nsp_tracegen_set_site(g, id)
 * name it (0: none). */
uint32_t nsp_tracegen_callsite(struct nsp_tracegen *g, uint32_t flags, size_t n, const char *const *modules,
                               const uint64_t *offsets, const char *const *symbols);
void nsp_tracegen_set_site(struct nsp_tracegen *g, uint32_t site);
/* The monotonic time the next record gets (see nsp_tracegen_set_time). */
uint64_t nsp_tracegen_now(const struct nsp_tracegen *g);

/* ---- format 1.5: how the process ended, calls in flight, other libnccls -- */

/* Whether nsp_tracegen_bytes (and _write) end the trace with an EXIT
 * record, as a process that ran its exit handlers does.  On by default:
 * a generated trace describes a process that exited cleanly.  The EXIT's
 * time is the latest monotonic time of the records before it (so the
 * trace's end does not move) and its inflight 0.  Off: the process was
 * killed, crashed, called _exit, or is still running. */
void nsp_tracegen_set_exit(struct nsp_tracegen *g, int on);
/* An EXIT record now: exit handlers ran at monotonic time t (0: the
 * latest time of the records so far) while `inflight` calls of other
 * threads had not returned.  No EXIT is added at the end after it. */
int nsp_tracegen_exit(struct nsp_tracegen *g, uint64_t t, uint64_t inflight);
/* A LIBNCCL record at the next record's time: a libnccl the shim does not
 * interpose (path, its ncclGetVersion code; 0 unknown). */
int nsp_tracegen_libnccl(struct nsp_tracegen *g, const char *path, int32_t version);
/* A RINGSTATE record, as a reader makes it from a crash ring left next to
 * the trace, after all recovered records: the writer thread's last pass
 * at monotonic `heartbeat` (0: the latest time of the records so far) and
 * realtime `heartbeat_wall` (0: heartbeat through the header's clock
 * pair); `exited` the monotonic time exit handlers ran (0 they did not);
 * `inflight` INFLIGHT records follow; `unslotted` threads whose calls in
 * flight are unknown.  Turns the EXIT at the end off (a process that
 * exits cleanly removes its ring). */
int nsp_tracegen_ringstate(struct nsp_tracegen *g, uint64_t heartbeat, uint64_t heartbeat_wall, uint64_t exited,
                           uint64_t inflight, uint32_t unslotted);
/* INFLIGHT records (write them after nsp_tracegen_ringstate): calls that
 * had not returned when the ring was read, entered at monotonic t_enter
 * (0: the next record's time, which then advances), on thread tid (0: the
 * pid).  Each returns 0 or -1.
 *
 * A collective on comm index `comm` (as nsp_tracegen_coll): it takes the
 * communicator's next seq, as its CALL would; *seq gets it (may be NULL). */
int nsp_tracegen_inflight_coll(struct nsp_tracegen *g, int api, uint32_t comm, uint64_t count, int dtype, int redop,
                               int root, uint64_t t_enter, uint64_t *seq);
/* ncclSend/ncclRecv (api) to/from peer: its per-peer, per-direction seq. */
int nsp_tracegen_inflight_p2p(struct nsp_tracegen *g, int api, uint32_t comm, uint64_t count, int dtype, int peer,
                              uint64_t t_enter);
/* ncclCommInitRank (api; or CommInitRankConfig, ...) of communicator
 * comm_id, rank of nranks as asked. */
int nsp_tracegen_inflight_init(struct nsp_tracegen *g, int api, uint64_t comm_id, int rank, int nranks,
                               uint64_t t_enter);
/* ncclCommSplit (api; or CommShrink) of parent index `parent`: its split
 * index is the parent's splits so far (counted as a split), the child's id
 * child_id (0 for a NCCL_SPLIT_NOCOLOR color). */
int nsp_tracegen_inflight_split(struct nsp_tracegen *g, int api, uint32_t parent, uint64_t child_id, int color,
                                int key, uint64_t t_enter);
/* Any other entry point (ncclGroupEnd, ncclCommFinalize, ncclCommDestroy,
 * ncclCommAbort ...) on comm index `comm` (0: none). */
int nsp_tracegen_inflight_call(struct nsp_tracegen *g, int api, uint32_t comm, uint64_t t_enter);

/* Any record as given (times and all); for kinds the helpers above lack
 * and for hand-made oddities.  CALL records must carry their own seq. */
int nsp_tracegen_record(struct nsp_tracegen *g, const struct nsp_rec *r);

/* Closes the current frame (no-op when it is empty). */
int nsp_tracegen_frame(struct nsp_tracegen *g);
/* Closes the current frame and returns the whole file so far (header and
 * frames); *data stays owned by g and valid until its next call. */
int nsp_tracegen_bytes(struct nsp_tracegen *g, const uint8_t **data, size_t *len);
/* Byte offset where each frame starts: *n frames; owned by g. */
const size_t *nsp_tracegen_frame_offsets(struct nsp_tracegen *g, size_t *n);
/* Writes the file as dir/<host>.<pid>[.rank<R>].ncclspy, keeping at most
 * `keep` bytes (SIZE_MAX: all) to imitate a process killed mid-write;
 * the path goes to path (pathlen bytes) when path is not NULL. */
int nsp_tracegen_write(struct nsp_tracegen *g, const char *dir, size_t keep, char *path, size_t pathlen);

/* ---- format 1.6: Python call sites ---------------------------------------- */

/* Writes a PYSITE record of n frames (innermost first: file, line,
 * function) of thread tid (0: the pid) with NSP_PYSITE_* flags, and
 * returns its id (from 1; 0 on failure).  The CALL and INFLIGHT records
 * after nsp_tracegen_set_pysite(g, id) name it (0: none). */
uint32_t nsp_tracegen_pysite(struct nsp_tracegen *g, uint32_t flags, uint32_t tid, size_t n, const char *const *files,
                             const uint64_t *lines, const char *const *functions);
/* A PYSITE record with id `id` as given (a repeated or stray id, for
 * tests of hostile traces); the ids nsp_tracegen_pysite gives go on. */
int nsp_tracegen_pysite_as(struct nsp_tracegen *g, uint32_t id, uint32_t flags, uint32_t tid, size_t n,
                           const char *const *files, const uint64_t *lines, const char *const *functions);
void nsp_tracegen_set_pysite(struct nsp_tracegen *g, uint32_t pysite);

#endif /* NSP_TRACEGEN_H */
