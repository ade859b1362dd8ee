/* nsp_sbuf.h - strings built by printf: a growable buffer that remembers
 * running out of memory (so a message is built with no check per piece
 * and checked once, when taken), and malloc'd printf. */
#ifndef NSP_SBUF_H
#define NSP_SBUF_H

#include <stdarg.h>
#include <stddef.h>

/* A growable string; a zeroed struct is an empty one. */
struct nsp_sbuf {
  char *s;
  size_t len, cap; /* bytes written (without the NUL), bytes allocated */
  int oom;         /* a printf ran out of memory: later ones do nothing */
};
/* Appends printf output. */
void nsp_sbuf_printf(struct nsp_sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends s (NULL: "") in double quotes with '"' and '\' escaped as \"
 * and \\ (as the analyzer's nsp_escape.h writes quoted strings); control
 * bytes are left to the writers, which escape every string they print. */
void nsp_sbuf_quoted(struct nsp_sbuf *b, const char *s);
/* Appends "N thing" or "N things": one when n == 1, else many (NULL:
 * one with an "s"), as "1 record", "2 records", "3 processes" (many
 * "processes").  Every count the analyzer prints goes through it or
 * nsp_plural. */
void nsp_sbuf_count(struct nsp_sbuf *b, unsigned long long n, const char *one, const char *many);
/* one when n == 1, else many: for printf's "%llu %s". */
const char *nsp_plural(unsigned long long n, const char *one, const char *many);
/* The string ("" when nothing was written), which the caller frees, and
 * the buffer emptied; NULL when some printf ran out of memory. */
char *nsp_sbuf_take(struct nsp_sbuf *b);

/* strdup of s, "" for NULL; NULL only when out of memory. */
char *nsp_strdup(const char *s);
/* malloc'd printf; NULL when out of memory. */
char *nsp_asprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *nsp_vasprintf(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

#endif /* NSP_SBUF_H */
