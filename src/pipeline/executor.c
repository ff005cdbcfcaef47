/* The executor: one thread that prepares iterations ahead of the consumer,
 * running each operator over the batch's samples on the worker pool, and a
 * queue of at most prefetch_queue_depth finished iterations.
 *
 * An operator runs in two parallel passes over the samples: setup (output
 * shapes), then, once each output batch has been taken from the pool in one
 * block, run. The first failing sample (lowest slot) decides the iteration's
 * error, so the message does not depend on thread timing either.
 *
 * With skip_bad_samples (pipeline/skip.h), a pass goes on past failing
 * samples; when every failure was bad data, their records are logged as bad
 * and the iteration is prepared again with those slots filled from good ones.
 *
 * A graph with external sources waits until each has a fed batch; that
 * iteration's batch size is the fed batches' (config.batch_size), at most
 * params.batch_size, which everything allocated at build is sized for. */
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

typedef struct pass {
  ladle_pipeline *p;
  ladle__node *node;
  int64_t iteration;
  unsigned generation;
  int setup; /* 1: setup pass, 0: run pass */
  int collect;       /* skip_bad_samples: go on past failures, noting data errors per slot */
  int data_failures; /* slots that failed with a data error (collect) */
  int fatal;         /* a failure that is not bad data */
  pthread_mutex_t lock;
  int failed_slot; /* lowest failing slot, or batch_size */
  ladle_status status;
  char error[LADLE_ERROR_MAX];
} pass;

static int abandoned(const pass *ps) {
  return atomic_load(&ps->p->stop) || atomic_load(&ps->p->generation) != ps->generation;
}

static void run_sample(void *ctx, int slot, int worker) {
  pass *ps = ctx;
  ladle__node *n = ps->node;
  ladle_pipeline *p = ps->p;
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
  ladle__sample s = {slot, worker, &p->refs[slot], p->names[slot],
                     n->sample_states ? n->sample_states + (size_t)slot * n->def->sample_state_size : NULL};
  ladle_status st = ps->setup ? n->def->setup(n, &s) : n->def->run(n, &s);
  if (st == LADLE_OK) return;
  const ladle__sample_ref *r = s.ref;
  if (s.name)
    ladle__wrap_error(st, "sample %d of iteration %lld (record %lld, epoch %lld, \"%s\")", slot,
                      (long long)ps->iteration, (long long)r->index, (long long)r->epoch, s.name);
  else
    ladle__wrap_error(st, "sample %d of iteration %lld", slot, (long long)ps->iteration);
  pthread_mutex_lock(&ps->lock);
  if (ps->collect && ladle__skip_data_error(st)) {
    p->skip.failed[slot] = 1;
    snprintf(p->skip.messages[slot], LADLE_ERROR_MAX, "%s", ladle_last_error());
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
  int batch = ps->p->config.batch_size;
  ps->failed_slot = batch;
  ps->status = LADLE_OK;
  ps->data_failures = ps->fatal = 0;
  ladle__parallel_for(ps->p->pool, batch, run_sample, ps);
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
static ladle_status take_fed(ladle_pipeline *p) {
  int size = 0;
  const char *first = NULL;
  ladle_status st = LADLE_OK;
  for (int k = 0; k < p->params.fed_seeds; k++) { /* this iteration's seeds (executor_main restores params.seed) */
    p->iteration_seeds[k] = p->seeds[p->seeds_head];
    p->seeds_head = (p->seeds_head + 1) % p->seeds_cap;
    p->seeds_count--;
  }
  if (p->params.fed_seeds) p->config.seed = p->iteration_seeds[0];
  for (int i = 0; i < p->num_fed; i++) {
    ladle__node *n = p->fed[i];
    ladle_batch *b = ladle__external_pop(n);
    p->value_batches[n->first_output] = b;
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
      ladle_batch_release(p->value_batches[n->first_output]);
      p->value_batches[n->first_output] = NULL;
    }
    return st;
  }
  if (p->num_fed) p->config.batch_size = size;
  return LADLE_OK;
}

/* The cap on every operator's output, so that an argument (a crop padded to
 * 30000x30000, resize_x=100000) cannot ask for gigabytes: a sample may hold
 * at most max_pixels x 4 elements (an RGBA image of max_pixels pixels). */
static ladle_status check_output_size(const ladle_pipeline *p, const ladle__node *n, int k, const int64_t *shapes,
                                      int batch) {
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
    const char *name = p->names[s];
    return LADLE_FAIL(LADLE_ERROR_LIMIT,
                      "%s: output %d of sample %d%s%s%s would be %s (%.3g elements), more than max_pixels x 4 = %.3g "
                      "allows; check the operator's size arguments or raise max_pixels",
                      n->def->schema.name, k, s, name ? " (" : "", name ? name : "", name ? ")" : "", shape, elems,
                      cap);
  }
  return LADLE_OK;
}

/* The samples of an iteration: the reader's plan, or numbered slots. */
static ladle_status plan_samples(ladle_pipeline *p, int64_t iteration, int batch) {
  if (p->reader) {
    ladle_status st = p->reader->def->plan(p->reader, iteration, p->refs);
    if (st != LADLE_OK) return st;
    for (int i = 0; i < batch; i++) p->names[i] = p->reader->def->sample_name(p->reader, p->refs[i].index);
    return LADLE_OK;
  }
  /* Unique sample numbers whatever the batch's size; with fed seeds each
   * iteration is a first iteration (its seed tells it apart). */
  int64_t first = p->params.fed_seeds ? 0 : iteration * p->params.batch_size;
  for (int i = 0; i < batch; i++) {
    p->refs[i] = (ladle__sample_ref){first + i, 0, first + i, 0};
    p->names[i] = NULL;
  }
  return LADLE_OK;
}

/* One attempt at an iteration's operators; on success out[] gets the
 * pipeline's outputs. *skippable: it failed on bad data only (collect). */
static ladle_status attempt(ladle_pipeline *p, int64_t iteration, unsigned generation, ladle_batch **out,
                            int *skippable) {
  ladle_status st = LADLE_OK;
  int batch = p->config.batch_size; /* this iteration's: fed batches may be smaller */
  pass ps = {.p = p, .iteration = iteration, .generation = generation, .collect = p->skip.enabled && (p->reader ? !p->num_fed : p->num_fed > 0)};
  pthread_mutex_init(&ps.lock, NULL);
  ladle__gpu *gpu = p->gpu ? ladle__gpu_of(p->gpu) : NULL;
  *skippable = 0;
  if (gpu) LADLE_TRY(ladle__gpu_begin(p->gpu));
  ladle__demand_begin(p, batch);
  for (int i = 0; i < p->num_nodes; i++) {
    ladle__node *n = p->nodes[i];
    int64_t t0 = ladle__now_ns();
    n->active = NULL;
    if ((n->def->schema.flags & LADLE_OP_EXTERNAL)) { /* its output is the fed batch, taken by executor_main */
      ladle_batch *fed = n->out_batches[0] = p->value_batches[n->first_output];
      if (n->device != LADLE_ON_CPU) LADLE_TRY(take_gpu_batch(gpu, fed));
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
    for (int k = 0; k < n->num_inputs; k++) n->in_batches[k] = p->value_batches[n->inputs[k]];
    for (int k = 0; k < n->num_sources; k++) n->source_batches[k] = p->value_batches[n->sources[k]];
    n->active = ladle__demand_mask(p, i);
    if (n->num_sources) LADLE_TRY(ladle__check_arg_sources(n, batch, (const char *const *)p->names));
    if (n->def->produce) { /* makes its own outputs (a callback operator) */
      st = n->def->produce(n, gpu, p->host_pool, iteration, batch);
      if (st != LADLE_OK) {
        ladle__wrap_error(st, "iteration %lld", (long long)iteration);
        goto done;
      }
      for (int k = 0; k < n->num_outputs; k++) p->value_batches[n->first_output + k] = n->out_batches[k];
      /* GPU outputs: ordered before this iteration's stream, kept until its work is done */
      for (int k = 0; k < n->num_outputs && n->device != LADLE_ON_CPU; k++) LADLE_TRY(take_gpu_batch(gpu, n->out_batches[k]));
      atomic_fetch_add(&n->busy_ns, ladle__now_ns() - t0);
      continue;
    }
    ps.node = n;
    ps.setup = 1;
    st = run_pass(&ps);
    *skippable = st != LADLE_OK && ps.data_failures && !ps.fatal;
    if (st != LADLE_OK) goto done;
    for (int k = 0; k < n->num_outputs; k++) {
      int ndim = n->out[k].ndim;
      int64_t *shapes = p->shapes;
      for (int s = 0; s < batch; s++)
        memcpy(shapes + (size_t)s * ndim, n->out_shapes + ((size_t)s * n->num_outputs + k) * LADLE_MAX_NDIM,
               sizeof(int64_t) * ndim);
      LADLE_TRY(check_output_size(p, n, k, shapes, batch));
      ladle_batch *b = NULL;
      ladle__pool *data_pool = n->device == LADLE_ON_CPU ? p->host_pool : gpu->device_pool;
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
      p->value_batches[n->first_output + k] = n->out_batches[k] = b;
    }
    if (n->def->views_input || n->merged) {
      /* the view is the output, or the consumer computes it: nothing to run */
    } else if (n->device == LADLE_ON_CPU) {
      ps.setup = 0;
      st = run_pass(&ps);
      *skippable = st != LADLE_OK && ps.data_failures && !ps.fatal;
      if (st != LADLE_OK) goto done;
    } else if (!n->fused_into) { /* a fused node runs inside its consumer's turn, in one kernel with it */
      gpu->failed = ps.collect ? p->skip.failed : NULL;
      gpu->messages = ps.collect ? p->skip.messages : NULL;
      st = n->fused_from ? n->fused_from->def->run_batch_epilogue(n->fused_from, n, gpu) : n->def->run_batch(n, gpu);
      if (st != LADLE_OK && gpu->failed && ladle__skip_data_error(st))
        *skippable = memchr(gpu->failed, 1, (size_t)batch) != NULL;
      if (st != LADLE_OK) {
        ladle__wrap_error(st, "iteration %lld", (long long)iteration);
        goto done;
      }
    }
    n->active = NULL;
    atomic_fetch_add(&n->busy_ns, ladle__now_ns() - t0);
  }
  for (int k = 0; k < p->num_outputs; k++) {
    out[k] = p->value_batches[p->outputs[k]];
    ladle_batch_retain(out[k]);
  }
done:
  if (gpu) {
    /* Also after a failure: what queued work reads must outlive it. */
    ladle_status end = ladle__gpu_end(p->gpu, st == LADLE_OK ? out : NULL, st == LADLE_OK ? p->num_outputs : 0);
    if (st == LADLE_OK && end != LADLE_OK) {
      for (int k = 0; k < p->num_outputs; k++) ladle_batch_release(out[k]);
      st = end;
    }
  }
  for (int i = 0; i < p->num_nodes; i++) p->nodes[i]->active = NULL;
  for (int v = 0; v < p->num_values; v++) {
    ladle_batch_release(p->value_batches[v]);
    p->value_batches[v] = NULL;
  }
  pthread_mutex_destroy(&ps.lock);
  return st;
}

/* Skipping in a pipeline fed by external sources only: the failed slots
 * leave the fed batches (copies of the good samples; `fed` keeps the
 * originals for the next attempt), the refs and the names; the batch size
 * shrinks. Fed GPU batches are not shrunk (LADLE_ERROR_UNSUPPORTED). */
static ladle_status drop_failed_fed(ladle_pipeline *p, ladle_batch **fed, int *batch) {
  ladle_status st = LADLE_OK;
  int kept = 0, n = *batch;
  for (int s = 0; s < n; s++) kept += !p->skip.failed[s];
  LADLE_CHECK(kept > 0, LADLE_ERROR_CORRUPT_DATA, "every sample of the fed batch failed: %s", p->skip.messages[0]);
  for (int i = 0; i < p->num_fed; i++) {
    ladle_batch *b = fed[i], *small = NULL;
    LADLE_CHECK(ladle_batch_device(b) == LADLE_DEVICE_CPU, LADLE_ERROR_UNSUPPORTED,
                "external source '%s': a bad sample of a GPU batch cannot be dropped (%s)", p->fed[i]->name,
                p->skip.messages[0]);
    int ndim = b->ndim, k = 0;
    for (int s = 0; s < n; s++)
      if (!p->skip.failed[s]) memcpy(p->shapes + (size_t)k++ * ndim, b->shapes + (size_t)s * ndim, sizeof(int64_t) * ndim);
    LADLE_TRY(ladle__batch_create(p->host_pool, p->host_pool, b->dtype, kept, ndim, p->shapes, b->layout, &small));
    for (int s = 0, k2 = 0; s < n; s++)
      if (!p->skip.failed[s]) memcpy(ladle_batch_data(small, k2++), ladle_batch_data(b, s), b->offsets[s + 1] - b->offsets[s]);
    ladle_batch_release(b);
    fed[i] = small;
  }
  for (int s = 0, k = 0; s < n; s++) {
    if (p->skip.failed[s]) continue;
    p->refs[k] = p->refs[s];
    p->names[k++] = p->names[s];
  }
  *batch = p->config.batch_size = kept;
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
static ladle_status borrow_sample(ladle_pipeline *p, int64_t iteration, int batch) {
  ladle_status st = LADLE_OK;
  int64_t epoch = p->refs[0].epoch;
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
          int pad = p->refs[j].pad;
          p->refs[j] = scan[i];
          p->refs[j].pad = pad;
          p->names[j] = name;
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

/* Runs one iteration; on success out[] gets the pipeline's outputs. Bad
 * samples (skip_bad_samples) cost one more attempt per batch they appear in
 * first; once known they are replaced before the attempt (in a pipeline fed
 * only by external sources: dropped, see drop_failed_fed). */
static ladle_status run_iteration(ladle_pipeline *p, int64_t iteration, unsigned generation,
                                  ladle_batch **out) {
  int batch = p->config.batch_size;
  ladle_status st = plan_samples(p, iteration, batch);
  int drop = p->skip.enabled && !p->reader && p->num_fed > 0;
  ladle_batch **fed = drop ? calloc((size_t)p->num_fed, sizeof *fed) : NULL;
  if (drop && !fed) st = LADLE_FAIL(LADLE_ERROR_OUT_OF_MEMORY, "out of memory");
  for (int i = 0; fed && i < p->num_fed; i++) { /* attempt() releases the values: keep the fed batches */
    fed[i] = p->value_batches[p->fed[i]->first_output];
    ladle_batch_retain(fed[i]);
  }
  while (st == LADLE_OK) {
    if (p->reader && ladle__skip_all_bad(&p->skip, p->refs, batch)) st = borrow_sample(p, iteration, batch);
    if (p->reader && st == LADLE_OK) st = ladle__skip_substitute(&p->skip, p->refs, p->names, batch, iteration);
    if (st != LADLE_OK) break;
    if (p->skip.enabled) memset(p->skip.failed, 0, (size_t)batch);
    int skippable = 0;
    st = attempt(p, iteration, generation, out, &skippable);
    if (st == LADLE_OK || !skippable) break;
    int before = p->skip.num_bad;
    st = ladle__skip_record(&p->skip, &p->lock, p->refs, p->names, batch, iteration);
    if (st == LADLE_OK && p->skip.num_bad == before) /* cannot happen: a failed slot's record was not known bad */
      st = LADLE_FAIL(LADLE_ERROR_INTERNAL, "skipping bad samples made no progress in iteration %lld",
                      (long long)iteration);
    if (st == LADLE_OK && fed) {
      st = drop_failed_fed(p, fed, &batch);
      for (int i = 0; st == LADLE_OK && i < p->num_fed; i++) {
        p->value_batches[p->fed[i]->first_output] = fed[i];
        ladle_batch_retain(fed[i]);
      }
    }
  }
  for (int i = 0; fed && i < p->num_fed; i++) ladle_batch_release(fed[i]);
  free(fed);
  return st;
}

static void clear_slot(ladle_pipeline *p, ladle__ready *r) {
  for (int k = 0; k < p->num_outputs; k++) {
    ladle_batch_release(r->outputs[k]);
    r->outputs[k] = NULL;
  }
}

static void *executor_main(void *arg) {
  ladle_pipeline *p = arg;
  int depth = p->params.prefetch_queue_depth;
  pthread_mutex_lock(&p->lock);
  while (!atomic_load(&p->stop)) {
    if (p->queue_count == depth || !all_fed(p)) {
      pthread_cond_wait(&p->space, &p->lock);
      continue;
    }
    int64_t iteration = p->next_iteration++;
    unsigned generation = atomic_load(&p->generation);
    ladle__ready *slot = &p->queue[(p->queue_head + p->queue_count) % depth];
    ladle__clear_error();
    ladle_status st = take_fed(p);
    p->preparing = 1;
    pthread_mutex_unlock(&p->lock);

    if (st == LADLE_OK) {
      int64_t t0 = ladle__now_ns();
      st = run_iteration(p, iteration, generation, slot->outputs);
      atomic_fetch_add(&p->stat_prepare_ns, ladle__now_ns() - t0);
      atomic_fetch_add(&p->stat_iterations, 1);
    }
    p->config.batch_size = p->params.batch_size;
    p->config.seed = p->params.seed;

    pthread_mutex_lock(&p->lock);
    p->preparing = 0;
    if (atomic_load(&p->generation) != generation) { /* repositioned meanwhile: drop it */
      if (st == LADLE_OK) clear_slot(p, slot);
      continue;
    }
    slot->iteration = iteration;
    slot->status = st;
    slot->num_records = p->reader && st == LADLE_OK ? p->config.batch_size : 0;
    for (int i = 0; i < slot->num_records; i++) slot->records[i] = p->refs[i].index;
    snprintf(slot->error, LADLE_ERROR_MAX, "%s", st == LADLE_OK ? "" : ladle_last_error());
    p->queue_count++;
    pthread_cond_broadcast(&p->ready);
  }
  pthread_mutex_unlock(&p->lock);
  return NULL;
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
  LADLE_CHECK(pthread_create(&p->thread, NULL, executor_main, p) == 0, LADLE_ERROR_OUT_OF_MEMORY,
              "cannot start the executor thread");
  p->thread_started = 1;
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
  }
  ladle__demand_fini(p);
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

int64_t ladle__now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

int ladle__gpu_sample_failed(ladle__gpu *g, int slot, ladle_status st) {
  if (!g->failed || !ladle__skip_data_error(st)) return 0;
  g->failed[slot] = 1;
  snprintf(g->messages[slot], LADLE_ERROR_MAX, "%s", ladle_last_error());
  return 1;
}

static void memory_stats(ladle__pool *pool, ladle_memory_stats *out) {
  ladle__pool_stats s = {0};
  if (pool) ladle__pool_get_stats(pool, &s);
  *out = (ladle_memory_stats){s.live_bytes, s.peak_live_bytes, s.held_bytes, s.peak_held_bytes};
}

ladle_status ladle_pipeline_get_stats(const ladle_pipeline *p, ladle_pipeline_stats *stats) {
  if (!p || !stats) return LADLE_FAIL(LADLE_ERROR_INVALID_ARGUMENT, "NULL argument");
  stats->iterations = atomic_load(&p->stat_iterations);
  stats->prepare_seconds = (double)atomic_load(&p->stat_prepare_ns) * 1e-9;
  stats->wait_seconds = (double)atomic_load(&p->stat_wait_ns) * 1e-9;
  stats->skipped = ladle_pipeline_num_skipped(p);
  memory_stats(p->host_pool, &stats->host_pageable);
  ladle__gpu *g = p->gpu ? ladle__gpu_of(p->gpu) : NULL;
  memory_stats(g ? g->pinned_pool : NULL, &stats->host_pinned);
  memory_stats(g ? g->device_pool : NULL, &stats->device);
  return LADLE_OK;
}

ladle_status ladle_pipeline_release_memory(ladle_pipeline *p, uint64_t *released) {
  if (!p) return LADLE_FAIL(LADLE_ERROR_INVALID_ARGUMENT, "NULL argument");
  uint64_t bytes = p->host_pool ? ladle__pool_trim(p->host_pool) : 0;
  ladle__gpu *g = p->gpu ? ladle__gpu_of(p->gpu) : NULL;
  if (g) bytes += ladle__pool_trim(g->pinned_pool) + ladle__pool_trim(g->device_pool);
#ifdef __GLIBC__
  malloc_trim(0); /* what free() kept in the C library's heap goes back to the system too */
#endif
  if (released) *released = bytes;
  return LADLE_OK;
}
