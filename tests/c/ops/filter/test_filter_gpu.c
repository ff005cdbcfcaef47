/* fn.filter's CUDA kernel (filter_kernels.cu) against conv_core.h's
 * per-element function (the CPU operator's arithmetic) on random inputs:
 * every border mode, every input type with its own and float output,
 * channel-last and channel-first layouts with frames, mode "same" with
 * random anchors and "valid", per-sample filters of different sizes in one
 * batch (1x1 up to 7x7, long thin ones, and filters too large for the
 * shared-memory tile, which take the kernel's generic path), samples of
 * 1x1, smaller than the filter, odd sizes, several tiles, and inputs at odd
 * element offsets (unaligned rows). Agreement asserted: bit-identical (the
 * same float operations in the same order, no fused multiply-add). Exits 77
 * without CUDA or a device. */
#include "test_cuda.h" /* built without CUDA: all of this test, a skip */
#ifdef LADLE_HAVE_CUDA

#include "test_random.h"
#include "ops/filter/filter_kernels.h"

static void *stream;


static void fill(void *p, int t, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    switch (t) {
      case LADLE_UINT8: ((uint8_t *)p)[i] = (uint8_t)rnd_int(0, 255); break;
      case LADLE_INT8: ((int8_t *)p)[i] = (int8_t)rnd_int(-128, 127); break;
      case LADLE_INT16: ((int16_t *)p)[i] = (int16_t)rnd_int(-32768, 32767); break;
      case LADLE_UINT16: ((uint16_t *)p)[i] = (uint16_t)rnd_int(0, 65535); break;
      default: ((float *)p)[i] = (float)(ladle__rng_uniform(&rng) * 600.0 - 300.0); break;
    }
  }
}

static int64_t in_elems(const ladle__conv_desc *d) { return d->frames * d->channels * d->h * d->w; }
static int64_t out_elems(const ladle__conv_desc *d) { return d->frames * d->channels * d->out_h * d->out_w; }

/* A random sample of h x w pixels with an r x s filter (valid: mode "valid"). */
static void make(ladle__conv_desc *d, float *taps, int in_type, int out_type, int border, int layout, int64_t h,
                 int64_t w, int r, int s, int valid) {
  memset(d, 0, sizeof *d);
  d->in_type = in_type, d->out_type = out_type, d->border = border;
  d->channel_last = layout != 1 && layout != 3;
  d->frames = layout >= 2 ? rnd_int(1, 3) : 1;
  d->channels = layout == 4 ? 1 : rnd_int(1, 4);
  d->h = h, d->w = w, d->r = r, d->s = s;
  if (valid) {
    d->out_h = h - r + 1, d->out_w = w - s + 1;
  } else {
    d->ay = rnd_int(0, r - 1), d->ax = rnd_int(0, s - 1);
    d->out_h = h, d->out_w = w;
  }
  d->fill = in_type == LADLE_FLOAT32 ? (float)(ladle__rng_uniform(&rng) * 100 - 50) : (float)rnd_int(0, 100);
  for (int k = 0; k < r * s; k++) taps[k] = (float)(ladle__rng_uniform(&rng) - 0.4) * (k % 7 == 3 ? 3.0f : 1.0f);
  d->taps = taps;
}

/* Runs the n samples on the CPU (conv_core.h) and the GPU (inputs at an
 * element offset `skew`), compares the bits; returns the differing count. */
static size_t run_case(ladle__conv_desc *cpu, int n, int skew) {
  ladle__conv_desc gpu[16];
  void *host_in[16], *out_cpu[16], *out_gpu[16], *dev_in[16];
  int total = 0;
  size_t bad = 0;
  for (int i = 0; i < n; i++) {
    ladle__conv_desc *d = &cpu[i];
    size_t ie = ladle_dtype_size((ladle_dtype)d->in_type), oe = ladle_dtype_size((ladle_dtype)d->out_type);
    size_t nin = (size_t)in_elems(d) * ie, nout = (size_t)out_elems(d) * oe;
    host_in[i] = malloc(nin + 1), out_cpu[i] = malloc(nout + 1), out_gpu[i] = malloc(nout + 1);
    fill(host_in[i], d->in_type, in_elems(d));
    d->in = host_in[i], d->out = out_cpu[i];
    for (int64_t e = 0; e < out_elems(d); e++) ladle__conv_element(d, e);
    gpu[i] = *d;
    dev_in[i] = test_device_alloc(nin + (size_t)skew * ie + 1);
    test_upload((char *)dev_in[i] + (size_t)skew * ie, host_in[i], nin);
    gpu[i].in = (char *)dev_in[i] + (size_t)skew * ie;
    gpu[i].out = test_device_alloc(nout + 1);
    total += d->r * d->s;
  }
  size_t bytes = ladle__gpu_conv_param_bytes(n, total);
  void *dev = test_device_alloc(bytes), *host = test_pinned_alloc(bytes);
  CHECK_OK(ladle__gpu_conv(gpu, n, total, host, dev, bytes, stream));
  for (int i = 0; i < n; i++) {
    size_t nout = (size_t)out_elems(&cpu[i]) * ladle_dtype_size((ladle_dtype)cpu[i].out_type);
    test_download(out_gpu[i], gpu[i].out, nout, stream);
    if (memcmp(out_cpu[i], out_gpu[i], nout) != 0) {
      bad++;
      fprintf(stderr, "  sample %d differs: types %d->%d border %d channel_last %d frames %lld channels %lld "
              "%lldx%lld -> %lldx%lld, filter %dx%d anchor (%d, %d), skew %d\n", i, cpu[i].in_type,
              cpu[i].out_type, cpu[i].border, cpu[i].channel_last, (long long)cpu[i].frames,
              (long long)cpu[i].channels, (long long)cpu[i].h, (long long)cpu[i].w, (long long)cpu[i].out_h,
              (long long)cpu[i].out_w, cpu[i].r, cpu[i].s, cpu[i].ay, cpu[i].ax, skew);
    }
    free(host_in[i]), free(out_cpu[i]), free(out_gpu[i]);
    cudaFree(dev_in[i]), cudaFree(gpu[i].out);
  }
  cudaFreeHost(host), cudaFree(dev);
  return bad;
}

static const int in_types[] = {LADLE_UINT8, LADLE_INT8, LADLE_INT16, LADLE_UINT16, LADLE_FLOAT32};

/* Every border, type pair, layout and mode on batches of mixed samples. */
static void test_conv_mixed(void) {
  ladle__rng_init(&rng, 21, 1, 0, 0);
  static float taps[16][49];
  for (int border = LADLE__BORDER_REFLECT_101; border <= LADLE__BORDER_CONSTANT; border++)
    for (int ti = 0; ti < 5; ti++)
      for (int of = 0; of < 2; of++) {
        if (of && in_types[ti] == LADLE_FLOAT32) continue;
        int out_type = of ? LADLE_FLOAT32 : in_types[ti];
        for (int layout = 0; layout < 5; layout++)
          for (int valid = 0; valid < 2; valid++) {
            ladle__conv_desc d[6];
            for (int i = 0; i < 6; i++) {
              int r = rnd_int(1, 7), s = rnd_int(1, 7);
              int64_t h = rnd_int(1, 45), w = rnd_int(1, 45);
              if (i == 0) h = w = 1;                        /* 1x1 sample */
              if (i == 1) r = s = 1;                        /* 1x1 filter */
              if (i == 2) h = rnd_int(1, 3), r = 7;         /* smaller than the filter */
              if (i == 3) h = rnd_int(40, 70), w = rnd_int(150, 200); /* several tiles, interior ones */
              if (valid) h = h < r ? r : h, w = w < s ? s : w;
              make(&d[i], taps[i], in_types[ti], out_type, border, layout, h, w, r, s, valid);
            }
            size_t bad = run_case(d, 6, (border + layout) % 3);
            CHECK(bad == 0);
          }
      }
}

/* Filters of very different sizes in one batch, some beyond the shared-
 * memory tile (generic path), long thin ones, many channels. */
static void test_conv_sizes(void) {
  ladle__rng_init(&rng, 22, 1, 0, 0);
  static float taps[8][45 * 45];
  static const int rs[][2] = {{45, 45}, {1, 31}, {31, 1}, {3, 3}, {5, 5}, {9, 2}, {2, 17}, {13, 13}};
  for (int border = LADLE__BORDER_REFLECT_101; border <= LADLE__BORDER_CONSTANT; border++)
    for (int ti = 0; ti < 5; ti += 2) {
      ladle__conv_desc d[8];
      for (int i = 0; i < 8; i++) {
        int layout = i % 5;
        make(&d[i], taps[i], in_types[ti], LADLE_FLOAT32 == in_types[ti] ? LADLE_FLOAT32 : in_types[ti], border,
             layout, rnd_int(1, 60), rnd_int(1, 90), rs[i][0], rs[i][1], 0);
        if (i == 6) d[i].channels = 40; /* a wide strip: 40 channels x 16 taps beyond the tile's budget */
      }
      CHECK(run_case(d, 8, ti) == 0);
    }
}

/* ImageNet-like samples (the benchmark's shape) with 5x5 and 3x3 filters
 * (one batch has one input and one output type). */
static void test_conv_large(void) {
  ladle__rng_init(&rng, 23, 1, 0, 0);
  static float taps[2][25];
  ladle__conv_desc d[2];
  for (int of = 0; of < 2; of++) {
    const int out_type = of ? LADLE_FLOAT32 : LADLE_UINT8;
    make(&d[0], taps[0], LADLE_UINT8, out_type, LADLE__BORDER_REFLECT_101, 0, 403, 463, 5, 5, 0);
    d[0].channels = 3, d[0].frames = 1, d[0].ay = d[0].ax = 2;
    make(&d[1], taps[1], LADLE_UINT8, out_type, of ? LADLE__BORDER_CONSTANT : LADLE__BORDER_CLAMP, 1, 333, 517, 3,
         3, 0);
    CHECK(run_case(d, 2, 1) == 0);
  }
}

/* Batches that take the fast kernel (uint8 input, every sample with the same
 * 3x3 or 5x5 filter size and 1 or 3 elements a pixel): every border mode,
 * both output types, "same" with random anchors and "valid", frames,
 * samples of 1x1, 1 x n, n x 1, smaller than the filter, odd sizes and
 * several tiles (edge and interior ones), inputs at every offset mod 4 (so
 * rows start at every alignment). */
static void test_conv_fast(void) {
  ladle__rng_init(&rng, 24, 1, 0, 0);
  static float taps[7][25];
  for (int r = 3; r <= 5; r += 2)
    for (int cl = 1; cl <= 3; cl += 2)
      for (int border = LADLE__BORDER_REFLECT_101; border <= LADLE__BORDER_CONSTANT; border++)
        for (int of = 0; of < 2; of++)
          for (int valid = 0; valid < 2; valid++) {
            const int out_type = of ? LADLE_FLOAT32 : LADLE_UINT8;
            ladle__conv_desc d[7];
            for (int i = 0; i < 7; i++) {
              /* cl 3: HWC or FHWC with 3 channels; cl 1: CHW, FCHW or HW-like (1 channel) */
              const int layout = cl == 3 ? (i % 2 ? 2 : 0) : (i % 3 == 0 ? 1 : i % 3 == 1 ? 3 : 4);
              int64_t h = rnd_int(1, 60), w = rnd_int(1, 90);
              if (i == 0) h = w = 1;
              if (i == 1) h = 1, w = rnd_int(2, 300);
              if (i == 2) h = rnd_int(2, 50), w = 1;
              if (i == 3) h = rnd_int(1, r - 1), w = rnd_int(1, r - 1);
              if (i == 4) h = rnd_int(40, 90), w = rnd_int(150, 420);
              if (valid) h = h < r ? r : h, w = w < r ? r : w;
              make(&d[i], taps[i], LADLE_UINT8, out_type, border, layout, h, w, r, r, valid);
              if (cl == 3) d[i].channels = 3;
              if (layout == 4) d[i].channels = 1;
            }
            CHECK(run_case(d, 7, (r + cl + border + of + valid) % 4) == 0);
          }
}

/* The benchmark's case on the fast kernel: ImageNet-like HWC samples, one 5x5
 * filter each (different values), reflect_101. */
static void test_conv_fast_large(void) {
  ladle__rng_init(&rng, 25, 1, 0, 0);
  static float taps[3][25];
  ladle__conv_desc d[3];
  static const int hw[3][2] = {{403, 463}, {375, 500}, {500, 333}};
  for (int i = 0; i < 3; i++) {
    make(&d[i], taps[i], LADLE_UINT8, LADLE_UINT8, LADLE__BORDER_REFLECT_101, 0, hw[i][0], hw[i][1], 5, 5, 0);
    d[i].channels = 3, d[i].ay = d[i].ax = 2;
  }
  CHECK(run_case(d, 3, 3) == 0);
}

/* Not a check: times op_bench's filter row (256 uint8 HWC images of about
 * 463 x 403, a 5x5 filter each, reflect_101; the fast kernel) and a batch of
 * the same images whose filters differ in size (the generic tiled kernel),
 * and prints the stream time per batch (parameter upload and kernel). */
enum { TB = 256, ITERS = 10 };

static void time_conv(const char *name, const ladle__conv_desc *d, int taps) {
  size_t bytes = ladle__gpu_conv_param_bytes(TB, taps);
  void *host[ITERS], *dev[ITERS];
  for (int it = 0; it < ITERS; it++) {
    CUDA_OK(cudaMallocHost(&host[it], bytes));
    CUDA_OK(cudaMalloc(&dev[it], bytes));
  }
  CHECK_OK(ladle__gpu_conv(d, TB, taps, host[0], dev[0], bytes, stream));
  CUDA_OK(cudaStreamSynchronize((cudaStream_t)stream));
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  cudaEventRecord(e0, (cudaStream_t)stream);
  for (int it = 0; it < ITERS; it++) CHECK_OK(ladle__gpu_conv(d, TB, taps, host[it], dev[it], bytes, stream));
  cudaEventRecord(e1, (cudaStream_t)stream);
  CUDA_OK(cudaEventSynchronize(e1));
  float ms = 0;
  cudaEventElapsedTime(&ms, e0, e1);
  fprintf(stderr, "  time %-22s stream %.3f ms/batch\n", name, ms / ITERS);
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  for (int it = 0; it < ITERS; it++) cudaFreeHost(host[it]), cudaFree(dev[it]);
}

static void report_times(void) {
  ladle__rng_init(&rng, 26, 1, 0, 0);
  static ladle__conv_desc d[TB];
  static float taps[TB][25];
  size_t max_bytes = 540 * 470 * 3;
  uint8_t *buf = malloc(max_bytes);
  fill(buf, LADLE_UINT8, (int64_t)max_bytes);
  for (int i = 0; i < TB; i++) {
    make(&d[i], taps[i], LADLE_UINT8, LADLE_UINT8, LADLE__BORDER_REFLECT_101, 0, rnd_int(336, 470), rnd_int(386, 540),
         5, 5, 0);
    d[i].channels = 3, d[i].ay = d[i].ax = 2;
    d[i].in = test_device_copy(buf, (size_t)(d[i].h * d[i].w * 3));
    d[i].out = test_device_alloc((size_t)(d[i].h * d[i].w * 3));
  }
  free(buf);
  time_conv("filter 5x5 (fast)", d, TB * 25);
  d[0].r = d[0].s = 3; /* one 3x3 filter in the batch: the generic kernel for all */
  time_conv("filter 5x5 (generic)", d, TB * 25);
  for (int i = 0; i < TB; i++) cudaFree((void *)d[i].in), cudaFree(d[i].out);
}

int main(void) {
  TEST_SKIP_WITHOUT_DEVICE();
  CHECK_OK(ladle__cuda_use_device(0, NULL));
  CHECK_OK(ladle__cuda_stream_create(0, &stream));
  RUN(test_conv_mixed);
  RUN(test_conv_sizes);
  RUN(test_conv_large);
  RUN(test_conv_fast);
  RUN(test_conv_fast_large);
  RUN(report_times);
  ladle__cuda_stream_destroy(stream);
  TEST_MAIN_END();
}

#endif
