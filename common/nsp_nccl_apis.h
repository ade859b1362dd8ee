/* nsp_nccl_apis.h - the table of NCCL's public entry points.
 *
 * Kept apart from nsp_nccl.h, which declares the types, so that
 * tests/abi can expand the table against the real nccl.h and check every
 * prototype.  Include nsp_nccl.h (or the real nccl.h) first. */
#ifndef NSP_NCCL_APIS_H
#define NSP_NCCL_APIS_H

/* Every public entry point of NCCL 2.28's nccl.h, in one place.
 *
 * NSP_NCCL_APIS(X) expands X(name, kind, ret, params, args, since, op) once
 * per entry point:
 *   name    the suffix after "nccl" (AllReduce -> ncclAllReduce);
 *   kind    NSP_K_COLL (collective), NSP_K_P2P (send/recv), NSP_K_GROUP,
 *           NSP_K_INIT (creates a communicator), NSP_K_END (finalize,
 *           destroy, abort, revoke), NSP_K_REDOP, NSP_K_QUERY (returns a
 *           value and changes nothing), NSP_K_OTHER;
 *   ret     R (ncclResult_t), S (const char *), V (void);
 *   params  the parenthesised parameter list;
 *   args    the parenthesised argument names;
 *   since   the NCCL version code that added it (e.g. 21800 for 2.18.0);
 *   op      what it does, in the field's words, and for a collective or a
 *           send/recv how its arguments fill a CALL record and how
 *           nccl-tests count its bytes:
 *           NSP_COLL(words, send, recv, count, redop, peer, size, busbw)
 *             words  "all-reduce", "send", ...;
 *             send, recv  its buffer arguments (NULL: none; Bcast's one
 *                    buffer is both);
 *             count  its element count argument (per rank for all-gather's
 *                    sendcount, reduce-scatter's recvcount, all-to-all,
 *                    gather and scatter);
 *             redop  NSP_REDOP(argument) or NSP_NO_REDOP;
 *             peer   NSP_ROOT(argument), NSP_PEER(argument) or NSP_NO_PEER;
 *             size   nccl-tests' size S: NSP_SIZE_COUNT, count x dtype size,
 *                    or NSP_SIZE_TOTAL, that times nranks (the whole array);
 *             busbw  nccl-tests' bus bandwidth factor: NSP_BUSBW_1,
 *                    NSP_BUSBW_N1 ((n-1)/n) or NSP_BUSBW_2N1 (2(n-1)/n)
 *           (nccl-tests' doc/PERFORMANCE.md and the *GetBw functions of its
 *           src/all_gather.cu, reduce_scatter.cu, alltoall.cu, gather.cu,
 *           scatter.cu); NSP_COLL_AS(name, ...) for one that the other
 *           ranks see as entry point `name` (Bcast is Broadcast);
 *           NSP_OP(words) for every other entry point (NULL: its name).
 * Adding an entry point is one line here; for the shim, a collective or a
 * send/recv needs nothing more (its wrapper is made from the line), any
 * other a wrapper in shim/nsp_wrappers.c.  The order is the API id
 * written in traces: append only. */
#define NSP_NCCL_APIS(X) \
  X(GetVersion, NSP_K_QUERY, R, (int *version), (version), 20000, NSP_OP(NULL)) \
  X(GetUniqueId, NSP_K_OTHER, R, (ncclUniqueId *uniqueId), (uniqueId), 20000, NSP_OP(NULL)) \
  X(CommInitRank, NSP_K_INIT, R, (ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank), (comm, nranks, commId, rank), 20000, NSP_OP(NULL)) \
  X(CommInitRankConfig, NSP_K_INIT, R, (ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t *config), (comm, nranks, commId, rank, config), 21400, NSP_OP(NULL)) \
  X(CommInitAll, NSP_K_INIT, R, (ncclComm_t *comm, int ndev, const int *devlist), (comm, ndev, devlist), 20000, NSP_OP(NULL)) \
  X(CommInitRankScalable, NSP_K_INIT, R, (ncclComm_t *newcomm, int nranks, int myrank, int nId, ncclUniqueId *commIds, ncclConfig_t *config), (newcomm, nranks, myrank, nId, commIds, config), 22300, NSP_OP(NULL)) \
  X(CommSplit, NSP_K_INIT, R, (ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t *config), (comm, color, key, newcomm, config), 21800, NSP_OP(NULL)) \
  X(CommShrink, NSP_K_INIT, R, (ncclComm_t comm, int *excludeRanksList, int excludeRanksCount, ncclComm_t *newcomm, ncclConfig_t *config, int shrinkFlags), (comm, excludeRanksList, excludeRanksCount, newcomm, config, shrinkFlags), 22700, NSP_OP(NULL)) \
  X(CommFinalize, NSP_K_END, R, (ncclComm_t comm), (comm), 21400, NSP_OP(NULL)) \
  X(CommDestroy, NSP_K_END, R, (ncclComm_t comm), (comm), 20000, NSP_OP(NULL)) \
  X(CommAbort, NSP_K_END, R, (ncclComm_t comm), (comm), 20000, NSP_OP(NULL)) \
  X(CommRevoke, NSP_K_END, R, (ncclComm_t comm, int revokeFlags), (comm, revokeFlags), 22807, NSP_OP(NULL)) \
  X(GetErrorString, NSP_K_QUERY, S, (ncclResult_t result), (result), 20000, NSP_OP(NULL)) \
  X(GetLastError, NSP_K_QUERY, S, (ncclComm_t comm), (comm), 21300, NSP_OP(NULL)) \
  X(ResetDebugInit, NSP_K_OTHER, V, (void), (), 21900, NSP_OP(NULL)) \
  X(CommGetAsyncError, NSP_K_QUERY, R, (ncclComm_t comm, ncclResult_t *asyncError), (comm, asyncError), 20400, NSP_OP(NULL)) \
  X(CommCount, NSP_K_QUERY, R, (const ncclComm_t comm, int *count), (comm, count), 20000, NSP_OP(NULL)) \
  X(CommCuDevice, NSP_K_QUERY, R, (const ncclComm_t comm, int *device), (comm, device), 20000, NSP_OP(NULL)) \
  X(CommUserRank, NSP_K_QUERY, R, (const ncclComm_t comm, int *rank), (comm, rank), 20000, NSP_OP(NULL)) \
  X(CommRegister, NSP_K_OTHER, R, (const ncclComm_t comm, void *buff, size_t size, void **handle), (comm, buff, size, handle), 21900, NSP_OP(NULL)) \
  X(CommDeregister, NSP_K_OTHER, R, (const ncclComm_t comm, void *handle), (comm, handle), 21900, NSP_OP(NULL)) \
  X(CommWindowRegister, NSP_K_OTHER, R, (ncclComm_t comm, void *buff, size_t size, ncclWindow_t *win, int winFlags), (comm, buff, size, win, winFlags), 22700, NSP_OP(NULL)) \
  X(CommWindowDeregister, NSP_K_OTHER, R, (ncclComm_t comm, ncclWindow_t win), (comm, win), 22700, NSP_OP(NULL)) \
  X(MemAlloc, NSP_K_OTHER, R, (void **ptr, size_t size), (ptr, size), 21900, NSP_OP(NULL)) \
  X(MemFree, NSP_K_OTHER, R, (void *ptr), (ptr), 21900, NSP_OP(NULL)) \
  X(RedOpCreatePreMulSum, NSP_K_REDOP, R, (ncclRedOp_t *op, void *scalar, ncclDataType_t datatype, ncclScalarResidence_t residence, ncclComm_t comm), (op, scalar, datatype, residence, comm), 21100, NSP_OP(NULL)) \
  X(RedOpDestroy, NSP_K_REDOP, R, (ncclRedOp_t op, ncclComm_t comm), (op, comm), 21100, NSP_OP(NULL)) \
  X(Reduce, NSP_K_COLL, R, (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream), (sendbuff, recvbuff, count, datatype, op, root, comm, stream), 20000, \
    NSP_COLL("reduce", sendbuff, recvbuff, count, NSP_REDOP(op), NSP_ROOT(root), NSP_SIZE_COUNT, NSP_BUSBW_1)) \
  X(Bcast, NSP_K_COLL, R, (void *buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream), (buff, count, datatype, root, comm, stream), 20000, \
    NSP_COLL_AS(Broadcast, "broadcast", buff, buff, count, NSP_NO_REDOP, NSP_ROOT(root), NSP_SIZE_COUNT, NSP_BUSBW_1)) \
  X(Broadcast, NSP_K_COLL, R, (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream), (sendbuff, recvbuff, count, datatype, root, comm, stream), 20200, \
    NSP_COLL("broadcast", sendbuff, recvbuff, count, NSP_NO_REDOP, NSP_ROOT(root), NSP_SIZE_COUNT, NSP_BUSBW_1)) \
  X(AllReduce, NSP_K_COLL, R, (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream), (sendbuff, recvbuff, count, datatype, op, comm, stream), 20000, \
    NSP_COLL("all-reduce", sendbuff, recvbuff, count, NSP_REDOP(op), NSP_NO_PEER, NSP_SIZE_COUNT, NSP_BUSBW_2N1)) \
  X(ReduceScatter, NSP_K_COLL, R, (const void *sendbuff, void *recvbuff, size_t recvcount, ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream), (sendbuff, recvbuff, recvcount, datatype, op, comm, stream), 20000, \
    NSP_COLL("reduce-scatter", sendbuff, recvbuff, recvcount, NSP_REDOP(op), NSP_NO_PEER, NSP_SIZE_TOTAL, NSP_BUSBW_N1)) \
  X(AllGather, NSP_K_COLL, R, (const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream), (sendbuff, recvbuff, sendcount, datatype, comm, stream), 20000, \
    NSP_COLL("all-gather", sendbuff, recvbuff, sendcount, NSP_NO_REDOP, NSP_NO_PEER, NSP_SIZE_TOTAL, NSP_BUSBW_N1)) \
  X(AlltoAll, NSP_K_COLL, R, (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream), (sendbuff, recvbuff, count, datatype, comm, stream), 22803, \
    NSP_COLL("all-to-all", sendbuff, recvbuff, count, NSP_NO_REDOP, NSP_NO_PEER, NSP_SIZE_TOTAL, NSP_BUSBW_N1)) \
  X(Gather, NSP_K_COLL, R, (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream), (sendbuff, recvbuff, count, datatype, root, comm, stream), 22803, \
    NSP_COLL("gather", sendbuff, recvbuff, count, NSP_NO_REDOP, NSP_ROOT(root), NSP_SIZE_TOTAL, NSP_BUSBW_N1)) \
  X(Scatter, NSP_K_COLL, R, (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream), (sendbuff, recvbuff, count, datatype, root, comm, stream), 22803, \
    NSP_COLL("scatter", sendbuff, recvbuff, count, NSP_NO_REDOP, NSP_ROOT(root), NSP_SIZE_TOTAL, NSP_BUSBW_N1)) \
  X(Send, NSP_K_P2P, R, (const void *sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm, cudaStream_t stream), (sendbuff, count, datatype, peer, comm, stream), 20700, \
    NSP_COLL("send", sendbuff, NULL, count, NSP_NO_REDOP, NSP_PEER(peer), NSP_SIZE_COUNT, NSP_BUSBW_1)) \
  X(Recv, NSP_K_P2P, R, (void *recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm, cudaStream_t stream), (recvbuff, count, datatype, peer, comm, stream), 20700, \
    NSP_COLL("recv", NULL, recvbuff, count, NSP_NO_REDOP, NSP_PEER(peer), NSP_SIZE_COUNT, NSP_BUSBW_1)) \
  X(GroupStart, NSP_K_GROUP, R, (void), (), 20000, NSP_OP("group-start")) \
  X(GroupEnd, NSP_K_GROUP, R, (void), (), 20000, NSP_OP("group-end")) \
  X(GroupSimulateEnd, NSP_K_GROUP, R, (ncclSimInfo_t *simInfo), (simInfo), 22200, NSP_OP("group-simulate-end"))

/* The op column as one list for the expansions that read it:
 * NSP_APPLY(M, op) calls M(as, words, send, recv, count, has_redop, redop,
 * has_root, peer, size, busbw), with `as` the API id of NSP_COLL_AS's
 * entry point, -1 for the others. */
#define NSP_APPLY(m, op) m op
#define NSP_COLL(...) (-1, __VA_ARGS__)
#define NSP_COLL_AS(name, ...) (NSP_API_##name, __VA_ARGS__)
#define NSP_OP(words) (-1, words, NULL, NULL, 0, NSP_NO_REDOP, NSP_NO_PEER, NSP_SIZE_COUNT, NSP_BUSBW_1)
#define NSP_REDOP(arg) 1, arg
#define NSP_NO_REDOP 0, -1
#define NSP_ROOT(arg) 1, arg
#define NSP_PEER(arg) 0, arg
#define NSP_NO_PEER 0, -1

/* Return type of each `ret` letter in NSP_NCCL_APIS. */
#define NSP_RET_R ncclResult_t
#define NSP_RET_S const char *
#define NSP_RET_V void

#endif /* NSP_NCCL_APIS_H */
