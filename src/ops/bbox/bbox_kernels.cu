/* The bbox kernels on the GPU: one launch per batch, per-sample parameters in
 * one array; the per-row arithmetic is bbox_math.h's, as on the CPU. */
#ifndef LADLE_HAVE_CUDA
#define LADLE_HAVE_CUDA 1
#endif

#include <string.h>

extern "C" {
#include "core/error.h"
}
#include "cuda/runtime.h"
#include "ops/bbox/bbox_math.h"
#include "ops/kernels/gpu_kernels.h"

namespace {

/* grid (blocks, samples), block 256: a grid-stride loop over a sample's rows. */
__global__ void __launch_bounds__(256)
    points_kernel(const ladle__gpu_points_desc *__restrict__ samples, int out_type, int in_type) {
  const ladle__gpu_points_desc *sp = samples + blockIdx.y;
  const ladle__points_params p = sp->p;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; r < sp->rows; r += stride)
    ladle__points_row(sp->out, (ladle_dtype)out_type, sp->in, (ladle_dtype)in_type, r, &p);
}

enum { ENC_BLOCK = 256 };

/* One block per sample: each box's claimed anchor (a block-wide arg-max, the
 * last index among equal IoUs as the CPU's sequential scan finds it), then
 * one thread per anchor for its match. */
__global__ void __launch_bounds__(ENC_BLOCK)
    box_encoder_kernel(const ladle__gpu_box_encoder_desc *__restrict__ samples, const float *__restrict__ anchors,
                       int64_t nanchors, const ladle__box_encoder_params *__restrict__ params) {
  __shared__ float best_v[ENC_BLOCK];
  __shared__ int64_t best_i[ENC_BLOCK];
  const ladle__gpu_box_encoder_desc *sp = samples + blockIdx.x;
  const ladle__box_encoder_params p = *params;
  const int tid = threadIdx.x;
  for (int64_t b = 0; b < sp->nboxes; b++) {
    float v = -1.0f;
    int64_t idx = -1;
    for (int64_t j = tid; j < nanchors; j += ENC_BLOCK) {
      float iou = ladle__box_iou(sp->boxes + 4 * b, anchors + 4 * j);
      if (iou >= v) v = iou, idx = j;
    }
    best_v[tid] = v, best_i[tid] = idx;
    __syncthreads();
    for (int s = ENC_BLOCK / 2; s > 0; s >>= 1) {
      if (tid < s) {
        float ov = best_v[tid + s];
        int64_t oi = best_i[tid + s];
        if (ov > best_v[tid] || (ov == best_v[tid] && oi > best_i[tid])) best_v[tid] = ov, best_i[tid] = oi;
      }
      __syncthreads();
    }
    if (tid == 0) sp->best_anchor[b] = (int)best_i[0];
    __syncthreads();
  }
  for (int64_t j = tid; j < nanchors; j += ENC_BLOCK) {
    int64_t m = ladle__box_match(sp->boxes, sp->nboxes, anchors + 4 * j, j, sp->best_anchor, p.criteria);
    if (m < 0) {
      ladle__box_encode_anchor(sp->out_boxes + 4 * j, anchors + 4 * j, &p);
      sp->out_labels[j] = 0;
    } else {
      ladle__box_encode_one(sp->out_boxes + 4 * j, sp->boxes + 4 * m, anchors + 4 * j, &p);
      sp->out_labels[j] = sp->labels[m];
    }
  }
}

unsigned blocks_for(int64_t items) {
  int64_t b = (items + 255) / 256;
  return (unsigned)(b < 1 ? 1 : b > 4096 ? 4096 : b);
}

}  // namespace

extern "C" size_t ladle__gpu_points_param_bytes(int n) {
  return ladle__align16((size_t)(n > 0 ? n : 0) * sizeof(ladle__gpu_points_desc));
}

extern "C" ladle_status ladle__gpu_points(const ladle__gpu_points_desc *d, int n, ladle_dtype out_type,
                                          ladle_dtype in_type, void *host_params, void *dev_params,
                                          size_t param_bytes, void *stream) {
  ladle_status st = LADLE_OK;
  cudaStream_t s = ladle__cuda_stream(stream);
  int64_t max_rows = 1;
  LADLE_CUDA_ENTER();
  LADLE_TRY(ladle__gpu_check_params(n, d, host_params, dev_params, param_bytes, ladle__gpu_points_param_bytes(n),
                                    __func__));
  for (int i = 0; i < n; i++) {
    const ladle__points_params *p = &d[i].p;
    LADLE_CHECK(d[i].rows >= 0 && (d[i].rows == 0 || (d[i].in && d[i].out)), LADLE_ERROR_INVALID_ARGUMENT,
                "sample %d: NULL pointer or negative row count", i);
    LADLE_CHECK(p->in_dim >= 1 && p->in_dim <= LADLE__POINT_MAX_DIM && p->out_dim >= 1 &&
                    p->out_dim <= LADLE__POINT_MAX_DIM && p->mode >= 0 && p->mode <= 2,
                LADLE_ERROR_INVALID_ARGUMENT, "sample %d: bad point map (%d -> %d, mode %d)", i, p->in_dim,
                p->out_dim, p->mode);
    if (d[i].rows > max_rows) max_rows = d[i].rows;
  }
  memcpy(host_params, d, (size_t)n * sizeof *d);
  LADLE_CUDA_CHECK(cudaMemcpyAsync(dev_params, host_params, (size_t)n * sizeof *d, cudaMemcpyHostToDevice, s));
  (void)cudaGetLastError();
  points_kernel<<<dim3(blocks_for(max_rows), (unsigned)n), 256, 0, s>>>((const ladle__gpu_points_desc *)dev_params,
                                                                        (int)out_type, (int)in_type);
  LADLE_CUDA_CHECK_LAUNCH(points_kernel);
done:
  return st;
}

extern "C" size_t ladle__gpu_box_encoder_param_bytes(int n, int64_t nanchors) {
  return ladle__align16((size_t)(n > 0 ? n : 0) * sizeof(ladle__gpu_box_encoder_desc)) +
         ladle__align16((size_t)(nanchors > 0 ? nanchors : 0) * 4 * sizeof(float)) +
         ladle__align16(sizeof(ladle__box_encoder_params));
}

extern "C" ladle_status ladle__gpu_box_encoder(const ladle__gpu_box_encoder_desc *d, int n, const float *anchors,
                                               int64_t nanchors, const ladle__box_encoder_params *p,
                                               void *host_params, void *dev_params, size_t param_bytes,
                                               void *stream) {
  ladle_status st = LADLE_OK;
  cudaStream_t s = ladle__cuda_stream(stream);
  size_t desc_bytes = ladle__align16((size_t)n * sizeof *d), anchor_bytes = ladle__align16((size_t)nanchors * 16);
  uint8_t *h = (uint8_t *)host_params, *dv = (uint8_t *)dev_params;
  LADLE_CUDA_ENTER();
  LADLE_TRY(ladle__gpu_check_params(n, d, host_params, dev_params, param_bytes,
                                    ladle__gpu_box_encoder_param_bytes(n, nanchors), __func__));
  LADLE_CHECK(nanchors >= 1 && anchors && p, LADLE_ERROR_INVALID_ARGUMENT, "no anchors");
  for (int i = 0; i < n; i++)
    LADLE_CHECK(d[i].nboxes >= 0 && d[i].out_boxes && d[i].out_labels &&
                    (d[i].nboxes == 0 || (d[i].boxes && d[i].labels && d[i].best_anchor)),
                LADLE_ERROR_INVALID_ARGUMENT, "sample %d: NULL pointer or negative box count", i);
  memcpy(h, d, (size_t)n * sizeof *d);
  memcpy(h + desc_bytes, anchors, (size_t)nanchors * 16);
  memcpy(h + desc_bytes + anchor_bytes, p, sizeof *p);
  LADLE_CUDA_CHECK(cudaMemcpyAsync(dv, h, desc_bytes + anchor_bytes + sizeof *p, cudaMemcpyHostToDevice, s));
  (void)cudaGetLastError();
  box_encoder_kernel<<<(unsigned)n, ENC_BLOCK, 0, s>>>((const ladle__gpu_box_encoder_desc *)dv,
                                                       (const float *)(dv + desc_bytes), nanchors,
                                                       (const ladle__box_encoder_params *)(dv + desc_bytes +
                                                                                           anchor_bytes));
  LADLE_CUDA_CHECK_LAUNCH(box_encoder_kernel);
done:
  return st;
}
