/* What the element-wise operators of this family (math.arithmetic,
 * _tensor_subscript) share: describing a sample for the kernel, and the GPU
 * launch of a whole batch. */
#ifndef LADLE_OPS_MATH_MATH_OP_H
#define LADLE_OPS_MATH_MATH_OP_H

#include "ops/math/math_kernel.h"
#include "ops/op.h"

/* Returns a failed call's status (for functions that own nothing to clean up). */
#define LADLE_MATH_PASS(call)             \
  do {                                    \
    ladle_status pass_ = (call);          \
    if (pass_ != LADLE_OK) return pass_;  \
  } while (0)

/* Fills the kernel's descriptor of batch slot `slot` (inputs and output of
 * the current iteration). */
typedef ladle_status (*ladle__math_describe_fn)(ladle__node *n, int slot, ladle__math_sample *d);

/* run_batch of such an operator: every sample described, one launch of the
 * program. */
ladle_status ladle__math_run_batch(ladle__node *n, ladle__gpu *g, const ladle__math_prog *prog,
                                   ladle__math_describe_fn describe);

#endif
