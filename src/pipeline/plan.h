/* Build-time planning across operators (see plan.c). */
#ifndef LADLE_PIPELINE_PLAN_H
#define LADLE_PIPELINE_PLAN_H

#include "pipeline/pipeline.h"

/* Called by ladle_pipeline_build after every operator's init. */
void ladle__plan_graph(ladle_pipeline *p);

/* resize.c: 1 and the size when a resize node's output size is the same for
 * every sample (resize_x and resize_y, or both entries of size, constant,
 * mode default or stretch, no max_size). */
int ladle__resize_fixed_size(const ladle__node *n, int *width, int *height);

#ifdef LADLE_HAVE_CUDA
#include "ops/kernels/gpu_kernels.h"

/* resize.c: the GPU descriptors of a resize node's samples (tables planned in
 * its setup), writing to `out`'s samples. */
void ladle__resize_gpu_descs(const ladle__node *r, const ladle_batch *out, ladle__gpu_resize_desc *d);
#endif

#endif
