/* test_an_tables.c - the analyzer's tables against each other and the docs.
 *
 *   test_an_tables REPORT.md   checks (TAP):
 *     - docs/REPORT.md's table of finding kinds has one row per line of
 *       the kinds table (analyzer/nsp_finding_kinds.h), in its order, with
 *       the same rule, class, ranks, sides, odd_ranks and later;
 *     - every kind is made by exactly one rule of the rule table, and every
 *       kind a rule names is in the kinds table;
 *     - names are unique and read back (nsp_finding_kind_from_name), and
 *       every kind has a hint;
 *     - its table under "### NCCL settings" has one row per line of the
 *       settings table (common/nsp_nccl_settings.h), in its order (sorted
 *       by name, which the lookup needs), with the same class and meaning;
 *     - its table under "### Python library frames" has one row per line
 *       of the library-frame table (analyzer/model/nsp_pyframes.h), in its
 *       order, with the same pattern and meaning.
 *   test_an_tables --markdown  prints the rows the docs should have
 *   (--markdown-settings: those of the settings table; --markdown-pyframes:
 *   those of the library-frame table).
 *
 * Adding a kind without its rule or its docs row fails here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nsp_nccl_settings.h"
#include "nsp_rule.h"
#include "tests/nsp_tap.h"

/* The docs' words for an empty odd_ranks / later column. */
static const char *or_none(const char *s) { return s[0] ? s : "-"; }

static const char *rule_name(int kind) {
  const struct nsp_rule *r = nsp_rule_of_kind(kind);
  return r ? r->name : "(none)";
}

/* The row of kind, as docs/REPORT.md writes it, into buf. */
static void row(char *buf, size_t len, int kind) {
  const struct nsp_finding_kind_info *k = nsp_finding_kind_info(kind);
  snprintf(buf, len, "| `%s` | %s | %s | %s | %s | %s | %s |", k->name, rule_name(kind),
           nsp_finding_class_name(k->order_class), nsp_rank_space_name(k->rank_space), nsp_side_shape_name(k->sides),
           or_none(k->odd_ranks), or_none(k->later));
}

/* The rows of the table under section `title` ("### Finding kinds") in
 * the file at path: lines that start with "| `".  Returns how many (at
 * most max), -1 when the file or the section is missing. */
static int doc_rows(const char *path, const char *title, char rows[][1024], int max) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  char line[1024];
  int in = 0, n = 0, found = 0;
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = 0;
    if (!strncmp(line, "### ", 4) || !strncmp(line, "## ", 3)) {
      in = !strcmp(line, title);
      found |= in;
      continue;
    }
    if (in && !strncmp(line, "| `", 3) && n < max) snprintf(rows[n++], sizeof rows[0], "%s", line);
  }
  fclose(f);
  return found ? n : -1;
}

static void check_docs(const char *path) {
  static char rows[2 * NSP_FIND_KIND_COUNT + 8][1024];
  int n = doc_rows(path, "### Finding kinds", rows, (int)(sizeof rows / sizeof *rows));
  ok(n >= 0, "%s has a section \"### Finding kinds\"", path);
  ok(n == NSP_FIND_KIND_COUNT, "it lists %d kinds, the kinds table %d", n, NSP_FIND_KIND_COUNT);
  for (int k = 0; k < NSP_FIND_KIND_COUNT; k++) {
    char want[1024];
    row(want, sizeof want, k);
    int same = k < n && !strcmp(rows[k], want);
    ok(same, "row %d is %s", k + 1, nsp_finding_kind_name(k));
    if (!same) printf("#   want: %s\n#   have: %s\n", want, k < n ? rows[k] : "(none)");
  }
}

/* The settings table's rows, as docs/REPORT.md writes them. */
#define NSP_SETTING_DOC(name, cls, meaning) {name, cls, meaning},
static const struct {
  const char *name;
  enum nsp_setting_class cls;
  const char *meaning;
} settings[] = {NSP_NCCL_SETTINGS(NSP_SETTING_DOC)};
#undef NSP_SETTING_DOC
#define NSETTINGS ((int)(sizeof settings / sizeof *settings))

static void setting_row(char *buf, size_t len, int i) {
  snprintf(buf, len, "| `%s` | %s | %s |", settings[i].name, nsp_setting_class_name(settings[i].cls),
           settings[i].meaning);
}

static void check_settings(const char *path) {
  static char rows[2 * NSETTINGS + 8][1024];
  int n = doc_rows(path, "### NCCL settings", rows, (int)(sizeof rows / sizeof *rows));
  ok(n >= 0, "%s has a section \"### NCCL settings\"", path);
  ok(n == NSETTINGS, "it lists %d settings, the settings table %d", n, NSETTINGS);
  int sorted = 1, looked_up = 1;
  for (int i = 0; i < NSETTINGS; i++) {
    char want[1024];
    setting_row(want, sizeof want, i);
    int same = i < n && !strcmp(rows[i], want);
    ok(same, "settings row %d is %s", i + 1, settings[i].name);
    if (!same) printf("#   want: %s\n#   have: %s\n", want, i < n ? rows[i] : "(none)");
    if (i && strcmp(settings[i - 1].name, settings[i].name) >= 0) sorted = 0;
    const char *m;
    looked_up &= nsp_nccl_setting_class(settings[i].name, &m) == settings[i].cls && m && !strcmp(m, settings[i].meaning) &&
                 !strncmp(settings[i].name, "NCCL_", 5) && settings[i].cls < NSP_SETTING_UNKNOWN;
  }
  ok(sorted, "the settings table is sorted by name, each name once");
  ok(looked_up, "every setting reads back its class and meaning");
  ok(nsp_nccl_setting_class("NCCL_NSP_NOT_A_SETTING", NULL) == NSP_SETTING_UNKNOWN &&
         nsp_nccl_setting_class("NCCL_LOCAL_RANK", NULL) == NSP_SETTING_RANK,
     "a name not in it is unknown, or rank-specific when it holds RANK");
}

/* The library-frame table's row i, as docs/REPORT.md writes it. */
static void pyframe_row(char *buf, size_t len, size_t i) {
  const char *what = "";
  const char *pattern = nsp_pyframe_library_row(i, &what);
  snprintf(buf, len, "| `%s` | %s |", pattern, what);
}

static void check_pyframes(const char *path) {
  static char rows[64][1024];
  int n = doc_rows(path, "### Python library frames", rows, (int)(sizeof rows / sizeof *rows));
  int want_n = (int)nsp_pyframe_nlibrary();
  ok(n >= 0, "%s has a section \"### Python library frames\"", path);
  ok(n == want_n, "it lists %d patterns, the library-frame table %d", n, want_n);
  for (int i = 0; i < want_n; i++) {
    char want[1024];
    pyframe_row(want, sizeof want, (size_t)i);
    int same = i < n && !strcmp(rows[i], want);
    ok(same, "library-frame row %d", i + 1);
    if (!same) printf("#   want: %s\n#   have: %s\n", want, i < n ? rows[i] : "(none)");
  }
}

static void check_rules(void) {
  for (int k = 0; k < NSP_FIND_KIND_COUNT; k++) {
    int makers = 0;
    for (size_t r = 0; r < nsp_nrules; r++)
      for (size_t i = 0; i < nsp_rules[r]->nkinds; i++) makers += nsp_rules[r]->kinds[i] == k;
    const struct nsp_rule *r = nsp_rule_of_kind(k);
    ok(makers == 1 && r && (r->check || r->check_comm), "%s is made by one rule (%d do)", nsp_finding_kind_name(k), makers);
  }
  for (size_t r = 0; r < nsp_nrules; r++) {
    const struct nsp_rule *rule = nsp_rules[r];
    int known = rule->name && rule->checks && (rule->check || rule->check_comm) &&
                (rule->link != NULL) == (rule->link_stage != NSP_LINK_NONE);
    for (size_t i = 0; i < rule->nkinds; i++) known &= nsp_finding_kind_info(rule->kinds[i]) != NULL;
    ok(known, "rule %s: named, checks, kinds in the table, a link with a stage", rule->name ? rule->name : "?");
  }
}

static void check_names(void) {
  for (int k = 0; k < NSP_FIND_KIND_COUNT; k++) {
    const struct nsp_finding_kind_info *info = nsp_finding_kind_info(k);
    ok(info && info->kind == k && nsp_finding_kind_from_name(info->name) == k && info->hint[0],
       "%s: its line's id, its name read back, a hint", nsp_finding_kind_name(k));
  }
  ok(nsp_finding_kind_info(NSP_FIND_KIND_COUNT) == NULL && nsp_finding_kind_info(-1) == NULL,
     "no line out of range");
}

int main(int argc, char **argv) {
  if (argc == 2 && !strcmp(argv[1], "--markdown")) {
    for (int k = 0; k < NSP_FIND_KIND_COUNT; k++) {
      char buf[1024];
      row(buf, sizeof buf, k);
      puts(buf);
    }
    return 0;
  }
  if (argc == 2 && !strcmp(argv[1], "--markdown-settings")) {
    for (int i = 0; i < NSETTINGS; i++) {
      char buf[1024];
      setting_row(buf, sizeof buf, i);
      puts(buf);
    }
    return 0;
  }
  if (argc == 2 && !strcmp(argv[1], "--markdown-pyframes")) {
    for (size_t i = 0; i < nsp_pyframe_nlibrary(); i++) {
      char buf[1024];
      pyframe_row(buf, sizeof buf, i);
      puts(buf);
    }
    return 0;
  }
  if (argc != 2) {
    fprintf(stderr, "usage: test_an_tables REPORT.md | --markdown | --markdown-settings | --markdown-pyframes\n");
    return 2;
  }
  check_docs(argv[1]);
  check_settings(argv[1]);
  check_pyframes(argv[1]);
  check_rules();
  check_names();
  printf("1..%d\n", tests);
  return failures != 0;
}
