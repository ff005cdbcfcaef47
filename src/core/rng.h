/* Counter-based random numbers (Philox4x32-10).
 *
 * A stream is keyed by (seed, operator) and addressed by (epoch, sample): the
 * numbers drawn for a sample depend on nothing else, so output is the same for
 * any thread count, prefetch depth, backend or resume point. Header-only so the
 * CUDA kernels draw exactly what the CPU draws. */
#ifndef LADLE_CORE_RNG_H
#define LADLE_CORE_RNG_H

#include <math.h>
#include <stdint.h>

#if defined(__CUDACC__)
#define LADLE_HD __host__ __device__
#else
#define LADLE_HD
#endif

typedef struct ladle__rng {
  uint32_t key[2];
  uint32_t ctr[4]; /* ctr[0] counts blocks; ctr[1] epoch; ctr[2..3] sample */
  uint32_t out[4];
  int used; /* words of out already handed out */
} ladle__rng;

static inline LADLE_HD uint64_t ladle__splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

static inline LADLE_HD void ladle__philox_block(const uint32_t ctr_in[4], const uint32_t key_in[2],
                                                uint32_t out[4]) {
  uint32_t c0 = ctr_in[0], c1 = ctr_in[1], c2 = ctr_in[2], c3 = ctr_in[3];
  uint32_t k0 = key_in[0], k1 = key_in[1];
  for (int round = 0; round < 10; round++) {
    uint64_t p0 = (uint64_t)0xD2511F53u * c0;
    uint64_t p1 = (uint64_t)0xCD9E8D57u * c2;
    uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
    uint32_t n1 = (uint32_t)p1;
    uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
    uint32_t n3 = (uint32_t)p0;
    c0 = n0; c1 = n1; c2 = n2; c3 = n3;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  out[0] = c0; out[1] = c1; out[2] = c2; out[3] = c3;
}

/* The stream of (seed, op) for one sample of one epoch. */
static inline LADLE_HD void ladle__rng_init(ladle__rng *r, uint64_t seed, uint64_t op,
                                            uint64_t epoch, uint64_t sample) {
  uint64_t k = ladle__splitmix64(seed ^ ladle__splitmix64(op + 0x632BE59BD9B4E019ull));
  r->key[0] = (uint32_t)k;
  r->key[1] = (uint32_t)(k >> 32);
  r->ctr[0] = 0;
  r->ctr[1] = (uint32_t)epoch;
  r->ctr[2] = (uint32_t)sample;
  r->ctr[3] = (uint32_t)(sample >> 32);
  r->out[0] = r->out[1] = r->out[2] = r->out[3] = 0; /* never read before the first block */
  r->used = 4;
}

/* The next word. out[] is read through selects, not out[used]: a GPU thread
 * then keeps the whole generator in registers (an array indexed at run time
 * lives in local memory, which made every draw a memory round trip). */
static inline LADLE_HD uint32_t ladle__rng_u32(ladle__rng *r) {
  if (r->used == 4) {
    ladle__philox_block(r->ctr, r->key, r->out);
    r->ctr[0]++;
    r->used = 0;
  }
  int u = r->used++;
  return u == 0 ? r->out[0] : u == 1 ? r->out[1] : u == 2 ? r->out[2] : r->out[3];
}

/* a * b rounded on its own. A formula shared by the CPU and CUDA writes a
 * product that feeds a sum with this: nvcc fuses a * b + c into one FMA (one
 * rounding), the CPU build does not (core/no_fma.h), and the two would differ
 * in the last bit. */
static inline LADLE_HD double ladle__dmul(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}

/* The double (hi * 2^26 + lo) / 2^53 of two words: 53 random bits, exact. */
static inline LADLE_HD double ladle__u53(uint32_t a, uint32_t b) {
  return (double)(((uint64_t)(a >> 5) << 26) | (b >> 6)) * (1.0 / 9007199254740992.0);
}

/* Uniform in [0, 1) with 53 random bits. */
static inline LADLE_HD double ladle__rng_uniform(ladle__rng *r) {
  uint32_t a = ladle__rng_u32(r);
  return ladle__u53(a, ladle__rng_u32(r));
}

/* Uniform in [lo, hi). */
static inline LADLE_HD double ladle__rng_range(ladle__rng *r, double lo, double hi) {
  return lo + ladle__dmul(hi - lo, ladle__rng_uniform(r));
}

/* Uniform integer in [0, n), without modulo bias (n >= 1). */
static inline LADLE_HD uint64_t ladle__rng_below(ladle__rng *r, uint64_t n) {
  if (n <= 1) return 0;
  uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  for (;;) {
    uint64_t x = ((uint64_t)ladle__rng_u32(r) << 32) | ladle__rng_u32(r);
    if (x < limit) return x % n;
  }
}

/* Substream i of a sample's fresh stream (as ladle__rng_init left it):
 * element i of an operator's output draws only from it, so that one GPU
 * thread per element draws what the CPU loop draws. Substream 0 is the stream
 * itself, so a scalar output keeps the sample stream's first numbers. */
static inline LADLE_HD void ladle__rng_substream(ladle__rng *r, const ladle__rng *base, uint64_t i) {
  *r = *base;
  if (i) {
    uint64_t k = (((uint64_t)base->key[1] << 32) | base->key[0]) ^ ladle__splitmix64(i);
    r->key[0] = (uint32_t)k;
    r->key[1] = (uint32_t)(k >> 32);
  }
  r->ctr[0] = 0;
  r->used = 4;
}

/* Standard normal (Box-Muller, the cosine branch; one value per two
 * uniforms). In double: libm and CUDA's log/cos may differ by an ulp, so a
 * GPU value can differ from the CPU's in the last bits of a double. */
static inline LADLE_HD double ladle__rng_normal(ladle__rng *r) {
  double u1 = 1.0 - ladle__rng_uniform(r); /* (0, 1]: log is finite */
  double u2 = ladle__rng_uniform(r);
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* Gamma(shape, 1) by Marsaglia and Tsang's method (shape > 0; below 1 through
 * Gamma(shape + 1) * U^(1/shape)). */
static inline LADLE_HD double ladle__rng_gamma(ladle__rng *r, double shape) {
  double boost = 1.0;
  if (shape < 1.0) {
    boost = pow(1.0 - ladle__rng_uniform(r), 1.0 / shape);
    shape += 1.0;
  }
  double d = shape - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
  for (;;) {
    double x = ladle__rng_normal(r), v = 1.0 + ladle__dmul(c, x);
    if (v <= 0) continue;
    v = v * v * v;
    double u = 1.0 - ladle__rng_uniform(r);
    if (u < 1.0 - ladle__dmul(0.0331 * x * x * x, x) ||
        log(u) < ladle__dmul(0.5 * x, x) + ladle__dmul(d, 1.0 - v + log(v)))
      return d * v * boost;
  }
}

/* Beta(a, b) = X / (X + Y), X ~ Gamma(a), Y ~ Gamma(b). */
static inline LADLE_HD double ladle__rng_beta(ladle__rng *r, double a, double b) {
  double x = ladle__rng_gamma(r, a), y = ladle__rng_gamma(r, b);
  return x + y > 0 ? x / (x + y) : (a >= b ? 1.0 : 0.0);
}

/* Poisson(lambda), lambda >= 0: multiplying uniforms below 10, Hormann's
 * transformed rejection (PTRS) from 10 on, as a sampler that moves in steps
 * of one Philox block (two uniforms, drawn before the branch so that GPU
 * lanes on either side share the block): ladle__rng_poisson runs the steps
 * to the end; a GPU thread can interleave the steps of its elements, so
 * lanes of a warp that finish early take their next element instead of
 * waiting for the slowest (the same numbers either way). A stream must be at
 * a block boundary when the sampler starts (a fresh substream is); the
 * sampler consumes whole blocks. The state after ladle__poisson_init is a
 * function of lambda alone, so it can be made once per input level. */
typedef struct ladle__poisson {
  double lambda, k;                          /* k: the sample once done */
  double limit, prod;                        /* lambda < 10 */
  double loglam, a, b, log_inv_alpha, vr;    /* PTRS */
} ladle__poisson;

/* 1 when the sample is known without a draw (lambda <= 0 or NaN: 0). */
static inline LADLE_HD int ladle__poisson_init(ladle__poisson *p, double lambda) {
  p->lambda = lambda;
  p->k = p->limit = p->prod = 0;
  p->loglam = p->a = p->b = p->log_inv_alpha = p->vr = 0;
  if (!(lambda > 0)) return 1;
  if (lambda < 10) {
    p->limit = exp(-lambda);
    p->prod = 1.0;
    p->k = -1;
    return 0;
  }
  double slam = sqrt(lambda);
  p->loglam = log(lambda);
  p->b = 0.931 + ladle__dmul(2.53, slam);
  p->a = -0.059 + ladle__dmul(0.02483, p->b);
  p->log_inv_alpha = log(1.1239 + 1.1328 / (p->b - 3.4));
  p->vr = 0.9277 - 3.6224 / (p->b - 2);
  return 0;
}

/* One block; 1 when p->k is the sample. lgam[k] (k < lgam_len; lgam may be
 * NULL) holds lgamma(k + 1) as computed by the host's libm: a GPU reading it
 * skips its own lgamma and rounds as the CPU does. */
static inline LADLE_HD int ladle__poisson_step(ladle__poisson *p, ladle__rng *r, const double *lgam, int lgam_len) {
  double u1 = ladle__rng_uniform(r), u2 = ladle__rng_uniform(r);
  if (p->lambda < 10) {
    p->k++;
    p->prod *= u1;
    if (!(p->prod > p->limit)) return 1;
    p->k++;
    p->prod *= u2;
    return !(p->prod > p->limit);
  }
  double lambda = p->lambda, a = p->a, b = p->b;
  double u = u1 - 0.5, v = u2;
  double us = 0.5 - fabs(u);
  double k = floor(ladle__dmul(2 * a / us + b, u) + lambda + 0.43);
  p->k = k;
  if (us >= 0.07 && v <= p->vr) return 1;
  if (k < 0 || (us < 0.013 && v > us)) return 0;
  double lgk = k < lgam_len ? lgam[(int)k] : lgamma(k + 1);
  return log(v) + p->log_inv_alpha - log(a / (us * us) + b) <= -lambda + ladle__dmul(k, p->loglam) - lgk;
}

/* lgamma(k + 1) for k < n: the table ladle__poisson_step reads. */
static inline void ladle__poisson_lgamma_table(double *lgam, int n) {
  for (int k = 0; k < n; k++) lgam[k] = lgamma(k + 1.0);
}

static inline LADLE_HD double ladle__rng_poisson_t(ladle__rng *r, double lambda, const double *lgam, int lgam_len) {
  ladle__poisson p;
  if (!ladle__poisson_init(&p, lambda))
    while (!ladle__poisson_step(&p, r, lgam, lgam_len)) {
    }
  return p.k;
}

static inline LADLE_HD double ladle__rng_poisson(ladle__rng *r, double lambda) {
  return ladle__rng_poisson_t(r, lambda, NULL, 0);
}

#endif
