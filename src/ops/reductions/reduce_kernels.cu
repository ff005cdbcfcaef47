/* fn.reductions.* on the GPU (reduce_kernels.h): one thread per (group,
 * chunk), then one per group, grid-stride over each sample (blockIdx.y). */
#ifndef LADLE_HAVE_CUDA
#define LADLE_HAVE_CUDA 1
#endif

#include <string.h>

#include "ops/kernels/gpu_kernels.h"
#include "ops/reductions/reduce_kernels.h"

extern "C" {
#include "core/error.h"
}
#include "cuda/runtime.h"

namespace {

unsigned blocks_for(int64_t count) {
  int64_t b = (count + 255) / 256;
  return (unsigned)(b < 1 ? 1 : b > 4096 ? 4096 : b);
}

__global__ void chunk_kernel(const ladle__reduce_desc *__restrict__ samples) {
  const ladle__reduce_desc *d = samples + blockIdx.y;
  const int64_t items = d->groups * d->chunks;
  for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < items; t += (int64_t)gridDim.x * blockDim.x)
    d->part[t] = ladle__reduce_chunk(d, t / d->chunks, t % d->chunks);
}

__global__ void finish_kernel(const ladle__reduce_desc *__restrict__ samples) {
  const ladle__reduce_desc *d = samples + blockIdx.y;
  for (int64_t g = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; g < d->groups; g += (int64_t)gridDim.x * blockDim.x)
    ladle__reduce_finish(d, g);
}

}  // namespace

extern "C" size_t ladle__gpu_reduce_param_bytes(int n) { return ladle__align16((size_t)n * sizeof(ladle__reduce_desc)); }

extern "C" ladle_status ladle__gpu_reduce(const ladle__reduce_desc *d, int n, void *host_params, void *dev_params,
                                          size_t param_bytes, void *stream) {
  ladle_status st = LADLE_OK;
  cudaStream_t s = ladle__cuda_stream(stream);
  int64_t items = 1, groups = 1;
  LADLE_CUDA_ENTER();
  LADLE_TRY(ladle__gpu_check_params(n, d, host_params, dev_params, param_bytes, ladle__gpu_reduce_param_bytes(n),
                                    __func__));
  for (int i = 0; i < n; i++) {
    if (d[i].groups * d[i].chunks > items) items = d[i].groups * d[i].chunks;
    if (d[i].groups > groups) groups = d[i].groups;
  }
  memcpy(host_params, d, (size_t)n * sizeof *d);
  LADLE_CUDA_CHECK(cudaMemcpyAsync(dev_params, host_params, (size_t)n * sizeof *d, cudaMemcpyHostToDevice, s));
  (void)cudaGetLastError();
  chunk_kernel<<<dim3(blocks_for(items), (unsigned)n), 256, 0, s>>>((const ladle__reduce_desc *)dev_params);
  LADLE_CUDA_CHECK_LAUNCH(chunk_kernel);
  finish_kernel<<<dim3(blocks_for(groups), (unsigned)n), 256, 0, s>>>((const ladle__reduce_desc *)dev_params);
  LADLE_CUDA_CHECK_LAUNCH(finish_kernel);
done:
  return st;
}
