/* nsp_finding_kinds.h - the kinds of finding: one table, one line each.
 *
 * NSP_FINDING_KINDS(X) calls X(id, name, class, ranks, sides, odd, later,
 * hint) once per kind.  From it come enum nsp_finding_kind, the names
 * (nsp_finding_kind_name, the JSON report's "kind"), the likely-cause
 * order of the report, which ranks a finding names, how the text and JSON
 * reports show its sides (they ask the table, never a list of kinds), the
 * hints, and the table of kinds in docs/REPORT.md (a test compares them).
 *
 *   id     the enum constant.  Values follow the lines: add a kind at the
 *          end, never in between (C callers keep the values).
 *   name   the stable name, "dtype-mismatch"; tests and the JSON use it.
 *   class  where it sorts (enum nsp_finding_class); a finding that follows
 *          from another sorts with the root of its chain instead.
 *   ranks  which ranks its sides, procs and odd_ranks name
 *          (enum nsp_rank_space).
 *   sides  how its sides are made and shown (enum nsp_side_shape).
 *   odd    what nsp_finding.odd_ranks holds for it ("" never set).
 *   later  what nsp_finding.later counts for it ("" always 0).
 *   hint   what to check, one line (nsp_finding_kind_hint; an error's hint
 *          also depends on its result code: nsp_an_hints.c).
 *
 * A kind is made by one rule (analyzer/rules/, its `kinds`), which a test
 * checks.  Adding one: docs/DESIGN.md, "Adding a finding kind". */
#ifndef NSP_FINDING_KINDS_H
#define NSP_FINDING_KINDS_H

/* Ordering classes, likely cause first (docs/REPORT.md, "Order of
 * findings"). */
enum nsp_finding_class {
  NSP_CLASS_MISMATCH = 0, /* ranks that disagree: collectives, send/recv */
  NSP_CLASS_FAILURE = 1,  /* errors, fatal signals, hangs: by time */
  NSP_CLASS_STOPPED = 2,  /* the wavefront: ranks that stopped early */
  NSP_CLASS_ENV = 3,      /* the report's Environment section */
};

/* Which ranks a finding names (nsp_finding_job_ranks). */
enum nsp_rank_space {
  NSP_RANKS_COMM,        /* ranks of its communicator */
  NSP_RANKS_JOB_IN_COMM, /* job ranks, each process with its rank in the
                            finding's communicator (comm_rank), which the
                            report names ("no communicator" when none) */
  NSP_RANKS_JOB,         /* job ranks; no communicator */
  NSP_RANKS_COMM_OR_JOB, /* its communicator's ranks when it has one, else
                            job ranks (per-process values) */
};

/* How a finding's sides are made, and so what the reports show of them. */
enum nsp_side_shape {
  NSP_SIDES_BY_CALL,          /* one side per distinct call at the seq */
  NSP_SIDES_SEND_RECV,        /* the sender, then the receiver: their k-th
                                 send and recv, sends/recvs posted (src, dst) */
  NSP_SIDES_BY_LAST_SEQ,      /* by the last seq reached, lowest first; each
                                 process with its last call anywhere */
  NSP_SIDES_ORIGIN_BY_RESULT, /* the origin, then the others by result code;
                                 each process with its first error */
  NSP_SIDES_BY_ROLE,          /* by what the ranks did with the seq (role);
                                 each process with its call, wait, stuck-in */
  NSP_SIDES_BY_VALUE,         /* by the value the processes hold (value) */
  NSP_SIDES_ORIGIN_BY_SIGNAL, /* the first to die, then the others by
                                 signal; each with its signal and stack */
  NSP_SIDES_SHIFTED,          /* one side per distinct call at the seq, as
                                 by call; the odd ranks skipped or added
                                 calls there (the message's first clause
                                 says which, and the headline is it) */
};

/* Meanings of odd_ranks and later that several kinds share. */
#define NSP_ODD_MAJORITY "the ranks outside the side that holds a strict majority (none without one)"
#define NSP_LATER_NONE ""

/* clang-format off */
#define NSP_FINDING_KINDS(X)                                                                                           \
  X(NSP_FIND_KIND_MISMATCH, "kind-mismatch", NSP_CLASS_MISMATCH, NSP_RANKS_COMM, NSP_SIDES_BY_CALL,                    \
    NSP_ODD_MAJORITY, "later seqs of the communicator that also differ",                                               \
    "ranks made different collectives at the same position; a collective was skipped or "                              \
    "added on some ranks - look for collectives under rank-dependent conditions (if rank == "                          \
    "0, is_main_process, metric/logging gathers) and early exits or extra loop iterations")                            \
  X(NSP_FIND_DTYPE_MISMATCH, "dtype-mismatch", NSP_CLASS_MISMATCH, NSP_RANKS_COMM, NSP_SIDES_BY_CALL,                  \
    NSP_ODD_MAJORITY, "later seqs of the communicator that also differ",                                               \
    "ranks disagree on dtype; under AMP/autocast one rank may reduce a float16 tensor while "                          \
    "another reduces float32 - check autocast regions and gradient dtypes")                                            \
  X(NSP_FIND_COUNT_MISMATCH, "count-mismatch", NSP_CLASS_MISMATCH, NSP_RANKS_COMM, NSP_SIDES_BY_CALL,                  \
    NSP_ODD_MAJORITY, "later seqs of the communicator that also differ",                                               \
    "ranks passed different element counts; the tensors differ in shape across ranks - "                               \
    "check uneven last batches, padding, per-rank model/config differences and unused "                                \
    "parameters in gradient buckets")                                                                                  \
  X(NSP_FIND_REDOP_MISMATCH, "redop-mismatch", NSP_CLASS_MISMATCH, NSP_RANKS_COMM, NSP_SIDES_BY_CALL,                  \
    NSP_ODD_MAJORITY, "later seqs of the communicator that also differ",                                               \
    "ranks disagree on the reduction op (e.g. sum vs avg; PyTorch sends bool tensors as "                              \
    "uint8 with MAX) - check the op argument on each rank")                                                            \
  X(NSP_FIND_ROOT_MISMATCH, "root-mismatch", NSP_CLASS_MISMATCH, NSP_RANKS_COMM, NSP_SIDES_BY_CALL,                    \
    NSP_ODD_MAJORITY, "later seqs of the communicator that also differ",                                               \
    "ranks disagree on the root; every rank must name the same source/destination rank - "                             \
    "mixing global and group ranks in a subgroup is the usual cause")                                                  \
  X(NSP_FIND_P2P_SIZE_MISMATCH, "p2p-size-mismatch", NSP_CLASS_MISMATCH, NSP_RANKS_COMM, NSP_SIDES_SEND_RECV,          \
    "", "later sends/recvs of the pair that also differ or are unmatched",                                             \
    "a send and its matching recv differ in size; check the tensor shapes both sides "                                 \
    "expect (pipeline stages: micro-batch size, sequence length, hidden size)")                                        \
  X(NSP_FIND_P2P_UNMATCHED, "p2p-unmatched", NSP_CLASS_MISMATCH, NSP_RANKS_COMM, NSP_SIDES_SEND_RECV,                  \
    "", "the pair's other unmatched sends/recvs",                                                                      \
    "the two peers posted different numbers of sends and recvs to each other; check loop "                             \
    "bounds and schedules on both ranks (pipeline warm-up/cool-down steps)")                                           \
  X(NSP_FIND_STOPPED_EARLY, "stopped-early", NSP_CLASS_STOPPED, NSP_RANKS_COMM, NSP_SIDES_BY_LAST_SEQ,                 \
    "the ranks behind (side 1)", NSP_LATER_NONE,                                                                       \
    "these ranks stopped making collectives on this communicator while the others went "                               \
    "on and wait for them; look at what the stopped ranks did last (stack dumps, py-spy, "                             \
    "their logs): a hang, a crash, or a rank-dependent code path")                                                     \
  X(NSP_FIND_ERROR, "error", NSP_CLASS_FAILURE, NSP_RANKS_JOB_IN_COMM, NSP_SIDES_ORIGIN_BY_RESULT,                     \
    "the origin: the process with the earliest error", "the other error events, all processes together",               \
    "the earliest error is the likely origin; errors on other ranks after it "                                         \
    "(ncclRemoteError, timeouts, aborts) are usually its consequences")                                                \
  X(NSP_FIND_HANG, "hang", NSP_CLASS_FAILURE, NSP_RANKS_COMM, NSP_SIDES_BY_ROLE,                                       \
    "the ranks that did not arrive; when none is known to be absent, those whose arrival is unknown",                  \
    NSP_LATER_NONE,                                                                                                    \
    "the ranks that did not arrive are the ones to look at: they are busy elsewhere (a "                               \
    "rank-dependent code path, data loading, a host-side hang) or dead - get their stacks "                            \
    "(py-spy dump --native) and logs; the waiting ranks only show where the others were expected")                     \
  X(NSP_FIND_NEVER_COMPLETED, "never-completed", NSP_CLASS_FAILURE, NSP_RANKS_COMM, NSP_SIDES_BY_ROLE,                 \
    "the waiting ranks: their call never completed (side 1)", NSP_LATER_NONE,                                          \
    "every rank issued this collective but it did not complete on some: the ranks disagree "                           \
    "on its arguments (see a mismatch), a peer died, or the GPU or network is stuck - check "                          \
    "NCCL_DEBUG=INFO output, dmesg for Xid errors and the other ranks' errors")                                        \
  X(NSP_FIND_ENV_NCCL_VERSION, "env-nccl-version", NSP_CLASS_ENV, NSP_RANKS_COMM_OR_JOB, NSP_SIDES_BY_VALUE,           \
    NSP_ODD_MAJORITY, NSP_LATER_NONE,                                                                                  \
    "ranks load different NCCL versions; mixed versions can fail with invalid usage or "                               \
    "hang - make every node use one NCCL (check LD_LIBRARY_PATH, pip wheels, containers)")                             \
  X(NSP_FIND_ENV_NCCL_PATH, "env-nccl-path", NSP_CLASS_ENV, NSP_RANKS_COMM_OR_JOB, NSP_SIDES_BY_VALUE,                 \
    NSP_ODD_MAJORITY, NSP_LATER_NONE,                                                                                  \
    "ranks load libnccl from different paths; check LD_LIBRARY_PATH and which wheel or "                               \
    "container each node uses")                                                                                        \
  X(NSP_FIND_ENV_DRIVER, "env-driver-version", NSP_CLASS_ENV, NSP_RANKS_COMM_OR_JOB, NSP_SIDES_BY_VALUE,               \
    NSP_ODD_MAJORITY, NSP_LATER_NONE,                                                                                  \
    "nodes run different CUDA driver versions; keep the fleet on one driver")                                          \
  X(NSP_FIND_ENV_RUNTIME, "env-cuda-runtime", NSP_CLASS_ENV, NSP_RANKS_COMM_OR_JOB, NSP_SIDES_BY_VALUE,                \
    NSP_ODD_MAJORITY, NSP_LATER_NONE,                                                                                  \
    "ranks load different CUDA runtimes; check the environment (conda, containers) on each node")                      \
  X(NSP_FIND_ENV_SETTING, "env-nccl-setting", NSP_CLASS_ENV, NSP_RANKS_COMM_OR_JOB, NSP_SIDES_BY_VALUE,                \
    NSP_ODD_MAJORITY, NSP_LATER_NONE,                                                                                  \
    "an NCCL setting differs across ranks (or is unset on some); NCCL expects one "                                    \
    "configuration per job - set it the same way everywhere (launcher, job script, container env)")                    \
  X(NSP_FIND_ENV_DUP_GPU, "env-duplicate-gpu", NSP_CLASS_ENV, NSP_RANKS_COMM_OR_JOB, NSP_SIDES_BY_VALUE,               \
    "", NSP_LATER_NONE,                                                                                                \
    "two ranks of one communicator use the same GPU (NCCL fails with \"Duplicate GPU "                                 \
    "detected\"); check CUDA_VISIBLE_DEVICES and the LOCAL_RANK -> device mapping")                                    \
  X(NSP_FIND_ENV_DUP_RANK, "env-duplicate-rank", NSP_CLASS_ENV, NSP_RANKS_COMM_OR_JOB, NSP_SIDES_BY_VALUE,             \
    "", NSP_LATER_NONE,                                                                                                \
    "two processes claim the same rank; two jobs share a rendezvous (MASTER_ADDR/PORT, "                               \
    "NCCL_COMM_ID) or the launcher gave out a rank twice")                                                             \
  X(NSP_FIND_ENV_NRANKS, "env-nranks", NSP_CLASS_ENV, NSP_RANKS_COMM_OR_JOB, NSP_SIDES_BY_VALUE,                       \
    NSP_ODD_MAJORITY, NSP_LATER_NONE,                                                                                  \
    "members of one communicator disagree on its size; the ranks were launched with "                                  \
    "different world sizes or joined the wrong communicator")                                                          \
  X(NSP_FIND_ENV_MISSING_RANKS, "env-missing-ranks", NSP_CLASS_ENV, NSP_RANKS_COMM_OR_JOB, NSP_SIDES_BY_VALUE,         \
    "the ranks without a trace (when there are at most 65536)", NSP_LATER_NONE,                                        \
    "some ranks left no trace: copy their traces too (every node's NCCLSPY_DIR), or "                                  \
    "they never started, were not preloaded, or died before writing")                                                  \
  X(NSP_FIND_ENV_WORLD_SIZE, "env-world-size", NSP_CLASS_ENV, NSP_RANKS_COMM_OR_JOB, NSP_SIDES_BY_VALUE,               \
    NSP_ODD_MAJORITY, NSP_LATER_NONE,                                                                                  \
    "the launcher's world size disagrees with what was traced; check the launch "                                      \
    "command (nnodes, nproc_per_node, ntasks) and that every node's traces are here")                                  \
  X(NSP_FIND_SIGNAL, "signal", NSP_CLASS_FAILURE, NSP_RANKS_JOB, NSP_SIDES_ORIGIN_BY_SIGNAL,                           \
    "the first process to die", "the other processes that died of a signal",                                           \
    "a rank died of a fatal signal and its stack shows where (SIGSEGV/SIGBUS: a bad pointer "                          \
    "or a cut mapping; SIGABRT: abort(), a failed assert, an uncaught C++ exception or a "                             \
    "watchdog giving up); the other ranks' hangs and errors after it are usually its consequences")                   \
  X(NSP_FIND_COMM_INIT_WAIT, "comm-init-wait", NSP_CLASS_FAILURE, NSP_RANKS_JOB_IN_COMM, NSP_SIDES_BY_ROLE,            \
    "the processes that never made the creation call (the ones to look at)", NSP_LATER_NONE,                           \
    "ranks wait inside ncclCommInitRank, ncclCommSplit or ncclCommShrink for ranks that never made that call: look "   \
    "at what those did instead (their last call, py-spy dump --native, their logs) - a rank-dependent code path, a "   \
    "rank that exited or died early, or ranks that create communicators in different orders")                         \
  X(NSP_FIND_CALL_NEVER_RETURNED, "call-never-returned", NSP_CLASS_FAILURE, NSP_RANKS_JOB, NSP_SIDES_BY_CALL,          \
    "the processes inside the call", NSP_LATER_NONE,                                                                   \
    "a process was killed inside an NCCL call, or is blocked in one, and no other finding explains it: "               \
    "ncclGroupEnd waits for the peers of the group's sends and receives, ncclCommFinalize and ncclCommDestroy for "    \
    "outstanding work and the other ranks - look at what those peers did last, and at NCCL_DEBUG=INFO output")   \
  X(NSP_FIND_SEQ_SHIFT, "seq-shift", NSP_CLASS_MISMATCH, NSP_RANKS_COMM, NSP_SIDES_SHIFTED,                            \
    "the ranks whose calls are shifted against a strict majority, or against as many ranks whose calls keep the "    \
    "pattern the calls before had (none otherwise)",                                  \
    "later seqs of the communicator that also differ",                                                                 \
    "a rank skipped or added collectives: its later calls match the others' shifted by that many seqs - look at the "  \
    "call site of each side for a collective under a rank-dependent condition (if rank == 0, is_main_process, "        \
    "metric/logging gathers, early continue or break, uneven loop counts)")                                             \
  X(NSP_FIND_EXTRA_AT_END, "extra-at-end", NSP_CLASS_MISMATCH, NSP_RANKS_COMM, NSP_SIDES_SHIFTED,                      \
    "the ranks that issued collectives after the others finished with the communicator, when they are fewer",         \
    NSP_LATER_NONE,                                                                                                    \
    "some ranks issued more collectives than the others, which had finished with the communicator (destroyed or "     \
    "finalized it): a loop that ran more often on some ranks (uneven data per rank, a rank-dependent break or "        \
    "early stop) or a last collective under a rank-dependent condition - look at the call site of the extra call")
/* clang-format on */

#endif /* NSP_FINDING_KINDS_H */
