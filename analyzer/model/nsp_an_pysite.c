/* nsp_an_pysite.c - Python call sites (NSP_REC_PYSITE, format 1.6): stored
 * per trace, each frame marked as library code or the program's own by
 * the library-frame table (nsp_pyframes.h), and the first frame of the
 * program's own found once, here, for every report.
 *
 * Traces are untrusted: ids may be unknown (the call has no site), given
 * twice (the first record wins), and stacks long (64 frames kept, the
 * total said) with long strings (a file's last 400 bytes, a function's
 * first 200); a trace's sites are bounded in number and bytes, and sites
 * past those bounds are counted, not kept (the load notes them). */
#include <stdlib.h>
#include <string.h>

#include "nsp_an_model.h"
#include "nsp_pyframes.h"

/* Frames kept per site (the shim keeps 8 by default). */
#define NSP_PYSITE_KEEP 64
/* A file's last bytes kept, a function's first. */
#define NSP_PYFILE_KEEP 400
#define NSP_PYFUNC_KEEP 200
/* Sites and bytes of sites kept per trace. */
#define NSP_PYSITES_MAX (1u << 16)
#define NSP_PYSITE_BYTES_MAX (32u << 20)

enum { PY_DIR, PY_FILE, PY_STDLIB, PY_PREFIX };
static const struct {
  int match;
  const char *pattern, *what;
} library[] = {
#define NSP_X_PYLIB(m, p, w) {PY_##m, p, w},
    NSP_PYFRAME_LIBRARY(NSP_X_PYLIB)
#undef NSP_X_PYLIB
};

size_t nsp_pyframe_nlibrary(void) { return sizeof library / sizeof *library; }

const char *nsp_pyframe_library_row(size_t i, const char **what) {
  if (i >= nsp_pyframe_nlibrary()) return NULL;
  if (what) *what = library[i].what;
  return library[i].pattern;
}

/* The first place pattern occurs in file at a path component's start
 * (the start or after '/'), or NULL. */
static const char *at_component(const char *file, const char *pattern) {
  for (const char *p = strstr(file, pattern); p; p = strstr(p + 1, pattern))
    if (p == file || p[-1] == '/') return p;
  return NULL;
}

/* Where a standard-library file's name starts (after "pythonX.Y/" of a
 * lib/ or lib64/ directory, not in site-packages or dist-packages), or
 * NULL. */
static const char *stdlib_at(const char *file) {
  for (const char *p = strstr(file, "python"); p; p = strstr(p + 1, "python")) {
    size_t before = (size_t)(p - file);
    int lib = (before >= 4 && !strncmp(p - 4, "lib/", 4) && (before == 4 || p[-5] == '/')) ||
              (before >= 6 && !strncmp(p - 6, "lib64/", 6) && (before == 6 || p[-7] == '/'));
    if (!lib) continue;
    const char *q = p + 6;
    if (*q < '0' || *q > '9') continue;
    while (*q >= '0' && *q <= '9') q++;
    if (*q++ != '.' || *q < '0' || *q > '9') continue;
    while (*q >= '0' && *q <= '9') q++;
    if (*q++ != '/') continue;
    if (!strncmp(q, "site-packages/", 14) || !strncmp(q, "dist-packages/", 14)) return NULL;
    return q;
  }
  return NULL;
}

int nsp_pyframe_library(const char *file, size_t *short_at) {
  if (!file) return 0;
  for (size_t i = 0; i < nsp_pyframe_nlibrary(); i++) {
    const char *hit = NULL;
    switch (library[i].match) {
      case PY_DIR: hit = at_component(file, library[i].pattern); break;
      case PY_FILE: {
        size_t n = strlen(file), pn = strlen(library[i].pattern);
        const char *tail = n >= pn ? file + n - pn : NULL;
        hit = tail && !strcmp(tail, library[i].pattern) && (tail == file || tail[-1] == '/') ? tail : NULL;
        break;
      }
      case PY_STDLIB: hit = stdlib_at(file); break;
      case PY_PREFIX: hit = !strncmp(file, library[i].pattern, strlen(library[i].pattern)) ? file : NULL; break;
    }
    if (hit) {
      if (short_at) *short_at = (size_t)(hit - file);
      return 1;
    }
  }
  return 0;
}

int nsp_pysite_same(const struct nsp_pysite *a, const struct nsp_pysite *b) {
  if (a == b) return 1;
  if (!a || !b || a->nframes != b->nframes || a->ntotal != b->ntotal || a->flags != b->flags) return 0;
  for (size_t i = 0; i < a->nframes; i++)
    if (a->frames[i].line != b->frames[i].line || strcmp(a->frames[i].file, b->frames[i].file) ||
        strcmp(a->frames[i].function, b->frames[i].function))
      return 0;
  return 1;
}

/* The part of s a site keeps: a file's tail (marked "..."), a function's
 * head; *skip the bytes left out at the start, the length kept. */
static size_t kept_len(const char *s, int tail, size_t max, size_t *skip) {
  size_t n = strlen(s ? s : "");
  *skip = 0;
  if (n <= max) return n;
  if (tail) *skip = n - max;
  return max;
}

/* A site from a PYSITE record's frames, in one allocation; NULL when out
 * of memory.  *bytes: its size. */
static struct nsp_pysite *pysite_make(const struct nsp_rec *rec, size_t *bytes) {
  const struct nsp_rec_ext *x = rec->ext;
  size_t n = x ? x->nframes : 0, keep = n < NSP_PYSITE_KEEP ? n : NSP_PYSITE_KEEP;
  size_t size = sizeof(struct nsp_pysite) + keep * sizeof(struct nsp_pyframe);
  for (size_t i = 0; i < keep; i++) {
    size_t skip;
    size += kept_len(x->frame_module[i], 1, NSP_PYFILE_KEEP, &skip) + (skip ? 3 : 0) + 1;
    size += kept_len(x->frame_symbol[i], 0, NSP_PYFUNC_KEEP, &skip) + 1;
  }
  struct nsp_pysite *ps = malloc(size);
  if (!ps) return NULL;
  struct nsp_pyframe *fr = (struct nsp_pyframe *)(ps + 1);
  char *str = (char *)(fr + keep);
  ps->id = nsp_rec_pysite_site(rec);
  ps->flags = nsp_rec_pysite_flags(rec);
  ps->tid = nsp_rec_pysite_tid(rec);
  ps->nframes = keep;
  ps->frames = fr;
  ps->ntotal = n;
  ps->first = keep;
  for (size_t i = 0; i < keep; i++) {
    size_t skip, len = kept_len(x->frame_module[i], 1, NSP_PYFILE_KEEP, &skip);
    fr[i].file = str;
    if (skip) memcpy(str, "...", 3), str += 3;
    if (len) memcpy(str, x->frame_module[i] + skip, len);
    str += len;
    *str++ = 0;
    len = kept_len(x->frame_symbol[i], 0, NSP_PYFUNC_KEEP, &skip);
    fr[i].function = str;
    if (len) memcpy(str, x->frame_symbol[i], len);
    str += len;
    *str++ = 0;
    fr[i].line = x->frame_offset[i];
    size_t at = 0;
    fr[i].library = nsp_pyframe_library(fr[i].file, &at);
    fr[i].short_file = fr[i].file + (fr[i].library ? at : 0);
    if (!fr[i].library && ps->first == keep) ps->first = i;
  }
  *bytes = size;
  return ps;
}

int nsp_an_pysite_add(struct nsp_trace *t, const struct nsp_rec *rec) {
  uint32_t id = nsp_rec_pysite_site(rec);
  if (!id || !rec->ext) return 0;
  if (nsp_u64map_get(&t->pysite_by_id, id)) return 0; /* the first record of an id wins */
  if (t->info.npysites >= NSP_PYSITES_MAX || t->pysite_bytes >= NSP_PYSITE_BYTES_MAX) {
    t->pysites_dropped++;
    return 0;
  }
  size_t bytes = 0;
  struct nsp_pysite *ps = pysite_make(rec, &bytes);
  if (!ps) return NSP_AN_ENOMEM;
  if (nsp_grow(&t->pysites, &t->pysites_cap, t->info.npysites + 1, sizeof *t->pysites) < 0 ||
      nsp_u64map_put(&t->pysite_by_id, id, t->info.npysites) < 0) {
    free(ps);
    return NSP_AN_ENOMEM;
  }
  t->pysites[t->info.npysites++] = ps;
  t->pysite_bytes += bytes;
  return 0;
}

const struct nsp_pysite *nsp_an_pysite(const struct nsp_trace *t, uint32_t id) {
  if (!id) return NULL;
  const size_t *i = nsp_u64map_get(&t->pysite_by_id, id);
  return i ? t->pysites[*i] : NULL;
}

void nsp_an_pysites_free(struct nsp_trace *t) {
  for (size_t i = 0; i < t->info.npysites; i++) free(t->pysites[i]);
  free(t->pysites);
  t->pysites = NULL;
  t->info.npysites = 0;
  nsp_u64map_free(&t->pysite_by_id);
}
