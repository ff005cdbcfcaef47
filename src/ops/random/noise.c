/* noise.gaussian, noise.salt_and_pepper, noise.shot: the input with noise
 * drawn per element (salt and pepper: per pixel unless per_channel), same
 * shape and type; integer outputs round to nearest even and saturate. */
#include "core/no_fma.h"

#include <string.h>

#include "ops/random/random_op.h"

enum { GN_MEAN, GN_STDDEV, GN_COUNT };
static const ladle_arg_schema gaussian_args[GN_COUNT] = {
    [GN_MEAN] = {LADLE_FLOAT_ARG("mean", 0.0), .per_sample = 1, .doc = "Mean of the noise."},
    [GN_STDDEV] = {LADLE_FLOAT_ARG("stddev", 1.0), .per_sample = 1, LADLE_RANGE(0.0, 1e300),
        .doc = "Standard deviation of the noise."},
};

enum { SP_PROB, SP_SALT_VS_PEPPER, SP_SALT_VAL, SP_PEPPER_VAL, SP_PER_CHANNEL, SP_COUNT };
static const ladle_arg_schema salt_pepper_args[SP_COUNT] = {
    [SP_PROB] = {LADLE_FLOAT_ARG("prob", 0.05), .per_sample = 1, LADLE_RANGE(0.0, 1.0),
        .doc = "Probability of a value (or pixel) to become salt or pepper."},
    [SP_SALT_VS_PEPPER] = {LADLE_FLOAT_ARG("salt_vs_pepper", 0.5), .per_sample = 1, LADLE_RANGE(0.0, 1.0),
        .doc = "Probability that a corrupted value is salt (else pepper)."},
    [SP_SALT_VAL] = {LADLE_OPTIONAL_ARG("salt_val", LADLE_ARG_FLOAT), .per_sample = 1,
        .doc = "Value of salt; default: 1.0 for floats, the type's maximum for integers (1 for BOOL)."},
    [SP_PEPPER_VAL] = {LADLE_OPTIONAL_ARG("pepper_val", LADLE_ARG_FLOAT), .per_sample = 1,
        .doc = "Value of pepper; default: -1.0 for floats, the type's minimum for integers (0 for BOOL)."},
    [SP_PER_CHANNEL] = {LADLE_BOOL_ARG("per_channel", 0),
        .doc = "True: each channel is corrupted independently; False: a pixel's channels together (the "
               "channels are the innermost axis, or the layout's C)."},
};

enum { SHOT_FACTOR, SHOT_COUNT };
static const ladle_arg_schema shot_args[SHOT_COUNT] = {
    [SHOT_FACTOR] = {LADLE_FLOAT_ARG("factor", 20.0), .per_sample = 1, LADLE_RANGE(0.0, 1e300),
        .doc = "out = Poisson(in / factor) * factor; 0: no noise."},
};

static ladle_status noise_init(ladle__node *n, int kind) {
  n->out[0] = n->in[0];
  return ladle__rand_state_init(n, kind, NULL, 0);
}

static ladle__rand_sample *noise_setup(ladle__node *n, ladle__sample *s) {
  ladle__tensor in = ladle__input(n, s, 0);
  int64_t count = 1;
  for (int d = 0; d < in.ndim; d++) count *= in.shape[d];
  ladle__set_shape(n, s, 0, in.shape);
  return ladle__rand_setup_sample(n, s, count);
}

static ladle_status gaussian_init(ladle__node *n) { return noise_init(n, LADLE_NOISE_GAUSSIAN); }

static ladle_status gaussian_setup(ladle__node *n, ladle__sample *s) {
  ladle__rand_sample *d = noise_setup(n, s);
  d->p[0] = ladle__arg_float(n, s, GN_MEAN);
  d->p[1] = ladle__arg_float(n, s, GN_STDDEV);
  return LADLE_OK;
}

/* The channel axis of a salt_and_pepper input: the layout's C, else the last. */
static int channel_axis(const ladle__out_desc *in) {
  const char *c = strchr(in->layout, 'C');
  return c ? (int)(c - in->layout) : in->ndim - 1;
}

static ladle_status salt_pepper_init(ladle__node *n) {
  if (!ladle__arg_int(n, NULL, SP_PER_CHANNEL) && n->in[0].ndim >= 1 && channel_axis(&n->in[0]) != n->in[0].ndim - 1)
    return LADLE_OP_FAIL(n, LADLE_ERROR_UNSUPPORTED,
                         "argument 'per_channel' = False needs channel-last data (layout \"%s\")", n->in[0].layout);
  return noise_init(n, LADLE_NOISE_SALT_PEPPER);
}

static ladle_status salt_pepper_setup(ladle__node *n, ladle__sample *s) {
  ladle__rand_sample *d = noise_setup(n, s);
  /* DALI's defaults: the type's maximum and minimum (2^63 and 2^64 saturate to the largest integer on the
   * store), 1 and -1 for floats. */
  static const double type_max[LADLE_DTYPE_COUNT] = {
      [LADLE_UINT8] = 255.0, [LADLE_INT8] = 127.0, [LADLE_INT16] = 32767.0, [LADLE_UINT16] = 65535.0,
      [LADLE_INT32] = 2147483647.0, [LADLE_UINT32] = 4294967295.0, [LADLE_INT64] = 9223372036854775808.0,
      [LADLE_UINT64] = 18446744073709551616.0, [LADLE_BOOL] = 1.0, [LADLE_FLOAT16] = 1.0, [LADLE_FLOAT32] = 1.0,
      [LADLE_FLOAT64] = 1.0};
  static const double type_min[LADLE_DTYPE_COUNT] = {
      [LADLE_INT8] = -128.0, [LADLE_INT16] = -32768.0, [LADLE_INT32] = -2147483648.0,
      [LADLE_INT64] = -9223372036854775808.0, [LADLE_FLOAT16] = -1.0, [LADLE_FLOAT32] = -1.0, [LADLE_FLOAT64] = -1.0};
  ladle_dtype t = n->in[0].dtype;
  double hi = t >= 0 && t < LADLE_DTYPE_COUNT ? type_max[t] : 1.0, lo = t >= 0 && t < LADLE_DTYPE_COUNT ? type_min[t] : -1.0;
  d->p[0] = ladle__arg_float(n, s, SP_PROB);
  d->p[1] = ladle__arg_float(n, s, SP_SALT_VS_PEPPER);
  d->p[2] = ladle__arg_given(n, SP_SALT_VAL) ? ladle__arg_float(n, s, SP_SALT_VAL) : hi;
  d->p[3] = ladle__arg_given(n, SP_PEPPER_VAL) ? ladle__arg_float(n, s, SP_PEPPER_VAL) : lo;
  ladle__tensor in = ladle__input(n, s, 0);
  if (!ladle__arg_int(n, NULL, SP_PER_CHANNEL) && in.ndim >= 2 && in.shape[in.ndim - 1] > 0)
    d->group = in.shape[in.ndim - 1];
  return LADLE_OK;
}

/* The state's table: lgamma(k + 1) for the Poisson sampler's rejection test
 * (a GPU reads it instead of computing its own, which may round otherwise). */
enum { SHOT_LGAMMA = 1024 };

static ladle_status shot_init(ladle__node *n) {
  double lgam[SHOT_LGAMMA];
  ladle__poisson_lgamma_table(lgam, SHOT_LGAMMA);
  n->out[0] = n->in[0];
  return ladle__rand_state_init(n, LADLE_NOISE_SHOT, lgam, SHOT_LGAMMA);
}

static ladle_status shot_setup(ladle__node *n, ladle__sample *s) {
  noise_setup(n, s)->p[0] = ladle__arg_float(n, s, SHOT_FACTOR);
  return LADLE_OK;
}

#define NOISE(sym, nm, docs, args_, count_, init_, setup_)                                          \
  const ladle__op_def ladle__op_##sym = {                                                           \
      .schema = {.name = nm, .doc = docs, .min_inputs = 1, .max_inputs = 1, .num_outputs = 1,       \
                 .devices = LADLE_ON_CPU_GPU, .flags = LADLE_OP_RANDOM, .num_args = count_,         \
                 .args = args_},                                                                    \
      .sample_state_size = sizeof(ladle__rand_sample),                                              \
      .init = init_, .fini = ladle__rand_fini, .setup = setup_, .run = ladle__rand_run,             \
      .run_batch = LADLE_RAND_RUN_BATCH,                                                            \
  }

NOISE(noise_gaussian, "noise.gaussian", "Adds normal noise N(mean, stddev^2) to every element.", gaussian_args,
      GN_COUNT, gaussian_init, gaussian_setup);
NOISE(noise_salt_and_pepper, "noise.salt_and_pepper",
      "Replaces values (or whole pixels) with salt or pepper with probability `prob`.", salt_pepper_args, SP_COUNT,
      salt_pepper_init, salt_pepper_setup);
NOISE(noise_shot, "noise.shot", "Shot (Poisson) noise: out = Poisson(in / factor) * factor.", shot_args, SHOT_COUNT,
      shot_init, shot_setup);
