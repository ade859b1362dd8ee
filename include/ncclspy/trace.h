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

#include "ncclspy/trace_schema.h"

#ifdef __cplusplus
extern "C" {
#define NSP_TRACE_STATIC_ASSERT static_assert
#else
#define NSP_TRACE_STATIC_ASSERT _Static_assert
#endif

#define NSP_MAGIC "NCCLSPY\0" /* 8 bytes at offset 0 */
#define NSP_FORMAT_MAJOR 1    /* bumped on incompatible change */
#define NSP_FORMAT_MINOR 6    /* bumped when fields or kinds are added */
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

/* Record kinds (the leading varint of a record): NSP_REC_PROCESS = 1,
 * NSP_REC_COMM, ... NSP_REC_RINGSTATE = 16.  Each kind's fields, their
 * encodings, units and meanings are in ncclspy/trace_schema.h
 * (NSP_REC_KINDS and NSP_REC_FIELDS_<KIND>), and docs/FORMAT.md lists them.
 *
 * Two kinds need more than their fields:
 *
 * CALL is compact, predicted from the previous CALL of the same comm in
 * the same frame (all-zero state at frame start; comm 0 means "no
 * communicator"): after its api, comm and a mask of NSP_CM_* bits come
 * the times, then only the fields whose mask bit is set; a field whose
 * bit is clear equals its prediction (trace_schema.h, "Presence").
 *
 * RINGPOS (1.2): the shim's records pass through a ring (see "The crash
 * ring" below) in which each record has a position, counted from 0 over
 * the life of the process.  The shim writes one RINGPOS as the last record
 * of every frame that holds ring records, meaning the records of ring
 * positions [first, end) are in this frame, in position order.  Records
 * the writer makes itself (DROPPED, RINGPOS) have no position.  A reader
 * that recovers records from a <trace>.ring file starts after the largest
 * `end` of the frames it read (or the ring header's `written`, whichever
 * is larger), so a crash between writing a frame and updating the ring
 * header never duplicates records.
 *
 * SIGNAL (1.3) is written into the crash ring by a signal handler, so it
 * survives the death that follows.  Its frame 0 is the interrupted
 * instruction itself; the others are return addresses.  The offset is from
 * the module's load address (as in CALLSITE); symbols come from the
 * module's dynamic symbol table (exported names only, as dladdr gives
 * them; "" when none covers the address).  It has no frames when no stack
 * could be taken. */
#define NSP_REC_KIND_ENUM_(NAME, name, value, since, has_ext, ring, names, meaning) NSP_REC_##NAME = value,
enum nsp_rec_kind { NSP_REC_KINDS(NSP_REC_KIND_ENUM_) };
#undef NSP_REC_KIND_ENUM_

/* Named bits and values of fields (trace_schema.h, NSP_REC_NAMES_*):
 * NSP_SIG_TRUNCATED, NSP_TRACK_COMPLETION, NSP_DONE_OK, NSP_SITE_FULL,
 * NSP_CALL_IN_PLACE, NSP_COMM_PENDING, NSP_DROP_RING_FULL, ... */
#define NSP_NAME_ENUM_(P, NAME, value, word, since, meaning) NSP_##P##_##NAME = (value),
enum nsp_signal_flags { NSP_REC_NAMES_SIG(NSP_NAME_ENUM_, SIG) };
enum nsp_tracking { NSP_REC_NAMES_TRACK(NSP_NAME_ENUM_, TRACK) };
enum nsp_done_flags { NSP_REC_NAMES_DONE(NSP_NAME_ENUM_, DONE) };
enum nsp_site_flags { NSP_REC_NAMES_SITE(NSP_NAME_ENUM_, SITE) };
enum nsp_call_flags { NSP_REC_NAMES_CALL(NSP_NAME_ENUM_, CALL) };
enum nsp_comm_flags { NSP_REC_NAMES_COMM(NSP_NAME_ENUM_, COMM) };
enum nsp_drop_reason { NSP_REC_NAMES_DROP(NSP_NAME_ENUM_, DROP) };
enum nsp_pysite_flags { NSP_REC_NAMES_PYSITE(NSP_NAME_ENUM_, PYSITE) }; /* 1.6 */
#undef NSP_NAME_ENUM_
/* Counts of drops by reason are arrays indexed by NSP_DROP_* (index 0:
 * unknown): NSP_DROP_END entries, the reasons being 1, 2, ... in the
 * table's order.  The crash ring's header keeps NSP_DROP_SLOTS of them, a
 * fixed part of its layout: a reason past that needs a new ring format. */
#define NSP_DROP_ONE_(P, NAME, value, word, since, meaning) +1
enum { NSP_DROP_END = 1 NSP_REC_NAMES_DROP(NSP_DROP_ONE_, DROP) };
#undef NSP_DROP_ONE_
#define NSP_DROP_SLOTS 4
NSP_TRACE_STATIC_ASSERT(NSP_DROP_END <= NSP_DROP_SLOTS, "a drop reason the crash ring's header has no count for");

/* Mask bits of NSP_REC_CALL. */
enum nsp_call_mask {
  NSP_CM_ALWAYS = 0, /* trace_schema.h: a field written in every record */
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
  NSP_CM_PYSITE = 1u << 11, /* 1.6 */
};

/* Header flags. */
enum nsp_header_flags {
  NSP_HDR_NO_TIMING = 1u << 0, /* no GPU timing in this trace */
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
#define NSP_RING_MINOR 2
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

/* Field ids, from the memory form's members (NSP_REC_SLOTS): NSP_RF_KIND
 * = 1, NSP_RF_API, ... NSP_RF_SITE = 21. */
#define NSP_RF_ENUM_(ID, member, type, is_signed, ring_default) NSP_RF_##ID,
enum nsp_ring_field_id { NSP_RF_NONE_ = 0, NSP_REC_SLOTS(NSP_RF_ENUM_) NSP_RF_END_ };
#undef NSP_RF_ENUM_

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
  uint64_t dropped[NSP_DROP_SLOTS]; /* records dropped so far, by NSP_DROP_* reason (index 0 unused) */
  uint64_t blobs_lost;        /* records whose blob found no room */
  /* Ring minor 1 (trace format 1.5); 0 in older rings: */
  uint64_t heartbeat_mono_ns; /* the writer thread's last pass, CLOCK_MONOTONIC: it passes
                                 every few ms while the process lives */
  uint64_t heartbeat_real_ns; /* the same moment, CLOCK_REALTIME */
  uint64_t exit_mono_ns;      /* when the exit handlers ran; 0 they have not */
  uint32_t inflight_offset;   /* file offset of the in-flight table, in the header's
                                 bytes past this struct; 0 none */
  uint32_t ninflight;         /* its entries */
  uint32_t inflight_size;     /* bytes of one entry: 128 */
  uint32_t inflight_unslotted; /* threads that found no free entry */
  uint8_t reserved[96];
  struct nsp_ring_field fields[NSP_RING_MAX_FIELDS]; /* at offset 256 */
};

/* The in-flight table (ring minor 1): one entry per thread that is or was
 * inside an NCCL call, so a process killed, or read while it runs, shows
 * the calls that have not returned (communicator creation waiting for a
 * rank that never came, a blocking collective, ncclGroupEnd, destroy).
 * A thread takes a free entry (tid 0) at its first recorded call and gives
 * it back when it ends.  At each call's entry, before NCCL is called, the
 * shim writes `call` as a seqlock: gen odd, the fields, gen even; at the
 * call's return it sets call.t_enter to 0, before the call's record goes
 * into the ring.  A reader takes an entry whose gen is even and the same
 * before and after it copies the fields, and whose t_enter is not 0: a
 * call in flight, read as an INFLIGHT record (trace_schema.h).  The shim
 * writes t_enter, api, comm, group_id and group_depth at every call, and
 * the rest only where the call's kind uses it: seq, count, dtype, redop
 * and peer for collectives and send/recv; comm_id, rank and nranks for
 * communicator creation (parent_id, split_index, color and key instead of
 * rank and nranks for split and shrink).  Other fields are left over from
 * the thread's earlier calls: readers take their defaults instead. */
struct nsp_inflight_call {
  uint64_t t_enter;      /* CLOCK_MONOTONIC ns; 0: no call in flight */
  uint64_t seq;          /* as INFLIGHT's fields of the same names */
  uint64_t count;
  uint64_t group_id;
  uint64_t comm_id;
  uint64_t parent_id;
  uint32_t comm;
  int32_t peer, dtype, redop;
  uint32_t group_depth;
  int32_t rank, nranks, color, key;
  uint32_t split_index;
  uint8_t api;
  uint8_t reserved[3];
  uint32_t pysite;       /* ring minor 2 (format 1.6): the Python call site; 0 none */
};
struct nsp_ring_inflight {
  uint64_t gen;          /* seqlock: odd while `call` changes */
  uint32_t tid;          /* the owning thread; 0 free */
  uint32_t reserved0;
  struct nsp_inflight_call call;
  uint8_t reserved[16];
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

#ifdef __cplusplus
}
#endif

#endif /* NCCLSPY_TRACE_H */
