/* nsp_analyze.h - the ncclspy analyzer as a library.
 *
 * Loads the per-process traces of one job, unifies their communicators
 * (by the 64-bit communicator id every rank of a communicator shares),
 * aligns collectives by their per-communicator sequence number, and runs
 * the rules of docs/REPORT.md (mismatches, send/recv pairing, wavefront,
 * errors with hints, hangs from completion tracking, environment),
 * producing findings as plain structs; nsp_job_perf adds performance
 * figures (`ncclspy perf`).  The kinds of finding are one table,
 * nsp_finding_kinds.h.  The `ncclspy` command's text and JSON reports are
 * front ends over this API (analyzer/cli/nsp_report.h); tests and other
 * tools may use it directly.
 *
 * Usage:
 *     struct nsp_job *job = nsp_job_create();
 *     nsp_job_add_path(job, "traces/");          // a directory or a file
 *     if (nsp_job_analyze(job) < 0) ...;         // NSP_AN_ENOMEM
 *     for (size_t i = 0; i < nsp_job_nfindings(job); i++)
 *       use(nsp_job_finding(job, i));
 *     nsp_job_destroy(job);
 *
 * Ownership: every pointer this API returns (strings, structs, arrays)
 * belongs to the job and stays valid until nsp_job_destroy.  Nothing
 * returned needs to be freed by the caller.
 *
 * Units: times are nanoseconds.  "time_ns" fields are wall-clock
 * (CLOCK_REALTIME) nanoseconds, mapped from each host's CLOCK_MONOTONIC
 * through the pair in its trace header, so events of different hosts sit
 * on one axis (up to the hosts' clock skew).  Counts are elements, as
 * passed to NCCL; bytes are count x dtype size.
 *
 * Ranks: a finding about a communicator names ranks of that
 * communicator.  "error" findings and the per-process env-* kinds (no
 * communicator) name job ranks (nsp_trace_info.rank), since they span
 * communicators (nsp_finding_job_ranks); each process of an "error"
 * finding also has its rank in the finding's communicator (comm_rank).
 * Messages name communicator ranks, with "(job rank N)" where the job rank
 * differs, and "job rank N" for a process outside the communicator.
 *
 * Memory: the loader streams records; it keeps O(1) state per
 * (communicator, rank), one reference signature per (communicator,
 * sequence number), run-length encoded send/recv sizes per peer pair, the
 * calls awaiting completion per process (the GPU's queue) and the call
 * sites, never a copy of every call.
 *
 * Thread safety: a job is used by one thread at a time; separate jobs are
 * independent.
 */
#ifndef NSP_ANALYZE_H
#define NSP_ANALYZE_H

#include <stddef.h>
#include <stdint.h>

#include "nsp_finding_kinds.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Error values returned by nsp_job_* functions (0 is success). */
enum nsp_an_error {
  NSP_AN_OK = 0,
  NSP_AN_ENOMEM = -1, /* out of memory; the job is still safe to destroy */
  NSP_AN_EREAD = -2,  /* a path could not be read as a trace (see nsp_job_error) */
  NSP_AN_EINVAL = -3, /* a bad argument (NULL, empty data) */
  NSP_AN_ESTATE = -4, /* traces added after nsp_job_analyze, or analyze called twice */
};

/* A constant sentence for an nsp_an_error value ("out of memory"). */
const char *nsp_an_strerror(int err);

/* Kinds of finding, one per line of the table in nsp_finding_kinds.h
 * (NSP_FIND_KIND_MISMATCH "kind-mismatch", NSP_FIND_DTYPE_MISMATCH, ...,
 * the env-* kinds NSP_FIND_ENV_NCCL_VERSION to NSP_FIND_ENV_WORLD_SIZE,
 * NSP_FIND_SIGNAL).  The strings of nsp_finding_kind_name are stable:
 * tests and the JSON report use them. */
enum nsp_finding_kind {
#define NSP_X_KIND_ENUM(id, ...) id,
  NSP_FINDING_KINDS(NSP_X_KIND_ENUM)
#undef NSP_X_KIND_ENUM
  NSP_FIND_KIND_COUNT
};

/* A line of the kinds table (nsp_finding_kinds.h says what each column
 * means). */
struct nsp_finding_kind_info {
  int kind;              /* enum nsp_finding_kind */
  const char *name;      /* "dtype-mismatch" */
  int order_class;       /* enum nsp_finding_class */
  int rank_space;        /* enum nsp_rank_space */
  int sides;             /* enum nsp_side_shape */
  const char *odd_ranks; /* what nsp_finding.odd_ranks holds; "" never set */
  const char *later;     /* what nsp_finding.later counts; "" always 0 */
  const char *hint;      /* nsp_finding_kind_hint */
};
/* The line of kind; NULL for values out of range. */
const struct nsp_finding_kind_info *nsp_finding_kind_info(int kind);
/* The words docs/REPORT.md's table of kinds uses for a class ("mismatch"),
 * a rank space ("communicator") and a side shape ("by call"); "unknown"
 * out of range. */
const char *nsp_finding_class_name(int order_class);
const char *nsp_rank_space_name(int rank_space);
const char *nsp_side_shape_name(int sides);

struct nsp_finding;
/* True when f's ranks (sides, procs, odd_ranks) are job ranks
 * (nsp_trace_info.rank): kinds whose rank space is NSP_RANKS_JOB or
 * NSP_RANKS_JOB_IN_COMM ("error", "signal"), and NSP_RANKS_COMM_OR_JOB
 * ones (the env-* findings) without a communicator; false when they are
 * ranks of f's communicator. */
int nsp_finding_job_ranks(const struct nsp_finding *f);

/* True when the reports name f's communicator, as "no communicator" when
 * it has none: kinds about one (NSP_RANKS_COMM, NSP_RANKS_JOB_IN_COMM),
 * and the others when they have one. */
int nsp_finding_names_comm(const struct nsp_finding *f);

/* True for the kinds of class NSP_CLASS_ENV (the env-* kinds
 * NSP_FIND_ENV_NCCL_VERSION to NSP_FIND_ENV_WORLD_SIZE: the report's
 * Environment section). */
int nsp_finding_kind_is_env(int kind);

/* "kind-mismatch", ...; "unknown" for values out of range. */
const char *nsp_finding_kind_name(int kind);
/* The kind whose name is `name`; -1 when none. */
int nsp_finding_kind_from_name(const char *name);

/* Where an error was seen (struct nsp_call.source). */
enum nsp_call_source {
  NSP_SRC_CALL = 0,   /* the result of a collective, send/recv, group or other call */
  NSP_SRC_COMM_INIT,  /* communicator init, split or shrink */
  NSP_SRC_COMM_END,   /* finalize, destroy, abort, revoke */
  NSP_SRC_ASYNC,      /* ncclCommGetAsyncError changed */
  NSP_SRC_REDOP,      /* ncclRedOpCreatePreMulSum / ncclRedOpDestroy */
};
/* "call", "comm-init", "comm-end", "async-error", "redop"; "unknown". */
const char *nsp_call_source_name(int source);

/* What the ranks of a side of a "hang" or "never-completed" finding did
 * with the seq (struct nsp_side.role). */
enum nsp_side_role {
  NSP_ROLE_NONE = 0,    /* other kinds */
  NSP_ROLE_NOT_ARRIVED, /* "not-arrived": never issued the seq (the ranks to look at); its
                           trace covers what it did after its last collective there */
  NSP_ROLE_WAITING,     /* "waiting": issued it and it never completed */
  NSP_ROLE_COMPLETED,   /* "completed": issued it and it completed */
  NSP_ROLE_FAILED,      /* "failed": the call itself returned an error */
  NSP_ROLE_UNTRACKED,   /* "untracked": issued it; its trace does not track completion */
  NSP_ROLE_ARRIVAL_UNKNOWN, /* "arrival-unknown": its last recorded collective there is
                               below the seq, but its trace lost records (DROPPED) after
                               that collective: whether it issued the seq is not known */
};
/* "not-arrived", ...; "" for NSP_ROLE_NONE, "unknown" out of range. */
const char *nsp_side_role_name(int role);

/* One native stack frame of a call site. */
struct nsp_frame {
  const char *module;   /* path of the object ("/usr/lib/libtorch_cuda.so"); "" unknown */
  uint64_t offset;      /* pc - load address of the module */
  const char *symbol;   /* "" when unknown */
  /* From the module's debug information (elfutils' libdw), when the file
   * at `module` is readable where the analysis runs and its GNU build-id
   * is the one the trace's MODULE record gives; NULL / 0 otherwise
   * (analyzer/model/nsp_an_symbolize.c).  For inlined code, the innermost
   * inlined function and its line. */
  const char *function; /* "nsp_cases_allreduce" */
  const char *file;     /* the source file as the debug information names it
                           (an absolute path when it was compiled so) */
  int line;             /* from 1; 0 unknown */
  int interrupted;      /* 1: offset is the interrupted instruction itself (a
                           fatal signal's innermost frame); 0: a return
                           address, just after its call */
};

/* Where a call was made (NSP_REC_CALLSITE), innermost frame first.
 * Frames inside NCCL (libnccl*), ncclspy and PyTorch's c10d
 * (ProcessGroupNCCL, c10d::) are left out, so the first frame is the
 * first interesting one; when every frame is one of those, none is left
 * out. */
struct nsp_callsite {
  uint32_t id;          /* the trace's site id */
  uint32_t flags;       /* NSP_SITE_* */
  size_t nframes;       /* frames kept (at most 16) */
  const struct nsp_frame *frames;
  size_t nskipped;      /* frames left out as NCCL/ncclspy/c10d */
  size_t ntotal;        /* frames in the record */
};

/* One frame of a Python call site (a PYSITE record, format 1.6). */
struct nsp_pyframe {
  const char *file;     /* co_filename as the interpreter had it ("/home/u/train.py");
                           "" unknown; longer than 400 bytes: "..." and its last 400 */
  uint64_t line;        /* line number; 0 unknown */
  const char *function; /* co_qualname (3.11 on) or co_name ("Trainer.step",
                           "<module>"); "" unknown; cut at 200 bytes */
  int library;          /* 1: library code, a path of the library-frame table
                           (nsp_pyframe_library): folded in the text report */
  const char *short_file; /* library frames: the path from the table's pattern on
                           ("torch/distributed/distributed_c10d.py", "contextlib.py");
                           else file */
};

/* Where a call was made in Python (format 1.6): the innermost frames of
 * the calling thread's Python stack, innermost first, kept whole (up to
 * 64 frames).  A call made on a thread that ran no Python (an autograd
 * or other native worker) has the process's main Python thread's stack:
 * NSP_PYSITE_BORROWED, tid that thread. */
struct nsp_pysite {
  uint32_t id;          /* the trace's Python site id */
  uint32_t flags;       /* NSP_PYSITE_BORROWED, NSP_PYSITE_TRUNCATED (the stack was
                           deeper than the shim keeps) */
  uint32_t tid;         /* the thread whose stack it is */
  size_t nframes;       /* frames kept */
  const struct nsp_pyframe *frames;
  size_t ntotal;        /* frames in the record (nframes unless over 64) */
  size_t first;         /* the first frame of the program's own (not library
                           code): the line to look at; nframes when every frame
                           kept is library code */
};

/* Whether a Python file is library code (docs/REPORT.md, "Python library
 * frames"): a path containing one of the table's directories or files
 * (torch/distributed/, torch/autograd/, deepspeed/comm/, ...) at a path
 * component's start, the Python standard library (a file under
 * .../lib/pythonX.Y/ outside site-packages and dist-packages), or a
 * frozen module ("<frozen runpy>").  Returns 1 and, when short_at is not
 * NULL, the offset in file where the part to show begins (the pattern's
 * match; after "pythonX.Y/"); 0 for the program's own code. */
int nsp_pyframe_library(const char *file, size_t *short_at);
/* The library-frame table, row i (i < nsp_pyframe_nlibrary()): its
 * pattern ("torch/distributed/") and what it holds; NULL past the end. */
size_t nsp_pyframe_nlibrary(void);
const char *nsp_pyframe_library_row(size_t i, const char **what);
/* True when a and b hold the same frames (file, line, function each) and
 * flags: ranks with different site ids may share a site.  NULL equals
 * only NULL. */
int nsp_pysite_same(const struct nsp_pysite *a, const struct nsp_pysite *b);

/* A fatal signal a process received (NSP_REC_SIGNAL, format 1.3).  Signal
 * and code numbers are Linux's (traces are read on any machine). */
struct nsp_signal {
  int signo;              /* 11 SIGSEGV, 6 SIGABRT, 7 SIGBUS, 4 SIGILL, 8 SIGFPE */
  const char *name;       /* "SIGSEGV"; "signal N" for others */
  int code;               /* si_code */
  const char *code_name;  /* "SEGV_MAPERR", "SI_TKILL", ...; "" unknown */
  const char *code_text;  /* "address not mapped to an object", ...; "" unknown */
  uint64_t addr;          /* the faulting address (SIGSEGV, SIGBUS, SIGILL, SIGFPE
                             raised by a fault); 0 otherwise */
  uint64_t tid;           /* the thread that received it */
  int32_t sender_pid;     /* sent or raised (kill, raise, abort): the sending
                             process (its own pid for abort); 0 for a fault */
  uint32_t flags;         /* NSP_SIG_* of include/ncclspy/trace.h */
  int64_t time_ns;        /* wall clock */
  int went_on;            /* the process made NCCL calls more than 2 s after
                             it: its own handler handled it, it did not die */
  /* The receiving thread's stack, innermost first (frame 0 is the
   * interrupted instruction): frames of NCCL, ncclspy and c10d left out as
   * for call sites, and, for a signal that was sent or raised (code <= 0),
   * the C and C++ runtime frames on top (raise, abort, assert, terminate),
   * so the first frame is the code that faulted or called abort.  NULL
   * when the record has no stack. */
  const struct nsp_callsite *stack;
  const char *first_module; /* the raw innermost frame, before any was left */
  const char *first_symbol; /* out: where the signal hit ("" unknown) */
};

/* nsp_call.redop of a PreMulSum op known by its definition. */
#define NSP_REDOP_PREMULSUM (-2)

/* One NCCL call or event as a trace recorded it.  Fields that do not
 * apply are -1 (ints), 0 (seq, count, time_ns, comm_id) or NULL. */
struct nsp_call {
  int api;              /* NSP_API_* (common/nsp_nccl.h); -1 when none */
  int source;           /* enum nsp_call_source */
  uint64_t comm_id;     /* communicator id; 0 none (e.g. ncclGroupEnd) */
  uint64_t seq;         /* per-communicator collective seq, from 1; for
                           send/recv the per-peer, per-direction seq */
  uint64_t count;       /* elements as passed (AllGather: sendcount,
                           ReduceScatter: recvcount) */
  int dtype;            /* ncclDataType_t; -1 none */
  int redop;            /* ncclRedOp_t; -1 none; NSP_REDOP_PREMULSUM: a
                           PreMulSum op known by its definition (premul_*),
                           whose handle each process numbers its own way;
                           a handle >= ncclNumOps: one whose creation the
                           trace lacks */
  int peer;             /* root (rooted collectives) or peer (send/recv); -1 */
  int result;           /* ncclResult_t as returned (0 success) */
  const char *last_error; /* ncclGetLastError text; NULL when none */
  int64_t time_ns;      /* wall-clock ns of the call's entry (for errors:
                           when the call returned it, or when the async
                           error was seen); 0 unknown */
  int done;             /* completion (format 1.1, where a finding says):
                           1 completed, 0 never completed, -1 unknown */
  /* A PreMulSum op's definition, from its ncclRedOpCreatePreMulSum
   * record (redop NSP_REDOP_PREMULSUM; else -1, -1, 0, 0): the scalar's
   * dtype and ncclScalarResidence_t, and a host scalar's bytes
   * (zero-extended) when premul_scalar_known.  Not known for a device
   * scalar, nor for a side whose ranks pre-multiply by different scalars
   * (each rank's own: NCCL allows it). */
  int premul_dtype, premul_residence;
  uint64_t premul_scalar;
  int premul_scalar_known;
  int in_flight;        /* 1: the call had not returned when its process's
                           crash ring was read (an INFLIGHT record, format
                           1.5): the process was killed inside it, or is
                           still inside it; time_ns is its entry, done 0 */
};

/* How a traced process ended, as far as the analysis can tell
 * (nsp_end_info.state; docs/REPORT.md, "How each process ended").
 * Decided per trace from its EXIT record, the state of a crash ring left
 * next to it (RINGSTATE: heartbeat, exit time), a SIGNAL record, and, for
 * a process of this host, /proc.  Never more than is known. */
enum nsp_end_state {
  NSP_END_UNKNOWN = 0, /* "unknown": a trace older than format 1.5 (which cannot
                          say; reports say nothing of it), or one with neither
                          an EXIT record nor a crash ring whose process does
                          not run here (why: nsp_end_info.why) */
  NSP_END_EXITED,      /* "exited": it ran its exit handlers (exit(), a return
                          from main): its EXIT record, or its ring's exit time */
  NSP_END_RUNNING,     /* "running": still running as of the analysis: its
                          ring's heartbeat is recent (nsp_job_set_now), or its
                          pid is alive on this host, started no later than its
                          trace and has ncclspy mapped (/proc/<pid>/maps) */
  NSP_END_KILLED,      /* "killed": its ring was left and its heartbeat stopped
                          with no exit and no fatal signal recorded: SIGKILL (the
                          OOM killer, a scheduler's time limit), a signal's
                          default action, _exit */
  NSP_END_CRASHED,     /* "crashed": died of the fatal signal its SIGNAL record
                          names (signo) */
};
/* "unknown", "exited", "running", "killed", "crashed" (the JSON report's
 * words); "invalid" out of range. */
const char *nsp_end_state_name(int state);

/* Where a process's end state comes from (nsp_end_info.source). */
enum nsp_end_source {
  NSP_ENDSRC_NONE = 0, /* "none": nothing says */
  NSP_ENDSRC_EXIT,     /* "exit-record": its EXIT record */
  NSP_ENDSRC_RING,     /* "crash-ring": its crash ring's state (RINGSTATE) */
  NSP_ENDSRC_PROC,     /* "proc": /proc on this host (its pid runs) */
  NSP_ENDSRC_SIGNAL,   /* "signal": its SIGNAL record (no ring was left) */
};
/* "none", "exit-record", "crash-ring", "proc", "signal"; "invalid". */
const char *nsp_end_source_name(int source);

/* How one process ended (nsp_trace_info.end). */
struct nsp_end_info {
  int state;            /* enum nsp_end_state */
  int source;           /* enum nsp_end_source */
  int64_t time_ns;      /* wall clock (ns): EXITED, when its exit handlers ran;
                           RUNNING, when it was last heard from (its ring's
                           heartbeat, else the end of its trace); KILLED and
                           CRASHED, its last sign of life (the heartbeat, else
                           the end of its trace); 0 unknown */
  int exit_status;      /* EXITED: the status it gave exit() (0 a clean exit;
                           another: it exited with an error, not cleanly); -1
                           unknown (its exit handlers ran without saying) */
  int64_t age_ns;       /* RUNNING: the analysis's "now" minus time_ns (how
                           long ago it was last heard from, ns; 0 when its
                           clock is ahead); 0 otherwise */
  int signo;            /* CRASHED: the signal (Linux numbers); 0 */
  const char *signal;   /* CRASHED: "SIGSEGV"; "" otherwise */
  uint64_t inflight;    /* calls not returned: EXITED, those other threads were
                           inside when its exit handlers ran (EXIT's count);
                           otherwise its INFLIGHT records (ninflight) */
  uint32_t unslotted;   /* threads whose calls in flight are not known (its
                           ring's in-flight table was full); 0 */
  const char *why;      /* UNKNOWN: "no exit record in trace format 1.4",
                           "no exit record and no crash ring"; "" otherwise */
  unsigned format_minor; /* the trace's format, 1.format_minor: below 5 its end
                            is never said (reports keep quiet about it) */
};

/* One call a process had not returned from when its crash ring was read
 * (an INFLIGHT record, format 1.5; nsp_trace_info.inflight). */
struct nsp_inflight {
  struct nsp_call call; /* api, comm_id (a split's or shrink's: the parent's),
                           seq, count, dtype, redop, peer as its CALL would have
                           them; time_ns its entry; in_flight 1, done 0 */
  uint64_t new_comm_id; /* init, split, shrink: the id the new communicator's
                           COMM record has (0: unknown, a no-color split) */
  uint64_t parent_id;   /* split, shrink: the parent's id; 0 */
  int32_t rank, nranks; /* init: the rank and nranks asked for; -1 */
  int32_t color, key;   /* split: its arguments; -1 */
  uint32_t split_index; /* split, shrink: the parent's splits and shrinks before it */
  uint32_t tid;         /* the calling thread */
  int64_t wait_ns;      /* entry to the process's last sign of life (ns) */
  const struct nsp_pysite *pysite; /* format 1.6: its Python call site; NULL none */
};

/* A libnccl the shim did not interpose, loaded in the process (a LIBNCCL
 * record, format 1.5): calls made through it are not in the trace. */
struct nsp_libnccl {
  const char *path;     /* as the dynamic loader has it */
  int32_t version;      /* its ncclGetVersion() code; 0 unknown */
  int64_t time_ns;      /* when the shim saw it (wall clock) */
};

/* One traced process (one trace file). */
struct nsp_trace_info {
  const char *path;     /* as given to nsp_job_add_path / the name given to _add_mem */
  const char *host;     /* header host name */
  uint32_t pid, ppid;
  int rank;             /* job rank: environment RANK, SLURM_PROCID,
                           OMPI_COMM_WORLD_RANK, PMI_RANK or PMIX_RANK; else
                           the file name's ".rank<R>"; else its rank in the
                           largest communicator it joined; -1 unknown */
  int32_t nccl_version; /* ncclGetVersion() code, e.g. 22809; 0 unknown */
  const char *shim_version; /* "" when not recorded */
  int64_t realtime_ns, monotonic_ns; /* the header's clock pair */
  uint64_t records;     /* records read */
  uint64_t frames;      /* zstd frames read */
  uint64_t calls;       /* CALL records read */
  uint64_t work_calls;  /* those of collectives and send/recv: the calls
                           completion tracking follows */
  uint64_t dropped;     /* records the shim reported as dropped */
  uint64_t recovered;   /* records recovered from the crash ring "<path>.ring":
                           the process died before writing them (included in
                           records, calls, ...) */
  uint64_t errors;      /* events with a non-success result (ncclInProgress excluded) */
  uint64_t untracked_calls; /* format 1.4: calls whose completion was not
                           asked for (NSP_CALL_UNTRACKED: their communicator
                           was made with NCCLSPY_TRACK=0, or a benchmark mode) */
  const char *problem;  /* NULL when the file read cleanly; else the reader's
                           sentence with the byte offset where reading stopped */
  size_t nenv;          /* environment snapshot: nenv (name, value) pairs */
  const char *const *env; /* 2*nenv strings: name, value, name, value, ... */
  /* Since format 1.1 (0 / "" when the trace does not say): */
  const char *nccl_path;  /* the libnccl the shim resolved */
  int32_t driver_version; /* cuDriverGetVersion, e.g. 12040 */
  int32_t runtime_version; /* cudaRuntimeGetVersion */
  const char *launcher;   /* "torchrun", "slurm", "openmpi", "pmi", "" */
  uint32_t tracking;      /* NSP_TRACK_* bits */
  int64_t end_ns;         /* wall clock of the latest timestamp in the trace */
  uint64_t completions;   /* COMPLETION records read */
  size_t nsites;          /* call sites read */
  /* Since format 1.3: */
  uint64_t signals;       /* SIGNAL records read */
  const struct nsp_signal *signal; /* the first of them; NULL none */
  /* Since format 1.5 (older traces: end.state NSP_END_UNKNOWN, none of the rest): */
  struct nsp_end_info end; /* how the process ended */
  size_t ninflight;        /* calls it had not returned from (INFLIGHT records of
                              its crash ring), in the order read */
  const struct nsp_inflight *inflight;
  size_t nlibnccl;         /* libnccls the shim did not interpose (LIBNCCL) */
  const struct nsp_libnccl *libnccl;
  /* After nsp_job_analyze: */
  int joined;              /* 1: a rank: it made a COMM record (a failed or pending
                              creation too), was inside a communicator's creation
                              when its ring was read, or called on a communicator;
                              also 1 for a trace with no record (nothing says).
                              0: its records show no communicator at all (a
                              launcher that only made the unique id, a helper that
                              only called ncclGetVersion): not counted as a rank
                              by the world-size, missing-rank and setting checks */
  const char *run_id;      /* the identity of the run it belongs to
                              (nsp_run_info.id) */
  /* Since format 1.6: */
  size_t npysites;         /* Python call sites read (PYSITE records kept) */
};

/* One run (or attempt) among the traces given (nsp_job_run; docs/REPORT.md,
 * "Runs").  Its identity comes from the launcher variables of its
 * processes' environment snapshots: torchrun's TORCHELASTIC_RUN_ID and
 * TORCHELASTIC_RESTART_COUNT, Slurm's SLURM_JOB_ID, SLURM_STEP_ID and
 * SLURM_RESTART_COUNT, Open MPI's OMPI_MCA_ess_base_jobid, PMIx's
 * PMIX_NAMESPACE; processes with the same ones that share no
 * communicator, one after the other in time, are separate runs, named by
 * their world communicator's id as well; and without launcher variables
 * by the world communicator's id alone (the first communicator the
 * process created from a unique id), with the start time where that
 * repeats. */
struct nsp_run_info {
  const char *id;       /* "torchrun:job7:restart=1", "slurm:1234.0",
                           "comm:0a1b2c3d4e5f6071", ... parts joined by '/' */
  size_t nprocs;        /* its traces (processes) */
  size_t nranks;        /* those that joined a communicator (nsp_trace_info.joined) */
  int64_t start_ns;     /* earliest header realtime of its ranks (of its traces
                           when none joined), wall clock */
  int64_t end_ns;       /* latest record of its traces, wall clock */
  int analyzed;         /* the analysis is of this run (every run with --run all) */
};

/* One communicator, unified across the traces of its ranks. */
struct nsp_comm_info {
  uint64_t id;          /* communicator id (same on all its ranks) */
  uint64_t parent_id;   /* 0: not made by split/shrink */
  int32_t color, key;   /* split arguments; meaningful when parent_id != 0 */
  int32_t nranks;       /* as its members reported (members that disagree:
                           the value most report, the smaller on a tie); -1 unknown */
  int api;              /* NSP_API_* of the call that made it (first member seen) */
  const char *name;     /* ncclConfig_t commName; "" when unset */
  size_t ntraced;       /* distinct ranks with a trace */
  const int *ranks;     /* those ranks, ascending */
  uint64_t max_seq;     /* highest collective seq any rank reached */
  uint64_t ncoll;       /* collective calls NCCL accepted, all ranks together (a
                           refused one counts only as a rank's last call) */
  uint64_t np2p;        /* send/recv calls, all ranks together */
  const int *job_ranks; /* job ranks of the processes of ranks[0..ntraced), in
                           that order (-1: unknown), from their traces */
  int keys_differ;      /* split: its members passed different keys (key is
                           the first member's) */
};

/* One process on a side of a finding. */
struct nsp_proc {
  int rank;             /* communicator rank (job rank for "error", "signal" and
                           the env-* kinds without a communicator:
                           nsp_finding_job_ranks) */
  int comm_rank;        /* its rank in the finding's communicator: == rank
                           where ranks are communicator ranks; for "error",
                           -1 when the process is not a member of it (its
                           first error was elsewhere) or there is none */
  size_t trace;         /* index for nsp_job_trace() */
  const char *host;
  uint32_t pid;
  /* Per-process detail: "stopped-early" and not-arrived ranks of "hang":
   * the process's last call on any communicator (call.done: whether it
   * completed); arrival-unknown ranks of "hang": their last collective on
   * the finding's communicator that the trace covers (done -1: unknown;
   * api -1 when it has none); waiting ranks of "hang"/"never-completed":
   * the call that never completed; "error": its first error in time;
   * otherwise api == -1. */
  struct nsp_call call;
  /* The call site of the call the finding names for this process (its
   * call at the seq for mismatches, the k-th send/recv, the error's call,
   * the last or waiting call of a hang); NULL when the trace has none. */
  const struct nsp_callsite *site;
  /* The Python call site of that call (format 1.6), shown before site;
   * NULL when the trace has none (no Python, or sites off). */
  const struct nsp_pysite *pysite;
  int64_t wait_ns;      /* waiting ranks: enqueue to the end of the trace; 0 */
  uint32_t done_flags;  /* waiting ranks: NSP_DONE_ABANDONED (its communicator
                           was aborted first) or NSP_DONE_ERROR (the event
                           query failed) when a COMPLETION record said it
                           never completed; 0 when there was none */
  /* Not-arrived ranks of "hang": the earliest call of the process that
   * never completed (api -1 none): what it is stuck in. */
  struct nsp_call blocked;
  /* "signal": the fatal signal (site is then its stack, and call the
   * process's last NCCL call); NULL otherwise. */
  const struct nsp_signal *signal;
  /* How the process ended (its trace's nsp_trace_info.end): every finding
   * that names a process says it. */
  const struct nsp_end_info *end;
  /* Its finalize, destroy, abort or revoke of the finding's communicator
   * (a COMM_END record): NSP_API_CommAbort, ...; -1 none.  comm_end_ns:
   * when it was called (wall clock). */
  int comm_end_api;
  int64_t comm_end_ns;
};

/* A group of ranks that agree with each other and differ from the other
 * sides of the finding. */
struct nsp_side {
  size_t nranks;
  const int *ranks;     /* ascending; ranks[i] == procs[i].rank */
  const struct nsp_proc *procs;
  /* What the side did: mismatches: its collective at the seq; p2p: its
   * k-th send or recv (api -1 when it posted none); stopped-early: its last
   * collective on the communicator (seq = where it stopped, 0 when it made
   * none); error: result = the side's result code. */
  struct nsp_call call;
  uint64_t posted;      /* p2p: sends/recvs this rank posted to/from the peer */
  const char *text;     /* one line, e.g. "all-reduce 1024 x float16 sum (2048 bytes)" */
  int role;             /* hang, never-completed: enum nsp_side_role */
  const char *value;    /* env-*: the side's value ("2.28.9", "eth0"); NULL: unset */
};

/* A finding.  Sides are ordered: mismatches by lowest rank, p2p sender
 * first, stopped-early by ascending seq, error origin first, hang and
 * never-completed by role (not-arrived, waiting, arrival-unknown, failed,
 * untracked, completed), env-* by lowest rank, signal: the first process to die,
 * then the others by signal in order of first appearance.  A "signal"
 * finding has no communicator; its ranks are job ranks. */
struct nsp_finding {
  int kind;             /* enum nsp_finding_kind */
  uint64_t comm_id;     /* 0 when the finding has no communicator */
  const struct nsp_comm_info *comm; /* NULL when comm_id is 0 or unknown */
  uint64_t seq;         /* collective seq; p2p: k (k-th send vs k-th recv,
                           from 1); stopped-early: the lowest last seq;
                           error: seq of the origin call (0 none) */
  int api;              /* the op at seq (the odd side's for mismatches); -1 */
  int src, dst;         /* p2p: sending and receiving rank; -1 otherwise */
  size_t nsides;
  const struct nsp_side *sides;
  size_t nodd;
  const int *odd_ranks; /* the ranks to look at, ascending: what they are
                           for each kind is the "odd" column of the kinds
                           table (nsp_finding_kind_info()->odd_ranks) */
  uint64_t later;       /* consequences counted, not reported separately:
                           what for each kind is the table's "later" column */
  int64_t time_ns;      /* earliest call involved (wall clock); 0 unknown;
                           hang: when the first waiting rank enqueued;
                           signal: when the first process got its signal */
  const char *hint;     /* what to check, one line */
  const char *message;  /* one line naming the sides and their values */
  size_t cause;         /* index (nsp_job_finding) of the finding this one
                           follows from ("caused by"); SIZE_MAX none */
  const char *setting;  /* env-nccl-setting, env-world-size: the variable */
  const char *hint_id;  /* error: the row of the hint table used; NULL */
  /* The headline's first clause where the sides alone would not say it:
   * the ranks to look at, named, and what they did. "rank 2 never called
   * it (no trace)" (comm-init-wait: ranks no side holds, before the
   * sides), "rank 1 has no trace (1 of 2 traced)" (env-missing-ranks),
   * "ranks 0-1 share one GPU, GPU-..." (env-duplicate-gpu; by-value
   * findings: instead of the sides); NULL otherwise. */
  const char *lead;
};

struct nsp_job;

/* A new, empty job.  NULL when out of memory. */
struct nsp_job *nsp_job_create(void);

/* Frees the job and everything it returned; job may be NULL. */
void nsp_job_destroy(struct nsp_job *job);

/* Adds a trace file, or every "*.ncclspy" file directly inside a
 * directory (not recursive; in name order, so results do not depend on
 * readdir order).  A damaged file is still added, with its problem in
 * nsp_trace_info.problem and a note.  A file that cannot be read as a
 * trace at all is skipped with a note.
 * A file already added (same device and inode, under any path) and a
 * copy of an added trace (same host, pid and header clock pair; noted)
 * are not added again but count as added; a "*.ncclspy.ring" file is
 * skipped (returns 0: its trace reads it).  A directory without traces
 * of its own whose subdirectories hold some sets nsp_job_error.
 * Returns the number of traces added (>= 0; 0 for a directory without
 * traces), NSP_AN_EREAD when path itself (or, for a file, its header)
 * cannot be read, NSP_AN_ENOMEM, NSP_AN_EINVAL or NSP_AN_ESTATE. */
int nsp_job_add_path(struct nsp_job *job, const char *path);

/* Adds paths[0..n) as n calls of nsp_job_add_path would, in that order,
 * with the same job as a result, but reads the trace files among them on
 * the job's threads (nsp_job_set_threads), not one after another.
 * results[k]: what nsp_job_add_path(job, paths[k]) would have returned;
 * errors[k] (when errors is not NULL): a copy of nsp_job_error's text
 * after it, NULL when none (caller frees each).  Returns 0,
 * NSP_AN_ENOMEM, NSP_AN_EINVAL (a NULL or empty path) or NSP_AN_ESTATE. */
int nsp_job_add_paths(struct nsp_job *job, size_t n, const char *const *paths, int *results, char **errors);

/* Adds a trace held in memory (len bytes, copied), named `name` in the
 * report.  Returns 1, NSP_AN_EREAD (not a trace; noted), NSP_AN_ENOMEM,
 * NSP_AN_EINVAL or NSP_AN_ESTATE. */
int nsp_job_add_mem(struct nsp_job *job, const char *name, const void *data, size_t len);

/* The moment the analysis takes as "now", CLOCK_REALTIME ns: a process
 * whose crash ring's heartbeat (its writer thread's last pass, every few
 * ms while it lives) is at most max(10 s, 3 x its NCCLSPY_FLUSH_MS) older
 * is still running.  0 (the default): the clock when each trace is read.
 * Call before adding traces (the end of a process is decided as its trace
 * is read).  Returns 0, NSP_AN_EINVAL, or NSP_AN_ESTATE once a trace was
 * added.  The command takes it from the environment variable
 * NSP_ANALYZE_NOW_NS (for tests). */
int nsp_job_set_now(struct nsp_job *job, int64_t now_ns);

/* The host name whose processes the analysis may look up in /proc (a
 * trace's header host equal to it, its pid alive, started no later than
 * its trace and mapping libncclspy or its crash ring: still running).
 * NULL (the default): this machine's
 * gethostname(); "": none, /proc is never read.  Call before adding
 * traces; returns 0, NSP_AN_ENOMEM, NSP_AN_EINVAL or NSP_AN_ESTATE. */
int nsp_job_set_local_host(struct nsp_job *job, const char *host);

/* The shortest part of the live window (above): a process heard from
 * this long ago or less runs, and a running process's call waiting this
 * long as of its last sign of life may be a hang; the window is the
 * larger of it and 3 x the trace's NCCLSPY_FLUSH_MS.  Default 10 s
 * (10000000000 ns); `ncclspy watch --hang-after` lowers it.  Call before
 * adding traces; returns 0, NSP_AN_EINVAL (not above 0) or NSP_AN_ESTATE. */
int nsp_job_set_live_min(struct nsp_job *job, int64_t ns);

/* Threads that read traces: n >= 1 (1: the calling thread alone), 0 the
 * default: one less than the CPUs this process may run on (its
 * affinity), 1 when that is under 2, at most NSP_JOB_THREADS_DEFAULT.
 * With n >= 2, n workers decode files and the calling thread folds them
 * into the job in the order they were added, so the report is the same
 * for every n; that fold is the limit (on a 16-core host, 2 workers took
 * 0.55-0.88 of one thread's time and more gave no more; on 2 cores, 2
 * workers beside the fold were slower than one thread), and each worker
 * holds up to about 5 MiB of decoded records and a file of up to 4 MiB.
 * nsp_job_perf folds on every thread instead: n threads (default: the
 * CPUs, at most NSP_JOB_THREADS_DEFAULT) each read and fold whole traces,
 * and the figures are the same for every n (on 2 cores, 2 threads took
 * 0.55 of one thread's time at 10,000 ranks).  Call before adding traces; returns 0, NSP_AN_EINVAL
 * (n < 0 or over NSP_JOB_THREADS_MAX) or NSP_AN_ESTATE once a trace was
 * added.  The command takes it from --threads N. */
#define NSP_JOB_THREADS_MAX 64
#define NSP_JOB_THREADS_DEFAULT 4
int nsp_job_set_threads(struct nsp_job *job, int n);

/* Whether every record of every trace is decoded (on), or only the frames
 * the traces' indexes show a finding may need (off, the default: clean
 * frames of blocks of seqs where every rank's signatures agree are
 * stepped over and their indexes' summaries folded in; docs/DESIGN.md,
 * "Reading what is needed").  The report is the same either way.  Call
 * before adding traces; 0, NSP_AN_EINVAL (no job) or NSP_AN_ESTATE.  The
 * command takes it from --full-read. */
int nsp_job_set_full_read(struct nsp_job *job, int on);
/* Data frames the job's loads stepped over, their indexes' summaries
 * folded in instead of their records (0 with --full-read). */
uint64_t nsp_job_frames_stepped_over(const struct nsp_job *job);

/* What reading has done so far, for a front end's progress line
 * (nsp_job_set_progress).  Counts are of the current phase. */
enum nsp_progress_phase {
  NSP_PROGRESS_READ = 0, /* reading the traces added (nsp_job_add_path) */
  NSP_PROGRESS_REREAD,   /* reading them again: one run's traces out of several
                            (nsp_job_analyze), the figures (nsp_job_perf) */
};
struct nsp_job_progress {
  int phase;            /* enum nsp_progress_phase */
  size_t files_done;    /* trace files read through */
  size_t files_total;   /* files known so far: a directory's when it was listed,
                           every earlier path's; never below files_done */
  uint64_t records;     /* records read, all files of the phase */
  uint64_t bytes_done;  /* trace bytes (as stored: compressed) read through */
  uint64_t bytes_total; /* bytes of the files known so far: with bytes_done, the
                           share done, for an estimate of the time left */
};
/* Called while traces are read: after each file and every 16384 records.
 * p is valid during the call only. */
typedef void nsp_job_progress_fn(void *arg, const struct nsp_job_progress *p);
/* Sets (fn NULL: clears) the progress callback.  Any time. */
void nsp_job_set_progress(struct nsp_job *job, nsp_job_progress_fn *fn, void *arg);

/* Which run to analyse when the traces come from more than one
 * (nsp_run_info): NULL or "" (the default) the newest (latest start),
 * "all" every trace as one job, else a run's identity, a unique prefix of
 * it or of one of its '/'-separated parts, or its number K in the list
 * newest first (1 the newest).  The other runs' traces are left out of
 * the analysis entirely (read again without them).  Call before
 * nsp_job_analyze; returns 0, NSP_AN_ENOMEM, NSP_AN_EINVAL or
 * NSP_AN_ESTATE. */
int nsp_job_select_run(struct nsp_job *job, const char *run);

/* Runs the rules over the traces added so far (once per job), those of
 * the selected run (nsp_job_select_run).  A job with no traces analyses
 * to no findings.  Returns 0, NSP_AN_ENOMEM, NSP_AN_ESTATE, or
 * NSP_AN_EINVAL when the selected run is none of the traces' (nsp_job_error
 * says which there are; the job then has no findings).  Re-reads trace files whose send/recv calls are named in
 * a finding (to fetch those calls' details). */
int nsp_job_analyze(struct nsp_job *job);

/* Detail of the last failure ("dir/x.ncclspy: bad magic"); "" when none. */
const char *nsp_job_error(const struct nsp_job *job);

/* Traces read (readable ones only), in the order added. */
size_t nsp_job_ntraces(const struct nsp_job *job);
const struct nsp_trace_info *nsp_job_trace(const struct nsp_job *job, size_t i);

/* The runs the traces come from, newest (latest start) first, after
 * nsp_job_analyze; one when they are all one run.  The traces of the
 * runs not analysed are no longer in nsp_job_trace. */
size_t nsp_job_nruns(const struct nsp_job *job);
const struct nsp_run_info *nsp_job_run(const struct nsp_job *job, size_t i);

/* Communicators, in the order traces first made them (files in name
 * order, records in file order); valid after analyze. */
size_t nsp_job_ncomms(const struct nsp_job *job);
const struct nsp_comm_info *nsp_job_comm(const struct nsp_job *job, size_t i);
/* The communicator with this id, or NULL. */
const struct nsp_comm_info *nsp_job_comm_by_id(const struct nsp_job *job, uint64_t id);

/* Where each rank is (`ncclspy watch`'s status line), after analyze: the
 * lowest last collective seq among the traced ranks of communicator i
 * (nsp_job_comm order; a call in flight counts, 0: a rank made none);
 * nsp_comm_info.max_seq is the highest.  0 out of range. */
uint64_t nsp_job_comm_min_seq(const struct nsp_job *job, size_t i);
/* When the process of trace i entered its last NCCL call (a call in
 * flight included), wall clock ns (its host's clock); 0 none or out of
 * range.  Its records after that (completions, heartbeats) do not count:
 * a process waiting inside a call is quiet since it entered it. */
int64_t nsp_job_trace_last_call_ns(const struct nsp_job *job, size_t i);

/* Findings, likely cause first (see docs/REPORT.md); valid after analyze. */
size_t nsp_job_nfindings(const struct nsp_job *job);
const struct nsp_finding *nsp_job_finding(const struct nsp_job *job, size_t i);

/* Notes: damaged or unreadable files (with byte offsets), dropped records,
 * ranks seen twice, calls that could not be attributed.  Not findings:
 * they do not change the exit status. */
size_t nsp_job_nnotes(const struct nsp_job *job);
const char *nsp_job_note(const struct nsp_job *job, size_t i);

/* One paragraph naming the first problem (or saying there is none);
 * "" before nsp_job_analyze. */
const char *nsp_job_summary(const struct nsp_job *job);

/* The report's first line (docs/REPORT.md, "The headline"): the first
 * finding as what happened where, in one line ("seq 2 all-reduce on
 * communicator 57a1d0c0ffee0001: rank 1 passed float32 where rank 0
 * passed float16 (dtype mismatch)"), made from its kind's side shape and
 * name (the kinds table); without findings, the summary's first sentence
 * (with what the traces could not see).  "" before nsp_job_analyze. */
const char *nsp_job_headline(const struct nsp_job *job);

/* The order in which the headline names f's sides, into order (room for
 * f->nsides indices): a single odd side (the one holding exactly its odd
 * ranks) first, then the others as they are.  The call-site lines under
 * the headline follow it.  Returns f->nsides. */
size_t nsp_finding_side_order(const struct nsp_finding *f, size_t *order);

/* What the traces could not see, counted in processes (traces), after
 * nsp_job_analyze: the summary's "but: ..." (docs/REPORT.md, "The
 * summary"), and with no finding the command's exit status 3 when
 * `unclean` or `libnccl` is not 0. */
struct nsp_job_caveats {
  size_t running;     /* still running (NSP_END_RUNNING) */
  size_t unclean;     /* ended without a clean exit (NSP_END_KILLED, NSP_END_CRASHED) */
  size_t unknown_end; /* format 1.5 or newer and NSP_END_UNKNOWN: no exit record, no ring */
  size_t inflight;    /* with calls in flight (INFLIGHT records), or that exited
                         while other threads were inside calls */
  size_t libnccl;     /* loaded a libnccl the shim does not interpose */
  int64_t heard_ns;   /* the running ones: the longest time since one was last
                         heard from (ns) */
  size_t incomplete;  /* traces that lost records: dropped, a damaged or cut file,
                         no records, communicator records lost, a damaged crash
                         ring, or a rank's trace ending before collectives other
                         ranks completed (the summary's "coverage is incomplete") */
};
/* Never NULL; all 0 before nsp_job_analyze. */
const struct nsp_job_caveats *nsp_job_caveats(const struct nsp_job *job);

/* The rules the analysis runs, in order (i < nsp_analyze_nrules()): each
 * one's name ("alignment") and what it checks, one line; NULL past the
 * end.  `ncclspy help analyze` lists them. */
size_t nsp_analyze_nrules(void);
const char *nsp_analyze_rule(size_t i, const char **checks);

/* Earliest header realtime among the traces (ns): the origin of the
 * relative times ("+1.234567 s") in reports; 0 without traces. */
int64_t nsp_job_start_ns(const struct nsp_job *job);

/* --- formatting helpers (used by the reports, exposed for tests) --- */

/* Writes ranks (ascending, duplicates allowed) as ranges, "0-3,5", into
 * buf (always NUL-terminated when buflen > 0; a list that does not fit
 * ends in "..."), and returns the length the full text has, like
 * snprintf. */
size_t nsp_format_ranks(char *buf, size_t buflen, const int *ranks, size_t n);

/* Writes how messages and reports name process p of finding f into buf:
 * "rank R" (its rank in f's communicator, or its job rank where f names
 * job ranks and has no communicator), "rank R (job rank J)" where its job
 * rank J differs, "job rank J" for a process of an "error" finding that is
 * not a member of f's communicator.  Returns the snprintf-style length. */
size_t nsp_format_proc_rank(char *buf, size_t buflen, const struct nsp_job *job, const struct nsp_finding *f,
                            const struct nsp_proc *p);

/* How every message and report names processes (one function for all):
 * ranks[0..n) (ascending: a communicator's ranks, or job ranks) whose
 * processes have the job ranks job_ranks[0..n) (NULL, or -1 for one:
 * unknown), into buf: "rank 1", "ranks 0-2", and where some known job
 * rank differs from its rank "rank 1 (job rank 3)", "ranks 0-1 (job ranks
 * 2-3)" (job ranks in the order of the ranks, "?" unknown; after 16
 * ranges ",...").  Returns the snprintf-style length. */
size_t nsp_format_ranks_job(char *buf, size_t buflen, const int *ranks, const int *job_ranks, size_t n);

/* How the reports name side s of finding f: nsp_format_ranks_job of its
 * ranks and its processes' job ranks; for a finding that names job ranks
 * (nsp_finding_job_ranks), "job ranks 0-2" where they are not also its
 * communicator's ranks or some communicator of the job numbers its ranks
 * otherwise (nsp_job_ranks_differ), else "ranks 0-2". */
size_t nsp_format_side_ranks(char *buf, size_t buflen, const struct nsp_job *job, const struct nsp_finding *f,
                             const struct nsp_side *s);

/* True when some process's rank in some communicator differs from its
 * job rank (a split communicator, a subgroup): a bare "rank 1" would be
 * ambiguous there, and the reports say "job rank 1" of job ranks. */
int nsp_job_ranks_differ(const struct nsp_job *job);

/* True when side s of f lists job ranks that are not also ranks of f's
 * communicator (an "error" finding's side with a process outside it, or
 * numbered otherwise there): the reports then write "job ranks 0-2". */
int nsp_side_job_ranks(const struct nsp_finding *f, const struct nsp_side *s);

/* Writes a call as the report shows it, "all-reduce 1024 x float16 sum
 * (2048 bytes)", "broadcast 8 x int32 root 1 (32 bytes)", "send 4 x
 * float32 to 1 (16 bytes)"; returns the snprintf-style length. */
size_t nsp_format_call(char *buf, size_t buflen, const struct nsp_call *c);
/* c's reduction op as reports name it: "sum", "premulsum(float32 host
 * 0.25)", "premulsum(float16 device)", or for a PreMulSum op whose
 * creation was not traced "premulsum#5" (its handle); buf holds what is
 * not a constant; "premulsum" where the definition is unknown (premul_dtype
 * < 0: perf's lines, which hold every PreMulSum op).  Every report part
 * (text, JSON, headline, perf) names a reduction op through this.
 * Returns the name. */
const char *nsp_format_redop(char *buf, size_t buflen, const struct nsp_call *c);

/* Writes how a process ended, as messages and reports say it, into buf:
 * "exited cleanly at +1.234567 s" (", with 2 calls of other threads in
 * flight"), "exited at +T s (its exit handlers ran; the trace could not
 * be finished)", "still running (last heard 2.0 s ago)", "still running
 * (its pid is alive on this host)", "ended without a clean exit (SIGKILL,
 * the OOM killer or _exit; last heard at +T s)", "crashed with SIGSEGV at
 * +T s", "end unknown (no exit record and no crash ring)"; "" for a trace
 * older than format 1.5.  Times relative to nsp_job_start_ns.  Returns
 * the snprintf-style length (0: nothing to say). */
size_t nsp_format_end(char *buf, size_t buflen, const struct nsp_job *job, const struct nsp_end_info *e);

/* What a process did to a communicator with entry point api
 * (nsp_proc.comm_end_api): "finalized", "destroyed", "aborted",
 * "revoked"; "ended" for others. */
const char *nsp_comm_end_word(int api);

/* The one-line hint for a finding kind (same text as nsp_finding.hint for
 * every kind but "error", whose hint also depends on the result code). */
const char *nsp_finding_kind_hint(int kind);

/* --- hints for errors: one table, rows matched in order ---------------- */

/* A row: the likely cause of an error and what to check.  A row matches
 * when its result code matches (-1: any code) and, if it has patterns,
 * one of them is a case-insensitive substring of the ncclGetLastError
 * text; rows that need version skew match only when the traces show
 * different NCCL versions. */
struct nsp_hint {
  const char *id;        /* stable name: "net-connection-reset", "result-system-error", ... */
  int result;            /* ncclResult_t the row is about; -1 any */
  const char *const *patterns; /* NULL-terminated; NULL: the code alone */
  int needs_version_skew;
  const char *cause;     /* likely cause, short */
  const char *check;     /* what to check */
  const char *settings;  /* space-separated variables whose values the hint
                            shows per rank from the snapshot; NULL none */
};
size_t nsp_hint_count(void);
const struct nsp_hint *nsp_hint_get(size_t i);
/* Index of the first matching row (pattern rows come before the rows of
 * bare result codes); SIZE_MAX when none (success, ncclInProgress). */
size_t nsp_hint_match(int result, const char *last_error, int version_skew);

/* --- performance figures (`ncclspy perf`) ------------------------------ */

/* nccl-tests' size S of one call, bytes: count x dtype size, times nranks
 * for all-gather (sendcount), reduce-scatter (recvcount), all-to-all,
 * gather and scatter (count per rank).  0 for unknown dtypes. */
uint64_t nsp_perf_size(int api, uint64_t count, int dtype, int nranks);
/* nccl-tests' bus bandwidth factor: all-reduce 2(n-1)/n; all-gather,
 * reduce-scatter, all-to-all, gather, scatter (n-1)/n; broadcast, reduce,
 * send, recv 1. */
double nsp_perf_busbw_factor(int api, int nranks);

/* GPU time of one (communicator, op, exact size S, count, dtype, reduction
 * op, root): one line of nccl-tests' output.  S and count are per rank and
 * per call; calls, timed, failed and untracked are summed over the ranks. */
struct nsp_perf_row {
  int api;              /* op (Bcast counted as Broadcast) */
  int log2;             /* floor(log2(bytes)); -1 for bytes == 0 */
  uint64_t bytes;       /* nccl-tests' size S of one call on one rank (nsp_perf_size);
                           a group's sample (see timed) is its calls' S summed */
  uint64_t count;       /* the call's count argument (elements per rank; summed
                           for a group's sample) */
  int dtype;            /* -1: a group's calls of several dtypes */
  int redop;            /* -1: none (no reduction, or a group's of several);
                           ncclNumOps for every ncclRedOpCreatePreMulSum op */
  int root;             /* root of broadcast, reduce, gather, scatter; -1 others */
  uint64_t calls;       /* calls of this line, all ranks (failed ones too) */
  uint64_t timed;       /* GPU time samples: completions with NSP_DONE_OK and
                           NSP_DONE_TIMED of calls that did not fail (a group
                           gives one per (communicator, op): a line of its
                           own, S and count summed, when it held several) */
  uint64_t failed;      /* of calls, left out of the times because they failed:
                           returned an error, completed with NSP_DONE_ERROR or
                           NSP_DONE_ABANDONED, ended at or after their
                           communicator's first abort, revoke or asynchronous
                           error (in that process), or (with completion
                           tracking) were in a group whose ncclGroupEnd failed */
  uint64_t untracked;   /* of calls, with no GPU time to take: completed with
                           NSP_DONE_UNTRACKED or NSP_DONE_CAPTURED */
  int64_t p50_ns, p99_ns; /* GPU duration percentiles (nearest rank); 0 untimed */
  double algbw_gbs;     /* sum of S / sum of GPU time over timed calls (GB/s = 1e9 B/s) */
  double busbw_gbs;     /* algbw x nsp_perf_busbw_factor */
};

/* A collective with a large arrival spread. */
/* nsp_perf_spread.api at a seq where ranks called different ops. */
#define NSP_PERF_OP_MIXED (-1)
struct nsp_perf_spread {
  uint64_t seq;
  int api;              /* the op (Bcast as Broadcast); NSP_PERF_OP_MIXED
                           when ranks called different ones */
  int64_t spread_ns;    /* last minus first entry, wall clock */
  int last_rank;        /* the rank that arrived last; -1 on a tie */
  int last_job_rank;    /* its process's job rank; -1 unknown or a tie */
};

/* A rank that arrived last. */
struct nsp_perf_straggler {
  int rank;             /* communicator rank */
  size_t trace;
  const char *host;
  uint32_t pid;
  uint64_t last;        /* collectives where it arrived strictly last */
  double share;         /* last / nsp_perf_comm.with_last */
  int job_rank;         /* its process's job rank; -1 unknown */
};

struct nsp_perf_comm {
  uint64_t comm_id;
  const struct nsp_comm_info *comm;
  size_t nrows;
  const struct nsp_perf_row *rows; /* by op, then bytes, count, dtype, redop, root */
  uint64_t collectives; /* seqs every traced rank (>= 2) reached */
  uint64_t with_last;   /* of those, with one rank strictly last */
  int64_t spread_p50_ns, spread_p99_ns, spread_max_ns;
  size_t nworst;
  const struct nsp_perf_spread *worst; /* largest spreads first (up to 5) */
  size_t nstragglers;
  const struct nsp_perf_straggler *stragglers; /* most often last first (up to 8) */
};

/* Computes the performance figures: re-reads every trace (after
 * nsp_job_analyze, which unifies the communicators), on the job's threads
 * (nsp_job_set_threads).  A trace that cannot be read again adds a note
 * (nsp_job_note) and nothing to the figures, and its communicators then
 * have no arrivals (no seq was reached by every traced rank); the perf
 * reports print the job's notes.  Returns 0,
 * NSP_AN_ENOMEM, or NSP_AN_ESTATE (not analysed yet, or called twice). */
int nsp_job_perf(struct nsp_job *job);
/* Communicators with figures, in nsp_job_comm order. */
size_t nsp_job_nperf(const struct nsp_job *job);
const struct nsp_perf_comm *nsp_job_perf_comm(const struct nsp_job *job, size_t i);

/* --- the calls one by one (`ncclspy export`, the HTML swimlane) -------- */

/* A communicator's seq window of nsp_calls_filter: seqs lo..hi, both
 * included.  Collectives by their seq; send/recv by theirs (per peer and
 * direction: the k-th send to a peer has seq k). */
struct nsp_seq_window {
  uint64_t comm_id;
  uint64_t lo, hi;
};

/* nsp_calls_filter.flags: also the calls that are not collectives or
 * send/recv (ncclGroupStart/End with comm_id 0, queries, ...), as their
 * CALL records have them. */
#define NSP_CALLS_ALL_APIS 1u

/* Which calls nsp_calls_next yields; a zeroed filter yields every
 * collective and send/recv.  Arrays are copied by nsp_job_calls_open. */
struct nsp_calls_filter {
  /* Time window on the job clock (wall-clock ns, as nsp_call_event's
   * times): a call passes when its span [enter_ns, end] meets
   * [from_ns, to_ns), end being the later of exit_ns and gpu_end_ns, and
   * for a call that never returned or never completed the end of its
   * trace (the later of nsp_trace_info.end_ns and end.time_ns: its last
   * sign of life).  0: no bound on that side. */
  int64_t from_ns, to_ns;
  /* Communicator ids (nsp_comm_info.id); ncomms 0: all, and calls on no
   * communicator too. */
  const uint64_t *comms;
  size_t ncomms;
  /* Job ranks (nsp_trace_info.rank); nranks 0: every process.  Traces of
   * other ranks are not read. */
  const int *ranks;
  size_t nranks;
  /* Seq windows: a call on a communicator that has a window passes only
   * inside it; calls on other communicators are not affected. */
  const struct nsp_seq_window *windows;
  size_t nwindows;
  unsigned flags;       /* NSP_CALLS_* */
};

/* One call as the iterator yields it.  Times are on the job clock:
 * wall-clock (CLOCK_REALTIME) ns, each trace's CLOCK_MONOTONIC times
 * mapped through its header's clock pair (as nsp_call.time_ns and perf's
 * arrival spread), so calls of different hosts compare (up to the hosts'
 * clock skew); subtract nsp_job_start_ns for the reports' "+T s". */
struct nsp_call_event {
  /* api, comm_id (0: none, or a communicator whose COMM record the trace
   * lacks), seq, count (elements), dtype, redop (a PreMulSum op as its
   * handle: nsp_format_redop names it "premulsum#N"), peer (root or peer),
   * result and last_error (an error result: NCCL refused it, nothing was
   * enqueued; since format 1.4 it took no seq: seq is the one the next
   * call takes), time_ns (== enter_ns), in_flight (1: an INFLIGHT record
   * of the trace's crash ring: it never returned), and done: 1 completed
   * (a COMPLETION with NSP_DONE_OK or _CAPTURED, or none of the error
   * bits); 0 never completed (a COMPLETION saying so: done_flags; no
   * COMPLETION by the trace's end; an error result; in flight; the calls
   * of a group whose outermost ncclGroupEnd failed); -1 not known (the
   * trace does not track completion, the call is NSP_CALL_UNTRACKED, or
   * the table of calls awaiting completion was full).  nsp_format_call
   * writes it as the reports do. */
  struct nsp_call call;
  size_t trace;         /* nsp_job_trace index */
  int job_rank;         /* the process's job rank (nsp_trace_info.rank); -1 unknown */
  const struct nsp_comm_info *comm; /* the communicator of call.comm_id; NULL none */
  int comm_rank;        /* the process's rank in it (its COMM record); -1 unknown */
  uint64_t stream;      /* the cudaStream_t value; in flight: the stream of the
                           process's last returned call on that communicator (an
                           INFLIGHT record has none); 0 unknown */
  uint64_t group_id;    /* the process's group (from 1); 0 outside groups */
  int64_t enter_ns;     /* when the call was entered */
  int64_t exit_ns;      /* when it returned; 0: it never returned (in flight) */
  int64_t gpu_start_ns, gpu_end_ns; /* its COMPLETION's GPU times (NSP_DONE_TIMED;
                           a group's calls share one); 0 not timed */
  uint32_t done_flags;  /* NSP_DONE_* of its COMPLETION (or NSP_DONE_ERROR for a
                           failed group); 0 none */
  uint32_t tid;         /* in flight: the calling thread; 0 otherwise */
  uint32_t site_id, pysite_id; /* the trace's call-site ids; 0 none */
  const struct nsp_callsite *site;  /* NULL none */
  const struct nsp_pysite *pysite;  /* NULL none */
};

struct nsp_calls;

/* Starts a walk over the calls of an analysed job (after nsp_job_analyze),
 * read again from its trace files, one trace after another in
 * nsp_job_trace order.  Within a trace, a call comes when its fate is
 * known: at its CALL record when no completion is awaited, at its
 * COMPLETION, or at the trace's end (those never completed, by entry
 * time; then the calls in flight).  So calls are not in time order:
 * sort what is kept where order matters.  Memory per trace: the calls
 * awaiting completion (the GPU's queue, as the analysis holds them), a
 * word per communicator index; never every call.  A trace that cannot be
 * read again is skipped (nsp_calls_skipped).  Returns 0 and the walk in
 * *out, NSP_AN_ENOMEM, NSP_AN_EINVAL (NULL job or out), NSP_AN_ESTATE
 * (not analysed). */
int nsp_job_calls_open(const struct nsp_job *job, const struct nsp_calls_filter *filter, struct nsp_calls **out);
/* The next call that passes the filter into *out (valid until the next
 * call or nsp_calls_close).  Returns 1, 0 at the end, NSP_AN_ENOMEM. */
int nsp_calls_next(struct nsp_calls *it, const struct nsp_call_event **out);
/* Traces that could not be read again so far; their last reason in
 * *why (may be NULL). */
size_t nsp_calls_skipped(const struct nsp_calls *it, const char **why);
/* Ends the walk; it may be NULL. */
void nsp_calls_close(struct nsp_calls *it);

#ifdef __cplusplus
}
#endif
#endif /* NSP_ANALYZE_H */
