/* external_source: batches the application feeds (ladle_pipeline_feed), one
 * per iteration, first in first out. The executor hands a fed batch to the
 * graph as this node's output, so nothing is copied; this file keeps the
 * queue and checks what is fed against the declared dtype, rank and layout. */
#include "ops/readers/external_source.h"

#include <stdlib.h>
#include <string.h>

enum { ARG_DTYPE, ARG_NDIM, ARG_LAYOUT, ARG_COUNT };
static const ladle_arg_schema external_args[ARG_COUNT] = {
    [ARG_DTYPE] = {LADLE_DTYPE_ARG("dtype", LADLE_UINT8), .doc = "Element type of the fed samples."},
    [ARG_NDIM] = {LADLE_INT_ARG("ndim", 3), LADLE_RANGE(0.0, LADLE_MAX_NDIM),
        .doc = "Rank of each fed sample (1 for encoded files, 3 for HWC images)."},
    [ARG_LAYOUT] = {LADLE_STRING_ARG("layout", ""),
        .doc = "Layout of the samples, e.g. \"HWC\"; empty, or one letter per dimension."},
};

typedef struct fed_queue {
  ladle_batch **items; /* a ring of cap entries: [head, head + count) */
  int head, count, cap;
} fed_queue;

static ladle_status external_init(ladle__node *n) {
  int ndim = (int)ladle__arg_int(n, NULL, ARG_NDIM);
  const char *layout = ladle__arg_string(n, ARG_LAYOUT);
  if (layout[0] && (int)strlen(layout) != ndim)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "layout \"%s\" does not have ndim = %d letters", layout,
                         ndim);
  if (strlen(layout) >= sizeof n->out[0].layout)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "layout \"%s\" is too long", layout);
  n->out[0].dtype = (ladle_dtype)ladle__arg_int(n, NULL, ARG_DTYPE);
  n->out[0].ndim = ndim;
  strcpy(n->out[0].layout, layout);
  fed_queue *q = calloc(1, sizeof *q);
  if (!q) return LADLE_OP_FAIL(n, LADLE_ERROR_OUT_OF_MEMORY, "out of memory");
  n->state = q;
  return LADLE_OK;
}

static void external_fini(ladle__node *n) {
  fed_queue *q = n->state;
  if (!q) return;
  while (q->count) ladle_batch_release(ladle__external_pop(n));
  free(q->items);
  free(q);
}

/* The executor takes fed batches as they are: never called per sample. */
static ladle_status external_setup(ladle__node *n, ladle__sample *s) {
  return LADLE_OP_FAIL(n, LADLE_ERROR_INTERNAL, "external_source has no per-sample setup");
}

const ladle__op_def ladle__op_external_source = {
    .schema = {.name = "external_source",
               .doc = "Batches the application feeds (Pipeline.feed_input, ladle_pipeline_feed), one per "
                      "iteration, first in first out; taken without a copy. device=\"gpu\" takes batches in GPU "
                      "memory.",
               .min_inputs = 0, .max_inputs = 0, .num_outputs = 1,
               .devices = LADLE_ON_CPU_GPU, .flags = LADLE_OP_MOVES_DATA | LADLE_OP_EXTERNAL,
               .num_args = ARG_COUNT, .args = external_args},
    .init = external_init,
    .fini = external_fini,
    .setup = external_setup,
};

ladle_status ladle__external_check(const ladle__node *n, const ladle_batch *b, int max_samples) {
  const ladle__out_desc *d = &n->out[0];
  int on_gpu = ladle_batch_device(b) == LADLE_DEVICE_CUDA;
  if (on_gpu != (n->device == LADLE_ON_GPU))
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "fed a batch in %s memory; this source (device=\"%s\") takes %s",
                         on_gpu ? "GPU" : "host", on_gpu ? "cpu" : "gpu", on_gpu ? "host batches" : "GPU batches");
  if (ladle_batch_dtype(b) != d->dtype || ladle_batch_ndim(b) != d->ndim)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "fed %s samples of rank %d; it was declared %s of rank %d",
                         ladle_dtype_name(ladle_batch_dtype(b)), ladle_batch_ndim(b), ladle_dtype_name(d->dtype),
                         d->ndim);
  int count = ladle_batch_num_samples(b);
  if (count < 1 || count > max_samples)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "fed %d samples; a batch holds 1 to %d (the batch size)",
                         count, max_samples);
  return LADLE_OK;
}

ladle_status ladle__external_push(ladle__node *n, ladle_batch *b) {
  fed_queue *q = n->state;
  if (q->count == q->cap) {
    int cap = q->cap ? 2 * q->cap : 4;
    ladle_batch **items = malloc(sizeof *items * (size_t)cap);
    if (!items) return LADLE_OP_FAIL(n, LADLE_ERROR_OUT_OF_MEMORY, "out of memory");
    for (int i = 0; i < q->count; i++) items[i] = q->items[(q->head + i) % q->cap];
    free(q->items);
    q->items = items;
    q->head = 0;
    q->cap = cap;
  }
  ladle_batch_retain(b);
  q->items[(q->head + q->count++) % q->cap] = b;
  return LADLE_OK;
}

ladle_batch *ladle__external_pop(ladle__node *n) {
  fed_queue *q = n->state;
  if (!q->count) return NULL;
  ladle_batch *b = q->items[q->head];
  q->head = (q->head + 1) % q->cap;
  q->count--;
  return b;
}

int ladle__external_count(const ladle__node *n) { return ((const fed_queue *)n->state)->count; }
