/* equalize on the GPU (equalize_kernel.cu): histograms (shared-memory
 * counters, added atomically: exact), tables with equalize_core.h's formula,
 * then the lookup; bit-identical to equalize.c. Descriptors in host memory
 * with device pointers, of the shapes equalize.c describes (interleaved
 * channels or whole planes); the launcher's form of them is written to
 * host_params (pinned, 16-byte aligned) and copied to dev_params on
 * `stream`; hist counters are zeroed here. Only built with
 * LADLE_HAVE_CUDA. */
#ifndef LADLE_OPS_COLOR_EQUALIZE_KERNEL_H
#define LADLE_OPS_COLOR_EQUALIZE_KERNEL_H

#include <stddef.h>

#include "ladle/ladle.h"
#include "ops/color/equalize_core.h"

#ifdef __cplusplus
extern "C" {
#endif

size_t ladle__gpu_equalize_param_bytes(int n);
/* hist: all samples' counters (total_hists * 256), zeroed before counting. */
ladle_status ladle__gpu_equalize(const ladle__equalize_desc *d, int n, uint32_t *hist, int64_t total_hists,
                                 void *host_params, void *dev_params, size_t param_bytes, void *stream);

#ifdef __cplusplus
}
#endif

#endif
