/* test_an_pend.c - the table of calls awaiting completion
 * (common/nsp_pend.c) against a plain list that states its
 * rules: random calls and completions over a small key space, so keys
 * collide, completions come before their calls, out of order, twice, for
 * groups, with errors; after every step the callbacks seen, the number of
 * live entries and which keys wait must agree.  A wrong probe, deletion
 * or growth of the table's index shows as a key lost or found twice. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nsp_an_model.h"
#include "nsp_names.h"

/* ---- the reference: one cell per key of the key space ---------------- */

static const int32_t apis[] = {NSP_API_AllReduce, NSP_API_Send, NSP_API_Recv};
#define NLOCAL 3
#define NAPI 3
#define NPEER 5 /* -1 .. 3 */

struct ref_entry {
  uint64_t group_id;
  uint64_t stamp; /* insertion order: a group's calls complete newest first */
  uint8_t state;  /* NSP_PEND_*; FREE: not in the table */
};
struct ref {
  struct ref_entry *v; /* NLOCAL * NAPI * nseq * NPEER cells */
  uint64_t nseq, stamp;
  size_t live;
  uint64_t done_groups[4096]; /* group completions before their calls, */
  size_t ndone_groups;        /* forgotten all at once when full */
};

static size_t api_index(int32_t api) {
  for (size_t a = 0; a < NAPI; a++)
    if (apis[a] == api) return a;
  fail_msg("api %d", api);
  return 0;
}
static struct ref_entry *ref_cell(struct ref *r, uint32_t local, int32_t api, uint64_t seq, int32_t peer) {
  size_t k = (((size_t)(local - 1) * NAPI + api_index(api)) * r->nseq + (seq - 1)) * NPEER + (size_t)(peer + 1);
  return &r->v[k];
}
/* The cell's key, back from its index. */
static void cell_key(const struct ref *r, size_t k, uint32_t *local, int32_t *api, uint64_t *seq, int32_t *peer) {
  *peer = (int32_t)(k % NPEER) - 1;
  k /= NPEER;
  *seq = k % r->nseq + 1;
  k /= r->nseq;
  *api = apis[k % NAPI];
  *local = (uint32_t)(k / NAPI) + 1;
}

static void ref_set(struct ref *r, struct ref_entry *e, uint8_t state) {
  r->live += (state != NSP_PEND_FREE) - (e->state != NSP_PEND_FREE);
  e->state = state;
}

/* A call: completes an early completion of its key; a key already in the
 * table is not tracked twice; a call of a group completed before is
 * done; else it waits. */
static int ref_call(struct ref *r, uint32_t local, int32_t api, uint64_t seq, int32_t peer, uint64_t group) {
  struct ref_entry *e = ref_cell(r, local, api, seq, peer);
  if (e->state != NSP_PEND_FREE) {
    if (e->state == NSP_PEND_EARLY) ref_set(r, e, NSP_PEND_FREE);
    return 0;
  }
  for (size_t i = 0; group && i < r->ndone_groups; i++)
    if (r->done_groups[i] == group) return 0;
  ref_set(r, e, NSP_PEND_WAIT);
  e->group_id = group;
  e->stamp = ++r->stamp;
  return 1;
}

/* What a completion with these flags does to a waiting entry. */
static void ref_finish(struct ref *r, struct ref_entry *e, uint32_t flags) {
  e->group_id = 0;
  if ((flags & (NSP_DONE_OK | NSP_DONE_CAPTURED)) || !(flags & (NSP_DONE_ERROR | NSP_DONE_ABANDONED)))
    ref_set(r, e, NSP_PEND_FREE);
  else
    ref_set(r, e, (flags & NSP_DONE_ABANDONED) ? NSP_PEND_ABANDONED : NSP_PEND_FAILED);
}

/* The keys completed, in order, as "local/api/seq/peer;". */
static void key_cat(char *log, size_t cap, uint32_t local, int32_t api, uint64_t seq, int32_t peer) {
  size_t used = strlen(log);
  if (used + 64 < cap) snprintf(log + used, cap - used, "%u/%d/%llu/%d;", local, api, (unsigned long long)seq, peer);
}

static void ref_done(struct ref *r, const struct nsp_rec *rec, char *log, size_t cap) {
  size_t ncell = NLOCAL * NAPI * r->nseq * NPEER;
  if (rec->group_id) {
    int any = 0;
    for (;;) { /* newest waiting call of the group first */
      size_t best = SIZE_MAX;
      for (size_t k = 0; k < ncell; k++) {
        const struct ref_entry *e = &r->v[k];
        if (e->state == NSP_PEND_WAIT && e->group_id == rec->group_id &&
            (best == SIZE_MAX || e->stamp > r->v[best].stamp))
          best = k;
      }
      if (best == SIZE_MAX) break;
      any = 1;
      uint32_t local;
      int32_t api, peer;
      uint64_t seq;
      cell_key(r, best, &local, &api, &seq, &peer);
      key_cat(log, cap, local, api, seq, peer);
      ref_finish(r, &r->v[best], rec->flags);
    }
    if (!any) {
      if (r->ndone_groups >= 4096) r->ndone_groups = 0;
      for (size_t i = 0; i < r->ndone_groups; i++)
        if (r->done_groups[i] == rec->group_id) return;
      r->done_groups[r->ndone_groups++] = rec->group_id;
    }
    return;
  }
  struct ref_entry *e = ref_cell(r, rec->comm, rec->api, rec->seq, rec->peer);
  if (e->state == NSP_PEND_FREE) {
    ref_set(r, e, NSP_PEND_EARLY);
    e->group_id = 0;
    return;
  }
  if (e->state != NSP_PEND_WAIT) return;
  key_cat(log, cap, rec->comm, rec->api, rec->seq, rec->peer);
  ref_finish(r, e, rec->flags);
}

/* ---- the table, logged the same way ---------------------------------- */

struct cb_log {
  char text[4096];
};
static void on_done(void *ctx, const struct nsp_pend *e, const struct nsp_rec *done) {
  (void)done;
  struct cb_log *l = ctx;
  key_cat(l->text, sizeof l->text, e->local, e->api, e->seq, e->peer);
}

static uint64_t rnd_state = 88172645463325252ull;
static uint64_t rnd(void) { /* xorshift64: the same run every time */
  rnd_state ^= rnd_state << 13;
  rnd_state ^= rnd_state >> 7;
  rnd_state ^= rnd_state << 17;
  return rnd_state;
}

/* One run of `steps` random calls and completions over keys with seqs
 * below nseq; live entries stay near `inflight` when completions follow
 * their calls. */
static void run(uint64_t nseq, int steps, int groups) {
  struct nsp_pend_tab t;
  nsp_pend_init(&t);
  static struct ref r; /* static: 32 KiB of groups */
  memset(&r, 0, sizeof r);
  r.nseq = nseq;
  r.v = calloc(NLOCAL * NAPI * nseq * NPEER, sizeof *r.v);
  assert_non_null(r.v);
  uint64_t next_group = 1;
  for (int step = 0; step < steps; step++) {
    uint32_t local = 1 + (uint32_t)(rnd() % NLOCAL);
    int32_t api = apis[rnd() % NAPI];
    uint64_t seq = 1 + rnd() % nseq;
    int32_t peer = api == NSP_API_AllReduce ? -1 : (int32_t)(rnd() % 4);
    uint64_t what = rnd() % 16;
    char got[4096] = "", want[4096] = "";
    if (what < 8) { /* a call, sometimes in a group */
      uint64_t group = groups && what == 0 ? next_group + rnd() % 2 : 0;
      struct nsp_rec rec;
      memset(&rec, 0, sizeof rec);
      rec.kind = NSP_REC_CALL;
      rec.comm = local;
      rec.api = (uint8_t)api;
      rec.seq = seq;
      rec.peer = peer;
      rec.group_id = group;
      struct nsp_pend e;
      nsp_pend_from_call(&e, &rec);
      int rc = nsp_pend_call(&t, &e);
      assert_int_equal(rc, ref_call(&r, local, api, seq, peer, group));
    } else { /* a completion: of one call, or of a group */
      struct nsp_rec rec;
      memset(&rec, 0, sizeof rec);
      rec.kind = NSP_REC_COMPLETION;
      uint64_t f = rnd() % 8;
      rec.flags = f < 5 ? NSP_DONE_OK : f == 5 ? NSP_DONE_ERROR : f == 6 ? NSP_DONE_ABANDONED : 0;
      if (groups && what == 8) {
        rec.group_id = next_group;
        next_group += 1 + rnd() % 2;
      } else {
        rec.comm = local;
        rec.api = (uint8_t)api;
        rec.seq = seq;
        rec.peer = peer;
      }
      struct cb_log log = {""};
      assert_int_equal(nsp_pend_done(&t, &rec, on_done, &log), 0);
      ref_done(&r, &rec, want, sizeof want);
      snprintf(got, sizeof got, "%s", log.text);
      assert_string_equal(got, want);
    }
    assert_int_equal(t.live, r.live);
    if (step % 97 == 0 || step == steps - 1) /* every key: waiting or not */
      for (size_t k = 0; k < NLOCAL * NAPI * nseq * NPEER; k++) {
        uint32_t l;
        int32_t a, p;
        uint64_t s;
        cell_key(&r, k, &l, &a, &s, &p);
        int want_wait = r.v[k].state != NSP_PEND_FREE && r.v[k].state != NSP_PEND_EARLY;
        if (nsp_pend_waiting(&t, l, a, s, p) != want_wait)
          fail_msg("step %d: key %u/%d/%llu/%d waiting %d, the reference says %d", step, l, a, (unsigned long long)s,
                   p, !want_wait, want_wait);
      }
  }
  free(r.v);
  r.v = NULL;
  nsp_pend_free(&t);
}

/* Few keys: the table stays small, every key comes back often. */
static void test_pend_few_keys(void **state) {
  (void)state;
  run(8, 20000, 0);
}

/* Many keys: the index grows past 64 slots, long probe runs, deletions
 * in the middle of them. */
static void test_pend_many_keys(void **state) {
  (void)state;
  run(400, 30000, 0);
}

/* Groups: a group completion ends its calls newest first, one before its
 * calls makes them done. */
static void test_pend_groups(void **state) {
  (void)state;
  run(40, 20000, 1);
}

/* In order, as a healthy job: each call, then its completion, with a
 * queue of calls in flight; every completion finds its call. */
static void test_pend_in_order(void **state) {
  (void)state;
  struct nsp_pend_tab t;
  nsp_pend_init(&t);
  const uint64_t depth = 300, n = 20000;
  uint64_t matched = 0;
  for (uint64_t seq = 1; seq <= n + depth; seq++) {
    if (seq <= n) {
      struct nsp_rec rec;
      memset(&rec, 0, sizeof rec);
      rec.kind = NSP_REC_CALL;
      rec.comm = 1 + (uint32_t)(seq % 2);
      rec.api = NSP_API_AllReduce;
      rec.seq = seq;
      rec.peer = -1;
      struct nsp_pend e;
      nsp_pend_from_call(&e, &rec);
      assert_int_equal(nsp_pend_call(&t, &e), 1);
    }
    if (seq > depth) {
      struct nsp_rec rec;
      memset(&rec, 0, sizeof rec);
      rec.kind = NSP_REC_COMPLETION;
      rec.comm = 1 + (uint32_t)((seq - depth) % 2);
      rec.api = NSP_API_AllReduce;
      rec.seq = seq - depth;
      rec.peer = -1;
      rec.flags = NSP_DONE_OK;
      struct cb_log log = {""};
      assert_int_equal(nsp_pend_done(&t, &rec, on_done, &log), 0);
      matched += log.text[0] != 0;
      assert_int_equal(t.live, seq <= n ? depth : n + depth - seq);
    }
  }
  assert_int_equal(matched, n);
  assert_int_equal(t.live, 0);
  nsp_pend_free(&t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pend_few_keys),
      cmocka_unit_test(test_pend_many_keys),
      cmocka_unit_test(test_pend_groups),
      cmocka_unit_test(test_pend_in_order),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
