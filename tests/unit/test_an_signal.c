/* test_an_signal.c - fatal signals (format 1.3): the "signal" finding
 * names the first process to die, its signal and its stack (NCCL's frames
 * and the C runtime's abort machinery left out), and what follows from it:
 * the hang its rank never arrived at, or, for a watchdog that aborts after
 * a timeout, the error it follows from; a signal the program's own handler
 * dealt with is a note, not a finding. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nsp_analyze.h"
#include "nsp_names.h"
#include "nsp_tracegen.h"
#include "nsp_an_test.h"

static const struct nsp_finding *find_kind(const struct nsp_job *job, int kind, size_t *index) {
  for (size_t i = 0; i < nsp_job_nfindings(job); i++)
    if (nsp_job_finding(job, i)->kind == kind) {
      if (index) *index = i;
      return nsp_job_finding(job, i);
    }
  return NULL;
}

static struct nsp_tracegen *gen(int r, uint32_t *w, int tracked) { return rank_on(r, 2, 0xaaaa, tracked, w); }

#define AR(g, c) nsp_tracegen_coll(g, NSP_API_AllReduce, c, 8, ncclFloat32, ncclSum, -1)

/* A SIGNAL record now, with n frames (innermost first).  The process
 * dies of it: no EXIT record at the end (nsp_tracegen_set_exit(g, 1)
 * again for one whose handler went on). */
static void signal_rec(struct nsp_tracegen *g, int signo, int code, uint64_t addr, int sender, size_t n,
                       const char *const *mods, const uint64_t *offs, const char *const *syms) {
  struct nsp_rec_ext x;
  memset(&x, 0, sizeof x);
  x.nframes = (uint32_t)n;
  x.frame_module = mods;
  x.frame_offset = offs;
  x.frame_symbol = syms;
  struct nsp_rec r;
  memset(&r, 0, sizeof r);
  r.kind = NSP_REC_SIGNAL;
  r.aux = (uint32_t)signo;
  r.result = code;
  r.sendbuff = addr;
  r.seq = 4242;
  r.peer = sender;
  r.t_enter = nsp_tracegen_now(g);
  r.ext = &x;
  assert_int_equal(nsp_tracegen_record(g, &r), 0);
  nsp_tracegen_set_exit(g, 0);
}

/* Rank 1 dies of SIGSEGV inside NCCL after seq 4; rank 0 waits in seq 5.
 * dropped: records rank 1's trace lost (ring full) after its seq 4. */
static struct nsp_job *segv_then_hang_job(uint64_t dropped) {
  struct nsp_tracegen *g[2];
  uint32_t w[2];
  for (int r = 0; r < 2; r++) {
    g[r] = gen(r, &w[r], 1);
    for (int i = 0; i < 4; i++) AR(g[r], w[r]);
  }
  if (dropped) assert_int_equal(nsp_tracegen_dropped(g[1], dropped, NSP_DROP_RING_FULL), 0);
  static const char *const mods[] = {"/opt/nccl/lib/libnccl.so.2", "/opt/t/train", "/opt/t/train"};
  static const uint64_t offs[] = {0x100, 0x200, 0x300};
  static const char *const syms[] = {"ncclProxyThing", "train_step", "main"};
  signal_rec(g[1], 11, 1, 0x8, 0, 3, mods, offs, syms);
  nsp_tracegen_set_auto_complete(g[0], 0, 0);
  AR(g[0], w[0]); /* seq 5: never completes */
  return analyse_gens(g, 2);
}

/* The signal comes first, the hang follows from it. */
static void test_segv_then_hang(void **state) {
  (void)state;
  struct nsp_job *job = segv_then_hang_job(0);

  const struct nsp_finding *f = nsp_job_finding(job, 0);
  assert_int_equal(f->kind, NSP_FIND_SIGNAL);
  assert_string_equal(nsp_finding_kind_name(f->kind), "signal");
  assert_int_equal(f->comm_id, 0);
  assert_int_equal(f->nodd, 1);
  assert_int_equal(f->odd_ranks[0], 1);
  assert_int_equal(f->nsides, 1);
  const struct nsp_proc *p = &f->sides[0].procs[0];
  assert_non_null(p->signal);
  assert_int_equal(p->signal->signo, 11);
  assert_string_equal(p->signal->name, "SIGSEGV");
  assert_string_equal(p->signal->code_name, "SEGV_MAPERR");
  assert_int_equal(p->signal->addr, 0x8);
  assert_false(p->signal->went_on);
  assert_ptr_equal(p->site, p->signal->stack);
  assert_int_equal(p->site->nframes, 2); /* NCCL's frame left out */
  assert_int_equal(p->site->nskipped, 1);
  assert_string_equal(p->site->frames[0].symbol, "train_step");
  assert_int_equal(p->call.api, NSP_API_AllReduce);
  assert_int_equal(p->call.seq, 4);
  assert_contains(f->message, "rank 1 (h1 pid 101) died of SIGSEGV (SEGV_MAPERR: address not mapped to an object, "
                              "at address 0x8) in train_step (train+0x200), inside NCCL (libnccl.so.2 ncclProxyThing)");
  assert_contains(f->message, "its last NCCL call");
  assert_contains(nsp_job_summary(job), "The first problem (signal): rank 1");
  size_t hi;
  const struct nsp_finding *h = find_kind(job, NSP_FIND_HANG, &hi);
  assert_non_null(h);
  assert_int_equal(h->cause, 0);
  assert_int_equal(hi, 1); /* right after its cause */
  const struct nsp_trace_info *t1 = nsp_job_trace(job, 1);
  /* No crash ring in this trace: the SIGNAL record says how it ended. */
  assert_int_equal(t1->end.state, NSP_END_CRASHED);
  assert_int_equal(t1->end.source, NSP_ENDSRC_SIGNAL);
  assert_string_equal(t1->end.signal, "SIGSEGV");
  assert_int_equal(p->end->state, NSP_END_CRASHED);
  assert_int_equal(t1->signals, 1);
  assert_non_null(t1->signal);
  assert_null(nsp_job_trace(job, 0)->signal);
  nsp_job_destroy(job);
}

/* As above, but rank 1's trace lost records after its seq 4 (ring full)
 * before it died: the hang calls it arrival-unknown, not "did not
 * arrive", and the signal is still its cause. */
static void test_segv_then_hang_with_drops(void **state) {
  (void)state;
  struct nsp_job *job = segv_then_hang_job(3);
  assert_int_equal(nsp_job_finding(job, 0)->kind, NSP_FIND_SIGNAL);
  size_t hi;
  const struct nsp_finding *h = find_kind(job, NSP_FIND_HANG, &hi);
  assert_non_null(h);
  int unknown = 0;
  for (size_t s = 0; s < h->nsides; s++) unknown |= h->sides[s].role == NSP_ROLE_ARRIVAL_UNKNOWN;
  assert_true(unknown);
  assert_int_equal(h->cause, 0);
  nsp_job_destroy(job);
}

/* A watchdog: rank 0's collective fails with a timeout, then it aborts
 * (SIGABRT raised by itself, through std::terminate): the signal follows
 * from the error, and its stack starts at the code that called abort. */
static void test_abort_after_error(void **state) {
  (void)state;
  struct nsp_tracegen *g[2];
  uint32_t w[2];
  for (int r = 0; r < 2; r++) {
    g[r] = gen(r, &w[r], 0);
    for (int i = 0; i < 3; i++) AR(g[r], w[r]);
  }
  nsp_tracegen_fail_next(g[0], ncclSystemError, "Watchdog caught collective operation timeout");
  AR(g[0], w[0]);
  static const char *const mods[] = {"/lib/x86_64-linux-gnu/libc.so.6", "/lib/x86_64-linux-gnu/libc.so.6",
                                     "/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/libstdc++.so.6",
                                     "/opt/t/libtorch_cuda.so", "/opt/t/train"};
  static const uint64_t offs[] = {0x8aeec, 0x3bfb2, 0x26472, 0xa1000, 0x5000, 0x300};
  static const char *const syms[] = {"", "gsignal", "abort", "_ZSt9terminatev", "watchdog_abort", "main"};
  signal_rec(g[0], 6, -6, 0, 100, 6, mods, offs, syms);
  struct nsp_job *job = analyse_gens(g, 2);

  size_t si, ei;
  const struct nsp_finding *s = find_kind(job, NSP_FIND_SIGNAL, &si);
  const struct nsp_finding *e = find_kind(job, NSP_FIND_ERROR, &ei);
  assert_non_null(s);
  assert_non_null(e);
  assert_int_equal(s->cause, ei);
  const struct nsp_proc *p = &s->sides[0].procs[0];
  assert_int_equal(p->signal->sender_pid, 100);
  assert_string_equal(p->signal->code_name, "SI_TKILL");
  assert_string_equal(p->site->frames[0].symbol, "watchdog_abort");
  assert_int_equal(p->site->nskipped, 4);
  assert_string_equal(p->signal->first_symbol, "");
  assert_contains(s->message, "died of SIGABRT (raised by the process itself");
  assert_contains(s->message, "in watchdog_abort (libtorch_cuda.so+0x5000)");
  assert_contains(s->message, "it had an NCCL error first (ncclSystemError)");
  nsp_job_destroy(job);
}

/* Two ranks die: the first is the origin, the other a later side. */
static void test_two_deaths(void **state) {
  (void)state;
  struct nsp_tracegen *g[2];
  uint32_t w[2];
  for (int r = 0; r < 2; r++) {
    g[r] = gen(r, &w[r], 0);
    AR(g[r], w[r]);
  }
  static const char *const mods[] = {"/opt/t/train"};
  static const uint64_t offs[] = {0x10};
  static const char *const syms[] = {"f"};
  nsp_tracegen_set_time(g[1], 2000000000ull);
  signal_rec(g[1], 7, 2, 0x7f0000001000ull, 0, 1, mods, offs, syms);
  nsp_tracegen_set_time(g[0], 3000000000ull);
  signal_rec(g[0], 6, -6, 0, 100, 0, NULL, NULL, NULL);
  struct nsp_job *job = analyse_gens(g, 2);
  const struct nsp_finding *f = nsp_job_finding(job, 0);
  assert_int_equal(f->kind, NSP_FIND_SIGNAL);
  assert_int_equal(nsp_job_nfindings(job), 1);
  assert_int_equal(f->nsides, 2);
  assert_int_equal(f->later, 1);
  assert_string_equal(f->sides[0].text, "SIGBUS");
  assert_int_equal(f->sides[0].ranks[0], 1);
  assert_string_equal(f->sides[1].text, "SIGABRT");
  assert_int_equal(f->sides[1].ranks[0], 0);
  assert_null(f->sides[1].procs[0].site); /* no frames */
  assert_contains(f->message, "SIGBUS (BUS_ADRERR: nonexistent physical address");
  assert_contains(f->message, "later: rank 0 SIGABRT");
  nsp_job_destroy(job);
}

/* The program's own handler dealt with it: calls went on well after. */
static void test_handled(void **state) {
  (void)state;
  struct nsp_tracegen *g[1];
  uint32_t w;
  g[0] = gen(0, &w, 0);
  AR(g[0], w);
  signal_rec(g[0], 11, 2, 0x1000, 0, 0, NULL, NULL, NULL);
  nsp_tracegen_set_exit(g[0], 1);
  nsp_tracegen_set_time(g[0], nsp_tracegen_now(g[0]) + 3000000000ull);
  AR(g[0], w);
  struct nsp_job *job = analyse_gens(g, 1);
  assert_null(find_kind(job, NSP_FIND_SIGNAL, NULL));
  assert_non_null(nsp_job_trace(job, 0)->signal);
  assert_true(nsp_job_trace(job, 0)->signal->went_on);
  assert_int_equal(nsp_job_trace(job, 0)->end.state, NSP_END_EXITED);
  int noted = 0;
  for (size_t i = 0; i < nsp_job_nnotes(job); i++) noted += strstr(nsp_job_note(job, i), "did not end the process") != NULL;
  assert_int_equal(noted, 1);
  nsp_job_destroy(job);
}

static void test_names(void **state) {
  (void)state;
  char b[32];
  assert_string_equal(nsp_signal_name(11, b, sizeof b), "SIGSEGV");
  assert_string_equal(nsp_signal_name(99, b, sizeof b), "signal 99");
  assert_string_equal(nsp_signal_code_name(11, 1), "SEGV_MAPERR");
  assert_string_equal(nsp_signal_code_name(8, 1), "FPE_INTDIV");
  assert_string_equal(nsp_signal_code_name(6, -6), "SI_TKILL");
  assert_string_equal(nsp_signal_code_name(11, 0x80), "SI_KERNEL");
  assert_string_equal(nsp_signal_code_name(11, 99), "");
  assert_string_equal(nsp_signal_code_name(11, -99), "");
  assert_false(nsp_finding_kind_is_env(NSP_FIND_SIGNAL));
  assert_int_equal(nsp_finding_kind_from_name("signal"), NSP_FIND_SIGNAL);
}

/* rank_crash on 2xH200: rank 1 died of SIGSEGV 0.2 ms after its last
 * call's enqueue (right after torch.cuda.synchronize), before the shim's
 * poller had looked, so no COMPLETION record says the call ran (it had).
 * A process that died that soon after a call (within 3 poll intervals, at
 * least 50 ms) leaves its completion unknown: no "never completed".
 * died_after_ns: how long after rank 1's seq 4 its SIGNAL comes. */
static struct nsp_job *died_after_job(uint64_t died_after_ns) {
  struct nsp_tracegen *g[2];
  uint32_t w[2];
  for (int r = 0; r < 2; r++) {
    g[r] = gen(r, &w[r], 1);
    for (int i = 0; i < 3; i++) AR(g[r], w[r]);
  }
  AR(g[0], w[0]); /* seq 4 completes on rank 0 */
  nsp_tracegen_set_auto_complete(g[1], 0, 0);
  AR(g[1], w[1]); /* seq 4 on rank 1: no COMPLETION before it died */
  nsp_tracegen_set_time(g[1], nsp_tracegen_now(g[1]) + died_after_ns);
  static const char *const mods[] = {"/usr/lib/libc.so.6"};
  static const uint64_t offs[] = {0x19bc5c};
  static const char *const syms[] = {""};
  signal_rec(g[1], 11, 1, 0x10, 0, 1, mods, offs, syms);
  return analyse_gens(g, 2);
}

static void test_died_right_after_call(void **state) {
  (void)state;
  struct nsp_job *job = died_after_job(200000); /* 0.2 ms */
  assert_int_equal(nsp_job_nfindings(job), 1);
  const struct nsp_finding *f = nsp_job_finding(job, 0);
  assert_int_equal(f->kind, NSP_FIND_SIGNAL);
  assert_int_equal(f->sides[0].procs[0].call.seq, 4);
  assert_int_equal(f->sides[0].procs[0].call.done, -1); /* not "never completed" */
  assert_null(strstr(f->message, "never completed"));
  nsp_job_destroy(job);
}

static void test_died_long_after_call(void **state) {
  (void)state;
  struct nsp_job *job = died_after_job(5000000000ull); /* 5 s: it was stuck */
  assert_int_equal(nsp_job_nfindings(job), 2);
  assert_int_equal(nsp_job_finding(job, 0)->kind, NSP_FIND_SIGNAL);
  assert_int_equal(nsp_job_finding(job, 0)->sides[0].procs[0].call.done, 0);
  const struct nsp_finding *f = nsp_job_finding(job, 1);
  assert_int_equal(f->kind, NSP_FIND_NEVER_COMPLETED);
  assert_int_equal(f->seq, 4);
  assert_int_equal(f->nodd, 1);
  assert_int_equal(f->odd_ranks[0], 1);
  assert_int_equal(f->cause, 0);
  nsp_job_destroy(job);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_segv_then_hang), cmocka_unit_test(test_segv_then_hang_with_drops),
      cmocka_unit_test(test_abort_after_error),
      cmocka_unit_test(test_two_deaths),     cmocka_unit_test(test_handled),
      cmocka_unit_test(test_names),
      cmocka_unit_test(test_died_right_after_call), cmocka_unit_test(test_died_long_after_call),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
