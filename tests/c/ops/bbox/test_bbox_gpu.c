/* The bbox CUDA kernels against their CPU references (bbox_kernels.h) on
 * random inputs: point maps bit-identical (the same float operations in the
 * same order, no contraction); the box encoder's labels and non-offset boxes
 * bit-identical; in offset mode the size terms (log(wh_box / wh_anchor) -
 * mean) / std within 2 ulp, or within the error of a log 1 ulp off (the
 * device logf may differ from the host's by 1 ulp), the centre terms
 * bit-identical. Exits 77 (ctest's SKIP)
 * without CUDA or a device. */
#include "test_cuda.h" /* built without CUDA: all of this test, a skip */
#ifdef LADLE_HAVE_CUDA

#include <math.h>

#include "bbox_random.h"

static void *stream;
enum { BATCH = 7, MAX_ROWS = 2000 };

static void test_points_gpu(void) {
  static const ladle_dtype types[] = {LADLE_FLOAT32, LADLE_UINT8, LADLE_INT16, LADLE_UINT16, LADLE_INT32};
  ladle__rng_init(&rng, 9, 1, 0, 0);
  size_t bytes = (size_t)BATCH * MAX_ROWS * 6 * 4;
  uint8_t *hin = malloc(bytes), *want = malloc(bytes), *got = malloc(bytes);
  size_t pbytes = ladle__gpu_points_param_bytes(BATCH);
  void *din = test_device_alloc(bytes), *dout = test_device_alloc(bytes);
  void *hp = test_pinned_alloc(pbytes), *dp = test_device_alloc(pbytes);
  for (int trial = 0; trial < 60 && hin && want && got; trial++) {
    int mode = trial % 3;
    ladle_dtype it = mode == LADLE__POINTS_AFFINE ? types[rnd_int(0, 4)] : LADLE_FLOAT32;
    ladle_dtype ot = mode == LADLE__POINTS_AFFINE && rnd_int(0, 1) ? it : LADLE_FLOAT32;
    ladle__gpu_points_desc d[BATCH];
    size_t in_off = 0, out_off = 0;
    memset(want, 0, bytes);
    for (int i = 0; i < BATCH; i++) {
      random_points_params(&d[i].p, mode);
      int64_t rows = rnd_int(0, 4) == 0 ? 0 : rnd_int(1, MAX_ROWS);
      uint8_t *src = hin + in_off;
      size_t n = (size_t)rows * d[i].p.in_dim;
      for (size_t k = 0; k < n; k++) {
        float v = mode == LADLE__POINTS_AFFINE ? rnd_float(-40000, 40000) : rnd_float(0, 1);
        switch (it) {
          case LADLE_UINT8: src[k] = (uint8_t)rnd_int(0, 255); break;
          case LADLE_INT16: ((int16_t *)src)[k] = (int16_t)rnd_int(-32768, 32767); break;
          case LADLE_UINT16: ((uint16_t *)src)[k] = (uint16_t)rnd_int(0, 65535); break;
          case LADLE_INT32: ((int32_t *)src)[k] = rnd_int(-2000000000, 2000000000); break;
          default: ((float *)src)[k] = v; break;
        }
      }
      if (mode == LADLE__POINTS_BB_FLIP) random_boxes((float *)src, rows);
      ladle__points_apply(want + out_off, ot, src, it, rows, &d[i].p);
      d[i].in = (uint8_t *)din + in_off, d[i].out = (uint8_t *)dout + out_off, d[i].rows = rows;
      in_off += (n * ladle_dtype_size(it) + 15) & ~(size_t)15;
      out_off += ((size_t)rows * d[i].p.out_dim * ladle_dtype_size(ot) + 15) & ~(size_t)15;
    }
    test_upload(din, hin, in_off);
    test_fill(dout, 0, bytes);
    CHECK_OK(ladle__gpu_points(d, BATCH, ot, it, hp, dp, pbytes, stream));
    test_download(got, dout, out_off, stream);
    CHECK(!memcmp(got, want, out_off));
  }
  cudaFree(din), cudaFree(dout), cudaFree(dp), cudaFreeHost(hp);
  free(hin), free(want), free(got);
}

static int ulp_close(float a, float b, int ulps) {
  if (a == b) return 1;
  int32_t ia, ib;
  memcpy(&ia, &a, 4), memcpy(&ib, &b, 4);
  return (ia < 0) == (ib < 0) && abs(ia - ib) <= ulps;
}

static void test_box_encoder_gpu(void) {
  ladle__rng_init(&rng, 9, 2, 0, 0);
  enum { MAX_BOXES = 60, ANCHORS = 3000 };
  float *anchors = malloc(sizeof(float) * 4 * ANCHORS), *boxes = malloc(sizeof(float) * 4 * BATCH * MAX_BOXES);
  int32_t *labels = malloc(sizeof(int32_t) * BATCH * MAX_BOXES);
  float *want = malloc(sizeof(float) * 4 * BATCH * ANCHORS), *got = malloc(sizeof(float) * 4 * BATCH * ANCHORS);
  int32_t *want_l = malloc(sizeof(int32_t) * BATCH * ANCHORS), *got_l = malloc(sizeof(int32_t) * BATCH * ANCHORS);
  int best[MAX_BOXES];
  size_t pbytes = ladle__gpu_box_encoder_param_bytes(BATCH, ANCHORS);
  void *dboxes = test_device_alloc(sizeof(float) * 4 * BATCH * MAX_BOXES),
       *dlabels = test_device_alloc(sizeof(int32_t) * BATCH * MAX_BOXES),
       *dout = test_device_alloc(sizeof(float) * 4 * BATCH * ANCHORS),
       *dout_l = test_device_alloc(sizeof(int32_t) * BATCH * ANCHORS),
       *dbest = test_device_alloc(sizeof(int) * BATCH * MAX_BOXES), *hp = test_pinned_alloc(pbytes),
       *dp = test_device_alloc(pbytes);
  for (int trial = 0; trial < 12 && anchors && boxes && labels && want && got && want_l && got_l; trial++) {
    int64_t nanchors = rnd_int(1, ANCHORS);
    random_boxes(anchors, nanchors);
    if (trial % 3 == 0) /* repeated anchors: ties between equal IoUs */
      for (int64_t j = 1; j < nanchors; j += 2) memcpy(anchors + 4 * j, anchors + 4 * (j - 1), 16);
    ladle__box_encoder_params p = {.criteria = rnd_float(0, 0.7f), .offset = trial % 2, .scale = rnd_float(0.5f, 3),
                                   .means = {rnd_float(-1, 1), rnd_float(-1, 1), rnd_float(-1, 1), rnd_float(-1, 1)},
                                   .stds = {rnd_float(0.1f, 2), rnd_float(0.1f, 2), rnd_float(0.1f, 2),
                                            rnd_float(0.1f, 2)}};
    ladle__gpu_box_encoder_desc d[BATCH];
    for (int i = 0; i < BATCH; i++) {
      int64_t nb = rnd_int(0, 3) == 0 ? 0 : rnd_int(1, MAX_BOXES);
      float *b = boxes + 4 * i * MAX_BOXES;
      random_boxes(b, nb);
      if (trial % 4 == 1 && nb > 1) memcpy(b + 4, b, 16); /* a repeated box */
      for (int64_t k = 0; k < nb; k++) labels[i * MAX_BOXES + k] = rnd_int(1, 80);
      ladle__box_encode(want + 4 * i * ANCHORS, want_l + i * ANCHORS, b, labels + i * MAX_BOXES, nb, anchors,
                        nanchors, &p, best);
      d[i] = (ladle__gpu_box_encoder_desc){(float *)dboxes + 4 * i * MAX_BOXES, (int32_t *)dlabels + i * MAX_BOXES,
                                           (float *)dout + 4 * i * ANCHORS, (int32_t *)dout_l + i * ANCHORS,
                                           (int *)dbest + i * MAX_BOXES, nb};
    }
    test_upload(dboxes, boxes, sizeof(float) * 4 * BATCH * MAX_BOXES);
    test_upload(dlabels, labels, sizeof(int32_t) * BATCH * MAX_BOXES);
    CHECK_OK(ladle__gpu_box_encoder(d, BATCH, anchors, nanchors, &p, hp, dp, pbytes, stream));
    test_download(got, dout, sizeof(float) * 4 * BATCH * ANCHORS, stream);
    test_download(got_l, dout_l, sizeof(int32_t) * BATCH * ANCHORS, stream);
    int labels_same = 1, boxes_ok = 1;
    for (int i = 0; i < BATCH; i++)
      for (int64_t j = 0; j < nanchors; j++) {
        labels_same &= got_l[i * ANCHORS + j] == want_l[i * ANCHORS + j];
        for (int k = 0; k < 4; k++) {
          float g = got[4 * (i * ANCHORS + j) + k], w = want[4 * (i * ANCHORS + j) + k];
          /* log(x) off by 1 ulp of itself, then (log - mean) / std rounded twice */
          float tol = 2.4e-7f * (fabsf(w) + fabsf(p.means[k]) / p.stds[k]);
          boxes_ok &= p.offset && k >= 2 ? (ulp_close(g, w, 2) || fabsf(g - w) <= tol) : g == w;
        }
      }
    CHECK(labels_same);
    CHECK(boxes_ok);
  }
  cudaFree(dboxes), cudaFree(dlabels), cudaFree(dout), cudaFree(dout_l), cudaFree(dbest), cudaFree(dp);
  cudaFreeHost(hp);
  free(anchors), free(boxes), free(labels), free(want), free(got), free(want_l), free(got_l);
}

int main(void) {
  TEST_SKIP_WITHOUT_DEVICE();
  CHECK_OK(ladle__cuda_use_device(0, NULL));
  CHECK_OK(ladle__cuda_stream_create(0, &stream));
  RUN(test_points_gpu);
  RUN(test_box_encoder_gpu);
  ladle__cuda_stream_destroy(stream);
  TEST_MAIN_END();
}

#endif
