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
  /* Rank, world and run (job, step, restart) variables of torchrun,
   * Slurm, Open MPI and PMI/PMIx. */
  static const char *const exact[] = {
      "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "ROLE_RANK",
      "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID", "TORCHELASTIC_RESTART_COUNT",
      "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS", "SLURM_NNODES", "SLURM_NODEID",
      "SLURM_JOB_ID", "SLURM_STEP_ID", "SLURM_RESTART_COUNT", "SLURM_JOB_NODELIST",
      "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
      "OMPI_COMM_WORLD_LOCAL_SIZE", "OMPI_MCA_ess_base_jobid", "PMI_RANK", "PMI_SIZE", "PMIX_RANK",
      "PMIX_NAMESPACE",
      "LD_PRELOAD"};
  for (size_t i = 0; i < sizeof deny / sizeof *deny; i++)
    if (contains(name, len, deny[i])) return 0;
  for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++)
    if (has_prefix(name, len, prefixes[i])) return 1;
  for (size_t i = 0; i < sizeof exact / sizeof *exact; i++)
    if (strlen(exact[i]) == len && !memcmp(name, exact[i], len)) return 1;
  return 0;
}

/* The launcher that started this process, from its variables: "torchrun",
 * "slurm", "openmpi", "pmi", or "" (a static string). */
static const char *launcher(void) {
  /* Most specific first: torchrun under Slurm is still torchrun. */
  if (getenv("TORCHELASTIC_RUN_ID") || getenv("TORCHELASTIC_RESTART_COUNT")) return "torchrun";
  if (getenv("OMPI_COMM_WORLD_RANK")) return "openmpi";
  if (getenv("SLURM_PROCID")) return "slurm";
  if (getenv("PMI_RANK") || getenv("PMIX_RANK")) return "pmi";
  return "";
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
  x->launcher = launcher();
  struct timespec rt, mt;
  clock_gettime(CLOCK_REALTIME, &rt);
  clock_gettime(CLOCK_MONOTONIC, &mt);
  x->realtime_ns = (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec;
  x->monotonic_ns = (uint64_t)mt.tv_sec * 1000000000u + (uint64_t)mt.tv_nsec;
  return x;
}
