/* CUDA versions of the tensor family's kernels (tensor_kernels.h): one launch
 * per batch and kernel, one grid row (blockIdx.y) per job or sample. The
 * batch's strided copies are planned on the host (plan_batch) into three
 * kernels: rows_kernel (copies that merge to rows of segments: copy, slice,
 * pad, and cat/stack with one job per sample), transpose_kernel (a small
 * dimension swapped with a large one through a shared-memory tile: HWC <->
 * CHW) and strided_kernel (any other geometry, per-element index arithmetic).
 * They move bytes only, so they agree with the CPU references bit for bit. */
#ifndef LADLE_HAVE_CUDA
#define LADLE_HAVE_CUDA 1
#endif

#include "ops/tensor/tensor_kernels.h"

#include <stdlib.h>
#include <string.h>

extern "C" {
#include "core/error.h"
}
#include "cuda/runtime.h"

/* Unrolled in device code (host compilers do not know the pragma). */
#ifdef __CUDA_ARCH__
#define DEVICE_UNROLL _Pragma("unroll")
#else
#define DEVICE_UNROLL
#endif

namespace {

enum { THREADS = 256, MAX_BLOCKS = 4096 };

__device__ __forceinline__ void copy_elem(uint8_t *dst, const uint8_t *src, int es) {
  switch (es) {
    case 1: *dst = *src; break;
    case 2: *(uint16_t *)dst = *(const uint16_t *)src; break;
    case 4: *(uint32_t *)dst = *(const uint32_t *)src; break;
    case 8: *(uint64_t *)dst = *(const uint64_t *)src; break;
    default:
      for (int b = 0; b < es; b++) dst[b] = src[b];
  }
}

/* The strided copy as launched: the host (plan_copy) drops the extent-1
 * dimensions that always read inside, merges the dimensions that are
 * contiguous in both input and output into one, and, where the innermost
 * dimension is dense in both and its bounds and every stride allow, moves
 * 2/4/8/16-byte units of several elements instead of single elements (a unit
 * then lies wholly inside or wholly outside the input); a dense copy of a
 * length that is no multiple of 16 bytes goes as two: 16-byte units and the
 * rest. Samples whose units and offsets fit in 31 bits index with 32-bit
 * arithmetic and divide by precomputed multipliers (no 64-bit division in
 * the loop). Every element lands where ladle__strided_copy puts it, so
 * outputs agree bit for bit. */
enum { MAX_UNIT = 16 };

struct __align__(16) gdesc {
  uint8_t fill[LADLE_TENSOR_MAX_FILL * MAX_UNIT]; /* fill value f, repeated to a unit, at f * MAX_UNIT */
  uint8_t *out;
  const uint8_t *in;
  long long total;                                /* units */
  int ndim, unit, fill_dim, num_fill, narrow;     /* unit: bytes; narrow: 32-bit indexing */
  long long shape[LADLE_MAX_NDIM], out_stride[LADLE_MAX_NDIM], in_stride[LADLE_MAX_NDIM]; /* in units */
  long long in_start[LADLE_MAX_NDIM], in_shape[LADLE_MAX_NDIM];
  unsigned magic[LADLE_MAX_NDIM];
  int shift[LADLE_MAX_NDIM];
};

__host__ __device__ __forceinline__ unsigned mulhi32(unsigned a, unsigned b) {
#ifdef __CUDA_ARCH__
  return __umulhi(a, b);
#else
  return (unsigned)(((unsigned long long)a * b) >> 32);
#endif
}

/* Unit e of copy d: *out_off (units), and 1 with *in_off when read from the
 * input, 0 with the fill index *fill when filled. 32-bit version: the plan
 * made sure every index, extent and in-range offset is below 2^31; e / shape
 * = (mulhi(e, magic) + e) >> shift (exact for e, shape < 2^31). */
__host__ __device__ __forceinline__ int locate32(const gdesc *d, unsigned e, unsigned *out_off, unsigned *in_off,
                                                 int *fill) {
  unsigned o = 0, p = 0;
  int inside = 1, f = 0;
  for (int k = d->ndim - 1; k >= 0; k--) {
    unsigned q = (mulhi32(e, d->magic[k]) + e) >> d->shift[k];
    unsigned i = e - q * (unsigned)d->shape[k];
    e = q;
    int c = (int)d->in_start[k] + (int)i;
    inside &= c >= 0 && c < (int)d->in_shape[k];
    o += i * (unsigned)d->out_stride[k];
    p += (unsigned)c * (unsigned)d->in_stride[k]; /* wraps only where outside (then unused) */
    if (k == d->fill_dim) f = (int)i;
  }
  *out_off = o, *in_off = p, *fill = f;
  return inside;
}

__host__ __device__ __forceinline__ int locate64(const gdesc *d, long long e, long long *out_off, long long *in_off,
                                                 int *fill) {
  long long o = 0, p = 0;
  int inside = 1, f = 0;
  for (int k = d->ndim - 1; k >= 0; k--) {
    long long q = e / d->shape[k], i = e - q * d->shape[k];
    e = q;
    long long c = d->in_start[k] + i;
    inside &= c >= 0 && c < d->in_shape[k];
    o += i * d->out_stride[k];
    p += c * d->in_stride[k];
    if (k == d->fill_dim) f = (int)i;
  }
  *out_off = o, *in_off = p, *fill = f;
  return inside;
}

__host__ __device__ __forceinline__ const uint8_t *fill_of(const gdesc *d, int f) {
  return d->fill + (f < d->num_fill ? f : 0) * MAX_UNIT;
}

/* ITEMS units per thread and step, their loads issued before their stores. */
enum { ITEMS = 4 };

template <typename U>
__device__ __forceinline__ U unit_at(const gdesc *d, long long p, int inside, int f) {
  return inside ? ((const U *)d->in)[p] : *(const U *)fill_of(d, f);
}

template <typename U>
__device__ void strided_units(const gdesc *d) {
  int f;
  U v[ITEMS];
  if (d->narrow) {
    const unsigned total = (unsigned)d->total, step = gridDim.x * blockDim.x; /* total < 2^31, step < 2^21 */
    unsigned o[ITEMS], p;
    for (unsigned e = blockIdx.x * blockDim.x + threadIdx.x; e < total; e += ITEMS * step) {
      DEVICE_UNROLL
      for (int i = 0; i < ITEMS; i++)
        if (e + i * step < total) {
          int inside = locate32(d, e + i * step, &o[i], &p, &f);
          v[i] = unit_at<U>(d, p, inside, f);
        }
      DEVICE_UNROLL
      for (int i = 0; i < ITEMS; i++)
        if (e + i * step < total) ((U *)d->out)[o[i]] = v[i];
    }
  } else {
    const long long step = (long long)gridDim.x * blockDim.x;
    long long o[ITEMS], p;
    for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < d->total; e += ITEMS * step) {
      DEVICE_UNROLL
      for (int i = 0; i < ITEMS; i++)
        if (e + i * step < d->total) {
          int inside = locate64(d, e + i * step, &o[i], &p, &f);
          v[i] = unit_at<U>(d, p, inside, f);
        }
      DEVICE_UNROLL
      for (int i = 0; i < ITEMS; i++)
        if (e + i * step < d->total) ((U *)d->out)[o[i]] = v[i];
    }
  }
}

/* Units of a size without a machine type (elements of 3, 5, 6, 7 bytes). */
struct odd_unit {};
template <>
__device__ void strided_units<odd_unit>(const gdesc *d) {
  long long o, p;
  int f;
  for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < d->total;
       e += (long long)gridDim.x * blockDim.x) {
    int inside = locate64(d, e, &o, &p, &f), u = d->unit;
    uint8_t *dst = d->out + o * u;
    const uint8_t *src = inside ? d->in + p * u : fill_of(d, f);
    for (int b = 0; b < u; b++) dst[b] = src[b];
  }
}

/* grid (blocks, copies): the copy's desc in shared memory. */
__global__ void __launch_bounds__(THREADS) strided_kernel(const gdesc *__restrict__ descs) {
  __shared__ gdesc sd;
  const uint4 *src = (const uint4 *)&descs[blockIdx.y];
  for (int i = threadIdx.x; i < (int)(sizeof(gdesc) / 16); i += blockDim.x) ((uint4 *)&sd)[i] = src[i];
  __syncthreads();
  const gdesc *d = &sd;
  switch (d->unit) { /* the same for the whole grid row */
    case 1: strided_units<uint8_t>(d); break;
    case 2: strided_units<uint16_t>(d); break;
    case 4: strided_units<uint32_t>(d); break;
    case 8: strided_units<unsigned long long>(d); break;
    case 16: strided_units<uint4>(d); break;
    default: strided_units<odd_unit>(d);
  }
}

struct plan_dim {
  long long shape, os, is, start, extent;
  int fill;
};

const long long NARROW_LIMIT = 0x7fffffffLL; /* 2^31 - 1 */

/* e / s = (mulhi(e, magic) + e) >> shift for e, s < 2^31 (s >= 1). */
void divisor32(unsigned s, unsigned *magic, int *shift) {
  int sh = 0;
  while (sh < 32 && (1ULL << sh) < s) sh++;
  *shift = sh;
  *magic = (unsigned)(((1ULL << 32) * ((1ULL << sh) - s)) / s + 1);
}

/* The dimensions of copy s as launched (dims, *nd, *in): extent-1 dims that
 * always read inside dropped (their offset moved into *in), dims contiguous
 * with their outer neighbour in both and always inside merged into it. The
 * number of elements (0: nothing to copy). */
long long merge_dims(const ladle__strided_desc *s, plan_dim *dims, int *nd_out, uintptr_t *in_out) {
  int es = s->elem_size, nd = 0;
  long long total = 1;
  for (int k = 0; k < s->ndim; k++) total *= s->shape[k];
  *nd_out = 0;
  *in_out = (uintptr_t)s->in;
  if (total <= 0) return 0;
  /* One fill value or none: every filled element gets fill[0]. */
  int fill_dim = s->num_fill > 1 && s->fill_dim >= 0 && s->fill_dim < s->ndim ? s->fill_dim : -1;
  uintptr_t in = (uintptr_t)s->in;
  for (int k = 0; k < s->ndim; k++) {
    plan_dim x = {s->shape[k], s->out_stride[k], s->in_stride[k], s->in_start[k], s->in_shape[k], k == fill_dim};
    if (x.shape == 1 && x.start >= 0 && x.start < x.extent) { /* index 0, always inside (fill index 0 = fill[0]) */
      in += (uintptr_t)(x.start * x.is * es);
      continue;
    }
    /* Merge into the outer neighbour when contiguous with it in both and
     * always inside itself: (c_outer * shape + i) indexes the merged pair. */
    if (nd > 0) {
      plan_dim *o = &dims[nd - 1];
      if (!o->fill && !x.fill && o->os == x.os * x.shape && o->is == x.is * x.shape && x.start == 0 &&
          x.shape <= x.extent) {
        o->start *= x.shape;
        o->extent *= x.shape;
        o->shape *= x.shape;
        o->os = x.os;
        o->is = x.is;
        continue;
      }
    }
    dims[nd++] = x;
  }
  *nd_out = nd;
  *in_out = in;
  return total;
}

/* g: the launch form of copy s for strided_kernel; 0 when it has no
 * elements. A copy that merges into one dense dimension read wholly inside,
 * 16-byte aligned but of a length that is not a multiple of 16 bytes, is cut:
 * g takes the longest 16-byte multiple, *tail (when tail is not NULL;
 * *has_tail = 1) the rest. */
int plan_copy(const ladle__strided_desc *s, gdesc *g, ladle__strided_desc *tail, int *has_tail) {
  memset(g, 0, sizeof *g);
  int es = s->elem_size, nd = 0;
  uintptr_t out = (uintptr_t)s->out, in = 0;
  plan_dim dims[LADLE_MAX_NDIM];
  if (has_tail) *has_tail = 0;
  if (!merge_dims(s, dims, &nd, &in)) return 0;
  if (tail && nd == 1 && MAX_UNIT % es == 0) {
    plan_dim *l = &dims[0];
    long long r = MAX_UNIT / es, keep = l->shape / r * r;
    if (l->os == 1 && l->is == 1 && !l->fill && l->start >= 0 && l->extent >= l->start + l->shape &&
        l->start % r == 0 && out % MAX_UNIT == 0 && in % MAX_UNIT == 0 && keep > 0 && keep < l->shape) {
      long long rest = l->shape - keep;
      memset(tail, 0, sizeof *tail);
      tail->out = (void *)(out + (uintptr_t)(keep * es));
      tail->in = (const void *)(in + (uintptr_t)((l->start + keep) * es));
      tail->ndim = 1;
      tail->elem_size = es;
      tail->fill_dim = -1;
      tail->shape[0] = tail->in_shape[0] = rest;
      tail->out_stride[0] = tail->in_stride[0] = 1;
      *has_tail = 1;
      l->shape = keep;
      l->extent = l->start + keep;
    }
  }
  int unit = es;
  if (nd > 0) {
    plan_dim *l = &dims[nd - 1];
    for (int v = MAX_UNIT; v > es; v /= 2) {
      long long r = v / es;
      int inside = l->start >= 0 && l->extent >= l->start + l->shape; /* the bound never falls in this dim */
      int ok = v % es == 0 && l->os == 1 && l->is == 1 && !l->fill && l->shape % r == 0 && l->start % r == 0 &&
               (inside || l->extent % r == 0) && out % (uintptr_t)v == 0 && in % (uintptr_t)v == 0;
      for (int k = 0; ok && k < nd - 1; k++) ok = dims[k].os % r == 0 && dims[k].is % r == 0;
      if (!ok) continue;
      unit = v;
      l->shape /= r;
      l->start /= r;
      l->extent = inside ? l->start + l->shape : l->extent / r;
      for (int k = 0; k < nd - 1; k++) dims[k].os /= r, dims[k].is /= r;
      break;
    }
  }
  g->out = (uint8_t *)out;
  g->in = (const uint8_t *)in;
  g->ndim = nd;
  g->unit = unit;
  g->num_fill = s->num_fill;
  g->fill_dim = -1;
  g->total = 1;
  long long out_max = 0, in_max = 0;
  int narrow = 1;
  for (int k = 0; k < nd; k++) {
    const plan_dim *x = &dims[k];
    g->shape[k] = x->shape, g->out_stride[k] = x->os, g->in_stride[k] = x->is;
    g->in_start[k] = x->start, g->in_shape[k] = x->extent;
    if (x->fill) g->fill_dim = k;
    g->total *= x->shape;
    long long st = x->start < 0 ? -x->start : x->start, ext = x->extent > 0 ? x->extent : 1;
    narrow = narrow && x->os >= 0 && x->is >= 0 && x->os <= NARROW_LIMIT && x->is <= NARROW_LIMIT &&
             x->shape <= NARROW_LIMIT && ext <= NARROW_LIMIT && st <= NARROW_LIMIT - x->shape;
    if (narrow) {
      out_max += (x->shape - 1) * x->os;
      in_max += (ext - 1) * x->is;
      narrow = out_max <= NARROW_LIMIT && in_max <= NARROW_LIMIT;
    }
  }
  g->narrow = narrow && g->total <= NARROW_LIMIT;
  for (int k = 0; g->narrow && k < nd; k++) divisor32((unsigned)g->shape[k], &g->magic[k], &g->shift[k]);
  for (int f = 0; f < LADLE_TENSOR_MAX_FILL; f++)
    for (int b = 0; b < unit; b += es) memcpy(g->fill + f * MAX_UNIT + b, s->fill + f * es, (size_t)es);
  return 1;
}

/* ------------------------------------------------------------------------ */
/* Row copies: copy, slice, pad, cat and stack of whole rows (rows_kernel)     */
/* ------------------------------------------------------------------------ */

/* Most copies of the family are, once merged, rows: `rows` output rows of
 * `len` bytes, `pitch` bytes apart, each the concatenation of segments taken
 * from a source row (its own pointer and pitch) or filled with the fill value.
 * A slice or pad is one copy (fill, data, fill in a row; rows outside the
 * input filled), a cat or stack of k inputs one job of k data segments (a cat
 * along the channels interleaves 3-byte pixels into 6-byte ones). One thread
 * writes 16 output bytes at a 16-byte aligned address: one vector store, its
 * bytes read as two aligned 16-byte loads shifted into place when they come
 * from one segment (any source alignment), else gathered byte by byte. Every
 * byte is the one ladle__strided_copy writes, so outputs agree bit for bit. */
/* Segments of a row: fill, data, fill of one copy, or up to MAX_SEG joined inputs. */
enum { MAX_SEG = 8, CHUNK = 16, TABLE = 64, NO_COL = 0xFFFF };

struct __align__(16) rseg {
  const uint8_t *src; /* data: the byte of column `off` in source row 0; NULL: fill */
  long long pitch, off, len;
};

struct __align__(16) rjob {
  uint8_t pattern[2 * CHUNK]; /* the fill value repeated: byte c of a row fills with pattern[c % 16] */
  uint8_t *out;
  long long rows, pitch, len, span; /* span: (rows - 1) * pitch + len bytes from out */
  long long row_start, row_ext;     /* row r reads source row r + row_start, if in [0, row_ext) */
  long long chunks;                 /* 16-byte aligned chunks covering the span */
  int nseg, head, narrow, joinable; /* head: out's offset from its 16-byte boundary */
  int table, pad_[3];               /* pitch <= TABLE: column c is byte colmap[c] & 255 of segment colmap[c] >> 8 */
  rseg seg[MAX_SEG];
  uint16_t colmap[TABLE]; /* NO_COL past len */
};

__host__ __device__ __forceinline__ unsigned funnel(unsigned lo, unsigned hi, unsigned sh) {
#ifdef __CUDA_ARCH__
  return __funnelshift_r(lo, hi, sh);
#else
  return (unsigned)((((unsigned long long)hi << 32) | lo) >> sh);
#endif
}

/* Bytes mis..mis + 15 of the 32 bytes x, y (little-endian words). */
__host__ __device__ __forceinline__ uint4 shift16(uint4 x, uint4 y, unsigned mis) {
  unsigned sh = (mis & 3) * 8;
  switch (mis >> 2) {
    case 0: return make_uint4(funnel(x.x, x.y, sh), funnel(x.y, x.z, sh), funnel(x.z, x.w, sh), funnel(x.w, y.x, sh));
    case 1: return make_uint4(funnel(x.y, x.z, sh), funnel(x.z, x.w, sh), funnel(x.w, y.x, sh), funnel(y.x, y.y, sh));
    case 2: return make_uint4(funnel(x.z, x.w, sh), funnel(x.w, y.x, sh), funnel(y.x, y.y, sh), funnel(y.y, y.z, sh));
    default: return make_uint4(funnel(x.w, y.x, sh), funnel(y.x, y.y, sh), funnel(y.y, y.z, sh), funnel(y.z, y.w, sh));
  }
}

/* 16 bytes from any address. On the device: the aligned 16 bytes holding p
 * and, when p is not aligned, the next 16 (which hold p[15]; both lie in the
 * allocation's 16-byte granules), shifted into place. On the host (the
 * emulation) exactly the 16 bytes. */
__host__ __device__ __forceinline__ uint4 load16(const uint8_t *p) {
#ifdef __CUDA_ARCH__
  uintptr_t a = (uintptr_t)p;
  unsigned mis = (unsigned)(a & 15);
  const uint4 *q = (const uint4 *)(a - mis);
  uint4 x = q[0];
  return mis ? shift16(x, q[1], mis) : x;
#else
  uint4 x;
  memcpy(&x, p, sizeof x);
  return x;
#endif
}

__host__ __device__ __forceinline__ int find_seg(const rjob *j, long long col) {
  int k = 0;
  while (k < j->nseg - 1 && col >= j->seg[k].off + j->seg[k].len) k++;
  return k;
}

/* The bytes of w whose bits are set in `written` to dst (16-byte aligned). */
__host__ __device__ __forceinline__ void store16_masked(uint8_t *dst, const unsigned *w, unsigned written) {
  if (written == 0xFFFFu) {
    *(uint4 *)dst = make_uint4(w[0], w[1], w[2], w[3]);
  } else {
    DEVICE_UNROLL
    for (int b = 0; b < CHUNK; b++)
      if (written >> b & 1) dst[b] = (uint8_t)(w[b >> 2] >> ((b & 3) * 8));
  }
}

/* Chunk t of job j: output bytes [16 t - head, 16 t - head + 16) from out. */
__host__ __device__ __forceinline__ void rows_chunk(const rjob *j, long long t) {
  const long long j0 = t * CHUNK - j->head, first = j0 < 0 ? 0 : j0;
  uint8_t *dst = j->out + j0; /* 16-byte aligned */
  long long r, col;
  if (j->narrow) {
    unsigned q = (unsigned)first / (unsigned)j->pitch;
    r = q, col = (long long)((unsigned)first - q * (unsigned)j->pitch);
  } else {
    r = first / j->pitch, col = first - r * j->pitch;
  }
  if (j0 >= 0 && j0 + CHUNK <= j->span && col + CHUNK <= j->len) { /* all 16 bytes in one row */
    long long c = r + j->row_start;
    const uint8_t *src = j->pattern + (col & 15);
    if (c >= 0 && c < j->row_ext) {
      const rseg *s = &j->seg[find_seg(j, col)];
      if (col + CHUNK > s->off + s->len) src = NULL;
      else if (s->src) src = s->src + c * s->pitch + (col - s->off);
    }
    if (src) {
      *(uint4 *)dst = load16(src);
      return;
    }
  }
  unsigned w[4] = {0, 0, 0, 0}, written = 0;
  const int b0 = (int)(first - j0);
  if (j->table && j->joinable && j->nseg <= 4) {
    /* Short rows of up to 4 data segments, every row inside (a channel cat
     * of 2..4 inputs): each segment's row pointer in a register, the segment
     * of a column found by comparisons (no table loads). */
    const long long c = r + j->row_start;
    const int n = j->nseg, len = (int)j->len, pitch = (int)j->pitch;
    const rseg *s0 = &j->seg[0], *s1 = &j->seg[n > 1 ? 1 : 0], *s2 = &j->seg[n > 2 ? 2 : 0];
    const rseg *s3 = &j->seg[n > 3 ? 3 : 0];
    const int o1 = n > 1 ? (int)s1->off : len, o2 = n > 2 ? (int)s2->off : len, o3 = n > 3 ? (int)s3->off : len;
    const uint8_t *p0 = s0->src + c * s0->pitch, *p1 = s1->src + c * s1->pitch - o1;
    const uint8_t *p2 = s2->src + c * s2->pitch - o2, *p3 = s3->src + c * s3->pitch - o3;
    int cc = (int)col;
    DEVICE_UNROLL
    for (int b = 0; b < CHUNK; b++) {
      if (b >= b0 && j0 + b < j->span) {
        if (cc < len) {
          const uint8_t *p = cc >= o3 ? p3 : cc >= o2 ? p2 : cc >= o1 ? p1 : p0;
          w[b >> 2] |= (unsigned)p[cc] << ((b & 3) * 8);
          written |= 1u << b;
        }
        if (++cc == pitch) cc = 0, p0 += s0->pitch, p1 += s1->pitch, p2 += s2->pitch, p3 += s3->pitch;
      }
    }
    store16_masked(dst, w, written);
    return;
  }
  if (j->table) { /* short rows (a small pad, a cat with fill): byte by byte through the column table */
    long long c = r + j->row_start;
    int valid = c >= 0 && c < j->row_ext, cc = (int)col;
    DEVICE_UNROLL
    for (int b = 0; b < CHUNK; b++) {
      if (b >= b0 && j0 + b < j->span) {
        unsigned e = j->colmap[cc];
        if (e != NO_COL) {
          const rseg *sg = &j->seg[e >> 8];
          const uint8_t *src = sg->src;
          unsigned v = valid && src ? src[c * sg->pitch + (e & 255)] : j->pattern[cc & 15];
          w[b >> 2] |= v << ((b & 3) * 8);
          written |= 1u << b;
        }
        if (++cc == (int)j->pitch) cc = 0, c++, valid = c >= 0 && c < j->row_ext;
      }
    }
    store16_masked(dst, w, written);
    return;
  }
  /* Byte by byte, in pieces: a run of one segment, fill or gap within a row. */
  unsigned idx = 0, mask = 0;
  long long rem = 0;
  const uint8_t *ptr = j->pattern;
  int skip = 0;
DEVICE_UNROLL
  for (int b = 0; b < CHUNK; b++) {
    if (b >= b0 && j0 + b < j->span) {
      if (rem == 0) {
        long long c = r + j->row_start;
        skip = col >= j->len;
        ptr = j->pattern, idx = (unsigned)(col & 15), mask = 15;
        if (skip) {
          rem = j->pitch - col;
        } else if (c < 0 || c >= j->row_ext) {
          rem = j->len - col;
        } else {
          const rseg *s = &j->seg[find_seg(j, col)];
          rem = s->off + s->len - col;
          if (s->src) ptr = s->src + c * s->pitch + (col - s->off), idx = 0, mask = ~0u;
        }
      }
      if (!skip) {
        w[b >> 2] |= (unsigned)ptr[idx & mask] << ((b & 3) * 8);
        written |= 1u << b;
      }
      idx++, rem--;
      if (++col == j->pitch) col = 0, r++;
    }
  }
  store16_masked(dst, w, written);
}

/* grid (blocks, jobs): the job in shared memory, a grid-stride loop over its chunks. */
__global__ void __launch_bounds__(THREADS) rows_kernel(const rjob *__restrict__ jobs) {
  __shared__ rjob sj;
  const uint4 *src = (const uint4 *)&jobs[blockIdx.y];
  for (int i = threadIdx.x; i < (int)(sizeof(rjob) / 16); i += blockDim.x) ((uint4 *)&sj)[i] = src[i];
  __syncthreads();
  for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < sj.chunks;
       t += (long long)gridDim.x * blockDim.x)
    rows_chunk(&sj, t);
}

void rjob_finish(rjob *j) {
  uintptr_t out = (uintptr_t)j->out;
  j->span = (j->rows - 1) * j->pitch + j->len;
  j->head = (int)(out & 15);
  j->chunks = (j->head + j->span + CHUNK - 1) / CHUNK;
  j->narrow = j->head + j->span + CHUNK < NARROW_LIMIT && j->pitch <= NARROW_LIMIT;
  j->table = j->pitch <= TABLE;
  for (int c = 0, k = 0; j->table && c < j->pitch; c++) {
    while (k < j->nseg - 1 && c >= j->seg[k].off + j->seg[k].len) k++;
    j->colmap[c] = (uint16_t)(c < j->len ? k << 8 | (int)(c - j->seg[k].off) : NO_COL);
  }
}

void rjob_add(rjob *j, const uint8_t *src, long long len, long long pitch, int fill) {
  if (len <= 0) return;
  rseg *s = &j->seg[j->nseg++];
  s->src = fill ? NULL : src, s->off = j->len, s->len = len, s->pitch = pitch;
  j->len += len;
}

/* The row form of copy s (merged dims), 0 when it has none: at most two
 * dims, the inner one (if two) contiguous in both, no per-index fill value,
 * rows that do not overlap; a fill only with 1/2/4/8-byte elements. */
int plan_rows(const ladle__strided_desc *s, rjob *j) {
  plan_dim dims[LADLE_MAX_NDIM];
  int nd = 0, es = s->elem_size;
  uintptr_t in = 0;
  memset(j, 0, sizeof *j);
  if (!merge_dims(s, dims, &nd, &in) || nd > 2) return 0;
  for (int k = 0; k < nd; k++)
    if (dims[k].fill) return 0;
  plan_dim row = {1, 1, 0, 0, 1, 0}, col = {1, 1, 1, 0, 1, 0};
  if (nd == 2) {
    row = dims[0], col = dims[1];
    if (col.os != 1 || col.is != 1) return 0;
  } else if (nd == 1) {
    if (dims[0].os == 1 && dims[0].is == 1) col = dims[0];
    else row = dims[0]; /* rows of one element */
  }
  if (nd < 2 && row.shape == 1) row.os = col.shape; /* one row */
  if (row.os < col.shape || row.os < 1) return 0;
  long long n = col.shape, st = col.start, lo = -st, hi = col.extent - st;
  lo = lo < 0 ? 0 : lo > n ? n : lo;
  hi = hi > n ? n : hi < lo ? lo : hi;
  int fills = lo > 0 || hi < n || row.start < 0 || row.start + row.shape > row.extent;
  if (fills && CHUNK % es != 0) return 0;
  j->out = (uint8_t *)s->out;
  j->rows = row.shape;
  j->pitch = row.os * es;
  j->row_start = row.start;
  j->row_ext = row.extent;
  rjob_add(j, NULL, lo * es, 0, 1);
  rjob_add(j, (const uint8_t *)in + (st + lo) * es, (hi - lo) * es, row.is * es, 0);
  rjob_add(j, NULL, (n - hi) * es, 0, 1);
  if (j->rows == 1) j->pitch = j->len;
  j->joinable = !fills;
  for (int b = 0; b < 2 * CHUNK; b++) j->pattern[b] = s->fill[b % es];
  rjob_finish(j);
  return 1;
}

/* Appends job x (the next copy) to job j when x's bytes continue j's rows:
 * the inputs of one cat or stack sample become one job. */
int rjob_join(rjob *j, const rjob *x) {
  if (!j->joinable || !x->joinable || x->nseg != 1 || j->nseg >= MAX_SEG || x->rows != j->rows ||
      x->out != j->out + j->len || (j->rows > 1 && (x->pitch != j->pitch || j->len + x->len > j->pitch)))
    return 0;
  rjob_add(j, x->seg[0].src, x->seg[0].len, x->seg[0].pitch, 0);
  if (j->rows == 1) j->pitch = j->len;
  rjob_finish(j);
  return 1;
}

/* ------------------------------------------------------------------------ */
/* Transposes with a small dimension: HWC <-> CHW (transpose_kernel)           */
/* ------------------------------------------------------------------------ */

/* out[m][a][b] = in[m][b][a] with A or B at most MAX_SMALL: a tile holds all
 * of the small dimension for a run of the large one, read and written in
 * contiguous runs through shared memory. */
enum { TILE_BYTES = 8192, MAX_SMALL = 64 };

struct __align__(16) tjob {
  uint8_t *out;
  const uint8_t *in;
  long long A, B, mats, tiles_per_mat, tiles;
  int es, small_a, tile_len, pad_;
};

/* 16 bytes as elements of T. */
template <typename T>
union vec16 {
  uint4 v;
  T t[16 / sizeof(T)];
};

/* sm[i * step] = src[i] for i < n (contiguous src): 16-byte loads (any
 * alignment of src), the tail element by element. */
template <typename T>
__host__ __device__ __forceinline__ void run_to_tile(T *sm, int step, const T *src, int n, int tid, int nt) {
  enum { E = 16 / sizeof(T) };
  const int vecs = n / E;
  for (int q = tid; q < vecs; q += nt) {
    vec16<T> u;
    u.v = load16((const uint8_t *)(src + q * E));
    if (step == 1) {
      ((uint4 *)sm)[q] = u.v;
    } else {
      DEVICE_UNROLL
      for (int e = 0; e < E; e++) sm[(q * E + e) * step] = u.t[e];
    }
  }
  for (int i = vecs * E + tid; i < n; i += nt) sm[i * step] = src[i];
}

/* dst[i] = sm[i * step] for i < n (contiguous dst): element by element up to
 * dst's first 16-byte boundary, then 16-byte stores, then the tail. */
template <typename T>
__host__ __device__ __forceinline__ void tile_to_run(T *dst, const T *sm, int step, int n, int tid, int nt) {
  enum { E = 16 / sizeof(T) };
  uintptr_t a = (uintptr_t)dst;
  int head = a % sizeof(T) ? n : (int)(((16 - a % 16) % 16) / sizeof(T));
  if (head > n) head = n;
  const int vecs = (n - head) / E;
  for (int i = tid; i < head; i += nt) dst[i] = sm[i * step];
  for (int q = tid; q < vecs; q += nt) {
    vec16<T> u;
    DEVICE_UNROLL
    for (int e = 0; e < E; e++) u.t[e] = sm[(head + q * E + e) * step];
    *(uint4 *)(dst + head + q * E) = u.v;
  }
  for (int i = head + vecs * E + tid; i < n; i += nt) dst[i] = sm[i * step];
}

/* One tile of job j: store = 0 moves its input into sm (shared memory,
 * 16-byte aligned), store = 1 sm to its output; threads tid of nt. */
template <typename T>
__host__ __device__ __forceinline__ void tile_move(const tjob *j, long long tile, T *sm, int tid, int nt, int store) {
  long long m = tile / j->tiles_per_mat, start = (tile - m * j->tiles_per_mat) * j->tile_len;
  const long long A = j->A, B = j->B;
  T *out = (T *)j->out;
  const T *in = (const T *)j->in;
  if (j->small_a) { /* a tile: b in [start, start + n), every a; its input is contiguous */
    const int n = (int)(B - start < j->tile_len ? B - start : j->tile_len), a_n = (int)A;
    if (!store) {
      run_to_tile<T>(sm, 1, in + (m * B + start) * A, n * a_n, tid, nt);
    } else {
      for (int a = 0; a < a_n; a++) tile_to_run<T>(out + (m * A + a) * B + start, sm + a, a_n, n, tid, nt);
    }
  } else { /* a tile: a in [start, start + n), every b; its output is contiguous */
    const int n = (int)(A - start < j->tile_len ? A - start : j->tile_len), b_n = (int)B;
    if (!store) {
      for (int b = 0; b < b_n; b++) run_to_tile<T>(sm + b, b_n, in + (m * B + b) * A + start, n, tid, nt);
    } else {
      tile_to_run<T>(out + (m * A + start) * B, sm, 1, n * b_n, tid, nt);
    }
  }
}

template <typename T>
__device__ void transpose_tiles(const tjob *j, uint4 *sm4) {
  T *sm = (T *)sm4;
  for (long long t = blockIdx.x; t < j->tiles; t += gridDim.x) {
    tile_move<T>(j, t, sm, threadIdx.x, blockDim.x, 0);
    __syncthreads();
    tile_move<T>(j, t, sm, threadIdx.x, blockDim.x, 1);
    __syncthreads();
  }
}

__global__ void __launch_bounds__(THREADS) transpose_kernel(const tjob *__restrict__ jobs) {
  __shared__ uint4 sm[TILE_BYTES / 16];
  const tjob *j = &jobs[blockIdx.y];
  switch (j->es) { /* the same for the whole grid row */
    case 1: transpose_tiles<uint8_t>(j, sm); break;
    case 2: transpose_tiles<uint16_t>(j, sm); break;
    case 4: transpose_tiles<uint32_t>(j, sm); break;
    default: transpose_tiles<unsigned long long>(j, sm);
  }
}

/* The transpose form of copy s: merged to [m][a][b] <- [m][b][a] (m
 * optional), read wholly inside, 1/2/4/8-byte elements, A or B small. */
int plan_transpose(const ladle__strided_desc *s, tjob *j) {
  plan_dim dims[LADLE_MAX_NDIM];
  int nd = 0, es = s->elem_size;
  uintptr_t in = 0;
  memset(j, 0, sizeof *j);
  if ((es & (es - 1)) != 0 || !merge_dims(s, dims, &nd, &in) || nd < 2 || nd > 3) return 0;
  for (int k = 0; k < nd; k++)
    if (dims[k].fill || dims[k].start < 0 || dims[k].start + dims[k].shape > dims[k].extent) return 0;
  const plan_dim *x = &dims[nd - 2], *y = &dims[nd - 1];
  long long A = x->shape, B = y->shape;
  if (x->os != B || x->is != 1 || y->os != 1 || y->is != A || x->start || y->start) return 0;
  if (nd == 3 && (dims[0].os != A * B || dims[0].is != A * B || dims[0].start)) return 0;
  if (A > MAX_SMALL && B > MAX_SMALL) return 0;
  j->out = (uint8_t *)s->out;
  j->in = (const uint8_t *)in;
  j->A = A, j->B = B, j->es = es;
  j->mats = nd == 3 ? dims[0].shape : 1;
  j->small_a = A <= B;
  j->tile_len = (int)(TILE_BYTES / es / (j->small_a ? A : B));
  j->tiles_per_mat = ((j->small_a ? B : A) + j->tile_len - 1) / j->tile_len;
  j->tiles = j->mats * j->tiles_per_mat;
  return 1;
}

/* Host runs of the two kernels (the emulation below). */
void rows_emulate(const rjob *j) {
  for (long long t = 0; t < j->chunks; t++) rows_chunk(j, t);
}

void transpose_emulate(const tjob *j) {
  static uint4 sm[TILE_BYTES / 16];
  for (long long t = 0; t < j->tiles; t++)
    for (int store = 0; store < 2; store++) switch (j->es) {
        case 1: tile_move<uint8_t>(j, t, (uint8_t *)sm, 0, 1, store); break;
        case 2: tile_move<uint16_t>(j, t, (uint16_t *)sm, 0, 1, store); break;
        case 4: tile_move<uint32_t>(j, t, (uint32_t *)sm, 0, 1, store); break;
        default: tile_move<unsigned long long>(j, t, (unsigned long long *)sm, 0, 1, store);
      }
}

__device__ __forceinline__ long long int_at(const void *p, int t, long long i) {
  switch (t) {
    case LADLE_UINT8: return ((const uint8_t *)p)[i];
    case LADLE_INT32: return ((const int32_t *)p)[i];
    case LADLE_INT64: return ((const long long *)p)[i];
    default: return -1;
  }
}

/* params: n descs, then on and off values (8 bytes each). */
__global__ void one_hot_kernel(const ladle__one_hot_desc *__restrict__ descs, int n, int in_type,
                               long long num_classes, int es) {
  const ladle__one_hot_desc *d = &descs[blockIdx.y];
  const uint8_t *on = (const uint8_t *)(descs + n), *off = on + 8;
  long long total = d->outer * num_classes * d->inner;
  for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < total;
       e += (long long)gridDim.x * blockDim.x) {
    long long i = e % d->inner, c = (e / d->inner) % num_classes, o = e / (d->inner * num_classes);
    long long v = int_at(d->in, in_type, o * d->inner + i);
    copy_elem((uint8_t *)d->out + e * es, v == c ? on : off, es);
  }
}

/* params: n descs, the fallback value (8 bytes), then the table. */
__global__ void lookup_kernel(const ladle__lookup_desc *__restrict__ descs, int n, int in_type, int es,
                              long long table_size) {
  const ladle__lookup_desc *d = &descs[blockIdx.y];
  const uint8_t *fallback = (const uint8_t *)(descs + n), *table = fallback + 8;
  for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < d->count;
       e += (long long)gridDim.x * blockDim.x) {
    long long v = int_at(d->in, in_type, e);
    copy_elem((uint8_t *)d->out + e * es, v >= 0 && v < table_size ? table + v * es : fallback, es);
  }
}

unsigned blocks_for(long long elems) {
  long long b = (elems + THREADS - 1) / THREADS;
  long long cap = MAX_BLOCKS;
  return (unsigned)(b < 1 ? 1 : b > cap ? cap : b);
}

ladle_status check_params(int n, const void *d, void *host, void *dev, size_t bytes, size_t need, const char *func) {
  if (n < 0 || n > 65535 || (n > 0 && (!d || !host || !dev)) || bytes < need)
    return ladle__set_error(LADLE_ERROR_INVALID_ARGUMENT, func, "bad launch: %d samples, %zu of %zu parameter bytes",
                            n, bytes, need);
  return LADLE_OK;
}


/* The launch plan of a batch of copies, in the parameter block (16-byte
 * aligned): rows jobs, transpose jobs, then strided_kernel's descs (a cut
 * copy takes two). */
struct batch_plan {
  rjob *rows;
  tjob *tr;
  gdesc *gen;
  int n_rows, n_tr, n_gen;
  long long max_chunks, max_tiles, max_units;
};

size_t plan_bytes(int n) { return (size_t)n * (sizeof(rjob) + sizeof(tjob) + 2 * sizeof(gdesc)); }

void plan_batch(const ladle__strided_desc *d, int n, uint8_t *base, batch_plan *p) {
  memset(p, 0, sizeof *p);
  p->rows = (rjob *)base;
  p->tr = (tjob *)(base + (size_t)n * sizeof(rjob));
  p->gen = (gdesc *)(base + (size_t)n * (sizeof(rjob) + sizeof(tjob)));
  p->max_chunks = p->max_tiles = p->max_units = 1;
  int last_rows = -1; /* the job the previous copy became, if a rows job */
  for (int i = 0; i < n; i++) {
    rjob *r = &p->rows[p->n_rows];
    if (plan_transpose(&d[i], &p->tr[p->n_tr])) {
      if (p->tr[p->n_tr].tiles > p->max_tiles) p->max_tiles = p->tr[p->n_tr].tiles;
      p->n_tr++, last_rows = -1;
    } else if (plan_rows(&d[i], r)) {
      if (last_rows >= 0 && rjob_join(&p->rows[last_rows], r)) r = &p->rows[last_rows];
      else last_rows = p->n_rows++;
      if (r->chunks > p->max_chunks) p->max_chunks = r->chunks;
    } else {
      gdesc *g = &p->gen[p->n_gen];
      ladle__strided_desc tail;
      int parts = 0;
      if (!plan_copy(&d[i], &g[0], &tail, &parts)) continue; /* nothing to copy: joins go on over it */
      parts = parts ? 1 + plan_copy(&tail, &g[1], NULL, NULL) : 1;
      for (int k = 0; k < parts; k++)
        if (g[k].total > p->max_units) p->max_units = g[k].total;
      p->n_gen += parts, last_rows = -1;
    }
  }
}

unsigned grid_x(long long work, long long per_block) {
  long long b = (work + per_block - 1) / per_block;
  return (unsigned)(b < 1 ? 1 : b > (long long)MAX_BLOCKS ? (long long)MAX_BLOCKS : b);
}

/* Launches kernel over `count` jobs (grid rows) of `items` each, 65535 rows at a time. */
template <typename J>
ladle_status launch_rows(void (*kernel)(const J *), const J *jobs, int count, unsigned blocks, cudaStream_t s,
                         const char *name) {
  ladle_status st = LADLE_OK;
  for (int first = 0; first < count; first += 65535) {
    unsigned rows = (unsigned)(count - first < 65535 ? count - first : 65535);
    kernel<<<dim3(blocks, rows), THREADS, 0, s>>>(jobs + first);
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) return ladle__cuda_fail(err, name, "kernel launch");
  }
  return st;
}

}  // namespace

extern "C" size_t ladle__gpu_strided_param_bytes(int n) { return plan_bytes(n) + 32; }

extern "C" ladle_status ladle__gpu_strided_copy(const ladle__strided_desc *d, int n, void *host_params,
                                                void *dev_params, size_t param_bytes, void *stream) {
  ladle_status st = LADLE_OK;
  cudaStream_t s = ladle__cuda_stream(stream);
  batch_plan p;
  uint8_t *host = NULL, *dev = NULL;
  LADLE_CUDA_ENTER();
  LADLE_TRY(check_params(n, d, host_params, dev_params, param_bytes, ladle__gpu_strided_param_bytes(n), __func__));
  if (n <= 0) goto done; /* (check_params refused n < 0; this also tells the compiler) */
  /* The plan 16-byte aligned in both blocks (it holds no pointers into itself). */
  host = (uint8_t *)host_params + (16 - (uintptr_t)host_params % 16) % 16;
  dev = (uint8_t *)dev_params + (16 - (uintptr_t)dev_params % 16) % 16;
  for (int i = 0; i < n; i++) {
    long long total = 1;
    for (int k = 0; k < d[i].ndim; k++) total *= d[i].shape[k];
    LADLE_CHECK(d[i].ndim >= 0 && d[i].ndim <= LADLE_MAX_NDIM && d[i].elem_size >= 1 && d[i].elem_size <= 8 &&
                    (total == 0 || (d[i].out && d[i].in)),
                LADLE_ERROR_INVALID_ARGUMENT, "copy %d: bad parameters", i);
  }
  plan_batch(d, n, host, &p);
  if (!p.n_rows && !p.n_tr && !p.n_gen) goto done;
  {
    /* Only the jobs made travel: packed one after another. */
    size_t rows_b = (size_t)p.n_rows * sizeof(rjob), tr_b = (size_t)p.n_tr * sizeof(tjob);
    size_t gen_b = (size_t)p.n_gen * sizeof(gdesc);
    memmove(host + rows_b, p.tr, tr_b);
    memmove(host + rows_b + tr_b, p.gen, gen_b);
    LADLE_CUDA_CHECK(cudaMemcpyAsync(dev, host, rows_b + tr_b + gen_b, cudaMemcpyHostToDevice, s));
    (void)cudaGetLastError();
    const uint8_t *rows_dev = dev, *tr_dev = dev + rows_b, *gen_dev = dev + rows_b + tr_b;
    if (p.n_rows)
      LADLE_TRY(launch_rows<rjob>(rows_kernel, (const rjob *)rows_dev, p.n_rows, grid_x(p.max_chunks, THREADS), s,
                                  __func__));
    if (p.n_tr)
      LADLE_TRY(launch_rows<tjob>(transpose_kernel, (const tjob *)tr_dev, p.n_tr, grid_x(p.max_tiles, 1), s,
                                  __func__));
    if (p.n_gen)
      LADLE_TRY(launch_rows<gdesc>(strided_kernel, (const gdesc *)gen_dev, p.n_gen,
                                   grid_x(p.max_units, THREADS * ITEMS), s, __func__));
  }
done:
  return st;
}

extern "C" int ladle__gpu_strided_plan_info(const ladle__strided_desc *d, int *unit, int *ndim) {
  gdesc g;
  ladle__strided_desc tail;
  int has_tail = 0;
  if (!plan_copy(d, &g, &tail, &has_tail)) return -1;
  *unit = g.unit;
  *ndim = g.ndim;
  return g.narrow;
}

extern "C" int ladle__gpu_strided_plan_kind(const ladle__strided_desc *d, int n, int *rows, int *transposes) {
  uint8_t *mem = (uint8_t *)malloc(plan_bytes(n) + 16);
  batch_plan p;
  if (!mem) return -1;
  plan_batch(d, n, mem + (16 - (uintptr_t)mem % 16) % 16, &p);
  *rows = p.n_rows, *transposes = p.n_tr;
  free(mem);
  return p.n_gen;
}

namespace {
void generic_emulate(const gdesc *g) {
  for (long long e = 0; e < g->total; e++) {
    long long o, p;
    int f, inside;
    if (g->narrow) {
      unsigned o32, p32;
      inside = locate32(g, (unsigned)e, &o32, &p32, &f);
      o = o32, p = p32;
    } else {
      inside = locate64(g, e, &o, &p, &f);
    }
    memcpy(g->out + o * g->unit, inside ? g->in + p * g->unit : fill_of(g, f), (size_t)g->unit);
  }
}
}  // namespace

extern "C" int ladle__gpu_strided_emulate_batch(const ladle__strided_desc *d, int n) {
  uint8_t *mem = (uint8_t *)malloc(plan_bytes(n) + 16);
  batch_plan p;
  if (!mem) return -1;
  plan_batch(d, n, mem + (16 - (uintptr_t)mem % 16) % 16, &p);
  for (int i = 0; i < p.n_rows; i++) rows_emulate(&p.rows[i]);
  for (int i = 0; i < p.n_tr; i++) transpose_emulate(&p.tr[i]);
  for (int i = 0; i < p.n_gen; i++) generic_emulate(&p.gen[i]);
  free(mem);
  return 0;
}

extern "C" void ladle__gpu_strided_emulate(const ladle__strided_desc *d) {
  (void)ladle__gpu_strided_emulate_batch(d, 1);
}

extern "C" int ladle__gpu_shift16_check(void) {
  uint8_t bytes[32];
  int bad = 0;
  for (int i = 0; i < 32; i++) bytes[i] = (uint8_t)(i * 37 + 11);
  uint4 x, y;
  memcpy(&x, bytes, 16);
  memcpy(&y, bytes + 16, 16);
  for (unsigned mis = 0; mis < 16; mis++) {
    uint4 v = shift16(x, y, mis);
    bad += memcmp(&v, bytes + mis, 16) != 0;
  }
  return bad;
}

extern "C" size_t ladle__gpu_one_hot_param_bytes(int n, int elem_size) {
  (void)elem_size;
  return (size_t)n * sizeof(ladle__one_hot_desc) + 16;
}

extern "C" ladle_status ladle__gpu_one_hot(const ladle__one_hot_desc *d, int n, ladle_dtype in_type,
                                           int64_t num_classes, int elem_size, const void *on, const void *off,
                                           void *host_params, void *dev_params, size_t param_bytes, void *stream) {
  ladle_status st = LADLE_OK;
  cudaStream_t s = ladle__cuda_stream(stream);
  long long max_n = 1;
  size_t need = ladle__gpu_one_hot_param_bytes(n, elem_size);
  uint8_t *values = (uint8_t *)host_params + (size_t)n * sizeof *d;
  LADLE_CUDA_ENTER();
  LADLE_TRY(check_params(n, d, host_params, dev_params, param_bytes, need, __func__));
  LADLE_CHECK(elem_size >= 1 && elem_size <= 8 && num_classes >= 0, LADLE_ERROR_INVALID_ARGUMENT,
              "bad parameters: %d-byte elements, %lld classes", elem_size, (long long)num_classes);
  if (n <= 0) goto done; /* (check_params refused n < 0; this also tells the compiler) */
  for (int i = 0; i < n; i++) {
    long long total = d[i].outer * num_classes * d[i].inner;
    if (total > max_n) max_n = total;
  }
  memcpy(host_params, d, (size_t)n * sizeof *d);
  memcpy(values, on, (size_t)elem_size);
  memcpy(values + 8, off, (size_t)elem_size);
  LADLE_CUDA_CHECK(cudaMemcpyAsync(dev_params, host_params, need, cudaMemcpyHostToDevice, s));
  (void)cudaGetLastError();
  one_hot_kernel<<<dim3(blocks_for(max_n), (unsigned)n), THREADS, 0, s>>>((const ladle__one_hot_desc *)dev_params, n,
                                                                           (int)in_type, (long long)num_classes,
                                                                           elem_size);
  LADLE_CUDA_CHECK_LAUNCH(one_hot_kernel);
done:
  return st;
}

extern "C" size_t ladle__gpu_lookup_param_bytes(int n, int elem_size, int64_t table_size) {
  return (size_t)n * sizeof(ladle__lookup_desc) + 8 + (size_t)table_size * (size_t)elem_size;
}

extern "C" ladle_status ladle__gpu_lookup(const ladle__lookup_desc *d, int n, ladle_dtype in_type, int elem_size,
                                          const void *table, int64_t table_size, const void *fallback,
                                          void *host_params, void *dev_params, size_t param_bytes, void *stream) {
  ladle_status st = LADLE_OK;
  cudaStream_t s = ladle__cuda_stream(stream);
  long long max_n = 1;
  size_t need = ladle__gpu_lookup_param_bytes(n, elem_size, table_size);
  uint8_t *values = (uint8_t *)host_params + (size_t)n * sizeof *d;
  LADLE_CUDA_ENTER();
  LADLE_TRY(check_params(n, d, host_params, dev_params, param_bytes, need, __func__));
  LADLE_CHECK(elem_size >= 1 && elem_size <= 8 && table_size >= 0 && (table || !table_size),
              LADLE_ERROR_INVALID_ARGUMENT, "bad parameters: %d-byte elements, table of %lld", elem_size,
              (long long)table_size);
  if (n <= 0) goto done; /* (check_params refused n < 0; this also tells the compiler) */
  for (int i = 0; i < n; i++)
    if (d[i].count > max_n) max_n = d[i].count;
  memcpy(host_params, d, (size_t)n * sizeof *d);
  memcpy(values, fallback, (size_t)elem_size);
  if (table_size) memcpy(values + 8, table, (size_t)table_size * elem_size);
  LADLE_CUDA_CHECK(cudaMemcpyAsync(dev_params, host_params, need, cudaMemcpyHostToDevice, s));
  (void)cudaGetLastError();
  lookup_kernel<<<dim3(blocks_for(max_n), (unsigned)n), THREADS, 0, s>>>((const ladle__lookup_desc *)dev_params, n,
                                                                          (int)in_type, elem_size,
                                                                          (long long)table_size);
  LADLE_CUDA_CHECK_LAUNCH(lookup_kernel);
done:
  return st;
}
