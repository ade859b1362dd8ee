/* nsp_an_runs.c - which run each trace belongs to, and the run analysed
 * (docs/REPORT.md, "Runs").  A reused NCCLSPY_DIR holds the traces of
 * several runs or attempts; comparing them as ranks of one job gives
 * false findings (world sizes, duplicate ranks).  So before the rules the
 * traces are grouped into runs, and unless every run is asked for
 * (nsp_job_select_run "all") only the selected run's traces are read
 * again into a fresh model: the loader unifies communicators across
 * every trace it reads, so the others must not have been read with them.
 *
 * Grouping, communicators first:
 *   - processes that share a communicator (its id, with time ranges that
 *     overlap; 1 s to spare for the clocks of different hosts when their
 *     launcher variables agree) are one run, whatever their launcher
 *     variables say (mpirun under sbatch starts remote nodes through srun:
 *     SLURM_STEP_ID on some nodes only; one rank with a mis-set variable);
 *     ranks of one communicator id further apart in time are separate runs
 *     reusing it (NCCL_COMM_ID);
 *   - groups that share no communicator are one run when they have the
 *     same launcher variables (the PROCESS record's environment snapshot:
 *     torchrun, Slurm, Open MPI, PMIx; run_key; the most common among a
 *     group's processes) and overlap in time, unless those variables name
 *     no launch (none at all, or only torchrun's default run id "none")
 *     and the group's world communicators are complete (every rank
 *     traced): then it is a job of its own (two jobs sharing a
 *     directory).  Groups that do not overlap in time are separate runs;
 *   - runs alike in their variables are told apart by their world
 *     communicator's id (the first communicator a process made from a
 *     unique id: the same on all its ranks), and, where that repeats too
 *     (NCCL_COMM_ID), by the start time.
 * Processes with no communicator (nsp_trace_info.joined 0), or no record,
 * go with the run of the same variables nearest in time. */
#include <stdlib.h>
#include <string.h>

#include "nsp_an_job.h"

/* Ranks of one communicator started further apart than this in wall time
 * (their time ranges do not overlap with this to spare for the clocks of
 * different hosts) are two runs that reuse its id. */
#define NSP_RUN_GAP_NS 1000000000LL

/* a - b for a >= b, saturated at INT64_MAX (hostile times span more). */
static int64_t gap_ns(int64_t a, int64_t b) {
  int64_t d;
  return __builtin_sub_overflow(a, b, &d) ? INT64_MAX : d;
}

/* Appends "s" to the growing string *buf (NULL-safe); -1 when out of memory. */
static int cat(char **buf, const char *s) {
  char *n = nsp_asprintf("%s%s", *buf ? *buf : "", s);
  if (!n) return -1;
  free(*buf);
  *buf = n;
  return 0;
}

/* The launcher part of a trace's run identity: parts joined by '/', ""
 * when its snapshot has none of the variables.  *launch: whether they
 * name one launch (any but torchrun's default run id "none").  NULL when
 * out of memory. */
static char *run_key(const struct nsp_trace_info *t, int *launch) {
  const char *job = nsp_an_env_value(t, "SLURM_JOB_ID"), *step = nsp_an_env_value(t, "SLURM_STEP_ID");
  const char *srestart = nsp_an_env_value(t, "SLURM_RESTART_COUNT");
  const char *ns = nsp_an_env_value(t, "PMIX_NAMESPACE"), *ompi = nsp_an_env_value(t, "OMPI_MCA_ess_base_jobid");
  const char *te = nsp_an_env_value(t, "TORCHELASTIC_RUN_ID"), *trestart = nsp_an_env_value(t, "TORCHELASTIC_RESTART_COUNT");
  char *k = strdup("");
  int oom = !k;
  *launch = job || ns || ompi || (te && strcmp(te, "none"));
  if (job && !oom) {
    char *p = nsp_asprintf("slurm:%s%s%s%s%s", job, step ? "." : "", step ? step : "", srestart ? ":restart=" : "",
                           srestart ? srestart : "");
    oom = !p || cat(&k, p) < 0;
    free(p);
  }
  if (ns && !oom) {
    char *p = nsp_asprintf("%spmix:%s", *k ? "/" : "", ns);
    oom = !p || cat(&k, p) < 0;
    free(p);
  }
  if (ompi && !oom) {
    char *p = nsp_asprintf("%sopenmpi:%s", *k ? "/" : "", ompi);
    oom = !p || cat(&k, p) < 0;
    free(p);
  }
  if ((te || trestart) && !oom) {
    char *p = nsp_asprintf("%storchrun:%s%s%s", *k ? "/" : "", te ? te : "?", trestart ? ":restart=" : "",
                           trestart ? trestart : "");
    oom = !p || cat(&k, p) < 0;
    free(p);
  }
  if (oom) {
    free(k);
    return NULL;
  }
  return k;
}

/* What grouping knows of one trace. */
struct run_tr {
  char *key;
  int launch;     /* key names one launch (run_key) */
  int64_t s, e;   /* wall-clock start (header) and end (latest record) */
  int anchored;   /* a member of some communicator: grouped by communicators */
  size_t parent;  /* union-find */
  size_t run;
  uint64_t world; /* its first communicator made from a unique id; 0 none */
  size_t wcomm;   /* that communicator's index in job->comms; SIZE_MAX none */
};

static size_t uf_find(struct run_tr *v, size_t i) {
  while (v[i].parent != i) i = v[i].parent = v[v[i].parent].parent;
  return i;
}

/* A group of traces joined by communicators, while grouping. */
struct grp {
  const char *key; /* the launcher variables most of its traces have */
  int launch;      /* they name one launch */
  int complete;    /* each of its world communicators has every rank here */
  int64_t s, e;
  size_t run;      /* its own index, then its run's */
};

static int cmp_grp(const void *pa, const void *pb) {
  const struct grp *a = pa, *b = pb;
  int c = strcmp(a->key, b->key);
  if (c) return c;
  return a->s < b->s ? -1 : a->s > b->s;
}

/* A member while grouping: its communicator, trace, and the trace's
 * group (ix). */
struct ct {
  size_t comm, trace, ix;
  int64_t s;
};

/* By communicator, then start, then trace. */
static int cmp_ct(const void *pa, const void *pb) {
  const struct ct *a = pa, *b = pb;
  if (a->comm != b->comm) return a->comm < b->comm ? -1 : 1;
  if (a->s != b->s) return a->s < b->s ? -1 : 1;
  return (a->trace > b->trace) - (a->trace < b->trace);
}

/* By group, then communicator. */
static int cmp_ct_ix(const void *pa, const void *pb) {
  const struct ct *a = pa, *b = pb;
  if (a->ix != b->ix) return a->ix < b->ix ? -1 : 1;
  return (a->comm > b->comm) - (a->comm < b->comm);
}

/* qsort_r order of trace indices (ctx: the traces' run_tr): by group
 * (parent, already flattened), key, index. */
static int cmp_tr_key(const void *pa, const void *pb, void *ctx) {
  const struct run_tr *v = ctx;
  size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
  if (v[a].parent != v[b].parent) return v[a].parent < v[b].parent ? -1 : 1;
  int c = strcmp(v[a].key, v[b].key);
  if (c) return c;
  return (a > b) - (a < b);
}

/* Newest first: latest start, then identity. */
static int cmp_run(const void *pa, const void *pb) {
  const struct nsp_an_run *a = pa, *b = pb;
  if (a->info.start_ns != b->info.start_ns) return a->info.start_ns > b->info.start_ns ? -1 : 1;
  return strcmp(b->id ? b->id : "", a->id ? a->id : "");
}

/* Joins the traces of each communicator whose time ranges overlap (1 s
 * to spare where their launcher variables agree), whatever their
 * variables; ranks of one id apart in time stay apart.  ct: the members,
 * sorted here. */
static void join_by_comms(struct run_tr *v, struct ct *ct, size_t nct) {
  qsort(ct, nct, sizeof *ct, cmp_ct);
  for (size_t i = 0, j; i < nct; i = j) {
    size_t first = ct[i].trace, last = first;
    int64_t end = v[first].e;
    for (j = i + 1; j < nct && ct[j].comm == ct[i].comm; j++) {
      size_t t = ct[j].trace;
      int64_t slack = strcmp(v[t].key, v[last].key) ? 0 : NSP_RUN_GAP_NS;
      if (v[t].s > end && gap_ns(v[t].s, end) > slack) {
        first = last = t;
        end = v[t].e;
        continue;
      }
      v[uf_find(v, t)].parent = uf_find(v, first);
      if (v[t].e > end) {
        end = v[t].e;
        last = t;
      }
    }
  }
}

/* The groups of the anchored traces (order: their indices, na of them):
 * g[k] for each, gi[root] its index; their keys, windows, completeness.
 * Returns how many; ct (the members) is reused. */
static size_t make_groups(const struct nsp_job *job, struct run_tr *v, size_t *order, size_t na, struct grp *g,
                          size_t *gi, struct ct *ct, size_t nct) {
  size_t ng = 0;
  qsort_r(order, na, sizeof *order, cmp_tr_key, v);
  for (size_t k = 0, j; k < na; k = j) {
    size_t root = v[order[k]].parent, best = order[k], nbest = 0;
    g[ng] = (struct grp){v[best].key, v[best].launch, 1, v[best].s, v[best].e, ng};
    for (j = k; j < na && v[order[j]].parent == root;) {
      size_t l = j;
      while (l < na && v[order[l]].parent == root && !strcmp(v[order[l]].key, v[order[j]].key)) {
        size_t t = order[l++];
        if (v[t].s < g[ng].s) g[ng].s = v[t].s;
        if (v[t].e > g[ng].e) g[ng].e = v[t].e;
        if (v[t].wcomm == SIZE_MAX) g[ng].complete = 0; /* its world is not traced */
      }
      if (l - j > nbest || (l - j == nbest && order[j] < best)) { /* a tie: the lowest trace's */
        nbest = l - j;
        best = order[j];
      }
      j = l;
    }
    g[ng].key = v[best].key;
    g[ng].launch = v[best].launch;
    gi[root] = ng++;
  }
  /* Complete: each world communicator's members in the group are its nranks. */
  size_t nw = 0;
  for (size_t i = 0; i < nct; i++)
    if (ct[i].comm == v[ct[i].trace].wcomm) ct[nw++] = (struct ct){ct[i].comm, ct[i].trace, gi[v[ct[i].trace].parent], 0};
  qsort(ct, nw, sizeof *ct, cmp_ct_ix);
  for (size_t i = 0, j; i < nw; i = j) {
    for (j = i + 1; j < nw && ct[j].ix == ct[i].ix && ct[j].comm == ct[i].comm;) j++;
    if ((int64_t)(j - i) != job->comms[ct[i].comm]->info.nranks) g[ct[i].ix].complete = 0;
  }
  return ng;
}

/* Groups into runs (g[k].run): those of one key that overlap in time are
 * one, except a complete group whose key names no launch (a job of its
 * own beside another in one directory).  Returns how many runs. */
static size_t merge_groups(struct grp *g, size_t ng, struct grp *sorted, size_t *grun) {
  memcpy(sorted, g, ng * sizeof *g);
  qsort(sorted, ng, sizeof *sorted, cmp_grp);
  size_t nr = 0, cur = 0;
  int open = 0;
  int64_t end = 0;
  for (size_t i = 0; i < ng; i++) {
    if (i && strcmp(sorted[i].key, sorted[i - 1].key)) open = 0;
    if (!sorted[i].launch && sorted[i].complete) {
      grun[sorted[i].run] = nr++;
      continue;
    }
    if (!open || sorted[i].s > end) {
      cur = nr++;
      open = 1;
      end = sorted[i].e;
    } else if (sorted[i].e > end) {
      end = sorted[i].e;
    }
    grun[sorted[i].run] = cur;
  }
  return nr;
}

/* Groups the traces into runs: v[i].run for every trace, job->runs
 * (unsorted, ids not yet made), *rkey_out each run's launcher key (NULL
 * where no trace of it is anchored; pointing into v).  0 or
 * NSP_AN_ENOMEM. */
static int group(struct nsp_job *job, struct run_tr *v, const char ***rkey_out) {
  size_t n = job->ntraces, nm = job->nmembers;
  struct ct *ct = malloc((nm ? nm : 1) * sizeof *ct);
  size_t *order = malloc((n ? n : 1) * sizeof *order), *gi = malloc((n ? n : 1) * sizeof *gi);
  size_t *grun = malloc((n ? n : 1) * sizeof *grun);
  struct grp *g = malloc((n ? n : 1) * sizeof *g), *sorted = malloc((n ? n : 1) * sizeof *sorted);
  int ret = ct && order && gi && grun && g && sorted ? 0 : NSP_AN_ENOMEM;
  size_t nct = 0, na = 0, ng = 0, nr = 0;
  for (size_t m = 0; !ret && m < nm; m++) {
    size_t c = job->members[m].comm, t = job->members[m].trace;
    if (c >= job->ncomms || t >= n) continue;
    v[t].anchored = 1;
    ct[nct++] = (struct ct){c, t, 0, v[t].s};
  }
  if (!ret) join_by_comms(v, ct, nct);
  for (size_t i = 0; !ret && i < n; i++) v[i].parent = uf_find(v, i); /* flat */
  for (size_t i = 0; !ret && i < n; i++)
    if (v[i].anchored) order[na++] = i;
  if (!ret) {
    /* The members again: join_by_comms sorted them, make_groups reuses them. */
    nct = 0;
    for (size_t m = 0; m < nm; m++)
      if (job->members[m].comm < job->ncomms && job->members[m].trace < n)
        ct[nct++] = (struct ct){job->members[m].comm, job->members[m].trace, 0, 0};
    ng = make_groups(job, v, order, na, g, gi, ct, nct);
    nr = merge_groups(g, ng, sorted, grun);
    for (size_t k = 0; k < na; k++) v[order[k]].run = grun[gi[v[order[k]].parent]];
  }
  free(sorted);
  free(ct);
  free(gi);
  /* The runs. */
  size_t cap = 0;
  if (!ret && nsp_grow(&job->runs, &cap, nr ? nr : 1, sizeof *job->runs) < 0) ret = NSP_AN_ENOMEM;
  if (!ret) {
    memset(job->runs, 0, (nr ? nr : 1) * sizeof *job->runs);
    job->nruns = nr;
  }
  /* The window and key of each run, from its anchored traces. */
  const char **rkey = ret ? NULL : calloc(nr ? nr : 1, sizeof *rkey);
  if (!ret && !rkey) ret = NSP_AN_ENOMEM;
  for (size_t k = 0; !ret && k < ng; k++) rkey[grun[k]] = g[k].key;
  for (size_t r = 0; !ret && r < nr; r++) {
    job->runs[r].info.start_ns = INT64_MAX; /* every run has an anchored trace */
    job->runs[r].info.end_ns = INT64_MIN;
  }
  for (size_t i = 0; !ret && i < n; i++) {
    if (!v[i].anchored) continue;
    struct nsp_run_info *r = &job->runs[v[i].run].info;
    if (v[i].s < r->start_ns) r->start_ns = v[i].s;
    if (v[i].e > r->end_ns) r->end_ns = v[i].e;
  }
  free(grun);
  free(g);
  /* The others: the run of their key nearest in time (any run when none
   * has their key; the newest on a tie); all one run when none is anchored. */
  if (!ret && !nr) {
    job->nruns = 1;
    for (size_t i = 0; i < n; i++) v[i].run = 0;
  }
  for (size_t i = 0; !ret && nr && i < n; i++) {
    if (v[i].anchored) continue;
    size_t best = SIZE_MAX;
    int64_t best_d = 0;
    for (int pass = 0; pass < 2 && best == SIZE_MAX; pass++)
      for (size_t r = 0; r < nr; r++) {
        if (!pass && strcmp(rkey[r], v[i].key)) continue;
        const struct nsp_run_info *ri = &job->runs[r].info;
        int64_t d = v[i].e < ri->start_ns ? gap_ns(ri->start_ns, v[i].e) : v[i].s > ri->end_ns ? gap_ns(v[i].s, ri->end_ns) : 0;
        if (best == SIZE_MAX || d < best_d || (d == best_d && ri->start_ns > job->runs[best].info.start_ns)) {
          best = r;
          best_d = d;
        }
      }
    v[i].run = best;
  }
  free(order);
  if (ret) {
    free(rkey);
    rkey = NULL;
  }
  *rkey_out = rkey;
  return ret;
}

/* The traces of each run, in trace order: by[at[r]..at[r + 1]) (one pass
 * per run over every trace is quadratic in runs and traces).  NULL when
 * out of memory (*at_out is the caller's to free either way). */
static size_t *traces_by_run(const struct nsp_job *job, const struct run_tr *v, size_t **at_out) {
  size_t n = job->ntraces, nr = job->nruns;
  size_t *at = calloc(nr + 1, sizeof *at), *by = malloc((n ? n : 1) * sizeof *by);
  *at_out = at;
  if (!at || !by) {
    free(by);
    return NULL;
  }
  for (size_t i = 0; i < n; i++) at[v[i].run + 1]++;
  for (size_t r = 0; r < nr; r++) at[r + 1] += at[r];
  for (size_t i = 0; i < n; i++) by[at[v[i].run]++] = i;
  for (size_t r = nr; r > 0; r--) at[r] = at[r - 1]; /* each run's start again */
  at[0] = 0;
  return by;
}

/* qsort_r order of run indices (ctx: job->runs): by id, then index. */
static int cmp_run_id(const void *pa, const void *pb, void *ctx) {
  const struct nsp_an_run *runs = ctx;
  size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
  int c = strcmp(runs[a].id, runs[b].id);
  return c ? c : (a > b) - (a < b);
}

/* dup[r]: run r's id is another run's too (or, with empty_too, is
 * empty).  By sorting the ids, not comparing each pair of runs.  0 or
 * NSP_AN_ENOMEM. */
static int mark_dup_ids(const struct nsp_job *job, unsigned char *dup, int empty_too) {
  size_t nr = job->nruns;
  size_t *o = malloc((nr ? nr : 1) * sizeof *o);
  if (!o) return NSP_AN_ENOMEM;
  for (size_t r = 0; r < nr; r++) o[r] = r;
  qsort_r(o, nr, sizeof *o, cmp_run_id, job->runs);
  for (size_t i = 0, j; i < nr; i = j) {
    for (j = i + 1; j < nr && !strcmp(job->runs[o[j]].id, job->runs[o[i]].id);) j++;
    for (size_t q = i; q < j; q++) dup[o[q]] = j - i > 1 || (empty_too && !job->runs[o[q]].id[0]);
  }
  free(o);
  return 0;
}

/* Each run's counts, window (its ranks'), and identity (at, by: its
 * traces, traces_by_run). */
static int describe_runs(struct nsp_job *job, struct run_tr *v, const char **rkey, const size_t *at, const size_t *by) {
  for (size_t r = 0; r < job->nruns; r++) {
    struct nsp_run_info *ri = &job->runs[r].info;
    ri->start_ns = ri->end_ns = 0;
    int have = 0, ranks_only = 0;
    for (size_t x = at[r]; x < at[r + 1]; x++) ranks_only |= job->traces[by[x]]->info.joined;
    for (size_t x = at[r]; x < at[r + 1]; x++) {
      size_t i = by[x];
      ri->nprocs++;
      ri->nranks += job->traces[i]->info.joined != 0;
      if (v[i].e > ri->end_ns) ri->end_ns = v[i].e;
      if (ranks_only && !job->traces[i]->info.joined) continue;
      if (!have || v[i].s < ri->start_ns) ri->start_ns = v[i].s;
      have = 1;
    }
    /* Launcher key of the run: the one most of its ranks have, or its
     * first trace's when none is anchored. */
    const char *key = rkey && rkey[r] ? rkey[r] : "";
    if (!(rkey && rkey[r]) && at[r] < at[r + 1]) key = v[by[at[r]]].key;
    job->runs[r].id = strdup(key);
    if (!job->runs[r].id) return NSP_AN_ENOMEM;
    ri->id = job->runs[r].id;
  }
  /* Identities that repeat (or are empty) take the world communicator's
   * id; those that still repeat, the start time. */
  unsigned char *dup = calloc(job->nruns ? job->nruns : 1, 1);
  if (!dup) return NSP_AN_ENOMEM;
  for (int pass = 0; pass < 2; pass++) {
    if (mark_dup_ids(job, dup, pass == 0) < 0) {
      free(dup);
      return NSP_AN_ENOMEM;
    }
    for (size_t r = 0; r < job->nruns; r++) {
      if (!dup[r]) continue;
      char part[64];
      if (pass == 0) {
        uint64_t world = 0;
        int64_t s = 0;
        for (size_t x = at[r]; x < at[r + 1]; x++) {
          size_t i = by[x];
          if (v[i].world && (!world || v[i].s < s)) {
            world = v[i].world;
            s = v[i].s;
          }
        }
        if (world) snprintf(part, sizeof part, "comm:%016llx", (unsigned long long)world);
        else snprintf(part, sizeof part, "comm:none");
      } else {
        char tb[48];
        nsp_an_utc_text(tb, sizeof tb, job->runs[r].info.start_ns);
        snprintf(part, sizeof part, "@%s", tb);
      }
      char *id = nsp_asprintf("%s%s%s", job->runs[r].id, job->runs[r].id[0] && pass == 0 ? "/" : "", part);
      if (!id) {
        free(dup);
        return NSP_AN_ENOMEM;
      }
      free(job->runs[r].id);
      job->runs[r].id = id;
      job->runs[r].info.id = id;
    }
  }
  free(dup);
  return 0;
}

static int describe(struct nsp_job *job, struct run_tr *v, const char **rkey) {
  size_t *at, *by = traces_by_run(job, v, &at);
  int ret = by ? describe_runs(job, v, rkey, at, by) : NSP_AN_ENOMEM;
  free(at);
  free(by);
  return ret;
}

/* Whether sel is a prefix of run id `id` or of one of its '/'-separated parts. */
static int run_named(const char *id, const char *sel) {
  size_t len = strlen(sel);
  for (const char *p = id; p; p = strchr(p, '/') ? strchr(p, '/') + 1 : NULL)
    if (!strncmp(p, sel, len)) return 1;
  return 0;
}

/* The run `sel` names: its index, or SIZE_MAX (job->err says why). */
static size_t find_run(struct nsp_job *job, const char *sel) {
  if (!sel || !*sel) return 0;
  for (size_t r = 0; r < job->nruns; r++)
    if (!strcmp(job->runs[r].id, sel)) return r;
  char *end;
  unsigned long k = strtoul(sel, &end, 10);
  if (sel[0] >= '0' && sel[0] <= '9' && !*end) {
    if (k >= 1 && k <= job->nruns) return k - 1;
  } else {
    size_t found = SIZE_MAX, nfound = 0;
    for (size_t r = 0; r < job->nruns; r++)
      if (run_named(job->runs[r].id, sel)) {
        found = r;
        nfound++;
      }
    if (nfound == 1) return found;
    if (nfound > 1) {
      /* Only the runs it names, with their numbers in the newest-first list. */
      size_t l = (size_t)snprintf(job->err, sizeof job->err, "--run %s names %zu runs:", sel, nfound);
      for (size_t r = 0; r < job->nruns && l < sizeof job->err; r++)
        if (run_named(job->runs[r].id, sel))
          l += (size_t)snprintf(job->err + l, sizeof job->err - l, " %zu. %s", r + 1, job->runs[r].id);
      return SIZE_MAX;
    }
  }
  size_t l = (size_t)snprintf(job->err, sizeof job->err, "--run %s: no such run; the traces hold %zu (newest first):",
                              sel, job->nruns);
  for (size_t r = 0; r < job->nruns && l < sizeof job->err; r++)
    l += (size_t)snprintf(job->err + l, sizeof job->err - l, " %zu. %s", r + 1, job->runs[r].id);
  return SIZE_MAX;
}

/* Reads the selected run's traces (sel[i] set) again into an empty model;
 * the notes that name no trace (files not read at all) stay. */
static int reload(struct nsp_job *job, const unsigned char *sel) {
  size_t n = job->ntraces, nk = 0;
  char **paths = calloc(n ? n : 1, sizeof *paths);
  uint8_t **mems = calloc(n ? n : 1, sizeof *mems);
  size_t *lens = calloc(n ? n : 1, sizeof *lens);
  if (!paths || !mems || !lens) {
    free(paths);
    free(mems);
    free(lens);
    return NSP_AN_ENOMEM;
  }
  int ret = 0;
  uint64_t bytes = 0;
  for (size_t i = 0; i < n && !ret; i++) {
    if (!sel[i]) continue;
    struct nsp_trace *t = job->traces[i];
    if (!(paths[nk] = strdup(t->path))) ret = NSP_AN_ENOMEM;
    mems[nk] = t->mem;
    bytes += t->size;
    lens[nk++] = t->mem_len;
    t->mem = NULL;
  }
  /* Notes that name a trace are its load's: dropped with it, or made again. */
  size_t kept = 0;
  for (size_t k = 0; k < job->nnotes; k++) {
    int of_trace = 0;
    for (size_t i = 0; i < n && !of_trace; i++) of_trace = strstr(job->notes[k], job->traces[i]->path) != NULL;
    if (of_trace) free(job->notes[k]);
    else job->notes[kept++] = job->notes[k];
  }
  job->nnotes = kept;
  for (size_t i = 0; i < n; i++) nsp_an_trace_free(job->traces[i]);
  job->ntraces = 0;
  for (size_t i = 0; i < job->ncomms; i++) nsp_an_comm_free(job->comms[i]);
  job->ncomms = 0;
  nsp_u64map_free(&job->comm_by_id);
  memset(&job->comm_by_id, 0, sizeof job->comm_by_id);
  nsp_u64map_free(&job->trace_by_process);
  memset(&job->trace_by_process, 0, sizeof job->trace_by_process);
  for (size_t i = 0; i < job->nmembers; i++) nsp_an_member_free(&job->members[i]);
  job->nmembers = 0;
  nsp_an_progress_phase(job, NSP_PROGRESS_REREAD, nk, bytes);
  if (ret) {
    for (size_t k = 0; k < nk; k++) free(mems[k]);
  } else {
    ret = nsp_an_load_traces(job, nk, (const char *const *)paths, mems, lens, NULL, NULL); /* takes mems[k] */
  }
  for (size_t k = 0; k < nk; k++) free(paths[k]);
  free(paths);
  free(mems);
  free(lens);
  return ret;
}

int nsp_an_select_run(struct nsp_job *job) {
  size_t n = job->ntraces;
  if (!n) return 0;
  nsp_an_mark_joined(job);
  struct run_tr *v = calloc(n, sizeof *v);
  if (!v) return NSP_AN_ENOMEM;
  int ret = 0;
  for (size_t i = 0; i < n && !ret; i++) {
    const struct nsp_trace *t = job->traces[i];
    v[i].parent = i;
    v[i].s = t->info.realtime_ns;
    v[i].e = t->info.end_ns > v[i].s ? t->info.end_ns : v[i].s;
    v[i].wcomm = SIZE_MAX;
    if (!(v[i].key = run_key(&t->info, &v[i].launch))) ret = NSP_AN_ENOMEM;
  }
  /* The world of each trace: its first member of a communicator with no
   * parent (the loader numbers a trace's communicators in creation order). */
  uint32_t *wlocal = ret ? NULL : calloc(n, sizeof *wlocal);
  if (!ret && !wlocal) ret = NSP_AN_ENOMEM;
  for (size_t m = 0; !ret && m < job->nmembers; m++) {
    const struct nsp_member *mb = &job->members[m];
    const struct nsp_an_comm *c = job->comms[mb->comm];
    if (c->info.parent_id || !c->info.id) continue;
    if (!v[mb->trace].world || mb->local < wlocal[mb->trace]) {
      v[mb->trace].world = c->info.id;
      v[mb->trace].wcomm = mb->comm;
      wlocal[mb->trace] = mb->local;
    }
  }
  free(wlocal);
  const char **rkey = NULL;
  if (!ret) ret = group(job, v, &rkey);
  if (!ret) ret = describe(job, v, rkey);
  free(rkey);
  /* Newest first; the traces follow their run to its new place. */
  size_t *pos = ret ? NULL : malloc(job->nruns * sizeof *pos);
  if (!ret && !pos) ret = NSP_AN_ENOMEM;
  if (!ret) {
    /* Sorted with their old index carried in `analyzed` for the remap. */
    for (size_t r = 0; r < job->nruns; r++) job->runs[r].info.analyzed = (int)r;
    qsort(job->runs, job->nruns, sizeof *job->runs, cmp_run);
    for (size_t r = 0; r < job->nruns; r++) {
      pos[job->runs[r].info.analyzed] = r;
      job->runs[r].info.analyzed = 0;
    }
    for (size_t i = 0; i < n; i++) v[i].run = pos[v[i].run];
  }
  free(pos);
  size_t chosen = 0;
  unsigned char *sel = NULL;
  if (!ret && !job->run_all) {
    chosen = find_run(job, job->run_sel);
    if (chosen == SIZE_MAX) ret = NSP_AN_EINVAL;
  }
  if (!ret && (job->run_all || job->nruns == 1)) {
    for (size_t r = 0; r < job->nruns; r++) job->runs[r].info.analyzed = 1;
    if (job->reread_all) { /* loads stepped over frames judged apart: all again, as one (nsp_an_index.c) */
      job->reread_all = 0;
      sel = calloc(n, 1);
      if (!sel) ret = NSP_AN_ENOMEM;
      for (size_t i = 0; !ret && i < n; i++) sel[i] = 1;
      if (!ret) ret = reload(job, sel);
      if (!ret) nsp_an_mark_joined(job);
      for (size_t i = 0; !ret && i < job->ntraces && i < n; i++) job->traces[i]->info.run_id = job->runs[v[i].run].id;
    } else {
      for (size_t i = 0; i < n; i++) job->traces[i]->info.run_id = job->runs[v[i].run].id;
    }
  } else if (!ret) {
    job->runs[chosen].info.analyzed = 1;
    sel = calloc(n, 1);
    if (!sel) ret = NSP_AN_ENOMEM;
    for (size_t i = 0; !ret && i < n; i++) sel[i] = v[i].run == chosen;
    if (!ret) ret = reload(job, sel);
    if (!ret) nsp_an_mark_joined(job);
    for (size_t i = 0; !ret && i < job->ntraces; i++) job->traces[i]->info.run_id = job->runs[chosen].id;
  }
  free(sel);
  for (size_t i = 0; i < n; i++) free(v[i].key);
  free(v);
  return ret;
}
