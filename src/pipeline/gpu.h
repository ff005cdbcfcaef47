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

/* The side stream, for nodes whose op_def sets own_stream (the mixed
 * decoders): what their run_batch gets instead of ladle__gpu_of, with a
 * stream and a device pool of its own. The pipeline's stream is ordered
 * after it by ladle__gpu_side_join, so the JPEG engines' work of iteration
 * i+1 queues behind iteration i's decode only, not behind its kernels.
 * The side pool's memory is used only by batches and scratch that are kept
 * until their iteration's work has completed, so it returns idle and needs
 * no ordering with the pipeline's stream. NULL when LADLE_OWN_STREAM=0. */
ladle__gpu *ladle__gpu_side(ladle__gpu_state *s);
/* After a side node's run_batch, also a failed one: its outputs are kept
 * until the iteration completes, and the pipeline's stream waits for what
 * the side stream queued. */
ladle_status ladle__gpu_side_join(ladle__gpu_state *s, ladle_batch **outputs, int num_outputs);

#endif
