/* test_schema.c - the record schema holds together: for every kind, no
 * two fields share a member of the memory form, every field survives an
 * encode and decode with a value of its own, the typed accessors read what
 * the schema says, and the kinds a crash ring carries are those the shim
 * puts there.  A field added to include/ncclspy/trace_schema.h is covered
 * with no edit here. */
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

static void set_member(void *base, const struct nsp_field_info *f, uint64_t v) {
  uint8_t v8 = (uint8_t)v;
  uint16_t v16 = (uint16_t)v;
  uint32_t v32 = (uint32_t)v;
  unsigned char *p = (unsigned char *)base + f->offset;
  switch (f->size) {
    case 1: memcpy(p, &v8, 1); break;
    case 2: memcpy(p, &v16, 2); break;
    case 4: memcpy(p, &v32, 4); break;
    default: memcpy(p, &v, 8);
  }
}

static void check_kind(const struct nsp_kind_info *k) {
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
      set_member(f->loc == NSP_FLOC_EXT ? (void *)&x : (void *)&r, f, value_for(f, i));
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
  CHECK(nsp_decode(&p, buf.data + buf.len, &dec, &got, &st) == 1, "%s: decode failed", k->name);
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
      CHECK(nsp_field_uint(&got, f) == nsp_field_uint(&r, f), "%s.%s: %llu came back %llu", k->name, f->name,
            (unsigned long long)nsp_field_uint(&r, f), (unsigned long long)nsp_field_uint(&got, f));
      CHECK(nsp_field_uint(&r, f) != 0, "%s.%s: the test's value did not reach the member", k->name, f->name);
    }
  }
  nsp_buf_free(&buf);
  nsp_codec_free(&enc);
  nsp_codec_free(&dec);
  nsp_dec_store_free(&st);
}

int main(void) {
  size_t n = nsp_schema_nkinds();
  CHECK(n >= 12, "only %zu kinds", n);
  for (size_t i = 0; i < n; i++) {
    const struct nsp_kind_info *k = nsp_schema_kind_at(i);
    CHECK(nsp_schema_kind(k->kind) == k, "kind %d not found by value", k->kind);
    check_kind(k);
  }
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
