/* nsp_writer.c - the ring between wrappers and disk, and the writer thread.
 *
 * Wrappers never wait on disk: they put a record in a bounded lock-free
 * ring (Vyukov's bounded MPMC queue, used here with one consumer) and
 * return.  When the ring is full the record is dropped and counted.  A
 * background thread drains the ring, encodes records, and writes one zstd
 * frame at least every NCCLSPY_FLUSH_MS, whenever a quarter of the ring
 * waits, and at exit.
 *
 * Durability.  The ring lives in a MAP_SHARED mapping of "<trace>.ring"
 * (nsp_files.c), so a record committed by a wrapper is in the page cache
 * before the wrapper returns, and survives any death of the process.  The
 * writer frees a slot only after the frame holding its record was written
 * and the ring header's `written` position moved past it; each frame ends
 * with a RINGPOS record naming the ring positions it holds.  So after a
 * crash every record of a call that returned is either in a whole frame of
 * the trace or in a slot at or after max(written, last RINGPOS end), where
 * nsp_reader_open finds it.  No signal handler is needed for that.  The
 * one nsp_signal.c installs (NCCLSPY_SIGNALS) only adds a SIGNAL record,
 * with the stack, before it hands the signal to the program's handler or
 * default action.  On a clean exit the writer drains the ring, writes the
 * last frame and removes the ring file.
 *
 * Settings (nsp_settings.h), read once, at the first NCCL call:
 * NCCLSPY_DIR, _FLUSH_MS, _RING, _LEVEL, _MAX_MB, _MODE and _RING_FILE.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "nsp_config.h"
#include "nsp_io.h"
#include "nsp_settings.h"
#include "nsp_shim.h"

extern char **environ;

_Static_assert(sizeof(struct nsp_slot) == 128, "ring slots are 128 bytes");

_Atomic int nsp_started;
static pthread_mutex_t nsp_start_lock = PTHREAD_MUTEX_INITIALIZER;
static struct nsp_slot *nsp_ring;
static size_t nsp_ring_size;
static int nsp_ring_in_file;   /* nsp_ring is in the ring file's mapping */
static _Atomic uint64_t nsp_ring_head;
static uint64_t nsp_ring_tail;  /* writer thread only: next position to encode */
static uint64_t nsp_ring_freed; /* writer thread only: next position to free */
static _Atomic uint64_t nsp_ring_dropped;
static _Atomic int nsp_ring_full_warned;

static pthread_t nsp_writer_thread;
static int nsp_writer_running;
static pid_t nsp_writer_pid;
static _Atomic int nsp_writer_stop;

static struct {
  int read;
  int dir_too_long; /* NCCLSPY_DIR did not fit: no files */
  char dir[PATH_MAX];
  uint64_t flush_ns;
  int level;
  uint64_t max_bytes;
  unsigned mode;
  int ring_file;
} nsp_cfg;

unsigned nsp_flush_ms(void) { return (unsigned)(nsp_cfg.flush_ns / 1000000u); }

/* ---- ring ---- */

/* Lock-free (a CAS loop), so the signal handler may call it (warn 0). */
static struct nsp_rec *ring_reserve(int warn) {
  struct nsp_slot *ring = nsp_ring;
  if (!ring) return NULL;
  size_t mask = nsp_ring_size - 1;
  uint64_t pos = atomic_load_explicit(&nsp_ring_head, memory_order_relaxed);
  for (;;) {
    struct nsp_slot *s = &ring[pos & mask];
    uint64_t seq = atomic_load_explicit(&s->seq, memory_order_acquire);
    int64_t dif = (int64_t)(seq - pos);
    if (dif == 0) {
      if (atomic_compare_exchange_weak_explicit(&nsp_ring_head, &pos, pos + 1, memory_order_relaxed,
                                                memory_order_relaxed)) {
        memset(&s->rec, 0, sizeof s->rec);
        return &s->rec;
      }
    } else if (dif < 0) {
      atomic_fetch_add_explicit(&nsp_ring_dropped, 1, memory_order_relaxed);
      nsp_ring_file_dropped(NSP_DROP_RING_FULL, 1);
      if (warn)
        nsp_warn_once(&nsp_ring_full_warned,
                      "the trace writer fell behind; records are being dropped and counted "
                      "(raise NCCLSPY_RING)");
      return NULL;
    } else {
      pos = atomic_load_explicit(&nsp_ring_head, memory_order_relaxed);
    }
  }
}

struct nsp_rec *nsp_ring_reserve(void) { return ring_reserve(1); }
struct nsp_rec *nsp_ring_reserve_quiet(void) { return ring_reserve(0); }

static struct nsp_slot *slot_of(const struct nsp_rec *rec) {
  return (struct nsp_slot *)((char *)(uintptr_t)rec - offsetof(struct nsp_slot, rec));
}

/* A reserved slot's seq is its ring position until the commit. */
uint64_t nsp_ring_pos(const struct nsp_rec *rec) {
  return atomic_load_explicit(&slot_of(rec)->seq, memory_order_relaxed);
}

void nsp_ring_commit_quiet(struct nsp_rec *rec) {
  struct nsp_slot *s = slot_of(rec);
  uint64_t seq = atomic_load_explicit(&s->seq, memory_order_relaxed);
  atomic_store_explicit(&s->seq, seq + 1, memory_order_release);
}

int nsp_ring_durable(void) { return nsp_ring_in_file; }

void nsp_ring_commit(struct nsp_rec *rec) {
  struct nsp_slot *s = (struct nsp_slot *)((char *)rec - offsetof(struct nsp_slot, rec));
  uint64_t seq = atomic_load_explicit(&s->seq, memory_order_relaxed);
  /* Strings live on the heap, which dies with the process: keep a copy in
   * the ring file (rare records: init, errors, call sites). */
  if (NSP_UNLIKELY(rec->ext || rec->last_error) && nsp_ring_in_file) nsp_ring_file_blob(seq, rec);
  atomic_store_explicit(&s->seq, seq + 1, memory_order_release);
}

char *nsp_strdup_rec(const char *s) {
  if (!s) return NULL;
  size_t n = strnlen(s, 4096);
  char *d = malloc(n + 1);
  if (!d) return NULL;
  memcpy(d, s, n);
  d[n] = 0;
  return d;
}

void nsp_rec_release(struct nsp_rec *r) {
  if (r->kind == NSP_REC_SIGNAL) {
    nsp_signals_release(r); /* its ext is the signal area's, not the heap's */
    r->ext = NULL;
  }
  free((void *)r->last_error);
  free((void *)r->ext); /* one block with its strings */
  r->last_error = NULL;
  r->ext = NULL;
}

static void ring_init(void) {
  for (size_t i = 0; i < nsp_ring_size; i++) atomic_store_explicit(&nsp_ring[i].seq, i, memory_order_relaxed);
  atomic_store(&nsp_ring_head, 0);
  nsp_ring_tail = 0;
  nsp_ring_freed = 0;
}

/* ---- settings ---- */

static void read_settings(void) {
  const char *dir = nsp_setting_str(NSP_SET_DIR);
  if (strlen(dir) >= sizeof nsp_cfg.dir) {
    /* Cut, it would name another directory: trace nothing instead. */
    nsp_warn("NCCLSPY_DIR is longer than %zu bytes; tracing is off for this process", sizeof nsp_cfg.dir - 1);
    nsp_cfg.dir_too_long = 1;
    dir = "";
  }
  snprintf(nsp_cfg.dir, sizeof nsp_cfg.dir, "%s", dir);
  nsp_cfg.flush_ns = (uint64_t)nsp_setting(NSP_SET_FLUSH_MS) * 1000000u;
  nsp_cfg.level = (int)nsp_setting(NSP_SET_LEVEL);
  nsp_cfg.max_bytes = (uint64_t)nsp_setting(NSP_SET_MAX_MB) << 20;
  nsp_ring_size = (size_t)nsp_setting(NSP_SET_RING);
  nsp_cfg.mode = (unsigned)nsp_setting(NSP_SET_MODE);
  nsp_cfg.ring_file = (int)nsp_setting(NSP_SET_RING_FILE);
  nsp_cfg.read = 1;
}

/* ---- process snapshot (taken on the caller's thread at the first call,
 * since reading environ races with setenv elsewhere) ---- */

static int32_t nsp_nccl_version;

static struct nsp_rec_ext *process_snapshot(void) {
  size_t nenv = 0, bytes = 0;
  for (char **e = environ; e && *e; e++) {
    const char *eq = strchr(*e, '=');
    if (!eq || !nsp_env_allowed(*e, (size_t)(eq - *e))) continue;
    nenv++;
    bytes += strnlen(*e, 4096) + 2;
  }
  char host[NSP_HOST_MAX] = "";
  gethostname(host, sizeof host - 1);
  const char *path = nsp_nccl_path();
  bytes += sizeof(struct nsp_rec_ext) + nenv * 2 * sizeof(char *) + strlen(host) + strlen(path) +
           sizeof NSP_VERSION + 3;
  struct nsp_rec_ext *x = calloc(1, bytes);
  if (!x) return NULL;
  const char **env = (const char **)(x + 1);
  char *s = (char *)(env + nenv * 2);
  size_t i = 0;
  for (char **e = environ; e && *e && i < nenv; e++) {
    const char *eq = strchr(*e, '=');
    if (!eq || !nsp_env_allowed(*e, (size_t)(eq - *e))) continue;
    size_t nl = (size_t)(eq - *e), vl = strnlen(eq + 1, 4096 - nl);
    env[2 * i] = s;
    memcpy(s, *e, nl);
    s += nl;
    *s++ = 0;
    env[2 * i + 1] = s;
    memcpy(s, eq + 1, vl);
    s += vl;
    *s++ = 0;
    i++;
  }
  x->nenv = (uint32_t)i;
  x->env = env;
  x->host = strcpy(s, host);
  s += strlen(host) + 1;
  x->nccl_path = strcpy(s, path);
  s += strlen(path) + 1;
  x->shim_version = strcpy(s, NSP_VERSION);
  x->pid = (uint32_t)getpid();
  x->ppid = (uint32_t)getppid();
  x->nccl_version = nsp_nccl_version;
  x->tracking = nsp_done_tracking() | (nsp_sites_enabled() ? NSP_TRACK_CALLSITES : 0) |
                (nsp_signals_enabled() ? NSP_TRACK_SIGNALS : 0);
  nsp_process_versions(&x->driver_version, &x->runtime_version);
  x->launcher = nsp_launcher();
  struct timespec rt, mt;
  clock_gettime(CLOCK_REALTIME, &rt);
  clock_gettime(CLOCK_MONOTONIC, &mt);
  x->realtime_ns = (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec;
  x->monotonic_ns = (uint64_t)mt.tv_sec * 1000000000u + (uint64_t)mt.tv_nsec;
  return x;
}

/* ---- the trace file ---- */

/* Room kept under NCCLSPY_MAX_MB for the drop summary. */
#define NSP_SUMMARY_ROOM 256

struct nsp_file {
  int fd;               /* nsp_files.fd; -1: tracing is off */
  uint64_t size;        /* header and whole data frames */
  uint64_t summary;     /* bytes of the drop summary frame after them; 0 none */
  uint64_t summary_of;  /* losses the summary reports */
  int capped;           /* NCCLSPY_MAX_MB reached: records are counted, not written */
  ZSTD_CCtx *cctx;
  struct nsp_buf frame, out;
  struct nsp_codec codec;
  uint64_t frame_first; /* ring position of the frame's first record */
  uint64_t last_flush;
  uint64_t lost[4];     /* records lost by NSP_DROP_* reason, since the start */
  uint64_t reported[4]; /* of those, in DROPPED records of written frames */
};

static void put_le(uint8_t *p, uint64_t v, int n) {
  for (int i = 0; i < n; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static void make_header(uint8_t h[NSP_HEADER_SIZE], const struct nsp_rec_ext *proc, const char *host) {
  memset(h, 0, NSP_HEADER_SIZE);
  memcpy(h, NSP_MAGIC, 8);
  put_le(h + 8, NSP_FORMAT_MAJOR, 2);
  put_le(h + 10, NSP_FORMAT_MINOR, 2);
  put_le(h + 12, NSP_HEADER_SIZE, 4);
  put_le(h + 16, proc ? proc->realtime_ns : 0, 8);
  put_le(h + 24, proc ? proc->monotonic_ns : 0, 8);
  put_le(h + 32, (uint64_t)getpid(), 4);
  put_le(h + 36, (uint32_t)nsp_nccl_version, 4);
  put_le(h + 40, proc && (proc->tracking & NSP_TRACK_TIMING) ? 0 : NSP_HDR_NO_TIMING, 4);
  memcpy(h + 48, host, strnlen(host, NSP_HOST_MAX - 1));
}

static void note_lost(struct nsp_file *f, uint64_t n, int reason) {
  if (!n) return;
  f->lost[reason] += n;
  nsp_ring_file_dropped(reason, n);
}

static uint64_t unreported(const struct nsp_file *f) {
  uint64_t n = 0;
  for (int r = 1; r < 4; r++) n += f->lost[r] - f->reported[r];
  return n;
}

/* Cuts the file back to its data frames (dropping the summary). */
static void cut_to_data(struct nsp_file *f) {
  if (ftruncate(f->fd, (off_t)f->size) == 0) lseek(f->fd, (off_t)f->size, SEEK_SET);
  f->summary = 0;
}

/* While frames cannot be written (cap, disk full), one small frame after
 * the data says how many records were lost and why; it is replaced as the
 * count grows. */
static void write_summary(struct nsp_file *f) {
  uint64_t n = unreported(f);
  if (f->fd < 0 || !n || n == f->summary_of) return;
  struct nsp_buf b = {0}, z = {0};
  struct nsp_codec c = {0};
  for (int r = 1; r < 4; r++) {
    struct nsp_rec d = {.kind = NSP_REC_DROPPED, .count = f->lost[r] - f->reported[r], .aux = (uint32_t)r,
                        .t_enter = nsp_now_ns()};
    if (d.count && nsp_encode(&b, &c, &d) < 0) goto out;
  }
  if (nsp_buf_reserve(&z, ZSTD_compressBound(b.len)) < 0) goto out;
  size_t zl = ZSTD_compress2(f->cctx, z.data, z.cap, b.data, b.len);
  if (ZSTD_isError(zl)) goto out;
  cut_to_data(f);
  if (nsp_write_all(f->fd, z.data, zl) == 0) {
    f->summary = zl;
    f->summary_of = n;
  } else {
    cut_to_data(f);
  }
out:
  nsp_buf_free(&b);
  nsp_buf_free(&z);
  nsp_codec_free(&c);
}

/* Frees the slots of positions [nsp_ring_freed, end): their records are in
 * the trace (or counted lost). */
static void ring_release(uint64_t end) {
  nsp_ring_file_written(end); /* the ring header first: then the slots may be reused */
  size_t mask = nsp_ring_size - 1;
  for (; nsp_ring_freed < end; nsp_ring_freed++) {
    struct nsp_slot *s = &nsp_ring[nsp_ring_freed & mask];
    nsp_rec_release(&s->rec);
    atomic_store_explicit(&s->seq, nsp_ring_freed + nsp_ring_size, memory_order_release);
  }
}

static void add_rec(struct nsp_file *f, const struct nsp_rec *r) {
  if (nsp_encode(&f->frame, &f->codec, r) < 0) note_lost(f, 1, NSP_DROP_WRITE_ERROR);
}

/* Writes the frame being built (DROPPED counts and RINGPOS added), then
 * frees its ring slots.  On failure the file is cut back to its last whole
 * frame and the frame's ring records are counted lost. */
static void file_flush(struct nsp_file *f) {
  uint64_t end = nsp_ring_tail, nring = end - f->frame_first;
  f->last_flush = nsp_now_ns();
  f->lost[NSP_DROP_RING_FULL] = atomic_load_explicit(&nsp_ring_dropped, memory_order_relaxed);
  if (f->fd < 0) goto release; /* tracing is off: records are only passed along */
  if (f->capped) {
    note_lost(f, nring, NSP_DROP_SIZE_CAP);
    goto release;
  }
  uint64_t pending[4] = {0};
  for (int r = 1; r < 4; r++) {
    pending[r] = f->lost[r] - f->reported[r];
    if (pending[r]) {
      struct nsp_rec d = {.kind = NSP_REC_DROPPED, .count = pending[r], .aux = (uint32_t)r,
                          .t_enter = nsp_now_ns()};
      add_rec(f, &d);
    }
  }
  if (nring) {
    struct nsp_rec rp = {.kind = NSP_REC_RINGPOS, .seq = f->frame_first, .count = end};
    add_rec(f, &rp);
  }
  if (!f->frame.len) goto release;
  size_t c = 0;
  if (nsp_buf_reserve(&f->out, ZSTD_compressBound(f->frame.len) + NSP_SUMMARY_ROOM) < 0 ||
      ZSTD_isError(c = ZSTD_compress2(f->cctx, f->out.data, f->out.cap - NSP_SUMMARY_ROOM, f->frame.data,
                                      f->frame.len))) {
    note_lost(f, nring, NSP_DROP_WRITE_ERROR);
    goto release;
  }
  if (nsp_cfg.max_bytes && f->size + c + NSP_SUMMARY_ROOM > nsp_cfg.max_bytes) {
    nsp_warn_once(&nsp_disk_warned,
                  "%s/%s reached NCCLSPY_MAX_MB=%llu; further records are counted, not written",
                  nsp_files.dir, nsp_files.name, (unsigned long long)(nsp_cfg.max_bytes >> 20));
    f->capped = 1;
    note_lost(f, nring, NSP_DROP_SIZE_CAP);
    goto release;
  }
  if (f->summary) cut_to_data(f);
  /* The frame goes out with NSP_SUMMARY_ROOM bytes of padding after it,
   * cut off at once: a frame is written only while the drop summary still
   * fits after it, so a disk (or RLIMIT_FSIZE) that fills up leaves room
   * for the summary that counts every record lost after this frame. */
  memset(f->out.data + c, 0, NSP_SUMMARY_ROOM);
  if (nsp_write_all(f->fd, f->out.data, c + NSP_SUMMARY_ROOM) < 0 || ftruncate(f->fd, (off_t)(f->size + c)) < 0 ||
      lseek(f->fd, (off_t)(f->size + c), SEEK_SET) < 0) {
    int err = errno;
    cut_to_data(f);
    nsp_warn_once(&nsp_disk_warned, "cannot write %s/%s: %s; records are counted, not written",
                  nsp_files.dir, nsp_files.name, strerror(err));
    note_lost(f, nring, NSP_DROP_WRITE_ERROR);
    goto release;
  }
  f->size += c;
  for (int r = 1; r < 4; r++) f->reported[r] += pending[r];
release:
  if (f->fd >= 0 && unreported(f)) write_summary(f);
  f->frame.len = 0;
  nsp_codec_reset(&f->codec);
  f->frame_first = end;
  ring_release(end);
}

/* Moves committed records from the ring into the frame (their slots stay
 * taken until the frame is written).  Returns the number taken. */
static size_t drain(struct nsp_file *f) {
  size_t n = 0, mask = nsp_ring_size - 1;
  for (;;) {
    /* Slots are freed only once their frame is written: keep most free. */
    if (nsp_ring_tail - nsp_ring_freed >= nsp_ring_size / 4) file_flush(f);
    struct nsp_slot *s = &nsp_ring[nsp_ring_tail & mask];
    uint64_t seq = atomic_load_explicit(&s->seq, memory_order_acquire);
    if (seq != nsp_ring_tail + 1) break;
    const struct nsp_rec *r = &s->rec;
    if (r->kind == NSP_REC_COMM && r->ext && (r->result == ncclSuccess || r->result == ncclInProgress))
      nsp_files_rename_rank(r->ext->rank);
    if (f->fd >= 0 && !f->capped) add_rec(f, r);
    nsp_ring_tail++;
    n++;
    if (f->frame.len >= (1u << 20)) file_flush(f);
  }
  return n;
}

static void *writer_main(void *arg) {
  (void)arg;
  sigset_t all;
  sigfillset(&all);
  /* Signals belong to the program.  This also keeps a SIGXFSZ that our own
   * write past RLIMIT_FSIZE raises at this thread from killing the
   * process: it stays pending here and write() fails with EFBIG. */
  pthread_sigmask(SIG_BLOCK, &all, NULL);

  struct nsp_file f;
  memset(&f, 0, sizeof f);
  f.fd = nsp_files.fd;
  f.size = NSP_HEADER_SIZE;
  if (f.fd >= 0) {
    f.cctx = ZSTD_createCCtx();
    if (f.cctx) {
      ZSTD_CCtx_setParameter(f.cctx, ZSTD_c_compressionLevel, nsp_cfg.level);
      ZSTD_CCtx_setParameter(f.cctx, ZSTD_c_checksumFlag, 1);
    } else {
      nsp_warn("out of memory for the trace compressor; tracing is off for this process");
      f.fd = -1;
    }
  }
  f.frame_first = nsp_ring_tail;
  f.last_flush = nsp_now_ns();
  uint64_t modules_seen = f.last_flush;
  for (;;) {
    int stop = atomic_load_explicit(&nsp_writer_stop, memory_order_acquire);
    size_t n = drain(&f);
    /* The signal handler's table of loaded modules: libraries loaded
     * after the first NCCL call (torch loads many lazily). */
    if (!stop && nsp_now_ns() - modules_seen >= 1000000000u) {
      nsp_signals_refresh();
      modules_seen = nsp_now_ns();
    }
    if (stop || (nsp_ring_tail != f.frame_first && nsp_now_ns() - f.last_flush >= nsp_cfg.flush_ns)) {
      file_flush(&f);
    } else if (f.fd >= 0 && atomic_load_explicit(&nsp_ring_dropped, memory_order_relaxed) !=
                                f.lost[NSP_DROP_RING_FULL] &&
               nsp_now_ns() - f.last_flush >= nsp_cfg.flush_ns) {
      file_flush(&f); /* drops to report, no records */
    }
    if (stop) break;
    if (!n) {
      struct timespec ts = {0, 2000000}; /* 2 ms: cheap, and a record waits little */
      nanosleep(&ts, NULL);
    }
  }
  /* Every reserved record is written: the ring file has nothing to add. */
  int all_written = atomic_load_explicit(&nsp_ring_head, memory_order_acquire) == nsp_ring_tail;
  nsp_files_close(all_written);
  ZSTD_freeCCtx(f.cctx);
  nsp_buf_free(&f.frame);
  nsp_buf_free(&f.out);
  nsp_codec_free(&f.codec);
  return NULL;
}

/* ---- start, exit, fork ---- */

static void ring_drop(void) {
  if (nsp_ring && !nsp_ring_in_file) munmap(nsp_ring, nsp_ring_size * sizeof(struct nsp_slot));
  nsp_ring = NULL;
  nsp_ring_in_file = 0;
}

/* Lock order: start, site, resolve, comm, files (the ring file's blob
 * lock).  Every lock the shim's threads can hold is taken here, so the
 * child never inherits one held by a thread that did not come along. */
static void at_fork_prepare(void) {
  pthread_mutex_lock(&nsp_start_lock);
  nsp_site_atfork(0);
  nsp_resolve_atfork(0);
  nsp_comm_atfork(0);
  nsp_files_atfork(0);
}
static void at_fork_parent(void) {
  nsp_files_atfork(1);
  nsp_comm_atfork(1);
  nsp_resolve_atfork(1);
  nsp_site_atfork(1);
  pthread_mutex_unlock(&nsp_start_lock);
}
static void at_fork_child(void) {
  nsp_files_atfork(1);
  nsp_comm_atfork(1);
  nsp_resolve_atfork(1);
  nsp_site_atfork(1);
  /* The writer thread did not come along, and the parent's ring and files
   * stay the parent's: the child lets go of them (never writing into the
   * parent's ring file) and, at its first NCCL call, starts its own writer
   * with its own trace and ring.  Records owned by the parent leak here,
   * once. */
  ring_drop();
  nsp_files_forget();
  nsp_signals_atfork_child();
  nsp_writer_running = 0;
  atomic_store(&nsp_writer_stop, 0);
  atomic_store(&nsp_ring_dropped, 0);
  atomic_store(&nsp_started, 0);
  pthread_mutex_unlock(&nsp_start_lock);
}

/* Registered at load, before any thread can hold the locks. */
__attribute__((constructor)) static void nsp_init(void) {
  pthread_atfork(at_fork_prepare, at_fork_parent, at_fork_child);
}

static void writer_stop(void) {
  if (!nsp_writer_running || nsp_writer_pid != getpid()) return;
  nsp_done_stop(); /* its last completions go in the last frame */
  nsp_writer_running = 0;
  atomic_store_explicit(&nsp_writer_stop, 1, memory_order_release);
  /* Bounded: a writer stuck on a dead filesystem must not hold up exit
   * (what it had not written stays in the ring file). */
  struct timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += 5;
  if (pthread_timedjoin_np(nsp_writer_thread, NULL, &deadline) != 0)
    nsp_warn("the trace writer did not finish within 5 s at exit; the trace may lack its last second");
}

__attribute__((destructor)) static void nsp_fini(void) { writer_stop(); }

void nsp_start(void) {
  pthread_mutex_lock(&nsp_start_lock);
  if (atomic_load_explicit(&nsp_started, memory_order_relaxed)) {
    pthread_mutex_unlock(&nsp_start_lock);
    return;
  }
  int saved = errno;
  if (!nsp_cfg.read) read_settings();
  /* The NCCL version goes in the header; ask before the first record. */
  ncclResult_t (*get_version)(int *) = (ncclResult_t(*)(int *))nsp_real(NSP_API_GetVersion);
  int v = 0;
  nsp_depth++;
  if (get_version && get_version(&v) == 0) nsp_nccl_version = v;
  nsp_depth--;
  struct nsp_rec_ext *proc = process_snapshot();
  /* The files are made here, once, on the first caller's thread: then the
   * ring exists in its file before the first record. */
  char host[NSP_HOST_MAX] = "";
  if (proc && proc->host) snprintf(host, sizeof host, "%s", proc->host);
  uint8_t header[NSP_HEADER_SIZE];
  make_header(header, proc, host[0] ? host : "unknown");
  if (!nsp_cfg.dir_too_long && nsp_files_open(nsp_cfg.dir, nsp_cfg.mode, host, header, sizeof header) == 0) {
    nsp_ring = nsp_ring_file_map(nsp_ring_size, proc ? proc->realtime_ns : 0, nsp_cfg.ring_file);
    nsp_ring_in_file = nsp_ring != NULL;
  }
  if (!nsp_ring) {
    void *m = mmap(NULL, nsp_ring_size * sizeof(struct nsp_slot), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
      nsp_warn("cannot allocate the record ring (%zu slots): %s; tracing is off", nsp_ring_size,
               strerror(errno));
    } else {
      madvise(m, nsp_ring_size * sizeof(struct nsp_slot), MADV_POPULATE_WRITE); /* faults in one go */
      nsp_ring = m;
    }
  }
  if (nsp_ring) {
    ring_init();
    atomic_store(&nsp_writer_stop, 0);
    nsp_writer_pid = getpid();
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 << 10);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int err = pthread_create(&nsp_writer_thread, &attr, writer_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    if (err) {
      nsp_warn("cannot start the trace writer thread: %s; tracing is off", strerror(err));
      free(proc);
      proc = NULL;
      nsp_files_close(1);
      ring_drop();
      nsp_files_forget();
    } else {
      nsp_writer_running = 1;
      struct nsp_rec *r = proc ? nsp_ring_reserve() : NULL;
      if (r) {
        r->kind = NSP_REC_PROCESS;
        r->ext = proc;
        nsp_ring_commit(r);
      } else {
        free(proc);
      }
      /* Once the ring exists: a fatal signal's record has somewhere to go. */
      nsp_signals_install();
    }
  } else {
    free(proc);
    nsp_files_close(1);
    nsp_files_forget();
  }
  atomic_store_explicit(&nsp_started, 1, memory_order_release);
  errno = saved;
  pthread_mutex_unlock(&nsp_start_lock);
}
