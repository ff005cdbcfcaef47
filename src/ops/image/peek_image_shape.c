/* peek_image_shape: the [height, width, channels] an encoded image would
 * have once decoded, from its header alone (ladle__image_probe). */
#include "codec/image.h"
#include "ops/kernels/dtype.h"
#include "ops/op.h"

enum { ARG_DTYPE, ARG_ADJUST_ORIENTATION, ARG_IMAGE_TYPE, ARG_COUNT };

static const ladle_arg_schema peek_args[ARG_COUNT] = {
    [ARG_DTYPE] = {LADLE_DTYPE_ARG("dtype", LADLE_INT64), .doc = "Type of the output's three sizes."},
    [ARG_ADJUST_ORIENTATION] = {LADLE_BOOL_ARG("adjust_orientation", 1),
        .doc = "Report the shape as displayed, after the EXIF orientation (as decoders.image does by default)."},
    [ARG_IMAGE_TYPE] = {LADLE_STRING_ARG("image_type", "RGB"), LADLE_CHOICES("RGB", "BGR", "YCbCr", "GRAY", "ANY_DATA"),
        .doc = "The colour format the channel count is for: 3 channels for RGB, BGR and YCbCr, 1 for GRAY, the "
               "file's own for ANY_DATA (CMYK counts 3, as ladle decodes it to RGB; alpha counts)."},
};

typedef struct sample_state {
  int64_t hwc[3];
} sample_state;

static ladle_status peek_init(ladle__node *n) {
  if (ladle_dtype_size(n->in[0].dtype) != 1 || n->in[0].ndim != 1)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "the input must be encoded bytes (uint8, 1-D)");
  n->out[0] = (ladle__out_desc){(ladle_dtype)ladle__arg_int(n, NULL, ARG_DTYPE), 1, ""};
  return LADLE_OK;
}

static ladle_status peek_setup(ladle__node *n, ladle__sample *s) {
  sample_state *ss = s->state;
  ladle__tensor in = ladle__input(n, s, 0);
  ladle__image_info info;
  ladle_status st = ladle__image_probe(in.data, (size_t)in.shape[0], s->name ? s->name : "(unnamed)", &info);
  if (st != LADLE_OK) return st;
  int oriented = (int)ladle__arg_int(n, NULL, ARG_ADJUST_ORIENTATION);
  static const int channels_of[] = {3, 3, 3, 1, 0}; /* the order of the choices; 0: the file's */
  int channels = channels_of[ladle__arg_choice(n, ARG_IMAGE_TYPE)];
  if (!channels) channels = info.components == 4 && info.format == LADLE__IMAGE_JPEG ? 3 : info.components;
  ss->hwc[0] = oriented ? info.height : info.stored_height;
  ss->hwc[1] = oriented ? info.width : info.stored_width;
  ss->hwc[2] = channels;
  int64_t shape[1] = {3};
  ladle__set_shape(n, s, 0, shape);
  return LADLE_OK;
}

static ladle_status peek_run(ladle__node *n, ladle__sample *s) {
  const sample_state *ss = s->state;
  ladle__tensor out = ladle__output(n, s, 0);
  for (int k = 0; k < 3; k++) ladle__store_i64(out.data, (size_t)k, out.dtype, ss->hwc[k]);
  return LADLE_OK;
}

const ladle__op_def ladle__op_peek_image_shape = {
    .schema = {.name = "peek_image_shape",
               .doc = "The shape [height, width, channels] an encoded JPEG or PNG would have after decoding, read "
                      "from its header without decoding it.",
               .min_inputs = 1, .max_inputs = 1, .num_outputs = 1,
               .devices = LADLE_ON_CPU,
               .num_args = ARG_COUNT, .args = peek_args},
    .sample_state_size = sizeof(sample_state),
    .init = peek_init,
    .setup = peek_setup,
    .run = peek_run,
};
