/* nsp_warn.c - the shim's one way to speak: a line on stderr. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "nsp_shim.h"

void nsp_warn(const char *fmt, ...) {
  int saved = errno;
  char line[512];
  int n = snprintf(line, sizeof line, "ncclspy: ");
  va_list ap;
  va_start(ap, fmt);
  int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
  va_end(ap);
  size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
  if (len > sizeof line - 2) len = sizeof line - 2;
  line[len++] = '\n';
  /* One write(2): lines of many ranks on one terminal do not interleave. */
  ssize_t w = write(STDERR_FILENO, line, len);
  (void)w;
  errno = saved;
}
