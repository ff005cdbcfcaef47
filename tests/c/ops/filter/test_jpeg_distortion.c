/* jpeg_compression_distortion's GPU arithmetic (jpeg_core.h, run here in
 * plain C by jpeg_emulation.h) against the CPU operator's libjpeg encode +
 * decode (ladle__jpeg_roundtrip): bit-identical on random images of many
 * sizes (1x1, single rows and columns, odd sizes, sizes on and off the 8 and
 * 16 grids, up to 300x300) and contents (noise, smooth gradients, flat
 * patches, black/white extremes), at qualities 1, 5, 30, 50, 75, 95, 100 and
 * random ones. Also: the quantization tables against libjpeg's own, and the
 * reciprocal quantizer against plain rounding division, exhaustively. */
#include <stdio.h> /* jpeglib.h needs FILE and size_t */
#include <math.h>
#include <string.h>

#include <jpeglib.h>

#include "ladle/ladle.h"
#include "test.h"
#include "test_random.h"
#include "jpeg_emulation.h"

/* The tables jpeg_set_quality leaves in a compressor. */
static void test_tables(void) {
  struct jpeg_compress_struct c;
  struct jpeg_error_mgr err;
  c.err = jpeg_std_error(&err);
  jpeg_create_compress(&c);
  c.in_color_space = JCS_RGB;
  c.input_components = 3;
  jpeg_set_defaults(&c);
  int bad = 0;
  for (int q = 1; q <= 100; q++) {
    ladle__jd_tables t;
    ladle__jd_tables_init(&t, q);
    jpeg_set_quality(&c, q, TRUE);
    for (int k = 0; k < 2; k++)
      for (int i = 0; i < 64; i++) bad += c.quant_tbl_ptrs[k]->quantval[i] != t.qval[k][i];
  }
  CHECK(bad == 0);
  jpeg_destroy_compress(&c);
}

/* The reciprocal quantizer is rounding division, half away from zero, for
 * every baseline quantizer and every 16-bit coefficient. */
static void test_quantizer(void) {
  ladle__jd_tables t;
  long bad = 0;
  for (unsigned q = 1; q <= 255; q++) {
    const unsigned d = 8 * q;
    t.qval[0][0] = (uint16_t)q;
    jd_reciprocal(d, &t.recip[0][0], &t.corr[0][0], &t.shift[0][0]);
    for (int32_t x = -32767; x <= 32767; x++) {
      const int32_t a = x < 0 ? -x : x, e = (int32_t)((a + d / 2) / d) * (int32_t)q;
      bad += jd_requant(x, &t, 0, 0) != (x < 0 ? -e : e);
    }
  }
  CHECK(bad == 0);
}

enum { NOISE, SMOOTH, PATCHES, EXTREMES, CONTENTS };
static const char *content_names[] = {"noise", "smooth", "patches", "extremes"};

static void make_image(uint8_t *p, int h, int w, int content) {
  const double f[3] = {rnd_range(0.01, 0.3), rnd_range(0.01, 0.3), rnd_range(0, 6.3)};
  const int cell = rnd_int(1, 12);
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++)
      for (int c = 0; c < 3; c++) {
        uint8_t *v = &p[((size_t)y * w + x) * 3 + c];
        switch (content) {
          case NOISE: *v = (uint8_t)rnd_int(0, 255); break;
          case SMOOTH: *v = (uint8_t)(127.5 + 127.5 * sin(f[0] * x * (c + 1) + f[1] * y + f[2] * c)); break;
          case PATCHES: *v = (uint8_t)(((x / cell) * 37 + (y / cell) * 91 + c * 53) * 2654435761u >> 24); break;
          default: *v = ((x / cell + y / cell + (c == 1)) & 1) ? 255 : 0; break;
        }
      }
}

/* One image through both; returns the differing byte count (0: identical). */
static long compare(int h, int w, int quality, int content) {
  size_t bytes = (size_t)h * w * 3;
  uint8_t *rgb = malloc(bytes), *cpu = malloc(bytes), *emu = malloc(bytes);
  make_image(rgb, h, w, content);
  char message[JD_MESSAGE_MAX] = "";
  ladle__jd_tables t;
  ladle__jd_tables_init(&t, quality);
  long diff = 0;
  CHECK_OK(ladle__jpeg_roundtrip(rgb, h, w, quality, "test", cpu, message));
  jd_emulate(rgb, h, w, &t, emu);
  for (size_t i = 0; i < bytes; i++) diff += cpu[i] != emu[i];
  if (diff) {
    size_t i = 0;
    while (cpu[i] == emu[i]) i++;
    fprintf(stderr, "  %dx%d quality %d %s: %ld bytes differ, first at (%zu, %zu) channel %zu: libjpeg %d, "
            "emulation %d\n", h, w, quality, content_names[content], diff, i / 3 / w, i / 3 % w, i % 3, cpu[i], emu[i]);
  }
  free(rgb), free(cpu), free(emu);
  return diff;
}

static const int qualities[] = {1, 5, 30, 50, 75, 95, 100};

/* A gray 8x8 block (the one found in 3e6 random ones) whose IDCT leaves
 * [-512, 511] at quality 1, where libjpeg's C IDCT would wrap around (its
 * range table is indexed modulo 1024) but its x86 SIMD IDCT, which the CPU
 * operator runs, saturates, as jd_range_limit does. */
static void test_range_limit(void) {
  static const char *rows[8] = {"..##.##.", ".#....#.", ".#######", ".##..##.",
                                "#.###.##", ".#...##.", "..##....", ".#...##."};
  uint8_t rgb[8 * 8 * 3], cpu[8 * 8 * 3], emu[8 * 8 * 3];
  for (int i = 0; i < 8 * 8 * 3; i++) rgb[i] = rows[i / 24][i / 3 % 8] == '#' ? 255 : 0;
  char message[JD_MESSAGE_MAX] = "";
  ladle__jd_tables t;
  ladle__jd_tables_init(&t, 1);
  CHECK_OK(ladle__jpeg_roundtrip(rgb, 8, 8, 1, "test", cpu, message));
  jd_emulate(rgb, 8, 8, &t, emu);
  CHECK(memcmp(cpu, emu, sizeof cpu) == 0);
}

static void test_bit_identical(void) {
  ladle__rng_init(&rng, 41, 1, 0, 0);
  static const int sizes[][2] = {{1, 1},   {1, 2},   {2, 1},   {2, 2},    {1, 7},   {7, 1},   {1, 300}, {300, 1},
                                 {3, 5},   {5, 3},   {4, 4},   {5, 5},    {6, 6},   {8, 8},   {9, 9},   {15, 17},
                                 {16, 16}, {17, 16}, {16, 17}, {17, 33},  {31, 47}, {33, 2},  {2, 33}, {64, 64},
                                 {65, 63}, {3, 200}, {200, 3}, {100, 101}, {127, 129}};
  const int fixed = (int)(sizeof sizes / sizeof sizes[0]);
  long cases = 0, failed = 0;
  for (int k = 0; k < fixed + 24; k++) {
    int h = k < fixed ? sizes[k][0] : rnd_int(1, 300), w = k < fixed ? sizes[k][1] : rnd_int(1, 300);
    for (int content = 0; content < CONTENTS; content++)
      for (int qi = 0; qi < 8; qi++) {
        int q = qi < 7 ? qualities[qi] : rnd_int(1, 100);
        failed += compare(h, w, q, content) != 0;
        cases++;
      }
  }
  fprintf(stderr, "  %ld images, %ld differ\n", cases, failed);
  CHECK(failed == 0);
}

int main(void) {
  RUN(test_tables);
  RUN(test_quantizer);
  RUN(test_range_limit);
  RUN(test_bit_identical);
  TEST_MAIN_END();
}
