/* For the GPU tests (built with CUDA only): CUDA_OK checks a CUDA runtime
 * call like CHECK, printing the runtime's message. */
#ifndef LADLE_TEST_CUDA_H
#define LADLE_TEST_CUDA_H

#include <cuda_runtime_api.h>

#include "test.h"

#define CUDA_OK(call)                                                                        \
  do {                                                                                       \
    cudaError_t e_ = (call);                                                                 \
    test_checks++;                                                                           \
    if (e_ != cudaSuccess) {                                                                 \
      test_failures++;                                                                       \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
    }                                                                                        \
  } while (0)

#endif
