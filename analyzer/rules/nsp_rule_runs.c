/* nsp_rule_runs.c - how the traces were gathered, checked first: traces
 * of more than one run or attempt in one set (a reused NCCLSPY_DIR,
 * torchrun restarts) would be compared with each other as ranks of one
 * job.  Makes no finding: a note, listed first. */
#include <stdlib.h>
#include <string.h>

#include "nsp_rule.h"

/* Launcher variables that name one run or attempt (the shim records them
 * in the PROCESS record's environment snapshot). */
static const char *const run_vars[] = {"SLURM_JOB_ID",       "SLURM_STEP_ID",
                                       "TORCHELASTIC_RUN_ID", "TORCHELASTIC_RESTART_COUNT",
                                       "MASTER_ADDR",        "MASTER_PORT"};
enum { NVARS = sizeof run_vars / sizeof *run_vars };

/* Traces further apart than this in wall time are not one run even when
 * clocks of different hosts disagree a little. */
#define NSP_RUN_GAP_NS 1000000000LL

/* Appends "s" to the growing string *buf (NULL-safe); -1 when out of memory. */
static int cat(char **buf, const char *s) {
  char *n = nsp_asprintf("%s%s", *buf ? *buf : "", s);
  if (!n) return -1;
  free(*buf);
  *buf = n;
  return 0;
}

/* Moves the last note to the front: the report lists it first. */
static void note_to_front(struct nsp_job *job) {
  char *last = job->notes[job->nnotes - 1];
  memmove(job->notes + 1, job->notes, (job->nnotes - 1) * sizeof *job->notes);
  job->notes[0] = last;
}

static int cmp_start(const void *a, const void *b, void *ctx) {
  struct nsp_trace *const *tr = ctx;
  int64_t x = tr[*(const size_t *)a]->info.realtime_ns, y = tr[*(const size_t *)b]->info.realtime_ns;
  return x < y ? -1 : x > y;
}

/* The note: group[i] is trace i's group (SIZE_MAX: none), labels[g] each
 * group's label. */
static int run_note(struct nsp_job *job, size_t ngroups, const size_t *group, char **labels, const char *why) {
  char *text = NULL;
  int oom = 0;
  for (size_t g = 0; g < ngroups && !oom; g++) {
    size_t shown = 0, n = 0;
    oom |= cat(&text, g ? "; " : "") | cat(&text, labels[g]) | cat(&text, ": ");
    for (size_t i = 0; i < job->ntraces && !oom; i++) {
      if (group[i] != g) continue;
      n++;
      if (shown == 4) continue;
      oom |= cat(&text, shown ? ", " : "") | cat(&text, job->traces[i]->info.path);
      shown++;
    }
    if (n > shown && !oom) {
      char more[48];
      snprintf(more, sizeof more, " and %zu more", n - shown);
      oom |= cat(&text, more);
    }
  }
  if (oom) {
    free(text);
    return NSP_AN_ENOMEM;
  }
  int r = nsp_job_notef(job,
                        "the traces come from %zu different runs or attempts (%s), and are compared as if they "
                        "were one job: %s; give each job (and each restart) a directory of its own "
                        "(NCCLSPY_DIR) and analyse one at a time",
                        ngroups, why, text);
  free(text);
  if (r == 0) note_to_front(job);
  return r;
}

static int by_env(struct nsp_job *job, size_t *group, int *found) {
  /* Which variables differ between traces that recorded an environment. */
  int differs[NVARS] = {0};
  char why[256] = "";
  for (size_t v = 0; v < NVARS; v++) {
    const char *first = NULL;
    int have = 0;
    for (size_t i = 0; i < job->ntraces && !differs[v]; i++) {
      const struct nsp_trace *t = job->traces[i];
      if (!t->info.nenv) continue;
      const char *val = nsp_an_env_value(&t->info, run_vars[v]);
      if (!have) first = val;
      else if ((first == NULL) != (val == NULL) || (val && strcmp(first, val))) differs[v] = 1;
      have = 1;
    }
    if (differs[v]) {
      size_t len = strlen(why);
      snprintf(why + len, sizeof why - len, "%s%s", len ? ", " : "they differ in ", run_vars[v]);
    }
  }
  if (!why[0]) return 0;
  /* Group by the values of those variables. */
  char **keys = calloc(job->ntraces, sizeof *keys);
  if (!keys) return NSP_AN_ENOMEM;
  size_t nkeys = 0;
  int ret = 0;
  for (size_t i = 0; i < job->ntraces && !ret; i++) {
    const struct nsp_trace *t = job->traces[i];
    group[i] = SIZE_MAX;
    if (!t->info.nenv) continue;
    char *key = NULL;
    for (size_t v = 0; v < NVARS && !ret; v++) {
      if (!differs[v]) continue;
      const char *val = nsp_an_env_value(&t->info, run_vars[v]);
      char *part = nsp_asprintf("%s%s=%s", key ? " " : "", run_vars[v], val ? val : "(unset)");
      if (!part || cat(&key, part) < 0) ret = NSP_AN_ENOMEM;
      free(part);
    }
    if (ret) {
      free(key);
      break;
    }
    size_t g = 0;
    while (g < nkeys && strcmp(keys[g], key)) g++;
    if (g == nkeys) keys[nkeys++] = key;
    else free(key);
    group[i] = g;
  }
  if (!ret && nkeys > 1) {
    ret = run_note(job, nkeys, group, keys, why);
    *found = 1;
  }
  for (size_t g = 0; g < nkeys; g++) free(keys[g]);
  free(keys);
  return ret;
}

/* Traces whose time ranges do not overlap at all (with a second to spare
 * for clocks of different hosts) cannot be ranks of one run. */
static int by_time(struct nsp_job *job, size_t *group) {
  size_t *order = malloc(job->ntraces * sizeof *order);
  if (!order) return NSP_AN_ENOMEM;
  size_t n = 0;
  for (size_t i = 0; i < job->ntraces; i++) {
    group[i] = SIZE_MAX;
    const struct nsp_trace *t = job->traces[i];
    if (t->info.records && t->info.end_ns >= t->info.realtime_ns) order[n++] = i;
  }
  qsort_r(order, n, sizeof *order, cmp_start, job->traces);
  size_t ngroups = 0;
  int64_t end = 0;
  for (size_t k = 0; k < n; k++) {
    const struct nsp_trace *t = job->traces[order[k]];
    if (!k || t->info.realtime_ns > end + NSP_RUN_GAP_NS) ngroups++;
    if (!k || t->info.end_ns > end) end = t->info.end_ns;
    group[order[k]] = ngroups - 1;
  }
  int ret = 0;
  if (ngroups > 1) {
    char **labels = calloc(ngroups, sizeof *labels);
    ret = labels ? 0 : NSP_AN_ENOMEM;
    int64_t t0 = job->traces[order[0]]->info.realtime_ns;
    for (size_t k = 0; k < n && !ret; k++) {
      const struct nsp_trace *t = job->traces[order[k]];
      size_t g = group[order[k]];
      if (labels[g]) continue;
      labels[g] = nsp_asprintf("run %zu (from +%.3fs)", g + 1, (double)(t->info.realtime_ns - t0) / 1e9);
      if (!labels[g]) ret = NSP_AN_ENOMEM;
    }
    if (!ret) ret = run_note(job, ngroups, group, labels, "their time ranges do not overlap");
    for (size_t g = 0; labels && g < ngroups; g++) free(labels[g]);
    free(labels);
  }
  free(order);
  return ret;
}

static size_t uf_find(size_t *parent, size_t i) {
  while (parent[i] != i) i = parent[i] = parent[parent[i]];
  return i;
}

/* Ranks of one run share communicators (at least the world, or the one
 * they split from): traces that fall into groups with no communicator in
 * common are separate runs, even when started within a second of each
 * other with the same variables.  Traces in no communicator are left out. */
static int by_comms(struct nsp_job *job, size_t *group) {
  size_t n = job->ntraces;
  size_t *parent = malloc(n * sizeof *parent);
  size_t *first = malloc((job->ncomms ? job->ncomms : 1) * sizeof *first); /* a trace of each comm */
  unsigned char *in = calloc(n, 1);
  if (!parent || !in || !first) {
    free(parent);
    free(in);
    free(first);
    return NSP_AN_ENOMEM;
  }
  for (size_t i = 0; i < n; i++) parent[i] = i;
  for (size_t c = 0; c < job->ncomms; c++) first[c] = SIZE_MAX;
  /* Each member joins its trace to the first trace of its communicator. */
  for (size_t m = 0; m < job->nmembers; m++) {
    size_t c = job->members[m].comm, t = job->members[m].trace;
    if (c >= job->ncomms || t >= n) continue;
    in[t] = 1;
    if (first[c] == SIZE_MAX) first[c] = t;
    else parent[uf_find(parent, t)] = uf_find(parent, first[c]);
  }
  free(first);
  size_t ngroups = 0;
  for (size_t i = 0; i < n; i++) group[i] = SIZE_MAX;
  for (size_t i = 0; i < n; i++) {
    if (!in[i]) continue;
    size_t r = uf_find(parent, i);
    if (group[r] == SIZE_MAX) group[r] = ngroups++;
    group[i] = group[r];
  }
  int ret = 0;
  if (ngroups > 1) {
    char **labels = calloc(ngroups, sizeof *labels);
    ret = labels ? 0 : NSP_AN_ENOMEM;
    for (size_t g = 0; g < ngroups && !ret; g++)
      if (!(labels[g] = nsp_asprintf("run %zu", g + 1))) ret = NSP_AN_ENOMEM;
    if (!ret) ret = run_note(job, ngroups, group, labels, "no communicator has ranks in more than one of them");
    for (size_t g = 0; labels && g < ngroups; g++) free(labels[g]);
    free(labels);
  }
  free(parent);
  free(in);
  return ret;
}

static int check(struct nsp_job *job) {
  if (job->ntraces < 2) return 0;
  size_t *group = malloc(job->ntraces * sizeof *group);
  if (!group) return NSP_AN_ENOMEM;
  int found = 0;
  int ret = by_env(job, group, &found);
  size_t before = job->nnotes;
  if (!ret && !found) ret = by_time(job, group);
  if (!ret && !found && job->nnotes == before) ret = by_comms(job, group);
  free(group);
  return ret;
}

const struct nsp_rule nsp_rule_runs = {
    .name = "runs",
    .checks = "traces of more than one run or attempt: launcher variables, time ranges, communicators shared",
    .check = check, /* makes no finding: a note */
};
