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
      d[i].h = rnd_int(1, 120), d[i].w = rnd_int(1, 130), d[i].pixel_bytes = rnd_int(1, 4);
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

int main(void) {
  TEST_SKIP_WITHOUT_DEVICE();
  CHECK_OK(ladle__cuda_use_device(0, NULL));
  CHECK_OK(ladle__cuda_stream_create(0, &stream));
  RUN(test_color_gpu);
  RUN(test_jitter_gpu);
  ladle__cuda_stream_destroy(stream);
  TEST_MAIN_END();
}

#endif
