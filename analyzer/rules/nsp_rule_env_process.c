/* nsp_rule_env_process.c - rule 6 of docs/REPORT.md, per process: what
 * differs between the processes of one job that should not (NCCL and CUDA
 * versions, the libnccl path, NCCL_* settings, world sizes).  Each
 * finding's sides group processes by their value (job ranks) and name
 * their ranks and hosts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nsp_launchers.h"
#include "nsp_names.h"
#include "nsp_nccl_settings.h"
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
      if (!nsp_an_is_rank(job, i)) continue; /* a launcher's libnccl is no rank's */
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

/* NCCL_* settings by their class (common/nsp_nccl_settings.h): must
 * match, a finding; per host, a finding when the processes of one host
 * differ, a note when only hosts differ; rank-specific, nothing;
 * diagnostics and names the table lacks, a note.  Other prefixes the
 * snapshot keeps (CUDA_*, TORCH_NCCL_*, NCCLSPY_*) are not compared. */

static int cmp_strp(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

static int same_value(const char *a, const char *b) { return a && b ? !strcmp(a, b) : a == b; }

/* Whether the items differ in value (NULL: unset). */
static int values_differ(const struct nsp_an_item *it, size_t n) {
  for (size_t i = 1; i < n; i++)
    if (!same_value(it[0].value, it[i].value)) return 1;
  return 0;
}

/* Value groups of sorted items: [start, end), ordered by their lowest
 * rank as a finding's sides are. */
struct vgroup {
  size_t start, end;
  int32_t rank;
};
static int cmp_vgroup(const void *pa, const void *pb) {
  const struct vgroup *a = pa, *b = pb;
  return a->rank < b->rank ? -1 : a->rank > b->rank;
}

/* A note: "NAME differs across ranks (WHY): ranks 0,2-3 (host): unset;
 * rank 1 (host): INFO", the items grouped by value as a finding's sides
 * would be. */
static int setting_note(struct nsp_job *job, struct nsp_an_item *it, size_t n, const char *name, const char *why) {
  qsort(it, n, sizeof *it, nsp_an_cmp_item);
  struct vgroup *g = malloc((n ? n : 1) * sizeof *g);
  if (!g) return NSP_AN_ENOMEM;
  size_t ng = 0;
  for (size_t i = 0, j; i < n; i = j) {
    for (j = i + 1; j < n && same_value(it[i].value, it[j].value);) j++;
    int32_t lo = it[i].rank;
    for (size_t q = i; q < j; q++)
      if (it[q].rank < lo) lo = it[q].rank;
    g[ng++] = (struct vgroup){i, j, lo};
  }
  qsort(g, ng, sizeof *g, cmp_vgroup);
  struct nsp_sbuf b = {0};
  nsp_sbuf_printf(&b, "%s differs across ranks (%s): ", name, why);
  int ret = 0;
  for (size_t s = 0; s < ng && !ret; s++) {
    struct nsp_side tmp = {0};
    if ((ret = nsp_an_side_from_items(job, &tmp, it + g[s].start, g[s].end - g[s].start)) < 0) break;
    const char *v = it[g[s].start].value;
    nsp_sbuf_printf(&b, "%s", s ? "; " : "");
    nsp_an_put_job_ranks(&b, job, tmp.ranks, tmp.nranks); /* items carry job ranks */
    nsp_sbuf_printf(&b, " (");
    nsp_an_put_hosts(&b, &tmp);
    nsp_sbuf_printf(&b, "): %s", v ? v : "unset");
    free((void *)tmp.ranks);
    free((void *)tmp.procs);
  }
  free(g);
  if (ret < 0) {
    free(nsp_sbuf_take(&b));
    return ret;
  }
  return nsp_job_note_take(job, &b);
}

static int cmp_item_host(const void *pa, const void *pb, void *ctx) {
  const struct nsp_job *job = ctx;
  const struct nsp_an_item *a = pa, *b = pb;
  int d = strcmp(job->traces[a->trace]->info.host, job->traces[b->trace]->info.host);
  return d ? d : a->trace < b->trace ? -1 : a->trace > b->trace;
}

/* A per-host setting: the processes of the hosts whose processes differ
 * make a finding; hosts that differ only from each other, a note. */
static int host_setting(struct nsp_job *job, struct nsp_an_item *it, size_t n, const char *name) {
  qsort_r(it, n, sizeof *it, cmp_item_host, job);
  size_t k = 0, nhosts = 0;
  char hosts[200] = "";
  for (size_t i = 0, j; i < n; i = j) {
    const char *h = job->traces[it[i].trace]->info.host;
    for (j = i + 1; j < n && !strcmp(job->traces[it[j].trace]->info.host, h);) j++;
    if (!values_differ(it + i, j - i)) continue;
    nhosts++;
    size_t used = strlen(hosts);
    if (used + 1 < sizeof hosts) snprintf(hosts + used, sizeof hosts - used, "%s%s", used ? ", " : "", h);
    memmove(it + k, it + i, (j - i) * sizeof *it);
    k += j - i;
  }
  if (!k) return setting_note(job, it, n, name, "per host, and each host agrees: allowed");
  char extra[300];
  snprintf(extra, sizeof extra, "within %s (%s): it may differ between hosts, not between the processes of one",
           nhosts > 1 ? "hosts" : "one host", hosts);
  return nsp_an_finding_by_value(job, NSP_FIND_ENV_SETTING, NULL, it, k, name, name, extra);
}

static int rule_settings(struct nsp_job *job, struct nsp_an_item *it) {
  const char **names = NULL;
  size_t n = 0, cap = 0;
  for (size_t i = 0; i < job->ntraces; i++) {
    const struct nsp_trace_info *t = &job->traces[i]->info;
    if (!nsp_an_is_rank(job, i)) continue;
    for (size_t e = 0; e < t->nenv; e++) {
      const char *name = t->env[2 * e];
      if (strncmp(name, "NCCL_", 5) || nsp_nccl_setting_class(name, NULL) == NSP_SETTING_RANK) continue;
      if (nsp_grow(&names, &cap, n + 1, sizeof *names) < 0) {
        free(names);
        return NSP_AN_ENOMEM;
      }
      names[n++] = name;
    }
  }
  if (n) qsort(names, n, sizeof *names, cmp_strp);
  int ret = 0;
  for (size_t i = 0; i < n && !ret; i++) {
    if (i && !strcmp(names[i], names[i - 1])) continue;
    size_t k = 0;
    /* A trace that lost its PROCESS record does not say what was set:
     * left out, not counted as unset. */
    for (size_t t = 0; t < job->ntraces; t++)
      if (nsp_an_is_rank(job, t) && job->traces[t]->env_read)
        it[k++] = (struct nsp_an_item){nsp_an_env_value(&job->traces[t]->info, names[i]), t, job->traces[t]->info.rank};
    if (!values_differ(it, k)) continue;
    switch (nsp_nccl_setting_class(names[i], NULL)) {
      case NSP_SETTING_MATCH:
        ret = nsp_an_finding_by_value(job, NSP_FIND_ENV_SETTING, NULL, it, k, names[i], names[i], NULL);
        break;
      case NSP_SETTING_HOST: ret = host_setting(job, it, k, names[i]); break;
      case NSP_SETTING_DIAG: ret = setting_note(job, it, k, names[i], "diagnostics only, not a problem"); break;
      default:
        ret = setting_note(job, it, k, names[i],
                           "a setting ncclspy does not know: it may or may not need to match, see NCCL's "
                           "documentation");
        break;
    }
  }
  free(names);
  return ret;
}

/* Whether every group of processes joined by communicators (separate
 * jobs compared as one: --run all, or alike launcher variables) has ws
 * ranks, and ws-rank communicators at most, as its largest. */
static int groups_match(const struct nsp_job *job, long ws) {
  size_t n = job->ntraces, *group = malloc((n ? n : 1) * sizeof *group);
  size_t ng = group ? nsp_an_comm_groups(job, group) : SIZE_MAX;
  size_t *count = ng != SIZE_MAX ? calloc(ng ? ng : 1, sizeof *count) : NULL;
  int32_t *largest = count ? calloc(ng ? ng : 1, sizeof *largest) : NULL;
  int ok = largest && ng > 1 && ws > 0;
  for (size_t t = 0; ok && t < n; t++) {
    if (!nsp_an_is_rank(job, t)) continue;
    if (group[t] == SIZE_MAX) ok = 0; /* a rank no group holds: count it as today */
    else count[group[t]]++;
  }
  for (size_t m = 0; ok && m < job->nmembers; m++) {
    const struct nsp_member *mb = &job->members[m];
    int32_t nr = job->comms[mb->comm]->info.nranks;
    if (nr > largest[group[mb->trace]]) largest[group[mb->trace]] = nr;
  }
  for (size_t g = 0; ok && g < ng; g++) ok = count[g] == (size_t)ws && largest[g] == ws;
  free(group);
  free(count);
  free(largest);
  return ok;
}

static int rule_world_size(struct nsp_job *job, struct nsp_an_item *it) {
  int32_t largest = 0;
  for (size_t i = 0; i < job->ncomms; i++)
    if (job->comms[i]->info.nranks > largest) largest = job->comms[i]->info.nranks;
  /* Processes that joined no communicator are no ranks (a launcher). */
  size_t ntraced = 0;
  for (size_t t = 0; t < job->ntraces; t++) ntraced += nsp_an_is_rank(job, t) != 0;
  /* The launchers' world-size variables (common/nsp_launchers.h). */
  const struct nsp_launcher_var *lv;
  for (size_t v = 0; (lv = nsp_launcher_var(v)) != NULL; v++) {
    if (lv->role != NSP_LV_SIZE) continue;
    const char *var = lv->name;
    size_t n = 0;
    for (size_t t = 0; t < job->ntraces; t++) {
      if (!nsp_an_is_rank(job, t)) continue;
      const char *val = nsp_an_env_value(&job->traces[t]->info, var);
      if (val) it[n++] = (struct nsp_an_item){val, t, job->traces[t]->info.rank};
    }
    if (!n) continue;
    int differ = 0;
    for (size_t i = 1; i < n; i++) differ |= strcmp(it[i].value, it[0].value) != 0;
    char extra[200];
    long ws = strtol(it[0].value, NULL, 10);
    /* Processes that joined no communicator but carry the same value:
     * ranks stopped before their first NCCL call completed (a job killed
     * while starting), counted among those traced when no communicator
     * was made. */
    size_t nseen = ntraced;
    for (size_t t = 0; !differ && t < job->ntraces; t++) {
      const char *val = nsp_an_is_rank(job, t) ? NULL : nsp_an_env_value(&job->traces[t]->info, var);
      nseen += val && !strcmp(val, it[0].value);
    }
    if (!differ) {
      int bad = (largest > 0 && ws != largest) || (ws > 0 && ntraced > (size_t)ws) ||
                (largest <= 0 && ws > 0 && nseen < (size_t)ws);
      /* A job starting up: its other ranks may have no trace yet. */
      if (bad && (ws <= 0 || ntraced < (size_t)ws) && nsp_an_job_starting(job)) bad = 0;
      /* Jobs compared as one, each of them ws ranks. */
      if (bad && groups_match(job, ws)) bad = 0;
      if (!bad) continue;
    }
    if (largest > 0)
      snprintf(extra, sizeof extra, "%zu %s traced, largest communicator %d %s", ntraced,
               nsp_plural(ntraced, "process", "processes"), largest, nsp_plural((unsigned)largest, "rank", "ranks"));
    else /* nobody's ncclCommInitRank completed */
      snprintf(extra, sizeof extra, "%zu %s traced, no communicator was made", nseen,
               nsp_plural(nseen, "process", "processes"));
    if (!differ) {
      /* One value that disagrees with the traces: a single side. */
      qsort(it, n, sizeof *it, nsp_an_cmp_item);
      struct nsp_finding_priv *f = nsp_an_new_finding(job, NSP_FIND_ENV_WORLD_SIZE, NULL);
      if (!f) return NSP_AN_ENOMEM;
      NSP_TRY(nsp_an_alloc_sides(f, 1));
      if (!(f->setting_owned = strdup(var))) return NSP_AN_ENOMEM;
      f->pub.setting = f->setting_owned;
      struct nsp_side *side = &f->sides[0];
      NSP_TRY(nsp_an_side_from_items(job, side, it, n));
      if (!(side->value = strdup(it[0].value))) return NSP_AN_ENOMEM;
      char buf[300];
      snprintf(buf, sizeof buf, "%s=%s", var, it[0].value);
      NSP_TRY(nsp_an_set_side_text(side, buf));
      struct nsp_sbuf b = {0};
      nsp_sbuf_printf(&b, "%s=%s on ", var, it[0].value);
      nsp_an_put_side_ranks(&b, job, &f->pub, side);
      nsp_sbuf_printf(&b, " (");
      nsp_an_put_hosts(&b, side);
      nsp_sbuf_printf(&b, ") but %s", extra);
      NSP_TRY(nsp_an_take_message(f, &b));
    } else {
      NSP_TRY(nsp_an_finding_by_value(job, NSP_FIND_ENV_WORLD_SIZE, NULL, it, n, var, var, extra));
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
