/* The arithmetic of fn.reductions.*, written once for the CPU operator
 * (reductions.c) and the CUDA kernels (reduce_kernels.cu), so that both give
 * the same bits. A sample's elements fall into groups (one per output
 * element: the indices of the kept axes); a group's members (the indices of
 * the reduced axes, in memory order) are taken LADLE__REDUCE_CHUNK at a time,
 * each chunk accumulated in order, then the chunk results combined in order.
 * Integer sums, minima and maxima are exact (int64 / uint64); everything else
 * accumulates in double, without fused multiply-adds. */
#ifndef LADLE_OPS_REDUCTIONS_REDUCE_CORE_H
#define LADLE_OPS_REDUCTIONS_REDUCE_CORE_H

#include <math.h>
#include <stdint.h>

#include "ops/kernels/dtype.h"

#define LADLE__REDUCE_CHUNK 1024

enum { LADLE__RED_SUM, LADLE__RED_MIN, LADLE__RED_MAX, LADLE__RED_MEAN, LADLE__RED_MEAN_SQUARE, LADLE__RED_RMS,
       LADLE__RED_STD_DEV, LADLE__RED_VARIANCE };

/* One chunk's or group's running value: which member is used depends on the
 * accumulation mode (ladle__reduce_mode). */
typedef union ladle__reduce_acc {
  int64_t i;
  uint64_t u;
  double f;
} ladle__reduce_acc;

enum { LADLE__ACC_I64, LADLE__ACC_U64, LADLE__ACC_F64 };

typedef struct ladle__reduce_desc {
  const void *in;
  void *out;
  const float *mean;         /* std_dev / variance: 1 value or one per group */
  ladle__reduce_acc *part;   /* groups * chunks chunk results (GPU: device scratch) */
  int in_type, out_type, kind, mode, ndim, mean_count;
  int reduced[8];
  int64_t shape[8];
  int64_t groups, members, chunks;
  double divisor;            /* members (mean, mean_square, rms) or members - ddof */
} ladle__reduce_desc;

#if defined(__CUDA_ARCH__)
#define LADLE__RD_ADD(a, b) __dadd_rn((a), (b))
#define LADLE__RD_SUB(a, b) __dsub_rn((a), (b))
#define LADLE__RD_MUL(a, b) __dmul_rn((a), (b))
#define LADLE__RD_DIV(a, b) __ddiv_rn((a), (b))
#else
#define LADLE__RD_ADD(a, b) ((a) + (b))
#define LADLE__RD_SUB(a, b) ((a) - (b))
#define LADLE__RD_MUL(a, b) ((a) * (b))
#define LADLE__RD_DIV(a, b) ((a) / (b))
#endif

/* How kind `kind` accumulates elements of type `t`. */
LADLE__DT_INLINE int ladle__reduce_mode(int kind, int t) {
  if (kind > LADLE__RED_MEAN || ladle__dtype_is_float(t)) return LADLE__ACC_F64;
  return t == LADLE_UINT64 ? LADLE__ACC_U64 : LADLE__ACC_I64;
}

/* The element offset of member m of group g. */
LADLE__DT_INLINE int64_t ladle__reduce_offset(const ladle__reduce_desc *d, int64_t g, int64_t m) {
  int64_t off = 0, stride = 1;
  for (int k = d->ndim - 1; k >= 0; k--) {
    int64_t idx;
    if (d->reduced[k]) {
      idx = m % d->shape[k];
      m /= d->shape[k];
    } else {
      idx = g % d->shape[k];
      g /= d->shape[k];
    }
    off += idx * stride;
    stride *= d->shape[k];
  }
  return off;
}

LADLE__DT_INLINE ladle__reduce_acc ladle__reduce_fold(const ladle__reduce_desc *d, ladle__reduce_acc a,
                                                       ladle__reduce_acc b, int first) {
  if (first) return b;
  switch (d->mode) {
    case LADLE__ACC_I64:
      a.i = d->kind == LADLE__RED_MIN ? (b.i < a.i ? b.i : a.i)
            : d->kind == LADLE__RED_MAX ? (b.i > a.i ? b.i : a.i)
                                        : (int64_t)((uint64_t)a.i + (uint64_t)b.i);
      break;
    case LADLE__ACC_U64:
      a.u = d->kind == LADLE__RED_MIN ? (b.u < a.u ? b.u : a.u) : d->kind == LADLE__RED_MAX ? (b.u > a.u ? b.u : a.u) : a.u + b.u;
      break;
    default:
      a.f = d->kind == LADLE__RED_MIN ? (b.f < a.f ? b.f : a.f)
            : d->kind == LADLE__RED_MAX ? (b.f > a.f ? b.f : a.f)
                                        : LADLE__RD_ADD(a.f, b.f);
      break;
  }
  return a;
}

/* The value of the element at offset `at` (of group g). */
LADLE__DT_INLINE ladle__reduce_acc ladle__reduce_term(const ladle__reduce_desc *d, int64_t g, size_t at) {
  ladle__reduce_acc v;
  if (d->mode == LADLE__ACC_I64) {
    v.i = ladle__load_i64(d->in, at, d->in_type);
  } else if (d->mode == LADLE__ACC_U64) {
    v.u = ladle__load_u64(d->in, at, d->in_type);
  } else {
    double x = ladle__load_as_f64(d->in, at, d->in_type);
    if (d->kind == LADLE__RED_STD_DEV || d->kind == LADLE__RED_VARIANCE)
      x = LADLE__RD_SUB(x, (double)d->mean[d->mean_count == 1 ? 0 : g]);
    if (d->kind >= LADLE__RED_MEAN_SQUARE) x = LADLE__RD_MUL(x, x);
    v.f = x;
  }
  return v;
}

/* Chunk c of group g: its members accumulated in order, walked with an
 * odometer over the reduced axes (the first member's offset computed once). */
LADLE__DT_INLINE ladle__reduce_acc ladle__reduce_chunk(const ladle__reduce_desc *d, int64_t g, int64_t c) {
  int64_t begin = c * LADLE__REDUCE_CHUNK, end = begin + LADLE__REDUCE_CHUNK;
  if (end > d->members) end = d->members;
  int64_t ext[8], stride[8], idx[8], s = 1, rest = begin;
  int k = 0;
  for (int a = d->ndim - 1; a >= 0; a--) {
    if (d->reduced[a]) {
      ext[k] = d->shape[a];
      stride[k] = s;
      idx[k] = rest % d->shape[a];
      rest /= d->shape[a];
      k++;
    }
    s *= d->shape[a];
  }
  int64_t at = ladle__reduce_offset(d, g, begin);
  ladle__reduce_acc a;
  a.i = 0;
  for (int64_t m = begin; m < end; m++) {
    a = ladle__reduce_fold(d, a, ladle__reduce_term(d, g, (size_t)at), m == begin);
    for (int q = 0; q < k; q++) { /* next member: innermost reduced axis first */
      at += stride[q];
      if (++idx[q] < ext[q]) break;
      at -= stride[q] * ext[q];
      idx[q] = 0;
    }
  }
  return a;
}

/* Group g's result from its chunk results (d->part), stored as output element g. */
LADLE__DT_INLINE void ladle__reduce_finish(const ladle__reduce_desc *d, int64_t g) {
  const ladle__reduce_acc *p = d->part + g * d->chunks;
  ladle__reduce_acc a;
  a.i = 0;
  for (int64_t c = 0; c < d->chunks; c++) a = ladle__reduce_fold(d, a, p[c], c == 0);
  if (d->kind == LADLE__RED_SUM || d->kind == LADLE__RED_MIN || d->kind == LADLE__RED_MAX) {
    if (d->mode == LADLE__ACC_I64) ladle__store_i64(d->out, (size_t)g, d->out_type, a.i);
    else if (d->mode == LADLE__ACC_U64) ladle__store_u64(d->out, (size_t)g, d->out_type, a.u);
    else ladle__store_f64(d->out, (size_t)g, d->out_type, a.f);
    return;
  }
  double sum = d->mode == LADLE__ACC_I64 ? (double)a.i : d->mode == LADLE__ACC_U64 ? (double)a.u : a.f;
  double v = LADLE__RD_DIV(sum, d->divisor);
  if (d->kind == LADLE__RED_RMS || d->kind == LADLE__RED_STD_DEV) v = sqrt(v);
  ladle__store_f64(d->out, (size_t)g, d->out_type, v);
}

#endif
