/* nsp_resolve.c - finding the real NCCL function behind each wrapper.
 *
 * In order (DESIGN.md, "Interposition"):
 *  1. dlsym(RTLD_NEXT): libnccl in the global scope, after us.
 *  2. dlopen($NCCLSPY_NCCL_LIBRARY or "libnccl.so.2", RTLD_NOLOAD): a
 *     libnccl already loaded in a local scope, which is how Python loads
 *     torch and torch loads NCCL (measured with torch 2.11 wheels: step 1
 *     returns NULL there).  pnccl* twins (NCCL >= 2.16) are preferred.
 *  3. A scan of loaded objects (dl_iterate_phdr) for any "libnccl" other
 *     than ourselves, for builds that vendor NCCL under another soname.
 * Never RTLD_DEFAULT: it finds our own wrapper and recurses.  A miss is
 * not cached: torch loads NCCL after the preload, so we look again. */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nsp_setting.h"
#include "nsp_shim.h"

_Atomic(nsp_any_fn) nsp_resolve_fn[NSP_API_COUNT];

#define NSP_STR_(name, kind, ret, params, args, since, op) "nccl" #name,
static const char *const nsp_sym_names[] = {NSP_NCCL_APIS(NSP_STR_)};
#undef NSP_STR_

static pthread_mutex_t nsp_resolve_lock = PTHREAD_MUTEX_INITIALIZER;
static void *nsp_lib_handle; /* the libnccl found by step 2 or 3 */
static char nsp_lib_path[512];
static _Atomic int nsp_warned_missing[NSP_API_COUNT]; /* a function the loaded libnccl lacks */
static _Atomic int nsp_warned_nolib;                  /* no libnccl loaded at all: said once */

static _Atomic int nsp_lib_path_set; /* nsp_lib_path is written once, then this is set */

const char *nsp_resolve_path(void) {
  return atomic_load_explicit(&nsp_lib_path_set, memory_order_acquire) ? nsp_lib_path : "";
}

void nsp_resolve_atfork(int phase) {
  if (phase == 0) pthread_mutex_lock(&nsp_resolve_lock);
  else pthread_mutex_unlock(&nsp_resolve_lock);
}

static const char nsp_self_marker = 0;

/* True when f lies in the shim itself. */
static int is_self(void *f) {
  Dl_info me, it;
  if (!dladdr(&nsp_self_marker, &me) || !dladdr(f, &it)) return 0;
  return me.dli_fbase == it.dli_fbase;
}

/* Notes the library f lies in, once: its canonical path (realpath), so
 * that ranks reaching one file by different routes (a symlink, "dir/..")
 * record the same path and the analyzer reports no false difference. */
static void note_path(void *f) {
  Dl_info it;
  if (!atomic_load_explicit(&nsp_lib_path_set, memory_order_relaxed) && dladdr(f, &it) && it.dli_fname) {
    char canon[PATH_MAX];
    int saved = errno;
    const char *p = realpath(it.dli_fname, canon) ? canon : it.dli_fname;
    errno = saved;
    size_t n = strnlen(p, sizeof nsp_lib_path - 1); /* a longer path is cut */
    memcpy(nsp_lib_path, p, n);
    nsp_lib_path[n] = 0;
    atomic_store_explicit(&nsp_lib_path_set, 1, memory_order_release);
  }
}

/* pnccl<Name> first, then nccl<Name>, from one library handle. */
static void *sym_from(void *handle, int api) {
  char pname[64];
  snprintf(pname, sizeof pname, "p%s", nsp_sym_names[api]);
  void *f = dlsym(handle, pname);
  if (!f || is_self(f)) f = dlsym(handle, nsp_sym_names[api]);
  return f && !is_self(f) ? f : NULL;
}

struct scan {
  char names[8][512];
  int n;
};

static int scan_one(struct dl_phdr_info *info, size_t size, void *arg) {
  struct scan *s = arg;
  const char *name = info->dlpi_name;
  if (!name || !strstr(name, "libnccl") || s->n >= 8) return 0;
  snprintf(s->names[s->n++], sizeof s->names[0], "%s", name);
  return 0;
}

static void *find_library(void) {
  void *h = dlopen(nsp_setting_str(NSP_SET_NCCL_LIBRARY), RTLD_NOLOAD | RTLD_LAZY);
  if (h) return h;
  /* Collect names first: dlopen inside the callback would take the
   * loader lock that dl_iterate_phdr holds. */
  struct scan s = {.n = 0};
  dl_iterate_phdr(scan_one, &s);
  for (int i = 0; i < s.n; i++) {
    h = dlopen(s.names[i], RTLD_NOLOAD | RTLD_LAZY);
    if (!h) continue;
    void *probe = dlsym(h, "ncclGetVersion");
    if (probe && !is_self(probe)) return h;
    dlclose(h);
  }
  return NULL;
}

nsp_any_fn nsp_resolve_lookup(int api) {
  void *f = dlsym(RTLD_NEXT, nsp_sym_names[api]);
  if (f && is_self(f)) f = NULL;
  int have_lib = 1;
  if (!f) {
    pthread_mutex_lock(&nsp_resolve_lock);
    if (!nsp_lib_handle) nsp_lib_handle = find_library();
    if (nsp_lib_handle) f = sym_from(nsp_lib_handle, api);
    else have_lib = 0;
    pthread_mutex_unlock(&nsp_resolve_lock);
  }
  if (!f && !have_lib) {
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
                  nsp_sym_names[api], nsp_resolve_path()[0] ? nsp_resolve_path() : "its path unknown");
    return NULL;
  }
  pthread_mutex_lock(&nsp_resolve_lock);
  note_path(f);
  pthread_mutex_unlock(&nsp_resolve_lock);
  /* POSIX guarantees dlsym's object pointer converts to a function pointer. */
  nsp_any_fn fn;
  memcpy(&fn, &f, sizeof fn);
  atomic_store_explicit(&nsp_resolve_fn[api], fn, memory_order_release);
  return fn;
}
