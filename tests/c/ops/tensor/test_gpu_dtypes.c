/* ladle__gpu_convert and ladle__gpu_cast (cast on the GPU) against ladle__convert for every pair
 * of the 12 dtypes, bit for bit (NaNs included: both canonicalize them the
 * same way), on the edge values and random bit patterns of dtype_values.h, in
 * batches of samples of different sizes. Exits 77 (ctest's SKIP) without CUDA
 * or a device. */
#include "test_cuda.h" /* built without CUDA: all of this test, a skip */
#ifdef LADLE_HAVE_CUDA

#include "ops/geometry/normalize_kernel.h"
#include "ops/kernels/gpu_kernels.h"
#include "ops/tensor/dtype_values.h"
#include "ops/tensor/tensor_kernels.h"

static void *stream;

static void test_gpu_convert_every_pair(void) {
  enum { SAMPLES = 3 };
  ladle__rng rng;
  ladle__rng_init(&rng, 91, 0, 0, 0);
  size_t total = 0, bad = 0;
  for (int a = 0; a < LADLE_DTYPE_COUNT; a++) {
    for (int b = 0; b < LADLE_DTYPE_COUNT; b++) {
      ladle_dtype it = all_dtypes[a], ot = all_dtypes[b];
      size_t ies = ladle_dtype_size(it), oes = ladle_dtype_size(ot);
      ladle__gpu_convert_desc d[SAMPLES];
      void *in[SAMPLES], *ref[SAMPLES];
      for (int i = 0; i < SAMPLES; i++) {
        size_t count = i == 0 ? 4000 : 1 + ladle__rng_below(&rng, 3000);
        in[i] = malloc(count * ies);
        ref[i] = malloc(count * oes);
        fill(in[i], it, count, &rng);
        ladle__convert(ref[i], ot, in[i], it, count);
        d[i] = (ladle__gpu_convert_desc){test_device_copy(in[i], count * ies), test_device_alloc(count * oes), count};
      }
      size_t bytes = ladle__gpu_convert_param_bytes(SAMPLES);
      void *host = test_pinned_alloc(bytes), *dev = test_device_alloc(bytes);
      CHECK_OK(ladle__gpu_convert(d, SAMPLES, ot, it, host, dev, bytes, stream));
      size_t pair_bad = 0;
      for (int i = 0; i < SAMPLES; i++) {
        uint8_t *got = malloc(d[i].count * oes);
        test_download(got, d[i].out, d[i].count * oes, stream);
        for (size_t k = 0; k < d[i].count; k++)
          pair_bad += memcmp(got + k * oes, (uint8_t *)ref[i] + k * oes, oes) != 0;
        total += d[i].count;
        free(got);
        free(in[i]);
        free(ref[i]);
        cudaFree((void *)d[i].in);
        cudaFree(d[i].out);
      }
      if (pair_bad)
        fprintf(stderr, "gpu convert %s -> %s: %zu elements differ from the CPU\n", ladle_dtype_name(it),
                ladle_dtype_name(ot), pair_bad);
      bad += pair_bad;
      cudaFreeHost(host);
      cudaFree(dev);
    }
  }
  CHECK(bad == 0);
  fprintf(stderr, "gpu convert: %zu elements over %d pairs, %zu differ\n", total,
          LADLE_DTYPE_COUNT * LADLE_DTYPE_COUNT, bad);
}

static void test_gpu_convert_rejects_bad_dtypes(void) {
  ladle__gpu_convert_desc d = {NULL, NULL, 0};
  size_t bytes = ladle__gpu_convert_param_bytes(1);
  void *host = test_pinned_alloc(bytes), *dev = test_device_alloc(bytes);
  CHECK(ladle__gpu_convert(&d, 1, (ladle_dtype)LADLE_DTYPE_COUNT, LADLE_UINT8, host, dev, bytes, stream) ==
        LADLE_ERROR_INVALID_ARGUMENT);
  cudaFreeHost(host);
  cudaFree(dev);
}

/* A batch of `size` bytes (samples in slots): the host input, the CPU's and
 * the GPU's outputs, the device input and output, a parameter buffer. */
typedef struct slots {
  uint8_t *hin, *want, *got, *din, *dout;
  void *host, *dev;
  size_t size, bytes;
} slots;

static slots slots_alloc(size_t size, size_t param_bytes) {
  slots b = {malloc(size), malloc(size), malloc(size), test_device_alloc(size), test_device_alloc(size),
             test_pinned_alloc(param_bytes), test_device_alloc(param_bytes), size, param_bytes};
  return b;
}

static void slots_free(slots *b) {
  free(b->hin), free(b->want), free(b->got);
  cudaFree(b->din), cudaFree(b->dout), cudaFreeHost(b->host), cudaFree(b->dev);
}

/* Uploads the input, sets every output byte to 0x5A, converts (cast: with
 * ladle__gpu_cast) and reads the outputs back: whether they are `want`. */
static int slots_run(slots *b, const ladle__gpu_convert_desc *d, int n, ladle_dtype ot, ladle_dtype it, int cast) {
  test_upload(b->din, b->hin, b->size);
  test_fill(b->dout, 0x5A, b->size);
  if (cast)
    CHECK_OK(ladle__gpu_cast(d, n, ot, it, b->host, b->dev, b->bytes, stream));
  else
    CHECK_OK(ladle__gpu_convert(d, n, ot, it, b->host, b->dev, b->bytes, stream));
  test_download(b->got, b->dout, b->size, stream);
  return memcmp(b->got, b->want, b->size) == 0;
}

/* The same type in and out (a copy of the bits, in 16/4/1-byte units by the
 * pointers' alignment): samples at element offsets 0..17 of their buffers,
 * 0..300 elements, every dtype; the bytes around each output stay as they
 * were, and a sample whose input is its output is left alone. */
static void test_gpu_convert_same_type(void) {
  enum { SAMPLES = 24, SLOT = 320 * 8 };
  ladle__rng rng;
  ladle__rng_init(&rng, 92, 0, 0, 0);
  slots buf = slots_alloc((size_t)SAMPLES * SLOT, ladle__gpu_convert_param_bytes(SAMPLES));
  uint8_t *hin = buf.hin, *want = buf.want, *din = buf.din, *dout = buf.dout;
  for (int a = 0; a < LADLE_DTYPE_COUNT; a++) {
    ladle_dtype t = all_dtypes[a];
    size_t es = ladle_dtype_size(t);
    ladle__gpu_convert_desc d[SAMPLES];
    for (size_t i = 0; i < (size_t)SAMPLES * SLOT; i++) hin[i] = (uint8_t)ladle__rng_u32(&rng);
    memset(want, 0x5A, (size_t)SAMPLES * SLOT);
    for (int i = 0; i < SAMPLES; i++) {
      size_t io = ladle__rng_below(&rng, 18), oo = ladle__rng_below(&rng, 18), count = ladle__rng_below(&rng, 301);
      if (i % 4 == 0) io = oo = 0; /* aligned */
      memcpy(want + (size_t)i * SLOT + oo * es, hin + (size_t)i * SLOT + io * es, count * es);
      d[i] = (ladle__gpu_convert_desc){din + (size_t)i * SLOT + io * es, dout + (size_t)i * SLOT + oo * es, count};
    }
    d[SAMPLES - 1].in = d[SAMPLES - 1].out; /* in place: nothing to do */
    memset(want + (size_t)(SAMPLES - 1) * SLOT, 0x5A, SLOT);
    CHECK(slots_run(&buf, d, SAMPLES, t, t, 0));
  }
  slots_free(&buf);
}

/* ladle__gpu_cast (cast's own kernels for the common pairs, ladle__gpu_convert
 * for the rest) against ladle__convert for every pair: samples at element
 * offsets 0..17 of their buffers (unaligned), 0..3000 elements (some empty),
 * edge values and random bits; the bytes around each output stay as they
 * were. Counts the pairs that have a kernel of their own (there must be). */
static void test_gpu_cast_every_pair(void) {
  enum { SAMPLES = 12, SLOT = 3020 * 8 };
  ladle__rng rng;
  ladle__rng_init(&rng, 93, 0, 0, 0);
  slots buf = slots_alloc((size_t)SAMPLES * SLOT, ladle__gpu_cast_param_bytes(SAMPLES));
  uint8_t *hin = buf.hin, *want = buf.want, *din = buf.din, *dout = buf.dout;
  int own = 0;
  for (int a = 0; a < LADLE_DTYPE_COUNT; a++) {
    for (int b = 0; b < LADLE_DTYPE_COUNT; b++) {
      ladle_dtype it = all_dtypes[a], ot = all_dtypes[b];
      size_t ies = ladle_dtype_size(it), oes = ladle_dtype_size(ot);
      ladle__gpu_convert_desc d[SAMPLES];
      own += ladle__gpu_cast_has_kernel(ot, it);
      memset(want, 0x5A, (size_t)SAMPLES * SLOT);
      for (int i = 0; i < SAMPLES; i++) {
        size_t io = ladle__rng_below(&rng, 18), oo = ladle__rng_below(&rng, 18);
        size_t count = i == 0 ? 3000 : i % 5 == 1 ? 0 : ladle__rng_below(&rng, 3001);
        if (i % 4 == 0) io = oo = 0;
        uint8_t *src = hin + (size_t)i * SLOT + io * ies;
        fill(src, it, count, &rng);
        ladle__convert(want + (size_t)i * SLOT + oo * oes, ot, src, it, count);
        d[i] = (ladle__gpu_convert_desc){din + (size_t)i * SLOT + io * ies, dout + (size_t)i * SLOT + oo * oes, count};
      }
      const int same = slots_run(&buf, d, SAMPLES, ot, it, 1);
      if (!same)
        fprintf(stderr, "gpu cast %s -> %s differs from the CPU\n", ladle_dtype_name(it), ladle_dtype_name(ot));
      CHECK(same);
    }
  }
  CHECK(own >= 10);
  slots_free(&buf);
}

int main(void) {
  TEST_SKIP_WITHOUT_DEVICE();
  CHECK_OK(ladle__cuda_use_device(0, NULL));
  CHECK_OK(ladle__cuda_stream_create(0, &stream));
  RUN(test_gpu_convert_every_pair);
  RUN(test_gpu_convert_same_type);
  RUN(test_gpu_cast_every_pair);
  RUN(test_gpu_convert_rejects_bad_dtypes);
  ladle__cuda_stream_destroy(stream);
  TEST_MAIN_END();
}

#endif
