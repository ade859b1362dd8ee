/* vnccl.c - a tiny NCCL whose entry points have a symbol version
 * (vnccl.map), so that dlvsym can find them: ncclGetVersion, and an
 * ncclAllReduce that only counts its calls (nsp_vnccl_calls). */
#include <stdatomic.h>

#include "nsp_nccl.h"

#define NSP_VNCCL_API __attribute__((visibility("default")))

static _Atomic long nsp_vnccl_count;

NSP_VNCCL_API long nsp_vnccl_calls(void);
NSP_VNCCL_API long nsp_vnccl_calls(void) { return atomic_load(&nsp_vnccl_count); }

NSP_VNCCL_API ncclResult_t ncclGetVersion(int *version);
NSP_VNCCL_API ncclResult_t ncclGetVersion(int *version) {
  *version = 22801;
  return ncclSuccess;
}

NSP_VNCCL_API ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
                                         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                         cudaStream_t stream);
NSP_VNCCL_API ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
                                         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                         cudaStream_t stream) {
  atomic_fetch_add(&nsp_vnccl_count, 1);
  return ncclSuccess;
}
