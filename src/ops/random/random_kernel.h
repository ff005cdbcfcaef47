/* The per-element formulas of the random and noise operators, shared by the
 * CPU loop (random.c, noise.c) and the CUDA kernel (random_kernel.cu): element
 * i of a sample draws only from substream i / group of the sample's stream
 * (core/rng.h), so both backends draw the same numbers for any thread count.
 *
 * Agreement GPU vs CPU: coin_flip, uniform (range and values), choice and
 * salt_and_pepper use only integer and +,*,< arithmetic on the same doubles:
 * bit-identical (a product feeding a sum is ladle__dmul, so CUDA cannot fuse
 * it into an FMA). normal, beta, noise.gaussian and noise.shot go through
 * log/exp/cos/sqrt/pow/lgamma, which CUDA and libm may round differently by
 * an ulp of a double: values agree to ~1e-12 relative before the cast to the
 * output type (so float outputs almost always match exactly), and a
 * rejection or stopping test (beta, shot noise) may in rare cases fall the
 * other way, giving a different sample. */
#ifndef LADLE_OPS_RANDOM_KERNEL_H
#define LADLE_OPS_RANDOM_KERNEL_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/rng.h"
#include "ops/kernels/dtype.h"
#include "ladle/ladle.h"

typedef enum ladle__rand_kind {
  LADLE_RAND_COIN,        /* p[0] probability */
  LADLE_RAND_UNIFORM,     /* p[0], p[1]: [low, high) */
  LADLE_RAND_VALUES,      /* table: the values */
  LADLE_RAND_NORMAL,      /* p[0] mean, p[1] stddev */
  LADLE_RAND_BETA,        /* p[0] alpha, p[1] beta */
  LADLE_RAND_CHOICE,      /* table: cumulative p (or none); in: `a` (scalar n or a list of in_count values) */
  LADLE_NOISE_GAUSSIAN,   /* p[0] mean, p[1] stddev */
  LADLE_NOISE_SALT_PEPPER,/* p[0] prob, p[1] salt_vs_pepper, p[2] salt, p[3] pepper */
  LADLE_NOISE_SHOT        /* p[0] factor; table: lgamma(k + 1) for k < table_len */
} ladle__rand_kind;

/* One sample's draw: filled on the host in setup, read by both backends. */
typedef struct ladle__rand_sample {
  void *out;
  const void *in;   /* noise: the input; choice: `a` */
  int64_t count;    /* output elements */
  int64_t in_count; /* choice: elements of `a` (0: a scalar n) */
  int64_t group;    /* elements sharing one substream (salt_and_pepper per pixel), >= 1 */
  ladle__rng rng;   /* the sample's fresh stream */
  double p[4];
} ladle__rand_sample;

/* Element i of a tensor of `dtype`, as a double (ops/kernels/dtype.h). */
static inline LADLE_HD double ladle__rand_load(const void *data, int dtype, int64_t i) {
  return ladle__load_as_f64(data, (size_t)i, dtype);
}

/* Stores x as element i: integers round to nearest even and saturate (NaN:
 * 0), as DALI converts random values and noisy pixels. */
static inline LADLE_HD void ladle__rand_store(void *data, int dtype, int64_t i, double x) {
  ladle__store_f64(data, (size_t)i, dtype, x);
}

/* noise.shot's Poisson mean of an input value x (factor > 0): the output is
 * the sample times the factor. */
static inline LADLE_HD double ladle__shot_lambda_of(double x, double factor) { return (x > 0 ? x : 0) / factor; }

static inline LADLE_HD double ladle__shot_lambda(const ladle__rand_sample *s, int in_dtype, int64_t i) {
  return ladle__shot_lambda_of(ladle__rand_load(s->in, in_dtype, i), s->p[0]);
}

/* The value of element i of sample s drawn from r, element i's fresh
 * substream (that of i / group). `table` has table_len doubles. */
static inline LADLE_HD double ladle__rand_draw(int kind, const ladle__rand_sample *s, const double *table,
                                               int table_len, int in_dtype, int64_t i, ladle__rng *r) {
  switch (kind) {
    case LADLE_RAND_COIN: return ladle__rng_uniform(r) < s->p[0] ? 1.0 : 0.0;
    case LADLE_RAND_UNIFORM: return ladle__rng_range(r, s->p[0], s->p[1]);
    case LADLE_RAND_VALUES: return table[ladle__rng_below(r, (uint64_t)table_len)];
    case LADLE_RAND_NORMAL: return s->p[0] + ladle__dmul(s->p[1], ladle__rng_normal(r));
    case LADLE_RAND_BETA: return ladle__rng_beta(r, s->p[0], s->p[1]);
    case LADLE_RAND_CHOICE: {
      int64_t n = s->in_count ? s->in_count : (int64_t)ladle__rand_load(s->in, in_dtype, 0), k = 0;
      if (table_len) {
        double u = ladle__rng_uniform(r);
        while (k < table_len - 1 && !(u < table[k])) k++;
      } else {
        k = (int64_t)ladle__rng_below(r, n > 0 ? (uint64_t)n : 1);
      }
      return s->in_count ? ladle__rand_load(s->in, in_dtype, k) : (double)k;
    }
    case LADLE_NOISE_GAUSSIAN:
      return ladle__rand_load(s->in, in_dtype, i) + s->p[0] + ladle__dmul(s->p[1], ladle__rng_normal(r));
    case LADLE_NOISE_SALT_PEPPER:
      if (ladle__rng_uniform(r) < s->p[0]) return ladle__rng_uniform(r) < s->p[1] ? s->p[2] : s->p[3];
      return ladle__rand_load(s->in, in_dtype, i);
    default: /* LADLE_NOISE_SHOT */
      if (!(s->p[0] > 0)) return ladle__rand_load(s->in, in_dtype, i);
      /* table: lgamma(k + 1) (ladle__poisson_lgamma_table) */
      return ladle__rng_poisson_t(r, ladle__shot_lambda(s, in_dtype, i), table, table_len) * s->p[0];
  }
}

/* The value of element i of sample s (any kind, any group). */
static inline LADLE_HD double ladle__rand_value(int kind, const ladle__rand_sample *s, const double *table,
                                                int table_len, int in_dtype, int64_t i) {
  ladle__rng r;
  ladle__rng_substream(&r, &s->rng, (uint64_t)(i / s->group));
  return ladle__rand_draw(kind, s, table, table_len, in_dtype, i, &r);
}

/* Whether every value of type t comes out of ladle__rand_load then
 * ladle__rand_store unchanged (the integers of up to 32 bits; not floats,
 * whose NaNs become the canonical one, nor 64-bit integers beyond 2^53, nor
 * bool's nonzero bytes): salt and pepper then copies the bytes it keeps. */
static inline LADLE_HD int ladle__rand_copies_exactly(int t) {
  return t == LADLE_UINT8 || t == LADLE_INT8 || t == LADLE_INT16 || t == LADLE_UINT16 || t == LADLE_INT32 ||
         t == LADLE_UINT32;
}

/* Writes the `group` elements j * group .. of sample s that share substream
 * j: one draw for them all (salt and pepper per pixel), then each element's
 * value. The loop of both backends: the CPU calls it for every j, a GPU
 * thread for its j, with kind and dtypes constant there (one kernel each). */
static inline LADLE_HD void ladle__rand_group(int kind, const ladle__rand_sample *s, const double *table,
                                              int table_len, int out_dtype, int in_dtype, int64_t j) {
  ladle__rng r;
  ladle__rng_substream(&r, &s->rng, (uint64_t)j);
  int64_t i = j * s->group;
  if (kind == LADLE_NOISE_SALT_PEPPER) {
    /* as ladle__rand_draw: hit, then salt or pepper */
    int hit = ladle__rng_uniform(&r) < s->p[0];
    double v = hit && ladle__rng_uniform(&r) < s->p[1] ? s->p[2] : s->p[3]; /* no p[k]: stays in registers */
    if (!hit && out_dtype == in_dtype && ladle__rand_copies_exactly(in_dtype)) {
      size_t es = ladle__dtype_bytes(in_dtype);
      for (int64_t e = i; e < i + s->group; e++)
        memcpy((char *)s->out + (size_t)e * es, (const char *)s->in + (size_t)e * es, es);
      return;
    }
    for (int64_t e = i; e < i + s->group; e++)
      ladle__rand_store(s->out, out_dtype, e, hit ? v : ladle__rand_load(s->in, in_dtype, e));
    return;
  }
  for (int64_t e = i; e < i + s->group; e++) {
    ladle__rng q = r; /* each element from the substream's start, as ladle__rand_value */
    ladle__rand_store(s->out, out_dtype, e, ladle__rand_draw(kind, s, table, table_len, in_dtype, e, &q));
  }
}

/* One GPU thread's share of noise.shot over sample s (factor s->p[0] > 0):
 * the elements j, j + stride, ... below s->count (< 2^32), drawn in
 * interleaved steps: when an element's sampler finishes, the thread stores
 * it and starts its next element, so the lanes of a warp stay busy (see
 * random_kernel.cu). The values are those of ladle__rand_group. levels, for
 * uint8 input only (else NULL): the sampler initialised for each of the 256
 * levels, which saves each element's exp or sqrt/log/divisions. lgam: as
 * ladle__poisson_step. */
static inline LADLE_HD void ladle__shot_walk(const ladle__rand_sample *s, int dtype, const ladle__poisson *levels,
                                             const double *lgam, int lgam_len, uint32_t j, uint32_t stride) {
  uint32_t n = (uint32_t)s->count;
  double factor = s->p[0];
  ladle__rng r;
  ladle__poisson p;
  int busy = 0;
  for (;;) {
    while (!busy && j < n) {
      int done;
      ladle__rng_substream(&r, &s->rng, j);
      if (levels) {
        p = levels[((const uint8_t *)s->in)[j]];
        done = !(p.lambda > 0); /* what ladle__poisson_init returned */
      } else {
        done = ladle__poisson_init(&p, ladle__shot_lambda(s, dtype, j));
      }
      if (done) {
        ladle__rand_store(s->out, dtype, j, p.k * factor);
        j += stride;
      } else {
        busy = 1;
      }
    }
    if (!busy) return;
    if (ladle__poisson_step(&p, &r, lgam, lgam_len)) {
      ladle__rand_store(s->out, dtype, j, p.k * factor);
      busy = 0;
      j += stride;
    }
  }
}

#ifdef __cplusplus
extern "C" {
#endif

/* Every element of n samples on the GPU (pointers in d are device pointers;
 * s->in of a choice too). Parameters: the samples then the table, packed into
 * host_params (pinned, 16-byte aligned) and copied to dev_params on `stream`;
 * both hold ladle__gpu_rand_param_bytes(n, table_len) bytes. */
size_t ladle__gpu_rand_param_bytes(int n, int table_len);
ladle_status ladle__gpu_rand(const ladle__rand_sample *d, int n, int kind, const double *table, int table_len,
                             ladle_dtype out_dtype, ladle_dtype in_dtype, void *host_params, void *dev_params,
                             size_t param_bytes, void *stream);

#ifdef __cplusplus
}
#endif

#endif
