/* grid_mask, erase and gaussian_blur passes on the GPU (filter_kernels.h):
 * one launch per batch (per pass for the blur), grid-stride loops over each
 * sample's elements. */
#ifndef LADLE_HAVE_CUDA
#define LADLE_HAVE_CUDA 1
#endif

#include <string.h>

#include "ops/filter/filter_kernels.h"
#include "ops/kernels/gpu_kernels.h"

extern "C" {
#include "core/error.h"
}
#include "cuda/runtime.h"

namespace {

size_t align16(size_t n) { return (n + 15) & ~(size_t)15; }

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

__device__ float load_float(const void *p, int type, int64_t i) {
  switch (type) {
    case LADLE_UINT8: return (float)((const uint8_t *)p)[i];
    case LADLE_INT32: return (float)((const int32_t *)p)[i];
    case LADLE_INT64: return (float)((const int64_t *)p)[i];
    default: return ((const float *)p)[i];
  }
}

__device__ int64_t reflect101(int64_t i, int64_t len) {
  if (len <= 1) return 0;
  int64_t period = 2 * len - 2;
  i %= period;
  if (i < 0) i += period;
  return i >= len ? period - i : i;
}

/* I: the index type (32-bit where the pass has fewer than 2^31 elements).
 * Taps inside [0, len) skip reflect101 (which returns them unchanged). */
template <typename I>
__device__ void blur_pass(const ladle__gpu_blur_pass *s, const float *w, I count) {
  const I inner = (I)s->inner, len = (I)s->len;
  const int r = s->radius;
  for (I e = (I)(blockIdx.x * blockDim.x + threadIdx.x); e < count; e += (I)(gridDim.x * blockDim.x)) {
    const I q = e / inner, j = e - q * inner, o = q / len, i = q - o * len;
    const I base = o * len * inner + j;
    float acc = 0;
    for (int k = -r; k <= r; k++) {
      const int64_t t = (int64_t)i + k;
      const I at = t >= 0 && t < (int64_t)len ? (I)t : (I)reflect101(t, (int64_t)len);
      acc = __fadd_rn(acc, __fmul_rn(w[k + r], load_float(s->src, s->src_type, (int64_t)(base + at * inner))));
    }
    ladle__gpu_store(s->dst, (size_t)e, s->dst_type, acc);
  }
}

__global__ void blur_kernel(const ladle__gpu_blur_pass *__restrict__ passes, const float *__restrict__ weights) {
  const ladle__gpu_blur_pass *s = passes + blockIdx.y;
  const int64_t count = s->outer * s->len * s->inner;
  const float *w = weights + s->weights;
  if (count <= 0) return;
  if (count <= 0x7fffffff)
    blur_pass<unsigned>(s, w, (unsigned)count);
  else
    blur_pass<unsigned long long>(s, w, (unsigned long long)count);
}

/* --- normalize ------------------------------------------------------------ */

__device__ double load_double(const void *p, int type, int64_t i) {
  switch (type) {
    case LADLE_UINT8: return (double)((const uint8_t *)p)[i];
    case LADLE_INT32: return (double)((const int32_t *)p)[i];
    case LADLE_INT64: return (double)((const int64_t *)p)[i];
    default: return (double)((const float *)p)[i];
  }
}

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

/* Chunk sums: pass 0 of x, pass 1 of (x - mean)^2. One thread per (group, chunk). */
__global__ void norm_chunk_kernel(const ladle__gpu_norm_desc *__restrict__ samples, int pass) {
  const ladle__gpu_norm_desc *s = samples + blockIdx.y;
  const int64_t items = s->groups * s->chunks;
  for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < items; t += (int64_t)gridDim.x * blockDim.x) {
    const int64_t g = t / s->chunks, c = t % s->chunks;
    const int64_t end = (c + 1) * LADLE__NORM_CHUNK < s->members ? (c + 1) * LADLE__NORM_CHUNK : s->members;
    const double mean = pass ? s->stat_mean[g] : 0;
    double acc = 0;
    for (int64_t m = c * LADLE__NORM_CHUNK; m < end; m++) {
      const double x = load_double(s->in, s->in_type, member_offset(s, g, m)), d = __dsub_rn(x, mean);
      acc = __dadd_rn(acc, pass ? __dmul_rn(d, d) : x);
    }
    s->part[t] = acc;
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

__global__ void norm_apply_kernel(const ladle__gpu_norm_desc *__restrict__ samples) {
  const ladle__gpu_norm_desc *s = samples + blockIdx.y;
  const int64_t count = s->groups * s->members;
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < count; e += (int64_t)gridDim.x * blockDim.x) {
    int64_t rest = e, g = 0, gs = 1;
    for (int d = s->ndim - 1; d >= 0; d--) {
      const int64_t idx = rest % s->shape[d];
      rest /= s->shape[d];
      if (!s->reduced[d]) {
        g += idx * gs;
        gs *= s->shape[d];
      }
    }
    const float x = (float)load_double(s->in, s->in_type, e);
    const float v = __fadd_rn(__fmul_rn(__fsub_rn(x, (float)s->stat_mean[g]), (float)s->stat_m2[g]), s->shift);
    ladle__gpu_store(s->out, (size_t)e, s->out_type, v);
  }
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

/* filter: one thread per output element. */
__global__ void conv_kernel(const ladle__conv_desc *__restrict__ samples) {
  const ladle__conv_desc *d = samples + blockIdx.y;
  const int64_t count = d->frames * d->channels * d->out_h * d->out_w;
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < count; e += (int64_t)gridDim.x * blockDim.x)
    ladle__conv_element(d, e);
}

}  // namespace

extern "C" size_t ladle__gpu_grid_param_bytes(int n) { return align16((size_t)n * sizeof(ladle__gpu_grid_desc)); }

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

extern "C" size_t ladle__gpu_erase_param_bytes(int n) { return align16((size_t)n * sizeof(ladle__gpu_erase_desc)); }

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
  return align16((size_t)num_passes * sizeof(ladle__gpu_blur_pass)) + (size_t)num_weights * sizeof(float);
}

extern "C" ladle_status ladle__gpu_blur(const ladle__gpu_blur_pass *passes, int n, int num_passes,
                                        const float *weights, int num_weights, void *host_params, void *dev_params,
                                        size_t param_bytes, void *stream) {
  ladle_status st = LADLE_OK;
  cudaStream_t s = ladle__cuda_stream(stream);
  size_t table_at = align16((size_t)num_passes * n * sizeof *passes);
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
    for (int i = 0; i < n; i++) {
      const ladle__gpu_blur_pass *q = passes + (size_t)p * n + i;
      if (q->outer * q->len * q->inner > most) most = q->outer * q->len * q->inner;
    }
    blur_kernel<<<dim3(blocks_for(most), (unsigned)n), 256, 0, s>>>(
        (const ladle__gpu_blur_pass *)dev_params + (size_t)p * n, (const float *)((const char *)dev_params + table_at));
    LADLE_CUDA_CHECK_LAUNCH(blur_kernel);
  }
done:
  return st;
}

extern "C" size_t ladle__gpu_norm_param_bytes(int n) { return align16((size_t)n * sizeof(ladle__gpu_norm_desc)); }

extern "C" ladle_status ladle__gpu_normalize(const ladle__gpu_norm_desc *d, int n, int batch, void *host_params,
                                             void *dev_params, size_t param_bytes, void *stream) {
  ladle_status st = LADLE_OK;
  cudaStream_t s = ladle__cuda_stream(stream);
  int64_t items = 1, groups = 1, count = 1;
  const ladle__gpu_norm_desc *dd = (const ladle__gpu_norm_desc *)dev_params;
  LADLE_CUDA_ENTER();
  LADLE_TRY(check_params(n, d, host_params, dev_params, param_bytes, ladle__gpu_norm_param_bytes(n), __func__));
  for (int i = 0; i < n; i++) {
    LADLE_CHECK(d[i].ndim >= 0 && d[i].ndim <= 8 && (!batch || (d[i].groups == d[0].groups && d[i].batch_mean)),
                LADLE_ERROR_INVALID_ARGUMENT, "sample %d: bad descriptor", i);
    if (d[i].groups * d[i].chunks > items) items = d[i].groups * d[i].chunks;
    if (d[i].groups > groups) groups = d[i].groups;
    if (d[i].groups * d[i].members > count) count = d[i].groups * d[i].members;
  }
  memcpy(host_params, d, (size_t)n * sizeof *d);
  LADLE_CUDA_CHECK(cudaMemcpyAsync(dev_params, host_params, (size_t)n * sizeof *d, cudaMemcpyHostToDevice, s));
  (void)cudaGetLastError();
  for (int pass = 0; pass < 2; pass++) {
    norm_chunk_kernel<<<dim3(blocks_for(items), (unsigned)n), 256, 0, s>>>(dd, pass);
    LADLE_CUDA_CHECK_LAUNCH(norm_chunk_kernel);
    norm_total_kernel<<<dim3(blocks_for(groups), (unsigned)n), 256, 0, s>>>(dd, pass);
    LADLE_CUDA_CHECK_LAUNCH(norm_total_kernel);
  }
  if (batch) {
    norm_combine_kernel<<<blocks_for(groups), 256, 0, s>>>(dd, n);
    LADLE_CUDA_CHECK_LAUNCH(norm_combine_kernel);
  }
  norm_finalize_kernel<<<dim3(blocks_for(groups), (unsigned)n), 256, 0, s>>>(dd, n, batch);
  LADLE_CUDA_CHECK_LAUNCH(norm_finalize_kernel);
  norm_apply_kernel<<<dim3(blocks_for(count), (unsigned)n), 256, 0, s>>>(dd);
  LADLE_CUDA_CHECK_LAUNCH(norm_apply_kernel);
done:
  return st;
}

extern "C" size_t ladle__gpu_conv_param_bytes(int n, int taps) {
  return align16((size_t)n * sizeof(ladle__conv_desc)) + align16((size_t)taps * sizeof(float));
}

extern "C" ladle_status ladle__gpu_conv(const ladle__conv_desc *d, int n, int taps, void *host_params, void *dev_params,
                                        size_t param_bytes, void *stream) {
  ladle_status st = LADLE_OK;
  cudaStream_t s = ladle__cuda_stream(stream);
  int64_t most = 1;
  LADLE_CUDA_ENTER();
  LADLE_TRY(check_params(n, d, host_params, dev_params, param_bytes, ladle__gpu_conv_param_bytes(n, taps), __func__));
  {
    ladle__conv_desc *hd = (ladle__conv_desc *)host_params;
    const size_t at = align16((size_t)n * sizeof *d);
    float *host_taps = (float *)((char *)host_params + at), *dev_taps = (float *)((char *)dev_params + at);
    int used = 0;
    memcpy(hd, d, (size_t)n * sizeof *d);
    for (int i = 0; i < n; i++) {
      const int k = d[i].r * d[i].s;
      LADLE_CHECK(used + k <= taps, LADLE_ERROR_INVALID_ARGUMENT, "sample %d: more filter values than `taps`", i);
      memcpy(host_taps + used, d[i].taps, sizeof(float) * (size_t)k);
      hd[i].taps = dev_taps + used;
      used += k;
      const int64_t count = d[i].frames * d[i].channels * d[i].out_h * d[i].out_w;
      if (count > most) most = count;
    }
  }
  LADLE_CUDA_CHECK(cudaMemcpyAsync(dev_params, host_params, ladle__gpu_conv_param_bytes(n, taps),
                                   cudaMemcpyHostToDevice, s));
  (void)cudaGetLastError();
  conv_kernel<<<dim3(blocks_for(most), (unsigned)n), 256, 0, s>>>((const ladle__conv_desc *)dev_params);
  LADLE_CUDA_CHECK_LAUNCH(conv_kernel);
done:
  return st;
}
