/* Affine warps of HWC images (warp_affine, rotate) and paste: the per-pixel
 * sampling rule, shared word for word by the CPU kernel and the CUDA kernel
 * (so that they agree bit for bit), and the GPU entry points. */
#ifndef LADLE_OPS_GEOMETRY_WARP_KERNEL_H
#define LADLE_OPS_GEOMETRY_WARP_KERNEL_H

#include <stddef.h>
#include <stdint.h>

#include "ladle/ladle.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * One image's warp. Output pixel (x, y) reads the input around
 *     sx = (m[0] * (x + 0.5) + m[1] * (y + 0.5)) + m[2]
 *     sy = (m[3] * (x + 0.5) + m[4] * (y + 0.5)) + m[5]
 * (a destination-to-source map; (0, 0) is the corner of the first pixel,
 * pixel centres are at +0.5), in float, each product and sum rounded once
 * (no fused multiply-add), as DALI's warp kernels do.
 *   NN:     the pixel (floor(sx), floor(sy)).
 *   LINEAR: x = sx - 0.5, x0 = floor(x), qx = x - x0, px = 1 - qx (y alike);
 *           s0 = s00 * px + s01 * qx, s1 = s10 * px + s11 * qx,
 *           v = s0 + (s1 - s0) * qy   (DALI's bilinear sampler).
 * A tap outside the input is the nearest border pixel (use_fill 0) or
 * fill_in (use_fill 1); an NN pixel outside takes fill_out. The value is
 * then converted to the output type: the integer types round half away from
 * zero and saturate (DALI's ConvertSat on the CPU); float32 is kept as is.
 * NN between equal types copies the element (bit-exact for int32 labels
 * beyond float's 24 bits).
 */
enum { LADLE__WARP_U8 = 0, LADLE__WARP_F32 = 1, LADLE__WARP_I32 = 2, LADLE__WARP_I16 = 3 };
typedef struct ladle__warp_params {
  float m[6];
  int in_h, in_w, out_h, out_w, channels;
  int in_type, out_type; /* element types: LADLE__WARP_* */
  int linear;          /* 0 NN, 1 LINEAR */
  int use_fill;
  float fill_out;      /* fill_value converted to the output type */
  float fill_in;       /* and from there to the input type (what a LINEAR tap outside reads) */
} ladle__warp_params;

/* The fill values of ladle__warp_params for fill_value `fill`: converted to
 * the output type, then (DALI's order) to the input type, each conversion
 * to uint8 rounding half away from zero and saturating. */
void ladle__warp_fill(ladle__warp_params *p, double fill);

/* Warps one image: out is out_h x out_w x channels, in in_h x in_w x channels,
 * both packed. Thread-safe, allocates nothing. */
void ladle__warp_affine(void *out, const void *in, const ladle__warp_params *p);

/* Inverts the 2x3 affine map m (in double); fails when it is singular. */
int ladle__affine_invert(float out[6], const double m[6]);

/* paste: the canvas out_h x out_w x channels (uint8) holds the image at
 * (x0, y0) and fill[c] elsewhere. */
typedef struct ladle__paste_params {
  int in_h, in_w, out_h, out_w, channels, x0, y0;
  uint8_t fill[4];
} ladle__paste_params;

void ladle__paste(uint8_t *out, const uint8_t *in, const ladle__paste_params *p);

#ifdef LADLE_HAVE_CUDA
/* The same on the GPU: one launch per batch; `host_params`/`dev_params` are
 * the launch's parameter buffers (16-byte aligned) of at least
 * ladle__gpu_warp_param_bytes(n) / ladle__gpu_paste_param_bytes(n) bytes.
 * Bit-identical to the CPU kernels. */
typedef struct ladle__gpu_warp_desc {
  const void *in;
  void *out;
  ladle__warp_params p;
} ladle__gpu_warp_desc;

size_t ladle__gpu_warp_param_bytes(int n);
ladle_status ladle__gpu_warp_affine(const ladle__gpu_warp_desc *d, int n, void *host_params, void *dev_params,
                                    size_t param_bytes, void *stream);

typedef struct ladle__gpu_paste_desc {
  const uint8_t *in;
  uint8_t *out;
  ladle__paste_params p;
} ladle__gpu_paste_desc;

size_t ladle__gpu_paste_param_bytes(int n);
ladle_status ladle__gpu_paste(const ladle__gpu_paste_desc *d, int n, void *host_params, void *dev_params,
                              size_t param_bytes, void *stream);
#endif

#ifdef __cplusplus
}
#endif

#endif
