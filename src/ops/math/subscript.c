/* _tensor_subscript: DALI's DataNode subscripts (x[1:3, ::2], x[-1],
 * x[i] with a per-sample index), plus x[..., 0]: a strided read of the
 * input by the element-wise kernel's copy. Python's slice rules: bounds
 * clamp, negative values count from the end, negative steps walk backwards;
 * an index out of range is an error. */
#include <stdlib.h>
#include <string.h>

#include "ops/math/math_op.h"
#include "ops/math/math_scalar.h"

/* The four arguments of subscript i; per-sample values (DataNodes) allowed. */
#define SUBSCRIPT_ARGS(i)                                                                                       \
  {LADLE_OPTIONAL_ARG("at_" #i, LADLE_ARG_INT), .per_sample = 1,                                               \
   .doc = "Subscript " #i " is this index (the dimension is removed)."},                                       \
      {LADLE_OPTIONAL_ARG("lo_" #i, LADLE_ARG_INT), .per_sample = 1, .doc = "Subscript " #i "'s slice start."}, \
      {LADLE_OPTIONAL_ARG("hi_" #i, LADLE_ARG_INT), .per_sample = 1, .doc = "Subscript " #i "'s slice end."},   \
      {LADLE_OPTIONAL_ARG("step_" #i, LADLE_ARG_INT), .per_sample = 1, .doc = "Subscript " #i "'s slice step."}

enum { ARG_NUM, ARG_ELLIPSIS, ARG_FIRST_SUBSCRIPT, ARGS_PER_SUBSCRIPT = 4 };
enum { AT, LO, HI, STEP };

static const ladle_arg_schema subscript_args[] = {
    {LADLE_INT_ARG("num_subscripts", 0), LADLE_RANGE(0, LADLE_MAX_NDIM),
     .doc = "How many subscripts were written (those past the last one given take whole dimensions)."},
    {LADLE_INT_ARG("ellipsis", -1), LADLE_RANGE(-1, LADLE_MAX_NDIM),
     .doc = "ladle's addition (DALI has no `...`): the position of `...` among the subscripts, -1 for none; "
            "subscripts from this one on apply to the last dimensions."},
    SUBSCRIPT_ARGS(0), SUBSCRIPT_ARGS(1), SUBSCRIPT_ARGS(2), SUBSCRIPT_ARGS(3), SUBSCRIPT_ARGS(4), SUBSCRIPT_ARGS(5),
};
#define NUM_ARGS ((int)(sizeof subscript_args / sizeof subscript_args[0]))

static int arg_of(int subscript, int which) { return ARG_FIRST_SUBSCRIPT + subscript * ARGS_PER_SUBSCRIPT + which; }

typedef struct subscript_state {
  ladle__math_expr e;
  int subscript_of[LADLE_MAX_NDIM]; /* per input dimension: the subscript applied to it, or -1 */
} subscript_state;

/* Per sample, from setup to run: where the output reads the input. */
typedef struct subscript_sample {
  int64_t offset; /* elements */
  int ndim;
  int64_t shape[LADLE_MAX_NDIM], strides[LADLE_MAX_NDIM];
} subscript_sample;

static ladle_status subscript_init(ladle__node *n) {
  subscript_state *st = calloc(1, sizeof *st);
  if (!st) return LADLE_OP_FAIL(n, LADLE_ERROR_OUT_OF_MEMORY, "out of memory");
  n->state = st;
  const int ndim = n->in[0].ndim, num = (int)ladle__arg_int(n, NULL, ARG_NUM);
  const int ellipsis = (int)ladle__arg_int(n, NULL, ARG_ELLIPSIS);
  if (num > ndim)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "%d subscripts for an input of %d dimension(s)", num, ndim);
  if (ellipsis > num)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'ellipsis' (%d) is past the %d subscripts",
                         ellipsis, num);
  for (int d = 0; d < ndim; d++) st->subscript_of[d] = -1;
  for (int i = 0; i < LADLE_MAX_NDIM; i++) {
    int any = 0;
    for (int w = AT; w <= STEP; w++) any |= ladle__arg_given(n, arg_of(i, w));
    if (any && i >= num)
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "subscript %d is given, but num_subscripts is %d", i,
                           num);
    if (i >= num) continue;
    if (ladle__arg_given(n, arg_of(i, AT)) &&
        (ladle__arg_given(n, arg_of(i, LO)) || ladle__arg_given(n, arg_of(i, HI)) ||
         ladle__arg_given(n, arg_of(i, STEP))))
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "subscript %d: argument 'at_%d' cannot be combined with "
                           "a slice (lo_%d, hi_%d, step_%d)", i, i, i, i, i);
    st->subscript_of[ellipsis >= 0 && i >= ellipsis ? ndim - (num - i) : i] = i;
  }
  ladle__out_desc *out = &n->out[0];
  *out = (ladle__out_desc){.dtype = n->in[0].dtype};
  int keep_layout = (int)strlen(n->in[0].layout) == ndim;
  for (int d = 0; d < ndim; d++) {
    int i = st->subscript_of[d];
    if (i >= 0 && ladle__arg_given(n, arg_of(i, AT))) continue;
    if (keep_layout) out->layout[out->ndim] = n->in[0].layout[d];
    out->ndim++;
  }
  if (ladle__math_class_of(out->dtype) < 0)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "input type %s is not supported",
                         ladle_dtype_name(out->dtype));
  st->e = (ladle__math_expr){.op = LADLE_MATH_PLUS, .cls = ladle__math_class_of(out->dtype), .arity = 1,
                             .in_dtype = {out->dtype}, .out_dtype = out->dtype};
  return LADLE_OK;
}

static void subscript_fini(ladle__node *n) { free(n->state); }

static ladle_status subscript_setup(ladle__node *n, ladle__sample *s) {
  const subscript_state *st = n->state;
  subscript_sample *p = s->state;
  ladle__tensor in = ladle__input(n, s, 0);
  int64_t stride[LADLE_MAX_NDIM], acc = 1;
  for (int d = in.ndim - 1; d >= 0; d--) {
    stride[d] = acc;
    acc *= in.shape[d];
  }
  memset(p, 0, sizeof *p);
  for (int d = 0; d < in.ndim; d++) {
    const int i = st->subscript_of[d];
    const int64_t len = in.shape[d];
    if (i >= 0 && ladle__arg_given(n, arg_of(i, AT))) {
      int64_t at = ladle__arg_int(n, s, arg_of(i, AT));
      if (at < -len || at >= len)
        return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "index %lld is out of range for dimension %d of "
                             "extent %lld%s%s", (long long)at, d, (long long)len, s->name ? " in sample " : "",
                             s->name ? s->name : "");
      p->offset += (at < 0 ? at + len : at) * stride[d];
      continue;
    }
    int64_t step = i >= 0 && ladle__arg_given(n, arg_of(i, STEP)) ? ladle__arg_int(n, s, arg_of(i, STEP)) : 1;
    if (step == 0) return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'step_%d' must not be 0", i);
    /* Python's slice.indices(len). */
    int64_t lo = step > 0 ? 0 : len - 1, hi = step > 0 ? len : -1;
    if (i >= 0 && ladle__arg_given(n, arg_of(i, LO))) {
      lo = ladle__arg_int(n, s, arg_of(i, LO));
      if (lo < 0) lo += len;
      lo = step > 0 ? (lo < 0 ? 0 : lo > len ? len : lo) : (lo < -1 ? -1 : lo > len - 1 ? len - 1 : lo);
    }
    if (i >= 0 && ladle__arg_given(n, arg_of(i, HI))) {
      hi = ladle__arg_int(n, s, arg_of(i, HI));
      if (hi < 0) hi += len;
      hi = step > 0 ? (hi < 0 ? 0 : hi > len ? len : hi) : (hi < -1 ? -1 : hi > len - 1 ? len - 1 : hi);
    }
    int64_t count = step > 0 ? (hi - lo + step - 1) / step : (lo - hi - step - 1) / -step;
    if (count < 0) count = 0;
    p->offset += count ? lo * stride[d] : 0;
    p->shape[p->ndim] = count;
    p->strides[p->ndim++] = step * stride[d];
  }
  ladle__set_shape(n, s, 0, p->shape);
  return LADLE_OK;
}

static ladle_status describe(ladle__node *n, int slot, ladle__math_sample *d) {
  const subscript_sample *p = (const subscript_sample *)(n->sample_states + (size_t)slot * sizeof *p);
  memset(d, 0, sizeof *d);
  d->out = ladle_batch_data(n->out_batches[0], slot);
  d->in[0] = (const uint8_t *)ladle_batch_data(n->in_batches[0], slot) +
             p->offset * (int64_t)ladle_dtype_size(n->in[0].dtype);
  d->ndim = p->ndim;
  memcpy(d->shape, p->shape, sizeof d->shape);
  memcpy(d->strides[0], p->strides, sizeof p->strides);
  ladle__math_collapse(d, 1);
  return LADLE_OK;
}

static ladle_status subscript_run(ladle__node *n, ladle__sample *s) {
  ladle__math_sample d;
  LADLE_MATH_PASS(describe(n, s->slot, &d));
  ladle__math_run(&((const subscript_state *)n->state)->e, &d);
  return LADLE_OK;
}

#ifdef LADLE_HAVE_CUDA
static ladle_status subscript_run_batch(ladle__node *n, ladle__gpu *g) {
  ladle__math_prog prog;
  ladle__math_prog_of(&((const subscript_state *)n->state)->e, &prog);
  return ladle__math_run_batch(n, g, &prog, describe);
}
#define SUBSCRIPT_RUN_BATCH subscript_run_batch
#else
#define SUBSCRIPT_RUN_BATCH NULL
#endif

const ladle__op_def ladle__op_tensor_subscript = {
    .schema = {.name = "_tensor_subscript",
               .doc = "DataNode subscripts (DALI's): x[1:3, ::2], x[-1], x[i] with i a per-sample DataNode, and "
                      "(ladle only) x[..., 0]. Out-of-range slice bounds clamp; an out-of-range index is an error.",
               .min_inputs = 1, .max_inputs = 1, .num_outputs = 1,
               .devices = LADLE_ON_CPU_GPU,
               .num_args = NUM_ARGS, .args = subscript_args},
    .sample_state_size = sizeof(subscript_sample),
    .init = subscript_init,
    .fini = subscript_fini,
    .setup = subscript_setup,
    .run = subscript_run,
    .run_batch = SUBSCRIPT_RUN_BATCH,
};
