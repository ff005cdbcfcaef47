/* Batched crop_mirror_normalize, crop/flip and type conversion on the GPU: the
 * CPU reference's rules (ops/kernels/normalize.h), one launch per batch, one
 * thread per output pixel (normalize), byte (crop/flip) or element (convert). */
/* A .cu file is only built with CUDA; the C headers it shares look for this. */
#ifndef LADLE_HAVE_CUDA
#define LADLE_HAVE_CUDA 1
#endif

#include "ops/geometry/normalize_kernel.h"
#include "ops/kernels/gpu_kernels.h"
#include "ops/kernels/dtype.h"

#include <string.h>

extern "C" {
#include "core/error.h"
}
#include "cuda/runtime.h"

namespace {

enum { TILE_W = 32, TILE_H = 8 };

/* crop_mirror_normalize stores through ladle__store_f32: any dtype. */
int valid_cmn_dtype(int t) { return ladle__dtype_bytes(t) != 0; }

/* ------------------------------------------------------------------------ */
/* crop_mirror_normalize                                                      */
/* ------------------------------------------------------------------------ */

struct cmn_sample {
  const uint8_t *in;
  void *out;
  long long in_stride;
  int in_h, in_w, channels;
  int x0, y0, w, h, mirror;
  float mean[4], mul[4], fill[4];
  float shift;
};

/* grid (tiles x, tiles y, samples), block (32, 8): one output pixel per thread. */
__global__ void __launch_bounds__(TILE_W *TILE_H)
    cmn_kernel(const cmn_sample *__restrict__ samples, int out_type, int chw, int pad) {
  const cmn_sample *sp = samples + blockIdx.z;
  const int w = sp->w, h = sp->h;
  const int x = blockIdx.x * TILE_W + threadIdx.x, y = blockIdx.y * TILE_H + threadIdx.y;
  if (x >= w || y >= h) return;
  const int C = sp->channels;
  const int sx = sp->mirror ? sp->x0 + w - 1 - x : sp->x0 + x, sy = sp->y0 + y;
  const bool inside = sx >= 0 && sx < sp->in_w && sy >= 0 && sy < sp->in_h;
  const uint8_t *src = inside ? sp->in + (size_t)sy * (size_t)sp->in_stride + (size_t)sx * C : NULL;
  ladle__gpu_cmn_write(sp->out, out_type, chw, pad, C, w, h, x, y, inside, src, sp->mean, sp->mul, sp->shift,
                       sp->fill);
}

/* ------------------------------------------------------------------------ */
/* crop / flip                                                                */
/* ------------------------------------------------------------------------ */

struct flip_sample {
  const uint8_t *in;
  uint8_t *out;
  int in_h, in_w, ps; /* ps: bytes per pixel */
  int x0, y0, w, h, flip_x, flip_y;
  int fill;
};

/* grid (chunks of a row's bytes, rows (strided), samples): one byte per thread. */
__global__ void __launch_bounds__(256) crop_flip_kernel(const flip_sample *__restrict__ samples) {
  const flip_sample *sp = samples + blockIdx.z;
  const int ps = sp->ps, w = sp->w, h = sp->h;
  const long long row_bytes = (long long)w * ps;
  const long long b = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (b >= row_bytes) return;
  const int x = (int)(b / ps), o = (int)(b - (long long)x * ps);
  const int sx = sp->flip_x ? sp->x0 + w - 1 - x : sp->x0 + x;
  const bool col_inside = sx >= 0 && sx < sp->in_w;
  for (int y = blockIdx.y; y < h; y += gridDim.y) {
    const int sy = sp->flip_y ? sp->y0 + h - 1 - y : sp->y0 + y;
    uint8_t v = (uint8_t)sp->fill;
    if (col_inside && sy >= 0 && sy < sp->in_h) v = sp->in[((size_t)sy * sp->in_w + sx) * ps + o];
    sp->out[(size_t)y * row_bytes + b] = v;
  }
}

/* ------------------------------------------------------------------------ */
/* convert                                                                    */
/* ------------------------------------------------------------------------ */

struct convert_sample {
  const void *in;
  void *out;
  unsigned long long count;
};

/* grid (blocks, samples), block 256: a grid-stride loop over each sample. */
__global__ void __launch_bounds__(256)
    convert_kernel(const convert_sample *__restrict__ samples, int out_type, int in_type) {
  const convert_sample *sp = samples + blockIdx.y;
  const size_t n = (size_t)sp->count;
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    ladle__convert_elem(sp->out, i, out_type, sp->in, i, in_type);
  }
}

/* The same type: a copy of the bits, as memcpy (NaN payloads included). */
__global__ void __launch_bounds__(256) copy_kernel(const convert_sample *__restrict__ samples, int elem_size) {
  const convert_sample *sp = samples + blockIdx.y;
  ladle__gpu_copy_bytes(sp->out, sp->in, (size_t)sp->count * (size_t)elem_size);
}

}  // namespace

/* ------------------------------------------------------------------------ */
/* Launchers                                                                  */
/* ------------------------------------------------------------------------ */

extern "C" size_t ladle__gpu_cmn_param_bytes(int n) {
  return ladle__align16((size_t)(n > 0 ? n : 0) * sizeof(cmn_sample));
}

extern "C" ladle_status ladle__gpu_crop_mirror_normalize(const ladle__gpu_cmn_desc *d, int n, void *host_params,
                                                         void *dev_params, size_t param_bytes, void *stream) {
  ladle_status st = LADLE_OK;
  cudaStream_t s = ladle__cuda_stream(stream);
  int max_w = 1, max_h = 1, out_type = 0, chw = 0, pad = 0;
  cmn_sample *hs = (cmn_sample *)host_params;
  LADLE_CUDA_ENTER();
  LADLE_TRY(ladle__gpu_check_params(n, d, host_params, dev_params, param_bytes, ladle__gpu_cmn_param_bytes(n),
                                    __func__));
  out_type = d[0].p.dtype;
  chw = d[0].p.chw ? 1 : 0;
  pad = d[0].p.pad_output ? 1 : 0;
  for (int i = 0; i < n; i++) {
    const ladle__gpu_cmn_desc *q = &d[i];
    const ladle__cmn_params *p = &q->p;
    LADLE_CHECK(q->in && q->out && p->channels >= 1 && p->channels + pad <= 4 && p->w >= 1 && p->h >= 1 &&
                    q->in_h >= 1 && q->in_w >= 1 && q->in_stride >= (int64_t)q->in_w * p->channels &&
                    valid_cmn_dtype(p->dtype) && (int)p->dtype == out_type && (p->chw ? 1 : 0) == chw &&
                    (p->pad_output ? 1 : 0) == pad,
                LADLE_ERROR_INVALID_ARGUMENT,
                "sample %d: bad parameters (image %dx%d, stride %lld, %d channels, window %dx%d, dtype %d, chw %d, "
                "pad %d; the batch has dtype %d, chw %d, pad %d)",
                i, q->in_w, q->in_h, (long long)q->in_stride, p->channels, p->w, p->h, (int)p->dtype, p->chw,
                p->pad_output, out_type, chw, pad);
    cmn_sample *o = &hs[i];
    memset(o, 0, sizeof *o);
    o->in = q->in;
    o->out = q->out;
    o->in_stride = (long long)q->in_stride;
    o->in_h = q->in_h;
    o->in_w = q->in_w;
    o->channels = p->channels;
    o->x0 = p->x0;
    o->y0 = p->y0;
    o->w = p->w;
    o->h = p->h;
    o->mirror = p->mirror ? 1 : 0;
    for (int c = 0; c < p->channels; c++) {
      o->mean[c] = p->mean[c];
      o->mul[c] = p->inv_std[c] * p->scale; /* once, in float, as the CPU does */
      o->fill[c] = p->fill[c];
    }
    o->shift = p->shift;
    if (p->w > max_w) max_w = p->w;
    if (p->h > max_h) max_h = p->h;
  }
  LADLE_CHECK((max_h + TILE_H - 1) / TILE_H <= 65535, LADLE_ERROR_INVALID_ARGUMENT, "an output of %d rows is too tall",
              max_h);
  LADLE_CUDA_CHECK(cudaMemcpyAsync(dev_params, host_params, (size_t)n * sizeof(cmn_sample), cudaMemcpyHostToDevice, s));
  (void)cudaGetLastError(); /* a stale error from elsewhere must not be blamed on the launch */
  {
    dim3 grid((unsigned)((max_w + TILE_W - 1) / TILE_W), (unsigned)((max_h + TILE_H - 1) / TILE_H), (unsigned)n);
    dim3 block(TILE_W, TILE_H);
    cmn_kernel<<<grid, block, 0, s>>>((const cmn_sample *)dev_params, out_type, chw, pad);
  }
  LADLE_CUDA_CHECK_LAUNCH(cmn_kernel);
done:
  return st;
}

extern "C" size_t ladle__gpu_crop_flip_param_bytes(int n) {
  return ladle__align16((size_t)(n > 0 ? n : 0) * sizeof(flip_sample));
}

extern "C" ladle_status ladle__gpu_crop_flip(const ladle__gpu_crop_flip_desc *d, int n, void *host_params,
                                             void *dev_params, size_t param_bytes, void *stream) {
  ladle_status st = LADLE_OK;
  cudaStream_t s = ladle__cuda_stream(stream);
  long long max_row = 1;
  int max_h = 1;
  flip_sample *hs = (flip_sample *)host_params;
  LADLE_CUDA_ENTER();
  LADLE_TRY(ladle__gpu_check_params(n, d, host_params, dev_params, param_bytes, ladle__gpu_crop_flip_param_bytes(n),
                                    __func__));
  for (int i = 0; i < n; i++) {
    const ladle__gpu_crop_flip_desc *q = &d[i];
    const size_t ps = (size_t)q->channels * q->elem_size;
    LADLE_CHECK(q->in && q->out && q->channels >= 1 && q->elem_size >= 1 && ps <= 64 && q->w >= 1 && q->h >= 1 &&
                    q->in_h >= 1 && q->in_w >= 1,
                LADLE_ERROR_INVALID_ARGUMENT, "sample %d: bad parameters (image %dx%d, %d channels of %zu bytes, "
                "window %dx%d)", i, q->in_w, q->in_h, q->channels, q->elem_size, q->w, q->h);
    flip_sample *o = &hs[i];
    memset(o, 0, sizeof *o);
    o->in = (const uint8_t *)q->in;
    o->out = (uint8_t *)q->out;
    o->in_h = q->in_h;
    o->in_w = q->in_w;
    o->ps = (int)ps;
    o->x0 = q->x0;
    o->y0 = q->y0;
    o->w = q->w;
    o->h = q->h;
    o->flip_x = q->flip_x ? 1 : 0;
    o->flip_y = q->flip_y ? 1 : 0;
    o->fill = q->fill;
    if ((long long)q->w * (long long)ps > max_row) max_row = (long long)q->w * (long long)ps;
    if (q->h > max_h) max_h = q->h;
  }
  LADLE_CUDA_CHECK(cudaMemcpyAsync(dev_params, host_params, (size_t)n * sizeof(flip_sample), cudaMemcpyHostToDevice, s));
  (void)cudaGetLastError();
  {
    dim3 grid((unsigned)((max_row + 255) / 256), (unsigned)(max_h < 1024 ? max_h : 1024), (unsigned)n);
    crop_flip_kernel<<<grid, 256, 0, s>>>((const flip_sample *)dev_params);
  }
  LADLE_CUDA_CHECK_LAUNCH(crop_flip_kernel);
done:
  return st;
}

extern "C" size_t ladle__gpu_convert_param_bytes(int n) {
  return ladle__align16((size_t)(n > 0 ? n : 0) * sizeof(convert_sample));
}

extern "C" ladle_status ladle__gpu_convert(const ladle__gpu_convert_desc *d, int n, ladle_dtype out_type,
                                           ladle_dtype in_type, void *host_params, void *dev_params,
                                           size_t param_bytes, void *stream) {
  ladle_status st = LADLE_OK;
  cudaStream_t s = ladle__cuda_stream(stream);
  size_t max_n = 1;
  convert_sample *hs = (convert_sample *)host_params;
  LADLE_CUDA_ENTER();
  LADLE_TRY(ladle__gpu_check_params(n, d, host_params, dev_params, param_bytes, ladle__gpu_convert_param_bytes(n),
                                    __func__));
  LADLE_CHECK(ladle__dtype_bytes(out_type) && ladle__dtype_bytes(in_type), LADLE_ERROR_INVALID_ARGUMENT,
              "cannot convert type %d to type %d", (int)in_type, (int)out_type);
  for (int i = 0; i < n; i++) {
    LADLE_CHECK(d[i].count == 0 || (d[i].in && d[i].out), LADLE_ERROR_INVALID_ARGUMENT, "sample %d: NULL pointer", i);
    hs[i].in = d[i].in;
    hs[i].out = d[i].out;
    hs[i].count = (unsigned long long)d[i].count;
    if (d[i].count > max_n) max_n = d[i].count;
  }
  LADLE_CUDA_CHECK(cudaMemcpyAsync(dev_params, host_params, (size_t)n * sizeof(convert_sample), cudaMemcpyHostToDevice,
                                   s));
  (void)cudaGetLastError();
  {
    /* Enough blocks to fill the GPU for one large sample; the loop covers the rest. */
    size_t blocks = (max_n + 255) / 256;
    if (blocks > 4096) blocks = 4096;
    if (out_type == in_type) {
      /* units of up to 16 bytes (the grid-stride loop covers any sample) */
      copy_kernel<<<dim3((unsigned)blocks, (unsigned)n), 256, 0, s>>>((const convert_sample *)dev_params,
                                                                      (int)ladle__dtype_bytes(in_type));
      LADLE_CUDA_CHECK_LAUNCH(copy_kernel);
    } else {
      convert_kernel<<<dim3((unsigned)blocks, (unsigned)n), 256, 0, s>>>((const convert_sample *)dev_params,
                                                                         (int)out_type, (int)in_type);
      LADLE_CUDA_CHECK_LAUNCH(convert_kernel);
    }
  }
done:
  return st;
}
