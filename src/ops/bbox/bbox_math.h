/* The per-row arithmetic of the bbox kernels, written once for the CPU
 * (bbox_kernels.c) and the GPU (bbox_kernels.cu): the same rounded float
 * operations in the same order on both (the device side spells each as an
 * intrinsic; the C file turns contraction off). */
#ifndef LADLE_OPS_BBOX_BBOX_MATH_H
#define LADLE_OPS_BBOX_BBOX_MATH_H

#include <math.h>
#include <stdint.h>

#include "ops/bbox/bbox_kernels.h"
#include "ops/kernels/half.h"

#if defined(__CUDA_ARCH__)
#define LADLE__BMUL(a, b) __fmul_rn((a), (b))
#define LADLE__BADD(a, b) __fadd_rn((a), (b))
#define LADLE__BSUB(a, b) __fsub_rn((a), (b))
#define LADLE__BDIV(a, b) __fdiv_rn((a), (b))
#else
#define LADLE__BMUL(a, b) ((a) * (b))
#define LADLE__BADD(a, b) ((a) + (b))
#define LADLE__BSUB(a, b) ((a) - (b))
#define LADLE__BDIV(a, b) ((a) / (b))
#endif

static inline LADLE_HD float ladle__bmax(float a, float b) { return a > b ? a : b; }
static inline LADLE_HD float ladle__bmin(float a, float b) { return a < b ? a : b; }

/* Element k of a row of in_type as float. */
static inline LADLE_HD float ladle__points_load(const void *in, ladle_dtype t, int64_t k) {
  switch (t) {
    case LADLE_UINT8: return (float)((const uint8_t *)in)[k];
    case LADLE_INT16: return (float)((const int16_t *)in)[k];
    case LADLE_UINT16: return (float)((const uint16_t *)in)[k];
    case LADLE_INT32: return (float)((const int32_t *)in)[k];
    default: return ((const float *)in)[k];
  }
}

/* v rounded half away from zero and saturated to [lo, hi]; NaN -> 0
 * (DALI's ConvertSat). lo and hi are exact in float or one past it (int32). */
static inline LADLE_HD double ladle__points_sat(float v, float lo, float hi) {
  if (v != v) return 0;
  float r = roundf(v);
  if (r <= lo) return lo;
  if (r >= hi) return hi;
  return r;
}

static inline LADLE_HD void ladle__points_store(void *out, ladle_dtype t, int64_t k, float v) {
  switch (t) {
    case LADLE_UINT8: ((uint8_t *)out)[k] = (uint8_t)ladle__points_sat(v, 0.0f, 255.0f); break;
    case LADLE_INT16: ((int16_t *)out)[k] = (int16_t)ladle__points_sat(v, -32768.0f, 32767.0f); break;
    case LADLE_UINT16: ((uint16_t *)out)[k] = (uint16_t)ladle__points_sat(v, 0.0f, 65535.0f); break;
    case LADLE_INT32: {
      /* 2^31 is the first float above INT32_MAX. */
      double r = ladle__points_sat(v, -2147483648.0f, 2147483648.0f);
      ((int32_t *)out)[k] = r >= 2147483647.0 ? INT32_MAX : (int32_t)r;
      break;
    }
    default: ((float *)out)[k] = v; break;
  }
}

/* Row `row` of a point map (ladle__points_params' rules). */
static inline LADLE_HD void ladle__points_row(void *out, ladle_dtype out_type, const void *in, ladle_dtype in_type,
                                              int64_t row, const ladle__points_params *p) {
  const int64_t ib = row * p->in_dim, ob = row * p->out_dim;
  if (p->mode == LADLE__POINTS_BB_FLIP) {
    const float *b = (const float *)in + ib;
    float *o = (float *)out + ob;
    for (int a = 0; a < 2; a++) {
      float lo = b[a], hi = p->ltrb ? b[a + 2] : LADLE__BADD(b[a], b[a + 2]);
      if (p->flip[a]) {
        float nlo = LADLE__BSUB(1.0f, hi), nhi = LADLE__BSUB(1.0f, lo);
        lo = nlo, hi = nhi;
      }
      o[a] = lo;
      o[a + 2] = p->ltrb ? hi : LADLE__BSUB(hi, lo);
    }
    return;
  }
  if (p->mode == LADLE__POINTS_FLIP) {
    const float *x = (const float *)in + ib;
    float *o = (float *)out + ob;
    for (int k = 0; k < p->in_dim; k++) o[k] = p->flip[k] ? LADLE__BSUB(p->t[k], x[k]) : x[k];
    return;
  }
  float x[LADLE__POINT_MAX_DIM];
  for (int k = 0; k < p->in_dim; k++) x[k] = ladle__points_load(in, in_type, ib + k);
  for (int r = 0; r < p->out_dim; r++) {
    float v = LADLE__BMUL(p->m[r][0], x[0]);
    for (int k = 1; k < p->in_dim; k++) v = LADLE__BADD(v, LADLE__BMUL(p->m[r][k], x[k]));
    ladle__points_store(out, out_type, ob + r, LADLE__BADD(v, p->t[r]));
  }
}

/* IoU of two ltrb boxes: 0 unless they overlap (every side strictly), else
 * intersection / (area a + area b - intersection). */
static inline LADLE_HD float ladle__box_iou(const float *a, const float *b) {
  float l = ladle__bmax(a[0], b[0]), t = ladle__bmax(a[1], b[1]);
  float r = ladle__bmin(a[2], b[2]), bo = ladle__bmin(a[3], b[3]);
  if (!(r > l && bo > t)) return 0.0f;
  float inter = LADLE__BMUL(LADLE__BSUB(r, l), LADLE__BSUB(bo, t));
  float area_a = LADLE__BMUL(LADLE__BSUB(a[2], a[0]), LADLE__BSUB(a[3], a[1]));
  float area_b = LADLE__BMUL(LADLE__BSUB(b[2], b[0]), LADLE__BSUB(b[3], b[1]));
  return LADLE__BDIV(inter, LADLE__BSUB(LADLE__BADD(area_a, area_b), inter));
}

/* The encoded form of ltrb box `b` matched with ltrb anchor `a`. */
static inline LADLE_HD void ladle__box_encode_one(float *o, const float *b, const float *a,
                                                  const ladle__box_encoder_params *p) {
  float bc[2], be[2];
  for (int k = 0; k < 2; k++) {
    bc[k] = LADLE__BMUL(LADLE__BADD(b[k], b[k + 2]), 0.5f);
    be[k] = LADLE__BSUB(b[k + 2], b[k]);
  }
  if (!p->offset) {
    o[0] = bc[0], o[1] = bc[1], o[2] = be[0], o[3] = be[1];
    return;
  }
  for (int k = 0; k < 2; k++) {
    float ac = LADLE__BMUL(LADLE__BMUL(LADLE__BADD(a[k], a[k + 2]), 0.5f), p->scale);
    float ae = LADLE__BMUL(LADLE__BSUB(a[k + 2], a[k]), p->scale);
    float c = LADLE__BMUL(bc[k], p->scale), e = LADLE__BMUL(be[k], p->scale);
    o[k] = LADLE__BDIV(LADLE__BSUB(LADLE__BDIV(LADLE__BSUB(c, ac), ae), p->means[k]), p->stds[k]);
    o[k + 2] = LADLE__BDIV(LADLE__BSUB(logf(LADLE__BDIV(e, ae)), p->means[k + 2]), p->stds[k + 2]);
  }
}

/* An unmatched anchor's output: its centre and size, or zeros (offset). */
static inline LADLE_HD void ladle__box_encode_anchor(float *o, const float *a, const ladle__box_encoder_params *p) {
  for (int k = 0; k < 2; k++) {
    o[k] = p->offset ? 0.0f : LADLE__BMUL(LADLE__BADD(a[k], a[k + 2]), 0.5f);
    o[k + 2] = p->offset ? 0.0f : LADLE__BSUB(a[k + 2], a[k]);
  }
}

/* Anchor j's match: the last box of the highest IoU, a box's claimed anchor
 * (best_anchor) counting as IoU 2; -1 when that IoU is not above criteria. */
static inline LADLE_HD int64_t ladle__box_match(const float *boxes, int64_t nboxes, const float *anchor, int64_t j,
                                                const int *best_anchor, float criteria) {
  if (nboxes == 0) return -1;
  float best = best_anchor[0] == j ? 2.0f : ladle__box_iou(boxes, anchor);
  int64_t idx = 0;
  for (int64_t b = 1; b < nboxes; b++) {
    float v = best_anchor[b] == j ? 2.0f : ladle__box_iou(boxes + 4 * b, anchor);
    if (v >= best) best = v, idx = b;
  }
  return best > criteria ? idx : -1;
}

#endif
