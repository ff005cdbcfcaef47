/* crop, flip and crop_mirror_normalize: windows of HWC images, optionally
 * mirrored, and for crop_mirror_normalize normalized, cast and re-laid out
 * in the same pass (ops/kernels/normalize.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/geometry/normalize_kernel.h"
#include "ops/op.h"

enum {
  ARG_CROP, ARG_CROP_W, ARG_CROP_H, ARG_CROP_POS_X, ARG_CROP_POS_Y, ARG_FILL_VALUES, ARG_OUT_OF_BOUNDS, ARG_ROUNDING,
  ARG_CROP_COUNT,
  ARG_MIRROR = ARG_CROP_COUNT, ARG_MEAN, ARG_STD, ARG_SCALE, ARG_SHIFT, ARG_DTYPE, ARG_OUTPUT_LAYOUT, ARG_PAD_OUTPUT,
  ARG_CMN_COUNT
};

static const double zero[] = {0.0};
static const double one[] = {1.0};

#define CROP_ARGS \
  [ARG_CROP] = {LADLE_OPTIONAL_ARG("crop", LADLE_ARG_FLOATS), LADLE_RANGE(0.0, 1e9), \
      .doc = "Window size [height, width] (one value: square). Default: the whole image."}, \
  [ARG_CROP_W] = {LADLE_FLOAT_ARG("crop_w", 0), .per_sample = 1, LADLE_RANGE(0.0, 1e9), \
      .doc = "Window width (overrides crop); 0: not given."}, \
  [ARG_CROP_H] = {LADLE_FLOAT_ARG("crop_h", 0), .per_sample = 1, LADLE_RANGE(0.0, 1e9), \
      .doc = "Window height (overrides crop); 0: not given."}, \
  [ARG_CROP_POS_X] = {LADLE_FLOAT_ARG("crop_pos_x", 0.5), .per_sample = 1, LADLE_RANGE(0.0, 1.0), \
      .doc = "Horizontal position of the window: x = crop_pos_x * (width - crop_width), crop_pos_x in float " \
             "as DALI holds it, made whole by 'rounding'."}, \
  [ARG_CROP_POS_Y] = {LADLE_FLOAT_ARG("crop_pos_y", 0.5), .per_sample = 1, LADLE_RANGE(0.0, 1.0), \
      .doc = "Vertical position of the window: y = crop_pos_y * (height - crop_height) (as crop_pos_x)."}, \
  [ARG_FILL_VALUES] = {LADLE_FLOATS_ARG("fill_values", zero), \
      .doc = "Values (in output units; one, or one per channel) of pixels outside the image when " \
             "out_of_bounds_policy is \"pad\"."}, \
  [ARG_OUT_OF_BOUNDS] = {LADLE_STRING_ARG("out_of_bounds_policy", "error"), LADLE_CHOICES("error", "pad", "trim_to_shape"), \
      .doc = "A window reaching outside the image: \"error\", \"pad\" (fill_values) or \"trim_to_shape\" " \
             "(shrink the window)."}, \
  [ARG_ROUNDING] = {LADLE_STRING_ARG("rounding", "round"), LADLE_CHOICES("round", "truncate"), \
      .doc = "How the window's position becomes whole: \"round\" (halves away from zero) or \"truncate\" " \
             "(towards zero)."}

static const ladle_arg_schema crop_args[ARG_CROP_COUNT] = {CROP_ARGS};

enum { FLIP_HORIZONTAL, FLIP_VERTICAL, FLIP_COUNT };
static const ladle_arg_schema flip_args[FLIP_COUNT] = {
    {LADLE_BOOL_ARG("horizontal", 1), .per_sample = 1,
        .doc = "Flip left-right (per sample: 0 or 1)."},
    {LADLE_BOOL_ARG("vertical", 0), .per_sample = 1,
        .doc = "Flip upside down (per sample: 0 or 1)."},
};

static const ladle_arg_schema cmn_args[ARG_CMN_COUNT] = {
    CROP_ARGS,
    [ARG_MIRROR] = {LADLE_BOOL_ARG("mirror", 0), .per_sample = 1,
        .doc = "Flip the window left-right (per sample: 0 or 1, e.g. fn.random.coin_flip())."},
    [ARG_MEAN] = {LADLE_FLOATS_ARG("mean", zero),
        .doc = "Subtracted, in input units (one value, or one per channel)."},
    [ARG_STD] = {LADLE_FLOATS_ARG("std", one),
        .doc = "Divisor, in input units (one value, or one per channel); must not be 0."},
    [ARG_SCALE] = {LADLE_FLOAT_ARG("scale", 1.0),
        .doc = "Multiplies the normalized value: out = (in - mean) / std * scale + shift."},
    [ARG_SHIFT] = {LADLE_FLOAT_ARG("shift", 0.0), .doc = "Added to the normalized value."},
    [ARG_DTYPE] = {LADLE_DTYPE_ARG("dtype", LADLE_FLOAT32), .deprecated_name = "output_dtype",
        .doc = "Output type, any (FLOAT by default): integers rounded to nearest even and saturated, BOOL is "
               "value != 0, as fn.cast."},
    [ARG_OUTPUT_LAYOUT] = {LADLE_STRING_ARG("output_layout", "CHW"), LADLE_CHOICES("HWC", "CHW"), .doc = "\"CHW\" (planar) or \"HWC\"."},
    [ARG_PAD_OUTPUT] = {LADLE_BOOL_ARG("pad_output", 0), .doc = "Add a channel of zeros (3 -> 4 channels)."},
};

typedef enum { OOB_ERROR, OOB_PAD, OOB_TRIM } oob_policy;

typedef struct crop_state {
  oob_policy oob;
  int truncate; /* rounding="truncate" */
  float fill[4];
  int nfill;
  ladle__cmn_params cmn; /* crop_mirror_normalize: the constant part */
  int nmean, nstd;
} crop_state;

typedef struct sample_state {
  int x0, y0, w, h;
} sample_state;

static ladle_status crop_common_init(ladle__node *n, crop_state *c) {
  c->oob = (oob_policy)ladle__arg_choice(n, ARG_OUT_OF_BOUNDS);
  c->truncate = ladle__arg_choice(n, ARG_ROUNDING) == 1;
  const ladle_value *crop = ladle__arg_value(n, ARG_CROP);
  if (ladle__arg_given(n, ARG_CROP) && crop->count != 1 && crop->count != 2)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'crop' must be [height, width] or one value");
  const ladle_value *fill = ladle__arg_value(n, ARG_FILL_VALUES);
  if (fill->count < 1 || fill->count > 4)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'fill_values' takes 1 to 4 values");
  c->nfill = fill->count;
  for (int k = 0; k < 4; k++) c->fill[k] = (float)fill->u.floats[k < fill->count ? k : fill->count - 1];
  if (n->in[0].ndim != 3)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "the input must be HWC images (3 dimensions), got %d",
                         n->in[0].ndim);
  return LADLE_OK;
}

/* The window of this sample, per the crop arguments and the policy. */
static ladle_status crop_window(const ladle__node *n, const ladle__sample *s, const crop_state *c, int in_w, int in_h,
                                sample_state *win) {
  double cw = in_w, ch = in_h;
  if (ladle__arg_given(n, ARG_CROP)) {
    const ladle_value *crop = ladle__arg_value(n, ARG_CROP);
    ch = crop->u.floats[0];
    cw = crop->u.floats[crop->count - 1];
  }
  if (ladle__arg_given(n, ARG_CROP_W)) cw = ladle__arg_float(n, s, ARG_CROP_W);
  if (ladle__arg_given(n, ARG_CROP_H)) ch = ladle__arg_float(n, s, ARG_CROP_H);
  int w = (int)lround(cw), h = (int)lround(ch);
  if (w < 1 || h < 1) return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "the crop window %dx%d is empty", w, h);
  double px = ladle__arg_float(n, s, ARG_CROP_POS_X), py = ladle__arg_float(n, s, ARG_CROP_POS_Y);
  if (c->oob == OOB_TRIM) {
    if (w > in_w) w = in_w;
    if (h > in_h) h = in_h;
  }
  /* DALI holds the positions in float and rounds their exact product, halves
   * away from zero: 0.7 x 205 = 143.49999... (0.7f is below 0.7) -> 143. */
  double x = (double)(float)px * (in_w - w), y = (double)(float)py * (in_h - h);
  int x0 = (int)(c->truncate ? trunc(x) : round(x)), y0 = (int)(c->truncate ? trunc(y) : round(y));
  if (c->oob == OOB_ERROR && (x0 < 0 || y0 < 0 || x0 + w > in_w || y0 + h > in_h))
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT,
                         "the crop window %dx%d at (%d, %d) does not fit in the %dx%d image "
                         "(set out_of_bounds_policy=\"pad\" or \"trim_to_shape\")",
                         w, h, x0, y0, in_w, in_h);
  *win = (sample_state){x0, y0, w, h};
  return LADLE_OK;
}

static void state_fini(ladle__node *n) { free(n->state); }

static ladle_status crop_init(ladle__node *n) {
  crop_state *c = calloc(1, sizeof *c);
  if (!c) return LADLE_OP_FAIL(n, LADLE_ERROR_OUT_OF_MEMORY, "out of memory");
  n->state = c;
  ladle_status st = crop_common_init(n, c);
  if (st != LADLE_OK) return st;
  n->out[0] = n->in[0];
  if (!n->out[0].layout[0]) strcpy(n->out[0].layout, "HWC");
  return LADLE_OK;
}

static ladle_status crop_setup(ladle__node *n, ladle__sample *s) {
  sample_state *ss = s->state;
  ladle__tensor in = ladle__input(n, s, 0);
  ladle_status st = crop_window(n, s, n->state, (int)in.shape[1], (int)in.shape[0], ss);
  if (st != LADLE_OK) return st;
  int64_t shape[3] = {ss->h, ss->w, in.shape[2]};
  ladle__set_shape(n, s, 0, shape);
  return LADLE_OK;
}

/* Writes fill_values (one per channel, converted to the element type like any
 * value) over the output pixels whose source lies outside the input. */
static void pad_window(void *out, ladle_dtype dtype, int channels, const crop_state *c, const sample_state *win,
                       int in_w, int in_h) {
  size_t elem = ladle_dtype_size(dtype), pixel = elem * (size_t)channels;
  uint8_t value[4 * 8];
  for (int k = 0; k < channels && k < 4; k++) ladle__convert(value + k * elem, dtype, &c->fill[k], LADLE_FLOAT32, 1);
  int inside_lo = -win->x0 < 0 ? 0 : -win->x0;               /* first column with a source */
  int inside_hi = in_w - win->x0 > win->w ? win->w : in_w - win->x0; /* one past the last */
  for (int y = 0; y < win->h; y++) {
    uint8_t *row = (uint8_t *)out + (size_t)y * win->w * pixel;
    int sy = win->y0 + y, whole = sy < 0 || sy >= in_h || inside_hi <= inside_lo;
    for (int x = 0; x < win->w; x++) {
      if (!whole && x >= inside_lo && x < inside_hi) {
        x = inside_hi - 1;
        continue;
      }
      memcpy(row + (size_t)x * pixel, value, pixel);
    }
  }
}

static ladle_status crop_run(ladle__node *n, ladle__sample *s) {
  const sample_state *ss = s->state;
  const crop_state *c = n->state;
  ladle__tensor in = ladle__input(n, s, 0), out = ladle__output(n, s, 0);
  int in_h = (int)in.shape[0], in_w = (int)in.shape[1], channels = (int)in.shape[2];
  ladle__crop_flip_hwc(out.data, in.data, in_h, in_w, channels, ladle_dtype_size(in.dtype), ss->x0, ss->y0, ss->w,
                       ss->h, 0, 0, 0);
  int outside = ss->x0 < 0 || ss->y0 < 0 || ss->x0 + ss->w > in_w || ss->y0 + ss->h > in_h;
  if (outside && channels <= 4) pad_window(out.data, in.dtype, channels, c, ss, in_w, in_h);
  return LADLE_OK;
}

static ladle_status flip_init(ladle__node *n) {
  if (n->in[0].ndim != 3)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "the input must be HWC images (3 dimensions), got %d",
                         n->in[0].ndim);
  n->out[0] = n->in[0];
  return LADLE_OK;
}

static ladle_status flip_setup(ladle__node *n, ladle__sample *s) {
  ladle__tensor in = ladle__input(n, s, 0);
  ladle__set_shape(n, s, 0, in.shape);
  return LADLE_OK;
}

static ladle_status flip_run(ladle__node *n, ladle__sample *s) {
  ladle__tensor in = ladle__input(n, s, 0), out = ladle__output(n, s, 0);
  int w = (int)in.shape[1], h = (int)in.shape[0];
  ladle__crop_flip_hwc(out.data, in.data, h, w, (int)in.shape[2], ladle_dtype_size(in.dtype), 0, 0, w, h,
                       ladle__arg_int(n, s, FLIP_HORIZONTAL) != 0, ladle__arg_int(n, s, FLIP_VERTICAL) != 0, 0);
  return LADLE_OK;
}

static ladle_status cmn_init(ladle__node *n) {
  crop_state *c = calloc(1, sizeof *c);
  if (!c) return LADLE_OP_FAIL(n, LADLE_ERROR_OUT_OF_MEMORY, "out of memory");
  n->state = c;
  ladle_status st = crop_common_init(n, c);
  if (st != LADLE_OK) return st;
  if (n->in[0].dtype != LADLE_UINT8)
    return LADLE_OP_FAIL(n, LADLE_ERROR_UNSUPPORTED, "the input must be uint8 images, got %s",
                         ladle_dtype_name(n->in[0].dtype));
  const ladle_value *mean = ladle__arg_value(n, ARG_MEAN), *std = ladle__arg_value(n, ARG_STD);
  if (mean->count < 1 || mean->count > 4 || std->count < 1 || std->count > 4)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "arguments 'mean' and 'std' take 1 to 4 values");
  ladle__cmn_params *p = &c->cmn;
  for (int k = 0; k < 4; k++) {
    double sd = std->u.floats[k < std->count ? k : std->count - 1];
    if (sd == 0) return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'std' must not contain 0");
    p->mean[k] = (float)mean->u.floats[k < mean->count ? k : mean->count - 1];
    p->inv_std[k] = (float)(1.0 / sd);
    p->fill[k] = c->fill[k];
  }
  c->nmean = mean->count;
  c->nstd = std->count;
  p->scale = (float)ladle__arg_float(n, NULL, ARG_SCALE);
  p->shift = (float)ladle__arg_float(n, NULL, ARG_SHIFT);
  p->dtype = (ladle_dtype)ladle__arg_int(n, NULL, ARG_DTYPE);
  p->chw = ladle__arg_choice(n, ARG_OUTPUT_LAYOUT); /* "HWC", "CHW" */
  p->pad_output = (int)ladle__arg_int(n, NULL, ARG_PAD_OUTPUT);
  n->out[0] = (ladle__out_desc){p->dtype, 3, ""};
  strcpy(n->out[0].layout, p->chw ? "CHW" : "HWC");
  return LADLE_OK;
}

static ladle_status cmn_setup(ladle__node *n, ladle__sample *s) {
  const crop_state *c = n->state;
  sample_state *ss = s->state;
  ladle__tensor in = ladle__input(n, s, 0);
  int channels = (int)in.shape[2];
  if (channels < 1 || channels + c->cmn.pad_output > 4)
    return LADLE_OP_FAIL(n, LADLE_ERROR_UNSUPPORTED, "images with %d channels are not supported", channels);
  if ((c->nmean > 1 && c->nmean != channels) || (c->nstd > 1 && c->nstd != channels))
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT,
                         "'mean' has %d and 'std' %d values for an image of %d channels", c->nmean, c->nstd, channels);
  ladle_status st = crop_window(n, s, c, (int)in.shape[1], (int)in.shape[0], ss);
  if (st != LADLE_OK) return st;
  int out_c = channels + c->cmn.pad_output;
  int64_t shape[3];
  if (c->cmn.chw) {
    shape[0] = out_c, shape[1] = ss->h, shape[2] = ss->w;
  } else {
    shape[0] = ss->h, shape[1] = ss->w, shape[2] = out_c;
  }
  ladle__set_shape(n, s, 0, shape);
  return LADLE_OK;
}

static ladle_status cmn_run(ladle__node *n, ladle__sample *s) {
  const crop_state *c = n->state;
  const sample_state *ss = s->state;
  ladle__tensor in = ladle__input(n, s, 0), out = ladle__output(n, s, 0);
  ladle__cmn_params p = c->cmn;
  p.x0 = ss->x0;
  p.y0 = ss->y0;
  p.w = ss->w;
  p.h = ss->h;
  p.channels = (int)in.shape[2];
  p.mirror = ladle__arg_int(n, s, ARG_MIRROR) != 0;
  ladle__crop_mirror_normalize(out.data, in.data, (int)in.shape[0], (int)in.shape[1], (int)(in.shape[1] * in.shape[2]),
                               &p);
  return LADLE_OK;
}

#ifdef LADLE_HAVE_CUDA
#include "ops/kernels/gpu_kernels.h"

static sample_state *state_of(const ladle__node *n, int i) {
  return (sample_state *)(n->sample_states + (size_t)i * sizeof(sample_state));
}

/* Descriptor arrays live in worker 0's scratch: run_batch runs between
 * parallel passes, when no worker uses it. */
static ladle_status descriptors(ladle__node *n, size_t bytes, void **out) {
  return ladle__scratch(n, &(ladle__sample){.worker = 0}, bytes, out);
}

/* The fill byte of the GPU crop kernel: only a single value that every byte
 * of the element can repeat (0 for any type, or 0..255 for uint8). */
static ladle_status fill_byte(const ladle__node *n, const crop_state *c, ladle_dtype dtype, uint8_t *out) {
  for (int k = 1; k < c->nfill; k++)
    if (c->fill[k] != c->fill[0])
      return LADLE_OP_FAIL(n, LADLE_ERROR_UNSUPPORTED, "crop pads with one fill value for all channels");
  if (c->fill[0] == 0) *out = 0;
  else if (dtype == LADLE_UINT8 && c->fill[0] >= 0 && c->fill[0] <= 255 && c->fill[0] == floorf(c->fill[0]))
    *out = (uint8_t)c->fill[0];
  else
    return LADLE_OP_FAIL(n, LADLE_ERROR_UNSUPPORTED, "crop pads %s images with 0 only", ladle_dtype_name(dtype));
  return LADLE_OK;
}

/* crop and flip: one byte-copy launch per batch. */
static ladle_status crop_flip_run_batch(ladle__node *n, ladle__gpu *g, int is_flip) {
  int batch = n->config->batch_size;
  ladle__gpu_crop_flip_desc *d = NULL;
  ladle_status st = descriptors(n, sizeof *d * (size_t)batch, (void **)&d);
  uint8_t fill = 0;
  if (st == LADLE_OK && !is_flip) st = fill_byte(n, n->state, n->in[0].dtype, &fill);
  for (int i = 0; st == LADLE_OK && i < batch; i++) {
    const int64_t *shape = ladle_batch_shape(n->in_batches[0], i);
    int h = (int)shape[0], w = (int)shape[1];
    ladle__sample s = {.slot = i};
    sample_state win = is_flip ? (sample_state){0, 0, w, h} : *state_of(n, i);
    d[i] = (ladle__gpu_crop_flip_desc){ladle_batch_data(n->in_batches[0], i), ladle_batch_data(n->out_batches[0], i),
                                       h, w, (int)shape[2], ladle_dtype_size(n->in[0].dtype), win.x0, win.y0, win.w,
                                       win.h, is_flip && ladle__arg_int(n, &s, FLIP_HORIZONTAL) != 0,
                                       is_flip && ladle__arg_int(n, &s, FLIP_VERTICAL) != 0, fill};
  }
  void *host = NULL, *dev = NULL;
  size_t bytes = ladle__gpu_crop_flip_param_bytes(batch);
  if (st == LADLE_OK) st = ladle__gpu_params(g, bytes, &host, &dev);
  return st == LADLE_OK ? ladle__gpu_crop_flip(d, batch, host, dev, bytes, g->stream) : st;
}

static ladle_status crop_run_batch(ladle__node *n, ladle__gpu *g) { return crop_flip_run_batch(n, g, 0); }
static ladle_status flip_run_batch(ladle__node *n, ladle__gpu *g) { return crop_flip_run_batch(n, g, 1); }

static ladle_status cmn_run_batch(ladle__node *n, ladle__gpu *g) {
  const crop_state *c = n->state;
  int batch = n->config->batch_size;
  ladle__gpu_cmn_desc *d = NULL;
  ladle_status st = descriptors(n, sizeof *d * (size_t)batch, (void **)&d);
  for (int i = 0; st == LADLE_OK && i < batch; i++) {
    const int64_t *shape = ladle_batch_shape(n->in_batches[0], i);
    const sample_state *win = state_of(n, i);
    ladle__sample s = {.slot = i};
    d[i] = (ladle__gpu_cmn_desc){ladle_batch_data(n->in_batches[0], i), ladle_batch_data(n->out_batches[0], i),
                                 (int)shape[0], (int)shape[1], shape[1] * shape[2], c->cmn};
    d[i].p.x0 = win->x0, d[i].p.y0 = win->y0, d[i].p.w = win->w, d[i].p.h = win->h;
    d[i].p.channels = (int)shape[2];
    d[i].p.mirror = ladle__arg_int(n, &s, ARG_MIRROR) != 0;
  }
  void *host = NULL, *dev = NULL;
  size_t bytes = ladle__gpu_cmn_param_bytes(batch);
  if (st == LADLE_OK) st = ladle__gpu_params(g, bytes, &host, &dev);
  return st == LADLE_OK ? ladle__gpu_crop_mirror_normalize(d, batch, host, dev, bytes, g->stream) : st;
}
/* As the epilogue of the kernel before it (a resize's: plan.c): the window
 * and mirror of sample `slot`, with the constant part. */
static ladle_status cmn_epilogue_params(ladle__node *n, int slot, void *params) {
  const crop_state *c = n->state;
  const sample_state *win = state_of(n, slot);
  ladle__sample s = {.slot = slot};
  ladle__cmn_params *p = params;
  *p = c->cmn;
  p->x0 = win->x0, p->y0 = win->y0, p->w = win->w, p->h = win->h;
  p->channels = (int)ladle_batch_shape(n->in_batches[0], slot)[2];
  p->mirror = ladle__arg_int(n, &s, ARG_MIRROR) != 0;
  return LADLE_OK;
}
#define CMN_EPILOGUE_PARAMS cmn_epilogue_params
#define CROP_RUN_BATCH crop_run_batch
#define FLIP_RUN_BATCH flip_run_batch
#define CMN_RUN_BATCH cmn_run_batch
#else
#define CMN_EPILOGUE_PARAMS NULL
#define CROP_RUN_BATCH NULL
#define FLIP_RUN_BATCH NULL
#define CMN_RUN_BATCH NULL
#endif

const ladle__op_def ladle__op_crop = {
    .schema = {.name = "crop",
               .doc = "Cuts a window (crop, crop_w/crop_h at crop_pos_x/crop_pos_y) out of HWC images.",
               .min_inputs = 1, .max_inputs = 1, .num_outputs = 1,
               .devices = LADLE_ON_CPU_GPU,
               .num_args = ARG_CROP_COUNT, .args = crop_args},
    .sample_state_size = sizeof(sample_state),
    .init = crop_init,
    .fini = state_fini,
    .setup = crop_setup,
    .run = crop_run,
    .run_batch = CROP_RUN_BATCH,
};

const ladle__op_def ladle__op_flip = {
    .schema = {.name = "flip",
               .doc = "Flips HWC images horizontally and/or vertically (per-sample arguments allowed).",
               .min_inputs = 1, .max_inputs = 1, .num_outputs = 1,
               .devices = LADLE_ON_CPU_GPU,
               .num_args = FLIP_COUNT, .args = flip_args},
    .init = flip_init,
    .setup = flip_setup,
    .run = flip_run,
    .run_batch = FLIP_RUN_BATCH,
};

const ladle__op_def ladle__op_crop_mirror_normalize = {
    .schema = {.name = "crop_mirror_normalize",
               .doc = "Crops, mirrors, normalizes ((in - mean) / std * scale + shift), casts and lays out uint8 HWC "
                      "images in one pass.",
               .min_inputs = 1, .max_inputs = 1, .num_outputs = 1,
               .devices = LADLE_ON_CPU_GPU, .flags = LADLE_OP_EPILOGUE,
               .num_args = ARG_CMN_COUNT, .args = cmn_args},
    .sample_state_size = sizeof(sample_state),
    .init = cmn_init,
    .fini = state_fini,
    .setup = cmn_setup,
    .run = cmn_run,
    .run_batch = CMN_RUN_BATCH,
    .epilogue = LADLE__EPILOGUE_CMN,
    .epilogue_params = CMN_EPILOGUE_PARAMS,
};
