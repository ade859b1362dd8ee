/* nsp_env.c - the PROCESS record: the process, its launcher, its CUDA
 * and which environment variables a trace may hold.
 *
 * Environments hold secrets (API tokens, passwords in URLs), and traces
 * travel: they land on shared filesystems and in bug reports.  So the
 * snapshot is an allowlist, and a deny-list of name parts overrides it. */
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nsp_config.h"
#include "nsp_launchers.h"
#include "nsp_shim.h"

extern char **environ;

static int has_prefix(const char *name, size_t len, const char *prefix) {
  size_t n = strlen(prefix);
  return len >= n && !memcmp(name, prefix, n);
}

static int contains(const char *name, size_t len, const char *part) {
  size_t n = strlen(part);
  for (size_t i = 0; i + n <= len; i++)
    if (!memcmp(name + i, part, n)) return 1;
  return 0;
}

int nsp_env_allowed(const char *name, size_t len) {
  static const char *const deny[] = {"TOKEN", "SECRET", "KEY", "PASS", "CREDENTIAL"};
  static const char *const prefixes[] = {"NCCL_", "CUDA_", "TORCH_NCCL_", "TORCH_DISTRIBUTED_",
                                         "NCCLSPY_"};
  for (size_t i = 0; i < sizeof deny / sizeof *deny; i++)
    if (contains(name, len, deny[i])) return 0;
  for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++)
    if (has_prefix(name, len, prefixes[i])) return 1;
  /* Rank, world and run (job, step, restart) variables of the launchers
   * (common/nsp_launchers.h), and the preload itself. */
  const struct nsp_launcher_var *v;
  for (size_t i = 0; (v = nsp_launcher_var(i)) != NULL; i++)
    if (strlen(v->name) == len && !memcmp(name, v->name, len)) return 1;
  return len == strlen("LD_PRELOAD") && !memcmp(name, "LD_PRELOAD", len);
}

/* getenv, as nsp_launcher_name wants it. */
static const char *get_env(const char *name, void *arg) {
  (void)arg;
  return getenv(name);
}

static int find_cudart(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  if (info->dlpi_name && strstr(info->dlpi_name, "libcudart")) {
    snprintf(arg, 512, "%s", info->dlpi_name);
    return 1;
  }
  return 0;
}

/* cuDriverGetVersion and the loaded libcudart's cudaRuntimeGetVersion
 * (e.g. 13000); 0 where unknown. */
static void cuda_versions(int32_t *driver, int32_t *runtime) {
  *driver = *runtime = 0;
  const struct nsp_cuda *cu = nsp_cuda_get();
  int v = 0;
  if (cu && cu->DriverGetVersion && cu->DriverGetVersion(&v) == NSP_CUDA_SUCCESS) *driver = v;
  /* Only a runtime the program already loaded: we load none ourselves. */
  char path[512] = "";
  dl_iterate_phdr(find_cudart, path);
  void *h = path[0] ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL;
  if (!h) return;
  void *f = dlsym(h, "cudaRuntimeGetVersion");
  int (*get)(int *) = NULL;
  memcpy(&get, &f, sizeof f);
  v = 0;
  if (get && get(&v) == 0) *runtime = v;
  dlclose(h);
}

/* ---- the PROCESS record ---- */

struct nsp_rec_ext *nsp_env_snapshot(int32_t nccl_version) {
  size_t nenv = 0, bytes = 0;
  for (char **e = environ; e && *e; e++) {
    const char *eq = strchr(*e, '=');
    if (!eq || !nsp_env_allowed(*e, (size_t)(eq - *e))) continue;
    nenv++;
    bytes += strnlen(*e, 4096) + 2;
  }
  char host[NSP_HOST_MAX] = "";
  gethostname(host, sizeof host - 1);
  const char *path = nsp_resolve_path();
  bytes += sizeof(struct nsp_rec_ext) + nenv * 2 * sizeof(char *) + strlen(host) + strlen(path) +
           sizeof NSP_VERSION + 3;
  struct nsp_rec_ext *x = calloc(1, bytes);
  if (!x) return NULL;
  const char **env = (const char **)(x + 1);
  char *s = (char *)(env + nenv * 2);
  size_t i = 0;
  for (char **e = environ; e && *e && i < nenv; e++) {
    const char *eq = strchr(*e, '=');
    if (!eq || !nsp_env_allowed(*e, (size_t)(eq - *e))) continue;
    size_t nl = (size_t)(eq - *e), vl = strnlen(eq + 1, 4096 - nl);
    env[2 * i] = s;
    memcpy(s, *e, nl);
    s += nl;
    *s++ = 0;
    env[2 * i + 1] = s;
    memcpy(s, eq + 1, vl);
    s += vl;
    *s++ = 0;
    i++;
  }
  x->nenv = (uint32_t)i;
  x->env = env;
  x->host = strcpy(s, host);
  s += strlen(host) + 1;
  x->nccl_path = strcpy(s, path);
  s += strlen(path) + 1;
  x->shim_version = strcpy(s, NSP_VERSION);
  x->pid = (uint32_t)getpid();
  x->ppid = (uint32_t)getppid();
  x->nccl_version = nccl_version;
  x->tracking = nsp_done_tracking() | (nsp_site_enabled() ? NSP_TRACK_CALLSITES : 0) |
                (nsp_signal_enabled() ? NSP_TRACK_SIGNALS : 0);
  cuda_versions(&x->driver_version, &x->runtime_version);
  x->launcher = nsp_launcher_name(get_env, NULL);
  struct timespec rt, mt;
  clock_gettime(CLOCK_REALTIME, &rt);
  clock_gettime(CLOCK_MONOTONIC, &mt);
  x->realtime_ns = (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec;
  x->monotonic_ns = (uint64_t)mt.tv_sec * 1000000000u + (uint64_t)mt.tv_nsec;
  return x;
}
