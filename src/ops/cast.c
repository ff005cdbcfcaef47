/* cast: converts every element to another type (ops/kernels/normalize.h's
 * rules: round to nearest even, saturate). */
#include "ops/kernels/normalize.h"
#include "ops/op.h"

static const ladle_arg_schema cast_args[] = {
    {"dtype", LADLE_ARG_DTYPE, 0, 1, LADLE_NONE_VALUE(LADLE_ARG_DTYPE), 0, LADLE_NO_RANGE, "The output type."},
};

static ladle_status cast_init(ladle__node *n) {
  n->out[0] = n->in[0];
  n->out[0].dtype = (ladle_dtype)ladle__arg_int(n, NULL, 0);
  return LADLE_OK;
}

static ladle_status cast_setup(ladle__node *n, ladle__sample *s) {
  ladle__set_shape(n, s, 0, ladle__input(n, s, 0).shape);
  return LADLE_OK;
}

static ladle_status cast_run(ladle__node *n, ladle__sample *s) {
  ladle__tensor in = ladle__input(n, s, 0), out = ladle__output(n, s, 0);
  size_t count = 1;
  for (int d = 0; d < in.ndim; d++) count *= (size_t)in.shape[d];
  ladle__convert(out.data, out.dtype, in.data, in.dtype, count);
  return LADLE_OK;
}

const ladle__op_def ladle__op_cast = {
    .schema = {"cast", "Converts elements to `dtype` (floats to integers: round to nearest even, saturate).", 1, 1, 1,
               LADLE_ON_CPU, 1, cast_args},
    .init = cast_init,
    .setup = cast_setup,
    .run = cast_run,
};
