/* A libFuzzer target for the CPU image decoder (src/codec/image.h): probes the input,
 * then decodes it in several ways (whole, a region, reduced scale, each output colour,
 * orientation on and off). Built with -DLADLE_FUZZ_REPLAY it is a plain program that runs
 * the same checks on the files named on its command line (corpus replay, no clang). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/image.h"

/* Keeps every decode small enough that the fuzzer stays fast and within its memory
 * limit; bigger headers must be refused with LADLE_ERROR_LIMIT before allocation. */
#define FUZZ_MAX_PIXELS ((int64_t)4 * 1000 * 1000)

/* A broken promise of the decoder's contract: crash so that the fuzzer reports it,
 * with the last error message (the status that was not expected is usually why). */
#define EXPECT(cond)                                                                       \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      fprintf(stderr, "fuzz_image: %s:%d: expected %s (last error: %s)\n", __FILE__, __LINE__, \
              #cond, ladle_last_error());                                                  \
      abort();                                                                             \
    }                                                                                      \
  } while (0)

/* One decode: output_size and output_geometry must agree with each other, and a
 * decode that succeeds must write exactly that many bytes (ASan checks the bound; the
 * guard bytes after the buffer check that nothing past it was written). */
static void decode_one(const uint8_t *data, size_t size, const ladle__image_info *info,
                       const ladle__decode_params *p) {
  int w = 0, h = 0, c = 0;
  ladle_status st = ladle__image_output_size(info, p, "fuzz", &w, &h, &c);
  if (st != LADLE_OK) {
    EXPECT(st == LADLE_ERROR_LIMIT || st == LADLE_ERROR_INVALID_ARGUMENT);
    return;
  }
  EXPECT(w >= 1 && h >= 1 && c == ladle__color_channels(p->color));
  EXPECT((int64_t)info->stored_width * info->stored_height <= p->max_pixels);
  ladle__image_geometry g;
  EXPECT(ladle__image_output_geometry(info, p, "fuzz", &g) == LADLE_OK);
  EXPECT(g.width == w && g.height == h && g.channels == c);
  EXPECT(g.scale >= 1 && g.scale <= 8);

  size_t bytes = (size_t)w * (size_t)h * (size_t)c;
  uint8_t *out = malloc(bytes + 16);
  if (!out) return;
  memset(out + bytes, 0xa5, 16);
  st = ladle__image_decode(data, size, "fuzz", info, p, out);
  EXPECT(st == LADLE_OK || st == LADLE_ERROR_CORRUPT_DATA || st == LADLE_ERROR_UNSUPPORTED ||
         st == LADLE_ERROR_LIMIT || st == LADLE_ERROR_OUT_OF_MEMORY);
  for (int k = 0; k < 16; k++) EXPECT(out[bytes + k] == 0xa5);
  free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ladle__image_info info;
  ladle_status st = ladle__image_probe(data, size, "fuzz", &info);
  if (st != LADLE_OK) {
    /* LIMIT: libjpeg refuses dimensions over 65500 while reading the header. */
    EXPECT(st == LADLE_ERROR_CORRUPT_DATA || st == LADLE_ERROR_UNSUPPORTED || st == LADLE_ERROR_LIMIT ||
           st == LADLE_ERROR_OUT_OF_MEMORY);
    return 0;
  }
  EXPECT(info.format == LADLE__IMAGE_JPEG || info.format == LADLE__IMAGE_PNG);
  EXPECT(info.width >= 1 && info.height >= 1 && info.orientation >= 1 && info.orientation <= 8);
  EXPECT(info.components >= 1 && info.components <= 4);
  int swapped = info.orientation >= 5;
  EXPECT(info.width == (swapped ? info.stored_height : info.stored_width));
  EXPECT(info.height == (swapped ? info.stored_width : info.stored_height));

  ladle__decode_params p;
  ladle__decode_params_init(&p);
  p.max_pixels = FUZZ_MAX_PIXELS;

  /* The whole image in each colour; the stored orientation once. */
  for (int color = 0; color < 3; color++) {
    p.color = (ladle__color)color;
    decode_one(data, size, &info, &p);
  }
  p.color = LADLE__COLOR_RGB;
  p.apply_orientation = 0;
  decode_one(data, size, &info, &p);
  p.apply_orientation = 1;

  /* A region picked from the input's size (so it varies between inputs but not between
   * runs), in displayed coordinates: crop/skip-scanline decoding and oriented writes. */
  p.has_roi = 1;
  p.roi_w = 1 + (int)(size % (size_t)info.width);
  p.roi_h = 1 + (int)((size / 7) % (size_t)info.height);
  p.roi_x = (int)((size / 3) % (size_t)(info.width - p.roi_w + 1));
  p.roi_y = (int)((size / 5) % (size_t)(info.height - p.roi_h + 1));
  decode_one(data, size, &info, &p);
  p.color = LADLE__COLOR_GRAY;
  decode_one(data, size, &info, &p);
  p.color = LADLE__COLOR_RGB;

  /* Reduced DCT scale: of the region (chosen from min_width/min_height), and forced
   * scales of the whole image. */
  p.min_width = (p.roi_w + 3) / 4;
  p.min_height = (p.roi_h + 3) / 4;
  decode_one(data, size, &info, &p);
  p.has_roi = 0;
  p.min_width = p.min_height = 0;
  for (int s = 1; s <= 7; s += 3) {
    p.force_scale = s;
    decode_one(data, size, &info, &p);
  }

  /* An roi outside the image is refused, never decoded. */
  p.force_scale = 0;
  p.has_roi = 1;
  p.roi_x = info.width;
  p.roi_y = 0;
  p.roi_w = p.roi_h = 1;
  int w, h, c;
  EXPECT(ladle__image_output_size(&info, &p, "fuzz", &w, &h, &c) != LADLE_OK);
  return 0;
}

#ifdef LADLE_FUZZ_REPLAY
/* Runs the target on each file given (a corpus, or the files in tests/data), as a regression test
 * that needs no libFuzzer. */
int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    FILE *f = fopen(argv[i], "rb");
    if (!f) {
      fprintf(stderr, "fuzz_image: cannot open %s\n", argv[i]);
      return 1;
    }
    uint8_t *buf = NULL;
    size_t size = 0, cap = 0, n;
    do {
      if (size == cap) {
        cap = cap ? 2 * cap : 65536;
        uint8_t *grown = realloc(buf, cap);
        if (!grown) {
          fprintf(stderr, "fuzz_image: out of memory reading %s\n", argv[i]);
          free(buf);
          fclose(f);
          return 1;
        }
        buf = grown;
      }
      n = fread(buf + size, 1, cap - size, f);
      size += n;
    } while (n > 0);
    fclose(f);
    LLVMFuzzerTestOneInput(buf, size);
    free(buf);
  }
  printf("fuzz_image: %d input(s) ran clean\n", argc - 1);
  return 0;
}
#endif
