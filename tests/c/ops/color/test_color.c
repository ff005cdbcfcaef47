/* The colour kernels' CPU references (ops/color/color_kernel.h) against
 * formulas evaluated here in double precision, on random images and random
 * parameters: every element within float rounding of the double result
 * (uint8/int32 outputs: the double result rounded half away from zero, or
 * one level off where the value lies within 1e-3 of a rounding tie), and
 * jitter's displacements inside DALI's range with the fill outside. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "test_random.h"
#include "ops/color/color_kernel.h"
#include "ops/color/color_pixel.h"
#include "ops/kernels/half.h"
#include "test.h"


/* The sum of the terms' magnitudes of the last ref_value: float rounding
 * errors scale with it, not with the (possibly cancelled) result. */
static double ref_scale;

static double ref_value(const ladle__color_params *p, const double *x, int o) {
  if (p->mode == LADLE__COLOR_SCALE) {
    ref_scale = fabs(x[o] * p->mul) + fabs(p->add);
    return x[o] * p->mul + p->add;
  }
  double v = p->off[o];
  ref_scale = fabs(v);
  for (int k = 0; k < p->in_c; k++) v += (double)p->m[o][k] * x[k], ref_scale += fabs((double)p->m[o][k] * x[k]);
  return v;
}

/* Is `got` (element of out_type) the value v, as the header's rules say? */
static int close_to(const void *out, ladle_dtype t, size_t i, double v) {
  switch (t) {
    case LADLE_UINT8: {
      double r = v <= 0 ? 0 : v >= 255 ? 255 : floor(v + 0.5);
      double frac = fabs(v - floor(v) - 0.5) - 1e-6 * ref_scale;
      double got = ((const uint8_t *)out)[i];
      return got == r || (frac < 1e-3 && fabs(got - r) <= 1);
    }
    case LADLE_INT32: {
      double r = v < 0 ? -floor(-v + 0.5) : floor(v + 0.5);
      r = r < -2147483648.0 ? -2147483648.0 : r > 2147483647.0 ? 2147483647.0 : r;
      double got = ((const int32_t *)out)[i];
      double slack = ref_scale > 1e6 ? ref_scale * 1e-6 : fabs(v - floor(v) - 0.5) < 1e-3 + 1e-6 * ref_scale ? 1 : 0;
      return fabs(got - r) <= slack;
    }
    case LADLE_FLOAT16: {
      double got = ladle__f16_to_f32(((const uint16_t *)out)[i]);
      return fabs(got - v) <= 1e-3 * fabs(v) + 1e-6 * ref_scale + 1e-4;
    }
    default: return fabs(((const float *)out)[i] - v) <= 1e-6 * ref_scale + 1e-6;
  }
}

static void random_params(ladle__color_params *p, int mode, int in_c) {
  memset(p, 0, sizeof *p);
  p->mode = mode;
  p->in_c = in_c;
  if (mode == LADLE__COLOR_SCALE) {
    p->out_c = in_c;
    p->mul = rnd_float(-2, 2);
    p->add = rnd_float(-100, 100);
    return;
  }
  p->out_c = rnd_int(1, 3);
  for (int i = 0; i < 3; i++) {
    for (int j = 0; j < 3; j++) p->m[i][j] = rnd_float(-1.5f, 1.5f);
    p->off[i] = rnd_float(-50, 200);
  }
  p->rev_in = rnd_int(0, 1);
  p->rev_out = rnd_int(0, 1);
}

static void test_color_apply(void) {
  static const ladle_dtype outs[] = {LADLE_UINT8, LADLE_FLOAT32, LADLE_FLOAT16, LADLE_INT32};
  static uint8_t in_u8[64 * 4];
  static float in_f[64 * 4];
  static uint8_t out[64 * 4 * 4];
  ladle__rng_init(&rng, 99, 1, 0, 0);
  for (int trial = 0; trial < 400; trial++) {
    int mode = trial % 2, in_c = mode == LADLE__COLOR_SCALE ? rnd_int(1, 4) : rnd_int(1, 3);
    int float_in = rnd_int(0, 1);
    ladle_dtype ot = outs[rnd_int(0, 3)];
    ladle__color_params p;
    random_params(&p, mode, in_c);
    size_t pixels = (size_t)rnd_int(1, 64);
    for (size_t i = 0; i < pixels * (size_t)in_c; i++) {
      in_u8[i] = (uint8_t)rnd();
      in_f[i] = rnd_float(-0.5f, 1.5f) * 255;
    }
    ladle__color_apply(out, ot, float_in ? (const void *)in_f : in_u8, float_in ? LADLE_FLOAT32 : LADLE_UINT8, pixels,
                       &p);
    int bad = 0;
    for (size_t px = 0; px < pixels; px++) {
      double x[4];
      for (int c = 0; c < in_c; c++) {
        int src = p.mode == LADLE__COLOR_MATRIX && p.rev_in ? in_c - 1 - c : c;
        x[c] = float_in ? in_f[px * in_c + src] : in_u8[px * in_c + src];
      }
      for (int o = 0; o < p.out_c; o++) {
        int dst = p.mode == LADLE__COLOR_MATRIX && p.rev_out ? p.out_c - 1 - o : o;
        if (!close_to(out, ot, px * p.out_c + dst, ref_value(&p, x, o))) bad++;
      }
    }
    CHECK(bad == 0);
    if (bad) fprintf(stderr, "  trial %d: mode %d, %d -> %d channels, out type %d: %d wrong\n", trial, mode, in_c,
                     p.out_c, (int)ot, bad);
  }
}

/* ladle__color_apply's RGB-bytes path gives the per-pixel function's bytes,
 * and the byte rounding is roundf's (every float of [0, 256) near a half,
 * and random ones). */
static void test_color_rgb_fast_path(void) {
  static uint8_t in[500 * 3], fast[500 * 3], slow[500 * 3];
  ladle__rng_init(&rng, 7, 1, 0, 0);
  for (int trial = 0; trial < 200; trial++) {
    ladle__color_params p;
    random_params(&p, LADLE__COLOR_MATRIX, 3);
    p.out_c = 3, p.rev_in = p.rev_out = 0;
    for (int i = 0; i < 500 * 3; i++) in[i] = (uint8_t)rnd();
    ladle__color_apply(fast, LADLE_UINT8, in, LADLE_UINT8, 500, &p);
    for (size_t px = 0; px < 500; px++) ladle__color_pixel(slow, LADLE_UINT8, in, LADLE_UINT8, px, &p);
    CHECK(!memcmp(fast, slow, sizeof fast));
  }
  int bad = 0;
  for (int k = 0; k < 256; k++)
    for (int d = -64; d <= 64; d++) {
      float v = nextafterf((float)k + 0.5f, d < 0 ? 0.0f : 512.0f);
      for (int j = 1; j < (d < 0 ? -d : d); j++) v = nextafterf(v, d < 0 ? 0.0f : 512.0f);
      if (d == 0) v = (float)k + 0.5f;
      uint8_t want = !(v > 0.0f) ? 0 : v >= 255.0f ? 255 : (uint8_t)roundf(v);
      bad += ladle__color_to_u8(v) != want;
    }
  for (int i = 0; i < 1000000; i++) {
    float v = rnd_float(-1.0f, 257.0f);
    bad += ladle__color_to_u8(v) != (!(v > 0.0f) ? 0 : v >= 255.0f ? 255 : (uint8_t)roundf(v));
  }
  CHECK(bad == 0);
}

/* Rounding and saturation at the edges: half away from zero, NaN -> 0. */
static void test_color_rounding(void) {
  ladle__color_params p = {.mode = LADLE__COLOR_SCALE, .in_c = 1, .out_c = 1, .mul = 1, .add = 0};
  const float in[] = {0.5f, 1.5f, 2.5f, -0.5f, 254.5f, 255.5f, 1e9f, -1e9f, NAN, 0.49999997f};
  const uint8_t want_u8[] = {1, 2, 3, 0, 255, 255, 255, 0, 0, 0};
  const int32_t want_i32[] = {1, 2, 3, -1, 255, 256, 1000000000, -1000000000, 0, 0};
  uint8_t u8[10];
  int32_t i32[10];
  ladle__color_apply(u8, LADLE_UINT8, in, LADLE_FLOAT32, 10, &p);
  ladle__color_apply(i32, LADLE_INT32, in, LADLE_FLOAT32, 10, &p);
  CHECK(!memcmp(u8, want_u8, sizeof u8));
  CHECK(!memcmp(i32, want_i32, sizeof i32));
  const float big[] = {3e9f, -3e9f};
  ladle__color_apply(i32, LADLE_INT32, big, LADLE_FLOAT32, 2, &p);
  CHECK(i32[0] == INT32_MAX && i32[1] == INT32_MIN);
}

static void test_jitter(void) {
  static uint8_t in[40 * 50 * 3], out[40 * 50 * 3], out2[40 * 50 * 3];
  ladle__rng_init(&rng, 99, 2, 0, 0);
  for (int trial = 0; trial < 40; trial++) {
    int h = rnd_int(1, 40), w = rnd_int(1, 50), c = rnd_int(1, 3), nd = rnd_int(1, 9);
    /* every pixel unique: its position in the first two bytes (c >= 2) */
    for (int i = 0; i < h * w; i++)
      for (int k = 0; k < c; k++) in[i * c + k] = k == 0 ? (uint8_t)(i % 251 + 1) : (uint8_t)(i / 251 + 1);
    uint32_t key[2] = {rnd(), rnd()};
    uint8_t fill[3] = {0, 0, 0};
    ladle__jitter(out, in, h, w, c, nd, key, fill, 1);
    int bad = 0, moved = 0;
    for (int y = 0; y < h; y++)
      for (int x = 0; x < w; x++) {
        const uint8_t *o = out + ((size_t)y * w + x) * c;
        if (o[0] == 0) continue; /* fill */
        if (c < 2) continue;
        int i = (o[0] - 1) + (o[1] - 1) * 251, sx = i % w, sy = i / w;
        int dx = sx - x, dy = sy - y;
        if (dx < -nd / 2 || dx > nd - 1 - nd / 2 || dy < -nd / 2 || dy > nd - 1 - nd / 2) bad++;
        moved += dx != 0 || dy != 0;
      }
    CHECK(bad == 0);
    if (nd == 1) CHECK(!memcmp(out, in, (size_t)h * w * c));
    if (nd >= 3 && h * w >= 100 && c >= 2) CHECK(moved > 0);
    ladle__jitter(out2, in, h, w, c, nd, key, fill, 1);
    CHECK(!memcmp(out, out2, (size_t)h * w * c));
    ladle__jitter(out2, in, h, w, c, nd, key, fill, 0);
    CHECK(!memcmp(out2, in, (size_t)h * w * c));
  }
}

int main(void) {
  RUN(test_color_apply);
  RUN(test_color_rounding);
  RUN(test_color_rgb_fast_path);
  RUN(test_jitter);
  TEST_MAIN_END();
}
