/* ncclspy/trace.h - the ncclspy trace format, version 1.
 *
 * This is the one public header of ncclspy.  The shim writes this format
 * and the analyzer reads it; docs/FORMAT.md describes the same thing for
 * people who write their own readers.
 *
 * A trace is one file per process, named
 *     <host>.<pid>.ncclspy            until the process's rank is known,
 *     <host>.<pid>.rank<R>.ncclspy    after its first communicator is made
 * in $NCCLSPY_DIR.  It holds:
 *
 *   1. a fixed header of NSP_HEADER_SIZE bytes (struct nsp_file_header,
 *      little-endian, uncompressed);
 *   2. zero or more independent zstd frames (RFC 8878), each compressing
 *      a whole number of records.  Each frame is self-contained: the
 *      prediction state used for compact call records (below) starts
 *      afresh at every frame, so a file cut at any byte reads back up to
 *      its last whole frame.
 *
 * A record is
 *     varint kind | varint length | payload (length bytes)
 * Unknown kinds are skipped by length, and readers ignore payload bytes
 * past the fields they know, so old readers read newer files.  New fields
 * are only ever appended to a payload; a field missing from the end of a
 * payload takes its default.
 *
 * Encodings used in payloads:
 *   varint   unsigned LEB128, at most 10 bytes (uint64_t);
 *   zz       a signed value zigzag-mapped ((v << 1) ^ (v >> 63)), then varint;
 *   u64      8 bytes, little-endian (hashes, which do not compress);
 *   str      varint byte length, then that many bytes (no NUL).
 * Times are CLOCK_MONOTONIC nanoseconds of the writing host; the header's
 * (realtime_ns, monotonic_ns) pair maps them onto wall-clock time.
 */
#ifndef NCCLSPY_TRACE_H
#define NCCLSPY_TRACE_H

#include <stdint.h>

#define NSP_MAGIC "NCCLSPY\0" /* 8 bytes at offset 0 */
#define NSP_FORMAT_MAJOR 1    /* bumped on incompatible change */
#define NSP_FORMAT_MINOR 4    /* bumped when fields or kinds are added */
#define NSP_HEADER_SIZE 128
#define NSP_HOST_MAX 64

/* The file header, NSP_HEADER_SIZE bytes, all integers little-endian.
 * Readers accept any header_size >= 112 and skip the rest. */
struct nsp_file_header {
  char magic[8];          /* NSP_MAGIC */
  uint16_t major;         /* NSP_FORMAT_MAJOR; readers refuse others */
  uint16_t minor;         /* NSP_FORMAT_MINOR */
  uint32_t header_size;   /* bytes before the first frame */
  uint64_t realtime_ns;   /* CLOCK_REALTIME when the file was opened, ns */
  uint64_t monotonic_ns;  /* CLOCK_MONOTONIC at the same moment, ns */
  uint32_t pid;
  int32_t nccl_version;   /* ncclGetVersion() code, e.g. 22809; 0 unknown */
  uint32_t flags;         /* NSP_HDR_* */
  uint32_t reserved0;
  char host[NSP_HOST_MAX]; /* gethostname(), NUL-padded */
  uint8_t reserved[16];
};

/* Record kinds (the leading varint of a record). */
enum nsp_rec_kind {
  /* Process snapshot, once, first in the file.
   * varint pid, varint ppid, zz nccl_version, varint realtime_ns,
   * varint monotonic_ns, str host, str shim_version, str nccl_path,
   * varint nenv, then nenv pairs (str name, str value): the allowlisted
   * environment (rank/world variables of torchrun, Slurm, Open MPI, PMI,
   * NCCL_*, CUDA_VISIBLE_DEVICES, ...), never values of other variables.
   * Since 1.1: zz driver_version (cuDriverGetVersion, 0 unknown),
   * zz runtime_version (cudaRuntimeGetVersion of the loaded libcudart, 0
   * unknown), str launcher ("torchrun", "slurm", "openmpi", "pmi" or ""),
   * varint tracking (NSP_TRACK_* bits: what completion tracking ran). */
  NSP_REC_PROCESS = 1,

  /* A communicator was made (init, split, shrink) or learnt more about
   * itself (a non-blocking init that completed later: same comm index,
   * written again with the fields now known).
   * varint comm (process-local index, from 1), u64 comm_id, varint api
   * (NSP_API_* of the call that made it), zz rank, zz nranks, zz device,
   * u64 parent_id (0: none), zz color, zz key, varint split_index (the
   * parent's count of splits before this one), str comm_name (config
   * commName, "" when unset), varint handle (the ncclComm_t value),
   * zz result, varint t_enter, varint t_exit, str last_error,
   * varint flags (NSP_COMM_*).
   * Since 1.1: str gpu_uuid ("GPU-xxxxxxxx-..."), str gpu_pci_bus_id
   * ("0000:1b:00.0"), str gpu_name, all "" when unknown. */
  NSP_REC_COMM = 2,

  /* Finalize, destroy, abort or revoke of a communicator.
   * varint comm, varint api, zz result, varint t_enter, varint t_exit,
   * str last_error. */
  NSP_REC_COMM_END = 3,

  /* One NCCL call: a collective, a send/recv, a group start/end, or
   * another entry point that acts (registration, memory).  Compact,
   * predicted from the previous CALL of the same comm in the same frame
   * (all-zero state at frame start; comm 0 means "no communicator"):
   *   varint api, varint comm, varint mask (NSP_CM_*),
   *   zz   t_enter minus the previous CALL's t_enter in this frame
   *        (0 at frame start),
   *   varint t_exit - t_enter,
   * then, in this order, only the fields whose mask bit is set; a field
   * whose bit is clear equals the prediction:
   *   NSP_CM_SEQ      varint seq      (predicted: previous collective
   *                                    seq of this comm + 1 for
   *                                    collectives; always present for
   *                                    send/recv)
   *   NSP_CM_COUNT    varint count    (elements, as passed)
   *   NSP_CM_TYPE     varint dtype, zz redop (-1: none)
   *   NSP_CM_PEER     zz peer          (root for rooted collectives,
   *                                    peer for send/recv, -1 none)
   *   NSP_CM_STREAM   varint stream
   *   NSP_CM_SENDBUF  varint sendbuff
   *   NSP_CM_RECVBUF  varint recvbuff
   *   NSP_CM_GROUP    zz group id minus predicted, varint group depth
   *   NSP_CM_RESULT   zz result, str last_error
   *   NSP_CM_FLAGS    varint flags (NSP_CALL_*)
   *   NSP_CM_SITE     varint call-site id (NSP_REC_CALLSITE), 1.1
   * Predictions other than seq are the previous CALL's values on the same
   * comm; at frame start: seq 0, count 0, dtype 0, redop -1, peer -1,
   * buffers and stream 0, group 0/0, result 0, flags 0. */
  NSP_REC_CALL = 4,

  /* ncclRedOpCreatePreMulSum or ncclRedOpDestroy.
   * varint api, varint comm, zz redop (the op made or destroyed),
   * zz dtype, zz residence, varint scalar (host-immediate scalars: the
   * value's bytes zero-extended to 64 bits; 0 otherwise), zz result,
   * varint t_enter, varint t_exit. */
  NSP_REC_REDOP = 5,

  /* Records the shim could not keep (ring full, disk full, size cap).
   * varint count (since the previous DROPPED record), varint reason
   * (NSP_DROP_*), varint t (when noticed). */
  NSP_REC_DROPPED = 6,

  /* ncclCommGetAsyncError's answer changed for a communicator.
   * varint comm, zz async_result, varint t, str last_error. */
  NSP_REC_ASYNC_ERROR = 7,

  /* Completion of work on the GPU (1.1).  It names either one call,
   * (comm, api, seq, peer) with group_id 0 -- seq and peer as in its CALL
   * record -- or, with group_id != 0, every call this process made in that
   * ncclGroupStart/End group (their events belong to the group).
   *   varint comm, varint api, varint seq, zz peer, varint group_id,
   *   varint flags (NSP_DONE_*), varint gpu_start, varint gpu_end
   *   (CLOCK_MONOTONIC ns of this host, mapped from GPU events; 0 when
   *   not timed), varint t_seen (when the shim saw it complete).
   * A call with no COMPLETION record in a trace whose PROCESS record has
   * NSP_TRACK_COMPLETION never completed as far as the trace knows. */
  NSP_REC_COMPLETION = 8,

  /* A native call site, written once per distinct site before the first
   * CALL that names it (1.1).
   *   varint site, varint flags (NSP_SITE_*), varint nframes, then nframes
   *   times (str module path, varint offset in module, str symbol).
   * Frames are innermost first. */
  NSP_REC_CALLSITE = 9,

  /* Ring positions of the records in this frame (1.2).  The shim's
   * records pass through a ring (see "The crash ring" below) in which each
   * record has a position, counted from 0 over the life of the process.
   * The shim writes one RINGPOS as the last record of every frame that
   * holds ring records:
   *   varint first, varint end
   * meaning the records of ring positions [first, end) are in this frame,
   * in position order.  Records the writer makes itself (DROPPED,
   * RINGPOS) have no position.  A reader that recovers records from a
   * <trace>.ring file starts after the largest `end` of the frames it
   * read (or the ring header's `written`, whichever is larger), so a
   * crash between writing a frame and updating the ring header never
   * duplicates records. */
  NSP_REC_RINGPOS = 10,

  /* The process is alive and still waiting for the GPU (1.2): written by
   * the completion poller about once a second while calls are pending, so
   * a hung rank's trace says how long it waited, not only when it last
   * enqueued.  varint t (now), varint pending (calls awaiting completion),
   * varint oldest (t_enter of the oldest of them). */
  NSP_REC_HEARTBEAT = 11,

  /* A fatal signal reached the process (1.3): SIGSEGV, SIGBUS, SIGABRT,
   * SIGILL or SIGFPE, recorded by the shim's handler before the program's
   * own handler (or the default action) runs.  Written into the crash
   * ring from the handler, so it survives the death that follows.
   *   varint signo, zz code (si_code), varint addr (si_addr: the faulting
   *   address of SIGSEGV/SIGBUS/SIGILL/SIGFPE, 0 otherwise),
   *   varint tid (the thread that received it), varint t (CLOCK_MONOTONIC
   *   ns), varint flags (NSP_SIG_*), varint sender_pid (kill/raise/abort:
   *   the sending process, from si_pid; 0 for a fault), varint nframes,
   *   then nframes times (str module path, varint offset in module, str
   *   symbol): the receiving thread's stack, innermost first.  Frame 0 is
   *   the interrupted instruction itself; the others are return
   *   addresses.  The offset is from the module's load address (as in
   *   CALLSITE); symbols come from the module's dynamic symbol table
   *   (exported names only, as dladdr gives them; "" when none covers
   *   the address).  nframes is 0 when no stack could be taken. */
  NSP_REC_SIGNAL = 12,
};

/* Flags of a SIGNAL record (1.3). */
enum nsp_signal_flags {
  NSP_SIG_TRUNCATED = 1u << 0, /* the stack was deeper than the frames kept */
  NSP_SIG_FAULTED = 1u << 1,   /* taking the stack faulted: it stops where that happened */
  NSP_SIG_NO_STACK = 1u << 2,  /* no stack, at most the interrupted instruction (built
                                  without libunwind, or other records held the memory) */
  NSP_SIG_CHAINED = 1u << 3,   /* the program had a handler of its own, called after the record */
};

/* Bits of the PROCESS record's `tracking` field (1.1). */
enum nsp_tracking {
  NSP_TRACK_COMPLETION = 1u << 0, /* CUDA events track completion of every call */
  NSP_TRACK_TIMING = 1u << 1,     /* and time it on the GPU */
  NSP_TRACK_CALLSITES = 1u << 2,  /* call sites are recorded (libunwind) */
  NSP_TRACK_SIGNALS = 1u << 3,    /* fatal signals are recorded (SIGNAL records, 1.3) */
};

/* Flags of a COMPLETION record. */
enum nsp_done_flags {
  NSP_DONE_OK = 1u << 0,        /* the work completed */
  NSP_DONE_CAPTURED = 1u << 1,  /* enqueued into a CUDA graph capture: never queried */
  NSP_DONE_TIMED = 1u << 2,     /* gpu_start and gpu_end are valid */
  NSP_DONE_ERROR = 1u << 3,     /* the event query failed (a CUDA error) */
  NSP_DONE_ABANDONED = 1u << 4, /* its communicator was aborted or revoked first */
  NSP_DONE_UNTRACKED = 1u << 5, /* no event could be recorded: completion unknown */
};

/* Flags of a CALLSITE record. */
enum nsp_site_flags {
  NSP_SITE_FULL = 1u << 0, /* a full stack (taken on an error or a fatal signal) */
};

/* Mask bits of NSP_REC_CALL. */
enum nsp_call_mask {
  NSP_CM_SEQ = 1u << 0,
  NSP_CM_COUNT = 1u << 1,
  NSP_CM_TYPE = 1u << 2,
  NSP_CM_PEER = 1u << 3,
  NSP_CM_STREAM = 1u << 4,
  NSP_CM_SENDBUF = 1u << 5,
  NSP_CM_RECVBUF = 1u << 6,
  NSP_CM_GROUP = 1u << 7,
  NSP_CM_RESULT = 1u << 8,
  NSP_CM_FLAGS = 1u << 9,
  NSP_CM_SITE = 1u << 10, /* 1.1 */
};

/* Flags of a CALL record. */
enum nsp_call_flags {
  NSP_CALL_IN_PLACE = 1u << 0, /* sendbuff == recvbuff (or Bcast) */
  /* 1.4: no CUDA event was asked for this call, by choice (NCCLSPY_TRACK=0
   * when its communicator was made, or a benchmark's mode): no COMPLETION
   * record follows it, even in a trace with NSP_TRACK_COMPLETION.  Readers
   * of 1.3 and older treat such a call as awaiting completion. */
  NSP_CALL_UNTRACKED = 1u << 1,
};

/* Flags of a COMM record. */
enum nsp_comm_flags {
  NSP_COMM_PENDING = 1u << 0,  /* init returned ncclInProgress; rank etc. may be unknown */
  NSP_COMM_NOCOLOR = 1u << 1,  /* split with NCCL_SPLIT_NOCOLOR: no child */
};

/* Header flags. */
enum nsp_header_flags {
  NSP_HDR_NO_TIMING = 1u << 0, /* no GPU timing in this trace */
};

/* Reasons of a DROPPED record. */
enum nsp_drop_reason {
  NSP_DROP_RING_FULL = 1, /* the writer fell behind; the wrapper never waits */
  NSP_DROP_WRITE_ERROR = 2, /* write(2) failed (disk full, EIO, ...) */
  NSP_DROP_SIZE_CAP = 3,  /* NCCLSPY_MAX_MB reached */
};

/* ---- The crash ring: <trace>.ring (1.2) -----------------------------------
 *
 * While a process runs, its records pass from the NCCL wrappers to the
 * writer thread through a ring of fixed-size slots.  The ring lives in a
 * MAP_SHARED mapping of a file next to the trace, named like the trace
 * plus ".ring" (renamed with it), created mode 0600 and preallocated, so a
 * record is in the kernel's page cache the moment the wrapper returns and
 * survives any death of the process: SIGKILL, a fatal signal, _exit, exec.
 * On a clean exit the writer drains the ring into the trace and removes
 * the file.  A ring file left behind holds the records the trace's frames
 * may lack; nsp_reader_open reads them after the last whole frame.
 *
 * Layout (host byte order, which byte_order identifies; all writers so far
 * are little-endian):
 *   [0, header_size)                  struct nsp_ring_header
 *   [ring_offset, + nslots*slot_size) the slots
 *   [blob_offset, + nblob_slots*blob_slot_size) the blob area
 *
 * A slot is a 64-bit `seq` at offset 0, then one record in memory form
 * (the shim's struct nsp_rec) whose fields the header's field table
 * locates.  The slot of ring position p is slot p % nslots; it holds the
 * committed record of position p exactly when seq == p + 1.  A reader
 * takes, for every p in [start, start + nslots), the slot of p when its
 * seq == p + 1, where start = max(written, the largest RINGPOS end in the
 * trace); other slots are free, being filled (a call that never
 * returned), or hold records already in the trace.
 *
 * Records with strings: the memory form holds pointers, useless after
 * death.  So when a record with `ext` (PROCESS, COMM, CALLSITE) or with a
 * last_error text is committed, the shim first stores a blob in the blob
 * area: the whole record encoded as in a frame (NSP_BLOB_RECORD, encoded
 * with a fresh prediction state) or the last_error text
 * (NSP_BLOB_TEXT).  A blob takes one or more consecutive blob slots; the
 * first holds struct nsp_ring_blob then data, each further one a 64-bit
 * state then data.  The field table's NSP_RF_LAST_ERROR and NSP_RF_EXT
 * are nonzero in a slot whose record had them; such a record whose blob
 * is missing (blob area full: blobs_lost) is recovered without its text,
 * or not at all when it needed ext.
 *
 * SIGNAL records (1.3) are written by a signal handler, which may take no
 * lock: the shim keeps the last blob slots of the area (counted in
 * nblob_slots) for them, a run of slots per record being written, and
 * stores their blobs there in the same format.  A reader needs nothing
 * new for them; a SIGNAL record without its blob has NSP_RF_EXT 0 and is
 * recovered from its slot, without frames. */
#define NSP_RING_MAGIC "NSPRING\0" /* 8 bytes at offset 0 */
#define NSP_RING_MAJOR 1
#define NSP_RING_MINOR 0
#define NSP_RING_BYTE_ORDER 0x01020304u
#define NSP_RING_MAX_FIELDS 32

/* One entry of the field table: where a record field sits in a slot. */
struct nsp_ring_field {
  uint16_t id;        /* enum nsp_ring_field_id; readers skip ids they do not know */
  uint16_t offset;    /* bytes from the start of the slot */
  uint8_t size;       /* 1, 2, 4 or 8 */
  uint8_t is_signed;  /* sign-extend when widening */
  uint16_t reserved;
};

enum nsp_ring_field_id {
  NSP_RF_KIND = 1, NSP_RF_API, NSP_RF_FLAGS, NSP_RF_COMM, NSP_RF_RESULT, NSP_RF_PEER,
  NSP_RF_DTYPE, NSP_RF_REDOP, NSP_RF_GROUP_DEPTH, NSP_RF_AUX, NSP_RF_SEQ, NSP_RF_COUNT,
  NSP_RF_STREAM, NSP_RF_SENDBUFF, NSP_RF_RECVBUFF, NSP_RF_GROUP_ID, NSP_RF_T_ENTER,
  NSP_RF_T_EXIT, NSP_RF_LAST_ERROR, NSP_RF_EXT, NSP_RF_SITE,
};

/* The ring file's header.  `written`, `dropped` and `blobs_lost` change
 * while the process runs; the rest is set once, before the first record. */
struct nsp_ring_header {
  char magic[8];              /* NSP_RING_MAGIC */
  uint16_t major, minor;      /* NSP_RING_MAJOR (readers refuse others), NSP_RING_MINOR */
  uint32_t header_size;       /* 4096 */
  uint32_t byte_order;        /* NSP_RING_BYTE_ORDER as the writing host stores it */
  uint32_t slot_size;         /* 128 */
  uint64_t nslots;            /* a power of two */
  uint64_t ring_offset;       /* file offset of slot 0 */
  uint64_t blob_offset;       /* file offset of blob slot 0 */
  uint32_t blob_slot_size;    /* 512 */
  uint32_t nblob_slots;
  uint32_t pid;
  uint32_t nfields;           /* entries of fields[] used */
  uint64_t trace_realtime_ns; /* the trace header's realtime_ns: the trace this ring belongs to */
  uint64_t written;           /* ring positions below this are in the trace (or counted in dropped) */
  uint64_t dropped[4];        /* records dropped so far, by NSP_DROP_* reason (index 0 unused) */
  uint64_t blobs_lost;        /* records whose blob found no room */
  uint8_t reserved[136];
  struct nsp_ring_field fields[NSP_RING_MAX_FIELDS]; /* at offset 256 */
};

/* The first blob slot of a blob. */
struct nsp_ring_blob {
  uint64_t state;  /* NSP_BLOB_* state; a reader takes only NSP_BLOB_READY */
  uint64_t pos;    /* ring position of the record it belongs to */
  uint32_t type;   /* NSP_BLOB_RECORD or NSP_BLOB_TEXT */
  uint32_t len;    /* data bytes, in this slot and the following ones */
  uint32_t nslots; /* blob slots taken, this one included */
  uint32_t reserved;
};

enum nsp_ring_blob_state {
  NSP_BLOB_FREE = 0,
  NSP_BLOB_READY = 2, /* first slot of a complete blob */
  NSP_BLOB_CONT = 3,  /* a further slot of a blob */
};

enum nsp_ring_blob_type {
  NSP_BLOB_RECORD = 1, /* one record, encoded as in a frame, fresh prediction state */
  NSP_BLOB_TEXT = 2,   /* the record's last_error text, no NUL */
};

#endif /* NCCLSPY_TRACE_H */
