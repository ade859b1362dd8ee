/* nsp_env.c - which environment variables a trace may hold.
 *
 * Environments hold secrets (API tokens, passwords in URLs), and traces
 * travel: they land on shared filesystems and in bug reports.  So the
 * snapshot is an allowlist, and a deny-list of name parts overrides it. */
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nsp_shim.h"

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
  /* Rank and world variables of torchrun, Slurm, Open MPI and PMI/PMIx. */
  static const char *const exact[] = {
      "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "ROLE_RANK",
      "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID", "TORCHELASTIC_RESTART_COUNT",
      "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS", "SLURM_NNODES", "SLURM_NODEID",
      "SLURM_JOB_ID", "SLURM_STEP_ID", "SLURM_JOB_NODELIST",
      "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
      "OMPI_COMM_WORLD_LOCAL_SIZE", "PMI_RANK", "PMI_SIZE", "PMIX_RANK",
      "LD_PRELOAD"};
  for (size_t i = 0; i < sizeof deny / sizeof *deny; i++)
    if (contains(name, len, deny[i])) return 0;
  for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++)
    if (has_prefix(name, len, prefixes[i])) return 1;
  for (size_t i = 0; i < sizeof exact / sizeof *exact; i++)
    if (strlen(exact[i]) == len && !memcmp(name, exact[i], len)) return 1;
  return 0;
}

const char *nsp_launcher(void) {
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

void nsp_process_versions(int32_t *driver, int32_t *runtime) {
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
