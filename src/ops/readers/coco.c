/* readers.coco: images of a COCO data set with their boxes, labels and
 * (optionally) polygons, pixelwise masks and image ids, from an annotations
 * file indexed once at build (io/coco_index.h); batches come from the shared
 * sampler (io/sampler.h), as for readers.file. */
#include <stdlib.h>
#include <string.h>

#include "io/coco_index.h"
#include "io/io_util.h"
#include "ops/op.h"
#include "ops/readers/reader_args.h"

enum {
  ARG_FILE_ROOT, ARG_ANNOTATIONS_FILE, ARG_LTRB, ARG_RATIO, ARG_SKIP_EMPTY, ARG_SIZE_THRESHOLD,
  ARG_INCLUDE_ISCROWD, ARG_AVOID_CLASS_REMAPPING,
  /* These add outputs, in this order (DALI's). */
  ARG_POLYGON_MASKS, ARG_MASKS, ARG_PIXELWISE_MASKS, ARG_IMAGE_IDS, ARG_SAVE_IMG_IDS,
  ARG_HINTS, ARG_SAMPLER = ARG_HINTS + LADLE__HINT_ARG_COUNT, ARG_COUNT = ARG_SAMPLER + LADLE__SAMPLER_ARG_COUNT
};

static const ladle_arg_schema args[ARG_COUNT] = {
    [ARG_FILE_ROOT] = {LADLE_REQUIRED_ARG("file_root", LADLE_ARG_STRING),
        .doc = "Folder of the images: an image's path is file_root/file_name."},
    [ARG_ANNOTATIONS_FILE] = {LADLE_REQUIRED_ARG("annotations_file", LADLE_ARG_STRING),
        .doc = "The COCO annotations JSON (\"images\", \"annotations\", \"categories\"), parsed once at build."},
    [ARG_LTRB] = {LADLE_BOOL_ARG("ltrb", 0),
        .doc = "Boxes as [left, top, right, bottom] (x + w, y + h) instead of [x, y, width, height]."},
    [ARG_RATIO] = {LADLE_BOOL_ARG("ratio", 0),
        .doc = "Box and polygon coordinates divided by the image's width and height (from the annotations)."},
    [ARG_SKIP_EMPTY] = {LADLE_BOOL_ARG("skip_empty", 0),
        .doc = "Leave out images with no annotation (after include_iscrowd and size_threshold)."},
    [ARG_SIZE_THRESHOLD] = {LADLE_FLOAT_ARG("size_threshold", 0.1),
        .doc = "Annotations whose box width or height is below this (in pixels) are left out."},
    [ARG_INCLUDE_ISCROWD] = {LADLE_BOOL_ARG("include_iscrowd", 1),
        .doc = "Keep annotations with iscrowd=1."},
    [ARG_AVOID_CLASS_REMAPPING] = {LADLE_BOOL_ARG("avoid_class_remapping", 0),
        .doc = "Labels are the category ids as written; otherwise 1, 2, ... in the order of \"categories\" (0 is "
               "left for the background)."},
    [ARG_POLYGON_MASKS] = {LADLE_BOOL_ARG("polygon_masks", 0), .adds_outputs = 2,
        .doc = "Two more outputs: polygons (int32 [P, 3]: box index, first vertex, end vertex) and vertices "
               "(float [V, 2]: x, y; relative with ratio). RLE segmentations give no polygons. Not with "
               "pixelwise_masks."},
    [ARG_MASKS] = {LADLE_BOOL_ARG("masks", 0), .adds_outputs = 2,
        .doc = "Deprecated (DALI): polygon_masks with the polygons' vertex range counted in coordinates (2 per "
               "vertex) instead of vertices."},
    [ARG_PIXELWISE_MASKS] = {LADLE_BOOL_ARG("pixelwise_masks", 0), .adds_outputs = 1,
        .doc = "One more output: int32 [H, W, 1] (HWC), each pixel the largest label among the annotations whose "
               "segmentation (polygons, rasterized as pycocotools does, or RLE, plain or compressed) covers it, "
               "else 0. Not with polygon_masks. DALI 2.4 agrees except in cases its code gets wrong: it keeps only "
               "the last RLE of a label, and none of a label that also has polygons; its mask is all zeros when "
               "the image's smallest label has no segmentation; in the image's last run of pixels (column-major, "
               "ending at the bottom-right corner) the smaller of two overlapping labels wins."},
    [ARG_IMAGE_IDS] = {LADLE_BOOL_ARG("image_ids", 0), .adds_outputs = 1,
        .doc = "One more output, last: the image's id (int32 [1])."},
    [ARG_SAVE_IMG_IDS] = {LADLE_BOOL_ARG("save_img_ids", 0), .adds_outputs = 1,
        .doc = "Deprecated alias of image_ids (DALI)."},
    LADLE__HINT_ARG_SCHEMAS(ARG_HINTS),
    LADLE__SAMPLER_ARG_SCHEMAS(ARG_SAMPLER),
};

typedef struct coco_state {
  ladle__coco_index *index;
  ladle__sampler *sampler;
  int polygons;      /* output of the polygons (then the vertices), or -1 */
  int legacy;        /* masks=True: vertex ranges in coordinates */
  int mask;          /* output of the pixelwise mask, or -1 */
  int ids;           /* output of the image ids, or -1 */
  int ratio;
} coco_state;

static void coco_fini(ladle__node *n) {
  coco_state *w = n->state;
  if (!w) return;
  ladle__coco_index_destroy(w->index);
  ladle__sampler_destroy(w->sampler);
  free(w);
  n->state = NULL;
}

static int flag(const ladle__node *n, int arg) { return ladle__arg_int(n, NULL, arg) != 0; }

static ladle_status coco_init(ladle__node *n) {
  ladle_status st = LADLE_OK;
  coco_state *w = NULL;
  int poly = flag(n, ARG_POLYGON_MASKS), legacy = flag(n, ARG_MASKS), pixel = flag(n, ARG_PIXELWISE_MASKS);
  int ids = flag(n, ARG_IMAGE_IDS), old_ids = flag(n, ARG_SAVE_IMG_IDS);
  /* polygon_masks with masks asks for 7 outputs: refused when the node is added. */
  if (pixel && (poly || legacy))
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT,
                         "arguments 'pixelwise_masks' and '%s' are mutually exclusive", poly ? "polygon_masks" : "masks");
  if (ids && old_ids)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT,
                         "arguments 'image_ids' and 'save_img_ids' (its deprecated alias) exclude each other");
  const char *root = ladle__arg_string(n, ARG_FILE_ROOT), *ann = ladle__arg_string(n, ARG_ANNOTATIONS_FILE);
  if (!ann || !ann[0]) return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'annotations_file' is empty");
  ladle__sampler_params sp;
  st = ladle__reader_sampler_params(n, ARG_SAMPLER, 0, &sp);
  if (st != LADLE_OK) return st;
  st = ladle__sampler_check_batching(sp.batch_size, sp.num_shards, sp.shard_id);
  if (st != LADLE_OK) return ladle__wrap_error(st, "readers.coco");

  w = calloc(1, sizeof *w);
  if (!w) return LADLE_OP_FAIL(n, LADLE_ERROR_OUT_OF_MEMORY, "out of memory");
  n->state = w;
  w->polygons = w->mask = w->ids = -1;
  w->legacy = legacy;
  w->ratio = flag(n, ARG_RATIO);
  int k = 0;
  n->out[k++] = (ladle__out_desc){LADLE_UINT8, 1, ""};
  n->out[k++] = (ladle__out_desc){LADLE_FLOAT32, 2, ""};
  n->out[k++] = (ladle__out_desc){LADLE_INT32, 1, ""};
  if (poly || legacy) {
    w->polygons = k;
    n->out[k++] = (ladle__out_desc){LADLE_INT32, 2, ""};
    n->out[k++] = (ladle__out_desc){LADLE_FLOAT32, 2, ""};
  }
  if (pixel) {
    w->mask = k;
    n->out[k++] = (ladle__out_desc){LADLE_INT32, 3, "HWC"};
  }
  if (ids || old_ids) {
    w->ids = k;
    n->out[k++] = (ladle__out_desc){LADLE_INT32, 1, ""};
  }
  if (k != n->num_outputs) {
    st = LADLE_OP_FAIL(n, LADLE_ERROR_INTERNAL, "the node has %d outputs; the arguments give %d", n->num_outputs, k);
    goto fail;
  }
  ladle__coco_params cp = {
      .file_root = root,
      .ltrb = flag(n, ARG_LTRB),
      .ratio = w->ratio,
      .skip_empty = flag(n, ARG_SKIP_EMPTY),
      .include_iscrowd = flag(n, ARG_INCLUDE_ISCROWD),
      .avoid_class_remapping = flag(n, ARG_AVOID_CLASS_REMAPPING),
      .size_threshold = (float)ladle__arg_float(n, NULL, ARG_SIZE_THRESHOLD),
      .polygons = poly || legacy || pixel,
      .rles = pixel,
  };
  st = ladle__coco_index_build(ann, &cp, &w->index);
  if (st != LADLE_OK) goto fail;
  sp.num_records = ladle__coco_index_size(w->index);
  if (w->ids >= 0)
    for (int64_t s = 0; s < sp.num_records; s++) {
      int64_t id = ladle__coco_index_image(w->index, s).id;
      if (id < INT32_MIN || id > INT32_MAX) {
        st = LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "%s: image id %lld does not fit the int32 image_ids output",
                           ann, (long long)id);
        goto fail;
      }
    }
  st = ladle__sampler_create(&sp, &w->sampler);
  if (st != LADLE_OK) goto fail;
  return LADLE_OK;
fail:
  ladle__wrap_error(st, "readers.coco");
  coco_fini(n);
  return st;
}

static ladle_status coco_plan(ladle__node *n, int64_t iteration, ladle__sample_ref *refs) {
  ladle__sampler_plan(((coco_state *)n->state)->sampler, iteration, refs);
  return LADLE_OK;
}

static const char *coco_sample_name(ladle__node *n, int64_t index) {
  return ladle__coco_index_image(((coco_state *)n->state)->index, index).path;
}

static ladle_status coco_meta(ladle__node *n, ladle_reader_meta *meta) {
  coco_state *w = n->state;
  ladle__sampler_meta(w->sampler, meta);
  meta->index_bytes = ladle__coco_index_bytes(w->index);
  return LADLE_OK;
}

static ladle_status coco_setup(ladle__node *n, ladle__sample *s) {
  coco_state *w = n->state;
  ladle__coco_image im = ladle__coco_index_image(w->index, s->ref->index);
  size_t *size = s->state;
  ladle_status st = ladle__file_size(im.path, size);
  if (st != LADLE_OK) return st;
  int64_t shape[3] = {(int64_t)*size};
  ladle__set_shape(n, s, 0, shape);
  shape[0] = im.num_anns;
  shape[1] = 4;
  ladle__set_shape(n, s, 1, shape);
  ladle__set_shape(n, s, 2, shape);
  if (w->polygons >= 0) {
    int64_t polys = 0, vertices = 0;
    for (int32_t i = 0; i < im.num_anns; i++) {
      int64_t first;
      int32_t count;
      ladle__coco_index_polygons(w->index, im.first_ann + i, &first, &count);
      polys += count;
      for (int32_t p = 0; p < count; p++) vertices += ladle__coco_index_polygon(w->index, first + p).num_vertices;
    }
    shape[0] = polys;
    shape[1] = 3;
    ladle__set_shape(n, s, w->polygons, shape);
    shape[0] = vertices;
    shape[1] = 2;
    ladle__set_shape(n, s, w->polygons + 1, shape);
  }
  if (w->mask >= 0) {
    shape[0] = im.height;
    shape[1] = im.width;
    shape[2] = 1;
    ladle__set_shape(n, s, w->mask, shape);
  }
  if (w->ids >= 0) {
    shape[0] = 1;
    ladle__set_shape(n, s, w->ids, shape);
  }
  return LADLE_OK;
}

static ladle_status coco_run(ladle__node *n, ladle__sample *s) {
  coco_state *w = n->state;
  ladle__coco_image im = ladle__coco_index_image(w->index, s->ref->index);
  ladle_status st = ladle__file_read_exact(im.path, ladle__output(n, s, 0).data, *(size_t *)s->state);
  if (st != LADLE_OK) return st;
  if (im.num_anns) {
    memcpy(ladle__output(n, s, 1).data, ladle__coco_index_box(w->index, im.first_ann),
           (size_t)im.num_anns * 4 * sizeof(float));
    int32_t *labels = ladle__output(n, s, 2).data;
    for (int32_t i = 0; i < im.num_anns; i++) labels[i] = ladle__coco_index_label(w->index, im.first_ann + i);
  }
  if (w->polygons >= 0) {
    int32_t *polys = ladle__output(n, s, w->polygons).data;
    float *out = ladle__output(n, s, w->polygons + 1).data;
    const float *vertices = ladle__coco_index_vertices(w->index);
    float sx = w->ratio ? (float)im.width : 1, sy = w->ratio ? (float)im.height : 1;
    int32_t v = 0, unit = w->legacy ? 2 : 1;
    for (int32_t i = 0; i < im.num_anns; i++) {
      int64_t first;
      int32_t count;
      ladle__coco_index_polygons(w->index, im.first_ann + i, &first, &count);
      for (int32_t p = 0; p < count; p++) {
        ladle__coco_polygon poly = ladle__coco_index_polygon(w->index, first + p);
        *polys++ = i;
        *polys++ = v * unit;
        *polys++ = (v + poly.num_vertices) * unit;
        const float *src = vertices + 2 * poly.first_vertex;
        for (int32_t j = 0; j < poly.num_vertices; j++) {
          /* As DALI: a division in float, not a multiplication by 1 / width. */
          out[2 * (v + j)] = w->ratio ? src[2 * j] / sx : src[2 * j];
          out[2 * (v + j) + 1] = w->ratio ? src[2 * j + 1] / sy : src[2 * j + 1];
        }
        v += poly.num_vertices;
      }
    }
  }
  if (w->mask >= 0) {
    int32_t *mask = ladle__output(n, s, w->mask).data;
    size_t bytes = 0;
    void *scratch = NULL;
    memset(mask, 0, (size_t)im.height * (size_t)im.width * sizeof *mask);
    st = ladle__coco_mask_scratch(w->index, s->ref->index, &bytes);
    if (st == LADLE_OK && bytes) st = ladle__scratch(n, s, bytes, &scratch);
    if (st != LADLE_OK) return st;
    ladle__coco_draw_mask(w->index, s->ref->index, mask, scratch);
  }
  if (w->ids >= 0) *(int32_t *)ladle__output(n, s, w->ids).data = (int32_t)im.id;
  return LADLE_OK;
}

const ladle__op_def ladle__op_readers_coco = {
    .schema = {.name = "readers.coco",
               .doc = "Reads a COCO data set: per image (in ascending image id order) its encoded bytes, its boxes "
                      "(float [N, 4], [x, y, w, h] or ltrb, absolute or relative with ratio) and labels (int32 [N]), "
                      "then with polygon_masks its polygons and vertices, with pixelwise_masks its mask image, with "
                      "image_ids its id, as DALI 2.4 does. The annotations file is parsed once at build (yyjson) into "
                      "compact arrays; reader_meta()'s index_bytes says how much memory they take. A bad file fails at "
                      "build naming the file and the annotation (where DALI drops or garbles some, see the docs). "
                      "Sharding and shuffling as readers.file. Not supported: images, preprocessed_annotations, "
                      "save_preprocessed_annotations, shuffle_after_epoch_seed.",
               .min_inputs = 0, .max_inputs = 0, .num_outputs = 3,
               .devices = LADLE_ON_CPU, .flags = LADLE_OP_READER,
               .num_args = ARG_COUNT, .args = args},
    .sample_state_size = sizeof(size_t),
    .init = coco_init,
    .fini = coco_fini,
    .plan = coco_plan,
    .sample_name = coco_sample_name,
    .reader_meta = coco_meta,
    .setup = coco_setup,
    .run = coco_run,
};
