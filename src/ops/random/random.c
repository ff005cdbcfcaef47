/* random.coin_flip and random.uniform: one value (or a small tensor) per
 * sample, drawn from the sample's own stream, typically used as per-sample
 * arguments (mirror=fn.random.coin_flip()). */
#include <math.h>
#include <string.h>

#include "ops/kernels/dtype.h"
#include "ops/op.h"

static const double default_range[] = {-1.0, 1.0};

enum { COIN_PROBABILITY, COIN_SHAPE, COIN_DTYPE, COIN_COUNT };
static const ladle_arg_schema coin_args[COIN_COUNT] = {
    [COIN_PROBABILITY] = {LADLE_FLOAT_ARG("probability", 0.5), .per_sample = 1, LADLE_RANGE(0.0, 1.0),
        .doc = "Probability of a 1."},
    [COIN_SHAPE] = {LADLE_OPTIONAL_ARG("shape", LADLE_ARG_INTS), LADLE_RANGE(0.0, 1e9),
        .doc = "Shape of each sample's output; default: a scalar."},
    [COIN_DTYPE] = {LADLE_DTYPE_ARG("dtype", LADLE_INT32),
        .doc = "Output type (INT32 by default), any dtype (DALI 2.4 takes UINT8, INT32 and BOOL)."},
};

enum { UNI_RANGE, UNI_VALUES, UNI_SHAPE, UNI_DTYPE, UNI_COUNT };
static const ladle_arg_schema uniform_args[UNI_COUNT] = {
    [UNI_RANGE] = {LADLE_FLOATS_ARG("range", default_range),
        .doc = "[low, high): values are drawn uniformly from this interval."},
    [UNI_VALUES] = {LADLE_OPTIONAL_ARG("values", LADLE_ARG_FLOATS),
        .doc = "If given, values are drawn uniformly from this list instead."},
    [UNI_SHAPE] = {LADLE_OPTIONAL_ARG("shape", LADLE_ARG_INTS), LADLE_RANGE(0.0, 1e9),
        .doc = "Shape of each sample's output; default: a scalar."},
    [UNI_DTYPE] = {LADLE_DTYPE_ARG("dtype", LADLE_FLOAT32),
        .doc = "Output type (FLOAT by default), any dtype: the value drawn in double precision, converted as "
               "fn.cast converts (integers: round to nearest even, saturate; BOOL: != 0). DALI 2.4 takes all "
               "but FLOAT16 and BOOL."},
};

static ladle_status random_init(ladle__node *n, int arg_shape, int arg_dtype) {
  const ladle_value *shape = ladle__arg_value(n, arg_shape);
  if (shape->count > LADLE_MAX_NDIM)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'shape' has more than %d dimensions",
                         LADLE_MAX_NDIM);
  ladle_dtype dtype = (ladle_dtype)ladle__arg_int(n, NULL, arg_dtype);
  n->out[0] = (ladle__out_desc){dtype, shape->count, ""};
  return LADLE_OK;
}

static ladle_status coin_init(ladle__node *n) { return random_init(n, COIN_SHAPE, COIN_DTYPE); }

static ladle_status uniform_init(ladle__node *n) {
  const ladle_value *range = ladle__arg_value(n, UNI_RANGE);
  if (range->count != 2 || !(range->u.floats[0] <= range->u.floats[1]))
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'range' must be [low, high] with low <= high");
  if (ladle__arg_given(n, UNI_VALUES) && ladle__arg_value(n, UNI_VALUES)->count < 1)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'values' is empty");
  return random_init(n, UNI_SHAPE, UNI_DTYPE);
}

static ladle_status random_setup(ladle__node *n, ladle__sample *s, int arg_shape) {
  const ladle_value *shape = ladle__arg_value(n, arg_shape);
  ladle__set_shape(n, s, 0, shape->count ? shape->u.ints : NULL);
  return LADLE_OK;
}

static ladle_status coin_setup(ladle__node *n, ladle__sample *s) { return random_setup(n, s, COIN_SHAPE); }
static ladle_status uniform_setup(ladle__node *n, ladle__sample *s) { return random_setup(n, s, UNI_SHAPE); }

/* Stores x into element i of a tensor of any dtype: round to nearest even
 * and saturate for integers, x != 0 for bool (ops/kernels/dtype.h), as DALI
 * converts random values. */
static void store(void *data, ladle_dtype dtype, int64_t i, double x) {
  ladle__store_f64(data, (size_t)i, dtype, x);
}

static int64_t elems(const ladle__tensor *t) {
  int64_t count = 1;
  for (int d = 0; d < t->ndim; d++) count *= t->shape[d];
  return count;
}

static ladle_status coin_run(ladle__node *n, ladle__sample *s) {
  ladle__tensor out = ladle__output(n, s, 0);
  double p = ladle__arg_float(n, s, COIN_PROBABILITY);
  ladle__rng rng;
  ladle__sample_rng(n, s, &rng);
  for (int64_t i = 0, count = elems(&out); i < count; i++) store(out.data, out.dtype, i, ladle__rng_uniform(&rng) < p);
  return LADLE_OK;
}

static ladle_status uniform_run(ladle__node *n, ladle__sample *s) {
  ladle__tensor out = ladle__output(n, s, 0);
  const ladle_value *range = ladle__arg_value(n, UNI_RANGE), *values = ladle__arg_value(n, UNI_VALUES);
  int discrete = ladle__arg_given(n, UNI_VALUES);
  ladle__rng rng;
  ladle__sample_rng(n, s, &rng);
  for (int64_t i = 0, count = elems(&out); i < count; i++) {
    double x = discrete ? values->u.floats[ladle__rng_below(&rng, (uint64_t)values->count)]
                        : ladle__rng_range(&rng, range->u.floats[0], range->u.floats[1]);
    store(out.data, out.dtype, i, x);
  }
  return LADLE_OK;
}

const ladle__op_def ladle__op_random_coin_flip = {
    .schema = {.name = "random.coin_flip",
               .doc = "Draws 0 or 1 per sample (1 with `probability`).",
               .min_inputs = 0, .max_inputs = 0, .num_outputs = 1,
               .devices = LADLE_ON_CPU, .flags = LADLE_OP_RANDOM,
               .num_args = COIN_COUNT, .args = coin_args},
    .init = coin_init,
    .setup = coin_setup,
    .run = coin_run,
};

const ladle__op_def ladle__op_random_uniform = {
    .schema = {.name = "random.uniform",
               .doc = "Draws numbers uniformly from `range` (or from the list `values`) per sample.",
               .min_inputs = 0, .max_inputs = 0, .num_outputs = 1,
               .devices = LADLE_ON_CPU, .flags = LADLE_OP_RANDOM,
               .num_args = UNI_COUNT, .args = uniform_args},
    .init = uniform_init,
    .setup = uniform_setup,
    .run = uniform_run,
};
