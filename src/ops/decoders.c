/* decoders.image and decoders.image_random_crop on the CPU: encoded bytes in,
 * HWC uint8 out. The random-crop decoder decodes only the window it keeps
 * (and at a reduced DCT scale when the pipeline will shrink it a lot). */
#include <stdlib.h>

#include "codec/image.h"
#include "ops/decoders.h"
#include "ops/random_crop.h"

enum {
  ARG_OUTPUT_TYPE, ARG_ADJUST_ORIENTATION, ARG_HW_DECODER_LOAD, ARG_DEVICE_MEMORY_PADDING,
  ARG_HOST_MEMORY_PADDING, ARG_PREALLOCATE_WIDTH_HINT, ARG_PREALLOCATE_HEIGHT_HINT, ARG_USE_FAST_IDCT,
  ARG_COMMON_COUNT,
  ARG_RANDOM_AREA = ARG_COMMON_COUNT, ARG_RANDOM_ASPECT_RATIO, ARG_NUM_ATTEMPTS, ARG_CROP_COUNT
};

#define COMMON_ARGS                                                                                       \
  [ARG_OUTPUT_TYPE] = {"output_type", LADLE_ARG_STRING, 1, 0, LADLE_STRING_VALUE("RGB"), 0, LADLE_NO_RANGE, \
                       "Colour of the output: \"RGB\", \"BGR\" or \"GRAY\"."},                             \
  [ARG_ADJUST_ORIENTATION] = {"adjust_orientation", LADLE_ARG_BOOL, 1, 0, LADLE_BOOL_VALUE(1), 0,           \
                              LADLE_NO_RANGE, "Apply the EXIF orientation, so the output is the image as displayed."}, \
  [ARG_HW_DECODER_LOAD] = {"hw_decoder_load", LADLE_ARG_FLOAT, 1, 0, LADLE_FLOAT_VALUE(0.9), 0, 0.0, 1.0,   \
                           "Share of images given to the hardware JPEG decoder (mixed backend)."},       \
  [ARG_DEVICE_MEMORY_PADDING] = {"device_memory_padding", LADLE_ARG_INT, 1, 0, LADLE_INT_VALUE(16 << 20), 0, \
                                 LADLE_NO_RANGE, "Accepted for DALI scripts; ladle's pools size themselves."}, \
  [ARG_HOST_MEMORY_PADDING] = {"host_memory_padding", LADLE_ARG_INT, 1, 0, LADLE_INT_VALUE(8 << 20), 0,     \
                               LADLE_NO_RANGE, "Accepted for DALI scripts; ladle's pools size themselves."}, \
  [ARG_PREALLOCATE_WIDTH_HINT] = {"preallocate_width_hint", LADLE_ARG_INT, 1, 0, LADLE_INT_VALUE(0), 0,      \
                                  LADLE_NO_RANGE, "Accepted for DALI scripts; no effect."},               \
  [ARG_PREALLOCATE_HEIGHT_HINT] = {"preallocate_height_hint", LADLE_ARG_INT, 1, 0, LADLE_INT_VALUE(0), 0,    \
                                   LADLE_NO_RANGE, "Accepted for DALI scripts; no effect."},              \
  [ARG_USE_FAST_IDCT] = {"use_fast_idct", LADLE_ARG_BOOL, 1, 0, LADLE_BOOL_VALUE(0), 0, LADLE_NO_RANGE,      \
                         "Accepted for DALI scripts; ladle always uses the accurate IDCT."}

static const double default_area[] = {0.08, 1.0};
static const double default_aspect[] = {3.0 / 4.0, 4.0 / 3.0};

static const ladle_arg_schema image_args[ARG_COMMON_COUNT] = {COMMON_ARGS};
static const ladle_arg_schema crop_args[ARG_CROP_COUNT] = {
    COMMON_ARGS,
    [ARG_RANDOM_AREA] = {"random_area", LADLE_ARG_FLOATS, 1, 0, LADLE_FLOATS_VALUE(default_area), 0, 0.0, 1.0,
                         "Range [min, max] of the crop's area as a fraction of the image's."},
    [ARG_RANDOM_ASPECT_RATIO] = {"random_aspect_ratio", LADLE_ARG_FLOATS, 1, 0, LADLE_FLOATS_VALUE(default_aspect),
                                 0, 1e-6, 1e6, "Range [min, max] of the crop's width/height, drawn log-uniformly."},
    [ARG_NUM_ATTEMPTS] = {"num_attempts", LADLE_ARG_INT, 1, 0, LADLE_INT_VALUE(10), 0, 1.0, 1000.0,
                          "Windows tried before falling back to a centred crop of the whole image."},
};

typedef struct sample_state {
  ladle__image_info info;
  ladle__decode_params params;
} sample_state;

static ladle_status decoder_init(ladle__node *n) {
  static const char *const colors[] = {"RGB", "BGR", "GRAY", NULL};
  ladle__decoder_state *d = calloc(1, sizeof *d);
  if (!d) return LADLE_OP_FAIL(n, LADLE_ERROR_OUT_OF_MEMORY, "out of memory");
  n->state = d;
  int color = ladle__choice(ladle__arg_string(n, ARG_OUTPUT_TYPE), colors, NULL);
  if (color < 0)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT,
                         "argument 'output_type' = \"%s\": use \"RGB\", \"BGR\" or \"GRAY\"",
                         ladle__arg_string(n, ARG_OUTPUT_TYPE));
  d->color = (ladle__color)color;
  d->apply_orientation = (int)ladle__arg_int(n, NULL, ARG_ADJUST_ORIENTATION);
  if (n->in[0].dtype != LADLE_UINT8 || n->in[0].ndim != 1)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "the input must be encoded bytes (uint8, 1-D)");
  if (n->def->schema.num_args == ARG_CROP_COUNT) {
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
  return LADLE_OK;
}

static void decoder_fini(ladle__node *n) { free(n->state); }

static ladle_status decoder_setup(ladle__node *n, ladle__sample *s) {
  const ladle__decoder_state *d = n->state;
  sample_state *ss = s->state;
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
    ss->params.min_width = d->min_width;
    ss->params.min_height = d->min_height;
  }
  int w, h, c;
  st = ladle__image_output_size(&ss->info, &ss->params, s->name ? s->name : "(unnamed)", &w, &h, &c);
  if (st != LADLE_OK) return st;
  int64_t shape[3] = {h, w, c};
  ladle__set_shape(n, s, 0, shape);
  return LADLE_OK;
}

static ladle_status decoder_run(ladle__node *n, ladle__sample *s) {
  sample_state *ss = s->state;
  ladle__tensor in = ladle__input(n, s, 0), out = ladle__output(n, s, 0);
  return ladle__image_decode(in.data, (size_t)in.shape[0], s->name ? s->name : "(unnamed)", &ss->info, &ss->params,
                             out.data);
}

const ladle__op_def ladle__op_decoders_image = {
    .schema = {"decoders.image",
               "Decodes JPEG and PNG images (the format is sniffed from the bytes) to HWC uint8. CMYK becomes "
               "RGB, 16-bit PNG is reduced to 8 bits, alpha is dropped.",
               1, 1, 1, LADLE_ON_CPU, ARG_COMMON_COUNT, image_args},
    .sample_state_size = sizeof(sample_state),
    .init = decoder_init,
    .fini = decoder_fini,
    .setup = decoder_setup,
    .run = decoder_run,
};

const ladle__op_def ladle__op_decoders_image_random_crop = {
    .schema = {"decoders.image_random_crop",
               "Decodes a random window of each image (area fraction in random_area, aspect ratio in "
               "random_aspect_ratio), decoding only that window.",
               1, 1, 1, LADLE_ON_CPU, ARG_CROP_COUNT, crop_args},
    .sample_state_size = sizeof(sample_state),
    .init = decoder_init,
    .fini = decoder_fini,
    .setup = decoder_setup,
    .run = decoder_run,
};
