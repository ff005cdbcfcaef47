/* The executor: threads that prepare iterations ahead of the consumer,
 * running each operator over the batch's samples on the worker pool, and a
 * queue of at most prefetch_queue_depth finished iterations.
 *
 * Two stages. The host stage is the readers and the CPU operators that need
 * nothing from a GPU or mixed one (planning the samples, skip substitution,
 * reading, CPU work; plan_order moves the CPU operators added after the
 * first GPU or mixed one ahead of it); the device stage is the rest (the mixed
 * decoder, GPU operators, the GPU bookkeeping of ladle__gpu_begin/end). Each
 * has its thread: the host stage prepares iteration i+1 while the device
 * stage runs iteration i, so the JPEG engines and the GPU do not wait while
 * files are read and CPU work is planned. One prepared iteration at most
 * waits between them (`handoff`). Nodes belong to one stage, so per-node
 * state is touched by one thread; what belongs to the iteration (its value
 * batches, samples and names, batch size and seeds, failed slots) travels
 * in a ladle__iter, and each stage's nodes read their own config (config,
 * config_b). A pipeline whose nodes all run on the CPU has one stage and
 * one thread. Results do not depend on the staging: every random draw is
 * keyed by (seed, operator, sample), and the stages run the same nodes on
 * the same samples as one thread would, each after the nodes it reads.
 *
 * When the device stage's first node allows it (ladle__op_def.setup_ahead:
 * the image decoders, whose setup reads the headers and picks each image's
 * decoder), the host stage may also run that node's setup pass, on a copy of
 * the node (setup_copy) into the iteration's own sample states and shapes,
 * which the device stage takes (take_setup) before its run or run_batch: by
 * default for a CPU node (a forced split), opt-in for a mixed or GPU one.
 *
 * Test and benchmark knobs, read at build:
 *   LADLE_EXECUTOR_STAGES=1   one stage: one thread runs every node (the
 *                             serial executor, for A/B comparisons);
 *   LADLE_EXECUTOR_SPLIT=k    the device stage starts at node k (in the order
 *                             added, 1 <= k <= the number of nodes: k past
 *                             the last node is one stage) if that is earlier
 *                             than the first non-CPU node: tests the two
 *                             stages on the CPU; another value fails the build;
 *   LADLE_EXECUTOR_SETUP_AHEAD=1 (or 0)  the device stage's first node is
 *                             set up ahead by the host stage (or not), whatever
 *                             its device;
 *   LADLE_EXECUTOR_HOIST=0    the nodes run in the order added (no CPU
 *                             operator moves ahead into the host stage);
 *   LADLE_EXECUTOR_INLINE_US=N a pass runs on the stage's thread when its
 *                             samples took at most N µs the last time (0:
 *                             always on the workers).
 * The boundary moves earlier to keep a node and the consumer computing its
 * output (plan.c: fusion, merging) in one stage. There is one stage when the
 * host stage would hold nothing but external sources (a ladle.dynamic call
 * of a GPU operator: a second thread would only add a hand-over), or would
 * not hold the first reader.
 *
 * An operator runs in two parallel passes over the samples: setup (output
 * shapes), then, once each output batch has been taken from the pool in one
 * block, run. The first failing sample (lowest slot) decides the iteration's
 * error, so the message does not depend on thread timing either. A pass whose
 * samples took less than LADLE_EXECUTOR_INLINE_US (default 100 µs) in all
 * the last time runs on the stage's own thread: handing microsecond items
 * (a random draw, a box flip) to 16 workers costs more than the items, in
 * wake-ups and a convoy on the pool's lock (the SSD graph's draws took
 * 200-500 µs per batch of 64 on the H200, 2026-12-02). 0 turns it off.
 *
 * With skip_bad_samples (pipeline/skip.h), a pass goes on past failing
 * samples; when every failure was bad data, their records are logged as bad
 * and the iteration is prepared again with those slots filled from good ones.
 * With two stages, such an iteration (whichever stage failed) is finished
 * by the device thread through every node while the host thread waits
 * (idle, its prepared iteration, if any, handed over); the records are
 * logged in iteration order, and since the next iteration was planned with
 * the records known bad before, it is dropped and planned again (reader
 * pipelines: its substitution depends on them) as one thread would have.
 *
 * A graph with external sources waits until each has a fed batch; that
 * iteration's batch size is the fed batches' (config.batch_size), at most
 * params.batch_size, which everything allocated at build is sized for. The
 * host stage takes the fed batches when it starts an iteration; the device
 * stage orders its stream after the fed GPU batches. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "ops/readers/external_source.h"
#include "pipeline/demand.h"
#include "pipeline/gpu.h"
#include "pipeline/pipeline.h"

#ifdef LADLE_HAVE_CUDA
#include "cuda/runtime.h"
#endif

enum { DEFAULT_INLINE_US = 100 };

typedef struct pass {
  ladle_pipeline *p;
  ladle__iter *t;
  ladle__node *node;
  int setup; /* 1: setup pass, 0: run pass */
  _Atomic int64_t work_ns; /* the samples' own time in this pass, summed */
  int collect;       /* skip_bad_samples: go on past failures, noting data errors per slot */
  int data_failures; /* slots that failed with a data error (collect) */
  int fatal;         /* a failure that is not bad data */
  pthread_mutex_t lock;
  int failed_slot; /* lowest failing slot, or batch_size */
  ladle_status status;
  char error[LADLE_ERROR_MAX];
} pass;

static int abandoned(const pass *ps) {
  return atomic_load(&ps->p->stop) || atomic_load(&ps->p->generation) != ps->t->generation;
}

static void run_sample(void *ctx, int slot, int worker) {
  pass *ps = ctx;
  ladle__node *n = ps->node;
  ladle__iter *t = ps->t;
  if (abandoned(ps)) return;
  pthread_mutex_lock(&ps->lock);
  int skip = !ps->collect && ps->failed_slot < slot;
  pthread_mutex_unlock(&ps->lock);
  if (skip) return;
  if (n->active && !n->active[slot]) { /* not needed (pipeline/demand.h): empty outputs */
    if (ps->setup)
      for (int k = 0; k < n->num_outputs; k++)
        memset(n->out_shapes + ((size_t)slot * n->num_outputs + k) * LADLE_MAX_NDIM, 0,
               sizeof(int64_t) * LADLE_MAX_NDIM);
    return;
  }
  ladle__sample s = {slot, worker, &t->refs[slot], t->names[slot],
                     n->sample_states ? n->sample_states + (size_t)slot * n->def->sample_state_size : NULL};
  int64_t t0 = ladle__now_ns();
  ladle_status st = ps->setup ? n->def->setup(n, &s) : n->def->run(n, &s);
  atomic_fetch_add(&ps->work_ns, ladle__now_ns() - t0);
  if (st == LADLE_OK) return;
  const ladle__sample_ref *r = s.ref;
  if (s.name)
    ladle__wrap_error(st, "sample %d of iteration %lld (record %lld, epoch %lld, \"%s\")", slot,
                      (long long)t->iteration, (long long)r->index, (long long)r->epoch, s.name);
  else
    ladle__wrap_error(st, "sample %d of iteration %lld", slot, (long long)t->iteration);
  pthread_mutex_lock(&ps->lock);
  if (ps->collect && ladle__skip_data_error(st)) {
    t->failed[slot] = 1;
    snprintf(t->messages[slot], LADLE_ERROR_MAX, "%s", ladle_last_error());
    ps->data_failures++;
  } else {
    ps->fatal = 1;
  }
  if (slot < ps->failed_slot) {
    ps->failed_slot = slot;
    ps->status = st;
    snprintf(ps->error, sizeof ps->error, "%s", ladle_last_error());
  }
  pthread_mutex_unlock(&ps->lock);
}

static ladle_status run_pass(pass *ps) {
  int batch = ps->t->config.batch_size;
  ps->failed_slot = batch;
  ps->status = LADLE_OK;
  ps->data_failures = ps->fatal = 0;
  atomic_store(&ps->work_ns, 0);
  int64_t *last = &ps->node->pass_work_ns[ps->setup];
  atomic_fetch_add(&ps->node->cpu_passes, 1);
  if (*last && *last <= ps->p->inline_ns) {
    int self = ladle_thread_pool_num_threads(ps->p->pool); /* a waiting thread's worker index (core/threads.h) */
    atomic_fetch_add(&ps->node->inline_passes, 1);
    for (int slot = 0; slot < batch; slot++) run_sample(ps, slot, self);
  } else {
    ladle__parallel_for(ps->p->pool, batch, run_sample, ps);
  }
  int64_t work = atomic_load(&ps->work_ns);
  *last = work > 0 ? work : 1; /* 0: not measured yet */
  if (ps->failed_slot < batch) {
    ladle__restore_error(ps->error);
    return ps->status;
  }
  return abandoned(ps) ? LADLE_ERROR_STATE : LADLE_OK;
}

/* A fed GPU batch: this iteration's stream waits for its producer, and the
 * batch lives until this iteration's GPU work has completed. */
static ladle_status take_gpu_batch(ladle__gpu *gpu, ladle_batch *b) {
  ladle_status st = LADLE_OK;
  LADLE_CHECK(ladle_batch_device_id(b) == gpu->device_id, LADLE_ERROR_INVALID_ARGUMENT,
              "a fed batch is on GPU %d; the pipeline runs on GPU %d", ladle_batch_device_id(b), gpu->device_id);
#ifdef LADLE_HAVE_CUDA
  if (b->ready_event) LADLE_TRY(ladle__cuda_stream_wait(gpu->stream, b->ready_event));
#endif
  LADLE_TRY(ladle__gpu_keep(gpu, b));
done:
  return st;
}

/* Under the lock: whether every external source has a batch queued. */
static int all_fed(ladle_pipeline *p) {
  if (p->params.fed_seeds && p->seeds_count < p->params.fed_seeds) return 0;
  for (int i = 0; i < p->num_fed; i++)
    if (!ladle__external_count(p->fed[i])) return 0;
  return 1;
}

/* Under the lock: takes one fed batch per source as that node's output value
 * and sets the iteration's batch size. The sources must agree on it. */
static ladle_status take_fed(ladle_pipeline *p, ladle__iter *t) {
  int size = 0;
  const char *first = NULL;
  ladle_status st = LADLE_OK;
  for (int k = 0; k < p->params.fed_seeds; k++) { /* this iteration's seeds */
    t->seeds[k] = p->seeds[p->seeds_head];
    p->seeds_head = (p->seeds_head + 1) % p->seeds_cap;
    p->seeds_count--;
  }
  if (p->params.fed_seeds) t->config.seed = t->seeds[0];
  for (int i = 0; i < p->num_fed; i++) {
    ladle__node *n = p->fed[i];
    ladle_batch *b = ladle__external_pop(n);
    t->values[n->first_output] = b;
    int count = ladle_batch_num_samples(b);
    if (!first) {
      size = count;
      first = n->name;
    } else if (count != size && st == LADLE_OK) {
      st = LADLE_FAIL(LADLE_ERROR_INVALID_ARGUMENT,
                      "external sources were fed batches of different sizes for one iteration: '%s' %d samples, "
                      "'%s' %d", first, size, n->name, count);
    }
  }
  if (st != LADLE_OK) {
    for (int i = 0; i < p->num_fed; i++) {
      ladle__node *n = p->fed[i];
      ladle_batch_release(t->values[n->first_output]);
      t->values[n->first_output] = NULL;
    }
    return st;
  }
  if (p->num_fed) t->config.batch_size = size;
  return LADLE_OK;
}

/* The cap on every operator's output, so that an argument (a crop padded to
 * 30000x30000, resize_x=100000) cannot ask for gigabytes: a sample may hold
 * at most max_pixels x 4 elements (an RGBA image of max_pixels pixels). */
static ladle_status check_output_size(const ladle_pipeline *p, const ladle__node *n, int k, const int64_t *shapes,
                                      int batch, const char **names) {
  int ndim = n->out[k].ndim;
  double cap = (double)p->params.max_pixels * 4;
  for (int s = 0; s < batch; s++) {
    double elems = 1;
    for (int d = 0; d < ndim; d++) elems *= (double)shapes[(size_t)s * ndim + d];
    if (elems <= cap) continue;
    char shape[96] = "";
    size_t len = 0;
    for (int d = 0; d < ndim && len + 24 < sizeof shape; d++)
      len += (size_t)snprintf(shape + len, sizeof shape - len, "%s%lld", d ? " x " : "",
                              (long long)shapes[(size_t)s * ndim + d]);
    const char *name = names[s];
    return LADLE_FAIL(LADLE_ERROR_LIMIT,
                      "%s: output %d of sample %d%s%s%s would be %s (%.3g elements), more than max_pixels x 4 = %.3g "
                      "allows; check the operator's size arguments or raise max_pixels",
                      n->def->schema.name, k, s, name ? " (" : "", name ? name : "", name ? ")" : "", shape, elems,
                      cap);
  }
  return LADLE_OK;
}

/* The samples of an iteration: the reader's plan, or numbered slots. */
static ladle_status plan_samples(ladle_pipeline *p, ladle__iter *t) {
  int batch = t->config.batch_size;
  if (p->reader) {
    ladle_status st = p->reader->def->plan(p->reader, t->iteration, t->refs);
    if (st != LADLE_OK) return st;
    for (int i = 0; i < batch; i++) t->names[i] = p->reader->def->sample_name(p->reader, t->refs[i].index);
    return LADLE_OK;
  }
  /* Unique sample numbers whatever the batch's size; with fed seeds each
   * iteration is a first iteration (its seed tells it apart). */
  int64_t first = p->params.fed_seeds ? 0 : t->iteration * p->params.batch_size;
  for (int i = 0; i < batch; i++) {
    t->refs[i] = (ladle__sample_ref){first + i, 0, first + i, 0};
    t->names[i] = NULL;
  }
  return LADLE_OK;
}

/* Whether passes go on past bad samples (skip_bad_samples): with a reader
 * and no external source, or with external sources and no reader. */
static int collecting(const ladle_pipeline *p) {
  return p->skip.enabled && (p->reader ? !p->num_fed : p->num_fed > 0);
}

/* The node at position i of the executor's order. */
static ladle__node *at(const ladle_pipeline *p, int i) { return p->nodes[p->order[i]]; }

/* The executor's time (prepare_seconds) is counted as it goes, up to the end
 * of each node, before the node's own: the nodes' sum never exceeds it. */
static void count_time(ladle_pipeline *p, ladle__iter *t) {
  int64_t now = ladle__now_ns();
  atomic_fetch_add(&p->stat_prepare_ns, now - t->mark_ns);
  if (t->stage_ns) atomic_fetch_add(t->stage_ns, now - t->mark_ns);
  t->mark_ns = now;
}

static void node_done(ladle_pipeline *p, ladle__iter *t, ladle__node *n, int64_t t0) {
  count_time(p, t);
  atomic_fetch_add(&n->busy_ns, t->mark_ns - t0);
}

static void release_values(ladle_pipeline *p, ladle__iter *t) {
  for (int v = 0; v < p->num_values; v++) {
    ladle_batch_release(t->values[v]);
    t->values[v] = NULL;
  }
}

/* What node n's GPU work gets: the side stream for own_stream nodes (unless
 * LADLE_OWN_STREAM=0), else the pipeline's stream. NULL for CPU pipelines. */
static ladle__gpu *gpu_for(ladle_pipeline *p, const ladle__node *n) {
  if (!p->gpu) return NULL;
  ladle__gpu *side = n->def->own_stream && n->device != LADLE_ON_CPU ? ladle__gpu_side(p->gpu) : NULL;
  return side ? side : ladle__gpu_of(p->gpu);
}

/* Node n's setup pass and its output batches (t->values, n->out_batches).
 * n is the pipeline's node, or the host stage's copy of the device stage's
 * first node (setup_ahead). */
static ladle_status setup_outputs(ladle_pipeline *p, ladle__iter *t, pass *ps, ladle__node *n, int *skippable) {
  ladle_status st = LADLE_OK;
  int64_t iteration = t->iteration;
  int batch = t->config.batch_size;
  ladle__gpu *gpu = p->gpu ? ladle__gpu_of(p->gpu) : NULL;
  ps->node = n;
  ps->setup = 1;
  st = run_pass(ps);
  *skippable = st != LADLE_OK && ps->data_failures && !ps->fatal;
  if (st != LADLE_OK) return st;
  for (int k = 0; k < n->num_outputs; k++) {
    int ndim = n->out[k].ndim;
    int64_t *shapes = t->shapes;
    for (int s = 0; s < batch; s++)
      memcpy(shapes + (size_t)s * ndim, n->out_shapes + ((size_t)s * n->num_outputs + k) * LADLE_MAX_NDIM,
             sizeof(int64_t) * ndim);
    LADLE_TRY(check_output_size(p, n, k, shapes, batch, t->names));
    ladle_batch *b = NULL;
    ladle__pool *data_pool = n->device == LADLE_ON_CPU ? p->host_pool : gpu_for(p, n)->device_pool;
    if (n->merged) { /* its consumer computes from its inputs: shapes only */
      st = ladle__batch_shapes(p->host_pool, n->out[k].dtype, batch, ndim, shapes, n->out[k].layout,
                               n->device == LADLE_ON_CPU ? LADLE_DEVICE_CPU : LADLE_DEVICE_CUDA, &b);
      if (st != LADLE_OK) {
        ladle__wrap_error(st, "%s: output %d of iteration %lld", n->def->schema.name, k, (long long)iteration);
        goto done;
      }
    } else if (n->def->views_input && k == 0) {
      st = ladle__batch_view(p->host_pool, n->in_batches[0], n->out[0].dtype, ndim, shapes, n->out[0].layout, &b);
      if (st != LADLE_OK) {
        ladle__op_fail(n, st, "%s", ladle_last_error());
        goto done;
      }
    } else {
      st = ladle__batch_create(p->host_pool, data_pool, n->out[k].dtype, batch, ndim, shapes, n->out[k].layout, &b);
      if (st != LADLE_OK) {
        ladle__wrap_error(st, "%s: output %d of iteration %lld", n->def->schema.name, k, (long long)iteration);
        goto done;
      }
      if (n->device != LADLE_ON_CPU) b->device_id = gpu->device_id;
    }
    t->values[n->first_output + k] = n->out_batches[k] = b;
  }
done:
  return st;
}

/* setup_ahead: the host stage's end, the setup pass of the device stage's
 * first node on the host stage's copy of it, into t's own sample states and
 * shapes. */
static ladle_status setup_ahead(ladle_pipeline *p, ladle__iter *t, pass *ps, int *skippable) {
  ladle_status st = LADLE_OK;
  ladle__node *n = at(p, p->split), *c = &p->setup_copy;
  int64_t t0 = ladle__now_ns();
  for (int k = 0; k < c->num_inputs; k++) c->in_batches[k] = t->values[c->inputs[k]];
  for (int k = 0; k < c->num_sources; k++) c->source_batches[k] = t->values[c->sources[k]];
  c->out_shapes = t->setup_shapes;
  c->sample_states = t->setup_states;
  if (c->num_sources) LADLE_TRY(ladle__check_arg_sources(c, t->config.batch_size, (const char *const *)t->names));
  LADLE_TRY(setup_outputs(p, t, ps, c, skippable));
  t->setup_done = 1;
  node_done(p, t, n, t0);
  atomic_fetch_add(&n->setup_ns, t->mark_ns - t0);
  atomic_fetch_add(&n->cpu_passes, atomic_exchange(&c->cpu_passes, 0)); /* the copy's pass, the node's stats */
  atomic_fetch_add(&n->inline_passes, atomic_exchange(&c->inline_passes, 0));
done:
  return st;
}

/* The device stage's first node, set up ahead: its outputs, sample states
 * and shapes from t. */
static void take_setup(ladle_pipeline *p, ladle__iter *t, ladle__node *n) {
  int batch = t->config.batch_size;
  for (int k = 0; k < n->num_outputs; k++) n->out_batches[k] = t->values[n->first_output + k];
  memcpy(n->out_shapes, t->setup_shapes, sizeof(int64_t) * (size_t)batch * n->num_outputs * LADLE_MAX_NDIM);
  if (n->sample_states) memcpy(n->sample_states, t->setup_states, n->def->sample_state_size * (size_t)batch);
}

/* One attempt at nodes [from, to) of an iteration. With to == num_nodes it
 * ends the iteration: on success t->outputs gets the pipeline's outputs, and
 * the value batches are released; a host stage (to < num_nodes) keeps them
 * for the device stage unless it fails. *skippable: it failed on bad data
 * only (collect). */
static ladle_status attempt(ladle_pipeline *p, ladle__iter *t, int from, int to, int *skippable) {
  ladle_status st = LADLE_OK;
  int64_t iteration = t->iteration;
  int batch = t->config.batch_size; /* this iteration's: fed batches may be smaller */
  int last = to == p->num_nodes, stage = from >= p->split;
  int set_up = from == p->split && t->setup_done; /* node `from` was set up by the host stage */
  pass ps = {.p = p, .t = t, .collect = collecting(p)};
  pthread_mutex_init(&ps.lock, NULL);
  ladle__gpu *gpu = p->gpu ? ladle__gpu_of(p->gpu) : NULL;
  *skippable = 0;
  t->setup_done = 0;
  if (from < p->split) p->config = t->config; /* what this stage's nodes read */
  if (to > p->split) p->config_b = t->config;
  if (gpu && last) {
    int64_t t0 = ladle__now_ns();
    st = ladle__gpu_begin(p->gpu);
    atomic_fetch_add(&p->stat_gpu_wait_ns, ladle__now_ns() - t0);
    if (st != LADLE_OK) goto done;
    for (int i = 0; i < from; i++) /* fed GPU batches of the host stage's sources */
      if ((at(p, i)->def->schema.flags & LADLE_OP_EXTERNAL) && at(p, i)->device != LADLE_ON_CPU)
        LADLE_TRY(take_gpu_batch(gpu, t->values[at(p, i)->first_output]));
  }
  ladle__demand_begin(p, stage, batch, t->values);
  for (int i = from; i < to; i++) {
    ladle__node *n = at(p, i);
    int64_t t0 = ladle__now_ns();
    n->active = NULL;
    if ((n->def->schema.flags & LADLE_OP_EXTERNAL)) { /* its output is the fed batch, taken by take_fed */
      ladle_batch *fed = n->out_batches[0] = t->values[n->first_output];
      if (n->device != LADLE_ON_CPU && last) LADLE_TRY(take_gpu_batch(gpu, fed));
      continue;
    }
    if (n->deferred) {
      st = ladle__node_init_late(p, n);
      if (st != LADLE_OK) {
        ladle__wrap_error(st, "iteration %lld (its input's type became known in this iteration)",
                          (long long)iteration);
        goto done;
      }
    }
    for (int k = 0; k < n->num_inputs; k++) n->in_batches[k] = t->values[n->inputs[k]];
    for (int k = 0; k < n->num_sources; k++) n->source_batches[k] = t->values[n->sources[k]];
    n->active = ladle__demand_mask(p, stage, p->order[i]);
    if (n->def->produce) { /* makes its own outputs (a callback operator) */
      if (n->num_sources) LADLE_TRY(ladle__check_arg_sources(n, batch, (const char *const *)t->names));
      st = n->def->produce(n, gpu, p->host_pool, iteration, batch);
      if (st != LADLE_OK) {
        ladle__wrap_error(st, "iteration %lld", (long long)iteration);
        goto done;
      }
      for (int k = 0; k < n->num_outputs; k++) t->values[n->first_output + k] = n->out_batches[k];
      /* GPU outputs: ordered before this iteration's stream, kept until its work is done */
      for (int k = 0; k < n->num_outputs && n->device != LADLE_ON_CPU; k++) LADLE_TRY(take_gpu_batch(gpu, n->out_batches[k]));
      node_done(p, t, n, t0);
      continue;
    }
    if (i == from && set_up) {
      take_setup(p, t, n);
    } else {
      if (n->num_sources) LADLE_TRY(ladle__check_arg_sources(n, batch, (const char *const *)t->names));
      int64_t s0 = ladle__now_ns();
      st = setup_outputs(p, t, &ps, n, skippable);
      atomic_fetch_add(&n->setup_ns, ladle__now_ns() - s0);
      if (st != LADLE_OK) goto done;
    }
    if (n->def->views_input || n->merged) {
      /* the view is the output, or the consumer computes it: nothing to run */
    } else if (n->device == LADLE_ON_CPU) {
      ps.node = n;
      ps.setup = 0;
      st = run_pass(&ps);
      *skippable = st != LADLE_OK && ps.data_failures && !ps.fatal;
      if (st != LADLE_OK) goto done;
    } else if (!n->fused_into) { /* a fused node runs inside its consumer's turn, in one kernel with it */
      ladle__gpu *g = gpu_for(p, n);
      g->failed = ps.collect ? t->failed : NULL;
      g->messages = ps.collect ? t->messages : NULL;
      st = n->fused_from ? n->fused_from->def->run_batch_epilogue(n->fused_from, n, g) : n->def->run_batch(n, g);
      if (g != gpu) { /* also after a failure: what it queued must come first */
        ladle_status joined = ladle__gpu_side_join(p->gpu, n->out_batches, n->num_outputs);
        if (st == LADLE_OK) st = joined;
      }
      if (st != LADLE_OK && g->failed && ladle__skip_data_error(st))
        *skippable = memchr(g->failed, 1, (size_t)batch) != NULL;
      if (st != LADLE_OK) {
        ladle__wrap_error(st, "iteration %lld", (long long)iteration);
        goto done;
      }
    }
    n->active = NULL;
    node_done(p, t, n, t0);
  }
  if (to == p->split && p->setup_ahead) LADLE_TRY(setup_ahead(p, t, &ps, skippable));
  for (int k = 0; last && k < p->num_outputs; k++) {
    t->outputs[k] = t->values[p->outputs[k]];
    ladle_batch_retain(t->outputs[k]);
  }
done:
  if (gpu && last) {
    /* Also after a failure: what queued work reads must outlive it. */
    ladle_status end = ladle__gpu_end(p->gpu, st == LADLE_OK ? t->outputs : NULL, st == LADLE_OK ? p->num_outputs : 0);
    if (st == LADLE_OK && end != LADLE_OK) {
      for (int k = 0; k < p->num_outputs; k++) {
        ladle_batch_release(t->outputs[k]);
        t->outputs[k] = NULL;
      }
      st = end;
    }
  }
  for (int i = from; i < to; i++) at(p, i)->active = NULL;
  if (last || st != LADLE_OK) release_values(p, t);
  pthread_mutex_destroy(&ps.lock);
  return st;
}

/* Skipping in a pipeline fed by external sources only: the failed slots
 * leave the fed batches (copies of the good samples; t->fed keeps the
 * originals for the next attempt), the refs and the names; the batch size
 * shrinks. Fed GPU batches are not shrunk (LADLE_ERROR_UNSUPPORTED). */
static ladle_status drop_failed_fed(ladle_pipeline *p, ladle__iter *t) {
  ladle_status st = LADLE_OK;
  int kept = 0, n = t->config.batch_size;
  for (int s = 0; s < n; s++) kept += !t->failed[s];
  LADLE_CHECK(kept > 0, LADLE_ERROR_CORRUPT_DATA, "every sample of the fed batch failed: %s", t->messages[0]);
  for (int i = 0; i < p->num_fed; i++) {
    ladle_batch *b = t->fed[i], *small = NULL;
    LADLE_CHECK(ladle_batch_device(b) == LADLE_DEVICE_CPU, LADLE_ERROR_UNSUPPORTED,
                "external source '%s': a bad sample of a GPU batch cannot be dropped (%s)", p->fed[i]->name,
                t->messages[0]);
    int ndim = b->ndim, k = 0;
    for (int s = 0; s < n; s++)
      if (!t->failed[s]) memcpy(t->shapes + (size_t)k++ * ndim, b->shapes + (size_t)s * ndim, sizeof(int64_t) * ndim);
    LADLE_TRY(ladle__batch_create(p->host_pool, p->host_pool, b->dtype, kept, ndim, t->shapes, b->layout, &small));
    for (int s = 0, k2 = 0; s < n; s++)
      if (!t->failed[s]) memcpy(ladle_batch_data(small, k2++), ladle_batch_data(b, s), b->offsets[s + 1] - b->offsets[s]);
    ladle_batch_release(b);
    t->fed[i] = small;
  }
  for (int s = 0, k = 0; s < n; s++) {
    if (t->failed[s]) continue;
    t->refs[k] = t->refs[s];
    t->names[k++] = t->names[s];
  }
  t->config.batch_size = kept;
done:
  return st;
}

/* Every slot of the iteration is known bad (skip_bad_samples): a padded last
 * batch whose one real record is bad (pad_last_batch repeats it), or a batch
 * of bad files only. Its slots take the nearest sample of the same epoch (so
 * of the same shard) not known bad: from the batches before, the nearest
 * first (the last slot of the batch before, then the one before it, ...),
 * else from the batches after. Slots keep their pad marks, so the padding
 * repeats the replacement. Deterministic: the nearest good record, found
 * by trying (a borrowed record that fails is recorded and the next is
 * borrowed). Fails when the epoch has no good sample left. */
static ladle_status borrow_sample(ladle_pipeline *p, ladle__iter *t) {
  ladle_status st = LADLE_OK;
  int batch = t->config.batch_size;
  int64_t iteration = t->iteration, epoch = t->refs[0].epoch;
  ladle__sample_ref *scan = calloc((size_t)batch, sizeof *scan);
  LADLE_CHECK(scan, LADLE_ERROR_OUT_OF_MEMORY, "out of memory");
  for (int dir = -1; dir <= 1; dir += 2) {
    for (int64_t it = iteration + dir; it >= 0; it += dir) {
      LADLE_TRY(p->reader->def->plan(p->reader, it, scan));
      int in_epoch = 0;
      for (int k = 0; k < batch; k++) {
        int i = dir < 0 ? batch - 1 - k : k;
        if (scan[i].epoch != epoch) continue;
        in_epoch = 1;
        if (scan[i].pad || ladle__skip_known_bad(&p->skip, scan[i].index)) continue;
        const char *name = p->reader->def->sample_name(p->reader, scan[i].index);
        for (int j = 0; j < batch; j++) {
          int pad = t->refs[j].pad;
          t->refs[j] = scan[i];
          t->refs[j].pad = pad;
          t->names[j] = name;
        }
        goto done;
      }
      if (!in_epoch) break; /* past the epoch's first or last batch */
    }
  }
  st = LADLE_FAIL(LADLE_ERROR_CORRUPT_DATA, "every sample of iteration %lld is bad (%d skipped) and so is every "
                  "other sample of epoch %lld: nothing is left to fill the batch with", (long long)iteration,
                  p->skip.num_log, (long long)epoch);
done:
  free(scan);
  return st;
}

/* The start of an iteration: its samples and, in a pipeline fed only by
 * external sources that skips bad samples, the fed batches kept for another
 * attempt (attempt() releases the values). */
static ladle_status begin_iteration(ladle_pipeline *p, ladle__iter *t) {
  ladle_status st = plan_samples(p, t);
  int drop = p->skip.enabled && !p->reader && p->num_fed > 0;
  for (int i = 0; drop && i < p->num_fed; i++) {
    t->fed[i] = t->values[p->fed[i]->first_output];
    ladle_batch_retain(t->fed[i]);
  }
  return st;
}

/* Before each attempt: known bad records replaced (reader pipelines). */
static ladle_status before_attempt(ladle_pipeline *p, ladle__iter *t) {
  ladle_status st = LADLE_OK;
  int batch = t->config.batch_size;
  if (p->reader && ladle__skip_all_bad(&p->skip, t->refs, batch)) st = borrow_sample(p, t);
  if (p->reader && st == LADLE_OK) st = ladle__skip_substitute(&p->skip, t->refs, t->names, batch, t->iteration);
  if (st == LADLE_OK && p->skip.enabled) memset(t->failed, 0, (size_t)batch);
  return st;
}

/* After an attempt that failed on bad data only: its bad samples cost one
 * more attempt per batch they appear in first; once known they are replaced
 * before the attempt (in a pipeline fed only by external sources: dropped,
 * see drop_failed_fed). Runs every node, on one thread: with two stages, the
 * device thread while the host thread waits. */
static ladle_status retry_skipped(ladle_pipeline *p, ladle__iter *t, ladle_status st, int skippable) {
  while (st != LADLE_OK && skippable) {
    int before = p->skip.num_bad;
    st = ladle__skip_record(&p->skip, &p->lock, t->refs, t->names, t->failed, t->messages, t->config.batch_size,
                            t->iteration);
    if (st == LADLE_OK && p->skip.num_bad == before) /* cannot happen: a failed slot's record was not known bad */
      st = LADLE_FAIL(LADLE_ERROR_INTERNAL, "skipping bad samples made no progress in iteration %lld",
                      (long long)t->iteration);
    if (st == LADLE_OK && p->num_fed && !p->reader) {
      st = drop_failed_fed(p, t);
      for (int i = 0; st == LADLE_OK && i < p->num_fed; i++) {
        t->values[p->fed[i]->first_output] = t->fed[i];
        ladle_batch_retain(t->fed[i]);
      }
    }
    if (st == LADLE_OK) st = before_attempt(p, t);
    if (st != LADLE_OK) break;
    st = attempt(p, t, 0, p->num_nodes, &skippable);
  }
  return st;
}

/* --- iterations and threads -------------------------------------------------- */

static void release_iter(ladle_pipeline *p, ladle__iter *t) {
  release_values(p, t);
  for (int k = 0; k < p->num_outputs; k++) {
    ladle_batch_release(t->outputs[k]);
    t->outputs[k] = NULL;
  }
  for (int i = 0; i < p->num_fed; i++) {
    ladle_batch_release(t->fed[i]);
    t->fed[i] = NULL;
  }
  t->in_use = 0;
}

/* Under the lock: a free ladle__iter for the next iteration, which takes its
 * fed data; NULL when all are in use. */
static ladle__iter *start_iter(ladle_pipeline *p, ladle_status *st) {
  ladle__iter *t = NULL;
  for (int i = 0; i < p->num_iters && !t; i++)
    if (!p->iters[i].in_use) t = &p->iters[i];
  if (!t) return NULL;
  t->in_use = 1;
  t->iteration = p->next_iteration++;
  t->generation = atomic_load(&p->generation);
  t->config = p->config_base;
  t->config.seeds = t->seeds;
  t->status = LADLE_OK;
  t->skippable = 0;
  t->stage_ns = NULL;
  p->preparing++;
  ladle__clear_error();
  *st = take_fed(p, t);
  return t;
}

static void clear_slot(ladle_pipeline *p, ladle__ready *r) {
  for (int k = 0; k < p->num_outputs; k++) {
    ladle_batch_release(r->outputs[k]);
    r->outputs[k] = NULL;
  }
}

/* Under the lock: an iteration dropped (repositioned meanwhile). */
static void drop_iter(ladle_pipeline *p, ladle__iter *t) {
  release_iter(p, t);
  p->preparing--;
  pthread_cond_broadcast(&p->space);
}

/* Under the lock: a finished iteration goes to the queue (unless the
 * pipeline was repositioned meanwhile); `st` and ladle_last_error() are its
 * result. */
static void deliver(ladle_pipeline *p, ladle__iter *t, ladle_status st) {
  if (atomic_load(&p->generation) != t->generation) { /* repositioned meanwhile: drop it */
    drop_iter(p, t);
    return;
  }
  int depth = p->params.prefetch_queue_depth;
  ladle__ready *slot = &p->queue[(p->queue_head + p->queue_count) % depth];
  slot->iteration = t->iteration;
  slot->status = st;
  slot->num_records = p->reader && st == LADLE_OK ? t->config.batch_size : 0;
  for (int i = 0; i < slot->num_records; i++) slot->records[i] = t->refs[i].index;
  snprintf(slot->error, LADLE_ERROR_MAX, "%s", st == LADLE_OK ? "" : ladle_last_error());
  for (int k = 0; k < p->num_outputs; k++) {
    slot->outputs[k] = st == LADLE_OK ? t->outputs[k] : NULL;
    t->outputs[k] = NULL;
  }
  release_iter(p, t);
  p->preparing--;
  p->queue_count++;
  pthread_cond_broadcast(&p->ready);
  pthread_cond_broadcast(&p->space);
}

/* One stage: one thread runs every node of each iteration. */
static void *serial_main(void *arg) {
  ladle_pipeline *p = arg;
  int depth = p->params.prefetch_queue_depth;
  pthread_mutex_lock(&p->lock);
  while (!atomic_load(&p->stop)) {
    if (p->queue_count == depth || !all_fed(p)) {
      pthread_cond_wait(&p->space, &p->lock);
      continue;
    }
    ladle_status st = LADLE_OK;
    ladle__iter *t = start_iter(p, &st);
    pthread_mutex_unlock(&p->lock);

    if (st == LADLE_OK) {
      int skippable = 0;
      t->mark_ns = ladle__now_ns();
      st = begin_iteration(p, t);
      if (st == LADLE_OK) st = before_attempt(p, t);
      if (st == LADLE_OK) st = attempt(p, t, 0, p->num_nodes, &skippable);
      st = retry_skipped(p, t, st, skippable);
      count_time(p, t);
      atomic_fetch_add(&p->stat_iterations, 1);
    }

    pthread_mutex_lock(&p->lock);
    deliver(p, t, st);
  }
  pthread_mutex_unlock(&p->lock);
  return NULL;
}

/* Nodes [0, split) of an iteration (st: whether it took its fed data);
 * the result waits in t for the device stage. */
static void host_stage(ladle_pipeline *p, ladle__iter *t, ladle_status st) {
  int skippable = 0;
  if (st == LADLE_OK) st = begin_iteration(p, t);
  if (st == LADLE_OK) st = before_attempt(p, t);
  if (st == LADLE_OK) st = attempt(p, t, 0, p->split, &skippable);
  t->status = st;
  t->skippable = skippable;
  snprintf(t->error, LADLE_ERROR_MAX, "%s", st == LADLE_OK ? "" : ladle_last_error());
}

/* The host stage's thread: nodes [0, split) of each iteration, handed to the
 * device stage one at a time. */
static void *host_main(void *arg) {
  ladle_pipeline *p = arg;
  pthread_mutex_lock(&p->lock);
  while (!atomic_load(&p->stop)) {
    if (p->pause_host || p->handoff || !all_fed(p)) {
      pthread_cond_wait(&p->space, &p->lock);
      continue;
    }
    ladle_status st = LADLE_OK;
    ladle__iter *t = start_iter(p, &st); /* one is free: one in the device stage at most, none handed over */
    p->host_busy = 1;
    pthread_mutex_unlock(&p->lock);

    t->mark_ns = ladle__now_ns();
    t->stage_ns = &p->stat_host_ns;
    host_stage(p, t, st);
    count_time(p, t);

    pthread_mutex_lock(&p->lock);
    p->host_busy = 0;
    p->handoff = t;
    pthread_cond_broadcast(&p->space);
  }
  pthread_mutex_unlock(&p->lock);
  return NULL;
}

/* On the device thread: an iteration that failed on bad data only is
 * finished through every node while the host thread waits (retry_skipped).
 * The host stage's prepared iteration, if any, planned before these records
 * were known bad, is then prepared again from its start (reader pipelines,
 * where the known bad records decide the substitution), keeping what it took
 * (fed seeds). */
static ladle_status finish_skipped(ladle_pipeline *p, ladle__iter *t, ladle_status st, int skippable) {
  pthread_mutex_lock(&p->lock);
  p->pause_host = 1;
  while (p->host_busy && !atomic_load(&p->stop)) pthread_cond_wait(&p->space, &p->lock);
  int stopping = atomic_load(&p->stop);
  ladle__iter *next = p->handoff; /* only this thread takes it */
  pthread_mutex_unlock(&p->lock);
  int before = p->skip.num_bad;
  if (!stopping) st = retry_skipped(p, t, st, skippable);
  if (!stopping && next && p->reader && p->skip.num_bad != before &&
      next->generation == atomic_load(&p->generation)) {
    ladle_status failed = st;
    char error[LADLE_ERROR_MAX];
    snprintf(error, sizeof error, "%s", ladle_last_error());
    release_values(p, next);
    next->mark_ns = ladle__now_ns();
    next->stage_ns = &p->stat_device_ns;
    host_stage(p, next, LADLE_OK);
    count_time(p, next);
    ladle__restore_error(error); /* t's */
    st = failed;
  }
  pthread_mutex_lock(&p->lock);
  p->pause_host = 0;
  pthread_cond_broadcast(&p->space);
  pthread_mutex_unlock(&p->lock);
  return st;
}

/* The device stage's thread: nodes [split, num_nodes) of each iteration the
 * host stage hands over, in order, then the queue. */
static void *device_main(void *arg) {
  ladle_pipeline *p = arg;
  int depth = p->params.prefetch_queue_depth;
  pthread_mutex_lock(&p->lock);
  while (!atomic_load(&p->stop)) {
    if (!p->handoff || p->queue_count == depth) {
      pthread_cond_wait(&p->space, &p->lock);
      continue;
    }
    ladle__iter *t = p->handoff;
    p->handoff = NULL;
    pthread_cond_broadcast(&p->space);
    if (t->generation != atomic_load(&p->generation)) { /* repositioned meanwhile */
      drop_iter(p, t);
      continue;
    }
    pthread_mutex_unlock(&p->lock);

    t->mark_ns = ladle__now_ns();
    t->stage_ns = &p->stat_device_ns;
    int skippable = t->skippable;
    ladle_status st = t->status;
    ladle__clear_error();
    if (st == LADLE_OK) st = attempt(p, t, p->split, p->num_nodes, &skippable);
    else ladle__restore_error(t->error);
    if (st != LADLE_OK && skippable) st = finish_skipped(p, t, st, skippable);
    count_time(p, t);
    atomic_fetch_add(&p->stat_iterations, 1);

    pthread_mutex_lock(&p->lock);
    deliver(p, t, st);
  }
  pthread_mutex_unlock(&p->lock);
  return NULL;
}

static int env_is(const char *name, const char *value) {
  const char *v = getenv(name);
  return v && strcmp(v, value) == 0;
}

/* LADLE_EXECUTOR_STAGES=1: one thread runs every node. */
static int one_stage(void) { return env_is("LADLE_EXECUTOR_STAGES", "1"); }

/* The executor's order (p->order, node indices): with a GPU or mixed node,
 * the CPU nodes that read nothing such a node makes come first, so that they
 * run in the host stage (the random draws and box arithmetic that follow the
 * decoder in DALI's SSD graph); each group keeps the order added. Results do
 * not change: random draws are keyed by operator, not by position. Left in
 * the order added with merges (their per-sample demand sweeps in that order),
 * deferred nodes, CPU nodes computed in another's turn (fused, merged), a
 * forced split, one stage, or LADLE_EXECUTOR_HOIST=0 (for A/B runs). */
static int hoists(const ladle_pipeline *p) {
  const char *forced = getenv("LADLE_EXECUTOR_SPLIT");
  if (env_is("LADLE_EXECUTOR_HOIST", "0") || one_stage() || (forced && forced[0])) return 0;
  for (int i = 0; i < p->num_nodes; i++) {
    const ladle__node *n = p->nodes[i];
    int joined = n->fused_into || n->fused_from || n->merged; /* computed in another node's turn */
    if (n->deferred || (joined && n->device == LADLE_ON_CPU) || (n->def->selects_input && n->num_sources)) return 0;
  }
  return 1;
}

static ladle_status plan_order(ladle_pipeline *p) {
  ladle_status st = LADLE_OK;
  int n = p->num_nodes, k = 0;
  unsigned char *host = NULL;
  free(p->order);
  p->order = NULL;
  LADLE_ALLOC(p->order, n ? n : 1);
  for (int i = 0; i < n; i++) p->order[i] = i;
  if (!hoists(p)) return LADLE_OK;
  LADLE_ALLOC(host, n);
  for (int i = 0; i < n; i++) { /* producers come before their consumers */
    const ladle__node *c = p->nodes[i];
    host[i] = c->device == LADLE_ON_CPU;
    for (int j = 0; j < c->num_inputs && host[i]; j++) host[i] = host[p->values[c->inputs[j]].node];
    for (int j = 0; j < c->num_sources && host[i]; j++) host[i] = host[p->values[c->sources[j]].node];
  }
  for (int i = 0; i < n; i++)
    if (host[i]) p->order[k++] = i;
  for (int i = 0; i < n; i++)
    if (!host[i]) p->order[k++] = i;
done:
  free(host);
  return st;
}

/* Where the device stage starts (see the top of this file): num_nodes for
 * one stage. */
static ladle_status stage_split(const ladle_pipeline *p, int *out) {
  ladle_status st = LADLE_OK;
  int n = p->num_nodes, split = n;
  *out = n;
  if (one_stage()) return LADLE_OK;
  for (int i = 0; i < n && split == n; i++)
    if (at(p, i)->device != LADLE_ON_CPU && !(at(p, i)->def->schema.flags & LADLE_OP_EXTERNAL)) split = i;
  const char *forced = getenv("LADLE_EXECUTOR_SPLIT");
  if (forced && forced[0]) {
    char *end = NULL;
    long k = strtol(forced, &end, 10);
    int whole = forced[0] >= '0' && forced[0] <= '9' && *end == 0; /* no sign, no space, nothing after */
    LADLE_CHECK(whole && k >= 1 && k <= n, LADLE_ERROR_INVALID_ARGUMENT,
                "LADLE_EXECUTOR_SPLIT=\"%s\" is not a node index of this pipeline: it must be a whole number k, "
                "1 <= k <= %d (its number of nodes; the device stage starts at node k, k = %d: one stage)",
                forced, n, n);
    if (k < split) split = (int)k;
  }
  for (int moved = 1; moved && split < n;) { /* a node fused or merged into a consumer: in its stage */
    moved = 0;
    for (int i = 0; i < split; i++) {
      const ladle__node *c = at(p, i)->fused_into;
      for (int j = split; c && j < n; j++)
        if (at(p, j) == c) split = i, moved = 1;
    }
  }
  int reader = n, work = 0; /* the host stage must have more to do than take fed data (ladle.dynamic's calls) */
  for (int i = 0; i < n && reader == n; i++)
    if (at(p, i) == p->reader) reader = i;
  for (int i = 0; i < split; i++) work |= !(at(p, i)->def->schema.flags & LADLE_OP_EXTERNAL);
  if (split > 0 && work && !(p->reader && reader >= split)) *out = split;
done:
  return st;
}

static ladle_status iter_alloc(ladle_pipeline *p, ladle__iter *t) {
  ladle_status st = LADLE_OK;
  int batch = p->params.batch_size;
  if (p->params.fed_seeds) LADLE_ALLOC(t->seeds, p->params.fed_seeds);
  LADLE_ALLOC(t->values, p->num_values);
  LADLE_ALLOC(t->outputs, p->num_outputs);
  if (p->num_fed) LADLE_ALLOC(t->fed, p->num_fed);
  LADLE_ALLOC(t->refs, batch);
  LADLE_ALLOC(t->names, batch);
  LADLE_ALLOC(t->shapes, (size_t)batch * LADLE_MAX_NDIM);
  LADLE_ALLOC(t->error, LADLE_ERROR_MAX);
  if (p->setup_ahead) {
    const ladle__node *first = at(p, p->split);
    LADLE_ALLOC(t->setup_shapes, (size_t)batch * first->num_outputs * LADLE_MAX_NDIM);
    if (first->def->sample_state_size) LADLE_ALLOC(t->setup_states, (size_t)batch * first->def->sample_state_size);
  }
  if (p->skip.enabled) {
    LADLE_ALLOC(t->failed, batch);
    LADLE_ALLOC(t->messages, batch);
    for (int i = 0; i < batch; i++) LADLE_ALLOC(t->messages[i], LADLE_ERROR_MAX);
  }
done:
  return st;
}

static void iter_free(ladle_pipeline *p, ladle__iter *t) {
  if (t->values) release_iter(p, t);
  for (int i = 0; t->messages && i < p->params.batch_size; i++) free(t->messages[i]);
  free(t->messages);
  free(t->failed);
  free(t->seeds);
  free(t->values);
  free(t->outputs);
  free(t->fed);
  free(t->refs);
  free(t->names);
  free(t->shapes);
  free(t->error);
  free(t->setup_shapes);
  free(t->setup_states);
}

ladle_status ladle__executor_start(ladle_pipeline *p) {
  ladle_status st = LADLE_OK;
  int depth = p->params.prefetch_queue_depth;
  LADLE_TRY(ladle__demand_init(p));
  LADLE_ALLOC(p->queue, depth);
  for (int i = 0; i < depth; i++) {
    LADLE_ALLOC(p->queue[i].outputs, p->num_outputs);
    LADLE_ALLOC(p->queue[i].error, LADLE_ERROR_MAX);
    LADLE_ALLOC(p->queue[i].records, p->params.batch_size);
  }
  LADLE_ALLOC(p->last_records, p->params.batch_size);
  LADLE_TRY(plan_order(p));
  LADLE_TRY(stage_split(p, &p->split));
  int staged = p->split < p->num_nodes;
  const char *inline_us = getenv("LADLE_EXECUTOR_INLINE_US");
  p->inline_ns = (inline_us && inline_us[0] ? atoll(inline_us) : DEFAULT_INLINE_US) * 1000;
  p->config_base = p->config_b = p->config;
  for (int i = p->split; i < p->num_nodes; i++) at(p, i)->config = &p->config_b;
  if (staged) {
    const ladle__node *first = at(p, p->split);
    const char *ahead = getenv("LADLE_EXECUTOR_SETUP_AHEAD");
    /* Opt-in for a mixed or GPU node: the mixed decoder's setup parses with nvJPEG while the device stage
     * decodes with it, and the first runs on the H200 with it on crashed (heap corruption, 2026-12-01). */
    int wanted = ahead && ahead[0] ? strcmp(ahead, "0") != 0 : first->device == LADLE_ON_CPU;
    p->setup_ahead = wanted && first->def->setup_ahead && !first->deferred && !first->merged &&
                     !first->def->views_input && ladle__demand_forced(p, p->order[p->split]);
    if (p->setup_ahead) {
      p->setup_copy = *first;
      p->setup_copy.config = &p->config; /* the host stage's */
      p->setup_copy.active = NULL;
      /* Scratch of its own: its setup pass and the node's run pass may run at once, the host and the device
       * thread each running items as the same waiting worker (core/threads.h). */
      p->setup_copy.scratch = NULL;
      p->setup_copy.scratch_size = NULL;
      LADLE_ALLOC(p->setup_copy.scratch, p->config.num_workers);
      LADLE_ALLOC(p->setup_copy.scratch_size, p->config.num_workers);
    }
  }
  p->num_iters = staged ? 3 : 1;
  LADLE_ALLOC(p->iters, p->num_iters);
  for (int i = 0; i < p->num_iters; i++) LADLE_TRY(iter_alloc(p, &p->iters[i]));
  LADLE_CHECK(pthread_create(&p->thread, NULL, staged ? host_main : serial_main, p) == 0, LADLE_ERROR_OUT_OF_MEMORY,
              "cannot start the executor thread");
  p->thread_started = 1;
  if (staged) {
    LADLE_CHECK(pthread_create(&p->device_thread, NULL, device_main, p) == 0, LADLE_ERROR_OUT_OF_MEMORY,
                "cannot start the executor's device-stage thread");
    p->device_thread_started = 1;
  }
done:
  return st;
}

void ladle__executor_stop(ladle_pipeline *p) {
  if (p->thread_started) {
    pthread_mutex_lock(&p->lock);
    atomic_store(&p->stop, 1);
    pthread_cond_broadcast(&p->space);
    pthread_cond_broadcast(&p->ready);
    pthread_mutex_unlock(&p->lock);
    pthread_join(p->thread, NULL);
    p->thread_started = 0;
    if (p->device_thread_started) pthread_join(p->device_thread, NULL);
    p->device_thread_started = 0;
  }
  ladle__demand_fini(p);
  p->handoff = NULL;
  if (p->setup_ahead) {
    for (int w = 0; p->setup_copy.scratch && w < p->config.num_workers; w++) free(p->setup_copy.scratch[w]);
    free(p->setup_copy.scratch);
    free(p->setup_copy.scratch_size);
    p->setup_copy.scratch = NULL;
    p->setup_copy.scratch_size = NULL;
  }
  for (int i = 0; p->iters && i < p->num_iters; i++) iter_free(p, &p->iters[i]);
  free(p->iters);
  p->iters = NULL;
  if (!p->queue) return;
  int depth = p->params.prefetch_queue_depth;
  for (int i = 0; i < p->queue_count; i++) clear_slot(p, &p->queue[(p->queue_head + i) % depth]);
  p->queue_count = 0;
  for (int i = 0; i < depth; i++) {
    free(p->queue[i].outputs);
    free(p->queue[i].error);
    free(p->queue[i].records);
  }
  free(p->queue);
  p->queue = NULL;
}

/* Under the lock: run() would not block. */
static int run_would_return(ladle_pipeline *p) {
  return p->queue_count > 0 || atomic_load(&p->stop) || (!p->preparing && !all_fed(p));
}

int ladle_pipeline_wait_ready(ladle_pipeline *p, int timeout_ms) {
  if (!p || ladle_pipeline_build(p) != LADLE_OK) return 1; /* run() reports it */
  int64_t t0 = ladle__now_ns();
  pthread_mutex_lock(&p->lock);
  if (timeout_ms < 0) {
    while (!run_would_return(p)) pthread_cond_wait(&p->ready, &p->lock);
  } else {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += timeout_ms / 1000;
    until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
      until.tv_sec++;
      until.tv_nsec -= 1000000000L;
    }
    while (!run_would_return(p))
      if (pthread_cond_timedwait(&p->ready, &p->lock, &until) != 0) break;
  }
  int ready = run_would_return(p);
  pthread_mutex_unlock(&p->lock);
  atomic_fetch_add(&p->stat_wait_ns, ladle__now_ns() - t0); /* the consumer's wait, as in run() */
  return ready;
}

ladle_status ladle_pipeline_run(ladle_pipeline *p, ladle_batch **outputs) {
  if (!p || !outputs) return LADLE_FAIL(LADLE_ERROR_INVALID_ARGUMENT, "NULL argument");
  ladle_status checked = ladle_pipeline_build(p); /* also refuses a forked child */
  if (checked != LADLE_OK) return checked;
  int depth = p->params.prefetch_queue_depth;
  pthread_mutex_lock(&p->lock);
  if (p->queue_count == 0 && !p->preparing && !all_fed(p)) { /* waiting would never end */
    const char *name = "";
    for (int i = 0; i < p->num_fed && !name[0]; i++)
      if (!ladle__external_count(p->fed[i])) name = p->fed[i]->name;
    pthread_mutex_unlock(&p->lock);
    if (!name[0]) return LADLE_FAIL(LADLE_ERROR_STATE, "no seed was fed for the next iteration: feed one first");
    return LADLE_FAIL(LADLE_ERROR_STATE, "external_source '%s' has no data for the next iteration: feed it first",
                      name);
  }
  if (p->queue_count == 0) {
    int64_t t0 = ladle__now_ns();
    while (p->queue_count == 0 && !atomic_load(&p->stop)) pthread_cond_wait(&p->ready, &p->lock);
    atomic_fetch_add(&p->stat_wait_ns, ladle__now_ns() - t0);
  }
  if (p->queue_count == 0) {
    pthread_mutex_unlock(&p->lock);
    return LADLE_FAIL(LADLE_ERROR_STATE, "the pipeline is stopping");
  }
  ladle__ready *slot = &p->queue[p->queue_head];
  ladle_status st = slot->status;
  if (st == LADLE_OK) {
    for (int k = 0; k < p->num_outputs; k++) {
      outputs[k] = slot->outputs[k];
      slot->outputs[k] = NULL;
    }
    memcpy(p->last_records, slot->records, (size_t)slot->num_records * sizeof *p->last_records);
    p->num_last_records = slot->num_records;
  } else {
    ladle__restore_error(slot->error);
  }
  p->queue_head = (p->queue_head + 1) % depth;
  p->queue_count--;
  p->delivered = slot->iteration + 1;
  pthread_cond_broadcast(&p->space);
  pthread_mutex_unlock(&p->lock);
  return st;
}

ladle_status ladle_pipeline_last_records(ladle_pipeline *p, int64_t *records, int capacity, int *count) {
  if (!p || !count || (capacity > 0 && !records)) return LADLE_FAIL(LADLE_ERROR_INVALID_ARGUMENT, "NULL argument");
  pthread_mutex_lock(&p->lock);
  int n = p->last_records ? p->num_last_records : 0;
  if (n > capacity) n = capacity;
  if (n > 0) memcpy(records, p->last_records, (size_t)n * sizeof *records);
  pthread_mutex_unlock(&p->lock);
  *count = n;
  return LADLE_OK;
}

const char *ladle_pipeline_record_name(ladle_pipeline *p, const char *reader_name, int64_t index) {
  for (int i = 0; p && p->built && reader_name && i < p->num_nodes; i++) {
    ladle__node *n = p->nodes[i];
    if (n->def->sample_name && n->name && strcmp(n->name, reader_name) == 0) {
      ladle_reader_meta meta;
      if (n->def->reader_meta && n->def->reader_meta(n, &meta) == LADLE_OK && (index < 0 || index >= meta.epoch_size))
        return NULL;
      return n->def->sample_name(n, index);
    }
  }
  return NULL;
}

ladle_status ladle_pipeline_get_position(const ladle_pipeline *p, ladle_pipeline_position *pos) {
  pos->iteration = p->delivered;
  return LADLE_OK;
}

ladle_status ladle_pipeline_set_position(ladle_pipeline *p, const ladle_pipeline_position *pos) {
  if (!p || !pos) return LADLE_FAIL(LADLE_ERROR_INVALID_ARGUMENT, "NULL argument");
  if (ladle__pipeline_check_process(p) != LADLE_OK) return LADLE_ERROR_STATE;
  if (pos->iteration < 0)
    return LADLE_FAIL(LADLE_ERROR_INVALID_ARGUMENT, "iteration must be >= 0, got %lld", (long long)pos->iteration);
  /* Sample numbers are iteration * batch_size (+ slot): they must fit in 63 bits. */
  if (pos->iteration > (INT64_MAX - p->params.batch_size) / p->params.batch_size)
    return LADLE_FAIL(LADLE_ERROR_INVALID_ARGUMENT, "iteration %lld is too large: iteration x batch_size (%d) must "
                      "stay below 2^63", (long long)pos->iteration, p->params.batch_size);
  if (!p->built) {
    ladle_status st = ladle_pipeline_build(p);
    if (st != LADLE_OK) return st;
  }
  if (p->num_fed)
    return LADLE_FAIL(LADLE_ERROR_STATE, "a pipeline with external sources has no positions: fed data cannot be replayed");
  if (p->params.fed_seeds)
    return LADLE_FAIL(LADLE_ERROR_STATE, "a pipeline with fed seeds has no positions: feed the seeds again instead");
  int depth = p->params.prefetch_queue_depth;
  pthread_mutex_lock(&p->lock);
  atomic_fetch_add(&p->generation, 1);
  for (int i = 0; i < p->queue_count; i++) clear_slot(p, &p->queue[(p->queue_head + i) % depth]);
  p->queue_count = 0;
  p->next_iteration = pos->iteration;
  p->delivered = pos->iteration;
  pthread_cond_broadcast(&p->space);
  pthread_mutex_unlock(&p->lock);
  return LADLE_OK;
}

int ladle__gpu_sample_failed(ladle__gpu *g, int slot, ladle_status st) {
  if (!g->failed || !ladle__skip_data_error(st)) return 0;
  g->failed[slot] = 1;
  snprintf(g->messages[slot], LADLE_ERROR_MAX, "%s", ladle_last_error());
  return 1;
}

/* The sum over pools (NULL ones skipped); peaks are summed too, an upper bound. */
static void memory_stats(ladle__pool *pool, ladle__pool *other, ladle_memory_stats *out) {
  *out = (ladle_memory_stats){0};
  ladle__pool *pools[2] = {pool, other};
  for (int i = 0; i < 2; i++) {
    ladle__pool_stats s = {0};
    if (pools[i]) ladle__pool_get_stats(pools[i], &s);
    out->used_bytes += s.live_bytes;
    out->peak_used_bytes += s.peak_live_bytes;
    out->reserved_bytes += s.held_bytes;
    out->peak_reserved_bytes += s.peak_held_bytes;
  }
}

ladle_status ladle_pipeline_get_stats(const ladle_pipeline *p, ladle_pipeline_stats *stats) {
  if (!p || !stats) return LADLE_FAIL(LADLE_ERROR_INVALID_ARGUMENT, "NULL argument");
  stats->iterations = atomic_load(&p->stat_iterations);
  stats->prepare_seconds = (double)atomic_load(&p->stat_prepare_ns) * 1e-9;
  stats->wait_seconds = (double)atomic_load(&p->stat_wait_ns) * 1e-9;
  stats->host_stage_seconds = (double)atomic_load(&p->stat_host_ns) * 1e-9;
  stats->device_stage_seconds = (double)atomic_load(&p->stat_device_ns) * 1e-9;
  stats->gpu_wait_seconds = (double)atomic_load(&p->stat_gpu_wait_ns) * 1e-9;
  stats->skipped = ladle_pipeline_num_skipped(p);
  memory_stats(p->host_pool, NULL, &stats->host_pageable);
  ladle__gpu *g = p->gpu ? ladle__gpu_of(p->gpu) : NULL, *side = p->gpu ? ladle__gpu_side(p->gpu) : NULL;
  memory_stats(g ? g->pinned_pool : NULL, NULL, &stats->host_pinned);
  memory_stats(g ? g->device_pool : NULL, side ? side->device_pool : NULL, &stats->device);
  return LADLE_OK;
}

ladle_status ladle_pipeline_release_memory(ladle_pipeline *p, uint64_t *released) {
  if (!p) return LADLE_FAIL(LADLE_ERROR_INVALID_ARGUMENT, "NULL argument");
  uint64_t bytes = p->host_pool ? ladle__pool_trim(p->host_pool) : 0;
  ladle__gpu *g = p->gpu ? ladle__gpu_of(p->gpu) : NULL;
  ladle__gpu *side = p->gpu ? ladle__gpu_side(p->gpu) : NULL;
  if (g) bytes += ladle__pool_trim(g->pinned_pool) + ladle__pool_trim(g->device_pool);
  if (side) bytes += ladle__pool_trim(side->device_pool);
#ifdef __GLIBC__
  malloc_trim(0); /* what free() kept in the C library's heap goes back to the system too */
#endif
  if (released) *released = bytes;
  return LADLE_OK;
}
