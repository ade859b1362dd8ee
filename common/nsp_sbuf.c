/* nsp_sbuf.c - see nsp_sbuf.h. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nsp_grow.h"
#include "nsp_sbuf.h"

char *nsp_strdup(const char *s) { return strdup(s ? s : ""); }

char *nsp_vasprintf(const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (n < 0) return NULL;
  char *s = malloc((size_t)n + 1);
  if (s) vsnprintf(s, (size_t)n + 1, fmt, ap);
  return s;
}

char *nsp_asprintf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *s = nsp_vasprintf(fmt, ap);
  va_end(ap);
  return s;
}

void nsp_sbuf_printf(struct nsp_sbuf *b, const char *fmt, ...) {
  if (b->oom) return;
  va_list ap;
  va_start(ap, fmt);
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (n < 0 || nsp_grow(&b->s, &b->cap, b->len + (size_t)n + 1, 1) < 0) {
    b->oom = 1;
    va_end(ap);
    return;
  }
  vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
  b->len += (size_t)n;
  va_end(ap);
}

char *nsp_sbuf_take(struct nsp_sbuf *b) {
  if (b->oom) {
    free(b->s);
    memset(b, 0, sizeof *b);
    return NULL;
  }
  char *s = b->s ? b->s : strdup("");
  memset(b, 0, sizeof *b);
  return s;
}

void nsp_sbuf_quoted(struct nsp_sbuf *b, const char *s) {
  nsp_sbuf_printf(b, "\"");
  for (const char *p = s ? s : ""; *p;) {
    size_t n = strcspn(p, "\"\\");
    if (n) nsp_sbuf_printf(b, "%.*s", (int)(n < INT32_MAX ? n : INT32_MAX), p);
    p += n < INT32_MAX ? n : INT32_MAX;
    if (*p == '"' || *p == '\\') nsp_sbuf_printf(b, "\\%c", *p++);
  }
  nsp_sbuf_printf(b, "\"");
}

void nsp_sbuf_count(struct nsp_sbuf *b, unsigned long long n, const char *one, const char *many) {
  if (n == 1 || many) nsp_sbuf_printf(b, "%llu %s", n, n == 1 ? one : many);
  else nsp_sbuf_printf(b, "%llu %ss", n, one);
}

const char *nsp_plural(unsigned long long n, const char *one, const char *many) { return n == 1 ? one : many; }
