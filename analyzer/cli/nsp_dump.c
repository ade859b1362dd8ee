/* nsp_dump.c - `ncclspy dump`: every record of a trace, one per line.
 * For people checking what the shim wrote, and for scripts (JSON lines).
 *
 * Records are shown from the record schema (nsp_schema.h), so every field
 * a kind has is shown under its schema name, and a field added to the
 * schema needs no edit here.
 *
 * Text: "[t=+1.234567ms ]KIND name=value ...": the record's time (its TIME
 * field) first, relative to the header's monotonic time; then its other
 * fields in wire order.  Empty strings are left out.
 * JSON: {"record": "<kind>", "t_rel_ns": ..., <name>: <value>, ...}: every
 * field; times (TIME, MONO, END) are keyed <name>_ns; enumerations give
 * their name under <name> (null when none) and the number under <name>_id;
 * entry points also give the operation ("op": "all-reduce").
 * After the records, a RING line (JSON "record": "ring") when the trace's
 * crash ring gave records or was not used, and a PROBLEM line ("problem")
 * for damage; a file that cannot be read at all is an "error" line in
 * JSON. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "nsp_escape.h"
#include "nsp_names.h"
#include "nsp_reader.h"
#include "nsp_report.h"
#include "nsp_schema.h"

/* The word of a named value (REASON), NULL when it has none. */
static const char *value_word(const struct nsp_kind_info *k, uint64_t v) {
  for (size_t i = 0; i < k->nnames; i++)
    if (k->names[i].value == v) return k->names[i].word;
  return NULL;
}

/* The words of the bits set in a FLAGS field v, in the names' order,
 * into words[] (room for NSP_FLAG_WORDS: a bit has one name); returns
 * how many, and sets *rest to the bits without a name. */
#define NSP_FLAG_WORDS 64
static size_t flag_words(const struct nsp_kind_info *k, uint64_t v, const char **words, uint64_t *rest) {
  size_t n = 0;
  for (size_t i = 0; i < k->nnames && n < NSP_FLAG_WORDS; i++)
    if (v & k->names[i].value) {
      words[n++] = k->names[i].word;
      v &= ~k->names[i].value;
    }
  *rest = v;
  return n;
}

/* A field of unit u of k, or NULL. */
static const struct nsp_field_info *unit_field(const struct nsp_kind_info *k, int u) {
  for (size_t i = 0; i < k->nfields; i++)
    if (k->fields[i].unit == u) return &k->fields[i];
  return NULL;
}

/* For an enumerated unit (API, DTYPE, REDOP, RESULT, SIGNO, SICODE,
 * REASON): 1, with *name its value's name (NULL for "none", -1, or an
 * si_code without one).  0 for other units. */
static int enum_name(const struct nsp_kind_info *k, const struct nsp_rec *r, const struct nsp_field_info *f,
                     uint64_t v, char *buf, size_t len, const char **name) {
  int iv = (int)(int64_t)v;
  *name = NULL;
  switch (f->unit) {
    case NSP_UNIT_API:
      if (iv < 0 || iv >= NSP_API_COUNT) { /* a newer shim's entry point: its number */
        snprintf(buf, len, "api#%d", iv);
        *name = buf;
      } else {
        *name = nsp_api_name(iv);
      }
      return 1;
    case NSP_UNIT_DTYPE: *name = iv < 0 ? NULL : nsp_dtype_name(iv, buf, len); return 1;
    case NSP_UNIT_REDOP: *name = iv < 0 ? NULL : nsp_redop_name(iv, buf, len); return 1;
    case NSP_UNIT_RESULT: *name = nsp_result_name(iv, buf, len); return 1;
    case NSP_UNIT_SIGNO: *name = nsp_signal_name(iv, buf, len); return 1;
    case NSP_UNIT_REASON:
      if (!(*name = value_word(k, v))) { /* a newer shim's reason: its number */
        snprintf(buf, len, "reason#%lld", (long long)(int64_t)v);
        *name = buf;
      }
      return 1;
    case NSP_UNIT_SICODE: {
      const struct nsp_field_info *sf = unit_field(k, NSP_UNIT_SIGNO);
      const char *n = sf ? nsp_signal_code_name((int)nsp_field_uint(r, sf), iv) : "";
      *name = n[0] ? n : NULL;
      return 1;
    }
    default: return 0;
  }
}


static void put_rel_ms(FILE *out, int64_t rel) {
  fprintf(out, "%s%.6fms", rel < 0 ? "-" : "+", (double)(rel < 0 ? -(double)rel : (double)rel) / 1e6);
}

static void text_header(FILE *out, const char *path, const struct nsp_file_header *h) {
  char vb[32];
  fprintf(out, "HEADER file=");
  nsp_put_quoted(out, path);
  fprintf(out, " format=%u.%u header_size=%" PRIu32 " host=", h->major, h->minor, h->header_size);
  nsp_put_quoted(out, h->host);
  fprintf(out, " pid=%" PRIu32 " nccl_version=%s realtime_ns=%" PRIu64 " monotonic_ns=%" PRIu64 " flags=0x%" PRIx32 "\n",
          h->pid, nsp_nccl_version_str(h->nccl_version, vb, sizeof vb), h->realtime_ns, h->monotonic_ns, h->flags);
}

/* A native stack as module+0xoffset symbol; a Python one (unit PYFRAMES)
 * as file:line function. */
static void text_frames(FILE *out, const struct nsp_rec_ext *x, int python) {
  uint32_t n = x ? x->nframes : 0;
  fprintf(out, "%" PRIu32 " [", n);
  for (uint32_t i = 0; i < n; i++) {
    fprintf(out, "%s", i ? "; " : "");
    nsp_put_quoted(out, x->frame_module[i]);
    fprintf(out, python ? ":%" PRIu64 " " : "+0x%" PRIx64 " ", x->frame_offset[i]);
    nsp_put_quoted(out, x->frame_symbol[i]);
  }
  fputc(']', out);
}

/* Whether a field is shown: not CALL's mask (only on the wire), not one
 * kept in ext when the record has none, and not one the file's format
 * version predates (its value would be the default, not the file's). */
static int shown(const struct nsp_field_info *f, const struct nsp_file_header *h, const struct nsp_rec *r) {
  if (f->loc == NSP_FLOC_WIRE || f->since > h->minor) return 0;
  return f->loc == NSP_FLOC_REC || r->ext;
}

static void text_record(FILE *out, const struct nsp_file_header *h, const struct nsp_rec *r) {
  const struct nsp_kind_info *k = nsp_schema_kind(r->kind);
  if (!k) return;
  int tf = nsp_schema_time_field(k);
  uint64_t t = tf >= 0 ? nsp_field_uint(r, &k->fields[tf]) : 0;
  if (tf >= 0) { /* 0: unknown (a drop count rebuilt from a crash ring) */
    fprintf(out, "t=");
    if (t) put_rel_ms(out, (int64_t)(t - h->monotonic_ns));
    else fputc('?', out);
    fputc(' ', out);
  }
  fprintf(out, "%s", k->name);
  for (size_t i = 0; i < k->nfields; i++) {
    const struct nsp_field_info *f = &k->fields[i];
    if ((int)i == tf || !shown(f, h, r)) continue;
    if (f->wire == NSP_WIRE_S) {
      const char *s = nsp_field_str(r, f);
      if (!s[0]) continue;
      fprintf(out, " %s=", f->name);
      nsp_put_quoted(out, s);
      continue;
    }
    fprintf(out, " %s=", f->name);
    if (f->loc == NSP_FLOC_ENV) {
      fputc('{', out);
      for (uint32_t e = 0; e < r->ext->nenv; e++) {
        fprintf(out, "%s", e ? " " : "");
        nsp_put_esc(out, r->ext->env[2 * e]);
        fputc('=', out);
        nsp_put_quoted(out, r->ext->env[2 * e + 1]);
      }
      fputc('}', out);
      continue;
    }
    if (f->loc == NSP_FLOC_FRAMES) {
      text_frames(out, r->ext, f->unit == NSP_UNIT_PYFRAMES);
      continue;
    }
    uint64_t v = nsp_field_uint(r, f);
    char b[32];
    const char *name;
    enum_name(k, r, f, v, b, sizeof b, &name);
    switch (f->unit) {
      case NSP_UNIT_TIME:
      case NSP_UNIT_MONO:
        if (v) put_rel_ms(out, (int64_t)(v - h->monotonic_ns));
        else fputc('0', out);
        break;
      case NSP_UNIT_END: /* after the record's time, when known */
        if (t) fprintf(out, "%s%.3fus", v >= t ? "+" : "-", (double)(v >= t ? v - t : t - v) / 1e3);
        else fputc('?', out);
        break;
      case NSP_UNIT_ADDR: fprintf(out, "0x%" PRIx64, v); break;
      case NSP_UNIT_ID: fprintf(out, "%016" PRIx64, v); break;
      case NSP_UNIT_FLAGS: {
        const char *words[NSP_FLAG_WORDS];
        uint64_t rest;
        size_t n = flag_words(k, v, words, &rest);
        fprintf(out, "0x%" PRIx64, v);
        if (!v || !k->nnames) break;
        fputc('(', out);
        for (size_t w = 0; w < n; w++) fprintf(out, "%s%s", w ? "," : "", words[w]);
        if (rest) fprintf(out, "%s0x%" PRIx64, n ? "," : "", rest);
        fputc(')', out);
        break;
      }
      case NSP_UNIT_VERSION: fprintf(out, "%s", nsp_nccl_version_str((int)(int64_t)v, b, sizeof b)); break;
      case NSP_UNIT_API: fprintf(out, "%s", v < NSP_API_COUNT ? nsp_op_name((int)v) : name); break;
      case NSP_UNIT_SICODE: /* the number, then its name when known */
        fprintf(out, "%" PRId64 "%s%s", (int64_t)v, name ? "/" : "", name ? name : "");
        break;
      default:
        if (name && strchr(name, ' ')) nsp_put_quoted(out, name); /* "unknown result 12345" */
        else if (name) fprintf(out, "%s", name);
        else if (f->unit == NSP_UNIT_DTYPE || f->unit == NSP_UNIT_REDOP) fputc('-', out);
        else if (f->is_signed) fprintf(out, "%" PRId64, (int64_t)v);
        else fprintf(out, "%" PRIu64, v);
    }
  }
  fputc('\n', out);
}

/* Keys and strings are made valid UTF-8 (nsp_escape.h): environment
 * variable names are keys from the trace. */
static void jput(json_object *o, const char *k, json_object *v) {
  if (nsp_json_add(o, k, v) != 0) json_object_put(v);
}
static json_object *ji(int64_t v) { return json_object_new_int64(v); }
static json_object *js(const char *s) { return nsp_json_string(s); }
/* A field's number: signed fields as such, unsigned ones up to 2^64 - 1. */
static json_object *jnum(const struct nsp_field_info *f, uint64_t v) {
  return f->is_signed ? json_object_new_int64((int64_t)v) : json_object_new_uint64(v);
}

static void json_line(FILE *out, json_object *o) {
  const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
  if (s) fprintf(out, "%s\n", s);
  json_object_put(o);
}

static void json_header(FILE *out, const char *path, const struct nsp_file_header *h) {
  json_object *o = json_object_new_object();
  if (!o) return;
  jput(o, "record", js("header"));
  jput(o, "file", js(path));
  jput(o, "major", ji(h->major));
  jput(o, "minor", ji(h->minor));
  jput(o, "header_size", ji(h->header_size));
  jput(o, "host", js(h->host));
  jput(o, "pid", ji(h->pid));
  jput(o, "nccl_version", ji(h->nccl_version));
  jput(o, "realtime_ns", json_object_new_uint64(h->realtime_ns));
  jput(o, "monotonic_ns", json_object_new_uint64(h->monotonic_ns));
  jput(o, "flags", ji(h->flags));
  json_line(out, o);
}

/* A stack: [{module, offset, symbol}]. */
/* Native frames: module, offset, symbol; Python ones: file, line, function. */
static json_object *json_frames(const struct nsp_rec_ext *x, int python) {
  json_object *fr = json_object_new_array();
  for (uint32_t i = 0; fr && x && i < x->nframes; i++) {
    json_object *f = json_object_new_object();
    if (!f) continue;
    jput(f, python ? "file" : "module", js(x->frame_module[i]));
    jput(f, python ? "line" : "offset", json_object_new_uint64(x->frame_offset[i]));
    jput(f, python ? "function" : "symbol", js(x->frame_symbol[i]));
    if (json_object_array_add(fr, f) != 0) json_object_put(f);
  }
  return fr;
}

static void json_record(FILE *out, const struct nsp_file_header *h, const struct nsp_rec *r) {
  const struct nsp_kind_info *k = nsp_schema_kind(r->kind);
  if (!k) return;
  json_object *o = json_object_new_object();
  if (!o) return;
  jput(o, "record", js(k->lname));
  int tf = nsp_schema_time_field(k);
  uint64_t t = tf >= 0 ? nsp_field_uint(r, &k->fields[tf]) : 0;
  if (tf >= 0) jput(o, "t_rel_ns", t ? ji((int64_t)(t - h->monotonic_ns)) : NULL); /* 0: unknown */
  for (size_t i = 0; i < k->nfields; i++) {
    const struct nsp_field_info *f = &k->fields[i];
    if (!shown(f, h, r)) continue;
    if (f->wire == NSP_WIRE_S) {
      jput(o, f->name, js(nsp_field_str(r, f)));
    } else if (f->loc == NSP_FLOC_ENV) {
      json_object *env = json_object_new_object();
      for (uint32_t e = 0; env && e < r->ext->nenv; e++) jput(env, r->ext->env[2 * e], js(r->ext->env[2 * e + 1]));
      jput(o, f->name, env);
    } else if (f->loc == NSP_FLOC_FRAMES) {
      jput(o, f->name, json_frames(r->ext, f->unit == NSP_UNIT_PYFRAMES));
    } else {
      uint64_t v = nsp_field_uint(r, f);
      char key[64], b[32];
      if (nsp_unit_is_mono(f->unit)) {
        size_t nl = strlen(f->name);
        int has_ns = nl >= 3 && !strcmp(f->name + nl - 3, "_ns");
        snprintf(key, sizeof key, "%s%s", f->name, has_ns ? "" : "_ns");
        jput(o, key, jnum(f, v));
        continue;
      }
      if (f->unit == NSP_UNIT_ID) {
        char hex[17];
        snprintf(hex, sizeof hex, "%016" PRIx64, v);
        jput(o, f->name, js(hex));
        continue;
      }
      const char *name;
      if (enum_name(k, r, f, v, b, sizeof b, &name)) {
        jput(o, f->name, name ? js(name) : NULL);
        snprintf(key, sizeof key, "%s_id", f->name);
        jput(o, key, jnum(f, v));
        if (f->unit == NSP_UNIT_API) jput(o, "op", js(v < NSP_API_COUNT ? nsp_op_name((int)v) : name));
        continue;
      }
      jput(o, f->name, jnum(f, v));
      if (f->unit == NSP_UNIT_FLAGS && k->nnames) { /* the bits' names, the others in hex */
        const char *words[NSP_FLAG_WORDS];
        uint64_t rest;
        size_t n = flag_words(k, v, words, &rest);
        json_object *a = json_object_new_array();
        for (size_t w = 0; a && w < n; w++)
          if (json_object_array_add(a, js(words[w])) != 0) break;
        if (a && rest) {
          char hex[24];
          snprintf(hex, sizeof hex, "0x%" PRIx64, rest);
          json_object_array_add(a, js(hex));
        }
        snprintf(key, sizeof key, "%s_names", f->name);
        jput(o, key, a);
      }
    }
  }
  json_line(out, o);
}

/* After the records: what the crash ring "<path>.ring" gave (records the
 * process committed but never wrote to the trace, which the reader merged
 * after the trace's own), or why it was not used.  Nothing when there is
 * no ring or it added nothing. */
static void put_ring(FILE *out, int json, const char *path, const struct nsp_reader *r) {
  uint64_t got = nsp_reader_from_ring(r), lost = nsp_reader_unrecovered(r);
  const char *note = nsp_reader_ring_note(r);
  if (!got && !lost && !note) return;
  char ring[4200];
  snprintf(ring, sizeof ring, "%s.ring", path);
  if (json) {
    json_object *o = json_object_new_object();
    if (!o) return;
    jput(o, "record", js("ring"));
    jput(o, "file", js(ring));
    jput(o, "records", json_object_new_uint64(got));
    jput(o, "recovered", json_object_new_uint64(nsp_reader_recovered(r)));
    jput(o, "lost", json_object_new_uint64(lost));
    jput(o, "note", note ? js(note) : NULL);
    json_line(out, o);
    return;
  }
  fprintf(out, "RING file=");
  nsp_put_quoted(out, ring);
  fprintf(out, " records=%" PRIu64 " recovered=%" PRIu64 " lost=%" PRIu64, got, nsp_reader_recovered(r), lost);
  if (note) {
    fprintf(out, " note=");
    nsp_put_quoted(out, note);
  }
  uint64_t rec = nsp_reader_recovered(r);
  if (got == 1) fprintf(out, " (the last record above came from the crash ring");
  else if (got) fprintf(out, " (the last %" PRIu64 " records above came from the crash ring", got);
  if (got && rec == got) fprintf(out, ": the process committed them but never wrote them to the trace)");
  else if (got && rec) fprintf(out, ": %" PRIu64 " the process committed but never wrote to the trace, then the ring's "
                                    "own state)", rec);
  else if (got) fprintf(out, ": the ring's own state; no record was missing from the trace)");
  fputc('\n', out);
}

int nsp_dump_file(const char *path, int json, FILE *out, FILE *err) {
  char e[256];
  struct nsp_reader *r = nsp_reader_open(path, e, sizeof e);
  if (!r) {
    size_t n = strlen(path);
    char why[400];
    if (n > 13 && !strcmp(path + n - 13, ".ncclspy.ring") && access(path, F_OK) == 0)
      snprintf(why, sizeof why, "a crash ring, read along with its trace: dump %.*s", (int)(n - 5), path);
    else snprintf(why, sizeof why, "%s", e);
    fprintf(err, "ncclspy: %s: %s\n", path, why);
    if (json) { /* scripts reading the lines learn of it too */
      json_object *o = json_object_new_object();
      if (o) {
        jput(o, "record", js("error"));
        jput(o, "file", js(path));
        jput(o, "error", js(why));
        json_line(out, o);
      }
      fflush(out);
      if (ferror(out)) return -1;
    }
    return 2;
  }
  const struct nsp_file_header *h = nsp_reader_header(r);
  if (json) json_header(out, path, h);
  else text_header(out, path, h);
  struct nsp_rec rec;
  int ret;
  while ((ret = nsp_reader_next(r, &rec)) == 1) {
    if (json) json_record(out, h, &rec);
    else text_record(out, h, &rec);
  }
  put_ring(out, json, path, r);
  const char *problem = nsp_reader_problem(r);
  if (problem) {
    if (json) {
      json_object *o = json_object_new_object();
      if (o) {
        jput(o, "record", js("problem"));
        jput(o, "file", js(path));
        jput(o, "message", js(problem));
        json_line(out, o);
      }
    } else {
      fprintf(out, "PROBLEM ");
      nsp_put_quoted(out, problem);
      fputc('\n', out);
    }
    fprintf(err, "ncclspy: %s: %s\n", path, problem);
  }
  /* A crash ring damaged, ignored or with records lost is a damaged file
   * too: what it held is not all above. */
  const char *ring_note = nsp_reader_ring_note(r);
  int ring_bad = ring_note || nsp_reader_unrecovered(r);
  if (ring_note) fprintf(err, "ncclspy: %s: crash ring: %s\n", path, ring_note);
  else if (ring_bad)
    fprintf(err, "ncclspy: %s: crash ring: %" PRIu64 " records could not be recovered\n", path,
            nsp_reader_unrecovered(r));
  nsp_reader_destroy(r);
  fflush(out);
  if (ferror(out)) return -1;
  return problem || ring_bad ? 1 : 0;
}
