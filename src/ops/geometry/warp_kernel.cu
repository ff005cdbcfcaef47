/* warp_affine/rotate and paste on the GPU: one launch per batch, one thread
 * per WARP_ROWS output pixels of a column (paste: per 16 output bytes), the
 * CPU kernel's per-pixel rule (warp_sample.h) with every float operation
 * rounded on its own; the kernels are instantiated per element type pair and
 * channel count. */
/* A .cu file is only built with CUDA; the C headers it shares look for this. */
#ifndef LADLE_HAVE_CUDA
#define LADLE_HAVE_CUDA 1
#endif

#include "ops/geometry/warp_kernel.h"
#include "ops/kernels/gpu_kernels.h"
#include "ops/kernels/gpu_u8.h"

#include <string.h>

extern "C" {
#include "core/error.h"
}
#include "cuda/runtime.h"
#include "ops/geometry/warp_sample.h"

namespace {

enum { TILE_W = 32, TILE_H = 8, WARP_ROWS = 4 };

size_t param_bytes_of(int n, size_t each) { return ((size_t)(n > 0 ? n : 0) * each + 15) & ~(size_t)15; }

ladle_status check_launch(int n, const void *d, void *host, void *dev, size_t bytes, size_t need, const char *func) {
  if (!(n >= 1 && n <= LADLE__GPU_MAX_SAMPLES && d && host && dev))
    return ladle__set_error(LADLE_ERROR_INVALID_ARGUMENT, func, "bad batch (n = %d, or a NULL buffer)", n);
  if (((uintptr_t)host & 15) || ((uintptr_t)dev & 15) || bytes < need)
    return ladle__set_error(LADLE_ERROR_INVALID_ARGUMENT, func,
                            "parameter buffers must be 16-byte aligned and hold %zu bytes (got %zu)", need, bytes);
  return LADLE_OK;
}

/* 2 * C (<= 8) consecutive bytes from p, as two words (byte k of the run is
 * byte k % 4 of word k / 4): aligned 4-byte loads, only of words that hold a
 * byte of the run, then funnel shifts. */
__device__ __forceinline__ uint2 load_u8_run(const uint8_t *p, int n) {
  const uintptr_t a = (uintptr_t)p;
  const unsigned *w = (const unsigned *)(a & ~(uintptr_t)3);
  const int off = (int)(a & 3);
  const unsigned w0 = __ldg(w), w1 = off + n > 4 ? __ldg(w + 1) : 0u, w2 = off + n > 8 ? __ldg(w + 2) : 0u;
  return make_uint2(__funnelshift_r(w0, w1, off * 8), __funnelshift_r(w1, w2, off * 8));
}

__device__ __forceinline__ float run_byte(uint2 v, int k) {
  return ladle__gpu_byte_float(k < 4 ? v.x : v.y, k & 3);
}

/* warp_source and warp_linear_setup for x, y < 2^23 with the same float
 * operations, the int <-> float conversions and floors done by gpu_u8.h's
 * exact additions where the position is small (|sx|, |sy| < 2^22). */
__device__ __forceinline__ void warp_linear_at(const float *m, int x, int y, int *x0, int *y0, float *px, float *qx,
                                               float *qy) {
  const float fx = __fadd_rn(ladle__gpu_small_float(x), 0.5f), fy = __fadd_rn(ladle__gpu_small_float(y), 0.5f);
  const float ux = __fadd_rn(__fadd_rn(__fmul_rn(m[0], fx), __fmul_rn(m[1], fy)), m[2]);
  const float uy = __fadd_rn(__fadd_rn(__fmul_rn(m[3], fx), __fmul_rn(m[4], fy)), m[5]);
  const float sx = __fsub_rn(ux, 0.5f), sy = __fsub_rn(uy, 0.5f);
  if (fabsf(sx) < 4194304.0f && fabsf(sy) < 4194304.0f) {
    float fx0, fy0;
    *x0 = ladle__gpu_floor_small(sx, &fx0);
    *y0 = ladle__gpu_floor_small(sy, &fy0);
    *qx = __fsub_rn(sx, fx0);
    *qy = __fsub_rn(sy, fy0);
    *px = __fsub_rn(1.0f, *qx);
  } else {
    warp_linear_setup(ux, uy, x0, y0, px, qx, qy);
  }
}

/* The C values of a pixel stored from element o on as OUT: uint8 converted
 * by arithmetic (gpu_u8.h) and written in as few stores as alignment allows. */
template <int OUT, int C>
__device__ __forceinline__ void warp_store_pixel(void *out, size_t o, const float *v) {
  enum { K = C > 0 ? C : 1 }; /* C = 0 is never stored here */
  if (OUT != LADLE__WARP_U8) {
#pragma unroll
    for (int c = 0; c < C; c++) warp_store(out, o + c, OUT, v[c]);
    return;
  }
  uint8_t *dst = (uint8_t *)out + o;
  unsigned b[K];
#pragma unroll
  for (int c = 0; c < C; c++) b[c] = ladle__gpu_u8_round_away(v[c]);
  if (C == 3) { /* two stores: a 2-byte one on the even address */
    if (((uintptr_t)dst & 1) == 0) {
      *(unsigned short *)dst = (unsigned short)(b[0] | b[1 % K] << 8);
      dst[2 % K] = (uint8_t)b[2 % K];
    } else {
      dst[0] = (uint8_t)b[0];
      *(unsigned short *)(dst + 1) = (unsigned short)(b[1 % K] | b[2 % K] << 8);
    }
  } else if (C == 4 && ((uintptr_t)dst & 3) == 0) {
    *(unsigned *)dst = b[0] | b[1 % K] << 8 | b[2 % K] << 16 | b[3 % K] << 24;
  } else {
#pragma unroll
    for (int c = 0; c < C; c++) dst[c] = (uint8_t)b[c];
  }
}

/* uint8 LINEAR pixels (x, y + i * TILE_H), i < WARP_ROWS, of a sample with
 * `narrow` 32-bit indices and C (> 0) channels: the source positions of all
 * first, then the loads of all (in flight together), then the blends and
 * stores. A pixel whose four taps are inside reads each tap row's 2 * C
 * bytes with word loads; one whose four taps are all outside with a fill
 * value reads nothing (the blend of four fill values, warp_pixel_of's
 * arithmetic); any other (on the image's edge) takes warp_pixel_of. */
enum { PIX_SKIP, PIX_INSIDE, PIX_FILL, PIX_EDGE };

template <int OUT, int C>
__device__ __forceinline__ void warp_band_u8(const ladle__gpu_warp_desc *q, int x, int y) {
  const ladle__warp_params *p = &q->p;
  const int in_w = p->in_w, in_h = p->in_h;
  const uint8_t *in = (const uint8_t *)q->in;
  float px[WARP_ROWS], qx[WARP_ROWS], qy[WARP_ROWS];
  int kind[WARP_ROWS];
  unsigned at[WARP_ROWS];
  uint2 r0[WARP_ROWS], r1[WARP_ROWS];
#pragma unroll
  for (int i = 0; i < WARP_ROWS; i++) {
    kind[i] = PIX_SKIP, at[i] = 0;
    if (y + i * TILE_H >= p->out_h) continue;
    int x0, y0;
    warp_linear_at(p->m, x, y + i * TILE_H, &x0, &y0, &px[i], &qx[i], &qy[i]);
    if (x0 >= 0 && y0 >= 0 && x0 < in_w - 1 && y0 < in_h - 1)
      kind[i] = PIX_INSIDE, at[i] = (unsigned)(y0 * in_w + x0) * (unsigned)C;
    else
      kind[i] = p->use_fill && (x0 < -1 || y0 < -1 || x0 >= in_w || y0 >= in_h) ? PIX_FILL : PIX_EDGE;
  }
#pragma unroll
  for (int i = 0; i < WARP_ROWS; i++) {
    r0[i] = r1[i] = make_uint2(0u, 0u);
    if (kind[i] != PIX_INSIDE) continue;
    r0[i] = load_u8_run(in + at[i], 2 * C);
    r1[i] = load_u8_run(in + at[i] + (unsigned)in_w * (unsigned)C, 2 * C);
  }
#pragma unroll
  for (int i = 0; i < WARP_ROWS; i++) {
    if (kind[i] == PIX_SKIP) continue;
    const int yi = y + i * TILE_H;
    if (kind[i] == PIX_EDGE) {
      warp_pixel_of(q->out, q->in, p, x, yi, LADLE__WARP_U8, OUT, 1, p->use_fill, C);
      continue;
    }
    float v[C];
    if (kind[i] == PIX_FILL) {
      const float f = p->fill_in, b = warp_blend(f, f, f, f, px[i], qx[i], qy[i]);
#pragma unroll
      for (int c = 0; c < C; c++) v[c] = b;
    } else {
#pragma unroll
      for (int c = 0; c < C; c++)
        v[c] = warp_blend(run_byte(r0[i], c), run_byte(r0[i], C + c), run_byte(r1[i], c), run_byte(r1[i], C + c),
                          px[i], qx[i], qy[i]);
    }
    warp_store_pixel<OUT, C>(q->out, (size_t)((unsigned)(yi * p->out_w + x) * (unsigned)C), v);
  }
}

/* Column x of the sample, bands of TILE_H * WARP_ROWS rows (the block's
 * first, then every gridDim.y-th): element types IN/OUT and (when not 0)
 * the channel count C fixed at compile time, so that warp_sample.h's
 * switches fold away. */
template <int IN, int OUT, int C>
__device__ __forceinline__ void warp_rows(const ladle__gpu_warp_desc *q, int x, int narrow) {
  const ladle__warp_params *p = &q->p;
  const int band = TILE_H * WARP_ROWS;
  for (int b = (int)blockIdx.y * band; b < p->out_h; b += (int)gridDim.y * band) {
    const int y = b + (int)threadIdx.y;
    if (IN == LADLE__WARP_U8 && C > 0 && p->linear && narrow) {
      warp_band_u8<OUT, (C > 0 ? C : 1)>(q, x, y);
      continue;
    }
    for (int i = 0; i < WARP_ROWS; i++)
      if (y + i * TILE_H < p->out_h)
        warp_pixel_of(q->out, q->in, p, x, y + i * TILE_H, IN, OUT, p->linear, p->use_fill, C ? C : p->channels);
  }
}

/* grid (tiles x, bands of rows, samples), block TILE_W x TILE_H, one thread
 * per output pixel of WARP_ROWS rows (of more bands where the grid is
 * capped); the sample's parameters are copied to registers once. A sample
 * smaller than the grid skips the rest. */
template <int IN, int OUT>
__global__ void __launch_bounds__(TILE_W *TILE_H) warp_kernel(const ladle__gpu_warp_desc *__restrict__ d, int narrow) {
  const ladle__gpu_warp_desc q = d[blockIdx.z];
  const int x = blockIdx.x * TILE_W + threadIdx.x;
  if (x >= q.p.out_w) return;
  switch (q.p.channels) {
    case 3: warp_rows<IN, OUT, 3>(&q, x, narrow); break;
    case 1: warp_rows<IN, OUT, 1>(&q, x, narrow); break;
    case 4: warp_rows<IN, OUT, 4>(&q, x, narrow); break;
    default: warp_rows<IN, OUT, 0>(&q, x, narrow); break;
  }
}

/* A batch whose samples differ in element types (not from an operator, whose
 * types are the node's): everything read per pixel. */
__global__ void __launch_bounds__(TILE_W *TILE_H) warp_mixed_kernel(const ladle__gpu_warp_desc *__restrict__ d, int) {
  const ladle__gpu_warp_desc *q = d + blockIdx.z;
  const int x = blockIdx.x * TILE_W + threadIdx.x;
  if (x >= q->p.out_w) return;
  for (int y = blockIdx.y * TILE_H + threadIdx.y; y < q->p.out_h; y += gridDim.y * TILE_H)
    warp_pixel(q->out, q->in, &q->p, x, y);
}

typedef void (*warp_fn)(const ladle__gpu_warp_desc *, int);

#define WARP_ROW(i) {warp_kernel<i, 0>, warp_kernel<i, 1>, warp_kernel<i, 2>, warp_kernel<i, 3>}
const warp_fn warp_kernels[4][4] = {WARP_ROW(0), WARP_ROW(1), WARP_ROW(2), WARP_ROW(3)};
#undef WARP_ROW

enum { PASTE_THREADS = 256, PASTE_CHUNK = 16 };

/*
 * paste: grid (chunks, samples). A thread writes 16 bytes of the canvas at a
 * time, the canvas seen as one byte string from the 16-byte boundary at or
 * before its start (partial chunks at both ends byte by byte): each byte is
 * the image's (its row and column inside the pasted window) or fill[c].
 * Fill bytes read nothing. One 32-bit division per chunk (64-bit for a canvas
 * of 4 GiB or more); the bytes of a chunk follow with running counters.
 */
template <typename Index>
__global__ void __launch_bounds__(PASTE_THREADS) paste_kernel(const ladle__gpu_paste_desc *__restrict__ d) {
  const ladle__gpu_paste_desc *q = d + blockIdx.y;
  const int C = q->p.channels, in_h = q->p.in_h, y0 = q->p.y0;
  const Index row = (Index)q->p.out_w * (Index)C, total = row * (Index)q->p.out_h;
  const Index xlo = (Index)q->p.x0 * (Index)C, xhi = xlo + (Index)q->p.in_w * (Index)C, in_row = xhi - xlo;
  uint8_t *out = q->out;
  const uint8_t *in = q->in;
  const int head = (int)((uintptr_t)out & (PASTE_CHUNK - 1));
  const Index chunks = (total + (Index)head + PASTE_CHUNK - 1) / PASTE_CHUNK;
  const unsigned fillw = (unsigned)q->p.fill[0] | (unsigned)q->p.fill[1] << 8 | (unsigned)q->p.fill[2] << 16 |
                         (unsigned)q->p.fill[3] << 24;
  for (Index k = (Index)blockIdx.x * PASTE_THREADS + threadIdx.x; k < chunks; k += (Index)gridDim.x * PASTE_THREADS) {
    /* bytes [f, f + 16) of the canvas, those inside [0, total) written */
    const long long f = (long long)k * PASTE_CHUNK - head;
    const int skip = f < 0 ? (int)-f : 0; /* the first chunk's bytes before the canvas */
    const Index first = (Index)(f + skip);
    Index y = first / row, xc = first - y * row;
    int c = (int)(xc % (Index)C), iy = (int)y - y0;
    bool row_in = iy >= 0 && iy < in_h;
    const uint8_t *src = in + (size_t)(row_in ? iy : 0) * (size_t)in_row - (size_t)xlo;
    unsigned word[4] = {0u, 0u, 0u, 0u};
#pragma unroll
    for (int b = 0; b < PASTE_CHUNK; b++) {
      if (b < skip) continue;
      unsigned v = (fillw >> (8 * c)) & 255u;
      if (row_in && xc >= xlo && xc < xhi) v = __ldg(src + xc);
      word[b / 4] |= v << (8 * (b % 4));
      if (++c == C) c = 0;
      if (++xc == row) {
        xc = 0;
        c = 0;
        iy++;
        row_in = iy >= 0 && iy < in_h;
        src = in + (size_t)(row_in ? iy : 0) * (size_t)in_row - (size_t)xlo;
      }
    }
    if (f >= 0 && (Index)f + PASTE_CHUNK <= total) {
      *(uint4 *)(out + f) = make_uint4(word[0], word[1], word[2], word[3]);
    } else {
      for (int b = 0; b < PASTE_CHUNK; b++) {
        const long long e = f + b;
        if (e >= 0 && e < (long long)total) out[e] = (uint8_t)(word[b / 4] >> (8 * (b % 4)));
      }
    }
  }
}

}  // namespace

extern "C" size_t ladle__gpu_warp_param_bytes(int n) { return param_bytes_of(n, sizeof(ladle__gpu_warp_desc)); }

extern "C" ladle_status ladle__gpu_warp_affine(const ladle__gpu_warp_desc *d, int n, void *host_params,
                                               void *dev_params, size_t param_bytes, void *stream) {
  ladle_status st = LADLE_OK;
  cudaStream_t s = ladle__cuda_stream(stream);
  int max_w = 1, max_h = 1, mixed = 0, narrow = 1;
  LADLE_CUDA_ENTER();
  LADLE_TRY(check_launch(n, d, host_params, dev_params, param_bytes, ladle__gpu_warp_param_bytes(n), __func__));
  for (int i = 0; i < n; i++) {
    const ladle__warp_params *p = &d[i].p;
    LADLE_CHECK(d[i].in && d[i].out && p->channels >= 1 && p->in_w >= 1 && p->in_h >= 1 && p->out_w >= 1 &&
                    p->out_h >= 1,
                LADLE_ERROR_INVALID_ARGUMENT, "sample %d: bad parameters (image %dx%d, output %dx%d, %d channels)", i,
                p->in_w, p->in_h, p->out_w, p->out_h, p->channels);
    LADLE_CHECK(p->in_type >= 0 && p->in_type <= 3 && p->out_type >= 0 && p->out_type <= 3,
                LADLE_ERROR_INVALID_ARGUMENT, "sample %d: bad element types (%d, %d)", i, p->in_type, p->out_type);
    if (p->in_type != d[0].p.in_type || p->out_type != d[0].p.out_type) mixed = 1;
    if (p->out_w > max_w) max_w = p->out_w;
    const int64_t C = p->channels;
    if ((int64_t)p->in_w * p->in_h * C >= INT32_MAX || (int64_t)p->out_w * p->out_h * C >= INT32_MAX ||
        p->out_w >= (1 << 23) || p->out_h >= (1 << 23))
      narrow = 0;
    if (p->out_h > max_h) max_h = p->out_h;
  }
  memcpy(host_params, d, (size_t)n * sizeof *d);
  LADLE_CUDA_CHECK(cudaMemcpyAsync(dev_params, host_params, (size_t)n * sizeof *d, cudaMemcpyHostToDevice, s));
  (void)cudaGetLastError();
  {
    int tiles_y = (max_h + TILE_H * WARP_ROWS - 1) / (TILE_H * WARP_ROWS);
    dim3 grid((unsigned)((max_w + TILE_W - 1) / TILE_W), (unsigned)(tiles_y < 65535 ? tiles_y : 65535), (unsigned)n);
    const warp_fn kernel = mixed ? warp_mixed_kernel : warp_kernels[d[0].p.in_type][d[0].p.out_type];
    kernel<<<grid, dim3(TILE_W, TILE_H), 0, s>>>((const ladle__gpu_warp_desc *)dev_params, narrow);
  }
  LADLE_CUDA_CHECK_LAUNCH(warp_kernel);
done:
  return st;
}

extern "C" size_t ladle__gpu_paste_param_bytes(int n) { return param_bytes_of(n, sizeof(ladle__gpu_paste_desc)); }

extern "C" ladle_status ladle__gpu_paste(const ladle__gpu_paste_desc *d, int n, void *host_params, void *dev_params,
                                         size_t param_bytes, void *stream) {
  ladle_status st = LADLE_OK;
  cudaStream_t s = ladle__cuda_stream(stream);
  unsigned long long max_bytes = 1;
  int wide = 0;
  LADLE_CUDA_ENTER();
  LADLE_TRY(check_launch(n, d, host_params, dev_params, param_bytes, ladle__gpu_paste_param_bytes(n), __func__));
  for (int i = 0; i < n; i++) {
    const ladle__paste_params *p = &d[i].p;
    LADLE_CHECK(d[i].in && d[i].out && p->channels >= 1 && p->channels <= 4 && p->in_w >= 1 && p->in_h >= 1 &&
                    p->x0 >= 0 && p->y0 >= 0 && p->x0 + p->in_w <= p->out_w && p->y0 + p->in_h <= p->out_h,
                LADLE_ERROR_INVALID_ARGUMENT, "sample %d: bad parameters (image %dx%d at (%d, %d) on %dx%d)", i,
                p->in_w, p->in_h, p->x0, p->y0, p->out_w, p->out_h);
    const unsigned long long bytes = (unsigned long long)p->out_w * p->channels * p->out_h;
    if (bytes > max_bytes) max_bytes = bytes;
    if (bytes + PASTE_CHUNK >= 0xffffffffull) wide = 1;
  }
  memcpy(host_params, d, (size_t)n * sizeof *d);
  LADLE_CUDA_CHECK(cudaMemcpyAsync(dev_params, host_params, (size_t)n * sizeof *d, cudaMemcpyHostToDevice, s));
  (void)cudaGetLastError();
  {
    const unsigned long long per_block = (unsigned long long)PASTE_THREADS * PASTE_CHUNK;
    const unsigned long long bx = (max_bytes + PASTE_CHUNK + per_block - 1) / per_block;
    dim3 grid((unsigned)(bx < 4096 ? bx : 4096), (unsigned)n);
    if (wide)
      paste_kernel<unsigned long long><<<grid, PASTE_THREADS, 0, s>>>((const ladle__gpu_paste_desc *)dev_params);
    else
      paste_kernel<unsigned><<<grid, PASTE_THREADS, 0, s>>>((const ladle__gpu_paste_desc *)dev_params);
  }
  LADLE_CUDA_CHECK_LAUNCH(paste_kernel);
done:
  return st;
}
