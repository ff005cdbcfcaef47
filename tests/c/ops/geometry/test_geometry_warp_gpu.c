/* The CUDA kernels of warp_affine/rotate and paste against their CPU
 * references (ops/geometry/warp_kernel.h) on random images, matrices, sizes,
 * element types (shared by the batch, or mixed), channel counts, filters,
 * borders, 1-pixel images and outputs, rotate's matrices and canvases at
 * every angle class with unaligned images and outputs, and (paste)
 * unaligned canvases: bit-identical (both evaluate
 * warp_sample.h's float operations in the same order, each rounded on its
 * own). Exits 77 (ctest's SKIP) without CUDA or a device. */
#include "test_cuda.h" /* built without CUDA: all of this test, a skip */
#ifdef LADLE_HAVE_CUDA

#include <math.h>

#include "test_random.h"
#include "ops/geometry/warp_kernel.h"

enum { BATCH = 6, PARAM_BYTES = 1 << 16 };

static void *stream;
static void *host_params, *dev_params;


typedef struct gpu_sample {
  void *in_host, *out_cpu, *out_gpu;
  void *in_dev, *out_dev;
  size_t in_bytes, out_bytes;
} gpu_sample;

static void sample_alloc(gpu_sample *g, size_t in_bytes, size_t out_bytes) {
  g->in_bytes = in_bytes;
  g->out_bytes = out_bytes;
  g->in_host = malloc(in_bytes);
  g->out_cpu = malloc(out_bytes);
  g->out_gpu = malloc(out_bytes);
  g->in_dev = test_device_alloc(in_bytes);
  g->out_dev = test_device_alloc(out_bytes);
  uint8_t *p = g->in_host;
  for (size_t i = 0; i < in_bytes; i++) p[i] = (uint8_t)ladle__rng_u32(&rng);
}

static void sample_free(gpu_sample *g) {
  free(g->in_host);
  free(g->out_cpu);
  free(g->out_gpu);
  cudaFree(g->in_dev);
  cudaFree(g->out_dev);
}

static int sample_compare(gpu_sample *g) {
  test_download(g->out_gpu, g->out_dev, g->out_bytes, stream);
  return memcmp(g->out_cpu, g->out_gpu, g->out_bytes) == 0;
}

/* One round: n samples; types shared by the batch (as an operator's are) or,
 * when `mixed`, drawn per sample (the launcher's generic kernel). */
static void warp_round(int n, int mixed, int max_in, int max_out) {
  ladle__gpu_warp_desc d[BATCH];
  gpu_sample g[BATCH];
  int in_type = rnd_int(0, 3), out_type = rnd_int(0, 3);
  for (int i = 0; i < n; i++) {
    ladle__warp_params p;
    memset(&p, 0, sizeof p);
    p.in_h = rnd_int(1, max_in), p.in_w = rnd_int(1, max_in), p.channels = rnd_int(1, 4);
    p.out_h = rnd_int(1, max_out), p.out_w = rnd_int(1, max_out);
    if (rnd_int(0, 5) == 0) p.in_h = p.in_w = 1;
    if (rnd_int(0, 5) == 0) p.out_h = p.out_w = 1;
    p.in_type = mixed ? rnd_int(0, 3) : in_type, p.out_type = mixed ? rnd_int(0, 3) : out_type;
    p.linear = rnd_int(0, 1), p.use_fill = rnd_int(0, 1);
    double a = rnd_range(-M_PI, M_PI), s = rnd_range(0.3, 3);
    if (rnd_int(0, 3) == 0) a = 0, s = 1; /* integer or half-pixel shifts: taps exactly on pixels */
    p.m[0] = (float)(s * cos(a)), p.m[1] = (float)(-s * sin(a) + rnd_range(-0.5, 0.5));
    p.m[3] = (float)(s * sin(a)), p.m[4] = (float)(s * cos(a));
    p.m[2] = (float)rnd_range(-80, 80), p.m[5] = (float)rnd_range(-80, 80);
    if (a == 0) p.m[1] = 0, p.m[2] = (float)rnd_int(-3, 3) * 0.5f, p.m[5] = (float)rnd_int(-3, 3) * 0.5f;
    ladle__warp_fill(&p, rnd_range(-20, 300));
    static const size_t elem[] = {1, 4, 4, 2}; /* LADLE__WARP_U8, F32, I32, I16 */
    size_t in_elem = elem[p.in_type], out_elem = elem[p.out_type];
    sample_alloc(&g[i], (size_t)p.in_h * p.in_w * p.channels * in_elem,
                 (size_t)p.out_h * p.out_w * p.channels * out_elem);
    if (p.in_type == LADLE__WARP_F32) { /* finite floats, not raw bytes */
      float *f = g[i].in_host;
      for (size_t k = 0; k < g[i].in_bytes / 4; k++) f[k] = (float)rnd_range(-50, 300);
    }
    test_upload(g[i].in_dev, g[i].in_host, g[i].in_bytes);
    ladle__warp_affine(g[i].out_cpu, g[i].in_host, &p);
    d[i] = (ladle__gpu_warp_desc){g[i].in_dev, g[i].out_dev, p};
  }
  CHECK(ladle__gpu_warp_param_bytes(n) <= PARAM_BYTES);
  CHECK_OK(ladle__gpu_warp_affine(d, n, host_params, dev_params, PARAM_BYTES, stream));
  for (int i = 0; i < n; i++) {
    if (!sample_compare(&g[i]))
      fprintf(stderr, "warp: sample %d differs (%dx%dx%d -> %dx%d, types %d -> %d, linear %d, fill %d)\n", i,
              d[i].p.in_w, d[i].p.in_h, d[i].p.channels, d[i].p.out_w, d[i].p.out_h, d[i].p.in_type,
              d[i].p.out_type, d[i].p.linear, d[i].p.use_fill);
    CHECK(sample_compare(&g[i]));
    sample_free(&g[i]);
  }
}

static void test_warp(void) {
  for (int round = 0; round < 40; round++) warp_round(rnd_int(1, BATCH), round % 4 == 3, 70, 90);
  for (int round = 0; round < 8; round++) warp_round(rnd_int(1, BATCH), 0, 400, 500); /* many tiles */
}

/* Canvases at every alignment (the device pointers offset by 0..15 bytes),
 * 1x1 images and canvases, and canvases wider than the kernel's 16-byte chunks. */
static void test_paste(void) {
  for (int round = 0; round < 40; round++) {
    ladle__gpu_paste_desc d[BATCH];
    gpu_sample g[BATCH];
    int n = rnd_int(1, BATCH), big = round % 5 == 4;
    for (int i = 0; i < n; i++) {
      ladle__paste_params p;
      memset(&p, 0, sizeof p);
      p.in_h = rnd_int(1, big ? 300 : 60), p.in_w = rnd_int(1, big ? 300 : 60), p.channels = rnd_int(1, 4);
      if (rnd_int(0, 5) == 0) p.in_h = p.in_w = 1;
      p.out_h = p.in_h + (rnd_int(0, 5) ? rnd_int(0, big ? 300 : 60) : 0);
      p.out_w = p.in_w + (rnd_int(0, 5) ? rnd_int(0, big ? 300 : 60) : 0);
      p.x0 = rnd_int(0, p.out_w - p.in_w), p.y0 = rnd_int(0, p.out_h - p.in_h);
      for (int c = 0; c < 4; c++) p.fill[c] = (uint8_t)rnd_int(0, 255);
      size_t in_bytes = (size_t)p.in_h * p.in_w * p.channels, out_bytes = (size_t)p.out_h * p.out_w * p.channels;
      int in_off = rnd_int(0, 15), out_off = rnd_int(0, 15);
      sample_alloc(&g[i], in_bytes + (size_t)in_off, out_bytes + (size_t)out_off);
      /* guard bytes: what the kernel must not write */
      test_fill(g[i].out_dev, 0xa5, g[i].out_bytes);
      memset(g[i].out_cpu, 0xa5, g[i].out_bytes);
      test_upload(g[i].in_dev, g[i].in_host, g[i].in_bytes);
      ladle__paste((uint8_t *)g[i].out_cpu + out_off, (const uint8_t *)g[i].in_host + in_off, &p);
      d[i] = (ladle__gpu_paste_desc){(const uint8_t *)g[i].in_dev + in_off, (uint8_t *)g[i].out_dev + out_off, p};
    }
    CHECK_OK(ladle__gpu_paste(d, n, host_params, dev_params, PARAM_BYTES, stream));
    for (int i = 0; i < n; i++) {
      if (!sample_compare(&g[i]))
        fprintf(stderr, "paste: sample %d differs (%dx%dx%d at (%d, %d) on %dx%d)\n", i, d[i].p.in_w, d[i].p.in_h,
                d[i].p.channels, d[i].p.x0, d[i].p.y0, d[i].p.out_w, d[i].p.out_h);
      CHECK(sample_compare(&g[i]));
      sample_free(&g[i]);
    }
  }
}

/* rotate's matrices (warp.c's rotate_setup) on its enlarged canvas: angles
 * 0, 90, 180, 270, small, odd and random; uint8 input to uint8 or float,
 * 1, 3 or 4 channels, LINEAR and NN, fill value or clamped border, images
 * and canvases at byte offsets 0..3 (the kernel's 2- and 4-byte stores on
 * every alignment), 1-pixel images, odd sizes. */
static void test_rotate(void) {
  static const double angles[] = {0, 90, 180, 270, -90, 17, -33.3, 45, 1e-3, 123.4, 359.99};
  for (int round = 0; round < 60; round++) {
    ladle__gpu_warp_desc d[BATCH];
    gpu_sample g[BATCH];
    int offs[BATCH][2];
    const int n = rnd_int(1, BATCH), out_type = round % 3 == 2 ? LADLE__WARP_F32 : LADLE__WARP_U8;
    const int big = round % 10 == 9, C = round % 5 == 4 ? (round % 2 ? 1 : 4) : 3;
    for (int i = 0; i < n; i++) {
      ladle__warp_params p;
      memset(&p, 0, sizeof p);
      p.in_h = rnd_int(1, big ? 480 : 70), p.in_w = rnd_int(1, big ? 500 : 70), p.channels = C;
      if (rnd_int(0, 6) == 0) p.in_h = p.in_w = 1;
      p.in_type = LADLE__WARP_U8, p.out_type = out_type;
      p.linear = round % 7 != 3, p.use_fill = round % 4 != 1;
      ladle__warp_fill(&p, round % 3 ? 0 : rnd_range(-20, 300));
      const double deg = i < 2 ? angles[(round + i) % 11] : rnd_range(-360, 360);
      const float a = (float)deg * (float)(M_PI / 180.0), c = cosf(a), sn = sinf(a);
      const double ca = fabs(cos((double)a)), sa = fabs(sin((double)a));
      p.out_w = (int)ceil(ca * p.in_w + sa * p.in_h - 1e-2), p.out_h = (int)ceil(ca * p.in_h + sa * p.in_w - 1e-2);
      p.out_w += p.out_w % 2 != (sa <= ca ? p.in_w : p.in_h) % 2;
      p.out_h += p.out_h % 2 != (sa <= ca ? p.in_h : p.in_w) % 2;
      const float ow = (float)p.out_w * 0.5f, oh = (float)p.out_h * 0.5f;
      p.m[0] = c, p.m[1] = -sn, p.m[3] = sn, p.m[4] = c;
      p.m[2] = (c * -ow + -sn * -oh) + (float)p.in_w * 0.5f;
      p.m[5] = (sn * -ow + c * -oh) + (float)p.in_h * 0.5f;
      const size_t in_bytes = (size_t)p.in_h * p.in_w * C, out_bytes = (size_t)p.out_h * p.out_w * C * (out_type ? 4 : 1);
      offs[i][0] = rnd_int(0, 3), offs[i][1] = out_type ? 0 : rnd_int(0, 3);
      sample_alloc(&g[i], in_bytes + 3, out_bytes + 3);
      test_fill(g[i].out_dev, 0xa5, g[i].out_bytes); /* bytes the kernel must not write */
      memset(g[i].out_cpu, 0xa5, g[i].out_bytes);
      test_upload(g[i].in_dev, g[i].in_host, g[i].in_bytes);
      ladle__warp_affine((uint8_t *)g[i].out_cpu + offs[i][1], (const uint8_t *)g[i].in_host + offs[i][0], &p);
      d[i] = (ladle__gpu_warp_desc){(const uint8_t *)g[i].in_dev + offs[i][0], (uint8_t *)g[i].out_dev + offs[i][1], p};
    }
    CHECK_OK(ladle__gpu_warp_affine(d, n, host_params, dev_params, PARAM_BYTES, stream));
    for (int i = 0; i < n; i++) {
      if (!sample_compare(&g[i]))
        fprintf(stderr, "rotate: sample %d differs (%dx%dx%d -> %dx%d, out type %d, linear %d, fill %d, offsets %d %d)\n",
                i, d[i].p.in_w, d[i].p.in_h, C, d[i].p.out_w, d[i].p.out_h, out_type, d[i].p.linear, d[i].p.use_fill,
                offs[i][0], offs[i][1]);
      CHECK(sample_compare(&g[i]));
      sample_free(&g[i]);
    }
  }
}

static void test_bad_arguments(void) {
  ladle__gpu_warp_desc d;
  memset(&d, 0, sizeof d);
  CHECK(ladle__gpu_warp_affine(&d, 1, host_params, dev_params, PARAM_BYTES, stream) == LADLE_ERROR_INVALID_ARGUMENT);
  CHECK(ladle__gpu_warp_affine(&d, 0, host_params, dev_params, PARAM_BYTES, stream) == LADLE_ERROR_INVALID_ARGUMENT);
  ladle__gpu_paste_desc q;
  memset(&q, 0, sizeof q);
  CHECK(ladle__gpu_paste(&q, 1, host_params, dev_params, 1, stream) == LADLE_ERROR_INVALID_ARGUMENT);
}

/* Not a check: times op_bench's rows (256 uint8 HWC images of about
 * 463 x 403: rotate 17 degrees on the enlarged canvas, warp_affine by its
 * matrix, both bilinear with fill 0; paste ratio 2 at the centre) and prints
 * the stream time per batch (parameter upload and kernel) and the host call. */
enum { TB = 256 };

static ladle_status launch_warp(const void *d, void *host, void *dev, size_t bytes) {
  return ladle__gpu_warp_affine(d, TB, host, dev, bytes, stream);
}

static ladle_status launch_paste(const void *d, void *host, void *dev, size_t bytes) {
  return ladle__gpu_paste(d, TB, host, dev, bytes, stream);
}

static void time_launch(const char *name, test_launch_fn launch, const void *d, size_t bytes) {
  double host_ms = 0;
  float ms = test_time_launches(launch, d, bytes, stream, &host_ms);
  fprintf(stderr, "  time %-12s stream %.3f ms/batch, host call %.3f ms\n", name, ms, host_ms);
}

static void report_times(void) {
  static ladle__gpu_warp_desc wd[TB];
  static ladle__gpu_paste_desc pd[TB];
  static void *din[TB], *dout[TB];
  size_t max_bytes = 540 * 470 * 3;
  uint8_t *buf = malloc(max_bytes);
  for (size_t i = 0; i < max_bytes; i++) buf[i] = (uint8_t)ladle__rng_u32(&rng);
  for (int i = 0; i < TB; i++) {
    int w = rnd_int(386, 540), h = rnd_int(336, 470);
    din[i] = test_device_copy(buf, (size_t)w * h * 3);
    dout[i] = test_device_alloc((size_t)w * h * 3 * 4); /* paste's canvas is the largest */
    ladle__warp_params p;
    memset(&p, 0, sizeof p);
    p.in_h = h, p.in_w = w, p.channels = 3, p.linear = 1, p.use_fill = 1;
    ladle__warp_fill(&p, 0);
    float a = 17.0f * (float)(M_PI / 180.0), c = cosf(a), sn = sinf(a);
    p.out_w = (int)ceil(fabs(c) * w + fabs(sn) * h), p.out_h = (int)ceil(fabs(c) * h + fabs(sn) * w);
    float ow = (float)p.out_w * 0.5f, oh = (float)p.out_h * 0.5f;
    p.m[0] = c, p.m[1] = -sn, p.m[3] = sn, p.m[4] = c;
    p.m[2] = (c * -ow + -sn * -oh) + (float)w * 0.5f;
    p.m[5] = (sn * -ow + c * -oh) + (float)h * 0.5f;
    wd[i] = (ladle__gpu_warp_desc){din[i], dout[i], p};
    ladle__paste_params q = {h, w, 2 * h, 2 * w, 3, w / 2, h / 2, {0, 0, 0, 0}};
    pd[i] = (ladle__gpu_paste_desc){din[i], dout[i], q};
  }
  free(buf);
  time_launch("rotate", launch_warp, wd, ladle__gpu_warp_param_bytes(TB));
  static const float m[6] = {0.9f, 0.1f, 10.0f, -0.1f, 0.9f, 20.0f};
  for (int i = 0; i < TB; i++) {
    wd[i].p.out_h = wd[i].p.in_h, wd[i].p.out_w = wd[i].p.in_w;
    memcpy(wd[i].p.m, m, sizeof m);
  }
  time_launch("warp_affine", launch_warp, wd, ladle__gpu_warp_param_bytes(TB));
  time_launch("paste", launch_paste, pd, ladle__gpu_paste_param_bytes(TB));
  for (int i = 0; i < TB; i++) {
    cudaFree(din[i]);
    cudaFree(dout[i]);
  }
}

int main(void) {
  TEST_SKIP_WITHOUT_DEVICE();
  ladle__rng_init(&rng, 2024, 7, 0, 0);
  CHECK_OK(ladle__cuda_use_device(0, NULL));
  CHECK_OK(ladle__cuda_stream_create(0, &stream));
  host_params = test_pinned_alloc(PARAM_BYTES);
  dev_params = test_device_alloc(PARAM_BYTES);
  RUN(test_warp);
  RUN(test_rotate);
  RUN(test_paste);
  RUN(test_bad_arguments);
  RUN(report_times);
  cudaFreeHost(host_params);
  cudaFree(dev_params);
  ladle__cuda_stream_destroy(stream);
  TEST_MAIN_END();
}

#endif /* LADLE_HAVE_CUDA */
