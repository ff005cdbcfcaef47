/* jpeg_compression_distortion on the GPU: jpeg_core.h's round trip in two
 * launches. The codec kernel gives each 16x16 MCU a block of 64 threads
 * (thread i: element i of the MCU's six 8x8 blocks; a thread per row or
 * column of a block in the DCT passes) and writes the reconstructed planes;
 * the output kernel upsamples the chroma (which needs the neighbouring MCUs'
 * samples, hence the second launch) and converts to RGB. blockIdx.y is the
 * sample; blocks past a smaller sample's work return at once. */
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

__global__ void __launch_bounds__(64) jd_codec_kernel(const ladle__gpu_jd_desc *__restrict__ samples,
                                                      const ladle__jd_tables *__restrict__ tables) {
  const ladle__gpu_jd_desc s = samples[blockIdx.y];
  if (s.h <= 0 || s.w <= 0) return;
  const int mw = jd_mcus(s.w), mcus = mw * jd_mcus(s.h), i = (int)threadIdx.x;
  const ladle__jd_tables *t = tables + s.table;
  __shared__ int32_t blk[6][64];
  for (int m = (int)blockIdx.x; m < mcus; m += (int)gridDim.x) {
    const int my = m / mw, mx = m % mw;
    jd_mcu_load(s.in, s.h, s.w, my, mx, i, blk);
    __syncthreads();
    if (i < 48) jd_fdct_1d(&blk[i / 8][8 * (i % 8)], 1, 0);
    __syncthreads();
    if (i < 48) jd_fdct_1d(&blk[i / 8][i % 8], 8, 1);
    __syncthreads();
    for (int b = 0; b < 6; b++) blk[b][i] = jd_requant(blk[b][i], t, b < 4 ? 0 : 1, i);
    __syncthreads();
    if (i < 48) jd_idct_1d(&blk[i / 8][i % 8], 8, 0);
    __syncthreads();
    if (i < 48) jd_idct_1d(&blk[i / 8][8 * (i % 8)], 1, 1);
    __syncthreads();
    jd_mcu_store(s.planes, s.h, s.w, my, mx, i, blk);
    __syncthreads(); /* blk is reused by the next MCU */
  }
}

/* A block per row (rows strided by the grid), its threads along the row. */
__global__ void jd_output_kernel(const ladle__gpu_jd_desc *__restrict__ samples) {
  const ladle__gpu_jd_desc s = samples[blockIdx.y];
  for (int y = (int)blockIdx.x; y < s.h; y += (int)gridDim.x)
    for (int x = (int)threadIdx.x; x < s.w; x += (int)blockDim.x)
      jd_output_pixel(s.planes, s.h, s.w, y, x, s.out + ((size_t)y * (size_t)s.w + (size_t)x) * 3);
}

/* Blocks for `count` work items (MCUs, rows), a block each up to 65535. */
unsigned grid_for(int64_t count) { return (unsigned)(count < 1 ? 1 : count > 65535 ? 65535 : count); }

}  // namespace

extern "C" size_t ladle__gpu_jd_param_bytes(int n, int num_tables) {
  return align16((size_t)n * sizeof(ladle__gpu_jd_desc)) + align16((size_t)num_tables * sizeof(ladle__jd_tables));
}

extern "C" ladle_status ladle__gpu_jpeg_distortion(const ladle__gpu_jd_desc *d, int n, const ladle__jd_tables *tables,
                                                   int num_tables, void *host_params, void *dev_params,
                                                   size_t param_bytes, void *stream) {
  ladle_status st = LADLE_OK;
  cudaStream_t s = ladle__cuda_stream(stream);
  int64_t most_mcus = 1, most_rows = 1;
  const size_t desc_bytes = align16((size_t)n * sizeof *d);
  LADLE_CUDA_ENTER();
  LADLE_TRY(ladle__gpu_check_params(n, d, host_params, dev_params, param_bytes,
                                    ladle__gpu_jd_param_bytes(n, num_tables), __func__));
  LADLE_CHECK(tables && num_tables >= 1, LADLE_ERROR_INVALID_ARGUMENT, "no quantization tables");
  for (int i = 0; i < n; i++) {
    LADLE_CHECK(d[i].table >= 0 && d[i].table < num_tables && d[i].h >= 0 && d[i].w >= 0,
                LADLE_ERROR_INVALID_ARGUMENT, "sample %d: bad descriptor", i);
    if (d[i].h == 0 || d[i].w == 0) continue;
    const int64_t mcus = (int64_t)jd_mcus(d[i].h) * jd_mcus(d[i].w);
    most_mcus = mcus > most_mcus ? mcus : most_mcus;
    most_rows = d[i].h > most_rows ? d[i].h : most_rows;
  }
  memcpy(host_params, d, (size_t)n * sizeof *d);
  memcpy((char *)host_params + desc_bytes, tables, (size_t)num_tables * sizeof *tables);
  LADLE_CUDA_CHECK(cudaMemcpyAsync(dev_params, host_params, desc_bytes + (size_t)num_tables * sizeof *tables,
                                   cudaMemcpyHostToDevice, s));
  (void)cudaGetLastError();
  jd_codec_kernel<<<dim3(grid_for(most_mcus), (unsigned)n), 64, 0, s>>>(
      (const ladle__gpu_jd_desc *)dev_params, (const ladle__jd_tables *)((char *)dev_params + desc_bytes));
  LADLE_CUDA_CHECK_LAUNCH(jd_codec_kernel);
  jd_output_kernel<<<dim3(grid_for(most_rows), (unsigned)n), 256, 0, s>>>(
      (const ladle__gpu_jd_desc *)dev_params);
  LADLE_CUDA_CHECK_LAUNCH(jd_output_kernel);
done:
  return st;
}
