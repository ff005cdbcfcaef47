/* The worker pool behind every pipeline: parallel loops over samples. */
#ifndef LADLE_CORE_THREADS_H
#define LADLE_CORE_THREADS_H

#include "ladle/ladle.h"

/* Called once per item; `worker` is the index of the thread running it, for
 * per-worker scratch: 0 .. num_threads-1 for the pool's workers, num_threads
 * for the thread waiting in ladle__parallel_wait, which runs the items of its
 * job that no worker has claimed yet. So per-worker state has num_threads + 1
 * entries, and state shared by the jobs of several threads at once must not
 * be indexed by `worker` alone (each waiting thread is num_threads). */
typedef void (*ladle__item_fn)(void *ctx, int item, int worker);

/* A loop in flight; the caller owns its storage until ladle__parallel_wait
 * returns. */
typedef struct ladle__job {
  ladle__item_fn fn;
  void *ctx;
  int n, next, done;
  struct ladle__job *next_job;
} ladle__job;

/* Queues fn(ctx, i, worker) for i in [0, n) and returns at once, so the
 * caller can do other work (queue GPU decodes) while the workers run. */
void ladle__parallel_start(ladle_thread_pool *pool, ladle__job *job, int n, ladle__item_fn fn, void *ctx);
/* Returns when every item of the job has run; runs the unclaimed ones itself. */
void ladle__parallel_wait(ladle_thread_pool *pool, ladle__job *job);

/* Runs fn(ctx, i, worker) for i in [0, n) on the pool and returns when every
 * item has run. Several threads may run loops on one pool at once; their
 * items interleave in arrival order. fn must not call ladle__parallel_for. */
void ladle__parallel_for(ladle_thread_pool *pool, int n, ladle__item_fn fn, void *ctx);

/* Parses a core list such as "0,2,4-7" into cpus (at most max entries).
 * Returns the count, or -1 when the text is malformed. */
int ladle__parse_cpu_list(const char *text, int *cpus, int max);

/* 1 in a process forked after the pool started: its workers are the parent's. */
int ladle__thread_pool_inherited(const ladle_thread_pool *pool);

#endif
