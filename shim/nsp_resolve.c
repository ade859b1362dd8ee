/* nsp_resolve.c - the libnccl the shim interposes, and the real NCCL
 * function behind each wrapper.
 *
 * The library (DESIGN.md, "Interposition") is chosen once and kept loaded:
 *  1. the object of the ncclGetVersion that dlsym(RTLD_NEXT) finds, when it
 *     looks like NCCL (its name has "nccl", or it has the pnccl* twins):
 *     libnccl in the global scope, after us;
 *  2. dlopen($NCCLSPY_NCCL_LIBRARY or "libnccl.so.2", RTLD_NOLOAD): a
 *     libnccl already loaded in a local scope, which is how Python loads
 *     torch and torch loads NCCL (measured with torch 2.11 wheels: step 1
 *     finds nothing there);
 *  3. a scan of loaded objects (dl_iterate_phdr) for any "libnccl" other
 *     than ourselves, for builds that vendor NCCL under another soname;
 *  4. step 1's object whatever its name;
 *  5. the object of an NCCL entry point a program took with dlsym or
 *     dlvsym (nsp_resolve_owns, from nsp_dlsym.c), when nothing above found
 *     one: ctypes and XLA load NCCL in a local scope, under any name.
 * No library yet is not remembered: torch loads NCCL after the preload, so
 * the next call looks again.
 *
 * Each function: dlsym(RTLD_NEXT) first, so that another preload after us
 * that wraps it gets the call too, unless that finds it in a libnccl other
 * than the library; else from the library, pnccl* twins (NCCL >= 2.16)
 * first.  Never RTLD_DEFAULT: it finds our own wrapper and recurses.  The
 * shim's lookups go to the real dlsym (nsp_dlsym_real), not to its own.
 *
 * Another libnccl in the process (seen by nsp_resolve_owns, or by the
 * writer thread's look at loaded objects, nsp_resolve_rescan) is not
 * interposed: its calls are not traced.  It is warned about once and
 * recorded once per process in a LIBNCCL record, kept here until the
 * writer has started. */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nsp_setting.h"
#include "nsp_shim.h"

_Atomic(nsp_any_fn) nsp_resolve_fn[NSP_API_COUNT];

#define NSP_STR_(name, kind, ret, params, args, since, op) "nccl" #name,
static const char *const nsp_sym_names[] = {NSP_NCCL_APIS(NSP_STR_)};
#undef NSP_STR_

/* The library: set once, never freed. */
struct nsp_lib {
  void *handle;    /* a reference from dlopen(RTLD_NOLOAD): it stays loaded */
  uintptr_t base;  /* where it is loaded (dladdr's dli_fbase) */
  char path[512];  /* canonical */
};
static _Atomic(struct nsp_lib *) nsp_lib;

static _Atomic int nsp_warned_missing[NSP_API_COUNT]; /* a function the loaded libnccl lacks */
static _Atomic int nsp_warned_nolib;                  /* no libnccl loaded at all: said once */

const char *nsp_resolve_path(void) {
  struct nsp_lib *lib = atomic_load_explicit(&nsp_lib, memory_order_acquire);
  return lib ? lib->path : "";
}

/* ---- loaded objects ---- */

struct obj {
  uintptr_t base;
  struct link_map *map;
  const char *name;
};

/* The loaded object that holds address a.  -1 when none does. */
static int obj_of(const void *a, struct obj *o) {
  Dl_info info;
  struct link_map *m = NULL;
  if (!a || !dladdr1(a, &info, (void **)&m, RTLD_DL_LINKMAP) || !m) return -1;
  o->base = (uintptr_t)info.dli_fbase;
  o->map = m;
  o->name = info.dli_fname ? info.dli_fname : "";
  return 0;
}

static const char nsp_self_marker = 0;

static uintptr_t self_base(void) {
  static _Atomic uintptr_t base;
  uintptr_t b = atomic_load_explicit(&base, memory_order_relaxed);
  struct obj o;
  if (!b && obj_of(&nsp_self_marker, &o) == 0) atomic_store_explicit(&base, b = o.base, memory_order_relaxed);
  return b;
}

/* True when f lies in the shim itself. */
static int is_self(const void *f) {
  struct obj o;
  return obj_of(f, &o) == 0 && o.base == self_base();
}

/* An NCCL library: it defines ncclGetVersion itself. */
static int is_nccl(const struct obj *o) {
  return o->base != self_base() && nsp_dlsym_in(o->map, "ncclGetVersion") != NULL;
}

/* What step 1 takes without a second look: a name with "nccl", or the
 * pnccl* twins (a profiler that wraps nccl* has neither). */
static int looks_like_nccl(const struct obj *o) {
  const char *b = strrchr(o->name, '/');
  return strstr(b ? b + 1 : o->name, "nccl") || nsp_dlsym_in(o->map, "pncclGetVersion");
}

/* ---- the library ---- */

/* Makes o the library, unless another thread chose one first; returns the
 * library, or NULL when o cannot be held loaded. */
static struct nsp_lib *lib_publish(const struct obj *o) {
  struct nsp_lib *lib = atomic_load_explicit(&nsp_lib, memory_order_acquire);
  if (lib) return lib;
  struct nsp_lib *mine = calloc(1, sizeof *mine);
  if (!mine) return NULL;
  mine->handle = dlopen(o->name, RTLD_NOLOAD | RTLD_LAZY);
  if (!mine->handle) {
    free(mine);
    return NULL;
  }
  mine->base = o->base;
  /* Canonical (realpath), so that ranks reaching one file by different
   * routes (a symlink, "dir/..") record the same path and the analyzer
   * reports no false difference. */
  char canon[PATH_MAX];
  const char *p = realpath(o->name, canon) ? canon : o->name;
  size_t n = strnlen(p, sizeof mine->path - 1); /* a longer path is cut */
  memcpy(mine->path, p, n);
  mine->path[n] = 0;
  if (atomic_compare_exchange_strong(&nsp_lib, &lib, mine)) return mine;
  dlclose(mine->handle);
  free(mine);
  return lib;
}

struct scan {
  char names[8][512];
  int n;
};

/* True when the object holds the shim ("libncclspy" has "libnccl" in it):
 * the scans leave it alone. */
static int phdr_is_self(const struct dl_phdr_info *info) {
  uintptr_t me = (uintptr_t)&nsp_self_marker;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
    if (ph->p_type == PT_LOAD && me >= lo && me - lo < ph->p_memsz) return 1;
  }
  return 0;
}

static int scan_one(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  struct scan *s = arg;
  const char *name = info->dlpi_name;
  if (!name || !strstr(name, "libnccl") || s->n >= 8 || phdr_is_self(info)) return 0;
  snprintf(s->names[s->n++], sizeof s->names[0], "%s", name);
  return 0;
}

/* The ncclGetVersion of a loaded library (by name), when it is an NCCL
 * other than us: into *o.  0, or -1. */
static int nccl_by_name(const char *name, struct obj *o) {
  void *h = dlopen(name, RTLD_NOLOAD | RTLD_LAZY);
  if (!h) return -1;
  void *f = nsp_dlsym_real(h, "ncclGetVersion");
  int ok = f && obj_of(f, o) == 0 && is_nccl(o);
  dlclose(h); /* o's object is still loaded: whoever loaded it holds it */
  return ok ? 0 : -1;
}

/* The library, choosing it when there is none yet (steps 1-4); NULL when
 * no libnccl is loaded.  No lock is held across the loader's calls: a
 * program's dlsym that comes here may run inside a dlopen. */
static struct nsp_lib *lib_choose(void) {
  struct nsp_lib *lib = atomic_load_explicit(&nsp_lib, memory_order_acquire);
  if (lib) return lib;
  struct obj next, o;
  void *f = nsp_dlsym_real(RTLD_NEXT, "ncclGetVersion");
  int have_next = f && obj_of(f, &next) == 0 && is_nccl(&next);
  if (have_next && looks_like_nccl(&next)) return lib_publish(&next);
  if (nccl_by_name(nsp_setting_str(NSP_SET_NCCL_LIBRARY), &o) == 0) return lib_publish(&o);
  /* Names first: dlopen inside the callback would take the loader lock
   * that dl_iterate_phdr holds. */
  struct scan s = {.n = 0};
  dl_iterate_phdr(scan_one, &s);
  for (int i = 0; i < s.n; i++)
    if (nccl_by_name(s.names[i], &o) == 0) return lib_publish(&o);
  return have_next ? lib_publish(&next) : NULL;
}

/* pnccl<Name> first, then nccl<Name>, from the library. */
static void *sym_from(void *handle, int api) {
  char pname[64];
  snprintf(pname, sizeof pname, "p%s", nsp_sym_names[api]);
  void *f = nsp_dlsym_real(handle, pname);
  if (!f || is_self(f)) f = nsp_dlsym_real(handle, nsp_sym_names[api]);
  return f && !is_self(f) ? f : NULL;
}

/* f, from dlsym(RTLD_NEXT), lies in a libnccl other than lib. */
static int in_other_nccl(const void *f, const struct nsp_lib *lib) {
  struct obj o;
  return obj_of(f, &o) == 0 && o.base != lib->base && is_nccl(&o);
}

nsp_any_fn nsp_resolve_lookup(int api) {
  int saved = errno;
  struct nsp_lib *lib = lib_choose();
  void *f = nsp_dlsym_real(RTLD_NEXT, nsp_sym_names[api]);
  if (f && (is_self(f) || (lib && in_other_nccl(f, lib)))) f = NULL;
  if (!f && lib) f = sym_from(lib->handle, api);
  errno = saved;
  if (!f && !lib) {
    /* Once per process, whichever function came first: until a libnccl
     * is loaded every call misses alike. */
    nsp_warn_once(&nsp_warned_nolib,
                  "%s: no real NCCL function found: no libnccl is loaded in this process (a library "
                  "that vendors NCCL under another name: set NCCLSPY_NCCL_LIBRARY to its name once it is "
                  "loaded); NCCL calls return ncclInvalidUsage without recording until one is",
                  nsp_sym_names[api]);
    return NULL;
  }
  if (!f) {
    nsp_warn_once(&nsp_warned_missing[api],
                  "%s: no real NCCL function found: the loaded libnccl (%s) does not have it; "
                  "it returns ncclInvalidUsage without recording",
                  nsp_sym_names[api], lib->path);
    return NULL;
  }
  /* POSIX guarantees dlsym's object pointer converts to a function pointer. */
  nsp_any_fn fn;
  memcpy(&fn, &f, sizeof fn);
  atomic_store_explicit(&nsp_resolve_fn[api], fn, memory_order_release);
  return fn;
}

/* ---- other libnccls ---- */

#define NSP_OTHERS_MAX 16

struct nsp_other {
  uintptr_t base;
  int32_t version;  /* its ncclGetVersion(); 0 unknown */
  uint64_t t;       /* when the shim saw it */
  pid_t written;    /* the process whose trace has its record; 0 none */
  char path[512];   /* as the loader has it */
};

/* Guards the table.  No loader call is made while it is held. */
static pthread_mutex_t nsp_resolve_lock = PTHREAD_MUTEX_INITIALIZER;
static struct nsp_other nsp_others[NSP_OTHERS_MAX];
static int nsp_nothers;
static _Atomic int nsp_others_warned[NSP_OTHERS_MAX];
static _Atomic int nsp_others_full_warned;
/* The process whose writer has started (its PROCESS record is in the ring):
 * records may follow it. */
static _Atomic pid_t nsp_resolve_writable;

void nsp_resolve_atfork(int phase) {
  if (phase == 0) pthread_mutex_lock(&nsp_resolve_lock);
  else pthread_mutex_unlock(&nsp_resolve_lock);
}

/* Writes the records not yet in this process's trace. */
static void flush_others(void) {
  pid_t me = getpid();
  if (atomic_load_explicit(&nsp_resolve_writable, memory_order_acquire) != me) return;
  pthread_mutex_lock(&nsp_resolve_lock);
  for (int i = 0; i < nsp_nothers; i++) {
    struct nsp_other *x = &nsp_others[i];
    if (x->written == me) continue;
    x->written = me; /* once, even when the ring is full or tracing is off */
    size_t n = strlen(x->path);
    struct nsp_rec_ext *ext = calloc(1, sizeof *ext + n + 1);
    struct nsp_rec *r = ext ? nsp_ring_reserve() : NULL;
    if (!r) {
      free(ext);
      continue;
    }
    char *path = (char *)(ext + 1);
    memcpy(path, x->path, n + 1);
    ext->nccl_path = path;
    ext->nccl_version = x->version;
    r->kind = NSP_REC_LIBNCCL;
    nsp_rec_libnccl_set_t(r, x->t);
    r->ext = ext; /* one block with its string, freed with the record */
    nsp_ring_commit(r);
  }
  pthread_mutex_unlock(&nsp_resolve_lock);
}

/* o is a libnccl other than the library: warns once and records it. */
static void note_other(const struct obj *o, const struct nsp_lib *lib) {
  pthread_mutex_lock(&nsp_resolve_lock);
  int known = 0;
  for (int i = 0; i < nsp_nothers && !known; i++) known = nsp_others[i].base == o->base;
  pthread_mutex_unlock(&nsp_resolve_lock);
  if (known) return;
  /* Its version, from its own ncclGetVersion (a constant in NCCL); with
   * the depth raised, should it call a public name we wrap. */
  int32_t version = 0;
  void *gv = nsp_dlsym_in(o->map, "ncclGetVersion");
  if (gv) {
    ncclResult_t (*get)(int *);
    memcpy(&get, &gv, sizeof get);
    int v = 0;
    nsp_wrappers_depth++;
    if (get(&v) == ncclSuccess) version = v;
    nsp_wrappers_depth--;
  }
  pthread_mutex_lock(&nsp_resolve_lock);
  int i = 0, added = 0;
  while (i < nsp_nothers && nsp_others[i].base != o->base) i++;
  if (i == nsp_nothers && i < NSP_OTHERS_MAX) {
    struct nsp_other *x = &nsp_others[nsp_nothers++];
    x->base = o->base;
    x->version = version;
    x->t = nsp_now_ns();
    x->written = 0;
    snprintf(x->path, sizeof x->path, "%s", o->name);
    added = 1;
  }
  pthread_mutex_unlock(&nsp_resolve_lock);
  if (added) {
    nsp_warn_once(&nsp_others_warned[i],
                  "a second libnccl is loaded: %s (NCCL %d.%d.%d); calls made through it are not traced "
                  "(the shim traces %s)",
                  o->name, version / 10000, version / 100 % 100, version % 100, lib->path);
    flush_others();
  } else if (i == NSP_OTHERS_MAX) {
    nsp_warn_once(&nsp_others_full_warned, "more than %d other libnccls loaded; %s is not recorded",
                  NSP_OTHERS_MAX, o->name);
  }
}

int nsp_resolve_owns(const void *f) {
  struct obj o;
  if (obj_of(f, &o) < 0 || o.base == self_base()) return 0;
  struct nsp_lib *lib = lib_choose();
  if (lib && lib->base == o.base) return 1;
  if (!is_nccl(&o)) return 0; /* no NCCL: some library's own nccl* */
  if (!lib) lib = lib_publish(&o); /* step 5: the program's NCCL becomes the library */
  if (!lib) return 0;
  if (lib->base == o.base) return 1;
  note_other(&o, lib);
  return 0;
}

void nsp_resolve_started(void) {
  atomic_store_explicit(&nsp_resolve_writable, getpid(), memory_order_release);
  flush_others();
}

struct rescan {
  unsigned long long adds, subs;
  int n;
  char names[NSP_OTHERS_MAX][512];
  const void *addr[NSP_OTHERS_MAX];
};

static int rescan_one(struct dl_phdr_info *info, size_t size, void *arg) {
  struct rescan *s = arg;
  if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
    s->adds = info->dlpi_adds;
    s->subs = info->dlpi_subs;
  }
  const char *name = info->dlpi_name;
  if (!name || !strstr(name, "libnccl") || s->n >= NSP_OTHERS_MAX || phdr_is_self(info)) return 0;
  for (int i = 0; i < info->dlpi_phnum; i++)
    if (info->dlpi_phdr[i].p_type == PT_LOAD) {
      snprintf(s->names[s->n], sizeof s->names[0], "%s", name);
      s->addr[s->n++] = (const void *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
      break;
    }
  return 0;
}

void nsp_resolve_rescan(void) {
  static unsigned long long seen_adds, seen_subs;
  struct nsp_lib *lib = atomic_load_explicit(&nsp_lib, memory_order_acquire);
  if (lib) {
    struct rescan s = {.n = 0};
    dl_iterate_phdr(rescan_one, &s);
    if (s.adds != seen_adds || s.subs != seen_subs) {
      seen_adds = s.adds;
      seen_subs = s.subs;
      for (int i = 0; i < s.n; i++) {
        /* Held loaded while it is looked at. */
        void *h = dlopen(s.names[i], RTLD_NOLOAD | RTLD_LAZY);
        struct obj o;
        if (h && obj_of(s.addr[i], &o) == 0 && o.base != lib->base && is_nccl(&o)) note_other(&o, lib);
        if (h) dlclose(h);
      }
    }
  }
  flush_others();
}
