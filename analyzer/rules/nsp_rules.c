/* nsp_rules.c - the rule table: every rule, in the order the rules run.
 * The order is the order findings are made in (their ids break the last
 * ties of the report's order), and the order of each link stage. */
#include "nsp_rule.h"

extern const struct nsp_rule nsp_rule_runs, nsp_rule_alignment, nsp_rule_p2p, nsp_rule_errors, nsp_rule_comm_init,
    nsp_rule_hangs, nsp_rule_wavefront, nsp_rule_env_process, nsp_rule_env_comm, nsp_rule_signals,
    nsp_rule_never_returned;

const struct nsp_rule *const nsp_rules[] = {
    &nsp_rule_runs,        /* traces of more than one run: a note, first */
    &nsp_rule_alignment,   /* rule 1 of docs/REPORT.md */
    &nsp_rule_p2p,         /* rule 2 */
    &nsp_rule_errors,      /* rule 4 */
    &nsp_rule_comm_init,   /* rule 8; before the hangs, which it explains, and the wavefront, which defers to it */
    &nsp_rule_hangs,       /* rule 5; before the wavefront, which defers to it */
    &nsp_rule_wavefront,   /* rule 3 */
    &nsp_rule_env_process, /* rule 6: values of each process */
    &nsp_rule_env_comm,    /* rule 6: members of each communicator */
    &nsp_rule_signals,     /* rule 7 */
    &nsp_rule_never_returned, /* rule 9: what no other finding names, last */
};
const size_t nsp_nrules = sizeof nsp_rules / sizeof *nsp_rules;

const struct nsp_rule *nsp_rule_of_kind(int kind) {
  for (size_t r = 0; r < nsp_nrules; r++)
    for (size_t k = 0; k < nsp_rules[r]->nkinds; k++)
      if (nsp_rules[r]->kinds[k] == kind) return nsp_rules[r];
  return NULL;
}
