/* The hot path's GPU transform: crop (the filter tables' source window), resize,
 * mirror, normalize, cast and layout of decoded uint8 images in one kernel that
 * reads each input pixel's rows once per tile and writes the final tensor once.
 * The kernel is resize.cu's resample kernel in its normalizing mode. */
/* A .cu file is only built with CUDA; the C headers it shares look for this. */
#ifndef LADLE_HAVE_CUDA
#define LADLE_HAVE_CUDA 1
#endif

#include "ops/geometry/resize_kernel.h"
#include "ops/kernels/gpu_kernels.h"

extern "C" {
#include "core/error.h"
}

extern "C" ladle_status ladle__gpu_fused(const ladle__gpu_resize_desc *d, const ladle__cmn_params *cmn, int n,
                                         void *host_params, void *dev_params, size_t param_bytes, void *stream) {
  if (!cmn) return LADLE_FAIL(LADLE_ERROR_INVALID_ARGUMENT, "no crop_mirror_normalize parameters");
  return ladle__gpu_resample(d, cmn, n, LADLE_UINT8, host_params, dev_params, param_bytes, stream, __func__);
}
