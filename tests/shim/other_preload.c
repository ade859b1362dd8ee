/* other_preload.c - another preloaded library that wraps ncclAllReduce, as
 * a profiler would: it counts the calls and forwards them with
 * dlsym(RTLD_NEXT).  Used by test_host's "preload" test next to the shim. */
#include <dlfcn.h>
#include <stdatomic.h>
#include <string.h>

#include "nsp_nccl.h"

typedef ncclResult_t (*nsp_other_fn)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t,
                                     ncclComm_t, cudaStream_t);

static _Atomic long nsp_other_count;

NSP_NCCL_DECLARE(nccl)

__attribute__((visibility("default"))) long nsp_other_allreduce_count(void);
__attribute__((visibility("default"))) long nsp_other_allreduce_count(void) {
  return atomic_load(&nsp_other_count);
}

__attribute__((visibility("default"))) ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff,
                                                                  size_t count, ncclDataType_t datatype,
                                                                  ncclRedOp_t op, ncclComm_t comm,
                                                                  cudaStream_t stream) {
  void *sym = dlsym(RTLD_NEXT, "ncclAllReduce");
  nsp_other_fn real;
  memcpy(&real, &sym, sizeof real);
  if (!real) return ncclInvalidUsage;
  atomic_fetch_add(&nsp_other_count, 1);
  return real(sendbuff, recvbuff, count, datatype, op, comm, stream);
}
