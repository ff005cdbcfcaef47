/* The CUDA kernels ladle.auto_aug's operators added, against their CPU
 * arithmetic on random inputs: reductions (every kind, several axis sets and
 * types), equalize (HWC, CHW planes) and filter (every border mode).
 * Agreement asserted: bit-identical (the kernels and the CPU operators share
 * reduce_core.h, equalize_core.h and conv_core.h: the same operations in the
 * same order, no fused multiply-add). Exits 77 without CUDA or a device. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef LADLE_HAVE_CUDA

int main(void) {
  printf("skipped: built without CUDA\n");
  return 77;
}

#else

#include "core/rng.h"
#include "cuda/runtime.h"
#include "ops/color/equalize_kernel.h"
#include "ops/filter/filter_kernels.h"
#include "ops/reductions/reduce_kernels.h"
#include "test.h"
#include "test_cuda.h"

static ladle__rng rng;
static void *stream;

static int rnd_int(int lo, int hi) { return lo + (int)ladle__rng_below(&rng, (uint64_t)(hi - lo + 1)); }

static void fill(void *p, int t, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    double v = ladle__rng_uniform(&rng) * 300.0 - 20.0;
    if (t == LADLE_FLOAT32) ((float *)p)[i] = (float)v;
    else if (t == LADLE_UINT8) ((uint8_t *)p)[i] = (uint8_t)rnd_int(0, 255);
    else ((int32_t *)p)[i] = (int32_t)v;
  }
}

/* A device copy of n bytes of host memory. */
static void *to_device(const void *host, size_t n) {
  void *dev = NULL;
  CUDA_OK(cudaMalloc(&dev, n ? n : 1));
  if (n) CUDA_OK(cudaMemcpy(dev, host, n, cudaMemcpyHostToDevice));
  return dev;
}

static void *params(size_t bytes, void **dev) {
  void *host = NULL;
  CUDA_OK(cudaMallocHost(&host, bytes));
  CUDA_OK(cudaMalloc(dev, bytes));
  return host;
}

static void test_reductions_gpu(void) {
  static const int types[] = {LADLE_UINT8, LADLE_INT32, LADLE_FLOAT32};
  ladle__rng_init(&rng, 11, 1, 0, 0);
  for (int kind = LADLE__RED_SUM; kind <= LADLE__RED_VARIANCE; kind++)
    for (int ti = 0; ti < 3; ti++)
      for (int axes = 1; axes < 8; axes++) {
        enum { N = 3 };
        ladle__reduce_desc cpu[N], gpu[N];
        void *dev_in[N], *dev_out[N], *dev_mean[N], *host_in[N], *out_cpu[N], *out_gpu[N];
        float mean[N][64];
        int out_type = kind == LADLE__RED_SUM && types[ti] != LADLE_FLOAT32 ? LADLE_INT64
                       : kind <= LADLE__RED_MAX && kind != LADLE__RED_SUM ? types[ti]
                                                                          : LADLE_FLOAT32;
        for (int i = 0; i < N; i++) {
          ladle__reduce_desc *d = &cpu[i];
          memset(d, 0, sizeof *d);
          d->ndim = 3;
          d->shape[0] = rnd_int(1, 40), d->shape[1] = rnd_int(1, 70), d->shape[2] = rnd_int(1, 4);
          if (i == 0) d->shape[0] = 300, d->shape[1] = 301; /* several chunks */
          d->groups = d->members = 1;
          for (int k = 0; k < 3; k++) {
            d->reduced[k] = (axes >> k) & 1;
            if (d->reduced[k]) d->members *= d->shape[k];
            else d->groups *= d->shape[k];
          }
          d->chunks = (d->members + LADLE__REDUCE_CHUNK - 1) / LADLE__REDUCE_CHUNK;
          d->in_type = types[ti], d->out_type = out_type, d->kind = kind;
          d->mode = ladle__reduce_mode(kind, types[ti]);
          d->divisor = (double)(kind >= LADLE__RED_STD_DEV ? d->members + (d->members > 1 ? -1 : 0) : d->members);
          size_t in_bytes = (size_t)(d->groups * d->members) * ladle_dtype_size((ladle_dtype)types[ti]);
          size_t out_bytes = (size_t)d->groups * ladle_dtype_size((ladle_dtype)out_type);
          host_in[i] = malloc(in_bytes);
          fill(host_in[i], types[ti], d->groups * d->members);
          d->mean_count = d->groups <= 64 ? (int)d->groups : 1;
          for (int g = 0; g < d->mean_count; g++) mean[i][g] = (float)(ladle__rng_uniform(&rng) * 100.0);
          d->mean = mean[i];
          d->in = host_in[i];
          out_cpu[i] = malloc(out_bytes);
          out_gpu[i] = malloc(out_bytes);
          d->out = out_cpu[i];
          d->part = malloc(sizeof *d->part * (size_t)(d->groups * d->chunks));
          for (int64_t g = 0; g < d->groups; g++)
            for (int64_t c = 0; c < d->chunks; c++) d->part[g * d->chunks + c] = ladle__reduce_chunk(d, g, c);
          for (int64_t g = 0; g < d->groups; g++) ladle__reduce_finish(d, g);
          gpu[i] = *d;
          gpu[i].in = dev_in[i] = to_device(host_in[i], in_bytes);
          gpu[i].mean = dev_mean[i] = to_device(mean[i], sizeof mean[i]);
          CUDA_OK(cudaMalloc(&dev_out[i], out_bytes));
          gpu[i].out = dev_out[i];
          CUDA_OK(cudaMalloc((void **)&gpu[i].part, sizeof *d->part * (size_t)(d->groups * d->chunks)));
        }
        void *dev = NULL, *host = params(ladle__gpu_reduce_param_bytes(N), &dev);
        CHECK_OK(ladle__gpu_reduce(gpu, N, host, dev, ladle__gpu_reduce_param_bytes(N), stream));
        CUDA_OK(cudaDeviceSynchronize());
        for (int i = 0; i < N; i++) {
          size_t out_bytes = (size_t)cpu[i].groups * ladle_dtype_size((ladle_dtype)out_type);
          CUDA_OK(cudaMemcpy(out_gpu[i], dev_out[i], out_bytes, cudaMemcpyDeviceToHost));
          CHECK(memcmp(out_cpu[i], out_gpu[i], out_bytes) == 0);
          free(host_in[i]), free(out_cpu[i]), free(out_gpu[i]), free(cpu[i].part);
          cudaFree(dev_in[i]), cudaFree(dev_out[i]), cudaFree(dev_mean[i]), cudaFree(gpu[i].part);
        }
        cudaFreeHost(host), cudaFree(dev);
      }
}

static void test_equalize_gpu(void) {
  enum { N = 4 };
  ladle__rng_init(&rng, 12, 1, 0, 0);
  ladle__equalize_desc cpu[N], gpu[N];
  uint8_t *host_in[N], *out_cpu[N], *out_gpu[N];
  int64_t hists = 0;
  for (int i = 0; i < N; i++) {
    ladle__equalize_desc *d = &cpu[i];
    memset(d, 0, sizeof *d);
    int64_t h = rnd_int(1, 90), w = rnd_int(1, 90), c = 3;
    int chw = i % 2;
    d->channels = c, d->hists = c, d->pixels = h * w, d->frame_stride = h * w * c;
    d->chan_stride = chw ? h * w : 1, d->pix_stride = chw ? 1 : c;
    size_t n = (size_t)(h * w * c);
    host_in[i] = malloc(n), out_cpu[i] = malloc(n), out_gpu[i] = malloc(n);
    int lo = rnd_int(0, 200), span = i == 3 ? 0 : rnd_int(1, 55); /* sample 3: one value (unchanged) */
    for (size_t k = 0; k < n; k++) host_in[i][k] = (uint8_t)(lo + (span ? rnd_int(0, span) : 0));
    d->in = host_in[i], d->out = out_cpu[i];
    for (int64_t p = 0; p < d->hists; p++) {
      uint32_t hist[256] = {0};
      uint8_t lut[256];
      for (int64_t q = 0; q < d->pixels; q++) hist[d->in[ladle__equalize_offset(d, p, q)]]++;
      ladle__equalize_lut(lut, hist);
      for (int64_t q = 0; q < d->pixels; q++) {
        int64_t at = ladle__equalize_offset(d, p, q);
        out_cpu[i][at] = lut[d->in[at]];
      }
    }
    gpu[i] = *d;
    gpu[i].in = to_device(host_in[i], n);
    CUDA_OK(cudaMalloc((void **)&gpu[i].out, n));
    hists += d->hists;
  }
  uint32_t *hist = NULL;
  uint8_t *lut = NULL;
  CUDA_OK(cudaMalloc((void **)&hist, sizeof *hist * 256 * (size_t)hists));
  CUDA_OK(cudaMalloc((void **)&lut, 256 * (size_t)hists));
  for (int i = 0, at = 0; i < N; i++) {
    gpu[i].hist = hist + 256 * at, gpu[i].lut = lut + 256 * at;
    at += (int)gpu[i].hists;
  }
  void *dev = NULL, *host = params(ladle__gpu_equalize_param_bytes(N), &dev);
  CHECK_OK(ladle__gpu_equalize(gpu, N, hist, hists, host, dev, ladle__gpu_equalize_param_bytes(N), stream));
  CUDA_OK(cudaDeviceSynchronize());
  for (int i = 0; i < N; i++) {
    size_t n = (size_t)(cpu[i].pixels * cpu[i].channels);
    CUDA_OK(cudaMemcpy(out_gpu[i], gpu[i].out, n, cudaMemcpyDeviceToHost));
    CHECK(memcmp(out_cpu[i], out_gpu[i], n) == 0);
    free(host_in[i]), free(out_cpu[i]), free(out_gpu[i]);
    cudaFree((void *)gpu[i].in), cudaFree(gpu[i].out);
  }
  cudaFree(hist), cudaFree(lut), cudaFreeHost(host), cudaFree(dev);
}

static void test_filter_gpu(void) {
  enum { N = 3 };
  ladle__rng_init(&rng, 13, 1, 0, 0);
  for (int border = LADLE__BORDER_REFLECT_101; border <= LADLE__BORDER_CONSTANT; border++)
    for (int ti = 0; ti < 2; ti++) {
      int type = ti ? LADLE_FLOAT32 : LADLE_UINT8;
      ladle__conv_desc cpu[N], gpu[N];
      void *host_in[N], *out_cpu[N], *out_gpu[N];
      float taps[N][25];
      int total = 0;
      for (int i = 0; i < N; i++) {
        ladle__conv_desc *d = &cpu[i];
        memset(d, 0, sizeof *d);
        d->in_type = d->out_type = type, d->border = border, d->channel_last = i != 1;
        d->r = rnd_int(1, 5), d->s = rnd_int(1, 5), d->ay = rnd_int(0, d->r - 1), d->ax = rnd_int(0, d->s - 1);
        d->frames = 1, d->channels = 3, d->h = rnd_int(1, 40), d->w = rnd_int(1, 40);
        d->out_h = d->h, d->out_w = d->w, d->fill = (float)rnd_int(0, 255);
        for (int k = 0; k < d->r * d->s; k++) taps[i][k] = (float)(ladle__rng_uniform(&rng) - 0.4);
        d->taps = taps[i];
        total += d->r * d->s;
        size_t n = (size_t)(d->h * d->w * 3) * ladle_dtype_size((ladle_dtype)type);
        host_in[i] = malloc(n), out_cpu[i] = malloc(n), out_gpu[i] = malloc(n);
        fill(host_in[i], type, d->h * d->w * 3);
        d->in = host_in[i], d->out = out_cpu[i];
        for (int64_t e = 0; e < d->h * d->w * 3; e++) ladle__conv_element(d, e);
        gpu[i] = *d;
        gpu[i].in = to_device(host_in[i], n);
        CUDA_OK(cudaMalloc(&gpu[i].out, n));
      }
      size_t bytes = ladle__gpu_conv_param_bytes(N, total);
      void *dev = NULL, *host = params(bytes, &dev);
      CHECK_OK(ladle__gpu_conv(gpu, N, total, host, dev, bytes, stream));
      CUDA_OK(cudaDeviceSynchronize());
      for (int i = 0; i < N; i++) {
        size_t n = (size_t)(cpu[i].h * cpu[i].w * 3) * ladle_dtype_size((ladle_dtype)type);
        CUDA_OK(cudaMemcpy(out_gpu[i], gpu[i].out, n, cudaMemcpyDeviceToHost));
        CHECK(memcmp(out_cpu[i], out_gpu[i], n) == 0);
        free(host_in[i]), free(out_cpu[i]), free(out_gpu[i]);
        cudaFree((void *)gpu[i].in), cudaFree(gpu[i].out);
      }
      cudaFreeHost(host), cudaFree(dev);
    }
}

int main(void) {
  if (ladle__cuda_device_count() == 0) {
    printf("skipped: no CUDA device\n");
    return 77;
  }
  CHECK_OK(ladle__cuda_use_device(0, NULL));
  CHECK_OK(ladle__cuda_stream_create(0, &stream));
  RUN(test_reductions_gpu);
  RUN(test_equalize_gpu);
  RUN(test_filter_gpu);
  ladle__cuda_stream_destroy(stream);
  TEST_MAIN_END();
}

#endif
