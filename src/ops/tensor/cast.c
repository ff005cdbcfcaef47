/* cast: converts every element to another type (ops/kernels/normalize.h's
 * rules: round to nearest even, saturate). */
#include "ops/geometry/normalize_kernel.h"
#include "ops/op.h"

static const ladle_arg_schema cast_args[] = {
    {LADLE_REQUIRED_ARG("dtype", LADLE_ARG_DTYPE), .doc = "The output type."},
};

static ladle_status cast_init(ladle__node *n) {
  n->out[0] = n->in[0];
  n->out[0].dtype = (ladle_dtype)ladle__arg_int(n, NULL, 0);
  return LADLE_OK;
}

static ladle_status cast_setup(ladle__node *n, ladle__sample *s) {
  ladle__set_shape(n, s, 0, ladle__input(n, s, 0).shape);
  return LADLE_OK;
}

static ladle_status cast_run(ladle__node *n, ladle__sample *s) {
  ladle__tensor in = ladle__input(n, s, 0), out = ladle__output(n, s, 0);
  size_t count = 1;
  for (int d = 0; d < in.ndim; d++) count *= (size_t)in.shape[d];
  ladle__convert(out.data, out.dtype, in.data, in.dtype, count);
  return LADLE_OK;
}

#ifdef LADLE_HAVE_CUDA
#include "ops/kernels/gpu_kernels.h"
#include "ops/tensor/tensor_kernels.h"

static ladle_status cast_run_batch(ladle__node *n, ladle__gpu *g) {
  int batch = n->config->batch_size;
  ladle__gpu_convert_desc *d = NULL;
  /* run_batch runs between parallel passes: worker 0's scratch is free. */
  ladle_status st = ladle__scratch(n, &(ladle__sample){.worker = 0}, sizeof *d * (size_t)batch, (void **)&d);
  for (int i = 0; st == LADLE_OK && i < batch; i++)
    d[i] = (ladle__gpu_convert_desc){ladle_batch_data(n->in_batches[0], i), ladle_batch_data(n->out_batches[0], i),
                                     (size_t)ladle__batch_sample_elems(n->in_batches[0], i)};
  void *host = NULL, *dev = NULL;
  size_t bytes = ladle__gpu_cast_param_bytes(batch);
  if (st == LADLE_OK) st = ladle__gpu_params(g, bytes, &host, &dev);
  return st == LADLE_OK ? ladle__gpu_cast(d, batch, n->out[0].dtype, n->in[0].dtype, host, dev, bytes, g->stream)
                        : st;
}
#define CAST_RUN_BATCH cast_run_batch
#else
#define CAST_RUN_BATCH NULL
#endif

const ladle__op_def ladle__op_cast = {
    .schema = {.name = "cast",
               .doc = "Converts elements to `dtype` (floats to integers: round to nearest even, saturate).",
               .min_inputs = 1, .max_inputs = 1, .num_outputs = 1,
               .devices = LADLE_ON_CPU_GPU,
               .num_args = 1, .args = cast_args},
    .init = cast_init,
    .setup = cast_setup,
    .run = cast_run,
    .run_batch = CAST_RUN_BATCH,
};
