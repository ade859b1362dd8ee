/* nsp_an_job.h - the analyzer's fourth layer: the job.  It walks the rule
 * table (nsp_an_walk.c), reads the details the findings name again from
 * the files (nsp_an_pass2.c), orders the findings (nsp_an_order.c), writes
 * the summary (nsp_an_summary.c), computes the performance figures
 * (nsp_an_perf.c) and implements the public API (nsp_an_job.c).  Sits on
 * the rules (nsp_rule.h); the front ends use nsp_analyze.h only. */
#ifndef NSP_AN_JOB_H
#define NSP_AN_JOB_H

#include "nsp_rule.h"

/* The analysis of nsp_job_analyze: the model prepared, the rules' checks,
 * links and messages, pass 2, the order, the summary.  0 or NSP_AN_ENOMEM. */
int nsp_an_run_rules(struct nsp_job *job);

/* Before the rules (nsp_an_runs.c): groups the traces into runs
 * (job->runs, newest first), and unless every run is asked for reads the
 * selected run's traces again into an empty model.  0, NSP_AN_ENOMEM, or
 * NSP_AN_EINVAL when job->run_sel names no run (job->err says). */
int nsp_an_select_run(struct nsp_job *job);

/* Pass 2: the time, result and call site of every send/recv a p2p finding
 * names (its side's call, and the finding's time); 0 or NSP_AN_ENOMEM. */
int nsp_an_fetch_p2p(struct nsp_job *job);
/* Pass 2: the call sites the rules asked for (nsp_an_want_site), reading
 * only traces that have sites; 0 or NSP_AN_ENOMEM. */
int nsp_an_fetch_sites(struct nsp_job *job);

/* Sorts the findings likely cause first (a finding that follows from
 * another right after the root of its chain, in the root's class) and
 * turns cause ids into indices (nsp_finding.cause).  0 or NSP_AN_ENOMEM. */
int nsp_an_order_findings(struct nsp_job *job);
/* The summary paragraph (nsp_job_summary), after the order.  0 or
 * NSP_AN_ENOMEM. */
int nsp_an_build_summary(struct nsp_job *job);
/* The headline (job->headline) from the first finding, or from the
 * summary when there is none: after the summary (nsp_an_headline.c). */
int nsp_an_build_headline(struct nsp_job *job);

void nsp_an_perf_free(struct nsp_perf *p);

#endif /* NSP_AN_JOB_H */
