/* nsp_fuzz_seeds.c - writes seed inputs for the fuzz targets.
 *
 * usage: nsp_fuzz_seeds OUTDIR   (makes OUTDIR/reader, OUTDIR/job and OUTDIR/ring)
 *        nsp_fuzz_seeds --ring TRACE OUTFILE
 *
 * Seeds are the synthetic failure cases c01..c11 (tests/unit/nsp_an_cases)
 * and a trace with every record kind, each twice: as the shim writes them
 * (zstd-compressed frames with checksums) and with every frame rewritten
 * as raw zstd blocks without a checksum.  The raw form is still a valid
 * trace, and it lets a fuzzer's byte mutations reach the record decoder
 * instead of dying in zstd's checksum.  reader/ gets one file per rank;
 * job/ one input per case, its ranks' files concatenated (fuzz_job.c cuts
 * them apart again at each file's magic).
 *
 * ring/ gets synthetic crash ring files (fuzz_ring.c): every kind a ring
 * holds, blobs of one and of several slots, a record whose blob was lost,
 * positions that wrap around the ring, stale and free slots, drop counts;
 * in the shim's geometry with a small ring, in the smallest geometry a
 * reader accepts, and as a trace followed by its ring.  --ring makes a seed
 * of a real pair a killed process left (TRACE and TRACE.ring, e.g. from a
 * job run with NCCLSPY_RING=64 and killed): the trace, then the ring with
 * its blob area cut down to the blobs in use. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zstd.h>

#include "nsp_an_cases.h"
#include "nsp_names.h"

static int put_file(const char *dir, const char *name, const uint8_t *data, size_t len) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0) {
    fprintf(stderr, "nsp_fuzz_seeds: %s: %s\n", path, strerror(errno));
    return -1;
  }
  return 0;
}

static int append(struct nsp_buf *b, const void *p, size_t n) {
  if (nsp_buf_reserve(b, n) < 0) return -1;
  memcpy(b->data + b->len, p, n);
  b->len += n;
  return 0;
}

/* The trace with each zstd frame re-emitted as raw blocks (RFC 8878
 * 3.1.1: single segment, 4-byte content size, no checksum). */
static int rawify(const uint8_t *data, size_t len, struct nsp_buf *out) {
  if (len < NSP_HEADER_SIZE || append(out, data, NSP_HEADER_SIZE) < 0) return -1;
  size_t off = NSP_HEADER_SIZE;
  while (off < len) {
    size_t csize = ZSTD_findFrameCompressedSize(data + off, len - off);
    unsigned long long dsize = ZSTD_getFrameContentSize(data + off, csize);
    if (ZSTD_isError(csize) || dsize == ZSTD_CONTENTSIZE_ERROR || dsize == ZSTD_CONTENTSIZE_UNKNOWN) return -1;
    uint8_t *plain = malloc(dsize ? (size_t)dsize : 1);
    if (!plain) return -1;
    size_t got = ZSTD_decompress(plain, (size_t)dsize, data + off, csize);
    if (ZSTD_isError(got)) {
      free(plain);
      return -1;
    }
    uint8_t hdr[9] = {0x28, 0xb5, 0x2f, 0xfd, 0xa0, (uint8_t)got, (uint8_t)(got >> 8), (uint8_t)(got >> 16),
                      (uint8_t)(got >> 24)};
    int ret = append(out, hdr, sizeof hdr);
    size_t pos = 0;
    do {
      size_t n = got - pos > (128u << 10) ? (128u << 10) : got - pos;
      uint32_t bh = (uint32_t)(n << 3) | (pos + n == got ? 1u : 0u); /* raw block, last? */
      uint8_t b[3] = {(uint8_t)bh, (uint8_t)(bh >> 8), (uint8_t)(bh >> 16)};
      if (!ret) ret = append(out, b, 3);
      if (!ret) ret = append(out, plain + pos, n);
      pos += n;
    } while (pos < got && !ret);
    free(plain);
    if (ret) return -1;
    off += csize;
  }
  return 0;
}

/* Writes one trace to reader/ in both forms; appends both forms to the
 * case's job inputs. */
static int seed(const char *outdir, const char *name, struct nsp_tracegen *g, struct nsp_buf *job_z,
                struct nsp_buf *job_raw) {
  const uint8_t *data;
  size_t len;
  if (nsp_tracegen_bytes(g, &data, &len) < 0) return -1;
  struct nsp_buf raw = {0};
  char dir[4096], fn[256];
  snprintf(dir, sizeof dir, "%s/reader", outdir);
  snprintf(fn, sizeof fn, "%s.zst.ncclspy", name);
  int ret = put_file(dir, fn, data, len);
  if (!ret) ret = rawify(data, len, &raw);
  snprintf(fn, sizeof fn, "%s.raw.ncclspy", name);
  if (!ret) ret = put_file(dir, fn, raw.data, raw.len);
  if (!ret) ret = append(job_z, data, len);
  if (!ret) ret = append(job_raw, raw.data, raw.len);
  nsp_buf_free(&raw);
  return ret;
}

static int put_job(const char *outdir, const char *name, const struct nsp_buf *z, const struct nsp_buf *raw) {
  char dir[4096], fn[256];
  snprintf(dir, sizeof dir, "%s/job", outdir);
  snprintf(fn, sizeof fn, "%s.zst", name);
  if (put_file(dir, fn, z->data, z->len) < 0) return -1;
  snprintf(fn, sizeof fn, "%s.raw", name);
  return put_file(dir, fn, raw->data, raw->len);
}

/* Every record kind, with strings, an environment, call sites,
 * completions, errors and several frames. */
static struct nsp_tracegen *every_kind(int rank, uint64_t world_id) {
  struct nsp_tracegen *g = nsp_tracegen_create("node-x", 4000u + (uint32_t)rank, rank);
  if (!g) return NULL;
  nsp_tracegen_set_frame_records(g, 5);
  char rs[16];
  snprintf(rs, sizeof rs, "%d", rank);
  nsp_tracegen_env(g, "RANK", rs);
  nsp_tracegen_env(g, "NCCL_DEBUG", "INFO");
  nsp_tracegen_set_comm_name(g, "pg \"x\"");
  uint32_t w = nsp_tracegen_comm(g, world_id, rank, 2);
  uint32_t c = nsp_tracegen_split(g, w, world_id ^ 0x5151, rank, 0, 0, 1);
  const char *mods[2] = {"/usr/lib/libtorch.so", "/usr/bin/python3"};
  const char *syms[2] = {"c10d::ProcessGroupNCCL::allreduce", "main"};
  uint64_t offs[2] = {0x1234, 0x42};
  struct nsp_rec_ext x;
  memset(&x, 0, sizeof x);
  x.nframes = 2;
  x.frame_module = mods;
  x.frame_symbol = syms;
  x.frame_offset = offs;
  struct nsp_rec site = {.kind = NSP_REC_CALLSITE, .site = 1, .flags = NSP_SITE_FULL, .ext = &x, .peer = -1, .redop = -1};
  nsp_tracegen_record(g, &site);
  /* A Python call site (1.6): a library frame on the program's own. */
  const char *pyf[2] = {"/usr/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py", "/srv/train.py"};
  const char *pyn[2] = {"all_reduce", "step"};
  uint64_t pyl[2] = {2501, 42};
  nsp_tracegen_set_pysite(g, nsp_tracegen_pysite(g, 0, 0, 2, pyf, pyl, pyn));
  nsp_tracegen_coll(g, NSP_API_AllReduce, w, 1024, ncclFloat16, ncclSum, -1);
  struct nsp_rec done = {.kind = NSP_REC_COMPLETION, .comm = w, .api = NSP_API_AllReduce, .seq = 1, .peer = -1,
                         .redop = -1, .flags = NSP_DONE_OK | NSP_DONE_TIMED, .t_enter = 2000000000ull,
                         .t_exit = 2000001000ull, .count = 2000002000ull};
  nsp_tracegen_record(g, &done);
  nsp_tracegen_coll(g, NSP_API_Broadcast, c, 8, ncclInt32, -1, 0);
  nsp_tracegen_group(g, 1);
  nsp_tracegen_p2p(g, rank ? NSP_API_Recv : NSP_API_Send, w, 64, ncclUint8, 1 - rank);
  nsp_tracegen_p2p(g, rank ? NSP_API_Send : NSP_API_Recv, w, rank ? 32 : 64, ncclUint8, 1 - rank);
  nsp_tracegen_group(g, 0);
  struct nsp_rec redop = {.kind = NSP_REC_REDOP, .api = NSP_API_RedOpCreatePreMulSum, .comm = w, .redop = 5,
                          .dtype = ncclFloat32, .peer = -1, .aux = 1, .count = 0x3f800000, .t_enter = 1000005000ull,
                          .t_exit = 1000005100ull};
  nsp_tracegen_record(g, &redop);
  nsp_tracegen_dropped(g, 7, NSP_DROP_RING_FULL);
  nsp_tracegen_fail_next(g, ncclSystemError, "socket closed");
  nsp_tracegen_coll(g, NSP_API_ReduceScatter, w, 512, ncclBfloat16, ncclAvg, -1);
  nsp_tracegen_async_error(g, w, ncclRemoteError, "peer gone");
  nsp_tracegen_comm_end(g, c, NSP_API_CommDestroy);
  nsp_tracegen_comm_end(g, w, NSP_API_CommAbort);
  return g;
}

/* ---- crash ring seeds (fuzz_ring.c) ---- */

/* A ring file being built, in the layout the shim writes
 * (include/ncclspy/trace.h): slot = u64 seq, then struct nsp_rec. */
struct ringgen {
  uint8_t *d;
  size_t len;
  struct nsp_ring_header *h;
  uint32_t next_blob;
};
#define RG_SLOT 128u
_Static_assert(8 + sizeof(struct nsp_rec) <= RG_SLOT, "a record fits a slot");
_Static_assert(sizeof(struct nsp_ring_header) <= 512, "the ring header fits the smallest header");

static void rg_field(struct nsp_ring_header *h, int id, size_t off, size_t size, int is_signed) {
  struct nsp_ring_field *f = &h->fields[h->nfields++];
  f->id = (uint16_t)id;
  f->offset = (uint16_t)(8 + off);
  f->size = (uint8_t)size;
  f->is_signed = (uint8_t)is_signed;
}
#define RG_FIELD(h, id, member, sgn) \
  rg_field(h, id, offsetof(struct nsp_rec, member), sizeof(((struct nsp_rec *)0)->member), sgn)

/* header_size bytes of header, nslots slots, nblobs blob slots of 512
 * bytes; the file is at least 4096 bytes.  Returns 0 or -1. */
static int rg_init(struct ringgen *g, uint32_t header_size, uint64_t nslots, uint32_t nblobs, uint32_t pid,
                   uint64_t realtime_ns) {
  size_t blob_offset = header_size + nslots * RG_SLOT;
  g->len = blob_offset + (size_t)nblobs * 512;
  if (g->len < 4096) g->len = 4096;
  g->d = calloc(1, g->len);
  g->next_blob = 0;
  if (!g->d) return -1;
  struct nsp_ring_header *h = g->h = (struct nsp_ring_header *)g->d;
  memcpy(h->magic, NSP_RING_MAGIC, 8);
  h->major = NSP_RING_MAJOR;
  h->minor = NSP_RING_MINOR;
  h->header_size = header_size;
  h->byte_order = NSP_RING_BYTE_ORDER;
  h->slot_size = RG_SLOT;
  h->nslots = nslots;
  h->ring_offset = header_size;
  h->blob_offset = blob_offset;
  h->blob_slot_size = 512;
  h->nblob_slots = nblobs;
  h->pid = pid;
  h->trace_realtime_ns = realtime_ns;
  RG_FIELD(h, NSP_RF_KIND, kind, 0);
  RG_FIELD(h, NSP_RF_API, api, 0);
  RG_FIELD(h, NSP_RF_FLAGS, flags, 0);
  RG_FIELD(h, NSP_RF_COMM, comm, 0);
  RG_FIELD(h, NSP_RF_RESULT, result, 1);
  RG_FIELD(h, NSP_RF_PEER, peer, 1);
  RG_FIELD(h, NSP_RF_DTYPE, dtype, 1);
  RG_FIELD(h, NSP_RF_REDOP, redop, 1);
  RG_FIELD(h, NSP_RF_GROUP_DEPTH, group_depth, 0);
  RG_FIELD(h, NSP_RF_AUX, aux, 0);
  RG_FIELD(h, NSP_RF_SEQ, seq, 0);
  RG_FIELD(h, NSP_RF_COUNT, count, 0);
  RG_FIELD(h, NSP_RF_STREAM, stream, 0);
  RG_FIELD(h, NSP_RF_SENDBUFF, sendbuff, 0);
  RG_FIELD(h, NSP_RF_RECVBUFF, recvbuff, 0);
  RG_FIELD(h, NSP_RF_GROUP_ID, group_id, 0);
  RG_FIELD(h, NSP_RF_T_ENTER, t_enter, 0);
  RG_FIELD(h, NSP_RF_T_EXIT, t_exit, 0);
  RG_FIELD(h, NSP_RF_LAST_ERROR, last_error, 0);
  RG_FIELD(h, NSP_RF_EXT, ext, 0);
  RG_FIELD(h, NSP_RF_SITE, site, 0);
  return 0;
}

/* Stores a blob for ring position pos, as the shim does.  Returns 0, or
 * -1 when the blob area has no room (then the blob is lost, counted). */
static int rg_blob(struct ringgen *g, uint64_t pos, uint32_t type, const uint8_t *data, size_t len) {
  struct nsp_ring_header *h = g->h;
  size_t head = sizeof(struct nsp_ring_blob), bs = h->blob_slot_size;
  uint32_t n = 1;
  if (len > bs - head) n += (uint32_t)((len - (bs - head) + bs - 8 - 1) / (bs - 8));
  if (g->next_blob + n > h->nblob_slots) {
    h->blobs_lost++;
    return -1;
  }
  uint8_t *b = g->d + h->blob_offset + (size_t)g->next_blob * bs;
  struct nsp_ring_blob hb = {.state = NSP_BLOB_READY, .pos = pos, .type = type, .len = (uint32_t)len, .nslots = n};
  memcpy(b, &hb, sizeof hb);
  size_t take = len < bs - head ? len : bs - head, got = take;
  memcpy(b + head, data, take);
  for (uint32_t k = 1; k < n; k++) {
    uint8_t *c = b + (size_t)k * bs;
    uint64_t st = NSP_BLOB_CONT;
    memcpy(c, &st, 8);
    take = len - got < bs - 8 ? len - got : bs - 8;
    memcpy(c + 8, data + got, take);
    got += take;
  }
  g->next_blob += n;
  return 0;
}

/* Commits rec at ring position pos: its blob (ext: the record encoded;
 * last_error: the text) first, then the slot. */
static int rg_put(struct ringgen *g, uint64_t pos, const struct nsp_rec *rec) {
  struct nsp_rec r = *rec;
  if (rec->ext) {
    struct nsp_buf b = {0};
    struct nsp_codec c = {0};
    int bad = nsp_encode(&b, &c, rec) < 0;
    nsp_codec_free(&c);
    if (bad) return -1;
    rg_blob(g, pos, NSP_BLOB_RECORD, b.data, b.len);
    nsp_buf_free(&b);
    r.ext = (const struct nsp_rec_ext *)(uintptr_t)0x7f0000001000ull; /* a pointer, useless after death */
  } else if (rec->last_error) {
    rg_blob(g, pos, NSP_BLOB_TEXT, (const uint8_t *)rec->last_error, strlen(rec->last_error));
    r.last_error = (const char *)(uintptr_t)0x7f0000002000ull;
  }
  uint8_t *slot = g->d + g->h->ring_offset + (pos & (g->h->nslots - 1)) * RG_SLOT;
  uint64_t seq = pos + 1;
  memcpy(slot, &seq, 8);
  memcpy(slot + 8, &r, sizeof r);
  return 0;
}

/* A process's last moments: PROCESS, COMM, CALLSITE (blobs), calls (one
 * failing with a text of two blob slots), and the other kinds, from ring
 * position `from` on, with `written` records before it in the trace. */
static int rg_fill(struct ringgen *g, uint64_t from, uint32_t pid, uint64_t realtime_ns) {
  static const char *const env[4] = {"RANK", "0", "NCCL_DEBUG", "WARN"};
  static const char *const mods[2] = {"/usr/lib/libtorch.so", "/usr/bin/python3"};
  static const char *const syms[2] = {"c10d::ProcessGroupNCCL::allreduce", "main"};
  static const uint64_t offs[2] = {0x1234, 0x42};
  struct nsp_rec_ext px = {.pid = pid, .ppid = 1, .nccl_version = 22809, .realtime_ns = realtime_ns,
                           .monotonic_ns = 1000000000ull, .host = "node-r", .shim_version = "1.2",
                           .nccl_path = "/usr/lib/libnccl.so.2", .nenv = 2, .env = env, .launcher = "torchrun",
                           .tracking = NSP_TRACK_COMPLETION | NSP_TRACK_CALLSITES};
  struct nsp_rec_ext cx = {.comm_id = 0xc0ffee, .handle = 0x55550000, .rank = 0, .nranks = 2, .device = 0,
                           .color = -1, .comm_name = "pg", .gpu_uuid = "GPU-1", .gpu_pci_bus_id = "0000:01:00.0",
                           .gpu_name = "H200"};
  struct nsp_rec_ext sx = {.nframes = 2, .frame_module = mods, .frame_symbol = syms, .frame_offset = offs};
  char text[700];
  memset(text, 'e', sizeof text - 1);
  memcpy(text, "socket closed: ", 15);
  text[sizeof text - 1] = 0;
  uint64_t t = 1000001000ull, p = from;
  struct nsp_rec recs[] = {
      {.kind = NSP_REC_PROCESS, .peer = -1, .dtype = -1, .redop = -1, .ext = &px},
      {.kind = NSP_REC_COMM, .api = NSP_API_CommInitRank, .comm = 1, .peer = -1, .dtype = -1, .redop = -1, .ext = &cx},
      {.kind = NSP_REC_CALLSITE, .site = 1, .flags = NSP_SITE_FULL, .peer = -1, .dtype = -1, .redop = -1, .ext = &sx},
      {.kind = NSP_REC_CALL, .api = NSP_API_AllReduce, .comm = 1, .seq = 1, .count = 1024, .dtype = ncclFloat32,
       .redop = ncclSum, .peer = -1, .stream = 0x10, .sendbuff = 0x1000, .recvbuff = 0x2000, .site = 1},
      {.kind = NSP_REC_COMPLETION, .api = NSP_API_AllReduce, .comm = 1, .seq = 1, .peer = -1, .dtype = -1,
       .redop = -1, .flags = NSP_DONE_OK | NSP_DONE_TIMED},
      {.kind = NSP_REC_CALL, .api = NSP_API_GroupStart, .group_id = 1, .group_depth = 1, .peer = -1, .dtype = -1,
       .redop = -1},
      {.kind = NSP_REC_CALL, .api = NSP_API_Send, .comm = 1, .seq = 1, .count = 64, .dtype = ncclUint8, .redop = -1,
       .peer = 1, .group_id = 1, .group_depth = 1},
      {.kind = NSP_REC_CALL, .api = NSP_API_GroupEnd, .group_id = 1, .peer = -1, .dtype = -1, .redop = -1},
      {.kind = NSP_REC_REDOP, .api = NSP_API_RedOpCreatePreMulSum, .comm = 1, .redop = 5, .dtype = ncclFloat32,
       .peer = -1, .aux = 1, .count = 0x3f800000},
      {.kind = NSP_REC_CALL, .api = NSP_API_Broadcast, .comm = 1, .seq = 2, .count = 8, .dtype = ncclInt32,
       .redop = -1, .peer = 0, .result = ncclSystemError, .last_error = text},
      {.kind = NSP_REC_ASYNC_ERROR, .comm = 1, .result = ncclRemoteError, .peer = -1, .dtype = -1, .redop = -1,
       .last_error = "peer gone"},
      {.kind = NSP_REC_HEARTBEAT, .peer = -1, .dtype = -1, .redop = -1, .count = 1},
      {.kind = NSP_REC_COMM_END, .api = NSP_API_CommAbort, .comm = 1, .peer = -1, .dtype = -1, .redop = -1},
  };
  for (size_t i = 0; i < sizeof recs / sizeof *recs; i++) {
    recs[i].t_enter = t;
    recs[i].t_exit = recs[i].kind == NSP_REC_HEARTBEAT ? t - 500 : t + 100;
    t += 1000;
    if (rg_put(g, p++, &recs[i]) < 0) return -1;
  }
  return 0;
}

static int put_ring(const char *outdir, const char *name, const uint8_t *trace, size_t tlen,
                    const struct ringgen *g) {
  struct nsp_buf b = {0};
  int ret = append(&b, trace, tlen);
  if (!ret) ret = append(&b, g->d, g->len);
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/ring", outdir);
  if (!ret) ret = put_file(dir, name, b.data, b.len);
  nsp_buf_free(&b);
  return ret;
}

/* The synthetic ring seeds.  Returns how many, or -1. */
static int ring_seeds(const char *outdir) {
  struct ringgen g;
  int n = 0;
  /* The shim's geometry (4096-byte header), a 16-slot ring in which the
   * process wrapped around: positions 20..32 committed, a free slot, a
   * slot still being filled, one already in the trace; drops counted. */
  if (rg_init(&g, 4096, 16, 8, 4242, 1700000000000000000ull) < 0) return -1;
  g.h->written = 20;
  g.h->dropped[NSP_DROP_RING_FULL] = 3;
  g.h->dropped[NSP_DROP_SIZE_CAP] = 1;
  int ret = rg_fill(&g, 20, 4242, 1700000000000000000ull);
  uint8_t *s = g.d + g.h->ring_offset + (33 & 15) * RG_SLOT;
  uint64_t seq = 33; /* position 33 (slot 1) still being filled: its seq is not 34 yet */
  memcpy(s, &seq, 8);
  s = g.d + g.h->ring_offset + (19 & 15) * RG_SLOT;
  seq = 20; /* position 19: already in the trace (below written) */
  memcpy(s, &seq, 8);
  s[8] = NSP_REC_CALL;
  if (!ret) ret = put_ring(outdir, "every-kind.ring", NULL, 0, &g);
  free(g.d);
  if (ret) return -1;
  n++;
  /* The smallest geometry: a 512-byte header, 16 slots, 3 blob slots, in
   * 4096 bytes; the blob area too small for every blob (blobs lost). */
  if (rg_init(&g, 512, 16, 3, 77, 1700000000000000001ull) < 0) return -1;
  ret = rg_fill(&g, 0, 77, 1700000000000000001ull);
  if (!ret) ret = put_ring(outdir, "small.ring", NULL, 0, &g);
  free(g.d);
  if (ret) return -1;
  n++;
  /* A trace, then its ring: the trace's frames hold positions below 5. */
  struct nsp_tracegen *t = nsp_tracegen_create("node-r", 4343, 0);
  if (!t) return -1;
  nsp_tracegen_set_clock(t, 1700000000000000002ull, 1000000000ull);
  uint32_t w = nsp_tracegen_comm(t, 0xc0ffee, 0, 2);
  nsp_tracegen_coll(t, NSP_API_AllReduce, w, 1024, ncclFloat32, ncclSum, -1);
  const uint8_t *td;
  size_t tlen;
  ret = w ? nsp_tracegen_bytes(t, &td, &tlen) : -1;
  if (!ret) ret = rg_init(&g, 4096, 32, 8, 4343, 1700000000000000002ull);
  if (!ret) {
    g.h->written = 5;
    ret = rg_fill(&g, 5, 4343, 1700000000000000002ull);
    if (!ret) ret = put_ring(outdir, "pair.ncclspy+ring", td, tlen, &g);
    free(g.d);
  }
  nsp_tracegen_destroy(t);
  return ret ? -1 : n + 1;
}

static int read_file(const char *path, struct nsp_buf *b) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "nsp_fuzz_seeds: %s: %s\n", path, strerror(errno));
    return -1;
  }
  uint8_t chunk[65536];
  size_t got;
  int ret = 0;
  while (!ret && (got = fread(chunk, 1, sizeof chunk, f)) > 0) ret = append(b, chunk, got);
  if (ferror(f)) ret = -1;
  fclose(f);
  return ret;
}

/* --ring TRACE OUTFILE: TRACE, then TRACE.ring with only the blob slots
 * of its ready blobs, packed (readers find blobs by position, not by
 * place), so that a seed from a real ring stays small. */
static int ring_pair(const char *trace, const char *out) {
  struct nsp_buf t = {0}, r = {0}, o = {0};
  char path[4200];
  snprintf(path, sizeof path, "%s.ring", trace);
  int ret = read_file(trace, &t);
  if (!ret) ret = read_file(path, &r);
  struct nsp_ring_header h;
  if (!ret && (r.len < sizeof h || memcmp(r.data, NSP_RING_MAGIC, 8) != 0)) {
    fprintf(stderr, "nsp_fuzz_seeds: %s: not a ring file\n", path);
    ret = -1;
  }
  if (!ret) {
    memcpy(&h, r.data, sizeof h);
    size_t bs = h.blob_slot_size;
    if (bs < 64 || h.blob_offset > r.len || (uint64_t)h.nblob_slots * bs > r.len - h.blob_offset) {
      fprintf(stderr, "nsp_fuzz_seeds: %s: bad blob geometry\n", path);
      ret = -1;
    }
    if (!ret) ret = append(&o, t.data, t.len);
    size_t ring_start = o.len;
    if (!ret) ret = append(&o, r.data, h.blob_offset);
    uint32_t kept = 0;
    for (uint32_t i = 0; !ret && i < h.nblob_slots;) {
      const uint8_t *b = r.data + h.blob_offset + (size_t)i * bs;
      struct nsp_ring_blob hb;
      memcpy(&hb, b, sizeof hb);
      if (hb.state != NSP_BLOB_READY || !hb.nslots || hb.nslots > h.nblob_slots - i) {
        i++;
        continue;
      }
      ret = append(&o, b, (size_t)hb.nslots * bs);
      kept += hb.nslots;
      i += hb.nslots;
    }
    static const uint8_t zero[4096];
    if (!ret && o.len - ring_start < sizeof zero) ret = append(&o, zero, sizeof zero - (o.len - ring_start));
    if (!ret) {
      struct nsp_ring_header *oh = (struct nsp_ring_header *)(o.data + ring_start);
      uint32_t nb = kept;
      memcpy(&oh->nblob_slots, &nb, sizeof nb);
      FILE *f = fopen(out, "wb");
      if (!f || fwrite(o.data, 1, o.len, f) != o.len || fclose(f) != 0) {
        fprintf(stderr, "nsp_fuzz_seeds: %s: %s\n", out, strerror(errno));
        ret = -1;
      } else {
        printf("%s: %zu bytes of trace, %zu of ring (%u blob slots kept of %u)\n", out, t.len,
               o.len - ring_start, kept, h.nblob_slots);
      }
    }
  }
  nsp_buf_free(&t);
  nsp_buf_free(&r);
  nsp_buf_free(&o);
  return ret;
}

int main(int argc, char **argv) {
  if (argc == 4 && strcmp(argv[1], "--ring") == 0) return ring_pair(argv[2], argv[3]) < 0;
  if (argc != 2) {
    fprintf(stderr, "usage: %s OUTDIR\n       %s --ring TRACE OUTFILE\n", argv[0], argv[0]);
    return 2;
  }
  char dir[4096];
  const char *subs[4] = {"", "/reader", "/job", "/ring"};
  for (int i = 0; i < 4; i++) {
    snprintf(dir, sizeof dir, "%s%s", argv[1], subs[i]);
    if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
      fprintf(stderr, "nsp_fuzz_seeds: %s: %s\n", dir, strerror(errno));
      return 1;
    }
  }
  int nseeds = 0;
  static const char *const cases[] = {"c01", "c02", "c03", "c04", "c05", "c06",
                                      "c07", "c08", "c09", "c10", "c11"};
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
    struct nsp_tracegen *gens[NSP_CASE_MAX_RANKS] = {0};
    int n = nsp_case_build(cases[k], gens);
    struct nsp_buf z = {0}, raw = {0};
    int ret = n > 0 ? 0 : -1;
    for (int r = 0; r < n && !ret; r++) {
      char name[64];
      snprintf(name, sizeof name, "case-%s.rank%d", cases[k], r);
      ret = seed(argv[1], name, gens[r], &z, &raw);
      nseeds += 2;
    }
    for (int r = 0; r < NSP_CASE_MAX_RANKS; r++) nsp_tracegen_destroy(gens[r]);
    if (!ret) ret = put_job(argv[1], cases[k], &z, &raw);
    nseeds += 2;
    nsp_buf_free(&z);
    nsp_buf_free(&raw);
    if (ret) {
      fprintf(stderr, "nsp_fuzz_seeds: case %s failed\n", cases[k]);
      return 1;
    }
  }
  struct nsp_buf z = {0}, raw = {0};
  for (int r = 0; r < 2; r++) {
    struct nsp_tracegen *g = every_kind(r, 0xe4e4e4e4e4e4e4e4ull);
    char name[64];
    snprintf(name, sizeof name, "every-kind.rank%d", r);
    int ret = g ? seed(argv[1], name, g, &z, &raw) : -1;
    nsp_tracegen_destroy(g);
    if (ret) return 1;
    nseeds += 2;
  }
  if (put_job(argv[1], "every-kind", &z, &raw) < 0) return 1;
  nseeds += 2;
  nsp_buf_free(&z);
  nsp_buf_free(&raw);
  int nring = ring_seeds(argv[1]);
  if (nring < 0) {
    fprintf(stderr, "nsp_fuzz_seeds: ring seeds failed\n");
    return 1;
  }
  printf("%d seeds in %s/reader and %s/job, %d in %s/ring\n", nseeds, argv[1], argv[1], nring, argv[1]);
  return 0;
}
