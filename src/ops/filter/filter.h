/* Helpers the filter operators share. */
#ifndef LADLE_OPS_FILTER_H
#define LADLE_OPS_FILTER_H

#include <stdlib.h>

#include "ops/kernels/dtype.h"
#include "ops/op.h"

/* Fails the operator's sample with the status of `call`. */
#define LADLE_TRY_OP(call)                 \
  do {                                     \
    ladle_status try_st_ = (call);         \
    if (try_st_ != LADLE_OK) return try_st_; \
  } while (0)

/* The data axes of an input (every axis but the layout's C; with no layout,
 * a 3-D input's last axis is taken as channels): their count, and their
 * indices in `axis` (may be NULL). */
int ladle__data_axes(const ladle__out_desc *in, int *axis);

/* Mirror index i into [0, len) without repeating the edge (reflect-101). */
int ladle__reflect101(int64_t i, int64_t len);

/* Normalized Gaussian weights w[0..window) of `sigma`; returns the radius. */
int ladle__gauss_weights(float *w, int window, float sigma);

/* The index of axis `name` (a layout letter) in the layout, or -1. */
int ladle__layout_axis(const char *layout, char name);

/* The axes an operator with DALI's `axes` / `axis_names` arguments (argument
 * indices axes_arg, names_arg) reduces over: reduced[d] = 1 for each, every
 * axis when neither is given. Fails naming the operator and argument. */
ladle_status ladle__reduced_axes(ladle__node *n, int axes_arg, int names_arg, int *reduced);

/* Element i of a tensor (any dtype) as a double. */
static inline double ladle__elem(const ladle__tensor *t, int64_t i) {
  return ladle__load_as_f64(t->data, (size_t)i, t->dtype);
}

#endif
