/* nsp_fuzz.h - the fuzz targets' entry point, shared by libFuzzer builds
 * (-Dfuzz=true with clang) and the replay driver (fuzz_replay.c) that
 * `meson test --suite fuzz-replay` runs over tests/fuzz/corpus/<target>/
 * with any compiler.  See docs/TESTING.md. */
#ifndef NSP_FUZZ_H
#define NSP_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* Runs one input through the target.  Returns 0 (libFuzzer's contract);
 * a broken invariant aborts. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Aborts with a message when cond is false: sanitizers catch memory
 * errors, this catches the reader breaking its own promises. */
#define NSP_FUZZ_CHECK(cond)                                                      \
  do {                                                                            \
    if (!(cond)) nsp_fuzz_fail(__FILE__, __LINE__, #cond);                        \
  } while (0)
static inline __attribute__((noreturn)) void nsp_fuzz_fail(const char *file, int line, const char *what) {
  fprintf(stderr, "%s:%d: check failed: %s\n", file, line, what);
  abort();
}

#endif /* NSP_FUZZ_H */
