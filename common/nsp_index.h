/* nsp_index.h - the trace index: what a data frame holds, said before it.
 *
 * Before each zstd data frame the writers (the shim's nsp_writer.c, the
 * tests' nsp_tracegen.c) put a skippable zstd frame (RFC 8878 3.1.2,
 * magic NSP_INDEX_MAGIC), which every zstd reader, and every ncclspy
 * reader before it, steps over.  It says, of the data frame after it:
 *
 *   - its size in bytes, so a reader hops from index to index without
 *     touching the data;
 *   - what folding its records into the analyzer's model does, when the
 *     frame is "clean" (only successful collectives, each the next seq of
 *     its communicator, with built-in reduction ops; successful sends and
 *     receives, each the next of its peer and direction, of one count and
 *     dtype per peer and direction in the frame; groups opened and closed
 *     in it; and successful COMPLETIONs): records, calls, times, the APIs,
 *     per communicator the collectives and seq range and the highest seq
 *     completed, per peer and direction the run of sends or receives, per
 *     stream the latest call completed;
 *   - the digests of the collective signatures (api class, count in
 *     elements, dtype, reduction op, root) of each block of
 *     NSP_INDEX_BLOCK seqs of a communicator that the frame completed,
 *     which the analyzer compares across ranks before decoding anything;
 *   - anchors: the oldest frame that any call or early completion still
 *     awaiting its match at the frame's end came from, and of early
 *     completions cancelled by calls in it.  A call still waiting when a
 *     later call on its stream has completed is no anchor: the analyzer
 *     takes it as completed at the end (nsp_an_load.c finish_pending),
 *     so it changes nothing whether its frame is read or not.  The writer keeps the
 *     analyzer's own completion table (nsp_pend.c) to know them, so the
 *     analyzer decoding from the anchor on has the table a full read has.
 *
 * The writer's thread builds it from the records it encodes; nothing runs
 * on the calls' threads.  docs/FORMAT.md, "The index", has the bytes. */
#ifndef NSP_INDEX_H
#define NSP_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "nsp_pend.h"
#include "nsp_record.h"
#include "nsp_u64map.h"

#define NSP_INDEX_MAGIC 0x184D2A5Eu /* a skippable frame's magic; payload starts with "NSPX" */
#define NSP_INDEX_VERSION 1
#define NSP_INDEX_BLOCK 1024 /* seqs per block of signature digests */

/* nsp_frame_index.flags */
enum {
  NSP_IX_CLEAN = 1u << 0,     /* the summary below is all its records do to the model */
  NSP_IX_NO_ANCHOR = 1u << 1, /* the completion table cannot be rebuilt from a later frame:
                               * decode from the trace's first frame */
};

struct nsp_ix_comm { /* a communicator's collectives in the frame */
  uint32_t local;    /* the trace's comm index */
  uint64_t ncoll;    /* collectives */
  uint64_t untracked; /* of them, with NSP_CALL_UNTRACKED */
  uint64_t lo, hi;   /* least and greatest seq; 0 when ncoll is 0 */
  uint64_t done_max; /* greatest seq of a collective a COMPLETION in the frame completed with
                      * NSP_DONE_OK; 0 none (any frame, clean or not) */
};
struct nsp_ix_stream { /* a stream a COMPLETION in the frame completed a call of (OK or captured) */
  uint64_t stream, t_enter; /* the latest such call's entry, monotonic ns */
};
struct nsp_ix_block { /* a block of seqs a communicator's calls left in this frame */
  uint32_t local;
  uint64_t block;  /* seqs block * NSP_INDEX_BLOCK .. + NSP_INDEX_BLOCK - 1 */
  uint64_t digest; /* of (seq, signature) of each collective in it, in order */
  uint32_t n;      /* collectives in it */
  uint32_t tainted; /* an error, a user reduction op, a seq out of order: not comparable */
};
struct nsp_ix_p2p { /* a run of sends or receives of a comm index to one peer in the frame */
  uint32_t local;
  int32_t peer;
  uint32_t dir;    /* 0 send, 1 receive */
  uint64_t k0, n;  /* the analyzer's numbers (seq, plus failed calls before) k0 .. k0 + n - 1 */
  uint64_t count;  /* elements, each call's */
  int32_t dtype;
};
struct nsp_ix_ident { /* a COMM record of the frame */
  uint32_t local;
  uint64_t comm_id;
  int32_t rank, nranks;
};

/* What a frame's records add up to (for a clean frame, all they do). */
struct nsp_ix_summary {
  uint64_t nrec;      /* records a reader returns from it */
  uint64_t kinds;     /* bit k: a record of kind k */
  uint64_t max_mono;  /* greatest nsp_rec_latest_mono of its records, PROCESS's aside */
  uint64_t max_call_mono; /* greatest CALL t_enter; 0 none */
  uint64_t api_bits[2];   /* bit a: a CALL of api a */
  uint64_t calls, untracked, completions; /* CALL records, of them NSP_CALL_UNTRACKED, COMPLETIONs */
};

/* One frame's index, as parsed; the arrays belong to the struct
 * (nsp_index_parse reuses them, nsp_frame_index_free frees them). */
struct nsp_frame_index {
  uint64_t frame_no;  /* data frames written before this one */
  uint64_t data_size; /* bytes of the data frame after the index */
  uint64_t data_hash; /* nsp_index_data_hash of those bytes: a frame stepped over is checked, not decoded */
  uint64_t flags;     /* NSP_IX_* */
  struct nsp_ix_summary sum;
  uint64_t open_from;  /* least frame_no of a table entry open at its end; frame_no + 1 none */
  uint64_t early_from; /* least frame_no of an early completion a call in it cancelled; frame_no + 1 none */
  size_t ncomm, nstream, nblock, nident, np2p;
  struct nsp_ix_comm *comm;
  struct nsp_ix_stream *stream;
  struct nsp_ix_block *block;
  struct nsp_ix_ident *ident;
  struct nsp_ix_p2p *p2p; /* in the order of their first call in the frame */
  size_t comm_cap, stream_cap, block_cap, ident_cap, p2p_cap;
};

void nsp_frame_index_free(struct nsp_frame_index *ix);

/* Parses an index frame's payload (len bytes after the 8-byte skippable
 * frame header).  0, or -1 when it is not an index this reader knows
 * (another tag or version, malformed, out of memory). */
int nsp_index_parse(const uint8_t *payload, size_t len, struct nsp_frame_index *ix);

/* The writers' side: fed every record of the trace in order. */
struct nsp_ix_local;
struct nsp_ix_p2pstate;
struct nsp_index_builder {
  struct nsp_pend_tab pend; /* the analyzer's completion table, entries stamped with their frame */
  int tracking;             /* the PROCESS record's tracking has NSP_TRACK_COMPLETION */
  int broken;               /* a frame was lost: no index from here on */
  struct nsp_ix_local *loc;
  size_t nloc;
  struct nsp_frame_index cur; /* the frame being built */
  int clean;
  struct nsp_u64map stream_done; /* stream -> latest t_enter of a call completed on it (OK or captured) */
  struct nsp_u64map p2p_index;   /* (comm index, peer, direction) -> its entry in p2p + 1 */
  struct nsp_ix_p2pstate *p2p;
  size_t np2p, p2p_cap;
  struct nsp_u64map groups;      /* group ids open (a call on a communicator in it, no outermost end yet) */
  int group_at_start;            /* a group was open when the frame began */
};

void nsp_index_init(struct nsp_index_builder *b);
void nsp_index_free(struct nsp_index_builder *b);
/* One record, as it goes into the frame being built.  0 or -1 (out of
 * memory: the builder is broken and writes no more indexes). */
int nsp_index_add(struct nsp_index_builder *b, const struct nsp_rec *r);
/* Appends the index frame of the frame being built (its data frame, once
 * compressed: data_size bytes at data) to out.  0; -1 out of memory or
 * broken (out unchanged). */
int nsp_index_put(struct nsp_index_builder *b, const uint8_t *data, size_t data_size, struct nsp_buf *out);

/* The hash of a data frame's bytes an index holds (docs/FORMAT.md, "The
 * index"): four lanes over 32-byte blocks of little-endian words, the
 * tail bytes and the length, mixed; about 1 ns per 10 bytes. */
uint64_t nsp_index_data_hash(const uint8_t *p, size_t n);
/* The frame was written (ok) or lost (!ok: no index from here on): the
 * next frame's index starts. */
void nsp_index_next(struct nsp_index_builder *b, int ok);

/* Reading a trace's indexes from its file: from byte `off` (the first
 * frame, after the header), each index and the offset of its data frame,
 * until a frame without an index, the end, damage, or (verify) a data
 * frame whose bytes do not hash to what its index says; at most
 * max_frames (SIZE_MAX: all).  fn returns 0 to go on, nonzero to stop.
 * Returns the offset where indexes stop (the file's size when every
 * frame had one). */
size_t nsp_index_walk(int fd, size_t size, size_t off, int verify, size_t max_frames,
                      struct nsp_frame_index *scratch,
                      int (*fn)(void *ctx, const struct nsp_frame_index *ix, size_t data_off), void *ctx);
/* The same over a trace in memory. */
size_t nsp_index_walk_mem(const uint8_t *data, size_t size, size_t off, int verify, size_t max_frames,
                          struct nsp_frame_index *scratch,
                          int (*fn)(void *ctx, const struct nsp_frame_index *ix, size_t data_off), void *ctx);

#endif /* NSP_INDEX_H */
