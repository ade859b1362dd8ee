/* nsp_an_internal.h - the analyzer's job model, shared by its loader
 * (nsp_an_load.c), its rules (nsp_an_rules.c) and helpers (nsp_an_util.c).
 * Not installed; front ends use nsp_analyze.h only. */
#ifndef NSP_AN_INTERNAL_H
#define NSP_AN_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "nsp_analyze.h"
#include "nsp_record.h"

/* Forwards a negative error value (zstd's error_private.h habit); debug
 * builds say where it came from, which is what one wants when a test
 * fails with "out of memory" three calls up. */
#ifdef NDEBUG
#define NSP_TRY(expr)        \
  do {                       \
    int nsp_try_ = (expr);   \
    if (nsp_try_ < 0) return nsp_try_; \
  } while (0)
#else
#define NSP_TRY(expr)                                                          \
  do {                                                                         \
    int nsp_try_ = (expr);                                                     \
    if (nsp_try_ < 0) {                                                        \
      if (getenv("NCCLSPY_DEBUG"))                                             \
        fprintf(stderr, "ncclspy: %s:%d: error %d\n", __FILE__, __LINE__, nsp_try_); \
      return nsp_try_;                                                         \
    }                                                                          \
  } while (0)
#endif

/* ---- helpers (nsp_an_util.c) ------------------------------------------ */

/* Grows *p (an array of elsize-byte elements with room for *cap) to hold
 * at least need elements, doubling.  Returns 0 or NSP_AN_ENOMEM. */
int nsp_an_grow(void *p, size_t *cap, size_t need, size_t elsize);

/* Open-addressing hash map from uint64_t to size_t (any key, 0 too). */
struct nsp_u64map {
  uint64_t *keys;
  size_t *vals;
  uint8_t *used;
  size_t cap, len;
};
/* Sets key -> val.  Returns 0 or NSP_AN_ENOMEM. */
int nsp_u64map_put(struct nsp_u64map *m, uint64_t key, size_t val);
/* The value slot of key, or NULL. */
size_t *nsp_u64map_get(const struct nsp_u64map *m, uint64_t key);
void nsp_u64map_free(struct nsp_u64map *m);

/* strdup that returns NULL only when out of memory (s may be NULL: ""). */
char *nsp_an_strdup(const char *s);
/* malloc'd printf; NULL when out of memory. */
char *nsp_an_asprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *nsp_an_vasprintf(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

/* A growable string. */
struct nsp_sbuf {
  char *s;
  size_t len, cap;
  int oom;
};
void nsp_sbuf_printf(struct nsp_sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Returns the string (caller frees) or NULL when out of memory. */
char *nsp_sbuf_take(struct nsp_sbuf *b);

/* ---- the model -------------------------------------------------------- */

/* What every rank of a communicator must agree on at one seq.  Fields
 * that do not apply to the op are normalised (-1) so they compare equal. */
struct nsp_sig {
  uint64_t count;
  int32_t dtype, redop, root;
  int32_t api; /* nsp_api_coll_class(): Bcast and Broadcast are one */
};

/* The first signature seen at one seq of a communicator; every later rank
 * is compared against it, so memory is per seq, not per (seq, rank). */
struct nsp_ref {
  struct nsp_sig sig;
  int64_t t_min;   /* earliest entry time of any rank at this seq (wall ns) */
  uint8_t set;     /* a rank has reached this seq */
  uint8_t differs; /* some rank's signature differed from sig */
};
#define NSP_SEQ_PAGE 256
struct nsp_seq_page {
  struct nsp_ref e[NSP_SEQ_PAGE];
};

/* Send/recv sizes to/from one peer, run-length encoded by value over
 * consecutive seqs (pipeline stages send the same shape over and over). */
struct nsp_run {
  uint64_t seq0, n, count;
  int32_t dtype;
};
struct nsp_runs {
  struct nsp_run *v;
  size_t n, cap;
  uint64_t max_seq; /* highest seq posted (== calls when no record was lost) */
};
struct nsp_p2p {
  int32_t peer;
  struct nsp_runs dir[2]; /* 0: sends to peer, 1: recvs from peer */
};

/* One process's part in one communicator (a trace's comm index). */
struct nsp_member {
  size_t comm, trace;
  uint32_t local;       /* comm index in the trace */
  int32_t rank, nranks, device;
  uint64_t ncoll, gaps; /* collectives; seq jumps (lost records) */
  uint64_t last_seq;    /* highest collective seq; 0 none */
  struct nsp_sig last_sig;
  int64_t last_t;
  uint64_t first_diff;  /* first seq where this rank differed from the ref; 0 none */
  struct nsp_sig diff_sig;
  int ended, end_api, end_result;
  int has_error;        /* some event on this comm returned an error */
  uint64_t calls;       /* any CALL on this comm (rebinding is refused after) */
  /* send/recv per peer */
  struct nsp_p2p *p2p;
  size_t np2p, p2p_cap;
  struct nsp_u64map p2p_index; /* peer -> p2p index */
  /* the seq page last used (seqs arrive in order, so this hits) */
  struct nsp_seq_page *page;
  uint64_t page_no;
};

struct nsp_comm {
  struct nsp_comm_info info;
  char *name;
  int *ranks;
  size_t *members;      /* indices into job->members */
  size_t nmembers, members_cap;
  struct nsp_u64map pages; /* seq / NSP_SEQ_PAGE -> index in pagev */
  struct nsp_seq_page **pagev;
  size_t npages, pages_cap;
  uint64_t mismatch_seq; /* rule 1's finding seq; 0 none */
  int mismatch_kind;     /* and its kind */
  int nranks_conflict;   /* members reported different nranks (noted once) */
};

/* A process's first error, or its last call. */
struct nsp_event {
  struct nsp_call call;
  char *last_error;     /* owned copy behind call.last_error */
  int valid;
};

struct nsp_trace {
  struct nsp_trace_info info;
  char *path, *host, *shim_version, *problem;
  char **env;           /* 2*nenv owned strings */
  uint8_t *mem;         /* owned copy for traces added from memory */
  size_t mem_len;
  int64_t off_ns;       /* wall = monotonic + off_ns */
  int env_rank, file_rank;
  struct nsp_event first_err;
  struct nsp_event last_call; /* last call on any communicator */
  /* comm index -> member + 1 (0: none), while loading only */
  size_t *local_member;
  size_t nlocal;
  uint64_t orphan_calls; /* calls on a comm index without a usable COMM record */
  uint64_t bad_seq;      /* collectives with seq 0 */
  uint64_t rebind_refused;
  int unattributed_error; /* an error on no communicator (ncclGroupEnd...) */
};

struct nsp_finding_priv {
  struct nsp_finding pub;
  struct nsp_side *sides;
  int *odd;
  char *message;
  char *hint_owned;
  /* p2p: what pass 2 must fetch */
  size_t p2p_member[2]; /* sender, receiver member (SIZE_MAX none) */
  int order;            /* 0 mismatch/p2p, 1 error, 2 stopped-early */
};

struct nsp_job {
  struct nsp_trace **traces;
  size_t ntraces, traces_cap;
  struct nsp_comm **comms;
  size_t ncomms, comms_cap;
  struct nsp_u64map comm_by_id;
  struct nsp_member *members;
  size_t nmembers, members_cap;
  char **notes;
  size_t nnotes, notes_cap;
  struct nsp_finding_priv *findings;
  size_t nfindings, findings_cap;
  char *summary;
  int analyzed;
  int64_t start_ns;
  char err[512];
};

/* Adds a note (printf format).  Returns 0 or NSP_AN_ENOMEM. */
int nsp_job_notef(struct nsp_job *job, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Loader (nsp_an_load.c): reads one trace into the model.  Returns 1,
 * NSP_AN_EREAD (noted), NSP_AN_ENOMEM. */
int nsp_an_load_trace(struct nsp_job *job, const char *path, uint8_t *mem, size_t mem_len);

/* Opens a trace again (file or its memory copy) for pass 2. */
struct nsp_reader *nsp_an_reopen(const struct nsp_trace *t, char *err, size_t errlen);

/* Rules (nsp_an_rules.c). */
int nsp_an_run_rules(struct nsp_job *job);

/* Ref entry of a seq in a comm; NULL when absent (create == 0) or out of
 * memory (create == 1). */
struct nsp_ref *nsp_comm_ref(struct nsp_comm *c, uint64_t seq, int create);

/* Empty call: api -1, ints -1, numbers 0. */
void nsp_call_clear(struct nsp_call *c);

#endif /* NSP_AN_INTERNAL_H */
