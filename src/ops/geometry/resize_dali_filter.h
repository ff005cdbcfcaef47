/* The per-pixel formula of DALI-style filter tables (ladle__resize_dali_axis,
 * resize_kernel.h): where each output pixel's taps start and what they weigh.
 * Included by the CPU planner (resize_dali.c) and the CUDA planning kernel
 * (resize_kernel.cu), so that both compute the same float operations in the
 * same order: every product, sum and quotient rounded on its own (the host
 * side includes core/no_fma.h; the device side spells the operations with
 * __fmul_rn & co., which nvcc never contracts). */
#ifndef LADLE_OPS_GEOMETRY_RESIZE_DALI_FILTER_H
#define LADLE_OPS_GEOMETRY_RESIZE_DALI_FILTER_H

#include <math.h>
#include <stdint.h>

#include "ops/geometry/resize_kernel.h"

#ifdef __CUDACC__
#define RZD_FN static __device__ __forceinline__
#define RZD_MUL(a, b) __fmul_rn((a), (b))
#define RZD_ADD(a, b) __fadd_rn((a), (b))
#define RZD_SUB(a, b) __fsub_rn((a), (b))
#define RZD_DIV(a, b) __fdiv_rn((a), (b))
#else
#define RZD_FN static inline
#define RZD_MUL(a, b) ((a) * (b))
#define RZD_ADD(a, b) ((a) + (b))
#define RZD_SUB(a, b) ((a) - (b))
#define RZD_DIV(a, b) ((a) / (b))
#endif

RZD_FN int rzd_clamp(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* Filters: the first tap of output pixel i, in absolute input pixels, before clamping. */
RZD_FN int rzd_first(const ladle__resize_dali_axis *a, int i) {
  return (int)ceilf(RZD_ADD(RZD_MUL((float)i, a->scale), a->x0)) + a->base;
}

/* The number of distinct input pixels pixel i reads once its taps are clamped;
 * the table's row length (taps) is the largest over the axis. */
RZD_FN int rzd_clamped_len(const ladle__resize_dali_axis *a, int i) {
  const int first = rzd_first(a, i), last = first + a->support - 1;
  return rzd_clamp(last, a->clo, a->chi) - rzd_clamp(first, a->clo, a->chi) + 1;
}

/* The shape at x (table steps), linearly interpolated; 0 outside (-1, num).
 * t holds num points and a 0 after them. */
RZD_FN float rzd_tab_at(const float *t, int num, float x) {
  if (!(x > -1.0f) || !(x < (float)num)) return 0.0f;
  if (x >= 0.0f) { /* floor is the truncation; t[num] is the 0 past the end */
    const int x0 = (int)x;
    const float d = RZD_SUB(x, (float)x0), f0 = t[x0];
    return RZD_ADD(f0, RZD_MUL(d, RZD_SUB(t[x0 + 1], f0)));
  }
  const float d = RZD_ADD(x, 1.0f); /* x0 = -1: the point before the table is 0 */
  return RZD_ADD(0.0f, RZD_MUL(d, RZD_SUB(t[0], 0.0f)));
}

/* The raw weight of tap k of a pixel whose first tap is frac pixels right of its window's start. */
RZD_FN float rzd_raw(const ladle__resize_dali_axis *a, const float *t, int num, float frac, int k) {
  return rzd_tab_at(t, num, RZD_MUL(RZD_ADD(frac, (float)k), a->tscale));
}

/*
 * Row i of a filter axis: returns start[i] and adds the weights into w[0 ..
 * taps-1], which the caller has zeroed (taps: the axis's row length). Each
 * raw weight is divided by the float sum of the pixel's raw weights; a tap
 * past an edge reads the edge pixel, so its weight is added to that pixel's.
 * c: scratch for a->support raw weights (computed once), or NULL (each raw
 * weight computed twice, the same value).
 */
RZD_FN int32_t rzd_row(const ladle__resize_dali_axis *a, const float *t, int num, int taps, int i, float *w,
                       float *c) {
  const float sx0f = RZD_ADD(RZD_MUL((float)i, a->scale), a->x0);
  const int sx0 = (int)ceilf(sx0f);
  const float frac = RZD_SUB((float)sx0, sx0f);
  float sum = 0.0f;
  for (int k = 0; k < a->support; k++) {
    const float v = rzd_raw(a, t, num, frac, k);
    if (c) c[k] = v;
    sum = RZD_ADD(sum, v);
  }
  const float div = sum != 0.0f ? sum : 1.0f; /* x / 1 is x */
  const int first = sx0 + a->base, cfirst = rzd_clamp(first, a->clo, a->chi);
  const int s = cfirst + taps > a->in_size ? a->in_size - taps : cfirst;
  for (int k = 0; k < a->support; k++) {
    const float v = c ? c[k] : rzd_raw(a, t, num, frac, k);
    const int x = rzd_clamp(first + k, a->clo, a->chi);
    w[x - s] = RZD_ADD(w[x - s], RZD_DIV(v, div));
  }
  return s;
}

/* Nearest neighbour: the running coordinate of nn_step axes starts here and
 * grows by a->scale per pixel (one rounded addition each). */
RZD_FN float rzd_nn_first(const ladle__resize_dali_axis *a) { return RZD_ADD(a->origin, RZD_MUL(0.5f, a->scale)); }

/* The pixel that output pixel i reads; `running` is its running coordinate (nn_step axes). */
RZD_FN int32_t rzd_nn_start(const ladle__resize_dali_axis *a, int i, float running) {
  const float x = a->nn_step ? running : RZD_ADD(a->origin, RZD_MUL(RZD_ADD((float)i, 0.5f), a->scale));
  return rzd_clamp((int)floorf(x) + a->base, a->clo, a->chi);
}

#endif
