/* nsp_standin_reduce.h - element-wise arithmetic of the stand-in NCCL.
 *
 * Internal to libnccl.so.2 (hidden symbols).  Buffers must be aligned to
 * their element size, as NCCL requires of device buffers. */
#ifndef NSP_STANDIN_REDUCE_H
#define NSP_STANDIN_REDUCE_H

#include <stddef.h>

#include "nsp_nccl.h"

#define NSP_STANDIN_HIDDEN __attribute__((visibility("hidden")))

/* Bytes per element of `dtype`, 0 for a value no NCCL version defines. */
NSP_STANDIN_HIDDEN size_t nsp_standin_dtype_size(ncclDataType_t dtype);

/* dst[i] = dst[i] OP src[i] for `count` elements.  `op` is ncclSum,
 * ncclProd, ncclMax or ncclMin; ncclAvg and PreMulSum ops reduce as
 * ncclSum (the caller divides or pre-multiplies). */
NSP_STANDIN_HIDDEN void nsp_standin_reduce(void *dst, const void *src, size_t count,
                                           ncclDataType_t dtype, ncclRedOp_t op);

/* buf[i] /= nranks (integer division for integer types), for ncclAvg. */
NSP_STANDIN_HIDDEN void nsp_standin_divide(void *buf, size_t count, ncclDataType_t dtype,
                                           int nranks);

/* dst[i] = src[i] * *scalar, `scalar` being one element of `dtype`; dst
 * may equal src.  Used for ncclRedOpCreatePreMulSum ops. */
NSP_STANDIN_HIDDEN void nsp_standin_scale(void *dst, const void *src, size_t count,
                                          ncclDataType_t dtype, const void *scalar);

#endif /* NSP_STANDIN_REDUCE_H */
