/* paste: an image on a larger canvas of fill_value (SSD's zoom-out), as
 * DALI's paste: canvas = trunc(ratio * size) (at least min_canvas_size), the
 * image at trunc(paste_x * (canvas_w - w)), trunc(paste_y * (canvas_h - h)). */
#include <stdlib.h>
#include <string.h>

#include "ops/geometry/warp_kernel.h"
#include "ops/op.h"

enum { ARG_RATIO, ARG_PASTE_X, ARG_PASTE_Y, ARG_MIN_CANVAS, ARG_FILL_VALUE, ARG_N_CHANNELS, ARG_COUNT };
static const ladle_arg_schema paste_args[ARG_COUNT] = {
    [ARG_RATIO] = {LADLE_REQUIRED_ARG("ratio", LADLE_ARG_FLOAT), .per_sample = 1, LADLE_RANGE(1.0, 1e6),
        .doc = "Canvas size / image size (>= 1), per sample allowed."},
    [ARG_PASTE_X] = {LADLE_FLOAT_ARG("paste_x", 0.5), .per_sample = 1, LADLE_RANGE(0.0, 1.0),
        .doc = "Horizontal position: the image starts at trunc(paste_x * (canvas width - width))."},
    [ARG_PASTE_Y] = {LADLE_FLOAT_ARG("paste_y", 0.5), .per_sample = 1, LADLE_RANGE(0.0, 1.0),
        .doc = "Vertical position: the image starts at trunc(paste_y * (canvas height - height))."},
    [ARG_MIN_CANVAS] = {LADLE_FLOAT_ARG("min_canvas_size", 0), .per_sample = 1, LADLE_RANGE(0.0, 1e9),
        .doc = "Least canvas height and width (truncated) after the ratio."},
    [ARG_FILL_VALUE] = {LADLE_REQUIRED_ARG("fill_value", LADLE_ARG_INTS), LADLE_RANGE(0, 255),
        .doc = "The canvas colour, one value per channel (n_channels values)."},
    [ARG_N_CHANNELS] = {LADLE_INT_ARG("n_channels", 3), LADLE_RANGE(1, 4),
        .doc = "Channels of the images (1 to 4 here): the length of fill_value."},
};

typedef struct paste_state {
  uint8_t fill[4];
  int channels;
} paste_state;

static void paste_fini(ladle__node *n) { free(n->state); }

static ladle_status paste_init(ladle__node *n) {
  if (n->in[0].ndim != 3 || n->in[0].dtype != LADLE_UINT8)
    return LADLE_OP_FAIL(n, LADLE_ERROR_UNSUPPORTED, "the input must be uint8 HWC images, got %s of %d dimensions",
                         ladle_dtype_name(n->in[0].dtype), n->in[0].ndim);
  if (n->in[0].layout[0] && strcmp(n->in[0].layout, "HWC") != 0)
    return LADLE_OP_FAIL(n, LADLE_ERROR_UNSUPPORTED, "the input layout must be HWC, got \"%s\"", n->in[0].layout);
  const ladle_value *fill = ladle__arg_value(n, ARG_FILL_VALUE);
  int channels = (int)ladle__arg_int(n, NULL, ARG_N_CHANNELS);
  if (fill->count != channels)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT,
                         "argument 'fill_value' has %d values; it must have n_channels (%d)", fill->count, channels);
  paste_state *p = calloc(1, sizeof *p);
  if (!p) return LADLE_OP_FAIL(n, LADLE_ERROR_OUT_OF_MEMORY, "out of memory");
  n->state = p;
  p->channels = channels;
  for (int c = 0; c < channels; c++) p->fill[c] = (uint8_t)fill->u.ints[c];
  n->out[0] = (ladle__out_desc){LADLE_UINT8, 3, "HWC"};
  return LADLE_OK;
}

static ladle_status paste_setup(ladle__node *n, ladle__sample *s) {
  const paste_state *ps = n->state;
  ladle__paste_params *p = s->state;
  ladle__tensor in = ladle__input(n, s, 0);
  int h = (int)in.shape[0], w = (int)in.shape[1], c = (int)in.shape[2];
  if (c != ps->channels)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "an image has %d channels; n_channels is %d", c,
                         ps->channels);
  /* float arithmetic and truncation, as DALI's */
  float ratio = (float)ladle__arg_float(n, s, ARG_RATIO), min_canvas = (float)ladle__arg_float(n, s, ARG_MIN_CANVAS);
  int out_h = (int)(ratio * (float)h), out_w = (int)(ratio * (float)w), least = (int)min_canvas;
  if (out_h < least) out_h = least;
  if (out_w < least) out_w = least;
  *p = (ladle__paste_params){.in_h = h, .in_w = w, .out_h = out_h, .out_w = out_w, .channels = c};
  p->x0 = (int)((float)ladle__arg_float(n, s, ARG_PASTE_X) * (float)(out_w - w));
  p->y0 = (int)((float)ladle__arg_float(n, s, ARG_PASTE_Y) * (float)(out_h - h));
  memcpy(p->fill, ps->fill, sizeof p->fill);
  int64_t shape[3] = {out_h, out_w, c};
  ladle__set_shape(n, s, 0, shape);
  return LADLE_OK;
}

static ladle_status paste_run(ladle__node *n, ladle__sample *s) {
  ladle__tensor in = ladle__input(n, s, 0), out = ladle__output(n, s, 0);
  ladle__paste(out.data, in.data, s->state);
  return LADLE_OK;
}

#ifdef LADLE_HAVE_CUDA
static ladle_status paste_run_batch(ladle__node *n, ladle__gpu *g) {
  int batch = n->config->batch_size;
  ladle__gpu_paste_desc *d = NULL;
  ladle_status st = ladle__scratch(n, &(ladle__sample){.worker = 0}, sizeof *d * (size_t)batch, (void **)&d);
  for (int i = 0; st == LADLE_OK && i < batch; i++) {
    const ladle__paste_params *p =
        (const ladle__paste_params *)(n->sample_states + (size_t)i * sizeof(ladle__paste_params));
    d[i] = (ladle__gpu_paste_desc){ladle_batch_data(n->in_batches[0], i), ladle_batch_data(n->out_batches[0], i), *p};
  }
  void *host = NULL, *dev = NULL;
  size_t bytes = ladle__gpu_paste_param_bytes(batch);
  if (st == LADLE_OK) st = ladle__gpu_params(g, bytes, &host, &dev);
  return st == LADLE_OK ? ladle__gpu_paste(d, batch, host, dev, bytes, g->stream) : st;
}
#define PASTE_RUN_BATCH paste_run_batch
#else
#define PASTE_RUN_BATCH NULL
#endif

const ladle__op_def ladle__op_paste = {
    .schema = {.name = "paste",
               .doc = "Pastes uint8 HWC images on a canvas ratio times larger, filled with fill_value, at "
                      "paste_x/paste_y (SSD's zoom-out), as DALI's paste.",
               .min_inputs = 1, .max_inputs = 1, .num_outputs = 1,
               .devices = LADLE_ON_CPU_GPU,
               .num_args = ARG_COUNT, .args = paste_args},
    .sample_state_size = sizeof(ladle__paste_params),
    .init = paste_init,
    .fini = paste_fini,
    .setup = paste_setup,
    .run = paste_run,
    .run_batch = PASTE_RUN_BATCH,
};
