/* nsp_an_summary.c - the summary paragraph: the findings counted by kind
 * and the first one (likely cause first) with its communicator, message
 * and hint; or, without findings, what was checked and how much of it the
 * traces covered; and the ranks the wavefront could not judge. */
#include <stdlib.h>
#include <string.h>

#include "nsp_an_job.h"

/* ---- what the traces could not see ---------------------------------------- */

enum { CAV_RUNNING, CAV_KILLED, CAV_CRASHED, CAV_FAILED, CAV_INFLIGHT, CAV_EXIT_INFLIGHT, CAV_UNKNOWN,
       CAV_RING_IGNORED, CAV_N };

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
    case CAV_UNKNOWN: return e->state == NSP_END_UNKNOWN && e->format_minor >= 5 && t->ring_bad != 2;
    default: return e->state == NSP_END_UNKNOWN && e->format_minor >= 5 && t->ring_bad == 2;
  }
}

/* Processes that joined no communicator named one by one, at most. */
#define NSP_NONRANKS_NAMED 2

/* The processes with caveat c as "rank 3", "ranks 0-2" (job ranks), each
 * that joined no communicator by pid and host (nsp_an_put_nonrank; "N
 * more processes that joined no communicator" past a few), and "N
 * processes without a rank"; returns how many. */
static size_t put_who(struct nsp_sbuf *b, const struct nsp_job *job, int c, int *rk) {
  size_t n = 0, norank = 0, nonrank = 0, named = 0;
  for (size_t i = 0; i < job->ntraces; i++) {
    if (!has_caveat(job->traces[i], c)) continue;
    if (!nsp_an_is_rank(job, i)) nonrank++;
    else if (job->traces[i]->info.rank >= 0) rk[n++] = job->traces[i]->info.rank;
    else norank++;
  }
  qsort(rk, n, sizeof *rk, nsp_an_cmp_int);
  if (n) nsp_an_put_job_ranks(b, job, rk, n);
  for (size_t i = 0; i < job->ntraces && named < NSP_NONRANKS_NAMED; i++) {
    if (!has_caveat(job->traces[i], c) || nsp_an_is_rank(job, i)) continue;
    nsp_sbuf_printf(b, "%s", n || named ? "; " : "");
    nsp_an_put_nonrank(b, job->traces[i]);
    named++;
  }
  if (nonrank > named)
    nsp_sbuf_printf(b, " and %zu more process%s that joined no communicator", nonrank - named,
                    nonrank - named == 1 ? "" : "es");
  else if (named && !norank)
    nsp_sbuf_printf(b, ","); /* "..., which joined no communicator (RANK=0 ...), ended" */
  if (norank)
    nsp_sbuf_printf(b, "%s%zu process%s without a rank", n || nonrank ? " and " : "", norank, norank == 1 ? "" : "es");
  return n + nonrank + norank;
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
    cv->unknown_end += has_caveat(t, CAV_UNKNOWN) || has_caveat(t, CAV_RING_IGNORED);
    cv->inflight += has_caveat(t, CAV_INFLIGHT) || has_caveat(t, CAV_EXIT_INFLIGHT);
    cv->libnccl += t->nlibnccl > 0;
    if (has_caveat(t, CAV_RUNNING) && t->info.end.age_ns > cv->heard_ns) cv->heard_ns = t->info.end.age_ns;
  }
  int *rk = malloc((job->ntraces ? job->ntraces : 1) * sizeof *rk);
  if (!rk) return 0; /* the counts stand; b's text is lost with the memory */
  static const char *const said[CAV_N][2] = {
      [CAV_RUNNING] = {" is still running", " are still running"},
      [CAV_KILLED] = {" ended without a clean exit (a signal such as SIGKILL, SIGTERM or SIGINT, the OOM killer, or _exit)",
                      " ended without a clean exit (a signal such as SIGKILL, SIGTERM or SIGINT, the OOM killer, or _exit)"},
      [CAV_CRASHED] = {" crashed (a fatal signal)", " crashed (fatal signals)"},
      [CAV_FAILED] = {" exited with a non-zero status (an error, not a clean exit)",
                      " exited with non-zero statuses (errors, not clean exits)"},
      [CAV_INFLIGHT] = {" has calls in flight (never returned)", " have calls in flight (never returned)"},
      [CAV_EXIT_INFLIGHT] = {" exited while other threads were inside NCCL calls",
                             " exited while other threads were inside NCCL calls"},
      [CAV_UNKNOWN] = {" left no exit record and no crash ring: how it ended is unknown",
                       " left no exit record and no crash ring: how they ended is unknown"},
      [CAV_RING_IGNORED] = {" left no exit record, and its crash ring is unreadable and was ignored: how it ended "
                            "is unknown",
                            " left no exit record, and their crash rings are unreadable and were ignored: how they "
                            "ended is unknown"},
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
      nsp_an_put_process(b, job, t);
      nsp_sbuf_printf(b, " loaded %s", t->libnccl[l].path);
      if (t->libnccl[l].version > 0)
        nsp_sbuf_printf(b, " (NCCL %d.%d.%d)", t->libnccl[l].version / 10000, t->libnccl[l].version % 10000 / 100,
                        t->libnccl[l].version % 100);
      nsp_sbuf_printf(b, ", which ncclspy does not trace");
    }
  }
  return items > 0;
}

/* ---- what the traces lost ------------------------------------------------- */

/* What trace t lost, ", "-separated clauses, into b: records dropped, a
 * damaged or cut file, no records, communicator records lost or ignored,
 * collectives without a seq, a longer copy not read, completions not
 * followed, a damaged crash ring (every reason the loader's notes give).
 * Returns whether there was any. */
static int put_trace_gaps(struct nsp_sbuf *b, const struct nsp_job *job, const struct nsp_trace *t) {
  size_t n = 0;
  unsigned long long at;
#define NSP_CLAUSE() (nsp_sbuf_printf(b, "%s", n++ ? ", " : ""), nsp_an_put_process(b, job, t))
  if (t->info.dropped) {
    uint64_t all = t->info.dropped + t->info.records;
    uint64_t pct = (t->info.dropped * 100 + all / 2) / all;
    nsp_sbuf_printf(b, "%s", n++ ? ", " : "");
    if (pct) nsp_sbuf_printf(b, "%llu%% of ", (unsigned long long)pct);
    else nsp_sbuf_printf(b, "under 1%% of ");
    nsp_an_put_process(b, job, t);
    nsp_sbuf_printf(b, "'s records were dropped (");
    nsp_an_put_drop_reasons(b, t);
    nsp_sbuf_printf(b, ")");
  }
  if (t->damaged) {
    NSP_CLAUSE();
    nsp_sbuf_printf(b, "'s trace is damaged at byte %zu (", t->damage_at);
    if (t->damaged > 1) nsp_sbuf_printf(b, "%u damaged regions, ", t->damaged);
    nsp_sbuf_count(b, t->damage_skipped, "byte", NULL);
    nsp_sbuf_printf(b, " skipped)");
  } else if (nsp_an_trace_cut(t, &at)) {
    NSP_CLAUSE();
    nsp_sbuf_printf(b, "'s trace is cut at byte %llu", at);
  } else if (!t->info.records) {
    NSP_CLAUSE();
    nsp_sbuf_printf(b, "'s trace has no records");
  }
  if (t->orphan_calls) {
    NSP_CLAUSE();
    nsp_sbuf_printf(b, "'s trace lost the records of its communicators (");
    nsp_sbuf_count(b, t->orphan_calls, "call", NULL);
    nsp_sbuf_printf(b, " on them not analysed)");
  }
  if (t->bad_seq) {
    NSP_CLAUSE();
    nsp_sbuf_printf(b, "'s trace has ");
    nsp_sbuf_count(b, t->bad_seq, "collective", NULL);
    nsp_sbuf_printf(b, " without a usable seq");
  }
  if (t->rebind_refused) {
    NSP_CLAUSE();
    nsp_sbuf_printf(b, "'s trace has ");
    nsp_sbuf_count(b, t->rebind_refused, "COMM record", NULL);
    nsp_sbuf_printf(b, " that %s ignored", nsp_plural(t->rebind_refused, "was", "were"));
  }
  if (t->longer_copy) {
    NSP_CLAUSE();
    nsp_sbuf_printf(b, "'s trace has a copy ");
    nsp_sbuf_count(b, t->longer_copy, "byte", NULL);
    nsp_sbuf_printf(b, " longer that was not read");
  }
  if (t->pend_overflow) {
    NSP_CLAUSE();
    nsp_sbuf_printf(b, "'s trace had too many calls awaiting completion (later ones taken as completed)");
  }
  if (t->ring_bad) {
    NSP_CLAUSE();
    nsp_sbuf_printf(b, "'s crash ring %s", t->ring_bad == 2 ? "is unreadable and was ignored" : "is damaged (the rest was read)");
  }
  if (t->ring_lost) {
    NSP_CLAUSE();
    nsp_sbuf_printf(b, "'s crash ring lost ");
    nsp_sbuf_count(b, t->ring_lost, "record", NULL);
  }
#undef NSP_CLAUSE
  return n > 0;
}

/* Whether member m's trace ends before collectives that others completed
 * (the wavefront rule's nsp_member.went_on_by). */
static int went_on(const struct nsp_member *m) { return m->went_on_by != 0; }

/* Everything the traces lost (put_trace_gaps, up to 4 traces, then a
 * count) and the ranks whose traces end before collectives that others
 * completed, ", "-separated, into b; counts the traces in
 * job->caveats.incomplete.  Returns whether there was any, or
 * NSP_AN_ENOMEM. */
static int put_coverage(struct nsp_job *job, struct nsp_sbuf *b) {
  size_t shown = 0, more = 0;
  job->caveats.incomplete = job->nunread;
  /* The traces with a member that went on: one pass over the members, not
   * one per trace (quadratic in ranks). */
  unsigned char *went = calloc(job->ntraces ? job->ntraces : 1, 1);
  if (!went) return NSP_AN_ENOMEM;
  for (size_t k = 0; k < job->nmembers; k++)
    if (job->members[k].trace < job->ntraces && went_on(&job->members[k])) went[job->members[k].trace] = 1;
  for (size_t i = 0; i < job->ntraces; i++) {
    const struct nsp_trace *t = job->traces[i];
    struct nsp_sbuf tb = {0};
    int gap = put_trace_gaps(&tb, job, t);
    char *text = nsp_sbuf_take(&tb);
    if (!gap) gap = went[i];
    job->caveats.incomplete += gap != 0;
    if (gap && text && text[0]) {
      if (shown++ == 4) more++;
      else nsp_sbuf_printf(b, "%s%s", shown > 1 ? ", " : "", text);
    }
    free(text);
  }
  free(went);
  for (size_t ci = 0; ci < job->ncomms; ci++) {
    const struct nsp_an_comm *c = job->comms[ci];
    for (size_t k = 0; k < c->nmembers; k++) {
      const struct nsp_member *m = &job->members[c->members[k]];
      if (!went_on(m)) continue;
      if (shown++ >= 4) {
        more++;
        continue;
      }
      nsp_sbuf_printf(b, "%s", shown > 1 ? ", " : "");
      nsp_an_put_went_on(b, job, c, m, &job->members[m->went_on_by - 1]);
    }
  }
  if (more) nsp_sbuf_printf(b, " (and %zu more)", more);
  if (job->nunread)
    nsp_sbuf_printf(b, "%s%zu trace file%s could not be read", shown ? ", " : "", job->nunread,
                    job->nunread == 1 ? "" : "s");
  return job->caveats.incomplete > 0 || job->nunread;
}

int nsp_an_build_summary(struct nsp_job *job) {
  struct nsp_sbuf b = {0};
  uint64_t ncoll = 0, np2p = 0;
  for (size_t i = 0; i < job->ncomms; i++) {
    ncoll += job->comms[i]->info.ncoll;
    np2p += job->comms[i]->info.np2p;
  }
  /* What the traces could not see: said even when nothing was found. */
  struct nsp_sbuf cb = {0};
  int caveats = put_caveats(job, &cb);
  char *cav = nsp_sbuf_take(&cb);
  if (caveats && !cav) return NSP_AN_ENOMEM;
  /* Incomplete coverage: what the traces lost (said even with findings). */
  struct nsp_sbuf gb = {0};
  int partial = put_coverage(job, &gb);
  char *gaps = nsp_sbuf_take(&gb);
  if (partial < 0 || (partial && !gaps)) {
    free(gaps);
    free(cav);
    return NSP_AN_ENOMEM;
  }
  if (!job->nfindings) {
    if (!job->ntraces) /* nothing seen: nothing to call fine either */
      nsp_sbuf_printf(&b, "No trace was read, so nothing was checked (");
    else if (caveats) /* never "No problems found" about what the traces did not see */
      nsp_sbuf_printf(&b, "No problem found in what the traces show (%zu trace%s, ", job->ntraces,
                      job->ntraces == 1 ? "" : "s");
    else
      nsp_sbuf_printf(&b, "No problems found in %s%zu trace%s (", partial ? "what was recorded in " : "", job->ntraces,
                      job->ntraces == 1 ? "" : "s");
    nsp_sbuf_count(&b, job->ncomms, "communicator", NULL);
    nsp_sbuf_printf(&b, ", ");
    nsp_sbuf_count(&b, ncoll, "collective call", NULL);
    nsp_sbuf_printf(&b, ", ");
    nsp_sbuf_count(&b, np2p, "send/recv call", NULL);
    nsp_sbuf_printf(&b, ")");
    if (partial) nsp_sbuf_printf(&b, "; coverage is incomplete: %s", gaps);
    if (caveats) nsp_sbuf_printf(&b, ", but: %s", cav);
    nsp_sbuf_printf(&b, ".");
  } else {
    const struct nsp_finding *f = &job->findings[0].pub;
    size_t counts[NSP_FIND_KIND_COUNT] = {0};
    for (size_t i = 0; i < job->nfindings; i++) counts[job->findings[i].pub.kind]++;
    /* "3 findings (hang: 3)": a kind's name is no noun to count. */
    nsp_sbuf_count(&b, job->nfindings, "finding", NULL);
    nsp_sbuf_printf(&b, " (");
    int first = 1;
    for (int k = 0; k < NSP_FIND_KIND_COUNT; k++) {
      if (!counts[k]) continue;
      nsp_sbuf_printf(&b, "%s%s: %zu", first ? "" : ", ", nsp_finding_kind_name(k), counts[k]);
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
    if (partial || caveats)
      nsp_sbuf_printf(&b, " Also: %s%s%s%s.", partial ? "coverage is incomplete: " : "", partial ? gaps : "",
                      partial && caveats ? "; " : "", caveats ? cav : "");
  }
  free(cav);
  free(gaps);
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
