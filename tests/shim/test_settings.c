/* test_settings.c - the settings table (shim/nsp_setting.h) and its one
 * parser, built from the shim's own nsp_setting.c and nsp_warn.c.
 *
 *   test_settings          TAP: types, ranges, defaults and the warnings,
 *                          whose texts are those the shim printed before
 *                          the table existed
 *   test_settings doc      README's settings table, rendered from the rows
 *                          (test_settings_doc.sh diffs it against README)
 *   test_settings scd      libncclspy(7)'s settings, rendered from the rows
 *                          in scdoc (test_settings_doc.sh diffs it against
 *                          docs/libncclspy.7.scd)
 *   test_settings names    the variables, one a line */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nsp_setting.h"
#include "nsp_shim.h"

/* ---- README's table, and libncclspy(7)'s ---- */

/* The default as README writes it (code in backticks), into buf. */
static const char *default_text(const struct nsp_setting_def *d, char *buf, size_t len) {
  switch (d->type) {
    case NSP_ST_SWITCH:
    case NSP_ST_INT:
    case NSP_ST_POW2:
      if (d->def == 0 && d->zero) snprintf(buf, len, "%ld (%s)", d->def, d->zero);
      else if (d->unit) snprintf(buf, len, "%ld %s", d->def, d->unit);
      else snprintf(buf, len, "%ld", d->def);
      break;
    case NSP_ST_MODE: snprintf(buf, len, "0%lo", (unsigned long)d->def); break;
    case NSP_ST_WORD: {
      const char *p = d->text;
      for (long i = d->def; i > 0 && *p; p++)
        if (*p == '|') i--;
      snprintf(buf, len, "`%.*s`", (int)strcspn(p, "/|"), p);
      break;
    }
    case NSP_ST_PATH:
    case NSP_ST_NAME:
      /* A relative default path is in the working directory: "./" says so. */
      if (!d->text) snprintf(buf, len, "unset");
      else snprintf(buf, len, "`%s%s`", d->type == NSP_ST_PATH && d->text[0] != '/' ? "./" : "", d->text);
      break;
    case NSP_ST_FLAG: snprintf(buf, len, "unset"); break;
  }
  return buf;
}

/* The meaning with "{range}" written out ("lo to hi"), into buf. */
static const char *meaning_text(const struct nsp_setting_def *d, char *buf, size_t len) {
  const char *m = d->meaning, *r;
  size_t used = 0;
  buf[0] = 0;
  while ((r = strstr(m, "{range}")) && used < len) {
    used += (size_t)snprintf(buf + used, len - used, "%.*s%ld to %ld", (int)(r - m), m, d->lo, d->hi);
    m = r + strlen("{range}");
  }
  if (used < len) snprintf(buf + used, len - used, "%s", m);
  return buf;
}

static int doc(void) {
  printf("| variable | default | meaning |\n|---|---|---|\n");
  for (int i = 0; i < NSP_SET_COUNT; i++) {
    const struct nsp_setting_def *d = &nsp_setting_defs[i];
    char dflt[128], meaning[4096];
    printf("| `%s` | %s | %s |\n", d->name, default_text(d, dflt, sizeof dflt),
           meaning_text(d, meaning, sizeof meaning));
  }
  return 0;
}

/* s in scdoc: `code` in bold, '_' and '*' (scdoc's underline and bold)
 * and '\' escaped. */
static void put_scd(const char *s) {
  for (; *s; s++) {
    if (*s == '`') putchar('*');
    else if (*s == '_' || *s == '*' || *s == '\\') printf("\\%c", *s);
    else putchar(*s);
  }
}

/* libncclspy(7)'s SETTINGS list: per setting, a line "NAME (default:
 * DEFAULT)", then its meaning indented, as a sentence (test_settings_doc.sh
 * diffs it against docs/libncclspy.7.scd). */
static int scd(void) {
  for (int i = 0; i < NSP_SET_COUNT; i++) {
    const struct nsp_setting_def *d = &nsp_setting_defs[i];
    char dflt[128], meaning[4096];
    printf("%s*", i ? "\n" : "");
    put_scd(d->name);
    printf("* (default: ");
    put_scd(default_text(d, dflt, sizeof dflt));
    printf(")\n\t");
    meaning_text(d, meaning, sizeof meaning);
    if (meaning[0] >= 'a' && meaning[0] <= 'z') meaning[0] = (char)(meaning[0] - 'a' + 'A');
    put_scd(meaning);
    printf(".\n");
  }
  return 0;
}

/* ---- the parser ---- */

static int ntest, nfailed;

static void ok(int cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void ok(int cond, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  printf("%s %d - ", cond ? "ok" : "not ok", ++ntest);
  vprintf(fmt, ap);
  printf("\n");
  va_end(ap);
  nfailed += !cond;
}

/* What the shim wrote on stderr while fn ran. */
static char stderr_text[4096];
static long read_with_stderr(long (*fn)(enum nsp_setting_id), enum nsp_setting_id id) {
  char path[] = "/tmp/nsp-settings-XXXXXX";
  int fd = mkstemp(path), saved = dup(2);
  unlink(path);
  fflush(stderr);
  dup2(fd, 2);
  long v = fn(id);
  dup2(saved, 2);
  close(saved);
  ssize_t n = pread(fd, stderr_text, sizeof stderr_text - 1, 0);
  stderr_text[n > 0 ? n : 0] = 0;
  close(fd);
  return v;
}

/* NCCLSPY_<id>=value read once: its value, the warning text ("" none). */
static long with_value(enum nsp_setting_id id, const char *value) {
  if (value) setenv(nsp_setting_defs[id].name, value, 1);
  else unsetenv(nsp_setting_defs[id].name);
  long v = read_with_stderr(nsp_setting, id);
  unsetenv(nsp_setting_defs[id].name);
  return v;
}

static void check(enum nsp_setting_id id, const char *value, long want, const char *warning) {
  long v = with_value(id, value);
  ok(v == want && !strcmp(stderr_text, warning), "%s=%s gives %ld (got %ld), warning \"%.*s\" (got \"%.*s\")",
     nsp_setting_defs[id].name, value ? value : "(unset)", want, v, (int)strcspn(warning, "\n"), warning,
     (int)strcspn(stderr_text, "\n"), stderr_text);
}

/* NCCLSPY_<id>=value, read in this order: the value and the warning the
 * shim gives (the texts it gave before the table). */
static const struct {
  enum nsp_setting_id id;
  const char *value;
  long want;
  const char *warning;
} cases[] = {
    {NSP_SET_TIMING, "off", 0, ""},
    {NSP_SET_TIMING, "No", 0, ""},
    {NSP_SET_TIMING, "0", 0, ""},
    {NSP_SET_TRACK, "TRUE", 1, ""},
    {NSP_SET_SIGNALS, "false", 0, ""},
    {NSP_SET_CALLSITES, "maybe", 1,
     "ncclspy: NCCLSPY_CALLSITES=maybe is not 1/on/true/yes or 0/off/false/no; using 1\n"},
    /* One warning per setting, whatever the value. */
    {NSP_SET_CALLSITES, "perhaps", 1, ""},
    {NSP_SET_FLUSH_MS, "250", 250, ""},
    {NSP_SET_FLUSH_MS, "0", 1000,
     "ncclspy: NCCLSPY_FLUSH_MS=0 is not a number in [1, 3600000]; using 1000\n"},
    {NSP_SET_POLL_MS, "x", 2, "ncclspy: NCCLSPY_POLL_MS=x is not a number in [1, 1000]; using 2\n"},
    {NSP_SET_LEVEL, "20", 3, "ncclspy: NCCLSPY_LEVEL=20 is not a number in [1, 19]; using 3\n"},
    {NSP_SET_MAX_MB, "1073741824", 1073741824, ""},
    {NSP_SET_MAX_MB, "-1", 0,
     "ncclspy: NCCLSPY_MAX_MB=-1 is not a number in [0, 1073741824]; using 0\n"},
    {NSP_SET_TIMING_GAP_US, "12abc", 500,
     "ncclspy: NCCLSPY_TIMING_GAP_US=12abc is not a number in [0, 10000000]; using 500\n"},
    {NSP_SET_CALLSITE_DEPTH, "32", 32, ""},
    {NSP_SET_CALLSITE_DEPTH, "100", 6,
     "ncclspy: NCCLSPY_CALLSITE_DEPTH=100 is not a number in [1, 32]; using 6\n"},
    /* The ring is rounded up to a power of two. */
    {NSP_SET_RING, "64", 64, ""},
    {NSP_SET_RING, "100", 128, ""},
    {NSP_SET_RING, "262144", 262144, ""},
    {NSP_SET_RING, "262145", 16384,
     "ncclspy: NCCLSPY_RING=262145 is not a number in [64, 262144]; using 16384\n"},
    {NSP_SET_MODE, "0640", 0640, ""},
    {NSP_SET_MODE, "666", 0666, ""},
    {NSP_SET_MODE, "0700", 0600,
     "ncclspy: NCCLSPY_MODE=0700 is not an octal file mode between 0600 and 0666; using 0600\n"},
    {NSP_SET_RING_FILE, "AUTO", NSP_RING_FILE_AUTO, ""},
    {NSP_SET_RING_FILE, "yes", NSP_RING_FILE_ON, ""},
    {NSP_SET_RING_FILE, "0", NSP_RING_FILE_OFF, ""},
    {NSP_SET_RING_FILE, "sometimes", NSP_RING_FILE_AUTO,
     "ncclspy: NCCLSPY_RING_FILE=sometimes is not auto, on or off; using auto\n"},
    {NSP_SET_DEBUG, "", 1, ""},
    {NSP_SET_DEBUG, NULL, 0, ""},
};

/* The table agrees with itself: a number's default in its range, a word's
 * default one of its words. */
static void table(void) {
  for (int i = 0; i < NSP_SET_COUNT; i++) {
    const struct nsp_setting_def *d = &nsp_setting_defs[i];
    if (d->type == NSP_ST_INT || d->type == NSP_ST_POW2)
      ok(d->lo <= d->def && d->def <= d->hi, "%s: default %ld in its range %ld to %ld", d->name, d->def, d->lo, d->hi);
    if (d->type == NSP_ST_SWITCH) ok(d->def == 0 || d->def == 1, "%s: a switch's default is 0 or 1", d->name);
    if (d->type == NSP_ST_MODE)
      ok((d->def & d->lo) == d->lo && (d->def & ~d->hi) == 0, "%s: default 0%lo within 0%lo to 0%lo", d->name,
         (unsigned long)d->def, (unsigned long)d->lo, (unsigned long)d->hi);
    if (d->type == NSP_ST_WORD) {
      long words = 1;
      for (const char *p = d->text; p && *p; p++) words += *p == '|';
      ok(d->text && d->def >= 0 && d->def < words, "%s: default word %ld of %ld", d->name, d->def, words);
    }
    if (d->type == NSP_ST_INT || d->type == NSP_ST_POW2)
      ok(d->unit != NULL || d->zero != NULL || strstr(d->meaning, "{range}") != NULL,
         "%s: a number says its unit or its range", d->name);
  }
}

static int parser(void) {
  table();
  /* Defaults, unset and empty alike. */
  for (int i = 0; i < NSP_SET_COUNT; i++) {
    const struct nsp_setting_def *d = &nsp_setting_defs[i];
    if (d->type == NSP_ST_PATH || d->type == NSP_ST_NAME || d->type == NSP_ST_FLAG) continue;
    long unset = with_value(i, NULL), empty = with_value(i, "");
    ok(unset == d->def && empty == d->def && !stderr_text[0], "%s: unset and empty give the default %ld",
       d->name, d->def);
  }
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    check(cases[i].id, cases[i].value, cases[i].want, cases[i].warning);

  errno = EAGAIN;
  with_value(NSP_SET_LEVEL, "nope");
  ok(errno == EAGAIN, "errno is preserved (%d)", errno);

  unsetenv("NCCLSPY_DIR");
  setenv("NCCLSPY_NCCL_LIBRARY", "", 1);
  unsetenv("NCCLSPY_BENCH_MODE_FILE");
  ok(!strcmp(nsp_setting_str(NSP_SET_DIR), "ncclspy-trace") &&
         !strcmp(nsp_setting_str(NSP_SET_NCCL_LIBRARY), "libnccl.so.2") && !nsp_setting_str(NSP_SET_BENCH_MODE_FILE),
     "paths and names: unset or empty give the default (none for NCCLSPY_BENCH_MODE_FILE)");
  setenv("NCCLSPY_BENCH_MODE_FILE", "/tmp/mode", 1);
  ok(!strcmp(nsp_setting_str(NSP_SET_BENCH_MODE_FILE), "/tmp/mode") && !nsp_setting_str(NSP_SET_RING),
     "a path as given; no string for a number");
  printf("1..%d\n", ntest);
  return nfailed ? 1 : 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "doc")) return doc();
  if (argc > 1 && !strcmp(argv[1], "scd")) return scd();
  if (argc > 1 && !strcmp(argv[1], "names")) {
    for (int i = 0; i < NSP_SET_COUNT; i++) puts(nsp_setting_defs[i].name);
    return 0;
  }
  return parser();
}
