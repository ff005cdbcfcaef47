/* Separable resampling: per-axis weight tables (PIL's windowing and border
 * rule) and the horizontal-then-vertical HWC kernels that apply them. */
/* The arithmetic is specified operation by operation (a CUDA kernel must
 * reproduce it bit for bit): never fuse a multiply and an add, whatever the
 * target or -ffp-contract default (gcc's GNU modes fuse when FMA exists). */
#include "core/no_fma.h"

#include "ops/geometry/resize_kernel.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "ops/kernels/half.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

/* ------------------------------------------------------------------------ */
/* Filters                                                                   */
/* ------------------------------------------------------------------------ */

static double filter_triangle(double x) {
  x = fabs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}

/* Keys' cubic convolution with a = -0.5 (Catmull-Rom). */
static double filter_cubic(double x) {
  const double a = -0.5;
  x = fabs(x);
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
  if (x < 2.0) return (((x - 5.0) * x + 8.0) * x - 4.0) * a;
  return 0.0;
}

/* sin(pi x) / (pi x), exactly 0 at non-zero integers (sin(pi n) in floating
 * point is not), so an identity resize has weights of exactly 1 and 0. */
static double sinc(double x) {
  if (x == 0.0) return 1.0;
  if (x == floor(x)) return 0.0;
  x *= M_PI;
  return sin(x) / x;
}

static double filter_lanczos3(double x) {
  if (x <= -3.0 || x >= 3.0) return 0.0;
  return sinc(x) * sinc(x / 3.0);
}

/* Gaussian as DALI sets it up: exp(-(2x)^2) with x in units of the radius. */
static double filter_gaussian(double x) { return exp(-4.0 * x * x); }

/* ------------------------------------------------------------------------ */
/* Planning                                                                  */
/* ------------------------------------------------------------------------ */

void ladle__resize_axis_free(ladle__resize_axis *axis) {
  if (!axis) return;
  free(axis->start);
  free(axis->weights);
  free(axis->work);
  memset(axis, 0, sizeof *axis);
}

ladle_status ladle__resize_axis_plan(ladle__resize_axis *axis, int in_size, double src_lo,
                                     double src_len, int out_size, ladle__interp interp,
                                     int antialias) {
  memset(axis, 0, sizeof *axis);
  return ladle__resize_axis_replan(axis, in_size, src_lo, src_len, out_size, interp, antialias);
}

/* Makes *p hold at least `bytes` (its old contents are not kept). */
static int reserve(void **p, size_t *cap, size_t bytes) {
  if (*cap >= bytes) return 1;
  free(*p);
  *p = malloc(bytes ? bytes : 1);
  *cap = *p ? bytes : 0;
  return *p != NULL;
}

#define RESERVE(ptr, cap, bytes)                                                               \
  LADLE_CHECK(reserve((void **)&(ptr), &(cap), (bytes)), LADLE_ERROR_OUT_OF_MEMORY,           \
              "cannot allocate %zu bytes of filter tables", (size_t)(bytes))

ladle_status ladle__resize_axis_replan(ladle__resize_axis *axis, int in_size, double src_lo,
                                       double src_len, int out_size, ladle__interp interp,
                                       int antialias) {
  ladle_status st = LADLE_OK;
  int32_t *lo = NULL;  /* first input pixel of each output's trimmed filter */
  int32_t *cnt = NULL; /* its length */
  double *dw = NULL;   /* its weights, ksize per output pixel */
  LADLE_CHECK(in_size >= 1 && out_size >= 1, LADLE_ERROR_INVALID_ARGUMENT,
              "sizes must be >= 1 (in_size %d, out_size %d)", in_size, out_size);
  LADLE_CHECK(isfinite(src_lo) && isfinite(src_len) && src_len > 0, LADLE_ERROR_INVALID_ARGUMENT,
              "bad source window (lo %g, length %g)", src_lo, src_len);
  LADLE_CHECK((int)interp >= LADLE__INTERP_NN && (int)interp <= LADLE__INTERP_GAUSSIAN,
              LADLE_ERROR_INVALID_ARGUMENT, "unknown interpolation %d", (int)interp);

  double scale = src_len / out_size;
  axis->out_size = out_size;
  axis->in_size = in_size;
  axis->round_up = 0;

  if (interp == LADLE__INTERP_NN) {
    axis->taps = 1;
    RESERVE(axis->start, axis->cap_start, sizeof *axis->start * (size_t)out_size);
    RESERVE(axis->weights, axis->cap_weights, sizeof *axis->weights * (size_t)out_size);
    for (int i = 0; i < out_size; i++) {
      double x = floor(src_lo + (i + 0.5) * scale);
      axis->start[i] = x < 0 ? 0 : x > in_size - 1 ? in_size - 1 : (int32_t)x;
      axis->weights[i] = 1.0f;
    }
  } else {
    double (*f)(double) = filter_triangle;
    double support = 1.0; /* in units of fs */
    int widen = antialias;
    switch (interp) {
      case LADLE__INTERP_CUBIC: f = filter_cubic; support = 2.0; break;
      case LADLE__INTERP_LANCZOS3: f = filter_lanczos3; support = 3.0; break;
      case LADLE__INTERP_TRIANGULAR: widen = 1; break;
      case LADLE__INTERP_GAUSSIAN: f = filter_gaussian; break;
      default: break;
    }
    double fs = widen && scale > 1.0 ? scale : 1.0;
    double reach = support * fs; /* half-width in input pixels */
    if (interp == LADLE__INTERP_GAUSSIAN) reach = floor(fs + 0.4) + 0.5;
    /* Pixels considered: floor(center - reach + 0.5) .. floor(center + reach + 0.5) - 1. */
    LADLE_CHECK(reach < 1e6, LADLE_ERROR_INVALID_ARGUMENT, "filter too wide (scale %g)", scale);
    int ksize = (int)ceil(reach) * 2 + 2;
    if (ksize > in_size) ksize = in_size;
    /* Scratch: lo and cnt (int32 per output), then dw (ksize doubles per output). */
    size_t ints = ((size_t)out_size * 2 * sizeof(int32_t) + 7) & ~(size_t)7;
    RESERVE(axis->work, axis->cap_work, ints + (size_t)out_size * ksize * sizeof(double));
    lo = axis->work;
    cnt = lo + out_size;
    dw = (double *)((uint8_t *)axis->work + ints);

    int taps = 1;
    for (int i = 0; i < out_size; i++) {
      double center = src_lo + (i + 0.5) * scale;
      double xa = floor(center - reach + 0.5), xb = floor(center + reach + 0.5);
      int xmin = xa < 0 ? 0 : xa > in_size ? in_size : (int)xa;
      int xmax = xb < 0 ? 0 : xb > in_size ? in_size : (int)xb;
      double *w = dw + (size_t)i * ksize;
      double sum = 0.0;
      int n = xmax - xmin;
      if (n > ksize) n = ksize; /* cannot happen; keeps the writes in bounds */
      for (int k = 0; k < n; k++) {
        w[k] = f((xmin + k + 0.5 - center) / fs);
        sum += w[k];
      }
      /* Trim zero weights at both ends: an identity or integer-aligned
       * resize then needs fewer taps. */
      int a = 0, b = n;
      while (a < b && w[a] == 0.0) a++;
      while (b > a && w[b - 1] == 0.0) b--;
      if (a == b || sum == 0.0) {
        /* The whole filter misses the input: take the nearest pixel. */
        double x = floor(center);
        lo[i] = x < 0 ? 0 : x > in_size - 1 ? in_size - 1 : (int32_t)x;
        cnt[i] = 1;
        w[0] = 1.0;
        continue;
      }
      for (int k = a; k < b; k++) w[k - a] = w[k] / sum;
      lo[i] = xmin + a;
      cnt[i] = b - a;
      if (b - a > taps) taps = b - a;
    }

    axis->taps = taps;
    RESERVE(axis->start, axis->cap_start, sizeof *axis->start * (size_t)out_size);
    RESERVE(axis->weights, axis->cap_weights, sizeof *axis->weights * (size_t)out_size * taps);
    /* Taps past a pixel's own filter weigh 0. */
    memset(axis->weights, 0, sizeof *axis->weights * (size_t)out_size * taps);
    for (int i = 0; i < out_size; i++) {
      /* Shift windows that would run past the end left; taps <= in_size. */
      int s = lo[i] + taps > in_size ? in_size - taps : lo[i];
      int off = lo[i] - s;
      axis->start[i] = s;
      float *w = axis->weights + (size_t)i * taps + off;
      const double *d = dw + (size_t)i * ksize;
      /* Rounding each weight to float leaves the sum off by up to n/2 ulp;
       * give the residual to the largest weight, where it is relatively
       * smallest, so that flat regions stay flat. */
      double sum = 0.0;
      int big = 0;
      for (int k = 0; k < cnt[i]; k++) {
        w[k] = (float)d[k];
        sum += w[k];
        if (fabs(d[k]) > fabs(d[big])) big = k;
      }
      w[big] = (float)(w[big] + (1.0 - sum));
    }
  }

  axis->in_lo = axis->start[0];
  axis->in_hi = axis->start[0] + axis->taps;
  for (int i = 1; i < out_size; i++) {
    if (axis->start[i] < axis->in_lo) axis->in_lo = axis->start[i];
    if (axis->start[i] + axis->taps > axis->in_hi) axis->in_hi = axis->start[i] + axis->taps;
  }

done:
  if (st != LADLE_OK) ladle__resize_axis_free(axis);
  return st;
}

/* ------------------------------------------------------------------------ */
/* Kernels                                                                   */
/* ------------------------------------------------------------------------ */

/* GCC/Clang vector extensions: plain element-wise float arithmetic (each lane
 * does exactly what the scalar formula does), compiled to SSE/NEON at any -O
 * level (gcc's -O2 auto-vectorizer does not touch these loops). A few
 * conversions that gcc lowers badly from generic code use SSE2 intrinsics on
 * x86, with a portable version beside them. */
typedef float v4sf __attribute__((vector_size(16)));
typedef int32_t v4si __attribute__((vector_size(16)));

#define AI static inline __attribute__((always_inline))

AI v4sf load4(const float *p) {
  v4sf v;
  memcpy(&v, p, sizeof v);
  return v;
}

AI void store4(float *p, v4sf v) { memcpy(p, &v, sizeof v); }

/* Filter lengths up to this get a copy of each pass with the length fixed at
 * compile time (unrolled, weights and row pointers in registers). */
#define MAX_FIXED_TAPS 8

/*
 * Layout of the scratch memory (offsets from a 64-byte aligned base):
 *   row:  the input row's span [in_lo, in_hi) of ax as floats, packed HWC,
 *         plus 4 floats of zeros (4-wide loads of the last 3-channel pixel)
 *   ring: ay->taps horizontally resized rows, input row r in slot r % taps;
 *         3- and 4-channel pixels are stored as 4 floats (for 3 channels the
 *         4th lane is a by-product that is never output), rows padded to a
 *         multiple of 4 floats
 *   acc:  one output row of the vertical pass, in the ring's format
 *   wx:   ax's weights, each repeated in 4 lanes (3- and 4-channel images)
 *   tag:  the input row each slot holds (-1: none)
 *   rp:   the ay->taps row pointers of the output row being computed
 */
typedef struct scratch_layout {
  size_t row, ring, acc, wx, tag, rp, total;
  size_t row_w; /* floats per ring row */
  int cp;       /* floats per intermediate pixel */
} scratch_layout;

static size_t align64(size_t n) { return (n + 63) & ~(size_t)63; }

static scratch_layout layout_of(const ladle__resize_axis *ax, const ladle__resize_axis *ay,
                                int channels) {
  scratch_layout l;
  l.cp = channels >= 3 ? 4 : channels;
  l.row_w = ((size_t)ax->out_size * l.cp + 3) & ~(size_t)3;
  l.row = 0;
  l.ring = l.row + align64(((size_t)(ax->in_hi - ax->in_lo) * channels + 4) * sizeof(float));
  l.acc = l.ring + align64((size_t)ay->taps * l.row_w * sizeof(float));
  l.wx = l.acc + align64(l.row_w * sizeof(float));
  l.tag = l.wx + (channels >= 3 ? align64((size_t)ax->out_size * ax->taps * sizeof(v4sf)) : 0);
  l.rp = l.tag + align64((size_t)ay->taps * sizeof(int));
  l.total = l.rp + align64((size_t)ay->taps * sizeof(float *));
  return l;
}

size_t ladle__resize_scratch_size(const ladle__resize_axis *ax, const ladle__resize_axis *ay,
                                  int in_h, int channels) {
  (void)in_h;
  /* + 64: the kernels align the base themselves. */
  return layout_of(ax, ay, channels).total + 64;
}

/* n uint8 values to float. */
static void load_row_u8(float *restrict dst, const uint8_t *restrict src, size_t n) {
  size_t k = 0;
#if defined(__SSE2__)
  const __m128i z = _mm_setzero_si128();
  for (; k + 16 <= n; k += 16) {
    __m128i b = _mm_loadu_si128((const __m128i *)(src + k));
    __m128i lo = _mm_unpacklo_epi8(b, z), hi = _mm_unpackhi_epi8(b, z);
    _mm_storeu_ps(dst + k, _mm_cvtepi32_ps(_mm_unpacklo_epi16(lo, z)));
    _mm_storeu_ps(dst + k + 4, _mm_cvtepi32_ps(_mm_unpackhi_epi16(lo, z)));
    _mm_storeu_ps(dst + k + 8, _mm_cvtepi32_ps(_mm_unpacklo_epi16(hi, z)));
    _mm_storeu_ps(dst + k + 12, _mm_cvtepi32_ps(_mm_unpackhi_epi16(hi, z)));
  }
#endif
  for (; k < n; k++) dst[k] = (float)src[k];
}

/*
 * Horizontal pass over one row, 3 or 4 channels: c is the pixel stride of
 * the row and T the number of taps (both constants at each call; T = 0: read
 * it from the table). wx holds the weights repeated in 4 lanes, so each tap
 * is one 4-lane load, multiply and add. Two output pixels are interleaved so
 * that their (sequential, per pixel) sums overlap in time.
 */
AI void hpass4(float *restrict dst, const float *restrict row, const v4sf *restrict wx,
               const ladle__resize_axis *ax, int c, int T) {
  const int taps = T ? T : ax->taps, lo = ax->in_lo, n = ax->out_size;
  const int32_t *start = ax->start;
  int i = 0;
  for (; i + 2 <= n; i += 2) {
    const float *p0 = row + (size_t)(start[i] - lo) * c;
    const float *p1 = row + (size_t)(start[i + 1] - lo) * c;
    const v4sf *w0 = wx + (size_t)i * taps, *w1 = w0 + taps;
    v4sf a0 = {0.0f, 0.0f, 0.0f, 0.0f}, a1 = a0;
#pragma GCC unroll 8
    for (int k = 0; k < taps; k++) {
      a0 += w0[k] * load4(p0 + k * c);
      a1 += w1[k] * load4(p1 + k * c);
    }
    store4(dst + (size_t)i * 4, a0);
    store4(dst + (size_t)i * 4 + 4, a1);
  }
  for (; i < n; i++) {
    const float *p = row + (size_t)(start[i] - lo) * c;
    const v4sf *w = wx + (size_t)i * taps;
    v4sf acc = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int k = 0; k < taps; k++) acc += w[k] * load4(p + k * c);
    store4(dst + (size_t)i * 4, acc);
  }
}

#define HPASS4_CASES(c)                                            \
  switch (ax->taps) {                                              \
    case 1: hpass4(dst, row, wx, ax, c, 1); break;                 \
    case 2: hpass4(dst, row, wx, ax, c, 2); break;                 \
    case 3: hpass4(dst, row, wx, ax, c, 3); break;                 \
    case 4: hpass4(dst, row, wx, ax, c, 4); break;                 \
    case 5: hpass4(dst, row, wx, ax, c, 5); break;                 \
    case 6: hpass4(dst, row, wx, ax, c, 6); break;                 \
    case 7: hpass4(dst, row, wx, ax, c, 7); break;                 \
    case 8: hpass4(dst, row, wx, ax, c, 8); break;                 \
    default: hpass4(dst, row, wx, ax, c, 0); break;                \
  }

/* The same for 1 or 2 channels, scalar. */
AI void hpass_small(float *restrict dst, const float *restrict row, const ladle__resize_axis *ax,
                    int c) {
  const int taps = ax->taps, lo = ax->in_lo;
  for (int i = 0; i < ax->out_size; i++) {
    const float *p = row + (size_t)(ax->start[i] - lo) * c;
    const float *w = ax->weights + (size_t)i * taps;
    float acc[2] = {0.0f, 0.0f};
    for (int k = 0; k < taps; k++)
      for (int ch = 0; ch < c; ch++) acc[ch] += w[k] * p[k * c + ch];
    for (int ch = 0; ch < c; ch++) dst[(size_t)i * c + ch] = acc[ch];
  }
}

static void hpass_any(float *dst, const float *row, const v4sf *wx, const ladle__resize_axis *ax,
                      int c) {
  switch (c) {
    case 1: hpass_small(dst, row, ax, 1); break;
    case 2: hpass_small(dst, row, ax, 2); break;
    case 3: HPASS4_CASES(3); break;
    default: HPASS4_CASES(4); break;
  }
}

/* Vertical pass for one output row: acc[e] = bias + sum over k of w[k] * rp[k][e],
 * 4 floats at a time, all T taps in registers (T = 0: runtime count). */
AI void vpass(float *restrict acc, const float *const *rp, const float *w, int taps, size_t row_w,
              float bias, int T) {
  if (T) taps = T;
  v4sf wk[MAX_FIXED_TAPS];
  const float *r[MAX_FIXED_TAPS];
  if (T) {
#pragma GCC unroll 8
    for (int k = 0; k < T; k++) {
      wk[k] = (v4sf){w[k], w[k], w[k], w[k]};
      r[k] = rp[k];
    }
  }
  for (size_t e = 0; e < row_w; e += 4) {
    v4sf a = {bias, bias, bias, bias};
    if (T) {
#pragma GCC unroll 8
      for (int k = 0; k < T; k++) a += wk[k] * load4(r[k] + e);
    } else {
      for (int k = 0; k < taps; k++) a += w[k] * load4(rp[k] + e);
    }
    store4(acc + e, a);
  }
}

static void vpass_any(float *acc, const float *const *rp, const float *w, int taps, size_t row_w, float bias) {
  switch (taps) {
    case 1: vpass(acc, rp, w, taps, row_w, bias, 1); break;
    case 2: vpass(acc, rp, w, taps, row_w, bias, 2); break;
    case 3: vpass(acc, rp, w, taps, row_w, bias, 3); break;
    case 4: vpass(acc, rp, w, taps, row_w, bias, 4); break;
    case 5: vpass(acc, rp, w, taps, row_w, bias, 5); break;
    case 6: vpass(acc, rp, w, taps, row_w, bias, 6); break;
    case 7: vpass(acc, rp, w, taps, row_w, bias, 7); break;
    case 8: vpass(acc, rp, w, taps, row_w, bias, 8); break;
    default: vpass(acc, rp, w, taps, row_w, bias, 0); break;
  }
}

/* One output row from the accumulated floats (cp floats per pixel, c of them
 * output): uint8 via ladle__f32_to_u8 (the SSE2 version does the same: NaN
 * and negatives to 0 by max, 255 by min, ties to even by the 2^23 trick), or
 * with trunc via ladle__f32_to_u8_trunc (the same without the trick). */
AI void store_row_u8(uint8_t *restrict o, const float *restrict acc, int out_w, int c, int cp, int trunc) {
  size_t n = (size_t)out_w * c;
  size_t k = 0; /* output pixels done */
#if defined(__SSE2__)
  const __m128 zero = _mm_setzero_ps(), top = _mm_set1_ps(255.0f), magic = _mm_set1_ps(8388608.0f);
  if (cp == 4) {
    /* 4 pixels at a time -> 16 bytes RGBX..., written as 4-byte stores at
     * 3- or 4-byte steps (the X byte is overwritten by the next pixel); the
     * last pixel of the row is left to the scalar loop. */
    for (; k + 5 <= (size_t)out_w; k += 4) {
      __m128i q[4];
#pragma GCC unroll 4
      for (int m = 0; m < 4; m++) {
        __m128 a = _mm_load_ps(acc + (k + m) * 4);
        a = _mm_min_ps(_mm_max_ps(a, zero), top);
        if (!trunc) a = _mm_sub_ps(_mm_add_ps(a, magic), magic);
        q[m] = _mm_cvttps_epi32(a);
      }
      __m128i b = _mm_packus_epi16(_mm_packs_epi32(q[0], q[1]), _mm_packs_epi32(q[2], q[3]));
#pragma GCC unroll 4
      for (int m = 0; m < 4; m++, b = _mm_srli_si128(b, 4)) {
        int32_t v = _mm_cvtsi128_si32(b);
        memcpy(o + (k + m) * c, &v, 4);
      }
    }
    k *= c;
  } else {
    for (; k + 16 <= n; k += 16) {
      __m128i q[4];
#pragma GCC unroll 4
      for (int m = 0; m < 4; m++) {
        __m128 a = _mm_load_ps(acc + k + 4 * m);
        a = _mm_min_ps(_mm_max_ps(a, zero), top);
        if (!trunc) a = _mm_sub_ps(_mm_add_ps(a, magic), magic);
        q[m] = _mm_cvttps_epi32(a);
      }
      _mm_storeu_si128((__m128i *)(o + k),
                       _mm_packus_epi16(_mm_packs_epi32(q[0], q[1]), _mm_packs_epi32(q[2], q[3])));
    }
  }
#endif
  /* k counts output elements from here on */
  if (trunc)
    for (; k < n; k++) o[k] = ladle__f32_to_u8_trunc(acc[k / c * cp + k % c]);
  else
    for (; k < n; k++) o[k] = ladle__f32_to_u8(acc[k / c * cp + k % c]);
}

static void store_row_f32(float *restrict o, const float *restrict acc, int out_w, int c, int cp) {
  if (c == cp) {
    memcpy(o, acc, (size_t)out_w * c * sizeof(float));
    return;
  }
  for (int i = 0; i < out_w; i++)
    for (int ch = 0; ch < 3; ch++) o[(size_t)i * 3 + ch] = acc[(size_t)i * 4 + ch];
}

/*
 * The shared driver: for each output row, make sure the ay->taps input rows it
 * reads have been resized horizontally (each at most once, kept in a ring),
 * then sum them. Input rows no output reads are never touched.
 */
static void resize_rows(void *out, const void *in, int is_u8, size_t in_stride_bytes, int c,
                        const ladle__resize_axis *ax, const ladle__resize_axis *ay, void *scratch) {
  const int out_w = ax->out_size, ty = ay->taps;
  const scratch_layout l = layout_of(ax, ay, c);
  uint8_t *base = (uint8_t *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63);
  float *row = (float *)(base + l.row);
  float *ring = (float *)(base + l.ring);
  float *acc = (float *)(base + l.acc);
  v4sf *wx = (v4sf *)(base + l.wx);
  int *tag = (int *)(base + l.tag);
  const float **rp = (const float **)(base + l.rp);
  const size_t span = (size_t)(ax->in_hi - ax->in_lo) * c;
  const size_t out_row = (size_t)out_w * c * (is_u8 ? 1 : sizeof(float));
  /* Elements from `split` on (DALI's rounding) sum from 0.5 and truncate. */
  const size_t row_elems = (size_t)out_w * c;
  const size_t split = is_u8 ? (size_t)ladle__resize_round_split(ay->round_up, row_elems) : row_elems;
  const float bias = split == 0 ? 0.5f : 0.0f;

  for (int k = 0; k < ty; k++) tag[k] = -1;
  memset(row + span, 0, 4 * sizeof(float));
  /* The padding at the end of each ring row is read by the vertical pass. */
  memset(ring, 0, (size_t)ty * l.row_w * sizeof(float));
  if (c >= 3)
    for (size_t k = 0; k < (size_t)out_w * ax->taps; k++) {
      float v = ax->weights[k];
      wx[k] = (v4sf){v, v, v, v};
    }

  for (int j = 0; j < ay->out_size; j++) {
    const int y0 = ay->start[j];
    for (int k = 0; k < ty; k++) {
      const int r = y0 + k, slot = r % ty;
      float *t = ring + (size_t)slot * l.row_w;
      rp[k] = t;
      if (tag[slot] == r) continue;
      const uint8_t *src = (const uint8_t *)in + (size_t)r * in_stride_bytes;
      if (is_u8)
        load_row_u8(row, src + (size_t)ax->in_lo * c, span);
      else
        memcpy(row, (const float *)src + (size_t)ax->in_lo * c, span * sizeof(float));
      hpass_any(t, row, wx, ax, c);
      tag[slot] = r;
    }
    const float *wy = ay->weights + (size_t)j * ty;
    vpass_any(acc, rp, wy, ty, l.row_w, bias);
    uint8_t *o = (uint8_t *)out + (size_t)j * out_row;
    if (is_u8 && split == 0) {
      store_row_u8(o, acc, out_w, c, l.cp, 1);
    } else if (is_u8) {
      store_row_u8(o, acc, out_w, c, l.cp, 0);
      /* The elements past the split: their sums again, from 0.5, in tap order. */
      for (size_t e = split; e < row_elems; e++) {
        const size_t off = e / c * l.cp + e % c;
        float v = 0.5f;
        for (int k = 0; k < ty; k++) v += wy[k] * rp[k][off];
        o[e] = ladle__f32_to_u8_trunc(v);
      }
    } else {
      store_row_f32((float *)o, acc, out_w, c, l.cp);
    }
  }
}

void ladle__resize_u8(uint8_t *out, const uint8_t *in, int in_h, int in_stride, int channels,
                      const ladle__resize_axis *ax, const ladle__resize_axis *ay, void *scratch) {
  (void)in_h;
  resize_rows(out, in, 1, (size_t)in_stride, channels, ax, ay, scratch);
}

void ladle__resize_f32(float *out, const float *in, int in_h, int in_stride_elems, int channels,
                       const ladle__resize_axis *ax, const ladle__resize_axis *ay, void *scratch) {
  (void)in_h;
  resize_rows(out, in, 0, (size_t)in_stride_elems * sizeof(float), channels, ax, ay, scratch);
}
