/* Random strided-copy geometries for the tensor family's tests: anchors
 * inside and outside, permuted input strides, per-channel fills, every
 * element size. */
#ifndef LADLE_TEST_TENSOR_RANDOM_H
#define LADLE_TEST_TENSOR_RANDOM_H

#include <string.h>

#include "core/rng.h"
#include "ops/tensor/tensor_kernels.h"

static int64_t draw(ladle__rng *r, int64_t lo, int64_t hi) { return lo + (int64_t)(ladle__rng_u32(r) % (uint64_t)(hi - lo + 1)); }

/* A random desc (in/out pointers left NULL); *in_total, *out_total: elements. */
static ladle__strided_desc random_desc(ladle__rng *r, int64_t *in_total_out, int64_t *out_total_out) {
  static const int sizes[4] = {1, 2, 4, 8};
  ladle__strided_desc d;
  memset(&d, 0, sizeof d);
  d.ndim = (int)draw(r, 1, 4);
  d.elem_size = sizes[draw(r, 0, 3)];
  int64_t in_total = 1, out_total = 1;
  for (int k = 0; k < d.ndim; k++) {
    d.in_shape[k] = draw(r, 1, 6);
    d.shape[k] = draw(r, 0, 7);
    d.in_start[k] = draw(r, -3, 5);
    in_total *= d.in_shape[k];
    out_total *= d.shape[k];
  }
  int64_t perm[LADLE_MAX_NDIM] = {0}, strides[LADLE_MAX_NDIM] = {0}, shuffled[LADLE_MAX_NDIM] = {0};
  for (int k = 0; k < d.ndim; k++) perm[k] = k;
  if (draw(r, 0, 1) && d.ndim > 1) { /* transpose-like input strides */
    int a = (int)draw(r, 0, d.ndim - 1), b = (int)draw(r, 0, d.ndim - 1);
    int64_t x = perm[a];
    perm[a] = perm[b], perm[b] = x;
  }
  ladle__dense_strides(strides, d.in_shape, d.ndim);
  for (int k = 0; k < d.ndim; k++) shuffled[k] = d.in_shape[perm[k]];
  memcpy(d.in_shape, shuffled, sizeof shuffled);
  for (int k = 0; k < d.ndim; k++) d.in_stride[k] = strides[perm[k]];
  ladle__dense_strides(d.out_stride, d.shape, d.ndim);
  d.fill_dim = draw(r, 0, 1) ? (int)draw(r, 0, d.ndim - 1) : -1;
  d.num_fill = d.fill_dim >= 0 ? (int)draw(r, 1, LADLE_TENSOR_MAX_FILL) : 1;
  for (int i = 0; i < (int)sizeof d.fill; i++) d.fill[i] = (uint8_t)ladle__rng_u32(r);
  *in_total_out = in_total;
  *out_total_out = out_total;
  return d;
}

#endif
