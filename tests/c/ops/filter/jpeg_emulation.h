/* jpeg_core.h's round trip in plain C, MCU by MCU and then pixel by pixel as
 * the CUDA kernels compute it: the GPU's reference, which
 * test_jpeg_distortion.c proves bit-identical to the CPU operator's libjpeg
 * round trip. */
#ifndef LADLE_TEST_JPEG_EMULATION_H
#define LADLE_TEST_JPEG_EMULATION_H

#include <stdlib.h>

#include "ops/filter/jpeg_core.h"

/* rgb: h x w x 3 (h, w >= 1) -> out, at the tables t. */
static void jd_emulate(const uint8_t *rgb, int h, int w, const ladle__jd_tables *t, uint8_t *out) {
  uint8_t *planes = malloc(jd_plane_bytes(h, w));
  int32_t blk[6][64];
  for (int my = 0; my < jd_mcus(h); my++)
    for (int mx = 0; mx < jd_mcus(w); mx++) {
      for (int i = 0; i < 64; i++) jd_mcu_load(rgb, h, w, my, mx, i, blk);
      for (int b = 0; b < 6; b++) jd_block(blk[b], t, b < 4 ? 0 : 1);
      for (int i = 0; i < 64; i++) jd_mcu_store(planes, h, w, my, mx, i, blk);
    }
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) jd_output_pixel(planes, h, w, y, x, out + ((size_t)y * (size_t)w + (size_t)x) * 3);
  free(planes);
}

#endif
