/* nsp_files.c - the trace directory, the trace file and its crash ring.
 *
 * Safety of the files (docs/FORMAT.md, "Files"):
 *  - The directory is walked one component at a time with O_NOFOLLOW.  A
 *    symbolic link on the way is followed only when root or this user owns
 *    it (the rule of fs.protected_symlinks), so a link that another user
 *    planted in /tmp cannot redirect traces; such a path is refused with
 *    one warning.  Missing components are created with mode 0700 (or the
 *    NCCLSPY_MODE equivalent), set exactly with fchmod, whatever the umask.
 *  - Files are created with openat(dirfd, O_CREAT | O_EXCL | O_NOFOLLOW |
 *    O_CLOEXEC), mode 0600 (or NCCLSPY_MODE), so an existing file or
 *    symlink at the name is never opened.  All later operations use the
 *    directory descriptor, so renaming a directory of the path afterwards
 *    cannot move them elsewhere.
 *  - A file appears under its final name complete: it is written under
 *    "<name>.tmp" first and renamed without replacing anything.
 *
 * The crash ring (include/ncclspy/trace.h, "The crash ring") is mapped
 * MAP_SHARED from "<trace>.ring", preallocated, and touched page by page
 * here, so wrappers never fault on a hole, never raise SIGBUS on a full
 * disk and never wait for a read from disk.  It is used only on local
 * filesystems where that holds (ext2/3/4, xfs, tmpfs); elsewhere (network
 * and copy-on-write filesystems, where a store to a mapped page can wait
 * on the network or fault when the disk is full) the ring stays in
 * anonymous memory unless NCCLSPY_RING_FILE=on. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "nsp_io.h"
#include "nsp_shim.h"

struct nsp_files nsp_files = {.dirfd = -1, .fd = -1};
_Atomic int nsp_files_disk_warned;
static _Atomic int nsp_ring_warned;

static struct nsp_ring_header *nsp_rh; /* the mapped ring file, or NULL */
static size_t nsp_rh_bytes;
static uint8_t *nsp_blobs;             /* blob area in the mapping */
static uint32_t nsp_nblobs;
static pthread_mutex_t nsp_blob_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t nsp_blob_used;         /* blob slots in use (under the lock) */
static uint32_t nsp_blob_hint;         /* where the next search starts (under the lock) */

#define NSP_RING_HEADER_BYTES 4096u
#define NSP_BLOB_SLOT 512u
#define NSP_BLOB_SLOTS 512u
#define NSP_BLOB_HEAD ((uint32_t)sizeof(struct nsp_ring_blob))
#define NSP_BLOB_CONT_HEAD 8u
/* After the NSP_BLOB_SLOTS the allocator below hands out: a fixed run of
 * blob slots per signal area (nsp_signal.c), which the signal handler
 * writes without the lock. */
#define NSP_SIG_RESERVE ((uint32_t)NSP_SIG_AREAS * NSP_SIG_BLOB_SLOTS)

_Static_assert(sizeof(struct nsp_ring_header) == 512, "ring header layout");
_Static_assert(offsetof(struct nsp_ring_header, written) == 72, "ring header layout");
_Static_assert(offsetof(struct nsp_ring_header, fields) == 256, "ring header layout");
_Static_assert(offsetof(struct nsp_ring_header, heartbeat_mono_ns) == 120, "ring header layout");
_Static_assert(offsetof(struct nsp_ring_header, inflight_offset) == 144, "ring header layout");
_Static_assert(sizeof(struct nsp_ring_inflight) == 128, "in-flight entry layout");
_Static_assert(offsetof(struct nsp_ring_inflight, call) == 16, "in-flight entry layout");
_Static_assert(sizeof(struct nsp_ring_blob) == 32, "blob header layout");

/* ---- the directory ---- */

/* True when a symlink owned by uid may be followed. */
static int trusted_owner(uid_t uid) { return uid == 0 || uid == geteuid(); }

/* Opens (O_PATH) or creates one component `name` under `at`.  Returns an
 * fd or -1 with errno set; *why names a refused symlink. */
static int open_component(int at, const char *name, mode_t dmode, int *refused_link) {
  int fd = openat(at, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0) return fd;
  if (errno == ENOENT) {
    if (mkdirat(at, name, 0700) == 0) {
      /* Ours: set the mode exactly (the umask may have cut it). */
      fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (fd >= 0) {
        if (fchmod(fd, dmode) < 0) { /* keep 0700 */ }
        int p = openat(fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
        close(fd);
        return p;
      }
      return -1;
    }
    if (errno != EEXIST) return -1;
    /* Another rank made it meanwhile. */
    fd = openat(at, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) return fd;
  }
  if (errno != ELOOP && errno != ENOTDIR) return -1;
  struct stat st;
  if (fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) < 0) return -1;
  if (!S_ISLNK(st.st_mode)) {
    errno = ENOTDIR;
    return -1;
  }
  if (!trusted_owner(st.st_uid)) {
    *refused_link = (int)st.st_uid;
    errno = ELOOP;
    return -1;
  }
  return openat(at, name, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

/* Opens dir (creating what is missing) as an O_PATH descriptor. */
static int open_dir(const char *dir, mode_t dmode, int *refused_link, char *bad, size_t badlen) {
  char path[PATH_MAX];
  if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path) {
    errno = ENAMETOOLONG;
    return -1;
  }
  int fd = open(path[0] == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
  char *save = NULL;
  for (char *c = strtok_r(path, "/", &save); c && fd >= 0; c = strtok_r(NULL, "/", &save)) {
    if (!strcmp(c, ".")) continue;
    int next = open_component(fd, c, dmode, refused_link);
    int err = errno;
    close(fd);
    fd = next;
    errno = err;
    if (fd < 0) snprintf(bad, badlen, "%s", c);
  }
  return fd;
}

/* ---- creating files ---- */

/* Publishes tmp as name without replacing anything.  Returns 0, or -1 with
 * errno (EEXIST: name is taken). */
static int publish(int dirfd, const char *tmp, const char *name) {
  if (renameat2(dirfd, tmp, dirfd, name, RENAME_NOREPLACE) == 0) return 0;
  if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP) return -1;
  /* Filesystems without RENAME_NOREPLACE: link() fails on an existing name. */
  if (linkat(dirfd, tmp, dirfd, name, 0) < 0) return -1;
  unlinkat(dirfd, tmp, 0);
  return 0;
}

/* Signals raised by our own file operations on the caller's thread: a
 * write past RLIMIT_FSIZE raises SIGXFSZ at the writing thread, which
 * would kill the program.  Block it around them and take back one we
 * caused. */
struct nsp_xfsz_guard {
  sigset_t old;
  int was_pending;
};
static void xfsz_block(struct nsp_xfsz_guard *g) {
  sigset_t s, pend;
  sigemptyset(&s);
  sigaddset(&s, SIGXFSZ);
  pthread_sigmask(SIG_BLOCK, &s, &g->old);
  sigpending(&pend);
  g->was_pending = sigismember(&pend, SIGXFSZ) == 1;
}
static void xfsz_restore(struct nsp_xfsz_guard *g) {
  sigset_t s, pend;
  sigemptyset(&s);
  sigaddset(&s, SIGXFSZ);
  sigpending(&pend);
  if (!g->was_pending && sigismember(&pend, SIGXFSZ) == 1) {
    struct timespec zero = {0, 0};
    sigtimedwait(&s, NULL, &zero);
  }
  pthread_sigmask(SIG_SETMASK, &g->old, NULL);
}

/* Whether `bytes` more may go into a file without passing RLIMIT_FSIZE. */
static int under_fsize_limit(uint64_t bytes) {
  struct rlimit rl;
  return getrlimit(RLIMIT_FSIZE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY || bytes <= rl.rlim_cur;
}

static int is_disk_error(int err) { return err == ENOSPC || err == EDQUOT || err == EFBIG; }

int nsp_files_open(const char *dir, mode_t fmode, const char *host_in, const void *header,
                   size_t hlen) {
  struct nsp_files *o = &nsp_files;
  mode_t dmode = fmode | ((fmode & 0444) >> 2) | 0700;
  int refused = -1;
  char bad[NAME_MAX + 1] = "";
  char host[NSP_HOST_MAX];
  snprintf(host, sizeof host, "%s", host_in && host_in[0] ? host_in : "unknown");
  for (char *p = host; *p; p++)
    if (*p == '/') *p = '_';
  o->dirfd = open_dir(dir, dmode, &refused, bad, sizeof bad);
  if (o->dirfd < 0) {
    if (refused >= 0)
      nsp_warn_once(&nsp_files_disk_warned,
                    "refusing trace directory %s: \"%s\" is a symbolic link owned by uid %d (not "
                    "root or you); tracing is off for this process",
                    dir, bad, refused);
    else
      nsp_warn_once(&nsp_files_disk_warned,
                    "cannot open or create trace directory %s: %s; tracing is off for this process",
                    dir, strerror(errno));
    return -1;
  }
  snprintf(o->dir, sizeof o->dir, "%s", dir);
  snprintf(o->host, sizeof o->host, "%s", host);
  o->mode = fmode;
  struct nsp_xfsz_guard g;
  xfsz_block(&g);
  int err = 0;
  if (!under_fsize_limit(hlen)) err = EFBIG;
  for (int attempt = 0; !err && attempt < 100 && o->fd < 0; attempt++) {
    char tmp[sizeof o->name + 8];
    if (attempt)
      snprintf(o->name, sizeof o->name, "%s.%d.%d.ncclspy", host, (int)getpid(), attempt);
    else
      snprintf(o->name, sizeof o->name, "%s.%d.ncclspy", host, (int)getpid());
    if (snprintf(tmp, sizeof tmp, "%s.tmp", o->name) >= (int)sizeof tmp) break;
    int fd = openat(o->dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, fmode);
    if (fd < 0) {
      if (errno == EEXIST) continue;
      err = errno;
      break;
    }
    if (fchmod(fd, fmode) < 0 || nsp_write_all(fd, header, hlen) < 0) {
      err = errno;
      close(fd);
      unlinkat(o->dirfd, tmp, 0);
      break;
    }
    if (publish(o->dirfd, tmp, o->name) < 0) {
      int e = errno;
      close(fd);
      unlinkat(o->dirfd, tmp, 0);
      if (e == EEXIST) continue;
      err = e;
      break;
    }
    o->fd = fd;
  }
  xfsz_restore(&g);
  if (o->fd < 0) {
    nsp_warn_once(&nsp_files_disk_warned,
                  "cannot create a trace file in %s: %s; tracing is off for this process", dir,
                  strerror(err ? err : EEXIST));
    close(o->dirfd);
    o->dirfd = -1;
    return -1;
  }
  return 0;
}

/* ---- the crash ring ---- */

/* Filesystems on which a store to a preallocated MAP_SHARED page neither
 * allocates disk space nor waits for a network. */
static int ring_safe_fs(int fd, char *what, size_t len) {
  struct statfs sf;
  if (fstatfs(fd, &sf) < 0) {
    snprintf(what, len, "an unknown filesystem");
    return 0;
  }
  switch ((unsigned long)sf.f_type) {
    case 0xEF53UL:     /* ext2, ext3, ext4 */
    case 0x58465342UL: /* xfs */
    case 0x01021994UL: /* tmpfs */
      return 1;
    default:
      snprintf(what, len, "filesystem type 0x%lx", (unsigned long)sf.f_type);
      return 0;
  }
}

static void add_field(struct nsp_ring_header *h, int id, size_t off, size_t size, int is_signed) {
  struct nsp_ring_field *f = &h->fields[h->nfields++];
  f->id = (uint16_t)id;
  f->offset = (uint16_t)off;
  f->size = (uint8_t)size;
  f->is_signed = (uint8_t)is_signed;
}

/* The field table describes struct nsp_rec's members (NSP_REC_SLOTS). */
#define NSP_RING_FIELD_(ID, member, type, is_signed, ring_default)                          \
  add_field(h, NSP_RF_##ID, offsetof(struct nsp_slot, rec) + offsetof(struct nsp_rec, member), \
            sizeof(((struct nsp_rec *)0)->member), is_signed);

static void fill_header(struct nsp_ring_header *h, size_t nslots, uint64_t trace_realtime) {
  memset(h, 0, sizeof *h);
  h->major = NSP_RING_MAJOR;
  h->minor = NSP_RING_MINOR;
  h->header_size = NSP_RING_HEADER_BYTES;
  h->byte_order = NSP_RING_BYTE_ORDER;
  h->slot_size = sizeof(struct nsp_slot);
  h->nslots = nslots;
  h->ring_offset = NSP_RING_HEADER_BYTES;
  h->blob_offset = NSP_RING_HEADER_BYTES + nslots * sizeof(struct nsp_slot);
  h->blob_slot_size = NSP_BLOB_SLOT;
  h->nblob_slots = NSP_BLOB_SLOTS + NSP_SIG_RESERVE;
  h->pid = (uint32_t)getpid();
  h->trace_realtime_ns = trace_realtime;
  /* The in-flight table fills the header's bytes past the struct. */
  h->inflight_offset = (uint32_t)sizeof *h;
  h->inflight_size = (uint32_t)sizeof(struct nsp_ring_inflight);
  h->ninflight = (NSP_RING_HEADER_BYTES - (uint32_t)sizeof *h) / h->inflight_size;
  NSP_REC_SLOTS(NSP_RING_FIELD_)
  /* The magic last: a file with it is a whole header. */
  memcpy(h->magic, NSP_RING_MAGIC, 8);
}

struct nsp_slot *nsp_files_ring_map(size_t nslots, uint64_t trace_realtime, int policy) {
  struct nsp_files *o = &nsp_files;
  if (policy == NSP_RING_FILE_OFF || o->dirfd < 0) return NULL;
  size_t bytes = NSP_RING_HEADER_BYTES + nslots * sizeof(struct nsp_slot) +
                 (size_t)(NSP_BLOB_SLOTS + NSP_SIG_RESERVE) * NSP_BLOB_SLOT;
  char tmp[sizeof o->name + 16], name[sizeof o->name + 8], what[64] = "";
  if (snprintf(name, sizeof name, "%s.ring", o->name) >= (int)sizeof name ||
      snprintf(tmp, sizeof tmp, "%s.ring.tmp", o->name) >= (int)sizeof tmp)
    return NULL;
  struct nsp_xfsz_guard g;
  xfsz_block(&g);
  int err = 0, unsafe = 0;
  void *m = MAP_FAILED;
  int fd = openat(o->dirfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, o->mode);
  if (fd < 0) {
    err = errno;
  } else if (policy == NSP_RING_FILE_AUTO && !ring_safe_fs(fd, what, sizeof what)) {
    unsafe = 1;
  } else if (!under_fsize_limit(bytes)) {
    err = EFBIG;
  } else if (fchmod(fd, o->mode) < 0 || (err = posix_fallocate(fd, 0, (off_t)bytes)) != 0) {
    if (!err) err = errno;
  } else if ((m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
    err = errno;
  }
  if (m != MAP_FAILED) {
    /* All pages in, writable, in one go (Linux >= 5.14); the stores below
     * fault in what this leaves out. */
    madvise(m, bytes, MADV_POPULATE_WRITE);
    struct nsp_ring_header *h = m;
    fill_header(h, nslots, trace_realtime);
    /* Touch the blob area now (the ring is touched by its initialisation):
     * no wrapper ever faults a page in from disk. */
    uint8_t *blobs = (uint8_t *)m + h->blob_offset;
    for (size_t i = 0; i < (size_t)(NSP_BLOB_SLOTS + NSP_SIG_RESERVE) * NSP_BLOB_SLOT; i += 4096)
      __atomic_store_n((uint64_t *)(blobs + i), 0, __ATOMIC_RELAXED);
    if (publish(o->dirfd, tmp, name) < 0) {
      err = errno;
      munmap(m, bytes);
      m = MAP_FAILED;
    }
  }
  if (fd >= 0) close(fd);
  if (m == MAP_FAILED && fd >= 0) unlinkat(o->dirfd, tmp, 0);
  xfsz_restore(&g);
  if (m == MAP_FAILED) {
    if (unsafe)
      nsp_warn_once(&nsp_ring_warned,
                    "%s is on %s: records stay in memory until written (set NCCLSPY_RING_FILE=on to "
                    "keep them in %s/%s.ring anyway); the last %u ms of records may be lost if the "
                    "process is killed",
                    o->dir, what, o->dir, o->name, (unsigned)(nsp_writer_flush_ms()));
    else if (is_disk_error(err))
      nsp_warn_once(&nsp_files_disk_warned,
                    "no room for %s/%s (%zu KiB): %s; tracing goes on, records that cannot be "
                    "written are counted in the trace",
                    o->dir, name, bytes >> 10, strerror(err));
    else
      nsp_warn_once(&nsp_ring_warned,
                    "cannot create %s/%s: %s; records stay in memory until written and the last "
                    "%u ms of them may be lost if the process is killed",
                    o->dir, name, strerror(err), (unsigned)(nsp_writer_flush_ms()));
    return NULL;
  }
  nsp_rh = m;
  nsp_rh_bytes = bytes;
  nsp_blobs = (uint8_t *)m + nsp_rh->blob_offset;
  nsp_nblobs = NSP_BLOB_SLOTS;
  nsp_blob_used = 0;
  nsp_blob_hint = 0;
  o->has_ring = 1;
  nsp_flight_map((struct nsp_ring_inflight *)((uint8_t *)m + nsp_rh->inflight_offset), nsp_rh->ninflight,
                 &nsp_rh->inflight_unslotted);
  return (struct nsp_slot *)((uint8_t *)m + nsp_rh->ring_offset);
}

void nsp_files_ring_heartbeat(uint64_t mono_ns, uint64_t real_ns) {
  if (!nsp_rh) return;
  __atomic_store_n(&nsp_rh->heartbeat_real_ns, real_ns, __ATOMIC_RELAXED);
  __atomic_store_n(&nsp_rh->heartbeat_mono_ns, mono_ns, __ATOMIC_RELEASE);
}

void nsp_files_ring_exited(uint64_t mono_ns) {
  if (nsp_rh) __atomic_store_n(&nsp_rh->exit_mono_ns, mono_ns, __ATOMIC_RELEASE);
}

void nsp_files_ring_dropped(int reason, uint64_t n) {
  if (nsp_rh && reason > 0 && reason < NSP_DROP_END) __atomic_fetch_add(&nsp_rh->dropped[reason], n, __ATOMIC_RELAXED);
}

static uint64_t *blob_state(uint32_t i) { return (uint64_t *)(nsp_blobs + (size_t)i * NSP_BLOB_SLOT); }

/* Copies data of a blob that starts at slot i. */
static void blob_fill(uint32_t i, uint32_t n, const uint8_t *data, size_t len) {
  uint8_t *p = nsp_blobs + (size_t)i * NSP_BLOB_SLOT;
  size_t take = len < NSP_BLOB_SLOT - NSP_BLOB_HEAD ? len : NSP_BLOB_SLOT - NSP_BLOB_HEAD;
  memcpy(p + NSP_BLOB_HEAD, data, take);
  data += take;
  len -= take;
  for (uint32_t k = 1; k < n; k++) {
    p = nsp_blobs + (size_t)(i + k) * NSP_BLOB_SLOT;
    take = len < NSP_BLOB_SLOT - NSP_BLOB_CONT_HEAD ? len : NSP_BLOB_SLOT - NSP_BLOB_CONT_HEAD;
    memcpy(p + NSP_BLOB_CONT_HEAD, data, take);
    __atomic_store_n((uint64_t *)p, NSP_BLOB_CONT, __ATOMIC_RELAXED);
    data += take;
    len -= take;
  }
}

void nsp_files_ring_blob(uint64_t pos, const struct nsp_rec *rec) {
  if (!nsp_rh) return;
  struct nsp_buf b = {0};
  const uint8_t *data;
  size_t len;
  uint32_t type;
  if (rec->ext) {
    struct nsp_codec c = {0}; /* only CALL records use it, and they have no ext */
    int bad = nsp_encode(&b, &c, rec) < 0;
    nsp_codec_free(&c);
    if (bad) {
      __atomic_fetch_add(&nsp_rh->blobs_lost, 1, __ATOMIC_RELAXED);
      nsp_buf_free(&b);
      return;
    }
    data = b.data;
    len = b.len;
    type = NSP_BLOB_RECORD;
  } else {
    data = (const uint8_t *)rec->last_error;
    len = strnlen(rec->last_error, 4096);
    type = NSP_BLOB_TEXT;
  }
  uint32_t n = 1;
  if (len > NSP_BLOB_SLOT - NSP_BLOB_HEAD)
    n += (uint32_t)((len - (NSP_BLOB_SLOT - NSP_BLOB_HEAD) + NSP_BLOB_SLOT - NSP_BLOB_CONT_HEAD - 1) /
                    (NSP_BLOB_SLOT - NSP_BLOB_CONT_HEAD));
  int stored = 0;
  pthread_mutex_lock(&nsp_blob_lock);
  if (n <= nsp_nblobs && nsp_blob_used + n <= nsp_nblobs) {
    /* First fit from the hint, wrapping once. */
    for (uint32_t tries = 0, i = nsp_blob_hint; tries < nsp_nblobs && !stored; tries++) {
      if (i + n > nsp_nblobs) i = 0;
      uint32_t k = 0;
      while (k < n && __atomic_load_n(blob_state(i + k), __ATOMIC_RELAXED) == NSP_BLOB_FREE) k++;
      if (k == n) {
        blob_fill(i, n, data, len);
        struct nsp_ring_blob *hb = (struct nsp_ring_blob *)blob_state(i);
        hb->pos = pos;
        hb->type = type;
        hb->len = (uint32_t)len;
        hb->nslots = n;
        /* READY last: a reader after a crash takes only whole blobs. */
        __atomic_store_n(&hb->state, NSP_BLOB_READY, __ATOMIC_RELEASE);
        nsp_blob_used += n;
        nsp_blob_hint = i + n < nsp_nblobs ? i + n : 0;
        stored = 1;
      } else {
        i += k + 1;
      }
    }
  }
  pthread_mutex_unlock(&nsp_blob_lock);
  if (!stored) __atomic_fetch_add(&nsp_rh->blobs_lost, 1, __ATOMIC_RELAXED);
  nsp_buf_free(&b);
}

/* ---- blobs of signal records: no lock, no allocation ---- */

size_t nsp_files_ring_sig_capacity(void) {
  if (!nsp_rh) return 0;
  return (NSP_BLOB_SLOT - NSP_BLOB_HEAD) + (size_t)(NSP_SIG_BLOB_SLOTS - 1) * (NSP_BLOB_SLOT - NSP_BLOB_CONT_HEAD);
}

int nsp_files_ring_sig_blob(unsigned area, uint64_t pos, const uint8_t *data, size_t len) {
  struct nsp_ring_header *rh = nsp_rh;
  if (!rh || area >= NSP_SIG_AREAS || len > nsp_files_ring_sig_capacity()) return -1;
  uint32_t i = NSP_BLOB_SLOTS + area * NSP_SIG_BLOB_SLOTS, n = 1;
  if (len > NSP_BLOB_SLOT - NSP_BLOB_HEAD)
    n += (uint32_t)((len - (NSP_BLOB_SLOT - NSP_BLOB_HEAD) + NSP_BLOB_SLOT - NSP_BLOB_CONT_HEAD - 1) /
                    (NSP_BLOB_SLOT - NSP_BLOB_CONT_HEAD));
  struct nsp_ring_blob *hb = (struct nsp_ring_blob *)blob_state(i);
  /* Not ready while it changes: a reader after a crash takes only whole blobs. */
  __atomic_store_n(&hb->state, NSP_BLOB_FREE, __ATOMIC_RELEASE);
  blob_fill(i, n, data, len);
  hb->pos = pos;
  hb->type = NSP_BLOB_RECORD;
  hb->len = (uint32_t)len;
  hb->nslots = n;
  __atomic_store_n(&hb->state, NSP_BLOB_READY, __ATOMIC_RELEASE);
  return 0;
}

void nsp_files_ring_sig_clear(unsigned area) {
  if (!nsp_rh || area >= NSP_SIG_AREAS) return;
  __atomic_store_n(blob_state(NSP_BLOB_SLOTS + area * NSP_SIG_BLOB_SLOTS), NSP_BLOB_FREE, __ATOMIC_RELEASE);
}

void nsp_files_ring_written(uint64_t written) {
  if (!nsp_rh) return;
  __atomic_store_n(&nsp_rh->written, written, __ATOMIC_RELEASE);
  pthread_mutex_lock(&nsp_blob_lock);
  for (uint32_t i = 0; nsp_blob_used && i < nsp_nblobs; i++) {
    struct nsp_ring_blob *hb = (struct nsp_ring_blob *)blob_state(i);
    if (__atomic_load_n(&hb->state, __ATOMIC_RELAXED) != NSP_BLOB_READY || hb->pos >= written) continue;
    uint32_t n = hb->nslots;
    __atomic_store_n(&hb->state, NSP_BLOB_FREE, __ATOMIC_RELAXED);
    for (uint32_t k = 1; k < n && i + k < nsp_nblobs; k++)
      __atomic_store_n(blob_state(i + k), NSP_BLOB_FREE, __ATOMIC_RELAXED);
    nsp_blob_used -= n;
  }
  pthread_mutex_unlock(&nsp_blob_lock);
}

/* ---- names and the end ---- */

void nsp_files_rename_rank(int rank) {
  struct nsp_files *o = &nsp_files;
  if (o->renamed || o->fd < 0 || rank < 0) return;
  o->renamed = 1;
  char to[sizeof o->name], ring_from[sizeof o->name + 8], ring_to[sizeof o->name + 8];
  if (snprintf(to, sizeof to, "%s.%d.rank%d.ncclspy", o->host, (int)getpid(), rank) >= (int)sizeof to)
    return;
  if (snprintf(ring_from, sizeof ring_from, "%s.ring", o->name) >= (int)sizeof ring_from) return;
  snprintf(ring_to, sizeof ring_to, "%s.ring", to);
  /* The ring's new name first, as a second link, so that at every moment
   * the trace's name plus ".ring" names the ring. */
  int linked = 0;
  if (o->has_ring) {
    if (linkat(o->dirfd, ring_from, o->dirfd, ring_to, 0) == 0) linked = 1;
    else return; /* keep the old names */
  }
  if (renameat2(o->dirfd, o->name, o->dirfd, to, RENAME_NOREPLACE) != 0) {
    if (linked) unlinkat(o->dirfd, ring_to, 0);
    return;
  }
  if (linked) unlinkat(o->dirfd, ring_from, 0);
  snprintf(o->name, sizeof o->name, "%s", to);
}

void nsp_files_close(int remove_ring) {
  struct nsp_files *o = &nsp_files;
  if (o->has_ring && remove_ring) {
    char name[sizeof o->name + 8];
    if (snprintf(name, sizeof name, "%s.ring", o->name) < (int)sizeof name) unlinkat(o->dirfd, name, 0);
    o->has_ring = 0;
  }
  if (o->fd >= 0) close(o->fd);
  o->fd = -1;
}

void nsp_files_forget(void) {
  struct nsp_files *o = &nsp_files;
  if (o->fd >= 0) close(o->fd);
  if (o->dirfd >= 0) close(o->dirfd);
  o->fd = o->dirfd = -1;
  o->has_ring = 0;
  o->renamed = 0;
  nsp_flight_map(NULL, 0, NULL); /* before the table goes */
  if (nsp_rh) munmap(nsp_rh, nsp_rh_bytes);
  nsp_rh = NULL;
  nsp_blobs = NULL;
}

void nsp_files_atfork(int phase) {
  if (phase == 0) pthread_mutex_lock(&nsp_blob_lock);
  else pthread_mutex_unlock(&nsp_blob_lock);
}
