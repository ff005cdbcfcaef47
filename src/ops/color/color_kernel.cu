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
#include "ops/kernels/gpu_vec.h"

namespace {

/* The generic kernel, any types, modes and channels: grid (blocks, samples),
 * block 256, a grid-stride loop over each sample's pixels, one pixel per
 * thread. */
__global__ void __launch_bounds__(256)
    color_kernel(const ladle__gpu_color_desc *__restrict__ samples, int out_type, int in_type) {
  const ladle__gpu_color_desc *sp = samples + blockIdx.y;
  const ladle__color_params p = sp->p;
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t px = (size_t)blockIdx.x * blockDim.x + threadIdx.x; px < sp->pixels; px += stride)
    ladle__color_pixel(sp->out, out_type, sp->in, in_type, px, &p);
}

/* --- the vector kernel ------------------------------------------------------
 * For the common cases, with the types, the mode and the channel counts
 * template parameters: SCALE (any channels: element-wise) and MATRIX with
 * 3 -> 3, 3 -> 1 and 1 -> 3 channels without reversed channels, uint8 or
 * float32 in, uint8, float32 or float16 out. A thread transforms a group of
 * GROUP items (elements for SCALE, pixels for MATRIX) that starts on a
 * 16-byte boundary of both the input and the output, with 16-byte loads and
 * stores; the items before the first such group and after the last go one
 * at a time. The arithmetic is color_pixel.h's, as in the generic kernel. */
enum { GROUP = 16 };

template <int T>
__device__ __forceinline__ float in_value(uint32_t bits) {
  return T == LADLE_UINT8 ? ladle__color_u8_to_f32(bits) : __uint_as_float(bits);
}

/* color_pixel.h's ladle__color_put, as the bits of one element. */
template <int T>
__device__ __forceinline__ uint32_t out_bits(float v) {
  if (T == LADLE_UINT8) return ladle__color_to_u8(v);
  if (T == LADLE_FLOAT16) return ladle__f32_to_f16(v);
  return __float_as_uint(v);
}

template <int TI, int TO, int MODE, int CI, int CO>
__device__ __forceinline__ void color_group(const ladle__color_params &p, void *out, const void *in) {
  constexpr int IB = ladle__vec_size(TI), OB = ladle__vec_size(TO);
  constexpr int ICH = MODE == LADLE__COLOR_SCALE ? 1 : CI, OCH = MODE == LADLE__COLOR_SCALE ? 1 : CO;
  uint32_t wi[GROUP * ICH * IB / 4], wo[GROUP * OCH * OB / 4];
  ladle__vec_load(wi, in);
#pragma unroll
  for (int k = 0; k < GROUP; k++) {
    if (MODE == LADLE__COLOR_SCALE) {
      ladle__vec_put<OB>(wo, k, out_bits<TO>(ladle__color_scale(&p, in_value<TI>(ladle__vec_get<IB>(wi, k)))));
    } else {
      float x[3] = {0.0f, 0.0f, 0.0f};
#pragma unroll
      for (int c = 0; c < CI; c++) x[c] = in_value<TI>(ladle__vec_get<IB>(wi, k * CI + c));
#pragma unroll
      for (int o = 0; o < CO; o++) ladle__vec_put<OB>(wo, k * CO + o, out_bits<TO>(ladle__color_row(&p, x, o)));
    }
  }
  ladle__vec_store(out, wo);
}

/* grid (blocks, samples), block 256: a grid-stride loop over each sample's
 * groups, then its single items. */
template <int TI, int TO, int MODE, int CI, int CO>
__global__ void __launch_bounds__(256) color_vec_kernel(const ladle__gpu_color_desc *__restrict__ samples) {
  const ladle__gpu_color_desc *sp = samples + blockIdx.y;
  ladle__color_params p = sp->p;
  constexpr int SCALE = MODE == LADLE__COLOR_SCALE;
  /* The launcher checked these; as constants, the per-pixel code shrinks. */
  if (!SCALE) p.in_c = CI, p.out_c = CO, p.rev_in = p.rev_out = 0;
  const size_t items = SCALE ? sp->pixels * (size_t)p.in_c : sp->pixels;
  const uintptr_t base[2] = {(uintptr_t)sp->in, (uintptr_t)sp->out};
  const int bytes[2] = {(SCALE ? 1 : CI) * ladle__vec_size(TI), (SCALE ? 1 : CO) * ladle__vec_size(TO)};
  const ladle__vec_plan plan = ladle__vec_split(items, ladle__vec_head(2, base, bytes), GROUP);
  const size_t n = plan.groups + plan.single, stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    if (i < plan.groups) {
      const size_t first = plan.head + i * GROUP;
      color_group<TI, TO, MODE, CI, CO>(p, (uint8_t *)sp->out + first * (size_t)bytes[1],
                                        (const uint8_t *)sp->in + first * (size_t)bytes[0]);
    } else if (SCALE) {
      const size_t e = ladle__vec_single(plan, i - plan.groups, GROUP);
      ladle__color_put(sp->out, TO, e, ladle__color_scale(&p, ladle__color_get(sp->in, TI, e)));
    } else {
      ladle__color_pixel(sp->out, TO, sp->in, TI, ladle__vec_single(plan, i - plan.groups, GROUP), &p);
    }
  }
}

typedef void (*color_vec_fn)(const ladle__gpu_color_desc *);

template <int TI, int MODE, int CI, int CO>
color_vec_fn vec_by_out(ladle_dtype out_type) {
  switch (out_type) {
    case LADLE_UINT8: return color_vec_kernel<TI, LADLE_UINT8, MODE, CI, CO>;
    case LADLE_FLOAT32: return color_vec_kernel<TI, LADLE_FLOAT32, MODE, CI, CO>;
    case LADLE_FLOAT16: return color_vec_kernel<TI, LADLE_FLOAT16, MODE, CI, CO>;
    default: return NULL;
  }
}

/* The vector kernel for a batch whose samples all take the same one, or
 * NULL (the generic kernel runs it). */
color_vec_fn pick_vec(const ladle__gpu_color_desc *d, int n, ladle_dtype out_type, ladle_dtype in_type) {
  const ladle__color_params *p0 = &d[0].p;
  for (int i = 1; i < n; i++) {
    const ladle__color_params *p = &d[i].p;
    if (p->mode != p0->mode || (p->mode == LADLE__COLOR_MATRIX && (p->in_c != p0->in_c || p->out_c != p0->out_c)))
      return NULL;
  }
  if (p0->mode == LADLE__COLOR_SCALE) {
    if (in_type == LADLE_UINT8) return vec_by_out<LADLE_UINT8, LADLE__COLOR_SCALE, 1, 1>(out_type);
    if (in_type == LADLE_FLOAT32) return vec_by_out<LADLE_FLOAT32, LADLE__COLOR_SCALE, 1, 1>(out_type);
    return NULL;
  }
  for (int i = 0; i < n; i++)
    if (d[i].p.rev_in || d[i].p.rev_out) return NULL;
  const int ci = p0->in_c, co = p0->out_c;
  if (in_type == LADLE_UINT8) {
    if (ci == 3 && co == 3) return vec_by_out<LADLE_UINT8, LADLE__COLOR_MATRIX, 3, 3>(out_type);
    if (ci == 3 && co == 1) return vec_by_out<LADLE_UINT8, LADLE__COLOR_MATRIX, 3, 1>(out_type);
    if (ci == 1 && co == 3) return vec_by_out<LADLE_UINT8, LADLE__COLOR_MATRIX, 1, 3>(out_type);
  }
  if (in_type == LADLE_FLOAT32 && ci == 3 && co == 3)
    return vec_by_out<LADLE_FLOAT32, LADLE__COLOR_MATRIX, 3, 3>(out_type);
  return NULL;
}

/* grid (blocks, samples), block 256: one output pixel per thread, strided.
 * I: the index type (uint32_t where every sample's h * w fits, which keeps
 * the division by w 32-bit); PB: the bytes per pixel, 0 for any (a copy
 * loop of sp->pixel_bytes). */
template <typename I, int PB>
__global__ void __launch_bounds__(256) jitter_kernel(const ladle__gpu_jitter_desc *__restrict__ samples) {
  const ladle__gpu_jitter_desc *sp = samples + blockIdx.y;
  const I w = (I)sp->w, total = (I)sp->h * w;
  const size_t ps = PB ? (size_t)PB : (size_t)sp->pixel_bytes;
  const I stride = (I)gridDim.x * blockDim.x;
  for (I i = (I)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
    const I y = i / w;
    const int x = (int)(i - y * w);
    const uint8_t *src = sp->in + (size_t)i * ps;
    if (sp->mask) {
      int sx, sy;
      src = ladle__jitter_source(x, (int)y, sp->h, sp->w, sp->n_degree, sp->key, &sx, &sy)
                ? sp->in + ((size_t)sy * (size_t)sp->w + (size_t)sx) * ps
                : sp->fill;
    }
    uint8_t *dst = sp->out + (size_t)i * ps;
#pragma unroll
    for (size_t k = 0; k < ps; k++) dst[k] = src[k];
  }
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
  size_t max_px = 1, max_items = 1;
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
    const size_t items = p->mode == LADLE__COLOR_SCALE ? d[i].pixels * (size_t)p->in_c : d[i].pixels;
    if (items > max_items) max_items = items;
  }
  memcpy(host_params, d, (size_t)n * sizeof *d);
  LADLE_CUDA_CHECK(cudaMemcpyAsync(dev_params, host_params, (size_t)n * sizeof *d, cudaMemcpyHostToDevice, s));
  (void)cudaGetLastError();
  {
    color_vec_fn vec = pick_vec(d, n, out_type, in_type);
    if (vec) {
      /* A thread per group of the largest sample (SCALE: of its elements)
       * and per single item; a thread per item where a sample has no
       * aligned group (pointers at offsets that never align together). */
      size_t threads = max_items / GROUP + 2 * GROUP;
      for (int i = 0; i < n; i++) {
        const ladle__color_params *p = &d[i].p;
        const int scale = p->mode == LADLE__COLOR_SCALE;
        const uintptr_t base[2] = {(uintptr_t)d[i].in, (uintptr_t)d[i].out};
        const int bytes[2] = {(scale ? 1 : p->in_c) * ladle__vec_size(in_type),
                              (scale ? 1 : p->out_c) * ladle__vec_size(out_type)};
        if (d[i].pixels && ladle__vec_head(2, base, bytes) < 0) threads = max_items;
      }
      vec<<<dim3(ladle__vec_blocks(threads, n), (unsigned)n), 256, 0, s>>>(
          (const ladle__gpu_color_desc *)dev_params);
    } else {
      color_kernel<<<dim3(ladle__vec_blocks(max_px, n), (unsigned)n), 256, 0, s>>>((const ladle__gpu_color_desc *)dev_params,
                                                                          (int)out_type, (int)in_type);
    }
  }
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
  int all3 = 1; /* every sample 3 bytes a pixel */
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
    all3 &= d[i].pixel_bytes == 3;
  }
  memcpy(host_params, d, (size_t)n * sizeof *d);
  LADLE_CUDA_CHECK(cudaMemcpyAsync(dev_params, host_params, (size_t)n * sizeof *d, cudaMemcpyHostToDevice, s));
  (void)cudaGetLastError();
  {
    const ladle__gpu_jitter_desc *dp = (const ladle__gpu_jitter_desc *)dev_params;
    const dim3 grid(ladle__vec_blocks(max_px, n), (unsigned)n);
    /* i + stride stays below 2^32 when h * w does and the grid's threads (at most 2^20) are added */
    if (max_px <= UINT32_MAX - (1u << 20) && all3)
      jitter_kernel<uint32_t, 3><<<grid, 256, 0, s>>>(dp);
    else if (max_px <= UINT32_MAX - (1u << 20))
      jitter_kernel<uint32_t, 0><<<grid, 256, 0, s>>>(dp);
    else
      jitter_kernel<size_t, 0><<<grid, 256, 0, s>>>(dp);
  }
  LADLE_CUDA_CHECK_LAUNCH(jitter_kernel);
done:
  return st;
}
