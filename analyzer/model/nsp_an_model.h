/* nsp_an_model.h - the analyzer's bottom layer: the job model (traces,
 * communicators, members, per-seq references, send/recv runs, calls
 * awaiting completion, call sites, fatal signals), loading traces into it,
 * preparing it for the rules, and the questions every layer above asks of
 * it.  Layers (docs/DESIGN.md, "The analyzer's layers"): model, then
 * findings/, rules/, job/, then the front ends in cli/; each includes
 * only the headers below it.  Not installed; front ends use
 * nsp_analyze.h only. */
#ifndef NSP_AN_MODEL_H
#define NSP_AN_MODEL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "nsp_analyze.h"
#include "nsp_grow.h"
#include "nsp_nccl.h"
#include "nsp_index.h"
#include "nsp_paged.h"
#include "nsp_pend.h"
#include "nsp_record.h"
#include "nsp_sbuf.h"
#include "nsp_u64map.h"

/* The small containers of common/ report running out of memory as -1. */
_Static_assert(NSP_AN_ENOMEM == -1, "nsp_grow, nsp_u64map_put: -1 is NSP_AN_ENOMEM");

/* Forwards a negative error value (zstd's error_private.h habit); debug
 * builds say where it came from, which is what one wants when a test
 * fails with "out of memory" three calls up. */
#ifdef NDEBUG
#define NSP_TRY(expr)        \
  do {                       \
    int nsp_try_ = (expr);   \
    if (nsp_try_ < 0) return nsp_try_; \
  } while (0)
#else
#define NSP_TRY(expr)                                                          \
  do {                                                                         \
    int nsp_try_ = (expr);                                                     \
    if (nsp_try_ < 0) {                                                        \
      if (getenv("NCCLSPY_DEBUG"))                                             \
        fprintf(stderr, "ncclspy: %s:%d: error %d\n", __FILE__, __LINE__, nsp_try_); \
      return nsp_try_;                                                         \
    }                                                                          \
  } while (0)
#endif

/* ---- calls awaiting completion: common/nsp_pend.h ---------------------- */

/* ---- the model -------------------------------------------------------- */

/* What every rank of a communicator must agree on at one seq.  Fields
 * that do not apply to the op are normalised (-1) so they compare equal.
 * A PreMulSum op whose creation the trace has is its definition (redop
 * NSP_REDOP_PREMULSUM, premul_dtype), never its handle: each process
 * numbers its ops its own way.  Its residence and host scalar are each
 * rank's own (NCCL pre-multiplies every rank's input by that rank's
 * scalar): shown, never compared (nsp_an_sig_eq). */
struct nsp_sig {
  uint64_t count;
  uint64_t premul_scalar;       /* a host scalar's bytes when premul_scalar_known */
  int32_t dtype, redop, root;
  int32_t api; /* nsp_api_coll_class(): Bcast and Broadcast are one */
  int16_t premul_dtype;         /* -1 unless redop is NSP_REDOP_PREMULSUM */
  int8_t premul_residence;      /* ncclScalarResidence_t; -1 as premul_dtype */
  uint8_t premul_scalar_known;  /* host scalar */
};

/* True when a and b are the same call as the ranks must agree on it
 * (collective, dtype, count, reduction op, root). */
static inline int nsp_an_sig_eq(const struct nsp_sig *a, const struct nsp_sig *b) {
  return a->api == b->api && a->dtype == b->dtype && a->count == b->count && a->redop == b->redop &&
         a->root == b->root && a->premul_dtype == b->premul_dtype;
}
/* True when a and b also pre-multiply alike (residence, scalar). */
static inline int nsp_an_sig_premul_same(const struct nsp_sig *a, const struct nsp_sig *b) {
  return a->premul_residence == b->premul_residence && a->premul_scalar_known == b->premul_scalar_known &&
         a->premul_scalar == b->premul_scalar;
}

/* Seqs of its own calls a member keeps from its first difference on
 * (nsp_member.win): enough for the alignment rule to see a rank up to
 * NSP_SHIFT_MAX collectives ahead of or behind the others and then
 * NSP_SHIFT_MATCH calls that match under that shift. */
#define NSP_SHIFT_MAX 8
#define NSP_SHIFT_MATCH 4
#define NSP_SIG_WINDOW (NSP_SHIFT_MAX + NSP_SHIFT_MATCH)

/* One seq of a communicator: the first signature any rank made there
 * (every later rank is compared against it, so memory is per seq, not per
 * (seq, rank)) and the earliest entry.  8 bytes: the signature is an
 * index into the communicator's table of distinct ones (nsp_an_comm.sigs:
 * a training loop repeats a few shapes), the time an offset from its
 * page's base.  Read through nsp_an_comm_ref. */
struct nsp_ref {
  uint32_t sig;   /* NSP_REF_SIG: index + 1 into c->sigs, 0 while no rank
                     reached this seq; NSP_REF_DIFFERS: some rank's
                     signature differed from it; NSP_REF_PREMUL_VARIES: a
                     rank that agreed pre-multiplied otherwise (residence
                     or host scalar) */
  int32_t t_off;  /* earliest entry time of any rank here (wall ns) minus
                     the page's base, unless the page is wide */
};
#define NSP_REF_SIG 0x3fffffffu
#define NSP_REF_DIFFERS 0x80000000u
#define NSP_REF_PREMUL_VARIES 0x40000000u
/* Refs per page of a communicator's paged array of refs by seq. */
#define NSP_SEQ_PAGE 256
/* A page of refs: seqs page_no * NSP_SEQ_PAGE onwards.  Times are offsets
 * from base (the first time set in the page); once one is more than 2^31
 * ns away, the page keeps every time whole in wide. */
struct nsp_ref_page {
  int64_t base;
  int64_t *wide;   /* NSP_SEQ_PAGE times, or NULL */
  int based;       /* base is set */
  struct nsp_ref r[NSP_SEQ_PAGE];
};
/* A page's time t (ns) as a 32-bit offset from its base, into *off: 1,
 * or 0 when it does not fit (the page must keep whole times). */
static inline int nsp_an_time_off(int64_t t, int64_t base, int32_t *off) {
  int64_t d;
  if (__builtin_sub_overflow(t, base, &d) || d < INT32_MIN || d > INT32_MAX) return 0;
  *off = (int32_t)d;
  return 1;
}
/* The earliest entry (wall ns) of ref e of page pg. */
static inline int64_t nsp_an_ref_time(const struct nsp_ref_page *pg, unsigned e) {
  return pg->wide ? pg->wide[e] : pg->base + pg->r[e].t_off;
}
/* A ref as the rules see it. */
struct nsp_ref_view {
  struct nsp_sig sig; /* all zero when not set */
  int64_t t_min;      /* earliest entry time of any rank at this seq (wall ns); 0 */
  int set;            /* a rank has reached this seq */
  int differs;        /* some rank's signature differed from sig */
  int premul_varies;  /* a rank that agreed pre-multiplied otherwise */
};

/* Send/recv sizes to/from one peer, run-length encoded by value over
 * consecutive seqs (pipeline stages send the same shape over and over). */
struct nsp_run {
  uint64_t seq0, n, count;
  int32_t dtype;
};
struct nsp_runs {
  struct nsp_run *v;
  size_t n, cap;
  uint64_t max_seq; /* highest seq posted (== calls when no record was lost) */
  uint64_t last_rec; /* record number (t->info.records) of the send/recv at
                        max_seq: where the trace's coverage of this peer and
                        direction ends when records were dropped after it */
  uint64_t failed;  /* calls counted that failed waiting: the shim gave each
                       the seq the next call took too, so later seqs are
                       shifted by this many */
};
struct nsp_p2p {
  int32_t peer;
  struct nsp_runs dir[2]; /* 0: sends to peer, 1: recvs from peer */
};

/* One process's part in one communicator (a trace's comm index). */
struct nsp_member {
  size_t comm, trace;
  uint32_t local;       /* comm index in the trace */
  int32_t rank, nranks, device;
  uint64_t ncoll, gaps; /* collectives; seq jumps (lost records) */
  uint64_t last_seq;    /* highest collective seq; 0 none */
  uint64_t last_rec;    /* record number (t->info.records) of that collective; 0 none */
  struct nsp_sig last_sig;
  int64_t last_t;
  uint64_t first_diff;  /* first seq where this rank differed from the ref; 0 none */
  struct nsp_sig diff_sig;
  /* Its own calls at seqs first_diff + i, i < NSP_SIG_WINDOW (bit i of
   * win_set: seen); before first_diff it made the refs' calls.  Allocated
   * at its first difference.  The alignment rule's shift test reads them
   * (nsp_an_member_sig). */
  struct nsp_sig *win;
  uint32_t win_set;
  int ended, end_api, end_result;
  int64_t end_t;        /* its COMM_END's entry, wall clock; 0 */
  int has_error;        /* some event on this comm returned an error */
  uint64_t first_err_seq; /* lowest collective seq whose call returned an error; 0 */
  uint64_t calls;       /* any CALL on this comm (rebinding is refused after) */
  /* completion (traces with NSP_TRACK_COMPLETION), set at the trace's end */
  uint64_t first_pending; /* lowest collective seq that never completed; 0 none */
  struct nsp_sig pend_sig;
  int64_t pend_t;       /* its entry, wall clock */
  uint64_t pend_mono;   /* its entry, monotonic */
  uint32_t pend_site;
  uint32_t pend_pysite; /* its Python call site (format 1.6); 0 none */
  uint8_t pend_state;   /* NSP_PEND_WAIT, _ABANDONED or _FAILED */
  uint64_t npending;    /* collectives that never completed */
  uint64_t done_seq;    /* highest collective seq with a COMPLETION (NSP_DONE_OK): it
                           ran on the GPU, so every rank of the communicator issued it */
  size_t went_on_by;    /* set by the wavefront rule: 1 + the member whose completed
                           collectives (done_seq) show that this one went on past its
                           last_seq though its trace ends there; 0 none */
  int pend_inflight;    /* first_pending is a call in flight (it never returned) */
  /* Format 1.5: its lowest collective seq in flight (an INFLIGHT record:
   * arrived and waiting, whatever its age); 0 none.  Its signature and
   * entry (wall clock, monotonic).  last_inflight: its last_seq is one. */
  uint64_t inflight_seq;
  struct nsp_sig inflight_sig;
  int64_t inflight_t;
  uint64_t inflight_mono;
  uint32_t inflight_pysite; /* its Python call site (format 1.6); 0 none */
  int last_inflight;
  uint64_t nuntracked;  /* calls with NSP_CALL_UNTRACKED (1.4): completion not asked for */
  /* Format 1.4: the last collective NCCL refused (an error result) while
   * no later collective of this member has come; it took no seq.  A later
   * collective takes its place; one still here at the trace's end is the
   * rank's last attempt and is compared with the others' call at its seq. */
  struct nsp_rec refused;
  int has_refused;
  char *gpu_uuid, *gpu_pci, *gpu_name; /* "" unknown */
  /* send/recv per peer */
  struct nsp_p2p *p2p;
  size_t np2p, p2p_cap;
  struct nsp_u64map p2p_index; /* peer -> p2p index */
  /* the page of refs last used (seqs arrive in order, so this hits), for
   * seqs page_no * NSP_SEQ_PAGE onwards; the index + 1 in the
   * communicator's sigs of the signature it made last (0 none) */
  struct nsp_ref_page *page;
  uint64_t page_no;
  uint32_t sig_hint;
};

struct nsp_an_comm {
  struct nsp_comm_info info;
  char *name;
  int *ranks;
  size_t *members;      /* indices into job->members */
  size_t nmembers, members_cap;
  struct nsp_paged refs; /* page number (seq / NSP_SEQ_PAGE) -> struct nsp_ref_page */
  struct nsp_sig *sigs;  /* the distinct signatures its refs name */
  size_t nsigs, sigs_cap;
  struct nsp_u64map sig_index; /* hash of a signature (nsp_an_sig_hash) -> index in sigs */
  /* Set by the rules, read by the rules that run or link after them: */
  uint64_t mismatch_seq; /* the alignment rule's finding seq; 0 none */
  int mismatch_kind;     /* and its kind */
  size_t mismatch_id;    /* its finding id */
  uint64_t hang_seq;     /* hang/never-completed finding's seq; 0 none */
  size_t hang_id;        /* its finding id */
  int64_t hang_t;        /* its time */
  int nranks_conflict;   /* members reported different nranks (noted once) */
};

/* Communicators of one group an error of its ncclGroupEnd keeps. */
#define NSP_GROUP_COMMS_MAX 8

/* A process's first error, or its last call. */
struct nsp_event {
  struct nsp_call call;
  char *last_error;     /* owned copy behind call.last_error */
  int valid;
  uint32_t site;        /* call-site id of the call; 0 none */
  uint32_t pysite;      /* Python call-site id of the call (format 1.6); 0 none */
  uint32_t local;       /* comm index in the trace */
  uint64_t mono;        /* entry, monotonic ns */
  int32_t peer_key;     /* the peer field as the CALL had it (completion key) */
  int group_more;       /* an error of ncclGroupEnd: its group had calls on other
                           communicators than call.comm_id (the first's) too */
  /* An error of ncclGroupEnd: the communicators of its group's calls, in
   * the order of their first call (call.comm_id is the first); at most
   * NSP_GROUP_COMMS_MAX (group_more says when there were more). */
  uint64_t group_comms[NSP_GROUP_COMMS_MAX];
  size_t ngroup_comms;
};

/* An open group of a trace while loading: its id and the members (index
 * + 1) of its calls' communicators, the first NSP_GROUP_COMMS_MAX in the
 * order of their first call; over: a call on one more. */
struct nsp_open_group {
  uint64_t id;          /* 0: a free slot */
  size_t members[NSP_GROUP_COMMS_MAX];
  size_t n;
  int over;
};

/* Where a communicator's collectives are in a trace file: the zstd frame
 * at byte `frame` holds comm index `local`'s collective seqs lo..hi (and
 * maybe others between).  Pass 2 starts reading at the first frame that
 * can hold what it looks for (nsp_an_frame_of). */
struct nsp_frame_span {
  size_t frame;
  uint32_t local;
  uint64_t lo, hi;
};

struct nsp_trace {
  char hdr_host[NSP_HOST_MAX];   /* the header's host name (copies of a trace: same host, pid, clocks) */
  struct nsp_trace_info info;
  char *path, *host, *shim_version, *problem;
  char **env;           /* 2*nenv owned strings */
  int env_read;         /* a PROCESS record was read: info.env is the process's
                           environment (else it was lost, and says nothing) */
  uint8_t *mem;         /* owned copy for traces added from memory */
  size_t mem_len;
  size_t size;          /* bytes of the trace as read (file or memory) */
  int64_t off_ns;       /* wall = monotonic + off_ns */
  int env_rank, file_rank;
  const char *env_rank_var; /* the variable env_rank came from ("RANK"); NULL none */
  struct nsp_event first_err;
  struct nsp_event last_call; /* last call on any communicator */
  struct nsp_frame_span *spans; /* in file order; one per frame and comm index */
  size_t nspans, spans_cap;
  /* comm index -> member + 1 (0: none), while loading only */
  size_t *local_member;
  size_t nlocal;
  uint64_t orphan_calls; /* calls on a comm index without a usable COMM record */
  uint64_t bad_seq;      /* collectives with seq 0 */
  uint64_t rebind_refused;
  int unattributed_error; /* an error on no communicator (ncclGroupEnd...) */
  /* format 1.1 */
  char *nccl_path, *launcher;
  uint64_t t_last;       /* latest monotonic timestamp of any record */
  uint64_t live_min_ns;  /* the job's nsp_job_set_live_min when read; 0: 10 s */
  struct nsp_pend_tab pend; /* while loading only */
  struct nsp_u64map done_by_stream; /* while loading: stream -> latest entry of a completed call */
  struct nsp_u64map group_comm; /* while loading: open group id -> index + 1 in groups */
  struct nsp_open_group *groups; /* while loading: the open groups (slots reused) */
  size_t ngroups;
  int load_oom;
  struct nsp_event blocked; /* the earliest call that never completed */
  struct nsp_callsite **sites; /* call sites, filtered (nsp_an_site.c) */
  size_t sites_cap;
  struct nsp_u64map site_by_id; /* site id -> index in sites */
  struct nsp_pysite **pysites;  /* Python call sites (nsp_an_pysite.c), info.npysites */
  size_t pysites_cap, pysite_bytes;
  struct nsp_u64map pysite_by_id; /* Python site id -> index in pysites */
  uint64_t pysites_dropped;     /* PYSITE records past the bounds, not kept */
  int pend_overflow;
  int refused_take_no_seq; /* format >= 1.4: a call that returned an error
                              (not ncclInProgress) took no seq */
  /* format 1.3: the first SIGNAL record (nsp_an_sigload.c) */
  int has_sig;
  struct nsp_signal sig;        /* info.signal points here */
  uint64_t sig_mono;            /* its time, monotonic ns */
  struct nsp_callsite *sig_stack; /* sig.stack */
  char *sig_name, *sig_mod0, *sig_sym0;
  uint64_t max_call_mono;       /* latest CALL entry */
  /* DROPPED records: the record number of the last one (0 none) and the
   * records lost by NSP_DROP_* reason (index 0: unknown reasons). */
  uint64_t drop_rec;
  uint64_t drop_mono;   /* monotonic time of the last DROPPED record: the lost
                           records came before it */
  uint64_t drop_by[NSP_DROP_END];
  /* What the file lost (nsp_an_load.c): damaged regions skipped (the first's
   * byte offset, the bytes skipped in all); read_problem: the reader named
   * damage or a cut (nsp_reader_problem); the crash ring: 1 read with damage,
   * 2 ignored or not read (ring_note says why), ring_lost its records whose
   * strings were lost. */
  unsigned damaged;
  size_t damage_at, damage_skipped;
  size_t longer_copy;   /* a copy of this trace that is this many bytes longer was
                           not read (its last records may be missing here) */
  int read_problem, ring_bad;
  uint64_t ring_lost;
  /* Format 1.5 (nsp_an_end.c): how the process ended and what it was inside. */
  unsigned minor;               /* the header's format minor (major 1) */
  int has_exit;                 /* an EXIT record: exit handlers ran at exit_mono */
  uint64_t exit_mono, exit_inflight;
  int32_t exit_status;          /* EXIT's status: -1 unknown */
  int has_ring;                 /* a RINGSTATE record: its crash ring was left */
  uint64_t ring_heartbeat, ring_heartbeat_wall, ring_exited;
  uint32_t ring_unslotted;
  struct nsp_inflight *inflight; /* INFLIGHT records (info.inflight) */
  size_t ninflight, inflight_cap;
  struct nsp_libnccl *libnccl;  /* LIBNCCL records, paths owned (info.libnccl) */
  size_t nlibnccl, libnccl_cap;
  /* Communicator creations that failed (a COMM record of ncclCommInitRank*,
   * ncclCommSplit or ncclCommShrink with an error: a timeout waiting for
   * ranks that never came, say), as calls that waited: in_flight 0,
   * result the error.  The comm-init rule takes them with the calls in
   * flight. */
  struct nsp_inflight *failed_inits;
  size_t nfailed_inits, failed_inits_cap;
  struct nsp_split_done *splits; /* splits and shrinks it completed (COMM records
                                    with a parent, no-color ones too) */
  size_t nsplits, splits_cap;
  /* While loading: the PreMulSum ops alive, per communicator (comm index
   * << 32 | handle -> index in redop_defs); handles are reused after
   * ncclRedOpDestroy.  At most NSP_REDOP_DEFS_MAX keys. */
  struct nsp_u64map redop_index;
  struct nsp_redop_def *redop_defs;
  size_t nredop_defs, redop_defs_cap;
  struct nsp_call_key *recent;  /* while loading: the last calls' (api, entry) */
  size_t nrecent;
  /* Set by the rules (rules/nsp_rule_comm_init.c): the comm-init-wait
   * finding whose creation call this process waits in; SIZE_MAX none. */
  size_t init_wait_id;
  /* The NCCL functions its CALL records name (bit api % 8 of byte api / 8):
   * what a process that joined no communicator did. */
  uint8_t api_seen[(NSP_API_COUNT + 7) / 8];
  /* MODULE records (format 1.6): the path and build-id of each module its
   * frames name (nsp_an_symbolize.c). */
  struct nsp_an_module *modules;
  size_t nmodules, modules_cap;
};

/* A PreMulSum op as ncclRedOpCreatePreMulSum made it (a REDOP record). */
struct nsp_redop_def {
  uint64_t scalar; /* a host scalar's bytes, zero-extended; 0 device */
  int32_t dtype, residence;
  int live;        /* not destroyed since */
};
#define NSP_REDOP_DEFS_MAX 4096

/* A split or shrink a process completed: its parent and the parent's
 * splits and shrinks before it (the same on every rank). */
struct nsp_split_done {
  uint64_t parent_id;
  uint32_t split_index;
};

/* A call record's (api, entry time): an INFLIGHT record of the same is
 * that call, which returned (the reader's race with a live process). */
struct nsp_call_key {
  uint64_t t_enter;
  int32_t api;
};

/* A call-site lookup pass 2 makes for a finding's process: its native
 * and Python call sites go to out->site and out->pysite. */
struct nsp_site_req {
  size_t trace;
  uint32_t local;
  uint64_t seq;         /* collective seq */
  struct nsp_proc *out;
  int done;
};

struct nsp_finding_priv; /* findings/nsp_an_finding.h */
struct nsp_perf;         /* job/nsp_an_perf.c */

struct nsp_job {
  struct nsp_trace **traces;
  size_t ntraces, traces_cap;
  size_t nunread;       /* trace files that could not be read at all */
  struct nsp_an_comm **comms;
  size_t ncomms, comms_cap;
  struct nsp_u64map comm_by_id;
  struct nsp_u64map trace_by_process; /* FNV-1a of a header's host, pid and clock pair -> the
                                         first trace of that process (copies found in O(1)) */
  struct nsp_member *members;
  size_t nmembers, members_cap;
  /* nsp_an_prepare: hash of (communicator, trace) -> the first member in
   * the communicator's member order (nsp_an_member_of_trace in O(1)). */
  struct nsp_u64map member_by_trace;
  char **notes;
  size_t nnotes, notes_cap;
  struct nsp_finding_priv *findings; /* in creation order until the job sorts them */
  size_t nfindings, findings_cap;
  char *summary;
  char *headline;       /* the report's first line (job/nsp_an_headline.c) */
  int analyzed;
  size_t error_id;       /* the error finding's id; SIZE_MAX none (rules/) */
  size_t signal_id;      /* the signal finding's id; SIZE_MAX none (rules/) */
  int version_skew;      /* traces show more than one NCCL version */
  struct nsp_site_req *site_req; /* nsp_an_want_site, for pass 2 */
  size_t nsite_req, site_req_cap;
  struct nsp_perf *perf;
  int64_t start_ns;
  struct nsp_file_id *files; /* (st_dev, st_ino) of every file added: read once */
  size_t nfiles, files_cap;
  struct nsp_u64map file_by_id; /* hash of (st_dev, st_ino) -> the first file in files with it */
  /* How processes ended (nsp_an_end.c): the analysis's "now" (CLOCK_REALTIME
   * ns; 0: the clock as each trace is read) and the host whose pids /proc
   * may answer for (NULL: gethostname(), "" none). */
  int64_t now_ns;
  char *local_host;
  int local_host_set;
  struct nsp_job_caveats caveats; /* the summary's "but:" (job/nsp_an_summary.c) */
  /* Runs (job/nsp_an_runs.c): the selection (NULL newest, "all"), the
   * runs newest first, and whether every run is analysed as one job. */
  char *run_sel;
  struct nsp_an_run *runs;
  size_t nruns;
  int run_all;
  char err[512];
  struct nsp_an_sym *sym; /* modules opened for debug information (nsp_an_symbolize.c) */
  int64_t live_min_ns;  /* nsp_job_set_live_min; 0: 10 s */
  int threads;          /* nsp_job_set_threads; 0: NSP_JOB_THREADS_DEFAULT */
  int full_read;        /* nsp_job_set_full_read: every frame decoded, indexes not read */
  struct nsp_an_ixjob *ix; /* the load in progress's indexes (nsp_an_index.c) */
  uint64_t frames_skipped; /* data frames stepped over, their summaries folded in */
  int reread_all;          /* traces were added after a load stepped over frames, judged without them:
                            * nsp_an_select_run reads every trace again, as one load */
  /* Progress (nsp_job_set_progress): the callback, what it is told, and
   * the bytes of the files read through before the current one. */
  nsp_job_progress_fn *progress_fn;
  void *progress_arg;
  struct nsp_job_progress progress;
  uint64_t progress_base;
};

/* One run among the traces (job/nsp_an_runs.c): its public view, the
 * identity it owns. */
struct nsp_an_run {
  struct nsp_run_info info;
  char *id;
};

struct nsp_file_id {
  uint64_t dev, ino;
};

/* ---- loading (nsp_an_load.c, nsp_an_sigload.c) ---------------------------- */

/* Reads one trace into the model (mem: a copy the job takes, or NULL to
 * read the file at path).  Returns 1, NSP_AN_EREAD (noted), NSP_AN_ENOMEM. */
int nsp_an_load_trace(struct nsp_job *job, const char *path, uint8_t *mem, size_t mem_len);
/* The threads that read traces: nsp_job_set_threads's, or one less than
 * the CPUs of the process's affinity mask (1 when that is under 2), at
 * most NSP_JOB_THREADS_DEFAULT. */
int nsp_an_read_threads(const struct nsp_job *job);
/* The threads that each read and fold whole traces (nsp_job_perf):
 * nsp_job_set_threads's, or the CPUs of the process's affinity mask, at
 * most NSP_JOB_THREADS_DEFAULT. */
int nsp_an_fold_threads(const struct nsp_job *job);
/* The byte offset of the first frame of trace t that can hold collective
 * seq `seq` of comm index `local` (its spans); 0 when unknown (read from
 * the start). */
size_t nsp_an_frame_of(const struct nsp_trace *t, uint32_t local, uint64_t seq);
/* Loads n traces, each as nsp_an_load_trace would (paths[k], or mems[k]
 * of lens[k] bytes when mems is not NULL, taken), in that order, decoded
 * on the job's threads (nsp_job_set_threads): the job is the same as
 * after n calls of nsp_an_load_trace.  results[k] (when not NULL): what
 * that call would have returned; errors[k] (when not NULL): a copy of
 * nsp_job_error's text after it (NULL: none; caller frees).  Returns 0,
 * or NSP_AN_ENOMEM (the traces after the one that ran out of memory are
 * not read). */
int nsp_an_load_traces(struct nsp_job *job, size_t n, const char *const *paths, uint8_t **mems, const size_t *lens,
                       int *results, char **errors);

/* Opens a trace again (file or its memory copy) for pass 2 and perf. */
struct nsp_reader *nsp_an_reopen(const struct nsp_trace *t, char *err, size_t errlen);

/* ---- trace files decoded on worker threads (nsp_an_feed.c) ------------- */

/* A trace to read: a file, or len bytes in memory (mem not NULL). */
/* ---- reading what is needed (nsp_an_index.c) ---------------------------- */

/* The traces' indexes compared across ranks, for the files one load reads. */
struct nsp_an_ixjob;
/* A data frame of a trace, as its plan has it. */
struct nsp_an_pframe {
  size_t off;              /* its byte offset */
  uint8_t decode;          /* read; else stepped over, its summary folded in */
  uint8_t run_start;       /* the first read after one stepped over: the completion table starts empty */
  struct nsp_ix_summary sum;
  size_t comm0, ncomm;     /* its communicators' entries in plan.comm */
  size_t stream0, nstream; /* its streams' in plan.stream */
  size_t p2p0, np2p;       /* its runs of sends and receives in plan.p2p */
};
struct nsp_an_plan {
  struct nsp_an_pframe *f; /* by offset */
  size_t n;
  struct nsp_ix_comm *comm;
  size_t ncomm;
  struct nsp_ix_stream *stream;
  size_t nstream;
  struct nsp_ix_p2p *p2p;
  size_t np2p;
};
/* Reads the indexes of the n files a load is about to read into
 * job->ix (NULL when none has one, with --full-read, or for one file).
 * 0 or NSP_AN_ENOMEM. */
/* Before a load that is not part of one nsp_an_load_traces: a load
 * after one that stepped over frames sets job->reread_all. */
void nsp_an_load_begin(struct nsp_job *job);
int nsp_an_index_scan(struct nsp_job *job, size_t n, const char *const *paths, uint8_t **mems, const size_t *lens);
void nsp_an_index_free(struct nsp_an_ixjob *ix);
/* The plan of one trace (path, or len bytes at mem): NULL when every
 * frame is read (no index, nothing to step over, out of memory). */
struct nsp_an_plan *nsp_an_plan_make(const struct nsp_an_ixjob *ix, const char *path, const uint8_t *mem,
                                     size_t len);
/* nsp_reader_set_filter's function: whether the frame at off is read. */
int nsp_an_plan_want(void *plan, size_t off);
void nsp_an_plan_free(struct nsp_an_plan *p);

struct nsp_an_feed_item {
  const char *path;
  const uint8_t *mem;
  size_t mem_len;
  size_t start;         /* a frame's byte offset to start at (nsp_reader_seek_frame); 0 the first */
  const struct nsp_an_ixjob *ix; /* the job's indexes: the worker makes the file's plan */
};
struct nsp_an_feed;
/* Starts nthreads workers decoding items[0..n) (kept by the caller until
 * nsp_an_feed_stop).  NULL when nthreads < 2 or n < 2 (reading alone is
 * cheaper), out of memory, or no thread could be started: the caller
 * reads alone. */
struct nsp_an_feed *nsp_an_feed_start(const struct nsp_an_feed_item *items, size_t n, int nthreads);
/* Item i, in order (i = 0, 1, ...): its reader, owned by the caller from
 * here on (its records come from nsp_an_feed_next, not from it), or NULL
 * with err when it could not be opened. */
struct nsp_reader *nsp_an_feed_open(struct nsp_an_feed *f, size_t i, char *err, size_t errlen);
/* After nsp_an_feed_open: item i's plan (NULL: every frame read), now the caller's. */
struct nsp_an_plan *nsp_an_feed_plan(struct nsp_an_feed *f, size_t i);
/* Item i's next record (*rec valid until the next call; *offset: the
 * reader's nsp_reader_offset after its batch, for progress; *frame: its
 * nsp_reader_record_frame).  1, 0 at the end, NSP_AN_ENOMEM when a worker
 * ran out of memory copying it. */
int nsp_an_feed_next(struct nsp_an_feed *f, size_t i, const struct nsp_rec **rec, size_t *offset, size_t *frame);
/* Done with item i (its records read or not wanted). */
void nsp_an_feed_close(struct nsp_an_feed *f, size_t i);

/* Where one trace's records come from: its reader on this thread (feed
 * NULL), or item `item` of a feed, whose worker decodes them.  The loader,
 * pass 2 and perf read through it, so each has one loop for both. */
struct nsp_an_src {
  struct nsp_reader *r;
  struct nsp_an_plan *plan; /* the frames read and stepped over (nsp_an_index.c); NULL: all read */
  struct nsp_an_feed *feed;
  size_t item;
  size_t offset, frame; /* the feed's: its record's reader offset and frame */
  struct nsp_rec rec;   /* the reader's current record */
};
/* Opens trace t again into s: item k of feed, or alone from the frame at
 * byte start (0: the first; a feed's item has its own).  s->r, or NULL
 * with err. */
struct nsp_reader *nsp_an_src_reopen(struct nsp_an_src *s, struct nsp_an_feed *feed, size_t k,
                                     const struct nsp_trace *t, size_t start, char *err, size_t errlen);
/* The next record: 1, 0 at the end, NSP_AN_ENOMEM (a feed's worker ran
 * out of memory); a lone reader's damage ends it as 0 (its problem says
 * so). */
int nsp_an_src_next(struct nsp_an_src *s, const struct nsp_rec **rec);
/* The reader's offset after the current record (progress), and the frame
 * it came from (nsp_reader_record_frame). */
size_t nsp_an_src_offset(const struct nsp_an_src *s);
size_t nsp_an_src_frame(const struct nsp_an_src *s);
/* Done with the records: a feed's worker has stopped, so s->r may be
 * asked and destroyed.  nsp_an_src_close also destroys it. */
void nsp_an_src_done(struct nsp_an_src *s);
void nsp_an_src_close(struct nsp_an_src *s);
/* Stops the workers and frees everything but the readers handed out. */
void nsp_an_feed_stop(struct nsp_an_feed *f);

/* The ref of seq in communicator c, into *out (zeroed when no rank
 * reached seq); returns out->set. */
int nsp_an_comm_ref(const struct nsp_an_comm *c, uint64_t seq, struct nsp_ref_view *out);
/* Calls fn(ctx, seq, ref) for every ref of c a rank reached (in no
 * particular order of seq). */
void nsp_an_comm_refs_each(const struct nsp_an_comm *c, void (*fn)(void *ctx, uint64_t seq, const struct nsp_ref *r),
                           void *ctx);
/* Frees c's refs and signatures (the rules have run: perf needs neither). */
void nsp_an_comm_drop_refs(struct nsp_an_comm *c);
/* For loading (nsp_an_refs.c): a new communicator's empty refs; the page
 * of refs page_no (seqs page_no * NSP_SEQ_PAGE onwards), made when create
 * is set (NULL: absent, or out of memory); the index + 1 of signature s in
 * c->sigs, added when new (0: out of memory; *hint, an index + 1 or 0, is
 * tried first and becomes the answer); ref e's earliest entry set to t
 * (wall ns; 0 or NSP_AN_ENOMEM). */
void nsp_an_refs_init(struct nsp_an_comm *c);
struct nsp_ref_page *nsp_an_ref_page(struct nsp_an_comm *c, uint64_t page_no, int create);
uint32_t nsp_an_sig_intern(struct nsp_an_comm *c, const struct nsp_sig *s, uint32_t *hint);
int nsp_an_ref_set_time(struct nsp_ref_page *pg, unsigned e, int64_t t);

/* Fatal signals: a SIGNAL record while loading (the first is kept), its
 * end-of-trace check (did the process go on?), the trace's memory. */
int nsp_an_signal_load(struct nsp_trace *t, const struct nsp_rec *rec);
void nsp_an_signal_finish(struct nsp_trace *t);
/* The process was alive at monotonic alive_mono (a running process's
 * last heartbeat): a signal more than 2 s before did not end it. */
void nsp_an_signal_survived(struct nsp_trace *t, uint64_t alive_mono);
void nsp_an_signal_free(struct nsp_trace *t);

/* ---- how each process ended (nsp_an_end.c) --------------------------------- */

/* Calls in flight this long (ns) as of a running process's last sign of
 * life may be a hang; a process heard from this long ago or less runs:
 * max(10 s or the job's nsp_job_set_live_min, 3 x the trace's
 * NCCLSPY_FLUSH_MS). */
uint64_t nsp_an_live_ns(const struct nsp_trace *t);

/* ---- progress (nsp_an_load.c) ----------------------------------------------- */

/* A new phase of reading: counts start again at 0 of files_total files
 * and bytes_total bytes. */
void nsp_an_progress_phase(struct nsp_job *job, int phase, size_t files_total, uint64_t bytes_total);
/* More files to read in this phase (a directory listed, a path added). */
void nsp_an_progress_more(struct nsp_job *job, size_t files, uint64_t bytes);
/* A record read from r: tells the callback every 16384. */
void nsp_an_progress_record(struct nsp_job *job, const struct nsp_reader *r);
/* The same, for a record read on a worker: offset its reader's
 * nsp_reader_offset after it (nsp_an_feed_next). */
void nsp_an_progress_record_at(struct nsp_job *job, size_t offset);
/* Where a phase read on several threads stands (their sums): tells the
 * callback. */
void nsp_an_progress_at(struct nsp_job *job, size_t files_done, uint64_t bytes_done, uint64_t records);
/* A file of size bytes read through: tells the callback. */
void nsp_an_progress_file(struct nsp_job *job, uint64_t size);
/* An EXIT, RINGSTATE or LIBNCCL record while loading; 0 or NSP_AN_ENOMEM. */
int nsp_an_end_load(struct nsp_trace *t, const struct nsp_rec *rec);
/* A call, COMM or COMM_END record's (api, entry), remembered for
 * nsp_an_end_seen; 0 or NSP_AN_ENOMEM. */
int nsp_an_end_note_call(struct nsp_trace *t, int api, uint64_t t_enter);
/* True when a record of (api, t_enter) was read shortly before: an
 * INFLIGHT record of it is that call, which returned. */
int nsp_an_end_seen(const struct nsp_trace *t, int api, uint64_t t_enter);
/* At the trace's end (after the signals' finish): its end state
 * (info.end), from its records, the job's "now" and, for this host, /proc.
 * 0 or NSP_AN_ENOMEM. */
int nsp_an_end_decide(struct nsp_job *job, struct nsp_trace *t);
/* True when a call entered at monotonic t_enter is no evidence yet of a
 * hang: the process still runs and the call is younger than
 * nsp_an_live_ns, or it was killed or crashed less than 1 s after the
 * call's entry (a job killed by its time limit stops healthy calls), or
 * its trace, cut, damaged or without an exit record or a crash ring (end
 * unknown), ends less than 1 s after the call's entry. */
int nsp_an_end_young(const struct nsp_trace *t, uint64_t t_enter);
/* True when every traced member of communicator c was killed while it
 * was active (less than 1 s after its last call), all within 1 s of each
 * other: a job stopped by its time limit or an operator while it ran.
 * What one rank did in that last second that another had not yet done
 * (a collective more, a send not yet received) is no finding then.  A
 * hung job killed later is not this: its ranks were idle when they died. */
int nsp_an_killed_active(const struct nsp_job *job, const struct nsp_an_comm *c);
/* True when every traced process still runs and the first of them began
 * its trace less than the live window ago: a job starting up, whose other
 * ranks may not have made their first NCCL call (and trace) yet. */
int nsp_an_job_starting(const struct nsp_job *job);
void nsp_an_end_free(struct nsp_trace *t);

/* ---- call sites (nsp_an_site.c) -------------------------------------------- */

/* Stores a CALLSITE record in t (filtered); 0 or NSP_AN_ENOMEM. */
int nsp_an_site_add(struct nsp_trace *t, const struct nsp_rec *rec);
/* The site with this id in t, or NULL (id 0, unknown). */
const struct nsp_callsite *nsp_an_site(const struct nsp_trace *t, uint32_t id);
void nsp_an_sites_free(struct nsp_trace *t);
/* A filtered copy of frames (x->nframes of them, innermost first): NCCL's,
 * ncclspy's and c10d's left out (unless that is all of them), and with
 * skip_runtime_top the C/C++ runtime frames on top too (raise, abort,
 * terminate).  Kept to 16 frames.  NULL when out of memory. */
struct nsp_callsite *nsp_an_stack_make(const struct nsp_rec_ext *x, uint32_t id, uint32_t flags, int skip_runtime_top);
/* ---- native frames as function and file:line (nsp_an_symbolize.c) ----------- */
/* Keeps a MODULE record's path and build-id (the first record of a path). */
int nsp_an_module_add(struct nsp_trace *t, const struct nsp_rec *rec);
void nsp_an_modules_free(struct nsp_trace *t);
/* Fills the function, file and line of cs's frames (cs from t) whose
 * module t's MODULE records name, when the module's file is readable here
 * and has the recorded build-id; a note, once per module, names a module
 * whose build-id differs.  Without libdw at build time it does nothing.
 * Returns 0 or NSP_AN_ENOMEM. */
int nsp_an_symbolize_stack(struct nsp_job *job, const struct nsp_trace *t, const struct nsp_callsite *cs);
/* The symbolizer alone (tests): modules opened once, results cached. */
struct nsp_an_sym;
struct nsp_an_sym *nsp_an_sym_create(void);
void nsp_an_sym_destroy(struct nsp_an_sym *s);
enum {
  NSP_AN_SYM_NONE = 0,        /* left as it was (no file, no build-id to check, no name) */
  NSP_AN_SYM_RESOLVED = 1,    /* fr->function and/or fr->file and line set */
  NSP_AN_SYM_CHANGED = 2,     /* the file's build-id is not build_id */
  NSP_AN_SYM_CHANGED_NEW = 3, /* the same, the first time this module is asked for */
};
/* Looks fr (fr->offset from the start of the module's first loaded page;
 * fr->interrupted says whether it is the instruction itself or a return
 * address) up in the file at path, whose build-id must be build_id (lower-case
 * hex).  Strings set in fr live as long as s.  Returns NSP_AN_SYM_* or
 * NSP_AN_ENOMEM. */
int nsp_an_sym_frame(struct nsp_an_sym *s, const char *path, const char *build_id, struct nsp_frame *fr);

/* True when a frame is NCCL's, ncclspy's or c10d's (left out of reports). */
int nsp_an_frame_skipped(const char *module, const char *symbol);
/* Asks pass 2 (job/nsp_an_pass2.c) for the call sites (native and
 * Python) of a member's collective at seq, to be stored in out->site and
 * out->pysite.  0 or NSP_AN_ENOMEM. */
int nsp_an_want_site(struct nsp_job *job, size_t trace, uint32_t local, uint64_t seq, struct nsp_proc *out);

/* ---- Python call sites (nsp_an_pysite.c) ------------------------------------ */

/* Stores a PYSITE record in t (the first of an id; bounded: see the
 * file); 0 or NSP_AN_ENOMEM. */
int nsp_an_pysite_add(struct nsp_trace *t, const struct nsp_rec *rec);
/* The Python site with this id in t, or NULL (id 0, unknown). */
const struct nsp_pysite *nsp_an_pysite(const struct nsp_trace *t, uint32_t id);
void nsp_an_pysites_free(struct nsp_trace *t);

/* ---- after loading (nsp_an_prepare.c) ------------------------------------- */

/* Before the rules: drops communicators no member points at, sorts each
 * one's members by rank (nranks by majority where members disagree),
 * gives every trace its job rank, the job its start time and whether
 * NCCL versions differ.  Returns 0 or NSP_AN_ENOMEM. */
int nsp_an_prepare(struct nsp_job *job);
/* Sets every trace's info.joined (nsp_analyze.h): whether its records
 * show a communicator (a member, a failed or in-flight creation, a call
 * on a communicator). */
void nsp_an_mark_joined(struct nsp_job *job);
/* True when trace i counts as a rank: joined a communicator, or nothing
 * says it did not (no record). */
static inline int nsp_an_is_rank(const struct nsp_job *job, size_t i) { return job->traces[i]->info.joined; }
/* qsort_r order of member indices (ctx: the job): by rank, trace, comm index. */
int nsp_an_cmp_member_rank(const void *pa, const void *pb, void *ctx);

/* ---- questions about the model (nsp_an_model.c) --------------------------- */

/* The traces joined by communicators (any member in common, transitively):
 * group[i] for trace i (0-based, numbered in trace order; SIZE_MAX for a
 * trace in no communicator).  Returns how many groups, or SIZE_MAX when
 * out of memory. */
size_t nsp_an_comm_groups(const struct nsp_job *job, size_t *group);

/* Adds a note (printf format).  Returns 0 or NSP_AN_ENOMEM. */
int nsp_job_notef(struct nsp_job *job, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Adds what b holds as a note (b is emptied).  0 or NSP_AN_ENOMEM. */
int nsp_job_note_take(struct nsp_job *job, struct nsp_sbuf *b);
/* The value of environment variable name in t's snapshot (the first
 * entry of that name), or NULL. */
const char *nsp_an_env_value(const struct nsp_trace_info *t, const char *name);
/* The whole number of milliseconds variable `name` of t's snapshot says,
 * when in [lo, hi]; else def (ms). */
uint64_t nsp_an_env_ms(const struct nsp_trace_info *t, const char *name, uint64_t def, uint64_t lo, uint64_t hi);
/* Wall clock (ns) of a monotonic time of t's host. */
static inline int64_t nsp_an_wall(const struct nsp_trace *t, uint64_t mono) {
  return (int64_t)(mono + (uint64_t)t->off_ns);
}
/* "2024-05-01T12:00:03.123Z": a wall-clock time (ns) in UTC, "unknown" <= 0. */
void nsp_an_utc_text(char *buf, size_t len, int64_t ns);
/* Empty call: api -1, ints -1 (done too), numbers 0. */
void nsp_call_clear(struct nsp_call *c);
/* What nsp_call_clear makes (padding zero too): copy it where a call is
 * cleared per record, the copy inlined. */
extern const struct nsp_call nsp_call_none;
int nsp_an_cmp_int(const void *a, const void *b);
/* The communicator with this id (0: none), or NULL. */
const struct nsp_an_comm *nsp_an_comm_of(const struct nsp_job *job, uint64_t id);
/* The member of comm c with this rank (first of duplicates), or NULL;
 * after nsp_an_prepare. */
const struct nsp_member *nsp_an_find_member(const struct nsp_job *job, const struct nsp_an_comm *c, int rank);
/* Member m's call at seq of communicator c as its signature, when known
 * (1): the ref's before m's first difference, its own window from there
 * (NSP_SIG_WINDOW seqs); 0 past its last seq, past the window or where
 * its trace has no such call. */
int nsp_an_member_sig(struct nsp_an_comm *c, const struct nsp_member *m, uint64_t seq, struct nsp_sig *out);
/* The member of communicator c (NULL: none) that trace ti is, or NULL
 * (the first in c's member order; after nsp_an_prepare, in O(1)). */
const struct nsp_member *nsp_an_member_of_trace(const struct nsp_job *job, const struct nsp_an_comm *c, size_t ti);
/* The key of job->member_by_trace for communicator c and trace ti. */
uint64_t nsp_an_member_key(const struct nsp_an_comm *c, size_t ti);
/* The highest last seq of c's members with a rank. */
uint64_t nsp_an_comm_reached(const struct nsp_job *job, const struct nsp_an_comm *c);
/* True when t's file was cut or damaged with nothing read after it (not
 * made whole from its crash ring); *at: the byte where reading stopped. */
int nsp_an_trace_cut(const struct nsp_trace *t, unsigned long long *at);
/* Coverage.  True when m's trace dropped records (a DROPPED record) after
 * the record of m's last collective on its communicator, or dropped any
 * when m has no collective: where that rank went after it is not known.
 * Conservative: the shim writes a DROPPED record at the end of the frame
 * that was being written when the records were lost, so a drop just before
 * the last collective may count too.  One rule for the coverage notes, the
 * wavefront and the hangs. */
int nsp_an_member_uncovered(const struct nsp_job *job, const struct nsp_member *m);
/* The member of c, another rank than m, whose completed collectives go
 * furthest past m's last seq (nsp_member.done_seq > m->last_seq): a
 * collective runs only when every rank of its communicator issued it, so
 * m went on although its trace ends at last_seq (its later records were
 * lost: a cut or damaged file, a process killed before writing them).
 * Completions of a rank with an error or an abort on the communicator
 * (or an error on no communicator) are no evidence.  NULL when no rank
 * completed a later one. */
const struct nsp_member *nsp_an_member_went_on(const struct nsp_job *job, const struct nsp_an_comm *c,
                                               const struct nsp_member *m);
/* True when m's trace dropped records after its last send to (r is
 * m's dir[0] runs for a peer) or recv from (dir[1]) a peer, or dropped any
 * when r is NULL or empty: whether that rank posted more of them is not
 * known. */
int nsp_an_p2p_uncovered(const struct nsp_job *job, const struct nsp_member *m, const struct nsp_runs *r);

/* The model's objects freed (the job frees them; prepare drops comms). */
void nsp_an_trace_free(struct nsp_trace *t);
void nsp_an_member_free(struct nsp_member *m);
void nsp_an_comm_free(struct nsp_an_comm *c);

#endif /* NSP_AN_MODEL_H */
