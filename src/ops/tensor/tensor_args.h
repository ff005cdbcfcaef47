/* What the tensor family's operators share: list arguments that may be given
 * per sample, axes given by index or by layout letters, and the batch-wide
 * runs of the strided copy (each operator says what its samples' copies are). */
#ifndef LADLE_OPS_TENSOR_ARGS_H
#define LADLE_OPS_TENSOR_ARGS_H

#include "ops/op.h"
#include "ops/tensor/tensor_kernels.h"

#define LADLE_TENSOR_MAX_LIST 64

/* An op_def's run_batch defined only where CUDA is compiled in (the strided
 * ones always are: ladle__strided_run_batch fails cleanly without CUDA, and
 * their GPU variant exists only with it). */
#ifdef LADLE_HAVE_CUDA
#define IF_CUDA(f) f
#else
#define IF_CUDA(f) NULL
#endif

/* The values of list argument `arg` for sample s (its node's sample when it
 * has one, else the constant): the count, or -1 when not given. Fails (count
 * -2, message set) when there are more than `max`. */
int ladle__tensor_list(const ladle__node *n, const ladle__sample *s, int arg, double *out, int max);

/* The axes of a sample of rank ndim named by `axes_arg` (indices; negative
 * ones count from the end when allow_negative) or `names_arg` (layout
 * letters): *count of them into axes, in the given order. -1 for either arg:
 * the operator has none. Neither given: *count = -1. */
ladle_status ladle__tensor_axes(const ladle__node *n, const ladle__sample *s, int axes_arg, int names_arg, int ndim,
                                const char *layout, int allow_negative, int *axes, int *count);

/* The copies of sample `slot`: fills d (at most max) and returns how many. */
typedef int (*ladle__strided_plan)(const ladle__node *n, int slot, ladle__strided_desc *d, int max);
/* CPU run of one sample's copies. */
ladle_status ladle__strided_run(ladle__node *n, ladle__sample *s, ladle__strided_plan plan, int max);
/* GPU: every sample's copies in one launch. */
ladle_status ladle__strided_run_batch(ladle__node *n, ladle__gpu *g, ladle__strided_plan plan, int max);

/* A desc copying `in` (shape in_shape, dense) to `out` (dense shape shape)
 * from in_start, filled elsewhere with nothing (num_fill 0, fill zero). */
void ladle__strided_dense(ladle__strided_desc *d, void *out, const void *in, int ndim, int elem_size,
                          const int64_t *shape, const int64_t *in_shape, const int64_t *in_start);

/* A setup whose output 0 has input 0's shape. */
ladle_status ladle__tensor_same_shape_setup(ladle__node *n, ladle__sample *s);

/* `value` converted to `dtype` (saturating, as cast does) into 8 bytes. */
void ladle__tensor_value(void *out, ladle_dtype dtype, double value);

#endif
