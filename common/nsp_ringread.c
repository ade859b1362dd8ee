/* nsp_ringread.c - records recovered from "<trace>.ring" (nsp_ringread.h). */
#include "nsp_ringread.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define NSP_RR_MAX_SLOTS (1ull << 24)
#define NSP_RR_MAX_BLOBS (1u << 20)

struct nsp_ringread {
  const uint8_t *map;
  size_t len;
  uint64_t nslots, slot_size, ring_offset, blob_offset, written, dropped[4];
  uint32_t blob_slot_size, nblobs;
  struct {
    uint16_t offset;
    uint8_t size, is_signed, have;
  } f[NSP_RF_SITE + 1];
  int begun;
  uint64_t pos, end;
  int drop_reason; /* next reason whose drops to report, 1..3; 4 done */
  uint64_t drop_left[4];
  uint64_t recovered, lost;
  struct nsp_codec codec;
  struct nsp_dec_store store;
  uint8_t *blob; /* one blob's data, contiguous */
  size_t blob_cap;
};

static uint64_t le(const uint8_t *p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

struct nsp_ringread *nsp_ringread_open(const char *trace_path, const struct nsp_file_header *h,
                                       char *note, size_t notelen) {
  note[0] = 0;
  char path[4200];
  if (snprintf(path, sizeof path, "%s.ring", trace_path) >= (int)sizeof path) return NULL;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    if (errno != ENOENT) snprintf(note, notelen, "%s not read: %s", path, strerror(errno));
    return NULL;
  }
  struct stat st;
  if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size < 4096) {
    snprintf(note, notelen, "%s ignored: not a ring file", path);
    close(fd);
    return NULL;
  }
  void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (m == MAP_FAILED) {
    snprintf(note, notelen, "%s not read: cannot map it: %s", path, strerror(errno));
    return NULL;
  }
  struct nsp_ringread *rr = calloc(1, sizeof *rr);
  if (!rr) {
    munmap(m, (size_t)st.st_size);
    return NULL;
  }
  rr->map = m;
  rr->len = (size_t)st.st_size;
  const uint8_t *d = m;
  const char *bad = NULL;
  uint64_t header_size = le(d + 12, 4), nfields = le(d + 60, 4);
  rr->slot_size = le(d + 20, 4);
  rr->nslots = le(d + 24, 8);
  rr->ring_offset = le(d + 32, 8);
  rr->blob_offset = le(d + 40, 8);
  rr->blob_slot_size = (uint32_t)le(d + 48, 4);
  rr->nblobs = (uint32_t)le(d + 52, 4);
  rr->written = le(d + 72, 8);
  for (int i = 1; i < 4; i++) rr->dropped[i] = le(d + 80 + 8 * (size_t)i, 8);
  if (memcmp(d, NSP_RING_MAGIC, 8) != 0) bad = "bad magic (the process died while creating it)";
  else if (le(d + 8, 2) != NSP_RING_MAJOR) bad = "unknown ring format";
  else if (le(d + 16, 4) != NSP_RING_BYTE_ORDER) bad = "written by a host of another byte order";
  else if (le(d + 56, 4) != h->pid || le(d + 64, 8) != h->realtime_ns) bad = "it belongs to another process";
  else if (header_size < 512 || header_size > rr->len || nfields > NSP_RING_MAX_FIELDS) bad = "bad header";
  else if (rr->slot_size < 16 || rr->slot_size > 4096 || !rr->nslots || rr->nslots > NSP_RR_MAX_SLOTS ||
           (rr->nslots & (rr->nslots - 1)) || rr->ring_offset > rr->len ||
           rr->nslots * rr->slot_size > rr->len - rr->ring_offset)
    bad = "bad ring geometry";
  else if (rr->blob_slot_size < 64 || rr->blob_slot_size > 65536 || rr->nblobs > NSP_RR_MAX_BLOBS ||
           rr->blob_offset > rr->len ||
           (uint64_t)rr->nblobs * rr->blob_slot_size > rr->len - rr->blob_offset)
    bad = "bad blob geometry";
  for (uint64_t i = 0; !bad && i < nfields; i++) {
    const uint8_t *e = d + 256 + 8 * i;
    uint64_t id = le(e, 2), off = le(e + 2, 2), size = e[4];
    if (size != 1 && size != 2 && size != 4 && size != 8) bad = "bad field table";
    else if (off < 8 || off + size > rr->slot_size) bad = "bad field table";
    else if (id < sizeof rr->f / sizeof rr->f[0]) {
      rr->f[id].offset = (uint16_t)off;
      rr->f[id].size = (uint8_t)size;
      rr->f[id].is_signed = e[5] != 0;
      rr->f[id].have = 1;
    }
  }
  if (!bad && !rr->f[NSP_RF_KIND].have) bad = "bad field table";
  if (bad) {
    snprintf(note, notelen, "%s ignored: %s", path, bad);
    nsp_ringread_close(rr);
    return NULL;
  }
  return rr;
}

static uint64_t field(const struct nsp_ringread *rr, const uint8_t *slot, int id, uint64_t dflt) {
  if (!rr->f[id].have) return dflt;
  uint64_t v = le(slot + rr->f[id].offset, rr->f[id].size);
  unsigned bits = 8u * rr->f[id].size;
  if (rr->f[id].is_signed && bits < 64 && (v >> (bits - 1)) & 1) v |= ~0ull << bits;
  return v;
}

/* The blob of ring position pos and this type, copied to rr->blob.
 * Returns its length, or -1 when there is none. */
static long find_blob(struct nsp_ringread *rr, uint64_t pos, uint32_t type) {
  const uint8_t *base = rr->map + rr->blob_offset;
  size_t bs = rr->blob_slot_size, head = sizeof(struct nsp_ring_blob), cont = 8;
  for (uint32_t i = 0; i < rr->nblobs; i++) {
    const uint8_t *b = base + (size_t)i * bs;
    if (le(b, 8) != NSP_BLOB_READY || le(b + 8, 8) != pos || le(b + 16, 4) != type) continue;
    uint64_t len = le(b + 20, 4), n = le(b + 24, 4);
    if (!n || n > rr->nblobs - i || len > (bs - head) + (n - 1) * (bs - cont)) continue;
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
      if (le(c, 8) != NSP_BLOB_CONT) return -1;
      take = len - got < bs - cont ? len - got : bs - cont;
      memcpy(rr->blob + got, c + cont, take);
      got += take;
    }
    rr->blob[len] = 0;
    return (long)len;
  }
  return -1;
}

int nsp_ringread_next(struct nsp_ringread *rr, uint64_t frames_end, const uint64_t dropped_seen[4],
                      struct nsp_rec *rec) {
  if (!rr->begun) {
    rr->begun = 1;
    rr->pos = rr->written > frames_end ? rr->written : frames_end;
    rr->end = rr->pos + rr->nslots;
    rr->drop_reason = 1;
    for (int i = 1; i < 4; i++)
      rr->drop_left[i] = rr->dropped[i] > dropped_seen[i] ? rr->dropped[i] - dropped_seen[i] : 0;
  }
  while (rr->pos < rr->end) {
    uint64_t p = rr->pos++;
    const uint8_t *slot = rr->map + rr->ring_offset + (p & (rr->nslots - 1)) * rr->slot_size;
    if (le(slot, 8) != p + 1) continue; /* free, being filled, or already in the trace */
    uint64_t kind = field(rr, slot, NSP_RF_KIND, 0);
    /* Kinds this reader knows and the shim puts in its ring. */
    if (kind < NSP_REC_PROCESS || kind > NSP_REC_HEARTBEAT || kind == NSP_REC_DROPPED ||
        kind == NSP_REC_RINGPOS)
      continue;
    int has_ext = field(rr, slot, NSP_RF_EXT, 0) != 0 || kind == NSP_REC_PROCESS ||
                  kind == NSP_REC_COMM || kind == NSP_REC_CALLSITE;
    if (has_ext) {
      /* Kept whole, encoded as in a frame. */
      long n = find_blob(rr, p, NSP_BLOB_RECORD);
      const uint8_t *q = rr->blob;
      nsp_codec_reset(&rr->codec);
      if (n < 0 || nsp_decode(&q, rr->blob + n, &rr->codec, rec, &rr->store) != 1 || rec->kind != kind) {
        rr->lost++;
        continue;
      }
      rr->recovered++;
      return 1;
    }
    memset(rec, 0, sizeof *rec);
    rec->kind = (uint8_t)kind;
    rec->api = (uint8_t)field(rr, slot, NSP_RF_API, 0);
    rec->flags = (uint16_t)field(rr, slot, NSP_RF_FLAGS, 0);
    rec->comm = (uint32_t)field(rr, slot, NSP_RF_COMM, 0);
    rec->result = (int32_t)field(rr, slot, NSP_RF_RESULT, 0);
    rec->peer = (int32_t)field(rr, slot, NSP_RF_PEER, (uint64_t)-1);
    rec->dtype = (int32_t)field(rr, slot, NSP_RF_DTYPE, (uint64_t)-1);
    rec->redop = (int32_t)field(rr, slot, NSP_RF_REDOP, (uint64_t)-1);
    rec->group_depth = (uint32_t)field(rr, slot, NSP_RF_GROUP_DEPTH, 0);
    rec->aux = (uint32_t)field(rr, slot, NSP_RF_AUX, 0);
    rec->seq = field(rr, slot, NSP_RF_SEQ, 0);
    rec->count = field(rr, slot, NSP_RF_COUNT, 0);
    rec->stream = field(rr, slot, NSP_RF_STREAM, 0);
    rec->sendbuff = field(rr, slot, NSP_RF_SENDBUFF, 0);
    rec->recvbuff = field(rr, slot, NSP_RF_RECVBUFF, 0);
    rec->group_id = field(rr, slot, NSP_RF_GROUP_ID, 0);
    rec->t_enter = field(rr, slot, NSP_RF_T_ENTER, 0);
    rec->t_exit = field(rr, slot, NSP_RF_T_EXIT, 0);
    rec->site = (uint32_t)field(rr, slot, NSP_RF_SITE, 0);
    if (rec->comm >= NSP_MAX_COMMS) {
      rr->lost++;
      continue;
    }
    if (field(rr, slot, NSP_RF_LAST_ERROR, 0)) {
      long n = find_blob(rr, p, NSP_BLOB_TEXT);
      if (n > 0) rec->last_error = (const char *)rr->blob; /* recovered without it otherwise */
    }
    rr->recovered++;
    return 1;
  }
  for (; rr->drop_reason < 4; rr->drop_reason++) {
    if (!rr->drop_left[rr->drop_reason]) continue;
    memset(rec, 0, sizeof *rec);
    rec->kind = NSP_REC_DROPPED;
    rec->peer = rec->dtype = rec->redop = -1;
    rec->count = rr->drop_left[rr->drop_reason];
    rec->aux = (uint32_t)rr->drop_reason++;
    return 1;
  }
  return 0;
}

uint64_t nsp_ringread_recovered(const struct nsp_ringread *rr) { return rr ? rr->recovered : 0; }
uint64_t nsp_ringread_lost(const struct nsp_ringread *rr) { return rr ? rr->lost : 0; }

void nsp_ringread_close(struct nsp_ringread *rr) {
  if (!rr) return;
  munmap((void *)rr->map, rr->len);
  nsp_codec_free(&rr->codec);
  nsp_dec_store_free(&rr->store);
  free(rr->blob);
  free(rr);
}
