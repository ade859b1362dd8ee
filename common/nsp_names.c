/* nsp_names.c - enum names; values from NCCL's nccl.h (see nsp_nccl.h). */
#include "nsp_names.h"

#include <stdio.h>
#include <string.h>

#define NSP_NAME_(name, kind, ret, params, args, since) #name,
static const char *const nsp_api_names[] = {NSP_NCCL_APIS(NSP_NAME_)};
#undef NSP_NAME_
#define NSP_KIND_(name, kind, ret, params, args, since) kind,
static const unsigned char nsp_api_kinds[] = {NSP_NCCL_APIS(NSP_KIND_)};
#undef NSP_KIND_

static int api_known(int api) { return api >= 0 && api < NSP_API_COUNT; }

const char *nsp_api_name(int api) { return api_known(api) ? nsp_api_names[api] : "api#?"; }

int nsp_api_kind(int api) { return api_known(api) ? nsp_api_kinds[api] : NSP_K_OTHER; }

int nsp_api_from_name(const char *name) {
  if (!strncmp(name, "nccl", 4)) name += 4;
  for (int i = 0; i < NSP_API_COUNT; i++)
    if (!strcmp(name, nsp_api_names[i])) return i;
  return -1;
}

const char *nsp_op_name(int api) {
  switch (api) {
    case NSP_API_AllReduce: return "all-reduce";
    case NSP_API_AllGather: return "all-gather";
    case NSP_API_ReduceScatter: return "reduce-scatter";
    case NSP_API_Broadcast:
    case NSP_API_Bcast: return "broadcast";
    case NSP_API_Reduce: return "reduce";
    case NSP_API_AlltoAll: return "all-to-all";
    case NSP_API_Gather: return "gather";
    case NSP_API_Scatter: return "scatter";
    case NSP_API_Send: return "send";
    case NSP_API_Recv: return "recv";
    case NSP_API_GroupStart: return "group-start";
    case NSP_API_GroupEnd: return "group-end";
    case NSP_API_GroupSimulateEnd: return "group-simulate-end";
    default: return nsp_api_name(api);
  }
}

int nsp_api_has_root(int api) {
  return api == NSP_API_Broadcast || api == NSP_API_Bcast || api == NSP_API_Reduce ||
         api == NSP_API_Gather || api == NSP_API_Scatter;
}

int nsp_api_has_redop(int api) {
  return api == NSP_API_AllReduce || api == NSP_API_Reduce || api == NSP_API_ReduceScatter;
}

int nsp_api_coll_class(int api) { return api == NSP_API_Bcast ? NSP_API_Broadcast : api; }

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
