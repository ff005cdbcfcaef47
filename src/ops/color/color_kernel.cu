/* The colour kernels on the GPU: one launch per batch, per-sample parameters
 * in one array; the per-pixel arithmetic is color_pixel.h's, as on the CPU. */
#ifndef LADLE_HAVE_CUDA
#define LADLE_HAVE_CUDA 1
#endif

#include <string.h>

extern "C" {
#include "core/error.h"
}
#include "cuda/runtime.h"
#include "ops/color/color_pixel.h"
#include "ops/kernels/gpu_kernels.h"

namespace {

/* grid (blocks, samples), block 256: a grid-stride loop over each sample's pixels. */
__global__ void __launch_bounds__(256)
    color_kernel(const ladle__gpu_color_desc *__restrict__ samples, int out_type, int in_type) {
  const ladle__gpu_color_desc *sp = samples + blockIdx.y;
  const ladle__color_params p = sp->p;
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t px = (size_t)blockIdx.x * blockDim.x + threadIdx.x; px < sp->pixels; px += stride)
    ladle__color_pixel(sp->out, out_type, sp->in, in_type, px, &p);
}

/* grid (blocks, samples), block 256: one output pixel per thread, strided. */
__global__ void __launch_bounds__(256) jitter_kernel(const ladle__gpu_jitter_desc *__restrict__ samples) {
  const ladle__gpu_jitter_desc *sp = samples + blockIdx.y;
  const size_t total = (size_t)sp->h * (size_t)sp->w, ps = (size_t)sp->pixel_bytes;
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
    const int y = (int)(i / (size_t)sp->w), x = (int)(i - (size_t)y * (size_t)sp->w);
    const uint8_t *src = sp->in + i * ps;
    if (sp->mask) {
      int sx, sy;
      src = ladle__jitter_source(x, y, sp->h, sp->w, sp->n_degree, sp->key, &sx, &sy)
                ? sp->in + ((size_t)sy * (size_t)sp->w + (size_t)sx) * ps
                : sp->fill;
    }
    for (size_t k = 0; k < ps; k++) sp->out[i * ps + k] = src[k];
  }
}

unsigned blocks_for(size_t items) {
  size_t b = (items + 255) / 256;
  return (unsigned)(b < 1 ? 1 : b > 4096 ? 4096 : b);
}

}  // namespace

extern "C" size_t ladle__gpu_color_param_bytes(int n) {
  return ladle__align16((size_t)(n > 0 ? n : 0) * sizeof(ladle__gpu_color_desc));
}

extern "C" ladle_status ladle__gpu_color(const ladle__gpu_color_desc *d, int n, ladle_dtype out_type,
                                         ladle_dtype in_type, void *host_params, void *dev_params,
                                         size_t param_bytes, void *stream) {
  ladle_status st = LADLE_OK;
  cudaStream_t s = ladle__cuda_stream(stream);
  size_t max_px = 1;
  LADLE_CUDA_ENTER();
  LADLE_TRY(ladle__gpu_check_params(n, d, host_params, dev_params, param_bytes, ladle__gpu_color_param_bytes(n),
                                    __func__));
  LADLE_CHECK((in_type == LADLE_UINT8 || in_type == LADLE_FLOAT32) &&
                  (out_type == LADLE_UINT8 || out_type == LADLE_FLOAT32 || out_type == LADLE_FLOAT16 ||
                   out_type == LADLE_INT32),
              LADLE_ERROR_INVALID_ARGUMENT, "cannot transform type %d to type %d", (int)in_type, (int)out_type);
  for (int i = 0; i < n; i++) {
    const ladle__color_params *p = &d[i].p;
    LADLE_CHECK(d[i].pixels == 0 || (d[i].in && d[i].out), LADLE_ERROR_INVALID_ARGUMENT, "sample %d: NULL pointer", i);
    LADLE_CHECK(p->in_c >= 1 && (p->mode == LADLE__COLOR_SCALE ? p->out_c == p->in_c
                                                               : p->in_c <= 3 && p->out_c >= 1 && p->out_c <= 3),
                LADLE_ERROR_INVALID_ARGUMENT, "sample %d: bad channels (%d in, %d out, mode %d)", i, p->in_c,
                p->out_c, p->mode);
    if (d[i].pixels > max_px) max_px = d[i].pixels;
  }
  memcpy(host_params, d, (size_t)n * sizeof *d);
  LADLE_CUDA_CHECK(cudaMemcpyAsync(dev_params, host_params, (size_t)n * sizeof *d, cudaMemcpyHostToDevice, s));
  (void)cudaGetLastError();
  color_kernel<<<dim3(blocks_for(max_px), (unsigned)n), 256, 0, s>>>((const ladle__gpu_color_desc *)dev_params,
                                                                      (int)out_type, (int)in_type);
  LADLE_CUDA_CHECK_LAUNCH(color_kernel);
done:
  return st;
}

extern "C" size_t ladle__gpu_jitter_param_bytes(int n) {
  return ladle__align16((size_t)(n > 0 ? n : 0) * sizeof(ladle__gpu_jitter_desc));
}

extern "C" ladle_status ladle__gpu_jitter(const ladle__gpu_jitter_desc *d, int n, void *host_params, void *dev_params,
                                          size_t param_bytes, void *stream) {
  ladle_status st = LADLE_OK;
  cudaStream_t s = ladle__cuda_stream(stream);
  size_t max_px = 1;
  LADLE_CUDA_ENTER();
  LADLE_TRY(ladle__gpu_check_params(n, d, host_params, dev_params, param_bytes, ladle__gpu_jitter_param_bytes(n),
                                    __func__));
  for (int i = 0; i < n; i++) {
    LADLE_CHECK(d[i].in && d[i].out && d[i].h >= 1 && d[i].w >= 1 && d[i].pixel_bytes >= 1 &&
                    d[i].pixel_bytes <= 64 && d[i].n_degree >= 1,
                LADLE_ERROR_INVALID_ARGUMENT, "sample %d: bad parameters (%dx%d, %d bytes per pixel, nDegree %d)", i,
                d[i].w, d[i].h, d[i].pixel_bytes, d[i].n_degree);
    size_t px = (size_t)d[i].h * (size_t)d[i].w;
    if (px > max_px) max_px = px;
  }
  memcpy(host_params, d, (size_t)n * sizeof *d);
  LADLE_CUDA_CHECK(cudaMemcpyAsync(dev_params, host_params, (size_t)n * sizeof *d, cudaMemcpyHostToDevice, s));
  (void)cudaGetLastError();
  jitter_kernel<<<dim3(blocks_for(max_px), (unsigned)n), 256, 0, s>>>((const ladle__gpu_jitter_desc *)dev_params);
  LADLE_CUDA_CHECK_LAUNCH(jitter_kernel);
done:
  return st;
}
