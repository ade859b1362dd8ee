/* nsp_shim.h - internals of libncclspy.so shared by its source files.
 *
 * Each source file is a module whose external names carry its file's
 * name: nsp_ring.c exports nsp_ring_*, nsp_files.c nsp_files_*, and so on
 * (docs/DESIGN.md, "Shim modules"); a module's main function may be the
 * name alone (nsp_warn, nsp_setting, nsp_resolve).  Sections below follow
 * the modules.
 *
 * The shim lives inside someone else's training job.  Whatever happens
 * here, the program must see what it would see without us: the same
 * return values, errno and stream ordering; no abort, no exit, no waiting
 * on disk in a wrapper, bounded memory.  When something is missing we pass
 * calls through and warn once with the "ncclspy:" prefix. */
#ifndef NSP_SHIM_H
#define NSP_SHIM_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "nsp_cuda.h"
#include "nsp_nccl.h"
#include "nsp_record.h"

#define NSP_HIDDEN __attribute__((visibility("hidden")))
#define NSP_LIKELY(x) __builtin_expect(!!(x), 1)
#define NSP_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define NSP_TLS __thread __attribute__((tls_model("initial-exec")))

/* CLOCK_MONOTONIC now, ns. */
static inline uint64_t nsp_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- warnings (nsp_warn.c) ---- */
/* Prints "ncclspy: <message>" on stderr; errno is preserved. */
NSP_HIDDEN void nsp_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Warns once per flag: *once goes from 0 to 1 on the first call. */
#define nsp_warn_once(once, ...)                                              \
  do {                                                                        \
    if (!atomic_exchange_explicit((once), 1, memory_order_relaxed)) nsp_warn(__VA_ARGS__); \
  } while (0)

/* Settings: nsp_setting.h. */

/* ---- dlsym and dlvsym (nsp_dlsym.c) ---- */
/* The shim exports dlsym and dlvsym: an NCCL entry point taken on a
 * handle of the libnccl it interposes comes back as the shim's wrapper;
 * everything else as the real call gives it. */
struct link_map;
/* The real dlsym, for the shim's own lookups (RTLD_NEXT: after the shim).
 * NULL when it cannot be found. */
NSP_HIDDEN void *nsp_dlsym_real(void *handle, const char *name);
/* The function `name` as the object of link map m defines it itself (its
 * dynamic symbol table; the default version), or NULL.  Touches no lock
 * and no dlerror() state.  m must stay loaded meanwhile. */
NSP_HIDDEN void *nsp_dlsym_in(const struct link_map *m, const char *name);

/* ---- finding the real NCCL (nsp_resolve.c) ---- */
/* The real function of entry point api (enum nsp_api), or NULL when no
 * libnccl is loaded yet (then it is looked for again next time, since
 * frameworks load NCCL after the preload).  Never returns the shim's own
 * wrapper. */
typedef void (*nsp_any_fn)(void);
NSP_HIDDEN nsp_any_fn nsp_resolve_lookup(int api);
extern NSP_HIDDEN _Atomic(nsp_any_fn) nsp_resolve_fn[NSP_API_COUNT];
static inline nsp_any_fn nsp_resolve(int api) {
  nsp_any_fn f = atomic_load_explicit(&nsp_resolve_fn[api], memory_order_acquire);
  return NSP_LIKELY(f != NULL) ? f : nsp_resolve_lookup(api);
}
/* Path of the libnccl the shim interposes ("" until one is found). */
NSP_HIDDEN const char *nsp_resolve_path(void);
/* f is an NCCL entry point a program found with dlsym/dlvsym on some
 * handle: true when it lies in the libnccl the shim interposes (its
 * library becomes that one when none was found yet), so the program gets
 * the wrapper.  A libnccl other than that one is warned about and
 * recorded (LIBNCCL), and false. */
NSP_HIDDEN int nsp_resolve_owns(const void *f);
/* The writer has started (the PROCESS record is in the ring): LIBNCCL
 * records kept until then are written. */
NSP_HIDDEN void nsp_resolve_started(void);
/* Writer thread, about once a second: other libnccls loaded since the last
 * look are warned about and recorded. */
NSP_HIDDEN void nsp_resolve_rescan(void);
/* fork: 0 prepare (takes the lock), 1 parent / child (releases it). */
NSP_HIDDEN void nsp_resolve_atfork(int phase);

/* ---- the wrappers (nsp_wrappers.c) ---- */
/* Re-entrancy depth of NCCL calls on this thread: NCCL calls its own
 * public names (Bcast -> Broadcast, InitAll -> GetUniqueId), and the shim
 * itself calls NCCL (GetLastError, CommUserRank); only the outermost call
 * is recorded. */
extern NSP_TLS int nsp_wrappers_depth;
/* Follows the communicators whose non-blocking init has not settled
 * (nsp_comm_npending): asks NCCL (ncclCommGetAsyncError) whether each
 * finished, and records its rank and nranks, or its error, once it did.
 * Called by the poller thread. */
NSP_HIDDEN void nsp_wrappers_follow_pending(void);

/* ---- communicators (nsp_comm.c) ---- */
struct nsp_comm {
  ncclComm_t handle;
  uint32_t idx;            /* process-local index written in records, from 1 */
  uint64_t id;             /* comm_id of the trace format */
  int rank, nranks, device;
  _Atomic int pending;     /* non-blocking init not yet known to be done */
  _Atomic uint64_t coll_seq;   /* last collective sequence number */
  _Atomic uint32_t split_count; /* splits and shrinks made from this comm */
  _Atomic int async_result; /* last ncclCommGetAsyncError answer seen */
  int untimed;             /* NCCLSPY_TIMING=0 when it was made: completion only */
  int untracked;           /* NCCLSPY_TRACK=0 when it was made: no CUDA events */
  /* NCCLSPY_BENCH_MODE_FILE set when it was made: the first byte of that
   * file (mapped read-only, shared) chooses, per call, what the shim does
   * with its collectives and send/recv: '0' pass through unrecorded, '1'
   * records only (as NCCLSPY_TRACK=0), '2' timing off (NCCLSPY_TIMING=0),
   * '3' timing on; anything else: as the settings above.  Benchmarks only
   * (examples/torch/bench_timing.py): it lets one communicator be measured
   * in every mode, in interleaved rounds.  NULL when not set. */
  const volatile char *bench_mode;
  _Atomic(_Atomic uint64_t *) p2p_seq; /* [nranks][2]: send, recv */
};

/* The communicator of a handle, or NULL when it is not known (made before
 * the shim saw it, or the table is full).  Lock-free. */
NSP_HIDDEN struct nsp_comm *nsp_comm_find(ncclComm_t handle);
/* Registers a new communicator for handle (replacing an older one with a
 * reused handle).  Returns NULL when the table is full (warned once). */
NSP_HIDDEN struct nsp_comm *nsp_comm_add(ncclComm_t handle, uint64_t id, int rank, int nranks);
/* Next send (dir 0) or recv (dir 1) sequence number with peer, from 1;
 * 0 when the peer is out of range or memory is short.  take 0: only say
 * what it would be (a call NCCL refused takes none). */
NSP_HIDDEN uint64_t nsp_comm_p2p_seq(struct nsp_comm *c, int peer, int dir, int take);

/* What a call on c does (see nsp_comm.bench_mode): NSP_MODE_PASS (pass
 * through unrecorded), NSP_MODE_RECORD (no CUDA events), NSP_MODE_UNTIMED
 * (one untimed event), NSP_MODE_TIMED.  c may be NULL (unknown handle:
 * NSP_MODE_TIMED, the process-wide settings decide). */
enum { NSP_MODE_PASS, NSP_MODE_RECORD, NSP_MODE_UNTIMED, NSP_MODE_TIMED,
       /* Benchmarks only, to take the cost of timing off apart: '4' the
        * untimed event is recorded and given back at once (no poller, no
        * COMPLETION record); '5' only the stream's capture status and
        * context are asked, no event.  Calls in these modes are recorded
        * as untracked (NSP_CALL_UNTRACKED). */
       NSP_MODE_EVENT_ONLY, NSP_MODE_CAPTURE_ONLY };
static inline int nsp_comm_mode(const struct nsp_comm *c) {
  if (!c) return NSP_MODE_TIMED;
  if (NSP_UNLIKELY(c->bench_mode != NULL)) {
    char m = *c->bench_mode;
    if (m >= '0' && m <= '5') return m - '0';
  }
  return c->untracked ? NSP_MODE_RECORD : c->untimed ? NSP_MODE_UNTIMED : NSP_MODE_TIMED;
}

/* Calls fn for every communicator in the table (lock-free; one that is
 * being added may be missed). */
NSP_HIDDEN void nsp_comm_foreach(void (*fn)(struct nsp_comm *, void *), void *arg);
/* Communicators whose non-blocking init has not settled yet. */
extern NSP_HIDDEN _Atomic int nsp_comm_npending;
/* fork: 0 prepare (takes the table's lock), 1 parent / child (releases it). */
NSP_HIDDEN void nsp_comm_atfork(int phase);

/* ---- the writer (nsp_writer.c) ---- */
/* Starts the writer thread on the first NCCL call of the process (and of
 * a forked child): reads the settings, makes the files and the ring,
 * writes the PROCESS record.  Cheap after the first call. */
NSP_HIDDEN void nsp_writer_start(void);
extern NSP_HIDDEN _Atomic int nsp_writer_started;
static inline void nsp_writer_ensure_started(void) {
  if (NSP_UNLIKELY(!atomic_load_explicit(&nsp_writer_started, memory_order_acquire))) nsp_writer_start();
}
/* NCCLSPY_FLUSH_MS as read. */
NSP_HIDDEN unsigned nsp_writer_flush_ms(void);

/* ---- the record ring (nsp_ring.c) ---- */
/* One ring slot: Vyukov's sequence word, then the record.  Its layout is
 * described to readers by the crash ring's field table. */
struct nsp_slot {
  _Atomic uint64_t seq;
  struct nsp_rec rec;
} __attribute__((aligned(128)));
/* Makes the ring of nslots slots (a power of two) in `mapped`, the ring
 * file's slots, or in anonymous memory when it is NULL.  0, or -1 after a
 * warning (no ring: tracing is off). */
NSP_HIDDEN int nsp_ring_open(size_t nslots, struct nsp_slot *mapped);
/* Lets go of the ring (the ring file's mapping is nsp_files's to unmap). */
NSP_HIDDEN void nsp_ring_close(void);
/* In a forked child: the parent's ring, and its drop count, are not ours. */
NSP_HIDDEN void nsp_ring_atfork_child(void);
/* Takes a free ring slot, or NULL when the ring is full (the record is
 * counted as dropped).  Fill *rec (it is zeroed) then nsp_ring_commit.
 * Never blocks. */
NSP_HIDDEN struct nsp_rec *nsp_ring_reserve(void);
NSP_HIDDEN void nsp_ring_commit(struct nsp_rec *rec);
/* For the signal handler (async-signal-safe): nsp_ring_reserve without
 * the warning when the ring is full; the ring position of a reserved
 * record; and the commit without the blob (the caller stores its own, see
 * nsp_files_ring_sig_blob).  NULL / no effect before the ring exists. */
NSP_HIDDEN struct nsp_rec *nsp_ring_reserve_quiet(void);
NSP_HIDDEN uint64_t nsp_ring_pos(const struct nsp_rec *rec);
NSP_HIDDEN void nsp_ring_commit_quiet(struct nsp_rec *rec);
/* True when the ring is the ring file's mapping (records survive death). */
NSP_HIDDEN int nsp_ring_durable(void);
/* Copies s (at most 4 KiB of it) to the heap for a record; freed with
 * the record's slot.  NULL for NULL or when out of memory. */
NSP_HIDDEN char *nsp_ring_strdup(const char *s);
/* The writer thread's side (one consumer).  nsp_ring_peek: the committed
 * record at the tail, or NULL when there is none yet; nsp_ring_take moves
 * the tail past it, its slot staying taken until nsp_ring_free(end) frees
 * the slots below ring position end (their records are in the trace, or
 * counted lost; what a record owns is freed with it).  nsp_ring_tail: the
 * tail's position.  nsp_ring_backlogged: a quarter of the ring is taken
 * and not freed.  nsp_ring_dropped: records dropped because the ring was
 * full.  nsp_ring_all_taken: every reserved record was taken. */
NSP_HIDDEN const struct nsp_rec *nsp_ring_peek(void);
NSP_HIDDEN void nsp_ring_take(void);
NSP_HIDDEN void nsp_ring_free(uint64_t end);
NSP_HIDDEN uint64_t nsp_ring_tail(void);
NSP_HIDDEN int nsp_ring_backlogged(void);
NSP_HIDDEN uint64_t nsp_ring_dropped(void);
NSP_HIDDEN int nsp_ring_all_taken(void);

/* ---- calls in flight (nsp_flight.c) ---- */
/* This thread's entry of the crash ring's in-flight table (trace.h,
 * struct nsp_ring_inflight), or NULL; nsp_flight_state: 0 not taken yet,
 * 1 taken, 2 none to be had (no ring file, or every entry taken). */
extern NSP_TLS struct nsp_ring_inflight *nsp_flight_mine;
extern NSP_TLS uint8_t nsp_flight_state;
/* Gives the table (n entries in the ring file's header; `unslotted` the
 * header's count of threads that found none) to the wrappers; NULL: none. */
NSP_HIDDEN void nsp_flight_map(struct nsp_ring_inflight *table, uint32_t n, uint32_t *unslotted);
/* Takes a free entry for this thread (after nsp_writer_start).  NULL when
 * there is none: then this thread's calls are not shown (state 2). */
NSP_HIDDEN struct nsp_ring_inflight *nsp_flight_claim(void);
/* Calls in flight on other threads now (the EXIT record's count). */
NSP_HIDDEN uint64_t nsp_flight_count_others(void);
/* In a forked child: the parent's table is not ours. */
NSP_HIDDEN void nsp_flight_atfork_child(void);
/* At a call's entry, before NCCL is called: this thread's entry, its
 * seqlock opened (gen odd), for the wrapper to fill `call` (t_enter, api,
 * comm and group always; the rest as the call's kind uses it: readers
 * ignore what a kind does not use) and publish with nsp_flight_publish;
 * or NULL when this thread's calls are not shown. */
static inline struct nsp_ring_inflight *nsp_flight_begin(void) {
  struct nsp_ring_inflight *e = nsp_flight_mine;
  if (NSP_UNLIKELY(!e) && (nsp_flight_state || !(e = nsp_flight_claim()))) return NULL;
  uint64_t g = __atomic_load_n(&e->gen, __ATOMIC_RELAXED); /* this thread alone writes it */
  __atomic_store_n(&e->gen, g + 1, __ATOMIC_RELAXED);
  __atomic_thread_fence(__ATOMIC_RELEASE);
  return e;
}
static inline void nsp_flight_publish(struct nsp_ring_inflight *e) {
  __atomic_store_n(&e->gen, __atomic_load_n(&e->gen, __ATOMIC_RELAXED) + 1, __ATOMIC_RELEASE);
}
/* At the call's return, before its record goes into the ring. */
static inline void nsp_flight_leave(struct nsp_ring_inflight *e) {
  if (e) __atomic_store_n(&e->call.t_enter, 0, __ATOMIC_RELEASE);
}

/* ---- completion tracking (nsp_done.c) ---- */
/* Starts the poller thread if it is not running. */
NSP_HIDDEN void nsp_done_poller_start(void);
struct nsp_ctx_pool;
/* One call's events, between nsp_done_before and nsp_done_after. */
struct nsp_track {
  struct nsp_ctx_pool *pool; /* NULL: not tracked */
  CUevent start;             /* timed start event, or NULL */
  uint8_t timed, captured;
  uint8_t tried;             /* tracking was attempted (on, not in a group) */
  uint8_t off;               /* not tracked by choice (NSP_MODE_RECORD and the
                                bench-only modes): the CALL record says
                                NSP_CALL_UNTRACKED */
  uint8_t bench;             /* NSP_MODE_EVENT_ONLY or _CAPTURE_ONLY, else 0 */
};
/* A group's events, between nsp_done_group_before and _after. */
struct nsp_track_group {
  struct nsp_ctx_pool *pool;
  unsigned nstreams;
  uint8_t timed, captured;
  CUstream stream[8];
  CUevent start[8];
};
/* NSP_TRACK_* bits of this process (0 without a CUDA driver). */
NSP_HIDDEN uint32_t nsp_done_tracking(void);
/* Around the real call of a collective or send/recv on `stream`.  Inside
 * a group (in_group) only the stream is noted for ncclGroupEnd; untimed
 * asks for completion only (the communicator's NCCLSPY_TIMING).  _after
 * records the end event and queues the call for the poller, or writes a
 * "captured" completion; it does nothing for calls that were not tracked.
 * t_exit: the host time (ns, nsp_now_ns) the real call returned. */
NSP_HIDDEN void nsp_done_before(struct nsp_track *t, cudaStream_t stream, int in_group,
                                int untimed);
NSP_HIDDEN void nsp_done_after(struct nsp_track *t, cudaStream_t stream, uint32_t comm, int api,
                               uint64_t seq, int peer, int result, uint64_t t_exit);
/* Benchmarks only: turns t (after nsp_done_before) into mode's partial
 * tracking (NSP_MODE_EVENT_ONLY, NSP_MODE_CAPTURE_ONLY). */
NSP_HIDDEN void nsp_done_bench(struct nsp_track *t, int mode);
/* Around the real outermost ncclGroupEnd: events on every stream the
 * group used; the completion names the group. */
NSP_HIDDEN void nsp_done_group_before(struct nsp_track_group *g);
NSP_HIDDEN void nsp_done_group_after(struct nsp_track_group *g, uint64_t group_id, int result);
/* Forgets the streams of a group that ends without launching (simulate). */
NSP_HIDDEN void nsp_done_group_discard(void);
/* Before ncclCommAbort/Revoke: writes an "abandoned" completion for each
 * call of comm still in flight, and stops following them. */
NSP_HIDDEN void nsp_done_abandon(uint32_t comm);
/* At exit, before the writer's last flush: a last poll, then the poller ends. */
NSP_HIDDEN void nsp_done_stop(void);

/* ---- files: directory, trace, crash ring (nsp_files.c) ---- */
/* NCCLSPY_RING_FILE, in the order of its words (nsp_setting.h). */
enum { NSP_RING_FILE_AUTO, NSP_RING_FILE_ON, NSP_RING_FILE_OFF };
struct nsp_files {
  int dirfd;           /* NCCLSPY_DIR (O_PATH), -1 none */
  int fd;              /* the trace, -1 none */
  unsigned mode;       /* file mode (NCCLSPY_MODE, default 0600) */
  int has_ring;        /* "<name>.ring" holds the ring */
  int renamed;         /* the rank is in the name */
  char host[NSP_HOST_MAX];
  char name[256];      /* the trace's name in the directory */
  char dir[4096];      /* NCCLSPY_DIR as given, for messages */
};
extern NSP_HIDDEN struct nsp_files nsp_files;
/* Set once a warning about the trace's disk was printed (one per process). */
extern NSP_HIDDEN _Atomic int nsp_files_disk_warned;
/* Opens (making what is missing) the directory and creates the trace with
 * its header.  0, or -1 after one warning (tracing off). */
NSP_HIDDEN int nsp_files_open(const char *dir, mode_t fmode, const char *host, const void *header,
                              size_t hlen);
/* Creates and maps "<trace>.ring" for nslots slots; returns slot 0, or
 * NULL (warned once) when the ring must stay in anonymous memory. */
NSP_HIDDEN struct nsp_slot *nsp_files_ring_map(size_t nslots, uint64_t trace_realtime, int policy);
/* Keeps a record's strings (ext or last_error) for recovery; called by
 * nsp_ring_commit just before it publishes the slot of ring position pos. */
NSP_HIDDEN void nsp_files_ring_blob(uint64_t pos, const struct nsp_rec *rec);
/* Signal records' blobs (nsp_signal.c): NSP_SIG_AREAS runs of
 * NSP_SIG_BLOB_SLOTS blob slots at the end of the blob area, one per
 * record being written.  Async-signal-safe (no lock, no allocation). */
#define NSP_SIG_AREAS 2
#define NSP_SIG_BLOB_SLOTS 24
/* Bytes one signal blob holds; 0 when there is no ring file. */
NSP_HIDDEN size_t nsp_files_ring_sig_capacity(void);
/* Stores the encoded record (len bytes) as the blob of ring position pos
 * in area `area`, replacing what was there.  0, or -1 without a ring file
 * or when it does not fit. */
NSP_HIDDEN int nsp_files_ring_sig_blob(unsigned area, uint64_t pos, const uint8_t *data, size_t len);
/* Marks the area's blob free (its record is in the trace). */
NSP_HIDDEN void nsp_files_ring_sig_clear(unsigned area);
/* Ring positions below `written` are in the trace: frees their blobs. */
NSP_HIDDEN void nsp_files_ring_written(uint64_t written);
NSP_HIDDEN void nsp_files_ring_dropped(int reason, uint64_t n);
/* "<host>.<pid>.rank<R>.ncclspy", the ring renamed in step. */
NSP_HIDDEN void nsp_files_rename_rank(int rank);
/* The writer thread's heartbeat (CLOCK_MONOTONIC and CLOCK_REALTIME now,
 * ns) and the time the exit handlers ran, in the ring file's header; no
 * effect without a ring file. */
NSP_HIDDEN void nsp_files_ring_heartbeat(uint64_t mono_ns, uint64_t real_ns);
NSP_HIDDEN void nsp_files_ring_exited(uint64_t mono_ns);
/* Closes the trace; removes the ring when remove_ring. */
NSP_HIDDEN void nsp_files_close(int remove_ring);
/* In a forked child: lets go of the parent's files and ring mapping. */
NSP_HIDDEN void nsp_files_forget(void);
/* fork: 0 prepare (takes the blob lock), 1 parent / child (releases it). */
NSP_HIDDEN void nsp_files_atfork(int phase);

/* ---- build-ids (nsp_buildid.c) ---- */
struct dl_phdr_info;
/* The GNU build-id of a loaded module, from its PT_NOTE segments in memory
 * (no file I/O), as lower-case hex into hex (cap bytes with the NUL).
 * Returns the hex digits written, or 0 (hex "") when the module has none,
 * its notes are malformed or cap is too small. */
NSP_HIDDEN size_t nsp_buildid_of(const struct dl_phdr_info *info, char *hex, size_t cap);

/* ---- call sites (nsp_site.c) ---- */
/* The ext of a CALLSITE or PYSITE record: n frames (module or file,
 * offset or line, symbol or function; a NULL string is ""), each string
 * cut at 1024 bytes, in one calloc'd block that the writer frees.  NULL
 * when out of memory. */
NSP_HIDDEN struct nsp_rec_ext *nsp_site_frames_ext(int n, const char *const *mod, const uint64_t *off,
                                              const char *const *sym);
/* The id of the calling stack's call site (writing its CALLSITE record the
 * first time), taken from inside a wrapper; `caller` is the wrapper's
 * return address.  A deeper, separate site when `failed`.  0 when call
 * sites are off or unknown. */
NSP_HIDDEN uint32_t nsp_site_current(int failed, void *caller);
/* True when call sites are recorded (built with libunwind, and
 * NCCLSPY_CALLSITES is not 0). */
NSP_HIDDEN int nsp_site_enabled(void);
/* Fork handlers' part: phase 0 takes the call-site lock (waiting for any
 * thread inside libunwind), phase 1 releases it, in parent and child. */
NSP_HIDDEN void nsp_site_atfork(int phase);
/* The writer thread took a SIGNAL record (x: its frames): writes a MODULE
 * record for each module they name that has none yet and is still loaded
 * (found by path).  Never waits for a lock (a module is skipped then). */
NSP_HIDDEN void nsp_site_note_frames(const struct nsp_rec_ext *x);

/* ---- Python call sites (nsp_pysite.c; the reader: nsp_pysite.h) ---- */
/* The id of the calling thread's Python call site (writing its PYSITE
 * record the first time), taken at a wrapper's entry; a thread that runs
 * no Python borrows the main Python thread's stack.  0 when Python sites
 * are off (NCCLSPY_PYSITES=0, no Python, an unsupported one) or the
 * stack could not be read. */
NSP_HIDDEN uint32_t nsp_pysite_current(void);
/* True when Python call sites are recorded. */
NSP_HIDDEN int nsp_pysite_enabled(void);
/* Fork handlers' part: phase 0 takes the lock, 1 releases it in the
 * parent, 2 in the child (which forgets the sites: its trace is new). */
NSP_HIDDEN void nsp_pysite_atfork(int phase);

/* ---- fatal signals (nsp_signal.c) ---- */
/* Installs the handler for SIGSEGV, SIGBUS, SIGABRT, SIGILL and SIGFPE
 * (once per process; a forked child keeps it), unless NCCLSPY_SIGNALS=0,
 * after preparing what it needs (the table of loaded modules, libunwind's
 * state).  Called by nsp_writer_start once the ring exists.  The handler writes
 * a SIGNAL record into the ring, then hands the signal on to the
 * program's previous handler or default action. */
NSP_HIDDEN void nsp_signal_install(void);
/* True when fatal signals are (or, before nsp_writer_start, will be) recorded:
 * the PROCESS record's NSP_TRACK_SIGNALS. */
NSP_HIDDEN int nsp_signal_enabled(void);
/* Rebuilds the module table when objects were loaded or unloaded since
 * the last look (cheap otherwise); called by the writer thread about once
 * a second. */
NSP_HIDDEN void nsp_signal_refresh(void);
/* A SIGNAL record is being freed (its frame is written): its area may be
 * used again. */
NSP_HIDDEN void nsp_signal_release(const struct nsp_rec *rec);
/* In a forked child: no record of the parent's is being written. */
NSP_HIDDEN void nsp_signal_atfork_child(void);

/* ---- the process and its environment (nsp_env.c) ---- */
/* The PROCESS record's ext (one block with its strings, freed with the
 * record): pid, host, the allowed environment variables, the launcher
 * ("torchrun", "slurm", "openmpi", "pmi" or ""), the CUDA driver's and
 * loaded runtime's versions, what is tracked, the clocks.  Taken on the
 * caller's thread at the first NCCL call, since reading environ races
 * with setenv elsewhere.  NULL when out of memory. */
NSP_HIDDEN struct nsp_rec_ext *nsp_env_snapshot(int32_t nccl_version);
/* True when a variable of this name may be written to a trace: the rank
 * and world variables of the launchers, NCCL_*, CUDA_*, TORCH_NCCL_*,
 * TORCH_DISTRIBUTED_*, LD_PRELOAD; never a name containing TOKEN, SECRET,
 * KEY, PASS or CREDENTIAL. */
NSP_HIDDEN int nsp_env_allowed(const char *name, size_t namelen);

#endif /* NSP_SHIM_H */
