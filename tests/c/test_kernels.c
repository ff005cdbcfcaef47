/* Tests of the CPU image kernels (src/ops/kernels): half conversion, resampling
 * tables and kernels, crop_mirror_normalize, crop/flip and type conversion.
 * Run with "--bench" to also print timings (no timed assertions). */
/* The arithmetic is specified operation by operation (a CUDA kernel must
 * reproduce it bit for bit): never fuse a multiply and an add, whatever the
 * target or -ffp-contract default (gcc's GNU modes fuse when FMA exists). */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/error.h"
#include "test_random.h"
#include "ops/kernels/half.h"
#include "ops/geometry/normalize_kernel.h"
#include "ops/geometry/resize_kernel.h"
#include "test.h"


static void rng_reset(uint64_t test) { ladle__rng_init(&rng, 1234, test, 0, 0); }

static void fill_random(uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++) p[i] = (uint8_t)rnd();
}

/* ------------------------------------------------------------------------ */
/* half                                                                       */
/* ------------------------------------------------------------------------ */

/* The half nearest to f (ties to even), computed in double from the
 * definition: an independent reference for ladle__f32_to_f16. */
static uint16_t ref_f32_to_f16(float f) {
  uint16_t sign = signbit(f) ? 0x8000 : 0;
  double a = fabs((double)f);
  if (isnan(f)) return 0x7e00 | sign;
  if (a >= 65520.0) return 0x7c00 | sign;
  if (a < ldexp(1.0, -14)) return (uint16_t)(sign | (uint16_t)rint(a * ldexp(1.0, 24)));
  int ex;
  frexp(a, &ex); /* a = fr * 2^ex, fr in [0.5, 1) */
  int e = ex - 1;  /* a in [2^e, 2^(e+1)) */
  double q = rint(ldexp(a, 10 - e)); /* mantissa with the implicit bit, 1024..2048 */
  return (uint16_t)(sign | (((e + 15) << 10) + (int)q - 1024));
}

static double ref_f16_value(uint16_t h) {
  int e = (h >> 10) & 31, m = h & 1023;
  double v = e == 0 ? ldexp(m, -24) : ldexp(1024 + m, e - 25);
  return (h & 0x8000) ? -v : v;
}

static void test_half_exhaustive(void) {
  int bad_value = 0, bad_trip = 0;
  for (uint32_t i = 0; i < 65536; i++) {
    uint16_t h = (uint16_t)i;
    float f = ladle__f16_to_f32(h);
    int e = (h >> 10) & 31, m = h & 1023;
    if (e == 31) {
      if (m == 0 ? !(isinf(f) && !!signbit(f) == !!(h & 0x8000)) : !isnan(f)) bad_value++;
      uint16_t back = ladle__f32_to_f16(f);
      /* NaNs come back quiet with their payload; infinities exactly. */
      if (m == 0 ? back != h : back != (h | 0x0200)) bad_trip++;
      continue;
    }
    if ((double)f != ref_f16_value(h) || !!signbit(f) != !!(h & 0x8000)) bad_value++;
    if (ladle__f32_to_f16(f) != h) bad_trip++;
  }
  CHECK(bad_value == 0);
  CHECK(bad_trip == 0);
}

static void test_half_random(void) {
  rng_reset(1);
  int bad = 0;
  for (int i = 0; i < 2000000; i++) {
    float f;
    if (i & 1) {
      f = ladle__f32_from_bits(rnd()); /* any bit pattern */
    } else {
      /* the interesting range: subnormal halves to overflow */
      uint32_t b = (rnd() & 0x807fffffu) | ((uint32_t)rnd_int(127 - 26, 127 + 16) << 23);
      f = ladle__f32_from_bits(b);
    }
    uint16_t got = ladle__f32_to_f16(f), want = ref_f32_to_f16(f);
    if (isnan(f) ? ((got & 0x7fff) <= 0x7c00 || (got & 0x8000) != (want & 0x8000)) : got != want) {
      if (bad++ < 5) fprintf(stderr, "  f32_to_f16(%a) = 0x%04x, want 0x%04x\n", f, got, want);
    }
  }
  /* Every tie between two adjacent halves, and the values just around it. */
  for (uint32_t h = 0; h < 0x7c00; h++) {
    double lo = ref_f16_value((uint16_t)h), hi = h == 0x7bff ? 65536.0 : ref_f16_value((uint16_t)(h + 1));
    float mid = (float)((lo + hi) / 2); /* exact: halves have 11 significant bits */
    float around[3] = {nextafterf(mid, 0.0f), mid, nextafterf(mid, INFINITY)};
    for (int k = 0; k < 3; k++) {
      if (ladle__f32_to_f16(around[k]) != ref_f32_to_f16(around[k])) bad++;
      if (ladle__f32_to_f16(-around[k]) != ref_f32_to_f16(-around[k])) bad++;
    }
  }
  CHECK(bad == 0);
}

static void test_half_vs_compiler(void) {
#if defined(__FLT16_MAX__)
  rng_reset(2);
  int bad = 0;
  for (int i = 0; i < 1000000; i++) {
    float f = ladle__f32_from_bits(i < 65536 ? ((uint32_t)i << 16) | (rnd() & 0xffff) : rnd());
    _Float16 c = (_Float16)f;
    uint16_t cb;
    memcpy(&cb, &c, 2);
    uint16_t got = ladle__f32_to_f16(f);
    if (isnan(f) ? !isnan(ladle__f16_to_f32(got)) : got != cb) bad++;
  }
  for (uint32_t i = 0; i < 65536; i++) {
    uint16_t h = (uint16_t)i;
    _Float16 c;
    memcpy(&c, &h, 2);
    float a = ladle__f16_to_f32(h), b = (float)c;
    if (isnan(a) ? !isnan(b) : memcmp(&a, &b, 4) != 0) bad++;
  }
  CHECK(bad == 0);
#else
  fprintf(stderr, "  (_Float16 not supported by this compiler: skipped)\n");
#endif
}

/* ------------------------------------------------------------------------ */
/* resize                                                                     */
/* ------------------------------------------------------------------------ */

static const ladle__interp all_interps[] = {LADLE__INTERP_NN, LADLE__INTERP_LINEAR,
                                            LADLE__INTERP_CUBIC, LADLE__INTERP_LANCZOS3,
                                            LADLE__INTERP_TRIANGULAR, LADLE__INTERP_GAUSSIAN};
#define NUM_INTERPS 6

/* Resizes a whole u8 image (or window) with fresh plans and scratch. */
static void resize_u8(uint8_t *out, const uint8_t *in, int in_h, int in_w, int c, double x0,
                      double y0, double ww, double wh, int out_w, int out_h, ladle__interp ip,
                      int aa) {
  ladle__resize_axis ax, ay;
  CHECK_OK(ladle__resize_axis_plan(&ax, in_w, x0, ww, out_w, ip, aa));
  CHECK_OK(ladle__resize_axis_plan(&ay, in_h, y0, wh, out_h, ip, aa));
  void *scratch = malloc(ladle__resize_scratch_size(&ax, &ay, in_h, c));
  ladle__resize_u8(out, in, in_h, in_w * c, c, &ax, &ay, scratch);
  free(scratch);
  ladle__resize_axis_free(&ax);
  ladle__resize_axis_free(&ay);
}

/* Checks a table's invariants: in-bounds reads, weights summing to 1. */
static int axis_ok(const ladle__resize_axis *a, int in_size) {
  int ok = a->taps >= 1 && a->taps <= in_size && a->in_size == in_size;
  for (int i = 0; i < a->out_size && ok; i++) {
    double sum = 0, mag = 0;
    for (int k = 0; k < a->taps; k++) {
      sum += a->weights[i * a->taps + k];
      mag += fabs(a->weights[i * a->taps + k]);
    }
    /* Relative to the weights' size: a window far outside the input can cut
     * a cubic or Lanczos filter down to lobes that nearly cancel, and the
     * renormalised weights are then large (PIL behaves the same). */
    ok = a->start[i] >= 0 && a->start[i] + a->taps <= in_size && fabs(sum - 1.0) < 1e-7 * (mag > 1 ? mag : 1) &&
         a->start[i] >= a->in_lo && a->start[i] + a->taps <= a->in_hi;
  }
  return ok;
}

static void test_resize_plan_invariants(void) {
  rng_reset(3);
  int bad = 0;
  for (int t = 0; t < 3000; t++) {
    int in_size = rnd_int(1, 600), out_size = rnd_int(1, 600);
    double lo = (rnd_unit() - 0.3) * in_size, len = (0.01 + rnd_unit() * 1.5) * in_size;
    if (t % 3 == 0) lo = 0, len = in_size;
    ladle__interp ip = all_interps[t % NUM_INTERPS];
    ladle__resize_axis a;
    CHECK_OK(ladle__resize_axis_plan(&a, in_size, lo, len, out_size, ip, (t >> 1) & 1));
    if (!axis_ok(&a, in_size)) {
      if (bad++ < 5) fprintf(stderr, "  bad table: in %d out %d window %g+%g interp %d\n", in_size, out_size, lo, len, ip);
    }
    ladle__resize_axis_free(&a);
  }
  CHECK(bad == 0);
  ladle__resize_axis a;
  CHECK(ladle__resize_axis_plan(&a, 0, 0, 1, 1, LADLE__INTERP_LINEAR, 1) == LADLE_ERROR_INVALID_ARGUMENT);
  CHECK(ladle__resize_axis_plan(&a, 5, 0, 0, 1, LADLE__INTERP_LINEAR, 1) == LADLE_ERROR_INVALID_ARGUMENT);
  CHECK(ladle__resize_axis_plan(&a, 5, NAN, 1, 1, LADLE__INTERP_LINEAR, 1) == LADLE_ERROR_INVALID_ARGUMENT);
  CHECK(a.start == NULL && a.weights == NULL);
  ladle__resize_axis_free(&a);
  ladle__resize_axis_free(NULL);
}

/* The weights against textbook formulas, away from the borders. */
static void test_resize_weights_formulas(void) {
  int bad = 0;
  ladle__resize_axis a;
  /* Bilinear (no antialias): src = (i + 0.5) * s - 0.5, weights 1-f and f. */
  for (int out = 7; out <= 40; out += 11) {
    int in = 23;
    CHECK_OK(ladle__resize_axis_plan(&a, in, 0, in, out, LADLE__INTERP_LINEAR, 0));
    for (int i = 0; i < out; i++) {
      double s = (i + 0.5) * in / out - 0.5;
      if (s < 0 || s > in - 1) continue;
      int x0 = (int)floor(s);
      double f = s - x0;
      for (int k = 0; k < a.taps; k++) {
        int x = a.start[i] + k;
        double want = x == x0 ? 1 - f : x == x0 + 1 ? f : 0;
        if (fabs(a.weights[i * a.taps + k] - want) > 1e-6) bad++;
      }
    }
    ladle__resize_axis_free(&a);
  }
  /* Cubic upscale, interior: Keys a = -0.5 at distances 1+f, f, 1-f, 2-f. */
  CHECK_OK(ladle__resize_axis_plan(&a, 20, 0, 20, 57, LADLE__INTERP_CUBIC, 1));
  for (int i = 10; i < 47; i++) {
    double s = (i + 0.5) * 20 / 57 - 0.5;
    int x0 = (int)floor(s);
    double f = s - x0;
    double want[4];
    for (int m = -1; m <= 2; m++) {
      double d = fabs(m - f);
      want[m + 1] = d < 1 ? 1.5 * d * d * d - 2.5 * d * d + 1 : -0.5 * d * d * d + 2.5 * d * d - 4 * d + 2;
    }
    for (int k = 0; k < a.taps; k++) {
      int m = a.start[i] + k - x0;
      double w = m >= -1 && m <= 2 ? want[m + 1] : 0;
      if (fabs(a.weights[i * a.taps + k] - w) > 1e-6) bad++;
    }
  }
  ladle__resize_axis_free(&a);
  /* Antialiased 2x linear downscale: the triangle of support 2, [1 3 3 1]/8. */
  CHECK_OK(ladle__resize_axis_plan(&a, 20, 0, 20, 10, LADLE__INTERP_LINEAR, 1));
  CHECK(a.taps == 4);
  for (int i = 1; i < 9; i++) {
    const float *w = a.weights + i * 4;
    if (a.start[i] != 2 * i - 1 || w[0] != 0.125f || w[1] != 0.375f || w[2] != 0.375f || w[3] != 0.125f) bad++;
  }
  ladle__resize_axis_free(&a);
  CHECK(bad == 0);
}

static void test_resize_identity(void) {
  rng_reset(4);
  const int h = 37, w = 53;
  for (int c = 1; c <= 4; c++) {
    uint8_t *in = malloc((size_t)h * w * c), *out = malloc((size_t)h * w * c);
    fill_random(in, (size_t)h * w * c);
    for (int k = 0; k < NUM_INTERPS; k++) {
      memset(out, 0, (size_t)h * w * c);
      resize_u8(out, in, h, w, c, 0, 0, w, h, w, h, all_interps[k], 1);
      CHECK(memcmp(in, out, (size_t)h * w * c) == 0 || all_interps[k] == LADLE__INTERP_GAUSSIAN);
    }
    /* Identity tables have one tap of weight exactly 1. */
    ladle__resize_axis a;
    CHECK_OK(ladle__resize_axis_plan(&a, w, 0, w, w, LADLE__INTERP_LANCZOS3, 1));
    CHECK(a.taps == 1 && a.weights[5] == 1.0f && a.start[5] == 5);
    ladle__resize_axis_free(&a);
    /* float32 identity, with a row stride larger than the row */
    float *fi = malloc(sizeof(float) * h * (w + 3) * c), *fo = malloc(sizeof(float) * h * w * c);
    for (int i = 0; i < h * (w + 3) * c; i++) fi[i] = (float)rnd_unit() * 100 - 50;
    ladle__resize_axis ax, ay;
    CHECK_OK(ladle__resize_axis_plan(&ax, w, 0, w, w, LADLE__INTERP_CUBIC, 1));
    CHECK_OK(ladle__resize_axis_plan(&ay, h, 0, h, h, LADLE__INTERP_CUBIC, 1));
    void *scratch = malloc(ladle__resize_scratch_size(&ax, &ay, h, c));
    ladle__resize_f32(fo, fi, h, (w + 3) * c, c, &ax, &ay, scratch);
    int bad = 0;
    for (int y = 0; y < h; y++)
      if (memcmp(fo + (size_t)y * w * c, fi + (size_t)y * (w + 3) * c, sizeof(float) * w * c)) bad++;
    CHECK(bad == 0);
    free(scratch);
    ladle__resize_axis_free(&ax);
    ladle__resize_axis_free(&ay);
    free(fi);
    free(fo);
    free(in);
    free(out);
  }
}

static void test_resize_nn(void) {
  rng_reset(5);
  const int h = 31, w = 47, c = 3;
  uint8_t in[31 * 47 * 3], out[80 * 90 * 3];
  fill_random(in, sizeof in);
  int bad = 0;
  for (int t = 0; t < 20; t++) {
    int ow = rnd_int(1, 90), oh = rnd_int(1, 80);
    double x0 = rnd_unit() * 10 - 3, y0 = rnd_unit() * 10 - 3;
    double ww = 1 + rnd_unit() * 50, wh = 1 + rnd_unit() * 40;
    resize_u8(out, in, h, w, c, x0, y0, ww, wh, ow, oh, LADLE__INTERP_NN, 1);
    for (int y = 0; y < oh; y++)
      for (int x = 0; x < ow; x++) {
        int sx = (int)floor(x0 + (x + 0.5) * ww / ow), sy = (int)floor(y0 + (y + 0.5) * wh / oh);
        sx = sx < 0 ? 0 : sx >= w ? w - 1 : sx;
        sy = sy < 0 ? 0 : sy >= h ? h - 1 : sy;
        if (memcmp(out + (y * ow + x) * c, in + (sy * w + sx) * c, c)) bad++;
      }
  }
  CHECK(bad == 0);
}

static void test_resize_constant(void) {
  rng_reset(6);
  int bad = 0;
  for (int c = 1; c <= 4; c++)
    for (int k = 0; k < NUM_INTERPS; k++)
      for (int aa = 0; aa <= 1; aa++) {
        int h = rnd_int(1, 60), w = rnd_int(1, 60), oh = rnd_int(1, 70), ow = rnd_int(1, 70);
        uint8_t px[4] = {0, 255, (uint8_t)rnd(), (uint8_t)rnd()};
        uint8_t *in = malloc((size_t)h * w * c), *out = malloc((size_t)oh * ow * c);
        for (int i = 0; i < h * w; i++) memcpy(in + i * c, px, c);
        double x0 = rnd_unit() * w * 0.5 - 2, y0 = rnd_unit() * h * 0.5 - 2;
        resize_u8(out, in, h, w, c, x0, y0, w * (0.2 + rnd_unit()), h * (0.2 + rnd_unit()), ow, oh,
                  all_interps[k], aa);
        for (int i = 0; i < oh * ow; i++) bad += memcmp(out + i * c, px, c) != 0;
        free(in);
        free(out);
      }
  CHECK(bad == 0);
}

/* Naive application of the tables with the documented float arithmetic: the
 * kernels (ring of rows, padded channels, spans) must match it bit for bit. */
static void ref_apply(float *out, const float *in, int in_w, int c, const ladle__resize_axis *ax,
                      const ladle__resize_axis *ay, float bias) {
  for (int j = 0; j < ay->out_size; j++)
    for (int i = 0; i < ax->out_size; i++)
      for (int ch = 0; ch < c; ch++) {
        float v = bias;
        for (int ky = 0; ky < ay->taps; ky++) {
          int r = ay->start[j] + ky;
          float t = 0.0f;
          for (int kx = 0; kx < ax->taps; kx++)
            t += ax->weights[i * ax->taps + kx] * in[((size_t)r * in_w + ax->start[i] + kx) * c + ch];
          v += ay->weights[j * ay->taps + ky] * t;
        }
        out[((size_t)j * ax->out_size + i) * c + ch] = v;
      }
}

static void test_resize_matches_naive(void) {
  rng_reset(7);
  int bad_u8 = 0, bad_f32 = 0;
  for (int t = 0; t < 60; t++) {
    int c = rnd_int(1, 4), h = rnd_int(1, 70), w = rnd_int(1, 70), oh = rnd_int(1, 50), ow = rnd_int(1, 50);
    ladle__interp ip = all_interps[t % NUM_INTERPS];
    double x0 = (rnd_unit() - 0.2) * w, y0 = (rnd_unit() - 0.2) * h;
    double ww = (0.1 + rnd_unit()) * w, wh = (0.1 + rnd_unit()) * h;
    ladle__resize_axis ax, ay;
    CHECK_OK(ladle__resize_axis_plan(&ax, w, x0, ww, ow, ip, t & 1));
    CHECK_OK(ladle__resize_axis_plan(&ay, h, y0, wh, oh, ip, t & 1));
    size_t n_in = (size_t)h * w * c, n_out = (size_t)oh * ow * c;
    uint8_t *in8 = malloc(n_in), *out8 = malloc(n_out);
    float *inf = malloc(n_in * 4), *outf = malloc(n_out * 4), *ref = malloc(n_out * 4);
    fill_random(in8, n_in);
    for (size_t i = 0; i < n_in; i++) inf[i] = in8[i];
    void *scratch = malloc(ladle__resize_scratch_size(&ax, &ay, h, c));
    ladle__resize_u8(out8, in8, h, w * c, c, &ax, &ay, scratch);
    ladle__resize_f32(outf, inf, h, w * c, c, &ax, &ay, scratch);
    ref_apply(ref, inf, w, c, &ax, &ay, 0.0f);
    for (size_t i = 0; i < n_out; i++) {
      bad_f32 += memcmp(&outf[i], &ref[i], 4) != 0;
      bad_u8 += out8[i] != ladle__f32_to_u8(ref[i]);
    }
    free(scratch);
    free(in8);
    free(out8);
    free(inf);
    free(outf);
    free(ref);
    ladle__resize_axis_free(&ax);
    ladle__resize_axis_free(&ay);
  }
  CHECK(bad_u8 == 0);
  CHECK(bad_f32 == 0);
}

/* DALI's planner: in-bounds tables whose weights sum to 1 (float), and
 * kernels that apply them as the naive formula does, uint8 sums started at
 * 0.5 and truncated (ties up). */
static void test_resize_dali_matches_naive(void) {
  rng_reset(11);
  int bad_u8 = 0, bad_f32 = 0, bad_table = 0;
  for (int t = 0; t < 200; t++) {
    int c = rnd_int(1, 4), h = rnd_int(1, 70), w = rnd_int(1, 70), oh = rnd_int(1, 50), ow = rnd_int(1, 50);
    ladle__interp mn = all_interps[t % NUM_INTERPS], mg = all_interps[(t / NUM_INTERPS) % NUM_INTERPS];
    float lo[2], hi[2];
    const int in[2] = {w, h};
    for (int d = 0; d < 2; d++) {
      lo[d] = t % 3 == 0 ? 0.0f : (float)((rnd_unit() - 0.2) * in[d]);
      hi[d] = t % 3 == 0 ? (float)in[d] : lo[d] + (float)((0.1 + rnd_unit()) * in[d]);
      if (t % 7 == 1) { float x = lo[d]; lo[d] = hi[d]; hi[d] = x; } /* flipped */
    }
    ladle__resize_axis ax = {0}, ay = {0};
    CHECK_OK(ladle__resize_plan_dali(&ax, &ay, w, h, lo, hi, ow, oh, mn, mg, t & 1));
    CHECK(ay.round_up == LADLE__ROUND_UP || ay.round_up == LADLE__ROUND_DALI_ROWS);
    const size_t row = (size_t)ow * c, split = (size_t)ladle__resize_round_split(ay.round_up, row);
    for (int d = 0; d < 2; d++) {
      const ladle__resize_axis *a = d ? &ay : &ax;
      int ok = a->taps >= 1 && a->taps <= in[d] && a->out_size == (d ? oh : ow);
      for (int i = 0; i < a->out_size && ok; i++) {
        double sum = 0, mag = 0;
        for (int k = 0; k < a->taps; k++) sum += a->weights[i * a->taps + k], mag += fabs(a->weights[i * a->taps + k]);
        ok = a->start[i] >= a->in_lo && a->start[i] + a->taps <= a->in_hi && a->in_lo >= 0 && a->in_hi <= in[d] &&
             fabs(sum - 1.0) < 1e-5 * (mag > 1 ? mag : 1);
      }
      bad_table += !ok;
    }
    size_t n_in = (size_t)h * w * c, n_out = (size_t)oh * ow * c;
    uint8_t *in8 = malloc(n_in), *out8 = malloc(n_out);
    float *inf = malloc(n_in * 4), *outf = malloc(n_out * 4), *ref = malloc(n_out * 4), *ref8 = malloc(n_out * 4);
    fill_random(in8, n_in);
    for (size_t i = 0; i < n_in; i++) inf[i] = in8[i];
    void *scratch = malloc(ladle__resize_scratch_size(&ax, &ay, h, c));
    ladle__resize_u8(out8, in8, h, w * c, c, &ax, &ay, scratch);
    ladle__resize_f32(outf, inf, h, w * c, c, &ax, &ay, scratch);
    ref_apply(ref, inf, w, c, &ax, &ay, 0.0f);
    ref_apply(ref8, inf, w, c, &ax, &ay, 0.5f);
    for (size_t i = 0; i < n_out; i++) {
      bad_f32 += memcmp(&outf[i], &ref[i], 4) != 0;
      float v = ref8[i];
      uint8_t want = i % row >= split ? (v <= 0.0f ? 0 : v >= 255.0f ? 255 : (uint8_t)v) : ladle__f32_to_u8(ref[i]);
      bad_u8 += out8[i] != want;
    }
    free(scratch);
    free(in8);
    free(out8);
    free(inf);
    free(outf);
    free(ref);
    free(ref8);
    ladle__resize_axis_free(&ax);
    ladle__resize_axis_free(&ay);
  }
  CHECK(bad_table == 0);
  CHECK(bad_u8 == 0);
  CHECK(bad_f32 == 0);
  /* A tie rounds up: 2 -> 1 pixel of [1, 2] is 1.5 -> 2 (pil rounds it to even: 2, so use [2, 3] -> 2.5 -> 3). */
  ladle__resize_axis ax = {0}, ay = {0};
  const float lo[2] = {0, 0}, hi[2] = {2, 1};
  CHECK_OK(ladle__resize_plan_dali(&ax, &ay, 2, 1, lo, hi, 1, 1, LADLE__INTERP_LINEAR, LADLE__INTERP_LINEAR, 0));
  const uint8_t px[2] = {2, 3};
  uint8_t o = 0;
  void *scratch = malloc(ladle__resize_scratch_size(&ax, &ay, 1, 1));
  ladle__resize_u8(&o, px, 1, 2, 1, &ax, &ay, scratch);
  CHECK(o == 3);
  free(scratch);
  ladle__resize_axis_free(&ax);
  ladle__resize_axis_free(&ay);
}

/* Antialiased linear 2x downscale = the separable [1 3 3 1]/8 filter (PIL's
 * BILINEAR; not a 2x2 box average), borders renormalised to [3 3 1]/7. */
static void test_resize_half_linear(void) {
  rng_reset(8);
  const int h = 24, w = 32, c = 3;
  uint8_t in[24 * 32 * 3], out[12 * 16 * 3];
  fill_random(in, sizeof in);
  resize_u8(out, in, h, w, c, 0, 0, w, h, w / 2, h / 2, LADLE__INTERP_LINEAR, 1);
  double k[4] = {1, 3, 3, 1};
  int bad = 0;
  for (int y = 0; y < h / 2; y++)
    for (int x = 0; x < w / 2; x++)
      for (int ch = 0; ch < c; ch++) {
        double s = 0, ws = 0;
        for (int dy = 0; dy < 4; dy++)
          for (int dx = 0; dx < 4; dx++) {
            int sy = 2 * y - 1 + dy, sx = 2 * x - 1 + dx;
            if (sy < 0 || sy >= h || sx < 0 || sx >= w) continue;
            s += k[dy] * k[dx] * in[(sy * w + sx) * c + ch];
            ws += k[dy] * k[dx];
          }
        /* The border normalisation is per axis, which is the same product. */
        double want = s / ws;
        if (fabs(out[(y * (w / 2) + x) * c + ch] - want) > 0.5 + 1e-3) bad++;
      }
  CHECK(bad == 0);
}

/* A source window is a crop: the same pixels come out whether the window is
 * taken from the whole image or from a crop of it that contains the filter's
 * reach, and for NN (reach 0) from the crop itself. Dyadic windows keep the
 * double arithmetic exact, so the results must be identical. */
static void test_resize_window_equals_crop(void) {
  rng_reset(9);
  const int h = 64, w = 80, c = 3;
  uint8_t *in = malloc(h * w * c), *crop = malloc(h * w * c), *a = malloc(100 * 100 * c),
          *b = malloc(100 * 100 * c);
  fill_random(in, h * w * c);
  int bad = 0;
  for (int t = 0; t < 24; t++) {
    ladle__interp ip = all_interps[t % NUM_INTERPS];
    int aa = (t / NUM_INTERPS) & 1;
    /* window [wx, wx+ww) x [wy, wy+wh), quarter-pixel aligned */
    double wx = 20 + rnd_int(0, 40) / 4.0, wy = 18 + rnd_int(0, 40) / 4.0;
    double ww = 8 + rnd_int(0, 64) / 4.0, wh = 8 + rnd_int(0, 48) / 4.0;
    int ow = t & 1 ? 16 : 64, oh = t & 2 ? 16 : 32; /* down- and upscales, dyadic steps */
    /* the crop: the window plus a margin of 18 pixels (> any reach here), inside the image */
    int cx = (int)wx - 18, cy = (int)wy - 18;
    int cw = (int)ceil(wx + ww) + 18 - cx, ch = (int)ceil(wy + wh) + 18 - cy;
    if (cx < 0) cx = 0;
    if (cy < 0) cy = 0;
    if (cx + cw > w) cw = w - cx;
    if (cy + ch > h) ch = h - cy;
    for (int y = 0; y < ch; y++) memcpy(crop + y * cw * c, in + ((cy + y) * w + cx) * c, cw * c);
    resize_u8(a, in, h, w, c, wx, wy, ww, wh, ow, oh, ip, aa);
    resize_u8(b, crop, ch, cw, c, wx - cx, wy - cy, ww, wh, ow, oh, ip, aa);
    if (memcmp(a, b, ow * oh * c)) bad++;
    if (ip == LADLE__INTERP_NN) {
      /* integral window, crop exactly the window */
      int ix = (int)wx, iy = (int)wy, iw = (int)ww, ih = (int)wh;
      for (int y = 0; y < ih; y++) memcpy(crop + y * iw * c, in + ((iy + y) * w + ix) * c, iw * c);
      resize_u8(a, in, h, w, c, ix, iy, iw, ih, ow, oh, ip, aa);
      resize_u8(b, crop, ih, iw, c, 0, 0, iw, ih, ow, oh, ip, aa);
      if (memcmp(a, b, ow * oh * c)) bad++;
    }
  }
  CHECK(bad == 0);
  free(in);
  free(crop);
  free(a);
  free(b);
}

/* ------------------------------------------------------------------------ */
/* crop_mirror_normalize                                                     */
/* ------------------------------------------------------------------------ */

/* The straightforward loop the kernel's tables and spans must reproduce. */
static void ref_cmn(void *out, const uint8_t *in, int in_h, int in_w, int in_stride,
                    const ladle__cmn_params *p) {
  int oc = p->channels + (p->pad_output ? 1 : 0);
  size_t es = p->dtype == LADLE_UINT8 ? 1 : p->dtype == LADLE_FLOAT16 ? 2 : p->dtype == LADLE_INT64 ? 8 : 4;
  for (int y = 0; y < p->h; y++)
    for (int x = 0; x < p->w; x++)
      for (int ch = 0; ch < oc; ch++) {
        int sx = p->mirror ? p->x0 + p->w - 1 - x : p->x0 + x, sy = p->y0 + y;
        int inside = sx >= 0 && sx < in_w && sy >= 0 && sy < in_h;
        float v;
        if (ch == p->channels) v = 0.0f;
        else if (!inside) v = p->fill[ch];
        else {
          float mul = p->inv_std[ch] * p->scale;
          v = ((float)in[(size_t)sy * in_stride + (size_t)sx * p->channels + ch] - p->mean[ch]) * mul + p->shift;
        }
        size_t idx = p->chw ? ((size_t)ch * p->h + y) * p->w + x : ((size_t)y * p->w + x) * oc + ch;
        ladle__convert((uint8_t *)out + idx * es, p->dtype, &v, LADLE_FLOAT32, 1);
      }
}

static void test_cmn(void) {
  rng_reset(10);
  const ladle_dtype types[] = {LADLE_FLOAT32, LADLE_FLOAT16, LADLE_UINT8, LADLE_INT32, LADLE_INT64};
  int bad = 0;
  for (int t = 0; t < 400; t++) {
    ladle__cmn_params p;
    memset(&p, 0, sizeof p);
    int in_h = rnd_int(1, 40), in_w = rnd_int(1, 40);
    p.channels = rnd_int(1, 4);
    p.pad_output = p.channels < 4 ? rnd_int(0, 1) : 0;
    p.w = rnd_int(1, 50);
    p.h = rnd_int(1, 50);
    p.x0 = rnd_int(-20, in_w + 5);
    p.y0 = rnd_int(-20, in_h + 5);
    if (t % 4 == 0) { /* fully inside */
      p.w = rnd_int(1, in_w);
      p.h = rnd_int(1, in_h);
      p.x0 = rnd_int(0, in_w - p.w);
      p.y0 = rnd_int(0, in_h - p.h);
    }
    p.mirror = t & 1;
    p.chw = (t >> 1) & 1;
    p.dtype = types[(t >> 2) % 5];
    for (int ch = 0; ch < 4; ch++) {
      p.mean[ch] = (float)(rnd_unit() * 255);
      p.inv_std[ch] = (float)(1.0 / (1 + rnd_unit() * 80));
      p.fill[ch] = (float)(rnd_unit() * 300 - 20);
    }
    p.scale = t % 3 ? 1.0f : (float)(rnd_unit() * 200);
    p.shift = t % 5 ? 0.0f : (float)(rnd_unit() * 128);
    int stride = in_w * p.channels + rnd_int(0, 5);
    uint8_t *in = malloc((size_t)in_h * stride);
    fill_random(in, (size_t)in_h * stride);
    size_t n = (size_t)p.w * p.h * (p.channels + p.pad_output) * 8;
    uint8_t *a = malloc(n), *b = malloc(n);
    memset(a, 0xab, n);
    memset(b, 0xab, n);
    ladle__crop_mirror_normalize(a, in, in_h, in_w, stride, &p);
    ref_cmn(b, in, in_h, in_w, stride, &p);
    if (memcmp(a, b, n)) {
      if (bad++ < 5) fprintf(stderr, "  cmn mismatch: case %d\n", t);
    }
    free(in);
    free(a);
    free(b);
  }
  CHECK(bad == 0);

  /* One case by hand: a 2x2 RGB image, window 3x1 from x = -1 mirrored,
   * uint8 out: (v - 10) * 0.5 + 1, fill 7. */
  uint8_t img[2 * 2 * 3] = {10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 121};
  ladle__cmn_params p = {.x0 = -1, .y0 = 1, .w = 3, .h = 1, .mirror = 1, .channels = 3,
                         .mean = {10, 10, 10}, .inv_std = {0.5f, 0.5f, 0.5f}, .scale = 1, .shift = 1,
                         .fill = {7, 7, 7}, .dtype = LADLE_UINT8, .chw = 0, .pad_output = 1};
  uint8_t o[12];
  ladle__crop_mirror_normalize(o, img, 2, 2, 6, &p);
  /* output x: source 1-x: x=0 -> (1,1) = 100,110,121; x=1 -> (0,1) = 70,80,90; x=2 -> fill */
  uint8_t want[12] = {46, 51, 56, 0, 31, 36, 41, 0, 7, 7, 7, 0}; /* 56.5 -> 56 (ties to even) */
  CHECK(memcmp(o, want, 12) == 0);
}

/* ------------------------------------------------------------------------ */
/* crop + flip                                                                */
/* ------------------------------------------------------------------------ */

static void test_crop_flip(void) {
  rng_reset(11);
  int bad = 0;
  for (int t = 0; t < 300; t++) {
    int in_h = rnd_int(1, 30), in_w = rnd_int(1, 30), c = rnd_int(1, 4);
    size_t es = (size_t)1 << rnd_int(0, 3);
    int w = rnd_int(1, 40), h = rnd_int(1, 40), x0 = rnd_int(-15, in_w + 3), y0 = rnd_int(-15, in_h + 3);
    int fx = t & 1, fy = (t >> 1) & 1;
    size_t ps = c * es;
    uint8_t *in = malloc(in_h * in_w * ps), *out = malloc(h * w * ps);
    fill_random(in, in_h * in_w * ps);
    ladle__crop_flip_hwc(out, in, in_h, in_w, c, es, x0, y0, w, h, fx, fy, 0x5a);
    for (int y = 0; y < h; y++)
      for (int x = 0; x < w; x++) {
        int sx = fx ? x0 + w - 1 - x : x0 + x, sy = fy ? y0 + h - 1 - y : y0 + y;
        const uint8_t *o = out + (y * w + x) * ps;
        if (sx >= 0 && sx < in_w && sy >= 0 && sy < in_h) {
          bad += memcmp(o, in + (sy * in_w + sx) * ps, ps) != 0;
        } else {
          for (size_t k = 0; k < ps; k++) bad += o[k] != 0x5a;
        }
      }
    free(in);
    free(out);
  }
  CHECK(bad == 0);
}

/* ------------------------------------------------------------------------ */
/* convert                                                                    */
/* ------------------------------------------------------------------------ */

static void test_convert(void) {
  /* float -> uint8: ties to even, saturation, NaN -> 0 */
  float f[] = {-1.0f, -0.0f, 0.4f, 0.5f, 1.5f, 2.5f, 254.5f, 255.4f, 255.5f, 1e9f, -1e9f, NAN, INFINITY, -INFINITY, 3.49999f};
  uint8_t u8_want[] = {0, 0, 0, 0, 2, 2, 254, 255, 255, 255, 0, 0, 255, 0, 3};
  uint8_t u8[15];
  ladle__convert(u8, LADLE_UINT8, f, LADLE_FLOAT32, 15);
  CHECK(memcmp(u8, u8_want, 15) == 0);

  /* float -> int32 */
  float g[] = {-2.5f, -1.5f, -0.5f, 0.5f, 1.5f, 2147483520.0f, 2147483648.0f, -2147483648.0f, -3e9f, NAN, 1e30f, -7.7f};
  int32_t i32_want[] = {-2, -2, 0, 0, 2, 2147483520, INT32_MAX, INT32_MIN, INT32_MIN, 0, INT32_MAX, -8};
  int32_t i32[12];
  ladle__convert(i32, LADLE_INT32, g, LADLE_FLOAT32, 12);
  CHECK(memcmp(i32, i32_want, sizeof i32) == 0);

  /* float -> int64 */
  float g64[] = {9.3e18f, -9.3e18f, 9223371487098961920.0f, 16777217.0f, 0.5f, NAN};
  int64_t i64_want[] = {INT64_MAX, INT64_MIN, 9223371487098961920LL, 16777216, 0, 0};
  int64_t i64[6];
  ladle__convert(i64, LADLE_INT64, g64, LADLE_FLOAT32, 6);
  CHECK(memcmp(i64, i64_want, sizeof i64) == 0);

  /* integers narrowing: saturate */
  int64_t big[] = {-5, 0, 200, 300, INT64_MAX, INT64_MIN, 3000000000LL};
  uint8_t b8[7];
  int32_t b32[7];
  ladle__convert(b8, LADLE_UINT8, big, LADLE_INT64, 7);
  ladle__convert(b32, LADLE_INT32, big, LADLE_INT64, 7);
  uint8_t b8_want[] = {0, 0, 200, 255, 255, 0, 255};
  int32_t b32_want[] = {-5, 0, 200, 300, INT32_MAX, INT32_MIN, INT32_MAX};
  CHECK(memcmp(b8, b8_want, 7) == 0);
  CHECK(memcmp(b32, b32_want, sizeof b32) == 0);
  int32_t s32[] = {-1, 256, 17};
  ladle__convert(b8, LADLE_UINT8, s32, LADLE_INT32, 3);
  CHECK(b8[0] == 0 && b8[1] == 255 && b8[2] == 17);

  /* to and from float16 */
  int32_t hi[] = {65504, 65519, 65520, -70000, 2049, 2051};
  uint16_t h[6];
  ladle__convert(h, LADLE_FLOAT16, hi, LADLE_INT32, 6);
  CHECK(h[0] == 0x7bff && h[1] == 0x7bff && h[2] == 0x7c00 && h[3] == 0xfc00);
  CHECK(ladle__f16_to_f32(h[4]) == 2048.0f && ladle__f16_to_f32(h[5]) == 2052.0f); /* ties to even */
  uint16_t hv[] = {0x3c00, 0x3800, 0x3e00, 0x7c00, 0xfc00, 0x7e00, 0xc2a8};
  uint8_t h8[7];
  int32_t h32[7];
  float hf[7];
  ladle__convert(h8, LADLE_UINT8, hv, LADLE_FLOAT16, 7);
  ladle__convert(h32, LADLE_INT32, hv, LADLE_FLOAT16, 7);
  ladle__convert(hf, LADLE_FLOAT32, hv, LADLE_FLOAT16, 7);
  uint8_t h8_want[] = {1, 0, 2, 255, 0, 0, 0};
  int32_t h32_want[] = {1, 0, 2, INT32_MAX, INT32_MIN, 0, -3};
  CHECK(memcmp(h8, h8_want, 7) == 0);
  CHECK(memcmp(h32, h32_want, sizeof h32) == 0);
  CHECK(hf[0] == 1.0f && hf[1] == 0.5f && hf[2] == 1.5f && isinf(hf[3]) && hf[4] < 0 && isnan(hf[5]) &&
        hf[6] == -3.328125f);

  /* uint8 -> everything and back, over a long run crossing the chunk size */
  enum { N = 1500 };
  uint8_t src[N], back[N];
  rng_reset(12);
  fill_random(src, N);
  const ladle_dtype types[] = {LADLE_INT32, LADLE_FLOAT32, LADLE_FLOAT16, LADLE_INT64, LADLE_UINT8};
  static uint8_t mid[N * 8];
  for (int k = 0; k < 5; k++) {
    memset(back, 0, N);
    ladle__convert(mid, types[k], src, LADLE_UINT8, N);
    ladle__convert(back, LADLE_UINT8, mid, types[k], N);
    CHECK(memcmp(src, back, N) == 0);
  }
  /* int64 -> float32 rounds to nearest even */
  int64_t l[] = {16777217, 16777219, -16777217};
  float lf[3];
  ladle__convert(lf, LADLE_FLOAT32, l, LADLE_INT64, 3);
  CHECK(lf[0] == 16777216.0f && lf[1] == 16777220.0f && lf[2] == -16777216.0f);
}

/* ------------------------------------------------------------------------ */
/* Timings (only with --bench)                                               */
/* ------------------------------------------------------------------------ */

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void bench_resize(const char *label, int in_h, int in_w, double x0, double y0, double ww,
                         double wh, ladle__interp ip, int aa) {
  const int c = 3, oh = 224, ow = 224;
  uint8_t *in = malloc((size_t)in_h * in_w * c), *out = malloc(oh * ow * c);
  fill_random(in, (size_t)in_h * in_w * c);
  ladle__resize_axis ax, ay;
  double t0 = now_s();
  int reps = 0;
  while (now_s() - t0 < 0.3) {
    ladle__resize_axis_plan(&ax, in_w, x0, ww, ow, ip, aa);
    ladle__resize_axis_plan(&ay, in_h, y0, wh, oh, ip, aa);
    ladle__resize_axis_free(&ax);
    ladle__resize_axis_free(&ay);
    reps++;
  }
  double plan_us = (now_s() - t0) / reps * 1e6;
  ladle__resize_axis_plan(&ax, in_w, x0, ww, ow, ip, aa);
  ladle__resize_axis_plan(&ay, in_h, y0, wh, oh, ip, aa);
  void *scratch = malloc(ladle__resize_scratch_size(&ax, &ay, in_h, c));
  ladle__resize_u8(out, in, in_h, in_w * c, c, &ax, &ay, scratch);
  double best = 1e9;
  for (int round = 0; round < 5; round++) {
    t0 = now_s();
    for (int r = 0; r < 50; r++) ladle__resize_u8(out, in, in_h, in_w * c, c, &ax, &ay, scratch);
    double t = (now_s() - t0) / 50;
    if (t < best) best = t;
  }
  fprintf(stderr, "  resize %-38s taps %dx%d: %7.1f us/image (+ plan %5.1f us)\n", label, ax.taps,
          ay.taps, best * 1e6, plan_us);
  free(scratch);
  ladle__resize_axis_free(&ax);
  ladle__resize_axis_free(&ay);
  free(in);
  free(out);
}

static void bench_cmn(const char *label, ladle_dtype dt, int chw, int mirror) {
  const int in_h = 256, in_w = 256, c = 3;
  uint8_t *in = malloc(in_h * in_w * c);
  void *out = malloc(224 * 224 * 4 * 4);
  fill_random(in, in_h * in_w * c);
  ladle__cmn_params p = {.x0 = 16, .y0 = 16, .w = 224, .h = 224, .mirror = mirror, .channels = 3,
                         .mean = {123.675f, 116.28f, 103.53f}, .inv_std = {1 / 58.395f, 1 / 57.12f, 1 / 57.375f},
                         .scale = 1, .shift = 0, .dtype = dt, .chw = chw};
  double best = 1e9;
  for (int round = 0; round < 5; round++) {
    double t0 = now_s();
    for (int r = 0; r < 100; r++) ladle__crop_mirror_normalize(out, in, in_h, in_w, in_w * c, &p);
    double t = (now_s() - t0) / 100;
    if (t < best) best = t;
  }
  fprintf(stderr, "  cmn 224x224x3 %-28s %7.1f us/image\n", label, best * 1e6);
  free(in);
  free(out);
}

static void bench_all(void) {
  rng_reset(99);
  bench_resize("375x500 -> 224x224 LINEAR aa", 375, 500, 0, 0, 500, 375, LADLE__INTERP_LINEAR, 1);
  bench_resize("375x500 -> 224x224 LINEAR no aa", 375, 500, 0, 0, 500, 375, LADLE__INTERP_LINEAR, 0);
  bench_resize("375x500 -> 224x224 CUBIC aa", 375, 500, 0, 0, 500, 375, LADLE__INTERP_CUBIC, 1);
  bench_resize("375x500 -> 224x224 LANCZOS3 aa", 375, 500, 0, 0, 500, 375, LADLE__INTERP_LANCZOS3, 1);
  bench_resize("window 400x400 of 600x800 LINEAR aa", 600, 800, 123.4, 87.9, 400, 400, LADLE__INTERP_LINEAR, 1);
  bench_resize("100x80 -> 224x224 LINEAR (upscale)", 80, 100, 0, 0, 100, 80, LADLE__INTERP_LINEAR, 1);
  bench_cmn("-> float16 CHW", LADLE_FLOAT16, 1, 0);
  bench_cmn("-> float16 CHW mirrored", LADLE_FLOAT16, 1, 1);
  bench_cmn("-> float32 CHW", LADLE_FLOAT32, 1, 0);
  bench_cmn("-> float16 HWC", LADLE_FLOAT16, 0, 0);
  bench_cmn("-> uint8 HWC", LADLE_UINT8, 0, 0);
}

int main(int argc, char **argv) {
  RUN(test_half_exhaustive);
  RUN(test_half_random);
  RUN(test_half_vs_compiler);
  RUN(test_resize_plan_invariants);
  RUN(test_resize_weights_formulas);
  RUN(test_resize_identity);
  RUN(test_resize_nn);
  RUN(test_resize_constant);
  RUN(test_resize_matches_naive);
  RUN(test_resize_dali_matches_naive);
  RUN(test_resize_half_linear);
  RUN(test_resize_window_equals_crop);
  RUN(test_cmn);
  RUN(test_crop_flip);
  RUN(test_convert);
  if (argc > 1 && strcmp(argv[1], "--bench") == 0) bench_all();
  TEST_MAIN_END();
}
