/* libFuzzer target for the COCO annotations parser behind readers.coco
 * (src/io/coco_index.h): each input is an annotations file (JSON), indexed
 * with polygons and RLEs kept (the first byte picks ltrb, ratio, skip_empty,
 * include_iscrowd and avoid_class_remapping), and every sample's outputs and
 * pixelwise mask computed into buffers of exactly the announced size. A
 * status other than the ones a bad file may cause, or an index that breaks
 * its own invariants, aborts. Build and run: see README.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "io/coco_index.h"

static void expect_bad_file_status(ladle_status st) {
  if (st == LADLE_OK || st == LADLE_ERROR_CORRUPT_DATA || st == LADLE_ERROR_INVALID_ARGUMENT ||
      st == LADLE_ERROR_LIMIT || st == LADLE_ERROR_OUT_OF_MEMORY)
    return;
  fprintf(stderr, "fuzz_coco: unexpected status %s: %s\n", ladle_status_name(st), ladle_last_error());
  abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  unsigned flags = data[0];
  ladle__coco_params p = {.file_root = "root", .ltrb = flags & 1, .ratio = (flags >> 1) & 1,
                          .skip_empty = (flags >> 2) & 1, .include_iscrowd = (flags >> 3) & 1,
                          .avoid_class_remapping = (flags >> 4) & 1, .size_threshold = (flags >> 5) & 1 ? 2.0f : 0.1f,
                          .polygons = 1, .rles = 1};
  ladle__coco_index *x = NULL;
  ladle_status st = ladle__coco_index_build_buffer("fuzz.json", (const char *)data + 1, size - 1, &p, &x);
  expect_bad_file_status(st);
  if (st != LADLE_OK) return 0;
  int64_t n = ladle__coco_index_size(x);
  if (n < 1 || ladle__coco_index_bytes(x) <= 0) abort();
  for (int64_t s = 0; s < n; s++) {
    ladle__coco_image im = ladle__coco_index_image(x, s);
    if (im.width <= 0 || im.height <= 0 || im.num_anns < 0 || !im.path) abort();
    if (p.skip_empty && im.num_anns == 0) abort();
    for (int32_t i = 0; i < im.num_anns; i++) {
      int64_t first;
      int32_t count, nc;
      const float *box = ladle__coco_index_box(x, im.first_ann + i);
      if (!p.ltrb && (box[2] < 0 || box[3] < 0)) abort();
      ladle__coco_index_polygons(x, im.first_ann + i, &first, &count);
      for (int32_t k = 0; k < count; k++)
        if (ladle__coco_index_polygon(x, first + k).num_vertices < 3) abort();
      const uint32_t *rle = ladle__coco_index_rle(x, im.first_ann + i, &nc);
      int64_t total = 0;
      for (int32_t k = 0; rle && k < nc; k++) total += rle[k];
      if (total > (int64_t)im.width * im.height) abort();
    }
    if ((int64_t)im.width * im.height > (1 << 22)) continue; /* keep each input fast */
    size_t bytes = 0;
    st = ladle__coco_mask_scratch(x, s, &bytes);
    expect_bad_file_status(st);
    if (st != LADLE_OK) continue;
    int32_t *mask = calloc((size_t)im.width * (size_t)im.height, sizeof *mask); /* exact: ASan sees overruns */
    void *scratch = bytes ? malloc(bytes) : NULL;
    if (mask && (scratch || !bytes)) ladle__coco_draw_mask(x, s, mask, scratch);
    free(mask);
    free(scratch);
  }
  ladle__coco_index_destroy(x);
  return 0;
}
