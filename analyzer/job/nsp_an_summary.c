/* nsp_an_summary.c - the summary paragraph: the findings counted by kind
 * and the first one (likely cause first) with its communicator, message
 * and hint; or, without findings, what was checked and how much of it the
 * traces covered; and the ranks the wavefront could not judge. */
#include <stdlib.h>
#include <string.h>

#include "nsp_an_job.h"

/* "rank 3" ("job rank 3" where communicators number ranks otherwise) or
 * the trace's path when it has no rank. */
static void put_trace_name(struct nsp_sbuf *b, const struct nsp_job *job, const struct nsp_trace *t) {
  if (t->info.rank >= 0) nsp_an_put_job_ranks(b, job, &t->info.rank, 1);
  else nsp_sbuf_printf(b, "%s", t->path);
}

/* ---- what the traces could not see ---------------------------------------- */

enum { CAV_RUNNING, CAV_KILLED, CAV_CRASHED, CAV_FAILED, CAV_INFLIGHT, CAV_EXIT_INFLIGHT, CAV_UNKNOWN, CAV_N };

/* Which caveat c trace t has. */
static int has_caveat(const struct nsp_trace *t, int c) {
  const struct nsp_end_info *e = &t->info.end;
  switch (c) {
    case CAV_RUNNING: return e->state == NSP_END_RUNNING;
    case CAV_KILLED: return e->state == NSP_END_KILLED;
    case CAV_CRASHED: return e->state == NSP_END_CRASHED;
    case CAV_FAILED: return e->state == NSP_END_EXITED && e->exit_status > 0;
    case CAV_INFLIGHT: return t->ninflight > 0 && e->state != NSP_END_EXITED;
    case CAV_EXIT_INFLIGHT: return e->state == NSP_END_EXITED && e->inflight > 0;
    default: return e->state == NSP_END_UNKNOWN && e->format_minor >= 5;
  }
}

/* The processes with caveat c as "rank 3", "ranks 0-2" (job ranks), and
 * "N processes without a rank"; returns how many. */
static size_t put_who(struct nsp_sbuf *b, const struct nsp_job *job, int c, int *rk) {
  size_t n = 0, norank = 0;
  for (size_t i = 0; i < job->ntraces; i++) {
    if (!has_caveat(job->traces[i], c)) continue;
    if (job->traces[i]->info.rank >= 0) rk[n++] = job->traces[i]->info.rank;
    else norank++;
  }
  qsort(rk, n, sizeof *rk, nsp_an_cmp_int);
  if (n) nsp_an_put_job_ranks(b, job, rk, n);
  if (norank) nsp_sbuf_printf(b, "%s%zu process%s without a rank", n ? " and " : "", norank, norank == 1 ? "" : "es");
  return n + norank;
}

/* Counts the caveats (job->caveats) and writes them, "; "-separated, into
 * b; returns whether there was any. */
static int put_caveats(struct nsp_job *job, struct nsp_sbuf *b) {
  struct nsp_job_caveats *cv = &job->caveats;
  memset(cv, 0, sizeof *cv);
  for (size_t i = 0; i < job->ntraces; i++) {
    const struct nsp_trace *t = job->traces[i];
    cv->running += has_caveat(t, CAV_RUNNING);
    cv->unclean += has_caveat(t, CAV_KILLED) || has_caveat(t, CAV_CRASHED) || has_caveat(t, CAV_FAILED);
    cv->unknown_end += has_caveat(t, CAV_UNKNOWN);
    cv->inflight += has_caveat(t, CAV_INFLIGHT) || has_caveat(t, CAV_EXIT_INFLIGHT);
    cv->libnccl += t->nlibnccl > 0;
    if (has_caveat(t, CAV_RUNNING) && t->info.end.age_ns > cv->heard_ns) cv->heard_ns = t->info.end.age_ns;
  }
  int *rk = malloc((job->ntraces ? job->ntraces : 1) * sizeof *rk);
  if (!rk) return 0; /* the counts stand; b's text is lost with the memory */
  static const char *const said[CAV_N][2] = {
      [CAV_RUNNING] = {" is still running", " are still running"},
      [CAV_KILLED] = {" ended without a clean exit (SIGKILL, the OOM killer or _exit)",
                      " ended without a clean exit (SIGKILL, the OOM killer or _exit)"},
      [CAV_CRASHED] = {" crashed (a fatal signal)", " crashed (fatal signals)"},
      [CAV_FAILED] = {" exited with a non-zero status (an error, not a clean exit)",
                      " exited with non-zero statuses (errors, not clean exits)"},
      [CAV_INFLIGHT] = {" has calls in flight (never returned)", " have calls in flight (never returned)"},
      [CAV_EXIT_INFLIGHT] = {" exited while other threads were inside NCCL calls",
                             " exited while other threads were inside NCCL calls"},
      [CAV_UNKNOWN] = {" left no exit record and no crash ring: how it ended is unknown",
                       " left no exit record and no crash ring: how they ended is unknown"},
  };
  size_t items = 0;
  for (int c = 0; c < CAV_N; c++) {
    struct nsp_sbuf w = {0};
    size_t n = put_who(&w, job, c, rk);
    char *who = nsp_sbuf_take(&w);
    if (n && who) {
      nsp_sbuf_printf(b, "%s%s%s", items++ ? "; " : "", who, said[c][n > 1]);
      if (c == CAV_RUNNING)
        nsp_sbuf_printf(b, " (last heard %s%.1f s ago)", n > 1 ? "at most " : "", (double)cv->heard_ns / 1e9);
    }
    free(who);
  }
  free(rk);
  size_t shown = 0;
  for (size_t i = 0; i < job->ntraces; i++) {
    const struct nsp_trace *t = job->traces[i];
    for (size_t l = 0; l < t->nlibnccl; l++) {
      if (shown++ == 4) {
        nsp_sbuf_printf(b, "; ...");
        break;
      }
      nsp_sbuf_printf(b, "%s", items++ ? "; " : "");
      put_trace_name(b, job, t);
      nsp_sbuf_printf(b, " loaded %s", t->libnccl[l].path);
      if (t->libnccl[l].version > 0)
        nsp_sbuf_printf(b, " (NCCL %d.%d.%d)", t->libnccl[l].version / 10000, t->libnccl[l].version % 10000 / 100,
                        t->libnccl[l].version % 100);
      nsp_sbuf_printf(b, ", which ncclspy does not trace");
    }
  }
  return items > 0;
}

int nsp_an_build_summary(struct nsp_job *job) {
  struct nsp_sbuf b = {0};
  uint64_t ncoll = 0, np2p = 0;
  for (size_t i = 0; i < job->ncomms; i++) {
    ncoll += job->comms[i]->info.ncoll;
    np2p += job->comms[i]->info.np2p;
  }
  /* Incomplete coverage: traces that dropped records or were cut. */
  int partial = 0;
  for (size_t i = 0; i < job->ntraces; i++) {
    unsigned long long at;
    if (job->traces[i]->info.dropped || nsp_an_trace_cut(job->traces[i], &at)) partial = 1;
  }
  /* What the traces could not see: said even when nothing was found. */
  struct nsp_sbuf cb = {0};
  int caveats = put_caveats(job, &cb);
  char *cav = nsp_sbuf_take(&cb);
  if (caveats && !cav) return NSP_AN_ENOMEM;
  if (!job->nfindings) {
    if (!job->ntraces) /* nothing seen: nothing to call fine either */
      nsp_sbuf_printf(&b, "No trace was read, so nothing was checked (");
    else if (caveats) /* never "No problems found" about what the traces did not see */
      nsp_sbuf_printf(&b, "No problem found in what the traces show (%zu trace%s, ", job->ntraces,
                      job->ntraces == 1 ? "" : "s");
    else
      nsp_sbuf_printf(&b, "No problems found in %s%zu trace%s (", partial ? "what was recorded in " : "", job->ntraces,
                      job->ntraces == 1 ? "" : "s");
    nsp_sbuf_printf(&b, "%zu communicator%s, %llu collective calls, %llu send/recv calls)", job->ncomms,
                    job->ncomms == 1 ? "" : "s", (unsigned long long)ncoll, (unsigned long long)np2p);
    if (partial) {
      nsp_sbuf_printf(&b, "; coverage is incomplete: ");
      size_t shown = 0, more = 0;
      for (size_t i = 0; i < job->ntraces; i++) {
        const struct nsp_trace *t = job->traces[i];
        unsigned long long at;
        int cut = nsp_an_trace_cut(t, &at);
        if (!t->info.dropped && !cut) continue;
        if (shown == 4) {
          more++;
          continue;
        }
        if (shown++) nsp_sbuf_printf(&b, ", ");
        if (t->info.dropped) {
          uint64_t all = t->info.dropped + t->info.records;
          uint64_t pct = (t->info.dropped * 100 + all / 2) / all;
          if (pct) nsp_sbuf_printf(&b, "%llu%% of ", (unsigned long long)pct);
          else nsp_sbuf_printf(&b, "under 1%% of ");
          put_trace_name(&b, job, t);
          nsp_sbuf_printf(&b, "'s records were dropped (");
          nsp_an_put_drop_reasons(&b, t);
          nsp_sbuf_printf(&b, ")%s", cut ? " and " : "");
        } else {
          put_trace_name(&b, job, t);
          nsp_sbuf_printf(&b, "'s ");
        }
        if (cut) nsp_sbuf_printf(&b, "trace is cut at byte %llu", at);
      }
      if (more) nsp_sbuf_printf(&b, " (and %zu more trace%s)", more, more == 1 ? "" : "s");
    }
    if (caveats) nsp_sbuf_printf(&b, ", but: %s", cav);
    nsp_sbuf_printf(&b, ".");
  } else {
    const struct nsp_finding *f = &job->findings[0].pub;
    size_t counts[NSP_FIND_KIND_COUNT] = {0};
    for (size_t i = 0; i < job->nfindings; i++) counts[job->findings[i].pub.kind]++;
    nsp_sbuf_printf(&b, "%zu finding%s (", job->nfindings, job->nfindings == 1 ? "" : "s");
    int first = 1;
    for (int k = 0; k < NSP_FIND_KIND_COUNT; k++) {
      if (!counts[k]) continue;
      nsp_sbuf_printf(&b, "%s%zu %s", first ? "" : ", ", counts[k], nsp_finding_kind_name(k));
      first = 0;
    }
    nsp_sbuf_printf(&b, ") in %zu trace%s. The first problem (%s)", job->ntraces, job->ntraces == 1 ? "" : "s",
                    nsp_finding_kind_name(f->kind));
    if (f->comm_id) nsp_sbuf_printf(&b, " is on communicator %016llx", (unsigned long long)f->comm_id);
    else if (nsp_finding_names_comm(f)) nsp_sbuf_printf(&b, " is on no communicator");
    if (f->comm) {
      nsp_sbuf_printf(&b, " (%d rank%s", f->comm->nranks, f->comm->nranks == 1 ? "" : "s");
      if (f->comm->parent_id)
        nsp_sbuf_printf(&b, ", split from %016llx with color %d", (unsigned long long)f->comm->parent_id,
                        f->comm->color);
      if (f->comm->name[0]) {
        nsp_sbuf_printf(&b, ", ");
        nsp_sbuf_quoted(&b, f->comm->name);
      }
      nsp_sbuf_printf(&b, ")");
    }
    /* Its hint is the finding's (printed once, under it). */
    nsp_sbuf_printf(&b, ": %s.", f->message);
    if (job->nfindings > 1) nsp_sbuf_printf(&b, " The other findings follow from it or are listed by likely cause.");
    if (caveats) nsp_sbuf_printf(&b, " Also: %s.", cav);
  }
  free(cav);
  /* Ranks the wavefront could not judge (their notes say more). */
  for (size_t ci = 0; ci < job->ncomms; ci++) {
    const struct nsp_an_comm *c = job->comms[ci];
    uint64_t reached = nsp_an_comm_reached(job, c);
    for (size_t k = 0; k < c->nmembers; k++) {
      const struct nsp_member *m = &job->members[c->members[k]];
      if (m->rank < 0 || m->last_seq >= reached || !nsp_an_member_uncovered(job, m)) continue;
      const struct nsp_trace *t = job->traces[m->trace];
      nsp_sbuf_printf(&b, " ");
      nsp_an_put_rank(&b, job, m->rank, m->trace);
      nsp_sbuf_printf(&b, "'s trace stops covering communicator %016llx at seq %llu because records were dropped (",
                      (unsigned long long)c->info.id, (unsigned long long)m->last_seq);
      nsp_an_put_drop_reasons(&b, t);
      nsp_sbuf_printf(&b, "): nothing after it is judged for that rank.");
    }
  }
  if (job->nnotes) nsp_sbuf_printf(&b, " See the %zu note%s below.", job->nnotes, job->nnotes == 1 ? "" : "s");
  job->summary = nsp_sbuf_take(&b);
  return job->summary ? 0 : NSP_AN_ENOMEM;
}
