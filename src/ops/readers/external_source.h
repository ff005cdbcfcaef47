/* external_source's queue of fed batches, for the pipeline (feeding) and the
 * executor (taking one per iteration). Callers hold the pipeline's lock. */
#ifndef LADLE_OPS_EXTERNAL_SOURCE_H
#define LADLE_OPS_EXTERNAL_SOURCE_H

#include "ops/op.h"

/* Whether `batch` fits source `node`: memory kind, dtype, rank, and 1 to
 * max_samples samples. Sets the message naming the source. */
ladle_status ladle__external_check(const ladle__node *node, const ladle_batch *batch, int max_samples);
/* Queues `batch` (a new reference is taken). */
ladle_status ladle__external_push(ladle__node *node, ladle_batch *batch);
/* The oldest queued batch (the caller gets its reference), or NULL. */
ladle_batch *ladle__external_pop(ladle__node *node);
int ladle__external_count(const ladle__node *node);

#endif
