/* abi_cuda.h - the CUDA driver ABI facts the shim relies on
 * (shim/nsp_cuda.h), each as (our name, cuda.h's name): expanded against
 * our header in abi_cuda_ours.c and against the real cuda.h in
 * abi_cuda_real.c (they cannot share a file: the two declare CUresult
 * differently). */
#define NSP_CUDA_FACTS(FACT)                                                          \
  FACT(NSP_CUDA_SUCCESS, CUDA_SUCCESS) FACT(NSP_CUDA_ERROR_NOT_READY, CUDA_ERROR_NOT_READY) \
  FACT(NSP_CU_EVENT_DISABLE_TIMING, CU_EVENT_DISABLE_TIMING)                         \
  FACT(NSP_CU_STREAM_NON_BLOCKING, CU_STREAM_NON_BLOCKING)                           \
  FACT(NSP_CU_STREAM_CAPTURE_STATUS_NONE, CU_STREAM_CAPTURE_STATUS_NONE)             \
  FACT(NSP_CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)

struct nsp_cuda_fact {
  const char *name;
  long long value;
};
