/* The GPU resize kernel (ladle__gpu_resize) against the CPU reference
 * (ladle__resize_u8/f32) on chosen shapes the random test of
 * tests/c/test_gpu_kernels.c may miss: 1-pixel images and outputs, the
 * benchmark's ImageNet-like downscales (every filter, antialiased or not),
 * large upscales, filters longer than the kernel's shared-memory weight tables
 * (more than 32 taps an axis), flipped and outside windows (DALI's planner),
 * padded rows, 1 to 4 channels, uint8 and float32, and batches mixing all of
 * them (blocks past a small sample's output skip it); and tables planned on
 * the GPU from DALI geometries (random windows as random_resized_crop and roi
 * make them, down- and upscaling, 1-pixel outputs, every filter, antialias on
 * and off), alone and mixed with uploaded tables, plain and fused.
 * Bit-identical. Exits 77 (ctest's SKIP) without CUDA or a device. */
#include "test_cuda.h" /* built without CUDA: all of this test, a skip */
#ifdef LADLE_HAVE_CUDA

#include <math.h>

#include "test_random.h"
#include "ops/geometry/resize_kernel.h"

static void *stream;


/* One resize: input w x h x c (rows padded by `pad` elements), output ow x oh. */
typedef struct rz_case {
  int w, h, c, ow, oh;
  ladle__interp interp;
  int antialias, dali, flip, pad;
} rz_case;

/* One sample: input w x h x c in rows of `stride` elements, output ow x oh;
 * its CPU tables (ax, ay) and, where the GPU plans them, its DALI geometry;
 * the input (random), the CPU's output (ref), room for the GPU's (got) and
 * the device buffers (dout2: test_planned_on_gpu's second output). */
typedef struct rz_sample {
  int w, h, c, ow, oh;
  int64_t stride;
  ladle__resize_dali_geom geom;
  ladle__resize_axis ax, ay;
  void *in, *ref, *got, *din, *dout, *dout2;
  size_t in_bytes, out_bytes;
} rz_sample;

/* Once the tables are planned: a random input, the CPU's output, the device
 * input (uploaded) and output. */
static void sample_fill(rz_sample *s, int f32) {
  size_t es = f32 ? 4 : 1;
  s->in_bytes = (size_t)s->stride * s->h * es;
  s->out_bytes = (size_t)s->ow * s->oh * s->c * es;
  s->in = malloc(s->in_bytes);
  s->ref = malloc(s->out_bytes);
  s->got = malloc(s->out_bytes);
  for (size_t i = 0; i < s->in_bytes / es; i++) {
    if (f32)
      ((float *)s->in)[i] = (float)rnd_range(-20, 300);
    else
      ((uint8_t *)s->in)[i] = (uint8_t)ladle__rng_u32(&rng);
  }
  void *scratch = malloc(ladle__resize_scratch_size(&s->ax, &s->ay, s->h, s->c));
  if (f32)
    ladle__resize_f32(s->ref, s->in, s->h, (int)s->stride, s->c, &s->ax, &s->ay, scratch);
  else
    ladle__resize_u8(s->ref, s->in, s->h, (int)s->stride, s->c, &s->ax, &s->ay, scratch);
  free(scratch);
  s->din = test_device_copy(s->in, s->in_bytes);
  s->dout = test_device_alloc(s->out_bytes);
}

static void release(rz_sample *s) {
  free(s->in);
  free(s->ref);
  free(s->got);
  cudaFree(s->din);
  cudaFree(s->dout);
  cudaFree(s->dout2);
  ladle__resize_axis_free(&s->ax);
  ladle__resize_axis_free(&s->ay);
}

static int make(rz_sample *s, const rz_case *k, int f32) {
  memset(s, 0, sizeof *s);
  s->w = k->w, s->h = k->h, s->c = k->c, s->ow = k->ow, s->oh = k->oh;
  s->stride = (int64_t)k->w * k->c + k->pad;
  ladle_status st;
  if (k->dali) {
    float lo[2] = {0, 0}, hi[2] = {(float)k->w, (float)k->h};
    if (k->flip) lo[0] = (float)k->w, hi[0] = -0.5f, lo[1] = -3.25f, hi[1] = (float)k->h + 2.5f;
    st = ladle__resize_plan_dali(&s->ax, &s->ay, k->w, k->h, lo, hi, k->ow, k->oh, k->interp, k->interp,
                                 k->antialias);
  } else {
    double x0 = k->flip ? -0.3 * k->w : 0, y0 = k->flip ? 0.25 * k->h : 0;
    st = ladle__resize_axis_plan(&s->ax, k->w, x0, k->w, k->ow, k->interp, k->antialias);
    if (st == LADLE_OK) st = ladle__resize_axis_plan(&s->ay, k->h, y0, k->h * 0.9, k->oh, k->interp, k->antialias);
  }
  CHECK_OK(st);
  if (st != LADLE_OK) return 0;
  sample_fill(s, f32);
  return 1;
}

/* Runs the cases as one batch and compares every sample. */
static void run_batch(const rz_case *cases, int n, int f32) {
  rz_sample *s = calloc((size_t)n, sizeof *s);
  ladle__gpu_resize_desc *d = calloc((size_t)n, sizeof *d);
  int ok = 1;
  for (int i = 0; i < n && ok; i++) {
    ok = make(&s[i], &cases[i], f32);
    d[i] = (ladle__gpu_resize_desc){s[i].din, s[i].dout, cases[i].h, cases[i].w, s[i].stride, cases[i].c,
                                    &s[i].ax, &s[i].ay, NULL};
  }
  if (ok) {
    size_t bytes = ladle__gpu_resize_param_bytes(d, n);
    void *host = test_pinned_alloc(bytes), *dev = test_device_alloc(bytes);
    CHECK_OK(ladle__gpu_resize(d, n, f32 ? LADLE_FLOAT32 : LADLE_UINT8, host, dev, bytes, stream));
    for (int i = 0; i < n; i++) {
      test_download(s[i].got, s[i].dout, s[i].out_bytes, stream);
      int same = memcmp(s[i].got, s[i].ref, s[i].out_bytes) == 0;
      if (!same)
        fprintf(stderr, "resize %s: %dx%dx%d -> %dx%d interp %d aa %d dali %d flip %d (taps %d, %d) differs\n",
                f32 ? "f32" : "u8", cases[i].w, cases[i].h, cases[i].c, cases[i].ow, cases[i].oh,
                (int)cases[i].interp, cases[i].antialias, cases[i].dali, cases[i].flip, s[i].ax.taps, s[i].ay.taps);
      CHECK(same);
    }
    cudaFreeHost(host);
    cudaFree(dev);
  }
  for (int i = 0; i < n; i++) release(&s[i]);
  free(s);
  free(d);
}

static void test_chosen(void) {
  static const rz_case cases[] = {
      {1, 1, 3, 1, 1, LADLE__INTERP_LINEAR, 1, 0, 0, 0},
      {1, 1, 1, 37, 5, LADLE__INTERP_CUBIC, 1, 0, 0, 1},
      {5, 3, 4, 1, 1, LADLE__INTERP_LANCZOS3, 1, 1, 0, 0},
      {463, 403, 3, 224, 224, LADLE__INTERP_LINEAR, 1, 1, 0, 0},
      {463, 403, 3, 224, 224, LADLE__INTERP_CUBIC, 1, 1, 0, 0},
      {463, 403, 3, 224, 224, LADLE__INTERP_NN, 0, 1, 0, 0},
      {403, 463, 3, 256, 294, LADLE__INTERP_LINEAR, 1, 1, 0, 3},
      {97, 61, 3, 194, 122, LADLE__INTERP_LINEAR, 1, 1, 0, 0},
      {33, 29, 2, 301, 257, LADLE__INTERP_CUBIC, 0, 0, 1, 0},
      {1000, 37, 3, 7, 300, LADLE__INTERP_LINEAR, 1, 0, 0, 0},   /* x: > 32 taps */
      {3, 1000, 1, 8, 5, LADLE__INTERP_LANCZOS3, 1, 1, 0, 2},    /* y: > 32 taps */
      {700, 700, 4, 9, 11, LADLE__INTERP_GAUSSIAN, 1, 1, 1, 0},  /* both, flipped */
      {301, 199, 3, 150, 99, LADLE__INTERP_TRIANGULAR, 0, 1, 1, 1},
      {64, 64, 3, 64, 64, LADLE__INTERP_LINEAR, 1, 1, 0, 0},     /* identity */
  };
  const int n = (int)(sizeof cases / sizeof cases[0]);
  for (int f32 = 0; f32 <= 1; f32++) {
    run_batch(cases, n, f32);
    for (int i = 0; i < n; i++) run_batch(&cases[i], 1, f32);
  }
}

/* Random batches of random cases, every channel count. */
static void test_random(void) {
  for (int round = 0; round < 12; round++) {
    rz_case k[8];
    int n = rnd_int(1, 8);
    for (int i = 0; i < n; i++) {
      int big = rnd_int(0, 3) == 0;
      k[i] = (rz_case){rnd_int(1, big ? 600 : 80), rnd_int(1, big ? 600 : 80), rnd_int(1, 4),
                       rnd_int(1, big ? 400 : 120), rnd_int(1, big ? 400 : 120), (ladle__interp)rnd_int(0, 5),
                       rnd_int(0, 1), rnd_int(0, 1), rnd_int(0, 1), rnd_int(0, 3)};
    }
    run_batch(k, n, round % 2);
  }
}


/* ------------------------------------------------------------------------ */
/* Tables planned on the GPU (descriptors with a DALI geometry)              */
/* ------------------------------------------------------------------------ */

static void random_window(int in, float *lo, float *hi) {
  double l, len;
  switch (rnd_int(0, 4)) {
    case 0: l = 0, len = in; break;                                                         /* whole */
    case 1: len = rnd_range(0.08, 1.0) * in, l = rnd_range(0, in - len); break;               /* a crop */
    case 2: l = rnd_range(-0.3, 0.8) * in, len = rnd_range(0.05, 1.3) * in; break;            /* around */
    case 3: l = rnd_range(-0.5, 0.5) + rnd_int(0, in), len = rnd_range(0.3, 3.0); break;      /* a few pixels */
    default: l = rnd_int(0, 1) ? -rnd_range(2, 9) : in + rnd_range(0, 9), len = rnd_range(0.5, 4); /* outside */
  }
  if (len < 0.25) len = 0.25;
  *lo = (float)l, *hi = (float)(l + len);
  if (rnd_int(0, 5) == 0) { float t = *lo; *lo = *hi; *hi = t; } /* flipped */
  if (*lo == *hi) *hi = *lo + 1.0f;
}

/* One sample of a random DALI geometry: the window (as random_resized_crop,
 * roi_start/roi_end or subpixel_scale make it: inside, the whole image,
 * around or outside it, flipped), output size (down- and upscaling, 1
 * pixel), filters and antialias; its CPU tables and the reference output. */
static int geo_make(rz_sample *s, int f32, int max_in, int max_out) {
  memset(s, 0, sizeof *s);
  s->w = rnd_int(1, max_in), s->h = rnd_int(1, max_in), s->c = rnd_int(1, 4);
  s->stride = (int64_t)s->w * s->c + rnd_int(0, 1) * rnd_int(0, 7);
  float lo[2], hi[2];
  random_window(s->w, &lo[0], &hi[0]);
  random_window(s->h, &lo[1], &hi[1]);
  int out[2];
  for (int d = 0; d < 2; d++) {
    double ext = fabs(hi[d] - lo[d]);
    switch (rnd_int(0, 3)) {
      case 0: out[d] = 1; break;
      case 1: out[d] = rnd_int(1, max_out); break;
      case 2: out[d] = (int)fmax(1, fmin(max_out, ext * rnd_range(0.05, 1.0))); break; /* down */
      default: out[d] = (int)fmax(1, fmin(max_out, ext * rnd_range(1.0, 6.0))); break; /* up */
    }
  }
  s->ow = out[0], s->oh = out[1];
  ladle__interp mn = (ladle__interp)rnd_int(0, 5), mg = rnd_int(0, 2) ? mn : (ladle__interp)rnd_int(0, 5);
  int aa = rnd_int(0, 2) != 0;
  ladle_status st = ladle__resize_geom_dali(&s->geom, s->w, s->h, lo, hi, s->ow, s->oh, mn, mg, aa);
  CHECK_OK(st);
  if (st == LADLE_OK) st = ladle__resize_plan_dali(&s->ax, &s->ay, s->w, s->h, lo, hi, s->ow, s->oh, mn, mg, aa);
  CHECK_OK(st);
  if (st != LADLE_OK) return 0;
  /* The geometry's bound holds the CPU's row length. */
  CHECK(s->ax.taps <= ladle__resize_dali_max_taps(&s->geom.x) && s->ay.taps <= ladle__resize_dali_max_taps(&s->geom.y));
  sample_fill(s, f32);
  s->dout2 = test_device_alloc(s->out_bytes);
  return 1;
}

/* Batches of random geometries, each sample given by its geometry (tables
 * planned on the GPU) or, at random, by its CPU tables (one launch mixing
 * both): GPU == CPU bit for bit, uint8 and float32 (float32 outputs change
 * with any bit of any weight, so this compares the planned weights too).
 * Then the fused kernel (uint8, an identity normalization to float32 and a
 * random crop/mirror) on the same batch given by geometry, against the same
 * launch given by the CPU tables. */
static void test_planned_on_gpu(void) {
  size_t samples = 0, planned = 0;
  for (int round = 0; round < 40; round++) {
    const int f32 = round % 2, n = round < 4 ? 1 : rnd_int(1, 24);
    const int big = round % 5 == 4;
    rz_sample *s = calloc((size_t)n, sizeof *s);
    ladle__gpu_resize_desc *d = calloc((size_t)n, sizeof *d), *dt = calloc((size_t)n, sizeof *d);
    ladle__cmn_params *cmn = calloc((size_t)n, sizeof *cmn);
    int ok = 1;
    for (int i = 0; i < n && ok; i++) {
      ok = geo_make(&s[i], f32, big ? 700 : 90, big ? 500 : 120);
      int geo = rnd_int(0, 3) != 0;
      planned += geo;
      dt[i] = (ladle__gpu_resize_desc){s[i].din, s[i].dout, s[i].h, s[i].w, s[i].stride, s[i].c, &s[i].ax, &s[i].ay,
                                       NULL};
      d[i] = dt[i];
      if (geo) d[i].ax = d[i].ay = NULL, d[i].geom = &s[i].geom;
    }
    if (ok) {
      size_t bytes = ladle__gpu_resize_param_bytes(d, n);
      void *host = test_pinned_alloc(bytes), *dev = test_device_alloc(bytes);
      /* Planned tables must not rely on zeroed memory. (Done before the
       * launch: a memset still running would overwrite the uploaded
       * parameters.) */
      test_fill(dev, 0xff, bytes);
      CHECK_OK(ladle__gpu_resize(d, n, f32 ? LADLE_FLOAT32 : LADLE_UINT8, host, dev, bytes, stream));
      for (int i = 0; i < n; i++) {
        samples++;
        test_download(s[i].got, s[i].dout, s[i].out_bytes, stream);
        int same = memcmp(s[i].got, s[i].ref, s[i].out_bytes) == 0;
        if (!same)
          fprintf(stderr,
                  "planned on GPU, round %d sample %d (%s, %s): %dx%dx%d -> %dx%d, tables %d, %d, filters %d/%d, "
                  "support %d/%d, differs\n",
                  round, i, f32 ? "f32" : "u8", d[i].geom ? "geometry" : "tables", s[i].w, s[i].h, s[i].c, s[i].ow,
                  s[i].oh, s[i].ax.taps, s[i].ay.taps, s[i].geom.x.table, s[i].geom.y.table, s[i].geom.x.support,
                  s[i].geom.y.support);
        CHECK(same);
      }
      if (!f32) {
        /* Fused: planned vs uploaded tables, the same crop and normalization. */
        for (int i = 0; i < n; i++) {
          ladle__cmn_params *p = &cmn[i];
          p->w = rnd_int(1, s[i].ow + 2), p->h = rnd_int(1, s[i].oh + 2);
          p->x0 = rnd_int(-1, s[i].ow - 1), p->y0 = rnd_int(-1, s[i].oh - 1);
          p->mirror = rnd_int(0, 1), p->channels = s[i].c, p->scale = 1.0f, p->dtype = LADLE_FLOAT32;
          for (int c = 0; c < 4; c++) p->inv_std[c] = 1.0f, p->fill[c] = -1.0f;
          size_t ob = (size_t)p->w * p->h * s[i].c * sizeof(float);
          cudaFree(s[i].dout);
          cudaFree(s[i].dout2);
          s[i].dout = test_device_alloc(ob);
          s[i].dout2 = test_device_alloc(ob);
          d[i].out = s[i].dout, dt[i].out = s[i].dout2;
        }
        size_t b2 = ladle__gpu_resize_param_bytes(dt, n);
        void *host2 = test_pinned_alloc(b2), *dev2 = test_device_alloc(b2);
        CHECK_OK(ladle__gpu_fused(d, cmn, n, host, dev, bytes, stream));
        CHECK_OK(ladle__gpu_fused(dt, cmn, n, host2, dev2, b2, stream));
        for (int i = 0; i < n; i++) {
          size_t ob = (size_t)cmn[i].w * cmn[i].h * s[i].c * sizeof(float);
          void *a = malloc(ob), *b = malloc(ob);
          test_download(a, s[i].dout, ob, stream);
          test_download(b, s[i].dout2, ob, stream);
          CHECK(memcmp(a, b, ob) == 0);
          free(a);
          free(b);
        }
        cudaFreeHost(host2);
        cudaFree(dev2);
      }
      cudaFreeHost(host);
      cudaFree(dev);
    }
    for (int i = 0; i < n; i++) release(&s[i]);
    free(s);
    free(d);
    free(dt);
    free(cmn);
  }
  fprintf(stderr, "  planned on GPU: %zu samples (%zu by geometry), GPU == CPU\n", samples, planned);
}

/* A geometry that does not match its image is refused. */
static void test_planned_bad(void) {
  ladle__resize_dali_geom g;
  const float lo[2] = {0, 0}, hi[2] = {10, 10};
  CHECK_OK(ladle__resize_geom_dali(&g, 10, 10, lo, hi, 5, 5, LADLE__INTERP_LINEAR, LADLE__INTERP_LINEAR, 1));
  void *buf = test_device_alloc(1024);
  ladle__gpu_resize_desc d = {buf, buf, 10, 11, 33, 3, NULL, NULL, &g}; /* 11 wide, planned for 10 */
  size_t bytes = ladle__gpu_resize_param_bytes(&d, 1);
  void *host = test_pinned_alloc(bytes), *dev = test_device_alloc(bytes);
  CHECK(ladle__gpu_resize(&d, 1, LADLE_UINT8, host, dev, bytes, stream) == LADLE_ERROR_INVALID_ARGUMENT);
  cudaFreeHost(host);
  cudaFree(dev);
  cudaFree(buf);
}

/* Not a check: times the launches of op_bench's resize rows (256 uint8 HWC
 * images of about 463 x 403) and prints them, so that the kernel's own time
 * (stream time: the parameter upload, the planning kernel if any and the
 * resampling kernel) can be told from the operator's, with the tables planned
 * on the host (uploaded) and on the GPU (the operator's way). Host time: the
 * call itself (parameters, and tables, copied into the parameter buffer);
 * planning: the batch's host work before the call (ladle__resize_plan_dali,
 * or ladle__resize_geom_dali alone), on one thread. */
enum { TB = 256 };

static ladle_status launch_resize(const void *d, void *host, void *dev, size_t bytes) {
  return ladle__gpu_resize(d, TB, LADLE_UINT8, host, dev, bytes, stream);
}

static void time_launches(const char *name, const char *how, const ladle__gpu_resize_desc *d, double plan_ms) {
  size_t bytes = ladle__gpu_resize_param_bytes(d, TB);
  double host_ms = 0;
  float ms = test_time_launches(launch_resize, d, bytes, stream, &host_ms);
  fprintf(stderr,
          "  time %-20s %-9s stream %.3f ms/batch, host call %.3f ms, parameter buffer %.2f MB (planned tables: "
          "written on the GPU, not uploaded), planning %.3f ms (one thread)\n",
          name, how, ms, host_ms, bytes / 1e6, plan_ms);
}

static void time_resize(const char *name, const int *w, const int *h, void *const *din, ladle__interp interp,
                        int mode) {
  static ladle__resize_axis ax[TB], ay[TB];
  static ladle__resize_dali_geom geom[TB];
  static ladle__gpu_resize_desc d[TB], dg[TB];
  static void *dout[TB];
  double plan_ms = 0, geom_ms = 0;
  for (int i = 0; i < TB; i++) {
    int ow = 224, oh = 224;
    if (mode == 1) { /* resize_shorter 256 */
      float sc = 256.0f / (float)(w[i] < h[i] ? w[i] : h[i]);
      ow = (int)lroundf(sc * (float)w[i]), oh = (int)lroundf(sc * (float)h[i]);
    } else if (mode == 2) {
      ow = 2 * w[i], oh = 2 * h[i];
    }
    float lo[2] = {0, 0}, hi[2] = {(float)w[i], (float)h[i]};
    double t0 = test_now_ms();
    CHECK_OK(ladle__resize_plan_dali(&ax[i], &ay[i], w[i], h[i], lo, hi, ow, oh, interp, interp, 1));
    double t1 = test_now_ms();
    CHECK_OK(ladle__resize_geom_dali(&geom[i], w[i], h[i], lo, hi, ow, oh, interp, interp, 1));
    geom_ms += test_now_ms() - t1;
    plan_ms += t1 - t0;
    dout[i] = test_device_alloc((size_t)ow * oh * 3);
    d[i] = (ladle__gpu_resize_desc){din[i], dout[i], h[i], w[i], (int64_t)w[i] * 3, 3, &ax[i], &ay[i], NULL};
    dg[i] = (ladle__gpu_resize_desc){din[i], dout[i], h[i], w[i], (int64_t)w[i] * 3, 3, NULL, NULL, &geom[i]};
  }
  fprintf(stderr, "  time %-20s taps %d x %d (sample 0)\n", name, ax[0].taps, ay[0].taps);
  time_launches(name, "tables", d, plan_ms);
  time_launches(name, "geometry", dg, geom_ms);
  for (int i = 0; i < TB; i++) {
    cudaFree(dout[i]);
    ladle__resize_axis_free(&ax[i]);
    ladle__resize_axis_free(&ay[i]);
  }
}

static void report_times(void) {
  static int w[TB], h[TB];
  static void *din[TB];
  size_t max_bytes = 540 * 470 * 3;
  uint8_t *buf = malloc(max_bytes);
  for (size_t i = 0; i < max_bytes; i++) buf[i] = (uint8_t)ladle__rng_u32(&rng);
  for (int i = 0; i < TB; i++) {
    w[i] = rnd_int(386, 540), h[i] = rnd_int(336, 470);
    din[i] = test_device_copy(buf, (size_t)w[i] * h[i] * 3);
  }
  free(buf);
  time_resize("resize linear 224", w, h, din, LADLE__INTERP_LINEAR, 0);
  time_resize("resize cubic 224", w, h, din, LADLE__INTERP_CUBIC, 0);
  time_resize("resize nn 224", w, h, din, LADLE__INTERP_NN, 0);
  time_resize("resize shorter 256", w, h, din, LADLE__INTERP_LINEAR, 1);
  time_resize("resize linear 2x up", w, h, din, LADLE__INTERP_LINEAR, 2);
  for (int i = 0; i < TB; i++) cudaFree(din[i]);
}

int main(void) {
  TEST_SKIP_WITHOUT_DEVICE();
  ladle__rng_init(&rng, 99, 3, 0, 0);
  CHECK_OK(ladle__cuda_use_device(0, NULL));
  CHECK_OK(ladle__cuda_stream_create(0, &stream));
  RUN(test_chosen);
  RUN(test_random);
  RUN(test_planned_on_gpu);
  RUN(test_planned_bad);
  RUN(report_times);
  ladle__cuda_stream_destroy(stream);
  TEST_MAIN_END();
}

#endif /* LADLE_HAVE_CUDA */
