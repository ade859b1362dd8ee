/* test_pysite.c - the Python call-site reader (shim/nsp_pysite_read.c):
 * line tables of CPython 3.10 and 3.11 to 3.13 (real ones, made by
 * pysite_lines.py under each interpreter, and hand-made ones from the
 * specs), and frame walks over fake interpreter memory in each version's
 * layout (3.13's from a fake _Py_DebugOffsets), a corrupt one included. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nsp_pysite.h"

struct pysite_lines {
  const char *name;
  int firstlineno;
  const unsigned char *tab;
  size_t ntab;
  const int (*exp)[2];
  size_t nexp;
};
#include "pysite_lines_10.h"
#include "pysite_lines_11.h"
#include "pysite_lines_12.h"
#include "pysite_lines_13.h"

static void check_real(const struct pysite_lines *t, size_t n, int minor) {
  size_t checked = 0;
  for (size_t k = 0; k < n; k++)
    for (size_t i = 0; i < t[k].nexp; i++) {
      int lasti = t[k].exp[i][0], want = t[k].exp[i][1];
      int got = minor == 10 ? nsp_pysite_read_line310(t[k].tab, t[k].ntab, t[k].firstlineno, lasti)
                            : nsp_pysite_read_line311(t[k].tab, t[k].ntab, t[k].firstlineno, lasti);
      if (got != want) fail_msg("3.%d %s: instruction %d: line %d, co_lines() says %d", minor, t[k].name, lasti, got, want);
      checked++;
    }
  assert_true(checked > 50);
}

static void real_tables(void **state) {
  (void)state;
  check_real(lines10, sizeof lines10 / sizeof *lines10, 10);
  check_real(lines11, sizeof lines11 / sizeof *lines11, 11);
  check_real(lines12, sizeof lines12 / sizeof *lines12, 12);
  check_real(lines13, sizeof lines13 / sizeof *lines13, 13);
}

/* PEP 626: (offset delta in bytes, line delta) pairs; -128 no line; a
 * line delta beyond a byte takes pairs of offset delta 0. */
static const uint8_t tab310[] = {4, 1, 6, 2, 0, 127, 2, 3, 2, 0x80};
static void hand_310(void **state) {
  (void)state;
  int want[] = {101, 101, 103, 103, 103, 233, -1};
  for (int i = 0; i < 7; i++) assert_int_equal(nsp_pysite_read_line310(tab310, sizeof tab310, 100, i), want[i]);
  assert_int_equal(nsp_pysite_read_line310(tab310, sizeof tab310, 100, 7), -1); /* past the end */
  assert_int_equal(nsp_pysite_read_line310(tab310, sizeof tab310, 100, -1), 100);
}

/* Objects/locations.md: short form (code 0), one-line form (code 11:
 * delta 1), no column (code 13, svarint -2), long form (code 14, +40 in
 * two 6-bit chunks), no location (code 15). */
static const uint8_t tab311[] = {0x81, 0x00, 0xda, 0x01, 0x02, 0xe8, 0x05, 0xf1, 0x50, 0x01, 0x00, 0x01, 0x02, 0xf8};
static void hand_311(void **state) {
  (void)state;
  int want[] = {10, 10, 11, 11, 11, 9, 49, 49, -1, -1};
  for (int i = 0; i < 10; i++) assert_int_equal(nsp_pysite_read_line311(tab311, sizeof tab311, 10, i), want[i]);
  /* A table cut inside an entry gives no line, not a read past it. */
  assert_int_equal(nsp_pysite_read_line311(tab311, 9, 10, 6), -1);
}

/* ---- fake interpreter memory ---- */

static uint64_t code_type[8], unicode_type[8], bytes_type[8], frame_type[8];

/* Every fake object, freed after each test (free_objs). */
static void *nsp_objs[4096];
static size_t nsp_nobjs;

static uint8_t *obj(size_t n) {
  uint8_t *p = calloc(1, n + 64);
  assert_non_null(p);
  assert_true(nsp_nobjs < sizeof nsp_objs / sizeof *nsp_objs);
  nsp_objs[nsp_nobjs++] = p;
  return p;
}

static int free_objs(void **state) {
  (void)state;
  while (nsp_nobjs) free(nsp_objs[--nsp_nobjs]);
  return 0;
}
static void put_ptr(uint8_t *p, uint32_t off, const void *v) {
  uintptr_t x = (uintptr_t)v;
  memcpy(p + off, &x, sizeof x);
}
static void put_i32(uint8_t *p, uint32_t off, int32_t v) { memcpy(p + off, &v, sizeof v); }
static void put_i64(uint8_t *p, uint32_t off, int64_t v) { memcpy(p + off, &v, sizeof v); }

/* A compact str: ASCII, or UCS-2 with (utf8) or without a UTF-8 copy. */
static uint8_t *mk_str(const struct nsp_pysite_layout *L, const char *s, int ucs2) {
  size_t n = strlen(s);
  uint8_t *o = obj(L->u_compact_size + 4 * n + 8);
  put_ptr(o, L->ob_type, unicode_type);
  put_i64(o, L->u_length, (int64_t)n);
  uint32_t st = (ucs2 ? 2u : 1u) << 2 | 1u << 5 | (ucs2 ? 0 : 1u << 6);
  memcpy(o + L->u_state, &st, sizeof st);
  if (!ucs2) memcpy(o + L->u_ascii_size, s, n);
  else {
    for (size_t i = 0; i < n; i++) {
      uint16_t c = (uint8_t)s[i] == '~' ? 0x00e9 : (uint8_t)s[i];
      memcpy(o + L->u_compact_size + 2 * i, &c, 2);
    }
  }
  return o;
}
static uint8_t *mk_bytes(const struct nsp_pysite_layout *L, const uint8_t *b, size_t n) {
  uint8_t *o = obj(L->b_sval + n);
  put_ptr(o, L->ob_type, bytes_type);
  put_i64(o, L->b_size, (int64_t)n);
  memcpy(o + L->b_sval, b, n);
  return o;
}
static uint8_t *mk_code(const struct nsp_pysite_layout *L, uint8_t *file, uint8_t *func, int first) {
  uint8_t *o = obj(1024);
  put_ptr(o, L->ob_type, code_type);
  put_ptr(o, L->co_filename, file);
  put_ptr(o, L->co_name, func);
  put_i32(o, L->co_firstlineno, first);
  put_ptr(o, L->co_linetable,
          L->minor == 10 ? mk_bytes(L, tab310, sizeof tab310) : mk_bytes(L, tab311, sizeof tab311));
  if (L->co_firsttraceable >= 0) put_i32(o, (uint32_t)L->co_firsttraceable, 1);
  return o;
}
/* A frame of code at instruction lasti; owner for 3.11+. */
static uint8_t *mk_frame(const struct nsp_pysite_layout *L, uint8_t *code, int lasti, uint8_t *prev, int owner) {
  uint8_t *f = obj(256);
  put_ptr(f, L->fr_previous, prev);
  put_ptr(f, L->fr_code, code);
  if (L->minor == 10) {
    put_ptr(f, L->ob_type, frame_type);
    put_i32(f, L->fr_instr, lasti);
  } else {
    put_ptr(f, L->fr_instr, code + L->co_code_adaptive + 2 * lasti);
    f[L->fr_owner] = (uint8_t)owner;
  }
  return f;
}
static uint8_t *mk_tstate(const struct nsp_pysite_layout *L, uint8_t *frame) {
  uint8_t *t = obj(512);
  if (L->cf_current >= 0) {
    uint8_t *cf = obj(64);
    put_ptr(cf, (uint32_t)L->cf_current, frame);
    put_ptr(t, L->ts_frame, cf);
  } else put_ptr(t, L->ts_frame, frame);
  return t;
}

/* _Py_DebugOffsets as CPython 3.13.0 fills it (x86-64; offsetof on its
 * headers), at the byte offsets of its members. */
static void fake_debug_offsets(uint8_t *d) {
  memset(d, 0, 584);
  memcpy(d, "xdebugpy", 8);
  uint64_t v[][2] = {
      {8, 0x030d00f0},                                                  /* version */
      {152, 12376}, {160, 0}, {168, 8}, {176, 16}, {184, 72}, {192, 136}, {200, 160}, /* thread_state */
      {224, 80}, {232, 8}, {240, 0}, {248, 56}, {256, 72}, {264, 70},   /* interpreter_frame */
      {272, 208}, {280, 112}, {288, 120}, {296, 128}, {304, 136}, {312, 68}, {344, 200}, /* code_object */
      {352, 16}, {360, 8},                                              /* pyobject */
      {512, 40}, {520, 16}, {528, 32},                                  /* bytes_object */
      {536, 40}, {544, 32}, {552, 16}, {560, 40},                       /* unicode_object */
  };
  for (size_t i = 0; i < sizeof v / sizeof *v; i++) memcpy(d + v[i][0], &v[i][1], 8);
}

static void layout_of(struct nsp_pysite_layout *L, int minor) {
  if (minor == 13) {
    uint8_t d[600];
    const char *why;
    fake_debug_offsets(d);
    assert_int_equal(nsp_pysite_read_layout_313(L, d, &why), 0);
  } else assert_int_equal(nsp_pysite_read_layout_known(L, minor), 0);
  L->code_type = (uintptr_t)code_type;
  L->unicode_type = (uintptr_t)unicode_type;
  L->bytes_type = (uintptr_t)bytes_type;
  L->frame_type = minor == 10 ? (uintptr_t)frame_type : 0;
}

/* main() at line 2 of job.py calls train() whose line calls step(), in
 * which the collective is called; 3.12+ have a C-stack entry frame
 * between train and step. */
static void walk_version(int minor, int safe) {
  struct nsp_pysite_layout L;
  layout_of(&L, minor);
  uint8_t *file = mk_str(&L, "/job/train.py", 0);
  /* 3.10 names a function by co_name, later ones by co_qualname. */
  uint8_t *c_main = mk_code(&L, file, mk_str(&L, "main", 0), 100);
  uint8_t *c_train = mk_code(&L, file, mk_str(&L, "Trainer.train", 0), 200);
  uint8_t *c_step = mk_code(&L, mk_str(&L, "/job/caf~.py", 1), mk_str(&L, "st~p", 1), 300);
  uint8_t *f_main = mk_frame(&L, c_main, minor == 10 ? 2 : 2, NULL, 0);
  uint8_t *f_train = mk_frame(&L, c_train, minor == 10 ? 5 : 6, f_main, 0);
  uint8_t *f_entry = L.owner_cstack >= 0 ? mk_frame(&L, c_main, 0, f_train, L.owner_cstack) : f_train;
  /* 3.11+: an incomplete frame (before _co_firsttraceable) is skipped. */
  uint8_t *f_step = mk_frame(&L, c_step, minor == 10 ? 0 : 2, f_entry, 0);
  uint8_t *f_inc = minor == 11 || minor == 12 ? mk_frame(&L, c_step, 0, f_step, 0) : f_step;
  uint8_t *ts = mk_tstate(&L, f_inc);

  struct nsp_pysite_raw raw[8];
  int trunc;
  int n = nsp_pysite_read_walk(&L, (uintptr_t)ts, safe, raw, 8, &trunc);
  assert_int_equal(n, 3);
  assert_int_equal(trunc, 0);
  assert_ptr_equal((void *)raw[0].code, c_step);
  assert_ptr_equal((void *)raw[2].code, c_main);
  struct nsp_pysite_frame fr;
  /* é (UCS-2 0x00e9) as UTF-8, not '?': names that differ only there
   * stay different. */
  const char *files[] = {"/job/caf\xc3\xa9.py", "/job/train.py", "/job/train.py"};
  const char *funcs[] = {"st\xc3\xa9p", "Trainer.train", "main"};
  for (int i = 0; i < 3; i++) {
    assert_int_equal(nsp_pysite_read_resolve(&L, &raw[i], safe, &fr), 0);
    assert_string_equal(fr.file, files[i]);
    assert_string_equal(fr.func, funcs[i]);
  }
  assert_int_equal(nsp_pysite_read_resolve(&L, &raw[0], safe, &fr), 0);
  int l0 = fr.line;
  assert_int_equal(nsp_pysite_read_resolve(&L, &raw[1], safe, &fr), 0);
  int l1 = fr.line;
  assert_int_equal(nsp_pysite_read_resolve(&L, &raw[2], safe, &fr), 0);
  int l2 = fr.line;
  if (minor == 10) { /* lasti 0 -> 101-100+first; 5 -> 233-100+first; 2 -> 103-100+first */
    assert_int_equal(l0, 301);
    assert_int_equal(l1, 333);
    assert_int_equal(l2, 103);
  } else { /* lasti 2 -> 11-10+first; 6 -> 49-10+first */
    assert_int_equal(l0, 301);
    assert_int_equal(l1, 239);
    assert_int_equal(l2, 101);
  }

  /* Depth 2 of 3: the outermost is left out, and said to be. */
  n = nsp_pysite_read_walk(&L, (uintptr_t)ts, safe, raw, 2, &trunc);
  assert_int_equal(n, 2);
  assert_int_equal(trunc, 1);

  /* Once the layout is trusted, the calling thread's own frames are walked
   * without reading code objects: the same code objects and order. */
  if (!safe) {
    struct nsp_pysite_raw fast[8];
    L.trusted = 1;
    /* (3.11 and 3.12's incomplete frame is kept: no code object is read
     * to tell; a thread inside a call has none in its chain) */
    int nf = minor == 11 || minor == 12 ? 4 : 3;
    assert_int_equal(nsp_pysite_read_walk(&L, (uintptr_t)ts, 0, fast, 8, &trunc), nf);
    assert_ptr_equal((void *)fast[0].code, c_step);
    assert_ptr_equal((void *)fast[nf - 1].code, c_main);
    L.trusted = 0;
  }

  /* A long path keeps its end (the file's name), marked as cut. */
  char longp[1200];
  memset(longp, 'd', sizeof longp);
  longp[0] = '/';
  strcpy(longp + sizeof longp - 20, "/long_module.py");
  uint8_t *c_long = mk_code(&L, mk_str(&L, longp, 0), mk_str(&L, "f", 0), 10);
  raw[0].code = (uintptr_t)c_long;
  assert_int_equal(nsp_pysite_read_resolve(&L, &raw[0], safe, &fr), 0);
  assert_int_equal(strlen(fr.file), 511);
  assert_true(!strncmp(fr.file, "...ddd", 6));
  assert_string_equal(fr.file + 511 - 15, "/long_module.py");

  /* No frames: a thread state of a thread that runs no Python. */
  assert_int_equal(nsp_pysite_read_walk(&L, (uintptr_t)mk_tstate(&L, NULL), safe, raw, 8, &trunc), 0);

  /* A corrupt layout: the middle code object's type is not code. */
  put_ptr(c_train, L.ob_type, unicode_type);
  assert_int_equal(nsp_pysite_read_walk(&L, (uintptr_t)ts, safe, raw, 8, &trunc), -1);
  put_ptr(c_train, L.ob_type, code_type);
  /* A filename that is not a str: no frame. */
  put_ptr(c_main, L.co_filename, c_main);
  raw[0].code = (uintptr_t)c_main;
  assert_int_equal(nsp_pysite_read_resolve(&L, &raw[0], safe, &fr), -1);
  /* A cycle in the frame chain: bounded, no site. */
  put_ptr(f_main, L.fr_previous, f_train);
  assert_int_equal(nsp_pysite_read_walk(&L, (uintptr_t)ts, safe, raw, 8, &trunc), -1);
  assert_int_equal(nsp_pysite_read_walk(&L, (uintptr_t)ts, safe, raw, 64, &trunc), -1);
  if (safe) { /* a dangling frame pointer: a failed read, not a crash */
    put_ptr(f_main, L.fr_previous, (void *)(uintptr_t)0x10);
    assert_int_equal(nsp_pysite_read_walk(&L, (uintptr_t)ts, safe, raw, 8, &trunc), -1);
  }
}

static void walk_310(void **state) { (void)state; walk_version(10, 0); walk_version(10, 1); }
static void walk_311(void **state) { (void)state; walk_version(11, 0); walk_version(11, 1); }
static void walk_312(void **state) { (void)state; walk_version(12, 0); walk_version(12, 1); }
static void walk_313(void **state) { (void)state; walk_version(13, 0); walk_version(13, 1); }

static void debug_offsets_checked(void **state) {
  (void)state;
  uint8_t d[600];
  struct nsp_pysite_layout L;
  const char *why;
  fake_debug_offsets(d);
  d[0] = 'X';
  assert_int_equal(nsp_pysite_read_layout_313(&L, d, &why), -1);
  fake_debug_offsets(d);
  d[16] = 1; /* free_threaded */
  assert_int_equal(nsp_pysite_read_layout_313(&L, d, &why), -1);
  assert_string_equal(why, "a free-threaded build");
  fake_debug_offsets(d);
  uint64_t v = 0x030e00f0;
  memcpy(d + 8, &v, 8);
  assert_int_equal(nsp_pysite_read_layout_313(&L, d, &why), -1);
  fake_debug_offsets(d);
  v = 5000; /* current_frame past thread_state.size */
  memcpy(d + 184, &v, 8);
  v = 100;
  memcpy(d + 152, &v, 8);
  assert_int_equal(nsp_pysite_read_layout_313(&L, d, &why), -1);
  assert_int_equal(nsp_pysite_read_layout_known(&L, 9), -1);
  assert_int_equal(nsp_pysite_read_layout_known(&L, 14), -1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(real_tables), cmocka_unit_test(hand_310), cmocka_unit_test(hand_311),
      cmocka_unit_test(walk_310),    cmocka_unit_test(walk_311), cmocka_unit_test(walk_312),
      cmocka_unit_test(walk_313),    cmocka_unit_test(debug_offsets_checked),
  };
  return cmocka_run_group_tests(tests, NULL, free_objs);
}
