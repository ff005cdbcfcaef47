/* The slice window of DALI's slice arguments (start/rel_start, end/rel_end,
 * shape/rel_shape, or the inputs anchor and shape with normalized_anchor /
 * normalized_shape), shared by fn.slice and fn.decoders.image_slice. */
#ifndef LADLE_OPS_TENSOR_SLICE_H
#define LADLE_OPS_TENSOR_SLICE_H

#include "ops/op.h"

/* An operator's argument indices of the slice arguments. */
typedef struct ladle__slice_arg_ids {
  int start, rel_start, end, rel_end, shape, rel_shape, normalized_anchor, normalized_shape;
} ladle__slice_arg_ids;

/* At init: one start and one end-or-shape at most, no arguments with the
 * inputs anchor and shape (inputs 1 and 2: both or neither, 1-D numbers). */
ladle_status ladle__slice_check(const ladle__node *n, const ladle__slice_arg_ids *ids);

/* At setup: [start[k], end[k]) of axis axes[k] (k < count) of a sample of
 * these extents, rounded as DALI rounds them (the nearest integer of start
 * and of start + shape); integer anchor/shape inputs are absolute. Fails
 * when a list has not `count` values or an end precedes its start; the
 * caller decides what lies outside the extents. */
ladle_status ladle__slice_bounds(const ladle__node *n, const ladle__sample *s, const ladle__slice_arg_ids *ids,
                                 const int *axes, int count, const int64_t *extents, int64_t *start, int64_t *end);

#endif
