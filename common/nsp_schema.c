/* nsp_schema.c - the record schema as data (nsp_schema.h). */
#include "nsp_schema.h"

#include <stddef.h>
#include <string.h>

#define NSP_FI_SIGNED_(type) _Generic((type)0, int8_t: 1, int16_t: 1, int32_t: 1, int64_t: 1, default: 0)
#define NSP_FI_REC_(m) NSP_FLOC_REC, sizeof(((struct nsp_rec *)0)->m), offsetof(struct nsp_rec, m)
#define NSP_FI_LOC_R(m) NSP_FI_REC_(m)
#define NSP_FI_LOC_X(m) NSP_FLOC_EXT, sizeof(((struct nsp_rec_ext *)0)->m), offsetof(struct nsp_rec_ext, m)
#define NSP_FI_LOC_XENV() NSP_FLOC_ENV, 0, 0
#define NSP_FI_LOC_XFRAMES() NSP_FLOC_FRAMES, 0, 0
#define NSP_FI_LOC_WIRE() NSP_FLOC_WIRE, 0, 0
#define NSP_FI_AT_(l_, s_, o_) .loc = (l_), .size = (s_), .offset = (o_)
#define NSP_FI_AT(...) NSP_FI_AT_(__VA_ARGS__)
/* A default as a number: 0 for strings, whose default is "" (the string
 * branch is never selected for them). */
#define NSP_FI_DEFV_(ftype, fdef) _Generic((ftype)0, const char *: 0, default: (int64_t)(fdef))

#define NSP_FI_(K, fname, fenc, fcm, fpred, where, ftype, funit, fsince, fdef, fmeaning)                           \
  {.name = #fname, .wire = NSP_WIRE_##fenc, .unit = NSP_UNIT_##funit, NSP_FI_AT(NSP_FI_LOC_##where),          \
   .since = (fsince), .is_signed = NSP_FI_SIGNED_(ftype), .type_size = sizeof(ftype), .cm = NSP_CM_##fcm,      \
   .cm_name = #fcm, .pred = #fpred, .def = #fdef, .def_value = NSP_FI_DEFV_(ftype, fdef),                     \
   .type = #ftype, .meaning = (fmeaning)},

/* The crash ring's field table has room for every member of the memory form. */
_Static_assert(NSP_RF_END_ - 1 <= NSP_RING_MAX_FIELDS, "more slots than the ring's field table holds");

#define NSP_FI_LIST_(NAME, name, value, since, has_ext, ring, names, meaning) \
  static const struct nsp_field_info nsp_fields_##name[] = {NSP_REC_FIELDS_##NAME(NSP_FI_, NAME)};
NSP_REC_KINDS(NSP_FI_LIST_)

/* The named values of each kind's FLAGS or REASON field, then an end. */
#define NSP_NI_(P, nname, nvalue, nword, nsince, nmeaning) \
  {.name = #nname, .value = (nvalue), .word = (nword), .since = (nsince), .meaning = (nmeaning)},
#define NSP_NI_LIST_(NAME, name, value, since, has_ext, ring, names, meaning) \
  static const struct nsp_name_info nsp_names_##name[] = {NSP_REC_NAMES_##names(NSP_NI_, names){NULL, 0, NULL, 0, NULL}};
NSP_REC_KINDS(NSP_NI_LIST_)

#define NSP_KI_(NAME, kname, value, ksince, has_ext, kring, knames, kmeaning)                                       \
  {.kind = NSP_REC_##NAME, .name = #NAME, .lname = #kname, .since = (ksince), .ext = NSP_KEXT_##has_ext,    \
   .ring = NSP_KRING_##kring, .meaning = (kmeaning), .fields = nsp_fields_##kname,                           \
   .nfields = sizeof nsp_fields_##kname / sizeof nsp_fields_##kname[0], .names_set = #knames,                \
   .names = nsp_names_##kname, .nnames = sizeof nsp_names_##kname / sizeof nsp_names_##kname[0] - 1},
static const struct nsp_kind_info nsp_kinds[] = {NSP_REC_KINDS(NSP_KI_)};
#define NSP_NKINDS (sizeof nsp_kinds / sizeof nsp_kinds[0])

const struct nsp_kind_info *nsp_schema_kind(int kind) {
  for (size_t k = 0; k < NSP_NKINDS; k++)
    if (nsp_kinds[k].kind == kind) return &nsp_kinds[k];
  return NULL;
}

size_t nsp_schema_nkinds(void) { return NSP_NKINDS; }

int nsp_schema_time_field(const struct nsp_kind_info *k) {
  for (size_t i = 0; i < k->nfields; i++)
    if (k->fields[i].unit == NSP_UNIT_TIME) return (int)i;
  return -1;
}

const struct nsp_kind_info *nsp_schema_kind_at(size_t i) {
  return i < NSP_NKINDS ? &nsp_kinds[i] : NULL;
}

#define NSP_WIRE_ROW_(w, doc, txt) {#w, doc, txt},
static const struct {
  const char *token, *name, *text;
} nsp_wires[NSP_WIRES_N] = {NSP_REC_WIRES(NSP_WIRE_ROW_)};
#undef NSP_WIRE_ROW_
#define NSP_UNIT_ROW_(u, txt) {#u, txt},
static const struct {
  const char *token, *text;
} nsp_units[NSP_UNITS_N] = {NSP_REC_UNITS(NSP_UNIT_ROW_)};
#undef NSP_UNIT_ROW_

const char *nsp_wire_name(int wire) { return wire >= 0 && wire < NSP_WIRES_N ? nsp_wires[wire].name : "?"; }
const char *nsp_wire_token(int wire) { return wire >= 0 && wire < NSP_WIRES_N ? nsp_wires[wire].token : "?"; }
const char *nsp_wire_text(int wire) { return wire >= 0 && wire < NSP_WIRES_N ? nsp_wires[wire].text : "?"; }
const char *nsp_unit_name(int unit) { return unit >= 0 && unit < NSP_UNITS_N ? nsp_units[unit].token : "?"; }
const char *nsp_unit_text(int unit) { return unit >= 0 && unit < NSP_UNITS_N ? nsp_units[unit].text : "?"; }

#define NSP_LT_(K, fname, fenc, fcm, fpred, where, ftype, funit, fsince, fdef, fmeaning) \
  if (nsp_unit_is_mono(NSP_UNIT_##funit)) NSP_LT_TAKE_##where
#define NSP_LT_TAKE_R(m) \
  t = (uint64_t)(uintptr_t)r->m > t ? (uint64_t)(uintptr_t)r->m : t;
#define NSP_LT_TAKE_X(m) \
  t = r->ext && (uint64_t)(uintptr_t)r->ext->m > t ? (uint64_t)(uintptr_t)r->ext->m : t;
#define NSP_LT_TAKE_XENV() {}
#define NSP_LT_TAKE_XFRAMES() {}
#define NSP_LT_TAKE_WIRE() {}
#define NSP_LT_KIND_(NAME, name, value, since, has_ext, ring, names, meaning) \
  case NSP_REC_##NAME:                                                        \
    NSP_REC_FIELDS_##NAME(NSP_LT_, NAME) break;

uint64_t nsp_rec_latest_mono(const struct nsp_rec *r) {
  uint64_t t = 0;
  switch (r->kind) {
    NSP_REC_KINDS(NSP_LT_KIND_)
    default: break;
  }
  return t;
}

static const void *field_base(const struct nsp_rec *r, const struct nsp_field_info *f) {
  if (f->loc == NSP_FLOC_REC) return r;
  if (f->loc == NSP_FLOC_EXT) return r->ext;
  return NULL;
}

uint64_t nsp_field_uint(const struct nsp_rec *r, const struct nsp_field_info *f) {
  const unsigned char *b = field_base(r, f);
  if (!b || f->wire == NSP_WIRE_S) return 0;
  b += f->offset;
  uint8_t v8;
  uint16_t v16;
  uint32_t v32;
  uint64_t v = 0;
  switch (f->size) { /* host order: the member as the process stored it */
    case 1: memcpy(&v8, b, 1), v = v8; break;
    case 2: memcpy(&v16, b, 2), v = v16; break;
    case 4: memcpy(&v32, b, 4), v = v32; break;
    case 8: memcpy(&v, b, 8); break;
    default: return 0;
  }
  if (f->is_signed && f->size < 8) { /* sign-extend */
    unsigned sh = 64 - 8u * f->size;
    v = (uint64_t)((int64_t)(v << sh) >> sh);
  }
  return v;
}

void nsp_field_set_uint(struct nsp_rec *r, const struct nsp_field_info *f, uint64_t v) {
  unsigned char *b = f->loc == NSP_FLOC_REC ? (unsigned char *)r
                     : f->loc == NSP_FLOC_EXT ? (unsigned char *)(uintptr_t)r->ext : NULL;
  if (!b || f->wire == NSP_WIRE_S) return;
  uint8_t v8 = (uint8_t)v;
  uint16_t v16 = (uint16_t)v;
  uint32_t v32 = (uint32_t)v;
  switch (f->size) {
    case 1: memcpy(b + f->offset, &v8, 1); break;
    case 2: memcpy(b + f->offset, &v16, 2); break;
    case 4: memcpy(b + f->offset, &v32, 4); break;
    case 8: memcpy(b + f->offset, &v, 8); break;
    default: break;
  }
}

void nsp_rec_apply_defaults(struct nsp_rec *r, unsigned minor) {
  const struct nsp_kind_info *k = nsp_schema_kind(r->kind);
  for (size_t i = 0; k && i < k->nfields; i++)
    if (k->fields[i].since > minor && k->fields[i].loc == NSP_FLOC_REC)
      nsp_field_set_uint(r, &k->fields[i], (uint64_t)k->fields[i].def_value);
}

const char *nsp_field_str(const struct nsp_rec *r, const struct nsp_field_info *f) {
  const unsigned char *b = field_base(r, f);
  if (!b || f->wire != NSP_WIRE_S) return "";
  const char *s;
  memcpy(&s, b + f->offset, sizeof s);
  return s ? s : "";
}
