/* Every dtype: sizes and names, and ladle__convert (ops/kernels/dtype.h's
 * rules) for every pair of the 12 types against a reference written here in
 * long double (which holds every value of every type exactly): round half to
 * even and saturate for integers (NaN -> 0), x != 0 for bool, one rounding to
 * each float type. Inputs: edge values (NaN, inf, halves, limits) and random
 * bit patterns. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "ladle/ladle.h"
#include "ops/geometry/normalize_kernel.h"
#include "ops/kernels/dtype.h"
#include "ops/kernels/half.h"
#include "ops/tensor/dtype_values.h"
#include "test.h"


static void test_sizes_and_names(void) {
  static const struct {
    ladle_dtype t;
    size_t size;
    const char *name;
  } want[] = {{LADLE_UINT8, 1, "uint8"},     {LADLE_INT32, 4, "int32"},    {LADLE_FLOAT32, 4, "float32"},
              {LADLE_FLOAT16, 2, "float16"}, {LADLE_INT64, 8, "int64"},    {LADLE_INT8, 1, "int8"},
              {LADLE_INT16, 2, "int16"},     {LADLE_UINT16, 2, "uint16"},  {LADLE_UINT32, 4, "uint32"},
              {LADLE_UINT64, 8, "uint64"},   {LADLE_FLOAT64, 8, "float64"}, {LADLE_BOOL, 1, "bool"}};
  CHECK(LADLE_DTYPE_COUNT == 12);
  for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
    CHECK(ladle_dtype_size(want[i].t) == want[i].size);
    CHECK(ladle__dtype_bytes(want[i].t) == want[i].size);
    CHECK(strcmp(ladle_dtype_name(want[i].t), want[i].name) == 0);
  }
  CHECK(ladle_dtype_size(LADLE_DTYPE_COUNT) == 0 && ladle__dtype_bytes(-1) == 0);
  CHECK(strcmp(ladle_dtype_name((ladle_dtype)99), "invalid") == 0);
}

/* ------------------------------------------------------------------------ */
/* The reference                                                              */
/* ------------------------------------------------------------------------ */

static long double exact(const void *p, size_t i, ladle_dtype t) {
  switch (t) {
    case LADLE_UINT8: return ((const uint8_t *)p)[i];
    case LADLE_INT8: return ((const int8_t *)p)[i];
    case LADLE_INT16: return ((const int16_t *)p)[i];
    case LADLE_UINT16: return ((const uint16_t *)p)[i];
    case LADLE_INT32: return ((const int32_t *)p)[i];
    case LADLE_UINT32: return ((const uint32_t *)p)[i];
    case LADLE_INT64: return ((const int64_t *)p)[i];
    case LADLE_UINT64: return ((const uint64_t *)p)[i];
    case LADLE_FLOAT16: return ladle__f16_to_f32(((const uint16_t *)p)[i]);
    case LADLE_FLOAT32: return ((const float *)p)[i];
    case LADLE_FLOAT64: return ((const double *)p)[i];
    default: return ((const uint8_t *)p)[i] != 0;
  }
}

/* v rounded once to binary16 (half to even), as its bits. */
static uint16_t ref_half(long double v) {
  if (isnan(v)) return 0x7e00;
  uint16_t sign = signbit(v) ? 0x8000 : 0;
  long double a = fabsl(v);
  if (a >= 65520.0L) return sign | 0x7c00;
  int e;
  frexpl(a, &e); /* a = m * 2^e, m in [0.5, 1) */
  int exp2 = e - 1 < -14 ? -14 : e - 1;
  long double ulp = ldexpl(1.0L, exp2 - 10);
  long double q = nearbyintl(a / ulp) * ulp; /* exact scaling by a power of two; half to even */
  return sign | ladle__f32_to_f16((float)q); /* q is a half: exact in float and back */
}

static void ref_store(void *p, ladle_dtype t, long double v) {
  long double lo = 0, hi = 0;
  switch (t) {
    case LADLE_UINT8: hi = UINT8_MAX; break;
    case LADLE_INT8: lo = INT8_MIN; hi = INT8_MAX; break;
    case LADLE_INT16: lo = INT16_MIN; hi = INT16_MAX; break;
    case LADLE_UINT16: hi = UINT16_MAX; break;
    case LADLE_INT32: lo = INT32_MIN; hi = INT32_MAX; break;
    case LADLE_UINT32: hi = UINT32_MAX; break;
    case LADLE_INT64: lo = (long double)INT64_MIN; hi = (long double)INT64_MAX; break;
    case LADLE_UINT64: hi = (long double)UINT64_MAX; break;
    case LADLE_FLOAT16: *(uint16_t *)p = ref_half(v); return;
    case LADLE_FLOAT32: *(float *)p = (float)v; return;
    case LADLE_FLOAT64: *(double *)p = (double)v; return;
    default: *(uint8_t *)p = v != 0; return;
  }
  long double r = isnan(v) ? 0 : nearbyintl(v);
  r = r < lo ? lo : r > hi ? hi : r;
  switch (t) {
    case LADLE_UINT8: *(uint8_t *)p = (uint8_t)r; break;
    case LADLE_INT8: *(int8_t *)p = (int8_t)r; break;
    case LADLE_INT16: *(int16_t *)p = (int16_t)r; break;
    case LADLE_UINT16: *(uint16_t *)p = (uint16_t)r; break;
    case LADLE_INT32: *(int32_t *)p = (int32_t)r; break;
    case LADLE_UINT32: *(uint32_t *)p = (uint32_t)r; break;
    case LADLE_INT64: *(int64_t *)p = (int64_t)r; break;
    default: *(uint64_t *)p = (uint64_t)r; break;
  }
}

static int same_bits(const void *a, const void *b, size_t i, ladle_dtype t) {
  size_t es = ladle_dtype_size(t);
  return memcmp((const uint8_t *)a + i * es, (const uint8_t *)b + i * es, es) == 0;
}

static void test_convert_every_pair(void) {
  enum { N = 3000 };
  ladle__rng rng;
  ladle__rng_init(&rng, 77, 0, 0, 0);
  uint64_t in[N], out[N], ref[N];
  for (int a = 0; a < LADLE_DTYPE_COUNT; a++) {
    for (int b = 0; b < LADLE_DTYPE_COUNT; b++) {
      ladle_dtype it = all_dtypes[a], ot = all_dtypes[b];
      fill(in, it, N, &rng);
      ladle__convert(out, ot, in, it, N);
      size_t bad = 0, first = 0;
      for (size_t i = 0; i < N; i++) {
        uint64_t one = 0;
        if (it == ot) memcpy(&one, (uint8_t *)in + i * ladle_dtype_size(it), ladle_dtype_size(it)); /* a copy */
        else ref_store(&one, ot, exact(in, i, it));
        memcpy((uint8_t *)ref + i * ladle_dtype_size(ot), &one, ladle_dtype_size(ot));
        int ok = same_bits(out, ref, i, ot);
        /* NaN -> float: any NaN (payload and sign are not specified) */
        if (!ok && ladle__dtype_is_float(ot) && isnan(exact(out, i, ot)) && isnan(exact(ref, i, ot))) ok = 1;
        if (!ok && !bad++) first = i;
      }
      CHECK(bad == 0);
      if (bad) {
        fprintf(stderr, "convert %s -> %s: %zu of %d differ; first: in %.20Lg -> got %.20Lg, want %.20Lg\n",
                ladle_dtype_name(it), ladle_dtype_name(ot), bad, N, exact(in, first, it), exact(out, first, ot),
                exact(ref, first, ot));
      }
    }
  }
}

/* The per-element helpers give what the array conversion gives. */
static void test_elementwise_helpers_agree(void) {
  enum { N = 500 };
  ladle__rng rng;
  ladle__rng_init(&rng, 78, 0, 0, 0);
  uint64_t in[N], out[N], one[N];
  for (int a = 0; a < LADLE_DTYPE_COUNT; a++)
    for (int b = 0; b < LADLE_DTYPE_COUNT; b++) {
      if (a == b) continue;
      fill(in, all_dtypes[a], N, &rng);
      ladle__convert(out, all_dtypes[b], in, all_dtypes[a], N);
      for (size_t i = 0; i < N; i++) ladle__convert_elem(one, i, all_dtypes[b], in, i, all_dtypes[a]);
      CHECK(memcmp(out, one, N * ladle_dtype_size(all_dtypes[b])) == 0);
      /* ladle__load_as_f64 reads any type */
      for (size_t i = 0; i < N; i++) {
        double want = (double)exact(in, i, all_dtypes[a]), got = ladle__load_as_f64(in, i, all_dtypes[a]);
        if (!(got == want || (isnan(got) && isnan(want)))) {
          CHECK(0);
          break;
        }
      }
    }
}

static void test_examples(void) {
  float f[] = {0.5f, 1.5f, 2.5f, -0.5f, -2.5f, NAN, INFINITY, -INFINITY, 1e-30f};
  int8_t i8[9];
  uint64_t u64[9];
  uint8_t b[9];
  ladle__convert(i8, LADLE_INT8, f, LADLE_FLOAT32, 9);
  ladle__convert(u64, LADLE_UINT64, f, LADLE_FLOAT32, 9);
  ladle__convert(b, LADLE_BOOL, f, LADLE_FLOAT32, 9);
  const int8_t want8[] = {0, 2, 2, 0, -2, 0, 127, -128, 0};
  const uint64_t want64[] = {0, 2, 2, 0, 0, 0, UINT64_MAX, 0, 0};
  const uint8_t wantb[] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  CHECK(memcmp(i8, want8, sizeof i8) == 0);
  CHECK(memcmp(u64, want64, sizeof u64) == 0);
  CHECK(memcmp(b, wantb, sizeof b) == 0);
  /* float64 -> float16 rounds once: above the midpoint of 1 and 1 + 2^-10 */
  double d = 1.0 + 0x1p-11 + 0x1p-40;
  uint16_t h;
  ladle__convert(&h, LADLE_FLOAT16, &d, LADLE_FLOAT64, 1);
  CHECK(h == 0x3c01);
  /* uint64 beyond int64 saturates int64 and converts exactly to float64 where it can */
  uint64_t big[] = {UINT64_MAX, 1ull << 63};
  int64_t s64[2];
  double f64[2];
  ladle__convert(s64, LADLE_INT64, big, LADLE_UINT64, 2);
  ladle__convert(f64, LADLE_FLOAT64, big, LADLE_UINT64, 2);
  CHECK(s64[0] == INT64_MAX && s64[1] == INT64_MAX);
  CHECK(f64[0] == 18446744073709551616.0 && f64[1] == 9223372036854775808.0);
}

int main(void) {
  RUN(test_sizes_and_names);
  RUN(test_convert_every_pair);
  RUN(test_elementwise_helpers_agree);
  RUN(test_examples);
  TEST_MAIN_END();
}
