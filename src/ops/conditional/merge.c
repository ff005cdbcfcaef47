/* _conditional.merge: where an `if` on a DataNode (enable_conditionals=True)
 * joins its branches. Each sample comes from the first input when its
 * predicate is true, from the second otherwise. The input not chosen may be
 * an empty sample: the executor computes only what merges read once their
 * predicates are known (pipeline/demand.h). Since every random draw is keyed
 * by (operator, epoch, sample), a sample's values do not depend on which
 * samples the branches computed. */
#include <string.h>

#include "ops/op.h"

#ifdef LADLE_HAVE_CUDA
#include "cuda/runtime.h"
#endif

enum { ARG_PREDICATE, ARG_COUNT };

static const ladle_arg_schema merge_args[ARG_COUNT] = {
    [ARG_PREDICATE] = {LADLE_REQUIRED_ARG("predicate", LADLE_ARG_INT), .per_sample = 1,
        .doc = "Per sample: nonzero takes the sample of input 0 (the `if` branch), zero that of input 1."},
};

static ladle_status merge_init(ladle__node *n) {
  if (n->in[0].dtype != n->in[1].dtype || n->in[0].ndim != n->in[1].ndim)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT,
                         "the branches of the `if` give %s with %d dimensions and %s with %d dimensions: a "
                         "variable must have one type and rank after the `if`",
                         ladle_dtype_name(n->in[0].dtype), n->in[0].ndim, ladle_dtype_name(n->in[1].dtype),
                         n->in[1].ndim);
  n->out[0] = n->in[0];
  if (!n->out[0].layout[0]) n->out[0] = n->in[1];
  return LADLE_OK;
}

static int chosen(const ladle__node *n, const ladle__sample *s) { return ladle__arg_int(n, s, ARG_PREDICATE) ? 0 : 1; }

static ladle_status merge_setup(ladle__node *n, ladle__sample *s) {
  ladle__set_shape(n, s, 0, ladle__input(n, s, chosen(n, s)).shape);
  return LADLE_OK;
}

static size_t sample_bytes(const ladle__tensor *t) {
  size_t bytes = ladle_dtype_size(t->dtype);
  for (int d = 0; d < t->ndim; d++) bytes *= (size_t)t->shape[d];
  return bytes;
}

static ladle_status merge_run(ladle__node *n, ladle__sample *s) {
  ladle__tensor in = ladle__input(n, s, chosen(n, s)), out = ladle__output(n, s, 0);
  memcpy(out.data, in.data, sample_bytes(&in));
  return LADLE_OK;
}

#ifdef LADLE_HAVE_CUDA
/* One device-to-device copy per sample, on the pipeline's stream. */
static ladle_status merge_run_batch(ladle__node *n, ladle__gpu *g) {
  for (int i = 0; i < n->config->batch_size && i < ladle_batch_num_samples(n->out_batches[0]); i++) {
    ladle__sample s = {.slot = i};
    ladle__tensor in = ladle__input(n, &s, chosen(n, &s)), out = ladle__output(n, &s, 0);
    size_t bytes = sample_bytes(&in);
    if (!bytes) continue;
    ladle_status st = ladle__cuda_copy(out.data, in.data, bytes, g->stream);
    if (st != LADLE_OK) return st;
  }
  return LADLE_OK;
}
#define MERGE_RUN_BATCH merge_run_batch
#else
#define MERGE_RUN_BATCH NULL
#endif

const ladle__op_def ladle__op_conditional_merge = {
    .schema = {.name = "_conditional.merge",
               .doc = "Joins the two branches of an `if` on a DataNode, sample by sample (made by @pipeline_def"
                      "(enable_conditionals=True); not called directly).",
               .min_inputs = 2, .max_inputs = 2, .num_outputs = 1,
               .devices = LADLE_ON_CPU_GPU,
               .num_args = ARG_COUNT, .args = merge_args},
    .init = merge_init,
    .setup = merge_setup,
    .run = merge_run,
    .run_batch = MERGE_RUN_BATCH,
    .selects_input = chosen,
};
