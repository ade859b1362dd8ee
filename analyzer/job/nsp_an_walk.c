/* nsp_an_walk.c - from the loaded model to findings: the model prepared,
 * then the rule table walked (rules/nsp_rules.c): every rule's check in
 * table order, its links stage by stage, pass 2 (details read again from
 * the files), then every finding's message from the rule that made it,
 * the order and the summary.  Every rule is linear in members, seq pages
 * and send/recv runs, plus a sort per communicator: no rank x rank or
 * seq x rank loops. */
#include <stdlib.h>

#include "nsp_an_job.h"

/* Processes of findings that name job ranks: their rank in the finding's
 * communicator (-1 when not a member, or no communicator). */
static int proc_comm_ranks(struct nsp_job *job) {
  int *rank_of = NULL; /* trace -> rank in the finding's communicator, -1 */
  for (size_t i = 0; i < job->nfindings; i++) {
    struct nsp_finding_priv *f = &job->findings[i];
    if (!nsp_finding_job_ranks(&f->pub) || f->comm_ranks_set) continue;
    if (!rank_of && !(rank_of = malloc((job->ntraces ? job->ntraces : 1) * sizeof *rank_of))) return NSP_AN_ENOMEM;
    for (size_t t = 0; t < job->ntraces; t++) rank_of[t] = -1;
    const struct nsp_an_comm *c = f->comm_index != SIZE_MAX ? job->comms[f->comm_index] : NULL;
    for (size_t k = c ? c->nmembers : 0; k-- > 0;) /* the first member of a trace wins */
      rank_of[job->members[c->members[k]].trace] = job->members[c->members[k]].rank;
    for (size_t s = 0; s < f->pub.nsides; s++)
      for (size_t p = 0; p < f->sides[s].nranks; p++) {
        struct nsp_proc *pr = (struct nsp_proc *)&f->sides[s].procs[p];
        pr->comm_rank = rank_of[pr->trace];
      }
  }
  free(rank_of);
  return 0;
}

/* Processes of findings about a communicator: their finalize, destroy,
 * abort or revoke of it, when they made one (the reports say it next to
 * the process). */
static int proc_comm_ends(struct nsp_job *job) {
  const struct nsp_member **of = NULL; /* trace -> its first member of the finding's communicator */
  for (size_t i = 0; i < job->nfindings; i++) {
    struct nsp_finding_priv *f = &job->findings[i];
    const struct nsp_an_comm *c = f->comm_index != SIZE_MAX ? job->comms[f->comm_index] : NULL;
    if (!c) continue;
    if (!of && !(of = malloc((job->ntraces ? job->ntraces : 1) * sizeof *of))) return NSP_AN_ENOMEM;
    for (size_t t = 0; t < job->ntraces; t++) of[t] = NULL;
    for (size_t k = c->nmembers; k-- > 0;) of[job->members[c->members[k]].trace] = &job->members[c->members[k]];
    for (size_t s = 0; s < f->pub.nsides; s++)
      for (size_t p = 0; p < f->sides[s].nranks; p++) {
        struct nsp_proc *pr = (struct nsp_proc *)&f->sides[s].procs[p];
        const struct nsp_member *m = of[pr->trace];
        if (!m || !m->ended) continue;
        pr->comm_end_api = m->end_api;
        pr->comm_end_ns = m->end_t;
      }
  }
  free(of);
  return 0;
}

/* The messages of rule r's findings that have none yet, in creation order. */
static int rule_messages(struct nsp_job *job, const struct nsp_rule *r) {
  for (size_t i = 0; i < job->nfindings; i++) {
    struct nsp_finding_priv *f = &job->findings[i];
    if (f->message || nsp_rule_of_kind(f->pub.kind) != r) continue;
    NSP_TRY(r->message(job, f));
  }
  return 0;
}

/* Native frames as function and file:line: the signal stacks, and the
 * call sites findings name (pass 2 found them). */
static int symbolize(struct nsp_job *job) {
  for (size_t i = 0; i < job->ntraces; i++) NSP_TRY(nsp_an_symbolize_stack(job, job->traces[i], job->traces[i]->sig_stack));
  for (size_t i = 0; i < job->nfindings; i++) {
    const struct nsp_finding *f = &job->findings[i].pub;
    for (size_t k = 0; k < f->nsides; k++)
      for (size_t p = 0; p < f->sides[k].nranks; p++) {
        const struct nsp_proc *pr = &f->sides[k].procs[p];
        if (pr->site && pr->trace < job->ntraces) NSP_TRY(nsp_an_symbolize_stack(job, job->traces[pr->trace], pr->site));
      }
  }
  return 0;
}

int nsp_an_run_rules(struct nsp_job *job) {
  NSP_TRY(nsp_an_prepare(job));
  for (size_t r = 0; r < nsp_nrules; r++) {
    const struct nsp_rule *rule = nsp_rules[r];
    if (rule->check) NSP_TRY(rule->check(job));
    for (size_t i = 0; rule->check_comm && i < job->ncomms; i++) NSP_TRY(rule->check_comm(job, job->comms[i]));
  }
  for (int stage = NSP_LINK_FIRST; stage <= NSP_LINK_LAST; stage++)
    for (size_t r = 0; r < nsp_nrules; r++) {
      const struct nsp_rule *rule = nsp_rules[r];
      if (!rule->link || rule->link_stage != stage) continue;
      NSP_TRY(rule->link(job));
      if (rule->message && rule->message_when == NSP_MESSAGE_AFTER_LINK) NSP_TRY(rule_messages(job, rule));
    }
  NSP_TRY(nsp_an_fetch_p2p(job));
  NSP_TRY(nsp_an_fetch_sites(job));
  NSP_TRY(proc_comm_ranks(job));
  NSP_TRY(proc_comm_ends(job));
  NSP_TRY(symbolize(job));
  /* The other messages (the checks wrote some), finding by finding. */
  for (size_t i = 0; i < job->nfindings; i++) {
    struct nsp_finding_priv *f = &job->findings[i];
    const struct nsp_rule *rule = nsp_rule_of_kind(f->pub.kind);
    if (!f->message && rule && rule->message) NSP_TRY(rule->message(job, f));
    /* A rule that wrote none (a rule being written): the kind's name, so
     * every report has a message to print. */
    if (!f->message) {
      if (!(f->message = nsp_strdup(nsp_finding_kind_name(f->pub.kind)))) return NSP_AN_ENOMEM;
      f->pub.message = f->message;
    }
  }
  NSP_TRY(nsp_an_order_findings(job));
  NSP_TRY(nsp_an_build_summary(job));
  return nsp_an_build_headline(job);
}
