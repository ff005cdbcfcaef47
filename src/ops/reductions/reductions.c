/* fn.reductions.{sum,min,max,mean,mean_square,rms,std_dev,variance}: DALI's
 * reductions over `axes` / `axis_names` (default: all axes), the reduced axes
 * removed from the output or kept with extent 1 (keep_dims). std_dev and
 * variance take the mean as a second input (float32, one value per output
 * element or one per sample), as DALI's do, and divide by N - ddof. Output
 * types as DALI's: sum gives int64 for signed integers, uint64 for unsigned
 * ones and float32 for floats; min and max the input's type; the others
 * float32; `dtype` (sum, mean, mean_square, rms) chooses another. The
 * arithmetic (reduce_core.h) is shared with the CUDA kernels. */
#include <string.h>

#include "ops/filter/filter.h"
#include "ops/reductions/reduce_core.h"
#include "ops/reductions/reduce_kernels.h"

enum { RA_AXES, RA_AXIS_NAMES, RA_KEEP_DIMS, RA_EXTRA, RA_COUNT };

#define RED_COMMON_ARGS                                                                                          \
  [RA_AXES] = {LADLE_OPTIONAL_ARG("axes", LADLE_ARG_INTS), LADLE_RANGE(-64, 63),                                 \
               .doc = "Axes to reduce (negative: from the end); default: all of them."},                        \
  [RA_AXIS_NAMES] = {LADLE_OPTIONAL_ARG("axis_names", LADLE_ARG_STRING),                                         \
                     .doc = "The axes to reduce as layout letters (\"HW\"); instead of `axes`."},                \
  [RA_KEEP_DIMS] = {LADLE_BOOL_ARG("keep_dims", 0), .doc = "True: reduced axes stay, with extent 1."}

static const ladle_arg_schema plain_args[RA_COUNT - 1] = {RED_COMMON_ARGS};
static const ladle_arg_schema dtype_args[RA_COUNT] = {
    RED_COMMON_ARGS,
    [RA_EXTRA] = {LADLE_OPTIONAL_ARG("dtype", LADLE_ARG_DTYPE),
                  .doc = "Output type; default as DALI's (see the operator). Integers round to nearest even and "
                         "saturate."},
};
static const ladle_arg_schema ddof_args[RA_COUNT] = {
    RED_COMMON_ARGS,
    [RA_EXTRA] = {LADLE_INT_ARG("ddof", 0), LADLE_RANGE(0, 1e9),
                  .doc = "Delta degrees of freedom: divides by N - ddof (N: the reduced elements)."},
};

typedef struct red_node {
  int kind;
  int reduced[LADLE_MAX_NDIM];
} red_node;

typedef struct red_sample {
  int64_t groups, members;
} red_sample;

static int op_kind(const ladle__node *n);

static ladle_status red_init(ladle__node *n) {
  const ladle__out_desc *in = &n->in[0];
  red_node *st = calloc(1, sizeof *st);
  if (!st) return LADLE_OP_FAIL(n, LADLE_ERROR_OUT_OF_MEMORY, "out of memory");
  n->state = st;
  st->kind = op_kind(n);
  if (in->dtype == LADLE_FLOAT16 || in->dtype == LADLE_BOOL)
    return LADLE_OP_FAIL(n, LADLE_ERROR_UNSUPPORTED, "input of type %s is not supported (cast it first)",
                         ladle_dtype_name(in->dtype));
  LADLE_TRY_OP(ladle__reduced_axes(n, RA_AXES, RA_AXIS_NAMES, st->reduced));
  int keep = (int)ladle__arg_int(n, NULL, RA_KEEP_DIMS);
  ladle__out_desc *out = &n->out[0];
  memset(out, 0, sizeof *out);
  for (int d = 0, k = 0; d < in->ndim; d++) {
    if (st->reduced[d] && !keep) continue;
    if (in->layout[0] && k < (int)sizeof out->layout - 1) out->layout[k] = in->layout[d];
    out->ndim = ++k;
  }
  if (keep) memcpy(out->layout, in->layout, sizeof out->layout);
  int is_float = ladle__dtype_is_float(in->dtype);
  switch (st->kind) {
    case LADLE__RED_SUM:
      out->dtype = is_float ? LADLE_FLOAT32
                   : (in->dtype == LADLE_UINT8 || in->dtype == LADLE_UINT16 || in->dtype == LADLE_UINT32 ||
                      in->dtype == LADLE_UINT64)
                       ? LADLE_UINT64
                       : LADLE_INT64;
      break;
    case LADLE__RED_MIN: case LADLE__RED_MAX: out->dtype = in->dtype; break;
    default: out->dtype = LADLE_FLOAT32; break;
  }
  if (n->def->schema.num_args > RA_EXTRA && n->def->schema.args[RA_EXTRA].type == LADLE_ARG_DTYPE &&
      ladle__arg_given(n, RA_EXTRA))
    out->dtype = (ladle_dtype)ladle__arg_int(n, NULL, RA_EXTRA);
  if (out->dtype == LADLE_FLOAT16)
    return LADLE_OP_FAIL(n, LADLE_ERROR_UNSUPPORTED, "argument 'dtype': FLOAT16 is not supported here");
  if (st->kind == LADLE__RED_STD_DEV || st->kind == LADLE__RED_VARIANCE) {
    if (n->num_inputs != 2)
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "needs 2 inputs, the data and its mean");
    if (n->in[1].dtype != LADLE_FLOAT32)
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "input 1 (mean) must be float32, got %s",
                           ladle_dtype_name(n->in[1].dtype));
  }
  return LADLE_OK;
}

static void red_fini(ladle__node *n) {
  free(n->state);
  n->state = NULL;
}

static ladle_status red_setup(ladle__node *n, ladle__sample *s) {
  const red_node *st = n->state;
  red_sample *rs = s->state;
  ladle__tensor in = ladle__input(n, s, 0);
  int keep = (int)ladle__arg_int(n, NULL, RA_KEEP_DIMS);
  int64_t shape[LADLE_MAX_NDIM];
  int k = 0;
  rs->groups = rs->members = 1;
  for (int d = 0; d < in.ndim; d++) {
    if (st->reduced[d]) rs->members *= in.shape[d];
    else rs->groups *= in.shape[d];
    if (!st->reduced[d]) shape[k++] = in.shape[d];
    else if (keep) shape[k++] = 1;
  }
  if (rs->members == 0 && rs->groups > 0 && st->kind != LADLE__RED_SUM)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "%s: the reduced axes have no elements",
                         s->name ? s->name : "a sample");
  if (st->kind == LADLE__RED_STD_DEV || st->kind == LADLE__RED_VARIANCE) {
    ladle__tensor mean = ladle__input(n, s, 1);
    int64_t count = 1;
    for (int d = 0; d < mean.ndim; d++) count *= mean.shape[d];
    if (count != 1 && count != rs->groups)
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT,
                           "input 1 (mean) has %lld values; give 1 or %lld (one per output element)",
                           (long long)count, (long long)rs->groups);
    if (rs->groups && rs->members - ladle__arg_int(n, NULL, RA_EXTRA) <= 0)
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'ddof' = %lld: must be below the %lld reduced "
                           "elements", (long long)ladle__arg_int(n, NULL, RA_EXTRA), (long long)rs->members);
  }
  ladle__set_shape(n, s, 0, shape);
  return LADLE_OK;
}

/* The descriptor of a sample; part left NULL. */
static void describe(const ladle__node *n, const ladle__sample *s, ladle__reduce_desc *d) {
  const red_node *st = n->state;
  const red_sample *rs = s->state;
  ladle__tensor in = ladle__input(n, s, 0), out = ladle__output(n, s, 0);
  memset(d, 0, sizeof *d);
  d->in = in.data;
  d->out = out.data;
  d->in_type = in.dtype;
  d->out_type = out.dtype;
  d->kind = st->kind;
  d->mode = ladle__reduce_mode(st->kind, in.dtype);
  d->ndim = in.ndim;
  for (int k = 0; k < in.ndim; k++) {
    d->shape[k] = in.shape[k];
    d->reduced[k] = st->reduced[k];
  }
  d->groups = rs->groups;
  d->members = rs->members;
  d->chunks = (rs->members + LADLE__REDUCE_CHUNK - 1) / LADLE__REDUCE_CHUNK;
  if (d->chunks < 1) d->chunks = 1;
  d->divisor = (double)rs->members;
  if (st->kind == LADLE__RED_STD_DEV || st->kind == LADLE__RED_VARIANCE) {
    ladle__tensor mean = ladle__input(n, s, 1);
    d->mean = mean.data;
    d->mean_count = 1;
    for (int k = 0; k < mean.ndim; k++) d->mean_count *= (int)mean.shape[k];
    d->divisor = (double)(rs->members - ladle__arg_int(n, NULL, RA_EXTRA));
  }
}

static ladle_status red_run(ladle__node *n, ladle__sample *s) {
  ladle__reduce_desc d;
  describe(n, s, &d);
  if (!d.groups) return LADLE_OK;
  LADLE_TRY_OP(ladle__scratch(n, s, sizeof *d.part * (size_t)(d.groups * d.chunks), (void **)&d.part));
  for (int64_t g = 0; g < d.groups; g++)
    for (int64_t c = 0; c < d.chunks; c++) d.part[g * d.chunks + c] = ladle__reduce_chunk(&d, g, c);
  for (int64_t g = 0; g < d.groups; g++) ladle__reduce_finish(&d, g);
  return LADLE_OK;
}

#ifdef LADLE_HAVE_CUDA
static ladle_status red_run_batch(ladle__node *n, ladle__gpu *g) {
  int batch = n->config->batch_size, count = 0;
  ladle__reduce_desc *descs = NULL;
  LADLE_TRY_OP(ladle__scratch(n, &(ladle__sample){.worker = 0}, sizeof *descs * (size_t)batch, (void **)&descs));
  size_t parts = 0;
  for (int i = 0; i < batch; i++) {
    ladle__sample s = {.slot = i, .state = n->sample_states + (size_t)i * n->def->sample_state_size};
    describe(n, &s, &descs[count]);
    if (!descs[count].groups) continue;
    if (descs[count].chunks > 1) parts += (size_t)(descs[count].groups * descs[count].chunks);
    count++;
  }
  if (!count) return LADLE_OK;
  ladle__reduce_acc *part = NULL; /* chunk results; a group of one chunk is stored at once */
  if (parts) LADLE_TRY_OP(ladle__gpu_device_scratch(g, sizeof *part * parts, (void **)&part));
  for (int i = 0; i < count; i++) {
    if (descs[i].chunks == 1) continue;
    descs[i].part = part;
    part += descs[i].groups * descs[i].chunks;
  }
  void *host = NULL, *dev = NULL;
  size_t bytes = ladle__gpu_reduce_param_bytes(count);
  LADLE_TRY_OP(ladle__gpu_params(g, bytes, &host, &dev));
  return ladle__gpu_reduce(descs, count, host, dev, bytes, g->stream);
}
#define RED_RUN_BATCH red_run_batch
#else
#define RED_RUN_BATCH NULL
#endif

#define RED_OP(sym, dali_name, text, nin, arg_rows)                                                           \
  const ladle__op_def ladle__op_reductions_##sym = {                                                          \
      .schema = {.name = "reductions." dali_name, .doc = text, .min_inputs = nin, .max_inputs = nin,          \
                 .num_outputs = 1, .devices = LADLE_ON_CPU_GPU,                                               \
                 .num_args = (int)(sizeof arg_rows / sizeof arg_rows[0]), .args = arg_rows},                  \
      .sample_state_size = sizeof(red_sample),                                                                \
      .init = red_init,                                                                                       \
      .fini = red_fini,                                                                                       \
      .setup = red_setup,                                                                                     \
      .run = red_run,                                                                                         \
      .run_batch = RED_RUN_BATCH,                                                                             \
  };

RED_OP(sum, "sum", "Sum of the elements along the axes (integers exactly, in int64/uint64).", 1, dtype_args)
RED_OP(min, "min", "The smallest element along the axes.", 1, plain_args)
RED_OP(max, "max", "The largest element along the axes.", 1, plain_args)
RED_OP(mean, "mean", "Mean of the elements along the axes.", 1, dtype_args)
RED_OP(mean_square, "mean_square", "Mean of the squared elements along the axes.", 1, dtype_args)
RED_OP(rms, "rms", "Root mean square of the elements along the axes.", 1, dtype_args)
RED_OP(std_dev, "std_dev", "Standard deviation around the given mean (input 1) along the axes: "
       "sqrt(sum((x - mean)^2) / (N - ddof)).", 2, ddof_args)
RED_OP(variance, "variance", "Variance around the given mean (input 1) along the axes: "
       "sum((x - mean)^2) / (N - ddof).", 2, ddof_args)

static int op_kind(const ladle__node *n) {
  const ladle__op_def *d = n->def;
  return d == &ladle__op_reductions_sum ? LADLE__RED_SUM
         : d == &ladle__op_reductions_min ? LADLE__RED_MIN
         : d == &ladle__op_reductions_max ? LADLE__RED_MAX
         : d == &ladle__op_reductions_mean ? LADLE__RED_MEAN
         : d == &ladle__op_reductions_mean_square ? LADLE__RED_MEAN_SQUARE
         : d == &ladle__op_reductions_rms ? LADLE__RED_RMS
         : d == &ladle__op_reductions_std_dev ? LADLE__RED_STD_DEV
                                              : LADLE__RED_VARIANCE;
}
