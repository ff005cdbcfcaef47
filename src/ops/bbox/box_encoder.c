/* box_encoder: SSD's matching of ground-truth boxes to default boxes
 * (anchors), as DALI's BoxEncoder: per sample, [A, 4] encoded boxes (centre
 * x, centre y, width, height; or normalized offsets) and [A] labels. The
 * arithmetic is bbox_kernels.h's, shared by the CPU and the GPU. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/bbox/bbox_common.h"
#include "ops/bbox/bbox_kernels.h"

enum { ARG_ANCHORS, ARG_CRITERIA, ARG_OFFSET, ARG_SCALE, ARG_MEANS, ARG_STDS, NUM_ARGS };

static const double default_means[] = {0, 0, 0, 0}, default_stds[] = {1, 1, 1, 1};

static const ladle_arg_schema box_encoder_args[] = {
    [ARG_ANCHORS] = {LADLE_REQUIRED_ARG("anchors", LADLE_ARG_FLOATS),
                     .doc = "The anchors (default boxes), ltrb, 4 values each, flattened."},
    [ARG_CRITERIA] = {LADLE_FLOAT_ARG("criteria", 0.5), LADLE_RANGE(0.0, 1.0),
                      .doc = "An anchor takes its best box when their IoU is above this."},
    [ARG_OFFSET] = {LADLE_BOOL_ARG("offset", 0),
                    .doc = "True: matched anchors get ((c_box - c_anchor) / wh_anchor - mean) / std and "
                           "(log(wh_box / wh_anchor) - mean) / std (values times scale), unmatched ones zeros; "
                           "False: the box's (or the anchor's) centre and size."},
    [ARG_SCALE] = {LADLE_FLOAT_ARG("scale", 1.0), .doc = "Multiplies boxes and anchors before the offsets."},
    [ARG_MEANS] = {LADLE_FLOATS_ARG("means", default_means), .doc = "[x, y, w, h] means of the offsets."},
    [ARG_STDS] = {LADLE_FLOATS_ARG("stds", default_stds),
                  .doc = "[x, y, w, h] standard deviations of the offsets (non-zero)."},
};

typedef struct encoder_state {
  ladle__box_encoder_params p;
  int64_t nanchors;
  float anchors[]; /* nanchors * 4 */
} encoder_state;

static ladle_status box_encoder_init(ladle__node *n) {
  ladle_status st = ladle__bbox_input_init(n, 0, "boxes [N, 4]");
  if (st != LADLE_OK) return st;
  if (n->in[1].dtype != LADLE_INT32 || n->in[1].ndim < 1 || n->in[1].ndim > 2)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "input 1 must be int32 labels [N] or [N, 1], got %s of %d "
                         "dimensions", ladle_dtype_name(n->in[1].dtype), n->in[1].ndim);
  const ladle_value *a = ladle__arg_value(n, ARG_ANCHORS), *m = ladle__arg_value(n, ARG_MEANS),
                    *sd = ladle__arg_value(n, ARG_STDS);
  if (a->count < 4 || a->count % 4)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT,
                         "argument 'anchors' has %d values: give 4 (l, t, r, b) per anchor, at least one", a->count);
  if (m->count != 4 || sd->count != 4)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument '%s' has %d values; give 4 (x, y, w, h)",
                         m->count != 4 ? "means" : "stds", m->count != 4 ? m->count : sd->count);
  encoder_state *es = malloc(sizeof *es + sizeof(float) * (size_t)a->count);
  if (!es) return LADLE_OP_FAIL(n, LADLE_ERROR_OUT_OF_MEMORY, "out of memory");
  n->state = es;
  es->nanchors = a->count / 4;
  for (int i = 0; i < a->count; i++) es->anchors[i] = (float)a->u.floats[i];
  for (int64_t j = 0; j < es->nanchors; j++) {
    const float *b = es->anchors + 4 * j;
    if (!(isfinite(b[0]) && isfinite(b[1]) && isfinite(b[2]) && isfinite(b[3]) && b[2] >= b[0] && b[3] >= b[1]))
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'anchors': anchor %lld is [%g, %g, %g, %g]; "
                           "anchors are ltrb with right >= left and bottom >= top", (long long)j, b[0], b[1], b[2],
                           b[3]);
  }
  es->p.criteria = (float)ladle__arg_float(n, NULL, ARG_CRITERIA);
  es->p.offset = (int)ladle__arg_int(n, NULL, ARG_OFFSET);
  es->p.scale = (float)ladle__arg_float(n, NULL, ARG_SCALE);
  for (int k = 0; k < 4; k++) {
    es->p.means[k] = (float)m->u.floats[k];
    es->p.stds[k] = (float)sd->u.floats[k];
    if (es->p.stds[k] == 0 || !isfinite(es->p.stds[k]) || !isfinite(es->p.means[k]))
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "arguments 'means' and 'stds' must be finite, 'stds' "
                           "non-zero");
  }
  if (!isfinite(es->p.scale) || es->p.scale == 0)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'scale' must be finite and non-zero");
  n->out[0] = (ladle__out_desc){LADLE_FLOAT32, 2, ""};
  n->out[1] = (ladle__out_desc){LADLE_INT32, 1, ""};
  return LADLE_OK;
}

static void box_encoder_fini(ladle__node *n) { free(n->state); }

static ladle_status box_encoder_setup(ladle__node *n, ladle__sample *s) {
  ladle_status st = ladle__bbox_check(n, s, 0, 1);
  if (st != LADLE_OK) return st;
  ladle__tensor boxes = ladle__input(n, s, 0), labels = ladle__input(n, s, 1);
  if (labels.shape[0] != boxes.shape[0] || (labels.ndim == 2 && labels.shape[1] != 1))
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "input 1 (labels) must be [%lld] or [%lld, 1] for %lld "
                         "boxes, got [%lld%s]", (long long)boxes.shape[0], (long long)boxes.shape[0],
                         (long long)boxes.shape[0], (long long)labels.shape[0], labels.ndim == 2 ? ", ..." : "");
  const encoder_state *es = n->state;
  int64_t shape[2] = {es->nanchors, 4};
  ladle__set_shape(n, s, 0, shape);
  ladle__set_shape(n, s, 1, shape);
  return LADLE_OK;
}

static ladle_status box_encoder_run(ladle__node *n, ladle__sample *s) {
  const encoder_state *es = n->state;
  ladle__tensor boxes = ladle__input(n, s, 0), labels = ladle__input(n, s, 1);
  int *best = NULL;
  ladle_status st = ladle__scratch(n, s, sizeof *best * (size_t)(boxes.shape[0] + 1), (void **)&best);
  if (st == LADLE_OK)
    ladle__box_encode(ladle__output(n, s, 0).data, ladle__output(n, s, 1).data, boxes.data, labels.data,
                      boxes.shape[0], es->anchors, es->nanchors, &es->p, best);
  return st;
}

#ifdef LADLE_HAVE_CUDA
static ladle_status box_encoder_run_batch(ladle__node *n, ladle__gpu *g) {
  const encoder_state *es = n->state;
  int batch = n->config->batch_size;
  ladle__gpu_box_encoder_desc *d = NULL;
  int64_t total = 1;
  for (int i = 0; i < batch; i++) total += ladle_batch_shape(n->in_batches[0], i)[0];
  int *best = NULL;
  void *host = NULL, *dev = NULL;
  size_t bytes = ladle__gpu_box_encoder_param_bytes(batch, es->nanchors);
  /* run_batch runs between parallel passes: worker 0's scratch is free. */
  ladle_status st = ladle__scratch(n, &(ladle__sample){.worker = 0}, sizeof *d * (size_t)batch, (void **)&d);
  if (st == LADLE_OK) st = ladle__gpu_device_scratch(g, sizeof *best * (size_t)total, (void **)&best);
  for (int i = 0, off = 0; st == LADLE_OK && i < batch; i++) {
    int64_t nb = ladle_batch_shape(n->in_batches[0], i)[0];
    d[i] = (ladle__gpu_box_encoder_desc){ladle_batch_data(n->in_batches[0], i), ladle_batch_data(n->in_batches[1], i),
                                         ladle_batch_data(n->out_batches[0], i),
                                         ladle_batch_data(n->out_batches[1], i), best + off, nb};
    off += (int)nb;
  }
  if (st == LADLE_OK) st = ladle__gpu_params(g, bytes, &host, &dev);
  return st == LADLE_OK ? ladle__gpu_box_encoder(d, batch, es->anchors, es->nanchors, &es->p, host, dev, bytes,
                                                 g->stream)
                        : st;
}
#define BOX_ENCODER_RUN_BATCH box_encoder_run_batch
#else
#define BOX_ENCODER_RUN_BATCH NULL
#endif

const ladle__op_def ladle__op_box_encoder = {
    .schema = {.name = "box_encoder",
               .doc = "Encodes ground-truth boxes (input 0: ltrb [N, 4] float32, N may be 0) and labels (input 1: "
                      "int32 [N] or [N, 1]) against `anchors` as SSD does: outputs [A, 4] float32 (centre x, centre "
                      "y, width, height, or offsets) and [A] int32 labels (0: unmatched). Every box claims its best "
                      "anchor; every anchor takes its best box when their IoU > criteria (DALI's ties: the last).",
               .min_inputs = 2, .max_inputs = 2, .num_outputs = 2,
               .devices = LADLE_ON_CPU_GPU,
               .num_args = NUM_ARGS, .args = box_encoder_args},
    .init = box_encoder_init,
    .fini = box_encoder_fini,
    .setup = box_encoder_setup,
    .run = box_encoder_run,
    .run_batch = BOX_ENCODER_RUN_BATCH,
};
