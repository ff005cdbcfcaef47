/* The bbox kernels' CPU references (ops/bbox/bbox_kernels.h): hand-computed
 * flips and conversions, the affine map against a double-precision product,
 * and the SSD encoder on a case worked out by hand. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "bbox_random.h"
#include "test.h"

static void test_bb_flip(void) {
  ladle__points_params p;
  memset(&p, 0, sizeof p);
  p.mode = LADLE__POINTS_BB_FLIP, p.in_dim = p.out_dim = 4, p.ltrb = 1, p.flip[0] = 1, p.flip[1] = 0;
  const float in[8] = {0.1f, 0.2f, 0.4f, 0.5f, 0.0f, 0.0f, 1.0f, 1.0f};
  float out[8];
  ladle__points_apply(out, LADLE_FLOAT32, in, LADLE_FLOAT32, 2, &p);
  CHECK(out[0] == 1.0f - 0.4f && out[1] == 0.2f && out[2] == 1.0f - 0.1f && out[3] == 0.5f);
  CHECK(out[4] == 0.0f && out[5] == 0.0f && out[6] == 1.0f && out[7] == 1.0f);
  /* xywh through ltrb: x' = 1 - (x + w), w' = (1 - x) - x'; y unflipped: h' = (y + h) - y. */
  p.ltrb = 0, p.flip[1] = 0;
  const float box[4] = {0.1f, 0.2f, 0.3f, 0.25f};
  ladle__points_apply(out, LADLE_FLOAT32, box, LADLE_FLOAT32, 1, &p);
  float r = 0.1f + 0.3f;
  CHECK(out[0] == 1.0f - r && out[2] == (1.0f - 0.1f) - (1.0f - r) && out[1] == 0.2f && out[3] == (0.2f + 0.25f) - 0.2f);
  /* Flipping twice gives the box back (within an ulp of 1). */
  ladle__rng_init(&rng, 1, 1, 0, 0);
  float b[400], once[400], twice[400];
  random_boxes(b, 100);
  p.ltrb = 1, p.flip[0] = p.flip[1] = 1;
  ladle__points_apply(once, LADLE_FLOAT32, b, LADLE_FLOAT32, 100, &p);
  ladle__points_apply(twice, LADLE_FLOAT32, once, LADLE_FLOAT32, 100, &p);
  int close = 1;
  for (int i = 0; i < 400; i++) close &= fabsf(twice[i] - b[i]) <= 1.2e-7f;
  CHECK(close);
  ladle__points_apply(out, LADLE_FLOAT32, b, LADLE_FLOAT32, 0, &p); /* no rows: nothing to do */
}

static void test_coord_flip(void) {
  ladle__points_params p;
  memset(&p, 0, sizeof p);
  p.mode = LADLE__POINTS_FLIP, p.in_dim = p.out_dim = 3, p.flip[0] = 1, p.flip[2] = 1;
  p.t[0] = 2.0f * 0.5f, p.t[2] = 2.0f * 0.25f;
  const float in[3] = {0.2f, 0.3f, 0.1f};
  float out[3];
  ladle__points_apply(out, LADLE_FLOAT32, in, LADLE_FLOAT32, 1, &p);
  CHECK(out[0] == 1.0f - 0.2f && out[1] == 0.3f && out[2] == 0.5f - 0.1f);
}

static void test_affine(void) {
  ladle__rng_init(&rng, 2, 1, 0, 0);
  for (int trial = 0; trial < 200; trial++) {
    ladle__points_params p;
    random_points_params(&p, LADLE__POINTS_AFFINE);
    float in[50 * 6], out[50 * 6];
    int rows = rnd_int(0, 50);
    for (int i = 0; i < rows * p.in_dim; i++) in[i] = rnd_float(-100, 100);
    ladle__points_apply(out, LADLE_FLOAT32, in, LADLE_FLOAT32, rows, &p);
    int ok = 1;
    for (int r = 0; r < rows; r++)
      for (int o = 0; o < p.out_dim; o++) {
        double v = p.t[o], mag = fabs(p.t[o]);
        for (int k = 0; k < p.in_dim; k++) {
          v += (double)p.m[o][k] * in[r * p.in_dim + k];
          mag += fabs((double)p.m[o][k] * in[r * p.in_dim + k]);
        }
        ok &= fabs(out[r * p.out_dim + o] - v) <= 4e-7 * mag * p.in_dim + 1e-30;
      }
    CHECK(ok);
  }
  /* Integer outputs: rounded half away from zero, saturated, NaN -> 0. */
  ladle__points_params p;
  memset(&p, 0, sizeof p);
  p.mode = LADLE__POINTS_AFFINE, p.in_dim = p.out_dim = 1, p.m[0][0] = 1;
  const float vals[] = {0.5f, -0.5f, 2.5f, -1.5f, 1e10f, -1e10f, NAN, 254.5f, 3e9f};
  const int16_t want16[] = {1, -1, 3, -2, 32767, -32768, 0, 255, 32767};
  const uint8_t want8[] = {1, 0, 3, 0, 255, 0, 0, 255, 255};
  const int32_t want32[] = {1, -1, 3, -2, INT32_MAX, INT32_MIN, 0, 255, INT32_MAX};
  int16_t o16[9];
  uint8_t o8[9];
  int32_t o32[9];
  ladle__points_apply(o16, LADLE_INT16, vals, LADLE_FLOAT32, 9, &p);
  ladle__points_apply(o8, LADLE_UINT8, vals, LADLE_FLOAT32, 9, &p);
  ladle__points_apply(o32, LADLE_INT32, vals, LADLE_FLOAT32, 9, &p);
  CHECK(!memcmp(o16, want16, sizeof o16));
  CHECK(!memcmp(o8, want8, sizeof o8));
  CHECK(!memcmp(o32, want32, sizeof o32));
  /* Integer inputs are read as float. */
  const uint16_t u16[2] = {65535, 7};
  float f[2];
  p.t[0] = 0.5f;
  ladle__points_apply(f, LADLE_FLOAT32, u16, LADLE_UINT16, 2, &p);
  CHECK(f[0] == 65535.5f && f[1] == 7.5f);
}

static void test_box_encode(void) {
  const float anchors[12] = {0, 0, 0.5f, 0.5f, 0.5f, 0.5f, 1, 1, 0, 0.5f, 0.5f, 1};
  const float boxes[8] = {0.05f, 0.05f, 0.5f, 0.5f, 0.9f, 0.9f, 0.95f, 0.95f};
  const int32_t labels[2] = {7, 9};
  float out[12];
  int32_t out_labels[3];
  int best[2];
  ladle__box_encoder_params p = {.criteria = 0.5f, .offset = 0, .scale = 1, .means = {0}, .stds = {1, 1, 1, 1}};
  ladle__box_encode(out, out_labels, boxes, labels, 2, anchors, 3, &p, best);
  /* Box 0: IoU 0.81 with anchor 0; box 1 (IoU 0.01 with anchor 1) claims it all the same. */
  CHECK(best[0] == 0 && best[1] == 1);
  CHECK(out_labels[0] == 7 && out_labels[1] == 9 && out_labels[2] == 0);
  CHECK(out[0] == (0.05f + 0.5f) * 0.5f && out[2] == 0.5f - 0.05f);
  CHECK(out[4] == (0.9f + 0.95f) * 0.5f && out[6] == 0.95f - 0.9f);
  CHECK(out[8] == 0.25f && out[9] == 0.75f && out[10] == 0.5f && out[11] == 0.5f); /* anchor 2 unmatched */
  p.offset = 1, p.stds[2] = p.stds[3] = 0.2f;
  ladle__box_encode(out, out_labels, boxes, labels, 2, anchors, 3, &p, best);
  CHECK(fabsf(out[0] - (0.275f - 0.25f) / 0.5f) < 1e-7f && fabsf(out[2] - logf(0.45f / 0.5f) / 0.2f) < 1e-6f);
  CHECK(out[8] == 0 && out[9] == 0 && out[10] == 0 && out[11] == 0 && out_labels[2] == 0);
  /* No boxes: every anchor unmatched. */
  ladle__box_encode(out, out_labels, boxes, labels, 0, anchors, 3, &p, best);
  CHECK(out_labels[0] == 0 && out[0] == 0);
}

int main(void) {
  RUN(test_bb_flip);
  RUN(test_coord_flip);
  RUN(test_affine);
  RUN(test_box_encode);
  TEST_MAIN_END();
}
