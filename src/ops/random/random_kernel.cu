/* The random and noise operators on the GPU: one launch per batch, threads
 * walking the substreams (an output element, or a pixel of salt and pepper)
 * grid-stride, drawing with the CPU's formulas (random_kernel.h:
 * ladle__rand_group).
 *
 * The hot kinds (coin_flip, uniform with a range or values, normal, the
 * three noises) run in a kernel made for their kind and dtype, so the
 * per-element code has no switch, 32-bit indices and the generator in
 * registers; the others (beta, choice), noise into another dtype and samples
 * of 2^31 or more substreams take the generic kernel. Both write what the
 * CPU loop writes. */
#ifndef LADLE_HAVE_CUDA
#define LADLE_HAVE_CUDA 1
#endif

#include <string.h>

#include "ops/kernels/gpu_kernels.h"
#include "ops/random/random_kernel.h"

extern "C" {
#include "core/error.h"
}
#include "cuda/runtime.h"

namespace {

constexpr int kThreads = 256;
/* Substreams per thread of rand_fast: the sample's parameters are loaded
 * once for several (a salt and pepper pixel costs little more than them). */
constexpr int kFastPerThread = 4;

/* Any kind and dtypes, 64-bit indices. */
__global__ void rand_generic(const ladle__rand_sample *__restrict__ samples, const double *__restrict__ table,
                             int table_len, int kind, int out_dtype, int in_dtype) {
  const ladle__rand_sample *s = samples + blockIdx.y;
  int64_t groups = s->count / s->group;
  for (int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; j < groups; j += (int64_t)gridDim.x * blockDim.x)
    ladle__rand_group(kind, s, table, table_len, out_dtype, in_dtype, j);
}

/* Kind K with dtype T (noise: input and output; the generators have no
 * input): fewer than 2^31 substreams per sample, group 1 but for salt and
 * pepper. */
template <int K, int T>
__global__ void __launch_bounds__(kThreads) rand_fast(const ladle__rand_sample *__restrict__ samples,
                                                      const double *__restrict__ table, int table_len) {
  ladle__rand_sample s = samples[blockIdx.y];
  unsigned groups = (unsigned)s.count;
  if (K == LADLE_NOISE_SALT_PEPPER) groups = (unsigned)(s.count / s.group);
  else s.group = 1;
  for (unsigned j = blockIdx.x * kThreads + threadIdx.x; j < groups; j += gridDim.x * kThreads)
    ladle__rand_group(K, &s, table, table_len, T, T, j);
}

/* noise.shot in dtype T: each thread walks the elements j, j + stride, ...
 * stepping the Poisson sampler (core/rng.h) of one at a time
 * (ladle__shot_walk), so a lane whose draw ends early starts its next
 * element while the others step on (one element takes 1 to ~10 steps: lanes
 * waiting for the slowest wasted half the warp). For uint8 the block first
 * initialises the sampler of each of the 256 levels of its sample in shared
 * memory (one per thread: kThreads is 256). */
constexpr int kShotPerThread = 16;
static_assert(kThreads == 256, "one uint8 level per thread");

template <int T>
__global__ void __launch_bounds__(kThreads) shot_kernel(const ladle__rand_sample *__restrict__ samples,
                                                        const double *__restrict__ table, int table_len) {
  __shared__ ladle__poisson levels[T == LADLE_UINT8 ? 256 : 1];
  ladle__rand_sample s = samples[blockIdx.y];
  s.group = 1;
  unsigned stride = gridDim.x * kThreads, j = blockIdx.x * kThreads + threadIdx.x;
  if (!(s.p[0] > 0)) { /* no noise: the input (the whole block returns here) */
    for (; j < (unsigned)s.count; j += stride) ladle__rand_group(LADLE_NOISE_SHOT, &s, table, table_len, T, T, j);
    return;
  }
  if (T == LADLE_UINT8) {
    ladle__poisson_init(&levels[threadIdx.x], ladle__shot_lambda_of((double)threadIdx.x, s.p[0]));
    __syncthreads();
  }
  ladle__shot_walk(&s, T, T == LADLE_UINT8 ? levels : NULL, table, table_len, j, stride);
}

typedef void (*fast_kernel)(const ladle__rand_sample *__restrict__, const double *__restrict__, int);

template <int K, int T>
struct pick {
  static constexpr fast_kernel kernel = rand_fast<K, T>;
};
template <int T>
struct pick<LADLE_NOISE_SHOT, T> {
  static constexpr fast_kernel kernel = shot_kernel<T>;
};

template <int K>
fast_kernel fast_for(int dtype) {
  switch (dtype) {
    case LADLE_UINT8: return pick<K, LADLE_UINT8>::kernel;
    case LADLE_INT32: return pick<K, LADLE_INT32>::kernel;
    case LADLE_FLOAT32: return pick<K, LADLE_FLOAT32>::kernel;
    case LADLE_FLOAT16: return pick<K, LADLE_FLOAT16>::kernel;
    case LADLE_INT64: return pick<K, LADLE_INT64>::kernel;
    case LADLE_INT8: return pick<K, LADLE_INT8>::kernel;
    case LADLE_INT16: return pick<K, LADLE_INT16>::kernel;
    case LADLE_UINT16: return pick<K, LADLE_UINT16>::kernel;
    case LADLE_UINT32: return pick<K, LADLE_UINT32>::kernel;
    case LADLE_UINT64: return pick<K, LADLE_UINT64>::kernel;
    case LADLE_FLOAT64: return pick<K, LADLE_FLOAT64>::kernel;
    case LADLE_BOOL: return pick<K, LADLE_BOOL>::kernel;
    default: return NULL;
  }
}

/* The kernel made for (kind, dtypes), or NULL: the generic one. */
fast_kernel fast_kernel_for(int kind, int out_dtype, int in_dtype) {
  int noise = kind == LADLE_NOISE_GAUSSIAN || kind == LADLE_NOISE_SALT_PEPPER || kind == LADLE_NOISE_SHOT;
  if (noise && in_dtype != out_dtype) return NULL;
  switch (kind) {
    case LADLE_RAND_COIN: return fast_for<LADLE_RAND_COIN>(out_dtype);
    case LADLE_RAND_UNIFORM: return fast_for<LADLE_RAND_UNIFORM>(out_dtype);
    case LADLE_RAND_VALUES: return fast_for<LADLE_RAND_VALUES>(out_dtype);
    case LADLE_RAND_NORMAL: return fast_for<LADLE_RAND_NORMAL>(out_dtype);
    case LADLE_NOISE_GAUSSIAN: return fast_for<LADLE_NOISE_GAUSSIAN>(out_dtype);
    case LADLE_NOISE_SALT_PEPPER: return fast_for<LADLE_NOISE_SALT_PEPPER>(out_dtype);
    case LADLE_NOISE_SHOT: return fast_for<LADLE_NOISE_SHOT>(out_dtype);
    default: return NULL;
  }
}

}  // namespace

extern "C" size_t ladle__gpu_rand_param_bytes(int n, int table_len) {
  return ladle__align16((size_t)n * sizeof(ladle__rand_sample)) + (size_t)(table_len > 0 ? table_len : 0) * sizeof(double);
}

extern "C" ladle_status ladle__gpu_rand(const ladle__rand_sample *d, int n, int kind, const double *table,
                                        int table_len, ladle_dtype out_dtype, ladle_dtype in_dtype, void *host_params,
                                        void *dev_params, size_t param_bytes, void *stream) {
  ladle_status st = LADLE_OK;
  cudaStream_t s = ladle__cuda_stream(stream);
  size_t need = ladle__gpu_rand_param_bytes(n, table_len), table_at = ladle__align16((size_t)n * sizeof(ladle__rand_sample));
  int64_t max_groups = 1;
  int group_ok = 1; /* every sample has group 1 (or the kind is salt and pepper) */
  fast_kernel fast = fast_kernel_for(kind, (int)out_dtype, (int)in_dtype);
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
    if (d[i].count / d[i].group > max_groups) max_groups = d[i].count / d[i].group;
    if (d[i].group != 1) group_ok = 0;
  }
  LADLE_CUDA_CHECK(cudaMemcpyAsync(dev_params, host_params, need, cudaMemcpyHostToDevice, s));
  (void)cudaGetLastError();
  {
    /* a few substreams per thread (grid-stride); gridDim.x stays far below its limit */
    int use_fast = fast && max_groups <= INT32_MAX && (group_ok || kind == LADLE_NOISE_SALT_PEPPER);
    int64_t per_block = kThreads * (!use_fast ? 1 : kind == LADLE_NOISE_SHOT ? kShotPerThread : kFastPerThread);
    int64_t blocks = (max_groups + per_block - 1) / per_block;
    if (blocks > 1 << 20) blocks = 1 << 20;
    dim3 grid((unsigned)blocks, (unsigned)n);
    const ladle__rand_sample *dev_samples = (const ladle__rand_sample *)dev_params;
    const double *dev_table = (const double *)((const char *)dev_params + table_at);
    if (use_fast)
      fast<<<grid, kThreads, 0, s>>>(dev_samples, dev_table, table_len);
    else
      rand_generic<<<grid, kThreads, 0, s>>>(dev_samples, dev_table, table_len, kind, (int)out_dtype, (int)in_dtype);
  }
  LADLE_CUDA_CHECK_LAUNCH(rand_kernel);
done:
  return st;
}
