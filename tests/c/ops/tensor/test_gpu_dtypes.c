/* ladle__gpu_convert (cast on the GPU) against ladle__convert for every pair
 * of the 12 dtypes, bit for bit (NaNs included: both canonicalize them the
 * same way), on the edge values and random bit patterns of dtype_values.h, in
 * batches of samples of different sizes. Exits 77 (ctest's SKIP) without CUDA
 * or a device. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef LADLE_HAVE_CUDA

int main(void) {
  printf("skipped: built without CUDA\n");
  return 77;
}

#else

#include "cuda/runtime.h"
#include "ops/geometry/normalize_kernel.h"
#include "ops/kernels/gpu_kernels.h"
#include "ops/tensor/dtype_values.h"
#include "test.h"
#include "test_cuda.h"

static void *stream;

static void test_gpu_convert_every_pair(void) {
  enum { SAMPLES = 3 };
  ladle__rng rng;
  ladle__rng_init(&rng, 91, 0, 0, 0);
  size_t total = 0, bad = 0;
  for (int a = 0; a < LADLE_DTYPE_COUNT; a++) {
    for (int b = 0; b < LADLE_DTYPE_COUNT; b++) {
      ladle_dtype it = all_dtypes[a], ot = all_dtypes[b];
      size_t ies = ladle_dtype_size(it), oes = ladle_dtype_size(ot);
      ladle__gpu_convert_desc d[SAMPLES];
      void *in[SAMPLES], *ref[SAMPLES];
      for (int i = 0; i < SAMPLES; i++) {
        size_t count = i == 0 ? 4000 : 1 + ladle__rng_below(&rng, 3000);
        in[i] = malloc(count * ies);
        ref[i] = malloc(count * oes);
        fill(in[i], it, count, &rng);
        ladle__convert(ref[i], ot, in[i], it, count);
        void *din = NULL, *dout = NULL;
        CUDA_OK(cudaMalloc(&din, count * ies));
        CUDA_OK(cudaMalloc(&dout, count * oes));
        CUDA_OK(cudaMemcpy(din, in[i], count * ies, cudaMemcpyHostToDevice));
        d[i] = (ladle__gpu_convert_desc){din, dout, count};
      }
      size_t bytes = ladle__gpu_convert_param_bytes(SAMPLES);
      void *host = NULL, *dev = NULL;
      CUDA_OK(cudaMallocHost(&host, bytes));
      CUDA_OK(cudaMalloc(&dev, bytes));
      CHECK_OK(ladle__gpu_convert(d, SAMPLES, ot, it, host, dev, bytes, stream));
      CUDA_OK(cudaStreamSynchronize((cudaStream_t)stream));
      size_t pair_bad = 0;
      for (int i = 0; i < SAMPLES; i++) {
        uint8_t *got = malloc(d[i].count * oes);
        CUDA_OK(cudaMemcpy(got, d[i].out, d[i].count * oes, cudaMemcpyDeviceToHost));
        for (size_t k = 0; k < d[i].count; k++)
          pair_bad += memcmp(got + k * oes, (uint8_t *)ref[i] + k * oes, oes) != 0;
        total += d[i].count;
        free(got);
        free(in[i]);
        free(ref[i]);
        cudaFree((void *)d[i].in);
        cudaFree(d[i].out);
      }
      if (pair_bad)
        fprintf(stderr, "gpu convert %s -> %s: %zu elements differ from the CPU\n", ladle_dtype_name(it),
                ladle_dtype_name(ot), pair_bad);
      bad += pair_bad;
      cudaFreeHost(host);
      cudaFree(dev);
    }
  }
  CHECK(bad == 0);
  fprintf(stderr, "gpu convert: %zu elements over %d pairs, %zu differ\n", total,
          LADLE_DTYPE_COUNT * LADLE_DTYPE_COUNT, bad);
}

static void test_gpu_convert_rejects_bad_dtypes(void) {
  ladle__gpu_convert_desc d = {NULL, NULL, 0};
  size_t bytes = ladle__gpu_convert_param_bytes(1);
  void *host = NULL, *dev = NULL;
  CUDA_OK(cudaMallocHost(&host, bytes));
  CUDA_OK(cudaMalloc(&dev, bytes));
  CHECK(ladle__gpu_convert(&d, 1, (ladle_dtype)LADLE_DTYPE_COUNT, LADLE_UINT8, host, dev, bytes, stream) ==
        LADLE_ERROR_INVALID_ARGUMENT);
  cudaFreeHost(host);
  cudaFree(dev);
}

int main(void) {
  if (ladle__cuda_device_count() < 1) {
    printf("skipped: no CUDA device\n");
    return 77;
  }
  CHECK_OK(ladle__cuda_use_device(0, NULL));
  CHECK_OK(ladle__cuda_stream_create(0, &stream));
  RUN(test_gpu_convert_every_pair);
  RUN(test_gpu_convert_rejects_bad_dtypes);
  ladle__cuda_stream_destroy(stream);
  TEST_MAIN_END();
}

#endif
