/* nsp_flight.c - calls in flight: the crash ring's in-flight table.
 *
 * A call that never returns leaves no record, since records are written
 * at the return.  So at every recorded call's entry, before NCCL is
 * called, the wrapper writes what the call is into its thread's entry of
 * the in-flight table (include/ncclspy/trace.h, struct nsp_ring_inflight),
 * which lives in the ring file's header, and clears it at the return.  A
 * process killed inside a call, or read while it waits, shows that call.
 *
 * A thread takes a free entry (tid 0, by compare-and-swap) at its first
 * recorded call and gives it back when it exits (a pthread key's
 * destructor).  When every entry is taken, the thread's calls are not
 * shown and the header counts it (inflight_unslotted).  Without a ring
 * file (the ring is in anonymous memory) there is no table: no one could
 * read it after a death.  The wrapper's part (nsp_flight_begin, _publish, _leave in
 * nsp_shim.h) is a few stores into a cache line the thread owns. */
#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "nsp_shim.h"

NSP_TLS struct nsp_ring_inflight *nsp_flight_mine;
NSP_TLS uint8_t nsp_flight_state; /* 0 not tried, 1 has an entry, 2 none */

static struct nsp_ring_inflight *nsp_flight_table; /* in the ring file's mapping; NULL none */
static uint32_t nsp_flight_n;
static uint32_t *nsp_flight_unslotted; /* the header's count */
static pthread_key_t nsp_flight_key;
static pthread_once_t nsp_flight_key_once = PTHREAD_ONCE_INIT;
static int nsp_flight_key_ok;

/* At thread exit: the entry goes back, idle. */
static void give_back(void *p) {
  struct nsp_ring_inflight *e = p;
  if (!e) return;
  __atomic_store_n(&e->call.t_enter, 0, __ATOMIC_RELEASE);
  __atomic_store_n(&e->tid, 0, __ATOMIC_RELEASE);
}

static void make_key(void) { nsp_flight_key_ok = pthread_key_create(&nsp_flight_key, give_back) == 0; }

void nsp_flight_map(struct nsp_ring_inflight *table, uint32_t n, uint32_t *unslotted) {
  pthread_once(&nsp_flight_key_once, make_key);
  nsp_flight_n = table && nsp_flight_key_ok ? n : 0;
  nsp_flight_unslotted = unslotted;
  __atomic_store_n(&nsp_flight_table, nsp_flight_n ? table : NULL, __ATOMIC_RELEASE);
}

struct nsp_ring_inflight *nsp_flight_claim(void) {
  struct nsp_ring_inflight *t = __atomic_load_n(&nsp_flight_table, __ATOMIC_ACQUIRE);
  if (!t) { /* no ring file: the writer has started (the wrappers' ENTER), so none will come */
    nsp_flight_state = 2;
    return NULL;
  }
  uint32_t tid = (uint32_t)syscall(SYS_gettid);
  for (uint32_t i = 0; i < nsp_flight_n; i++) {
    uint32_t free_tid = 0;
    if (__atomic_load_n(&t[i].tid, __ATOMIC_RELAXED) == 0 &&
        __atomic_compare_exchange_n(&t[i].tid, &free_tid, tid, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
      pthread_setspecific(nsp_flight_key, &t[i]);
      nsp_flight_mine = &t[i];
      nsp_flight_state = 1;
      return &t[i];
    }
  }
  if (nsp_flight_unslotted) __atomic_fetch_add(nsp_flight_unslotted, 1, __ATOMIC_RELAXED);
  nsp_flight_state = 2;
  return NULL;
}

uint64_t nsp_flight_count_others(void) {
  struct nsp_ring_inflight *t = __atomic_load_n(&nsp_flight_table, __ATOMIC_ACQUIRE);
  uint64_t n = 0;
  for (uint32_t i = 0; t && i < nsp_flight_n; i++)
    if (&t[i] != nsp_flight_mine && __atomic_load_n(&t[i].tid, __ATOMIC_RELAXED) &&
        __atomic_load_n(&t[i].call.t_enter, __ATOMIC_RELAXED))
      n++;
  return n;
}

void nsp_flight_atfork_child(void) {
  /* The parent's table is the parent's: the child's only thread lets go
   * of its entry there, and takes one in its own ring file later. */
  nsp_flight_mine = NULL;
  nsp_flight_state = 0;
  __atomic_store_n(&nsp_flight_table, NULL, __ATOMIC_RELEASE);
  nsp_flight_n = 0;
  nsp_flight_unslotted = NULL;
  if (nsp_flight_key_ok) pthread_setspecific(nsp_flight_key, NULL);
}
