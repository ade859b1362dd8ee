/* nsp_an_env.c - the environment section: what differs between the
 * processes of one job that should not (NCCL and CUDA versions, library
 * paths, NCCL_* settings, world sizes), and communicators whose members
 * do not add up (two ranks on one GPU, a rank claimed twice, disagreeing
 * nranks, ranks without a trace).  Each finding's sides group processes
 * by their value and name their ranks and hosts. */
#include <stdlib.h>
#include <string.h>

#include "nsp_an_model.h"
#include "nsp_names.h"

/* One process's value of something. */
struct item {
  const char *value; /* NULL: unset */
  size_t trace;
  int rank;
};

static int cmp_item(const void *pa, const void *pb) {
  const struct item *a = pa, *b = pb;
  if (a->value != b->value) {
    if (!a->value) return 1;
    if (!b->value) return -1;
    int c = strcmp(a->value, b->value);
    if (c) return c;
  }
  if (a->rank != b->rank) return a->rank < b->rank ? -1 : 1;
  return a->trace < b->trace ? -1 : a->trace > b->trace;
}

static int same_value(const struct item *a, const struct item *b) {
  if (!a->value || !b->value) return a->value == b->value;
  return !strcmp(a->value, b->value);
}

static int cmp_side_rank(const void *pa, const void *pb) {
  const struct nsp_side *a = pa, *b = pb;
  if (a->ranks[0] != b->ranks[0]) return a->ranks[0] < b->ranks[0] ? -1 : 1;
  if (!a->value || !b->value) return a->value ? -1 : b->value ? 1 : 0;
  return strcmp(a->value, b->value);
}

void nsp_an_put_hosts(struct nsp_sbuf *b, const struct nsp_side *s) {
  const char *seen[3];
  size_t n = 0, more = 0;
  for (size_t p = 0; p < s->nranks; p++) {
    const char *h = s->procs[p].host;
    int dup = 0;
    for (size_t k = 0; k < n && !dup; k++) dup = !strcmp(seen[k], h);
    /* Hosts beyond the third are only counted (roughly: once each). */
    if (dup) continue;
    if (n < 3) seen[n++] = h;
    else if (p == 0 || strcmp(s->procs[p - 1].host, h)) more++;
  }
  for (size_t k = 0; k < n; k++) nsp_sbuf_printf(b, "%s%s", k ? ", " : "", seen[k]);
  if (more) nsp_sbuf_printf(b, " and %zu more host%s", more, more == 1 ? "" : "s");
}

/* A finding whose sides are the distinct values among items (at least
 * two, or none is made).  label: what differs ("NCCL version"); name: the
 * variable for env-nccl-setting / env-world-size (side text "NAME=v"). */
static int by_value(struct nsp_job *job, int kind, const struct nsp_an_comm *c, struct item *it, size_t n,
                    const char *label, const char *name, const char *extra) {
  if (n < 2) return 0;
  qsort(it, n, sizeof *it, cmp_item);
  size_t nsides = 1;
  for (size_t i = 1; i < n; i++) nsides += !same_value(&it[i - 1], &it[i]);
  if (nsides < 2) return 0;
  struct nsp_finding_priv *f = nsp_an_new_finding(job, kind, c);
  if (!f) return NSP_AN_ENOMEM;
  NSP_TRY(nsp_an_alloc_sides(f, nsides));
  if (name && !(f->setting_owned = strdup(name))) return NSP_AN_ENOMEM;
  f->pub.setting = f->setting_owned;
  for (size_t i = 0, s = 0; i < n; s++) {
    size_t j = i;
    while (j < n && same_value(&it[i], &it[j])) j++;
    struct nsp_side *side = &f->sides[s];
    int *ranks;
    struct nsp_proc *procs;
    NSP_TRY(nsp_an_side_procs(side, j - i, &ranks, &procs));
    for (size_t p = 0; p < j - i; p++) nsp_an_set_proc(job, &procs[p], &ranks[p], it[i + p].rank, it[i + p].trace);
    if (it[i].value && !(side->value = strdup(it[i].value))) return NSP_AN_ENOMEM;
    char buf[512];
    if (name) snprintf(buf, sizeof buf, it[i].value ? "%s=%s" : "%s unset", name, it[i].value ? it[i].value : "");
    else snprintf(buf, sizeof buf, "%s %s", label, it[i].value ? it[i].value : "unknown");
    NSP_TRY(nsp_an_set_side_text(side, buf));
    i = j;
  }
  qsort(f->sides, nsides, sizeof *f->sides, cmp_side_rank);
  /* Odd ones out when one value holds a strict majority. */
  size_t big = SIZE_MAX;
  for (size_t s = 0; s < nsides; s++)
    if (f->sides[s].nranks * 2 > n) big = s;
  if (big != SIZE_MAX) {
    int *odd = malloc(n * sizeof *odd);
    if (!odd) return NSP_AN_ENOMEM;
    size_t no = 0;
    for (size_t s = 0; s < nsides; s++)
      for (size_t p = 0; s != big && p < f->sides[s].nranks; p++) odd[no++] = f->sides[s].ranks[p];
    int r = nsp_an_set_odd(f, odd, no);
    free(odd);
    NSP_TRY(r);
  }
  struct nsp_sbuf b = {0};
  nsp_sbuf_printf(&b, "%s %s across ranks: ", name ? name : label, name ? "differs" : "differs");
  for (size_t s = 0; s < nsides; s++) {
    const struct nsp_side *sd = &f->sides[s];
    char rb[160];
    nsp_format_ranks(rb, sizeof rb, sd->ranks, sd->nranks);
    nsp_sbuf_printf(&b, "%s%s %s (", s ? "; " : "", sd->nranks == 1 ? "rank" : "ranks", rb);
    nsp_an_put_hosts(&b, sd);
    if (sd->value) nsp_sbuf_printf(&b, "): %s", sd->value);
    else nsp_sbuf_printf(&b, "): %s", name ? "unset" : "unknown");
  }
  if (extra) nsp_sbuf_printf(&b, "; %s", extra);
  f->message = nsp_sbuf_take(&b);
  if (!f->message) return NSP_AN_ENOMEM;
  f->pub.message = f->message;
  return 0;
}

/* ---- per process ------------------------------------------------------- */

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

static int rule_versions(struct nsp_job *job, struct item *it, char (*bufs)[32]) {
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
      it[n++] = (struct item){v, i, t->rank};
    }
    NSP_TRY(by_value(job, what[w].kind, NULL, it, n, what[w].label, NULL, NULL));
  }
  return 0;
}

static const char *env_value(const struct nsp_trace_info *t, const char *name) {
  for (size_t i = 0; i < t->nenv; i++)
    if (!strcmp(t->env[2 * i], name)) return t->env[2 * i + 1];
  return NULL;
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

static int rule_settings(struct nsp_job *job, struct item *it) {
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
      it[k++] = (struct item){env_value(&job->traces[t]->info, names[i]), t, job->traces[t]->info.rank};
    ret = by_value(job, NSP_FIND_ENV_SETTING, NULL, it, k, names[i], names[i], NULL);
  }
  free(names);
  return ret;
}

static int rule_world_size(struct nsp_job *job, struct item *it) {
  static const char *const vars[] = {"WORLD_SIZE", "SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE"};
  int32_t largest = 0;
  for (size_t i = 0; i < job->ncomms; i++)
    if (job->comms[i]->info.nranks > largest) largest = job->comms[i]->info.nranks;
  size_t ntraced = job->ntraces;
  for (size_t v = 0; v < sizeof vars / sizeof *vars; v++) {
    size_t n = 0;
    for (size_t t = 0; t < job->ntraces; t++) {
      const char *val = env_value(&job->traces[t]->info, vars[v]);
      if (val) it[n++] = (struct item){val, t, job->traces[t]->info.rank};
    }
    if (!n) continue;
    int differ = 0;
    for (size_t i = 1; i < n; i++) differ |= strcmp(it[i].value, it[0].value) != 0;
    char extra[200];
    long ws = strtol(it[0].value, NULL, 10);
    if (!differ) {
      int bad = (largest > 0 && ws != largest) || (ws > 0 && ntraced > (size_t)ws) ||
                (largest <= 0 && ws > 0 && ntraced < (size_t)ws);
      if (!bad) continue;
    }
    snprintf(extra, sizeof extra, "%zu process%s traced, largest communicator %d ranks", ntraced,
             ntraced == 1 ? "" : "es", largest);
    if (!differ) {
      /* One value that disagrees with the traces: a single side. */
      qsort(it, n, sizeof *it, cmp_item);
      struct nsp_finding_priv *f = nsp_an_new_finding(job, NSP_FIND_ENV_WORLD_SIZE, NULL);
      if (!f) return NSP_AN_ENOMEM;
      NSP_TRY(nsp_an_alloc_sides(f, 1));
      if (!(f->setting_owned = strdup(vars[v]))) return NSP_AN_ENOMEM;
      f->pub.setting = f->setting_owned;
      struct nsp_side *side = &f->sides[0];
      int *ranks;
      struct nsp_proc *procs;
      NSP_TRY(nsp_an_side_procs(side, n, &ranks, &procs));
      for (size_t p = 0; p < n; p++) nsp_an_set_proc(job, &procs[p], &ranks[p], it[p].rank, it[p].trace);
      if (!(side->value = strdup(it[0].value))) return NSP_AN_ENOMEM;
      char buf[300];
      snprintf(buf, sizeof buf, "%s=%s", vars[v], it[0].value);
      NSP_TRY(nsp_an_set_side_text(side, buf));
      struct nsp_sbuf b = {0};
      char rb[160];
      nsp_format_ranks(rb, sizeof rb, side->ranks, side->nranks);
      nsp_sbuf_printf(&b, "%s=%s on %s %s (", vars[v], it[0].value, n == 1 ? "rank" : "ranks", rb);
      nsp_an_put_hosts(&b, side);
      nsp_sbuf_printf(&b, ") but %s", extra);
      f->message = nsp_sbuf_take(&b);
      if (!f->message) return NSP_AN_ENOMEM;
      f->pub.message = f->message;
    } else {
      NSP_TRY(by_value(job, NSP_FIND_ENV_WORLD_SIZE, NULL, it, n, vars[v], vars[v], extra));
    }
  }
  return 0;
}

/* ---- per communicator -------------------------------------------------- */

static int rule_nranks(struct nsp_job *job, struct nsp_an_comm *c, struct item *it, char (*bufs)[32]) {
  if (!c->nranks_conflict) return 0;
  size_t n = 0;
  for (size_t k = 0; k < c->nmembers; k++) {
    const struct nsp_member *m = &job->members[c->members[k]];
    if (m->rank < 0 || m->nranks <= 0) continue;
    snprintf(bufs[n], sizeof bufs[n], "%d", m->nranks);
    it[n] = (struct item){bufs[n], m->trace, m->rank};
    n++;
  }
  return by_value(job, NSP_FIND_ENV_NRANKS, c, it, n, "nranks", NULL, NULL);
}

/* Members are sorted by rank: the run of one rank starting at k ends at
 * *end; true when it holds more than one process. */
static int dup_run(const struct nsp_job *job, const struct nsp_an_comm *c, size_t k, size_t *end) {
  const struct nsp_member *a = &job->members[c->members[k]];
  size_t j = k + 1;
  int distinct = 0;
  for (; j < c->nmembers && job->members[c->members[j]].rank == a->rank; j++)
    distinct |= job->members[c->members[j]].trace != a->trace;
  *end = j;
  return a->rank >= 0 && distinct;
}

static int rule_dup_rank(struct nsp_job *job, struct nsp_an_comm *c) {
  size_t nsides = 0;
  for (size_t k = 0, j; k < c->nmembers; k = j) nsides += dup_run(job, c, k, &j);
  if (!nsides) return 0;
  struct nsp_finding_priv *f = nsp_an_new_finding(job, NSP_FIND_ENV_DUP_RANK, c);
  if (!f) return NSP_AN_ENOMEM;
  NSP_TRY(nsp_an_alloc_sides(f, nsides));
  struct nsp_sbuf b = {0};
  size_t s = 0;
  for (size_t k = 0, j; k < c->nmembers && s < nsides; k = j) {
    const struct nsp_member *a = &job->members[c->members[k]];
    if (dup_run(job, c, k, &j)) {
      struct nsp_side *side = &f->sides[s++];
      NSP_TRY(nsp_an_side_from_members(job, side, c->members + k, j - k));
      char buf[64];
      snprintf(buf, sizeof buf, "rank %d in %zu processes", a->rank, j - k);
      NSP_TRY(nsp_an_set_side_text(side, buf));
      nsp_sbuf_printf(&b, "%srank %d is claimed by %zu processes:", s > 1 ? "; " : "", a->rank, j - k);
      for (size_t p = 0; p < side->nranks && p < 4; p++)
        nsp_sbuf_printf(&b, "%s %s pid %u (%s)", p ? "," : "", side->procs[p].host, side->procs[p].pid,
                        job->traces[side->procs[p].trace]->info.path);
    }
  }
  f->message = nsp_sbuf_take(&b);
  if (!f->message) return NSP_AN_ENOMEM;
  f->pub.message = f->message;
  return 0;
}

/* Union-find over member positions k of c. */
static size_t uf_find(size_t *p, size_t x) {
  while (p[x] != x) x = p[x] = p[p[x]];
  return x;
}

struct gkey {
  char *key;
  size_t k;
};
static int cmp_gkey(const void *pa, const void *pb) {
  const struct gkey *a = pa, *b = pb;
  int c = strcmp(a->key, b->key);
  return c ? c : a->k < b->k ? -1 : a->k > b->k;
}

static int has_uuid(const struct nsp_job *job, const struct nsp_an_comm *c, size_t k) {
  const struct nsp_member *m = &job->members[c->members[k]];
  return m->gpu_uuid && m->gpu_uuid[0];
}

/* The first non-empty string of a GPU identity field among the members
 * listed in order (uuid: 0, pci: 1, name: 2); "" when none knows it. */
static const char *gpu_field(const struct nsp_job *job, const size_t *order, size_t n, int field) {
  for (size_t i = 0; i < n; i++) {
    const struct nsp_member *m = &job->members[order[i]];
    const char *v = field == 0 ? m->gpu_uuid : field == 1 ? m->gpu_pci : m->gpu_name;
    if (v && v[0]) return v;
  }
  return "";
}

static int rule_dup_gpu(struct nsp_job *job, struct nsp_an_comm *c) {
  size_t n = c->nmembers;
  if (n < 2) return 0;
  size_t *parent = malloc(n * sizeof *parent);
  struct gkey *keys = calloc(2 * n, sizeof *keys);
  size_t *order = malloc(n * sizeof *order);
  int ret = parent && keys && order ? 0 : NSP_AN_ENOMEM;
  size_t nk = 0;
  for (size_t k = 0; k < n && !ret; k++) {
    parent[k] = k;
    const struct nsp_member *m = &job->members[c->members[k]];
    if (m->rank < 0) continue;
    if (m->gpu_uuid && m->gpu_uuid[0]) {
      if (!(keys[nk].key = nsp_asprintf("u%s", m->gpu_uuid))) ret = NSP_AN_ENOMEM;
      keys[nk++].k = k;
    }
    if (m->gpu_pci && m->gpu_pci[0]) {
      if (!(keys[nk].key = nsp_asprintf("p%s\n%s", job->traces[m->trace]->info.host, m->gpu_pci)))
        ret = NSP_AN_ENOMEM;
      keys[nk++].k = k;
    }
  }
  if (!ret && nk) qsort(keys, nk, sizeof *keys, cmp_gkey);
  /* One UUID: one GPU.  One host and PCI bus id: one GPU only where a
   * UUID is unknown; two known UUIDs that differ are two GPUs (MIG
   * instances share a bus id, and so do nodes that share a host name).
   * Within a run of one bus key, a member without a UUID joins the first
   * one that has a UUID (else the first). */
  int merged = 0;
  for (size_t i = 0, j; i < nk && !ret; i = j) {
    for (j = i + 1; j < nk && !strcmp(keys[j].key, keys[i].key);) j++;
    if (j - i < 2) continue;
    int bus = keys[i].key[0] == 'p';
    size_t anchor = i;
    for (size_t q = i; bus && q < j; q++)
      if (has_uuid(job, c, keys[q].k)) {
        anchor = q;
        break;
      }
    for (size_t q = i; q < j; q++) {
      if (q == anchor || (bus && has_uuid(job, c, keys[q].k) && has_uuid(job, c, keys[anchor].k))) continue;
      parent[uf_find(parent, keys[q].k)] = uf_find(parent, keys[anchor].k);
      merged = 1;
    }
  }
  /* Groups of two or more processes. */
  size_t nsides = 0;
  for (size_t k = 0; k < n && !ret && merged; k++) {
    size_t r = uf_find(parent, k);
    if (r != k) continue;
    size_t cnt = 0;
    int distinct = 0;
    for (size_t q = 0; q < n; q++)
      if (uf_find(parent, q) == r) {
        cnt++;
        distinct |= job->members[c->members[q]].trace != job->members[c->members[r]].trace;
      }
    if (cnt > 1 && distinct) nsides++;
  }
  if (!ret && nsides) {
    struct nsp_finding_priv *f = nsp_an_new_finding(job, NSP_FIND_ENV_DUP_GPU, c);
    ret = f ? nsp_an_alloc_sides(f, nsides) : NSP_AN_ENOMEM;
    struct nsp_sbuf b = {0};
    size_t s = 0;
    for (size_t k = 0; k < n && !ret && s < nsides; k++) {
      if (uf_find(parent, k) != k) continue;
      size_t cnt = 0;
      int distinct = 0;
      for (size_t q = 0; q < n; q++)
        if (uf_find(parent, q) == k) {
          order[cnt++] = c->members[q];
          distinct |= job->members[c->members[q]].trace != job->members[c->members[k]].trace;
        }
      if (cnt < 2 || !distinct) continue;
      struct nsp_side *side = &f->sides[s++];
      ret = nsp_an_side_from_members(job, side, order, cnt);
      /* The GPU as those who know it name it: a member whose UUID query
       * failed still shares the UUID of the others. */
      const char *uuid = gpu_field(job, order, cnt, 0), *pci = gpu_field(job, order, cnt, 1);
      const char *gname = gpu_field(job, order, cnt, 2);
      char buf[400];
      snprintf(buf, sizeof buf, "%s%s%s%s%s on %s", uuid[0] ? uuid : "GPU", pci[0] ? " " : "", pci,
               gname[0] ? ", " : "", gname, job->traces[job->members[order[0]].trace]->info.host);
      if (!ret) ret = nsp_an_set_side_text(side, buf);
      if (!ret && !(side->value = strdup(uuid[0] ? uuid : pci))) ret = NSP_AN_ENOMEM;
      if (ret) break;
      char rb[160];
      nsp_format_ranks(rb, sizeof rb, side->ranks, side->nranks);
      nsp_sbuf_printf(&b, "%sranks %s (", s > 1 ? "; " : "", rb);
      nsp_an_put_hosts(&b, side);
      nsp_sbuf_printf(&b, ") share one GPU: %s", buf);
    }
    if (!ret) {
      f->message = nsp_sbuf_take(&b);
      if (!f->message) ret = NSP_AN_ENOMEM;
      f->pub.message = f->message;
    } else {
      free(nsp_sbuf_take(&b));
    }
  }
  for (size_t i = 0; keys && i < nk; i++) free(keys[i].key);
  free(keys);
  free(parent);
  free(order);
  return ret;
}

/* Ranks 0..nranks-1 without a trace, listed when there are not too many. */
#define NSP_MISSING_LIST_MAX 65536

static int rule_missing(struct nsp_job *job, struct nsp_an_comm *c) {
  int32_t nr = c->info.nranks;
  size_t have = 0;
  for (size_t i = 0; i < c->info.ntraced; i++) have += c->ranks[i] >= 0 && c->ranks[i] < nr;
  if (nr <= 0 || have >= (size_t)nr) return 0;
  size_t missing = (size_t)nr - have;
  size_t nmem = 0;
  size_t *mi = malloc((c->nmembers ? c->nmembers : 1) * sizeof *mi);
  if (!mi) return NSP_AN_ENOMEM;
  for (size_t k = 0; k < c->nmembers; k++) {
    const struct nsp_member *m = &job->members[c->members[k]];
    if (m->rank >= 0 && (!nmem || job->members[mi[nmem - 1]].rank != m->rank)) mi[nmem++] = c->members[k];
  }
  /* Members that never learnt their rank are only a note. */
  struct nsp_finding_priv *f = nmem ? nsp_an_new_finding(job, NSP_FIND_ENV_MISSING_RANKS, c) : NULL;
  int ret = !nmem ? 1 : f ? nsp_an_alloc_sides(f, 1) : NSP_AN_ENOMEM;
  if (!ret) ret = nsp_an_side_from_members(job, &f->sides[0], mi, nmem);
  free(mi);
  if (ret) return ret < 0 ? ret : 0;
  char sbuf[64];
  snprintf(sbuf, sizeof sbuf, "traced (%zu of %d)", nmem, nr);
  NSP_TRY(nsp_an_set_side_text(&f->sides[0], sbuf));
  /* The missing ranks, as ranges, walking the gaps between traced ones. */
  struct nsp_sbuf b = {0};
  nsp_sbuf_printf(&b, "communicator has %d ranks but %zu %s a trace; no trace for %s ", nr, have,
                  have == 1 ? "has" : "have", missing == 1 ? "rank" : "ranks");
  int *list = missing <= NSP_MISSING_LIST_MAX ? malloc(missing * sizeof *list) : NULL;
  size_t nl = 0, shown = 0;
  /* 64-bit: the rank after a traced rank INT_MAX (hostile nranks) is no int. */
  int64_t next = 0;
  for (size_t i = 0; i <= c->info.ntraced; i++) {
    int64_t upto = i < c->info.ntraced ? c->ranks[i] : nr; /* exclusive */
    if (upto > nr) upto = nr;
    if (upto < next) continue;
    if (upto > next) { /* next < upto <= nr: both fit in an int */
      if (shown < 20) {
        if (upto - 1 > next) nsp_sbuf_printf(&b, "%s%d-%d", shown ? "," : "", (int)next, (int)(upto - 1));
        else nsp_sbuf_printf(&b, "%s%d", shown ? "," : "", (int)next);
      } else if (shown == 20) {
        nsp_sbuf_printf(&b, ",...");
      }
      shown++;
      for (int64_t r = next; list && r < upto; r++) list[nl++] = (int)r;
    }
    next = upto + 1;
  }
  /* Files that were there but told nothing: the missing ranks may be
   * theirs, and "copy their traces" would be the wrong advice. */
  size_t nempty = job->nunread;
  for (size_t i = 0; i < job->ntraces; i++) nempty += job->traces[i]->info.records == 0;
  if (nempty)
    nsp_sbuf_printf(&b, "; %zu trace file%s could not be read or %s no readable record (see the notes): the "
                        "missing ranks may be in %s",
                    nempty, nempty == 1 ? "" : "s", nempty == 1 ? "has" : "have", nempty == 1 ? "it" : "them");
  if (list) ret = nsp_an_set_odd(f, list, nl);
  free(list);
  f->message = nsp_sbuf_take(&b);
  if (!f->message) return NSP_AN_ENOMEM;
  f->pub.message = f->message;
  return ret;
}

int nsp_an_rule_env(struct nsp_job *job) {
  size_t cap = job->ntraces > job->nmembers ? job->ntraces : job->nmembers;
  struct item *it = malloc((cap ? cap : 1) * sizeof *it);
  char(*bufs)[32] = malloc((cap ? cap : 1) * sizeof *bufs);
  int ret = it && bufs ? 0 : NSP_AN_ENOMEM;
  if (!ret) ret = rule_versions(job, it, bufs);
  if (!ret) ret = rule_settings(job, it);
  if (!ret) ret = rule_world_size(job, it);
  for (size_t i = 0; i < job->ncomms && !ret; i++) {
    struct nsp_an_comm *c = job->comms[i];
    ret = rule_dup_gpu(job, c);
    if (!ret) ret = rule_dup_rank(job, c);
    if (!ret) ret = rule_nranks(job, c, it, bufs);
    if (!ret) ret = rule_missing(job, c);
  }
  free(it);
  free(bufs);
  return ret;
}
