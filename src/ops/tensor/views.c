/* Operators that change how a sample is seen, never its bytes: reshape,
 * reinterpret, squeeze, expand_dims, per_frame. Their output is a view of
 * the input batch (ladle__op_def.views_input): no copy, on CPU and GPU. */
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "ops/tensor/tensor_args.h"

static void shape_text(char *buf, size_t size, const int64_t *shape, int ndim) {
  size_t at = (size_t)snprintf(buf, size, "(");
  for (int d = 0; d < ndim && at < size; d++) at += (size_t)snprintf(buf + at, size - at, d ? ", %lld" : "%lld", (long long)shape[d]);
  if (at < size) snprintf(buf + at, size - at, ")");
}

/* --- reshape and reinterpret ---------------------------------------------- */

enum { RS_SHAPE, RS_REL_SHAPE, RS_LAYOUT, RS_SRC_DIMS, RS_DTYPE };

#define RESHAPE_ARGS                                                                                               \
  {LADLE_OPTIONAL_ARG("shape", LADLE_ARG_INTS), .per_sample = 1,                                                   \
   .doc = "The output shape; one extent may be -1: it gets what keeps the sample's size. May also be given as "    \
          "input 1 (one shape per sample)."},                                                                      \
      {LADLE_OPTIONAL_ARG("rel_shape", LADLE_ARG_FLOATS), .per_sample = 1,                                         \
       .doc = "The output shape as factors of the input's extents (of src_dims' extents when given), rounded; one " \
              "may be negative: it gets what keeps the sample's size."},                                           \
      {LADLE_OPTIONAL_ARG("layout", LADLE_ARG_STRING),                                                             \
       .doc = "The output layout; default: the input's when the rank stays, else none."},                          \
      {LADLE_OPTIONAL_ARG("src_dims", LADLE_ARG_INTS), .per_sample = 1,                                            \
       .doc = "Output dimension i is input dimension src_dims[i] (-1: a new extent-1 dimension); the input "      \
              "dimensions left out must have extent 1."}

static const ladle_arg_schema reshape_args[] = {RESHAPE_ARGS};
static const ladle_arg_schema reinterpret_args[] = {
    RESHAPE_ARGS,
    {LADLE_OPTIONAL_ARG("dtype", LADLE_ARG_DTYPE),
     .doc = "The element type the bytes are read as (default: the input's); without a shape, the innermost extent "
            "is scaled so that the sample keeps its size in bytes."},
};

/* The output rank, from the first shape-giving argument that is a constant. */
static ladle_status reshape_init(ladle__node *n) {
  ladle__out_desc *out = &n->out[0];
  const char *layout = ladle__arg_string(n, RS_LAYOUT);
  int reinterpret = n->def->schema.num_args > RS_DTYPE;
  *out = n->in[0];
  if (reinterpret && ladle__arg_given(n, RS_DTYPE)) out->dtype = (ladle_dtype)ladle__arg_int(n, NULL, RS_DTYPE);
  int from_input = n->num_inputs > 1;
  if (from_input && ladle__arg_given(n, RS_SHAPE))
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "the shape is given twice: as input 1 and as argument 'shape'");
  if (ladle__arg_given(n, RS_SHAPE) + ladle__arg_given(n, RS_REL_SHAPE) + from_input > 1)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "give one of 'shape' and 'rel_shape'");
  if (ladle__arg_given(n, RS_SHAPE) && ladle__arg_given(n, RS_SRC_DIMS))
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "'src_dims' cannot be combined with 'shape'");
  if (from_input && (n->in[1].ndim > 1 || n->in[1].dtype == LADLE_FLOAT16 || n->in[1].dtype == LADLE_FLOAT32))
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "input 1 (the shape) must be integers of one dimension, got %s of %d",
                         ladle_dtype_name(n->in[1].dtype), n->in[1].ndim);
  int ndim = -1;
  int args[] = {RS_SRC_DIMS, RS_SHAPE, RS_REL_SHAPE};
  for (int k = 0; k < 3 && ndim < 0; k++)
    if (ladle__arg_given(n, args[k])) {
      if (n->args[args[k]].source < 0) ndim = ladle__arg_value(n, args[k])->count;
      else if (!layout)
        return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT,
                             "argument '%s' given per sample: give 'layout' too (its length is the output rank)",
                             n->def->schema.args[args[k]].name);
    }
  if (ndim < 0 && from_input && !layout)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "a shape given as input 1: give 'layout' too (its length is the output rank)");
  if (layout && ndim >= 0 && layout[0] && (int)strlen(layout) != ndim)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'layout' \"%s\" has %d letters for %d dimensions",
                         layout, (int)strlen(layout), ndim);
  if (ndim < 0) ndim = layout ? (int)strlen(layout) : n->in[0].ndim;
  if (ndim > LADLE_MAX_NDIM)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "%d output dimensions, at most %d", ndim, LADLE_MAX_NDIM);
  if (reinterpret && ndim == 0 && ladle_dtype_size(out->dtype) != ladle_dtype_size(n->in[0].dtype))
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "a scalar cannot change to a type of another size");
  out->ndim = ndim;
  memset(out->layout, 0, sizeof out->layout);
  if (layout) {
    snprintf(out->layout, sizeof out->layout, "%s", layout);
  } else if (ladle__arg_given(n, RS_SRC_DIMS) && n->args[RS_SRC_DIMS].source < 0 && n->in[0].layout[0]) {
    const ladle_value *v = ladle__arg_value(n, RS_SRC_DIMS);
    for (int d = 0; d < ndim; d++) {
      int64_t src = v->u.ints[d];
      if (src < 0 || src >= n->in[0].ndim) {
        memset(out->layout, 0, sizeof out->layout);
        break;
      }
      out->layout[d] = n->in[0].layout[src];
    }
  } else if (ndim == n->in[0].ndim) {
    memcpy(out->layout, n->in[0].layout, sizeof out->layout);
  }
  return LADLE_OK;
}

static ladle_status reshape_setup(ladle__node *n, ladle__sample *s) {
  ladle__tensor in = ladle__input(n, s, 0);
  int ndim = n->out[0].ndim;
  size_t in_size = ladle_dtype_size(in.dtype), out_size = ladle_dtype_size(n->out[0].dtype);
  int64_t bytes = (int64_t)in_size, out[LADLE_MAX_NDIM];
  for (int d = 0; d < in.ndim; d++) bytes *= in.shape[d];
  double v[LADLE_TENSOR_MAX_LIST], src[LADLE_TENSOR_MAX_LIST];
  int nsrc = ladle__tensor_list(n, s, RS_SRC_DIMS, src, LADLE_TENSOR_MAX_LIST);
  int nshape = -1, relative = 0;
  if (n->num_inputs > 1) {
    ladle__tensor t = ladle__input(n, s, 1);
    nshape = t.ndim ? (int)t.shape[0] : 1;
    if (nshape > LADLE_TENSOR_MAX_LIST) nshape = LADLE_TENSOR_MAX_LIST + 1;
    for (int i = 0; i < nshape && i < LADLE_TENSOR_MAX_LIST; i++)
      v[i] = t.dtype == LADLE_UINT8 ? ((const uint8_t *)t.data)[i]
             : t.dtype == LADLE_INT32 ? ((const int32_t *)t.data)[i] : (double)((const int64_t *)t.data)[i];
  } else {
    nshape = ladle__tensor_list(n, s, RS_SHAPE, v, LADLE_TENSOR_MAX_LIST);
    if (nshape == -1) nshape = ladle__tensor_list(n, s, RS_REL_SHAPE, v, LADLE_TENSOR_MAX_LIST), relative = 1;
  }
  if (nshape == -2 || nsrc == -2) return LADLE_ERROR_INVALID_ARGUMENT;
  const char *what = n->num_inputs > 1 ? "input 1 (the shape)" : relative ? "argument 'rel_shape'" : "argument 'shape'";
  if (nsrc >= 0 && nsrc != ndim)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'src_dims' has %d values for %d output dimensions",
                         nsrc, ndim);
  if (nshape >= 0 && nshape != ndim)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "%s has %d values for %d output dimensions", what, nshape,
                         ndim);
  int infer = -1;
  for (int d = 0; d < ndim; d++) {
    int64_t base = d < in.ndim ? in.shape[d] : 1;
    if (nsrc >= 0) {
      int64_t k = (int64_t)src[d];
      if (k < -1 || k >= in.ndim)
        return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'src_dims': %lld is not an input dimension "
                             "(the input has %d) or -1", (long long)k, in.ndim);
      base = k < 0 ? 1 : in.shape[k];
    }
    if (nshape < 0) {
      out[d] = base;
    } else if (v[d] < 0) {
      if (infer >= 0 || (!relative && v[d] != -1))
        return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "%s: only one extent may be %s", what,
                             relative ? "negative" : "-1 and none below it");
      infer = d;
      out[d] = 1;
    } else {
      out[d] = relative ? (int64_t)llround(v[d] * (double)base) : (int64_t)v[d];
    }
  }
  int64_t out_bytes = (int64_t)out_size;
  for (int d = 0; d < ndim; d++) out_bytes *= out[d];
  if (infer >= 0) {
    if (out_bytes == 0 || bytes % out_bytes)
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "%s: no extent fits the sample's %lld elements", what,
                           (long long)(bytes / (int64_t)in_size));
    out[infer] = bytes / out_bytes;
  } else if (nshape < 0 && nsrc < 0 && ndim > 0 && out_size != in_size) { /* reinterpret: scale the innermost */
    int64_t inner = out[ndim - 1] * (int64_t)in_size;
    if (inner % (int64_t)out_size)
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "the innermost extent %lld of %s is not a whole number of %s",
                           (long long)out[ndim - 1], ladle_dtype_name(in.dtype), ladle_dtype_name(n->out[0].dtype));
    out[ndim - 1] = inner / (int64_t)out_size;
  }
  out_bytes = (int64_t)out_size;
  for (int d = 0; d < ndim; d++) out_bytes *= out[d];
  if (out_bytes != bytes) {
    char a[128], b[128];
    shape_text(a, sizeof a, in.shape, in.ndim);
    shape_text(b, sizeof b, out, ndim);
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "cannot reshape %s of %s into %s of %s: the sizes differ", a,
                         ladle_dtype_name(in.dtype), b, ladle_dtype_name(n->out[0].dtype));
  }
  ladle__set_shape(n, s, 0, out);
  return LADLE_OK;
}

const ladle__op_def ladle__op_reshape = {
    .schema = {.name = "reshape",
               .doc = "Gives every sample a new shape of the same number of elements, or a new layout; the data "
                      "are not copied (the output views the input's memory).",
               .min_inputs = 1, .max_inputs = 2, .num_outputs = 1, .devices = LADLE_ON_CPU_GPU,
               .num_args = 4, .args = reshape_args, .host_inputs_from = 1},
    .init = reshape_init,
    .setup = reshape_setup,
    .views_input = 1,
};

const ladle__op_def ladle__op_reinterpret = {
    .schema = {.name = "reinterpret",
               .doc = "Reads every sample's bytes as another element type and/or shape (reshape's arguments and "
                      "dtype); the data are not copied.",
               .min_inputs = 1, .max_inputs = 2, .num_outputs = 1, .devices = LADLE_ON_CPU_GPU,
               .num_args = 5, .args = reinterpret_args, .host_inputs_from = 1},
    .init = reshape_init,
    .setup = reshape_setup,
    .views_input = 1,
};

/* --- squeeze and expand_dims ---------------------------------------------- */

typedef struct dims_state {
  int axes[LADLE_MAX_NDIM];
  int count;
} dims_state;

static const ladle_arg_schema squeeze_args[] = {
    {LADLE_OPTIONAL_ARG("axes", LADLE_ARG_INTS), .doc = "The dimensions to remove (each of extent 1)."},
    {LADLE_OPTIONAL_ARG("axis_names", LADLE_ARG_STRING), .doc = "The dimensions to remove, as layout letters."},
};

static ladle_status dims_alloc(ladle__node *n, dims_state **out) {
  dims_state *st = calloc(1, sizeof *st);
  if (!st) return LADLE_OP_FAIL(n, LADLE_ERROR_OUT_OF_MEMORY, "out of memory");
  n->state = st;
  *out = st;
  return LADLE_OK;
}

static void dims_fini(ladle__node *n) { free(n->state); }

static ladle_status squeeze_init(ladle__node *n) {
  dims_state *ds = NULL;
  int axes[LADLE_TENSOR_MAX_LIST], count = -1;
  ladle_status st = ladle__tensor_axes(n, NULL, 0, 1, n->in[0].ndim, n->in[0].layout, 0, axes, &count);
  if (st != LADLE_OK) return st;
  if (count < 0) return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "give 'axes' or 'axis_names'");
  if ((st = dims_alloc(n, &ds)) != LADLE_OK) return st;
  ladle__out_desc *out = &n->out[0];
  *out = n->in[0];
  memset(out->layout, 0, sizeof out->layout);
  int at = 0;
  for (int d = 0; d < n->in[0].ndim; d++) {
    int removed = 0;
    for (int k = 0; k < count; k++) removed |= axes[k] == d;
    if (removed) {
      ds->axes[ds->count++] = d;
      continue;
    }
    if (n->in[0].layout[0]) out->layout[at] = n->in[0].layout[d];
    at++;
  }
  out->ndim = at;
  return LADLE_OK;
}

static ladle_status squeeze_setup(ladle__node *n, ladle__sample *s) {
  const dims_state *ds = n->state;
  ladle__tensor in = ladle__input(n, s, 0);
  int64_t out[LADLE_MAX_NDIM], volume = 1;
  for (int d = 0; d < in.ndim; d++) volume *= in.shape[d];
  int at = 0;
  for (int d = 0, k = 0; d < in.ndim; d++) {
    if (k < ds->count && ds->axes[k] == d) {
      k++;
      if (in.shape[d] != 1 && volume != 0)
        return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "cannot remove dimension %d of extent %lld (only extent 1)",
                             d, (long long)in.shape[d]);
      continue;
    }
    out[at++] = in.shape[d];
  }
  if (volume == 0) { /* DALI: an empty sample stays empty */
    int64_t v = 1;
    for (int d = 0; d < at; d++) v *= out[d];
    if (v != 0)
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "removing the dimensions would change the sample's size");
  }
  ladle__set_shape(n, s, 0, out);
  return LADLE_OK;
}

const ladle__op_def ladle__op_squeeze = {
    .schema = {.name = "squeeze",
               .doc = "Removes dimensions of extent 1 (and their layout letters); the data are not copied.",
               .min_inputs = 1, .max_inputs = 1, .num_outputs = 1, .devices = LADLE_ON_CPU_GPU,
               .num_args = 2, .args = squeeze_args},
    .init = squeeze_init,
    .fini = dims_fini,
    .setup = squeeze_setup,
    .views_input = 1,
};

static const ladle_arg_schema expand_dims_args[] = {
    {LADLE_REQUIRED_ARG("axes", LADLE_ARG_INTS), .doc = "Where the new extent-1 dimensions go, as output indices."},
    {LADLE_STRING_ARG("new_axis_names", ""),
     .doc = "Layout letters of the new dimensions, one per axis; without them the output has no layout."},
};

static ladle_status expand_dims_init(ladle__node *n) {
  dims_state *ds = NULL;
  const ladle_value *v = ladle__arg_value(n, 0);
  const char *names = ladle__arg_string(n, 1);
  int count = v->count, ndim = n->in[0].ndim + count;
  if (ndim > LADLE_MAX_NDIM)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'axes': %d output dimensions, at most %d", ndim,
                         LADLE_MAX_NDIM);
  if (names && names[0] && (int)strlen(names) != count)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'new_axis_names' \"%s\" has %d letters for %d axes",
                         names, (int)strlen(names), count);
  if (names && names[0] && n->in[0].ndim > 0 && !n->in[0].layout[0])
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT,
                         "argument 'new_axis_names' needs an input with a layout (its letters stay)");
  ladle_status st = dims_alloc(n, &ds);
  if (st != LADLE_OK) return st;
  int is_new[LADLE_MAX_NDIM] = {0};
  char letters[LADLE_MAX_NDIM] = {0};
  for (int k = 0; k < count; k++) {
    int64_t a = v->u.ints[k];
    if (a < 0 || a >= ndim || is_new[a])
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'axes': %lld is %s", (long long)a,
                           a < 0 || a >= ndim ? "out of range for the output's dimensions" : "given twice");
    is_new[a] = 1;
    if (names && names[0]) letters[a] = names[k];
  }
  ladle__out_desc *out = &n->out[0];
  *out = n->in[0];
  out->ndim = ndim;
  memset(out->layout, 0, sizeof out->layout);
  for (int d = 0, src = 0; d < ndim; d++) {
    if (is_new[d]) ds->axes[ds->count++] = d;
    if (names && names[0]) out->layout[d] = is_new[d] ? letters[d] : n->in[0].layout[src];
    if (!is_new[d]) src++;
  }
  return LADLE_OK;
}

static ladle_status expand_dims_setup(ladle__node *n, ladle__sample *s) {
  const dims_state *ds = n->state;
  ladle__tensor in = ladle__input(n, s, 0);
  int64_t out[LADLE_MAX_NDIM];
  for (int d = 0, k = 0, src = 0; d < n->out[0].ndim; d++) {
    if (k < ds->count && ds->axes[k] == d) {
      out[d] = 1;
      k++;
    } else {
      out[d] = in.shape[src++];
    }
  }
  ladle__set_shape(n, s, 0, out);
  return LADLE_OK;
}

const ladle__op_def ladle__op_expand_dims = {
    .schema = {.name = "expand_dims",
               .doc = "Inserts dimensions of extent 1 at `axes`; the data are not copied.",
               .min_inputs = 1, .max_inputs = 1, .num_outputs = 1, .devices = LADLE_ON_CPU_GPU,
               .num_args = 2, .args = expand_dims_args},
    .init = expand_dims_init,
    .fini = dims_fini,
    .setup = expand_dims_setup,
    .views_input = 1,
};

/* --- per_frame ---------------------------------------------------------------- */

static const ladle_arg_schema per_frame_args[] = {
    {LADLE_BOOL_ARG("replace", 0),
     .doc = "An input layout that does not start with 'F': 1 replaces its first letter with 'F'; 0 is an error."},
};

static ladle_status per_frame_init(ladle__node *n) {
  ladle__out_desc *out = &n->out[0];
  *out = n->in[0];
  if (out->ndim < 1) return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "the input has no dimension to be frames");
  if (!out->layout[0]) {
    memset(out->layout, '*', (size_t)out->ndim);
    out->layout[0] = 'F';
  } else if (out->layout[0] != 'F') {
    if (!ladle__arg_int(n, NULL, 0))
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT,
                           "the input layout \"%s\" does not start with 'F': give replace=True to make it a sequence",
                           n->in[0].layout);
    out->layout[0] = 'F';
  }
  return LADLE_OK;
}

const ladle__op_def ladle__op_per_frame = {
    .schema = {.name = "per_frame",
               .doc = "Marks the samples as sequences: the layout starts with 'F' (frames); the data are not copied.",
               .min_inputs = 1, .max_inputs = 1, .num_outputs = 1, .devices = LADLE_ON_CPU_GPU,
               .num_args = 1, .args = per_frame_args},
    .init = per_frame_init,
    .setup = ladle__tensor_same_shape_setup,
    .views_input = 1,
};
