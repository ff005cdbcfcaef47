/* The filter family on the GPU (filter_kernels.h): grid_mask, erase, the
 * passes of gaussian_blur, normalize and filter; one launch per batch (per
 * pass or stage), blockIdx.y the sample. */
#ifndef LADLE_HAVE_CUDA
#define LADLE_HAVE_CUDA 1
#endif

#include <string.h>

#include "ops/filter/filter_kernels.h"
#include "ops/filter/norm_core.h"
#include "ops/kernels/gpu_kernels.h"
#include "ops/kernels/gpu_u8.h"

extern "C" {
#include "core/error.h"
}
#include "cuda/runtime.h"

namespace {


unsigned blocks_for(int64_t count) {
  int64_t b = (count + 255) / 256;
  return (unsigned)(b < 1 ? 1 : b > 4096 ? 4096 : b);
}

__global__ void grid_kernel(const ladle__gpu_grid_desc *__restrict__ samples) {
  const ladle__gpu_grid_desc *s = samples + blockIdx.y;
  const int64_t pixels = s->h * s->w;
  const size_t ps = (size_t)s->c * (size_t)s->elem_size;
  for (int64_t p = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; p < pixels; p += (int64_t)gridDim.x * blockDim.x) {
    const int64_t y = p / s->w, x = p % s->w;
    const float fxy = __fadd_rn(-s->sx, __fmul_rn((float)y, -s->sa));
    const float fyy = __fadd_rn(-s->sy, __fmul_rn((float)y, s->ca));
    const float fx = __fadd_rn(fxy, __fmul_rn((float)x, s->ca)), fy = __fadd_rn(fyy, __fmul_rn((float)x, s->sa));
    const bool keep = __fsub_rn(fx, floorf(fx)) >= s->ratio || __fsub_rn(fy, floorf(fy)) >= s->ratio;
    const uint8_t *src = (const uint8_t *)s->in + (size_t)p * ps;
    uint8_t *dst = (uint8_t *)s->out + (size_t)p * ps;
    for (size_t b = 0; b < ps; b++) dst[b] = keep ? src[b] : 0;
  }
}

/* erase in two launches: every sample copied (ladle__gpu_copy_bytes), then
 * each box's elements (clamped to the sample) written with the fill value.
 * Boxes may overlap: an element in several gets the same value from each. */
__global__ void erase_copy_kernel(const ladle__gpu_erase_desc *__restrict__ samples) {
  const ladle__gpu_erase_desc *s = samples + blockIdx.y;
  size_t count = 1;
  for (int d = 0; d < s->ndim; d++) count *= (size_t)s->shape[d];
  ladle__gpu_copy_bytes(s->out, s->in, count * (size_t)s->elem_size);
}

/* Box b of sample s: its first index and extent per dimension, clamped to the shape; returns its element count. */
__host__ __device__ int64_t erase_box(const ladle__gpu_erase_desc *s, int b, int64_t *lo, int64_t *ext) {
  int64_t count = 1;
  for (int d = 0; d < s->ndim; d++) {
    int64_t l = s->lo[b][d] > 0 ? s->lo[b][d] : 0, h = s->hi[b][d] < s->shape[d] ? s->hi[b][d] : s->shape[d];
    lo[d] = l;
    ext[d] = h > l ? h - l : 0;
    count *= ext[d];
  }
  return count;
}

/* I: the index type (32-bit where the box has fewer than 2^31 elements). */
template <typename I>
__device__ void erase_fill_box(const ladle__gpu_erase_desc *s, const int64_t *lo, const int64_t *ext, I count) {
  int64_t stride[8];
  int64_t k = 1;
  for (int d = s->ndim - 1; d >= 0; d--) stride[d] = k, k *= s->shape[d];
  const int es = s->elem_size;
  for (I e = (I)(blockIdx.x * blockDim.x + threadIdx.x); e < count; e += (I)(gridDim.x * blockDim.x)) {
    I rest = e;
    int64_t off = 0, channel = 0;
    for (int d = s->ndim - 1; d >= 0; d--) {
      const I n = (I)ext[d], q = rest / n;
      const int64_t i = lo[d] + (int64_t)(rest - q * n);
      rest = q;
      off += i * stride[d];
      if (d == s->channel_axis) channel = i;
    }
    const uint8_t *src = s->fill_bytes[s->num_fill > 1 ? channel : 0];
    uint8_t *dst = (uint8_t *)s->out + off * es;
    for (int b = 0; b < es; b++) dst[b] = src[b];
  }
}

__global__ void erase_fill_kernel(const ladle__gpu_erase_desc *__restrict__ samples) {
  const ladle__gpu_erase_desc *s = samples + blockIdx.y;
  for (int b = 0; b < s->num_boxes; b++) {
    int64_t lo[8], ext[8];
    const int64_t count = erase_box(s, b, lo, ext);
    if (count <= 0x7fffffff)
      erase_fill_box<unsigned>(s, lo, ext, (unsigned)count);
    else
      erase_fill_box<unsigned long long>(s, lo, ext, (unsigned long long)count);
  }
}

/* Element i of any dtype as a float, as ladle__convert converts it. */
__device__ float load_float(const void *p, int type, int64_t i) {
  switch (ladle__dtype_carrier(type)) {
    case LADLE__CARRY_F32: return ladle__load_f32(p, (size_t)i, type);
    case LADLE__CARRY_F64: return ladle__f64_to_f32(ladle__load_f64(p, (size_t)i, type));
    case LADLE__CARRY_U64: return (float)ladle__load_u64(p, (size_t)i, type);
    default: return (float)ladle__load_i64(p, (size_t)i, type);
  }
}

__device__ int64_t reflect101(int64_t i, int64_t len) {
  if (len <= 1) return 0;
  int64_t period = 2 * len - 2;
  i %= period;
  if (i < 0) i += period;
  return i >= len ? period - i : i;
}

/* A value of type T (LADLE_UINT8 or LADLE_FLOAT32 known at compile time,
 * -1: the descriptor's type t) as a float. */
template <int T>
__device__ __forceinline__ float blur_load(const void *p, int t, int64_t i) {
  if (T == LADLE_UINT8) return (float)((const uint8_t *)p)[i];
  if (T == LADLE_FLOAT32) return ((const float *)p)[i];
  return load_float(p, t, i);
}

/* I: the index type (32-bit where the pass has fewer than 2^31 elements);
 * ST, DT: the source and destination types where they are uint8 or float
 * (no per-tap type switch), else -1. Taps inside [0, len) skip reflect101
 * (which returns them unchanged). */
template <typename I, int ST, int DT>
__device__ void blur_pass(const ladle__gpu_blur_pass *s, const float *w, I count) {
  const I inner = (I)s->inner, len = (I)s->len;
  const int r = s->radius;
  for (I e = (I)(blockIdx.x * blockDim.x + threadIdx.x); e < count; e += (I)(gridDim.x * blockDim.x)) {
    const I q = e / inner, j = e - q * inner, o = q / len, i = q - o * len;
    const I base = o * len * inner + j;
    float acc = 0;
    if (i >= (I)r && i + (I)r < len) { /* every tap inside */
      for (int k = -r; k <= r; k++)
        acc = __fadd_rn(acc, __fmul_rn(w[k + r],
                                       blur_load<ST>(s->src, s->src_type, (int64_t)(base + (i + k) * inner))));
    } else {
      for (int k = -r; k <= r; k++) {
        const int64_t t = (int64_t)i + k;
        const I at = t >= 0 && t < (int64_t)len ? (I)t : (I)reflect101(t, (int64_t)len);
        acc = __fadd_rn(acc, __fmul_rn(w[k + r], blur_load<ST>(s->src, s->src_type, (int64_t)(base + at * inner))));
      }
    }
    ladle__store_f32(s->dst, (size_t)e, DT < 0 ? s->dst_type : DT, acc);
  }
}

template <int ST, int DT>
__global__ void blur_kernel(const ladle__gpu_blur_pass *__restrict__ passes, const float *__restrict__ weights) {
  const ladle__gpu_blur_pass *s = passes + blockIdx.y;
  const int64_t count = s->outer * s->len * s->inner;
  const float *w = weights + s->weights;
  if (count <= 0) return;
  if (count <= 0x7fffffff)
    blur_pass<unsigned, ST, DT>(s, w, (unsigned)count);
  else
    blur_pass<unsigned long long, ST, DT>(s, w, (unsigned long long)count);
}

typedef void (*blur_fn)(const ladle__gpu_blur_pass *, const float *);

template <int ST>
blur_fn blur_for(int dst_type) {
  return dst_type == LADLE_FLOAT32 ? blur_kernel<ST, LADLE_FLOAT32>
         : dst_type == LADLE_UINT8 ? blur_kernel<ST, LADLE_UINT8>
                                   : blur_kernel<ST, -1>;
}

blur_fn blur_kernel_for(int src_type, int dst_type) {
  return src_type == LADLE_FLOAT32 ? blur_for<LADLE_FLOAT32>(dst_type)
         : src_type == LADLE_UINT8 ? blur_for<LADLE_UINT8>(dst_type)
                                   : blur_for<-1>(dst_type);
}

/* --- normalize ------------------------------------------------------------ */

/* Element i of any dtype as a double (filter.h's ladle__elem). */
__device__ double load_double(const void *p, int type, int64_t i) { return ladle__load_as_f64(p, (size_t)i, type); }

/* The element offset of member m of group g. */
__device__ int64_t member_offset(const ladle__gpu_norm_desc *s, int64_t g, int64_t m) {
  int64_t off = 0, stride = 1;
  for (int d = s->ndim - 1; d >= 0; d--) {
    int64_t idx;
    if (s->reduced[d]) {
      idx = m % s->shape[d];
      m /= s->shape[d];
    } else {
      idx = g % s->shape[d];
      g /= s->shape[d];
    }
    off += idx * stride;
    stride *= s->shape[d];
  }
  return off;
}

/* The element offset of member m of group g where the sample has a ga x gb view. */
__device__ __forceinline__ int64_t member_at(const ladle__gpu_norm_desc *s, int64_t g, int64_t m) {
  return s->gmode == 1 ? g * s->gb + m : s->gmode == 0 ? m * s->gb + g : member_offset(s, g, m);
}

/* exact (uint8), gmode -1: one thread per (group, chunk) adds the chunk's
 * integer sums of x and x^2 to the group's. */
__global__ void norm_exact_chunk_kernel(const ladle__gpu_norm_desc *__restrict__ samples) {
  const ladle__gpu_norm_desc *s = samples + blockIdx.y;
  const int64_t items = s->groups * s->chunks;
  if (!s->exact || s->gmode >= 0) return; /* norm_exact_kernel's */
  for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < items; t += (int64_t)gridDim.x * blockDim.x) {
    const int64_t g = t / s->chunks, c = t % s->chunks;
    const int64_t end = (c + 1) * LADLE__NORM_CHUNK < s->members ? (c + 1) * LADLE__NORM_CHUNK : s->members;
    unsigned long long a = 0, q = 0;
    for (int64_t m = c * LADLE__NORM_CHUNK; m < end; m++) {
      const unsigned x = ((const uint8_t *)s->in)[member_offset(s, g, m)];
      a += x;
      q += x * x;
    }
    atomicAdd((unsigned long long *)s->stat_mean + g, a);
    atomicAdd((unsigned long long *)s->stat_m2 + g, q);
  }
}

/* Other types: chunk sums, pass 0 of x, pass 1 of (x - mean)^2, in
 * normalize.c's order: one warp per (group, chunk), lane l adding members
 * l, l + 32, ... of the chunk in turn, then the lanes combined by halving
 * (lane l + 16 into lane l, then l + 8, ... l + 1). */
__global__ void norm_chunk_kernel(const ladle__gpu_norm_desc *__restrict__ samples, int pass) {
  const ladle__gpu_norm_desc *s = samples + blockIdx.y;
  const int64_t items = s->groups * s->chunks;
  const int lane = threadIdx.x & 31;
  const int64_t warps = ((int64_t)gridDim.x * blockDim.x) >> 5;
  for (int64_t t = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5; t < items; t += warps) {
    const int64_t g = t / s->chunks, c = t % s->chunks;
    const int64_t end = (c + 1) * LADLE__NORM_CHUNK < s->members ? (c + 1) * LADLE__NORM_CHUNK : s->members;
    const double mean = pass ? s->stat_mean[g] : 0;
    double acc = 0;
    for (int64_t m = c * LADLE__NORM_CHUNK + lane; m < end; m += 32) {
      const double x = load_double(s->in, s->in_type, member_at(s, g, m)), d = __dsub_rn(x, mean);
      acc = __dadd_rn(acc, pass ? __dmul_rn(d, d) : x);
    }
    for (int off = 16; off > 0; off >>= 1) acc = __dadd_rn(acc, __shfl_down_sync(0xffffffffu, acc, off));
    if (lane == 0) s->part[t] = acc;
  }
}

/* exact: the sums of x and x^2 (in stat_mean / stat_m2 as integers) zeroed. */
__global__ void norm_zero_kernel(const ladle__gpu_norm_desc *__restrict__ samples) {
  const ladle__gpu_norm_desc *s = samples + blockIdx.y;
  for (int64_t g = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; g < s->groups; g += (int64_t)gridDim.x * blockDim.x)
    ((unsigned long long *)s->stat_mean)[g] = ((unsigned long long *)s->stat_m2)[g] = 0;
}

/* Sums of a thread's x and x^2 added to the group's: across the block first
 * (warp shuffles, then one value per warp), then one atomic per block. */
#define NORM_THREADS 256
#define NORM_ITER 64 /* elements per thread and tile: a block's sums stay below 2^32 (256 * 64 * 255^2) */
__device__ void norm_add_block(unsigned a, unsigned q, unsigned long long *S, unsigned long long *Q) {
  __shared__ unsigned wa[NORM_THREADS / 32], wq[NORM_THREADS / 32];
  for (int o = 16; o > 0; o >>= 1) {
    a += __shfl_down_sync(0xffffffffu, a, o);
    q += __shfl_down_sync(0xffffffffu, q, o);
  }
  if ((threadIdx.x & 31) == 0) wa[threadIdx.x >> 5] = a, wq[threadIdx.x >> 5] = q;
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned long long ta = 0, tq = 0;
    for (int k = 0; k < NORM_THREADS / 32; k++) ta += wa[k], tq += wq[k];
    atomicAdd(S, ta);
    atomicAdd(Q, tq);
  }
  __syncthreads();
}

/* exact, gmode 0 or 1: the sums of x and x^2 of every group, read once and
 * coalesced. gmode 1 (each group's gb members contiguous): a tile is
 * NORM_THREADS * NORM_ITER members of one group. gmode 0 (gb groups
 * interleaved, ga rows of them): a tile is up to NORM_THREADS columns
 * (groups) by rows, each thread keeps one column (so one group) throughout;
 * the column's partial sums are added in shared memory. */
__global__ void __launch_bounds__(NORM_THREADS) norm_exact_kernel(const ladle__gpu_norm_desc *__restrict__ samples) {
  const ladle__gpu_norm_desc *s = samples + blockIdx.y;
  if (!s->exact || s->gmode < 0 || s->groups * s->members == 0) return;
  const uint8_t *in = (const uint8_t *)s->in;
  unsigned long long *S = (unsigned long long *)s->stat_mean, *Q = (unsigned long long *)s->stat_m2;
  const int l = threadIdx.x;
  if (s->gmode == 1) {
    const int64_t span = NORM_THREADS * NORM_ITER, per = (s->gb + span - 1) / span, tiles = s->ga * per;
    for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
      const int64_t g = t / per, m0 = (t - g * per) * span, m1 = m0 + span < s->gb ? m0 + span : s->gb;
      const uint8_t *p = in + g * s->gb;
      unsigned a = 0, q = 0;
      for (int64_t m = m0 + l; m < m1; m += NORM_THREADS) {
        const unsigned x = p[m];
        a += x;
        q += x * x;
      }
      norm_add_block(a, q, S + g, Q + g);
    }
    return;
  }
  __shared__ unsigned ca[NORM_THREADS], cq[NORM_THREADS];
  const int64_t G = s->gb;
  const int cw = G < NORM_THREADS ? (int)G : NORM_THREADS, rps = NORM_THREADS / cw;
  const int64_t ctiles = (G + cw - 1) / cw, rows = (int64_t)rps * NORM_ITER, rtiles = (s->ga + rows - 1) / rows;
  const int col_l = l % cw, row_l = l / cw;
  for (int64_t t = blockIdx.x; t < ctiles * rtiles; t += gridDim.x) {
    const int64_t rt = t / ctiles, col = (t - rt * ctiles) * cw + col_l;
    const int64_t r0 = rt * rows, r1 = r0 + rows < s->ga ? r0 + rows : s->ga;
    unsigned a = 0, q = 0;
    if (row_l < rps && col < G)
      for (int64_t row = r0 + row_l; row < r1; row += rps) {
        const unsigned x = in[row * G + col];
        a += x;
        q += x * x;
      }
    ca[l] = a, cq[l] = q;
    __syncthreads();
    if (row_l == 0 && col < G) {
      unsigned long long ta = 0, tq = 0;
      for (int k = 0; k < rps; k++) ta += ca[k * cw + col_l], tq += cq[k * cw + col_l];
      atomicAdd(S + col, ta);
      atomicAdd(Q + col, tq);
    }
    __syncthreads();
  }
}

/* exact: the integer sums turned into mean and M2 in place (norm_core.h). */
__global__ void norm_moments_kernel(const ladle__gpu_norm_desc *__restrict__ samples) {
  const ladle__gpu_norm_desc *s = samples + blockIdx.y;
  for (int64_t g = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; g < s->groups; g += (int64_t)gridDim.x * blockDim.x) {
    const unsigned long long a = ((unsigned long long *)s->stat_mean)[g], q = ((unsigned long long *)s->stat_m2)[g];
    double mean, m2;
    ladle__norm_exact_moments(a, q, s->members, &mean, &m2);
    s->stat_mean[g] = mean;
    s->stat_m2[g] = m2;
  }
}

/* Group totals: the chunk sums in order; pass 0 divides by the count. */
__global__ void norm_total_kernel(const ladle__gpu_norm_desc *__restrict__ samples, int pass) {
  const ladle__gpu_norm_desc *s = samples + blockIdx.y;
  for (int64_t g = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; g < s->groups; g += (int64_t)gridDim.x * blockDim.x) {
    double acc = 0;
    for (int64_t c = 0; c < s->chunks; c++) acc = __dadd_rn(acc, s->part[g * s->chunks + c]);
    const double count = (double)s->members;
    if (pass) s->stat_m2[g] = acc;
    else s->stat_mean[g] = count > 0 ? __ddiv_rn(acc, count) : 0;
  }
}

/* batch=True: every sample's moments combined in sample order (Chan et al.), as normalize.c. */
__global__ void norm_combine_kernel(const ladle__gpu_norm_desc *__restrict__ samples, int n) {
  const ladle__gpu_norm_desc *s0 = samples;
  for (int64_t g = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; g < s0->groups; g += (int64_t)gridDim.x * blockDim.x) {
    double mean = 0, m2 = 0, count = 0;
    for (int i = 0; i < n; i++) {
      const ladle__gpu_norm_desc *o = samples + i;
      const double oc = (double)o->members, c = __dadd_rn(count, oc);
      if (c > 0) {
        const double delta = __dsub_rn(o->stat_mean[g], mean);
        m2 = __dadd_rn(m2, __dadd_rn(o->stat_m2[g], __ddiv_rn(__dmul_rn(__dmul_rn(__dmul_rn(delta, delta), count), oc), c)));
        mean = __dadd_rn(mean, __ddiv_rn(__dmul_rn(delta, oc), c));
      }
      count = c;
    }
    s0->batch_mean[g] = mean;
    s0->batch_m2[g] = m2;
  }
}

/* mean to subtract and multiplier per group (normalize.c's finalize), into stat_mean / stat_m2. */
__global__ void norm_finalize_kernel(const ladle__gpu_norm_desc *__restrict__ samples, int n, int batch) {
  const ladle__gpu_norm_desc *s = samples + blockIdx.y;
  double count = (double)s->members;
  if (batch) {
    count = 0;
    for (int i = 0; i < n; i++) count = __dadd_rn(count, (double)samples[i].members);
  }
  for (int64_t g = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; g < s->groups; g += (int64_t)gridDim.x * blockDim.x) {
    double mean = batch ? s->batch_mean[g] : s->stat_mean[g], m2 = batch ? s->batch_m2[g] : s->stat_m2[g];
    double var = __dmul_rn(s->stddev, s->stddev);
    if (!s->given_std) {
      const double dm = __dsub_rn(mean, s->mean);
      const double sq = __dadd_rn(m2, s->given_mean ? __dmul_rn(__dmul_rn(count, dm), dm) : 0.0);
      const double dof = __dsub_rn(count, s->ddof);
      var = dof > 0 ? __ddiv_rn(sq, dof) : 0;
    }
    if (s->given_mean) mean = s->mean;
    var = __dadd_rn(var, s->eps);
    s->stat_mean[g] = mean;
    s->stat_m2[g] = var > 0 ? (double)__fmul_rn(s->scale, (float)__ddiv_rn(1.0, __dsqrt_rn(var))) : 0;
  }
}

/* The group of element e (gmode -1: from the shape and reduced axes). */
template <typename I>
__device__ __forceinline__ I norm_group(const ladle__gpu_norm_desc *s, I e) {
  if (s->gmode == 0) return e % (I)s->gb;
  if (s->gmode == 1) return e / (I)s->gb;
  int64_t rest = (int64_t)e, g = 0, gs = 1;
  for (int d = s->ndim - 1; d >= 0; d--) {
    const int64_t idx = rest % s->shape[d];
    rest /= s->shape[d];
    if (!s->reduced[d]) {
      g += idx * gs;
      gs *= s->shape[d];
    }
  }
  return (I)g;
}

/* I: the index type (32-bit below 2^31 elements); IT, OT: the input and
 * output types when uint8 and float (the common case, no per-element type
 * switch), else -1 (read from the descriptor). */
template <typename I, int IT, int OT>
__device__ void norm_apply(const ladle__gpu_norm_desc *s, I count) {
  for (I e = (I)(blockIdx.x * blockDim.x + threadIdx.x); e < count; e += (I)(gridDim.x * blockDim.x)) {
    const I g = norm_group(s, e);
    const float x =
        IT == LADLE_UINT8 ? (float)((const uint8_t *)s->in)[e] : (float)load_double(s->in, s->in_type, (int64_t)e);
    const float v = __fadd_rn(__fmul_rn(__fsub_rn(x, (float)s->stat_mean[g]), (float)s->stat_m2[g]), s->shift);
    if (OT == LADLE_FLOAT32) ((float *)s->out)[e] = v;
    else ladle__gpu_store(s->out, (size_t)e, s->out_type, v);
  }
}

template <int IT, int OT>
__global__ void norm_apply_kernel(const ladle__gpu_norm_desc *__restrict__ samples) {
  const ladle__gpu_norm_desc *s = samples + blockIdx.y;
  const int64_t count = s->groups * s->members;
  if (count <= 0x7fffffff) norm_apply<unsigned, IT, OT>(s, (unsigned)count);
  else norm_apply<unsigned long long, IT, OT>(s, (unsigned long long)count);
}

/* Checks n and the buffers; sets the message on failure. */
ladle_status check_params(int n, const void *d, void *host, void *dev, size_t bytes, size_t need, const char *func) {
  if (!(n >= 1 && n <= LADLE__GPU_MAX_SAMPLES && d && host && dev))
    return ladle__set_error(LADLE_ERROR_INVALID_ARGUMENT, func, "bad batch (n = %d, or a NULL buffer)", n);
  if (((uintptr_t)host & 15) || ((uintptr_t)dev & 15) || bytes < need)
    return ladle__set_error(LADLE_ERROR_INVALID_ARGUMENT, func,
                            "parameter buffers must be 16-byte aligned and hold %zu bytes (got %zu)", need, bytes);
  return LADLE_OK;
}

/* --- filter -------------------------------------------------------------- */

/* A sample is `planes` 2-D planes of h rows by rw elements: a frame of an
 * HWC-like layout (cl = channels: a row interleaves them) or one channel of
 * a CHW-like one (cl = 1). Output element x of a row reads input elements
 * x + (j - ax) * cl of rows y - ay + i, so a tile of a row's elements needs
 * only a wider strip of the same rows, whatever the channel count.
 *
 * Tiled path: a block computes CONV_TW output elements by CONV_TH rows of
 * one plane; the input strip with its halo (and the sample's filter) is
 * loaded once into shared memory, coalesced, border-mapped only in tiles
 * that touch an edge; thread (x, y) sums column x of CONV_K consecutive
 * rows, each with conv_core.h's operations in its order (tap by tap, row by
 * row, each product and sum rounded), so the bits are the CPU's (3x3 and
 * 5x5 filters: the taps in registers, each tile value read once for all
 * the thread's sums that use it). Samples whose strip does not fit in
 * shared memory (huge filters or channel counts) or whose plane has 2^31
 * elements or more take the generic path, conv_core.h's per-element
 * function. */
#define CONV_BX 128
#define CONV_BY 2
#define CONV_K 8
#define CONV_TW CONV_BX
#define CONV_TH (CONV_BY * CONV_K)
#define CONV_SMEM_MAX (48 * 1024)
#define CONV_LOADS 5 /* tile rows a thread loads at once (5x5: 20 rows, 10 a thread) */
#define CONV_MIN_BLOCKS 3 /* per SM: at most 85 registers a thread (the 5x5 sums use 80, without spilling) */

typedef struct conv_plan {
  ladle__conv_desc d; /* taps: device copy */
  int tiled;
  int cl, rw, orw, h, w, out_h, sw, sh;
  int tiles_x, tiles_y;
  int64_t planes, tiles, elems;
} conv_plan;

/* ladle__conv_border in 32 bits (the tiled path's indices fit). */
__device__ __forceinline__ int conv_border32(int i, int n, int border) {
  if (i >= 0 && i < n) return i;
  switch (border) {
    case LADLE__BORDER_CONSTANT: return -1;
    case LADLE__BORDER_CLAMP: return i < 0 ? 0 : n - 1;
    case LADLE__BORDER_WRAP: i %= n; return i < 0 ? i + n : i;
    case LADLE__BORDER_REFLECT_1001: {
      const int period = 2 * n;
      i %= period;
      if (i < 0) i += period;
      return i >= n ? period - 1 - i : i;
    }
    default: {
      if (n == 1) return 0;
      const int period = 2 * n - 2;
      i %= period;
      if (i < 0) i += period;
      return i >= n ? period - i : i;
    }
  }
}

/* Element xe of a row (outside [0, rw) in edge tiles) mapped by the border
 * mode pixel-wise, keeping its channel; -1: the fill value. */
__device__ __forceinline__ int conv_col(int xe, int rw, int cl, int w, int border) {
  if (xe >= 0 && xe < rw) return xe;
  const int px = xe >= 0 ? xe / cl : -((cl - 1 - xe) / cl), c = xe - px * cl;
  const int bx = conv_border32(px, w, border);
  return bx < 0 ? -1 : bx * cl + c;
}

/* A thread's CONV_K sums over the tile (base: its column of its first row):
 * any filter size, the taps read from shared memory. */
__device__ __forceinline__ void conv_sums(float *acc, const float *taps, const float *base, int r, int s, int sw,
                                          int cl) {
  for (int i = 0; i < r; i++)
    for (int j = 0; j < s; j++) {
      const float wt = taps[i * s + j];
      const float *q = base + i * sw + j * cl;
#pragma unroll
      for (int k = 0; k < CONV_K; k++) acc[k] = __fadd_rn(acc[k], __fmul_rn(wt, q[k * sw]));
    }
}

/* The same sums for an R x S filter known at compile time: the taps in
 * registers, and each tile value read once for all the sums that use it
 * (tile row rho serves row k with tap row rho - k). Every sum still takes
 * its taps row by row, each row left to right, as conv_sums. */
template <int R, int S>
__device__ __forceinline__ void conv_sums_fixed(float *acc, const float *taps, const float *base, int sw, int cl) {
  float w[R * S];
#pragma unroll
  for (int k = 0; k < R * S; k++) w[k] = taps[k];
#pragma unroll
  for (int rho = 0; rho < CONV_K + R - 1; rho++)
#pragma unroll
    for (int j = 0; j < S; j++) {
      const float v = base[rho * sw + j * cl];
#pragma unroll
      for (int k = 0; k < CONV_K; k++)
        if (rho - k >= 0 && rho - k < R) acc[k] = __fadd_rn(acc[k], __fmul_rn(w[(rho - k) * S + j], v));
    }
}

template <typename TI, int OT>
__global__ void __launch_bounds__(CONV_BX *CONV_BY, CONV_MIN_BLOCKS) conv_kernel(const conv_plan *__restrict__ plans) {
  extern __shared__ float conv_smem[];
  const conv_plan *p = plans + blockIdx.y;
  const int tid = threadIdx.y * CONV_BX + threadIdx.x;
  if (!p->tiled) {
    for (int64_t e = (int64_t)blockIdx.x * (CONV_BX * CONV_BY) + tid; e < p->elems;
         e += (int64_t)gridDim.x * (CONV_BX * CONV_BY))
      ladle__conv_element(&p->d, e);
    return;
  }
  const int r = p->d.r, s = p->d.s, cl = p->cl, rw = p->rw, orw = p->orw, h = p->h, sw = p->sw, sh = p->sh;
  const int border = p->d.border;
  const float fill = p->d.fill;
  float *taps = conv_smem, *tile = conv_smem + r * s;
  for (int k = tid; k < r * s; k += CONV_BX * CONV_BY) taps[k] = p->d.taps[k];
  for (int64_t t = blockIdx.x; t < p->tiles; t += gridDim.x) {
    const int64_t rest = t / p->tiles_x, plane = rest / p->tiles_y;
    const int x0 = (int)(t - rest * p->tiles_x) * CONV_TW, y0 = (int)(rest - plane * p->tiles_y) * CONV_TH;
    const int ix0 = x0 - p->d.ax * cl, iy0 = y0 - p->d.ay;
    const TI *in = (const TI *)p->d.in + plane * ((int64_t)h * rw);
    const bool inside = ix0 >= 0 && ix0 + sw <= rw && iy0 >= 0 && iy0 + sh <= h;
    __syncthreads(); /* the taps are in; the previous tile is no longer read */
    /* CONV_LOADS rows a thread at a time, their loads issued before any
     * store, so that several are in flight. */
    for (int row0 = threadIdx.y; row0 < sh; row0 += CONV_LOADS * CONV_BY)
      for (int col = threadIdx.x; col < sw; col += CONV_BX) {
        float v[CONV_LOADS];
#pragma unroll
        for (int u = 0; u < CONV_LOADS; u++) {
          const int row = row0 + u * CONV_BY;
          v[u] = 0;
          if (row >= sh) continue;
          if (inside) {
            v[u] = (float)in[(iy0 + row) * rw + ix0 + col];
          } else {
            const int yy = conv_border32(iy0 + row, h, border), xe = conv_col(ix0 + col, rw, cl, p->w, border);
            v[u] = yy < 0 || xe < 0 ? fill : (float)in[yy * rw + xe];
          }
        }
#pragma unroll
        for (int u = 0; u < CONV_LOADS; u++)
          if (row0 + u * CONV_BY < sh) tile[(row0 + u * CONV_BY) * sw + col] = v[u];
      }
    __syncthreads();
    float acc[CONV_K];
#pragma unroll
    for (int k = 0; k < CONV_K; k++) acc[k] = 0;
    const float *base = tile + threadIdx.y * CONV_K * sw + threadIdx.x;
    if (r == 3 && s == 3) conv_sums_fixed<3, 3>(acc, taps, base, sw, cl);
    else if (r == 5 && s == 5) conv_sums_fixed<5, 5>(acc, taps, base, sw, cl);
    else conv_sums(acc, taps, base, r, s, sw, cl);
    const int ox = x0 + threadIdx.x, oy0 = y0 + threadIdx.y * CONV_K;
    if (ox < orw) {
      void *out = (char *)p->d.out + (size_t)plane * ((size_t)p->out_h * orw) * ladle__dtype_bytes(OT);
#pragma unroll
      for (int k = 0; k < CONV_K; k++)
        if (oy0 + k < p->out_h) ladle__store_f32(out, (size_t)((oy0 + k) * orw + ox), OT, acc[k]);
    }
  }
}

/* blocks per SM: 3x3 in 64 registers a thread, 5x5 in 80 (64 spill) */
#define CONV_FAST_BLOCKS(R) ((R) == 5 ? 3 : 4)
#define CONV_FAST_TILES 4 /* consecutive tiles a block */

template <int R, int CL>
struct conv_fast_shape {
  enum {
    SW = CONV_TW + (R - 1) * CL,               /* tile elements a row */
    SH = CONV_TH + R - 1,                      /* tile rows */
    SWP = (SW + 3) & ~3,                       /* the tile's row stride */
    NW = (SW + 6) / 4,                         /* aligned words a row spans at most */
    LOADS = (SH * NW + CONV_BX * CONV_BY - 1) / (CONV_BX * CONV_BY) /* words a thread */
  };
};

/* Where tile t of a sample lies: its plane's input, its first output
 * element x0 and row y0, its input origin (ix0, iy0) and the range [lo, hi)
 * of its row elements inside the plane's rows. */
typedef struct conv_tile {
  const uint8_t *in;
  int plane, x0, y0, ix0, iy0, lo, hi;
} conv_tile;

template <int R, int CL>
__device__ __forceinline__ conv_tile conv_tile_at(const conv_plan *p, int t) {
  typedef conv_fast_shape<R, CL> F;
  conv_tile c;
  const int rest = t / p->tiles_x;
  c.plane = rest / p->tiles_y;
  c.x0 = (t - rest * p->tiles_x) * CONV_TW, c.y0 = (rest - c.plane * p->tiles_y) * CONV_TH;
  c.ix0 = c.x0 - p->d.ax * CL, c.iy0 = c.y0 - p->d.ay;
  c.in = (const uint8_t *)p->d.in + (int64_t)c.plane * ((int64_t)p->h * p->rw);
  c.lo = c.ix0 < 0 ? -c.ix0 : 0, c.hi = c.ix0 + F::SW <= p->rw ? F::SW : p->rw - c.ix0;
  return c;
}

/* Word u of this thread's share of tile c: its row, the address of the
 * row's first byte inside the tile (border-mapped row; row 0 for a row of
 * fill), and its mapped row yy (-1: fill). Returns 0 when the word holds no
 * byte of the tile. */
template <int R, int CL>
__device__ __forceinline__ int conv_word(const conv_plan *p, const conv_tile &c, int u, int tid, int *row, int *wi,
                                         const uint8_t **first, int *yy) {
  typedef conv_fast_shape<R, CL> F;
  const int item = tid + u * (CONV_BX * CONV_BY);
  *row = item / F::NW, *wi = item - *row * F::NW;
  if (*row >= F::SH) return 0;
  *yy = conv_border32(c.iy0 + *row, p->h, p->d.border);
  *first = c.in + (int64_t)(*yy < 0 ? 0 : *yy) * p->rw + c.ix0 + c.lo;
  return 4 * *wi < (int)((uintptr_t)*first & 3) + c.hi - c.lo;
}

/* Issues the loads of this thread's words of tile c (none wait). */
template <int R, int CL>
__device__ __forceinline__ unsigned conv_load_words(const conv_plan *p, const conv_tile &c, int tid, unsigned *word) {
  typedef conv_fast_shape<R, CL> F;
  unsigned live = 0;
#pragma unroll
  for (int u = 0; u < F::LOADS; u++) {
    int row, wi, yy;
    const uint8_t *first;
    word[u] = 0;
    if (!conv_word<R, CL>(p, c, u, tid, &row, &wi, &first, &yy)) continue;
    live |= 1u << u;
    if (yy >= 0) word[u] = __ldg((const unsigned *)(first - ((uintptr_t)first & 3)) + wi);
  }
  return live;
}

/* The fast path: uint8 input, an R x R filter (3 or 5) and CL elements a
 * pixel (1: HW/CHW planes, 3: HWC), the same for every sample of the batch.
 * The same tiles and sums as conv_kernel, with the tile's row stride and the
 * channel step known at compile time (every shared-memory read an immediate
 * offset), and the tile loaded with aligned 4-byte words, bytes turned into
 * floats by gpu_u8.h's arithmetic; only tile elements outside the plane
 * (edge tiles) are border-mapped one by one. A block takes CONV_FAST_TILES
 * consecutive tiles, the words of the next tile loaded while the current
 * one is summed. uint8 results are stored by gpu_u8.h's rounding
 * (ladle__f32_to_u8's bits). */
template <int OT, int R, int CL>
__global__ void __launch_bounds__(CONV_BX *CONV_BY, CONV_FAST_BLOCKS(R))
    conv_fast_kernel(const conv_plan *__restrict__ plans) {
  typedef conv_fast_shape<R, CL> F;
  __shared__ float tile[F::SH * F::SWP];
  const conv_plan *p = plans + blockIdx.y;
  const int tid = threadIdx.y * CONV_BX + threadIdx.x, tiles = (int)p->tiles;
  const float fill = p->d.fill;
  /* lane l writes its words' bytes in the order (l / 8) % 4, ...: the four
   * stores of a warp each fill 32 banks, no conflict */
  const int turn = (int)(threadIdx.x >> 3) & 3;
  float w[R * R];
#pragma unroll
  for (int k = 0; k < R * R; k++) w[k] = __ldg(p->d.taps + k);
  for (int t0 = (int)blockIdx.x * CONV_FAST_TILES; t0 < tiles; t0 += (int)gridDim.x * CONV_FAST_TILES) {
    const int t1 = t0 + CONV_FAST_TILES < tiles ? t0 + CONV_FAST_TILES : tiles;
    unsigned word[F::LOADS], live = conv_load_words<R, CL>(p, conv_tile_at<R, CL>(p, t0), tid, word);
    for (int t = t0; t < t1; t++) {
      const conv_tile c = conv_tile_at<R, CL>(p, t);
      __syncthreads(); /* the previous tile is no longer read */
#pragma unroll
      for (int u = 0; u < F::LOADS; u++) {
        int row, wi, yy;
        const uint8_t *first;
        if (!(live >> u & 1)) continue;
        conv_word<R, CL>(p, c, u, tid, &row, &wi, &first, &yy);
        const int e0 = c.lo + 4 * wi - (int)((uintptr_t)first & 3); /* tile element of the word's byte 0 */
#pragma unroll
        for (int k = 0; k < 4; k++) {
          const int b = (k + turn) & 3;
          if (e0 + b >= c.lo && e0 + b < c.hi)
            tile[row * F::SWP + e0 + b] = yy < 0 ? fill : ladle__gpu_byte_float(word[u], b);
        }
      }
      if (c.lo > 0 || c.hi < F::SW) { /* edge tile: the elements outside the row, one by one */
        const int nh = c.lo + F::SW - c.hi;
        for (int item = tid; item < F::SH * nh; item += CONV_BX * CONV_BY) {
          const int row = item / nh, k = item - row * nh, e = k < c.lo ? k : c.hi + (k - c.lo);
          const int yy = conv_border32(c.iy0 + row, p->h, p->d.border);
          const int xe = conv_col(c.ix0 + e, p->rw, CL, p->w, p->d.border);
          tile[row * F::SWP + e] = yy < 0 || xe < 0 ? fill : (float)c.in[(int64_t)yy * p->rw + xe];
        }
      }
      __syncthreads();
      if (t + 1 < t1) live = conv_load_words<R, CL>(p, conv_tile_at<R, CL>(p, t + 1), tid, word);
      float acc[CONV_K];
#pragma unroll
      for (int k = 0; k < CONV_K; k++) acc[k] = 0;
      const float *base = tile + threadIdx.y * CONV_K * F::SWP + threadIdx.x;
#pragma unroll
      for (int rho = 0; rho < CONV_K + R - 1; rho++)
#pragma unroll
        for (int j = 0; j < R; j++) {
          const float v = base[rho * F::SWP + j * CL];
#pragma unroll
          for (int k = 0; k < CONV_K; k++)
            if (rho - k >= 0 && rho - k < R) acc[k] = __fadd_rn(acc[k], __fmul_rn(w[(rho - k) * R + j], v));
        }
      const int ox = c.x0 + threadIdx.x, oy0 = c.y0 + threadIdx.y * CONV_K, orw = p->orw;
      if (ox < orw) {
        const size_t at = (size_t)c.plane * ((size_t)p->out_h * orw) + (size_t)oy0 * orw + ox;
#pragma unroll
        for (int k = 0; k < CONV_K; k++) {
          if (oy0 + k >= p->out_h) break;
          if (OT == LADLE_UINT8)
            ((uint8_t *)p->d.out)[at + (size_t)k * orw] = (uint8_t)ladle__gpu_u8_rne(acc[k]);
          else
            ladle__store_f32(p->d.out, at + (size_t)k * orw, OT, acc[k]);
        }
      }
    }
  }
}

typedef void (*conv_fn)(const conv_plan *);

/* The kernel for an input type and an output type (the input's or float). */
template <typename TI, int IT>
conv_fn conv_for(int out_type) {
  return out_type == LADLE_FLOAT32 ? conv_kernel<TI, LADLE_FLOAT32> : out_type == IT ? conv_kernel<TI, IT> : NULL;
}

conv_fn conv_kernel_for(int in_type, int out_type) {
  switch (in_type) {
    case LADLE_UINT8: return conv_for<uint8_t, LADLE_UINT8>(out_type);
    case LADLE_INT8: return conv_for<int8_t, LADLE_INT8>(out_type);
    case LADLE_INT16: return conv_for<int16_t, LADLE_INT16>(out_type);
    case LADLE_UINT16: return conv_for<uint16_t, LADLE_UINT16>(out_type);
    case LADLE_FLOAT32: return conv_for<float, LADLE_FLOAT32>(out_type);
    default: return NULL;
  }
}

/* conv_fast_kernel for a batch whose every sample is tiled, uint8, with one
 * filter size (3x3 or 5x5) and one element step (1 or 3), else NULL. */
template <int OT>
conv_fn conv_fast_for_type(int r, int cl) {
  if (r == 5) return cl == 3 ? conv_fast_kernel<OT, 5, 3> : conv_fast_kernel<OT, 5, 1>;
  return cl == 3 ? conv_fast_kernel<OT, 3, 3> : conv_fast_kernel<OT, 3, 1>;
}

conv_fn conv_fast_for(const conv_plan *hp, int n) {
  const int r = hp[0].d.r, cl = hp[0].cl, ot = hp[0].d.out_type;
  if (hp[0].d.in_type != LADLE_UINT8 || (r != 3 && r != 5) || (cl != 1 && cl != 3) ||
      (ot != LADLE_UINT8 && ot != LADLE_FLOAT32))
    return NULL;
  for (int i = 0; i < n; i++)
    if (!hp[i].tiled || hp[i].tiles >= INT32_MAX || hp[i].d.r != r || hp[i].d.s != r || hp[i].cl != cl) return NULL;
  return ot == LADLE_UINT8 ? conv_fast_for_type<LADLE_UINT8>(r, cl) : conv_fast_for_type<LADLE_FLOAT32>(r, cl);
}

/* Fills a sample's plan; its tiled path needs `smem` bytes of shared memory. */
void conv_plan_of(conv_plan *p, const ladle__conv_desc *d, size_t *smem) {
  memset(p, 0, sizeof *p);
  p->d = *d;
  p->elems = d->frames * d->channels * d->out_h * d->out_w;
  const int64_t cl = d->channel_last ? d->channels : 1, rw = d->w * cl, orw = d->out_w * cl;
  const int64_t sw = CONV_TW + (int64_t)(d->s - 1) * cl, sh = CONV_TH + (int64_t)d->r - 1;
  const int64_t bytes = (sw * sh + (int64_t)d->r * d->s) * (int64_t)sizeof(float);
  p->planes = d->channel_last ? d->frames : d->frames * d->channels;
  p->tiled = bytes <= CONV_SMEM_MAX && d->h * rw < INT32_MAX && d->out_h * orw < INT32_MAX && rw + sw < INT32_MAX &&
             d->h + sh < INT32_MAX;
  if (!p->tiled) return;
  p->cl = (int)cl, p->rw = (int)rw, p->orw = (int)orw, p->h = (int)d->h, p->w = (int)d->w, p->out_h = (int)d->out_h;
  p->sw = (int)sw, p->sh = (int)sh;
  p->tiles_x = (int)((orw + CONV_TW - 1) / CONV_TW);
  p->tiles_y = (int)((d->out_h + CONV_TH - 1) / CONV_TH);
  p->tiles = p->planes * p->tiles_x * p->tiles_y;
  if ((size_t)bytes > *smem) *smem = (size_t)bytes;
}

}  // namespace

extern "C" size_t ladle__gpu_grid_param_bytes(int n) { return ladle__align16((size_t)n * sizeof(ladle__gpu_grid_desc)); }

extern "C" ladle_status ladle__gpu_grid_mask(const ladle__gpu_grid_desc *d, int n, void *host_params,
                                             void *dev_params, size_t param_bytes, void *stream) {
  ladle_status st = LADLE_OK;
  cudaStream_t s = ladle__cuda_stream(stream);
  int64_t most = 1;
  LADLE_CUDA_ENTER();
  LADLE_TRY(check_params(n, d, host_params, dev_params, param_bytes, ladle__gpu_grid_param_bytes(n), __func__));
  for (int i = 0; i < n; i++)
    if (d[i].h * d[i].w > most) most = d[i].h * d[i].w;
  memcpy(host_params, d, (size_t)n * sizeof *d);
  LADLE_CUDA_CHECK(cudaMemcpyAsync(dev_params, host_params, (size_t)n * sizeof *d, cudaMemcpyHostToDevice, s));
  (void)cudaGetLastError();
  grid_kernel<<<dim3(blocks_for(most), (unsigned)n), 256, 0, s>>>((const ladle__gpu_grid_desc *)dev_params);
  LADLE_CUDA_CHECK_LAUNCH(grid_kernel);
done:
  return st;
}

extern "C" size_t ladle__gpu_erase_param_bytes(int n) { return ladle__align16((size_t)n * sizeof(ladle__gpu_erase_desc)); }

extern "C" ladle_status ladle__gpu_erase(const ladle__gpu_erase_desc *d, int n, void *host_params, void *dev_params,
                                         size_t param_bytes, void *stream) {
  ladle_status st = LADLE_OK;
  cudaStream_t s = ladle__cuda_stream(stream);
  int64_t most = 1, most_box = 1;
  LADLE_CUDA_ENTER();
  LADLE_TRY(check_params(n, d, host_params, dev_params, param_bytes, ladle__gpu_erase_param_bytes(n), __func__));
  for (int i = 0; i < n; i++) {
    LADLE_CHECK(d[i].ndim >= 0 && d[i].ndim <= 8 && d[i].num_boxes <= LADLE__GPU_ERASE_MAX_BOXES &&
                    d[i].num_fill >= 1 && d[i].num_fill <= LADLE__GPU_ERASE_MAX_FILL && d[i].elem_size <= 8,
                LADLE_ERROR_INVALID_ARGUMENT, "sample %d: bad descriptor", i);
    int64_t count = 1, lo[8], ext[8];
    for (int k = 0; k < d[i].ndim; k++) count *= d[i].shape[k];
    count = (count * d[i].elem_size + 15) / 16; /* 16-byte units, where aligned */
    if (count > most) most = count;
    for (int b = 0; b < d[i].num_boxes; b++) {
      int64_t box = erase_box(&d[i], b, lo, ext);
      if (box > most_box) most_box = box;
    }
  }
  memcpy(host_params, d, (size_t)n * sizeof *d);
  LADLE_CUDA_CHECK(cudaMemcpyAsync(dev_params, host_params, (size_t)n * sizeof *d, cudaMemcpyHostToDevice, s));
  (void)cudaGetLastError();
  erase_copy_kernel<<<dim3(blocks_for(most), (unsigned)n), 256, 0, s>>>((const ladle__gpu_erase_desc *)dev_params);
  LADLE_CUDA_CHECK_LAUNCH(erase_copy_kernel);
  erase_fill_kernel<<<dim3(blocks_for(most_box), (unsigned)n), 256, 0, s>>>((const ladle__gpu_erase_desc *)dev_params);
  LADLE_CUDA_CHECK_LAUNCH(erase_fill_kernel);
done:
  return st;
}

extern "C" size_t ladle__gpu_blur_param_bytes(int num_passes, int num_weights) {
  return ladle__align16((size_t)num_passes * sizeof(ladle__gpu_blur_pass)) + (size_t)num_weights * sizeof(float);
}

extern "C" ladle_status ladle__gpu_blur(const ladle__gpu_blur_pass *passes, int n, int num_passes,
                                        const float *weights, int num_weights, void *host_params, void *dev_params,
                                        size_t param_bytes, void *stream) {
  ladle_status st = LADLE_OK;
  cudaStream_t s = ladle__cuda_stream(stream);
  size_t table_at = ladle__align16((size_t)num_passes * n * sizeof *passes);
  LADLE_CUDA_ENTER();
  LADLE_TRY(check_params(n, passes, host_params, dev_params, param_bytes,
                         ladle__gpu_blur_param_bytes(num_passes * n, num_weights), __func__));
  LADLE_CHECK(num_passes >= 1 && weights, LADLE_ERROR_INVALID_ARGUMENT, "no passes or no weights");
  memcpy(host_params, passes, (size_t)num_passes * n * sizeof *passes);
  memcpy((char *)host_params + table_at, weights, (size_t)num_weights * sizeof(float));
  LADLE_CUDA_CHECK(cudaMemcpyAsync(dev_params, host_params, table_at + (size_t)num_weights * sizeof(float),
                                   cudaMemcpyHostToDevice, s));
  (void)cudaGetLastError();
  for (int p = 0; p < num_passes; p++) {
    int64_t most = 1;
    const ladle__gpu_blur_pass *q0 = passes + (size_t)p * n;
    for (int i = 0; i < n; i++) {
      const ladle__gpu_blur_pass *q = q0 + i;
      LADLE_CHECK(q->src_type == q0->src_type && q->dst_type == q0->dst_type, LADLE_ERROR_INVALID_ARGUMENT,
                  "pass %d, sample %d: the samples' types differ", p, i);
      if (q->outer * q->len * q->inner > most) most = q->outer * q->len * q->inner;
    }
    blur_kernel_for(q0->src_type, q0->dst_type)<<<dim3(blocks_for(most), (unsigned)n), 256, 0, s>>>(
        (const ladle__gpu_blur_pass *)dev_params + (size_t)p * n, (const float *)((const char *)dev_params + table_at));
    LADLE_CUDA_CHECK_LAUNCH(blur_kernel);
  }
done:
  return st;
}

extern "C" size_t ladle__gpu_norm_param_bytes(int n) { return ladle__align16((size_t)n * sizeof(ladle__gpu_norm_desc)); }

extern "C" ladle_status ladle__gpu_normalize(const ladle__gpu_norm_desc *d, int n, int batch, void *host_params,
                                             void *dev_params, size_t param_bytes, void *stream) {
  ladle_status st = LADLE_OK;
  cudaStream_t s = ladle__cuda_stream(stream);
  int64_t items = 1, groups = 1, count = 1, tiles = 0;
  int exact = 0, general = 0;
  const ladle__gpu_norm_desc *dd = (const ladle__gpu_norm_desc *)dev_params;
  LADLE_CUDA_ENTER();
  LADLE_TRY(check_params(n, d, host_params, dev_params, param_bytes, ladle__gpu_norm_param_bytes(n), __func__));
  for (int i = 0; i < n; i++) {
    LADLE_CHECK(d[i].ndim >= 0 && d[i].ndim <= 8 && (!batch || (d[i].groups == d[0].groups && d[i].batch_mean)),
                LADLE_ERROR_INVALID_ARGUMENT, "sample %d: bad descriptor", i);
    if (d[i].groups * d[i].chunks > items) items = d[i].groups * d[i].chunks;
    if (d[i].groups > groups) groups = d[i].groups;
    if (d[i].groups * d[i].members > count) count = d[i].groups * d[i].members;
    LADLE_CHECK(d[i].exact == (d[0].in_type == LADLE_UINT8) && d[i].in_type == d[0].in_type &&
                    d[i].out_type == d[0].out_type && d[i].gmode >= -1 && d[i].gmode <= 1,
                LADLE_ERROR_INVALID_ARGUMENT, "sample %d: bad descriptor", i);
    if (d[i].gmode < 0) general = 1;
    else if (d[i].groups * d[i].members > 0) {
      int64_t t;
      if (d[i].gmode == 1) {
        t = d[i].ga * ((d[i].gb + NORM_THREADS * NORM_ITER - 1) / (NORM_THREADS * NORM_ITER));
      } else {
        const int64_t cw = d[i].gb < NORM_THREADS ? d[i].gb : NORM_THREADS, rows = (NORM_THREADS / cw) * NORM_ITER;
        t = ((d[i].gb + cw - 1) / cw) * ((d[i].ga + rows - 1) / rows);
      }
      if (t > tiles) tiles = t;
    }
  }
  exact = d[0].exact;
  memcpy(host_params, d, (size_t)n * sizeof *d);
  LADLE_CUDA_CHECK(cudaMemcpyAsync(dev_params, host_params, (size_t)n * sizeof *d, cudaMemcpyHostToDevice, s));
  (void)cudaGetLastError();
  if (exact) {
    norm_zero_kernel<<<dim3(blocks_for(groups), (unsigned)n), 256, 0, s>>>(dd);
    LADLE_CUDA_CHECK_LAUNCH(norm_zero_kernel);
    if (general) {
      norm_exact_chunk_kernel<<<dim3(blocks_for(items), (unsigned)n), 256, 0, s>>>(dd);
      LADLE_CUDA_CHECK_LAUNCH(norm_exact_chunk_kernel);
    }
    if (tiles) {
      const unsigned grid = (unsigned)(tiles < (1 << 20) ? tiles : (1 << 20));
      norm_exact_kernel<<<dim3(grid, (unsigned)n), NORM_THREADS, 0, s>>>(dd);
      LADLE_CUDA_CHECK_LAUNCH(norm_exact_kernel);
    }
    norm_moments_kernel<<<dim3(blocks_for(groups), (unsigned)n), 256, 0, s>>>(dd);
    LADLE_CUDA_CHECK_LAUNCH(norm_moments_kernel);
  } else {
    for (int pass = 0; pass < 2; pass++) {
      norm_chunk_kernel<<<dim3(blocks_for(items * 32), (unsigned)n), 256, 0, s>>>(dd, pass); /* a warp a chunk */
      LADLE_CUDA_CHECK_LAUNCH(norm_chunk_kernel);
      norm_total_kernel<<<dim3(blocks_for(groups), (unsigned)n), 256, 0, s>>>(dd, pass);
      LADLE_CUDA_CHECK_LAUNCH(norm_total_kernel);
    }
  }
  if (batch) {
    norm_combine_kernel<<<blocks_for(groups), 256, 0, s>>>(dd, n);
    LADLE_CUDA_CHECK_LAUNCH(norm_combine_kernel);
  }
  norm_finalize_kernel<<<dim3(blocks_for(groups), (unsigned)n), 256, 0, s>>>(dd, n, batch);
  LADLE_CUDA_CHECK_LAUNCH(norm_finalize_kernel);
  {
    const int u8 = d[0].in_type == LADLE_UINT8, f32 = d[0].out_type == LADLE_FLOAT32;
    void (*apply)(const ladle__gpu_norm_desc *) = u8 && f32 ? norm_apply_kernel<LADLE_UINT8, LADLE_FLOAT32>
                                                  : u8      ? norm_apply_kernel<LADLE_UINT8, -1>
                                                  : f32     ? norm_apply_kernel<-1, LADLE_FLOAT32>
                                                            : norm_apply_kernel<-1, -1>;
    apply<<<dim3(blocks_for((count + 3) / 4), (unsigned)n), 256, 0, s>>>(dd); /* ~4 elements a thread */
    LADLE_CUDA_CHECK_LAUNCH(norm_apply_kernel);
  }
done:
  return st;
}

extern "C" size_t ladle__gpu_conv_param_bytes(int n, int taps) {
  return ladle__align16((size_t)n * sizeof(conv_plan)) + ladle__align16((size_t)taps * sizeof(float));
}

extern "C" ladle_status ladle__gpu_conv(const ladle__conv_desc *d, int n, int taps, void *host_params, void *dev_params,
                                        size_t param_bytes, void *stream) {
  ladle_status st = LADLE_OK;
  cudaStream_t s = ladle__cuda_stream(stream);
  int64_t most = 1;
  size_t smem = 0;
  conv_fn kernel = NULL, fast = NULL;
  LADLE_CUDA_ENTER();
  LADLE_TRY(check_params(n, d, host_params, dev_params, param_bytes, ladle__gpu_conv_param_bytes(n, taps), __func__));
  kernel = conv_kernel_for(d[0].in_type, d[0].out_type);
  LADLE_CHECK(kernel, LADLE_ERROR_UNSUPPORTED, "input type %d with output type %d", d[0].in_type, d[0].out_type);
  {
    conv_plan *hp = (conv_plan *)host_params;
    const size_t at = ladle__align16((size_t)n * sizeof *hp);
    float *host_taps = (float *)((char *)host_params + at), *dev_taps = (float *)((char *)dev_params + at);
    int used = 0;
    for (int i = 0; i < n; i++) {
      const int k = d[i].r * d[i].s;
      LADLE_CHECK(d[i].in_type == d[0].in_type && d[i].out_type == d[0].out_type, LADLE_ERROR_INVALID_ARGUMENT,
                  "sample %d: the samples' types differ", i);
      LADLE_CHECK(used + k <= taps, LADLE_ERROR_INVALID_ARGUMENT, "sample %d: more filter values than `taps`", i);
      memcpy(host_taps + used, d[i].taps, sizeof(float) * (size_t)k);
      conv_plan_of(&hp[i], &d[i], &smem);
      hp[i].d.taps = dev_taps + used;
      used += k;
      const int64_t blocks = hp[i].tiled ? hp[i].tiles : (hp[i].elems + CONV_BX * CONV_BY - 1) / (CONV_BX * CONV_BY);
      if (blocks > most) most = blocks;
    }
  }
  LADLE_CUDA_CHECK(cudaMemcpyAsync(dev_params, host_params, ladle__gpu_conv_param_bytes(n, taps),
                                   cudaMemcpyHostToDevice, s));
  (void)cudaGetLastError();
  fast = conv_fast_for((const conv_plan *)host_params, n);
  if (fast) {
    const int64_t groups = (most + CONV_FAST_TILES - 1) / CONV_FAST_TILES;
    fast<<<dim3((unsigned)(groups < (1 << 20) ? groups : (1 << 20)), (unsigned)n), dim3(CONV_BX, CONV_BY), 0, s>>>(
        (const conv_plan *)dev_params);
    LADLE_CUDA_CHECK_LAUNCH(conv_fast_kernel);
  } else {
    kernel<<<dim3((unsigned)(most < (1 << 20) ? most : (1 << 20)), (unsigned)n), dim3(CONV_BX, CONV_BY), smem, s>>>(
        (const conv_plan *)dev_params);
    LADLE_CUDA_CHECK_LAUNCH(conv_kernel);
  }
done:
  return st;
}
