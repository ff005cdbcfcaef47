/* Random point maps and encoder inputs shared by the bbox kernel tests. */
#ifndef LADLE_TESTS_BBOX_RANDOM_H
#define LADLE_TESTS_BBOX_RANDOM_H

#include <string.h>

#include "test_random.h"
#include "ops/bbox/bbox_kernels.h"


/* n ltrb boxes inside [0, 1]. */
static void random_boxes(float *b, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    for (int a = 0; a < 2; a++) {
      float u = rnd_float(0, 1), v = rnd_float(0, 1);
      b[4 * i + a] = u < v ? u : v;
      b[4 * i + a + 2] = u < v ? v : u;
    }
  }
}

/* A random point map of `mode` (AFFINE dims 1..6 -> 1..6). */
static void random_points_params(ladle__points_params *p, int mode) {
  memset(p, 0, sizeof *p);
  p->mode = mode;
  p->in_dim = mode == LADLE__POINTS_BB_FLIP ? 4 : mode == LADLE__POINTS_FLIP ? rnd_int(1, 3) : rnd_int(1, 6);
  p->out_dim = mode == LADLE__POINTS_AFFINE ? rnd_int(1, 6) : p->in_dim;
  p->ltrb = rnd_int(0, 1);
  for (int r = 0; r < LADLE__POINT_MAX_DIM; r++) {
    p->flip[r] = rnd_int(0, 1);
    p->t[r] = rnd_float(-300, 300);
    for (int c = 0; c < LADLE__POINT_MAX_DIM; c++) p->m[r][c] = rnd_float(-3, 3);
  }
}

#endif
