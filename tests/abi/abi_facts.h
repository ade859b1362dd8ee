/* abi_facts.h - the NCCL ABI facts ncclspy relies on, as a list that both
 * the real nccl.h and our common/nsp_nccl.h are expanded against.
 * FACT(expr) yields an integer constant from whichever header is in scope. */
#define NSP_ABI_FACTS(FACT) \
  FACT(ncclSuccess) FACT(ncclUnhandledCudaError) FACT(ncclSystemError) FACT(ncclInternalError) \
  FACT(ncclInvalidArgument) FACT(ncclInvalidUsage) FACT(ncclRemoteError) FACT(ncclInProgress) \
  FACT(ncclInt8) FACT(ncclUint8) FACT(ncclInt32) FACT(ncclUint32) FACT(ncclInt64) \
  FACT(ncclUint64) FACT(ncclFloat16) FACT(ncclFloat32) FACT(ncclFloat64) FACT(ncclBfloat16) \
  FACT(ncclFloat8e4m3) FACT(ncclFloat8e5m2) \
  FACT(ncclSum) FACT(ncclProd) FACT(ncclMax) FACT(ncclMin) FACT(ncclAvg) FACT(ncclNumOps) \
  FACT(ncclMaxRedOp) FACT(sizeof(ncclRedOp_t)) FACT(sizeof(ncclDataType_t)) FACT(sizeof(ncclResult_t)) \
  FACT(ncclScalarDevice) FACT(ncclScalarHostImmediate) \
  FACT(NCCL_UNIQUE_ID_BYTES) FACT(sizeof(ncclUniqueId)) FACT(NCCL_SPLIT_NOCOLOR) \
  FACT(NCCL_CONFIG_UNDEF_INT) \
  FACT(sizeof(ncclConfig_t)) FACT(offsetof(ncclConfig_t, size)) FACT(offsetof(ncclConfig_t, magic)) \
  FACT(offsetof(ncclConfig_t, version)) FACT(offsetof(ncclConfig_t, blocking)) \
  FACT(offsetof(ncclConfig_t, cgaClusterSize)) FACT(offsetof(ncclConfig_t, minCTAs)) \
  FACT(offsetof(ncclConfig_t, maxCTAs)) FACT(offsetof(ncclConfig_t, netName)) \
  FACT(offsetof(ncclConfig_t, splitShare)) FACT(offsetof(ncclConfig_t, trafficClass)) \
  FACT(offsetof(ncclConfig_t, commName)) FACT(offsetof(ncclConfig_t, collnetEnable)) \
  FACT(offsetof(ncclConfig_t, CTAPolicy)) FACT(offsetof(ncclConfig_t, shrinkShare)) \
  FACT(offsetof(ncclConfig_t, nvlsCTAs)) FACT(offsetof(ncclConfig_t, nChannelsPerNetPeer)) \
  FACT(offsetof(ncclConfig_t, nvlinkCentricSched)) \
  FACT(sizeof(ncclSimInfo_t)) FACT(offsetof(ncclSimInfo_t, estimatedTime))

struct nsp_abi_fact {
  const char *expr;
  long long value;
};
#define NSP_ABI_FACT_ENTRY(expr) {#expr, (long long)(expr)},
