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

ladle_status ladle__resize_output_size(const ladle__node *n, const ladle__sample *s,
                                       const ladle__resize_size_params *p, int in_w, int in_h, int *out_w,
                                       int *out_h) {
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
    /* The side to fix: the shorter (or longer) one; the other keeps the aspect. */
    if ((in_w <= in_h) == (shorter != 0)) w = target;
    else h = target;
    mode = LADLE__RESIZE_DEFAULT;
  } else {
    w = ladle__arg_float(n, s, p->arg_x);
    h = ladle__arg_float(n, s, p->arg_y);
  }
  if (w < 0 || h < 0) return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "sizes must not be negative");
  double ow = in_w, oh = in_h;
  if (w > 0 && h > 0) {
    if (mode == LADLE__RESIZE_NOT_SMALLER || mode == LADLE__RESIZE_NOT_LARGER) {
      double sx = w / in_w, sy = h / in_h;
      double scale = mode == LADLE__RESIZE_NOT_SMALLER ? fmax(sx, sy) : fmin(sx, sy);
      ow = in_w * scale;
      oh = in_h * scale;
    } else {
      ow = w;
      oh = h;
    }
  } else if (w > 0) {
    ow = w;
    oh = mode == LADLE__RESIZE_STRETCH ? in_h : in_h * (w / in_w);
  } else if (h > 0) {
    oh = h;
    ow = mode == LADLE__RESIZE_STRETCH ? in_w : in_w * (h / in_h);
  }
  if ((p->max_w > 0 && ow > p->max_w) || (p->max_h > 0 && oh > p->max_h)) {
    if (mode == LADLE__RESIZE_STRETCH) {
      if (p->max_w > 0 && ow > p->max_w) ow = p->max_w;
      if (p->max_h > 0 && oh > p->max_h) oh = p->max_h;
    } else {
      double scale = 1;
      if (p->max_w > 0 && ow > p->max_w) scale = p->max_w / ow;
      if (p->max_h > 0 && oh * scale > p->max_h) scale = p->max_h / oh;
      ow *= scale;
      oh *= scale;
    }
  }
  *out_w = round_size(ow);
  *out_h = round_size(oh);
  return LADLE_OK;
}
