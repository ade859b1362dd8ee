/* nsp_report_perf.c - `ncclspy perf`: the performance figures of a job
 * (nsp_job_perf) as text and JSON.  Layout and schema: docs/REPORT.md.
 * Trace-derived strings (communicator names, hosts) go out through
 * nsp_escape.h: escaped in the text, valid UTF-8 in the JSON. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "nsp_config.h"
#include "nsp_escape.h"
#include "nsp_names.h"
#include "nsp_report.h"

/* The dtype and reduction op columns as nccl-tests writes them ("none"
 * where there is none); "mixed" for a group's sample of several. */
static const char *fmt_dtype(int dtype, char *buf, size_t len) {
  return dtype < 0 ? "mixed" : nsp_dtype_name(dtype, buf, len);
}
static const char *fmt_redop(const struct nsp_perf_row *row, char *buf, size_t len) {
  if (!nsp_api_has_redop(row->api)) return "none";
  if (row->redop < 0) return "mixed";
  /* A line holds every PreMulSum op (no one definition): "premulsum". */
  struct nsp_call c = {.redop = row->redop >= (int)ncclNumOps ? NSP_REDOP_PREMULSUM : row->redop, .premul_dtype = -1};
  return nsp_format_redop(buf, len, &c);
}

static const char *fmt_ns(int64_t ns, char *buf, size_t len) {
  double v = (double)ns;
  if (ns < 1000) snprintf(buf, len, "%" PRId64 " ns", ns);
  else if (ns < 1000000) snprintf(buf, len, "%.2f us", v / 1e3);
  else if (ns < 1000000000) snprintf(buf, len, "%.2f ms", v / 1e6);
  else snprintf(buf, len, "%.3f s", v / 1e9);
  return buf;
}

/* A spread's op: "mixed ops" where ranks called different ones. */
static const char *spread_op(int api) { return api == NSP_PERF_OP_MIXED ? "mixed ops" : nsp_op_name(api); }

int nsp_report_perf_text(const struct nsp_job *job, FILE *out) {
  size_t nt = nsp_job_ntraces(job), nc = nsp_job_nperf(job);
  fprintf(out, "ncclspy perf: %zu trace%s, %zu communicator%s\n", nt, nt == 1 ? "" : "s", nc, nc == 1 ? "" : "s");
  fprintf(out, "GPU times come from calls that completed with GPU timing (failed or abandoned calls are left\n"
               "out); size S, algbw = S / t and busbw as nccl-tests computes them; p50/p99 by nearest rank.\n"
               "size (B) and count (elements) are per rank and per call, as nccl-tests prints them; calls and\n"
               "timed are summed over the ranks.\n"
               "Arrival spread: last minus first rank's entry into the collective, on one wall clock.\n");
  uint64_t timed = 0;
  for (size_t i = 0; i < nc; i++) {
    const struct nsp_perf_comm *pc = nsp_job_perf_comm(job, i);
    fputc('\n', out);
    nsp_report_put_comm(out, pc->comm, pc->comm_id);
    fputc('\n', out);
    uint64_t failed = 0, untracked = 0;
    if (pc->nrows)
      fprintf(out, "  %-16s %10s %12s %9s %10s %5s %9s %9s %10s %10s %12s %12s\n", "op", "size (B)", "count", "type",
              "redop", "root", "calls", "timed", "p50 (us)", "p99 (us)", "algbw (GB/s)", "busbw (GB/s)");
    for (size_t r = 0; r < pc->nrows; r++) {
      const struct nsp_perf_row *row = &pc->rows[r];
      char tb[32], rb[32];
      fprintf(out, "  %-16s %10" PRIu64 " %12" PRIu64 " %9s %10s %5d %9" PRIu64 " %9" PRIu64, nsp_op_name(row->api),
              row->bytes, row->count, fmt_dtype(row->dtype, tb, sizeof tb), fmt_redop(row, rb, sizeof rb), row->root,
              row->calls, row->timed);
      if (row->timed)
        fprintf(out, " %10.2f %10.2f %12.2f %12.2f\n", (double)row->p50_ns / 1e3, (double)row->p99_ns / 1e3,
                row->algbw_gbs, row->busbw_gbs);
      else
        fprintf(out, " %10s %10s %12s %12s\n", "-", "-", "-", "-");
      timed += row->timed;
      failed += row->failed;
      untracked += row->untracked;
    }
    if (!pc->nrows) fprintf(out, "  no collective or send/recv calls\n");
    if (failed || untracked) {
      /* e.g. "not timed: 2 calls failed or were abandoned, 3 untracked or in a CUDA graph" */
      fprintf(out, "  not timed:");
      if (failed)
        fprintf(out, " %" PRIu64 " call%s failed or %s abandoned", failed, failed == 1 ? "" : "s",
                failed == 1 ? "was" : "were");
      if (untracked)
        fprintf(out, "%s %" PRIu64 "%s untracked or in a CUDA graph", failed ? "," : "", untracked,
                failed ? "" : untracked == 1 ? " call" : " calls");
      fputc('\n', out);
    }
    if (pc->collectives) {
      char a[32], b[32], m[32];
      fprintf(out, "  arrival spread over %" PRIu64 " collective%s: p50 %s, p99 %s, max %s", pc->collectives,
              pc->collectives == 1 ? "" : "s", fmt_ns(pc->spread_p50_ns, a, sizeof a),
              fmt_ns(pc->spread_p99_ns, b, sizeof b), fmt_ns(pc->spread_max_ns, m, sizeof m));
      if (pc->nworst && pc->spread_max_ns > 0) {
        const struct nsp_perf_spread *w = &pc->worst[0];
        fprintf(out, " (seq %" PRIu64 " %s", w->seq, spread_op(w->api));
        if (w->last_rank >= 0) {
          char rb[64];
          nsp_format_ranks_job(rb, sizeof rb, &w->last_rank, &w->last_job_rank, 1);
          fprintf(out, ", last: %s", rb);
        }
        fputc(')', out);
      }
      fputc('\n', out);
      if (pc->nstragglers) {
        fprintf(out, "  last to arrive (of %" PRIu64 " with one rank last):", pc->with_last);
        for (size_t s = 0; s < pc->nstragglers; s++) {
          const struct nsp_perf_straggler *st = &pc->stragglers[s];
          char rb[64];
          nsp_format_ranks_job(rb, sizeof rb, &st->rank, &st->job_rank, 1);
          fprintf(out, "%s %s (", s ? ";" : "", rb);
          nsp_put_esc(out, st->host);
          fprintf(out, " pid %" PRIu32 ") %" PRIu64 " time%s, %.1f%%", st->pid, st->last, st->last == 1 ? "" : "s",
                  st->share * 100.0);
        }
        fputc('\n', out);
      }
    }
  }
  if (!timed)
    fprintf(out, "\nNo GPU timing in these traces: run with completion tracking and timing to get durations\n"
                 "and bandwidths (the arrival figures above need none).\n");
  /* What was not read, or read in part: the figures leave it out. */
  nsp_report_put_notes(out, job);
  fflush(out);
  return ferror(out) ? -1 : 0;
}

static int jput(json_object *o, const char *k, json_object *v, int *oom) {
  if (!v || json_object_object_add(o, k, v) != 0) *oom = 1;
  return 0;
}
static void jpush(json_object *a, json_object *v, int *oom) {
  if (!v || json_object_array_add(a, v) != 0) *oom = 1;
}

struct json_object *nsp_report_perf_json_object(const struct nsp_job *job) {
  int oom = 0;
  json_object *root = json_object_new_object();
  if (!root) return NULL;
  jput(root, "schema", json_object_new_int(NSP_REPORT_SCHEMA), &oom);
  jput(root, "version", nsp_json_string(NSP_VERSION), &oom);
  jput(root, "start_time_ns", json_object_new_int64(nsp_job_start_ns(job)), &oom);
  json_object *units = json_object_new_object();
  if (units) {
    jput(units, "bytes", nsp_json_string("per rank, per call"), &oom);
    jput(units, "count", nsp_json_string("elements per rank, per call"), &oom);
    jput(units, "calls", nsp_json_string("summed over the ranks"), &oom);
  }
  jput(root, "units", units, &oom);
  json_object *comms = json_object_new_array();
  for (size_t i = 0; comms && i < nsp_job_nperf(job); i++) {
    const struct nsp_perf_comm *pc = nsp_job_perf_comm(job, i);
    json_object *o = json_object_new_object();
    if (!o) {
      oom = 1;
      break;
    }
    char id[17];
    snprintf(id, sizeof id, "%016" PRIx64, pc->comm_id);
    jput(o, "id", nsp_json_string(id), &oom);
    jput(o, "nranks", json_object_new_int(pc->comm ? pc->comm->nranks : -1), &oom);
    jput(o, "comm_name", nsp_json_string(pc->comm ? pc->comm->name : ""), &oom);
    json_object *ops = json_object_new_array();
    for (size_t r = 0; ops && r < pc->nrows; r++) {
      const struct nsp_perf_row *row = &pc->rows[r];
      json_object *x = json_object_new_object();
      if (!x) {
        oom = 1;
        break;
      }
      jput(x, "op", nsp_json_string(nsp_op_name(row->api)), &oom);
      jput(x, "api", nsp_json_string(nsp_api_name(row->api)), &oom);
      char tb[32], rb[32];
      jput(x, "bytes", json_object_new_uint64(row->bytes), &oom);
      jput(x, "count", json_object_new_uint64(row->count), &oom);
      jput(x, "dtype", nsp_json_string(fmt_dtype(row->dtype, tb, sizeof tb)), &oom);
      jput(x, "redop", nsp_json_string(fmt_redop(row, rb, sizeof rb)), &oom);
      jput(x, "root", json_object_new_int(row->root), &oom);
      jput(x, "log2", json_object_new_int(row->log2), &oom);
      /* schema 1's bucket bounds, kept: a line is one exact size now */
      jput(x, "bytes_min", json_object_new_uint64(row->bytes), &oom);
      jput(x, "bytes_max", json_object_new_uint64(row->bytes), &oom);
      jput(x, "calls", json_object_new_int64((int64_t)row->calls), &oom);
      jput(x, "timed", json_object_new_int64((int64_t)row->timed), &oom);
      jput(x, "failed", json_object_new_int64((int64_t)row->failed), &oom);
      jput(x, "untracked", json_object_new_int64((int64_t)row->untracked), &oom);
      if (row->timed) {
        jput(x, "p50_ns", json_object_new_int64(row->p50_ns), &oom);
        jput(x, "p99_ns", json_object_new_int64(row->p99_ns), &oom);
        jput(x, "algbw_gbs", json_object_new_double(row->algbw_gbs), &oom);
        jput(x, "busbw_gbs", json_object_new_double(row->busbw_gbs), &oom);
      }
      jput(x, "busbw_factor",
           json_object_new_double(nsp_perf_busbw_factor(row->api, pc->comm ? pc->comm->nranks : 1)), &oom);
      jpush(ops, x, &oom);
    }
    jput(o, "ops", ops, &oom);
    json_object *arr = json_object_new_object();
    if (arr) {
      jput(arr, "collectives", json_object_new_int64((int64_t)pc->collectives), &oom);
      jput(arr, "with_last", json_object_new_int64((int64_t)pc->with_last), &oom);
      jput(arr, "spread_p50_ns", json_object_new_int64(pc->spread_p50_ns), &oom);
      jput(arr, "spread_p99_ns", json_object_new_int64(pc->spread_p99_ns), &oom);
      jput(arr, "spread_max_ns", json_object_new_int64(pc->spread_max_ns), &oom);
      json_object *worst = json_object_new_array();
      for (size_t w = 0; worst && w < pc->nworst; w++) {
        json_object *x = json_object_new_object();
        if (x) {
          jput(x, "seq", json_object_new_int64((int64_t)pc->worst[w].seq), &oom);
          jput(x, "op", nsp_json_string(spread_op(pc->worst[w].api)), &oom);
          jput(x, "spread_ns", json_object_new_int64(pc->worst[w].spread_ns), &oom);
          jput(x, "last_rank", json_object_new_int(pc->worst[w].last_rank), &oom);
          jput(x, "last_job_rank", json_object_new_int(pc->worst[w].last_job_rank), &oom);
        }
        jpush(worst, x, &oom);
      }
      jput(arr, "worst", worst, &oom);
    }
    jput(o, "arrival", arr, &oom);
    json_object *st = json_object_new_array();
    for (size_t s = 0; st && s < pc->nstragglers; s++) {
      const struct nsp_perf_straggler *g = &pc->stragglers[s];
      json_object *x = json_object_new_object();
      if (x) {
        jput(x, "rank", json_object_new_int(g->rank), &oom);
        jput(x, "job_rank", json_object_new_int(g->job_rank), &oom);
        jput(x, "host", nsp_json_string(g->host), &oom);
        jput(x, "pid", json_object_new_int64(g->pid), &oom);
        jput(x, "trace", json_object_new_int64(g->trace == SIZE_MAX ? -1 : (int64_t)g->trace), &oom);
        jput(x, "last", json_object_new_int64((int64_t)g->last), &oom);
        jput(x, "share", json_object_new_double(g->share), &oom);
      }
      jpush(st, x, &oom);
    }
    jput(o, "stragglers", st, &oom);
    jpush(comms, o, &oom);
  }
  jput(root, "communicators", comms, &oom);
  json_object *notes = json_object_new_array();
  for (size_t i = 0; notes && i < nsp_job_nnotes(job); i++) jpush(notes, nsp_json_string(nsp_job_note(job, i)), &oom);
  jput(root, "notes", notes, &oom);
  if (oom) {
    json_object_put(root);
    return NULL;
  }
  return root;
}

int nsp_report_perf_json(const struct nsp_job *job, FILE *out) {
  return nsp_report_json_emit(nsp_report_perf_json_object(job), out);
}
