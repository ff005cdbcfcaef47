/* decoders.image and decoders.image_random_crop: their schemas and the CPU
 * backend, encoded bytes in, HWC uint8 out. The random-crop decoder decodes
 * only the window it keeps (and at a reduced DCT scale when the pipeline will
 * shrink it a lot). The mixed backend (nvJPEG) is decoders_mixed.c. */
#include <stdlib.h>

#include "codec/image.h"
#include "ops/image/decoders.h"
#include "ops/image/random_crop.h"

enum {
  ARG_OUTPUT_TYPE, ARG_ADJUST_ORIENTATION, ARG_HW_DECODER_LOAD, ARG_DEVICE_MEMORY_PADDING,
  ARG_HOST_MEMORY_PADDING, ARG_PREALLOCATE_WIDTH_HINT, ARG_PREALLOCATE_HEIGHT_HINT, ARG_USE_FAST_IDCT,
  ARG_COMMON_COUNT,
  ARG_RANDOM_AREA = ARG_COMMON_COUNT, ARG_RANDOM_ASPECT_RATIO, ARG_NUM_ATTEMPTS, ARG_CROP_COUNT
};

#define COMMON_ARGS \
  [ARG_OUTPUT_TYPE] = {LADLE_STRING_ARG("output_type", "RGB"), LADLE_CHOICES("RGB", "BGR", "GRAY"), \
      .doc = "Colour of the output: \"RGB\", \"BGR\" or \"GRAY\"."}, \
  [ARG_ADJUST_ORIENTATION] = {LADLE_BOOL_ARG("adjust_orientation", 1), \
      .doc = "Apply the EXIF orientation, so the output is the image as displayed."}, \
  [ARG_HW_DECODER_LOAD] = {LADLE_FLOAT_ARG("hw_decoder_load", 0.8), LADLE_RANGE(0.0, 1.0), \
      .doc = "mixed: the share of JPEGs given to nvJPEG; the CPU workers decode the rest at the same time " \
             "(DALI's default is 0.65; 0.8 was fastest on an H200 with 16 cores)."}, \
  [ARG_DEVICE_MEMORY_PADDING] = {LADLE_INT_ARG("device_memory_padding", 16 << 20), \
      .no_effect = 1, .doc = "Accepted for DALI scripts; ladle's pools size themselves."}, \
  [ARG_HOST_MEMORY_PADDING] = {LADLE_INT_ARG("host_memory_padding", 8 << 20), \
      .no_effect = 1, .doc = "Accepted for DALI scripts; ladle's pools size themselves."}, \
  [ARG_PREALLOCATE_WIDTH_HINT] = {LADLE_INT_ARG("preallocate_width_hint", 0), \
      .no_effect = 1, .doc = "Accepted for DALI scripts; no effect."}, \
  [ARG_PREALLOCATE_HEIGHT_HINT] = {LADLE_INT_ARG("preallocate_height_hint", 0), \
      .no_effect = 1, .doc = "Accepted for DALI scripts; no effect."}, \
  [ARG_USE_FAST_IDCT] = {LADLE_BOOL_ARG("use_fast_idct", 0), \
      .no_effect = 1, .doc = "Accepted for DALI scripts; ladle always uses the accurate IDCT."}

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

typedef ladle__decoder_sample sample_state;

#ifdef LADLE_HAVE_CUDA
#define MIXED_RUN_BATCH ladle__decoders_mixed_run_batch
#else
#define MIXED_RUN_BATCH NULL
#endif

static ladle_status decoder_init(ladle__node *n, int random_crop) {
  ladle__decoder_state *d = calloc(1, sizeof *d);
  if (!d) return LADLE_OP_FAIL(n, LADLE_ERROR_OUT_OF_MEMORY, "out of memory");
  n->state = d;
  d->color = (ladle__color)ladle__arg_choice(n, ARG_OUTPUT_TYPE);
  d->apply_orientation = (int)ladle__arg_int(n, NULL, ARG_ADJUST_ORIENTATION);
  d->gpu_share = ladle__arg_float(n, NULL, ARG_HW_DECODER_LOAD);
  if (n->in[0].dtype != LADLE_UINT8 || n->in[0].ndim != 1)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "the input must be encoded bytes (uint8, 1-D)");
  if (random_crop) {
    const ladle_value *area = ladle__arg_value(n, ARG_RANDOM_AREA), *aspect = ladle__arg_value(n, ARG_RANDOM_ASPECT_RATIO);
    if (area->count != 2 || area->u.floats[0] > area->u.floats[1] || area->u.floats[1] <= 0)
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'random_area' must be [min, max] with 0 <= min <= max <= 1, max > 0");
    if (aspect->count != 2 || aspect->u.floats[0] > aspect->u.floats[1])
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'random_aspect_ratio' must be [min, max] with 0 < min <= max");
    d->random_crop = 1;
    d->crop = (ladle__random_crop_params){area->u.floats[0], area->u.floats[1], aspect->u.floats[0],
                                          aspect->u.floats[1], (int)ladle__arg_int(n, NULL, ARG_NUM_ATTEMPTS)};
  }
  n->out[0] = (ladle__out_desc){LADLE_UINT8, 3, "HWC"};
#ifdef LADLE_HAVE_CUDA
  if (n->device == LADLE_ON_MIXED) return ladle__decoders_mixed_init(n, d);
#endif
  return LADLE_OK;
}

static ladle_status image_init(ladle__node *n) { return decoder_init(n, 0); }
static ladle_status image_random_crop_init(ladle__node *n) { return decoder_init(n, 1); }

static void decoder_fini(ladle__node *n) { free(n->state); }

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
  if (d->random_crop) {
    int width = d->apply_orientation ? ss->info.width : ss->info.stored_width;
    int height = d->apply_orientation ? ss->info.height : ss->info.stored_height;
    ladle__rng rng;
    ladle__sample_rng(n, s, &rng);
    ladle__window w = ladle__random_crop_window(&rng, width, height, &d->crop);
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
  ladle__tensor in = ladle__input(n, s, 0), out = ladle__output(n, s, 0);
  return ladle__image_decode(in.data, (size_t)in.shape[0], s->name ? s->name : "(unnamed)", &ss->info, &ss->params,
                             out.data);
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
    .setup = decoder_setup,
    .run = decoder_run,
    .run_batch = MIXED_RUN_BATCH,
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
    .setup = decoder_setup,
    .run = decoder_run,
    .run_batch = MIXED_RUN_BATCH,
};
