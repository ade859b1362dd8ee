/* test_gpu_traces.c - the analyzer on traces recorded by the shim on 2xH200
 * (torch 2.11, NCCL 2.28.9; examples/torch/run_gpu.sh), kept in
 * tests/data/gpu/ as real input:
 *   ddp_amp        healthy DDP + AMP loop: no finding, every call completed
 *   c01_amp_dtype  seq 2: rank 0 float16, rank 1 float32; rank 1 hung
 *   c03_main_only  seq 11: rank 0 all-gather, rank 1 all-reduce
 *   c11_straggler  rank 1 slept before seq 5, rank 0 waited; job killed by
 *                  SIGTERM (its crash rings are left out: 2.3 MB each, and
 *                  ring recovery has its own tests)
 *   dup_gpu        both ranks on GPU 0: NCCL refused at init
 *   rank_crash     rank 1 died of SIGSEGV 0.26 ms after its seq 3 (right
 *                  after torch.cuda.synchronize, before the shim's poller
 *                  looked); torchrun then killed rank 0, waiting in seq 4.
 *                  Both traces come from their crash rings (NCCLSPY_RING=256
 *                  to keep them small)
 * Recorded on 1xH200 (torch 2.11, JAX 0.11.2, NCCL 2.28.9), both ranks on
 * GPU 0 with their own NCCL_HOSTID, each job killed by its time limit
 * (crash rings kept: they hold the calls in flight and the heartbeats):
 *   new_group_skip rank 0 waits inside ncclCommInitRankConfig of a new
 *                  group that rank 1 never used
 *   pynccl_count   NCCL only through ctypes on torch's libnccl (PyNccl's
 *                  way): seq 3, rank 0 1024 elements, rank 1 1000
 *   jax_dtype      2 JAX processes (XLA: dlopen + dlsym): seq 3 all-gather,
 *                  rank 0 float32, rank 1 bfloat16
 *   skip_allreduce rank 1 skipped its loss all-reduce (1 float) at step 5 of
 *                  a loop of gradient (4096 floats) and loss all-reduces:
 *                  from seq 12 its calls are rank 0's one seq earlier; the
 *                  watchdog ended both 30 s later (NCCLSPY_RING=256: crash
 *                  rings of 316 KiB)
 *   ddp_amp_subgroup  4 ranks, healthy DDP + AMP with a float16 all-gather
 *                  each step in subgroups {0,1} and {2,3}: no finding
 *   ddp_grad_dtype a DDP + AMP step whose gradient all-reduce mismatches
 *                  (rank 1's output layer in float16): seq 1, rank 0 136714
 *                  float32 vs rank 1 5130 float16, issued by autograd's
 *                  thread; each side's Python site is the main thread's
 *                  stack (Python 3.12), at its backward() line; rank 1
 *                  died of SIGABRT (the watchdog), rank 0 was killed
 * usage: test_gpu_traces DATA_DIR CASE */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "nsp_analyze.h"
#include "nsp_nccl.h"
#include "ncclspy/trace.h"

static const char *data_dir;

static struct nsp_job *analyze(const char *name, int ntraces) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", data_dir, name);
  struct nsp_job *job = nsp_job_create();
  assert_non_null(job);
  assert_int_equal(nsp_job_add_path(job, path), ntraces);
  assert_int_equal(nsp_job_analyze(job), 0);
  for (size_t i = 0; i < nsp_job_nfindings(job); i++)
    print_message("# %s: %.900s\n", nsp_finding_kind_name(nsp_job_finding(job, i)->kind), nsp_job_finding(job, i)->message);
  return job;
}

static const struct nsp_finding *find(struct nsp_job *job, int kind) {
  for (size_t i = 0; i < nsp_job_nfindings(job); i++)
    if (nsp_job_finding(job, i)->kind == kind) return nsp_job_finding(job, i);
  fail_msg("no %s finding", nsp_finding_kind_name(kind));
  return NULL;
}

static void test_ddp_amp(void **state) {
  (void)state;
  struct nsp_job *job = analyze("ddp_amp", 2);
  assert_int_equal(nsp_job_nfindings(job), 0);
  assert_int_equal(nsp_job_ncomms(job), 1);
  assert_int_equal(nsp_job_comm(job, 0)->ncoll, 308);
  nsp_job_destroy(job);
}

static void test_c01_amp_dtype(void **state) {
  (void)state;
  struct nsp_job *job = analyze("c01_amp_dtype", 2);
  const struct nsp_finding *f = nsp_job_finding(job, 0);
  assert_int_equal(f->kind, NSP_FIND_DTYPE_MISMATCH);
  assert_int_equal(f->seq, 2);
  assert_int_equal(f->sides[0].ranks[0], 0);
  assert_int_equal(f->sides[0].call.dtype, ncclFloat16);
  assert_int_equal(f->sides[1].ranks[0], 1);
  assert_int_equal(f->sides[1].call.dtype, ncclFloat32);
  /* The GPU half of the case: rank 1's seq 2 never completed. */
  const struct nsp_finding *n = find(job, NSP_FIND_NEVER_COMPLETED);
  assert_int_equal(n->seq, 2);
  assert_int_equal(n->sides[0].nranks, 1);
  assert_int_equal(n->sides[0].ranks[0], 1);
  nsp_job_destroy(job);
}

static void test_c03_main_only(void **state) {
  (void)state;
  struct nsp_job *job = analyze("c03_main_only", 2);
  const struct nsp_finding *f = nsp_job_finding(job, 0);
  assert_int_equal(f->kind, NSP_FIND_KIND_MISMATCH);
  assert_int_equal(f->seq, 11);
  assert_int_equal(f->sides[0].ranks[0], 0);
  assert_int_equal(f->sides[0].call.api, NSP_API_AllGather);
  assert_int_equal(f->sides[1].ranks[0], 1);
  assert_int_equal(f->sides[1].call.api, NSP_API_AllReduce);
  nsp_job_destroy(job);
}

static void test_c11_straggler(void **state) {
  (void)state;
  struct nsp_job *job = analyze("c11_straggler", 2);
  const struct nsp_finding *f = nsp_job_finding(job, 0);
  assert_int_equal(f->kind, NSP_FIND_HANG);
  assert_int_equal(f->seq, 5);
  /* The rank to look at is rank 1, which never arrived; rank 0 waits. */
  assert_int_equal(f->nodd, 1);
  assert_int_equal(f->odd_ranks[0], 1);
  assert_int_equal(f->nsides, 2);
  assert_int_equal(f->sides[0].ranks[0], 1);
  assert_int_equal(f->sides[1].ranks[0], 0);
  /* Rank 0 was still waiting when the job was killed, 25 s after start:
   * its heartbeats say for how long. */
  assert_true(nsp_job_trace(job, 0)->rank == 0 || nsp_job_trace(job, 1)->rank == 0);
  assert_non_null(strstr(f->message, "rank 0 waited 1"));
  nsp_job_destroy(job);
}

static void test_dup_gpu(void **state) {
  (void)state;
  struct nsp_job *job = analyze("dup_gpu", 2);
  const struct nsp_finding *d = find(job, NSP_FIND_ENV_DUP_GPU);
  assert_int_equal(d->nsides, 1);
  assert_int_equal(d->sides[0].nranks, 2);
  const struct nsp_finding *e = find(job, NSP_FIND_ERROR);
  assert_int_equal(e->sides[0].call.result, ncclInvalidUsage);
  assert_non_null(strstr(e->sides[0].procs[0].call.last_error, "Duplicate GPU detected"));
  assert_non_null(strstr(e->hint, "same GPU"));
  nsp_job_destroy(job);
}

static void test_rank_crash(void **state) {
  (void)state;
  struct nsp_job *job = analyze("rank_crash", 2);
  assert_int_equal(nsp_job_nfindings(job), 2);
  const struct nsp_finding *f = nsp_job_finding(job, 0);
  assert_int_equal(f->kind, NSP_FIND_SIGNAL);
  assert_int_equal(f->nodd, 1);
  assert_int_equal(f->odd_ranks[0], 1);
  const struct nsp_proc *p = &f->sides[0].procs[0];
  assert_non_null(p->signal);
  assert_string_equal(p->signal->name, "SIGSEGV");
  assert_int_equal(p->signal->addr, 0x10);
  assert_int_equal(p->call.seq, 3);
  /* It had run (the rank printed after synchronize): not "never
   * completed", which the trace cannot tell 0.26 ms before the death. */
  assert_int_equal(p->call.done, -1);
  const struct nsp_finding *s = nsp_job_finding(job, 1);
  assert_int_equal(s->kind, NSP_FIND_STOPPED_EARLY);
  assert_int_equal(s->cause, 0);
  assert_int_equal(s->seq, 3);
  assert_int_equal(s->sides[0].ranks[0], 1);
  assert_int_equal(s->sides[1].ranks[0], 0);
  assert_int_equal(s->sides[1].call.seq, 4);
  nsp_job_destroy(job);
}

/* A job killed long ago on another host: /proc is not asked, and "now" is
 * a day after the traces. */
static struct nsp_job *analyze_killed(const char *name, int ntraces) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", data_dir, name);
  struct nsp_job *job = nsp_job_create();
  assert_non_null(job);
  assert_int_equal(nsp_job_set_local_host(job, ""), 0);
  assert_int_equal(nsp_job_set_now(job, 1796148711370010719ll + 86400ll * 1000000000ll), 0);
  assert_int_equal(nsp_job_add_path(job, path), ntraces);
  assert_int_equal(nsp_job_analyze(job), 0);
  for (size_t i = 0; i < nsp_job_nfindings(job); i++)
    print_message("# %s: %.900s\n", nsp_finding_kind_name(nsp_job_finding(job, i)->kind), nsp_job_finding(job, i)->message);
  for (size_t i = 0; i < nsp_job_ntraces(job); i++) {
    const struct nsp_trace_info *t = nsp_job_trace(job, i);
    assert_int_equal(t->end.state, NSP_END_KILLED);
    /* Two ranks on one GPU with their own NCCL_HOSTID: a note, no finding. */
  }
  for (size_t i = 0; i < nsp_job_nfindings(job); i++)
    assert_int_not_equal(nsp_job_finding(job, i)->kind, NSP_FIND_ENV_DUP_GPU);
  return job;
}

static void test_new_group_skip(void **state) {
  (void)state;
  struct nsp_job *job = analyze_killed("new_group_skip", 2);
  const struct nsp_finding *f = nsp_job_finding(job, 0);
  assert_int_equal(f->kind, NSP_FIND_COMM_INIT_WAIT);
  assert_int_equal(f->nsides, 2);
  /* The one to look at, rank 1, then rank 0 waiting inside the init. */
  assert_int_equal(f->sides[0].nranks, 1);
  assert_int_equal(nsp_job_trace(job, f->sides[0].procs[0].trace)->rank, 1);
  assert_int_equal(f->sides[1].nranks, 1);
  assert_int_equal(nsp_job_trace(job, f->sides[1].procs[0].trace)->rank, 0);
  assert_int_equal(f->sides[1].call.api, NSP_API_CommInitRankConfig);
  assert_int_equal(f->sides[1].call.in_flight, 1);
  const struct nsp_trace_info *t0 = nsp_job_trace(job, f->sides[1].procs[0].trace);
  assert_int_equal(t0->ninflight, 1);
  assert_int_equal(t0->inflight[0].nranks, 2);
  assert_int_equal(t0->inflight[0].rank, 0);
  nsp_job_destroy(job);
}

/* A skipped collective, not a shape problem: rank 1 is the odd one (one
 * rank against one, but rank 0's calls keep the loop's pattern). */
static void test_skip_allreduce(void **state) {
  (void)state;
  struct nsp_job *job = analyze_killed("skip_allreduce", 2);
  const struct nsp_finding *f = nsp_job_finding(job, 0);
  assert_int_equal(f->kind, NSP_FIND_SEQ_SHIFT);
  assert_int_equal(f->seq, 12);
  assert_int_equal(f->api, NSP_API_AllReduce);
  assert_int_equal(f->nodd, 1);
  assert_int_equal(f->odd_ranks[0], 1);
  assert_non_null(strstr(f->message, "rank 1 skipped an all-reduce at seq 12 (its calls from seq 12 on match rank 0's "
                                     "from seq 13 on)"));
  assert_string_equal(nsp_job_headline(job), "communicator 2eab117378de280f: rank 1 skipped an all-reduce at seq 12 "
                                             "(its calls from seq 12 on match rank 0's from seq 13 on) (seq shift)");
  for (size_t i = 0; i < nsp_job_nfindings(job); i++) {
    const struct nsp_finding *g = nsp_job_finding(job, i);
    assert_int_not_equal(g->kind, NSP_FIND_COUNT_MISMATCH);
    if (i) assert_int_equal(g->cause, 0); /* the timeout that follows */
  }
  nsp_job_destroy(job);
}

/* Python call sites on real input (CPython 3.12 under torch 2.11): the
 * gradient all-reduce came from autograd's thread, so each side's site is
 * the main thread's stack, borrowed, whose first frame of the program's
 * own is the line that ran backward(). */
static void test_ddp_grad_dtype(void **state) {
  (void)state;
  char path[4096];
  snprintf(path, sizeof path, "%s/ddp_grad_dtype", data_dir);
  struct nsp_job *job = nsp_job_create();
  assert_non_null(job);
  assert_int_equal(nsp_job_set_local_host(job, ""), 0);
  assert_int_equal(nsp_job_set_now(job, 1796148711370010719ll + 86400ll * 1000000000ll), 0);
  assert_int_equal(nsp_job_add_path(job, path), 2);
  assert_int_equal(nsp_job_analyze(job), 0);
  const struct nsp_finding *f = nsp_job_finding(job, 0);
  assert_int_equal(f->kind, NSP_FIND_DTYPE_MISMATCH);
  assert_int_equal(f->seq, 1);
  assert_int_equal(f->nsides, 2);
  for (size_t k = 0; k < 2; k++) {
    const struct nsp_pysite *ps = f->sides[k].procs[0].pysite;
    assert_non_null(ps);
    assert_true(ps->flags & NSP_PYSITE_BORROWED);
    assert_true(ps->first < ps->nframes);
    const struct nsp_pyframe *fr = &ps->frames[ps->first];
    print_message("# side %zu: %s:%llu in %s (%zu library frames inside it)\n", k, fr->file,
                  (unsigned long long)fr->line, fr->function, ps->first);
    assert_non_null(strstr(fr->file, "examples/torch/ddp_grad_dtype.py"));
    assert_int_equal(fr->line, 34); /* scaler.scale(loss).backward() */
    assert_string_equal(fr->function, "train_step");
    assert_string_equal(ps->frames[0].function, "_engine_run_backward");
    assert_true(ps->frames[0].library);
  }
  assert_non_null(strstr(nsp_job_headline(job), "(dtype mismatch)"));
  nsp_job_destroy(job);
}

static void test_ddp_amp_subgroup(void **state) {
  (void)state;
  struct nsp_job *job = analyze("ddp_amp_subgroup", 4);
  assert_int_equal(nsp_job_nfindings(job), 0);
  assert_int_equal(nsp_job_ncomms(job), 3);
  /* The world (DDP's broadcasts and bucket all-reduces: 25 seqs on 4
   * ranks), and each subgroup's 20 all-gathers on its 2 ranks. */
  size_t total = 0;
  for (size_t i = 0; i < nsp_job_ncomms(job); i++) total += nsp_job_comm(job, i)->ncoll;
  assert_int_equal(total, 180);
  /* One GPU shared by the 4 ranks: one note (the world's), not one per
   * communicator, and no subgroup rank that reads as another job rank. */
  assert_int_equal(nsp_job_nnotes(job), 1);
  assert_non_null(strstr(nsp_job_note(job, 0), "ranks 0-3 (vm) share one GPU"));
  assert_non_null(strstr(nsp_job_note(job, 0), "NCCL_HOSTID=nsp-rank-2 on rank 2,"));
  nsp_job_destroy(job);
}

/* A mismatch named from calls made through dlsym (ctypes, XLA). */
static void check_mismatch(const char *name, int kind, int api, uint64_t c0, int t0, uint64_t c1, int t1) {
  struct nsp_job *job = analyze_killed(name, 2);
  assert_int_equal(nsp_job_ncomms(job), 1);
  const struct nsp_finding *f = nsp_job_finding(job, 0);
  assert_int_equal(f->kind, kind);
  assert_int_equal(f->comm_id, nsp_job_comm(job, 0)->id);
  assert_int_equal(f->seq, 3);
  assert_int_equal(f->nsides, 2);
  assert_int_equal(f->sides[0].nranks, 1);
  assert_int_equal(f->sides[0].ranks[0], 0);
  assert_int_equal(f->sides[0].call.api, api);
  assert_int_equal(f->sides[0].call.count, c0);
  assert_int_equal(f->sides[0].call.dtype, t0);
  assert_int_equal(f->sides[1].ranks[0], 1);
  assert_int_equal(f->sides[1].call.count, c1);
  assert_int_equal(f->sides[1].call.dtype, t1);
  nsp_job_destroy(job);
}

static void test_pynccl_count(void **state) {
  (void)state;
  check_mismatch("pynccl_count", NSP_FIND_COUNT_MISMATCH, NSP_API_AllReduce, 1024, ncclFloat32, 1000, ncclFloat32);
}

static void test_jax_dtype(void **state) {
  (void)state;
  check_mismatch("jax_dtype", NSP_FIND_DTYPE_MISMATCH, NSP_API_AllGather, 8, ncclFloat32, 8, ncclBfloat16);
}

int main(int argc, char **argv) {
  if (argc != 3) return 2;
  data_dir = argv[1];
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ddp_amp),
      cmocka_unit_test(test_c01_amp_dtype),
      cmocka_unit_test(test_c03_main_only),
      cmocka_unit_test(test_c11_straggler),
      cmocka_unit_test(test_dup_gpu),
      cmocka_unit_test(test_rank_crash),
      cmocka_unit_test(test_new_group_skip),
      cmocka_unit_test(test_pynccl_count),
      cmocka_unit_test(test_jax_dtype),
      cmocka_unit_test(test_skip_allreduce),
      cmocka_unit_test(test_ddp_grad_dtype),
      cmocka_unit_test(test_ddp_amp_subgroup),
  };
  char filter[64];
  snprintf(filter, sizeof filter, "test_%s", argv[2]);
  cmocka_set_test_filter(filter);
  return cmocka_run_group_tests_name(argv[2], tests, NULL, NULL);
}
