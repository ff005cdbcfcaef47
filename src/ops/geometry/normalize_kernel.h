/* CPU reference kernels for crop, flip, crop_mirror_normalize (crop + mirror +
 * normalize + cast + layout in one pass) and elementwise type conversion. */
#ifndef LADLE_OPS_KERNELS_NORMALIZE_H
#define LADLE_OPS_KERNELS_NORMALIZE_H

#include <stddef.h>
#include <stdint.h>

#include "ladle/ladle.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * DALI's crop_mirror_normalize on one HWC uint8 image.
 *
 * Output: h x w pixels of C = channels + pad_output channels, element type
 * `dtype` (any), laid out CHW (planes of h*w) or HWC (packed), densely.
 *
 * Output pixel (x, y) comes from input pixel
 *     sx = mirror ? x0 + w - 1 - x : x0 + x,     sy = y0 + y
 * i.e. mirroring flips the window about its own centre. When (sx, sy) lies
 * outside the input, channel c is fill[c] as it is, in output units (DALI's
 * fill_values: not normalized), converted to dtype like any other value.
 * Otherwise, with mul[c] = inv_std[c] * scale computed once in float:
 *     v = ((float)in - mean[c]) * mul[c] + shift
 * (three rounded float operations in this order, no fused multiply-add),
 * then stored as:
 *     FLOAT32  v
 *     FLOAT16  ladle__f32_to_f16(v): round to nearest even, inf on overflow
 *     UINT8    ladle__f32_to_u8(v): saturate to 0..255 (NaN -> 0), round to
 *              nearest even
 *     others   as ladle__convert (ops/kernels/dtype.h's ladle__store_f32):
 *              integers round to nearest even and saturate (NaN -> 0), bool
 *              is v != 0, float64 is v exactly.
 * The padding channel (pad_output) is 0 everywhere.
 *
 * Since the input is uint8, the kernel precomputes the 256 possible outputs
 * per channel with exactly that formula and copies from the table: the result
 * is bit-identical to evaluating the formula per pixel.
 *
 * Preconditions (not checked here; the operator validates): 1 <= channels <= 4,
 * channels + pad_output <= 4, w >= 1, h >= 1, dtype a valid ladle_dtype,
 * in_stride >= in_w * channels.
 */
typedef struct ladle__cmn_params {
  int x0, y0, w, h;
  int mirror;
  int channels; /* input channels */
  float mean[4], inv_std[4];
  float scale, shift;
  float fill[4];
  ladle_dtype dtype;
  int chw;        /* 1: CHW, 0: HWC */
  int pad_output; /* 1: one more output channel, always 0 */
} ladle__cmn_params;

void ladle__crop_mirror_normalize(void *out, const uint8_t *in, int in_h, int in_w, int in_stride,
                                  const ladle__cmn_params *p);

/*
 * Copies the window (x0, y0, w, h) of a packed HWC image (in_h x in_w pixels
 * of `channels` elements of elem_size bytes) into `out` (h x w pixels,
 * packed), flipping it horizontally (flip_x) and/or vertically (flip_y)
 * within the window: output (x, y) takes input
 *     (flip_x ? x0 + w - 1 - x : x0 + x,  flip_y ? y0 + h - 1 - y : y0 + y).
 * Every byte of an output pixel whose source is outside the input is `fill`.
 */
void ladle__crop_flip_hwc(void *out, const void *in, int in_h, int in_w, int channels,
                          size_t elem_size, int x0, int y0, int w, int h, int flip_x, int flip_y,
                          uint8_t fill);

/*
 * Converts n elements between any two dtypes (same type: a copy), with the
 * rules of ops/kernels/dtype.h (the per-element loads and stores, shared with
 * the CUDA twin ladle__gpu_convert):
 *   float -> integer: round to nearest, ties to even, then saturate to the
 *                     type's range; NaN -> 0.
 *   integer -> integer: saturate.        any -> bool: x != 0.
 *   -> float32/float64: nearest float (ties to even); float64 values exact
 *                     where the target can hold them.
 *   -> float16: nearest half (rounded once), +-inf beyond +-65504 (rounding
 *                     boundary 65520).
 * out and in must not overlap (unless equal with equal types).
 */
void ladle__convert(void *out, ladle_dtype out_type, const void *in, ladle_dtype in_type, size_t n);

#ifdef LADLE_HAVE_CUDA
/* ------------------------------------------------------------------------ */
/* On the GPU (normalize_kernel.cu; ops/kernels/gpu_kernels.h has the rules  */
/* every launcher follows)                                                     */
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
 * Bit-identical to the CPU rules for every pair of dtypes (both use
 * ops/kernels/dtype.h). */
typedef struct ladle__gpu_convert_desc {
  const void *in;
  void *out;
  size_t count; /* elements */
} ladle__gpu_convert_desc;

size_t ladle__gpu_convert_param_bytes(int n);

ladle_status ladle__gpu_convert(const ladle__gpu_convert_desc *d, int n, ladle_dtype out_type, ladle_dtype in_type,
                                void *host_params, void *dev_params, size_t param_bytes, void *stream);
#endif

#ifdef __cplusplus
}
#endif

#endif
