/* Test inputs of every dtype, shared by test_dtypes.c (CPU rules) and
 * test_gpu_dtypes.c (GPU against CPU): edge values (NaN, inf, halves, the
 * types' limits) and random bit patterns. */
#ifndef LADLE_TEST_DTYPE_VALUES_H
#define LADLE_TEST_DTYPE_VALUES_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/rng.h"
#include "ladle/ladle.h"
#include "ops/kernels/dtype.h"

static const ladle_dtype all_dtypes[LADLE_DTYPE_COUNT] = {
    LADLE_UINT8,  LADLE_INT8,   LADLE_INT16,   LADLE_UINT16,  LADLE_INT32,   LADLE_UINT32,
    LADLE_INT64,  LADLE_UINT64, LADLE_FLOAT16, LADLE_FLOAT32, LADLE_FLOAT64, LADLE_BOOL};

static const double specials[] = {
    0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 126.5, 127.5, 128.5, -128.5, -129.5, 254.5, 255.5, 256.5,
    32766.5, 32767.5, -32768.5, -32769.5, 65534.5, 65535.5, 65536.0, 2147483647.5, -2147483648.5, 2147483648.0,
    4294967295.5, 4294967296.0, 9223372036854775808.0, -9223372036854775808.0, 1.8446744073709552e19,
    3e19, -3e19, 65504.0, 65519.99, 65520.0, 6e-8, 3e-8, 2.9802322387695312e-08, 1e-30, -1e-30, 1e300, -1e300,
    5e-324, 1.0000000596046448, 1.0 + 0x1p-11 + 0x1p-40, 1.0 + 0x1p-11, 9007199254740993.0, 0.49999999999999994,
    INFINITY, -INFINITY, NAN, -NAN};

static const int64_t int_specials[] = {0, 1, -1, 127, 128, -128, -129, 255, 256, 32767, 32768, -32768, -32769,
                                       65535, 65536, 65519, 65520, 65521, 2147483647, 2147483648LL, -2147483648LL,
                                       -2147483649LL, 4294967295LL, 4294967296LL, 16777217, 9007199254740993LL,
                                       INT64_MAX, INT64_MIN, INT64_MIN + 1};

/* n elements of type t: the specials (saturated to fit), then random bit
 * patterns (every value, NaNs and subnormals included) and random values near
 * the interesting range, halves among them. */
static void fill(void *p, ladle_dtype t, size_t n, ladle__rng *rng) {
  const size_t es = ladle_dtype_size(t);
  const size_t ns = sizeof specials / sizeof *specials, ni = sizeof int_specials / sizeof *int_specials;
  const int is_float = ladle__dtype_is_float(t);
  for (size_t i = 0; i < n; i++) {
    uint64_t bits = ((uint64_t)ladle__rng_u32(rng) << 32) | ladle__rng_u32(rng);
    double small = ((double)(int64_t)(bits & 0x3ffff) - 131072.0) / ((bits >> 40) & 1 ? 2.0 : 1.0);
    if (is_float && i < ns) {
      ladle__store_f64(p, i, t, specials[i]);
    } else if (!is_float && i < ni) {
      ladle__store_i64(p, i, t, int_specials[i]);
    } else if (t == LADLE_UINT64 && i < ni + 4) {
      ((uint64_t *)p)[i] = UINT64_MAX - (i - ni); /* the top, beyond int64 */
    } else if (i % 3 == 2) {
      ladle__store_f64(p, i, t, small);
    } else {
      memcpy((uint8_t *)p + i * es, &bits, es);
      if (t == LADLE_BOOL) ((uint8_t *)p)[i] &= 1; /* a bool byte is 0 or 1 */
    }
  }
}

#endif
