/* test_ring_scale.c - reading a large hostile ring file takes linear time.
 *
 * usage: test_ring_scale [LOG2_SLOTS]   (default 18)
 *
 * Builds in memory a ring file of 2^LOG2_SLOTS committed slots, each a CALL
 * whose last_error text is to be found in the blob area, and as many blob
 * slots (smallest geometry: 32-byte slots, 64-byte blob slots: 24 MiB by
 * default).  Every fourth position has its text blob, placed in reverse
 * order; the other blobs are decoys for positions no slot holds, with
 * duplicates of the real ones (unusable headers, which must not win) mixed
 * in.  A reader that scans the blob area for each slot does 2^36 blob
 * comparisons here (hours); an indexed one finishes in well under a
 * second.  Also checks that every record is recovered with exactly the
 * right text.  Output is TAP; the test's timeout is what catches a
 * quadratic reader. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nsp_ringread.h"

static int tests, failures;

static void ok(int cond, const char *what) {
  tests++;
  if (!cond) failures++;
  printf("%s %d - %s\n", cond ? "ok" : "not ok", tests, what);
}

static void put(uint8_t *p, uint64_t v, int n) {
  for (int i = 0; i < n; i++) p[i] = (uint8_t)(v >> (8 * i));
}

enum { SLOT = 32, BLOB = 64, HEADER = 512 };

/* A text blob for position pos at blob slot i: "e<pos>". */
static void blob(uint8_t *area, uint32_t i, uint64_t pos, uint32_t nslots) {
  uint8_t *b = area + (size_t)i * BLOB;
  char text[24];
  int len = snprintf(text, sizeof text, "e%llu", (unsigned long long)pos);
  put(b, NSP_BLOB_READY, 8);
  put(b + 8, pos, 8);
  put(b + 16, NSP_BLOB_TEXT, 4);
  put(b + 20, (uint64_t)len, 4);
  put(b + 24, nslots, 4);
  memcpy(b + 32, text, (size_t)len);
}

int main(int argc, char **argv) {
  int lg = argc > 1 ? atoi(argv[1]) : 18;
  if (lg < 4 || lg > 22) {
    fprintf(stderr, "usage: %s [LOG2_SLOTS 4..22]\n", argv[0]);
    return 2;
  }
  uint64_t nslots = 1ull << lg, written = 1000;
  uint32_t nblobs = (uint32_t)nslots;
  size_t ring_offset = HEADER, blob_offset = ring_offset + nslots * SLOT;
  size_t len = blob_offset + (size_t)nblobs * BLOB;
  uint8_t *d = calloc(1, len);
  if (!d) return 2;
  memcpy(d, NSP_RING_MAGIC, 8);
  put(d + 8, NSP_RING_MAJOR, 2);
  put(d + 12, HEADER, 4);
  put(d + 16, NSP_RING_BYTE_ORDER, 4);
  put(d + 20, SLOT, 4);
  put(d + 24, nslots, 8);
  put(d + 32, ring_offset, 8);
  put(d + 40, blob_offset, 8);
  put(d + 48, BLOB, 4);
  put(d + 52, nblobs, 4);
  put(d + 56, 4242, 4);
  put(d + 60, 2, 4);                  /* nfields */
  put(d + 64, 1700000000000000000ull, 8);
  put(d + 72, written, 8);
  uint8_t *f = d + 256;               /* the field table */
  put(f, NSP_RF_KIND, 2), put(f + 2, 8, 2), f[4] = 1;
  put(f + 8, NSP_RF_LAST_ERROR, 2), put(f + 10, 16, 2), f[12] = 8;
  for (uint64_t k = 0; k < nslots; k++) {
    uint64_t p = written + k;
    uint8_t *s = d + ring_offset + (p & (nslots - 1)) * SLOT;
    put(s, p + 1, 8);
    s[8] = NSP_REC_CALL;
    put(s + 16, 0x7f0000001000ull, 8); /* had a last_error pointer */
  }
  uint8_t *area = d + blob_offset;
  uint32_t next = 0;
  for (uint64_t k = nslots; k-- > 0;) {
    uint64_t p = written + k;
    if (k % 4 == 0) {
      if (k % 8 == 0) blob(area, next++, p, nblobs); /* an unusable duplicate first: too many slots */
      blob(area, next++, p, 1);
    }
  }
  for (uint64_t k = 0; next < nblobs; k++) blob(area, next++, written + nslots + k, 1); /* decoys */

  struct nsp_file_header h;
  memset(&h, 0, sizeof h);
  h.pid = 4242;
  h.realtime_ns = 1700000000000000000ull;
  char note[160];
  clock_t t0 = clock();
  struct nsp_ringread *rr = nsp_ringread_open_mem(d, len, "scale.ring", &h, note, sizeof note);
  ok(rr != NULL, "the ring file opens");
  if (!rr) {
    printf("# %s\n", note);
    free(d);
    return 1;
  }
  static const uint64_t seen[4];
  struct nsp_rec rec;
  uint64_t n = 0, texts = 0, wrong = 0;
  while (nsp_ringread_next(rr, 0, seen, &rec) == 1) {
    if (rec.kind == NSP_REC_RINGSTATE) continue; /* the ring's state, after its records */
    uint64_t k = n++;
    char want[24];
    snprintf(want, sizeof want, "e%llu", (unsigned long long)(written + k));
    if (rec.last_error) texts++;
    if (rec.kind != NSP_REC_CALL || (k % 4 == 0) != (rec.last_error != NULL) ||
        (rec.last_error && strcmp(rec.last_error, want)))
      wrong++;
  }
  double cpu = (double)(clock() - t0) / CLOCKS_PER_SEC;
  ok(n == nslots && nsp_ringread_recovered(rr) == nslots, "every slot's record is recovered");
  ok(texts == nslots / 4 && wrong == 0, "each record has exactly its own text, or none");
  ok(nsp_ringread_damaged(rr) == 0 && note[0] == 0, "nothing is reported damaged");
  printf("# %llu slots, %u blob slots (%zu bytes) read in %.3f s of CPU\n", (unsigned long long)nslots,
         nblobs, len, cpu);
  nsp_ringread_close(rr);
  free(d);
  printf("1..%d\n", tests);
  return failures ? 1 : 0;
}
