/* jpeg_compression_distortion's CUDA kernels (jpeg_distortion_kernels.cu)
 * against the CPU operator's libjpeg round trip (ladle__jpeg_roundtrip):
 * bit-identical, on batches of random images (noise and smooth) of odd sizes,
 * 1x1, single rows and columns, empty samples (0 x w, h x 0), up to 300x300
 * and ImageNet-sized, each sample with its own quality (the tables built per
 * distinct quality, as the operator does); misaligned planes refused.
 * Prints the time of a batch of 256 ImageNet-sized images. Exits 77 without
 * CUDA or a device. */
#include "test_cuda.h" /* built without CUDA: all of this test, a skip */
#ifdef LADLE_HAVE_CUDA

#include <math.h>

#include "test_random.h"
#include "ops/filter/filter_kernels.h"

static void *stream;

enum { MAX_BATCH = 256 };

typedef struct batch {
  int n, num_tables;
  ladle__gpu_jd_desc d[MAX_BATCH];
  ladle__jd_tables tables[MAX_BATCH];
  int quality[MAX_BATCH];
  uint8_t *host_in[MAX_BATCH];
  uint8_t *planes; /* device scratch of every sample */
} batch;

static void fill(uint8_t *p, int h, int w, int smooth) {
  const double f = rnd_range(0.01, 0.2);
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++)
      for (int c = 0; c < 3; c++)
        p[((size_t)y * w + x) * 3 + c] =
            smooth ? (uint8_t)(127.5 + 127.5 * sin(f * (x + 2 * y) + c)) : (uint8_t)rnd_int(0, 255);
}

/* Device buffers for sizes (h[i], w[i]) and qualities q[i]; tables per distinct quality. */
static void make_batch(batch *b, int n, const int *h, const int *w, const int *q) {
  int table_of[101];
  for (int k = 0; k <= 100; k++) table_of[k] = -1;
  memset(b, 0, sizeof *b);
  b->n = n;
  size_t plane_bytes = 0;
  for (int i = 0; i < n; i++)
    if (h[i] > 0 && w[i] > 0) plane_bytes += jd_plane_bytes(h[i], w[i]);
  b->planes = test_device_alloc(plane_bytes + 1);
  uint8_t *planes = b->planes;
  for (int i = 0; i < n; i++) {
    size_t bytes = (size_t)h[i] * (size_t)w[i] * 3;
    b->host_in[i] = malloc(bytes + 1);
    fill(b->host_in[i], h[i], w[i], i % 2);
    if (table_of[q[i]] < 0) ladle__jd_tables_init(&b->tables[table_of[q[i]] = b->num_tables++], q[i]);
    b->quality[i] = q[i];
    ladle__gpu_jd_desc *d = &b->d[i];
    *d = (ladle__gpu_jd_desc){.h = h[i], .w = w[i], .table = table_of[q[i]], .planes = planes};
    d->in = test_device_alloc(bytes + 1);
    d->out = test_device_alloc(bytes + 1);
    test_upload((void *)d->in, b->host_in[i], bytes); /* synchronized: the stream does not wait for the copy */
    if (h[i] > 0 && w[i] > 0) planes += jd_plane_bytes(h[i], w[i]);
  }
}

static void free_batch(batch *b) {
  for (int i = 0; i < b->n; i++) free(b->host_in[i]), cudaFree((void *)b->d[i].in), cudaFree(b->d[i].out);
  cudaFree(b->planes);
}

static ladle_status launch(const void *ctx, void *host, void *dev, size_t bytes) {
  const batch *b = ctx;
  return ladle__gpu_jpeg_distortion(b->d, b->n, b->tables, b->num_tables, host, dev, bytes, stream);
}

/* The batch's parameter buffers (pinned and device); returns their size. */
static size_t alloc_params(const batch *b, void **host, void **dev) {
  size_t bytes = ladle__gpu_jd_param_bytes(b->n, b->num_tables);
  *host = test_pinned_alloc(bytes);
  *dev = test_device_alloc(bytes);
  return bytes;
}

/* Runs the batch on the GPU and compares each sample with libjpeg's round trip; returns the differing samples. */
static int run_batch(batch *b) {
  void *host = NULL, *dev = NULL;
  size_t bytes = alloc_params(b, &host, &dev);
  CHECK_OK(launch(b, host, dev, bytes));
  int bad = 0;
  for (int i = 0; i < b->n; i++) {
    const int h = b->d[i].h, w = b->d[i].w;
    if (h == 0 || w == 0) continue;
    size_t n = (size_t)h * w * 3;
    uint8_t *cpu = malloc(n), *gpu = malloc(n);
    char message[JD_MESSAGE_MAX] = "";
    CHECK_OK(ladle__jpeg_roundtrip(b->host_in[i], h, w, b->quality[i], "test", cpu, message));
    test_download(gpu, b->d[i].out, n, stream);
    size_t diff = 0;
    for (size_t k = 0; k < n; k++) diff += cpu[k] != gpu[k];
    if (diff) {
      bad++;
      fprintf(stderr, "  sample %d (%dx%d, quality %d): %zu bytes differ\n", i, h, w, b->quality[i], diff);
    }
    free(cpu), free(gpu);
  }
  cudaFreeHost(host), cudaFree(dev);
  return bad;
}

static void test_mixed_sizes(void) {
  ladle__rng_init(&rng, 51, 1, 0, 0);
  static const int fixed[][2] = {{1, 1}, {0, 5}, {5, 0}, {1, 9}, {9, 1}, {2, 2}, {3, 5}, {4, 4}, {16, 16},
                                 {17, 33}, {1, 300}, {300, 1}, {0, 0}, {15, 9}, {300, 300}, {333, 500}};
  const int nf = (int)(sizeof fixed / sizeof fixed[0]);
  static const int qualities[] = {1, 5, 30, 50, 75, 95, 100};
  for (int round = 0; round < 4; round++) {
    int h[48], w[48], q[48];
    for (int i = 0; i < 48; i++) {
      h[i] = i < nf ? fixed[i][0] : rnd_int(1, 300);
      w[i] = i < nf ? fixed[i][1] : rnd_int(1, 300);
      q[i] = round == 0 ? 50 : i % 3 ? qualities[rnd_int(0, 6)] : rnd_int(1, 100); /* round 0: one table */
    }
    batch *b = malloc(sizeof *b);
    make_batch(b, 48, h, w, q);
    CHECK(run_batch(b) == 0);
    free_batch(b);
    free(b);
  }
}

/* A batch of one empty sample only: nothing to do, no failure. */
static void test_empty_only(void) {
  const int h[1] = {0}, w[1] = {7}, q[1] = {50};
  batch *b = malloc(sizeof *b);
  make_batch(b, 1, h, w, q);
  CHECK(run_batch(b) == 0);
  free_batch(b);
  free(b);
}

/* The codec kernel stores 8-byte rows of the planes: misaligned planes are refused, not written. */
static void test_misaligned_planes(void) {
  const int h[1] = {16}, w[1] = {16}, q[1] = {50};
  batch *b = malloc(sizeof *b);
  make_batch(b, 1, h, w, q);
  uint8_t *planes = b->d[0].planes;
  b->d[0].planes = planes + 1;
  void *host = NULL, *dev = NULL;
  size_t bytes = alloc_params(b, &host, &dev);
  CHECK(launch(b, host, dev, bytes) == LADLE_ERROR_INVALID_ARGUMENT);
  b->d[0].planes = planes;
  cudaFreeHost(host), cudaFree(dev);
  free_batch(b);
  free(b);
}

static void report_times(void) {
  ladle__rng_init(&rng, 52, 1, 0, 0);
  int h[MAX_BATCH], w[MAX_BATCH], q[MAX_BATCH];
  for (int i = 0; i < MAX_BATCH; i++) h[i] = rnd_int(360, 440), w[i] = rnd_int(420, 500), q[i] = 50;
  batch *b = malloc(sizeof *b);
  make_batch(b, MAX_BATCH, h, w, q);
  double host_ms = 0;
  float ms = test_time_launches(launch, b, ladle__gpu_jd_param_bytes(b->n, b->num_tables), stream, &host_ms);
  double pixels = 0;
  for (int i = 0; i < MAX_BATCH; i++) pixels += (double)h[i] * w[i];
  fprintf(stderr,
          "  time jpeg_compression_distortion 256 x ~400x460, quality 50: stream %.3f ms/batch (%.1f Gpix/s), "
          "host %.3f ms (H200 before branch jpegfast: stream 0.744 ms)\n",
          ms, pixels / (ms * 1e6), host_ms);
  free_batch(b);
  free(b);
}

int main(void) {
  TEST_SKIP_WITHOUT_DEVICE();
  CHECK_OK(ladle__cuda_use_device(0, NULL));
  CHECK_OK(ladle__cuda_stream_create(0, &stream));
  RUN(test_mixed_sizes);
  RUN(test_empty_only);
  RUN(test_misaligned_planes);
  RUN(report_times);
  ladle__cuda_stream_destroy(stream);
  TEST_MAIN_END();
}

#endif
