/* The arithmetic of fn.reductions.*, written once for the CPU operator
 * (reductions.c) and the CUDA kernels (reduce_kernels.cu), so that both give
 * the same bits. A sample's elements fall into groups (one per output
 * element: the indices of the kept axes); a group's members (the indices of
 * the reduced axes, in memory order) are taken LADLE__REDUCE_CHUNK at a time.
 * The order of a list of values (a chunk's members, then a group's chunk
 * results) is the order of one CUDA warp: lane l (of LADLE__REDUCE_LANES)
 * folds values l, l + 32, l + 64 ... in turn, starting from the identity
 * (ladle__reduce_identity), then the lanes are combined as a butterfly
 * (ladle__reduce_tree: lane l with lane l + 16, then + 8, ... + 1). The GPU
 * reads a chunk with neighbouring threads on neighbouring members
 * (coalesced); the CPU emulates the lanes in 32 accumulators.
 * Integer sums, minima and maxima are exact (int64 / uint64); everything else
 * accumulates in double, without fused multiply-adds. Float minima and
 * maxima propagate NaN whatever the order. */
#ifndef LADLE_OPS_REDUCTIONS_REDUCE_CORE_H
#define LADLE_OPS_REDUCTIONS_REDUCE_CORE_H

#include <math.h>
#include <stdint.h>

#include "ops/kernels/dtype.h"

#define LADLE__REDUCE_CHUNK 4096
#define LADLE__REDUCE_LANES 32

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

/* The value folding leaves unchanged, bit for bit: -0.0 for double sums
 * (x + -0.0 == x for every x, +0.0 included), the type's extremes for
 * minima and maxima. Lanes without a member hold it. */
LADLE__DT_INLINE ladle__reduce_acc ladle__reduce_identity(int kind, int mode) {
  ladle__reduce_acc a;
  if (mode == LADLE__ACC_I64) a.i = kind == LADLE__RED_MIN ? INT64_MAX : kind == LADLE__RED_MAX ? INT64_MIN : 0;
  else if (mode == LADLE__ACC_U64) a.u = kind == LADLE__RED_MIN ? UINT64_MAX : 0;
  else a.f = kind == LADLE__RED_MIN ? HUGE_VAL : kind == LADLE__RED_MAX ? -HUGE_VAL : -0.0;
  return a;
}

/* a folded with b (b the later value). */
LADLE__DT_INLINE ladle__reduce_acc ladle__reduce_fold(int kind, int mode, ladle__reduce_acc a, ladle__reduce_acc b) {
  switch (mode) {
    case LADLE__ACC_I64:
      a.i = kind == LADLE__RED_MIN ? (b.i < a.i ? b.i : a.i)
            : kind == LADLE__RED_MAX ? (b.i > a.i ? b.i : a.i)
                                     : (int64_t)((uint64_t)a.i + (uint64_t)b.i);
      break;
    case LADLE__ACC_U64:
      a.u = kind == LADLE__RED_MIN ? (b.u < a.u ? b.u : a.u) : kind == LADLE__RED_MAX ? (b.u > a.u ? b.u : a.u) : a.u + b.u;
      break;
    default:
      a.f = kind == LADLE__RED_MIN ? (b.f < a.f || b.f != b.f ? b.f : a.f)
            : kind == LADLE__RED_MAX ? (b.f > a.f || b.f != b.f ? b.f : a.f)
                                     : LADLE__RD_ADD(a.f, b.f);
      break;
  }
  return a;
}

/* The lanes v[0..LADLE__REDUCE_LANES) combined as the warp's butterfly
 * combines them (what lane 0 ends with; v is overwritten). */
LADLE__DT_INLINE ladle__reduce_acc ladle__reduce_tree(int kind, int mode, ladle__reduce_acc *v) {
  for (int off = LADLE__REDUCE_LANES / 2; off >= 1; off >>= 1)
    for (int l = 0; l < off; l++) v[l] = ladle__reduce_fold(kind, mode, v[l], v[l + off]);
  return v[0];
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

/* Chunk c of group g: its members walked in memory order with an odometer
 * over the reduced axes (the first member's offset computed once), member j
 * of the chunk folded into lane j % LADLE__REDUCE_LANES, then the tree. */
LADLE__DT_INLINE ladle__reduce_acc ladle__reduce_chunk(const ladle__reduce_desc *d, int64_t g, int64_t c) {
  int64_t begin = c * LADLE__REDUCE_CHUNK, end = begin + LADLE__REDUCE_CHUNK;
  if (end > d->members) end = d->members;
  int64_t ext[8], stride[8], idx[8], s = 1, rest = begin;
  int k = 0;
  for (int a = d->ndim - 1; a >= 0 && begin < end; a--) { /* no member: an extent may be 0 */
    if (d->reduced[a]) {
      ext[k] = d->shape[a];
      stride[k] = s;
      idx[k] = rest % d->shape[a];
      rest /= d->shape[a];
      k++;
    }
    s *= d->shape[a];
  }
  ladle__reduce_acc lane[LADLE__REDUCE_LANES];
  for (int l = 0; l < LADLE__REDUCE_LANES; l++) lane[l] = ladle__reduce_identity(d->kind, d->mode);
  int64_t at = begin < end ? ladle__reduce_offset(d, g, begin) : 0;
  for (int64_t m = begin; m < end; m++) {
    int l = (int)((m - begin) % LADLE__REDUCE_LANES);
    lane[l] = ladle__reduce_fold(d->kind, d->mode, lane[l], ladle__reduce_term(d, g, (size_t)at));
    for (int q = 0; q < k; q++) { /* next member: innermost reduced axis first */
      at += stride[q];
      if (++idx[q] < ext[q]) break;
      at -= stride[q] * ext[q];
      idx[q] = 0;
    }
  }
  return ladle__reduce_tree(d->kind, d->mode, lane);
}

/* Output element g (of `out`, type out_type) from the group's value a. */
LADLE__DT_INLINE void ladle__reduce_store(void *out, int out_type, int kind, int mode, double divisor, int64_t members,
                                          int64_t g, ladle__reduce_acc a) {
  if (kind == LADLE__RED_SUM || kind == LADLE__RED_MIN || kind == LADLE__RED_MAX) {
    if (mode == LADLE__ACC_I64) ladle__store_i64(out, (size_t)g, out_type, a.i);
    else if (mode == LADLE__ACC_U64) ladle__store_u64(out, (size_t)g, out_type, a.u);
    else ladle__store_f64(out, (size_t)g, out_type, members ? a.f : 0.0); /* no member: +0, not the identity */
    return;
  }
  double sum = mode == LADLE__ACC_I64 ? (double)a.i : mode == LADLE__ACC_U64 ? (double)a.u : a.f;
  double v = LADLE__RD_DIV(sum, divisor);
  if (kind == LADLE__RED_RMS || kind == LADLE__RED_STD_DEV) v = sqrt(v);
  ladle__store_f64(out, (size_t)g, out_type, v);
}

/* Group g's result from its chunk results (d->part: chunk c at
 * g * d->chunks + c, combined in the lane order), stored as output element g. */
LADLE__DT_INLINE void ladle__reduce_finish(const ladle__reduce_desc *d, int64_t g) {
  const ladle__reduce_acc *p = d->part + g * d->chunks;
  ladle__reduce_acc lane[LADLE__REDUCE_LANES];
  for (int l = 0; l < LADLE__REDUCE_LANES; l++) lane[l] = ladle__reduce_identity(d->kind, d->mode);
  for (int64_t c = 0; c < d->chunks; c++) {
    int l = (int)(c % LADLE__REDUCE_LANES);
    lane[l] = ladle__reduce_fold(d->kind, d->mode, lane[l], p[c]);
  }
  ladle__reduce_store(d->out, d->out_type, d->kind, d->mode, d->divisor, d->members, g,
                      ladle__reduce_tree(d->kind, d->mode, lane));
}

#endif
