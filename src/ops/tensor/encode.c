/* one_hot and lookup_table: integer inputs mapped to values of `dtype`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/tensor/tensor_args.h"

/* What both keep from init: the values in the output type. */
typedef struct encode_state {
  uint8_t on[8], off[8];
  int axis; /* one_hot: the new axis, in output dimensions */
  int64_t table_size;
  uint8_t *table; /* lookup_table */
} encode_state;

static void encode_fini(ladle__node *n) {
  encode_state *es = n->state;
  if (es) free(es->table);
  free(es);
}

static ladle_status integer_input(ladle__node *n, int allow_float) {
  ladle_dtype t = n->in[0].dtype;
  if (t == LADLE_UINT8 || t == LADLE_INT32 || t == LADLE_INT64 || (allow_float && t == LADLE_FLOAT32)) return LADLE_OK;
  return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "input type %s is not supported (integers%s)",
                       ladle_dtype_name(t), allow_float ? " or float32" : "");
}

static ladle_status encode_alloc(ladle__node *n, encode_state **out) {
  encode_state *es = calloc(1, sizeof *es);
  if (!es) return LADLE_OP_FAIL(n, LADLE_ERROR_OUT_OF_MEMORY, "out of memory");
  n->state = *out = es;
  return LADLE_OK;
}

/* --- one_hot ------------------------------------------------------------------------ */

enum { OH_NUM_CLASSES, OH_AXIS, OH_AXIS_NAME, OH_ON, OH_OFF, OH_DTYPE };

static const ladle_arg_schema one_hot_args[] = {
    {LADLE_INT_ARG("num_classes", 0), LADLE_RANGE(0, 1 << 30), .doc = "The length of the encoding axis."},
    {LADLE_INT_ARG("axis", -1), LADLE_RANGE(-1, LADLE_MAX_NDIM),
     .doc = "Where the new axis goes among the output dimensions; -1: last."},
    {LADLE_OPTIONAL_ARG("axis_name", LADLE_ARG_STRING), .doc = "The new axis's layout letter."},
    {LADLE_FLOAT_ARG("on_value", 1), .doc = "The value at the class index."},
    {LADLE_FLOAT_ARG("off_value", 0), .doc = "The value elsewhere."},
    {LADLE_DTYPE_ARG("dtype", LADLE_FLOAT32), .doc = "The output type."},
};

/* As DALI: a sample of one element is a scalar (the output is [num_classes]). */
static int one_hot_scalar(const ladle__node *n) { return n->in[0].ndim == 0; }

static ladle_status one_hot_init(ladle__node *n) {
  encode_state *es = NULL;
  ladle_status st = integer_input(n, 1);
  if (st == LADLE_OK) st = encode_alloc(n, &es);
  if (st != LADLE_OK) return st;
  int ndim = n->in[0].ndim, out_ndim = ndim + 1;
  int64_t axis = ladle__arg_int(n, NULL, OH_AXIS);
  const char *name = ladle__arg_string(n, OH_AXIS_NAME);
  if (out_ndim > LADLE_MAX_NDIM)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "%d output dimensions, at most %d", out_ndim, LADLE_MAX_NDIM);
  if (axis > ndim)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'axis' = %lld is out of range for %d output dimensions",
                         (long long)axis, out_ndim);
  es->axis = axis < 0 ? ndim : (int)axis;
  if (name && strlen(name) != 1)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'axis_name' must be one letter, got \"%s\"", name);
  ladle__out_desc *out = &n->out[0];
  *out = n->in[0];
  out->dtype = (ladle_dtype)ladle__arg_int(n, NULL, OH_DTYPE);
  out->ndim = out_ndim;
  memset(out->layout, 0, sizeof out->layout);
  if (name && (ndim == 0 || n->in[0].layout[0]))
    for (int d = 0, src = 0; d < out_ndim; d++) out->layout[d] = d == es->axis ? name[0] : n->in[0].layout[src++];
  ladle__tensor_value(es->on, out->dtype, ladle__arg_float(n, NULL, OH_ON));
  ladle__tensor_value(es->off, out->dtype, ladle__arg_float(n, NULL, OH_OFF));
  (void)one_hot_scalar;
  return LADLE_OK;
}

static ladle_status one_hot_setup(ladle__node *n, ladle__sample *s) {
  const encode_state *es = n->state;
  ladle__tensor in = ladle__input(n, s, 0);
  int64_t out[LADLE_MAX_NDIM];
  for (int d = 0, src = 0; d < n->out[0].ndim; d++)
    out[d] = d == es->axis ? ladle__arg_int(n, NULL, OH_NUM_CLASSES) : in.shape[src++];
  ladle__set_shape(n, s, 0, out);
  return LADLE_OK;
}

static ladle__one_hot_desc one_hot_desc(const ladle__node *n, int slot) {
  const encode_state *es = n->state;
  const int64_t *sh = ladle_batch_shape(n->in_batches[0], slot);
  ladle__one_hot_desc d = {ladle_batch_data(n->out_batches[0], slot), ladle_batch_data(n->in_batches[0], slot), 1, 1};
  for (int k = 0; k < n->in[0].ndim; k++) {
    if (k < es->axis) d.outer *= sh[k];
    else d.inner *= sh[k];
  }
  return d;
}

/* float32 inputs: the class is the value truncated, as DALI does; here the
 * input is converted to int32 first so that one kernel serves. */
static ladle_status one_hot_run(ladle__node *n, ladle__sample *s) {
  const encode_state *es = n->state;
  ladle__one_hot_desc d = one_hot_desc(n, s->slot);
  ladle_dtype t = n->in[0].dtype;
  if (t == LADLE_FLOAT32) {
    int64_t count = d.outer * d.inner;
    int32_t *ints = NULL;
    ladle_status st = ladle__scratch(n, s, sizeof *ints * (size_t)(count ? count : 1), (void **)&ints);
    if (st != LADLE_OK) return st;
    for (int64_t i = 0; i < count; i++) {
      float v = ((const float *)d.in)[i];
      ints[i] = v > -1 && v < 2147483647.0f ? (int32_t)v : -1;
    }
    d.in = ints;
    t = LADLE_INT32;
  }
  ladle__one_hot(&d, t, ladle__arg_int(n, NULL, OH_NUM_CLASSES), (int)ladle_dtype_size(n->out[0].dtype), es->on, es->off);
  return LADLE_OK;
}

#ifdef LADLE_HAVE_CUDA
static ladle_status one_hot_run_batch(ladle__node *n, ladle__gpu *g) {
  const encode_state *es = n->state;
  int batch = n->config->batch_size;
  if (n->in[0].dtype == LADLE_FLOAT32)
    return LADLE_OP_FAIL(n, LADLE_ERROR_NOT_AVAILABLE, "float32 input on the GPU is not supported: cast it to int32");
  ladle__one_hot_desc *d = NULL;
  ladle_status st = ladle__scratch(n, &(ladle__sample){.worker = 0}, sizeof *d * (size_t)batch, (void **)&d);
  for (int i = 0; st == LADLE_OK && i < batch; i++) d[i] = one_hot_desc(n, i);
  int esz = (int)ladle_dtype_size(n->out[0].dtype);
  size_t bytes = ladle__gpu_one_hot_param_bytes(batch, esz);
  void *host = NULL, *dev = NULL;
  if (st == LADLE_OK) st = ladle__gpu_params(g, bytes, &host, &dev);
  if (st == LADLE_OK)
    st = ladle__gpu_one_hot(d, batch, n->in[0].dtype, ladle__arg_int(n, NULL, OH_NUM_CLASSES), esz, es->on, es->off,
                            host, dev, bytes, g->stream);
  return st;
}
#endif

const ladle__op_def ladle__op_one_hot = {
    .schema = {.name = "one_hot",
               .doc = "One-hot encoding: a new axis of num_classes values, on_value at the input's class index and "
                      "off_value elsewhere (classes outside [0, num_classes): all off). float32 classes are "
                      "truncated (CPU only).",
               .min_inputs = 1, .max_inputs = 1, .num_outputs = 1, .devices = LADLE_ON_CPU_GPU,
               .num_args = 6, .args = one_hot_args},
    .init = one_hot_init,
    .fini = encode_fini,
    .setup = one_hot_setup,
    .run = one_hot_run,
    .run_batch = IF_CUDA(one_hot_run_batch),
};

/* --- lookup_table ---------------------------------------------------------------------- */

enum { LT_KEYS, LT_VALUES, LT_DEFAULT, LT_DTYPE };

static const int64_t no_keys[] = {0};
static const double no_values[] = {0};

static const ladle_arg_schema lookup_args[] = {
    {.name = "keys", .type = LADLE_ARG_INTS, .default_value = {LADLE_ARG_INTS, 0, {.ints = no_keys}},
     LADLE_RANGE(0, 65535), .doc = "The input values that are mapped (0 to 65535)."},
    {.name = "values", .type = LADLE_ARG_FLOATS, .default_value = {LADLE_ARG_FLOATS, 0, {.floats = no_values}},
     .doc = "The value of each key."},
    {LADLE_FLOAT_ARG("default_value", 0), .doc = "The value of inputs that are not keys."},
    {LADLE_DTYPE_ARG("dtype", LADLE_FLOAT32), .deprecated_name = "output_dtype", .doc = "The output type."},
};

static ladle_status lookup_init(ladle__node *n) {
  encode_state *es = NULL;
  ladle_status st = integer_input(n, 0);
  if (st == LADLE_OK) st = encode_alloc(n, &es);
  if (st != LADLE_OK) return st;
  const ladle_value *keys = ladle__arg_value(n, LT_KEYS), *values = ladle__arg_value(n, LT_VALUES);
  if (keys->count != values->count)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "arguments 'keys' (%d) and 'values' (%d) differ in length",
                         keys->count, values->count);
  ladle_dtype t = (ladle_dtype)ladle__arg_int(n, NULL, LT_DTYPE);
  size_t esz = ladle_dtype_size(t);
  for (int k = 0; k < keys->count; k++)
    if (keys->u.ints[k] + 1 > es->table_size) es->table_size = keys->u.ints[k] + 1;
  es->table = malloc((size_t)(es->table_size ? es->table_size : 1) * esz);
  if (!es->table) return LADLE_OP_FAIL(n, LADLE_ERROR_OUT_OF_MEMORY, "out of memory");
  uint8_t v[8];
  ladle__tensor_value(es->off, t, ladle__arg_float(n, NULL, LT_DEFAULT));
  for (int64_t i = 0; i < es->table_size; i++) memcpy(es->table + i * esz, es->off, esz);
  for (int k = 0; k < keys->count; k++) { /* a repeated key: the last value wins */
    ladle__tensor_value(v, t, values->u.floats[k]);
    memcpy(es->table + keys->u.ints[k] * esz, v, esz);
  }
  n->out[0] = n->in[0];
  n->out[0].dtype = t;
  return LADLE_OK;
}

static ladle__lookup_desc lookup_desc(const ladle__node *n, int slot) {
  ladle__lookup_desc d = {ladle_batch_data(n->out_batches[0], slot), ladle_batch_data(n->in_batches[0], slot),
                          ladle__batch_sample_elems(n->in_batches[0], slot)};
  return d;
}

static ladle_status lookup_run(ladle__node *n, ladle__sample *s) {
  const encode_state *es = n->state;
  ladle__lookup_desc d = lookup_desc(n, s->slot);
  ladle__lookup(&d, n->in[0].dtype, (int)ladle_dtype_size(n->out[0].dtype), es->table, es->table_size, es->off);
  return LADLE_OK;
}

#ifdef LADLE_HAVE_CUDA
static ladle_status lookup_run_batch(ladle__node *n, ladle__gpu *g) {
  const encode_state *es = n->state;
  int batch = n->config->batch_size, esz = (int)ladle_dtype_size(n->out[0].dtype);
  ladle__lookup_desc *d = NULL;
  ladle_status st = ladle__scratch(n, &(ladle__sample){.worker = 0}, sizeof *d * (size_t)batch, (void **)&d);
  for (int i = 0; st == LADLE_OK && i < batch; i++) d[i] = lookup_desc(n, i);
  size_t bytes = ladle__gpu_lookup_param_bytes(batch, esz, es->table_size);
  void *host = NULL, *dev = NULL;
  if (st == LADLE_OK) st = ladle__gpu_params(g, bytes, &host, &dev);
  if (st == LADLE_OK)
    st = ladle__gpu_lookup(d, batch, n->in[0].dtype, esz, es->table, es->table_size, es->off, host, dev, bytes, g->stream);
  return st;
}
#endif

const ladle__op_def ladle__op_lookup_table = {
    .schema = {.name = "lookup_table",
               .doc = "Maps integer inputs through a table: keys[i] becomes values[i], anything else default_value.",
               .min_inputs = 1, .max_inputs = 1, .num_outputs = 1, .devices = LADLE_ON_CPU_GPU,
               .num_args = 4, .args = lookup_args},
    .init = lookup_init,
    .fini = encode_fini,
    .setup = ladle__tensor_same_shape_setup,
    .run = lookup_run,
    .run_batch = IF_CUDA(lookup_run_batch),
};
