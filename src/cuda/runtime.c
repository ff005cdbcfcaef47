/* CUDA runtime glue: error messages and the sticky-error latch, device/pinned
 * allocators, streams and events, and the run-time part of ladle_build_info(). */
#ifdef LADLE_HAVE_CUDA

#include "cuda/runtime.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>


/* ------------------------------------------------------------------------ */
/* Errors and the sticky latch                                                */
/* ------------------------------------------------------------------------ */

static atomic_int latched;                 /* 1 once latch_message is final */
static pthread_mutex_t latch_lock = PTHREAD_MUTEX_INITIALIZER;
static char latch_message[LADLE_ERROR_MAX];

int ladle__cuda_error_is_sticky(cudaError_t err) {
  switch (err) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchTimeout:
    case cudaErrorAssert:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchFailure:
    case cudaErrorTensorMemoryLeak:
    case cudaErrorECCUncorrectable:
    case cudaErrorNvlinkUncorrectable:
    case cudaErrorContained:
    case cudaErrorContextIsDestroyed:
    case cudaErrorExternalDevice:
      return 1;
    default:
      return 0;
  }
}

int ladle__cuda_broken(void) { return atomic_load_explicit(&latched, memory_order_acquire); }

ladle_status ladle__cuda_check_latch(const char *func) {
  if (!ladle__cuda_broken()) return LADLE_OK;
  /* latch_message is written once, before `latched` is set, and never again. */
  return ladle__set_error(LADLE_ERROR_CUDA, func, "CUDA is unusable after an earlier error: %s",
                          latch_message);
}

ladle_status ladle__cuda_fail(cudaError_t err, const char *func, const char *call) {
  /* The CUDA function's name, without the call's arguments (ladle's own expressions). */
  ladle__set_error(LADLE_ERROR_CUDA, func, "%.*s failed: %s: %s", (int)strcspn(call, "("), call, cudaGetErrorName(err),
                   cudaGetErrorString(err));
  /* cudaGetLastError resets a non-sticky error; a sticky one survives it. Two
   * calls: the first may return `err` itself (or an older error), the second
   * tells whether the context still reports an error. */
  (void)cudaGetLastError();
  int sticky = ladle__cuda_error_is_sticky(err) || cudaGetLastError() != cudaSuccess;
  if (sticky && !ladle__cuda_broken()) {
    pthread_mutex_lock(&latch_lock);
    if (!atomic_load_explicit(&latched, memory_order_relaxed)) {
      snprintf(latch_message, sizeof latch_message, "%s", ladle_last_error());
      atomic_store_explicit(&latched, 1, memory_order_release);
    }
    pthread_mutex_unlock(&latch_lock);
  }
  return LADLE_ERROR_CUDA;
}

/* For paths that cannot report (allocators, destroy): note a sticky error. */
static void note_error(cudaError_t err, const char *func, const char *call) {
  if (err == cudaSuccess) return;
  char saved[LADLE_ERROR_MAX];
  snprintf(saved, sizeof saved, "%s", ladle_last_error());
  ladle__cuda_fail(err, func, call);
  ladle__restore_error(saved); /* the caller's message is not ours to change */
}

/* ------------------------------------------------------------------------ */
/* Devices                                                                    */
/* ------------------------------------------------------------------------ */

static int device_count;
static pthread_once_t device_count_once = PTHREAD_ONCE_INIT;

static void count_devices(void) {
  int n = 0;
  cudaError_t err = cudaGetDeviceCount(&n);
  /* cudaErrorNoDevice, cudaErrorInsufficientDriver (no libcuda.so or too old a
   * driver) and any other failure all mean: no usable device. */
  if (err != cudaSuccess) {
    n = 0;
    (void)cudaGetLastError();
  }
  device_count = n;
}

int ladle__cuda_device_count(void) {
  pthread_once(&device_count_once, count_devices);
  return device_count;
}

ladle_status ladle__cuda_use_device(int device, int *previous) {
  ladle_status st = LADLE_OK;
  int prev = 0;
  LADLE_CUDA_ENTER();
  LADLE_CHECK(device >= 0 && device < ladle__cuda_device_count(), LADLE_ERROR_INVALID_ARGUMENT,
              "CUDA device %d does not exist (%d found)", device, ladle__cuda_device_count());
  LADLE_CUDA_CHECK(cudaGetDevice(&prev));
  if (prev != device) LADLE_CUDA_CHECK(cudaSetDevice(device));
  if (previous) *previous = prev;
done:
  return st;
}

void ladle__cuda_restore_device(int previous) {
  int cur = -1;
  if (cudaGetDevice(&cur) == cudaSuccess && cur == previous) return;
  if (cudaSetDevice(previous) != cudaSuccess) (void)cudaGetLastError();
}

/* ------------------------------------------------------------------------ */
/* Allocators                                                                 */
/* ------------------------------------------------------------------------ */

/* The allocator's ctx carries the device ordinal. */
static int ctx_device(void *ctx) { return (int)(intptr_t)ctx; }

/* Sets the device for an allocator call; 0 on failure (nothing to restore). */
static int enter_device(int device, int *prev) {
  if (ladle__cuda_broken()) return 0;
  cudaError_t err = cudaGetDevice(prev);
  if (err == cudaSuccess && *prev != device) err = cudaSetDevice(device);
  if (err != cudaSuccess) {
    note_error(err, __func__, "cudaSetDevice(device)");
    return 0;
  }
  return 1;
}

static void *device_alloc(void *ctx, size_t size) {
  int prev;
  void *p = NULL;
  if (!enter_device(ctx_device(ctx), &prev)) return NULL;
  cudaError_t err = cudaMalloc(&p, size);
  if (err != cudaSuccess) {
    note_error(err, __func__, "cudaMalloc(&p, size)");
    p = NULL;
  }
  ladle__cuda_restore_device(prev);
  return p;
}

static void device_free(void *ctx, void *ptr) {
  int prev;
  if (!ptr || !enter_device(ctx_device(ctx), &prev)) return;
  note_error(cudaFree(ptr), __func__, "cudaFree(ptr)");
  ladle__cuda_restore_device(prev);
}

static void *pinned_alloc(void *ctx, size_t size) {
  int prev;
  void *p = NULL;
  if (!enter_device(ctx_device(ctx), &prev)) return NULL;
  cudaError_t err = cudaHostAlloc(&p, size, cudaHostAllocPortable);
  if (err != cudaSuccess) {
    note_error(err, __func__, "cudaHostAlloc(&p, size, cudaHostAllocPortable)");
    p = NULL;
  }
  ladle__cuda_restore_device(prev);
  return p;
}

static void pinned_free(void *ctx, void *ptr) {
  int prev;
  if (!ptr || !enter_device(ctx_device(ctx), &prev)) return;
  note_error(cudaFreeHost(ptr), __func__, "cudaFreeHost(ptr)");
  ladle__cuda_restore_device(prev);
}

ladle__allocator ladle__cuda_device_allocator(int device) {
  ladle__allocator a = {device_alloc, device_free, (void *)(intptr_t)device, LADLE_DEVICE_CUDA};
  return a;
}

ladle__allocator ladle__cuda_pinned_allocator(int device) {
  ladle__allocator a = {pinned_alloc, pinned_free, (void *)(intptr_t)device, LADLE_DEVICE_CUDA_HOST};
  return a;
}

/* ------------------------------------------------------------------------ */
/* Streams and events                                                         */
/* ------------------------------------------------------------------------ */

cudaStream_t ladle__cuda_stream(void *stream) {
  return stream ? (cudaStream_t)stream : cudaStreamLegacy;
}

ladle_status ladle__cuda_stream_create(int low_priority, void **out) {
  ladle_status st = LADLE_OK;
  cudaStream_t s = NULL;
  int lowest = 0, highest = 0;
  LADLE_CUDA_ENTER();
  if (low_priority) LADLE_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&lowest, &highest));
  LADLE_CUDA_CHECK(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, lowest));
  *out = s;
done:
  return st;
}

void ladle__cuda_stream_destroy(void *stream) {
  if (!stream || stream == (void *)cudaStreamLegacy || stream == (void *)cudaStreamPerThread) return;
  note_error(cudaStreamDestroy((cudaStream_t)stream), __func__, "cudaStreamDestroy(stream)");
}

ladle_status ladle__cuda_event_create(int device, void **out) {
  ladle_status st = LADLE_OK;
  cudaEvent_t e = NULL;
  int prev = -1;
  LADLE_CUDA_ENTER();
  LADLE_TRY(ladle__cuda_use_device(device, &prev));
  LADLE_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  *out = e;
done:
  if (prev >= 0) ladle__cuda_restore_device(prev);
  return st;
}

void ladle__cuda_event_destroy(void *event) {
  if (event) note_error(cudaEventDestroy((cudaEvent_t)event), __func__, "cudaEventDestroy(event)");
}

ladle_status ladle__cuda_event_record(void *event, void *stream) {
  ladle_status st = LADLE_OK;
  LADLE_CUDA_ENTER();
  LADLE_CUDA_CHECK(cudaEventRecord((cudaEvent_t)event, ladle__cuda_stream(stream)));
done:
  return st;
}

ladle_status ladle__cuda_stream_wait(void *stream, void *event) {
  ladle_status st = LADLE_OK;
  LADLE_CUDA_ENTER();
  LADLE_CUDA_CHECK(cudaStreamWaitEvent(ladle__cuda_stream(stream), (cudaEvent_t)event, 0));
done:
  return st;
}

ladle_status ladle__cuda_event_sync(void *event) {
  ladle_status st = LADLE_OK;
  LADLE_CUDA_ENTER();
  LADLE_CUDA_CHECK(cudaEventSynchronize((cudaEvent_t)event));
done:
  return st;
}

ladle_status ladle__cuda_stream_sync(void *stream) {
  ladle_status st = LADLE_OK;
  LADLE_CUDA_ENTER();
  LADLE_CUDA_CHECK(cudaStreamSynchronize(ladle__cuda_stream(stream)));
done:
  return st;
}

ladle_status ladle__cuda_event_done(void *event, int *done_out) {
  ladle_status st = LADLE_OK;
  LADLE_CUDA_ENTER();
  cudaError_t err = cudaEventQuery((cudaEvent_t)event);
  if (err == cudaErrorNotReady) {
    (void)cudaGetLastError(); /* not an error; do not leave it for the next check */
    *done_out = 0;
  } else {
    LADLE_CUDA_CHECK(err);
    *done_out = 1;
  }
done:
  return st;
}

ladle_status ladle__cuda_copy(void *dst, const void *src, size_t bytes, void *stream) {
  ladle_status st = LADLE_OK;
  LADLE_CUDA_ENTER();
  if (bytes == 0) goto done;
  LADLE_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, ladle__cuda_stream(stream)));
done:
  return st;
}

/* ------------------------------------------------------------------------ */
/* Build info                                                                */
/* ------------------------------------------------------------------------ */

static char info[512];
static pthread_once_t info_once = PTHREAD_ONCE_INIT;

/* Copies a device name into a JSON string body (quotes and controls dropped). */
static void json_text(char *dst, size_t cap, const char *src) {
  size_t n = 0;
  for (; *src && n + 1 < cap; src++)
    if ((unsigned char)*src >= 0x20 && *src != '"' && *src != '\\') dst[n++] = *src;
  dst[n] = '\0';
}

static void make_info(void) {
  int runtime = 0, driver = 0;
  if (cudaRuntimeGetVersion(&runtime) != cudaSuccess) runtime = 0;
  if (cudaDriverGetVersion(&driver) != cudaSuccess) driver = 0; /* 0 without a driver */
  (void)cudaGetLastError();
  int n = ladle__cuda_device_count();
  if (n == 0) {
    snprintf(info, sizeof info,
             "\"cuda_devices\": 0, \"cuda_runtime\": %d, \"cuda_driver\": %d",
             runtime, driver);
    return;
  }
  char name[256] = "";
  struct cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess)
    json_text(name, sizeof name, prop.name);
  else
    (void)cudaGetLastError();
  snprintf(info, sizeof info,
           "\"cuda_devices\": %d, \"cuda_device_name\": \"%s\", \"cuda_runtime\": %d, \"cuda_driver\": %d", n,
           name, runtime, driver);
}

const char *ladle__cuda_runtime_info(void) {
  pthread_once(&info_once, make_info);
  return info;
}

#else
/* ISO C forbids an empty translation unit. */
typedef int ladle__cuda_runtime_unused;
#endif /* LADLE_HAVE_CUDA */
