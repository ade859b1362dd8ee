/* nsp_format_doc.c - docs/FORMAT.md's record tables, from the schema.
 *
 *   nsp_format_doc FORMAT.md           exit 0 when FORMAT.md's generated
 *                                      block matches the schema, 1 (with
 *                                      the first differing line) when not
 *   nsp_format_doc --write FORMAT.md   rewrites the block in place
 *   nsp_format_doc --print             prints the block
 *
 * The block sits between the marker lines NSP_BEGIN and NSP_END below;
 * everything else in FORMAT.md is prose written by hand.  A field or kind
 * added to include/ncclspy/trace_schema.h without regenerating the block
 * fails the `format-doc` test. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nsp_sbuf.h"
#include "nsp_schema.h"

#define NSP_BEGIN "<!-- record-schema: generated from include/ncclspy/trace_schema.h by tests/format/nsp_format_doc --write; do not edit -->\n"
#define NSP_END "<!-- /record-schema -->\n"

/* Markdown table cells: '|' would end the cell. */
static void cell(struct nsp_sbuf *o, const char *s) {
  for (; *s; s++) nsp_sbuf_printf(o, *s == '|' ? "\\|" : "%c", *s);
}

static const char *since(unsigned minor, char *buf, size_t len) {
  snprintf(buf, len, "1.%u", minor);
  return buf;
}

static void render(struct nsp_sbuf *o) {
  char b[16];
  nsp_sbuf_printf(o, "%s\n", NSP_BEGIN);
  nsp_sbuf_printf(o, "Encodings:\n\n| token | name | what is written |\n|---|---|---|\n");
  for (int w = 0; w < NSP_WIRES_N; w++) {
    nsp_sbuf_printf(o, "| %s | %s | ", nsp_wire_token(w), nsp_wire_name(w));
    cell(o, nsp_wire_text(w));
    nsp_sbuf_printf(o, " |\n");
  }
  nsp_sbuf_printf(o, "\nUnits:\n\n| unit | a value is |\n|---|---|\n");
  for (int u = 0; u < NSP_UNITS_N; u++) {
    nsp_sbuf_printf(o, "| %s | ", nsp_unit_name(u));
    cell(o, nsp_unit_text(u));
    nsp_sbuf_printf(o, " |\n");
  }
  nsp_sbuf_printf(o, "\n| kind | name | since | payload |\n|---|---|---|---|\n");
  for (size_t k = 0; k < nsp_schema_nkinds(); k++) {
    const struct nsp_kind_info *ki = nsp_schema_kind_at(k);
    nsp_sbuf_printf(o, "| %d | %s | %s | ", ki->kind, ki->name, since(ki->since, b, sizeof b));
    for (size_t i = 0; i < ki->nfields; i++) {
      const struct nsp_field_info *f = &ki->fields[i];
      nsp_sbuf_printf(o, "%s%s %s", i ? ", " : "", nsp_wire_name(f->wire), f->name);
      if (f->cm) nsp_sbuf_printf(o, " [%s]", f->cm_name);
      if (f->since > ki->since) nsp_sbuf_printf(o, " (%s)", since(f->since, b, sizeof b));
    }
    nsp_sbuf_printf(o, " |\n");
  }
  for (size_t k = 0; k < nsp_schema_nkinds(); k++) {
    const struct nsp_kind_info *ki = nsp_schema_kind_at(k);
    nsp_sbuf_printf(o, "\n#### %d %s (%s)\n\n", ki->kind, ki->name, since(ki->since, b, sizeof b));
    nsp_sbuf_printf(o, "%s\n\n", ki->meaning);
    int call = ki->kind == NSP_REC_CALL;
    nsp_sbuf_printf(o, call ? "| field | encoding | present | prediction | unit | since | default | meaning |\n"
                  "|---|---|---|---|---|---|---|---|\n"
                : "| field | encoding | unit | since | default | meaning |\n|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < ki->nfields; i++) {
      const struct nsp_field_info *f = &ki->fields[i];
      nsp_sbuf_printf(o, "| %s | %s | ", f->name, nsp_wire_name(f->wire));
      if (call) {
        if (f->cm) nsp_sbuf_printf(o, "bit %d (%s) | %s | ", __builtin_ctz(f->cm), f->cm_name, f->pred);
        else nsp_sbuf_printf(o, "always | - | ");
      }
      nsp_sbuf_printf(o, "%s | %s | %s | ", nsp_unit_name(f->unit), since(f->since, b, sizeof b),
          f->wire == NSP_WIRE_ENV || f->wire == NSP_WIRE_FRAMES ? "none" : f->def);
      cell(o, f->meaning);
      nsp_sbuf_printf(o, " |\n");
    }
    if (ki->nnames) {
      nsp_sbuf_printf(o, "\n%s:\n\n| constant | value | word | since | meaning |\n|---|---|---|---|---|\n",
          ki->kind == NSP_REC_DROPPED ? "Reasons" : "Flags");
      for (size_t i = 0; i < ki->nnames; i++) {
        const struct nsp_name_info *n = &ki->names[i];
        nsp_sbuf_printf(o, "| NSP_%s_%s | %llu | %s | %s | ", ki->names_set, n->name, (unsigned long long)n->value, n->word,
            since(n->since, b, sizeof b));
        cell(o, n->meaning);
        nsp_sbuf_printf(o, " |\n");
      }
    }
  }
  nsp_sbuf_printf(o, "\n%s", NSP_END);
}

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  struct nsp_sbuf o = {0};
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) nsp_sbuf_printf(&o, "%.*s", (int)n, buf);
  fclose(f);
  *len = o.len;
  return nsp_sbuf_take(&o);
}

static int run(int argc, char **argv, struct nsp_sbuf *want, char **docp) {
  render(want);
  if (want->oom || !want->s) {
    fprintf(stderr, "nsp_format_doc: out of memory\n");
    return 2;
  }
  if (argc == 2 && !strcmp(argv[1], "--print")) {
    fputs(want->s, stdout);
    return 0;
  }
  int write = argc == 3 && !strcmp(argv[1], "--write");
  if (argc != 2 + write) {
    fprintf(stderr, "usage: nsp_format_doc [--write] FORMAT.md | --print\n");
    return 2;
  }
  const char *path = argv[1 + write];
  size_t len;
  char *doc = *docp = slurp(path, &len);
  if (!doc) {
    perror(path);
    return 2;
  }
  char *b = strstr(doc, NSP_BEGIN), *e = b ? strstr(b, NSP_END) : NULL;
  if (!b || !e) {
    fprintf(stderr, "%s: no generated record-schema block (marker lines %s...%s)\n", path, NSP_BEGIN, NSP_END);
    return 1;
  }
  e += strlen(NSP_END);
  if (write) {
    /* The hand-written parts that name the version, brought up to date:
     * the title, and the header table's minor row. */
    char *nl = strchr(doc, '\n'), *row = strstr(doc, "| 10 | 2 | minor | ");
    if (!strncmp(doc, "# The ncclspy trace format, version ", 36) && nl && nl < b && row && row < b) {
      char *rend = strchr(row + 19, ';');
      if (rend) {
        FILE *f = fopen(path, "wb");
        if (!f) {
          perror(path);
          return 2;
        }
        fprintf(f, "# The ncclspy trace format, version %d.%d", NSP_FORMAT_MAJOR, NSP_FORMAT_MINOR);
        fwrite(nl, 1, (size_t)(row - nl), f);
        fprintf(f, "| 10 | 2 | minor | %d (%d.%d)", NSP_FORMAT_MINOR, NSP_FORMAT_MAJOR, NSP_FORMAT_MINOR);
        fwrite(rend, 1, (size_t)(b - rend), f);
        if (fputs(want->s, f) < 0 || fwrite(e, 1, len - (size_t)(e - doc), f) != len - (size_t)(e - doc) ||
            fclose(f) != 0) {
          perror(path);
          return 2;
        }
        return 0;
      }
    }
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(doc, 1, (size_t)(b - doc), f) != (size_t)(b - doc) || fputs(want->s, f) < 0 ||
        fwrite(e, 1, len - (size_t)(e - doc), f) != len - (size_t)(e - doc) || fclose(f) != 0) {
      perror(path);
      return 2;
    }
    return 0;
  }
  /* The hand-written parts that name the version. */
  char title[64], minor_row[64];
  snprintf(title, sizeof title, "# The ncclspy trace format, version %d.%d\n", NSP_FORMAT_MAJOR, NSP_FORMAT_MINOR);
  snprintf(minor_row, sizeof minor_row, "| 10 | 2 | minor | %d (%d.%d);", NSP_FORMAT_MINOR, NSP_FORMAT_MAJOR,
           NSP_FORMAT_MINOR);
  if (strncmp(doc, title, strlen(title)) || !strstr(doc, minor_row)) {
    fprintf(stderr, "%s: its title and the header table's minor row must say format %d.%d (NSP_FORMAT_MINOR in "
            "include/ncclspy/trace.h): \"%.*s\" and \"%s\"\n",
            path, NSP_FORMAT_MAJOR, NSP_FORMAT_MINOR, (int)strlen(title) - 1, title, minor_row);
    return 1;
  }
  size_t have = (size_t)(e - b);
  if (have == want->len && !memcmp(b, want->s, have)) {
    printf("ok: %s's record tables match the schema (%zu kinds)\n", path, nsp_schema_nkinds());
    return 0;
  }
  /* The first line that differs, to say what to look at. */
  size_t i = 0, line = 1;
  while (i < have && i < want->len && b[i] == want->s[i]) line += b[i++] == '\n';
  size_t ls = i;
  while (ls > 0 && want->s[ls - 1] != '\n') ls--;
  const char *wl = want->s + ls, *hl = b + ls;
  fprintf(stderr,
          "%s: the record tables differ from include/ncclspy/trace_schema.h at line %zu of the block:\n"
          "  schema: %.*s\n  doc:    %.*s\n"
          "regenerate with: nsp_format_doc --write %s (build/tests/format/)\n",
          path, line, (int)strcspn(wl, "\n"), wl, (int)strcspn(hl, "\n"), hl, path);
  return 1;
}

int main(int argc, char **argv) {
  struct nsp_sbuf want = {0};
  char *doc = NULL;
  int rc = run(argc, argv, &want, &doc);
  free(want.s);
  free(doc);
  return rc;
}
