/* fn.filter's arithmetic, shared by the CPU operator (conv_filter.c) and the
 * CUDA kernel (filter_kernels.cu): a 2-D correlation (the filter is not
 * flipped, as DALI's) of every channel of every frame, in float, the taps
 * taken row by row, each product and sum rounded (no fused multiply-add),
 * the result stored with dtype.h's rules (integers: nearest even,
 * saturated). */
#ifndef LADLE_OPS_FILTER_CONV_CORE_H
#define LADLE_OPS_FILTER_CONV_CORE_H

#include <stdint.h>

#include "ops/kernels/dtype.h"

enum { LADLE__BORDER_REFLECT_101, LADLE__BORDER_REFLECT_1001, LADLE__BORDER_WRAP, LADLE__BORDER_CLAMP,
       LADLE__BORDER_CONSTANT };

typedef struct ladle__conv_desc {
  const void *in;
  void *out;
  const float *taps;  /* r * s filter values, row-major */
  int in_type, out_type, border, channel_last;
  int r, s, ay, ax;   /* filter extents and anchor (output (y, x) reads rows y - ay ...) */
  int64_t frames, channels, h, w, out_h, out_w;
  float fill;
} ladle__conv_desc;

#if defined(__CUDA_ARCH__)
#define LADLE__CV_FMA(acc, a, b) __fadd_rn((acc), __fmul_rn((a), (b)))
#else
#define LADLE__CV_FMA(acc, a, b) ((acc) + (a) * (b))
#endif

/* Index i mapped into [0, n) by the border mode; -1: outside (constant). */
LADLE__DT_INLINE int64_t ladle__conv_border(int64_t i, int64_t n, int border) {
  if (i >= 0 && i < n) return i;
  switch (border) {
    case LADLE__BORDER_CONSTANT: return -1;
    case LADLE__BORDER_CLAMP: return i < 0 ? 0 : n - 1;
    case LADLE__BORDER_WRAP: i %= n; return i < 0 ? i + n : i;
    case LADLE__BORDER_REFLECT_1001: {
      int64_t period = 2 * n;
      i %= period;
      if (i < 0) i += period;
      return i >= n ? period - 1 - i : i;
    }
    default: {
      if (n == 1) return 0;
      int64_t period = 2 * n - 2;
      i %= period;
      if (i < 0) i += period;
      return i >= n ? period - i : i;
    }
  }
}

LADLE__DT_INLINE float ladle__conv_load(const void *p, int64_t i, int t) {
  return ladle__dtype_is_float(t) ? ladle__load_f32(p, (size_t)i, t) : (float)ladle__load_i64(p, (size_t)i, t);
}

/* Output element e (in the output's memory order) of a sample. */
LADLE__DT_INLINE void ladle__conv_element(const ladle__conv_desc *d, int64_t e) {
  int64_t c, x, y, f;
  if (d->channel_last) {
    c = e % d->channels;
    x = (e / d->channels) % d->out_w;
    y = (e / (d->channels * d->out_w)) % d->out_h;
    f = e / (d->channels * d->out_w * d->out_h);
  } else {
    x = e % d->out_w;
    y = (e / d->out_w) % d->out_h;
    c = (e / (d->out_w * d->out_h)) % d->channels;
    f = e / (d->out_w * d->out_h * d->channels);
  }
  const int64_t plane = d->channel_last ? f * d->h * d->w * d->channels + c : (f * d->channels + c) * d->h * d->w;
  const int64_t step = d->channel_last ? d->channels : 1;
  float acc = 0;
  for (int i = 0; i < d->r; i++) {
    const int64_t yy = ladle__conv_border(y - d->ay + i, d->h, d->border);
    for (int j = 0; j < d->s; j++) {
      const int64_t xx = ladle__conv_border(x - d->ax + j, d->w, d->border);
      const float v = yy < 0 || xx < 0 ? d->fill : ladle__conv_load(d->in, plane + (yy * d->w + xx) * step, d->in_type);
      acc = LADLE__CV_FMA(acc, d->taps[i * d->s + j], v);
    }
  }
  ladle__store_f32(d->out, (size_t)e, d->out_type, acc);
}

#endif
