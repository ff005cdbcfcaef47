/* The COCO annotations index (see coco_index.h): the JSON is parsed with
 * yyjson (third_party/yyjson), checked, filtered and turned into flat arrays;
 * the JSON tree is freed before build returns. */
#include "io/coco_index.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "io/io_util.h"
#include "yyjson.h"

/* Coordinates beyond this are refused: 5x of them must fit an int32 in the
 * polygon rasterizer, and no image is that large. */
#define MAX_COORDINATE 1e8

struct ladle__coco_index {
  int64_t num_samples;
  ladle__coco_image *images; /* in sample order */
  char *strings;             /* the paths */
  int64_t num_anns;
  float *boxes;              /* 4 per annotation, the output form */
  int32_t *labels;
  int64_t *poly_first;       /* per annotation, when polygons are kept */
  int32_t *poly_count;
  int64_t num_polys, cap_polys;
  ladle__coco_polygon *polys;
  int64_t num_vertices, cap_vertices;
  float *vertices;
  int64_t *rle_first;        /* per annotation (-1: none), when RLEs are kept */
  int32_t *rle_count;
  int64_t num_rle, cap_rle;
  uint32_t *rle;
  int64_t bytes;
};

/* An annotation that passed the filters, before it is put in image order. */
typedef struct kept {
  yyjson_val *ann;
  int64_t index; /* in the file's "annotations" */
  int32_t image; /* index into the file's "images" */
  int32_t label;
  float box[4];  /* x, y, w, h as in the file */
} kept;

typedef struct id_entry {
  int64_t id;
  int32_t index; /* image: index in the file's "images"; category: its label */
} id_entry;

static int compare_ids(const void *a, const void *b) {
  int64_t x = ((const id_entry *)a)->id, y = ((const id_entry *)b)->id;
  return x < y ? -1 : x > y;
}

static const id_entry *find_id(const id_entry *table, int64_t n, int64_t id) {
  id_entry key = {id, 0};
  return bsearch(&key, table, (size_t)n, sizeof *table, compare_ids);
}

/* An integer member (a JSON integer in int64 range). */
static int get_int(yyjson_val *obj, const char *key, int64_t *out) {
  yyjson_val *v = yyjson_obj_get(obj, key);
  if (yyjson_is_sint(v)) {
    *out = yyjson_get_sint(v);
    return 1;
  }
  if (yyjson_is_uint(v) && yyjson_get_uint(v) <= (uint64_t)INT64_MAX) {
    *out = (int64_t)yyjson_get_uint(v);
    return 1;
  }
  return 0;
}

/* "annotation 17" (its "id") or "annotation #3" (its index) in messages. */
static const char *ann_name(yyjson_val *ann, int64_t index, char *buf, size_t size) {
  int64_t id;
  if (yyjson_is_obj(ann) && get_int(ann, "id", &id))
    snprintf(buf, size, "annotation %lld", (long long)id);
  else
    snprintf(buf, size, "annotation #%lld (no integer \"id\")", (long long)index);
  return buf;
}

static ladle_status grow64(void **p, int64_t *cap, int64_t need, size_t elem) {
  if (need <= *cap) return LADLE_OK;
  int64_t c = *cap ? *cap : 256;
  while (c < need) c *= 2;
  void *q = realloc(*p, (size_t)c * elem);
  if (!q) return LADLE_FAIL(LADLE_ERROR_OUT_OF_MEMORY, "cannot allocate %zu bytes", (size_t)c * elem);
  *p = q;
  *cap = c;
  return LADLE_OK;
}

/* Shrinks a grown array to its size (what the index then reports). */
static void *shrink(void *p, int64_t n, size_t elem) {
  if (!p || n <= 0) return p;
  void *q = realloc(p, (size_t)n * elem);
  return q ? q : p;
}

/* Reads the polygons (and, with params->rles, the RLE) of annotation k. */
static ladle_status read_segmentation(ladle__coco_index *x, const ladle__coco_params *params, const kept *k,
                                      int32_t width, int32_t height, int64_t a) {
  ladle_status st = LADLE_OK;
  yyjson_val *seg = yyjson_obj_get(k->ann, "segmentation");
  if (x->poly_first) {
    x->poly_first[a] = x->num_polys;
    x->poly_count[a] = 0;
  }
  if (x->rle_first) {
    x->rle_first[a] = -1;
    x->rle_count[a] = 0;
  }
  if (!seg || yyjson_is_null(seg)) return LADLE_OK;
  if (yyjson_is_arr(seg)) {
    size_t i, n, j, m;
    yyjson_val *poly, *c;
    yyjson_arr_foreach(seg, i, n, poly) {
      LADLE_CHECK(yyjson_is_arr(poly), LADLE_ERROR_CORRUPT_DATA,
                  "\"segmentation\" polygon %zu is not a list of coordinates", i);
      m = yyjson_arr_size(poly);
      LADLE_CHECK(m % 2 == 0, LADLE_ERROR_CORRUPT_DATA,
                  "\"segmentation\" polygon %zu has an odd number of coordinates (%zu)", i, m);
      LADLE_CHECK(m >= 6, LADLE_ERROR_CORRUPT_DATA,
                  "\"segmentation\" polygon %zu has %zu points; a polygon needs at least 3", i, m / 2);
      LADLE_CHECK(m / 2 <= INT32_MAX, LADLE_ERROR_LIMIT, "\"segmentation\" polygon %zu is too long", i);
      if (!x->poly_first) continue; /* checked only */
      LADLE_TRY(grow64((void **)&x->polys, &x->cap_polys, x->num_polys + 1, sizeof *x->polys));
      LADLE_TRY(grow64((void **)&x->vertices, &x->cap_vertices, 2 * x->num_vertices + (int64_t)m, sizeof(float)));
      float *dst = x->vertices + 2 * x->num_vertices;
      yyjson_arr_foreach(poly, j, m, c) {
        double v = yyjson_get_num(c);
        LADLE_CHECK(yyjson_is_num(c) && isfinite(v) && fabs(v) <= MAX_COORDINATE, LADLE_ERROR_CORRUPT_DATA,
                    "\"segmentation\" polygon %zu: coordinate %zu is not a number within +-1e8", i, j);
        dst[j] = (float)v;
      }
      x->polys[x->num_polys++] = (ladle__coco_polygon){x->num_vertices, (int32_t)(m / 2)};
      x->num_vertices += (int64_t)(m / 2);
      x->poly_count[a]++;
    }
    return LADLE_OK;
  }
  LADLE_CHECK(yyjson_is_obj(seg), LADLE_ERROR_CORRUPT_DATA,
              "\"segmentation\" is neither a list of polygons nor an RLE object");
  yyjson_val *counts = yyjson_obj_get(seg, "counts"), *size = yyjson_obj_get(seg, "size");
  int ok_size = yyjson_is_arr(size) && yyjson_arr_size(size) == 2;
  int64_t rh = 0, rw = 0;
  if (ok_size) {
    yyjson_val *hv = yyjson_arr_get(size, 0), *wv = yyjson_arr_get(size, 1);
    ok_size = yyjson_is_int(hv) && yyjson_is_int(wv);
    rh = yyjson_get_sint(hv);
    rw = yyjson_get_sint(wv);
  }
  LADLE_CHECK(ok_size, LADLE_ERROR_CORRUPT_DATA, "the RLE \"segmentation\" has no \"size\": [height, width]");
  LADLE_CHECK(yyjson_is_arr(counts) || yyjson_is_str(counts), LADLE_ERROR_CORRUPT_DATA,
              "the RLE \"segmentation\" has no \"counts\" (a list of integers or a compressed string)");
  if (!x->rle_first) return LADLE_OK;
  LADLE_CHECK(rh == height && rw == width, LADLE_ERROR_CORRUPT_DATA,
              "the RLE \"segmentation\" has size [%lld, %lld] but its image is %d x %d (height x width)",
              (long long)rh, (long long)rw, (int)height, (int)width);
  int64_t first = x->num_rle, total = 0;
  if (yyjson_is_str(counts)) {
    uint32_t *c = NULL;
    int32_t nc = 0;
    LADLE_TRY(ladle__coco_rle_from_string(yyjson_get_str(counts), yyjson_get_len(counts), &c, &nc));
    st = grow64((void **)&x->rle, &x->cap_rle, x->num_rle + nc, sizeof *x->rle);
    if (st == LADLE_OK) memcpy(x->rle + x->num_rle, c, (size_t)nc * sizeof *c);
    free(c);
    if (st != LADLE_OK) goto done;
    x->num_rle += nc;
  } else {
    size_t i, n;
    yyjson_val *c;
    LADLE_TRY(grow64((void **)&x->rle, &x->cap_rle, x->num_rle + (int64_t)yyjson_arr_size(counts), sizeof *x->rle));
    yyjson_arr_foreach(counts, i, n, c) {
      LADLE_CHECK(yyjson_is_uint(c) && yyjson_get_uint(c) <= UINT32_MAX, LADLE_ERROR_CORRUPT_DATA,
                  "the RLE \"counts\" entry %zu is not a non-negative integer", i);
      x->rle[x->num_rle++] = (uint32_t)yyjson_get_uint(c);
    }
  }
  for (int64_t i = first; i < x->num_rle; i++) total += x->rle[i];
  LADLE_CHECK(total <= (int64_t)height * width, LADLE_ERROR_CORRUPT_DATA,
              "the RLE \"counts\" cover %lld pixels; the image has %lld", (long long)total,
              (long long)height * width);
  LADLE_CHECK(x->num_rle - first <= INT32_MAX, LADLE_ERROR_LIMIT, "the RLE has too many counts");
  x->rle_first[a] = first;
  x->rle_count[a] = (int32_t)(x->num_rle - first);
done:
  return st;
}

/* Builds the index from the parsed document. */
static ladle_status build(const char *name, yyjson_val *root, const ladle__coco_params *params,
                          ladle__coco_index *x) {
  ladle_status st = LADLE_OK;
  id_entry *image_ids = NULL, *categories = NULL;
  int64_t *image_order = NULL, *next = NULL;
  int32_t *image_counts = NULL;
  int64_t *sample_of = NULL;
  kept *ks = NULL, *sorted = NULL;
  yyjson_val **image_vals = NULL;
  char what[96];
  size_t i, n;
  yyjson_val *v;
  const char *root_dir = params->file_root && params->file_root[0] ? params->file_root : NULL;

  LADLE_CHECK(yyjson_is_obj(root), LADLE_ERROR_CORRUPT_DATA, "%s: the JSON is not an object", name);
  yyjson_val *images = yyjson_obj_get(root, "images"), *cats = yyjson_obj_get(root, "categories");
  yyjson_val *anns = yyjson_obj_get(root, "annotations");
  LADLE_CHECK(yyjson_is_arr(images), LADLE_ERROR_CORRUPT_DATA, "%s: no \"images\" list", name);
  LADLE_CHECK(yyjson_is_arr(cats), LADLE_ERROR_CORRUPT_DATA, "%s: no \"categories\" list", name);
  LADLE_CHECK(yyjson_is_arr(anns), LADLE_ERROR_CORRUPT_DATA, "%s: no \"annotations\" list", name);
  int64_t num_images = (int64_t)yyjson_arr_size(images);
  LADLE_CHECK(num_images > 0, LADLE_ERROR_INVALID_ARGUMENT, "%s: the \"images\" list is empty", name);
  LADLE_CHECK(num_images < INT32_MAX, LADLE_ERROR_LIMIT, "%s: too many images", name);

  /* Images: checked, then sorted by id (the sample order). */
  LADLE_ALLOC(image_ids, num_images);
  LADLE_ALLOC(image_vals, num_images);
  yyjson_arr_foreach(images, i, n, v) {
    int64_t id, w, h;
    LADLE_CHECK(yyjson_is_obj(v) && get_int(v, "id", &id), LADLE_ERROR_CORRUPT_DATA,
                "%s: image #%zu has no integer \"id\"", name, i);
    LADLE_CHECK(yyjson_is_str(yyjson_obj_get(v, "file_name")), LADLE_ERROR_CORRUPT_DATA,
                "%s: image %lld has no \"file_name\" string", name, (long long)id);
    LADLE_CHECK(get_int(v, "width", &w) && get_int(v, "height", &h) && w > 0 && h > 0 && w <= INT32_MAX &&
                    h <= INT32_MAX,
                LADLE_ERROR_CORRUPT_DATA, "%s: image %lld has no positive integer \"width\" and \"height\"", name,
                (long long)id);
    image_ids[i] = (id_entry){id, (int32_t)i};
    image_vals[i] = v;
  }
  qsort(image_ids, (size_t)num_images, sizeof *image_ids, compare_ids);
  for (int64_t k = 1; k < num_images; k++)
    LADLE_CHECK(image_ids[k].id != image_ids[k - 1].id, LADLE_ERROR_CORRUPT_DATA, "%s: two images have id %lld",
                name, (long long)image_ids[k].id);

  /* Categories: labels 1.. in file order, or the ids. */
  int64_t num_cats = (int64_t)yyjson_arr_size(cats);
  LADLE_ALLOC(categories, num_cats);
  yyjson_arr_foreach(cats, i, n, v) {
    int64_t id;
    LADLE_CHECK(yyjson_is_obj(v) && get_int(v, "id", &id), LADLE_ERROR_CORRUPT_DATA,
                "%s: category #%zu has no integer \"id\"", name, i);
    LADLE_CHECK(!params->avoid_class_remapping || (id >= INT32_MIN && id <= INT32_MAX), LADLE_ERROR_CORRUPT_DATA,
                "%s: category id %lld does not fit an int32 label", name, (long long)id);
    categories[i] = (id_entry){id, params->avoid_class_remapping ? (int32_t)id : (int32_t)(i + 1)};
  }
  qsort(categories, (size_t)num_cats, sizeof *categories, compare_ids);
  for (int64_t k = 1; k < num_cats; k++)
    LADLE_CHECK(categories[k].id != categories[k - 1].id, LADLE_ERROR_CORRUPT_DATA,
                "%s: two categories have id %lld", name, (long long)categories[k].id);

  /* Annotations: checked and filtered. */
  int64_t num_in = (int64_t)yyjson_arr_size(anns), num_kept = 0;
  LADLE_ALLOC(ks, num_in);
  LADLE_ALLOC(image_counts, num_images);
  yyjson_arr_foreach(anns, i, n, v) {
    int64_t image_id, cat, crowd = 0, iw = 0, ih = 0;
    LADLE_CHECK(yyjson_is_obj(v), LADLE_ERROR_CORRUPT_DATA, "%s: annotation #%zu is not an object", name, i);
    ann_name(v, (int64_t)i, what, sizeof what);
    LADLE_CHECK(get_int(v, "image_id", &image_id), LADLE_ERROR_CORRUPT_DATA, "%s: %s has no integer \"image_id\"",
                name, what);
    const id_entry *im = find_id(image_ids, num_images, image_id);
    LADLE_CHECK(im, LADLE_ERROR_CORRUPT_DATA, "%s: %s refers to image id %lld, which \"images\" does not list", name,
                what, (long long)image_id);
    LADLE_CHECK(get_int(v, "category_id", &cat), LADLE_ERROR_CORRUPT_DATA,
                "%s: %s has no integer \"category_id\"", name, what);
    const id_entry *c = find_id(categories, num_cats, cat);
    LADLE_CHECK(c, LADLE_ERROR_CORRUPT_DATA, "%s: %s has category_id %lld, which \"categories\" does not list", name,
                what, (long long)cat);
    yyjson_val *crowd_v = yyjson_obj_get(v, "iscrowd");
    if (yyjson_is_bool(crowd_v))
      crowd = yyjson_get_bool(crowd_v);
    else
      LADLE_CHECK(!crowd_v || yyjson_is_null(crowd_v) || get_int(v, "iscrowd", &crowd), LADLE_ERROR_CORRUPT_DATA,
                  "%s: %s has an \"iscrowd\" that is not an integer", name, what);
    yyjson_val *bbox = yyjson_obj_get(v, "bbox"), *b;
    LADLE_CHECK(yyjson_is_arr(bbox) && yyjson_arr_size(bbox) == 4, LADLE_ERROR_CORRUPT_DATA,
                "%s: %s has no \"bbox\" of 4 numbers", name, what);
    kept k = {v, (int64_t)i, im->index, c->index, {0}};
    size_t j, m;
    yyjson_arr_foreach(bbox, j, m, b) {
      double d = yyjson_get_num(b);
      LADLE_CHECK(yyjson_is_num(b) && isfinite(d) && fabs(d) <= MAX_COORDINATE, LADLE_ERROR_CORRUPT_DATA,
                  "%s: %s has a \"bbox\" entry that is not a number within +-1e8", name, what);
      k.box[j] = (float)d;
    }
    if (crowd && !params->include_iscrowd) continue;
    if (k.box[2] < params->size_threshold || k.box[3] < params->size_threshold) continue;
    get_int(image_vals[im->index], "width", &iw);
    get_int(image_vals[im->index], "height", &ih);
    LADLE_CHECK(k.box[2] >= 0 && k.box[3] >= 0, LADLE_ERROR_CORRUPT_DATA,
                "%s: %s has a \"bbox\" of negative size [%g, %g, %g, %g]", name, what, k.box[0], k.box[1], k.box[2],
                k.box[3]);
    LADLE_CHECK(k.box[0] < (float)iw && k.box[1] < (float)ih && k.box[0] + k.box[2] > 0 && k.box[1] + k.box[3] > 0,
                LADLE_ERROR_CORRUPT_DATA, "%s: %s has a \"bbox\" [%g, %g, %g, %g] entirely outside its image "
                "(%lld x %lld)", name, what, k.box[0], k.box[1], k.box[2], k.box[3], (long long)iw, (long long)ih);
    LADLE_CHECK(image_counts[im->index] < INT32_MAX, LADLE_ERROR_LIMIT, "%s: image %lld has too many annotations",
                name, (long long)image_id);
    image_counts[im->index]++;
    ks[num_kept++] = k;
  }

  /* Samples: images by id, the empty ones left out with skip_empty. */
  LADLE_ALLOC(image_order, num_images);
  LADLE_ALLOC(sample_of, num_images);
  LADLE_ALLOC(next, num_images);
  size_t path_bytes = 0;
  int64_t ns = 0, offset = 0;
  for (int64_t k = 0; k < num_images; k++) {
    int32_t im = image_ids[k].index;
    sample_of[im] = -1;
    if (params->skip_empty && image_counts[im] == 0) continue;
    sample_of[im] = ns;
    image_order[ns++] = im;
    next[im] = offset;
    offset += image_counts[im];
    path_bytes += (root_dir ? strlen(root_dir) + 1 : 0) + yyjson_get_len(yyjson_obj_get(image_vals[im], "file_name")) + 1;
  }
  LADLE_CHECK(ns > 0, LADLE_ERROR_INVALID_ARGUMENT, "%s: no image has an annotation left (skip_empty)", name);
  x->num_samples = ns;
  x->num_anns = offset;
  LADLE_ALLOC(x->images, ns);
  LADLE_ALLOC(x->strings, path_bytes);
  char *p = x->strings;
  for (int64_t s = 0; s < ns; s++) {
    int32_t im = image_order[s];
    yyjson_val *iv = image_vals[im], *fn = yyjson_obj_get(iv, "file_name");
    int64_t id, w, h;
    get_int(iv, "id", &id);
    get_int(iv, "width", &w);
    get_int(iv, "height", &h);
    x->images[s] = (ladle__coco_image){p, id, (int32_t)w, (int32_t)h, next[im], image_counts[im]};
    if (root_dir) p += sprintf(p, "%s/", root_dir);
    memcpy(p, yyjson_get_str(fn), yyjson_get_len(fn));
    p += yyjson_get_len(fn);
    *p++ = '\0';
  }

  /* Annotations in sample order (stable: file order within an image). */
  LADLE_ALLOC(sorted, x->num_anns ? x->num_anns : 1);
  for (int64_t k = 0; k < num_kept; k++)
    if (sample_of[ks[k].image] >= 0) sorted[next[ks[k].image]++] = ks[k];
  free(ks);
  ks = NULL;
  LADLE_ALLOC(x->boxes, 4 * x->num_anns);
  LADLE_ALLOC(x->labels, x->num_anns);
  if (params->polygons || params->rles) {
    LADLE_ALLOC(x->poly_first, x->num_anns);
    LADLE_ALLOC(x->poly_count, x->num_anns);
  }
  if (params->rles) {
    LADLE_ALLOC(x->rle_first, x->num_anns);
    LADLE_ALLOC(x->rle_count, x->num_anns);
  }
  for (int64_t a = 0; a < x->num_anns; a++) {
    const kept *k = &sorted[a];
    const ladle__coco_image *im = &x->images[sample_of[k->image]];
    float *b = x->boxes + 4 * a;
    memcpy(b, k->box, sizeof k->box);
    if (params->ltrb) {
      b[2] = b[0] + b[2];
      b[3] = b[1] + b[3];
    }
    if (params->ratio) {
      b[0] /= (float)im->width;
      b[1] /= (float)im->height;
      b[2] /= (float)im->width;
      b[3] /= (float)im->height;
    }
    x->labels[a] = k->label;
    /* Segmentations are checked for every kept annotation, read when needed. */
    st = read_segmentation(x, params, k, im->width, im->height, a);
    if (st != LADLE_OK) {
      ladle__wrap_error(st, "%s: %s", name, ann_name(k->ann, k->index, what, sizeof what));
      goto done;
    }
  }
  x->polys = shrink(x->polys, x->num_polys, sizeof *x->polys);
  x->vertices = shrink(x->vertices, 2 * x->num_vertices, sizeof *x->vertices);
  x->rle = shrink(x->rle, x->num_rle, sizeof *x->rle);
  x->bytes = (int64_t)sizeof *x + ns * (int64_t)sizeof *x->images + (int64_t)path_bytes +
             x->num_anns * (int64_t)(4 * sizeof(float) + sizeof(int32_t)) +
             (x->poly_first ? x->num_anns * (int64_t)(sizeof(int64_t) + sizeof(int32_t)) : 0) +
             x->num_polys * (int64_t)sizeof *x->polys + 2 * x->num_vertices * (int64_t)sizeof(float) +
             (x->rle_first ? x->num_anns * (int64_t)(sizeof(int64_t) + sizeof(int32_t)) : 0) +
             x->num_rle * (int64_t)sizeof(uint32_t);
done:
  free(image_vals);
  free(image_ids);
  free(categories);
  free(image_order);
  free(next);
  free(image_counts);
  free(sample_of);
  free(ks);
  free(sorted);
  return st;
}

/* Parses `data` (size bytes followed by YYJSON_PADDING_SIZE zero bytes,
 * modified in place) into x. `original`: the unmodified text for error
 * positions, or NULL to re-read it from the file `name`. */
static ladle_status parse(const char *name, char *data, size_t size, const char *original,
                          const ladle__coco_params *params, ladle__coco_index **out) {
  ladle_status st = LADLE_OK;
  ladle__coco_index *x = NULL;
  yyjson_read_err err;
  yyjson_doc *doc = yyjson_read_opts(data, size, YYJSON_READ_INSITU, NULL, &err);
  if (!doc) {
    /* In-place parsing changed the text: find the position in a fresh copy. */
    char *text = NULL;
    size_t len = size, line = 0, col = 0, chr = 0;
    if (!original && ladle__read_whole_file(name, "annotations_file", &text, &len) == LADLE_OK) original = text;
    int found = original && yyjson_locate_pos(original, len, err.pos, &line, &col, &chr);
    free(text);
    if (found)
      return LADLE_FAIL(LADLE_ERROR_CORRUPT_DATA, "%s: invalid JSON at line %zu, column %zu (byte %zu): %s", name,
                        line, col, err.pos, err.msg);
    return LADLE_FAIL(LADLE_ERROR_CORRUPT_DATA, "%s: invalid JSON at byte %zu: %s", name, err.pos, err.msg);
  }
  LADLE_ALLOC(x, 1);
  LADLE_TRY(build(name, yyjson_doc_get_root(doc), params, x));
  *out = x;
  x = NULL;
done:
  yyjson_doc_free(doc);
  ladle__coco_index_destroy(x);
  return st;
}

ladle_status ladle__coco_index_build(const char *annotations_file, const ladle__coco_params *params,
                                     ladle__coco_index **out) {
  ladle_status st = LADLE_OK;
  char *data = NULL;
  size_t size = 0;
  *out = NULL;
  LADLE_TRY(ladle__file_size(annotations_file, &size));
  LADLE_ALLOC(data, size + YYJSON_PADDING_SIZE);
  LADLE_TRY(ladle__file_read_exact(annotations_file, (uint8_t *)data, size));
  st = parse(annotations_file, data, size, NULL, params, out);
done:
  free(data);
  return st;
}

ladle_status ladle__coco_index_build_buffer(const char *name, const char *text, size_t size,
                                            const ladle__coco_params *params, ladle__coco_index **out) {
  ladle_status st = LADLE_OK;
  char *data = NULL;
  *out = NULL;
  LADLE_ALLOC(data, size + YYJSON_PADDING_SIZE);
  if (size) memcpy(data, text, size);
  st = parse(name, data, size, text, params, out);
done:
  free(data);
  return st;
}

void ladle__coco_index_destroy(ladle__coco_index *x) {
  if (!x) return;
  free(x->images);
  free(x->strings);
  free(x->boxes);
  free(x->labels);
  free(x->poly_first);
  free(x->poly_count);
  free(x->polys);
  free(x->vertices);
  free(x->rle_first);
  free(x->rle_count);
  free(x->rle);
  free(x);
}

int64_t ladle__coco_index_size(const ladle__coco_index *x) { return x->num_samples; }
ladle__coco_image ladle__coco_index_image(const ladle__coco_index *x, int64_t s) { return x->images[s]; }
int64_t ladle__coco_index_bytes(const ladle__coco_index *x) { return x->bytes; }
const float *ladle__coco_index_box(const ladle__coco_index *x, int64_t a) { return x->boxes + 4 * a; }
int32_t ladle__coco_index_label(const ladle__coco_index *x, int64_t a) { return x->labels[a]; }

void ladle__coco_index_polygons(const ladle__coco_index *x, int64_t a, int64_t *first, int32_t *count) {
  *first = x->poly_first ? x->poly_first[a] : 0;
  *count = x->poly_first ? x->poly_count[a] : 0;
}

ladle__coco_polygon ladle__coco_index_polygon(const ladle__coco_index *x, int64_t p) { return x->polys[p]; }
const float *ladle__coco_index_vertices(const ladle__coco_index *x) { return x->vertices; }

const uint32_t *ladle__coco_index_rle(const ladle__coco_index *x, int64_t a, int32_t *num_counts) {
  if (!x->rle_first || x->rle_first[a] < 0) {
    *num_counts = 0;
    return NULL;
  }
  *num_counts = x->rle_count[a];
  return x->rle + x->rle_first[a];
}
