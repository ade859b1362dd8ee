/* shim_work.h - the NCCL work both resolution tests do, and its check.
 *
 * nsp_shim_work() makes calls whose records the shim must write exactly
 * once each: NCCL's own nested calls (Bcast calls Broadcast, InitAll calls
 * GetUniqueId inside the stand-in, as in real NCCL) must not show. */
#ifndef NSP_SHIM_WORK_H
#define NSP_SHIM_WORK_H

#include <stdio.h>

#include "nsp_nccl.h"
NSP_NCCL_DECLARE(nccl)

/* Returns 0 when every call succeeded; fills *calls with the number of
 * NCCL calls that returned. */
__attribute__((visibility("default"), used)) int nsp_shim_work(int *calls);
__attribute__((visibility("default"), used)) int nsp_shim_work(int *calls) {
  int n = 0, bad = 0;
  ncclUniqueId id;
  ncclComm_t comm = NULL, all[2] = {NULL, NULL};
  float x[4] = {1, 2, 3, 4}, y[4];
  int devs[2] = {0, 1};
  bad |= ncclGetUniqueId(&id) != ncclSuccess, n++;
  bad |= ncclCommInitRank(&comm, 1, id, 0) != ncclSuccess, n++;
  bad |= ncclAllReduce(x, y, 4, ncclFloat32, ncclSum, comm, NULL) != ncclSuccess, n++;
  bad |= ncclBcast(x, 4, ncclFloat32, 0, comm, NULL) != ncclSuccess, n++;
  bad |= ncclCommInitAll(all, 2, devs) != ncclSuccess, n++;
  bad |= ncclCommDestroy(comm) != ncclSuccess, n++;
  for (int i = 0; i < 2; i++)
    if (all[i]) bad |= ncclCommDestroy(all[i]) != ncclSuccess, n++;
  *calls = n;
  if (bad) fprintf(stderr, "nsp_shim_work: a call failed\n");
  return bad;
}

#endif
