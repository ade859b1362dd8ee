/* nsp_rule_env_comm.c - rule 6 of docs/REPORT.md, per communicator:
 * members that do not add up (two ranks on one GPU, a rank claimed twice,
 * disagreeing nranks, ranks without a trace).  Sides name communicator
 * ranks and their hosts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nsp_names.h"
#include "nsp_rule.h"

static int rule_nranks(struct nsp_job *job, struct nsp_an_comm *c) {
  if (!c->nranks_conflict) return 0;
  struct nsp_an_item *it = malloc((c->nmembers ? c->nmembers : 1) * sizeof *it);
  char(*bufs)[32] = malloc((c->nmembers ? c->nmembers : 1) * sizeof *bufs);
  int ret = it && bufs ? 0 : NSP_AN_ENOMEM;
  size_t n = 0;
  for (size_t k = 0; k < c->nmembers && !ret; k++) {
    const struct nsp_member *m = &job->members[c->members[k]];
    if (m->rank < 0 || m->nranks <= 0) continue;
    snprintf(bufs[n], sizeof bufs[n], "%d", m->nranks);
    it[n] = (struct nsp_an_item){bufs[n], m->trace, m->rank};
    n++;
  }
  if (!ret) ret = nsp_an_finding_by_value(job, NSP_FIND_ENV_NRANKS, c, it, n, "nranks", NULL, NULL);
  free(it);
  free(bufs);
  return ret;
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
  struct nsp_sbuf b = {0}, lead = {0};
  size_t s = 0;
  for (size_t k = 0, j; k < c->nmembers && s < nsides; k = j) {
    const struct nsp_member *a = &job->members[c->members[k]];
    if (dup_run(job, c, k, &j)) {
      struct nsp_side *side = &f->sides[s++];
      NSP_TRY(nsp_an_side_from_members(job, side, c->members + k, j - k));
      char buf[64];
      /* A rank of c that several processes claim: no one job rank is its,
       * so the processes are named by host, pid and path. */
      snprintf(buf, sizeof buf, "rank %d in %zu processes", a->rank, j - k);
      NSP_TRY(nsp_an_set_side_text(side, buf));
      nsp_sbuf_printf(&b, "%srank %d is claimed by %zu processes:", s > 1 ? "; " : "", a->rank, j - k);
      nsp_sbuf_printf(&lead, "%srank %d is claimed by %zu processes", s > 1 ? "; " : "", a->rank, j - k);
      for (size_t p = 0; p < side->nranks && p < 4; p++)
        nsp_sbuf_printf(&b, "%s %s pid %u (%s)", p ? "," : "", side->procs[p].host, side->procs[p].pid,
                        job->traces[side->procs[p].trace]->info.path);
    }
  }
  NSP_TRY(nsp_an_take_message(f, &b));
  return nsp_an_take_lead(f, &lead);
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

/* NCCL_HOSTID of m's process ("" unset). */
static const char *hostid(const struct nsp_job *job, const struct nsp_member *m) {
  const char *v = nsp_an_env_value(&job->traces[m->trace]->info, "NCCL_HOSTID");
  return v ? v : "";
}

/* qsort_r order of member indices by host identity, as NCCL has it: the
 * host name and NCCL_HOSTID (ctx: the job). */
static int cmp_host_identity(const void *pa, const void *pb, void *ctx) {
  const struct nsp_job *job = ctx;
  const struct nsp_member *a = &job->members[*(const size_t *)pa], *b = &job->members[*(const size_t *)pb];
  int d = strcmp(job->traces[a->trace]->info.host, job->traces[b->trace]->info.host);
  return d ? d : strcmp(hostid(job, a), hostid(job, b));
}

/* "GPU-... 0000:1b:00.0, NVIDIA H200 on host": the GPU as those of the
 * members that know it name it (one whose UUID query failed still shares
 * the UUID of the others). */
static void gpu_text(const struct nsp_job *job, const size_t *order, size_t cnt, char *buf, size_t len,
                     const char **value) {
  const char *uuid = gpu_field(job, order, cnt, 0), *pci = gpu_field(job, order, cnt, 1);
  const char *gname = gpu_field(job, order, cnt, 2);
  snprintf(buf, len, "%s%s%s%s%s on %s", uuid[0] ? uuid : "GPU", pci[0] ? " " : "", pci, gname[0] ? ", " : "", gname,
           job->traces[job->members[order[0]].trace]->info.host);
  *value = uuid[0] ? uuid : pci;
}

/* A side of env-duplicate-gpu: members order[0..cnt) (one host identity)
 * on one GPU; its words into the message b and the headline's lead. */
static int dup_gpu_side(struct nsp_job *job, struct nsp_side *side, const size_t *order, size_t cnt,
                        struct nsp_sbuf *b, struct nsp_sbuf *lead) {
  NSP_TRY(nsp_an_side_from_members(job, side, order, cnt));
  char buf[400];
  const char *value;
  gpu_text(job, order, cnt, buf, sizeof buf, &value);
  NSP_TRY(nsp_an_set_side_text(side, buf));
  if (!(side->value = strdup(value))) return NSP_AN_ENOMEM;
  nsp_sbuf_printf(b, "%s", b->len ? "; " : "");
  nsp_an_put_comm_ranks(b, job, job->comms[job->members[order[0]].comm]->info.id, side->ranks, side->nranks);
  nsp_sbuf_printf(b, " (");
  nsp_an_put_hosts(b, side);
  nsp_sbuf_printf(b, ") share one GPU: %s", buf);
  nsp_sbuf_printf(lead, "%s", lead->len ? "; " : "");
  nsp_an_put_comm_ranks(lead, job, job->comms[job->members[order[0]].comm]->info.id, side->ranks, side->nranks);
  nsp_sbuf_printf(lead, " share one GPU, %s", buf);
  return 0;
}

/* A GPU shared by members order[0..cnt) (sorted by host identity) of more
 * than one host identity: NCCL sees separate hosts and allows it, so a
 * note, not a finding. */
static int shared_gpu_note(struct nsp_job *job, size_t *order, size_t cnt) {
  /* Once per GPU: a communicator before this one (the world, for a
   * subgroup's) with every one of these processes made the note. */
  size_t self = job->members[order[0]].comm;
  for (size_t ci = 0; ci < self; ci++) {
    size_t have = 0;
    for (size_t i = 0; i < cnt; i++)
      have += nsp_an_member_of_trace(job, job->comms[ci], job->members[order[i]].trace) != NULL;
    if (have == cnt) return 0;
  }
  char buf[400];
  const char *value;
  gpu_text(job, order, cnt, buf, sizeof buf, &value);
  struct nsp_sbuf b = {0};
  int *rk = malloc(cnt * sizeof *rk);
  if (!rk) return NSP_AN_ENOMEM;
  for (size_t i = 0; i < cnt; i++) rk[i] = job->members[order[i]].rank;
  qsort(rk, cnt, sizeof *rk, nsp_an_cmp_int);
  struct nsp_side tmp = {0};
  if (nsp_an_side_from_members(job, &tmp, order, cnt) < 0) {
    free(rk);
    return NSP_AN_ENOMEM;
  }
  nsp_sbuf_printf(&b, "communicator %016llx: ", (unsigned long long)job->comms[job->members[order[0]].comm]->info.id);
  nsp_an_put_comm_ranks(&b, job, job->comms[job->members[order[0]].comm]->info.id, rk, cnt);
  nsp_sbuf_printf(&b, " (");
  nsp_an_put_hosts(&b, &tmp);
  nsp_sbuf_printf(&b, ") share one GPU, %s, as separate hosts for NCCL (", buf);
  qsort_r(order, cnt, sizeof *order, nsp_an_cmp_member_rank, job);
  for (size_t i = 0; i < cnt && i < 8; i++) {
    const char *id = hostid(job, &job->members[order[i]]);
    nsp_sbuf_printf(&b, "%s%s%s on ", i ? ", " : "", id[0] ? "NCCL_HOSTID=" : "NCCL_HOSTID unset", id);
    nsp_an_put_rank(&b, job, job->members[order[i]].rank, job->members[order[i]].trace);
  }
  nsp_sbuf_printf(&b, "%s): not an error, but they share its memory and compute", cnt > 8 ? ", ..." : "");
  free(rk);
  free((void *)tmp.ranks);
  free((void *)tmp.procs);
  return nsp_job_note_take(job, &b);
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
  /* Groups of two or more processes: one GPU.  NCCL tells hosts apart by
   * NCCL_HOSTID where it is set (else the host name), and allows one GPU
   * to ranks of different hosts: within a group, the processes of one
   * host identity are a side of the finding; a GPU shared across host
   * identities is a note. */
  struct nsp_finding_priv *f = NULL;
  struct nsp_sbuf b = {0}, lead = {0};
  size_t s = 0;
  /* The positions of each group, in order, bucketed by their root: one
   * pass, not one per group (quadratic in ranks when one GPU of many is
   * shared).  start[r]..start[r + 1]: root r's positions in byroot. */
  size_t *start = merged && !ret ? calloc(n + 1, sizeof *start) : NULL;
  size_t *byroot = start ? malloc(n * sizeof *byroot) : NULL;
  if (merged && !ret && (!start || !byroot)) ret = NSP_AN_ENOMEM;
  for (size_t q = 0; q < n && !ret && merged; q++) start[uf_find(parent, q) + 1]++;
  for (size_t r = 0; r < n && !ret && merged; r++) start[r + 1] += start[r];
  for (size_t q = 0; q < n && !ret && merged; q++) byroot[start[uf_find(parent, q)]++] = q;
  for (size_t r = n; r > 0 && !ret && merged; r--) start[r] = start[r - 1]; /* back to where each began */
  if (start) start[0] = 0;
  for (size_t k = 0; k < n && !ret && merged; k++) {
    if (parent[k] != k) continue;
    size_t cnt = 0;
    for (size_t i = start[k]; i < start[k + 1]; i++) order[cnt++] = c->members[byroot[i]];
    qsort_r(order, cnt, sizeof *order, cmp_host_identity, job);
    size_t nid = 0;
    for (size_t i = 0, j; i < cnt && !ret; i = j) {
      for (j = i + 1; j < cnt && !cmp_host_identity(&order[i], &order[j], job);) j++;
      nid++;
      int distinct = 0;
      for (size_t q = i + 1; q < j; q++) distinct |= job->members[order[q]].trace != job->members[order[i]].trace;
      if (!distinct) continue;
      if (!f && !(f = nsp_an_new_finding(job, NSP_FIND_ENV_DUP_GPU, c))) ret = NSP_AN_ENOMEM;
      if (!ret) ret = nsp_grow(&f->sides, &s, f->pub.nsides + 1, sizeof *f->sides);
      if (ret) break;
      struct nsp_side *side = &f->sides[f->pub.nsides++];
      memset(side, 0, sizeof *side);
      nsp_call_clear(&side->call);
      f->pub.sides = f->sides;
      qsort_r(order + i, j - i, sizeof *order, nsp_an_cmp_member_rank, job);
      ret = dup_gpu_side(job, side, order + i, j - i, &b, &lead);
    }
    if (!ret && nid > 1 && cnt > 1) ret = shared_gpu_note(job, order, cnt);
  }
  if (!ret && f) {
    ret = nsp_an_take_message(f, &b);
    if (!ret) ret = nsp_an_take_lead(f, &lead);
  }
  free(nsp_sbuf_take(&b));
  free(nsp_sbuf_take(&lead));
  for (size_t i = 0; keys && i < nk; i++) free(keys[i].key);
  free(keys);
  free(parent);
  free(order);
  free(start);
  free(byroot);
  return ret;
}

/* Ranks 0..nranks-1 without a trace, listed when there are not too many. */
#define NSP_MISSING_LIST_MAX 65536

/* Whether communicator c's ranks are its processes' job ranks. */
static int world_like(const struct nsp_job *job, const struct nsp_an_comm *c) {
  for (size_t k = 0; k < c->nmembers; k++) {
    const struct nsp_member *m = &job->members[c->members[k]];
    if (m->rank != job->traces[m->trace]->info.rank) return 0;
  }
  return c->nmembers > 0;
}

/* How many files may hold ranks of c that no trace shows: files that
 * could not be read, and traces not in c that lost records of their
 * communicators (calls on a communicator without its COMM record), were
 * damaged or cut, or have no record, unless their job rank is that of a
 * traced rank of a communicator numbered by job ranks. */
static size_t may_hold_missing(const struct nsp_job *job, const struct nsp_an_comm *c) {
  size_t n = job->nunread;
  int world = world_like(job, c);
  for (size_t ti = 0; ti < job->ntraces; ti++) {
    const struct nsp_trace *t = job->traces[ti];
    if (!t->orphan_calls && !t->read_problem && t->info.records) continue;
    if (nsp_an_member_of_trace(job, c, ti)) continue;
    int taken = 0;
    for (size_t k = 0; world && t->info.rank >= 0 && k < c->nmembers && !taken; k++)
      taken = job->members[c->members[k]].rank == t->info.rank;
    if (world && t->info.rank >= c->info.nranks) taken = 1;
    n += !taken;
  }
  return n;
}

static int rule_missing(struct nsp_job *job, struct nsp_an_comm *c) {
  int32_t nr = c->info.nranks;
  size_t have = 0;
  for (size_t i = 0; i < c->info.ntraced; i++) have += c->ranks[i] >= 0 && c->ranks[i] < nr;
  if (nr <= 0 || have >= (size_t)nr) return 0;
  /* A job starting up: its other ranks may have no trace yet. */
  if (nsp_an_job_starting(job)) return 0;
  /* A process still inside this communicator's creation (in flight:
   * format 1.5) has a trace and is on its way: comm-init-wait speaks of
   * creations that wait, not this rule. */
  for (size_t ti = 0; ti < job->ntraces; ti++)
    for (size_t i = 0; i < job->traces[ti]->ninflight; i++) {
      const struct nsp_inflight *x = &job->traces[ti]->inflight[i];
      if (nsp_api_kind(x->call.api) == NSP_K_INIT && x->new_comm_id == c->info.id) return 0;
    }
  size_t missing = (size_t)nr - have;
  /* Traces that lost their communicator records (damaged, cut, none
   * read) and files that could not be read may hold the missing ranks:
   * then they are a gap in coverage (a note; the summary says so), not
   * ranks without a trace. */
  size_t lost = may_hold_missing(job, c);
  if (lost >= missing)
    return nsp_job_notef(job, "communicator %016llx has %d ranks but %zu %s a trace; %zu damaged or unreadable "
                              "trace file%s may hold the other%s (see the notes), so %s not reported as missing",
                         (unsigned long long)c->info.id, nr, have, have == 1 ? "has" : "have", lost,
                         lost == 1 ? "" : "s", missing == 1 ? "" : "s", missing == 1 ? "it is" : "they are");
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
  NSP_TRY(nsp_an_take_message(f, &b));
  NSP_TRY(ret);
  /* The headline names the ranks without a trace, not the traced ones. */
  if (f->pub.nodd) {
    nsp_an_put_ranks(&b, f->pub.odd_ranks, f->pub.nodd);
  } else {
    nsp_sbuf_printf(&b, "%zu ranks", missing);
  }
  nsp_sbuf_printf(&b, " %s no trace (%zu of %d traced)", missing == 1 ? "has" : "have", have, nr);
  return nsp_an_take_lead(f, &b);
}

/* The four checks of one communicator, so that findings are made
 * communicator by communicator. */
static int check_comm(struct nsp_job *job, struct nsp_an_comm *c) {
  NSP_TRY(rule_dup_gpu(job, c));
  NSP_TRY(rule_dup_rank(job, c));
  NSP_TRY(rule_nranks(job, c));
  return rule_missing(job, c);
}

const struct nsp_rule nsp_rule_env_comm = {
    .name = "env-comm",
    .checks = "the members of each communicator: two ranks on one GPU, a rank claimed twice, disagreeing nranks, "
              "ranks without a trace",
    .kinds = NSP_RULE_KINDS(NSP_FIND_ENV_DUP_GPU, NSP_FIND_ENV_DUP_RANK, NSP_FIND_ENV_NRANKS,
                            NSP_FIND_ENV_MISSING_RANKS),
    .check_comm = check_comm,
};
