/* The DALI planner split into geometry and tables (ladle__resize_geom_dali,
 * ladle__resize_axis_from_dali; the GPU builds the tables from the same
 * geometry): on random windows (crops, the whole image, around and outside
 * it, flipped), sizes and filters, the tables lie inside the image, their
 * row length stays within ladle__resize_dali_max_taps (the room the GPU
 * launcher reserves), weights of a pixel sum to 1, and the tables equal
 * ladle__resize_plan_dali's bit for bit. Bad geometries fail. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ops/geometry/resize_kernel.h"
#include "test.h"
#include "test_random.h"

static int same_axis(const ladle__resize_axis *a, const ladle__resize_axis *b) {
  return a->out_size == b->out_size && a->taps == b->taps && a->in_size == b->in_size && a->in_lo == b->in_lo &&
         a->in_hi == b->in_hi && a->round_up == b->round_up &&
         memcmp(a->start, b->start, sizeof *a->start * (size_t)a->out_size) == 0 &&
         memcmp(a->weights, b->weights, sizeof *a->weights * (size_t)a->out_size * a->taps) == 0;
}

static void check_axis(const ladle__resize_axis *t, const ladle__resize_dali_axis *g) {
  CHECK(t->taps >= 1 && t->taps <= ladle__resize_dali_max_taps(g) && t->taps <= t->in_size);
  for (int i = 0; i < t->out_size; i++) {
    CHECK(t->start[i] >= 0 && t->start[i] + t->taps <= t->in_size);
    double sum = 0;
    for (int k = 0; k < t->taps; k++) sum += t->weights[(size_t)i * t->taps + k];
    CHECK(fabs(sum - 1.0) < 1e-3);
  }
}

static void test_random_geometries(void) {
  for (int it = 0; it < 3000; it++) {
    const int in[2] = {rnd_int(1, it % 10 ? 300 : 2000), rnd_int(1, it % 10 ? 300 : 2000)};
    float lo[2], hi[2];
    int out[2];
    for (int d = 0; d < 2; d++) {
      double l = 0, len = in[d];
      switch (rnd_int(0, 3)) {
        case 0: break;
        case 1: len = rnd_range(0.08, 1.0) * in[d], l = rnd_range(0, in[d] - len); break;
        case 2: l = rnd_range(-0.3, 0.8) * in[d], len = rnd_range(0.05, 1.3) * in[d]; break;
        default: l = rnd_int(0, 1) ? -rnd_range(1, 9) : in[d] + rnd_range(0, 9), len = rnd_range(0.5, 4); break;
      }
      if (len < 0.25) len = 0.25;
      lo[d] = (float)l, hi[d] = (float)(l + len);
      if (rnd_int(0, 4) == 0) { float t = lo[d]; lo[d] = hi[d]; hi[d] = t; }
      out[d] = rnd_int(0, 3) == 0 ? 1 : (int)fmax(1, fmin(3000, len * rnd_range(0.02, 5.0)));
    }
    ladle__interp mn = (ladle__interp)rnd_int(0, 5), mg = (ladle__interp)rnd_int(0, 5);
    int aa = rnd_int(0, 1);
    ladle__resize_dali_geom g;
    ladle__resize_axis ax = {0}, ay = {0}, bx = {0}, by = {0};
    CHECK_OK(ladle__resize_geom_dali(&g, in[0], in[1], lo, hi, out[0], out[1], mn, mg, aa));
    CHECK(g.x.in_size == in[0] && g.y.in_size == in[1] && g.x.out_size == out[0] && g.y.out_size == out[1]);
    CHECK(g.x.clo >= 0 && g.x.clo <= g.x.chi && g.x.chi < in[0] && g.y.clo >= 0 && g.y.clo <= g.y.chi &&
          g.y.chi < in[1]);
    CHECK_OK(ladle__resize_axis_from_dali(&ax, &g.x, g.round_up));
    CHECK_OK(ladle__resize_axis_from_dali(&ay, &g.y, g.round_up));
    CHECK_OK(ladle__resize_plan_dali(&bx, &by, in[0], in[1], lo, hi, out[0], out[1], mn, mg, aa));
    check_axis(&ax, &g.x);
    check_axis(&ay, &g.y);
    CHECK(same_axis(&ax, &bx) && same_axis(&ay, &by));
    ladle__resize_axis_free(&ax);
    ladle__resize_axis_free(&ay);
    ladle__resize_axis_free(&bx);
    ladle__resize_axis_free(&by);
  }
}

static void test_bad_geometry(void) {
  ladle__resize_dali_geom g;
  const float lo[2] = {0, 0}, hi[2] = {10, 10}, nan_hi[2] = {NAN, 10};
  CHECK(ladle__resize_geom_dali(&g, 0, 10, lo, hi, 5, 5, LADLE__INTERP_LINEAR, LADLE__INTERP_LINEAR, 1) ==
        LADLE_ERROR_INVALID_ARGUMENT);
  CHECK(ladle__resize_geom_dali(&g, 10, 10, lo, hi, 5, 0, LADLE__INTERP_LINEAR, LADLE__INTERP_LINEAR, 1) ==
        LADLE_ERROR_INVALID_ARGUMENT);
  CHECK(ladle__resize_geom_dali(&g, 10, 10, lo, nan_hi, 5, 5, LADLE__INTERP_LINEAR, LADLE__INTERP_LINEAR, 1) ==
        LADLE_ERROR_INVALID_ARGUMENT);
}

int main(void) {
  ladle__rng_init(&rng, 5, 9, 0, 0);
  RUN(test_random_geometries);
  RUN(test_bad_geometry);
  TEST_MAIN_END();
}
