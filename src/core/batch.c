/* Batch creation, the public accessors and reference counting. */
#include "core/batch.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

#ifdef LADLE_HAVE_CUDA
#include "cuda/runtime.h"

static int fence_done(void *event) {
  int done = 1;
  return ladle__cuda_event_done(event, &done) != LADLE_OK || done;
}

/* Device memory a consumer's stream may still read goes back to the pool only
 * once that stream has passed this point. Without a fence (no memory for an
 * event), the block is freed with the host waiting for the stream. */
static void free_device_block(ladle_batch *b) {
  void *stream = atomic_load(&b->consumer_stream);
  void *event = NULL;
  if (b->consumed && ladle__cuda_event_create(b->device_id, &event) == LADLE_OK &&
      ladle__cuda_event_record(event, stream) == LADLE_OK) {
    ladle__pool_free_after(b->data_pool, b->data_block,
                           (ladle__fence){fence_done, ladle__cuda_event_destroy, event});
    return;
  }
  if (event) {
    ladle__cuda_event_sync(event);
    ladle__cuda_event_destroy(event);
  }
  ladle__pool_free(b->data_pool, b->data_block);
}
#endif

size_t ladle_dtype_size(ladle_dtype dtype) {
  static const size_t sizes[LADLE_DTYPE_COUNT] = {1, 4, 4, 2, 8, 1, 2, 2, 4, 8, 8, 1};
  return (unsigned)dtype < LADLE_DTYPE_COUNT ? sizes[dtype] : 0;
}

const char *ladle_dtype_name(ladle_dtype dtype) {
  static const char *const names[LADLE_DTYPE_COUNT] = {"uint8", "int32", "float32", "float16",
                                                       "int64", "int8",  "int16",   "uint16",
                                                       "uint32", "uint64", "float64", "bool"};
  return (unsigned)dtype < LADLE_DTYPE_COUNT ? names[dtype] : "invalid";
}

int64_t ladle__batch_sample_elems(const ladle_batch *b, int i) {
  int64_t n = 1;
  for (int d = 0; d < b->ndim; d++) n *= b->shapes[(size_t)i * b->ndim + d];
  return n;
}

void ladle__batch_set_layout(ladle_batch *b, const char *layout) {
  memset(b->layout, 0, sizeof b->layout);
  if (layout) strncpy(b->layout, layout, sizeof b->layout - 1);
}

/* A batch without its data, from meta_pool: the header, the shapes (one per
 * sample, or `shapes[0..ndim)` for every sample when one_shape) and the byte
 * offsets they give. The caller sets data, device and the owner of the data. */
static ladle_status new_header(ladle__pool *meta_pool, ladle_dtype dtype, int num_samples, int ndim,
                               const int64_t *shapes, int one_shape, const char *layout, ladle_batch **out) {
  ladle_status st = LADLE_OK;
  ladle__block *meta = NULL;
  LADLE_CHECK(num_samples >= 0 && ndim >= 0 && ndim <= LADLE_MAX_NDIM, LADLE_ERROR_INVALID_ARGUMENT,
              "bad batch geometry: %d samples of %d dimensions", num_samples, ndim);
  LADLE_CHECK(ladle_dtype_size(dtype) > 0, LADLE_ERROR_INVALID_ARGUMENT, "bad dtype %d", (int)dtype);
  size_t shape_bytes = sizeof(int64_t) * (size_t)num_samples * (size_t)ndim;
  size_t offset_bytes = sizeof(size_t) * ((size_t)num_samples + 1);
  LADLE_TRY(ladle__pool_alloc(meta_pool, sizeof(ladle_batch) + shape_bytes + offset_bytes, &meta));
  ladle_batch *b = meta->data;
  memset(b, 0, sizeof *b);
  b->shapes = (int64_t *)(b + 1);
  b->offsets = (size_t *)((uint8_t *)b->shapes + shape_bytes);
  if (!one_shape && shape_bytes) memcpy(b->shapes, shapes, shape_bytes);
  for (int i = 0; one_shape && ndim && i < num_samples; i++)
    memcpy(b->shapes + (size_t)i * ndim, shapes, sizeof(int64_t) * (size_t)ndim);
  b->dtype = dtype;
  b->ndim = ndim;
  b->num_samples = num_samples;
  b->dense = 1;
  size_t elem = ladle_dtype_size(dtype), total = 0;
  for (int i = 0; i < num_samples; i++) {
    b->offsets[i] = total;
    int64_t n = ladle__batch_sample_elems(b, i);
    LADLE_CHECK(n >= 0, LADLE_ERROR_INVALID_ARGUMENT, "sample %d has a negative extent", i);
    total += (size_t)n * elem;
    if (i > 0 && memcmp(b->shapes + (size_t)i * ndim, b->shapes, sizeof(int64_t) * ndim) != 0)
      b->dense = 0;
  }
  b->offsets[num_samples] = total;
  ladle__batch_set_layout(b, layout);
  atomic_init(&b->refs, 1);
  b->meta_pool = meta_pool;
  b->meta_block = meta;
  ladle__pool_retain(meta_pool);
  *out = b;
  return LADLE_OK;
done:
  ladle__pool_free(meta_pool, meta);
  return st;
}

/* Frees what new_header made. */
static void free_header(ladle_batch *b) {
  ladle__pool *meta_pool = b->meta_pool;
  ladle__pool_free(meta_pool, b->meta_block);
  ladle__pool_release(meta_pool);
}

ladle_status ladle__batch_create(ladle__pool *meta_pool, ladle__pool *data_pool, ladle_dtype dtype,
                                 int num_samples, int ndim, const int64_t *shapes,
                                 const char *layout, ladle_batch **out) {
  ladle_batch *b = NULL;
  ladle__block *data = NULL;
  ladle_status st = new_header(meta_pool, dtype, num_samples, ndim, shapes, 0, layout, &b);
  if (st != LADLE_OK) return st;
  st = ladle__pool_alloc(data_pool, b->offsets[num_samples], &data);
  if (st != LADLE_OK) {
    free_header(b);
    return st;
  }
  b->data = data->data;
  b->device = ladle__pool_device(data_pool);
  b->data_pool = data_pool;
  b->data_block = data;
  ladle__pool_retain(data_pool);
  *out = b;
  return LADLE_OK;
}

ladle_status ladle__batch_shapes(ladle__pool *meta_pool, ladle_dtype dtype, int num_samples, int ndim,
                                 const int64_t *shapes, const char *layout, ladle_device device, ladle_batch **out) {
  ladle_status st = new_header(meta_pool, dtype, num_samples, ndim, shapes, 0, layout, out);
  if (st == LADLE_OK) (*out)->device = device;
  return st;
}

/* A view's release: what consumed the view consumed its parent's memory. */
static void release_view(void *ctx) {
  ladle_batch *view = ctx, *parent = view->parent;
  if (view->consumed) {
    atomic_store(&parent->consumer_stream, atomic_load(&view->consumer_stream));
    parent->consumed = 1;
  }
  ladle_batch_release(parent);
}

ladle_status ladle__batch_view(ladle__pool *meta_pool, ladle_batch *parent, ladle_dtype dtype, int ndim,
                               const int64_t *shapes, const char *layout, ladle_batch **out) {
  ladle_batch *b = NULL;
  ladle_status st = new_header(meta_pool, dtype, parent->num_samples, ndim, shapes, 0, layout, &b);
  if (st != LADLE_OK) return st;
  for (int i = 0; i <= parent->num_samples; i++)
    if (b->offsets[i] != parent->offsets[i]) {
      free_header(b);
      return LADLE_FAIL(LADLE_ERROR_INVALID_ARGUMENT, "a view of sample %d would change its size in bytes", i);
    }
  b->data = parent->data;
  b->device = parent->device;
  b->device_id = parent->device_id;
  b->parent = parent;
  b->release = release_view;
  b->release_ctx = b;
  ladle_batch_retain(parent);
  *out = b;
  return LADLE_OK;
}

void ladle_batch_retain(ladle_batch *b) { atomic_fetch_add(&b->refs, 1); }

void ladle_batch_release(ladle_batch *b) {
  if (!b || atomic_fetch_sub(&b->refs, 1) != 1) return;
  ladle__pool *data_pool = b->data_pool;
  if (!data_pool) { /* wrapped memory or a view: its owner frees it */
#ifdef LADLE_HAVE_CUDA
    ladle__cuda_event_destroy(b->ready_event);
#endif
    if (b->release) b->release(b->release_ctx);
    free_header(b);
    return;
  }
#ifdef LADLE_HAVE_CUDA
  ladle__cuda_event_destroy(b->ready_event);
  if (b->device == LADLE_DEVICE_CUDA)
    free_device_block(b);
  else
    ladle__pool_free(data_pool, b->data_block);
#else
  ladle__pool_free(data_pool, b->data_block);
#endif
  free_header(b);
  ladle__pool_release(data_pool);
}

int ladle_batch_num_samples(const ladle_batch *b) { return b->num_samples; }
ladle_dtype ladle_batch_dtype(const ladle_batch *b) { return b->dtype; }
int ladle_batch_ndim(const ladle_batch *b) { return b->ndim; }
const char *ladle_batch_layout(const ladle_batch *b) { return b->layout; }
ladle_device ladle_batch_device(const ladle_batch *b) { return b->device; }
int ladle_batch_device_id(const ladle_batch *b) { return b->device_id; }
int ladle_batch_is_dense(const ladle_batch *b) { return b->dense; }

const int64_t *ladle_batch_shape(const ladle_batch *b, int i) {
  return (i >= 0 && i < b->num_samples) ? b->shapes + (size_t)i * b->ndim : NULL;
}

void *ladle_batch_data(const ladle_batch *b, int i) {
  return (i >= 0 && i < b->num_samples) ? b->data + b->offsets[i] : NULL;
}

ladle_status ladle_batch_wait(const ladle_batch *b, void *stream) {
  if (b->device != LADLE_DEVICE_CUDA) return LADLE_OK;
#ifdef LADLE_HAVE_CUDA
  ladle_batch *mut = (ladle_batch *)b; /* the consumer's stream is bookkeeping, not data */
  atomic_store(&mut->consumer_stream, stream);
  mut->consumed = 1;
  return b->ready_event ? ladle__cuda_stream_wait(stream, b->ready_event) : LADLE_OK;
#else
  return LADLE_FAIL(LADLE_ERROR_NOT_AVAILABLE, "a CUDA batch in a build without CUDA");
#endif
}

/* Batches fed from outside share one process-wide host pool, created once
 * and kept for the life of the process. */
static ladle__pool *external_pool;
static pthread_once_t external_pool_once = PTHREAD_ONCE_INIT;
static void make_external_pool(void) {
  if (ladle__pool_create(&ladle__host_allocator, (size_t)256 << 20, &external_pool) != LADLE_OK)
    external_pool = NULL;
}

ladle_status ladle_batch_create_cpu(ladle_dtype dtype, int num_samples, int ndim,
                                    const int64_t *shapes, const char *layout, const void *data,
                                    ladle_batch **out) {
  pthread_once(&external_pool_once, make_external_pool);
  if (!external_pool) return LADLE_FAIL(LADLE_ERROR_OUT_OF_MEMORY, "cannot create the host pool");
  if (num_samples > 0 && ndim > 0 && !shapes)
    return LADLE_FAIL(LADLE_ERROR_INVALID_ARGUMENT, "shapes is NULL");
  ladle_batch *b = NULL;
  ladle_status st = ladle__batch_create(external_pool, external_pool, dtype, num_samples, ndim,
                                        shapes, layout, &b);
  if (st != LADLE_OK) return st;
  if (data) memcpy(b->data, data, b->offsets[num_samples]);
  *out = b;
  return LADLE_OK;
}

/* ladle_batch_wrap(_samples): one shape for all samples when one_shape. */
static ladle_status wrap(ladle_dtype dtype, int num_samples, int ndim, const int64_t *shapes, int one_shape,
                         const char *layout, ladle_device device, int device_id, void *data,
                         void (*release)(void *ctx), void *release_ctx, ladle_batch **out) {
  ladle_status st = LADLE_OK;
  ladle_batch *b = NULL;
  pthread_once(&external_pool_once, make_external_pool);
  LADLE_CHECK(external_pool, LADLE_ERROR_OUT_OF_MEMORY, "cannot create the host pool");
  LADLE_CHECK(out && (data || num_samples == 0) && (shapes || ndim == 0 || num_samples == 0),
              LADLE_ERROR_INVALID_ARGUMENT, "NULL argument");
  LADLE_CHECK(device == LADLE_DEVICE_CPU || device == LADLE_DEVICE_CUDA, LADLE_ERROR_INVALID_ARGUMENT,
              "wrapped memory must be host (CPU) or CUDA device memory, got device kind %d", (int)device);
  LADLE_TRY(new_header(external_pool, dtype, num_samples, ndim, shapes, one_shape, layout, &b));
  b->data = data;
  b->device = device;
  b->device_id = device == LADLE_DEVICE_CUDA ? device_id : 0;
  b->release = release;
  b->release_ctx = release_ctx;
  *out = b;
done:
  return st;
}

ladle_status ladle_batch_wrap(ladle_dtype dtype, int num_samples, int ndim, const int64_t *sample_shape,
                              const char *layout, ladle_device device, int device_id, void *data,
                              void (*release)(void *ctx), void *release_ctx, ladle_batch **out) {
  return wrap(dtype, num_samples, ndim, sample_shape, 1, layout, device, device_id, data, release, release_ctx, out);
}

ladle_status ladle_batch_wrap_samples(ladle_dtype dtype, int num_samples, int ndim, const int64_t *shapes,
                                      const char *layout, ladle_device device, int device_id, void *data,
                                      void (*release)(void *ctx), void *release_ctx, ladle_batch **out) {
  return wrap(dtype, num_samples, ndim, shapes, 0, layout, device, device_id, data, release, release_ctx, out);
}

ladle_status ladle_batch_record_ready(ladle_batch *b, void *stream) {
  ladle_status st = LADLE_OK;
  LADLE_CHECK(b, LADLE_ERROR_INVALID_ARGUMENT, "NULL batch");
  LADLE_CHECK(!b->data_pool && !b->parent, LADLE_ERROR_INVALID_ARGUMENT,
              "only a batch over the caller's memory (ladle_batch_wrap) takes a ready point; ladle orders its own");
  if (b->device != LADLE_DEVICE_CUDA) return LADLE_OK;
#ifdef LADLE_HAVE_CUDA
  int prev = -1;
  if (!b->ready_event) LADLE_TRY(ladle__cuda_event_create(b->device_id, &b->ready_event));
  LADLE_TRY(ladle__cuda_use_device(b->device_id, &prev)); /* the legacy stream handles name this device's */
  st = ladle__cuda_event_record(b->ready_event, stream);
  ladle__cuda_restore_device(prev);
#else
  st = LADLE_FAIL(LADLE_ERROR_NOT_AVAILABLE, "a CUDA batch in a build without CUDA");
#endif
done:
  return st;
}
