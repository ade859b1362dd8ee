/* nsp_an_prepare.c - the model after loading, before the rules: the
 * communicators packed (ids a later COMM record replaced dropped), their
 * members sorted by rank, every trace's job rank, the job's start time,
 * and whether the traces show more than one NCCL version. */
#include <stdlib.h>

#include "nsp_an_model.h"
#include "nsp_names.h"

int nsp_an_cmp_member_rank(const void *pa, const void *pb, void *ctx) {
  const struct nsp_job *job = ctx;
  const struct nsp_member *a = &job->members[*(const size_t *)pa];
  const struct nsp_member *b = &job->members[*(const size_t *)pb];
  if (a->rank != b->rank) return a->rank < b->rank ? -1 : 1;
  if (a->trace != b->trace) return a->trace < b->trace ? -1 : 1;
  return a->local < b->local ? -1 : a->local > b->local;
}

/* Members that disagree on nranks (an env-nranks finding names them):
 * the communicator's nranks is the value most of them report, the smaller
 * on a tie, whatever order the traces came in (the loader kept the first
 * one it read). */
static int majority_nranks(struct nsp_job *job, struct nsp_an_comm *c) {
  int32_t *v = malloc((c->nmembers ? c->nmembers : 1) * sizeof *v);
  if (!v) return NSP_AN_ENOMEM;
  size_t n = 0;
  for (size_t k = 0; k < c->nmembers; k++)
    if (job->members[c->members[k]].nranks > 0) v[n++] = job->members[c->members[k]].nranks;
  qsort(v, n, sizeof *v, nsp_an_cmp_int);
  size_t best = 0;
  for (size_t i = 0, j; i < n; i = j) {
    for (j = i + 1; j < n && v[j] == v[i];) j++;
    if (j - i > best) {
      best = j - i;
      c->info.nranks = v[i];
    }
  }
  free(v);
  return 0;
}

/* Drops communicators no member points at (an id a later COMM record
 * replaced), builds each one's member list sorted by rank and its list of
 * traced ranks. */
static int prepare_comms(struct nsp_job *job) {
  size_t *remap = calloc(job->ncomms ? job->ncomms : 1, sizeof *remap);
  if (!remap) return NSP_AN_ENOMEM;
  for (size_t i = 0; i < job->nmembers; i++) remap[job->members[i].comm]++;
  size_t n = 0;
  for (size_t i = 0; i < job->ncomms; i++) {
    struct nsp_an_comm *c = job->comms[i];
    if (!remap[i]) {
      nsp_an_comm_free(c);
      continue;
    }
    remap[i] = n;
    job->comms[n++] = c;
  }
  job->ncomms = n;
  nsp_u64map_free(&job->comm_by_id);
  int ret = 0;
  for (size_t i = 0; i < n && !ret; i++) ret = nsp_u64map_put(&job->comm_by_id, job->comms[i]->info.id, i);
  for (size_t i = 0; i < job->nmembers && !ret; i++) {
    struct nsp_member *m = &job->members[i];
    m->comm = remap[m->comm];
    struct nsp_an_comm *c = job->comms[m->comm];
    ret = nsp_grow(&c->members, &c->members_cap, c->nmembers + 1, sizeof *c->members);
    if (!ret) c->members[c->nmembers++] = i;
  }
  free(remap);
  NSP_TRY(ret);

  nsp_u64map_free(&job->member_by_trace);
  for (size_t i = 0; i < n; i++) {
    struct nsp_an_comm *c = job->comms[i];
    qsort_r(c->members, c->nmembers, sizeof *c->members, nsp_an_cmp_member_rank, job);
    /* (communicator, trace) -> its first member, in this order. */
    for (size_t k = 0; k < c->nmembers; k++) {
      uint64_t key = nsp_an_member_key(c, job->members[c->members[k]].trace);
      if (!nsp_u64map_get(&job->member_by_trace, key))
        NSP_TRY(nsp_u64map_put(&job->member_by_trace, key, c->members[k]));
    }
    if (c->nranks_conflict) NSP_TRY(majority_nranks(job, c));
    /* ranks, then their processes' job ranks (info.job_ranks): one block */
    c->ranks = malloc((2 * c->nmembers + 1) * sizeof *c->ranks);
    if (!c->ranks) return NSP_AN_ENOMEM;
    int *job_ranks = c->ranks + c->nmembers;
    size_t nr = 0, unknown = 0, failed = 0;
    for (size_t k = 0; k < c->nmembers; k++) {
      const struct nsp_member *m = &job->members[c->members[k]];
      if (m->rank < 0) {
        /* A creation that failed never gave a rank: its error says so. */
        if (m->has_error && !m->calls) failed++;
        else unknown++;
        continue;
      }
      /* A rank traced twice: an env-duplicate-rank finding says so. */
      if (nr && c->ranks[nr - 1] == m->rank) continue;
      job_ranks[nr] = -1; /* comm_job_ranks, once job ranks are known */
      c->ranks[nr++] = m->rank;
    }
    c->info.ranks = c->ranks;
    c->info.job_ranks = job_ranks;
    c->info.ntraced = nr;
    if (unknown)
      NSP_TRY(nsp_job_notef(job, "communicator %016llx: %zu member%s never learnt %s rank (non-blocking init "
                                 "that did not complete?); %s left out of the findings",
                            (unsigned long long)c->info.id, unknown, unknown == 1 ? "" : "s",
                            unknown == 1 ? "its" : "their", unknown == 1 ? "it is" : "they are"));
    if (failed)
      NSP_TRY(nsp_job_notef(job, "communicator %016llx: its creation failed on %zu process%s, which never learnt "
                                 "%s rank; %s left out of the comparisons",
                            (unsigned long long)c->info.id, failed, failed == 1 ? "" : "es",
                            failed == 1 ? "its" : "their", failed == 1 ? "it is" : "they are"));
    /* Untraced ranks: an env-missing-ranks finding names them. */
  }
  return 0;
}

static void assign_job_ranks(struct nsp_job *job) {
  job->start_ns = 0;
  for (size_t i = 0; i < job->ntraces; i++) {
    struct nsp_trace *t = job->traces[i];
    if (!job->start_ns || t->info.realtime_ns < job->start_ns) job->start_ns = t->info.realtime_ns;
    t->info.rank = t->env_rank >= 0 ? t->env_rank : t->file_rank;
  }
  /* Fallback: the rank in the largest communicator the process joined. */
  int32_t *best = NULL;
  if (job->ntraces) best = calloc(job->ntraces, sizeof *best);
  if (!best) return;
  for (size_t i = 0; i < job->nmembers; i++) {
    const struct nsp_member *m = &job->members[i];
    struct nsp_trace *t = job->traces[m->trace];
    if (t->env_rank >= 0 || t->file_rank >= 0 || m->rank < 0) continue;
    if (m->nranks > best[m->trace]) {
      best[m->trace] = m->nranks;
      t->info.rank = m->rank;
    }
  }
  free(best);
}

/* Each communicator's info.job_ranks: the job rank of the (first)
 * process of each of its traced ranks (after assign_job_ranks). */
static void comm_job_ranks(struct nsp_job *job) {
  for (size_t i = 0; i < job->ncomms; i++) {
    struct nsp_an_comm *c = job->comms[i];
    int *jr = (int *)c->info.job_ranks;
    for (size_t k = 0, r = 0; jr && k < c->nmembers && r < c->info.ntraced; k++) {
      const struct nsp_member *m = &job->members[c->members[k]];
      if (m->rank != c->ranks[r]) continue; /* no rank, or a rank traced twice */
      jr[r++] = job->traces[m->trace]->info.rank;
    }
  }
}

/* More than one known NCCL version among the ranks' traces. */
static void find_version_skew(struct nsp_job *job) {
  int32_t v = 0;
  for (size_t i = 0; i < job->ntraces; i++) {
    int32_t x = job->traces[i]->info.nccl_version;
    if (x <= 0 || !nsp_an_is_rank(job, i)) continue;
    if (v && x != v) job->version_skew = 1;
    v = x;
  }
}

void nsp_an_mark_joined(struct nsp_job *job) {
  for (size_t i = 0; i < job->ntraces; i++) {
    struct nsp_trace *t = job->traces[i];
    int joined = !t->info.records || t->nfailed_inits || t->orphan_calls || t->info.work_calls;
    for (size_t k = 0; !joined && k < t->ninflight; k++) joined = nsp_api_kind(t->inflight[k].call.api) == NSP_K_INIT;
    t->info.joined = joined;
  }
  for (size_t i = 0; i < job->nmembers; i++) job->traces[job->members[i].trace]->info.joined = 1;
}

int nsp_an_prepare(struct nsp_job *job) {
  nsp_an_mark_joined(job);
  NSP_TRY(prepare_comms(job));
  assign_job_ranks(job);
  comm_job_ranks(job);
  find_version_skew(job);
  return 0;
}
