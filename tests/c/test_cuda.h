/* For the GPU tests. A GPU test includes this header first and puts the rest
 * of itself under #ifdef LADLE_HAVE_CUDA: built without CUDA, the header is
 * the whole test, a main that skips (exit code 77, ctest's SKIP). Built with
 * CUDA it brings the headers every GPU test uses and:
 *   TEST_SKIP_WITHOUT_DEVICE()  in main: exit 77 when there is no CUDA device;
 *   CUDA_OK(call)               checks a CUDA runtime call like CHECK, printing
 *                               the runtime's message;
 *   test_device_alloc ... test_download  buffers filled and read in stream
 *                               order (below: why every GPU test uses them);
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

/* Buffers a test launches on. The tests launch on a stream of
 * ladle__cuda_stream_create, as the executor does: a non-blocking stream,
 * which does not wait for the legacy default stream that cudaMemcpy and
 * cudaMemset use, and those may return before the device has done them
 * (cudaMemcpy from pageable memory, cudaMemset), so a kernel queued right
 * after them can read a buffer not yet filled (test_gpu_dtypes once differed
 * from the CPU so on an H200). Hence: whatever fills a buffer here ends with a
 * device synchronize, and test_download waits for the stream the kernel ran
 * on (a cudaMemcpy on the legacy stream does not) before it copies back.
 *   test_device_alloc(bytes)      cudaMalloc (of 1 byte for 0), checked;
 *   test_pinned_alloc(bytes)      cudaHostAlloc, likewise;
 *   test_upload(dev, host, bytes) host -> device, done when it returns;
 *   test_fill(dev, byte, bytes)   cudaMemset, done when it returns;
 *   test_device_copy(host, bytes) test_device_alloc, then test_upload;
 *   test_download(host, dev, bytes, stream)  waits for `stream` (a library
 *                                 stream value: NULL is the legacy stream),
 *                                 then device -> host. */
static inline void *test_device_alloc(size_t bytes) {
  void *p = NULL;
  CUDA_OK(cudaMalloc(&p, bytes ? bytes : 1));
  return p;
}

static inline void *test_pinned_alloc(size_t bytes) {
  void *p = NULL;
  CUDA_OK(cudaHostAlloc(&p, bytes ? bytes : 1, cudaHostAllocDefault));
  return p;
}

static inline void test_upload(void *dev, const void *host, size_t bytes) {
  if (bytes) CUDA_OK(cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice));
  CUDA_OK(cudaDeviceSynchronize());
}

static inline void test_fill(void *dev, int byte, size_t bytes) {
  if (bytes) CUDA_OK(cudaMemset(dev, byte, bytes));
  CUDA_OK(cudaDeviceSynchronize());
}

static inline void *test_device_copy(const void *host, size_t bytes) {
  void *dev = test_device_alloc(bytes);
  if (dev) test_upload(dev, host, bytes);
  return dev;
}

static inline void test_download(void *host, const void *dev, size_t bytes, void *stream) {
  CUDA_OK(cudaStreamSynchronize(ladle__cuda_stream(stream)));
  if (bytes) CUDA_OK(cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost));
}

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
    host[it] = test_pinned_alloc(bytes);
    dev[it] = test_device_alloc(bytes);
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
