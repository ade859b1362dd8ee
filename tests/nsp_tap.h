/* nsp_tap.h - the TAP output of ncclspy's plain-C test programs (those
 * not written with cmocka: they fork, exec and kill processes).
 *
 * ok() prints "ok N - ..." or "not ok N - ..." and counts; the program
 * prints "1..N" with `tests` at the end and exits non-zero when `failures`
 * is not 0.  Include once, in the test program's one source file. */
#ifndef NSP_TAP_H
#define NSP_TAP_H

#include <stdarg.h>
#include <stdio.h>

static int tests, failures; /* assertions made; how many failed */

static void ok(int cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void ok(int cond, const char *fmt, ...) {
  va_list ap;
  tests++;
  if (!cond) failures++;
  printf("%s %d - ", cond ? "ok" : "not ok", tests);
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  printf("\n");
  fflush(stdout);
}

#endif /* NSP_TAP_H */
