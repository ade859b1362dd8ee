/* ncclspy/trace_schema.h - the record schema of the ncclspy trace format:
 * every record kind and, per kind, its fields, in wire order.
 *
 * This one table is the definition.  From it come the record kinds
 * (enum nsp_rec_kind), the encoder and the decoder (common/nsp_codec.c),
 * the typed accessors of each kind (common/nsp_record.h), `ncclspy dump`'s
 * text and JSON keys, the field lists of docs/FORMAT.md (a test renders
 * them from this table and compares), and, through NSP_REC_SLOTS, the
 * memory form of a record (struct nsp_rec) and the crash ring's field
 * table on both sides.  Adding a field is one line here, at the end of
 * its kind (fields are only ever appended), with the format minor version
 * that added it; adding a kind is a line in NSP_REC_KINDS and its list.
 *
 * Encodings (enc): NSP_REC_WIRES below.
 *
 * Presence (cm) and prediction (pred), for the compact CALL record:
 *   cm ALWAYS: the field is always written (every field of other kinds);
 *   cm BIT: written only when its NSP_CM_BIT mask bit is set.  A field
 *   whose bit is clear equals its prediction:
 *     PREV(init)  the value of the previous CALL on the same comm in this
 *                 frame; init at frame start
 *     NEXTSEQ     the previous collective's seq on the comm plus one for
 *                 collectives; always written for send/recv; 0 otherwise
 *     PREVT       (TDELTA) the previous CALL's t_enter in this frame, any
 *                 comm; 0 at frame start
 *     DEF         the field's default (0, no text): the bit is set when
 *                 the field differs from it
 *     NONE        no prediction (cm ALWAYS)
 *
 * Location (loc), where the field lives in the memory form:
 *   R(member)   struct nsp_rec's slot `member` (NSP_REC_SLOTS)
 *   X(member)   struct nsp_rec_ext's `member` (records with strings)
 *   XENV()      struct nsp_rec_ext's nenv and env
 *   XFRAMES()   struct nsp_rec_ext's nframes and frame_* arrays
 *   WIRE()      not kept: only on the wire (CALL's mask)
 *
 * Units (unit): NSP_REC_UNITS below; they also say how `ncclspy dump`
 * shows a field.
 *
 * since: the format minor version (1.since) that added the field or kind.
 * default: what a field absent from the end of a payload reads as. */
#ifndef NCCLSPY_TRACE_SCHEMA_H
#define NCCLSPY_TRACE_SCHEMA_H

/* Encodings: W(token, name in docs/FORMAT.md, what is written). */
#define NSP_REC_WIRES(W)                                                                                  \
  W(V, "varint", "unsigned LEB128, at most 10 bytes; a signed field is written as its unsigned 32-bit "   \
                 "pattern and read back the same way")                                                    \
  W(Z, "zz", "a signed value zigzag-mapped ((v << 1) ^ (v >> 63)), then varint; a 32-bit field out of "   \
             "range makes the record malformed")                                                          \
  W(U64, "u64", "8 bytes, little-endian (hashes, which do not compress)")                                 \
  W(S, "str", "varint byte length, then the bytes (no NUL); at most 64 KiB")                              \
  W(ENV, "env", "varint n, then n x (str name, str value)")                                               \
  W(FRAMES, "frames", "varint n, then n x (str module, varint offset, str symbol); at most 256")          \
  W(MASK, "varint", "CALL: the NSP_CM_* bits of the fields present")                                      \
  W(TDELTA, "zz delta", "CALL: t_enter minus the previous CALL's t_enter in this frame (0 at frame start)") \
  W(DUR, "varint duration", "CALL: t_exit minus t_enter")                                                 \
  W(SEQ, "varint", "CALL: seq (prediction NEXTSEQ)")                                                      \
  W(ZDELTA, "zz delta", "CALL: zz of the value minus its prediction")

/* Units: U(token, what a value is). */
#define NSP_REC_UNITS(U)                                                                          \
  U(NUM, "a number")                                                                          \
  U(TIME, "when the record happened: CLOCK_MONOTONIC ns of the writing host")                  \
  U(MONO, "another CLOCK_MONOTONIC instant, ns")                                               \
  U(END, "CLOCK_MONOTONIC ns when the call returned")                                          \
  U(WALL, "CLOCK_REALTIME ns")                                                                 \
  U(ELEMENTS, "elements of the call's dtype")                                                  \
  U(ADDR, "an address or handle in the process (never what it points to)")                     \
  U(ID, "a 64-bit id")                                                                         \
  U(API, "an entry point: its index in common/nsp_nccl_apis.h")                                \
  U(DTYPE, "ncclDataType_t")                                                                   \
  U(REDOP, "ncclRedOp_t; -1 none")                                                             \
  U(RESULT, "ncclResult_t")                                                                    \
  U(RESIDENCE, "ncclScalarResidence_t")                                                        \
  U(SIGNO, "a Linux signal number")                                                            \
  U(SICODE, "a Linux si_code")                                                                 \
  U(REASON, "NSP_DROP_*")                                                                      \
  U(VERSION, "an ncclGetVersion() code")                                                       \
  U(CUDAVER, "a CUDA version code (12040 = 12.4)")                                             \
  U(FLAGS, "bits, listed with the field")                                                      \
  U(COMM, "a process-local communicator index (COMM records), from 1; 0 none")                 \
  U(RANK, "a rank of the communicator; -1 none")                                               \
  U(PID, "a process id")                                                                       \
  U(TID, "a thread id")                                                                        \
  U(SITE, "a call-site id (CALLSITE records), from 1; 0 none")                                 \
  U(PYSITE, "a Python call-site id (PYSITE records), from 1; 0 none")                          \
  U(POS, "a ring position")                                                                    \
  U(COUNT, "a number of things")                                                               \
  U(TEXT, "a string")                                                                          \
  U(ENV, "an environment: name, value pairs")                                                  \
  U(FRAMES, "a stack: module path, offset in the module, symbol")                             \
  U(PYFRAMES, "a Python stack: file, line, function (on the wire as a stack's module, offset, symbol)")

/* The memory form of one record: struct nsp_rec's members, in order, and
 * their ids in the crash ring's field table (NSP_RF_<ID>, from 1, in this
 * order: append only).  S(ID, member, C type, is_signed, ring_default):
 * ring_default is what a reader takes when a ring's table lacks the field. */
#define NSP_REC_SLOTS(S)                                 \
  S(KIND, kind, uint8_t, 0, 0)                           \
  S(API, api, uint8_t, 0, 0)                             \
  S(FLAGS, flags, uint16_t, 0, 0)                        \
  S(COMM, comm, uint32_t, 0, 0)                          \
  S(RESULT, result, int32_t, 1, 0)                       \
  S(PEER, peer, int32_t, 1, -1)                          \
  S(DTYPE, dtype, int32_t, 1, -1)                        \
  S(REDOP, redop, int32_t, 1, -1)                        \
  S(GROUP_DEPTH, group_depth, uint32_t, 0, 0)            \
  S(AUX, aux, uint32_t, 0, 0)                            \
  S(SEQ, seq, uint64_t, 0, 0)                            \
  S(COUNT, count, uint64_t, 0, 0)                        \
  S(STREAM, stream, uint64_t, 0, 0)                      \
  S(SENDBUFF, sendbuff, uint64_t, 0, 0)                  \
  S(RECVBUFF, recvbuff, uint64_t, 0, 0)                  \
  S(GROUP_ID, group_id, uint64_t, 0, 0)                  \
  S(T_ENTER, t_enter, uint64_t, 0, 0)                    \
  S(T_EXIT, t_exit, uint64_t, 0, 0)                      \
  S(LAST_ERROR, last_error, const char *, 0, 0)          \
  S(EXT, ext, const struct nsp_rec_ext *, 0, 0)          \
  S(SITE, site, uint32_t, 0, 0)                          \
  S(PYSITE, pysite, uint32_t, 0, 0)

/* Named values of fields: the bits of each flags field and the values of
 * DROPPED's reason.  N(P, NAME, value, word, since, meaning) makes the
 * constant NSP_<P>_<NAME> = value (include/ncclspy/trace.h), the word
 * `ncclspy dump` shows, and the docs.  A kind's `names` column says which
 * list its FLAGS or REASON field takes. */
#define NSP_REC_NAMES_COMM(N, P)                                                                            \
  N(P, PENDING, 1u << 0, "pending", 0, "non-blocking init in progress: rank and nranks may be -1")          \
  N(P, NOCOLOR, 1u << 1, "no-color", 0, "split with NCCL_SPLIT_NOCOLOR: no child was made (comm is 0)")
#define NSP_REC_NAMES_CALL(N, P)                                                                            \
  N(P, IN_PLACE, 1u << 0, "in-place", 0, "sendbuff == recvbuff (or Bcast)")                                  \
  N(P, UNTRACKED, 1u << 1, "untracked", 4,                                                                   \
    "no CUDA event was asked for it, by choice (NCCLSPY_TRACK=0 when its communicator was made, or a "       \
    "benchmark's mode): no COMPLETION follows it, even in a trace with NSP_TRACK_COMPLETION; readers of 1.3 " \
    "and older treat such a call as awaiting completion")
#define NSP_REC_NAMES_DONE(N, P)                                                                            \
  N(P, OK, 1u << 0, "ok", 1, "the work completed")                                                            \
  N(P, CAPTURED, 1u << 1, "captured", 1, "enqueued into a CUDA graph capture: never queried")                \
  N(P, TIMED, 1u << 2, "timed", 1, "gpu_start and gpu_end are valid")                                         \
  N(P, ERROR, 1u << 3, "error", 1, "the event query failed (a CUDA error)")                                   \
  N(P, ABANDONED, 1u << 4, "abandoned", 1, "its communicator was aborted or revoked first")                   \
  N(P, UNTRACKED, 1u << 5, "untracked", 1, "no event could be recorded: completion unknown")
#define NSP_REC_NAMES_SITE(N, P) N(P, FULL, 1u << 0, "full", 1, "a full stack (taken on an error or a fatal signal)")
#define NSP_REC_NAMES_PYSITE(N, P)                                                                          \
  N(P, BORROWED, 1u << 0, "borrowed", 6,                                                                     \
    "the calling thread ran no Python code (an autograd or other native worker thread): the stack is that of " \
    "the process's main Python thread, read while the call was made")                                        \
  N(P, TRUNCATED, 1u << 1, "truncated", 6, "the stack was deeper than the frames kept (NCCLSPY_PYSITE_DEPTH)")
#define NSP_REC_NAMES_SIG(N, P)                                                                                 \
  N(P, TRUNCATED, 1u << 0, "truncated", 3, "the stack was deeper than the frames kept, or did not fit its blob") \
  N(P, FAULTED, 1u << 1, "faulted", 3, "taking the stack faulted: it stops where that happened")                 \
  N(P, NO_STACK, 1u << 2, "no-stack", 3,                                                                          \
    "no stack, at most the interrupted instruction (built without libunwind, or other records held the memory)")  \
  N(P, CHAINED, 1u << 3, "chained", 3, "the program had a handler of its own, called after the record")
#define NSP_REC_NAMES_TRACK(N, P)                                                                    \
  N(P, COMPLETION, 1u << 0, "completion", 1, "CUDA events track completion of every call")          \
  N(P, TIMING, 1u << 1, "timing", 1, "and time it on the GPU")                                      \
  N(P, CALLSITES, 1u << 2, "call-sites", 1, "call sites are recorded (libunwind)")                  \
  N(P, SIGNALS, 1u << 3, "signals", 3, "fatal signals are recorded (SIGNAL records)")
#define NSP_REC_NAMES_DROP(N, P)                                                                         \
  N(P, RING_FULL, 1, "ring-full", 0, "the writer fell behind; the wrapper never waits")                 \
  N(P, WRITE_ERROR, 2, "write-error", 0, "write(2) failed (disk full, EIO, ...)")                        \
  N(P, SIZE_CAP, 3, "size-cap", 0, "NCCLSPY_MAX_MB reached")
#define NSP_REC_NAMES_NONE(N, P)

/* Record kinds: K(NAME, name, value, since, ext, ring, names, meaning).  ext: NO,
 * the record never has strings or arrays; YES, it always has them (struct
 * nsp_rec_ext); MAY, it may (a SIGNAL record without a stack).  ring: RING,
 * made by the NCCL wrappers (or the poller, the signal handler) and passed
 * through the crash ring; WRITER, made by the writer thread itself, never
 * in the ring; READER, made by a reader from the crash ring's header (1.5),
 * never written by the shim.  names: the NSP_REC_NAMES_<names> list of its FLAGS or
 * REASON field (NONE: it has none).  Values are the leading varint of a record: append only. */
#define NSP_REC_KINDS(K)                                                                                          \
  K(PROCESS, process, 1, 0, YES, RING, TRACK,                                                                                  \
    "Process snapshot, once, first in the file.")                                                                 \
  K(COMM, comm, 2, 0, YES, RING, COMM,                                                                                        \
    "A communicator was made (init, split, shrink), or learnt more about itself: a non-blocking init that "      \
    "completed later writes its record again, same comm index, with the fields now known.")                     \
  K(COMM_END, comm_end, 3, 0, NO, RING, NONE, "Finalize, destroy, abort or revoke of a communicator.")                        \
  K(CALL, call, 4, 0, NO, RING, CALL,                                                                                         \
    "One NCCL call: a collective, a send/recv, a group start/end, or another entry point that acts "             \
    "(registration, memory).  Compact: fields whose mask bit is clear equal their prediction.")                 \
  K(REDOP, redop, 5, 0, NO, RING, NONE, "ncclRedOpCreatePreMulSum or ncclRedOpDestroy.")                                     \
  K(DROPPED, dropped, 6, 0, NO, WRITER, DROP, "Records the shim could not keep (ring full, disk full, size cap).")             \
  K(ASYNC_ERROR, async_error, 7, 0, NO, RING, NONE, "ncclCommGetAsyncError's answer changed for a communicator.")            \
  K(COMPLETION, completion, 8, 1, NO, RING, DONE,                                                                             \
    "Completion of work on the GPU.  Names one call (comm, api, seq, peer as in its CALL, group_id 0) or, with " \
    "group_id != 0, every call this process made in that group.  A call with no COMPLETION in a trace whose "    \
    "PROCESS record has NSP_TRACK_COMPLETION never completed as far as the trace knows.")                       \
  K(CALLSITE, callsite, 9, 1, YES, RING, SITE,                                                                                \
    "A native call site, written once per distinct site before the first CALL that names it; frames innermost " \
    "first.")                                                                                                     \
  K(RINGPOS, ringpos, 10, 2, NO, WRITER, NONE,                                                                                  \
    "Ring positions of the records of this frame: the last record of every frame that holds ring records "       \
    "(see the crash ring).")                                                                                      \
  K(HEARTBEAT, heartbeat, 11, 2, NO, RING, NONE,                                                                              \
    "The process is alive and still waiting for the GPU: written about once a second while calls are "           \
    "pending.")                                                                                                   \
  K(SIGNAL, signal, 12, 3, MAY, RING, SIG,                                                                                   \
    "A fatal signal (SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGFPE) reached the process, recorded by the shim's "      \
    "handler into the crash ring before the program's own handler or the default action runs.")      \
  K(EXIT, exit, 13, 5, NO, RING, NONE,                                                                      \
    "The process ran its exit handlers (exit(), a return from main): the last record of the trace of a "   \
    "process that exited, with its exit status.  A trace without it ended otherwise (killed, crashed, "   \
    "_exit) or its process is still running.")                                                                          \
  K(LIBNCCL, libnccl, 14, 5, YES, RING, NONE,                                                               \
    "A libnccl other than the one the shim interposes was loaded in the process: calls made through it "   \
    "are not traced.  Once per such library.")                                                            \
  K(INFLIGHT, inflight, 15, 5, YES, READER, NONE,                                                           \
    "A call that had not returned: made by a reader from the crash ring's in-flight table (one entry per " \
    "thread inside an NCCL call), after the ring's records.  Its t_enter and api are those the call's "    \
    "record has if it returns.")                                                                          \
  K(RINGSTATE, ringstate, 16, 5, NO, READER, NONE,                                                          \
    "A crash ring was left next to the trace, as a reader found it: made by the reader, before the "      \
    "INFLIGHT records.  A process that exits cleanly removes its ring.")                                 \
  K(PYSITE, pysite, 17, 6, YES, RING, PYSITE,                                                               \
    "A Python call site: the innermost frames of the calling thread's Python stack, written once per "     \
    "distinct site before the first CALL or in-flight call that names it; frames innermost first.")       \
  K(MODULE, module, 18, 6, YES, RING, NONE,                                                                 \
    "A loaded module (executable or shared object) that CALLSITE or SIGNAL frames name: its path and GNU " \
    "build-id, written once per module, before the first CALLSITE that names it when it can be.")

/* Fields of each kind, in wire order:
 * F(K, name, enc, cm, pred, loc, C type, unit, since, default, meaning).
 * default: what a field absent from the end of a payload (an older file)
 * reads as ("" for strings).  since is never older than its kind's. */
#define NSP_REC_FIELDS_PROCESS(F, K)                                                                                \
  F(K, pid, V, ALWAYS, NONE, X(pid), uint32_t, PID, 0, 0, "process id")                                                \
  F(K, ppid, V, ALWAYS, NONE, X(ppid), uint32_t, PID, 0, 0, "parent process id")                                       \
  F(K, nccl_version, Z, ALWAYS, NONE, X(nccl_version), int32_t, VERSION, 0, 0,                                         \
    "ncclGetVersion() code (22809 = 2.28.9); 0 unknown")                                                           \
  F(K, realtime_ns, V, ALWAYS, NONE, X(realtime_ns), uint64_t, WALL, 0, 0, "CLOCK_REALTIME when the snapshot was taken") \
  F(K, monotonic_ns, V, ALWAYS, NONE, X(monotonic_ns), uint64_t, MONO, 0, 0, "CLOCK_MONOTONIC at the same moment")     \
  F(K, host, S, ALWAYS, NONE, X(host), const char *, TEXT, 0, "", "gethostname()")                                      \
  F(K, shim_version, S, ALWAYS, NONE, X(shim_version), const char *, TEXT, 0, "", "the ncclspy version that wrote it")  \
  F(K, nccl_path, S, ALWAYS, NONE, X(nccl_path), const char *, TEXT, 0, "", "the libnccl the shim resolved; \"\" none") \
  F(K, env, ENV, ALWAYS, NONE, XENV(), uint32_t, ENV, 0, 0,                                                            \
    "the allowlisted environment (rank and world variables of torchrun, Slurm, Open MPI and PMI, NCCL_*, "         \
    "CUDA_*, ...), never values of other variables")                                                               \
  F(K, driver_version, Z, ALWAYS, NONE, X(driver_version), int32_t, CUDAVER, 1, 0, "cuDriverGetVersion(); 0 unknown") \
  F(K, runtime_version, Z, ALWAYS, NONE, X(runtime_version), int32_t, CUDAVER, 1, 0,                                   \
    "cudaRuntimeGetVersion() of the loaded libcudart; 0 unknown")                                                  \
  F(K, launcher, S, ALWAYS, NONE, X(launcher), const char *, TEXT, 1, "",                                               \
    "\"torchrun\", \"slurm\", \"openmpi\", \"pmi\" or \"\"")                                                       \
  F(K, tracking, V, ALWAYS, NONE, X(tracking), uint32_t, FLAGS, 1, 0,                                                  \
    "NSP_TRACK_*: what the shim recorded")

#define NSP_REC_FIELDS_COMM(F, K)                                                                                  \
  F(K, comm, V, ALWAYS, NONE, R(comm), uint32_t, COMM, 0, 0, "process-local index, from 1 (0: a no-color split)")     \
  F(K, comm_id, U64, ALWAYS, NONE, X(comm_id), uint64_t, ID, 0, 0, "communicator id, the same on all its ranks")      \
  F(K, api, V, ALWAYS, NONE, R(api), uint8_t, API, 0, 0, "the entry point that made it")                              \
  F(K, rank, Z, ALWAYS, NONE, X(rank), int32_t, RANK, 0, 0, "this process's rank; -1 unknown (pending)")              \
  F(K, nranks, Z, ALWAYS, NONE, X(nranks), int32_t, NUM, 0, 0, "ranks of the communicator; -1 unknown")               \
  F(K, device, Z, ALWAYS, NONE, X(device), int32_t, NUM, 0, 0, "CUDA device ordinal; -1 unknown")                     \
  F(K, parent_id, U64, ALWAYS, NONE, X(parent_id), uint64_t, ID, 0, 0, "the parent of a split or shrink; 0 none")     \
  F(K, color, Z, ALWAYS, NONE, X(color), int32_t, NUM, 0, 0, "split color (NCCL_SPLIT_NOCOLOR -1)")                    \
  F(K, key, Z, ALWAYS, NONE, X(key), int32_t, NUM, 0, 0, "split key")                                                 \
  F(K, split_index, V, ALWAYS, NONE, X(split_index), uint32_t, COUNT, 0, 0,                                           \
    "the parent's splits and shrinks before this one")                                                            \
  F(K, comm_name, S, ALWAYS, NONE, X(comm_name), const char *, TEXT, 0, "", "ncclConfig_t commName; \"\" unset")       \
  F(K, handle, V, ALWAYS, NONE, X(handle), uint64_t, ADDR, 0, 0, "the ncclComm_t value in this process")              \
  F(K, result, Z, ALWAYS, NONE, R(result), int32_t, RESULT, 0, 0, "what the call returned")                           \
  F(K, t_enter, V, ALWAYS, NONE, R(t_enter), uint64_t, TIME, 0, 0, "when the call was entered")                        \
  F(K, t_exit, V, ALWAYS, NONE, R(t_exit), uint64_t, END, 0, 0, "when it returned")                                    \
  F(K, last_error, S, ALWAYS, NONE, R(last_error), const char *, TEXT, 0, "", "ncclGetLastError() on failure; \"\"")  \
  F(K, flags, V, ALWAYS, NONE, R(flags), uint16_t, FLAGS, 0, 0,                                                       \
    "NSP_COMM_*")          \
  F(K, gpu_uuid, S, ALWAYS, NONE, X(gpu_uuid), const char *, TEXT, 1, "", "\"GPU-xxxxxxxx-...\"; \"\" unknown")         \
  F(K, gpu_pci_bus_id, S, ALWAYS, NONE, X(gpu_pci_bus_id), const char *, TEXT, 1, "", "\"0000:1b:00.0\"; \"\" unknown") \
  F(K, gpu_name, S, ALWAYS, NONE, X(gpu_name), const char *, TEXT, 1, "", "the GPU's name; \"\" unknown")

#define NSP_REC_FIELDS_COMM_END(F, K)                                                                            \
  F(K, comm, V, ALWAYS, NONE, R(comm), uint32_t, COMM, 0, 0, "the communicator")                                    \
  F(K, api, V, ALWAYS, NONE, R(api), uint8_t, API, 0, 0, "CommFinalize, CommDestroy, CommAbort or CommRevoke")      \
  F(K, result, Z, ALWAYS, NONE, R(result), int32_t, RESULT, 0, 0, "what the call returned")                         \
  F(K, t_enter, V, ALWAYS, NONE, R(t_enter), uint64_t, TIME, 0, 0, "when the call was entered")                      \
  F(K, t_exit, V, ALWAYS, NONE, R(t_exit), uint64_t, END, 0, 0, "when it returned")                                  \
  F(K, last_error, S, ALWAYS, NONE, R(last_error), const char *, TEXT, 0, "", "ncclGetLastError() on failure; \"\"")

#define NSP_REC_FIELDS_CALL(F, K)                                                                                 \
  F(K, api, V, ALWAYS, NONE, R(api), uint8_t, API, 0, 0, "the entry point")                                          \
  F(K, comm, V, ALWAYS, NONE, R(comm), uint32_t, COMM, 0, 0, "the communicator; 0 none (group calls)")               \
  F(K, mask, MASK, ALWAYS, NONE, WIRE(), uint32_t, FLAGS, 0, 0, "NSP_CM_* bits of the fields that follow")           \
  F(K, t_enter, TDELTA, ALWAYS, PREVT, R(t_enter), uint64_t, TIME, 0, 0, "when the call was entered")                  \
  F(K, t_exit, DUR, ALWAYS, NONE, R(t_exit), uint64_t, END, 0, 0, "when it returned")                                 \
  F(K, seq, SEQ, SEQ, NEXTSEQ, R(seq), uint64_t, NUM, 0, 0,                                                          \
    "per communicator for collectives (from 1, Bcast and Broadcast alike); per (communicator, peer, direction) " \
    "for send/recv")                                                                                             \
  F(K, count, V, COUNT, PREV(0), R(count), uint64_t, ELEMENTS, 0, 0,                                                 \
    "as passed (AllGather: sendcount; ReduceScatter: recvcount)")                                                \
  F(K, dtype, V, TYPE, PREV(0), R(dtype), int32_t, DTYPE, 0, 0, "-1 for calls that move no data")                     \
  F(K, redop, Z, TYPE, PREV(-1), R(redop), int32_t, REDOP, 0, 0, "-1 for ops without one")                           \
  F(K, peer, Z, PEER, PREV(-1), R(peer), int32_t, RANK, 0, 0, "root of rooted collectives, peer of send/recv; -1")   \
  F(K, stream, V, STREAM, PREV(0), R(stream), uint64_t, ADDR, 0, 0, "the cudaStream_t value")                          \
  F(K, sendbuff, V, SENDBUF, PREV(0), R(sendbuff), uint64_t, ADDR, 0, 0, "address only, never contents")               \
  F(K, recvbuff, V, RECVBUF, PREV(0), R(recvbuff), uint64_t, ADDR, 0, 0, "address only, never contents")               \
  F(K, group_id, ZDELTA, GROUP, PREV(0), R(group_id), uint64_t, NUM, 0, 0,                                             \
    "the process's ncclGroupStart/End group, from 1; 0 outside groups")                                            \
  F(K, group_depth, V, GROUP, PREV(0), R(group_depth), uint32_t, NUM, 0, 0, "group nesting at the call; 0 outside")    \
  F(K, result, Z, RESULT, DEF, R(result), int32_t, RESULT, 0, 0, "what the call returned")                             \
  F(K, last_error, S, RESULT, DEF, R(last_error), const char *, TEXT, 0, "", "ncclGetLastError() on failure")          \
  F(K, flags, V, FLAGS, PREV(0), R(flags), uint16_t, FLAGS, 0, 0,                                                     \
    "NSP_CALL_*")                                                                                                  \
  F(K, site, V, SITE, PREV(0), R(site), uint32_t, SITE, 1, 0, "its call site (CALLSITE); 0 none")                   \
  F(K, pysite, V, PYSITE, PREV(0), R(pysite), uint32_t, PYSITE, 6, 0,                                              \
    "its Python call site (PYSITE), taken when the call was entered; 0 none")

#define NSP_REC_FIELDS_REDOP(F, K)                                                                                \
  F(K, api, V, ALWAYS, NONE, R(api), uint8_t, API, 0, 0, "RedOpCreatePreMulSum or RedOpDestroy")                     \
  F(K, comm, V, ALWAYS, NONE, R(comm), uint32_t, COMM, 0, 0, "the communicator")                                     \
  F(K, redop, Z, ALWAYS, NONE, R(redop), int32_t, REDOP, 0, 0, "the op made or destroyed; -1 none")                  \
  F(K, dtype, Z, ALWAYS, NONE, R(dtype), int32_t, DTYPE, 0, 0, "the scalar's dtype; -1 none")                        \
  F(K, residence, Z, ALWAYS, NONE, R(aux), int32_t, RESIDENCE, 0, 0, "the scalar's residence; -1 none")              \
  F(K, scalar, V, ALWAYS, NONE, R(count), uint64_t, NUM, 0, 0,                                                        \
    "a host-immediate scalar's bytes, zero-extended to 64 bits; 0 otherwise")                                     \
  F(K, result, Z, ALWAYS, NONE, R(result), int32_t, RESULT, 0, 0, "what the call returned")                          \
  F(K, t_enter, V, ALWAYS, NONE, R(t_enter), uint64_t, TIME, 0, 0, "when the call was entered")                       \
  F(K, t_exit, V, ALWAYS, NONE, R(t_exit), uint64_t, END, 0, 0, "when it returned")

#define NSP_REC_FIELDS_DROPPED(F, K)                                                                        \
  F(K, count, V, ALWAYS, NONE, R(count), uint64_t, COUNT, 0, 0, "records lost since the previous DROPPED record") \
  F(K, reason, V, ALWAYS, NONE, R(aux), uint32_t, REASON, 0, 0, "NSP_DROP_*: why")        \
  F(K, t, V, ALWAYS, NONE, R(t_enter), uint64_t, TIME, 0, 0, "when the loss was noticed")

#define NSP_REC_FIELDS_ASYNC_ERROR(F, K)                                                              \
  F(K, comm, V, ALWAYS, NONE, R(comm), uint32_t, COMM, 0, 0, "the communicator")                         \
  F(K, result, Z, ALWAYS, NONE, R(result), int32_t, RESULT, 0, 0, "ncclCommGetAsyncError's new answer")  \
  F(K, t, V, ALWAYS, NONE, R(t_enter), uint64_t, TIME, 0, 0, "when the shim saw it")                     \
  F(K, last_error, S, ALWAYS, NONE, R(last_error), const char *, TEXT, 0, "", "ncclGetLastError(); \"\"")

#define NSP_REC_FIELDS_COMPLETION(F, K)                                                                          \
  F(K, comm, V, ALWAYS, NONE, R(comm), uint32_t, COMM, 1, 0, "the call's communicator, as in its CALL")              \
  F(K, api, V, ALWAYS, NONE, R(api), uint8_t, API, 1, 0, "the call's entry point")                                  \
  F(K, seq, V, ALWAYS, NONE, R(seq), uint64_t, NUM, 1, 0, "the call's seq, as in its CALL")                         \
  F(K, peer, Z, ALWAYS, NONE, R(peer), int32_t, RANK, 1, 0, "the call's peer field, as in its CALL")                \
  F(K, group_id, V, ALWAYS, NONE, R(group_id), uint64_t, NUM, 1, 0,                                                 \
    "0: one call; else every call of this process in that group")                                               \
  F(K, flags, V, ALWAYS, NONE, R(flags), uint16_t, FLAGS, 1, 0,                                                     \
    "NSP_DONE_*")  \
  F(K, gpu_start, V, ALWAYS, NONE, R(t_enter), uint64_t, MONO, 1, 0,                                                \
    "when the GPU began it, mapped from its event onto CLOCK_MONOTONIC; 0 not timed")                           \
  F(K, gpu_end, V, ALWAYS, NONE, R(t_exit), uint64_t, MONO, 1, 0, "when the GPU finished it; 0 not timed")          \
  F(K, t_seen, V, ALWAYS, NONE, R(count), uint64_t, TIME, 1, 0, "when the shim saw it complete")

#define NSP_REC_FIELDS_CALLSITE(F, K)                                                            \
  F(K, site, V, ALWAYS, NONE, R(site), uint32_t, SITE, 1, 0, "the id CALL records name it by")       \
  F(K, flags, V, ALWAYS, NONE, R(flags), uint16_t, FLAGS, 1, 0,                                     \
    "NSP_SITE_*")                         \
  F(K, frames, FRAMES, ALWAYS, NONE, XFRAMES(), uint32_t, FRAMES, 1, 0,                              \
    "module path, offset from the module's load address, symbol (\"\" unknown), innermost first")

#define NSP_REC_FIELDS_RINGPOS(F, K)                                                                   \
  F(K, first, V, ALWAYS, NONE, R(seq), uint64_t, POS, 2, 0, "ring position of the frame's first record") \
  F(K, end, V, ALWAYS, NONE, R(count), uint64_t, POS, 2, 0, "one past its last: the frame holds [first, end)")

#define NSP_REC_FIELDS_HEARTBEAT(F, K)                                                                 \
  F(K, t, V, ALWAYS, NONE, R(t_enter), uint64_t, TIME, 2, 0, "now")                                       \
  F(K, pending, V, ALWAYS, NONE, R(count), uint64_t, COUNT, 2, 0, "calls awaiting completion")             \
  F(K, oldest, V, ALWAYS, NONE, R(t_exit), uint64_t, MONO, 2, 0, "t_enter of the oldest of them")

#define NSP_REC_FIELDS_SIGNAL(F, K)                                                                                \
  F(K, signo, V, ALWAYS, NONE, R(aux), uint32_t, SIGNO, 3, 0,                                                         \
    "the signal (Linux: 4 SIGILL, 6 SIGABRT, 7 SIGBUS, 8 SIGFPE, 11 SIGSEGV)")                                    \
  F(K, code, Z, ALWAYS, NONE, R(result), int32_t, SICODE, 3, 0,                                                       \
    "si_code: > 0 a fault (1 SEGV_MAPERR, 2 SEGV_ACCERR, ...), 0x80 SI_KERNEL, 0 SI_USER (kill), -6 SI_TKILL "    \
    "(raise, abort)")                                                                                             \
  F(K, addr, V, ALWAYS, NONE, R(sendbuff), uint64_t, ADDR, 3, 0,                                                      \
    "si_addr of a fault: the address that could not be accessed (SIGSEGV, SIGBUS) or the instruction (SIGILL, "  \
    "SIGFPE); 0 for a signal that was sent")                                                                      \
  F(K, tid, V, ALWAYS, NONE, R(seq), uint64_t, TID, 3, 0, "the thread that received it")                              \
  F(K, t, V, ALWAYS, NONE, R(t_enter), uint64_t, TIME, 3, 0, "when it arrived")                                       \
  F(K, flags, V, ALWAYS, NONE, R(flags), uint16_t, FLAGS, 3, 0,                                                       \
    "NSP_SIG_*")       \
  F(K, sender_pid, V, ALWAYS, NONE, R(peer), int32_t, PID, 3, 0,                                                      \
    "a signal that was sent (code <= 0): si_pid, the sender (the process itself for abort()); 0 for a fault")     \
  F(K, frames, FRAMES, ALWAYS, NONE, XFRAMES(), uint32_t, FRAMES, 3, 0,                                               \
    "the receiving thread's stack, innermost first: frame 0 is the interrupted instruction, the others return "   \
    "addresses; symbols from the dynamic symbol table (as dladdr gives them)")

#define NSP_REC_FIELDS_EXIT(F, K)                                                                      \
  F(K, t, V, ALWAYS, NONE, R(t_enter), uint64_t, TIME, 5, 0, "when the exit handlers ran")                 \
  F(K, inflight, V, ALWAYS, NONE, R(count), uint64_t, COUNT, 5, 0,                                         \
    "calls other threads were still inside then (each also an INFLIGHT record when the ring is read)")    \
  F(K, status, Z, ALWAYS, NONE, R(result), int32_t, NUM, 5, -1,                                           \
    "the status the process gave exit() (a return from main gives main's value): 0 a clean exit; -1 "   \
    "unknown")

#define NSP_REC_FIELDS_LIBNCCL(F, K)                                                                          \
  F(K, t, V, ALWAYS, NONE, R(t_enter), uint64_t, TIME, 5, 0, "when the shim saw it")                          \
  F(K, path, S, ALWAYS, NONE, X(nccl_path), const char *, TEXT, 5, "", "its path, as the dynamic loader has it") \
  F(K, version, Z, ALWAYS, NONE, X(nccl_version), int32_t, VERSION, 5, 0, "its ncclGetVersion(); 0 unknown")

#define NSP_REC_FIELDS_INFLIGHT(F, K)                                                                          \
  F(K, api, V, ALWAYS, NONE, R(api), uint8_t, API, 5, 0, "the entry point")                                     \
  F(K, comm, V, ALWAYS, NONE, R(comm), uint32_t, COMM, 5, 0,                                                   \
    "the communicator; the parent of a split or shrink; 0 none (init, group calls)")                          \
  F(K, t_enter, V, ALWAYS, NONE, R(t_enter), uint64_t, TIME, 5, 0, "when the call was entered")                 \
  F(K, seq, V, ALWAYS, NONE, R(seq), uint64_t, NUM, 5, 0,                                                      \
    "collectives and send/recv: the seq the call takes, as its CALL would say; 0 otherwise")                 \
  F(K, count, V, ALWAYS, NONE, R(count), uint64_t, ELEMENTS, 5, 0, "as passed (as in CALL)")                    \
  F(K, dtype, Z, ALWAYS, NONE, R(dtype), int32_t, DTYPE, 5, -1, "-1 for calls that move no data")               \
  F(K, redop, Z, ALWAYS, NONE, R(redop), int32_t, REDOP, 5, -1, "-1 for ops without one")                       \
  F(K, peer, Z, ALWAYS, NONE, R(peer), int32_t, RANK, 5, -1, "root of rooted collectives, peer of send/recv; -1") \
  F(K, group_id, V, ALWAYS, NONE, R(group_id), uint64_t, NUM, 5, 0, "the group, as in CALL; 0 outside groups")  \
  F(K, group_depth, V, ALWAYS, NONE, R(group_depth), uint32_t, NUM, 5, 0, "group nesting at the call")          \
  F(K, tid, V, ALWAYS, NONE, R(aux), uint32_t, TID, 5, 0, "the calling thread")                                 \
  F(K, comm_id, U64, ALWAYS, NONE, X(comm_id), uint64_t, ID, 5, 0,                                             \
    "init, split, shrink: the id the new communicator's COMM record will have; 0 otherwise")                 \
  F(K, parent_id, U64, ALWAYS, NONE, X(parent_id), uint64_t, ID, 5, 0, "split, shrink: the parent's id; 0")      \
  F(K, rank, Z, ALWAYS, NONE, X(rank), int32_t, RANK, 5, -1, "init: the rank asked for; -1")                    \
  F(K, nranks, Z, ALWAYS, NONE, X(nranks), int32_t, NUM, 5, -1, "init: nranks asked for (InitAll: ndev); -1")   \
  F(K, color, Z, ALWAYS, NONE, X(color), int32_t, NUM, 5, -1, "split: color; -1")                               \
  F(K, key, Z, ALWAYS, NONE, X(key), int32_t, NUM, 5, -1, "split: key; -1")                                     \
  F(K, split_index, V, ALWAYS, NONE, X(split_index), uint32_t, COUNT, 5, 0,                                    \
    "split, shrink: the parent's splits and shrinks before this one")                            \
  F(K, pysite, V, ALWAYS, NONE, R(pysite), uint32_t, PYSITE, 6, 0,                                         \
    "the call's Python call site (PYSITE), taken when it was entered; 0 none")

#define NSP_REC_FIELDS_RINGSTATE(F, K)                                                                            \
  F(K, heartbeat, V, ALWAYS, NONE, R(t_enter), uint64_t, MONO, 5, 0,                                              \
    "the writer thread's last pass (it passes every few ms while the process lives); 0 unknown (an older ring)")  \
  F(K, heartbeat_wall, V, ALWAYS, NONE, R(t_exit), uint64_t, WALL, 5, 0, "the same moment, CLOCK_REALTIME; 0")     \
  F(K, exited, V, ALWAYS, NONE, R(seq), uint64_t, MONO, 5, 0,                                                     \
    "when the exit handlers ran (the ring was left because the trace could not be finished); 0 they did not")    \
  F(K, inflight, V, ALWAYS, NONE, R(count), uint64_t, COUNT, 5, 0, "INFLIGHT records that follow")                 \
  F(K, unslotted, V, ALWAYS, NONE, R(aux), uint32_t, COUNT, 5, 0,                                                 \
    "threads that called NCCL but found no free in-flight entry: their calls in flight are not known")

#define NSP_REC_FIELDS_PYSITE(F, K)                                                                   \
  F(K, site, V, ALWAYS, NONE, R(pysite), uint32_t, PYSITE, 6, 0, "the id CALL and INFLIGHT records name it by") \
  F(K, flags, V, ALWAYS, NONE, R(flags), uint16_t, FLAGS, 6, 0, "NSP_PYSITE_*")                               \
  F(K, tid, V, ALWAYS, NONE, R(aux), uint32_t, TID, 6, 0, "the thread whose stack it is")                     \
  F(K, frames, FRAMES, ALWAYS, NONE, XFRAMES(), uint32_t, PYFRAMES, 6, 0,                                    \
    "file (co_filename), line, function (co_qualname from 3.11, co_name before), innermost first")

#define NSP_REC_FIELDS_MODULE(F, K)                                                                      \
  F(K, path, S, ALWAYS, NONE, X(module_path), const char *, TEXT, 6, "",                                 \
    "its path as the dynamic loader has it (the main program: /proc/self/exe's target)")                \
  F(K, build_id, S, ALWAYS, NONE, X(build_id), const char *, TEXT, 6, "",                                \
    "its GNU build-id (NT_GNU_BUILD_ID), lower-case hex; \"\" when it has none")

#endif /* NCCLSPY_TRACE_SCHEMA_H */
