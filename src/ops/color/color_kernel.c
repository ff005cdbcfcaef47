/* CPU references of the colour kernels (color_kernel.h). */

/* The same operations as the CUDA kernel: no contraction into FMA, whatever
 * the target (gcc's GNU modes fuse when the CPU has FMA). Before the
 * includes, so that color_pixel.h's inline functions get it too. */
#include "core/no_fma.h"

#include <string.h>

#include "ops/color/color_pixel.h"

/* The common case (hsv, brightness_contrast, colour twists on RGB bytes):
 * ladle__color_pixel's operations in its order, with the types and channel
 * counts known to the compiler. */
static void color_rgb_u8(uint8_t *out, const uint8_t *in, size_t pixels, const ladle__color_params *p) {
  for (size_t px = 0; px < pixels; px++) {
    const float x[3] = {(float)in[3 * px], (float)in[3 * px + 1], (float)in[3 * px + 2]};
    for (int o = 0; o < 3; o++) {
      float v = LADLE__CADD(LADLE__CADD(LADLE__CADD(LADLE__CMUL(p->m[o][0], x[0]), LADLE__CMUL(p->m[o][1], x[1])),
                                        LADLE__CMUL(p->m[o][2], x[2])),
                            p->off[o]);
      out[3 * px + (size_t)o] = ladle__color_to_u8(v);
    }
  }
}

void ladle__color_apply(void *out, ladle_dtype out_type, const void *in, ladle_dtype in_type, size_t pixels,
                        const ladle__color_params *p) {
  if (p->mode == LADLE__COLOR_MATRIX && in_type == LADLE_UINT8 && out_type == LADLE_UINT8 && p->in_c == 3 &&
      p->out_c == 3 && !p->rev_in && !p->rev_out) {
    color_rgb_u8(out, in, pixels, p);
    return;
  }
  for (size_t px = 0; px < pixels; px++) ladle__color_pixel(out, (int)out_type, in, (int)in_type, px, p);
}

void ladle__jitter(uint8_t *out, const uint8_t *in, int h, int w, int pixel_bytes, int n_degree, const uint32_t key[2],
                   const uint8_t *fill, int mask) {
  size_t ps = (size_t)pixel_bytes;
  if (!mask) {
    memcpy(out, in, (size_t)h * (size_t)w * ps);
    return;
  }
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      int sx, sy;
      const uint8_t *src = ladle__jitter_source(x, y, h, w, n_degree, key, &sx, &sy)
                               ? in + ((size_t)sy * (size_t)w + (size_t)sx) * ps
                               : fill;
      memcpy(out + ((size_t)y * (size_t)w + (size_t)x) * ps, src, ps);
    }
}
