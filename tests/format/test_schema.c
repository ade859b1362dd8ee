/* test_schema.c - the record schema holds together: for every kind, no
 * two fields share a member of the memory form, every field fits its
 * member and survives an encode and decode with a value of its own and
 * with its type's extremes, versions are in order, a kind has at most one
 * named (FLAGS or REASON) field and its names fit it, the typed accessors
 * read what the schema says, and the kinds a crash ring carries are those
 * the shim puts there.  A field added to include/ncclspy/trace_schema.h is
 * covered with no edit here.
 *
 *   test_schema [SNAPSHOT]            also checks the schema only grows:
 *                                     SNAPSHOT (tests/format/schema.txt)
 *                                     lists what earlier formats wrote
 *   test_schema --write SNAPSHOT      rewrites it, after a field or kind
 *                                     was appended on purpose
 * Each kind's fields in the snapshot must still come first, in order,
 * with the same encoding, presence, prediction, place in the memory form
 * (crash rings of older shims locate fields by it), version and default;
 * named values likewise.  So moving, removing or re-encoding a field fails
 * here, while appending one only asks for --write. */
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nsp_schema.h"

static int failed;
#define CHECK(cond, ...)                     \
  do {                                       \
    if (!(cond)) {                           \
      failed++;                              \
      fprintf(stderr, "FAIL: " __VA_ARGS__); \
      fputc('\n', stderr);                   \
    }                                        \
  } while (0)

/* A value for field i of a kind that fits its member and its encoding:
 * distinct per field, and nonzero, so a field left at its default shows. */
static uint64_t value_for(const struct nsp_field_info *f, size_t i) {
  uint64_t v = 3 + 5 * (uint64_t)i;
  if (f->unit == NSP_UNIT_COMM) return 1 + i % 7; /* a comm index below NSP_MAX_COMMS */
  if (f->is_signed && i % 2) return (uint64_t)-(int64_t)v;
  return v;
}

/* Field i's value in pass `pass`: 0 distinct small values, 1 the type's
 * largest, 2 its smallest (comm indices stay in range). */
static uint64_t value_at(const struct nsp_field_info *f, size_t i, int pass) {
  if (pass == 0 || f->unit == NSP_UNIT_COMM) return value_for(f, i);
  unsigned bits = 8u * f->type_size;
  if (f->is_signed) {
    int64_t max = bits >= 64 ? INT64_MAX : (int64_t)((UINT64_C(1) << (bits - 1)) - 1);
    return pass == 1 ? (uint64_t)max : (uint64_t)(-max - 1);
  }
  uint64_t max = bits >= 64 ? UINT64_MAX : (UINT64_C(1) << bits) - 1;
  return pass == 1 ? max : 1;
}

static void check_static(const struct nsp_kind_info *k) {
  int named = 0;
  CHECK(k->since <= NSP_FORMAT_MINOR, "%s: since 1.%u is newer than the format, 1.%d", k->name, k->since,
        NSP_FORMAT_MINOR);
  for (size_t i = 0; i < k->nfields; i++) {
    const struct nsp_field_info *f = &k->fields[i];
    CHECK(f->since >= k->since && f->since <= NSP_FORMAT_MINOR, "%s.%s: since 1.%u, its kind 1.%u, the format 1.%d",
          k->name, f->name, f->since, k->since, NSP_FORMAT_MINOR);
    /* Fields are appended: a later field is never older. */
    CHECK(i == 0 || f->since >= k->fields[i - 1].since, "%s.%s: since 1.%u, older than %s before it (1.%u)", k->name,
          f->name, f->since, k->fields[i - 1].name, k->fields[i - 1].since);
    if ((f->loc == NSP_FLOC_REC || f->loc == NSP_FLOC_EXT) && f->wire != NSP_WIRE_S)
      CHECK(f->type_size <= f->size, "%s.%s: a %s does not fit its %u-byte member", k->name, f->name, f->type,
            f->size);
    if ((f->unit == NSP_UNIT_FLAGS || f->unit == NSP_UNIT_REASON) && f->loc != NSP_FLOC_WIRE) {
      named++;
      CHECK(k->nnames > 0, "%s.%s: a %s field without a names list (the kind's names column)", k->name, f->name,
            nsp_unit_name(f->unit));
      for (size_t n = 0; n < k->nnames; n++) {
        uint64_t max = f->type_size >= 8 ? UINT64_MAX : (UINT64_C(1) << (8u * f->type_size)) - 1;
        CHECK(k->names[n].value <= max, "%s.%s: NSP_%s_%s does not fit a %s", k->name, f->name, k->names_set,
              k->names[n].name, f->type);
        CHECK(k->names[n].since >= k->since && k->names[n].since <= NSP_FORMAT_MINOR, "%s: NSP_%s_%s since 1.%u",
              k->name, k->names_set, k->names[n].name, k->names[n].since);
        if (f->unit == NSP_UNIT_REASON) /* reasons index arrays of counts (NSP_DROP_END) */
          CHECK(k->names[n].value == n + 1, "%s.%s: NSP_%s_%s is %llu, not %zu: reasons count up from 1", k->name,
                f->name, k->names_set, k->names[n].name, (unsigned long long)k->names[n].value, n + 1);
      }
    }
  }
  CHECK(named <= 1, "%s: %d FLAGS/REASON fields share the kind's one names list", k->name, named);
  CHECK(named || !k->nnames, "%s: a names list (%s) but no FLAGS or REASON field", k->name, k->names_set);
}

static void check_kind(const struct nsp_kind_info *k, int pass) {
  /* No two fields in one member. */
  for (size_t i = 0; i < k->nfields; i++)
    for (size_t j = i + 1; j < k->nfields; j++) {
      const struct nsp_field_info *a = &k->fields[i], *b = &k->fields[j];
      int same_place = a->loc == b->loc && (a->loc == NSP_FLOC_REC || a->loc == NSP_FLOC_EXT) &&
                       a->offset < b->offset + b->size && b->offset < a->offset + a->size;
      CHECK(!same_place, "%s: fields %s and %s share a member", k->name, a->name, b->name);
      CHECK(strcmp(a->name, b->name) != 0, "%s: two fields named %s", k->name, a->name);
    }
  /* Every field, set to its own value, encodes and decodes back. */
  struct nsp_rec r;
  struct nsp_rec_ext x;
  memset(&r, 0, sizeof r);
  memset(&x, 0, sizeof x);
  char text[64][32];
  const char *env[2] = {"NAME", "value"};
  const char *mod[1] = {"/lib/m.so"}, *sym[1] = {"f"};
  uint64_t off[1] = {42};
  r.kind = (uint8_t)k->kind;
  if (k->ext != NSP_KEXT_NO) r.ext = &x;
  for (size_t i = 0; i < k->nfields; i++) {
    const struct nsp_field_info *f = &k->fields[i];
    if (f->wire == NSP_WIRE_S) {
      snprintf(text[i % 64], sizeof text[0], "s%zu", i);
      const char *s = text[i % 64];
      memcpy((unsigned char *)(f->loc == NSP_FLOC_EXT ? (void *)&x : (void *)&r) + f->offset, &s, sizeof s);
    } else if (f->loc == NSP_FLOC_ENV) {
      x.nenv = 1;
      x.env = env;
    } else if (f->loc == NSP_FLOC_FRAMES) {
      x.nframes = 1;
      x.frame_module = mod;
      x.frame_symbol = sym;
      x.frame_offset = off;
    } else if (f->loc == NSP_FLOC_REC || f->loc == NSP_FLOC_EXT) {
      nsp_field_set_uint(&r, f, value_at(f, i, pass)); /* r.ext is &x for kinds with ext */
    }
  }
  struct nsp_buf buf = {0};
  struct nsp_codec enc = {0}, dec = {0};
  struct nsp_dec_store st = {0};
  nsp_codec_reset(&enc);
  nsp_codec_reset(&dec);
  CHECK(nsp_encode(&buf, &enc, &r) == 0, "%s: encode failed", k->name);
  const uint8_t *p = buf.data;
  struct nsp_rec got;
  CHECK(nsp_decode(&p, buf.data + buf.len, &dec, &got, &st) == 1, "%s: decode failed (pass %d)", k->name, pass);
  CHECK(p == buf.data + buf.len, "%s: decode left bytes", k->name);
  CHECK(got.kind == k->kind, "%s: decoded as kind %d", k->name, got.kind);
  for (size_t i = 0; i < k->nfields && got.kind == k->kind; i++) {
    const struct nsp_field_info *f = &k->fields[i];
    if (f->loc == NSP_FLOC_WIRE) continue;
    if ((f->loc != NSP_FLOC_REC) && !got.ext) {
      CHECK(0, "%s.%s: decoded without ext", k->name, f->name);
      continue;
    }
    if (f->wire == NSP_WIRE_S) {
      CHECK(!strcmp(nsp_field_str(&got, f), nsp_field_str(&r, f)), "%s.%s: \"%s\" came back \"%s\"", k->name,
            f->name, nsp_field_str(&r, f), nsp_field_str(&got, f));
    } else if (f->loc == NSP_FLOC_ENV) {
      CHECK(got.ext->nenv == 1 && !strcmp(got.ext->env[1], "value"), "%s.%s: env lost", k->name, f->name);
    } else if (f->loc == NSP_FLOC_FRAMES) {
      CHECK(got.ext->nframes == 1 && got.ext->frame_offset[0] == 42 && !strcmp(got.ext->frame_symbol[0], "f"),
            "%s.%s: frames lost", k->name, f->name);
    } else {
      CHECK(nsp_field_uint(&got, f) == nsp_field_uint(&r, f), "%s.%s: %llu came back %llu (pass %d)", k->name,
            f->name, (unsigned long long)nsp_field_uint(&r, f), (unsigned long long)nsp_field_uint(&got, f), pass);
      CHECK(nsp_field_uint(&r, f) != 0, "%s.%s: the test's value did not reach the member", k->name, f->name);
    }
  }
  nsp_buf_free(&buf);
  nsp_codec_free(&enc);
  nsp_codec_free(&dec);
  nsp_dec_store_free(&st);
}

/* The schema as the snapshot lists it: a line per kind, per field, per
 * named value. */
static char *snapshot(void) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) return NULL;
  fprintf(f, "format %d.%d\n", NSP_FORMAT_MAJOR, NSP_FORMAT_MINOR);
  /* The memory form's members: the crash ring's field ids. */
#define NSP_SLOT_LINE_(ID, member, type, is_signed, ring_default)                                              \
  fprintf(f, "slot %d %s @%zu/%zu signed=%d ring_default=%d\n", NSP_RF_##ID, #member, offsetof(struct nsp_rec, member), \
          sizeof(((struct nsp_rec *)0)->member), is_signed, ring_default);
  NSP_REC_SLOTS(NSP_SLOT_LINE_)
#undef NSP_SLOT_LINE_
  for (size_t i = 0; i < nsp_schema_nkinds(); i++) {
    const struct nsp_kind_info *k = nsp_schema_kind_at(i);
    fprintf(f, "kind %s %d since=1.%u ext=%u ring=%u names=%s\n", k->name, k->kind, k->since, k->ext, k->ring,
            k->names_set);
    for (size_t j = 0; j < k->nfields; j++) {
      const struct nsp_field_info *fi = &k->fields[j];
      /* Where the memory form keeps it matters to crash rings (REC);
       * struct nsp_rec_ext never leaves the process. */
      char where[32];
      if (fi->loc == NSP_FLOC_REC) snprintf(where, sizeof where, "rec@%u/%u", fi->offset, fi->size);
      else snprintf(where, sizeof where, "%s", fi->loc == NSP_FLOC_WIRE ? "wire" : "ext");
      fprintf(f, "  field %s.%s %s %s %s %s %s since=1.%u default=%s\n", k->name, fi->name, nsp_wire_token(fi->wire),
              fi->cm_name, fi->pred, where, fi->type, fi->since, fi->def);
    }
    for (size_t j = 0; j < k->nnames; j++)
      fprintf(f, "  name %s NSP_%s_%s=%llu %s since=1.%u\n", k->name, k->names_set, k->names[j].name,
              (unsigned long long)k->names[j].value, k->names[j].word, k->names[j].since);
  }
  fclose(f);
  return buf;
}

/* Every line of the snapshot still stands in the schema, and lines of one
 * kind keep their order: what older files hold reads as it did. */
static void check_snapshot(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) {
    CHECK(0, "%s: cannot read the snapshot", path);
    return;
  }
  char *now = snapshot(), line[512];
  const char *from = now; /* lines of the current kind must come in order */
  int lineno = 0;
  unsigned snap_minor = 0;
  while (now && fgets(line, sizeof line, f)) {
    lineno++;
    if (sscanf(line, "format 1.%u", &snap_minor) == 1) continue;
    if (!strncmp(line, "kind ", 5) || !strncmp(line, "slot ", 5)) from = now;
    const char *at = strstr(from, line);
    CHECK(at != NULL,
          "%s:%d: no longer in the schema, or out of its place: %s  (a field or kind may only be appended; after "
          "appending, run: test_schema --write %s)",
          path, lineno, line, path);
    if (at) from = at + strlen(line);
  }
  fclose(f);
  free(now);
  /* What the snapshot lacks was added since: in a newer format version,
   * or older files would show it with a value they never had. */
  f = fopen(path, "r");
  char *have = NULL;
  size_t hlen = 0;
  if (f) {
    FILE *m = open_memstream(&have, &hlen);
    while (m && fgets(line, sizeof line, f)) fputs(line, m);
    if (m) fclose(m);
    fclose(f);
  }
  for (size_t i = 0; have && i < nsp_schema_nkinds(); i++) {
    const struct nsp_kind_info *k = nsp_schema_kind_at(i);
    for (size_t j = 0; j < k->nfields; j++) {
      char key[128];
      snprintf(key, sizeof key, "  field %s.%s ", k->name, k->fields[j].name);
      if (!strstr(have, key))
        CHECK(k->fields[j].since > snap_minor,
              "%s.%s: new since %s (format 1.%u), but its since is 1.%u: a new field goes in a new version", k->name,
              k->fields[j].name, path, snap_minor, k->fields[j].since);
    }
  }
  free(have);
}

int main(int argc, char **argv) {
  if (argc == 3 && !strcmp(argv[1], "--write")) {
    char *now = snapshot();
    FILE *f = fopen(argv[2], "w");
    if (!now || !f || fputs(now, f) < 0 || fclose(f) != 0) {
      perror(argv[2]);
      return 2;
    }
    free(now);
    return 0;
  }
  size_t n = nsp_schema_nkinds();
  CHECK(n >= 12, "only %zu kinds", n);
  for (size_t i = 0; i < n; i++) {
    const struct nsp_kind_info *k = nsp_schema_kind_at(i);
    CHECK(nsp_schema_kind(k->kind) == k, "kind %d not found by value", k->kind);
    check_static(k);
    for (int pass = 0; pass < 3; pass++) check_kind(k, pass);
  }
  if (argc == 2) check_snapshot(argv[1]);
  CHECK(nsp_schema_kind(0) == NULL && nsp_schema_kind(999) == NULL, "unknown kinds found");
  /* The accessors read the member the schema names. */
  struct nsp_rec r;
  memset(&r, 0, sizeof r);
  r.kind = NSP_REC_SIGNAL;
  nsp_rec_signal_set_tid(&r, 4242);
  nsp_rec_signal_set_sender_pid(&r, -7);
  const struct nsp_kind_info *sk = nsp_schema_kind(NSP_REC_SIGNAL);
  for (size_t i = 0; i < sk->nfields; i++) {
    if (!strcmp(sk->fields[i].name, "tid")) CHECK(nsp_field_uint(&r, &sk->fields[i]) == 4242, "SIGNAL.tid");
    if (!strcmp(sk->fields[i].name, "sender_pid"))
      CHECK((int64_t)nsp_field_uint(&r, &sk->fields[i]) == -7, "SIGNAL.sender_pid");
  }
  CHECK(nsp_rec_signal_tid(&r) == 4242 && nsp_rec_signal_sender_pid(&r) == -7, "SIGNAL accessors");
  nsp_rec_completion_set_t_seen(&r, 99);
  CHECK(nsp_rec_completion_t_seen(&r) == 99 && nsp_rec_heartbeat_pending(&r) == 99,
        "COMPLETION.t_seen and HEARTBEAT.pending share the count member");
  /* Writer-made kinds never pass through the crash ring. */
  CHECK(nsp_schema_kind(NSP_REC_DROPPED)->ring == NSP_KRING_WRITER, "DROPPED in the ring");
  CHECK(nsp_schema_kind(NSP_REC_RINGPOS)->ring == NSP_KRING_WRITER, "RINGPOS in the ring");
  if (failed) {
    fprintf(stderr, "%d checks failed\n", failed);
    return 1;
  }
  printf("ok: %zu kinds round-trip field by field\n", n);
  return 0;
}
