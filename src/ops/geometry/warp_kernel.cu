/* warp_affine/rotate and paste on the GPU: one launch per batch, one thread
 * per output pixel (paste: per output byte), the CPU kernel's per-pixel rule
 * (warp_sample.h) with every float operation rounded on its own. */
/* A .cu file is only built with CUDA; the C headers it shares look for this. */
#ifndef LADLE_HAVE_CUDA
#define LADLE_HAVE_CUDA 1
#endif

#include "ops/geometry/warp_kernel.h"
#include "ops/kernels/gpu_kernels.h"

#include <string.h>

extern "C" {
#include "core/error.h"
}
#include "cuda/runtime.h"
#include "ops/geometry/warp_sample.h"

namespace {

enum { TILE_W = 32, TILE_H = 8 };

size_t param_bytes_of(int n, size_t each) { return ((size_t)(n > 0 ? n : 0) * each + 15) & ~(size_t)15; }

ladle_status check_launch(int n, const void *d, void *host, void *dev, size_t bytes, size_t need, const char *func) {
  if (!(n >= 1 && n <= LADLE__GPU_MAX_SAMPLES && d && host && dev))
    return ladle__set_error(LADLE_ERROR_INVALID_ARGUMENT, func, "bad batch (n = %d, or a NULL buffer)", n);
  if (((uintptr_t)host & 15) || ((uintptr_t)dev & 15) || bytes < need)
    return ladle__set_error(LADLE_ERROR_INVALID_ARGUMENT, func,
                            "parameter buffers must be 16-byte aligned and hold %zu bytes (got %zu)", need, bytes);
  return LADLE_OK;
}

/* grid (tiles x, tiles y, samples): a sample smaller than the grid skips the rest. */
__global__ void warp_kernel(const ladle__gpu_warp_desc *__restrict__ d) {
  const ladle__gpu_warp_desc *q = d + blockIdx.z;
  int x = blockIdx.x * TILE_W + threadIdx.x, y = blockIdx.y * TILE_H + threadIdx.y;
  for (; y < q->p.out_h; y += gridDim.y * TILE_H)
    if (x < q->p.out_w) warp_pixel(q->out, q->in, &q->p, x, y);
}

__global__ void paste_kernel(const ladle__gpu_paste_desc *__restrict__ d) {
  const ladle__gpu_paste_desc *q = d + blockIdx.z;
  const int row = q->p.out_w * q->p.channels;
  for (int y = blockIdx.y; y < q->p.out_h; y += gridDim.y)
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < row; i += gridDim.x * blockDim.x)
      q->out[(size_t)y * (size_t)row + (size_t)i] = paste_elem(q->in, &q->p, y, i);
}

}  // namespace

extern "C" size_t ladle__gpu_warp_param_bytes(int n) { return param_bytes_of(n, sizeof(ladle__gpu_warp_desc)); }

extern "C" ladle_status ladle__gpu_warp_affine(const ladle__gpu_warp_desc *d, int n, void *host_params,
                                               void *dev_params, size_t param_bytes, void *stream) {
  ladle_status st = LADLE_OK;
  cudaStream_t s = ladle__cuda_stream(stream);
  int max_w = 1, max_h = 1;
  LADLE_CUDA_ENTER();
  LADLE_TRY(check_launch(n, d, host_params, dev_params, param_bytes, ladle__gpu_warp_param_bytes(n), __func__));
  for (int i = 0; i < n; i++) {
    const ladle__warp_params *p = &d[i].p;
    LADLE_CHECK(d[i].in && d[i].out && p->channels >= 1 && p->in_w >= 1 && p->in_h >= 1 && p->out_w >= 1 &&
                    p->out_h >= 1,
                LADLE_ERROR_INVALID_ARGUMENT, "sample %d: bad parameters (image %dx%d, output %dx%d, %d channels)", i,
                p->in_w, p->in_h, p->out_w, p->out_h, p->channels);
    if (p->out_w > max_w) max_w = p->out_w;
    if (p->out_h > max_h) max_h = p->out_h;
  }
  memcpy(host_params, d, (size_t)n * sizeof *d);
  LADLE_CUDA_CHECK(cudaMemcpyAsync(dev_params, host_params, (size_t)n * sizeof *d, cudaMemcpyHostToDevice, s));
  (void)cudaGetLastError();
  {
    int tiles_y = (max_h + TILE_H - 1) / TILE_H;
    dim3 grid((unsigned)((max_w + TILE_W - 1) / TILE_W), (unsigned)(tiles_y < 65535 ? tiles_y : 65535), (unsigned)n);
    warp_kernel<<<grid, dim3(TILE_W, TILE_H), 0, s>>>((const ladle__gpu_warp_desc *)dev_params);
  }
  LADLE_CUDA_CHECK_LAUNCH(warp_kernel);
done:
  return st;
}

extern "C" size_t ladle__gpu_paste_param_bytes(int n) { return param_bytes_of(n, sizeof(ladle__gpu_paste_desc)); }

extern "C" ladle_status ladle__gpu_paste(const ladle__gpu_paste_desc *d, int n, void *host_params, void *dev_params,
                                         size_t param_bytes, void *stream) {
  ladle_status st = LADLE_OK;
  cudaStream_t s = ladle__cuda_stream(stream);
  long long max_row = 1;
  int max_h = 1;
  LADLE_CUDA_ENTER();
  LADLE_TRY(check_launch(n, d, host_params, dev_params, param_bytes, ladle__gpu_paste_param_bytes(n), __func__));
  for (int i = 0; i < n; i++) {
    const ladle__paste_params *p = &d[i].p;
    LADLE_CHECK(d[i].in && d[i].out && p->channels >= 1 && p->channels <= 4 && p->in_w >= 1 && p->in_h >= 1 &&
                    p->x0 >= 0 && p->y0 >= 0 && p->x0 + p->in_w <= p->out_w && p->y0 + p->in_h <= p->out_h,
                LADLE_ERROR_INVALID_ARGUMENT, "sample %d: bad parameters (image %dx%d at (%d, %d) on %dx%d)", i,
                p->in_w, p->in_h, p->x0, p->y0, p->out_w, p->out_h);
    if ((long long)p->out_w * p->channels > max_row) max_row = (long long)p->out_w * p->channels;
    if (p->out_h > max_h) max_h = p->out_h;
  }
  memcpy(host_params, d, (size_t)n * sizeof *d);
  LADLE_CUDA_CHECK(cudaMemcpyAsync(dev_params, host_params, (size_t)n * sizeof *d, cudaMemcpyHostToDevice, s));
  (void)cudaGetLastError();
  {
    long long bx = (max_row + 255) / 256;
    dim3 grid((unsigned)(bx < 64 ? bx : 64), (unsigned)(max_h < 65535 ? max_h : 65535), (unsigned)n);
    paste_kernel<<<grid, 256, 0, s>>>((const ladle__gpu_paste_desc *)dev_params);
  }
  LADLE_CUDA_CHECK_LAUNCH(paste_kernel);
done:
  return st;
}
