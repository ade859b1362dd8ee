/* abi_cuda_real.c - the CUDA facts as the real cuda.h has them.  Compiled
 * only where /usr/local/cuda/include/cuda.h exists. */
#include <cuda.h>

#include "abi_cuda.h"

#define NSP_REAL(ours, real) {#real, (long long)(real)},
const struct nsp_cuda_fact nsp_cuda_real[] = {NSP_CUDA_FACTS(NSP_REAL){0, 0}};
const int nsp_cuda_real_version = CUDA_VERSION;
