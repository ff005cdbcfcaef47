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

static void test_color_gpu(void) {
  static const ladle_dtype outs[] = {LADLE_UINT8, LADLE_FLOAT32, LADLE_FLOAT16, LADLE_INT32};
  ladle__rng_init(&rng, 7, 1, 0, 0);
  void *din = NULL, *dout = NULL, *hparams = NULL, *dparams = NULL;
  size_t in_bytes = (size_t)BATCH * MAX_PX * 4 * 4, out_bytes = (size_t)BATCH * MAX_PX * 4 * 4;
  uint8_t *hin = malloc(in_bytes), *want = malloc(out_bytes), *got = malloc(out_bytes);
  CUDA_OK(cudaMalloc(&din, in_bytes));
  CUDA_OK(cudaMalloc(&dout, out_bytes));
  size_t pbytes = ladle__gpu_color_param_bytes(BATCH);
  CUDA_OK(cudaHostAlloc(&hparams, pbytes, cudaHostAllocDefault));
  CUDA_OK(cudaMalloc(&dparams, pbytes));
  for (int trial = 0; trial < 60 && hin && want && got; trial++) {
    ladle_dtype it = rnd_int(0, 1) ? LADLE_FLOAT32 : LADLE_UINT8, ot = outs[rnd_int(0, 3)];
    ladle__gpu_color_desc d[BATCH];
    size_t in_off = 0, out_off = 0;
    memset(want, 0, out_bytes);
    for (int i = 0; i < BATCH; i++) {
      ladle__color_params *p = &d[i].p;
      memset(p, 0, sizeof *p);
      p->mode = trial % 2;
      p->in_c = p->mode == LADLE__COLOR_SCALE ? rnd_int(1, 4) : rnd_int(1, 3);
      p->out_c = p->mode == LADLE__COLOR_SCALE ? p->in_c : rnd_int(1, 3);
      p->mul = rnd_float(-2, 2);
      p->add = rnd_float(-100, 100);
      for (int r = 0; r < 3; r++) {
        for (int k = 0; k < 3; k++) p->m[r][k] = rnd_float(-1.5f, 1.5f);
        p->off[r] = rnd_float(-50, 200);
      }
      p->rev_in = rnd_int(0, 1);
      p->rev_out = rnd_int(0, 1);
      size_t px = (size_t)rnd_int(1, MAX_PX);
      uint8_t *src = hin + in_off;
      for (size_t k = 0; k < px * p->in_c; k++) {
        if (it == LADLE_UINT8) src[k] = (uint8_t)rnd();
        else ((float *)src)[k] = rnd_float(-0.5f, 1.5f) * 255;
      }
      ladle__color_apply(want + out_off, ot, src, it, px, p);
      d[i].in = (uint8_t *)din + in_off;
      d[i].out = (uint8_t *)dout + out_off;
      d[i].pixels = px;
      in_off += (px * p->in_c * elem(it) + 15) & ~(size_t)15;
      out_off += (px * p->out_c * elem(ot) + 15) & ~(size_t)15;
    }
    CUDA_OK(cudaMemcpy(din, hin, in_off, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemset(dout, 0, out_bytes));
    CHECK_OK(ladle__gpu_color(d, BATCH, ot, it, hparams, dparams, pbytes, stream));
    CUDA_OK(cudaStreamSynchronize((cudaStream_t)stream));
    CUDA_OK(cudaMemcpy(got, dout, out_off, cudaMemcpyDeviceToHost));
    CHECK(!memcmp(got, want, out_off));
  }
  cudaFree(din), cudaFree(dout), cudaFree(dparams), cudaFreeHost(hparams);
  free(hin), free(want), free(got);
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
  size_t bytes = (size_t)N * MAXP * 4 * 4 + 64;
  uint8_t *hin = malloc(bytes), *want = malloc(bytes), *got = malloc(bytes);
  void *din = NULL, *dout = NULL, *hparams = NULL, *dparams = NULL;
  size_t pbytes = ladle__gpu_color_param_bytes(N);
  CUDA_OK(cudaMalloc(&din, bytes));
  CUDA_OK(cudaMalloc(&dout, bytes));
  CUDA_OK(cudaHostAlloc(&hparams, pbytes, cudaHostAllocDefault));
  CUDA_OK(cudaMalloc(&dparams, pbytes));
  for (size_t c = 0; c < sizeof cases / sizeof cases[0] && hin && want && got; c++)
    for (size_t o = 0; o < sizeof outs / sizeof outs[0]; o++) {
      const ladle_dtype it = cases[c].it, ot = outs[o];
      const size_t is = elem(it), os = elem(ot);
      size_t in_off = is * (size_t)rnd_int(0, 15), out_off = os * (size_t)rnd_int(0, 15), in0 = in_off,
             out0 = out_off;
      ladle__gpu_color_desc d[N];
      memset(want, 0, bytes);
      for (int i = 0; i < N; i++) {
        static const int fixed[] = {0, 1, 15, 16, 17};
        ladle__color_params *p = &d[i].p;
        memset(p, 0, sizeof *p);
        p->mode = cases[c].mode;
        p->in_c = cases[c].in_c;
        p->out_c = cases[c].out_c;
        p->mul = rnd_float(-2, 2);
        p->add = rnd_float(-100, 100);
        for (int r = 0; r < 3; r++) {
          for (int k = 0; k < 3; k++) p->m[r][k] = rnd_float(-1.5f, 1.5f);
          p->off[r] = rnd_float(-50, 200);
        }
        p->rev_in = cases[c].rev == 1 || (cases[c].rev == 2 && i == N - 1);
        p->rev_out = cases[c].rev == 1;
        size_t px = i < 5 ? (size_t)fixed[i] : (size_t)rnd_int(1, i == N - 1 ? MAXP : 700);
        uint8_t *src = hin + in_off;
        for (size_t k = 0; k < px * p->in_c; k++) {
          if (it == LADLE_UINT8) src[k] = (uint8_t)rnd();
          else ((float *)src)[k] = rnd_float(-0.5f, 1.5f) * 255;
        }
        ladle__color_apply(want + out_off, ot, src, it, px, p);
        d[i].in = (uint8_t *)din + in_off;
        d[i].out = (uint8_t *)dout + out_off;
        d[i].pixels = px;
        in_off += px * p->in_c * is;
        out_off += px * p->out_c * os;
      }
      CUDA_OK(cudaMemcpy(din, hin, in_off, cudaMemcpyHostToDevice));
      CUDA_OK(cudaMemset(dout, 0, bytes));
      CHECK_OK(ladle__gpu_color(d, N, ot, it, hparams, dparams, pbytes, stream));
      CUDA_OK(cudaStreamSynchronize((cudaStream_t)stream));
      CUDA_OK(cudaMemcpy(got, dout, out_off, cudaMemcpyDeviceToHost));
      int same = !memcmp(got + out0, want + out0, out_off - out0);
      if (!same)
        fprintf(stderr, "colour case %zu (in %d, out %d, shifts %zu/%zu): GPU != CPU\n", c, (int)it, (int)ot, in0,
                out0);
      CHECK(same);
    }
  cudaFree(din), cudaFree(dout), cudaFree(dparams), cudaFreeHost(hparams);
  free(hin), free(want), free(got);
}

static void test_jitter_gpu(void) {
  ladle__rng_init(&rng, 7, 2, 0, 0);
  ladle__gpu_jitter_desc d[BATCH];
  size_t bytes = (size_t)BATCH * 120 * 130 * 4;
  uint8_t *hin = malloc(bytes), *want = malloc(bytes), *got = malloc(bytes);
  void *din = NULL, *dout = NULL, *hparams = NULL, *dparams = NULL;
  size_t pbytes = ladle__gpu_jitter_param_bytes(BATCH);
  CUDA_OK(cudaMalloc(&din, bytes));
  CUDA_OK(cudaMalloc(&dout, bytes));
  CUDA_OK(cudaHostAlloc(&hparams, pbytes, cudaHostAllocDefault));
  CUDA_OK(cudaMalloc(&dparams, pbytes));
  for (int trial = 0; trial < 10 && hin && want && got; trial++) {
    size_t off = 0;
    for (int i = 0; i < BATCH; i++) {
      memset(&d[i], 0, sizeof d[i]);
      /* odd trials: 3 bytes a pixel in every sample (the kernel's RGB instance) */
      d[i].h = rnd_int(1, 120), d[i].w = rnd_int(1, 130), d[i].pixel_bytes = trial % 2 ? 3 : rnd_int(1, 4);
      d[i].n_degree = rnd_int(1, 12), d[i].mask = rnd_int(0, 4) != 0;
      d[i].key[0] = rnd(), d[i].key[1] = rnd();
      memset(d[i].fill, rnd_int(0, 255), sizeof d[i].fill);
      size_t n = (size_t)d[i].h * d[i].w * d[i].pixel_bytes;
      for (size_t k = 0; k < n; k++) hin[off + k] = (uint8_t)rnd();
      ladle__jitter(want + off, hin + off, d[i].h, d[i].w, d[i].pixel_bytes, d[i].n_degree, d[i].key, d[i].fill,
                    d[i].mask);
      d[i].in = (uint8_t *)din + off, d[i].out = (uint8_t *)dout + off;
      off += n;
    }
    CUDA_OK(cudaMemcpy(din, hin, off, cudaMemcpyHostToDevice));
    CHECK_OK(ladle__gpu_jitter(d, BATCH, hparams, dparams, pbytes, stream));
    CUDA_OK(cudaStreamSynchronize((cudaStream_t)stream));
    CUDA_OK(cudaMemcpy(got, dout, off, cudaMemcpyDeviceToHost));
    CHECK(!memcmp(got, want, off));
  }
  cudaFree(din), cudaFree(dout), cudaFree(dparams), cudaFreeHost(hparams);
  free(hin), free(want), free(got);
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
  void *din = NULL, *dout = NULL, *hp = NULL, *dp = NULL;
  size_t pb = ladle__gpu_color_param_bytes(N);
  CUDA_OK(cudaMalloc(&din, total * 3));
  CUDA_OK(cudaMalloc(&dout, total * 3 * 4));
  CUDA_OK(cudaHostAlloc(&hp, pb, cudaHostAllocDefault));
  CUDA_OK(cudaMalloc(&dp, pb));
  uint8_t *hin = malloc(total * 3), *got = malloc(total * 3 * 4), *want = malloc(MAX_SAMPLE_BYTES);
  for (size_t k = 0; hin && k < total * 3; k += 4) {
    const uint32_t r = rnd();
    memcpy(hin + k, &r, total * 3 - k < 4 ? total * 3 - k : 4);
  }
  if (hin) CUDA_OK(cudaMemcpy(din, hin, total * 3, cudaMemcpyHostToDevice));
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
    CUDA_OK(cudaMemset(dout, 0xa5, out_off));
    CHECK_OK(ladle__gpu_color(d, N, cases[c].ot, LADLE_UINT8, hp, dp, pb, stream));
    CUDA_OK(cudaStreamSynchronize((cudaStream_t)stream));
    CUDA_OK(cudaMemcpy(got, dout, out_off, cudaMemcpyDeviceToHost));
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
