/* What the random and noise operators share: a node state naming the formula
 * (random_kernel.h) and its table, and the CPU and GPU runs over a batch of
 * ladle__rand_sample filled in each operator's setup. */
#ifndef LADLE_OPS_RANDOM_OP_H
#define LADLE_OPS_RANDOM_OP_H

#include "ops/op.h"
#include "ops/random/random_kernel.h"

typedef struct ladle__rand_state {
  int kind;        /* ladle__rand_kind */
  int table_len;
  double table[];  /* uniform's values, choice's cumulative p */
} ladle__rand_state;

/* Sets node->state for `kind` with a copy of table[0..len). */
ladle_status ladle__rand_state_init(ladle__node *n, int kind, const double *table, int len);
void ladle__rand_fini(ladle__node *n);
/* The sample's ladle__rand_sample (its state) with rng, count and group 1 set. */
ladle__rand_sample *ladle__rand_setup_sample(ladle__node *n, ladle__sample *s, int64_t count);
/* Writes output 0 of one sample from its state (and input 0, if any). */
ladle_status ladle__rand_run(ladle__node *n, ladle__sample *s);
/* The GPU form of ladle__rand_run for the whole batch (NULL without CUDA). */
#ifdef LADLE_HAVE_CUDA
ladle_status ladle__rand_run_batch(ladle__node *n, ladle__gpu *g);
#define LADLE_RAND_RUN_BATCH ladle__rand_run_batch
#else
#define LADLE_RAND_RUN_BATCH NULL
#endif

#endif
