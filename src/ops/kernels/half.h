/* IEEE 754 binary16 <-> binary32 conversion and the saturating float -> uint8
 * rounding shared by the CPU kernels and (header-only, LADLE_HD) the CUDA ones. */
#ifndef LADLE_OPS_KERNELS_HALF_H
#define LADLE_OPS_KERNELS_HALF_H

#include <stdint.h>
#include <string.h>

/* The same definition as core/rng.h (an identical redefinition is legal C). */
#if defined(__CUDACC__)
#define LADLE_HD __host__ __device__
#else
#define LADLE_HD
#endif

static inline LADLE_HD uint32_t ladle__f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static inline LADLE_HD float ladle__f32_from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* float -> half, round to nearest even, for every input: overflow (|f| >= 65520)
 * gives +-inf, NaN stays NaN (quiet, top payload bits kept), results below
 * 2^-14 become correctly rounded subnormals. Written without branches (three
 * candidate results and selects) so that loops calling it vectorize.
 * Needs IEEE float addition in round-to-nearest mode with subnormals kept
 * (no flush-to-zero): the subnormal case lets the FPU do the rounding. */
static inline LADLE_HD uint16_t ladle__f32_to_f16(float f) {
  uint32_t u = ladle__f32_bits(f);
  uint32_t sign = (u >> 16) & 0x8000u;
  uint32_t a = u & 0x7fffffffu;
  /* Normal range: rebias the exponent (127 -> 15) and round the 13 dropped
   * mantissa bits to nearest even; a carry rolls into the exponent, which is
   * exactly right (it also turns [65520, 65536) into inf). */
  uint32_t normal = (a + 0xc8000fffu + ((a >> 13) & 1u)) >> 13;
  /* Below 2^-14: adding 0.5 puts the value on a grid of 2^-24, the half
   * subnormal spacing, so the float addition rounds it as binary16 would; the
   * result 0x400 (2^-14 after rounding up) is the smallest normal half. */
  uint32_t sub = ladle__f32_bits(ladle__f32_from_bits(a) + 0.5f) - 0x3f000000u;
  /* Inf and NaN; finite values >= 65536 also land here and become inf. */
  uint32_t special = a > 0x7f800000u ? (0x7e00u | ((a >> 13) & 0x3ffu)) : 0x7c00u;
  uint32_t h = a < 0x38800000u ? sub : normal;
  h = a >= 0x47800000u ? special : h;
  return (uint16_t)(h | sign);
}

/* half -> float, exact for every input (subnormal halves become normal floats). */
static inline LADLE_HD float ladle__f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1fu;
  uint32_t m = h & 0x3ffu;
  if (e == 0x1f) return ladle__f32_from_bits(sign | 0x7f800000u | (m << 13));
  if (e == 0) {
    float v = (float)m * 5.9604644775390625e-8f; /* m * 2^-24, exact */
    return sign ? -v : v;
  }
  return ladle__f32_from_bits(sign | ((e + 112u) << 23) | (m << 13));
}

/* float -> uint8: saturate to [0, 255] (NaN -> 0), then round to nearest,
 * ties to even. Adding 2^23 leaves no fraction bits, so the (round-to-nearest)
 * float addition does the rounding; the subtraction is exact. Same result as
 * CUDA's __float2uint_rn after clamping. */
static inline LADLE_HD uint8_t ladle__f32_to_u8(float v) {
  v = v > 0.0f ? v : 0.0f;
  v = v < 255.0f ? v : 255.0f;
  return (uint8_t)(int)((v + 8388608.0f) - 8388608.0f);
}

/* float -> uint8 by saturation and truncation: DALI's conversion of a sum
 * that was started at 0.5 (so that ties round up). NaN -> 0. */
static inline LADLE_HD uint8_t ladle__f32_to_u8_trunc(float v) {
  v = v > 0.0f ? v : 0.0f;
  v = v < 255.0f ? v : 255.0f;
  return (uint8_t)(int)v;
}

#endif
