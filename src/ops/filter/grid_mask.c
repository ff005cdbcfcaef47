/* grid_mask: zeroes a grid of squares of HWC images (GridMask): pixel (x, y)
 * is kept where either rotated coordinate's fraction,
 *   fx = x * cos(angle)/tile - y * sin(angle)/tile - shift_x/tile,
 *   fy = x * sin(angle)/tile + y * cos(angle)/tile - shift_y/tile,
 * is >= ratio; computed in float in DALI's order. */
#include <math.h>
#include <string.h>

#include "ops/filter/filter.h"

enum { GM_RATIO, GM_ANGLE, GM_TILE, GM_SHIFT_X, GM_SHIFT_Y, GM_COUNT };
static const ladle_arg_schema grid_args[GM_COUNT] = {
    [GM_RATIO] = {LADLE_FLOAT_ARG("ratio", 0.5), .per_sample = 1, LADLE_RANGE(0.0, 1.0),
        .doc = "Fraction of a tile's side that is black (each axis)."},
    [GM_ANGLE] = {LADLE_FLOAT_ARG("angle", 0.0), .per_sample = 1, .doc = "Rotation of the grid, in radians."},
    [GM_TILE] = {LADLE_INT_ARG("tile", 100), .per_sample = 1, LADLE_RANGE(1, 1e9), .doc = "Tile side, in pixels."},
    [GM_SHIFT_X] = {LADLE_FLOAT_ARG("shift_x", 0.0), .per_sample = 1, .doc = "Shift of the grid along x, in pixels."},
    [GM_SHIFT_Y] = {LADLE_FLOAT_ARG("shift_y", 0.0), .per_sample = 1, .doc = "Shift of the grid along y, in pixels."},
};

static ladle_status grid_init(ladle__node *n) {
  const ladle__out_desc *in = &n->in[0];
  if (in->ndim != 3 || (in->layout[0] && strcmp(in->layout, "HWC") != 0))
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "needs HWC images (got %d-D, layout \"%s\")", in->ndim,
                         in->layout);
  if (in->dtype == LADLE_FLOAT16) return LADLE_OP_FAIL(n, LADLE_ERROR_UNSUPPORTED, "float16 input is not supported");
  n->out[0] = *in;
  return LADLE_OK;
}

static ladle_status grid_setup(ladle__node *n, ladle__sample *s) {
  ladle__set_shape(n, s, 0, ladle__input(n, s, 0).shape);
  return LADLE_OK;
}

static ladle_status grid_run(ladle__node *n, ladle__sample *s) {
  ladle__tensor in = ladle__input(n, s, 0), out = ladle__output(n, s, 0);
  float ratio = (float)ladle__arg_float(n, s, GM_RATIO), angle = (float)ladle__arg_float(n, s, GM_ANGLE);
  int tile = (int)ladle__arg_int(n, s, GM_TILE);
  float ca = cosf(angle) / (float)tile, sa = sinf(angle) / (float)tile;
  float sx = (float)ladle__arg_float(n, s, GM_SHIFT_X) / (float)tile, sy = (float)ladle__arg_float(n, s, GM_SHIFT_Y) / (float)tile;
  int64_t h = in.shape[0], w = in.shape[1], c = in.shape[2];
  size_t es = ladle_dtype_size(in.dtype);
  const uint8_t *src = in.data;
  uint8_t *dst = out.data;
  for (int64_t y = 0; y < h; y++) {
    float fxy = -sx + (float)y * -sa, fyy = -sy + (float)y * ca;
    for (int64_t x = 0; x < w; x++) {
      float fx = fxy + (float)x * ca, fy = fyy + (float)x * sa;
      int keep = (fx - floorf(fx) >= ratio) || (fy - floorf(fy) >= ratio);
      size_t off = (size_t)((y * w + x) * c) * es;
      if (keep) memcpy(dst + off, src + off, (size_t)c * es);
      else memset(dst + off, 0, (size_t)c * es);
    }
  }
  return LADLE_OK;
}

const ladle__op_def ladle__op_grid_mask = {
    .schema = {.name = "grid_mask",
               .doc = "GridMask: zeroes a rotated, shifted grid of squares (ratio of each tile) of HWC images.",
               .min_inputs = 1, .max_inputs = 1, .num_outputs = 1, .devices = LADLE_ON_CPU,
               .num_args = GM_COUNT, .args = grid_args},
    .init = grid_init,
    .setup = grid_setup,
    .run = grid_run,
};
