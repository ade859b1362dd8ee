/* nsp_pysite.h - reading a CPython thread's frames without the GIL.
 *
 * nsp_pysite_read.c knows where CPython 3.10 to 3.13 keep a thread's
 * frames, code objects, strings and line tables, and reads them from
 * this process's memory: a layout (struct nsp_pysite_layout: offsets and
 * the addresses of the type objects the reads are checked against) plus
 * a thread state's address is all it needs, so tests build fake
 * interpreter memory and inject both.  nsp_pysite.c finds the real ones
 * (dlsym on the running interpreter) and keys call sites.
 *
 * Where the offsets come from: the real headers of CPython 3.10.13,
 * 3.11.7, 3.12.1 (offsetof, x86-64 and aarch64 alike: the structs have no
 * arch-dependent members before the fields used) and, for 3.13, the
 * interpreter's own _Py_DebugOffsets (Include/internal/pycore_runtime.h
 * of 3.13, stable between patch releases). */
#ifndef NSP_PYSITE_H
#define NSP_PYSITE_H

#include <stddef.h>
#include <stdint.h>

/* Offsets in bytes; types' addresses in this process. */
struct nsp_pysite_layout {
  int minor;             /* 10, 11, 12 or 13 (CPython 3.minor) */
  /* PyThreadState */
  uint32_t ts_next;      /* next thread state of the interpreter (older) */
  uint32_t ts_frame;     /* 3.10 frame, 3.11 and 3.12 cframe, 3.13 current_frame */
  int32_t cf_current;    /* 3.11/3.12: _PyCFrame.current_frame; -1: ts_frame is the frame */
  int32_t ts_native_tid; /* native_thread_id (3.11+); -1 unknown */
  uint32_t ts_span;      /* bytes of a thread state read at once */
  /* frames: 3.10 PyFrameObject (f_back, f_code, f_lasti: int, in code
   * units); 3.11+ _PyInterpreterFrame (previous, f_code/f_executable,
   * prev_instr/instr_ptr: a pointer into co_code_adaptive, owner: char) */
  uint32_t fr_previous, fr_code, fr_instr;
  int32_t fr_owner;      /* -1 none (3.10) */
  uint32_t fr_span;
  int owner_generator;   /* FRAME_OWNED_BY_GENERATOR (1) */
  int owner_cstack;      /* FRAME_OWNED_BY_CSTACK (3, 3.12+); -1 none */
  /* PyCodeObject */
  uint32_t co_filename, co_name, co_linetable, co_firstlineno;
  uint32_t co_code_adaptive;   /* 3.11+: offset of the instructions */
  int32_t co_firsttraceable;   /* 3.11/3.12: int _co_firsttraceable; -1 unknown */
  uint32_t co_span;
  /* objects */
  uint32_t ob_type;            /* PyObject.ob_type */
  uint32_t u_length, u_state;  /* PyASCIIObject */
  uint32_t u_ascii_size;       /* sizeof(PyASCIIObject): ASCII data follows */
  uint32_t u_compact_size;     /* sizeof(PyCompactUnicodeObject): other data follows */
  uint32_t b_size, b_sval;     /* PyBytesObject ob_size, ob_sval */
  /* type objects; frame_type only for 3.10 (NULL: not checked) */
  uintptr_t code_type, unicode_type, bytes_type, frame_type;
  /* Set (and read) atomically once walks of this process's own threads
   * have passed every check a number of times: from then on the calling
   * thread's own frames are walked reading the frames alone (previous,
   * owner, code pointer, instruction pointer), not their code objects,
   * which a training loop's caches may not hold.  The code objects are
   * still checked when a new site is resolved. */
  int trusted;
};

/* Fills L for CPython 3.minor (10, 11, 12) from the versions' headers.
 * 0, or -1 for another minor.  Types are left for the caller. */
int nsp_pysite_read_layout_known(struct nsp_pysite_layout *L, int minor);
/* Fills L for 3.13 from a _Py_DebugOffsets (the start of _PyRuntime):
 * checks its cookie "xdebugpy", that its version is 3.13, that it is not
 * a free-threaded build, and that every offset lies inside its struct.
 * 0, or -1 (*why says what failed).  Types are left for the caller. */
int nsp_pysite_read_layout_313(struct nsp_pysite_layout *L, const void *debug_offsets, const char **why);

/* Reads n bytes at addr into buf with process_vm_readv on this process:
 * a fault (unmapped memory) gives -1, never a signal.  0 when read. */
int nsp_pysite_read_safe(uintptr_t addr, void *buf, size_t n);

/* One frame as walked, and as a site is keyed per call: the code object
 * and the instruction's index in it (code units). */
struct nsp_pysite_raw {
  uintptr_t code;
  int32_t lasti;
};

/* Walks the frames of thread state ts, innermost first, keeping up to
 * depth code frames in out (generators' frames kept, incomplete frames
 * and 3.12's C-stack entry frames skipped).  safe: every read is
 * nsp_pysite_read_safe (the frames of another thread, which may change
 * meanwhile); else plain loads (the calling thread's own frames, which
 * cannot).  Returns the frames kept (0: none), *truncated set when more
 * code frames lie beyond them; -1 when a check failed (a code object
 * whose type is not L->code_type, a frame not of frame_type, a read
 * that faulted, more than 4096 frames: a corrupt chain or a cycle). */
int nsp_pysite_read_walk(const struct nsp_pysite_layout *L, uintptr_t ts, int safe,
                    struct nsp_pysite_raw *out, int depth, int *truncated);
/* The thread state's current frame (0 none), or -1 on a failed read. */
int nsp_pysite_read_ts_frame(const struct nsp_pysite_layout *L, uintptr_t ts, int safe, uintptr_t *frame);

/* One frame resolved: file (co_filename), function (co_qualname from
 * 3.11, co_name for 3.10), line.  Strings are UTF-8, encoded from the
 * str's code points, at most 511 bytes: a function keeps its start, a file
 * its end after "...". */
struct nsp_pysite_frame {
  char file[512], func[512];
  int line; /* -1: no line (a location-less instruction) */
};
/* Resolves raw frame f (its code object read again, with safe reads when
 * safe).  0, or -1 when a check failed (types of the code object, its
 * strings and line table). */
int nsp_pysite_read_resolve(const struct nsp_pysite_layout *L, const struct nsp_pysite_raw *f, int safe,
                       struct nsp_pysite_frame *out);

/* Line of the instruction at index lasti (code units) in a line table.
 * 3.10's co_linetable (PEP 626: byte pairs of offset delta, line delta;
 * -128 no line); 3.11 to 3.13's co_linetable (the location table of
 * PEP 657, Objects/locations.md).  -1: no line; firstlineno for lasti < 0. */
int nsp_pysite_read_line310(const uint8_t *tab, size_t n, int firstlineno, int lasti);
int nsp_pysite_read_line311(const uint8_t *tab, size_t n, int firstlineno, int lasti);

#endif /* NSP_PYSITE_H */
