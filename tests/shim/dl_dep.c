/* dl_dep.c - a library only in the local scope of dl_local.c's library
 * (its dependency, loaded with it RTLD_LOCAL): what dlsym(RTLD_DEFAULT)
 * and dlsym(RTLD_NEXT) find from there and from nowhere else. */
__attribute__((visibility("default"))) int nsp_dl_dep_value(void);
__attribute__((visibility("default"))) int nsp_dl_dep_value(void) { return 42; }
