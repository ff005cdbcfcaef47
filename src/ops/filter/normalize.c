/* normalize: out = (in - mean) * scale / sqrt(stddev^2 + epsilon) + shift,
 * mean and stddev given (scalars, or per-sample scalars) or computed over the
 * reduced axes (`axes` / `axis_names`; default all) of each sample, or of the
 * whole batch (batch=True). Statistics in double, the formula in float. */
#include "core/no_fma.h" /* first: CPU results compared bit for bit with the CUDA kernels */

#include <math.h>
#include <string.h>

#include "ops/filter/filter.h"
#include "ops/filter/filter_kernels.h"
#include "ops/filter/norm_core.h"
#include "ops/geometry/normalize_kernel.h"

#define NORM_MAX_GROUPS 64 /* non-reduced elements with batch=True */

enum { NM_MEAN, NM_STDDEV, NM_AXES, NM_AXIS_NAMES, NM_BATCH, NM_SCALE, NM_SHIFT, NM_EPSILON, NM_DDOF, NM_DTYPE,
       NM_COUNT };
static const ladle_arg_schema norm_args[NM_COUNT] = {
    [NM_MEAN] = {LADLE_OPTIONAL_ARG("mean", LADLE_ARG_FLOAT), .per_sample = 1,
        .doc = "The mean to subtract; default: computed over the reduced axes."},
    [NM_STDDEV] = {LADLE_OPTIONAL_ARG("stddev", LADLE_ARG_FLOAT), .per_sample = 1, LADLE_RANGE(0.0, 1e300),
        .doc = "The standard deviation; default: computed over the reduced axes (around `mean` when given)."},
    [NM_AXES] = {LADLE_OPTIONAL_ARG("axes", LADLE_ARG_INTS), LADLE_RANGE(-64, 63),
        .doc = "Indices of the reduced axes (negative: from the end); default: all."},
    [NM_AXIS_NAMES] = {LADLE_OPTIONAL_ARG("axis_names", LADLE_ARG_STRING),
        .doc = "The reduced axes as layout letters (\"HW\"); instead of `axes`."},
    [NM_BATCH] = {LADLE_BOOL_ARG("batch", 0),
        .doc = "True: mean and stddev are computed over the whole batch (the non-reduced extents must agree)."},
    [NM_SCALE] = {LADLE_FLOAT_ARG("scale", 1.0), .doc = "Multiplies the normalized value."},
    [NM_SHIFT] = {LADLE_FLOAT_ARG("shift", 0.0), .doc = "Added after scaling."},
    [NM_EPSILON] = {LADLE_FLOAT_ARG("epsilon", 0.0), LADLE_RANGE(0.0, 1e300),
        .doc = "Added to the variance (stddev^2) before the square root."},
    [NM_DDOF] = {LADLE_INT_ARG("ddof", 0), LADLE_RANGE(0, 1e9),
        .doc = "Delta degrees of freedom: the variance divides by N - ddof."},
    [NM_DTYPE] = {LADLE_DTYPE_ARG("dtype", LADLE_FLOAT32),
        .doc = "Output type (FLOAT by default); integers round to nearest even and saturate."},
};

typedef struct norm_node {
  int reduced[LADLE_MAX_NDIM]; /* 1: axis d is reduced */
} norm_node;

typedef struct norm_sample {
  int groups;
  double count;
  double mean[NORM_MAX_GROUPS], m2[NORM_MAX_GROUPS];
} norm_sample;

static ladle_status norm_init(ladle__node *n) {
  const ladle__out_desc *in = &n->in[0];
  norm_node *st = calloc(1, sizeof *st);
  if (!st) return LADLE_OP_FAIL(n, LADLE_ERROR_OUT_OF_MEMORY, "out of memory");
  n->state = st;
  if (in->dtype == LADLE_FLOAT16 || n->out[0].dtype == LADLE_FLOAT16)
    return LADLE_OP_FAIL(n, LADLE_ERROR_UNSUPPORTED, "float16 is not supported here (cast first)");
  LADLE_TRY_OP(ladle__reduced_axes(n, NM_AXES, NM_AXIS_NAMES, st->reduced));
  n->all_samples = (int)ladle__arg_int(n, NULL, NM_BATCH); /* batch statistics read every sample's state */
  n->out[0] = *in;
  n->out[0].dtype = (ladle_dtype)ladle__arg_int(n, NULL, NM_DTYPE);
  if (n->out[0].dtype == LADLE_FLOAT16)
    return LADLE_OP_FAIL(n, LADLE_ERROR_UNSUPPORTED, "argument 'dtype': FLOAT16 is not supported here");
  return LADLE_OK;
}

static void norm_fini(ladle__node *n) {
  free(n->state);
  n->state = NULL;
}

/* Group of every element: gstride[d] is 0 for reduced axes. Returns the
 * number of groups. */
static int64_t group_strides(const norm_node *st, const ladle__tensor *t, int64_t *gstride) {
  int64_t g = 1;
  for (int d = t->ndim - 1; d >= 0; d--) {
    gstride[d] = st->reduced[d] ? 0 : g;
    if (!st->reduced[d]) g *= t->shape[d];
  }
  return g;
}

/* Calls body(i, group) for every element i in order. */
#define FOR_ELEMENTS(t, gstride, body)                                       \
  do {                                                                       \
    int64_t idx_[LADLE_MAX_NDIM] = {0}, count_ = 1, g_ = 0;                  \
    for (int d_ = 0; d_ < (t).ndim; d_++) count_ *= (t).shape[d_];           \
    for (int64_t i_ = 0; i_ < count_; i_++) {                                \
      body(i_, g_);                                                          \
      for (int d_ = (t).ndim - 1; d_ >= 0; d_--) {                           \
        g_ += (gstride)[d_];                                                 \
        if (++idx_[d_] < (t).shape[d_]) break;                               \
        g_ -= (gstride)[d_] * (t).shape[d_];                                 \
        idx_[d_] = 0;                                                        \
      }                                                                      \
    }                                                                        \
  } while (0)

/* Mean and M2 per group. uint8: from the exact integer sums of x and x^2
 * (norm_core.h), which the GPU adds up in its own order with the same
 * result. Other types: in double, each a sum of chunk sums in order; a chunk
 * is LADLE__NORM_CHUNK members of the group (its elements in memory order),
 * summed in 32 lanes (member k into lane k % 32, in turn) and the lanes
 * combined by halving (lane l + 16 into lane l, then l + 8, ... l + 1):
 * what the GPU's warps do, so both get the same bits. `scratch`: 2 * groups
 * 8-byte words. */
static void moments(const ladle__tensor *in, const int *reduced, const int64_t *gstride, int64_t groups, double *mean,
                    double *m2, double *count, void *scratch) {
  int64_t total = 1;
  for (int d = 0; d < in->ndim; d++) total *= in->shape[d];
  *count = groups ? (double)(total / groups) : 0;
  if (in->dtype == LADLE_UINT8) {
    uint64_t *sum = scratch, *sq = sum + groups;
    const uint8_t *px = in->data;
    for (int64_t g = 0; g < groups; g++) sum[g] = sq[g] = 0;
#define ADD_EXACT(i, g) sum[g] += px[i], sq[g] += (uint64_t)px[i] * px[i]
    FOR_ELEMENTS(*in, gstride, ADD_EXACT);
#undef ADD_EXACT
    for (int64_t g = 0; g < groups; g++) ladle__norm_exact_moments(sum[g], sq[g], total / groups, &mean[g], &m2[g]);
    return;
  }
  /* Element strides; the kept (group) and reduced (member) axes. */
  int64_t stride[LADLE_MAX_NDIM], k = 1, members = groups ? total / groups : 0;
  int gax[LADLE_MAX_NDIM], max[LADLE_MAX_NDIM], ng = 0, nm = 0;
  for (int d = in->ndim - 1; d >= 0; d--) stride[d] = k, k *= in->shape[d];
  for (int d = 0; d < in->ndim; d++) {
    if (reduced[d]) max[nm++] = d;
    else gax[ng++] = d;
  }
  for (int pass = 0; pass < 2; pass++)
    for (int64_t g = 0; g < groups; g++) {
      int64_t off = 0, rest = g, idx[LADLE_MAX_NDIM] = {0}, m = 0;
      for (int i = ng - 1; i >= 0; i--) {
        off += rest % in->shape[gax[i]] * stride[gax[i]];
        rest /= in->shape[gax[i]];
      }
      const double mu = pass ? mean[g] : 0;
      double acc = 0;
      while (m < members) {
        double lane[32] = {0};
        for (int j = 0; j < LADLE__NORM_CHUNK && m < members; j++, m++) {
          const double x = ladle__elem(in, off), dx = x - mu;
          lane[j & 31] += pass ? dx * dx : x;
          for (int i = nm - 1; i >= 0; i--) { /* the next member */
            const int d = max[i];
            off += stride[d];
            if (++idx[i] < in->shape[d]) break;
            off -= stride[d] * in->shape[d];
            idx[i] = 0;
          }
        }
        for (int half = 16; half > 0; half >>= 1)
          for (int l = 0; l < half; l++) lane[l] += lane[l + half];
        acc += lane[0];
      }
      if (pass) m2[g] = acc;
      else mean[g] = *count > 0 ? acc / *count : 0;
    }
}

static ladle_status norm_setup(ladle__node *n, ladle__sample *s) {
  ladle__tensor in = ladle__input(n, s, 0);
  ladle__set_shape(n, s, 0, in.shape);
  if (!ladle__arg_int(n, NULL, NM_BATCH)) return LADLE_OK;
  norm_sample *ns = s->state;
  int64_t gstride[LADLE_MAX_NDIM], groups = group_strides(n->state, &in, gstride);
  if (groups > NORM_MAX_GROUPS)
    return LADLE_OP_FAIL(n, LADLE_ERROR_UNSUPPORTED, "batch=True with %lld non-reduced elements (at most %d)",
                         (long long)groups, NORM_MAX_GROUPS);
  ns->groups = (int)groups;
  if (n->device != LADLE_ON_CPU) return LADLE_OK; /* the GPU computes its own */
  uint64_t scratch[2 * NORM_MAX_GROUPS];
  moments(&in, ((const norm_node *)n->state)->reduced, gstride, groups, ns->mean, ns->m2, &ns->count, scratch);
  return LADLE_OK;
}

/* The given statistics and the formula's constants. */
typedef struct norm_consts {
  int given_mean, given_std;
  double mean, stddev, ddof, eps;
  float scale, shift;
} norm_consts;

static norm_consts consts_of(const ladle__node *n, const ladle__sample *s) {
  norm_consts c = {ladle__arg_given(n, NM_MEAN), ladle__arg_given(n, NM_STDDEV), 0, 0,
                   (double)ladle__arg_int(n, NULL, NM_DDOF), ladle__arg_float(n, NULL, NM_EPSILON),
                   (float)ladle__arg_float(n, NULL, NM_SCALE), (float)ladle__arg_float(n, NULL, NM_SHIFT)};
  if (c.given_mean) c.mean = ladle__arg_float(n, s, NM_MEAN);
  if (c.given_std) c.stddev = ladle__arg_float(n, s, NM_STDDEV);
  return c;
}

/* mean[g] becomes the mean to subtract, m2[g] the multiplier (the GPU's
 * finalize kernel repeats these operations). */
static void finalize(const norm_consts *c, int64_t groups, double count, double *mean, double *m2) {
  for (int64_t g = 0; g < groups; g++) {
    double var = c->stddev * c->stddev;
    if (!c->given_std) {
      double dm = mean[g] - c->mean, sq = m2[g] + (c->given_mean ? count * dm * dm : 0);
      var = count - c->ddof > 0 ? sq / (count - c->ddof) : 0;
    }
    if (c->given_mean) mean[g] = c->mean;
    var += c->eps;
    m2[g] = var > 0 ? (double)(c->scale * (float)(1.0 / sqrt(var))) : 0;
  }
}

static ladle_status norm_run(ladle__node *n, ladle__sample *s) {
  ladle__tensor in = ladle__input(n, s, 0), out = ladle__output(n, s, 0);
  int64_t gstride[LADLE_MAX_NDIM], groups = group_strides(n->state, &in, gstride);
  int64_t total = 1;
  for (int d = 0; d < in.ndim; d++) total *= in.shape[d];
  if (total == 0) return LADLE_OK;
  double *mean = NULL, *m2, count = 0;
  float *val = NULL;
  LADLE_TRY_OP(ladle__scratch(n, s, sizeof(double) * 4 * (size_t)groups + sizeof(float) * (size_t)total + 16,
                              (void **)&mean));
  m2 = mean + groups;
  val = (float *)(m2 + 3 * groups);
  if (ladle__arg_int(n, NULL, NM_BATCH)) { /* combine every sample's moments (Chan et al.) */
    for (int64_t g = 0; g < groups; g++) mean[g] = m2[g] = 0;
    for (int i = 0; i < n->config->batch_size; i++) {
      const norm_sample *o = (const norm_sample *)(n->sample_states + (size_t)i * n->def->sample_state_size);
      if (o->groups != groups)
        return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT,
                             "batch=True: sample %d has %d non-reduced elements, sample %d has %lld", i, o->groups,
                             s->slot, (long long)groups);
      double c = count + o->count;
      for (int64_t g = 0; g < groups && c > 0; g++) {
        double delta = o->mean[g] - mean[g];
        m2[g] += o->m2[g] + delta * delta * count * o->count / c;
        mean[g] += delta * o->count / c;
      }
      count = c;
    }
  } else {
    moments(&in, ((const norm_node *)n->state)->reduced, gstride, groups, mean, m2, &count, m2 + groups);
  }
  norm_consts c = consts_of(n, s);
  finalize(&c, groups, count, mean, m2);
  float shift = c.shift;
#define APPLY(i, g) val[i] = ((float)ladle__elem(&in, i) - (float)mean[g]) * (float)m2[g] + shift
  FOR_ELEMENTS(in, gstride, APPLY);
#undef APPLY
  ladle__convert(out.data, out.dtype, val, LADLE_FLOAT32, (size_t)total);
  return LADLE_OK;
}

#ifdef LADLE_HAVE_CUDA
/* The kernels' view of a sample as ga x gb elements (filter_kernels.h's
 * gmode): axes of extent 1 dropped, neighbouring axes of one kind merged;
 * -1 where more than one reduced and one kept run remain. */
static int group_view(const ladle__tensor *in, const int *reduced, int64_t *ga, int64_t *gb) {
  int kind[LADLE_MAX_NDIM], runs = 0;
  int64_t ext[LADLE_MAX_NDIM];
  for (int d = 0; d < in->ndim; d++) {
    if (in->shape[d] == 1) continue;
    if (runs && kind[runs - 1] == reduced[d]) {
      ext[runs - 1] *= in->shape[d];
    } else {
      kind[runs] = reduced[d];
      ext[runs++] = in->shape[d];
    }
  }
  if (runs > 2) return -1;
  if (runs == 0) return *ga = 1, *gb = 1, 1;
  if (runs == 1) return *ga = 1, *gb = ext[0], kind[0] ? 1 : 0;
  *ga = ext[0], *gb = ext[1];
  return kind[0] ? 0 : 1;
}

static ladle_status norm_run_batch(ladle__node *n, ladle__gpu *g) {
  const norm_node *st = n->state;
  int batch = n->config->batch_size, by_batch = (int)ladle__arg_int(n, NULL, NM_BATCH);
  ladle__gpu_norm_desc *d = NULL;
  LADLE_TRY_OP(ladle__scratch(n, &(ladle__sample){.worker = 0}, sizeof *d * (size_t)batch, (void **)&d));
  size_t doubles = 0;
  int64_t groups0 = -1;
  for (int i = 0; i < batch; i++) {
    ladle__sample s = {.slot = i};
    ladle__tensor in = ladle__input(n, &s, 0), out = ladle__output(n, &s, 0);
    int64_t gstride[LADLE_MAX_NDIM], groups = group_strides(st, &in, gstride), total = 1;
    for (int k = 0; k < in.ndim; k++) total *= in.shape[k];
    if (by_batch && groups0 >= 0 && groups != groups0)
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT,
                           "batch=True: sample 0 has %lld non-reduced elements, sample %d has %lld",
                           (long long)groups0, i, (long long)groups);
    groups0 = groups;
    norm_consts c = consts_of(n, &s);
    memset(&d[i], 0, sizeof d[i]);
    d[i].in = in.data;
    d[i].out = out.data;
    d[i].in_type = (int)in.dtype;
    d[i].out_type = (int)out.dtype;
    d[i].ndim = in.ndim;
    for (int k = 0; k < in.ndim; k++) d[i].shape[k] = in.shape[k], d[i].reduced[k] = st->reduced[k];
    d[i].groups = groups;
    d[i].exact = in.dtype == LADLE_UINT8;
    d[i].gmode = group_view(&in, st->reduced, &d[i].ga, &d[i].gb);
    d[i].members = groups ? total / groups : 0;
    d[i].chunks = (d[i].members + LADLE__NORM_CHUNK - 1) / LADLE__NORM_CHUNK;
    d[i].given_mean = c.given_mean;
    d[i].given_std = c.given_std;
    d[i].mean = c.mean;
    d[i].stddev = c.stddev;
    d[i].ddof = c.ddof;
    d[i].eps = c.eps;
    d[i].scale = c.scale;
    d[i].shift = c.shift;
    doubles += (size_t)(groups * d[i].chunks + 2 * groups);
  }
  if (by_batch) doubles += 2 * (size_t)(groups0 > 0 ? groups0 : 0);
  double *buf = NULL;
  LADLE_TRY_OP(ladle__gpu_device_scratch(g, sizeof(double) * (doubles ? doubles : 1), (void **)&buf));
  double *at = buf;
  for (int i = 0; i < batch; i++) {
    d[i].part = at;
    at += d[i].groups * d[i].chunks;
    d[i].stat_mean = at;
    d[i].stat_m2 = at + d[i].groups;
    at += 2 * d[i].groups;
  }
  for (int i = 0; by_batch && i < batch; i++) d[i].batch_mean = at, d[i].batch_m2 = at + groups0;
  void *host = NULL, *dev = NULL;
  size_t bytes = ladle__gpu_norm_param_bytes(batch);
  LADLE_TRY_OP(ladle__gpu_params(g, bytes, &host, &dev));
  return ladle__gpu_normalize(d, batch, by_batch, host, dev, bytes, g->stream);
}
#define NORM_RUN_BATCH norm_run_batch
#else
#define NORM_RUN_BATCH NULL
#endif

const ladle__op_def ladle__op_normalize = {
    .schema = {.name = "normalize",
               .doc = "Normalizes: (in - mean) * scale / sqrt(stddev^2 + epsilon) + shift, statistics given or "
                      "computed over the reduced axes, per sample or over the batch.",
               .min_inputs = 1, .max_inputs = 1, .num_outputs = 1, .devices = LADLE_ON_CPU_GPU,
               .num_args = NM_COUNT, .args = norm_args},
    .sample_state_size = sizeof(norm_sample),
    .init = norm_init,
    .fini = norm_fini,
    .setup = norm_setup,
    .run = norm_run,
    .run_batch = NORM_RUN_BATCH,
};
