/* nsp_fuzz_seeds.c - writes seed inputs for the fuzz targets.
 *
 * usage: nsp_fuzz_seeds OUTDIR   (makes OUTDIR/reader and OUTDIR/job)
 *
 * Seeds are the synthetic failure cases c01..c11 (tests/unit/nsp_an_cases)
 * and a trace with every record kind, each twice: as the shim writes them
 * (zstd-compressed frames with checksums) and with every frame rewritten
 * as raw zstd blocks without a checksum.  The raw form is still a valid
 * trace, and it lets a fuzzer's byte mutations reach the record decoder
 * instead of dying in zstd's checksum.  reader/ gets one file per rank;
 * job/ one input per case, its ranks' files concatenated (fuzz_job.c cuts
 * them apart again at each file's magic). */
#include <errno.h>
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

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s OUTDIR\n", argv[0]);
    return 2;
  }
  char dir[4096];
  const char *subs[3] = {"", "/reader", "/job"};
  for (int i = 0; i < 3; i++) {
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
  printf("%d seeds in %s/reader and %s/job\n", nseeds, argv[1], argv[1]);
  return 0;
}
