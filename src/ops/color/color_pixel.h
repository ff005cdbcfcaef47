/* The per-pixel arithmetic of the colour kernels, written once for the CPU
 * (color_kernel.c) and the GPU (color_kernel.cu): the same rounded float
 * operations in the same order on both, no fused multiply-add (the device
 * side spells each operation as an intrinsic; the C file turns contraction
 * off). */
#ifndef LADLE_OPS_COLOR_COLOR_PIXEL_H
#define LADLE_OPS_COLOR_COLOR_PIXEL_H

#include <math.h>
#include <stdint.h>

#include "core/rng.h"
#include "ops/color/color_kernel.h"
#include "ops/kernels/half.h"

#if defined(__CUDA_ARCH__)
#define LADLE__CMUL(a, b) __fmul_rn((a), (b))
#define LADLE__CADD(a, b) __fadd_rn((a), (b))
#else
#define LADLE__CMUL(a, b) ((a) * (b))
#define LADLE__CADD(a, b) ((a) + (b))
#endif

/* Output channel o of a MATRIX transform for the input pixel x. */
static inline LADLE_HD float ladle__color_row(const ladle__color_params *p, const float *x, int o) {
  float v = LADLE__CMUL(p->m[o][0], x[0]);
  if (p->in_c > 1) v = LADLE__CADD(v, LADLE__CMUL(p->m[o][1], x[1]));
  if (p->in_c > 2) v = LADLE__CADD(v, LADLE__CMUL(p->m[o][2], x[2]));
  return LADLE__CADD(v, p->off[o]);
}

static inline LADLE_HD float ladle__color_scale(const ladle__color_params *p, float x) {
  return LADLE__CADD(LADLE__CMUL(x, p->mul), p->add);
}

/* Round half away from zero, saturate, NaN -> 0 (DALI's ConvertSat): v is
 * clamped to [0, 255] first (NaN fails v > 0 and becomes 0). Then
 * t = 2^23 + c is rounded to an integer, ties to even, whose value is the
 * low bits of t; that is round half away from zero except at a tie below an
 * even integer (c - rounded = 0.5, exact), which goes up one. Selects and
 * full-rate float and integer operations only: no branches (the GPU's
 * vector loop runs this on 16 values in a row, whose branches would
 * diverge) and no float-int conversion instructions (an eighth of the float
 * rate on the GPU; also no roundf, a libm call on the host). Needs IEEE
 * float addition in round-to-nearest mode. */
static inline LADLE_HD uint8_t ladle__color_to_u8(float v) {
  float c = v > 0.0f ? v : 0.0f;
  c = c < 255.0f ? c : 255.0f;
  const float t = LADLE__CADD(c, 8388608.0f);
  const uint32_t r = ladle__f32_bits(t) - 0x4B000000u; /* the integer t - 2^23 */
  return (uint8_t)(r + (LADLE__CADD(c, -LADLE__CADD(t, -8388608.0f)) == 0.5f));
}

/* A uint8 value as a float without a conversion instruction: the bits of
 * 2^23 + u, minus 2^23 (exact). */
static inline LADLE_HD float ladle__color_u8_to_f32(uint32_t u) {
  return LADLE__CADD(ladle__f32_from_bits(0x4B000000u | u), -8388608.0f);
}

static inline LADLE_HD int32_t ladle__color_to_i32(float v) {
  if (v != v) return 0;
  float r = roundf(v);
  if (r >= 2147483648.0f) return INT32_MAX;
  if (r < -2147483648.0f) return INT32_MIN;
  return (int32_t)r;
}

static inline LADLE_HD void ladle__color_put(void *out, int type, size_t i, float v) {
  switch (type) {
    case LADLE_UINT8: ((uint8_t *)out)[i] = ladle__color_to_u8(v); break;
    case LADLE_INT32: ((int32_t *)out)[i] = ladle__color_to_i32(v); break;
    case LADLE_FLOAT16: ((uint16_t *)out)[i] = ladle__f32_to_f16(v); break;
    default: ((float *)out)[i] = v; break;
  }
}

static inline LADLE_HD float ladle__color_get(const void *in, int type, size_t i) {
  return type == LADLE_UINT8 ? ladle__color_u8_to_f32(((const uint8_t *)in)[i]) : ((const float *)in)[i];
}

/* Pixel `px` of a transform: reads in_c values, writes out_c. */
static inline LADLE_HD void ladle__color_pixel(void *out, int out_type, const void *in, int in_type, size_t px,
                                                const ladle__color_params *p) {
  if (p->mode == LADLE__COLOR_SCALE) {
    for (int c = 0; c < p->in_c; c++) {
      size_t i = px * (size_t)p->in_c + (size_t)c;
      ladle__color_put(out, out_type, i, ladle__color_scale(p, ladle__color_get(in, in_type, i)));
    }
    return;
  }
  float x[3] = {0.0f, 0.0f, 0.0f};
  for (int c = 0; c < p->in_c && c < 3; c++)
    x[c] = ladle__color_get(in, in_type, px * (size_t)p->in_c + (size_t)(p->rev_in ? p->in_c - 1 - c : c));
  for (int o = 0; o < p->out_c && o < 3; o++)
    ladle__color_put(out, out_type, px * (size_t)p->out_c + (size_t)(p->rev_out ? p->out_c - 1 - o : o),
                     ladle__color_row(p, x, o));
}

/* jitter's displacement of pixel `index` along one axis, from one word. */
static inline LADLE_HD int ladle__jitter_offset(uint32_t u, int n_degree) {
  return (int)(((uint64_t)u * (uint64_t)n_degree) >> 32) - n_degree / 2;
}

/* jitter's source of output pixel (x, y); returns 0 when it is outside. */
static inline LADLE_HD int ladle__jitter_source(int x, int y, int h, int w, int n_degree, const uint32_t key[2],
                                                int *sx, int *sy) {
  uint64_t index = (uint64_t)y * (uint64_t)w + (uint64_t)x;
  uint32_t ctr[4] = {(uint32_t)index, (uint32_t)(index >> 32), 0u, 0u}, u[4];
  ladle__philox_block(ctr, key, u);
  *sx = x + ladle__jitter_offset(u[0], n_degree);
  *sy = y + ladle__jitter_offset(u[1], n_degree);
  return *sx >= 0 && *sx < w && *sy >= 0 && *sy < h;
}

#endif
