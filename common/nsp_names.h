/* nsp_names.h - names of NCCL's enum values, in the field's terms.
 *
 * Every function accepts any value, including values a newer NCCL may
 * define: those get a name with the number in it, never an array index
 * out of range. */
#ifndef NSP_NAMES_H
#define NSP_NAMES_H

#include <stddef.h>
#include <stdint.h>

#include "nsp_nccl.h"

/* Facts about NCCL's entry points, from the table in nsp_nccl_apis.h. */

/* Entry point name without the "nccl" prefix ("AllReduce"), or "api#?". */
const char *nsp_api_name(int api);
/* The operation in the field's words: "all-reduce", "all-gather",
 * "reduce-scatter", "broadcast", "reduce", "all-to-all", "gather",
 * "scatter", "send", "recv", "group-start", ...; the entry point's name
 * for the others ("CommInitRank"); "api#?" when unknown. */
const char *nsp_op_name(int api);
/* enum nsp_api_kind of an API id; NSP_K_OTHER for unknown ids. */
int nsp_api_kind(int api);
/* API id from a name with or without the nccl prefix, case-sensitive;
 * -1 when unknown. */
int nsp_api_from_name(const char *name);
/* True for collectives that take a root (broadcast, reduce, gather,
 * scatter) and for Bcast. */
int nsp_api_has_root(int api);
/* True for collectives that take a reduction op. */
int nsp_api_has_redop(int api);
/* A kind id that merges entry points the other ranks see as the same
 * collective: Bcast and Broadcast are both "broadcast" (NSP_API_Broadcast). */
int nsp_api_coll_class(int api);
/* nccl-tests' size S of a call is count x dtype size x this: nranks for
 * all-gather (sendcount), reduce-scatter (recvcount), all-to-all, gather
 * and scatter (count per rank) when nranks > 1; 1 otherwise, and for
 * every other entry point. */
uint64_t nsp_api_size_factor(int api, int nranks);
/* nccl-tests' bus bandwidth factor (busbw = algbw x this), n = nranks (1
 * when nranks <= 0): all-reduce 2(n-1)/n; all-gather, reduce-scatter,
 * all-to-all, gather, scatter (n-1)/n; broadcast, reduce, send, recv and
 * every other entry point 1. */
double nsp_api_busbw_factor(int api, int nranks);

/* "float16", "bfloat16", ...; "dtype#N" for values NCCL 2.28 lacks. */
const char *nsp_dtype_name(int dtype, char *buf, size_t buflen);
/* Bytes per element (see nsp_nccl.h); 0 for unknown dtypes. */
size_t nsp_dtype_size(int dtype);

/* "sum", "prod", "max", "min", "avg"; "premulsum#N" for dynamic ops
 * (>= ncclNumOps, NCCL 2.11); "none" for -1. */
const char *nsp_redop_name(int redop, char *buf, size_t buflen);

/* "ncclSuccess", "ncclSystemError", ... "ncclTimeout" (2.30.3);
 * "unknown result N" otherwise. */
const char *nsp_result_name(int result, char *buf, size_t buflen);

/* Signals (SIGNAL records, format 1.3), by Linux's numbers whatever the
 * host: "SIGSEGV", "SIGABRT", ...; "signal N" (in buf) for others. */
const char *nsp_signal_name(int signo, char *buf, size_t buflen);
/* si_code of a signal: its name ("SEGV_MAPERR", "SI_TKILL", "SI_KERNEL")
 * and its meaning ("address not mapped to an object"); "" when unknown.
 * Static strings. */
const char *nsp_signal_code_name(int signo, int code);
const char *nsp_signal_code_text(int signo, int code);

#endif /* NSP_NAMES_H */
