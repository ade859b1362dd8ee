/* nsp_an_headline.c - the report's first line (docs/REPORT.md, "The
 * headline"): the first finding in one line an engineer can act on, "seq
 * 2 all-reduce on communicator X: rank 1 passed float32 where rank 0
 * passed float16 (dtype mismatch)", or without findings what the summary
 * says.
 *
 * No list of kinds here: a finding's headline follows from its kinds-table
 * line, its side shape (one writer per shape, headline_of_shape[]) and its
 * name (the words in parentheses), so a new kind has one from its line. */
#include <stdlib.h>
#include <string.h>

#include "nsp_an_job.h"
#include "nsp_names.h"

/* Sides a headline names; more read "...". */
#define HL_SIDES 3

/* " on communicator ID (\"NAME\")" when f has one. */
static void put_comm(struct nsp_sbuf *b, const struct nsp_finding *f) {
  if (!f->comm_id) return;
  nsp_sbuf_printf(b, " on communicator %016llx", (unsigned long long)f->comm_id);
  if (f->comm && f->comm->name[0]) {
    nsp_sbuf_printf(b, " (");
    nsp_sbuf_quoted(b, f->comm->name);
    nsp_sbuf_printf(b, ")");
  }
}

/* "seq S OP on communicator X" (what of it is known), no op when with_op
 * is 0. */
static void put_where(struct nsp_sbuf *b, const struct nsp_finding *f, int with_op) {
  size_t len = b->len;
  if (f->seq) nsp_sbuf_printf(b, "seq %llu", (unsigned long long)f->seq);
  if (with_op && f->api >= 0) nsp_sbuf_printf(b, "%s%s", b->len > len ? " " : "", nsp_op_name(f->api));
  if (b->len == len && f->comm_id) nsp_sbuf_printf(b, "communicator %016llx", (unsigned long long)f->comm_id);
  else put_comm(b, f);
}

/* The sides in the order a reader compares them: a single odd side first
 * ("rank 1 passed X where ranks 0,2-3 passed Y"), else as they are
 * (nsp_analyze.h). */
size_t nsp_finding_side_order(const struct nsp_finding *f, size_t *order) {
  size_t n = f->nsides, k = 0, odd = SIZE_MAX;
  for (size_t s = 0; f->nodd && s < n; s++)
    if (f->sides[s].nranks == f->nodd && !memcmp(f->sides[s].ranks, f->odd_ranks, f->nodd * sizeof(int))) odd = s;
  if (odd != SIZE_MAX) order[k++] = odd;
  for (size_t s = 0; s < n; s++)
    if (s != odd) order[k++] = s;
  return k;
}

/* Side phrases joined: two with " where ", more with ", " (up to
 * HL_SIDES). */
static void put_sides(struct nsp_sbuf *b, const struct nsp_job *job, const struct nsp_finding *f,
                      void (*phrase)(struct nsp_sbuf *b, const struct nsp_finding *f, const struct nsp_side *s,
                                     const void *ctx),
                      const void *ctx, const char *two) {
  size_t order[HL_SIDES + 1], stack[8];
  size_t *all = f->nsides <= 8 ? stack : malloc(f->nsides * sizeof *all);
  if (!all) return;
  size_t n = nsp_finding_side_order(f, all);
  for (size_t i = 0; i < n && i <= HL_SIDES; i++) order[i] = all[i];
  if (all != stack) free(all);
  /* The ranks no side holds first: they are the ones to look at. */
  if (f->lead) nsp_sbuf_printf(b, "%s%s", f->lead, n ? "; " : "");
  for (size_t i = 0; i < n && i < HL_SIDES; i++) {
    const struct nsp_side *s = &f->sides[order[i]];
    if (i) nsp_sbuf_printf(b, "%s", n == 2 ? two : ", ");
    nsp_an_put_side_ranks(b, job, f, s);
    phrase(b, f, s, ctx);
  }
  if (n > HL_SIDES) nsp_sbuf_printf(b, ", ...");
}

/* ---- one writer per side shape ------------------------------------------- */

/* What differs between the sides' calls (by call). */
struct call_diff {
  int op, dtype, count, redop, root;
};

static void call_phrase(struct nsp_sbuf *b, const struct nsp_finding *f, const struct nsp_side *s, const void *ctx) {
  const struct call_diff *d = ctx;
  const struct nsp_call *c = &s->call;
  char tb[32], rb[96];
  if (d->op) {
    nsp_sbuf_printf(b, " called %s", c->api >= 0 ? nsp_op_name(c->api) : "nothing");
    return;
  }
  if (!d->dtype && !d->count && !d->redop && !d->root) {
    nsp_sbuf_printf(b, " %s", s->text ? s->text : "");
    return;
  }
  nsp_sbuf_printf(b, " passed");
  const char *sep = " ";
  if (d->dtype) nsp_sbuf_printf(b, "%s%s", sep, nsp_dtype_name(c->dtype, tb, sizeof tb)), sep = ", ";
  if (d->count) nsp_sbuf_printf(b, "%scount %llu", sep, (unsigned long long)c->count), sep = ", ";
  if (d->redop) nsp_sbuf_printf(b, "%s%s", sep, nsp_format_redop(rb, sizeof rb, c)), sep = ", ";
  if (d->root) nsp_sbuf_printf(b, "%sroot %d", sep, c->peer);
  (void)f;
}

static void hl_by_call(struct nsp_sbuf *b, const struct nsp_job *job, const struct nsp_finding *f) {
  struct call_diff d = {0};
  for (size_t s = 1; s < f->nsides; s++) {
    const struct nsp_call *a = &f->sides[0].call, *c = &f->sides[s].call;
    d.op |= a->api != c->api;
    d.dtype |= a->dtype != c->dtype;
    d.count |= a->count != c->count;
    d.redop |= (a->redop != c->redop || a->premul_dtype != c->premul_dtype) && a->api >= 0 && nsp_api_has_redop(a->api);
    d.root |= a->peer != c->peer && a->api >= 0 && nsp_api_has_root(a->api);
  }
  size_t len = b->len;
  put_where(b, f, !d.op);
  if (b->len > len) nsp_sbuf_printf(b, ": ");
  put_sides(b, job, f, call_phrase, &d, " where ");
}

static void text_phrase(struct nsp_sbuf *b, const struct nsp_finding *f, const struct nsp_side *s, const void *ctx) {
  (void)f;
  nsp_sbuf_printf(b, "%s%s", (const char *)ctx, s->text ? s->text : "");
}

static void hl_send_recv(struct nsp_sbuf *b, const struct nsp_job *job, const struct nsp_finding *f) {
  nsp_sbuf_printf(b, "send/recv #%llu", (unsigned long long)f->seq);
  put_comm(b, f);
  nsp_sbuf_printf(b, ": ");
  put_sides(b, job, f, text_phrase, ": ", "; ");
}

static void hl_by_last_seq(struct nsp_sbuf *b, const struct nsp_job *job, const struct nsp_finding *f) {
  if (!f->nsides) return;
  const struct nsp_side *lo = &f->sides[0], *hi = &f->sides[f->nsides - 1];
  nsp_sbuf_printf(b, "communicator %016llx: ", (unsigned long long)f->comm_id);
  nsp_an_put_side_ranks(b, job, f, lo);
  if (lo->call.seq) nsp_sbuf_printf(b, " stopped at seq %llu", (unsigned long long)lo->call.seq);
  else nsp_sbuf_printf(b, " made no collective");
  if (hi != lo) {
    nsp_sbuf_printf(b, " while ");
    nsp_an_put_side_ranks(b, job, f, hi);
    nsp_sbuf_printf(b, " reached seq %llu", (unsigned long long)hi->call.seq);
  }
  /* Its caveats: a reader acting on the line alone must see them. */
  nsp_an_put_cut_caveats(b, job, f);
}

static void hl_origin_by_result(struct nsp_sbuf *b, const struct nsp_job *job, const struct nsp_finding *f) {
  if (!f->nsides || !f->sides[0].nranks) return;
  const struct nsp_proc *o = &f->sides[0].procs[0];
  const struct nsp_call *c = &o->call;
  char rb[64];
  nsp_sbuf_printf(b, "first error");
  put_comm(b, f);
  nsp_format_proc_rank(rb, sizeof rb, job, f, o);
  nsp_sbuf_printf(b, ": %s", rb);
  if (c->api >= 0) nsp_sbuf_printf(b, " %s", nsp_op_name(c->api));
  if (c->seq && (nsp_api_kind(c->api) == NSP_K_COLL || nsp_api_kind(c->api) == NSP_K_P2P))
    nsp_sbuf_printf(b, " seq %llu", (unsigned long long)c->seq);
  nsp_sbuf_printf(b, " returned %s", nsp_result_name(c->result, rb, sizeof rb));
  if (c->last_error && c->last_error[0]) {
    /* NCCL's words, cut to keep one line. */
    char le[100];
    snprintf(le, sizeof le, "%s", c->last_error);
    if (strlen(c->last_error) >= sizeof le) memcpy(le + sizeof le - 4, "...", 4);
    nsp_sbuf_printf(b, " (");
    nsp_sbuf_quoted(b, le);
    nsp_sbuf_printf(b, ")");
  }
}

static void role_phrase(struct nsp_sbuf *b, const struct nsp_finding *f, const struct nsp_side *s, const void *ctx) {
  /* By enum nsp_side_role, in the report's words. */
  static const char *const said[][2] = {
      [NSP_ROLE_NONE] = {"", ""},
      [NSP_ROLE_NOT_ARRIVED] = {" did not arrive", " did not arrive"},
      [NSP_ROLE_WAITING] = {" waits inside it", " wait inside it"},
      [NSP_ROLE_COMPLETED] = {" completed it", " completed it"},
      [NSP_ROLE_FAILED] = {" failed it", " failed it"},
      [NSP_ROLE_UNTRACKED] = {" issued it (completion not tracked)", " issued it (completion not tracked)"},
      [NSP_ROLE_ARRIVAL_UNKNOWN] = {" may not have arrived (its trace lost records)",
                                    " may not have arrived (their traces lost records)"},
  };
  (void)f;
  (void)ctx;
  if (s->role >= 0 && (size_t)s->role < sizeof said / sizeof *said) nsp_sbuf_printf(b, "%s", said[s->role][s->nranks > 1]);
}

static void hl_by_role(struct nsp_sbuf *b, const struct nsp_job *job, const struct nsp_finding *f) {
  if (f->seq) put_where(b, f, 1);
  else {
    nsp_sbuf_printf(b, "%s", f->api >= 0 ? nsp_op_name(f->api) : "a call");
    if (f->comm_id) nsp_sbuf_printf(b, " of communicator %016llx", (unsigned long long)f->comm_id);
  }
  nsp_sbuf_printf(b, " did not complete: ");
  put_sides(b, job, f, role_phrase, NULL, "; ");
}

/* "rank 3 has NCCL version 2.27.3": the side's value with its verb. */
static void value_phrase(struct nsp_sbuf *b, const struct nsp_finding *f, const struct nsp_side *s, const void *ctx) {
  (void)f;
  (void)ctx;
  nsp_sbuf_printf(b, " %s %s", s->nranks == 1 ? "has" : "have", s->text ? s->text : "");
}

static void hl_by_value(struct nsp_sbuf *b, const struct nsp_job *job, const struct nsp_finding *f) {
  if (f->comm_id) {
    nsp_sbuf_printf(b, "communicator %016llx: ", (unsigned long long)f->comm_id);
  }
  /* A lead says what the ranks to look at hold; the sides' bare values
   * would only repeat it without its verb. */
  if (f->lead) nsp_sbuf_printf(b, "%s", f->lead);
  else put_sides(b, job, f, value_phrase, NULL, " where ");
}

static void hl_origin_by_signal(struct nsp_sbuf *b, const struct nsp_job *job, const struct nsp_finding *f) {
  put_sides(b, job, f, text_phrase, " died of ", "; ");
}

/* "communicator X: " and the message's first clause, which says what the
 * odd ranks skipped or added ("rank 1 skipped an all-reduce at seq 12 (its
 * calls ...)"): up to its first ": " or "; " outside parentheses. */
static void hl_shifted(struct nsp_sbuf *b, const struct nsp_job *job, const struct nsp_finding *f) {
  (void)job;
  const char *m = f->message ? f->message : "";
  size_t n = 0;
  for (int depth = 0; m[n] && !(depth == 0 && (m[n] == ':' || m[n] == ';') && m[n + 1] == ' '); n++)
    depth += m[n] == '(' ? 1 : m[n] == ')' && depth ? -1 : 0;
  nsp_sbuf_printf(b, "communicator %016llx: %.*s", (unsigned long long)f->comm_id, (int)n, m);
}

/* Indexed by enum nsp_side_shape; a shape without a writer (one being
 * added) falls back to the finding's message. */
static void (*const headline_of_shape[])(struct nsp_sbuf *b, const struct nsp_job *job, const struct nsp_finding *f) = {
    [NSP_SIDES_BY_CALL] = hl_by_call,
    [NSP_SIDES_SEND_RECV] = hl_send_recv,
    [NSP_SIDES_BY_LAST_SEQ] = hl_by_last_seq,
    [NSP_SIDES_ORIGIN_BY_RESULT] = hl_origin_by_result,
    [NSP_SIDES_BY_ROLE] = hl_by_role,
    [NSP_SIDES_BY_VALUE] = hl_by_value,
    [NSP_SIDES_ORIGIN_BY_SIGNAL] = hl_origin_by_signal,
    [NSP_SIDES_SHIFTED] = hl_shifted,
};

int nsp_an_build_headline(struct nsp_job *job) {
  struct nsp_sbuf b = {0};
  free(job->headline);
  job->headline = NULL;
  if (!job->nfindings) {
    /* What the summary says: its first sentence (with its caveats). */
    const char *s = job->summary ? job->summary : "";
    const char *end = strstr(s, ". ");
    nsp_sbuf_printf(&b, "%.*s", (int)(end ? (size_t)(end - s) + 1 : strlen(s)), s);
  } else {
    const struct nsp_finding *f = &job->findings[0].pub;
    const struct nsp_finding_kind_info *k = nsp_finding_kind_info(f->kind);
    size_t shape = k ? (size_t)k->sides : SIZE_MAX;
    if (shape < sizeof headline_of_shape / sizeof *headline_of_shape && headline_of_shape[shape])
      headline_of_shape[shape](&b, job, f);
    else
      nsp_sbuf_printf(&b, "%s", f->message ? f->message : "");
    /* The kind in words: "(dtype mismatch)", "(env nccl setting NCCL_ALGO)". */
    const char *name = nsp_finding_kind_name(f->kind);
    nsp_sbuf_printf(&b, " (");
    for (const char *p = name; *p; p++) nsp_sbuf_printf(&b, "%c", *p == '-' ? ' ' : *p);
    if (f->setting) nsp_sbuf_printf(&b, " %s", f->setting);
    nsp_sbuf_printf(&b, ")");
  }
  job->headline = nsp_sbuf_take(&b);
  return job->headline ? 0 : NSP_AN_ENOMEM;
}
