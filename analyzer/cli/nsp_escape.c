/* nsp_escape.c - untrusted trace strings made safe for a terminal and for
 * JSON; see nsp_escape.h. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "nsp_escape.h"

/* How many bytes at p (of at most n) make one escaped unit and how it is
 * written: 0 plain byte, 1 "\xNN" per byte, 2 backslash + the byte. */
static int esc_kind(const unsigned char *p, size_t n, int flags, size_t *len) {
  *len = 1;
  if (*p < 0x20 || *p == 0x7f) return 1;
  if (*p == 0xc2 && n > 1 && p[1] >= 0x80 && p[1] <= 0x9f) { /* U+0080..U+009F */
    *len = 2;
    return 1;
  }
  if ((flags & NSP_ESC_QUOTED) && (*p == '"' || *p == '\\')) return 2;
  return 0;
}

void nsp_put_escaped(FILE *out, const char *s, size_t n, int flags) {
  if (!s) return;
  const unsigned char *p = (const unsigned char *)s;
  size_t i = 0;
  while (i < n && p[i]) {
    size_t len;
    int k = esc_kind(p + i, n - i, flags, &len);
    if (k == 1) {
      for (size_t j = 0; j < len; j++) fprintf(out, "\\x%02x", p[i + j]);
    } else if (k == 2) {
      fputc('\\', out);
      fputc(p[i], out);
    } else {
      /* A run of plain bytes at once. */
      size_t j = i + 1;
      while (j < n && p[j] && !esc_kind(p + j, n - j, flags, &len)) j++;
      fwrite(p + i, 1, j - i, out);
      len = j - i;
    }
    i += len;
  }
}

size_t nsp_escaped_len(const char *s, size_t n, int flags) {
  if (!s) return 0;
  const unsigned char *p = (const unsigned char *)s;
  size_t i = 0, w = 0;
  while (i < n && p[i]) {
    size_t len;
    int k = esc_kind(p + i, n - i, flags, &len);
    w += k == 1 ? 4 * len : k == 2 ? 2 : 1;
    i += len;
  }
  return w;
}

/* The length of the well-formed UTF-8 sequence at p (1..4), 0 when the
 * byte at p does not start one (Unicode table 3-7). */
static size_t utf8_seq(const unsigned char *p) {
  unsigned char c = p[0];
  if (c < 0x80) return 1;
  unsigned char lo = 0x80, hi = 0xbf;
  size_t n;
  if (c >= 0xc2 && c <= 0xdf) n = 2;
  else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    if (c == 0xe0) lo = 0xa0;      /* no overlong forms */
    else if (c == 0xed) hi = 0x9f; /* no surrogates */
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
    if (c == 0xf0) lo = 0x90;      /* no overlong forms */
    else if (c == 0xf4) hi = 0x8f; /* nothing above U+10FFFF */
  } else {
    return 0; /* a continuation byte, c0, c1, f5..ff */
  }
  if (p[1] < lo || p[1] > hi) return 0;
  for (size_t i = 2; i < n; i++)
    if (p[i] < 0x80 || p[i] > 0xbf) return 0; /* also stops at the NUL */
  return n;
}

const char *nsp_utf8_valid(const char *s, char **tofree) {
  *tofree = NULL;
  if (!s) return "";
  const unsigned char *p = (const unsigned char *)s;
  size_t bad = 0, len = 0;
  while (p[len]) {
    size_t k = utf8_seq(p + len);
    if (!k) {
      bad++;
      k = 1;
    }
    len += k;
  }
  if (!bad) return s;
  char *o = malloc(len + 2 * bad + 1); /* each bad byte: 3 bytes */
  if (!o) return NULL;
  size_t w = 0;
  for (size_t i = 0; i < len;) {
    size_t k = utf8_seq(p + i);
    if (k) {
      memcpy(o + w, p + i, k);
      w += k;
      i += k;
    } else {
      memcpy(o + w, "\xef\xbf\xbd", 3); /* U+FFFD */
      w += 3;
      i++;
    }
  }
  o[w] = 0;
  *tofree = o;
  return o;
}

int nsp_put_html(FILE *out, const char *s, size_t n) {
  if (!s) return 0;
  size_t len = strnlen(s, n);
  char *cut = len == strlen(s) ? NULL : strndup(s, len), *tmp;
  if (len != strlen(s) && !cut) return -1;
  const char *v = nsp_utf8_valid(cut ? cut : s, &tmp);
  if (!v) {
    free(cut);
    return -1;
  }
  const unsigned char *p = (const unsigned char *)v;
  for (size_t i = 0; p[i];) {
    size_t k;
    if (esc_kind(p + i, SIZE_MAX, 0, &k) == 1) {
      for (size_t j = 0; j < k; j++) fprintf(out, "\\x%02x", p[i + j]);
      i += k;
      continue;
    }
    switch (p[i]) {
      case '&': fputs("&amp;", out); break;
      case '<': fputs("&lt;", out); break;
      case '>': fputs("&gt;", out); break;
      case '"': fputs("&quot;", out); break;
      case '\'': fputs("&#39;", out); break;
      default: fputc(p[i], out);
    }
    i++;
  }
  free(tmp);
  free(cut);
  return 0;
}

struct json_object *nsp_json_string(const char *s) {
  char *tmp;
  const char *v = nsp_utf8_valid(s, &tmp);
  json_object *o = v ? json_object_new_string(v) : NULL;
  free(tmp);
  return o;
}

int nsp_json_add(struct json_object *o, const char *key, struct json_object *v) {
  char *tmp;
  const char *k = nsp_utf8_valid(key, &tmp);
  if (!k) return -1;
  int ret = json_object_object_add(o, k, v); /* copies the key */
  free(tmp);
  return ret;
}

/* A C++ function's name as a person reads it at 3am: template arguments
 * and parameter lists left out ("c10d::ProcessGroupNCCL::collective<...>
 * (...) [clone .constprop.0]" is "c10d::ProcessGroupNCCL::collective"),
 * operator names kept; at most cap - 1 bytes.  JSON keeps the whole name. */
const char *nsp_short_function(const char *in, char *buf, size_t cap) {
  size_t k = 0;
  int depth = 0;
  for (const char *p = in; *p && k + 1 < cap; p++) {
    if (depth == 0 && (!strncmp(p, "operator", 8) || !strncmp(p, "(anonymous namespace)", 21))) {
      /* operator<, operator(), operator[], operator<<=, ...: the name
       * itself; "(anonymous namespace)" as it is */
      size_t n = 8;
      if (*p == '(') n = 21;
      else if (!strncmp(p + 8, "()", 2) || !strncmp(p + 8, "[]", 2)) n = 10;
      else
        while (p[n] && strchr("<>=!~+-*/%^&|,", p[n]) && n < 12) n++;
      for (size_t i = 0; i < n && k + 1 < cap; i++) buf[k++] = p[i];
      p += n - 1;
      continue;
    }
    if (*p == '<' || *p == '(') {
      depth++;
      continue;
    }
    if (*p == '>' || *p == ')') {
      if (depth > 0) depth--;
      continue;
    }
    if (depth) continue;
    if (*p == ' ' && !strncmp(p, " [clone", 7)) break;
    buf[k++] = *p;
  }
  while (k && buf[k - 1] == ' ') k--;
  buf[k] = 0;
  return k ? buf : in;
}
