/* Tests for src/codec: JPEG decodes against PIL's (the .ref.png files in tests/data), PNG decodes
 * against the pixel formulas of tests/data/make_test_images.py, EXIF orientation, roi
 * and DCT-scaled decoding against crops of full decodes, the pixel cap, corrupt and
 * truncated inputs, and decoding from several threads at once.
 * Run from the repository root, or with LADLE_TEST_DATA=<dir of the test images>. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h> /* after stdio.h: it needs FILE and size_t */

#include "codec/image.h"
#include "codec/image_internal.h"
#include "core/rng.h"
#include "test.h"

/* Largest per-channel difference allowed between our JPEG decode and PIL's. Both use
 * libjpeg-turbo with the same settings (ISLOW IDCT, fancy upsampling), so the measured
 * difference is 0 on the machine that made the references; 1 leaves room for another
 * libjpeg-turbo build. CMYK goes through our own conversion, which rounds like PIL. */
#define JPEG_TOLERANCE 1

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */
/* ------------------------------------------------------------------------ */

typedef struct blob {
  uint8_t *data;
  size_t size;
} blob;

typedef struct image {
  uint8_t *px;
  int w, h, ch;
} image;

static const char *data_dir(void) {
  const char *d = getenv("LADLE_TEST_DATA");
  return d && *d ? d : "tests/data";
}

static blob load(const char *file) {
  blob b = {NULL, 0};
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", data_dir(), file);
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "cannot open %s (run from the repository root or set LADLE_TEST_DATA)\n", path);
    test_failures++;
    b.data = calloc(1, 1);
    return b;
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  b.data = malloc(n > 0 ? (size_t)n : 1);
  b.size = fread(b.data, 1, (size_t)n, f);
  fclose(f);
  return b;
}

static void image_free(image *im) {
  free(im->px);
  im->px = NULL;
}

/* probe + output_size + decode, like an operator does. */
static ladle_status decode_mem(const uint8_t *data, size_t size, const char *name,
                               const ladle__decode_params *p, image *im) {
  ladle__image_info info;
  memset(im, 0, sizeof *im);
  ladle_status st = ladle__image_probe(data, size, name, &info);
  if (st != LADLE_OK) return st;
  st = ladle__image_output_size(&info, p, name, &im->w, &im->h, &im->ch);
  if (st != LADLE_OK) return st;
  im->px = malloc((size_t)im->w * im->h * im->ch);
  st = ladle__image_decode(data, size, name, &info, p, im->px);
  if (st != LADLE_OK) image_free(im);
  return st;
}

static image decode_params(const char *file, const ladle__decode_params *p) {
  blob b = load(file);
  image im;
  CHECK_OK(decode_mem(b.data, b.size, file, p, &im));
  free(b.data);
  return im;
}

static image decode_file(const char *file, ladle__color color) {
  ladle__decode_params p;
  ladle__decode_params_init(&p);
  p.color = color;
  return decode_params(file, &p);
}

/* A reference PNG (RGB or gray), read with our PNG path (tested on its own below). */
static image load_ref(const char *file) {
  blob b = load(file);
  ladle__image_info info;
  image im = {NULL, 0, 0, 0};
  CHECK_OK(ladle__image_probe(b.data, b.size, file, &info));
  ladle__decode_params p;
  ladle__decode_params_init(&p);
  p.color = info.components == 1 ? LADLE__COLOR_GRAY : LADLE__COLOR_RGB;
  CHECK_OK(decode_mem(b.data, b.size, file, &p, &im));
  free(b.data);
  return im;
}

/* Largest per-byte difference, -1 when the shapes differ; *mean gets the mean. */
static int image_diff(const image *a, const image *b, double *mean) {
  if (!a->px || !b->px || a->w != b->w || a->h != b->h || a->ch != b->ch) return -1;
  size_t n = (size_t)a->w * a->h * a->ch;
  int worst = 0;
  double sum = 0;
  for (size_t i = 0; i < n; i++) {
    int d = abs((int)a->px[i] - (int)b->px[i]);
    if (d > worst) worst = d;
    sum += d;
  }
  if (mean) *mean = sum / (double)n;
  return worst;
}

/* Whether part equals full's region at (x, y). */
static int crop_equals(const image *full, int x, int y, const image *part) {
  if (!full->px || !part->px || full->ch != part->ch || x < 0 || y < 0 || x + part->w > full->w ||
      y + part->h > full->h)
    return 0;
  size_t row = (size_t)part->w * part->ch;
  for (int r = 0; r < part->h; r++)
    if (memcmp(full->px + ((size_t)(y + r) * full->w + x) * full->ch, part->px + r * row, row))
      return 0;
  return 1;
}

static int error_names(const char *name) { return strstr(ladle_last_error(), name) != NULL; }

static ladle_status try_decode(const uint8_t *data, size_t size, const char *name,
                               ladle__color color);

static int luma(int r, int g, int b) { return (19595 * r + 38470 * g + 7471 * b + 32768) >> 16; }

/* ------------------------------------------------------------------------ */
/* The PNG formulas (keep in step with make_test_images.py)                  */
/* ------------------------------------------------------------------------ */

static int f_rgb(int x, int y, int c) {
  return (x * (3 + c) + y * (5 + 2 * c) + ((x * y) >> (2 + c))) & 255;
}
static int f_pal_color(int i, int c) {
  static const int mul[3] = {53, 97, 251}, add[3] = {0, 11, 200};
  return (mul[c] * i + add[c]) & 255;
}

typedef enum png_kind { K_RGB, K_GRAY, K_PAL37, K_PAL13, K_GRAY2, K_GRAY1 } png_kind;

static int png_expected(png_kind k, int x, int y, int c) {
  switch (k) {
    case K_RGB:
      return f_rgb(x, y, c);
    case K_GRAY:
      return f_rgb(x, y, 0);
    case K_PAL37:
      return f_pal_color((x + 3 * y) % 37, c);
    case K_PAL13:
      return f_pal_color((x + 3 * y) % 13, c);
    case K_GRAY2:
      return ((x + y) & 3) * 85;
    case K_GRAY1:
      return ((x ^ y) & 1) * 255;
  }
  return -1;
}

static const struct png_case {
  const char *file;
  int w, h, components;
  png_kind kind;
} png_cases[] = {
    {"p_rgb8.png", 45, 31, 3, K_RGB},       {"p_rgba8.png", 45, 31, 4, K_RGB},
    {"p_rgb16.png", 45, 31, 3, K_RGB},      {"p_gray8.png", 45, 31, 1, K_GRAY},
    {"p_gray16.png", 45, 31, 1, K_GRAY},    {"p_graya8.png", 45, 31, 2, K_GRAY},
    {"p_pal8.png", 45, 31, 3, K_PAL37},     {"p_pal4.png", 45, 31, 3, K_PAL13},
    {"p_gray2.png", 45, 31, 1, K_GRAY2},    {"p_gray1.png", 45, 31, 1, K_GRAY1},
    {"p_rgb8_adam7.png", 45, 31, 3, K_RGB}, {"p_rgba16_adam7.png", 45, 31, 4, K_RGB},
    {"p_tiny_adam7.png", 3, 2, 3, K_RGB},   {"p_named.JPEG", 45, 31, 3, K_RGB},
};

/* ------------------------------------------------------------------------ */
/* Probing                                                                   */
/* ------------------------------------------------------------------------ */

static void test_probe(void) {
  static const struct {
    const char *file;
    ladle__image_format format;
    int w, h, sw, sh, components, orientation, progressive, sub;
  } cases[] = {
      {"j420.jpg", LADLE__IMAGE_JPEG, 131, 97, 131, 97, 3, 1, 0, 420},
      {"j422.jpg", LADLE__IMAGE_JPEG, 131, 97, 131, 97, 3, 1, 0, 422},
      {"j444.jpg", LADLE__IMAGE_JPEG, 131, 97, 131, 97, 3, 1, 0, 444},
      {"jprog.jpg", LADLE__IMAGE_JPEG, 131, 97, 131, 97, 3, 1, 1, 420},
      {"jgray.jpg", LADLE__IMAGE_JPEG, 131, 97, 131, 97, 1, 1, 0, 0},
      {"jcmyk.jpg", LADLE__IMAGE_JPEG, 131, 97, 131, 97, 4, 1, 0, 444},
      {"exif_bad.jpg", LADLE__IMAGE_JPEG, 24, 16, 24, 16, 3, 1, 0, 420},
      {"orient_1.jpg", LADLE__IMAGE_JPEG, 61, 43, 61, 43, 3, 1, 0, 420},
      {"orient_3.jpg", LADLE__IMAGE_JPEG, 61, 43, 61, 43, 3, 3, 0, 420},
      {"orient_6.jpg", LADLE__IMAGE_JPEG, 61, 43, 43, 61, 3, 6, 0, 420},
      {"orient_8.jpg", LADLE__IMAGE_JPEG, 61, 43, 43, 61, 3, 8, 0, 420},
      {"p_named.JPEG", LADLE__IMAGE_PNG, 45, 31, 45, 31, 3, 1, 0, 0},
      {"p_rgba16_adam7.png", LADLE__IMAGE_PNG, 45, 31, 45, 31, 4, 1, 0, 0},
      {"p_graya8.png", LADLE__IMAGE_PNG, 45, 31, 45, 31, 2, 1, 0, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    blob b = load(cases[i].file);
    ladle__image_info info;
    CHECK_OK(ladle__image_probe(b.data, b.size, cases[i].file, &info));
    CHECK(info.format == cases[i].format);
    CHECK(info.width == cases[i].w && info.height == cases[i].h);
    CHECK(info.stored_width == cases[i].sw && info.stored_height == cases[i].sh);
    CHECK(info.components == cases[i].components);
    CHECK(info.orientation == cases[i].orientation);
    CHECK(info.progressive == cases[i].progressive);
    CHECK(info.chroma_subsampling == cases[i].sub);
    free(b.data);
  }
  CHECK(ladle__color_channels(LADLE__COLOR_RGB) == 3);
  CHECK(ladle__color_channels(LADLE__COLOR_BGR) == 3);
  CHECK(ladle__color_channels(LADLE__COLOR_GRAY) == 1);
  CHECK(strcmp(ladle__image_format_name(LADLE__IMAGE_PNG), "PNG") == 0);
}

/* ------------------------------------------------------------------------ */
/* JPEG against PIL                                                          */
/* ------------------------------------------------------------------------ */

static void test_jpeg_reference(void) {
  static const char *files[][2] = {
      {"j420.jpg", "j420.ref.png"},   {"j422.jpg", "j422.ref.png"},
      {"j444.jpg", "j444.ref.png"},   {"jprog.jpg", "jprog.ref.png"},
      {"jcmyk.jpg", "jcmyk.ref.png"}, {"exif_bad.jpg", "exif_bad.ref.png"},
  };
  int worst_all = 0;
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    image rgb = decode_file(files[i][0], LADLE__COLOR_RGB);
    image bgr = decode_file(files[i][0], LADLE__COLOR_BGR);
    image gray = decode_file(files[i][0], LADLE__COLOR_GRAY);
    image ref = load_ref(files[i][1]);
    double mean = 0;
    int worst = image_diff(&rgb, &ref, &mean);
    if (worst > worst_all) worst_all = worst;
    CHECK(worst >= 0 && worst <= JPEG_TOLERANCE);
    if (worst != 0)
      fprintf(stderr, "  %s: max diff %d, mean %.4f vs PIL\n", files[i][0], worst, mean);
    /* BGR is RGB swapped, exactly. */
    CHECK(bgr.w == rgb.w && bgr.h == rgb.h && bgr.ch == 3);
    int swapped = 1;
    for (size_t k = 0; bgr.px && rgb.px && k < (size_t)rgb.w * rgb.h; k++)
      swapped &= bgr.px[3 * k] == rgb.px[3 * k + 2] && bgr.px[3 * k + 1] == rgb.px[3 * k + 1] &&
                 bgr.px[3 * k + 2] == rgb.px[3 * k];
    CHECK(swapped);
    /* Gray: libjpeg's Y channel for YCbCr, which is the luma of its RGB within
     * rounding (2) at 4:4:4; with subsampled chroma, upsampling and clipping in the RGB
     * path move the luma by up to 11 (measured), so only a loose bound there. CMYK:
     * our luma of our RGB, exactly. */
    CHECK(gray.ch == 1 && gray.w == rgb.w && gray.h == rgb.h);
    int cmyk = strcmp(files[i][0], "jcmyk.jpg") == 0, gray_ok = 1;
    int bound = cmyk ? 0 : strcmp(files[i][0], "j444.jpg") == 0 ? 2 : 16;
    for (size_t k = 0; gray.px && rgb.px && k < (size_t)rgb.w * rgb.h; k++) {
      int y = luma(rgb.px[3 * k], rgb.px[3 * k + 1], rgb.px[3 * k + 2]);
      gray_ok &= abs(gray.px[k] - y) <= bound;
    }
    CHECK(gray_ok);
    image_free(&rgb), image_free(&bgr), image_free(&gray), image_free(&ref);
  }
  fprintf(stderr, "  JPEG vs PIL: largest difference %d (tolerance %d)\n", worst_all,
          JPEG_TOLERANCE);

  /* Gray JPEG: gray output equals PIL's; RGB output replicates it. Colour JPEG to gray:
   * equals PIL's draft("L") decode, which is libjpeg's Y channel too. */
  image g = decode_file("jgray.jpg", LADLE__COLOR_GRAY);
  image g3 = decode_file("jgray.jpg", LADLE__COLOR_RGB);
  image gref = load_ref("jgray.ref.png");
  CHECK(image_diff(&g, &gref, NULL) == 0);
  int rep = g3.px && g.px && g3.ch == 3;
  for (size_t k = 0; rep && k < (size_t)g.w * g.h; k++)
    rep = g3.px[3 * k] == g.px[k] && g3.px[3 * k + 1] == g.px[k] && g3.px[3 * k + 2] == g.px[k];
  CHECK(rep);
  image y420 = decode_file("j420.jpg", LADLE__COLOR_GRAY);
  image yref = load_ref("j420_gray.ref.png");
  CHECK(image_diff(&y420, &yref, NULL) == 0);
  image_free(&g), image_free(&g3), image_free(&gref), image_free(&y420), image_free(&yref);
}

/* ------------------------------------------------------------------------ */
/* CMYK / YCCK written by libjpeg here, with and without the Adobe marker    */
/* ------------------------------------------------------------------------ */

static blob encode_cmyk(int w, int h, const uint8_t *cmyk, J_COLOR_SPACE space, int adobe) {
  struct jpeg_compress_struct c;
  struct jpeg_error_mgr e;
  unsigned char *buf = NULL;
  unsigned long n = 0;
  c.err = jpeg_std_error(&e);
  jpeg_create_compress(&c);
  jpeg_mem_dest(&c, &buf, &n);
  c.image_width = (JDIMENSION)w;
  c.image_height = (JDIMENSION)h;
  c.input_components = 4;
  c.in_color_space = JCS_CMYK;
  jpeg_set_defaults(&c);
  jpeg_set_colorspace(&c, space);
  jpeg_set_quality(&c, 100, TRUE);
  c.write_Adobe_marker = adobe ? TRUE : FALSE;
  for (int i = 0; i < c.num_components; i++)
    c.comp_info[i].h_samp_factor = c.comp_info[i].v_samp_factor = 1;
  jpeg_start_compress(&c, TRUE);
  while (c.next_scanline < c.image_height) {
    JSAMPROW row = (JSAMPROW)(cmyk + (size_t)c.next_scanline * w * 4);
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  blob b = {buf, n};
  return b;
}

static void test_cmyk_ycck(void) {
  enum { W = 48, H = 40 };
  static uint8_t cmyk[W * H * 4];
  for (int y = 0; y < H; y++)
    for (int x = 0; x < W; x++) {
      uint8_t *p = cmyk + (y * W + x) * 4;
      p[0] = (uint8_t)(20 + 4 * x), p[1] = (uint8_t)(20 + 4 * y),
      p[2] = (uint8_t)(20 + 2 * (x + y));
      p[3] = (uint8_t)(255 - 2 * x - y);
    }
  static const struct {
    J_COLOR_SPACE space;
    int adobe;
    const char *name;
  } cases[] = {
      {JCS_CMYK, 1, "adobe-cmyk"}, {JCS_YCCK, 1, "adobe-ycck"}, {JCS_CMYK, 0, "plain-cmyk"}};
  for (size_t i = 0; i < 3; i++) {
    blob b = encode_cmyk(W, H, cmyk, cases[i].space, cases[i].adobe);
    ladle__image_info info;
    CHECK_OK(ladle__image_probe(b.data, b.size, cases[i].name, &info));
    CHECK(info.components == 4 && info.width == W && info.height == H);
    ladle__decode_params p;
    ladle__decode_params_init(&p);
    image im;
    CHECK_OK(decode_mem(b.data, b.size, cases[i].name, &p, &im));
    int worst = 0;
    double sum = 0;
    for (int k = 0; im.px && k < W * H; k++) {
      const uint8_t *s = cmyk + 4 * k;
      for (int c = 0; c < 3; c++) {
        /* Adobe: stored values are 255 - ink, R = C'K'/255; plain: R = (255-C)(255-K)/255. */
        double want = cases[i].adobe ? s[c] * s[3] / 255.0 : (255 - s[c]) * (255 - s[3]) / 255.0;
        int d = abs((int)im.px[3 * k + c] - (int)(want + 0.5));
        if (d > worst) worst = d;
        sum += d;
      }
    }
    fprintf(stderr, "  %s: max diff %d, mean %.3f vs exact (quality 100)\n", cases[i].name, worst,
            sum / (W * H * 3));
    CHECK(im.px && worst <= 4 && sum / (W * H * 3) < 1.0);
    image_free(&im);
    free(b.data);
  }
}

/* ------------------------------------------------------------------------ */
/* JPEG variants Pillow cannot write, encoded here with libjpeg              */
/* ------------------------------------------------------------------------ */

typedef struct variant {
  const char *name;
  J_COLOR_SPACE space;
  int samp[3][2]; /* h, v per component; 0: libjpeg's default */
  int progressive, arith, restart_interval, restart_rows;
  int expect_sub;
} variant;

static blob encode_variant(const variant *v, int w, int h, const uint8_t *rgb) {
  struct jpeg_compress_struct c;
  struct jpeg_error_mgr e;
  unsigned char *buf = NULL;
  unsigned long n = 0;
  c.err = jpeg_std_error(&e);
  jpeg_create_compress(&c);
  jpeg_mem_dest(&c, &buf, &n);
  c.image_width = (JDIMENSION)w;
  c.image_height = (JDIMENSION)h;
  c.input_components = 3;
  c.in_color_space = JCS_RGB;
  jpeg_set_defaults(&c);
  jpeg_set_colorspace(&c, v->space);
  jpeg_set_quality(&c, 95, TRUE);
  for (int i = 0; i < c.num_components && i < 3; i++)
    if (v->samp[i][0]) {
      c.comp_info[i].h_samp_factor = v->samp[i][0];
      c.comp_info[i].v_samp_factor = v->samp[i][1];
    }
  c.arith_code = v->arith ? TRUE : FALSE;
  c.restart_interval = (unsigned)v->restart_interval;
  c.restart_in_rows = v->restart_rows;
  if (v->progressive) jpeg_simple_progression(&c);
  jpeg_start_compress(&c, TRUE);
  while (c.next_scanline < c.image_height) {
    JSAMPROW row = (JSAMPROW)(rgb + (size_t)c.next_scanline * w * 3);
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  blob b = {buf, n};
  return b;
}

static void test_jpeg_variants(void) {
  static const variant variants[] = {
      {"h1v2-440", JCS_YCbCr, {{1, 2}, {1, 1}, {1, 1}}, 0, 0, 0, 0, 440},
      {"h4v1-411", JCS_YCbCr, {{4, 1}, {1, 1}, {1, 1}}, 0, 0, 0, 0, 411},
      {"restart-every-mcu", JCS_YCbCr, {{2, 2}, {1, 1}, {1, 1}}, 0, 0, 1, 0, 420},
      {"restart-every-row-422", JCS_YCbCr, {{2, 1}, {1, 1}, {1, 1}}, 0, 0, 0, 1, 422},
      {"rgb-colourspace", JCS_RGB, {{0, 0}}, 0, 0, 0, 0, 444},
      {"arithmetic", JCS_YCbCr, {{2, 2}, {1, 1}, {1, 1}}, 0, 1, 0, 0, 420},
      {"arithmetic-progressive", JCS_YCbCr, {{2, 2}, {1, 1}, {1, 1}}, 1, 1, 0, 0, 420},
      {"progressive-444-restarts", JCS_YCbCr, {{1, 1}, {1, 1}, {1, 1}}, 1, 0, 3, 0, 444},
      {"progressive-gray", JCS_GRAYSCALE, {{0, 0}}, 1, 0, 0, 0, 0},
      {"asymmetric", JCS_YCbCr, {{2, 2}, {2, 1}, {1, 2}}, 0, 0, 0, 0, -1},
  };
  enum { W = 75, H = 53 };
  static uint8_t rgb[W * H * 3];
  for (int y = 0; y < H; y++)
    for (int x = 0; x < W; x++) {
      uint8_t *q = rgb + (y * W + x) * 3;
      q[0] = (uint8_t)(40 + 2 * x), q[1] = (uint8_t)(30 + 3 * y);
      q[2] = (uint8_t)(60 + x + y + (x > 40 && y < 20 ? 60 : 0));
    }
  ladle__rng rng;
  ladle__rng_init(&rng, 5, 5, 0, 0);
  for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++) {
    const variant *v = &variants[i];
    const char *name = v->name;
    blob b = encode_variant(v, W, H, rgb);
    ladle__image_info info;
    CHECK_OK(ladle__image_probe(b.data, b.size, name, &info));
    CHECK(info.width == W && info.height == H && info.chroma_subsampling == v->expect_sub &&
          info.progressive == v->progressive);
    ladle__decode_params p;
    ladle__decode_params_init(&p);
    image full;
    CHECK_OK(decode_mem(b.data, b.size, name, &p, &full));
    /* Close to the source (quality 95). */
    double sum = 0;
    for (int k = 0; full.px && k < W * H; k++) {
      const uint8_t *q = rgb + 3 * k;
      for (int c = 0; c < 3; c++) {
        int want = v->space == JCS_GRAYSCALE ? luma(q[0], q[1], q[2]) : q[c];
        sum += abs((int)full.px[3 * k + c] - want);
      }
    }
    CHECK(full.px && sum / (W * H * 3) < 3.0);
    if (!full.px || sum / (W * H * 3) >= 3.0)
      fprintf(stderr, "  %s: mean diff %.2f from the source\n", name, sum / (W * H * 3));
    /* Random rois and scaled rois against crops of full decodes. */
    int failures = 0;
    for (int k = 0; k < 25; k++) {
      ladle__decode_params q;
      ladle__decode_params_init(&q);
      q.color = (ladle__color)(k % 3);
      image whole, part;
      q.force_scale = k < 15 ? 8 : 1 + (int)ladle__rng_below(&rng, 8);
      CHECK_OK(decode_mem(b.data, b.size, name, &q, &whole));
      q.has_roi = 1;
      q.roi_x = (int)ladle__rng_below(&rng, W);
      q.roi_y = (int)ladle__rng_below(&rng, H);
      q.roi_w = 1 + (int)ladle__rng_below(&rng, (uint64_t)(W - q.roi_x));
      q.roi_h = 1 + (int)ladle__rng_below(&rng, (uint64_t)(H - q.roi_y));
      ladle__image_geometry g;
      CHECK_OK(ladle__image_output_geometry(&info, &q, name, &g));
      CHECK_OK(decode_mem(b.data, b.size, name, &q, &part));
      int ok = crop_equals(&whole, g.x, g.y, &part);
      if (!ok)
        fprintf(stderr, "  %s: roi %d,%d %dx%d scale %d differs from the crop\n", name, q.roi_x,
                q.roi_y, q.roi_w, q.roi_h, q.force_scale);
      failures += !ok;
      image_free(&whole), image_free(&part);
    }
    CHECK(failures == 0);
    /* Truncated: an error. Without its EOI: identical, or (arithmetic coding, where
     * running out cannot be told from a cut) an error. */
    for (int k = 1; k < 10; k += 2) {
      size_t n = b.size * (size_t)k / 10;
      uint8_t *cut = malloc(n);
      memcpy(cut, b.data, n);
      CHECK(try_decode(cut, n, name, LADLE__COLOR_RGB) == LADLE_ERROR_CORRUPT_DATA);
      CHECK(error_names(name));
      free(cut);
    }
    image noeoi;
    ladle_status st = decode_mem(b.data, b.size - 2, name, &p, &noeoi);
    CHECK(v->arith ? st == LADLE_ERROR_CORRUPT_DATA || image_diff(&noeoi, &full, NULL) == 0
                   : st == LADLE_OK && image_diff(&noeoi, &full, NULL) == 0);
    image_free(&noeoi), image_free(&full);
    free(b.data);
  }
}

/* A legal progressive gray JPEG with 1 + 63 * (al + 1) scans: the DC, then each AC
 * coefficient alone, first at precision al and refined bit by bit. */
static blob encode_many_scans(int al, uint8_t *gray, int w, int h) {
  static jpeg_scan_info scans[1 + 63 * 11];
  int n = 0;
  scans[n++] = (jpeg_scan_info){1, {0}, 0, 0, 0, 0};
  for (int k = 1; k < 64; k++) {
    scans[n++] = (jpeg_scan_info){1, {0}, k, k, 0, al};
    for (int a = al; a > 0; a--) scans[n++] = (jpeg_scan_info){1, {0}, k, k, a, a - 1};
  }
  struct jpeg_compress_struct c;
  struct jpeg_error_mgr e;
  unsigned char *buf = NULL;
  unsigned long size = 0;
  c.err = jpeg_std_error(&e);
  jpeg_create_compress(&c);
  jpeg_mem_dest(&c, &buf, &size);
  c.image_width = (JDIMENSION)w;
  c.image_height = (JDIMENSION)h;
  c.input_components = 1;
  c.in_color_space = JCS_GRAYSCALE;
  jpeg_set_defaults(&c);
  c.scan_info = scans;
  c.num_scans = n;
  jpeg_start_compress(&c, TRUE);
  while (c.next_scanline < c.image_height) {
    JSAMPROW row = gray + (size_t)c.next_scanline * w;
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  blob b = {buf, size};
  return b;
}

static void test_scan_limit(void) {
  enum { W = 24, H = 16 };
  static uint8_t gray[W * H];
  for (int k = 0; k < W * H; k++) gray[k] = (uint8_t)(k * 7);
  /* 253 scans: fine. 694 scans: over the limit of 500 (a hostile-file guard). */
  blob ok = encode_many_scans(3, gray, W, H), bad = encode_many_scans(10, gray, W, H);
  ladle__image_info info;
  CHECK_OK(ladle__image_probe(bad.data, bad.size, "many-scans", &info));
  CHECK(info.progressive == 1);
  CHECK(try_decode(ok.data, ok.size, "253-scans", LADLE__COLOR_GRAY) == LADLE_OK);
  CHECK(try_decode(bad.data, bad.size, "694-scans", LADLE__COLOR_GRAY) == LADLE_ERROR_LIMIT);
  CHECK(error_names("694-scans") && strstr(ladle_last_error(), "500 scans"));
  free(ok.data), free(bad.data);
}

/* ------------------------------------------------------------------------ */
/* PNG against the formulas                                                  */
/* ------------------------------------------------------------------------ */

static void test_png_formats(void) {
  for (size_t i = 0; i < sizeof png_cases / sizeof png_cases[0]; i++) {
    const struct png_case *pc = &png_cases[i];
    blob b = load(pc->file);
    ladle__image_info info;
    CHECK_OK(ladle__image_probe(b.data, b.size, pc->file, &info));
    CHECK(info.format == LADLE__IMAGE_PNG && info.width == pc->w && info.height == pc->h &&
          info.components == pc->components && info.orientation == 1);
    int gray_src = pc->kind == K_GRAY || pc->kind == K_GRAY2 || pc->kind == K_GRAY1;
    for (int color = 0; color < 3; color++) {
      ladle__decode_params p;
      ladle__decode_params_init(&p);
      p.color = (ladle__color)color;
      image im;
      CHECK_OK(decode_mem(b.data, b.size, pc->file, &p, &im));
      int ok = im.px != NULL && im.w == pc->w && im.h == pc->h &&
               im.ch == ladle__color_channels(p.color);
      for (int y = 0; ok && y < pc->h; y++)
        for (int x = 0; ok && x < pc->w; x++) {
          int v[3];
          for (int c = 0; c < 3; c++) v[c] = png_expected(pc->kind, x, y, gray_src ? 0 : c);
          const uint8_t *q = im.px + ((size_t)y * im.w + x) * im.ch;
          if (p.color == LADLE__COLOR_GRAY)
            ok = q[0] == (gray_src ? v[0] : luma(v[0], v[1], v[2]));
          else if (p.color == LADLE__COLOR_RGB)
            ok = q[0] == v[0] && q[1] == v[1] && q[2] == v[2];
          else
            ok = q[0] == v[2] && q[1] == v[1] && q[2] == v[0];
        }
      if (!ok) fprintf(stderr, "  %s colour %d differs from its formula\n", pc->file, color);
      CHECK(ok);
      image_free(&im);
    }
    free(b.data);
  }
}

/* ------------------------------------------------------------------------ */
/* EXIF orientation                                                          */
/* ------------------------------------------------------------------------ */

/* The stored pixel shown at displayed (dx, dy), straight from the EXIF definitions. */
static void exif_source(int o, int dx, int dy, int sw, int sh, int *sx, int *sy) {
  switch (o) {
    case 1:
      *sx = dx, *sy = dy;
      break;
    case 2:
      *sx = sw - 1 - dx, *sy = dy;
      break;
    case 3:
      *sx = sw - 1 - dx, *sy = sh - 1 - dy;
      break;
    case 4:
      *sx = dx, *sy = sh - 1 - dy;
      break;
    case 5:
      *sx = dy, *sy = dx;
      break;
    case 6:
      *sx = dy, *sy = sh - 1 - dx;
      break;
    case 7:
      *sx = sw - 1 - dy, *sy = sh - 1 - dx;
      break;
    default:
      *sx = sw - 1 - dy, *sy = dx;
      break;
  }
}

static void test_orientation(void) {
  image upright = decode_file("orient_1.jpg", LADLE__COLOR_RGB);
  for (int o = 1; o <= 8; o++) {
    char file[32], ref_file[32];
    snprintf(file, sizeof file, "orient_%d.jpg", o);
    snprintf(ref_file, sizeof ref_file, "orient_%d.ref.png", o);
    image im = decode_file(file, LADLE__COLOR_RGB);
    image ref = load_ref(ref_file);
    double mean = 0;
    /* PIL's decode + ImageOps.exif_transpose */
    int d = image_diff(&im, &ref, NULL);
    CHECK(d >= 0 && d <= JPEG_TOLERANCE);
    /* The same picture as orientation 1 (each file is its own JPEG encode of the
     * noisy picture, hence a mean difference of a few levels); a wrong orientation
     * differs by more than 20 (checked below). */
    d = image_diff(&im, &upright, &mean);
    CHECK(d >= 0 && mean < 6.0); /* measured: 3.7 at most */
    if (o == 1) {
      image flipped = {malloc((size_t)im.w * im.h * 3), im.w, im.h, 3};
      for (int y = 0; y < im.h; y++)
        for (int x = 0; x < im.w; x++)
          memcpy(flipped.px + (y * im.w + x) * 3, im.px + (y * im.w + im.w - 1 - x) * 3, 3);
      image_diff(&flipped, &upright, &mean);
      CHECK(mean > 20.0); /* the test picture really is asymmetric */
      image_free(&flipped);
    }
    /* apply_orientation = 0 gives the stored image; orienting it by the definition
     * gives exactly the oriented decode. */
    ladle__decode_params p;
    ladle__decode_params_init(&p);
    p.apply_orientation = 0;
    image st = decode_params(file, &p);
    int sw = o >= 5 ? 43 : 61, sh = o >= 5 ? 61 : 43, same = st.px && st.w == sw && st.h == sh;
    for (int y = 0; same && y < im.h; y++)
      for (int x = 0; same && x < im.w; x++) {
        int sx, sy;
        exif_source(o, x, y, sw, sh, &sx, &sy);
        same =
            memcmp(im.px + ((size_t)y * im.w + x) * 3, st.px + ((size_t)sy * sw + sx) * 3, 3) == 0;
      }
    CHECK(same);
    image_free(&im), image_free(&ref), image_free(&st);
  }
  image_free(&upright);
}

static void test_exif_parser(void) {
  /* A valid block, little-endian: Make then Orientation = 6. Byte offsets: 6 byte
   * order, 8 magic, 10 IFD offset, 14 entry count, 16 Make, 28 Orientation (30 type,
   * 36 value), 40 next IFD. */
  /* clang-format off */
  static const uint8_t le[] = {'E', 'x', 'i', 'f', 0, 0,
                               'I', 'I', 42, 0, 8, 0, 0, 0,
                               2, 0,
                               0x0f, 0x01, 2, 0, 4, 0, 0, 0, 'l', 'a', 'd', 0,
                               0x12, 0x01, 3, 0, 1, 0, 0, 0, 6, 0, 0, 0,
                               0, 0, 0, 0};
  /* Big-endian, Orientation = 8 alone. */
  static const uint8_t be[] = {'E', 'x', 'i', 'f', 0, 0,
                               'M', 'M', 0, 42, 0, 0, 0, 8,
                               0, 1,
                               0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, 8, 0, 0,
                               0, 0, 0, 0};
  /* clang-format on */
  uint8_t b[sizeof le];
  CHECK(ladle__exif_orientation(le, sizeof le) == 6);
  CHECK(ladle__exif_orientation(be, sizeof be) == 8);
  /* Every truncation: never out of bounds (ASan), 6 once the tag fits, else 1. */
  for (size_t n = 0; n < sizeof le; n++) {
    int o = ladle__exif_orientation(le, n);
    CHECK(o == (n >= 40 ? 6 : 1));
  }
  memcpy(b, le, sizeof b), b[10] = 200; /* IFD offset past the end */
  CHECK(ladle__exif_orientation(b, sizeof b) == 1);
  memcpy(b, le, sizeof b), b[10] = 0xff, b[13] = 0xff; /* huge offset */
  CHECK(ladle__exif_orientation(b, sizeof b) == 1);
  memcpy(b, le, sizeof b), b[14] = 0xff, b[15] = 0xff; /* 65535 entries: scan what fits */
  CHECK(ladle__exif_orientation(b, sizeof b) == 6);
  memcpy(b, le, sizeof b), b[36] = 9; /* orientation 9 is invalid */
  CHECK(ladle__exif_orientation(b, sizeof b) == 1);
  memcpy(b, le, sizeof b), b[30] = 4; /* LONG instead of SHORT: accepted */
  CHECK(ladle__exif_orientation(b, sizeof b) == 6);
  memcpy(b, le, sizeof b), b[30] = 2; /* ASCII: ignored */
  CHECK(ladle__exif_orientation(b, sizeof b) == 1);
  memcpy(b, le, sizeof b), b[8] = 43; /* not TIFF */
  CHECK(ladle__exif_orientation(b, sizeof b) == 1);
  memcpy(b, le, sizeof b), b[6] = 'X'; /* unknown byte order */
  CHECK(ladle__exif_orientation(b, sizeof b) == 1);
  memcpy(b, le, sizeof b), b[4] = 'x'; /* not "Exif\0\0" */
  CHECK(ladle__exif_orientation(b, sizeof b) == 1);
  CHECK(ladle__exif_orientation(NULL, 0) == 1);
}

/* ------------------------------------------------------------------------ */
/* Regions of interest                                                       */
/* ------------------------------------------------------------------------ */

static const char *roi_files[] = {
    "j420.jpg",     "j422.jpg",     "j444.jpg",           "jprog.jpg",    "jgray.jpg",
    "jcmyk.jpg",    "orient_2.jpg", "orient_3.jpg",       "orient_4.jpg", "orient_5.jpg",
    "orient_6.jpg", "orient_7.jpg", "orient_8.jpg",       "p_rgb8.png",   "p_rgb8_adam7.png",
    "p_pal4.png",   "p_gray16.png", "p_rgba16_adam7.png",
};
#define N_ROI_FILES (int)(sizeof roi_files / sizeof roi_files[0])

static int roi_matches(const char *file, const image *full, ladle__color color, int x, int y, int w,
                       int h) {
  ladle__decode_params p;
  ladle__decode_params_init(&p);
  p.color = color;
  p.has_roi = 1;
  p.roi_x = x, p.roi_y = y, p.roi_w = w, p.roi_h = h;
  image part = decode_params(file, &p);
  int ok = part.w == w && part.h == h && crop_equals(full, x, y, &part);
  if (!ok)
    fprintf(stderr, "  %s colour %d roi x %d y %d w %d h %d differs from the crop\n", file,
            (int)color, x, y, w, h);
  image_free(&part);
  return ok;
}

static void test_roi_fixed(void) {
  /* Edges on and next to iMCU boundaries (16 px for 4:2:0), single pixels, full rows. */
  static const int xs[] = {0, 1, 15, 16, 17, 32, 47, 48, 112, 130};
  image full = decode_file("j420.jpg", LADLE__COLOR_RGB);
  image full6 = decode_file("orient_6.jpg", LADLE__COLOR_RGB);
  image png = decode_file("p_rgb8.png", LADLE__COLOR_RGB);
  for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++)
    for (size_t j = 0; j < sizeof xs / sizeof xs[0]; j++) {
      int a = xs[i], n = xs[j] ? xs[j] : 1;
      if (a + n <= 131) CHECK(roi_matches("j420.jpg", &full, LADLE__COLOR_RGB, a, 3, n, 50));
      if (a + n <= 97) CHECK(roi_matches("j420.jpg", &full, LADLE__COLOR_RGB, 5, a, 20, n));
    }
  CHECK(roi_matches("j420.jpg", &full, LADLE__COLOR_RGB, 0, 0, 131, 97));
  CHECK(roi_matches("j420.jpg", &full, LADLE__COLOR_RGB, 0, 40, 131,
                    30)); /* full rows: direct path */
  CHECK(roi_matches("j420.jpg", &full, LADLE__COLOR_RGB, 130, 96, 1, 1));
  CHECK(roi_matches("orient_6.jpg", &full6, LADLE__COLOR_RGB, 5, 7, 31, 20));
  CHECK(roi_matches("orient_6.jpg", &full6, LADLE__COLOR_RGB, 0, 0, 61, 43));
  CHECK(roi_matches("orient_6.jpg", &full6, LADLE__COLOR_RGB, 60, 42, 1, 1));
  CHECK(roi_matches("p_rgb8.png", &png, LADLE__COLOR_RGB, 0, 10, 45,
                    5)); /* direct rows, skipped top */
  image_free(&full), image_free(&full6), image_free(&png);
}

static void test_roi_random(void) {
  ladle__rng rng;
  ladle__rng_init(&rng, 1234, 1, 0, 0);
  image full[N_ROI_FILES][3];
  for (int f = 0; f < N_ROI_FILES; f++)
    for (int c = 0; c < 3; c++) full[f][c] = decode_file(roi_files[f], (ladle__color)c);
  int failures = 0;
  for (int i = 0; i < 200; i++) {
    int f = i % N_ROI_FILES, c = (int)ladle__rng_below(&rng, 3);
    const image *im = &full[f][c];
    int x = (int)ladle__rng_below(&rng, (uint64_t)im->w);
    int y = (int)ladle__rng_below(&rng, (uint64_t)im->h);
    int w = 1 + (int)ladle__rng_below(&rng, (uint64_t)(im->w - x));
    int h = 1 + (int)ladle__rng_below(&rng, (uint64_t)(im->h - y));
    failures += !roi_matches(roi_files[f], im, (ladle__color)c, x, y, w, h);
  }
  CHECK(failures == 0);
  for (int f = 0; f < N_ROI_FILES; f++)
    for (int c = 0; c < 3; c++) image_free(&full[f][c]);
}

/* ------------------------------------------------------------------------ */
/* DCT scaling                                                               */
/* ------------------------------------------------------------------------ */

static void expect_geometry(const char *file, const ladle__decode_params *p, int scale, int w,
                            int h) {
  blob b = load(file);
  ladle__image_info info;
  ladle__image_geometry g;
  int ow = 0, oh = 0, oc = 0;
  CHECK_OK(ladle__image_probe(b.data, b.size, file, &info));
  CHECK_OK(ladle__image_output_geometry(&info, p, file, &g));
  CHECK_OK(ladle__image_output_size(&info, p, file, &ow, &oh, &oc));
  CHECK(g.scale == scale && g.width == w && g.height == h && ow == w && oh == h);
  if (g.scale != scale || g.width != w || g.height != h)
    fprintf(stderr, "  %s: scale %d %dx%d, expected %d %dx%d\n", file, g.scale, g.width, g.height,
            scale, w, h);
  free(b.data);
}

static void test_scaled_sizes(void) {
  ladle__decode_params p;
  ladle__decode_params_init(&p);
  /* Whole image at s/8: ceil(131 s / 8) x ceil(97 s / 8). */
  for (int s = 1; s <= 8; s++) {
    p.force_scale = s;
    expect_geometry("j420.jpg", &p, s, (131 * s + 7) / 8, (97 * s + 7) / 8);
    image im = decode_params("j420.jpg", &p);
    CHECK(im.w == (131 * s + 7) / 8 && im.h == (97 * s + 7) / 8);
    image_free(&im);
  }
  p.force_scale = 0;
  /* Automatic choice: the smallest s whose output covers the minimum, only when the
   * roi is at least twice the minimum. */
  p.min_width = 30, p.min_height = 20;
  expect_geometry("j420.jpg", &p, 2, 33, 25);
  p.min_width = 60, p.min_height = 40;
  expect_geometry("j420.jpg", &p, 4, 66, 49);
  p.min_width = 66, p.min_height = 40; /* 131 < 2 * 66: full resolution */
  expect_geometry("j420.jpg", &p, 8, 131, 97);
  p.min_width = 0, p.min_height = 30;
  expect_geometry("j420.jpg", &p, 3, 50, 37);
  p.min_width = 20, p.min_height = 15; /* transposed 43x61 stored: ceil(61*3/8) x ceil(43*3/8) */
  expect_geometry("orient_6.jpg", &p, 3, 23, 17);
  p.min_width = 10, p.min_height = 10;
  expect_geometry("p_rgb8.png", &p, 8, 45, 31); /* PNG never scales */
  /* An roi: [10, 110) x [20, 60) at 1/4 -> [2, 28) x [5, 15). */
  p.min_width = 20, p.min_height = 8;
  p.has_roi = 1, p.roi_x = 10, p.roi_y = 20, p.roi_w = 100, p.roi_h = 40;
  expect_geometry("j420.jpg", &p, 2, 26, 10);
}

static void test_scaled_reference(void) {
  /* s = 4 and s = 2 are PIL's draft() scales 1/2 and 1/4. */
  static const struct {
    int s;
    const char *ref;
  } cases[] = {{4, "j420_half.ref.png"}, {2, "j420_quarter.ref.png"}};
  for (int i = 0; i < 2; i++) {
    ladle__decode_params p;
    ladle__decode_params_init(&p);
    p.force_scale = cases[i].s;
    image im = decode_params("j420.jpg", &p);
    image ref = load_ref(cases[i].ref);
    int d = image_diff(&im, &ref, NULL);
    CHECK(d >= 0 && d <= JPEG_TOLERANCE);
    image_free(&im), image_free(&ref);
  }
}

static void test_scaled_random(void) {
  static const char *files[] = {"j420.jpg",  "jprog.jpg",    "j422.jpg",     "jgray.jpg",
                                "jcmyk.jpg", "orient_6.jpg", "orient_3.jpg", "orient_7.jpg"};
  ladle__rng rng;
  ladle__rng_init(&rng, 99, 2, 0, 0);
  int failures = 0;
  for (int i = 0; i < 120; i++) {
    const char *file = files[i % 8];
    blob b = load(file);
    ladle__image_info info;
    CHECK_OK(ladle__image_probe(b.data, b.size, file, &info));
    ladle__decode_params p;
    ladle__decode_params_init(&p);
    p.color = (ladle__color)ladle__rng_below(&rng, 3);
    p.has_roi = 1;
    p.roi_x = (int)ladle__rng_below(&rng, (uint64_t)info.width - 8);
    p.roi_y = (int)ladle__rng_below(&rng, (uint64_t)info.height - 8);
    p.roi_w = 8 + (int)ladle__rng_below(&rng, (uint64_t)(info.width - p.roi_x - 7));
    p.roi_h = 8 + (int)ladle__rng_below(&rng, (uint64_t)(info.height - p.roi_y - 7));
    p.min_width = 1 + (int)ladle__rng_below(&rng, (uint64_t)p.roi_w / 2);
    p.min_height = 1 + (int)ladle__rng_below(&rng, (uint64_t)p.roi_h / 2);
    ladle__image_geometry g;
    CHECK_OK(ladle__image_output_geometry(&info, &p, file, &g));
    int ok = g.scale >= 1 && g.scale <= 4 && g.width >= p.min_width && g.height >= p.min_height;
    /* The smallest such scale. */
    if (g.scale > 1) {
      ladle__decode_params q = p;
      ladle__image_geometry g2;
      q.force_scale = g.scale - 1;
      CHECK_OK(ladle__image_output_geometry(&info, &q, file, &g2));
      ok &= g2.width < p.min_width || g2.height < p.min_height;
    }
    /* The requested roi, exactly placed inside the output (covered to within a pixel). */
    double k = g.scale / 8.0;
    ok &= g.roi_x >= -1e-9 && g.roi_y >= -1e-9 && g.roi_x + g.roi_w <= g.width + 1e-9 &&
          g.roi_y + g.roi_h <= g.height + 1e-9 && g.width - g.roi_w < 2 && g.height - g.roi_h < 2 &&
          g.roi_w > p.roi_w * k - 1e-9 && g.roi_w < p.roi_w * k + 1e-9 &&
          g.roi_h > p.roi_h * k - 1e-9 && g.roi_h < p.roi_h * k + 1e-9;
    /* The pixels: the crop at (x, y) of the whole image decoded at the same scale. */
    image part, whole;
    CHECK_OK(decode_mem(b.data, b.size, file, &p, &part));
    ladle__decode_params q = p;
    q.has_roi = 0, q.min_width = q.min_height = 0, q.force_scale = g.scale;
    CHECK_OK(decode_mem(b.data, b.size, file, &q, &whole));
    ok &= whole.w == g.scaled_width && whole.h == g.scaled_height && part.w == g.width &&
          part.h == g.height && crop_equals(&whole, g.x, g.y, &part);
    if (!ok)
      fprintf(stderr, "  %s roi %d,%d %dx%d min %dx%d: scale %d at %d,%d %dx%d failed\n", file,
              p.roi_x, p.roi_y, p.roi_w, p.roi_h, p.min_width, p.min_height, g.scale, g.x, g.y,
              g.width, g.height);
    failures += !ok;
    image_free(&part), image_free(&whole);
    free(b.data);
  }
  CHECK(failures == 0);
}

/* ------------------------------------------------------------------------ */
/* Limits and invalid arguments                                              */
/* ------------------------------------------------------------------------ */

static void test_pixel_cap(void) {
  static const char *files[] = {"j420.jpg", "p_rgb8_adam7.png"};
  for (int f = 0; f < 2; f++) {
    blob b = load(files[f]);
    ladle__image_info info;
    CHECK_OK(ladle__image_probe(b.data, b.size, files[f], &info));
    int64_t px = (int64_t)info.stored_width * info.stored_height;
    ladle__decode_params p;
    ladle__decode_params_init(&p);
    int w, h, c;
    uint8_t *out = malloc((size_t)px * 3);
    p.max_pixels = px - 1;
    CHECK(ladle__image_output_size(&info, &p, files[f], &w, &h, &c) == LADLE_ERROR_LIMIT);
    CHECK(error_names(files[f]) && strstr(ladle_last_error(), "cap"));
    CHECK(ladle__image_decode(b.data, b.size, files[f], &info, &p, out) == LADLE_ERROR_LIMIT);
    p.max_pixels = px;
    CHECK_OK(ladle__image_decode(b.data, b.size, files[f], &info, &p, out));
    p.max_pixels = 0;
    CHECK_OK(ladle__image_decode(b.data, b.size, files[f], &info, &p, out));
    free(out);
    free(b.data);
  }
  /* A header claiming 60000 x 60000: probed fine, refused by the default cap before
   * anything is allocated. */
  blob b = load("j420.jpg");
  for (size_t i = 0; i + 9 < b.size; i++)
    if (b.data[i] == 0xff && b.data[i + 1] == 0xc0) {
      b.data[i + 5] = 60000 >> 8, b.data[i + 6] = 60000 & 255;
      b.data[i + 7] = 60000 >> 8, b.data[i + 8] = 60000 & 255;
      break;
    }
  ladle__image_info info;
  CHECK_OK(ladle__image_probe(b.data, b.size, "huge.jpg", &info));
  CHECK(info.width == 60000 && info.height == 60000);
  ladle__decode_params p;
  ladle__decode_params_init(&p);
  int w, h, c;
  CHECK(ladle__image_output_size(&info, &p, "huge.jpg", &w, &h, &c) == LADLE_ERROR_LIMIT);
  CHECK(error_names("huge.jpg"));
  free(b.data);
}

static void test_invalid_arguments(void) {
  blob b = load("j420.jpg");
  ladle__image_info info;
  CHECK_OK(ladle__image_probe(b.data, b.size, "j420.jpg", &info));
  ladle__decode_params p;
  ladle__decode_params_init(&p);
  int w, h, c;
  static const int bad[][4] = {{-1, 0, 10, 10}, {0, 0, 0, 10},  {0, 0, 132, 10},
                               {130, 0, 2, 1},  {0, 90, 10, 8}, {0, 0, 10, -3}};
  for (int i = 0; i < 6; i++) {
    p.has_roi = 1;
    p.roi_x = bad[i][0], p.roi_y = bad[i][1], p.roi_w = bad[i][2], p.roi_h = bad[i][3];
    CHECK(ladle__image_output_size(&info, &p, "j420.jpg", &w, &h, &c) ==
          LADLE_ERROR_INVALID_ARGUMENT);
    CHECK(error_names("j420.jpg"));
  }
  ladle__decode_params_init(&p);
  p.color = (ladle__color)7;
  CHECK(ladle__image_output_size(&info, &p, "j420.jpg", &w, &h, &c) ==
        LADLE_ERROR_INVALID_ARGUMENT);
  ladle__decode_params_init(&p);
  p.force_scale = 9;
  CHECK(ladle__image_output_size(&info, &p, "j420.jpg", &w, &h, &c) ==
        LADLE_ERROR_INVALID_ARGUMENT);
  /* An info that belongs to other bytes. */
  blob o = load("orient_1.jpg");
  uint8_t *out = malloc(131 * 97 * 3);
  ladle__decode_params_init(&p);
  CHECK(ladle__image_decode(o.data, o.size, "orient_1.jpg", &info, &p, out) ==
        LADLE_ERROR_INVALID_ARGUMENT);
  CHECK(error_names("orient_1.jpg"));
  blob q = load("p_rgb8.png");
  CHECK(ladle__image_decode(q.data, q.size, "p_rgb8.png", &info, &p, out) ==
        LADLE_ERROR_INVALID_ARGUMENT);
  free(out), free(b.data), free(o.data), free(q.data);
}

/* ------------------------------------------------------------------------ */
/* Corrupt and truncated data                                                */
/* ------------------------------------------------------------------------ */

/* Probe + decode; the status of whichever failed (OK if both worked). */
static ladle_status try_decode(const uint8_t *data, size_t size, const char *name,
                               ladle__color color) {
  ladle__decode_params p;
  ladle__decode_params_init(&p);
  p.color = color;
  image im;
  ladle_status st = decode_mem(data, size, name, &p, &im);
  image_free(&im);
  return st;
}

static void test_truncated(void) {
  static const char *files[] = {"j420.jpg",         "jprog.jpg",    "j444.jpg",
                                "jcmyk.jpg",        "orient_6.jpg", "p_rgb8.png",
                                "p_rgb8_adam7.png", "p_gray16.png", "p_pal8.png"};
  for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
    blob b = load(files[f]);
    int jpeg = strstr(files[f], ".jpg") != NULL;
    for (int k = 0; k < 10; k++) {
      size_t n = b.size * (size_t)k / 10;
      uint8_t *cut = malloc(n ? n : 1); /* exactly n bytes, so ASan sees any over-read */
      memcpy(cut, b.data, n);
      char name[64];
      snprintf(name, sizeof name, "%s[:%zu]", files[f], n);
      ladle_status st = try_decode(cut, n, name, LADLE__COLOR_RGB);
      CHECK(st == LADLE_ERROR_CORRUPT_DATA);
      CHECK(error_names(name));
      if (st != LADLE_ERROR_CORRUPT_DATA)
        fprintf(stderr, "  %s: %s\n", name, ladle_status_name(st));
      free(cut);
    }
    /* A JPEG missing only its EOI marker has every pixel: it decodes, identically. */
    if (jpeg) {
      image whole, cut;
      ladle__decode_params p;
      ladle__decode_params_init(&p);
      CHECK_OK(decode_mem(b.data, b.size, files[f], &p, &whole));
      uint8_t *c = malloc(b.size - 2);
      memcpy(c, b.data, b.size - 2);
      CHECK(b.data[b.size - 2] == 0xff && b.data[b.size - 1] == 0xd9);
      CHECK_OK(decode_mem(c, b.size - 2, files[f], &p, &cut));
      CHECK(image_diff(&whole, &cut, NULL) == 0);
      image_free(&whole), image_free(&cut), free(c);
    }
    free(b.data);
  }

  /* A progressive JPEG cut at a scan boundary is a complete-looking file with scans
   * missing: an error, not a blurry image. */
  blob b = load("jprog.jpg");
  int scans = 0;
  for (size_t i = 2; i + 1 < b.size; i++) {
    if (b.data[i] != 0xff || b.data[i + 1] != 0xda) continue;
    if (scans++ == 0) continue; /* before the first scan: no image data at all */
    uint8_t *cut = malloc(i);
    memcpy(cut, b.data, i);
    CHECK(try_decode(cut, i, "jprog-cut", LADLE__COLOR_RGB) == LADLE_ERROR_CORRUPT_DATA);
    CHECK(error_names("jprog-cut"));
    free(cut);
  }
  CHECK(scans >= 6);
  free(b.data);

  /* An roi above the point where a sequential JPEG is cut needs none of the lost
   * data: it decodes; one that reaches below it fails. */
  b = load("j420.jpg");
  size_t n = b.size * 6 / 10;
  uint8_t *cut = malloc(n);
  memcpy(cut, b.data, n);
  ladle__image_info info;
  CHECK_OK(ladle__image_probe(cut, n, "j420-cut", &info));
  ladle__decode_params p;
  ladle__decode_params_init(&p);
  p.has_roi = 1, p.roi_x = 0, p.roi_y = 0, p.roi_w = 131, p.roi_h = 16;
  uint8_t *out = malloc(131 * 97 * 3);
  CHECK_OK(ladle__image_decode(cut, n, "j420-cut", &info, &p, out));
  p.roi_y = 80, p.roi_h = 17;
  CHECK(ladle__image_decode(cut, n, "j420-cut", &info, &p, out) == LADLE_ERROR_CORRUPT_DATA);
  free(out), free(cut), free(b.data);

  b = load("p_short_idat.png");
  CHECK(try_decode(b.data, b.size, "p_short_idat.png", LADLE__COLOR_RGB) ==
        LADLE_ERROR_CORRUPT_DATA);
  CHECK(error_names("p_short_idat.png"));
  free(b.data);
}

static void test_not_images(void) {
  ladle__image_info info;
  static const uint8_t one = 0;
  CHECK(ladle__image_probe(&one, 0, "empty.jpg", &info) == LADLE_ERROR_CORRUPT_DATA);
  CHECK(error_names("empty.jpg"));
  CHECK(ladle__image_probe(NULL, 0, "null.jpg", &info) == LADLE_ERROR_CORRUPT_DATA);
  static const uint8_t soi[2] = {0xff, 0xd8};
  CHECK(ladle__image_probe(soi, 2, "soi.jpg", &info) == LADLE_ERROR_CORRUPT_DATA);
  static const uint8_t sig[5] = {0x89, 'P', 'N', 'G', '\r'};
  CHECK(ladle__image_probe(sig, 5, "sig.png", &info) == LADLE_ERROR_CORRUPT_DATA);
  CHECK(error_names("sig.png"));

  blob t = load("not_an_image.txt");
  CHECK(ladle__image_probe(t.data, t.size, "not_an_image.txt", &info) == LADLE_ERROR_UNSUPPORTED);
  CHECK(error_names("not_an_image.txt"));
  CHECK(strstr(ladle_last_error(), "not a JPEG or PNG image (starts with '54 68 69 73')") != NULL);
  free(t.data);

  /* Random garbage, alone and behind each signature. */
  ladle__rng rng;
  ladle__rng_init(&rng, 7, 3, 0, 0);
  uint8_t *buf = malloc(4096);
  for (int i = 0; i < 60; i++) {
    size_t n = 1 + (size_t)ladle__rng_below(&rng, 4096);
    for (size_t k = 0; k < n; k++) buf[k] = (uint8_t)ladle__rng_u32(&rng);
    int kind = i % 3;
    if (kind == 0 && (buf[0] == 0xff || buf[0] == 0x89)) buf[0] = 0;
    if (kind == 1 && n >= 3) buf[0] = 0xff, buf[1] = 0xd8, buf[2] = 0xff;
    if (kind == 2 && n >= 8) memcpy(buf, "\x89PNG\r\n\x1a\n", 8);
    char name[32];
    snprintf(name, sizeof name, "garbage-%d", i);
    ladle_status st = try_decode(buf, n, name, LADLE__COLOR_RGB);
    CHECK(st != LADLE_OK);
    CHECK(error_names(name));
    if (kind == 0) CHECK(st == LADLE_ERROR_UNSUPPORTED);
  }
  free(buf);
}

/* Random byte changes in valid files: any outcome but a crash, hang or leak (run the
 * test under ASan/UBSan); errors name the file. */
static void test_mutations(void) {
  static const char *files[] = {"j420.jpg",     "jprog.jpg",  "j444.jpg",         "jcmyk.jpg",
                                "orient_6.jpg", "p_rgb8.png", "p_rgb8_adam7.png", "p_pal4.png"};
  ladle__rng rng;
  ladle__rng_init(&rng, 11, 4, 0, 0);
  int errors = 0, total = 0;
  for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
    blob b = load(files[f]);
    uint8_t *m = malloc(b.size);
    for (int i = 0; i < 40; i++) {
      memcpy(m, b.data, b.size);
      int changes = 1 + (int)ladle__rng_below(&rng, 4);
      for (int k = 0; k < changes; k++) {
        size_t at = 8 + (size_t)ladle__rng_below(&rng, b.size - 8);
        m[at] = (uint8_t)ladle__rng_u32(&rng);
      }
      char name[64];
      snprintf(name, sizeof name, "%s~%d", files[f], i);
      ladle_status st = try_decode(m, b.size, name, (ladle__color)(i % 3));
      total++;
      if (st != LADLE_OK) {
        errors++;
        CHECK(error_names(name));
      }
    }
    free(m), free(b.data);
  }
  fprintf(stderr, "  %d of %d mutated files were errors\n", errors, total);
}

/* ------------------------------------------------------------------------ */
/* Threads                                                                   */
/* ------------------------------------------------------------------------ */

static const char *thread_files[] = {"j420.jpg",     "jprog.jpg",        "jcmyk.jpg",
                                     "orient_7.jpg", "p_rgb8_adam7.png", "p_pal8.png"};
#define N_THREAD_FILES 6
static image thread_expected[N_THREAD_FILES];
static blob thread_blobs[N_THREAD_FILES];

static void *thread_main(void *arg) {
  long id = (long)arg, bad = 0;
  for (int i = 0; i < 30; i++) {
    int f = (int)((i + id) % N_THREAD_FILES);
    ladle__decode_params p;
    ladle__decode_params_init(&p);
    image im;
    if (decode_mem(thread_blobs[f].data, thread_blobs[f].size, thread_files[f], &p, &im) !=
            LADLE_OK ||
        image_diff(&im, &thread_expected[f], NULL) != 0)
      bad++;
    image_free(&im);
    /* Errors are per thread too. */
    ladle__image_info info;
    char name[32];
    snprintf(name, sizeof name, "thread-%ld", id);
    if (ladle__image_probe(thread_blobs[f].data, 3, name, &info) == LADLE_OK || !error_names(name))
      bad++;
  }
  return (void *)bad;
}

static void test_threads(void) {
  for (int f = 0; f < N_THREAD_FILES; f++) {
    thread_blobs[f] = load(thread_files[f]);
    thread_expected[f] = decode_file(thread_files[f], LADLE__COLOR_RGB);
  }
  pthread_t t[4];
  for (long i = 0; i < 4; i++) CHECK(pthread_create(&t[i], NULL, thread_main, (void *)i) == 0);
  for (int i = 0; i < 4; i++) {
    void *bad = NULL;
    pthread_join(t[i], &bad);
    CHECK(bad == NULL);
  }
  for (int f = 0; f < N_THREAD_FILES; f++) {
    image_free(&thread_expected[f]);
    free(thread_blobs[f].data);
  }
}

int main(void) {
  RUN(test_probe);
  RUN(test_jpeg_reference);
  RUN(test_cmyk_ycck);
  RUN(test_jpeg_variants);
  RUN(test_scan_limit);
  RUN(test_png_formats);
  RUN(test_orientation);
  RUN(test_exif_parser);
  RUN(test_roi_fixed);
  RUN(test_roi_random);
  RUN(test_scaled_sizes);
  RUN(test_scaled_reference);
  RUN(test_scaled_random);
  RUN(test_pixel_cap);
  RUN(test_invalid_arguments);
  RUN(test_truncated);
  RUN(test_not_images);
  RUN(test_mutations);
  RUN(test_threads);
  TEST_MAIN_END();
}
