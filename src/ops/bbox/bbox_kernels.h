/* The bounding-box family's arithmetic, CPU references (bbox_kernels.c) and
 * their CUDA twins (bbox_kernels.cu): per-row point maps (bb_flip,
 * coord_flip, coord_transform) and the SSD box encoder (box_encoder). */
#ifndef LADLE_OPS_BBOX_BBOX_KERNELS_H
#define LADLE_OPS_BBOX_BBOX_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "ladle/ladle.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Largest point dimension of coord_transform (DALI's limit too). */
#define LADLE__POINT_MAX_DIM 6

/* How a row of `in_dim` elements becomes a row of `out_dim` elements. */
typedef enum ladle__points_mode {
  /* coord_transform: out[r] = (((m[r][0] x[0] + m[r][1] x[1]) + ...) + t[r]),
   * every operation a rounded float operation in this order (no FMA); the
   * input converted to float first, the result converted to out_type
   * (float32, or an integer type: rounded half away from zero, saturated,
   * NaN -> 0). */
  LADLE__POINTS_AFFINE = 0,
  /* coord_flip (in_dim = out_dim <= 3, float32): out[k] = flip[k] ? 2 c[k] - x[k] : x[k]
   * (2 c[k] precomputed in t[k]). */
  LADLE__POINTS_FLIP = 1,
  /* bb_flip (4 floats): in ltrb (ltrb = 1) or xywh boxes, flip[0] mirrors
   * x about 0.5 (l' = 1 - r, r' = 1 - l), flip[1] y; xywh boxes go through
   * ltrb (r = x + w) and back (w' = r' - l'), as DALI computes them. */
  LADLE__POINTS_BB_FLIP = 2
} ladle__points_mode;

typedef struct ladle__points_params {
  int mode; /* ladle__points_mode */
  int in_dim, out_dim;
  int ltrb;
  int flip[LADLE__POINT_MAX_DIM];
  float m[LADLE__POINT_MAX_DIM][LADLE__POINT_MAX_DIM];
  float t[LADLE__POINT_MAX_DIM];
} ladle__points_params;

/* Maps `rows` rows of `in` (in_type: float32 for FLIP and BB_FLIP; uint8,
 * int16, uint16, int32 or float32 for AFFINE) to `out` (out_type). */
void ladle__points_apply(void *out, ladle_dtype out_type, const void *in, ladle_dtype in_type, int64_t rows,
                         const ladle__points_params *p);

/* The SSD encoder's settings (box_encoder). */
typedef struct ladle__box_encoder_params {
  float criteria;
  int offset;
  float scale;
  float means[4], stds[4];
} ladle__box_encoder_params;

/*
 * Encodes one sample: `boxes` (nboxes ltrb boxes, right >= left, finite) with
 * `labels` against `anchors` (nanchors ltrb boxes) into out_boxes (nanchors x
 * 4: centre x, centre y, width, height) and out_labels (nanchors), as DALI's
 * CPU BoxEncoder: every box claims its best anchor (the last of equal IoUs);
 * every anchor takes its best box (the last of equal IoUs, a claim counting as
 * IoU 2) when that IoU > criteria; others keep the anchor (offset: zeros) and
 * label 0. offset: ((c_box - c_anchor) / wh_anchor - mean) / std and
 * (log(wh_box / wh_anchor) - mean) / std on values multiplied by scale.
 * `best_anchor` is scratch of nboxes ints.
 */
void ladle__box_encode(float *out_boxes, int32_t *out_labels, const float *boxes, const int32_t *labels,
                       int64_t nboxes, const float *anchors, int64_t nanchors, const ladle__box_encoder_params *p,
                       int *best_anchor);

#ifdef LADLE_HAVE_CUDA
/* One sample of a point map on the GPU (device pointers). */
typedef struct ladle__gpu_points_desc {
  const void *in;
  void *out;
  int64_t rows;
  ladle__points_params p;
} ladle__gpu_points_desc;

size_t ladle__gpu_points_param_bytes(int n);

/* ladle__points_apply on every sample, one launch: bit-identical to the CPU
 * (the same float operations in the same order, no contraction; the test
 * asserts equality). Common rules of ops/kernels/gpu_kernels.h. */
ladle_status ladle__gpu_points(const ladle__gpu_points_desc *d, int n, ladle_dtype out_type, ladle_dtype in_type,
                               void *host_params, void *dev_params, size_t param_bytes, void *stream);

typedef struct ladle__gpu_box_encoder_desc {
  const float *boxes;
  const int32_t *labels;
  float *out_boxes;
  int32_t *out_labels;
  int *best_anchor; /* device scratch of nboxes ints */
  int64_t nboxes;
} ladle__gpu_box_encoder_desc;

/* Parameter bytes for n samples and nanchors anchors (they travel in the
 * same buffer). */
size_t ladle__gpu_box_encoder_param_bytes(int n, int64_t nanchors);

/* ladle__box_encode on every sample, one block per sample: labels and the
 * matching bit-identical to the CPU (the same float IoU operations);
 * coordinates identical too except the log of offset mode, where the device
 * logf may differ from the host's by 1 ulp. */
ladle_status ladle__gpu_box_encoder(const ladle__gpu_box_encoder_desc *d, int n, const float *anchors,
                                    int64_t nanchors, const ladle__box_encoder_params *p, void *host_params,
                                    void *dev_params, size_t param_bytes, void *stream);
#endif

#ifdef __cplusplus
}
#endif

#endif
