/* nsp_pysite_read.c - CPython 3.10 to 3.13 frames, code objects, strings
 * and line tables, read from memory (nsp_pysite.h).  Depends on the C
 * library only: unit tests link it with fake interpreter memory. */
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "nsp_pysite.h"

#define SPAN_MAX 512 /* bytes of one struct read at once (largest span used) */

int nsp_pysite_read_safe(uintptr_t addr, void *buf, size_t n) {
  if (!addr) return -1;
  struct iovec local = {buf, n}, remote = {(void *)addr, n};
  return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)n ? 0 : -1;
}

/* The bytes of a struct at addr: itself (plain loads), or a copy of its
 * first `span` bytes in buf (safe).  NULL on a failed read. */
static inline const uint8_t *view(uintptr_t addr, uint32_t span, int safe, uint8_t *buf) {
  if (!addr) return NULL;
  if (!safe) return (const uint8_t *)addr;
  return nsp_pysite_read_safe(addr, buf, span) ? NULL : buf;
}
static inline uintptr_t ptr_at(const uint8_t *p, uint32_t off) {
  uintptr_t v;
  memcpy(&v, p + off, sizeof v);
  return v;
}
static inline int32_t i32_at(const uint8_t *p, uint32_t off) {
  int32_t v;
  memcpy(&v, p + off, sizeof v);
  return v;
}

static uint32_t span_of(uint32_t a, uint32_t b, uint32_t c, int32_t d) {
  uint32_t m = a > b ? a : b;
  if (c > m) m = c;
  if (d >= 0 && (uint32_t)d > m) m = (uint32_t)d;
  return m + 8;
}

int nsp_pysite_read_layout_known(struct nsp_pysite_layout *L, int minor) {
  memset(L, 0, sizeof *L);
  L->minor = minor;
  L->ts_next = 8;
  L->ob_type = 8;
  L->u_length = 16;
  L->u_state = 32;
  L->b_size = 16;
  L->b_sval = 32;
  L->owner_generator = 1;
  L->owner_cstack = -1;
  L->co_firsttraceable = -1;
  L->ts_native_tid = -1;
  switch (minor) {
  case 10: /* PyFrameObject; PyCodeObject.co_name; wstr in unicode objects */
    L->ts_frame = 24;
    L->cf_current = -1;
    L->fr_previous = 24, L->fr_code = 32, L->fr_instr = 96, L->fr_owner = -1;
    L->co_firstlineno = 40, L->co_filename = 104, L->co_name = 112, L->co_linetable = 120;
    L->u_ascii_size = 48, L->u_compact_size = 72;
    break;
  case 11:
    L->ts_frame = 56, L->cf_current = 8, L->ts_native_tid = 160;
    L->fr_previous = 48, L->fr_code = 32, L->fr_instr = 56, L->fr_owner = 69;
    L->co_firstlineno = 72, L->co_filename = 112, L->co_name = 128 /* co_qualname */;
    L->co_linetable = 136, L->co_firsttraceable = 168, L->co_code_adaptive = 184;
    L->u_ascii_size = 48, L->u_compact_size = 72;
    break;
  case 12:
    L->ts_frame = 56, L->cf_current = 0, L->ts_native_tid = 144;
    L->fr_previous = 8, L->fr_code = 0, L->fr_instr = 56, L->fr_owner = 70;
    L->owner_cstack = 3;
    L->co_firstlineno = 68, L->co_filename = 112, L->co_name = 128 /* co_qualname */;
    L->co_linetable = 136, L->co_firsttraceable = 176, L->co_code_adaptive = 192;
    L->u_ascii_size = 40, L->u_compact_size = 56;
    break;
  default:
    return -1;
  }
  L->ts_span = span_of(L->ts_next, L->ts_frame, 16, L->ts_native_tid);
  L->fr_span = span_of(L->fr_previous, L->fr_code, L->fr_instr, L->fr_owner);
  if (minor == 10) L->fr_span = span_of(L->fr_previous, L->fr_code, L->fr_instr, (int32_t)L->ob_type);
  L->co_span = span_of(L->co_filename, L->co_name, L->co_linetable, L->co_firsttraceable);
  if (L->co_firstlineno + 8 > L->co_span) L->co_span = L->co_firstlineno + 8;
  return 0;
}

/* _Py_DebugOffsets of 3.13, as Include/internal/pycore_runtime.h of 3.13
 * declares it (every member a uint64_t; the groups used here). */
struct dbg313 {
  char cookie[8];
  uint64_t version, free_threaded;
  uint64_t runtime_state[3];      /* size, finalizing, interpreters_head */
  uint64_t interpreter_state[13]; /* size, id, next, threads_head, ... */
  struct {
    uint64_t size, prev, next, interp, current_frame, thread_id, native_thread_id, datastack_chunk, status;
  } thread_state;
  struct {
    uint64_t size, previous, executable, instr_ptr, localsplus, owner;
  } interpreter_frame;
  struct {
    uint64_t size, filename, name, qualname, linetable, firstlineno, argcount, localsplusnames,
        localspluskinds, co_code_adaptive;
  } code_object;
  struct {
    uint64_t size, ob_type;
  } pyobject;
  uint64_t type_object[4];  /* size, tp_name, tp_repr, tp_flags */
  uint64_t tuple_object[3]; /* size, ob_item, ob_size */
  uint64_t list_object[3];
  uint64_t dict_object[3];
  uint64_t float_object[2];
  uint64_t long_object[3];
  struct {
    uint64_t size, ob_size, ob_sval;
  } bytes_object;
  struct {
    uint64_t size, state, length, asciiobject_size;
  } unicode_object;
  uint64_t gc[2];
};
/* Sizes and offsets as the 3.13.0 headers give them (offsetof). */
_Static_assert(offsetof(struct dbg313, thread_state) == 152, "3.13 _Py_DebugOffsets.thread_state");
_Static_assert(offsetof(struct dbg313, interpreter_frame) == 224, "3.13 _Py_DebugOffsets.interpreter_frame");
_Static_assert(offsetof(struct dbg313, code_object) == 272, "3.13 _Py_DebugOffsets.code_object");
_Static_assert(offsetof(struct dbg313, pyobject) == 352, "3.13 _Py_DebugOffsets.pyobject");
_Static_assert(offsetof(struct dbg313, bytes_object) == 512, "3.13 _Py_DebugOffsets.bytes_object");
_Static_assert(offsetof(struct dbg313, unicode_object) == 536, "3.13 _Py_DebugOffsets.unicode_object");
_Static_assert(sizeof(struct dbg313) == 584, "3.13 _Py_DebugOffsets size");

/* A field of 1 to 8 bytes at off lies in a struct of size bytes. */
static int inside(uint64_t off, uint64_t size) { return size <= 65536 && off < size; }

int nsp_pysite_read_layout_313(struct nsp_pysite_layout *L, const void *debug_offsets, const char **why) {
  struct dbg313 d;
  memcpy(&d, debug_offsets, sizeof d);
  *why = NULL;
  if (memcmp(d.cookie, "xdebugpy", 8)) *why = "no _Py_DebugOffsets cookie";
  else if ((d.version >> 16) != 0x030d) *why = "_Py_DebugOffsets is not of 3.13";
  else if (d.free_threaded) *why = "a free-threaded build";
  else if (!inside(d.thread_state.next, d.thread_state.size) ||
           !inside(d.thread_state.current_frame, d.thread_state.size) ||
           !inside(d.thread_state.native_thread_id, d.thread_state.size) ||
           !inside(d.interpreter_frame.previous, d.interpreter_frame.size) ||
           !inside(d.interpreter_frame.executable, d.interpreter_frame.size) ||
           !inside(d.interpreter_frame.instr_ptr, d.interpreter_frame.size) ||
           !inside(d.interpreter_frame.owner, d.interpreter_frame.size) ||
           !inside(d.code_object.filename, d.code_object.size) ||
           !inside(d.code_object.qualname, d.code_object.size) ||
           !inside(d.code_object.linetable, d.code_object.size) ||
           !inside(d.code_object.firstlineno, d.code_object.size) ||
           d.code_object.co_code_adaptive < 16 || d.code_object.co_code_adaptive > 4096 ||
           !inside(d.pyobject.ob_type, d.pyobject.size) || d.unicode_object.asciiobject_size > 256 ||
           !inside(d.unicode_object.state, d.unicode_object.size) ||
           !inside(d.unicode_object.length, d.unicode_object.size) ||
           !inside(d.bytes_object.ob_size, d.bytes_object.size) || d.bytes_object.ob_sval > 256 ||
           d.thread_state.size > SPAN_MAX * 64)
    *why = "_Py_DebugOffsets has an offset outside its struct";
  if (*why) return -1;
  memset(L, 0, sizeof *L);
  L->minor = 13;
  L->ts_next = (uint32_t)d.thread_state.next;
  L->ts_frame = (uint32_t)d.thread_state.current_frame;
  L->cf_current = -1;
  L->ts_native_tid = (int32_t)d.thread_state.native_thread_id;
  L->fr_previous = (uint32_t)d.interpreter_frame.previous;
  L->fr_code = (uint32_t)d.interpreter_frame.executable;
  L->fr_instr = (uint32_t)d.interpreter_frame.instr_ptr;
  L->fr_owner = (int32_t)d.interpreter_frame.owner;
  L->owner_generator = 1; /* FRAME_OWNED_BY_GENERATOR (pycore_frame.h of 3.13) */
  L->owner_cstack = 3;    /* FRAME_OWNED_BY_CSTACK */
  L->co_filename = (uint32_t)d.code_object.filename;
  L->co_name = (uint32_t)d.code_object.qualname;
  L->co_linetable = (uint32_t)d.code_object.linetable;
  L->co_firstlineno = (uint32_t)d.code_object.firstlineno;
  L->co_code_adaptive = (uint32_t)d.code_object.co_code_adaptive;
  L->co_firsttraceable = -1; /* not published */
  L->ob_type = (uint32_t)d.pyobject.ob_type;
  L->u_state = (uint32_t)d.unicode_object.state;
  L->u_length = (uint32_t)d.unicode_object.length;
  L->u_ascii_size = (uint32_t)d.unicode_object.asciiobject_size;
  /* PyCompactUnicodeObject: PyASCIIObject, utf8_length, utf8. */
  L->u_compact_size = L->u_ascii_size + 16;
  L->b_size = (uint32_t)d.bytes_object.ob_size;
  L->b_sval = (uint32_t)d.bytes_object.ob_sval;
  L->ts_span = span_of(L->ts_next, L->ts_frame, 16, L->ts_native_tid);
  L->fr_span = span_of(L->fr_previous, L->fr_code, L->fr_instr, L->fr_owner);
  L->co_span = span_of(L->co_filename, L->co_name, L->co_linetable, (int32_t)L->co_firstlineno);
  if (L->ts_span > SPAN_MAX || L->fr_span > SPAN_MAX || L->co_span > SPAN_MAX) {
    *why = "_Py_DebugOffsets has offsets too large";
    return -1;
  }
  return 0;
}

int nsp_pysite_read_ts_frame(const struct nsp_pysite_layout *L, uintptr_t ts, int safe, uintptr_t *frame) {
  uint8_t buf[SPAN_MAX];
  const uint8_t *t = view(ts, L->ts_span, safe, buf);
  if (!t) return -1;
  uintptr_t f = ptr_at(t, L->ts_frame);
  if (f && L->cf_current >= 0) { /* 3.11, 3.12: through the _PyCFrame */
    const uint8_t *cf = view(f, (uint32_t)L->cf_current + 8, safe, buf);
    if (!cf) return -1;
    f = ptr_at(cf, (uint32_t)L->cf_current);
  }
  *frame = f;
  return 0;
}

#define WALK_MAX 4096 /* frames followed at most: a longer chain is taken as corrupt */

int nsp_pysite_read_walk(const struct nsp_pysite_layout *L, uintptr_t ts, int safe,
                    struct nsp_pysite_raw *out, int depth, int *truncated) {
  uint8_t fb[SPAN_MAX], cb[SPAN_MAX];
  uintptr_t f;
  *truncated = 0;
  if (nsp_pysite_read_ts_frame(L, ts, safe, &f)) return -1;
  int n = 0;
  uintptr_t mark = 0; /* Brent's cycle check: the frame at the last power-of-two step */
  int check = safe || !__atomic_load_n(&L->trusted, __ATOMIC_RELAXED);
  for (int steps = 0; f; steps++) {
    if (steps >= WALK_MAX || f == mark) return -1;
    if (!(steps & (steps - 1))) mark = f;
    const uint8_t *fp = view(f, L->fr_span, safe, fb);
    if (!fp) return -1;
    uintptr_t prev = ptr_at(fp, L->fr_previous);
    if (L->frame_type && ptr_at(fp, L->ob_type) != L->frame_type) return -1;
    if (L->fr_owner >= 0 && L->owner_cstack >= 0 && fp[L->fr_owner] == (uint8_t)L->owner_cstack) {
      f = prev; /* 3.12+: a C-stack entry frame (3.13: its executable is not code) */
      continue;
    }
    uintptr_t code = ptr_at(fp, L->fr_code);
    if (!check) {
      /* The calling thread's frames, the layout proven: no code object
       * is read (every frame in the chain of a thread inside a call is
       * past its prologue, so none is incomplete). */
      if (n == depth) {
        *truncated = 1;
        break;
      }
      int32_t lasti = L->minor == 10 ? i32_at(fp, L->fr_instr)
                                     : (int32_t)(((intptr_t)ptr_at(fp, L->fr_instr) -
                                                  (intptr_t)(code + L->co_code_adaptive)) / 2);
      out[n].code = code;
      out[n].lasti = lasti;
      n++;
      f = prev;
      continue;
    }
    const uint8_t *cp = view(code, L->co_span, safe, cb);
    if (!cp) return -1;
    if (ptr_at(cp, L->ob_type) != L->code_type) return -1;
    int32_t lasti;
    if (L->minor == 10) lasti = i32_at(fp, L->fr_instr);
    else {
      intptr_t d = (intptr_t)ptr_at(fp, L->fr_instr) - (intptr_t)(code + L->co_code_adaptive);
      lasti = (int32_t)(d / 2);
      if (d < -(1 << 30) || d > (1 << 30)) return -1;
      /* Incomplete: not yet past its prologue (not a generator's frame). */
      int gen = L->fr_owner >= 0 && fp[L->fr_owner] == (uint8_t)L->owner_generator;
      int first = L->co_firsttraceable >= 0 ? i32_at(cp, (uint32_t)L->co_firsttraceable) : 0;
      if (!gen && lasti < first) {
        f = prev;
        continue;
      }
    }
    if (n == depth) {
      *truncated = 1;
      break;
    }
    out[n].code = code;
    out[n].lasti = lasti;
    n++;
    f = prev;
  }
  return n;
}

/* ---- strings and line tables ---- */

#define STR_MAX 511

/* bytes (UTF-8, len of them) into out (size STR_MAX + 1): whole when they
 * fit and nothing was cut before them; else the first STR_MAX bytes, or
 * with tail "..." and the last ones (a file's path: its name is at its
 * end), cut at a character boundary either way.  cut: the bytes are
 * already the end of a longer string. */
static void fit(const char *bytes, size_t len, int tail, int cut, char *out) {
  if (len <= STR_MAX && !cut) {
    memcpy(out, bytes, len);
    out[len] = 0;
    return;
  }
  if (!tail) {
    size_t n = len < STR_MAX ? len : STR_MAX;
    while (n > 0 && n < len && ((unsigned char)bytes[n] & 0xc0) == 0x80) n--;
    memcpy(out, bytes, n);
    out[n] = 0;
    return;
  }
  size_t start = len > STR_MAX - 3 ? len - (STR_MAX - 3) : 0;
  while (start < len && ((unsigned char)bytes[start] & 0xc0) == 0x80) start++;
  memcpy(out, "...", 3);
  memcpy(out + 3, bytes + start, len - start);
  out[3 + len - start] = 0;
}

/* Reads n bytes at addr into buf (safe: never faulting); 0, or -1. */
static int copy_from(uintptr_t addr, void *buf, size_t n, int safe) {
  if (safe) return nsp_pysite_read_safe(addr, buf, n);
  memcpy(buf, (const void *)addr, n);
  return 0;
}

/* A str object into out (size STR_MAX + 1) as UTF-8, cut as fit() says
 * (tail: keep its end); -1 when it is not one.  CPython keeps a str as
 * ASCII, Latin-1, UCS-2 or UCS-4 code points (and may cache a UTF-8
 * copy): the code points are encoded here, so two names that differ only
 * outside ASCII stay different. */
static int read_str(const struct nsp_pysite_layout *L, uintptr_t s, int safe, int tail, char *out) {
  uint8_t hb[SPAN_MAX];
  /* The ASCII header first: a short ASCII string is no larger. */
  const uint8_t *h = view(s, L->u_ascii_size, safe, hb);
  if (!h || ptr_at(h, L->ob_type) != L->unicode_type) return -1;
  int64_t len;
  memcpy(&len, h + L->u_length, sizeof len);
  uint32_t state;
  memcpy(&state, h + L->u_state, sizeof state);
  unsigned kind = (state >> 2) & 7, compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
  if (len < 0 || !compact || (kind != 1 && kind != 2 && kind != 4)) return -1;
  char buf[STR_MAX * 4 + 4];
  /* At most STR_MAX code points, from the end of the string when tail. */
  size_t n = len > STR_MAX ? STR_MAX : (size_t)len, skip = tail && (size_t)len > n ? (size_t)len - n : 0;
  if (ascii) {
    if (copy_from(s + L->u_ascii_size + skip, buf, n, safe)) return -1;
    for (size_t i = 0; i < n; i++)
      if ((unsigned char)buf[i] >= 0x80) buf[i] = '?'; /* not ASCII after all: torn or not a str */
    fit(buf, n, tail, skip > 0, out);
    return 0;
  }
  uint8_t raw[STR_MAX * 4];
  if (copy_from(s + L->u_compact_size + skip * kind, raw, n * kind, safe)) return -1;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    uint32_t c = kind == 1 ? raw[i] : kind == 2 ? (uint32_t)(raw[2 * i] | raw[2 * i + 1] << 8)
                                                : (uint32_t)(raw[4 * i] | raw[4 * i + 1] << 8 |
                                                             raw[4 * i + 2] << 16 | (uint32_t)raw[4 * i + 3] << 24);
    if (c >= 0xd800 && c < 0xe000) c = 0xfffd; /* a lone surrogate (surrogateescape) */
    if (c > 0x10ffff) return -1;
    if (c < 0x80) {
      buf[k++] = (char)c;
    } else if (c < 0x800) {
      buf[k++] = (char)(0xc0 | c >> 6);
      buf[k++] = (char)(0x80 | (c & 0x3f));
    } else if (c < 0x10000) {
      buf[k++] = (char)(0xe0 | c >> 12);
      buf[k++] = (char)(0x80 | ((c >> 6) & 0x3f));
      buf[k++] = (char)(0x80 | (c & 0x3f));
    } else {
      buf[k++] = (char)(0xf0 | c >> 18);
      buf[k++] = (char)(0x80 | ((c >> 12) & 0x3f));
      buf[k++] = (char)(0x80 | ((c >> 6) & 0x3f));
      buf[k++] = (char)(0x80 | (c & 0x3f));
    }
  }
  fit(buf, k, tail, skip > 0, out);
  return 0;
}

int nsp_pysite_read_line310(const uint8_t *tab, size_t n, int firstlineno, int lasti) {
  if (lasti < 0) return firstlineno;
  /* CPython 3.10 Objects/codeobject.c: PyCode_Addr2Line(co, f_lasti * 2),
   * the address ranges [start, end) advanced pair by pair. */
  long addr = (long)lasti * 2, end = 0, line = firstlineno;
  for (size_t i = 0; i + 1 < n; i += 2) {
    long start = end;
    end += tab[i];
    int ld = (int8_t)tab[i + 1];
    int none = ld == -128;
    if (!none) line += ld;
    if (start <= addr && addr < end) return none ? -1 : (int)line;
  }
  return -1;
}

/* Objects/locations.md (3.11+): 6-bit chunks, 0x40 continues. */
static int varint(const uint8_t *t, size_t n, size_t *i, unsigned *v) {
  unsigned r = 0, shift = 0;
  for (;;) {
    if (*i >= n || shift > 28) return -1;
    uint8_t b = t[(*i)++];
    r |= (unsigned)(b & 63) << shift;
    shift += 6;
    if (!(b & 64)) break;
  }
  *v = r;
  return 0;
}

int nsp_pysite_read_line311(const uint8_t *tab, size_t n, int firstlineno, int lasti) {
  if (lasti < 0) return firstlineno;
  long line = firstlineno, at = 0;
  size_t i = 0;
  while (i < n) {
    uint8_t b = tab[i++];
    if (!(b & 0x80)) return -1; /* not the start of an entry */
    int code = (b >> 3) & 15, len = (b & 7) + 1;
    long delta = 0;
    int none = 0;
    unsigned v;
    if (code == 15) none = 1;                     /* no location */
    else if (code == 14 || code == 13) {          /* long form; no column */
      if (varint(tab, n, &i, &v)) return -1;
      delta = v & 1 ? -(long)(v >> 1) : (long)(v >> 1);
      if (code == 14) /* end line delta, column, end column */
        for (int k = 0; k < 3; k++)
          if (varint(tab, n, &i, &v)) return -1;
    } else if (code >= 10) {                      /* one-line form */
      delta = code - 10;
      i += 2;
    } else i += 1;                                /* short form */
    line += delta;
    if (lasti >= at && lasti < at + len) return none ? -1 : (int)line;
    at += len;
  }
  return -1;
}

int nsp_pysite_read_resolve(const struct nsp_pysite_layout *L, const struct nsp_pysite_raw *f, int safe,
                       struct nsp_pysite_frame *out) {
  uint8_t cb[SPAN_MAX], bb[64];
  const uint8_t *cp = view(f->code, L->co_span, safe, cb);
  if (!cp || ptr_at(cp, L->ob_type) != L->code_type) return -1;
  if (read_str(L, ptr_at(cp, L->co_filename), safe, 1, out->file) ||
      read_str(L, ptr_at(cp, L->co_name), safe, 0, out->func))
    return -1;
  int first = i32_at(cp, L->co_firstlineno);
  uintptr_t lt = ptr_at(cp, L->co_linetable);
  const uint8_t *bp = view(lt, L->b_sval, safe, bb);
  if (!bp || L->b_sval > sizeof bb || ptr_at(bp, L->ob_type) != L->bytes_type) return -1;
  int64_t len;
  memcpy(&len, bp + L->b_size, sizeof len);
  if (len < 0 || len > (1 << 20)) return -1;
  /* A line table is a few bytes per line of the function: read it in
   * pieces into a bounded buffer, the entries up to lasti suffice. */
  static uint8_t tab[1 << 16]; /* callers serialize (nsp_pysite.c's lock) */
  size_t n = (size_t)len > sizeof tab ? sizeof tab : (size_t)len;
  if (safe ? nsp_pysite_read_safe(lt + L->b_sval, tab, n) : (memcpy(tab, (const void *)(lt + L->b_sval), n), 0))
    return -1;
  out->line = L->minor == 10 ? nsp_pysite_read_line310(tab, n, first, f->lasti) : nsp_pysite_read_line311(tab, n, first, f->lasti);
  return 0;
}
