/* warp_affine and rotate: affine warps of HWC images (uint8, int16, int32 or float32) with
 * DALI's mapping, pixel centres, borders and rounding (warp_kernel.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/geometry/geom_args.h"
#include "ops/geometry/warp_kernel.h"
#include "ops/op.h"

/* The arguments both operators share (DALI's WarpAttr), then their own. */
enum { ARG_SIZE, ARG_FILL_VALUE, ARG_INTERP_TYPE, ARG_DTYPE, ARG_COMMON_COUNT };
enum { ARG_MATRIX = ARG_COMMON_COUNT, ARG_INVERSE_MAP, ARG_WARP_COUNT };
enum { ARG_ANGLE = ARG_COMMON_COUNT, ARG_KEEP_SIZE, ARG_ROTATE_COUNT };

#define WARP_COMMON_ARGS \
  [ARG_SIZE] = {LADLE_OPTIONAL_ARG("size", LADLE_ARG_FLOATS), .per_sample = 1, \
      .doc = "Output size [height, width] in pixels (rounded to nearest, at least 1); per sample allowed. " \
             "Default: see the operator."}, \
  [ARG_FILL_VALUE] = {LADLE_OPTIONAL_ARG("fill_value", LADLE_ARG_FLOAT), \
      .doc = "Value (converted to the output type) of the areas that map outside the input. Not given: " \
             "the source coordinates are clamped, repeating the border pixels."}, \
  [ARG_INTERP_TYPE] = {LADLE_STRING_ARG("interp_type", "LINEAR"), LADLE_CHOICES("NN", "LINEAR"), \
      .doc = "\"NN\" or \"LINEAR\" (an \"INTERP_\" prefix is accepted); DALI's warps have no other filter."}, \
  [ARG_DTYPE] = {LADLE_OPTIONAL_ARG("dtype", LADLE_ARG_DTYPE), .deprecated_name = "output_dtype", \
      .doc = "Output type, UINT8 (rounded half away from zero, saturated) or FLOAT. Default: the input's."}

static const ladle_arg_schema warp_args[ARG_WARP_COUNT] = {
    WARP_COMMON_ARGS,
    [ARG_MATRIX] = {LADLE_OPTIONAL_ARG("matrix", LADLE_ARG_FLOATS), .per_sample = 1,
        .doc = "The 2x3 matrix (M11, M12, M13, M21, M22, M23), per sample allowed (e.g. a transforms.* "
               "output), or give it as the second input. With inverse_map (default) it maps destination to "
               "source: dst(x, y) = src(M11 x + M12 y + M13, M21 x + M22 y + M23), (0, 0) the corner of the "
               "first pixel."},
    [ARG_INVERSE_MAP] = {LADLE_BOOL_ARG("inverse_map", 1),
        .doc = "True: the matrix maps destination to source; False: it maps source to destination (and is "
               "inverted)."},
};

static const ladle_arg_schema rotate_args[ARG_ROTATE_COUNT] = {
    WARP_COMMON_ARGS,
    [ARG_ANGLE] = {LADLE_REQUIRED_ARG("angle", LADLE_ARG_FLOAT), .per_sample = 1,
        .doc = "Angle in degrees, counter-clockwise as the image is shown (top-left corner at (0, 0)); per "
               "sample allowed (e.g. fn.random.uniform(range=[-10, 10]))."},
    [ARG_KEEP_SIZE] = {LADLE_BOOL_ARG("keep_size", 0),
        .doc = "True: the output has the input's size. False (and no size): the smallest canvas that holds "
               "the rotated image, its width and height of the input's parity (DALI's rule)."},
};

typedef struct warp_state {
  int out_type, in_type, linear, use_fill;
  double fill;
  int matrix_input; /* warp_affine: the matrix is input 1 */
} warp_state;

static void state_fini(ladle__node *n) { free(n->state); }

/* The kernel's element type of a dtype, or -1 (warp_kernel.h). */
static int warp_type(ladle_dtype t) {
  return t == LADLE_UINT8 ? LADLE__WARP_U8 : t == LADLE_FLOAT32 ? LADLE__WARP_F32 : t == LADLE_INT32 ? LADLE__WARP_I32
         : t == LADLE_INT16 ? LADLE__WARP_I16 : -1;
}

static ladle_status warp_common_init(ladle__node *n) {
  const ladle__out_desc *in = &n->in[0];
  if (in->ndim != 3)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "the input must be HWC images (3 dimensions), got %d",
                         in->ndim);
  if (in->layout[0] && strcmp(in->layout, "HWC") != 0)
    return LADLE_OP_FAIL(n, LADLE_ERROR_UNSUPPORTED, "the input layout must be HWC, got \"%s\"", in->layout);
  if (warp_type(in->dtype) < 0)
    return LADLE_OP_FAIL(n, LADLE_ERROR_UNSUPPORTED, "the input must be uint8, int16, int32 or float32 images, got %s",
                         ladle_dtype_name(in->dtype));
  ladle_dtype out = in->dtype;
  if (ladle__arg_given(n, ARG_DTYPE)) out = (ladle_dtype)ladle__arg_int(n, NULL, ARG_DTYPE);
  if (warp_type(out) < 0)
    return LADLE_OP_FAIL(n, LADLE_ERROR_UNSUPPORTED,
                         "argument 'dtype': %s output is not supported (UINT8, INT16, INT32 or FLOAT)",
                         ladle_dtype_name(out));
  if (ladle__arg_given(n, ARG_SIZE) && n->args[ARG_SIZE].source < 0) {
    const ladle_value *v = ladle__arg_value(n, ARG_SIZE);
    if (v->count != 2)
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'size' must be [height, width], got %d values",
                           v->count);
    for (int k = 0; k < 2; k++)
      if (!(v->u.floats[k] > 0) || v->u.floats[k] > 1e9)
        return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'size' must be positive, got %g",
                             v->u.floats[k]);
  }
  warp_state *w = calloc(1, sizeof *w);
  if (!w) return LADLE_OP_FAIL(n, LADLE_ERROR_OUT_OF_MEMORY, "out of memory");
  n->state = w;
  w->in_type = warp_type(in->dtype);
  w->out_type = warp_type(out);
  w->linear = ladle__arg_choice(n, ARG_INTERP_TYPE) == 1;
  w->use_fill = ladle__arg_given(n, ARG_FILL_VALUE);
  w->fill = w->use_fill ? ladle__arg_float(n, NULL, ARG_FILL_VALUE) : 0;
  n->out[0] = (ladle__out_desc){out, 3, "HWC"};
  return LADLE_OK;
}

/* The output size from 'size' ([h, w], rounded), or 0 when it was not given. */
static ladle_status explicit_size(ladle__node *n, ladle__sample *s, int *h, int *w) {
  *h = *w = 0;
  if (!ladle__arg_given(n, ARG_SIZE)) return LADLE_OK;
  double v[2];
  int count = ladle__arg_list(n, s, ARG_SIZE, v, 2);
  if (count != 2)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'size' must be [height, width], got %d values",
                         count);
  for (int k = 0; k < 2; k++)
    if (!(v[k] > 0) || v[k] > 1e9)
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'size' must be positive, got %g", v[k]);
  float fh = roundf((float)v[0]), fw = roundf((float)v[1]);
  *h = fh < 1 ? 1 : (int)fh;
  *w = fw < 1 ? 1 : (int)fw;
  return LADLE_OK;
}

/* Fills the sample's parameters but the matrix, and sets the output shape. */
static void sample_common(ladle__node *n, ladle__sample *s, ladle__warp_params *p, int out_h, int out_w) {
  const warp_state *w = n->state;
  ladle__tensor in = ladle__input(n, s, 0);
  p->in_h = (int)in.shape[0];
  p->in_w = (int)in.shape[1];
  p->channels = (int)in.shape[2];
  p->out_h = out_h;
  p->out_w = out_w;
  p->in_type = w->in_type;
  p->out_type = w->out_type;
  p->linear = w->linear;
  p->use_fill = w->use_fill;
  ladle__warp_fill(p, w->fill);
  int64_t shape[3] = {out_h, out_w, in.shape[2]};
  ladle__set_shape(n, s, 0, shape);
}

static ladle_status warp_init(ladle__node *n) {
  ladle_status st = warp_common_init(n);
  if (st != LADLE_OK) return st;
  warp_state *w = n->state;
  w->matrix_input = n->num_inputs == 2;
  if (w->matrix_input == ladle__arg_given(n, ARG_MATRIX))
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT,
                         w->matrix_input ? "give the matrix as the second input or as argument 'matrix', not both"
                                         : "give argument 'matrix' or the matrix as the second input");
  if (w->matrix_input) {
    if (n->device != LADLE_ON_CPU)
      return LADLE_OP_FAIL(n, LADLE_ERROR_UNSUPPORTED,
                           "on the GPU the matrix is given as argument 'matrix' (a per-sample node of the CPU, "
                           "e.g. a transforms.* output), not as an input");
    if (n->in[1].dtype != LADLE_FLOAT32 || n->in[1].ndim < 1 || n->in[1].ndim > 2)
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT,
                           "the matrix input must be float32 2x3 matrices (or 6 values), got %s of %d dimensions",
                           ladle_dtype_name(n->in[1].dtype), n->in[1].ndim);
  } else if (n->args[ARG_MATRIX].source < 0 && ladle__arg_value(n, ARG_MATRIX)->count != 6) {
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT,
                         "argument 'matrix' must have 6 values (a 2x3 matrix), got %d",
                         ladle__arg_value(n, ARG_MATRIX)->count);
  }
  return LADLE_OK;
}

static ladle_status warp_setup(ladle__node *n, ladle__sample *s) {
  const warp_state *w = n->state;
  ladle__warp_params *p = s->state;
  ladle__tensor in = ladle__input(n, s, 0);
  double m[6];
  int count = w->matrix_input ? ladle__input_list(n, s, 1, m, 6) : ladle__arg_list(n, s, ARG_MATRIX, m, 6);
  if (count != 6)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "the matrix must have 6 values (a 2x3 matrix), got %d",
                         count);
  for (int k = 0; k < 6; k++)
    if (!isfinite(m[k]))
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "the matrix has a value that is not finite");
  int h, wd;
  ladle_status st = explicit_size(n, s, &h, &wd);
  if (st != LADLE_OK) return st;
  if (!h) h = (int)in.shape[0], wd = (int)in.shape[1];
  sample_common(n, s, p, h, wd);
  if (ladle__arg_int(n, NULL, ARG_INVERSE_MAP)) {
    for (int k = 0; k < 6; k++) p->m[k] = (float)m[k];
  } else if (ladle__affine_invert(p->m, m) != 0) {
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT,
                         "the matrix is singular: with inverse_map=False it must be invertible");
  }
  return LADLE_OK;
}

static ladle_status rotate_init(ladle__node *n) { return warp_common_init(n); }

/* DALI's canvas for a rotated image: the bounding box (less 0.01 before the
 * ceiling), then grown by one where its parity differs from the input side
 * that dominates it. */
static void rotated_canvas(int in_h, int in_w, double angle_rad, int *out_h, int *out_w) {
  double c = fabs(cos(angle_rad)), s = fabs(sin(angle_rad)), eps = 1e-2;
  int w = (int)ceil(c * in_w + s * in_h - eps), h = (int)ceil(c * in_h + s * in_w - eps);
  int parity_w = (s <= c ? in_w : in_h) % 2, parity_h = (s <= c ? in_h : in_w) % 2;
  if (w % 2 != parity_w) w++;
  if (h % 2 != parity_h) h++;
  *out_w = w < 1 ? 1 : w;
  *out_h = h < 1 ? 1 : h;
}

static ladle_status rotate_setup(ladle__node *n, ladle__sample *s) {
  ladle__warp_params *p = s->state;
  ladle__tensor in = ladle__input(n, s, 0);
  int in_h = (int)in.shape[0], in_w = (int)in.shape[1];
  double deg = ladle__arg_float(n, s, ARG_ANGLE);
  if (!isfinite(deg)) return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'angle' is not finite");
  float a = (float)deg * (float)(M_PI / 180.0);
  int h, w;
  ladle_status st = explicit_size(n, s, &h, &w);
  if (st != LADLE_OK) return st;
  if (!h && ladle__arg_int(n, NULL, ARG_KEEP_SIZE)) h = in_h, w = in_w;
  if (!h) rotated_canvas(in_h, in_w, (double)a, &h, &w);
  sample_common(n, s, p, h, w);
  /* Destination to source, in float as DALI composes it: translate the
   * output's centre to 0, rotate by the angle (y down), translate to the
   * input's centre. */
  float c = cosf(a), sn = sinf(a), ow = (float)w * 0.5f, oh = (float)h * 0.5f;
  p->m[0] = c, p->m[1] = -sn, p->m[3] = sn, p->m[4] = c;
  p->m[2] = (c * -ow + -sn * -oh) + (float)in_w * 0.5f;
  p->m[5] = (sn * -ow + c * -oh) + (float)in_h * 0.5f;
  return LADLE_OK;
}

static ladle_status warp_run(ladle__node *n, ladle__sample *s) {
  ladle__tensor in = ladle__input(n, s, 0), out = ladle__output(n, s, 0);
  ladle__warp_affine(out.data, in.data, s->state);
  return LADLE_OK;
}

#ifdef LADLE_HAVE_CUDA
static ladle_status warp_run_batch(ladle__node *n, ladle__gpu *g) {
  int batch = n->config->batch_size;
  ladle__gpu_warp_desc *d = NULL;
  ladle_status st = ladle__scratch(n, &(ladle__sample){.worker = 0}, sizeof *d * (size_t)batch, (void **)&d);
  for (int i = 0; st == LADLE_OK && i < batch; i++) {
    const ladle__warp_params *p =
        (const ladle__warp_params *)(n->sample_states + (size_t)i * sizeof(ladle__warp_params));
    d[i] = (ladle__gpu_warp_desc){ladle_batch_data(n->in_batches[0], i), ladle_batch_data(n->out_batches[0], i), *p};
  }
  void *host = NULL, *dev = NULL;
  size_t bytes = ladle__gpu_warp_param_bytes(batch);
  if (st == LADLE_OK) st = ladle__gpu_params(g, bytes, &host, &dev);
  return st == LADLE_OK ? ladle__gpu_warp_affine(d, batch, host, dev, bytes, g->stream) : st;
}
#define WARP_RUN_BATCH warp_run_batch
#else
#define WARP_RUN_BATCH NULL
#endif

const ladle__op_def ladle__op_warp_affine = {
    .schema = {.name = "warp_affine",
               .doc = "Applies an affine transform (matrix, per sample allowed, or a second input) to HWC images, "
                      "sampling with NN or bilinear interpolation at pixel centres, as DALI's warp_affine.",
               .min_inputs = 1, .max_inputs = 2, .num_outputs = 1,
               .devices = LADLE_ON_CPU_GPU,
               .num_args = ARG_WARP_COUNT, .args = warp_args},
    .sample_state_size = sizeof(ladle__warp_params),
    .init = warp_init,
    .fini = state_fini,
    .setup = warp_setup,
    .run = warp_run,
    .run_batch = WARP_RUN_BATCH,
};

const ladle__op_def ladle__op_rotate = {
    .schema = {.name = "rotate",
               .doc = "Rotates HWC images by angle degrees (per sample allowed) about their centre, on a canvas "
                      "that fits the result (or keep_size, or size), as DALI's rotate.",
               .min_inputs = 1, .max_inputs = 1, .num_outputs = 1,
               .devices = LADLE_ON_CPU_GPU,
               .num_args = ARG_ROTATE_COUNT, .args = rotate_args},
    .sample_state_size = sizeof(ladle__warp_params),
    .init = rotate_init,
    .fini = state_fini,
    .setup = rotate_setup,
    .run = warp_run,
    .run_batch = WARP_RUN_BATCH,
};
