/* Row-wise maps of boxes and points, as DALI has them: bb_flip (mirror
 * normalized boxes), coord_flip (reflect points about a centre) and
 * coord_transform (out = M in + T). Each sample's map is decided in setup
 * (ladle__points_params in the sample state) and applied by the CPU
 * reference or, on the GPU, by one launch for the batch (bbox_kernels.h). */
#include <math.h>
#include <string.h>

#include "ops/bbox/bbox_common.h"
#include "ops/bbox/bbox_kernels.h"
#include "ops/geometry/geom_args.h"
#include "ops/op.h"

/* Rows of a sample: every dimension but the last. */
static int64_t sample_rows(const ladle__tensor *t) {
  int64_t rows = 1;
  for (int d = 0; d + 1 < t->ndim; d++) rows *= t->shape[d];
  return rows;
}

static ladle_status points_run(ladle__node *n, ladle__sample *s) {
  ladle__tensor in = ladle__input(n, s, 0), out = ladle__output(n, s, 0);
  ladle__points_apply(out.data, out.dtype, in.data, in.dtype, sample_rows(&in), s->state);
  return LADLE_OK;
}

#ifdef LADLE_HAVE_CUDA
static ladle_status points_run_batch(ladle__node *n, ladle__gpu *g) {
  int batch = n->config->batch_size;
  ladle__gpu_points_desc *d = NULL;
  /* run_batch runs between parallel passes: worker 0's scratch is free. */
  ladle_status st = ladle__scratch(n, &(ladle__sample){.worker = 0}, sizeof *d * (size_t)batch, (void **)&d);
  for (int i = 0; st == LADLE_OK && i < batch; i++) {
    const ladle__points_params *p =
        (const ladle__points_params *)(n->sample_states + (size_t)i * n->def->sample_state_size);
    int64_t elems = ladle__batch_sample_elems(n->in_batches[0], i);
    d[i] = (ladle__gpu_points_desc){ladle_batch_data(n->in_batches[0], i), ladle_batch_data(n->out_batches[0], i),
                                    elems / p->in_dim, *p};
  }
  void *host = NULL, *dev = NULL;
  size_t bytes = ladle__gpu_points_param_bytes(batch);
  if (st == LADLE_OK) st = ladle__gpu_params(g, bytes, &host, &dev);
  return st == LADLE_OK ? ladle__gpu_points(d, batch, n->out[0].dtype, n->in[0].dtype, host, dev, bytes, g->stream)
                        : st;
}
#define POINTS_RUN_BATCH points_run_batch
#else
#define POINTS_RUN_BATCH NULL
#endif

static ladle_status rows_init(ladle__node *n, const char *what) {
  n->out[0] = n->in[0];
  return ladle__bbox_input_init(n, 0, what);
}

/* ------------------------------------------------------------------------ */
/* bb_flip                                                                    */
/* ------------------------------------------------------------------------ */

enum { BB_LTRB, BB_HORIZONTAL, BB_VERTICAL, BB_NUM_ARGS };

static const ladle_arg_schema bb_flip_args[] = {
    [BB_LTRB] = {LADLE_BOOL_ARG("ltrb", 0), .doc = "True: boxes are [left, top, right, bottom]; False: [x, y, w, h]."},
    [BB_HORIZONTAL] = {LADLE_INT_ARG("horizontal", 1), .per_sample = 1,
                       .doc = "Non-zero: mirror horizontally (x -> 1 - x)."},
    [BB_VERTICAL] = {LADLE_INT_ARG("vertical", 0), .per_sample = 1,
                     .doc = "Non-zero: mirror vertically (y -> 1 - y)."},
};

static ladle_status bb_flip_init(ladle__node *n) { return rows_init(n, "boxes [N, 4]"); }

static ladle_status bb_flip_setup(ladle__node *n, ladle__sample *s) {
  int ltrb = (int)ladle__arg_int(n, NULL, BB_LTRB);
  ladle_status st = ladle__bbox_check(n, s, 0, ltrb);
  if (st != LADLE_OK) return st;
  ladle__points_params *p = s->state;
  memset(p, 0, sizeof *p);
  p->mode = LADLE__POINTS_BB_FLIP;
  p->in_dim = p->out_dim = 4;
  p->ltrb = ltrb;
  p->flip[0] = ladle__arg_int(n, s, BB_HORIZONTAL) != 0;
  p->flip[1] = ladle__arg_int(n, s, BB_VERTICAL) != 0;
  ladle__set_shape(n, s, 0, ladle__input(n, s, 0).shape);
  return LADLE_OK;
}

const ladle__op_def ladle__op_bb_flip = {
    .schema = {.name = "bb_flip",
               .doc = "Mirrors normalized ([0, 1]) boxes, [N, 4] float32 per sample (N may be 0), horizontally "
                      "and/or vertically: ltrb l' = 1 - r, r' = 1 - l; xywh boxes go through ltrb and back, as in "
                      "DALI (w' = (1 - x) - (1 - (x + w))). CPU samples with right < left (w < 0) are an error.",
               .min_inputs = 1, .max_inputs = 1, .num_outputs = 1,
               .devices = LADLE_ON_CPU_GPU,
               .num_args = BB_NUM_ARGS, .args = bb_flip_args},
    .sample_state_size = sizeof(ladle__points_params),
    .init = bb_flip_init,
    .setup = bb_flip_setup,
    .run = points_run,
    .run_batch = POINTS_RUN_BATCH,
};

/* ------------------------------------------------------------------------ */
/* coord_flip                                                                 */
/* ------------------------------------------------------------------------ */

enum { CF_LAYOUT, CF_FLIP_X, CF_FLIP_Y, CF_FLIP_Z, CF_CENTER_X, CF_CENTER_Y, CF_CENTER_Z, CF_NUM_ARGS };

static const ladle_arg_schema coord_flip_args[] = {
    [CF_LAYOUT] = {LADLE_STRING_ARG("layout", ""),
                   .doc = "The order of the coordinates: a permutation of \"x\", \"xy\" or \"xyz\" (empty: that "
                          "order, by the number of coordinates)."},
    [CF_FLIP_X] = {LADLE_INT_ARG("flip_x", 1), .per_sample = 1, .doc = "Non-zero: flip the x coordinate."},
    [CF_FLIP_Y] = {LADLE_INT_ARG("flip_y", 0), .per_sample = 1, .doc = "Non-zero: flip the y coordinate."},
    [CF_FLIP_Z] = {LADLE_INT_ARG("flip_z", 0), .per_sample = 1, .doc = "Non-zero: flip the z coordinate."},
    [CF_CENTER_X] = {LADLE_FLOAT_ARG("center_x", 0.5), .per_sample = 1,
                     .doc = "The flip centre on x: x -> 2 center_x - x."},
    [CF_CENTER_Y] = {LADLE_FLOAT_ARG("center_y", 0.5), .per_sample = 1, .doc = "The flip centre on y."},
    [CF_CENTER_Z] = {LADLE_FLOAT_ARG("center_z", 0.5), .per_sample = 1, .doc = "The flip centre on z."},
};

static ladle_status coord_flip_init(ladle__node *n) {
  const char *layout = ladle__arg_string(n, CF_LAYOUT);
  size_t len = strlen(layout);
  int seen[3] = {0, 0, 0};
  for (size_t i = 0; i < len; i++) {
    const char *at = strchr("xyz", layout[i]);
    if (len > 3 || !at || !layout[i] || seen[at - "xyz"]++ || (size_t)(at - "xyz") >= len)
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT,
                           "argument 'layout' is \"%s\": give a permutation of \"x\", \"xy\" or \"xyz\"", layout);
  }
  return rows_init(n, "points [N, dims]");
}

static ladle_status coord_flip_setup(ladle__node *n, ladle__sample *s) {
  ladle__tensor in = ladle__input(n, s, 0);
  int dims = (int)in.shape[1];
  const char *layout = ladle__arg_string(n, CF_LAYOUT);
  if (dims < 1 || dims > 3)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "input 0 must be points [N, 1 to 3], got [%lld, %d]",
                         (long long)in.shape[0], dims);
  if (*layout && (int)strlen(layout) != dims)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'layout' (\"%s\") names %d coordinates but the "
                         "points have %d", layout, (int)strlen(layout), dims);
  ladle__points_params *p = s->state;
  memset(p, 0, sizeof *p);
  p->mode = LADLE__POINTS_FLIP;
  p->in_dim = p->out_dim = dims;
  for (int k = 0; k < dims; k++) {
    int axis = *layout ? (int)(strchr("xyz", layout[k]) - "xyz") : k;
    p->flip[k] = ladle__arg_int(n, s, CF_FLIP_X + axis) != 0;
    p->t[k] = 2.0f * (float)ladle__arg_float(n, s, CF_CENTER_X + axis);
  }
  ladle__set_shape(n, s, 0, in.shape);
  return LADLE_OK;
}

const ladle__op_def ladle__op_coord_flip = {
    .schema = {.name = "coord_flip",
               .doc = "Reflects points, [N, 1 to 3] float32 per sample (N may be 0), about a centre: each flipped "
                      "coordinate x becomes 2 center - x (in float, as DALI).",
               .min_inputs = 1, .max_inputs = 1, .num_outputs = 1,
               .devices = LADLE_ON_CPU_GPU,
               .num_args = CF_NUM_ARGS, .args = coord_flip_args},
    .sample_state_size = sizeof(ladle__points_params),
    .init = coord_flip_init,
    .setup = coord_flip_setup,
    .run = points_run,
    .run_batch = POINTS_RUN_BATCH,
};

/* ------------------------------------------------------------------------ */
/* coord_transform                                                            */
/* ------------------------------------------------------------------------ */

enum { CT_M, CT_T, CT_MT, CT_DTYPE, CT_NUM_ARGS };

static const ladle_arg_schema coord_transform_args[] = {
    [CT_M] = {LADLE_OPTIONAL_ARG("M", LADLE_ARG_FLOATS), .per_sample = 1,
              .doc = "The matrix, m x n row-major for n-element input points (m rows: the output size); one value: "
                     "that value on the diagonal of an n x n matrix. Not given: the identity."},
    [CT_T] = {LADLE_OPTIONAL_ARG("T", LADLE_ARG_FLOATS), .per_sample = 1,
              .doc = "The translation, m values (one value: broadcast). Not given: none."},
    [CT_MT] = {LADLE_OPTIONAL_ARG("MT", LADLE_ARG_FLOATS), .per_sample = 1,
               .doc = "The block matrix [M T], m x (n + 1) row-major (one value: M as that scalar, no T). Not "
                      "with M or T."},
    [CT_DTYPE] = {LADLE_DTYPE_ARG("dtype", LADLE_FLOAT32),
                  .doc = "The output type: float32, or the input's integer type (rounded half away from zero, "
                         "saturated)."},
};

static ladle_status coord_transform_init(ladle__node *n) {
  ladle_dtype in = n->in[0].dtype, out = (ladle_dtype)ladle__arg_int(n, NULL, CT_DTYPE);
  if (in != LADLE_FLOAT32 && in != LADLE_UINT8 && in != LADLE_INT16 && in != LADLE_UINT16 && in != LADLE_INT32)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT,
                         "input 0 must be float32, uint8, int16, uint16 or int32 points, got %s",
                         ladle_dtype_name(in));
  if (out != LADLE_FLOAT32 && out != in)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'dtype' is %s: give float32 or the input's "
                         "type (%s)", ladle_dtype_name(out), ladle_dtype_name(in));
  if (n->in[0].ndim < 2)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT,
                         "input 0 must have at least 2 dimensions (points along the last), got %d", n->in[0].ndim);
  if (ladle__arg_given(n, CT_MT) && (ladle__arg_given(n, CT_M) || ladle__arg_given(n, CT_T)))
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'MT' cannot be given with 'M' or 'T'");
  n->out[0] = n->in[0];
  n->out[0].dtype = out;
  return LADLE_OK;
}

/* A list argument's values for sample s, checked finite. */
static ladle_status ct_list(ladle__node *n, ladle__sample *s, int arg, double *v, int *count) {
  enum { MAXV = LADLE__POINT_MAX_DIM * (LADLE__POINT_MAX_DIM + 1) };
  *count = ladle__arg_given(n, arg) ? ladle__arg_list(n, s, arg, v, MAXV) : 0;
  if (*count > MAXV)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument '%s' has %d values (at most %d)",
                         n->def->schema.args[arg].name, *count, MAXV);
  for (int i = 0; i < *count; i++)
    if (!isfinite(v[i]))
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument '%s' has a value that is not finite",
                           n->def->schema.args[arg].name);
  return LADLE_OK;
}

static ladle_status coord_transform_setup(ladle__node *n, ladle__sample *s) {
  ladle__tensor in = ladle__input(n, s, 0);
  int dims = (int)in.shape[in.ndim - 1];
  if (dims < 1 || dims > LADLE__POINT_MAX_DIM)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "input 0 has points of %d components (1 to %d)", dims,
                         LADLE__POINT_MAX_DIM);
  double mv[LADLE__POINT_MAX_DIM * (LADLE__POINT_MAX_DIM + 1)], tv[LADLE__POINT_MAX_DIM * (LADLE__POINT_MAX_DIM + 1)];
  int mc, tc, fused = ladle__arg_given(n, CT_MT), cols = dims + fused;
  ladle_status st = ct_list(n, s, fused ? CT_MT : CT_M, mv, &mc);
  if (st == LADLE_OK && !fused) st = ct_list(n, s, CT_T, tv, &tc);
  if (st != LADLE_OK) return st;
  const char *mname = fused ? "MT" : "M";
  int rows = mc <= 1 ? dims : mc / cols;
  if (mc > 1 && (mc % cols || rows > LADLE__POINT_MAX_DIM))
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument '%s' has %d values: not a matrix of %d columns "
                         "(%d to %d rows) for points of %d components", mname, mc, cols, 1, LADLE__POINT_MAX_DIM,
                         dims);
  if (!fused && tc > 1 && tc != rows)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'T' has %d values; the matrix has %d rows", tc,
                         rows);
  ladle__points_params *p = s->state;
  memset(p, 0, sizeof *p);
  p->mode = LADLE__POINTS_AFFINE;
  p->in_dim = dims, p->out_dim = rows;
  for (int r = 0; r < rows; r++) {
    for (int c = 0; c < dims; c++)
      p->m[r][c] = mc == 0 ? (r == c) : mc == 1 ? (r == c ? (float)mv[0] : 0.0f) : (float)mv[r * cols + c];
    p->t[r] = fused ? (mc > 1 ? (float)mv[r * cols + dims] : 0.0f) : tc == 0 ? 0.0f : (float)tv[tc == 1 ? 0 : r];
  }
  int64_t shape[LADLE_MAX_NDIM];
  memcpy(shape, in.shape, sizeof *shape * (size_t)in.ndim);
  shape[in.ndim - 1] = rows;
  ladle__set_shape(n, s, 0, shape);
  return LADLE_OK;
}

const ladle__op_def ladle__op_coord_transform = {
    .schema = {.name = "coord_transform",
               .doc = "Applies out = M in + T to points (the last dimension of every sample; any number of them, "
                      "also none), in float: ((M[r][0] x0 + M[r][1] x1) + ...) + T[r], each operation rounded as "
                      "DALI's CPU operator rounds it.",
               .min_inputs = 1, .max_inputs = 1, .num_outputs = 1,
               .devices = LADLE_ON_CPU_GPU,
               .num_args = CT_NUM_ARGS, .args = coord_transform_args},
    .sample_state_size = sizeof(ladle__points_params),
    .init = coord_transform_init,
    .setup = coord_transform_setup,
    .run = points_run,
    .run_batch = POINTS_RUN_BATCH,
};
