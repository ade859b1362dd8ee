/* nsp_an_finding.h - the analyzer's second layer: findings as the rules
 * build them.  The kinds table as data (nsp_an_kinds.c), building a
 * finding and its sides (nsp_an_finding.c), writing calls, ranks and hosts
 * into messages (nsp_an_format.c), and the hint table for errors
 * (nsp_an_hints.c).  Sits on the model (nsp_an_model.h); the rules and the
 * job sit on it. */
#ifndef NSP_AN_FINDING_H
#define NSP_AN_FINDING_H

#include "nsp_an_model.h"

/* A finding as the analyzer holds it: the public struct and what it owns,
 * plus what linking, pass 2 and ordering need. */
struct nsp_finding_priv {
  struct nsp_finding pub;
  struct nsp_side *sides;
  int *odd;
  char *message;
  char *hint_owned;
  char *setting_owned;
  char *lead; /* pub.lead */
  /* p2p: what pass 2 must fetch */
  size_t p2p_member[2]; /* sender, receiver member (SIZE_MAX none) */
  int order;            /* enum nsp_finding_class of its kind (the kinds
                           table), or of the root of its chain once ordered */
  size_t id;            /* creation index (findings are sorted later) */
  size_t cause_id;      /* id of the finding this follows from; SIZE_MAX none */
  size_t comm_index;    /* index in job->comms; SIZE_MAX none */
  int cycle;            /* hang: part of a circular wait */
  int comm_ranks_set;   /* the rule set its processes' comm_rank itself (the
                           ranks a communicator still being made gives them) */
  int64_t sort_time;    /* order key: the chain's root time */
  int depth;            /* order key: steps from the root of its chain */
};

/* ---- the kinds table (nsp_an_kinds.c) ------------------------------------- */

/* The kinds table's line of a kind the analyzer made (never NULL). */
static inline const struct nsp_finding_kind_info *nsp_an_kind(int kind) { return nsp_finding_kind_info(kind); }
/* A collective mismatch (its sides are calls at one seq). */
static inline int nsp_an_kind_is_mismatch(int kind) {
  int sides = nsp_an_kind(kind)->sides;
  return (sides == NSP_SIDES_BY_CALL || sides == NSP_SIDES_SHIFTED) && nsp_an_kind(kind)->order_class == NSP_CLASS_MISMATCH;
}
/* A hang or never-completed finding (its sides are roles at a seq). */
static inline int nsp_an_kind_is_hang(int kind) { return kind == NSP_FIND_HANG || kind == NSP_FIND_NEVER_COMPLETED; }

/* ---- building findings (nsp_an_finding.c) --------------------------------- */

/* A new finding of kind on communicator c (NULL: none): id set, class and
 * hint from the kinds table, cause none.  NULL when out of memory (it
 * moves job->findings: pointers to earlier findings become stale). */
struct nsp_finding_priv *nsp_an_new_finding(struct nsp_job *job, int kind, const struct nsp_an_comm *c);
/* The finding with this id, or NULL. */
struct nsp_finding_priv *nsp_an_finding_by_id(struct nsp_job *job, size_t id);
/* Frees what f owns (not f). */
void nsp_an_finding_free(struct nsp_finding_priv *f);
/* n cleared sides. */
int nsp_an_alloc_sides(struct nsp_finding_priv *f, size_t n);
/* n cleared processes for side s (ranks and procs owned by the side). */
int nsp_an_side_procs(struct nsp_side *s, size_t n, int **ranks, struct nsp_proc **procs);
/* Fills one process from a trace. */
void nsp_an_set_proc(struct nsp_job *job, struct nsp_proc *p, int *rank_slot, int rank, size_t trace);
/* Side of the given members (comm ranks). */
int nsp_an_side_from_members(struct nsp_job *job, struct nsp_side *s, const size_t *mi, size_t n);
/* qsort_r order of trace indices (ctx: the job): by job rank, then index. */
int nsp_an_cmp_trace_rank(const void *pa, const void *pb, void *ctx);
/* Side of the given traces ti[0..n) (job ranks, nsp_trace_info.rank). */
int nsp_an_side_from_traces(struct nsp_job *job, struct nsp_side *s, const size_t *ti, size_t n);
/* A process's last call on any communicator (call, without its error
 * text; its call site) and the earliest call it never completed
 * (blocked), as far as its trace says: what the ranks to look at did. */
void nsp_an_proc_last_call(struct nsp_proc *p, const struct nsp_trace *t);
void nsp_an_call_from_sig(struct nsp_call *c, const struct nsp_sig *s, uint64_t comm_id, uint64_t seq);
int nsp_an_set_side_text(struct nsp_side *s, const char *text);
/* Side text = the side's call, formatted. */
int nsp_an_side_text_call(struct nsp_side *s);
/* Sets the finding's odd ranks (copied, sorted). */
int nsp_an_set_odd(struct nsp_finding_priv *f, const int *ranks, size_t n);
/* Odd ones out: the ranks of every side but one that holds a strict
 * majority of the ranks, sorted.  Without such a side nobody is singled
 * out (two ranks against two, or one against one, says nothing about who
 * is wrong).  0 or NSP_AN_ENOMEM. */
int nsp_an_mark_odd(struct nsp_finding_priv *f);
/* Makes what b holds f's message (b is emptied).  0, or NSP_AN_ENOMEM
 * when b ran out of memory. */
int nsp_an_take_message(struct nsp_finding_priv *f, struct nsp_sbuf *b);

/* Makes what b holds f's lead clause (nsp_finding.lead; b is emptied).
 * 0, or NSP_AN_ENOMEM. */
int nsp_an_take_lead(struct nsp_finding_priv *f, struct nsp_sbuf *b);
/* f's side with this role (enum nsp_side_role), or NULL. */
const struct nsp_side *nsp_an_side_with_role(const struct nsp_finding_priv *f, int role);

/* Per-process sides of the shape "the origin, then the others by key"
 * (the error and signal findings): ti[0..n) are trace indices, ti[0] the
 * origin.  Allocates 1 + k sides on f: side 0 holds ti[0]; side s >= 1
 * the other traces whose key() is the s-th distinct value (in order of
 * first appearance in ti), sorted by rank.  Each process is set up
 * (nsp_an_set_proc) and passed to proc(); each side, once full, to
 * side_done().  Returns 0, or the first negative NSP_AN_* error of the
 * callbacks or of memory. */
int nsp_an_sides_by_key(struct nsp_job *job, struct nsp_finding_priv *f, const size_t *ti, size_t n,
                        int (*key)(const struct nsp_trace *t),
                        int (*proc)(struct nsp_job *job, struct nsp_proc *p, const struct nsp_trace *t),
                        int (*side_done)(struct nsp_job *job, struct nsp_side *side));

/* One process's value of something (sides by value). */
struct nsp_an_item {
  const char *value; /* NULL: unset */
  size_t trace;
  int rank;
};
/* qsort order of items: by value (unset last), rank, trace. */
int nsp_an_cmp_item(const void *a, const void *b);
/* Side s of the n processes of it. */
int nsp_an_side_from_items(struct nsp_job *job, struct nsp_side *s, const struct nsp_an_item *it, size_t n);
/* A finding of the shape "by value" (the env-* kinds): its sides are the
 * distinct values among it[0..n) (sorted here), at least two, or none is
 * made; the odd ranks those off a strict majority; its message "LABEL
 * differs across ranks: ranks 0-1 (hosts): v1; ..." (plus "; extra").
 * label: what differs ("NCCL version"); name: the variable for
 * env-nccl-setting / env-world-size (side text "NAME=v", NULL otherwise).
 * Returns 0 or NSP_AN_ENOMEM. */
int nsp_an_finding_by_value(struct nsp_job *job, int kind, const struct nsp_an_comm *c, struct nsp_an_item *it,
                            size_t n, const char *label, const char *name, const char *extra);

/* ---- writing messages (nsp_an_format.c) ----------------------------------- */

/* "rank 1" (a communicator rank), or "rank 1 (job rank 3)" when the job
 * rank of the process (trace) differs and is known, into b. */
void nsp_an_put_rank(struct nsp_sbuf *b, const struct nsp_job *job, int rank, size_t trace);
/* Side s of f as nsp_format_side_ranks names it, into b. */
void nsp_an_put_side_ranks(struct nsp_sbuf *b, const struct nsp_job *job, const struct nsp_finding *f,
                           const struct nsp_side *s);
/* Ranks of communicator comm_id (0: none) with the job ranks of their
 * processes (from its members), as nsp_format_ranks_job names them. */
void nsp_an_put_comm_ranks(struct nsp_sbuf *b, const struct nsp_job *job, uint64_t comm_id, const int *ranks,
                           size_t n);
/* Job ranks: "job ranks 0-2" when nsp_job_ranks_differ, else "ranks 0-2". */
void nsp_an_put_job_ranks(struct nsp_sbuf *b, const struct nsp_job *job, const int *ranks, size_t n);
/* Process t as the report names it: its job rank ("rank 3", "job rank
 * 3"; its path when it has none) when it joined a communicator, else
 * nsp_an_put_nonrank's words: never by the rank its environment gives it. */
void nsp_an_put_process(struct nsp_sbuf *b, const struct nsp_job *job, const struct nsp_trace *t);
/* "pid P on host H, which joined no communicator", then " (RANK=0 in its
 * environment)" when its environment gives it a rank. */
void nsp_an_put_nonrank(struct nsp_sbuf *b, const struct nsp_trace *t);
/* "rank 3" or "ranks 0-2,5" into b. */
void nsp_an_put_ranks(struct nsp_sbuf *b, const int *ranks, size_t n);
/* "rank 1's trace ends at seq 84 on communicator X, but rank 0's
 * collectives up to seq 238 completed (...), so rank 1 went on: its later
 * records were lost" for member m of c and the member o that
 * nsp_an_member_went_on gave, into b. */
void nsp_an_put_went_on(struct nsp_sbuf *b, const struct nsp_job *job, const struct nsp_an_comm *c,
                        const struct nsp_member *m, const struct nsp_member *o);
/* The distinct hosts of a side's processes, up to 3 ("node-a, node-b and
 * 2 more hosts"), into b. */
void nsp_an_put_hosts(struct nsp_sbuf *b, const struct nsp_side *s);
/* Why t's records were dropped, into b: "ring full", "write errors",
 * "size cap (NCCLSPY_MAX_MB)", "unknown reason", comma-separated in that
 * order ("unknown reason" when no count says). */
void nsp_an_put_drop_reasons(struct nsp_sbuf *b, const struct nsp_trace *t);
/* How the processes of side s ended, where a message should say it
 * (still running, killed, crashed: clean exits and unknown ends are left
 * to the reports' process lines): "; ranks 0-3 are still running (last
 * heard at most 2.0 s ago)" when all share a state, else one "; rank 1
 * ended without a clean exit (...)" per process (up to 4). */
void nsp_an_put_side_ends(struct nsp_sbuf *b, const struct nsp_job *job, const struct nsp_finding *f,
                          const struct nsp_side *s);
/* What a stopped-early finding's traces cannot tell, into b: "; rank 1's
 * trace is cut at byte 5349, so it may have gone further" for each process
 * of the sides behind (all but the last) whose file is cut.  Its message
 * and its headline say it. */
void nsp_an_put_cut_caveats(struct nsp_sbuf *b, const struct nsp_job *job, const struct nsp_finding *f);
/* A wall time relative to the job's start, "+1.234567 s", into b. */
void nsp_an_put_time(struct nsp_sbuf *b, const struct nsp_job *job, int64_t t);
/* "; rank 1 aborted this communicator at +T s" when member m (NULL:
 * nothing) finalized, destroyed, aborted or revoked its communicator. */
void nsp_an_put_comm_end(struct nsp_sbuf *b, const struct nsp_job *job, const struct nsp_member *m);
/* "; rank 1 is blocked in ncclGroupEnd since +T s" (a running process),
 * "; rank 1 was inside ncclCommDestroy (entered at +T s) when it ended"
 * (killed, crashed) or "; rank 1 had ncclCommDestroy in flight (entered
 * at +T s)" for each call of process `trace` in flight that is no
 * collective or send/recv (those are named as its calls), up to 2.  rank:
 * the process's rank in the message's terms (-1: "job rank J"). */
void nsp_an_put_blocked(struct nsp_sbuf *b, const struct nsp_job *job, int rank, size_t trace);
/* "s", or "" when n == 1. */
static inline const char *nsp_an_plural(uint64_t n) { return n == 1 ? "" : "s"; }

/* ---- hints for errors (nsp_an_hints.c) ------------------------------------ */

/* The error finding's hint from the table (the origin's result code and
 * last-error text, the settings it names per rank); 0 or NSP_AN_ENOMEM. */
int nsp_an_error_hint(struct nsp_job *job, struct nsp_finding_priv *f);

#endif /* NSP_AN_FINDING_H */
