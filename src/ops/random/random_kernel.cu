/* The random and noise operators on the GPU: one launch per batch, one
 * thread per output element (grid-stride), each drawing from its element's
 * substream with the CPU's formulas (random_kernel.h). */
#ifndef LADLE_HAVE_CUDA
#define LADLE_HAVE_CUDA 1
#endif

#include <string.h>

#include "ops/random/random_kernel.h"

extern "C" {
#include "core/error.h"
}
#include "cuda/runtime.h"

namespace {

size_t align16(size_t n) { return (n + 15) & ~(size_t)15; }

__global__ void rand_kernel(const ladle__rand_sample *__restrict__ samples, const double *__restrict__ table,
                            int table_len, int kind, int out_dtype, int in_dtype) {
  const ladle__rand_sample *s = samples + blockIdx.y;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < s->count; i += (int64_t)gridDim.x * blockDim.x)
    ladle__rand_store(s->out, out_dtype, i, ladle__rand_value(kind, s, table, table_len, in_dtype, i));
}

}  // namespace

extern "C" size_t ladle__gpu_rand_param_bytes(int n, int table_len) {
  return align16((size_t)n * sizeof(ladle__rand_sample)) + (size_t)(table_len > 0 ? table_len : 0) * sizeof(double);
}

extern "C" ladle_status ladle__gpu_rand(const ladle__rand_sample *d, int n, int kind, const double *table,
                                        int table_len, ladle_dtype out_dtype, ladle_dtype in_dtype, void *host_params,
                                        void *dev_params, size_t param_bytes, void *stream) {
  ladle_status st = LADLE_OK;
  cudaStream_t s = ladle__cuda_stream(stream);
  size_t need = ladle__gpu_rand_param_bytes(n, table_len), table_at = align16((size_t)n * sizeof(ladle__rand_sample));
  int64_t max_count = 1;
  LADLE_CUDA_ENTER();
  LADLE_CHECK(n >= 1 && n <= 65535 && d && host_params && dev_params && (table_len == 0 || table),
              LADLE_ERROR_INVALID_ARGUMENT, "bad batch (n = %d, or a NULL buffer)", n);
  LADLE_CHECK(!((uintptr_t)host_params & 15) && !((uintptr_t)dev_params & 15) && param_bytes >= need,
              LADLE_ERROR_INVALID_ARGUMENT, "parameter buffers must be 16-byte aligned and hold %zu bytes", need);
  memcpy(host_params, d, (size_t)n * sizeof *d);
  if (table_len) memcpy((char *)host_params + table_at, table, (size_t)table_len * sizeof(double));
  for (int i = 0; i < n; i++) {
    LADLE_CHECK(d[i].count == 0 || d[i].out, LADLE_ERROR_INVALID_ARGUMENT, "sample %d: NULL output", i);
    LADLE_CHECK(d[i].group >= 1, LADLE_ERROR_INVALID_ARGUMENT, "sample %d: group < 1", i);
    if (d[i].count > max_count) max_count = d[i].count;
  }
  LADLE_CUDA_CHECK(cudaMemcpyAsync(dev_params, host_params, need, cudaMemcpyHostToDevice, s));
  (void)cudaGetLastError();
  {
    int64_t blocks = (max_count + 255) / 256;
    if (blocks > 4096) blocks = 4096;
    rand_kernel<<<dim3((unsigned)blocks, (unsigned)n), 256, 0, s>>>(
        (const ladle__rand_sample *)dev_params, (const double *)((const char *)dev_params + table_at), table_len, kind,
        (int)out_dtype, (int)in_dtype);
  }
  LADLE_CUDA_CHECK_LAUNCH(rand_kernel);
done:
  return st;
}
