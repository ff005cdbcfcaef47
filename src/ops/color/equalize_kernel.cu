/* equalize on the GPU (equalize_kernel.h). */
#ifndef LADLE_HAVE_CUDA
#define LADLE_HAVE_CUDA 1
#endif

#include <string.h>

#include "ops/color/equalize_kernel.h"
#include "ops/kernels/gpu_kernels.h"

extern "C" {
#include "core/error.h"
}
#include "cuda/runtime.h"

namespace {

unsigned blocks_for(int64_t count) {
  int64_t b = (count + 255) / 256;
  return (unsigned)(b < 1 ? 1 : b > 4096 ? 4096 : b);
}

/* One block counts its share of one plane (blockIdx.z) in shared memory. */
__global__ void hist_kernel(const ladle__equalize_desc *__restrict__ samples) {
  __shared__ uint32_t counts[256];
  const ladle__equalize_desc *d = samples + blockIdx.y;
  if ((int64_t)blockIdx.z >= d->hists) return;
  for (int v = threadIdx.x; v < 256; v += blockDim.x) counts[v] = 0;
  __syncthreads();
  for (int64_t p = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; p < d->pixels; p += (int64_t)gridDim.x * blockDim.x)
    atomicAdd(&counts[d->in[ladle__equalize_offset(d, blockIdx.z, p)]], 1u);
  __syncthreads();
  for (int v = threadIdx.x; v < 256; v += blockDim.x)
    if (counts[v]) atomicAdd(&d->hist[(int64_t)blockIdx.z * 256 + v], counts[v]);
}

__global__ void lut_kernel(const ladle__equalize_desc *__restrict__ samples) {
  const ladle__equalize_desc *d = samples + blockIdx.y;
  for (int64_t h = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; h < d->hists; h += (int64_t)gridDim.x * blockDim.x)
    ladle__equalize_lut(d->lut + h * 256, d->hist + h * 256);
}

__global__ void apply_kernel(const ladle__equalize_desc *__restrict__ samples) {
  const ladle__equalize_desc *d = samples + blockIdx.y;
  const int64_t items = d->hists * d->pixels;
  for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < items; t += (int64_t)gridDim.x * blockDim.x) {
    const int64_t h = t / d->pixels, at = ladle__equalize_offset(d, h, t % d->pixels);
    d->out[at] = d->lut[h * 256 + d->in[at]];
  }
}

}  // namespace

extern "C" size_t ladle__gpu_equalize_param_bytes(int n) {
  return ladle__align16((size_t)n * sizeof(ladle__equalize_desc));
}

extern "C" ladle_status ladle__gpu_equalize(const ladle__equalize_desc *d, int n, uint32_t *hist, int64_t total_hists,
                                            void *host_params, void *dev_params, size_t param_bytes, void *stream) {
  ladle_status st = LADLE_OK;
  cudaStream_t s = ladle__cuda_stream(stream);
  int64_t pixels = 1, hists = 1, items = 1;
  LADLE_CUDA_ENTER();
  LADLE_TRY(ladle__gpu_check_params(n, d, host_params, dev_params, param_bytes, ladle__gpu_equalize_param_bytes(n),
                                    __func__));
  for (int i = 0; i < n; i++) {
    if (d[i].pixels > pixels) pixels = d[i].pixels;
    if (d[i].hists > hists) hists = d[i].hists;
    if (d[i].hists * d[i].pixels > items) items = d[i].hists * d[i].pixels;
  }
  if (hists > 65535)
    LADLE_TRY(ladle__set_error(LADLE_ERROR_UNSUPPORTED, __func__, "%lld planes in one sample (at most 65535)",
                               (long long)hists));
  memcpy(host_params, d, (size_t)n * sizeof *d);
  LADLE_CUDA_CHECK(cudaMemsetAsync(hist, 0, sizeof *hist * 256 * (size_t)total_hists, s));
  LADLE_CUDA_CHECK(cudaMemcpyAsync(dev_params, host_params, (size_t)n * sizeof *d, cudaMemcpyHostToDevice, s));
  (void)cudaGetLastError();
  hist_kernel<<<dim3(blocks_for(pixels) < 64 ? blocks_for(pixels) : 64, (unsigned)n, (unsigned)hists), 256, 0, s>>>(
      (const ladle__equalize_desc *)dev_params);
  LADLE_CUDA_CHECK_LAUNCH(hist_kernel);
  lut_kernel<<<dim3(blocks_for(hists), (unsigned)n), 256, 0, s>>>((const ladle__equalize_desc *)dev_params);
  LADLE_CUDA_CHECK_LAUNCH(lut_kernel);
  apply_kernel<<<dim3(blocks_for(items), (unsigned)n), 256, 0, s>>>((const ladle__equalize_desc *)dev_params);
  LADLE_CUDA_CHECK_LAUNCH(apply_kernel);
done:
  return st;
}
