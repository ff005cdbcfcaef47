/* The CUDA kernels ladle.auto_aug's operators added, against their CPU
 * arithmetic on random inputs: reductions (every kind, input type and axis
 * set, empty and one-element samples), equalize (interleaved and planar,
 * unaligned) and filter (every border mode).
 * Agreement asserted: bit-identical (the kernels and the CPU operators share
 * reduce_core.h, equalize_core.h and conv_core.h: the same operations in the
 * same order, no fused multiply-add; the GPU's warp order is the order
 * reduce_core.h defines). Exits 77 without CUDA or a device. */
#include "test_cuda.h" /* built without CUDA: all of this test, a skip */
#ifdef LADLE_HAVE_CUDA

#include "test_random.h"
#include "ops/color/equalize_kernel.h"
#include "ops/filter/filter_kernels.h"
#include "ops/reductions/reduce_kernels.h"

static void *stream;


static uint64_t rnd_u64(void) { return (uint64_t)ladle__rng_u32(&rng) << 32 | ladle__rng_u32(&rng); }

static void fill(void *p, int t, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    double v = ladle__rng_uniform(&rng) * 300.0 - 20.0;
    if (t == LADLE_FLOAT32) ((float *)p)[i] = (float)v;
    else if (t == LADLE_UINT8) ((uint8_t *)p)[i] = (uint8_t)rnd_int(0, 255);
    else ((int32_t *)p)[i] = (int32_t)v;
  }
}

/* n random elements of any type the reductions accept: small integers of
 * both signs, wide ones for the 32- and 64-bit types (sums that wrap,
 * conversions to double that round), fractional floats. */
static void fill_any(void *p, int t, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    if (ladle__dtype_is_float(t)) {
      ladle__store_f64(p, (size_t)i, t, ladle__rng_uniform(&rng) * 300.0 - 120.0);
    } else if (t == LADLE_UINT64) {
      ((uint64_t *)p)[i] = rnd_u64();
    } else {
      int64_t v = (int64_t)rnd_int(-300, 300);
      if (ladle_dtype_size((ladle_dtype)t) >= 4 && i % 3 == 0) v = (int64_t)(rnd_u64() >> 1) - INT64_MAX / 2;
      ladle__store_i64(p, (size_t)i, t, v); /* saturates into the type */
    }
  }
}

/* A parameter buffer of `bytes`: the pinned one returned, the device one in *dev. */
static void *params(size_t bytes, void **dev) {
  *dev = test_device_alloc(bytes);
  return test_pinned_alloc(bytes);
}

/* The output type reductions.c gives (alt: the `dtype` argument's choice). */
static int red_out_type(int kind, int t, int alt) {
  if (kind == LADLE__RED_MIN || kind == LADLE__RED_MAX) return t;
  if (alt) return kind == LADLE__RED_SUM ? LADLE_FLOAT64 : kind == LADLE__RED_MEAN ? LADLE_INT16 : LADLE_FLOAT64;
  if (kind != LADLE__RED_SUM || ladle__dtype_is_float(t)) return LADLE_FLOAT32;
  return t == LADLE_UINT8 || t == LADLE_UINT16 || t == LADLE_UINT32 || t == LADLE_UINT64 ? LADLE_UINT64 : LADLE_INT64;
}

/* One launch of N samples of `ndim` axes reduced by mask `axes`, compared
 * bit for bit with reduce_core.h on the CPU. Sample 0 is large (several
 * chunks, odd extents), 1 random, 2 one element (or, for sums, an empty
 * reduced axis), 3 a reduced extent below 17 (narrow lanes). */
static void reduce_case(int kind, int type, int ndim, int axes, int alt) {
  enum { N = 4 };
  ladle__reduce_desc cpu[N], gpu[N];
  void *dev_in[N], *dev_mean[N], *host_in[N], *out_cpu[N], *out_gpu[N];
  float *mean[N];
  int out_type = red_out_type(kind, type, alt), n = 0;
  for (int i = 0; i < N; i++) {
    ladle__reduce_desc *d = &cpu[n];
    memset(d, 0, sizeof *d);
    d->ndim = ndim;
    for (int k = 0; k < ndim; k++) d->shape[k] = rnd_int(1, ndim > 3 ? 9 : 30);
    if (i == 0) {
      d->shape[0] = ndim == 1 ? 90001 : 301, d->shape[ndim > 1 ? 1 : 0] = ndim == 1 ? 90001 : 299;
      if (ndim > 2) d->shape[2] = 3;
    }
    if (i == 2)
      for (int k = 0; k < ndim; k++) d->shape[k] = 1;
    if (i == 2 && kind == LADLE__RED_SUM && axes)
      for (int k = 0; k < ndim; k++)
        if ((axes >> k) & 1) d->shape[k] = 0, k = ndim; /* no member: the sum is 0 */
    if (i == 3)
      for (int k = 0; k < ndim; k++)
        if ((axes >> k) & 1) d->shape[k] = rnd_int(1, 4);
    d->groups = d->members = 1;
    for (int k = 0; k < ndim; k++) {
      d->reduced[k] = (axes >> k) & 1;
      if (d->reduced[k]) d->members *= d->shape[k];
      else d->groups *= d->shape[k];
    }
    if (d->members - (kind >= LADLE__RED_STD_DEV ? i % 2 : 0) <= 0 && kind != LADLE__RED_SUM) d->shape[0] = 0, d->groups = 0;
    if (!d->groups) continue; /* reductions.c launches no empty output */
    d->chunks = (d->members + LADLE__REDUCE_CHUNK - 1) / LADLE__REDUCE_CHUNK;
    if (d->chunks < 1) d->chunks = 1;
    d->in_type = type, d->out_type = out_type, d->kind = kind;
    d->mode = ladle__reduce_mode(kind, type);
    d->divisor = (double)(kind >= LADLE__RED_STD_DEV ? d->members - (i % 2) : d->members);
    size_t in_bytes = (size_t)(d->groups * d->members) * ladle_dtype_size((ladle_dtype)type);
    size_t out_bytes = (size_t)d->groups * ladle_dtype_size((ladle_dtype)out_type);
    host_in[n] = malloc(in_bytes ? in_bytes : 1);
    fill_any(host_in[n], type, d->groups * d->members);
    d->mean_count = i % 2 ? (int)d->groups : 1;
    mean[n] = malloc(sizeof(float) * (size_t)d->mean_count);
    for (int g = 0; g < d->mean_count; g++) mean[n][g] = (float)(ladle__rng_uniform(&rng) * 100.0 - 30.0);
    d->mean = mean[n];
    d->in = host_in[n];
    out_cpu[n] = malloc(out_bytes);
    out_gpu[n] = malloc(out_bytes);
    d->out = out_cpu[n];
    d->part = malloc(sizeof *d->part * (size_t)(d->groups * d->chunks));
    for (int64_t g = 0; g < d->groups; g++)
      for (int64_t c = 0; c < d->chunks; c++) d->part[g * d->chunks + c] = ladle__reduce_chunk(d, g, c);
    for (int64_t g = 0; g < d->groups; g++) ladle__reduce_finish(d, g);
    gpu[n] = *d;
    gpu[n].in = dev_in[n] = test_device_copy(host_in[n], in_bytes);
    gpu[n].mean = dev_mean[n] = test_device_copy(mean[n], sizeof(float) * (size_t)d->mean_count);
    gpu[n].out = test_device_alloc(out_bytes);
    gpu[n].part = NULL; /* as reductions.c: scratch only for groups of several chunks */
    if (d->chunks > 1) gpu[n].part = test_device_alloc(sizeof *d->part * (size_t)(d->groups * d->chunks));
    n++;
  }
  if (!n) return;
  void *dev = NULL, *host = params(ladle__gpu_reduce_param_bytes(n), &dev);
  CHECK_OK(ladle__gpu_reduce(gpu, n, host, dev, ladle__gpu_reduce_param_bytes(n), stream));
  for (int i = 0; i < n; i++) {
    size_t out_bytes = (size_t)cpu[i].groups * ladle_dtype_size((ladle_dtype)out_type);
    test_download(out_gpu[i], gpu[i].out, out_bytes, stream);
    if (memcmp(out_cpu[i], out_gpu[i], out_bytes) != 0) {
      CHECK(0);
      fprintf(stderr, "  kind %d type %s ndim %d axes %d sample %d (groups %lld members %lld) differ\n", kind,
              ladle_dtype_name((ladle_dtype)type), ndim, axes, i, (long long)cpu[i].groups,
              (long long)cpu[i].members);
    }
    free(host_in[i]), free(out_cpu[i]), free(out_gpu[i]), free(cpu[i].part), free(mean[i]);
    cudaFree(dev_in[i]), cudaFree(gpu[i].out), cudaFree(dev_mean[i]), cudaFree(gpu[i].part);
  }
  cudaFreeHost(host), cudaFree(dev);
}

/* Every kind, every input type, every axis set of 1-, 3- and 4-D samples
 * (none, all, inner, outer, mixed), default and other output types. */
static void test_reductions_gpu(void) {
  static const int types[] = {LADLE_UINT8, LADLE_INT8,  LADLE_UINT16, LADLE_INT16,   LADLE_UINT32,
                              LADLE_INT32, LADLE_UINT64, LADLE_INT64, LADLE_FLOAT32, LADLE_FLOAT64};
  ladle__rng_init(&rng, 11, 1, 0, 0);
  for (int kind = LADLE__RED_SUM; kind <= LADLE__RED_VARIANCE; kind++)
    for (int ti = 0; ti < (int)(sizeof types / sizeof types[0]); ti++) {
      for (int axes = 0; axes < 2; axes++) reduce_case(kind, types[ti], 1, axes, ti % 2);
      for (int axes = 0; axes < 8; axes++) reduce_case(kind, types[ti], 3, axes, 0);
      for (int axes = 0; axes < 16; axes += 1 + (ti % 3)) reduce_case(kind, types[ti], 4, axes, ti % 2);
    }
}

/* Samples of every shape equalize.c describes: interleaved channels (HWC,
 * FHWC; 1, 3, 4 and 40 channels: the last beyond the shared counters),
 * planes (CHW, FCHW, HW), one pixel, sizes below and above a block's span,
 * one value only (left as it is); bases at every offset mod 4, output and
 * input aligned differently (the byte path). */
static void test_equalize_gpu(void) {
  enum { N = 12 };
  ladle__rng_init(&rng, 12, 1, 0, 0);
  ladle__equalize_desc cpu[N], gpu[N];
  uint8_t *host_in[N], *out_cpu[N], *out_gpu[N], *dev_in[N], *dev_out[N];
  static const int chans[N] = {3, 3, 1, 4, 3, 40, 3, 1, 3, 3, 2, 3};
  int64_t hists = 0;
  for (int i = 0; i < N; i++) {
    ladle__equalize_desc *d = &cpu[i];
    memset(d, 0, sizeof *d);
    int64_t h = rnd_int(1, 90), w = rnd_int(1, 90), c = chans[i], frames = i == 4 || i == 9 ? 3 : 1;
    if (i == 1) h = 301, w = 203; /* several blocks per run */
    if (i == 6) h = w = 1;
    int planar = i == 2 || i == 7 || i == 8 || i == 9;
    d->channels = c, d->hists = frames * c, d->pixels = h * w, d->frame_stride = h * w * c;
    d->chan_stride = planar ? h * w : 1, d->pix_stride = planar ? 1 : c;
    size_t n = (size_t)(frames * h * w * c);
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
    int in_off = i % 4, out_off = i % 3 == 0 ? in_off : (i + 1) % 4;
    dev_in[i] = test_device_alloc(n + 4);
    dev_out[i] = test_device_alloc(n + 4);
    test_upload(dev_in[i] + in_off, host_in[i], n);
    gpu[i].in = dev_in[i] + in_off, gpu[i].out = dev_out[i] + out_off;
    hists += d->hists;
  }
  uint32_t *hist = test_device_alloc(sizeof *hist * 256 * (size_t)hists);
  uint8_t *lut = test_device_alloc(256 * (size_t)hists);
  for (int i = 0, at = 0; i < N; i++) {
    gpu[i].hist = hist + 256 * at, gpu[i].lut = lut + 256 * at;
    at += (int)gpu[i].hists;
  }
  void *dev = NULL, *host = params(ladle__gpu_equalize_param_bytes(N), &dev);
  CHECK_OK(ladle__gpu_equalize(gpu, N, hist, hists, host, dev, ladle__gpu_equalize_param_bytes(N), stream));
  for (int i = 0; i < N; i++) {
    size_t n = (size_t)(cpu[i].hists * cpu[i].pixels);
    test_download(out_gpu[i], gpu[i].out, n, stream);
    if (memcmp(out_cpu[i], out_gpu[i], n) != 0) {
      CHECK(0);
      fprintf(stderr, "  equalize sample %d differs\n", i);
    }
    free(host_in[i]), free(out_cpu[i]), free(out_gpu[i]);
    cudaFree(dev_in[i]), cudaFree(dev_out[i]);
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
        gpu[i].in = test_device_copy(host_in[i], n);
        gpu[i].out = test_device_alloc(n);
      }
      size_t bytes = ladle__gpu_conv_param_bytes(N, total);
      void *dev = NULL, *host = params(bytes, &dev);
      CHECK_OK(ladle__gpu_conv(gpu, N, total, host, dev, bytes, stream));
      for (int i = 0; i < N; i++) {
        size_t n = (size_t)(cpu[i].h * cpu[i].w * 3) * ladle_dtype_size((ladle_dtype)type);
        test_download(out_gpu[i], gpu[i].out, n, stream);
        CHECK(memcmp(out_cpu[i], out_gpu[i], n) == 0);
        free(host_in[i]), free(out_cpu[i]), free(out_gpu[i]);
        cudaFree((void *)gpu[i].in), cudaFree(gpu[i].out);
      }
      cudaFreeHost(host), cudaFree(dev);
    }
}

int main(void) {
  TEST_SKIP_WITHOUT_DEVICE();
  CHECK_OK(ladle__cuda_use_device(0, NULL));
  CHECK_OK(ladle__cuda_stream_create(0, &stream));
  RUN(test_reductions_gpu);
  RUN(test_equalize_gpu);
  RUN(test_filter_gpu);
  ladle__cuda_stream_destroy(stream);
  TEST_MAIN_END();
}

#endif
