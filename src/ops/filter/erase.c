/* erase: sets one or more boxes of each sample to fill_value. A box covers
 * [floor(start), floor(start + extent)) on each named axis (start = anchor,
 * minus extent / 2 when centered; normalized values are fractions of the
 * axis), the whole range on the others, as DALI's. */
#include <math.h>
#include <string.h>

#include "ops/filter/filter.h"
#include "ops/filter/filter_kernels.h"
#include "ops/geometry/normalize_kernel.h"

enum { ER_ANCHOR, ER_SHAPE, ER_AXES, ER_AXIS_NAMES, ER_FILL, ER_NORMALIZED, ER_NORM_ANCHOR, ER_NORM_SHAPE,
       ER_CENTERED, ER_COUNT };
static const int64_t default_axes[] = {1, 0};
static const double default_fill[] = {0.0};
static const ladle_arg_schema erase_args[ER_COUNT] = {
    [ER_ANCHOR] = {LADLE_OPTIONAL_ARG("anchor", LADLE_ARG_FLOATS), .per_sample = 1,
        .doc = "Start of each box on the named axes, boxes one after another (y0, x0, y1, x1, ...)."},
    [ER_SHAPE] = {LADLE_OPTIONAL_ARG("shape", LADLE_ARG_FLOATS), .per_sample = 1, LADLE_RANGE(0.0, 1e18),
        .doc = "Extent of each box on the named axes, as `anchor`."},
    [ER_AXES] = {LADLE_INTS_ARG("axes", default_axes), LADLE_RANGE(0, 63),
        .doc = "Axis indices that anchor and shape refer to; used when axis_names is given as \"\"."},
    [ER_AXIS_NAMES] = {LADLE_STRING_ARG("axis_names", "HW"),
        .doc = "Layout letters of the axes that anchor and shape refer to (takes precedence over axes)."},
    [ER_FILL] = {LADLE_FLOATS_ARG("fill_value", default_fill),
        .doc = "The value of erased elements: one value, or one per channel."},
    [ER_NORMALIZED] = {LADLE_BOOL_ARG("normalized", 0), .doc = "Both anchor and shape are fractions of the axes."},
    [ER_NORM_ANCHOR] = {LADLE_BOOL_ARG("normalized_anchor", 0), .doc = "anchor is a fraction of the axes."},
    [ER_NORM_SHAPE] = {LADLE_BOOL_ARG("normalized_shape", 0), .doc = "shape is a fraction of the axes."},
    [ER_CENTERED] = {LADLE_BOOL_ARG("centered_anchor", 0), .doc = "anchor is the centre of the box."},
};

typedef struct erase_node {
  int naxes, axis[LADLE_MAX_NDIM];
  int channel; /* -1: none */
} erase_node;

static ladle_status erase_init(ladle__node *n) {
  const ladle__out_desc *in = &n->in[0];
  erase_node *st = calloc(1, sizeof *st);
  if (!st) return LADLE_OP_FAIL(n, LADLE_ERROR_OUT_OF_MEMORY, "out of memory");
  n->state = st;
  if (in->dtype == LADLE_FLOAT16) return LADLE_OP_FAIL(n, LADLE_ERROR_UNSUPPORTED, "float16 input is not supported");
  const char *names = ladle__arg_string(n, ER_AXIS_NAMES);
  int use_axes = ladle__arg_given(n, ER_AXES) && !ladle__arg_given(n, ER_AXIS_NAMES);
  if (!use_axes && names && names[0]) {
    for (const char *c = names; *c && st->naxes < LADLE_MAX_NDIM; c++) {
      int a = ladle__layout_axis(in->layout, *c);
      if (a < 0)
        return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'axis_names': '%c' is not in the layout \"%s\"",
                             *c, in->layout);
      st->axis[st->naxes++] = a;
    }
  } else {
    const ladle_value *v = ladle__arg_value(n, ER_AXES);
    for (int k = 0; k < v->count && k < LADLE_MAX_NDIM; k++) {
      if (v->u.ints[k] >= in->ndim)
        return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'axes': axis %lld of a %d-D input",
                             (long long)v->u.ints[k], in->ndim);
      st->axis[st->naxes++] = (int)v->u.ints[k];
    }
  }
  const ladle_value *anchor = ladle__arg_value(n, ER_ANCHOR), *shape = ladle__arg_value(n, ER_SHAPE);
  if (st->naxes < 1) return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "no axes to erase along");
  int per_sample = n->args[ER_ANCHOR].source >= 0 || n->args[ER_SHAPE].source >= 0;
  if (!per_sample && (shape->count % st->naxes || (anchor->count && anchor->count != shape->count)))
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT,
                         "arguments 'anchor' (%d values) and 'shape' (%d values) must both hold a multiple of %d "
                         "values (one per axis and box)", anchor->count, shape->count, st->naxes);
  st->channel = ladle__layout_axis(in->layout, 'C');
  int nfill = ladle__arg_value(n, ER_FILL)->count;
  if (nfill < 1 || (nfill > 1 && st->channel < 0))
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT,
                         "argument 'fill_value': %d values need a channel axis (C) in the layout", nfill);
  n->out[0] = *in;
  return LADLE_OK;
}

static void erase_fini(ladle__node *n) {
  free(n->state);
  n->state = NULL;
}

static ladle_status erase_setup(ladle__node *n, ladle__sample *s) {
  const erase_node *st = n->state;
  ladle__tensor in = ladle__input(n, s, 0);
  int nfill = ladle__arg_value(n, ER_FILL)->count;
  if (nfill > 1 && in.shape[st->channel] != nfill)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'fill_value' has %d values for %lld channels",
                         nfill, (long long)in.shape[st->channel]);
  ladle__set_shape(n, s, 0, in.shape);
  return LADLE_OK;
}

static void fill_at(void *data, ladle_dtype t, int64_t i, double v) {
  switch (t) {
    case LADLE_UINT8: ((uint8_t *)data)[i] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : nearbyint(v)); break;
    case LADLE_INT32: ((int32_t *)data)[i] = (int32_t)nearbyint(v); break;
    case LADLE_INT64: ((int64_t *)data)[i] = (int64_t)nearbyint(v); break;
    case LADLE_FLOAT32: ((float *)data)[i] = (float)v; break;
    default: /* the other types as cast converts (rounded, saturated) */
      ladle__convert((uint8_t *)data + (size_t)i * ladle_dtype_size(t), t, &v, LADLE_FLOAT64, 1);
      break;
  }
}

#define ERASE_MAX_VALUES 256

/* A list argument's values for this sample (its node's sample, or the
 * constant) into v; returns their count. */
static int list_values(const ladle__node *n, const ladle__sample *s, int arg, double *v) {
  int src = n->args[arg].source;
  if (src < 0) {
    const ladle_value *c = ladle__arg_value(n, arg);
    int count = c->count < ERASE_MAX_VALUES ? c->count : ERASE_MAX_VALUES;
    for (int k = 0; k < count; k++) v[k] = c->u.floats[k];
    return count;
  }
  const ladle_batch *b = n->source_batches[src];
  ladle__tensor t = {ladle_batch_data(b, s->slot), NULL, 0, b->dtype};
  int64_t count = ladle__batch_sample_elems(b, s->slot);
  if (count > ERASE_MAX_VALUES) count = ERASE_MAX_VALUES;
  for (int64_t k = 0; k < count; k++) v[k] = ladle__elem(&t, k);
  return (int)count;
}

/* The sample's boxes, clipped: [lo, hi) per axis, empty boxes left out;
 * their number in *boxes. */
static ladle_status erase_boxes(const ladle__node *n, const ladle__sample *s, const int64_t *shape_of, int ndim,
                                int64_t (*lo)[LADLE_MAX_NDIM], int64_t (*hi)[LADLE_MAX_NDIM], int max_boxes,
                                int *boxes) {
  const erase_node *st = n->state;
  double anchor[ERASE_MAX_VALUES], shape[ERASE_MAX_VALUES];
  int na = list_values(n, s, ER_ANCHOR, anchor), ns = list_values(n, s, ER_SHAPE, shape);
  if (ns % st->naxes || (na && na != ns))
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT,
                         "arguments 'anchor' (%d values) and 'shape' (%d values) must both hold a multiple of %d "
                         "values (one per axis and box)", na, ns, st->naxes);
  int norm = (int)ladle__arg_int(n, NULL, ER_NORMALIZED);
  int norm_a = norm || ladle__arg_int(n, NULL, ER_NORM_ANCHOR), norm_s = norm || ladle__arg_int(n, NULL, ER_NORM_SHAPE);
  int centered = (int)ladle__arg_int(n, NULL, ER_CENTERED), count = 0;
  for (int b = 0; b < ns / st->naxes; b++) {
    int empty = 0;
    for (int d = 0; d < ndim; d++) lo[count][d] = 0, hi[count][d] = shape_of[d];
    for (int k = 0; k < st->naxes; k++) {
      int d = st->axis[k];
      double ext = (double)shape_of[d];
      double a = na ? anchor[b * st->naxes + k] : 0, e = shape[b * st->naxes + k];
      if (norm_a) a *= ext;
      if (norm_s) e *= ext;
      if (centered) a -= e / 2;
      double l = floor(a), h = floor(a + e);
      lo[count][d] = l < 0 ? 0 : l > ext ? (int64_t)ext : (int64_t)l;
      hi[count][d] = h < 0 ? 0 : h > ext ? (int64_t)ext : (int64_t)h;
      if (hi[count][d] <= lo[count][d]) empty = 1;
    }
    if (empty) continue;
    if (count == max_boxes) return LADLE_OP_FAIL(n, LADLE_ERROR_UNSUPPORTED, "more than %d boxes per sample", max_boxes);
    count++;
  }
  *boxes = count;
  return LADLE_OK;
}

static ladle_status erase_run(ladle__node *n, ladle__sample *s) {
  const erase_node *st = n->state;
  ladle__tensor in = ladle__input(n, s, 0), out = ladle__output(n, s, 0);
  size_t es = ladle_dtype_size(in.dtype);
  int64_t total = 1;
  for (int d = 0; d < in.ndim; d++) total *= in.shape[d];
  memcpy(out.data, in.data, (size_t)total * es);
  const ladle_value *fill = ladle__arg_value(n, ER_FILL);
  int64_t lo[ERASE_MAX_VALUES][LADLE_MAX_NDIM], hi[ERASE_MAX_VALUES][LADLE_MAX_NDIM];
  int boxes = 0;
  LADLE_TRY_OP(erase_boxes(n, s, in.shape, in.ndim, lo, hi, ERASE_MAX_VALUES, &boxes));
  for (int b = 0; b < boxes; b++) {
    int64_t idx[LADLE_MAX_NDIM];
    memcpy(idx, lo[b], sizeof idx);
    for (;;) {
      int64_t off = 0;
      for (int d = 0; d < in.ndim; d++) off = off * in.shape[d] + idx[d];
      fill_at(out.data, out.dtype, off, fill->count > 1 ? fill->u.floats[idx[st->channel]] : fill->u.floats[0]);
      int d = in.ndim - 1;
      for (; d >= 0; d--) {
        if (++idx[d] < hi[b][d]) break;
        idx[d] = lo[b][d];
      }
      if (d < 0) break;
    }
  }
  return LADLE_OK;
}

#ifdef LADLE_HAVE_CUDA
static ladle_status erase_run_batch(ladle__node *n, ladle__gpu *g) {
  const erase_node *st = n->state;
  int batch = n->config->batch_size;
  const ladle_value *fill = ladle__arg_value(n, ER_FILL);
  if (fill->count > LADLE__GPU_ERASE_MAX_FILL || n->in[0].ndim > 8)
    return LADLE_OP_FAIL(n, LADLE_ERROR_UNSUPPORTED, "on the GPU: at most %d fill values and 8 dimensions",
                         LADLE__GPU_ERASE_MAX_FILL);
  ladle__gpu_erase_desc *d = NULL;
  void *host = NULL, *dev = NULL;
  size_t bytes = ladle__gpu_erase_param_bytes(batch);
  LADLE_TRY_OP(ladle__scratch(n, &(ladle__sample){.worker = 0}, sizeof *d * (size_t)batch, (void **)&d));
  for (int i = 0; i < batch; i++) {
    ladle__sample s = {.slot = i};
    ladle__tensor in = ladle__input(n, &s, 0), out = ladle__output(n, &s, 0);
    int64_t lo[LADLE__GPU_ERASE_MAX_BOXES][LADLE_MAX_NDIM], hi[LADLE__GPU_ERASE_MAX_BOXES][LADLE_MAX_NDIM];
    int boxes = 0;
    LADLE_TRY_OP(erase_boxes(n, &s, in.shape, in.ndim, lo, hi, LADLE__GPU_ERASE_MAX_BOXES, &boxes));
    memset(&d[i], 0, sizeof d[i]);
    d[i].in = in.data;
    d[i].out = out.data;
    d[i].ndim = in.ndim;
    d[i].elem_size = (int)ladle_dtype_size(in.dtype);
    d[i].channel_axis = st->channel < 0 ? 0 : st->channel;
    d[i].num_fill = fill->count;
    d[i].num_boxes = boxes;
    for (int k = 0; k < in.ndim; k++) d[i].shape[k] = in.shape[k];
    for (int b = 0; b < boxes; b++)
      for (int k = 0; k < in.ndim; k++) d[i].lo[b][k] = lo[b][k], d[i].hi[b][k] = hi[b][k];
    for (int f = 0; f < fill->count; f++) fill_at(d[i].fill_bytes[f], in.dtype, 0, fill->u.floats[f]);
  }
  LADLE_TRY_OP(ladle__gpu_params(g, bytes, &host, &dev));
  return ladle__gpu_erase(d, batch, host, dev, bytes, g->stream);
}
#define ERASE_RUN_BATCH erase_run_batch
#else
#define ERASE_RUN_BATCH NULL
#endif

const ladle__op_def ladle__op_erase = {
    .schema = {.name = "erase",
               .doc = "Erases boxes (anchor, shape on the named axes) of each sample to fill_value.",
               .min_inputs = 1, .max_inputs = 1, .num_outputs = 1, .devices = LADLE_ON_CPU_GPU,
               .num_args = ER_COUNT, .args = erase_args},
    .init = erase_init,
    .fini = erase_fini,
    .setup = erase_setup,
    .run = erase_run,
    .run_batch = ERASE_RUN_BATCH,
};
