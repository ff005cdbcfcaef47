/* The CUDA image kernels (resize.cu, normalize.cu, fused.cu): one launch per
 * batch, per-sample parameters uploaded in one copy. Each kernel reproduces its
 * CPU reference (resize.h, normalize.h) bit for bit. Declarations usable from C;
 * only built with LADLE_HAVE_CUDA.
 *
 * Common rules for every ladle__gpu_* launcher below:
 *  - Arrays of per-sample descriptors live in host memory; pointers inside them
 *    (in, out) are device pointers of the current device. `n` >= 1 samples,
 *    n <= 65535.
 *  - Parameter memory: the launcher packs the per-sample parameters (and, for
 *    resizes, the filter tables) into `host_params` (pinned host memory from the
 *    caller, 16-byte aligned), copies them with one cudaMemcpyAsync to
 *    `dev_params` (device memory from the caller) on `stream`, then launches on
 *    `stream`. Both buffers have at least the size the matching
 *    *_param_bytes() function returns. host_params must not be written again
 *    until that copy has run (record an event after the launch and wait for it
 *    before reusing the buffer, or keep one buffer per iteration in flight);
 *    dev_params must stay allocated until the kernel has run.
 *  - `stream` is a cudaStream_t (NULL: the legacy default stream), see
 *    cuda/runtime.h. Nothing here synchronizes the host.
 *  - Errors: LADLE_ERROR_INVALID_ARGUMENT (naming the sample index) for bad
 *    descriptors, LADLE_ERROR_CUDA for CUDA failures (a sticky one is latched:
 *    cuda/runtime.h). Outputs are not touched on an argument error.
 *  - Not thread-safe per buffer: concurrent calls need distinct param buffers.
 */
#ifndef LADLE_OPS_KERNELS_GPU_KERNELS_H
#define LADLE_OPS_KERNELS_GPU_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "ladle/ladle.h"

#ifdef __cplusplus
extern "C" {
#endif

#include "ops/geometry/normalize_kernel.h"
#include "ops/geometry/resize_kernel.h"

/* Largest batch per launch (the grid's z or y dimension). */
#define LADLE__GPU_MAX_SAMPLES 65535

/* ------------------------------------------------------------------------ */
/* Resize (resize.cu)                                                         */
/* ------------------------------------------------------------------------ */

/* One image to resize: an HWC image of `channels` (1..4) channels, rows
 * in_stride elements apart (>= in_w * channels), into `out`: ay->out_size rows
 * of ax->out_size * channels elements, packed. ax and ay are host tables planned
 * with ladle__resize_axis_plan for in_w and in_h (their in_size must match). */
typedef struct ladle__gpu_resize_desc {
  const void *in;
  void *out;
  int in_h, in_w;
  int64_t in_stride;
  int channels;
  const ladle__resize_axis *ax, *ay;
} ladle__gpu_resize_desc;

/* Bytes of host_params / dev_params for ladle__gpu_resize and ladle__gpu_fused
 * on these samples (their parameters plus every filter table). */
size_t ladle__gpu_resize_param_bytes(const ladle__gpu_resize_desc *d, int n);

/*
 * ladle__resize_u8 (type LADLE_UINT8) or ladle__resize_f32 (LADLE_FLOAT32) on
 * every sample: the same tables, the same float operations in the same order,
 * so the output is bit-identical to the CPU reference's (the test asserts
 * exact equality for both types).
 *
 * How: one kernel; a block computes a 32 x 8 tile of one sample's output. It
 * runs the horizontal pass for the input rows the tile needs (32 rows at a
 * time) into shared memory, then each thread adds those rows' contributions to
 * its pixel's vertical sum, in tap order. No device scratch is needed.
 * Cost note: every input row between the tile's first and last filter tap is
 * filtered horizontally, also rows no output reads (NN or non-antialiased
 * downscales by large factors skip rows): correct, but slower there.
 */
ladle_status ladle__gpu_resize(const ladle__gpu_resize_desc *d, int n, ladle_dtype type, void *host_params,
                               void *dev_params, size_t param_bytes, void *stream);

/* ------------------------------------------------------------------------ */
/* Fused decode-side transform (fused.cu)                                     */
/* ------------------------------------------------------------------------ */

/*
 * crop + resize + mirror + normalize + cast + layout in one kernel, for uint8
 * HWC images (decoded, any size per sample). Sample i equals, bit for bit,
 *     ladle__resize_u8(R, in, ..., ax, ay)            (R: ay->out_size x ax->out_size)
 *     ladle__crop_mirror_normalize(out, R, ay->out_size, ax->out_size,
 *                                  ax->out_size * channels, &cmn[i])
 * i.e. the resize result is rounded to uint8 (ladle__f32_to_u8) before it is
 * normalized, exactly as the unfused operators do; the test asserts exact
 * equality with that composition for every output type.
 *
 * The crop of a random-resized-crop is the tables' source window (plan ax/ay
 * with src_lo/src_len = the window, in the decoded image's pixels); cmn[i]'s
 * own window (x0, y0, w, h) then selects from R, and is usually (0, 0,
 * ax->out_size, ay->out_size), or a centre crop for validation pipelines
 * ("resize shorter side, then crop"). Out-of-range pixels take cmn.fill.
 *
 * d[i].in must be uint8. cmn[i].channels must equal d[i].channels; dtype, chw
 * and pad_output must be the same for all samples (one output batch). The
 * parameter buffers are sized by ladle__gpu_resize_param_bytes(d, n).
 */
ladle_status ladle__gpu_fused(const ladle__gpu_resize_desc *d, const ladle__cmn_params *cmn, int n,
                              void *host_params, void *dev_params, size_t param_bytes, void *stream);

/* The shared launcher behind ladle__gpu_resize (cmn == NULL) and ladle__gpu_fused
 * (in_type LADLE_UINT8); `func` names the caller in messages. Internal to the
 * .cu files. */
ladle_status ladle__gpu_resample(const ladle__gpu_resize_desc *d, const ladle__cmn_params *cmn, int n,
                                 ladle_dtype in_type, void *host_params, void *dev_params, size_t param_bytes,
                                 void *stream, const char *func);

/* ------------------------------------------------------------------------ */
/* crop_mirror_normalize, crop/flip, convert (normalize.cu)                   */
/* ------------------------------------------------------------------------ */

/* ladle__crop_mirror_normalize(out, in, in_h, in_w, in_stride, &p) on the GPU. */
typedef struct ladle__gpu_cmn_desc {
  const uint8_t *in;
  void *out;
  int in_h, in_w;
  int64_t in_stride; /* bytes */
  ladle__cmn_params p; /* dtype, chw, pad_output the same for all samples */
} ladle__gpu_cmn_desc;

size_t ladle__gpu_cmn_param_bytes(int n);

/* Bit-identical to the CPU reference for every dtype (the test asserts exact
 * equality; float16 through ladle__f32_to_f16 on the device). */
ladle_status ladle__gpu_crop_mirror_normalize(const ladle__gpu_cmn_desc *d, int n, void *host_params,
                                              void *dev_params, size_t param_bytes, void *stream);

/* ladle__crop_flip_hwc(out, in, in_h, in_w, channels, elem_size, x0, y0, w, h,
 * flip_x, flip_y, fill) on the GPU (a byte copy: exact). channels * elem_size
 * <= 64. */
typedef struct ladle__gpu_crop_flip_desc {
  const void *in;
  void *out;
  int in_h, in_w, channels;
  size_t elem_size;
  int x0, y0, w, h;
  int flip_x, flip_y;
  uint8_t fill;
} ladle__gpu_crop_flip_desc;

size_t ladle__gpu_crop_flip_param_bytes(int n);

ladle_status ladle__gpu_crop_flip(const ladle__gpu_crop_flip_desc *d, int n, void *host_params, void *dev_params,
                                  size_t param_bytes, void *stream);

/* ladle__convert(out, out_type, in, in_type, count) on the GPU, per sample.
 * Bit-identical to the CPU rules for every pair of the five types. */
typedef struct ladle__gpu_convert_desc {
  const void *in;
  void *out;
  size_t count; /* elements */
} ladle__gpu_convert_desc;

size_t ladle__gpu_convert_param_bytes(int n);

ladle_status ladle__gpu_convert(const ladle__gpu_convert_desc *d, int n, ladle_dtype out_type, ladle_dtype in_type,
                                void *host_params, void *dev_params, size_t param_bytes, void *stream);

#ifdef __cplusplus
}
#endif

/* ------------------------------------------------------------------------ */
/* Device helpers shared by the .cu files                                     */
/* ------------------------------------------------------------------------ */
#if defined(__CUDACC__)

#include "ops/kernels/half.h"

extern "C" {
#include "core/error.h"
}

/* Bytes rounded up to a multiple of 16 (parameter blocks). */
static inline size_t ladle__align16(size_t n) { return (n + 15) & ~(size_t)15; }

/* The common launcher checks (the rules at the top of this file): a batch
 * of 1..LADLE__GPU_MAX_SAMPLES descriptors, parameter buffers 16-byte
 * aligned and of at least `need` bytes. Sets the message for `func`. */
static inline ladle_status ladle__gpu_check_params(int n, const void *d, void *host, void *dev, size_t bytes,
                                                   size_t need, const char *func) {
  if (!(n >= 1 && n <= LADLE__GPU_MAX_SAMPLES && d && host && dev))
    return ladle__set_error(LADLE_ERROR_INVALID_ARGUMENT, func, "bad batch (n = %d, or a NULL buffer)", n);
  if (((uintptr_t)host & 15) || ((uintptr_t)dev & 15) || bytes < need)
    return ladle__set_error(LADLE_ERROR_INVALID_ARGUMENT, func,
                            "parameter buffers must be 16-byte aligned and hold %zu bytes (got %zu)", need, bytes);
  return LADLE_OK;
}

/* Round to nearest, ties to even (normalize.c's round_even). */
static __device__ __forceinline__ float ladle__gpu_round_even(float x) {
  float a = fabsf(x);
  if (!(a < 8388608.0f)) return x; /* large, inf or NaN */
  return copysignf(__fsub_rn(__fadd_rn(a, 8388608.0f), 8388608.0f), x);
}

static __device__ __forceinline__ int32_t ladle__gpu_f32_to_i32(float x) {
  float r = ladle__gpu_round_even(x);
  if (r != r) return 0;
  if (r >= 2147483648.0f) return INT32_MAX;
  if (r < -2147483648.0f) return INT32_MIN;
  return (int32_t)r;
}

static __device__ __forceinline__ int64_t ladle__gpu_f32_to_i64(float x) {
  float r = ladle__gpu_round_even(x);
  if (r != r) return 0;
  if (r >= 9223372036854775808.0f) return INT64_MAX;
  if (r < -9223372036854775808.0f) return INT64_MIN;
  return (int64_t)r;
}

/* Stores v as element i of an array of `dtype` (normalize.c's store_f32). */
static __device__ __forceinline__ void ladle__gpu_store(void *out, size_t i, int dtype, float v) {
  switch (dtype) {
    case LADLE_UINT8: ((uint8_t *)out)[i] = ladle__f32_to_u8(v); break;
    case LADLE_FLOAT16: ((uint16_t *)out)[i] = ladle__f32_to_f16(v); break;
    case LADLE_INT32: ((int32_t *)out)[i] = ladle__gpu_f32_to_i32(v); break;
    case LADLE_INT64: ((int64_t *)out)[i] = ladle__gpu_f32_to_i64(v); break;
    default: ((float *)out)[i] = v; break;
  }
}

/* crop_mirror_normalize's value: ((float)u - mean) * mul + shift, three
 * rounded operations (no contraction into an FMA). */
static __device__ __forceinline__ float ladle__gpu_normalize(uint8_t u, float mean, float mul, float shift) {
  return __fadd_rn(__fmul_rn(__fsub_rn((float)u, mean), mul), shift);
}

/* Writes output pixel (x, y) of a crop_mirror_normalize result of w x h
 * pixels (CHW or HWC): channel c < C is value[c] normalized when `inside`,
 * fill[c] when not (value is then not read); a padding channel is 0. */
static __device__ __forceinline__ void ladle__gpu_cmn_write(void *out, int out_type, int chw, int pad, int C, int w,
                                                             int h, int x, int y, bool inside, const uint8_t *value,
                                                             const float *mean, const float *mul, float shift,
                                                             const float *fill) {
  const int oc = C + pad;
  const size_t base = chw ? (size_t)y * w + x : ((size_t)y * w + x) * oc;
  const size_t cstep = chw ? (size_t)w * h : 1;
#pragma unroll
  for (int c = 0; c < 4; c++) {
    if (c >= oc) break;
    float v;
    if (c >= C)
      v = 0.0f;
    else if (!inside)
      v = fill[c];
    else
      v = ladle__gpu_normalize(value[c], mean[c], mul[c], shift);
    ladle__gpu_store(out, base + (size_t)c * cstep, out_type, v);
  }
}

#endif /* __CUDACC__ */

#endif
