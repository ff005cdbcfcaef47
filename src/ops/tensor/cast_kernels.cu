/* cast on the GPU for the common pairs of types: one kernel per (input,
 * output) type, so the per-element code has no switch on the types, and
 * ITEMS elements per thread and step with their loads issued first. The
 * element rules are ops/kernels/dtype.h's, as in ladle__convert (the
 * carriers and their loads and stores of ladle__convert_elem): bit-identical
 * to the CPU. Other pairs go to ladle__gpu_convert. */
#ifndef LADLE_HAVE_CUDA
#define LADLE_HAVE_CUDA 1
#endif

#include "ops/tensor/tensor_kernels.h"

#include "ops/geometry/normalize_kernel.h"
#include "ops/kernels/dtype.h"
#include "ops/kernels/gpu_kernels.h"

extern "C" {
#include "core/error.h"
}
#include "cuda/runtime.h"

namespace {

enum { THREADS = 256, ITEMS = 8, MAX_BLOCKS = 4096 };

struct cast_sample {
  const void *in;
  void *out;
  unsigned long long count;
};

/* ladle__dtype_carrier as a constant. */
constexpr int carrier_of(int t) {
  return t == LADLE_FLOAT32 || t == LADLE_FLOAT16 ? LADLE__CARRY_F32
         : t == LADLE_FLOAT64                     ? LADLE__CARRY_F64
         : t == LADLE_UINT64                      ? LADLE__CARRY_U64
                                                  : LADLE__CARRY_I64;
}

/* The carriers of the pairs below (uint64 has none of them). */
template <int C>
struct carry;
template <>
struct carry<LADLE__CARRY_F32> {
  typedef float T;
  static __device__ __forceinline__ T load(const void *p, size_t i, int t) { return ladle__load_f32(p, i, t); }
  static __device__ __forceinline__ void store(void *p, size_t i, int t, T v) { ladle__store_f32(p, i, t, v); }
};
template <>
struct carry<LADLE__CARRY_F64> {
  typedef double T;
  static __device__ __forceinline__ T load(const void *p, size_t i, int t) { return ladle__load_f64(p, i, t); }
  static __device__ __forceinline__ void store(void *p, size_t i, int t, T v) { ladle__store_f64(p, i, t, v); }
};
template <>
struct carry<LADLE__CARRY_I64> {
  typedef int64_t T;
  static __device__ __forceinline__ T load(const void *p, size_t i, int t) { return ladle__load_i64(p, i, t); }
  static __device__ __forceinline__ void store(void *p, size_t i, int t, T v) { ladle__store_i64(p, i, t, v); }
};

/* grid (blocks, samples): a grid-stride loop, ITEMS elements a step. */
template <int IT, int OT, typename I>
__device__ __forceinline__ void cast_sample_run(const cast_sample *sp) {
  typedef carry<carrier_of(IT)> C;
  const I n = (I)sp->count, step = (I)gridDim.x * blockDim.x;
  typename C::T v[ITEMS];
  for (I i = (I)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += ITEMS * step) {
#pragma unroll
    for (int k = 0; k < ITEMS; k++)
      if (i + k * step < n) v[k] = C::load(sp->in, (size_t)(i + k * step), IT);
#pragma unroll
    for (int k = 0; k < ITEMS; k++)
      if (i + k * step < n) C::store(sp->out, (size_t)(i + k * step), OT, v[k]);
  }
}

template <int IT, int OT>
__global__ void __launch_bounds__(THREADS) cast_kernel(const cast_sample *__restrict__ samples, int narrow) {
  const cast_sample *sp = samples + blockIdx.y;
  if (narrow) /* every count below 2^31: 32-bit indices */
    cast_sample_run<IT, OT, unsigned>(sp);
  else
    cast_sample_run<IT, OT, unsigned long long>(sp);
}

typedef void (*cast_fn)(const cast_sample *, int);

/* The pairs with a kernel of their own. */
#define CAST_PAIR(i, o) {i, o, cast_kernel<i, o>}
const struct {
  int in, out;
  cast_fn kernel;
} pairs[] = {
    CAST_PAIR(LADLE_UINT8, LADLE_FLOAT16),   CAST_PAIR(LADLE_UINT8, LADLE_FLOAT32),
    CAST_PAIR(LADLE_UINT8, LADLE_FLOAT64),   CAST_PAIR(LADLE_UINT8, LADLE_INT32),
    CAST_PAIR(LADLE_UINT8, LADLE_INT16),     CAST_PAIR(LADLE_FLOAT32, LADLE_UINT8),
    CAST_PAIR(LADLE_FLOAT32, LADLE_FLOAT16), CAST_PAIR(LADLE_FLOAT32, LADLE_FLOAT64),
    CAST_PAIR(LADLE_FLOAT32, LADLE_INT32),   CAST_PAIR(LADLE_FLOAT16, LADLE_FLOAT32),
    CAST_PAIR(LADLE_FLOAT16, LADLE_UINT8),   CAST_PAIR(LADLE_INT32, LADLE_FLOAT32),
    CAST_PAIR(LADLE_FLOAT64, LADLE_FLOAT32),
};
#undef CAST_PAIR

}  // namespace

extern "C" int ladle__gpu_cast_has_kernel(ladle_dtype out_type, ladle_dtype in_type) {
  for (size_t k = 0; k < sizeof pairs / sizeof pairs[0]; k++)
    if (pairs[k].in == (int)in_type && pairs[k].out == (int)out_type) return 1;
  return 0;
}

extern "C" ladle_status ladle__gpu_cast(const ladle__gpu_convert_desc *d, int n, ladle_dtype out_type,
                                        ladle_dtype in_type, void *host_params, void *dev_params, size_t param_bytes,
                                        void *stream) {
  ladle_status st = LADLE_OK;
  cudaStream_t s = ladle__cuda_stream(stream);
  cast_fn kernel = NULL;
  cast_sample *hs = (cast_sample *)host_params;
  size_t max_n = 1;
  for (size_t k = 0; k < sizeof pairs / sizeof pairs[0]; k++)
    if (pairs[k].in == (int)in_type && pairs[k].out == (int)out_type) kernel = pairs[k].kernel;
  if (!kernel) return ladle__gpu_convert(d, n, out_type, in_type, host_params, dev_params, param_bytes, stream);
  LADLE_CUDA_ENTER();
  LADLE_TRY(ladle__gpu_check_params(n, d, host_params, dev_params, param_bytes, ladle__gpu_cast_param_bytes(n),
                                    __func__));
  if (n <= 0) goto done;
  for (int i = 0; i < n; i++) {
    LADLE_CHECK(d[i].count == 0 || (d[i].in && d[i].out), LADLE_ERROR_INVALID_ARGUMENT, "sample %d: NULL pointer", i);
    hs[i].in = d[i].in;
    hs[i].out = d[i].out;
    hs[i].count = (unsigned long long)d[i].count;
    if (d[i].count > max_n) max_n = d[i].count;
  }
  LADLE_CHECK(n <= 65535, LADLE_ERROR_INVALID_ARGUMENT, "%d samples: at most 65535", n);
  LADLE_CUDA_CHECK(
      cudaMemcpyAsync(dev_params, host_params, (size_t)n * sizeof(cast_sample), cudaMemcpyHostToDevice, s));
  (void)cudaGetLastError();
  {
    size_t blocks = (max_n + THREADS * ITEMS - 1) / (THREADS * ITEMS);
    if (blocks > MAX_BLOCKS) blocks = MAX_BLOCKS;
    kernel<<<dim3((unsigned)blocks, (unsigned)n), THREADS, 0, s>>>((const cast_sample *)dev_params,
                                                                   max_n < ((size_t)1 << 31) ? 1 : 0);
    LADLE_CUDA_CHECK_LAUNCH(cast_kernel);
  }
done:
  return st;
}

extern "C" size_t ladle__gpu_cast_param_bytes(int n) {
  size_t own = ladle__align16((size_t)(n > 0 ? n : 0) * sizeof(cast_sample)), other = ladle__gpu_convert_param_bytes(n);
  return own > other ? own : other;
}
