/* nsp_an_index.c - reading what is needed: the traces' indexes
 * (common/nsp_index.h) compared across ranks before anything is decoded.
 *
 * Before a list of traces is loaded, nsp_an_index_scan reads every
 * trace's indexes (a few bytes before each data frame, read with pread
 * while the data frames are stepped over) and gathers, per communicator
 * and block of NSP_INDEX_BLOCK seqs, the digests of the collective
 * signatures its ranks made there.  A block is clean when every rank of
 * the communicator (each claimed once) left the same untainted digest
 * of the same number of collectives, and it is neither next to a block
 * that is not, nor at or after where any rank's tail begins, nor around
 * the last collective any rank made on the communicator.
 *
 * Then each trace's plan (nsp_an_plan_make, on the thread that opens
 * it) decodes: its frames that are not clean (any record but successful
 * ungrouped collectives and their completions), those holding a seq of
 * a block that is not clean, its tail (its last frames up to one with a
 * call; with a crash ring beside it, those holding its last
 * NSP_TAIL_CALLS calls or more), the frame of its last collective on
 * each communicator, and before each run of those, the frames back to
 * the run's anchor, so that the completion table a run starts with
 * (emptied at its start) ends the run as a full read's would.  Every
 * other frame is stepped over and its index's summary folded in
 * instead (nsp_an_load.c).  The rules read refs only at seqs where every
 * rank decoded its calls: a mismatch's block and its neighbours, the
 * tails, each rank's last seq and the next; elsewhere every rank agreed,
 * so the findings are those of a full read (test an-index compares the
 * reports of every case and of generated jobs with faults at random
 * places, read both ways).  A trace without indexes, or whose indexes
 * stop, is decoded in full from where they stop; `--full-read` decodes
 * everything. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nsp_an_model.h"
#include "nsp_hash.h"
#include "nsp_index.h"

/* Calls the tail of a trace with a crash ring holds at least: its
 * INFLIGHT records are told from the calls that returned by the end's
 * record of recent calls (nsp_an_end.c NSP_RECENT), which sees only
 * decoded ones. */
#define NSP_TAIL_CALLS 4096

/* A regular file opened for pread, never blocking (a FIFO named like a
 * trace is not opened here: its load says what it is); -1 otherwise. */
static int open_regular(const char *path, struct stat *st) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return -1;
  if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode)) {
    close(fd);
    return -1;
  }
  return fd;
}

struct ixblk {
  uint64_t comm_id, block, digest;
  uint32_t count;
  uint8_t differs; /* a rank's digest or count differed, or it was tainted */
  uint8_t marked;  /* a tail, a last seq, or the neighbour of a block that differs */
};

struct ixcomm {
  uint64_t comm_id;
  int32_t nranks;
  uint32_t claims;
  uint8_t *seen; /* nranks bits: ranks claimed */
  int bad;       /* a rank claimed twice, or nranks disagreed */
  uint64_t dirty_from; /* blocks from here on are not clean; UINT64_MAX none */
};

struct nsp_an_ixjob {
  struct nsp_u64map verified; /* fnv(path) -> frames the scan checked + 1: a plan reads no index past them */
  struct nsp_u64map blk_index;
  struct ixblk *blk;
  size_t nblk, blk_cap;
  struct nsp_u64map comm_index;
  struct ixcomm *cm;
  size_t ncm, cm_cap;
};

static uint64_t blk_key(uint64_t comm_id, uint64_t block) {
  return nsp_u64map_hash(comm_id ^ nsp_u64map_hash(block + 0x9e3779b97f4a7c15ull));
}

/* The block's entry, made when create; NULL when absent (or a key two
 * blocks share: then neither is clean). */
static struct ixblk *blk_of(struct nsp_an_ixjob *ix, uint64_t comm_id, uint64_t block, int create, int *oom) {
  uint64_t key = blk_key(comm_id, block);
  size_t *v = nsp_u64map_get(&ix->blk_index, key);
  if (v) {
    struct ixblk *b = &ix->blk[*v];
    if (b->comm_id == comm_id && b->block == block) return b;
    b->differs = 1; /* two blocks, one key */
    return NULL;
  }
  if (!create) return NULL;
  if (nsp_grow(&ix->blk, &ix->blk_cap, ix->nblk + 1, sizeof *ix->blk) < 0 ||
      nsp_u64map_put(&ix->blk_index, key, ix->nblk) < 0) {
    *oom = 1;
    return NULL;
  }
  struct ixblk *b = &ix->blk[ix->nblk++];
  memset(b, 0, sizeof *b);
  b->comm_id = comm_id;
  b->block = block;
  return b;
}

static struct ixcomm *comm_of(struct nsp_an_ixjob *ix, uint64_t comm_id, int create, int *oom) {
  size_t *v = nsp_u64map_get(&ix->comm_index, comm_id);
  if (v) return &ix->cm[*v];
  if (!create) return NULL;
  if (nsp_grow(&ix->cm, &ix->cm_cap, ix->ncm + 1, sizeof *ix->cm) < 0 ||
      nsp_u64map_put(&ix->comm_index, comm_id, ix->ncm) < 0) {
    *oom = 1;
    return NULL;
  }
  struct ixcomm *c = &ix->cm[ix->ncm++];
  memset(c, 0, sizeof *c);
  c->comm_id = comm_id;
  c->nranks = -1;
  c->dirty_from = UINT64_MAX;
  return c;
}

static int block_clean(const struct nsp_an_ixjob *ix, uint64_t comm_id, uint64_t block) {
  size_t *v = nsp_u64map_get(&ix->comm_index, comm_id);
  if (!v) return 0;
  const struct ixcomm *c = &ix->cm[*v];
  if (c->bad || c->nranks <= 0 || c->claims != (uint32_t)c->nranks || block >= c->dirty_from) return 0;
  v = nsp_u64map_get(&ix->blk_index, blk_key(comm_id, block));
  if (!v) return 0;
  const struct ixblk *b = &ix->blk[*v];
  return b->comm_id == comm_id && b->block == block && !b->differs && !b->marked && b->count == (uint32_t)c->nranks;
}

void nsp_an_index_free(struct nsp_an_ixjob *ix) {
  if (!ix) return;
  nsp_u64map_free(&ix->verified);
  nsp_u64map_free(&ix->blk_index);
  nsp_u64map_free(&ix->comm_index);
  for (size_t i = 0; i < ix->ncm; i++) free(ix->cm[i].seen);
  free(ix->blk);
  free(ix->cm);
  free(ix);
}

/* ---- one trace's frames, as its indexes tell ----------------------------- */

struct pframe {
  size_t off; /* the data frame's byte offset */
  struct nsp_ix_summary sum;
  uint64_t open_from, early_from, flags;
  size_t comm0, ncomm, stream0, nstream, p2p0, np2p;
  uint8_t need;
};

struct tframes {
  struct pframe *f;
  size_t n, cap;
  struct nsp_ix_comm *comm;
  size_t ncomm, comm_cap;
  struct nsp_ix_stream *stream;
  size_t nstream, stream_cap;
  struct nsp_ix_p2p *p2p;
  size_t np2p, p2p_cap;
  /* the scan's: comm ids by comm index, as the idents so far say */
  uint64_t *local_id;
  uint8_t *local_claimed; /* the scan: the comm index's communicator has claimed its rank */
  size_t nlocal;
  int rebound;             /* a comm index named two communicators */
  struct nsp_an_ixjob *ix; /* the scan's, or NULL */
  int ring;                /* "<trace>.ring" exists: its INFLIGHT records want the recent calls decoded */
  int oom;
};

static void tframes_free(struct tframes *tf) {
  free(tf->f);
  free(tf->comm);
  free(tf->stream);
  free(tf->p2p);
  free(tf->local_id);
  free(tf->local_claimed);
  memset(tf, 0, sizeof *tf);
}

static int local_set(struct tframes *tf, uint32_t local, uint64_t id) {
  if (local >= tf->nlocal) {
    if (local > (1u << 20)) return 0;
    size_t old = tf->nlocal, cap = tf->nlocal;
    if (nsp_grow(&tf->local_id, &tf->nlocal, (size_t)local + 1, sizeof *tf->local_id) < 0 ||
        nsp_grow(&tf->local_claimed, &cap, tf->nlocal, sizeof *tf->local_claimed) < 0)
      return -1;
    memset(tf->local_id + old, 0, (tf->nlocal - old) * sizeof *tf->local_id);
    memset(tf->local_claimed + old, 0, (tf->nlocal - old) * sizeof *tf->local_claimed);
  }
  tf->local_id[local] = id;
  return 0;
}

static uint64_t local_id(const struct tframes *tf, uint32_t local) {
  return local < tf->nlocal ? tf->local_id[local] : 0;
}

/* Claims a rank of comm id for this trace (once per comm index and id). */
static void claim(struct tframes *tf, const struct nsp_ix_ident *d) {
  int oom = 0;
  struct ixcomm *c = comm_of(tf->ix, d->comm_id, 1, &oom);
  if (!c) {
    tf->oom |= oom;
    return;
  }
  if (d->rank >= d->nranks || (c->nranks > 0 && c->nranks != d->nranks)) {
    c->bad = 1;
    return;
  }
  if (!c->seen) {
    c->nranks = d->nranks;
    if (!(c->seen = calloc(((size_t)d->nranks + 7) / 8, 1))) {
      tf->oom = 1;
      return;
    }
  }
  if (c->seen[d->rank / 8] >> (d->rank % 8) & 1) {
    c->bad = 1;
    return;
  }
  c->seen[d->rank / 8] |= (uint8_t)(1u << (d->rank % 8));
  c->claims++;
}

/* Comm indexes past this are from no writer (nsp_index.c refuses them):
 * such an index is not believed. */
#define NSP_IX_LOCAL_MAX (1u << 20)

static int locals_ok(const struct nsp_frame_index *x) {
  for (size_t i = 0; i < x->ncomm; i++)
    if (x->comm[i].local > NSP_IX_LOCAL_MAX) return 0;
  for (size_t i = 0; i < x->nblock; i++)
    if (x->block[i].local > NSP_IX_LOCAL_MAX) return 0;
  for (size_t i = 0; i < x->nident; i++)
    if (x->ident[i].local > NSP_IX_LOCAL_MAX) return 0;
  for (size_t i = 0; i < x->np2p; i++)
    if (x->p2p[i].local > NSP_IX_LOCAL_MAX) return 0;
  return 1;
}

static int on_index(void *ctx, const struct nsp_frame_index *x, size_t data_off) {
  struct tframes *tf = ctx;
  if (!locals_ok(x)) return 1; /* indexes stop here */
  if (nsp_grow(&tf->f, &tf->cap, tf->n + 1, sizeof *tf->f) < 0 ||
      nsp_grow(&tf->comm, &tf->comm_cap, tf->ncomm + x->ncomm, sizeof *tf->comm) < 0 ||
      nsp_grow(&tf->stream, &tf->stream_cap, tf->nstream + x->nstream, sizeof *tf->stream) < 0 ||
      nsp_grow(&tf->p2p, &tf->p2p_cap, tf->np2p + x->np2p, sizeof *tf->p2p) < 0) {
    tf->oom = 1;
    return 1;
  }
  struct pframe *p = &tf->f[tf->n++];
  memset(p, 0, sizeof *p);
  p->off = data_off;
  p->sum = x->sum;
  p->open_from = x->open_from;
  p->early_from = x->early_from;
  p->flags = x->flags;
  p->comm0 = tf->ncomm;
  p->ncomm = x->ncomm;
  if (x->ncomm) memcpy(tf->comm + tf->ncomm, x->comm, x->ncomm * sizeof *x->comm);
  tf->ncomm += x->ncomm;
  p->stream0 = tf->nstream;
  p->nstream = x->nstream;
  if (x->nstream) memcpy(tf->stream + tf->nstream, x->stream, x->nstream * sizeof *x->stream);
  tf->nstream += x->nstream;
  p->p2p0 = tf->np2p;
  p->np2p = x->np2p;
  if (x->np2p) memcpy(tf->p2p + tf->np2p, x->p2p, x->np2p * sizeof *x->p2p);
  tf->np2p += x->np2p;
  /* The trace's comm ids (and, scanning, the ranks it claims). */
  for (size_t i = 0; i < x->nident; i++) {
    const struct nsp_ix_ident *d = &x->ident[i];
    uint64_t was = local_id(tf, d->local);
    if (was != d->comm_id) {
      if (local_set(tf, d->local, d->comm_id) < 0) {
        tf->oom = 1;
        return 1;
      }
      tf->local_claimed[d->local] = 0;
      /* A comm index that names a second communicator: neither is compared
       * (its blocks and frames are charged by comm index). */
      int oom = 0;
      struct ixcomm *a = was && tf->ix ? comm_of(tf->ix, was, 1, &oom) : NULL, *b = NULL;
      if (was && tf->ix) b = comm_of(tf->ix, d->comm_id, 1, &oom);
      if (a) a->bad = 1;
      if (b) b->bad = 1;
      tf->oom |= oom;
      if (was) tf->rebound = 1;
    }
    /* A pending init or split (rank -1) claims nothing yet: its settled
     * COMM record does. */
    if (tf->ix && d->rank >= 0 && d->nranks > 0 && !tf->local_claimed[d->local]) {
      claim(tf, d);
      tf->local_claimed[d->local] = 1;
    }
  }
  if (!tf->ix) return 0;
  for (size_t i = 0; i < x->nblock; i++) {
    const struct nsp_ix_block *k = &x->block[i];
    uint64_t id = local_id(tf, k->local);
    if (!id) continue;
    int oom = 0;
    struct ixblk *b = blk_of(tf->ix, id, k->block, 1, &oom);
    if (oom) {
      tf->oom = 1;
      return 1;
    }
    if (!b) continue;
    if (!b->count) b->digest = k->digest;
    else if (b->digest != k->digest) b->differs = 1;
    if (k->tainted || k->n != (k->block ? NSP_INDEX_BLOCK : NSP_INDEX_BLOCK - 1)) b->differs = 1;
    b->count++;
  }
  return tf->oom;
}

/* Whether the trace has a crash ring beside it (nsp_reader_open reads
 * "<path>.ring"; a trace in memory has none). */
static int has_ring(const char *path, const uint8_t *mem) {
  if (mem || !path) return 0;
  size_t n = strlen(path);
  char *rp = malloc(n + 6);
  if (!rp) return 1;
  memcpy(rp, path, n);
  memcpy(rp + n, ".ring", 6);
  struct stat st;
  int r = lstat(rp, &st) == 0;
  free(rp);
  return r;
}

/* Reads path's (or mem's) indexes into tf.  Returns 1 when every frame
 * had one, 0 when they stop before the end (or there are none), -1 out
 * of memory. */
static int read_frames(struct tframes *tf, const char *path, const uint8_t *mem, size_t len, int verify,
                       size_t max_frames) {
  struct nsp_frame_index scratch;
  memset(&scratch, 0, sizeof scratch);
  tf->ring = has_ring(path, mem);
  size_t end;
  if (mem) {
    end = len >= NSP_HEADER_SIZE
              ? nsp_index_walk_mem(mem, len, NSP_HEADER_SIZE, verify, max_frames, &scratch, on_index, tf)
              : 0;
  } else {
    struct stat st;
    int fd = open_regular(path, &st);
    if (fd < 0 || (size_t)st.st_size < NSP_HEADER_SIZE) {
      if (fd >= 0) close(fd);
      nsp_frame_index_free(&scratch);
      return 0;
    }
    /* The header says where frames start. */
    uint8_t h[16];
    size_t first = NSP_HEADER_SIZE;
    if (pread(fd, h, sizeof h, 0) == (ssize_t)sizeof h) {
      uint32_t hs = h[12] | (uint32_t)h[13] << 8 | (uint32_t)h[14] << 16 | (uint32_t)h[15] << 24;
      if (hs >= 112 && hs <= (uint64_t)st.st_size) first = hs;
    }
    len = (size_t)st.st_size;
    end = nsp_index_walk(fd, len, first, verify, max_frames, &scratch, on_index, tf);
    close(fd);
  }
  nsp_frame_index_free(&scratch);
  if (tf->oom) return -1;
  return tf->n && end == len;
}

/* Which frames are decoded: need[] set on entry for the frames wanted,
 * and on return for every frame decoded; a run of decoded frames starts
 * where its completion table can start empty. */
static void anchor_runs(struct tframes *tf) {
  size_t k = tf->n;
  while (k > 0) {
    if (!tf->f[k - 1].need) {
      k--;
      continue;
    }
    size_t e = k - 1, s = e;
    while (s > 0 && tf->f[s - 1].need) s--;
    /* a: where the run must start.  Each frame's early_from is read once. */
    uint64_t a = tf->f[e].open_from < s ? tf->f[e].open_from : s;
    size_t scanned = e + 1; /* frames [scanned, e] read */
    for (;;) {
      size_t from = a < s ? (size_t)a : s;
      for (size_t x = from; x < scanned; x++) {
        if (tf->f[x].early_from < a) a = tf->f[x].early_from;
        if (tf->f[x].flags & NSP_IX_NO_ANCHOR) a = 0;
      }
      scanned = from;
      if (a < s) {
        while (s > a) tf->f[--s].need = 1;
        while (s > 0 && tf->f[s - 1].need) s--;
      }
      if (scanned <= s && a >= s) break;
    }
    k = s;
  }
}

/* hi[l]: the greatest seq of comm index l's collectives in tf (0 none);
 * *n entries, malloc'ed; NULL out of memory. */
static uint64_t *last_seqs(const struct tframes *tf, size_t *n) {
  size_t m = 0;
  for (size_t i = 0; i < tf->ncomm; i++)
    if (tf->comm[i].ncoll && tf->comm[i].local >= m) m = (size_t)tf->comm[i].local + 1;
  uint64_t *hi = calloc(m ? m : 1, sizeof *hi);
  if (!hi) return NULL;
  for (size_t i = 0; i < tf->ncomm; i++)
    if (tf->comm[i].ncoll && tf->comm[i].hi > hi[tf->comm[i].local]) hi[tf->comm[i].local] = tf->comm[i].hi;
  *n = m;
  return hi;
}

/* The frames a trace decodes whatever the other ranks did: not clean,
 * its tail (its last frame; with a crash ring, whose calls in flight are
 * told from the last NSP_TAIL_CALLS calls, the frames of those), its last
 * collective on each communicator.  0, -1 out of memory. */
static int need_own(struct tframes *tf) {
  uint64_t calls = 0, tail = tf->ring ? NSP_TAIL_CALLS : 1;
  for (size_t k = tf->n; k-- > 0;) {
    struct pframe *p = &tf->f[k];
    if (!(p->flags & NSP_IX_CLEAN)) p->need = 1;
    if (calls < tail) p->need = 1;
    calls += p->sum.calls;
  }
  size_t m;
  uint64_t *hi = last_seqs(tf, &m);
  if (!hi) return -1;
  for (size_t k = 0; k < tf->n; k++) {
    struct pframe *p = &tf->f[k];
    for (size_t i = 0; i < p->ncomm; i++) {
      const struct nsp_ix_comm *c = &tf->comm[p->comm0 + i];
      if (c->ncoll && c->hi == hi[c->local]) p->need = 1;
    }
  }
  free(hi);
  return 0;
}

static void mark_range(struct tframes *tf, uint64_t id, uint64_t lo, uint64_t hi) {
  uint64_t b0 = lo / NSP_INDEX_BLOCK, b1 = (hi + 1) / NSP_INDEX_BLOCK + 1;
  if (b0) b0--;
  for (uint64_t b = b0; b <= b1; b++) {
    int oom = 0;
    struct ixblk *x = blk_of(tf->ix, id, b, 1, &oom);
    if (x) x->marked = 1;
    tf->oom |= oom;
  }
}

/* The scan's marks of one trace: from where its tail begins, each
 * communicator's blocks; around its last collective on each. */
static void scan_marks(struct tframes *tf, int whole) {
  int oom = 0;
  size_t m;
  uint64_t *hi = last_seqs(tf, &m);
  if (!hi) {
    tf->oom = 1;
    return;
  }
  for (size_t l = 0; l < tf->nlocal; l++) {
    uint64_t id = tf->local_id[l], h = l < m ? hi[l] : 0;
    if (!id) continue;
    if (!whole) { /* frames without an index follow: their seqs are unknown */
      struct ixcomm *c = comm_of(tf->ix, id, 1, &oom);
      uint64_t b = h / NSP_INDEX_BLOCK;
      if (c && (b ? b - 1 : 0) < c->dirty_from) c->dirty_from = b ? b - 1 : 0;
    }
    if (h) mark_range(tf, id, h, h); /* around its last collective */
  }
  free(hi);
  tf->oom |= oom;
  if (tf->oom || need_own(tf) < 0) {
    tf->oom = 1;
    return;
  }
  /* The tail: the last run, anchored; from its first seq on, each
   * communicator's blocks are read by every rank. */
  size_t s = tf->n;
  while (s > 0 && tf->f[s - 1].need) s--;
  for (size_t k = 0; k < tf->n; k++) tf->f[k].need = k >= s;
  anchor_runs(tf);
  while (s > 0 && tf->f[s - 1].need) s--;
  for (size_t k = s; k < tf->n; k++) {
    const struct pframe *p = &tf->f[k];
    for (size_t i = 0; i < p->ncomm; i++) {
      const struct nsp_ix_comm *c = &tf->comm[p->comm0 + i];
      uint64_t id = local_id(tf, c->local);
      if (!id || !c->ncoll) continue;
      struct ixcomm *cm = comm_of(tf->ix, id, 1, &oom);
      uint64_t b = c->lo / NSP_INDEX_BLOCK;
      if (cm && (b ? b - 1 : 0) < cm->dirty_from) cm->dirty_from = b ? b - 1 : 0;
    }
  }
  tf->oom |= oom;
}

/* The process a trace's header names (host, pid, clock pair: as the
 * loader tells copies apart, nsp_an_load.c process_key); 0 when the
 * header is not one nsp_reader_open accepts (the loader will not read
 * the file: it claims no rank). */
static uint64_t process_of(const char *path, const uint8_t *mem, size_t len) {
  uint8_t h[112];
  if (mem) {
    if (len < sizeof h) return 0;
    memcpy(h, mem, sizeof h);
  } else {
    struct stat st;
    int fd = open_regular(path, &st);
    ssize_t got = fd >= 0 ? pread(fd, h, sizeof h, 0) : -1;
    if (fd >= 0) close(fd);
    if (got != (ssize_t)sizeof h) return 0;
    len = (size_t)st.st_size;
  }
  uint32_t major = h[8] | (uint32_t)h[9] << 8;
  uint32_t hsize = h[12] | (uint32_t)h[13] << 8 | (uint32_t)h[14] << 16 | (uint32_t)h[15] << 24;
  if (memcmp(h, NSP_MAGIC, 8) || major != NSP_FORMAT_MAJOR || hsize < 112 || hsize > len) return 0;
  uint64_t k = nsp_fnv1a(NSP_FNV_INIT, h + 48, strnlen((const char *)h + 48, NSP_HOST_MAX));
  k = nsp_fnv1a(k, h + 32, 4); /* pid */
  k = nsp_fnv1a(k, h + 16, 16); /* realtime_ns, monotonic_ns */
  return k ? k : 1;
}

static uint64_t path_key(const char *path) { return nsp_fnv1a(NSP_FNV_INIT, path, strlen(path)); }

int nsp_an_index_scan(struct nsp_job *job, size_t n, const char *const *paths, uint8_t **mems, const size_t *lens) {
  nsp_an_index_free(job->ix);
  job->ix = NULL;
  if (job->full_read || n < 2) return 0;
  struct nsp_an_ixjob *ix = calloc(1, sizeof *ix);
  if (!ix) return NSP_AN_ENOMEM;
  int any = 0;
  /* A copy of a trace read before is not read (nsp_an_load.c): nor are
   * its claims counted.  The processes of traces already in the job are
   * not known here; their communicators' ranks come up short, so no block
   * of them is clean. */
  struct nsp_u64map procs;
  memset(&procs, 0, sizeof procs);
  for (size_t k = 0; k < n; k++) {
    uint64_t who = process_of(paths[k], mems ? mems[k] : NULL, lens ? lens[k] : 0);
    /* Not a trace the loader reads, or a copy (a hash two processes share:
     * counted short, so not clean): no claims, and no plan. */
    if (!who || nsp_u64map_get(&procs, who)) continue;
    if (nsp_u64map_put(&procs, who, k) < 0) {
      nsp_u64map_free(&procs);
      nsp_an_index_free(ix);
      return NSP_AN_ENOMEM;
    }
    struct tframes tf;
    memset(&tf, 0, sizeof tf);
    tf.ix = ix;
    /* Every data frame's bytes are checked against its index: indexes
     * stop at one that differs (damage a full read would see), and a
     * plan reads no index past where the scan stopped. */
    int whole = read_frames(&tf, paths[k], mems ? mems[k] : NULL, lens ? lens[k] : 0, 1, SIZE_MAX);
    if (whole >= 0 && tf.n) {
      any = 1;
      scan_marks(&tf, whole);
    }
    int oom = whole < 0 || tf.oom || nsp_u64map_put(&ix->verified, path_key(paths[k]), tf.n + 1) < 0;
    tframes_free(&tf);
    if (oom) {
      nsp_u64map_free(&procs);
      nsp_an_index_free(ix);
      return NSP_AN_ENOMEM;
    }
  }
  nsp_u64map_free(&procs);
  /* The neighbours of blocks that differ: a mismatch's rules read refs a
   * few seqs either side of it. */
  size_t nb = ix->nblk;
  for (size_t i = 0; i < nb; i++) {
    struct ixblk b = ix->blk[i];
    size_t *v = nsp_u64map_get(&ix->comm_index, b.comm_id);
    int short_of = v && ix->cm[*v].nranks > 0 && b.count != (uint32_t)ix->cm[*v].nranks;
    if (!b.differs && !short_of) continue;
    int oom = 0;
    for (int d = -1; d <= 1; d += 2) {
      if (d < 0 && !b.block) continue;
      struct ixblk *x = blk_of(ix, b.comm_id, b.block + (uint64_t)(int64_t)d, 1, &oom);
      if (x) x->marked = 1;
    }
    if (oom) {
      nsp_an_index_free(ix);
      return NSP_AN_ENOMEM;
    }
  }
  if (!any) {
    nsp_an_index_free(ix);
    return 0;
  }
  job->ix = ix;
  return 0;
}

/* ---- a trace's plan ------------------------------------------------------ */

void nsp_an_plan_free(struct nsp_an_plan *p) {
  if (!p) return;
  free(p->f);
  free(p->comm);
  free(p->stream);
  free(p->p2p);
  free(p);
}

struct nsp_an_plan *nsp_an_plan_make(const struct nsp_an_ixjob *ix, const char *path, const uint8_t *mem,
                                     size_t len) {
  if (!ix || !path) return NULL;
  const size_t *checked = nsp_u64map_get(&ix->verified, path_key(path));
  if (!checked || *checked < 2) return NULL; /* not scanned (a copy, not a trace) or no index */
  struct tframes tf;
  memset(&tf, 0, sizeof tf);
  int whole = read_frames(&tf, path, mem, len, 0, *checked - 1);
  if (whole < 0 || !tf.n || tf.rebound) { /* (a comm index's frames are charged to its last communicator) */
    tframes_free(&tf);
    return NULL;
  }
  /* A frame is decoded when the trace needs it, or when it holds a seq
   * of a block that is not clean (comm ids by comm index as the last
   * idents say: a comm index that named two communicators is never
   * clean, its calls are in frames that are not). */
  if (need_own(&tf) < 0) {
    tframes_free(&tf);
    return NULL;
  }
  for (size_t k = 0; k < tf.n; k++) {
    struct pframe *p = &tf.f[k];
    if (p->need) continue;
    for (size_t i = 0; i < p->ncomm && !p->need; i++) {
      const struct nsp_ix_comm *c = &tf.comm[p->comm0 + i];
      uint64_t id = local_id(&tf, c->local);
      if (!c->ncoll) continue;
      if (!id) {
        p->need = 1;
        break;
      }
      for (uint64_t b = c->lo / NSP_INDEX_BLOCK; b <= c->hi / NSP_INDEX_BLOCK && !p->need; b++)
        if (!block_clean(ix, id, b)) p->need = 1;
    }
  }
  anchor_runs(&tf);
  size_t skipped = 0;
  for (size_t k = 0; k < tf.n; k++) skipped += !tf.f[k].need;
  if (!skipped) {
    tframes_free(&tf);
    return NULL;
  }
  struct nsp_an_plan *p = calloc(1, sizeof *p);
  if (!p || !(p->f = calloc(tf.n, sizeof *p->f))) {
    free(p);
    tframes_free(&tf);
    return NULL;
  }
  p->n = tf.n;
  for (size_t k = 0; k < tf.n; k++) {
    const struct pframe *q = &tf.f[k];
    struct nsp_an_pframe *o = &p->f[k];
    o->off = q->off;
    o->decode = q->need;
    o->run_start = q->need && k > 0 && !tf.f[k - 1].need;
    o->sum = q->sum;
    o->comm0 = q->comm0;
    o->ncomm = q->ncomm;
    o->stream0 = q->stream0;
    o->nstream = q->nstream;
    o->p2p0 = q->p2p0;
    o->np2p = q->np2p;
  }
  p->comm = tf.comm;
  p->ncomm = tf.ncomm;
  p->stream = tf.stream;
  p->nstream = tf.nstream;
  p->p2p = tf.p2p;
  p->np2p = tf.np2p;
  tf.comm = NULL;
  tf.stream = NULL;
  tf.p2p = NULL;
  tframes_free(&tf);
  return p;
}

int nsp_an_plan_want(void *ctx, size_t off) {
  const struct nsp_an_plan *p = ctx;
  size_t lo = 0, hi = p->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (p->f[mid].off < off) lo = mid + 1;
    else hi = mid;
  }
  return lo == p->n || p->f[lo].off != off || p->f[lo].decode;
}
