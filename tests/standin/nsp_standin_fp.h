/* nsp_standin_fp.h - conversions between float and NCCL's narrow float
 * types (float16, bfloat16, float8 e4m3 / e5m2).
 *
 * Header-only so that the stand-in and the test programs that check its
 * results round the same way; a test that rounded differently from the
 * library would report differences that are not bugs.  All conversions
 * from float round to nearest even, as CUDA's __float2half_rn and
 * __float2bfloat16_rn do. */
#ifndef NSP_STANDIN_FP_H
#define NSP_STANDIN_FP_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "nsp_nccl.h"

static inline uint32_t nsp_standin_f32_bits(float f)
{
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  return x;
}

static inline float nsp_standin_bits_f32(uint32_t x)
{
  float f;
  memcpy(&f, &x, sizeof f);
  return f;
}

static inline float nsp_standin_f16_to_f32(uint16_t h)
{
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;

  if (exp == 0) {
    /* Subnormal halves are exact in float; ldexpf avoids renormalising by
     * hand. */
    float v = ldexpf((float)mant, -24);
    return sign ? -v : v;
  }
  if (exp == 31)
    return nsp_standin_bits_f32(sign | 0x7f800000u | (mant << 13));
  return nsp_standin_bits_f32(sign | ((exp + 112u) << 23) | (mant << 13));
}

static inline uint16_t nsp_standin_f32_to_f16(float f)
{
  uint32_t x = nsp_standin_f32_bits(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t exp = (x >> 23) & 0xffu;
  uint32_t mant = x & 0x7fffffu;
  int e = (int)exp - 127 + 15;

  if (exp == 0xff)
    return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0u));
  if (e >= 31)
    return (uint16_t)(sign | 0x7c00u);
  if (e <= 0) {
    uint32_t m = mant | 0x800000u, half, rem, mid;
    int shift = 14 - e;
    if (shift > 24)
      return (uint16_t)sign;
    half = m >> shift;
    rem = m & ((1u << shift) - 1u);
    mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1u)))
      half++;
    return (uint16_t)(sign | half);
  }
  {
    uint32_t half = ((uint32_t)e << 10) | (mant >> 13);
    uint32_t rem = mant & 0x1fffu;
    /* A carry out of the mantissa lands in the exponent, which is the
     * correctly rounded result (up to infinity). */
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1u)))
      half++;
    return (uint16_t)(sign | half);
  }
}

static inline float nsp_standin_bf16_to_f32(uint16_t b)
{
  return nsp_standin_bits_f32((uint32_t)b << 16);
}

static inline uint16_t nsp_standin_f32_to_bf16(float f)
{
  uint32_t x = nsp_standin_f32_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return (uint16_t)((x >> 16) | 0x40u); /* keep NaN a NaN */
  x += 0x7fffu + ((x >> 16) & 1u);
  return (uint16_t)(x >> 16);
}

/* float8: e4m3 is the "fn" variant (no infinity, 0x7f NaN, largest 448),
 * e5m2 has IEEE-style infinities; both as in CUDA's cuda_fp8.h. */
static inline float nsp_standin_fp8_to_f32(uint8_t b, int e4m3)
{
  int mbits = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15;
  int emax = e4m3 ? 15 : 31;
  int exp = (b & 0x7f) >> mbits;
  int mant = b & ((1 << mbits) - 1);
  float v;

  if (e4m3 && exp == emax && mant == (1 << mbits) - 1)
    v = NAN;
  else if (!e4m3 && exp == emax)
    v = mant ? NAN : INFINITY;
  else if (exp == 0)
    v = ldexpf((float)mant, 1 - bias - mbits);
  else
    v = ldexpf((float)((1 << mbits) + mant), exp - bias - mbits);
  return (b & 0x80) ? -v : v;
}

static inline uint8_t nsp_standin_f32_to_fp8(float f, int e4m3)
{
  int mbits = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15;
  uint8_t sign = signbit(f) ? 0x80 : 0;
  uint8_t top = e4m3 ? 0x7e : 0x7b; /* largest finite code */
  float a = fabsf(f), q;
  int e, biased, m;

  if (isnan(f))
    return (uint8_t)(sign | 0x7f);
  if (a >= (e4m3 ? 464.0f : 61440.0f)) /* half-way past the largest finite */
    return (uint8_t)(sign | (e4m3 ? top : 0x7c));
  (void)frexpf(a, &e); /* a = 0.f * 2^e */
  biased = e - 1 + bias;
  if (biased < 1) {
    /* Subnormal: a multiple of the smallest step; rounding up to the
     * first normal gives the right code because the encodings abut. */
    q = rintf(ldexpf(a, bias - 1 + mbits));
    return (uint8_t)(sign | (uint8_t)q);
  }
  q = rintf(ldexpf(a, mbits - (e - 1)));
  m = (int)q - (1 << mbits);
  if (m == (1 << mbits)) {
    m = 0;
    biased++;
  }
  if (((biased << mbits) | m) > top)
    return (uint8_t)(sign | top);
  return (uint8_t)(sign | (uint8_t)((biased << mbits) | m));
}

/* Element i of a buffer of `dtype`, as a double: for tests that fill and
 * check buffers of every dtype with one loop. */
static inline double nsp_standin_load_elem(const void *buf, ncclDataType_t dtype, size_t i)
{
  switch (dtype) {
  case ncclInt8: return ((const int8_t *)buf)[i];
  case ncclUint8: return ((const uint8_t *)buf)[i];
  case ncclInt32: return ((const int32_t *)buf)[i];
  case ncclUint32: return ((const uint32_t *)buf)[i];
  case ncclInt64: return (double)((const int64_t *)buf)[i];
  case ncclUint64: return (double)((const uint64_t *)buf)[i];
  case ncclFloat16: return nsp_standin_f16_to_f32(((const uint16_t *)buf)[i]);
  case ncclFloat32: return ((const float *)buf)[i];
  case ncclFloat64: return ((const double *)buf)[i];
  case ncclBfloat16: return nsp_standin_bf16_to_f32(((const uint16_t *)buf)[i]);
  case ncclFloat8e4m3: return nsp_standin_fp8_to_f32(((const uint8_t *)buf)[i], 1);
  case ncclFloat8e5m2: return nsp_standin_fp8_to_f32(((const uint8_t *)buf)[i], 0);
  }
  return NAN;
}

/* Stores v (an integer within the type's range, or any value for float
 * types) as element i. */
static inline void nsp_standin_store_elem(void *buf, ncclDataType_t dtype, size_t i, double v)
{
  switch (dtype) {
  case ncclInt8: ((int8_t *)buf)[i] = (int8_t)v; break;
  case ncclUint8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
  case ncclInt32: ((int32_t *)buf)[i] = (int32_t)v; break;
  case ncclUint32: ((uint32_t *)buf)[i] = (uint32_t)v; break;
  case ncclInt64: ((int64_t *)buf)[i] = (int64_t)v; break;
  case ncclUint64: ((uint64_t *)buf)[i] = (uint64_t)v; break;
  case ncclFloat16: ((uint16_t *)buf)[i] = nsp_standin_f32_to_f16((float)v); break;
  case ncclFloat32: ((float *)buf)[i] = (float)v; break;
  case ncclFloat64: ((double *)buf)[i] = v; break;
  case ncclBfloat16: ((uint16_t *)buf)[i] = nsp_standin_f32_to_bf16((float)v); break;
  case ncclFloat8e4m3: ((uint8_t *)buf)[i] = nsp_standin_f32_to_fp8((float)v, 1); break;
  case ncclFloat8e5m2: ((uint8_t *)buf)[i] = nsp_standin_f32_to_fp8((float)v, 0); break;
  }
}

#endif /* NSP_STANDIN_FP_H */
