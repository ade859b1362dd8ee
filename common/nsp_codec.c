/* nsp_codec.c - records to bytes and back.
 *
 * The encoder and the decoder are made from the record schema
 * (include/ncclspy/trace_schema.h): each kind's field list expands, once
 * per purpose, into straight-line code (no table walked per field at run
 * time), so a field added to the schema is written and read with no edit
 * here. */
#include "nsp_record.h"

#include <stdlib.h>
#include <string.h>

#include "nsp_grow.h"
#include "nsp_names.h"
#include "nsp_schema.h"

int nsp_buf_reserve(struct nsp_buf *b, size_t n) {
  if (b->cap - b->len >= n) return 0;
  size_t cap = b->cap ? b->cap : 4096;
  while (cap - b->len < n) {
    if (cap > SIZE_MAX / 2) return -1;
    cap *= 2;
  }
  uint8_t *d = realloc(b->data, cap);
  if (!d) return -1;
  b->data = d;
  b->cap = cap;
  return 0;
}

void nsp_buf_free(struct nsp_buf *b) {
  if (!b) return;
  free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
}

int nsp_get_varint(const uint8_t **p, const uint8_t *end, uint64_t *v) {
  uint64_t out = 0;
  const uint8_t *q = *p;
  for (unsigned shift = 0; shift < 64; shift += 7) {
    if (q >= end) return -1;
    uint8_t byte = *q++;
    if (shift == 63 && byte > 1) return -1; /* over 64 bits */
    out |= (uint64_t)(byte & 0x7f) << shift;
    if (!(byte & 0x80)) {
      *p = q;
      *v = out;
      return 0;
    }
  }
  return -1;
}

static uint64_t zz_enc(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }
static int64_t zz_dec(uint64_t u) { return (int64_t)(u >> 1) ^ -(int64_t)(u & 1); }

/* ---- the schema's columns, as code -------------------------------------
 *
 * loc: where a field lives, as an lvalue (r: the record, x: its ext). */
#define NSP_LOC_R(member) r->member
#define NSP_LOC_X(member) x->member
#define NSP_LOC_XENV() x
#define NSP_LOC_XFRAMES() x
#define NSP_LOC_WIRE() mask

/* pred: NSP_PRED(op, pred, args...) calls op_<how>(init, args...), where
 * pred is PREV(init), NEXTSEQ, PREVT, DEF or NONE. */
#define NSP_PSPLIT_PREV(v) PREV, v
#define NSP_PSPLIT_NEXTSEQ NEXTSEQ, 0
#define NSP_PSPLIT_PREVT PREVT, 0
#define NSP_PSPLIT_DEF DEF, 0
#define NSP_PSPLIT_NONE NONE, 0
#define NSP_PRED(op, pred, ...) NSP_PRED_A_(op, NSP_PSPLIT_##pred, __VA_ARGS__)
#define NSP_PRED_A_(op, ...) NSP_PRED_B_(op, __VA_ARGS__)
#define NSP_PRED_B_(op, how, init, ...) op##_##how(init, __VA_ARGS__)

/* The prediction state of one comm: a member per predicted CALL field. */
#define NSP_PM_(K, name, enc, cm, pred, loc, type, unit, since, def, meaning) NSP_PRED(NSP_PM, pred, type, name)
#define NSP_PM_PREV(init, type, name) type name;
#define NSP_PM_NEXTSEQ(init, type, name) type name;
#define NSP_PM_PREVT(init, type, name)
#define NSP_PM_DEF(init, type, name)
#define NSP_PM_NONE(init, type, name)
struct nsp_pred {
  NSP_REC_FIELDS_CALL(NSP_PM_, CALL)
  uint32_t gen; /* the frame (nsp_codec.gen) this prediction belongs to */
};

/* At frame start: each PREV field's init, the rest 0. */
#define NSP_PI_(K, name, enc, cm, pred, loc, type, unit, since, def, meaning) NSP_PRED(NSP_PI, pred, name)
#define NSP_PI_PREV(init, name) .name = (init),
#define NSP_PI_NEXTSEQ(init, name)
#define NSP_PI_PREVT(init, name)
#define NSP_PI_DEF(init, name)
#define NSP_PI_NONE(init, name)
static const struct nsp_pred nsp_pred_zero = {NSP_REC_FIELDS_CALL(NSP_PI_, CALL)};

void nsp_codec_reset(struct nsp_codec *c) {
  c->prev_t = 0;
  if (++c->gen) return;
  /* Wrapped after 2^32 frames: an old gen could look current again. */
  for (size_t k = 0; k < c->pred.npages; k++)
    for (size_t i = 0; i < NSP_PRED_PAGE; i++) ((struct nsp_pred *)c->pred.pages[k])[i] = nsp_pred_zero;
}

void nsp_codec_free(struct nsp_codec *c) {
  if (!c) return;
  nsp_paged_free(&c->pred);
  c->last_page = NULL;
}

/* The page of comms page_no: made the first time, its predictions then
 * those of a frame start.  NULL when out of memory. */
static struct nsp_pred *pred_page(struct nsp_codec *c, uint64_t page_no) {
  if (c->last_page && c->last_no == page_no) return c->last_page;
  if (!c->pred.elsize) nsp_paged_init(&c->pred, sizeof(struct nsp_pred), NSP_PRED_PAGE);
  struct nsp_pred *pg = nsp_paged_page(&c->pred, page_no, 0);
  if (!pg) {
    if (!(pg = nsp_paged_page(&c->pred, page_no, 1))) return NULL;
    for (size_t i = 0; i < NSP_PRED_PAGE; i++) {
      pg[i] = nsp_pred_zero;
      pg[i].gen = c->gen;
    }
  }
  c->last_no = page_no;
  return c->last_page = pg;
}

static struct nsp_pred *pred_for(struct nsp_codec *c, uint64_t comm) {
  if (comm >= NSP_MAX_COMMS) return NULL;
  struct nsp_pred *pg = pred_page(c, comm / NSP_PRED_PAGE);
  if (!pg) return NULL;
  struct nsp_pred *pr = &pg[comm % NSP_PRED_PAGE];
  if (pr->gen != c->gen) {
    *pr = nsp_pred_zero;
    pr->gen = c->gen;
  }
  return pr;
}

/* After a CALL, on both sides: its values become the comm's predictions
 * (seq only for collectives), and its t_enter the frame's. */
#define NSP_PS_(K, name, enc, cm, pred, loc, type, unit, since, def, meaning) NSP_PRED(NSP_PS, pred, name, NSP_LOC_##loc)
#define NSP_PS_PREV(init, name, lv) pr->name = (lv);
#define NSP_PS_NEXTSEQ(init, name, lv) \
  if (api_kind == NSP_K_COLL) pr->name = (lv);
#define NSP_PS_PREVT(init, name, lv) c->prev_t = (lv);
#define NSP_PS_DEF(init, name, lv)
#define NSP_PS_NONE(init, name, lv)

/* ---- encoder ---------------------------------------------------------- */

/* The payload writer.  nsp_encode reserves the kind's bound first
 * (bound_<kind>), so it writes unchecked; the SIGNAL record is also
 * encoded by the shim's signal handler into a fixed buffer, where every
 * write checks room (chk).  Everything below is async-signal-safe (no
 * allocation, no lock, only the C string functions) for every kind but
 * CALL (its predictions).  Inlined with chk a constant, so each caller
 * gets its own code. */
#define NSP_INLINE static inline __attribute__((always_inline))
struct benc {
  uint8_t *p, *end;
  int over;
};

NSP_INLINE void put(struct benc *e, int chk, const void *src, size_t n) {
  if (chk && (e->over || (size_t)(e->end - e->p) < n)) {
    e->over = 1;
    return;
  }
  if (n) memcpy(e->p, src, n);
  e->p += n;
}
NSP_INLINE void put_v(struct benc *e, int chk, uint64_t v) {
  if (!chk || e->end - e->p >= 10) { /* room for any varint */
    e->p += nsp_put_varint(e->p, v);
    return;
  }
  uint8_t t[10];
  put(e, chk, t, nsp_put_varint(t, v));
}
NSP_INLINE void put_z(struct benc *e, int chk, int64_t v) { put_v(e, chk, zz_enc(v)); }
NSP_INLINE void put_u64(struct benc *e, int chk, uint64_t v) {
  uint8_t t[8];
  for (int i = 0; i < 8; i++) t[i] = (uint8_t)(v >> (8 * i));
  put(e, chk, t, 8);
}
NSP_INLINE void put_s(struct benc *e, int chk, const char *s) {
  size_t n = s ? strnlen(s, NSP_MAX_STRING) : 0;
  put_v(e, chk, n);
  put(e, chk, s, n);
}
static void put_env(struct benc *e, int chk, const struct nsp_rec_ext *x) {
  uint32_t n = x->env ? x->nenv : 0;
  put_v(e, chk, n);
  for (uint32_t i = 0; i < 2 * n; i++) put_s(e, chk, x->env[i]);
}
/* A stack without offsets is written as none. */
static uint32_t nframes_of(const struct nsp_rec_ext *x) {
  if (!x->frame_offset) return 0;
  return x->nframes > NSP_MAX_FRAMES ? NSP_MAX_FRAMES : x->nframes;
}
static void put_frames(struct benc *e, int chk, const struct nsp_rec_ext *x) {
  uint32_t nf = nframes_of(x);
  put_v(e, chk, nf);
  for (uint32_t i = 0; i < nf; i++) {
    put_s(e, chk, x->frame_module ? x->frame_module[i] : NULL);
    put_v(e, chk, x->frame_offset[i]);
    put_s(e, chk, x->frame_symbol ? x->frame_symbol[i] : NULL);
  }
}

/* V writes a signed 32-bit field as its unsigned pattern. */
#define NSP_VBITS(v) _Generic((v), int32_t: (uint64_t)(uint32_t)(v), default: (uint64_t)(v))

/* enc: how each encoding writes the field `name` of type `type` at lv. */
#define NSP_ENC_V(name, type, lv) put_v(e, chk, NSP_VBITS((type)(lv)))
#define NSP_ENC_Z(name, type, lv) put_z(e, chk, (int64_t)(type)(lv))
#define NSP_ENC_U64(name, type, lv) put_u64(e, chk, (uint64_t)(lv))
#define NSP_ENC_S(name, type, lv) put_s(e, chk, (lv))
#define NSP_ENC_ENV(name, type, lv) put_env(e, chk, (lv))
#define NSP_ENC_FRAMES(name, type, lv) put_frames(e, chk, (lv))
#define NSP_ENC_MASK(name, type, lv) put_v(e, chk, mask)
#define NSP_ENC_TDELTA(name, type, lv) put_z(e, chk, (int64_t)((lv) - c->prev_t))
#define NSP_ENC_DUR(name, type, lv) put_v(e, chk, (lv) - r->t_enter)
#define NSP_ENC_SEQ(name, type, lv) put_v(e, chk, (lv))
#define NSP_ENC_ZDELTA(name, type, lv) put_z(e, chk, (int64_t)((lv) - pr->name))

/* A field is written when it is always present or its mask bit is set. */
#define NSP_EF_(K, name, enc, cm, pred, loc, type, unit, since, def, meaning) \
  if (NSP_CM_##cm == NSP_CM_ALWAYS || (mask & NSP_CM_##cm)) NSP_ENC_##enc(name, type, NSP_LOC_##loc);

/* CALL's mask: a bit is set when one of its fields differs from its
 * prediction. */
#define NSP_MB_(K, name, enc, cm, pred, loc, type, unit, since, def, meaning) \
  NSP_PRED(NSP_MB, pred, NSP_CM_##cm, name, NSP_LOC_##loc)
#define NSP_MB_PREV(init, bit, name, lv) \
  if ((lv) != pr->name) mask |= (bit);
#define NSP_MB_NEXTSEQ(init, bit, name, lv) \
  if (api_kind == NSP_K_P2P || (lv) != seq_pred) mask |= (bit);
#define NSP_MB_DEF(init, bit, name, lv) \
  if ((lv) != 0) mask |= (bit);
#define NSP_MB_PREVT(init, bit, name, lv)
#define NSP_MB_NONE(init, bit, name, lv)

/* Bytes a field may take at most. */
#define NSP_BOUND_(K, name, enc, cm, pred, loc, type, unit, since, def, meaning) n += NSP_BOUND_##enc(NSP_LOC_##loc);
#define NSP_BOUND_V(lv) 10
#define NSP_BOUND_Z(lv) 10
#define NSP_BOUND_U64(lv) 8
#define NSP_BOUND_S(lv) str_room(lv)
#define NSP_BOUND_ENV(lv) env_room(lv)
#define NSP_BOUND_FRAMES(lv) frames_room(lv)
#define NSP_BOUND_MASK(lv) 10
#define NSP_BOUND_TDELTA(lv) 10
#define NSP_BOUND_DUR(lv) 10
#define NSP_BOUND_SEQ(lv) 10
#define NSP_BOUND_ZDELTA(lv) 10

static size_t str_room(const char *s) { return 10 + (s ? strnlen(s, NSP_MAX_STRING) : 0); }
static size_t env_room(const struct nsp_rec_ext *x) {
  size_t n = 10;
  for (uint32_t i = 0; x->env && i < 2 * x->nenv; i++) n += str_room(x->env[i]);
  return n;
}
static size_t frames_room(const struct nsp_rec_ext *x) {
  size_t n = 10;
  for (uint32_t i = 0, nf = nframes_of(x); i < nf; i++)
    n += 10 + str_room(x->frame_module ? x->frame_module[i] : NULL) +
         str_room(x->frame_symbol ? x->frame_symbol[i] : NULL);
  return n;
}

/* One encoder and one bound per kind.  pr is the comm's prediction (CALL
 * only; NULL otherwise). */
#define NSP_GEN_ENC_(NAME, name, value, since, has_ext, ring, names, meaning)                                             \
  NSP_INLINE void enc_##name(struct benc *e, int chk, struct nsp_codec *c, struct nsp_pred *pr,               \
                             const struct nsp_rec *r, const struct nsp_rec_ext *x) {                           \
    unsigned mask = 0;                                                                                         \
    int api_kind = pr ? nsp_api_kind(r->api) : NSP_K_OTHER;                                                    \
    uint64_t seq_pred = pr && api_kind == NSP_K_COLL ? pr->seq + 1 : 0;                                        \
    (void)chk, (void)c, (void)pr, (void)x, (void)api_kind, (void)seq_pred;                                     \
    NSP_REC_FIELDS_##NAME(NSP_MB_, NAME)                                                                       \
    NSP_REC_FIELDS_##NAME(NSP_EF_, NAME)                                                                       \
    NSP_REC_FIELDS_##NAME(NSP_PS_, NAME)                                                                       \
  }                                                                                                            \
  static size_t bound_##name(const struct nsp_rec *r, const struct nsp_rec_ext *x) {                          \
    unsigned mask = 0;                                                                                         \
    size_t n = 0;                                                                                              \
    (void)r, (void)x, (void)mask;                                                                              \
    NSP_REC_FIELDS_##NAME(NSP_BOUND_, NAME)                                                                    \
    return n;                                                                                                  \
  }
NSP_REC_KINDS(NSP_GEN_ENC_)

static const struct nsp_rec_ext nsp_ext_zero;

/* Encodes r (kind, length, payload) into [dst, dst + cap): the payload
 * goes 11 bytes in, then moves down behind its header.  Returns the bytes
 * written, 0 when they do not fit or the kind is unknown. */
NSP_INLINE size_t encode_into(uint8_t *dst, size_t cap, int chk, struct nsp_codec *c, struct nsp_pred *pr,
                              const struct nsp_rec *r) {
  if (cap < 11) return 0;
  const struct nsp_rec_ext *x = r->ext ? r->ext : &nsp_ext_zero;
  struct benc e = {dst + 11, dst + cap, 0};
  switch (r->kind) {
#define NSP_ENC_CASE_(NAME, name, value, since, has_ext, ring, names, meaning) \
  case NSP_REC_##NAME:                                             \
    enc_##name(&e, chk, c, pr, r, x);                                   \
    break;
    NSP_REC_KINDS(NSP_ENC_CASE_)
#undef NSP_ENC_CASE_
    default:
      return 0;
  }
  if (e.over) return 0;
  size_t plen = (size_t)(e.p - (dst + 11));
  uint8_t hdr[20];
  size_t h = nsp_put_varint(hdr, r->kind);
  h += nsp_put_varint(hdr + h, plen);
  if (h > 11) return 0; /* never: plen < 2^64 */
  memmove(dst + h, dst + 11, plen);
  memcpy(dst, hdr, h);
  return h + plen;
}

size_t nsp_encode_signal(uint8_t *dst, size_t cap, const struct nsp_rec *r) {
  if (r->kind != NSP_REC_SIGNAL) return 0;
  return encode_into(dst, cap, 1, NULL, NULL, r);
}

static size_t payload_bound(const struct nsp_rec *r) {
  const struct nsp_rec_ext *x = r->ext ? r->ext : &nsp_ext_zero;
  switch (r->kind) {
#define NSP_BOUND_CASE_(NAME, name, value, since, has_ext, ring, names, meaning) \
  case NSP_REC_##NAME:                                               \
    return bound_##name(r, x);
    NSP_REC_KINDS(NSP_BOUND_CASE_)
#undef NSP_BOUND_CASE_
    default:
      return 0;
  }
}

int nsp_encode(struct nsp_buf *out, struct nsp_codec *c, const struct nsp_rec *r) {
  size_t bound = payload_bound(r); /* 0 for unknown kinds, refused below */
  if (nsp_buf_reserve(out, bound + 11) < 0) return -1;
  struct nsp_pred *pr = NULL;
  if (r->kind == NSP_REC_CALL && !(pr = pred_for(c, r->comm))) return -1;
  size_t n = encode_into(out->data + out->len, bound + 11, 0, c, pr, r);
  if (!n) return -1; /* an unknown kind (the bound counts every byte) */
  out->len += n;
  return 0;
}

/* ---- decoder ---------------------------------------------------------- */

struct dec {
  const uint8_t *p, *end;
  int bad;
  struct nsp_dec_store *st;
  size_t soff; /* used bytes of st->strings */
};

/* A field past the end of the payload takes its default (0 / "").  A
 * truncated varint inside the payload makes the record malformed. */
static inline uint64_t get_v(struct dec *d) {
  uint64_t v = 0;
  if (d->p >= d->end) return 0;
  if (*d->p < 0x80) return *d->p++; /* one byte: most fields of a CALL */
  if (nsp_get_varint(&d->p, d->end, &v) < 0) d->bad = 1, d->p = d->end;
  return v;
}
static int64_t get_z(struct dec *d) { return zz_dec(get_v(d)); }
static int32_t get_z32(struct dec *d) {
  int64_t v = get_z(d);
  if (v < INT32_MIN || v > INT32_MAX) d->bad = 1;
  return (int32_t)v;
}
/* A varint of a unit: a communicator index beyond NSP_MAX_COMMS makes
 * the record malformed. */
static inline uint64_t get_v_unit(struct dec *d, int unit) {
  uint64_t v = get_v(d);
  if (unit == NSP_UNIT_COMM && v >= NSP_MAX_COMMS) d->bad = 1;
  return v;
}
static uint64_t get_u64(struct dec *d) {
  if (d->p >= d->end) return 0;
  if (d->end - d->p < 8) {
    d->bad = 1;
    d->p = d->end;
    return 0;
  }
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)d->p[i] << (8 * i);
  d->p += 8;
  return v;
}
static const char *get_s(struct dec *d) {
  if (d->p >= d->end) return "";
  uint64_t n = get_v(d);
  if (n > NSP_MAX_STRING || n > (uint64_t)(d->end - d->p)) {
    d->bad = 1;
    d->p = d->end;
    return "";
  }
  /* st->strings holds at least payload length * 2 + 1 bytes (see
   * nsp_decode), so copies never overflow it and never move. */
  char *s = d->st->strings + d->soff;
  memcpy(s, d->p, n);
  s[n] = 0;
  d->soff += n + 1;
  d->p += n;
  return s;
}

/* The count that starts an environment or a stack: one the payload
 * cannot hold (each entry takes at least min_bytes) is hostile, and marks
 * the record bad before anything is allocated; so does one over max.
 * Returns the count, or 0 when bad. */
static uint64_t get_count(struct dec *d, uint64_t max, uint64_t min_bytes) {
  uint64_t n = get_v(d);
  if (n > max || n * min_bytes > (uint64_t)(d->end - d->p)) {
    d->bad = 1;
    d->p = d->end;
    return 0;
  }
  return n;
}

/* nenv (name, value) pairs into st->env and x.  Returns 0, or -1 when out
 * of memory. */
static int get_env(struct dec *d, struct nsp_rec_ext *x) {
  struct nsp_dec_store *st = d->st;
  uint64_t nenv = get_count(d, NSP_MAX_ENV, 2);
  if (nsp_grow(&st->env, &st->env_cap, nenv * 2 + 1, sizeof *st->env) < 0) return -1;
  for (uint64_t i = 0; i < nenv * 2; i++) st->env[i] = get_s(d);
  x->nenv = (uint32_t)nenv;
  x->env = st->env;
  return 0;
}

/* nf frames (str module, varint offset, str symbol) into st's frame
 * arrays and x.  Returns 0, or -1 when out of memory. */
static int get_frames(struct dec *d, struct nsp_rec_ext *x) {
  struct nsp_dec_store *st = d->st;
  uint64_t nf = get_count(d, NSP_MAX_FRAMES, 3);
  /* frame_cap counts both arrays (both grow alike from it): it grows only
   * once both have. */
  size_t off_cap = st->frame_cap;
  if (nsp_grow(&st->frame_off, &off_cap, nf * 2 + 1, sizeof *st->frame_off) < 0 ||
      nsp_grow(&st->frame_str, &st->frame_cap, nf * 2 + 1, sizeof *st->frame_str) < 0)
    return -1;
  for (uint64_t i = 0; i < nf; i++) {
    st->frame_str[i] = get_s(d);
    st->frame_off[i] = get_v(d);
    st->frame_str[nf + i] = get_s(d);
  }
  x->nframes = (uint32_t)nf;
  x->frame_module = st->frame_str;
  x->frame_offset = st->frame_off;
  x->frame_symbol = st->frame_str + nf;
  return 0;
}

/* dec: how each encoding reads the field `name` of type `type` into lv.
 * A field of a unit COMM is a communicator index (range-checked). */
#define NSP_DEC_V(name, type, unit, lv) (lv) = (__typeof__(lv))(type)get_v_unit(d, NSP_UNIT_##unit);
#define NSP_DEC_Z(name, type, unit, lv) (lv) = (__typeof__(lv))(type)(sizeof(type) <= 4 ? get_z32(d) : get_z(d));
#define NSP_DEC_U64(name, type, unit, lv) (lv) = get_u64(d);
#define NSP_DEC_S(name, type, unit, lv) (lv) = get_s(d);
#define NSP_DEC_ENV(name, type, unit, lv) \
  if (get_env(d, (lv)) < 0) return -1;
#define NSP_DEC_FRAMES(name, type, unit, lv) \
  if (get_frames(d, (lv)) < 0) return -1;
/* CALL: the mask, then the comm's prediction (its comm came before). */
#define NSP_DEC_MASK(name, type, unit, lv)                       \
  mask = (unsigned)get_v(d);                                     \
  if (!(pr = pred_for(c, r->comm))) {                            \
    d->bad = 1;                                                  \
    return 0;                                                    \
  }                                                              \
  api_kind = nsp_api_kind(r->api);                               \
  seq_pred = api_kind == NSP_K_COLL ? pr->seq + 1 : 0;
#define NSP_DEC_TDELTA(name, type, unit, lv) (lv) = c->prev_t + (uint64_t)get_z(d);
#define NSP_DEC_DUR(name, type, unit, lv) (lv) = r->t_enter + get_v(d);
#define NSP_DEC_SEQ(name, type, unit, lv) (lv) = get_v(d);
#define NSP_DEC_ZDELTA(name, type, unit, lv) (lv) = pr->name + (uint64_t)get_z(d);

/* A field whose mask bit is clear takes its prediction. */
#define NSP_PG_PREV(init, name, lv) (lv) = pr->name;
#define NSP_PG_NEXTSEQ(init, name, lv) (lv) = seq_pred;
#define NSP_PG_PREVT(init, name, lv)
#define NSP_PG_DEF(init, name, lv)
#define NSP_PG_NONE(init, name, lv)
#define NSP_DF_(K, name, enc, cm, pred, loc, type, unit, since, def, meaning)         \
  if (NSP_CM_##cm == NSP_CM_ALWAYS || (mask & NSP_CM_##cm)) {                     \
    NSP_DFLT_##enc(name, type, unit, NSP_LOC_##loc, def)                          \
  } else {                                                                        \
    NSP_PRED(NSP_PG, pred, name, NSP_LOC_##loc)                                   \
  }
/* A field past the end of the payload (an older writer's) takes its
 * default; the CALL header's own encodings read on as before. */
#define NSP_DFLT_IF_(name, type, unit, lv, def, enc) \
  if (d->p >= d->end) {                                \
    (lv) = (__typeof__(lv))(def);                      \
  } else {                                             \
    NSP_DEC_##enc(name, type, unit, lv)                \
  }
#define NSP_DFLT_V(name, type, unit, lv, def) NSP_DFLT_IF_(name, type, unit, lv, def, V)
#define NSP_DFLT_Z(name, type, unit, lv, def) NSP_DFLT_IF_(name, type, unit, lv, def, Z)
#define NSP_DFLT_U64(name, type, unit, lv, def) NSP_DFLT_IF_(name, type, unit, lv, def, U64)
#define NSP_DFLT_S(name, type, unit, lv, def) NSP_DFLT_IF_(name, type, unit, lv, def, S)
#define NSP_DFLT_ENV(name, type, unit, lv, def) NSP_DEC_ENV(name, type, unit, lv)
#define NSP_DFLT_FRAMES(name, type, unit, lv, def) NSP_DEC_FRAMES(name, type, unit, lv)
#define NSP_DFLT_MASK(name, type, unit, lv, def) NSP_DEC_MASK(name, type, unit, lv)
#define NSP_DFLT_TDELTA(name, type, unit, lv, def) NSP_DEC_TDELTA(name, type, unit, lv)
#define NSP_DFLT_DUR(name, type, unit, lv, def) NSP_DEC_DUR(name, type, unit, lv)
#define NSP_DFLT_SEQ(name, type, unit, lv, def) NSP_DEC_SEQ(name, type, unit, lv)
#define NSP_DFLT_ZDELTA(name, type, unit, lv, def) NSP_DEC_ZDELTA(name, type, unit, lv)

/* ext: the decoded strings and arrays hang off the record.  Only kinds
 * with an ext clear it (NSP_EXT_CLEAR_, before their fields): a record of
 * another kind leaves r->ext NULL, so its stale content is unreachable,
 * and the hot kinds (CALL, COMPLETION) skip clearing its 200-odd bytes. */
#define NSP_EXT_YES r->ext = x;
#define NSP_EXT_MAY r->ext = x;
#define NSP_EXT_NO
#define NSP_EXT_CLEAR_YES memset(x, 0, sizeof *x);
#define NSP_EXT_CLEAR_MAY memset(x, 0, sizeof *x);
#define NSP_EXT_CLEAR_NO

/* One decoder per kind: 0 (d->bad set when malformed), or -1 when out of
 * memory. */
#define NSP_GEN_DEC_(NAME, name, value, since, has_ext, ring, names, meaning)                                   \
  static int dec_##name(struct dec *d, struct nsp_codec *c, struct nsp_rec *r) {                   \
    struct nsp_rec_ext *x = &d->st->ext;                                                            \
    struct nsp_pred *pr = NULL;                                                                     \
    unsigned mask = 0;                                                                              \
    int api_kind = 0;                                                                               \
    uint64_t seq_pred = 0;                                                                          \
    (void)c, (void)x, (void)pr, (void)mask, (void)api_kind, (void)seq_pred;                         \
    NSP_EXT_CLEAR_##has_ext                                                                         \
    NSP_REC_FIELDS_##NAME(NSP_DF_, NAME)                                                            \
    NSP_REC_FIELDS_##NAME(NSP_PS_, NAME)                                                            \
    NSP_EXT_##has_ext                                                                                 \
    return 0;                                                                                       \
  }
NSP_REC_KINDS(NSP_GEN_DEC_)

void nsp_dec_store_free(struct nsp_dec_store *s) {
  if (!s) return;
  free(s->strings);
  free(s->env);
  free(s->frame_str);
  free(s->frame_off);
  memset(s, 0, sizeof *s);
}

/* What every decoded record starts as: all zero but peer and redop, set
 * member by member (the struct has no padding).  Not memset, nor a copy
 * of a constant: either compiles to `rep stos`, whose start-up cost was
 * an eighth of the analyzer's time. */
#define NSP_REC_FRESH_(ID, member, type, is_signed, ring_default) r->member = (type)0;
static inline void rec_fresh(struct nsp_rec *r) {
  NSP_REC_SLOTS(NSP_REC_FRESH_)
  r->peer = -1;
  r->redop = -1;
}
#undef NSP_REC_FRESH_

int nsp_decode(const uint8_t **pp, const uint8_t *end, struct nsp_codec *c,
               struct nsp_rec *r, struct nsp_dec_store *st) {
  const uint8_t *p = *pp;
  if (p >= end) return 0;
  uint64_t kind, len;
  if (nsp_get_varint(&p, end, &kind) < 0 || nsp_get_varint(&p, end, &len) < 0) return -1;
  if (len > (uint64_t)(end - p)) return -1;

  rec_fresh(r);
  r->kind = kind > 255 ? 0 : (uint8_t)kind;
  const uint8_t *next = p + len;
  size_t need = (size_t)len * 2 + 1;
  if (st->strings_cap < need) {
    char *s = realloc(st->strings, need);
    if (!s) return -1;
    st->strings = s;
    st->strings_cap = need;
  }
  struct dec d = {p, next, 0, st, 0};
  int rc;
  switch (kind) {
#define NSP_DEC_CASE_(NAME, name, value, since, has_ext, ring, names, meaning) \
  case NSP_REC_##NAME:                                             \
    rc = dec_##name(&d, c, r);                                     \
    break;
    NSP_REC_KINDS(NSP_DEC_CASE_)
#undef NSP_DEC_CASE_
    default:
      r->kind = 0; /* unknown: skipped by length */
      *pp = next;
      return 1;
  }
  if (rc < 0) return -1;
  if (d.bad || r->comm >= NSP_MAX_COMMS) return -1;
  if (r->last_error && !r->last_error[0]) r->last_error = NULL;
  *pp = next;
  return 1;
}
