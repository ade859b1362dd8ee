/* nsp_standin_reduce.c - element-wise arithmetic of the stand-in NCCL.
 *
 * Signed integers are added and multiplied as their unsigned twins so that
 * overflow wraps, as it does on the GPU, instead of being undefined
 * behaviour in C.  Narrow floats go through float and are rounded back
 * after every step, which is what a reduction that stores its partial
 * results in the narrow type (NCCL's ring) does. */
#include "nsp_standin_reduce.h"

#include <stdint.h>

#include "nsp_standin_fp.h"

size_t nsp_standin_dtype_size(ncclDataType_t dtype)
{
  switch (dtype) {
  case ncclInt8:
  case ncclUint8:
  case ncclFloat8e4m3:
  case ncclFloat8e5m2:
    return 1;
  case ncclFloat16:
  case ncclBfloat16:
    return 2;
  case ncclInt32:
  case ncclUint32:
  case ncclFloat32:
    return 4;
  case ncclInt64:
  case ncclUint64:
  case ncclFloat64:
    return 8;
  }
  return 0;
}

#define NSP_STANDIN_MAX_(a, b) ((a) > (b) ? (a) : (b))
#define NSP_STANDIN_MIN_(a, b) ((a) < (b) ? (a) : (b))

/* T: the element type; U: the type arithmetic is done in. */
#define NSP_STANDIN_NATIVE_REDUCE_(fname, T, U)                                    \
  static void fname(T *d, const T *s, size_t n, ncclRedOp_t op)                    \
  {                                                                                \
    size_t i;                                                                      \
    switch (op) {                                                                  \
    case ncclProd:                                                                 \
      for (i = 0; i < n; i++)                                                      \
        d[i] = (T)((U)d[i] * (U)s[i]);                                             \
      break;                                                                       \
    case ncclMax:                                                                  \
      for (i = 0; i < n; i++)                                                      \
        d[i] = NSP_STANDIN_MAX_(d[i], s[i]);                                       \
      break;                                                                       \
    case ncclMin:                                                                  \
      for (i = 0; i < n; i++)                                                      \
        d[i] = NSP_STANDIN_MIN_(d[i], s[i]);                                       \
      break;                                                                       \
    default:                                                                       \
      for (i = 0; i < n; i++)                                                      \
        d[i] = (T)((U)d[i] + (U)s[i]);                                             \
      break;                                                                       \
    }                                                                              \
  }

NSP_STANDIN_NATIVE_REDUCE_(nsp_standin_reduce_i8, int8_t, uint32_t)
NSP_STANDIN_NATIVE_REDUCE_(nsp_standin_reduce_u8, uint8_t, uint32_t)
NSP_STANDIN_NATIVE_REDUCE_(nsp_standin_reduce_i32, int32_t, uint32_t)
NSP_STANDIN_NATIVE_REDUCE_(nsp_standin_reduce_u32, uint32_t, uint32_t)
NSP_STANDIN_NATIVE_REDUCE_(nsp_standin_reduce_i64, int64_t, uint64_t)
NSP_STANDIN_NATIVE_REDUCE_(nsp_standin_reduce_u64, uint64_t, uint64_t)
NSP_STANDIN_NATIVE_REDUCE_(nsp_standin_reduce_f32, float, float)
NSP_STANDIN_NATIVE_REDUCE_(nsp_standin_reduce_f64, double, double)

static float nsp_standin_load_narrow(const void *p, size_t i, ncclDataType_t dtype)
{
  switch (dtype) {
  case ncclFloat16:
    return nsp_standin_f16_to_f32(((const uint16_t *)p)[i]);
  case ncclBfloat16:
    return nsp_standin_bf16_to_f32(((const uint16_t *)p)[i]);
  case ncclFloat8e4m3:
    return nsp_standin_fp8_to_f32(((const uint8_t *)p)[i], 1);
  default:
    return nsp_standin_fp8_to_f32(((const uint8_t *)p)[i], 0);
  }
}

static void nsp_standin_store_narrow(void *p, size_t i, ncclDataType_t dtype, float v)
{
  switch (dtype) {
  case ncclFloat16:
    ((uint16_t *)p)[i] = nsp_standin_f32_to_f16(v);
    break;
  case ncclBfloat16:
    ((uint16_t *)p)[i] = nsp_standin_f32_to_bf16(v);
    break;
  case ncclFloat8e4m3:
    ((uint8_t *)p)[i] = nsp_standin_f32_to_fp8(v, 1);
    break;
  default:
    ((uint8_t *)p)[i] = nsp_standin_f32_to_fp8(v, 0);
    break;
  }
}

static float nsp_standin_apply_f(float a, float b, ncclRedOp_t op)
{
  switch (op) {
  case ncclProd:
    return a * b;
  case ncclMax:
    return NSP_STANDIN_MAX_(a, b);
  case ncclMin:
    return NSP_STANDIN_MIN_(a, b);
  default:
    return a + b;
  }
}

static void nsp_standin_reduce_narrow(void *d, const void *s, size_t n,
                                      ncclDataType_t dtype, ncclRedOp_t op)
{
  size_t i;
  for (i = 0; i < n; i++) {
    float a = nsp_standin_load_narrow(d, i, dtype);
    float b = nsp_standin_load_narrow(s, i, dtype);
    nsp_standin_store_narrow(d, i, dtype, nsp_standin_apply_f(a, b, op));
  }
}

void nsp_standin_reduce(void *dst, const void *src, size_t count, ncclDataType_t dtype,
                        ncclRedOp_t op)
{
  switch (dtype) {
  case ncclInt8:
    nsp_standin_reduce_i8(dst, src, count, op);
    break;
  case ncclUint8:
    nsp_standin_reduce_u8(dst, src, count, op);
    break;
  case ncclInt32:
    nsp_standin_reduce_i32(dst, src, count, op);
    break;
  case ncclUint32:
    nsp_standin_reduce_u32(dst, src, count, op);
    break;
  case ncclInt64:
    nsp_standin_reduce_i64(dst, src, count, op);
    break;
  case ncclUint64:
    nsp_standin_reduce_u64(dst, src, count, op);
    break;
  case ncclFloat32:
    nsp_standin_reduce_f32(dst, src, count, op);
    break;
  case ncclFloat64:
    nsp_standin_reduce_f64(dst, src, count, op);
    break;
  case ncclFloat16:
  case ncclBfloat16:
  case ncclFloat8e4m3:
  case ncclFloat8e5m2:
    nsp_standin_reduce_narrow(dst, src, count, dtype, op);
    break;
  }
}

#define NSP_STANDIN_DIVIDE_(T)                                                     \
  do {                                                                             \
    T *b_ = buf;                                                                   \
    for (i = 0; i < count; i++)                                                    \
      b_[i] = (T)(b_[i] / (T)nranks);                                              \
  } while (0)

void nsp_standin_divide(void *buf, size_t count, ncclDataType_t dtype, int nranks)
{
  size_t i;
  switch (dtype) {
  case ncclInt8:
    NSP_STANDIN_DIVIDE_(int8_t);
    break;
  case ncclUint8:
    NSP_STANDIN_DIVIDE_(uint8_t);
    break;
  case ncclInt32:
    NSP_STANDIN_DIVIDE_(int32_t);
    break;
  case ncclUint32:
    NSP_STANDIN_DIVIDE_(uint32_t);
    break;
  case ncclInt64:
    NSP_STANDIN_DIVIDE_(int64_t);
    break;
  case ncclUint64:
    NSP_STANDIN_DIVIDE_(uint64_t);
    break;
  case ncclFloat32:
    NSP_STANDIN_DIVIDE_(float);
    break;
  case ncclFloat64:
    NSP_STANDIN_DIVIDE_(double);
    break;
  case ncclFloat16:
  case ncclBfloat16:
  case ncclFloat8e4m3:
  case ncclFloat8e5m2:
    for (i = 0; i < count; i++)
      nsp_standin_store_narrow(buf, i, dtype,
                               nsp_standin_load_narrow(buf, i, dtype) / (float)nranks);
    break;
  }
}

#define NSP_STANDIN_SCALE_(T, U)                                                   \
  do {                                                                             \
    T *d_ = dst;                                                                   \
    const T *s_ = src;                                                             \
    T k_;                                                                          \
    memcpy(&k_, scalar, sizeof k_);                                                \
    for (i = 0; i < count; i++)                                                    \
      d_[i] = (T)((U)s_[i] * (U)k_);                                               \
  } while (0)

void nsp_standin_scale(void *dst, const void *src, size_t count, ncclDataType_t dtype,
                       const void *scalar)
{
  size_t i;
  switch (dtype) {
  case ncclInt8:
    NSP_STANDIN_SCALE_(int8_t, uint32_t);
    break;
  case ncclUint8:
    NSP_STANDIN_SCALE_(uint8_t, uint32_t);
    break;
  case ncclInt32:
    NSP_STANDIN_SCALE_(int32_t, uint32_t);
    break;
  case ncclUint32:
    NSP_STANDIN_SCALE_(uint32_t, uint32_t);
    break;
  case ncclInt64:
    NSP_STANDIN_SCALE_(int64_t, uint64_t);
    break;
  case ncclUint64:
    NSP_STANDIN_SCALE_(uint64_t, uint64_t);
    break;
  case ncclFloat32:
    NSP_STANDIN_SCALE_(float, float);
    break;
  case ncclFloat64:
    NSP_STANDIN_SCALE_(double, double);
    break;
  case ncclFloat16:
  case ncclBfloat16:
  case ncclFloat8e4m3:
  case ncclFloat8e5m2: {
    float k = nsp_standin_load_narrow(scalar, 0, dtype);
    for (i = 0; i < count; i++)
      nsp_standin_store_narrow(dst, i, dtype, nsp_standin_load_narrow(src, i, dtype) * k);
    break;
  }
  }
}
