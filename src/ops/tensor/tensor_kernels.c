/* CPU references of the tensor family's kernels (tensor_kernels.h). */
#include "ops/tensor/tensor_kernels.h"

#include <string.h>

void ladle__dense_strides(int64_t *strides, const int64_t *shape, int ndim) {
  int64_t s = 1;
  for (int d = ndim - 1; d >= 0; d--) {
    strides[d] = s;
    s *= shape[d];
  }
}

/* Fills `count` elements at `out` (stride out_stride) with fill value(s);
 * fill_base: the fill index of the first, fill_step: its step per element. */
static void fill_run(uint8_t *out, int64_t out_stride, int64_t count, const ladle__strided_desc *d, int64_t fill_base,
                     int fill_step) {
  int es = d->elem_size;
  for (int64_t i = 0; i < count; i++) {
    int64_t f = fill_step ? fill_base + i : fill_base;
    memcpy(out + i * out_stride * es, d->fill + (f < d->num_fill ? f : 0) * es, (size_t)es);
  }
}

void ladle__strided_coalesce(ladle__strided_desc *d) {
  int k = d->ndim - 2;
  while (k >= 0) {
    int64_t m = d->shape[k + 1];
    /* Dimension k + 1 wholly inside, dense under k in both, its index never a fill index. */
    int whole = d->in_start[k + 1] == 0 && d->in_shape[k + 1] == m;
    int dense = d->out_stride[k] == m * d->out_stride[k + 1] && d->in_stride[k] == m * d->in_stride[k + 1];
    int fills = d->num_fill > 1 && (d->fill_dim == k || d->fill_dim == k + 1);
    if (whole && dense && !fills && m > 0) {
      d->shape[k] *= m;
      d->in_shape[k] *= m;
      d->in_start[k] *= m;
      d->out_stride[k] = d->out_stride[k + 1];
      d->in_stride[k] = d->in_stride[k + 1];
      for (int j = k + 1; j < d->ndim - 1; j++) {
        d->shape[j] = d->shape[j + 1], d->in_shape[j] = d->in_shape[j + 1], d->in_start[j] = d->in_start[j + 1];
        d->out_stride[j] = d->out_stride[j + 1], d->in_stride[j] = d->in_stride[j + 1];
      }
      if (d->fill_dim > k + 1) d->fill_dim--;
      else if (d->fill_dim == k + 1 || d->fill_dim == k) d->fill_dim = -1; /* one fill value: any index reads it */
      d->ndim--;
    }
    k--;
    if (k >= d->ndim - 1) k = d->ndim - 2;
  }
}

void ladle__strided_copy(const ladle__strided_desc *d) {
  int nd = d->ndim, es = d->elem_size, last = nd - 1;
  if (nd == 0) { /* a scalar: always inside */
    memcpy(d->out, d->in, (size_t)es);
    return;
  }
  int64_t rows = 1;
  for (int k = 0; k < last; k++) rows *= d->shape[k];
  int64_t n = d->shape[last];
  if (n == 0) return;
  /* The inside range [lo, hi) of the innermost dimension. */
  int64_t lo = -d->in_start[last], hi = d->in_shape[last] - d->in_start[last];
  if (lo < 0) lo = 0;
  if (lo > n) lo = n;
  if (hi > n) hi = n;
  if (hi < lo) hi = lo;
  int64_t idx[LADLE_MAX_NDIM] = {0};
  for (int64_t r = 0; r < rows; r++) {
    uint8_t *out = d->out;
    const uint8_t *in = d->in;
    int inside = 1;
    int64_t out_off = 0, in_off = 0, fill_index = 0;
    for (int k = 0; k < last; k++) {
      int64_t c = d->in_start[k] + idx[k];
      inside &= c >= 0 && c < d->in_shape[k];
      out_off += idx[k] * d->out_stride[k];
      in_off += c * d->in_stride[k];
      if (k == d->fill_dim) fill_index = idx[k];
    }
    uint8_t *o = out + out_off * es;
    int64_t os = d->out_stride[last], is = d->in_stride[last];
    int fill_step = d->fill_dim == last;
    if (!inside) {
      fill_run(o, os, n, d, fill_step ? 0 : fill_index, fill_step);
    } else {
      fill_run(o, os, lo, d, fill_step ? 0 : fill_index, fill_step);
      const uint8_t *src = in + (in_off + (d->in_start[last] + lo) * is) * es;
      uint8_t *dst = o + lo * os * es;
      if (os == 1 && is == 1)
        memcpy(dst, src, (size_t)((hi - lo) * es));
      else
        for (int64_t i = 0; i < hi - lo; i++) memcpy(dst + i * os * es, src + i * is * es, (size_t)es);
      fill_run(o + hi * os * es, os, n - hi, d, fill_step ? hi : fill_index, fill_step);
    }
    for (int k = last - 1; k >= 0; k--) { /* next row */
      if (++idx[k] < d->shape[k]) break;
      idx[k] = 0;
    }
  }
}

/* An integer input element as int64 (types without a class index read as -1). */
static int64_t int_at(const void *p, ladle_dtype t, int64_t i) {
  switch (t) {
    case LADLE_UINT8: return ((const uint8_t *)p)[i];
    case LADLE_INT32: return ((const int32_t *)p)[i];
    case LADLE_INT64: return ((const int64_t *)p)[i];
    default: return -1;
  }
}

void ladle__one_hot(const ladle__one_hot_desc *d, ladle_dtype in_type, int64_t num_classes, int elem_size,
                    const void *on, const void *off) {
  uint8_t *out = d->out;
  for (int64_t o = 0; o < d->outer; o++)
    for (int64_t c = 0; c < num_classes; c++)
      for (int64_t i = 0; i < d->inner; i++) {
        int64_t v = int_at(d->in, in_type, o * d->inner + i);
        memcpy(out + ((o * num_classes + c) * d->inner + i) * elem_size, v == c ? on : off, (size_t)elem_size);
      }
}

void ladle__lookup(const ladle__lookup_desc *d, ladle_dtype in_type, int elem_size, const void *table,
                   int64_t table_size, const void *fallback) {
  uint8_t *out = d->out;
  for (int64_t i = 0; i < d->count; i++) {
    int64_t v = int_at(d->in, in_type, i);
    const void *src = v >= 0 && v < table_size ? (const uint8_t *)table + v * elem_size : fallback;
    memcpy(out + i * elem_size, src, (size_t)elem_size);
  }
}
