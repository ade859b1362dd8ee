/* nsp_ringread.c - records recovered from "<trace>.ring" (nsp_ringread.h).
 *
 * Work and memory stay bounded by the file's size whatever it claims:
 * geometry is checked against the size before anything is read, blobs are
 * found through an index (sorted by position and type, binary searched)
 * built once, or a few times for a live ring (NSP_RR_REINDEX), so reading
 * is O(slots + blobs log blobs), and the only
 * allocations are that index (16 bytes per blob header of at least 64
 * bytes: a quarter of the file at most) and one blob's data (at most the
 * blob area). */
#include "nsp_ringread.h"
#include "nsp_schema.h"
#include "nsp_reader.h"
#include "nsp_names.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define NSP_RR_MAX_SLOTS (1ull << 24)
#define NSP_RR_MAX_BLOBS (1u << 20)
/* Times the blob index is built again after a lookup found nothing: the
 * ring of a live process (a hung job) changes under the reader, and a blob
 * stored after the index was built must still be found; bounded, so that a
 * hostile file costs a few passes over its blob area, not one per slot. */
#define NSP_RR_REINDEX 8
/* Bytes of a ring file's header the reader looks at; files are larger. */
#define NSP_RR_MIN_FILE 4096u
/* Offsets of the header fields (struct nsp_ring_header). */
enum {
  RH_MAJOR = 8, RH_HEADER_SIZE = 12, RH_BYTE_ORDER = 16, RH_SLOT_SIZE = 20, RH_NSLOTS = 24,
  RH_RING_OFFSET = 32, RH_BLOB_OFFSET = 40, RH_BLOB_SLOT_SIZE = 48, RH_NBLOBS = 52, RH_PID = 56,
  RH_NFIELDS = 60, RH_REALTIME = 64, RH_WRITTEN = 72, RH_DROPPED = 80, RH_FIELDS = 256,
  /* ring minor 1 */
  RH_MINOR = 10, RH_HEARTBEAT_MONO = 120, RH_HEARTBEAT_REAL = 128, RH_EXIT_MONO = 136, RH_INFLIGHT_OFFSET = 144,
  RH_NINFLIGHT = 148, RH_INFLIGHT_SIZE = 152, RH_INFLIGHT_UNSLOTTED = 156,
};
/* Entries of an in-flight table a reader looks at (the shim has 28). */
#define NSP_RR_MAX_INFLIGHT 1024u
/* Tries at an entry of a live process that changes while it is copied. */
#define NSP_RR_INFLIGHT_TRIES 16

/* One blob header of the blob area, for the index. */
struct nsp_rr_blob {
  uint64_t pos;
  uint32_t type;
  uint32_t slot; /* blob slot index; with bit 31 set: its header is unusable */
};
#define NSP_RR_BAD_BLOB 0x80000000u

struct nsp_ringread {
  const uint8_t *map;
  size_t len;
  size_t map_len; /* nonzero when map is our mmap */
  uint64_t nslots, slot_size, ring_offset, blob_offset, written, dropped[NSP_DROP_SLOTS];
  uint32_t blob_slot_size, nblobs;
  struct {
    uint16_t offset;
    uint8_t size, is_signed, have;
  } f[NSP_RF_END_];
  int begun;
  unsigned minor; /* the trace's format minor: fields newer than it read as their defaults */
  /* The in-flight table (ring minor 1), checked against the header's
   * bytes; ninflight 0 when the ring has none.  After the slots and the
   * drops: the RINGSTATE record (state 0 -> 1), then one INFLIGHT per
   * call in flight, copied at RINGSTATE time (flight[], nflight). */
  uint64_t inflight_offset, inflight_size;
  uint32_t ninflight;
  int state_done;
  struct nsp_inflight_call *flight;
  uint32_t *flight_tid;
  uint32_t nflight, flight_next;
  struct nsp_rec_ext flight_ext;
  uint64_t pos, end;
  int drop_reason; /* next reason whose drops to report, 1..3; 4 done */
  uint64_t drop_left[NSP_DROP_SLOTS];
  uint64_t recovered, lost, damaged;
  struct nsp_codec codec;
  struct nsp_dec_store store;
  uint8_t *blob; /* one blob's data, contiguous */
  uint64_t blob_at; /* the byte offset of the blob find_blob found last */
  size_t blob_cap;
  /* The blob index, built at the first lookup: usable and unusable
   * headers, by (pos, type, slot). */
  struct nsp_rr_blob *bidx;
  size_t nbidx;
  int indexed; /* 0 not yet, 1 built, -1 no memory for it */
  int reindexed; /* times built again after a miss (NSP_RR_REINDEX) */
  /* The caller's note, for damage found while reading. */
  char *note;
  size_t notelen;
  char *path; /* the ring file's name, as notes give it */
  char damage_first[200]; /* what the first damage was, with its byte offset */
  int noted;              /* the note gives: 0 nothing, 1 the first damage, 2 that and the count */
};

static uint64_t le(const uint8_t *p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

/* Writes "<path>: <text>" to note; when a long path would cut the text
 * short, the path's last component instead (callers prefix the trace's
 * path anyway). */
static void notef(char *note, size_t notelen, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void notef(char *note, size_t notelen, const char *path, const char *fmt, ...) {
  if (!note || !notelen) return;
  char text[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  if ((size_t)snprintf(note, notelen, "%s%s", path, text) < notelen) return;
  const char *base = strrchr(path, '/');
  snprintf(note, notelen, "%s%s", base ? base + 1 : path, text);
}

/* Checks the header and field table (the file's first NSP_RR_MIN_FILE
 * bytes, at least, are readable).  Returns NULL, or why the ring cannot be
 * used, naming the byte offset at fault, in why[]. */
static const char *check_header(struct nsp_ringread *rr, const struct nsp_file_header *h, char *why,
                                size_t whylen) {
  const uint8_t *d = rr->map;
  uint64_t header_size = le(d + RH_HEADER_SIZE, 4), nfields = le(d + RH_NFIELDS, 4);
  rr->slot_size = le(d + RH_SLOT_SIZE, 4);
  rr->nslots = le(d + RH_NSLOTS, 8);
  rr->ring_offset = le(d + RH_RING_OFFSET, 8);
  rr->blob_offset = le(d + RH_BLOB_OFFSET, 8);
  rr->blob_slot_size = (uint32_t)le(d + RH_BLOB_SLOT_SIZE, 4);
  rr->nblobs = (uint32_t)le(d + RH_NBLOBS, 4);
  rr->written = le(d + RH_WRITTEN, 8);
  for (int i = 1; i < NSP_DROP_SLOTS; i++) rr->dropped[i] = le(d + RH_DROPPED + 8 * (size_t)i, 8);
#define BAD(...) (snprintf(why, whylen, __VA_ARGS__), why)
  if (memcmp(d, NSP_RING_MAGIC, 8) != 0)
    return BAD("bad magic at byte 0 (the process died while creating it)");
  if (le(d + RH_MAJOR, 2) != NSP_RING_MAJOR)
    return BAD("unknown ring format (major %llu at byte %d)", (unsigned long long)le(d + RH_MAJOR, 2),
               RH_MAJOR);
  if (le(d + RH_BYTE_ORDER, 4) != NSP_RING_BYTE_ORDER)
    return BAD("written by a host of another byte order (byte %d)", RH_BYTE_ORDER);
  if (le(d + RH_PID, 4) != h->pid)
    return BAD("it belongs to another process (pid %llu at byte %d, the trace's is %u)",
               (unsigned long long)le(d + RH_PID, 4), RH_PID, h->pid);
  if (le(d + RH_REALTIME, 8) != h->realtime_ns)
    return BAD("it belongs to another process (start time at byte %d is not the trace's)", RH_REALTIME);
  if (header_size >= 512 && header_size > rr->len)
    return BAD("truncated ring header: %zu of %llu bytes (header size at byte %d)", rr->len,
               (unsigned long long)header_size, RH_HEADER_SIZE);
  if (header_size < 512)
    return BAD("bad header: header size %llu at byte %d", (unsigned long long)header_size, RH_HEADER_SIZE);
  if (nfields > NSP_RING_MAX_FIELDS)
    return BAD("bad header: %llu fields at byte %d (at most %d)", (unsigned long long)nfields, RH_NFIELDS,
               NSP_RING_MAX_FIELDS);
  if (rr->slot_size < 16 || rr->slot_size > 4096)
    return BAD("bad ring geometry: slot size %llu at byte %d", (unsigned long long)rr->slot_size,
               RH_SLOT_SIZE);
  if (!rr->nslots || rr->nslots > NSP_RR_MAX_SLOTS || (rr->nslots & (rr->nslots - 1)))
    return BAD("bad ring geometry: %llu slots at byte %d", (unsigned long long)rr->nslots, RH_NSLOTS);
  if (rr->ring_offset > rr->len || rr->nslots * rr->slot_size > rr->len - rr->ring_offset)
    return BAD("truncated: its slots (at byte %llu, from byte %d) end at byte %llu, the file has %zu bytes",
               (unsigned long long)rr->ring_offset, RH_RING_OFFSET,
               (unsigned long long)(rr->ring_offset + rr->nslots * rr->slot_size), rr->len);
  if (rr->blob_slot_size < 64 || rr->blob_slot_size > 65536)
    return BAD("bad blob geometry: blob slot size %u at byte %d", rr->blob_slot_size, RH_BLOB_SLOT_SIZE);
  if (rr->nblobs > NSP_RR_MAX_BLOBS)
    return BAD("bad blob geometry: %u blob slots at byte %d", rr->nblobs, RH_NBLOBS);
  if (rr->blob_offset > rr->len || (uint64_t)rr->nblobs * rr->blob_slot_size > rr->len - rr->blob_offset)
    return BAD("truncated: its blob area (at byte %llu, from byte %d) ends at byte %llu, the file has %zu bytes",
               (unsigned long long)rr->blob_offset, RH_BLOB_OFFSET,
               (unsigned long long)(rr->blob_offset + (uint64_t)rr->nblobs * rr->blob_slot_size), rr->len);
  for (uint64_t i = 0; i < nfields; i++) {
    const uint8_t *e = d + RH_FIELDS + 8 * i;
    uint64_t id = le(e, 2), off = le(e + 2, 2), size = e[4];
    if ((size != 1 && size != 2 && size != 4 && size != 8) || off < 8 || off + size > rr->slot_size)
      return BAD("bad field table: entry %llu at byte %llu (offset %llu, size %llu)", (unsigned long long)i,
                 (unsigned long long)(RH_FIELDS + 8 * i), (unsigned long long)off, (unsigned long long)size);
    if (id < sizeof rr->f / sizeof rr->f[0]) {
      rr->f[id].offset = (uint16_t)off;
      rr->f[id].size = (uint8_t)size;
      rr->f[id].is_signed = e[5] != 0;
      rr->f[id].have = 1;
    }
  }
  if (!rr->f[NSP_RF_KIND].have)
    return BAD("bad field table: no kind field in its %llu entries at byte %d", (unsigned long long)nfields,
               RH_FIELDS);
  if (le(d + RH_MINOR, 2) >= 1) {
    rr->inflight_offset = le(d + RH_INFLIGHT_OFFSET, 4);
    rr->inflight_size = le(d + RH_INFLIGHT_SIZE, 4);
    uint64_t n = le(d + RH_NINFLIGHT, 4);
    if (rr->inflight_offset && n) {
      if (rr->inflight_offset < RH_FIELDS + 8 * NSP_RING_MAX_FIELDS || n > NSP_RR_MAX_INFLIGHT ||
          rr->inflight_size < sizeof(struct nsp_ring_inflight) || rr->inflight_size > 4096 ||
          rr->inflight_offset + n * rr->inflight_size > header_size)
        return BAD("bad in-flight table: %llu entries of %llu bytes at byte %llu (from byte %d) do not fit "
                   "the %llu-byte header", (unsigned long long)n, (unsigned long long)rr->inflight_size,
                   (unsigned long long)rr->inflight_offset, RH_INFLIGHT_OFFSET, (unsigned long long)header_size);
      rr->ninflight = (uint32_t)n;
    }
  }
#undef BAD
  return NULL;
}

/* Takes map[0, len) (ours to unmap when map_len); NULL with a note when
 * the ring cannot be used. */
static struct nsp_ringread *open_common(const uint8_t *map, size_t len, size_t map_len, const char *path,
                                        const struct nsp_file_header *h, char *note, size_t notelen) {
  struct nsp_ringread *rr = calloc(1, sizeof *rr);
  char *name = strdup(path);
  if (!rr || !name) {
    notef(note, notelen, path, " not read: out of memory");
    if (map_len) munmap((void *)map, map_len);
    free(rr);
    free(name);
    return NULL;
  }
  rr->map = map;
  rr->len = len;
  rr->map_len = map_len;
  rr->minor = h->minor;
  rr->path = name;
  char why[256];
  const char *bad = check_header(rr, h, why, sizeof why);
  if (bad) {
    notef(note, notelen, path, " ignored: %s", bad);
    nsp_ringread_close(rr);
    return NULL;
  }
  rr->note = note;
  rr->notelen = notelen;
  return rr;
}

struct nsp_ringread *nsp_ringread_open(const char *trace_path, const struct nsp_file_header *h,
                                       char *note, size_t notelen) {
  note[0] = 0;
  char path[4200];
  if (snprintf(path, sizeof path, "%s.ring", trace_path) >= (int)sizeof path) return NULL;
  const void *m;
  size_t len;
  int rc = nsp_map_regular(path, O_NOFOLLOW, &m, &len);
  if (rc == -1) {
    if (errno != ENOENT) notef(note, notelen, path, " not read: %s", strerror(errno));
    return NULL;
  }
  if (rc == -2) {
    notef(note, notelen, path, " ignored: not a regular file");
    return NULL;
  }
  if (len < NSP_RR_MIN_FILE) {
    notef(note, notelen, path, " ignored: truncated ring header: %zu of %u bytes (the file ends at byte %zu)", len,
          NSP_RR_MIN_FILE, len);
    if (m) munmap((void *)m, len);
    return NULL;
  }
  return open_common(m, len, len, path, h, note, notelen);
}

struct nsp_ringread *nsp_ringread_open_mem(const void *data, size_t len, const char *name,
                                           const struct nsp_file_header *h, char *note, size_t notelen) {
  note[0] = 0;
  if (len < NSP_RR_MIN_FILE) {
    notef(note, notelen, name, " ignored: truncated ring header: %zu of %u bytes (the file ends at byte %zu)", len,
          NSP_RR_MIN_FILE, len);
    return NULL;
  }
  return open_common(data, len, 0, name, h, note, notelen);
}

static uint64_t field(const struct nsp_ringread *rr, const uint8_t *slot, int id, uint64_t dflt) {
  if (!rr->f[id].have) return dflt;
  uint64_t v = le(slot + rr->f[id].offset, rr->f[id].size);
  unsigned bits = 8u * rr->f[id].size;
  if (rr->f[id].is_signed && bits < 64 && (v >> (bits - 1)) & 1) v |= ~0ull << bits;
  return v;
}

/* Notes damage at a byte offset of the file: the first one's text is kept
 * for the note, which nsp_ringread_next completes at the end. */
static void damage(struct nsp_ringread *rr, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void damage(struct nsp_ringread *rr, const char *fmt, ...) {
  if (!rr->damaged++) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rr->damage_first, sizeof rr->damage_first, fmt, ap);
    va_end(ap);
    notef(rr->note, rr->notelen, rr->path, ": %s; the rest read", rr->damage_first);
    rr->noted = 1;
  }
}

static int cmp_blob(const void *a, const void *b) {
  const struct nsp_rr_blob *x = a, *y = b;
  if (x->pos != y->pos) return x->pos < y->pos ? -1 : 1;
  if (x->type != y->type) return x->type < y->type ? -1 : 1;
  return x->slot < y->slot ? -1 : x->slot > y->slot;
}

/* Whether the header of the blob starting at blob slot i is usable: its
 * slots and length fit the blob area. */
static int blob_head_ok(const struct nsp_ringread *rr, uint32_t i) {
  const uint8_t *b = rr->map + rr->blob_offset + (size_t)i * rr->blob_slot_size;
  uint64_t bs = rr->blob_slot_size, head = sizeof(struct nsp_ring_blob), cont = 8;
  uint64_t len = le(b + 20, 4), n = le(b + 24, 4);
  return n && n <= rr->nblobs - i && len <= (bs - head) + (n - 1) * (bs - cont);
}

/* Indexes every blob header (state ready) once: one pass to count, one to
 * fill, then a sort.  Returns 0, or -1 when out of memory. */
static int index_blobs(struct nsp_ringread *rr) {
  const uint8_t *base = rr->map + rr->blob_offset;
  size_t bs = rr->blob_slot_size, n = 0;
  for (uint32_t i = 0; i < rr->nblobs; i++) n += le(base + (size_t)i * bs, 8) == NSP_BLOB_READY;
  rr->indexed = -1;
  free(rr->bidx);
  rr->bidx = NULL;
  rr->nbidx = 0;
  if (n) {
    rr->bidx = malloc(n * sizeof *rr->bidx);
    if (!rr->bidx) return -1;
  }
  for (uint32_t i = 0; i < rr->nblobs && rr->nbidx < n; i++) {
    const uint8_t *b = base + (size_t)i * bs;
    if (le(b, 8) != NSP_BLOB_READY) continue;
    struct nsp_rr_blob *e = &rr->bidx[rr->nbidx++];
    e->pos = le(b + 8, 8);
    e->type = (uint32_t)le(b + 16, 4);
    e->slot = i | (blob_head_ok(rr, i) ? 0 : NSP_RR_BAD_BLOB);
  }
  if (rr->nbidx > 1) qsort(rr->bidx, rr->nbidx, sizeof *rr->bidx, cmp_blob);
  rr->indexed = 1;
  return 0;
}

/* find_blob through the index as it is. */
static long find_blob_indexed(struct nsp_ringread *rr, uint64_t pos, uint32_t type) {
  /* The first entry not below (pos, type, 0). */
  size_t lo = 0, hi = rr->nbidx;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    const struct nsp_rr_blob *e = &rr->bidx[mid];
    if (e->pos < pos || (e->pos == pos && e->type < type)) lo = mid + 1;
    else hi = mid;
  }
  const uint8_t *base = rr->map + rr->blob_offset;
  size_t bs = rr->blob_slot_size, head = sizeof(struct nsp_ring_blob), cont = 8;
  uint32_t bad_at = UINT32_MAX;
  for (; lo < rr->nbidx && rr->bidx[lo].pos == pos && rr->bidx[lo].type == type; lo++) {
    if (rr->bidx[lo].slot & NSP_RR_BAD_BLOB) { /* unusable, sorted after the usable ones */
      if (bad_at == UINT32_MAX) bad_at = rr->bidx[lo].slot & ~NSP_RR_BAD_BLOB;
      continue;
    }
    uint32_t i = rr->bidx[lo].slot;
    const uint8_t *b = base + (size_t)i * bs;
    uint64_t len = le(b + 20, 4), n = le(b + 24, 4);
    /* Checked again as read now: a live process may have changed it. */
    if (le(b, 8) != NSP_BLOB_READY || le(b + 8, 8) != pos || le(b + 16, 4) != type || !n ||
        n > rr->nblobs - i || len > (bs - head) + (n - 1) * (bs - cont))
      continue;
    if (rr->blob_cap < len + 1) {
      uint8_t *nb = realloc(rr->blob, len + 1);
      if (!nb) return -1;
      rr->blob = nb;
      rr->blob_cap = len + 1;
    }
    size_t got = 0, take = len < bs - head ? len : bs - head;
    memcpy(rr->blob, b + head, take);
    got += take;
    for (uint64_t k = 1; k < n && got < len; k++) {
      const uint8_t *c = base + (i + k) * bs;
      if (le(c, 8) != NSP_BLOB_CONT) {
        damage(rr, "blob at byte %llu (ring position %llu) cut at byte %llu",
               (unsigned long long)(rr->blob_offset + (uint64_t)i * bs), (unsigned long long)pos,
               (unsigned long long)(rr->blob_offset + (i + k) * bs));
        return -2;
      }
      take = len - got < bs - cont ? len - got : bs - cont;
      memcpy(rr->blob + got, c + cont, take);
      got += take;
    }
    rr->blob[len] = 0;
    rr->blob_at = rr->blob_offset + (uint64_t)i * bs;
    return (long)len;
  }
  if (bad_at != UINT32_MAX) {
    damage(rr, "blob at byte %llu (ring position %llu) claims more than the blob area",
           (unsigned long long)(rr->blob_offset + (uint64_t)bad_at * bs), (unsigned long long)pos);
    return -2;
  }
  return -1;
}

/* The blob of ring position pos and this type, copied to rr->blob.
 * Returns its length; -1 when there is none (or no memory to look);
 * -2 when there is one but it is damaged (noted).  Of several blobs for
 * one (pos, type), the first usable one in the blob area counts, as when
 * the area is scanned in order. */
static long find_blob(struct nsp_ringread *rr, uint64_t pos, uint32_t type) {
  if (!rr->indexed && index_blobs(rr) < 0) return -1;
  if (rr->indexed < 0) return -1;
  long n = find_blob_indexed(rr, pos, type);
  if (n != -1 || rr->reindexed >= NSP_RR_REINDEX) return n;
  rr->reindexed++;
  if (index_blobs(rr) < 0) return -1;
  return find_blob_indexed(rr, pos, type);
}

/* Copies the calls in flight now (seqlock: an entry read whole, between
 * two equal even gens).  Returns 0, or -1 when out of memory. */
static int snapshot_inflight(struct nsp_ringread *rr) {
  if (!rr->ninflight) return 0;
  rr->flight = calloc(rr->ninflight, sizeof *rr->flight);
  rr->flight_tid = calloc(rr->ninflight, sizeof *rr->flight_tid);
  if (!rr->flight || !rr->flight_tid) return -1;
  for (uint32_t i = 0; i < rr->ninflight; i++) {
    const uint8_t *e = rr->map + rr->inflight_offset + (uint64_t)i * rr->inflight_size;
    for (int tries = 0; tries < NSP_RR_INFLIGHT_TRIES; tries++) {
      uint64_t g1 = __atomic_load_n((const uint64_t *)(const void *)e, __ATOMIC_ACQUIRE);
      if (g1 & 1) continue;
      struct nsp_inflight_call c;
      memcpy(&c, e + offsetof(struct nsp_ring_inflight, call), sizeof c);
      uint32_t tid;
      memcpy(&tid, e + offsetof(struct nsp_ring_inflight, tid), sizeof tid);
      __atomic_thread_fence(__ATOMIC_ACQUIRE);
      if (__atomic_load_n((const uint64_t *)(const void *)e, __ATOMIC_RELAXED) != g1) continue;
      if (tid && c.t_enter) {
        rr->flight_tid[rr->nflight] = tid;
        rr->flight[rr->nflight++] = c;
      }
      break;
    }
  }
  return 0;
}

/* The RINGSTATE record, then the INFLIGHT ones.  1 for a record, 0 done. */
static int next_state(struct nsp_ringread *rr, struct nsp_rec *rec) {
  const uint8_t *d = rr->map;
  if (!rr->state_done) {
    rr->state_done = 1;
    if (snapshot_inflight(rr) < 0) rr->nflight = 0; /* out of memory: the state says 0 */
    memset(rec, 0, sizeof *rec);
    rec->kind = NSP_REC_RINGSTATE;
    rec->peer = rec->dtype = rec->redop = -1;
    int v1 = le(d + RH_MINOR, 2) >= 1;
    nsp_rec_ringstate_set_heartbeat(rec, v1 ? le(d + RH_HEARTBEAT_MONO, 8) : 0);
    nsp_rec_ringstate_set_heartbeat_wall(rec, v1 ? le(d + RH_HEARTBEAT_REAL, 8) : 0);
    nsp_rec_ringstate_set_exited(rec, v1 ? le(d + RH_EXIT_MONO, 8) : 0);
    nsp_rec_ringstate_set_inflight(rec, rr->nflight);
    nsp_rec_ringstate_set_unslotted(rec, v1 ? (uint32_t)le(d + RH_INFLIGHT_UNSLOTTED, 4) : 0);
    return 1;
  }
  if (rr->flight_next >= rr->nflight) return 0;
  uint32_t i = rr->flight_next++;
  const struct nsp_inflight_call *c = &rr->flight[i];
  memset(rec, 0, sizeof *rec);
  memset(&rr->flight_ext, 0, sizeof rr->flight_ext);
  rec->kind = NSP_REC_INFLIGHT;
  rec->ext = &rr->flight_ext;
  /* An entry's fields that its call's kind does not use are left over
   * from earlier calls of the thread (trace.h): their defaults instead. */
  int kind = nsp_api_kind(c->api), work = kind == NSP_K_COLL || kind == NSP_K_P2P;
  int made = kind == NSP_K_INIT, split = c->api == NSP_API_CommSplit || c->api == NSP_API_CommShrink;
  nsp_rec_inflight_set_api(rec, c->api);
  nsp_rec_inflight_set_comm(rec, c->comm < NSP_MAX_COMMS ? c->comm : 0);
  nsp_rec_inflight_set_t_enter(rec, c->t_enter);
  nsp_rec_inflight_set_seq(rec, work ? c->seq : 0);
  nsp_rec_inflight_set_count(rec, work ? c->count : 0);
  nsp_rec_inflight_set_dtype(rec, work ? c->dtype : -1);
  nsp_rec_inflight_set_redop(rec, work ? c->redop : -1);
  nsp_rec_inflight_set_peer(rec, work ? c->peer : -1);
  nsp_rec_inflight_set_pysite(rec, work && le(d + RH_MINOR, 2) >= 2 ? c->pysite : 0);
  nsp_rec_inflight_set_group_id(rec, c->group_id);
  nsp_rec_inflight_set_group_depth(rec, c->group_depth);
  nsp_rec_inflight_set_tid(rec, rr->flight_tid[i]);
  rr->flight_ext.comm_id = made ? c->comm_id : 0;
  rr->flight_ext.parent_id = split ? c->parent_id : 0;
  rr->flight_ext.rank = made && !split ? c->rank : -1;
  rr->flight_ext.nranks = made && !split ? c->nranks : -1;
  rr->flight_ext.color = split ? c->color : -1;
  rr->flight_ext.key = split ? c->key : -1;
  rr->flight_ext.split_index = split ? c->split_index : 0;
  return 1;
}

int nsp_ringread_next(struct nsp_ringread *rr, uint64_t frames_end, const uint64_t dropped_seen[NSP_DROP_SLOTS],
                      struct nsp_rec *rec) {
  if (!rr->begun) {
    rr->begun = 1;
    rr->pos = rr->written > frames_end ? rr->written : frames_end;
    /* Saturated: a hostile `written` near 2^64 must not wrap around. */
    rr->end = rr->pos <= UINT64_MAX - rr->nslots ? rr->pos + rr->nslots : UINT64_MAX;
    rr->drop_reason = 1;
    for (int i = 1; i < NSP_DROP_SLOTS; i++)
      rr->drop_left[i] = rr->dropped[i] > dropped_seen[i] ? rr->dropped[i] - dropped_seen[i] : 0;
  }
  while (rr->pos < rr->end) {
    uint64_t p = rr->pos++;
    uint64_t at = rr->ring_offset + (p & (rr->nslots - 1)) * rr->slot_size; /* the slot's byte offset */
    const uint8_t *slot = rr->map + at;
    if (le(slot, 8) != p + 1) continue; /* free, being filled, or already in the trace */
    uint64_t kind = field(rr, slot, NSP_RF_KIND, 0);
    /* Kinds this reader knows and the shim puts in its ring; others may
     * be a later shim's, skipped like unknown kinds in frames. */
    const struct nsp_kind_info *ki = kind <= INT32_MAX ? nsp_schema_kind((int)kind) : NULL;
    if (!ki || ki->ring != NSP_KRING_RING) continue;
    int has_ext = ki->ext == NSP_KEXT_YES || (ki->ext == NSP_KEXT_MAY && field(rr, slot, NSP_RF_EXT, 0) != 0);
    if (has_ext) {
      /* Kept whole, encoded as in a frame. */
      long n = find_blob(rr, p, NSP_BLOB_RECORD);
      if (n == -1) { /* never stored: the blob area was full */
        rr->lost++;
        continue;
      }
      if (n < 0) continue; /* damaged, noted */
      const uint8_t *q = rr->blob;
      nsp_codec_reset(&rr->codec);
      if (nsp_decode(&q, rr->blob + n, &rr->codec, rec, &rr->store) != 1 || rec->kind != kind) {
        damage(rr, "blob at byte %llu (ring position %llu) is not a record of the slot's kind",
               (unsigned long long)rr->blob_at, (unsigned long long)p);
        continue;
      }
      rr->recovered++;
      return 1;
    }
    memset(rec, 0, sizeof *rec);
    /* Every member of the memory form, from the slot.  The pointers
     * (last_error, ext) were the dead process's: their strings are
     * looked up in the blobs below. */
#define NSP_SLOT_COPY_(ID, member, type, is_signed, ring_default) \
  rec->member = (__typeof__(rec->member))(uintptr_t)field(rr, slot, NSP_RF_##ID, (uint64_t)(ring_default));
    NSP_REC_SLOTS(NSP_SLOT_COPY_)
#undef NSP_SLOT_COPY_
    rec->last_error = NULL;
    rec->ext = NULL;
    nsp_rec_apply_defaults(rec, rr->minor);
    uint64_t comm = field(rr, slot, NSP_RF_COMM, 0);
    if (comm >= NSP_MAX_COMMS) {
      damage(rr, "slot at byte %llu (ring position %llu): communicator index %llu out of range",
             (unsigned long long)at, (unsigned long long)p, (unsigned long long)comm);
      continue;
    }
    if (field(rr, slot, NSP_RF_LAST_ERROR, 0)) {
      long n = find_blob(rr, p, NSP_BLOB_TEXT);
      if (n > 0) rec->last_error = (const char *)rr->blob; /* recovered without it otherwise */
    }
    rr->recovered++;
    return 1;
  }
  if (rr->damaged > 1 && rr->noted != 2) {
    notef(rr->note, rr->notelen, rr->path, ": %s; %llu damaged places in all, the rest read",
          rr->damage_first, (unsigned long long)rr->damaged);
    rr->noted = 2;
  }
  for (; rr->drop_reason < NSP_DROP_SLOTS; rr->drop_reason++) {
    if (!rr->drop_left[rr->drop_reason]) continue;
    memset(rec, 0, sizeof *rec);
    rec->kind = NSP_REC_DROPPED;
    rec->peer = rec->dtype = rec->redop = -1;
    nsp_rec_dropped_set_count(rec, rr->drop_left[rr->drop_reason]);
    nsp_rec_dropped_set_reason(rec, (uint32_t)rr->drop_reason++);
    return 1;
  }
  return next_state(rr, rec);
}

uint64_t nsp_ringread_recovered(const struct nsp_ringread *rr) { return rr ? rr->recovered : 0; }
uint64_t nsp_ringread_lost(const struct nsp_ringread *rr) { return rr ? rr->lost : 0; }
uint64_t nsp_ringread_damaged(const struct nsp_ringread *rr) { return rr ? rr->damaged : 0; }

void nsp_ringread_close(struct nsp_ringread *rr) {
  if (!rr) return;
  if (rr->map_len) munmap((void *)rr->map, rr->map_len);
  nsp_codec_free(&rr->codec);
  nsp_dec_store_free(&rr->store);
  free(rr->blob);
  free(rr->bidx);
  free(rr->flight);
  free(rr->flight_tid);
  free(rr->path);
  free(rr);
}
