/* nsp_escape.h - how the `ncclspy` front ends write strings that come
 * from traces.  Paths, host names, environment values, NCCL's last-error
 * text, communicator names, call-site modules and symbols, and any text
 * the analyzer builds from them (finding messages, sides, notes) are
 * untrusted bytes: a trace may sit on a shared filesystem.  Every writer
 * (text report, perf, dump; their JSON forms) puts them out through these
 * functions and nowhere else.  docs/REPORT.md documents the result.
 *
 * Text: a string cannot move the cursor, colour the terminal or start a
 * line of its own.  Each control byte (below 0x20, and 0x7f) and each C1
 * control coded in UTF-8 (U+0080..U+009F: c2 80..c2 9f) is written as
 * \xNN per byte; everything else is written as it is.
 *
 * JSON: json-c writes string bytes >= 0x80 as they are, so a string that
 * is not valid UTF-8 would make the document invalid.  Each byte that is
 * not part of a well-formed UTF-8 sequence (Unicode 15, table 3-7: no
 * overlong forms, surrogates or code points above U+10FFFF) is replaced
 * by U+FFFD; valid text is kept byte for byte. */
#ifndef NSP_ESCAPE_H
#define NSP_ESCAPE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct json_object;

/* Flag of nsp_put_escaped: the string is printed inside double quotes,
 * so '"' and '\' are escaped too (as \" and \\). */
#define NSP_ESC_QUOTED 1

/* Writes the first n bytes of s (up to its NUL; n = SIZE_MAX: all of it)
 * escaped as above; s NULL prints nothing. */
void nsp_put_escaped(FILE *out, const char *s, size_t n, int flags);
/* The number of bytes nsp_put_escaped writes for the same arguments (the
 * width of the text, for wrapping). */
size_t nsp_escaped_len(const char *s, size_t n, int flags);
/* The whole string, control characters escaped, no quotes. */
static inline void nsp_put_esc(FILE *out, const char *s) { nsp_put_escaped(out, s, SIZE_MAX, 0); }
/* The whole string in double quotes, escaped with NSP_ESC_QUOTED. */
static inline void nsp_put_quoted(FILE *out, const char *s) {
  fputc('"', out);
  nsp_put_escaped(out, s, SIZE_MAX, NSP_ESC_QUOTED);
  fputc('"', out);
}

/* HTML (the --html report): s (its first n bytes, up to its NUL; n =
 * SIZE_MAX: all of it; NULL: nothing) made valid UTF-8 as for JSON, its
 * control characters written as for text (\xNN), and & < > " ' as
 * character references (&amp; &lt; &gt; &quot; &#39;), so that it is text
 * in an element or a quoted attribute value, never markup.  Returns -1
 * when out of memory (nothing written), else 0. */
int nsp_put_html(FILE *out, const char *s, size_t n);

/* s (NULL: "") as valid UTF-8: s itself when it already is, else a copy
 * (malloc'd, also stored in *tofree for the caller to free) with each
 * invalid byte replaced by U+FFFD.  NULL when out of memory.  *tofree is
 * set to NULL when no copy was made. */
const char *nsp_utf8_valid(const char *s, char **tofree);

/* A JSON string of s (NULL: ""), made valid UTF-8 by nsp_utf8_valid: the
 * only way the writers make strings.  NULL when out of memory. */
struct json_object *nsp_json_string(const char *s);
/* json_object_object_add with the key made valid UTF-8 too (for keys that
 * come from a trace, such as environment variable names).  Returns what
 * json_object_object_add returns, and -1 without touching v when out of
 * memory: v's ownership is as with json_object_object_add. */
int nsp_json_add(struct json_object *o, const char *key, struct json_object *v);

/* A C++ function's name shortened for the text report: template arguments,
 * parameter lists and " [clone ...]" left out, operator names kept
 * ("ns::Cls::f<int>(int*) [clone .constprop.0]" -> "ns::Cls::f").  Writes
 * at most cap - 1 bytes into buf (cap > 0) and returns buf, or in itself
 * when nothing would be left. */
const char *nsp_short_function(const char *in, char *buf, size_t cap);

#endif /* NSP_ESCAPE_H */
