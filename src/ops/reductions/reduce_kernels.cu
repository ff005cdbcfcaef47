/* fn.reductions.* on the GPU (reduce_kernels.h), in reduce_core.h's order.
 * A segment of W lanes of one warp computes one (group, chunk): lane l folds
 * members l, l + 32, ... of the chunk (neighbouring lanes on neighbouring
 * members: coalesced where the reduced axes are inner, and three lanes' bytes
 * apart in one cache line for HWC per channel), then a shuffle butterfly.
 * W is 32, or the power of two at or above the members when a group has
 * fewer than 17 (so several small groups share a warp; the missing lanes of
 * the 32 would only fold identities, which change nothing). A group of one
 * chunk is stored at once; otherwise chunk results go to `part` and a second
 * kernel (a warp per group) combines them in the same lane order. The axes
 * are merged on the host into runs (adjacent axes both reduced or both
 * kept, extent-1 axes dropped): a member's offset is then its index times
 * one stride in the usual case of one reduced run, stepped by an odometer
 * otherwise; no division per element. Kernels are templated on the input
 * type and the kind of term (sum, min, max, square, centred square). */
#ifndef LADLE_HAVE_CUDA
#define LADLE_HAVE_CUDA 1
#endif

#include <string.h>

#include <type_traits>

#include "ops/kernels/gpu_kernels.h"
#include "ops/reductions/reduce_kernels.h"

extern "C" {
#include "core/error.h"
}
#include "cuda/runtime.h"

namespace {

constexpr int LANES = LADLE__REDUCE_LANES;
constexpr int RUNS = (LADLE_MAX_NDIM + 1) / 2; /* runs of one kind: they alternate */
constexpr int WARPS = 8; /* per block of 256 threads */

struct sample {
  const void *in;
  void *out;
  const float *mean;
  ladle__reduce_acc *part;
  int out_type, kind, mean_count, nred, nkept, width, width_log2;
  int64_t groups, members, chunks, segments, warps;
  double divisor;
  int64_t red_ext[RUNS], red_str[RUNS], red_dig[RUNS], kept_ext[RUNS], kept_str[RUNS];
};

enum { K_SUM, K_MIN, K_MAX, K_SQ, K_CSQ };

template <typename T, int K>
using acc_t = typename std::conditional<
    (K >= K_SQ || std::is_floating_point<T>::value), double,
    typename std::conditional<std::is_same<T, uint64_t>::value, uint64_t, int64_t>::type>::type;

/* a / b, in 32 bits where both fit (the 64-bit division is a long routine). */
__device__ __forceinline__ int64_t udiv(int64_t a, int64_t b) {
  if (((uint64_t)a | (uint64_t)b) >> 32 == 0) return (int64_t)((uint32_t)a / (uint32_t)b);
  return a / b;
}

/* reduce_core.h's identity and fold, per accumulator type. */
template <typename A, int K>
__device__ __forceinline__ A identity() {
  if constexpr (std::is_same<A, double>::value) return K == K_MIN ? HUGE_VAL : K == K_MAX ? -HUGE_VAL : -0.0;
  else if constexpr (std::is_same<A, uint64_t>::value) return K == K_MIN ? UINT64_MAX : 0;
  else return K == K_MIN ? INT64_MAX : K == K_MAX ? INT64_MIN : 0;
}

template <typename A, int K>
__device__ __forceinline__ A fold(A a, A b) {
  if constexpr (K == K_MIN) {
    if constexpr (std::is_same<A, double>::value) return b < a || b != b ? b : a;
    else return b < a ? b : a;
  } else if constexpr (K == K_MAX) {
    if constexpr (std::is_same<A, double>::value) return b > a || b != b ? b : a;
    else return b > a ? b : a;
  } else if constexpr (std::is_same<A, double>::value) {
    return __dadd_rn(a, b);
  } else {
    return (A)((uint64_t)a + (uint64_t)b);
  }
}

/* reduce_core.h's ladle__reduce_term for an element x. */
template <typename T, int K>
__device__ __forceinline__ acc_t<T, K> term(T x, double mean) {
  using A = acc_t<T, K>;
  if constexpr (std::is_same<A, double>::value) {
    double v = (double)x;
    if constexpr (K == K_CSQ) v = __dsub_rn(v, mean);
    if constexpr (K >= K_SQ) v = __dmul_rn(v, v);
    return v;
  } else {
    return (A)x;
  }
}

template <typename A>
__device__ __forceinline__ ladle__reduce_acc to_acc(A v) {
  ladle__reduce_acc a;
  if constexpr (std::is_same<A, double>::value) a.f = v;
  else if constexpr (std::is_same<A, uint64_t>::value) a.u = v;
  else a.i = v;
  return a;
}

template <typename A>
__device__ __forceinline__ A from_acc(ladle__reduce_acc a) {
  if constexpr (std::is_same<A, double>::value) return a.f;
  else if constexpr (std::is_same<A, uint64_t>::value) return a.u;
  else return a.i;
}

template <typename A>
constexpr int mode_of() {
  return std::is_same<A, double>::value ? LADLE__ACC_F64 : std::is_same<A, uint64_t>::value ? LADLE__ACC_U64
                                                                                              : LADLE__ACC_I64;
}

/* The butterfly over the lanes of a segment of `width` lanes: lane 0 of the
 * segment ends with reduce_core.h's ladle__reduce_tree of its lanes. */
template <typename A, int K>
__device__ __forceinline__ A butterfly(A acc, int width) {
  for (int off = width / 2; off >= 1; off >>= 1) acc = fold<A, K>(acc, (A)__shfl_xor_sync(0xffffffffu, acc, off));
  return acc;
}

__device__ __forceinline__ int64_t group_offset(const sample &s, int64_t g) {
  int64_t off = 0;
#pragma unroll
  for (int q = 0; q < RUNS; q++) {
    if (q >= s.nkept) break;
    if (q == s.nkept - 1) {
      off += g * s.kept_str[q];
    } else {
      const int64_t up = udiv(g, s.kept_ext[q]);
      off += (g - up * s.kept_ext[q]) * s.kept_str[q];
      g = up;
    }
  }
  return off;
}

/* Members m, m + 32, ... (< end) of the group at `at0`, folded into acc. */
template <typename T, int K>
__device__ __forceinline__ acc_t<T, K> walk(const sample &s, const T *__restrict__ in, int64_t at0, int64_t m,
                                            int64_t end, double mean, acc_t<T, K> acc) {
  using A = acc_t<T, K>;
  if (s.nred == 1) {
    const int64_t step = LANES * s.red_str[0];
    const T *p = in + at0 + m * s.red_str[0];
    constexpr int U = 8; /* loads in flight per lane */
    for (; m + (U - 1) * LANES < end; m += U * LANES, p += U * step) {
      T x[U];
#pragma unroll
      for (int j = 0; j < U; j++) x[j] = __ldg(p + j * step);
#pragma unroll
      for (int j = 0; j < U; j++) acc = fold<A, K>(acc, term<T, K>(x[j], mean));
    }
    for (; m < end; m += LANES, p += step) acc = fold<A, K>(acc, term<T, K>(__ldg(p), mean));
    return acc;
  }
  int64_t idx[RUNS], rest = m, at = at0;
#pragma unroll
  for (int q = 0; q < RUNS; q++) {
    idx[q] = 0;
    if (q >= s.nred) continue;
    if (q == s.nred - 1) {
      idx[q] = rest;
    } else {
      const int64_t up = udiv(rest, s.red_ext[q]);
      idx[q] = rest - up * s.red_ext[q];
      rest = up;
    }
    at += idx[q] * s.red_str[q];
  }
  for (; m < end; m += LANES) {
    acc = fold<A, K>(acc, term<T, K>(__ldg(in + at), mean));
    int64_t carry = 0;
#pragma unroll
    for (int q = 0; q < RUNS; q++) { /* add 32 in the mixed radix of the reduced runs */
      if (q >= s.nred) continue;
      const int64_t add = s.red_dig[q] + carry;
      idx[q] += add;
      at += add * s.red_str[q];
      carry = 0;
      if (q < s.nred - 1 && idx[q] >= s.red_ext[q]) {
        idx[q] -= s.red_ext[q];
        at -= s.red_ext[q] * s.red_str[q];
        carry = 1;
      }
    }
  }
  return acc;
}

template <typename T, int K>
__global__ void __launch_bounds__(256) segment_kernel(const sample *__restrict__ samples) {
  using A = acc_t<T, K>;
  const sample &s = samples[blockIdx.y];
  const int lane = threadIdx.x & 31, width = s.width, sub = lane & (width - 1);
  const T *__restrict__ in = (const T *)s.in;
  for (int64_t w = (int64_t)blockIdx.x * WARPS + threadIdx.x / 32; w < s.warps; w += (int64_t)gridDim.x * WARPS) {
    const int64_t t = (w << (5 - s.width_log2)) + (lane >> s.width_log2); /* the segment: (chunk, group) */
    const bool live = t < s.segments;
    int64_t g = t, c = 0;
    A acc = identity<A, K>();
    if (live) {
      if (s.chunks > 1) {
        c = udiv(t, s.groups);
        g = t - c * s.groups;
      }
      const double mean = K == K_CSQ ? (double)s.mean[s.mean_count == 1 ? 0 : g] : 0.0;
      const int64_t begin = c * LADLE__REDUCE_CHUNK;
      const int64_t end = begin + LADLE__REDUCE_CHUNK < s.members ? begin + LADLE__REDUCE_CHUNK : s.members;
      acc = walk<T, K>(s, in, group_offset(s, g), begin + sub, end, mean, acc);
    }
    acc = butterfly<A, K>(acc, width);
    if (live && sub == 0) {
      if (s.chunks == 1)
        ladle__reduce_store(s.out, s.out_type, s.kind, mode_of<A>(), s.divisor, s.members, g, to_acc(acc));
      else
        s.part[g * s.chunks + c] = to_acc(acc);
    }
  }
}

/* Samples of several chunks: a warp per group combines its chunk results. */
template <typename A, int K>
__global__ void __launch_bounds__(256) finish_kernel(const sample *__restrict__ samples) {
  const sample &s = samples[blockIdx.y];
  if (s.chunks == 1) return;
  const int lane = threadIdx.x & 31;
  for (int64_t g = (int64_t)blockIdx.x * WARPS + threadIdx.x / 32; g < s.groups; g += (int64_t)gridDim.x * WARPS) {
    const ladle__reduce_acc *p = s.part + g * s.chunks;
    A acc = identity<A, K>();
    for (int64_t c = lane; c < s.chunks; c += LANES) acc = fold<A, K>(acc, from_acc<A>(p[c]));
    acc = butterfly<A, K>(acc, LANES);
    if (lane == 0) ladle__reduce_store(s.out, s.out_type, s.kind, mode_of<A>(), s.divisor, s.members, g, to_acc(acc));
  }
}

unsigned grid_x(int64_t warps, int n) {
  int64_t b = (warps + WARPS - 1) / WARPS, cap = 131072 / n;
  if (cap < 16) cap = 16;
  return (unsigned)(b < 1 ? 1 : b > cap ? cap : b);
}

template <typename T, int K>
ladle_status launch(const sample *dev, int n, int64_t warps, int64_t finish_groups, cudaStream_t s) {
  ladle_status st = LADLE_OK;
  segment_kernel<T, K><<<dim3(grid_x(warps, n), (unsigned)n), 256, 0, s>>>(dev);
  LADLE_CUDA_CHECK_LAUNCH(segment_kernel);
  if (finish_groups) {
    finish_kernel<acc_t<T, K>, K><<<dim3(grid_x(finish_groups, n), (unsigned)n), 256, 0, s>>>(dev);
    LADLE_CUDA_CHECK_LAUNCH(finish_kernel);
  }
done:
  return st;
}

template <typename T>
ladle_status launch_kind(int kind, const sample *dev, int n, int64_t warps, int64_t finish_groups, cudaStream_t s) {
  switch (kind) {
    case LADLE__RED_SUM: case LADLE__RED_MEAN: return launch<T, K_SUM>(dev, n, warps, finish_groups, s);
    case LADLE__RED_MIN: return launch<T, K_MIN>(dev, n, warps, finish_groups, s);
    case LADLE__RED_MAX: return launch<T, K_MAX>(dev, n, warps, finish_groups, s);
    case LADLE__RED_MEAN_SQUARE: case LADLE__RED_RMS: return launch<T, K_SQ>(dev, n, warps, finish_groups, s);
    default: return launch<T, K_CSQ>(dev, n, warps, finish_groups, s);
  }
}

/* The runs of a descriptor (inner first) and the launch shape of its sample. */
void describe(const ladle__reduce_desc *d, sample *s) {
  memset(s, 0, sizeof *s);
  s->in = d->in, s->out = d->out, s->mean = d->mean, s->part = d->part;
  s->out_type = d->out_type, s->kind = d->kind, s->mean_count = d->mean_count;
  s->groups = d->groups, s->members = d->members, s->chunks = d->chunks, s->divisor = d->divisor;
  int64_t stride = 1;
  int last = -1; /* the kind of the run being extended: 1 reduced, 0 kept */
  for (int k = d->ndim - 1; k >= 0; k--) {
    const int64_t e = d->shape[k];
    if (e != 1) {
      const int red = d->reduced[k] != 0;
      int64_t *ext = red ? s->red_ext : s->kept_ext, *str = red ? s->red_str : s->kept_str;
      int *count = red ? &s->nred : &s->nkept;
      if (red == last) {
        ext[*count - 1] *= e;
      } else {
        ext[*count] = e, str[*count] = stride;
        ++*count;
        last = red;
      }
    }
    stride *= e;
  }
  if (!s->nred) s->red_ext[0] = 1, s->nred = 1; /* stride 0: one member (or none) at the group's offset */
  if (!s->nkept) s->kept_ext[0] = 1, s->nkept = 1;
  int64_t below = 1; /* 32 in the mixed radix of the reduced runs (the last digit unbounded) */
  for (int q = 0; q < s->nred && d->members > 0; q++) {
    s->red_dig[q] = q == s->nred - 1 ? LANES / below : LANES / below % s->red_ext[q];
    below = below > LANES ? below : below * s->red_ext[q];
  }
  s->width = LANES;
  if (d->members <= LANES / 2)
    for (s->width = 1; s->width < d->members; s->width *= 2) s->width_log2++;
  else
    s->width_log2 = 5;
  s->segments = d->groups * d->chunks;
  s->warps = (s->segments * s->width + LANES - 1) / LANES;
}

}  // namespace

extern "C" size_t ladle__gpu_reduce_param_bytes(int n) { return ladle__align16((size_t)n * sizeof(sample)); }

extern "C" ladle_status ladle__gpu_reduce(const ladle__reduce_desc *d, int n, void *host_params, void *dev_params,
                                          size_t param_bytes, void *stream) {
  ladle_status st = LADLE_OK;
  cudaStream_t s = ladle__cuda_stream(stream);
  sample *hs = (sample *)host_params;
  const sample *dev = (const sample *)dev_params;
  int64_t warps = 1, finish_groups = 0;
  LADLE_CUDA_ENTER();
  LADLE_TRY(ladle__gpu_check_params(n, d, host_params, dev_params, param_bytes, ladle__gpu_reduce_param_bytes(n),
                                    __func__));
  for (int i = 0; i < n; i++) {
    if (d[i].in_type != d[0].in_type || d[i].kind != d[0].kind || d[i].ndim < 0 || d[i].ndim > LADLE_MAX_NDIM ||
        d[i].mode != ladle__reduce_mode(d[i].kind, d[i].in_type) ||
        d[i].chunks != (d[i].members > 0 ? (d[i].members + LADLE__REDUCE_CHUNK - 1) / LADLE__REDUCE_CHUNK : 1))
      LADLE_TRY(ladle__set_error(LADLE_ERROR_INVALID_ARGUMENT, __func__, "sample %d: inconsistent descriptor", i));
    describe(&d[i], &hs[i]);
    if (hs[i].warps > warps) warps = hs[i].warps;
    if (hs[i].chunks > 1 && hs[i].groups > finish_groups) finish_groups = hs[i].groups;
  }
  LADLE_CUDA_CHECK(cudaMemcpyAsync(dev_params, host_params, (size_t)n * sizeof *hs, cudaMemcpyHostToDevice, s));
  (void)cudaGetLastError();
  switch (d[0].in_type) {
    case LADLE_UINT8: st = launch_kind<uint8_t>(d[0].kind, dev, n, warps, finish_groups, s); break;
    case LADLE_INT8: st = launch_kind<int8_t>(d[0].kind, dev, n, warps, finish_groups, s); break;
    case LADLE_UINT16: st = launch_kind<uint16_t>(d[0].kind, dev, n, warps, finish_groups, s); break;
    case LADLE_INT16: st = launch_kind<int16_t>(d[0].kind, dev, n, warps, finish_groups, s); break;
    case LADLE_UINT32: st = launch_kind<uint32_t>(d[0].kind, dev, n, warps, finish_groups, s); break;
    case LADLE_INT32: st = launch_kind<int32_t>(d[0].kind, dev, n, warps, finish_groups, s); break;
    case LADLE_UINT64: st = launch_kind<uint64_t>(d[0].kind, dev, n, warps, finish_groups, s); break;
    case LADLE_INT64: st = launch_kind<int64_t>(d[0].kind, dev, n, warps, finish_groups, s); break;
    case LADLE_FLOAT32: st = launch_kind<float>(d[0].kind, dev, n, warps, finish_groups, s); break;
    case LADLE_FLOAT64: st = launch_kind<double>(d[0].kind, dev, n, warps, finish_groups, s); break;
    default:
      st = ladle__set_error(LADLE_ERROR_UNSUPPORTED, __func__, "input type %s",
                            ladle_dtype_name((ladle_dtype)d[0].in_type));
  }
done:
  return st;
}
