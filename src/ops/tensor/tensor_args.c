/* Shared helpers of the tensor family (tensor_args.h). */
#include "ops/tensor/tensor_args.h"

#include <string.h>

#include "ops/geometry/normalize_kernel.h"

static double elem_at(const ladle_batch *b, int slot, int64_t i) {
  const void *p = ladle_batch_data(b, slot);
  switch (b->dtype) {
    case LADLE_UINT8: return ((const uint8_t *)p)[i];
    case LADLE_INT32: return ((const int32_t *)p)[i];
    case LADLE_INT64: return (double)((const int64_t *)p)[i];
    case LADLE_FLOAT32: return ((const float *)p)[i];
    default: return 0;
  }
}

int ladle__tensor_list(const ladle__node *n, const ladle__sample *s, int arg, double *out, int max) {
  const ladle__arg *a = &n->args[arg];
  const char *name = n->def->schema.args[arg].name;
  int count = 0;
  if (a->source >= 0 && s) {
    const ladle_batch *b = n->source_batches[a->source];
    int64_t elems = ladle__batch_sample_elems(b, s->slot);
    if (elems > max) {
      ladle__op_fail(n, LADLE_ERROR_INVALID_ARGUMENT, "argument '%s': %lld values, at most %d", name,
                     (long long)elems, max);
      return -2;
    }
    for (int64_t i = 0; i < elems; i++) out[i] = elem_at(b, s->slot, i);
    return (int)elems;
  }
  if (!a->given && a->value.count == 0) return -1;
  const ladle_value *v = &a->value;
  count = v->count;
  if (count > max) {
    ladle__op_fail(n, LADLE_ERROR_INVALID_ARGUMENT, "argument '%s': %d values, at most %d", name, count, max);
    return -2;
  }
  for (int i = 0; i < count; i++)
    switch (v->type) {
      case LADLE_ARG_INTS: out[i] = (double)v->u.ints[i]; break;
      case LADLE_ARG_FLOATS: out[i] = v->u.floats[i]; break;
      case LADLE_ARG_FLOAT: out[i] = v->u.f; break;
      default: out[i] = (double)v->u.i; break;
    }
  return count;
}

ladle_status ladle__tensor_axes(const ladle__node *n, const ladle__sample *s, int axes_arg, int names_arg, int ndim,
                                const char *layout, int allow_negative, int *axes, int *count) {
  const ladle_arg_schema *args = n->def->schema.args;
  const char *names = names_arg >= 0 ? ladle__arg_string(n, names_arg) : NULL;
  if (names && !names[0]) names = NULL;
  *count = -1;
  if (names) {
    if (axes_arg >= 0 && ladle__arg_given(n, axes_arg))
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "give either '%s' or '%s', not both", args[axes_arg].name,
                           args[names_arg].name);
    int k = 0;
    for (; names[k]; k++) {
      const char *at = layout ? strchr(layout, names[k]) : NULL;
      if (!at || !layout[0])
        return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument '%s': axis '%c' is not in the input layout \"%s\"",
                             args[names_arg].name, names[k], layout ? layout : "");
      axes[k] = (int)(at - layout);
    }
    *count = k;
    return LADLE_OK;
  }
  if (axes_arg < 0) return LADLE_OK;
  double v[LADLE_TENSOR_MAX_LIST];
  int c = ladle__tensor_list(n, s, axes_arg, v, LADLE_TENSOR_MAX_LIST);
  if (c == -2) return LADLE_ERROR_INVALID_ARGUMENT;
  if (c < 0) return LADLE_OK;
  for (int k = 0; k < c; k++) {
    int64_t a = (int64_t)v[k];
    if (allow_negative && a < 0) a += ndim;
    if (a < 0 || a >= ndim)
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument '%s': axis %lld is out of range for %d dimensions",
                           args[axes_arg].name, (long long)v[k], ndim);
    for (int j = 0; j < k; j++)
      if (axes[j] == (int)a)
        return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument '%s': axis %lld is given twice",
                             args[axes_arg].name, (long long)v[k]);
    axes[k] = (int)a;
  }
  *count = c;
  return LADLE_OK;
}

void ladle__strided_dense(ladle__strided_desc *d, void *out, const void *in, int ndim, int elem_size,
                          const int64_t *shape, const int64_t *in_shape, const int64_t *in_start) {
  memset(d, 0, sizeof *d);
  d->out = out;
  d->in = in;
  d->ndim = ndim;
  d->elem_size = elem_size;
  d->fill_dim = -1;
  memcpy(d->shape, shape, sizeof(int64_t) * ndim);
  memcpy(d->in_shape, in_shape, sizeof(int64_t) * ndim);
  if (in_start) memcpy(d->in_start, in_start, sizeof(int64_t) * ndim);
  ladle__dense_strides(d->out_stride, shape, ndim);
  ladle__dense_strides(d->in_stride, in_shape, ndim);
}

ladle_status ladle__tensor_same_shape_setup(ladle__node *n, ladle__sample *s) {
  ladle__set_shape(n, s, 0, ladle__input(n, s, 0).shape);
  return LADLE_OK;
}

void ladle__tensor_value(void *out, ladle_dtype dtype, double value) {
  float f = (float)value;
  memset(out, 0, 8);
  if (dtype == LADLE_INT64 && value == value) { /* beyond float's exact integers */
    int64_t i = value >= 9.2e18 ? INT64_MAX : value <= -9.2e18 ? INT64_MIN : (int64_t)value;
    memcpy(out, &i, sizeof i);
    return;
  }
  /* Through an aligned value: callers may keep `out` in a byte array (readers.numpy's fill). */
  uint64_t value8 = 0;
  ladle__convert(&value8, dtype, &f, LADLE_FLOAT32, 1);
  memcpy(out, &value8, sizeof value8);
}

ladle_status ladle__strided_run(ladle__node *n, ladle__sample *s, ladle__strided_plan plan, int max) {
  ladle__strided_desc *d = NULL;
  ladle_status st = ladle__scratch(n, s, sizeof *d * (size_t)max, (void **)&d);
  if (st != LADLE_OK) return st;
  int count = plan(n, s->slot, d, max);
  for (int i = 0; i < count; i++) {
    ladle__strided_coalesce(&d[i]);
    ladle__strided_copy(&d[i]);
  }
  return LADLE_OK;
}

ladle_status ladle__strided_run_batch(ladle__node *n, ladle__gpu *g, ladle__strided_plan plan, int max) {
#ifdef LADLE_HAVE_CUDA
  int batch = n->config->batch_size, count = 0;
  ladle__strided_desc *d = NULL;
  /* run_batch runs between parallel passes: worker 0's scratch is free. */
  ladle_status st = ladle__scratch(n, &(ladle__sample){.worker = 0}, sizeof *d * (size_t)batch * max, (void **)&d);
  for (int i = 0; st == LADLE_OK && i < batch; i++) count += plan(n, i, d + count, max);
  for (int i = 0; i < count; i++) ladle__strided_coalesce(&d[i]);
  void *host = NULL, *dev = NULL;
  size_t bytes = ladle__gpu_strided_param_bytes(count);
  if (st == LADLE_OK && count) st = ladle__gpu_params(g, bytes, &host, &dev);
  if (st == LADLE_OK && count) st = ladle__gpu_strided_copy(d, count, host, dev, bytes, g->stream);
  return st;
#else
  (void)plan, (void)max, (void)g;
  return LADLE_OP_FAIL(n, LADLE_ERROR_NOT_AVAILABLE, "this build of ladle has no CUDA support");
#endif
}
