/* nsp_reader.c - header check, zstd frame walk, record decode.
 *
 * Damage in the middle of a file (a frame that does not decompress, a
 * malformed record) costs the frame it is in: reading goes on at the next
 * zstd frame magic, since every frame is self-contained.  Work and memory
 * stay bounded whatever the file claims: no allocation is sized by a
 * length read from the file, a frame's output is capped at NSP_MAX_FRAME,
 * zstd's window at the same, and a file's total output at NSP_MAX_RATIO
 * times its size plus 1 MiB (decompression bombs). */
#include "nsp_reader.h"
#include "nsp_ringread.h"
#include "nsp_io.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>
#include <zstd_errors.h>

struct nsp_reader {
  const uint8_t *data;
  size_t len;
  size_t map_len; /* nonzero when data is our mmap */
  size_t off;     /* next frame's byte offset in the file */
  struct nsp_file_header hdr;
  ZSTD_DCtx *dctx;
  int (*want)(void *ctx, size_t off); /* nsp_reader_set_filter */
  void *want_ctx;
  struct nsp_buf frame; /* the current frame, decompressed; its cap grows as
                           if from 0 whatever frame_alloc is */
  size_t frame_alloc;   /* bytes allocated at frame.data (>= frame.cap) */
  const uint8_t *p;     /* next record in frame */
  size_t frame_off;     /* file offset of the current frame */
  struct nsp_codec codec;
  struct nsp_dec_store store;
  uint64_t frames;
  uint64_t out_total;  /* bytes decompressed so far, damaged frames included */
  unsigned damaged;    /* damaged regions skipped */
  size_t skipped;      /* bytes skipped over them */
  size_t resume;       /* where reading went on after the last damage */
  size_t first_damage; /* byte offset of the first damaged region */
  int done;
  char problem[320];
  /* Recovery from "<path>.ring" after the last frame (nsp_ringread.h). */
  struct nsp_ringread *ring;
  uint64_t ring_end;        /* largest RINGPOS end read */
  uint64_t dropped_seen[NSP_DROP_SLOTS]; /* DROPPED counts read, by reason */
  char ring_note[160];
  uint64_t from_ring; /* records returned from the ring */
  int last_from_ring; /* the last record returned came from the ring */
  uint8_t *buf;       /* data, when the file was read whole (load_file) */
  size_t buf_alloc;
};

/* zstd's frame magic, 0xFD2FB528 little-endian. */
static const uint8_t zstd_magic[4] = {0x28, 0xb5, 0x2f, 0xfd};
/* Damaged regions skipped before the reader gives up on a file. */
#define NSP_MAX_DAMAGE 64
/* A file may decompress to 1 MiB (a shim frame) plus this many times its
 * bytes read so far; shim traces decompress to about 3 times their size. */
#define NSP_MAX_RATIO 1024
/* log2(NSP_MAX_FRAME): no frame needs a larger zstd window. */
#define NSP_MAX_WINDOW_LOG 26

/* ---- per-thread reuse of the zstd context and the frame buffer ---------
 *
 * A zstd decompression context (about 160 KiB, plus the window it
 * allocates at its first frame) and the frame buffer (up to NSP_MAX_FRAME)
 * cost more to make than a small trace costs to read.  A reader destroyed
 * leaves them to the next reader opened on the same thread: one of each
 * per thread, kept in thread-local storage (no lock, no state shared
 * between threads) and freed when the thread exits (a pthread key's
 * destructor; the main thread's are freed by the process's end).  A
 * reused context is reset with its parameters, so a reader works exactly
 * as with a new one. */
struct reader_cache {
  ZSTD_DCtx *dctx;
  uint8_t *frame; /* a frame buffer of frame_alloc bytes */
  size_t frame_alloc;
  uint8_t *file;  /* a whole file's buffer of file_alloc bytes */
  size_t file_alloc;
};
/* Files up to this size are read into a buffer (the thread's, reused)
 * rather than mapped: unmapping a file in a process with several threads
 * interrupts every core they ran on to flush its TLB, once per file. */
#define NSP_READ_WHOLE_MAX (4u << 20)
/* A larger frame buffer (a hostile or odd file's) is not kept. */
#define NSP_CACHE_FRAME_MAX (4u << 20)
static __thread struct reader_cache *tls_cache;
static pthread_key_t cache_key;
static pthread_once_t cache_once = PTHREAD_ONCE_INIT;
static int cache_key_ok;

static void cache_free(void *p) {
  struct reader_cache *c = p;
  if (!c) return;
  if (tls_cache == c) tls_cache = NULL; /* runs on the exiting thread */
  ZSTD_freeDCtx(c->dctx);
  free(c->frame);
  free(c->file);
  free(c);
}
static void cache_key_make(void) { cache_key_ok = pthread_key_create(&cache_key, cache_free) == 0; }

/* This thread's cache, made at first use; NULL when out of memory. */
static struct reader_cache *cache_get(void) {
  if (tls_cache) return tls_cache;
  pthread_once(&cache_once, cache_key_make);
  if (!cache_key_ok) return NULL; /* no destructor: no cache, nothing leaks */
  struct reader_cache *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  if (pthread_setspecific(cache_key, c) != 0) {
    free(c);
    return NULL;
  }
  return tls_cache = c;
}

/* A context with windowLogMax set: this thread's cached one, or a new
 * one.  NULL when out of memory. */
static ZSTD_DCtx *dctx_take(void) {
  struct reader_cache *c = tls_cache;
  ZSTD_DCtx *d = c ? c->dctx : NULL;
  if (d) {
    c->dctx = NULL;
    ZSTD_DCtx_reset(d, ZSTD_reset_session_and_parameters);
  } else if (!(d = ZSTD_createDCtx())) {
    return NULL;
  }
  /* A frame header may claim a window of up to 2 GiB, which zstd would
   * allocate before reading a byte of it. */
  ZSTD_DCtx_setParameter(d, ZSTD_d_windowLogMax, NSP_MAX_WINDOW_LOG);
  return d;
}

/* Gives a reader's context and frame buffer (alloc bytes) to this
 * thread's cache, or frees them when it holds some already. */
static void cache_put(ZSTD_DCtx *d, uint8_t *frame, size_t alloc) {
  struct reader_cache *c = cache_get();
  if (c && d && !c->dctx) {
    c->dctx = d;
    d = NULL;
  }
  if (c && frame && !c->frame && alloc <= NSP_CACHE_FRAME_MAX) {
    c->frame = frame;
    c->frame_alloc = alloc;
    frame = NULL;
  }
  ZSTD_freeDCtx(d);
  free(frame);
}

/* The cached frame buffer, if any, becomes the reader's (its frame.cap
 * stays 0: only frame_alloc says what is there). */
static void frame_take(struct nsp_reader *r) {
  struct reader_cache *c = tls_cache;
  if (!c || !c->frame) return;
  r->frame.data = c->frame;
  r->frame_alloc = c->frame_alloc;
  c->frame = NULL;
  c->frame_alloc = 0;
}

static uint64_t le64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}
static uint32_t le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static struct nsp_reader *open_common(struct nsp_reader *r, char *err, size_t errlen) {
  const uint8_t *d = r->data;
  /* A file that starts as a trace does but ends early is a trace cut
   * short: said with the sizes, not as "not a trace". */
  size_t magic_len = r->len < 8 ? r->len : 8;
  int magic = r->len > 0 && !memcmp(d, NSP_MAGIC, magic_len);
  if (r->len < 112 || !magic) {
    if (r->len < 112 && magic)
      snprintf(err, errlen, "truncated header: %zu of at least 112 bytes", r->len);
    else if (r->len < 112)
      snprintf(err, errlen, "not an ncclspy trace (shorter than its header): %zu bytes", r->len);
    else
      snprintf(err, errlen, "not an ncclspy trace (bad magic) at byte 0");
    return NULL;
  }
  struct nsp_file_header *h = &r->hdr;
  memcpy(h->magic, d, 8);
  h->major = (uint16_t)(d[8] | d[9] << 8);
  h->minor = (uint16_t)(d[10] | d[11] << 8);
  h->header_size = le32(d + 12);
  h->realtime_ns = le64(d + 16);
  h->monotonic_ns = le64(d + 24);
  h->pid = le32(d + 32);
  h->nccl_version = (int32_t)le32(d + 36);
  h->flags = le32(d + 40);
  memcpy(h->host, d + 48, NSP_HOST_MAX);
  h->host[NSP_HOST_MAX - 1] = 0;
  if (h->major != NSP_FORMAT_MAJOR) {
    snprintf(err, errlen, "trace format %u.%u (byte 8), this reader knows %d.x", h->major, h->minor,
             NSP_FORMAT_MAJOR);
    return NULL;
  }
  if (h->header_size >= 112 && h->header_size > r->len) {
    snprintf(err, errlen, "truncated header: %zu of %u bytes", r->len, h->header_size);
    return NULL;
  }
  if (h->header_size < 112) {
    snprintf(err, errlen, "bad header size %u at byte 12", h->header_size);
    return NULL;
  }
  r->off = h->header_size;
  r->dctx = dctx_take();
  if (!r->dctx) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  frame_take(r);
  return r;
}

struct nsp_reader *nsp_reader_open_mem(const uint8_t *data, size_t len, char *err, size_t errlen) {
  struct nsp_reader *r = calloc(1, sizeof *r);
  if (!r) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  r->data = data;
  r->len = len;
  if (!open_common(r, err, errlen)) {
    nsp_reader_destroy(r);
    return NULL;
  }
  return r;
}

/* A buffer of at least n bytes for a whole file: this thread's cached one
 * (*alloc its size), or a new one.  NULL when out of memory. */
static uint8_t *file_take(size_t n, size_t *alloc) {
  struct reader_cache *c = tls_cache;
  if (c && c->file && c->file_alloc >= n) {
    uint8_t *b = c->file;
    *alloc = c->file_alloc;
    c->file = NULL;
    c->file_alloc = 0;
    return b;
  }
  *alloc = n ? n : 1;
  return malloc(*alloc);
}

/* Gives a whole file's buffer to this thread's cache (a larger one than
 * it holds replaces it), or frees it. */
static void file_put(uint8_t *b, size_t alloc) {
  struct reader_cache *c = b ? cache_get() : NULL;
  if (c && (!c->file || c->file_alloc < alloc)) {
    free(c->file);
    c->file = b;
    c->file_alloc = alloc;
    return;
  }
  free(b);
}

/* Reads the regular file at path whole into a buffer when it is at most
 * NSP_READ_WHOLE_MAX bytes (*buf, *alloc set), else maps it (*buf NULL).
 * 0, or what nsp_map_regular returns on failure. */
static int load_file(const char *path, const void **data, size_t *len, uint8_t **buf, size_t *alloc) {
  *buf = NULL;
  struct stat st;
  int fd = nsp_open_regular(path, 0, &st);
  if (fd < 0) return fd;
  if (st.st_size <= 0 || (uint64_t)st.st_size > NSP_READ_WHOLE_MAX) {
    close(fd);
    return nsp_map_regular(path, 0, data, len);
  }
  size_t want = (size_t)st.st_size, got = 0;
  uint8_t *b = file_take(want, alloc);
  if (!b) {
    close(fd);
    errno = ENOMEM;
    return -1;
  }
  while (got < want) { /* a file that shrank meanwhile is read as it is now */
    ssize_t n = pread(fd, b + got, want - got, (off_t)got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += (size_t)n;
  }
  close(fd);
  *buf = b;
  *data = b;
  *len = got;
  return 0;
}

struct nsp_reader *nsp_reader_open(const char *path, char *err, size_t errlen) {
  const void *m;
  size_t len, alloc = 0;
  uint8_t *buf;
  int rc = load_file(path, &m, &len, &buf, &alloc);
  if (rc < 0) {
    if (rc == -2) snprintf(err, errlen, "not a regular file");
    else snprintf(err, errlen, "cannot open: %s", strerror(errno));
    return NULL;
  }
  struct nsp_reader *r = calloc(1, sizeof *r);
  if (!r) {
    if (buf) file_put(buf, alloc);
    else if (m) munmap((void *)m, len);
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  r->data = m;
  r->len = len;
  r->map_len = buf ? 0 : len;
  r->buf = buf;
  r->buf_alloc = alloc;
  if (!open_common(r, err, errlen)) {
    nsp_reader_destroy(r);
    return NULL;
  }
  r->ring = nsp_ringread_open(path, &r->hdr, r->ring_note, sizeof r->ring_note);
  return r;
}

uint64_t nsp_reader_recovered(const struct nsp_reader *r) { return nsp_ringread_recovered(r->ring); }
uint64_t nsp_reader_unrecovered(const struct nsp_reader *r) { return nsp_ringread_lost(r->ring); }
uint64_t nsp_reader_from_ring(const struct nsp_reader *r) { return r->from_ring; }
const char *nsp_reader_ring_note(const struct nsp_reader *r) { return r->ring_note[0] ? r->ring_note : NULL; }

const struct nsp_file_header *nsp_reader_header(const struct nsp_reader *r) { return &r->hdr; }
const char *nsp_reader_problem(const struct nsp_reader *r) { return r->problem[0] ? r->problem : NULL; }

unsigned nsp_reader_damage(const struct nsp_reader *r, size_t *first_at, size_t *skipped) {
  *first_at = r->damaged ? r->first_damage : 0;
  *skipped = r->skipped;
  return r->damaged;
}
uint64_t nsp_reader_frames(const struct nsp_reader *r) { return r->frames; }
size_t nsp_reader_size(const struct nsp_reader *r) { return r->len; }
size_t nsp_reader_offset(const struct nsp_reader *r) { return r->off < r->len ? r->off : r->len; }

/* Appends to the problem sentence (the first damage's, plus a summary). */
static void problem_cat(struct nsp_reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void problem_cat(struct nsp_reader *r, const char *fmt, ...) {
  size_t used = strlen(r->problem);
  if (used + 1 >= sizeof r->problem) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->problem + used, sizeof r->problem - used, fmt, ap);
  va_end(ap);
}

/* Byte offset of the next zstd frame magic after `from`; r->len when none. */
static size_t next_magic(const struct nsp_reader *r, size_t from) {
  if (from >= r->len) return r->len;
  const uint8_t *m = memmem(r->data + from, r->len - from, zstd_magic, sizeof zstd_magic);
  return m ? (size_t)(m - r->data) : r->len;
}

/* Damage at byte `at`: the first one is described (printf format), later
 * ones counted.  Reading goes on at `resume` (the next frame magic, or
 * r->len), or stops for good once NSP_MAX_DAMAGE regions were skipped. */
static void damage(struct nsp_reader *r, size_t at, size_t resume, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void damage(struct nsp_reader *r, size_t at, size_t resume, const char *fmt, ...) {
  if (!r->damaged++) {
    r->first_damage = at;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->problem, sizeof r->problem, fmt, ap);
    va_end(ap);
  }
  if (resume < at) resume = at;
  if (r->damaged >= NSP_MAX_DAMAGE) resume = r->len;
  r->skipped += resume - at;
  r->off = r->resume = resume;
}

/* Decompresses the frame at r->off (or, past damage, a later one) into
 * r->frame.  Returns 1, or 0 at the end of the file. */
static int next_frame(struct nsp_reader *r) {
  for (;;) {
    if (r->off >= r->len) return 0;
    const uint8_t *src = r->data + r->off;
    size_t avail = r->len - r->off;
    size_t csize = ZSTD_findFrameCompressedSize(src, avail);
    if (ZSTD_isError(csize)) {
      size_t next = next_magic(r, r->off + 1);
      if (ZSTD_getErrorCode(csize) == ZSTD_error_srcSize_wrong && next == r->len) {
        /* The file ends inside this frame, and no frame follows: the one
         * the process was writing when it died.  Expected, not damage. */
        if (r->damaged) {
          problem_cat(r, "; the file ends inside the frame at byte %zu", r->off);
        } else {
          snprintf(r->problem, sizeof r->problem,
                   "incomplete frame at byte %zu: the file ends %zu byte%s into it (cut there; the process "
                   "probably died while writing)", r->off, avail, avail == 1 ? "" : "s");
        }
        r->off = r->len;
        return 0;
      }
      damage(r, r->off, next, "corrupt frame at byte %zu: %s", r->off,
             ZSTD_getErrorCode(csize) == ZSTD_error_srcSize_wrong ? "its size runs past the end of the file"
                                                                    : ZSTD_getErrorName(csize));
      continue;
    }
    if (avail >= 4 && (le32(src) & 0xFFFFFFF0u) == 0x184D2A50u) {
      r->off += csize; /* skippable frame (RFC 8878 3.1.2); a loop, not recursion */
      continue;
    }
    if (r->want && !r->want(r->want_ctx, r->off)) {
      r->off += csize; /* stepped over: its index said what it holds */
      r->frames++;     /* a frame of the file all the same */
      continue;
    }
    ZSTD_DCtx_reset(r->dctx, ZSTD_reset_session_only);
    r->frame.len = 0;
    ZSTD_inBuffer in = {src, csize, 0};
    /* Whole file's output budget, checked as output grows. */
    uint64_t budget = (1u << 20) + (uint64_t)NSP_MAX_RATIO * (r->off + csize);
    const char *bad = NULL;
    char why[96];
    for (;;) {
      if (r->frame.cap - r->frame.len < (1u << 16) && r->frame.cap <= NSP_MAX_FRAME) {
        /* Grows by what came out, never by what a header claims, and
         * never past NSP_MAX_FRAME plus one block. */
        size_t cap = r->frame.cap ? r->frame.cap * 2 : (1u << 16);
        if (cap > NSP_MAX_FRAME + (1u << 16)) cap = NSP_MAX_FRAME + (1u << 16);
        if (cap > r->frame_alloc) { /* else a reused buffer has the room */
          uint8_t *d = realloc(r->frame.data, cap);
          if (!d) {
            bad = "out of memory";
            break;
          }
          r->frame.data = d;
          r->frame_alloc = cap;
        }
        r->frame.cap = cap;
      }
      ZSTD_outBuffer out = {r->frame.data, r->frame.cap, r->frame.len};
      size_t ret = ZSTD_decompressStream(r->dctx, &out, &in);
      r->frame.len = out.pos;
      if (ZSTD_isError(ret)) {
        bad = ZSTD_getErrorName(ret);
        break;
      }
      if (r->frame.len > NSP_MAX_FRAME) {
        snprintf(why, sizeof why, "decompresses past %u bytes", NSP_MAX_FRAME);
        bad = why;
        break;
      }
      if (r->out_total + r->frame.len > budget) {
        r->out_total += r->frame.len;
        damage(r, r->off, r->len,
               "frame at byte %zu decompresses to over %d times the size of the file so far (a "
               "decompression bomb?); not read further", r->off, NSP_MAX_RATIO);
        return 0;
      }
      if (ret == 0) break;
      if (in.pos == in.size && out.pos < out.size) {
        bad = "the frame ends early";
        break;
      }
    }
    r->out_total += r->frame.len;
    if (bad) {
      damage(r, r->off, next_magic(r, r->off + 1), "corrupt zstd frame at byte %zu: %s", r->off, bad);
      continue;
    }
    r->frame_off = r->off;
    r->off += csize;
    r->p = r->frame.data;
    r->frames++;
    nsp_codec_reset(&r->codec);
    return 1;
  }
}

int nsp_reader_next(struct nsp_reader *r, struct nsp_rec *rec) {
  if (r->done) return r->done < 0 ? -1 : 0;
  for (;;) {
    if (r->p && r->p < r->frame.data + r->frame.len) {
      const uint8_t *start = r->p;
      int ret = nsp_decode(&r->p, r->frame.data + r->frame.len, &r->codec, rec, &r->store);
      if (ret == 1) {
        if (rec->kind == 0) continue; /* unknown kind, skipped */
        if (rec->kind == NSP_REC_RINGPOS) { /* bookkeeping for recovery, not shown */
          if (nsp_rec_ringpos_end(rec) > r->ring_end) r->ring_end = nsp_rec_ringpos_end(rec);
          continue;
        }
        if (rec->kind == NSP_REC_DROPPED && nsp_rec_dropped_reason(rec) < NSP_DROP_SLOTS)
          r->dropped_seen[nsp_rec_dropped_reason(rec)] += nsp_rec_dropped_count(rec);
        r->last_from_ring = 0;
        return 1;
      }
      /* The rest of this frame cannot be framed into records: go on
       * with the next frame, which starts where this one ended. */
      size_t frame_end = r->off;
      r->off = r->frame_off;
      damage(r, r->frame_off, frame_end, "malformed record at byte %zu of the frame at file byte %zu",
             (size_t)(start - r->frame.data), r->frame_off);
      r->p = NULL;
      continue;
    }
    r->p = NULL;
    if (next_frame(r)) continue;
    /* After the last frame: what the process committed but never wrote. */
    if (r->ring && nsp_ringread_next(r->ring, r->ring_end, r->dropped_seen, rec) == 1) {
      r->from_ring++;
      r->last_from_ring = 1;
      return 1;
    }
    if (r->damaged == 1 && r->resume < r->len)
      problem_cat(r, "; skipped %zu bytes, read on from byte %zu", r->skipped, r->resume);
    else if (r->damaged == 1)
      problem_cat(r, "; nothing readable after it");
    else if (r->damaged > 1)
      problem_cat(r, "; %u damaged regions (%zu bytes) skipped in all%s", r->damaged, r->skipped,
                  r->damaged >= NSP_MAX_DAMAGE ? ", then gave up" : "");
    r->done = r->damaged ? -1 : 1;
    return r->done < 0 ? -1 : 0;
  }
}

size_t nsp_reader_record_frame(const struct nsp_reader *r) {
  return r->last_from_ring || !r->frames ? SIZE_MAX : r->frame_off;
}

int nsp_reader_seek_frame(struct nsp_reader *r, size_t off) {
  if (r->frames || r->p || off < r->hdr.header_size || off >= r->len) return -1;
  r->off = off;
  return 0;
}

void nsp_reader_set_filter(struct nsp_reader *r, int (*want)(void *ctx, size_t off), void *ctx) {
  r->want = want;
  r->want_ctx = ctx;
}

void nsp_reader_release(struct nsp_reader *r) {
  if (!r) return;
  if (!r->done) r->done = 1;
  cache_put(r->dctx, r->frame.data, r->frame_alloc); /* to this thread's cache: the next reader it opens */
  file_put(r->buf, r->buf_alloc);
  r->buf = NULL;
  if (!r->map_len) r->data = NULL; /* not read again; a mapping stays until destroy */
  r->dctx = NULL;
  r->frame.data = NULL;
  r->frame.len = r->frame.cap = r->frame_alloc = 0;
  nsp_codec_free(&r->codec);
  nsp_dec_store_free(&r->store);
}

void nsp_reader_destroy(struct nsp_reader *r) {
  if (!r) return;
  if (r->map_len) munmap((void *)r->data, r->map_len);
  file_put(r->buf, r->buf_alloc);
  nsp_ringread_close(r->ring);
  cache_put(r->dctx, r->frame.data, r->frame_alloc);
  nsp_codec_free(&r->codec);
  nsp_dec_store_free(&r->store);
  free(r);
}
