/* uint8 <-> float on the GPU without the conversion unit (16 results per
 * clock and SM on sm_80/sm_90, an eighth of the float adds' rate): a byte
 * becomes a float by assembling the bits of 2^23 + byte and subtracting
 * 2^23; a float becomes a byte by adding 2^23 (or 1.5 * 2^23) in a chosen
 * rounding mode and reading the low mantissa bits. Every result is exactly
 * the one the plain C conversion gives (the comments say why). Included by
 * .cu files only. */
#ifndef LADLE_OPS_KERNELS_GPU_U8_H
#define LADLE_OPS_KERNELS_GPU_U8_H

/* (float) of byte k (0..3) of w: one byte permute builds 0x4B0000bb, the
 * float 2^23 + bb; subtracting 2^23 is exact. */
static __device__ __forceinline__ float ladle__gpu_byte_float(unsigned w, int k) {
  return __fsub_rn(__uint_as_float(__byte_perm(w, 0x4B000000u, 0x7440u | (unsigned)k)), 8388608.0f);
}

/* (float)x for 0 <= x < 2^23, the same way. */
static __device__ __forceinline__ float ladle__gpu_small_float(int x) {
  return __fsub_rn(__uint_as_float(0x4B000000u | (unsigned)x), 8388608.0f);
}

/* half.h's ladle__f32_to_u8 (saturate, NaN -> 0, round to nearest even) as
 * the byte's value: v + 2^23 (v in [0, 255]) has no fraction bits, so the
 * addition rounds as that function's does and the low byte is the result. */
static __device__ __forceinline__ unsigned ladle__gpu_u8_rne(float v) {
  v = fminf(fmaxf(v, 0.0f), 255.0f); /* fmaxf(NaN, 0) = 0 */
  return __float_as_uint(__fadd_rn(v, 8388608.0f)) & 255u;
}

/* roundf (half away from zero) then saturation to [0, 255], NaN -> 0 (the
 * warps' uint8 rule), as the byte's value. Clamping first changes nothing
 * (roundf is monotone and keeps 0 and 255). For v in [0, 255], roundf(v) =
 * floor(v + 0.5); t = v + 0.5 rounded toward zero has the same floor (the
 * integers near it are floats and rounding toward zero never passes one);
 * t + 2^23 rounded toward zero is 2^23 + floor(t). */
static __device__ __forceinline__ unsigned ladle__gpu_u8_round_away(float v) {
  v = fminf(fmaxf(v, 0.0f), 255.0f);
  return __float_as_uint(__fadd_rz(__fadd_rz(v, 0.5f), 8388608.0f)) & 255u;
}

/* floorf(v) as an int and as a float for |v| < 2^22: v + 1.5 * 2^23
 * rounded down lies in [2^23, 2^24), where floats are the integers, so it is
 * 1.5 * 2^23 + floor(v) exactly. */
static __device__ __forceinline__ int ladle__gpu_floor_small(float v, float *fl) {
  const float t = __fadd_rd(v, 12582912.0f);
  *fl = __fsub_rn(t, 12582912.0f);
  return __float_as_int(t) - 0x4B400000;
}

#endif
