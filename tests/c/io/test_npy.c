/* Tests of src/io/npy: headers of every version and dtype, the forms other
 * writers use, the errors of bad headers, 20000 random mutations of a valid
 * file (never a crash, only OK or CORRUPT_DATA, never a header that points
 * outside the bytes), and the region copy against a per-element reference
 * for random shapes, regions, orders and byte orders. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/rng.h"
#include "io/npy.h"
#include "test.h"

/* A .npy file of `version` with header text `dict` (padded to 64 bytes, newline-ended) and `data`. */
static size_t make_npy(uint8_t *out, int version, const char *dict, const void *data, size_t bytes) {
  size_t prefix = version == 1 ? 10 : 12, len = strlen(dict) + 1;
  size_t total = (prefix + len + 63) / 64 * 64;
  size_t hlen = total - prefix;
  memcpy(out, "\x93NUMPY", 6);
  out[6] = (uint8_t)version;
  out[7] = 0;
  for (size_t b = 0; b < prefix - 8; b++) out[8 + b] = (uint8_t)(hlen >> (8 * b));
  memset(out + prefix, ' ', hlen);
  memcpy(out + prefix, dict, len - 1);
  out[total - 1] = '\n';
  if (bytes) memcpy(out + total, data, bytes);
  return total + bytes;
}

static ladle_status parse(const char *dict, ladle__npy_header *h) {
  static uint8_t buf[4096];
  size_t n = make_npy(buf, 1, dict, NULL, 0);
  return ladle__npy_parse(buf, n, h, NULL);
}

static void test_headers(void) {
  ladle__npy_header h;
  uint8_t buf[512];
  for (int v = 1; v <= 3; v++) {
    size_t n = make_npy(buf, v, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }", NULL, 0);
    CHECK_OK(ladle__npy_parse(buf, n, &h, NULL));
    CHECK(h.dtype == LADLE_FLOAT32 && h.ndim == 2 && h.shape[0] == 3 && h.shape[1] == 4 && !h.fortran_order);
    CHECK(h.data_offset == (int64_t)n && h.data_offset % 64 == 0 && h.data_bytes == 48 && h.major == v);
  }
  const struct {
    const char *descr;
    ladle_dtype dtype;
    int swap;
  } types[] = {{"|b1", LADLE_BOOL, 0},    {"|u1", LADLE_UINT8, 0},   {"|i1", LADLE_INT8, 0},
               {"<u2", LADLE_UINT16, 0},  {">i2", LADLE_INT16, 1},   {"<i4", LADLE_INT32, 0},
               {"<u4", LADLE_UINT32, 0},  {"<i8", LADLE_INT64, 0},   {">u8", LADLE_UINT64, 1},
               {"<f2", LADLE_FLOAT16, 0}, {"=f8", LADLE_FLOAT64, 0}, {">u1", LADLE_UINT8, 0}};
  for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
    char dict[128];
    snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': True, 'shape': (5,), }", types[k].descr);
    CHECK_OK(parse(dict, &h));
    CHECK(h.dtype == types[k].dtype && h.swap == types[k].swap && h.fortran_order && h.ndim == 1 && h.shape[0] == 5);
  }
  CHECK_OK(parse("{'descr':'<i4','fortran_order':False,'shape':()}", &h));
  CHECK(h.ndim == 0 && h.data_bytes == 4);
  CHECK_OK(parse("{\"shape\": (2L, 0L), \"descr\": \"<u2\", \"fortran_order\": False}", &h));
  CHECK(h.ndim == 2 && h.shape[1] == 0 && h.data_bytes == 0);
  CHECK_OK(parse("{'descr': '<f8', 'fortran_order': False, 'shape': (1, 2, 3, 4, 5, 6)}", &h));
  const struct {
    const char *dict, *message;
  } bad[] = {
      {"{'descr': '<c8', 'fortran_order': False, 'shape': (3,)}", "'<c8' is not supported"},
      {"{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (3,)}", "records"},
      {"{'descr': '<f4', 'fortran_order': 0, 'shape': (3,)}", "fortran_order"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3, -1)}", "shape"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': [3]}", "tuple"},
      {"{'descr': '<f4', 'fortran_order': False}", "lacks 'shape'"},
      {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (3,)}", "repeats 'descr'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'x': 1}", "unknown key 'x'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2, 3, 4, 5, 6, 7)}", "more than 6"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296)}", "overflows"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}", "too large"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3,)} junk", "after its dict"},
      {"{'descr': '<f4' 'fortran_order': False, 'shape': (3,)}", "dict literal"},
  };
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    ladle_status st = parse(bad[k].dict, &h);
    CHECK(st == LADLE_ERROR_CORRUPT_DATA && strstr(ladle_last_error(), bad[k].message));
    if (st == LADLE_OK || !strstr(ladle_last_error(), bad[k].message)) fprintf(stderr, "  %s -> %s\n", bad[k].dict, ladle_last_error());
  }
  size_t n = make_npy(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,)}", NULL, 0);
  size_t need = 0;
  CHECK(ladle__npy_parse(buf, 9, &h, &need) == LADLE_ERROR_CORRUPT_DATA && need == 10);
  CHECK(ladle__npy_parse(buf, 40, &h, &need) == LADLE_ERROR_CORRUPT_DATA && need == n);
  CHECK(ladle__npy_parse(buf, 3, &h, &need) == LADLE_ERROR_CORRUPT_DATA && strstr(ladle_last_error(), "shorter"));
  buf[6] = 4;
  CHECK(ladle__npy_parse(buf, n, &h, NULL) == LADLE_ERROR_CORRUPT_DATA && strstr(ladle_last_error(), "version 4.0"));
  buf[0] = 'x';
  CHECK(ladle__npy_parse(buf, n, &h, NULL) == LADLE_ERROR_CORRUPT_DATA && strstr(ladle_last_error(), "magic"));
  memcpy(buf, "\x93NUMPY\x02\x00\xff\xff\xff\x7f", 12);
  CHECK(ladle__npy_parse(buf, n, &h, &need) == LADLE_ERROR_CORRUPT_DATA && strstr(ladle_last_error(), "at most"));
}

static void test_mutations(void) {
  uint8_t good[512], m[512];
  int16_t data[12];
  for (int i = 0; i < 12; i++) data[i] = (int16_t)(i * 1000 - 5000);
  size_t n = make_npy(good, 1, "{'descr': '<i2', 'fortran_order': False, 'shape': (3, 4), }", data, sizeof data);
  ladle__rng rng;
  ladle__rng_init(&rng, 7, 1, 0, 0);
  int ok = 0, bad = 0;
  for (int it = 0; it < 20000; it++) {
    memcpy(m, good, n);
    size_t len = n;
    int edits = 1 + (int)ladle__rng_below(&rng, 4);
    for (int e = 0; e < edits; e++) {
      uint32_t kind = ladle__rng_below(&rng, 3);
      size_t at = ladle__rng_below(&rng, 74);
      if (kind == 0) m[at] = (uint8_t)ladle__rng_below(&rng, 256);
      else if (kind == 1) m[at] = "{}(),:' 0123456789LTFalseTrue<>|"[ladle__rng_below(&rng, 32)];
      else len = at + ladle__rng_below(&rng, (uint32_t)(n - at));
    }
    ladle__npy_header h;
    size_t need = 0;
    ladle_status st = ladle__npy_parse(m, len, &h, &need);
    CHECK(st == LADLE_OK || st == LADLE_ERROR_CORRUPT_DATA);
    if (st == LADLE_OK) {
      ok++;
      CHECK(h.data_offset <= (int64_t)len && h.ndim >= 0 && h.ndim <= LADLE_MAX_NDIM && h.data_bytes >= 0);
    } else {
      bad++;
      CHECK(need == 0 || need > len);
    }
  }
  CHECK(ok > 0 && bad > 10000);
}

/* The reference: element by element from the array's own strides. */
static void reference_region(uint8_t *dst, const uint8_t *arr, const ladle__npy_header *h, const int64_t *start,
                             const int64_t *shape, const uint8_t *fill) {
  size_t es = ladle_dtype_size(h->dtype);
  int64_t total = 1, idx[LADLE_MAX_NDIM] = {0};
  for (int d = 0; d < h->ndim; d++) total *= shape[d];
  for (int64_t o = 0; o < total; o++) {
    int64_t rem = o, off = 0, inside = 1, stride = 1;
    for (int d = h->ndim - 1; d >= 0; d--) idx[d] = rem % shape[d], rem /= shape[d];
    for (int k = 0; k < h->ndim; k++) {
      int d = h->fortran_order ? k : h->ndim - 1 - k;
      int64_t i = start[d] + idx[d];
      inside &= i >= 0 && i < h->shape[d];
      off += i * stride;
      stride *= h->shape[d];
    }
    for (size_t b = 0; b < es; b++)
      dst[(size_t)o * es + b] = inside ? arr[(size_t)off * es + (h->swap ? es - 1 - b : b)] : fill[b];
  }
}

static void test_region_copy(void) {
  ladle__rng rng;
  ladle__rng_init(&rng, 9, 2, 0, 0);
  static uint8_t arr[1 << 16], got[1 << 17], want[1 << 17];
  const ladle_dtype dtypes[] = {LADLE_UINT8, LADLE_INT16, LADLE_FLOAT32, LADLE_FLOAT64};
  for (int it = 0; it < 3000; it++) {
    ladle__npy_header h = {.dtype = dtypes[ladle__rng_below(&rng, 4)], .ndim = (int)ladle__rng_below(&rng, 5)};
    h.fortran_order = (int)ladle__rng_below(&rng, 2);
    size_t es = ladle_dtype_size(h.dtype);
    h.elem_size = (int)es;
    h.swap = es > 1 && ladle__rng_below(&rng, 2);
    int64_t elems = 1, out = 1, start[LADLE_MAX_NDIM], shape[LADLE_MAX_NDIM];
    for (int d = 0; d < h.ndim; d++) {
      h.shape[d] = ladle__rng_below(&rng, 6);
      elems *= h.shape[d];
      start[d] = (int64_t)ladle__rng_below(&rng, 10) - 3;
      shape[d] = ladle__rng_below(&rng, 8);
      out *= shape[d];
    }
    h.data_offset = 128;
    h.data_bytes = elems * (int64_t)es;
    for (int64_t b = 0; b < h.data_bytes; b++) arr[b] = (uint8_t)ladle__rng_below(&rng, 256);
    uint8_t fill[8];
    for (int b = 0; b < 8; b++) fill[b] = it % 3 ? (uint8_t)(0xA0 + b) : 0;
    reference_region(want, arr, &h, start, shape, fill);
    int64_t offset, bytes;
    ladle__npy_slab(&h, start, shape, &offset, &bytes);
    CHECK(offset >= h.data_offset && bytes >= 0 && offset + bytes <= h.data_offset + h.data_bytes);
    memset(got, 0x5c, (size_t)out * es + 16);
    ladle__npy_copy_region(got, arr + (offset - h.data_offset), &h, start, shape, fill);
    CHECK(memcmp(got, want, (size_t)out * es) == 0);
    CHECK(got[(size_t)out * es] == 0x5c); /* nothing written past the region */
  }
}

int main(void) {
  RUN(test_headers);
  RUN(test_mutations);
  RUN(test_region_copy);
  TEST_MAIN_END();
}
