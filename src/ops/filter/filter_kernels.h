/* The filter family's CUDA launchers (filter_kernels.cu): grid_mask, erase
 * and the passes of gaussian_blur, each bit-identical to its CPU operator
 * (the same float operations in the same order, no FMA contraction). Rules
 * of ops/kernels/gpu_kernels.h: descriptors in host memory with device
 * pointers, parameters packed into host_params (pinned, 16-byte aligned) and
 * copied to dev_params on `stream`, both of *_param_bytes() bytes; nothing
 * synchronizes the host. Only built with LADLE_HAVE_CUDA. */
#ifndef LADLE_OPS_FILTER_KERNELS_H
#define LADLE_OPS_FILTER_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "ladle/ladle.h"
#include "ops/filter/conv_core.h"
#include "ops/filter/jpeg_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* grid_mask of one HWC image: ca = cosf(angle)/tile, sa = sinf(angle)/tile,
 * sx = shift_x/tile, sy = shift_y/tile (computed on the host as grid_mask.c
 * does). */
typedef struct ladle__gpu_grid_desc {
  const void *in;
  void *out;
  int64_t h, w, c;
  int elem_size;
  float ca, sa, sx, sy, ratio;
} ladle__gpu_grid_desc;

size_t ladle__gpu_grid_param_bytes(int n);
ladle_status ladle__gpu_grid_mask(const ladle__gpu_grid_desc *d, int n, void *host_params, void *dev_params,
                                  size_t param_bytes, void *stream);

/* erase: the input copied, elements inside any box [lo, hi) set to fill
 * (fill[channel index] when num_fill > 1, else fill[0]), already converted
 * to the element type and stored as its bytes in fill_bytes. */
#define LADLE__GPU_ERASE_MAX_BOXES 16
#define LADLE__GPU_ERASE_MAX_FILL 16
typedef struct ladle__gpu_erase_desc {
  const void *in;
  void *out;
  int ndim, elem_size, channel_axis, num_fill, num_boxes;
  int64_t shape[8];
  int64_t lo[LADLE__GPU_ERASE_MAX_BOXES][8], hi[LADLE__GPU_ERASE_MAX_BOXES][8];
  uint8_t fill_bytes[LADLE__GPU_ERASE_MAX_FILL][8];
} ladle__gpu_erase_desc;

size_t ladle__gpu_erase_param_bytes(int n);
ladle_status ladle__gpu_erase(const ladle__gpu_erase_desc *d, int n, void *host_params, void *dev_params,
                              size_t param_bytes, void *stream);

/* One pass of gaussian_blur over one axis of every sample: dst[o, i, j] =
 * sum over k of w[k] * src[o, reflect101(i + k - r), j] (float, k in order),
 * src of src_type (converted to float as ladle__convert does), dst stored as
 * dst_type (ladle__convert's rules). weights: offset into the table. */
typedef struct ladle__gpu_blur_pass {
  const void *src;
  void *dst;
  int64_t outer, len, inner;
  int src_type, dst_type;
  int weights, radius;
} ladle__gpu_blur_pass;

size_t ladle__gpu_blur_param_bytes(int num_passes, int num_weights);
/* passes[p * n + i]: pass p of sample i; the passes run in order p = 0.. */
ladle_status ladle__gpu_blur(const ladle__gpu_blur_pass *passes, int n, int num_passes, const float *weights,
                             int num_weights, void *host_params, void *dev_params, size_t param_bytes, void *stream);

/* normalize: statistics per group (the non-reduced elements). uint8 input
 * (exact = 1): norm_core.h's exact integer sums, added in any order. Other
 * types: in double, each a sum of chunk sums of LADLE__NORM_CHUNK members
 * (in memory order), a chunk summed as 32 strided lanes then combined by
 * halving (normalize.c sums in the same order). Then normalize.c's
 * formulas. part: groups * chunks doubles, stat_mean/stat_m2: groups each,
 * batch_mean/batch_m2 (batch=True: shared by all samples): groups each, all
 * device scratch. gmode: the sample seen as ga x gb elements (axes of extent
 * 1 dropped, neighbouring axes of one kind merged) where that view exists:
 * 0: reduced axes outside the others (group = element % gb, gb groups of ga
 * members), 1: inside (group = element / gb, ga groups of gb members);
 * -1: any other arrangement (shape and reduced are used). */
#define LADLE__NORM_CHUNK 1024
typedef struct ladle__gpu_norm_desc {
  const void *in;
  void *out;
  int in_type, out_type, ndim;
  int64_t shape[8];
  int reduced[8];
  int64_t groups, members, chunks;
  int exact, gmode;
  int64_t ga, gb;
  double *part, *stat_mean, *stat_m2, *batch_mean, *batch_m2;
  int given_mean, given_std;
  double mean, stddev, ddof, eps;
  float scale, shift;
} ladle__gpu_norm_desc;

size_t ladle__gpu_norm_param_bytes(int n);
ladle_status ladle__gpu_normalize(const ladle__gpu_norm_desc *d, int n, int batch, void *host_params,
                                  void *dev_params, size_t param_bytes, void *stream);

/* filter: conv_core.h's correlation of every sample; d[i].taps point to host
 * memory and are copied, `taps` floats in all, after the descriptors. */
size_t ladle__gpu_conv_param_bytes(int n, int taps);
ladle_status ladle__gpu_conv(const ladle__conv_desc *d, int n, int taps, void *host_params, void *dev_params,
                             size_t param_bytes, void *stream);

/* jpeg_compression_distortion (jpeg_distortion_kernels.cu): jpeg_core.h's
 * round trip of an h x w HWC RGB image (h or w 0: nothing), quantized with
 * tables[table]; planes: jd_plane_bytes(h, w) bytes of device scratch,
 * 8-byte aligned. */
typedef struct ladle__gpu_jd_desc {
  const uint8_t *in;
  uint8_t *out, *planes;
  int h, w, table;
} ladle__gpu_jd_desc;

size_t ladle__gpu_jd_param_bytes(int n, int num_tables);
ladle_status ladle__gpu_jpeg_distortion(const ladle__gpu_jd_desc *d, int n, const ladle__jd_tables *tables,
                                        int num_tables, void *host_params, void *dev_params, size_t param_bytes,
                                        void *stream);

#ifdef __cplusplus
}
#endif

#endif
