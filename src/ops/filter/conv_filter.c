/* filter (DALI's fn.filter, and its old name fn.experimental.filter): each
 * sample's 2-D float32 filter (input 1) correlated with every channel of
 * every frame of an image or video (layouts HW, HWC, CHW, FHW, FHWC, FCHW;
 * without a layout, 2-D is HW and 3-D HWC). Border modes and `mode` as
 * DALI's; fill_value (input 2, for border="constant") is a scalar of the
 * input's type per sample, 0 without it. The arithmetic is conv_core.h's. */
#include "core/no_fma.h" /* first: CPU results compared bit for bit with the CUDA kernels */

#include <string.h>

#include "ops/filter/conv_core.h"
#include "ops/filter/filter.h"
#include "ops/filter/filter_kernels.h"

enum { CF_ANCHOR, CF_BORDER, CF_MODE, CF_DTYPE, CF_COUNT };
static const int64_t default_anchor[] = {-1};
static const ladle_arg_schema conv_args[CF_COUNT] = {
    [CF_ANCHOR] = {LADLE_INTS_ARG("anchor", default_anchor), .per_sample = 1, LADLE_RANGE(-1, 1e9),
        .doc = "Where the filter sits over the input: output (y, x) reads the rectangle from (y - a, x - b); -1 "
               "(one value for both axes, or per axis): the filter's middle, extent / 2. Ignored in mode=\"valid\"."},
    [CF_BORDER] = {LADLE_STRING_ARG("border", "reflect_101"),
        LADLE_CHOICES("reflect_101", "reflect_1001", "wrap", "clamp", "constant"),
        .doc = "Positions outside the sample: reflect_101 (dcb|abcd|cba), reflect_1001 (cba|abc|cba), wrap, "
               "clamp (aaa|abc|ccc), constant (fill_value, input 2, or 0)."},
    [CF_MODE] = {LADLE_STRING_ARG("mode", "same"), LADLE_CHOICES("same", "valid"),
        .doc = "same: output as large as the input; valid: only positions where the filter lies inside the input "
               "(extent - filter extent + 1)."},
    [CF_DTYPE] = {LADLE_OPTIONAL_ARG("dtype", LADLE_ARG_DTYPE),
        .doc = "Output type: the input's (default) or FLOAT. Computed in float32; integers round to nearest even "
               "and saturate."},
};

static const char *const cf_layouts[] = {"HW", "HWC", "CHW", "FHW", "FHWC", "FCHW", NULL};

typedef struct conv_sample {
  int ay, ax;
} conv_sample;

static ladle_status conv_init(ladle__node *n) {
  const ladle__out_desc *in = &n->in[0];
  if (in->dtype != LADLE_UINT8 && in->dtype != LADLE_INT8 && in->dtype != LADLE_INT16 && in->dtype != LADLE_UINT16 &&
      in->dtype != LADLE_FLOAT32)
    return LADLE_OP_FAIL(n, LADLE_ERROR_UNSUPPORTED, "input of type %s is not supported (uint8, int8, int16, uint16, "
                         "float32)", ladle_dtype_name(in->dtype));
  n->out[0] = *in;
  if (!in->layout[0]) {
    if (in->ndim != 2 && in->ndim != 3)
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "input without a layout must be 2-D (HW) or 3-D (HWC), "
                           "got %d-D (volumetric data is not supported)", in->ndim);
    strcpy(n->out[0].layout, in->ndim == 2 ? "HW" : "HWC");
  }
  int ok = 0;
  for (int k = 0; cf_layouts[k]; k++) ok |= strcmp(n->out[0].layout, cf_layouts[k]) == 0;
  if (!ok)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "input layout \"%s\" is not supported (HW, HWC, CHW, FHW, "
                         "FHWC or FCHW; volumetric data is not)", n->out[0].layout);
  if (n->in[1].dtype != LADLE_FLOAT32 || n->in[1].ndim != 2)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "input 1 (filter) must be a 2-D float32 array per sample, "
                         "got %d-D %s", n->in[1].ndim, ladle_dtype_name(n->in[1].dtype));
  if (n->num_inputs > 2 && n->in[2].dtype != in->dtype)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "input 2 (fill_value) must have the input's type %s, got %s",
                         ladle_dtype_name(in->dtype), ladle_dtype_name(n->in[2].dtype));
  if (ladle__arg_given(n, CF_DTYPE)) {
    ladle_dtype t = (ladle_dtype)ladle__arg_int(n, NULL, CF_DTYPE);
    if (t != in->dtype && t != LADLE_FLOAT32)
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'dtype': %s; the output is FLOAT or the input's "
                           "type %s", ladle_dtype_name(t), ladle_dtype_name(in->dtype));
    n->out[0].dtype = t;
  }
  const ladle_value *anchor = ladle__arg_value(n, CF_ANCHOR);
  if (n->args[CF_ANCHOR].source < 0 && anchor->count != 1 && anchor->count != 2)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'anchor' has %d values; give 1 or 2",
                         anchor->count);
  return LADLE_OK;
}

static int64_t anchor_value(const ladle__node *n, const ladle__sample *s, int k) {
  if (n->args[CF_ANCHOR].source >= 0) return ladle__arg_int(n, s, CF_ANCHOR);
  const ladle_value *v = ladle__arg_value(n, CF_ANCHOR);
  return v->u.ints[v->count == 1 ? 0 : k];
}

/* The axes of H and W in the layout. */
static int h_axis(const ladle__node *n) { return (int)(strchr(n->out[0].layout, 'H') - n->out[0].layout); }

static ladle_status conv_setup(ladle__node *n, ladle__sample *s) {
  conv_sample *cs = s->state;
  ladle__tensor in = ladle__input(n, s, 0), filt = ladle__input(n, s, 1);
  int64_t shape[LADLE_MAX_NDIM];
  memcpy(shape, in.shape, sizeof(int64_t) * (size_t)in.ndim);
  int valid = ladle__arg_choice(n, CF_MODE) == 1, ha = h_axis(n);
  int anchors[2];
  for (int k = 0; k < 2; k++) {
    if (filt.shape[k] < 1)
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "the filter of %s is empty", s->name ? s->name : "a sample");
    int64_t a = anchor_value(n, s, k);
    if (a == -1) a = filt.shape[k] / 2;
    if (!valid && (a < 0 || a >= filt.shape[k]))
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'anchor' = %lld lies outside the filter's "
                           "extent %lld", (long long)a, (long long)filt.shape[k]);
    anchors[k] = valid ? 0 : (int)a;
    if (valid) {
      shape[ha + k] = in.shape[ha + k] - filt.shape[k] + 1;
      if (shape[ha + k] < 1)
        return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "mode=\"valid\": the filter of %s (%lld x %lld) is "
                             "larger than the sample", s->name ? s->name : "a sample", (long long)filt.shape[0],
                             (long long)filt.shape[1]);
    }
  }
  if (n->num_inputs > 2) {
    ladle__tensor fill = ladle__input(n, s, 2);
    int64_t count = 1;
    for (int d = 0; d < fill.ndim; d++) count *= fill.shape[d];
    if (count != 1)
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "input 2 (fill_value) must be one scalar per sample, got "
                           "%lld values", (long long)count);
  }
  cs->ay = anchors[0];
  cs->ax = anchors[1];
  ladle__set_shape(n, s, 0, shape);
  return LADLE_OK;
}

/* The descriptor of a sample (taps: the host filter). */
static void describe(const ladle__node *n, const ladle__sample *s, ladle__conv_desc *d) {
  const conv_sample *cs = s->state;
  ladle__tensor in = ladle__input(n, s, 0), out = ladle__output(n, s, 0), filt = ladle__input(n, s, 1);
  const char *layout = n->out[0].layout;
  int ha = h_axis(n), c_at = (int)(strchr(layout, 'C') ? strchr(layout, 'C') - layout : -1);
  memset(d, 0, sizeof *d);
  d->in = in.data;
  d->out = out.data;
  d->taps = filt.data;
  d->in_type = in.dtype;
  d->out_type = out.dtype;
  d->border = ladle__arg_choice(n, CF_BORDER);
  d->channel_last = c_at == in.ndim - 1;
  d->r = (int)filt.shape[0];
  d->s = (int)filt.shape[1];
  d->ay = cs->ay;
  d->ax = cs->ax;
  d->frames = layout[0] == 'F' ? in.shape[0] : 1;
  d->channels = c_at >= 0 ? in.shape[c_at] : 1;
  d->h = in.shape[ha];
  d->w = in.shape[ha + 1];
  d->out_h = out.shape[ha];
  d->out_w = out.shape[ha + 1];
  if (n->num_inputs > 2) {
    ladle__tensor fill = ladle__input(n, s, 2);
    d->fill = ladle__conv_load(fill.data, 0, fill.dtype);
  }
}

static int64_t out_elems(const ladle__conv_desc *d) { return d->frames * d->channels * d->out_h * d->out_w; }

/* conv_core.h's ladle__conv_element for every output element, with the
 * border mapping of rows and columns looked up from tables instead of
 * recomputed: the same values in the same order, so the same bits. */
static ladle_status conv_run(ladle__node *n, ladle__sample *s) {
  ladle__conv_desc d;
  describe(n, s, &d);
  if (!out_elems(&d)) return LADLE_OK;
  int64_t *rows = NULL;
  LADLE_TRY_OP(ladle__scratch(n, s, sizeof *rows * (size_t)(d.out_h * d.r + d.out_w * d.s), (void **)&rows));
  int64_t *cols = rows + d.out_h * d.r;
  for (int64_t y = 0; y < d.out_h; y++)
    for (int i = 0; i < d.r; i++) rows[y * d.r + i] = ladle__conv_border(y - d.ay + i, d.h, d.border);
  for (int64_t x = 0; x < d.out_w; x++)
    for (int j = 0; j < d.s; j++) cols[x * d.s + j] = ladle__conv_border(x - d.ax + j, d.w, d.border);
  const int64_t step = d.channel_last ? d.channels : 1;
  for (int64_t f = 0; f < d.frames; f++)
    for (int64_t c = 0; c < d.channels; c++) {
      const int64_t plane = d.channel_last ? f * d.h * d.w * d.channels + c : (f * d.channels + c) * d.h * d.w;
      for (int64_t y = 0; y < d.out_h; y++)
        for (int64_t x = 0; x < d.out_w; x++) {
          float acc = 0;
          for (int i = 0; i < d.r; i++) {
            const int64_t yy = rows[y * d.r + i];
            for (int j = 0; j < d.s; j++) {
              const int64_t xx = cols[x * d.s + j];
              const float v = yy < 0 || xx < 0 ? d.fill : ladle__conv_load(d.in, plane + (yy * d.w + xx) * step, d.in_type);
              acc = acc + d.taps[i * d.s + j] * v;
            }
          }
          const int64_t e = d.channel_last ? ((f * d.out_h + y) * d.out_w + x) * d.channels + c
                                           : ((f * d.channels + c) * d.out_h + y) * d.out_w + x;
          ladle__store_f32(d.out, (size_t)e, d.out_type, acc);
        }
    }
  return LADLE_OK;
}

#ifdef LADLE_HAVE_CUDA
/* The filters travel after the descriptors in the launch's parameter block. */
static ladle_status conv_run_batch(ladle__node *n, ladle__gpu *g) {
  int batch = n->config->batch_size, count = 0, taps = 0;
  ladle__conv_desc *descs = NULL;
  LADLE_TRY_OP(ladle__scratch(n, &(ladle__sample){.worker = 0}, sizeof *descs * (size_t)batch, (void **)&descs));
  for (int i = 0; i < batch; i++) {
    ladle__sample s = {.slot = i, .state = n->sample_states + (size_t)i * n->def->sample_state_size};
    describe(n, &s, &descs[count]);
    if (!out_elems(&descs[count])) continue;
    taps += descs[count].r * descs[count].s;
    count++;
  }
  if (!count) return LADLE_OK;
  void *host = NULL, *dev = NULL;
  size_t bytes = ladle__gpu_conv_param_bytes(count, taps);
  LADLE_TRY_OP(ladle__gpu_params(g, bytes, &host, &dev));
  return ladle__gpu_conv(descs, count, taps, host, dev, bytes, g->stream);
}
#define CONV_RUN_BATCH conv_run_batch
#else
#define CONV_RUN_BATCH NULL
#endif

const ladle__op_def ladle__op_filter = {
    .schema = {.name = "filter",
               .doc = "Correlates each sample with its 2-D filter (input 1; the filter is not flipped, as in DALI), "
                      "channel by channel and frame by frame, computed in float32. Inputs: data, filter, optional "
                      "fill_value.",
               .min_inputs = 2, .max_inputs = 3, .num_outputs = 1, .devices = LADLE_ON_CPU_GPU,
               .num_args = CF_COUNT, .args = conv_args, .host_inputs_from = 1},
    .sample_state_size = sizeof(conv_sample),
    .init = conv_init,
    .setup = conv_setup,
    .run = conv_run,
    .run_batch = CONV_RUN_BATCH,
};
