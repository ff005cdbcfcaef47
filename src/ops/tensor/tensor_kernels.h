/* The tensor family's kernels: one strided copy with fill (transpose, slice,
 * pad, cat, stack, element_extract are all "read the input at these strides
 * from this start, fill what falls outside"), one_hot and lookup_table. CPU
 * references in tensor_kernels.c, CUDA versions in tensor_kernels.cu. */
#ifndef LADLE_OPS_TENSOR_KERNELS_H
#define LADLE_OPS_TENSOR_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "ladle/ladle.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LADLE_TENSOR_MAX_FILL 16

/* One copy: for every index i of `shape` (ndim dims, elements of elem_size
 * bytes), out[sum i_d * out_stride_d] = in[sum (in_start_d + i_d) *
 * in_stride_d] when 0 <= in_start_d + i_d < in_shape_d for every d, else the
 * fill value: fill[i_fill_dim] (fill_dim >= 0, num_fill values) or fill[0].
 * Strides are in elements; fill values are elem_size bytes each, already in
 * the element type. */
typedef struct ladle__strided_desc {
  void *out;
  const void *in;
  int ndim, elem_size, fill_dim, num_fill;
  int64_t shape[LADLE_MAX_NDIM], out_stride[LADLE_MAX_NDIM], in_stride[LADLE_MAX_NDIM];
  int64_t in_start[LADLE_MAX_NDIM], in_shape[LADLE_MAX_NDIM];
  uint8_t fill[LADLE_TENSOR_MAX_FILL * 8];
} ladle__strided_desc;

/* Dense row-major strides (elements) of `shape`. */
void ladle__dense_strides(int64_t *strides, const int64_t *shape, int ndim);
void ladle__strided_copy(const ladle__strided_desc *d);

/* Rewrites `d` as the same copy over fewer dimensions: a dimension copied
 * whole and contiguous with the one outside it (in and out, no fill in it)
 * merges into that one. A slice of HWC pixels keeping every channel becomes
 * rows of W * C elements instead of H * W runs of C (what makes the CPU copy
 * one memcpy per row and spares the GPU kernel an index division per
 * dimension). Same elements, same fill values. */
void ladle__strided_coalesce(ladle__strided_desc *d);

/* one_hot: out has the input's elements with a new axis of num_classes
 * inserted before the `inner` innermost elements of each input element's
 * position: out[o, c, i] = (in[o, i] == c) ? on : off, for outer o < outer,
 * inner i < inner. on/off are elem_size bytes in the output type. */
typedef struct ladle__one_hot_desc {
  void *out;
  const void *in;
  int64_t outer, inner;
} ladle__one_hot_desc;
void ladle__one_hot(const ladle__one_hot_desc *d, ladle_dtype in_type, int64_t num_classes, int elem_size,
                    const void *on, const void *off);

/* lookup_table: out[i] = table[in[i]] for 0 <= in[i] < table_size, else
 * `fallback` (table and fallback in the output type, elem_size bytes each). */
typedef struct ladle__lookup_desc {
  void *out;
  const void *in;
  int64_t count;
} ladle__lookup_desc;
void ladle__lookup(const ladle__lookup_desc *d, ladle_dtype in_type, int elem_size, const void *table,
                   int64_t table_size, const void *fallback);

#ifdef LADLE_HAVE_CUDA
/* The batch's copies (n descs) on `stream`: one launch per kernel the plan
 * uses (at most three, see ..._plan_kind); host/dev params from
 * ladle__gpu_params of ladle__gpu_strided_param_bytes(n) bytes. */
size_t ladle__gpu_strided_param_bytes(int n);
ladle_status ladle__gpu_strided_copy(const ladle__strided_desc *d, int n, void *host_params, void *dev_params,
                                     size_t param_bytes, void *stream);
/* Test support for the copy's launch plan (host only, no device needed):
 * ..._plan_info gives the strided kernel's plan of copy d (of its first part
 * where a dense copy is cut in two), as if it went there: -1 when it has no elements, else
 * 1 for 32-bit indexing or 0 for 64-bit, with *unit (bytes moved per step)
 * and *ndim (dimensions left after merging); ..._emulate runs the kernel's
 * index arithmetic on the host over host pointers (d's own buffers). */
int ladle__gpu_strided_plan_info(const ladle__strided_desc *d, int *unit, int *ndim);
void ladle__gpu_strided_emulate(const ladle__strided_desc *d);
/* The launch plan of n copies as ladle__gpu_strided_copy makes it: most go
 * to a row kernel (rows of segments from sources or fill; consecutive copies
 * that continue each other's rows, a cat or stack sample's inputs, become one
 * job: *rows jobs) or a tiled transpose (a small dimension swapped with a
 * large one: *transposes), the rest to the strided kernel (the return value:
 * its descs; -1 out of memory). ..._emulate_batch runs the whole plan on the
 * host over host pointers (0, or -1 out of memory). ladle__gpu_shift16_check:
 * the row kernel's unaligned 16-byte load composition on the host, 0 when
 * right for every offset. */
int ladle__gpu_strided_plan_kind(const ladle__strided_desc *d, int n, int *rows, int *transposes);
int ladle__gpu_strided_emulate_batch(const ladle__strided_desc *d, int n);
int ladle__gpu_shift16_check(void);
/* cast on the GPU: ladle__gpu_convert's contract (normalize_kernel.h: the
 * same descs, rules and results) with a kernel of its own per common pair of
 * types (..._has_kernel: 1 for those), ladle__gpu_convert for the others.
 * Params of ladle__gpu_cast_param_bytes(n), 16-byte aligned. */
struct ladle__gpu_convert_desc;
size_t ladle__gpu_cast_param_bytes(int n);
int ladle__gpu_cast_has_kernel(ladle_dtype out_type, ladle_dtype in_type);
ladle_status ladle__gpu_cast(const struct ladle__gpu_convert_desc *d, int n, ladle_dtype out_type, ladle_dtype in_type,
                             void *host_params, void *dev_params, size_t param_bytes, void *stream);
/* one_hot for n samples: params of ladle__gpu_one_hot_param_bytes(n). */
size_t ladle__gpu_one_hot_param_bytes(int n, int elem_size);
ladle_status ladle__gpu_one_hot(const ladle__one_hot_desc *d, int n, ladle_dtype in_type, int64_t num_classes,
                                int elem_size, const void *on, const void *off, void *host_params, void *dev_params,
                                size_t param_bytes, void *stream);
/* lookup_table for n samples: params hold the descs and the table. */
size_t ladle__gpu_lookup_param_bytes(int n, int elem_size, int64_t table_size);
ladle_status ladle__gpu_lookup(const ladle__lookup_desc *d, int n, ladle_dtype in_type, int elem_size,
                               const void *table, int64_t table_size, const void *fallback, void *host_params,
                               void *dev_params, size_t param_bytes, void *stream);
#endif

#ifdef __cplusplus
}
#endif

#endif
