/* The EXIF orientation tag (0x0112) from a JPEG APP1 block. Everything is
 * bounds-checked: a malformed block simply means "orientation 1". */
#include <string.h>

#include "codec/image_internal.h"

typedef struct tiff {
  const uint8_t *p;
  size_t size;
  int big_endian;
} tiff;

static unsigned get16(const tiff *t, size_t at) {
  const uint8_t *b = t->p + at;
  return t->big_endian ? (unsigned)(b[0] << 8 | b[1]) : (unsigned)(b[1] << 8 | b[0]);
}

static uint32_t get32(const tiff *t, size_t at) {
  const uint8_t *b = t->p + at;
  return t->big_endian ? (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3]
                       : (uint32_t)b[3] << 24 | (uint32_t)b[2] << 16 | (uint32_t)b[1] << 8 | b[0];
}

int ladle__exif_orientation(const uint8_t *data, size_t size) {
  static const uint8_t exif_id[6] = {'E', 'x', 'i', 'f', 0, 0};
  if (!data || size < sizeof exif_id + 8 || memcmp(data, exif_id, sizeof exif_id) != 0) return 1;
  tiff t = {data + sizeof exif_id, size - sizeof exif_id, 0};
  if (t.p[0] == 'I' && t.p[1] == 'I')
    t.big_endian = 0;
  else if (t.p[0] == 'M' && t.p[1] == 'M')
    t.big_endian = 1;
  else
    return 1;
  if (get16(&t, 2) != 42) return 1;
  uint32_t ifd = get32(&t, 4);
  if (ifd < 8 || ifd > t.size - 2) return 1;
  unsigned count = get16(&t, ifd);
  size_t entries = ifd + 2;
  for (unsigned i = 0; i < count; i++) {
    size_t e = entries + (size_t)i * 12;
    if (e + 12 > t.size) break; /* a count running past the block: keep what fits */
    if (get16(&t, e) != 0x0112) continue;
    unsigned type = get16(&t, e + 2);
    uint32_t n = get32(&t, e + 4);
    uint32_t v;
    if (type == 3 && n >= 1) /* SHORT, the standard type */
      v = get16(&t, e + 8);
    else if (type == 4 && n >= 1) /* LONG, written by a few tools */
      v = get32(&t, e + 8);
    else
      return 1;
    return v >= 1 && v <= 8 ? (int)v : 1;
  }
  return 1;
}
