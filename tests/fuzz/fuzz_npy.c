/* libFuzzer target for the .npy header parser and region copy behind
 * readers.numpy (src/io/npy.h): each input is a .npy file's bytes. When the
 * header parses and the input holds the data it announces, three regions
 * (the whole array, one inside, one reaching past every border) are copied
 * into buffers of exactly their size. A status other than OK or
 * CORRUPT_DATA, a header inconsistent with the input, or any sanitizer
 * report is a finding. Build and run: see README.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ladle__npy_header h;
  size_t need = 0;
  ladle_status st = ladle__npy_parse(data, size, &h, &need);
  if (st != LADLE_OK) {
    if (st != LADLE_ERROR_CORRUPT_DATA || (need && need <= size)) {
      fprintf(stderr, "fuzz_npy: status %s, need %zu of %zu: %s\n", ladle_status_name(st), need, size,
              ladle_last_error());
      abort();
    }
    return 0;
  }
  if (h.data_offset > (int64_t)size || h.ndim < 0 || h.ndim > LADLE_MAX_NDIM || h.data_bytes < 0) abort();
  if (h.data_bytes > (int64_t)size - h.data_offset || h.data_bytes > (1 << 20)) return 0;
  size_t es = (size_t)h.elem_size;
  for (int r = 0; r < 3; r++) {
    int64_t start[LADLE_MAX_NDIM], shape[LADLE_MAX_NDIM];
    double elems = 1;
    for (int d = 0; d < h.ndim; d++) {
      int64_t e = h.shape[d];
      start[d] = r == 0 ? 0 : r == 1 ? e / 3 : -2;
      shape[d] = r == 0 ? e : r == 1 ? (e + 1) / 2 : e + 4;
      if (r == 1 && start[d] + shape[d] > e) shape[d] = e - start[d];
      elems *= (double)shape[d];
    }
    if (elems > (1 << 22)) continue;
    int64_t offset, bytes;
    ladle__npy_slab(&h, start, shape, &offset, &bytes);
    if (offset < h.data_offset || bytes < 0 || offset + bytes > h.data_offset + h.data_bytes) abort();
    uint8_t *dst = malloc((size_t)elems * es + 1), fill[8] = {0};
    if (!dst) return 0;
    ladle__npy_copy_region(dst, data + offset, &h, start, shape, fill);
    free(dst);
  }
  return 0;
}
