/* nsp_an_load.c - pass 1: stream one trace's records into the job model.
 *
 * Nothing here keeps a record: collectives are folded into the
 * communicator's per-seq reference (struct nsp_ref, nsp_an_refs.c) and the
 * member's first difference from it; send/recv sizes into run-length
 * lists; errors into the process's first one.  Memory is per process and
 * per communicator member, plus 8 bytes per seq of every communicator
 * (its refs: 8 MB for 1,000,000 collectives on one communicator, however
 * many ranks it has) and one struct nsp_sig per distinct call shape on a
 * communicator, plus, per trace, 32 bytes per zstd frame and
 * communicator with collectives in it (struct nsp_frame_span, for pass
 * 2); it does not grow with ranks x calls.  Reading on threads adds at
 * most 4 batches of 4096 decoded records per file being read
 * (nsp_an_feed.c). */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nsp_an_model.h"
#include "nsp_hash.h"
#include "nsp_launchers.h"
#include "nsp_schema.h"
#include "nsp_names.h"
#include "nsp_reader.h"

/* ncclInProgress is how non-blocking calls say "not yet": not an error. */
static int is_error(int32_t result) { return result != 0 && result != ncclInProgress; }

/* An error of a call NCCL refused at once (its arguments or its use):
 * the call was never posted.  Any other error came after NCCL accepted
 * the call (it failed waiting for its peers: a blocking communicator's
 * timeout, a remote or system error), so a peer may have matched it. */
static int is_refusal(int32_t result) { return result == ncclInvalidArgument || result == ncclInvalidUsage; }

/* The page of refs of seq for member m, through m's cached page: a
 * rank's seqs come in order, so the hash is consulted once per
 * NSP_SEQ_PAGE calls. */
static struct nsp_ref_page *member_page(struct nsp_member *m, struct nsp_an_comm *c, uint64_t seq) {
  uint64_t no = seq / NSP_SEQ_PAGE;
  if (!m->page || m->page_no != no) {
    struct nsp_ref_page *pg = nsp_an_ref_page(c, no, 1);
    if (!pg) return NULL;
    m->page = pg;
    m->page_no = no;
  }
  return m->page;
}

/* The PreMulSum op `redop` names on comm index `local` of t, when its
 * creation is in the trace and it was not destroyed since; else NULL
 * (built-in ops too). */
static const struct nsp_redop_def *redop_def(const struct nsp_trace *t, uint32_t local, int32_t redop) {
  if (redop < ncclNumOps) return NULL;
  size_t *i = nsp_u64map_get(&t->redop_index, (uint64_t)local << 32 | (uint32_t)redop);
  return i && t->redop_defs[*i].live ? &t->redop_defs[*i] : NULL;
}

/* A REDOP record that succeeded: the op it made is defined from here on
 * (its handle may be one an earlier, destroyed op had), or the op it
 * destroyed is no longer.  Past NSP_REDOP_DEFS_MAX handles, new ones stay
 * unknown (compared by handle).  0 or NSP_AN_ENOMEM. */
static int on_redop(struct nsp_trace *t, const struct nsp_rec *rec) {
  int32_t h = nsp_rec_redop_redop(rec);
  if (h < ncclNumOps) return 0;
  uint64_t key = (uint64_t)nsp_rec_redop_comm(rec) << 32 | (uint32_t)h;
  size_t *i = nsp_u64map_get(&t->redop_index, key);
  if (rec->api != NSP_API_RedOpCreatePreMulSum) {
    if (i) t->redop_defs[*i].live = 0;
    return 0;
  }
  if (!i) {
    if (t->nredop_defs >= NSP_REDOP_DEFS_MAX) return 0;
    NSP_TRY(nsp_grow(&t->redop_defs, &t->redop_defs_cap, t->nredop_defs + 1, sizeof *t->redop_defs));
    NSP_TRY(nsp_u64map_put(&t->redop_index, key, t->nredop_defs));
    i = nsp_u64map_get(&t->redop_index, key);
    t->nredop_defs++;
  }
  struct nsp_redop_def *d = &t->redop_defs[*i];
  d->dtype = nsp_rec_redop_dtype(rec);
  d->residence = nsp_rec_redop_residence(rec);
  d->scalar = d->residence == ncclScalarHostImmediate ? nsp_rec_redop_scalar(rec) : 0;
  d->live = 1;
  return 0;
}

/* A call's reduction op as reports show it: a PreMulSum op t has the
 * creation of, by its definition. */
static void call_redop(struct nsp_call *c, const struct nsp_trace *t, uint32_t local) {
  const struct nsp_redop_def *d = nsp_api_has_redop(c->api) ? redop_def(t, local, c->redop) : NULL;
  if (!d) return;
  c->redop = NSP_REDOP_PREMULSUM;
  c->premul_dtype = d->dtype;
  c->premul_residence = d->residence;
  c->premul_scalar = d->scalar;
  c->premul_scalar_known = d->residence == ncclScalarHostImmediate;
}

static struct nsp_an_comm *comm_get(struct nsp_job *job, uint64_t id, size_t *index) {
  size_t *slot = nsp_u64map_get(&job->comm_by_id, id);
  if (slot) {
    *index = *slot;
    return job->comms[*slot];
  }
  if (nsp_grow(&job->comms, &job->comms_cap, job->ncomms + 1, sizeof *job->comms) < 0) return NULL;
  struct nsp_an_comm *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  nsp_an_refs_init(c);
  c->name = strdup("");
  if (!c->name || nsp_u64map_put(&job->comm_by_id, id, job->ncomms) < 0) {
    free(c->name);
    free(c);
    return NULL;
  }
  c->info.id = id;
  c->info.nranks = -1;
  c->info.api = -1;
  c->info.name = c->name;
  *index = job->ncomms;
  job->comms[job->ncomms++] = c;
  return c;
}

static struct nsp_member *local_member(struct nsp_job *job, struct nsp_trace *t, uint32_t local) {
  if (local >= t->nlocal || !t->local_member[local]) return NULL;
  return &job->members[t->local_member[local] - 1];
}

/* The call of entry e (the arguments a CALL record had) on communicator
 * comm_id, entered at time_ns (wall clock). */
static void call_of(struct nsp_call *c, const struct nsp_trace *t, const struct nsp_pend *e, uint64_t comm_id,
                    int64_t time_ns) {
  *c = nsp_call_none; /* nsp_call_clear, inlined: every CALL makes one */
  c->api = e->api;
  c->comm_id = comm_id;
  c->seq = e->seq;
  c->count = e->count;
  c->dtype = e->dtype;
  c->redop = e->redop;
  c->peer = e->peer;
  c->time_ns = time_ns;
  call_redop(c, t, e->local);
}

/* Keeps the earliest error of a process (by wall time). */
static int note_error(struct nsp_trace *t, int source, int api, uint64_t comm_id, uint64_t seq,
                      const struct nsp_rec *rec, int64_t when) {
  t->info.errors++;
  /* Grouped calls report their errors from ncclGroupEnd, which names no
   * communicator; the wavefront rule needs to know such a process failed. */
  if (!comm_id) t->unattributed_error = 1;
  if (t->first_err.valid && t->first_err.call.time_ns <= when) return 0;
  char *le = rec->last_error ? strdup(rec->last_error) : NULL;
  if (rec->last_error && !le) return NSP_AN_ENOMEM;
  free(t->first_err.last_error);
  struct nsp_call *c = &t->first_err.call;
  if (source == NSP_SRC_CALL) { /* its arguments too */
    struct nsp_pend e;
    nsp_pend_from_call(&e, rec);
    call_of(c, t, &e, comm_id, when);
  } else {
    nsp_call_clear(c);
    c->api = api;
    c->comm_id = comm_id;
    c->seq = seq;
    c->time_ns = when;
  }
  c->source = source;
  c->result = rec->result;
  c->last_error = le;
  t->first_err.last_error = le;
  t->first_err.valid = 1;
  t->first_err.site = source == NSP_SRC_CALL ? rec->site : 0;
  t->first_err.pysite = source == NSP_SRC_CALL ? rec->pysite : 0;
  return 0;
}

/* The latest timestamp of the trace: where "the end of its trace" is. */
static void seen(struct nsp_trace *t, uint64_t mono) {
  if (mono > t->t_last) t->t_last = mono;
}

static int dup_str(char **dst, const char *src) {
  char *s = strdup(src ? src : "");
  if (!s) return NSP_AN_ENOMEM;
  free(*dst);
  *dst = s;
  return 0;
}

/* When an error surfaced: the return of the call (a call may block long
 * before failing), its entry when no exit was recorded. */
static int64_t err_time(const struct nsp_trace *t, const struct nsp_rec *rec) {
  return nsp_an_wall(t, rec->t_exit >= rec->t_enter && rec->t_exit ? rec->t_exit : rec->t_enter);
}

/* A communicator creation that failed: kept as a call that waited (the
 * comm-init rule asks which ranks never made it). */
static int failed_init(struct nsp_trace *t, const struct nsp_rec *rec) {
  const struct nsp_rec_ext *x = rec->ext;
  if (nsp_api_kind(rec->api) != NSP_K_INIT || rec->api == NSP_API_CommInitAll) return 0;
  NSP_TRY(nsp_grow(&t->failed_inits, &t->failed_inits_cap, t->nfailed_inits + 1, sizeof *t->failed_inits));
  struct nsp_inflight *f = &t->failed_inits[t->nfailed_inits++];
  memset(f, 0, sizeof *f);
  nsp_call_clear(&f->call);
  f->call.api = rec->api;
  f->call.time_ns = nsp_an_wall(t, rec->t_enter);
  f->call.result = rec->result;
  f->call.done = 0;
  int split = rec->api == NSP_API_CommSplit || rec->api == NSP_API_CommShrink;
  f->new_comm_id = x->comm_id;
  f->parent_id = x->parent_id;
  f->split_index = x->split_index;
  f->rank = split ? -1 : x->rank;
  f->nranks = split ? -1 : x->nranks;
  f->color = split ? x->color : -1;
  f->key = split ? x->key : -1;
  f->wait_ns = rec->t_exit > rec->t_enter ? (int64_t)(rec->t_exit - rec->t_enter) : 0;
  return 0;
}

static int on_comm(struct nsp_job *job, struct nsp_trace *t, size_t ti, const struct nsp_rec *rec) {
  const struct nsp_rec_ext *x = rec->ext;
  if (is_error(rec->result)) {
    NSP_TRY(note_error(t, NSP_SRC_COMM_INIT, rec->api, x->comm_id, 0, rec, err_time(t, rec)));
    NSP_TRY(failed_init(t, rec));
  }
  if (x->parent_id && !is_error(rec->result)) {
    /* This rank is done with that split (with or without a child). */
    NSP_TRY(nsp_grow(&t->splits, &t->splits_cap, t->nsplits + 1, sizeof *t->splits));
    t->splits[t->nsplits++] = (struct nsp_split_done){x->parent_id, x->split_index};
  }
  if (rec->flags & NSP_COMM_NOCOLOR) return 0; /* split without a child */
  if (!x->comm_id) {
    /* Without an id it cannot be matched with other ranks. */
    if (!(rec->flags & NSP_COMM_PENDING))
      NSP_TRY(nsp_job_notef(job, "%s: comm index %u has no communicator id; its calls are not compared",
                            t->info.path, rec->comm));
    return 0;
  }
  size_t ci;
  struct nsp_an_comm *c = comm_get(job, x->comm_id, &ci);
  if (!c) return NSP_AN_ENOMEM;

  if (rec->comm >= t->nlocal) {
    size_t old = t->nlocal;
    NSP_TRY(nsp_grow(&t->local_member, &t->nlocal, (size_t)rec->comm + 1, sizeof *t->local_member));
    memset(t->local_member + old, 0, (t->nlocal - old) * sizeof *t->local_member);
  }
  struct nsp_member *m = local_member(job, t, rec->comm);
  if (!m) {
    NSP_TRY(nsp_grow(&job->members, &job->members_cap, job->nmembers + 1, sizeof *job->members));
    m = &job->members[job->nmembers];
    memset(m, 0, sizeof *m);
    m->comm = ci;
    m->trace = ti;
    m->local = rec->comm;
    m->rank = m->nranks = m->device = -1;
    m->end_api = -1;
    t->local_member[rec->comm] = ++job->nmembers;
  } else if (m->comm != ci) {
    /* A later COMM record for the same index with another id: take it
     * while nothing was attributed to the old one; afterwards the calls
     * already folded in cannot be moved. */
    if (m->calls) {
      t->rebind_refused++;
      return 0;
    }
    m->comm = ci;
  }
  /* A pending (non-blocking) init may not know its rank yet; a later
   * record for the same index fills it in.  A rank outside [0, nranks)
   * is no rank of the communicator (NCCL refused such an init with
   * ncclInvalidArgument; its error is still reported). */
  if (is_error(rec->result)) m->has_error = 1; /* its creation failed */
  if (x->rank >= 0 && (x->nranks <= 0 || x->rank < x->nranks)) m->rank = x->rank;
  if (x->nranks > 0) m->nranks = x->nranks;
  if (x->device >= 0) m->device = x->device;
  /* GPU identity (1.1): a later record that knows it wins. */
  if (!m->gpu_uuid || (x->gpu_uuid && x->gpu_uuid[0])) NSP_TRY(dup_str(&m->gpu_uuid, x->gpu_uuid));
  if (!m->gpu_pci || (x->gpu_pci_bus_id && x->gpu_pci_bus_id[0])) NSP_TRY(dup_str(&m->gpu_pci, x->gpu_pci_bus_id));
  if (!m->gpu_name || (x->gpu_name && x->gpu_name[0])) NSP_TRY(dup_str(&m->gpu_name, x->gpu_name));
  if (x->nranks > 0) {
    if (c->info.nranks <= 0) {
      c->info.nranks = x->nranks;
    } else if (c->info.nranks != x->nranks) {
      c->nranks_conflict = 1; /* an env-nranks finding says who said what */
    }
  }
  if (c->info.api < 0) c->info.api = rec->api;
  if (x->parent_id && !c->info.parent_id) {
    c->info.parent_id = x->parent_id;
    c->info.color = x->color;
    c->info.key = x->key;
  } else if (x->parent_id && x->parent_id == c->info.parent_id && x->key != c->info.key) {
    c->info.keys_differ = 1; /* each rank passed its own key */
  }
  if (x->comm_name && x->comm_name[0] && !c->name[0]) {
    char *n = strdup(x->comm_name);
    if (!n) return NSP_AN_ENOMEM;
    free(c->name);
    c->name = n;
    c->info.name = n;
  }
  return 0;
}

/* What every rank must agree on for a collective of api with these
 * arguments on comm index `local` of t (fields the op lacks normalised to
 * -1; a PreMulSum op by its definition). */
static void sig_of(struct nsp_sig *s, const struct nsp_trace *t, uint32_t local, int api, uint64_t count, int dtype,
                   int redop, int peer) {
  memset(s, 0, sizeof *s);
  s->api = nsp_api_coll_class(api);
  s->count = count;
  s->dtype = dtype;
  s->redop = nsp_api_has_redop(api) ? redop : -1;
  s->root = nsp_api_has_root(api) ? peer : -1;
  s->premul_dtype = -1;
  s->premul_residence = -1;
  const struct nsp_redop_def *d = nsp_api_has_redop(api) ? redop_def(t, local, redop) : NULL;
  if (!d) return;
  s->redop = NSP_REDOP_PREMULSUM;
  s->premul_dtype = (int16_t)d->dtype;
  s->premul_residence = (int8_t)d->residence;
  s->premul_scalar = d->scalar;
  s->premul_scalar_known = d->residence == ncclScalarHostImmediate;
}

/* m's first difference moves to seq fd (first, or earlier than before: a
 * call read out of order): its window is rebased there, the seqs it
 * agreed on before filled from the refs.  0 or NSP_AN_ENOMEM. */
static int win_rebase(struct nsp_member *m, struct nsp_an_comm *c, uint64_t fd) {
  if (!m->win) {
    m->win = malloc(NSP_SIG_WINDOW * sizeof *m->win);
    if (!m->win) return NSP_AN_ENOMEM;
    m->win_set = 0;
  } else {
    uint64_t shift = m->first_diff - fd;
    uint32_t set = 0;
    for (int i = NSP_SIG_WINDOW - 1; i >= 0; i--)
      if ((uint64_t)i + shift < NSP_SIG_WINDOW && (m->win_set >> i & 1)) {
        m->win[(uint64_t)i + shift] = m->win[i];
        set |= 1u << ((uint64_t)i + shift);
      }
    for (uint64_t i = 0; i < shift && i < NSP_SIG_WINDOW; i++) {
      struct nsp_ref_view ref;
      if (fd + i > m->last_seq || !nsp_an_comm_ref(c, fd + i, &ref)) continue;
      m->win[i] = ref.sig;
      set |= 1u << i;
    }
    m->win_set = set;
  }
  m->first_diff = fd;
  return 0;
}

static int on_coll(struct nsp_job *job, struct nsp_trace *t, struct nsp_member *m, const struct nsp_rec *rec) {
  struct nsp_an_comm *c = job->comms[m->comm];
  if (!rec->seq) {
    t->bad_seq++;
    return 0;
  }
  struct nsp_sig s;
  sig_of(&s, t, rec->comm, rec->api, rec->count, rec->dtype, rec->redop, rec->peer);
  int64_t tw = nsp_an_wall(t, rec->t_enter);

  /* Ranks number collectives densely; a trace that scatters seqs would
   * open a page of NSP_SEQ_PAGE refs per call.  Past 1024 pages, a new
   * page needs 16 collectives on the communicator per page. */
  uint64_t page_no = rec->seq / NSP_SEQ_PAGE;
  if (!(m->page && m->page_no == page_no) && c->refs.npages >= 1024 && c->refs.npages * 16 > c->info.ncoll &&
      !nsp_paged_page(&c->refs, page_no, 0)) {
    t->bad_seq++;
    return 0;
  }
  struct nsp_ref_page *pg = member_page(m, c, rec->seq);
  if (!pg) return NSP_AN_ENOMEM;
  unsigned e = (unsigned)(rec->seq % NSP_SEQ_PAGE);
  struct nsp_ref *ref = &pg->r[e];
  if (!(ref->sig & NSP_REF_SIG)) {
    uint32_t k = nsp_an_sig_intern(c, &s, &m->sig_hint);
    if (!k) return NSP_AN_ENOMEM;
    ref->sig = k;
    NSP_TRY(nsp_an_ref_set_time(pg, e, tw));
  } else {
    if (tw < nsp_an_ref_time(pg, e)) NSP_TRY(nsp_an_ref_set_time(pg, e, tw));
    const struct nsp_sig *rs = &c->sigs[(ref->sig & NSP_REF_SIG) - 1];
    if (!nsp_an_sig_eq(rs, &s)) {
      ref->sig |= NSP_REF_DIFFERS;
      if (!m->first_diff || rec->seq < m->first_diff) {
        NSP_TRY(win_rebase(m, c, rec->seq));
        m->diff_sig = s;
      }
    } else if (!nsp_an_sig_premul_same(rs, &s)) {
      ref->sig |= NSP_REF_PREMUL_VARIES;
    }
  }
  /* From its first difference on, its own calls (the shift test). */
  if (m->win && rec->seq >= m->first_diff && rec->seq - m->first_diff < NSP_SIG_WINDOW) {
    m->win[rec->seq - m->first_diff] = s;
    m->win_set |= 1u << (rec->seq - m->first_diff);
  }
  if (rec->seq != m->last_seq + 1) m->gaps++;
  if (rec->seq > m->last_seq) {
    m->last_seq = rec->seq;
    m->last_rec = t->info.records;
    m->last_sig = s;
    m->last_t = tw;
  }
  m->ncoll++;
  c->info.ncoll++;
  if (rec->seq > c->info.max_seq) c->info.max_seq = rec->seq;
  return 0;
}

/* *out: member m's sends (dir 0) or receives (1) to or from peer, made
 * at its first call.  0 or NSP_AN_ENOMEM. */
static int p2p_runs(struct nsp_member *m, int32_t peer, int dir, struct nsp_runs **out) {
  size_t *pi = nsp_u64map_get(&m->p2p_index, (uint64_t)(int64_t)peer);
  struct nsp_p2p *p;
  if (pi) {
    p = &m->p2p[*pi];
  } else {
    NSP_TRY(nsp_grow(&m->p2p, &m->p2p_cap, m->np2p + 1, sizeof *m->p2p));
    NSP_TRY(nsp_u64map_put(&m->p2p_index, (uint64_t)(int64_t)peer, m->np2p));
    p = &m->p2p[m->np2p++];
    memset(p, 0, sizeof *p);
    p->peer = peer;
  }
  *out = &p->dir[dir];
  return 0;
}

/* n calls numbered k0 .. k0 + n - 1 of count elements of dtype join the
 * runs (the last one when they follow it with its count and dtype); the
 * last ended at record `rec` of the trace.  0 or NSP_AN_ENOMEM. */
static int runs_add(struct nsp_runs *rs, uint64_t k0, uint64_t n, uint64_t count, int32_t dtype, uint64_t rec) {
  struct nsp_run *last = rs->n ? &rs->v[rs->n - 1] : NULL;
  if (last && last->count == count && last->dtype == dtype && k0 == last->seq0 + last->n) {
    last->n += n;
  } else {
    NSP_TRY(nsp_grow(&rs->v, &rs->cap, rs->n + 1, sizeof *rs->v));
    struct nsp_run *r = &rs->v[rs->n++];
    r->seq0 = k0;
    r->n = n;
    r->count = count;
    r->dtype = dtype;
  }
  if (k0 + n - 1 >= rs->max_seq) {
    rs->max_seq = k0 + n - 1;
    rs->last_rec = rec; /* where this direction's coverage ends */
  }
  return 0;
}

static int on_p2p(struct nsp_job *job, const struct nsp_trace *t, struct nsp_member *m, const struct nsp_rec *rec) {
  struct nsp_runs *rs;
  NSP_TRY(p2p_runs(m, rec->peer, rec->api == NSP_API_Send ? 0 : 1, &rs));
  /* The shim numbers sends/recvs per peer and direction from 1; a lost
   * record leaves a gap rather than shifting every later pairing.  A call
   * that failed waiting kept the number the next one took too. */
  uint64_t k = rec->seq ? rec->seq + rs->failed : rs->max_seq + 1;
  if (is_error(rec->result)) rs->failed++;
  NSP_TRY(runs_add(rs, k, 1, rec->count, rec->dtype, t->info.records));
  job->comms[m->comm]->info.np2p++;
  return 0;
}

/* Open groups a trace may have at once (one per thread in practice); a
 * hostile trace's further ones are not followed. */
#define NSP_OPEN_GROUPS_MAX 64

/* *out: the open group `id` of trace t, opened when `open` (a call on a
 * communicator in it); NULL when not open or no slot is left. */
static int open_group(struct nsp_trace *t, uint64_t id, int open, struct nsp_open_group **out) {
  *out = NULL;
  size_t *v = nsp_u64map_get(&t->group_comm, id);
  if (v) {
    *out = &t->groups[*v - 1];
    return 0;
  }
  if (!open) return 0;
  size_t k = 0;
  while (k < t->ngroups && t->groups[k].id) k++;
  if (k == NSP_OPEN_GROUPS_MAX) return 0;
  if (k == t->ngroups) {
    struct nsp_open_group *ng = realloc(t->groups, (k + 1) * sizeof *ng);
    if (!ng) return NSP_AN_ENOMEM;
    t->groups = ng;
    t->ngroups = k + 1;
  }
  NSP_TRY(nsp_u64map_put(&t->group_comm, id, k + 1));
  memset(&t->groups[k], 0, sizeof t->groups[k]);
  t->groups[k].id = id;
  *out = &t->groups[k];
  return 0;
}

/* Closes group `id` at its outermost ncclGroupEnd. */
static void close_group(struct nsp_trace *t, uint64_t id) {
  size_t *v = nsp_u64map_get(&t->group_comm, id);
  if (!v) return;
  t->groups[*v - 1].id = 0;
  nsp_u64map_del(&t->group_comm, id);
}

static int on_call(struct nsp_job *job, struct nsp_trace *t, const struct nsp_rec *rec) {
  t->info.calls++;
  if (rec->t_enter > t->max_call_mono) t->max_call_mono = rec->t_enter;
  int kind = nsp_api_kind(rec->api);
  if (kind == NSP_K_COLL || kind == NSP_K_P2P) t->info.work_calls++;
  struct nsp_pend e;
  nsp_pend_from_call(&e, rec);
  struct nsp_member *m = rec->comm ? local_member(job, t, rec->comm) : NULL;
  uint64_t comm_id = m ? job->comms[m->comm]->info.id : 0;
  /* The communicators of a group's calls, for an error its ncclGroupEnd
   * returns (that call names no communicator). */
  int group_end = rec->api == NSP_API_GroupEnd || rec->api == NSP_API_GroupSimulateEnd;
  struct nsp_open_group *g = NULL;
  if (rec->group_id && (m || group_end)) NSP_TRY(open_group(t, rec->group_id, m != NULL, &g));
  if (g && m) {
    size_t mi = (size_t)(m - job->members) + 1, k = 0;
    while (k < g->n && g->members[k] != mi) k++;
    if (k == g->n && g->n < NSP_GROUP_COMMS_MAX) g->members[g->n++] = mi;
    else if (k == g->n) g->over = 1;
  }
  struct nsp_member *gm = g && group_end && g->n ? &job->members[g->members[0] - 1] : NULL;
  if (is_error(rec->result)) {
    uint64_t err_comm = gm ? job->comms[gm->comm]->info.id : comm_id;
    NSP_TRY(note_error(t, NSP_SRC_CALL, rec->api, err_comm, rec->seq, rec, err_time(t, rec)));
    if (gm && t->first_err.call.api == rec->api && t->first_err.call.time_ns == err_time(t, rec)) {
      t->first_err.group_more = g->n > 1 || g->over;
      t->first_err.ngroup_comms = g->n;
      for (size_t k = 0; k < g->n; k++)
        t->first_err.group_comms[k] = job->comms[job->members[g->members[k] - 1].comm]->info.id;
    }
    for (size_t k = 0; gm && k < g->n; k++) job->members[g->members[k] - 1].has_error = 1;
    if (m) m->has_error = 1;
    if (m && kind == NSP_K_COLL && rec->seq && (!m->first_err_seq || rec->seq < m->first_err_seq))
      m->first_err_seq = rec->seq;
  } else if (rec->flags & NSP_CALL_UNTRACKED) {
    t->info.untracked_calls++;
    if (m) m->nuntracked++; /* no COMPLETION will come: not awaited */
  } else if (m && (t->info.tracking & NSP_TRACK_COMPLETION) && (kind == NSP_K_COLL || kind == NSP_K_P2P)) {
    /* Enqueued: it waits for its COMPLETION record. */
    NSP_TRY(nsp_pend_call(&t->pend, &e));
  }
  if (group_end && rec->group_id && rec->group_depth <= 1) close_group(t, rec->group_id);
  if (!rec->comm) return 0; /* group start/end, memory: no communicator */
  if (!m) {
    t->orphan_calls++;
    return 0;
  }
  m->calls++;
  struct nsp_call *lc = &t->last_call.call;
  call_of(lc, t, &e, comm_id, nsp_an_wall(t, rec->t_enter));
  lc->result = rec->result;
  t->last_call.valid = 1;
  t->last_call.site = rec->site;
  t->last_call.pysite = rec->pysite;
  t->last_call.local = rec->comm;
  t->last_call.mono = rec->t_enter;
  t->last_call.peer_key = rec->peer;
  /* Refused by NCCL, so never enqueued: it is no collective of the
   * sequence its peers see, and no send or receive to pair (since 1.4 it
   * took no seq; the call after it has the same one).  A refused
   * collective is held back: if it stays the rank's last one there (the
   * rank gave up on it), it is compared at the trace's end
   * (compare_refused). */
  if (is_error(rec->result) && t->refused_take_no_seq && !(kind == NSP_K_P2P && !is_refusal(rec->result))) {
    if (kind == NSP_K_COLL) {
      m->refused = *rec;
      m->refused.ext = NULL;
      m->refused.last_error = NULL;
      m->has_refused = 1;
    }
    return 0;
  }
  if (kind == NSP_K_COLL) {
    m->has_refused = 0; /* a later collective took its place */
    return on_coll(job, t, m, rec);
  }
  if (kind == NSP_K_P2P) return on_p2p(job, t, m, rec);
  return 0;
}

/* An INFLIGHT record (1.5): a call that had not returned when the crash
 * ring was read.  Every one is kept (nsp_trace_info.inflight: the
 * creation calls the comm-init rule groups, the group ends and destroys
 * the reports name).  A collective or send/recv counts as arrived, like
 * its CALL would have (it takes part in the comparison at its seq, and is
 * the process's last call when it came last), and never completed
 * (finish_inflight).  One whose record is in the trace (same api and
 * entry) returned while the ring was read: it is not in flight. */
static int on_inflight(struct nsp_job *job, struct nsp_trace *t, const struct nsp_rec *rec) {
  int api = nsp_rec_inflight_api(rec);
  uint64_t t_enter = nsp_rec_inflight_t_enter(rec);
  if (nsp_an_end_seen(t, api, t_enter)) return 0;
  uint32_t local = nsp_rec_inflight_comm(rec);
  struct nsp_member *m = local ? local_member(job, t, local) : NULL;
  NSP_TRY(nsp_grow(&t->inflight, &t->inflight_cap, t->ninflight + 1, sizeof *t->inflight));
  struct nsp_inflight *f = &t->inflight[t->ninflight++];
  memset(f, 0, sizeof *f);
  struct nsp_call *c = &f->call;
  nsp_call_clear(c);
  c->api = api;
  c->comm_id = m ? job->comms[m->comm]->info.id : 0;
  c->seq = nsp_rec_inflight_seq(rec);
  c->count = nsp_rec_inflight_count(rec);
  c->dtype = nsp_rec_inflight_dtype(rec);
  c->redop = nsp_rec_inflight_redop(rec);
  c->peer = nsp_rec_inflight_peer(rec);
  c->time_ns = nsp_an_wall(t, t_enter);
  c->done = 0;
  c->in_flight = 1;
  call_redop(c, t, local);
  f->rank = f->nranks = f->color = f->key = -1;
  if (rec->ext) {
    f->new_comm_id = nsp_rec_inflight_comm_id(rec);
    f->parent_id = nsp_rec_inflight_parent_id(rec);
    f->rank = nsp_rec_inflight_rank(rec);
    f->nranks = nsp_rec_inflight_nranks(rec);
    f->color = nsp_rec_inflight_color(rec);
    f->key = nsp_rec_inflight_key(rec);
    f->split_index = nsp_rec_inflight_split_index(rec);
  }
  f->tid = nsp_rec_inflight_tid(rec);
  uint32_t pysite = nsp_rec_inflight_pysite(rec);
  f->pysite = nsp_an_pysite(t, pysite); /* its PYSITE record comes before it */
  if (t_enter > t->max_call_mono) t->max_call_mono = t_enter;
  int kind = nsp_api_kind(api);
  if (!m || (kind != NSP_K_COLL && kind != NSP_K_P2P)) return 0;
  m->calls++;
  if (!t->last_call.valid || t_enter >= t->last_call.mono) {
    t->last_call.call = *c;
    t->last_call.valid = 1;
    t->last_call.site = 0;
    t->last_call.pysite = f->pysite ? pysite : 0;
    t->last_call.local = local;
    t->last_call.mono = t_enter;
    t->last_call.peer_key = c->peer;
  }
  /* As its CALL record would have been. */
  struct nsp_rec call;
  memset(&call, 0, sizeof call);
  call.kind = NSP_REC_CALL;
  call.api = (uint8_t)api;
  call.comm = local;
  call.seq = c->seq;
  call.count = c->count;
  call.dtype = c->dtype;
  call.redop = nsp_rec_inflight_redop(rec);
  call.peer = c->peer;
  call.t_enter = t_enter;
  if (kind == NSP_K_P2P) return on_p2p(job, t, m, &call);
  NSP_TRY(on_coll(job, t, m, &call));
  if (!c->seq) return 0;
  if (m->last_seq == c->seq) m->last_inflight = 1;
  if (!m->inflight_seq || c->seq < m->inflight_seq) {
    m->inflight_seq = c->seq;
    sig_of(&m->inflight_sig, t, local, api, c->count, c->dtype, nsp_rec_inflight_redop(rec), c->peer);
    m->inflight_t = c->time_ns;
    m->inflight_mono = t_enter;
    m->inflight_pysite = f->pysite ? pysite : 0;
  }
  return 0;
}

/* A variable of trace t's recorded environment (nsp_env_get_fn); NULL
 * when it was not recorded. */
static const char *recorded_env(const char *name, void *arg) {
  const struct nsp_trace *t = arg;
  for (uint32_t i = 0; i < t->info.nenv; i++)
    if (!strcmp(t->env[2 * i], name)) return t->env[2 * i + 1];
  return NULL;
}

static int on_process(struct nsp_trace *t, const struct nsp_rec *rec) {
  const struct nsp_rec_ext *x = rec->ext;
  t->info.ppid = x->ppid;
  if (x->shim_version && x->shim_version[0]) {
    char *s = strdup(x->shim_version);
    if (!s) return NSP_AN_ENOMEM;
    free(t->shim_version);
    t->shim_version = s;
    t->info.shim_version = s;
  }
  if (!t->host[0] && x->host && x->host[0]) {
    char *h = strdup(x->host);
    if (!h) return NSP_AN_ENOMEM;
    free(t->host);
    t->host = h;
    t->info.host = h;
  }
  if (!t->info.nccl_version) t->info.nccl_version = x->nccl_version;
  if (x->nccl_path && x->nccl_path[0] && !t->nccl_path[0]) {
    NSP_TRY(dup_str(&t->nccl_path, x->nccl_path));
    t->info.nccl_path = t->nccl_path;
  }
  if (x->launcher && x->launcher[0] && !t->launcher[0]) {
    NSP_TRY(dup_str(&t->launcher, x->launcher));
    t->info.launcher = t->launcher;
  }
  if (!t->info.driver_version) t->info.driver_version = x->driver_version;
  if (!t->info.runtime_version) t->info.runtime_version = x->runtime_version;
  t->info.tracking |= x->tracking;
  t->env_read = 1;
  if (t->env || !x->nenv) return 0; /* one snapshot per process */
  t->env = calloc((size_t)x->nenv * 2, sizeof *t->env);
  if (!t->env) return NSP_AN_ENOMEM;
  t->info.nenv = x->nenv;
  t->info.env = (const char *const *)t->env;
  for (uint32_t i = 0; i < 2 * x->nenv; i++)
    if (!(t->env[i] = strdup(x->env[i] ? x->env[i] : ""))) return NSP_AN_ENOMEM;
  /* The launcher's idea of the rank, in order of trust (nsp_launchers.h). */
  const char *name, *val = nsp_launcher_env(NSP_LV_RANK, recorded_env, t, &name);
  char *end;
  long r = val ? strtol(val, &end, 10) : -1;
  if (val && end != val && !*end && r >= 0 && r <= INT32_MAX) {
    t->env_rank = (int)r;
    t->env_rank_var = name;
  }
  return 0;
}

/* ".rank<R>." in the file name (the shim renames once the rank is known). */
static int rank_from_name(const char *path) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  const char *p = strstr(base, ".rank");
  if (!p) return -1;
  p += 5;
  char *end;
  long r = strtol(p, &end, 10);
  if (end == p || *end != '.' || r < 0 || r > INT32_MAX) return -1;
  return (int)r;
}

struct nsp_reader *nsp_an_reopen(const struct nsp_trace *t, char *err, size_t errlen) {
  return t->mem ? nsp_reader_open_mem(t->mem, t->mem_len, err, errlen) : nsp_reader_open(t->path, err, errlen);
}

/* A stream runs its work in order: once a call on it completed, every call
 * enqueued on it before has completed too, COMPLETION record or not (the
 * shim tracks no call it could not get an event for). */
struct done_ctx {
  struct nsp_job *job;
  struct nsp_trace *t;
};

static void on_done(void *ctx, const struct nsp_pend *e, const struct nsp_rec *done) {
  struct nsp_trace *t = ((struct done_ctx *)ctx)->t;
  /* A collective that ran on the GPU needed every rank of its
   * communicator: they all issued it (nsp_member.done_seq). */
  struct nsp_member *m = local_member(((struct done_ctx *)ctx)->job, t, e->local);
  if (m && (done->flags & NSP_DONE_OK) && nsp_api_kind(e->api) == NSP_K_COLL && e->seq > m->done_seq)
    m->done_seq = e->seq;
  if (!(done->flags & (NSP_DONE_OK | NSP_DONE_CAPTURED))) return;
  size_t *v = nsp_u64map_get(&t->done_by_stream, e->stream);
  if (v) {
    if (e->t_enter > *v) *v = (size_t)e->t_enter;
  } else if (nsp_u64map_put(&t->done_by_stream, e->stream, (size_t)e->t_enter) < 0) {
    t->load_oom = 1;
  }
}

static void progress_tell(struct nsp_job *job) {
  if (job->progress.files_total < job->progress.files_done) job->progress.files_total = job->progress.files_done;
  if (job->progress.bytes_total < job->progress.bytes_done) job->progress.bytes_total = job->progress.bytes_done;
  if (job->progress_fn) job->progress_fn(job->progress_arg, &job->progress);
}

void nsp_an_progress_phase(struct nsp_job *job, int phase, size_t files_total, uint64_t bytes_total) {
  memset(&job->progress, 0, sizeof job->progress);
  job->progress.phase = phase;
  job->progress.files_total = files_total;
  job->progress.bytes_total = bytes_total;
  job->progress_base = 0;
}

void nsp_an_progress_more(struct nsp_job *job, size_t files, uint64_t bytes) {
  job->progress.files_total += files;
  job->progress.bytes_total += bytes;
}

void nsp_an_progress_record(struct nsp_job *job, const struct nsp_reader *r) {
  nsp_an_progress_record_at(job, nsp_reader_offset(r));
}

void nsp_an_progress_record_at(struct nsp_job *job, size_t offset) {
  if (++job->progress.records % 16384 || !job->progress_fn) return;
  job->progress.bytes_done = job->progress_base + offset;
  progress_tell(job);
}

void nsp_an_progress_at(struct nsp_job *job, size_t files_done, uint64_t bytes_done, uint64_t records) {
  job->progress.files_done = files_done;
  job->progress.bytes_done = bytes_done;
  job->progress.records = records;
  progress_tell(job);
}

void nsp_an_progress_file(struct nsp_job *job, uint64_t size) {
  job->progress.files_done++;
  job->progress_base += size;
  job->progress.bytes_done = job->progress_base;
  progress_tell(job);
}

/* Collective seq of comm index `local` is in the frame at byte `frame`:
 * the trace's spans grow to cover it.  0 or NSP_AN_ENOMEM. */
static int note_span(struct nsp_trace *t, size_t frame, uint32_t local, uint64_t seq) {
  if (frame == SIZE_MAX) return 0; /* from the crash ring: pass 2 reads to it anyway */
  for (size_t k = t->nspans; k-- > 0 && t->spans[k].frame == frame;) {
    struct nsp_frame_span *sp = &t->spans[k];
    if (sp->local != local) continue;
    if (seq < sp->lo) sp->lo = seq;
    if (seq > sp->hi) sp->hi = seq;
    return 0;
  }
  NSP_TRY(nsp_grow(&t->spans, &t->spans_cap, t->nspans + 1, sizeof *t->spans));
  t->spans[t->nspans++] = (struct nsp_frame_span){frame, local, seq, seq};
  return 0;
}

size_t nsp_an_frame_of(const struct nsp_trace *t, uint32_t local, uint64_t seq) {
  for (size_t k = 0; k < t->nspans; k++)
    if (t->spans[k].local == local && t->spans[k].lo <= seq && seq <= t->spans[k].hi) return t->spans[k].frame;
  return 0;
}

/* What a frame's completions did (nsp_an_index.c): on_done's maxima,
 * the same whether the frame is read or stepped over. */
static int plan_done(struct nsp_job *job, struct nsp_trace *t, const struct nsp_an_plan *pl,
                     const struct nsp_an_pframe *f) {
  if (!(t->info.tracking & NSP_TRACK_COMPLETION)) return 0;
  for (size_t i = 0; i < f->ncomm; i++) {
    const struct nsp_ix_comm *c = &pl->comm[f->comm0 + i];
    struct nsp_member *m = c->done_max ? local_member(job, t, c->local) : NULL;
    if (m && c->done_max > m->done_seq) m->done_seq = c->done_max;
  }
  for (size_t i = 0; i < f->nstream; i++) {
    const struct nsp_ix_stream *st = &pl->stream[f->stream0 + i];
    size_t *v = nsp_u64map_get(&t->done_by_stream, st->stream);
    if (v) {
      if (st->t_enter > *v) *v = (size_t)st->t_enter;
    } else {
      NSP_TRY(nsp_u64map_put(&t->done_by_stream, st->stream, (size_t)st->t_enter));
    }
  }
  return 0;
}

/* A clean frame stepped over: what folding its records would have done
 * (load_records, on_call and on_coll for successful collectives that
 * follow their communicator's last seq, and their COMPLETIONs); the
 * refs of its seqs stay unset (every rank agreed there), and the last
 * call, sig and time of each member come from the frames read after. */
static int plan_skip(struct nsp_job *job, struct nsp_trace *t, const struct nsp_an_plan *pl,
                     const struct nsp_an_pframe *f) {
  const struct nsp_ix_summary *x = &f->sum;
  job->frames_skipped++;
  t->info.records += x->nrec;
  job->progress.records += x->nrec;
  if (x->max_mono) seen(t, x->max_mono);
  for (int a = 0; a < NSP_API_COUNT && a < 128; a++)
    if (x->api_bits[a / 64] >> (a % 64) & 1) t->api_seen[a / 8] |= (uint8_t)(1u << (a % 8));
  t->info.calls += x->calls; /* collectives, sends and receives, group starts and ends */
  if (x->max_call_mono > t->max_call_mono) t->max_call_mono = x->max_call_mono;
  t->info.untracked_calls += x->untracked;
  t->info.completions += x->completions;
  for (size_t i = 0; i < f->ncomm; i++) {
    const struct nsp_ix_comm *cc = &pl->comm[f->comm0 + i];
    if (!cc->ncoll) continue;
    struct nsp_member *m = local_member(job, t, cc->local);
    if (!m) {
      t->orphan_calls += cc->ncoll;
      continue;
    }
    struct nsp_an_comm *c = job->comms[m->comm];
    NSP_TRY(note_span(t, f->off, cc->local, cc->lo));
    NSP_TRY(note_span(t, f->off, cc->local, cc->hi));
    t->info.work_calls += cc->ncoll;
    m->calls += cc->ncoll;
    m->nuntracked += cc->untracked;
    m->has_refused = 0;
    m->ncoll += cc->ncoll;
    c->info.ncoll += cc->ncoll;
    if (cc->hi > c->info.max_seq) c->info.max_seq = cc->hi;
    if (cc->hi > m->last_seq) {
      m->last_seq = cc->hi;
      m->last_rec = t->info.records;
    }
  }
  /* Sends and receives: each peer and direction's run, as on_p2p makes it. */
  for (size_t i = 0; i < f->np2p; i++) {
    const struct nsp_ix_p2p *e = &pl->p2p[f->p2p0 + i];
    t->info.work_calls += e->n;
    struct nsp_member *m = local_member(job, t, e->local);
    if (!m) {
      t->orphan_calls += e->n;
      continue;
    }
    struct nsp_runs *rs;
    NSP_TRY(p2p_runs(m, e->peer, e->dir ? 1 : 0, &rs));
    NSP_TRY(runs_add(rs, e->k0, e->n, e->count, e->dtype, t->info.records));
    m->calls += e->n;
    job->comms[m->comm]->info.np2p += e->n;
  }
  return 0;
}

/* The plan's frames before byte offset `frame` (SIZE_MAX: all) are
 * folded in (stepped over) or done with; the frame at `frame`, read,
 * starts its run's completion table afresh. */
static int plan_advance(struct nsp_job *job, struct nsp_trace *t, const struct nsp_an_plan *pl, size_t *pi,
                        size_t frame) {
  while (*pi < pl->n && pl->f[*pi].off < frame) {
    const struct nsp_an_pframe *f = &pl->f[(*pi)++];
    if (!f->decode) NSP_TRY(plan_skip(job, t, pl, f));
    NSP_TRY(plan_done(job, t, pl, f));
  }
  if (*pi < pl->n && pl->f[*pi].off == frame) {
    const struct nsp_an_pframe *f = &pl->f[(*pi)++];
    if (f->run_start) {
      nsp_pend_free(&t->pend);
      nsp_pend_init(&t->pend);
    }
    NSP_TRY(plan_done(job, t, pl, f));
  }
  return 0;
}

static int load_records(struct nsp_job *job, struct nsp_trace *t, size_t ti, struct nsp_an_src *src) {
  const struct nsp_rec *rec;
  struct done_ctx dc = {job, t};
  int ret;
  const struct nsp_an_plan *pl = src->plan;
  size_t pi = 0, cur = SIZE_MAX - 1;
  while ((ret = nsp_an_src_next(src, &rec)) == 1) {
    if (pl) {
      size_t fo = nsp_an_src_frame(src);
      if (fo != cur) NSP_TRY(plan_advance(job, t, pl, &pi, cur = fo));
    }
    t->info.records++;
    if (!((job->progress.records + 1) % 16384)) nsp_an_progress_record_at(job, nsp_an_src_offset(src));
    else job->progress.records++;
    struct nsp_member *m;
    /* Every monotonic time a record holds counts towards the trace's end,
     * but a process snapshot's (the process's start). */
    if (rec->kind != NSP_REC_PROCESS) seen(t, nsp_rec_latest_mono(rec));
    switch (rec->kind) {
      case NSP_REC_PROCESS:
        NSP_TRY(on_process(t, rec));
        break;
      case NSP_REC_COMM:
        NSP_TRY(nsp_an_end_note_call(t, rec->api, rec->t_enter));
        NSP_TRY(on_comm(job, t, ti, rec));
        break;
      case NSP_REC_COMM_END:
        m = local_member(job, t, rec->comm);
        NSP_TRY(nsp_an_end_note_call(t, rec->api, rec->t_enter));
        if (m) {
          m->ended = 1;
          m->end_api = rec->api;
          m->end_result = rec->result;
          m->end_t = nsp_an_wall(t, rec->t_enter);
        }
        if (is_error(rec->result)) {
          if (m) m->has_error = 1;
          NSP_TRY(note_error(t, NSP_SRC_COMM_END, rec->api, m ? job->comms[m->comm]->info.id : 0, 0, rec,
                             err_time(t, rec)));
        }
        break;
      case NSP_REC_CALL:
        if (rec->api < NSP_API_COUNT) t->api_seen[rec->api / 8] |= (uint8_t)(1u << (rec->api % 8));
        NSP_TRY(nsp_an_end_note_call(t, rec->api, rec->t_enter));
        if (rec->seq && rec->comm && nsp_api_kind(rec->api) == NSP_K_COLL)
          NSP_TRY(note_span(t, nsp_an_src_frame(src), rec->comm, rec->seq));
        NSP_TRY(on_call(job, t, rec));
        break;
      case NSP_REC_INFLIGHT:
        NSP_TRY(on_inflight(job, t, rec));
        break;
      case NSP_REC_EXIT:
      case NSP_REC_RINGSTATE:
      case NSP_REC_LIBNCCL:
        NSP_TRY(nsp_an_end_load(t, rec));
        break;
      case NSP_REC_ASYNC_ERROR:
        if (is_error(rec->result)) {
          m = local_member(job, t, rec->comm);
          if (m) m->has_error = 1;
          NSP_TRY(note_error(t, NSP_SRC_ASYNC, -1, m ? job->comms[m->comm]->info.id : 0, 0, rec,
                             nsp_an_wall(t, nsp_rec_async_error_t(rec))));
        }
        break;
      case NSP_REC_REDOP:
        if (!is_error(rec->result)) NSP_TRY(on_redop(t, rec));
        if (is_error(rec->result)) {
          m = rec->comm ? local_member(job, t, rec->comm) : NULL;
          NSP_TRY(note_error(t, NSP_SRC_REDOP, rec->api, m ? job->comms[m->comm]->info.id : 0, 0, rec,
                             err_time(t, rec)));
        }
        break;
      case NSP_REC_DROPPED:
        t->info.dropped += nsp_rec_dropped_count(rec);
        t->drop_rec = t->info.records;
        if (nsp_rec_dropped_t(rec) > t->drop_mono) t->drop_mono = nsp_rec_dropped_t(rec);
        t->drop_by[nsp_rec_dropped_reason(rec) < NSP_DROP_END ? nsp_rec_dropped_reason(rec) : 0] += nsp_rec_dropped_count(rec);
        break;
      case NSP_REC_COMPLETION:
        t->info.completions++;
        if (t->info.tracking & NSP_TRACK_COMPLETION) NSP_TRY(nsp_pend_done(&t->pend, rec, on_done, &dc));
        if (t->load_oom) return NSP_AN_ENOMEM;
        break;
      case NSP_REC_CALLSITE:
        NSP_TRY(nsp_an_site_add(t, rec));
        break;
      case NSP_REC_PYSITE:
        NSP_TRY(nsp_an_pysite_add(t, rec));
        break;
      case NSP_REC_SIGNAL:
        NSP_TRY(nsp_an_signal_load(t, rec));
        break;
      case NSP_REC_MODULE:
        NSP_TRY(nsp_an_module_add(t, rec));
        break;
      default:
        break;
    }
  }
  if (pl && ret >= 0) NSP_TRY(plan_advance(job, t, pl, &pi, SIZE_MAX));
  return ret < 0 ? ret : 0;
}

/* At the end of a trace: each member's refused collective that no later
 * one replaced is what that rank last tried there; compare it. */
static int compare_refused(struct nsp_job *job, struct nsp_trace *t) {
  for (uint32_t l = 0; l < t->nlocal; l++) {
    struct nsp_member *m = local_member(job, t, l);
    if (!m || !m->has_refused) continue;
    m->has_refused = 0;
    NSP_TRY(on_coll(job, t, m, &m->refused));
  }
  return 0;
}

/* How long before the end of its trace a call must have been enqueued for
 * a missing COMPLETION record to mean it never completed (ns): the
 * shim's poller looks every NCCLSPY_POLL_MS (2 ms unless the process's
 * snapshot says otherwise), so a process that died or was killed right
 * after a call (a fatal signal 0.2 ms after the enqueue, on 2xH200) may
 * have run it without the trace saying so.  Three poll intervals, at
 * least 50 ms. */
static uint64_t too_recent_ns(const struct nsp_trace *t) {
  uint64_t poll_ms = nsp_an_env_ms(&t->info, "NCCLSPY_POLL_MS", 2, 1, 1000);
  uint64_t ns = 3 * poll_ms * 1000000u;
  return ns < 50000000u ? 50000000u : ns;
}

/* Whether the trace ends too soon after entry e to say it never
 * completed (see too_recent_ns).  recent_ns 0: never (the process did not
 * die: a trace that ends normally had its poller's last look at exit). */
static int too_recent(const struct nsp_trace *t, uint64_t recent_ns, const struct nsp_pend *e) {
  return recent_ns && e->state == NSP_PEND_WAIT && t->t_last >= e->t_enter && t->t_last - e->t_enter < recent_ns;
}

/* Calls in flight (1.5) never completed: per member, its lowest
 * collective seq in flight is pending too when that is lower than what
 * the table left (whether or not the trace tracks completion); the
 * earliest work call in flight may be what the process is stuck in
 * (*first_mono: the entry of the table's candidate, 0 none).  Not a
 * running process's calls younger than nsp_an_live_ns: they may yet
 * return. */
static void finish_inflight(struct nsp_job *job, struct nsp_trace *t, uint64_t first_mono) {
  for (uint32_t l = 0; l < t->nlocal; l++) {
    struct nsp_member *m = local_member(job, t, l);
    if (!m || !m->inflight_seq || nsp_an_end_young(t, m->inflight_mono)) continue;
    m->npending++;
    if (m->first_pending && m->first_pending <= m->inflight_seq) continue;
    m->first_pending = m->inflight_seq;
    m->pend_sig = m->inflight_sig;
    m->pend_t = m->inflight_t;
    m->pend_mono = m->inflight_mono;
    m->pend_site = 0;
    m->pend_pysite = m->inflight_pysite;
    m->pend_state = NSP_PEND_WAIT;
    m->pend_inflight = 1;
  }
  for (size_t i = 0; i < t->ninflight; i++) {
    const struct nsp_call *c = &t->inflight[i].call;
    int k = nsp_api_kind(c->api);
    uint64_t mono = (uint64_t)c->time_ns - (uint64_t)t->off_ns;
    if ((k != NSP_K_COLL && k != NSP_K_P2P) || nsp_an_end_young(t, mono)) continue;
    if (first_mono && first_mono <= mono) continue;
    first_mono = mono;
    t->blocked.call = *c;
    t->blocked.valid = 1;
    t->blocked.site = 0;
    t->blocked.pysite = t->inflight[i].pysite ? t->inflight[i].pysite->id : 0;
    t->blocked.mono = mono;
  }
}

/* The key of the process that wrote a trace: its header's host, pid and
 * clock pair (a trace's copies share it). */
static uint64_t process_key(const struct nsp_file_header *h) {
  uint64_t k = nsp_fnv1a(NSP_FNV_INIT, h->host, strnlen(h->host, sizeof h->host));
  k = nsp_fnv1a(k, &h->pid, sizeof h->pid);
  k = nsp_fnv1a(k, &h->realtime_ns, sizeof h->realtime_ns);
  return nsp_fnv1a(k, &h->monotonic_ns, sizeof h->monotonic_ns);
}

/* Whether trace o was written by the process of header h. */
static int same_process(const struct nsp_trace *o, const struct nsp_file_header *h) {
  return o->info.pid == h->pid && o->info.realtime_ns == (int64_t)h->realtime_ns &&
         o->info.monotonic_ns == (int64_t)h->monotonic_ns && !strncmp(o->hdr_host, h->host, sizeof h->host);
}

/* At the end of a trace with completion tracking: what is still in the
 * table never completed, unless the process died (a fatal signal, or its
 * last records came from the crash ring: died) too soon after the call to
 * tell, or still runs and the call is younger than nsp_an_live_ns; then
 * its completion is unknown, as if untracked.  Per member, the lowest
 * such collective seq; per process, the earliest such call (what it is
 * stuck in) and whether its last call completed.  Then the calls in
 * flight (finish_inflight), with or without tracking. */
static void finish_pending(struct nsp_job *job, struct nsp_trace *t, int died) {
  if (!(t->info.tracking & NSP_TRACK_COMPLETION)) {
    finish_inflight(job, t, 0);
    return;
  }
  struct nsp_pend_tab *tab = &t->pend;
  const struct nsp_pend *first = NULL;
  uint64_t recent_ns = t->info.end.state == NSP_END_RUNNING ? nsp_an_live_ns(t)
                       : died || t->has_sig                 ? too_recent_ns(t)
                                                            : 0;
  /* A trace cut, damaged or ending without an exit record may have lost
   * the COMPLETION of a call made shortly before its end. */
  int end_unseen = t->info.end.state == NSP_END_UNKNOWN && (t->minor >= 5 || t->read_problem);
  for (size_t i = 0; i < tab->n; i++) {
    const struct nsp_pend *e = &tab->v[i];
    if (e->state != NSP_PEND_WAIT && e->state != NSP_PEND_ABANDONED && e->state != NSP_PEND_FAILED) continue;
    const size_t *later = nsp_u64map_get(&t->done_by_stream, e->stream);
    if (e->state == NSP_PEND_WAIT && later && (uint64_t)*later > e->t_enter) continue; /* ran before a later one */
    /* Its COMPLETION may be among records lost after it was enqueued
     * (a DROPPED record came later), or the process died too soon after
     * it to tell: whether it completed is unknown. */
    if (too_recent(t, recent_ns, e) || (end_unseen && e->state == NSP_PEND_WAIT && nsp_an_end_young(t, e->t_enter)) ||
        (e->state == NSP_PEND_WAIT && t->info.dropped && t->drop_mono >= e->t_enter)) {
      struct nsp_member *m = local_member(job, t, e->local);
      if (m) m->nuntracked++; /* completion unknown */
      continue;
    }
    if (!first || e->t_enter < first->t_enter) first = e;
    struct nsp_member *m = local_member(job, t, e->local);
    if (!m || nsp_api_kind(e->api) != NSP_K_COLL || !e->seq) continue;
    m->npending++;
    if (m->first_pending && m->first_pending <= e->seq) continue;
    m->first_pending = e->seq;
    sig_of(&m->pend_sig, t, e->local, e->api, e->count, e->dtype, e->redop, e->peer);
    m->pend_t = nsp_an_wall(t, e->t_enter);
    m->pend_mono = e->t_enter;
    m->pend_site = e->site;
    m->pend_pysite = e->pysite;
    m->pend_state = e->state;
  }
  if (first) {
    struct nsp_member *m = local_member(job, t, first->local);
    struct nsp_call *c = &t->blocked.call;
    call_of(c, t, first, m ? job->comms[m->comm]->info.id : 0, nsp_an_wall(t, first->t_enter));
    c->done = 0;
    t->blocked.valid = 1;
    t->blocked.site = first->site;
    t->blocked.pysite = first->pysite;
    t->blocked.local = first->local;
    t->blocked.mono = first->t_enter;
  }
  finish_inflight(job, t, first ? first->t_enter : 0);
  struct nsp_event *lc = &t->last_call;
  int lk = lc->valid && !lc->call.in_flight ? nsp_api_kind(lc->call.api) : -1;
  if (lk == NSP_K_COLL || lk == NSP_K_P2P) {
    lc->call.done = lc->call.result && lc->call.result != ncclInProgress
                        ? 0
                        : !nsp_pend_waiting(tab, lc->local, lc->call.api, lc->call.seq, lc->peer_key);
    if (!lc->call.done && !lc->call.result &&
        ((t->t_last >= lc->mono && t->t_last - lc->mono < recent_ns) || (end_unseen && nsp_an_end_young(t, lc->mono))))
      lc->call.done = -1; /* the trace ends too soon after it to tell */
  }
  t->pend_overflow = tab->overflow;
}

/* nsp_an_load_trace once the trace was opened: r its reader (NULL: not
 * read, err says why), src where its records come from. */
static int load_opened(struct nsp_job *job, const char *path, uint8_t *mem, size_t mem_len, struct nsp_reader *r,
                       const char *err, struct nsp_an_src *src) {
  if (!r) {
    free(mem);
    snprintf(job->err, sizeof job->err, "%s: %s", path, err);
    job->nunread++;
    nsp_an_progress_file(job, 0);
    NSP_TRY(nsp_job_notef(job, "%s: not read: %s", path, err));
    return NSP_AN_EREAD;
  }
  const struct nsp_file_header *h = nsp_reader_header(r);
  /* A copy of a trace already added (same host, pid and clock pair in the
   * header: one process) would claim its ranks a second time.  Found by
   * the process's hash; a hash shared by two processes falls back to
   * comparing every trace. */
  uint64_t who = process_key(h);
  const size_t *seen = nsp_u64map_get(&job->trace_by_process, who);
  size_t from = 0, to = 0;
  if (seen && *seen < job->ntraces && same_process(job->traces[*seen], h)) from = *seen, to = *seen + 1;
  else if (seen) to = job->ntraces;
  for (size_t i = from; i < to; i++) {
    const struct nsp_trace *o = job->traces[i];
    if (!same_process(o, h)) continue;
    size_t size = nsp_reader_size(r);
    nsp_an_src_done(src);
    free(mem);
    nsp_reader_destroy(r);
    nsp_an_progress_file(job, size);
    /* A directory's copies are read longest first (nsp_an_job.c); copies
     * named in separate arguments are read in argument order. */
    if (size > o->size) job->traces[i]->longer_copy = size - o->size;
    if (size > o->size)
      NSP_TRY(nsp_job_notef(job,
                            "%s: a copy of %s (the same host, pid and start time: one process), %zu bytes longer; "
                            "the shorter was read, so this process's last records may be missing: name only "
                            "the longer copy",
                            path, o->info.path, size - o->size));
    else
      NSP_TRY(nsp_job_notef(job, "%s: a copy of %s (the same host, pid and start time: one process); read once",
                            path, o->info.path));
    return 1;
  }
  struct nsp_trace *t = calloc(1, sizeof *t);
  if (!t || nsp_grow(&job->traces, &job->traces_cap, job->ntraces + 1, sizeof *job->traces) < 0) {
    free(t);
    nsp_an_src_done(src);
    free(mem);
    nsp_reader_destroy(r);
    return NSP_AN_ENOMEM;
  }
  size_t ti = job->ntraces;
  job->traces[job->ntraces++] = t; /* owned by the job from here on */
  if (!seen && nsp_u64map_put(&job->trace_by_process, who, ti) < 0) {
    nsp_an_src_done(src);
    free(mem);
    nsp_reader_destroy(r);
    return NSP_AN_ENOMEM;
  }
  t->mem = mem;
  t->mem_len = mem_len;
  t->size = nsp_reader_size(r);
  t->env_rank = -1;
  t->live_min_ns = (uint64_t)job->live_min_ns;
  t->file_rank = rank_from_name(path);
  t->path = strdup(path);
  t->host = strndup(h->host, sizeof h->host);
  memcpy(t->hdr_host, h->host, sizeof t->hdr_host);
  t->shim_version = strdup("");
  t->nccl_path = strdup("");
  t->launcher = strdup("");
  nsp_pend_init(&t->pend);
  nsp_call_clear(&t->blocked.call);
  if (!t->path || !t->host || !t->shim_version || !t->nccl_path || !t->launcher) {
    nsp_an_src_done(src);
    nsp_reader_destroy(r);
    return NSP_AN_ENOMEM;
  }
  t->info.path = t->path;
  t->info.host = t->host;
  t->info.shim_version = t->shim_version;
  t->info.nccl_path = t->nccl_path;
  t->info.launcher = t->launcher;
  t->info.pid = h->pid;
  t->info.rank = -1;
  t->info.nccl_version = h->nccl_version;
  t->info.realtime_ns = (int64_t)h->realtime_ns;
  t->refused_take_no_seq = h->major > 1 || (h->major == 1 && h->minor >= 4);
  t->minor = h->major > 1 ? NSP_FORMAT_MINOR : h->minor;
  t->init_wait_id = SIZE_MAX;
  t->info.monotonic_ns = (int64_t)h->monotonic_ns;
  t->off_ns = (int64_t)(h->realtime_ns - h->monotonic_ns);
  nsp_call_clear(&t->first_err.call);
  nsp_call_clear(&t->last_call.call);

  int ret = load_records(job, t, ti, src);
  nsp_an_src_done(src);
  t->info.frames = nsp_reader_frames(r);
  t->damaged = nsp_reader_damage(r, &t->damage_at, &t->damage_skipped);
  t->read_problem = nsp_reader_problem(r) != NULL;
  const char *rn = nsp_reader_ring_note(r);
  if (rn) t->ring_bad = strstr(rn, ".ring ignored: ") || strstr(rn, ".ring not read: ") ? 2 : 1;
  if (ret == 0) ret = compare_refused(job, t);
  nsp_an_signal_finish(t);
  if (ret == 0) ret = nsp_an_end_decide(job, t);
  if (ret == 0) finish_pending(job, t, nsp_reader_recovered(r) > 0);
  nsp_pend_free(&t->pend);
  nsp_u64map_free(&t->done_by_stream);
  nsp_u64map_free(&t->redop_index); /* handles mean nothing past the trace */
  free(t->redop_defs);
  t->redop_defs = NULL;
  t->nredop_defs = t->redop_defs_cap = 0;
  nsp_u64map_free(&t->group_comm);
  free(t->groups);
  t->groups = NULL;
  t->ngroups = 0;
  free(t->recent); /* the duplicate check is done with */
  t->recent = NULL;
  if (t->t_last) t->info.end_ns = nsp_an_wall(t, t->t_last);
  /* Indices are done with once the file is read; a hostile index near
   * NSP_MAX_COMMS must not cost memory for the job's life. */
  free(t->local_member);
  t->local_member = NULL;
  t->nlocal = 0;
  const char *problem = nsp_reader_problem(r);
  /* A process that crashed leaves its last records in <trace>.ring; a
   * copy of the traces without it loses them. */
  int no_ring = 0;
  if (!mem && (problem || !t->info.records)) {
    char *ring = nsp_asprintf("%s.ring", path);
    struct stat st;
    if (!ring) ret = NSP_AN_ENOMEM;
    else no_ring = stat(ring, &st) != 0;
    free(ring);
  }
  /* "; there is no <path>.ring next to it: ..." */
#define NSP_RING_HINT "; there is no %s.ring next to it: a process that crashed keeps its last records in " \
                      "<trace>.ring, which must be copied along with the traces"
  if (ret == 0 && problem) {
    t->problem = strdup(problem);
    if (!t->problem) ret = NSP_AN_ENOMEM;
    t->info.problem = t->problem;
    /* "the 0 readable records were analysed" would contradict "nothing
     * to analyse": a trace with none says so. */
    char read[64];
    if (t->info.records) snprintf(read, sizeof read, "the %llu readable records were analysed",
                                  (unsigned long long)t->info.records);
    else snprintf(read, sizeof read, "no record in it could be read");
    if (!ret)
      ret = no_ring ? nsp_job_notef(job, "%s: %s; %s" NSP_RING_HINT, path, problem, read, path)
                    : nsp_job_notef(job, "%s: %s; %s", path, problem, read);
  } else if (ret == 0 && !t->info.records) {
    ret = no_ring ? nsp_job_notef(job, "%s: no records in it (only the header)" NSP_RING_HINT, path, path)
                  : nsp_job_notef(job, "%s: no records in it (only the header)", path);
  }
  t->info.recovered = nsp_reader_recovered(r);
  if (ret == 0 && t->info.recovered)
    ret = nsp_job_notef(job, "%s: %llu record%s recovered from %s.ring (%s %s)", path,
                        (unsigned long long)t->info.recovered, t->info.recovered == 1 ? "" : "s", path,
                        t->info.end.state == NSP_END_RUNNING ? "its process, still running, had not yet written"
                                                             : "its process ended before writing",
                        t->info.recovered == 1 ? "it" : "them");
  if (ret == 0 && nsp_reader_unrecovered(r))
    ret = nsp_job_notef(job, "%s: %llu records in %s.ring could not be recovered (their strings were lost)",
                        path, (unsigned long long)nsp_reader_unrecovered(r), path);
  t->ring_lost = nsp_reader_unrecovered(r);
  if (ret == 0 && nsp_reader_ring_note(r)) ret = nsp_job_notef(job, "%s: %s", path, nsp_reader_ring_note(r));
  nsp_reader_destroy(r);
  nsp_an_progress_file(job, t->size);
  NSP_TRY(ret);
  if (t->info.dropped)
    NSP_TRY(nsp_job_notef(job, "%s: the shim dropped %llu records; comparisons near the gap may be off",
                          path, (unsigned long long)t->info.dropped));
  if (t->orphan_calls)
    NSP_TRY(nsp_job_notef(job, "%s: %llu calls on communicators without a usable COMM record were skipped",
                          path, (unsigned long long)t->orphan_calls));
  if (t->bad_seq)
    NSP_TRY(nsp_job_notef(job, "%s: %llu collectives without a usable sequence number were skipped", path,
                          (unsigned long long)t->bad_seq));
  if (t->rebind_refused)
    NSP_TRY(nsp_job_notef(job, "%s: %llu COMM records changed a communicator's id after calls on it; ignored",
                          path, (unsigned long long)t->rebind_refused));
  if (t->pend_overflow)
    NSP_TRY(nsp_job_notef(job, "%s: more than a million calls awaited completion at once; later ones were taken "
                               "as completed", path));
  if (t->pysites_dropped)
    NSP_TRY(nsp_job_notef(job, "%s: %llu Python call sites past the %zu kept were not read; calls naming them show "
                               "none", path, (unsigned long long)t->pysites_dropped, t->info.npysites));
  return 1;
}

int nsp_an_load_trace(struct nsp_job *job, const char *path, uint8_t *mem, size_t mem_len) {
  char err[256] = "";
  struct nsp_an_src src = {0};
  src.r = mem ? nsp_reader_open_mem(mem, mem_len, err, sizeof err) : nsp_reader_open(path, err, sizeof err);
  if (src.r && job->ix && (src.plan = nsp_an_plan_make(job->ix, path, mem, mem_len)))
    nsp_reader_set_filter(src.r, nsp_an_plan_want, src.plan);
  return load_opened(job, path, mem, mem_len, src.r, err, &src);
}

void nsp_an_load_begin(struct nsp_job *job) {
  /* The earlier load judged its blocks clean without these traces'
   * digests (a rank claimed twice, a signature that differs). */
  if (job->frames_skipped) job->reread_all = 1;
}

/* The CPUs of the process's affinity mask (else online). */
static int cpus(void) {
  cpu_set_t set;
  return sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : (int)sysconf(_SC_NPROCESSORS_ONLN);
}

int nsp_an_fold_threads(const struct nsp_job *job) {
  if (job->threads) return job->threads;
  int n = cpus();
  return n < 2 ? 1 : n > NSP_JOB_THREADS_DEFAULT ? NSP_JOB_THREADS_DEFAULT : n;
}

int nsp_an_read_threads(const struct nsp_job *job) {
  if (job->threads) return job->threads;
  int n = cpus();
  /* Workers decode while this thread folds: they need a core of their
   * own each, or the fold waits (on 2 cores, 2 workers made a 1,024 x
   * 100k job 1.2-1.3 times slower than one thread alone). */
  n = n - 1;
  return n < 2 ? 1 : n > NSP_JOB_THREADS_DEFAULT ? NSP_JOB_THREADS_DEFAULT : n;
}

int nsp_an_load_traces(struct nsp_job *job, size_t n, const char *const *paths, uint8_t **mems, const size_t *lens,
                       int *results, char **errors) {
  nsp_an_load_begin(job);
  int threads = nsp_an_read_threads(job);
  /* The indexes first: which frames each trace reads (nsp_an_index.c). */
  if (nsp_an_index_scan(job, n, paths, mems, lens) < 0) {
    for (size_t k = 0; mems && k < n; k++) free(mems[k]);
    return NSP_AN_ENOMEM;
  }
  struct nsp_an_feed_item *items = threads > 1 && n > 1 ? calloc(n, sizeof *items) : NULL; /* else alone */
  for (size_t k = 0; items && k < n; k++) {
    items[k].path = paths[k];
    items[k].mem = mems ? mems[k] : NULL;
    items[k].mem_len = lens ? lens[k] : 0;
    items[k].ix = job->ix;
  }
  struct nsp_an_feed *feed = nsp_an_feed_start(items, n, threads);
  int ret = 0;
  for (size_t k = 0; k < n; k++) {
    uint8_t *mem = mems ? mems[k] : NULL;
    int r;
    job->err[0] = 0;
    if (ret) { /* out of memory: the rest are not read */
      free(mem);
      r = NSP_AN_ENOMEM;
    } else if (feed) {
      char err[256] = "";
      struct nsp_an_src src = {0};
      src.feed = feed;
      src.item = k;
      src.r = nsp_an_feed_open(feed, k, err, sizeof err);
      src.plan = nsp_an_feed_plan(feed, k);
      r = load_opened(job, paths[k], mem, lens ? lens[k] : 0, src.r, err, &src);
    } else {
      r = nsp_an_load_trace(job, paths[k], mem, lens ? lens[k] : 0);
    }
    if (r == NSP_AN_ENOMEM) ret = r;
    if (results) results[k] = r;
    if (errors) errors[k] = *job->err ? strdup(job->err) : NULL;
  }
  nsp_an_feed_stop(feed);
  free(items);
  nsp_an_index_free(job->ix);
  job->ix = NULL;
  return ret;
}
