/* What every CUDA kernel of ladle shares: the rules its launchers follow and
 * the device helpers of the .cu files. The launchers are declared in their
 * families' headers, beside their CPU references (e.g.
 * ops/geometry/resize_kernel.h, ops/geometry/normalize_kernel.h); each
 * reproduces its CPU reference (bit for bit unless its header says otherwise).
 * Only built with LADLE_HAVE_CUDA.
 *
 * Common rules for every ladle__gpu_* launcher:
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

/* Largest batch per launch (the grid's z or y dimension). */
#define LADLE__GPU_MAX_SAMPLES 65535

#ifdef __cplusplus
}
#endif

/* ------------------------------------------------------------------------ */
/* Device helpers shared by the .cu files                                     */
/* ------------------------------------------------------------------------ */
#if defined(__CUDACC__)

#include "ops/kernels/dtype.h"
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

/* Stores v as element i of an array of `dtype` (ops/kernels/dtype.h's rules). */
static __device__ __forceinline__ void ladle__gpu_store(void *out, size_t i, int dtype, float v) {
  ladle__store_f32(out, i, dtype, v);
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
    ladle__store_f32(out, base + (size_t)c * cstep, out_type, v);
  }
}

/* A grid-stride copy (blocks of gridDim.x) of `bytes` bytes: units of U,
 * then the last bytes one each; both pointers aligned to U. */
template <typename U>
static __device__ __forceinline__ void ladle__gpu_copy_units(uint8_t *out, const uint8_t *in, size_t bytes) {
  const size_t units = bytes / sizeof(U), n = units + bytes % sizeof(U);
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    if (i < units) {
      ((U *)out)[i] = ((const U *)in)[i];
    } else {
      const size_t b = units * sizeof(U) + (i - units);
      out[b] = in[b];
    }
  }
}

/* memcpy on the device by the grid's x blocks: 16-byte units where both
 * pointers allow, else 4-byte, else bytes; nothing when out == in. */
static __device__ __forceinline__ void ladle__gpu_copy_bytes(void *out, const void *in, size_t bytes) {
  const uintptr_t align = (uintptr_t)in | (uintptr_t)out;
  if (out == in) return;
  if (align % 16 == 0)
    ladle__gpu_copy_units<uint4>((uint8_t *)out, (const uint8_t *)in, bytes);
  else if (align % 4 == 0)
    ladle__gpu_copy_units<uint32_t>((uint8_t *)out, (const uint8_t *)in, bytes);
  else
    ladle__gpu_copy_units<uint8_t>((uint8_t *)out, (const uint8_t *)in, bytes);
}

#endif /* __CUDACC__ */

#endif
