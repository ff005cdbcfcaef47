/* segmentation.random_object_bbox: the bounding box of a randomly chosen
 * object (a connected blob of one label) of a label map, as DALI 2.4
 * chooses it: a foreground coin, then a class (weighted; classes without a
 * blob meeting the threshold are dropped and another is drawn), then a blob
 * of that class (among the k largest by box volume). Blobs connect along
 * the axes (4-connectivity in 2-D, 6 in 3-D), never diagonally, and never
 * across labels. */
#include <stdlib.h>
#include <string.h>

#include "ops/op.h"
#include "ops/kernels/dtype.h"
#include "ops/tensor/tensor_args.h"

enum {
  ARG_BACKGROUND, ARG_CACHE_OBJECTS, ARG_CLASS_WEIGHTS, ARG_CLASSES, ARG_FOREGROUND_PROB, ARG_FORMAT,
  ARG_IGNORE_CLASS, ARG_K_LARGEST, ARG_OUTPUT_CLASS, ARG_THRESHOLD, ARG_COUNT
};
enum { FORMAT_ANCHOR_SHAPE, FORMAT_START_END, FORMAT_BOX };

#define MAX_CLASSES LADLE_TENSOR_MAX_LIST

static const ladle_arg_schema args[ARG_COUNT] = {
    [ARG_BACKGROUND] = {LADLE_INT_ARG("background", 0), .per_sample = 1, LADLE_RANGE(-2147483648.0, 2147483647.0),
        .doc = "The background label. Not given: 0, or, when 0 is one of `classes`, the smallest class minus 1."},
    [ARG_CACHE_OBJECTS] = {LADLE_BOOL_ARG("cache_objects", 0), .no_effect = 1,
        .doc = "Accepted for DALI scripts: a speed option (DALI keeps the boxes of inputs it has seen); the "
               "boxes, and so the results, are the same without it."},
    [ARG_CLASS_WEIGHTS] = {LADLE_OPTIONAL_ARG("class_weights", LADLE_ARG_FLOATS), .per_sample = 1,
        .doc = "Relative probabilities of the classes (one per `classes` entry; without classes, of the labels "
               "1, 2, ... skipping the background), normalized."},
    [ARG_CLASSES] = {LADLE_OPTIONAL_ARG("classes", LADLE_ARG_INTS), .per_sample = 1,
        .doc = "The foreground labels; default: every label of the input other than the background."},
    [ARG_FOREGROUND_PROB] = {LADLE_FLOAT_ARG("foreground_prob", 1), .per_sample = 1, LADLE_RANGE(0.0, 1.0),
        .doc = "The probability of choosing an object; otherwise the box is the whole input."},
    [ARG_FORMAT] = {LADLE_STRING_ARG("format", "anchor_shape"), LADLE_CHOICES("anchor_shape", "start_end", "box"),
        .doc = "\"anchor_shape\": outputs anchor and shape; \"start_end\": start and end (one past); \"box\": one "
               "output, start then end. int32, one value per input dimension each."},
    [ARG_IGNORE_CLASS] = {LADLE_BOOL_ARG("ignore_class", 0),
        .doc = "Choose among all blobs of all classes alike (instead of a class first). Exclusive with classes, "
               "class_weights and output_class."},
    [ARG_K_LARGEST] = {LADLE_OPTIONAL_ARG("k_largest", LADLE_ARG_INT), LADLE_RANGE(1.0, 2147483647.0),
        .doc = "Choose only among the k blobs with the largest boxes (by volume; of the chosen class, or of all "
               "with ignore_class)."},
    [ARG_OUTPUT_CLASS] = {LADLE_BOOL_ARG("output_class", 0), .adds_outputs = 1,
        .doc = "Add an output: the chosen blob's label (int32, a scalar), or the background label when the box is "
               "the whole input."},
    [ARG_THRESHOLD] = {LADLE_OPTIONAL_ARG("threshold", LADLE_ARG_INTS), .per_sample = 1,
        .doc = "Per-axis minimum extent of a blob's box (one per input dimension); a class without such a blob "
               "is dropped and another drawn; with none left the box is the whole input."},
};

typedef struct blob {
  int32_t lo[LADLE_MAX_NDIM], hi[LADLE_MAX_NDIM];
  int64_t label, volume;
} blob;

typedef struct blobs {
  blob *b;
  int64_t count, cap;
} blobs;

static ladle_status rob_init(ladle__node *n) {
  int ignore = (int)ladle__arg_int(n, NULL, ARG_IGNORE_CLASS);
  if (ignore && (ladle__arg_given(n, ARG_CLASSES) || ladle__arg_given(n, ARG_CLASS_WEIGHTS) ||
                 ladle__arg_int(n, NULL, ARG_OUTPUT_CLASS)))
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT,
                         "argument 'ignore_class' is exclusive with 'classes', 'class_weights' and 'output_class'");
  ladle_dtype t = n->in[0].dtype;
  if (t == LADLE_FLOAT16 || t == LADLE_FLOAT32 || t == LADLE_FLOAT64)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "the input must be a label map of integers, not %s",
                         ladle_dtype_name(n->in[0].dtype));
  if (n->in[0].ndim < 1)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "the input must have at least 1 dimension");
  int format = ladle__arg_choice(n, ARG_FORMAT);
  int k = 0;
  n->out[k++] = (ladle__out_desc){LADLE_INT32, 1, ""};
  if (format != FORMAT_BOX) n->out[k++] = (ladle__out_desc){LADLE_INT32, 1, ""};
  if (ladle__arg_int(n, NULL, ARG_OUTPUT_CLASS)) n->out[k++] = (ladle__out_desc){LADLE_INT32, 0, ""};
  if (k != n->num_outputs)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INTERNAL, "the node has %d outputs, the arguments give %d", n->num_outputs, k);
  return LADLE_OK;
}

static ladle_status rob_setup(ladle__node *n, ladle__sample *s) {
  int ndim = n->in[0].ndim;
  int64_t box[1] = {ndim}, both[1] = {2 * ndim};
  int format = ladle__arg_choice(n, ARG_FORMAT), k = 0;
  ladle__set_shape(n, s, k++, format == FORMAT_BOX ? both : box);
  if (format != FORMAT_BOX) ladle__set_shape(n, s, k++, box);
  if (k < n->num_outputs) ladle__set_shape(n, s, k, NULL);
  return LADLE_OK;
}

/* The background and the classes with their weights, as DALI derives them. */
typedef struct class_info {
  int64_t background;
  int num; /* -1: every label present */
  int64_t cls[MAX_CLASSES];
  double weight[MAX_CLASSES];
} class_info;

static ladle_status classes_of(ladle__node *n, ladle__sample *s, class_info *ci) {
  double c[MAX_CLASSES], w[MAX_CLASSES];
  int bg_given = ladle__arg_given(n, ARG_BACKGROUND);
  ci->background = ladle__arg_int(n, s, ARG_BACKGROUND);
  int nc = ladle__tensor_list(n, s, ARG_CLASSES, c, MAX_CLASSES);
  int nw = ladle__tensor_list(n, s, ARG_CLASS_WEIGHTS, w, MAX_CLASSES);
  if (nc == -2 || nw == -2) return LADLE_ERROR_INVALID_ARGUMENT;
  if (nc >= 0 && nw >= 0 && nc != nw)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "arguments 'classes' (%d) and 'class_weights' (%d) must have "
                         "one value per class", nc, nw);
  ci->num = nc >= 0 ? nc : nw;
  if (nc >= 0) {
    int64_t lowest = nc ? (int64_t)c[0] : 0;
    int clash = 0;
    for (int i = 0; i < nc; i++) {
      ci->cls[i] = (int64_t)c[i];
      if (ci->cls[i] < lowest) lowest = ci->cls[i];
      clash |= ci->cls[i] == ci->background;
    }
    if (clash && bg_given)
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'classes' holds the background label %lld",
                           (long long)ci->background);
    if (clash) ci->background = lowest - 1;
  } else if (nw >= 0) {
    for (int i = 0, cls = 0; i < nw; i++, cls++) {
      if (cls == ci->background) cls++;
      ci->cls[i] = cls;
    }
  }
  for (int i = 0; i < ci->num; i++) {
    ci->weight[i] = nw >= 0 ? w[i] : 1.0;
    if (!(ci->weight[i] >= 0))
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'class_weights': %g is negative", ci->weight[i]);
  }
  return LADLE_OK;
}

/* The blobs of the input, in the order of their first pixel (raster order). */
static ladle_status find_blobs(ladle__node *n, ladle__sample *s, ladle__tensor in, int64_t background, blobs *out) {
  int ndim = in.ndim;
  int64_t total = 1, stride[LADLE_MAX_NDIM], coord[LADLE_MAX_NDIM] = {0};
  for (int d = ndim - 1; d >= 0; d--) stride[d] = total, total *= in.shape[d];
  int64_t *parent = NULL;
  ladle_status st = ladle__scratch(n, s, (size_t)total * sizeof *parent, (void **)&parent);
  if (st != LADLE_OK) return st;
  /* Union-find whose roots are each blob's first pixel: a pixel joins the
   * blobs of its predecessors along each axis that share its label. */
  for (int64_t i = 0; i < total; i++) {
    int64_t l = ladle__load_i64(in.data, (size_t)(i), in.dtype);
    parent[i] = i;
    if (l != background)
      for (int d = 0; d < ndim; d++) {
        if (!coord[d] || ladle__load_i64(in.data, (size_t)(i - stride[d]), in.dtype) != l) continue;
        int64_t a = i, b = i - stride[d];
        while (parent[a] != a) a = parent[a] = parent[parent[a]];
        while (parent[b] != b) b = parent[b] = parent[parent[b]];
        if (a < b) parent[b] = a;
        else parent[a] = b;
      }
    for (int d = ndim - 1; d >= 0 && ++coord[d] == in.shape[d]; d--) coord[d] = 0;
  }
  /* Parents precede children: one forward pass resolves every root, and a
   * root's slot then holds -(blob index + 1). */
  memset(coord, 0, sizeof coord);
  out->count = 0;
  for (int64_t i = 0; i < total; i++) {
    int64_t l = ladle__load_i64(in.data, (size_t)(i), in.dtype);
    if (l != background) {
      int64_t k;
      if (parent[i] == i) {
        if (out->count == out->cap) {
          int64_t cap = out->cap ? out->cap * 2 : 64;
          blob *grown = realloc(out->b, (size_t)cap * sizeof *grown);
          if (!grown) return LADLE_OP_FAIL(n, LADLE_ERROR_OUT_OF_MEMORY, "out of memory for %lld blobs", (long long)cap);
          out->b = grown;
          out->cap = cap;
        }
        k = out->count++;
        blob *b = &out->b[k];
        for (int d = 0; d < ndim; d++) b->lo[d] = (int32_t)coord[d], b->hi[d] = (int32_t)coord[d] + 1;
        b->label = l;
      } else {
        int64_t r = parent[i];
        while (r >= 0 && parent[r] >= 0 && parent[r] != r) r = parent[r];
        k = r >= 0 ? -parent[r] - 1 : -r - 1;
        blob *b = &out->b[k];
        for (int d = 0; d < ndim; d++) {
          if (coord[d] < b->lo[d]) b->lo[d] = (int32_t)coord[d];
          if (coord[d] >= b->hi[d]) b->hi[d] = (int32_t)coord[d] + 1;
        }
      }
      parent[i] = -(k + 1);
    }
    for (int d = ndim - 1; d >= 0 && ++coord[d] == in.shape[d]; d--) coord[d] = 0;
  }
  for (int64_t k = 0; k < out->count; k++) {
    out->b[k].volume = 1;
    for (int d = 0; d < ndim; d++) out->b[k].volume *= out->b[k].hi[d] - out->b[k].lo[d];
  }
  return LADLE_OK;
}

typedef struct cand {
  int64_t volume, index;
} cand;

static int by_volume(const void *pa, const void *pb) {
  const cand *a = pa, *b = pb;
  if (a->volume != b->volume) return a->volume > b->volume ? -1 : 1;
  return a->index < b->index ? -1 : a->index > b->index;
}

/* A blob of `label` (any with all_labels) meeting the threshold, drawn
 * uniformly (among the k largest); -1 when none. cands: count entries. */
static int64_t pick_blob(const blobs *bl, int all_labels, int64_t label, const double *thr, int ndim, int64_t k_largest,
                         cand *cands, ladle__rng *rng) {
  int64_t m = 0;
  for (int64_t i = 0; i < bl->count; i++) {
    const blob *b = &bl->b[i];
    if (!all_labels && b->label != label) continue;
    int small = 0;
    for (int d = 0; thr && d < ndim; d++) small |= b->hi[d] - b->lo[d] < thr[d];
    if (!small) cands[m++] = (cand){b->volume, i};
  }
  if (!m) return -1;
  if (k_largest > 0 && k_largest < m) {
    qsort(cands, (size_t)m, sizeof *cands, by_volume);
    m = k_largest;
  }
  return cands[ladle__rng_below(rng, (uint64_t)m)].index;
}

static ladle_status rob_run(ladle__node *n, ladle__sample *s) {
  ladle_status st = LADLE_OK;
  blobs bl = {0};
  cand *cands = NULL;
  ladle__tensor in = ladle__input(n, s, 0);
  int ndim = in.ndim, format = ladle__arg_choice(n, ARG_FORMAT);
  int ignore = (int)ladle__arg_int(n, NULL, ARG_IGNORE_CLASS);
  int64_t k_largest = ladle__arg_given(n, ARG_K_LARGEST) ? ladle__arg_int(n, NULL, ARG_K_LARGEST) : 0;
  double thr[LADLE_TENSOR_MAX_LIST];
  int nt = ladle__tensor_list(n, s, ARG_THRESHOLD, thr, LADLE_TENSOR_MAX_LIST);
  if (nt == -2) return LADLE_ERROR_INVALID_ARGUMENT;
  if (nt >= 0 && nt != ndim)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "sample %d: argument 'threshold' has %d values for an input "
                         "of %d dimensions", s->slot, nt, ndim);
  class_info ci = {.num = -1}; /* classes_of fills it; initialised for gcc 13's -Wmaybe-uninitialized */
  LADLE_TRY(classes_of(n, s, &ci));
  ladle__rng rng;
  ladle__sample_rng(n, s, &rng);
  int fg = ladle__rng_uniform(&rng) < ladle__arg_float(n, s, ARG_FOREGROUND_PROB);
  int32_t lo[LADLE_MAX_NDIM] = {0}, hi[LADLE_MAX_NDIM];
  for (int d = 0; d < ndim; d++) hi[d] = (int32_t)in.shape[d];
  int64_t label = ci.background;
  if (fg) {
    LADLE_TRY(find_blobs(n, s, in, ci.background, &bl));
    LADLE_ALLOC(cands, bl.count);
    int64_t chosen = -1;
    if (ignore) {
      chosen = pick_blob(&bl, 1, 0, nt >= 0 ? thr : NULL, ndim, k_largest, cands, &rng);
    } else {
      if (ci.num < 0) { /* every label present, sorted, weight 1 */
        ci.num = 0;
        for (int64_t i = 0; i < bl.count && ci.num < MAX_CLASSES; i++) {
          int j = ci.num, seen = 0;
          for (int q = 0; q < ci.num; q++) seen |= ci.cls[q] == bl.b[i].label;
          if (seen) continue;
          while (j > 0 && ci.cls[j - 1] > bl.b[i].label) ci.cls[j] = ci.cls[j - 1], j--;
          ci.cls[j] = bl.b[i].label;
          ci.num++;
        }
        for (int q = 0; q < ci.num; q++) ci.weight[q] = 1;
      } else { /* classes absent from the input weigh nothing */
        for (int q = 0; q < ci.num; q++) {
          int present = 0;
          for (int64_t i = 0; i < bl.count && !present; i++) present = bl.b[i].label == ci.cls[q];
          if (!present) ci.weight[q] = 0;
        }
      }
      for (;;) {
        double total = 0;
        for (int q = 0; q < ci.num; q++) total += ci.weight[q];
        if (!(total > 0)) break;
        double u = ladle__rng_uniform(&rng) * total, acc = 0;
        int q = -1;
        for (int j = 0; j < ci.num; j++)
          if (ci.weight[j] > 0) {
            q = j;
            acc += ci.weight[j];
            if (u < acc) break;
          }
        chosen = pick_blob(&bl, 0, ci.cls[q], nt >= 0 ? thr : NULL, ndim, k_largest, cands, &rng);
        if (chosen >= 0) break;
        ci.weight[q] = 0;
      }
    }
    if (chosen >= 0) {
      memcpy(lo, bl.b[chosen].lo, sizeof(int32_t) * (size_t)ndim);
      memcpy(hi, bl.b[chosen].hi, sizeof(int32_t) * (size_t)ndim);
      label = bl.b[chosen].label;
    }
  }
  int32_t *o0 = ladle__output(n, s, 0).data;
  int k = 1;
  if (format == FORMAT_BOX) {
    for (int d = 0; d < ndim; d++) o0[d] = lo[d], o0[ndim + d] = hi[d];
  } else {
    int32_t *o1 = ladle__output(n, s, k++).data;
    for (int d = 0; d < ndim; d++) o0[d] = lo[d], o1[d] = format == FORMAT_START_END ? hi[d] : hi[d] - lo[d];
  }
  if (k < n->num_outputs) *(int32_t *)ladle__output(n, s, k).data = (int32_t)label;
done:
  free(bl.b);
  free(cands);
  return st;
}

const ladle__op_def ladle__op_segmentation_random_object_bbox = {
    .schema = {.name = "segmentation.random_object_bbox",
               .doc = "Chooses an object of a label map (integers, any rank) at random and outputs its bounding box: "
                      "with probability foreground_prob a class is drawn (by class_weights among the classes "
                      "present), then one of its blobs (connected along the axes, not diagonally) meeting threshold "
                      "(among the k_largest); a class without such a blob is dropped and another drawn; otherwise, "
                      "or when nothing qualifies, the box is the whole input. The draws are ladle's (a different "
                      "random stream from DALI's), the rules DALI 2.4's.",
               .min_inputs = 1, .max_inputs = 1, .num_outputs = 2,
               .devices = LADLE_ON_CPU, .flags = LADLE_OP_RANDOM,
               .num_args = ARG_COUNT, .args = args,
               .one_output_if_arg = ARG_FORMAT + 1, .one_output_choice = FORMAT_BOX},
    .init = rob_init,
    .setup = rob_setup,
    .run = rob_run,
};
