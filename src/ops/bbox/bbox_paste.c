/* bbox_paste: the boxes of an image pasted on a canvas `ratio` times larger
 * (paste's boxes, SSD's zoom-out): x' = x * (1 / ratio) + paste_x * ((ratio
 * - 1) / ratio), sizes (xywh) x (1 / ratio), in float as DALI computes them. */
#include "core/no_fma.h" /* x * scale + offset rounded twice, as DALI */

#include "ops/bbox/bbox_common.h"

enum { ARG_RATIO, ARG_LTRB, ARG_PASTE_X, ARG_PASTE_Y, NUM_ARGS };

static const ladle_arg_schema bbox_paste_args[] = {
    [ARG_RATIO] = {LADLE_REQUIRED_ARG("ratio", LADLE_ARG_FLOAT), .per_sample = 1, LADLE_RANGE(1.0, 1e9),
                   .doc = "Canvas size / image size; at least 1."},
    [ARG_LTRB] = {LADLE_BOOL_ARG("ltrb", 0), .doc = "True: boxes are [l, t, r, b]; False: [x, y, w, h]."},
    [ARG_PASTE_X] = {LADLE_FLOAT_ARG("paste_x", 0.5), .per_sample = 1, LADLE_RANGE(0.0, 1.0),
                     .doc = "Horizontal position of the image on the canvas: 0 left, 1 right."},
    [ARG_PASTE_Y] = {LADLE_FLOAT_ARG("paste_y", 0.5), .per_sample = 1, LADLE_RANGE(0.0, 1.0),
                     .doc = "Vertical position of the image on the canvas: 0 top, 1 bottom."},
};

static ladle_status bbox_paste_init(ladle__node *n) {
  n->out[0] = n->in[0];
  return ladle__bbox_input_init(n, 0, "boxes [N, 4]");
}

static ladle_status bbox_paste_setup(ladle__node *n, ladle__sample *s) {
  ladle_status st = ladle__bbox_check(n, s, 0, (int)ladle__arg_int(n, NULL, ARG_LTRB));
  if (st == LADLE_OK) ladle__set_shape(n, s, 0, ladle__input(n, s, 0).shape);
  return st;
}

static ladle_status bbox_paste_run(ladle__node *n, ladle__sample *s) {
  ladle__tensor in = ladle__input(n, s, 0), out = ladle__output(n, s, 0);
  float ratio = (float)ladle__arg_float(n, s, ARG_RATIO), scale = 1.0f / ratio, grow = (ratio - 1.0f) / ratio;
  float ox = (float)ladle__arg_float(n, s, ARG_PASTE_X) * grow, oy = (float)ladle__arg_float(n, s, ARG_PASTE_Y) * grow;
  int ltrb = (int)ladle__arg_int(n, NULL, ARG_LTRB);
  const float *b = in.data;
  float *o = out.data;
  for (int64_t i = 0; i < in.shape[0]; i++, b += 4, o += 4) {
    o[0] = b[0] * scale + ox;
    o[1] = b[1] * scale + oy;
    o[2] = ltrb ? b[2] * scale + ox : b[2] * scale;
    o[3] = ltrb ? b[3] * scale + oy : b[3] * scale;
  }
  return LADLE_OK;
}

const ladle__op_def ladle__op_bbox_paste = {
    .schema = {.name = "bbox_paste",
               .doc = "Moves normalized boxes, [N, 4] float32 per sample (N may be 0), to where they land when "
                      "their image is pasted on a canvas `ratio` times larger at (paste_x, paste_y) (fn.paste): "
                      "x' = x / ratio + paste_x (ratio - 1) / ratio; w' = w / ratio.",
               .min_inputs = 1, .max_inputs = 1, .num_outputs = 1,
               .devices = LADLE_ON_CPU,
               .num_args = NUM_ARGS, .args = bbox_paste_args},
    .init = bbox_paste_init,
    .setup = bbox_paste_setup,
    .run = bbox_paste_run,
};
