/* nsp_ring.c - the record ring between the wrappers and the writer.
 *
 * Wrappers never wait on disk: they put a record in a bounded lock-free
 * ring (Vyukov's bounded MPMC queue, used here with one consumer, the
 * writer thread of nsp_writer.c) and return.  When the ring is full the
 * record is dropped and counted.  A slot is freed only once the frame that
 * holds its record is written (nsp_ring_free), so that after a crash the
 * ring file (nsp_files.c) still holds every record the trace lacks. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "nsp_shim.h"

_Static_assert(sizeof(struct nsp_slot) == 128, "ring slots are 128 bytes");

static struct nsp_slot *nsp_ring;
static size_t nsp_ring_size;
static int nsp_ring_in_file;    /* nsp_ring is in the ring file's mapping */
static _Atomic uint64_t nsp_ring_head;
static uint64_t nsp_ring_next;  /* writer thread only: next position to encode */
static uint64_t nsp_ring_freed; /* writer thread only: next position to free */
static _Atomic uint64_t nsp_ring_ndropped;
static _Atomic int nsp_ring_full_warned;

/* ---- the wrappers' side ---- */

/* Lock-free (a CAS loop), so the signal handler may call it (warn 0). */
static struct nsp_rec *ring_reserve(int warn) {
  struct nsp_slot *ring = nsp_ring;
  if (!ring) return NULL;
  size_t mask = nsp_ring_size - 1;
  uint64_t pos = atomic_load_explicit(&nsp_ring_head, memory_order_relaxed);
  for (;;) {
    struct nsp_slot *s = &ring[pos & mask];
    uint64_t seq = atomic_load_explicit(&s->seq, memory_order_acquire);
    int64_t dif = (int64_t)(seq - pos);
    if (dif == 0) {
      if (atomic_compare_exchange_weak_explicit(&nsp_ring_head, &pos, pos + 1, memory_order_relaxed,
                                                memory_order_relaxed)) {
        memset(&s->rec, 0, sizeof s->rec);
        return &s->rec;
      }
    } else if (dif < 0) {
      atomic_fetch_add_explicit(&nsp_ring_ndropped, 1, memory_order_relaxed);
      nsp_files_ring_dropped(NSP_DROP_RING_FULL, 1);
      if (warn)
        nsp_warn_once(&nsp_ring_full_warned,
                      "the trace writer fell behind; records are being dropped and counted "
                      "(raise NCCLSPY_RING)");
      return NULL;
    } else {
      pos = atomic_load_explicit(&nsp_ring_head, memory_order_relaxed);
    }
  }
}

struct nsp_rec *nsp_ring_reserve(void) { return ring_reserve(1); }
struct nsp_rec *nsp_ring_reserve_quiet(void) { return ring_reserve(0); }

static struct nsp_slot *slot_of(const struct nsp_rec *rec) {
  return (struct nsp_slot *)((char *)(uintptr_t)rec - offsetof(struct nsp_slot, rec));
}

/* A reserved slot's seq is its ring position until the commit. */
uint64_t nsp_ring_pos(const struct nsp_rec *rec) {
  return atomic_load_explicit(&slot_of(rec)->seq, memory_order_relaxed);
}

void nsp_ring_commit_quiet(struct nsp_rec *rec) {
  struct nsp_slot *s = slot_of(rec);
  uint64_t seq = atomic_load_explicit(&s->seq, memory_order_relaxed);
  atomic_store_explicit(&s->seq, seq + 1, memory_order_release);
}

int nsp_ring_durable(void) { return nsp_ring_in_file; }

void nsp_ring_commit(struct nsp_rec *rec) {
  struct nsp_slot *s = (struct nsp_slot *)((char *)rec - offsetof(struct nsp_slot, rec));
  uint64_t seq = atomic_load_explicit(&s->seq, memory_order_relaxed);
  /* Strings live on the heap, which dies with the process: keep a copy in
   * the ring file (rare records: init, errors, call sites). */
  if (NSP_UNLIKELY(rec->ext || rec->last_error) && nsp_ring_in_file) nsp_files_ring_blob(seq, rec);
  atomic_store_explicit(&s->seq, seq + 1, memory_order_release);
}

char *nsp_ring_strdup(const char *s) {
  if (!s) return NULL;
  size_t n = strnlen(s, 4096);
  char *d = malloc(n + 1);
  if (!d) return NULL;
  memcpy(d, s, n);
  d[n] = 0;
  return d;
}

/* ---- making and dropping it ---- */

int nsp_ring_open(size_t nslots, struct nsp_slot *mapped) {
  struct nsp_slot *ring = mapped;
  if (!ring) {
    void *m = mmap(NULL, nslots * sizeof(struct nsp_slot), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
      nsp_warn("cannot allocate the record ring (%zu slots): %s; tracing is off", nslots, strerror(errno));
      return -1;
    }
    madvise(m, nslots * sizeof(struct nsp_slot), MADV_POPULATE_WRITE); /* faults in one go */
    ring = m;
  }
  /* Slot i waits for ring position i. */
  for (size_t i = 0; i < nslots; i++) atomic_store_explicit(&ring[i].seq, i, memory_order_relaxed);
  nsp_ring = ring;
  nsp_ring_size = nslots;
  nsp_ring_in_file = mapped != NULL;
  atomic_store(&nsp_ring_head, 0);
  nsp_ring_next = 0;
  nsp_ring_freed = 0;
  return 0;
}

void nsp_ring_close(void) {
  if (nsp_ring && !nsp_ring_in_file) munmap(nsp_ring, nsp_ring_size * sizeof(struct nsp_slot));
  nsp_ring = NULL;
  nsp_ring_in_file = 0;
}

void nsp_ring_atfork_child(void) {
  nsp_ring_close();
  atomic_store(&nsp_ring_ndropped, 0);
}

/* ---- the writer's side ---- */

const struct nsp_rec *nsp_ring_peek(void) {
  struct nsp_slot *s = &nsp_ring[nsp_ring_next & (nsp_ring_size - 1)];
  uint64_t seq = atomic_load_explicit(&s->seq, memory_order_acquire);
  return seq == nsp_ring_next + 1 ? &s->rec : NULL;
}

void nsp_ring_take(void) { nsp_ring_next++; }

uint64_t nsp_ring_tail(void) { return nsp_ring_next; }

int nsp_ring_backlogged(void) { return nsp_ring_next - nsp_ring_freed >= nsp_ring_size / 4; }

uint64_t nsp_ring_dropped(void) { return atomic_load_explicit(&nsp_ring_ndropped, memory_order_relaxed); }

int nsp_ring_all_taken(void) {
  return atomic_load_explicit(&nsp_ring_head, memory_order_acquire) == nsp_ring_next;
}

/* Frees what a record owns (last_error, ext). */
static void rec_release(struct nsp_rec *r) {
  if (r->kind == NSP_REC_SIGNAL) {
    nsp_signal_release(r); /* its ext is the signal area's, not the heap's */
    r->ext = NULL;
  }
  free((void *)r->last_error);
  free((void *)r->ext); /* one block with its strings */
  r->last_error = NULL;
  r->ext = NULL;
}

void nsp_ring_free(uint64_t end) {
  nsp_files_ring_written(end); /* the ring header first: then the slots may be reused */
  size_t mask = nsp_ring_size - 1;
  for (; nsp_ring_freed < end; nsp_ring_freed++) {
    struct nsp_slot *s = &nsp_ring[nsp_ring_freed & mask];
    rec_release(&s->rec);
    atomic_store_explicit(&s->seq, nsp_ring_freed + nsp_ring_size, memory_order_release);
  }
}
