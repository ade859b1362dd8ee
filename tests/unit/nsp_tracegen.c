/* nsp_tracegen.c - synthetic traces through the real codec (see the header). */
#include "nsp_tracegen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "nsp_index.h"
#include "nsp_names.h"
#include "nsp_schema.h"

struct tg_comm {
  uint64_t id, seq;
  uint32_t splits;
};

struct tg_p2p {
  uint32_t comm;
  int peer, dir;
  uint64_t seq;
};

struct nsp_tracegen {
  char host[NSP_HOST_MAX];
  uint32_t pid;
  int rank;
  int32_t nccl_version;
  uint64_t realtime, monotonic, now, step, dur;
  unsigned frame_records, in_frame;
  char **env;
  size_t nenv;
  int process_written, header_written;
  struct nsp_codec codec;
  struct nsp_buf frame, file;
  struct nsp_index_builder index; /* as the shim's writer: an index before each frame */
  int no_index;
  size_t *offsets;
  size_t noff;
  struct tg_comm *comms; /* index 0 unused */
  size_t ncomms;
  struct tg_p2p *p2p;
  size_t np2p;
  int next_result;
  char *next_error;
  char *comm_name;
  uint64_t group_id, group_counter;
  uint32_t group_depth;
  int oom;
  /* format 1.1 */
  int32_t driver, runtime;
  char *nccl_path, *launcher;
  uint32_t tracking;
  char *gpu_uuid, *gpu_pci, *gpu_name;
  int auto_complete;
  uint64_t gpu_ns;
  uint32_t site, nsites;
  uint32_t pysite, npysites; /* format 1.6 */
  /* the last call, for completions */
  uint32_t last_comm;
  int last_api, last_peer, last_kind; /* last_kind: 0 none, 1 call, 2 group */
  uint64_t last_seq, last_exit, last_group;
  /* format 1.5 */
  uint64_t last_mono; /* the latest monotonic time of the records so far */
  int exit_at_end;    /* end the trace with an EXIT record (default) */
};

struct nsp_tracegen *nsp_tracegen_create(const char *host, uint32_t pid, int rank) {
  struct nsp_tracegen *g = calloc(1, sizeof *g);
  if (!g) return NULL;
  snprintf(g->host, sizeof g->host, "%s", host);
  g->pid = pid;
  g->rank = rank;
  g->nccl_version = 22809;
  g->realtime = 1700000000000000000ull;
  g->monotonic = 1000000000ull;
  g->now = g->monotonic + 1000;
  g->step = 1000;
  g->dur = 100;
  g->comms = calloc(1, sizeof *g->comms);
  if (!g->comms) {
    free(g);
    return NULL;
  }
  g->ncomms = 1;
  g->exit_at_end = 1;
  nsp_index_init(&g->index);
  if (rank >= 0) {
    char b[16];
    snprintf(b, sizeof b, "%d", rank);
    if (nsp_tracegen_env(g, "RANK", b) < 0) {
      nsp_tracegen_destroy(g);
      return NULL;
    }
  }
  return g;
}

void nsp_tracegen_set_index(struct nsp_tracegen *g, int on) { g->no_index = !on; }

void nsp_tracegen_destroy(struct nsp_tracegen *g) {
  if (!g) return;
  for (size_t i = 0; i < 2 * g->nenv; i++) free(g->env[i]);
  free(g->env);
  nsp_codec_free(&g->codec);
  nsp_buf_free(&g->frame);
  nsp_buf_free(&g->file);
  nsp_index_free(&g->index);
  free(g->offsets);
  free(g->comms);
  free(g->p2p);
  free(g->next_error);
  free(g->comm_name);
  free(g->nccl_path);
  free(g->launcher);
  free(g->gpu_uuid);
  free(g->gpu_pci);
  free(g->gpu_name);
  free(g);
}

static int set_str(char **dst, const char *src) {
  char *s = strdup(src ? src : "");
  if (!s) return -1;
  free(*dst);
  *dst = s;
  return 0;
}

void nsp_tracegen_set_versions(struct nsp_tracegen *g, int32_t driver, int32_t runtime) {
  g->driver = driver;
  g->runtime = runtime;
}
int nsp_tracegen_set_nccl_path(struct nsp_tracegen *g, const char *path) { return set_str(&g->nccl_path, path); }
int nsp_tracegen_set_launcher(struct nsp_tracegen *g, const char *launcher) { return set_str(&g->launcher, launcher); }
void nsp_tracegen_set_tracking(struct nsp_tracegen *g, uint32_t tracking) { g->tracking = tracking; }
int nsp_tracegen_set_gpu(struct nsp_tracegen *g, const char *uuid, const char *pci_bus_id, const char *name) {
  return set_str(&g->gpu_uuid, uuid) | set_str(&g->gpu_pci, pci_bus_id) | set_str(&g->gpu_name, name);
}
void nsp_tracegen_set_auto_complete(struct nsp_tracegen *g, int on, uint64_t gpu_ns) {
  g->auto_complete = on;
  g->gpu_ns = gpu_ns;
}
void nsp_tracegen_set_site(struct nsp_tracegen *g, uint32_t site) { g->site = site; }
uint64_t nsp_tracegen_now(const struct nsp_tracegen *g) { return g->now; }

void nsp_tracegen_set_clock(struct nsp_tracegen *g, uint64_t realtime_ns, uint64_t monotonic_ns) {
  g->realtime = realtime_ns;
  g->monotonic = monotonic_ns;
  if (g->now < monotonic_ns) g->now = monotonic_ns + 1000;
}
void nsp_tracegen_set_time(struct nsp_tracegen *g, uint64_t monotonic_ns) { g->now = monotonic_ns; }
void nsp_tracegen_set_step(struct nsp_tracegen *g, uint64_t step_ns, uint64_t duration_ns) {
  g->step = step_ns;
  g->dur = duration_ns;
}
void nsp_tracegen_set_frame_records(struct nsp_tracegen *g, unsigned n) { g->frame_records = n; }
void nsp_tracegen_set_nccl_version(struct nsp_tracegen *g, int32_t version) { g->nccl_version = version; }

int nsp_tracegen_env(struct nsp_tracegen *g, const char *name, const char *value) {
  char **e = realloc(g->env, (g->nenv + 1) * 2 * sizeof *e);
  if (!e) return -1;
  g->env = e;
  e[2 * g->nenv] = strdup(name);
  e[2 * g->nenv + 1] = strdup(value);
  if (!e[2 * g->nenv] || !e[2 * g->nenv + 1]) {
    free(e[2 * g->nenv]);
    free(e[2 * g->nenv + 1]);
    return -1;
  }
  g->nenv++;
  return 0;
}

static void put_le(uint8_t *p, uint64_t v, int n) {
  for (int i = 0; i < n; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static int write_header(struct nsp_tracegen *g) {
  if (g->header_written) return 0;
  if (nsp_buf_reserve(&g->file, NSP_HEADER_SIZE) < 0) return -1;
  uint8_t *h = g->file.data + g->file.len;
  memset(h, 0, NSP_HEADER_SIZE);
  memcpy(h, NSP_MAGIC, 8);
  put_le(h + 8, NSP_FORMAT_MAJOR, 2);
  put_le(h + 10, NSP_FORMAT_MINOR, 2);
  put_le(h + 12, NSP_HEADER_SIZE, 4);
  put_le(h + 16, g->realtime, 8);
  put_le(h + 24, g->monotonic, 8);
  put_le(h + 32, g->pid, 4);
  put_le(h + 36, (uint32_t)g->nccl_version, 4);
  put_le(h + 40, 0, 4);
  memcpy(h + 48, g->host, strnlen(g->host, NSP_HOST_MAX - 1));
  g->file.len += NSP_HEADER_SIZE;
  g->header_written = 1;
  return 0;
}

int nsp_tracegen_frame(struct nsp_tracegen *g) {
  if (write_header(g) < 0) return -1;
  if (!g->frame.len) return 0;
  size_t bound = ZSTD_compressBound(g->frame.len);
  struct nsp_buf z = {0};
  if (nsp_buf_reserve(&z, bound) < 0) return -1;
  size_t n = ZSTD_compress(z.data, bound, g->frame.data, g->frame.len, 3);
  if (ZSTD_isError(n) || (!g->no_index && nsp_index_put(&g->index, z.data, n, &g->file) < 0) ||
      nsp_buf_reserve(&g->file, n) < 0) {
    nsp_buf_free(&z);
    return -1;
  }
  memcpy(g->file.data + g->file.len, z.data, n);
  nsp_buf_free(&z);
  nsp_index_next(&g->index, 1);
  size_t *o = realloc(g->offsets, (g->noff + 1) * sizeof *o);
  if (!o) return -1;
  g->offsets = o;
  g->offsets[g->noff++] = g->file.len;
  g->file.len += n;
  g->frame.len = 0;
  g->in_frame = 0;
  nsp_codec_reset(&g->codec);
  return 0;
}

static int emit(struct nsp_tracegen *g, const struct nsp_rec *r);

static int ensure_process(struct nsp_tracegen *g) {
  if (g->process_written) return 0;
  g->process_written = 1;
  struct nsp_rec_ext x;
  memset(&x, 0, sizeof x);
  x.pid = g->pid;
  x.ppid = 1;
  x.nccl_version = g->nccl_version;
  x.realtime_ns = g->realtime;
  x.monotonic_ns = g->monotonic;
  x.host = g->host;
  x.shim_version = "0.1.0-test";
  x.nccl_path = g->nccl_path ? g->nccl_path : "/usr/lib/libnccl.so.2";
  x.nenv = (uint32_t)g->nenv;
  x.env = (const char *const *)g->env;
  x.driver_version = g->driver;
  x.runtime_version = g->runtime;
  x.launcher = g->launcher ? g->launcher : "";
  x.tracking = g->tracking;
  struct nsp_rec r;
  memset(&r, 0, sizeof r);
  r.kind = NSP_REC_PROCESS;
  r.ext = &x;
  return emit(g, &r);
}

static int emit(struct nsp_tracegen *g, const struct nsp_rec *r) {
  if (r->kind != NSP_REC_PROCESS && ensure_process(g) < 0) return -1;
  if (nsp_encode(&g->frame, &g->codec, r) < 0) return -1;
  if (!g->no_index && nsp_index_add(&g->index, r) < 0) return -1;
  if (r->kind != NSP_REC_PROCESS && nsp_rec_latest_mono(r) > g->last_mono) g->last_mono = nsp_rec_latest_mono(r);
  g->in_frame++;
  if (g->frame_records && g->in_frame >= g->frame_records) return nsp_tracegen_frame(g);
  return 0;
}

int nsp_tracegen_record(struct nsp_tracegen *g, const struct nsp_rec *r) { return emit(g, r); }

/* Fills the times of the next record and advances the clock. */
static void stamp(struct nsp_tracegen *g, struct nsp_rec *r) {
  r->t_enter = g->now;
  r->t_exit = g->now + g->dur;
  g->now += g->step;
}

static void take_result(struct nsp_tracegen *g, struct nsp_rec *r) {
  r->result = g->next_result;
  r->last_error = g->next_error;
  g->next_result = 0;
}

static uint32_t add_comm(struct nsp_tracegen *g, int api, uint64_t id, uint64_t parent_id, int color, int key,
                         uint32_t split_index, int rank, int nranks) {
  struct tg_comm *c = realloc(g->comms, (g->ncomms + 1) * sizeof *c);
  if (!c) return 0;
  g->comms = c;
  uint32_t idx = (uint32_t)g->ncomms++;
  memset(&c[idx], 0, sizeof c[idx]);
  c[idx].id = id;
  struct nsp_rec_ext x;
  memset(&x, 0, sizeof x);
  x.comm_id = id;
  x.parent_id = parent_id;
  x.handle = 0x5000 + idx * 0x100;
  x.rank = rank;
  x.nranks = nranks;
  x.device = rank >= 0 ? rank % 8 : -1;
  x.color = color;
  x.key = key;
  x.split_index = split_index;
  x.comm_name = g->comm_name ? g->comm_name : "";
  x.gpu_uuid = g->gpu_uuid ? g->gpu_uuid : "";
  x.gpu_pci_bus_id = g->gpu_pci ? g->gpu_pci : "";
  x.gpu_name = g->gpu_name ? g->gpu_name : "";
  struct nsp_rec r;
  memset(&r, 0, sizeof r);
  r.kind = NSP_REC_COMM;
  r.api = (uint8_t)api;
  r.comm = idx;
  r.ext = &x;
  stamp(g, &r);
  take_result(g, &r);
  int ret = emit(g, &r);
  free(g->next_error);
  g->next_error = NULL;
  free(g->comm_name);
  g->comm_name = NULL;
  return ret < 0 ? 0 : idx;
}

uint32_t nsp_tracegen_comm(struct nsp_tracegen *g, uint64_t comm_id, int rank, int nranks) {
  return add_comm(g, NSP_API_CommInitRank, comm_id, 0, -1, -1, 0, rank, nranks);
}

uint32_t nsp_tracegen_split(struct nsp_tracegen *g, uint32_t parent, uint64_t comm_id, int color, int key, int rank,
                            int nranks) {
  if (parent == 0 || parent >= g->ncomms) return 0;
  uint32_t split_index = g->comms[parent].splits++;
  return add_comm(g, NSP_API_CommSplit, comm_id, g->comms[parent].id, color, key, split_index, rank, nranks);
}

void nsp_tracegen_set_comm_name(struct nsp_tracegen *g, const char *name) {
  free(g->comm_name);
  g->comm_name = name ? strdup(name) : NULL;
}

void nsp_tracegen_fail_next(struct nsp_tracegen *g, int result, const char *last_error) {
  g->next_result = result;
  free(g->next_error);
  g->next_error = last_error ? strdup(last_error) : NULL;
}

static void call_base(struct nsp_tracegen *g, struct nsp_rec *r, int api, uint32_t comm) {
  memset(r, 0, sizeof *r);
  r->kind = NSP_REC_CALL;
  r->api = (uint8_t)api;
  r->comm = comm;
  r->stream = 0x7f0000001000ull;
  r->sendbuff = 0x7f1000000000ull;
  r->recvbuff = 0x7f2000000000ull;
  r->group_id = g->group_id;
  r->group_depth = g->group_depth;
  r->peer = -1;
  r->redop = -1;
  r->dtype = -1;
  r->site = g->site;
  r->pysite = g->pysite;
  stamp(g, r);
  take_result(g, r);
}

int nsp_tracegen_completion(struct nsp_tracegen *g, uint32_t comm, int api, uint64_t seq, int peer, uint64_t group_id,
                            uint32_t flags, uint64_t gpu_start, uint64_t gpu_end, uint64_t t_seen) {
  struct nsp_rec r;
  memset(&r, 0, sizeof r);
  r.kind = NSP_REC_COMPLETION;
  r.comm = comm;
  r.api = (uint8_t)api;
  r.seq = seq;
  r.peer = peer;
  r.group_id = group_id;
  r.flags = (uint16_t)flags;
  r.t_enter = gpu_start;
  r.t_exit = gpu_end;
  r.count = t_seen;
  r.redop = r.dtype = -1;
  return emit(g, &r);
}

int nsp_tracegen_complete_last(struct nsp_tracegen *g, uint32_t flags, uint64_t gpu_ns) {
  if (!g->last_kind) return -1;
  uint64_t start = g->last_exit, end = start + gpu_ns;
  if (!(flags & NSP_DONE_TIMED)) start = end = 0;
  uint64_t seen = g->last_exit + gpu_ns + 1000;
  if (g->last_kind == 2) return nsp_tracegen_completion(g, 0, 0, 0, -1, g->last_group, flags, start, end, seen);
  return nsp_tracegen_completion(g, g->last_comm, g->last_api, g->last_seq, g->last_peer, 0, flags, start, end, seen);
}

static int auto_complete(struct nsp_tracegen *g) {
  if (!g->auto_complete) return 0;
  uint32_t flags = NSP_DONE_OK | (g->tracking & NSP_TRACK_TIMING ? NSP_DONE_TIMED : 0);
  return nsp_tracegen_complete_last(g, flags, g->gpu_ns);
}

/* Whether NCCL refused the call (an error other than ncclInProgress). */
static int refused(const struct nsp_rec *r) { return r->result != 0 && r->result != ncclInProgress; }

static int finish_call(struct nsp_tracegen *g, struct nsp_rec *r) {
  int failed = r->result != 0 && r->result != ncclInProgress;
  int kind = nsp_api_kind(r->api);
  int ret = emit(g, r);
  free(g->next_error);
  g->next_error = NULL;
  if (ret < 0 || failed) return ret;
  if (kind == NSP_K_COLL || kind == NSP_K_P2P) {
    g->last_kind = 1;
    g->last_comm = r->comm;
    g->last_api = r->api;
    g->last_seq = r->seq;
    g->last_peer = r->peer;
    g->last_exit = r->t_exit;
    if (!r->group_depth) ret = auto_complete(g);
  }
  return ret;
}

/* An ext holding n frames (a CALLSITE's or a PYSITE's). */
static void frames_ext(struct nsp_rec_ext *x, size_t n, const char *const *modules, const uint64_t *offsets,
                       const char *const *symbols) {
  memset(x, 0, sizeof *x);
  x->nframes = (uint32_t)n;
  x->frame_module = modules;
  x->frame_offset = offsets;
  x->frame_symbol = symbols;
}

uint32_t nsp_tracegen_callsite(struct nsp_tracegen *g, uint32_t flags, size_t n, const char *const *modules,
                               const uint64_t *offsets, const char *const *symbols) {
  struct nsp_rec_ext x;
  frames_ext(&x, n, modules, offsets, symbols);
  struct nsp_rec r;
  memset(&r, 0, sizeof r);
  r.kind = NSP_REC_CALLSITE;
  r.site = ++g->nsites;
  r.flags = (uint16_t)flags;
  r.peer = r.redop = -1;
  r.ext = &x;
  return emit(g, &r) < 0 ? 0 : r.site;
}

uint64_t nsp_tracegen_coll(struct nsp_tracegen *g, int api, uint32_t comm, uint64_t count, int dtype, int redop,
                           int root) {
  if (comm == 0 || comm >= g->ncomms) return 0;
  struct nsp_rec r;
  call_base(g, &r, api, comm);
  /* As the shim (format 1.4): a refused call takes no seq. */
  r.seq = refused(&r) ? g->comms[comm].seq + 1 : ++g->comms[comm].seq;
  r.count = count;
  r.dtype = dtype;
  r.redop = redop;
  r.peer = root;
  if (api == NSP_API_Bcast) {
    r.flags = NSP_CALL_IN_PLACE;
    r.sendbuff = r.recvbuff;
  }
  return finish_call(g, &r) < 0 ? 0 : r.seq;
}

/* The send/recv counter of (comm, peer, the direction of api); NULL when
 * out of memory. */
static struct tg_p2p *p2p_of(struct nsp_tracegen *g, int api, uint32_t comm, int peer) {
  int dir = api == NSP_API_Send ? 0 : 1;
  for (size_t i = 0; i < g->np2p; i++)
    if (g->p2p[i].comm == comm && g->p2p[i].peer == peer && g->p2p[i].dir == dir) return &g->p2p[i];
  struct tg_p2p *v = realloc(g->p2p, (g->np2p + 1) * sizeof *v);
  if (!v) return NULL;
  g->p2p = v;
  v[g->np2p] = (struct tg_p2p){comm, peer, dir, 0};
  return &v[g->np2p++];
}

uint64_t nsp_tracegen_p2p(struct nsp_tracegen *g, int api, uint32_t comm, uint64_t count, int dtype, int peer) {
  if (comm == 0 || comm >= g->ncomms) return 0;
  struct tg_p2p *p = p2p_of(g, api, comm, peer);
  if (!p) return 0;
  struct nsp_rec r;
  call_base(g, &r, api, comm);
  r.seq = refused(&r) ? p->seq + 1 : ++p->seq;
  r.count = count;
  r.dtype = dtype;
  r.peer = peer;
  return finish_call(g, &r) < 0 ? 0 : r.seq;
}

int nsp_tracegen_group(struct nsp_tracegen *g, int start) {
  if (start && g->group_depth++ == 0) g->group_id = ++g->group_counter;
  struct nsp_rec r;
  call_base(g, &r, start ? NSP_API_GroupStart : NSP_API_GroupEnd, 0);
  int failed = r.result != 0 && r.result != ncclInProgress;
  int ret = finish_call(g, &r);
  if (!start && g->group_depth && --g->group_depth == 0) {
    /* The group's work is enqueued now: one completion for all of it. */
    if (!failed && ret == 0) {
      g->last_kind = 2;
      g->last_group = g->group_id;
      g->last_exit = r.t_exit;
      ret = auto_complete(g);
    }
    g->group_id = 0;
  }
  return ret;
}

int nsp_tracegen_comm_end(struct nsp_tracegen *g, uint32_t comm, int api) {
  struct nsp_rec r;
  memset(&r, 0, sizeof r);
  r.kind = NSP_REC_COMM_END;
  r.api = (uint8_t)api;
  r.comm = comm;
  stamp(g, &r);
  take_result(g, &r);
  return finish_call(g, &r);
}

int nsp_tracegen_async_error(struct nsp_tracegen *g, uint32_t comm, int result, const char *last_error) {
  struct nsp_rec r;
  memset(&r, 0, sizeof r);
  r.kind = NSP_REC_ASYNC_ERROR;
  r.comm = comm;
  r.result = result;
  r.last_error = last_error;
  stamp(g, &r);
  return emit(g, &r);
}

int nsp_tracegen_dropped(struct nsp_tracegen *g, uint64_t count, uint32_t reason) {
  struct nsp_rec r;
  memset(&r, 0, sizeof r);
  r.kind = NSP_REC_DROPPED;
  r.count = count;
  r.aux = reason;
  stamp(g, &r);
  return emit(g, &r);
}

/* ---- format 1.5 ----------------------------------------------------------- */

void nsp_tracegen_set_exit(struct nsp_tracegen *g, int on) { g->exit_at_end = on; }

int nsp_tracegen_exit(struct nsp_tracegen *g, uint64_t t, uint64_t inflight) {
  struct nsp_rec r;
  memset(&r, 0, sizeof r);
  r.kind = NSP_REC_EXIT;
  r.peer = r.dtype = r.redop = -1;
  if (ensure_process(g) < 0) return -1;
  nsp_rec_exit_set_t(&r, t ? t : g->last_mono);
  nsp_rec_exit_set_inflight(&r, inflight);
  g->exit_at_end = 0;
  return emit(g, &r);
}

int nsp_tracegen_libnccl(struct nsp_tracegen *g, const char *path, int32_t version) {
  struct nsp_rec_ext x;
  memset(&x, 0, sizeof x);
  x.nccl_path = path;
  x.nccl_version = version;
  struct nsp_rec r;
  memset(&r, 0, sizeof r);
  r.kind = NSP_REC_LIBNCCL;
  r.peer = r.dtype = r.redop = -1;
  r.ext = &x;
  nsp_rec_libnccl_set_t(&r, g->now);
  g->now += g->step;
  return emit(g, &r);
}

int nsp_tracegen_ringstate(struct nsp_tracegen *g, uint64_t heartbeat, uint64_t heartbeat_wall, uint64_t exited,
                           uint64_t inflight, uint32_t unslotted) {
  struct nsp_rec r;
  memset(&r, 0, sizeof r);
  r.kind = NSP_REC_RINGSTATE;
  r.peer = r.dtype = r.redop = -1;
  if (ensure_process(g) < 0) return -1;
  if (!heartbeat) heartbeat = g->last_mono;
  nsp_rec_ringstate_set_heartbeat(&r, heartbeat);
  nsp_rec_ringstate_set_heartbeat_wall(&r, heartbeat_wall ? heartbeat_wall : g->realtime + (heartbeat - g->monotonic));
  nsp_rec_ringstate_set_exited(&r, exited);
  nsp_rec_ringstate_set_inflight(&r, inflight);
  nsp_rec_ringstate_set_unslotted(&r, unslotted);
  g->exit_at_end = 0;
  return emit(g, &r);
}

/* An INFLIGHT record of api on comm, entered at t_enter (0: now), with
 * the ext fields of x (NULL: none). */
static int inflight(struct nsp_tracegen *g, int api, uint32_t comm, uint64_t t_enter, struct nsp_rec *r,
                    struct nsp_rec_ext *x) {
  r->kind = NSP_REC_INFLIGHT;
  r->ext = x;
  nsp_rec_inflight_set_api(r, (uint8_t)api);
  nsp_rec_inflight_set_comm(r, comm);
  if (!t_enter) {
    t_enter = g->now;
    g->now += g->step;
  }
  nsp_rec_inflight_set_t_enter(r, t_enter);
  nsp_rec_inflight_set_tid(r, g->pid);
  nsp_rec_inflight_set_pysite(r, g->pysite);
  nsp_rec_inflight_set_group_id(r, g->group_id);
  nsp_rec_inflight_set_group_depth(r, g->group_depth);
  return emit(g, r);
}

/* A record and ext for an INFLIGHT: ext ids 0, ints -1. */
static void inflight_base(struct nsp_rec *r, struct nsp_rec_ext *x) {
  memset(r, 0, sizeof *r);
  memset(x, 0, sizeof *x);
  r->peer = r->dtype = r->redop = -1;
  x->rank = x->nranks = x->color = x->key = -1;
}

int nsp_tracegen_inflight_coll(struct nsp_tracegen *g, int api, uint32_t comm, uint64_t count, int dtype, int redop,
                               int root, uint64_t t_enter, uint64_t *seq) {
  if (comm == 0 || comm >= g->ncomms) return -1;
  struct nsp_rec r;
  struct nsp_rec_ext x;
  inflight_base(&r, &x);
  r.seq = ++g->comms[comm].seq;
  r.count = count;
  r.dtype = dtype;
  r.redop = redop;
  r.peer = root;
  if (seq) *seq = r.seq;
  return inflight(g, api, comm, t_enter, &r, &x);
}

int nsp_tracegen_inflight_p2p(struct nsp_tracegen *g, int api, uint32_t comm, uint64_t count, int dtype, int peer,
                              uint64_t t_enter) {
  struct tg_p2p *p = comm && comm < g->ncomms ? p2p_of(g, api, comm, peer) : NULL;
  if (!p) return -1;
  struct nsp_rec r;
  struct nsp_rec_ext x;
  inflight_base(&r, &x);
  r.seq = ++p->seq;
  r.count = count;
  r.dtype = dtype;
  r.peer = peer;
  return inflight(g, api, comm, t_enter, &r, &x);
}

int nsp_tracegen_inflight_init(struct nsp_tracegen *g, int api, uint64_t comm_id, int rank, int nranks,
                               uint64_t t_enter) {
  struct nsp_rec r;
  struct nsp_rec_ext x;
  inflight_base(&r, &x);
  x.comm_id = comm_id;
  x.rank = rank;
  x.nranks = nranks;
  return inflight(g, api, 0, t_enter, &r, &x);
}

int nsp_tracegen_inflight_split(struct nsp_tracegen *g, int api, uint32_t parent, uint64_t child_id, int color,
                                int key, uint64_t t_enter) {
  if (parent == 0 || parent >= g->ncomms) return -1;
  struct nsp_rec r;
  struct nsp_rec_ext x;
  inflight_base(&r, &x);
  x.comm_id = child_id;
  x.parent_id = g->comms[parent].id;
  x.split_index = g->comms[parent].splits++;
  x.color = color;
  x.key = key;
  return inflight(g, api, parent, t_enter, &r, &x);
}

int nsp_tracegen_inflight_call(struct nsp_tracegen *g, int api, uint32_t comm, uint64_t t_enter) {
  struct nsp_rec r;
  struct nsp_rec_ext x;
  inflight_base(&r, &x);
  return inflight(g, api, comm, t_enter, &r, &x);
}

int nsp_tracegen_bytes(struct nsp_tracegen *g, const uint8_t **data, size_t *len) {
  if (ensure_process(g) < 0) return -1;
  if (g->exit_at_end && nsp_tracegen_exit(g, 0, 0) < 0) return -1;
  if (nsp_tracegen_frame(g) < 0) return -1;
  *data = g->file.data;
  *len = g->file.len;
  return 0;
}

const size_t *nsp_tracegen_frame_offsets(struct nsp_tracegen *g, size_t *n) {
  *n = g->noff;
  return g->offsets;
}

int nsp_tracegen_write(struct nsp_tracegen *g, const char *dir, size_t keep, char *path, size_t pathlen) {
  const uint8_t *data;
  size_t len;
  if (nsp_tracegen_bytes(g, &data, &len) < 0) return -1;
  char name[512];
  if (g->rank >= 0)
    snprintf(name, sizeof name, "%s/%s.%u.rank%d.ncclspy", dir, g->host, g->pid, g->rank);
  else
    snprintf(name, sizeof name, "%s/%s.%u.ncclspy", dir, g->host, g->pid);
  if (path) snprintf(path, pathlen, "%s", name);
  FILE *f = fopen(name, "wb");
  if (!f) return -1;
  size_t n = keep < len ? keep : len;
  int ok = fwrite(data, 1, n, f) == n;
  if (fclose(f) != 0) ok = 0;
  return ok ? 0 : -1;
}

/* ---- format 1.6: Python call sites ---------------------------------------- */

int nsp_tracegen_pysite_as(struct nsp_tracegen *g, uint32_t id, uint32_t flags, uint32_t tid, size_t n,
                           const char *const *files, const uint64_t *lines, const char *const *functions) {
  struct nsp_rec_ext x;
  frames_ext(&x, n, files, lines, functions);
  struct nsp_rec r;
  memset(&r, 0, sizeof r);
  r.kind = NSP_REC_PYSITE;
  r.peer = r.redop = r.dtype = -1;
  r.ext = &x;
  nsp_rec_pysite_set_site(&r, id);
  nsp_rec_pysite_set_flags(&r, (uint16_t)flags);
  nsp_rec_pysite_set_tid(&r, tid ? tid : g->pid);
  return emit(g, &r);
}

uint32_t nsp_tracegen_pysite(struct nsp_tracegen *g, uint32_t flags, uint32_t tid, size_t n, const char *const *files,
                             const uint64_t *lines, const char *const *functions) {
  uint32_t id = ++g->npysites;
  return nsp_tracegen_pysite_as(g, id, flags, tid, n, files, lines, functions) < 0 ? 0 : id;
}

void nsp_tracegen_set_pysite(struct nsp_tracegen *g, uint32_t pysite) { g->pysite = pysite; }
