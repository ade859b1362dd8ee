/* test_an_symbolize.c - native frames as function and file:line
 * (analyzer/model/nsp_an_symbolize.c), on frames made the way the shim
 * makes them: the offset of a return address from dladdr's dli_fbase, in
 * this program (built twice: PIE, and non-PIE where dli_fbase is 0x400000
 * and offsets are not ELF addresses) and in a shared library; the build-id
 * from memory as the shim reads it (shim/nsp_buildid.c, compiled in).
 * usage: test_an_symbolize SYMLIB_SO */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <link.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nsp_config.h"
#include "nsp_an_model.h"
#include "nsp_shim.h"

static const char *symlib_path, *symlib_cxx_path;

static __attribute__((noinline)) void *return_address(void) {
  void *ra = __builtin_return_address(0);
  __asm__ volatile("" : "+r"(ra));
  return ra;
}

static __attribute__((noinline)) void *nsp_test_caller(int *line) {
  void *ra = return_address(); *line = __LINE__; /* the call and its line: one line */
  __asm__ volatile("" ::: "memory");
  return ra;
}

struct bid {
  uintptr_t addr;
  char hex[130];
};

static int bid_cb(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  struct bid *b = arg;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
    if (ph->p_type == PT_LOAD && b->addr >= lo && b->addr < lo + ph->p_memsz) {
      nsp_buildid_of(info, b->hex, sizeof b->hex);
      return 1;
    }
  }
  return 0;
}

/* A frame for code address ra as the shim records it; its module's path
 * (the program: /proc/self/exe's target) and build-id into path, id. */
static struct nsp_frame frame_of(void *ra, int interrupted, int in_program, char *path, size_t len, char *id) {
  Dl_info di;
  assert_true(dladdr((char *)ra - !interrupted, &di));
  struct bid b = {.addr = (uintptr_t)ra - !interrupted};
  dl_iterate_phdr(bid_cb, &b);
  strcpy(id, b.hex);
  assert_true(id[0]); /* meson links with a build-id */
  if (in_program) {
    ssize_t n = readlink("/proc/self/exe", path, len - 1);
    assert_true(n > 0);
    path[n] = 0;
  } else {
    snprintf(path, len, "%s", di.dli_fname);
  }
  struct nsp_frame fr = {.module = path, .symbol = "", .interrupted = interrupted};
  fr.offset = (uint64_t)((uintptr_t)ra - (uintptr_t)di.dli_fbase);
  print_message("# %s+0x%llx (dli_fbase %p) build-id %s\n", path, (unsigned long long)fr.offset, di.dli_fbase, id);
  return fr;
}

static void assert_resolved(struct nsp_an_sym *s, struct nsp_frame *fr, const char *id, const char *function,
                            const char *file, int line) {
  int r = nsp_an_sym_frame(s, fr->module, id, fr);
  print_message("# -> %d: %s (%s:%d)\n", r, fr->function ? fr->function : "-", fr->file ? fr->file : "-", fr->line);
#if NSP_HAVE_LIBDW
  assert_int_equal(r, NSP_AN_SYM_RESOLVED);
  assert_non_null(fr->function);
  assert_string_equal(fr->function, function);
  assert_non_null(fr->file);
  assert_true(fr->file[0] == '/');
  const char *base = strrchr(fr->file, '/') + 1;
  assert_string_equal(base, file);
  if (line) assert_int_equal(fr->line, line); /* 0: any line */
#else
  (void)function;
  (void)file;
  (void)line;
  assert_int_equal(r, NSP_AN_SYM_NONE);
  assert_null(fr->function);
  assert_null(fr->file);
#endif
}

/* A return address in this program: the line of its call. */
static void test_program(void **state) {
  (void)state;
  int line = 0;
  void *ra = nsp_test_caller(&line);
  char path[PATH_MAX], id[130];
  struct nsp_frame fr = frame_of(ra, 0, 1, path, sizeof path, id);
#ifdef NSP_TEST_NO_PIE
  /* Non-PIE: the map starts at the first PT_LOAD (0x400000), not at 0. */
  Dl_info di;
  assert_true(dladdr(ra, &di));
  assert_int_equal((uintptr_t)di.dli_fbase, 0x400000);
#endif
  struct nsp_an_sym *s = nsp_an_sym_create();
  assert_non_null(s);
  assert_resolved(s, &fr, id, "nsp_test_caller", "test_an_symbolize.c", line);
  /* Again: the same answer (cached). */
  struct nsp_frame again = frame_of(ra, 0, 1, path, sizeof path, id);
  assert_resolved(s, &again, id, "nsp_test_caller", "test_an_symbolize.c", line);
  nsp_an_sym_destroy(s);
}

/* A return address in a shared library, and a signal's innermost frame
 * (the instruction itself: the library function's first byte). */
static void test_library(void **state) {
  (void)state;
  void *h = dlopen(symlib_path, RTLD_NOW);
  assert_non_null(h);
  void *sym = dlsym(h, "nsp_symlib_caller");
  assert_non_null(sym);
  void *(*caller)(int *);
  memcpy(&caller, &sym, sizeof caller); /* POSIX: dlsym's result as a function */
  int line = 0;
  void *ra = caller(&line);
  char path[PATH_MAX], id[130];
  struct nsp_frame fr = frame_of(ra, 0, 0, path, sizeof path, id);
  struct nsp_an_sym *s = nsp_an_sym_create();
  assert_non_null(s);
  assert_resolved(s, &fr, id, "nsp_symlib_caller", "symlib.c", line);
  struct nsp_frame pc = frame_of(sym, 1, 0, path, sizeof path, id);
  assert_resolved(s, &pc, id, "nsp_symlib_caller", "symlib.c", 0);
  /* The same offset as a return address is looked up a byte before: not
   * in that function. */
  struct nsp_frame ret = pc;
  ret.interrupted = 0;
  ret.function = ret.file = NULL;
  nsp_an_sym_frame(s, path, id, &ret);
  assert_true(!ret.function || strcmp(ret.function, "nsp_symlib_caller"));
  nsp_an_sym_destroy(s);
  dlclose(h);
}

/* A build-id that is not the file's: nothing resolved, "changed" the first
 * time only (one note per module); no build-id or no file: nothing. */
static void test_unmatched(void **state) {
  (void)state;
  int line = 0;
  void *ra = nsp_test_caller(&line);
  char path[PATH_MAX], id[130];
  struct nsp_frame fr = frame_of(ra, 0, 1, path, sizeof path, id);
  struct nsp_an_sym *s = nsp_an_sym_create();
  assert_non_null(s);
#if NSP_HAVE_LIBDW
  assert_int_equal(nsp_an_sym_frame(s, path, "00112233", &fr), NSP_AN_SYM_CHANGED_NEW);
  assert_int_equal(nsp_an_sym_frame(s, path, "00112233", &fr), NSP_AN_SYM_CHANGED);
#endif
  assert_int_equal(nsp_an_sym_frame(s, path, "", &fr), NSP_AN_SYM_NONE);
  assert_int_equal(nsp_an_sym_frame(s, "/nonexistent/libgone.so", id, &fr), NSP_AN_SYM_NONE);
  assert_null(fr.function);
  assert_null(fr.file);
  assert_int_equal(fr.line, 0);
  nsp_an_sym_destroy(s);
}

/* A function of a C++ library without DWARF (libtorch's case): its
 * symbol-table name, demangled. */
static void test_cxx_symbol(void **state) {
  (void)state;
  void *h = dlopen(symlib_cxx_path, RTLD_NOW);
  assert_non_null(h);
  void *sym = dlsym(h, "_ZN4c10d16ProcessGroupNCCL10collectiveIiEEiPi");
  assert_non_null(sym);
  char path[PATH_MAX], id[130];
  struct nsp_frame pc = frame_of(sym, 1, 0, path, sizeof path, id);
  struct nsp_an_sym *s = nsp_an_sym_create();
  assert_non_null(s);
  int r = nsp_an_sym_frame(s, path, id, &pc);
  print_message("# -> %d: %s\n", r, pc.function ? pc.function : "-");
#if NSP_HAVE_LIBDW
  assert_int_equal(r, NSP_AN_SYM_RESOLVED);
  assert_non_null(pc.function);
  assert_string_equal(pc.function, "int c10d::ProcessGroupNCCL::collective<int>(int*)");
  assert_null(pc.file);
#else
  assert_int_equal(r, NSP_AN_SYM_NONE);
#endif
  nsp_an_sym_destroy(s);
  dlclose(h);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s SYMLIB_SO SYMLIB_CXX_SO\n", argv[0]);
    return 2;
  }
  symlib_path = argv[1];
  symlib_cxx_path = argv[2];
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_program),
      cmocka_unit_test(test_library),
      cmocka_unit_test(test_unmatched),
      cmocka_unit_test(test_cxx_symbol),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
