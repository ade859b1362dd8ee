/* test_an_codec.c - the record codec and the trace reader, as the
 * analyzer depends on them: every record kind round-trips with all its
 * fields; unknown kinds and unknown trailing fields are skipped; a trace
 * cut at any byte reads back exactly the records of its whole frames; a
 * damaged byte anywhere never crashes the reader. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nsp_names.h"
#include "nsp_reader.h"
#include "nsp_record.h"
#include "nsp_tracegen.h"

/* ---- helpers ------------------------------------------------------------ */

/* A record as one canonical line, every field, so two records compare
 * with strcmp and a failure shows the difference. */
static void canon(const struct nsp_rec *r, char *buf, size_t len) {
  int n = snprintf(buf, len,
                   "kind=%u api=%u flags=%u comm=%u result=%d peer=%d dtype=%d redop=%d gdepth=%u aux=%u seq=%llu "
                   "count=%llu stream=%llx send=%llx recv=%llx gid=%llu te=%llu tx=%llu err=%s site=%u",
                   r->kind, r->api, r->flags, r->comm, r->result, r->peer, r->dtype, r->redop, r->group_depth, r->aux,
                   (unsigned long long)r->seq, (unsigned long long)r->count, (unsigned long long)r->stream,
                   (unsigned long long)r->sendbuff, (unsigned long long)r->recvbuff, (unsigned long long)r->group_id,
                   (unsigned long long)r->t_enter, (unsigned long long)r->t_exit, r->last_error ? r->last_error : "-",
                   r->site);
  const struct nsp_rec_ext *x = r->ext;
  if (!x || n < 0 || (size_t)n >= len) return;
  n += snprintf(buf + n, len - (size_t)n,
                " | id=%llx parent=%llx handle=%llx rank=%d nranks=%d dev=%d color=%d key=%d split=%u name=%s pid=%u "
                "ppid=%u nccl=%d rt=%llu mono=%llu host=%s shim=%s path=%s nenv=%u",
                (unsigned long long)x->comm_id, (unsigned long long)x->parent_id, (unsigned long long)x->handle, x->rank,
                x->nranks, x->device, x->color, x->key, x->split_index, x->comm_name ? x->comm_name : "-", x->pid,
                x->ppid, x->nccl_version, (unsigned long long)x->realtime_ns, (unsigned long long)x->monotonic_ns,
                x->host ? x->host : "-", x->shim_version ? x->shim_version : "-", x->nccl_path ? x->nccl_path : "-",
                x->nenv);
  for (uint32_t i = 0; x->env && i < x->nenv && n > 0 && (size_t)n < len; i++)
    n += snprintf(buf + n, len - (size_t)n, " %s=%s", x->env[2 * i], x->env[2 * i + 1]);
  /* format 1.1: PROCESS versions and tracking, COMM GPU identity, CALLSITE frames */
  if (n < 0 || (size_t)n >= len) return;
  n += snprintf(buf + n, len - (size_t)n, " | drv=%d rt=%d launcher=%s tracking=%u uuid=%s pci=%s gpu=%s nframes=%u",
                x->driver_version, x->runtime_version, x->launcher ? x->launcher : "-", x->tracking,
                x->gpu_uuid ? x->gpu_uuid : "-", x->gpu_pci_bus_id ? x->gpu_pci_bus_id : "-",
                x->gpu_name ? x->gpu_name : "-", x->nframes);
  for (uint32_t i = 0; x->frame_module && i < x->nframes && n > 0 && (size_t)n < len; i++)
    n += snprintf(buf + n, len - (size_t)n, " [%s+%llx %s]", x->frame_module[i] ? x->frame_module[i] : "",
                  (unsigned long long)x->frame_offset[i], x->frame_symbol[i] ? x->frame_symbol[i] : "");
}

/* Encodes recs (one frame) and decodes them back; each decoded record
 * must equal its original, field by field. */
static void roundtrip(const struct nsp_rec *recs, size_t n) {
  struct nsp_buf buf = {0};
  struct nsp_codec enc = {0}, dec = {0};
  struct nsp_dec_store store = {0};
  for (size_t i = 0; i < n; i++) assert_int_equal(nsp_encode(&buf, &enc, &recs[i]), 0);
  const uint8_t *p = buf.data, *end = buf.data + buf.len;
  for (size_t i = 0; i < n; i++) {
    struct nsp_rec out;
    assert_int_equal(nsp_decode(&p, end, &dec, &out, &store), 1);
    char a[4096], b[4096];
    canon(&recs[i], a, sizeof a);
    canon(&out, b, sizeof b);
    assert_string_equal(b, a);
  }
  struct nsp_rec out;
  assert_int_equal(nsp_decode(&p, end, &dec, &out, &store), 0);
  nsp_buf_free(&buf);
  nsp_codec_free(&enc);
  nsp_codec_free(&dec);
  nsp_dec_store_free(&store);
}

/* ---- tests -------------------------------------------------------------- */

static void test_varint(void **state) {
  (void)state;
  static const uint64_t vals[] = {0, 1, 127, 128, 16383, 16384, 1ull << 32, 1ull << 63, UINT64_MAX};
  for (size_t i = 0; i < sizeof vals / sizeof *vals; i++) {
    uint8_t b[10];
    size_t n = nsp_put_varint(b, vals[i]);
    const uint8_t *p = b;
    uint64_t v = 0;
    assert_int_equal(nsp_get_varint(&p, b + n, &v), 0);
    assert_true(v == vals[i]);
    assert_ptr_equal(p, b + n);
    /* Every cut of it is a truncation, not a smaller value. */
    for (size_t cut = 0; cut < n; cut++) {
      p = b;
      assert_int_equal(nsp_get_varint(&p, b + cut, &v), -1);
    }
  }
  /* More than 64 bits: the tenth byte may only hold one bit. */
  uint8_t over[10] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02};
  const uint8_t *p = over;
  uint64_t v;
  assert_int_equal(nsp_get_varint(&p, over + 10, &v), -1);
  uint8_t eleven[11] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00};
  p = eleven;
  assert_int_equal(nsp_get_varint(&p, eleven + 11, &v), -1);
}

static void test_roundtrip_process(void **state) {
  (void)state;
  static const char *const env[] = {"RANK", "3", "NCCL_DEBUG", "INFO", "EMPTY", ""};
  struct nsp_rec_ext x;
  memset(&x, 0, sizeof x);
  x.pid = 4242;
  x.ppid = 4200;
  x.nccl_version = 22809;
  x.realtime_ns = 1700000000123456789ull;
  x.monotonic_ns = 987654321012ull;
  x.host = "gpu-node-17";
  x.shim_version = "0.1.0";
  x.nccl_path = "/opt/nccl/lib/libnccl.so.2";
  x.nenv = 3;
  x.env = env;
  x.driver_version = 12040; /* 1.1 */
  x.runtime_version = -12020;
  x.launcher = "torchrun";
  x.tracking = NSP_TRACK_COMPLETION | NSP_TRACK_TIMING | NSP_TRACK_CALLSITES;
  struct nsp_rec r;
  memset(&r, 0, sizeof r);
  r.kind = NSP_REC_PROCESS;
  r.peer = r.redop = -1;
  r.ext = &x;
  roundtrip(&r, 1);
}

static void test_roundtrip_comm(void **state) {
  (void)state;
  struct nsp_rec_ext x;
  memset(&x, 0, sizeof x);
  x.comm_id = 0xfedcba9876543210ull;
  x.parent_id = 0x0123456789abcdefull;
  x.handle = 0x55550000aaaaull;
  x.rank = 5;
  x.nranks = 16;
  x.device = 7;
  x.color = -1; /* NCCL_SPLIT_NOCOLOR */
  x.key = 9;
  x.split_index = 2;
  x.comm_name = "data_parallel:3";
  x.gpu_uuid = "GPU-8a1e0f3c-5d2b-4c7e-9f10-0123456789ab"; /* 1.1 */
  x.gpu_pci_bus_id = "0000:1b:00.0";
  x.gpu_name = "NVIDIA H200";
  struct nsp_rec r;
  memset(&r, 0, sizeof r);
  r.kind = NSP_REC_COMM;
  r.api = NSP_API_CommSplit;
  r.comm = 12;
  r.result = ncclInProgress;
  r.flags = NSP_COMM_PENDING;
  r.t_enter = 123456789;
  r.t_exit = 123999999;
  r.last_error = "still initialising";
  r.peer = r.redop = -1;
  r.ext = &x;
  roundtrip(&r, 1);
}

static void test_roundtrip_small_kinds(void **state) {
  (void)state;
  struct nsp_rec r[4];
  memset(r, 0, sizeof r);
  for (int i = 0; i < 4; i++) r[i].peer = r[i].redop = -1;
  r[0].kind = NSP_REC_COMM_END;
  r[0].comm = 3;
  r[0].api = NSP_API_CommAbort;
  r[0].result = ncclRemoteError;
  r[0].t_enter = 1000;
  r[0].t_exit = 5000;
  r[0].last_error = "peer gone";
  r[1].kind = NSP_REC_REDOP;
  r[1].api = NSP_API_RedOpCreatePreMulSum;
  r[1].comm = 2;
  r[1].redop = 5;
  r[1].dtype = ncclFloat16;
  r[1].aux = ncclScalarHostImmediate;
  r[1].count = 0x3c00; /* 1.0 as float16 bits */
  r[1].result = 0;
  r[1].t_enter = 77;
  r[1].t_exit = 88;
  r[2].kind = NSP_REC_DROPPED;
  r[2].count = 1234;
  r[2].aux = NSP_DROP_RING_FULL;
  r[2].t_enter = 999999;
  r[3].kind = NSP_REC_ASYNC_ERROR;
  r[3].comm = 1;
  r[3].result = ncclSystemError;
  r[3].t_enter = 31337;
  r[3].last_error = "NET/IB : Got completion with error 12";
  roundtrip(r, 4);
}

/* Format 1.1 kinds: COMPLETION of one call and of a group (every flag,
 * untimed zeros, huge times), CALLSITE (frames with empty names, an
 * offset of 2^64-1, zero frames), and CALL's site field, predicted and not. */
static void test_roundtrip_completion_callsite(void **state) {
  (void)state;
  static const char *const mods[] = {"/usr/lib/libnccl.so.2", "", "/usr/bin/python3.11"};
  static const uint64_t offs[] = {0x5a1f0, UINT64_MAX, 0};
  static const char *const syms[] = {"ncclAllReduce", "", "main"};
  struct nsp_rec_ext site;
  memset(&site, 0, sizeof site);
  site.nframes = 3;
  site.frame_module = mods;
  site.frame_offset = offs;
  site.frame_symbol = syms;
  struct nsp_rec_ext empty;
  memset(&empty, 0, sizeof empty);
  struct nsp_rec r[8];
  memset(r, 0, sizeof r);
  for (int i = 0; i < 8; i++) r[i].peer = r[i].redop = r[i].dtype = -1;
  r[0].kind = NSP_REC_CALLSITE;
  r[0].site = 1;
  r[0].flags = NSP_SITE_FULL;
  r[0].ext = &site;
  r[1].kind = NSP_REC_CALLSITE;
  r[1].site = 4000000000u;
  r[1].ext = &empty;
  /* calls naming sites: 1, then 1 again (predicted), then none */
  for (int i = 2; i < 5; i++) {
    r[i].kind = NSP_REC_CALL;
    r[i].api = NSP_API_AllReduce;
    r[i].comm = 1;
    r[i].seq = (uint64_t)i - 1;
    r[i].count = 8;
    r[i].dtype = ncclFloat32;
    r[i].redop = ncclSum;
    r[i].site = i < 4 ? 1 : 0;
    r[i].t_enter = 1000 * (uint64_t)i;
    r[i].t_exit = 1000 * (uint64_t)i + 10;
  }
  r[5].kind = NSP_REC_COMPLETION; /* one call, timed */
  r[5].comm = 1;
  r[5].api = NSP_API_AllReduce;
  r[5].seq = 3;
  r[5].flags = NSP_DONE_OK | NSP_DONE_TIMED;
  r[5].t_enter = 9000000000ull; /* gpu_start */
  r[5].t_exit = 9000050000ull;  /* gpu_end */
  r[5].count = 9000060000ull;   /* t_seen */
  r[6].kind = NSP_REC_COMPLETION; /* a group, abandoned, untimed */
  r[6].group_id = 77;
  r[6].flags = NSP_DONE_ABANDONED | NSP_DONE_ERROR | NSP_DONE_CAPTURED;
  r[6].count = UINT64_MAX;
  r[7].kind = NSP_REC_COMPLETION; /* a send to a peer */
  r[7].comm = 70000;
  r[7].api = NSP_API_Send;
  r[7].seq = 1ull << 40;
  r[7].peer = 1023;
  r[7].flags = NSP_DONE_OK;
  /* dtype is a CALL field: other kinds decode it as 0 */
  r[0].dtype = r[1].dtype = r[5].dtype = r[6].dtype = r[7].dtype = 0;
  roundtrip(r, 8);
}

/* SIGNAL (1.3): a fault with frames, a raised signal without, extreme
 * values; nsp_encode_signal (the shim's handler's encoder, into a fixed
 * buffer) writes exactly nsp_encode's bytes, and refuses what does not fit. */
static void test_roundtrip_signal(void **state) {
  (void)state;
  static const char *const mods[] = {"/opt/job/train", "/lib/x86_64-linux-gnu/libc.so.6", ""};
  static const uint64_t offs[] = {0x17e7, 0x2724a, UINT64_MAX};
  static const char *const syms[] = {"nsp_sigjob_segv", "", "_start"};
  struct nsp_rec_ext st, empty;
  memset(&st, 0, sizeof st);
  memset(&empty, 0, sizeof empty);
  st.nframes = 3;
  st.frame_module = mods;
  st.frame_offset = offs;
  st.frame_symbol = syms;
  struct nsp_rec r[3];
  memset(r, 0, sizeof r);
  for (int i = 0; i < 3; i++) {
    r[i].kind = NSP_REC_SIGNAL;
    r[i].redop = -1; /* not a SIGNAL field: decoded as for any kind */
  }
  r[0].aux = 11; /* SIGSEGV, SEGV_MAPERR at 0x10 */
  r[0].result = 1;
  r[0].sendbuff = 0x10;
  r[0].seq = 4242;
  r[0].t_enter = 123456789012ull;
  r[0].flags = NSP_SIG_CHAINED | NSP_SIG_TRUNCATED;
  r[0].ext = &st;
  r[1].aux = 6; /* SIGABRT raised by pid 777 (SI_TKILL), no stack */
  r[1].result = -6;
  r[1].peer = 777;
  r[1].flags = NSP_SIG_NO_STACK;
  r[1].ext = &empty;
  r[2].aux = UINT32_MAX;
  r[2].result = INT32_MIN;
  r[2].sendbuff = UINT64_MAX;
  r[2].seq = UINT64_MAX;
  r[2].t_enter = UINT64_MAX;
  r[2].flags = 0xffff;
  r[2].peer = INT32_MAX;
  r[2].ext = &st;
  roundtrip(r, 3);
  for (int i = 0; i < 3; i++) {
    struct nsp_buf buf = {0};
    struct nsp_codec c = {0};
    assert_int_equal(nsp_encode(&buf, &c, &r[i]), 0);
    uint8_t fixed[512];
    size_t n = nsp_encode_signal(fixed, sizeof fixed, &r[i]);
    assert_int_equal(n, buf.len);
    assert_memory_equal(fixed, buf.data, n);
    /* One byte short: refused, never written past the end. */
    memset(fixed, 0xa5, sizeof fixed);
    assert_int_equal(nsp_encode_signal(fixed, n - 1, &r[i]), 0);
    for (size_t k = n - 1; k < sizeof fixed; k++) assert_int_equal(fixed[k], 0xa5);
    nsp_buf_free(&buf);
    nsp_codec_free(&c);
  }
  struct nsp_rec call;
  memset(&call, 0, sizeof call);
  call.kind = NSP_REC_CALL;
  uint8_t b[64];
  assert_int_equal(nsp_encode_signal(b, sizeof b, &call), 0); /* SIGNAL records only */
}

/* Calls: every mask field, predicted fields, negative deltas and wrapped
 * durations, several comms interleaved in one frame. */
static void test_roundtrip_calls(void **state) {
  (void)state;
  struct nsp_rec r[7];
  memset(r, 0, sizeof r);
  for (int i = 0; i < 7; i++) {
    r[i].kind = NSP_REC_CALL;
    r[i].peer = r[i].redop = -1;
  }
  /* All fields away from the prediction. */
  r[0].api = NSP_API_AllReduce;
  r[0].comm = 1;
  r[0].seq = 7;
  r[0].count = 1u << 20;
  r[0].dtype = ncclBfloat16;
  r[0].redop = ncclAvg;
  r[0].stream = 0x7f0000001000ull;
  r[0].sendbuff = 0x7f1000000000ull;
  r[0].recvbuff = 0x7f2000000000ull;
  r[0].group_id = 4;
  r[0].group_depth = 1;
  r[0].result = ncclInvalidUsage;
  r[0].last_error = "bad count";
  r[0].flags = NSP_CALL_IN_PLACE;
  r[0].t_enter = 5000000000ull;
  r[0].t_exit = 5000001000ull;
  /* Everything predicted but the time (seq 8 follows 7). */
  r[1] = r[0];
  r[1].seq = 8;
  r[1].result = 0;
  r[1].last_error = NULL;
  r[1].t_enter = 5000002000ull;
  r[1].t_exit = 5000002500ull;
  /* Another comm in between, time going backwards. */
  r[2].api = NSP_API_Broadcast;
  r[2].comm = 9;
  r[2].seq = 1;
  r[2].count = 3;
  r[2].dtype = ncclInt8;
  r[2].peer = 2;
  r[2].t_enter = 4000000000ull;
  r[2].t_exit = 3999999000ull; /* exit before entry: wraps, must still round-trip */
  /* Send/recv carry their own seq. */
  r[3].api = NSP_API_Send;
  r[3].comm = 1;
  r[3].seq = 1;
  r[3].count = 512;
  r[3].dtype = ncclFloat16;
  r[3].peer = 3;
  r[3].stream = r[0].stream;
  r[3].t_enter = 6000000000ull;
  r[3].t_exit = 6000000001ull;
  r[4] = r[3];
  r[4].api = NSP_API_Recv;
  r[4].peer = 1;
  r[4].t_enter += 10;
  r[4].t_exit += 10;
  /* Group start on comm 0; an unknown dtype and a dynamic redop. */
  r[5].api = NSP_API_GroupStart;
  r[5].comm = 0;
  r[5].group_id = 5;
  r[5].group_depth = 1;
  r[5].dtype = 0;
  r[5].t_enter = 6000000100ull;
  r[5].t_exit = 6000000101ull;
  r[6].api = NSP_API_ReduceScatter;
  r[6].comm = 1;
  r[6].seq = 9; /* predicted from r[1], the last collective on comm 1 */
  r[6].count = UINT64_MAX;
  r[6].dtype = 42;
  r[6].redop = 17;
  r[6].result = 99; /* a result code from the future */
  r[6].t_enter = 6000000200ull;
  r[6].t_exit = 6000000300ull;
  roundtrip(r, 7);
}

/* Old readers skip unknown kinds by length and ignore unknown trailing
 * payload bytes; a payload cut at a field boundary gives defaults. */
static void test_forward_compat(void **state) {
  (void)state;
  struct nsp_buf buf = {0};
  struct nsp_codec enc = {0}, dec = {0};
  struct nsp_dec_store store = {0};
  /* kind 99, 3 bytes of payload */
  assert_int_equal(nsp_buf_reserve(&buf, 64), 0);
  buf.data[buf.len++] = 99;
  buf.data[buf.len++] = 3;
  buf.data[buf.len++] = 1;
  buf.data[buf.len++] = 2;
  buf.data[buf.len++] = 3;
  /* COMM_END with two unknown trailing bytes */
  struct nsp_rec end;
  memset(&end, 0, sizeof end);
  end.kind = NSP_REC_COMM_END;
  end.comm = 4;
  end.api = NSP_API_CommDestroy;
  end.t_enter = 10;
  end.t_exit = 20;
  end.peer = end.redop = -1;
  struct nsp_buf tmp = {0};
  assert_int_equal(nsp_encode(&tmp, &enc, &end), 0);
  const uint8_t *q = tmp.data;
  uint64_t kind, len;
  assert_int_equal(nsp_get_varint(&q, tmp.data + tmp.len, &kind), 0);
  assert_int_equal(nsp_get_varint(&q, tmp.data + tmp.len, &len), 0);
  buf.len += nsp_put_varint(buf.data + buf.len, kind);
  buf.len += nsp_put_varint(buf.data + buf.len, len + 2);
  memcpy(buf.data + buf.len, q, (size_t)len);
  buf.len += (size_t)len;
  buf.data[buf.len++] = 0x05;
  buf.data[buf.len++] = 0x06;
  /* COMM cut after comm index and id */
  buf.data[buf.len++] = NSP_REC_COMM;
  buf.data[buf.len++] = 9;
  buf.data[buf.len++] = 2; /* comm index */
  for (int i = 0; i < 8; i++) buf.data[buf.len++] = (uint8_t)(0x11 * (i + 1));

  const uint8_t *p = buf.data, *e = buf.data + buf.len;
  struct nsp_rec out;
  assert_int_equal(nsp_decode(&p, e, &dec, &out, &store), 1);
  assert_int_equal(out.kind, 0); /* unknown: skipped */
  assert_int_equal(nsp_decode(&p, e, &dec, &out, &store), 1);
  assert_int_equal(out.kind, NSP_REC_COMM_END);
  assert_int_equal(out.comm, 4);
  assert_int_equal(out.api, NSP_API_CommDestroy);
  assert_int_equal(out.t_exit, 20);
  assert_int_equal(nsp_decode(&p, e, &dec, &out, &store), 1);
  assert_int_equal(out.kind, NSP_REC_COMM);
  assert_int_equal(out.comm, 2);
  assert_true(out.ext->comm_id == 0x8877665544332211ull);
  assert_int_equal(out.ext->rank, 0);
  assert_string_equal(out.ext->comm_name, "");
  assert_int_equal(nsp_decode(&p, e, &dec, &out, &store), 0);

  /* A record whose length runs past the end is malformed, and *p stays. */
  uint8_t bad[] = {NSP_REC_CALL, 50, 1, 2};
  p = bad;
  assert_int_equal(nsp_decode(&p, bad + sizeof bad, &dec, &out, &store), -1);
  assert_ptr_equal(p, bad);
  nsp_buf_free(&buf);
  nsp_buf_free(&tmp);
  nsp_codec_free(&enc);
  nsp_codec_free(&dec);
  nsp_dec_store_free(&store);
}

/* A trace with every record kind over several frames. */
static struct nsp_tracegen *mixed_trace_ix(int index) {
  struct nsp_tracegen *g = nsp_tracegen_create("host-x", 777, 1);
  assert_non_null(g);
  nsp_tracegen_set_index(g, index);
  assert_int_equal(nsp_tracegen_env(g, "LOCAL_RANK", "1"), 0);
  nsp_tracegen_set_versions(g, 12040, 12020);
  assert_int_equal(nsp_tracegen_set_launcher(g, "torchrun"), 0);
  nsp_tracegen_set_tracking(g, NSP_TRACK_COMPLETION | NSP_TRACK_TIMING | NSP_TRACK_CALLSITES);
  assert_int_equal(nsp_tracegen_set_gpu(g, "GPU-0001", "0000:1b:00.0", "NVIDIA H200"), 0);
  nsp_tracegen_set_frame_records(g, 3);
  nsp_tracegen_set_comm_name(g, "pg \"quoted\"");
  uint32_t w = nsp_tracegen_comm(g, 0xabcdef0123456789ull, 1, 2);
  assert_true(w > 0);
  uint32_t c = nsp_tracegen_split(g, w, 0x1234ull, 0, 1, 0, 1);
  assert_true(c > 0);
  static const char *const mods[] = {"/usr/lib/libnccl.so.2", "/usr/bin/python3"};
  static const uint64_t offs[] = {0x1234, 0x42};
  static const char *const syms[] = {"ncclAllReduce", "main"};
  uint32_t site = nsp_tracegen_callsite(g, 0, 2, mods, offs, syms);
  assert_int_equal(site, 1);
  nsp_tracegen_set_site(g, site);
  for (int i = 0; i < 4; i++) nsp_tracegen_coll(g, NSP_API_AllReduce, w, 100u + (uint64_t)i, ncclFloat32, ncclSum, -1);
  assert_int_equal(nsp_tracegen_complete_last(g, NSP_DONE_OK | NSP_DONE_TIMED, 500), 0);
  nsp_tracegen_set_site(g, 0);
  nsp_tracegen_group(g, 1);
  nsp_tracegen_p2p(g, NSP_API_Send, w, 8, ncclInt32, 0);
  nsp_tracegen_p2p(g, NSP_API_Recv, w, 8, ncclInt32, 0);
  nsp_tracegen_group(g, 0);
  assert_int_equal(nsp_tracegen_complete_last(g, NSP_DONE_OK, 0), 0); /* the group's */
  struct nsp_rec r;
  memset(&r, 0, sizeof r);
  r.kind = NSP_REC_REDOP;
  r.api = NSP_API_RedOpCreatePreMulSum;
  r.comm = w;
  r.redop = 5;
  r.dtype = ncclFloat32;
  r.t_enter = 2000000000ull;
  r.t_exit = 2000000100ull;
  assert_int_equal(nsp_tracegen_record(g, &r), 0);
  nsp_tracegen_coll(g, NSP_API_Bcast, c, 4, ncclUint8, -1, 0);
  nsp_tracegen_dropped(g, 12, NSP_DROP_RING_FULL);
  nsp_tracegen_fail_next(g, ncclSystemError, "connection reset by peer");
  nsp_tracegen_coll(g, NSP_API_AllReduce, w, 100, ncclFloat32, ncclSum, -1);
  nsp_tracegen_async_error(g, w, ncclRemoteError, "remote error");
  nsp_tracegen_comm_end(g, c, NSP_API_CommDestroy);
  nsp_tracegen_comm_end(g, w, NSP_API_CommAbort);
  return g;
}

/* As the shim writes it: an index before each frame. */
static struct nsp_tracegen *mixed_trace(void) { return mixed_trace_ix(1); }

/* Reads all records of data[0..len) into canonical lines; returns count
 * (up to max), the reader's last return in *last and the frame of each
 * record in frame_of (frames read when the record came). */
static size_t read_all(const uint8_t *data, size_t len, char (*lines)[4096], size_t max, int *last,
                       uint64_t *frame_of, const char **problem_out, char *problem_buf, size_t pblen) {
  char err[256];
  struct nsp_reader *r = nsp_reader_open_mem(data, len, err, sizeof err);
  if (!r) {
    *last = -2;
    return 0;
  }
  size_t n = 0;
  struct nsp_rec rec;
  int ret;
  while ((ret = nsp_reader_next(r, &rec)) == 1) {
    assert_true(n < max);
    canon(&rec, lines[n], sizeof lines[n]);
    if (frame_of) frame_of[n] = nsp_reader_frames(r);
    n++;
  }
  /* Once at the end, the reader stays there. */
  assert_int_equal(nsp_reader_next(r, &rec), ret);
  *last = ret;
  const char *pr = nsp_reader_problem(r);
  if (pr) snprintf(problem_buf, pblen, "%s", pr);
  *problem_out = pr ? problem_buf : NULL;
  nsp_reader_destroy(r);
  return n;
}

#define MAXREC 64
/* Records of mixed_trace. */
#define MIXED_N 22

static void test_reader_whole(void **state) {
  (void)state;
  struct nsp_tracegen *g = mixed_trace();
  const uint8_t *data;
  size_t len;
  assert_int_equal(nsp_tracegen_bytes(g, &data, &len), 0);
  static char lines[MAXREC][4096];
  int last;
  const char *problem;
  char pb[256];
  size_t n = read_all(data, len, lines, MAXREC, &last, NULL, &problem, pb, sizeof pb);
  assert_int_equal(last, 0);
  assert_null(problem);
  /* PROCESS, 2 COMM, CALLSITE, 4 collectives, COMPLETION, 2 group calls,
   * 2 p2p, the group's COMPLETION, REDOP, 1 collective, DROPPED, 1
   * collective, ASYNC_ERROR, 2 COMM_END, EXIT (the generator's clean exit) */
  assert_int_equal(n, MIXED_N);
  assert_non_null(strstr(lines[0], "kind=1 "));
  assert_non_null(strstr(lines[0], "RANK=1 LOCAL_RANK=1"));
  assert_non_null(strstr(lines[0], "drv=12040 rt=12020 launcher=torchrun tracking=7"));
  assert_non_null(strstr(lines[1], "name=pg \"quoted\""));
  assert_non_null(strstr(lines[1], "uuid=GPU-0001 pci=0000:1b:00.0 gpu=NVIDIA H200"));
  assert_non_null(strstr(lines[2], "parent=abcdef0123456789"));
  assert_non_null(strstr(lines[3], "kind=9 "));
  assert_non_null(strstr(lines[3], "site=1"));
  assert_non_null(strstr(lines[3], "nframes=2 [/usr/lib/libnccl.so.2+1234 ncclAllReduce] [/usr/bin/python3+42 main]"));
  assert_non_null(strstr(lines[4], "kind=4 "));
  assert_non_null(strstr(lines[4], "site=1"));
  char want[64];
  snprintf(want, sizeof want, "kind=8 api=%d flags=5 comm=1 ", NSP_API_AllReduce);
  assert_non_null(strstr(lines[8], want));
  assert_non_null(strstr(lines[8], "te=1000006100 tx=1000006600")); /* gpu_start = exit, + 500 */
  assert_non_null(strstr(lines[8], "seq=4 "));
  assert_non_null(strstr(lines[13], "kind=8 "));
  assert_non_null(strstr(lines[13], "gid=1 "));
  nsp_tracegen_destroy(g);
}

/* The reader's promise: a file cut at any byte reads back exactly the
 * records of its whole frames, says where it stopped, and never crashes. */
static void test_reader_cut_everywhere(void **state) {
  (void)state;
  /* Without indexes, so that the frames' offsets are where a cut frame
   * starts (an index is a frame of its own before its data frame: a cut
   * inside it is named at its first byte, a cut right after it reads as
   * a cut at a boundary; test_reader_damage_everywhere reads an indexed
   * trace damaged anywhere). */
  struct nsp_tracegen *g = mixed_trace_ix(0);
  const uint8_t *data;
  size_t len;
  assert_int_equal(nsp_tracegen_bytes(g, &data, &len), 0);
  size_t nframes;
  const size_t *offs = nsp_tracegen_frame_offsets(g, &nframes);
  assert_true(nframes >= 5);

  static char full[MAXREC][4096], cut[MAXREC][4096];
  uint64_t frame_of[MAXREC];
  int last;
  const char *problem;
  char pb[256];
  size_t nfull = read_all(data, len, full, MAXREC, &last, frame_of, &problem, pb, sizeof pb);
  assert_int_equal(last, 0);

  for (size_t at = 0; at <= len; at++) {
    /* Copy so that a read past `at` is a memory error valgrind sees. */
    uint8_t *copy = malloc(at ? at : 1);
    assert_non_null(copy);
    memcpy(copy, data, at);
    size_t n = read_all(copy, at, cut, MAXREC, &last, NULL, &problem, pb, sizeof pb);
    if (at < NSP_HEADER_SIZE) {
      assert_int_equal(last, -2); /* header incomplete: not a trace */
      free(copy);
      continue;
    }
    /* Whole frames in the cut, and whether it ends on a frame boundary. */
    size_t whole = 0;
    int boundary = at == NSP_HEADER_SIZE;
    for (size_t f = 0; f < nframes; f++) {
      size_t end = f + 1 < nframes ? offs[f + 1] : len;
      if (end <= at) whole = f + 1;
      if (end == at) boundary = 1;
    }
    size_t expect = 0;
    while (expect < nfull && frame_of[expect] <= whole) expect++;
    assert_int_equal(n, expect);
    for (size_t i = 0; i < n; i++) assert_string_equal(cut[i], full[i]);
    assert_int_equal(last, 0);
    if (boundary) {
      assert_null(problem);
    } else {
      /* The message names the byte where the cut frame starts. */
      char want[64];
      snprintf(want, sizeof want, "at byte %zu", offs[whole]);
      assert_non_null(problem);
      assert_non_null(strstr(problem, want));
      /* A cut, not damage: said so, and no -1. */
      assert_non_null(strstr(problem, "incomplete frame"));
    }
    free(copy);
  }
  nsp_tracegen_destroy(g);
}

/* Damage: any single byte changed anywhere; the reader returns records or
 * stops with a problem, never crashes, never reads out of bounds. */
static void test_reader_damage_everywhere(void **state) {
  (void)state;
  struct nsp_tracegen *g = mixed_trace();
  const uint8_t *data;
  size_t len;
  assert_int_equal(nsp_tracegen_bytes(g, &data, &len), 0);
  uint8_t *copy = malloc(len);
  assert_non_null(copy);
  static char lines[MAXREC * 4][4096];
  for (size_t at = 0; at < len; at++) {
    static const uint8_t flips[] = {0x01, 0x80, 0xff};
    for (size_t k = 0; k < sizeof flips; k++) {
      memcpy(copy, data, len);
      copy[at] ^= flips[k];
      int last;
      const char *problem;
      char pb[256];
      read_all(copy, len, lines, MAXREC * 4, &last, NULL, &problem, pb, sizeof pb);
      if (last == -1) assert_non_null(problem);
    }
  }
  free(copy);
  nsp_tracegen_destroy(g);
}

/* A damaged second frame: the records of every other frame survive
 * (frames are self-contained, so reading goes on at the next one) and the
 * problem names the damaged frame's offset. */
static void test_reader_bad_frame(void **state) {
  (void)state;
  struct nsp_tracegen *g = mixed_trace();
  const uint8_t *data;
  size_t len, nframes;
  assert_int_equal(nsp_tracegen_bytes(g, &data, &len), 0);
  const size_t *offs = nsp_tracegen_frame_offsets(g, &nframes);
  uint8_t *copy = malloc(len);
  assert_non_null(copy);
  memcpy(copy, data, len);
  memset(copy + offs[1], 0, 4); /* frame magic gone */
  static char lines[MAXREC][4096];
  int last;
  const char *problem;
  char pb[256];
  size_t n = read_all(copy, len, lines, MAXREC, &last, NULL, &problem, pb, sizeof pb);
  assert_int_equal(n, MIXED_N - 3); /* frames hold 3 records each */
  assert_int_equal(last, -1);
  assert_non_null(problem);
  assert_non_null(strstr(problem, "corrupt frame"));
  char want[64];
  snprintf(want, sizeof want, "at byte %zu", offs[1]);
  assert_non_null(strstr(problem, want));
  free(copy);
  nsp_tracegen_destroy(g);
}

/* Skippable frames (RFC 8878) between record frames are stepped over;
 * a million of them must not exhaust the stack (the reader used to
 * recurse once per skippable frame). */
static void test_reader_skippable(void **state) {
  (void)state;
  struct nsp_tracegen *g = mixed_trace();
  const uint8_t *data;
  size_t len;
  assert_int_equal(nsp_tracegen_bytes(g, &data, &len), 0);
  size_t nskip = 1000000, tot = len + nskip * 8 + 12;
  uint8_t *buf = malloc(tot);
  assert_non_null(buf);
  memcpy(buf, data, NSP_HEADER_SIZE);
  uint8_t *p = buf + NSP_HEADER_SIZE;
  for (size_t i = 0; i < nskip; i++, p += 8) {
    static const uint8_t empty_skip[8] = {0x50, 0x2a, 0x4d, 0x18, 0, 0, 0, 0};
    memcpy(p, empty_skip, 8);
  }
  memcpy(p, data + NSP_HEADER_SIZE, len - NSP_HEADER_SIZE);
  p += len - NSP_HEADER_SIZE;
  static const uint8_t skip4[12] = {0x5f, 0x2a, 0x4d, 0x18, 4, 0, 0, 0, 1, 2, 3, 4}; /* another magic, 4 bytes */
  memcpy(p, skip4, sizeof skip4);
  static char lines[MAXREC][4096];
  int last;
  const char *problem;
  char pb[256];
  assert_int_equal(read_all(buf, tot, lines, MAXREC, &last, NULL, &problem, pb, sizeof pb), MIXED_N);
  assert_int_equal(last, 0);
  assert_null(problem);
  free(buf);
  nsp_tracegen_destroy(g);
}

static void test_reader_rejects(void **state) {
  (void)state;
  char err[256] = "";
  uint8_t junk[200];
  memset(junk, 'x', sizeof junk);
  assert_null(nsp_reader_open_mem(junk, sizeof junk, err, sizeof err));
  assert_non_null(strstr(err, "bad magic"));
  struct nsp_tracegen *g = nsp_tracegen_create("h", 1, -1);
  const uint8_t *data;
  size_t len;
  assert_int_equal(nsp_tracegen_bytes(g, &data, &len), 0);
  uint8_t *copy = malloc(len);
  memcpy(copy, data, len);
  copy[8] = 2; /* format 2.x */
  assert_null(nsp_reader_open_mem(copy, len, err, sizeof err));
  assert_non_null(strstr(err, "format 2."));
  free(copy);
  assert_null(nsp_reader_open("/nonexistent/x.ncclspy", err, sizeof err));
  assert_non_null(strstr(err, "cannot open"));
  nsp_tracegen_destroy(g);
}

/* Readers on several threads at once, each opening and destroying one
 * after another (each thread reuses its own zstd context and frame
 * buffer): every read gives the records and the problem a lone reader
 * gives, for a whole trace and for one cut in a frame. */
struct thread_read {
  const uint8_t *data;
  size_t len, cut;
  uint64_t want_n, want_cut_n, want_sum;
  char want_problem[320];
  int bad;
};

static void count_records(const uint8_t *data, size_t len, uint64_t *n, uint64_t *sum, char *problem, size_t plen) {
  char err[256];
  struct nsp_reader *r = nsp_reader_open_mem(data, len, err, sizeof err);
  *n = *sum = 0;
  if (!r) return;
  struct nsp_rec rec;
  while (nsp_reader_next(r, &rec) == 1) {
    (*n)++;
    *sum += rec.seq * 31 + rec.count + rec.t_enter;
  }
  const char *pr = nsp_reader_problem(r);
  snprintf(problem, plen, "%s", pr ? pr : "");
  nsp_reader_destroy(r);
}

static void *read_loop(void *arg) {
  struct thread_read *tr = arg;
  for (int i = 0; i < 20; i++) {
    uint64_t n, sum;
    char problem[320];
    count_records(tr->data, i % 2 ? tr->cut : tr->len, &n, &sum, problem, sizeof problem);
    if (i % 2 ? n != tr->want_cut_n || strcmp(problem, tr->want_problem) : n != tr->want_n || sum != tr->want_sum)
      tr->bad = 1;
  }
  return NULL;
}

static void test_reader_threads(void **state) {
  (void)state;
  struct nsp_tracegen *g = nsp_tracegen_create("host-t", 7, 0);
  assert_non_null(g);
  nsp_tracegen_set_frame_records(g, 1000);
  uint32_t w = nsp_tracegen_comm(g, 0x77, 0, 2);
  for (int i = 0; i < 20000; i++) nsp_tracegen_coll(g, NSP_API_AllReduce, w, 1000 + (uint64_t)(i % 7), ncclFloat32, ncclSum, -1);
  const uint8_t *data;
  size_t len, nframes;
  assert_int_equal(nsp_tracegen_bytes(g, &data, &len), 0);
  const size_t *fo = nsp_tracegen_frame_offsets(g, &nframes);
  assert_true(nframes > 4);
  struct thread_read tr[4];
  memset(tr, 0, sizeof tr);
  tr[0].data = data;
  tr[0].len = len;
  tr[0].cut = fo[3] + 40; /* inside the fourth frame */
  char problem[320];
  count_records(data, len, &tr[0].want_n, &tr[0].want_sum, problem, sizeof problem);
  assert_string_equal(problem, "");
  uint64_t sum;
  count_records(data, tr[0].cut, &tr[0].want_cut_n, &sum, tr[0].want_problem, sizeof tr[0].want_problem);
  assert_true(tr[0].want_n > 20000 && tr[0].want_cut_n < tr[0].want_n);
  assert_non_null(strstr(tr[0].want_problem, "incomplete frame"));
  pthread_t th[4];
  for (int i = 0; i < 4; i++) {
    tr[i] = tr[0];
    assert_int_equal(pthread_create(&th[i], NULL, read_loop, &tr[i]), 0);
  }
  for (int i = 0; i < 4; i++) {
    assert_int_equal(pthread_join(th[i], NULL), 0);
    assert_int_equal(tr[i].bad, 0);
  }
  nsp_tracegen_destroy(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_varint),
      cmocka_unit_test(test_roundtrip_process),
      cmocka_unit_test(test_roundtrip_comm),
      cmocka_unit_test(test_roundtrip_small_kinds),
      cmocka_unit_test(test_roundtrip_completion_callsite),
      cmocka_unit_test(test_roundtrip_signal),
      cmocka_unit_test(test_roundtrip_calls),
      cmocka_unit_test(test_forward_compat),
      cmocka_unit_test(test_reader_whole),
      cmocka_unit_test(test_reader_cut_everywhere),
      cmocka_unit_test(test_reader_damage_everywhere),
      cmocka_unit_test(test_reader_bad_frame),
      cmocka_unit_test(test_reader_skippable),
      cmocka_unit_test(test_reader_rejects),
      cmocka_unit_test(test_reader_threads),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
