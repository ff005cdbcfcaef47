/* For the GPU tests. A GPU test includes this header first and puts the rest
 * of itself under #ifdef LADLE_HAVE_CUDA: built without CUDA, the header is
 * the whole test, a main that skips (exit code 77, ctest's SKIP). Built with
 * CUDA it brings the headers every GPU test uses and:
 *   TEST_SKIP_WITHOUT_DEVICE()  in main: exit 77 when there is no CUDA device;
 *   CUDA_OK(call)               checks a CUDA runtime call like CHECK, printing
 *                               the runtime's message;
 *   test_now_ms, test_time_launches  the timing the kernel tests print. */
#ifndef LADLE_TEST_CUDA_H
#define LADLE_TEST_CUDA_H

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

#include <time.h>

#include <cuda_runtime_api.h>

#include "cuda/runtime.h"
#include "test.h"

#define TEST_SKIP_WITHOUT_DEVICE()         \
  do {                                     \
    if (ladle__cuda_device_count() == 0) { \
      printf("skipped: no CUDA device\n"); \
      return 77;                           \
    }                                      \
  } while (0)

#define CUDA_OK(call)                                                                        \
  do {                                                                                       \
    cudaError_t e_ = (call);                                                                 \
    test_checks++;                                                                           \
    if (e_ != cudaSuccess) {                                                                 \
      test_failures++;                                                                       \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
    }                                                                                        \
  } while (0)

static inline double test_now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* One launch of the kernel being timed, with its parameter buffers (pinned
 * host, device: `bytes` each). */
typedef ladle_status (*test_launch_fn)(const void *ctx, void *host, void *dev, size_t bytes);

enum { TEST_TIMED_LAUNCHES = 10 };

/* Not a check of results: times TEST_TIMED_LAUNCHES launches queued back to
 * back on `stream` after a warm-up, each with a parameter buffer of its own,
 * as the executor's ring gives (so that they queue without waiting). Returns
 * the stream's milliseconds a launch (parameter upload and kernel) and puts
 * the host call's in *host_ms; every CUDA call is checked. */
static inline float test_time_launches(test_launch_fn launch, const void *ctx, size_t bytes, void *stream,
                                       double *host_ms) {
  void *host[TEST_TIMED_LAUNCHES] = {0}, *dev[TEST_TIMED_LAUNCHES] = {0};
  cudaEvent_t e0 = NULL, e1 = NULL;
  float ms = 0;
  *host_ms = 0;
  for (int it = 0; it < TEST_TIMED_LAUNCHES; it++) {
    CUDA_OK(cudaHostAlloc(&host[it], bytes, cudaHostAllocDefault));
    CUDA_OK(cudaMalloc(&dev[it], bytes));
  }
  CHECK_OK(launch(ctx, host[0], dev[0], bytes)); /* warm-up */
  CUDA_OK(cudaStreamSynchronize((cudaStream_t)stream));
  CUDA_OK(cudaEventCreate(&e0));
  CUDA_OK(cudaEventCreate(&e1));
  CUDA_OK(cudaEventRecord(e0, (cudaStream_t)stream));
  for (int it = 0; it < TEST_TIMED_LAUNCHES; it++) {
    double t0 = test_now_ms();
    CHECK_OK(launch(ctx, host[it], dev[it], bytes));
    *host_ms += test_now_ms() - t0;
  }
  CUDA_OK(cudaEventRecord(e1, (cudaStream_t)stream));
  CUDA_OK(cudaEventSynchronize(e1));
  CUDA_OK(cudaEventElapsedTime(&ms, e0, e1));
  if (e0) CUDA_OK(cudaEventDestroy(e0));
  if (e1) CUDA_OK(cudaEventDestroy(e1));
  for (int it = 0; it < TEST_TIMED_LAUNCHES; it++) {
    cudaFreeHost(host[it]);
    cudaFree(dev[it]);
  }
  *host_ms /= TEST_TIMED_LAUNCHES;
  return ms / TEST_TIMED_LAUNCHES;
}

#endif /* LADLE_HAVE_CUDA */

#endif
