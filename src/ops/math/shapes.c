/* shapes: each sample's shape as a 1-D tensor (DALI's fn.shapes, behind
 * DataNode.shape()). */
#include "ops/math/math_scalar.h"
#include "ops/op.h"

static const ladle_arg_schema shapes_args[] = {
    {LADLE_DTYPE_ARG("dtype", LADLE_INT64), .deprecated_name = "type", .doc = "The output's element type."},
};

static ladle_status shapes_init(ladle__node *n) {
  n->out[0] = (ladle__out_desc){.dtype = (ladle_dtype)ladle__arg_int(n, NULL, 0), .ndim = 1};
  return LADLE_OK;
}

static ladle_status shapes_setup(ladle__node *n, ladle__sample *s) {
  int64_t ndim = n->in[0].ndim;
  ladle__set_shape(n, s, 0, &ndim);
  return LADLE_OK;
}

static ladle_status shapes_run(ladle__node *n, ladle__sample *s) {
  ladle__tensor in = ladle__input(n, s, 0), out = ladle__output(n, s, 0);
  for (int d = 0; d < in.ndim; d++) ladle__math_store_int(out.data, d, out.dtype, in.shape[d]);
  return LADLE_OK;
}

const ladle__op_def ladle__op_shapes = {
    .schema = {.name = "shapes",
               .doc = "The shape of each sample, as a 1-D tensor of `dtype` (DataNode.shape() calls it).",
               .min_inputs = 1, .max_inputs = 1, .num_outputs = 1,
               .devices = LADLE_ON_CPU,
               .num_args = 1, .args = shapes_args},
    .init = shapes_init,
    .setup = shapes_setup,
    .run = shapes_run,
};
