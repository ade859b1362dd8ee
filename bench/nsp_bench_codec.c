/* nsp_bench_codec.c - what the record codec costs: ns per record to
 * encode (the shim's writer thread) and to decode (every analyzer pass).
 *
 *   nsp_bench_codec [--records N] [--rounds R]
 *
 * A training-like stream: per step, 40 gradient all-reduces on one
 * communicator (DDP buckets: same count, dtype and stream, new times),
 * a loss all-reduce every 10 steps on a second one, their COMPLETION
 * records, a group of 8 send/recvs, and a HEARTBEAT now and then; frames
 * of 4096 records, as the writer makes them.  Encoding and decoding run in
 * interleaved rounds against a baseline in the same process, a memcpy of
 * the same encoded bytes, so the ratio survives a noisy machine; medians
 * over rounds.  Figures, not a test. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nsp_bench_stats.h"
#include "nsp_nccl.h"
#include "nsp_index.h"
#include "nsp_record.h"


#define NSP_FRAME_RECORDS 4096

/* The stream of records, n of them.  all_done: every call gets its
 * COMPLETION (the gradient all-reduces' 4 calls late, the loss's at once,
 * a send/recv group's one for the group), as the shim's poller writes
 * them; else only every 4th gradient all-reduce's (the figures of
 * bench/README.md). */
static struct nsp_rec *make_stream(size_t n, int all_done) {
  struct nsp_rec *v = calloc(n, sizeof *v);
  if (!v) return NULL;
  uint64_t t = 1000000000, seq1 = 0, seq2 = 0, p2p = 0, group = 0;
  size_t i = 0;
  for (uint64_t step = 0; i < n; step++) {
    for (int b = 0; b < 40 && i < n; b++) {
      struct nsp_rec *r = &v[i++];
      r->kind = NSP_REC_CALL;
      r->api = NSP_API_AllReduce;
      r->comm = 1;
      r->dtype = ncclBfloat16;
      r->redop = ncclSum;
      r->peer = -1;
      r->count = 25u << 20;
      r->seq = ++seq1;
      r->stream = 0x7f0000001000;
      r->sendbuff = r->recvbuff = 0x7f1000000000 + (uint64_t)b * (100u << 20);
      r->t_enter = t += 30000 + (t % 7) * 100;
      r->t_exit = t + 4000;
      r->site = 1 + (uint32_t)(b % 3);
      if (i < n && (all_done ? seq1 > 4 : b % 4 == 3)) { /* the poller's completions */
        struct nsp_rec *d = &v[i++];
        d->kind = NSP_REC_COMPLETION;
        d->api = NSP_API_AllReduce;
        d->comm = 1;
        d->seq = all_done ? seq1 - 4 : seq1 - 1;
        d->peer = -1;
        d->flags = NSP_DONE_OK | NSP_DONE_TIMED;
        d->t_enter = t - 20000;
        d->t_exit = t - 2000;
        d->count = t + 1000; /* t_seen */
      }
    }
    if (step % 10 == 0 && i < n) {
      struct nsp_rec *r = &v[i++];
      *r = (struct nsp_rec){.kind = NSP_REC_CALL, .api = NSP_API_AllReduce, .comm = 2, .dtype = ncclFloat32,
                            .redop = ncclAvg, .peer = -1, .count = 1, .seq = ++seq2, .stream = 0x7f0000001000,
                            .sendbuff = 0x7f2000000000, .recvbuff = 0x7f2000000000, .t_enter = t += 50000,
                            .t_exit = t + 3000};
      if (all_done && i < n)
        v[i++] = (struct nsp_rec){.kind = NSP_REC_COMPLETION, .api = NSP_API_AllReduce, .comm = 2, .seq = seq2,
                                  .peer = -1, .flags = NSP_DONE_OK, .t_enter = t, .t_exit = t + 2000,
                                  .count = t + 3000};
    }
    group++;
    p2p++;
    for (int k = 0; k < 10 && i < n; k++) {
      struct nsp_rec *r = &v[i++];
      int api = k == 0 ? NSP_API_GroupStart : k == 9 ? NSP_API_GroupEnd : k % 2 ? NSP_API_Send : NSP_API_Recv;
      *r = (struct nsp_rec){.kind = NSP_REC_CALL, .api = (uint8_t)api, .dtype = -1, .redop = -1, .peer = -1,
                            .t_enter = t += 2000, .t_exit = t + 500, .group_id = k == 9 ? 0 : group,
                            .group_depth = k == 9 ? 0 : 1};
      if (api == NSP_API_Send || api == NSP_API_Recv) {
        r->comm = 3;
        r->peer = (k / 2) % 4;
        r->seq = p2p;
        r->count = 1u << 20;
        r->dtype = ncclFloat16;
        r->stream = 0x7f0000002000;
        *(api == NSP_API_Send ? &r->sendbuff : &r->recvbuff) = 0x7f3000000000;
      }
    }
    if (all_done && i < n)
      v[i++] = (struct nsp_rec){.kind = NSP_REC_COMPLETION, .group_id = group, .peer = -1, .flags = NSP_DONE_OK,
                                .t_enter = t, .t_exit = t + 2000, .count = t + 3000};
    if (step % 50 == 49 && i < n)
      v[i++] = (struct nsp_rec){.kind = NSP_REC_HEARTBEAT, .t_enter = t, .count = 3, .t_exit = t - 100000};
  }
  return v;
}

/* Encodes v[0, n) in frames into out (cleared first). */
static int encode_all(const struct nsp_rec *v, size_t n, struct nsp_buf *out, struct nsp_codec *c) {
  out->len = 0;
  for (size_t i = 0; i < n; i++) {
    if (i % NSP_FRAME_RECORDS == 0) nsp_codec_reset(c);
    if (nsp_encode(out, c, &v[i]) < 0) return -1;
  }
  return 0;
}

/* encode_all plus the trace index the writer builds from the same
 * records (common/nsp_index.h): a process that tracks completions, its
 * three communicators named, then the stream; an index frame per frame. */
static int encode_all_ix(const struct nsp_rec *v, size_t n, struct nsp_buf *out, struct nsp_codec *c,
                         struct nsp_buf *ixo) {
  struct nsp_index_builder b;
  nsp_index_init(&b);
  struct nsp_rec_ext x;
  memset(&x, 0, sizeof x);
  x.tracking = NSP_TRACK_COMPLETION | NSP_TRACK_TIMING;
  struct nsp_rec pr = {.kind = NSP_REC_PROCESS, .ext = &x};
  nsp_index_add(&b, &pr);
  for (uint32_t k = 1; k <= 3; k++) {
    struct nsp_rec_ext cx;
    memset(&cx, 0, sizeof cx);
    cx.comm_id = 0x1000 + k;
    cx.rank = 0;
    cx.nranks = 8;
    struct nsp_rec cr = {.kind = NSP_REC_COMM, .comm = k, .ext = &cx};
    nsp_index_add(&b, &cr);
  }
  out->len = 0;
  ixo->len = 0;
  int ret = 0;
  size_t start = 0; /* the frame's first byte (the index hashes the frame's bytes) */
  for (size_t i = 0; i < n && !ret; i++) {
    if (i % NSP_FRAME_RECORDS == 0) {
      if (i && (nsp_index_put(&b, out->data + start, out->len - start, ixo) < 0)) ret = -1;
      nsp_index_next(&b, 1);
      nsp_codec_reset(c);
      start = out->len;
    }
    if (nsp_encode(out, c, &v[i]) < 0 || nsp_index_add(&b, &v[i]) < 0) ret = -1;
  }
  if (!ret && nsp_index_put(&b, out->data + start, out->len - start, ixo) < 0) ret = -1;
  nsp_index_free(&b);
  return ret;
}

/* Decodes what encode_all wrote; returns the records read. */
static size_t decode_all(const struct nsp_buf *in, size_t n, struct nsp_codec *c, struct nsp_dec_store *st) {
  const uint8_t *p = in->data, *end = in->data + in->len;
  struct nsp_rec r;
  size_t got = 0;
  uint64_t sum = 0;
  for (; got < n; got++) {
    if (got % NSP_FRAME_RECORDS == 0) nsp_codec_reset(c);
    if (nsp_decode(&p, end, c, &r, st) != 1) break;
    sum += r.seq;
  }
  if (sum == 42) fputc(' ', stderr); /* keeps the loop */
  return got;
}

int main(int argc, char **argv) {
  size_t nrec = 200000;
  int rounds = 21;
  static const struct option opts[] = {{"records", required_argument, NULL, 'n'},
                                       {"rounds", required_argument, NULL, 'r'},
                                       {NULL, 0, NULL, 0}};
  for (int o; (o = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
    if (o == 'n') nrec = strtoul(optarg, NULL, 10);
    else if (o == 'r') rounds = atoi(optarg);
    else return 2;
  }
  if (nrec < 1 || rounds < 1) return 2;
  struct nsp_rec *v = make_stream(nrec, 0), *vd = make_stream(nrec, 1);
  struct nsp_buf buf = {0}, copy = {0};
  struct nsp_codec enc = {0}, dec = {0};
  struct nsp_dec_store st = {0};
  if (!v || !vd || encode_all(v, nrec, &buf, &enc) < 0 || nsp_buf_reserve(&copy, buf.len) < 0) return 1;
  size_t vbytes = buf.len;
  if (decode_all(&buf, nrec, &dec, &st) != nrec) {
    fprintf(stderr, "nsp_bench_codec: the stream does not decode back\n");
    return 1;
  }
  double *e = malloc((size_t)rounds * sizeof *e), *d = malloc((size_t)rounds * sizeof *d);
  double *m = malloc((size_t)rounds * sizeof *m), *ei = malloc((size_t)rounds * sizeof *ei);
  double *ed = malloc((size_t)rounds * sizeof *ed);
  struct nsp_buf ixo = {0};
  if (!e || !d || !m || !ei || !ed) return 1;
  for (int r = 0; r < rounds; r++) {
    encode_all(v, nrec, &buf, &enc);
    uint64_t t0 = nsp_bench_now_ns();
    memcpy(copy.data, buf.data, buf.len);
    uint64_t t1 = nsp_bench_now_ns();
    encode_all(v, nrec, &buf, &enc);
    uint64_t t2 = nsp_bench_now_ns();
    decode_all(&buf, nrec, &dec, &st);
    /* The stream where every call completes: alone, then with its index. */
    uint64_t t3 = nsp_bench_now_ns();
    encode_all(vd, nrec, &buf, &enc);
    uint64_t t4 = nsp_bench_now_ns();
    if (encode_all_ix(vd, nrec, &buf, &enc, &ixo) < 0) return 1;
    uint64_t t5 = nsp_bench_now_ns();
    ed[r] = (double)(t4 - t3) / (double)nrec;
    ei[r] = (double)(t5 - t4) / (double)nrec;
    m[r] = (double)(t1 - t0) / (double)nrec;
    e[r] = (double)(t2 - t1) / (double)nrec;
    d[r] = (double)(t3 - t2) / (double)nrec;
  }
  double me = nsp_bench_median(e, rounds), md = nsp_bench_median(d, rounds), mm = nsp_bench_median(m, rounds);
  printf("codec: %zu records, %zu bytes (%.2f bytes/record), %d rounds, medians\n", nrec, vbytes,
         (double)vbytes / (double)nrec, rounds);
  printf("  encode %.1f ns/record, decode %.1f ns/record; baseline memcpy of the bytes %.2f ns/record\n", me, md,
         mm);
  printf("  ratios to the baseline: encode %.1fx, decode %.1fx\n", me / mm, md / mm);
  double mi = nsp_bench_median(ei, rounds), mdn = nsp_bench_median(ed, rounds);
  printf("  every call completed: encode %.1f ns/record, with the trace index %.1f (%.1f more, %.2fx; the writer\n"
         "  thread's, nothing on the calling thread); index %zu bytes, %.2f%% of the frames' bytes\n",
         mdn, mi, mi - mdn, mi / mdn, ixo.len, 100.0 * (double)ixo.len / (double)buf.len);
  free(v);
  free(e);
  free(d);
  free(m);
  free(ei);
  free(ed);
  free(vd);
  nsp_buf_free(&ixo);
  nsp_buf_free(&buf);
  nsp_buf_free(&copy);
  nsp_codec_free(&enc);
  nsp_codec_free(&dec);
  nsp_dec_store_free(&st);
  return 0;
}
