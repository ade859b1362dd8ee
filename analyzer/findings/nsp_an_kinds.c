/* nsp_an_kinds.c - the kinds table (nsp_finding_kinds.h) as data, and the
 * names of the analyzer's other enums (roles, error sources, errors). */
#include <string.h>

#include "nsp_an_finding.h"

/* The kinds table (nsp_finding_kinds.h), one entry per line. */
static const struct nsp_finding_kind_info nsp_kinds[NSP_FIND_KIND_COUNT] = {
#define NSP_X_KIND_INFO(id, name, cls, ranks, sides, odd, later, hint) {id, name, cls, ranks, sides, odd, later, hint},
    NSP_FINDING_KINDS(NSP_X_KIND_INFO)
#undef NSP_X_KIND_INFO
};
/* The values of enum nsp_finding_kind are API: a kind added anywhere but
 * at the end of the table would move the ones after it. */
_Static_assert(NSP_FIND_SIGNAL == 21 && NSP_FIND_CALL_NEVER_RETURNED == 23,
               "finding kinds are added at the end of the table");

const struct nsp_finding_kind_info *nsp_finding_kind_info(int kind) {
  return kind >= 0 && kind < NSP_FIND_KIND_COUNT ? &nsp_kinds[kind] : NULL;
}

const char *nsp_finding_class_name(int order_class) {
  static const char *const names[] = {"mismatch", "failure", "stopped", "environment"};
  return order_class >= 0 && order_class < 4 ? names[order_class] : "unknown";
}

const char *nsp_rank_space_name(int rank_space) {
  static const char *const names[] = {"communicator", "job, with comm_rank", "job", "communicator, else job"};
  return rank_space >= 0 && rank_space < 4 ? names[rank_space] : "unknown";
}

const char *nsp_side_shape_name(int sides) {
  static const char *const names[] = {"by call",          "sender, receiver",  "by last seq",
                                      "origin, by result", "by role",           "by value",
                                      "origin, by signal", "shifted, by call"};
  return sides >= 0 && (size_t)sides < sizeof names / sizeof *names ? names[sides] : "unknown";
}

int nsp_finding_job_ranks(const struct nsp_finding *f) {
  const struct nsp_finding_kind_info *k = nsp_finding_kind_info(f->kind);
  if (!k) return 0;
  return k->rank_space == NSP_RANKS_JOB || k->rank_space == NSP_RANKS_JOB_IN_COMM ||
         (k->rank_space == NSP_RANKS_COMM_OR_JOB && !f->comm_id);
}

int nsp_finding_names_comm(const struct nsp_finding *f) {
  const struct nsp_finding_kind_info *k = nsp_finding_kind_info(f->kind);
  return f->comm_id || (k && (k->rank_space == NSP_RANKS_COMM || k->rank_space == NSP_RANKS_JOB_IN_COMM));
}

int nsp_finding_kind_is_env(int kind) {
  const struct nsp_finding_kind_info *k = nsp_finding_kind_info(kind);
  return k && k->order_class == NSP_CLASS_ENV;
}

const char *nsp_side_role_name(int role) {
  switch (role) {
    case NSP_ROLE_NONE: return "";
    case NSP_ROLE_NOT_ARRIVED: return "not-arrived";
    case NSP_ROLE_WAITING: return "waiting";
    case NSP_ROLE_COMPLETED: return "completed";
    case NSP_ROLE_FAILED: return "failed";
    case NSP_ROLE_UNTRACKED: return "untracked";
    case NSP_ROLE_ARRIVAL_UNKNOWN: return "arrival-unknown";
    default: return "unknown";
  }
}

const char *nsp_end_state_name(int state) {
  static const char *const names[] = {"unknown", "exited", "running", "killed", "crashed"};
  return state >= 0 && state <= NSP_END_CRASHED ? names[state] : "invalid";
}

const char *nsp_end_source_name(int source) {
  static const char *const names[] = {"none", "exit-record", "crash-ring", "proc", "signal"};
  return source >= 0 && source <= NSP_ENDSRC_SIGNAL ? names[source] : "invalid";
}

const char *nsp_finding_kind_name(int kind) {
  const struct nsp_finding_kind_info *k = nsp_finding_kind_info(kind);
  return k ? k->name : "unknown";
}

int nsp_finding_kind_from_name(const char *name) {
  for (int i = 0; name && i < NSP_FIND_KIND_COUNT; i++)
    if (!strcmp(name, nsp_kinds[i].name)) return i;
  return -1;
}

const char *nsp_finding_kind_hint(int kind) {
  const struct nsp_finding_kind_info *k = nsp_finding_kind_info(kind);
  return k ? k->hint : "";
}

const char *nsp_call_source_name(int source) {
  switch (source) {
    case NSP_SRC_CALL: return "call";
    case NSP_SRC_COMM_INIT: return "comm-init";
    case NSP_SRC_COMM_END: return "comm-end";
    case NSP_SRC_ASYNC: return "async-error";
    case NSP_SRC_REDOP: return "redop";
    default: return "unknown";
  }
}

const char *nsp_an_strerror(int err) {
  switch (err) {
    case NSP_AN_OK: return "success";
    case NSP_AN_ENOMEM: return "out of memory";
    case NSP_AN_EREAD: return "cannot read trace";
    case NSP_AN_EINVAL: return "invalid argument";
    case NSP_AN_ESTATE: return "job already analysed";
    default: return "unknown error";
  }
}

