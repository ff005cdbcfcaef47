/* The GPU launch shared by the element-wise operators (math_op.h). */
#include "ops/math/math_op.h"

#ifdef LADLE_HAVE_CUDA
ladle_status ladle__math_run_batch(ladle__node *n, ladle__gpu *g, const ladle__math_prog *prog,
                                   ladle__math_describe_fn describe) {
  int batch = n->config->batch_size;
  ladle__math_sample *d = NULL;
  /* run_batch runs between parallel passes: worker 0's scratch is free. */
  LADLE_MATH_PASS(ladle__scratch(n, &(ladle__sample){.worker = 0}, sizeof *d * (size_t)batch, (void **)&d));
  for (int i = 0; i < batch; i++) LADLE_MATH_PASS(describe(n, i, &d[i]));
  void *host = NULL, *dev = NULL;
  size_t bytes = ladle__gpu_math_param_bytes(batch);
  LADLE_MATH_PASS(ladle__gpu_params(g, bytes, &host, &dev));
  return ladle__gpu_math_prog(prog, d, batch, host, dev, bytes, g->stream);
}
#else
typedef int ladle__math_op_needs_cuda; /* (an empty translation unit is not ISO C) */
#endif
