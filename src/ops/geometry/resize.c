/* resize and random_resized_crop: a separable filter from a source window
 * (the whole image, or a random crop of it) to the output size, in one pass
 * (ops/kernels/resize.h). HWC uint8 or float32 in, the same type out. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/geometry/resize_kernel.h"
#include "ops/op.h"
#include "ops/image/random_crop.h"
#include "ops/geometry/resize_params.h"

enum {
  ARG_INTERP_TYPE, ARG_ANTIALIAS, ARG_MIN_FILTER, ARG_MAG_FILTER, ARG_RESAMPLING, ARG_MINIBATCH_SIZE,
  ARG_TEMP_BUFFER_HINT, ARG_COMMON_COUNT,
  /* resize */
  ARG_RESIZE_X = ARG_COMMON_COUNT, ARG_RESIZE_Y, ARG_SIZE, ARG_RESIZE_SHORTER, ARG_RESIZE_LONGER, ARG_MODE,
  ARG_MAX_SIZE, ARG_SUBPIXEL_SCALE, ARG_ROI_START, ARG_ROI_END, ARG_ROI_RELATIVE, ARG_RESIZE_COUNT,
  /* random_resized_crop */
  ARG_RRC_SIZE = ARG_COMMON_COUNT, ARG_RANDOM_AREA, ARG_RANDOM_ASPECT_RATIO, ARG_NUM_ATTEMPTS, ARG_RRC_COUNT
};

#define FILTERS LADLE_CHOICES("NN", "LINEAR", "CUBIC", "LANCZOS3", "TRIANGULAR", "GAUSSIAN")
#define COMMON_ARGS \
  [ARG_INTERP_TYPE] = {LADLE_STRING_ARG("interp_type", "LINEAR"), FILTERS, \
      .doc = "Filter: \"NN\", \"LINEAR\", \"CUBIC\", \"LANCZOS3\", \"TRIANGULAR\" or \"GAUSSIAN\" (an " \
             "\"INTERP_\" prefix is accepted)."}, \
  [ARG_ANTIALIAS] = {LADLE_BOOL_ARG("antialias", 1), \
      .doc = "Widen the filter when downscaling, so that every input pixel contributes (as PIL does)."}, \
  [ARG_MIN_FILTER] = {LADLE_OPTIONAL_ARG("min_filter", LADLE_ARG_STRING), FILTERS, \
      .doc = "Filter used when downscaling (default: interp_type)."}, \
  [ARG_MAG_FILTER] = {LADLE_OPTIONAL_ARG("mag_filter", LADLE_ARG_STRING), FILTERS, \
      .doc = "Filter used when upscaling (default: interp_type)."}, \
  [ARG_RESAMPLING] = {LADLE_STRING_ARG("resampling", "dali"), LADLE_CHOICES("dali", "pil"), \
      .doc = "ladle's own: the filter arithmetic. \"dali\" (default): DALI 2.4's CPU resize: its tabulated " \
             "filters, float coordinates, the edge pixel repeated where a filter leaves the image, ties rounded " \
             "up or to even as DALI's scalar and vectorised loops do; equal to DALI's output, or within 1 " \
             "level where DALI sums in another order (it picks the cheaper pass first). \"pil\": PIL's filters (exact shapes in double precision, taps outside " \
             "the image dropped and the rest renormalised, ties to even): within 1 level of PIL/torchvision " \
             "(ladle.torchvision uses it) and no darkened or brightened borders for CUBIC/LANCZOS3; the " \
             "source window is stretched onto the rounded size (subpixel_scale has no effect)."}, \
  [ARG_MINIBATCH_SIZE] = {LADLE_INT_ARG("minibatch_size", 32), .no_effect = 1, \
      .doc = "Accepted for DALI scripts: DALI's kernel-call batching; ladle resizes a batch in one launch."}, \
  [ARG_TEMP_BUFFER_HINT] = {LADLE_INT_ARG("temp_buffer_hint", 0), .no_effect = 1, \
      .doc = "Accepted for DALI scripts: a memory hint; ladle needs no temporary image buffer."}

static const ladle_arg_schema resize_args[ARG_RESIZE_COUNT] = {
    COMMON_ARGS,
    [ARG_RESIZE_X] = {LADLE_FLOAT_ARG("resize_x", 0), .per_sample = 1, LADLE_RANGE(0.0, 1e9),
        .doc = "Output width; 0: derived from the other arguments."},
    [ARG_RESIZE_Y] = {LADLE_FLOAT_ARG("resize_y", 0), .per_sample = 1, LADLE_RANGE(0.0, 1e9),
        .doc = "Output height; 0: derived from the other arguments."},
    [ARG_SIZE] = {LADLE_OPTIONAL_ARG("size", LADLE_ARG_FLOATS), LADLE_RANGE(0.0, 1e9),
        .doc = "Output size [height, width] (spatial dimensions in layout order); 0 entries are derived."},
    [ARG_RESIZE_SHORTER] = {LADLE_FLOAT_ARG("resize_shorter", 0), .per_sample = 1, LADLE_RANGE(0.0, 1e9),
        .doc = "Length of the shorter side; the other keeps the aspect ratio (capped by max_size)."},
    [ARG_RESIZE_LONGER] = {LADLE_FLOAT_ARG("resize_longer", 0), .per_sample = 1, LADLE_RANGE(0.0, 1e9),
        .doc = "Length of the longer side; the other keeps the aspect ratio."},
    [ARG_MODE] = {LADLE_STRING_ARG("mode", "default"), LADLE_CHOICES("default", "stretch", "not_smaller", "not_larger"),
        .doc = "\"default\": sizes not given keep the aspect ratio; \"stretch\": they keep the input's extent; "
               "\"not_smaller\"/\"not_larger\": keep the aspect ratio, the output covers/fits in the size given."},
    [ARG_MAX_SIZE] = {LADLE_OPTIONAL_ARG("max_size", LADLE_ARG_FLOATS), LADLE_RANGE(0.0, 1e9),
        .doc = "Upper limit of the output [height, width] (one value: both): not_smaller/not_larger and "
               "resize_shorter/resize_longer keep the aspect ratio, default/stretch cap each extent."},
    [ARG_SUBPIXEL_SCALE] = {LADLE_BOOL_ARG("subpixel_scale", 1),
        .doc = "True (DALI's default): a fractional output size keeps its exact scale, the source window "
               "shrinking or growing about its centre to fit the rounded size; False: the window is stretched "
               "onto the rounded size. resampling=\"pil\" always stretches."},
    [ARG_ROI_START] = {LADLE_OPTIONAL_ARG("roi_start", LADLE_ARG_FLOATS),
        .doc = "Origin of the source window [y, x] (layout order; one value: both); with roi_end. roi_start > "
               "roi_end flips that axis (resampling=\"dali\")."},
    [ARG_ROI_END] = {LADLE_OPTIONAL_ARG("roi_end", LADLE_ARG_FLOATS),
        .doc = "End of the source window [y, x]; with roi_start."},
    [ARG_ROI_RELATIVE] = {LADLE_BOOL_ARG("roi_relative", 0),
        .doc = "roi_start/roi_end are fractions of the input's extent (0: top/left, 1: bottom/right), not pixels."},
};

static const double default_area[] = {0.08, 1.0};
static const double default_aspect[] = {3.0 / 4.0, 4.0 / 3.0};

static const ladle_arg_schema rrc_args[ARG_RRC_COUNT] = {
    COMMON_ARGS,
    [ARG_RRC_SIZE] = {LADLE_REQUIRED_ARG("size", LADLE_ARG_FLOATS), LADLE_RANGE(1.0, 1e9),
        .doc = "Output size [height, width] (one value: square)."},
    [ARG_RANDOM_AREA] = {LADLE_FLOATS_ARG("random_area", default_area), LADLE_RANGE(0.0, 1.0),
        .doc = "Range [min, max] of the crop's area as a fraction of the image's."},
    [ARG_RANDOM_ASPECT_RATIO] = {LADLE_FLOATS_ARG("random_aspect_ratio", default_aspect), LADLE_RANGE(1e-6, 1e6),
        .doc = "Range [min, max] of the crop's width/height, drawn log-uniformly."},
    [ARG_NUM_ATTEMPTS] = {LADLE_INT_ARG("num_attempts", 10), LADLE_RANGE(1.0, 1000.0),
        .doc = "Windows tried before falling back to a centred crop."},
};

typedef struct resize_state {
  ladle__interp min_filter, mag_filter;
  int antialias;
  int pil;      /* resampling="pil" */
  int subpixel; /* subpixel_scale */
  int roi;      /* roi_start/roi_end given */
  float roi_lo[2], roi_hi[2]; /* x, y; relative or absolute per roi_relative */
  int roi_relative;
  int rrc;
  ladle__random_crop_params crop;
  int rrc_w, rrc_h;
  ladle__resize_size_params size;
} resize_state;

typedef struct sample_state {
  double src_x, src_y, src_w, src_h; /* the source window; src_w/src_h < 0: flipped (dali only) */
  int out_w, out_h;
  ladle__resize_axis ax, ay; /* kept from iteration to iteration; GPU, resampling="pil": planned in setup */
  ladle__resize_dali_geom geom; /* GPU, resampling="dali": the geometry (the GPU builds the tables) */
} sample_state;

/* The filters' order in FILTERS is ladle__interp's. */
static ladle_status common_init(ladle__node *n, resize_state *r) {
  r->min_filter = r->mag_filter = (ladle__interp)ladle__arg_choice(n, ARG_INTERP_TYPE);
  if (ladle__arg_given(n, ARG_MIN_FILTER)) r->min_filter = (ladle__interp)ladle__arg_choice(n, ARG_MIN_FILTER);
  if (ladle__arg_given(n, ARG_MAG_FILTER)) r->mag_filter = (ladle__interp)ladle__arg_choice(n, ARG_MAG_FILTER);
  r->antialias = (int)ladle__arg_int(n, NULL, ARG_ANTIALIAS);
  r->pil = ladle__arg_choice(n, ARG_RESAMPLING) == 1;
  if ((n->in[0].dtype != LADLE_UINT8 && n->in[0].dtype != LADLE_FLOAT32) || n->in[0].ndim != 3)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT,
                         "the input must be HWC images of uint8 or float32 (got %s with %d dimensions)",
                         ladle_dtype_name(n->in[0].dtype), n->in[0].ndim);
  n->out[0] = n->in[0];
  if (!n->out[0].layout[0]) strcpy(n->out[0].layout, "HWC");
  return LADLE_OK;
}

static ladle_status resize_init(ladle__node *n) {
  resize_state *r = calloc(1, sizeof *r);
  if (!r) return LADLE_OP_FAIL(n, LADLE_ERROR_OUT_OF_MEMORY, "out of memory");
  n->state = r;
  ladle_status st = common_init(n, r);
  if (st != LADLE_OK) return st;
  r->subpixel = (int)ladle__arg_int(n, NULL, ARG_SUBPIXEL_SCALE) && !r->pil;
  r->roi_relative = (int)ladle__arg_int(n, NULL, ARG_ROI_RELATIVE);
  int has_lo = ladle__arg_given(n, ARG_ROI_START), has_hi = ladle__arg_given(n, ARG_ROI_END);
  if (has_lo != has_hi)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "arguments 'roi_start' and 'roi_end' go together");
  if (has_lo) {
    const ladle_value *lo = ladle__arg_value(n, ARG_ROI_START), *hi = ladle__arg_value(n, ARG_ROI_END);
    if ((lo->count != 1 && lo->count != 2) || (hi->count != 1 && hi->count != 2))
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT,
                           "arguments 'roi_start' and 'roi_end' must be [y, x] or one value");
    r->roi = 1;
    r->roi_lo[1] = (float)lo->u.floats[0], r->roi_lo[0] = (float)lo->u.floats[lo->count - 1];
    r->roi_hi[1] = (float)hi->u.floats[0], r->roi_hi[0] = (float)hi->u.floats[hi->count - 1];
    for (int d = 0; d < 2; d++) {
      if (!isfinite(r->roi_lo[d]) || !isfinite(r->roi_hi[d]))
        return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "arguments 'roi_start' and 'roi_end' must be finite");
      if (r->pil && r->roi_lo[d] > r->roi_hi[d])
        return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT,
                             "a flipped roi (roi_start > roi_end) needs resampling=\"dali\"");
    }
  }
  return ladle__resize_size_params_init(n, &r->size, ARG_RESIZE_X, ARG_RESIZE_Y, ARG_SIZE, ARG_RESIZE_SHORTER,
                                        ARG_RESIZE_LONGER, ARG_MODE, ARG_MAX_SIZE);
}

static ladle_status rrc_init(ladle__node *n) {
  resize_state *r = calloc(1, sizeof *r);
  if (!r) return LADLE_OP_FAIL(n, LADLE_ERROR_OUT_OF_MEMORY, "out of memory");
  n->state = r;
  ladle_status st = common_init(n, r);
  if (st != LADLE_OK) return st;
  const ladle_value *size = ladle__arg_value(n, ARG_RRC_SIZE);
  const ladle_value *area = ladle__arg_value(n, ARG_RANDOM_AREA), *aspect = ladle__arg_value(n, ARG_RANDOM_ASPECT_RATIO);
  if (size->count != 1 && size->count != 2)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'size' must be [height, width] or one value");
  if (area->count != 2 || area->u.floats[0] > area->u.floats[1] || area->u.floats[1] <= 0)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'random_area' must be [min, max], 0 <= min <= max <= 1, max > 0");
  if (aspect->count != 2 || aspect->u.floats[0] > aspect->u.floats[1])
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'random_aspect_ratio' must be [min, max], 0 < min <= max");
  r->rrc = 1;
  r->rrc_h = (int)lround(size->u.floats[0]);
  r->rrc_w = (int)lround(size->u.floats[size->count - 1]);
  r->crop = (ladle__random_crop_params){area->u.floats[0], area->u.floats[1], aspect->u.floats[0], aspect->u.floats[1],
                                        (int)ladle__arg_int(n, NULL, ARG_NUM_ATTEMPTS)};
  return LADLE_OK;
}

static void resize_fini(ladle__node *n) {
  for (int i = 0; n->sample_states && i < n->config->batch_size; i++) {
    sample_state *ss = (sample_state *)(n->sample_states + (size_t)i * sizeof(sample_state));
    ladle__resize_axis_free(&ss->ax);
    ladle__resize_axis_free(&ss->ay);
  }
  free(n->state);
}

/* The output size when it is the same for every sample (resize_x and
 * resize_y, or both entries of size, constant, mode default or stretch, no
 * max_size). */
static int resize_fixed_size(const ladle__node *n, int *width, int *height) {
  const resize_state *r = n->state;
  if (r->rrc || r->roi || r->size.max_w > 0 || r->size.max_h > 0) return 0;
  if (r->size.mode != LADLE__RESIZE_DEFAULT && r->size.mode != LADLE__RESIZE_STRETCH) return 0;
  double w = 0, h = 0;
  if (ladle__arg_given(n, ARG_SIZE)) {
    const ladle_value *v = ladle__arg_value(n, ARG_SIZE);
    h = v->u.floats[0];
    w = v->u.floats[v->count - 1];
  } else if (n->args[ARG_RESIZE_X].source < 0 && n->args[ARG_RESIZE_Y].source < 0) {
    w = ladle__arg_float(n, NULL, ARG_RESIZE_X);
    h = ladle__arg_float(n, NULL, ARG_RESIZE_Y);
  }
  if (w < 1 || h < 1) return 0;
  *width = (int)lround(w);
  *height = (int)lround(h);
  return 1;
}

/* The source window as DALI's planner takes it. */
static void dali_window(const sample_state *ss, float lo[2], float hi[2]) {
  lo[0] = (float)ss->src_x, lo[1] = (float)ss->src_y;
  hi[0] = (float)(ss->src_x + ss->src_w), hi[1] = (float)(ss->src_y + ss->src_h);
}

/* The filter tables of one sample. */
static ladle_status plan_axes(const resize_state *r, sample_state *ss, int in_w, int in_h) {
  if (!r->pil) {
    float lo[2], hi[2];
    dali_window(ss, lo, hi);
    return ladle__resize_plan_dali(&ss->ax, &ss->ay, in_w, in_h, lo, hi, ss->out_w, ss->out_h, r->min_filter,
                                   r->mag_filter, r->antialias);
  }
  ladle__interp fx = ss->src_w > ss->out_w ? r->min_filter : r->mag_filter;
  ladle__interp fy = ss->src_h > ss->out_h ? r->min_filter : r->mag_filter;
  /* pil: the source window maps onto the rounded size (no subpixel_scale). */
  /* The tables stay in the sample's state and are replanned in place. */
  ladle_status st = ladle__resize_axis_replan(&ss->ax, in_w, ss->src_x, ss->src_w, ss->out_w, fx, r->antialias);
  return st == LADLE_OK ? ladle__resize_axis_replan(&ss->ay, in_h, ss->src_y, ss->src_h, ss->out_h, fy, r->antialias)
                        : st;
}

static ladle_status resize_setup(ladle__node *n, ladle__sample *s) {
  const resize_state *r = n->state;
  sample_state *ss = s->state;
  ladle__tensor in = ladle__input(n, s, 0);
  int in_h = (int)in.shape[0], in_w = (int)in.shape[1];
  if (in_h < 1 || in_w < 1)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "cannot resize an empty image (%dx%d)", in_w, in_h);
  if (r->rrc) {
    ladle__rng rng;
    ladle__sample_rng(n, s, &rng);
    ladle__window w = ladle__random_crop_window(&rng, in_w, in_h, &r->crop);
    ss->src_x = w.x, ss->src_y = w.y, ss->src_w = w.w, ss->src_h = w.h;
    ss->out_w = r->rrc_w, ss->out_h = r->rrc_h;
  } else {
    /* The source window, x then y (float, as DALI holds it); lo > hi flips. */
    double lo[2] = {0, 0}, hi[2] = {in_w, in_h}, frac[2];
    if (r->roi)
      for (int d = 0; d < 2; d++) {
        double ext = d ? in_h : in_w;
        lo[d] = r->roi_relative ? (float)(r->roi_lo[d] * ext) : r->roi_lo[d];
        hi[d] = r->roi_relative ? (float)(r->roi_hi[d] * ext) : r->roi_hi[d];
      }
    ladle_status st = ladle__resize_output_size(n, s, &r->size, fabs(hi[0] - lo[0]), fabs(hi[1] - lo[1]),
                                                &ss->out_w, &ss->out_h, &frac[0], &frac[1]);
    if (st != LADLE_OK) return st;
    for (int d = 0; d < 2; d++) {
      int out = d ? ss->out_h : ss->out_w;
      if (r->subpixel && out != frac[d]) {
        /* DALI's subpixel_scale: keep the scale, move the window's edges about its centre. */
        double adj = out / frac[d];
        adj = adj < -10 ? -10 : adj > 10 ? 10 : adj;
        double c = (float)(lo[d] + hi[d]) * 0.5;
        lo[d] = (float)fmin(fmax(c + (lo[d] - c) * adj, -1e9), 1e9);
        hi[d] = (float)fmin(fmax(c + (hi[d] - c) * adj, -1e9), 1e9);
      }
    }
    if (lo[0] == hi[0] || lo[1] == hi[1])
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "the roi is empty (%gx%g pixels)", fabs(hi[0] - lo[0]),
                           fabs(hi[1] - lo[1]));
    ss->src_x = lo[0], ss->src_y = lo[1], ss->src_w = hi[0] - lo[0], ss->src_h = hi[1] - lo[1];
  }
  int64_t shape[3] = {ss->out_h, ss->out_w, in.shape[2]};
  ladle__set_shape(n, s, 0, shape);
  if (n->device == LADLE_ON_CPU) return LADLE_OK;
  if (!r->pil) { /* the GPU builds the tables from the geometry */
    float lo[2], hi[2];
    dali_window(ss, lo, hi);
    return ladle__resize_geom_dali(&ss->geom, in_w, in_h, lo, hi, ss->out_w, ss->out_h, r->min_filter,
                                   r->mag_filter, r->antialias);
  }
  return plan_axes(r, ss, in_w, in_h);
}

static ladle_status resize_run(ladle__node *n, ladle__sample *s) {
  const resize_state *r = n->state;
  ladle__tensor in = ladle__input(n, s, 0), out = ladle__output(n, s, 0);
  int in_h = (int)in.shape[0], in_w = (int)in.shape[1], c = (int)in.shape[2];
  sample_state *plan = s->state; /* its tables are kept for the next iteration */
  void *scratch = NULL;
  ladle_status st = plan_axes(r, plan, in_w, in_h);
  if (st == LADLE_OK) st = ladle__scratch(n, s, ladle__resize_scratch_size(&plan->ax, &plan->ay, in_h, c), &scratch);
  if (st == LADLE_OK) {
    if (in.dtype == LADLE_UINT8)
      ladle__resize_u8(out.data, in.data, in_h, in_w * c, c, &plan->ax, &plan->ay, scratch);
    else
      ladle__resize_f32(out.data, in.data, in_h, in_w * c, c, &plan->ax, &plan->ay, scratch);
  }
  return st;
}

#ifdef LADLE_HAVE_CUDA
#include "ops/kernels/gpu_kernels.h"

static sample_state *state_of(const ladle__node *n, int i) {
  return (sample_state *)(n->sample_states + (size_t)i * sizeof(sample_state));
}

/* The GPU descriptors of the node's samples (tables planned in its setup),
 * writing to `out`'s samples. */
static void resize_gpu_descs(const ladle__node *r, const ladle_batch *out, ladle__gpu_resize_desc *d) {
  const int pil = ((const resize_state *)r->state)->pil;
  for (int i = 0; i < r->config->batch_size; i++) {
    sample_state *ss = state_of(r, i);
    const int64_t *shape = ladle_batch_shape(r->in_batches[0], i);
    d[i] = (ladle__gpu_resize_desc){ladle_batch_data(r->in_batches[0], i), ladle_batch_data(out, i), (int)shape[0],
                                    (int)shape[1], shape[1] * shape[2], (int)shape[2], pil ? &ss->ax : NULL,
                                    pil ? &ss->ay : NULL, pil ? NULL : &ss->geom};
  }
}

/* One launch for the batch: the tables planned in setup (resampling="pil") or built on the GPU from the
 * geometry computed in setup (resampling="dali"). */
static ladle_status resize_run_batch(ladle__node *n, ladle__gpu *g) {
  int batch = n->config->batch_size;
  ladle__gpu_resize_desc *d = NULL;
  void *host = NULL, *dev = NULL;
  /* run_batch runs between parallel passes: worker 0's scratch is free. */
  ladle_status st = ladle__scratch(n, &(ladle__sample){.worker = 0}, sizeof *d * (size_t)batch, (void **)&d);
  if (st == LADLE_OK) {
    resize_gpu_descs(n, n->out_batches[0], d);
    size_t bytes = ladle__gpu_resize_param_bytes(d, batch);
    st = ladle__gpu_params(g, bytes, &host, &dev);
    if (st == LADLE_OK) st = ladle__gpu_resize(d, batch, n->in[0].dtype, host, dev, bytes, g->stream);
  }
  return st;
}
/* The fused kernel takes crop_mirror_normalize (and only it) of uint8 images
 * as an epilogue: it rounds the resized pixels to uint8 exactly where this
 * node would have stored them, so the result is the same bytes. */
static int resize_accepts_epilogue(const ladle__node *n, const ladle__node *consumer) {
  return consumer->def->epilogue == LADLE__EPILOGUE_CMN && n->in[0].dtype == LADLE_UINT8;
}

/* resize and the epilogue after it in one kernel that reads each input pixel
 * once and writes the consumer's output once. */
static ladle_status resize_run_batch_epilogue(ladle__node *n, ladle__node *consumer, ladle__gpu *g) {
  int batch = n->config->batch_size;
  ladle__gpu_resize_desc *d = NULL;
  ladle__cmn_params *p = NULL;
  size_t desc_bytes = (sizeof *d * (size_t)batch + 63) & ~(size_t)63;
  /* run_batch_epilogue runs between parallel passes: worker 0's scratch is free. */
  ladle_status st = ladle__scratch(n, &(ladle__sample){.worker = 0}, desc_bytes + sizeof *p * (size_t)batch,
                                   (void **)&d);
  if (st == LADLE_OK) {
    p = (ladle__cmn_params *)((uint8_t *)d + desc_bytes);
    resize_gpu_descs(n, consumer->out_batches[0], d);
    for (int i = 0; st == LADLE_OK && i < batch; i++) st = consumer->def->epilogue_params(consumer, i, &p[i]);
  }
  if (st == LADLE_OK) {
    void *host = NULL, *dev = NULL;
    size_t bytes = ladle__gpu_resize_param_bytes(d, batch);
    st = ladle__gpu_params(g, bytes, &host, &dev);
    if (st == LADLE_OK) st = ladle__gpu_fused(d, p, batch, host, dev, bytes, g->stream);
  }
  return st;
}
#define RESIZE_RUN_BATCH resize_run_batch
#define RESIZE_FUSION .accepts_epilogue = resize_accepts_epilogue, .run_batch_epilogue = resize_run_batch_epilogue
#else
#define RESIZE_RUN_BATCH NULL
#define RESIZE_FUSION .accepts_epilogue = NULL
#endif

const ladle__op_def ladle__op_resize = {
    .schema = {.name = "resize",
               .doc = "Resizes HWC images (uint8 or float32) with a separable filter; sizes follow DALI's resize_x / "
                      "resize_y / size / resize_shorter / resize_longer / mode / max_size rules, subpixel_scale and "
                      "roi_start/roi_end; the arithmetic is DALI 2.4's CPU resize by default (resampling).",
               .min_inputs = 1, .max_inputs = 1, .num_outputs = 1,
               .devices = LADLE_ON_CPU_GPU, .flags = LADLE_OP_ACCEPTS_EPILOGUE,
               .num_args = ARG_RESIZE_COUNT, .args = resize_args},
    .sample_state_size = sizeof(sample_state),
    .init = resize_init,
    .fini = resize_fini,
    .setup = resize_setup,
    .run = resize_run,
    .run_batch = RESIZE_RUN_BATCH,
    RESIZE_FUSION,
    .fixed_output_size = resize_fixed_size,
};

const ladle__op_def ladle__op_random_resized_crop = {
    .schema = {.name = "random_resized_crop",
               .doc = "Crops a random window (random_area, random_aspect_ratio) and resizes it to `size`, in one "
                      "pass.",
               .min_inputs = 1, .max_inputs = 1, .num_outputs = 1,
               .devices = LADLE_ON_CPU_GPU, .flags = LADLE_OP_RANDOM | LADLE_OP_ACCEPTS_EPILOGUE,
               .num_args = ARG_RRC_COUNT, .args = rrc_args},
    .sample_state_size = sizeof(sample_state),
    .init = rrc_init,
    .fini = resize_fini,
    .setup = resize_setup,
    .run = resize_run,
    .run_batch = RESIZE_RUN_BATCH,
    RESIZE_FUSION,
};
