/* The mixed image decoder makes its GPU-Huffman decoder (decoders_mixed.c)
 * for the first image routed to it, never at build: a pipeline whose images
 * all stay under hybrid_huffman_threshold never makes one, one with threshold
 * 0 has one after its first iteration (and destroys it with the pipeline,
 * which the ASan build checks). Exits 77 without CUDA, a device or nvJPEG. */
#include "test_cuda.h" /* built without CUDA: all of this test, a skip */
#ifdef LADLE_HAVE_CUDA

#include "codec/nvjpeg.h"
#include "ops/image/decoders.h"
#include "pipeline/pipeline.h"

enum { BATCH = 4 };

static uint8_t *read_file(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  uint8_t *data = malloc(1 << 20);
  *size = data ? fread(data, 1, 1 << 20, f) : 0;
  fclose(f);
  return data;
}

/* external_source -> decoders.image(device="mixed", hw_decoder_load=0,
 * hybrid_huffman_threshold=threshold), one iteration of BATCH copies of the
 * JPEG. Returns whether the GPU-Huffman decoder was made, checking it was not
 * at build; *routed: the images that decoder took. */
static int hybrid_made(const uint8_t *jpeg, size_t size, int64_t threshold, int64_t *routed) {
  ladle_pipeline_params params;
  ladle_pipeline_params_init(&params);
  params.batch_size = BATCH;
  params.num_threads = 2;
  params.device_id = 0;
  ladle_pipeline *p = NULL;
  CHECK_OK(ladle_pipeline_create(&params, &p));
  ladle_arg src_args[3] = {{"dtype", {LADLE_ARG_DTYPE, 1, {.i = LADLE_UINT8}}, -1},
                           {"ndim", {LADLE_ARG_INT, 1, {.i = 1}}, -1},
                           {"layout", {LADLE_ARG_STRING, 1, {.s = ""}}, -1}};
  ladle_arg dec_args[2] = {{"hw_decoder_load", {LADLE_ARG_FLOAT, 1, {.f = 0}}, -1},
                           {"hybrid_huffman_threshold", {LADLE_ARG_INT, 1, {.i = threshold}}, -1}};
  int src = -1, images = -1;
  CHECK_OK(ladle_pipeline_add_op(p, "external_source", "cpu", NULL, 0, src_args, 3, "src", &src));
  CHECK_OK(ladle_pipeline_add_op(p, "decoders.image", "mixed", &src, 1, dec_args, 2, NULL, &images));
  CHECK_OK(ladle_pipeline_set_outputs(p, &images, 1));
  CHECK_OK(ladle_pipeline_build(p));
  const ladle__decoder_state *d = NULL;
  for (int i = 0; i < p->num_nodes; i++)
    if (strcmp(p->nodes[i]->def->schema.name, "decoders.image") == 0) d = p->nodes[i]->state;
  CHECK(d != NULL);
  if (!d) {
    ladle_pipeline_destroy(p);
    return 0;
  }
  CHECK(atomic_load(&d->hybrid) == NULL); /* nothing fed yet: no image has been routed */

  int64_t shapes[BATCH];
  uint8_t *data = malloc(size * BATCH);
  for (int i = 0; i < BATCH; i++) {
    shapes[i] = (int64_t)size;
    memcpy(data + i * size, jpeg, size);
  }
  ladle_batch *in = NULL, *out = NULL;
  CHECK_OK(ladle_batch_create_cpu(LADLE_UINT8, BATCH, 1, shapes, "", data, &in));
  free(data);
  CHECK_OK(ladle_pipeline_feed(p, "src", in));
  ladle_batch_release(in);
  CHECK_OK(ladle_pipeline_run(p, &out));
  if (out) CHECK(ladle_batch_num_samples(out) == BATCH);
  ladle_batch_release(out);
  int made = atomic_load(&d->hybrid) != NULL;

  ladle_op_stats stats;
  *routed = -1;
  CHECK_OK(ladle_pipeline_get_op_stats(p, 1, &stats));
  for (int k = 0; k < stats.num_counters; k++)
    if (strcmp(stats.counter_names[k], "gpu_hybrid") == 0) *routed = stats.counters[k];
  ladle_pipeline_destroy(p);
  return made;
}

static void test_made_by_first_image(void) {
  const char *dir = getenv("LADLE_TEST_DATA");
  char path[1024];
  snprintf(path, sizeof path, "%s/j420.jpg", dir && *dir ? dir : "tests/data"); /* 131x97, baseline */
  size_t size = 0;
  uint8_t *jpeg = read_file(path, &size);
  CHECK(jpeg != NULL && size > 0);
  if (!jpeg) return;
  int64_t routed = -1;
  CHECK(!hybrid_made(jpeg, size, 4294967295LL, &routed)); /* every image under the threshold */
  CHECK(routed == 0);
  CHECK(hybrid_made(jpeg, size, 0, &routed)); /* every image over it */
  CHECK(routed == BATCH);
  free(jpeg);
}

int main(void) {
  TEST_SKIP_WITHOUT_DEVICE();
  if (!ladle__nvjpeg_available()) {
    printf("skipped: nvJPEG not available\n");
    return 77;
  }
  RUN(test_made_by_first_image);
  TEST_MAIN_END();
}

#endif
