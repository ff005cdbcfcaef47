/* The engine behind fn.readers.coco: a COCO annotations file (JSON) parsed
 * once at build into compact per-image arrays (no JSON tree is kept), the
 * boxes already in their output form.
 *
 * What is read, as NVIDIA DALI 2.4's COCO reader reads it:
 *  - "images": objects with "id" (integer), "file_name", "width" and
 *    "height" (positive integers). Samples are the images in ascending id
 *    order; with skip_empty, images left with no annotation are dropped.
 *  - "categories": objects with "id". Labels are 1, 2, ... in the order the
 *    categories appear (0 is left for the background), or the ids themselves
 *    with avoid_class_remapping.
 *  - "annotations": objects with "image_id", "category_id", "bbox" ([x, y,
 *    w, h], numbers), optional "iscrowd" (0 when absent), "id" (only named in
 *    messages) and "segmentation" (a list of polygons [x0, y0, x1, y1, ...],
 *    or an RLE object {"counts": [...] or "compressed string", "size": [h, w]}).
 *    An annotation is left out when it is a crowd and include_iscrowd is 0,
 *    or when its width or height is below size_threshold (a negative size
 *    included). The others keep the file's order within their image.
 * Bad files fail at build with a message naming the annotations file and
 * the image or annotation (its "id", else its index): invalid JSON (with the
 * line, column and byte the parser stopped at), a missing or mistyped key,
 * an unknown image or category id, a duplicate image or category id, a
 * non-finite number, a box lying entirely outside its image, a polygon with
 * an odd number of coordinates or fewer than 3 points, an RLE whose size is
 * not the image's or whose counts overrun it. DALI 2.4 drops annotations of
 * unknown images and gives label 0 to unknown categories without a word,
 * and reads past the end of odd polygons; ladle refuses such files. DALI
 * also mixes up images that share a file_name; here each "images" entry is
 * its own sample.
 *
 * Thread safety: immutable after build; every accessor may be called from
 * any thread at once. */
#ifndef LADLE_IO_COCO_INDEX_H
#define LADLE_IO_COCO_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "ladle/ladle.h"

typedef struct ladle__coco_params {
  const char *file_root;        /* image paths are file_root/file_name; NULL or "": as written */
  int ltrb;                     /* boxes as [l, t, r, b] instead of [x, y, w, h] */
  int ratio;                    /* boxes and vertices divided by the image's width and height */
  int skip_empty;               /* drop images without annotations */
  int include_iscrowd;          /* keep annotations with iscrowd != 0 */
  int avoid_class_remapping;    /* labels are the category ids */
  float size_threshold;         /* annotations narrower or lower than this are dropped */
  int polygons;                 /* keep the polygons (polygon_masks, or pixelwise masks) */
  int rles;                     /* keep the RLE masks (pixelwise masks) */
} ladle__coco_params;

typedef struct ladle__coco_index ladle__coco_index;

/* One polygon: its vertices in ladle__coco_index_vertices (absolute pixel
 * coordinates, as in the file). */
typedef struct ladle__coco_polygon {
  int64_t first_vertex; /* into ladle__coco_index_vertices */
  int32_t num_vertices;
} ladle__coco_polygon;

typedef struct ladle__coco_image {
  const char *path;        /* valid until destroy */
  int64_t id;
  int32_t width, height;
  int64_t first_ann;       /* the image's annotations: [first_ann, first_ann + num_anns) */
  int32_t num_anns;
} ladle__coco_image;

/* Parses the annotations file `annotations_file`. */
ladle_status ladle__coco_index_build(const char *annotations_file, const ladle__coco_params *params,
                                     ladle__coco_index **out);
/* The same from `size` bytes of JSON in memory (copied); `name` names them in
 * messages. */
ladle_status ladle__coco_index_build_buffer(const char *name, const char *data, size_t size,
                                            const ladle__coco_params *params, ladle__coco_index **out);
void ladle__coco_index_destroy(ladle__coco_index *x);

int64_t ladle__coco_index_size(const ladle__coco_index *x);             /* samples */
ladle__coco_image ladle__coco_index_image(const ladle__coco_index *x, int64_t sample);
/* The bytes the index holds (its arrays and strings), for the reader's metadata. */
int64_t ladle__coco_index_bytes(const ladle__coco_index *x);

/* Per annotation a (a global index, first_ann + i): its box (4 floats, the
 * output form), its label, its polygons (first and count, into
 * ladle__coco_index_polygon) and its RLE counts (NULL, 0 for none; column-
 * major runs over the image, zeros first). */
const float *ladle__coco_index_box(const ladle__coco_index *x, int64_t a);
int32_t ladle__coco_index_label(const ladle__coco_index *x, int64_t a);
void ladle__coco_index_polygons(const ladle__coco_index *x, int64_t a, int64_t *first, int32_t *count);
ladle__coco_polygon ladle__coco_index_polygon(const ladle__coco_index *x, int64_t p);
const float *ladle__coco_index_vertices(const ladle__coco_index *x); /* x, y pairs, absolute */
const uint32_t *ladle__coco_index_rle(const ladle__coco_index *x, int64_t a, int32_t *num_counts);

/* --- masks (coco_mask.c) --------------------------------------------------- */

/* The scratch bytes ladle__coco_draw_mask needs for `sample`; fails with
 * LADLE_ERROR_LIMIT for a polygon reaching absurdly far outside its image. */
ladle_status ladle__coco_mask_scratch(const ladle__coco_index *x, int64_t sample, size_t *bytes);

/* Draws the image's annotations into `mask` (height * width int32,
 * row-major, zeroed by the caller): each pixel gets the largest label of the
 * annotations covering it, as DALI's pixelwise masks do. Polygons are
 * rasterized as pycocotools does (rleFrPoly), RLEs decoded. */
void ladle__coco_draw_mask(const ladle__coco_index *x, int64_t sample, int32_t *mask, void *scratch);

/* The RLE counts of a COCO compressed-RLE string (pycocotools' format), into
 * *counts (malloc'd, the caller frees). Fails on a malformed string. */
ladle_status ladle__coco_rle_from_string(const char *s, size_t len, uint32_t **counts, int32_t *num_counts);

#endif
