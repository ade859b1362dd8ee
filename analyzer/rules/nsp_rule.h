/* nsp_rule.h - the analyzer's third layer: the rules, one file each, each
 * exporting one struct nsp_rule (libinput's dispatch interfaces, wlroots'
 * backend impls).  The job walks the rule table (nsp_rules.c): every
 * rule's check in table order, then the links by stage, then the messages
 * (job/nsp_an_walk.c).  Sits on the findings layer (nsp_an_finding.h). */
#ifndef NSP_RULE_H
#define NSP_RULE_H

#include "nsp_an_finding.h"

/* When a rule's link runs.  Stages run in this order, each walking the
 * rule table in order. */
enum nsp_link_stage {
  NSP_LINK_NONE = 0,  /* the rule links nothing */
  NSP_LINK_FIRST,     /* sees only what the checks made */
  NSP_LINK_ROOTS,     /* sees the causes NSP_LINK_FIRST set (which hangs are roots) */
  NSP_LINK_LAST,      /* explains only what nothing else explains (a dead rank) */
};

/* When a rule's message function runs. */
enum nsp_message_when {
  NSP_MESSAGE_LAST = 0,     /* after every link, pass 2 (the times, results and
                               call sites read again) and the processes'
                               communicator ranks */
  NSP_MESSAGE_AFTER_LINK,   /* right after its own link: the message names the
                               causes that link made, not the ones a later
                               stage adds */
};

struct nsp_rule {
  const char *name;   /* "alignment": a section of docs/REPORT.md, "Rules" */
  const char *checks; /* what it checks, one line */
  const int *kinds;   /* the finding kinds it can make (each kind is made
                         by one rule: a test checks the kinds table) */
  size_t nkinds;
  /* Make its findings (and notes), in a fixed order: finding ids follow
   * creation and break the last ties of the report's order.  check looks
   * at the whole job; check_comm, after it, at each communicator in turn
   * (nsp_job_comm order); either may be NULL.  Return 0 or NSP_AN_ENOMEM. */
  int (*check)(struct nsp_job *job);
  int (*check_comm)(struct nsp_job *job, struct nsp_an_comm *c);
  /* Sets cause_id of its findings to the findings they follow from (after
   * every check, at link_stage); NULL when it links nothing.  0 or
   * NSP_AN_ENOMEM. */
  int (*link)(struct nsp_job *job);
  int link_stage; /* enum nsp_link_stage */
  /* Writes f's message (one of its kinds; f->message is NULL); NULL when
   * the check writes its messages itself.  0 or NSP_AN_ENOMEM. */
  int (*message)(struct nsp_job *job, struct nsp_finding_priv *f);
  int message_when; /* enum nsp_message_when */
};

/* The kinds list of a rule: .kinds = NSP_RULE_KINDS(NSP_FIND_HANG, ...). */
#define NSP_RULE_KINDS(...) (const int[]){__VA_ARGS__}, sizeof((const int[]){__VA_ARGS__}) / sizeof(int)

/* The rule table, in the order the rules run (nsp_rules.c; each rule is
 * const struct nsp_rule nsp_rule_<name> in nsp_rule_<name>.c). */
extern const struct nsp_rule *const nsp_rules[];
extern const size_t nsp_nrules;
/* The rule that makes kind; NULL when none does. */
const struct nsp_rule *nsp_rule_of_kind(int kind);

#endif /* NSP_RULE_H */
