/* other_preload.c - another preloaded library that wraps ncclAllReduce, as
 * a profiler would: it counts the calls and forwards them with
 * dlsym(RTLD_NEXT); it wraps getppid(2) the same way (a function no
 * sanitizer intercepts, so that the next definition is libc's in every
 * build).  Used by test_host's
 * "preload" test and test_dlsym's "preload" test next to the shim, which
 * also asks it what dlsym(RTLD_NEXT) and dlsym(RTLD_DEFAULT) give from
 * here (nsp_other_lookup). */
#include <dlfcn.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

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

static _Atomic long nsp_other_getppid_n;

__attribute__((visibility("default"))) long nsp_other_getppid_count(void);
__attribute__((visibility("default"))) long nsp_other_getppid_count(void) {
  return atomic_load(&nsp_other_getppid_n);
}

__attribute__((visibility("default"))) pid_t getppid(void) {
  void *sym = dlsym(RTLD_NEXT, "getppid");
  pid_t (*next)(void);
  memcpy(&next, &sym, sizeof next);
  if (!next) return -1;
  atomic_fetch_add(&nsp_other_getppid_n, 1);
  return next();
}

/* Not a tail call: the lookup must be made from this library. */
static void *volatile nsp_other_last;

/* dlsym(RTLD_NEXT, name) (next != 0) or dlsym(RTLD_DEFAULT, name), made
 * from this library. */
__attribute__((visibility("default"))) void *nsp_other_lookup(int next, const char *name);
__attribute__((visibility("default"))) void *nsp_other_lookup(int next, const char *name) {
  nsp_other_last = dlsym(next ? RTLD_NEXT : RTLD_DEFAULT, name);
  return nsp_other_last;
}
