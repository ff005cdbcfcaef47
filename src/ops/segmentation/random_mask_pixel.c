/* segmentation.random_mask_pixel: a uniformly drawn pixel of a mask (its
 * foreground, or any), as int64 coordinates, one per mask dimension. */
#include <math.h>

#include "ops/op.h"
#include "ops/kernels/dtype.h"

enum { ARG_VALUE, ARG_THRESHOLD, ARG_FOREGROUND, ARG_COUNT };

static const ladle_arg_schema args[ARG_COUNT] = {
    [ARG_VALUE] = {LADLE_OPTIONAL_ARG("value", LADLE_ARG_INT), .per_sample = 1,
        .doc = "Foreground: the pixels equal to this value (exclusive with threshold)."},
    [ARG_THRESHOLD] = {LADLE_FLOAT_ARG("threshold", 0), .per_sample = 1,
        .doc = "Foreground: the pixels whose value is above this (when value is not given)."},
    [ARG_FOREGROUND] = {LADLE_INT_ARG("foreground", 0), .per_sample = 1,
        .doc = "Nonzero: draw uniformly among the foreground pixels (among all when the mask has none, as "
               "DALI); 0: among all pixels."},
};

static ladle_status rmp_init(ladle__node *n) {
  if (ladle__arg_given(n, ARG_VALUE) && ladle__arg_given(n, ARG_THRESHOLD))
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "arguments 'value' and 'threshold' are exclusive");
  if (n->in[0].ndim < 1)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "the input must be a mask of at least 1 dimension");
  n->out[0] = (ladle__out_desc){LADLE_INT64, 1, ""};
  return LADLE_OK;
}

static ladle_status rmp_setup(ladle__node *n, ladle__sample *s) {
  int64_t shape[1] = {n->in[0].ndim};
  ladle__tensor in = ladle__input(n, s, 0);
  int64_t count = 1;
  for (int d = 0; d < in.ndim; d++) count *= in.shape[d];
  if (count == 0) return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "sample %d: the mask is empty", s->slot);
  ladle__set_shape(n, s, 0, shape);
  return LADLE_OK;
}

static int is_fg(const ladle__tensor *in, int64_t i, int by_value, double value, double threshold) {
  double v = ladle__load_as_f64(in->data, (size_t)i, in->dtype);
  return by_value ? v == value : v > threshold;
}

static ladle_status rmp_run(ladle__node *n, ladle__sample *s) {
  ladle__tensor in = ladle__input(n, s, 0);
  int64_t *out = ladle__output(n, s, 0).data, total = 1;
  for (int d = 0; d < in.ndim; d++) total *= in.shape[d];
  int by_value = ladle__arg_given(n, ARG_VALUE);
  double value = by_value ? (double)ladle__arg_int(n, s, ARG_VALUE) : 0;
  double threshold = ladle__arg_float(n, s, ARG_THRESHOLD);
  int fg = ladle__arg_int(n, s, ARG_FOREGROUND) != 0;
  ladle__rng rng;
  ladle__sample_rng(n, s, &rng);
  int64_t pick = -1;
  if (fg) {
    int64_t count = 0;
    for (int64_t i = 0; i < total; i++) count += is_fg(&in, i, by_value, value, threshold);
    if (count) {
      int64_t k = (int64_t)ladle__rng_below(&rng, (uint64_t)count);
      for (int64_t i = 0; pick < 0; i++)
        if (is_fg(&in, i, by_value, value, threshold) && k-- == 0) pick = i;
    }
  }
  if (pick < 0) pick = (int64_t)ladle__rng_below(&rng, (uint64_t)total);
  for (int d = in.ndim - 1; d >= 0; d--) {
    out[d] = pick % in.shape[d];
    pick /= in.shape[d];
  }
  return LADLE_OK;
}

const ladle__op_def ladle__op_segmentation_random_mask_pixel = {
    .schema = {.name = "segmentation.random_mask_pixel",
               .doc = "Draws a pixel of a mask uniformly: among its foreground pixels (value equal to `value`, or "
                      "above `threshold`) when `foreground` is nonzero, else among all. Outputs its coordinates "
                      "(int64, one per mask dimension, outermost first).",
               .min_inputs = 1, .max_inputs = 1, .num_outputs = 1,
               .devices = LADLE_ON_CPU, .flags = LADLE_OP_RANDOM,
               .num_args = ARG_COUNT, .args = args},
    .init = rmp_init,
    .setup = rmp_setup,
    .run = rmp_run,
};
