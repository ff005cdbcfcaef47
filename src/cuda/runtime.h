/* The CUDA runtime as libladle uses it: error translation (LADLE_CUDA_CHECK), the
 * process-wide latch for sticky (context-destroying) errors, device and pinned
 * allocators for core/pool.h, events and stream waits, and the run-time facts
 * reported by ladle_build_info(). Only compiled with LADLE_HAVE_CUDA. */
#ifndef LADLE_CUDA_RUNTIME_H
#define LADLE_CUDA_RUNTIME_H

#ifdef LADLE_HAVE_CUDA

#include <cuda_runtime_api.h>

#include "core/error.h"
#include "core/pool.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Sticky errors. Some CUDA errors (an illegal address, a kernel that traps or
 * times out, an uncorrectable ECC error ...) destroy the device's context: every
 * later call on it returns the same error, and only a new process recovers.
 * The first such error that any ladle call sees is latched, process-wide
 * (conservative with several GPUs: one broken device stops ladle's CUDA work on
 * all of them), and from then on every ladle CUDA entry point fails at once with
 * LADLE_ERROR_CUDA and a message that repeats the first error, instead of
 * queueing more work or reporting a misleading later symptom.
 */

/* Records a failed CUDA call: sets the calling thread's message to
 * "<func>: <call> failed: <cudaGetErrorName>: <cudaGetErrorString>", latches it
 * when the error is sticky, clears CUDA's per-thread last error when it is not
 * (so that a later cudaGetLastError after a launch does not report it again),
 * and returns LADLE_ERROR_CUDA. */
ladle_status ladle__cuda_fail(cudaError_t err, const char *func, const char *call);

/* 1 once a sticky error has been latched. Cheap (one atomic load). */
int ladle__cuda_broken(void);

/* When latched: sets "<func>: CUDA is unusable after an earlier error: <first
 * message>" and returns LADLE_ERROR_CUDA; otherwise returns LADLE_OK. */
ladle_status ladle__cuda_check_latch(const char *func);

/* Is this error code one that leaves the context unusable? (A list of the known
 * ones; ladle__cuda_fail also treats an error that cudaGetLastError does not
 * clear as sticky.) */
int ladle__cuda_error_is_sticky(cudaError_t err);

/* In a function with `ladle_status st` and a `done:` label: on an error, set
 * the message (and the latch, for a sticky error) and jump to done. */
#define LADLE_CUDA_CHECK(call)                                \
  do {                                                        \
    cudaError_t cuda_err_ = (call);                           \
    if (cuda_err_ != cudaSuccess) {                           \
      st = ladle__cuda_fail(cuda_err_, __func__, #call);      \
      goto done;                                              \
    }                                                         \
  } while (0)

/* The first statement of every ladle function that calls CUDA (with `st` and
 * `done:`): fail fast once a sticky error has been latched. */
#define LADLE_CUDA_ENTER()                                    \
  do {                                                        \
    if (ladle__cuda_broken()) {                               \
      st = ladle__cuda_check_latch(__func__);                 \
      goto done;                                              \
    }                                                         \
  } while (0)

/* After a kernel launch (<<<>>> returns nothing): the launch error, if any,
 * reported as "<func>: launch of <kernel_name> failed: ...". */
#define LADLE_CUDA_CHECK_LAUNCH(kernel_name)                                \
  do {                                                                      \
    cudaError_t cuda_err_ = cudaGetLastError();                             \
    if (cuda_err_ != cudaSuccess) {                                         \
      st = ladle__cuda_fail(cuda_err_, __func__, "launch of " #kernel_name); \
      goto done;                                                            \
    }                                                                       \
  } while (0)

/* ------------------------------------------------------------------------ */
/* Devices                                                                    */
/* ------------------------------------------------------------------------ */

/* The number of CUDA devices, 0 (not an error) when there is no driver, no
 * device, or the driver is too old for this runtime. Computed once; thread-safe. */
int ladle__cuda_device_count(void);

/* Makes `device` the calling thread's current device; *previous (may be NULL)
 * gets the one that was current, for ladle__cuda_restore_device. Fails with
 * LADLE_ERROR_CUDA (or INVALID_ARGUMENT for a device id out of range). */
ladle_status ladle__cuda_use_device(int device, int *previous);

/* Sets the current device back (errors ignored: used on exit paths). */
void ladle__cuda_restore_device(int previous);

/* ------------------------------------------------------------------------ */
/* Allocators for core/pool.h                                                 */
/* ------------------------------------------------------------------------ */

/* Device memory on `device` (cudaMalloc, 256-byte aligned), and pinned host
 * memory (cudaHostAlloc, portable: usable with every device; its bookkeeping is
 * created on `device` so that no other device's context is created). The
 * allocators set the device around each call and put the previous one back.
 * alloc returns NULL on any failure (the pool reports out of memory); a sticky
 * error met there is latched. free ignores errors. Note that cudaFree and
 * cudaFreeHost synchronize the device: the pools keep freed blocks for reuse,
 * so this happens rarely. */
ladle__allocator ladle__cuda_device_allocator(int device);
ladle__allocator ladle__cuda_pinned_allocator(int device);

/* ------------------------------------------------------------------------ */
/* Streams and events                                                         */
/* ------------------------------------------------------------------------ */

/*
 * Stream values (void *, as in DLPack and ladle_batch_wait): NULL is the legacy
 * default stream (cudaStreamLegacy, whatever --default-stream this code was built
 * with), (void *)1 is also the legacy default stream and (void *)2 the per-thread
 * default stream (cudaStreamPerThread) — the values the runtime itself gives
 * these handles — and anything else a cudaStream_t. The legacy and per-thread
 * handles name the stream of the calling thread's current device.
 */
cudaStream_t ladle__cuda_stream(void *stream);

/* A new stream on the current device that does not synchronize with the
 * legacy default stream (cudaStreamNonBlocking); with low_priority, the
 * device's lowest stream priority, so that the scheduler prefers other
 * streams' kernels (a training step's) when both are ready. */
ladle_status ladle__cuda_stream_create(int low_priority, void **out);
void ladle__cuda_stream_destroy(void *stream); /* NULL allowed */

/* An event for ordering only (cudaEventDisableTiming), created on `device`. */
ladle_status ladle__cuda_event_create(int device, void **out);
/* Destroys an event; NULL allowed. Safe while the event is still pending. */
void ladle__cuda_event_destroy(void *event);
/* Records `event` after the work queued so far on `stream` (same device). */
ladle_status ladle__cuda_event_record(void *event, void *stream);
/* Makes later work on `stream` wait for `event` (the consumer side of a batch);
 * does not block the host. The event may belong to another device. */
ladle_status ladle__cuda_stream_wait(void *stream, void *event);
/* Blocks the host until the event has completed (never used on the hot path
 * except to recycle a buffer whose last use the event marks). */
ladle_status ladle__cuda_event_sync(void *event);
/* Blocks the host until the work queued on `stream` so far has completed
 * (exit paths: a stream whose work could not be joined by an event). */
ladle_status ladle__cuda_stream_sync(void *stream);
/* Non-blocking: *done = 1 when the event has completed. */
ladle_status ladle__cuda_event_done(void *event, int *done);

/* Asynchronous copies on `stream` (cudaMemcpyDefault: the direction is taken
 * from the pointers; pinned host memory makes host<->device copies truly
 * asynchronous). */
ladle_status ladle__cuda_copy(void *dst, const void *src, size_t bytes, void *stream);

/* ------------------------------------------------------------------------ */
/* Build info                                                                 */
/* ------------------------------------------------------------------------ */

/*
 * JSON members (no braces) describing what is found at run time, e.g.
 *   "cuda_devices": 1, "cuda_device_name": "NVIDIA H200", "cuda_runtime": 13000,
 *   "cuda_driver": 13000
 * and without a device:  "cuda_devices": 0, "cuda_runtime": 13000,
 *   "cuda_driver": 0
 * (cuda_device_name describes device 0). Computed once (it creates a CUDA
 * context on device 0), static, thread-safe. ladle_build_info() (src/info.c)
 * includes it and adds nvJPEG's facts.
 */
const char *ladle__cuda_runtime_info(void);


#ifdef __cplusplus
}
#endif

#endif /* LADLE_HAVE_CUDA */
#endif
