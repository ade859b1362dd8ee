/* nsp_comm.c - communicator handles to their ncclspy identity.
 *
 * Every recorded call looks its handle up here, so lookups are lock-free:
 * an open-addressed table whose keys are written once and never removed.
 * A handle reused after ncclCommDestroy gets its entry's value replaced.
 * Communicators are few (one per process group) and never freed, which
 * bounds memory by the table size. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nsp_io.h"
#include "nsp_setting.h"
#include "nsp_shim.h"

#define NSP_COMM_SLOTS 16384 /* power of two; holds 12288 communicators */

static struct {
  _Atomic(ncclComm_t) key;
  _Atomic(struct nsp_comm *) val;
} nsp_comm_table[NSP_COMM_SLOTS];
static pthread_mutex_t nsp_comm_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t nsp_comm_count;
_Atomic int nsp_comm_npending;
static _Atomic int nsp_comm_full_warned;
/* NCCLSPY_BENCH_MODE_FILE's first page, mapped once (under nsp_comm_lock)
 * and never unmapped; MAP_FAILED when it could not be. */
static const volatile char *nsp_bench_map;
static char nsp_bench_path[4096];
static _Atomic int nsp_bench_other_warned;

void nsp_comm_atfork(int phase) {
  if (phase == 0) pthread_mutex_lock(&nsp_comm_lock);
  else pthread_mutex_unlock(&nsp_comm_lock);
}

static size_t slot_of(ncclComm_t handle) {
  uint64_t x = (uint64_t)(uintptr_t)handle;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return (size_t)x & (NSP_COMM_SLOTS - 1);
}

struct nsp_comm *nsp_comm_find(ncclComm_t handle) {
  if (!handle) return NULL;
  for (size_t i = slot_of(handle), n = 0; n < NSP_COMM_SLOTS; i = (i + 1) & (NSP_COMM_SLOTS - 1), n++) {
    ncclComm_t k = atomic_load_explicit(&nsp_comm_table[i].key, memory_order_acquire);
    if (k == handle) return atomic_load_explicit(&nsp_comm_table[i].val, memory_order_acquire);
    if (!k) return NULL;
  }
  return NULL;
}

/* The mapped first byte of the bench mode file at path, or NULL (warned
 * once).  One file per process: the first path given is kept.  The file
 * must hold at least one byte and must not be truncated while mapped (a
 * read past its end would fault): it is a benchmark's control, written
 * in place by examples/torch/bench_timing.py.  Called with nsp_comm_lock
 * held. */
static const volatile char *bench_map(const char *path) {
  if (!nsp_bench_map) {
    nsp_bench_map = MAP_FAILED;
    /* A FIFO (or a device) must not block the communicator's creation in
     * open(): nsp_open_regular refuses it at once. */
    struct stat st;
    int fd = strlen(path) < sizeof nsp_bench_path ? nsp_open_regular(path, 0, &st) : -1;
    if (fd >= 0 && st.st_size >= 1) {
      void *m = mmap(NULL, 1, PROT_READ, MAP_SHARED, fd, 0);
      if (m != MAP_FAILED) {
        nsp_bench_map = m;
        strcpy(nsp_bench_path, path);
      }
    }
    if (fd >= 0) close(fd);
    if (nsp_bench_map == MAP_FAILED)
      nsp_warn("NCCLSPY_BENCH_MODE_FILE: cannot map %s (a regular file of at least one byte); "
               "communicators are recorded as the other settings say", path);
  } else if (nsp_bench_map != MAP_FAILED && strcmp(path, nsp_bench_path) != 0) {
    nsp_warn_once(&nsp_bench_other_warned, "NCCLSPY_BENCH_MODE_FILE: one file per process; %s is "
                  "used, not %s", nsp_bench_path, path);
  }
  return nsp_bench_map == MAP_FAILED ? NULL : nsp_bench_map;
}

struct nsp_comm *nsp_comm_add(ncclComm_t handle, uint64_t id, int rank, int nranks) {
  if (!handle) return NULL;
  struct nsp_comm *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->handle = handle;
  c->id = id;
  c->rank = rank;
  c->nranks = nranks;
  c->device = -1;
  /* Read per communicator, at its creation (never on the call path), so
   * one process can time some communicators and not others. */
  c->untimed = !nsp_setting(NSP_SET_TIMING);
  c->untracked = !nsp_setting(NSP_SET_TRACK);
  const char *bench = nsp_setting_str(NSP_SET_BENCH_MODE_FILE);
  pthread_mutex_lock(&nsp_comm_lock);
  if (bench) c->bench_mode = bench_map(bench);
  size_t i = slot_of(handle);
  while (1) {
    ncclComm_t k = atomic_load_explicit(&nsp_comm_table[i].key, memory_order_relaxed);
    if (k == handle || !k) break;
    i = (i + 1) & (NSP_COMM_SLOTS - 1);
  }
  ncclComm_t k = atomic_load_explicit(&nsp_comm_table[i].key, memory_order_relaxed);
  if (!k && nsp_comm_count >= NSP_COMM_SLOTS / 4 * 3) {
    pthread_mutex_unlock(&nsp_comm_lock);
    free(c);
    nsp_warn_once(&nsp_comm_full_warned, "more than %d communicators; calls on newer ones are "
                  "recorded without their communicator", NSP_COMM_SLOTS / 4 * 3);
    return NULL;
  }
  c->idx = ++nsp_comm_count;
  atomic_store_explicit(&nsp_comm_table[i].val, c, memory_order_release);
  if (!k) atomic_store_explicit(&nsp_comm_table[i].key, handle, memory_order_release);
  pthread_mutex_unlock(&nsp_comm_lock);
  return c;
}

uint64_t nsp_comm_p2p_seq(struct nsp_comm *c, int peer, int dir, int take) {
  if (peer < 0 || peer >= c->nranks || c->nranks <= 0) return 0;
  _Atomic uint64_t *s = atomic_load_explicit(&c->p2p_seq, memory_order_acquire);
  if (!s) {
    /* Lazily, since most communicators never send: nranks * 16 bytes. */
    _Atomic uint64_t *fresh = calloc((size_t)c->nranks * 2, sizeof *fresh);
    if (!fresh) return 0;
    _Atomic uint64_t *expected = NULL;
    if (atomic_compare_exchange_strong(&c->p2p_seq, &expected, fresh)) s = fresh;
    else {
      free(fresh);
      s = expected;
    }
  }
  if (!take) return atomic_load_explicit(&s[peer * 2 + dir], memory_order_relaxed) + 1;
  return atomic_fetch_add_explicit(&s[peer * 2 + dir], 1, memory_order_relaxed) + 1;
}

void nsp_comm_foreach(void (*fn)(struct nsp_comm *, void *), void *arg) {
  for (size_t i = 0; i < NSP_COMM_SLOTS; i++) {
    if (!atomic_load_explicit(&nsp_comm_table[i].key, memory_order_acquire)) continue;
    struct nsp_comm *c = atomic_load_explicit(&nsp_comm_table[i].val, memory_order_acquire);
    if (c) fn(c, arg);
  }
}
