/* slice and element_extract: sub-tensors through the strided copy. */
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "ops/tensor/slice.h"
#include "ops/tensor/tensor_args.h"

enum {
  SL_AXES, SL_AXIS_NAMES, SL_START, SL_REL_START, SL_END, SL_REL_END, SL_SHAPE, SL_REL_SHAPE,
  SL_NORM_ANCHOR, SL_NORM_SHAPE, SL_POLICY, SL_FILL
};

static const int64_t slice_default_axes[] = {1, 0};
static const double slice_default_fill[] = {0};

static const ladle_arg_schema slice_args[] = {
    {LADLE_INTS_ARG("axes", slice_default_axes), .doc = "The sliced axes, in the order of the anchor and shape values."},
    {LADLE_STRING_ARG("axis_names", "WH"),
     .doc = "The sliced axes as layout letters (used unless 'axes' is given or the input has no layout)."},
    {LADLE_OPTIONAL_ARG("start", LADLE_ARG_INTS), .per_sample = 1, .doc = "Slice start, in elements."},
    {LADLE_OPTIONAL_ARG("rel_start", LADLE_ARG_FLOATS), .per_sample = 1, .doc = "Slice start, as fractions of the extents."},
    {LADLE_OPTIONAL_ARG("end", LADLE_ARG_INTS), .per_sample = 1, .doc = "Slice end (exclusive), in elements."},
    {LADLE_OPTIONAL_ARG("rel_end", LADLE_ARG_FLOATS), .per_sample = 1, .doc = "Slice end, as fractions of the extents."},
    {LADLE_OPTIONAL_ARG("shape", LADLE_ARG_INTS), .per_sample = 1, .doc = "Slice shape, in elements."},
    {LADLE_OPTIONAL_ARG("rel_shape", LADLE_ARG_FLOATS), .per_sample = 1, .doc = "Slice shape, as fractions of the extents."},
    {LADLE_BOOL_ARG("normalized_anchor", 1), .doc = "Input 1 (anchor) holds fractions of the extents (else elements)."},
    {LADLE_BOOL_ARG("normalized_shape", 1), .doc = "Input 2 (shape) holds fractions of the extents (else elements)."},
    {LADLE_STRING_ARG("out_of_bounds_policy", "error"), LADLE_CHOICES("error", "pad", "trim_to_shape"),
     .doc = "A slice reaching outside the input: an error, padded with fill_values, or cut to the input."},
    {LADLE_FLOATS_ARG("fill_values", slice_default_fill),
     .doc = "Padding value; several: one per channel (the layout's 'C' dimension)."},
};

typedef struct slice_node {
  int axes[LADLE_MAX_NDIM], count, fill_dim, num_fill;
  uint8_t fill[LADLE_TENSOR_MAX_FILL * 8];
} slice_node;

typedef struct slice_sample {
  int64_t start[LADLE_MAX_NDIM], shape[LADLE_MAX_NDIM];
} slice_sample;

static const ladle__slice_arg_ids slice_ids = {SL_START, SL_REL_START, SL_END, SL_REL_END,
                                               SL_SHAPE, SL_REL_SHAPE, SL_NORM_ANCHOR, SL_NORM_SHAPE};

ladle_status ladle__slice_check(const ladle__node *n, const ladle__slice_arg_ids *ids) {
  if (n->num_inputs == 2)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "give both inputs anchor and shape, or neither");
  for (int k = 1; k < n->num_inputs; k++)
    if (n->in[k].dtype == LADLE_FLOAT16 || n->in[k].ndim > 1)
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "input %d (%s) must be numbers of one dimension", k,
                           k == 1 ? "anchor" : "shape");
  const int given[] = {ids->start, ids->rel_start, ids->end, ids->rel_end, ids->shape, ids->rel_shape};
  int starts = 0, ends = 0;
  for (int k = 0; k < 6; k++) *(k < 2 ? &starts : &ends) += ladle__arg_given(n, given[k]);
  if (starts > 1) return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "give one of 'start' and 'rel_start'");
  if (ends > 1)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "give one of 'end', 'rel_end', 'shape' and 'rel_shape'");
  if (n->num_inputs == 3 && starts + ends)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "the slice is given by inputs anchor and shape: no 'start', "
                         "'end' or 'shape' arguments");
  return LADLE_OK;
}

static ladle_status slice_init(ladle__node *n) {
  int axes[LADLE_TENSOR_MAX_LIST], count = -1, ndim = n->in[0].ndim;
  const char *layout = n->in[0].layout;
  int by_names = !ladle__arg_given(n, SL_AXES) && (layout[0] || ladle__arg_given(n, SL_AXIS_NAMES));
  ladle_status st = ladle__tensor_axes(n, NULL, by_names ? -1 : SL_AXES, by_names ? SL_AXIS_NAMES : -1, ndim, layout, 1,
                                       axes, &count);
  if (st != LADLE_OK) return st;
  if (count < 0) count = 0;
  if ((st = ladle__slice_check(n, &slice_ids)) != LADLE_OK) return st;
  slice_node *sn = calloc(1, sizeof *sn);
  if (!sn) return LADLE_OP_FAIL(n, LADLE_ERROR_OUT_OF_MEMORY, "out of memory");
  n->state = sn;
  memcpy(sn->axes, axes, sizeof(int) * (size_t)count);
  sn->count = count;
  const ladle_value *fv = ladle__arg_value(n, SL_FILL);
  if (fv->count < 1 || fv->count > LADLE_TENSOR_MAX_FILL)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'fill_values': %d values (1 to %d)", fv->count,
                         LADLE_TENSOR_MAX_FILL);
  const char *c = strchr(layout, 'C');
  sn->fill_dim = fv->count > 1 && c && layout[0] ? (int)(c - layout) : -1;
  if (fv->count > 1 && sn->fill_dim < 0)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT,
                         "argument 'fill_values': several values need a channel dimension ('C' in the layout)");
  sn->num_fill = fv->count;
  size_t es = ladle_dtype_size(n->in[0].dtype);
  for (int k = 0; k < fv->count; k++) {
    uint8_t v[8];
    ladle__tensor_value(v, n->in[0].dtype, fv->u.floats[k]);
    memcpy(sn->fill + k * es, v, es);
  }
  n->out[0] = n->in[0];
  return LADLE_OK;
}

/* Input k's values for sample s: count, or -1 without the input. */
static int input_values(const ladle__node *n, const ladle__sample *s, int k, double *out) {
  if (n->num_inputs <= k) return -1;
  const ladle_batch *b = n->in_batches[k];
  int64_t count = ladle__batch_sample_elems(b, s->slot);
  const void *p = ladle_batch_data(b, s->slot);
  for (int64_t i = 0; i < count && i < LADLE_TENSOR_MAX_LIST; i++)
    switch (b->dtype) {
      case LADLE_UINT8: out[i] = ((const uint8_t *)p)[i]; break;
      case LADLE_INT32: out[i] = ((const int32_t *)p)[i]; break;
      case LADLE_INT64: out[i] = (double)((const int64_t *)p)[i]; break;
      default: out[i] = ((const float *)p)[i]; break;
    }
  return (int)(count > LADLE_TENSOR_MAX_LIST ? LADLE_TENSOR_MAX_LIST + 1 : count);
}

/* Integer inputs hold element counts whatever normalized_anchor/_shape say. */
static int input_is_float(const ladle__node *n, int k) {
  ladle_dtype t = n->in[k].dtype;
  return t == LADLE_FLOAT32 || t == LADLE_FLOAT64 || t == LADLE_FLOAT16;
}

ladle_status ladle__slice_bounds(const ladle__node *n, const ladle__sample *s, const ladle__slice_arg_ids *ids,
                                 const int *axes, int count, const int64_t *extents, int64_t *start_out,
                                 int64_t *end_out) {
  double a[LADLE_TENSOR_MAX_LIST], b[LADLE_TENSOR_MAX_LIST];
  /* The start values, the end-or-shape values, and how to read them. */
  int na = -1, nb = -1, a_rel = 0, b_rel = 0, b_is_end = 0;
  const char *a_name = "start", *b_name = "shape";
  if (n->num_inputs == 3) {
    na = input_values(n, s, 1, a), a_name = "input 1 (anchor)";
    a_rel = input_is_float(n, 1) && ladle__arg_int(n, NULL, ids->normalized_anchor);
    nb = input_values(n, s, 2, b), b_name = "input 2 (shape)";
    b_rel = input_is_float(n, 2) && ladle__arg_int(n, NULL, ids->normalized_shape);
  } else {
    const int starts[] = {ids->start, ids->rel_start}, ends[] = {ids->end, ids->rel_end, ids->shape, ids->rel_shape};
    for (int k = 0; k < 2 && na == -1; k++)
      if ((na = ladle__tensor_list(n, s, starts[k], a, LADLE_TENSOR_MAX_LIST)) != -1)
        a_rel = k == 1, a_name = n->def->schema.args[starts[k]].name;
    for (int k = 0; k < 4 && nb == -1; k++)
      if ((nb = ladle__tensor_list(n, s, ends[k], b, LADLE_TENSOR_MAX_LIST)) != -1)
        b_rel = k % 2, b_is_end = k < 2, b_name = n->def->schema.args[ends[k]].name;
  }
  if (na == -2 || nb == -2) return LADLE_ERROR_INVALID_ARGUMENT;
  if ((na >= 0 && na != count) || (nb >= 0 && nb != count))
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "%s has %d values for %d sliced axes",
                         na >= 0 && na != count ? a_name : b_name, na >= 0 && na != count ? na : nb, count);
  for (int k = 0; k < count; k++) {
    double extent = (double)extents[axes[k]];
    double lo = na >= 0 ? (a_rel ? a[k] * extent : a[k]) : 0;
    double hi = nb < 0 ? extent : b_is_end ? (b_rel ? b[k] * extent : b[k]) : lo + (b_rel ? b[k] * extent : b[k]);
    start_out[k] = (int64_t)llround(lo), end_out[k] = (int64_t)llround(hi);
    if (end_out[k] < start_out[k])
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "%s gives a negative extent in axis %d (start %lld, end %lld)",
                           b_name, axes[k], (long long)start_out[k], (long long)end_out[k]);
  }
  return LADLE_OK;
}

static ladle_status slice_setup(ladle__node *n, ladle__sample *s) {
  const slice_node *sn = n->state;
  slice_sample *ss = s->state;
  ladle__tensor in = ladle__input(n, s, 0);
  int64_t starts[LADLE_MAX_NDIM], ends[LADLE_MAX_NDIM];
  ladle_status st = ladle__slice_bounds(n, s, &slice_ids, sn->axes, sn->count, in.shape, starts, ends);
  if (st != LADLE_OK) return st;
  int policy = ladle__arg_choice(n, SL_POLICY);
  int64_t out[LADLE_MAX_NDIM];
  for (int d = 0; d < in.ndim; d++) ss->start[d] = 0, out[d] = in.shape[d];
  for (int k = 0; k < sn->count; k++) {
    int ax = sn->axes[k];
    int64_t start = starts[k], end = ends[k];
    if (policy == 0 && (start < 0 || end > in.shape[ax]))
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT,
                           "the slice [%lld, %lld) of axis %d is outside the input's extent %lld (out_of_bounds_policy "
                           "'error'; 'pad' and 'trim_to_shape' allow it)",
                           (long long)start, (long long)end, ax, (long long)in.shape[ax]);
    if (policy == 2) {
      if (start < 0) start = 0;
      if (start > in.shape[ax]) start = in.shape[ax];
      if (end > in.shape[ax]) end = in.shape[ax];
      if (end < start) end = start;
    }
    ss->start[ax] = start;
    out[ax] = end - start;
  }
  if (policy == 1 && sn->fill_dim >= 0 && out[sn->fill_dim] != sn->num_fill)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'fill_values': %d values for %lld output channels",
                         sn->num_fill, (long long)out[sn->fill_dim]);
  memcpy(ss->shape, out, sizeof out);
  ladle__set_shape(n, s, 0, out);
  return LADLE_OK;
}

static int slice_plan(const ladle__node *n, int slot, ladle__strided_desc *d, int max) {
  (void)max;
  const slice_node *sn = n->state;
  const slice_sample *ss = (const slice_sample *)(n->sample_states + (size_t)slot * sizeof(slice_sample));
  ladle__strided_dense(d, ladle_batch_data(n->out_batches[0], slot), ladle_batch_data(n->in_batches[0], slot),
                       n->in[0].ndim, (int)ladle_dtype_size(n->in[0].dtype), ss->shape,
                       ladle_batch_shape(n->in_batches[0], slot), ss->start);
  d->fill_dim = sn->fill_dim;
  d->num_fill = sn->num_fill;
  memcpy(d->fill, sn->fill, sizeof d->fill);
  return 1;
}

static ladle_status slice_run(ladle__node *n, ladle__sample *s) { return ladle__strided_run(n, s, slice_plan, 1); }
static ladle_status slice_run_batch(ladle__node *n, ladle__gpu *g) { return ladle__strided_run_batch(n, g, slice_plan, 1); }
static void slice_fini(ladle__node *n) { free(n->state); }

const ladle__op_def ladle__op_slice = {
    .schema = {.name = "slice",
               .doc = "Extracts a sub-tensor: by start and end or shape (absolute or relative) on the given axes, or "
                      "by the inputs anchor and shape (read on the host).",
               .min_inputs = 1, .max_inputs = 3, .num_outputs = 1, .devices = LADLE_ON_CPU_GPU,
               .num_args = 12, .args = slice_args, .host_inputs_from = 1},
    .sample_state_size = sizeof(slice_sample),
    .init = slice_init,
    .fini = slice_fini,
    .setup = slice_setup,
    .run = slice_run,
    .run_batch = slice_run_batch,
};

/* --- element_extract ---------------------------------------------------------------- */

static const ladle_arg_schema element_extract_args[] = {
    {LADLE_REQUIRED_ARG("element_map", LADLE_ARG_INTS),
     .doc = "The frames to extract, one output each (at most 4 here)."},
};

static ladle_status element_extract_init(ladle__node *n) {
  const ladle_value *map = ladle__arg_value(n, 0);
  if (n->in[0].layout[0] != 'F')
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "the input layout \"%s\" must start with 'F' (a sequence)",
                         n->in[0].layout);
  if (map->count < 1 || map->count > LADLE_MAX_OUTPUTS)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'element_map': %d values (1 to %d)", map->count,
                         LADLE_MAX_OUTPUTS);
  for (int k = 0; k < map->count; k++) {
    if (map->u.ints[k] < 0)
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'element_map': %lld is negative",
                           (long long)map->u.ints[k]);
    n->out[k] = n->in[0];
    n->out[k].ndim--;
    memmove(n->out[k].layout, n->out[k].layout + 1, sizeof n->out[k].layout - 1);
  }
  return LADLE_OK;
}

static ladle_status element_extract_setup(ladle__node *n, ladle__sample *s) {
  const ladle_value *map = ladle__arg_value(n, 0);
  ladle__tensor in = ladle__input(n, s, 0);
  for (int k = 0; k < map->count; k++) {
    if (map->u.ints[k] >= in.shape[0])
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'element_map': frame %lld of a sequence of %lld",
                           (long long)map->u.ints[k], (long long)in.shape[0]);
    ladle__set_shape(n, s, k, in.shape + 1);
  }
  return LADLE_OK;
}

static int element_extract_plan(const ladle__node *n, int slot, ladle__strided_desc *d, int max) {
  (void)max;
  const ladle_value *map = ladle__arg_value(n, 0);
  const int64_t *sh = ladle_batch_shape(n->in_batches[0], slot);
  int64_t frame = ladle__batch_sample_elems(n->in_batches[0], slot) / (sh[0] ? sh[0] : 1);
  int es = (int)ladle_dtype_size(n->in[0].dtype);
  for (int k = 0; k < map->count; k++)
    ladle__strided_dense(&d[k], ladle_batch_data(n->out_batches[k], slot),
                         (const uint8_t *)ladle_batch_data(n->in_batches[0], slot) + map->u.ints[k] * frame * es, 1, es,
                         &frame, &frame, NULL);
  return map->count;
}

static ladle_status element_extract_run(ladle__node *n, ladle__sample *s) {
  return ladle__strided_run(n, s, element_extract_plan, LADLE_MAX_OUTPUTS);
}
static ladle_status element_extract_run_batch(ladle__node *n, ladle__gpu *g) {
  return ladle__strided_run_batch(n, g, element_extract_plan, LADLE_MAX_OUTPUTS);
}

const ladle__op_def ladle__op_element_extract = {
    .schema = {.name = "element_extract",
               .doc = "Extracts frames of sequences (layout starting with 'F'): one output per element_map entry.",
               .min_inputs = 1, .max_inputs = 1, .num_outputs = -1, .devices = LADLE_ON_CPU_GPU,
               .num_args = 1, .args = element_extract_args},
    .init = element_extract_init,
    .setup = element_extract_setup,
    .run = element_extract_run,
    .run_batch = element_extract_run_batch,
};
