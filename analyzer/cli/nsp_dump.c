/* nsp_dump.c - `ncclspy dump`: every record of a trace, one per line.
 * For people checking what the shim wrote, and for scripts (JSON lines). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "nsp_escape.h"
#include "nsp_names.h"
#include "nsp_reader.h"
#include "nsp_report.h"

static const char *drop_reason(uint32_t r) {
  switch (r) {
    case NSP_DROP_RING_FULL: return "ring-full";
    case NSP_DROP_WRITE_ERROR: return "write-error";
    case NSP_DROP_SIZE_CAP: return "size-cap";
    default: return "unknown";
  }
}

static void put_t(FILE *out, const struct nsp_file_header *h, uint64_t t) {
  int64_t rel = (int64_t)(t - h->monotonic_ns);
  fprintf(out, "t=%s%.6fms ", rel < 0 ? "-" : "+", (double)(rel < 0 ? -(double)rel : (double)rel) / 1e6);
}

static void text_header(FILE *out, const char *path, const struct nsp_file_header *h) {
  char vb[32];
  fprintf(out, "HEADER file=");
  nsp_put_quoted(out, path);
  fprintf(out, " format=%u.%u header_size=%" PRIu32 " host=", h->major, h->minor, h->header_size);
  nsp_put_quoted(out, h->host);
  fprintf(out, " pid=%" PRIu32 " nccl_version=%s realtime_ns=%" PRIu64 " monotonic_ns=%" PRIu64 " flags=0x%" PRIx32 "\n",
          h->pid, nsp_nccl_version_str(h->nccl_version, vb, sizeof vb), h->realtime_ns, h->monotonic_ns, h->flags);
}

static void text_record(FILE *out, const struct nsp_file_header *h, const struct nsp_rec *r) {
  char b1[32], b2[32], b3[32];
  const struct nsp_rec_ext *x = r->ext;
  switch (r->kind) {
    case NSP_REC_PROCESS:
      fprintf(out, "PROCESS pid=%" PRIu32 " ppid=%" PRIu32 " nccl_version=%s host=", x->pid, x->ppid,
              nsp_nccl_version_str(x->nccl_version, b1, sizeof b1));
      nsp_put_quoted(out, x->host);
      fprintf(out, " shim_version=");
      nsp_put_quoted(out, x->shim_version);
      fprintf(out, " nccl_path=");
      nsp_put_quoted(out, x->nccl_path);
      fprintf(out, " realtime_ns=%" PRIu64 " monotonic_ns=%" PRIu64 " env={", x->realtime_ns, x->monotonic_ns);
      for (uint32_t i = 0; i < x->nenv; i++) {
        fprintf(out, "%s", i ? " " : "");
        nsp_put_esc(out, x->env[2 * i]);
        fputc('=', out);
        nsp_put_quoted(out, x->env[2 * i + 1]);
      }
      fprintf(out, "}");
      if (x->driver_version || x->runtime_version || (x->launcher && x->launcher[0]) || x->tracking) {
        fprintf(out, " driver_version=%d runtime_version=%d launcher=", x->driver_version, x->runtime_version);
        nsp_put_quoted(out, x->launcher);
        fprintf(out, " tracking=0x%" PRIx32, x->tracking);
      }
      fputc('\n', out);
      return;
    case NSP_REC_COMM:
      put_t(out, h, r->t_enter);
      fprintf(out, "COMM comm=%" PRIu32 " id=%016" PRIx64 " api=%s rank=%d nranks=%d device=%d parent=%016" PRIx64
                   " color=%d key=%d split_index=%" PRIu32 " name=",
              r->comm, x->comm_id, nsp_api_name(r->api), x->rank, x->nranks, x->device, x->parent_id, x->color, x->key,
              x->split_index);
      nsp_put_quoted(out, x->comm_name);
      fprintf(out, " handle=0x%" PRIx64 " result=%s dt=%.3fus flags=0x%x", x->handle,
              nsp_result_name(r->result, b1, sizeof b1), (double)(r->t_exit - r->t_enter) / 1e3, r->flags);
      if ((x->gpu_uuid && x->gpu_uuid[0]) || (x->gpu_pci_bus_id && x->gpu_pci_bus_id[0]) ||
          (x->gpu_name && x->gpu_name[0])) {
        fprintf(out, " gpu_uuid=");
        nsp_put_quoted(out, x->gpu_uuid);
        fprintf(out, " gpu_pci_bus_id=");
        nsp_put_quoted(out, x->gpu_pci_bus_id);
        fprintf(out, " gpu_name=");
        nsp_put_quoted(out, x->gpu_name);
      }
      break;
    case NSP_REC_COMM_END:
      put_t(out, h, r->t_enter);
      fprintf(out, "COMM_END comm=%" PRIu32 " api=%s result=%s dt=%.3fus", r->comm, nsp_api_name(r->api),
              nsp_result_name(r->result, b1, sizeof b1), (double)(r->t_exit - r->t_enter) / 1e3);
      break;
    case NSP_REC_CALL:
      put_t(out, h, r->t_enter);
      fprintf(out, "CALL %s comm=%" PRIu32 " seq=%" PRIu64 " count=%" PRIu64 " dtype=%s redop=%s peer=%d stream=0x%" PRIx64
                   " sendbuff=0x%" PRIx64 " recvbuff=0x%" PRIx64 " group=%" PRIu64 "/%" PRIu32 " dt=%.3fus result=%s flags=0x%x",
              nsp_op_name(r->api), r->comm, r->seq, r->count, r->dtype < 0 ? "-" : nsp_dtype_name(r->dtype, b1, sizeof b1),
              r->redop < 0 ? "-" : nsp_redop_name(r->redop, b2, sizeof b2), r->peer, r->stream, r->sendbuff, r->recvbuff, r->group_id,
              r->group_depth, (double)(r->t_exit - r->t_enter) / 1e3, nsp_result_name(r->result, b3, sizeof b3),
              r->flags);
      if (r->site) fprintf(out, " site=%" PRIu32, r->site);
      break;
    case NSP_REC_COMPLETION:
      put_t(out, h, r->count); /* when the shim saw it */
      fprintf(out, "COMPLETION comm=%" PRIu32 " api=%s seq=%" PRIu64 " peer=%d group=%" PRIu64 " flags=0x%x%s%s%s%s%s",
              r->comm, r->group_id ? "-" : nsp_api_name(r->api), r->seq, r->peer, r->group_id, r->flags,
              r->flags & NSP_DONE_OK ? " ok" : "", r->flags & NSP_DONE_TIMED ? " timed" : "",
              r->flags & NSP_DONE_CAPTURED ? " captured" : "", r->flags & NSP_DONE_ERROR ? " error" : "",
              r->flags & NSP_DONE_ABANDONED ? " abandoned" : "");
      if (r->flags & NSP_DONE_TIMED)
        fprintf(out, " gpu_start=%s%.6fms gpu_dt=%.3fus", r->t_enter >= h->monotonic_ns ? "+" : "-",
                (double)(r->t_enter >= h->monotonic_ns ? r->t_enter - h->monotonic_ns : h->monotonic_ns - r->t_enter) / 1e6,
                (double)(r->t_exit - r->t_enter) / 1e3);
      break;
    case NSP_REC_CALLSITE:
      fprintf(out, "CALLSITE site=%" PRIu32 " flags=0x%x frames=%" PRIu32 " [", r->site, r->flags, x ? x->nframes : 0);
      for (uint32_t i = 0; x && i < x->nframes; i++) {
        fprintf(out, "%s", i ? "; " : "");
        nsp_put_quoted(out, x->frame_module[i]);
        fprintf(out, "+0x%" PRIx64 " ", x->frame_offset[i]);
        nsp_put_quoted(out, x->frame_symbol[i]);
      }
      fputc(']', out);
      break;
    case NSP_REC_SIGNAL: {
      const char *cn = nsp_signal_code_name((int)r->aux, r->result);
      put_t(out, h, r->t_enter);
      fprintf(out, "SIGNAL sig=%s code=%d%s%s addr=0x%" PRIx64 " tid=%" PRIu64 " sender_pid=%d flags=0x%x%s%s%s%s frames=%" PRIu32 " [",
              nsp_signal_name((int)r->aux, b1, sizeof b1), r->result, cn[0] ? "/" : "", cn, r->sendbuff, r->seq,
              r->peer, r->flags, r->flags & NSP_SIG_TRUNCATED ? " truncated" : "",
              r->flags & NSP_SIG_FAULTED ? " faulted" : "", r->flags & NSP_SIG_NO_STACK ? " no-stack" : "",
              r->flags & NSP_SIG_CHAINED ? " chained" : "", x ? x->nframes : 0);
      for (uint32_t i = 0; x && i < x->nframes; i++) {
        fprintf(out, "%s", i ? "; " : "");
        nsp_put_quoted(out, x->frame_module[i]);
        fprintf(out, "+0x%" PRIx64 " ", x->frame_offset[i]);
        nsp_put_quoted(out, x->frame_symbol[i]);
      }
      fputc(']', out);
      break;
    }
    case NSP_REC_REDOP:
      put_t(out, h, r->t_enter);
      fprintf(out, "REDOP api=%s comm=%" PRIu32 " redop=%s dtype=%s residence=%" PRIu32 " scalar=0x%" PRIx64 " result=%s",
              nsp_api_name(r->api), r->comm, nsp_redop_name(r->redop, b1, sizeof b1),
              nsp_dtype_name(r->dtype, b2, sizeof b2), r->aux, r->count, nsp_result_name(r->result, b3, sizeof b3));
      break;
    case NSP_REC_DROPPED:
      put_t(out, h, r->t_enter);
      fprintf(out, "DROPPED count=%" PRIu64 " reason=%s", r->count, drop_reason(r->aux));
      break;
    case NSP_REC_ASYNC_ERROR:
      put_t(out, h, r->t_enter);
      fprintf(out, "ASYNC_ERROR comm=%" PRIu32 " result=%s", r->comm, nsp_result_name(r->result, b1, sizeof b1));
      break;
    case NSP_REC_RINGPOS:
      fprintf(out, "RINGPOS first=%" PRIu64 " end=%" PRIu64, r->seq, r->count);
      break;
    case NSP_REC_HEARTBEAT:
      put_t(out, h, r->t_enter);
      fprintf(out, "HEARTBEAT pending=%" PRIu64 " oldest_enqueued=%+.6fms", r->count,
              ((double)r->t_exit - (double)r->t_enter) / 1e6);
      break;
    default:
      return;
  }
  if (r->last_error) {
    fprintf(out, " last_error=");
    nsp_put_quoted(out, r->last_error);
  }
  fputc('\n', out);
}

/* Keys and strings are made valid UTF-8 (nsp_escape.h): environment
 * variable names are keys from the trace. */
static void jput(json_object *o, const char *k, json_object *v) {
  if (nsp_json_add(o, k, v) != 0) json_object_put(v);
}
static json_object *ji(int64_t v) { return json_object_new_int64(v); }
static json_object *js(const char *s) { return nsp_json_string(s); }
static json_object *jhex(uint64_t v) {
  char b[17];
  snprintf(b, sizeof b, "%016" PRIx64, v);
  return js(b);
}

static void json_line(FILE *out, json_object *o) {
  const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
  if (s) fprintf(out, "%s\n", s);
  json_object_put(o);
}

static void json_header(FILE *out, const char *path, const struct nsp_file_header *h) {
  json_object *o = json_object_new_object();
  if (!o) return;
  jput(o, "record", js("header"));
  jput(o, "file", js(path));
  jput(o, "major", ji(h->major));
  jput(o, "minor", ji(h->minor));
  jput(o, "header_size", ji(h->header_size));
  jput(o, "host", js(h->host));
  jput(o, "pid", ji(h->pid));
  jput(o, "nccl_version", ji(h->nccl_version));
  jput(o, "realtime_ns", ji((int64_t)h->realtime_ns));
  jput(o, "monotonic_ns", ji((int64_t)h->monotonic_ns));
  jput(o, "flags", ji(h->flags));
  json_line(out, o);
}

/* The frames of a CALLSITE or SIGNAL record: [{module, offset, symbol}]. */
static json_object *json_frames(const struct nsp_rec_ext *x) {
  json_object *fr = json_object_new_array();
  for (uint32_t i = 0; fr && x && i < x->nframes; i++) {
    json_object *f = json_object_new_object();
    if (!f) continue;
    jput(f, "module", js(x->frame_module[i]));
    jput(f, "offset", ji((int64_t)x->frame_offset[i]));
    jput(f, "symbol", js(x->frame_symbol[i]));
    if (json_object_array_add(fr, f) != 0) json_object_put(f);
  }
  return fr;
}

static void json_record(FILE *out, const struct nsp_file_header *h, const struct nsp_rec *r) {
  char b[32];
  const struct nsp_rec_ext *x = r->ext;
  json_object *o = json_object_new_object();
  if (!o) return;
  jput(o, "record", js(r->kind == NSP_REC_PROCESS     ? "process"
                       : r->kind == NSP_REC_COMM      ? "comm"
                       : r->kind == NSP_REC_COMM_END  ? "comm_end"
                       : r->kind == NSP_REC_CALL      ? "call"
                       : r->kind == NSP_REC_REDOP     ? "redop"
                       : r->kind == NSP_REC_DROPPED   ? "dropped"
                       : r->kind == NSP_REC_COMPLETION ? "completion"
                       : r->kind == NSP_REC_CALLSITE  ? "callsite"
                       : r->kind == NSP_REC_RINGPOS   ? "ringpos"
                       : r->kind == NSP_REC_HEARTBEAT ? "heartbeat"
                       : r->kind == NSP_REC_SIGNAL    ? "signal"
                                                      : "async_error"));
  if (r->kind == NSP_REC_CALLSITE) {
    jput(o, "site", ji(r->site));
    jput(o, "flags", ji(r->flags));
    jput(o, "frames", json_frames(x));
    json_line(out, o);
    return;
  }
  if (r->kind == NSP_REC_SIGNAL) {
    jput(o, "signo", ji(r->aux));
    jput(o, "signal", js(nsp_signal_name((int)r->aux, b, sizeof b)));
    jput(o, "code", ji(r->result));
    jput(o, "code_name", js(nsp_signal_code_name((int)r->aux, r->result)));
    jput(o, "addr", ji((int64_t)r->sendbuff));
    jput(o, "tid", ji((int64_t)r->seq));
    jput(o, "sender_pid", ji(r->peer));
    jput(o, "flags", ji(r->flags));
    jput(o, "t_ns", ji((int64_t)r->t_enter));
    jput(o, "t_rel_ns", ji((int64_t)(r->t_enter - h->monotonic_ns)));
    jput(o, "frames", json_frames(x));
    json_line(out, o);
    return;
  }
  if (r->kind == NSP_REC_COMPLETION) {
    jput(o, "comm", ji(r->comm));
    jput(o, "api", js(nsp_api_name(r->api)));
    jput(o, "api_id", ji(r->api));
    jput(o, "seq", ji((int64_t)r->seq));
    jput(o, "peer", ji(r->peer));
    jput(o, "group_id", ji((int64_t)r->group_id));
    jput(o, "flags", ji(r->flags));
    jput(o, "gpu_start_ns", ji((int64_t)r->t_enter));
    jput(o, "gpu_end_ns", ji((int64_t)r->t_exit));
    jput(o, "t_seen_ns", ji((int64_t)r->count));
    jput(o, "t_rel_ns", ji((int64_t)(r->count - h->monotonic_ns)));
    json_line(out, o);
    return;
  }
  if (r->kind == NSP_REC_PROCESS) {
    jput(o, "pid", ji(x->pid));
    jput(o, "ppid", ji(x->ppid));
    jput(o, "nccl_version", ji(x->nccl_version));
    jput(o, "realtime_ns", ji((int64_t)x->realtime_ns));
    jput(o, "monotonic_ns", ji((int64_t)x->monotonic_ns));
    jput(o, "host", js(x->host));
    jput(o, "shim_version", js(x->shim_version));
    jput(o, "nccl_path", js(x->nccl_path));
    jput(o, "driver_version", ji(x->driver_version));
    jput(o, "runtime_version", ji(x->runtime_version));
    jput(o, "launcher", js(x->launcher));
    jput(o, "tracking", ji(x->tracking));
    json_object *env = json_object_new_object();
    for (uint32_t i = 0; env && i < x->nenv; i++) jput(env, x->env[2 * i], js(x->env[2 * i + 1]));
    jput(o, "env", env);
    json_line(out, o);
    return;
  }
  jput(o, "t_rel_ns", ji((int64_t)(r->t_enter - h->monotonic_ns)));
  jput(o, "t_enter_ns", ji((int64_t)r->t_enter));
  if (r->kind == NSP_REC_COMM || r->kind == NSP_REC_COMM_END || r->kind == NSP_REC_CALL || r->kind == NSP_REC_REDOP)
    jput(o, "t_exit_ns", ji((int64_t)r->t_exit));
  /* Only the fields a kind has: a heartbeat, ring position or drop count
   * names no communicator, API or result. */
  int has_call = r->kind == NSP_REC_COMM || r->kind == NSP_REC_COMM_END || r->kind == NSP_REC_CALL ||
                 r->kind == NSP_REC_REDOP;
  int has_result = has_call || r->kind == NSP_REC_ASYNC_ERROR;
  if (has_result) jput(o, "comm", ji(r->comm));
  if (has_call) {
    jput(o, "api", js(nsp_api_name(r->api)));
    jput(o, "api_id", ji(r->api));
  }
  switch (r->kind) {
    case NSP_REC_COMM:
      jput(o, "id", jhex(x->comm_id));
      jput(o, "rank", ji(x->rank));
      jput(o, "nranks", ji(x->nranks));
      jput(o, "device", ji(x->device));
      jput(o, "parent", jhex(x->parent_id));
      jput(o, "color", ji(x->color));
      jput(o, "key", ji(x->key));
      jput(o, "split_index", ji(x->split_index));
      jput(o, "comm_name", js(x->comm_name));
      jput(o, "handle", ji((int64_t)x->handle));
      jput(o, "flags", ji(r->flags));
      jput(o, "gpu_uuid", js(x->gpu_uuid));
      jput(o, "gpu_pci_bus_id", js(x->gpu_pci_bus_id));
      jput(o, "gpu_name", js(x->gpu_name));
      break;
    case NSP_REC_CALL:
      jput(o, "op", js(nsp_op_name(r->api)));
      jput(o, "seq", ji((int64_t)r->seq));
      jput(o, "count", ji((int64_t)r->count));
      if (r->dtype >= 0) { /* calls that move no data have none */
        jput(o, "dtype", js(nsp_dtype_name(r->dtype, b, sizeof b)));
        jput(o, "dtype_id", ji(r->dtype));
      }
      if (r->redop >= 0) {
        jput(o, "redop", js(nsp_redop_name(r->redop, b, sizeof b)));
        jput(o, "redop_id", ji(r->redop));
      }
      jput(o, "peer", ji(r->peer));
      jput(o, "stream", ji((int64_t)r->stream));
      jput(o, "sendbuff", ji((int64_t)r->sendbuff));
      jput(o, "recvbuff", ji((int64_t)r->recvbuff));
      jput(o, "group_id", ji((int64_t)r->group_id));
      jput(o, "group_depth", ji(r->group_depth));
      jput(o, "flags", ji(r->flags));
      jput(o, "site", ji(r->site));
      break;
    case NSP_REC_REDOP:
      jput(o, "redop_id", ji(r->redop));
      jput(o, "dtype_id", ji(r->dtype));
      jput(o, "residence", ji(r->aux));
      jput(o, "scalar", ji((int64_t)r->count));
      break;
    case NSP_REC_DROPPED:
      jput(o, "count", ji((int64_t)r->count));
      jput(o, "reason", js(drop_reason(r->aux)));
      jput(o, "reason_id", ji(r->aux));
      break;
    case NSP_REC_RINGPOS:
      jput(o, "first", ji((int64_t)r->seq));
      jput(o, "end", ji((int64_t)r->count));
      break;
    case NSP_REC_HEARTBEAT:
      jput(o, "t_ns", ji((int64_t)r->t_enter));
      jput(o, "pending", ji((int64_t)r->count));
      jput(o, "oldest_enqueue_ns", ji((int64_t)r->t_exit));
      break;
    default:
      break;
  }
  if (has_result && r->kind != NSP_REC_REDOP) {
    jput(o, "result", js(nsp_result_name(r->result, b, sizeof b)));
    jput(o, "result_code", ji(r->result));
  }
  if (r->last_error) jput(o, "last_error", js(r->last_error));
  json_line(out, o);
}

int nsp_dump_file(const char *path, int json, FILE *out, FILE *err) {
  char e[256];
  struct nsp_reader *r = nsp_reader_open(path, e, sizeof e);
  if (!r) {
    size_t n = strlen(path);
    if (n > 13 && !strcmp(path + n - 13, ".ncclspy.ring") && access(path, F_OK) == 0)
      fprintf(err, "ncclspy: %s: a crash ring, read along with its trace: dump %.*s\n", path, (int)(n - 5), path);
    else fprintf(err, "ncclspy: %s: %s\n", path, e);
    return 2;
  }
  const struct nsp_file_header *h = nsp_reader_header(r);
  if (json) json_header(out, path, h);
  else text_header(out, path, h);
  struct nsp_rec rec;
  int ret;
  while ((ret = nsp_reader_next(r, &rec)) == 1) {
    if (json) json_record(out, h, &rec);
    else text_record(out, h, &rec);
  }
  const char *problem = nsp_reader_problem(r);
  if (problem) {
    if (json) {
      json_object *o = json_object_new_object();
      if (o) {
        jput(o, "record", js("problem"));
        jput(o, "file", js(path));
        jput(o, "message", js(problem));
        json_line(out, o);
      }
    } else {
      fprintf(out, "PROBLEM ");
      nsp_put_quoted(out, problem);
      fputc('\n', out);
    }
    fprintf(err, "ncclspy: %s: %s\n", path, problem);
  }
  nsp_reader_destroy(r);
  fflush(out);
  if (ferror(out)) return -1;
  return problem ? 1 : 0;
}
