/* The random and noise formulas (ops/random/random_kernel.h): the samplers'
 * statistics and substreams on the CPU, then the CUDA kernel against the CPU
 * loop on random descriptors of every kind. Exits 77 (SKIP) after the CPU
 * part when there is no CUDA device (or no CUDA build).
 *
 * Agreement asserted: coin, uniform, values, choice, salt_and_pepper
 * bit-identical; normal, beta, noise.gaussian (float32 output) within 1e-6
 * relative; shot noise (uint8 output) equal for >= 99.9% of elements (libm and
 * CUDA's log/exp/lgamma may differ by an ulp of a double, which can flip a
 * rejection test or a rounding at .5). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "ops/random/random_kernel.h"
#include "test.h"

static double mean_of(int kind, double p0, double p1, int n, double *var) {
  ladle__rand_sample s = {0};
  ladle__rng_init(&s.rng, 99, 3, 0, (uint64_t)kind);
  s.group = 1;
  s.p[0] = p0;
  s.p[1] = p1;
  double sum = 0, sq = 0;
  for (int i = 0; i < n; i++) {
    double x = ladle__rand_value(kind, &s, NULL, 0, LADLE_FLOAT32, i);
    sum += x;
    sq += x * x;
  }
  *var = sq / n - (sum / n) * (sum / n);
  return sum / n;
}

static void test_samplers(void) {
  const int n = 200000;
  double var, m = mean_of(LADLE_RAND_NORMAL, 1.0, 2.0, n, &var);
  CHECK(fabs(m - 1.0) < 6 * 2.0 / sqrt(n) && fabs(var - 4.0) < 6 * 4.0 * sqrt(2.0 / n));
  m = mean_of(LADLE_RAND_BETA, 2.0, 3.0, n, &var);
  CHECK(fabs(m - 0.4) < 6 * 0.2 / sqrt(n) && fabs(var - 0.04) < 0.002);
  m = mean_of(LADLE_RAND_BETA, 0.3, 0.3, n, &var);
  CHECK(fabs(m - 0.5) < 6 * 0.5 / sqrt(n));
  /* Poisson through shot noise of a constant input (factor 1: out ~ Poisson(in)). */
  for (int k = 0; k < 3; k++) {
    double lambda = k == 0 ? 3.5 : k == 1 ? 12.0 : 400.0;
    float in = (float)lambda;
    ladle__rand_sample s = {0};
    ladle__rng_init(&s.rng, 5, 6, 7, 8);
    s.group = 1;
    s.p[0] = 1.0;
    s.in = &in;
    double sum = 0, sq = 0;
    for (int i = 0; i < n; i++) {
      s.in = &in;
      ladle__rand_sample t = s;
      ladle__rng_substream(&t.rng, &s.rng, (uint64_t)i);
      double x = ladle__rng_poisson(&t.rng, lambda);
      CHECK(x == floor(x) && x >= 0);
      sum += x;
      sq += x * x;
      if (test_failures) return;
    }
    double mean = sum / n, v = sq / n - mean * mean;
    CHECK(fabs(mean - lambda) < 6 * sqrt(lambda / n));
    CHECK(fabs(v - lambda) < 6 * lambda * sqrt(2.0 / n + 1.0 / (lambda * n)));
  }
  /* Substream 0 is the stream itself; others differ. */
  ladle__rng a, b, c;
  ladle__rng_init(&a, 1, 2, 3, 4);
  ladle__rng_substream(&b, &a, 0);
  ladle__rng_substream(&c, &a, 1);
  uint32_t x = ladle__rng_u32(&a), y = ladle__rng_u32(&b), z = ladle__rng_u32(&c);
  CHECK(x == y && x != z);
}

#ifdef LADLE_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "cuda/runtime.h"

enum { SAMPLES = 6 };

static int exact_kind(int kind) {
  return kind == LADLE_RAND_COIN || kind == LADLE_RAND_UNIFORM || kind == LADLE_RAND_VALUES ||
         kind == LADLE_RAND_CHOICE || kind == LADLE_NOISE_SALT_PEPPER;
}

static void test_gpu_kind(int kind, void *stream) {
  ladle__rng r;
  ladle__rng_init(&r, 4321, (uint64_t)kind, 0, 0);
  int noise = kind >= LADLE_NOISE_GAUSSIAN;
  ladle_dtype out_t = kind == LADLE_NOISE_SHOT || kind == LADLE_NOISE_SALT_PEPPER ? LADLE_UINT8
                      : kind == LADLE_RAND_CHOICE                                ? LADLE_INT32
                                                                                 : LADLE_FLOAT32;
  ladle_dtype in_t = noise ? (out_t == LADLE_UINT8 ? LADLE_UINT8 : LADLE_FLOAT32) : LADLE_INT32;
  if (kind == LADLE_NOISE_GAUSSIAN) in_t = out_t = LADLE_FLOAT32;
  double table[4] = {0.1, 0.35, 0.9, 1.0};
  int table_len = kind == LADLE_RAND_VALUES || kind == LADLE_RAND_CHOICE ? 4 : 0;
  ladle__rand_sample d[SAMPLES], h[SAMPLES];
  void *cpu_out[SAMPLES], *gpu_out[SAMPLES], *host_in[SAMPLES];
  size_t es = ladle_dtype_size(out_t);
  int32_t choices[4] = {10, 20, 30, 40};
  for (int i = 0; i < SAMPLES; i++) {
    memset(&h[i], 0, sizeof h[i]);
    h[i].count = 1 + (int64_t)ladle__rng_below(&r, 5000);
    h[i].group = kind == LADLE_NOISE_SALT_PEPPER && i % 2 ? 3 : 1;
    h[i].count -= h[i].count % h[i].group;
    if (h[i].count == 0) h[i].count = h[i].group;
    ladle__rng_init(&h[i].rng, 77, (uint64_t)kind, 1, (uint64_t)i);
    h[i].p[0] = kind == LADLE_NOISE_SHOT ? 0.3 + ladle__rng_uniform(&r) * 30 : ladle__rng_uniform(&r);
    h[i].p[1] = kind == LADLE_RAND_BETA ? 0.2 + 3 * ladle__rng_uniform(&r) : 0.5 + ladle__rng_uniform(&r);
    h[i].p[2] = 250;
    h[i].p[3] = 3;
    if (kind == LADLE_RAND_BETA) h[i].p[0] += 0.1;
    size_t in_bytes = (size_t)h[i].count * ladle_dtype_size(in_t);
    host_in[i] = malloc(kind == LADLE_RAND_CHOICE ? sizeof choices : in_bytes);
    if (kind == LADLE_RAND_CHOICE) {
      memcpy(host_in[i], choices, sizeof choices);
      h[i].in_count = 4;
      in_bytes = sizeof choices;
    } else {
      for (size_t k = 0; k < in_bytes / ladle_dtype_size(in_t); k++) {
        if (in_t == LADLE_UINT8) ((uint8_t *)host_in[i])[k] = (uint8_t)ladle__rng_u32(&r);
        else if (in_t == LADLE_FLOAT32) ((float *)host_in[i])[k] = (float)(ladle__rng_uniform(&r) * 255);
        else ((int32_t *)host_in[i])[k] = 0;
      }
    }
    cpu_out[i] = malloc((size_t)h[i].count * es);
    d[i] = h[i];
    h[i].in = (noise || kind == LADLE_RAND_CHOICE) ? host_in[i] : NULL;
    h[i].out = cpu_out[i];
    for (int64_t k = 0; k < h[i].count; k++)
      ladle__rand_store(cpu_out[i], out_t, k, ladle__rand_value(kind, &h[i], table, table_len, in_t, k));
    void *din = NULL;
    cudaMalloc(&din, in_bytes);
    cudaMemcpy(din, host_in[i], in_bytes, cudaMemcpyHostToDevice);
    cudaMalloc(&gpu_out[i], (size_t)h[i].count * es);
    d[i].in = (noise || kind == LADLE_RAND_CHOICE) ? din : NULL;
    d[i].out = gpu_out[i];
  }
  size_t bytes = ladle__gpu_rand_param_bytes(SAMPLES, table_len);
  void *hp = NULL, *dp = NULL;
  cudaHostAlloc(&hp, bytes, cudaHostAllocDefault);
  cudaMalloc(&dp, bytes);
  CHECK_OK(ladle__gpu_rand(d, SAMPLES, kind, table, table_len, out_t, in_t, hp, dp, bytes, stream));
  CHECK(cudaStreamSynchronize((cudaStream_t)stream) == cudaSuccess);
  for (int i = 0; i < SAMPLES; i++) {
    size_t nb = (size_t)h[i].count * es;
    uint8_t *got = malloc(nb);
    cudaMemcpy(got, gpu_out[i], nb, cudaMemcpyDeviceToHost);
    int64_t differ = 0;
    double worst = 0;
    for (int64_t k = 0; k < h[i].count; k++) {
      double a = out_t == LADLE_FLOAT32 ? ((float *)cpu_out[i])[k] : out_t == LADLE_INT32 ? ((int32_t *)cpu_out[i])[k]
                                                                                        : ((uint8_t *)cpu_out[i])[k];
      double b = out_t == LADLE_FLOAT32 ? ((float *)got)[k] : out_t == LADLE_INT32 ? ((int32_t *)got)[k] : got[k];
      double rel = fabs(a - b) / (fabs(a) > 1 ? fabs(a) : 1);
      if (rel > 0) differ++;
      if (rel > worst) worst = rel;
    }
    if (exact_kind(kind)) CHECK(differ == 0);
    else if (out_t == LADLE_FLOAT32 && kind != LADLE_RAND_BETA) CHECK(worst <= 1e-6);
    else CHECK(differ <= h[i].count / 1000 + (kind == LADLE_RAND_BETA ? 0 : 1));
    if (differ) fprintf(stderr, "  kind %d sample %d: %lld of %lld differ, worst %g\n", kind, i, (long long)differ,
                        (long long)h[i].count, worst);
    free(got);
    free(cpu_out[i]);
    free(host_in[i]);
    cudaFree((void *)d[i].in);
    cudaFree(gpu_out[i]);
  }
  cudaFreeHost(hp);
  cudaFree(dp);
}

static void test_gpu(void *stream) {
  for (int kind = LADLE_RAND_COIN; kind <= LADLE_NOISE_SHOT; kind++) test_gpu_kind(kind, stream);
}
#endif

int main(void) {
  RUN(test_samplers);
#ifdef LADLE_HAVE_CUDA
  if (ladle__cuda_device_count() > 0) {
    void *stream = NULL;
    CHECK_OK(ladle__cuda_use_device(0, NULL));
    CHECK_OK(ladle__cuda_stream_create(0, &stream));
    {
      int before = test_failures;
      test_gpu(stream);
      fprintf(stderr, "%s test_gpu\n", test_failures == before ? "ok  " : "FAIL");
    }
    ladle__cuda_stream_destroy(stream);
    TEST_MAIN_END();
  }
#endif
  fprintf(stderr, "%d checks, %d failed; GPU part skipped (no CUDA device)\n", test_checks, test_failures);
  return test_failures ? 1 : 77;
}
