/* nsp_pysite.c - the Python line an NCCL call came from.
 *
 * At each collective's and send/recv's entry the shim reads the calling
 * thread's Python frames (nsp_pysite_read.c), without the GIL and without
 * any Python API that needs it: the thread sits in our wrapper, so its
 * frame chain cannot change meanwhile.  Per call only the (code object,
 * instruction) pairs of the innermost NCCLSPY_PYSITE_DEPTH frames are
 * read and hashed, from the frames alone once the first walks have passed
 * every check (the code objects are not touched: in a training loop they
 * are often out of cache, which doubled the cost); a known hash gives the
 * site's id at once.  A code object freed and another made at its
 * address with an instruction at the same index would alias: code objects
 * live as long as their functions' modules, so we accept that.  A new one
 * is resolved under a lock (strings, and lines from the line tables) and
 * written as a PYSITE record before the call's in-flight entry and CALL
 * name it.
 *
 * Python is found at the first call: PyGILState_GetThisThreadState (a
 * thread-specific lookup, safe without the GIL: PyTorch releases the GIL
 * around its NCCL calls, yet the thread's state is still there), the
 * version (Py_Version, or Py_GetVersion() for 3.10), the type objects the
 * reads are checked against, and for 3.13 _PyRuntime's _Py_DebugOffsets.
 * No Python, an unknown version, a debug or free-threaded build, or a
 * failed check: no Python sites, one warning, nothing else changes; a
 * program without Python pays one branch per call after the first.
 *
 * A thread that runs no Python (PyTorch's autograd threads, which run
 * DDP's gradient all-reduce during backward(), or any native thread)
 * borrows the stack of the process's main Python thread -- the oldest
 * thread state of the main interpreter -- read with process_vm_readv, as
 * it may change meanwhile, and every read checked; the site says so
 * (NSP_PYSITE_BORROWED) and names that thread.  That costs a few system
 * calls (microseconds) per call, acceptable for such threads.
 *
 * Settings: NCCLSPY_PYSITES=0 turns Python sites off; NCCLSPY_PYSITE_DEPTH
 * (default 8). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "nsp_pysite.h"
#include "nsp_setting.h"
#include "nsp_shim.h"

#define NSP_PYSITE_SLOTS 4096 /* power of two; at most 3072 sites kept */

static struct {
  _Atomic uint64_t key;
  _Atomic uint32_t id;
} nsp_pysites[NSP_PYSITE_SLOTS];
static pthread_mutex_t nsp_pysite_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t nsp_npysites;
/* Borrowed sites (NSP_PYSITE_BORROWED) made so far, and their cap: a
 * quarter of the table at most. */
#define NSP_PYSITE_MAX_BORROWED 256
static uint32_t nsp_nborrowed;
static _Atomic int nsp_pysite_warned_borrowed;
/* -1 not looked yet; 0 off; 1 on (own stacks); borrowing apart. */
static _Atomic int nsp_pysite_on = -1;
static int nsp_pysite_borrow; /* process_vm_readv works: native threads borrow */
static int nsp_pysite_depth = 8;
static struct nsp_pysite_layout nsp_pysite_L;
static void *(*nsp_py_tstate)(void);        /* PyGILState_GetThisThreadState */
static void *(*nsp_py_main_interp)(void);   /* PyInterpreterState_Main */
static void *(*nsp_py_thread_head)(void *); /* PyInterpreterState_ThreadHead */
static _Atomic int nsp_pysite_warned_off, nsp_pysite_warned_full, nsp_pysite_warned_check;
static NSP_TLS uint32_t nsp_pysite_tid; /* this thread's id, 0 not asked yet */
/* Walks of the calling thread's own frames that passed every check
 * (code objects' types, incomplete frames) before the layout is trusted
 * and such walks stop reading code objects (nsp_pysite_layout.trusted). */
#define NSP_PYSITE_CHECKED_WALKS 64
static _Atomic uint32_t nsp_pysite_checked;

/* A function the interpreter exports, or NULL. */
static void (*py_fn(const char *name))(void) {
  union {
    void *p;
    void (*f)(void);
  } u = {nsp_dlsym_real(RTLD_DEFAULT, name)};
  return u.p ? u.f : NULL;
}

/* The CPython version as 3.minor, or -1. */
static int python_minor(void) {
  const unsigned long *v = nsp_dlsym_real(RTLD_DEFAULT, "Py_Version");
  if (v) return (*v >> 24) == 3 ? (int)((*v >> 16) & 0xff) : -1;
  const char *(*get)(void) = (const char *(*)(void))py_fn("Py_GetVersion");
  int major, minor;
  if (!get || sscanf(get(), "%d.%d", &major, &minor) != 2 || major != 3) return -1;
  return minor;
}

/* Called with the lock held: 1 on, 0 off (warned when Python is there). */
static int init_python(void) {
  if (!nsp_setting(NSP_SET_PYSITES)) return 0;
  nsp_pysite_depth = (int)nsp_setting(NSP_SET_PYSITE_DEPTH);
  nsp_py_tstate = (void *(*)(void))py_fn("PyGILState_GetThisThreadState");
  if (!nsp_py_tstate) return 0; /* no Python in this process: nothing to say */
  struct nsp_pysite_layout *L = &nsp_pysite_L;
  const char *why = NULL;
  int minor = python_minor();
  if (nsp_dlsym_real(RTLD_DEFAULT, "_Py_NegativeRefcount")) why = "a debug build of Python";
  else if (minor == 13) {
    const void *rt = nsp_dlsym_real(RTLD_DEFAULT, "_PyRuntime");
    if (!rt) why = "no _PyRuntime";
    else nsp_pysite_read_layout_313(L, rt, &why);
  } else if (minor < 0 || nsp_pysite_read_layout_known(L, minor)) why = "a version of Python other than 3.10 to 3.13";
  if (!why) {
    L->code_type = (uintptr_t)nsp_dlsym_real(RTLD_DEFAULT, "PyCode_Type");
    L->unicode_type = (uintptr_t)nsp_dlsym_real(RTLD_DEFAULT, "PyUnicode_Type");
    L->bytes_type = (uintptr_t)nsp_dlsym_real(RTLD_DEFAULT, "PyBytes_Type");
    L->frame_type = minor == 10 ? (uintptr_t)nsp_dlsym_real(RTLD_DEFAULT, "PyFrame_Type") : 0;
    nsp_py_main_interp = (void *(*)(void))py_fn("PyInterpreterState_Main");
    nsp_py_thread_head = (void *(*)(void *))py_fn("PyInterpreterState_ThreadHead");
    if (!L->code_type || !L->unicode_type || !L->bytes_type || (minor == 10 && !L->frame_type))
      why = "its type objects were not found";
  }
  /* The calling thread's state, when it has one, must be of an interpreter. */
  uintptr_t ts = (uintptr_t)nsp_py_tstate(), interp = 0;
  if (!why && ts && (nsp_pysite_read_safe(ts + 16, &interp, sizeof interp) || !interp))
    why = "its thread state does not look like 3.10 to 3.13's";
  if (why) {
    nsp_warn_once(&nsp_pysite_warned_off, "Python call sites are off: %s", why);
    return 0;
  }
  uint64_t probe = 0x5a, got = 0;
  nsp_pysite_borrow = nsp_py_main_interp && nsp_py_thread_head &&
                      !nsp_pysite_read_safe((uintptr_t)&probe, &got, sizeof got) && got == probe;
  if (!nsp_pysite_borrow)
    nsp_warn("Python call sites of threads that run no Python are off: process_vm_readv is refused");
  return 1;
}

static void init_pysites(void) {
  pthread_mutex_lock(&nsp_pysite_lock);
  if (atomic_load(&nsp_pysite_on) < 0) atomic_store(&nsp_pysite_on, init_python());
  pthread_mutex_unlock(&nsp_pysite_lock);
}

static inline uint64_t mix(uint64_t h, uint64_t v) {
  h = (h ^ v) * 0x9e3779b97f4a7c15ull;
  return h ^ (h >> 29);
}

/* Writes the PYSITE record of a new site: strings and lines read now.
 * Called with the lock held. */
static void record_pysite(uint32_t id, const struct nsp_pysite_raw *raw, int n, int flags, uint32_t tid) {
  static struct nsp_pysite_frame fr[64]; /* under the lock */
  const char *file[64], *func[64];
  uint64_t line[64];
  int safe = nsp_pysite_borrow || (flags & NSP_PYSITE_BORROWED);
  int k = 0;
  for (int i = 0; i < n; i++) {
    if (nsp_pysite_read_resolve(&nsp_pysite_L, &raw[i], safe, &fr[k])) {
      if (flags & NSP_PYSITE_BORROWED) break; /* changed under us: keep what was read */
      continue;
    }
    file[k] = fr[k].file;
    func[k] = fr[k].func;
    line[k] = fr[k].line < 0 ? 0 : (uint64_t)fr[k].line;
    k++;
  }
  if (!k) return;
  /* The main thread's outermost frame is its script's <module> (or
   * runpy's, under -m): a borrowed stack that ends elsewhere short of the
   * depth was read while the frames changed, and is said to be cut. */
  if ((flags & NSP_PYSITE_BORROWED) && !(flags & NSP_PYSITE_TRUNCATED) && k == n && n < nsp_pysite_depth &&
      strcmp(func[k - 1], "<module>") != 0 && strcmp(func[k - 1], "_run_module_as_main") != 0)
    flags |= NSP_PYSITE_TRUNCATED;
  if ((flags & NSP_PYSITE_BORROWED) && k < n) flags |= NSP_PYSITE_TRUNCATED;
  struct nsp_rec_ext *x = nsp_site_frames_ext(k, file, line, func);
  if (!x) return;
  struct nsp_rec *r = nsp_ring_reserve();
  if (!r) {
    free(x);
    return;
  }
  r->kind = NSP_REC_PYSITE;
  nsp_rec_pysite_set_site(r, id);
  nsp_rec_pysite_set_flags(r, (uint16_t)flags);
  nsp_rec_pysite_set_tid(r, tid);
  r->ext = x;
  nsp_ring_commit(r);
}

/* The id of a site's key (0 none), making it when new. */
static uint32_t site_of(uint64_t key, const struct nsp_pysite_raw *raw, int n, int flags, uint32_t tid) {
  if (!key) key = 1;
  size_t i = (size_t)key & (NSP_PYSITE_SLOTS - 1);
  for (size_t probe = 0; probe < NSP_PYSITE_SLOTS; probe++, i = (i + 1) & (NSP_PYSITE_SLOTS - 1)) {
    uint64_t k = atomic_load_explicit(&nsp_pysites[i].key, memory_order_acquire);
    if (k == key) return atomic_load_explicit(&nsp_pysites[i].id, memory_order_acquire);
    if (k) continue;
    /* A miss: under the lock, look again and make it. */
    pthread_mutex_lock(&nsp_pysite_lock);
    uint32_t id = 0;
    for (;; probe++, i = (i + 1) & (NSP_PYSITE_SLOTS - 1)) {
      k = atomic_load_explicit(&nsp_pysites[i].key, memory_order_relaxed);
      if (k == key) {
        id = atomic_load_explicit(&nsp_pysites[i].id, memory_order_relaxed);
        break;
      }
      if (k) continue;
      if (nsp_npysites >= NSP_PYSITE_SLOTS / 4 * 3) {
        nsp_warn_once(&nsp_pysite_warned_full, "more than %d Python call sites: later ones are not recorded",
                      NSP_PYSITE_SLOTS / 4 * 3);
        break;
      }
      if ((flags & NSP_PYSITE_BORROWED) && nsp_nborrowed >= NSP_PYSITE_MAX_BORROWED) {
        /* A main thread that runs on while native threads call (an XLA
         * executor beside it) would make a new site at every call and
         * starve the sites of the program's own calls. */
        nsp_warn_once(&nsp_pysite_warned_borrowed,
                      "more than %d Python stacks borrowed from the main thread for calls from threads "
                      "without Python (it keeps running while they call): such calls get no Python call "
                      "site from now on", NSP_PYSITE_MAX_BORROWED);
        break;
      }
      if (flags & NSP_PYSITE_BORROWED) nsp_nborrowed++;
      id = ++nsp_npysites;
      /* The record goes in the ring before any call can name the id. */
      record_pysite(id, raw, n, flags, tid);
      /* id first: a reader that sees the key sees its id. */
      atomic_store_explicit(&nsp_pysites[i].id, id, memory_order_release);
      atomic_store_explicit(&nsp_pysites[i].key, key, memory_order_release);
      break;
    }
    pthread_mutex_unlock(&nsp_pysite_lock);
    return id;
  }
  return 0;
}

/* The oldest thread state of the main interpreter (the main Python
 * thread's, normally), read safely; 0 none. */
static uintptr_t main_tstate(void) {
  void *interp = nsp_py_main_interp();
  if (!interp) return 0;
  uintptr_t ts = (uintptr_t)nsp_py_thread_head(interp), next;
  for (int i = 0; ts && i < 4096; i++) {
    if (nsp_pysite_read_safe(ts + nsp_pysite_L.ts_next, &next, sizeof next)) return 0;
    if (!next) return ts;
    ts = next;
  }
  return 0;
}

static uint32_t my_tid(void) {
  if (NSP_UNLIKELY(!nsp_pysite_tid)) nsp_pysite_tid = (uint32_t)syscall(SYS_gettid);
  return nsp_pysite_tid;
}

uint32_t nsp_pysite_current(void) {
  int on = atomic_load_explicit(&nsp_pysite_on, memory_order_relaxed);
  if (NSP_LIKELY(on == 0)) return 0;
  if (NSP_UNLIKELY(on < 0)) {
    init_pysites();
    if (!atomic_load(&nsp_pysite_on)) return 0;
  }
  struct nsp_pysite_raw raw[64];
  int trunc = 0, flags = 0;
  uintptr_t ts = (uintptr_t)nsp_py_tstate();
  uint32_t tid = my_tid();
  int n = ts ? nsp_pysite_read_walk(&nsp_pysite_L, ts, 0, raw, nsp_pysite_depth, &trunc) : 0;
  if (n > 0 && NSP_UNLIKELY(!__atomic_load_n(&nsp_pysite_L.trusted, __ATOMIC_RELAXED)) &&
      atomic_fetch_add_explicit(&nsp_pysite_checked, 1, memory_order_relaxed) + 1 >= NSP_PYSITE_CHECKED_WALKS)
    __atomic_store_n(&nsp_pysite_L.trusted, 1, __ATOMIC_RELAXED);
  if (n == 0 && nsp_pysite_borrow) {
    /* No Python on this thread: the main Python thread's stack, read with
     * system calls (it runs meanwhile).  Microseconds, on threads that
     * run no Python. */
    uintptr_t m = main_tstate();
    if (!m || m == ts) return 0;
    n = nsp_pysite_read_walk(&nsp_pysite_L, m, 1, raw, nsp_pysite_depth, &trunc);
    flags = NSP_PYSITE_BORROWED;
    tid = 0;
    if (nsp_pysite_L.ts_native_tid >= 0)
      nsp_pysite_read_safe(m + (uint32_t)nsp_pysite_L.ts_native_tid, &tid, sizeof tid);
    if (!tid) tid = (uint32_t)getpid(); /* 3.10: the main thread's id is the process's */
    if (n < 0) return 0; /* torn while we read: no site, no warning */
  }
  if (n < 0) {
    nsp_warn_once(&nsp_pysite_warned_check,
                  "a Python frame failed its checks (its code object is not one): that call has no Python "
                  "call site");
    return 0;
  }
  if (n == 0) return 0;
  if (trunc) flags |= NSP_PYSITE_TRUNCATED;
  /* One multiply per frame on the chain; the words of a frame are mixed
   * apart from it, so the frames' work overlaps. */
  /* Not the thread: one site per distinct stack, whichever thread (a
   * pool of short-lived threads calling from one line is one site). */
  uint64_t key = mix(0x6e7370707973ull, (uint64_t)flags << 32) ^ (uint64_t)n;
  for (int i = 0; i < n; i++) {
    uint64_t w = (raw[i].code * 0xff51afd7ed558ccdull) ^ (uint64_t)(uint32_t)raw[i].lasti;
    key = (key ^ w) * 0x9e3779b97f4a7c15ull;
  }
  key ^= key >> 29;
  return site_of(key, raw, n, flags, tid);
}

int nsp_pysite_enabled(void) {
  if (atomic_load(&nsp_pysite_on) < 0) init_pysites();
  return atomic_load(&nsp_pysite_on);
}

void nsp_pysite_atfork(int phase) {
  if (phase == 0) {
    pthread_mutex_lock(&nsp_pysite_lock);
    return;
  }
  if (phase == 2) {
    /* The child's trace starts afresh: its sites are written again. */
    for (size_t i = 0; i < NSP_PYSITE_SLOTS; i++) atomic_store_explicit(&nsp_pysites[i].key, 0, memory_order_relaxed);
    nsp_pysite_tid = 0;
    nsp_npysites = nsp_nborrowed = 0;
  }
  pthread_mutex_unlock(&nsp_pysite_lock);
}
