/* The colour CUDA kernels against their CPU references (color_kernel.h) on
 * random images and parameters: bit-identical (the same float operations in
 * the same order, no FMA contraction; jitter draws from the same Philox
 * counters). Exits 77 (ctest's SKIP) without CUDA or a device. */
#include "test_cuda.h" /* built without CUDA: all of this test, a skip */
#ifdef LADLE_HAVE_CUDA

#include "test_random.h"
#include "ops/color/color_kernel.h"

static void *stream;

enum { BATCH = 6, MAX_PX = 3000 };

static size_t elem(ladle_dtype t) { return ladle_dtype_size(t); }

/* One test's buffers: the host input, the CPU's and the GPU's results (bytes
 * each), the device input and output (bytes each) and a parameter buffer. */
typedef struct color_bufs {
  uint8_t *hin, *want, *got;
  void *din, *dout, *hp, *dp;
  size_t bytes, pbytes;
} color_bufs;

static int bufs_alloc(color_bufs *b, size_t bytes, size_t pbytes) {
  b->bytes = bytes, b->pbytes = pbytes;
  b->hin = malloc(bytes), b->want = malloc(bytes), b->got = malloc(bytes);
  b->din = test_device_alloc(bytes), b->dout = test_device_alloc(bytes);
  b->hp = test_pinned_alloc(pbytes), b->dp = test_device_alloc(pbytes);
  return b->hin && b->want && b->got;
}

static void bufs_free(color_bufs *b) {
  cudaFree(b->din), cudaFree(b->dout), cudaFree(b->dp), cudaFreeHost(b->hp);
  free(b->hin), free(b->want), free(b->got);
}

/* Random parameters of a `mode` colour transform from in_c to out_c channels. */
static void random_color(ladle__color_params *p, int mode, int in_c, int out_c) {
  memset(p, 0, sizeof *p);
  p->mode = mode;
  p->in_c = in_c;
  p->out_c = out_c;
  p->mul = rnd_float(-2, 2);
  p->add = rnd_float(-100, 100);
  for (int r = 0; r < 3; r++) {
    for (int k = 0; k < 3; k++) p->m[r][k] = rnd_float(-1.5f, 1.5f);
    p->off[r] = rnd_float(-50, 200);
  }
}

/* Sample d (its parameters set) of px random pixels at byte in_off of the
 * input and out_off of the outputs: the CPU's result in want, the device
 * pointers in d. */
static void color_sample(color_bufs *b, ladle__gpu_color_desc *d, ladle_dtype ot, ladle_dtype it, size_t px,
                         size_t in_off, size_t out_off) {
  uint8_t *src = b->hin + in_off;
  for (size_t k = 0; k < px * d->p.in_c; k++) {
    if (it == LADLE_UINT8) src[k] = (uint8_t)rnd();
    else ((float *)src)[k] = rnd_float(-0.5f, 1.5f) * 255;
  }
  ladle__color_apply(b->want + out_off, ot, src, it, px, &d->p);
  d->in = (uint8_t *)b->din + in_off;
  d->out = (uint8_t *)b->dout + out_off;
  d->pixels = px;
}

/* Uploads in_bytes of input, zeroes the device output, runs the n samples
 * and reads out_bytes of output back into got. */
static void color_run(color_bufs *b, const ladle__gpu_color_desc *d, int n, ladle_dtype ot, ladle_dtype it,
                      size_t in_bytes, size_t out_bytes) {
  test_upload(b->din, b->hin, in_bytes);
  test_fill(b->dout, 0, b->bytes);
  CHECK_OK(ladle__gpu_color(d, n, ot, it, b->hp, b->dp, b->pbytes, stream));
  test_download(b->got, b->dout, out_bytes, stream);
}

static void test_color_gpu(void) {
  static const ladle_dtype outs[] = {LADLE_UINT8, LADLE_FLOAT32, LADLE_FLOAT16, LADLE_INT32};
  ladle__rng_init(&rng, 7, 1, 0, 0);
  color_bufs b;
  int ok = bufs_alloc(&b, (size_t)BATCH * MAX_PX * 4 * 4, ladle__gpu_color_param_bytes(BATCH));
  for (int trial = 0; trial < 60 && ok; trial++) {
    ladle_dtype it = rnd_int(0, 1) ? LADLE_FLOAT32 : LADLE_UINT8, ot = outs[rnd_int(0, 3)];
    ladle__gpu_color_desc d[BATCH];
    size_t in_off = 0, out_off = 0;
    memset(b.want, 0, b.bytes);
    for (int i = 0; i < BATCH; i++) {
      ladle__color_params *p = &d[i].p;
      const int mode = trial % 2;
      const int in_c = mode == LADLE__COLOR_SCALE ? rnd_int(1, 4) : rnd_int(1, 3);
      const int out_c = mode == LADLE__COLOR_SCALE ? in_c : rnd_int(1, 3);
      random_color(p, mode, in_c, out_c);
      p->rev_in = rnd_int(0, 1);
      p->rev_out = rnd_int(0, 1);
      size_t px = (size_t)rnd_int(1, MAX_PX);
      color_sample(&b, &d[i], ot, it, px, in_off, out_off);
      in_off += (px * p->in_c * elem(it) + 15) & ~(size_t)15;
      out_off += (px * p->out_c * elem(ot) + 15) & ~(size_t)15;
    }
    color_run(&b, d, BATCH, ot, it, in_off, out_off);
    CHECK(!memcmp(b.got, b.want, out_off));
  }
  bufs_free(&b);
}

/* The vector kernel's cases (color_kernel.cu: SCALE; MATRIX 3 -> 3, 3 -> 1,
 * 1 -> 3; uint8 or float32 in; uint8, float32, float16 out) and beside them
 * the generic kernel's (int32 out, 2 channels in, reversed channels), each on
 * one batch of samples of 0, 1, 15, 16, 17 and random numbers of pixels,
 * packed one after the other as in a ladle batch (so most samples start off
 * a 16-byte boundary, the input and output at different offsets), both
 * arrays shifted by a random number of elements: bit-identical to the CPU. */
static void test_color_vec_gpu(void) {
  enum { N = 10, MAXP = 6000 };
  static const struct {
    ladle_dtype it;
    int mode, in_c, out_c, rev;
  } cases[] = {
      {LADLE_UINT8, LADLE__COLOR_SCALE, 3, 3, 0},   {LADLE_UINT8, LADLE__COLOR_SCALE, 1, 1, 0},
      {LADLE_UINT8, LADLE__COLOR_SCALE, 4, 4, 0},   {LADLE_FLOAT32, LADLE__COLOR_SCALE, 3, 3, 0},
      {LADLE_UINT8, LADLE__COLOR_MATRIX, 3, 3, 0},  {LADLE_UINT8, LADLE__COLOR_MATRIX, 3, 1, 0},
      {LADLE_UINT8, LADLE__COLOR_MATRIX, 1, 3, 0},  {LADLE_FLOAT32, LADLE__COLOR_MATRIX, 3, 3, 0},
      {LADLE_FLOAT32, LADLE__COLOR_MATRIX, 3, 1, 0}, {LADLE_UINT8, LADLE__COLOR_MATRIX, 2, 3, 0},
      {LADLE_UINT8, LADLE__COLOR_MATRIX, 3, 3, 1},  {LADLE_UINT8, LADLE__COLOR_MATRIX, 3, 1, 2},
  };
  static const ladle_dtype outs[] = {LADLE_UINT8, LADLE_FLOAT32, LADLE_FLOAT16, LADLE_INT32};
  ladle__rng_init(&rng, 7, 3, 0, 0);
  color_bufs b;
  int ok = bufs_alloc(&b, (size_t)N * MAXP * 4 * 4 + 64, ladle__gpu_color_param_bytes(N));
  for (size_t c = 0; c < sizeof cases / sizeof cases[0] && ok; c++)
    for (size_t o = 0; o < sizeof outs / sizeof outs[0]; o++) {
      const ladle_dtype it = cases[c].it, ot = outs[o];
      const size_t is = elem(it), os = elem(ot);
      size_t in_off = is * (size_t)rnd_int(0, 15), out_off = os * (size_t)rnd_int(0, 15), in0 = in_off,
             out0 = out_off;
      ladle__gpu_color_desc d[N];
      memset(b.want, 0, b.bytes);
      for (int i = 0; i < N; i++) {
        static const int fixed[] = {0, 1, 15, 16, 17};
        ladle__color_params *p = &d[i].p;
        random_color(p, cases[c].mode, cases[c].in_c, cases[c].out_c);
        p->rev_in = cases[c].rev == 1 || (cases[c].rev == 2 && i == N - 1);
        p->rev_out = cases[c].rev == 1;
        size_t px = i < 5 ? (size_t)fixed[i] : (size_t)rnd_int(1, i == N - 1 ? MAXP : 700);
        color_sample(&b, &d[i], ot, it, px, in_off, out_off);
        in_off += px * p->in_c * is;
        out_off += px * p->out_c * os;
      }
      color_run(&b, d, N, ot, it, in_off, out_off);
      int same = !memcmp(b.got + out0, b.want + out0, out_off - out0);
      if (!same)
        fprintf(stderr, "colour case %zu (in %d, out %d, shifts %zu/%zu): GPU != CPU\n", c, (int)it, (int)ot, in0,
                out0);
      CHECK(same);
    }
  bufs_free(&b);
}

static void test_jitter_gpu(void) {
  ladle__rng_init(&rng, 7, 2, 0, 0);
  ladle__gpu_jitter_desc d[BATCH];
  color_bufs b;
  int ok = bufs_alloc(&b, (size_t)BATCH * 120 * 130 * 4, ladle__gpu_jitter_param_bytes(BATCH));
  for (int trial = 0; trial < 10 && ok; trial++) {
    size_t off = 0;
    for (int i = 0; i < BATCH; i++) {
      memset(&d[i], 0, sizeof d[i]);
      /* odd trials: 3 bytes a pixel in every sample (the kernel's RGB instance) */
      d[i].h = rnd_int(1, 120), d[i].w = rnd_int(1, 130), d[i].pixel_bytes = trial % 2 ? 3 : rnd_int(1, 4);
      d[i].n_degree = rnd_int(1, 12), d[i].mask = rnd_int(0, 4) != 0;
      d[i].key[0] = rnd(), d[i].key[1] = rnd();
      memset(d[i].fill, rnd_int(0, 255), sizeof d[i].fill);
      size_t n = (size_t)d[i].h * d[i].w * d[i].pixel_bytes;
      for (size_t k = 0; k < n; k++) b.hin[off + k] = (uint8_t)rnd();
      ladle__jitter(b.want + off, b.hin + off, d[i].h, d[i].w, d[i].pixel_bytes, d[i].n_degree, d[i].key, d[i].fill,
                    d[i].mask);
      d[i].in = (uint8_t *)b.din + off, d[i].out = (uint8_t *)b.dout + off;
      off += n;
    }
    test_upload(b.din, b.hin, off);
    CHECK_OK(ladle__gpu_jitter(d, BATCH, b.hp, b.dp, b.pbytes, stream));
    test_download(b.got, b.dout, off, stream);
    CHECK(!memcmp(b.got, b.want, off));
  }
  bufs_free(&b);
}

/* Prints the kernel time (ms, median of 15 launches, events on the stream,
 * the parameter upload included; not a check) of the common cases on a
 * batch like op_bench's (256 random uint8 RGB images of about 450 x 400,
 * packed), beside a device copy of the input, for the issue-9 figures; then
 * checks each case's output against the CPU (a batch this large has
 * threads that take several groups). */
static float launch_ms(const ladle__gpu_color_desc *d, int n, ladle_dtype ot, void *hp, void *dp, size_t pb,
                       const void *copy_dst, const void *copy_src, size_t copy_bytes) {
  float t[15];
  cudaEvent_t a, b;
  CUDA_OK(cudaEventCreate(&a));
  CUDA_OK(cudaEventCreate(&b));
  for (int r = -2; r < 15; r++) {
    CUDA_OK(cudaEventRecord(a, (cudaStream_t)stream));
    if (d)
      CHECK_OK(ladle__gpu_color(d, n, ot, LADLE_UINT8, hp, dp, pb, stream));
    else
      CUDA_OK(cudaMemcpyAsync((void *)copy_dst, copy_src, copy_bytes, cudaMemcpyDeviceToDevice, (cudaStream_t)stream));
    CUDA_OK(cudaEventRecord(b, (cudaStream_t)stream));
    CUDA_OK(cudaEventSynchronize(b));
    if (r >= 0) CUDA_OK(cudaEventElapsedTime(&t[r], a, b));
  }
  cudaEventDestroy(a), cudaEventDestroy(b);
  for (int i = 0; i < 15; i++) /* sort */
    for (int j = i + 1; j < 15; j++)
      if (t[j] < t[i]) {
        float x = t[i];
        t[i] = t[j], t[j] = x;
      }
  return t[7];
}

static void time_color_kernels(void) {
  enum { N = 256, MAX_SAMPLE_BYTES = 580 * 510 * 3 * 4 };
  ladle__rng_init(&rng, 7, 9, 0, 0);
  size_t px[N], total = 0;
  for (int i = 0; i < N; i++) total += px[i] = (size_t)rnd_int(350, 580) * (size_t)rnd_int(300, 510);
  size_t pb = ladle__gpu_color_param_bytes(N);
  void *din = test_device_alloc(total * 3), *dout = test_device_alloc(total * 3 * 4);
  void *hp = test_pinned_alloc(pb), *dp = test_device_alloc(pb);
  uint8_t *hin = malloc(total * 3), *got = malloc(total * 3 * 4), *want = malloc(MAX_SAMPLE_BYTES);
  for (size_t k = 0; hin && k < total * 3; k += 4) {
    const uint32_t r = rnd();
    memcpy(hin + k, &r, total * 3 - k < 4 ? total * 3 - k : 4);
  }
  if (hin) test_upload(din, hin, total * 3);
  static const struct {
    const char *name;
    int mode, out_c;
    ladle_dtype ot;
  } cases[] = {{"brightness (SCALE) uint8", LADLE__COLOR_SCALE, 3, LADLE_UINT8},
               {"brightness (SCALE) -> float32", LADLE__COLOR_SCALE, 3, LADLE_FLOAT32},
               {"hsv (MATRIX 3->3) uint8", LADLE__COLOR_MATRIX, 3, LADLE_UINT8},
               {"hsv (MATRIX 3->3) -> float16", LADLE__COLOR_MATRIX, 3, LADLE_FLOAT16},
               {"gray (MATRIX 3->1) uint8", LADLE__COLOR_MATRIX, 1, LADLE_UINT8}};
  printf("time copy of the input (%.1f MB): %.3f ms\n", total * 3 / 1e6,
         launch_ms(NULL, 0, LADLE_UINT8, NULL, NULL, 0, dout, din, total * 3));
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    ladle__gpu_color_desc d[N];
    size_t in_off = 0, out_off = 0;
    for (int i = 0; i < N; i++) {
      memset(&d[i], 0, sizeof d[i]);
      d[i].p.mode = cases[c].mode;
      d[i].p.in_c = 3, d[i].p.out_c = cases[c].out_c;
      d[i].p.mul = 1.3f;
      for (int r = 0; r < 3; r++)
        for (int k = 0; k < 3; k++) d[i].p.m[r][k] = r == k ? 0.8f : 0.1f;
      d[i].in = (uint8_t *)din + in_off, d[i].out = (uint8_t *)dout + out_off, d[i].pixels = px[i];
      in_off += px[i] * 3, out_off += px[i] * (size_t)cases[c].out_c * elem(cases[c].ot);
    }
    printf("time colour %s: %.3f ms\n", cases[c].name, launch_ms(d, N, cases[c].ot, hp, dp, pb, NULL, NULL, 0));
    if (!hin || !got || !want) continue;
    test_fill(dout, 0xa5, out_off);
    CHECK_OK(ladle__gpu_color(d, N, cases[c].ot, LADLE_UINT8, hp, dp, pb, stream));
    test_download(got, dout, out_off, stream);
    int bad = 0;
    for (int i = 0; i < N; i++) {
      const size_t ob = px[i] * (size_t)cases[c].out_c * elem(cases[c].ot);
      ladle__color_apply(want, cases[c].ot, hin + ((const uint8_t *)d[i].in - (const uint8_t *)din), LADLE_UINT8,
                         px[i], &d[i].p);
      bad += ob > MAX_SAMPLE_BYTES || memcmp(got + ((uint8_t *)d[i].out - (uint8_t *)dout), want, ob) != 0;
    }
    if (bad) fprintf(stderr, "colour %s: %d of %d samples differ from the CPU\n", cases[c].name, bad, N);
    CHECK(bad == 0);
  }
  cudaFree(din), cudaFree(dout), cudaFree(dp), cudaFreeHost(hp);
  free(hin), free(got), free(want);
}

int main(void) {
  TEST_SKIP_WITHOUT_DEVICE();
  CHECK_OK(ladle__cuda_use_device(0, NULL));
  CHECK_OK(ladle__cuda_stream_create(0, &stream));
  RUN(test_color_gpu);
  RUN(test_color_vec_gpu);
  RUN(test_jitter_gpu);
  RUN(time_color_kernels);
  ladle__cuda_stream_destroy(stream);
  TEST_MAIN_END();
}

#endif
