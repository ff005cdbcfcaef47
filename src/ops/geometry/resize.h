/* What resize.c offers the rest of the library: the facts about a resize node
 * that graph planning (pipeline/plan.c) and the fused resize +
 * crop_mirror_normalize kernel (crop.c) need. */
#ifndef LADLE_OPS_GEOMETRY_RESIZE_H
#define LADLE_OPS_GEOMETRY_RESIZE_H

#include "ops/geometry/resize_kernel.h"
#include "ops/op.h"

/* 1 and the size when a resize node's output size is the same for every
 * sample (resize_x and resize_y, or both entries of size, constant, mode
 * default or stretch, no max_size). */
int ladle__resize_fixed_size(const ladle__node *n, int *width, int *height);

#ifdef LADLE_HAVE_CUDA
/* The GPU descriptors of a resize node's samples (tables planned in its
 * setup), writing to `out`'s samples. */
void ladle__resize_gpu_descs(const ladle__node *r, const ladle_batch *out, ladle__gpu_resize_desc *d);
#endif

#endif
