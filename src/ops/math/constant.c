/* constant: the same tensor in every sample (DALI's fn.constant, behind
 * types.Constant and array constants in arithmetic expressions). */
#include <stdlib.h>
#include <string.h>

#include "ops/math/math_scalar.h"
#include "ops/op.h"

enum { ARG_FDATA, ARG_IDATA, ARG_SHAPE, ARG_DTYPE, ARG_LAYOUT };

static const ladle_arg_schema constant_args[] = {
    {LADLE_OPTIONAL_ARG("fdata", LADLE_ARG_FLOATS), .doc = "The values, for float data (or idata, not both)."},
    {LADLE_OPTIONAL_ARG("idata", LADLE_ARG_INTS), .doc = "The values, for integer data (or fdata, not both)."},
    {LADLE_OPTIONAL_ARG("shape", LADLE_ARG_INTS), LADLE_RANGE(0, 1e12),
     .doc = "The output's shape; default: [number of values]. A single value fills the whole shape."},
    {LADLE_OPTIONAL_ARG("dtype", LADLE_ARG_DTYPE), .doc = "The output type; default: float32 for fdata, int32 for idata."},
    {LADLE_STRING_ARG("layout", ""), .doc = "The output's layout (as many letters as dimensions), or none."},
};

typedef struct constant_state {
  int64_t shape[LADLE_MAX_NDIM];
  int64_t count;  /* values given: 1 (fills) or the shape's volume */
  void *values;   /* count elements of the output type */
} constant_state;

static ladle_status constant_init(ladle__node *n) {
  constant_state *st = calloc(1, sizeof *st);
  if (!st) return LADLE_OP_FAIL(n, LADLE_ERROR_OUT_OF_MEMORY, "out of memory");
  n->state = st;
  const int fdata = ladle__arg_given(n, ARG_FDATA), idata = ladle__arg_given(n, ARG_IDATA);
  if (fdata == idata)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "give exactly one of the arguments 'fdata' and 'idata'");
  const ladle_value *data = ladle__arg_value(n, fdata ? ARG_FDATA : ARG_IDATA);
  st->count = data->count;
  int dtype = ladle__arg_given(n, ARG_DTYPE) ? (int)ladle__arg_int(n, NULL, ARG_DTYPE)
                                              : fdata ? LADLE_FLOAT32 : LADLE_INT32;
  n->out[0] = (ladle__out_desc){.dtype = (ladle_dtype)dtype, .ndim = 1};
  int64_t volume = st->count;
  st->shape[0] = st->count;
  if (ladle__arg_given(n, ARG_SHAPE)) {
    const ladle_value *shape = ladle__arg_value(n, ARG_SHAPE);
    if (shape->count > LADLE_MAX_NDIM)
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'shape' has %d dimensions; at most %d",
                           shape->count, LADLE_MAX_NDIM);
    n->out[0].ndim = shape->count;
    volume = 1;
    for (int d = 0; d < shape->count; d++) volume *= (st->shape[d] = shape->u.ints[d]);
  }
  if (st->count != 1 && st->count != volume)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "%lld values do not fill the shape (%lld elements); give "
                         "one value or as many as the shape holds", (long long)st->count, (long long)volume);
  const char *layout = ladle__arg_string(n, ARG_LAYOUT);
  if (layout && layout[0]) {
    if ((int)strlen(layout) != n->out[0].ndim)
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'layout' (\"%s\") must have %d letter(s)",
                           layout, n->out[0].ndim);
    strncpy(n->out[0].layout, layout, sizeof n->out[0].layout - 1);
  }
  if (ladle__math_class_of(dtype) < 0)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'dtype': %s is not supported",
                         ladle_dtype_name((ladle_dtype)dtype));
  st->values = malloc((size_t)st->count * ladle_dtype_size((ladle_dtype)dtype) + 1);
  if (!st->values) return LADLE_OP_FAIL(n, LADLE_ERROR_OUT_OF_MEMORY, "out of memory");
  for (int64_t j = 0; j < st->count; j++) {
    if (fdata)
      ladle__math_store_f32(st->values, j, dtype, (float)data->u.floats[j]);
    else
      ladle__math_store_int(st->values, j, dtype, data->u.ints[j]);
  }
  return LADLE_OK;
}

static void constant_fini(ladle__node *n) {
  constant_state *st = n->state;
  if (st) free(st->values);
  free(st);
}

static ladle_status constant_setup(ladle__node *n, ladle__sample *s) {
  ladle__set_shape(n, s, 0, ((const constant_state *)n->state)->shape);
  return LADLE_OK;
}

static ladle_status constant_run(ladle__node *n, ladle__sample *s) {
  const constant_state *st = n->state;
  ladle__tensor out = ladle__output(n, s, 0);
  const size_t es = ladle_dtype_size(out.dtype);
  int64_t volume = 1;
  for (int d = 0; d < out.ndim; d++) volume *= out.shape[d];
  if (st->count == volume) {
    memcpy(out.data, st->values, (size_t)volume * es);
  } else {
    for (int64_t j = 0; j < volume; j++) memcpy((uint8_t *)out.data + j * es, st->values, es);
  }
  return LADLE_OK;
}

const ladle__op_def ladle__op_constant = {
    .schema = {.name = "constant",
               .doc = "The same constant tensor in every sample (from fdata or idata, reshaped to `shape`).",
               .min_inputs = 0, .max_inputs = 0, .num_outputs = 1,
               .devices = LADLE_ON_CPU,
               .num_args = 5, .args = constant_args},
    .init = constant_init,
    .fini = constant_fini,
    .setup = constant_setup,
    .run = constant_run,
};
