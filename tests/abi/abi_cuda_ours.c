/* abi_cuda_ours.c - the CUDA facts as shim/nsp_cuda.h declares them. */
#include "abi_cuda.h"
#include "nsp_cuda.h"

#define NSP_OURS(ours, real) {#ours, (long long)(ours)},
const struct nsp_cuda_fact nsp_cuda_ours[] = {NSP_CUDA_FACTS(NSP_OURS){0, 0}};
