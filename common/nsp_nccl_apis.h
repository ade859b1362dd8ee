/* nsp_nccl_apis.h - the table of NCCL's public entry points.
 *
 * Kept apart from nsp_nccl.h, which declares the types, so that
 * tests/abi can expand the table against the real nccl.h and check every
 * prototype.  Include nsp_nccl.h (or the real nccl.h) first. */
#ifndef NSP_NCCL_APIS_H
#define NSP_NCCL_APIS_H

/* Every public entry point of NCCL 2.28's nccl.h, in one place.
 *
 * NSP_NCCL_APIS(X) expands X(name, kind, ret, params, args, since) once per
 * entry point:
 *   name    the suffix after "nccl" (AllReduce -> ncclAllReduce);
 *   kind    NSP_K_COLL (collective), NSP_K_P2P (send/recv), NSP_K_GROUP,
 *           NSP_K_INIT (creates a communicator), NSP_K_END (finalize,
 *           destroy, abort, revoke), NSP_K_REDOP, NSP_K_QUERY (returns a
 *           value and changes nothing), NSP_K_OTHER;
 *   ret     R (ncclResult_t), S (const char *), V (void);
 *   params  the parenthesised parameter list;
 *   args    the parenthesised argument names;
 *   since   the NCCL version code that added it (e.g. 21800 for 2.18.0).
 * Adding an entry point is one line here (plus, for the shim, its record
 * builder if it is not a plain pass-through).  The order is the API id
 * written in traces: append only. */
#define NSP_NCCL_APIS(X) \
  X(GetVersion, NSP_K_QUERY, R, (int *version), (version), 20000) \
  X(GetUniqueId, NSP_K_OTHER, R, (ncclUniqueId *uniqueId), (uniqueId), 20000) \
  X(CommInitRank, NSP_K_INIT, R, (ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank), (comm, nranks, commId, rank), 20000) \
  X(CommInitRankConfig, NSP_K_INIT, R, (ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t *config), (comm, nranks, commId, rank, config), 21400) \
  X(CommInitAll, NSP_K_INIT, R, (ncclComm_t *comm, int ndev, const int *devlist), (comm, ndev, devlist), 20000) \
  X(CommInitRankScalable, NSP_K_INIT, R, (ncclComm_t *newcomm, int nranks, int myrank, int nId, ncclUniqueId *commIds, ncclConfig_t *config), (newcomm, nranks, myrank, nId, commIds, config), 22300) \
  X(CommSplit, NSP_K_INIT, R, (ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t *config), (comm, color, key, newcomm, config), 21800) \
  X(CommShrink, NSP_K_INIT, R, (ncclComm_t comm, int *excludeRanksList, int excludeRanksCount, ncclComm_t *newcomm, ncclConfig_t *config, int shrinkFlags), (comm, excludeRanksList, excludeRanksCount, newcomm, config, shrinkFlags), 22700) \
  X(CommFinalize, NSP_K_END, R, (ncclComm_t comm), (comm), 21400) \
  X(CommDestroy, NSP_K_END, R, (ncclComm_t comm), (comm), 20000) \
  X(CommAbort, NSP_K_END, R, (ncclComm_t comm), (comm), 20000) \
  X(CommRevoke, NSP_K_END, R, (ncclComm_t comm, int revokeFlags), (comm, revokeFlags), 22807) \
  X(GetErrorString, NSP_K_QUERY, S, (ncclResult_t result), (result), 20000) \
  X(GetLastError, NSP_K_QUERY, S, (ncclComm_t comm), (comm), 21300) \
  X(ResetDebugInit, NSP_K_OTHER, V, (void), (), 21900) \
  X(CommGetAsyncError, NSP_K_QUERY, R, (ncclComm_t comm, ncclResult_t *asyncError), (comm, asyncError), 20400) \
  X(CommCount, NSP_K_QUERY, R, (const ncclComm_t comm, int *count), (comm, count), 20000) \
  X(CommCuDevice, NSP_K_QUERY, R, (const ncclComm_t comm, int *device), (comm, device), 20000) \
  X(CommUserRank, NSP_K_QUERY, R, (const ncclComm_t comm, int *rank), (comm, rank), 20000) \
  X(CommRegister, NSP_K_OTHER, R, (const ncclComm_t comm, void *buff, size_t size, void **handle), (comm, buff, size, handle), 21900) \
  X(CommDeregister, NSP_K_OTHER, R, (const ncclComm_t comm, void *handle), (comm, handle), 21900) \
  X(CommWindowRegister, NSP_K_OTHER, R, (ncclComm_t comm, void *buff, size_t size, ncclWindow_t *win, int winFlags), (comm, buff, size, win, winFlags), 22700) \
  X(CommWindowDeregister, NSP_K_OTHER, R, (ncclComm_t comm, ncclWindow_t win), (comm, win), 22700) \
  X(MemAlloc, NSP_K_OTHER, R, (void **ptr, size_t size), (ptr, size), 21900) \
  X(MemFree, NSP_K_OTHER, R, (void *ptr), (ptr), 21900) \
  X(RedOpCreatePreMulSum, NSP_K_REDOP, R, (ncclRedOp_t *op, void *scalar, ncclDataType_t datatype, ncclScalarResidence_t residence, ncclComm_t comm), (op, scalar, datatype, residence, comm), 21100) \
  X(RedOpDestroy, NSP_K_REDOP, R, (ncclRedOp_t op, ncclComm_t comm), (op, comm), 21100) \
  X(Reduce, NSP_K_COLL, R, (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream), (sendbuff, recvbuff, count, datatype, op, root, comm, stream), 20000) \
  X(Bcast, NSP_K_COLL, R, (void *buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream), (buff, count, datatype, root, comm, stream), 20000) \
  X(Broadcast, NSP_K_COLL, R, (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream), (sendbuff, recvbuff, count, datatype, root, comm, stream), 20200) \
  X(AllReduce, NSP_K_COLL, R, (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream), (sendbuff, recvbuff, count, datatype, op, comm, stream), 20000) \
  X(ReduceScatter, NSP_K_COLL, R, (const void *sendbuff, void *recvbuff, size_t recvcount, ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream), (sendbuff, recvbuff, recvcount, datatype, op, comm, stream), 20000) \
  X(AllGather, NSP_K_COLL, R, (const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream), (sendbuff, recvbuff, sendcount, datatype, comm, stream), 20000) \
  X(AlltoAll, NSP_K_COLL, R, (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream), (sendbuff, recvbuff, count, datatype, comm, stream), 22803) \
  X(Gather, NSP_K_COLL, R, (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream), (sendbuff, recvbuff, count, datatype, root, comm, stream), 22803) \
  X(Scatter, NSP_K_COLL, R, (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream), (sendbuff, recvbuff, count, datatype, root, comm, stream), 22803) \
  X(Send, NSP_K_P2P, R, (const void *sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm, cudaStream_t stream), (sendbuff, count, datatype, peer, comm, stream), 20700) \
  X(Recv, NSP_K_P2P, R, (void *recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm, cudaStream_t stream), (recvbuff, count, datatype, peer, comm, stream), 20700) \
  X(GroupStart, NSP_K_GROUP, R, (void), (), 20000) \
  X(GroupEnd, NSP_K_GROUP, R, (void), (), 20000) \
  X(GroupSimulateEnd, NSP_K_GROUP, R, (ncclSimInfo_t *simInfo), (simInfo), 22200)

/* Return type of each `ret` letter in NSP_NCCL_APIS. */
#define NSP_RET_R ncclResult_t
#define NSP_RET_S const char *
#define NSP_RET_V void

#endif /* NSP_NCCL_APIS_H */
