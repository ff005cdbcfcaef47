/* transfer.to_gpu: what DataNode.gpu() adds. The input batch is one block of
 * pinned host memory (pipelines with GPU operators take host batches from a
 * pinned pool), so one asynchronous copy moves the whole batch. */
#include <string.h>

#include "ops/op.h"

#ifdef LADLE_HAVE_CUDA
#include "cuda/runtime.h"
#endif

static ladle_status transfer_init(ladle__node *n) {
  n->out[0] = n->in[0];
  return LADLE_OK;
}

static ladle_status transfer_setup(ladle__node *n, ladle__sample *s) {
  ladle__set_shape(n, s, 0, ladle__input(n, s, 0).shape);
  return LADLE_OK;
}

static ladle_status transfer_run_batch(ladle__node *n, ladle__gpu *g) {
#ifdef LADLE_HAVE_CUDA
  ladle_batch *in = n->in_batches[0], *out = n->out_batches[0];
  ladle_status st = ladle__gpu_keep(g, in);
  if (st != LADLE_OK) return st;
  return ladle__cuda_copy(out->data, in->data, in->offsets[in->num_samples], g->stream);
#else
  return LADLE_OP_FAIL(n, LADLE_ERROR_NOT_AVAILABLE, "this build of ladle has no CUDA support");
#endif
}

const ladle__op_def ladle__op_transfer_to_gpu = {
    .schema = {.name = "transfer.to_gpu",
               .doc = "Copies a batch from host to GPU memory (DataNode.gpu()).",
               .min_inputs = 1, .max_inputs = 1, .num_outputs = 1,
               .devices = LADLE_ON_MIXED, .flags = LADLE_OP_MOVES_DATA,
               .num_args = 0, .args = NULL},
    .init = transfer_init,
    .setup = transfer_setup,
    .run_batch = transfer_run_batch,
};
