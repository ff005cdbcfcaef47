/* grid_mask: zeroes a grid of squares of HWC images (GridMask): pixel (x, y)
 * is kept where either rotated coordinate's fraction,
 *   fx = x * cos(angle)/tile - y * sin(angle)/tile - shift_x/tile,
 *   fy = x * sin(angle)/tile + y * cos(angle)/tile - shift_y/tile,
 * is >= ratio; computed in float in DALI's order. */
#include <math.h>
#include <string.h>

#include "ops/filter/filter.h"
#include "ops/filter/filter_kernels.h"

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

/* The sample's parameters, as DALI computes them (float). */
static ladle__gpu_grid_desc grid_desc(const ladle__node *n, const ladle__sample *s) {
  ladle__tensor in = ladle__input(n, s, 0), out = ladle__output(n, s, 0);
  float angle = (float)ladle__arg_float(n, s, GM_ANGLE), tile = (float)(int)ladle__arg_int(n, s, GM_TILE);
  ladle__gpu_grid_desc d = {in.data, out.data, in.shape[0], in.shape[1], in.shape[2], (int)ladle_dtype_size(in.dtype),
                            cosf(angle) / tile, sinf(angle) / tile, (float)ladle__arg_float(n, s, GM_SHIFT_X) / tile,
                            (float)ladle__arg_float(n, s, GM_SHIFT_Y) / tile, (float)ladle__arg_float(n, s, GM_RATIO)};
  return d;
}

static ladle_status grid_run(ladle__node *n, ladle__sample *s) {
  ladle__gpu_grid_desc d = grid_desc(n, s);
  size_t ps = (size_t)d.c * (size_t)d.elem_size;
  const uint8_t *src = d.in;
  uint8_t *dst = d.out;
  for (int64_t y = 0; y < d.h; y++) {
    float fxy = -d.sx + (float)y * -d.sa, fyy = -d.sy + (float)y * d.ca;
    for (int64_t x = 0; x < d.w; x++) {
      float fx = fxy + (float)x * d.ca, fy = fyy + (float)x * d.sa;
      int keep = (fx - floorf(fx) >= d.ratio) || (fy - floorf(fy) >= d.ratio);
      size_t off = (size_t)(y * d.w + x) * ps;
      if (keep) memcpy(dst + off, src + off, ps);
      else memset(dst + off, 0, ps);
    }
  }
  return LADLE_OK;
}

#ifdef LADLE_HAVE_CUDA
static ladle_status grid_run_batch(ladle__node *n, ladle__gpu *g) {
  int batch = n->config->batch_size;
  ladle__gpu_grid_desc *d = NULL;
  void *host = NULL, *dev = NULL;
  size_t bytes = ladle__gpu_grid_param_bytes(batch);
  LADLE_TRY_OP(ladle__scratch(n, &(ladle__sample){.worker = 0}, sizeof *d * (size_t)batch, (void **)&d));
  for (int i = 0; i < batch; i++) d[i] = grid_desc(n, &(ladle__sample){.slot = i});
  LADLE_TRY_OP(ladle__gpu_params(g, bytes, &host, &dev));
  return ladle__gpu_grid_mask(d, batch, host, dev, bytes, g->stream);
}
#define GRID_RUN_BATCH grid_run_batch
#else
#define GRID_RUN_BATCH NULL
#endif

const ladle__op_def ladle__op_grid_mask = {
    .schema = {.name = "grid_mask",
               .doc = "GridMask: zeroes a rotated, shifted grid of squares (ratio of each tile) of HWC images.",
               .min_inputs = 1, .max_inputs = 1, .num_outputs = 1, .devices = LADLE_ON_CPU_GPU,
               .num_args = GM_COUNT, .args = grid_args},
    .init = grid_init,
    .setup = grid_setup,
    .run = grid_run,
    .run_batch = GRID_RUN_BATCH,
};
