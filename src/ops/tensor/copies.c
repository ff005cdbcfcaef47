/* Operators that move elements, all through one strided copy with fill
 * (tensor_kernels.h): copy, transpose, stack, cat, pad, slice,
 * element_extract. Each says what its samples' copies are (a *_plan); the
 * shared runners do the rest on the CPU or in one GPU launch per batch. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/tensor/tensor_args.h"

#ifdef LADLE_HAVE_CUDA
#include "cuda/runtime.h"
#endif

/* Every plan's output batch k, sample `slot`. */
static void *out_data(const ladle__node *n, int k, int slot) { return ladle_batch_data(n->out_batches[k], slot); }
static const int64_t *in_shape(const ladle__node *n, int k, int slot) { return ladle_batch_shape(n->in_batches[k], slot); }
static int elem_size(const ladle__node *n) { return (int)ladle_dtype_size(n->out[0].dtype); }

/* The inputs of a several-input operator agree on type and rank. */
static ladle_status same_inputs(ladle__node *n) {
  for (int k = 1; k < n->num_inputs; k++) {
    if (n->in[k].dtype != n->in[0].dtype)
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "input %d is %s, input 0 is %s: the types must be equal", k,
                           ladle_dtype_name(n->in[k].dtype), ladle_dtype_name(n->in[0].dtype));
    if (n->in[k].ndim != n->in[0].ndim)
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "input %d has %d dimensions, input 0 has %d: they must be equal",
                           k, n->in[k].ndim, n->in[0].ndim);
    if (n->in[k].layout[0] && n->in[0].layout[0] && strcmp(n->in[k].layout, n->in[0].layout) != 0)
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "input %d has layout \"%s\", input 0 \"%s\": they must be equal",
                           k, n->in[k].layout, n->in[0].layout);
  }
  return LADLE_OK;
}

static ladle_status same_desc_init(ladle__node *n) {
  n->out[0] = n->in[0];
  return LADLE_OK;
}

/* --- copy --------------------------------------------------------------------- */

static ladle_status copy_run(ladle__node *n, ladle__sample *s) {
  ladle__tensor in = ladle__input(n, s, 0), out = ladle__output(n, s, 0);
  memcpy(out.data, in.data, (size_t)ladle__batch_sample_elems(n->in_batches[0], s->slot) * ladle_dtype_size(in.dtype));
  return LADLE_OK;
}

#ifdef LADLE_HAVE_CUDA
static ladle_status copy_run_batch(ladle__node *n, ladle__gpu *g) {
  ladle_batch *in = n->in_batches[0], *out = n->out_batches[0];
  return ladle__cuda_copy(out->data, in->data, in->offsets[in->num_samples], g->stream);
}
#endif

const ladle__op_def ladle__op_copy = {
    .schema = {.name = "copy", .doc = "Copies the input (a new buffer with the same contents).",
               .min_inputs = 1, .max_inputs = 1, .num_outputs = 1, .devices = LADLE_ON_CPU_GPU},
    .init = same_desc_init,
    .setup = ladle__tensor_same_shape_setup,
    .run = copy_run,
    .run_batch = IF_CUDA(copy_run_batch),
};

/* --- transpose ------------------------------------------------------------------ */

static const ladle_arg_schema transpose_args[] = {
    {LADLE_REQUIRED_ARG("perm", LADLE_ARG_INTS), .doc = "Output dimension i is input dimension perm[i]."},
    {LADLE_BOOL_ARG("transpose_layout", 1), .doc = "1: the layout letters move with their dimensions."},
    {LADLE_OPTIONAL_ARG("output_layout", LADLE_ARG_STRING), .doc = "The output layout (overrides transpose_layout)."},
};

static ladle_status transpose_init(ladle__node *n) {
  const ladle_value *perm = ladle__arg_value(n, 0);
  int ndim = n->in[0].ndim, seen[LADLE_MAX_NDIM] = {0};
  if (perm->count != ndim)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'perm' has %d values for an input of %d dimensions",
                         perm->count, ndim);
  for (int d = 0; d < ndim; d++) {
    int64_t p = perm->u.ints[d];
    if (p < 0 || p >= ndim || seen[p])
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'perm' is not a permutation of 0..%d", ndim - 1);
    seen[p] = 1;
  }
  ladle__out_desc *out = &n->out[0];
  *out = n->in[0];
  const char *layout = ladle__arg_string(n, 2);
  if (layout) {
    if (layout[0] && (int)strlen(layout) != ndim)
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'output_layout' \"%s\" has %d letters for %d dimensions",
                           layout, (int)strlen(layout), ndim);
    snprintf(out->layout, sizeof out->layout, "%s", layout);
  } else if (ladle__arg_int(n, NULL, 1) && n->in[0].layout[0]) {
    for (int d = 0; d < ndim; d++) out->layout[d] = n->in[0].layout[perm->u.ints[d]];
  }
  return LADLE_OK;
}

static ladle_status transpose_setup(ladle__node *n, ladle__sample *s) {
  const ladle_value *perm = ladle__arg_value(n, 0);
  ladle__tensor in = ladle__input(n, s, 0);
  int64_t out[LADLE_MAX_NDIM];
  for (int d = 0; d < in.ndim; d++) out[d] = in.shape[perm->u.ints[d]];
  ladle__set_shape(n, s, 0, out);
  return LADLE_OK;
}

static int transpose_plan(const ladle__node *n, int slot, ladle__strided_desc *d, int max) {
  (void)max;
  const ladle_value *perm = ladle__arg_value(n, 0);
  const int64_t *shape = in_shape(n, 0, slot);
  int ndim = n->in[0].ndim;
  int64_t out[LADLE_MAX_NDIM], strides[LADLE_MAX_NDIM];
  for (int k = 0; k < ndim; k++) out[k] = shape[perm->u.ints[k]];
  ladle__strided_dense(d, out_data(n, 0, slot), ladle_batch_data(n->in_batches[0], slot), ndim, elem_size(n), out, out,
                       NULL);
  ladle__dense_strides(strides, shape, ndim);
  for (int k = 0; k < ndim; k++) d->in_stride[k] = strides[perm->u.ints[k]];
  return 1;
}

static ladle_status transpose_run(ladle__node *n, ladle__sample *s) { return ladle__strided_run(n, s, transpose_plan, 1); }
static ladle_status transpose_run_batch(ladle__node *n, ladle__gpu *g) {
  return ladle__strided_run_batch(n, g, transpose_plan, 1);
}

const ladle__op_def ladle__op_transpose = {
    .schema = {.name = "transpose", .doc = "Reorders the dimensions: output dimension i is input dimension perm[i].",
               .min_inputs = 1, .max_inputs = 1, .num_outputs = 1, .devices = LADLE_ON_CPU_GPU,
               .num_args = 3, .args = transpose_args},
    .init = transpose_init,
    .setup = transpose_setup,
    .run = transpose_run,
    .run_batch = transpose_run_batch,
};

/* --- stack and cat ---------------------------------------------------------------- */

static const ladle_arg_schema join_args[] = {
    {LADLE_INT_ARG("axis", 0), LADLE_RANGE(-LADLE_MAX_NDIM - 1, LADLE_MAX_NDIM),
     .doc = "The axis (negative: counted from the end of the output)."},
    {LADLE_OPTIONAL_ARG("axis_name", LADLE_ARG_STRING),
     .doc = "cat: the axis as a layout letter; stack: the new axis's layout letter."},
};

typedef struct join_state {
  int axis;
} join_state;

static ladle_status join_init(ladle__node *n, int stack) {
  ladle_status st = same_inputs(n);
  if (st != LADLE_OK) return st;
  int ndim = n->in[0].ndim, out_ndim = ndim + stack;
  int64_t axis = ladle__arg_int(n, NULL, 0);
  const char *name = ladle__arg_string(n, 1);
  if (out_ndim > LADLE_MAX_NDIM)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "%d output dimensions, at most %d", out_ndim, LADLE_MAX_NDIM);
  if (!stack && name) {
    if (ladle__arg_given(n, 0))
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "give either 'axis' or 'axis_name', not both");
    const char *at = name[0] && strlen(name) == 1 ? strchr(n->in[0].layout, name[0]) : NULL;
    if (!at || !n->in[0].layout[0])
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'axis_name': \"%s\" is not a letter of the input layout \"%s\"",
                           name, n->in[0].layout);
    axis = at - n->in[0].layout;
  }
  if (axis < 0) axis += out_ndim;
  if (axis < 0 || axis >= out_ndim || (stack && axis > ndim))
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'axis' = %lld is out of range for %d output dimensions",
                         (long long)ladle__arg_int(n, NULL, 0), out_ndim);
  join_state *js = calloc(1, sizeof *js);
  if (!js) return LADLE_OP_FAIL(n, LADLE_ERROR_OUT_OF_MEMORY, "out of memory");
  js->axis = (int)axis;
  n->state = js;
  ladle__out_desc *out = &n->out[0];
  *out = n->in[0];
  out->ndim = out_ndim;
  if (stack) {
    memset(out->layout, 0, sizeof out->layout);
    if (name && (strlen(name) != 1 || (ndim > 0 && !n->in[0].layout[0])))
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT,
                           "argument 'axis_name' must be one letter, for inputs with a layout");
    for (int d = 0, src = 0; name && d < out_ndim; d++) out->layout[d] = d == axis ? name[0] : n->in[0].layout[src++];
  }
  return LADLE_OK;
}

static ladle_status stack_init(ladle__node *n) { return join_init(n, 1); }
static ladle_status cat_init(ladle__node *n) { return join_init(n, 0); }
static void join_fini(ladle__node *n) { free(n->state); }

static ladle_status join_setup(ladle__node *n, ladle__sample *s, int stack) {
  const join_state *js = n->state;
  int ndim = n->in[0].ndim;
  const int64_t *first = in_shape(n, 0, s->slot);
  int64_t out[LADLE_MAX_NDIM], total = 0;
  for (int k = 0; k < n->num_inputs; k++) {
    const int64_t *sh = in_shape(n, k, s->slot);
    for (int d = 0; d < ndim; d++)
      if (sh[d] != first[d] && (stack || d != js->axis))
        return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT,
                             "input %d has extent %lld in dimension %d, input 0 %lld: they must be equal%s", k,
                             (long long)sh[d], d, (long long)first[d], stack ? "" : " outside the axis");
    if (!stack) total += sh[js->axis];
  }
  for (int d = 0, src = 0; d < n->out[0].ndim; d++)
    out[d] = stack && d == js->axis ? n->num_inputs : !stack && d == js->axis ? (src++, total) : first[src++];
  ladle__set_shape(n, s, 0, out);
  return LADLE_OK;
}

static ladle_status stack_setup(ladle__node *n, ladle__sample *s) { return join_setup(n, s, 1); }
static ladle_status cat_setup(ladle__node *n, ladle__sample *s) { return join_setup(n, s, 0); }

/* Input k lands in the output at `offset` along the axis; stack's inputs
 * skip the new axis in the output's strides. */
static int join_plan(const ladle__node *n, int slot, ladle__strided_desc *d, int stack) {
  const join_state *js = n->state;
  int ndim = n->in[0].ndim, es = elem_size(n);
  int64_t out_strides[LADLE_MAX_NDIM], offset = 0;
  ladle__dense_strides(out_strides, ladle_batch_shape(n->out_batches[0], slot), n->out[0].ndim);
  for (int k = 0; k < n->num_inputs; k++) {
    const int64_t *sh = in_shape(n, k, slot);
    uint8_t *base = (uint8_t *)out_data(n, 0, slot) + offset * out_strides[js->axis] * es;
    ladle__strided_dense(&d[k], base, ladle_batch_data(n->in_batches[k], slot), ndim, es, sh, sh, NULL);
    for (int i = 0; i < ndim; i++) d[k].out_stride[i] = out_strides[stack && i >= js->axis ? i + 1 : i];
    offset += stack ? 1 : sh[js->axis];
  }
  return n->num_inputs;
}

static int stack_plan(const ladle__node *n, int slot, ladle__strided_desc *d, int max) { (void)max; return join_plan(n, slot, d, 1); }
static int cat_plan(const ladle__node *n, int slot, ladle__strided_desc *d, int max) { (void)max; return join_plan(n, slot, d, 0); }
static ladle_status stack_run(ladle__node *n, ladle__sample *s) { return ladle__strided_run(n, s, stack_plan, LADLE_MAX_INPUTS); }
static ladle_status cat_run(ladle__node *n, ladle__sample *s) { return ladle__strided_run(n, s, cat_plan, LADLE_MAX_INPUTS); }
static ladle_status stack_run_batch(ladle__node *n, ladle__gpu *g) {
  return ladle__strided_run_batch(n, g, stack_plan, LADLE_MAX_INPUTS);
}
static ladle_status cat_run_batch(ladle__node *n, ladle__gpu *g) { return ladle__strided_run_batch(n, g, cat_plan, LADLE_MAX_INPUTS); }

const ladle__op_def ladle__op_stack = {
    .schema = {.name = "stack",
               .doc = "Joins the inputs (equal type and shape per sample) along a new axis.",
               .min_inputs = 1, .max_inputs = LADLE_MAX_INPUTS, .num_outputs = 1, .devices = LADLE_ON_CPU_GPU,
               .num_args = 2, .args = join_args},
    .init = stack_init,
    .fini = join_fini,
    .setup = stack_setup,
    .run = stack_run,
    .run_batch = stack_run_batch,
};

const ladle__op_def ladle__op_cat = {
    .schema = {.name = "cat",
               .doc = "Joins the inputs (equal type, rank and extents outside the axis) along an existing axis.",
               .min_inputs = 1, .max_inputs = LADLE_MAX_INPUTS, .num_outputs = 1, .devices = LADLE_ON_CPU_GPU,
               .num_args = 2, .args = join_args},
    .init = cat_init,
    .fini = join_fini,
    .setup = cat_setup,
    .run = cat_run,
    .run_batch = cat_run_batch,
};

/* --- pad ---------------------------------------------------------------------------- */

enum { PAD_AXES, PAD_AXIS_NAMES, PAD_SHAPE, PAD_ALIGN, PAD_FILL };

static const ladle_arg_schema pad_args[] = {
    {LADLE_OPTIONAL_ARG("axes", LADLE_ARG_INTS), .doc = "The axes to pad (negative: from the end); default: all."},
    {LADLE_OPTIONAL_ARG("axis_names", LADLE_ARG_STRING), .doc = "The axes to pad, as layout letters."},
    {LADLE_OPTIONAL_ARG("shape", LADLE_ARG_INTS), .per_sample = 1,
     .doc = "The smallest output extent per padded axis; -1 (or left out): the batch's largest extent."},
    {LADLE_OPTIONAL_ARG("align", LADLE_ARG_INTS), .per_sample = 1,
     .doc = "Output extents are rounded up to multiples of these (one value for every axis, or one per axis)."},
    {LADLE_FLOAT_ARG("fill_value", 0), .per_sample = 1, .doc = "The value of the added elements."},
};

typedef struct pad_state {
  int axes[LADLE_MAX_NDIM];
  int count;
} pad_state;

static ladle_status pad_init(ladle__node *n) {
  int axes[LADLE_TENSOR_MAX_LIST], count = -1, ndim = n->in[0].ndim;
  ladle_status st = ladle__tensor_axes(n, NULL, PAD_AXES, PAD_AXIS_NAMES, ndim, n->in[0].layout, 1, axes, &count);
  if (st != LADLE_OK) return st;
  pad_state *ps = calloc(1, sizeof *ps);
  if (!ps) return LADLE_OP_FAIL(n, LADLE_ERROR_OUT_OF_MEMORY, "out of memory");
  n->state = ps;
  if (count < 0)
    for (count = 0; count < ndim; count++) axes[count] = count;
  memcpy(ps->axes, axes, sizeof(int) * (size_t)count);
  ps->count = count;
  n->out[0] = n->in[0];
  return LADLE_OK;
}

static ladle_status pad_setup(ladle__node *n, ladle__sample *s) {
  const pad_state *ps = n->state;
  const ladle_batch *in = n->in_batches[0];
  const int64_t *sh = ladle_batch_shape(in, s->slot);
  double shape[LADLE_TENSOR_MAX_LIST], align[LADLE_TENSOR_MAX_LIST];
  int nshape = ladle__tensor_list(n, s, PAD_SHAPE, shape, LADLE_TENSOR_MAX_LIST);
  int nalign = ladle__tensor_list(n, s, PAD_ALIGN, align, LADLE_TENSOR_MAX_LIST);
  if (nshape == -2 || nalign == -2) return LADLE_ERROR_INVALID_ARGUMENT;
  if (nshape >= 0 && nshape != ps->count)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'shape' has %d values for %d padded axes", nshape,
                         ps->count);
  if (nalign > 1 && nalign != ps->count)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'align' has %d values for %d padded axes (give 1 or %d)",
                         nalign, ps->count, ps->count);
  int64_t out[LADLE_MAX_NDIM];
  memcpy(out, sh, sizeof(int64_t) * (size_t)in->ndim);
  for (int k = 0; k < ps->count; k++) {
    int a = ps->axes[k];
    int64_t target = 0;
    if (nshape > 0 && shape[k] > 0) {
      target = (int64_t)shape[k];
    } else { /* the batch's largest extent: every sample's setup finds the same */
      for (int i = 0; i < in->num_samples; i++)
        if (ladle_batch_shape(in, i)[a] > target) target = ladle_batch_shape(in, i)[a];
    }
    if (target < sh[a]) target = sh[a];
    int64_t al = nalign > 0 ? (int64_t)align[nalign > 1 ? k : 0] : 1;
    if (al < 1)
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'align' = %lld must be positive", (long long)al);
    out[a] = (target + al - 1) / al * al;
  }
  ladle__set_shape(n, s, 0, out);
  return LADLE_OK;
}

/* Fill value per sample: run on the host before the copies, so plans read it. */
static int pad_plan(const ladle__node *n, int slot, ladle__strided_desc *d, int max) {
  (void)max;
  ladle__sample s = {.slot = slot};
  const int64_t *sh = in_shape(n, 0, slot);
  ladle__strided_dense(d, out_data(n, 0, slot), ladle_batch_data(n->in_batches[0], slot), n->in[0].ndim, elem_size(n),
                       ladle_batch_shape(n->out_batches[0], slot), sh, NULL);
  d->num_fill = 1;
  ladle__tensor_value(d->fill, n->out[0].dtype, ladle__arg_float(n, &s, PAD_FILL));
  return 1;
}

static ladle_status pad_run(ladle__node *n, ladle__sample *s) { return ladle__strided_run(n, s, pad_plan, 1); }
static ladle_status pad_run_batch(ladle__node *n, ladle__gpu *g) { return ladle__strided_run_batch(n, g, pad_plan, 1); }
static void state_fini(ladle__node *n) { free(n->state); }

const ladle__op_def ladle__op_pad = {
    .schema = {.name = "pad",
               .doc = "Pads the samples at the end of the given axes with fill_value: to the batch's largest extent, "
                      "or at least to `shape`, rounded up to `align`.",
               .min_inputs = 1, .max_inputs = 1, .num_outputs = 1, .devices = LADLE_ON_CPU_GPU,
               .num_args = 5, .args = pad_args},
    .init = pad_init,
    .fini = state_fini,
    .setup = pad_setup,
    .run = pad_run,
    .run_batch = pad_run_batch,
};
