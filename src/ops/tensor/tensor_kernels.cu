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

/* The strided copy as launched: the host (plan_copy) drops the extent-1
 * dimensions that always read inside, merges the dimensions that are
 * contiguous in both input and output into one, and, where the innermost
 * dimension is dense in both and its bounds and every stride allow, moves
 * 2/4/8/16-byte units of several elements instead of single elements (a unit
 * then lies wholly inside or wholly outside the input); a dense copy of a
 * length that is no multiple of 16 bytes goes as two: 16-byte units and the
 * rest. Samples whose units and offsets fit in 31 bits index with 32-bit
 * arithmetic and divide by precomputed multipliers (no 64-bit division in
 * the loop). Every element lands where ladle__strided_copy puts it, so
 * outputs agree bit for bit. */
enum { MAX_UNIT = 16 };

struct __align__(16) gdesc {
  uint8_t fill[LADLE_TENSOR_MAX_FILL * MAX_UNIT]; /* fill value f, repeated to a unit, at f * MAX_UNIT */
  uint8_t *out;
  const uint8_t *in;
  long long total;                                /* units */
  int ndim, unit, fill_dim, num_fill, narrow;     /* unit: bytes; narrow: 32-bit indexing */
  long long shape[LADLE_MAX_NDIM], out_stride[LADLE_MAX_NDIM], in_stride[LADLE_MAX_NDIM]; /* in units */
  long long in_start[LADLE_MAX_NDIM], in_shape[LADLE_MAX_NDIM];
  unsigned magic[LADLE_MAX_NDIM];
  int shift[LADLE_MAX_NDIM];
};

__host__ __device__ __forceinline__ unsigned mulhi32(unsigned a, unsigned b) {
#ifdef __CUDA_ARCH__
  return __umulhi(a, b);
#else
  return (unsigned)(((unsigned long long)a * b) >> 32);
#endif
}

/* Unit e of copy d: *out_off (units), and 1 with *in_off when read from the
 * input, 0 with the fill index *fill when filled. 32-bit version: the plan
 * made sure every index, extent and in-range offset is below 2^31; e / shape
 * = (mulhi(e, magic) + e) >> shift (exact for e, shape < 2^31). */
__host__ __device__ __forceinline__ int locate32(const gdesc *d, unsigned e, unsigned *out_off, unsigned *in_off,
                                                 int *fill) {
  unsigned o = 0, p = 0;
  int inside = 1, f = 0;
  for (int k = d->ndim - 1; k >= 0; k--) {
    unsigned q = (mulhi32(e, d->magic[k]) + e) >> d->shift[k];
    unsigned i = e - q * (unsigned)d->shape[k];
    e = q;
    int c = (int)d->in_start[k] + (int)i;
    inside &= c >= 0 && c < (int)d->in_shape[k];
    o += i * (unsigned)d->out_stride[k];
    p += (unsigned)c * (unsigned)d->in_stride[k]; /* wraps only where outside (then unused) */
    if (k == d->fill_dim) f = (int)i;
  }
  *out_off = o, *in_off = p, *fill = f;
  return inside;
}

__host__ __device__ __forceinline__ int locate64(const gdesc *d, long long e, long long *out_off, long long *in_off,
                                                 int *fill) {
  long long o = 0, p = 0;
  int inside = 1, f = 0;
  for (int k = d->ndim - 1; k >= 0; k--) {
    long long q = e / d->shape[k], i = e - q * d->shape[k];
    e = q;
    long long c = d->in_start[k] + i;
    inside &= c >= 0 && c < d->in_shape[k];
    o += i * d->out_stride[k];
    p += c * d->in_stride[k];
    if (k == d->fill_dim) f = (int)i;
  }
  *out_off = o, *in_off = p, *fill = f;
  return inside;
}

__host__ __device__ __forceinline__ const uint8_t *fill_of(const gdesc *d, int f) {
  return d->fill + (f < d->num_fill ? f : 0) * MAX_UNIT;
}

template <typename U>
__device__ __forceinline__ void move_unit(const gdesc *d, long long o, long long p, int inside, int f) {
  U *dst = (U *)d->out + o;
  if (inside)
    *dst = ((const U *)d->in)[p];
  else
    *dst = *(const U *)fill_of(d, f);
}

/* Units of a size without a machine type (elements of 3, 5, 6, 7 bytes). */
struct odd_unit {};
template <>
__device__ __forceinline__ void move_unit<odd_unit>(const gdesc *d, long long o, long long p, int inside, int f) {
  int u = d->unit;
  uint8_t *dst = d->out + o * u;
  const uint8_t *src = inside ? d->in + p * u : fill_of(d, f);
  for (int b = 0; b < u; b++) dst[b] = src[b];
}

template <typename U>
__device__ void strided_units(const gdesc *d) {
  int f;
  if (d->narrow) {
    unsigned total = (unsigned)d->total, o, p;
    for (unsigned e = blockIdx.x * blockDim.x + threadIdx.x; e < total; e += gridDim.x * blockDim.x) {
      int inside = locate32(d, e, &o, &p, &f);
      move_unit<U>(d, o, p, inside, f);
    }
  } else {
    long long o, p;
    for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < d->total;
         e += (long long)gridDim.x * blockDim.x) {
      int inside = locate64(d, e, &o, &p, &f);
      move_unit<U>(d, o, p, inside, f);
    }
  }
}

__global__ void strided_kernel(const gdesc *__restrict__ descs) {
  const gdesc *d = &descs[blockIdx.y];
  switch (d->unit) { /* the same for the whole grid row */
    case 1: strided_units<uint8_t>(d); break;
    case 2: strided_units<uint16_t>(d); break;
    case 4: strided_units<uint32_t>(d); break;
    case 8: strided_units<unsigned long long>(d); break;
    case 16: strided_units<uint4>(d); break;
    default: strided_units<odd_unit>(d);
  }
}

struct plan_dim {
  long long shape, os, is, start, extent;
  int fill;
};

const long long NARROW_LIMIT = 0x7fffffffLL; /* 2^31 - 1 */

/* e / s = (mulhi(e, magic) + e) >> shift for e, s < 2^31 (s >= 1). */
void divisor32(unsigned s, unsigned *magic, int *shift) {
  int sh = 0;
  while (sh < 32 && (1ULL << sh) < s) sh++;
  *shift = sh;
  *magic = (unsigned)(((1ULL << 32) * ((1ULL << sh) - s)) / s + 1);
}

/* g: the launch form of copy s; 0 when it has no elements. A copy that
 * merges into one dense dimension read wholly inside, 16-byte aligned but of
 * a length that is not a multiple of 16 bytes, is cut: g takes the longest
 * 16-byte multiple, *tail (when tail is not NULL; *has_tail = 1) the rest. */
int plan_copy(const ladle__strided_desc *s, gdesc *g, ladle__strided_desc *tail, int *has_tail) {
  memset(g, 0, sizeof *g);
  int es = s->elem_size, nd = 0;
  long long total = 1;
  for (int k = 0; k < s->ndim; k++) total *= s->shape[k];
  if (total <= 0) return 0;
  /* One fill value or none: every filled element gets fill[0]. */
  int fill_dim = s->num_fill > 1 && s->fill_dim >= 0 && s->fill_dim < s->ndim ? s->fill_dim : -1;
  uintptr_t out = (uintptr_t)s->out, in = (uintptr_t)s->in;
  plan_dim dims[LADLE_MAX_NDIM];
  for (int k = 0; k < s->ndim; k++) {
    plan_dim x = {s->shape[k], s->out_stride[k], s->in_stride[k], s->in_start[k], s->in_shape[k], k == fill_dim};
    if (x.shape == 1 && x.start >= 0 && x.start < x.extent) { /* index 0, always inside (fill index 0 = fill[0]) */
      in += (uintptr_t)(x.start * x.is * es);
      continue;
    }
    /* Merge into the outer neighbour when contiguous with it in both and
     * always inside itself: (c_outer * shape + i) indexes the merged pair. */
    if (nd > 0) {
      plan_dim *o = &dims[nd - 1];
      if (!o->fill && !x.fill && o->os == x.os * x.shape && o->is == x.is * x.shape && x.start == 0 &&
          x.shape <= x.extent) {
        o->start *= x.shape;
        o->extent *= x.shape;
        o->shape *= x.shape;
        o->os = x.os;
        o->is = x.is;
        continue;
      }
    }
    dims[nd++] = x;
  }
  if (has_tail) *has_tail = 0;
  if (tail && nd == 1 && MAX_UNIT % es == 0) {
    plan_dim *l = &dims[0];
    long long r = MAX_UNIT / es, keep = l->shape / r * r;
    if (l->os == 1 && l->is == 1 && !l->fill && l->start >= 0 && l->extent >= l->start + l->shape &&
        l->start % r == 0 && out % MAX_UNIT == 0 && in % MAX_UNIT == 0 && keep > 0 && keep < l->shape) {
      long long rest = l->shape - keep;
      memset(tail, 0, sizeof *tail);
      tail->out = (void *)(out + (uintptr_t)(keep * es));
      tail->in = (const void *)(in + (uintptr_t)((l->start + keep) * es));
      tail->ndim = 1;
      tail->elem_size = es;
      tail->fill_dim = -1;
      tail->shape[0] = tail->in_shape[0] = rest;
      tail->out_stride[0] = tail->in_stride[0] = 1;
      *has_tail = 1;
      l->shape = keep;
      l->extent = l->start + keep;
    }
  }
  int unit = es;
  if (nd > 0) {
    plan_dim *l = &dims[nd - 1];
    for (int v = MAX_UNIT; v > es; v /= 2) {
      long long r = v / es;
      int inside = l->start >= 0 && l->extent >= l->start + l->shape; /* the bound never falls in this dim */
      int ok = v % es == 0 && l->os == 1 && l->is == 1 && !l->fill && l->shape % r == 0 && l->start % r == 0 &&
               (inside || l->extent % r == 0) && out % (uintptr_t)v == 0 && in % (uintptr_t)v == 0;
      for (int k = 0; ok && k < nd - 1; k++) ok = dims[k].os % r == 0 && dims[k].is % r == 0;
      if (!ok) continue;
      unit = v;
      l->shape /= r;
      l->start /= r;
      l->extent = inside ? l->start + l->shape : l->extent / r;
      for (int k = 0; k < nd - 1; k++) dims[k].os /= r, dims[k].is /= r;
      break;
    }
  }
  g->out = (uint8_t *)out;
  g->in = (const uint8_t *)in;
  g->ndim = nd;
  g->unit = unit;
  g->num_fill = s->num_fill;
  g->fill_dim = -1;
  g->total = 1;
  long long out_max = 0, in_max = 0;
  int narrow = 1;
  for (int k = 0; k < nd; k++) {
    const plan_dim *x = &dims[k];
    g->shape[k] = x->shape, g->out_stride[k] = x->os, g->in_stride[k] = x->is;
    g->in_start[k] = x->start, g->in_shape[k] = x->extent;
    if (x->fill) g->fill_dim = k;
    g->total *= x->shape;
    long long st = x->start < 0 ? -x->start : x->start, ext = x->extent > 0 ? x->extent : 1;
    narrow = narrow && x->os >= 0 && x->is >= 0 && x->os <= NARROW_LIMIT && x->is <= NARROW_LIMIT &&
             x->shape <= NARROW_LIMIT && ext <= NARROW_LIMIT && st <= NARROW_LIMIT - x->shape;
    if (narrow) {
      out_max += (x->shape - 1) * x->os;
      in_max += (ext - 1) * x->is;
      narrow = out_max <= NARROW_LIMIT && in_max <= NARROW_LIMIT;
    }
  }
  g->narrow = narrow && g->total <= NARROW_LIMIT;
  for (int k = 0; g->narrow && k < nd; k++) divisor32((unsigned)g->shape[k], &g->magic[k], &g->shift[k]);
  for (int f = 0; f < LADLE_TENSOR_MAX_FILL; f++)
    for (int b = 0; b < unit; b += es) memcpy(g->fill + f * MAX_UNIT + b, s->fill + f * es, (size_t)es);
  return 1;
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

/* The descs, 16-byte aligned on the device (the kernel reads fill units of 16 bytes). */
extern "C" size_t ladle__gpu_strided_param_bytes(int n) { return 2 * (size_t)n * sizeof(gdesc) + 16; }

extern "C" ladle_status ladle__gpu_strided_copy(const ladle__strided_desc *d, int n, void *host_params,
                                                void *dev_params, size_t param_bytes, void *stream) {
  ladle_status st = LADLE_OK;
  cudaStream_t s = ladle__cuda_stream(stream);
  long long max_n = 1;
  int m = 0;
  size_t pad = 0;
  LADLE_CUDA_ENTER();
  LADLE_TRY(check_params(n, d, host_params, dev_params, param_bytes, ladle__gpu_strided_param_bytes(n), __func__));
  if (n <= 0) goto done; /* (check_params refused n < 0; this also tells the compiler) */
  pad = (16 - (size_t)((uintptr_t)dev_params % 16)) % 16;
  for (int i = 0; i < n; i++) {
    long long total = 1;
    for (int k = 0; k < d[i].ndim; k++) total *= d[i].shape[k];
    LADLE_CHECK(d[i].ndim >= 0 && d[i].ndim <= LADLE_MAX_NDIM && d[i].elem_size >= 1 && d[i].elem_size <= 8 &&
                    (total == 0 || (d[i].out && d[i].in)),
                LADLE_ERROR_INVALID_ARGUMENT, "copy %d: bad parameters", i);
    gdesc g[2];
    ladle__strided_desc tail;
    int parts = 0;
    if (!plan_copy(&d[i], &g[0], &tail, &parts)) continue; /* nothing to copy */
    parts = parts ? 1 + plan_copy(&tail, &g[1], NULL, NULL) : 1;
    for (int k = 0; k < parts; k++) {
      memcpy((uint8_t *)host_params + pad + (size_t)m * sizeof g[k], &g[k], sizeof g[k]);
      m++;
      if (g[k].total > max_n) max_n = g[k].total;
    }
  }
  if (m == 0) goto done;
  LADLE_CUDA_CHECK(cudaMemcpyAsync((uint8_t *)dev_params + pad, (uint8_t *)host_params + pad, (size_t)m * sizeof(gdesc),
                                   cudaMemcpyHostToDevice, s));
  (void)cudaGetLastError();
  for (int first = 0; first < m; first += 65535) { /* (a cut copy is two grid rows: maybe more than 65535) */
    unsigned rows = (unsigned)(m - first < 65535 ? m - first : 65535);
    strided_kernel<<<dim3(blocks_for(max_n), rows), THREADS, 0, s>>>((const gdesc *)((uint8_t *)dev_params + pad) +
                                                                     first);
    LADLE_CUDA_CHECK_LAUNCH(strided_kernel);
  }
done:
  return st;
}

extern "C" int ladle__gpu_strided_plan_info(const ladle__strided_desc *d, int *unit, int *ndim) {
  gdesc g;
  ladle__strided_desc tail;
  int has_tail = 0;
  if (!plan_copy(d, &g, &tail, &has_tail)) return -1;
  *unit = g.unit;
  *ndim = g.ndim;
  return g.narrow;
}

extern "C" void ladle__gpu_strided_emulate(const ladle__strided_desc *d) {
  gdesc parts[2];
  ladle__strided_desc tail;
  int has_tail = 0;
  if (!plan_copy(d, &parts[0], &tail, &has_tail)) return;
  int count = has_tail ? 1 + plan_copy(&tail, &parts[1], NULL, NULL) : 1;
  for (int k = 0; k < count; k++) {
    const gdesc *g = &parts[k];
    for (long long e = 0; e < g->total; e++) {
      long long o, p;
      int f, inside;
      if (g->narrow) {
        unsigned o32, p32;
        inside = locate32(g, (unsigned)e, &o32, &p32, &f);
        o = o32, p = p32;
      } else {
        inside = locate64(g, e, &o, &p, &f);
      }
      memcpy(g->out + o * g->unit, inside ? g->in + p * g->unit : fill_of(g, f), (size_t)g->unit);
    }
  }
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
