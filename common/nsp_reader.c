/* nsp_reader.c - header check, zstd frame walk, record decode. */
#include "nsp_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

struct nsp_reader {
  const uint8_t *data;
  size_t len;
  size_t map_len; /* nonzero when data is our mmap */
  size_t off;     /* next frame's byte offset in the file */
  struct nsp_file_header hdr;
  ZSTD_DCtx *dctx;
  struct nsp_buf frame; /* the current frame, decompressed */
  const uint8_t *p;     /* next record in frame */
  size_t frame_off;     /* file offset of the current frame */
  struct nsp_codec codec;
  struct nsp_dec_store store;
  uint64_t frames;
  int done;
  char problem[256];
};

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
  if (r->len < 112 || memcmp(d, NSP_MAGIC, 8) != 0) {
    snprintf(err, errlen, "not an ncclspy trace (%s)", r->len < 112 ? "shorter than its header" : "bad magic");
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
    snprintf(err, errlen, "trace format %u.%u, this reader knows %d.x", h->major, h->minor, NSP_FORMAT_MAJOR);
    return NULL;
  }
  if (h->header_size < 112 || h->header_size > r->len) {
    snprintf(err, errlen, "bad header size %u at byte 12", h->header_size);
    return NULL;
  }
  r->off = h->header_size;
  r->dctx = ZSTD_createDCtx();
  if (!r->dctx) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
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

struct nsp_reader *nsp_reader_open(const char *path, char *err, size_t errlen) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    snprintf(err, errlen, "cannot open: %s", strerror(errno));
    return NULL;
  }
  struct stat st;
  if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
    snprintf(err, errlen, "not a regular file");
    close(fd);
    return NULL;
  }
  struct nsp_reader *r = calloc(1, sizeof *r);
  if (!r) {
    close(fd);
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  if (st.st_size > 0) {
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED) {
      snprintf(err, errlen, "cannot map: %s", strerror(errno));
      close(fd);
      free(r);
      return NULL;
    }
    r->data = m;
    r->len = r->map_len = (size_t)st.st_size;
  }
  close(fd);
  if (!open_common(r, err, errlen)) {
    nsp_reader_destroy(r);
    return NULL;
  }
  return r;
}

const struct nsp_file_header *nsp_reader_header(const struct nsp_reader *r) { return &r->hdr; }
const char *nsp_reader_problem(const struct nsp_reader *r) { return r->problem[0] ? r->problem : NULL; }
uint64_t nsp_reader_frames(const struct nsp_reader *r) { return r->frames; }

/* Decompresses the frame at r->off into r->frame.  Returns 1, 0 at a clean
 * end, -1 at damage (problem set). */
static int next_frame(struct nsp_reader *r) {
  const uint8_t *src;
  size_t avail, csize;
  /* A loop, not recursion, over skippable frames: a file of millions of
   * them must not overflow the stack. */
  for (;;) {
    if (r->off >= r->len) return 0;
    src = r->data + r->off;
    avail = r->len - r->off;
    csize = ZSTD_findFrameCompressedSize(src, avail);
    if (ZSTD_isError(csize)) {
      /* A frame the process was writing when it died: expected, not damage. */
      snprintf(r->problem, sizeof r->problem,
               "incomplete frame at byte %zu (%zu bytes after the last whole frame; the process "
               "probably died while writing)", r->off, avail);
      return 0;
    }
    if (avail < 4 || (le32(src) & 0xFFFFFFF0u) != 0x184D2A50u) break;
    r->off += csize; /* skippable frame (RFC 8878 3.1.2) */
  }
  ZSTD_DCtx_reset(r->dctx, ZSTD_reset_session_only);
  r->frame.len = 0;
  ZSTD_inBuffer in = {src, csize, 0};
  for (;;) {
    if (nsp_buf_reserve(&r->frame, 1 << 16) < 0) {
      snprintf(r->problem, sizeof r->problem, "out of memory at frame at byte %zu", r->off);
      return -1;
    }
    ZSTD_outBuffer out = {r->frame.data, r->frame.cap, r->frame.len};
    size_t ret = ZSTD_decompressStream(r->dctx, &out, &in);
    r->frame.len = out.pos;
    if (ZSTD_isError(ret)) {
      snprintf(r->problem, sizeof r->problem, "corrupt zstd frame at byte %zu: %s", r->off,
               ZSTD_getErrorName(ret));
      return -1;
    }
    if (r->frame.len > NSP_MAX_FRAME) {
      snprintf(r->problem, sizeof r->problem, "frame at byte %zu decompresses past %u bytes", r->off,
               NSP_MAX_FRAME);
      return -1;
    }
    if (ret == 0) break;
    if (in.pos == in.size && out.pos < out.size) {
      snprintf(r->problem, sizeof r->problem, "truncated zstd frame at byte %zu", r->off);
      return -1;
    }
  }
  r->frame_off = r->off;
  r->off += csize;
  r->p = r->frame.data;
  r->frames++;
  nsp_codec_reset(&r->codec);
  return 1;
}

int nsp_reader_next(struct nsp_reader *r, struct nsp_rec *rec) {
  if (r->done) return r->problem[0] && r->done < 0 ? -1 : 0;
  for (;;) {
    if (r->p && r->p < r->frame.data + r->frame.len) {
      const uint8_t *start = r->p;
      int ret = nsp_decode(&r->p, r->frame.data + r->frame.len, &r->codec, rec, &r->store);
      if (ret == 1) {
        if (rec->kind == 0) continue; /* unknown kind, skipped */
        return 1;
      }
      snprintf(r->problem, sizeof r->problem,
               "malformed record at byte %zu of the frame at file byte %zu",
               (size_t)(start - r->frame.data), r->frame_off);
      r->done = -1;
      return -1;
    }
    int f = next_frame(r);
    if (f <= 0) {
      r->done = f < 0 ? -1 : 1;
      return f;
    }
  }
}

void nsp_reader_destroy(struct nsp_reader *r) {
  if (!r) return;
  if (r->map_len) munmap((void *)r->data, r->map_len);
  ZSTD_freeDCtx(r->dctx);
  nsp_buf_free(&r->frame);
  nsp_codec_free(&r->codec);
  nsp_dec_store_free(&r->store);
  free(r);
}
