/* equalize's arithmetic, shared by the CPU operator (equalize.c) and the
 * CUDA kernels (equalize_kernel.cu): a sample is `hists` planes (frame x
 * channel) of `pixels` uint8 values, plane h pixel p at
 * (h / channels) * frame_stride + (h % channels) * chan_stride + p * pix_stride.
 * Each plane is equalized as OpenCV's equalizeHist (which DALI follows):
 * with N pixels and c0 the count of the smallest value present,
 * lut[v] = round_half_even((cdf[v] - c0) * (255.0 / (N - c0))) clamped to
 * [0, 255]; a plane of one value is left as it is. */
#ifndef LADLE_OPS_COLOR_EQUALIZE_CORE_H
#define LADLE_OPS_COLOR_EQUALIZE_CORE_H

#include <stdint.h>

#include "ops/kernels/dtype.h"

typedef struct ladle__equalize_desc {
  const uint8_t *in;
  uint8_t *out;
  uint32_t *hist; /* GPU: hists * 256 counters (device scratch) */
  uint8_t *lut;   /* GPU: hists * 256 entries (device scratch) */
  int64_t hists, channels, pixels, frame_stride, chan_stride, pix_stride;
} ladle__equalize_desc;

LADLE__DT_INLINE int64_t ladle__equalize_offset(const ladle__equalize_desc *d, int64_t h, int64_t p) {
  return (h / d->channels) * d->frame_stride + (h % d->channels) * d->chan_stride + p * d->pix_stride;
}

#if defined(__CUDA_ARCH__)
#define LADLE__EQ_MUL(a, b) __dmul_rn((a), (b))
#else
#define LADLE__EQ_MUL(a, b) ((a) * (b))
#endif

/* The table's entry for a value whose cumulative count is cdf, in a plane
 * whose smallest value present has c0 pixels; scale = 255.0 / (N - c0). */
LADLE__DT_INLINE uint8_t ladle__equalize_entry(int64_t cdf, int64_t c0, double scale) {
  double x = ladle__round_even_f64(LADLE__EQ_MUL((double)(cdf - c0), scale));
  return (uint8_t)(x < 0 ? 0 : x > 255 ? 255 : x);
}

/* lut[0..256) of a plane from its histogram. */
LADLE__DT_INLINE void ladle__equalize_lut(uint8_t *lut, const uint32_t *hist) {
  int64_t total = 0, c0 = 0, cdf = 0;
  for (int v = 0; v < 256; v++) {
    if (!c0) c0 = hist[v];
    total += hist[v];
  }
  if (total == c0) {
    for (int v = 0; v < 256; v++) lut[v] = (uint8_t)v;
    return;
  }
  const double scale = 255.0 / (double)(total - c0);
  for (int v = 0; v < 256; v++) {
    cdf += hist[v];
    lut[v] = ladle__equalize_entry(cdf, c0, scale);
  }
}

#endif
