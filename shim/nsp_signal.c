/* nsp_signal.c - a record of the fatal signal that ends a process.
 *
 * At the first NCCL call (nsp_writer_start, once the ring exists) the shim
 * installs one handler for SIGSEGV, SIGBUS, SIGABRT, SIGILL and SIGFPE
 * (SA_SIGINFO | SA_ONSTACK | SA_NODEFER), keeping the actions it replaces.
 * NCCLSPY_SIGNALS=0 installs nothing.  When one of them arrives the
 * handler writes a SIGNAL record (include/ncclspy/trace.h) into the crash
 * ring, with the receiving thread's stack, then hands the signal on, so
 * that the process ends exactly as it would without the shim.
 *
 * Async-signal safety.  The handler allocates nothing, takes no lock,
 * uses no stdio and no dladdr:
 *  - The stack comes from libunwind's local unwinder started on the
 *    signal's own context: unw_init_local2(UNW_INIT_SIGNAL_FRAME),
 *    unw_step, unw_get_reg, which libunwind 1.6 documents as safe in a
 *    signal handler (unw_backtrace is not documented so, and is not used).
 *    Without libunwind at build time the record holds only the interrupted
 *    instruction, read from the context.
 *  - Addresses become module + offset + symbol through a table of loaded
 *    modules built outside the handler (dl_iterate_phdr at the first call,
 *    rebuilt by the writer thread when objects were loaded or unloaded),
 *    whose dynamic symbol tables (the names dladdr would give) are read
 *    from memory: no file is opened in the handler, so a hung network
 *    filesystem cannot hang a dying process.
 *  - The record goes into the ring with the ring's lock-free reserve and
 *    commit.  Its frames live in one of NSP_SIG_AREAS static areas, taken
 *    with a compare-and-swap and given back by the writer once the record
 *    is in a frame; in the ring file its blob goes into blob slots kept
 *    for signal records (nsp_files_ring_sig_blob), never through the blob
 *    allocator's lock.  Encoding is nsp_encode_signal, which only writes
 *    into a fixed buffer.
 *  - A fault inside the handler itself (a stack too damaged to unwind, a
 *    broken table) comes back to the same handler (SA_NODEFER, and the
 *    fault signals are unblocked while the record is written, in case a
 *    wrapper such as a sanitizer's runs the handler with all blocked: a
 *    blocked fault would kill the process at once), which sees
 *    the thread's "writing" flag and siglongjmps back into the record in
 *    progress: what was gathered so far is kept (NSP_SIG_FAULTED) and the
 *    original signal is handed on.  It never loops: each stage runs once.
 *  - A process writes at most NSP_SIG_MAX_RECORDS signal records, so a
 *    program whose own handler makes faults routine (a garbage collector's
 *    write barrier) pays for the stack a few times only.
 *
 * Handing on.  With the program's previous handler a function, the
 * handler calls it as the kernel would have (its sa_mask and the signal
 * blocked unless SA_NODEFER, SA_RESETHAND honoured, SA_SIGINFO arguments),
 * and returns when it returns.  With SIG_DFL (or SIG_IGN for a fault,
 * which the kernel turns into SIG_DFL) it restores that action, queues
 * the same signal with the same siginfo to its own thread
 * (rt_tgsigqueueinfo, blocked until the handler returns) and returns: on
 * return the signal is delivered with the default action, at the
 * interrupted instruction, so the exit status, the core dump and what a
 * parent sees are those of the original signal.  A signal the program
 * ignores (SIG_IGN) and that was sent to it is ignored, unrecorded. */
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <setjmp.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "nsp_config.h"
#include "nsp_setting.h"
#include "nsp_shim.h"

#if NSP_HAVE_LIBUNWIND
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#endif

#if __ELF_NATIVE_CLASS == 64
#define NSP_ST_TYPE(i) ELF64_ST_TYPE(i)
#else
#define NSP_ST_TYPE(i) ELF32_ST_TYPE(i)
#endif

#define NSP_NSIG 5
static const int nsp_sig_list[NSP_NSIG] = {SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGFPE};

#define NSP_SIG_FRAMES 64        /* frames kept per record */
#define NSP_SIG_STRINGS 12288    /* bytes of module paths and symbols per record */
#define NSP_SIG_ENC 12288        /* the encoded record (at most a signal blob) */
#define NSP_SIG_PATH_MAX 512     /* bytes of one module path kept */
#define NSP_SIG_SYM_MAX 256      /* bytes of one symbol kept */
#define NSP_SIG_MAX_RECORDS 8    /* records per process */
#define NSP_MOD_MAX 8192         /* modules in the table */

/* ---- the table of loaded modules (built outside the handler) ---------- */

struct nsp_mod {
  uintptr_t lo, hi;      /* the object's loaded segments, [lo, hi) */
  uintptr_t bias;        /* dlpi_addr: symbol values are relative to it */
  uintptr_t base;        /* where offsets count from (dladdr's dli_fbase) */
  const ElfW(Sym) *sym;  /* its dynamic symbol table in memory; NULL none */
  const char *str;       /* that table's strings */
  size_t strsz;
  size_t nsym;
  size_t path;           /* offset of its path in the table's strings */
};

struct nsp_modtab {
  size_t n;
  struct nsp_mod *mods;  /* by lo */
  char *paths;
  size_t paths_len, paths_cap;
  unsigned long long adds, subs; /* dl_iterate_phdr's counters when built */
};

static _Atomic(struct nsp_modtab *) nsp_modtab;
static struct nsp_modtab *nsp_modtab_retired; /* replaced; freed at a later rebuild */
/* Handlers between their start and their handing on: the table they may
 * read is not freed meanwhile. */
static _Atomic int nsp_sig_inflight;

static void modtab_free(struct nsp_modtab *t) {
  if (!t) return;
  free(t->mods);
  free(t->paths);
  free(t);
}

/* Where a dynamic-section pointer points: glibc relocates most objects'
 * entries in place, not those of read-only sections (the vDSO). */
static uintptr_t dyn_ptr(const struct nsp_mod *m, uintptr_t v) {
  if (v < m->lo) v += m->bias;
  return v >= m->lo && v < m->hi ? v : 0;
}

static int in_mod(const struct nsp_mod *m, uintptr_t p, size_t len) {
  return p >= m->lo && p <= m->hi && len <= m->hi - p;
}

/* Symbols of a DT_GNU_HASH table: one past the highest index its chains reach. */
static size_t gnu_hash_nsyms(const struct nsp_mod *m, uintptr_t h) {
  if (!in_mod(m, h, 16)) return 0;
  const uint32_t *w = (const uint32_t *)h;
  uint32_t nbuckets = w[0], symoffset = w[1], bloom = w[2];
  uintptr_t buckets = h + 16 + (uintptr_t)bloom * sizeof(ElfW(Addr));
  if (!in_mod(m, buckets, (size_t)nbuckets * 4)) return 0;
  const uint32_t *b = (const uint32_t *)buckets;
  uint32_t max = 0;
  for (uint32_t i = 0; i < nbuckets; i++)
    if (b[i] > max) max = b[i];
  if (max < symoffset) return symoffset;
  uintptr_t chain = buckets + (uintptr_t)nbuckets * 4;
  for (;;) {
    uintptr_t c = chain + (uintptr_t)(max - symoffset) * 4;
    if (!in_mod(m, c, 4)) return 0;
    if (*(const uint32_t *)c & 1) return (size_t)max + 1;
    max++;
  }
}

/* The dynamic symbol table of a module, from its PT_DYNAMIC segment. */
static void find_dynsym(struct nsp_mod *m, const ElfW(Dyn) *dyn) {
  uintptr_t symtab = 0, strtab = 0, hash = 0, gnu = 0;
  size_t strsz = 0, syment = sizeof(ElfW(Sym));
  for (const ElfW(Dyn) *d = dyn; in_mod(m, (uintptr_t)d, sizeof *d) && d->d_tag != DT_NULL; d++) {
    switch (d->d_tag) {
      case DT_SYMTAB: symtab = dyn_ptr(m, d->d_un.d_ptr); break;
      case DT_STRTAB: strtab = dyn_ptr(m, d->d_un.d_ptr); break;
      case DT_STRSZ: strsz = d->d_un.d_val; break;
      case DT_SYMENT: syment = d->d_un.d_val; break;
      case DT_HASH: hash = dyn_ptr(m, d->d_un.d_ptr); break;
      case DT_GNU_HASH: gnu = dyn_ptr(m, d->d_un.d_ptr); break;
      default: break;
    }
  }
  if (!symtab || !strtab || !strsz || syment != sizeof(ElfW(Sym)) || !in_mod(m, strtab, strsz)) return;
  size_t nsym = 0;
  if (hash && in_mod(m, hash, 8)) nsym = ((const uint32_t *)hash)[1];
  else if (gnu) nsym = gnu_hash_nsyms(m, gnu);
  if (!nsym || !in_mod(m, symtab, nsym * sizeof(ElfW(Sym)))) return;
  m->sym = (const ElfW(Sym) *)symtab;
  m->str = (const char *)strtab;
  m->strsz = strsz;
  m->nsym = nsym;
}

static int add_path(struct nsp_modtab *t, const char *s, size_t *off) {
  size_t n = strnlen(s, NSP_SIG_PATH_MAX - 1);
  if (t->paths_cap - t->paths_len < n + 1) {
    size_t cap = t->paths_cap ? t->paths_cap * 2 : 16384;
    while (cap - t->paths_len < n + 1) cap *= 2;
    char *p = realloc(t->paths, cap);
    if (!p) return -1;
    t->paths = p;
    t->paths_cap = cap;
  }
  *off = t->paths_len;
  memcpy(t->paths + t->paths_len, s, n);
  t->paths[t->paths_len + n] = 0;
  t->paths_len += n + 1;
  return 0;
}

struct build {
  struct nsp_modtab *t;
  size_t cap;
  int oom;
  char exe[NSP_SIG_PATH_MAX];
};

static int build_cb(struct dl_phdr_info *info, size_t size, void *arg) {
  struct build *b = arg;
  struct nsp_modtab *t = b->t;
  if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs && !t->n) {
    t->adds = info->dlpi_adds;
    t->subs = info->dlpi_subs;
  }
  if (t->n >= NSP_MOD_MAX) return 1;
  struct nsp_mod m;
  memset(&m, 0, sizeof m);
  m.lo = UINTPTR_MAX;
  uintptr_t min_vaddr = UINTPTR_MAX;
  const ElfW(Dyn) *dyn = NULL;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type == PT_DYNAMIC) dyn = (const ElfW(Dyn) *)(info->dlpi_addr + ph->p_vaddr);
    if (ph->p_type != PT_LOAD) continue;
    uintptr_t a = info->dlpi_addr + ph->p_vaddr, e = a + ph->p_memsz;
    if (a < m.lo) m.lo = a;
    if (e > m.hi) m.hi = e;
    if (ph->p_vaddr < min_vaddr) min_vaddr = ph->p_vaddr;
  }
  if (m.lo >= m.hi) return 0;
  m.bias = info->dlpi_addr;
  /* dladdr's dli_fbase, so offsets match those of CALLSITE records: the
   * start of the first loaded page. */
  m.base = info->dlpi_addr + (min_vaddr & ~(uintptr_t)4095);
  if (dyn) find_dynsym(&m, dyn);
  /* The main program has no name here. */
  const char *name = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : t->n == 0 ? b->exe : "";
  if (add_path(t, name, &m.path) < 0) {
    b->oom = 1;
    return 1;
  }
  if (t->n == b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 256;
    struct nsp_mod *v = realloc(t->mods, cap * sizeof *v);
    if (!v) {
      b->oom = 1;
      return 1;
    }
    t->mods = v;
    b->cap = cap;
  }
  t->mods[t->n++] = m;
  return 0;
}

static int cmp_mod(const void *pa, const void *pb) {
  const struct nsp_mod *a = pa, *b = pb;
  return a->lo < b->lo ? -1 : a->lo > b->lo;
}

static struct nsp_modtab *modtab_build(void) {
  struct build b;
  memset(&b, 0, sizeof b);
  b.t = calloc(1, sizeof *b.t);
  if (!b.t) return NULL;
  ssize_t n = readlink("/proc/self/exe", b.exe, sizeof b.exe - 1);
  b.exe[n > 0 ? n : 0] = 0;
  dl_iterate_phdr(build_cb, &b);
  if (b.oom || !b.t->n) {
    modtab_free(b.t);
    return NULL;
  }
  qsort(b.t->mods, b.t->n, sizeof *b.t->mods, cmp_mod);
  return b.t;
}

static int counters_cb(struct dl_phdr_info *info, size_t size, void *arg) {
  unsigned long long *v = arg;
  if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
    v[0] = info->dlpi_adds;
    v[1] = info->dlpi_subs;
  }
  return 1; /* the first object is enough */
}

static _Atomic int nsp_sig_on; /* handlers installed in this process image */

void nsp_signal_refresh(void) {
  if (!atomic_load_explicit(&nsp_sig_on, memory_order_acquire)) return;
  struct nsp_modtab *cur = atomic_load(&nsp_modtab);
  unsigned long long v[2] = {0, 0};
  dl_iterate_phdr(counters_cb, v);
  if (cur && v[0] == cur->adds && v[1] == cur->subs) return;
  if (atomic_load(&nsp_sig_inflight)) return; /* a process that is dying: leave it */
  struct nsp_modtab *t = modtab_build();
  if (!t) return;
  cur = atomic_exchange(&nsp_modtab, t);
  /* The table replaced last time is free unless a handler that started
   * before that replacement still runs (then it is left, once). */
  if (!atomic_load(&nsp_sig_inflight)) modtab_free(nsp_modtab_retired);
  nsp_modtab_retired = cur;
}

/* The module holding addr (handler side: reads only). */
static const struct nsp_mod *mod_of(const struct nsp_modtab *t, uintptr_t addr) {
  size_t lo = 0, hi = t->n;
  while (lo < hi) { /* the first module with lo > addr */
    size_t mid = lo + (hi - lo) / 2;
    if (t->mods[mid].lo <= addr) lo = mid + 1;
    else hi = mid;
  }
  for (size_t i = lo; i-- > 0;) {
    if (addr < t->mods[i].hi) return &t->mods[i];
    if (lo - i > 4) break; /* modules do not nest deeper than this */
  }
  return NULL;
}

/* The exported symbol covering addr, as dladdr picks it: the one with
 * the highest value whose [value, value + size) holds addr (or whose
 * value is addr, size 0).  NULL when none. */
static const char *sym_of(const struct nsp_mod *m, uintptr_t addr) {
  if (!m->sym || addr < m->bias) return NULL;
  uintptr_t rel = addr - m->bias;
  const ElfW(Sym) *best = NULL;
  for (size_t i = 0; i < m->nsym; i++) {
    const ElfW(Sym) *s = &m->sym[i];
    if (s->st_shndx == SHN_UNDEF || s->st_shndx == SHN_ABS || !s->st_name || s->st_name >= m->strsz) continue;
    int type = NSP_ST_TYPE(s->st_info);
    if (type == STT_TLS || type == STT_SECTION || type == STT_FILE) continue;
    if (rel < s->st_value) continue;
    if (s->st_size ? rel - s->st_value >= s->st_size : rel != s->st_value) continue;
    if (!best || s->st_value > best->st_value) best = s;
  }
  return best ? m->str + best->st_name : NULL;
}

/* ---- the records' memory ------------------------------------------------- */

struct nsp_sig_area {
  _Atomic int busy;           /* taken by a handler until the writer is done */
  struct nsp_rec_ext ext;     /* the record's frames, as nsp_encode reads them */
  const char *mod[NSP_SIG_FRAMES], *sym[NSP_SIG_FRAMES];
  uint64_t off[NSP_SIG_FRAMES];
  uintptr_t ip[NSP_SIG_FRAMES];
  uint32_t nip;               /* return addresses taken */
  uint32_t nres;              /* frames resolved (module, offset, symbol) */
  uint16_t flags;             /* NSP_SIG_* found while taking the stack */
  size_t used;                /* bytes of strings[] */
  char strings[NSP_SIG_STRINGS];
  uint8_t enc[NSP_SIG_ENC];
};
static struct nsp_sig_area nsp_sig_areas[NSP_SIG_AREAS];
static _Atomic int nsp_sig_records; /* records written by this process */
static struct sigaction nsp_sig_prev[NSP_NSIG];

/* Per thread: 1 while the handler writes a record (a signal then is its
 * own fault, and jumps back here). */
static NSP_TLS volatile sig_atomic_t nsp_sig_writing;
static NSP_TLS sigjmp_buf nsp_sig_jmp;

/* A copy of s (at most max - 1 bytes) in the area's strings; "" when full. */
static const char *area_str(struct nsp_sig_area *a, const char *s, size_t max) {
  if (!s || !*s) return "";
  size_t n = 0;
  while (n < max - 1 && s[n]) n++;
  if (NSP_SIG_STRINGS - a->used < n + 1) return "";
  char *d = a->strings + a->used;
  memcpy(d, s, n);
  d[n] = 0;
  a->used += n + 1;
  return d;
}

/* The interrupted instruction, from the context. */
static uintptr_t context_pc(const ucontext_t *uc) {
#if defined(__x86_64__)
  return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__i386__)
  return (uintptr_t)uc->uc_mcontext.gregs[REG_EIP];
#elif defined(__aarch64__)
  return (uintptr_t)uc->uc_mcontext.pc;
#else
  (void)uc;
  return 0;
#endif
}

/* Stage 1: the return addresses of the interrupted thread, innermost first. */
static void take_stack(struct nsp_sig_area *a, ucontext_t *uc) {
#if NSP_HAVE_LIBUNWIND
  unw_cursor_t cur;
  /* The signal's context is a unw_context_t on Linux (libunwind's
   * unw_init_local(3): "from the third argument in a sigaction handler"). */
  if (unw_init_local2(&cur, (unw_context_t *)uc, UNW_INIT_SIGNAL_FRAME) == 0) {
    for (;;) {
      unw_word_t ip = 0;
      if (unw_get_reg(&cur, UNW_REG_IP, &ip) < 0 || !ip) break;
      if (a->nip == NSP_SIG_FRAMES) {
        a->flags |= NSP_SIG_TRUNCATED;
        break;
      }
      a->ip[a->nip++] = (uintptr_t)ip;
      if (unw_step(&cur) <= 0) break;
    }
    if (a->nip) return;
  }
#endif
  uintptr_t pc = context_pc(uc);
  if (pc) a->ip[a->nip++] = pc;
  a->flags |= NSP_SIG_NO_STACK;
}

/* Stage 2: module, offset and symbol of each address. */
static void resolve(struct nsp_sig_area *a) {
  const struct nsp_modtab *t = atomic_load(&nsp_modtab);
  const struct nsp_mod *last = NULL;
  const char *last_path = "";
  for (uint32_t i = a->nres; i < a->nip; i++) {
    /* A return address is after its call: look up the call.  Frame 0 is
     * the interrupted instruction itself. */
    uintptr_t ip = a->ip[i], at = i ? ip - 1 : ip;
    const struct nsp_mod *m = t ? mod_of(t, at) : NULL;
    const char *sym = m ? sym_of(m, at) : NULL;
    if (m && m != last) {
      last_path = area_str(a, t->paths + m->path, NSP_SIG_PATH_MAX);
      last = m;
    }
    a->mod[i] = m ? last_path : "";
    a->off[i] = m ? (uint64_t)(ip - m->base) : (uint64_t)ip;
    a->sym[i] = area_str(a, sym, NSP_SIG_SYM_MAX);
    a->nres = i + 1;
  }
}

/* Stage 3: the frames as a record's ext, encoded into the signal blob.
 * Returns 0, or -1 when it could not be stored (then no ext). */
static int store(struct nsp_sig_area *a, unsigned ai, struct nsp_rec *r) {
  /* Frames resolution did not reach (it faulted): their raw address. */
  for (uint32_t i = a->nres; i < a->nip; i++) {
    a->mod[i] = a->sym[i] = "";
    a->off[i] = a->ip[i];
  }
  a->ext.nframes = a->nip;
  a->ext.frame_module = a->mod;
  a->ext.frame_symbol = a->sym;
  a->ext.frame_offset = a->off;
  r->flags |= a->flags;
  r->ext = &a->ext;
  if (!nsp_ring_durable()) return 0; /* in memory only: the writer reads ext */
  size_t cap = nsp_files_ring_sig_capacity(), len;
  if (cap > sizeof a->enc) cap = sizeof a->enc;
  /* Deep stacks with long names: keep the innermost frames that fit. */
  while (!(len = nsp_encode_signal(a->enc, cap, r))) {
    if (!a->ext.nframes) return -1;
    a->ext.nframes--;
    r->flags |= NSP_SIG_TRUNCATED;
  }
  return nsp_files_ring_sig_blob(ai, nsp_ring_pos(r), a->enc, len);
}

/* Writes the record.  Each stage runs at most once: a fault in one jumps
 * back to the sigsetjmp below and the record goes on with the next. */
static void record(int sig, const siginfo_t *si, ucontext_t *uc, uint16_t flags) {
  struct nsp_rec *volatile r = NULL;
  struct nsp_sig_area *volatile a = NULL;
  volatile unsigned ai = 0;
  volatile int stage = 0, faulted_in = -1;
  if (sigsetjmp(nsp_sig_jmp, 1)) {
    faulted_in = stage;
    stage = stage + 1;
  }
  if (stage == 0) {
    r = nsp_ring_reserve_quiet();
    if (!r) return; /* no ring, or it is full (counted) */
    r->kind = NSP_REC_SIGNAL;
    nsp_rec_signal_set_signo(r, (uint32_t)sig);
    nsp_rec_signal_set_code(r, si->si_code);
    nsp_rec_signal_set_tid(r, (uint64_t)syscall(SYS_gettid));
    nsp_rec_signal_set_t(r, nsp_now_ns());
    nsp_rec_signal_set_flags(r, flags);
    if (si->si_code <= 0) nsp_rec_signal_set_sender_pid(r, si->si_pid); /* kill, raise, abort: who sent it */
    else if (sig != SIGABRT) nsp_rec_signal_set_addr(r, (uint64_t)(uintptr_t)si->si_addr);
    for (unsigned i = 0; i < NSP_SIG_AREAS && !a; i++) {
      int free_ = 0;
      if (atomic_compare_exchange_strong(&nsp_sig_areas[i].busy, &free_, 1)) {
        ai = i;
        a = &nsp_sig_areas[i];
      }
    }
    if (a) {
      a->nip = a->nres = 0;
      a->flags = 0;
      a->used = 0;
    } else {
      r->flags |= NSP_SIG_NO_STACK; /* another thread's record holds both areas */
    }
    stage = 1;
  }
  if (faulted_in == 0) return; /* the ring itself faulted: nothing sensible to add */
  if ((faulted_in == 1 || faulted_in == 2) && a) a->flags |= NSP_SIG_FAULTED;
  if (stage == 1) {
    if (a) take_stack(a, uc);
    stage = 2;
  }
  if (stage == 2) {
    if (a) resolve(a);
    stage = 3;
  }
  if (stage == 3) {
    if (a && store(a, ai, r) < 0) faulted_in = 3;
    stage = 4;
  }
  if (faulted_in == 3 && a) {
    /* No blob: no frames, and the area is free again at once. */
    r->ext = NULL;
    r->flags |= NSP_SIG_NO_STACK;
    nsp_files_ring_sig_clear(ai);
    atomic_store(&a->busy, 0);
  }
  if (stage == 4) {
    stage = 5;
    nsp_ring_commit_quiet(r);
  }
}

/* Hands the signal to what the program had before the shim. */
static void hand_on(int sig, siginfo_t *si, ucontext_t *uc, const struct sigaction *prev) {
  void (*h)(int) = prev->sa_handler;
  int fault = si->si_code > 0;
  if (h == SIG_IGN && !fault) return; /* sent, and ignored: as without the shim */
  if (h == SIG_DFL || h == SIG_IGN) {
    /* The kernel turns an ignored fault into the default action too. */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    /* The same signal again, pending until this handler returns (the
     * return unblocks it), then delivered at the interrupted instruction
     * with the default action: same death, same core, same siginfo. */
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    pthread_sigmask(SIG_BLOCK, &one, NULL);
    pid_t pid = getpid(), tid = (pid_t)syscall(SYS_gettid);
    if (syscall(SYS_rt_tgsigqueueinfo, pid, tid, sig, si) != 0) syscall(SYS_tgkill, pid, tid, sig);
    sigdelset(&uc->uc_sigmask, sig);
    return;
  }
  /* A handler of the program's: called as the kernel would call it. */
  sigset_t mask = prev->sa_mask, old;
  if (!(prev->sa_flags & SA_NODEFER)) sigaddset(&mask, sig);
  pthread_sigmask(SIG_BLOCK, &mask, &old);
  if (prev->sa_flags & SA_RESETHAND) {
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
  }
  if (prev->sa_flags & SA_SIGINFO) prev->sa_sigaction(sig, si, uc);
  else h(sig);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void nsp_sig_handler(int sig, siginfo_t *si, void *ucv) {
  int saved_errno = errno;
  ucontext_t *uc = ucv;
  int idx = 0;
  while (idx < NSP_NSIG && nsp_sig_list[idx] != sig) idx++;
  if (idx == NSP_NSIG) return; /* never installed for it */
  const struct sigaction *prev = &nsp_sig_prev[idx];
  if (nsp_sig_writing) {
    /* A fault of the handler's own while it writes: back into the record
     * in progress, which skips what faulted.  A signal sent meanwhile
     * goes on as it would have without the shim. */
    if (si->si_code > 0) siglongjmp(nsp_sig_jmp, 1);
    hand_on(sig, si, uc, prev);
    errno = saved_errno;
    return;
  }
  void (*h)(int) = prev->sa_handler;
  int wanted = !(h == SIG_IGN && si->si_code <= 0); /* an ignored kill changes nothing */
  if (wanted && atomic_load(&nsp_sig_records) < NSP_SIG_MAX_RECORDS &&
      atomic_fetch_add(&nsp_sig_records, 1) < NSP_SIG_MAX_RECORDS) {
    atomic_fetch_add(&nsp_sig_inflight, 1);
    /* A fault of our own must reach this handler again, even when whoever
     * runs it (a sanitizer's wrapper, say) blocked every signal. */
    sigset_t faults, old;
    sigemptyset(&faults);
    for (int i = 0; i < NSP_NSIG; i++)
      if (nsp_sig_list[i] != SIGABRT) sigaddset(&faults, nsp_sig_list[i]);
    pthread_sigmask(SIG_UNBLOCK, &faults, &old);
    nsp_sig_writing = 1;
    record(sig, si, uc, h != SIG_DFL && h != SIG_IGN ? NSP_SIG_CHAINED : 0);
    nsp_sig_writing = 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    atomic_fetch_sub(&nsp_sig_inflight, 1);
  }
  errno = saved_errno;
  hand_on(sig, si, uc, prev);
  errno = saved_errno;
}

void nsp_signal_release(const struct nsp_rec *rec) {
  for (unsigned i = 0; i < NSP_SIG_AREAS; i++) {
    if (rec->ext != &nsp_sig_areas[i].ext) continue;
    nsp_files_ring_sig_clear(i);
    atomic_store(&nsp_sig_areas[i].busy, 0);
  }
}

void nsp_signal_atfork_child(void) {
  for (unsigned i = 0; i < NSP_SIG_AREAS; i++) atomic_store(&nsp_sig_areas[i].busy, 0);
  atomic_store(&nsp_sig_inflight, 0);
  atomic_store(&nsp_sig_records, 0);
}

static int nsp_sig_done; /* install ran in this process image */

static int wanted_by_env(void) { return (int)nsp_setting(NSP_SET_SIGNALS); }

int nsp_signal_enabled(void) {
  return nsp_sig_done ? atomic_load(&nsp_sig_on) : wanted_by_env();
}

void nsp_signal_install(void) {
  if (nsp_sig_done) return; /* a forked child keeps its parent's handler */
  nsp_sig_done = 1;
  if (!wanted_by_env()) return;
  /* Everything the handler reads exists before it can run. */
  atomic_store(&nsp_modtab, modtab_build());
  atomic_store_explicit(&nsp_sig_on, 1, memory_order_release);
  memset(nsp_sig_areas, 0, sizeof nsp_sig_areas); /* resident now, not in a dying process */
#if NSP_HAVE_LIBUNWIND
  /* libunwind sets itself up at its first use: not in a handler. */
  unw_context_t ctx;
  unw_cursor_t cur;
  if (unw_getcontext(&ctx) == 0 && unw_init_local(&cur, &ctx) == 0)
    for (int i = 0; i < 4 && unw_step(&cur) > 0; i++) {
    }
#endif
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = nsp_sig_handler;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  for (int i = 0; i < NSP_NSIG; i++) {
    if (sigaction(nsp_sig_list[i], NULL, &nsp_sig_prev[i]) != 0) continue;
    if ((nsp_sig_prev[i].sa_flags & SA_SIGINFO) && nsp_sig_prev[i].sa_sigaction == nsp_sig_handler) continue;
    sigaction(nsp_sig_list[i], &sa, NULL);
  }
}
