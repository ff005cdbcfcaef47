/* Per-dtype element loads and stores with ladle's conversion rules, one
 * definition for the CPU kernels (C) and the CUDA ones (LADLE_HD): cast, the
 * random ops and any elementwise kernel that reads or writes every dtype.
 *
 * Values travel in one of four carriers: float (float16, float32), double
 * (float64), int64_t (every integer type but uint64, and bool) and uint64_t
 * (uint64). ladle__store_<carrier>(p, i, t, v) writes v as element i of an
 * array of type t with the rules below; ladle__load_<carrier>(p, i, t) reads
 * element i of an array of type t that belongs to that carrier.
 *   float -> integer:  round to nearest, ties to even, then saturate to the
 *                      type's range; NaN -> 0.
 *   integer -> integer: saturate.
 *   any -> bool:       v != 0 (NaN -> 1). Bool elements read as 0 or 1
 *                      (any nonzero byte is 1).
 *   -> float32/float64: nearest (ties to even); float -> float64 is exact.
 *   -> float16:        nearest half, +-inf at |v| >= 65520 (rounded once, also
 *                      from float64: see ladle__f64_to_f16).
 *   NaN -> float:      float32 -> float16 keeps the top payload bits; between
 *                      float64 and the others a NaN is the default quiet NaN
 *                      of its sign (the same bits on CPU and GPU).
 * Needs IEEE arithmetic in round-to-nearest with subnormals (no fast-math). */
#ifndef LADLE_OPS_KERNELS_DTYPE_H
#define LADLE_OPS_KERNELS_DTYPE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ladle/ladle.h"
#include "ops/kernels/half.h"

#if defined(__CUDACC__)
#define LADLE__DT_INLINE static __forceinline__ LADLE_HD
#else
#define LADLE__DT_INLINE static inline __attribute__((always_inline))
#endif

/* The carrier a dtype's values load into. */
enum { LADLE__CARRY_F32, LADLE__CARRY_F64, LADLE__CARRY_I64, LADLE__CARRY_U64 };

LADLE__DT_INLINE int ladle__dtype_carrier(int t) {
  return t == LADLE_FLOAT32 || t == LADLE_FLOAT16 ? LADLE__CARRY_F32
         : t == LADLE_FLOAT64                     ? LADLE__CARRY_F64
         : t == LADLE_UINT64                      ? LADLE__CARRY_U64
                                                  : LADLE__CARRY_I64;
}

LADLE__DT_INLINE int ladle__dtype_is_float(int t) {
  return t == LADLE_FLOAT32 || t == LADLE_FLOAT16 || t == LADLE_FLOAT64;
}

/* Bytes per element (0 for a value that is no dtype), as ladle_dtype_size. */
LADLE__DT_INLINE size_t ladle__dtype_bytes(int t) {
  switch (t) {
    case LADLE_UINT8: case LADLE_INT8: case LADLE_BOOL: return 1;
    case LADLE_FLOAT16: case LADLE_INT16: case LADLE_UINT16: return 2;
    case LADLE_INT32: case LADLE_UINT32: case LADLE_FLOAT32: return 4;
    case LADLE_INT64: case LADLE_UINT64: case LADLE_FLOAT64: return 8;
    default: return 0;
  }
}

/* ------------------------------------------------------------------------ */
/* Scalar rules                                                               */
/* ------------------------------------------------------------------------ */

/* Round to nearest, ties to even: below 2^23 (2^52) adding that power leaves
 * no fraction bits and the addition rounds; larger values, inf and NaN are
 * integral or unordered already. No multiply, so nothing can be contracted. */
LADLE__DT_INLINE float ladle__round_even_f32(float x) {
  float a = x < 0 ? -x : x;
  if (!(a < 8388608.0f)) return x;
  float r = (a + 8388608.0f) - 8388608.0f;
  return x < 0 ? -r : r;
}

LADLE__DT_INLINE double ladle__round_even_f64(double x) {
  double a = x < 0 ? -x : x;
  if (!(a < 4503599627370496.0)) return x;
  double r = (a + 4503599627370496.0) - 4503599627370496.0;
  return x < 0 ? -r : r;
}

/* Saturating double -> int64 / uint64 of the rounded value; NaN -> 0. */
LADLE__DT_INLINE int64_t ladle__f64_to_i64(double x) {
  double r = ladle__round_even_f64(x);
  if (r != r) return 0;
  if (r >= 9223372036854775808.0) return INT64_MAX;
  if (r < -9223372036854775808.0) return INT64_MIN;
  return (int64_t)r;
}

LADLE__DT_INLINE uint64_t ladle__f64_to_u64(double x) {
  double r = ladle__round_even_f64(x);
  if (!(r > 0)) return 0; /* NaN, zero and negatives */
  if (r >= 18446744073709551616.0) return UINT64_MAX;
  return (uint64_t)r;
}

/* float -> int64 in float arithmetic (a float below 2^63 converts exactly). */
LADLE__DT_INLINE int64_t ladle__f32_to_i64(float x) {
  float r = ladle__round_even_f32(x);
  if (r != r) return 0;
  if (r >= 9223372036854775808.0f) return INT64_MAX;
  if (r < -9223372036854775808.0f) return INT64_MIN;
  return (int64_t)r;
}

/* float <-> double; a NaN becomes the default quiet NaN of its sign (CPUs
 * keep payloads through these conversions, GPUs need not: the same bits on
 * both). */
LADLE__DT_INLINE float ladle__f64_to_f32(double d) {
  uint64_t u;
  memcpy(&u, &d, sizeof u);
  return d != d ? ladle__f32_from_bits(0x7fc00000u | (uint32_t)(u >> 63 << 31)) : (float)d;
}

LADLE__DT_INLINE double ladle__f32_to_f64(float f) {
  uint64_t u = 0x7ff8000000000000ull | ((uint64_t)(ladle__f32_bits(f) >> 31) << 63);
  double nan;
  memcpy(&nan, &u, sizeof nan);
  return f != f ? nan : (double)f;
}

/* double -> half rounded once: the double is first rounded to float "to odd"
 * (an inexact result gets an odd last bit), which keeps enough information
 * for the float -> half rounding to be that of the double. */
LADLE__DT_INLINE uint16_t ladle__f64_to_f16(double d) {
  float f = ladle__f64_to_f32(d);
  if (f == f && (double)f != d && !(ladle__f32_bits(f) & 1u)) {
    uint32_t u = ladle__f32_bits(f);
    double af = f < 0 ? -(double)f : (double)f, ad = d < 0 ? -d : d;
    u = af > ad ? u - 1 : u + 1; /* step the magnitude toward d */
    f = ladle__f32_from_bits(u);
  }
  return ladle__f32_to_f16(f);
}

LADLE__DT_INLINE int64_t ladle__sat_i64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* ------------------------------------------------------------------------ */
/* Stores                                                                     */
/* ------------------------------------------------------------------------ */

LADLE__DT_INLINE void ladle__store_i64(void *p, size_t i, int t, int64_t v) {
  switch (t) {
    case LADLE_UINT8: ((uint8_t *)p)[i] = (uint8_t)ladle__sat_i64(v, 0, UINT8_MAX); break;
    case LADLE_INT8: ((int8_t *)p)[i] = (int8_t)ladle__sat_i64(v, INT8_MIN, INT8_MAX); break;
    case LADLE_INT16: ((int16_t *)p)[i] = (int16_t)ladle__sat_i64(v, INT16_MIN, INT16_MAX); break;
    case LADLE_UINT16: ((uint16_t *)p)[i] = (uint16_t)ladle__sat_i64(v, 0, UINT16_MAX); break;
    case LADLE_INT32: ((int32_t *)p)[i] = (int32_t)ladle__sat_i64(v, INT32_MIN, INT32_MAX); break;
    case LADLE_UINT32: ((uint32_t *)p)[i] = (uint32_t)ladle__sat_i64(v, 0, UINT32_MAX); break;
    case LADLE_INT64: ((int64_t *)p)[i] = v; break;
    case LADLE_UINT64: ((uint64_t *)p)[i] = v < 0 ? 0 : (uint64_t)v; break;
    case LADLE_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    case LADLE_FLOAT32: ((float *)p)[i] = (float)v; break;
    case LADLE_FLOAT64: ((double *)p)[i] = (double)v; break;
    /* |v| <= 2^24 is exact in float, larger values are inf as halves either way */
    case LADLE_FLOAT16: ((uint16_t *)p)[i] = ladle__f32_to_f16((float)v); break;
    default: break;
  }
}

LADLE__DT_INLINE void ladle__store_u64(void *p, size_t i, int t, uint64_t v) {
  switch (t) {
    case LADLE_UINT64: ((uint64_t *)p)[i] = v; break;
    case LADLE_FLOAT32: ((float *)p)[i] = (float)v; break;
    case LADLE_FLOAT64: ((double *)p)[i] = (double)v; break;
    case LADLE_FLOAT16: ((uint16_t *)p)[i] = ladle__f32_to_f16((float)v); break;
    default: ladle__store_i64(p, i, t, v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v); break;
  }
}

LADLE__DT_INLINE void ladle__store_f64(void *p, size_t i, int t, double v) {
  switch (t) {
    case LADLE_FLOAT64: ((double *)p)[i] = v; break;
    case LADLE_FLOAT32: ((float *)p)[i] = ladle__f64_to_f32(v); break;
    case LADLE_FLOAT16: ((uint16_t *)p)[i] = ladle__f64_to_f16(v); break;
    case LADLE_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    case LADLE_UINT64: ((uint64_t *)p)[i] = ladle__f64_to_u64(v); break;
    default: ladle__store_i64(p, i, t, ladle__f64_to_i64(v)); break;
  }
}

LADLE__DT_INLINE void ladle__store_f32(void *p, size_t i, int t, float v) {
  switch (t) {
    case LADLE_FLOAT32: ((float *)p)[i] = v; break;
    case LADLE_FLOAT16: ((uint16_t *)p)[i] = ladle__f32_to_f16(v); break;
    case LADLE_FLOAT64: ((double *)p)[i] = ladle__f32_to_f64(v); break;
    case LADLE_UINT8: ((uint8_t *)p)[i] = ladle__f32_to_u8(v); break;
    case LADLE_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    case LADLE_UINT64: ((uint64_t *)p)[i] = ladle__f64_to_u64((double)v); break;
    default: ladle__store_i64(p, i, t, ladle__f32_to_i64(v)); break;
  }
}

/* ------------------------------------------------------------------------ */
/* Loads (t must belong to the carrier; see ladle__dtype_carrier)             */
/* ------------------------------------------------------------------------ */

LADLE__DT_INLINE float ladle__load_f32(const void *p, size_t i, int t) {
  return t == LADLE_FLOAT16 ? ladle__f16_to_f32(((const uint16_t *)p)[i]) : ((const float *)p)[i];
}

LADLE__DT_INLINE double ladle__load_f64(const void *p, size_t i, int t) {
  (void)t;
  return ((const double *)p)[i];
}

LADLE__DT_INLINE uint64_t ladle__load_u64(const void *p, size_t i, int t) {
  (void)t;
  return ((const uint64_t *)p)[i];
}

LADLE__DT_INLINE int64_t ladle__load_i64(const void *p, size_t i, int t) {
  switch (t) {
    case LADLE_UINT8: return ((const uint8_t *)p)[i];
    case LADLE_INT8: return ((const int8_t *)p)[i];
    case LADLE_INT16: return ((const int16_t *)p)[i];
    case LADLE_UINT16: return ((const uint16_t *)p)[i];
    case LADLE_INT32: return ((const int32_t *)p)[i];
    case LADLE_UINT32: return ((const uint32_t *)p)[i];
    case LADLE_BOOL: return ((const uint8_t *)p)[i] != 0;
    default: return ((const int64_t *)p)[i];
  }
}

/* Any element of any dtype as a double (int64/uint64 beyond 2^53 rounded to
 * nearest): for values read once, such as per-sample arguments. */
LADLE__DT_INLINE double ladle__load_as_f64(const void *p, size_t i, int t) {
  switch (ladle__dtype_carrier(t)) {
    case LADLE__CARRY_F32: return (double)ladle__load_f32(p, i, t);
    case LADLE__CARRY_F64: return ladle__load_f64(p, i, t);
    case LADLE__CARRY_U64: return (double)ladle__load_u64(p, i, t);
    default: return (double)ladle__load_i64(p, i, t);
  }
}

/* Element j of `in` (type it) converted and stored as element i of `out`
 * (type ot): one element of ladle__convert. */
LADLE__DT_INLINE void ladle__convert_elem(void *out, size_t i, int ot, const void *in, size_t j, int it) {
  switch (ladle__dtype_carrier(it)) {
    case LADLE__CARRY_F32: ladle__store_f32(out, i, ot, ladle__load_f32(in, j, it)); break;
    case LADLE__CARRY_F64: ladle__store_f64(out, i, ot, ladle__load_f64(in, j, it)); break;
    case LADLE__CARRY_U64: ladle__store_u64(out, i, ot, ladle__load_u64(in, j, it)); break;
    default: ladle__store_i64(out, i, ot, ladle__load_i64(in, j, it)); break;
  }
}

#endif
