/* nsp_an_runs.c - which run each trace belongs to, and the run analysed
 * (docs/REPORT.md, "Runs").  A reused NCCLSPY_DIR holds the traces of
 * several runs or attempts; comparing them as ranks of one job gives
 * false findings (world sizes, duplicate ranks).  So before the rules the
 * traces are grouped into runs, and unless every run is asked for
 * (nsp_job_select_run "all") only the selected run's traces are read
 * again into a fresh model: the loader unifies communicators across
 * every trace it reads, so the others must not have been read with them.
 *
 * A run's identity:
 *   - the launcher variables of the PROCESS record's environment snapshot
 *     (torchrun, Slurm, Open MPI, PMIx: run_key), the same on every
 *     process of one launch;
 *   - processes with the same variables (none at all included) are one
 *     run when they share communicators (union over members), or when
 *     such groups overlap in time; groups that do not overlap in time are
 *     separate runs (torchrun's TORCHELASTIC_RUN_ID is "none" unless
 *     --rdzv-id is given: back-to-back jobs look alike);
 *   - such runs are told apart by their world communicator's id (the
 *     first communicator a process made from a unique id: the same on all
 *     its ranks), and, where that repeats too (NCCL_COMM_ID), by the
 *     start time.
 * Processes with no communicator (nsp_trace_info.joined 0), or no record,
 * go with the run of the same variables nearest in time. */
#include <stdlib.h>
#include <string.h>

#include "nsp_an_job.h"

/* Ranks of one communicator started further apart than this in wall time
 * (their time ranges do not overlap with this to spare for the clocks of
 * different hosts) are two runs that reuse its id. */
#define NSP_RUN_GAP_NS 1000000000LL

/* Appends "s" to the growing string *buf (NULL-safe); -1 when out of memory. */
/* a - b for a >= b, saturated at INT64_MAX (hostile times span more). */
static int64_t gap_ns(int64_t a, int64_t b) {
  int64_t d;
  return __builtin_sub_overflow(a, b, &d) ? INT64_MAX : d;
}

static int cat(char **buf, const char *s) {
  char *n = nsp_asprintf("%s%s", *buf ? *buf : "", s);
  if (!n) return -1;
  free(*buf);
  *buf = n;
  return 0;
}

/* The launcher part of a trace's run identity: parts joined by '/', ""
 * when its snapshot has none of the variables.  NULL when out of memory. */
static char *run_key(const struct nsp_trace_info *t) {
  const char *job = nsp_an_env_value(t, "SLURM_JOB_ID"), *step = nsp_an_env_value(t, "SLURM_STEP_ID");
  const char *srestart = nsp_an_env_value(t, "SLURM_RESTART_COUNT");
  const char *ns = nsp_an_env_value(t, "PMIX_NAMESPACE"), *ompi = nsp_an_env_value(t, "OMPI_MCA_ess_base_jobid");
  const char *te = nsp_an_env_value(t, "TORCHELASTIC_RUN_ID"), *trestart = nsp_an_env_value(t, "TORCHELASTIC_RESTART_COUNT");
  char *k = strdup("");
  int oom = !k;
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
  int64_t s, e;   /* wall-clock start (header) and end (latest record) */
  int anchored;   /* a member of some communicator: grouped by communicators */
  size_t parent;  /* union-find */
  size_t run;
  uint64_t world; /* its first communicator made from a unique id; 0 none */
};

static size_t uf_find(struct run_tr *v, size_t i) {
  while (v[i].parent != i) i = v[i].parent = v[v[i].parent].parent;
  return i;
}

/* A group of anchored traces while grouping. */
struct grp {
  size_t root;    /* its first trace */
  const char *key;
  int64_t s, e;
  size_t run;
};

static int cmp_grp(const void *pa, const void *pb) {
  const struct grp *a = pa, *b = pb;
  int c = strcmp(a->key, b->key);
  if (c) return c;
  return a->s < b->s ? -1 : a->s > b->s;
}

/* qsort_r order of trace indices (ctx: the traces' run_tr): by group
 * (parent, already flattened), start, index. */
static int cmp_tr_start(const void *pa, const void *pb, void *ctx) {
  const struct run_tr *v = ctx;
  size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
  if (v[a].parent != v[b].parent) return v[a].parent < v[b].parent ? -1 : 1;
  if (v[a].s != v[b].s) return v[a].s < v[b].s ? -1 : 1;
  return (a > b) - (a < b);
}

/* Newest first: latest start, then identity. */
static int cmp_run(const void *pa, const void *pb) {
  const struct nsp_an_run *a = pa, *b = pb;
  if (a->info.start_ns != b->info.start_ns) return a->info.start_ns > b->info.start_ns ? -1 : 1;
  return strcmp(b->id ? b->id : "", a->id ? a->id : "");
}


/* Groups the traces into runs: v[i].run for every trace, job->runs
 * (unsorted, ids not yet made).  0 or NSP_AN_ENOMEM. */
static int group(struct nsp_job *job, struct run_tr *v) {
  size_t n = job->ntraces;
  /* Communicators join the traces of one key they have members in. */
  size_t *first = malloc((job->ncomms ? job->ncomms : 1) * sizeof *first);
  size_t *order = malloc((n ? n : 1) * sizeof *order);
  struct grp *g = malloc((n ? n : 1) * sizeof *g);
  int ret = first && order && g ? 0 : NSP_AN_ENOMEM;
  for (size_t c = 0; !ret && c < job->ncomms; c++) first[c] = SIZE_MAX;
  for (size_t m = 0; !ret && m < job->nmembers; m++) {
    size_t c = job->members[m].comm, t = job->members[m].trace;
    if (c >= job->ncomms || t >= n) continue;
    v[t].anchored = 1;
    if (first[c] == SIZE_MAX) first[c] = t;
    else if (!strcmp(v[t].key, v[first[c]].key)) v[uf_find(v, t)].parent = uf_find(v, first[c]);
  }
  /* Within a group, traces whose time ranges do not touch (1 s to spare)
   * are separate runs reusing one communicator id: split it. */
  size_t na = 0, ng = 0;
  for (size_t i = 0; !ret && i < n; i++) v[i].parent = uf_find(v, i); /* flat, for the order */
  for (size_t i = 0; !ret && i < n; i++)
    if (v[i].anchored) order[na++] = i;
  if (!ret) qsort_r(order, na, sizeof *order, cmp_tr_start, v);
  for (size_t k = 0; !ret && k < na; k++) {
    size_t t = order[k];
    int same = ng && v[g[ng - 1].root].parent == v[t].parent;
    if (!same || (v[t].s > g[ng - 1].e && gap_ns(v[t].s, g[ng - 1].e) > NSP_RUN_GAP_NS)) {
      g[ng] = (struct grp){t, v[t].key, v[t].s, v[t].e, 0};
      ng++;
    } else if (v[t].e > g[ng - 1].e) {
      g[ng - 1].e = v[t].e;
    }
    v[t].run = ng - 1; /* group index for now */
  }
  /* Groups of one key whose time ranges overlap are one run (processes of
   * one launch that share no communicator). */
  size_t *grun = malloc((ng ? ng : 1) * sizeof *grun);
  if (!ret && !grun) ret = NSP_AN_ENOMEM;
  for (size_t i = 0; !ret && i < ng; i++) g[i].run = i;
  struct grp *sorted = ret ? NULL : malloc((ng ? ng : 1) * sizeof *sorted);
  if (!ret && !sorted) ret = NSP_AN_ENOMEM;
  size_t nr = 0;
  if (!ret) {
    memcpy(sorted, g, ng * sizeof *g);
    qsort(sorted, ng, sizeof *sorted, cmp_grp);
    int64_t end = 0;
    for (size_t i = 0; i < ng; i++) {
      if (!i || strcmp(sorted[i].key, sorted[i - 1].key) || sorted[i].s > end) {
        nr++;
        end = sorted[i].e;
      } else if (sorted[i].e > end) {
        end = sorted[i].e;
      }
      grun[sorted[i].run] = nr - 1;
    }
    for (size_t k = 0; k < na; k++) v[order[k]].run = grun[v[order[k]].run];
  }
  free(sorted);
  free(grun);
  free(g);
  free(first);
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
  for (size_t i = 0; !ret && i < n; i++) {
    if (!v[i].anchored) continue;
    struct nsp_run_info *r = &job->runs[v[i].run].info;
    if (!rkey[v[i].run] || v[i].s < r->start_ns) r->start_ns = v[i].s;
    if (v[i].e > r->end_ns) r->end_ns = v[i].e;
    rkey[v[i].run] = v[i].key;
  }
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
  free(rkey);
  free(order);
  return ret;
}

/* Each run's counts, window (its ranks'), and identity. */
static int describe(struct nsp_job *job, struct run_tr *v) {
  size_t n = job->ntraces;
  for (size_t r = 0; r < job->nruns; r++) {
    struct nsp_run_info *ri = &job->runs[r].info;
    ri->start_ns = ri->end_ns = 0;
    int have = 0, ranks_only = 0;
    for (size_t i = 0; i < n; i++) ranks_only |= v[i].run == r && job->traces[i]->info.joined;
    for (size_t i = 0; i < n; i++) {
      if (v[i].run != r) continue;
      ri->nprocs++;
      ri->nranks += job->traces[i]->info.joined != 0;
      if (v[i].e > ri->end_ns) ri->end_ns = v[i].e;
      if (ranks_only && !job->traces[i]->info.joined) continue;
      if (!have || v[i].s < ri->start_ns) ri->start_ns = v[i].s;
      have = 1;
    }
    /* Launcher key of the run: its ranks' (the first such trace's). */
    const char *key = "";
    for (size_t i = 0; i < n; i++)
      if (v[i].run == r && (!ranks_only || job->traces[i]->info.joined)) {
        key = v[i].key;
        break;
      }
    job->runs[r].id = strdup(key);
    if (!job->runs[r].id) return NSP_AN_ENOMEM;
    ri->id = job->runs[r].id;
  }
  /* Identities that repeat (or are empty) take the world communicator's
   * id; those that still repeat, the start time. */
  unsigned char *dup = calloc(job->nruns ? job->nruns : 1, 1);
  if (!dup) return NSP_AN_ENOMEM;
  for (int pass = 0; pass < 2; pass++) {
    for (size_t r = 0; r < job->nruns; r++) {
      dup[r] = !job->runs[r].id[0] && pass == 0;
      for (size_t q = 0; q < job->nruns && !dup[r]; q++) dup[r] = q != r && !strcmp(job->runs[q].id, job->runs[r].id);
    }
    for (size_t r = 0; r < job->nruns; r++) {
      if (!dup[r]) continue;
      char part[64];
      if (pass == 0) {
        uint64_t world = 0;
        int64_t s = 0;
        for (size_t i = 0; i < n; i++)
          if (v[i].run == r && v[i].world && (!world || v[i].s < s)) {
            world = v[i].world;
            s = v[i].s;
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
    size_t found = SIZE_MAX, nfound = 0, len = strlen(sel);
    for (size_t r = 0; r < job->nruns; r++) {
      int hit = 0;
      for (const char *p = job->runs[r].id; p && !hit; p = strchr(p, '/') ? strchr(p, '/') + 1 : NULL)
        hit = !strncmp(p, sel, len);
      if (hit) {
        found = r;
        nfound++;
      }
    }
    if (nfound == 1) return found;
    if (nfound > 1) {
      size_t l = (size_t)snprintf(job->err, sizeof job->err, "--run %s names %zu runs:", sel, nfound);
      for (size_t r = 0; r < job->nruns && l < sizeof job->err; r++)
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
  for (size_t i = 0; i < n && !ret; i++) {
    if (!sel[i]) continue;
    struct nsp_trace *t = job->traces[i];
    if (!(paths[nk] = strdup(t->path))) ret = NSP_AN_ENOMEM;
    mems[nk] = t->mem;
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
  for (size_t i = 0; i < job->nmembers; i++) nsp_an_member_free(&job->members[i]);
  job->nmembers = 0;
  for (size_t k = 0; k < nk; k++) {
    int r = ret ? 0 : nsp_an_load_trace(job, paths[k], mems[k], lens[k]); /* takes mems[k] */
    if (ret) free(mems[k]);
    if (r == NSP_AN_ENOMEM) ret = r;
    free(paths[k]);
  }
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
    if (!(v[i].key = run_key(&t->info))) ret = NSP_AN_ENOMEM;
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
      wlocal[mb->trace] = mb->local;
    }
  }
  free(wlocal);
  if (!ret) ret = group(job, v);
  if (!ret) ret = describe(job, v);
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
    for (size_t i = 0; i < n; i++) job->traces[i]->info.run_id = job->runs[v[i].run].id;
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
