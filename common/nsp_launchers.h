/* nsp_launchers.h - the variables job launchers (torchrun, Open MPI,
 * Slurm, PMI/PMIx) set in each process they start: one table, from which
 * the shim's environment allowlist, its launcher name, the analyzer's
 * rank from the environment, and `ncclspy run`'s job id and rank are made.
 * Rows are in order of trust: a process started by torchrun inside an
 * mpirun inside a Slurm allocation takes torchrun's RANK first, then Open
 * MPI's (Slurm's SLURM_PROCID there is the batch step's, 0 everywhere). */
#ifndef NSP_LAUNCHERS_H
#define NSP_LAUNCHERS_H

#include <stddef.h>

/* What a variable says about the process or job. */
enum nsp_launcher_role {
  NSP_LV_OTHER,      /* recorded (allowlisted), not interpreted */
  NSP_LV_RANK,       /* the process's rank in the job (decimal) */
  NSP_LV_LOCAL_RANK, /* its rank on its node */
  NSP_LV_SIZE,       /* the number of processes */
  NSP_LV_JOB,        /* the job's identity, the same in every process */
  NSP_LV_RESTART,    /* how many times the job was restarted */
};

/* X(LAUNCHER, NAME, ROLE, NAMES_LAUNCHER): NAMES_LAUNCHER 1 when the
 * variable being set means that LAUNCHER started the process. */
#define NSP_LAUNCHER_VARS(X)                                           \
  X("torchrun", "TORCHELASTIC_RUN_ID", NSP_LV_JOB, 1)                  \
  X("torchrun", "TORCHELASTIC_RESTART_COUNT", NSP_LV_RESTART, 1)       \
  X("torchrun", "RANK", NSP_LV_RANK, 0)                                \
  X("torchrun", "LOCAL_RANK", NSP_LV_LOCAL_RANK, 0)                    \
  X("torchrun", "WORLD_SIZE", NSP_LV_SIZE, 0)                          \
  X("torchrun", "LOCAL_WORLD_SIZE", NSP_LV_OTHER, 0)                   \
  X("torchrun", "GROUP_RANK", NSP_LV_OTHER, 0)                         \
  X("torchrun", "ROLE_RANK", NSP_LV_OTHER, 0)                          \
  X("torchrun", "MASTER_ADDR", NSP_LV_OTHER, 0)                        \
  X("torchrun", "MASTER_PORT", NSP_LV_OTHER, 0)                        \
  X("openmpi", "OMPI_COMM_WORLD_RANK", NSP_LV_RANK, 1)                 \
  X("openmpi", "OMPI_COMM_WORLD_SIZE", NSP_LV_SIZE, 0)                 \
  X("openmpi", "OMPI_COMM_WORLD_LOCAL_RANK", NSP_LV_LOCAL_RANK, 0)     \
  X("openmpi", "OMPI_COMM_WORLD_LOCAL_SIZE", NSP_LV_OTHER, 0)          \
  X("openmpi", "OMPI_MCA_ess_base_jobid", NSP_LV_JOB, 0)               \
  X("slurm", "SLURM_PROCID", NSP_LV_RANK, 1)                           \
  X("slurm", "SLURM_LOCALID", NSP_LV_LOCAL_RANK, 0)                    \
  X("slurm", "SLURM_NTASKS", NSP_LV_SIZE, 0)                           \
  X("slurm", "SLURM_NNODES", NSP_LV_OTHER, 0)                          \
  X("slurm", "SLURM_NODEID", NSP_LV_OTHER, 0)                          \
  X("slurm", "SLURM_JOB_ID", NSP_LV_JOB, 0)                            \
  X("slurm", "SLURM_STEP_ID", NSP_LV_OTHER, 0)                         \
  X("slurm", "SLURM_RESTART_COUNT", NSP_LV_RESTART, 0)                 \
  X("slurm", "SLURM_JOB_NODELIST", NSP_LV_OTHER, 0)                    \
  X("pmi", "PMI_RANK", NSP_LV_RANK, 1)                                 \
  X("pmi", "PMI_SIZE", NSP_LV_SIZE, 0)                                 \
  X("pmi", "PMIX_RANK", NSP_LV_RANK, 1)                                \
  X("pmi", "PMIX_NAMESPACE", NSP_LV_JOB, 0)

struct nsp_launcher_var {
  const char *launcher; /* "torchrun", "openmpi", "slurm", "pmi" */
  const char *name;
  int role;             /* enum nsp_launcher_role */
  int names_launcher;
};

/* The table's row i (in order of trust), or NULL past the end. */
const struct nsp_launcher_var *nsp_launcher_var(size_t i);

/* Looks a variable up: returns its value or NULL when unset.  getenv, or
 * a lookup in a recorded environment. */
typedef const char *(*nsp_env_get_fn)(const char *name, void *arg);

/* The first variable of `role`, in order of trust, that get finds set and
 * not empty (nor "none", torchrun's unset TORCHELASTIC_RUN_ID): its value,
 * and *name (may be NULL) its name.  NULL when none is. */
const char *nsp_launcher_env(int role, nsp_env_get_fn get, void *arg, const char **name);

/* The launcher that started the process, from the variables get finds:
 * "torchrun", "openmpi", "slurm", "pmi", or "" (static strings). */
const char *nsp_launcher_name(nsp_env_get_fn get, void *arg);

#endif
