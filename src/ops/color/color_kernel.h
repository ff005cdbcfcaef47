/* The colour family's kernels, CPU references (color_kernel.c) and their CUDA
 * twins (color_kernel.cu): a per-pixel affine colour transform (brightness,
 * contrast, hsv, hue, saturation, color_twist, color_space_conversion) and
 * jitter's random pixel displacement. */
#ifndef LADLE_OPS_COLOR_COLOR_KERNEL_H
#define LADLE_OPS_COLOR_COLOR_KERNEL_H

#include <stddef.h>
#include <stdint.h>

#include "ladle/ladle.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How a colour transform maps one pixel. */
typedef enum ladle__color_mode {
  /* Every one of `in_c` (= out_c, any number) channels: v = x * mul + add. */
  LADLE__COLOR_SCALE = 0,
  /* out_c (1..3) outputs from in_c (1..3) inputs:
   *   v[o] = ((m[o][0] * x[0] + m[o][1] * x[1]) + m[o][2] * x[2]) + off[o]
   * (terms k >= in_c left out), each operation a rounded float operation in
   * this order, no fused multiply-add. */
  LADLE__COLOR_MATRIX = 1
} ladle__color_mode;

typedef struct ladle__color_params {
  int mode;       /* ladle__color_mode */
  int in_c, out_c;
  float mul, add; /* SCALE */
  float m[3][3];  /* MATRIX */
  float off[3];
  int rev_in, rev_out; /* MATRIX: x[k] is input channel in_c-1-k (BGR in); v[o] goes to channel out_c-1-o */
} ladle__color_params;

/*
 * Applies `p` to `pixels` packed pixels of `in` (uint8 or float32 elements,
 * p->in_c per pixel), writing p->out_c elements per pixel of `out_type`:
 *   FLOAT32  v;  FLOAT16  ladle__f32_to_f16(v);
 *   UINT8, INT32: rounded half away from zero (DALI's ConvertSat), then
 *   saturated to the type's range; NaN -> 0.
 */
void ladle__color_apply(void *out, ladle_dtype out_type, const void *in, ladle_dtype in_type, size_t pixels,
                        const ladle__color_params *p);

/*
 * jitter on one HWC image of h x w pixels of `pixel_bytes` bytes each: output
 * pixel (x, y) is input pixel (x + dx, y + dy), with
 *   (u0, u1) = the first two words of philox(ctr = {y * w + x, 0, 0, 0}, key),
 *   dx = (u0 * n_degree) >> 32 - n_degree / 2,  dy likewise from u1
 * (so each offset lies in [-n_degree/2, n_degree - 1 - n_degree/2], DALI's
 * range), or `fill` (pixel_bytes bytes) where that lies outside the image.
 * `key` comes from the sample's random stream, so the GPU draws the same.
 * n_degree >= 1; mask 0: a copy.
 */
void ladle__jitter(uint8_t *out, const uint8_t *in, int h, int w, int pixel_bytes, int n_degree, const uint32_t key[2],
                   const uint8_t *fill, int mask);

#ifdef LADLE_HAVE_CUDA
/* One sample of a colour transform on the GPU (device pointers). */
typedef struct ladle__gpu_color_desc {
  const void *in;
  void *out;
  size_t pixels;
  ladle__color_params p; /* per sample */
} ladle__gpu_color_desc;

size_t ladle__gpu_color_param_bytes(int n);

/* ladle__color_apply on every sample, one launch: bit-identical to the CPU
 * (the same float operations in the same order, no contraction; the test
 * asserts equality). Common rules of ops/kernels/gpu_kernels.h. */
ladle_status ladle__gpu_color(const ladle__gpu_color_desc *d, int n, ladle_dtype out_type, ladle_dtype in_type,
                              void *host_params, void *dev_params, size_t param_bytes, void *stream);

typedef struct ladle__gpu_jitter_desc {
  const uint8_t *in;
  uint8_t *out;
  int h, w, pixel_bytes; /* pixel_bytes <= 64 */
  int n_degree, mask;
  uint32_t key[2];
  uint8_t fill[64];
} ladle__gpu_jitter_desc;

size_t ladle__gpu_jitter_param_bytes(int n);

/* ladle__jitter on every sample, one launch: exact (a copy of bytes). */
ladle_status ladle__gpu_jitter(const ladle__gpu_jitter_desc *d, int n, void *host_params, void *dev_params,
                               size_t param_bytes, void *stream);
#endif

#ifdef __cplusplus
}
#endif

#endif
