/* CPU kernels of warp_affine, rotate and paste (warp_kernel.h); the
 * per-pixel arithmetic is in warp_sample.h, shared with the CUDA kernel. */
/* Never fuse a multiply and an add: the CUDA kernel rounds each one. */
#include "core/no_fma.h"

#include "ops/geometry/warp_kernel.h"

#include <math.h>
#include <string.h>

#include "ops/geometry/warp_sample.h"

void ladle__warp_fill(ladle__warp_params *p, double fill) {
  p->fill_out = warp_convert((float)fill, p->out_type);
  p->fill_in = warp_convert(p->fill_out, p->in_type);
}

void ladle__warp_affine(void *out, const void *in, const ladle__warp_params *p) {
  for (int y = 0; y < p->out_h; y++)
    for (int x = 0; x < p->out_w; x++) warp_pixel(out, in, p, x, y);
}

int ladle__affine_invert(float out[6], const double m[6]) {
  double det = m[0] * m[4] - m[1] * m[3];
  if (!(fabs(det) > 1e-300) || !isfinite(det)) return -1;
  double a = m[4] / det, b = -m[1] / det, c = -m[3] / det, d = m[0] / det;
  out[0] = (float)a;
  out[1] = (float)b;
  out[2] = (float)(-(a * m[2] + b * m[5]));
  out[3] = (float)c;
  out[4] = (float)d;
  out[5] = (float)(-(c * m[2] + d * m[5]));
  return 0;
}

void ladle__paste(uint8_t *out, const uint8_t *in, const ladle__paste_params *p) {
  size_t C = (size_t)p->channels, row = (size_t)p->out_w * C;
  for (int y = 0; y < p->out_h; y++) {
    uint8_t *o = out + (size_t)y * row;
    int iy = y - p->y0;
    for (size_t i = 0; i < row; i++) o[i] = p->fill[i % C];
    if (iy >= 0 && iy < p->in_h)
      memcpy(o + (size_t)p->x0 * C, in + (size_t)iy * (size_t)p->in_w * C, (size_t)p->in_w * C);
  }
}
