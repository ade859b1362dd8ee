/* nsp_an_feed.c - trace files decoded on worker threads, handed to the
 * loading thread in the order they were listed.
 *
 * Decoding (zstd and the record codec) is most of what reading costs and
 * needs nothing of the job, so workers do it, each on one file at a time;
 * folding records into the job model stays on the one thread that calls
 * nsp_an_feed_next, file after file in list order.  The model therefore
 * sees the same records in the same order whatever the number of
 * workers, and the report is the same.
 *
 * Memory is bounded whatever the files: a file's queue holds at most
 * NSP_FEED_QUEUE batches of NSP_FEED_BATCH records (a worker waits when
 * it is full), and workers open at most their number plus 2 files past
 * the one being folded in. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "nsp_an_model.h"
#include "nsp_reader.h"
#include "nsp_schema.h"

#define NSP_FEED_BATCH 4096 /* records per batch */
#define NSP_FEED_QUEUE 4    /* batches queued per file */

/* Bytes for the strings and arrays of a batch's records, in chunks that
 * never move (records point into them). */
struct feed_chunk {
  struct feed_chunk *next;
  size_t used, cap;
  _Alignas(16) unsigned char data[];
};

struct feed_batch {
  struct feed_batch *next;
  struct nsp_rec rec[NSP_FEED_BATCH];
  size_t frame[NSP_FEED_BATCH];           /* each record's nsp_reader_record_frame */
  size_t n;
  size_t offset;   /* the reader's nsp_reader_offset after its last record */
  struct feed_chunk *chunks;
};

struct feed_file {
  struct nsp_an_feed_item item;
  struct nsp_reader *r;  /* NULL when it could not be opened (err) */
  struct nsp_an_plan *plan; /* its frames read and stepped over; handed to the loading thread with r */
  int taken;             /* r was handed to the loading thread, which owns it */
  int oom;               /* a record's copy found no memory: its file ends early */
  char err[256];
  int opened;            /* a worker has tried to open it */
  int done;              /* a worker read it to its end: no more batches */
  int cancel;            /* the loading thread wants no more of it */
  struct feed_batch *head, *tail;
  size_t nq;
};

struct nsp_an_feed {
  pthread_mutex_t mu;
  pthread_cond_t to_loader, to_workers;
  int loader_waits, workers_wait; /* threads waiting on each: wake only those */
  struct feed_file *files;
  size_t n;
  size_t claim;          /* next file a worker takes */
  size_t cur;            /* the file being folded in */
  size_t ahead;          /* files opened past cur at most */
  int stop;
  pthread_t *threads;
  int nthreads;
  struct feed_batch *free_batches;
  struct feed_batch *batch; /* the loading thread's current batch */
  size_t pos;
};

/* Waiting and waking, with mu held; a wake with nobody waiting costs no
 * system call. */
static void wait_workers(struct nsp_an_feed *f) {
  f->workers_wait++;
  pthread_cond_wait(&f->to_workers, &f->mu);
  f->workers_wait--;
}
static void wait_loader(struct nsp_an_feed *f) {
  f->loader_waits++;
  pthread_cond_wait(&f->to_loader, &f->mu);
  f->loader_waits--;
}
static void wake_workers(struct nsp_an_feed *f) {
  if (f->workers_wait) pthread_cond_broadcast(&f->to_workers);
}
static void wake_loader(struct nsp_an_feed *f) {
  if (f->loader_waits) pthread_cond_signal(&f->to_loader);
}

/* ---- copies of decoded records ---------------------------------------- */

static void *chunk_alloc(struct feed_batch *b, size_t n) {
  n = (n + 15) & ~(size_t)15;
  struct feed_chunk *c = b->chunks;
  if (!c || c->cap - c->used < n) {
    size_t cap = n > 65536 ? n : 65536;
    c = malloc(sizeof *c + cap);
    if (!c) return NULL;
    c->next = b->chunks;
    c->used = 0;
    c->cap = cap;
    b->chunks = c;
  }
  void *p = c->data + c->used;
  c->used += n;
  return p;
}

static const char *copy_str(struct feed_batch *b, const char *s, int *oom) {
  if (!s) return NULL;
  size_t n = strlen(s) + 1;
  char *d = chunk_alloc(b, n);
  if (!d) {
    *oom = 1;
    return "";
  }
  return memcpy(d, s, n);
}

static const char *const *copy_strs(struct feed_batch *b, const char *const *v, size_t n, int *oom) {
  if (!v) return NULL;
  const char **d = chunk_alloc(b, (n ? n : 1) * sizeof *d);
  if (!d) {
    *oom = 1;
    return NULL;
  }
  for (size_t i = 0; i < n; i++) d[i] = copy_str(b, v[i], oom);
  return d;
}

/* The strings and arrays of each kind's fields, as the record schema
 * places them: a string in the record or its ext, an environment, a
 * stack.  Made from the schema, so a field added there is copied too. */
#define NSP_FCL_R(member) r->member
#define NSP_FCL_X(member) x->member
#define NSP_FCL_XENV() x
#define NSP_FCL_XFRAMES() x
#define NSP_FCL_WIRE() unused
#define NSP_FC_V(lv)
#define NSP_FC_Z(lv)
#define NSP_FC_U64(lv)
#define NSP_FC_MASK(lv)
#define NSP_FC_TDELTA(lv)
#define NSP_FC_DUR(lv)
#define NSP_FC_SEQ(lv)
#define NSP_FC_ZDELTA(lv)
#define NSP_FC_S(lv) (lv) = copy_str(b, (lv), &oom);
#define NSP_FC_ENV(lv) (lv)->env = copy_strs(b, (lv)->env, 2 * (size_t)(lv)->nenv, &oom);
#define NSP_FC_FRAMES(lv)                                                                    \
  {                                                                                          \
    uint64_t *off = chunk_alloc(b, ((lv)->nframes ? (lv)->nframes : 1) * sizeof *off);       \
    if (!off) oom = 1;                                                                       \
    else if ((lv)->frame_offset) memcpy(off, (lv)->frame_offset, (lv)->nframes * sizeof *off); \
    (lv)->frame_offset = off;                                                                \
    (lv)->frame_module = copy_strs(b, (lv)->frame_module, (lv)->nframes, &oom);              \
    (lv)->frame_symbol = copy_strs(b, (lv)->frame_symbol, (lv)->nframes, &oom);              \
  }
#define NSP_FC_A_(enc, lv) NSP_FC_##enc(lv)
#define NSP_FC_(K, name, enc, cm, pred, loc, type, unit, since, def, meaning) NSP_FC_A_(enc, NSP_FCL_##loc)

/* Copies what record r points to (its ext, strings and arrays) into
 * batch b.  0, or NSP_AN_ENOMEM. */
static int copy_rec(struct feed_batch *b, struct nsp_rec *r) {
  int oom = 0;
  struct nsp_rec_ext *x = NULL;
  if (r->ext) {
    if (!(x = chunk_alloc(b, sizeof *x))) return NSP_AN_ENOMEM;
    *x = *r->ext;
    r->ext = x;
  }
  switch (r->kind) {
#define NSP_FC_KIND_(NAME, name, value, since, has_ext, ring, names, meaning) \
  case NSP_REC_##NAME: {                                                    \
    NSP_REC_FIELDS_##NAME(NSP_FC_, NAME)                                    \
    break;                                                                  \
  }
    NSP_REC_KINDS(NSP_FC_KIND_)
#undef NSP_FC_KIND_
    default:
      break;
  }
  (void)x;
  return oom ? NSP_AN_ENOMEM : 0;
}

/* ---- workers ----------------------------------------------------------- */

static void batch_clear(struct feed_batch *b) {
  while (b->chunks) {
    struct feed_chunk *c = b->chunks;
    b->chunks = c->next;
    free(c);
  }
  b->n = 0;
  b->next = NULL;
}

/* A batch to fill: a recycled one, or a new one.  Called with mu held. */
static struct feed_batch *batch_get(struct nsp_an_feed *f) {
  struct feed_batch *b = f->free_batches;
  if (b) {
    f->free_batches = b->next;
    b->next = NULL;
    return b;
  }
  return calloc(1, sizeof *b);
}

static void batch_put(struct nsp_an_feed *f, struct feed_batch *b) {
  batch_clear(b);
  b->next = f->free_batches;
  f->free_batches = b;
}

/* Opens and decodes file i, queueing its records. */
static void work_file(struct nsp_an_feed *f, size_t i) {
  struct feed_file *ff = &f->files[i];
  char err[256] = "";
  struct nsp_reader *r = ff->item.mem ? nsp_reader_open_mem(ff->item.mem, ff->item.mem_len, err, sizeof err)
                                      : nsp_reader_open(ff->item.path, err, sizeof err);
  if (r && ff->item.start) nsp_reader_seek_frame(r, ff->item.start);
  struct nsp_an_plan *plan = r && ff->item.ix ? nsp_an_plan_make(ff->item.ix, ff->item.path, ff->item.mem,
                                                                 ff->item.mem_len)
                                              : NULL;
  if (plan) nsp_reader_set_filter(r, nsp_an_plan_want, plan);
  pthread_mutex_lock(&f->mu);
  ff->r = r;
  ff->plan = plan;
  memcpy(ff->err, err, sizeof err);
  ff->opened = 1;
  wake_loader(f);
  pthread_mutex_unlock(&f->mu);
  int more = r != NULL;
  while (more) {
    pthread_mutex_lock(&f->mu);
    while (ff->nq >= NSP_FEED_QUEUE && !ff->cancel && !f->stop) wait_workers(f);
    struct feed_batch *b = ff->cancel || f->stop ? NULL : batch_get(f);
    if (!b && !ff->cancel && !f->stop) ff->oom = 1; /* no memory for a batch: the file ends early, said */
    pthread_mutex_unlock(&f->mu);
    if (!b) break;
    /* A record whose copy found no memory ends the batch there: the
     * loading thread sees the file end early and says out of memory. */
    int oom = 0;
    while (b->n < NSP_FEED_BATCH) {
      struct nsp_rec *rec = &b->rec[b->n];
      if (nsp_reader_next(r, rec) != 1) {
        more = 0;
        break;
      }
      b->frame[b->n] = nsp_reader_record_frame(r);
      if (copy_rec(b, rec) < 0) {
        oom = 1;
        more = 0;
        break;
      }
      b->n++;
    }
    b->offset = nsp_reader_offset(r);
    pthread_mutex_lock(&f->mu);
    if (oom) ff->oom = 1;
    if (ff->tail) ff->tail->next = b;
    else ff->head = b;
    ff->tail = b;
    ff->nq++;
    wake_loader(f);
    pthread_mutex_unlock(&f->mu);
  }
  nsp_reader_release(r); /* what reading needed: only its accessors are asked now */
  pthread_mutex_lock(&f->mu);
  ff->done = 1;
  wake_loader(f);
  pthread_mutex_unlock(&f->mu);
}

static void *worker(void *arg) {
  struct nsp_an_feed *f = arg;
  pthread_mutex_lock(&f->mu);
  for (;;) {
    while (!f->stop && f->claim < f->n && f->claim >= f->cur + f->ahead)
      wait_workers(f);
    if (f->stop || f->claim >= f->n) break;
    size_t i = f->claim++;
    pthread_mutex_unlock(&f->mu);
    work_file(f, i);
    pthread_mutex_lock(&f->mu);
  }
  pthread_mutex_unlock(&f->mu);
  return NULL;
}

/* ---- the loading thread ------------------------------------------------ */

struct nsp_an_feed *nsp_an_feed_start(const struct nsp_an_feed_item *items, size_t n, int nthreads) {
  if (!items || nthreads < 2 || n < 2) return NULL;
  struct nsp_an_feed *f = calloc(1, sizeof *f);
  if (!f) return NULL;
  f->files = calloc(n ? n : 1, sizeof *f->files);
  f->threads = calloc((size_t)nthreads, sizeof *f->threads);
  if (!f->files || !f->threads || pthread_mutex_init(&f->mu, NULL)) {
    free(f->files);
    free(f->threads);
    free(f);
    return NULL;
  }
  pthread_cond_init(&f->to_loader, NULL);
  pthread_cond_init(&f->to_workers, NULL);
  for (size_t i = 0; i < n; i++) f->files[i].item = items[i];
  f->n = n;
  f->ahead = (size_t)nthreads + 2;
  for (int k = 0; k < nthreads; k++) {
    if (pthread_create(&f->threads[k], NULL, worker, f)) break;
    f->nthreads++;
  }
  if (!f->nthreads) { /* no thread at all: the caller reads alone */
    nsp_an_feed_stop(f);
    return NULL;
  }
  return f;
}

struct nsp_reader *nsp_an_feed_open(struct nsp_an_feed *f, size_t i, char *err, size_t errlen) {
  struct feed_file *ff = &f->files[i];
  pthread_mutex_lock(&f->mu);
  f->cur = i;
  wake_workers(f); /* one more file may be opened ahead */
  while (!ff->opened) wait_loader(f);
  struct nsp_reader *r = ff->r;
  ff->taken = 1;
  pthread_mutex_unlock(&f->mu);
  if (!r) snprintf(err, errlen, "%s", ff->err);
  return r;
}

struct nsp_an_plan *nsp_an_feed_plan(struct nsp_an_feed *f, size_t i) {
  struct nsp_an_plan *p = f->files[i].plan; /* set with r, before nsp_an_feed_open returned it */
  f->files[i].plan = NULL;
  return p;
}

int nsp_an_feed_next(struct nsp_an_feed *f, size_t i, const struct nsp_rec **rec, size_t *offset, size_t *frame) {
  struct feed_file *ff = &f->files[i];
  for (;;) {
    if (f->batch && f->pos < f->batch->n) {
      if (frame) *frame = f->batch->frame[f->pos];
      *rec = &f->batch->rec[f->pos++];
      *offset = f->batch->offset;
      return 1;
    }
    pthread_mutex_lock(&f->mu);
    if (f->batch) {
      batch_put(f, f->batch);
      f->batch = NULL;
    }
    while (!ff->head && !ff->done) wait_loader(f);
    struct feed_batch *b = ff->head;
    if (b) {
      ff->head = b->next;
      if (!ff->head) ff->tail = NULL;
      ff->nq--;
      wake_workers(f);
    }
    int oom = ff->oom && !ff->head && ff->done;
    pthread_mutex_unlock(&f->mu);
    if (!b) return oom ? NSP_AN_ENOMEM : 0;
    f->batch = b;
    f->pos = 0;
  }
}

/* Drops the batches queued for ff.  Called with mu held. */
static void drop_queue(struct nsp_an_feed *f, struct feed_file *ff) {
  while (ff->head) {
    struct feed_batch *b = ff->head;
    ff->head = b->next;
    batch_put(f, b);
  }
  ff->tail = NULL;
  ff->nq = 0;
}

void nsp_an_feed_close(struct nsp_an_feed *f, size_t i) {
  struct feed_file *ff = &f->files[i];
  pthread_mutex_lock(&f->mu);
  ff->cancel = 1; /* its worker stops at its next batch */
  if (f->batch) {
    batch_put(f, f->batch);
    f->batch = NULL;
  }
  drop_queue(f, ff);
  wake_workers(f);
  while (ff->r && !ff->done) {
    wait_loader(f);
    drop_queue(f, ff);
  }
  pthread_mutex_unlock(&f->mu);
}

/* ---- one trace's records, from a feed or alone ------------------------- */

struct nsp_reader *nsp_an_src_reopen(struct nsp_an_src *s, struct nsp_an_feed *feed, size_t k,
                                     const struct nsp_trace *t, size_t start, char *err, size_t errlen) {
  memset(s, 0, sizeof *s);
  s->feed = feed;
  s->item = k;
  s->r = feed ? nsp_an_feed_open(feed, k, err, errlen) : nsp_an_reopen(t, err, errlen);
  if (s->r && !feed && start) nsp_reader_seek_frame(s->r, start);
  return s->r;
}

int nsp_an_src_next(struct nsp_an_src *s, const struct nsp_rec **rec) {
  if (s->feed) return nsp_an_feed_next(s->feed, s->item, rec, &s->offset, &s->frame);
  *rec = &s->rec;
  return nsp_reader_next(s->r, &s->rec) == 1;
}

size_t nsp_an_src_offset(const struct nsp_an_src *s) { return s->feed ? s->offset : nsp_reader_offset(s->r); }

size_t nsp_an_src_frame(const struct nsp_an_src *s) { return s->feed ? s->frame : nsp_reader_record_frame(s->r); }

void nsp_an_src_done(struct nsp_an_src *s) {
  if (s->feed) nsp_an_feed_close(s->feed, s->item);
  s->feed = NULL;
  nsp_reader_set_filter(s->r, NULL, NULL);
  nsp_an_plan_free(s->plan);
  s->plan = NULL;
}

void nsp_an_src_close(struct nsp_an_src *s) {
  nsp_an_src_done(s);
  nsp_reader_destroy(s->r);
  s->r = NULL;
}

void nsp_an_feed_stop(struct nsp_an_feed *f) {
  if (!f) return;
  pthread_mutex_lock(&f->mu);
  f->stop = 1;
  wake_workers(f);
  pthread_mutex_unlock(&f->mu);
  for (int k = 0; k < f->nthreads; k++) pthread_join(f->threads[k], NULL);
  for (size_t i = 0; i < f->n; i++) {
    struct feed_file *ff = &f->files[i];
    while (ff->head) {
      struct feed_batch *b = ff->head;
      ff->head = b->next;
      batch_clear(b);
      free(b);
    }
    if (!ff->taken) nsp_reader_destroy(ff->r);
    nsp_an_plan_free(ff->plan); /* a plan not taken */
  }
  if (f->batch) {
    batch_clear(f->batch);
    free(f->batch);
  }
  while (f->free_batches) {
    struct feed_batch *b = f->free_batches;
    f->free_batches = b->next;
    batch_clear(b);
    free(b);
  }
  pthread_cond_destroy(&f->to_loader);
  pthread_cond_destroy(&f->to_workers);
  pthread_mutex_destroy(&f->mu);
  free(f->files);
  free(f->threads);
  free(f);
}
