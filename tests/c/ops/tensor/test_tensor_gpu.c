/* The tensor family's CUDA kernels against their CPU references on random
 * inputs: strided copy (slice/pad/transpose/cat geometries), one_hot,
 * lookup_table. They move bytes only: bit-identical is asserted. Exits 77
 * (ctest's SKIP) without CUDA or a device. */
#include "test_cuda.h" /* built without CUDA: all of this test, a skip */
#ifdef LADLE_HAVE_CUDA

#include "ops/tensor/tensor_args.h"
#include "tensor_random.h"

enum { COPIES = 64, SLOT = 4096 * 8 };

/* NULL where the device lacks the memory (test_gpu_strided_large skips then). */
static void *dev_alloc(size_t bytes) {
  void *p = NULL;
  return cudaMalloc(&p, bytes) == cudaSuccess ? p : NULL;
}

/* COPIES random descs in one launch vs the CPU copy of each. */
static void test_gpu_strided_copy(void) {
  ladle__rng r;
  ladle__rng_init(&r, 11, 2, 0, 0);
  uint8_t *in = malloc((size_t)COPIES * SLOT), *want = malloc((size_t)COPIES * SLOT), *got = malloc((size_t)COPIES * SLOT);
  uint8_t *din = dev_alloc((size_t)COPIES * SLOT), *dout = dev_alloc((size_t)COPIES * SLOT);
  ladle__strided_desc cpu[COPIES], gpu[COPIES];
  int64_t out_totals[COPIES];
  size_t bytes = ladle__gpu_strided_param_bytes(COPIES);
  void *host = NULL, *dev = dev_alloc(bytes);
  cudaMallocHost(&host, bytes);
  CHECK(in && want && got && din && dout && host && dev);
  if (!(in && want && got && din && dout && host && dev)) return;
  for (int round = 0; round < 25; round++) {
    for (int i = 0; i < COPIES; i++) {
      int64_t in_total = 0, in_off = 0, out_off = 0;
      if (round < 5)
        cpu[i] = random_desc(&r, &in_total, &out_totals[i]);
      else /* the fast paths: merged dims, 2..16-byte units, their fallbacks */
        cpu[i] = random_fast_desc(&r, SLOT, &in_off, &out_off, &in_total, &out_totals[i]);
      for (int64_t b = 0; b < in_total * cpu[i].elem_size; b++) in[(size_t)i * SLOT + b] = (uint8_t)ladle__rng_u32(&r);
      gpu[i] = cpu[i];
      cpu[i].in = in + (size_t)i * SLOT + in_off * cpu[i].elem_size;
      cpu[i].out = want + (size_t)i * SLOT + out_off * cpu[i].elem_size;
      gpu[i].in = din + (size_t)i * SLOT + in_off * cpu[i].elem_size;
      gpu[i].out = dout + (size_t)i * SLOT + out_off * cpu[i].elem_size;
    }
    /* The same bytes around every output (compared over the whole slot). */
    memset(want, 0x5A, (size_t)COPIES * SLOT);
    for (int i = 0; i < COPIES; i++) ladle__strided_copy(&cpu[i]);
    test_fill(dout, 0x5A, (size_t)COPIES * SLOT);
    test_upload(din, in, (size_t)COPIES * SLOT);
    CHECK_OK(ladle__gpu_strided_copy(gpu, COPIES, host, dev, bytes, NULL));
    test_download(got, dout, (size_t)COPIES * SLOT, NULL);
    CHECK(memcmp(got, want, (size_t)COPIES * SLOT) == 0);
  }
  free(in), free(want), free(got);
  cudaFree(din), cudaFree(dout), cudaFree(dev), cudaFreeHost(host);
}

/* Batches as the operators make them, in one launch each: cat and stack
 * samples (joined row jobs, inputs of 2..4 copies, some empty), rank-3
 * transposes of every permutation (tiled or strided), random fast-path
 * geometries, random_desc's (some empty); buffers off 16-byte alignment;
 * vs the CPU copy. */
static void test_gpu_strided_batches(void) {
  enum { LIMIT = 4096 * 8, MAXD = 40 };
  ladle__rng r;
  ladle__rng_init(&r, 13, 4, 0, 0);
  size_t total = (size_t)MAXD * LIMIT;
  uint8_t *in = malloc(total), *want = malloc(total), *got = malloc(total);
  uint8_t *din = dev_alloc(total), *dout = dev_alloc(total);
  size_t bytes = ladle__gpu_strided_param_bytes(MAXD);
  void *host = NULL, *dev = dev_alloc(bytes);
  cudaMallocHost(&host, bytes);
  CHECK(in && want && got && din && dout && host && dev);
  if (!(in && want && got && din && dout && host && dev)) return;
  for (int round = 0; round < 60; round++) {
    ladle__strided_desc cpu[MAXD], gpu[MAXD];
    int n = 0;
    int64_t slot = 0;
    while (n < MAXD - 4) {
      int kind = (int)draw(&r, 0, 4), k = 1;
      int64_t in_offs[4], out_offs[4], in_span = 0, out_span = 0;
      if (kind <= 1)
        k = random_join(&r, kind, LIMIT, &cpu[n], in_offs, out_offs, &in_span, &out_span);
      else if (kind == 2)
        cpu[n] = random_transpose3(&r, (int)draw(&r, 0, 5), LIMIT, &in_offs[0], &out_offs[0], &in_span, &out_span);
      else if (kind == 3)
        cpu[n] = random_fast_desc(&r, LIMIT, &in_offs[0], &out_offs[0], &in_span, &out_span);
      else /* some with no elements */
        cpu[n] = random_desc(&r, &in_span, &out_span), in_offs[0] = out_offs[0] = 0;
      for (int j = 0; j < k; j++) {
        size_t es = (size_t)cpu[n + j].elem_size, io = (size_t)slot * LIMIT + (size_t)in_offs[j] * es;
        size_t oo = (size_t)slot * LIMIT + (size_t)out_offs[j] * es;
        gpu[n + j] = cpu[n + j];
        cpu[n + j].in = in + io, cpu[n + j].out = want + oo;
        gpu[n + j].in = din + io, gpu[n + j].out = dout + oo;
      }
      n += k, slot++;
    }
    for (size_t b = 0; b < total; b++) in[b] = (uint8_t)ladle__rng_u32(&r);
    memset(want, 0x5A, total);
    for (int j = 0; j < n; j++) ladle__strided_copy(&cpu[j]);
    test_fill(dout, 0x5A, total);
    test_upload(din, in, total);
    CHECK_OK(ladle__gpu_strided_copy(gpu, n, host, dev, bytes, NULL));
    test_download(got, dout, total, NULL);
    CHECK(memcmp(got, want, total) == 0);
  }
  free(in), free(want), free(got);
  cudaFree(din), cudaFree(dout), cudaFree(dev), cudaFreeHost(host);
}

/* Samples near 2^31 elements (uint8): a [R, 999] window at column 1 of
 * [R, 1000], R = 2^31 / 1000 (the last size with 32-bit indexing), and
 * R + 1 rows (64-bit indexing), plus a contiguous copy of 2^31 + 17 bytes
 * (16-byte units and a 1-byte tail). Skipped where the device lacks the memory
 * or LADLE_TEST_SKIP_LARGE is set. */
static void test_gpu_strided_large(void) {
  int64_t rows = ((int64_t)1 << 31) / 1000;
  if (getenv("LADLE_TEST_SKIP_LARGE")) { /* e.g. under compute-sanitizer, where 2^31 elements take long */
    printf("  (large copies skipped: LADLE_TEST_SKIP_LARGE)\n");
    return;
  }
  for (int t = 0; t < 3; t++) {
    int64_t r = t == 1 ? rows + 1 : rows, in_shape[2] = {r, 1000}, shape[2] = {r, 999}, start[2] = {0, 1};
    int64_t flat = ((int64_t)1 << 31) + 17; /* 16-byte units, then one byte */
    size_t in_bytes = t == 2 ? (size_t)flat : (size_t)(r * 1000), out_bytes = t == 2 ? (size_t)flat : (size_t)(r * 999);
    uint8_t *in = malloc(in_bytes), *want = malloc(out_bytes), *got = malloc(out_bytes);
    uint8_t *din = dev_alloc(in_bytes), *dout = dev_alloc(out_bytes);
    size_t bytes = ladle__gpu_strided_param_bytes(1);
    void *host = NULL, *dev = dev_alloc(bytes);
    cudaMallocHost(&host, bytes);
    if (!(in && want && got && din && dout && dev && host)) {
      printf("  (large copy %d skipped: not enough memory)\n", t);
      (void)cudaGetLastError();
    } else {
      for (size_t i = 0; i < in_bytes; i++) in[i] = (uint8_t)((i * 2654435761u) >> 13);
      ladle__strided_desc c, g;
      if (t == 2) {
        ladle__strided_dense(&c, want, in, 1, 1, &flat, &flat, NULL);
      } else {
        ladle__strided_dense(&c, want, in, 2, 1, shape, in_shape, start);
      }
      g = c;
      g.in = din, g.out = dout;
      int unit = 0, nd = 0, narrow = ladle__gpu_strided_plan_info(&g, &unit, &nd);
      CHECK(narrow == (t != 1) && unit == (t == 2 ? 16 : 1));
      ladle__strided_copy(&c);
      test_upload(din, in, in_bytes);
      CHECK_OK(ladle__gpu_strided_copy(&g, 1, host, dev, bytes, NULL));
      test_download(got, dout, out_bytes, NULL);
      CHECK(memcmp(got, want, out_bytes) == 0);
    }
    free(in), free(want), free(got);
    cudaFree(din), cudaFree(dout), cudaFree(dev), cudaFreeHost(host);
  }
}

/* one_hot and lookup_table over a few samples of random classes, every input type. */
static void test_gpu_encode(void) {
  ladle__rng r;
  ladle__rng_init(&r, 12, 3, 0, 0);
  enum { N = 3, ELEMS = 50, CLASSES = 7 };
  ladle_dtype types[3] = {LADLE_UINT8, LADLE_INT32, LADLE_INT64};
  for (int t = 0; t < 3; t++) {
    size_t isz = ladle_dtype_size(types[t]);
    uint8_t in[N * ELEMS * 8];
    for (int i = 0; i < N * ELEMS; i++) {
      int64_t v = (int64_t)(ladle__rng_u32(&r) % 12) - (types[t] == LADLE_UINT8 ? 0 : 2);
      uint8_t u = (uint8_t)v;
      int32_t w = (int32_t)v;
      memcpy(in + i * isz, isz == 1 ? (void *)&u : isz == 4 ? (void *)&w : (void *)&v, isz);
    }
    uint8_t *din = dev_alloc(sizeof in), *dout = dev_alloc((size_t)N * ELEMS * CLASSES * 4);
    float on = 2.5f, off = -1, want[N * ELEMS * CLASSES], got[N * ELEMS * CLASSES];
    ladle__one_hot_desc cd[N], gd[N];
    for (int i = 0; i < N; i++) {
      cd[i] = (ladle__one_hot_desc){want + i * ELEMS * CLASSES, in + i * ELEMS * isz, 5, 10};
      gd[i] = (ladle__one_hot_desc){dout + (size_t)i * ELEMS * CLASSES * 4, din + i * ELEMS * isz, 5, 10};
      ladle__one_hot(&cd[i], types[t], CLASSES, 4, &on, &off);
    }
    size_t bytes = ladle__gpu_one_hot_param_bytes(N, 4) + ladle__gpu_lookup_param_bytes(N, 4, 9);
    void *host = NULL, *dev = dev_alloc(bytes);
    cudaMallocHost(&host, bytes);
    CHECK(din && dout && host && dev);
    if (!(din && dout && host && dev)) return;
    test_upload(din, in, sizeof in);
    CHECK_OK(ladle__gpu_one_hot(gd, N, types[t], CLASSES, 4, &on, &off, host, dev, bytes, NULL));
    test_download(got, dout, sizeof got, NULL); /* done with the params too: they are reused below */
    CHECK(memcmp(got, want, sizeof want) == 0);
    int32_t table[9] = {5, -3, 8, 0, 1, 2, 3, 4, 9}, fallback = 77, lwant[N * ELEMS], lgot[N * ELEMS];
    ladle__lookup_desc lc[N], lg[N];
    for (int i = 0; i < N; i++) {
      lc[i] = (ladle__lookup_desc){lwant + i * ELEMS, in + i * ELEMS * isz, ELEMS};
      lg[i] = (ladle__lookup_desc){dout + (size_t)i * ELEMS * 4, din + i * ELEMS * isz, ELEMS};
      ladle__lookup(&lc[i], types[t], 4, table, 9, &fallback);
    }
    CHECK_OK(ladle__gpu_lookup(lg, N, types[t], 4, table, 9, &fallback, host, dev, bytes, NULL));
    test_download(lgot, dout, sizeof lgot, NULL);
    CHECK(memcmp(lgot, lwant, sizeof lwant) == 0);
    cudaFree(din), cudaFree(dout), cudaFree(dev), cudaFreeHost(host);
  }
}

int main(void) {
  TEST_SKIP_WITHOUT_DEVICE();
  RUN(test_gpu_strided_copy);
  RUN(test_gpu_strided_batches);
  RUN(test_gpu_strided_large);
  RUN(test_gpu_encode);
  TEST_MAIN_END();
}
#endif
