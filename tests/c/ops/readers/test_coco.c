/* Tests of the COCO annotations index behind readers.coco (src/io/coco_index.h):
 * sample order, filters, box forms, labels, polygons, RLE strings, masks,
 * and the messages of bad files. JSON comes from memory (the _buffer build). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "io/coco_index.h"
#include "test.h"

static const char *const good_json =
    "{\"images\": [{\"id\": 9, \"file_name\": \"b.jpg\", \"width\": 20, \"height\": 10},\n"
    "            {\"id\": 2, \"file_name\": \"a.jpg\", \"width\": 8, \"height\": 4},\n"
    "            {\"id\": 5, \"file_name\": \"c.jpg\", \"width\": 4, \"height\": 4}],\n"
    " \"categories\": [{\"id\": 30}, {\"id\": 10}],\n"
    " \"annotations\": [\n"
    "  {\"id\": 1, \"image_id\": 9, \"category_id\": 10, \"bbox\": [1, 2, 4, 6], \"segmentation\": [[1,2, 5,2, 5,8, 1,8]]},\n"
    "  {\"id\": 2, \"image_id\": 2, \"category_id\": 30, \"bbox\": [0, 0, 8, 4], \"iscrowd\": 1,\n"
    "   \"segmentation\": {\"counts\": [4, 8, 20], \"size\": [4, 8]}},\n"
    "  {\"id\": 3, \"image_id\": 9, \"category_id\": 30, \"bbox\": [3, 3, 0.05, 5]},\n"
    "  {\"id\": 4, \"image_id\": 9, \"category_id\": 30, \"bbox\": [10, 0, 10, 10], \"segmentation\": [[10,0, 20,0, 20,10, 10,10]]}\n"
    " ]}";

static ladle__coco_params defaults(void) {
  return (ladle__coco_params){.file_root = "root", .include_iscrowd = 1, .size_threshold = 0.1f};
}

static ladle__coco_index *build(const char *json, const ladle__coco_params *p) {
  ladle__coco_index *x = NULL;
  ladle_status st = ladle__coco_index_build_buffer("ann.json", json, strlen(json), p, &x);
  if (st != LADLE_OK) fprintf(stderr, "build: %s\n", ladle_last_error());
  return x;
}

static void test_order_filters_and_boxes(void) {
  ladle__coco_params p = defaults();
  ladle__coco_index *x = build(good_json, &p);
  CHECK(x != NULL);
  if (!x) return;
  CHECK(ladle__coco_index_size(x) == 3);
  ladle__coco_image a = ladle__coco_index_image(x, 0), b = ladle__coco_index_image(x, 1);
  CHECK(a.id == 2 && strcmp(a.path, "root/a.jpg") == 0 && a.width == 8 && a.height == 4 && a.num_anns == 1);
  CHECK(b.id == 5 && b.num_anns == 0);
  ladle__coco_image c = ladle__coco_index_image(x, 2);
  CHECK(c.id == 9 && c.num_anns == 2); /* annotation 3 is narrower than size_threshold */
  const float *box = ladle__coco_index_box(x, c.first_ann);
  CHECK(box[0] == 1 && box[1] == 2 && box[2] == 4 && box[3] == 6);
  CHECK(ladle__coco_index_label(x, c.first_ann) == 2 && ladle__coco_index_label(x, c.first_ann + 1) == 1);
  CHECK(ladle__coco_index_label(x, a.first_ann) == 1);
  CHECK(ladle__coco_index_bytes(x) > 0);
  ladle__coco_index_destroy(x);

  p.ltrb = p.ratio = p.skip_empty = p.avoid_class_remapping = 1;
  p.include_iscrowd = 0;
  x = build(good_json, &p);
  CHECK(x && ladle__coco_index_size(x) == 1); /* the crowd is left out, two images are empty */
  if (!x) return;
  c = ladle__coco_index_image(x, 0);
  box = ladle__coco_index_box(x, c.first_ann);
  CHECK(box[0] == 1.0f / 20 && box[1] == 2.0f / 10 && box[2] == 5.0f / 20 && box[3] == 8.0f / 10);
  CHECK(ladle__coco_index_label(x, c.first_ann) == 10);
  ladle__coco_index_destroy(x);
}

static void test_polygons_and_masks(void) {
  ladle__coco_params p = defaults();
  p.polygons = p.rles = 1;
  ladle__coco_index *x = build(good_json, &p);
  CHECK(x != NULL);
  if (!x) return;
  /* sample 0 (image 2): the RLE, 4 zeros, 8 ones: columns 1 and 2 of 4 rows */
  int32_t mask[200];
  size_t bytes = 0;
  memset(mask, 0, sizeof mask);
  CHECK_OK(ladle__coco_mask_scratch(x, 0, &bytes));
  ladle__coco_draw_mask(x, 0, mask, NULL);
  for (int y = 0; y < 4; y++)
    for (int xx = 0; xx < 8; xx++) CHECK(mask[y * 8 + xx] == ((xx == 1 || xx == 2) ? 1 : 0));
  /* sample 2 (image 9): rectangles [1, 5) x [2, 8) label 2 and [10, 20) x [0, 10) label 1 */
  ladle__coco_image im = ladle__coco_index_image(x, 2);
  int64_t first;
  int32_t count;
  ladle__coco_index_polygons(x, im.first_ann, &first, &count);
  CHECK(count == 1 && ladle__coco_index_polygon(x, first).num_vertices == 4);
  CHECK_OK(ladle__coco_mask_scratch(x, 2, &bytes));
  void *scratch = malloc(bytes);
  memset(mask, 0, sizeof mask);
  ladle__coco_draw_mask(x, 2, mask, scratch);
  int bad = 0;
  for (int y = 0; y < 10; y++)
    for (int xx = 0; xx < 20; xx++) {
      int want = (xx >= 1 && xx < 5 && y >= 2 && y < 8) ? 2 : (xx >= 10 ? 1 : 0);
      bad += mask[y * 20 + xx] != want;
    }
  CHECK(bad == 0);
  free(scratch);
  ladle__coco_index_destroy(x);
}

static void test_rle_strings(void) {
  /* "0" is 0; 5-bit groups with a continuation bit (0x20) and a sign bit; deltas from counts[i - 2] after i > 2 */
  uint32_t *c = NULL;
  int32_t n = 0;
  CHECK_OK(ladle__coco_rle_from_string(":d0b1d0f6", 9, &c, &n));
  CHECK(n == 5 && c[0] == 10 && c[1] == 20 && c[2] == 50 && c[3] == 40 && c[4] == 264);
  free(c);
  c = NULL;
  CHECK(ladle__coco_rle_from_string("\x7f", 1, &c, &n) == LADLE_ERROR_CORRUPT_DATA);
  CHECK(ladle__coco_rle_from_string("o", 1, &c, &n) == LADLE_ERROR_CORRUPT_DATA); /* ends inside a count */
}

/* Each bad file fails with CORRUPT_DATA and a message holding `words`. */
static void expect_bad(const char *json, const char *words, int masks) {
  ladle__coco_params p = defaults();
  p.polygons = p.rles = masks;
  ladle__coco_index *x = NULL;
  ladle_status st = ladle__coco_index_build_buffer("ann.json", json, strlen(json), &p, &x);
  CHECK(st != LADLE_OK && x == NULL);
  CHECK(strstr(ladle_last_error(), "ann.json") != NULL);
  if (!strstr(ladle_last_error(), words)) {
    fprintf(stderr, "expected \"%s\" in: %s\n", words, ladle_last_error());
    CHECK(0);
  }
}

#define IMG "\"images\": [{\"id\": 1, \"file_name\": \"a\", \"width\": 10, \"height\": 10}], \"categories\": [{\"id\": 1}]"

static void test_bad_files(void) {
  expect_bad("{\"images\": [1, 2,]}", "invalid JSON at line 1, column 17 (byte 16): trailing comma", 0);
  expect_bad("[]", "not an object", 0);
  expect_bad("{" IMG "}", "no \"annotations\" list", 0);
  expect_bad("{" IMG ", \"annotations\": [{\"id\": 7, \"image_id\": 3, \"category_id\": 1, \"bbox\": [0,0,1,1]}]}",
             "annotation 7 refers to image id 3", 0);
  expect_bad("{" IMG ", \"annotations\": [{\"id\": 7, \"image_id\": 1, \"category_id\": 2, \"bbox\": [0,0,1,1]}]}",
             "annotation 7 has category_id 2", 0);
  expect_bad("{" IMG ", \"annotations\": [{\"id\": 7, \"image_id\": 1, \"category_id\": 1, \"bbox\": [0,0,1]}]}",
             "annotation 7 has no \"bbox\"", 0);
  expect_bad("{" IMG ", \"annotations\": [{\"id\": 7, \"image_id\": 1, \"category_id\": 1, \"bbox\": [11,0,1,1]}]}",
             "entirely outside", 0);
  expect_bad("{" IMG ", \"annotations\": [{\"id\": 7, \"image_id\": 1, \"category_id\": 1, \"bbox\": [0,0,1,1],"
             " \"segmentation\": [[0,0,1,1,2]]}]}",
             "annotation 7: \"segmentation\" polygon 0 has an odd number", 0);
  expect_bad("{" IMG ", \"annotations\": [{\"id\": 7, \"image_id\": 1, \"category_id\": 1, \"bbox\": [0,0,1,1],"
             " \"segmentation\": {\"counts\": [99, 2], \"size\": [10, 10]}}]}",
             "cover 101 pixels", 1);
  expect_bad("{" IMG ", \"annotations\": [{\"id\": 7, \"image_id\": 1, \"category_id\": 1, \"bbox\": [0,0,1,1],"
             " \"segmentation\": [[0,0,1e9,0,1,1]]}]}",
             "within +-1e8", 1);
}

int main(void) {
  RUN(test_order_filters_and_boxes);
  RUN(test_polygons_and_masks);
  RUN(test_rle_strings);
  RUN(test_bad_files);
  TEST_MAIN_END();
}
