/* The pipeline: its graph of nodes and values, and the executor that runs
 * iterations ahead of the consumer. */
#ifndef LADLE_PIPELINE_PIPELINE_H
#define LADLE_PIPELINE_PIPELINE_H

#include <pthread.h>
#include <stdatomic.h>
#include <sys/types.h>

#include "core/array.h"
#include "core/clock.h"
#include "core/threads.h"
#include "ops/op.h"
#include "pipeline/skip.h"

/* Fed batches (and seeds) a pipeline may hold beyond the prefetch depth (ladle_pipeline_feed). */
#define LADLE__FEED_MARGIN 8

/* A value: output `output` of node `node`. */
typedef struct ladle__value_ref {
  int node, output;
} ladle__value_ref;

/* One iteration on its way through the executor's stages (executor.c):
 * everything that belongs to the iteration rather than to a node, so that
 * the host stage can prepare one iteration while the device stage runs the
 * one before. */
typedef struct ladle__iter {
  int in_use;
  int64_t iteration;
  unsigned generation;            /* p->generation when it started: stale ones are dropped */
  ladle__pipeline_config config;  /* its batch size and seed(s); copied into the stage's config before a node runs */
  uint64_t *seeds;                /* fed_seeds: its seeds (config.seeds) */
  ladle_batch **values;           /* num_values: the batch of each value computed so far */
  ladle_batch **outputs;          /* num_outputs: the pipeline's outputs once done */
  ladle_batch **fed;              /* num_fed: the fed batches kept for another attempt (skipping, fed only), or NULL */
  ladle__sample_ref *refs;        /* batch_size: its samples */
  const char **names;             /* batch_size: their names, or NULL */
  int64_t *shapes;                /* batch_size * LADLE_MAX_NDIM: one output's shapes */
  unsigned char *failed;          /* batch_size (skipping): slots that failed with a data error in this attempt */
  char **messages;                /* batch_size (skipping): their messages, LADLE_ERROR_MAX each */
  int64_t *setup_shapes;          /* setup_ahead: the device stage's first node's out_shapes, */
  uint8_t *setup_states;          /* and its sample states, set up by the host stage */
  int setup_done;                 /* they hold this iteration's */
  ladle_status status;            /* the host stage's result, handed to the device stage */
  int skippable;                  /* with status: it failed on bad data only */
  char *error;                    /* LADLE_ERROR_MAX: the host stage's message */
  int64_t mark_ns;                /* the stage's time is counted up to here (executor.c, count_time) */
  _Atomic int64_t *stage_ns;      /* and into this stage counter (NULL with one stage) */
} ladle__iter;

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

  /* Resources. */
  struct ladle__gpu_state *gpu; /* when the graph has GPU or mixed operators */
  ladle_thread_pool *pool;
  int owns_pool;
  ladle__pool *host_pool;

  /* The executor's stages (executor.c): nodes [0, split) are the host
   * stage, run by `thread`; with split < num_nodes the rest is the device
   * stage, run by `device_thread` (their nodes read config_b); positions in
   * `order`, the node indices in the order the executor runs them. */
  int split;
  int *order;
  ladle__pipeline_config config_b, config_base; /* config_base: an iteration's before it takes fed data */
  int setup_ahead;          /* the host stage also runs the setup pass of node `split` (executor.c) */
  int64_t inline_ns;        /* a pass whose samples took at most this runs on the stage's thread (executor.c) */
  ladle__node setup_copy;   /* on this copy of it */
  ladle__iter *iters; /* 1, or 3 with two stages: one in each stage and the one handed between */
  int num_iters;
  ladle__iter *handoff;   /* prepared by the host stage, waiting for the device stage */
  int host_busy;          /* the host thread is preparing an iteration (outside the lock) */
  int pause_host;         /* the device thread runs an iteration through every node: the host thread waits */

  /* Executor threads and the queue of finished iterations. */
  pthread_t thread, device_thread;
  int thread_started, device_thread_started;
  pthread_mutex_t lock;
  pthread_cond_t space, ready;
  ladle__ready *queue; /* prefetch_queue_depth slots, a ring */
  int queue_head, queue_count;
  int preparing;               /* iterations the executor is preparing (taken, not yet queued or dropped) */
  int64_t next_iteration;      /* the next one the executor prepares */
  int64_t delivered;           /* iterations handed out by run() */
  int64_t *last_records;       /* batch_size: the records of the iteration run() returned last */
  int num_last_records;
  atomic_uint generation;      /* bumped by set_position and stop: in-flight work is dropped */
  atomic_int stop;

  pid_t pid; /* the process that made it: in a forked child it cannot run */

  /* Which samples each operator computes (pipeline/demand.h); NULL without merges. */
  struct ladle__demand *demand;

  /* Bad samples: the executor writes (with two stages: the device thread,
   * while the host thread waits), the consumer reads under `lock`. */
  ladle__skip_state skip;

  /* Counters for ladle_pipeline_get_stats (written by the executor and run()). */
  _Atomic int64_t stat_iterations, stat_prepare_ns, stat_wait_ns, stat_host_ns, stat_device_ns, stat_gpu_wait_ns;
};

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
