/* CPU references of the bbox kernels (bbox_kernels.h); bbox_kernels.cu runs
 * the same per-row functions (bbox_math.h) on the GPU. No contraction into
 * FMA, whatever the compiler flags, so that both round alike. */
#include "core/no_fma.h"

#include "ops/bbox/bbox_math.h"

void ladle__points_apply(void *out, ladle_dtype out_type, const void *in, ladle_dtype in_type, int64_t rows,
                         const ladle__points_params *p) {
  for (int64_t r = 0; r < rows; r++) ladle__points_row(out, out_type, in, in_type, r, p);
}

void ladle__box_encode(float *out_boxes, int32_t *out_labels, const float *boxes, const int32_t *labels,
                       int64_t nboxes, const float *anchors, int64_t nanchors, const ladle__box_encoder_params *p,
                       int *best_anchor) {
  /* Every box claims the anchor of its highest IoU (the last of equals). */
  for (int64_t b = 0; b < nboxes; b++) {
    float best = ladle__box_iou(boxes + 4 * b, anchors);
    int idx = 0;
    for (int64_t j = 1; j < nanchors; j++) {
      float v = ladle__box_iou(boxes + 4 * b, anchors + 4 * j);
      if (v >= best) best = v, idx = (int)j;
    }
    best_anchor[b] = idx;
  }
  for (int64_t j = 0; j < nanchors; j++) {
    int64_t m = ladle__box_match(boxes, nboxes, anchors + 4 * j, j, best_anchor, p->criteria);
    if (m < 0) {
      ladle__box_encode_anchor(out_boxes + 4 * j, anchors + 4 * j, p);
      out_labels[j] = 0;
    } else {
      ladle__box_encode_one(out_boxes + 4 * j, boxes + 4 * m, anchors + 4 * j, p);
      out_labels[j] = labels[m];
    }
  }
}
