/* Output sizes of resize, following DALI's documented rules. */
#include "ops/geometry/resize_params.h"

#include <math.h>

ladle_status ladle__resize_size_params_init(ladle__node *n, ladle__resize_size_params *p, int arg_x, int arg_y,
                                            int arg_size, int arg_shorter, int arg_longer, int arg_mode,
                                            int arg_max_size) {
  *p = (ladle__resize_size_params){arg_x, arg_y, arg_size, arg_shorter, arg_longer, LADLE__RESIZE_DEFAULT, 0, 0};
  p->mode = (ladle__resize_mode)ladle__arg_choice(n, arg_mode); /* "default", "stretch", "not_smaller", "not_larger" */
  int xy = ladle__arg_given(n, arg_x) || ladle__arg_given(n, arg_y);
  int size = ladle__arg_given(n, arg_size);
  int shorter = ladle__arg_given(n, arg_shorter), longer = ladle__arg_given(n, arg_longer);
  if (xy + size + shorter + longer == 0 && !ladle__arg_given(n, arg_max_size))
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT,
                         "no output size: give resize_x/resize_y, size, resize_shorter or resize_longer");
  if (xy + size + shorter + longer > 1)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT,
                         "give only one of resize_x/resize_y, size, resize_shorter and resize_longer");
  if (size) {
    int count = ladle__arg_value(n, arg_size)->count;
    if (count != 1 && count != 2)
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'size' must be [height, width], got %d values",
                           count);
  }
  if (ladle__arg_given(n, arg_max_size)) {
    const ladle_value *m = ladle__arg_value(n, arg_max_size);
    if (m->count != 1 && m->count != 2)
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'max_size' must be [height, width] or one value");
    p->max_h = m->u.floats[0];
    p->max_w = m->u.floats[m->count - 1];
  }
  return LADLE_OK;
}

static int round_size(double x) {
  long v = lround(x);
  return v < 1 ? 1 : v > (1L << 30) ? (1 << 30) : (int)v;
}

/* DALI keeps each scale and size in float; the products are formed in double. */
static double f32(double x) { return (float)x; }

ladle_status ladle__resize_output_size(const ladle__node *n, const ladle__sample *s,
                                       const ladle__resize_size_params *p, double in_w, double in_h, int *out_w,
                                       int *out_h, double *frac_w, double *frac_h) {
  double w = 0, h = 0;
  ladle__resize_mode mode = p->mode;
  if (ladle__arg_given(n, p->arg_size)) {
    const ladle_value *v = ladle__arg_value(n, p->arg_size);
    h = v->u.floats[0];
    w = v->u.floats[v->count - 1];
  } else if (ladle__arg_given(n, p->arg_shorter) || ladle__arg_given(n, p->arg_longer)) {
    int shorter = ladle__arg_given(n, p->arg_shorter);
    double target = ladle__arg_float(n, s, shorter ? p->arg_shorter : p->arg_longer);
    if (target <= 0) return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "the requested size must be positive");
    /* DALI: the same size for both sides, not_smaller (not_larger) keeping the aspect ratio. */
    w = h = target;
    mode = shorter ? LADLE__RESIZE_NOT_SMALLER : LADLE__RESIZE_NOT_LARGER;
  } else {
    w = ladle__arg_float(n, s, p->arg_x);
    h = ladle__arg_float(n, s, p->arg_y);
  }
  if (w < 0 || h < 0) return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "sizes must not be negative");
  w = f32(w), h = f32(h);
  double ow = in_w, oh = in_h;
  double sx = f32(w / in_w), sy = f32(h / in_h);
  if (w > 0 && h > 0 && (mode == LADLE__RESIZE_DEFAULT || mode == LADLE__RESIZE_STRETCH)) {
    ow = w;
    oh = h;
  } else if (mode == LADLE__RESIZE_NOT_SMALLER || mode == LADLE__RESIZE_NOT_LARGER) {
    if (w > 0 || h > 0) {
      double scale = w > 0 ? sx : sy;
      if (w > 0 && h > 0) scale = mode == LADLE__RESIZE_NOT_SMALLER ? fmax(sx, sy) : fmin(sx, sy);
      if (p->max_w > 0 && p->max_w / in_w < scale) scale = p->max_w / in_w;
      if (p->max_h > 0 && p->max_h / in_h < scale) scale = p->max_h / in_h;
      ow = f32(in_w * scale);
      oh = f32(in_h * scale);
    }
  } else if (w > 0) { /* default: the missing extent takes the given one's scale; stretch: keeps its own */
    ow = w;
    oh = mode == LADLE__RESIZE_STRETCH ? in_h : f32(in_h * sx);
  } else if (h > 0) {
    oh = h;
    ow = mode == LADLE__RESIZE_STRETCH ? in_w : f32(in_w * sy);
  }
  if (mode == LADLE__RESIZE_DEFAULT || mode == LADLE__RESIZE_STRETCH) {
    /* max_size caps each extent on its own (DALI) */
    if (p->max_w > 0 && ow > p->max_w) ow = p->max_w;
    if (p->max_h > 0 && oh > p->max_h) oh = p->max_h;
  }
  *out_w = round_size(ow);
  *out_h = round_size(oh);
  if (frac_w) *frac_w = ow;
  if (frac_h) *frac_h = oh;
  return LADLE_OK;
}
