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

__global__ void erase_kernel(const ladle__gpu_erase_desc *__restrict__ samples) {
  const ladle__gpu_erase_desc *s = samples + blockIdx.y;
  int64_t count = 1;
  for (int d = 0; d < s->ndim; d++) count *= s->shape[d];
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += (int64_t)gridDim.x * blockDim.x) {
    int64_t idx[8], rest = i;
    for (int d = s->ndim - 1; d >= 0; d--) {
      idx[d] = rest % s->shape[d];
      rest /= s->shape[d];
    }
    bool inside = false;
    for (int b = 0; b < s->num_boxes && !inside; b++) {
      bool in = true;
      for (int d = 0; d < s->ndim; d++) in = in && idx[d] >= s->lo[b][d] && idx[d] < s->hi[b][d];
      inside = in;
    }
    const uint8_t *src = inside ? s->fill_bytes[s->num_fill > 1 ? idx[s->channel_axis] : 0]
                                : (const uint8_t *)s->in + (size_t)i * s->elem_size;
    uint8_t *dst = (uint8_t *)s->out + (size_t)i * s->elem_size;
    for (int b = 0; b < s->elem_size; b++) dst[b] = src[b];
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

__global__ void blur_kernel(const ladle__gpu_blur_pass *__restrict__ passes, const float *__restrict__ weights) {
  const ladle__gpu_blur_pass *s = passes + blockIdx.y;
  const int64_t count = s->outer * s->len * s->inner;
  const float *w = weights + s->weights;
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < count; e += (int64_t)gridDim.x * blockDim.x) {
    const int64_t j = e % s->inner, i = (e / s->inner) % s->len, o = e / (s->inner * s->len);
    const int64_t base = o * s->len * s->inner + j;
    float acc = 0;
    for (int k = -s->radius; k <= s->radius; k++)
      acc = __fadd_rn(acc, __fmul_rn(w[k + s->radius], load_float(s->src, s->src_type,
                                                                   base + reflect101(i + k, s->len) * s->inner)));
    ladle__gpu_store(s->dst, (size_t)e, s->dst_type, acc);
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
  int64_t most = 1;
  LADLE_CUDA_ENTER();
  LADLE_TRY(check_params(n, d, host_params, dev_params, param_bytes, ladle__gpu_erase_param_bytes(n), __func__));
  for (int i = 0; i < n; i++) {
    LADLE_CHECK(d[i].ndim >= 0 && d[i].ndim <= 8 && d[i].num_boxes <= LADLE__GPU_ERASE_MAX_BOXES &&
                    d[i].num_fill >= 1 && d[i].num_fill <= LADLE__GPU_ERASE_MAX_FILL && d[i].elem_size <= 8,
                LADLE_ERROR_INVALID_ARGUMENT, "sample %d: bad descriptor", i);
    int64_t count = 1;
    for (int k = 0; k < d[i].ndim; k++) count *= d[i].shape[k];
    if (count > most) most = count;
  }
  memcpy(host_params, d, (size_t)n * sizeof *d);
  LADLE_CUDA_CHECK(cudaMemcpyAsync(dev_params, host_params, (size_t)n * sizeof *d, cudaMemcpyHostToDevice, s));
  (void)cudaGetLastError();
  erase_kernel<<<dim3(blocks_for(most), (unsigned)n), 256, 0, s>>>((const ladle__gpu_erase_desc *)dev_params);
  LADLE_CUDA_CHECK_LAUNCH(erase_kernel);
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
