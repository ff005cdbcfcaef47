/* The reductions family's CUDA launcher (reduce_kernels.cu): every sample's
 * reduction in one launch (groups of one chunk are stored at once), plus a
 * second that combines the chunk results of groups of several chunks, in
 * reduce_core.h's order (bit-identical to reductions.c). All descriptors of
 * a launch share the input type and the kind. Descriptors in host memory
 * with device pointers (in, out, mean; part: device scratch of groups *
 * chunks results where chunks > 1, else unused); the launcher's own form of
 * them is written to host_params (pinned, 16-byte aligned) and copied to
 * dev_params on `stream`, both of ladle__gpu_reduce_param_bytes(n) bytes.
 * Only built with LADLE_HAVE_CUDA. */
#ifndef LADLE_OPS_REDUCTIONS_REDUCE_KERNELS_H
#define LADLE_OPS_REDUCTIONS_REDUCE_KERNELS_H

#include <stddef.h>

#include "ladle/ladle.h"
#include "ops/reductions/reduce_core.h"

#ifdef __cplusplus
extern "C" {
#endif

size_t ladle__gpu_reduce_param_bytes(int n);
ladle_status ladle__gpu_reduce(const ladle__reduce_desc *d, int n, void *host_params, void *dev_params,
                               size_t param_bytes, void *stream);

#ifdef __cplusplus
}
#endif

#endif
