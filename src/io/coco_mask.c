/* COCO segmentation masks: compressed RLE strings, polygons rasterized the
 * way pycocotools does (its rleFrPoly: the boundary traced on a 5x finer
 * grid, then one crossing per pixel column), and the per-pixel label image
 * of readers.coco's pixelwise_masks. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "io/coco_index.h"

/* Boundary points a polygon may produce before it is refused (coordinates
 * far outside any image). */
#define MAX_BOUNDARY_POINTS ((int64_t)1 << 24)

ladle_status ladle__coco_rle_from_string(const char *s, size_t len, uint32_t **counts, int32_t *num_counts) {
  ladle_status st = LADLE_OK;
  uint32_t *c = NULL;
  int64_t m = 0;
  size_t p = 0;
  LADLE_ALLOC(c, len + 1); /* at most one count per character */
  while (p < len) {
    int64_t x = 0;
    int k = 0, more = 1;
    while (more) {
      LADLE_CHECK(p < len, LADLE_ERROR_CORRUPT_DATA, "the RLE string ends inside a count");
      int ch = (unsigned char)s[p] - 48;
      LADLE_CHECK(ch >= 0 && ch < 64 && k < 7, LADLE_ERROR_CORRUPT_DATA,
                  "the RLE string has a bad character at position %zu", p);
      x |= (int64_t)(ch & 0x1f) << (5 * k);
      more = ch & 0x20;
      p++;
      k++;
      if (!more && (ch & 0x10)) x -= (int64_t)1 << (5 * k); /* sign extension */
    }
    if (m > 2) x += c[m - 2];
    LADLE_CHECK(x >= 0 && x <= UINT32_MAX, LADLE_ERROR_CORRUPT_DATA, "the RLE string has a count out of range");
    c[m++] = (uint32_t)x;
  }
  *counts = c;
  *num_counts = (int32_t)m;
  return LADLE_OK;
done:
  free(c);
  return st;
}

static int compare_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

/* Sets mask pixels covered by the ones-runs of `counts` (column-major, zeros
 * first) to at least `label`. */
static void apply_runs(int32_t *mask, int32_t h, int32_t w, const uint32_t *counts, int64_t num, int32_t label) {
  int64_t idx = 0, total = (int64_t)h * w;
  for (int64_t r = 0; r < num && idx < total; r++) {
    int64_t end = idx + counts[r];
    if (end > total) end = total;
    if (r & 1)
      for (int64_t i = idx; i < end; i++) {
        int32_t *px = &mask[(i % h) * (int64_t)w + i / h];
        if (*px < label) *px = label;
      }
    idx = end;
  }
}

/* The points pycocotools' rleFrPoly traces along the outline of the n
 * points at xy, on its 5x grid (each edge's longer side, plus one). */
static int64_t boundary_points(const float *xy, int32_t n) {
  const double scale = 5;
  int64_t m = 0;
  for (int32_t j = 0; j < n; j++) {
    int32_t k = (j + 1) % n;
    int64_t x0 = (int64_t)(scale * xy[2 * j] + .5), y0 = (int64_t)(scale * xy[2 * j + 1] + .5);
    int64_t x1 = (int64_t)(scale * xy[2 * k] + .5), y1 = (int64_t)(scale * xy[2 * k + 1] + .5);
    int64_t dx = llabs(x1 - x0), dy = llabs(y1 - y0);
    m += (dx > dy ? dx : dy) + 1;
  }
  return m;
}

static size_t polygon_scratch(int64_t m) { return (size_t)m * 2 * sizeof(int32_t) + ((size_t)m + 1) * sizeof(uint32_t); }

ladle_status ladle__coco_mask_scratch(const ladle__coco_index *x, int64_t sample, size_t *bytes) {
  ladle__coco_image im = ladle__coco_index_image(x, sample);
  const float *vertices = ladle__coco_index_vertices(x);
  *bytes = 0;
  for (int32_t i = 0; i < im.num_anns; i++) {
    int64_t first;
    int32_t count;
    ladle__coco_index_polygons(x, im.first_ann + i, &first, &count);
    for (int32_t p = 0; p < count; p++) {
      ladle__coco_polygon poly = ladle__coco_index_polygon(x, first + p);
      int64_t m = boundary_points(vertices + 2 * poly.first_vertex, poly.num_vertices);
      if (m > MAX_BOUNDARY_POINTS)
        return LADLE_FAIL(LADLE_ERROR_LIMIT,
                          "a polygon's outline is too long for a mask (%lld points on the 5x grid; at most %lld)",
                          (long long)m, (long long)MAX_BOUNDARY_POINTS);
      if (polygon_scratch(m) > *bytes) *bytes = polygon_scratch(m);
    }
  }
  return LADLE_OK;
}

/* pycocotools' rleFrPoly for the n points at xy, over an h x w image, drawn
 * into mask with `label`; `scratch` holds polygon_scratch(boundary_points). */
static void draw_polygon(const float *xy, int32_t n, int32_t h, int32_t w, int32_t *mask, int32_t label,
                         void *scratch) {
  const double scale = 5;
  int64_t m = boundary_points(xy, n);
  /* u, v: the boundary's points; then the crossings (as run starts, a). */
  int32_t *u = scratch, *v = u + m;
  uint32_t *a = (uint32_t *)(v + m);
  m = 0;
  for (int32_t j = 0; j < n; j++) {
    int32_t k = (j + 1) % n;
    int32_t xs = (int32_t)(scale * xy[2 * j] + .5), xe = (int32_t)(scale * xy[2 * k] + .5);
    int32_t ys = (int32_t)(scale * xy[2 * j + 1] + .5), ye = (int32_t)(scale * xy[2 * k + 1] + .5);
    int32_t dx = abs(xe - xs), dy = abs(ys - ye), t;
    int flip = (dx >= dy && xs > xe) || (dx < dy && ys > ye);
    if (flip) {
      t = xs, xs = xe, xe = t;
      t = ys, ys = ye, ye = t;
    }
    if (dx >= dy) {
      /* dx == dy == 0: one point (pycocotools divides 0 by 0 here; the
       * point's v is never read, since u does not change around it). */
      double s = dx ? (double)(ye - ys) / dx : 0;
      for (int32_t d = 0; d <= dx; d++) {
        t = flip ? dx - d : d;
        u[m] = t + xs;
        v[m] = (int32_t)(ys + s * t + .5);
        m++;
      }
    } else {
      double s = (double)(xe - xs) / dy;
      for (int32_t d = 0; d <= dy; d++) {
        t = flip ? dy - d : d;
        v[m] = t + ys;
        u[m] = (int32_t)(xs + s * t + .5);
        m++;
      }
    }
  }
  /* One crossing per column where the boundary moves from column to column,
   * back on the pixel grid. */
  int64_t k = 0;
  for (int64_t j = 1; j < m; j++) {
    if (u[j] == u[j - 1]) continue;
    double xd = (double)(u[j] < u[j - 1] ? u[j] : u[j] - 1);
    xd = (xd + .5) / scale - .5;
    if (floor(xd) != xd || xd < 0 || xd > w - 1) continue;
    double yd = (double)(v[j] < v[j - 1] ? v[j] : v[j - 1]);
    yd = (yd + .5) / scale - .5;
    if (yd < 0)
      yd = 0;
    else if (yd > h)
      yd = h;
    yd = ceil(yd);
    a[k++] = (uint32_t)((int64_t)xd * h + (int64_t)yd);
  }
  a[k++] = (uint32_t)((int64_t)h * w);
  qsort(a, (size_t)k, sizeof *a, compare_u32);
  uint32_t prev = 0;
  for (int64_t j = 0; j < k; j++) {
    uint32_t cur = a[j];
    a[j] -= prev;
    prev = cur;
  }
  /* Runs of zero length merge their neighbours (in place: b trails a). */
  uint32_t *b = a;
  int64_t j = 0, nb = 0;
  b[nb++] = a[j++];
  while (j < k) {
    if (a[j] > 0) {
      b[nb++] = a[j++];
    } else {
      j++;
      if (j < k) b[nb - 1] += a[j++];
    }
  }
  apply_runs(mask, h, w, b, nb, label);
}

void ladle__coco_draw_mask(const ladle__coco_index *x, int64_t sample, int32_t *mask, void *scratch) {
  ladle__coco_image im = ladle__coco_index_image(x, sample);
  const float *vertices = ladle__coco_index_vertices(x);
  for (int32_t i = 0; i < im.num_anns; i++) {
    int64_t a = im.first_ann + i, first;
    int32_t count, num_counts;
    int32_t label = ladle__coco_index_label(x, a);
    ladle__coco_index_polygons(x, a, &first, &count);
    for (int32_t p = 0; p < count; p++) {
      ladle__coco_polygon poly = ladle__coco_index_polygon(x, first + p);
      draw_polygon(vertices + 2 * poly.first_vertex, poly.num_vertices, im.height, im.width, mask, label, scratch);
    }
    const uint32_t *rle = ladle__coco_index_rle(x, a, &num_counts);
    if (rle) apply_runs(mask, im.height, im.width, rle, num_counts, label);
  }
}
