/* nsp_writer.c - the writer thread, from the record ring to the trace.
 *
 * Wrappers never wait on disk: they put a record in the ring (nsp_ring.c)
 * and return.  A background thread drains the ring, encodes records, and
 * writes one zstd frame at least every NCCLSPY_FLUSH_MS, whenever a
 * quarter of the ring waits, and at exit.  Before each frame, in the
 * same write, goes its index (common/nsp_index.h), built on this thread
 * from the records it encodes: the analyzer reads the indexes first and
 * decodes only the frames a finding may need.
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
 * Settings (nsp_setting.h), read once, at the first NCCL call:
 * NCCLSPY_DIR, _FLUSH_MS, _RING, _LEVEL, _MAX_MB, _MODE and _RING_FILE.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "nsp_io.h"
#include "nsp_setting.h"
#include "nsp_index.h"
#include "nsp_shim.h"

_Atomic int nsp_writer_started;
static pthread_mutex_t nsp_start_lock = PTHREAD_MUTEX_INITIALIZER;
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
  size_t ring_slots;
} nsp_cfg;

unsigned nsp_writer_flush_ms(void) { return (unsigned)(nsp_cfg.flush_ns / 1000000u); }

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
  nsp_cfg.ring_slots = (size_t)nsp_setting(NSP_SET_RING);
  nsp_cfg.mode = (unsigned)nsp_setting(NSP_SET_MODE);
  nsp_cfg.ring_file = (int)nsp_setting(NSP_SET_RING_FILE);
  nsp_cfg.read = 1;
}

static int32_t nsp_nccl_version;

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
  struct nsp_buf ix;    /* the index frame, then the data frame after it, as written */
  struct nsp_index_builder index; /* the frame's index, built from its records (nsp_index.h) */
  struct nsp_codec codec;
  uint64_t frame_first; /* ring position of the frame's first record */
  uint64_t last_flush;
  uint64_t lost[NSP_DROP_END];     /* records lost by NSP_DROP_* reason, since the start */
  uint64_t reported[NSP_DROP_END]; /* of those, in DROPPED records of written frames */
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
  nsp_files_ring_dropped(reason, n);
}

static uint64_t unreported(const struct nsp_file *f) {
  uint64_t n = 0;
  for (int r = 1; r < NSP_DROP_END; r++) n += f->lost[r] - f->reported[r];
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
/* A DROPPED record: count records lost for reason (NSP_DROP_*), now. */
static struct nsp_rec dropped_rec(uint64_t count, int reason) {
  struct nsp_rec d = {.kind = NSP_REC_DROPPED};
  nsp_rec_dropped_set_count(&d, count);
  nsp_rec_dropped_set_reason(&d, (uint32_t)reason);
  nsp_rec_dropped_set_t(&d, nsp_now_ns());
  return d;
}

static void write_summary(struct nsp_file *f) {
  uint64_t n = unreported(f);
  if (f->fd < 0 || !n || n == f->summary_of) return;
  struct nsp_buf b = {0}, z = {0};
  struct nsp_codec c = {0};
  for (int r = 1; r < NSP_DROP_END; r++) {
    struct nsp_rec d = dropped_rec(f->lost[r] - f->reported[r], r);
    if (nsp_rec_dropped_count(&d) && nsp_encode(&b, &c, &d) < 0) goto out;
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

static void add_rec(struct nsp_file *f, const struct nsp_rec *r) {
  if (nsp_encode(&f->frame, &f->codec, r) < 0) {
    note_lost(f, 1, NSP_DROP_WRITE_ERROR);
    nsp_index_next(&f->index, 0); /* the index no longer says what the file holds */
    return;
  }
  nsp_index_add(&f->index, r); /* a builder out of memory writes no more indexes */
}

/* Writes the frame being built (DROPPED counts and RINGPOS added), then
 * frees its ring slots.  On failure the file is cut back to its last whole
 * frame and the frame's ring records are counted lost. */
static void file_flush(struct nsp_file *f) {
  uint64_t end = nsp_ring_tail(), nring = end - f->frame_first;
  int written = 0;
  f->last_flush = nsp_now_ns();
  f->lost[NSP_DROP_RING_FULL] = nsp_ring_dropped();
  if (f->fd < 0) goto release; /* tracing is off: records are only passed along */
  if (f->capped) {
    note_lost(f, nring, NSP_DROP_SIZE_CAP);
    goto release;
  }
  uint64_t pending[NSP_DROP_END] = {0};
  for (int r = 1; r < NSP_DROP_END; r++) {
    pending[r] = f->lost[r] - f->reported[r];
    if (pending[r]) {
      struct nsp_rec d = dropped_rec(pending[r], r);
      add_rec(f, &d);
    }
  }
  if (nring) {
    struct nsp_rec rp = {.kind = NSP_REC_RINGPOS};
    nsp_rec_ringpos_set_first(&rp, f->frame_first);
    nsp_rec_ringpos_set_end(&rp, end);
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
    nsp_warn_once(&nsp_files_disk_warned,
                  "%s/%s reached NCCLSPY_MAX_MB=%llu; further records are counted, not written",
                  nsp_files.dir, nsp_files.name, (unsigned long long)(nsp_cfg.max_bytes >> 20));
    f->capped = 1;
    note_lost(f, nring, NSP_DROP_SIZE_CAP);
    goto release;
  }
  if (f->summary) cut_to_data(f);
  /* Its index goes before it (nsp_index.h), in the same write; without
   * one (the builder ran out of memory) the frame goes alone. */
  const uint8_t *w = f->out.data;
  f->ix.len = 0;
  if (nsp_index_put(&f->index, f->out.data, c, &f->ix) == 0 &&
      nsp_buf_reserve(&f->ix, c + NSP_SUMMARY_ROOM) == 0) {
    memcpy(f->ix.data + f->ix.len, f->out.data, c);
    w = f->ix.data;
    c += f->ix.len;
  }
  /* The frame goes out with NSP_SUMMARY_ROOM bytes of padding after it,
   * cut off at once: a frame is written only while the drop summary still
   * fits after it, so a disk (or RLIMIT_FSIZE) that fills up leaves room
   * for the summary that counts every record lost after this frame. */
  memset((uint8_t *)w + c, 0, NSP_SUMMARY_ROOM);
  if (nsp_write_all(f->fd, w, c + NSP_SUMMARY_ROOM) < 0 ||
      ftruncate(f->fd, (off_t)(f->size + c)) < 0 ||
      lseek(f->fd, (off_t)(f->size + c), SEEK_SET) < 0) {
    int err = errno;
    cut_to_data(f);
    nsp_warn_once(&nsp_files_disk_warned, "cannot write %s/%s: %s; records are counted, not written",
                  nsp_files.dir, nsp_files.name, strerror(err));
    note_lost(f, nring, NSP_DROP_WRITE_ERROR);
    goto release;
  }
  f->size += c;
  written = 1;
  for (int r = 1; r < NSP_DROP_END; r++) f->reported[r] += pending[r];
release:
  if (f->frame.len) nsp_index_next(&f->index, written);
  if (f->fd >= 0 && unreported(f)) write_summary(f);
  f->frame.len = 0;
  nsp_codec_reset(&f->codec);
  f->frame_first = end;
  nsp_ring_free(end);
}

/* Moves committed records from the ring into the frame (their slots stay
 * taken until the frame is written).  Returns the number taken. */
static size_t drain(struct nsp_file *f) {
  size_t n = 0;
  for (;;) {
    /* Slots are freed only once their frame is written: keep most free. */
    if (nsp_ring_backlogged()) file_flush(f);
    const struct nsp_rec *r = nsp_ring_peek();
    if (!r) break;
    if (r->kind == NSP_REC_COMM && r->ext && (r->result == ncclSuccess || r->result == ncclInProgress))
      nsp_files_rename_rank(r->ext->rank);
    if (f->fd >= 0 && !f->capped) add_rec(f, r);
    /* The modules a fatal signal's frames name, while they are loaded. */
    if (r->kind == NSP_REC_SIGNAL && r->ext) nsp_site_note_frames(r->ext);
    nsp_ring_take();
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
  nsp_index_init(&f.index);
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
  f.frame_first = nsp_ring_tail();
  f.last_flush = nsp_now_ns();
  uint64_t modules_seen = f.last_flush;
  for (;;) {
    int stop = atomic_load_explicit(&nsp_writer_stop, memory_order_acquire);
    /* The heartbeat: a reader of the ring tells a live process from a
     * dead one by it (ncclspy's "still running"). */
    struct timespec real;
    clock_gettime(CLOCK_REALTIME, &real);
    nsp_files_ring_heartbeat(nsp_now_ns(), (uint64_t)real.tv_sec * 1000000000u + (uint64_t)real.tv_nsec);
    size_t n = drain(&f);
    /* The signal handler's table of loaded modules: libraries loaded
     * after the first NCCL call (torch loads many lazily). */
    if (!stop && nsp_now_ns() - modules_seen >= 1000000000u) {
      nsp_signal_refresh();
      nsp_resolve_rescan(); /* other libnccls */
      modules_seen = nsp_now_ns();
    }
    if (stop || (nsp_ring_tail() != f.frame_first && nsp_now_ns() - f.last_flush >= nsp_cfg.flush_ns)) {
      file_flush(&f);
    } else if (f.fd >= 0 && nsp_ring_dropped() != f.lost[NSP_DROP_RING_FULL] &&
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
  int all_written = nsp_ring_all_taken();
  nsp_files_close(all_written);
  ZSTD_freeCCtx(f.cctx);
  nsp_buf_free(&f.frame);
  nsp_buf_free(&f.out);
  nsp_buf_free(&f.ix);
  nsp_index_free(&f.index);
  nsp_codec_free(&f.codec);
  return NULL;
}

/* ---- start, exit, fork ---- */

/* Lock order: start, site, pysite, resolve, comm, files (the ring file's blob
 * lock).  Every lock the shim's threads can hold is taken here, so the
 * child never inherits one held by a thread that did not come along. */
static void at_fork_prepare(void) {
  pthread_mutex_lock(&nsp_start_lock);
  nsp_site_atfork(0);
  nsp_pysite_atfork(0);
  nsp_resolve_atfork(0);
  nsp_comm_atfork(0);
  nsp_files_atfork(0);
}
static void at_fork_parent(void) {
  nsp_files_atfork(1);
  nsp_comm_atfork(1);
  nsp_resolve_atfork(1);
  nsp_pysite_atfork(1);
  nsp_site_atfork(1);
  pthread_mutex_unlock(&nsp_start_lock);
}
static void at_fork_child(void) {
  nsp_files_atfork(1);
  nsp_comm_atfork(1);
  nsp_resolve_atfork(1);
  nsp_pysite_atfork(2);
  nsp_site_atfork(1);
  /* The writer thread did not come along, and the parent's ring and files
   * stay the parent's: the child lets go of them (never writing into the
   * parent's ring file) and, at its first NCCL call, starts its own writer
   * with its own trace and ring.  Records owned by the parent leak here,
   * once. */
  nsp_flight_atfork_child();
  nsp_ring_atfork_child();
  nsp_files_forget();
  nsp_signal_atfork_child();
  nsp_writer_running = 0;
  atomic_store(&nsp_writer_stop, 0);
  atomic_store(&nsp_writer_started, 0);
  pthread_mutex_unlock(&nsp_start_lock);
}

/* Registered at load, before any thread can hold the locks. */
__attribute__((constructor)) static void nsp_init(void) {
  pthread_atfork(at_fork_prepare, at_fork_parent, at_fork_child);
}

/* The status the process gives exit(): an on_exit handler runs before the
 * destructors (writer_stop), so the EXIT record can say it.  -1 unknown. */
static volatile int nsp_writer_exit_status = -1;
static void note_exit_status(int status, void *arg) {
  (void)arg;
  nsp_writer_exit_status = status & 0xff;
}

static void writer_stop(void) {
  if (!nsp_writer_running || nsp_writer_pid != getpid()) return;
  nsp_done_stop(); /* its last completions go in the last frame */
  /* The exit handlers run: the trace's last record says so (a trace
   * without it ended otherwise), with the calls other threads are still
   * inside. */
  uint64_t t = nsp_now_ns();
  nsp_files_ring_exited(t);
  struct nsp_rec *r = nsp_ring_reserve();
  if (r) {
    r->kind = NSP_REC_EXIT;
    nsp_rec_exit_set_t(r, t);
    nsp_rec_exit_set_inflight(r, nsp_flight_count_others());
    nsp_rec_exit_set_status(r, nsp_writer_exit_status);
    nsp_ring_commit(r);
  }
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

void nsp_writer_start(void) {
  pthread_mutex_lock(&nsp_start_lock);
  if (atomic_load_explicit(&nsp_writer_started, memory_order_relaxed)) {
    pthread_mutex_unlock(&nsp_start_lock);
    return;
  }
  int saved = errno;
  if (!nsp_cfg.read) read_settings();
  /* The NCCL version goes in the header; ask before the first record. */
  ncclResult_t (*get_version)(int *) = (ncclResult_t(*)(int *))nsp_resolve(NSP_API_GetVersion);
  int v = 0;
  nsp_wrappers_depth++;
  if (get_version && get_version(&v) == 0) nsp_nccl_version = v;
  nsp_wrappers_depth--;
  struct nsp_rec_ext *proc = nsp_env_snapshot(nsp_nccl_version);
  /* The files are made here, once, on the first caller's thread: then the
   * ring exists in its file before the first record. */
  char host[NSP_HOST_MAX] = "";
  if (proc && proc->host) snprintf(host, sizeof host, "%s", proc->host);
  uint8_t header[NSP_HEADER_SIZE];
  make_header(header, proc, host[0] ? host : "unknown");
  struct nsp_slot *mapped = NULL;
  if (!nsp_cfg.dir_too_long && nsp_files_open(nsp_cfg.dir, nsp_cfg.mode, host, header, sizeof header) == 0)
    mapped = nsp_files_ring_map(nsp_cfg.ring_slots, proc ? proc->realtime_ns : 0, nsp_cfg.ring_file);
  if (nsp_ring_open(nsp_cfg.ring_slots, mapped) == 0) {
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
      nsp_ring_close();
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
      nsp_resolve_started(); /* LIBNCCL records seen before */
      /* Once the ring exists: a fatal signal's record has somewhere to go. */
      nsp_signal_install();
      /* Once per process (a forked child keeps the handler). */
      static int exit_noted;
      if (!exit_noted && on_exit(note_exit_status, NULL) == 0) exit_noted = 1;
    }
  } else {
    free(proc);
    nsp_files_close(1);
    nsp_files_forget();
  }
  atomic_store_explicit(&nsp_writer_started, 1, memory_order_release);
  errno = saved;
  pthread_mutex_unlock(&nsp_start_lock);
}
