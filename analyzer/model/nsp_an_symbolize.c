/* nsp_an_symbolize.c - native frames as function and file:line, from the
 * debug information of the modules they are in (elfutils' libdw).
 *
 * The shim records a frame as module path + offset (common/nsp_site.c: the
 * address minus dladdr's dli_fbase, the start of the module's first loaded
 * page) and, once per module, a MODULE record with the path and the GNU
 * build-id of the module as it was loaded.  Here, for a frame whose module
 * has a MODULE record, the file at that path is opened (once per analysis,
 * whatever the number of traces naming it) and used only when its
 * build-id is the recorded one: a module rebuilt or upgraded since the job
 * ran would give wrong lines, so its frames stay module+offset and a note
 * says so once.  A module with no build-id (in the record or the file)
 * cannot be checked and is left alone too.
 *
 * Addresses: the module is reported to libdwfl at bias 0, so an address is
 * an ELF virtual address: offset + the first PT_LOAD's p_vaddr rounded down
 * to its page (0 for shared objects and PIE programs, 0x400000 for a
 * non-PIE x86-64 program).  A return address points after its call: the
 * call is looked up at offset - 1, except for a signal's innermost frame,
 * the interrupted instruction itself.  Debug information comes from the
 * module or from a separate file found by dwfl_standard_find_debuginfo
 * (.gnu_debuglink, /usr/lib/debug/.build-id/xx/yyyy.debug as Debian's dbgsym
 * packages install them).  Results are cached per (module, address).
 *
 * Built without libdw, frames stay as recorded. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nsp_an_model.h"
#include "nsp_config.h"
#include "nsp_hash.h"

#if NSP_HAVE_LIBDW
#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#endif

/* ---- MODULE records, per trace ----------------------------------------- */

struct nsp_an_module {
  char *path, *build_id;
};

int nsp_an_module_add(struct nsp_trace *t, const struct nsp_rec *rec) {
  const struct nsp_rec_ext *x = rec->ext;
  if (!x || !x->module_path || !x->module_path[0]) return 0;
  for (size_t i = 0; i < t->nmodules; i++)
    if (!strcmp(t->modules[i].path, x->module_path)) return 0; /* the first record of a path wins */
  NSP_TRY(nsp_grow(&t->modules, &t->modules_cap, t->nmodules + 1, sizeof *t->modules));
  struct nsp_an_module *m = &t->modules[t->nmodules];
  m->path = nsp_strdup(x->module_path);
  m->build_id = nsp_strdup(x->build_id ? x->build_id : "");
  if (!m->path || !m->build_id) {
    free(m->path);
    free(m->build_id);
    return NSP_AN_ENOMEM;
  }
  t->nmodules++;
  return 0;
}

void nsp_an_modules_free(struct nsp_trace *t) {
  for (size_t i = 0; i < t->nmodules; i++) {
    free(t->modules[i].path);
    free(t->modules[i].build_id);
  }
  free(t->modules);
  t->modules = NULL;
  t->nmodules = t->modules_cap = 0;
}

#if NSP_HAVE_LIBDW

static const struct nsp_an_module *module_of(const struct nsp_trace *t, const char *path) {
  for (size_t i = 0; path && path[0] && i < t->nmodules; i++)
    if (!strcmp(t->modules[i].path, path)) return &t->modules[i];
  return NULL;
}

/* ---- the symbolizer: modules opened, frames looked up ------------------- */

enum { MOD_OK, MOD_NOFILE, MOD_UNCHECKED, MOD_CHANGED };

struct sym_mod {
  char *path, *build_id; /* as the MODULE record has them */
  int state;             /* MOD_* */
  Dwfl *dwfl;            /* MOD_OK: the file, at bias 0 */
  Dwfl_Module *mod;
  uint64_t vbase;        /* the first PT_LOAD's p_vaddr, rounded down to 4 KiB */
};

struct sym_result {
  char *function, *file;
  int line;
};

struct nsp_an_sym {
  struct sym_mod *mods;
  size_t nmods, mods_cap;
  struct nsp_u64map mod_by_key;  /* hash of path and build-id -> index in mods */
  struct sym_result *res;
  size_t nres, res_cap;
  struct nsp_u64map res_by_key;  /* hash of (module index, address) -> index in res */
};

/* The default search path: next to the file, .debug/ beside it,
 * /usr/lib/debug (with its .build-id/ tree). */
static char *nsp_sym_debuginfo_path = NULL;
static const Dwfl_Callbacks nsp_sym_callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &nsp_sym_debuginfo_path,
};

static int hex_equal(const unsigned char *bits, int len, const char *hex) {
  static const char digits[] = "0123456789abcdef";
  if (len <= 0 || strlen(hex) != 2 * (size_t)len) return 0;
  for (int i = 0; i < len; i++)
    if (hex[2 * i] != digits[bits[i] >> 4] || hex[2 * i + 1] != digits[bits[i] & 15]) return 0;
  return 1;
}

/* Opens the file at m->path and checks its build-id; sets m->state. */
static void mod_open(struct sym_mod *m) {
  m->state = MOD_NOFILE;
  if (!m->build_id[0]) {
    m->state = MOD_UNCHECKED;
    return;
  }
  m->dwfl = dwfl_begin(&nsp_sym_callbacks);
  if (!m->dwfl) return;
  dwfl_report_begin(m->dwfl);
  /* fd -1: libdwfl opens the file (and closes it at dwfl_end). */
  m->mod = dwfl_report_elf(m->dwfl, m->path, m->path, -1, 0, false);
  dwfl_report_end(m->dwfl, NULL, NULL);
  if (!m->mod) return;
  const unsigned char *bits = NULL;
  GElf_Addr at;
  int len = dwfl_module_build_id(m->mod, &bits, &at);
  if (len <= 0) {
    m->state = MOD_UNCHECKED;
    return;
  }
  if (!hex_equal(bits, len, m->build_id)) {
    m->state = MOD_CHANGED;
    return;
  }
  GElf_Addr bias;
  Elf *elf = dwfl_module_getelf(m->mod, &bias);
  size_t phnum = 0;
  if (!elf || elf_getphdrnum(elf, &phnum) != 0) return;
  uint64_t lo = UINT64_MAX;
  for (size_t i = 0; i < phnum; i++) {
    GElf_Phdr ph;
    if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD && ph.p_vaddr < lo) lo = ph.p_vaddr;
  }
  if (lo == UINT64_MAX) return;
  m->vbase = (lo & ~(uint64_t)4095) + bias;
  m->state = MOD_OK;
}

static void mod_close(struct sym_mod *m) {
  if (m->dwfl) dwfl_end(m->dwfl);
  free(m->path);
  free(m->build_id);
}

void nsp_an_sym_destroy(struct nsp_an_sym *s) {
  if (!s) return;
  for (size_t i = 0; i < s->nmods; i++) mod_close(&s->mods[i]);
  free(s->mods);
  nsp_u64map_free(&s->mod_by_key);
  for (size_t i = 0; i < s->nres; i++) {
    free(s->res[i].function);
    free(s->res[i].file);
  }
  free(s->res);
  nsp_u64map_free(&s->res_by_key);
  free(s);
}

struct nsp_an_sym *nsp_an_sym_create(void) { return calloc(1, sizeof(struct nsp_an_sym)); }

static uint64_t mod_key(const char *path, const char *build_id) {
  uint64_t h = nsp_fnv1a(NSP_FNV_INIT, path, strlen(path) + 1);
  return nsp_fnv1a(h, build_id, strlen(build_id));
}

/* The module entry for (path, build_id), opened at its first use; NULL
 * when out of memory. */
static struct sym_mod *mod_get(struct nsp_an_sym *s, const char *path, const char *build_id, int *is_new) {
  uint64_t key = mod_key(path, build_id);
  *is_new = 0;
  for (;;) { /* a hash shared by another (path, build_id): the next key */
    size_t *i = nsp_u64map_get(&s->mod_by_key, key);
    if (!i) break;
    struct sym_mod *m = &s->mods[*i];
    if (!strcmp(m->path, path) && !strcmp(m->build_id, build_id)) return m;
    key = nsp_u64map_hash(key + 1);
  }
  if (nsp_grow(&s->mods, &s->mods_cap, s->nmods + 1, sizeof *s->mods) < 0) return NULL;
  struct sym_mod *m = &s->mods[s->nmods];
  memset(m, 0, sizeof *m);
  m->path = nsp_strdup(path);
  m->build_id = nsp_strdup(build_id);
  if (!m->path || !m->build_id || nsp_u64map_put(&s->mod_by_key, key, s->nmods) < 0) {
    free(m->path);
    free(m->build_id);
    return NULL;
  }
  s->nmods++;
  mod_open(m);
  *is_new = 1;
  return m;
}

/* The innermost function (inlined or not) holding addr, by its DWARF
 * name; NULL when the debug information has none. */
static const char *dwarf_function(Dwfl_Module *mod, Dwarf_Addr addr) {
  Dwarf_Addr bias = 0;
  Dwarf_Die *cu = dwfl_module_addrdie(mod, addr, &bias);
  if (!cu) return NULL;
  Dwarf_Die *scopes = NULL;
  int n = dwarf_getscopes(cu, addr - bias, &scopes);
  const char *name = NULL;
  for (int i = 0; i < n && !name; i++) {
    int tag = dwarf_tag(&scopes[i]);
    if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine) name = dwarf_diename(&scopes[i]);
  }
  free(scopes);
  return name;
}

/* file made absolute against the compilation directory (the line table
 * may name it relative: "../tests/cases/nsp_cases.c"), "." and ".."
 * components folded; a malloc'd string, NULL when out of memory. */
static char *source_path(const char *file, const char *comp_dir) {
  int rel = file[0] != '/' && comp_dir && comp_dir[0] == '/';
  size_t n = strlen(file) + (rel ? strlen(comp_dir) + 1 : 0);
  char *joined = malloc(n + 1), *out = malloc(n + 2);
  if (!joined || !out) {
    free(joined);
    free(out);
    return NULL;
  }
  snprintf(joined, n + 1, "%s%s%s", rel ? comp_dir : "", rel ? "/" : "", file);
  if (joined[0] != '/') { /* nothing to fold against */
    free(out);
    return joined;
  }
  size_t len = 0;
  for (char *save = NULL, *c = strtok_r(joined, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
    if (!strcmp(c, ".")) continue;
    if (!strcmp(c, "..")) {
      while (len > 0 && out[len - 1] != '/') len--;
      if (len > 0) len--; /* the slash; the root stays */
      continue;
    }
    out[len++] = '/';
    size_t cl = strlen(c);
    memcpy(out + len, c, cl);
    len += cl;
  }
  if (!len) out[len++] = '/';
  out[len] = 0;
  free(joined);
  return out;
}

/* A C++ symbol ("_Z...") demangled by the C++ runtime's own demangler
 * (libstdc++'s __cxa_demangle, found at run time: the analyzer is C and
 * links no C++ library), in a malloc'd string; NULL when it is not
 * mangled, or no demangler is there.  Functions of C++ libraries without
 * DWARF (libtorch) come from their symbol tables in this form. */
static char *demangle(const char *sym) {
  typedef char *(*demangler)(const char *, char *, size_t *, int *);
  static demangler fn;
  static int tried;
  if (!sym || strncmp(sym, "_Z", 2) != 0) return NULL;
  if (!tried) {
    tried = 1;
    void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
    if (h) fn = (demangler)(uintptr_t)dlsym(h, "__cxa_demangle");
  }
  int status = -1;
  char *out = fn ? fn(sym, NULL, NULL, &status) : NULL;
  if (out && status != 0) {
    free(out);
    out = NULL;
  }
  return out;
}

/* Looks addr up in m (MOD_OK); the result's index in s->res, or -1 when
 * out of memory. */
static ssize_t lookup(struct nsp_an_sym *s, size_t mi, uint64_t addr) {
  uint64_t key = nsp_u64map_hash(nsp_u64map_hash(mi) ^ addr);
  size_t *hit = nsp_u64map_get(&s->res_by_key, key);
  if (hit) return (ssize_t)*hit;
  if (nsp_grow(&s->res, &s->res_cap, s->nres + 1, sizeof *s->res) < 0) return -1;
  struct sym_mod *m = &s->mods[mi];
  struct sym_result *r = &s->res[s->nres];
  memset(r, 0, sizeof *r);
  const char *fn = dwarf_function(m->mod, addr);
  if (!fn) fn = dwfl_module_addrname(m->mod, addr);
  Dwfl_Line *ln = dwfl_module_getsrc(m->mod, addr);
  int line = 0;
  const char *file = ln ? dwfl_lineinfo(ln, NULL, &line, NULL, NULL, NULL) : NULL;
  if (fn && !(r->function = demangle(fn)) && !(r->function = nsp_strdup(fn))) return -1;
  if (file && line > 0) {
    if (!(r->file = source_path(file, dwfl_line_comp_dir(ln)))) {
      free(r->function);
      return -1;
    }
    r->line = line;
  }
  if (nsp_u64map_put(&s->res_by_key, key, s->nres) < 0) {
    free(r->function);
    free(r->file);
    return -1;
  }
  return (ssize_t)s->nres++;
}

int nsp_an_sym_frame(struct nsp_an_sym *s, const char *path, const char *build_id, struct nsp_frame *fr) {
  int is_new;
  struct sym_mod *m = mod_get(s, path, build_id, &is_new);
  if (!m) return NSP_AN_ENOMEM;
  if (m->state == MOD_CHANGED) return is_new ? NSP_AN_SYM_CHANGED_NEW : NSP_AN_SYM_CHANGED;
  if (m->state != MOD_OK || (!fr->offset && !fr->interrupted)) return NSP_AN_SYM_NONE;
  uint64_t addr = m->vbase + fr->offset - (fr->interrupted ? 0 : 1);
  ssize_t i = lookup(s, (size_t)(m - s->mods), addr);
  if (i < 0) return NSP_AN_ENOMEM;
  const struct sym_result *r = &s->res[i];
  fr->function = r->function;
  fr->file = r->file;
  fr->line = r->line;
  return r->function || r->file ? NSP_AN_SYM_RESOLVED : NSP_AN_SYM_NONE;
}

int nsp_an_symbolize_stack(struct nsp_job *job, const struct nsp_trace *t, const struct nsp_callsite *cs) {
  if (!cs || !t->nmodules) return 0;
  if (!job->sym && !(job->sym = nsp_an_sym_create())) return NSP_AN_ENOMEM;
  /* The frames are the analyzer's own (nsp_an_stack_make). */
  struct nsp_frame *fr = (struct nsp_frame *)(uintptr_t)cs->frames;
  for (size_t i = 0; i < cs->nframes; i++) {
    if (fr[i].file || fr[i].function) continue; /* done (a stack named twice) */
    const struct nsp_an_module *m = module_of(t, fr[i].module);
    if (!m) continue;
    int r = nsp_an_sym_frame(job->sym, m->path, m->build_id, &fr[i]);
    if (r < 0) return r;
    if (r == NSP_AN_SYM_CHANGED_NEW)
      NSP_TRY(nsp_job_notef(job, "%s changed since the job ran (build-id differs): its frames are shown as offsets",
                            m->path));
  }
  return 0;
}

#else /* no libdw at build time */

struct nsp_an_sym {
  int unused;
};

struct nsp_an_sym *nsp_an_sym_create(void) { return calloc(1, sizeof(struct nsp_an_sym)); }
void nsp_an_sym_destroy(struct nsp_an_sym *s) { free(s); }

int nsp_an_sym_frame(struct nsp_an_sym *s, const char *path, const char *build_id, struct nsp_frame *fr) {
  (void)s;
  (void)path;
  (void)build_id;
  (void)fr;
  return NSP_AN_SYM_NONE;
}

int nsp_an_symbolize_stack(struct nsp_job *job, const struct nsp_trace *t, const struct nsp_callsite *cs) {
  (void)job;
  (void)t;
  (void)cs;
  return 0;
}

#endif
