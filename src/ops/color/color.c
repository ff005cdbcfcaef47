/* The colour operators: brightness, contrast, brightness_contrast, hsv, hue,
 * saturation, color_twist, color_space_conversion (one affine per-pixel
 * transform each, color_kernel.h) and jitter (random pixel displacement).
 * Arguments, defaults and formulas are DALI's. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/color/color_pixel.h"
#include "ops/op.h"

#define IMAGE_TYPES LADLE_CHOICES("RGB", "BGR", "GRAY", "YCbCr")
enum { IT_RGB, IT_BGR, IT_GRAY, IT_YCBCR };

#define DTYPE_ARG(def) \
  .doc = "Output type: UINT8, INT32 (rounded half away from zero, saturated), FLOAT or FLOAT16" def "."
#define ARG_BRIGHTNESS(doc_) {LADLE_FLOAT_ARG("brightness", 1.0), .per_sample = 1, .doc = doc_}
#define ARG_BRIGHTNESS_SHIFT {LADLE_FLOAT_ARG("brightness_shift", 0.0), .per_sample = 1, \
    .doc = "Added, in units of the output type's range (1 for floats, 255 for UINT8, 2^31-1 for INT32)."}
#define ARG_CONTRAST(doc_) {LADLE_FLOAT_ARG("contrast", 1.0), .per_sample = 1, .doc = doc_}
#define ARG_CONTRAST_CENTER {LADLE_OPTIONAL_ARG("contrast_center", LADLE_ARG_FLOAT), .per_sample = 1, \
    .doc = "The level contrast leaves unchanged; default: half the input type's range (128 for UINT8, 0.5 " \
           "for FLOAT)."}
#define ARG_HUE {LADLE_FLOAT_ARG("hue", 0.0), .per_sample = 1, \
    .doc = "Hue rotation in degrees (a rotation of the IQ plane in YIQ space)."}
#define ARG_SATURATION {LADLE_FLOAT_ARG("saturation", 1.0), .per_sample = 1, \
    .doc = "Saturation multiplier (scales I and Q in YIQ space): 0 grey, 1 no change."}
#define ARG_IMAGE_TYPE {LADLE_STRING_ARG("image_type", "RGB"), IMAGE_TYPES, .no_effect = 1, \
    .doc = "Colour space of the input and output. Accepted for DALI scripts; DALI 2.4 applies the RGB " \
           "transform whatever its value (measured), and so does ladle."}
#define ARG_DTYPE {LADLE_OPTIONAL_ARG("dtype", LADLE_ARG_DTYPE), DTYPE_ARG(" (default: the input's type)")}

#define BC_FORMULA \
    "out = brightness_shift * range + brightness * (contrast_center + contrast * (in - contrast_center)), " \
    "range = 1 for float outputs, the type's maximum for integers"

enum { BC_BRIGHTNESS, BC_SHIFT, BC_CONTRAST, BC_CENTER, BC_DTYPE, BC_COUNT };
static const ladle_arg_schema brightness_contrast_args[BC_COUNT] = {
    [BC_BRIGHTNESS] = ARG_BRIGHTNESS("Brightness multiplier."),
    [BC_SHIFT] = ARG_BRIGHTNESS_SHIFT,
    [BC_CONTRAST] = ARG_CONTRAST("Contrast multiplier: 0 gives uniform contrast_center."),
    [BC_CENTER] = ARG_CONTRAST_CENTER,
    [BC_DTYPE] = ARG_DTYPE,
};
static const ladle_arg_schema brightness_args[] = {ARG_BRIGHTNESS("Brightness multiplier."), ARG_BRIGHTNESS_SHIFT,
                                                   ARG_DTYPE};
static const ladle_arg_schema contrast_args[] = {
    ARG_CONTRAST("Contrast multiplier: 0 gives uniform contrast_center."), ARG_CONTRAST_CENTER, ARG_DTYPE};

static const ladle_arg_schema hsv_args[] = {
    ARG_HUE, ARG_SATURATION,
    {LADLE_FLOAT_ARG("value", 1.0), .per_sample = 1, .doc = "Value (brightness) multiplier."},
    {LADLE_DTYPE_ARG("dtype", LADLE_UINT8), DTYPE_ARG(" (UINT8 by default, as in DALI, also for float input)")},
};
static const ladle_arg_schema hue_args[] = {ARG_HUE, ARG_IMAGE_TYPE, ARG_DTYPE};
static const ladle_arg_schema saturation_args[] = {ARG_SATURATION, ARG_IMAGE_TYPE, ARG_DTYPE};
static const ladle_arg_schema color_twist_args[] = {
    ARG_HUE, ARG_SATURATION,
    ARG_BRIGHTNESS("Brightness multiplier (0: black)."),
    ARG_CONTRAST("Contrast multiplier around half the input range (0: uniform grey)."),
    ARG_IMAGE_TYPE, ARG_DTYPE,
};
static const ladle_arg_schema csc_args[] = {
    {LADLE_REQUIRED_ARG("image_type", LADLE_ARG_STRING), IMAGE_TYPES, .doc = "Colour space of the input."},
    {LADLE_REQUIRED_ARG("output_type", LADLE_ARG_STRING), IMAGE_TYPES, .doc = "Colour space of the output."},
};

/* What each operator's arguments are, by name, found once at init. */
typedef enum { K_BC, K_HSV, K_TWIST, K_CSC } color_kind;

typedef struct color_state {
  color_kind kind;
  int a_brightness, a_shift, a_contrast, a_center, a_hue, a_saturation, a_value; /* -1: not an argument */
  ladle__color_params csc;   /* color_space_conversion: constant */
  int in_c, out_c;           /* channels fixed by the op (0: any, as the input) */
} color_state;

static int find_arg(const ladle__node *n, const char *name) {
  for (int i = 0; i < n->def->schema.num_args; i++)
    if (!strcmp(n->def->schema.args[i].name, name)) return i;
  return -1;
}

static double arg_or(const ladle__node *n, const ladle__sample *s, int arg, double dflt) {
  return arg >= 0 ? ladle__arg_float(n, s, arg) : dflt;
}

static void state_fini(ladle__node *n) { free(n->state); }

/* The YIQ matrices DALI's hsv and color_twist use (the inverse exact, as
 * DALI 2.4 has it: a zero hue shift is the identity). */
static const double rgb2yiq[3][3] = {{0.299, 0.587, 0.114}, {0.596, -0.274, -0.321}, {0.211, -0.523, 0.311}};

static void mat_mul(double out[3][3], const double a[3][3], const double b[3][3]) {
  double r[3][3];
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) r[i][j] = a[i][0] * b[0][j] + a[i][1] * b[1][j] + a[i][2] * b[2][j];
  memcpy(out, r, sizeof r);
}

static void mat_inverse(double out[3][3], const double m[3][3]) {
  double det = m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0]) +
               m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]);
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) {
      int r0 = (j + 1) % 3, r1 = (j + 2) % 3, c0 = (i + 1) % 3, c1 = (i + 2) % 3;
      out[i][j] = (m[r0][c0] * m[r1][c1] - m[r0][c1] * m[r1][c0]) / det;
    }
}

/* hsv / color_twist: scale * Yiq2Rgb * Hue * Sat * Rgb2Yiq (+ offset), in
 * double, rounded to float once. */
static void hsv_params(ladle__color_params *p, double hue, double sat, double scale, double offset) {
  double inv[3][3], t[3][3];
  mat_inverse(inv, rgb2yiq);
  double h = hue * M_PI / 180.0, c = cos(h), s = sin(h);
  const double hs[3][3] = {{1, 0, 0}, {0, c * sat, s * sat}, {0, -s * sat, c * sat}};
  mat_mul(t, inv, hs);
  mat_mul(t, t, rgb2yiq);
  memset(p, 0, sizeof *p);
  p->mode = LADLE__COLOR_MATRIX;
  p->in_c = p->out_c = 3;
  for (int i = 0; i < 3; i++) {
    for (int j = 0; j < 3; j++) p->m[i][j] = (float)(scale * t[i][j]);
    p->off[i] = (float)offset;
  }
}

static float type_range(ladle_dtype t) {
  return t == LADLE_UINT8 ? 255.0f : t == LADLE_INT32 ? 2147483647.0f : 1.0f;
}

/* This sample's transform (in_c: the sample's channels). */
static void sample_params(const ladle__node *n, const ladle__sample *s, int in_c, ladle__color_params *p) {
  const color_state *c = n->state;
  ladle_dtype in_t = n->in[0].dtype, out_t = n->out[0].dtype;
  float half = in_t == LADLE_UINT8 ? 128.0f : 0.5f;
  if (c->kind == K_CSC) {
    *p = c->csc;
    return;
  }
  if (c->kind == K_BC) {
    float b = (float)arg_or(n, s, c->a_brightness, 1.0), shift = (float)arg_or(n, s, c->a_shift, 0.0);
    float k = (float)arg_or(n, s, c->a_contrast, 1.0);
    float center = c->a_center >= 0 && ladle__arg_given(n, c->a_center) ? (float)ladle__arg_float(n, s, c->a_center)
                                                                        : half;
    memset(p, 0, sizeof *p);
    p->mode = LADLE__COLOR_SCALE;
    p->in_c = p->out_c = in_c;
    p->mul = b * k;
    p->add = shift * type_range(out_t) + b * (center - k * center);
    return;
  }
  double hue = arg_or(n, s, c->a_hue, 0.0), sat = arg_or(n, s, c->a_saturation, 1.0);
  if (c->kind == K_HSV) {
    hsv_params(p, hue, sat, arg_or(n, s, c->a_value, 1.0), 0.0);
    return;
  }
  double b = arg_or(n, s, c->a_brightness, 1.0), k = arg_or(n, s, c->a_contrast, 1.0);
  hsv_params(p, hue, sat, b * k, (half - half * k) * b);
}

/* color_space_conversion's transform, as DALI 2.4's CPU operator computes it
 * (measured bit-exact on random images): YCbCr is ITU-R BT.601 studio range
 * (Y 16..235, Cb/Cr 16..240) with the exact coefficients; GRAY from RGB is
 * OpenCV's fixed point (9798 R + 19235 G + 3735 B + 2^14) >> 15, which the
 * float sum reproduces exactly (every term and sum is a multiple of 2^-15
 * below 256, and rounding half up is the shift). BGR reverses the channels
 * of the RGB transform. */
static ladle_status csc_params(ladle__node *n, int from, int to, ladle__color_params *p) {
  static const double to_ycc[3][3] = {{65.481 / 255, 128.553 / 255, 24.966 / 255},
                                      {-37.797 / 255, -74.203 / 255, 112.0 / 255},
                                      {112.0 / 255, -93.786 / 255, -18.214 / 255}};
  static const double ycc_off[3] = {16, 128, 128};
  static const double gray[3] = {9798.0 / 32768, 19235.0 / 32768, 3735.0 / 32768};
  const double ky = 255.0 / 219, kc = 255.0 / 224;
  const double from_ycc[3][3] = {{ky, 0, kc * 1.402}, {ky, -kc * 0.344136, -kc * 0.714136}, {ky, kc * 1.772, 0}};
  double m[3][3] = {{0}}, off[3] = {0};
  int rgb_in = from == IT_RGB || from == IT_BGR, rgb_out = to == IT_RGB || to == IT_BGR;
  if (from == to)
    return LADLE_OP_FAIL(n, LADLE_ERROR_UNSUPPORTED,
                         "conversion from %s to %s is not supported (the same colour space)",
                         ladle__arg_string(n, 0), ladle__arg_string(n, 1));
  memset(p, 0, sizeof *p);
  p->mode = LADLE__COLOR_MATRIX;
  p->in_c = from == IT_GRAY ? 1 : 3;
  p->out_c = to == IT_GRAY ? 1 : 3;
  p->rev_in = from == IT_BGR;
  p->rev_out = to == IT_BGR;
  if (rgb_in && rgb_out) { /* RGB <-> BGR: the reversal of one side */
    for (int i = 0; i < 3; i++) m[i][i] = 1;
  } else if (rgb_in) {
    for (int i = 0; i < p->out_c; i++) {
      for (int j = 0; j < 3; j++) m[i][j] = to == IT_GRAY ? gray[j] : to_ycc[i][j];
      off[i] = to == IT_GRAY ? 0 : ycc_off[i];
    }
  } else if (from == IT_YCBCR) { /* rows act on (Y - 16, Cb - 128, Cr - 128) */
    for (int i = 0; i < p->out_c; i++) {
      const double *row = to == IT_GRAY ? (const double[3]){ky, 0, 0} : from_ycc[i];
      for (int j = 0; j < 3; j++) m[i][j] = row[j];
      off[i] = -16 * row[0] - 128 * (row[1] + row[2]);
    }
  } else { /* GRAY */
    for (int i = 0; i < p->out_c; i++) m[i][0] = to == IT_YCBCR ? (i == 0 ? 219.0 / 255 : 0) : 1;
    if (to == IT_YCBCR) off[0] = 16, off[1] = off[2] = 128;
  }
  for (int i = 0; i < 3; i++) {
    for (int j = 0; j < 3; j++) p->m[i][j] = (float)m[i][j];
    p->off[i] = (float)off[i];
  }
  return LADLE_OK;
}

static ladle_status color_init_kind(ladle__node *n, color_kind kind) {
  color_state *c = calloc(1, sizeof *c);
  if (!c) return LADLE_OP_FAIL(n, LADLE_ERROR_OUT_OF_MEMORY, "out of memory");
  n->state = c;
  c->kind = kind;
  c->a_brightness = find_arg(n, "brightness");
  c->a_shift = find_arg(n, "brightness_shift");
  c->a_contrast = find_arg(n, "contrast");
  c->a_center = find_arg(n, "contrast_center");
  c->a_hue = find_arg(n, "hue");
  c->a_saturation = find_arg(n, "saturation");
  c->a_value = find_arg(n, "value");
  ladle_dtype in_t = n->in[0].dtype;
  if (n->in[0].ndim != 3)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "the input must be HWC images (3 dimensions), got %d",
                         n->in[0].ndim);
  if (in_t != LADLE_UINT8 && (in_t != LADLE_FLOAT32 || kind == K_CSC))
    return LADLE_OP_FAIL(n, LADLE_ERROR_UNSUPPORTED, "the input must be %s images, got %s",
                         kind == K_CSC ? "uint8" : "uint8 or float32", ladle_dtype_name(in_t));
  n->out[0] = n->in[0];
  if (!n->out[0].layout[0]) strcpy(n->out[0].layout, "HWC");
  int a_dtype = find_arg(n, "dtype");
  if (a_dtype >= 0 && (ladle__arg_given(n, a_dtype) || n->def->schema.args[a_dtype].default_value.count))
    n->out[0].dtype = (ladle_dtype)ladle__arg_int(n, NULL, a_dtype);
  if (n->out[0].dtype == LADLE_INT64)
    return LADLE_OP_FAIL(n, LADLE_ERROR_UNSUPPORTED, "argument 'dtype': INT64 is not supported here");
  if (kind == K_HSV || kind == K_TWIST) c->in_c = c->out_c = 3;
  if (kind == K_CSC) {
    ladle_status st = csc_params(n, ladle__arg_choice(n, 0), ladle__arg_choice(n, 1), &c->csc);
    if (st != LADLE_OK) return st;
    c->in_c = c->csc.in_c;
    c->out_c = c->csc.out_c;
  }
  return LADLE_OK;
}

static ladle_status bc_init(ladle__node *n) { return color_init_kind(n, K_BC); }
static ladle_status hsv_init(ladle__node *n) { return color_init_kind(n, K_HSV); }
static ladle_status twist_init(ladle__node *n) { return color_init_kind(n, K_TWIST); }
static ladle_status csc_init(ladle__node *n) { return color_init_kind(n, K_CSC); }

static ladle_status color_setup(ladle__node *n, ladle__sample *s) {
  const color_state *c = n->state;
  ladle__tensor in = ladle__input(n, s, 0);
  if (c->in_c && in.shape[2] != c->in_c)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "expects images of %d channel%s, got %lld", c->in_c,
                         c->in_c == 1 ? "" : "s", (long long)in.shape[2]);
  if (in.shape[2] < 1) return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "images with 0 channels");
  int64_t shape[3] = {in.shape[0], in.shape[1], c->out_c ? c->out_c : in.shape[2]};
  ladle__set_shape(n, s, 0, shape);
  return LADLE_OK;
}

static ladle_status color_run(ladle__node *n, ladle__sample *s) {
  ladle__tensor in = ladle__input(n, s, 0), out = ladle__output(n, s, 0);
  ladle__color_params p;
  sample_params(n, s, (int)in.shape[2], &p);
  ladle__color_apply(out.data, out.dtype, in.data, in.dtype, (size_t)(in.shape[0] * in.shape[1]), &p);
  return LADLE_OK;
}

/* --- jitter ---------------------------------------------------------------- */

enum { J_NDEGREE, J_FILL, J_INTERP, J_MASK, J_COUNT };
static const ladle_arg_schema jitter_args[J_COUNT] = {
    [J_NDEGREE] = {LADLE_INT_ARG("nDegree", 2), LADLE_RANGE(1, 1e6),
        .doc = "Each pixel moves by a random whole number of pixels in [-nDegree/2, nDegree - 1 - nDegree/2] "
               "along x and y (DALI's draw)."},
    [J_FILL] = {LADLE_FLOAT_ARG("fill_value", 0.0), LADLE_RANGE(0, 255),
        .doc = "Value of pixels whose source lies outside the image."},
    [J_INTERP] = {LADLE_STRING_ARG("interp_type", "NN"), LADLE_CHOICES("NN"),
        .doc = "Only NN (DALI's jitter supports no other)."},
    [J_MASK] = {LADLE_INT_ARG("mask", 1), .per_sample = 1, LADLE_RANGE(0, 1),
        .doc = "Per sample: 1 applies the jitter, 0 copies the image."},
};

static ladle_status jitter_init(ladle__node *n) {
  if (n->in[0].ndim != 3)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "the input must be HWC images (3 dimensions), got %d",
                         n->in[0].ndim);
  if (n->in[0].dtype != LADLE_UINT8)
    return LADLE_OP_FAIL(n, LADLE_ERROR_UNSUPPORTED, "the input must be uint8 images, got %s",
                         ladle_dtype_name(n->in[0].dtype));
  n->out[0] = n->in[0];
  if (!n->out[0].layout[0]) strcpy(n->out[0].layout, "HWC");
  return LADLE_OK;
}

/* The sample's Philox key, drawn in setup (where the sample's random stream
 * is known) for run and run_batch. */
typedef struct jitter_state {
  uint32_t key[2];
} jitter_state;

static ladle_status jitter_setup(ladle__node *n, ladle__sample *s) {
  ladle__tensor in = ladle__input(n, s, 0);
  if (in.shape[2] < 1 || in.shape[2] > 64)
    return LADLE_OP_FAIL(n, LADLE_ERROR_UNSUPPORTED, "images with %lld channels are not supported (1 to 64)",
                         (long long)in.shape[2]);
  ladle__rng rng;
  ladle__sample_rng(n, s, &rng);
  jitter_state *js = s->state;
  js->key[0] = ladle__rng_u32(&rng);
  js->key[1] = ladle__rng_u32(&rng);
  ladle__set_shape(n, s, 0, in.shape);
  return LADLE_OK;
}

static void jitter_fill(const ladle__node *n, int channels, uint8_t *fill) {
  memset(fill, ladle__color_to_u8((float)ladle__arg_float(n, NULL, J_FILL)), (size_t)channels);
}

static ladle_status jitter_run(ladle__node *n, ladle__sample *s) {
  ladle__tensor in = ladle__input(n, s, 0), out = ladle__output(n, s, 0);
  const jitter_state *js = s->state;
  uint8_t fill[64];
  int channels = (int)in.shape[2];
  jitter_fill(n, channels, fill);
  ladle__jitter(out.data, in.data, (int)in.shape[0], (int)in.shape[1], channels,
                (int)ladle__arg_int(n, NULL, J_NDEGREE), js->key, fill, ladle__arg_int(n, s, J_MASK) != 0);
  return LADLE_OK;
}

#ifdef LADLE_HAVE_CUDA
/* Descriptor arrays live in worker 0's scratch: run_batch runs between
 * parallel passes, when no worker uses it. */
static ladle_status descriptors(ladle__node *n, size_t bytes, void **out) {
  return ladle__scratch(n, &(ladle__sample){.worker = 0}, bytes, out);
}

static ladle_status color_run_batch(ladle__node *n, ladle__gpu *g) {
  int batch = n->config->batch_size;
  ladle__gpu_color_desc *d = NULL;
  ladle_status st = descriptors(n, sizeof *d * (size_t)batch, (void **)&d);
  for (int i = 0; st == LADLE_OK && i < batch; i++) {
    const int64_t *shape = ladle_batch_shape(n->in_batches[0], i);
    ladle__sample s = {.slot = i};
    d[i] = (ladle__gpu_color_desc){ladle_batch_data(n->in_batches[0], i), ladle_batch_data(n->out_batches[0], i),
                                   (size_t)(shape[0] * shape[1]), {0}};
    sample_params(n, &s, (int)shape[2], &d[i].p);
  }
  void *host = NULL, *dev = NULL;
  size_t bytes = ladle__gpu_color_param_bytes(batch);
  if (st == LADLE_OK) st = ladle__gpu_params(g, bytes, &host, &dev);
  return st == LADLE_OK ? ladle__gpu_color(d, batch, n->out[0].dtype, n->in[0].dtype, host, dev, bytes, g->stream)
                        : st;
}

static ladle_status jitter_run_batch(ladle__node *n, ladle__gpu *g) {
  int batch = n->config->batch_size;
  ladle__gpu_jitter_desc *d = NULL;
  ladle_status st = descriptors(n, sizeof *d * (size_t)batch, (void **)&d);
  for (int i = 0; st == LADLE_OK && i < batch; i++) {
    const int64_t *shape = ladle_batch_shape(n->in_batches[0], i);
    ladle__sample s = {.slot = i};
    const jitter_state *js = (const jitter_state *)(n->sample_states + (size_t)i * sizeof(jitter_state));
    memset(&d[i], 0, sizeof d[i]);
    d[i].in = ladle_batch_data(n->in_batches[0], i);
    d[i].out = ladle_batch_data(n->out_batches[0], i);
    d[i].h = (int)shape[0];
    d[i].w = (int)shape[1];
    d[i].pixel_bytes = (int)shape[2];
    d[i].n_degree = (int)ladle__arg_int(n, NULL, J_NDEGREE);
    d[i].mask = ladle__arg_int(n, &s, J_MASK) != 0;
    memcpy(d[i].key, js->key, sizeof d[i].key);
    jitter_fill(n, d[i].pixel_bytes, d[i].fill);
  }
  void *host = NULL, *dev = NULL;
  size_t bytes = ladle__gpu_jitter_param_bytes(batch);
  if (st == LADLE_OK) st = ladle__gpu_params(g, bytes, &host, &dev);
  return st == LADLE_OK ? ladle__gpu_jitter(d, batch, host, dev, bytes, g->stream) : st;
}
#define COLOR_RUN_BATCH color_run_batch
#define JITTER_RUN_BATCH jitter_run_batch
#else
#define COLOR_RUN_BATCH NULL
#define JITTER_RUN_BATCH NULL
#endif

#define COLOR_OP(sym, nm, doc_, args_, init_)                                                                    \
  const ladle__op_def ladle__op_##sym = {                                                                        \
      .schema = {.name = nm, .doc = doc_, .min_inputs = 1, .max_inputs = 1, .num_outputs = 1,                    \
                 .devices = LADLE_ON_CPU_GPU, .num_args = (int)(sizeof args_ / sizeof args_[0]), .args = args_}, \
      .init = init_, .fini = state_fini, .setup = color_setup, .run = color_run, .run_batch = COLOR_RUN_BATCH}

COLOR_OP(brightness, "brightness",
         "Adjusts the brightness of HWC images: out = brightness_shift * range + brightness * in (range: 1 for "
         "float outputs, the type's maximum for integers).",
         brightness_args, bc_init);
COLOR_OP(contrast, "contrast",
         "Adjusts the contrast of HWC images: out = contrast_center + contrast * (in - contrast_center).",
         contrast_args, bc_init);
COLOR_OP(brightness_contrast, "brightness_contrast", "Adjusts brightness and contrast of HWC images: " BC_FORMULA ".",
         brightness_contrast_args, bc_init);
COLOR_OP(hsv, "hsv",
         "Adjusts hue (additive, degrees), saturation and value (multipliers) of RGB HWC images, as DALI does: a "
         "linear transform in YIQ space (rotation of IQ by hue, IQ scaled by saturation, all by value).",
         hsv_args, hsv_init);
COLOR_OP(hue, "hue", "Rotates the hue of RGB (or BGR) HWC images by `hue` degrees (in YIQ space, as DALI).", hue_args,
         twist_init);
COLOR_OP(saturation, "saturation", "Scales the saturation of RGB (or BGR) HWC images (in YIQ space, as DALI).",
         saturation_args, twist_init);
COLOR_OP(color_twist, "color_twist",
         "Adjusts hue, saturation (YIQ space), brightness and contrast (around half the input range) of RGB or BGR "
         "HWC images in one affine transform, as DALI.",
         color_twist_args, twist_init);
COLOR_OP(color_space_conversion, "color_space_conversion",
         "Converts uint8 HWC images between RGB, BGR, GRAY and YCbCr (ITU-R BT.601, studio range), as DALI.",
         csc_args, csc_init);

const ladle__op_def ladle__op_jitter = {
    .schema = {.name = "jitter",
               .doc = "Moves every pixel of uint8 HWC images by a random offset of up to nDegree/2 pixels in x and y "
                      "(pixels from outside the image take fill_value).",
               .min_inputs = 1, .max_inputs = 1, .num_outputs = 1,
               .devices = LADLE_ON_CPU_GPU, .flags = LADLE_OP_RANDOM,
               .num_args = J_COUNT, .args = jitter_args},
    .sample_state_size = sizeof(jitter_state),
    .init = jitter_init,
    .setup = jitter_setup,
    .run = jitter_run,
    .run_batch = JITTER_RUN_BATCH,
};
