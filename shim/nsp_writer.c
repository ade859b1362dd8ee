/* nsp_writer.c - the ring between wrappers and disk, and the writer thread.
 *
 * Wrappers never wait on disk: they put a record in a bounded lock-free
 * ring (Vyukov's bounded MPMC queue, used here with one consumer) and
 * return.  When the ring is full the record is dropped and counted.  A
 * background thread drains the ring, encodes records, and writes one zstd
 * frame at least every NCCLSPY_FLUSH_MS and at exit.
 *
 * Settings (read once, at the first NCCL call):
 *   NCCLSPY_DIR        where traces go; default ./ncclspy-trace, made if missing
 *   NCCLSPY_FLUSH_MS   longest time a record waits in memory; default 1000
 *   NCCLSPY_RING       ring slots (power of two, 128 bytes each); default 65536
 *   NCCLSPY_LEVEL      zstd level; default 3
 *   NCCLSPY_MAX_MB     stop writing past this file size (0: no cap); default 0
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
#include "nsp_shim.h"

extern char **environ;

struct nsp_slot {
  _Atomic uint64_t seq;
  struct nsp_rec rec;
} __attribute__((aligned(128)));

_Static_assert(sizeof(struct nsp_slot) == 128, "ring slots are 128 bytes");

_Atomic int nsp_started;
static pthread_mutex_t nsp_start_lock = PTHREAD_MUTEX_INITIALIZER;
static struct nsp_slot *nsp_ring;
static size_t nsp_ring_size;
static _Atomic uint64_t nsp_ring_head;
static uint64_t nsp_ring_tail; /* writer thread only */
static _Atomic uint64_t nsp_ring_dropped;
static _Atomic int nsp_ring_full_warned;

static pthread_t nsp_writer_thread;
static int nsp_writer_running;
static pid_t nsp_writer_pid;
static _Atomic int nsp_writer_stop;

static struct {
  char dir[PATH_MAX];
  uint64_t flush_ns;
  int level;
  uint64_t max_bytes;
} nsp_cfg;

/* ---- ring ---- */

struct nsp_rec *nsp_ring_reserve(void) {
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
      nsp_warn_once(&nsp_ring_full_warned,
                    "the trace writer fell behind; records are being dropped and counted "
                    "(raise NCCLSPY_RING)");
      return NULL;
    } else {
      pos = atomic_load_explicit(&nsp_ring_head, memory_order_relaxed);
    }
  }
}

void nsp_ring_commit(struct nsp_rec *rec) {
  struct nsp_slot *s = (struct nsp_slot *)((char *)rec - offsetof(struct nsp_slot, rec));
  uint64_t seq = atomic_load_explicit(&s->seq, memory_order_relaxed);
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
  free((void *)r->last_error);
  free((void *)r->ext); /* one block with its strings */
  r->last_error = NULL;
  r->ext = NULL;
}

static void ring_init(void) {
  for (size_t i = 0; i < nsp_ring_size; i++) atomic_store_explicit(&nsp_ring[i].seq, i, memory_order_relaxed);
  atomic_store(&nsp_ring_head, 0);
  nsp_ring_tail = 0;
}

/* ---- settings ---- */

static uint64_t env_u64(const char *name, uint64_t def, uint64_t lo, uint64_t hi) {
  const char *v = getenv(name);
  if (!v || !*v) return def;
  char *end;
  errno = 0;
  unsigned long long x = strtoull(v, &end, 10);
  if (errno || *end || x < lo || x > hi) {
    nsp_warn("%s=%s is not a number in [%llu, %llu]; using %llu", name, v, (unsigned long long)lo,
             (unsigned long long)hi, (unsigned long long)def);
    return def;
  }
  return x;
}

static void read_settings(void) {
  const char *dir = getenv("NCCLSPY_DIR");
  snprintf(nsp_cfg.dir, sizeof nsp_cfg.dir, "%s", dir && *dir ? dir : "ncclspy-trace");
  nsp_cfg.flush_ns = env_u64("NCCLSPY_FLUSH_MS", 1000, 1, 3600000) * 1000000u;
  nsp_cfg.level = (int)env_u64("NCCLSPY_LEVEL", 3, 1, 19);
  nsp_cfg.max_bytes = env_u64("NCCLSPY_MAX_MB", 0, 0, 1u << 30) << 20;
  uint64_t ring = env_u64("NCCLSPY_RING", 65536, 64, 1u << 24);
  nsp_ring_size = 64;
  while (nsp_ring_size < ring) nsp_ring_size <<= 1;
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
  x->tracking = nsp_done_tracking();
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

struct nsp_file {
  int fd;
  char path[PATH_MAX + 128]; /* room for dir + name; open() refuses what is too long */
  char host[NSP_HOST_MAX];
  uint64_t size;
  int renamed;
  int failed; /* writes stopped: records are counted, not written */
  ZSTD_CCtx *cctx;
  struct nsp_buf frame, out;
  struct nsp_codec codec;
  uint64_t frame_records;
  uint64_t last_flush;
  uint64_t dropped_written; /* ring drops already reported */
  uint64_t lost;            /* records lost to write errors or the cap, not yet reported */
  uint32_t lost_reason;
  _Atomic int warned;
};

/* mkdir -p with mode 0700 for what we create. */
static int make_dir(const char *dir) {
  char tmp[PATH_MAX];
  snprintf(tmp, sizeof tmp, "%s", dir);
  for (char *p = tmp + 1; *p; p++) {
    if (*p != '/') continue;
    *p = 0;
    if (mkdir(tmp, 0700) < 0 && errno != EEXIST) return -1;
    *p = '/';
  }
  if (mkdir(tmp, 0700) < 0 && errno != EEXIST) return -1;
  struct stat st;
  if (lstat(tmp, &st) < 0) return -1;
  if (!S_ISDIR(st.st_mode)) {
    errno = ENOTDIR;
    return -1;
  }
  return 0;
}

static int write_all(int fd, const void *buf, size_t len) {
  const char *p = buf;
  while (len) {
    ssize_t w = write(fd, p, len);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    p += w;
    len -= (size_t)w;
  }
  return 0;
}

static void put_le(uint8_t *p, uint64_t v, int n) {
  for (int i = 0; i < n; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static int file_open(struct nsp_file *f, const struct nsp_rec_ext *proc) {
  f->fd = -1;
  snprintf(f->host, sizeof f->host, "%s", proc && proc->host[0] ? proc->host : "unknown");
  if (make_dir(nsp_cfg.dir) < 0) {
    nsp_warn("cannot create trace directory %s: %s; tracing is off for this process", nsp_cfg.dir,
             strerror(errno));
    return -1;
  }
  for (int attempt = 0; attempt < 100 && f->fd < 0; attempt++) {
    if (attempt)
      snprintf(f->path, sizeof f->path, "%s/%s.%d.%d.ncclspy", nsp_cfg.dir, f->host, (int)getpid(), attempt);
    else
      snprintf(f->path, sizeof f->path, "%s/%s.%d.ncclspy", nsp_cfg.dir, f->host, (int)getpid());
    f->fd = open(f->path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (f->fd < 0 && errno != EEXIST) break;
  }
  if (f->fd < 0) {
    nsp_warn("cannot create a trace file in %s: %s; tracing is off for this process", nsp_cfg.dir,
             strerror(errno));
    return -1;
  }
  uint8_t h[NSP_HEADER_SIZE] = {0};
  memcpy(h, NSP_MAGIC, 8);
  put_le(h + 8, NSP_FORMAT_MAJOR, 2);
  put_le(h + 10, NSP_FORMAT_MINOR, 2);
  put_le(h + 12, NSP_HEADER_SIZE, 4);
  put_le(h + 16, proc ? proc->realtime_ns : 0, 8);
  put_le(h + 24, proc ? proc->monotonic_ns : 0, 8);
  put_le(h + 32, (uint64_t)getpid(), 4);
  put_le(h + 36, (uint32_t)nsp_nccl_version, 4);
  put_le(h + 40, proc && (proc->tracking & NSP_TRACK_TIMING) ? 0 : NSP_HDR_NO_TIMING, 4);
  memcpy(h + 48, f->host, strnlen(f->host, NSP_HOST_MAX - 1));
  if (write_all(f->fd, h, sizeof h) < 0) {
    nsp_warn("cannot write %s: %s; tracing is off for this process", f->path, strerror(errno));
    close(f->fd);
    unlink(f->path);
    f->fd = -1;
    return -1;
  }
  f->size = sizeof h;
  f->cctx = ZSTD_createCCtx();
  if (f->cctx) ZSTD_CCtx_setParameter(f->cctx, ZSTD_c_compressionLevel, nsp_cfg.level);
  if (f->cctx) ZSTD_CCtx_setParameter(f->cctx, ZSTD_c_checksumFlag, 1);
  return f->cctx ? 0 : -1;
}

/* Renames the file once its rank is known, so a directory of traces reads
 * like the job: host.pid.rank3.ncclspy. */
static void file_name_rank(struct nsp_file *f, int rank) {
  if (f->renamed || f->fd < 0 || rank < 0) return;
  f->renamed = 1;
  char to[PATH_MAX + 128];
  snprintf(to, sizeof to, "%s/%s.%d.rank%d.ncclspy", nsp_cfg.dir, f->host, (int)getpid(), rank);
  if (renameat2(AT_FDCWD, f->path, AT_FDCWD, to, RENAME_NOREPLACE) == 0) snprintf(f->path, sizeof f->path, "%s", to);
}

static void note_lost(struct nsp_file *f, uint64_t n, uint32_t reason) {
  f->lost += n;
  f->lost_reason = reason;
}

/* Compresses and writes the frame being built.  On failure the file is cut
 * back to its last whole frame and the frame's records are counted lost. */
static void file_flush(struct nsp_file *f) {
  f->last_flush = nsp_now_ns();
  if (!f->frame.len) return;
  uint64_t nrec = f->frame_records;
  size_t bound = ZSTD_compressBound(f->frame.len);
  if (f->fd < 0 || f->failed || nsp_buf_reserve(&f->out, bound) < 0) {
    note_lost(f, nrec, NSP_DROP_WRITE_ERROR);
    goto reset;
  }
  size_t c = ZSTD_compress2(f->cctx, f->out.data, f->out.cap, f->frame.data, f->frame.len);
  if (ZSTD_isError(c)) {
    note_lost(f, nrec, NSP_DROP_WRITE_ERROR);
    goto reset;
  }
  if (nsp_cfg.max_bytes && f->size + c > nsp_cfg.max_bytes) {
    nsp_warn_once(&f->warned, "%s reached NCCLSPY_MAX_MB; further records are counted, not written",
                  f->path);
    note_lost(f, nrec, NSP_DROP_SIZE_CAP);
    goto reset;
  }
  if (write_all(f->fd, f->out.data, c) < 0) {
    int err = errno;
    if (ftruncate(f->fd, (off_t)f->size) == 0) lseek(f->fd, (off_t)f->size, SEEK_SET);
    nsp_warn_once(&f->warned, "cannot write %s: %s; records are counted, not written", f->path,
                  strerror(err));
    note_lost(f, nrec, NSP_DROP_WRITE_ERROR);
    goto reset;
  }
  f->size += c;
reset:
  f->frame.len = 0;
  f->frame_records = 0;
  nsp_codec_reset(&f->codec);
}

static void file_add(struct nsp_file *f, const struct nsp_rec *r) {
  if (r->kind == NSP_REC_COMM && r->ext && (r->result == ncclSuccess || r->result == ncclInProgress))
    file_name_rank(f, r->ext->rank);
  if (nsp_encode(&f->frame, &f->codec, r) == 0) f->frame_records++;
  else note_lost(f, 1, NSP_DROP_WRITE_ERROR);
}

/* Reports drops in the frame being built, so the count survives with it. */
static void file_add_drops(struct nsp_file *f) {
  uint64_t d = atomic_load_explicit(&nsp_ring_dropped, memory_order_relaxed);
  if (d != f->dropped_written) {
    struct nsp_rec r = {.kind = NSP_REC_DROPPED, .count = d - f->dropped_written,
                        .aux = NSP_DROP_RING_FULL, .t_enter = nsp_now_ns()};
    f->dropped_written = d;
    file_add(f, &r);
  }
  if (f->lost && !f->failed) {
    struct nsp_rec r = {.kind = NSP_REC_DROPPED, .count = f->lost, .aux = f->lost_reason,
                        .t_enter = nsp_now_ns()};
    f->lost = 0;
    file_add(f, &r);
  }
}

/* Moves every committed record from the ring into the frame.  Returns the
 * number taken. */
static size_t drain(struct nsp_file *f) {
  size_t n = 0, mask = nsp_ring_size - 1;
  for (;;) {
    struct nsp_slot *s = &nsp_ring[nsp_ring_tail & mask];
    uint64_t seq = atomic_load_explicit(&s->seq, memory_order_acquire);
    if (seq != nsp_ring_tail + 1) break;
    if (f->fd >= 0) file_add(f, &s->rec);
    nsp_rec_release(&s->rec);
    atomic_store_explicit(&s->seq, nsp_ring_tail + nsp_ring_size, memory_order_release);
    nsp_ring_tail++;
    n++;
    if (f->frame.len >= (1u << 20)) file_flush(f);
  }
  return n;
}

static void *writer_main(void *arg) {
  struct nsp_rec_ext *proc = arg;
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, NULL); /* signals belong to the program */

  struct nsp_file f;
  memset(&f, 0, sizeof f);
  if (file_open(&f, proc) < 0) {
    if (f.fd >= 0) close(f.fd);
    f.fd = -1;
  }
  free(proc); /* the ring holds its own copy in the PROCESS record */
  f.last_flush = nsp_now_ns();
  for (;;) {
    int stop = atomic_load_explicit(&nsp_writer_stop, memory_order_acquire);
    size_t n = drain(&f);
    if (n || f.lost) file_add_drops(&f);
    if (stop || (f.frame.len && nsp_now_ns() - f.last_flush >= nsp_cfg.flush_ns)) {
      file_add_drops(&f);
      file_flush(&f);
    }
    if (stop) break;
    if (!n) {
      struct timespec ts = {0, 2000000}; /* 2 ms: cheap, and a record waits little */
      nanosleep(&ts, NULL);
    }
  }
  if (f.fd >= 0) close(f.fd);
  ZSTD_freeCCtx(f.cctx);
  nsp_buf_free(&f.frame);
  nsp_buf_free(&f.out);
  nsp_codec_free(&f.codec);
  return NULL;
}

/* ---- start, exit, fork ---- */

static void at_fork_prepare(void) { pthread_mutex_lock(&nsp_start_lock); }
static void at_fork_parent(void) { pthread_mutex_unlock(&nsp_start_lock); }
static void at_fork_child(void) {
  /* The writer thread did not come along: the child starts its own, with
   * its own file, at its first NCCL call; the parent's pending records
   * stay the parent's. */
  if (nsp_ring) ring_init(); /* records owned by the parent leak here, once */
  nsp_writer_running = 0;
  atomic_store(&nsp_writer_stop, 0);
  atomic_store(&nsp_ring_dropped, 0);
  atomic_store(&nsp_started, 0);
  pthread_mutex_unlock(&nsp_start_lock);
}

static void writer_stop(void) {
  if (!nsp_writer_running || nsp_writer_pid != getpid()) return;
  nsp_done_stop(); /* its last completions go in the last frame */
  nsp_writer_running = 0;
  atomic_store_explicit(&nsp_writer_stop, 1, memory_order_release);
  /* Bounded: a writer stuck on a dead filesystem must not hold up exit. */
  struct timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += 5;
  if (pthread_timedjoin_np(nsp_writer_thread, NULL, &deadline) != 0)
    nsp_warn("the trace writer did not finish within 5 s at exit; the trace may lack its last second");
}

__attribute__((destructor)) static void nsp_fini(void) { writer_stop(); }

void nsp_start(void) {
  static int atfork_done;
  pthread_mutex_lock(&nsp_start_lock);
  if (atomic_load_explicit(&nsp_started, memory_order_relaxed)) {
    pthread_mutex_unlock(&nsp_start_lock);
    return;
  }
  if (!atfork_done) {
    atfork_done = 1;
    pthread_atfork(at_fork_prepare, at_fork_parent, at_fork_child);
  }
  int saved = errno;
  if (!nsp_ring) {
    read_settings();
    void *m = mmap(NULL, nsp_ring_size * sizeof(struct nsp_slot), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
      nsp_warn("cannot allocate the record ring (%zu slots): %s; tracing is off", nsp_ring_size,
               strerror(errno));
    } else {
      nsp_ring = m;
      ring_init();
    }
  }
  if (nsp_ring) {
    /* The NCCL version goes in the header; ask before the first record. */
    ncclResult_t (*get_version)(int *) = (ncclResult_t(*)(int *))nsp_real(NSP_API_GetVersion);
    int v = 0;
    nsp_depth++;
    if (get_version && get_version(&v) == 0) nsp_nccl_version = v;
    nsp_depth--;
    struct nsp_rec_ext *proc = process_snapshot();
    struct nsp_rec_ext *copy = NULL;
    if (proc) {
      /* The header needs the clock pair; the ring keeps the record. */
      copy = malloc(sizeof *copy);
      if (copy) *copy = *proc;
    }
    nsp_ring_tail = 0;
    atomic_store(&nsp_writer_stop, 0);
    nsp_writer_pid = getpid();
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 << 10);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int err = pthread_create(&nsp_writer_thread, &attr, writer_main, copy);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    if (err) {
      nsp_warn("cannot start the trace writer thread: %s; tracing is off", strerror(err));
      free(copy);
      free(proc);
      munmap(nsp_ring, nsp_ring_size * sizeof(struct nsp_slot));
      nsp_ring = NULL;
    } else {
      nsp_writer_running = 1;
      atomic_store_explicit(&nsp_started, 1, memory_order_release);
      struct nsp_rec *r = proc ? nsp_ring_reserve() : NULL;
      if (r) {
        r->kind = NSP_REC_PROCESS;
        r->ext = proc;
        nsp_ring_commit(r);
      } else {
        free(proc);
      }
    }
  }
  atomic_store_explicit(&nsp_started, 1, memory_order_release);
  errno = saved;
  pthread_mutex_unlock(&nsp_start_lock);
}
