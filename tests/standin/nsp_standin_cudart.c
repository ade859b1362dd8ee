/* nsp_standin_cudart.c - a stand-in for the CUDA runtime (libcudart.so.12),
 * as far as ncclspy looks at it: the shim reads the runtime version of a
 * libcudart the program already loaded (cudaRuntimeGetVersion), and the
 * analyzer compares it across ranks (env-cuda-runtime).  Nothing else of
 * the runtime is here.  tests/cases/nsp_cases loads it in stream mode, as
 * a GPU program (torch) has its runtime loaded before its first NCCL call.
 *
 * Environment
 * -----------
 * NSP_STANDIN_RUNTIME_VERSION  what cudaRuntimeGetVersion reports (default
 *                              12080, CUDA 12.8); read at each call */
#include <limits.h>
#include <stdlib.h>

#define NSP_CUDART_API __attribute__((visibility("default")))
#define NSP_CUDART_VERSION 12080

/* cudaError_t: cudaSuccess 0, cudaErrorInvalidValue 1. */
NSP_CUDART_API int cudaRuntimeGetVersion(int *runtimeVersion);

NSP_CUDART_API int cudaRuntimeGetVersion(int *runtimeVersion)
{
  const char *s = getenv("NSP_STANDIN_RUNTIME_VERSION");
  char *end;
  long v;
  if (!runtimeVersion)
    return 1;
  v = s && *s ? strtol(s, &end, 10) : NSP_CUDART_VERSION;
  if (s && *s && (*end || v < 0 || v > INT_MAX))
    v = NSP_CUDART_VERSION;
  *runtimeVersion = (int)v;
  return 0;
}
