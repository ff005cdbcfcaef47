/* decoders.image, decoders.image_random_crop, decoders.image_crop and
 * decoders.image_slice: their schemas and the CPU backend, encoded bytes in,
 * HWC uint8 out. The window decoders decode only the window they keep (the
 * random-crop one at a reduced DCT scale too when the pipeline will shrink it
 * a lot). The mixed backend (nvJPEG) is decoders_mixed.c. */
#include <math.h>
#include <stdlib.h>

#include "codec/image.h"
#include "ops/image/decoders.h"
#include "ops/image/random_crop.h"
#include "ops/tensor/slice.h"
#include "ops/tensor/tensor_args.h"

enum {
  ARG_OUTPUT_TYPE, ARG_ADJUST_ORIENTATION, ARG_HW_DECODER_LOAD, ARG_HYBRID_HUFFMAN_THRESHOLD, ARG_DEVICE_MEMORY_PADDING,
  ARG_HOST_MEMORY_PADDING, ARG_PREALLOCATE_WIDTH_HINT, ARG_PREALLOCATE_HEIGHT_HINT, ARG_USE_FAST_IDCT,
  ARG_DECODER_BALANCE, ARG_AFFINE, ARG_DEVICE_MEMORY_PADDING_JPEG2K, ARG_HOST_MEMORY_PADDING_JPEG2K, ARG_MEMORY_STATS,
  ARG_SPLIT_STAGES, ARG_USE_CHUNK_ALLOCATOR, ARG_COMMON_COUNT,
  ARG_RANDOM_AREA = ARG_COMMON_COUNT, ARG_RANDOM_ASPECT_RATIO, ARG_NUM_ATTEMPTS, ARG_CROP_COUNT
};
enum { /* decoders.image_crop */
  ARG_WIN_CROP = ARG_COMMON_COUNT, ARG_WIN_CROP_W, ARG_WIN_CROP_H, ARG_WIN_POS_X, ARG_WIN_POS_Y, ARG_WIN_ROUNDING,
  ARG_IMAGE_CROP_COUNT
};
enum { /* decoders.image_slice */
  ARG_SL_AXES = ARG_COMMON_COUNT, ARG_SL_AXIS_NAMES, ARG_SL_START, ARG_SL_REL_START, ARG_SL_END, ARG_SL_REL_END,
  ARG_SL_SHAPE, ARG_SL_REL_SHAPE, ARG_SL_NORM_ANCHOR, ARG_SL_NORM_SHAPE, ARG_IMAGE_SLICE_COUNT
};

#define COMMON_ARGS \
  [ARG_OUTPUT_TYPE] = {LADLE_STRING_ARG("output_type", "RGB"), LADLE_CHOICES("RGB", "BGR", "GRAY"), \
      .doc = "Colour of the output: \"RGB\", \"BGR\" or \"GRAY\"."}, \
  [ARG_ADJUST_ORIENTATION] = {LADLE_BOOL_ARG("adjust_orientation", 1), \
      .doc = "Apply the EXIF orientation, so the output is the image as displayed."}, \
  [ARG_HW_DECODER_LOAD] = {LADLE_FLOAT_ARG("hw_decoder_load", 0.8), LADLE_RANGE(0.0, 1.0), \
      .doc = "mixed: the share of JPEGs given to nvJPEG's hardware decoder (its GPU-hybrid backend on a GPU without " \
             "one); the rest go, at the same time, to " \
             "its GPU-Huffman decoder (see hybrid_huffman_threshold) or the CPU workers " \
             "(DALI's default is 0.65; 0.8 was fastest on an H200 with 16 cores)."}, \
  [ARG_HYBRID_HUFFMAN_THRESHOLD] = {LADLE_INT_ARG("hybrid_huffman_threshold", 1000000), LADLE_RANGE(0.0, 4294967295.0), \
      .doc = "mixed: JPEGs outside the hw_decoder_load share (or that the hardware decoder does not take) with " \
             "more pixels (height * width) than this are decoded by nvJPEG's GPU-Huffman backend " \
             "(NVJPEG_BACKEND_GPU_HYBRID, baseline JPEGs only), from a worker, at the same time as the hardware " \
             "engines and the CPU workers; the others by the CPU workers (DALI gives those to nvJPEG's host-Huffman " \
             "decoder). nvJPEG decodes Huffman codes on the GPU for batches of more than 50 such images, on the " \
             "worker for smaller ones. 0 sends every such JPEG there."}, \
  [ARG_DEVICE_MEMORY_PADDING] = {LADLE_INT_ARG("device_memory_padding", 16 << 20), \
      .no_effect = 1, .doc = "Accepted for DALI scripts; ladle's pools size themselves."}, \
  [ARG_HOST_MEMORY_PADDING] = {LADLE_INT_ARG("host_memory_padding", 8 << 20), \
      .no_effect = 1, .doc = "Accepted for DALI scripts; ladle's pools size themselves."}, \
  [ARG_PREALLOCATE_WIDTH_HINT] = {LADLE_INT_ARG("preallocate_width_hint", 0), \
      .no_effect = 1, .doc = "Accepted for DALI scripts; no effect."}, \
  [ARG_PREALLOCATE_HEIGHT_HINT] = {LADLE_INT_ARG("preallocate_height_hint", 0), \
      .no_effect = 1, .doc = "Accepted for DALI scripts; no effect."}, \
  [ARG_USE_FAST_IDCT] = {LADLE_BOOL_ARG("use_fast_idct", 0), \
      .no_effect = 1, .doc = "Accepted for DALI scripts; ladle always uses the accurate IDCT."}, \
  [ARG_DECODER_BALANCE] = {LADLE_STRING_ARG("decoder_balance", "fixed"), LADLE_CHOICES("fixed", "adaptive"), \
      .doc = "mixed, ladle only: \"fixed\" keeps hw_decoder_load's share, so each image's decoder, and so the " \
             "output, is the same on every run; \"adaptive\" starts there and, after each batch, moves the " \
             "hardware share by 1/64 towards what kept the batch waiting: more images to the CPU workers while " \
             "the engines are the bottleneck and the workers finish first, fewer while the workers are (cores " \
             "taken by the training process, say), and fewer when neither waited (the consumer is slower than " \
             "the loader: the engines alone keep up, and the cores stay free). nvJPEG and the CPU decoder differ " \
             "by a few levels in some pixels, so adaptive outputs depend on timing. The share in use is the " \
             "counter hw_share_per_mille."}, \
  [ARG_AFFINE] = {LADLE_BOOL_ARG("affine", 1), .no_effect = 1, \
      .doc = "Accepted for DALI scripts; no effect: ladle's nvJPEG has no thread pool of its own (the CPU share " \
             "runs on the pipeline's workers, pinned with set_affinity)."}, \
  [ARG_DEVICE_MEMORY_PADDING_JPEG2K] = {LADLE_INT_ARG("device_memory_padding_jpeg2k", 0), .no_effect = 1, \
      .doc = "Accepted for DALI scripts; no effect (a memory hint for nvJPEG2000, which ladle does not use)."}, \
  [ARG_HOST_MEMORY_PADDING_JPEG2K] = {LADLE_INT_ARG("host_memory_padding_jpeg2k", 0), .no_effect = 1, \
      .doc = "Accepted for DALI scripts; no effect (a memory hint for nvJPEG2000, which ladle does not use)."}, \
  [ARG_MEMORY_STATS] = {LADLE_BOOL_ARG("memory_stats", 0), .no_effect = 1, \
      .doc = "Accepted for DALI scripts (deprecated there); no effect: DALI prints its allocator's figures at " \
             "the end, ladle does not."}, \
  [ARG_SPLIT_STAGES] = {LADLE_BOOL_ARG("split_stages", 0), .no_effect = 1, \
      .doc = "Accepted for DALI scripts (deprecated there, with no effect); no effect."}, \
  [ARG_USE_CHUNK_ALLOCATOR] = {LADLE_BOOL_ARG("use_chunk_allocator", 0), .no_effect = 1, \
      .doc = "Accepted for DALI scripts (deprecated there, with no effect); no effect."}

static const double default_area[] = {0.08, 1.0};
static const double default_aspect[] = {3.0 / 4.0, 4.0 / 3.0};

static const ladle_arg_schema image_args[ARG_COMMON_COUNT] = {COMMON_ARGS};
static const ladle_arg_schema crop_args[ARG_CROP_COUNT] = {
    COMMON_ARGS,
    [ARG_RANDOM_AREA] = {LADLE_FLOATS_ARG("random_area", default_area), LADLE_RANGE(0.0, 1.0),
        .doc = "Range [min, max] of the crop's area as a fraction of the image's."},
    [ARG_RANDOM_ASPECT_RATIO] = {LADLE_FLOATS_ARG("random_aspect_ratio", default_aspect), LADLE_RANGE(1e-6, 1e6),
        .doc = "Range [min, max] of the crop's width/height, drawn log-uniformly."},
    [ARG_NUM_ATTEMPTS] = {LADLE_INT_ARG("num_attempts", 10), LADLE_RANGE(1.0, 1000.0),
        .doc = "Windows tried before falling back to a centred crop of the whole image."},
};

static const ladle_arg_schema image_crop_args[ARG_IMAGE_CROP_COUNT] = {
    COMMON_ARGS,
    [ARG_WIN_CROP] = {LADLE_OPTIONAL_ARG("crop", LADLE_ARG_FLOATS), LADLE_RANGE(0.0, 1e9),
        .doc = "Window size [height, width], in pixels of the decoded (oriented) image. Default: the whole image."},
    [ARG_WIN_CROP_W] = {LADLE_OPTIONAL_ARG("crop_w", LADLE_ARG_FLOAT), .per_sample = 1, LADLE_RANGE(0.0, 1e9),
        .doc = "Window width in pixels (with crop_h; instead of crop)."},
    [ARG_WIN_CROP_H] = {LADLE_OPTIONAL_ARG("crop_h", LADLE_ARG_FLOAT), .per_sample = 1, LADLE_RANGE(0.0, 1e9),
        .doc = "Window height in pixels (with crop_w; instead of crop)."},
    [ARG_WIN_POS_X] = {LADLE_FLOAT_ARG("crop_pos_x", 0.5), .per_sample = 1, LADLE_RANGE(0.0, 1.0),
        .doc = "Horizontal position of the window: x = crop_pos_x * (width - crop_width), made whole by "
               "'rounding'."},
    [ARG_WIN_POS_Y] = {LADLE_FLOAT_ARG("crop_pos_y", 0.5), .per_sample = 1, LADLE_RANGE(0.0, 1.0),
        .doc = "Vertical position of the window: y = crop_pos_y * (height - crop_height), made whole by "
               "'rounding'."},
    [ARG_WIN_ROUNDING] = {LADLE_STRING_ARG("rounding", "round"), LADLE_CHOICES("round", "truncate"),
        .doc = "How the window's position becomes whole: \"round\" (halves away from zero) or \"truncate\"."},
};

static const int64_t default_slice_axes[] = {1, 0};
static const ladle_arg_schema image_slice_args[ARG_IMAGE_SLICE_COUNT] = {
    COMMON_ARGS,
    [ARG_SL_AXES] = {LADLE_INTS_ARG("axes", default_slice_axes),
        .doc = "The sliced axes of the HWC output (0: height, 1: width), in the order of the anchor and shape "
               "values (used when axis_names is not given)."},
    [ARG_SL_AXIS_NAMES] = {LADLE_STRING_ARG("axis_names", "WH"),
        .doc = "The sliced axes as letters of \"HWC\" (\"WH\": anchor and shape are (x, y) and (width, height))."},
    [ARG_SL_START] = {LADLE_OPTIONAL_ARG("start", LADLE_ARG_INTS), .per_sample = 1, .doc = "Slice start, in pixels."},
    [ARG_SL_REL_START] = {LADLE_OPTIONAL_ARG("rel_start", LADLE_ARG_FLOATS), .per_sample = 1,
        .doc = "Slice start, as fractions of the image's extents."},
    [ARG_SL_END] = {LADLE_OPTIONAL_ARG("end", LADLE_ARG_INTS), .per_sample = 1,
        .doc = "Slice end (exclusive), in pixels."},
    [ARG_SL_REL_END] = {LADLE_OPTIONAL_ARG("rel_end", LADLE_ARG_FLOATS), .per_sample = 1,
        .doc = "Slice end, as fractions of the image's extents."},
    [ARG_SL_SHAPE] = {LADLE_OPTIONAL_ARG("shape", LADLE_ARG_INTS), .per_sample = 1, .doc = "Slice shape, in pixels."},
    [ARG_SL_REL_SHAPE] = {LADLE_OPTIONAL_ARG("rel_shape", LADLE_ARG_FLOATS), .per_sample = 1,
        .doc = "Slice shape, as fractions of the image's extents."},
    [ARG_SL_NORM_ANCHOR] = {LADLE_BOOL_ARG("normalized_anchor", 1),
        .doc = "A float input 1 (anchor) holds fractions of the extents (else pixels; integers are pixels)."},
    [ARG_SL_NORM_SHAPE] = {LADLE_BOOL_ARG("normalized_shape", 1),
        .doc = "A float input 2 (shape) holds fractions of the extents (else pixels; integers are pixels)."},
};

static const ladle__slice_arg_ids slice_ids = {ARG_SL_START, ARG_SL_REL_START, ARG_SL_END, ARG_SL_REL_END,
                                               ARG_SL_SHAPE, ARG_SL_REL_SHAPE, ARG_SL_NORM_ANCHOR, ARG_SL_NORM_SHAPE};

typedef ladle__decoder_sample sample_state;

#ifdef LADLE_HAVE_CUDA
#define MIXED_RUN_BATCH ladle__decoders_mixed_run_batch
#else
#define MIXED_RUN_BATCH NULL
#endif

/* image_crop's and image_slice's checks at build. */
static ladle_status window_init(ladle__node *n, ladle__decoder_state *d) {
  if (d->window == LADLE__DECODER_CROP) {
    const ladle_value *crop = ladle__arg_value(n, ARG_WIN_CROP);
    int given_w = ladle__arg_given(n, ARG_WIN_CROP_W), given_h = ladle__arg_given(n, ARG_WIN_CROP_H);
    if (ladle__arg_given(n, ARG_WIN_CROP) && crop->count != 2)
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'crop' must be [height, width], got %d values",
                           crop->count);
    if (given_w != given_h)
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "arguments 'crop_w' and 'crop_h' go together");
    if (given_w && ladle__arg_given(n, ARG_WIN_CROP))
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "give argument 'crop' or 'crop_w'/'crop_h', not both");
    return LADLE_OK;
  }
  ladle_status st = ladle__slice_check(n, &slice_ids);
  if (st != LADLE_OK) return st;
  int by_names = ladle__arg_given(n, ARG_SL_AXIS_NAMES) || !ladle__arg_given(n, ARG_SL_AXES);
  st = ladle__tensor_axes(n, NULL, by_names ? -1 : ARG_SL_AXES, by_names ? ARG_SL_AXIS_NAMES : -1, 3, "HWC", 1,
                          d->axes, &d->num_axes);
  if (st != LADLE_OK) return st;
  for (int k = 0; k < d->num_axes; k++)
    if (d->axes[k] == 2)
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT,
                           "the channel axis cannot be sliced (argument '%s'): slice height and width",
                           by_names ? "axis_names" : "axes");
  return LADLE_OK;
}

/* The window of image_crop or image_slice in the decoded image (width x
 * height, oriented), which it must lie in. */
static ladle_status window_of(ladle__node *n, ladle__sample *s, const ladle__decoder_state *d, int width, int height,
                              int channels, ladle__window *win) {
  if (d->window == LADLE__DECODER_CROP) {
    double cw = width, ch = height;
    if (ladle__arg_given(n, ARG_WIN_CROP)) {
      const ladle_value *crop = ladle__arg_value(n, ARG_WIN_CROP);
      ch = crop->u.floats[0], cw = crop->u.floats[1];
    } else if (ladle__arg_given(n, ARG_WIN_CROP_W)) {
      cw = ladle__arg_float(n, s, ARG_WIN_CROP_W), ch = ladle__arg_float(n, s, ARG_WIN_CROP_H);
    }
    int w = (int)lround(cw), h = (int)lround(ch);
    /* The positions are floats in DALI: the product of the float value. */
    double x = (double)(float)ladle__arg_float(n, s, ARG_WIN_POS_X) * (width - w);
    double y = (double)(float)ladle__arg_float(n, s, ARG_WIN_POS_Y) * (height - h);
    int truncate = ladle__arg_choice(n, ARG_WIN_ROUNDING) == 1;
    *win = (ladle__window){(int)(truncate ? trunc(x) : round(x)), (int)(truncate ? trunc(y) : round(y)), w, h};
  } else {
    int64_t extents[3] = {height, width, channels}, start[2], end[2];
    ladle_status st = ladle__slice_bounds(n, s, &slice_ids, d->axes, d->num_axes, extents, start, end);
    if (st != LADLE_OK) return st;
    *win = (ladle__window){0, 0, width, height};
    for (int k = 0; k < d->num_axes; k++) {
      if (start[k] < INT32_MIN || end[k] > INT32_MAX)
        return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "the slice [%lld, %lld) is outside the image",
                             (long long)start[k], (long long)end[k]);
      if (d->axes[k] == 1) win->x = (int)start[k], win->w = (int)(end[k] - start[k]);
      else win->y = (int)start[k], win->h = (int)(end[k] - start[k]);
    }
  }
  if (win->w < 1 || win->h < 1 || win->x < 0 || win->y < 0 || win->x + win->w > width || win->y + win->h > height)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT,
                         "the window %dx%d at (%d, %d) is empty or does not fit in the %dx%d image", win->w, win->h,
                         win->x, win->y, width, height);
  return LADLE_OK;
}

static ladle_status decoder_init(ladle__node *n, ladle__decoder_window window) {
  ladle__decoder_state *d = calloc(1, sizeof *d);
  if (!d) return LADLE_OP_FAIL(n, LADLE_ERROR_OUT_OF_MEMORY, "out of memory");
  n->state = d;
  d->color = (ladle__color)ladle__arg_choice(n, ARG_OUTPUT_TYPE);
  d->apply_orientation = (int)ladle__arg_int(n, NULL, ARG_ADJUST_ORIENTATION);
  d->gpu_share = ladle__arg_float(n, NULL, ARG_HW_DECODER_LOAD);
  d->adaptive = ladle__arg_choice(n, ARG_DECODER_BALANCE) == 1 && n->device == LADLE_ON_MIXED;
  atomic_store(&d->share64, (int)lround(d->gpu_share * 64));
  d->hybrid_threshold = ladle__arg_int(n, NULL, ARG_HYBRID_HUFFMAN_THRESHOLD);
  if (n->in[0].dtype != LADLE_UINT8 || n->in[0].ndim != 1)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "the input must be encoded bytes (uint8, 1-D)");
  d->window = window;
  if (window == LADLE__DECODER_CROP || window == LADLE__DECODER_SLICE) {
    ladle_status st = window_init(n, d);
    if (st != LADLE_OK) return st;
  }
  if (window == LADLE__DECODER_RANDOM_CROP) {
    const ladle_value *area = ladle__arg_value(n, ARG_RANDOM_AREA), *aspect = ladle__arg_value(n, ARG_RANDOM_ASPECT_RATIO);
    if (area->count != 2 || area->u.floats[0] > area->u.floats[1] || area->u.floats[1] <= 0)
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'random_area' must be [min, max] with 0 <= min <= max <= 1, max > 0");
    if (aspect->count != 2 || aspect->u.floats[0] > aspect->u.floats[1])
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'random_aspect_ratio' must be [min, max] with 0 < min <= max");
    d->crop = (ladle__random_crop_params){area->u.floats[0], area->u.floats[1], aspect->u.floats[0],
                                          aspect->u.floats[1], (int)ladle__arg_int(n, NULL, ARG_NUM_ATTEMPTS)};
  }
  n->out[0] = (ladle__out_desc){LADLE_UINT8, 3, "HWC"};
#ifdef LADLE_HAVE_CUDA
  if (n->device == LADLE_ON_MIXED) return ladle__decoders_mixed_init(n, d);
#endif
  return LADLE_OK;
}

static ladle_status image_init(ladle__node *n) { return decoder_init(n, LADLE__DECODER_WHOLE); }
static ladle_status image_random_crop_init(ladle__node *n) { return decoder_init(n, LADLE__DECODER_RANDOM_CROP); }
/* The planner's hint (its only reader resizes to a fixed size): decode at a
 * reduced DCT scale, never below that size. */
static void random_crop_allow_smaller(ladle__node *n, int min_width, int min_height) {
  ladle__decoder_state *d = n->state;
  d->min_width = min_width;
  d->min_height = min_height;
}

static ladle_status image_crop_init(ladle__node *n) { return decoder_init(n, LADLE__DECODER_CROP); }
static ladle_status image_slice_init(ladle__node *n) { return decoder_init(n, LADLE__DECODER_SLICE); }

static void decoder_fini(ladle__node *n) {
#ifdef LADLE_HAVE_CUDA
  if (n->state) ladle__decoders_mixed_fini(n->state);
#endif
  free(n->state);
}

static int decoder_counters(const ladle__node *n, const char **names, int64_t *values) {
  static const char *const route_names[LADLE__ROUTE_COUNT] = {"cpu", "hw", "gpu_hybrid"};
  ladle__decoder_state *d = n->state;
  for (int r = 0; r < LADLE__ROUTE_COUNT; r++) {
    names[r] = route_names[r];
    values[r] = d ? atomic_load(&d->decoded[r]) : 0;
  }
  names[LADLE__ROUTE_COUNT] = "retried_on_cpu";
  values[LADLE__ROUTE_COUNT] = d ? atomic_load(&d->retried_on_cpu) : 0;
  int k = LADLE__ROUTE_COUNT + 1;
  if (!d || !d->nvjpeg) return k;
  static const char *const wait_names[3] = {"nvjpeg_us", "engines_wait_us", "cpu_wait_us"};
  const _Atomic int64_t *waits[3] = {&d->nvjpeg_ns, &d->engines_wait_ns, &d->cpu_wait_ns};
  for (int i = 0; i < 3; i++, k++) {
    names[k] = wait_names[i];
    values[k] = atomic_load(waits[i]) / 1000;
  }
  if (!d->adaptive) return k;
  names[k] = "hw_share_per_mille"; /* decoder_balance="adaptive": the share now */
  values[k] = lround(ladle__decoder_share(d) * 1000);
  return k + 1;
}

static ladle_status decoder_setup(ladle__node *n, ladle__sample *s) {
  const ladle__decoder_state *d = n->state;
  sample_state *ss = s->state;
  ss->name = s->name ? s->name : "(unnamed)";
  ladle__tensor in = ladle__input(n, s, 0);
  ladle_status st = ladle__image_probe(in.data, (size_t)in.shape[0], s->name ? s->name : "(unnamed)", &ss->info);
  if (st != LADLE_OK) return st;
  ladle__decode_params_init(&ss->params);
  ss->params.color = d->color;
  ss->params.apply_orientation = d->apply_orientation;
  ss->params.max_pixels = n->config->max_pixels;
  if (d->window != LADLE__DECODER_WHOLE) {
    int width = d->apply_orientation ? ss->info.width : ss->info.stored_width;
    int height = d->apply_orientation ? ss->info.height : ss->info.stored_height;
    ladle__window w;
    if (d->window == LADLE__DECODER_RANDOM_CROP) {
      ladle__rng rng;
      ladle__sample_rng(n, s, &rng);
      w = ladle__random_crop_window(&rng, width, height, &d->crop);
    } else {
      st = window_of(n, s, d, width, height, d->color == LADLE__COLOR_GRAY ? 1 : 3, &w);
      if (st != LADLE_OK) return st;
    }
    ss->params.has_roi = 1;
    ss->params.roi_x = w.x;
    ss->params.roi_y = w.y;
    ss->params.roi_w = w.w;
    ss->params.roi_h = w.h;
    if (n->device == LADLE_ON_CPU) { /* nvJPEG has no DCT scaling: keep both paths' sizes equal */
      ss->params.min_width = d->min_width;
      ss->params.min_height = d->min_height;
    }
  }
  int w, h, c;
  st = ladle__image_output_size(&ss->info, &ss->params, s->name ? s->name : "(unnamed)", &w, &h, &c);
  if (st != LADLE_OK) return st;
  int64_t shape[3] = {h, w, c};
  ladle__set_shape(n, s, 0, shape);
#ifdef LADLE_HAVE_CUDA
  if (n->device == LADLE_ON_MIXED) return ladle__decoders_mixed_route(n, s, ss);
#endif
  return LADLE_OK;
}

static ladle_status decoder_run(ladle__node *n, ladle__sample *s) {
  sample_state *ss = s->state;
  ladle__decoder_state *d = n->state;
  ladle__tensor in = ladle__input(n, s, 0), out = ladle__output(n, s, 0);
  ladle_status st = ladle__image_decode(in.data, (size_t)in.shape[0], s->name ? s->name : "(unnamed)", &ss->info,
                                        &ss->params, out.data);
  if (st == LADLE_OK) atomic_fetch_add_explicit(&d->decoded[LADLE__ROUTE_CPU], 1, memory_order_relaxed);
  return st;
}

const ladle__op_def ladle__op_decoders_image = {
    .schema = {.name = "decoders.image",
               .doc = "Decodes JPEG and PNG images (the format is sniffed from the bytes) to HWC uint8. CMYK becomes "
                      "RGB, 16-bit PNG is reduced to 8 bits, alpha is dropped.",
               .min_inputs = 1, .max_inputs = 1, .num_outputs = 1,
               .devices = LADLE_ON_CPU_MIXED,
               .num_args = ARG_COMMON_COUNT, .args = image_args},
    .sample_state_size = sizeof(sample_state),
    .init = image_init,
    .fini = decoder_fini,
    .counters = decoder_counters,
    .setup = decoder_setup,
    .setup_ahead = 1, /* the headers (and the route to a decoder) of the next iteration while this one decodes */
    .run = decoder_run,
    .run_batch = MIXED_RUN_BATCH,
    .own_stream = 1, /* the engines' decode of the next batch need not wait for this one's kernels */
};

const ladle__op_def ladle__op_decoders_image_random_crop = {
    .schema = {.name = "decoders.image_random_crop",
               .doc = "Decodes a random window of each image (area fraction in random_area, aspect ratio in "
                      "random_aspect_ratio), decoding only that window.",
               .min_inputs = 1, .max_inputs = 1, .num_outputs = 1,
               .devices = LADLE_ON_CPU_MIXED, .flags = LADLE_OP_RANDOM,
               .num_args = ARG_CROP_COUNT, .args = crop_args},
    .sample_state_size = sizeof(sample_state),
    .init = image_random_crop_init,
    .fini = decoder_fini,
    .counters = decoder_counters,
    .setup = decoder_setup,
    .setup_ahead = 1, /* the headers (and the route to a decoder) of the next iteration while this one decodes */
    .run = decoder_run,
    .run_batch = MIXED_RUN_BATCH,
    .own_stream = 1, /* the engines' decode of the next batch need not wait for this one's kernels */
    .allow_smaller_output = random_crop_allow_smaller,
};

const ladle__op_def ladle__op_decoders_image_crop = {
    .schema = {.name = "decoders.image_crop",
               .doc = "Decodes a fixed-size window of each image (crop, or crop_w and crop_h, at crop_pos_x and "
                      "crop_pos_y), decoding only that window where the format allows.",
               .min_inputs = 1, .max_inputs = 1, .num_outputs = 1,
               .devices = LADLE_ON_CPU_MIXED,
               .num_args = ARG_IMAGE_CROP_COUNT, .args = image_crop_args},
    .sample_state_size = sizeof(sample_state),
    .init = image_crop_init,
    .fini = decoder_fini,
    .counters = decoder_counters,
    .setup = decoder_setup,
    .setup_ahead = 1, /* the headers (and the route to a decoder) of the next iteration while this one decodes */
    .run = decoder_run,
    .run_batch = MIXED_RUN_BATCH,
    .own_stream = 1, /* the engines' decode of the next batch need not wait for this one's kernels */
};

const ladle__op_def ladle__op_decoders_image_slice = {
    .schema = {.name = "decoders.image_slice",
               .doc = "Decodes a slice of each image, given as fn.slice's is (start/rel_start with end/rel_end or "
                      "shape/rel_shape, or the inputs anchor and shape; axis_names \"WH\" by default), decoding only "
                      "that window where the format allows. The slice must lie in the image.",
               .min_inputs = 1, .max_inputs = 3, .num_outputs = 1,
               .devices = LADLE_ON_CPU_MIXED,
               .num_args = ARG_IMAGE_SLICE_COUNT, .args = image_slice_args, .host_inputs_from = 1},
    .sample_state_size = sizeof(sample_state),
    .init = image_slice_init,
    .fini = decoder_fini,
    .counters = decoder_counters,
    .setup = decoder_setup,
    .setup_ahead = 1, /* the headers (and the route to a decoder) of the next iteration while this one decodes */
    .run = decoder_run,
    .run_batch = MIXED_RUN_BATCH,
    .own_stream = 1, /* the engines' decode of the next batch need not wait for this one's kernels */
};
