/* nsp_dlsym.c - dlsym and dlvsym, so that the NCCL entry points a program
 * takes by hand reach the wrappers.
 *
 * XLA (JAX, TensorFlow), vLLM's and SGLang's PyNccl (Python ctypes),
 * XGBoost and nccl4py dlopen libnccl in a local scope and take each entry
 * point with dlsym on that handle: their calls never pass through the
 * preloaded nccl* symbols.  So the shim exports dlsym and dlvsym.  A lookup
 * on a handle goes to the real function; when what it found is an entry
 * point of NSP_NCCL_APIS ("nccl<Name>") lying in the libnccl the shim
 * interposes (nsp_resolve_owns, which adopts that library when none was
 * found yet), the caller gets the shim's own exported wrapper of it.
 * Anything else comes back exactly as the real call gave it: other names,
 * other libraries, pnccl* (calling those opts out, as in DESIGN.md), and a
 * second libnccl (warned about and recorded by nsp_resolve).
 *
 * glibc resolves RTLD_NEXT and RTLD_DEFAULT relative to the object that
 * called dlsym, which it finds from its own return address.  So on x86_64
 * and aarch64 the exported entry is a few instructions of assembly: for
 * those two handles it jumps (does not call) to the real dlsym, with the
 * caller's arguments and return address untouched, so the real one sees
 * the caller; that costs two compares and an indirect jump.  Other handles
 * jump to nsp_dlsym_handle, in C (the real dlsym uses the caller of a
 * handle lookup only for an audit module's la_symbind, which then sees the
 * shim).  Elsewhere the entry is C that makes the jump with
 * __attribute__((musttail)) (clang, GCC 15); a compiler without it builds a
 * shim that does not interpose dlsym at all, rather than one that would
 * resolve other libraries' RTLD_NEXT relative to itself.
 *
 * The real functions come from libc's own dynamic symbol table (libdl's
 * before glibc 2.34), found by walking the loader's list of objects
 * (_r_debug): no call into anything a sanitizer intercepts, no lock, no
 * allocation, so the first call may come from anywhere, before any
 * constructor (sanitizer runtimes look up their interceptors with
 * dlsym(RTLD_NEXT) while they start, before their shadow memory exists:
 * that path is not instrumented).  A versioned reference (.symver to
 * dlsym@GLIBC_2.34) would not do: ld binds it to our own unversioned
 * dlsym, and ld.so would too.  Racing first calls store the same pointers.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "nsp_names.h"
#include "nsp_shim.h"

/* Code that may run before a sanitizer runtime has started. */
#define NSP_EARLY __attribute__((no_sanitize("address", "thread", "undefined")))

typedef void *(*nsp_dlsym_fn)(void *, const char *);
typedef void *(*nsp_dlvsym_fn)(void *, const char *, const char *);
/* A function's address as data, and as the function (no memcpy on paths
 * that run before a sanitizer's interceptors are set up). */
union nsp_dlsym_ptr {
  void *p;
  nsp_dlsym_fn f;
  nsp_dlvsym_fn vf;
};

/* The real dlsym [0] and dlvsym [1]; read by the entry stubs. */
NSP_HIDDEN __attribute__((used)) void *nsp_dlsym_libc[2];
/* Called by the entry stubs only: finds the real functions; the lookups
 * on a handle. */
NSP_HIDDEN void nsp_dlsym_init(void);
NSP_HIDDEN void *nsp_dlsym_handle(void *handle, const char *name);
NSP_HIDDEN void *nsp_dlsym_vhandle(void *handle, const char *name, const char *version);

/* ---- the dynamic symbol table of a loaded object ---- */

struct nsp_dyn {
  uintptr_t base;
  const ElfW(Sym) *sym;
  const char *str;
  const uint32_t *gnu, *sysv;
  const ElfW(Half) *versym;
  const ElfW(Verdef) *verdef;
};

/* glibc relocates most objects' dynamic entries in place, not those of a
 * read-only dynamic section. */
NSP_EARLY static uintptr_t dyn_ptr(uintptr_t base, uintptr_t v) { return v < base ? v + base : v; }

NSP_EARLY static int same(const char *a, const char *b) {
  while (*a && *a == *b) a++, b++;
  return *a == *b;
}

NSP_EARLY static int starts(const char *s, const char *prefix) {
  while (*prefix && *s == *prefix) s++, prefix++;
  return !*prefix;
}

NSP_EARLY static int dyn_read(const struct link_map *m, struct nsp_dyn *d) {
  d->base = m->l_addr;
  d->sym = NULL;
  d->str = NULL;
  d->gnu = d->sysv = NULL;
  d->versym = NULL;
  d->verdef = NULL;
  if (!m->l_ld) return -1;
  for (const ElfW(Dyn) *e = m->l_ld; e->d_tag != DT_NULL; e++) {
    uintptr_t p = dyn_ptr(d->base, e->d_un.d_ptr);
    switch (e->d_tag) {
      case DT_SYMTAB: d->sym = (const ElfW(Sym) *)p; break;
      case DT_STRTAB: d->str = (const char *)p; break;
      case DT_GNU_HASH: d->gnu = (const uint32_t *)p; break;
      case DT_HASH: d->sysv = (const uint32_t *)p; break;
      case DT_VERSYM: d->versym = (const ElfW(Half) *)p; break;
      case DT_VERDEF: d->verdef = (const ElfW(Verdef) *)p; break;
      default: break;
    }
  }
  return d->sym && d->str && (d->gnu || d->sysv) ? 0 : -1;
}

/* How well symbol i defines `name`: 2 its default version (or it has no
 * version), 1 an older, hidden version, 0 not at all.  IFUNCs are left out
 * (their value is the resolver). */
NSP_EARLY static int rank_sym(const struct nsp_dyn *d, uint32_t i, const char *name) {
  const ElfW(Sym) *s = &d->sym[i];
  if (s->st_shndx == SHN_UNDEF || !s->st_value || (s->st_info & 0xf) != STT_FUNC) return 0;
  if (!same(d->str + s->st_name, name)) return 0;
  if (!d->versym) return 2;
  ElfW(Half) v = d->versym[i];
  if ((v & 0x7fff) == 0) return 0; /* local */
  return v & 0x8000 ? 1 : 2;
}

NSP_EARLY static uint32_t gnu_hash(const char *s) {
  uint32_t h = 5381;
  for (; *s; s++) h = h * 33 + (unsigned char)*s;
  return h;
}

NSP_EARLY static uint32_t sysv_hash(const char *s) {
  uint32_t h = 0;
  for (; *s; s++) {
    h = (h << 4) + (unsigned char)*s;
    uint32_t g = h & 0xf0000000u;
    if (g) h ^= g >> 24;
    h &= ~g;
  }
  return h;
}

/* `name` as the object of m defines it itself; NULL when it does not. */
NSP_EARLY static void *lookup(const struct link_map *m, const char *name) {
  struct nsp_dyn d;
  if (dyn_read(m, &d) < 0) return NULL;
  const ElfW(Sym) *best = NULL;
  int best_rank = 0;
  if (d.gnu) {
    uint32_t nbuckets = d.gnu[0], symoffset = d.gnu[1], nbloom = d.gnu[2];
    if (!nbuckets) return NULL;
    const uint32_t *buckets = (const uint32_t *)((const ElfW(Addr) *)(d.gnu + 4) + nbloom);
    const uint32_t *chain = buckets + nbuckets;
    uint32_t h = gnu_hash(name), i = buckets[h % nbuckets];
    if (i >= symoffset) {
      for (;; i++) {
        uint32_t c = chain[i - symoffset];
        int r = (c | 1) == (h | 1) ? rank_sym(&d, i, name) : 0;
        if (r > best_rank) best_rank = r, best = &d.sym[i];
        if (c & 1) break;
      }
    }
  } else {
    uint32_t nbuckets = d.sysv[0];
    if (!nbuckets) return NULL;
    const uint32_t *bucket = d.sysv + 2, *chain = bucket + nbuckets;
    for (uint32_t i = bucket[sysv_hash(name) % nbuckets]; i; i = chain[i]) {
      int r = rank_sym(&d, i, name);
      if (r > best_rank) best_rank = r, best = &d.sym[i];
    }
  }
  return best ? (void *)(d.base + best->st_value) : NULL;
}

void *nsp_dlsym_in(const struct link_map *m, const char *name) { return m ? lookup(m, name) : NULL; }

/* ---- the real dlsym and dlvsym ---- */

NSP_EARLY static const char *base_name(const char *p) {
  const char *b = p;
  for (; *p; p++)
    if (*p == '/') b = p + 1;
  return b;
}

/* Finds them in libc.so (glibc >= 2.34) or libdl.so; called by the entry
 * stubs while nsp_dlsym_libc[0] is NULL.  The objects before libc in the
 * loader's list were loaded with the program and are never unloaded, so
 * the walk needs no lock. */
NSP_EARLY NSP_HIDDEN __attribute__((used)) void nsp_dlsym_init(void) {
  static const char *const libs[] = {"libc.so", "libdl.so"};
  for (int k = 0; k < 2; k++) {
    for (const struct link_map *m = _r_debug.r_map; m; m = m->l_next) {
      if (!m->l_name || !starts(base_name(m->l_name), libs[k])) continue;
      void *s = lookup(m, "dlsym");
      if (!s) continue;
      __atomic_store_n(&nsp_dlsym_libc[1], lookup(m, "dlvsym"), __ATOMIC_RELEASE);
      __atomic_store_n(&nsp_dlsym_libc[0], s, __ATOMIC_RELEASE);
      return;
    }
  }
}

NSP_EARLY static void *libc_fn(int which) {
  void *f = __atomic_load_n(&nsp_dlsym_libc[which], __ATOMIC_ACQUIRE);
  if (!f) {
    nsp_dlsym_init();
    f = __atomic_load_n(&nsp_dlsym_libc[which], __ATOMIC_ACQUIRE);
  }
  return f;
}

void *nsp_dlsym_real(void *handle, const char *name) {
  union nsp_dlsym_ptr real = {libc_fn(0)};
  return real.p ? real.f(handle, name) : NULL;
}

/* ---- lookups on a handle ---- */

/* The shim's own exported wrapper of each entry point (its address in
 * this object, never another preload's definition of the name). */
static _Atomic(void *) nsp_dlsym_wrap[NSP_API_COUNT];

static void *wrapper(int api) {
  void *w = atomic_load_explicit(&nsp_dlsym_wrap[api], memory_order_acquire);
  if (w) return w;
  Dl_info info;
  struct link_map *self = NULL;
  if (!dladdr1((void *)nsp_dlsym_libc, &info, (void **)&self, RTLD_DL_LINKMAP)) return NULL;
  char name[64];
  snprintf(name, sizeof name, "nccl%s", nsp_api_name(api));
  w = lookup(self, name);
  if (w) atomic_store_explicit(&nsp_dlsym_wrap[api], w, memory_order_release);
  return w;
}

/* f: what the real lookup of `name` found (not NULL).  The wrapper when f
 * is that entry point of the libnccl the shim interposes. */
static void *nccl_entry(void *f, const char *name) {
  int api = nsp_api_from_name(name);
  if (api < 0) return f;
  int saved = errno;
  void *w = nsp_resolve_owns(f) ? wrapper(api) : NULL;
  /* The caller's lookup succeeded, which leaves no error to report; the
   * shim's own loader calls on the way may have failed. */
  (void)dlerror();
  errno = saved;
  return w ? w : f;
}

NSP_EARLY static int nccl_name(const char *name) {
  return name && name[0] == 'n' && name[1] == 'c' && name[2] == 'c' && name[3] == 'l';
}

NSP_EARLY NSP_HIDDEN __attribute__((used)) void *nsp_dlsym_handle(void *handle, const char *name) {
  union nsp_dlsym_ptr real = {libc_fn(0)};
  if (!real.p) return NULL;
  void *f = real.f(handle, name);
  return NSP_UNLIKELY(f && nccl_name(name)) ? nccl_entry(f, name) : f;
}

NSP_EARLY NSP_HIDDEN __attribute__((used)) void *nsp_dlsym_vhandle(void *handle, const char *name,
                                                                    const char *version) {
  union nsp_dlsym_ptr real = {libc_fn(1)};
  if (!real.p) return NULL;
  void *f = real.vf(handle, name, version);
  return NSP_UNLIKELY(f && nccl_name(name)) ? nccl_entry(f, name) : f;
}

/* ---- the exported entries ---- */

#if defined(__GLIBC__) && defined(__x86_64__)
#if defined(__CET__) && (__CET__ & 1)
#define NSP_ENDBR "  endbr64\n"
#else
#define NSP_ENDBR ""
#endif
/* Entry: rsp = 8 mod 16.  A first call (no real function yet) saves the
 * argument registers around nsp_dlsym_init, keeping the stack aligned. */
#define NSP_DLSYM_ENTRY(sym, slot, cfunc, save, restore)                         \
  ".text\n"                                                                      \
  ".globl " sym "\n"                                                             \
  ".type " sym ", @function\n"                                                   \
  ".p2align 4\n" sym ":\n"                                                       \
  ".cfi_startproc\n" NSP_ENDBR                                                   \
  "  cmpq $-1, %rdi\n" /* RTLD_NEXT */                                           \
  "  je 1f\n"                                                                    \
  "  testq %rdi, %rdi\n" /* RTLD_DEFAULT */                                      \
  "  jne " cfunc "\n"                                                            \
  "1:\n"                                                                         \
  "  movq nsp_dlsym_libc+" slot "(%rip), %rax\n"                                 \
  "  testq %rax, %rax\n"                                                         \
  "  je 2f\n"                                                                    \
  "  jmp *%rax\n"                                                                \
  "2:\n" save "  call nsp_dlsym_init\n" restore                                  \
  "  movq nsp_dlsym_libc+" slot "(%rip), %rax\n"                                 \
  "  testq %rax, %rax\n"                                                         \
  "  je 3f\n"                                                                    \
  "  jmp *%rax\n"                                                                \
  "3:\n"                                                                         \
  "  ret\n"                                                                      \
  ".cfi_endproc\n"                                                               \
  ".size " sym ", .-" sym "\n"
#define NSP_PUSH(r) "  pushq %" r "\n  .cfi_adjust_cfa_offset 8\n"
#define NSP_POP(r) "  popq %" r "\n  .cfi_adjust_cfa_offset -8\n"
__asm__(NSP_DLSYM_ENTRY("dlsym", "0", "nsp_dlsym_handle",
                        NSP_PUSH("rdi") NSP_PUSH("rsi") "  subq $8, %rsp\n  .cfi_adjust_cfa_offset 8\n",
                        "  addq $8, %rsp\n  .cfi_adjust_cfa_offset -8\n" NSP_POP("rsi") NSP_POP("rdi"))
        NSP_DLSYM_ENTRY("dlvsym", "8", "nsp_dlsym_vhandle", NSP_PUSH("rdi") NSP_PUSH("rsi") NSP_PUSH("rdx"),
                        NSP_POP("rdx") NSP_POP("rsi") NSP_POP("rdi")));
#elif defined(__GLIBC__) && defined(__aarch64__)
#if defined(__ARM_FEATURE_BTI_DEFAULT) && __ARM_FEATURE_BTI_DEFAULT
#define NSP_BTI "  hint #34\n" /* bti c */
#else
#define NSP_BTI ""
#endif
/* x16 is the intra-procedure-call register: free to use, and a BTI
 * landing pad accepts a br through it. */
#define NSP_DLSYM_ENTRY(sym, slot, cfunc)                                        \
  ".text\n"                                                                      \
  ".globl " sym "\n"                                                             \
  ".type " sym ", %function\n"                                                   \
  ".p2align 4\n" sym ":\n"                                                       \
  ".cfi_startproc\n" NSP_BTI                                                     \
  "  cmn x0, #1\n" /* RTLD_NEXT */                                               \
  "  b.eq 1f\n"                                                                  \
  "  cbz x0, 1f\n" /* RTLD_DEFAULT */                                            \
  "  b " cfunc "\n"                                                              \
  "1:\n"                                                                         \
  "  adrp x16, nsp_dlsym_libc+" slot "\n"                                        \
  "  ldr x16, [x16, #:lo12:nsp_dlsym_libc+" slot "]\n"                           \
  "  cbz x16, 2f\n"                                                              \
  "  br x16\n"                                                                   \
  "2:\n"                                                                         \
  "  stp x29, x30, [sp, #-48]!\n"                                                \
  "  .cfi_adjust_cfa_offset 48\n"                                                \
  "  .cfi_rel_offset x29, 0\n"                                                   \
  "  .cfi_rel_offset x30, 8\n"                                                   \
  "  mov x29, sp\n"                                                               \
  "  stp x0, x1, [sp, #16]\n"                                                    \
  "  str x2, [sp, #32]\n"                                                        \
  "  bl nsp_dlsym_init\n"                                                        \
  "  ldp x0, x1, [sp, #16]\n"                                                    \
  "  ldr x2, [sp, #32]\n"                                                        \
  "  ldp x29, x30, [sp], #48\n"                                                  \
  "  .cfi_adjust_cfa_offset -48\n"                                               \
  "  .cfi_restore x29\n"                                                         \
  "  .cfi_restore x30\n"                                                         \
  "  adrp x16, nsp_dlsym_libc+" slot "\n"                                        \
  "  ldr x16, [x16, #:lo12:nsp_dlsym_libc+" slot "]\n"                           \
  "  cbz x16, 3f\n"                                                              \
  "  br x16\n"                                                                   \
  "3:\n"                                                                         \
  "  mov x0, #0\n"                                                               \
  "  ret\n"                                                                      \
  ".cfi_endproc\n"                                                               \
  ".size " sym ", .-" sym "\n"
__asm__(NSP_DLSYM_ENTRY("dlsym", "0", "nsp_dlsym_handle") NSP_DLSYM_ENTRY("dlvsym", "8", "nsp_dlsym_vhandle"));
#elif defined(__GLIBC__) && defined(__has_attribute)
#if __has_attribute(musttail)
#define NSP_DLSYM_EXPORT __attribute__((visibility("default")))
NSP_DLSYM_EXPORT void *dlsym(void *handle, const char *name) {
  if (handle == RTLD_NEXT || handle == RTLD_DEFAULT) {
    union nsp_dlsym_ptr real = {libc_fn(0)};
    if (!real.p) return NULL;
    __attribute__((musttail)) return real.f(handle, name);
  }
  __attribute__((musttail)) return nsp_dlsym_handle(handle, name);
}
NSP_DLSYM_EXPORT void *dlvsym(void *handle, const char *name, const char *version) {
  if (handle == RTLD_NEXT || handle == RTLD_DEFAULT) {
    union nsp_dlsym_ptr real = {libc_fn(1)};
    if (!real.p) return NULL;
    __attribute__((musttail)) return real.vf(handle, name, version);
  }
  __attribute__((musttail)) return nsp_dlsym_vhandle(handle, name, version);
}
#endif
#endif
