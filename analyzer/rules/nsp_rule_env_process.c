/* nsp_rule_env_process.c - rule 6 of docs/REPORT.md, per process: what
 * differs between the processes of one job that should not (NCCL and CUDA
 * versions, the libnccl path, NCCL_* settings, world sizes).  Each
 * finding's sides group processes by their value (job ranks) and name
 * their ranks and hosts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nsp_names.h"
#include "nsp_rule.h"

static const char *nccl_version_str(int code, char *buf, size_t len) {
  if (code <= 0) return NULL;
  if (code >= 10000) snprintf(buf, len, "%d.%d.%d", code / 10000, code % 10000 / 100, code % 100);
  else snprintf(buf, len, "%d.%d.%d", code / 1000, code % 1000 / 100, code % 100);
  return buf;
}

static const char *cuda_version_str(int code, char *buf, size_t len) {
  if (code <= 0) return NULL;
  snprintf(buf, len, "%d.%d", code / 1000, code % 1000 / 10);
  return buf;
}

enum { V_NCCL, V_PATH, V_DRIVER, V_RUNTIME };

static int rule_versions(struct nsp_job *job, struct nsp_an_item *it, char (*bufs)[32]) {
  static const struct {
    int kind;
    const char *label;
  } what[] = {{NSP_FIND_ENV_NCCL_VERSION, "NCCL version"},
              {NSP_FIND_ENV_NCCL_PATH, "NCCL library"},
              {NSP_FIND_ENV_DRIVER, "CUDA driver"},
              {NSP_FIND_ENV_RUNTIME, "CUDA runtime"}};
  for (int w = 0; w < 4; w++) {
    size_t n = 0;
    for (size_t i = 0; i < job->ntraces; i++) {
      const struct nsp_trace_info *t = &job->traces[i]->info;
      const char *v = NULL;
      switch (w) {
        case V_NCCL: v = nccl_version_str(t->nccl_version, bufs[i], sizeof bufs[i]); break;
        case V_PATH: v = t->nccl_path && t->nccl_path[0] ? t->nccl_path : NULL; break;
        case V_DRIVER: v = cuda_version_str(t->driver_version, bufs[i], sizeof bufs[i]); break;
        default: v = cuda_version_str(t->runtime_version, bufs[i], sizeof bufs[i]); break;
      }
      if (!v) continue; /* unknown is not a difference */
      it[n++] = (struct nsp_an_item){v, i, t->rank};
    }
    NSP_TRY(nsp_an_finding_by_value(job, what[w].kind, NULL, it, n, what[w].label, NULL, NULL));
  }
  return 0;
}

/* NCCL_* variables that are per rank or per process by design. */
static int setting_excluded(const char *name) {
  static const char *const excluded[] = {"NCCL_COMM_ID", "NCCL_HOSTID", "NCCL_DEBUG_FILE"};
  if (strncmp(name, "NCCL_", 5) || strstr(name, "RANK")) return 1;
  for (size_t i = 0; i < sizeof excluded / sizeof *excluded; i++)
    if (!strcmp(name, excluded[i])) return 1;
  return 0;
}

static int cmp_strp(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

static int rule_settings(struct nsp_job *job, struct nsp_an_item *it) {
  const char **names = NULL;
  size_t n = 0, cap = 0;
  for (size_t i = 0; i < job->ntraces; i++) {
    const struct nsp_trace_info *t = &job->traces[i]->info;
    for (size_t e = 0; e < t->nenv; e++) {
      if (setting_excluded(t->env[2 * e])) continue;
      if (nsp_grow(&names, &cap, n + 1, sizeof *names) < 0) {
        free(names);
        return NSP_AN_ENOMEM;
      }
      names[n++] = t->env[2 * e];
    }
  }
  if (n) qsort(names, n, sizeof *names, cmp_strp);
  int ret = 0;
  for (size_t i = 0; i < n && !ret; i++) {
    if (i && !strcmp(names[i], names[i - 1])) continue;
    size_t k = 0;
    for (size_t t = 0; t < job->ntraces; t++)
      it[k++] = (struct nsp_an_item){nsp_an_env_value(&job->traces[t]->info, names[i]), t, job->traces[t]->info.rank};
    ret = nsp_an_finding_by_value(job, NSP_FIND_ENV_SETTING, NULL, it, k, names[i], names[i], NULL);
  }
  free(names);
  return ret;
}

static int rule_world_size(struct nsp_job *job, struct nsp_an_item *it) {
  static const char *const vars[] = {"WORLD_SIZE", "SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE"};
  int32_t largest = 0;
  for (size_t i = 0; i < job->ncomms; i++)
    if (job->comms[i]->info.nranks > largest) largest = job->comms[i]->info.nranks;
  size_t ntraced = job->ntraces;
  for (size_t v = 0; v < sizeof vars / sizeof *vars; v++) {
    size_t n = 0;
    for (size_t t = 0; t < job->ntraces; t++) {
      const char *val = nsp_an_env_value(&job->traces[t]->info, vars[v]);
      if (val) it[n++] = (struct nsp_an_item){val, t, job->traces[t]->info.rank};
    }
    if (!n) continue;
    int differ = 0;
    for (size_t i = 1; i < n; i++) differ |= strcmp(it[i].value, it[0].value) != 0;
    char extra[200];
    long ws = strtol(it[0].value, NULL, 10);
    if (!differ) {
      int bad = (largest > 0 && ws != largest) || (ws > 0 && ntraced > (size_t)ws) ||
                (largest <= 0 && ws > 0 && ntraced < (size_t)ws);
      /* A job starting up: its other ranks may have no trace yet. */
      if (bad && (ws <= 0 || ntraced < (size_t)ws) && nsp_an_job_starting(job)) bad = 0;
      if (!bad) continue;
    }
    snprintf(extra, sizeof extra, "%zu process%s traced, largest communicator %d ranks", ntraced,
             ntraced == 1 ? "" : "es", largest);
    if (!differ) {
      /* One value that disagrees with the traces: a single side. */
      qsort(it, n, sizeof *it, nsp_an_cmp_item);
      struct nsp_finding_priv *f = nsp_an_new_finding(job, NSP_FIND_ENV_WORLD_SIZE, NULL);
      if (!f) return NSP_AN_ENOMEM;
      NSP_TRY(nsp_an_alloc_sides(f, 1));
      if (!(f->setting_owned = strdup(vars[v]))) return NSP_AN_ENOMEM;
      f->pub.setting = f->setting_owned;
      struct nsp_side *side = &f->sides[0];
      NSP_TRY(nsp_an_side_from_items(job, side, it, n));
      if (!(side->value = strdup(it[0].value))) return NSP_AN_ENOMEM;
      char buf[300];
      snprintf(buf, sizeof buf, "%s=%s", vars[v], it[0].value);
      NSP_TRY(nsp_an_set_side_text(side, buf));
      struct nsp_sbuf b = {0};
      nsp_sbuf_printf(&b, "%s=%s on ", vars[v], it[0].value);
      nsp_an_put_side_ranks(&b, job, &f->pub, side);
      nsp_sbuf_printf(&b, " (");
      nsp_an_put_hosts(&b, side);
      nsp_sbuf_printf(&b, ") but %s", extra);
      NSP_TRY(nsp_an_take_message(f, &b));
    } else {
      NSP_TRY(nsp_an_finding_by_value(job, NSP_FIND_ENV_WORLD_SIZE, NULL, it, n, vars[v], vars[v], extra));
    }
  }
  return 0;
}

static int check(struct nsp_job *job) {
  size_t cap = job->ntraces ? job->ntraces : 1;
  struct nsp_an_item *it = malloc(cap * sizeof *it);
  char(*bufs)[32] = malloc(cap * sizeof *bufs);
  int ret = it && bufs ? 0 : NSP_AN_ENOMEM;
  if (!ret) ret = rule_versions(job, it, bufs);
  if (!ret) ret = rule_settings(job, it);
  if (!ret) ret = rule_world_size(job, it);
  free(it);
  free(bufs);
  return ret;
}

const struct nsp_rule nsp_rule_env_process = {
    .name = "env-process",
    .checks = "values every process should share: NCCL and CUDA versions, the libnccl path, NCCL_* settings, "
              "world sizes",
    .kinds = NSP_RULE_KINDS(NSP_FIND_ENV_NCCL_VERSION, NSP_FIND_ENV_NCCL_PATH, NSP_FIND_ENV_DRIVER,
                            NSP_FIND_ENV_RUNTIME, NSP_FIND_ENV_SETTING, NSP_FIND_ENV_WORLD_SIZE),
    .check = check,
};
