/* Batched separable resize on the GPU, and the crop+resize+normalize kernel
 * behind ladle__gpu_fused: the CPU reference's filter tables and arithmetic
 * (ops/kernels/resize.h), one launch per batch, a 32 x 8 output tile per block
 * with the horizontal pass kept in shared memory. */
/* A .cu file is only built with CUDA; the C headers it shares look for this. */
#ifndef LADLE_HAVE_CUDA
#define LADLE_HAVE_CUDA 1
#endif

#include "ops/geometry/resize_kernel.h"
#include "ops/geometry/resize_dali_filter.h"
#include "ops/kernels/gpu_kernels.h"

#include <limits.h>
#include <string.h>

extern "C" {
#include "core/error.h"
}
#include "cuda/runtime.h"

namespace {

enum { TILE_W = 32, TILE_H = 8, CHUNK_ROWS = 32, THREADS = TILE_W * TILE_H };

/* One sample as the kernel sees it (built on the host, copied in one go). The
 * output window (x0, y0, w, h, mirror) selects from the resized image R of
 * rw x rh pixels; for a plain resize it is R itself. */
struct resample_sample {
  const void *in;
  void *out;
  const int32_t *xs, *ys; /* filter starts per R column / row */
  const float *xw, *yw;   /* weights, taps per R column / row */
  long long in_stride;    /* elements */
  int channels;
  int rw, rh, xtaps, ytaps;
  int x0, y0, w, h, mirror;
  int round_split; /* uint8 results: elements x * C + c >= this sum from 0.5 and truncate */
  float mean[4], mul[4], fill[4];
  float shift;
};

/* What a launch does with each output pixel. */
enum { MODE_RESIZE = 0, MODE_CMN = 1 };

/* (float)b for a byte b, without the int-to-float conversion (which issues at
 * 16 per clock per SM, an eighth of a float add): 0x4B000000 | b is the float
 * 2^23 + b, and subtracting 2^23 is exact, so the result is the same bits. */
__device__ __forceinline__ float u8_to_f32(unsigned b) {
  return __fsub_rn(__uint_as_float(0x4B000000u | b), 8388608.0f);
}

__device__ __forceinline__ float to_f32(uint8_t v) { return u8_to_f32(v); }
__device__ __forceinline__ float to_f32(float v) { return v; }

__device__ __forceinline__ float load_elem(const void *p, size_t i, int in_f32) {
  return in_f32 ? ((const float *)p)[i] : u8_to_f32(((const uint8_t *)p)[i]);
}

/*
 * grid (tiles x, tiles y, samples), block (32, 8). Thread (tx, ty) owns output
 * pixel (X0 + tx, Y0 + ty) and keeps its vertical sums for all channels in
 * registers; the horizontal pass of CHUNK_ROWS input rows at a time lands in
 * shared memory, planar per channel so that a warp's 32 columns hit 32 banks.
 * Rows are visited in increasing order, so each pixel's vertical sum is formed
 * in tap order, as on the CPU.
 */
__global__ void __launch_bounds__(THREADS)
    resample_kernel(const resample_sample *__restrict__ samples, int in_f32, int mode, int out_type, int chw,
                    int pad) {
  __shared__ float t[4][CHUNK_ROWS][TILE_W];
  __shared__ int range[3]; /* first input row, one past the last, any column inside */

  const resample_sample *sp = samples + blockIdx.z;
  const int w = sp->w, h = sp->h;
  const int X0 = blockIdx.x * TILE_W, Y0 = blockIdx.y * TILE_H;
  if (X0 >= w || Y0 >= h) return; /* the whole block: this sample is smaller than the grid */

  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * TILE_W + tx;
  const int C = sp->channels, rw = sp->rw, rh = sp->rh;
  const int xtaps = sp->xtaps, ytaps = sp->ytaps;
  const int mirror = sp->mirror, x0 = sp->x0, y0 = sp->y0;
  const int x = X0 + tx, y = Y0 + ty;
  const int rx = mirror ? x0 + w - 1 - x : x0 + x; /* this pixel's column and row in R */
  const int ry = y0 + y;
  const bool pix = x < w && y < h;
  const bool inside = pix && rx >= 0 && rx < rw && ry >= 0 && ry < rh;

  /* Warp 0 finds the input rows the tile needs: lane l looks at tile row l
   * (TILE_H <= 32) and at tile column l. */
  if (ty == 0) {
    int lo = INT_MAX, hi = INT_MIN, col_ok = 0;
    const int yl = Y0 + tx, ryl = y0 + yl;
    if (tx < TILE_H && yl < h && ryl >= 0 && ryl < rh) {
      lo = sp->ys[ryl];
      hi = lo + ytaps;
    }
    col_ok = x < w && rx >= 0 && rx < rw;
    for (int s = 16; s > 0; s >>= 1) {
      lo = min(lo, __shfl_xor_sync(0xffffffffu, lo, s));
      hi = max(hi, __shfl_xor_sync(0xffffffffu, hi, s));
    }
    col_ok = __any_sync(0xffffffffu, col_ok);
    if (tx == 0) {
      range[0] = lo;
      range[1] = hi;
      range[2] = col_ok;
    }
  }
  __syncthreads();
  const int row_lo = range[0], row_hi = range[2] ? range[1] : range[0]; /* no column: no rows */

  bool up[4];
  float acc[4];
#pragma unroll
  for (int c = 0; c < 4; c++) {
    up[c] = !in_f32 && rx * C + c >= sp->round_split; /* the element of R's row */
    acc[c] = up[c] ? 0.5f : 0.0f;
  }
  const int ys0 = inside ? sp->ys[ry] : 0;
  const float *wy = sp->yw + (size_t)(inside ? ry : 0) * ytaps;

  for (int c0 = row_lo; c0 < row_hi; c0 += CHUNK_ROWS) {
    const int nrows = min(CHUNK_ROWS, row_hi - c0);
    /* Horizontal pass: rows c0 .. c0 + nrows - 1, the tile's 32 columns. */
    for (int q = tid; q < nrows * TILE_W; q += THREADS) {
      const int r = q / TILE_W, j = q % TILE_W;
      const int xj = X0 + j, rxj = mirror ? x0 + w - 1 - xj : x0 + xj;
      if (xj >= w || rxj < 0 || rxj >= rw) continue;
      const int s = sp->xs[rxj];
      const float *wx = sp->xw + (size_t)rxj * xtaps;
      const size_t row = (size_t)(c0 + r) * (size_t)sp->in_stride;
      float a[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      for (int k = 0; k < xtaps; k++) {
        const float wk = wx[k];
        const size_t px = row + (size_t)(s + k) * C;
#pragma unroll
        for (int c = 0; c < 4; c++)
          if (c < C) a[c] = __fadd_rn(a[c], __fmul_rn(wk, load_elem(sp->in, px + c, in_f32)));
      }
#pragma unroll
      for (int c = 0; c < 4; c++)
        if (c < C) t[c][r][j] = a[c];
    }
    __syncthreads();
    /* Vertical pass: this pixel's taps whose rows are in the chunk, in order. */
    if (inside) {
      const int k_lo = max(0, c0 - ys0), k_hi = min(ytaps, c0 + nrows - ys0);
      for (int k = k_lo; k < k_hi; k++) {
        const float wk = wy[k];
        const int r = ys0 + k - c0;
#pragma unroll
        for (int c = 0; c < 4; c++)
          if (c < C) acc[c] = __fadd_rn(acc[c], __fmul_rn(wk, t[c][r][tx]));
      }
    }
    __syncthreads();
  }

  if (!pix) return;
  if (mode == MODE_RESIZE) { /* R itself, HWC, the input's type */
    const size_t o = ((size_t)y * w + x) * C;
#pragma unroll
    for (int c = 0; c < 4; c++) {
      if (c >= C) break;
      if (in_f32)
        ((float *)sp->out)[o + c] = acc[c];
      else
        ((uint8_t *)sp->out)[o + c] = up[c] ? ladle__f32_to_u8_trunc(acc[c]) : ladle__f32_to_u8(acc[c]);
    }
    return;
  }
  /* MODE_CMN: R rounded to uint8 (as the unfused resize stores it), then
   * normalized; fill outside R; the padding channel is 0. */
  uint8_t rounded[4];
#pragma unroll
  for (int c = 0; c < 4; c++) rounded[c] = up[c] ? ladle__f32_to_u8_trunc(acc[c]) : ladle__f32_to_u8(acc[c]);
  ladle__gpu_cmn_write(sp->out, out_type, chw, pad, C, w, h, x, y, inside, rounded, sp->mean, sp->mul, sp->shift,
                       sp->fill);
}

/*
 * Plain resize (MODE_RESIZE), the faster layout: grid (tiles x, tiles y,
 * samples), block (32, 8); a block computes a 32 x 32 output tile, thread
 * (tx, ty) the column tx of rows ty, ty + 8, ty + 16, ty + 24. The input rows
 * the tile's vertical filters read are resized horizontally RZ_CHUNK rows at a
 * time into shared memory (the thread's column, 4 rows at once so that their
 * loads overlap), then each thread adds those rows to its 4 pixels' vertical
 * sums in tap order. The tile's filter starts and weights (up to RZ_MAX_TAPS
 * taps an axis, else read from the tables) sit in shared memory, stored
 * tap-major so that a warp's 32 columns (rows) hit 32 banks. Element type and
 * channel count are compile-time (the per-sample channel switch is uniform
 * per block). The sums are the CPU's, operation for operation.
 */
enum { RZ_W = 32, RZ_ROWS_PER_THREAD = 4, RZ_H = TILE_H * RZ_ROWS_PER_THREAD, RZ_CHUNK = 32, RZ_MAX_TAPS = 32 };

struct rz_shared {
  float t[4][RZ_CHUNK][RZ_W];
  float wx[RZ_MAX_TAPS][RZ_W], wy[RZ_MAX_TAPS][RZ_H];
  int xs[RZ_W], ys[RZ_H];
  int range[2];
};

template <typename T, int C>
__device__ __forceinline__ void resize_tile(const resample_sample *sp, rz_shared &sm) {
  const int rw = sp->rw, rh = sp->rh, xtaps = sp->xtaps, ytaps = sp->ytaps;
  const int X0 = blockIdx.x * RZ_W, Y0 = blockIdx.y * RZ_H;
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * RZ_W + tx;
  const bool wx_shared = xtaps <= RZ_MAX_TAPS, wy_shared = ytaps <= RZ_MAX_TAPS;

  /* The tile's tables; warp 0 also finds the input rows its rows read. */
  for (int q = tid; q < RZ_W + RZ_H; q += THREADS) {
    if (q < RZ_W) {
      sm.xs[q] = sp->xs[min(X0 + q, rw - 1)];
    } else {
      sm.ys[q - RZ_W] = sp->ys[min(Y0 + q - RZ_W, rh - 1)];
    }
  }
  if (wx_shared)
    for (int q = tid; q < xtaps * RZ_W; q += THREADS) {
      const int k = q / RZ_W, j = q % RZ_W;
      sm.wx[k][j] = sp->xw[(size_t)min(X0 + j, rw - 1) * xtaps + k];
    }
  if (wy_shared)
    for (int q = tid; q < ytaps * RZ_H; q += THREADS) {
      const int k = q / RZ_H, j = q % RZ_H;
      sm.wy[k][j] = sp->yw[(size_t)min(Y0 + j, rh - 1) * ytaps + k];
    }
  if (ty == 0) {
    int lo = INT_MAX, hi = INT_MIN;
    if (Y0 + tx < rh) {
      lo = sp->ys[Y0 + tx];
      hi = lo + ytaps;
    }
    for (int s = 16; s > 0; s >>= 1) {
      lo = min(lo, __shfl_xor_sync(0xffffffffu, lo, s));
      hi = max(hi, __shfl_xor_sync(0xffffffffu, hi, s));
    }
    if (tx == 0) {
      sm.range[0] = lo;
      sm.range[1] = hi;
    }
  }
  __syncthreads();
  const int row_lo = sm.range[0], row_hi = sm.range[1];

  const int x = X0 + tx, xc = min(x, rw - 1); /* columns past the edge compute column rw - 1, unstored */
  const int xs = sm.xs[tx];
  const float *wxp = wx_shared ? &sm.wx[0][tx] : sp->xw + (size_t)xc * xtaps;
  const int wx_step = wx_shared ? RZ_W : 1;
  const T *in = (const T *)sp->in;
  const size_t stride = (size_t)sp->in_stride;

  bool up[C];
  float acc[RZ_ROWS_PER_THREAD][C];
#pragma unroll
  for (int c = 0; c < C; c++) up[c] = sizeof(T) == 1 && xc * C + c >= sp->round_split;
#pragma unroll
  for (int i = 0; i < RZ_ROWS_PER_THREAD; i++)
#pragma unroll
    for (int c = 0; c < C; c++) acc[i][c] = up[c] ? 0.5f : 0.0f;

  for (int c0 = row_lo; c0 < row_hi; c0 += RZ_CHUNK) {
    const int nrows = min(RZ_CHUNK, row_hi - c0);
    /* Horizontal: rows c0 + ty + 8 i of column x (a warp's rows are one row:
     * the row guard is uniform per warp). */
    {
      float a[RZ_ROWS_PER_THREAD][C];
      const T *src[RZ_ROWS_PER_THREAD];
#pragma unroll
      for (int i = 0; i < RZ_ROWS_PER_THREAD; i++) {
        src[i] = in + (size_t)(c0 + min(ty + TILE_H * i, nrows - 1)) * stride + (size_t)xs * C;
#pragma unroll
        for (int c = 0; c < C; c++) a[i][c] = 0.0f;
      }
      const int live = (nrows - ty + TILE_H - 1) / TILE_H; /* rows of this warp in the chunk */
#pragma unroll 2
      for (int k = 0; k < xtaps; k++) {
        const float wk = wxp[k * wx_step];
#pragma unroll
        for (int i = 0; i < RZ_ROWS_PER_THREAD; i++)
          if (i < live)
#pragma unroll
            for (int c = 0; c < C; c++)
              a[i][c] = __fadd_rn(a[i][c], __fmul_rn(wk, to_f32(__ldg(src[i] + (size_t)k * C + c))));
      }
#pragma unroll
      for (int i = 0; i < RZ_ROWS_PER_THREAD; i++)
        if (i < live)
#pragma unroll
          for (int c = 0; c < C; c++) sm.t[c][ty + TILE_H * i][tx] = a[i][c];
    }
    __syncthreads();
    /* Vertical: each of the thread's rows adds its taps whose rows are in the chunk, in order. */
#pragma unroll
    for (int i = 0; i < RZ_ROWS_PER_THREAD; i++) {
      const int ry = ty + TILE_H * i, ys = sm.ys[ry];
      const int k_lo = max(0, c0 - ys), k_hi = min(ytaps, c0 + nrows - ys);
      const float *wyp = wy_shared ? &sm.wy[0][ry] : sp->yw + (size_t)min(Y0 + ry, rh - 1) * ytaps;
      const int wy_step = wy_shared ? RZ_H : 1;
      for (int k = k_lo; k < k_hi; k++) {
        const float wk = wyp[k * wy_step];
        const int r = ys + k - c0;
#pragma unroll
        for (int c = 0; c < C; c++) acc[i][c] = __fadd_rn(acc[i][c], __fmul_rn(wk, sm.t[c][r][tx]));
      }
    }
    __syncthreads();
  }

  if (x >= rw) return;
#pragma unroll
  for (int i = 0; i < RZ_ROWS_PER_THREAD; i++) {
    const int y = Y0 + ty + TILE_H * i;
    if (y >= rh) break;
    T *o = (T *)sp->out + ((size_t)y * rw + x) * C;
#pragma unroll
    for (int c = 0; c < C; c++) {
      if (sizeof(T) == 1)
        ((uint8_t *)o)[c] = up[c] ? ladle__f32_to_u8_trunc(acc[i][c]) : ladle__f32_to_u8(acc[i][c]);
      else
        ((float *)o)[c] = acc[i][c];
    }
  }
}

/* CC: the channel count of every sample, or 0 for a batch that mixes them
 * (then switched per block, with the register budget of the widest). */
template <typename T, int CC>
__global__ void __launch_bounds__(THREADS) resize_kernel(const resample_sample *__restrict__ samples) {
  __shared__ rz_shared sm;
  const resample_sample *sp = samples + blockIdx.z;
  if ((int)blockIdx.x * RZ_W >= sp->rw || (int)blockIdx.y * RZ_H >= sp->rh) return; /* the whole block */
  switch (CC ? CC : sp->channels) {
    case 1: resize_tile<T, 1>(sp, sm); break;
    case 2: resize_tile<T, 2>(sp, sm); break;
    case 3: resize_tile<T, 3>(sp, sm); break;
    default: resize_tile<T, 4>(sp, sm); break;
  }
}

typedef void (*resize_fn)(const resample_sample *);
const resize_fn resize_kernels[2][5] = {
    {resize_kernel<uint8_t, 0>, resize_kernel<uint8_t, 1>, resize_kernel<uint8_t, 2>, resize_kernel<uint8_t, 3>,
     resize_kernel<uint8_t, 4>},
    {resize_kernel<float, 0>, resize_kernel<float, 1>, resize_kernel<float, 2>, resize_kernel<float, 3>,
     resize_kernel<float, 4>}};

/*
 * Table planning on the GPU, for samples given by their DALI geometry: one
 * block per axis. Its threads first find the axis's row length (the widest
 * clamped filter), then each builds the rows of its output pixels with the
 * CPU planner's formula (resize_dali_filter.h), and thread 0 stores the row
 * length into the sample's parameters, which the resampling kernel queued
 * after this one reads.
 */
struct plan_job {
  ladle__resize_dali_axis a;
  const float *t; /* the filter's shape (a->table), num points and a 0 */
  int num;
  int32_t *start;
  float *w;  /* out_size * taps, packed */
  int *taps; /* the sample's xtaps or ytaps */
};

enum { PLAN_THREADS = 256 };

__global__ void __launch_bounds__(PLAN_THREADS) plan_kernel(const plan_job *__restrict__ jobs) {
  __shared__ int taps_sh;
  const plan_job *j = jobs + blockIdx.x;
  const ladle__resize_dali_axis a = j->a;
  const int n = a.out_size;
  if (a.table == LADLE__RESIZE_TABLE_NN) {
    for (int i = threadIdx.x; i < n; i += PLAN_THREADS) {
      float s = rzd_nn_first(&a);
      if (a.nn_step)
        for (int k = 0; k < i; k++) s = RZD_ADD(s, a.scale); /* the CPU's running sum, step by step */
      j->start[i] = rzd_nn_start(&a, i, s);
      j->w[i] = 1.0f;
    }
    if (threadIdx.x == 0) *j->taps = 1;
    return;
  }
  if (threadIdx.x == 0) taps_sh = 1;
  __syncthreads();
  int m = 1;
  for (int i = threadIdx.x; i < n; i += PLAN_THREADS) m = max(m, rzd_clamped_len(&a, i));
  for (int s = 16; s > 0; s >>= 1) m = max(m, __shfl_xor_sync(0xffffffffu, m, s));
  if ((threadIdx.x & 31) == 0) atomicMax(&taps_sh, m);
  __syncthreads();
  const int taps = taps_sh;
  if (threadIdx.x == 0) *j->taps = taps;
  for (int i = threadIdx.x; i < n; i += PLAN_THREADS) {
    float *w = j->w + (size_t)i * taps;
    for (int k = 0; k < taps; k++) w[k] = 0.0f;
    j->start[i] = rzd_row(&a, j->t, j->num, taps, i, w, NULL);
  }
}


/* Bytes of the tables of one sample of ow x oh outputs, rows of (at most) tx and ty taps. */
size_t table_bytes(int ow, int oh, int tx, int ty) {
  return ladle__align16((size_t)ow * sizeof(int32_t)) + ladle__align16((size_t)oh * sizeof(int32_t)) +
         ladle__align16((size_t)ow * tx * sizeof(float)) + ladle__align16((size_t)oh * ty * sizeof(float));
}

size_t sample_table_bytes(const ladle__gpu_resize_desc *d) {
  if (d->geom)
    return table_bytes(d->geom->x.out_size, d->geom->y.out_size, ladle__resize_dali_max_taps(&d->geom->x),
                       ladle__resize_dali_max_taps(&d->geom->y));
  if (d->ax && d->ay) return table_bytes(d->ax->out_size, d->ay->out_size, d->ax->taps, d->ay->taps);
  return 0;
}

/* The parameter buffer: the samples, the planning jobs (two per sample at
 * most), DALI's filter shapes, the uploaded tables, then the tables the
 * planning kernel writes. */
size_t jobs_offset(int n) { return ladle__align16((size_t)n * sizeof(resample_sample)); }
size_t shapes_offset(int n) { return jobs_offset(n) + ladle__align16((size_t)2 * n * sizeof(plan_job)); }
enum { SHAPE_FLOATS = 512 }; /* room for every filter shape, each padded to 4 floats */

int valid_geom_axis(const ladle__resize_dali_axis *a, int in_size) {
  return a->in_size == in_size && a->out_size >= 1 && a->table >= LADLE__RESIZE_TABLE_NN &&
         a->table < LADLE__RESIZE_TABLE_COUNT && a->support >= 1 && a->clo >= 0 && a->clo <= a->chi &&
         a->chi < in_size;
}

int valid_axis(const ladle__resize_axis *a, int in_size) {
  return a && a->start && a->weights && a->out_size >= 1 && a->taps >= 1 && a->taps <= a->in_size &&
         a->in_size == in_size;
}

}  // namespace

extern "C" size_t ladle__gpu_resize_param_bytes(const ladle__gpu_resize_desc *d, int n) {
  if (n < 0) n = 0;
  size_t bytes = shapes_offset(n) + SHAPE_FLOATS * sizeof(float);
  for (int i = 0; i < n; i++) bytes += sample_table_bytes(&d[i]);
  return bytes;
}

extern "C" ladle_status ladle__gpu_resample(const ladle__gpu_resize_desc *d, const ladle__cmn_params *cmn, int n,
                                            ladle_dtype in_type, void *host_params, void *dev_params,
                                            size_t param_bytes, void *stream, const char *func) {
  ladle_status st = LADLE_OK;
  cudaStream_t s = ladle__cuda_stream(stream);
  int max_w = 1, max_h = 1;
  ladle_dtype out_type = in_type;
  int chw = 0, pad = 0;
  if (ladle__cuda_broken()) { /* LADLE_CUDA_ENTER, in the public caller's name */
    st = ladle__cuda_check_latch(func);
    goto done;
  }
  if (!(n >= 1 && n <= LADLE__GPU_MAX_SAMPLES && d && host_params && dev_params)) {
    st = ladle__set_error(LADLE_ERROR_INVALID_ARGUMENT, func, "bad batch (n = %d, or a NULL buffer)", n);
    goto done;
  }
  if (in_type != LADLE_UINT8 && (in_type != LADLE_FLOAT32 || cmn)) {
    st = ladle__set_error(LADLE_ERROR_INVALID_ARGUMENT, func, "input type %s is not supported here",
                          ladle_dtype_name(in_type));
    goto done;
  }
  if (((uintptr_t)host_params & 15) || ((uintptr_t)dev_params & 15) ||
      param_bytes < ladle__gpu_resize_param_bytes(d, n)) {
    st = ladle__set_error(LADLE_ERROR_INVALID_ARGUMENT, func,
                          "parameter buffers must be 16-byte aligned and hold %zu bytes (got %zu)",
                          ladle__gpu_resize_param_bytes(d, n), param_bytes);
    goto done;
  }
  if (cmn) {
    out_type = cmn[0].dtype;
    chw = cmn[0].chw ? 1 : 0;
    pad = cmn[0].pad_output ? 1 : 0;
  }

  {
    resample_sample *hs = (resample_sample *)host_params;
    plan_job *hj = (plan_job *)((uint8_t *)host_params + jobs_offset(n));
    const plan_job *dj = (const plan_job *)((uint8_t *)dev_params + jobs_offset(n));
    uint8_t *hbase = (uint8_t *)host_params, *dbase = (uint8_t *)dev_params;
    int njobs = 0;
    /* DALI's filter shapes (4 floats apart), for the planning kernel. */
    const size_t shapes = shapes_offset(n);
    const float *dshape[LADLE__RESIZE_TABLE_COUNT] = {NULL};
    int shape_num[LADLE__RESIZE_TABLE_COUNT] = {0};
    size_t off = shapes; /* uploaded tables from here; the planned ones after them */
    for (int t = LADLE__RESIZE_TABLE_TRI; t < LADLE__RESIZE_TABLE_COUNT; t++) {
      const float *src = ladle__resize_dali_table(t, &shape_num[t]);
      memcpy(hbase + off, src, (size_t)(shape_num[t] + 1) * sizeof(float));
      dshape[t] = (const float *)(dbase + off);
      off += ladle__align16((size_t)(shape_num[t] + 1) * sizeof(float));
    }
    off = shapes + SHAPE_FLOATS * sizeof(float);
    size_t planned = off;
    for (int i = 0; i < n; i++)
      if (!d[i].geom) planned += sample_table_bytes(&d[i]);
    for (int i = 0; i < n; i++) {
      const ladle__gpu_resize_desc *q = &d[i];
      const ladle__resize_dali_geom *g = q->geom;
      if (!q->in || !q->out || q->channels < 1 || q->channels > 4 || q->in_h < 1 || q->in_w < 1 ||
          q->in_stride < (int64_t)q->in_w * q->channels ||
          (g ? !valid_geom_axis(&g->x, q->in_w) || !valid_geom_axis(&g->y, q->in_h)
             : !valid_axis(q->ax, q->in_w) || !valid_axis(q->ay, q->in_h))) {
        st = ladle__set_error(LADLE_ERROR_INVALID_ARGUMENT, func,
                              "sample %d: bad image (%dx%d, %d channels, stride %lld) or filter tables not "
                              "planned for it",
                              i, q->in_w, q->in_h, q->channels, (long long)q->in_stride);
        goto done;
      }
      resample_sample *o = &hs[i];
      memset(o, 0, sizeof *o);
      o->in = q->in;
      o->out = q->out;
      o->in_stride = (long long)q->in_stride;
      o->channels = q->channels;
      o->rw = g ? g->x.out_size : q->ax->out_size;
      o->rh = g ? g->y.out_size : q->ay->out_size;
      o->xtaps = g ? ladle__resize_dali_max_taps(&g->x) : q->ax->taps; /* planned: rewritten on the GPU */
      o->ytaps = g ? ladle__resize_dali_max_taps(&g->y) : q->ay->taps;
      o->round_split = ladle__resize_round_split(g ? g->round_up : q->ay->round_up, o->rw * q->channels);
      if (cmn) {
        const ladle__cmn_params *p = &cmn[i];
        int dt = p->dtype;
        if (p->channels != q->channels || p->w < 1 || p->h < 1 || q->channels + pad > 4 ||
            ladle__dtype_bytes(dt) == 0 ||
            p->dtype != out_type || (p->chw ? 1 : 0) != chw || (p->pad_output ? 1 : 0) != pad) {
          st = ladle__set_error(LADLE_ERROR_INVALID_ARGUMENT, func,
                                "sample %d: bad crop_mirror_normalize parameters (channels %d for a %d-channel "
                                "image, window %dx%d, dtype %d, chw %d, pad %d; the batch has dtype %d, chw %d, "
                                "pad %d)",
                                i, p->channels, q->channels, p->w, p->h, (int)p->dtype, p->chw, p->pad_output,
                                (int)out_type, chw, pad);
          goto done;
        }
        o->x0 = p->x0;
        o->y0 = p->y0;
        o->w = p->w;
        o->h = p->h;
        o->mirror = p->mirror ? 1 : 0;
        for (int c = 0; c < q->channels; c++) {
          o->mean[c] = p->mean[c];
          o->mul[c] = p->inv_std[c] * p->scale; /* once, in float, as the CPU does */
          o->fill[c] = p->fill[c];
        }
        o->shift = p->shift;
      } else {
        o->w = o->rw;
        o->h = o->rh;
      }
      if (o->w > max_w) max_w = o->w;
      if (o->h > max_h) max_h = o->h;

      /* The tables: pointers into dev_params; host tables are copied after
       * the filter shapes, planned ones are written by plan_kernel. */
      const size_t nxs = (size_t)o->rw * sizeof(int32_t), nys = (size_t)o->rh * sizeof(int32_t);
      const size_t nxw = (size_t)o->rw * o->xtaps * sizeof(float), nyw = (size_t)o->rh * o->ytaps * sizeof(float);
      size_t *at = g ? &planned : &off;
      o->xs = (const int32_t *)(dbase + *at);
      o->ys = (const int32_t *)(dbase + *at + ladle__align16(nxs));
      o->xw = (const float *)(dbase + *at + ladle__align16(nxs) + ladle__align16(nys));
      o->yw = (const float *)(dbase + *at + ladle__align16(nxs) + ladle__align16(nys) + ladle__align16(nxw));
      if (g) {
        for (int axis = 0; axis < 2; axis++) {
          plan_job *j = &hj[njobs++];
          j->a = axis ? g->y : g->x;
          j->t = dshape[j->a.table];
          j->num = shape_num[j->a.table];
          j->start = (int32_t *)(axis ? o->ys : o->xs);
          j->w = (float *)(axis ? o->yw : o->xw);
          j->taps = axis ? &((resample_sample *)dev_params)[i].ytaps : &((resample_sample *)dev_params)[i].xtaps;
        }
      } else {
        memcpy(hbase + off, q->ax->start, nxs);
        memcpy(hbase + off + ladle__align16(nxs), q->ay->start, nys);
        memcpy(hbase + off + ladle__align16(nxs) + ladle__align16(nys), q->ax->weights, nxw);
        memcpy(hbase + off + ladle__align16(nxs) + ladle__align16(nys) + ladle__align16(nxw), q->ay->weights, nyw);
      }
      *at += ladle__align16(nxs) + ladle__align16(nys) + ladle__align16(nxw) + ladle__align16(nyw);
    }
    if ((max_h + TILE_H - 1) / TILE_H > 65535 || (max_w + TILE_W - 1) / TILE_W > 65535) {
      st = ladle__set_error(LADLE_ERROR_INVALID_ARGUMENT, func, "an output of %d rows is too tall", max_h);
      goto done;
    }
    /* Upload the samples and jobs, then the shapes (if planning) and the host tables. */
    const size_t head = jobs_offset(n) + (size_t)njobs * sizeof(plan_job);
    const size_t tail = njobs ? shapes : shapes + SHAPE_FLOATS * sizeof(float);
    LADLE_CUDA_CHECK(cudaMemcpyAsync(dev_params, host_params, head, cudaMemcpyHostToDevice, s));
    if (off > tail)
      LADLE_CUDA_CHECK(cudaMemcpyAsync(dbase + tail, hbase + tail, off - tail, cudaMemcpyHostToDevice, s));
    (void)cudaGetLastError(); /* a stale error from elsewhere must not be blamed on the launch */
    if (njobs) {
      plan_kernel<<<njobs, PLAN_THREADS, 0, s>>>(dj);
      LADLE_CUDA_CHECK_LAUNCH(plan_kernel);
    }
    dim3 block(TILE_W, TILE_H);
    if (cmn) {
      dim3 grid((unsigned)((max_w + TILE_W - 1) / TILE_W), (unsigned)((max_h + TILE_H - 1) / TILE_H), (unsigned)n);
      resample_kernel<<<grid, block, 0, s>>>((const resample_sample *)dev_params, 0, MODE_CMN, (int)out_type, chw,
                                             pad);
      LADLE_CUDA_CHECK_LAUNCH(resample_kernel);
    } else {
      dim3 grid((unsigned)((max_w + RZ_W - 1) / RZ_W), (unsigned)((max_h + RZ_H - 1) / RZ_H), (unsigned)n);
      int channels = d[0].channels;
      for (int i = 1; i < n; i++)
        if (d[i].channels != channels) channels = 0;
      resize_kernels[in_type == LADLE_FLOAT32][channels]<<<grid, block, 0, s>>>((const resample_sample *)dev_params);
      LADLE_CUDA_CHECK_LAUNCH(resize_kernel);
    }
  }
done:
  return st;
}

extern "C" ladle_status ladle__gpu_resize(const ladle__gpu_resize_desc *d, int n, ladle_dtype type,
                                          void *host_params, void *dev_params, size_t param_bytes, void *stream) {
  return ladle__gpu_resample(d, NULL, n, type, host_params, dev_params, param_bytes, stream, __func__);
}
