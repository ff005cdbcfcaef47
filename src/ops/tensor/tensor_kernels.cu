/* CUDA versions of the tensor family's kernels (tensor_kernels.h): one launch
 * per batch, one grid row (blockIdx.y) per copy or sample, each thread
 * striding over that sample's output elements. They move bytes only, so
 * they agree with the CPU references bit for bit. */
#ifndef LADLE_HAVE_CUDA
#define LADLE_HAVE_CUDA 1
#endif

#include "ops/tensor/tensor_kernels.h"

#include <string.h>

extern "C" {
#include "core/error.h"
}
#include "cuda/runtime.h"

namespace {

enum { THREADS = 256, MAX_BLOCKS = 4096 };

__device__ __forceinline__ void copy_elem(uint8_t *dst, const uint8_t *src, int es) {
  switch (es) {
    case 1: *dst = *src; break;
    case 2: *(uint16_t *)dst = *(const uint16_t *)src; break;
    case 4: *(uint32_t *)dst = *(const uint32_t *)src; break;
    case 8: *(uint64_t *)dst = *(const uint64_t *)src; break;
    default:
      for (int b = 0; b < es; b++) dst[b] = src[b];
  }
}

__global__ void strided_kernel(const ladle__strided_desc *__restrict__ descs) {
  const ladle__strided_desc *d = &descs[blockIdx.y];
  int nd = d->ndim, es = d->elem_size;
  long long total = 1;
  for (int k = 0; k < nd; k++) total *= d->shape[k];
  for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < total;
       e += (long long)gridDim.x * blockDim.x) {
    long long rest = e, out_off = 0, in_off = 0, fill_index = 0;
    int inside = 1;
    for (int k = nd - 1; k >= 0; k--) {
      long long i = rest % d->shape[k];
      rest /= d->shape[k];
      long long c = d->in_start[k] + i;
      inside &= c >= 0 && c < d->in_shape[k];
      out_off += i * d->out_stride[k];
      in_off += c * d->in_stride[k];
      if (k == d->fill_dim) fill_index = i;
    }
    uint8_t *dst = (uint8_t *)d->out + out_off * es;
    if (inside)
      copy_elem(dst, (const uint8_t *)d->in + in_off * es, es);
    else
      copy_elem(dst, d->fill + (fill_index < d->num_fill ? fill_index : 0) * es, es);
  }
}

__device__ __forceinline__ long long int_at(const void *p, int t, long long i) {
  switch (t) {
    case LADLE_UINT8: return ((const uint8_t *)p)[i];
    case LADLE_INT32: return ((const int32_t *)p)[i];
    case LADLE_INT64: return ((const long long *)p)[i];
    default: return -1;
  }
}

/* params: n descs, then on and off values (8 bytes each). */
__global__ void one_hot_kernel(const ladle__one_hot_desc *__restrict__ descs, int n, int in_type,
                               long long num_classes, int es) {
  const ladle__one_hot_desc *d = &descs[blockIdx.y];
  const uint8_t *on = (const uint8_t *)(descs + n), *off = on + 8;
  long long total = d->outer * num_classes * d->inner;
  for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < total;
       e += (long long)gridDim.x * blockDim.x) {
    long long i = e % d->inner, c = (e / d->inner) % num_classes, o = e / (d->inner * num_classes);
    long long v = int_at(d->in, in_type, o * d->inner + i);
    copy_elem((uint8_t *)d->out + e * es, v == c ? on : off, es);
  }
}

/* params: n descs, the fallback value (8 bytes), then the table. */
__global__ void lookup_kernel(const ladle__lookup_desc *__restrict__ descs, int n, int in_type, int es,
                              long long table_size) {
  const ladle__lookup_desc *d = &descs[blockIdx.y];
  const uint8_t *fallback = (const uint8_t *)(descs + n), *table = fallback + 8;
  for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < d->count;
       e += (long long)gridDim.x * blockDim.x) {
    long long v = int_at(d->in, in_type, e);
    copy_elem((uint8_t *)d->out + e * es, v >= 0 && v < table_size ? table + v * es : fallback, es);
  }
}

unsigned blocks_for(long long elems) {
  long long b = (elems + THREADS - 1) / THREADS;
  long long cap = MAX_BLOCKS;
  return (unsigned)(b < 1 ? 1 : b > cap ? cap : b);
}

ladle_status check_params(int n, const void *d, void *host, void *dev, size_t bytes, size_t need, const char *func) {
  if (n < 0 || n > 65535 || (n > 0 && (!d || !host || !dev)) || bytes < need)
    return ladle__set_error(LADLE_ERROR_INVALID_ARGUMENT, func, "bad launch: %d samples, %zu of %zu parameter bytes",
                            n, bytes, need);
  return LADLE_OK;
}

}  // namespace

extern "C" size_t ladle__gpu_strided_param_bytes(int n) { return (size_t)n * sizeof(ladle__strided_desc); }

extern "C" ladle_status ladle__gpu_strided_copy(const ladle__strided_desc *d, int n, void *host_params,
                                                void *dev_params, size_t param_bytes, void *stream) {
  ladle_status st = LADLE_OK;
  cudaStream_t s = ladle__cuda_stream(stream);
  long long max_n = 1;
  LADLE_CUDA_ENTER();
  LADLE_TRY(check_params(n, d, host_params, dev_params, param_bytes, ladle__gpu_strided_param_bytes(n), __func__));
  if (n <= 0) goto done; /* (check_params refused n < 0; this also tells the compiler) */
  for (int i = 0; i < n; i++) {
    long long total = 1;
    for (int k = 0; k < d[i].ndim; k++) total *= d[i].shape[k];
    LADLE_CHECK(d[i].ndim >= 0 && d[i].ndim <= LADLE_MAX_NDIM && d[i].elem_size >= 1 && d[i].elem_size <= 8 &&
                    (total == 0 || (d[i].out && d[i].in)),
                LADLE_ERROR_INVALID_ARGUMENT, "copy %d: bad parameters", i);
    if (total > max_n) max_n = total;
  }
  memcpy(host_params, d, ladle__gpu_strided_param_bytes(n));
  LADLE_CUDA_CHECK(cudaMemcpyAsync(dev_params, host_params, ladle__gpu_strided_param_bytes(n), cudaMemcpyHostToDevice, s));
  (void)cudaGetLastError();
  strided_kernel<<<dim3(blocks_for(max_n), (unsigned)n), THREADS, 0, s>>>((const ladle__strided_desc *)dev_params);
  LADLE_CUDA_CHECK_LAUNCH(strided_kernel);
done:
  return st;
}

extern "C" size_t ladle__gpu_one_hot_param_bytes(int n, int elem_size) {
  (void)elem_size;
  return (size_t)n * sizeof(ladle__one_hot_desc) + 16;
}

extern "C" ladle_status ladle__gpu_one_hot(const ladle__one_hot_desc *d, int n, ladle_dtype in_type,
                                           int64_t num_classes, int elem_size, const void *on, const void *off,
                                           void *host_params, void *dev_params, size_t param_bytes, void *stream) {
  ladle_status st = LADLE_OK;
  cudaStream_t s = ladle__cuda_stream(stream);
  long long max_n = 1;
  size_t need = ladle__gpu_one_hot_param_bytes(n, elem_size);
  uint8_t *values = (uint8_t *)host_params + (size_t)n * sizeof *d;
  LADLE_CUDA_ENTER();
  LADLE_TRY(check_params(n, d, host_params, dev_params, param_bytes, need, __func__));
  LADLE_CHECK(elem_size >= 1 && elem_size <= 8 && num_classes >= 0, LADLE_ERROR_INVALID_ARGUMENT,
              "bad parameters: %d-byte elements, %lld classes", elem_size, (long long)num_classes);
  if (n <= 0) goto done; /* (check_params refused n < 0; this also tells the compiler) */
  for (int i = 0; i < n; i++) {
    long long total = d[i].outer * num_classes * d[i].inner;
    if (total > max_n) max_n = total;
  }
  memcpy(host_params, d, (size_t)n * sizeof *d);
  memcpy(values, on, (size_t)elem_size);
  memcpy(values + 8, off, (size_t)elem_size);
  LADLE_CUDA_CHECK(cudaMemcpyAsync(dev_params, host_params, need, cudaMemcpyHostToDevice, s));
  (void)cudaGetLastError();
  one_hot_kernel<<<dim3(blocks_for(max_n), (unsigned)n), THREADS, 0, s>>>((const ladle__one_hot_desc *)dev_params, n,
                                                                           (int)in_type, (long long)num_classes,
                                                                           elem_size);
  LADLE_CUDA_CHECK_LAUNCH(one_hot_kernel);
done:
  return st;
}

extern "C" size_t ladle__gpu_lookup_param_bytes(int n, int elem_size, int64_t table_size) {
  return (size_t)n * sizeof(ladle__lookup_desc) + 8 + (size_t)table_size * (size_t)elem_size;
}

extern "C" ladle_status ladle__gpu_lookup(const ladle__lookup_desc *d, int n, ladle_dtype in_type, int elem_size,
                                          const void *table, int64_t table_size, const void *fallback,
                                          void *host_params, void *dev_params, size_t param_bytes, void *stream) {
  ladle_status st = LADLE_OK;
  cudaStream_t s = ladle__cuda_stream(stream);
  long long max_n = 1;
  size_t need = ladle__gpu_lookup_param_bytes(n, elem_size, table_size);
  uint8_t *values = (uint8_t *)host_params + (size_t)n * sizeof *d;
  LADLE_CUDA_ENTER();
  LADLE_TRY(check_params(n, d, host_params, dev_params, param_bytes, need, __func__));
  LADLE_CHECK(elem_size >= 1 && elem_size <= 8 && table_size >= 0 && (table || !table_size),
              LADLE_ERROR_INVALID_ARGUMENT, "bad parameters: %d-byte elements, table of %lld", elem_size,
              (long long)table_size);
  if (n <= 0) goto done; /* (check_params refused n < 0; this also tells the compiler) */
  for (int i = 0; i < n; i++)
    if (d[i].count > max_n) max_n = d[i].count;
  memcpy(host_params, d, (size_t)n * sizeof *d);
  memcpy(values, fallback, (size_t)elem_size);
  if (table_size) memcpy(values + 8, table, (size_t)table_size * elem_size);
  LADLE_CUDA_CHECK(cudaMemcpyAsync(dev_params, host_params, need, cudaMemcpyHostToDevice, s));
  (void)cudaGetLastError();
  lookup_kernel<<<dim3(blocks_for(max_n), (unsigned)n), THREADS, 0, s>>>((const ladle__lookup_desc *)dev_params, n,
                                                                          (int)in_type, elem_size,
                                                                          (long long)table_size);
  LADLE_CUDA_CHECK_LAUNCH(lookup_kernel);
done:
  return st;
}
