/* test_standin_interpose.c - the stand-in's own nested calls reach the
 * public, interposable symbols, as NCCL's do: this program defines
 * ncclBroadcast and ncclGetUniqueId itself (exported with
 * -rdynamic, so they win over the library's, as a preloaded shim's
 * would), and counts the calls the library makes to them.  Output is TAP. */
#include <stdio.h>

#include "nsp_nccl.h"

NSP_NCCL_DECLARE(nccl)
NSP_NCCL_DECLARE(pnccl)

static int nsp_test_bcasts, nsp_test_ids;

ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
                           ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream)
{
  nsp_test_bcasts++;
  return pncclBroadcast(sendbuff, recvbuff, count, datatype, root, comm, stream);
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *uniqueId)
{
  nsp_test_ids++;
  return pncclGetUniqueId(uniqueId);
}

int main(void)
{
  ncclComm_t comm = NULL;
  float buf[4] = {1, 2, 3, 4};
  ncclResult_t r;

  printf("1..3\n");
  r = ncclCommInitAll(&comm, 1, NULL);
  printf("%s 1 - ncclCommInitAll calls the public ncclGetUniqueId (calls %d, result %d)\n",
         r == ncclSuccess && nsp_test_ids == 1 ? "ok" : "not ok", nsp_test_ids, (int)r);
  r = ncclBcast(buf, 4, ncclFloat32, 0, comm, NULL);
  printf("%s 2 - ncclBcast calls the public ncclBroadcast (calls %d, result %d)\n",
         r == ncclSuccess && nsp_test_bcasts == 1 ? "ok" : "not ok", nsp_test_bcasts, (int)r);
  r = pncclBcast(buf, 4, ncclFloat32, 0, comm, NULL);
  printf("%s 3 - pncclBcast does too (calls %d, result %d)\n",
         r == ncclSuccess && nsp_test_bcasts == 2 ? "ok" : "not ok", nsp_test_bcasts, (int)r);
  ncclCommDestroy(comm);
  return 0;
}
