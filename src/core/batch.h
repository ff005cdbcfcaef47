/* Batches: the samples of one operator output for one iteration. The samples
 * lie back to back in one block (so a batch of one shape is a dense [N, ...]
 * tensor); the header, shapes and offsets live in a second, host block. */
#ifndef LADLE_CORE_BATCH_H
#define LADLE_CORE_BATCH_H

#include <stdatomic.h>

#include "core/pool.h"

struct ladle_batch {
  atomic_int refs;
  ladle_dtype dtype;
  int ndim;
  int num_samples;
  int dense;
  char layout[8];
  ladle_device device;
  int device_id;
  int64_t *shapes;  /* num_samples * ndim */
  size_t *offsets;  /* num_samples + 1 byte offsets into data; offsets[n] = total bytes */
  uint8_t *data;
  void *ready_event; /* cudaEvent_t recorded after the batch's last write, or NULL */
  _Atomic(void *) consumer_stream; /* the last stream made to wait for the batch (CUDA) */
  int consumed;                    /* 1 once consumer_stream is set */
  ladle__pool *meta_pool, *data_pool;
  ladle__block *meta_block, *data_block;
  /* Memory owned outside (ladle_batch_wrap): no data pool or block; this is
   * called instead when the last reference goes. */
  void (*release)(void *ctx);
  void *release_ctx;
  ladle_batch *parent; /* a view's batch (ladle__batch_view), holding one reference; else NULL */
};

/* A batch with the given shapes (num_samples * ndim values), its data taken
 * from data_pool and its header from meta_pool (a host pool). The caller owns
 * the one reference. */
ladle_status ladle__batch_create(ladle__pool *meta_pool, ladle__pool *data_pool, ladle_dtype dtype,
                                 int num_samples, int ndim, const int64_t *shapes,
                                 const char *layout, ladle_batch **out);

/* A view of `parent`'s memory with other shapes, type or layout (reshape,
 * squeeze...): every sample must keep its byte size, so the samples lie where
 * they lay. The view holds a reference to `parent` and, when released, hands
 * on the stream that consumed it, so that parent's device memory is reused
 * only after that stream is done with it. The caller owns the one reference. */
ladle_status ladle__batch_view(ladle__pool *meta_pool, ladle_batch *parent, ladle_dtype dtype, int ndim,
                               const int64_t *shapes, const char *layout, ladle_batch **out);

/* A batch of shapes without data (data NULL): the output of a node that its
 * consumer computes itself (an element-wise chain merged into one pass),
 * which nothing reads. The caller owns the one reference. */
ladle_status ladle__batch_shapes(ladle__pool *meta_pool, ladle_dtype dtype, int num_samples, int ndim,
                                 const int64_t *shapes, const char *layout, ladle_device device, ladle_batch **out);

/* Elements in sample i. */
int64_t ladle__batch_sample_elems(const ladle_batch *b, int i);

/* Sets the layout string (at most 7 letters). */
void ladle__batch_set_layout(ladle_batch *b, const char *layout);


#endif
