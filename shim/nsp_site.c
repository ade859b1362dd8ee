/* nsp_site.c - where in the program an NCCL call came from.
 *
 * For each recorded collective and send/recv the shim takes the return
 * addresses of the calling stack (libunwind's unw_backtrace, with its
 * per-thread cache), hashes them, and looks the hash up in a table of
 * known call sites.  A new site is resolved once -- module path, offset in
 * the module and symbol name, via dladdr -- and written as a CALLSITE
 * record; calls carry its id.  On a non-success result a deeper stack is
 * taken and recorded as its own site (NSP_SITE_FULL).
 *
 * Modules.  Before the first CALLSITE record whose frames name a module,
 * a MODULE record gives its path and GNU build-id (read from its notes in
 * memory, nsp_buildid.c: no file I/O), once per module path, so that the
 * analyzer can find the module's debug information later.  The program
 * itself is named by /proc/self/exe's target (read once, at the first
 * call), not by dladdr's argv[0], which is relative to a directory the
 * analyzer does not know; SIGNAL frames name it so too.  The modules of a
 * SIGNAL record's frames get their MODULE records when the writer thread
 * takes the record (nsp_site_note_frames), if it still runs then; frames
 * of a module no record names are shown as module+offset.
 *
 * Settings: NCCLSPY_CALLSITES=0 turns call sites off (their cost per call
 * is in bench/README.md).  Built without libunwind, call sites are off and
 * the PROCESS record's tracking bits say so. */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nsp_config.h"
#include "nsp_hash.h"
#include "nsp_setting.h"
#include "nsp_shim.h"

struct nsp_rec_ext *nsp_site_frames_ext(int n, const char *const *mod, const uint64_t *off, const char *const *sym) {
  size_t bytes = sizeof(struct nsp_rec_ext) + (size_t)n * (2 * sizeof(char *) + sizeof(uint64_t));
  for (int i = 0; i < n; i++)
    bytes += (mod[i] ? strnlen(mod[i], 1024) : 0) + 1 + (sym[i] ? strnlen(sym[i], 1024) : 0) + 1;
  struct nsp_rec_ext *x = calloc(1, bytes);
  if (!x) return NULL;
  const char **m = (const char **)(x + 1);
  const char **y = m + n;
  uint64_t *o = (uint64_t *)(y + n);
  char *s = (char *)(o + n);
  for (int i = 0; i < n; i++) {
    size_t ml = mod[i] ? strnlen(mod[i], 1024) : 0, sl = sym[i] ? strnlen(sym[i], 1024) : 0;
    m[i] = s;
    if (ml) memcpy(s, mod[i], ml);
    s[ml] = 0;
    s += ml + 1;
    y[i] = s;
    if (sl) memcpy(s, sym[i], sl);
    s[sl] = 0;
    s += sl + 1;
    o[i] = off[i];
  }
  x->nframes = (uint32_t)n;
  x->frame_module = m;
  x->frame_symbol = y;
  x->frame_offset = o;
  return x;
}

#if NSP_HAVE_LIBUNWIND
#define UNW_LOCAL_ONLY
#include <libunwind.h>

static int nsp_site_depth = 6; /* frames that key a site (NCCLSPY_CALLSITE_DEPTH) */
#define NSP_SITE_FULL_DEPTH 64
_Static_assert(NSP_SITE_DEPTH_MAX <= NSP_SITE_FULL_DEPTH, "a site's frames fit the stack buffers");
#define NSP_SITE_SLOTS 8192 /* power of two; at most 6144 sites kept */

static struct {
  _Atomic uint64_t key;
  _Atomic uint32_t id;
} nsp_sites[NSP_SITE_SLOTS];
static pthread_mutex_t nsp_site_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t nsp_nsites;
static int nsp_sites_on = -1;
static uintptr_t nsp_self_lo, nsp_self_hi; /* the shim's own code: skipped */
static uintptr_t nsp_exe_lo, nsp_exe_hi;   /* the program's loaded segments */
static char nsp_exe_path[1024];            /* /proc/self/exe's target; "" unknown */

/* Module paths whose MODULE record was written (FNV-1a hashes; 0 free).
 * Full: later modules get none, and their frames print as offsets. */
#define NSP_SITE_MODULES 2048 /* power of two; at most 1536 modules */
static uint64_t nsp_site_mods[NSP_SITE_MODULES];
static unsigned nsp_site_nmods;
static pthread_mutex_t nsp_site_mod_lock = PTHREAD_MUTEX_INITIALIZER; /* after nsp_site_lock */

static const char nsp_site_marker = 0;

/* [lo, hi): from the object's first to its last loaded segment. */
static void object_range(const struct dl_phdr_info *info, uintptr_t *lo, uintptr_t *hi) {
  *lo = UINTPTR_MAX;
  *hi = 0;
  for (int j = 0; j < info->dlpi_phnum; j++) {
    const ElfW(Phdr) *q = &info->dlpi_phdr[j];
    if (q->p_type != PT_LOAD) continue;
    uintptr_t a = info->dlpi_addr + q->p_vaddr, b = a + q->p_memsz;
    if (a < *lo) *lo = a;
    if (b > *hi) *hi = b;
  }
}

static int find_self(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  int *first = arg;
  if (*first) { /* the main program comes first */
    *first = 0;
    object_range(info, &nsp_exe_lo, &nsp_exe_hi);
  }
  uintptr_t me = (uintptr_t)&nsp_site_marker;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD) continue;
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
    if (me < lo || me >= hi) continue;
    object_range(info, &nsp_self_lo, &nsp_self_hi);
    return 1;
  }
  return 0;
}

static void init_sites(void) {
  pthread_mutex_lock(&nsp_site_lock);
  if (nsp_sites_on < 0) {
    nsp_sites_on = (int)nsp_setting(NSP_SET_CALLSITES);
    nsp_site_depth = (int)nsp_setting(NSP_SET_CALLSITE_DEPTH);
    int first = 1;
    dl_iterate_phdr(find_self, &first);
    ssize_t n = readlink("/proc/self/exe", nsp_exe_path, sizeof nsp_exe_path - 1);
    nsp_exe_path[n > 0 ? n : 0] = 0;
    /* Global, not per-thread: a per-thread cache is freed by a thread-exit
     * destructor that ThreadSanitizer builds crash in; we unwind only on
     * one call in 64 per call site, so its lock costs nothing. */
    unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_GLOBAL);
  }
  pthread_mutex_unlock(&nsp_site_lock);
}

/* Return addresses of the caller's stack, the shim's own frames left out. */
static int take_stack(void **ips, int max) {
  void *raw[NSP_SITE_FULL_DEPTH + 8];
  int n = unw_backtrace(raw, max + 8 < (int)(sizeof raw / sizeof *raw) ? max + 8 : (int)(sizeof raw / sizeof *raw));
  int k = 0, i = 0;
  while (i < n && (uintptr_t)raw[i] >= nsp_self_lo && (uintptr_t)raw[i] < nsp_self_hi) i++;
  for (; i < n && k < max; i++) ips[k++] = raw[i];
  return k;
}

/* The loaded object that holds addr (addr != 0), or whose path is path
 * (the program: nsp_exe_path): its build-id. */
struct mod_find {
  uintptr_t addr;
  const char *path;
  char hex[2 * 64 + 1];
  int found;
};

static int find_module(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  struct mod_find *f = arg;
  uintptr_t lo, hi;
  object_range(info, &lo, &hi);
  const char *name = info->dlpi_name ? info->dlpi_name : "";
  int is_exe = lo == nsp_exe_lo && hi == nsp_exe_hi;
  if (f->addr ? f->addr < lo || f->addr >= hi : strcmp(f->path, is_exe ? nsp_exe_path : name)) return 0;
  nsp_buildid_of(info, f->hex, sizeof f->hex);
  f->found = 1;
  return 1;
}

/* Writes a MODULE record for the module named path (holding addr, or 0:
 * found by its path) unless one was written.  Takes nsp_site_mod_lock;
 * without wait when trylock (the writer thread), skipping the module then. */
static void note_module(const char *path, uintptr_t addr, int trylock) {
  if (!path || !*path) return;
  if (trylock ? pthread_mutex_trylock(&nsp_site_mod_lock) : pthread_mutex_lock(&nsp_site_mod_lock)) return;
  size_t len = strnlen(path, 1024);
  uint64_t key = nsp_fnv1a(NSP_FNV_INIT, path, len);
  if (!key) key = 1;
  size_t i = (size_t)key & (NSP_SITE_MODULES - 1);
  while (nsp_site_mods[i] && nsp_site_mods[i] != key) i = (i + 1) & (NSP_SITE_MODULES - 1);
  if (nsp_site_mods[i] || nsp_site_nmods >= NSP_SITE_MODULES / 4 * 3) goto out; /* written, or full */
  struct mod_find f = {.addr = addr, .path = path};
  dl_iterate_phdr(find_module, &f);
  if (!f.found) goto out; /* unloaded meanwhile: no build-id to give */
  size_t hl = strlen(f.hex);
  struct nsp_rec_ext *x = calloc(1, sizeof *x + len + 1 + hl + 1);
  if (!x) goto out;
  char *s = (char *)(x + 1);
  memcpy(s, path, len);
  memcpy(s + len + 1, f.hex, hl);
  x->module_path = s;
  x->build_id = s + len + 1;
  struct nsp_rec *r = nsp_ring_reserve();
  if (!r) { /* the ring is full: try again at the next site */
    free(x);
    goto out;
  }
  r->kind = NSP_REC_MODULE;
  r->ext = x;
  nsp_ring_commit(r);
  nsp_site_mods[i] = key;
  nsp_site_nmods++;
out:
  pthread_mutex_unlock(&nsp_site_mod_lock);
}

void nsp_site_note_frames(const struct nsp_rec_ext *x) {
  if (nsp_sites_on <= 0 || !x) return;
  for (uint32_t i = 0; i < x->nframes; i++) note_module(x->frame_module[i], 0, 1);
}

/* Writes a CALLSITE record for a new site: frames resolved now, while the
 * modules are loaded. */
static void record_site(uint32_t id, void **ips, int n, int full) {
  Dl_info info[NSP_SITE_FULL_DEPTH];
  const char *mod[NSP_SITE_FULL_DEPTH], *sym[NSP_SITE_FULL_DEPTH];
  uint64_t off[NSP_SITE_FULL_DEPTH];
  for (int i = 0; i < n; i++) {
    /* A return address points after the call: look up the call itself. */
    uintptr_t at = (uintptr_t)ips[i] - 1;
    if (!dladdr((void *)at, &info[i])) memset(&info[i], 0, sizeof info[i]);
    if (info[i].dli_fname && nsp_exe_path[0] && at >= nsp_exe_lo && at < nsp_exe_hi) info[i].dli_fname = nsp_exe_path;
    if (info[i].dli_fbase) note_module(info[i].dli_fname, at, 0);
    mod[i] = info[i].dli_fname;
    sym[i] = info[i].dli_sname;
    off[i] = info[i].dli_fbase ? (uint64_t)((uintptr_t)ips[i] - (uintptr_t)info[i].dli_fbase) : (uint64_t)(uintptr_t)ips[i];
  }
  struct nsp_rec_ext *x = nsp_site_frames_ext(n, mod, off, sym);
  if (!x) return;
  struct nsp_rec *r = nsp_ring_reserve();
  if (!r) {
    free(x);
    return;
  }
  r->kind = NSP_REC_CALLSITE;
  r->site = id;
  r->flags = full ? NSP_SITE_FULL : 0;
  r->ext = x;
  nsp_ring_commit(r);
}

/* Called with nsp_site_lock held. */
static uint32_t site_of(void **ips, int n, int full) {
  uint64_t key = nsp_fnv1a(NSP_FNV_INIT, ips, (size_t)n * sizeof *ips);
  key = nsp_fnv1a(key, &full, sizeof full);
  if (!key) key = 1;
  size_t i = (size_t)key & (NSP_SITE_SLOTS - 1);
  uint32_t id = 0;
  for (size_t probe = 0; probe < NSP_SITE_SLOTS; probe++, i = (i + 1) & (NSP_SITE_SLOTS - 1)) {
    uint64_t k = atomic_load_explicit(&nsp_sites[i].key, memory_order_relaxed);
    if (k == key) {
      id = atomic_load_explicit(&nsp_sites[i].id, memory_order_relaxed);
      break;
    }
    if (!k) {
      if (nsp_nsites >= NSP_SITE_SLOTS / 4 * 3) break; /* full: no site */
      id = ++nsp_nsites;
      /* The record goes in the ring before any call can name the id. */
      record_site(id, ips, n, full);
      atomic_store_explicit(&nsp_sites[i].key, key, memory_order_release);
      atomic_store_explicit(&nsp_sites[i].id, id, memory_order_release);
      break;
    }
  }
  return id;
}

/* Taking a stack costs about 180 ns (unw_backtrace's set-up, whatever the
 * depth), more than the rest of a wrapper.  So each thread remembers the
 * site last seen behind each immediate caller (the return address into
 * the program, which costs nothing to get) and takes the stack again only
 * on every 64th call through that caller: a new deeper path behind a known
 * caller is found within 64 calls, and most calls pay a few ns. */
#define NSP_SITE_CACHE 8
#define NSP_SITE_RESAMPLE 63 /* mask: one call in 64 */
static NSP_TLS struct {
  void *caller;
  uint32_t site, calls;
} nsp_site_cache[NSP_SITE_CACHE];

uint32_t nsp_site_current(int failed, void *caller) {
  if (NSP_UNLIKELY(nsp_sites_on < 0)) init_sites();
  if (!nsp_sites_on) return 0;
  unsigned slot = (unsigned)(((uintptr_t)caller >> 4) % NSP_SITE_CACHE);
  if (!failed && caller && nsp_site_cache[slot].caller == caller &&
      (++nsp_site_cache[slot].calls & NSP_SITE_RESAMPLE))
    return nsp_site_cache[slot].site;
  void *ips[NSP_SITE_FULL_DEPTH];
  /* Unwinding happens under the lock that fork's prepare handler takes,
   * so no thread is inside libunwind (whose cache lock would stay taken
   * in the child) when the process forks.  One call in 64 comes here. */
  pthread_mutex_lock(&nsp_site_lock);
  int n = take_stack(ips, failed ? NSP_SITE_FULL_DEPTH : nsp_site_depth);
  uint32_t site = n > 0 ? site_of(ips, n, failed) : 0;
  pthread_mutex_unlock(&nsp_site_lock);
  if (!failed && caller) {
    nsp_site_cache[slot].caller = caller;
    nsp_site_cache[slot].site = site;
  }
  return site;
}

int nsp_site_enabled(void) {
  if (nsp_sites_on < 0) init_sites();
  return nsp_sites_on;
}

void nsp_site_atfork(int phase) {
  if (phase == 0) {
    pthread_mutex_lock(&nsp_site_lock);
    pthread_mutex_lock(&nsp_site_mod_lock);
  } else {
    pthread_mutex_unlock(&nsp_site_mod_lock);
    pthread_mutex_unlock(&nsp_site_lock);
  }
}

#else /* no libunwind at build time */

uint32_t nsp_site_current(int failed, void *caller) {
  (void)failed;
  (void)caller;
  return 0;
}

int nsp_site_enabled(void) { return 0; }

void nsp_site_atfork(int phase) { (void)phase; }

void nsp_site_note_frames(const struct nsp_rec_ext *x) { (void)x; }

#endif
