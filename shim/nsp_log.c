/* nsp_log.c - the shim's one way to speak: a line on stderr. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
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

/* One warning per setting name, however often it is read (per
 * communicator, say): a small table of names already warned about. */
static _Atomic(const char *) nsp_warned_names[32];

static void warn_setting(const char *name, const char *fmt_value, const char *what, const char *dflt) {
  for (size_t i = 0; i < sizeof nsp_warned_names / sizeof nsp_warned_names[0]; i++) {
    const char *seen = atomic_load(&nsp_warned_names[i]);
    if (seen && !strcmp(seen, name)) return;
    if (!seen) {
      const char *expected = NULL;
      if (!atomic_compare_exchange_strong(&nsp_warned_names[i], &expected, name)) {
        if (expected && !strcmp(expected, name)) return;
        continue;
      }
      break;
    }
  }
  nsp_warn("%s=%s is not %s; using %s", name, fmt_value, what, dflt);
}

int nsp_setting_bool(const char *name, int def) {
  const char *v = getenv(name);
  if (!v || !*v) return def;
  if (!strcmp(v, "1") || !strcasecmp(v, "on") || !strcasecmp(v, "true") || !strcasecmp(v, "yes")) return 1;
  if (!strcmp(v, "0") || !strcasecmp(v, "off") || !strcasecmp(v, "false") || !strcasecmp(v, "no")) return 0;
  warn_setting(name, v, "1/on/true/yes or 0/off/false/no", def ? "1" : "0");
  return def;
}

long nsp_setting_long(const char *name, long def, long lo, long hi) {
  const char *v = getenv(name);
  if (!v || !*v) return def;
  char *end;
  int saved = errno;
  errno = 0;
  long x = strtol(v, &end, 10);
  int bad = errno || end == v || *end || x < lo || x > hi;
  errno = saved;
  if (bad) {
    char what[64], d[32];
    snprintf(what, sizeof what, "a number in [%ld, %ld]", lo, hi);
    snprintf(d, sizeof d, "%ld", def);
    warn_setting(name, v, what, d);
    return def;
  }
  return x;
}
