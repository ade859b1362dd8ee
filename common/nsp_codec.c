/* nsp_codec.c - records to bytes and back (format: include/ncclspy/trace.h). */
#include "nsp_record.h"

#include <stdlib.h>
#include <string.h>

#include "nsp_names.h"

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

size_t nsp_put_varint(uint8_t *dst, uint64_t v) {
  size_t n = 0;
  while (v >= 0x80) {
    dst[n++] = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  dst[n++] = (uint8_t)v;
  return n;
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

static const struct nsp_pred nsp_pred_zero = {.dtype = 0, .redop = -1, .peer = -1};

void nsp_codec_reset(struct nsp_codec *c) {
  c->prev_t = 0;
  if (++c->gen) return;
  /* Wrapped after 2^32 frames: an old gen could look current again. */
  for (size_t i = 0; i < c->npred; i++)
    for (size_t k = 0; c->pred[i] && k < NSP_PRED_PAGE; k++) c->pred[i][k] = nsp_pred_zero;
}

void nsp_codec_free(struct nsp_codec *c) {
  if (!c) return;
  for (size_t i = 0; i < c->npred; i++) free(c->pred[i]);
  free(c->pred);
  c->pred = NULL;
  c->npred = 0;
}

static struct nsp_pred *pred_for(struct nsp_codec *c, uint32_t comm) {
  if (comm >= NSP_MAX_COMMS) return NULL;
  size_t pg = comm / NSP_PRED_PAGE;
  if (pg >= c->npred) {
    size_t n = c->npred ? c->npred : 4;
    while (n <= pg) n *= 2;
    struct nsp_pred **d = realloc(c->pred, n * sizeof *d);
    if (!d) return NULL;
    memset(d + c->npred, 0, (n - c->npred) * sizeof *d);
    c->pred = d;
    c->npred = n;
  }
  if (!c->pred[pg]) {
    struct nsp_pred *p = malloc(NSP_PRED_PAGE * sizeof *p);
    if (!p) return NULL;
    for (size_t i = 0; i < NSP_PRED_PAGE; i++) {
      p[i] = nsp_pred_zero;
      p[i].gen = c->gen;
    }
    c->pred[pg] = p;
  }
  struct nsp_pred *pr = &c->pred[pg][comm % NSP_PRED_PAGE];
  if (pr->gen != c->gen) {
    *pr = nsp_pred_zero;
    pr->gen = c->gen;
  }
  return pr;
}

/* ---- encoder ---------------------------------------------------------- */

/* Payload builder over a fixed scratch area sized for the largest record
 * the shim makes; strings are bounded to NSP_MAX_STRING. */
struct enc {
  uint8_t *p, *start, *end;
};

static void put_v(struct enc *e, uint64_t v) { e->p += nsp_put_varint(e->p, v); }
static void put_z(struct enc *e, int64_t v) { put_v(e, zz_enc(v)); }
static void put_u64(struct enc *e, uint64_t v) {
  for (int i = 0; i < 8; i++) *e->p++ = (uint8_t)(v >> (8 * i));
}
static void put_s(struct enc *e, const char *s) {
  size_t n = s ? strnlen(s, NSP_MAX_STRING) : 0;
  put_v(e, n);
  if (n) memcpy(e->p, s, n);
  e->p += n;
}
static size_t str_room(const char *s) { return 10 + (s ? strnlen(s, NSP_MAX_STRING) : 0); }

static size_t payload_bound(const struct nsp_rec *r) {
  size_t n = 256 + str_room(r->last_error);
  const struct nsp_rec_ext *x = r->ext;
  if (x) {
    n += str_room(x->comm_name) + str_room(x->host) + str_room(x->shim_version) +
         str_room(x->nccl_path);
    for (uint32_t i = 0; x->env && i < 2 * x->nenv; i++) n += str_room(x->env[i]);
    n += str_room(x->gpu_uuid) + str_room(x->gpu_pci_bus_id) + str_room(x->gpu_name) +
         str_room(x->launcher);
    for (uint32_t i = 0; i < x->nframes; i++)
      n += 10 + str_room(x->frame_module ? x->frame_module[i] : NULL) +
           str_room(x->frame_symbol ? x->frame_symbol[i] : NULL);
  }
  return n;
}

/* A writer that checks room before every byte (the SIGNAL record is also
 * encoded by the shim's signal handler, into a fixed buffer). */
struct benc {
  uint8_t *p, *end;
  int over;
};

static void b_put(struct benc *e, const void *src, size_t n) {
  if (e->over || (size_t)(e->end - e->p) < n) {
    e->over = 1;
    return;
  }
  if (n) memcpy(e->p, src, n);
  e->p += n;
}
static void b_v(struct benc *e, uint64_t v) {
  uint8_t t[10];
  b_put(e, t, nsp_put_varint(t, v));
}
static void b_s(struct benc *e, const char *s) {
  size_t n = s ? strnlen(s, NSP_MAX_STRING) : 0;
  b_v(e, n);
  b_put(e, s, n);
}

/* The SIGNAL payload (include/ncclspy/trace.h). */
static void signal_payload(struct benc *e, const struct nsp_rec *r) {
  const struct nsp_rec_ext *x = r->ext;
  uint32_t nf = x && x->frame_offset ? x->nframes : 0;
  if (nf > NSP_MAX_FRAMES) nf = NSP_MAX_FRAMES;
  b_v(e, r->aux);
  b_v(e, zz_enc(r->result));
  b_v(e, r->sendbuff);
  b_v(e, r->seq);
  b_v(e, r->t_enter);
  b_v(e, r->flags);
  b_v(e, (uint32_t)r->peer);
  b_v(e, nf);
  for (uint32_t i = 0; i < nf; i++) {
    b_s(e, x->frame_module ? x->frame_module[i] : NULL);
    b_v(e, x->frame_offset[i]);
    b_s(e, x->frame_symbol ? x->frame_symbol[i] : NULL);
  }
}

size_t nsp_encode_signal(uint8_t *dst, size_t cap, const struct nsp_rec *r) {
  /* The payload goes 11 bytes in (kind and length take at most that),
   * then moves down behind its header. */
  if (r->kind != NSP_REC_SIGNAL || cap < 11) return 0;
  struct benc e = {dst + 11, dst + cap, 0};
  signal_payload(&e, r);
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

static void enc_call(struct enc *e, struct nsp_pred *pr, uint64_t *prev_t, const struct nsp_rec *r) {
  int kind = nsp_api_kind(r->api);
  uint64_t seq_pred = kind == NSP_K_COLL ? pr->seq + 1 : 0;
  unsigned mask = 0;
  if (kind == NSP_K_P2P || r->seq != seq_pred) mask |= NSP_CM_SEQ;
  if (r->count != pr->count) mask |= NSP_CM_COUNT;
  if (r->dtype != pr->dtype || r->redop != pr->redop) mask |= NSP_CM_TYPE;
  if (r->peer != pr->peer) mask |= NSP_CM_PEER;
  if (r->stream != pr->stream) mask |= NSP_CM_STREAM;
  if (r->sendbuff != pr->sendbuff) mask |= NSP_CM_SENDBUF;
  if (r->recvbuff != pr->recvbuff) mask |= NSP_CM_RECVBUF;
  if (r->group_id != pr->group_id || r->group_depth != pr->group_depth) mask |= NSP_CM_GROUP;
  if (r->result != 0 || r->last_error) mask |= NSP_CM_RESULT;
  if (r->flags != pr->flags) mask |= NSP_CM_FLAGS;
  if (r->site != pr->site) mask |= NSP_CM_SITE;

  put_v(e, r->api);
  put_v(e, r->comm);
  put_v(e, mask);
  put_z(e, (int64_t)(r->t_enter - *prev_t));
  put_v(e, r->t_exit - r->t_enter);
  if (mask & NSP_CM_SEQ) put_v(e, r->seq);
  if (mask & NSP_CM_COUNT) put_v(e, r->count);
  if (mask & NSP_CM_TYPE) {
    put_v(e, (uint32_t)r->dtype);
    put_z(e, r->redop);
  }
  if (mask & NSP_CM_PEER) put_z(e, r->peer);
  if (mask & NSP_CM_STREAM) put_v(e, r->stream);
  if (mask & NSP_CM_SENDBUF) put_v(e, r->sendbuff);
  if (mask & NSP_CM_RECVBUF) put_v(e, r->recvbuff);
  if (mask & NSP_CM_GROUP) {
    put_z(e, (int64_t)(r->group_id - pr->group_id));
    put_v(e, r->group_depth);
  }
  if (mask & NSP_CM_RESULT) {
    put_z(e, r->result);
    put_s(e, r->last_error);
  }
  if (mask & NSP_CM_FLAGS) put_v(e, r->flags);
  if (mask & NSP_CM_SITE) put_v(e, r->site);

  *prev_t = r->t_enter;
  if (kind == NSP_K_COLL) pr->seq = r->seq;
  pr->count = r->count;
  pr->dtype = r->dtype;
  pr->redop = r->redop;
  pr->peer = r->peer;
  pr->stream = r->stream;
  pr->sendbuff = r->sendbuff;
  pr->recvbuff = r->recvbuff;
  pr->group_id = r->group_id;
  pr->group_depth = r->group_depth;
  pr->flags = r->flags;
  pr->site = r->site;
}

static const struct nsp_rec_ext nsp_ext_zero;

int nsp_encode(struct nsp_buf *out, struct nsp_codec *c, const struct nsp_rec *r) {
  size_t bound = payload_bound(r);
  if (nsp_buf_reserve(out, bound + 20) < 0) return -1;
  struct nsp_pred *pr = NULL;
  if (r->kind == NSP_REC_CALL && !(pr = pred_for(c, r->comm))) return -1;

  /* The payload goes 20 bytes in, then moves down behind its header. */
  uint8_t *base = out->data + out->len;
  struct enc e = {base + 20, base + 20, base + 20 + bound};
  const struct nsp_rec_ext *x = r->ext ? r->ext : &nsp_ext_zero;
  switch (r->kind) {
    case NSP_REC_PROCESS:
      put_v(&e, x->pid);
      put_v(&e, x->ppid);
      put_z(&e, x->nccl_version);
      put_v(&e, x->realtime_ns);
      put_v(&e, x->monotonic_ns);
      put_s(&e, x->host);
      put_s(&e, x->shim_version);
      put_s(&e, x->nccl_path);
      put_v(&e, x->env ? x->nenv : 0);
      for (uint32_t i = 0; x->env && i < 2 * x->nenv; i++) put_s(&e, x->env[i]);
      put_z(&e, x->driver_version);
      put_z(&e, x->runtime_version);
      put_s(&e, x->launcher);
      put_v(&e, x->tracking);
      break;
    case NSP_REC_COMM:
      put_v(&e, r->comm);
      put_u64(&e, x->comm_id);
      put_v(&e, r->api);
      put_z(&e, x->rank);
      put_z(&e, x->nranks);
      put_z(&e, x->device);
      put_u64(&e, x->parent_id);
      put_z(&e, x->color);
      put_z(&e, x->key);
      put_v(&e, x->split_index);
      put_s(&e, x->comm_name);
      put_v(&e, x->handle);
      put_z(&e, r->result);
      put_v(&e, r->t_enter);
      put_v(&e, r->t_exit);
      put_s(&e, r->last_error);
      put_v(&e, r->flags);
      put_s(&e, x->gpu_uuid);
      put_s(&e, x->gpu_pci_bus_id);
      put_s(&e, x->gpu_name);
      break;
    case NSP_REC_COMM_END:
      put_v(&e, r->comm);
      put_v(&e, r->api);
      put_z(&e, r->result);
      put_v(&e, r->t_enter);
      put_v(&e, r->t_exit);
      put_s(&e, r->last_error);
      break;
    case NSP_REC_CALL:
      enc_call(&e, pr, &c->prev_t, r);
      break;
    case NSP_REC_REDOP:
      put_v(&e, r->api);
      put_v(&e, r->comm);
      put_z(&e, r->redop);
      put_z(&e, r->dtype);
      put_z(&e, (int32_t)r->aux);
      put_v(&e, r->count);
      put_z(&e, r->result);
      put_v(&e, r->t_enter);
      put_v(&e, r->t_exit);
      break;
    case NSP_REC_DROPPED:
      put_v(&e, r->count);
      put_v(&e, r->aux);
      put_v(&e, r->t_enter);
      break;
    case NSP_REC_ASYNC_ERROR:
      put_v(&e, r->comm);
      put_z(&e, r->result);
      put_v(&e, r->t_enter);
      put_s(&e, r->last_error);
      break;
    case NSP_REC_COMPLETION:
      put_v(&e, r->comm);
      put_v(&e, r->api);
      put_v(&e, r->seq);
      put_z(&e, r->peer);
      put_v(&e, r->group_id);
      put_v(&e, r->flags);
      put_v(&e, r->t_enter);
      put_v(&e, r->t_exit);
      put_v(&e, r->count);
      break;
    case NSP_REC_CALLSITE: {
      uint32_t nf = x->nframes > NSP_MAX_FRAMES ? NSP_MAX_FRAMES : x->nframes;
      put_v(&e, r->site);
      put_v(&e, r->flags);
      put_v(&e, nf);
      for (uint32_t i = 0; i < nf; i++) {
        put_s(&e, x->frame_module ? x->frame_module[i] : NULL);
        put_v(&e, x->frame_offset ? x->frame_offset[i] : 0);
        put_s(&e, x->frame_symbol ? x->frame_symbol[i] : NULL);
      }
      break;
    }
    case NSP_REC_RINGPOS:
      put_v(&e, r->seq);
      put_v(&e, r->count);
      break;
    case NSP_REC_HEARTBEAT:
      put_v(&e, r->t_enter);
      put_v(&e, r->count);
      put_v(&e, r->t_exit);
      break;
    case NSP_REC_SIGNAL: {
      struct benc be = {e.p, e.end, 0};
      signal_payload(&be, r);
      if (be.over) return -1; /* never: the bound counts every frame */
      e.p = be.p;
      break;
    }
    default:
      return -1;
  }
  size_t plen = (size_t)(e.p - e.start);
  uint8_t hdr[20];
  size_t h = nsp_put_varint(hdr, r->kind);
  h += nsp_put_varint(hdr + h, plen);
  memcpy(base, hdr, h);
  memmove(base + h, e.start, plen);
  out->len += h + plen;
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
static uint64_t get_v(struct dec *d) {
  uint64_t v = 0;
  if (d->p >= d->end) return 0;
  if (nsp_get_varint(&d->p, d->end, &v) < 0) d->bad = 1, d->p = d->end;
  return v;
}
static int64_t get_z(struct dec *d) { return zz_dec(get_v(d)); }
static int32_t get_z32(struct dec *d) {
  int64_t v = get_z(d);
  if (v < INT32_MIN || v > INT32_MAX) d->bad = 1;
  return (int32_t)v;
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

static void dec_call(struct dec *d, struct nsp_codec *c, struct nsp_rec *r) {
  r->api = (uint8_t)get_v(d);
  uint64_t comm = get_v(d);
  struct nsp_pred *pr = comm < NSP_MAX_COMMS ? pred_for(c, (uint32_t)comm) : NULL;
  if (!pr) {
    d->bad = 1;
    return;
  }
  r->comm = (uint32_t)comm;
  uint64_t mask = get_v(d);
  r->t_enter = c->prev_t + (uint64_t)get_z(d);
  r->t_exit = r->t_enter + get_v(d);
  int kind = nsp_api_kind(r->api);
  r->seq = (mask & NSP_CM_SEQ) ? get_v(d) : (kind == NSP_K_COLL ? pr->seq + 1 : 0);
  r->count = (mask & NSP_CM_COUNT) ? get_v(d) : pr->count;
  if (mask & NSP_CM_TYPE) {
    r->dtype = (int32_t)(uint32_t)get_v(d);
    r->redop = get_z32(d);
  } else {
    r->dtype = pr->dtype;
    r->redop = pr->redop;
  }
  r->peer = (mask & NSP_CM_PEER) ? get_z32(d) : pr->peer;
  r->stream = (mask & NSP_CM_STREAM) ? get_v(d) : pr->stream;
  r->sendbuff = (mask & NSP_CM_SENDBUF) ? get_v(d) : pr->sendbuff;
  r->recvbuff = (mask & NSP_CM_RECVBUF) ? get_v(d) : pr->recvbuff;
  if (mask & NSP_CM_GROUP) {
    r->group_id = pr->group_id + (uint64_t)get_z(d);
    r->group_depth = (uint32_t)get_v(d);
  } else {
    r->group_id = pr->group_id;
    r->group_depth = pr->group_depth;
  }
  if (mask & NSP_CM_RESULT) {
    r->result = get_z32(d);
    r->last_error = get_s(d);
  }
  r->flags = (uint16_t)((mask & NSP_CM_FLAGS) ? get_v(d) : pr->flags);
  r->site = (uint32_t)((mask & NSP_CM_SITE) ? get_v(d) : pr->site);

  c->prev_t = r->t_enter;
  if (kind == NSP_K_COLL) pr->seq = r->seq;
  pr->count = r->count;
  pr->dtype = r->dtype;
  pr->redop = r->redop;
  pr->peer = r->peer;
  pr->stream = r->stream;
  pr->sendbuff = r->sendbuff;
  pr->recvbuff = r->recvbuff;
  pr->group_id = r->group_id;
  pr->group_depth = r->group_depth;
  pr->flags = r->flags;
  pr->site = r->site;
}

/* nf frames (str module, varint offset, str symbol) into st's frame
 * arrays and x.  Returns 0, or -1 when out of memory; a count the payload
 * cannot hold marks the record bad. */
static int dec_frames(struct dec *d, struct nsp_dec_store *st, struct nsp_rec_ext *x) {
  uint64_t nf = get_v(d);
  /* A frame takes at least three bytes: refuse counts the payload cannot
   * hold before allocating. */
  if (nf > NSP_MAX_FRAMES || nf * 3 > (uint64_t)(d->end - d->p)) {
    d->bad = 1;
    return 0;
  }
  if (st->frame_cap < nf * 2 + 1) {
    const char **fs = realloc(st->frame_str, (nf * 2 + 1) * sizeof *fs);
    if (!fs) return -1;
    st->frame_str = fs;
    uint64_t *fo = realloc(st->frame_off, (nf + 1) * sizeof *fo);
    if (!fo) return -1;
    st->frame_off = fo;
    st->frame_cap = nf * 2 + 1;
  }
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

void nsp_dec_store_free(struct nsp_dec_store *s) {
  if (!s) return;
  free(s->strings);
  free(s->env);
  free(s->frame_str);
  free(s->frame_off);
  memset(s, 0, sizeof *s);
}

int nsp_decode(const uint8_t **pp, const uint8_t *end, struct nsp_codec *c,
               struct nsp_rec *r, struct nsp_dec_store *st) {
  const uint8_t *p = *pp;
  if (p >= end) return 0;
  uint64_t kind, len;
  if (nsp_get_varint(&p, end, &kind) < 0 || nsp_get_varint(&p, end, &len) < 0) return -1;
  if (len > (uint64_t)(end - p)) return -1;

  memset(r, 0, sizeof *r);
  memset(&st->ext, 0, sizeof st->ext);
  r->peer = -1;
  r->redop = -1;
  r->kind = kind > 255 ? 0 : (uint8_t)kind;
  const uint8_t *next = p + len;
  if (kind < NSP_REC_PROCESS || kind > NSP_REC_SIGNAL) {
    r->kind = 0; /* unknown: skipped by length */
    *pp = next;
    return 1;
  }
  size_t need = (size_t)len * 2 + 1;
  if (st->strings_cap < need) {
    char *s = realloc(st->strings, need);
    if (!s) return -1;
    st->strings = s;
    st->strings_cap = need;
  }
  struct dec d = {p, next, 0, st, 0};
  struct nsp_rec_ext *x = &st->ext;
  switch (kind) {
    case NSP_REC_PROCESS: {
      x->pid = (uint32_t)get_v(&d);
      x->ppid = (uint32_t)get_v(&d);
      x->nccl_version = get_z32(&d);
      x->realtime_ns = get_v(&d);
      x->monotonic_ns = get_v(&d);
      x->host = get_s(&d);
      x->shim_version = get_s(&d);
      x->nccl_path = get_s(&d);
      uint64_t nenv = get_v(&d);
      /* Each entry takes at least two bytes, so a count the payload cannot
       * hold is hostile: refuse it before allocating. */
      if (nenv > NSP_MAX_ENV || nenv * 2 > (uint64_t)(d.end - d.p)) {
        d.bad = 1;
        break;
      }
      if (st->env_cap < nenv * 2 + 1) {
        const char **e = realloc(st->env, (nenv * 2 + 1) * sizeof *e);
        if (!e) return -1;
        st->env = e;
        st->env_cap = nenv * 2 + 1;
      }
      for (uint64_t i = 0; i < nenv * 2; i++) st->env[i] = get_s(&d);
      x->nenv = (uint32_t)nenv;
      x->env = st->env;
      x->driver_version = get_z32(&d);
      x->runtime_version = get_z32(&d);
      x->launcher = get_s(&d);
      x->tracking = (uint32_t)get_v(&d);
      r->ext = x;
      break;
    }
    case NSP_REC_COMM:
      r->comm = (uint32_t)get_v(&d);
      x->comm_id = get_u64(&d);
      r->api = (uint8_t)get_v(&d);
      x->rank = get_z32(&d);
      x->nranks = get_z32(&d);
      x->device = get_z32(&d);
      x->parent_id = get_u64(&d);
      x->color = get_z32(&d);
      x->key = get_z32(&d);
      x->split_index = (uint32_t)get_v(&d);
      x->comm_name = get_s(&d);
      x->handle = get_v(&d);
      r->result = get_z32(&d);
      r->t_enter = get_v(&d);
      r->t_exit = get_v(&d);
      r->last_error = get_s(&d);
      r->flags = (uint16_t)get_v(&d);
      x->gpu_uuid = get_s(&d);
      x->gpu_pci_bus_id = get_s(&d);
      x->gpu_name = get_s(&d);
      r->ext = x;
      break;
    case NSP_REC_COMM_END:
      r->comm = (uint32_t)get_v(&d);
      r->api = (uint8_t)get_v(&d);
      r->result = get_z32(&d);
      r->t_enter = get_v(&d);
      r->t_exit = get_v(&d);
      r->last_error = get_s(&d);
      break;
    case NSP_REC_CALL:
      dec_call(&d, c, r);
      break;
    case NSP_REC_REDOP:
      r->api = (uint8_t)get_v(&d);
      r->comm = (uint32_t)get_v(&d);
      r->redop = get_z32(&d);
      r->dtype = get_z32(&d);
      r->aux = (uint32_t)get_z32(&d);
      r->count = get_v(&d);
      r->result = get_z32(&d);
      r->t_enter = get_v(&d);
      r->t_exit = get_v(&d);
      break;
    case NSP_REC_DROPPED:
      r->count = get_v(&d);
      r->aux = (uint32_t)get_v(&d);
      r->t_enter = get_v(&d);
      break;
    case NSP_REC_ASYNC_ERROR:
      r->comm = (uint32_t)get_v(&d);
      r->result = get_z32(&d);
      r->t_enter = get_v(&d);
      r->last_error = get_s(&d);
      break;
    case NSP_REC_COMPLETION:
      r->comm = (uint32_t)get_v(&d);
      r->api = (uint8_t)get_v(&d);
      r->seq = get_v(&d);
      r->peer = get_z32(&d);
      r->group_id = get_v(&d);
      r->flags = (uint16_t)get_v(&d);
      r->t_enter = get_v(&d);
      r->t_exit = get_v(&d);
      r->count = get_v(&d);
      break;
    case NSP_REC_CALLSITE:
      r->site = (uint32_t)get_v(&d);
      r->flags = (uint16_t)get_v(&d);
      if (dec_frames(&d, st, x) < 0) return -1;
      r->ext = x;
      break;
    case NSP_REC_SIGNAL:
      r->aux = (uint32_t)get_v(&d);
      r->result = get_z32(&d);
      r->sendbuff = get_v(&d);
      r->seq = get_v(&d);
      r->t_enter = get_v(&d);
      r->flags = (uint16_t)get_v(&d);
      r->peer = (int32_t)(uint32_t)get_v(&d);
      if (dec_frames(&d, st, x) < 0) return -1;
      r->ext = x;
      break;
    case NSP_REC_RINGPOS:
      r->seq = get_v(&d);
      r->count = get_v(&d);
      break;
    case NSP_REC_HEARTBEAT:
      r->t_enter = get_v(&d);
      r->count = get_v(&d);
      r->t_exit = get_v(&d);
      break;
  }
  if (d.bad || r->comm >= NSP_MAX_COMMS) return -1;
  if (r->last_error && !r->last_error[0]) r->last_error = NULL;
  *pp = next;
  return 1;
}
