/* The CPU kernels of warp_affine/rotate and paste (ops/geometry/warp_kernel.h)
 * against hand-computed results: identity and integer shifts are exact copies,
 * a half-pixel shift averages neighbours, NN upscaling repeats pixels, borders
 * clamp or fill, fill values convert as DALI converts them, affine inversion,
 * paste against a naive loop. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "ops/geometry/warp_kernel.h"
#include "test.h"

static ladle__rng rng;

static ladle__warp_params params(int in_h, int in_w, int out_h, int out_w, int c, const float m[6], int linear) {
  ladle__warp_params p = {{m[0], m[1], m[2], m[3], m[4], m[5]}, in_h, in_w, out_h, out_w, c, 0, 0, linear, 0, 0, 0};
  return p;
}

static void random_image(uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++) p[i] = (uint8_t)ladle__rng_u32(&rng);
}

static void test_identity_and_shift(void) {
  enum { H = 13, W = 17, C = 3 };
  uint8_t in[H * W * C], out[H * W * C];
  random_image(in, sizeof in);
  static const float id[6] = {1, 0, 0, 0, 1, 0};
  for (int linear = 0; linear < 2; linear++) {
    ladle__warp_params p = params(H, W, H, W, C, id, linear);
    ladle__warp_affine(out, in, &p);
    CHECK(memcmp(out, in, sizeof in) == 0);
    /* dst(x, y) = src(x + 3, y - 2), fill 7 outside */
    const float shift[6] = {1, 0, 3, 0, 1, -2};
    p = params(H, W, H, W, C, shift, linear);
    p.use_fill = 1;
    ladle__warp_fill(&p, 7);
    ladle__warp_affine(out, in, &p);
    int bad = 0;
    for (int y = 0; y < H; y++)
      for (int x = 0; x < W; x++)
        for (int c = 0; c < C; c++) {
          int sx = x + 3, sy = y - 2;
          int want = sx < W && sy >= 0 ? in[(sy * W + sx) * C + c] : 7;
          bad += out[(y * W + x) * C + c] != want;
        }
    CHECK(bad == 0);
    /* clamped border: the last column repeats */
    p.use_fill = 0;
    ladle__warp_affine(out, in, &p);
    CHECK(out[(5 * W + W - 1) * C] == in[(3 * W + W - 1) * C]);
    CHECK(out[0] == in[0 * W * C + 3 * C]);
  }
}

static void test_half_pixel_and_nn(void) {
  const uint8_t in[4] = {0, 10, 11, 250};
  uint8_t out[4];
  const float half[6] = {1, 0, 0.5f, 0, 1, 0}; /* samples between pixels */
  ladle__warp_params p = params(1, 4, 1, 4, 1, half, 1);
  ladle__warp_affine(out, in, &p);
  CHECK(out[0] == 5 && out[1] == 11 && out[2] == 131 && out[3] == 250); /* 10.5 and 130.5 round up */
  float fout[4];
  p.out_type = LADLE__WARP_F32;
  ladle__warp_affine(fout, in, &p);
  CHECK(fout[0] == 5.0f && fout[1] == 10.5f && fout[2] == 130.5f && fout[3] == 250.0f);
  /* NN 2x upscale: dst -> src halves the coordinates */
  enum { H = 5, W = 6 };
  uint8_t img[H * W], big[2 * H * 2 * W];
  random_image(img, sizeof img);
  const float up[6] = {0.5f, 0, 0, 0, 0.5f, 0};
  p = params(H, W, 2 * H, 2 * W, 1, up, 0);
  ladle__warp_affine(big, img, &p);
  int bad = 0;
  for (int y = 0; y < 2 * H; y++)
    for (int x = 0; x < 2 * W; x++) bad += big[y * 2 * W + x] != img[(y / 2) * W + x / 2];
  CHECK(bad == 0);
}

static void test_fill_conversion(void) {
  ladle__warp_params p;
  memset(&p, 0, sizeof p);
  ladle__warp_fill(&p, 3.5);
  CHECK(p.fill_out == 4 && p.fill_in == 4);
  ladle__warp_fill(&p, 300);
  CHECK(p.fill_out == 255);
  ladle__warp_fill(&p, -2.5);
  CHECK(p.fill_out == 0);
  p.out_type = LADLE__WARP_F32;
  ladle__warp_fill(&p, 3.7);
  CHECK(p.fill_out == 3.7f && p.fill_in == 4); /* float out, uint8 taps */
  p.in_type = LADLE__WARP_F32;
  ladle__warp_fill(&p, -3.7);
  CHECK(p.fill_out == -3.7f && p.fill_in == -3.7f);
}

static void test_invert(void) {
  const double m[6] = {1.5, 0.25, -3, -0.5, 2, 7};
  float inv[6];
  CHECK(ladle__affine_invert(inv, m) == 0);
  /* inv(m(p)) == p */
  double x = 3.25, y = -1.5, u = m[0] * x + m[1] * y + m[2], v = m[3] * x + m[4] * y + m[5];
  CHECK(fabs(inv[0] * u + inv[1] * v + inv[2] - x) < 1e-5);
  CHECK(fabs(inv[3] * u + inv[4] * v + inv[5] - y) < 1e-5);
  const double singular[6] = {1, 2, 0, 2, 4, 1};
  CHECK(ladle__affine_invert(inv, singular) != 0);
}

static void test_paste(void) {
  for (int trial = 0; trial < 20; trial++) {
    int h = 1 + (int)ladle__rng_below(&rng, 9), w = 1 + (int)ladle__rng_below(&rng, 9);
    int c = 1 + (int)ladle__rng_below(&rng, 4);
    int oh = h + (int)ladle__rng_below(&rng, 6), ow = w + (int)ladle__rng_below(&rng, 6);
    ladle__paste_params p = {h, w, oh, ow, c, (int)ladle__rng_below(&rng, (uint64_t)(ow - w + 1)),
                             (int)ladle__rng_below(&rng, (uint64_t)(oh - h + 1)), {11, 22, 33, 44}};
    uint8_t in[9 * 9 * 4], out[14 * 14 * 4];
    random_image(in, sizeof in);
    ladle__paste(out, in, &p);
    int bad = 0;
    for (int y = 0; y < oh; y++)
      for (int x = 0; x < ow; x++)
        for (int k = 0; k < c; k++) {
          int iy = y - p.y0, ix = x - p.x0;
          int want = iy >= 0 && iy < h && ix >= 0 && ix < w ? in[(iy * w + ix) * c + k] : p.fill[k];
          bad += out[(y * ow + x) * c + k] != want;
        }
    CHECK(bad == 0);
  }
}

int main(void) {
  ladle__rng_init(&rng, 99, 1, 0, 0);
  RUN(test_identity_and_shift);
  RUN(test_half_pixel_and_nn);
  RUN(test_fill_conversion);
  RUN(test_invert);
  RUN(test_paste);
  TEST_MAIN_END();
}
