/* The executor's GPU side: the pipeline's stream and pools, and the
 * iterations whose GPU work is still in flight, with the host memory that
 * work reads (kept until an event says the work is done). */
#ifndef LADLE_PIPELINE_GPU_H
#define LADLE_PIPELINE_GPU_H

#include "ops/op.h"

typedef struct ladle__gpu_state ladle__gpu_state;

/* Creates the stream and the device and pinned pools on `device_id`; keeps at
 * most `max_in_flight` iterations' memory before waiting for the oldest. */
ladle_status ladle__gpu_state_create(int device_id, int max_in_flight, size_t pinned_cap,
                                     ladle_thread_pool *workers, ladle__gpu_state **out);
/* Waits for all queued work, then frees everything. NULL allowed. */
void ladle__gpu_state_destroy(ladle__gpu_state *s);

/* What operators get (stream, pools, workers). */
ladle__gpu *ladle__gpu_of(ladle__gpu_state *s);

/* Starts an iteration: releases what finished iterations kept. */
ladle_status ladle__gpu_begin(ladle__gpu_state *s);
/* Ends an iteration (also a failed one): records its event, gives each CUDA
 * output batch a ready event. */
ladle_status ladle__gpu_end(ladle__gpu_state *s, ladle_batch **outputs, int num_outputs);

#endif
