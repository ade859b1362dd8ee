/* nsp_setting.c - the one reader of the NCCLSPY_* settings
 * (nsp_setting.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "nsp_setting.h"
#include "nsp_shim.h"

#define NSP_SETTING_DEF_(id, ...) [NSP_SET_##id] = {.name = "NCCLSPY_" #id, __VA_ARGS__},
const struct nsp_setting_def nsp_setting_defs[NSP_SET_COUNT] = {NSP_SETTINGS(NSP_SETTING_DEF_)};
#undef NSP_SETTING_DEF_

/* The spellings of a switch, as NSP_ST_WORD words: index 0 off, 1 on. */
static const char nsp_switch_words[] = "0/off/false/no|1/on/true/yes";

/* One warning per setting, however often it is read (per communicator,
 * say). */
static _Atomic int nsp_setting_warned[NSP_SET_COUNT];

static void warn_unusable(enum nsp_setting_id id, const char *value, const char *what,
                          const char *dflt) {
  nsp_warn_once(&nsp_setting_warned[id], "%s=%s is not %s; using %s", nsp_setting_defs[id].name,
                value, what, dflt);
}

/* The index of v among words (see nsp_setting_def.text), or -1. */
static long word_index(const char *words, const char *v) {
  size_t vlen = strlen(v);
  long index = 0;
  for (const char *p = words;;) {
    size_t n = strcspn(p, "/|");
    if (n == vlen && !strncasecmp(p, v, n)) return index;
    p += n;
    if (!*p) return -1;
    if (*p++ == '|') index++;
  }
}

/* The first spelling of the word of this index, into buf. */
static const char *word_name(const char *words, long index, char *buf, size_t len) {
  const char *p = words;
  for (; index > 0 && *p; p++)
    if (*p == '|') index--;
  snprintf(buf, len, "%.*s", (int)strcspn(p, "/|"), p);
  return buf;
}

/* "auto, on or off": the words as a message names them. */
static const char *word_list(const char *words, char *buf, size_t len) {
  size_t n = 1, used = 0;
  for (const char *p = words; *p; p++) n += *p == '|';
  buf[0] = 0;
  for (size_t i = 0; i < n && used < len; i++) {
    char w[64];
    used += (size_t)snprintf(buf + used, len - used, "%s%s", i == 0 ? "" : i + 1 == n ? " or " : ", ",
                             word_name(words, (long)i, w, sizeof w));
  }
  return buf;
}

/* v as a value of setting id (set and not empty), or its default after
 * one warning. */
static long parse(enum nsp_setting_id id, const char *v) {
  const struct nsp_setting_def *d = &nsp_setting_defs[id];
  char what[96], dflt[64];
  char *end;
  errno = 0;
  switch (d->type) {
    case NSP_ST_SWITCH: {
      long x = word_index(nsp_switch_words, v);
      if (x >= 0) return x;
      warn_unusable(id, v, "1/on/true/yes or 0/off/false/no", d->def ? "1" : "0");
      return d->def;
    }
    case NSP_ST_INT:
    case NSP_ST_POW2: {
      long x = strtol(v, &end, 10);
      if (!errno && end != v && !*end && x >= d->lo && x <= d->hi) return x;
      snprintf(what, sizeof what, "a number in [%ld, %ld]", d->lo, d->hi);
      snprintf(dflt, sizeof dflt, "%ld", d->def);
      warn_unusable(id, v, what, dflt);
      return d->def;
    }
    case NSP_ST_MODE: {
      unsigned long m = strtoul(v, &end, 8), lo = (unsigned long)d->lo, hi = (unsigned long)d->hi;
      if (!errno && !*end && !(m & ~hi) && (m & lo) == lo) return (long)m;
      snprintf(what, sizeof what, "an octal file mode between 0%lo and 0%lo", lo, hi);
      snprintf(dflt, sizeof dflt, "0%lo", (unsigned long)d->def);
      warn_unusable(id, v, what, dflt);
      return d->def;
    }
    case NSP_ST_WORD: {
      long x = word_index(d->text, v);
      if (x >= 0) return x;
      warn_unusable(id, v, word_list(d->text, what, sizeof what),
                    word_name(d->text, d->def, dflt, sizeof dflt));
      return d->def;
    }
    default:
      return 0;
  }
}

long nsp_setting(enum nsp_setting_id id) {
  const struct nsp_setting_def *d = &nsp_setting_defs[id];
  const char *v = getenv(d->name);
  if (d->type == NSP_ST_FLAG) return v != NULL;
  int saved = errno;
  long x = v && *v ? parse(id, v) : d->def;
  errno = saved;
  if (d->type == NSP_ST_POW2) {
    long p = 1;
    while (p < x) p <<= 1;
    x = p;
  }
  return x;
}

const char *nsp_setting_str(enum nsp_setting_id id) {
  const struct nsp_setting_def *d = &nsp_setting_defs[id];
  if (d->type != NSP_ST_PATH && d->type != NSP_ST_NAME) return NULL;
  const char *v = getenv(d->name);
  return v && *v ? v : d->text;
}
