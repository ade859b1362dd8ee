/* nsp_schema.h - the record schema (ncclspy/trace_schema.h) as data.
 *
 * The codec expands the schema into code; this is the same table as an
 * array, for code that walks a kind's fields by name: `ncclspy dump` (its
 * text and JSON keys are the field names), the test that checks
 * docs/FORMAT.md, and the crash ring's field table on both sides. */
#ifndef NSP_SCHEMA_H
#define NSP_SCHEMA_H

#include <stddef.h>
#include <stdint.h>

#include "nsp_record.h"

#define NSP_WIRE_ENUM_(w, doc, text) NSP_WIRE_##w,
enum nsp_wire { NSP_REC_WIRES(NSP_WIRE_ENUM_) NSP_WIRES_N };
#undef NSP_WIRE_ENUM_

#define NSP_UNIT_ENUM_(u, text) NSP_UNIT_##u,
enum nsp_unit { NSP_REC_UNITS(NSP_UNIT_ENUM_) NSP_UNITS_N };
#undef NSP_UNIT_ENUM_

/* True for the units of CLOCK_MONOTONIC instants: TIME, MONO, END. */
static inline int nsp_unit_is_mono(int unit) {
  return unit == NSP_UNIT_TIME || unit == NSP_UNIT_MONO || unit == NSP_UNIT_END;
}

/* Where a field is kept (the schema's `loc` column). */
enum nsp_field_loc {
  NSP_FLOC_REC,    /* a member of struct nsp_rec (offset, size) */
  NSP_FLOC_EXT,    /* a member of struct nsp_rec_ext */
  NSP_FLOC_ENV,    /* nenv and env of struct nsp_rec_ext */
  NSP_FLOC_FRAMES, /* nframes and frame_* of struct nsp_rec_ext */
  NSP_FLOC_WIRE,   /* not kept (CALL's mask) */
};

struct nsp_field_info {
  const char *name;     /* "seq": dump's key, the accessor's suffix */
  uint8_t wire;         /* enum nsp_wire */
  uint8_t unit;         /* enum nsp_unit */
  uint8_t loc;          /* enum nsp_field_loc */
  uint8_t since;        /* format minor version that added it */
  uint8_t size;         /* bytes of the member that keeps it (REC, EXT) */
  uint8_t is_signed;    /* the field's type is signed */
  uint8_t type_size;    /* sizeof its type (never more than size: a test checks) */
  uint16_t offset;      /* of that member in struct nsp_rec / nsp_rec_ext */
  uint32_t cm;          /* NSP_CM_* bit that says it is present; 0 always */
  const char *cm_name;  /* "ALWAYS", "SEQ", ... as in the schema */
  const char *pred;     /* "NONE", "PREV(-1)", ... as in the schema */
  const char *type;     /* the field's C type, "int32_t" */
  const char *def;      /* its default, as in the schema ("0", "\"\"") */
  int64_t def_value;    /* the same as a number (0 for strings) */
  const char *meaning;
};

/* A named bit of a flags field, or a named value (trace_schema.h,
 * NSP_REC_NAMES_*). */
struct nsp_name_info {
  const char *name;     /* "TIMED": the constant is NSP_<set>_TIMED */
  uint64_t value;       /* the bit (1u << n) or the value */
  const char *word;     /* "timed": what `ncclspy dump` shows */
  uint8_t since;        /* format minor version that added it */
  const char *meaning;
};

/* ext and ring columns of a kind. */
enum { NSP_KEXT_NO, NSP_KEXT_YES, NSP_KEXT_MAY };
enum { NSP_KRING_RING, NSP_KRING_WRITER, NSP_KRING_READER };

struct nsp_kind_info {
  int kind;             /* NSP_REC_* */
  const char *name;     /* "COMPLETION" */
  const char *lname;    /* "completion": dump --json's "record" */
  uint8_t since;        /* format minor version that added it */
  uint8_t ext;          /* NSP_KEXT_* */
  uint8_t ring;         /* NSP_KRING_* */
  const char *meaning;
  const struct nsp_field_info *fields;
  size_t nfields;
  const char *names_set;                /* "DONE": its FLAGS or REASON field's names; "NONE" */
  const struct nsp_name_info *names;    /* those names (the bits, or the values) */
  size_t nnames;
};

/* The kind with this record-kind value, NULL when this build does not know it. */
const struct nsp_kind_info *nsp_schema_kind(int kind);
/* Kinds in the schema's order (0 <= i < nsp_schema_nkinds()). */
size_t nsp_schema_nkinds(void);
const struct nsp_kind_info *nsp_schema_kind_at(size_t i);

/* Index of k's field of unit TIME (when the record happened); -1 none. */
int nsp_schema_time_field(const struct nsp_kind_info *k);

/* "varint", "zz", "u64", "str", ...: the encoding's name in docs/FORMAT.md;
 * and what it is. */
const char *nsp_wire_name(int wire);
const char *nsp_wire_text(int wire);
/* "V", "Z", ...: the encoding's token in the schema. */
const char *nsp_wire_token(int wire);
/* "NUM", "TIME", ...: the unit's token in the schema; and what it means. */
const char *nsp_unit_name(int unit);
const char *nsp_unit_text(int unit);

/* The latest CLOCK_MONOTONIC time r holds, ns: the largest of its fields
 * of unit TIME, MONO or END (0 when it has none). */
uint64_t nsp_rec_latest_mono(const struct nsp_rec *r);

/* A REC or EXT integer field's value (sign-extended for signed fields;
 * r->ext must be set for EXT fields; 0 for other locations). */
uint64_t nsp_field_uint(const struct nsp_rec *r, const struct nsp_field_info *f);
/* Sets a REC or EXT integer field (r->ext must be writable for EXT; no
 * effect for other locations). */
void nsp_field_set_uint(struct nsp_rec *r, const struct nsp_field_info *f, uint64_t v);
/* A record rebuilt from a crash ring that a shim of format minor `minor`
 * wrote: its REC fields newer than that read as their defaults, as the
 * decoder gives them for a frame's record. */
void nsp_rec_apply_defaults(struct nsp_rec *r, unsigned minor);

/* A string field's value ("" when NULL or not a string field). */
const char *nsp_field_str(const struct nsp_rec *r, const struct nsp_field_info *f);

#endif /* NSP_SCHEMA_H */
