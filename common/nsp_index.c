/* nsp_index.c - the trace index (nsp_index.h): built by the writers, read
 * by the analyzer. */
#include "nsp_index.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nsp_grow.h"
#include "nsp_names.h"
#include "nsp_nccl.h"
#include "nsp_schema.h"

/* What the builder knows of one comm index of the trace. */
struct nsp_ix_local {
  uint64_t comm_id;
  int32_t rank, nranks;
  int known;    /* a successful COMM record with an id named it */
  int member;   /* a COMM record with an id named it (the analyzer has a member for it: its calls are queued) */
  int bad;      /* named two communicators: its calls are never clean */
  uint64_t prev; /* seq of its last successful collective */
  int in_block;
  struct nsp_ix_block blk; /* the block being digested */
  size_t ci;    /* its entry in cur.comm + 1 this frame; 0 none */
};

/* Table entries an index's anchor scan reads at most (per frame). */
#define NSP_INDEX_SCAN_MAX 16384

/* What the builder knows of sends or receives of a comm index to a peer. */
struct nsp_ix_p2pstate {
  uint32_t local;
  int32_t peer;
  uint32_t dir;
  uint64_t failed; /* failed calls so far: the analyzer numbers calls seq + failed (on_p2p) */
  uint64_t last_k; /* the number of its last call; 0 none */
  size_t fi;       /* its entry in cur.p2p + 1 this frame; 0 none */
};

static int is_error(int32_t result) { return result != 0 && result != ncclInProgress; }

void nsp_frame_index_free(struct nsp_frame_index *ix) {
  free(ix->p2p);
  free(ix->comm);
  free(ix->stream);
  free(ix->block);
  free(ix->ident);
  memset(ix, 0, sizeof *ix);
}

static void frame_reset(struct nsp_frame_index *ix) {
  struct nsp_frame_index keep = *ix;
  memset(ix, 0, sizeof *ix);
  ix->comm = keep.comm, ix->comm_cap = keep.comm_cap;
  ix->stream = keep.stream, ix->stream_cap = keep.stream_cap;
  ix->block = keep.block, ix->block_cap = keep.block_cap;
  ix->ident = keep.ident, ix->ident_cap = keep.ident_cap;
  ix->p2p = keep.p2p, ix->p2p_cap = keep.p2p_cap;
  ix->frame_no = keep.frame_no;
}

void nsp_index_init(struct nsp_index_builder *b) {
  memset(b, 0, sizeof *b);
  nsp_pend_init(&b->pend);
  b->clean = 1;
}

void nsp_index_free(struct nsp_index_builder *b) {
  nsp_pend_free(&b->pend);
  nsp_u64map_free(&b->stream_done);
  nsp_u64map_free(&b->p2p_index);
  nsp_u64map_free(&b->groups);
  free(b->p2p);
  free(b->loc);
  nsp_frame_index_free(&b->cur);
  memset(b, 0, sizeof *b);
}

static struct nsp_ix_local *loc_of(struct nsp_index_builder *b, uint32_t local) {
  if (local >= b->nloc) {
    if (local > (1u << 20)) return NULL; /* a hostile comm index: never clean */
    size_t old = b->nloc;
    if (nsp_grow(&b->loc, &b->nloc, (size_t)local + 1, sizeof *b->loc) < 0) return NULL;
    memset(b->loc + old, 0, (b->nloc - old) * sizeof *b->loc);
  }
  return &b->loc[local];
}

static struct nsp_ix_comm *comm_entry(struct nsp_index_builder *b, uint32_t local, struct nsp_ix_local *l) {
  if (l->ci) return &b->cur.comm[l->ci - 1];
  if (nsp_grow(&b->cur.comm, &b->cur.comm_cap, b->cur.ncomm + 1, sizeof *b->cur.comm) < 0) return NULL;
  struct nsp_ix_comm *c = &b->cur.comm[b->cur.ncomm++];
  memset(c, 0, sizeof *c);
  c->local = local;
  l->ci = b->cur.ncomm;
  return c;
}

/* Mixes one 64-bit word into a digest: the splitmix64 finalizer of
 * (digest XOR word) (docs/FORMAT.md, "The index"). */
static uint64_t mix(uint64_t h, uint64_t v) {
  uint64_t x = h ^ v;
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

static int block_emit(struct nsp_index_builder *b, struct nsp_ix_local *l) {
  if (!l->in_block) return 0;
  if (nsp_grow(&b->cur.block, &b->cur.block_cap, b->cur.nblock + 1, sizeof *b->cur.block) < 0) return -1;
  b->cur.block[b->cur.nblock++] = l->blk;
  l->in_block = 0;
  return 0;
}

/* A collective's seq and signature into its communicator's block digest,
 * the signature normalised as the analyzer's (nsp_an_load.c sig_of). */
static int block_add(struct nsp_index_builder *b, uint32_t local, struct nsp_ix_local *l, const struct nsp_rec *r) {
  uint64_t blk = r->seq / NSP_INDEX_BLOCK;
  int back = l->in_block && blk < l->blk.block;
  if (!l->in_block || blk != l->blk.block) {
    if (block_emit(b, l) < 0) return -1;
    l->in_block = 1;
    memset(&l->blk, 0, sizeof l->blk);
    l->blk.local = local;
    l->blk.block = blk;
    l->blk.digest = 0xcbf29ce484222325ull;
  }
  int has_redop = nsp_api_has_redop(r->api);
  if (back || is_error(r->result) || (has_redop && (r->redop < 0 || r->redop >= ncclNumOps)) ||
      r->seq % NSP_INDEX_BLOCK != (l->blk.n + (l->blk.block ? 0 : 1)) % NSP_INDEX_BLOCK)
    l->blk.tainted = 1;
  uint64_t h = l->blk.digest;
  h = mix(h, r->seq);
  h = mix(h, (uint64_t)(int64_t)nsp_api_coll_class(r->api));
  h = mix(h, r->count);
  h = mix(h, (uint64_t)(int64_t)r->dtype);
  h = mix(h, (uint64_t)(int64_t)(has_redop ? r->redop : -1));
  h = mix(h, (uint64_t)(int64_t)(nsp_api_has_root(r->api) ? r->peer : -1));
  l->blk.digest = h;
  l->blk.n++;
  return 0;
}

struct done_ctx {
  struct nsp_index_builder *b;
  int oom;
};

/* nsp_pend_cb: what the analyzer's on_done does with a completed call. */
static void on_done(void *ctx, const struct nsp_pend *e, const struct nsp_rec *done) {
  struct done_ctx *dc = ctx;
  struct nsp_index_builder *b = dc->b;
  if ((done->flags & NSP_DONE_OK) && nsp_api_kind(e->api) == NSP_K_COLL) {
    struct nsp_ix_local *l = loc_of(b, e->local);
    struct nsp_ix_comm *c = l ? comm_entry(b, e->local, l) : NULL;
    if (!c) {
      dc->oom = 1;
      return;
    }
    if (e->seq > c->done_max) c->done_max = e->seq;
  }
  if (!(done->flags & (NSP_DONE_OK | NSP_DONE_CAPTURED))) return;
  size_t *v = nsp_u64map_get(&b->stream_done, e->stream);
  if (v) {
    if (e->t_enter > *v) *v = (size_t)e->t_enter;
  } else if (nsp_u64map_put(&b->stream_done, e->stream, (size_t)e->t_enter) < 0) {
    dc->oom = 1;
    return;
  }
  for (size_t i = 0; i < b->cur.nstream; i++)
    if (b->cur.stream[i].stream == e->stream) {
      if (e->t_enter > b->cur.stream[i].t_enter) b->cur.stream[i].t_enter = e->t_enter;
      return;
    }
  if (b->cur.nstream >= 4096 ||
      nsp_grow(&b->cur.stream, &b->cur.stream_cap, b->cur.nstream + 1, sizeof *b->cur.stream) < 0) {
    dc->oom = 1;
    return;
  }
  b->cur.stream[b->cur.nstream++] = (struct nsp_ix_stream){e->stream, e->t_enter};
}

/* A send or receive (nsp_an_load.c on_p2p numbers it k = seq + failed
 * calls before it, and runs calls of one count and dtype whose numbers
 * follow).  Clean when it succeeded, has its seq and follows its peer
 * and direction's last call.  The frame's entries are runs in the order
 * of their first calls; applied one after another with on_p2p's rule
 * they make what the calls one by one would. */
static int on_p2p(struct nsp_index_builder *b, const struct nsp_rec *r, struct nsp_ix_local *l) {
  uint32_t dir = r->api == NSP_API_Send ? 0 : 1;
  uint64_t key = nsp_u64map_hash(((uint64_t)r->comm << 33) ^ ((uint64_t)dir << 32) ^ (uint32_t)r->peer);
  size_t *v = nsp_u64map_get(&b->p2p_index, key);
  struct nsp_ix_p2pstate *p = v ? &b->p2p[*v - 1] : NULL;
  if (p && (p->local != r->comm || p->peer != r->peer || p->dir != dir)) {
    b->clean = 0; /* two keys, one hash: never clean again for it */
    return 0;
  }
  if (!p) {
    if (nsp_grow(&b->p2p, &b->p2p_cap, b->np2p + 1, sizeof *b->p2p) < 0 ||
        nsp_u64map_put(&b->p2p_index, key, b->np2p + 1) < 0)
      return -1;
    p = &b->p2p[b->np2p++];
    memset(p, 0, sizeof *p);
    p->local = r->comm;
    p->peer = r->peer;
    p->dir = dir;
  }
  int ok = !is_error(r->result);
  uint64_t k = r->seq + p->failed;
  if (!ok) p->failed++;
  if (!(l->known && !l->bad && ok && r->seq && k == p->last_k + 1 && !(r->flags & NSP_CALL_UNTRACKED)))
    b->clean = 0;
  if (r->seq && k > p->last_k) p->last_k = k;
  if (!r->seq) p->last_k = UINT64_MAX - 1; /* numbered by the analyzer's max: never clean again */
  if (!ok || !r->seq) return 0;
  struct nsp_ix_p2p *e = p->fi ? &b->cur.p2p[p->fi - 1] : NULL;
  if (e && e->count == r->count && e->dtype == r->dtype && k == e->k0 + e->n) {
    e->n++; /* the run goes on */
  } else { /* a new run (the analyzer's runs join them again where they follow) */
    if (nsp_grow(&b->cur.p2p, &b->cur.p2p_cap, b->cur.np2p + 1, sizeof *b->cur.p2p) < 0) return -1;
    e = &b->cur.p2p[b->cur.np2p++];
    *e = (struct nsp_ix_p2p){r->comm, r->peer, dir, k, 1, r->count, r->dtype};
    p->fi = b->cur.np2p;
  }
  return 0;
}

static int on_call(struct nsp_index_builder *b, const struct nsp_rec *r) {
  b->cur.sum.calls++;
  if (!is_error(r->result) && (r->flags & NSP_CALL_UNTRACKED)) b->cur.sum.untracked++;
  if (r->t_enter > b->cur.sum.max_call_mono) b->cur.sum.max_call_mono = r->t_enter;
  if ((uint32_t)r->api < 128u) b->cur.sum.api_bits[r->api / 64] |= 1ull << (r->api % 64);
  int kind = nsp_api_kind(r->api);
  /* The analyzer's table takes exactly these calls (nsp_an_load.c
   * on_call: a member of the comm index, on_comm's, is needed). */
  if (b->tracking && !is_error(r->result) && !(r->flags & NSP_CALL_UNTRACKED) && r->comm &&
      r->comm < b->nloc && b->loc[r->comm].member && (kind == NSP_K_COLL || kind == NSP_K_P2P)) {
    struct nsp_pend e;
    nsp_pend_from_call(&e, r);
    if (nsp_pend_call(&b->pend, &e) < 0) return -1;
  }
  /* Groups: the analyzer opens one at its first call on a communicator
   * and closes it at the outermost end (nsp_an_load.c open_group); a
   * frame is clean only when it leaves none open. */
  int group_end = r->api == NSP_API_GroupEnd || r->api == NSP_API_GroupSimulateEnd;
  if (r->group_id && r->comm && !nsp_u64map_get(&b->groups, r->group_id) &&
      nsp_u64map_put(&b->groups, r->group_id, 1) < 0)
    return -1;
  if (group_end && r->group_id && r->group_depth <= 1) nsp_u64map_del(&b->groups, r->group_id);
  if (!r->comm && (r->api == NSP_API_GroupStart || group_end) && !is_error(r->result)) return 0;
  struct nsp_ix_local *l = r->comm ? loc_of(b, r->comm) : NULL;
  if (kind == NSP_K_P2P && l) return on_p2p(b, r, l);
  if (kind != NSP_K_COLL || !l) {
    b->clean = 0;
    return 0;
  }
  if (r->seq && block_add(b, r->comm, l, r) < 0) return -1;
  int ok = !is_error(r->result);
  if (!(l->known && !l->bad && ok && r->seq && r->seq == l->prev + 1 &&
        !(nsp_api_has_redop(r->api) && (r->redop < 0 || r->redop >= ncclNumOps))))
    b->clean = 0;
  if (ok && r->seq) l->prev = r->seq;
  struct nsp_ix_comm *c = comm_entry(b, r->comm, l);
  if (!c) return -1;
  c->ncoll++;
  if (r->flags & NSP_CALL_UNTRACKED) c->untracked++;
  if (r->seq && (!c->lo || r->seq < c->lo)) c->lo = r->seq;
  if (r->seq > c->hi) c->hi = r->seq;
  return 0;
}

static int on_comm(struct nsp_index_builder *b, const struct nsp_rec *r) {
  const struct nsp_rec_ext *x = r->ext;
  struct nsp_ix_local *l = loc_of(b, r->comm);
  if (!l || !x) return 0;
  if (!(r->flags & NSP_COMM_NOCOLOR) && x->comm_id) l->member = 1; /* on_comm makes one, failed or not */
  if (is_error(r->result) || (r->flags & NSP_COMM_NOCOLOR) || !x->comm_id) return 0;
  if (l->known && l->comm_id != x->comm_id) l->bad = 1;
  l->known = 1;
  l->comm_id = x->comm_id;
  l->rank = x->rank;
  l->nranks = x->nranks;
  if (nsp_grow(&b->cur.ident, &b->cur.ident_cap, b->cur.nident + 1, sizeof *b->cur.ident) < 0) return -1;
  b->cur.ident[b->cur.nident++] = (struct nsp_ix_ident){r->comm, x->comm_id, x->rank, x->nranks};
  return 0;
}

int nsp_index_add(struct nsp_index_builder *b, const struct nsp_rec *r) {
  if (b->broken) return -1;
  if (r->kind == NSP_REC_RINGPOS || r->kind <= 0) return 0; /* a reader does not return it */
  b->cur.sum.nrec++;
  if (r->kind < 64) b->cur.sum.kinds |= 1ull << r->kind;
  if (r->kind != NSP_REC_PROCESS && nsp_rec_latest_mono(r) > b->cur.sum.max_mono)
    b->cur.sum.max_mono = nsp_rec_latest_mono(r);
  int ret = 0;
  switch (r->kind) {
    case NSP_REC_PROCESS:
      b->clean = 0;
      if (r->ext) b->tracking = (r->ext->tracking & NSP_TRACK_COMPLETION) != 0;
      break;
    case NSP_REC_CALL:
      ret = on_call(b, r);
      break;
    case NSP_REC_COMPLETION: {
      b->cur.sum.completions++;
      /* One the table drops (nsp_pend.c finish): not one that keeps its
       * call as never completed. */
      if (!(r->flags & (NSP_DONE_OK | NSP_DONE_CAPTURED)) && (r->flags & (NSP_DONE_ERROR | NSP_DONE_ABANDONED)))
        b->clean = 0;
      if (!b->tracking) break;
      struct done_ctx dc = {b, 0};
      ret = nsp_pend_done(&b->pend, r, on_done, &dc);
      if (dc.oom) ret = -1;
      break;
    }
    case NSP_REC_COMM:
      b->clean = 0;
      ret = on_comm(b, r);
      break;
    default:
      b->clean = 0;
      break;
  }
  if (ret < 0) b->broken = 1;
  return ret;
}

static void put(struct nsp_buf *o, uint64_t v) { o->len += nsp_put_varint(o->data + o->len, v); }
static void put_z(struct nsp_buf *o, int64_t v) { put(o, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63)); }
static void put_u64(struct nsp_buf *o, uint64_t v) {
  for (int i = 0; i < 8; i++) o->data[o->len++] = (uint8_t)(v >> (8 * i));
}

/* An early completion no later call can cancel: the call of its key has
 * been made and succeeded (seqs only grow, and only a refused call's seq
 * is taken again), so it matches nothing and the end ignores it. */
static int early_dead(const struct nsp_index_builder *b, const struct nsp_pend *e) {
  if (!e->seq || e->local >= b->nloc) return 0;
  int kind = nsp_api_kind(e->api);
  if (kind == NSP_K_COLL) return b->loc[e->local].prev >= e->seq;
  if (kind != NSP_K_P2P) return 0;
  uint32_t dir = e->api == NSP_API_Send ? 0 : 1;
  uint64_t key = nsp_u64map_hash(((uint64_t)e->local << 33) ^ ((uint64_t)dir << 32) ^ (uint32_t)e->peer);
  const size_t *v = nsp_u64map_get(&b->p2p_index, key);
  const struct nsp_ix_p2pstate *p = v ? &b->p2p[*v - 1] : NULL;
  return p && p->local == e->local && p->peer == e->peer && p->dir == dir && !p->failed && p->last_k >= e->seq &&
         p->last_k != UINT64_MAX - 1;
}

uint64_t nsp_index_data_hash(const uint8_t *p, size_t n) {
  uint64_t h[4] = {0x243f6a8885a308d3ull, 0x13198a2e03707344ull, 0xa4093822299f31d0ull, 0x082efa98ec4e6c89ull};
  size_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (int l = 0; l < 4; l++) {
      uint64_t w;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
      memcpy(&w, p + i + 8 * (size_t)l, 8);
#else
      w = 0;
      for (int k = 0; k < 8; k++) w |= (uint64_t)p[i + 8 * (size_t)l + (size_t)k] << (8 * k);
#endif
      h[l] = (h[l] ^ w) * 0x9e3779b97f4a7c15ull;
      h[l] ^= h[l] >> 29;
    }
  uint64_t t = (uint64_t)n;
  for (; i < n; i++) t = (t ^ p[i]) * 0x100000001b3ull;
  return mix(mix(mix(mix(h[0], t), h[1]), h[2]), h[3]);
}

int nsp_index_put(struct nsp_index_builder *b, const uint8_t *data, size_t data_size, struct nsp_buf *out) {
  if (b->broken) return -1;
  struct nsp_frame_index *ix = &b->cur;
  uint64_t frame = ix->frame_no;
  /* The anchors: the oldest frame the table's open entries came from. */
  uint64_t open_from = frame + 1;
  /* Past NSP_INDEX_SCAN_MAX entries (calls that never complete pile up)
   * the scan is not made: the analyzer decodes such a trace whole. */
  int no_anchor = b->pend.overflow || b->pend.done_group.len > 0 || b->pend.live > NSP_INDEX_SCAN_MAX;
  for (size_t i = 0; i < b->pend.n && b->pend.live && !no_anchor; i++) {
    const struct nsp_pend *e = &b->pend.v[i];
    if (e->state == NSP_PEND_FREE || e->frame >= open_from) continue;
    if (e->state == NSP_PEND_WAIT) { /* done as far as the analyzer's end goes: a later call on its stream was */
      const size_t *later = nsp_u64map_get(&b->stream_done, e->stream);
      if (later && (uint64_t)*later > e->t_enter) continue;
    }
    if (e->state == NSP_PEND_EARLY && early_dead(b, e)) continue;
    open_from = e->frame;
  }
  uint64_t early_from = b->pend.early_min == UINT32_MAX ? frame + 1 : b->pend.early_min;
  size_t need = 8 + 4 + 8 + 8 + 20 * 10 + ix->ncomm * 60 + ix->nstream * 20 + ix->nblock * 40 + ix->nident * 40 +
                ix->np2p * 70;
  if (b->groups.len) b->clean = 0; /* a group still open: its calls' frames are read */
  size_t start = out->len;
  if (nsp_buf_reserve(out, need) < 0) return -1;
  out->len += 8; /* magic and size, below */
  memcpy(out->data + out->len, "NSPX", 4);
  out->len += 4;
  put(out, NSP_INDEX_VERSION);
  put(out, frame);
  put(out, data_size);
  put_u64(out, nsp_index_data_hash(data, data_size));
  put(out, ix->sum.nrec);
  put(out, ix->sum.kinds);
  put(out, (b->clean && !b->group_at_start ? NSP_IX_CLEAN : 0) | (no_anchor ? NSP_IX_NO_ANCHOR : 0));
  put(out, ix->sum.max_mono);
  put(out, ix->sum.max_call_mono);
  put(out, ix->sum.api_bits[0]);
  put(out, ix->sum.api_bits[1]);
  put(out, ix->sum.calls);
  put(out, ix->sum.untracked);
  put(out, ix->sum.completions);
  put(out, open_from);
  put(out, early_from);
  put(out, ix->ncomm);
  for (size_t i = 0; i < ix->ncomm; i++) {
    const struct nsp_ix_comm *c = &ix->comm[i];
    put(out, c->local), put(out, c->ncoll), put(out, c->untracked), put(out, c->lo), put(out, c->hi);
    put(out, c->done_max);
  }
  put(out, ix->nstream);
  for (size_t i = 0; i < ix->nstream; i++) put(out, ix->stream[i].stream), put(out, ix->stream[i].t_enter);
  put(out, ix->nblock);
  for (size_t i = 0; i < ix->nblock; i++) {
    const struct nsp_ix_block *k = &ix->block[i];
    put(out, k->local), put(out, k->block), put_u64(out, k->digest), put(out, k->n), put(out, k->tainted);
  }
  put(out, ix->nident);
  for (size_t i = 0; i < ix->nident; i++) {
    const struct nsp_ix_ident *d = &ix->ident[i];
    put(out, d->local), put_u64(out, d->comm_id), put_z(out, d->rank), put_z(out, d->nranks);
  }
  put(out, ix->np2p);
  for (size_t i = 0; i < ix->np2p; i++) {
    const struct nsp_ix_p2p *e = &ix->p2p[i];
    put(out, e->local), put_z(out, e->peer), put(out, e->dir), put(out, e->k0), put(out, e->n), put(out, e->count);
    put_z(out, e->dtype);
  }
  /* Last, the hash of the payload before it: a damaged index is not believed. */
  put_u64(out, nsp_index_data_hash(out->data + start + 8, out->len - start - 8));
  uint32_t magic = NSP_INDEX_MAGIC, size = (uint32_t)(out->len - start - 8);
  for (int i = 0; i < 4; i++) out->data[start + i] = (uint8_t)(magic >> (8 * i));
  for (int i = 0; i < 4; i++) out->data[start + 4 + i] = (uint8_t)(size >> (8 * i));
  return 0;
}

void nsp_index_next(struct nsp_index_builder *b, int ok) {
  if (!ok) b->broken = 1;
  for (size_t i = 0; i < b->nloc; i++) b->loc[i].ci = 0;
  for (size_t i = 0; i < b->np2p; i++) b->p2p[i].fi = 0;
  b->group_at_start = b->groups.len > 0;
  uint64_t next = b->cur.frame_no + 1;
  frame_reset(&b->cur);
  b->cur.frame_no = next;
  b->pend.frame = (uint32_t)next;
  b->pend.early_min = UINT32_MAX;
  b->clean = 1;
}

/* ---- reading ------------------------------------------------------------ */

static int get(const uint8_t **p, const uint8_t *end, uint64_t *v) { return nsp_get_varint(p, end, v); }
static int get_u64(const uint8_t **p, const uint8_t *end, uint64_t *v) {
  if (end - *p < 8) return -1;
  uint64_t x = 0;
  for (int i = 0; i < 8; i++) x |= (uint64_t)(*p)[i] << (8 * i);
  *p += 8;
  *v = x;
  return 0;
}
static int32_t unzig(uint64_t v) { return (int32_t)(int64_t)((v >> 1) ^ (~(v & 1) + 1)); }

#define GET(v)                                  \
  do {                                          \
    if (get(&p, end, &(v)) < 0) return -1;      \
  } while (0)

int nsp_index_parse(const uint8_t *payload, size_t len, struct nsp_frame_index *ix) {
  if (len < 12 || memcmp(payload, "NSPX", 4)) return -1;
  uint64_t sum = 0;
  for (int i = 0; i < 8; i++) sum |= (uint64_t)payload[len - 8 + (size_t)i] << (8 * i);
  if (sum != nsp_index_data_hash(payload, len - 8)) return -1;
  len -= 8;
  const uint8_t *p = payload, *end = payload + len;
  p += 4;
  uint64_t v, n;
  GET(v);
  if (v != NSP_INDEX_VERSION) return -1;
  frame_reset(ix);
  GET(ix->frame_no);
  GET(ix->data_size);
  if (get_u64(&p, end, &ix->data_hash) < 0) return -1;
  GET(ix->sum.nrec);
  GET(ix->sum.kinds);
  GET(ix->flags);
  GET(ix->sum.max_mono);
  GET(ix->sum.max_call_mono);
  GET(ix->sum.api_bits[0]);
  GET(ix->sum.api_bits[1]);
  GET(ix->sum.calls);
  GET(ix->sum.untracked);
  GET(ix->sum.completions);
  GET(ix->open_from);
  GET(ix->early_from);
  GET(n);
  if (n > len || nsp_grow(&ix->comm, &ix->comm_cap, n, sizeof *ix->comm) < 0) return -1;
  for (ix->ncomm = 0; ix->ncomm < n; ix->ncomm++) {
    struct nsp_ix_comm *c = &ix->comm[ix->ncomm];
    GET(v);
    c->local = (uint32_t)v;
    GET(c->ncoll);
    GET(c->untracked);
    GET(c->lo);
    GET(c->hi);
    GET(c->done_max);
  }
  GET(n);
  if (n > len || nsp_grow(&ix->stream, &ix->stream_cap, n, sizeof *ix->stream) < 0) return -1;
  for (ix->nstream = 0; ix->nstream < n; ix->nstream++) {
    GET(ix->stream[ix->nstream].stream);
    GET(ix->stream[ix->nstream].t_enter);
  }
  GET(n);
  if (n > len || nsp_grow(&ix->block, &ix->block_cap, n, sizeof *ix->block) < 0) return -1;
  for (ix->nblock = 0; ix->nblock < n; ix->nblock++) {
    struct nsp_ix_block *k = &ix->block[ix->nblock];
    GET(v);
    k->local = (uint32_t)v;
    GET(k->block);
    if (get_u64(&p, end, &k->digest) < 0) return -1;
    GET(v);
    k->n = (uint32_t)v;
    GET(v);
    k->tainted = (uint32_t)v;
  }
  GET(n);
  if (n > len || nsp_grow(&ix->ident, &ix->ident_cap, n, sizeof *ix->ident) < 0) return -1;
  for (ix->nident = 0; ix->nident < n; ix->nident++) {
    struct nsp_ix_ident *d = &ix->ident[ix->nident];
    GET(v);
    d->local = (uint32_t)v;
    if (get_u64(&p, end, &d->comm_id) < 0) return -1;
    GET(v);
    d->rank = unzig(v);
    GET(v);
    d->nranks = unzig(v);
  }
  if (p == end) return 0; /* no send/recv section */
  GET(n);
  if (n > len || nsp_grow(&ix->p2p, &ix->p2p_cap, n, sizeof *ix->p2p) < 0) return -1;
  for (ix->np2p = 0; ix->np2p < n; ix->np2p++) {
    struct nsp_ix_p2p *e = &ix->p2p[ix->np2p];
    GET(v);
    e->local = (uint32_t)v;
    GET(v);
    e->peer = unzig(v);
    GET(v);
    e->dir = (uint32_t)v;
    GET(e->k0);
    GET(e->n);
    GET(e->count);
    GET(v);
    e->dtype = unzig(v);
  }
  return 0;
}

static uint32_t le32(const uint8_t *p) { return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

/* One step of a walk: the index at off (its 8-byte header in h), payload
 * read by `read`.  Returns the next offset, or SIZE_MAX to stop there. */
/* A file read through a window of NSP_WALK_WINDOW bytes or more: a
 * walk's header, index and data reads of one frame after the other are
 * one pread per window, not three per frame (which cost a 10,000-trace
 * scan a fifth of its time in system calls). */
#define NSP_WALK_WINDOW (1u << 20)
struct walk_src {
  int fd;
  const uint8_t *mem;
  size_t size;
  uint8_t *buf;
  size_t cap;
  size_t at, len; /* buf holds the file's bytes [at, at + len) */
};

static const uint8_t *src_at(struct walk_src *s, size_t off, size_t n) {
  if (off > s->size || s->size - off < n) return NULL;
  if (s->mem) return s->mem + off;
  if (s->len && off >= s->at && off - s->at <= s->len && s->len - (off - s->at) >= n) return s->buf + (off - s->at);
  size_t want = n > NSP_WALK_WINDOW ? n : NSP_WALK_WINDOW;
  if (want > s->size - off) want = s->size - off;
  if (want > s->cap) {
    uint8_t *b = realloc(s->buf, want);
    if (!b) return NULL;
    s->buf = b;
    s->cap = want;
  }
  s->len = 0;
  size_t got = 0;
  while (got < want) {
    ssize_t k = pread(s->fd, s->buf + got, want - got, (off_t)(off + got));
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    got += (size_t)k;
  }
  if (got < n) return NULL;
  s->at = off;
  s->len = got;
  return s->buf;
}

static size_t walk(struct walk_src *s, size_t off, int verify, size_t max_frames, struct nsp_frame_index *ix,
                   int (*fn)(void *ctx, const struct nsp_frame_index *ix, size_t data_off), void *ctx) {
  uint64_t want = 0;
  while (want < max_frames) {
    const uint8_t *h = src_at(s, off, 8);
    if (!h || le32(h) != NSP_INDEX_MAGIC) break;
    uint32_t plen = le32(h + 4);
    const uint8_t *pl = src_at(s, off + 8, plen);
    if (!pl || nsp_index_parse(pl, plen, ix) < 0 || ix->frame_no != want) break;
    size_t data_off = off + 8 + plen;
    if (ix->data_size > s->size - data_off || ix->data_size < 4) break;
    /* The data frame is where the index says: a zstd frame's magic there,
     * and (verify) the bytes the index hashed. */
    const uint8_t *d = src_at(s, data_off, verify ? (size_t)ix->data_size : 4);
    if (!d || le32(d) != 0xFD2FB528u) break;
    if (verify && nsp_index_data_hash(d, (size_t)ix->data_size) != ix->data_hash) break;
    if (fn(ctx, ix, data_off)) break;
    off = data_off + (size_t)ix->data_size;
    want++;
  }
  return off;
}

size_t nsp_index_walk(int fd, size_t size, size_t off, int verify, size_t max_frames,
                      struct nsp_frame_index *scratch,
                      int (*fn)(void *ctx, const struct nsp_frame_index *ix, size_t data_off), void *ctx) {
  struct walk_src s = {fd, NULL, size, NULL, 0, 0, 0};
  size_t r = walk(&s, off, verify, max_frames, scratch, fn, ctx);
  free(s.buf);
  return r;
}

size_t nsp_index_walk_mem(const uint8_t *data, size_t size, size_t off, int verify, size_t max_frames,
                          struct nsp_frame_index *scratch,
                          int (*fn)(void *ctx, const struct nsp_frame_index *ix, size_t data_off), void *ctx) {
  struct walk_src s = {-1, data, size, NULL, 0, 0, 0};
  return walk(&s, off, verify, max_frames, scratch, fn, ctx);
}
