/* nsp_nccl.h - the parts of NCCL's public ABI that ncclspy relies on.
 *
 * ncclspy builds without CUDA or NCCL installed, so it declares the NCCL
 * types itself.  Every value here is a fact taken from NCCL's public
 * header (nccl.h) and release notes; the NCCL version that added a value
 * is given beside it.  tests/unit/test_abi.c checks these declarations
 * against /usr/local/cuda/include/nccl.h when that file is present.
 *
 * The declarations use NCCL's own type names so that the stand-in NCCL in
 * tests/standin can be built from this header alone.  Do not include this
 * together with the real nccl.h (the test that compares them includes the
 * real header in a separate translation unit).
 */
#ifndef NSP_NCCL_H
#define NSP_NCCL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Opaque handles.  A stream is a CUDA runtime cudaStream_t (a pointer). */
typedef struct ncclComm *ncclComm_t;
typedef struct ncclWindow_vidmem *ncclWindow_t;
typedef struct CUstream_st *cudaStream_t;

/* ncclUniqueId: 128 opaque bytes, identical on every rank of one
 * communicator (NCCL_UNIQUE_ID_BYTES, unchanged since NCCL 2.0). */
#define NCCL_UNIQUE_ID_BYTES 128
typedef struct { char internal[NCCL_UNIQUE_ID_BYTES]; } ncclUniqueId;

/* ncclResult_t.  Values 0-5 since NCCL 2.0; ncclRemoteError 6 since 2.13;
 * ncclInProgress 7 since 2.14; ncclTimeout 8 since 2.30.3 (absent from
 * 2.28's header, where ncclNumResults is 8).  Unknown values must be
 * printed as "unknown result N", never used as an array index. */
typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
} ncclResult_t;
#define NSP_NCCL_TIMEOUT 8 /* ncclTimeout, NCCL 2.30.3 */

/* ncclDataType_t (value / bytes per element).  bfloat16 since NCCL 2.10;
 * the two float8 types since 2.24.  Range-check with these literals, not
 * with ncclNumTypes, which moves between versions. */
typedef enum {
  ncclInt8 = 0,       /* 1 byte */
  ncclUint8 = 1,      /* 1 */
  ncclInt32 = 2,      /* 4 */
  ncclUint32 = 3,     /* 4 */
  ncclInt64 = 4,      /* 8 */
  ncclUint64 = 5,     /* 8 */
  ncclFloat16 = 6,    /* 2 */
  ncclFloat32 = 7,    /* 4 */
  ncclFloat64 = 8,    /* 8 */
  ncclBfloat16 = 9,   /* 2, NCCL 2.10 */
  ncclFloat8e4m3 = 10, /* 1, NCCL 2.24 */
  ncclFloat8e5m2 = 11, /* 1, NCCL 2.24 */
} ncclDataType_t;
#define NSP_NCCL_DTYPE_MAX 11

/* ncclRedOp_t.  avg since NCCL 2.10.  Values from 5 (ncclNumOps) up are
 * dynamic ops made by ncclRedOpCreatePreMulSum (NCCL 2.11).  The enum is
 * the size of an int (ncclMaxRedOp is 0x7fffffff). */
typedef enum {
  ncclSum = 0,
  ncclProd = 1,
  ncclMax = 2,
  ncclMin = 3,
  ncclAvg = 4,
  ncclNumOps = 5,
  ncclMaxRedOp = 0x7fffffff,
} ncclRedOp_t;

/* ncclScalarResidence_t (NCCL 2.11). */
typedef enum {
  ncclScalarDevice = 0,
  ncclScalarHostImmediate = 1,
} ncclScalarResidence_t;

#define NCCL_SPLIT_NOCOLOR (-1)
#define NCCL_CONFIG_UNDEF_INT INT32_MIN

/* ncclConfig_t as of NCCL 2.28 (ncclConfig_v22800).  The struct is
 * versioned by its leading `size` field: a field may be read only when
 * `size` covers it.  commName was added in NCCL 2.17 (PyTorch stores
 * "<pg desc>:<pg uid>" there); the offsets of every field up to
 * nvlinkCentricSched are checked against the real header by
 * tests/unit/test_abi.c. */
typedef struct ncclConfig_v22800 {
  size_t size;
  unsigned int magic;   /* 0xcafebeef */
  unsigned int version; /* NCCL_VERSION code of the header used */
  int blocking;
  int cgaClusterSize;
  int minCTAs;
  int maxCTAs;
  const char *netName;
  int splitShare;
  int trafficClass; /* 2.24 */
  const char *commName; /* 2.17 */
  int collnetEnable;
  int CTAPolicy;
  int shrinkShare;
  int nvlsCTAs;
  int nChannelsPerNetPeer;
  int nvlinkCentricSched;
} ncclConfig_t;

/* ncclSimInfo_t (NCCL 2.22). */
typedef struct ncclSimInfo_v22200 {
  size_t size;
  unsigned int magic;
  unsigned int version;
  float estimatedTime;
} ncclSimInfo_t;

#include "nsp_nccl_apis.h"

/* Entry-point kinds used in NSP_NCCL_APIS. */
enum nsp_api_kind {
  NSP_K_COLL,
  NSP_K_P2P,
  NSP_K_GROUP,
  NSP_K_INIT,
  NSP_K_END,
  NSP_K_REDOP,
  NSP_K_QUERY,
  NSP_K_OTHER,
};

/* nccl-tests' size S of a call (NSP_NCCL_APIS's op column): count x dtype
 * size, or that times nranks when count is per rank. */
enum nsp_size_rule { NSP_SIZE_COUNT, NSP_SIZE_TOTAL };
/* nccl-tests' bus bandwidth factor, n ranks: 1, (n-1)/n, 2(n-1)/n. */
enum nsp_busbw_rule { NSP_BUSBW_1, NSP_BUSBW_N1, NSP_BUSBW_2N1 };


/* API ids: NSP_API_AllReduce, ...; written in traces, so append only. */
#define NSP_API_ENUM_(name, kind, ret, params, args, since, op) NSP_API_##name,
enum nsp_api { NSP_NCCL_APIS(NSP_API_ENUM_) NSP_API_COUNT };
#undef NSP_API_ENUM_

/* Declares the prototype of every entry point, with `prefix` (nccl or
 * pnccl) before its name: NSP_NCCL_DECLARE(nccl) gives
 * `ncclResult_t ncclAllReduce(...);` and so on. */
#define NSP_NCCL_DECLARE_ONE_(prefix, name, ret, params) NSP_RET_##ret prefix##name params;
#define NSP_NCCL_DECLARE_nccl_(name, kind, ret, params, args, since, op) NSP_NCCL_DECLARE_ONE_(nccl, name, ret, params)
#define NSP_NCCL_DECLARE_pnccl_(name, kind, ret, params, args, since, op) NSP_NCCL_DECLARE_ONE_(pnccl, name, ret, params)
#define NSP_NCCL_DECLARE(prefix) NSP_NCCL_APIS(NSP_NCCL_DECLARE_##prefix##_)

#ifdef __cplusplus
}
#endif
#endif /* NSP_NCCL_H */
