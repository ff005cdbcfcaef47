/* bbox_rotate: boxes of an image rotated by fn.rotate, as DALI's BBoxRotate
 * computes them (in float): the four corners about the image centre,
 * rotated (y down), moved to the output canvas' centre, their bounding box
 * ("expand"; "fixed" and "halfway" shrink it back toward the original size),
 * clipped to the canvas; boxes left with less than remove_threshold of their
 * area are dropped with their labels. Every box is independent: setup counts
 * the kept ones, run writes them. */
#include "core/no_fma.h" /* each product and sum rounded, as DALI's */

#include <math.h>
#include <string.h>

#include "ops/bbox/bbox_common.h"
#include "ops/geometry/geom_args.h"

enum {
  ARG_ANGLE, ARG_INPUT_SHAPE, ARG_SHAPE_LAYOUT, ARG_BBOX_LAYOUT, ARG_NORMALIZED, ARG_KEEP_SIZE, ARG_SIZE, ARG_MODE,
  ARG_REMOVE, NUM_ARGS
};

static const ladle_arg_schema bbox_rotate_args[] = {
    [ARG_ANGLE] = {LADLE_REQUIRED_ARG("angle", LADLE_ARG_FLOAT), .per_sample = 1,
                   .doc = "The rotation in degrees (fn.rotate's angle: counter-clockwise on the screen)."},
    [ARG_INPUT_SHAPE] = {LADLE_REQUIRED_ARG("input_shape", LADLE_ARG_INTS), .per_sample = 1,
                         .doc = "The image's shape, in shape_layout order (e.g. an image's shape, HWC)."},
    [ARG_SHAPE_LAYOUT] = {LADLE_STRING_ARG("shape_layout", "HW"),
                          .doc = "Where H and W are in input_shape (other letters are skipped: \"HWC\")."},
    [ARG_BBOX_LAYOUT] = {LADLE_STRING_ARG("bbox_layout", "xyXY"), LADLE_CHOICES("xyXY", "xyWH"),
                         .doc = "The boxes: \"xyXY\" (ltrb) or \"xyWH\"."},
    [ARG_NORMALIZED] = {LADLE_BOOL_ARG("bbox_normalized", 1),
                        .doc = "True: coordinates relative to the image ([0, 1]); False: pixels."},
    [ARG_KEEP_SIZE] = {LADLE_BOOL_ARG("keep_size", 0),
                       .doc = "True: the canvas keeps the input's size (fn.rotate's keep_size); not with size."},
    [ARG_SIZE] = {LADLE_OPTIONAL_ARG("size", LADLE_ARG_FLOATS), .per_sample = 1,
                  .doc = "fn.rotate's output size [H, W] (floored). Neither this nor keep_size: the canvas that "
                         "holds the rotated image, as fn.rotate makes it."},
    [ARG_MODE] = {LADLE_STRING_ARG("mode", "expand"), LADLE_CHOICES("expand", "fixed", "halfway"),
                  .doc = "\"expand\": the rotated box's bounding box; \"fixed\": shrunk back to the original size "
                         "(sides swapped when the rotation swaps them); \"halfway\": half of that shrinking."},
    [ARG_REMOVE] = {LADLE_FLOAT_ARG("remove_threshold", 0.1), LADLE_RANGE(0.0, 1.0),
                    .doc = "Boxes keeping less than this fraction of their area after clipping are removed."},
};

static ladle_status bbox_rotate_init(ladle__node *n) {
  ladle_status st = ladle__bbox_input_init(n, 0, "boxes [N, 4]");
  if (st != LADLE_OK) return st;
  if (n->num_inputs == 2 && (n->in[1].dtype != LADLE_INT32 || n->in[1].ndim < 1 || n->in[1].ndim > 2))
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "input 1 must be int32 labels [N] or [N, 1], got %s of %d "
                         "dimensions", ladle_dtype_name(n->in[1].dtype), n->in[1].ndim);
  const char *l = ladle__arg_string(n, ARG_SHAPE_LAYOUT);
  const char *h = strchr(l, 'H'), *w = strchr(l, 'W');
  if (!h || !w || strchr(h + 1, 'H') || strchr(w + 1, 'W'))
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'shape_layout' is \"%s\": it must name H and W "
                         "once each", l);
  if (ladle__arg_int(n, NULL, ARG_KEEP_SIZE) && ladle__arg_given(n, ARG_SIZE))
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'keep_size' cannot be True with 'size'");
  n->out[0] = n->in[0];
  if (n->num_inputs == 2) n->out[1] = n->in[1];
  return LADLE_OK;
}

/* fn.rotate's canvas (ops/geometry/warp.c's rule, DALI's): the rotated
 * image's bounding box less 0.01 before the ceiling, each side grown by one
 * where its parity differs from the input side that dominates it. */
static void rotated_canvas(int in_h, int in_w, float angle_rad, float *out_w, float *out_h) {
  double c = fabs(cos((double)angle_rad)), s = fabs(sin((double)angle_rad)), eps = 1e-2;
  int w = (int)ceil(c * in_w + s * in_h - eps), h = (int)ceil(c * in_h + s * in_w - eps);
  int parity_w = (s <= c ? in_w : in_h) % 2, parity_h = (s <= c ? in_h : in_w) % 2;
  if (w % 2 != parity_w) w++;
  if (h % 2 != parity_h) h++;
  *out_w = (float)(w < 1 ? 1 : w);
  *out_h = (float)(h < 1 ? 1 : h);
}

typedef struct rotation {
  float cos_a, sin_a;
  float in_w, in_h, out_w, out_h;
  int ltrb, normalized, mode;
  float remove;
} rotation;

static ladle_status sample_rotation(ladle__node *n, ladle__sample *s, rotation *r) {
  double deg = ladle__arg_float(n, s, ARG_ANGLE);
  if (!isfinite(deg)) return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'angle' is not finite");
  float a = (float)deg * (float)(M_PI / 180.0);
  r->cos_a = cosf(a), r->sin_a = sinf(a);
  const char *l = ladle__arg_string(n, ARG_SHAPE_LAYOUT);
  int hi = (int)(strchr(l, 'H') - l), wi = (int)(strchr(l, 'W') - l), need = (hi > wi ? hi : wi) + 1;
  double shape[8];
  int count = ladle__arg_list(n, s, ARG_INPUT_SHAPE, shape, 8);
  if (count < need || count > 8)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'input_shape' has %d values; shape_layout "
                         "\"%s\" needs %d to 8", count, l, need);
  if (!(shape[hi] >= 1 && shape[wi] >= 1))
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'input_shape': H and W must be at least 1");
  r->in_w = (float)shape[wi], r->in_h = (float)shape[hi];
  if (ladle__arg_int(n, NULL, ARG_KEEP_SIZE)) {
    r->out_w = r->in_w, r->out_h = r->in_h;
  } else if (ladle__arg_given(n, ARG_SIZE)) {
    double size[3];
    if (ladle__arg_list(n, s, ARG_SIZE, size, 3) != 2 || !(size[0] >= 1 && size[1] >= 1))
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'size' must be [H, W], each at least 1");
    r->out_w = floorf((float)size[1]), r->out_h = floorf((float)size[0]);
  } else {
    rotated_canvas((int)shape[hi], (int)shape[wi], a, &r->out_w, &r->out_h);
  }
  r->ltrb = ladle__arg_choice(n, ARG_BBOX_LAYOUT) == 0;
  r->normalized = (int)ladle__arg_int(n, NULL, ARG_NORMALIZED);
  r->mode = ladle__arg_choice(n, ARG_MODE);
  r->remove = (float)ladle__arg_float(n, NULL, ARG_REMOVE);
  return LADLE_OK;
}

/* Box b rotated into out (as given: ltrb or xywh, normalized or not);
 * returns whether it stays. */
static int rotate_box(const rotation *r, const float *b, float *out) {
  float l = b[0], t = b[1], rr = r->ltrb ? b[2] : b[0] + b[2], bo = r->ltrb ? b[3] : b[1] + b[3];
  float xs[4] = {l, rr, l, rr}, ys[4] = {t, t, bo, bo};
  for (int k = 0; k < 4; k++) {
    xs[k] = r->normalized ? (xs[k] - 0.5f) * r->in_w : xs[k] - r->in_w / 2;
    ys[k] = r->normalized ? (ys[k] - 0.5f) * r->in_h : ys[k] - r->in_h / 2;
  }
  float old_w = xs[1] - xs[0], old_h = ys[2] - ys[0];
  float x0 = 0, x1 = 0, y0 = 0, y1 = 0;
  for (int k = 0; k < 4; k++) {
    float x = xs[k] * r->cos_a + ys[k] * r->sin_a, y = -xs[k] * r->sin_a + ys[k] * r->cos_a;
    x += r->out_w / 2, y += r->out_h / 2;
    if (k == 0 || x < x0) x0 = x;
    if (k == 0 || x > x1) x1 = x;
    if (k == 0 || y < y0) y0 = y;
    if (k == 0 || y > y1) y1 = y;
  }
  if (r->mode != 0) { /* fixed, halfway: undo (half) the growth */
    float new_w = x1 - x0, new_h = y1 - y0, dw, dh;
    if ((old_w < old_h) ^ (new_w < new_h)) {
      dw = (new_w - old_h) * 0.5f, dh = (new_h - old_w) * 0.5f;
    } else {
      dw = (new_w - old_w) * 0.5f, dh = (new_h - old_h) * 0.5f;
    }
    if (r->mode == 2) dw *= 0.5f, dh *= 0.5f;
    x0 += dw, y0 += dh, x1 -= dw, y1 -= dh;
  }
  float old_area = (x1 - x0) * (y1 - y0);
  x0 = fminf(fmaxf(x0, 0.0f), r->out_w), x1 = fminf(fmaxf(x1, 0.0f), r->out_w);
  y0 = fminf(fmaxf(y0, 0.0f), r->out_h), y1 = fminf(fmaxf(y1, 0.0f), r->out_h);
  float new_area = (x1 - x0) * (y1 - y0);
  if (!(new_area / old_area >= r->remove)) return 0;
  float o[4] = {x0, y0, x1, y1};
  if (!r->ltrb) o[2] -= o[0], o[3] -= o[1];
  if (r->normalized) {
    float rw = 1.f / r->out_w, rh = 1.f / r->out_h;
    o[0] *= rw, o[1] *= rh, o[2] *= rw, o[3] *= rh;
  }
  memcpy(out, o, sizeof o);
  return 1;
}

static ladle_status bbox_rotate_setup(ladle__node *n, ladle__sample *s) {
  int ltrb = ladle__arg_choice(n, ARG_BBOX_LAYOUT) == 0;
  ladle_status st = ladle__bbox_check(n, s, 0, ltrb);
  rotation r;
  if (st == LADLE_OK) st = sample_rotation(n, s, &r);
  if (st != LADLE_OK) return st;
  ladle__tensor in = ladle__input(n, s, 0);
  if (n->num_inputs == 2) {
    ladle__tensor labels = ladle__input(n, s, 1);
    if (labels.shape[0] != in.shape[0] || (labels.ndim == 2 && labels.shape[1] != 1))
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "input 1 (labels) must be [%lld] or [%lld, 1]",
                           (long long)in.shape[0], (long long)in.shape[0]);
  }
  int64_t kept = 0;
  float tmp[4];
  const float *b = in.data;
  for (int64_t i = 0; i < in.shape[0]; i++) kept += rotate_box(&r, b + 4 * i, tmp);
  int64_t shape[2] = {kept, 4};
  ladle__set_shape(n, s, 0, shape);
  if (n->num_inputs == 2) {
    shape[1] = 1;
    ladle__set_shape(n, s, 1, shape);
  }
  return LADLE_OK;
}

static ladle_status bbox_rotate_run(ladle__node *n, ladle__sample *s) {
  rotation r;
  ladle_status st = sample_rotation(n, s, &r);
  if (st != LADLE_OK) return st;
  ladle__tensor in = ladle__input(n, s, 0);
  float *o = ladle__output(n, s, 0).data;
  const int32_t *labels = n->num_inputs == 2 ? ladle__input(n, s, 1).data : NULL;
  int32_t *out_labels = n->num_inputs == 2 ? ladle__output(n, s, 1).data : NULL;
  const float *b = in.data;
  int64_t kept = 0;
  for (int64_t i = 0; i < in.shape[0]; i++)
    if (rotate_box(&r, b + 4 * i, o + 4 * kept)) {
      if (labels) out_labels[kept] = labels[i];
      kept++;
    }
  return LADLE_OK;
}

const ladle__op_def ladle__op_bbox_rotate = {
    .schema = {.name = "bbox_rotate",
               .doc = "Moves boxes ([N, 4] float32, N may be 0; labels as an optional int32 [N] or [N, 1] input, "
                      "kept in step) to where they land when their image is rotated by fn.rotate with the same "
                      "angle, keep_size and size. Rotate the boxes before the image: input_shape is the image's "
                      "shape before rotation.",
               .min_inputs = 1, .max_inputs = 2, .num_outputs = 1,
               .devices = LADLE_ON_CPU,
               .num_args = NUM_ARGS, .args = bbox_rotate_args,
               .outputs_per_extra_input = 1},
    .init = bbox_rotate_init,
    .setup = bbox_rotate_setup,
    .run = bbox_rotate_run,
};
