/* DALI's rules for a resize's output size (resize_x, resize_y, size,
 * resize_shorter, resize_longer, mode, max_size), shared by the operators
 * that resize. */
#ifndef LADLE_OPS_RESIZE_PARAMS_H
#define LADLE_OPS_RESIZE_PARAMS_H

#include "ops/op.h"

typedef enum ladle__resize_mode {
  LADLE__RESIZE_DEFAULT, LADLE__RESIZE_STRETCH, LADLE__RESIZE_NOT_SMALLER, LADLE__RESIZE_NOT_LARGER
} ladle__resize_mode;

typedef struct ladle__resize_size_params {
  int arg_x, arg_y, arg_size, arg_shorter, arg_longer; /* argument indices in the node's schema */
  ladle__resize_mode mode;
  double max_w, max_h; /* 0: no limit */
} ladle__resize_size_params;

/* Checks the combination of arguments at build. */
ladle_status ladle__resize_size_params_init(ladle__node *n, ladle__resize_size_params *p, int arg_x, int arg_y,
                                            int arg_size, int arg_shorter, int arg_longer, int arg_mode,
                                            int arg_max_size);

/* The output size for one sample of a source window of in_w x in_h pixels
 * (each side at least 1, rounded to nearest, halves away from zero), and in
 * frac_w/frac_h (may be NULL) the fractional sizes before rounding. The
 * arithmetic is DALI's: scales and sizes held in float. */
ladle_status ladle__resize_output_size(const ladle__node *n, const ladle__sample *s,
                                       const ladle__resize_size_params *p, double in_w, double in_h, int *out_w,
                                       int *out_h, double *frac_w, double *frac_h);

#endif
