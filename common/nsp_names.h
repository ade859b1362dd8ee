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

/* Entry point name without the "nccl" prefix ("AllReduce"), or "api#N". */
const char *nsp_api_name(int api);
/* The operation in the field's words: "all-reduce", "all-gather",
 * "reduce-scatter", "broadcast", "reduce", "all-to-all", "gather",
 * "scatter", "send", "recv", "group-start", ...; "api#N" when unknown. */
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
 * collective: Bcast and Broadcast are both "broadcast". */
int nsp_api_coll_class(int api);

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
