/* GPU kernels against their CPU references on random inputs (resize, fused
 * crop+resize+normalize, crop_mirror_normalize, crop/flip), nvJPEG
 * against the CPU decoder, and the CUDA runtime glue (errors, the sticky-error
 * latch, events, allocators). Exits 77 (ctest's SKIP) without CUDA or a device.
 *
 * Agreement asserted:
 *   resize u8/f32, fused (every dtype/layout), crop_mirror_normalize, crop/flip:
 *   bit-identical to the CPU reference (the kernels repeat its float
 *   operations in the same order, without FMA contraction).
 *   nvJPEG vs libjpeg-turbo (ISLOW, fancy upsampling): not bit-exact (other IDCT
 *   and chroma upsampling). On smooth synthetic images: mean |diff| <= 1.5 and
 *   max |diff| <= 24 per image; on tests/data's high-frequency images: mean
 *   <= 8. The measured values are printed; tighten the bounds once seen. */
#include "test_cuda.h" /* built without CUDA: all of this test, a skip */
#ifdef LADLE_HAVE_CUDA

#include <math.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jpeglib.h>

#include "codec/image.h"
#include "codec/nvjpeg.h"
#include "core/error.h"
#include "test_random.h"
#include "ops/kernels/dtype.h"
#include "ops/kernels/gpu_kernels.h"
#include "ops/kernels/half.h"
#include "ops/geometry/normalize_kernel.h"
#include "ops/geometry/resize_kernel.h"

static void *stream;

static void rng_reset(uint64_t test) { ladle__rng_init(&rng, 4321, test, 0, 0); }

static void fill_random(uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++) p[i] = (uint8_t)rnd();
}

/* A size from 1 to hi, small ones (1..8) one time in five. */
static int rnd_size(int hi) { return rnd_int(0, 4) == 0 ? rnd_int(1, 8 < hi ? 8 : hi) : rnd_int(1, hi); }

/* ------------------------------------------------------------------------ */
/* CUDA helpers (and test_cuda.h's buffers)                                  */
/* ------------------------------------------------------------------------ */

static void sync_stream(void) { CUDA_OK(cudaStreamSynchronize((cudaStream_t)stream)); }

/* Parameter buffers for one launch, freed by params_free. */
typedef struct params {
  void *host, *dev;
  size_t bytes;
} params;

static params params_alloc(size_t bytes) {
  params p = {test_pinned_alloc(bytes), test_device_alloc(bytes), bytes};
  return p;
}

static void params_free(params *p) {
  cudaFreeHost(p->host);
  cudaFree(p->dev);
}

static size_t dtype_size(ladle_dtype t) { return ladle_dtype_size(t); }

/* Element i of an array of type t, as a double (for "max difference" reports). */
static double value_at(const void *p, size_t i, ladle_dtype t) { return ladle__load_as_f64(p, i, t); }

/* Compares n elements bit for bit; returns the number of differing elements and
 * raises *max_diff to the largest difference in value. */
static size_t compare(const void *gpu, const void *cpu, size_t n, ladle_dtype t, double *max_diff) {
  size_t es = dtype_size(t), bad = 0;
  for (size_t i = 0; i < n; i++) {
    if (memcmp((const uint8_t *)gpu + i * es, (const uint8_t *)cpu + i * es, es) == 0) continue;
    bad++;
    double a = value_at(gpu, i, t), b = value_at(cpu, i, t);
    double d = (isnan(a) || isnan(b)) ? INFINITY : fabs(a - b);
    if (d > *max_diff) *max_diff = d;
  }
  return bad;
}

/* ------------------------------------------------------------------------ */
/* Resize                                                                     */
/* ------------------------------------------------------------------------ */

/* Plans one axis with a random source window and output size. */
static void random_axis(ladle__resize_axis *a, int in_size, int max_out, ladle__interp interp, int aa) {
  double lo, len;
  switch (rnd_int(0, 3)) {
    case 0: lo = 0; len = in_size; break;                                  /* whole axis */
    case 1: len = rnd_range(0.05, 1.0) * in_size; lo = rnd_range(0, in_size - len); break; /* inside */
    case 2: lo = rnd_range(-0.3, 0.8) * in_size; len = rnd_range(0.05, 1.3) * in_size; break; /* around */
    default: lo = rnd_range(-2.0, in_size + 1.0); len = rnd_range(0.5, 4.0); break; /* tiny, maybe outside */
  }
  if (len <= 0) len = 0.5;
  int out = rnd_int(0, 2) == 0 ? rnd_size(max_out) : (int)fmax(1.0, fmin(max_out, len * rnd_range(0.1, 3.0)));
  ladle_status st = ladle__resize_axis_plan(a, in_size, lo, len, out, interp, aa);
  CHECK(st == LADLE_OK);
  if (st != LADLE_OK) fprintf(stderr, "plan: %s\n", ladle_last_error());
}

typedef struct rs_sample {
  int in_w, in_h, c;
  int64_t stride;
  void *in, *ref, *din, *dout;
  size_t in_bytes, out_bytes;
  ladle__resize_axis ax, ay;
  ladle__cmn_params cmn;
} rs_sample;

static void rs_free(rs_sample *s, int n) {
  for (int i = 0; i < n; i++) {
    free(s[i].in);
    free(s[i].ref);
    cudaFree(s[i].din);
    cudaFree(s[i].dout);
    ladle__resize_axis_free(&s[i].ax);
    ladle__resize_axis_free(&s[i].ay);
  }
}

/* A random image (with random row padding) and random tables for it. */
static void rs_make(rs_sample *s, ladle_dtype type, int max_in, int max_out, int channels) {
  memset(s, 0, sizeof *s);
  s->in_w = rnd_size(max_in);
  s->in_h = rnd_size(max_in);
  s->c = channels;
  s->stride = (int64_t)s->in_w * s->c + rnd_int(0, 3) * rnd_int(0, 5);
  s->in_bytes = (size_t)s->stride * s->in_h * dtype_size(type);
  s->in = malloc(s->in_bytes);
  if (type == LADLE_UINT8) {
    fill_random(s->in, s->in_bytes);
  } else {
    float *f = s->in;
    for (size_t i = 0; i < s->in_bytes / 4; i++) f[i] = (float)rnd_range(-20.0, 300.0);
  }
  ladle__interp fx = (ladle__interp)rnd_int(0, 5), fy = rnd_int(0, 3) ? fx : (ladle__interp)rnd_int(0, 5);
  int aa = rnd_int(0, 3) != 0;
  random_axis(&s->ax, s->in_w, max_out, fx, aa);
  random_axis(&s->ay, s->in_h, max_out, fy, aa);
  if (rnd_int(0, 1)) {
    /* DALI's planner (resampling="dali"): the same output sizes, a random
     * window (sometimes flipped, sometimes past the borders), ties rounded up. */
    float lo[2], hi[2];
    const int in[2] = {s->in_w, s->in_h};
    for (int d = 0; d < 2; d++) {
      double l = rnd_int(0, 1) ? 0 : rnd_range(-0.3, 0.8) * in[d];
      double len = rnd_int(0, 1) ? in[d] - l : rnd_range(0.05, 1.3) * in[d];
      if (len < 0.5) len = 0.5;
      lo[d] = (float)l, hi[d] = (float)(l + len);
      if (rnd_int(0, 4) == 0) { float t = lo[d]; lo[d] = hi[d]; hi[d] = t; }
    }
    ladle__interp mn = fx, mg = rnd_int(0, 1) ? fx : fy;
    ladle_status st = ladle__resize_plan_dali(&s->ax, &s->ay, s->in_w, s->in_h, lo, hi, s->ax.out_size,
                                              s->ay.out_size, mn, mg, aa);
    CHECK(st == LADLE_OK);
    CHECK(s->ay.round_up == LADLE__ROUND_UP || s->ay.round_up == LADLE__ROUND_DALI_ROWS);
  }
  s->din = test_device_copy(s->in, s->in_bytes);
}

static void test_resize(void) {
  double max_diff[2] = {0, 0};
  size_t bad[2] = {0, 0}, pixels = 0;
  for (int round = 0; round < 24; round++) {
    rng_reset(100 + round);
    ladle_dtype type = round % 2 ? LADLE_FLOAT32 : LADLE_UINT8;
    int n = rnd_int(1, 16);
    rs_sample s[16];
    ladle__gpu_resize_desc d[16];
    for (int i = 0; i < n; i++) {
      rs_make(&s[i], type, round < 4 ? 40 : 700, round < 4 ? 40 : 400, rnd_int(1, 4));
      int ow = s[i].ax.out_size, oh = s[i].ay.out_size;
      s[i].out_bytes = (size_t)ow * oh * s[i].c * dtype_size(type);
      s[i].ref = malloc(s[i].out_bytes);
      s[i].dout = test_device_alloc(s[i].out_bytes);
      void *scratch = malloc(ladle__resize_scratch_size(&s[i].ax, &s[i].ay, s[i].in_h, s[i].c));
      if (type == LADLE_UINT8)
        ladle__resize_u8(s[i].ref, s[i].in, s[i].in_h, (int)s[i].stride, s[i].c, &s[i].ax, &s[i].ay, scratch);
      else
        ladle__resize_f32(s[i].ref, s[i].in, s[i].in_h, (int)s[i].stride, s[i].c, &s[i].ax, &s[i].ay, scratch);
      free(scratch);
      d[i] = (ladle__gpu_resize_desc){s[i].din, s[i].dout, s[i].in_h, s[i].in_w, s[i].stride, s[i].c, &s[i].ax,
                                      &s[i].ay, NULL};
    }
    params p = params_alloc(ladle__gpu_resize_param_bytes(d, n));
    CHECK_OK(ladle__gpu_resize(d, n, type, p.host, p.dev, p.bytes, stream));
    for (int i = 0; i < n; i++) {
      void *got = malloc(s[i].out_bytes);
      test_download(got, s[i].dout, s[i].out_bytes, stream);
      size_t elems = s[i].out_bytes / dtype_size(type);
      size_t b = compare(got, s[i].ref, elems, type, &max_diff[type == LADLE_FLOAT32]);
      if (b && !bad[type == LADLE_FLOAT32])
        fprintf(stderr, "resize round %d sample %d: %dx%dx%d -> %dx%d (taps %d, %d): %zu of %zu differ\n", round, i,
                s[i].in_w, s[i].in_h, s[i].c, s[i].ax.out_size, s[i].ay.out_size, s[i].ax.taps, s[i].ay.taps, b,
                elems);
      bad[type == LADLE_FLOAT32] += b;
      pixels += elems;
      free(got);
    }
    params_free(&p);
    rs_free(s, n);
  }
  fprintf(stderr, "  resize: %zu elements; uint8 %zu differ (max %g), float32 %zu differ (max %g)\n", pixels, bad[0],
          max_diff[0], bad[1], max_diff[1]);
  CHECK(bad[0] == 0);
  CHECK(bad[1] == 0);
}

/* ------------------------------------------------------------------------ */
/* crop_mirror_normalize parameters                                           */
/* ------------------------------------------------------------------------ */

/* Every dtype, the five of the hot path first. */
static const ladle_dtype all_types[LADLE_DTYPE_COUNT] = {
    LADLE_UINT8, LADLE_INT32,  LADLE_FLOAT32, LADLE_FLOAT16, LADLE_INT64,   LADLE_INT8,
    LADLE_INT16, LADLE_UINT16, LADLE_UINT32,  LADLE_UINT64,  LADLE_FLOAT64, LADLE_BOOL};

/* Random parameters for an image of w x h with c channels; dtype/chw/pad fixed
 * by the caller for the batch. */
static void random_cmn(ladle__cmn_params *p, int w, int h, int c, ladle_dtype dtype, int chw, int pad) {
  memset(p, 0, sizeof *p);
  p->channels = c;
  p->dtype = dtype;
  p->chw = chw;
  p->pad_output = pad;
  p->mirror = rnd_int(0, 1);
  if (rnd_int(0, 1)) {
    p->x0 = 0, p->y0 = 0, p->w = w, p->h = h;
  } else {
    p->w = rnd_int(1, w + 12);
    p->h = rnd_int(1, h + 12);
    p->x0 = rnd_int(-8, w);
    p->y0 = rnd_int(-8, h);
  }
  for (int k = 0; k < c; k++) {
    p->mean[k] = (float)rnd_range(0, 255);
    p->inv_std[k] = (float)(1.0 / rnd_range(1, 100));
    p->fill[k] = (float)rnd_range(-300, 300);
  }
  p->scale = rnd_int(0, 1) ? 1.0f : (float)rnd_range(0.25, 64);
  p->shift = dtype == LADLE_UINT8 ? (float)rnd_range(0, 255) : (float)rnd_range(-3, 3);
  if (dtype == LADLE_FLOAT16 && rnd_int(0, 3) == 0) p->scale = 3000.0f; /* overflow to inf */
}

static void test_fused(void) {
  double max_diff = 0;
  size_t bad = 0, elems_total = 0;
  for (int round = 0; round < 30; round++) {
    rng_reset(200 + round);
    ladle_dtype dtype = all_types[round % LADLE_DTYPE_COUNT];
    int chw = (round / LADLE_DTYPE_COUNT) % 2, pad = rnd_int(0, 1);
    int n = rnd_int(1, 12);
    rs_sample s[12];
    ladle__gpu_resize_desc d[12];
    ladle__cmn_params cmn[12];
    for (int i = 0; i < n; i++) {
      int c = pad ? rnd_int(1, 3) : rnd_int(1, 4);
      if (rnd_int(0, 1)) c = 3;
      rs_make(&s[i], LADLE_UINT8, 700, 300, c);
      int rw = s[i].ax.out_size, rh = s[i].ay.out_size;
      random_cmn(&cmn[i], rw, rh, c, dtype, chw, pad);
      /* The unfused reference: resize to uint8, then crop_mirror_normalize. */
      uint8_t *r = malloc((size_t)rw * rh * c);
      void *scratch = malloc(ladle__resize_scratch_size(&s[i].ax, &s[i].ay, s[i].in_h, c));
      ladle__resize_u8(r, s[i].in, s[i].in_h, (int)s[i].stride, c, &s[i].ax, &s[i].ay, scratch);
      free(scratch);
      s[i].out_bytes = (size_t)cmn[i].w * cmn[i].h * (c + pad) * dtype_size(dtype);
      s[i].ref = malloc(s[i].out_bytes);
      ladle__crop_mirror_normalize(s[i].ref, r, rh, rw, rw * c, &cmn[i]);
      free(r);
      s[i].dout = test_device_alloc(s[i].out_bytes);
      test_fill(s[i].dout, 0xA5, s[i].out_bytes); /* no byte may be left unwritten */
      d[i] = (ladle__gpu_resize_desc){s[i].din, s[i].dout, s[i].in_h, s[i].in_w, s[i].stride, c, &s[i].ax, &s[i].ay, NULL};
    }
    params p = params_alloc(ladle__gpu_resize_param_bytes(d, n));
    CHECK_OK(ladle__gpu_fused(d, cmn, n, p.host, p.dev, p.bytes, stream));
    for (int i = 0; i < n; i++) {
      void *got = malloc(s[i].out_bytes);
      test_download(got, s[i].dout, s[i].out_bytes, stream);
      size_t elems = s[i].out_bytes / dtype_size(dtype);
      size_t b = compare(got, s[i].ref, elems, dtype, &max_diff);
      if (b && !bad)
        fprintf(stderr, "fused round %d sample %d (%s, chw %d, pad %d, mirror %d): %zu of %zu differ\n", round, i,
                ladle_dtype_name(dtype), chw, pad, cmn[i].mirror, b, elems);
      bad += b;
      elems_total += elems;
      free(got);
    }
    params_free(&p);
    rs_free(s, n);
  }
  fprintf(stderr, "  fused: %zu elements, %zu differ (max %g)\n", elems_total, bad, max_diff);
  CHECK(bad == 0);
}

/* ------------------------------------------------------------------------ */
/* crop_mirror_normalize, crop/flip, convert                                  */
/* ------------------------------------------------------------------------ */

static void test_cmn(void) {
  double max_diff = 0;
  size_t bad = 0, elems_total = 0;
  for (int round = 0; round < 2 * LADLE_DTYPE_COUNT; round++) {
    rng_reset(300 + round);
    ladle_dtype dtype = all_types[round % LADLE_DTYPE_COUNT];
    int chw = (round / LADLE_DTYPE_COUNT) % 2, pad = rnd_int(0, 1);
    int n = rnd_int(1, 16);
    ladle__gpu_cmn_desc d[16];
    void *in[16], *ref[16];
    size_t out_bytes[16];
    for (int i = 0; i < n; i++) {
      int c = pad ? rnd_int(1, 3) : rnd_int(1, 4);
      int w = rnd_size(700), h = rnd_size(700);
      int64_t stride = (int64_t)w * c + rnd_int(0, 9);
      size_t in_bytes = (size_t)stride * h;
      in[i] = malloc(in_bytes);
      fill_random(in[i], in_bytes);
      random_cmn(&d[i].p, w, h, c, dtype, chw, pad);
      out_bytes[i] = (size_t)d[i].p.w * d[i].p.h * (c + pad) * dtype_size(dtype);
      ref[i] = malloc(out_bytes[i]);
      ladle__crop_mirror_normalize(ref[i], in[i], h, w, (int)stride, &d[i].p);
      d[i].in = test_device_copy(in[i], in_bytes);
      d[i].out = test_device_alloc(out_bytes[i]);
      test_fill(d[i].out, 0xA5, out_bytes[i]);
      d[i].in_h = h;
      d[i].in_w = w;
      d[i].in_stride = stride;
    }
    params p = params_alloc(ladle__gpu_cmn_param_bytes(n));
    CHECK_OK(ladle__gpu_crop_mirror_normalize(d, n, p.host, p.dev, p.bytes, stream));
    for (int i = 0; i < n; i++) {
      void *got = malloc(out_bytes[i]);
      test_download(got, d[i].out, out_bytes[i], stream);
      size_t elems = out_bytes[i] / dtype_size(dtype);
      size_t b = compare(got, ref[i], elems, dtype, &max_diff);
      if (b && !bad)
        fprintf(stderr, "cmn round %d sample %d (%s, chw %d, pad %d): %zu of %zu differ\n", round, i,
                ladle_dtype_name(dtype), chw, pad, b, elems);
      bad += b;
      elems_total += elems;
      free(got);
      free(in[i]);
      free(ref[i]);
      cudaFree((void *)d[i].in);
      cudaFree(d[i].out);
    }
    params_free(&p);
  }
  fprintf(stderr, "  crop_mirror_normalize: %zu elements, %zu differ (max %g)\n", elems_total, bad, max_diff);
  CHECK(bad == 0);
}

static void test_crop_flip(void) {
  size_t bad = 0, total = 0;
  static const size_t sizes[4] = {1, 2, 4, 8};
  for (int round = 0; round < 12; round++) {
    rng_reset(400 + round);
    int n = rnd_int(1, 16);
    ladle__gpu_crop_flip_desc d[16];
    void *in[16], *ref[16];
    size_t out_bytes[16];
    for (int i = 0; i < n; i++) {
      int c = rnd_int(1, 4), w = rnd_size(500), h = rnd_size(500);
      size_t es = sizes[rnd_int(0, 3)];
      size_t in_bytes = (size_t)w * h * c * es;
      in[i] = malloc(in_bytes);
      fill_random(in[i], in_bytes);
      d[i] = (ladle__gpu_crop_flip_desc){NULL, NULL, h, w, c, es, 0, 0, w, h, rnd_int(0, 1), rnd_int(0, 1),
                                         (uint8_t)rnd()};
      if (rnd_int(0, 2)) {
        d[i].w = rnd_int(1, w + 10);
        d[i].h = rnd_int(1, h + 10);
        d[i].x0 = rnd_int(-6, w);
        d[i].y0 = rnd_int(-6, h);
      }
      out_bytes[i] = (size_t)d[i].w * d[i].h * c * es;
      ref[i] = malloc(out_bytes[i]);
      ladle__crop_flip_hwc(ref[i], in[i], h, w, c, es, d[i].x0, d[i].y0, d[i].w, d[i].h, d[i].flip_x, d[i].flip_y,
                           d[i].fill);
      d[i].in = test_device_copy(in[i], in_bytes);
      d[i].out = test_device_alloc(out_bytes[i]);
    }
    params p = params_alloc(ladle__gpu_crop_flip_param_bytes(n));
    CHECK_OK(ladle__gpu_crop_flip(d, n, p.host, p.dev, p.bytes, stream));
    for (int i = 0; i < n; i++) {
      uint8_t *got = malloc(out_bytes[i]);
      test_download(got, d[i].out, out_bytes[i], stream);
      for (size_t k = 0; k < out_bytes[i]; k++) bad += got[k] != ((uint8_t *)ref[i])[k];
      total += out_bytes[i];
      free(got);
      free(in[i]);
      free(ref[i]);
      cudaFree((void *)d[i].in);
      cudaFree(d[i].out);
    }
    params_free(&p);
  }
  fprintf(stderr, "  crop/flip: %zu bytes, %zu differ\n", total, bad);
  CHECK(bad == 0);
}

/* convert (cast) over every dtype pair: tests/c/ops/tensor/test_gpu_dtypes.c. */

/* ------------------------------------------------------------------------ */
/* Launcher argument checks                                                   */
/* ------------------------------------------------------------------------ */

static void test_bad_arguments(void) {
  ladle__resize_axis ax = {0}, ay = {0};
  CHECK_OK(ladle__resize_axis_plan(&ax, 10, 0, 10, 5, LADLE__INTERP_LINEAR, 1));
  CHECK_OK(ladle__resize_axis_plan(&ay, 10, 0, 10, 5, LADLE__INTERP_LINEAR, 1));
  params p = params_alloc(1 << 16);
  void *buf = test_device_alloc(1000);
  /* Tables planned for another width. */
  ladle__gpu_resize_desc d = {buf, buf, 10, 11, 33, 3, &ax, &ay, NULL};
  CHECK(ladle__gpu_resize(&d, 1, LADLE_UINT8, p.host, p.dev, p.bytes, stream) == LADLE_ERROR_INVALID_ARGUMENT);
  CHECK(strstr(ladle_last_error(), "sample 0") != NULL);
  CHECK(strstr(ladle_last_error(), "ladle__") == NULL); /* internal names stay out of messages */
  /* Too small a parameter buffer. */
  d.in_w = 10;
  d.in_stride = 30;
  CHECK(ladle__gpu_resize(&d, 1, LADLE_UINT8, p.host, p.dev, 8, stream) == LADLE_ERROR_INVALID_ARGUMENT);
  /* Mixed output types in one fused batch. */
  ladle__gpu_resize_desc dd[2] = {d, d};
  ladle__cmn_params cmn[2];
  random_cmn(&cmn[0], 5, 5, 3, LADLE_FLOAT16, 1, 0);
  random_cmn(&cmn[1], 5, 5, 3, LADLE_FLOAT32, 1, 0);
  CHECK(ladle__gpu_fused(dd, cmn, 2, p.host, p.dev, p.bytes, stream) == LADLE_ERROR_INVALID_ARGUMENT);
  CHECK(strstr(ladle_last_error(), "sample 1") != NULL);
  sync_stream();
  cudaFree(buf);
  params_free(&p);
  ladle__resize_axis_free(&ax);
  ladle__resize_axis_free(&ay);
}

/* ------------------------------------------------------------------------ */
/* Runtime glue                                                               */
/* ------------------------------------------------------------------------ */

static void test_runtime(void) {
  const char *info = ladle__cuda_runtime_info();
  fprintf(stderr, "  runtime info: %s\n", info);
  CHECK(strncmp(info, "\"cuda_devices\": ", 16) == 0);
  CHECK(strstr(info, "\"cuda_device_name\": \"") != NULL);
  CHECK(strstr(ladle_build_info(), "\"nvjpeg\": ") != NULL);

  /* A non-sticky error: named, translated, not latched, and cleared. */
  ladle_status st = ladle__cuda_stream_wait(stream, NULL);
  CHECK(st == LADLE_ERROR_CUDA);
  fprintf(stderr, "  waiting on a NULL event gives: %s\n", ladle_last_error());
  CHECK(strstr(ladle_last_error(), "cudaStreamWaitEvent failed: cudaError") != NULL);
  CHECK(strstr(ladle_last_error(), "ladle__") == NULL);
  CHECK(!ladle__cuda_broken());
  CHECK(cudaPeekAtLastError() == cudaSuccess);

  /* Events and waits, on our stream and on the special handles. */
  void *ev = NULL;
  CHECK_OK(ladle__cuda_event_create(0, &ev));
  CHECK_OK(ladle__cuda_event_record(ev, stream));
  CHECK_OK(ladle__cuda_stream_wait(NULL, ev));
  CHECK_OK(ladle__cuda_stream_wait((void *)2, ev));
  CHECK_OK(ladle__cuda_event_sync(ev));
  int done = 0;
  CHECK_OK(ladle__cuda_event_done(ev, &done));
  CHECK(done == 1);
  ladle__cuda_event_destroy(ev);

  /* Allocators. */
  ladle__allocator da = ladle__cuda_device_allocator(0), pa = ladle__cuda_pinned_allocator(0);
  CHECK(da.device == LADLE_DEVICE_CUDA && pa.device == LADLE_DEVICE_CUDA_HOST);
  void *dp = da.alloc(da.ctx, 1 << 20), *hp = pa.alloc(pa.ctx, 1 << 20);
  CHECK(dp != NULL && hp != NULL && ((uintptr_t)dp & 63) == 0 && ((uintptr_t)hp & 63) == 0);
  memset(hp, 7, 1 << 20);
  CHECK_OK(ladle__cuda_copy(dp, hp, 1 << 20, stream));
  sync_stream();
  da.free(da.ctx, dp);
  pa.free(pa.ctx, hp);
  CHECK(da.alloc(da.ctx, (size_t)1 << 62) == NULL); /* fails cleanly, not latched */
  CHECK(!ladle__cuda_broken());
  CHECK(ladle__cuda_use_device(ladle__cuda_device_count(), NULL) == LADLE_ERROR_INVALID_ARGUMENT);
}

/* In a child process (a sticky error ruins the context for good): an illegal
 * address in a kernel is latched, and later calls fail fast repeating it. */
static int latch_child(void) {
  if (ladle__cuda_device_count() == 0) return 77;
  int fails = 0;
  void *s = NULL, *ev = NULL;
  if (ladle__cuda_stream_create(0, &s) != LADLE_OK || ladle__cuda_event_create(0, &ev) != LADLE_OK) return 1;
  ladle__resize_axis ax = {0}, ay = {0};
  ladle__resize_axis_plan(&ax, 64, 0, 64, 32, LADLE__INTERP_LINEAR, 1);
  ladle__resize_axis_plan(&ay, 64, 0, 64, 32, LADLE__INTERP_LINEAR, 1);
  void *out = NULL, *hp = NULL, *dp = NULL;
  cudaMalloc(&out, 32 * 32 * 3);
  cudaHostAlloc(&hp, 1 << 16, cudaHostAllocDefault);
  cudaMalloc(&dp, 1 << 16);
  ladle__gpu_resize_desc d = {(const void *)(uintptr_t)0x1000, out, 64, 64, 192, 3, &ax, &ay, NULL}; /* bad input */
  if (ladle__gpu_resize(&d, 1, LADLE_UINT8, hp, dp, 1 << 16, s) != LADLE_OK) fails++;
  /* The fault may already be reported by the record, or only by the wait. */
  ladle_status st = ladle__cuda_event_record(ev, s);
  if (st == LADLE_OK) st = ladle__cuda_event_sync(ev);
  char first[LADLE_ERROR_MAX];
  snprintf(first, sizeof first, "%s", ladle_last_error());
  fprintf(stderr, "  (child) the bad kernel gives: %s\n", first);
  if (st != LADLE_ERROR_CUDA || !ladle__cuda_broken()) fails++;
  if (!strstr(first, "cudaErrorIllegalAddress") && !strstr(first, "cudaErrorLaunchFailure")) fails++;
  d.in = out;
  st = ladle__gpu_resize(&d, 1, LADLE_UINT8, hp, dp, 1 << 16, s);
  fprintf(stderr, "  (child) a later call gives: %s\n", ladle_last_error());
  if (st != LADLE_ERROR_CUDA || !strstr(ladle_last_error(), "CUDA is unusable after an earlier error: ") ||
      !strstr(ladle_last_error(), first))
    fails++;
  ladle__allocator da = ladle__cuda_device_allocator(0);
  if (da.alloc(da.ctx, 256) != NULL) fails++;
  return fails ? 1 : 0;
}

/* ------------------------------------------------------------------------ */
/* nvJPEG                                                                     */
/* ------------------------------------------------------------------------ */

typedef struct jpeg_buf {
  unsigned char *data;
  unsigned long size;
} jpeg_buf;

/* A smooth image (gradients, low-frequency waves, a little noise) encoded by
 * libjpeg with the given subsampling (h x v factors of luma; 0: gray). */
static jpeg_buf encode_jpeg(int w, int h, int hs, int vs, int quality) {
  struct jpeg_compress_struct c;
  struct jpeg_error_mgr err;
  jpeg_buf b = {NULL, 0};
  int comps = hs ? 3 : 1;
  uint8_t *row = malloc((size_t)w * comps);
  c.err = jpeg_std_error(&err);
  jpeg_create_compress(&c);
  jpeg_mem_dest(&c, &b.data, &b.size);
  c.image_width = (JDIMENSION)w;
  c.image_height = (JDIMENSION)h;
  c.input_components = comps;
  c.in_color_space = comps == 3 ? JCS_RGB : JCS_GRAYSCALE;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, quality, TRUE);
  if (comps == 3) {
    c.comp_info[0].h_samp_factor = hs;
    c.comp_info[0].v_samp_factor = vs;
    c.comp_info[1].h_samp_factor = c.comp_info[1].v_samp_factor = 1;
    c.comp_info[2].h_samp_factor = c.comp_info[2].v_samp_factor = 1;
  }
  jpeg_start_compress(&c, TRUE);
  for (int y = 0; y < h; y++) {
    for (int x = 0; x < w; x++)
      for (int k = 0; k < comps; k++) {
        double v = 128 + 60 * sin(x * (0.02 + 0.01 * k) + y * 0.013) + 50 * cos(y * (0.031 - 0.007 * k) - x * 0.005) +
                   (double)((int)(rnd() % 7) - 3);
        row[(size_t)x * comps + k] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
      }
    JSAMPROW rp = row;
    jpeg_write_scanlines(&c, &rp, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  free(row);
  return b;
}

static uint8_t *read_file(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *p = malloc(n > 0 ? (size_t)n : 1);
  *size = fread(p, 1, (size_t)(n > 0 ? n : 0), f);
  fclose(f);
  return p;
}

/* CPU decode (stored orientation) of the region, in `color`. */
static uint8_t *cpu_decode(const uint8_t *data, size_t size, const char *name, ladle__color color, int *w, int *h,
                           const ladle__nvjpeg_roi *roi) {
  ladle__image_info info;
  ladle__decode_params p;
  int c;
  if (ladle__image_probe(data, size, name, &info) != LADLE_OK) return NULL;
  ladle__decode_params_init(&p);
  p.color = color;
  p.apply_orientation = 0;
  if (roi) {
    p.has_roi = 1;
    p.roi_x = roi->x, p.roi_y = roi->y, p.roi_w = roi->w, p.roi_h = roi->h;
  }
  if (ladle__image_output_size(&info, &p, name, w, h, &c) != LADLE_OK) return NULL;
  uint8_t *out = malloc((size_t)*w * *h * c);
  if (ladle__image_decode(data, size, name, &info, &p, out) != LADLE_OK) {
    fprintf(stderr, "cpu decode of %s: %s\n", name, ladle_last_error());
    free(out);
    return NULL;
  }
  return out;
}

typedef struct jpeg_case {
  char name[64];
  uint8_t *data;
  size_t size;
  int smooth; /* synthetic: the tight bounds apply */
} jpeg_case;

/* Decodes `cases` with nvJPEG in one batch (those it supports) and compares with
 * the CPU decoder. */
static void compare_decodes(ladle__nvjpeg_decoder *dec, jpeg_case *cases, int n, ladle__nvjpeg_format fmt,
                            int use_roi) {
  ladle__nvjpeg_image im[32];
  uint8_t *cpu[32];
  int idx[32], w[32], h[32], m = 0;
  const int ch = fmt == LADLE__NVJPEG_GRAY ? 1 : 3;
  ladle__nvjpeg_roi rois[32];
  for (int i = 0; i < n && m < 32; i++) {
    int sup = 0;
    ladle__nvjpeg_roi *roi = NULL;
    ladle__image_info info;
    if (ladle__image_probe(cases[i].data, cases[i].size, cases[i].name, &info) != LADLE_OK) continue;
    if (use_roi) {
      if (info.stored_width < 2 || info.stored_height < 2) continue;
      rois[m].w = rnd_int(1, info.stored_width);
      rois[m].h = rnd_int(1, info.stored_height);
      rois[m].x = rnd_int(0, info.stored_width - rois[m].w);
      rois[m].y = rnd_int(0, info.stored_height - rois[m].h);
      roi = &rois[m];
    }
    CHECK_OK(ladle__nvjpeg_supported(dec, 0, cases[i].data, cases[i].size, cases[i].name, roi, &sup));
    if (!sup) {
      fprintf(stderr, "    %-24s declined by nvJPEG\n", cases[i].name);
      continue;
    }
    cpu[m] = cpu_decode(cases[i].data, cases[i].size, cases[i].name,
                        fmt == LADLE__NVJPEG_GRAY ? LADLE__COLOR_GRAY : fmt == LADLE__NVJPEG_BGR ? LADLE__COLOR_BGR
                                                                                                  : LADLE__COLOR_RGB,
                        &w[m], &h[m], roi);
    CHECK(cpu[m] != NULL);
    if (!cpu[m]) continue;
    size_t pitch = (size_t)w[m] * ch + (size_t)rnd_int(0, 1) * 64; /* pitched rows too */
    im[m] = (ladle__nvjpeg_image){cases[i].data, cases[i].size, cases[i].name, test_device_alloc(pitch * h[m]), pitch,
                                  0, {0, 0, 0, 0}};
    if (roi) {
      im[m].has_roi = 1;
      im[m].roi = *roi;
    }
    idx[m++] = i;
  }
  if (m == 0) return;
  CHECK_OK(ladle__nvjpeg_decode(dec, im, m, fmt, stream));
  sync_stream();
  for (int k = 0; k < m; k++) {
    size_t row = (size_t)w[k] * ch, n_px = row * h[k];
    uint8_t *got = malloc(n_px);
    CUDA_OK(cudaMemcpy2D(got, row, im[k].out, im[k].pitch, row, (size_t)h[k], cudaMemcpyDeviceToHost));
    int maxd = 0;
    double sum = 0;
    for (size_t q = 0; q < n_px; q++) {
      int dd = abs((int)got[q] - (int)cpu[k][q]);
      if (dd > maxd) maxd = dd;
      sum += dd;
    }
    double mean = n_px ? sum / n_px : 0;
    const jpeg_case *c = &cases[idx[k]];
    fprintf(stderr, "    %-24s %4dx%-4d %s%s: max |diff| %3d, mean %.3f\n", c->name, w[k], h[k],
            fmt == LADLE__NVJPEG_GRAY ? "Y  " : fmt == LADLE__NVJPEG_BGR ? "BGR" : "RGB", use_roi ? " roi" : "", maxd,
            mean);
    if (c->smooth) {
      CHECK(mean <= 1.5);
      /* A region of a subsampled image: nvJPEG's hardware decoder upsamples the
       * chroma at the region's edges without the pixels beyond them (measured:
       * up to 38 on the border pixels of a 4:2:0 region, mean 0.4). */
      CHECK(maxd <= (use_roi && !strstr(c->name, "444") && !strstr(c->name, "gray") ? 64 : 24));
    } else {
      CHECK(mean <= 8.0);
    }
    free(got);
    free(cpu[k]);
    cudaFree(im[k].out);
  }
}

static void test_nvjpeg(void) {
  if (!ladle__nvjpeg_available()) {
    CHECK(ladle__nvjpeg_load() == LADLE_ERROR_NOT_AVAILABLE);
    fprintf(stderr, "  nvJPEG not available (%s): decoder tests skipped\n", ladle_last_error());
    return;
  }
  ladle__nvjpeg_params prm;
  ladle__nvjpeg_params_init(&prm);
  prm.max_batch = 16;
  ladle__nvjpeg_decoder *dec = NULL;
  CHECK_OK(ladle__nvjpeg_decoder_create(&prm, &dec));
  if (!dec) return;
  fprintf(stderr, "  nvJPEG decoder: %s backend, roi %s\n",
          ladle__nvjpeg_decoder_is_hardware(dec) ? "hardware" : "GPU hybrid",
          ladle__nvjpeg_decoder_supports_roi(dec) ? "yes" : "no");

  jpeg_case cases[32];
  int n = 0;
  rng_reset(600);
  static const int dims[][2] = {{1, 1}, {17, 13}, {64, 48}, {255, 171}, {640, 480}, {701, 333}, {333, 701}};
  static const int samp[][2] = {{2, 2}, {2, 1}, {1, 1}, {0, 0}};
  static const char *samp_name[] = {"420", "422", "444", "gray"};
  for (int di = 0; di < 7; di++) {
    for (int si = 0; si < 4; si++) {
      if ((di + si) % 2 && di != 4) continue; /* a sample of the combinations */
      jpeg_buf b = encode_jpeg(dims[di][0], dims[di][1], samp[si][0], samp[si][1], 90);
      jpeg_case *c = &cases[n++];
      snprintf(c->name, sizeof c->name, "synth_%dx%d_%s.jpg", dims[di][0], dims[di][1], samp_name[si]);
      c->data = b.data; /* malloc'd by libjpeg's memory destination */
      c->size = b.size;
      c->smooth = 1;
    }
  }
  const char *dir = getenv("LADLE_TEST_DATA");
  static const char *files[] = {"j420.jpg", "j422.jpg", "j444.jpg", "jgray.jpg", "jprog.jpg", "jcmyk.jpg"};
  for (int i = 0; dir && i < 6; i++) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, files[i]);
    jpeg_case *c = &cases[n];
    c->data = read_file(path, &c->size);
    if (!c->data) continue;
    snprintf(c->name, sizeof c->name, "%s", files[i]);
    c->smooth = 0;
    n++;
  }
  if (!dir) fprintf(stderr, "  LADLE_TEST_DATA not set: tests/data images skipped\n");

  compare_decodes(dec, cases, n, LADLE__NVJPEG_RGB, 0);
  compare_decodes(dec, cases, n, LADLE__NVJPEG_BGR, 0);
  compare_decodes(dec, cases, n, LADLE__NVJPEG_GRAY, 0);
  if (ladle__nvjpeg_decoder_supports_roi(dec)) compare_decodes(dec, cases, n, LADLE__NVJPEG_RGB, 1);

  /* Not a JPEG: declined without an error (the CPU decoder explains). */
  uint8_t junk[300];
  fill_random(junk, sizeof junk);
  int sup = 1;
  CHECK_OK(ladle__nvjpeg_supported(dec, 0, junk, sizeof junk, "junk.jpg", NULL, &sup));
  CHECK(sup == 0);

  /* A JPEG cut in half, in a batch with a good one: whatever nvJPEG makes of
   * it, an error must be a data error naming the file, and the decoder must
   * still work afterwards. */
  jpeg_case *good = NULL;
  for (int i = 0; i < n; i++)
    if (strcmp(cases[i].name, "synth_640x480_420.jpg") == 0) good = &cases[i];
  CHECK(good != NULL);
  if (!good) return;
  ladle__nvjpeg_image im[2];
  void *o1 = test_device_alloc(640 * 480 * 3), *o2 = test_device_alloc(640 * 480 * 3);
  size_t half = good->size / 2;
  im[0] = (ladle__nvjpeg_image){good->data, half, "cut.jpg", o1, 640 * 3, 0, {0, 0, 0, 0}};
  im[1] = (ladle__nvjpeg_image){good->data, good->size, "good.jpg", o2, 640 * 3, 0, {0, 0, 0, 0}};
  sup = 0;
  CHECK_OK(ladle__nvjpeg_supported(dec, 0, good->data, half, "cut.jpg", NULL, &sup));
  if (sup) {
    ladle_status st = ladle__nvjpeg_decode(dec, im, 2, LADLE__NVJPEG_RGB, stream);
    sync_stream();
    fprintf(stderr, "  a truncated JPEG in a batch: %s%s%s\n", ladle_status_name(st), st ? ": " : "",
            st ? ladle_last_error() : " (nvJPEG decoded it without complaint)");
    if (st != LADLE_OK) {
      CHECK(st == LADLE_ERROR_CORRUPT_DATA || st == LADLE_ERROR_UNSUPPORTED);
      CHECK(strstr(ladle_last_error(), "cut.jpg") != NULL);
    }
  } else {
    fprintf(stderr, "  a truncated JPEG is declined by nvJPEG's support check\n");
  }
  CHECK(!ladle__cuda_broken());
  compare_decodes(dec, cases, 2, LADLE__NVJPEG_RGB, 0); /* still usable */
  cudaFree(o1);
  cudaFree(o2);

  for (int i = 0; i < n; i++) free(cases[i].data);
  ladle__nvjpeg_decoder_destroy(dec);
}

/* ------------------------------------------------------------------------ */

int main(void) {
  /* The latch test runs first, in a child forked before this process touches
   * CUDA (a CUDA context does not survive fork). */
  fflush(NULL);
  /* Under compute-sanitizer the child's deliberate illegal access would be
   * reported: LADLE_SKIP_STICKY_TEST=1 leaves it out. */
  int skip_latch = getenv("LADLE_SKIP_STICKY_TEST") != NULL;
  pid_t pid = skip_latch ? -1 : fork();
  if (pid == 0) _exit(latch_child());
  int wstatus = 0, child = skip_latch ? 0 : -1;
  if (pid > 0 && waitpid(pid, &wstatus, 0) == pid && WIFEXITED(wstatus)) child = WEXITSTATUS(wstatus);

  TEST_SKIP_WITHOUT_DEVICE();
  fprintf(stderr, "%d CUDA device(s)\n", ladle__cuda_device_count());
  CHECK(child == 0);
  fprintf(stderr, "%s test_sticky_latch (child exit %d)\n", child == 0 ? "ok  " : "FAIL", child);
  CHECK_OK(ladle__cuda_use_device(0, NULL));
  CHECK_OK(ladle__cuda_stream_create(0, &stream));

  RUN(test_runtime);
  RUN(test_resize);
  RUN(test_fused);
  RUN(test_cmn);
  RUN(test_crop_flip);
  RUN(test_bad_arguments);
  RUN(test_nvjpeg);
  CHECK(!ladle__cuda_broken());
  ladle__cuda_stream_destroy(stream);
  TEST_MAIN_END();
}

#endif /* LADLE_HAVE_CUDA */
