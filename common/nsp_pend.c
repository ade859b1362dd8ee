/* nsp_pend.c - calls enqueued and not yet completed, per process.
 *
 * With completion tracking (PROCESS tracking & NSP_TRACK_COMPLETION) the
 * shim writes a COMPLETION record per call, or per group: one naming
 * (comm, api, seq, peer) or a group id.  The table holds the calls whose
 * completion has not been seen; in a healthy trace that is the GPU's
 * queue, so memory follows the calls in flight, not the calls made.
 * Whatever is left at the end of a trace never completed as far as the
 * trace knows.  A completion read before its call (the shim's writer and
 * its completion poller race) is remembered and cancels the call when it
 * comes. */
#include <stdlib.h>
#include <string.h>

#include "nsp_grow.h"
#include "nsp_pend.h"

#define NSP_TRY(expr)          \
  do {                         \
    int nsp_try_ = (expr);     \
    if (nsp_try_ < 0) return nsp_try_; \
  } while (0)

/* Live entries per process before the table stops growing (then calls
 * count as completed and the trace says so in a note). */
#define NSP_PEND_MAX (1u << 20)
/* Group completions remembered before their calls were seen. */
#define NSP_PEND_EARLY_GROUPS 4096

static uint32_t pend_hash(uint32_t local, int32_t api, uint64_t seq, int32_t peer) {
  return (uint32_t)nsp_u64map_hash(seq * 0x9e3779b97f4a7c15ull ^ ((uint64_t)local << 32 | (uint32_t)peer) ^
                                   ((uint64_t)(uint32_t)api << 56));
}

static int same_key(const struct nsp_pend *e, uint32_t local, int32_t api, uint64_t seq, int32_t peer) {
  return e->seq == seq && e->local == local && e->api == api && e->peer == peer;
}

/* Slot of the key (hash h) in the open-addressing index, or of the empty
 * slot where it would go.  The table has at least one empty slot. */
static size_t slot_of(const struct nsp_pend_tab *t, uint32_t h, uint32_t local, int32_t api, uint64_t seq,
                      int32_t peer) {
  size_t mask = t->nslot - 1;
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    const struct nsp_pend_slot *s = &t->slot[i];
    if (!s->idx1) return i;
    if (s->hash == h && same_key(&t->v[s->idx1 - 1], local, api, seq, peer)) return i;
  }
}

/* The slot holding the key, SIZE_MAX when it is not in the table. */
static size_t find_slot(const struct nsp_pend_tab *t, uint32_t h, uint32_t local, int32_t api, uint64_t seq,
                        int32_t peer) {
  if (!t->nslot) return SIZE_MAX;
  size_t s = slot_of(t, h, local, api, seq, peer);
  return t->slot[s].idx1 ? s : SIZE_MAX;
}

static size_t find(const struct nsp_pend_tab *t, uint32_t local, int32_t api, uint64_t seq, int32_t peer) {
  size_t s = find_slot(t, pend_hash(local, api, seq, peer), local, api, seq, peer);
  return s == SIZE_MAX ? SIZE_MAX : t->slot[s].idx1 - 1;
}

static int grow_index(struct nsp_pend_tab *t) {
  if ((t->used + 1) * 2 <= t->nslot) return 0;
  size_t n = t->nslot ? t->nslot * 2 : 64;
  struct nsp_pend_slot *ns = calloc(n, sizeof *ns);
  if (!ns) return -1;
  struct nsp_pend_slot *old = t->slot;
  size_t on = t->nslot;
  t->slot = ns;
  t->nslot = n;
  for (size_t i = 0; i < on; i++) {
    if (!old[i].idx1) continue;
    size_t j = old[i].hash & (n - 1);
    while (ns[j].idx1) j = (j + 1) & (n - 1); /* keys are distinct */
    ns[j] = old[i];
  }
  free(old);
  return 0;
}

/* Empties slot i (backward-shift deletion). */
static void unindex_at(struct nsp_pend_tab *t, size_t i) {
  size_t mask = t->nslot - 1;
  for (size_t j = (i + 1) & mask;; j = (j + 1) & mask) {
    if (!t->slot[j].idx1) break;
    size_t home = t->slot[j].hash & mask;
    int stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
    if (stays) continue;
    t->slot[i] = t->slot[j];
    i = j;
  }
  t->slot[i].idx1 = 0;
  t->used--;
}

/* Removes entry idx from the key index. */
static void unindex(struct nsp_pend_tab *t, size_t idx) {
  const struct nsp_pend *e = &t->v[idx];
  size_t i = find_slot(t, pend_hash(e->local, e->api, e->seq, e->peer), e->local, e->api, e->seq, e->peer);
  if (i == SIZE_MAX || t->slot[i].idx1 != idx + 1) return;
  unindex_at(t, i);
}

static void group_unlink(struct nsp_pend_tab *t, size_t idx) {
  struct nsp_pend *e = &t->v[idx];
  if (!e->group_id) return;
  if (e->gprev != SIZE_MAX) {
    t->v[e->gprev].gnext = e->gnext;
  } else {
    size_t *head = nsp_u64map_get(&t->group, e->group_id);
    if (head && *head == idx) {
      if (e->gnext != SIZE_MAX) *head = e->gnext;
      else nsp_u64map_del(&t->group, e->group_id);
    }
  }
  if (e->gnext != SIZE_MAX) t->v[e->gnext].gprev = e->gprev;
  e->gprev = e->gnext = SIZE_MAX;
  e->group_id = 0;
}

/* Removes entry idx, whose key is at slot `slot` of the index (SIZE_MAX:
 * look it up). */
static void remove_entry_at(struct nsp_pend_tab *t, size_t idx, size_t slot) {
  group_unlink(t, idx);
  if (slot == SIZE_MAX) unindex(t, idx);
  else unindex_at(t, slot);
  t->v[idx].state = NSP_PEND_FREE;
  t->v[idx].gnext = t->free_head;
  t->free_head = idx;
  t->live--;
}

/* Inserts src (key hash h, not in the table) with state; slot: the empty
 * slot a lookup of the key just ended at, or SIZE_MAX. */
static int insert(struct nsp_pend_tab *t, const struct nsp_pend *src, uint32_t h, size_t slot, uint8_t state) {
  if (t->live >= NSP_PEND_MAX) {
    t->overflow = 1;
    return 0;
  }
  size_t nslot = t->nslot;
  NSP_TRY(grow_index(t));
  if (slot == SIZE_MAX || t->nslot != nslot) slot = slot_of(t, h, src->local, src->api, src->seq, src->peer);
  size_t idx;
  if (t->free_head != SIZE_MAX) {
    idx = t->free_head;
    t->free_head = t->v[idx].gnext;
  } else {
    NSP_TRY(nsp_grow(&t->v, &t->cap, t->n + 1, sizeof *t->v));
    idx = t->n++;
  }
  struct nsp_pend *e = &t->v[idx];
  *e = *src;
  e->state = state;
  e->frame = t->frame;
  e->gprev = e->gnext = SIZE_MAX;
  t->slot[slot].idx1 = (uint32_t)(idx + 1); /* idx < NSP_PEND_MAX */
  t->slot[slot].hash = h;
  t->used++;
  t->live++;
  if (state == NSP_PEND_WAIT && e->group_id) {
    size_t *head = nsp_u64map_get(&t->group, e->group_id);
    if (head) {
      e->gnext = *head;
      t->v[*head].gprev = idx;
      *head = idx;
    } else if (nsp_u64map_put(&t->group, e->group_id, idx) < 0) {
      return -1;
    }
  } else {
    e->group_id = state == NSP_PEND_WAIT ? e->group_id : 0;
  }
  return 1;
}

void nsp_pend_group_failed(struct nsp_rec *done, uint64_t group_id) {
  memset(done, 0, sizeof *done);
  done->kind = NSP_REC_COMPLETION;
  done->group_id = group_id;
  done->peer = -1;
  done->flags = NSP_DONE_ERROR;
}

void nsp_pend_from_call(struct nsp_pend *e, const struct nsp_rec *rec) {
  /* Every member assigned, no memset: every CALL read makes one, and a
   * zeroing of the struct compiles to `rep stos`. */
  e->seq = rec->seq;
  e->group_id = rec->group_id;
  e->count = rec->count;
  e->t_enter = rec->t_enter;
  e->t_exit = rec->t_exit;
  e->stream = rec->stream;
  e->local = rec->comm;
  e->site = rec->site;
  e->pysite = rec->pysite;
  e->api = rec->api;
  e->peer = rec->peer;
  e->dtype = rec->dtype;
  e->redop = rec->redop;
  e->result = rec->result;
  e->state = NSP_PEND_FREE;
  e->gprev = e->gnext = 0;
  e->frame = 0;
  e->tag = 0;
}

void nsp_pend_init(struct nsp_pend_tab *t) {
  memset(t, 0, sizeof *t);
  t->free_head = SIZE_MAX;
  t->early_min = UINT32_MAX;
}

int nsp_pend_call(struct nsp_pend_tab *t, const struct nsp_pend *e) {
  /* One lookup: the slot it ends at is where the call goes. */
  uint32_t h = pend_hash(e->local, e->api, e->seq, e->peer);
  size_t s = t->nslot ? slot_of(t, h, e->local, e->api, e->seq, e->peer) : SIZE_MAX;
  if (s != SIZE_MAX && t->slot[s].idx1) {
    /* Its completion came first: done.  A second call with the key of a
     * waiting one (a damaged or replayed seq) is not tracked twice. */
    size_t i = t->slot[s].idx1 - 1;
    if (t->v[i].state == NSP_PEND_EARLY) {
      if (t->v[i].frame < t->early_min) t->early_min = t->v[i].frame;
      remove_entry_at(t, i, s);
    }
    return 0;
  }
  if (e->group_id && nsp_u64map_get(&t->done_group, e->group_id)) return 0;
  return insert(t, e, h, s, NSP_PEND_WAIT);
}

/* Applies a completion's flags to entry idx (its key at index slot
 * `slot`, or SIZE_MAX: unknown). */
static void finish(struct nsp_pend_tab *t, size_t idx, size_t slot, uint32_t flags) {
  if ((flags & (NSP_DONE_OK | NSP_DONE_CAPTURED)) || !(flags & (NSP_DONE_ERROR | NSP_DONE_ABANDONED))) {
    remove_entry_at(t, idx, slot);
    return;
  }
  /* Known not to have completed: kept, with the reason. */
  group_unlink(t, idx);
  t->v[idx].state = (flags & NSP_DONE_ABANDONED) ? NSP_PEND_ABANDONED : NSP_PEND_FAILED;
}

int nsp_pend_done(struct nsp_pend_tab *t, const struct nsp_rec *rec, nsp_pend_cb cb, void *ctx) {
  if (rec->group_id) {
    size_t *head = nsp_u64map_get(&t->group, rec->group_id);
    if (!head) {
      if (t->done_group.len >= NSP_PEND_EARLY_GROUPS) nsp_u64map_free(&t->done_group);
      return nsp_u64map_put(&t->done_group, rec->group_id, 1);
    }
    size_t i = *head;
    while (i != SIZE_MAX) {
      size_t next = t->v[i].gnext;
      if (cb) cb(ctx, &t->v[i], rec);
      finish(t, i, SIZE_MAX, rec->flags);
      i = next;
    }
    return 0;
  }
  uint32_t h = pend_hash(rec->comm, rec->api, rec->seq, rec->peer);
  size_t s = t->nslot ? slot_of(t, h, rec->comm, rec->api, rec->seq, rec->peer) : SIZE_MAX;
  if (s == SIZE_MAX || !t->slot[s].idx1) {
    struct nsp_pend e;
    memset(&e, 0, sizeof e);
    e.local = rec->comm;
    e.api = rec->api;
    e.seq = rec->seq;
    e.peer = rec->peer;
    int r = insert(t, &e, h, s, NSP_PEND_EARLY);
    return r < 0 ? r : 0;
  }
  size_t i = t->slot[s].idx1 - 1;
  if (t->v[i].state != NSP_PEND_WAIT) return 0;
  if (cb) cb(ctx, &t->v[i], rec); /* callbacks leave the table alone: s stays */
  finish(t, i, s, rec->flags);
  return 0;
}

int nsp_pend_waiting(const struct nsp_pend_tab *t, uint32_t local, int32_t api, uint64_t seq, int32_t peer) {
  size_t i = find(t, local, api, seq, peer);
  return i != SIZE_MAX && t->v[i].state != NSP_PEND_EARLY;
}

void nsp_pend_free(struct nsp_pend_tab *t) {
  free(t->v);
  free(t->slot);
  nsp_u64map_free(&t->group);
  nsp_u64map_free(&t->done_group);
  nsp_pend_init(t);
}
