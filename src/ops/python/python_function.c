/* python_function and dl_tensor_python_function (DALI's): operators whose
 * work is the application's function, called through the callback bound by
 * ladle_pipeline_add_callback_op once per iteration on the executor thread.
 * The Python package does the rest (per-sample or batch calls, NumPy/torch
 * views of the inputs, the outputs as batches); this file checks what comes
 * back: one batch of the iteration's size per output, on the operator's
 * device, of the same dtype and rank every iteration, with output_layouts
 * applied. The outputs' types are known after the first call (ladle__out_desc
 * ndim < 0 until then), so operators reading them are initialised then. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/batch.h"
#include "ops/op.h"

#ifdef LADLE_HAVE_CUDA
#include "cuda/runtime.h"
#endif

enum { ARG_NUM_OUTPUTS, ARG_BATCH_PROCESSING, ARG_OUTPUT_LAYOUTS, ARG_SYNCHRONIZE_STREAM, ARG_COUNT };

#define PF_COMMON_ARGS(batch_default)                                                                                 \
  [ARG_NUM_OUTPUTS] = {LADLE_INT_ARG("num_outputs", 1), LADLE_RANGE(0, LADLE_MAX_OUTPUTS),                            \
                       .doc = "How many outputs the function returns (a tuple of that many when more than one; "      \
                              "0: it returns None and runs for its side effects)."},                                  \
  [ARG_BATCH_PROCESSING] = {LADLE_BOOL_ARG("batch_processing", batch_default),                                        \
                            .doc = "True: the function is called once per batch with a list of samples per input, "   \
                                   "and returns a list per output; False: once per sample."},                         \
  [ARG_OUTPUT_LAYOUTS] = {LADLE_OPTIONAL_ARG("output_layouts", LADLE_ARG_STRINGS),                                    \
                          .doc = "The outputs' layouts: one string for every output, or one per output (each as "     \
                                 "long as its output's rank). Default: no layout."}

static const ladle_arg_schema pf_args[] = {PF_COMMON_ARGS(0)};

static const ladle_arg_schema dl_args[] = {
    PF_COMMON_ARGS(1),
    [ARG_SYNCHRONIZE_STREAM] = {LADLE_BOOL_ARG("synchronize_stream", 1),
                                .doc = "device=\"gpu\": wait for the pipeline's GPU work before the call, so the "
                                       "inputs are ready whatever stream the function uses. False: the function "
                                       "must order its work after the pipeline's stream itself."},
};

typedef struct pf_state {
  void *event; /* GPU: marks the pipeline's work before the call */
} pf_state;

static ladle_status pf_init(ladle__node *n) {
  const ladle_value *layouts = ladle__arg_value(n, ARG_OUTPUT_LAYOUTS);
  if (ladle__arg_given(n, ARG_OUTPUT_LAYOUTS)) {
    if (layouts->count != 1 && layouts->count != n->num_outputs)
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT,
                           "argument 'output_layouts' has %d entries; give one for all outputs or one per output (%d)",
                           layouts->count, n->num_outputs);
    for (int k = 0; k < layouts->count; k++)
      if (strlen(layouts->u.strings[k]) > LADLE_MAX_NDIM)
        return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'output_layouts': \"%s\" is longer than %d",
                             layouts->u.strings[k], LADLE_MAX_NDIM);
  }
  for (int k = 0; k < n->num_outputs; k++) n->out[k] = (ladle__out_desc){.ndim = -1}; /* the first call tells */
  pf_state *ps = calloc(1, sizeof *ps);
  if (!ps) return LADLE_OP_FAIL(n, LADLE_ERROR_OUT_OF_MEMORY, "out of memory");
  n->state = ps;
#ifdef LADLE_HAVE_CUDA
  int sync = n->def->schema.num_args <= ARG_SYNCHRONIZE_STREAM || ladle__arg_int(n, NULL, ARG_SYNCHRONIZE_STREAM);
  if (n->device == LADLE_ON_GPU && sync) {
    ladle_status st = ladle__cuda_event_create(n->config->device_id, &ps->event);
    if (st != LADLE_OK) return st;
  }
#endif
  return LADLE_OK;
}

static void pf_fini(ladle__node *n) {
  pf_state *ps = n->state;
#ifdef LADLE_HAVE_CUDA
  if (ps) ladle__cuda_event_destroy(ps->event);
#endif
  free(ps);
  n->state = NULL;
}

/* Setup/run are never called: produce makes the outputs. */
static ladle_status pf_setup(ladle__node *n, ladle__sample *s) {
  (void)s;
  return LADLE_OP_FAIL(n, LADLE_ERROR_INTERNAL, "has no per-sample setup");
}

static const char *layout_of(const ladle__node *n, int k) {
  if (!ladle__arg_given(n, ARG_OUTPUT_LAYOUTS)) return "";
  const ladle_value *v = ladle__arg_value(n, ARG_OUTPUT_LAYOUTS);
  return v->u.strings[v->count == 1 ? 0 : k];
}

/* Checks output k against the iteration and earlier iterations; *b may
 * become a view with the declared layout (the callback's batch released). */
static ladle_status check_output(ladle__node *n, int k, int batch, ladle__pool *host_pool, ladle_batch **b) {
  ladle_batch *out = *b;
  if (!out) return LADLE_OP_FAIL(n, LADLE_ERROR_INTERNAL, "the function gave no batch for output %d", k);
  int on_gpu = ladle_batch_device(out) == LADLE_DEVICE_CUDA;
  if (on_gpu != (n->device == LADLE_ON_GPU))
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "output %d is in %s memory; device=\"%s\" returns %s", k,
                         on_gpu ? "GPU" : "host", n->device == LADLE_ON_GPU ? "gpu" : "cpu",
                         on_gpu ? "host arrays" : "GPU arrays");
  if (ladle_batch_num_samples(out) != batch)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "output %d has %d samples; the batch has %d", k,
                         ladle_batch_num_samples(out), batch);
  ladle__out_desc *d = &n->out[k];
  int ndim = ladle_batch_ndim(out);
  if (d->ndim >= 0 && (ladle_batch_dtype(out) != d->dtype || ndim != d->ndim))
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT,
                         "output %d is %s of rank %d; earlier iterations gave %s of rank %d: the function must "
                         "return one dtype and rank",
                         k, ladle_dtype_name(ladle_batch_dtype(out)), ndim, ladle_dtype_name(d->dtype), d->ndim);
  const char *layout = layout_of(n, k);
  if (layout[0] && (int)strlen(layout) != ndim)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "output_layouts: \"%s\" does not fit output %d of rank %d",
                         layout, k, ndim);
  if (strcmp(ladle_batch_layout(out), layout) != 0) {
    /* The batch may be shared (an input handed back): relabel a view, not it. */
    ladle_batch *view = NULL;
    ladle_status st = ladle__batch_view(host_pool, out, ladle_batch_dtype(out), ndim, out->shapes, layout, &view);
    if (st != LADLE_OK) return LADLE_OP_FAIL(n, st, "output %d: %s", k, ladle_last_error());
    ladle_batch_release(out);
    *b = view;
  }
  if (d->ndim < 0) {
    d->dtype = ladle_batch_dtype(out);
    d->ndim = ndim;
    snprintf(d->layout, sizeof d->layout, "%s", layout);
  }
  return LADLE_OK;
}

static ladle_status pf_produce(ladle__node *n, ladle__gpu *g, ladle__pool *host_pool, int64_t iteration, int batch) {
  ladle_batch *outs[LADLE_MAX_OUTPUTS] = {0};
  char error[LADLE_ERROR_MAX] = "";
  ladle_status st = LADLE_OK;
#ifdef LADLE_HAVE_CUDA
  pf_state *ps = n->state;
  if (g && ps->event) {
    LADLE_TRY(ladle__cuda_event_record(ps->event, g->stream));
    LADLE_TRY(ladle__cuda_event_sync(ps->event));
  }
#endif
  ladle_callback_call call = {.iteration = iteration, .batch_size = batch, .num_inputs = n->num_inputs,
                              .inputs = n->in_batches, .num_outputs = n->num_outputs, .outputs = outs,
                              .cuda_stream = g ? g->stream : NULL, .error = error, .error_size = sizeof error};
  st = n->callback.call(n->callback.ctx, &call);
  if (st != LADLE_OK) {
    st = LADLE_OP_FAIL(n, st, "%s", error[0] ? error : "the function failed");
    goto done;
  }
  for (int k = 0; k < n->num_outputs; k++) LADLE_TRY(check_output(n, k, batch, host_pool, &outs[k]));
  for (int k = 0; k < n->num_outputs; k++) {
    n->out_batches[k] = outs[k];
    outs[k] = NULL;
  }
done:
  for (int k = 0; k < n->num_outputs; k++) ladle_batch_release(outs[k]);
  return st;
}

#define PF_DEF(sym, nm, args_, doc_)                                                                                  \
  const ladle__op_def ladle__op_##sym = {                                                                             \
      .schema = {.name = nm, .doc = doc_, .min_inputs = 0, .max_inputs = LADLE_MAX_INPUTS,                            \
                 .num_outputs = -1 - ARG_NUM_OUTPUTS, .devices = LADLE_ON_CPU_GPU, .flags = LADLE_OP_CALLBACK,         \
                 .num_args = (int)(sizeof args_ / sizeof args_[0]), .args = args_},                                    \
      .init = pf_init, .fini = pf_fini, .setup = pf_setup, .produce = pf_produce}

PF_DEF(python_function, "python_function", pf_args,
       "Runs a Python function (the keyword argument `function`, given in Python) on the inputs, per sample or per "
       "batch: on the cpu it gets NumPy arrays (read-only views of the pipeline's memory) and returns NumPy arrays "
       "(or anything np.asarray takes); on the gpu it gets CuPy arrays when CuPy is installed, else torch CUDA "
       "tensors, and returns any array with __dlpack__ or __cuda_array_interface__. The outputs' dtype and rank "
       "are those of the first call's results and may not change.");
PF_DEF(dl_tensor_python_function, "dl_tensor_python_function", dl_args,
       "python_function with DLPack: the function gets DLPack capsules (a list per input with batch_processing, "
       "DALI's default here) and returns capsules or objects with __dlpack__.");
