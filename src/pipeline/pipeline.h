/* The pipeline: its graph of nodes and values, and the executor that runs
 * iterations ahead of the consumer. */
#ifndef LADLE_PIPELINE_PIPELINE_H
#define LADLE_PIPELINE_PIPELINE_H

#include <pthread.h>
#include <stdatomic.h>
#include <sys/types.h>

#include "core/array.h"
#include "core/threads.h"
#include "ops/op.h"
#include "pipeline/skip.h"

/* Fed batches (and seeds) a pipeline may hold beyond the prefetch depth (ladle_pipeline_feed). */
#define LADLE__FEED_MARGIN 8

/* A value: output `output` of node `node`. */
typedef struct ladle__value_ref {
  int node, output;
} ladle__value_ref;

/* One finished iteration waiting for the consumer. */
typedef struct ladle__ready {
  int64_t iteration;
  ladle_status status;
  char *error;           /* LADLE_ERROR_MAX bytes, owned by the queue slot */
  ladle_batch **outputs; /* num_outputs */
  int64_t *records;      /* batch_size: the reader's record of each sample (ladle_pipeline_last_records) */
  int num_records;
} ladle__ready;

struct ladle_pipeline {
  ladle_pipeline_params params;
  ladle__pipeline_config config;

  /* The graph. Nodes are kept in the order added, which is topological:
   * inputs must exist before an operator that reads them. */
  ladle__node **nodes;
  int num_nodes, cap_nodes;
  int num_computing; /* nodes that are not data movement: the next random stream id */
  ladle__value_ref *values;
  int num_values, cap_values;
  int *outputs;
  int num_outputs;
  int built;
  ladle__node *reader; /* the first reader: its plan gives every iteration's samples */
  ladle__node **fed;    /* the external_source nodes, fed by ladle_pipeline_feed */
  int num_fed;
  uint64_t *seeds;     /* fed_seeds: a ring of seeds for coming iterations (ladle_pipeline_feed_seed) */
  int seeds_head, seeds_count, seeds_cap;
  uint64_t *iteration_seeds; /* the fed_seeds seeds of the iteration being prepared (config.seeds) */

  /* Resources. */
  struct ladle__gpu_state *gpu; /* when the graph has GPU or mixed operators */
  ladle_thread_pool *pool;
  int owns_pool;
  ladle__pool *host_pool;

  /* The executor's per-iteration scratch (used by the executor thread only). */
  ladle_batch **value_batches; /* num_values */
  ladle__sample_ref *refs;     /* batch_size */
  const char **names;          /* batch_size */
  int64_t *shapes;             /* batch_size * LADLE_MAX_NDIM: one output's shapes */

  /* Executor thread and the queue of finished iterations. */
  pthread_t thread;
  int thread_started;
  pthread_mutex_t lock;
  pthread_cond_t space, ready;
  ladle__ready *queue; /* prefetch_queue_depth slots, a ring */
  int queue_head, queue_count;
  int preparing;               /* the executor is preparing an iteration (outside the lock) */
  int64_t next_iteration;      /* the next one the executor prepares */
  int64_t delivered;           /* iterations handed out by run() */
  int64_t *last_records;       /* batch_size: the records of the iteration run() returned last */
  int num_last_records;
  atomic_uint generation;      /* bumped by set_position and stop: in-flight work is dropped */
  atomic_int stop;

  pid_t pid; /* the process that made it: in a forked child it cannot run */

  /* Which samples each operator computes (pipeline/demand.h); NULL without merges. */
  struct ladle__demand *demand;

  /* Bad samples: the executor writes, the consumer reads under `lock`. */
  ladle__skip_state skip;

  /* Counters for ladle_pipeline_get_stats (written by the executor and run()). */
  _Atomic int64_t stat_iterations, stat_prepare_ns, stat_wait_ns;
};

/* Monotonic clock in nanoseconds, for the counters. */
int64_t ladle__now_ns(void);

/* LADLE_OK, or LADLE_ERROR_STATE in a process forked from the pipeline's. */
ladle_status ladle__pipeline_check_process(const ladle_pipeline *p);

/* On the executor, before a deferred node (ladle__node.deferred) first
 * runs: takes its inputs' descs, now known, and runs its init. */
ladle_status ladle__node_init_late(ladle_pipeline *p, ladle__node *n);

/* Graph-level planning (plan.c): called by ladle_pipeline_build after every
 * operator's init. */
void ladle__plan_graph(ladle_pipeline *p);

/* Starts and stops the executor thread (executor.c). */
ladle_status ladle__executor_start(ladle_pipeline *p);
void ladle__executor_stop(ladle_pipeline *p);

#endif
