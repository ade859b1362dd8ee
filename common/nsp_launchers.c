/* nsp_launchers.c - lookups over the launcher variables' table
 * (nsp_launchers.h). */
#include "nsp_launchers.h"

#include <string.h>

static const struct nsp_launcher_var nsp_launcher_vars[] = {
#define NSP_LV_ROW(launcher, name, role, names) {launcher, name, role, names},
    NSP_LAUNCHER_VARS(NSP_LV_ROW)
#undef NSP_LV_ROW
};

const struct nsp_launcher_var *nsp_launcher_var(size_t i) {
  return i < sizeof nsp_launcher_vars / sizeof *nsp_launcher_vars ? &nsp_launcher_vars[i] : NULL;
}

const char *nsp_launcher_env(int role, nsp_env_get_fn get, void *arg, const char **name) {
  const struct nsp_launcher_var *v;
  for (size_t i = 0; (v = nsp_launcher_var(i)) != NULL; i++) {
    if (v->role != role) continue;
    const char *val = get(v->name, arg);
    if (!val || !*val || !strcmp(val, "none")) continue;
    if (name) *name = v->name;
    return val;
  }
  return NULL;
}

const char *nsp_launcher_name(nsp_env_get_fn get, void *arg) {
  const struct nsp_launcher_var *v;
  for (size_t i = 0; (v = nsp_launcher_var(i)) != NULL; i++)
    if (v->names_launcher && get(v->name, arg)) return v->launcher;
  return "";
}
