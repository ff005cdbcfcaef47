/* The per-pixel rule of ladle__warp_affine (warp_kernel.h), included by the
 * CPU kernel (warp_kernel.c) and the CUDA kernel (warp_kernel.cu) so that
 * both compute the same float operations in the same order. */
#ifndef LADLE_OPS_GEOMETRY_WARP_SAMPLE_H
#define LADLE_OPS_GEOMETRY_WARP_SAMPLE_H

#include <math.h>

#include "ops/geometry/warp_kernel.h"

#ifdef __CUDACC__
#define WARP_FN static __device__ __forceinline__
#define WARP_MUL(a, b) __fmul_rn((a), (b))
#define WARP_ADD(a, b) __fadd_rn((a), (b))
#define WARP_SUB(a, b) __fsub_rn((a), (b))
#else
#define WARP_FN static inline
#define WARP_MUL(a, b) ((a) * (b))
#define WARP_ADD(a, b) ((a) + (b))
#define WARP_SUB(a, b) ((a) - (b))
#endif

/* floor as an int, for coordinates kept far from int overflow (and NaN sent
 * to the low side: outside the image either way). */
WARP_FN int warp_floor(float v) {
  v = fmaxf(v, -1073741824.0f);
  v = fminf(v, 1073741824.0f);
  return (int)floorf(v);
}

WARP_FN int warp_elem_size(int type) { return type == LADLE__WARP_U8 ? 1 : type == LADLE__WARP_I16 ? 2 : 4; }

WARP_FN float warp_load(const void *in, size_t i, int type) {
  switch (type) {
    case LADLE__WARP_F32: return ((const float *)in)[i];
    case LADLE__WARP_I32: return (float)((const int32_t *)in)[i];
    case LADLE__WARP_I16: return (float)((const int16_t *)in)[i];
    default: return (float)((const uint8_t *)in)[i];
  }
}

/* v in the value range of `type`: rounded half away from zero and saturated
 * for the integer types (NaN goes to the low end), as is for float32. */
WARP_FN float warp_convert(float v, int type) {
  if (type == LADLE__WARP_F32) return v;
  float lo = type == LADLE__WARP_U8 ? 0.0f : type == LADLE__WARP_I16 ? -32768.0f : -2147483648.0f;
  float hi = type == LADLE__WARP_U8 ? 255.0f : type == LADLE__WARP_I16 ? 32767.0f : 2147483520.0f;
  float r = roundf(v);
  return r >= hi ? hi : r > lo ? r : lo;
}

WARP_FN void warp_store(void *out, size_t i, int type, float v) {
  switch (type) {
    case LADLE__WARP_F32: ((float *)out)[i] = v; break;
    case LADLE__WARP_I32: {
      float r = roundf(v); /* 2^31 is not an int32: saturate before converting */
      ((int32_t *)out)[i] = r >= 2147483648.0f ? 2147483647 : r > -2147483648.0f ? (int32_t)r : (int32_t)(-2147483647 - 1);
      break;
    }
    case LADLE__WARP_I16: ((int16_t *)out)[i] = (int16_t)warp_convert(v, type); break;
    default: ((uint8_t *)out)[i] = (uint8_t)warp_convert(v, type); break;
  }
}

/* One input tap of channel c: the pixel, the clamped border, or the fill. */
WARP_FN float warp_tap(const void *in, const ladle__warp_params *p, int x, int y, int c, int in_type,
                       int use_fill) {
  if (x < 0 || y < 0 || x >= p->in_w || y >= p->in_h) {
    if (use_fill) return p->fill_in;
    x = x < 0 ? 0 : x >= p->in_w ? p->in_w - 1 : x;
    y = y < 0 ? 0 : y >= p->in_h ? p->in_h - 1 : y;
  }
  return warp_load(in, ((size_t)y * (size_t)p->in_w + (size_t)x) * (size_t)p->channels + (size_t)c, in_type);
}

/* The source position of output pixel (x, y). */
WARP_FN void warp_source(const float *m, int x, int y, float *sx, float *sy) {
  float fx = (float)x + 0.5f, fy = (float)y + 0.5f;
  *sx = WARP_ADD(WARP_ADD(WARP_MUL(m[0], fx), WARP_MUL(m[1], fy)), m[2]);
  *sy = WARP_ADD(WARP_ADD(WARP_MUL(m[3], fx), WARP_MUL(m[4], fy)), m[5]);
}

/* LINEAR: the top-left tap (x0, y0) of source position (sx, sy) and the weights. */
WARP_FN void warp_linear_setup(float sx, float sy, int *x0, int *y0, float *px, float *qx, float *qy) {
  sx = WARP_SUB(sx, 0.5f);
  sy = WARP_SUB(sy, 0.5f);
  *x0 = warp_floor(sx);
  *y0 = warp_floor(sy);
  *qx = WARP_SUB(sx, (float)*x0);
  *qy = WARP_SUB(sy, (float)*y0);
  *px = WARP_SUB(1.0f, *qx);
}

/* DALI's bilinear blend of the four taps. */
WARP_FN float warp_blend(float s00, float s01, float s10, float s11, float px, float qx, float qy) {
  float s0 = WARP_ADD(WARP_MUL(s00, px), WARP_MUL(s01, qx));
  float s1 = WARP_ADD(WARP_MUL(s10, px), WARP_MUL(s11, qx));
  return WARP_ADD(s0, WARP_MUL(WARP_SUB(s1, s0), qy));
}

/* Output pixel (x, y), all channels, with the parameters that select the code
 * path passed on their own (a GPU kernel passes compile-time constants). */
WARP_FN void warp_pixel_of(void *out, const void *in, const ladle__warp_params *p, int x, int y, int in_type,
                           int out_type, int linear, int use_fill, int C) {
  float sx, sy;
  warp_source(p->m, x, y, &sx, &sy);
  size_t o = ((size_t)y * (size_t)p->out_w + (size_t)x) * (size_t)C;
  if (!linear) {
    int xi = warp_floor(sx), yi = warp_floor(sy);
    int outside = xi < 0 || yi < 0 || xi >= p->in_w || yi >= p->in_h;
    if (in_type == out_type && !(outside && use_fill)) { /* the element itself */
      xi = xi < 0 ? 0 : xi >= p->in_w ? p->in_w - 1 : xi;
      yi = yi < 0 ? 0 : yi >= p->in_h ? p->in_h - 1 : yi;
      int es = warp_elem_size(in_type);
      const uint8_t *src = (const uint8_t *)in + ((size_t)yi * (size_t)p->in_w + (size_t)xi) * (size_t)C * (size_t)es;
      uint8_t *dst = (uint8_t *)out + o * (size_t)es;
      for (int b = 0; b < C * es; b++) dst[b] = src[b];
      return;
    }
    for (int c = 0; c < C; c++)
      warp_store(out, o + (size_t)c, out_type, outside && use_fill ? p->fill_out : warp_tap(in, p, xi, yi, c, in_type, use_fill));
    return;
  }
  int x0, y0;
  float px, qx, qy;
  warp_linear_setup(sx, sy, &x0, &y0, &px, &qx, &qy);
  if (x0 >= 0 && y0 >= 0 && x0 < p->in_w - 1 && y0 < p->in_h - 1) { /* all four taps inside */
    size_t i0 = ((size_t)y0 * (size_t)p->in_w + (size_t)x0) * (size_t)C, i1 = i0 + (size_t)p->in_w * (size_t)C;
    for (int c = 0; c < C; c++)
      warp_store(out, o + (size_t)c, out_type,
                 warp_blend(warp_load(in, i0 + (size_t)c, in_type), warp_load(in, i0 + (size_t)(C + c), in_type),
                            warp_load(in, i1 + (size_t)c, in_type), warp_load(in, i1 + (size_t)(C + c), in_type), px,
                            qx, qy));
    return;
  }
  for (int c = 0; c < C; c++) {
    float s00 = warp_tap(in, p, x0, y0, c, in_type, use_fill), s01 = warp_tap(in, p, x0 + 1, y0, c, in_type, use_fill);
    float s10 = warp_tap(in, p, x0, y0 + 1, c, in_type, use_fill);
    float s11 = warp_tap(in, p, x0 + 1, y0 + 1, c, in_type, use_fill);
    warp_store(out, o + (size_t)c, out_type, warp_blend(s00, s01, s10, s11, px, qx, qy));
  }
}

/* Output pixel (x, y), all channels. */
WARP_FN void warp_pixel(void *out, const void *in, const ladle__warp_params *p, int x, int y) {
  warp_pixel_of(out, in, p, x, y, p->in_type, p->out_type, p->linear, p->use_fill, p->channels);
}

#endif
