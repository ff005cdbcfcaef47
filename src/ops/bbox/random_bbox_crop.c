/* random_bbox_crop: a random crop window that keeps the boxes (SSD's
 * sampler), as DALI's RandomBBoxCrop: each try picks one of `thresholds` (or
 * "no crop"), then up to num_attempts windows until one whose IoU (or
 * overlap) with the boxes reaches it and keeps at least one box; after
 * total_num_attempts the best window so far. Outputs the window (anchor,
 * shape), the kept boxes mapped into it, their labels and indices. The draws
 * come from ladle's counter-based stream (not DALI's mt19937), so windows
 * differ from DALI's; the rules they obey are DALI's. Setup runs the search
 * and keeps the window; run filters and maps the boxes again. */
#include <math.h>
#include <string.h>

#include "ops/bbox/bbox_common.h"
#include "ops/geometry/geom_args.h"

enum {
  ARG_THRESHOLDS, ARG_THRESHOLD_TYPE, ARG_ASPECT_RATIO, ARG_SCALING, ARG_BBOX_LAYOUT, ARG_SHAPE_LAYOUT,
  ARG_INPUT_SHAPE, ARG_CROP_SHAPE, ARG_ALL_ABOVE, ARG_ALLOW_NO_CROP, ARG_NUM_ATTEMPTS, ARG_TOTAL_ATTEMPTS,
  ARG_PRUNE, ARG_OUTPUT_INDICES, ARG_LTRB, ARG_QUIET, NUM_ARGS
};

static const double default_thresholds[] = {0.0}, default_range[] = {1.0, 1.0};

static const ladle_arg_schema random_bbox_crop_args[] = {
    [ARG_THRESHOLDS] = {LADLE_FLOATS_ARG("thresholds", default_thresholds), LADLE_RANGE(0.0, 1.0),
                        .doc = "The minimum IoU (or overlap) values; each try picks one at random."},
    [ARG_THRESHOLD_TYPE] = {LADLE_STRING_ARG("threshold_type", "iou"), LADLE_CHOICES("iou", "overlap"),
                            .doc = "\"iou\": intersection over union of window and box; \"overlap\": the fraction "
                                   "of the box's area inside the window."},
    [ARG_ASPECT_RATIO] = {LADLE_FLOATS_ARG("aspect_ratio", default_range), LADLE_RANGE(0.0, 1e9),
                          .doc = "[min, max] of the window's width / height (3-D: [xy, xz, yz] ranges, or one for "
                                 "all); min == max fixes it. With input_shape in pixels, else relative to the "
                                 "image."},
    [ARG_SCALING] = {LADLE_FLOATS_ARG("scaling", default_range), LADLE_RANGE(0.0, 1.0),
                     .doc = "[min, max] of each window extent relative to the image."},
    [ARG_BBOX_LAYOUT] = {LADLE_OPTIONAL_ARG("bbox_layout", LADLE_ARG_STRING),
                         .doc = "The box coordinates: a permutation of \"xyXY\" or \"xyWH\" (3-D \"xyzXYZ\", "
                                "\"xyzWHD\"). Not given: by ltrb."},
    [ARG_SHAPE_LAYOUT] = {LADLE_OPTIONAL_ARG("shape_layout", LADLE_ARG_STRING),
                          .doc = "The order of input_shape and crop_shape: a permutation of \"WH\" (\"WHD\"); "
                                 "not given: that order."},
    [ARG_INPUT_SHAPE] = {LADLE_OPTIONAL_ARG("input_shape", LADLE_ARG_INTS), .per_sample = 1,
                         .doc = "The image's shape (shape_layout order), for crop_shape and the aspect ratio."},
    [ARG_CROP_SHAPE] = {LADLE_OPTIONAL_ARG("crop_shape", LADLE_ARG_INTS), .per_sample = 1,
                        .doc = "A fixed window shape (with input_shape; not with scaling, aspect_ratio or "
                               "allow_no_crop): anchor and shape are then in pixels."},
    [ARG_ALL_ABOVE] = {LADLE_BOOL_ARG("all_boxes_above_threshold", 1),
                       .doc = "True: every box must reach the threshold; False: one box."},
    [ARG_ALLOW_NO_CROP] = {LADLE_BOOL_ARG("allow_no_crop", 1),
                           .doc = "True: \"no crop\" is one more choice beside the thresholds."},
    [ARG_NUM_ATTEMPTS] = {LADLE_INT_ARG("num_attempts", 1), LADLE_RANGE(1, 1e9),
                          .doc = "Windows tried per threshold picked."},
    [ARG_TOTAL_ATTEMPTS] = {LADLE_INT_ARG("total_num_attempts", -1), LADLE_RANGE(-1, 1e9),
                            .doc = "All windows tried before the best so far is taken (-1: no limit)."},
    [ARG_PRUNE] = {LADLE_OPTIONAL_ARG("bbox_prune_threshold", LADLE_ARG_FLOAT), LADLE_RANGE(0.0, 1.0),
                   .doc = "Keeps boxes with a non-empty part in the window of at least this fraction of their area; "
                          "not given: boxes whose centre lies in the window."},
    [ARG_OUTPUT_INDICES] = {LADLE_BOOL_ARG("output_bbox_indices", 0), .adds_outputs = 1,
                            .doc = "True: one more output, the input indices of the kept boxes."},
    [ARG_LTRB] = {LADLE_BOOL_ARG("ltrb", 1),
                  .doc = "Deprecated (DALI's too): True is bbox_layout \"xyXY\", False \"xyWH\"."},
    [ARG_QUIET] = {LADLE_BOOL_ARG("quiet", 0), .no_effect = 1,
                   .doc = "DALI's switch for its warning when no window met the thresholds; ladle prints nothing."},
};

#define MAXD 3

typedef struct crop_state {
  int ndim;
  float rel_lo[MAXD], rel_hi[MAXD]; /* the window relative to the image */
  float out_lo[MAXD], out_hi[MAXD]; /* as output (pixels with crop_shape) */
  int64_t kept;
} crop_state;

/* The box layout's meaning: for coordinate k, what it is (0..2 start, 3..5
 * end, 6..8 extent along axis k % 3). */
static int layout_codes(const char *layout, int ndim, int *codes) {
  static const char letters[] = "xyzXYZWHD";
  int seen[9] = {0}, ends = 0, extents = 0;
  if ((int)strlen(layout) != 2 * ndim) return 0;
  for (int k = 0; k < 2 * ndim; k++) {
    const char *at = strchr(letters, layout[k]);
    if (!at || !layout[k]) return 0;
    int c = (int)(at - letters);
    if (c % 3 >= ndim || seen[c]++) return 0;
    ends += c >= 3 && c < 6, extents += c >= 6;
    codes[k] = c;
  }
  return ends == ndim || extents == ndim;
}

static const char *bbox_layout(const ladle__node *n, int ndim) {
  if (ladle__arg_given(n, ARG_BBOX_LAYOUT)) return ladle__arg_string(n, ARG_BBOX_LAYOUT);
  int ltrb = (int)ladle__arg_int(n, NULL, ARG_LTRB);
  return ndim == 2 ? (ltrb ? "xyXY" : "xyWH") : (ltrb ? "xyzXYZ" : "xyzWHD");
}

static ladle_status random_bbox_crop_init(ladle__node *n) {
  ladle_status st = ladle__bbox_input_init(n, 0, "boxes [N, 4 or 6]");
  if (st != LADLE_OK) return st;
  if (n->num_inputs == 2 && (n->in[1].dtype != LADLE_INT32 || n->in[1].ndim < 1))
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "input 1 must be int32 labels [N, ...], got %s of %d "
                         "dimensions", ladle_dtype_name(n->in[1].dtype), n->in[1].ndim);
  int codes[6];
  if (ladle__arg_given(n, ARG_BBOX_LAYOUT)) {
    const char *l = ladle__arg_string(n, ARG_BBOX_LAYOUT);
    if (!layout_codes(l, 2, codes) && !layout_codes(l, 3, codes))
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'bbox_layout' is \"%s\": give a permutation "
                           "of \"xyXY\" or \"xyWH\" (3-D: \"xyzXYZ\" or \"xyzWHD\")", l);
    if (ladle__arg_given(n, ARG_LTRB))
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "arguments 'ltrb' and 'bbox_layout' cannot be given "
                           "together (ltrb is deprecated)");
  }
  if (ladle__arg_given(n, ARG_SHAPE_LAYOUT)) {
    const char *l = ladle__arg_string(n, ARG_SHAPE_LAYOUT);
    size_t len = strlen(l);
    int ok = len == 2 || len == 3;
    for (size_t i = 0; ok && i < len; i++) ok = strchr(len == 2 ? "WH" : "WHD", l[i]) && strchr(l + i + 1, l[i]) == NULL;
    if (!ok)
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT,
                           "argument 'shape_layout' is \"%s\": give a permutation of \"WH\" or \"WHD\"", l);
  }
  const ladle_value *sc = ladle__arg_value(n, ARG_SCALING), *ar = ladle__arg_value(n, ARG_ASPECT_RATIO);
  if (sc->count != 2 || sc->u.floats[0] > sc->u.floats[1])
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'scaling' must be [min, max] with min <= max");
  if ((ar->count != 2 && ar->count != 6) || ar->u.floats[0] > ar->u.floats[1] ||
      (ar->count == 6 && (ar->u.floats[2] > ar->u.floats[3] || ar->u.floats[4] > ar->u.floats[5])))
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'aspect_ratio' must be [min, max] (3-D: three "
                         "such pairs) with min <= max");
  for (int i = 0; i < ar->count; i++)
    if (!(ar->u.floats[i] > 0))
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'aspect_ratio' values must be above 0");
  if (ladle__arg_value(n, ARG_THRESHOLDS)->count < 1)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'thresholds' needs at least one value");
  if (ladle__arg_int(n, NULL, ARG_TOTAL_ATTEMPTS) == 0)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'total_num_attempts' must be -1 (no limit) or "
                         "at least 1");
  int crop = ladle__arg_given(n, ARG_CROP_SHAPE), input = ladle__arg_given(n, ARG_INPUT_SHAPE);
  if (crop && !input)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'crop_shape' needs 'input_shape'");
  if (crop && (ladle__arg_given(n, ARG_SCALING) || ladle__arg_given(n, ARG_ASPECT_RATIO)))
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'crop_shape' cannot be given with '%s'",
                         ladle__arg_given(n, ARG_SCALING) ? "scaling" : "aspect_ratio");
  if (crop && ladle__arg_given(n, ARG_ALLOW_NO_CROP) && ladle__arg_int(n, NULL, ARG_ALLOW_NO_CROP))
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'allow_no_crop' cannot be True with 'crop_shape'");
  n->out[0] = (ladle__out_desc){LADLE_FLOAT32, 1, ""};
  n->out[1] = (ladle__out_desc){LADLE_FLOAT32, 1, ""};
  n->out[2] = n->in[0];
  int k = 3;
  if (n->num_inputs == 2) n->out[k++] = n->in[1];
  if (ladle__arg_int(n, NULL, ARG_OUTPUT_INDICES)) n->out[k++] = (ladle__out_desc){LADLE_INT32, 1, ""};
  return LADLE_OK;
}

typedef struct box {
  float lo[MAXD], hi[MAXD];
} box;

static box read_box(const float *v, const int *codes, int ndim) {
  box b = {{0}, {0}};
  float ext[MAXD] = {0};
  int extents = 0;
  for (int k = 0; k < 2 * ndim; k++) {
    int c = codes[k], a = c % 3;
    if (c < 3) b.lo[a] = v[k];
    else if (c < 6) b.hi[a] = v[k];
    else ext[a] = v[k], extents = 1;
  }
  if (extents)
    for (int a = 0; a < ndim; a++) b.hi[a] = b.lo[a] + ext[a];
  return b;
}

static void write_box(float *v, const box *b, const int *codes, int ndim) {
  for (int k = 0; k < 2 * ndim; k++) {
    int c = codes[k], a = c % 3;
    v[k] = c < 3 ? b->lo[a] : c < 6 ? b->hi[a] : b->hi[a] - b->lo[a];
  }
}

static float volume(const box *b, int ndim) {
  float v = b->hi[0] - b->lo[0];
  for (int a = 1; a < ndim; a++) v *= b->hi[a] - b->lo[a];
  return v;
}

/* The intersection's volume, 0 unless they overlap on every axis. */
static float intersection(const box *a, const box *b, int ndim) {
  box i = {{0}, {0}};
  for (int d = 0; d < ndim; d++) {
    i.lo[d] = a->lo[d] > b->lo[d] ? a->lo[d] : b->lo[d];
    i.hi[d] = a->hi[d] < b->hi[d] ? a->hi[d] : b->hi[d];
    if (!(i.hi[d] > i.lo[d])) return 0.0f;
  }
  return volume(&i, ndim);
}

/* IoU or overlap (the fraction of the box inside the window). */
static float metric(const box *crop, const box *b, int ndim, int overlap) {
  float inter = intersection(crop, b, ndim), vb = volume(b, ndim);
  if (overlap) return vb > 0 ? inter / vb : 0.0f;
  return inter > 0 ? inter / (volume(crop, ndim) + vb - inter) : 0.0f;
}

/* Whether box b stays: its centre in the window (start inclusive, end not),
 * or with a prune threshold a non-empty part of at least that fraction. */
static int keeps(const ladle__node *n, const box *crop, const box *b, int ndim) {
  if (ladle__arg_given(n, ARG_PRUNE)) {
    float inter = intersection(crop, b, ndim), vb = volume(b, ndim);
    return inter != 0 && inter / vb >= (float)ladle__arg_float(n, NULL, ARG_PRUNE);
  }
  for (int d = 0; d < ndim; d++) {
    float c = (b->lo[d] + b->hi[d]) * 0.5f;
    if (!(c >= crop->lo[d] && c < crop->hi[d])) return 0;
  }
  return 1;
}

/* The box in window coordinates, clipped to [0, 1]. */
static box remap(const box *b, const box *crop, int ndim) {
  box r;
  for (int d = 0; d < ndim; d++) {
    float ext = crop->hi[d] - crop->lo[d];
    float lo = ((b->lo[d] > crop->lo[d] ? b->lo[d] : crop->lo[d]) - crop->lo[d]) / ext;
    float hi = ((b->hi[d] < crop->hi[d] ? b->hi[d] : crop->hi[d]) - crop->lo[d]) / ext;
    r.lo[d] = lo < 0 ? 0 : lo > 1 ? 1 : lo;
    r.hi[d] = hi < 0 ? 0 : hi > 1 ? 1 : hi;
  }
  return r;
}

/* Keeps, maps and writes the boxes of window `rel` (out NULL: counts them). */
static int64_t filter(const ladle__node *n, const box *boxes, int64_t nboxes, const box *rel, int ndim,
                      const int *codes, float *out, int32_t *indices) {
  int64_t kept = 0;
  for (int64_t i = 0; i < nboxes; i++) {
    if (!keeps(n, rel, &boxes[i], ndim)) continue;
    if (out) {
      box r = remap(&boxes[i], rel, ndim);
      write_box(out + kept * 2 * ndim, &r, codes, ndim);
    }
    if (indices) indices[kept] = (int32_t)i;
    kept++;
  }
  return kept;
}

/* The sample's boxes, read and checked (inside [0, 1], start <= end). */
static ladle_status read_boxes(ladle__node *n, ladle__sample *s, int *ndim, int *codes, box **out) {
  ladle__tensor in = ladle__input(n, s, 0);
  int64_t nb = in.shape[0];
  if (in.shape[1] != 4 && in.shape[1] != 6)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "input 0 (boxes) must be [N, 4] or [N, 6], got [%lld, %lld]",
                         (long long)nb, (long long)in.shape[1]);
  *ndim = (int)in.shape[1] / 2;
  const char *layout = bbox_layout(n, *ndim);
  if (!layout_codes(layout, *ndim, codes))
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'bbox_layout' (\"%s\") does not describe %d-D "
                         "boxes", layout, *ndim);
  if (n->num_inputs == 2 && ladle__input(n, s, 1).shape[0] != nb)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "input 1 (labels) has %lld rows for %lld boxes",
                         (long long)ladle__input(n, s, 1).shape[0], (long long)nb);
  /* The boxes, then room for nb indices. */
  ladle_status st = ladle__scratch(n, s, (sizeof **out + sizeof(int32_t)) * (size_t)(nb + 1), (void **)out);
  if (st != LADLE_OK) return st;
  const float *v = in.data;
  for (int64_t i = 0; i < nb; i++) {
    box *b = &(*out)[i];
    *b = read_box(v + i * 2 * *ndim, codes, *ndim);
    for (int d = 0; d < *ndim; d++)
      if (!(b->lo[d] >= 0 && b->lo[d] <= b->hi[d] && b->hi[d] <= 1))
        return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "box %lld of sample %d (layout %s) is outside [0, 1] "
                             "or has an end before its start", (long long)i, s->slot, layout);
  }
  return LADLE_OK;
}

/* input_shape and crop_shape in W, H(, D) order. */
static ladle_status shapes(ladle__node *n, ladle__sample *s, int ndim, double *in_shape, double *crop_shape) {
  int idx[MAXD] = {0, 1, 2};
  if (ladle__arg_given(n, ARG_SHAPE_LAYOUT)) {
    const char *l = ladle__arg_string(n, ARG_SHAPE_LAYOUT);
    if ((int)strlen(l) != ndim)
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'shape_layout' (\"%s\") is not %d-D", l, ndim);
    for (int d = 0; d < ndim; d++) idx[d] = (int)(strchr(l, "WHD"[d]) - l);
  }
  for (int a = ARG_INPUT_SHAPE; a <= ARG_CROP_SHAPE; a++) {
    if (!ladle__arg_given(n, a)) continue;
    double v[8];
    int count = ladle__arg_list(n, s, a, v, 8);
    if (count != ndim)
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument '%s' has %d values for %d-D boxes",
                           n->def->schema.args[a].name, count, ndim);
    for (int d = 0; d < ndim; d++) {
      if (!(v[idx[d]] >= (a == ARG_INPUT_SHAPE)))
        return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument '%s' has a value below %d",
                             n->def->schema.args[a].name, a == ARG_INPUT_SHAPE);
      (a == ARG_INPUT_SHAPE ? in_shape : crop_shape)[d] = v[idx[d]];
    }
  }
  return LADLE_OK;
}

/* The aspect-ratio range of dimensions pair k (xy, xz, yz). */
static void ar_range(const ladle__node *n, int k, double *lo, double *hi) {
  const ladle_value *ar = ladle__arg_value(n, ARG_ASPECT_RATIO);
  int r = ar->count == 6 ? k : 0;
  *lo = ar->u.floats[2 * r], *hi = ar->u.floats[2 * r + 1];
}

/* A random window shape (relative extents) meeting the aspect ratios, or 0. */
static int random_shape(const ladle__node *n, ladle__rng *rng, int ndim, const double *in_shape, float *shape) {
  const ladle_value *sc = ladle__arg_value(n, ARG_SCALING);
  double px[MAXD];
  for (int d = 0; d < ndim; d++) {
    shape[d] = (float)ladle__rng_range(rng, sc->u.floats[0], sc->u.floats[1]);
    px[d] = in_shape ? in_shape[d] : 1.0;
  }
  /* Fixed ratios (min == max) set one extent from another, the pairs in a
   * random order, then the largest extent goes back to the largest drawn. */
  int order[MAXD] = {0, 1, 2};
  for (int i = ndim - 1; i > 0; i--) {
    int j = (int)ladle__rng_below(rng, (uint64_t)i + 1), t = order[i];
    order[i] = order[j], order[j] = t;
  }
  float max0 = 0;
  for (int d = 0; d < ndim; d++) max0 = shape[d] > max0 ? shape[d] : max0;
  int fixed = 0;
  for (int i0 = 0; i0 < ndim; i0++)
    for (int i1 = i0 + 1; i1 < ndim; i1++) {
      int d0 = order[i0], d1 = order[i1], a = d0 < d1 ? d0 : d1, b = d0 < d1 ? d1 : d0;
      double lo, hi;
      ar_range(n, a + b - 1, &lo, &hi); /* pairs (0,1) (0,2) (1,2) -> 0 1 2 */
      if (lo != hi) continue;
      /* extent_a px_a / (extent_b px_b) = ratio */
      double ratio = d0 == a ? 1.0 / lo : lo;
      shape[d1] = (float)(shape[d0] * px[d0] * ratio / px[d1]);
      fixed = 1;
    }
  if (fixed) {
    float max1 = 0;
    for (int d = 0; d < ndim; d++) max1 = shape[d] > max1 ? shape[d] : max1;
    for (int d = 0; d < ndim; d++) shape[d] = max1 > 0 ? max0 * shape[d] / max1 : 0;
  }
  for (int d = 0; d < ndim; d++)
    if (!(shape[d] > 0 && shape[d] <= 1)) return 0;
  for (int a = 0; a < ndim; a++)
    for (int b = a + 1; b < ndim; b++) {
      double lo, hi, r = (double)shape[a] * px[a] / ((double)shape[b] * px[b]);
      ar_range(n, a + b - 1, &lo, &hi);
      double tol = lo == hi ? 1e-5 * lo : 0; /* a fixed ratio holds to rounding */
      if (r < lo - tol || r > hi + tol) return 0;
    }
  return 1;
}

static ladle_status random_bbox_crop_setup(ladle__node *n, ladle__sample *s) {
  crop_state *cs = s->state;
  int ndim, codes[6];
  box *boxes = NULL;
  ladle_status st = read_boxes(n, s, &ndim, codes, &boxes);
  double in_shape[MAXD] = {1, 1, 1}, crop_shape[MAXD] = {0};
  if (st == LADLE_OK) st = shapes(n, s, ndim, in_shape, crop_shape);
  if (st != LADLE_OK) return st;
  int64_t nb = ladle__input(n, s, 0).shape[0];
  int absolute = ladle__arg_given(n, ARG_CROP_SHAPE), has_input = ladle__arg_given(n, ARG_INPUT_SHAPE);
  int overlap = ladle__arg_choice(n, ARG_THRESHOLD_TYPE) == 1, all = (int)ladle__arg_int(n, NULL, ARG_ALL_ABOVE);
  int no_crop = !absolute && ladle__arg_int(n, NULL, ARG_ALLOW_NO_CROP);
  const ladle_value *th = ladle__arg_value(n, ARG_THRESHOLDS);
  int64_t attempts = ladle__arg_int(n, NULL, ARG_NUM_ATTEMPTS), total = ladle__arg_int(n, NULL, ARG_TOTAL_ATTEMPTS);
  ladle__rng rng;
  ladle__sample_rng(n, s, &rng);
  memset(cs, 0, sizeof *cs);
  cs->ndim = ndim;
  /* Without a window yet: the whole image. */
  for (int d = 0; d < ndim; d++) cs->rel_hi[d] = 1, cs->out_hi[d] = absolute ? (float)in_shape[d] : 1;
  float best = -1;
  int success = 0;
  int64_t count = 0;
  while (!success && (total < 0 || count < total)) {
    uint64_t pick = ladle__rng_below(&rng, (uint64_t)th->count + (uint64_t)no_crop);
    if ((int)pick == th->count) { /* no crop */
      for (int d = 0; d < ndim; d++) cs->rel_lo[d] = cs->out_lo[d] = 0, cs->rel_hi[d] = cs->out_hi[d] = 1;
      success = 1;
      break;
    }
    float threshold = (float)th->u.floats[pick];
    for (int64_t i = 0; i < attempts; i++, count++) {
      box rel, out;
      if (absolute) {
        for (int d = 0; d < ndim; d++) {
          double room = in_shape[d] - crop_shape[d];
          float anchor = room > 0 ? (float)ladle__rng_below(&rng, (uint64_t)room + 1) : 0.0f;
          out.lo[d] = anchor, out.hi[d] = anchor + (float)crop_shape[d];
          rel.lo[d] = anchor / (float)in_shape[d];
          rel.hi[d] = rel.lo[d] + (float)crop_shape[d] / (float)in_shape[d];
        }
      } else {
        float shape[MAXD];
        if (!random_shape(n, &rng, ndim, has_input ? in_shape : NULL, shape)) continue;
        for (int d = 0; d < ndim; d++) {
          rel.lo[d] = (float)ladle__rng_range(&rng, 0.0, 1.0 - shape[d]);
          rel.hi[d] = rel.lo[d] + shape[d];
        }
        out = rel;
      }
      float lo_m = 0, hi_m = 0;
      for (int64_t b = 0; b < nb; b++) {
        float m = metric(&rel, &boxes[b], ndim, overlap);
        lo_m = b == 0 || m < lo_m ? m : lo_m;
        hi_m = b == 0 || m > hi_m ? m : hi_m;
      }
      float m = all ? lo_m : hi_m;
      /* No boxes: any window will do (DALI's too). */
      int valid = nb == 0 || m >= threshold;
      if (m <= best && !valid) continue;
      best = m;
      memcpy(cs->rel_lo, rel.lo, sizeof rel.lo), memcpy(cs->rel_hi, rel.hi, sizeof rel.hi);
      memcpy(cs->out_lo, out.lo, sizeof out.lo), memcpy(cs->out_hi, out.hi, sizeof out.hi);
      success = valid && (nb == 0 || filter(n, boxes, nb, &rel, ndim, codes, NULL, NULL) > 0);
      if (success) break;
    }
  }
  box rel;
  memcpy(rel.lo, cs->rel_lo, sizeof rel.lo), memcpy(rel.hi, cs->rel_hi, sizeof rel.hi);
  cs->kept = filter(n, boxes, nb, &rel, ndim, codes, NULL, NULL);
  int64_t dims = ndim, bshape[2] = {cs->kept, 2 * ndim};
  ladle__set_shape(n, s, 0, &dims);
  ladle__set_shape(n, s, 1, &dims);
  ladle__set_shape(n, s, 2, bshape);
  int k = 3;
  if (n->num_inputs == 2) {
    ladle__tensor labels = ladle__input(n, s, 1);
    int64_t lshape[LADLE_MAX_NDIM];
    memcpy(lshape, labels.shape, sizeof *lshape * (size_t)labels.ndim);
    lshape[0] = cs->kept;
    ladle__set_shape(n, s, k++, lshape);
  }
  if (ladle__arg_int(n, NULL, ARG_OUTPUT_INDICES)) ladle__set_shape(n, s, k, &cs->kept);
  return LADLE_OK;
}

static ladle_status random_bbox_crop_run(ladle__node *n, ladle__sample *s) {
  const crop_state *cs = s->state;
  int ndim, codes[6];
  box *boxes = NULL;
  ladle_status st = read_boxes(n, s, &ndim, codes, &boxes);
  if (st != LADLE_OK) return st;
  float *anchor = ladle__output(n, s, 0).data, *shape = ladle__output(n, s, 1).data;
  for (int d = 0; d < ndim; d++) anchor[d] = cs->out_lo[d], shape[d] = cs->out_hi[d] - cs->out_lo[d];
  box rel;
  memcpy(rel.lo, cs->rel_lo, sizeof rel.lo), memcpy(rel.hi, cs->rel_hi, sizeof rel.hi);
  int64_t nb = ladle__input(n, s, 0).shape[0];
  int32_t *indices = (int32_t *)(void *)(boxes + nb + 1);
  if (ladle__arg_int(n, NULL, ARG_OUTPUT_INDICES)) indices = ladle__output(n, s, n->num_outputs - 1).data;
  int64_t kept = filter(n, boxes, nb, &rel, ndim, codes, ladle__output(n, s, 2).data, indices);
  if (n->num_inputs == 2) {
    ladle__tensor in = ladle__input(n, s, 1);
    int64_t stride = 1;
    for (int d = 1; d < in.ndim; d++) stride *= in.shape[d];
    int32_t *o = ladle__output(n, s, 3).data;
    const int32_t *l = in.data;
    for (int64_t i = 0; i < kept; i++) memcpy(o + i * stride, l + indices[i] * stride, sizeof *o * (size_t)stride);
  }
  return LADLE_OK;
}

const ladle__op_def ladle__op_random_bbox_crop = {
    .schema = {.name = "random_bbox_crop",
               .doc = "Picks a random crop window that keeps boxes (input 0: [N, 4] or [N, 6] float32 in [0, 1], N "
                      "may be 0; input 1, optional: int32 labels [N, ...]) as DALI does, and outputs anchor, shape "
                      "(for fn.slice: relative, or pixels with crop_shape), the kept boxes in window coordinates "
                      "(clipped to [0, 1]), their labels, and with output_bbox_indices their input indices. The "
                      "random stream is ladle's: windows differ from DALI's, their constraints do not.",
               .min_inputs = 1, .max_inputs = 2, .num_outputs = 3,
               .devices = LADLE_ON_CPU,
               .flags = LADLE_OP_RANDOM,
               .num_args = NUM_ARGS, .args = random_bbox_crop_args,
               .outputs_per_extra_input = 1},
    .sample_state_size = sizeof(crop_state),
    .init = random_bbox_crop_init,
    .setup = random_bbox_crop_setup,
    .run = random_bbox_crop_run,
};
