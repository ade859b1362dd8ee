/* nsp_record.h - ncclspy records in memory, and their encoding.
 *
 * The shim fills a struct nsp_rec per event and hands it to its writer
 * thread, which encodes it (nsp_encode) into the wire format described in
 * include/ncclspy/trace.h.  Readers get the same struct back from
 * nsp_decode.  This file depends on nothing but the C library.
 */
#ifndef NSP_RECORD_H
#define NSP_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "ncclspy/trace.h"

/* Rare fields: communicator creation and the process snapshot. */
struct nsp_rec_ext {
  /* NSP_REC_COMM */
  uint64_t comm_id;      /* hash of the ncclUniqueId, or derived for splits */
  uint64_t parent_id;    /* 0: no parent */
  uint64_t handle;       /* ncclComm_t value in this process */
  int32_t rank, nranks, device;
  int32_t color, key;    /* splits; NCCL_SPLIT_NOCOLOR = -1 */
  uint32_t split_index;  /* parent's splits before this one */
  const char *comm_name; /* config commName, "" when unset */
  const char *gpu_uuid, *gpu_pci_bus_id, *gpu_name; /* "" unknown (1.1) */
  /* NSP_REC_PROCESS */
  uint32_t pid, ppid;
  int32_t nccl_version;
  uint64_t realtime_ns, monotonic_ns;
  const char *host, *shim_version, *nccl_path;
  uint32_t nenv;
  const char *const *env; /* nenv*2 strings: name, value, name, value... */
  int32_t driver_version, runtime_version; /* 0 unknown (1.1) */
  const char *launcher;   /* "torchrun", "slurm", "openmpi", "pmi", "" (1.1) */
  uint32_t tracking;      /* NSP_TRACK_* (1.1) */
  /* NSP_REC_CALLSITE (1.1): nframes frames, innermost first */
  uint32_t nframes;
  const char *const *frame_module;
  const uint64_t *frame_offset;
  const char *const *frame_symbol;
};

/* One record.  Which fields mean something depends on kind:
 *  CALL        all but aux; strings: last_error when result != 0.
 *  COMM        comm, api, result, t_enter, t_exit, flags, last_error, ext.
 *  COMM_END    comm, api, result, t_enter, t_exit, last_error.
 *  REDOP       api, comm, redop, dtype, result, t_*, aux = residence,
 *              count = host scalar bits.
 *  DROPPED     count = records lost, aux = NSP_DROP_* reason, t_enter.
 *  ASYNC_ERROR comm, result, t_enter, last_error.
 *  PROCESS     ext only.
 *  COMPLETION  comm, api, seq, peer, group_id, flags (NSP_DONE_*),
 *              t_enter = gpu_start, t_exit = gpu_end, count = t_seen.
 *  CALLSITE    site, flags (NSP_SITE_*), ext frames.
 *  SIGNAL      aux = signal number, result = si_code, sendbuff = si_addr,
 *              seq = thread id, t_enter = when, flags (NSP_SIG_*), peer =
 *              sender pid (0: none), ext frames (NULL: no stack) (1.3).
 *  HEARTBEAT   t_enter = now, count = calls pending, t_exit = the oldest
 *              pending call's enqueue time.
 *  RINGPOS     seq = first ring position of the frame, count = end
 *              (nsp_reader consumes these; callers never see them).
 * Fields are sized for the shim's ring (128-byte slots). */
struct nsp_rec {
  uint8_t kind;          /* enum nsp_rec_kind */
  uint8_t api;           /* enum nsp_api (common/nsp_nccl.h) */
  uint16_t flags;        /* NSP_CALL_* or NSP_COMM_* */
  uint32_t comm;         /* process-local communicator index, from 1; 0 none */
  int32_t result;        /* ncclResult_t as returned */
  int32_t peer;          /* root or peer rank; -1 none */
  int32_t dtype;         /* ncclDataType_t; -1 none */
  int32_t redop;         /* ncclRedOp_t; -1 none */
  uint32_t group_depth;  /* ncclGroupStart nesting at the call; 0 outside */
  uint32_t aux;
  uint64_t seq;          /* per comm (collectives) or per comm/peer/direction */
  uint64_t count;        /* elements, as passed */
  uint64_t stream, sendbuff, recvbuff; /* addresses, never contents */
  uint64_t group_id;     /* process-wide group counter; 0 outside groups */
  uint64_t t_enter, t_exit; /* CLOCK_MONOTONIC ns */
  const char *last_error;   /* NULL or NUL-terminated */
  const struct nsp_rec_ext *ext;
  uint32_t site;            /* call-site id (CALL, CALLSITE); 0 none */
};

/* A growable byte buffer. */
struct nsp_buf {
  uint8_t *data;
  size_t len, cap;
};

/* Makes room for n more bytes.  Returns 0, or -1 when out of memory. */
int nsp_buf_reserve(struct nsp_buf *b, size_t n);
/* Frees the bytes; b may be NULL. */
void nsp_buf_free(struct nsp_buf *b);

/* Prediction state of one frame (see NSP_REC_CALL).  Zero it, or call
 * nsp_codec_reset, at every frame start, on both sides. */
struct nsp_pred {
  uint64_t seq, count, stream, sendbuff, recvbuff, group_id;
  int32_t dtype, redop, peer, result;
  uint32_t group_depth, flags, site;
  uint32_t gen; /* the frame (nsp_codec.gen) this prediction belongs to */
};
/* Predictions live in pages of NSP_PRED_PAGE comms, made when a comm of
 * the page is first used: a comm index near NSP_MAX_COMMS costs one page
 * and the directory, not a prediction for every lower index. */
#define NSP_PRED_PAGE 32
struct nsp_codec {
  struct nsp_pred **pred; /* pages by comm / NSP_PRED_PAGE (NULL: none yet) */
  size_t npred;           /* directory entries */
  uint64_t prev_t;
  uint32_t gen; /* frames started; a pred of another gen is stale */
};

/* Starts a new frame: forgets every prediction (keeps the memory), in
 * O(1): one comm index near NSP_MAX_COMMS must not make every later
 * frame cost a pass over a million predictions. */
void nsp_codec_reset(struct nsp_codec *c);
/* Frees the state; c may be NULL. */
void nsp_codec_free(struct nsp_codec *c);

/* Appends one record to out.  Returns 0, or -1 when out of memory (out
 * is then unchanged). */
int nsp_encode(struct nsp_buf *out, struct nsp_codec *c, const struct nsp_rec *r);

/* Encodes one SIGNAL record (kind, length, payload) into dst, at most cap
 * bytes, with no allocation, no lock and no call outside the C string
 * functions: async-signal-safe, for the shim's signal handler.  Frames are
 * taken from r->ext (none when NULL).  Returns the bytes written, or 0
 * when the record does not fit in cap (dst is then undefined) or r is not
 * a SIGNAL record.  nsp_encode encodes the same bytes. */
size_t nsp_encode_signal(uint8_t *dst, size_t cap, const struct nsp_rec *r);

/* Storage for decoded strings and the ext part; reused from call to call. */
struct nsp_dec_store {
  struct nsp_rec_ext ext;
  char *strings; /* copies of decoded strings, NUL-terminated */
  size_t strings_cap;
  const char **env;
  size_t env_cap;
  const char **frame_str; /* module, symbol pairs of a CALLSITE */
  uint64_t *frame_off;
  size_t frame_cap;
};
void nsp_dec_store_free(struct nsp_dec_store *s);

/* Limits a decoder enforces against hostile input. */
#define NSP_MAX_STRING (64u << 10) /* bytes of one string */
#define NSP_MAX_ENV 4096           /* entries of the environment snapshot */
#define NSP_MAX_COMMS (1u << 20)   /* comm indices per file */
#define NSP_MAX_FRAMES 256         /* frames of one call site */

/* Decodes the record at *p (not beyond end) into r, advancing *p.
 * Strings and r->ext point into store and stay valid until the next call.
 * Returns 1 when a record was decoded (r->kind may be a kind this reader
 * does not know: skip it), 0 at end (*p == end), and -1 when the bytes are
 * malformed (*p is left at the start of the bad record). */
int nsp_decode(const uint8_t **p, const uint8_t *end, struct nsp_codec *c,
               struct nsp_rec *r, struct nsp_dec_store *store);

/* LEB128 helpers, exposed for tests.  nsp_put_varint needs 10 free bytes
 * at dst and returns the bytes written.  nsp_get_varint returns 0 and
 * advances *p, or -1 on truncation or a value over 64 bits. */
size_t nsp_put_varint(uint8_t *dst, uint64_t v);
int nsp_get_varint(const uint8_t **p, const uint8_t *end, uint64_t *v);

#endif /* NSP_RECORD_H */
