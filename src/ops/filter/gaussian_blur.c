/* gaussian_blur: a separable Gaussian convolution over every axis but the
 * channels (C), borders mirrored without repeating the edge (reflect-101:
 * ...2 1 | 0 1 2 ... | n-2 n-3...), as DALI's. Computed in float. */
#include "core/no_fma.h" /* first: CPU results compared bit for bit with the CUDA kernels */

#include <math.h>
#include <string.h>

#include "ops/filter/filter.h"
#include "ops/filter/filter_kernels.h"
#include "ops/geometry/normalize_kernel.h"

enum { GB_SIGMA, GB_WINDOW, GB_DTYPE, GB_COUNT };
static const double zero_sigma[] = {0.0};
static const int64_t zero_window[] = {0};
static const ladle_arg_schema blur_args[GB_COUNT] = {
    [GB_SIGMA] = {LADLE_FLOATS_ARG("sigma", zero_sigma), .per_sample = 1, LADLE_RANGE(0.0, 1e6),
        .doc = "Standard deviation of the kernel: one value, or one per data axis (outermost first). 0: from "
               "window_size, sigma = (radius - 1) * 0.3 + 0.8 with radius = (window_size - 1) / 2."},
    [GB_WINDOW] = {LADLE_INTS_ARG("window_size", zero_window), .per_sample = 1, LADLE_RANGE(0.0, 1e6),
        .doc = "Kernel size (odd): one value, or one per data axis. 0: 2 * ceil(3 * sigma) + 1."},
    [GB_DTYPE] = {LADLE_OPTIONAL_ARG("dtype", LADLE_ARG_DTYPE),
        .doc = "Output type; default: the input's. Integers round to nearest even and saturate."},
};

typedef struct blur_sample {
  int windows[LADLE_MAX_NDIM];
  float sigmas[LADLE_MAX_NDIM];
} blur_sample;

static ladle_status blur_init(ladle__node *n) {
  const ladle__out_desc *in = &n->in[0];
  int axes = ladle__data_axes(in, NULL);
  if (in->dtype == LADLE_FLOAT16)
    return LADLE_OP_FAIL(n, LADLE_ERROR_UNSUPPORTED, "input of type float16 is not supported (cast it first)");
  if (axes < 1) return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "the input has no data axes (layout \"%s\")", in->layout);
  for (int a = GB_SIGMA; a <= GB_WINDOW; a++) {
    int count = ladle__arg_value(n, a)->count;
    if (count != 1 && count != axes)
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument '%s' has %d values; give 1 or %d (one per data axis)",
                           blur_args[a].name, count, axes);
  }
  n->out[0] = *in;
  if (ladle__arg_given(n, GB_DTYPE)) n->out[0].dtype = (ladle_dtype)ladle__arg_int(n, NULL, GB_DTYPE);
  if (n->out[0].dtype == LADLE_FLOAT16)
    return LADLE_OP_FAIL(n, LADLE_ERROR_UNSUPPORTED, "argument 'dtype': FLOAT16 is not supported here");
  return LADLE_OK;
}

/* Value k of a list argument (or the per-sample scalar). */
static double list_value(const ladle__node *n, const ladle__sample *s, int arg, int k) {
  if (n->args[arg].source >= 0) return ladle__arg_float(n, s, arg);
  const ladle_value *v = ladle__arg_value(n, arg);
  int i = v->count == 1 ? 0 : k;
  return v->type == LADLE_ARG_FLOATS ? v->u.floats[i] : (double)v->u.ints[i];
}

static ladle_status blur_setup(ladle__node *n, ladle__sample *s) {
  blur_sample *b = s->state;
  ladle__tensor in = ladle__input(n, s, 0);
  int axis[LADLE_MAX_NDIM], axes = ladle__data_axes(&n->in[0], axis);
  for (int k = 0; k < axes; k++) {
    double sigma = list_value(n, s, GB_SIGMA, k);
    int64_t w = (int64_t)list_value(n, s, GB_WINDOW, k);
    if (w == 0 && sigma == 0)
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "give 'sigma' or 'window_size' (both are 0)");
    if (w != 0 && w % 2 == 0)
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'window_size' = %lld must be odd", (long long)w);
    if (w == 0) w = 2 * (int64_t)ceil(3 * sigma) + 1;
    if (sigma == 0) sigma = ((double)(w - 1) / 2 - 1) * 0.3 + 0.8;
    if (w > 4097) return LADLE_OP_FAIL(n, LADLE_ERROR_UNSUPPORTED, "window_size %lld is above 4097", (long long)w);
    b->windows[k] = (int)w;
    b->sigmas[k] = (float)sigma;
    (void)axis;
  }
  ladle__set_shape(n, s, 0, in.shape);
  return LADLE_OK;
}

/* One 1-D pass along an axis of (outer, len, inner) elements: dst = src * w. */
static void convolve_axis(float *dst, const float *src, int64_t outer, int64_t len, int64_t inner, const float *w,
                          int r) {
  for (int64_t o = 0; o < outer; o++) {
    const float *so = src + o * len * inner;
    float *d = dst + o * len * inner;
    for (int64_t i = 0; i < len; i++)
      for (int64_t j = 0; j < inner; j++) {
        float acc = 0;
        for (int k = -r; k <= r; k++) acc += w[k + r] * so[(int64_t)ladle__reflect101(i + k, len) * inner + j];
        d[i * inner + j] = acc;
      }
  }
}

static ladle_status blur_run(ladle__node *n, ladle__sample *s) {
  const blur_sample *b = s->state;
  ladle__tensor in = ladle__input(n, s, 0), out = ladle__output(n, s, 0);
  int axis[LADLE_MAX_NDIM], axes = ladle__data_axes(&n->in[0], axis);
  int64_t count = 1;
  for (int d = 0; d < in.ndim; d++) count *= in.shape[d];
  if (count == 0) return LADLE_OK;
  int maxw = 1;
  for (int k = 0; k < axes; k++) maxw = b->windows[k] > maxw ? b->windows[k] : maxw;
  float *buf = NULL;
  LADLE_TRY_OP(ladle__scratch(n, s, sizeof(float) * (size_t)(2 * count + maxw), (void **)&buf));
  float *a = buf, *c = buf + count, *w = buf + 2 * count;
  ladle__convert(a, LADLE_FLOAT32, in.data, in.dtype, (size_t)count);
  /* Innermost data axis first. */
  for (int k = axes - 1; k >= 0; k--) {
    int d = axis[k];
    int64_t outer = 1, inner = 1;
    for (int e = 0; e < d; e++) outer *= in.shape[e];
    for (int e = d + 1; e < in.ndim; e++) inner *= in.shape[e];
    int r = ladle__gauss_weights(w, b->windows[k], b->sigmas[k]);
    convolve_axis(c, a, outer, in.shape[d], inner, w, r);
    float *t = a; a = c; c = t;
  }
  ladle__convert(out.data, out.dtype, a, LADLE_FLOAT32, (size_t)count);
  return LADLE_OK;
}

#ifdef LADLE_HAVE_CUDA
/* One launch per data axis (innermost first, as on the CPU): input -> float
 * buffer -> ... -> output, the buffers in device scratch. */
static ladle_status blur_run_batch(ladle__node *n, ladle__gpu *g) {
  int batch = n->config->batch_size;
  int axis[LADLE_MAX_NDIM], axes = ladle__data_axes(&n->in[0], axis);
  size_t scratch_floats = 0;
  int num_weights = 0;
  for (int i = 0; i < batch; i++) {
    const blur_sample *b = (const blur_sample *)(n->sample_states + (size_t)i * n->def->sample_state_size);
    scratch_floats += 2 * (size_t)ladle__batch_sample_elems(n->in_batches[0], i);
    for (int k = 0; k < axes; k++) num_weights += b->windows[k];
  }
  ladle__gpu_blur_pass *passes = NULL;
  size_t pass_bytes = sizeof *passes * (size_t)batch * (size_t)axes;
  LADLE_TRY_OP(ladle__scratch(n, &(ladle__sample){.worker = 0}, pass_bytes + sizeof(float) * (size_t)num_weights,
                              (void **)&passes));
  float *weights = (float *)(passes + (size_t)batch * axes), *buf = NULL;
  if (axes > 1) LADLE_TRY_OP(ladle__gpu_device_scratch(g, sizeof(float) * (scratch_floats ? scratch_floats : 1),
                                                       (void **)&buf));
  int w_at = 0;
  for (int i = 0; i < batch; i++) {
    const blur_sample *b = (const blur_sample *)(n->sample_states + (size_t)i * n->def->sample_state_size);
    ladle__sample s = {.slot = i};
    ladle__tensor in = ladle__input(n, &s, 0), out = ladle__output(n, &s, 0);
    int64_t count = ladle__batch_sample_elems(n->in_batches[0], i);
    float *bufs[2] = {buf, buf ? buf + count : NULL};
    for (int p = 0; p < axes; p++) {
      int k = axes - 1 - p, d = axis[k];
      ladle__gpu_blur_pass *q = &passes[(size_t)p * batch + i];
      q->outer = q->inner = 1;
      for (int e = 0; e < d; e++) q->outer *= in.shape[e];
      for (int e = d + 1; e < in.ndim; e++) q->inner *= in.shape[e];
      q->len = in.shape[d];
      q->src = p == 0 ? in.data : bufs[(p - 1) % 2];
      q->src_type = p == 0 ? (int)in.dtype : LADLE_FLOAT32;
      q->dst = p == axes - 1 ? out.data : bufs[p % 2];
      q->dst_type = p == axes - 1 ? (int)out.dtype : LADLE_FLOAT32;
      q->weights = w_at;
      q->radius = ladle__gauss_weights(weights + w_at, b->windows[k], b->sigmas[k]);
      w_at += b->windows[k];
    }
    if (buf) buf += 2 * count;
  }
  void *host = NULL, *dev = NULL;
  size_t bytes = ladle__gpu_blur_param_bytes(batch * axes, num_weights);
  LADLE_TRY_OP(ladle__gpu_params(g, bytes, &host, &dev));
  return ladle__gpu_blur(passes, batch, axes, weights, num_weights, host, dev, bytes, g->stream);
}
#define BLUR_RUN_BATCH blur_run_batch
#else
#define BLUR_RUN_BATCH NULL
#endif

const ladle__op_def ladle__op_gaussian_blur = {
    .schema = {.name = "gaussian_blur",
               .doc = "Blurs with a Gaussian kernel over every axis but the channels (borders: reflect-101).",
               .min_inputs = 1, .max_inputs = 1, .num_outputs = 1, .devices = LADLE_ON_CPU_GPU,
               .num_args = GB_COUNT, .args = blur_args},
    .sample_state_size = sizeof(blur_sample),
    .init = blur_init,
    .setup = blur_setup,
    .run = blur_run,
    .run_batch = BLUR_RUN_BATCH,
};
