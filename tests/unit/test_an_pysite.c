/* test_an_pysite.c - Python call sites (PYSITE records, format 1.6) in the
 * analysis and its reports (docs/REPORT.md, "Call sites"): each side's
 * first frame of the program's own comes first in the text report, the
 * library frames around it folded into "... N library frames", printed
 * once for a side whose ranks share the site (by content, not by id); a
 * borrowed stack (a call from a thread without Python) says whose stack
 * it is; the JSON report carries the whole stack; traces without Python
 * sites print their native frames as before; unknown, repeated and huge
 * sites are safe. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>
#include <json-c/json.h>

#include "nsp_an_test.h"
#include "nsp_report.h"
#include "tests/nsp_report_capture.h"

#define WORLD 0xaaaaull
#define SEC 1000000000ull
#define AR(g, c, dt) nsp_tracegen_coll(g, NSP_API_AllReduce, c, 8, dt, ncclSum, -1)

/* Rank 0's stack: three library frames (torch.distributed, its logger
 * wrapper, contextlib) on top of the program's step, main, <module>. */
static const char *const R0_FILES[] = {
    "/opt/conda/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py",
    "/opt/conda/lib/python3.11/site-packages/torch/distributed/c10d_logger.py",
    "/opt/conda/lib/python3.11/contextlib.py",
    "/home/u/proj/train.py",
    "/home/u/proj/train.py",
    "/home/u/proj/train.py"};
static const uint64_t R0_LINES[] = {2501, 81, 81, 42, 88, 120};
static const char *const R0_FUNCS[] = {"all_reduce", "wrapper", "inner", "step", "main", "<module>"};

/* Rank 1's: one library frame on the program's eval_step and main. */
static const char *const R1_FILES[] = {
    "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py", "/home/u/proj/train.py",
    "/home/u/proj/train.py"};
static const uint64_t R1_LINES[] = {2501, 57, 90};
static const char *const R1_FUNCS[] = {"all_reduce", "eval_step", "main"};

/* Occurrences of needle in hay. */
static size_t count_of(const char *hay, const char *needle) {
  size_t n = 0;
  for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle)) n++;
  return n;
}

/* The text from the line that starts "Findings" to the line "Traces". */
static char *findings_part(const char *text) {
  const char *a = strstr(text, "\nFindings");
  const char *b = strstr(text, "\nTraces (");
  assert_non_null(a);
  assert_non_null(b);
  return strndup(a, (size_t)(b - a));
}

static json_object *jget(json_object *o, const char *key) {
  json_object *v = NULL;
  if (!json_object_object_get_ex(o, key, &v)) fail_msg("no member \"%s\" in %s", key, json_object_to_json_string(o));
  return v;
}

/* The JSON report's proc p of side s of finding 0. */
static json_object *jproc(json_object *root, size_t s, size_t p) {
  json_object *f = json_object_array_get_idx(jget(root, "findings"), 0);
  json_object *side = json_object_array_get_idx(jget(f, "sides"), s);
  assert_non_null(side);
  json_object *pr = json_object_array_get_idx(jget(side, "procs"), p);
  assert_non_null(pr);
  return pr;
}

/* Two ranks disagree on the dtype of seq 3 from different lines of one
 * script: each side's line comes first, rank 0's three library frames on
 * top folded; the headline's lines name them; JSON has the whole stacks. */
static void test_mismatch_two_lines(void **state) {
  (void)state;
  struct nsp_tracegen *g[2];
  uint32_t w[2];
  for (int r = 0; r < 2; r++) {
    g[r] = rank_on(r, 2, WORLD, 0, &w[r]);
    for (int i = 0; i < 2; i++) assert_int_equal(AR(g[r], w[r], ncclFloat32), (uint64_t)i + 1);
  }
  assert_int_equal(nsp_tracegen_pysite(g[0], 0, 0, 6, R0_FILES, R0_LINES, R0_FUNCS), 1);
  nsp_tracegen_set_pysite(g[0], 1);
  assert_int_equal(AR(g[0], w[0], ncclFloat16), 3);
  assert_int_equal(nsp_tracegen_pysite(g[1], 0, 0, 3, R1_FILES, R1_LINES, R1_FUNCS), 1);
  nsp_tracegen_set_pysite(g[1], 1);
  assert_int_equal(AR(g[1], w[1], ncclFloat32), 3);
  struct nsp_job *job = job_of_gens_at(g, 2, 0, "");
  assert_int_equal(nsp_job_analyze(job), 0);
  const struct nsp_finding *f = nsp_job_finding(job, 0);
  assert_int_equal(f->kind, NSP_FIND_DTYPE_MISMATCH);
  assert_int_equal(f->nsides, 2);
  /* The model: each side's process has its Python site, first frame of
   * the program's own found. */
  const struct nsp_pysite *ps0 = f->sides[0].procs[0].pysite, *ps1 = f->sides[1].procs[0].pysite;
  assert_non_null(ps0);
  assert_non_null(ps1);
  assert_int_equal(ps0->nframes, 6);
  assert_int_equal(ps0->first, 3);
  assert_string_equal(ps0->frames[3].function, "step");
  assert_int_equal(ps0->frames[3].line, 42);
  assert_true(ps0->frames[2].library); /* contextlib: the standard library */
  assert_false(ps0->frames[4].library);
  assert_int_equal(ps1->first, 1);

  char *text = nsp_report_capture(nsp_report_text, job);
  char *fp = findings_part(text);
  /* The headline's lines: each side's first frame of the program's own. */
  assert_contains(text, "\n  rank 0: /home/u/proj/train.py:42 in step\n");
  assert_contains(text, "\n  rank 1: /home/u/proj/train.py:57 in eval_step\n");
  /* Each side: its line first, then the folded library frames. */
  assert_contains(fp, "Python call site of rank 0:\n            /home/u/proj/train.py:42 in step\n"
                      "            ... 3 library frames called from it, innermost torch/distributed/distributed_c10d.py:2501 in all_reduce\n"
                      "            /home/u/proj/train.py:88 in main\n"
                      "            /home/u/proj/train.py:120 in <module>\n");
  assert_contains(fp, "Python call site of rank 1:\n            /home/u/proj/train.py:57 in eval_step\n"
                      "            ... 1 library frame called from it, innermost torch/distributed/distributed_c10d.py:2501 in all_reduce\n");
  free(fp);
  free(text);

  json_object *root = nsp_report_json_object(job);
  assert_non_null(root);
  json_object *py = jget(jproc(root, 0, 0), "pysite");
  json_object *fr = jget(py, "frames");
  assert_int_equal(json_object_array_length(fr), 6);
  json_object *f0 = json_object_array_get_idx(fr, 0), *f3 = json_object_array_get_idx(fr, 3);
  assert_string_equal(json_object_get_string(jget(f0, "file")), R0_FILES[0]);
  assert_int_equal(json_object_get_int64(jget(f0, "line")), 2501);
  assert_string_equal(json_object_get_string(jget(f0, "function")), "all_reduce");
  assert_true(json_object_get_boolean(jget(f0, "library")));
  assert_string_equal(json_object_get_string(jget(f3, "function")), "step");
  assert_false(json_object_get_boolean(jget(f3, "library")));
  assert_int_equal(json_object_get_int64(jget(py, "first")), 3);
  assert_false(json_object_get_boolean(jget(py, "borrowed")));
  assert_false(json_object_get_boolean(jget(py, "truncated")));
  assert_int_equal(json_object_array_length(jget(jget(jproc(root, 1, 0), "pysite"), "frames")), 3);
  json_object_put(root);
  nsp_job_destroy(job);
}

/* Ranks 0-2 make the call from the same line (their ids differ: rank 1
 * wrote another site first), rank 3 from another: the shared site is
 * printed once for the side. */
static void test_side_shares_site(void **state) {
  (void)state;
  struct nsp_tracegen *g[4];
  uint32_t w[4];
  for (int r = 0; r < 4; r++) {
    g[r] = rank_on(r, 4, WORLD, 0, &w[r]);
    if (r == 1) {
      assert_int_equal(nsp_tracegen_pysite(g[r], 0, 0, 3, R1_FILES, R1_LINES, R1_FUNCS), 1);
      nsp_tracegen_set_pysite(g[r], 1);
      assert_int_equal(AR(g[r], w[r], ncclFloat32), 1);
    } else {
      assert_int_equal(AR(g[r], w[r], ncclFloat32), 1);
    }
    uint32_t id = r == 3 ? nsp_tracegen_pysite(g[r], 0, 0, 3, R1_FILES, R1_LINES, R1_FUNCS)
                         : nsp_tracegen_pysite(g[r], 0, 0, 6, R0_FILES, R0_LINES, R0_FUNCS);
    assert_true(id > 0);
    nsp_tracegen_set_pysite(g[r], id);
    assert_int_equal(AR(g[r], w[r], r == 3 ? ncclFloat16 : ncclFloat32), 2);
  }
  struct nsp_job *job = job_of_gens_at(g, 4, 0, "");
  assert_int_equal(nsp_job_analyze(job), 0);
  const struct nsp_finding *f = nsp_job_finding(job, 0);
  assert_int_equal(f->kind, NSP_FIND_DTYPE_MISMATCH);
  char *text = nsp_report_capture(nsp_report_text, job);
  char *fp = findings_part(text);
  assert_int_equal(count_of(fp, "Python call site of ranks 0-2:\n"), 1);
  assert_int_equal(count_of(fp, "train.py:42 in step\n"), 1);
  assert_int_equal(count_of(fp, "Python call site of rank 3:\n"), 1);
  assert_int_equal(count_of(fp, "Python call site of rank"), 2);
  /* The headline: the odd side first, then the side's line once. */
  assert_contains(text, "\n  rank 3: /home/u/proj/train.py:57 in eval_step\n  ranks 0-2: /home/u/proj/train.py:42 in step\n");
  free(fp);
  free(text);
  nsp_job_destroy(job);
}

/* A hang: rank 0 was killed inside an all-reduce (in flight) that a
 * native thread made while the main thread waited in backward() (a
 * borrowed stack); rank 1 never arrived, its last call made from
 * eval_step.  Both print their lines; the borrowed one says whose stack
 * it is; the Traces section's call in flight names its line too. */
static void test_hang_borrowed(void **state) {
  (void)state;
  struct nsp_tracegen *g[2];
  uint32_t w[2];
  static const char *const bf[] = {"/opt/conda/lib/python3.11/site-packages/torch/autograd/graph.py",
                                   "/opt/conda/lib/python3.11/site-packages/torch/autograd/__init__.py",
                                   "/opt/conda/lib/python3.11/site-packages/torch/_tensor.py", "/home/u/proj/train.py",
                                   "/home/u/proj/train.py"};
  static const uint64_t bl[] = {768, 289, 521, 77, 120};
  static const char *const bn[] = {"_engine_run_backward", "backward", "Tensor.backward", "train_step", "<module>"};
  for (int r = 0; r < 2; r++) {
    g[r] = rank_on(r, 2, WORLD, 1, &w[r]);
    nsp_tracegen_set_exit(g[r], 0);
    if (r == 1) {
      assert_int_equal(nsp_tracegen_pysite(g[r], 0, 0, 3, R1_FILES, R1_LINES, R1_FUNCS), 1);
      nsp_tracegen_set_pysite(g[r], 1);
    }
    for (int i = 0; i < 4; i++) assert_int_equal(AR(g[r], w[r], ncclFloat32), (uint64_t)i + 1);
  }
  assert_int_equal(nsp_tracegen_pysite(g[0], NSP_PYSITE_BORROWED, 4242, 5, bf, bl, bn), 1);
  uint64_t hb = nsp_tracegen_now(g[0]) + 5 * SEC;
  for (int r = 0; r < 2; r++) assert_int_equal(nsp_tracegen_ringstate(g[r], hb, 0, 0, r == 0, 0), 0);
  nsp_tracegen_set_pysite(g[0], 1);
  uint64_t seq = 0;
  assert_int_equal(nsp_tracegen_inflight_coll(g[0], NSP_API_AllReduce, w[0], 8, ncclFloat32, ncclSum, -1, 0, &seq), 0);
  assert_int_equal(seq, 5);
  struct nsp_job *job = job_of_gens_at(g, 2, 0, "");
  assert_int_equal(nsp_job_analyze(job), 0);
  const struct nsp_finding *f = nsp_job_finding(job, 0);
  assert_int_equal(f->kind, NSP_FIND_HANG);
  /* The in-flight call keeps its site. */
  const struct nsp_trace_info *t0 = nsp_job_trace(job, f->sides[1].procs[0].trace);
  assert_int_equal(t0->ninflight, 1);
  assert_non_null(t0->inflight[0].pysite);
  assert_true(t0->inflight[0].pysite->flags & NSP_PYSITE_BORROWED);
  char *text = nsp_report_capture(nsp_report_text, job);
  char *fp = findings_part(text);
  /* Not arrived: rank 1's last call, from eval_step. */
  assert_contains(fp, "            Python call site of its last call:\n                /home/u/proj/train.py:57 in eval_step\n");
  /* Waiting: the main thread's stack, which waited in backward(). */
  assert_contains(fp, "Python stack of the main thread (thread 4242) when the call was made (the call came from a "
                      "thread without Python: an autograd or other native thread, which the main thread may have been "
                      "waiting for, as in backward()):\n"
                      "                /home/u/proj/train.py:77 in train_step\n"
                      "                ... 3 library frames called from it, innermost torch/autograd/graph.py:768 in "
                      "_engine_run_backward\n");
  assert_contains(text, "\n  rank 1: last call from /home/u/proj/train.py:57 in eval_step\n");
  assert_contains(text, "\n  rank 0: /home/u/proj/train.py:77 in train_step (where the main thread was: the call came from a thread "
                        "without Python)\n");
  /* Traces: the call in flight, then its line. */
  assert_contains(text, "to its last sign of life)\n              from /home/u/proj/train.py:77 in train_step (where the "
                        "main thread was: the call came from a thread without Python)\n");
  free(fp);
  free(text);
  json_object *root = nsp_report_json_object(job);
  json_object *py = jget(jproc(root, 1, 0), "pysite");
  assert_true(json_object_get_boolean(jget(py, "borrowed")));
  assert_int_equal(json_object_get_int64(jget(py, "tid")), 4242);
  assert_int_equal(json_object_array_length(jget(py, "frames")), 5);
  json_object *tr = json_object_array_get_idx(jget(root, "traces"), f->sides[1].procs[0].trace);
  json_object *inf = json_object_array_get_idx(jget(tr, "in_flight"), 0);
  assert_non_null(inf);
  assert_int_equal(json_object_array_length(jget(jget(inf, "pysite"), "frames")), 5);
  json_object_put(root);
  nsp_job_destroy(job);
}

/* No Python site: the native frames print as before, no Python line, no
 * pysite in JSON. */
static void test_native_only(void **state) {
  (void)state;
  struct nsp_tracegen *g[2];
  uint32_t w[2];
  static const char *const mods[] = {"/usr/lib/libnccl.so.2", "/srv/app/bin/trainer"};
  static const uint64_t offs[] = {0x1234, 0x5678};
  static const char *const syms[] = {"ncclAllReduce", "train_loop"};
  for (int r = 0; r < 2; r++) {
    g[r] = rank_on(r, 2, WORLD, 0, &w[r]);
    uint32_t id = nsp_tracegen_callsite(g[r], 0, 2, mods, offs, syms);
    assert_int_equal(id, 1);
    nsp_tracegen_set_site(g[r], id);
    assert_int_equal(AR(g[r], w[r], r ? ncclFloat32 : ncclFloat16), 1);
  }
  struct nsp_job *job = job_of_gens_at(g, 2, 0, "");
  assert_int_equal(nsp_job_analyze(job), 0);
  char *text = nsp_report_capture(nsp_report_text, job);
  assert_contains(text, "\n  rank 0: at train_loop (trainer+0x5678)\n");
  assert_contains(text, "call site of rank 0:\n            at train_loop (trainer+0x5678)\n");
  assert_null(strstr(text, "Python"));
  free(text);
  json_object *root = nsp_report_json_object(job);
  json_object *v = NULL;
  assert_false(json_object_object_get_ex(jproc(root, 0, 0), "pysite", &v));
  assert_true(json_object_object_get_ex(jproc(root, 0, 0), "site", &v));
  json_object_put(root);
  nsp_job_destroy(job);
}

/* Hostile input: a call naming an id no PYSITE defined, an id defined
 * twice (the first wins), a stack of 256 frames with long strings (kept
 * bounded, its total said). */
static void test_hostile(void **state) {
  (void)state;
  struct nsp_tracegen *g[2];
  uint32_t w[2];
  for (int r = 0; r < 2; r++) g[r] = rank_on(r, 2, WORLD, 0, &w[r]);
  /* rank 0: id 7 never defined */
  nsp_tracegen_set_pysite(g[0], 7);
  assert_int_equal(AR(g[0], w[0], ncclFloat16), 1);
  /* rank 1: site 1, then a second record with id 1 (ignored), then a huge one */
  assert_int_equal(nsp_tracegen_pysite(g[1], 0, 0, 3, R1_FILES, R1_LINES, R1_FUNCS), 1);
  assert_int_equal(nsp_tracegen_pysite_as(g[1], 1, 0, 0, 6, R0_FILES, R0_LINES, R0_FUNCS), 0);
  enum { HUGE = 256 };
  static char big[4096];
  memset(big, 'x', sizeof big - 1);
  const char *hf[HUGE], *hn[HUGE];
  uint64_t hl[HUGE];
  for (int i = 0; i < HUGE; i++) hf[i] = big, hn[i] = big, hl[i] = (uint64_t)i;
  assert_int_equal(nsp_tracegen_pysite(g[1], NSP_PYSITE_TRUNCATED, 0, HUGE, hf, hl, hn), 2);
  nsp_tracegen_set_pysite(g[1], 1);
  assert_int_equal(AR(g[1], w[1], ncclFloat32), 1);
  nsp_tracegen_set_pysite(g[1], 2);
  assert_int_equal(AR(g[1], w[1], ncclFloat32), 2);
  assert_int_equal(AR(g[0], w[0], ncclFloat32), 2);
  struct nsp_job *job = job_of_gens_at(g, 2, 0, "");
  assert_int_equal(nsp_job_analyze(job), 0);
  const struct nsp_finding *f = nsp_job_finding(job, 0);
  assert_int_equal(f->kind, NSP_FIND_DTYPE_MISMATCH);
  assert_null(f->sides[0].procs[0].pysite);
  const struct nsp_pysite *ps = f->sides[1].procs[0].pysite;
  assert_non_null(ps);
  assert_int_equal(ps->nframes, 3); /* the first record of id 1 */
  assert_string_equal(ps->frames[1].function, "eval_step");
  char *text = nsp_report_capture(nsp_report_text, job);
  free(text);
  nsp_job_destroy(job);
  /* The huge site alone, as the call at a mismatch. */
  for (int r = 0; r < 2; r++) g[r] = rank_on(r, 2, WORLD, 0, &w[r]);
  assert_int_equal(nsp_tracegen_pysite(g[1], NSP_PYSITE_TRUNCATED, 0, HUGE, hf, hl, hn), 1);
  nsp_tracegen_set_pysite(g[1], 1);
  assert_int_equal(AR(g[0], w[0], ncclFloat16), 1);
  assert_int_equal(AR(g[1], w[1], ncclFloat32), 1);
  job = job_of_gens_at(g, 2, 0, "");
  assert_int_equal(nsp_job_analyze(job), 0);
  ps = nsp_job_finding(job, 0)->sides[1].procs[0].pysite;
  assert_non_null(ps);
  assert_true(ps->nframes <= 64);
  assert_int_equal(ps->ntotal, HUGE);
  assert_true(ps->flags & NSP_PYSITE_TRUNCATED);
  assert_true(strlen(ps->frames[0].file) <= 512);
  text = nsp_report_capture(nsp_report_text, job);
  assert_contains(text, "deeper frames not recorded");
  free(text);
  nsp_job_destroy(job);
}

/* A process killed inside ncclCommDestroy (call-never-returned): its
 * side names the Python line that called it, from the INFLIGHT record. */
static void test_never_returned(void **state) {
  (void)state;
  static const char *const df[] = {"/opt/conda/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py",
                                   "/home/u/proj/train.py"};
  static const uint64_t dl[] = {2100, 140};
  static const char *const dn[] = {"destroy_process_group", "cleanup"};
  struct nsp_tracegen *g[2];
  uint32_t w[2];
  for (int r = 0; r < 2; r++) {
    g[r] = rank_on(r, 2, WORLD, 1, &w[r]);
    assert_int_equal(AR(g[r], w[r], ncclFloat32), 1);
  }
  nsp_tracegen_set_exit(g[0], 0);
  assert_int_equal(nsp_tracegen_pysite(g[0], 0, 0, 2, df, dl, dn), 1);
  assert_int_equal(nsp_tracegen_ringstate(g[0], nsp_tracegen_now(g[0]) + 5 * SEC, 0, 0, 1, 0), 0);
  nsp_tracegen_set_pysite(g[0], 1);
  assert_int_equal(nsp_tracegen_inflight_call(g[0], NSP_API_CommDestroy, w[0], 0), 0);
  struct nsp_job *job = job_of_gens_at(g, 2, 0, "");
  assert_int_equal(nsp_job_analyze(job), 0);
  const struct nsp_finding *f = nsp_job_finding(job, 0);
  assert_int_equal(f->kind, NSP_FIND_CALL_NEVER_RETURNED);
  assert_non_null(f->sides[0].procs[0].pysite);
  char *text = nsp_report_capture(nsp_report_text, job);
  assert_contains(text, "\n  rank 0: /home/u/proj/train.py:140 in cleanup\n");
  assert_contains(text, "Python call site of rank 0:\n            /home/u/proj/train.py:140 in cleanup\n");
  free(text);
  nsp_job_destroy(job);
}

/* The user's own NCCL wrapper (a PyNccl copy): every rank calls through
 * Nccl.ar at pync.py:49, ranks 0,2 from even_step and ranks 1,3 from
 * odd_step; ranks 0,2 also have a library frame inside the wrapper (the
 * stacks are compared from the shown frame, not by index).  The shown
 * frames are the same, so each headline line names its own caller, the
 * wrapper after "via". */
static const char *const W_EVEN_FILES[] = {"/usr/lib/python3.11/contextlib.py", "/srv/job/pync.py",
                                           "/srv/job/four.py", "/srv/job/four.py"};
static const uint64_t W_EVEN_LINES[] = {81, 49, 8, 11};
static const char *const W_EVEN_FUNCS[] = {"inner", "Nccl.ar", "even_step", "<module>"};
static const char *const W_ODD_FILES[] = {"/srv/job/pync.py", "/srv/job/four.py", "/srv/job/four.py"};
static const uint64_t W_ODD_LINES[] = {49, 10, 11};
static const char *const W_ODD_FUNCS[] = {"Nccl.ar", "odd_step", "<module>"};

static void test_wrapper_callers(void **state) {
  (void)state;
  struct nsp_tracegen *g[4];
  uint32_t w[4];
  for (int r = 0; r < 4; r++) {
    g[r] = rank_on(r, 4, WORLD, 0, &w[r]);
    assert_int_equal(AR(g[r], w[r], ncclFloat32), 1);
    uint32_t id = r % 2 ? nsp_tracegen_pysite(g[r], 0, 0, 3, W_ODD_FILES, W_ODD_LINES, W_ODD_FUNCS)
                        : nsp_tracegen_pysite(g[r], 0, 0, 4, W_EVEN_FILES, W_EVEN_LINES, W_EVEN_FUNCS);
    assert_int_equal(id, 1);
    nsp_tracegen_set_pysite(g[r], id);
    assert_int_equal(nsp_tracegen_coll(g[r], NSP_API_AllReduce, w[r], r % 2 ? 1000 : 1024, ncclFloat32, ncclSum, -1), 2);
  }
  struct nsp_job *job = job_of_gens_at(g, 4, 0, "");
  assert_int_equal(nsp_job_analyze(job), 0);
  const struct nsp_finding *f = nsp_job_finding(job, 0);
  assert_int_equal(f->kind, NSP_FIND_COUNT_MISMATCH);
  char *text = nsp_report_capture(nsp_report_text, job);
  assert_contains(text, "\n  ranks 0,2: /srv/job/four.py:8 in even_step (via pync.py:49 in Nccl.ar)\n"
                        "  ranks 1,3: /srv/job/four.py:10 in odd_step (via pync.py:49 in Nccl.ar)\n\n");
  /* The findings' blocks list the frames as before. */
  char *fp = findings_part(text);
  assert_contains(fp, "Python call site of ranks 0,2:\n            /srv/job/pync.py:49 in Nccl.ar\n"
                      "            ... 1 library frame called from it, innermost contextlib.py:81 in inner\n"
                      "            /srv/job/four.py:8 in even_step\n");
  assert_null(strstr(fp, "(via"));
  free(fp);
  free(text);
  nsp_job_destroy(job);
}

/* The same shown line and the same callers, but the library frames it
 * called differ (a wrapper dispatching by name): each line names the
 * library frame after "calling". */
static void test_wrapper_calls_differ(void **state) {
  (void)state;
  static const char *const cf[] = {"/opt/conda/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py",
                                   "/home/u/proj/train.py", "/home/u/proj/train.py"};
  static const uint64_t c0l[] = {2501, 42, 88}, c1l[] = {2700, 42, 88};
  static const char *const c0n[] = {"all_reduce", "step", "main"}, *const c1n[] = {"broadcast", "step", "main"};
  struct nsp_tracegen *g[2];
  uint32_t w[2];
  for (int r = 0; r < 2; r++) {
    g[r] = rank_on(r, 2, WORLD, 0, &w[r]);
    assert_int_equal(nsp_tracegen_pysite(g[r], 0, 0, 3, cf, r ? c1l : c0l, r ? c1n : c0n), 1);
    nsp_tracegen_set_pysite(g[r], 1);
    assert_int_equal(AR(g[r], w[r], r ? ncclFloat32 : ncclFloat16), 1);
  }
  struct nsp_job *job = job_of_gens_at(g, 2, 0, "");
  assert_int_equal(nsp_job_analyze(job), 0);
  char *text = nsp_report_capture(nsp_report_text, job);
  assert_contains(text, "\n  rank 0: /home/u/proj/train.py:42 in step (calling torch/distributed/distributed_c10d.py:2501 "
                        "in all_reduce)\n  rank 1: /home/u/proj/train.py:42 in step (calling "
                        "torch/distributed/distributed_c10d.py:2700 in broadcast)\n\n");
  free(text);
  nsp_job_destroy(job);
}

/* Rank 1's stack was cut right after the wrapper's frame: its callers
 * are not known, so rank 0's line does not claim its caller differs. */
static void test_wrapper_cut_stack(void **state) {
  (void)state;
  struct nsp_tracegen *g[2];
  uint32_t w[2];
  for (int r = 0; r < 2; r++) {
    g[r] = rank_on(r, 2, WORLD, 0, &w[r]);
    assert_int_equal(r ? nsp_tracegen_pysite(g[r], NSP_PYSITE_TRUNCATED, 0, 1, W_ODD_FILES, W_ODD_LINES, W_ODD_FUNCS)
                       : nsp_tracegen_pysite(g[r], 0, 0, 3, W_ODD_FILES, W_ODD_LINES, W_ODD_FUNCS),
                     1);
    nsp_tracegen_set_pysite(g[r], 1);
    assert_int_equal(AR(g[r], w[r], r ? ncclFloat32 : ncclFloat16), 1);
  }
  struct nsp_job *job = job_of_gens_at(g, 2, 0, "");
  assert_int_equal(nsp_job_analyze(job), 0);
  char *text = nsp_report_capture(nsp_report_text, job);
  assert_contains(text, "\n  rank 0: /srv/job/pync.py:49 in Nccl.ar\n  rank 1: /srv/job/pync.py:49 in Nccl.ar\n\n");
  free(text);
  nsp_job_destroy(job);
}

/* The same shown frame and the same stack on both sides (by content; the
 * sides differ in the dtype only): the headline is as it was, no "via". */
static void test_same_stack_unchanged(void **state) {
  (void)state;
  struct nsp_tracegen *g[2];
  uint32_t w[2];
  for (int r = 0; r < 2; r++) {
    g[r] = rank_on(r, 2, WORLD, 0, &w[r]);
    if (r) assert_int_equal(nsp_tracegen_pysite(g[r], 0, 0, 3, R1_FILES, R1_LINES, R1_FUNCS), 1);
    uint32_t id = nsp_tracegen_pysite(g[r], 0, 0, 6, R0_FILES, R0_LINES, R0_FUNCS);
    assert_int_equal(id, r ? 2 : 1);
    nsp_tracegen_set_pysite(g[r], id);
    assert_int_equal(AR(g[r], w[r], r ? ncclFloat32 : ncclFloat16), 1);
  }
  struct nsp_job *job = job_of_gens_at(g, 2, 0, "");
  assert_int_equal(nsp_job_analyze(job), 0);
  assert_int_equal(nsp_job_finding(job, 0)->kind, NSP_FIND_DTYPE_MISMATCH);
  char *text = nsp_report_capture(nsp_report_text, job);
  assert_contains(text, "\n  rank 0: /home/u/proj/train.py:42 in step\n  rank 1: /home/u/proj/train.py:42 in step\n\n");
  assert_null(strstr(text, "(via"));
  assert_null(strstr(text, "last call"));
  free(text);
  nsp_job_destroy(job);
}

/* hang.py through the wrapper: rank 0 waits inside seq 2, called from
 * train_step; rank 1 never called it, its last call (seq 1) was from
 * <module>.  Rank 1's line is its last call's and says so; both name
 * their caller of the shared wrapper line. */
static void test_hang_last_call_label(void **state) {
  (void)state;
  static const char *const hf[] = {"/srv/job/pync.py", "/srv/job/hang.py", "/srv/job/hang.py"};
  static const uint64_t h0l[] = {49, 9, 15}, h1l[] = {49, 6};
  static const char *const h0n[] = {"Nccl.ar", "train_step", "<module>"}, *const h1n[] = {"Nccl.ar", "<module>"};
  struct nsp_tracegen *g[2];
  uint32_t w[2];
  for (int r = 0; r < 2; r++) {
    g[r] = rank_on(r, 2, WORLD, 1, &w[r]);
    nsp_tracegen_set_exit(g[r], 0);
    assert_int_equal(nsp_tracegen_pysite(g[r], 0, 0, 2, hf, h1l, h1n), 1);
    nsp_tracegen_set_pysite(g[r], 1);
    assert_int_equal(AR(g[r], w[r], ncclFloat32), 1);
  }
  assert_int_equal(nsp_tracegen_pysite(g[0], 0, 0, 3, hf, h0l, h0n), 2);
  uint64_t hb = nsp_tracegen_now(g[0]) + 5 * SEC;
  for (int r = 0; r < 2; r++) assert_int_equal(nsp_tracegen_ringstate(g[r], hb, 0, 0, r == 0, 0), 0);
  nsp_tracegen_set_pysite(g[0], 2);
  uint64_t seq = 0;
  assert_int_equal(nsp_tracegen_inflight_coll(g[0], NSP_API_AllReduce, w[0], 8, ncclFloat32, ncclSum, -1, 0, &seq), 0);
  assert_int_equal(seq, 2);
  struct nsp_job *job = job_of_gens_at(g, 2, 0, "");
  assert_int_equal(nsp_job_analyze(job), 0);
  const struct nsp_finding *f = nsp_job_finding(job, 0);
  assert_int_equal(f->kind, NSP_FIND_HANG);
  char *text = nsp_report_capture(nsp_report_text, job);
  assert_contains(text, "(hang)\n  rank 1: last call from /srv/job/hang.py:6 in <module> (via pync.py:49 in Nccl.ar)\n"
                        "  rank 0: /srv/job/hang.py:9 in train_step (via pync.py:49 in Nccl.ar)\n\n");
  /* The not-arrived rank's block says it is its last call's. */
  char *fp = findings_part(text);
  assert_contains(fp, "            Python call site of its last call:\n                /srv/job/pync.py:49 in Nccl.ar\n"
                      "                /srv/job/hang.py:6 in <module>\n");
  assert_contains(fp, "            Python call site:\n                /srv/job/pync.py:49 in Nccl.ar\n"
                      "                /srv/job/hang.py:9 in train_step\n");
  free(fp);
  free(text);
  nsp_job_destroy(job);
}

/* stopped-early: every side's site is its last call's. */
static void test_stopped_early_last_call(void **state) {
  (void)state;
  struct nsp_tracegen *g[2];
  uint32_t w[2];
  for (int r = 0; r < 2; r++) {
    g[r] = rank_on(r, 2, WORLD, 0, &w[r]);
    assert_int_equal(nsp_tracegen_pysite(g[r], 0, 0, 3, R1_FILES, R1_LINES, R1_FUNCS), 1);
    nsp_tracegen_set_pysite(g[r], 1);
    for (int i = 0; i < 2; i++) assert_int_equal(AR(g[r], w[r], ncclFloat32), (uint64_t)i + 1);
  }
  assert_int_equal(nsp_tracegen_pysite(g[0], 0, 0, 6, R0_FILES, R0_LINES, R0_FUNCS), 2);
  nsp_tracegen_set_pysite(g[0], 2);
  for (int i = 2; i < 4; i++) assert_int_equal(AR(g[0], w[0], ncclFloat32), (uint64_t)i + 1);
  struct nsp_job *job = job_of_gens_at(g, 2, 0, "");
  assert_int_equal(nsp_job_analyze(job), 0);
  assert_int_equal(nsp_job_finding(job, 0)->kind, NSP_FIND_STOPPED_EARLY);
  char *text = nsp_report_capture(nsp_report_text, job);
  assert_contains(text, "(stopped early)\n  rank 1: last call from /home/u/proj/train.py:57 in eval_step\n"
                        "  rank 0: last call from /home/u/proj/train.py:42 in step\n\n");
  free(text);
  nsp_job_destroy(job);
}

/* The library-frame table: which paths are library code and the part
 * of each that the report shows. */
static void test_library_table(void **state) {
  (void)state;
  static const struct {
    const char *file, *shown; /* shown NULL: the program's own */
  } t[] = {
      {"/opt/conda/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py",
       "torch/distributed/distributed_c10d.py"},
      {"torch/nn/parallel/distributed.py", "torch/nn/parallel/distributed.py"},
      {"/usr/lib/python3/dist-packages/torch/nn/modules/module.py", "torch/nn/modules/module.py"},
      {"/usr/lib/python3/dist-packages/torch/nn/modules/module.pyx", NULL},
      {"/usr/lib/python3.12/contextlib.py", "contextlib.py"},
      {"/opt/conda/lib64/python3.10/threading.py", "threading.py"},
      {"<frozen runpy>", "<frozen runpy>"},
      {"/opt/conda/lib/python3.11/site-packages/mypkg/model.py", NULL},
      {"/usr/lib/python3/dist-packages/mypkg/model.py", NULL},
      {"/home/u/mytorch/distributed/x.py", NULL},
      {"/home/u/proj/train.py", NULL},
      {"", NULL},
  };
  for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
    size_t at = SIZE_MAX;
    int lib = nsp_pyframe_library(t[i].file, &at);
    if (lib != (t[i].shown != NULL)) fail_msg("%s: library %d", t[i].file, lib);
    if (lib) assert_string_equal(t[i].file + at, t[i].shown);
  }
  assert_true(nsp_pyframe_nlibrary() > 10);
  assert_null(nsp_pyframe_library_row(nsp_pyframe_nlibrary(), NULL));
}

/* `ncclspy dump` writes PYSITE records and CALL's pysite: file:line
 * function in text, {file, line, function} in JSON. */
static void test_dump(void **state) {
  (void)state;
  char dir[] = "/tmp/nsp_pysite_XXXXXX", path[512];
  assert_non_null(mkdtemp(dir));
  uint32_t w;
  struct nsp_tracegen *g = rank_on(0, 1, WORLD, 0, &w);
  assert_int_equal(nsp_tracegen_pysite(g, NSP_PYSITE_BORROWED, 77, 3, R1_FILES, R1_LINES, R1_FUNCS), 1);
  nsp_tracegen_set_pysite(g, 1);
  assert_int_equal(AR(g, w, ncclFloat32), 1);
  assert_int_equal(nsp_tracegen_write(g, dir, SIZE_MAX, path, sizeof path), 0);
  nsp_tracegen_destroy(g);
  for (int json = 0; json < 2; json++) {
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    assert_non_null(out);
    assert_int_equal(nsp_dump_file(path, json, out, stderr), 0);
    assert_int_equal(fclose(out), 0);
    if (json) {
      assert_contains(buf, "\"record\":\"pysite\"");
      assert_contains(buf, "{\"file\":\"/home/u/proj/train.py\",\"line\":57,\"function\":\"eval_step\"}");
    } else {
      assert_contains(buf, "PYSITE site=1 flags=0x1(borrowed) tid=77 frames=3 [");
      assert_contains(buf, "\"/home/u/proj/train.py\":57 \"eval_step\"");
      assert_contains(buf, " pysite=1");
    }
    free(buf);
  }
  assert_int_equal(unlink(path), 0);
  assert_int_equal(rmdir(dir), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_mismatch_two_lines), cmocka_unit_test(test_side_shares_site),
      cmocka_unit_test(test_hang_borrowed),      cmocka_unit_test(test_native_only),
      cmocka_unit_test(test_hostile),           cmocka_unit_test(test_dump),
      cmocka_unit_test(test_never_returned),     cmocka_unit_test(test_library_table),
      cmocka_unit_test(test_wrapper_callers),    cmocka_unit_test(test_same_stack_unchanged),
      cmocka_unit_test(test_hang_last_call_label), cmocka_unit_test(test_stopped_early_last_call),
      cmocka_unit_test(test_wrapper_calls_differ), cmocka_unit_test(test_wrapper_cut_stack),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
