/* nsp_names.c - enum names; values from NCCL's nccl.h (see nsp_nccl.h). */
#include "nsp_names.h"

#include <stdio.h>
#include <string.h>

/* What NSP_NCCL_APIS says of each entry point. */
#define NSP_FACTS_(as, words, send, recv, count, has_redop, redop, has_root, peer, size, busbw) \
  words, as, has_redop, has_root, size, busbw
#define NSP_API_(name, kind, ret, params, args, since, op) \
  {#name, kind, NSP_APPLY(NSP_FACTS_, op)},
static const struct {
  const char *name;
  unsigned char kind;
  const char *words; /* the operation in the field's words; NULL: the name */
  short as;          /* the entry point the other ranks see it as; -1: itself */
  unsigned char has_redop, has_root, size, busbw;
} nsp_apis[] = {NSP_NCCL_APIS(NSP_API_)};
#undef NSP_API_
#undef NSP_FACTS_
_Static_assert(sizeof nsp_apis / sizeof nsp_apis[0] == NSP_API_COUNT, "one row per entry point");

static int api_known(int api) { return api >= 0 && api < NSP_API_COUNT; }

const char *nsp_api_name(int api) { return api_known(api) ? nsp_apis[api].name : "api#?"; }

int nsp_api_kind(int api) { return api_known(api) ? nsp_apis[api].kind : NSP_K_OTHER; }

int nsp_api_from_name(const char *name) {
  if (!strncmp(name, "nccl", 4)) name += 4;
  for (int i = 0; i < NSP_API_COUNT; i++)
    if (!strcmp(name, nsp_apis[i].name)) return i;
  return -1;
}

const char *nsp_op_name(int api) {
  return api_known(api) && nsp_apis[api].words ? nsp_apis[api].words : nsp_api_name(api);
}

int nsp_api_has_root(int api) { return api_known(api) && nsp_apis[api].has_root; }

int nsp_api_has_redop(int api) { return api_known(api) && nsp_apis[api].has_redop; }

int nsp_api_coll_class(int api) { return api_known(api) && nsp_apis[api].as >= 0 ? nsp_apis[api].as : api; }

uint64_t nsp_api_size_factor(int api, int nranks) {
  return api_known(api) && nsp_apis[api].size == NSP_SIZE_TOTAL && nranks > 1 ? (uint64_t)nranks : 1;
}

double nsp_api_busbw_factor(int api, int nranks) {
  double n = nranks > 0 ? nranks : 1;
  switch (api_known(api) ? nsp_apis[api].busbw : NSP_BUSBW_1) {
    case NSP_BUSBW_2N1: return 2.0 * (n - 1) / n;
    case NSP_BUSBW_N1: return (n - 1) / n;
    default: return 1.0;
  }
}

static const struct {
  const char *name;
  unsigned char size;
} nsp_dtypes[] = {
    {"int8", 1},    {"uint8", 1},   {"int32", 4},   {"uint32", 4},
    {"int64", 8},   {"uint64", 8},  {"float16", 2}, {"float32", 4},
    {"float64", 8}, {"bfloat16", 2}, {"float8e4m3", 1}, {"float8e5m2", 1},
};

const char *nsp_dtype_name(int dtype, char *buf, size_t buflen) {
  if (dtype >= 0 && dtype <= NSP_NCCL_DTYPE_MAX) return nsp_dtypes[dtype].name;
  snprintf(buf, buflen, "dtype#%d", dtype);
  return buf;
}

size_t nsp_dtype_size(int dtype) {
  return dtype >= 0 && dtype <= NSP_NCCL_DTYPE_MAX ? nsp_dtypes[dtype].size : 0;
}

const char *nsp_redop_name(int redop, char *buf, size_t buflen) {
  static const char *const names[] = {"sum", "prod", "max", "min", "avg"};
  if (redop == -1) return "none";
  if (redop >= 0 && redop < ncclNumOps) return names[redop];
  if (redop >= ncclNumOps) snprintf(buf, buflen, "premulsum#%d", redop);
  else snprintf(buf, buflen, "redop#%d", redop);
  return buf;
}

const char *nsp_result_name(int result, char *buf, size_t buflen) {
  static const char *const names[] = {
      "ncclSuccess",       "ncclUnhandledCudaError", "ncclSystemError",
      "ncclInternalError", "ncclInvalidArgument",    "ncclInvalidUsage",
      "ncclRemoteError",   "ncclInProgress",         "ncclTimeout",
  };
  if (result >= 0 && result <= NSP_NCCL_TIMEOUT) return names[result];
  snprintf(buf, buflen, "unknown result %d", result);
  return buf;
}

/* Signals as Linux numbers them (x86-64 and arm64 alike): traces are read
 * on any machine, so the host's <signal.h> is not used here. */
const char *nsp_signal_name(int signo, char *buf, size_t buflen) {
  switch (signo) {
    case 1: return "SIGHUP";
    case 2: return "SIGINT";
    case 3: return "SIGQUIT";
    case 4: return "SIGILL";
    case 5: return "SIGTRAP";
    case 6: return "SIGABRT";
    case 7: return "SIGBUS";
    case 8: return "SIGFPE";
    case 9: return "SIGKILL";
    case 11: return "SIGSEGV";
    case 13: return "SIGPIPE";
    case 15: return "SIGTERM";
    default: snprintf(buf, buflen, "signal %d", signo); return buf;
  }
}

/* si_code values of Linux's <asm-generic/siginfo.h>. */
static const char *const nsp_code_user[] = {
    /* 0 */ "SI_USER",   /* -1 */ "SI_QUEUE",  /* -2 */ "SI_TIMER", /* -3 */ "SI_MESGQ",
    /* -4 */ "SI_ASYNCIO", /* -5 */ "SI_SIGIO", /* -6 */ "SI_TKILL",
};
static const char *const nsp_code_text_user[] = {
    "sent by kill()", "sent by sigqueue()", "a timer expired", "a message queue message arrived",
    "asynchronous I/O completed", "I/O is possible", "raised by the process or sent by tgkill() (abort(), raise())",
};
static const char *const nsp_code_segv[][2] = {
    {"SEGV_MAPERR", "address not mapped to an object"},
    {"SEGV_ACCERR", "invalid permissions for a mapped object"},
    {"SEGV_BNDERR", "failed address bound checks"},
    {"SEGV_PKUERR", "access denied by memory protection keys"},
};
static const char *const nsp_code_bus[][2] = {
    {"BUS_ADRALN", "invalid address alignment"},
    {"BUS_ADRERR", "nonexistent physical address (e.g. a mapped file was cut)"},
    {"BUS_OBJERR", "object-specific hardware error"},
    {"BUS_MCEERR_AR", "hardware memory error consumed on a machine check"},
    {"BUS_MCEERR_AO", "hardware memory error detected, action optional"},
};
static const char *const nsp_code_ill[][2] = {
    {"ILL_ILLOPC", "illegal opcode"},         {"ILL_ILLOPN", "illegal operand"},
    {"ILL_ILLADR", "illegal addressing mode"}, {"ILL_ILLTRP", "illegal trap"},
    {"ILL_PRVOPC", "privileged opcode"},      {"ILL_PRVREG", "privileged register"},
    {"ILL_COPROC", "coprocessor error"},      {"ILL_BADSTK", "internal stack error"},
};
static const char *const nsp_code_fpe[][2] = {
    {"FPE_INTDIV", "integer divide by zero"},
    {"FPE_INTOVF", "integer overflow"},
    {"FPE_FLTDIV", "floating-point divide by zero"},
    {"FPE_FLTOVF", "floating-point overflow"},
    {"FPE_FLTUND", "floating-point underflow"},
    {"FPE_FLTRES", "floating-point inexact result"},
    {"FPE_FLTINV", "floating-point invalid operation"},
    {"FPE_FLTSUB", "subscript out of range"},
};
#define NSP_NCODES(a) ((int)(sizeof a / sizeof a[0]))

/* The name (which 0) or meaning (which 1) of si_code for signo; "". */
static const char *signal_code(int signo, int code, int which) {
  if (code == 0x80) return which ? "sent by the kernel" : "SI_KERNEL";
  if (code <= 0 && code >= -6) return which ? nsp_code_text_user[-code] : nsp_code_user[-code];
  if (code < 1) return "";
  switch (signo) {
    case 11: return code <= NSP_NCODES(nsp_code_segv) ? nsp_code_segv[code - 1][which] : "";
    case 7: return code <= NSP_NCODES(nsp_code_bus) ? nsp_code_bus[code - 1][which] : "";
    case 4: return code <= NSP_NCODES(nsp_code_ill) ? nsp_code_ill[code - 1][which] : "";
    case 8: return code <= NSP_NCODES(nsp_code_fpe) ? nsp_code_fpe[code - 1][which] : "";
    default: return "";
  }
}

const char *nsp_signal_code_name(int signo, int code) { return signal_code(signo, code, 0); }
const char *nsp_signal_code_text(int signo, int code) { return signal_code(signo, code, 1); }
