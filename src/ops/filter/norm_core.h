/* normalize's statistics of uint8 data, shared by the CPU operator
 * (normalize.c) and the CUDA kernels (filter_kernels.cu): the sums S of x
 * and Q of x^2 are integers, exact in any order, so the GPU may add them up
 * in any order and still give the CPU's bits. mean = S / n and
 * M2 = sum (x - mean)^2 = (n Q - S^2) / n, the numerator exact in 128 bits
 * and rounded once to double. */
#ifndef LADLE_OPS_FILTER_NORM_CORE_H
#define LADLE_OPS_FILTER_NORM_CORE_H

#include <math.h>
#include <stdint.h>

#include "ops/kernels/dtype.h"

__extension__ typedef unsigned __int128 ladle__u128;

/* v rounded to the nearest double (ties to even): the bits below the top
 * 64 folded into a sticky bit, then one correctly rounded conversion. */
LADLE__DT_INLINE double ladle__u128_to_f64(ladle__u128 v) {
  const uint64_t hi = (uint64_t)(v >> 64);
  if (!hi) return (double)(uint64_t)v;
#if defined(__CUDA_ARCH__)
  const int shift = 64 - __clzll((long long)hi);
#else
  const int shift = 64 - __builtin_clzll(hi);
#endif
  const uint64_t top = (uint64_t)(v >> shift) | (uint64_t)((v & (((ladle__u128)1 << shift) - 1)) != 0);
  return ldexp((double)top, shift);
}

/* Mean and M2 of n members with sums s (of x) and q (of x^2); n = 0: 0, 0.
 * Exact sums need n < 2^40 members (q < 2^64). */
LADLE__DT_INLINE void ladle__norm_exact_moments(uint64_t s, uint64_t q, int64_t n, double *mean, double *m2) {
  if (n <= 0) {
    *mean = *m2 = 0;
    return;
  }
  const ladle__u128 num = (ladle__u128)(uint64_t)n * q - (ladle__u128)s * s; /* >= 0 (Cauchy-Schwarz) */
  *mean = (double)s / (double)n;
  *m2 = ladle__u128_to_f64(num) / (double)n;
}

#endif
