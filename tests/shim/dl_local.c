/* dl_local.c - a library a test loads RTLD_LOCAL, which looks names up
 * with dlsym(RTLD_DEFAULT) or dlsym(RTLD_NEXT) from its own code: glibc
 * answers relative to the caller, so it finds its dependency (dl_dep.c),
 * which is in its local scope and nowhere else. */
#include <dlfcn.h>

/* Uses its dependency, which keeps it a DT_NEEDED of this library. */
int nsp_dl_dep_value(void);
__attribute__((visibility("default"))) int nsp_dl_local_value(void);
__attribute__((visibility("default"))) int nsp_dl_local_value(void) { return nsp_dl_dep_value(); }

/* Not a tail call: the lookup must be made from here. */
static void *volatile nsp_dl_local_last;

__attribute__((visibility("default"))) void *nsp_dl_local_lookup(int next, const char *name);
__attribute__((visibility("default"))) void *nsp_dl_local_lookup(int next, const char *name) {
  nsp_dl_local_last = dlsym(next ? RTLD_NEXT : RTLD_DEFAULT, name);
  return nsp_dl_local_last;
}

__attribute__((visibility("default"))) void *nsp_dl_local_vlookup(int next, const char *name,
                                                                  const char *version);
__attribute__((visibility("default"))) void *nsp_dl_local_vlookup(int next, const char *name,
                                                                  const char *version) {
  nsp_dl_local_last = dlvsym(next ? RTLD_NEXT : RTLD_DEFAULT, name, version);
  return nsp_dl_local_last;
}
