/* The executor's GPU side (see gpu.h). Host memory that queued GPU work reads
 * (encoded images, staged CPU decodes, launch parameters) is kept per
 * iteration and released once that iteration's event has completed; device
 * memory is reused in stream order. Nothing here blocks the host unless more
 * than max_in_flight iterations are still running on the GPU. */
#include "pipeline/gpu.h"

#include <stdlib.h>
#include <string.h>

#ifdef LADLE_HAVE_CUDA
#include "core/array.h"
#include "cuda/runtime.h"

typedef struct kept {
  ladle_batch **batches;
  int num_batches, cap_batches;
  struct kept_block {
    ladle__block *block;
    ladle__pool *pool; /* where it goes back */
  } *blocks;
  int num_blocks, cap_blocks;
  void *event;
} kept;

struct ladle__gpu_state {
  ladle__gpu gpu;
  ladle__gpu side; /* stream NULL: no side stream */
  void *side_done; /* recorded on the side stream by ladle__gpu_side_join */
  kept *ring; /* max_in_flight + 1 entries: [head, head + count) are in flight, the next is current */
  int size, head, count;
};

static kept *current(ladle__gpu_state *s) { return &s->ring[(s->head + s->count) % s->size]; }

static void release_kept(kept *k) {
  for (int i = 0; i < k->num_batches; i++) ladle_batch_release(k->batches[i]);
  for (int i = 0; i < k->num_blocks; i++) ladle__pool_free(k->blocks[i].pool, k->blocks[i].block);
  k->num_batches = k->num_blocks = 0;
}

ladle_status ladle__gpu_state_create(int device_id, int max_in_flight, size_t pinned_cap,
                                     ladle_thread_pool *workers, ladle__gpu_state **out) {
  ladle_status st = LADLE_OK;
  ladle__gpu_state *s = NULL;
  int previous = -1;
  int count = ladle__cuda_device_count();
  LADLE_CHECK(device_id >= 0 && device_id < count, LADLE_ERROR_NOT_AVAILABLE,
              "the pipeline has GPU operators but device_id %d is not a CUDA device (this machine has %d)",
              device_id, count);
  LADLE_ALLOC(s, 1);
  s->size = max_in_flight + 1;
  LADLE_ALLOC(s->ring, s->size);
  LADLE_TRY(ladle__cuda_use_device(device_id, &previous));
  for (int i = 0; i < s->size; i++) LADLE_TRY(ladle__cuda_event_create(device_id, &s->ring[i].event));
  /* The loader works ahead of the consumer: its kernels yield to the training
   * step's. LADLE_STREAM_PRIORITY=normal measures the difference. */
  const char *priority = getenv("LADLE_STREAM_PRIORITY");
  int low = !(priority && strcmp(priority, "normal") == 0);
  LADLE_TRY(ladle__cuda_stream_create(low, &s->gpu.stream));
  ladle__allocator device = ladle__cuda_device_allocator(device_id);
  ladle__allocator pinned = ladle__cuda_pinned_allocator(device_id);
  LADLE_TRY(ladle__pool_create(&device, (size_t)8 << 30, &s->gpu.device_pool));
  LADLE_TRY(ladle__pool_create(&pinned, pinned_cap, &s->gpu.pinned_pool));
  s->gpu.device_id = device_id;
  s->gpu.workers = workers;
  s->gpu.state = s;
  /* LADLE_OWN_STREAM=0: side nodes run on the pipeline's stream (measures the difference). */
  const char *own = getenv("LADLE_OWN_STREAM");
  if (!(own && strcmp(own, "0") == 0)) {
    s->side = s->gpu;
    s->side.stream = NULL;
    s->side.device_pool = NULL;
    LADLE_TRY(ladle__cuda_stream_create(low, &s->side.stream));
    LADLE_TRY(ladle__pool_create(&device, (size_t)8 << 30, &s->side.device_pool));
    LADLE_TRY(ladle__cuda_event_create(device_id, &s->side_done));
  }
  ladle__cuda_restore_device(previous);
  *out = s;
  return LADLE_OK;
done:
  if (previous >= 0) ladle__cuda_restore_device(previous);
  ladle__gpu_state_destroy(s);
  return st;
}

void ladle__gpu_state_destroy(ladle__gpu_state *s) {
  if (!s) return;
  if (s->side.stream) (void)ladle__cuda_stream_sync(s->side.stream);
  for (int i = 0; s->ring && i < s->size; i++) {
    if (s->ring[i].event) ladle__cuda_event_sync(s->ring[i].event);
  }
  for (int i = 0; s->ring && i < s->size; i++) {
    release_kept(&s->ring[i]);
    ladle__cuda_event_destroy(s->ring[i].event);
    free(s->ring[i].batches);
    free(s->ring[i].blocks);
  }
  free(s->ring);
  if (s->side_done) ladle__cuda_event_destroy(s->side_done);
  if (s->side.stream) ladle__cuda_stream_destroy(s->side.stream);
  ladle__pool_release(s->side.device_pool);
  ladle__cuda_stream_destroy(s->gpu.stream);
  ladle__pool_release(s->gpu.device_pool);
  ladle__pool_release(s->gpu.pinned_pool);
  free(s);
}

ladle__gpu *ladle__gpu_of(ladle__gpu_state *s) { return &s->gpu; }

ladle__gpu *ladle__gpu_side(ladle__gpu_state *s) { return s->side.stream ? &s->side : NULL; }

ladle_status ladle__gpu_side_join(ladle__gpu_state *s, ladle_batch **outputs, int num_outputs) {
  ladle_status st = LADLE_OK;
  for (int i = 0; i < num_outputs; i++)
    if (outputs[i] && st == LADLE_OK) st = ladle__gpu_keep(&s->side, outputs[i]);
  ladle_status rec = ladle__cuda_event_record(s->side_done, s->side.stream);
  if (rec == LADLE_OK) rec = ladle__cuda_stream_wait(s->gpu.stream, s->side_done);
  if (rec != LADLE_OK) (void)ladle__cuda_stream_sync(s->side.stream); /* no order on the GPU: wait on the host */
  return st != LADLE_OK ? st : rec;
}

ladle_status ladle__gpu_begin(ladle__gpu_state *s) {
  ladle_status st = ladle__cuda_use_device(s->gpu.device_id, NULL);
  while (st == LADLE_OK && s->count > 0) {
    kept *oldest = &s->ring[s->head];
    int done = 0;
    if (s->count == s->size - 1) st = ladle__cuda_event_sync(oldest->event), done = st == LADLE_OK;
    else st = ladle__cuda_event_done(oldest->event, &done);
    if (st != LADLE_OK || !done) break;
    release_kept(oldest);
    s->head = (s->head + 1) % s->size;
    s->count--;
  }
  return st;
}

ladle_status ladle__gpu_end(ladle__gpu_state *s, ladle_batch **outputs, int num_outputs) {
  ladle_status st = LADLE_OK;
  kept *k = current(s);
  LADLE_TRY(ladle__cuda_event_record(k->event, s->gpu.stream));
  s->count++;
  for (int i = 0; i < num_outputs; i++) {
    ladle_batch *b = outputs[i];
    if (!b || b->device != LADLE_DEVICE_CUDA || b->ready_event) continue;
    LADLE_TRY(ladle__cuda_event_create(s->gpu.device_id, &b->ready_event));
    LADLE_TRY(ladle__cuda_event_record(b->ready_event, s->gpu.stream));
  }
done:
  return st;
}

ladle_status ladle__gpu_keep(ladle__gpu *g, ladle_batch *batch) {
  kept *k = current(g->state);
  ladle_status st = ladle__grow_array((void **)&k->batches, &k->cap_batches, k->num_batches + 1, sizeof *k->batches);
  if (st != LADLE_OK) return st;
  ladle_batch_retain(batch);
  k->batches[k->num_batches++] = batch;
  return LADLE_OK;
}

static ladle_status keep_block(ladle__gpu *g, ladle__pool *pool, size_t bytes, void **data) {
  kept *k = current(g->state);
  ladle_status st = ladle__grow_array((void **)&k->blocks, &k->cap_blocks, k->num_blocks + 1, sizeof *k->blocks);
  ladle__block *b = NULL;
  if (st == LADLE_OK) st = ladle__pool_alloc(pool, bytes, &b);
  if (st != LADLE_OK) return st;
  k->blocks[k->num_blocks++] = (struct kept_block){b, pool};
  *data = b->data;
  return LADLE_OK;
}

ladle_status ladle__gpu_params(ladle__gpu *g, size_t bytes, void **host, void **dev) {
  ladle_status st = keep_block(g, g->pinned_pool, bytes, host);
  return st == LADLE_OK ? keep_block(g, g->device_pool, bytes, dev) : st;
}

ladle_status ladle__gpu_host_scratch(ladle__gpu *g, size_t bytes, void **host) {
  return keep_block(g, g->pinned_pool, bytes, host);
}

ladle_status ladle__gpu_device_scratch(ladle__gpu *g, size_t bytes, void **dev) {
  return keep_block(g, g->device_pool, bytes, dev);
}

#else /* no CUDA: pipelines with GPU operators cannot be built */

ladle_status ladle__gpu_state_create(int device_id, int max_in_flight, size_t pinned_cap,
                                     ladle_thread_pool *workers, ladle__gpu_state **out) {
  return LADLE_FAIL(LADLE_ERROR_NOT_AVAILABLE, "this build of ladle has no CUDA support");
}
void ladle__gpu_state_destroy(ladle__gpu_state *s) {}
ladle__gpu *ladle__gpu_of(ladle__gpu_state *s) { return NULL; }
ladle__gpu *ladle__gpu_side(ladle__gpu_state *s) { return NULL; }
ladle_status ladle__gpu_side_join(ladle__gpu_state *s, ladle_batch **outputs, int num_outputs) { return LADLE_OK; }
ladle_status ladle__gpu_begin(ladle__gpu_state *s) { return LADLE_OK; }
ladle_status ladle__gpu_end(ladle__gpu_state *s, ladle_batch **outputs, int n) { return LADLE_OK; }
ladle_status ladle__gpu_params(ladle__gpu *g, size_t bytes, void **host, void **dev) {
  return LADLE_FAIL(LADLE_ERROR_NOT_AVAILABLE, "no CUDA support");
}
ladle_status ladle__gpu_keep(ladle__gpu *g, ladle_batch *batch) {
  return LADLE_FAIL(LADLE_ERROR_NOT_AVAILABLE, "no CUDA support");
}
ladle_status ladle__gpu_host_scratch(ladle__gpu *g, size_t bytes, void **host) {
  return LADLE_FAIL(LADLE_ERROR_NOT_AVAILABLE, "no CUDA support");
}
ladle_status ladle__gpu_device_scratch(ladle__gpu *g, size_t bytes, void **dev) {
  return LADLE_FAIL(LADLE_ERROR_NOT_AVAILABLE, "no CUDA support");
}
#endif
