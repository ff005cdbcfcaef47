/* transforms.*: affine transform matrices, as DALI builds them, for
 * warp_affine (and point or box coordinates): an n x (n+1) float32 matrix per
 * sample (2x3 for 2-D), optionally combined with a matrix given as input
 * (by default the new transform is applied after it; reverse_order: before). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/geometry/geom_args.h"
#include "ops/op.h"

#define MAXD 3 /* spatial dimensions */

/* A homogeneous (n+1) x (n+1) matrix, in double. */
typedef struct affine {
  int n;
  double m[MAXD + 1][MAXD + 1];
} affine;

static void identity(affine *a, int n) {
  memset(a, 0, sizeof *a);
  a->n = n;
  for (int i = 0; i <= n; i++) a->m[i][i] = 1;
}

static affine product(const affine *a, const affine *b) {
  affine r;
  identity(&r, a->n);
  for (int i = 0; i < a->n; i++)
    for (int j = 0; j <= a->n; j++) {
      double v = 0;
      for (int k = 0; k <= a->n; k++) v += a->m[i][k] * b->m[k][j];
      r.m[i][j] = v;
    }
  return r;
}

/* The linear part `lin` (n x n, row-major) about `center` (NULL: the origin):
 * x -> lin (x - c) + c. */
static void linear_about(affine *a, int n, const double *lin, const double *center) {
  identity(a, n);
  for (int i = 0; i < n; i++) {
    double off = center ? center[i] : 0;
    for (int j = 0; j < n; j++) {
      a->m[i][j] = lin[i * n + j];
      if (center) off -= lin[i * n + j] * center[j];
    }
    a->m[i][n] = off;
  }
}

/* Every operator's last argument is reverse_order. */
#define REVERSE_ORDER_ROW {LADLE_BOOL_ARG("reverse_order", 0), \
    .doc = "With an input transform T: False (default) gives this transform applied after T (M x T); True " \
           "applies it before T (T x M)."}

typedef struct sample_state {
  affine t;
} sample_state;

static ladle_status matrix_input_init(ladle__node *n, int k) {
  const ladle__out_desc *d = &n->in[k];
  if (d->dtype != LADLE_FLOAT32 || d->ndim != 2)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT,
                         "input %d must be float32 transform matrices (n x (n+1)), got %s of %d dimensions", k,
                         ladle_dtype_name(d->dtype), d->ndim);
  return LADLE_OK;
}

static ladle_status transform_init(ladle__node *n) {
  for (int k = 0; k < n->num_inputs; k++) {
    ladle_status st = matrix_input_init(n, k);
    if (st != LADLE_OK) return st;
  }
  n->out[0] = (ladle__out_desc){LADLE_FLOAT32, 2, ""};
  return LADLE_OK;
}

static ladle_status read_input(ladle__node *n, ladle__sample *s, int k, affine *a) {
  ladle__tensor in = ladle__input(n, s, k);
  int rows = (int)in.shape[0];
  if (rows < 1 || rows > MAXD || in.shape[1] != rows + 1)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "input %d: a transform matrix must be n x (n+1) with n "
                         "1 to %d, got %lld x %lld", k, MAXD, (long long)in.shape[0], (long long)in.shape[1]);
  identity(a, rows);
  const float *v = in.data;
  for (int i = 0; i < rows; i++)
    for (int j = 0; j <= rows; j++) a->m[i][j] = v[i * (rows + 1) + j];
  return LADLE_OK;
}

/* The dimensions of the input transform (0 without one). */
static ladle_status input_dims(ladle__node *n, ladle__sample *s, int *dims) {
  *dims = 0;
  if (n->num_inputs < 1) return LADLE_OK;
  affine a;
  ladle_status st = read_input(n, s, 0, &a);
  *dims = a.n;
  return st;
}

/* Combines t with the input transform, if any, and sets the output shape. */
static ladle_status finish(ladle__node *n, ladle__sample *s, const affine *t, int arg_reverse) {
  sample_state *ss = s->state;
  ss->t = *t;
  if (n->num_inputs == 1) {
    affine in;
    ladle_status st = read_input(n, s, 0, &in);
    if (st != LADLE_OK) return st;
    if (in.n != t->n)
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT,
                           "the input transform is %d-D but the arguments describe a %d-D transform", in.n, t->n);
    ss->t = ladle__arg_int(n, NULL, arg_reverse) ? product(&in, t) : product(t, &in);
  }
  int64_t shape[2] = {ss->t.n, ss->t.n + 1};
  ladle__set_shape(n, s, 0, shape);
  return LADLE_OK;
}

static ladle_status transform_run(ladle__node *n, ladle__sample *s) {
  const sample_state *ss = s->state;
  ladle__tensor out = ladle__output(n, s, 0);
  float *o = out.data;
  for (int i = 0; i < ss->t.n; i++)
    for (int j = 0; j <= ss->t.n; j++) *o++ = (float)ss->t.m[i][j];
  return LADLE_OK;
}

/* A list argument of `want` values (a single value broadcast when
 * `broadcast`); fails naming it otherwise. */
static ladle_status vector_arg(ladle__node *n, ladle__sample *s, int arg, int want, int broadcast, double *out) {
  double v[MAXD * MAXD * 2];
  int count = ladle__arg_list(n, s, arg, v, MAXD * MAXD * 2);
  const char *name = n->def->schema.args[arg].name;
  if (count == 1 && broadcast) {
    for (int i = 0; i < want; i++) out[i] = v[0];
    return LADLE_OK;
  }
  if (count != want)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument '%s' has %d values; expected %d", name, count,
                         want);
  for (int i = 0; i < want; i++) {
    if (!isfinite(v[i]))
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument '%s' has a value that is not finite", name);
    out[i] = v[i];
  }
  return LADLE_OK;
}

static ladle_status dims_of(ladle__node *n, int count, const char *name, int *dims) {
  *dims = 0;
  if (count < 1 || count > MAXD)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument '%s' must have 1 to %d values, got %d", name,
                         MAXD, count);
  *dims = count;
  return LADLE_OK;
}

/* center: optional, of `dims` values. */
static ladle_status center_arg(ladle__node *n, ladle__sample *s, int arg, int dims, double *c, const double **out) {
  *out = NULL;
  if (!ladle__arg_given(n, arg)) return LADLE_OK;
  *out = c;
  return vector_arg(n, s, arg, dims, 0, c);
}

/* The linear part about the optional center argument, then finish(). */
static ladle_status finish_linear(ladle__node *n, ladle__sample *s, int dims, const double *lin, int arg_center,
                                  int arg_reverse) {
  double c[MAXD];
  const double *center = NULL;
  ladle_status st = center_arg(n, s, arg_center, dims, c, &center);
  if (st != LADLE_OK) return st;
  affine t;
  linear_about(&t, dims, lin, center);
  return finish(n, s, &t, arg_reverse);
}

#define CENTER_ROW(text) {LADLE_OPTIONAL_ARG("center", LADLE_ARG_FLOATS), .per_sample = 1, .doc = (text)}

/* --- transforms.translation -------------------------------------------- */

enum { TR_OFFSET, TR_REVERSE, TR_COUNT };
static const ladle_arg_schema translation_args[TR_COUNT] = {
    [TR_OFFSET] = {LADLE_REQUIRED_ARG("offset", LADLE_ARG_FLOATS), .per_sample = 1,
        .doc = "The translation vector (its length is the number of dimensions)."},
    [TR_REVERSE] = REVERSE_ORDER_ROW,
};

static ladle_status translation_setup(ladle__node *n, ladle__sample *s) {
  double v[MAXD + 1];
  int dims = 0;
  ladle_status st = dims_of(n, ladle__arg_list(n, s, TR_OFFSET, v, MAXD + 1), "offset", &dims);
  if (st == LADLE_OK) st = vector_arg(n, s, TR_OFFSET, dims, 0, v);
  if (st != LADLE_OK) return st;
  affine t;
  identity(&t, dims);
  for (int i = 0; i < dims; i++) t.m[i][dims] = v[i];
  return finish(n, s, &t, TR_REVERSE);
}

/* --- transforms.scale --------------------------------------------------- */

enum { SC_SCALE, SC_CENTER, SC_NDIM, SC_REVERSE, SC_COUNT };
static const ladle_arg_schema scale_args[SC_COUNT] = {
    [SC_SCALE] = {LADLE_REQUIRED_ARG("scale", LADLE_ARG_FLOATS), .per_sample = 1,
        .doc = "The scale factor of each dimension (one value: all, given ndim or an input transform)."},
    [SC_CENTER] = CENTER_ROW("The point that stays in place. Default: the origin."),
    [SC_NDIM] = {LADLE_OPTIONAL_ARG("ndim", LADLE_ARG_INT), LADLE_RANGE(1, MAXD),
        .doc = "The number of dimensions, where scale and center do not tell it."},
    [SC_REVERSE] = REVERSE_ORDER_ROW,
};

static ladle_status scale_setup(ladle__node *n, ladle__sample *s) {
  double v[MAXD + 1];
  int count = ladle__arg_list(n, s, SC_SCALE, v, MAXD + 1), dims = count, in_dims;
  ladle_status st = input_dims(n, s, &in_dims);
  if (st != LADLE_OK) return st;
  if (count == 1) {
    double cv[MAXD + 1];
    int ccount = ladle__arg_given(n, SC_CENTER) ? ladle__arg_list(n, s, SC_CENTER, cv, MAXD + 1) : 0;
    dims = ladle__arg_given(n, SC_NDIM) ? (int)ladle__arg_int(n, NULL, SC_NDIM) : ccount ? ccount : in_dims;
    if (!dims)
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT,
                           "one 'scale' value without 'ndim', 'center' or an input transform: give 'ndim'");
  }
  st = dims_of(n, dims, "scale", &dims);
  if (st == LADLE_OK && ladle__arg_given(n, SC_NDIM) && ladle__arg_int(n, NULL, SC_NDIM) != dims)
    st = LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'scale' has %d values but ndim is %d", dims,
                       (int)ladle__arg_int(n, NULL, SC_NDIM));
  if (st == LADLE_OK) st = vector_arg(n, s, SC_SCALE, dims, 1, v);
  if (st != LADLE_OK) return st;
  double lin[MAXD * MAXD] = {0};
  for (int i = 0; i < dims; i++) lin[i * dims + i] = v[i];
  return finish_linear(n, s, dims, lin, SC_CENTER, SC_REVERSE);
}

/* --- transforms.rotation ------------------------------------------------ */

enum { RO_ANGLE, RO_AXIS, RO_CENTER, RO_REVERSE, RO_COUNT };
static const ladle_arg_schema rotation_args[RO_COUNT] = {
    [RO_ANGLE] = {LADLE_REQUIRED_ARG("angle", LADLE_ARG_FLOAT), .per_sample = 1,
        .doc = "Angle in degrees: 2-D [[cos, -sin], [sin, cos]]; 3-D a right-handed rotation about axis."},
    [RO_AXIS] = {LADLE_OPTIONAL_ARG("axis", LADLE_ARG_FLOATS), .per_sample = 1,
        .doc = "3-D only: the axis of rotation (any non-zero length). Not given: a 2-D rotation."},
    [RO_CENTER] = CENTER_ROW("The centre of rotation. Default: the origin."),
    [RO_REVERSE] = REVERSE_ORDER_ROW,
};

static ladle_status rotation_setup(ladle__node *n, ladle__sample *s) {
  double deg = ladle__arg_float(n, s, RO_ANGLE), axis[3];
  if (!isfinite(deg)) return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'angle' is not finite");
  double a = deg * (M_PI / 180.0), co = cos(a), si = sin(a);
  int dims = ladle__arg_given(n, RO_AXIS) ? 3 : 2;
  double lin[MAXD * MAXD];
  ladle_status st = LADLE_OK;
  if (dims == 2) {
    lin[0] = co, lin[1] = -si, lin[2] = si, lin[3] = co;
  } else {
    st = vector_arg(n, s, RO_AXIS, 3, 0, axis);
    double len = st == LADLE_OK ? sqrt(axis[0] * axis[0] + axis[1] * axis[1] + axis[2] * axis[2]) : 1;
    if (st == LADLE_OK && !(len > 0))
      st = LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'axis' must have a non-zero length");
    if (st != LADLE_OK) return st;
    double u[3] = {axis[0] / len, axis[1] / len, axis[2] / len};
    double k[9] = {0, -u[2], u[1], u[2], 0, -u[0], -u[1], u[0], 0}; /* the cross-product matrix of u */
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 3; j++) lin[i * 3 + j] = (i == j) * co + si * k[i * 3 + j] + (1 - co) * u[i] * u[j];
  }
  return finish_linear(n, s, dims, lin, RO_CENTER, RO_REVERSE);
}

/* --- transforms.shear --------------------------------------------------- */

enum { SH_SHEAR, SH_ANGLES, SH_CENTER, SH_REVERSE, SH_COUNT };
static const ladle_arg_schema shear_args[SH_COUNT] = {
    [SH_SHEAR] = {LADLE_OPTIONAL_ARG("shear", LADLE_ARG_FLOATS), .per_sample = 1,
        .doc = "Shear factors: 2-D [sx, sy] gives [[1, sx], [sy, 1]]; 3-D [sxy, sxz, syx, syz, szx, szy]."},
    [SH_ANGLES] = {LADLE_OPTIONAL_ARG("angles", LADLE_ARG_FLOATS), .per_sample = 1,
        .doc = "Shear angles in degrees, in (-90, 90): the factors are their tangents (instead of shear)."},
    [SH_CENTER] = CENTER_ROW("The point that stays in place. Default: the origin."),
    [SH_REVERSE] = REVERSE_ORDER_ROW,
};

static ladle_status shear_init(ladle__node *n) {
  if (ladle__arg_given(n, SH_SHEAR) == ladle__arg_given(n, SH_ANGLES))
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "give exactly one of 'shear' and 'angles'");
  return transform_init(n);
}

static ladle_status shear_setup(ladle__node *n, ladle__sample *s) {
  int use_angles = ladle__arg_given(n, SH_ANGLES), arg = use_angles ? SH_ANGLES : SH_SHEAR;
  double v[7];
  int count = ladle__arg_list(n, s, arg, v, 7);
  if (count != 2 && count != 6)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument '%s' must have 2 (2-D) or 6 (3-D) values, got %d",
                         n->def->schema.args[arg].name, count);
  ladle_status st = vector_arg(n, s, arg, count, 0, v);
  if (st != LADLE_OK) return st;
  for (int i = 0; use_angles && i < count; i++) {
    if (!(v[i] > -90 && v[i] < 90))
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'angles' = %g is outside (-90, 90)", v[i]);
    v[i] = tan(v[i] * (M_PI / 180.0));
  }
  int dims = count == 2 ? 2 : 3;
  double lin[MAXD * MAXD];
  for (int i = 0, k = 0; i < dims; i++)
    for (int j = 0; j < dims; j++) lin[i * dims + j] = i == j ? 1 : v[k++];
  return finish_linear(n, s, dims, lin, SH_CENTER, SH_REVERSE);
}

/* --- transforms.crop ---------------------------------------------------- */

enum { CR_FROM_START, CR_FROM_END, CR_TO_START, CR_TO_END, CR_ABSOLUTE, CR_REVERSE, CR_COUNT };
static const double zero1[] = {0.0}, one1[] = {1.0};
static const ladle_arg_schema crop_args[CR_COUNT] = {
    [CR_FROM_START] = {LADLE_FLOATS_ARG("from_start", zero1), .per_sample = 1,
        .doc = "The source box's start corner (one value: all dimensions)."},
    [CR_FROM_END] = {LADLE_FLOATS_ARG("from_end", one1), .per_sample = 1, .doc = "The source box's end corner."},
    [CR_TO_START] = {LADLE_FLOATS_ARG("to_start", zero1), .per_sample = 1, .doc = "The destination box's start."},
    [CR_TO_END] = {LADLE_FLOATS_ARG("to_end", one1), .per_sample = 1, .doc = "The destination box's end."},
    [CR_ABSOLUTE] = {LADLE_BOOL_ARG("absolute", 0),
        .doc = "True: a start greater than its end is swapped with it (each box taken as min/max corners)."},
    [CR_REVERSE] = REVERSE_ORDER_ROW,
};

static ladle_status crop_setup(ladle__node *n, ladle__sample *s) {
  double box[4][MAXD], tmp[MAXD + 1];
  int dims = 1;
  for (int a = CR_FROM_START; a <= CR_TO_END; a++) {
    int count = ladle__arg_list(n, s, a, tmp, MAXD + 1);
    if (count > dims) dims = count;
  }
  ladle_status st = dims_of(n, dims, "from_start", &dims);
  for (int a = CR_FROM_START; st == LADLE_OK && a <= CR_TO_END; a++) st = vector_arg(n, s, a, dims, 1, box[a]);
  if (st != LADLE_OK) return st;
  int absolute = (int)ladle__arg_int(n, NULL, CR_ABSOLUTE);
  affine t;
  identity(&t, dims);
  for (int i = 0; i < dims; i++) {
    double f0 = box[CR_FROM_START][i], f1 = box[CR_FROM_END][i], t0 = box[CR_TO_START][i], t1 = box[CR_TO_END][i];
    if (absolute && f0 > f1) tmp[0] = f0, f0 = f1, f1 = tmp[0];
    if (absolute && t0 > t1) tmp[0] = t0, t0 = t1, t1 = tmp[0];
    if (f1 == f0)
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "the source box is empty in dimension %d", i);
    double k = (t1 - t0) / (f1 - f0);
    t.m[i][i] = k;
    t.m[i][dims] = t0 - f0 * k;
  }
  return finish(n, s, &t, CR_REVERSE);
}

/* --- transforms.combine ------------------------------------------------- */

enum { CO_REVERSE, CO_COUNT };
static const ladle_arg_schema combine_args[CO_COUNT] = {[CO_REVERSE] = REVERSE_ORDER_ROW};

static ladle_status combine_setup(ladle__node *n, ladle__sample *s) {
  affine t;
  ladle_status st = read_input(n, s, 0, &t);
  int reverse = (int)ladle__arg_int(n, NULL, CO_REVERSE);
  for (int k = 1; st == LADLE_OK && k < n->num_inputs; k++) {
    affine next;
    st = read_input(n, s, k, &next);
    if (st == LADLE_OK && next.n != t.n)
      st = LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "input %d is a %d-D transform, input 0 is %d-D", k, next.n,
                         t.n);
    if (st == LADLE_OK) t = reverse ? product(&t, &next) : product(&next, &t);
  }
  if (st != LADLE_OK) return st;
  sample_state *ss = s->state;
  ss->t = t;
  int64_t shape[2] = {t.n, t.n + 1};
  ladle__set_shape(n, s, 0, shape);
  return LADLE_OK;
}

#define TRANSFORM_OP(sym, nm, docstr, minin, maxin, argtab, count, initfn, setupfn) \
  const ladle__op_def ladle__op_##sym = { \
      .schema = {.name = nm, .doc = docstr, .min_inputs = minin, .max_inputs = maxin, .num_outputs = 1, \
                 .devices = LADLE_ON_CPU, .num_args = count, .args = argtab}, \
      .sample_state_size = sizeof(sample_state), \
      .init = initfn, \
      .setup = setupfn, \
      .run = transform_run, \
  }

TRANSFORM_OP(transforms_translation, "transforms.translation",
             "A translation by offset, as an n x (n+1) matrix (2x3 for 2-D), optionally combined with an input "
             "transform.", 0, 1, translation_args, TR_COUNT, transform_init, translation_setup);
TRANSFORM_OP(transforms_scale, "transforms.scale",
             "A scaling by scale about center, as an n x (n+1) matrix, optionally combined with an input transform.",
             0, 1, scale_args, SC_COUNT, transform_init, scale_setup);
TRANSFORM_OP(transforms_rotation, "transforms.rotation",
             "A rotation by angle degrees (2-D, or 3-D about axis) about center, as an n x (n+1) matrix, optionally "
             "combined with an input transform.", 0, 1, rotation_args, RO_COUNT, transform_init, rotation_setup);
TRANSFORM_OP(transforms_shear, "transforms.shear",
             "A shear (factors, or angles in degrees) about center, as an n x (n+1) matrix, optionally combined "
             "with an input transform.", 0, 1, shear_args, SH_COUNT, shear_init, shear_setup);
TRANSFORM_OP(transforms_crop, "transforms.crop",
             "The transform mapping the box from_start..from_end onto to_start..to_end, as an n x (n+1) matrix, "
             "optionally combined with an input transform.", 0, 1, crop_args, CR_COUNT, transform_init, crop_setup);
TRANSFORM_OP(transforms_combine, "transforms.combine",
             "Combines 2 to 4 transforms: T0 first, then T1, ... (the product Tn ... T1 T0; reverse_order: T0 T1 ... "
             "Tn).", 2, LADLE_MAX_INPUTS, combine_args, CO_COUNT, transform_init, combine_setup);
