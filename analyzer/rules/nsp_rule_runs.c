/* nsp_rule_runs.c - how the traces were gathered, checked first: which
 * runs the traces come from and which one is analysed (the job groups
 * them before the rules: job/nsp_an_runs.c), and the traced processes
 * that joined no communicator (a launcher that only made the unique id),
 * which the per-rank checks do not count as ranks.  Makes no finding:
 * notes, listed first. */
#include <stdlib.h>
#include <string.h>

#include "nsp_names.h"
#include "nsp_rule.h"

/* Runs named in a note, at most. */
#define NSP_RUNS_LISTED 6

/* Moves the last note to the front: the report lists it first. */
static void note_to_front(struct nsp_job *job) {
  char *last = job->notes[job->nnotes - 1];
  memmove(job->notes + 1, job->notes, (job->nnotes - 1) * sizeof *job->notes);
  job->notes[0] = last;
}

/* "ID (4 processes, started 2024-05-01T12:00:03.123Z)". */
static void put_run(struct nsp_sbuf *b, const struct nsp_run_info *r) {
  char tb[48];
  nsp_an_utc_text(tb, sizeof tb, r->start_ns);
  nsp_sbuf_printf(b, "%s (%zu process%s", r->id, r->nprocs, r->nprocs == 1 ? "" : "es");
  if (r->nranks != r->nprocs) nsp_sbuf_printf(b, ", %zu of them rank%s", r->nranks, r->nranks == 1 ? "" : "s");
  nsp_sbuf_printf(b, ", started %s)", tb);
}

/* The runs other than the analysed one, ", "-separated. */
static void put_others(struct nsp_sbuf *b, const struct nsp_job *job) {
  size_t shown = 0, n = 0;
  for (size_t r = 0; r < job->nruns; r++) {
    if (job->runs[r].info.analyzed) continue;
    n++;
    if (shown == NSP_RUNS_LISTED) continue;
    nsp_sbuf_printf(b, "%s", shown ? ", " : "");
    put_run(b, &job->runs[r].info);
    shown++;
  }
  if (n > shown) nsp_sbuf_printf(b, " and %zu more", n - shown);
}

static int runs_note(struct nsp_job *job) {
  if (job->nruns < 2) return 0;
  struct nsp_sbuf b = {0};
  if (job->run_all) {
    nsp_sbuf_printf(&b, "the traces come from %zu different runs or attempts, and are compared as if they were one "
                        "job (--run all): ", job->nruns);
    for (size_t r = 0; r < job->nruns && r < NSP_RUNS_LISTED; r++) {
      nsp_sbuf_printf(&b, "%s", r ? "; " : "");
      put_run(&b, &job->runs[r].info);
      size_t shown = 0, n = 0;
      for (size_t i = 0; i < job->ntraces; i++) {
        if (job->traces[i]->info.run_id != job->runs[r].id) continue;
        if (shown < 4) nsp_sbuf_printf(&b, "%s%s", shown++ ? ", " : ": ", job->traces[i]->info.path);
        n++;
      }
      if (n > shown) nsp_sbuf_printf(&b, " and %zu more", n - shown);
    }
    if (job->nruns > NSP_RUNS_LISTED) nsp_sbuf_printf(&b, "; and %zu more runs", job->nruns - NSP_RUNS_LISTED);
    nsp_sbuf_printf(&b, "; findings across them (world sizes, duplicate ranks) may be only that: analyse one at a "
                        "time with --run ID, and give each job (and each restart) a directory of its own "
                        "(NCCLSPY_DIR)");
  } else {
    size_t a = 0;
    while (a < job->nruns && !job->runs[a].info.analyzed) a++;
    if (a == 0) {
      nsp_sbuf_printf(&b, "%zu older run%s in these traces ignored: ", job->nruns - 1, job->nruns == 2 ? "" : "s");
      put_others(&b, job);
      nsp_sbuf_printf(&b, "; analysed: the newest, ");
    } else {
      nsp_sbuf_printf(&b, "%zu other run%s in these traces ignored: ", job->nruns - 1, job->nruns == 2 ? "" : "s");
      put_others(&b, job);
      nsp_sbuf_printf(&b, "; analysed as asked: run %zu of %zu (newest first), ", a + 1, job->nruns);
    }
    put_run(&b, &job->runs[a].info);
    nsp_sbuf_printf(&b, "; --run all or --run ID");
  }
  NSP_TRY(nsp_job_note_take(job, &b));
  note_to_front(job);
  return 0;
}

/* "ncclGetUniqueId, ncclGetVersion": the functions trace t called, or
 * "no NCCL call recorded". */
static void put_calls(struct nsp_sbuf *b, const struct nsp_trace *t) {
  size_t n = 0;
  for (int api = 0; api < NSP_API_COUNT; api++) {
    if (!(t->api_seen[api / 8] & (1u << (api % 8)))) continue;
    if (n++ == 4) {
      nsp_sbuf_printf(b, ", ...");
      break;
    }
    nsp_sbuf_printf(b, "%snccl%s", n > 1 ? ", " : "only ", nsp_api_name(api));
  }
  if (!n) nsp_sbuf_printf(b, "no NCCL call recorded");
}

static int nonrank_note(struct nsp_job *job) {
  size_t n = 0;
  for (size_t i = 0; i < job->ntraces; i++) n += !nsp_an_is_rank(job, i);
  if (!n) return 0;
  struct nsp_sbuf b = {0};
  nsp_sbuf_printf(&b, "%zu traced process%s joined no communicator, so %s counted as %s (world sizes, missing ranks, "
                      "settings): ", n, n == 1 ? "" : "es", n == 1 ? "it is not" : "they are not",
                  n == 1 ? "a rank" : "ranks");
  size_t shown = 0;
  for (size_t i = 0; i < job->ntraces; i++) {
    const struct nsp_trace *t = job->traces[i];
    if (nsp_an_is_rank(job, i)) continue;
    if (shown == 4) {
      nsp_sbuf_printf(&b, "; and %zu more", n - shown);
      break;
    }
    nsp_sbuf_printf(&b, "%spid %u on host %s (", shown++ ? "; " : "", t->info.pid, t->info.host);
    put_calls(&b, t);
    if (t->env_rank >= 0 && t->env_rank_var)
      nsp_sbuf_printf(&b, "; %s=%d in its environment", t->env_rank_var, t->env_rank);
    if (t->info.end.state == NSP_END_RUNNING) nsp_sbuf_printf(&b, "; still running");
    nsp_sbuf_printf(&b, "; %s)", t->info.path);
  }
  NSP_TRY(nsp_job_note_take(job, &b));
  note_to_front(job);
  return 0;
}

/* Ranks of one run share communicators (at least the world, or the one
 * they split from).  Traces analysed as one run (they ran at the same
 * time, with the same launcher variables) that fall into groups with no
 * communicator in common may be separate jobs started together: a note
 * naming the groups.  Traces in no communicator are left out. */
static int comm_groups_note(struct nsp_job *job) {
  size_t n = job->ntraces;
  if (n < 2) return 0;
  size_t *group = malloc(n * sizeof *group);
  size_t ngroups = group ? nsp_an_comm_groups(job, group) : SIZE_MAX;
  int ret = ngroups == SIZE_MAX ? NSP_AN_ENOMEM : 0;
  if (!ret && ngroups > 1) {
    struct nsp_sbuf b = {0};
    nsp_sbuf_printf(&b, "the traces may come from %zu different runs or attempts (no communicator has ranks in more "
                        "than one of them, though they ran at the same time with the same launcher variables), and "
                        "are compared as if they were one job: ", ngroups);
    for (size_t g = 0; g < ngroups; g++) {
      size_t shown = 0, k = 0;
      nsp_sbuf_printf(&b, "%sgroup %zu: ", g ? "; " : "", g + 1);
      for (size_t i = 0; i < n; i++) {
        if (group[i] != g) continue;
        if (shown < 4) nsp_sbuf_printf(&b, "%s%s", shown++ ? ", " : "", job->traces[i]->info.path);
        k++;
      }
      if (k > shown) nsp_sbuf_printf(&b, " and %zu more", k - shown);
    }
    nsp_sbuf_printf(&b, "; if they are separate jobs, analyse each one's traces on their own");
    ret = nsp_job_note_take(job, &b);
    if (!ret) note_to_front(job);
  }
  free(group);
  return ret;
}

static int check(struct nsp_job *job) {
  NSP_TRY(nonrank_note(job));
  if (job->nruns < 2 || !job->run_all) NSP_TRY(comm_groups_note(job));
  return runs_note(job); /* first of all */
}

const struct nsp_rule nsp_rule_runs = {
    .name = "runs",
    .checks = "which runs the traces come from (launcher variables, world communicators, time) and which one is "
              "analysed; processes that joined no communicator",
    .check = check, /* makes no finding: notes */
};
