/* Random strided-copy geometries for the tensor family's tests: anchors
 * inside and outside, permuted input strides, per-channel fills, every
 * element size. */
#ifndef LADLE_TEST_TENSOR_RANDOM_H
#define LADLE_TEST_TENSOR_RANDOM_H

#include <string.h>

#include "core/rng.h"
#include "ops/tensor/tensor_kernels.h"

static inline int64_t draw(ladle__rng *r, int64_t lo, int64_t hi) { return lo + (int64_t)(ladle__rng_u32(r) % (uint64_t)(hi - lo + 1)); }

/* A random desc (in/out pointers left NULL); *in_total, *out_total: elements. */
static inline ladle__strided_desc random_desc(ladle__rng *r, int64_t *in_total_out, int64_t *out_total_out) {
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

/* Geometries of the GPU copy's fast paths and their edges: dense innermost
 * dims of 1..65 elements; slices and pads whose bounds fall on or off
 * 2/4/8/16-byte boundaries (some outside the input); cat-like output strides
 * (a larger output); transposes; extent-1 dims; per-channel fills; pointers
 * off 16-byte alignment. *in_off, *out_off: element offsets of the buffers'
 * starts; *in_span, *out_span: elements from the buffers' bases, each at most
 * `limit` bytes. */
static inline ladle__strided_desc random_fast_desc(ladle__rng *r, int64_t limit, int64_t *in_off, int64_t *out_off,
                                                   int64_t *in_span, int64_t *out_span) {
  static const int sizes[4] = {1, 2, 4, 8};
  static const int64_t inner[12] = {1, 2, 3, 4, 7, 8, 16, 17, 24, 32, 64, 65};
  for (;;) {
    ladle__strided_desc d;
    memset(&d, 0, sizeof d);
    int nd = (int)draw(r, 1, 4), kind = (int)draw(r, 0, 3), axis = (int)draw(r, 0, nd - 1);
    int64_t orig[LADLE_MAX_NDIM], big[LADLE_MAX_NDIM], strides[LADLE_MAX_NDIM], perm[LADLE_MAX_NDIM];
    d.ndim = nd;
    d.elem_size = sizes[draw(r, 0, 3)];
    for (int k = 0; k < nd; k++) {
      orig[k] = k == nd - 1 ? inner[draw(r, 0, 11)] : draw(r, 0, 3) == 0 ? 1 : draw(r, 2, 9);
      perm[k] = k;
    }
    if (kind == 3 && nd > 1) { /* transpose */
      int a = (int)draw(r, 0, nd - 1), b = (int)draw(r, 0, nd - 1);
      int64_t x = perm[a];
      perm[a] = perm[b], perm[b] = x;
    }
    ladle__dense_strides(strides, orig, nd);
    for (int k = 0; k < nd; k++) {
      int64_t ext = orig[perm[k]];
      d.in_shape[k] = ext, d.in_stride[k] = strides[perm[k]], d.shape[k] = ext;
      if (kind == 0 && draw(r, 0, 1)) { /* slice, sometimes reaching outside */
        d.shape[k] = draw(r, 1, ext);
        d.in_start[k] = draw(r, 0, 3) ? draw(r, 0, ext - d.shape[k]) : draw(r, -9, ext);
      } else if (kind == 1 && draw(r, 0, 1)) { /* pad at the end (sometimes to a multiple of 8) */
        d.shape[k] = ext + draw(r, 0, 9);
        if (draw(r, 0, 1)) d.shape[k] = (d.shape[k] + 7) / 8 * 8;
      }
      big[k] = d.shape[k] + (kind == 2 && k == axis ? draw(r, 0, 5) : 0);
    }
    ladle__dense_strides(d.out_stride, big, nd);
    d.fill_dim = draw(r, 0, 2) == 0 ? (int)draw(r, 0, nd - 1) : -1;
    d.num_fill = d.fill_dim >= 0 ? (int)draw(r, 1, LADLE_TENSOR_MAX_FILL) : (int)draw(r, 0, 1);
    for (int i = 0; i < (int)sizeof d.fill; i++) d.fill[i] = (uint8_t)ladle__rng_u32(r);
    *in_off = draw(r, 0, 3) ? 0 : draw(r, 1, 5);
    *out_off = (draw(r, 0, 3) ? 0 : draw(r, 1, 5)) + (kind == 2 ? (big[axis] - d.shape[axis]) * d.out_stride[axis] : 0);
    *in_span = *in_off, *out_span = *out_off;
    int64_t in_total = 1, out_total = 1;
    for (int k = 0; k < nd; k++) in_total *= orig[k], out_total *= big[k];
    *in_span += in_total, *out_span += out_total;
    if (*in_span * d.elem_size <= limit && *out_span * d.elem_size <= limit) return d;
  }
}

/* The copies of one cat (stack = 0) or stack sample as the operators plan
 * them: k = 2..4 inputs of rank 1..3 (some empty along a cat's axis) joined
 * along a random axis into a dense output. d[i]'s in/out are left NULL; its
 * input starts at element in_offs[i] of the input buffer, its output at
 * element out_offs[i] of the output buffer (out_base added: a buffer start
 * off 16-byte alignment). *in_span, *out_span: elements used. Returns k. */
static inline int random_join(ladle__rng *r, int stack, int64_t limit, ladle__strided_desc *d, int64_t *in_offs,
                              int64_t *out_offs, int64_t *in_span, int64_t *out_span) {
  static const int sizes[4] = {1, 2, 4, 8};
  static const int64_t inner[8] = {1, 2, 3, 4, 7, 8, 16, 17};
  for (;;) {
    int nd = (int)draw(r, 1, 3), k = (int)draw(r, 2, 4), es = sizes[draw(r, 0, 3)];
    int axis = (int)draw(r, 0, stack ? nd : nd - 1), out_nd = nd + stack;
    int64_t base[LADLE_MAX_NDIM], out_shape[LADLE_MAX_NDIM], out_strides[LADLE_MAX_NDIM], sh[4][LADLE_MAX_NDIM];
    for (int i = 0; i < nd; i++) base[i] = i == nd - 1 ? inner[draw(r, 0, 7)] : draw(r, 1, 9);
    int64_t sum = 0;
    for (int j = 0; j < k; j++) {
      memcpy(sh[j], base, sizeof base);
      if (!stack) sh[j][axis] = draw(r, 0, 6);
      sum += stack ? 1 : sh[j][axis];
    }
    for (int i = 0, src = 0; i < out_nd; i++) out_shape[i] = i == axis ? (stack ? k : (src++, sum)) : base[src++];
    ladle__dense_strides(out_strides, out_shape, out_nd);
    int64_t in_at = draw(r, 0, 3), out_base = draw(r, 0, 3) ? 0 : draw(r, 1, 5), along = 0, out_total = 1;
    for (int i = 0; i < out_nd; i++) out_total *= out_shape[i];
    for (int j = 0; j < k; j++) {
      int64_t n = 1;
      for (int i = 0; i < nd; i++) n *= sh[j][i];
      ladle__strided_dense(&d[j], NULL, NULL, nd, es, sh[j], sh[j], NULL);
      for (int i = 0; i < nd; i++) d[j].out_stride[i] = out_strides[stack && i >= axis ? i + 1 : i];
      in_offs[j] = in_at;
      out_offs[j] = out_base + along * out_strides[axis];
      in_at += n + draw(r, 0, 2);
      along += stack ? 1 : sh[j][axis];
    }
    *in_span = in_at;
    *out_span = out_base + out_total;
    if (*in_span * es <= limit && *out_span * es <= limit) return k;
  }
}

/* A transpose of a random rank-3 input (every permutation, perm_index 0..5),
 * small and large extents (1..5 channels, up to 90 rows or columns); the
 * input starts at element *in_off, the output at *out_off. */
static inline ladle__strided_desc random_transpose3(ladle__rng *r, int perm_index, int64_t limit, int64_t *in_off,
                                                    int64_t *out_off, int64_t *in_span, int64_t *out_span) {
  static const int perms[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  static const int sizes[4] = {1, 2, 4, 8};
  for (;;) {
    int es = sizes[draw(r, 0, 3)];
    int64_t shape[3] = {draw(r, 1, 90), draw(r, 1, 90), draw(r, 0, 2) ? draw(r, 1, 5) : draw(r, 1, 70)};
    int64_t strides[3], out[3];
    ladle__dense_strides(strides, shape, 3);
    for (int k = 0; k < 3; k++) out[k] = shape[perms[perm_index][k]];
    ladle__strided_desc d;
    ladle__strided_dense(&d, NULL, NULL, 3, es, out, out, NULL);
    for (int k = 0; k < 3; k++) d.in_stride[k] = strides[perms[perm_index][k]];
    *in_off = draw(r, 0, 1) ? 0 : draw(r, 1, 5);
    *out_off = draw(r, 0, 1) ? 0 : draw(r, 1, 5);
    *in_span = *in_off + shape[0] * shape[1] * shape[2];
    *out_span = *out_off + shape[0] * shape[1] * shape[2];
    if (*in_span * es <= limit && *out_span * es <= limit) return d;
  }
}

#endif
