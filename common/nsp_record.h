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
#include "nsp_paged.h"

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
  /* NSP_REC_MODULE (1.6) */
  const char *module_path, *build_id;
};

/* One record in memory: what the shim fills in its ring slot (128 bytes)
 * and what nsp_decode gives back.  Its members are slots
 * (ncclspy/trace_schema.h, NSP_REC_SLOTS) that each kind uses for fields of
 * its own: SIGNAL keeps its thread id in `seq`, COMPLETION its t_seen in
 * `count`.  So code reads and writes a record through its kind's accessors
 * (below), nsp_rec_<kind>_<field>(r) and nsp_rec_<kind>_set_<field>(r, v),
 * never through a member whose name is another field's. */
#define NSP_REC_SLOT_MEMBER_(ID, member, type, is_signed, ring_default) type member;
struct nsp_rec {
  NSP_REC_SLOTS(NSP_REC_SLOT_MEMBER_)
};
#undef NSP_REC_SLOT_MEMBER_

/* ---- typed accessors, one pair per field of each kind -------------------
 *
 * nsp_rec_signal_tid(r) reads SIGNAL's thread id wherever it lives, as
 * the field's type; nsp_rec_signal_set_tid(r, v) writes it.  Fields kept in
 * struct nsp_rec_ext (strings, ids of COMM and PROCESS) have getters only,
 * reading r->ext, which must be set; the shim fills the ext directly.
 * Fields only on the wire (CALL's mask), the environment and the frames
 * have none (use r->ext). */
#define NSP_REC_ACC_(k, name, enc, cm, pred, loc, type, unit, since, def, meaning) \
  NSP_REC_ACC_A_(NSP_REC_ACCL_##loc, k, name, type)
#define NSP_REC_ACC_A_(...) NSP_REC_ACC_B_(__VA_ARGS__)
#define NSP_REC_ACC_B_(how, member, k, name, type) how(k, name, type, member)
#define NSP_REC_ACCL_R(member) NSP_REC_ACC_R_, member
#define NSP_REC_ACCL_X(member) NSP_REC_ACC_X_, member
#define NSP_REC_ACCL_XENV() NSP_REC_ACC_NONE_, _
#define NSP_REC_ACCL_XFRAMES() NSP_REC_ACC_NONE_, _
#define NSP_REC_ACCL_WIRE() NSP_REC_ACC_NONE_, _
#define NSP_REC_ACC_R_(k, name, type, member)                                                 \
  static inline type nsp_rec_##k##_##name(const struct nsp_rec *r) { return (type)r->member; } \
  static inline void nsp_rec_##k##_set_##name(struct nsp_rec *r, type v) {                     \
    r->member = (__typeof__(r->member))v;                                                       \
  }
#define NSP_REC_ACC_X_(k, name, type, member) \
  static inline type nsp_rec_##k##_##name(const struct nsp_rec *r) { return (type)r->ext->member; }
#define NSP_REC_ACC_NONE_(k, name, type, member)
#define NSP_REC_ACC_KIND_(NAME, name, value, since, has_ext, ring, names, meaning) NSP_REC_FIELDS_##NAME(NSP_REC_ACC_, name)
NSP_REC_KINDS(NSP_REC_ACC_KIND_)
#undef NSP_REC_ACC_KIND_

/* A growable byte buffer. */
struct nsp_buf {
  uint8_t *data;
  size_t len, cap;
};

/* Makes room for n more bytes.  Returns 0, or -1 when out of memory. */
int nsp_buf_reserve(struct nsp_buf *b, size_t n);
/* Frees the bytes; b may be NULL. */
void nsp_buf_free(struct nsp_buf *b);

/* Prediction state of one frame, per comm (see NSP_REC_CALL): made from
 * the CALL fields' predictions in trace_schema.h (nsp_codec.c).  Every
 * frame starts afresh, on both sides. */
struct nsp_pred;
/* Predictions live in pages of NSP_PRED_PAGE comms (nsp_paged.h), made
 * when a comm of the page is first used: a comm index near NSP_MAX_COMMS
 * costs one page, not a prediction for every lower index.  The last page
 * used is kept: a frame's calls are on a few comms. */
#define NSP_PRED_PAGE 32
struct nsp_codec {
  struct nsp_paged pred; /* struct nsp_pred by comm; set up at first use */
  uint64_t last_no;      /* the page number of last_page */
  struct nsp_pred *last_page;
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
static inline size_t nsp_put_varint(uint8_t *dst, uint64_t v) { /* inline: the encoder's inner loop */
  size_t n = 0;
  while (v >= 0x80) {
    dst[n++] = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  dst[n++] = (uint8_t)v;
  return n;
}
int nsp_get_varint(const uint8_t **p, const uint8_t *end, uint64_t *v);

#endif /* NSP_RECORD_H */
