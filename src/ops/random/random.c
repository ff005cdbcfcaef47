/* The random number operators (random.coin_flip, uniform, normal, beta,
 * choice): a value or a small tensor per sample, each element drawn from its
 * own substream of the sample's stream (random_kernel.h), on the CPU or the
 * GPU with the same numbers. Also the machinery noise.c shares (random_op.h). */
#include "core/no_fma.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/random/random_op.h"

/* --- shared machinery ------------------------------------------------------ */

ladle_status ladle__rand_state_init(ladle__node *n, int kind, const double *table, int len) {
  ladle__rand_state *st = malloc(sizeof *st + sizeof(double) * (size_t)(len > 0 ? len : 0));
  if (!st) return LADLE_OP_FAIL(n, LADLE_ERROR_OUT_OF_MEMORY, "out of memory");
  st->kind = kind;
  st->table_len = len;
  if (len > 0) memcpy(st->table, table, sizeof(double) * (size_t)len);
  n->state = st;
  return LADLE_OK;
}

void ladle__rand_fini(ladle__node *n) {
  free(n->state);
  n->state = NULL;
}

ladle__rand_sample *ladle__rand_setup_sample(ladle__node *n, ladle__sample *s, int64_t count) {
  ladle__rand_sample *d = s->state;
  memset(d, 0, sizeof *d);
  d->count = count;
  d->group = 1;
  ladle__sample_rng(n, s, &d->rng);
  return d;
}

ladle_status ladle__rand_run(ladle__node *n, ladle__sample *s) {
  const ladle__rand_state *st = n->state;
  ladle__rand_sample d = *(const ladle__rand_sample *)s->state;
  ladle__tensor out = ladle__output(n, s, 0);
  int in_dtype = n->num_inputs ? (int)n->in[0].dtype : LADLE_FLOAT32;
  d.out = out.data;
  d.in = n->num_inputs ? ladle__input(n, s, 0).data : NULL;
  for (int64_t j = 0; j < d.count / d.group; j++)
    ladle__rand_group(st->kind, &d, st->table, st->table_len, out.dtype, in_dtype, j);
  return LADLE_OK;
}

#ifdef LADLE_HAVE_CUDA
ladle_status ladle__rand_run_batch(ladle__node *n, ladle__gpu *g) {
  const ladle__rand_state *st = n->state;
  int batch = n->config->batch_size;
  ladle__rand_sample *d = NULL;
  /* run_batch runs between parallel passes: worker 0's scratch is free. */
  ladle_status status = ladle__scratch(n, &(ladle__sample){.worker = 0}, sizeof *d * (size_t)batch, (void **)&d);
  if (status != LADLE_OK) return status;
  for (int i = 0; i < batch; i++) {
    d[i] = ((const ladle__rand_sample *)n->sample_states)[i];
    d[i].out = ladle_batch_data(n->out_batches[0], i);
    d[i].in = n->num_inputs ? ladle_batch_data(n->in_batches[0], i) : NULL;
  }
  void *host = NULL, *dev = NULL;
  size_t bytes = ladle__gpu_rand_param_bytes(batch, st->table_len);
  status = ladle__gpu_params(g, bytes, &host, &dev);
  if (status != LADLE_OK) return status;
  return ladle__gpu_rand(d, batch, st->kind, st->table, st->table_len, n->out[0].dtype,
                         n->num_inputs ? n->in[0].dtype : LADLE_FLOAT32, host, dev, bytes, g->stream);
}
#endif

/* --- generators ------------------------------------------------------------ */

static const double default_range[] = {-1.0, 1.0};

#define SHAPE_ROW(k) \
  [k] = {LADLE_OPTIONAL_ARG("shape", LADLE_ARG_INTS), LADLE_RANGE(0.0, 1e9), \
         .doc = "Shape of each sample's output; default: a scalar."}

enum { COIN_PROBABILITY, COIN_SHAPE, COIN_DTYPE, COIN_COUNT };
static const ladle_arg_schema coin_args[COIN_COUNT] = {
    [COIN_PROBABILITY] = {LADLE_FLOAT_ARG("probability", 0.5), .per_sample = 1, LADLE_RANGE(0.0, 1.0),
        .doc = "Probability of a 1."},
    SHAPE_ROW(COIN_SHAPE),
    [COIN_DTYPE] = {LADLE_DTYPE_ARG("dtype", LADLE_INT32),
        .doc = "Output type (INT32 by default), any dtype (DALI 2.4 takes UINT8, INT32 and BOOL)."},
};

enum { UNI_RANGE, UNI_VALUES, UNI_SHAPE, UNI_DTYPE, UNI_COUNT };
static const ladle_arg_schema uniform_args[UNI_COUNT] = {
    [UNI_RANGE] = {LADLE_FLOATS_ARG("range", default_range),
        .doc = "[low, high): values are drawn uniformly from this interval."},
    [UNI_VALUES] = {LADLE_OPTIONAL_ARG("values", LADLE_ARG_FLOATS),
        .doc = "If given, values are drawn uniformly from this list instead."},
    SHAPE_ROW(UNI_SHAPE),
    [UNI_DTYPE] = {LADLE_DTYPE_ARG("dtype", LADLE_FLOAT32),
        .doc = "Output type (FLOAT by default), any dtype: the value drawn in double precision, converted as "
               "fn.cast converts (integers: round to nearest even, saturate; BOOL: != 0). DALI 2.4 takes all "
               "but FLOAT16 and BOOL."},
};

enum { NORMAL_MEAN, NORMAL_STDDEV, NORMAL_SHAPE, NORMAL_DTYPE, NORMAL_COUNT };
static const ladle_arg_schema normal_args[NORMAL_COUNT] = {
    [NORMAL_MEAN] = {LADLE_FLOAT_ARG("mean", 0.0), .per_sample = 1, .doc = "Mean of the distribution."},
    [NORMAL_STDDEV] = {LADLE_FLOAT_ARG("stddev", 1.0), .per_sample = 1, LADLE_RANGE(0.0, 1e300),
        .doc = "Standard deviation of the distribution."},
    SHAPE_ROW(NORMAL_SHAPE),
    [NORMAL_DTYPE] = {LADLE_DTYPE_ARG("dtype", LADLE_FLOAT32), .doc = "Output type (FLOAT by default)."},
};

enum { BETA_ALPHA, BETA_BETA, BETA_SHAPE, BETA_DTYPE, BETA_COUNT };
static const ladle_arg_schema beta_args[BETA_COUNT] = {
    [BETA_ALPHA] = {LADLE_FLOAT_ARG("alpha", 1.0), .per_sample = 1, LADLE_RANGE(1e-300, 1e300),
        .doc = "The alpha (first shape) parameter, > 0."},
    [BETA_BETA] = {LADLE_FLOAT_ARG("beta", 1.0), .per_sample = 1, LADLE_RANGE(1e-300, 1e300),
        .doc = "The beta (second shape) parameter, > 0."},
    SHAPE_ROW(BETA_SHAPE),
    [BETA_DTYPE] = {LADLE_DTYPE_ARG("dtype", LADLE_FLOAT32), .doc = "Output type (FLOAT by default)."},
};

enum { CHOICE_P, CHOICE_SHAPE, CHOICE_COUNT };
static const ladle_arg_schema choice_args[CHOICE_COUNT] = {
    [CHOICE_P] = {LADLE_OPTIONAL_ARG("p", LADLE_ARG_FLOATS), LADLE_RANGE(0.0, 1e300),
        .doc = "Probability of each value of `a` (normalized by their sum); default: uniform."},
    SHAPE_ROW(CHOICE_SHAPE),
};

/* Output 0: `dtype` (or the given type), rank of `shape`. */
static ladle_status generator_init(ladle__node *n, int arg_shape, ladle_dtype dtype, int kind, const double *table,
                                   int len) {
  const ladle_value *shape = ladle__arg_value(n, arg_shape);
  if (shape->count > LADLE_MAX_NDIM)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'shape' has more than %d dimensions",
                         LADLE_MAX_NDIM);
  n->out[0] = (ladle__out_desc){dtype, shape->count, ""};
  return ladle__rand_state_init(n, kind, table, len);
}

static ladle__rand_sample *generator_setup(ladle__node *n, ladle__sample *s, int arg_shape) {
  const ladle_value *shape = ladle__arg_value(n, arg_shape);
  int64_t count = 1;
  for (int d = 0; d < shape->count; d++) count *= shape->u.ints[d];
  ladle__set_shape(n, s, 0, shape->count ? shape->u.ints : NULL);
  return ladle__rand_setup_sample(n, s, count);
}

static ladle_status coin_init(ladle__node *n) {
  return generator_init(n, COIN_SHAPE, (ladle_dtype)ladle__arg_int(n, NULL, COIN_DTYPE), LADLE_RAND_COIN, NULL, 0);
}

static ladle_status coin_setup(ladle__node *n, ladle__sample *s) {
  generator_setup(n, s, COIN_SHAPE)->p[0] = ladle__arg_float(n, s, COIN_PROBABILITY);
  return LADLE_OK;
}

static ladle_status uniform_init(ladle__node *n) {
  const ladle_value *range = ladle__arg_value(n, UNI_RANGE), *values = ladle__arg_value(n, UNI_VALUES);
  if (range->count != 2 || !(range->u.floats[0] <= range->u.floats[1]))
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'range' must be [low, high] with low <= high");
  int discrete = ladle__arg_given(n, UNI_VALUES);
  if (discrete && values->count < 1) return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'values' is empty");
  return generator_init(n, UNI_SHAPE, (ladle_dtype)ladle__arg_int(n, NULL, UNI_DTYPE),
                        discrete ? LADLE_RAND_VALUES : LADLE_RAND_UNIFORM, discrete ? values->u.floats : NULL,
                        discrete ? values->count : 0);
}

static ladle_status uniform_setup(ladle__node *n, ladle__sample *s) {
  const ladle_value *range = ladle__arg_value(n, UNI_RANGE);
  ladle__rand_sample *d = generator_setup(n, s, UNI_SHAPE);
  d->p[0] = range->u.floats[0];
  d->p[1] = range->u.floats[1];
  return LADLE_OK;
}

static ladle_status normal_init(ladle__node *n) {
  return generator_init(n, NORMAL_SHAPE, (ladle_dtype)ladle__arg_int(n, NULL, NORMAL_DTYPE), LADLE_RAND_NORMAL, NULL,
                        0);
}

static ladle_status normal_setup(ladle__node *n, ladle__sample *s) {
  ladle__rand_sample *d = generator_setup(n, s, NORMAL_SHAPE);
  d->p[0] = ladle__arg_float(n, s, NORMAL_MEAN);
  d->p[1] = ladle__arg_float(n, s, NORMAL_STDDEV);
  return LADLE_OK;
}

static ladle_status beta_init(ladle__node *n) {
  return generator_init(n, BETA_SHAPE, (ladle_dtype)ladle__arg_int(n, NULL, BETA_DTYPE), LADLE_RAND_BETA, NULL, 0);
}

static ladle_status beta_setup(ladle__node *n, ladle__sample *s) {
  ladle__rand_sample *d = generator_setup(n, s, BETA_SHAPE);
  d->p[0] = ladle__arg_float(n, s, BETA_ALPHA);
  d->p[1] = ladle__arg_float(n, s, BETA_BETA);
  return LADLE_OK;
}

static ladle_status choice_init(ladle__node *n) {
  const ladle__out_desc *a = &n->in[0];
  if (a->ndim > 1)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT,
                         "input 'a' must be a scalar (the number of choices) or a 1-D list of values, not %d-D",
                         a->ndim);
  if (a->ndim == 0 && a->dtype != LADLE_INT32 && a->dtype != LADLE_INT64 && a->dtype != LADLE_UINT8)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "a scalar input 'a' must be an integer, not %s",
                         ladle_dtype_name(a->dtype));
  const ladle_value *p = ladle__arg_value(n, CHOICE_P);
  double cdf[4096], sum = 0;
  int len = ladle__arg_given(n, CHOICE_P) ? p->count : 0;
  if (ladle__arg_given(n, CHOICE_P) && len < 1)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'p' is empty");
  if (len > 4096) return LADLE_OP_FAIL(n, LADLE_ERROR_UNSUPPORTED, "argument 'p' has more than 4096 values");
  for (int k = 0; k < len; k++) cdf[k] = sum += p->u.floats[k];
  if (len && !(sum > 0)) return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'p' sums to 0");
  for (int k = 0; k < len; k++) cdf[k] /= sum;
  if (len) cdf[len - 1] = 1.0;
  return generator_init(n, CHOICE_SHAPE, a->dtype, LADLE_RAND_CHOICE, cdf, len);
}

static ladle_status choice_setup(ladle__node *n, ladle__sample *s) {
  const ladle__rand_state *state = n->state;
  ladle__tensor a = ladle__input(n, s, 0);
  ladle__rand_sample *d = generator_setup(n, s, CHOICE_SHAPE);
  d->in_count = a.ndim ? a.shape[0] : 0;
  int64_t count = d->in_count;
  if (a.ndim && count < 1) return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "input 'a' is an empty list");
  if (!a.ndim && n->device == LADLE_ON_CPU) { /* on the GPU, n is in device memory */
    count = (int64_t)ladle__rand_load(a.data, a.dtype, 0);
    if (count < 1) return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "input 'a' = %lld: must be >= 1", (long long)count);
  }
  if (state->table_len && count && count != state->table_len)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'p' has %d values; input 'a' has %lld choices",
                         state->table_len, (long long)count);
  return LADLE_OK;
}

#define GENERATOR(sym, nm, docs, args_, count_, init_, setup_, ninputs)                          \
  const ladle__op_def ladle__op_##sym = {                                                        \
      .schema = {.name = nm, .doc = docs, .min_inputs = ninputs, .max_inputs = ninputs,          \
                 .num_outputs = 1, .devices = LADLE_ON_CPU_GPU, .flags = LADLE_OP_RANDOM,        \
                 .num_args = count_, .args = args_},                                             \
      .sample_state_size = sizeof(ladle__rand_sample),                                           \
      .init = init_, .fini = ladle__rand_fini, .setup = setup_, .run = ladle__rand_run,          \
      .run_batch = LADLE_RAND_RUN_BATCH,                                                         \
  }

GENERATOR(random_coin_flip, "random.coin_flip", "Draws 0 or 1 per element (1 with `probability`).", coin_args,
          COIN_COUNT, coin_init, coin_setup, 0);
GENERATOR(random_uniform, "random.uniform",
          "Draws numbers uniformly from `range` (or from the list `values`) per element.", uniform_args, UNI_COUNT,
          uniform_init, uniform_setup, 0);
GENERATOR(random_normal, "random.normal", "Draws numbers from a normal distribution N(mean, stddev^2).",
          normal_args, NORMAL_COUNT, normal_init, normal_setup, 0);
GENERATOR(random_beta, "random.beta", "Draws numbers from a beta distribution Beta(alpha, beta).", beta_args,
          BETA_COUNT, beta_init, beta_setup, 0);
GENERATOR(random_choice, "random.choice",
          "Draws from the input `a`: a scalar n gives 0..n-1, a 1-D list its elements, with probabilities `p`.",
          choice_args, CHOICE_COUNT, choice_init, choice_setup, 1);
